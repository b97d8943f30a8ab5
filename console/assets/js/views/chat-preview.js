// The chat preview of a template: a phone with the brand's conversation
// and the message as the chat app shows it, by message type, drawn here
// from the template's fields and sample values. Media are not fetched
// (nothing leaves this machine): a frame stands for them.

import {h, replace, icon} from '../dom.js';
import {PLACEHOLDER_RE} from '../csv.js';

// richText renders text with the placeholders that have no sample value
// marked.
function richText(text, values) {
  const out = [];
  let last = 0;
  const t = String(text || '');
  for (const m of t.matchAll(PLACEHOLDER_RE)) {
    if (m.index > last) out.push(t.slice(last, m.index));
    const v = values[m[1]];
    out.push(v !== undefined && v !== '' ? String(v) : h('mark', {class: 'ph'}, m[0]));
    last = m.index + m[0].length;
  }
  if (last < t.length) out.push(t.slice(last));
  return out;
}

function host(url) {
  try {
    return new URL(url).host;
  } catch (_) {
    return url ? url.slice(0, 40) : '';
  }
}

function media(kind, url, extra) {
  return h('div', {class: 'chat-media chat-media-' + kind},
    icon(kind === 'video' ? 'play' : 'image', kind === 'video' ? 36 : 28),
    h('span', {class: 'chat-media-host'}, url ? host(url) : (kind === 'video' ? 'video URL' : 'image URL')),
    extra || null);
}

function button(text, url, secondary) {
  return h('span', {class: 'chat-button' + (secondary ? ' chat-button-secondary' : ''), title: url || ''}, text || 'Button');
}

export function chatPreview() {
  const brand = h('div', {class: 'phone-title'});
  const screen = h('div', {class: 'phone-screen chat-screen', id: 'chat-preview-screen'});
  const el = h('section', {class: 'preview card', id: 'chat-preview', 'aria-labelledby': 'chat-preview-title'},
    h('h2', {id: 'chat-preview-title'}, 'Chat preview'),
    h('div', {class: 'phone phone-chat', 'aria-label': 'How the message looks in the chat app'},
      h('div', {class: 'phone-bar'}, h('span', {class: 'avatar', 'aria-hidden': 'true'}), brand), screen),
    h('p', {class: 'hint'}, 'Drawn from the template in this browser; images and videos are not loaded.'));

  return {
    el,
    // update draws the message. m: {messageType, templateContent, config,
    // brandName}; values: sample values of the placeholders.
    update(m, values = {}) {
      replace(brand, m.brandName || 'Chat service');
      const c = m.config || {};
      const text = m.templateContent ? h('p', {class: 'chat-text'}, richText(m.templateContent, values)) : null;
      let bubble;
      switch (Number(m.messageType)) {
        case 2:
          bubble = h('div', {class: 'chat-bubble chat-bubble-media', dataset: {type: 'image'}}, media('image', c.imageUrl));
          break;
        case 3:
          bubble = h('div', {class: 'chat-bubble', dataset: {type: 'button'}}, text, button(c.buttonText, c.buttonUrl));
          break;
        case 4:
          bubble = h('div', {class: 'chat-bubble', dataset: {type: 'image-text'}}, media('image', c.imageUrl), text, button(c.buttonText, c.buttonUrl));
          break;
        case 5: {
          const items = Array.isArray(c.items) && c.items.length ? c.items : [{}, {}];
          bubble = h('div', {class: 'chat-carousel', dataset: {type: 'carousel'}, tabindex: '0', 'aria-label': 'Carousel cards'},
            items.map((it, i) => h('div', {class: 'chat-card'},
              media('image', it.imageUrl),
              h('p', {class: 'chat-card-title'}, it.title || `Card ${i + 1}`),
              button(it.buttonText, it.buttonUrl),
              it.secondaryButtonText ? button(it.secondaryButtonText, it.secondaryButtonUrl, true) : null)));
          break;
        }
        case 6: {
          const opts = Array.isArray(c.options) && c.options.length ? c.options : [{}, {}];
          bubble = h('div', {class: 'chat-bubble', dataset: {type: 'survey'}}, text || h('p', {class: 'chat-text muted'}, 'Question'),
            h('div', {class: 'chat-options'}, opts.map((o, i) => h('span', {class: 'chat-option'}, o.optionText || `Option ${i + 1}`))));
          break;
        }
        case 7:
          bubble = h('div', {class: 'chat-bubble chat-bubble-media', dataset: {type: 'video'}},
            media('video', c.thumbnailUrl || c.videoUrl, c.duration ? h('span', {class: 'chat-duration'}, `${Math.floor(c.duration / 60)}:${String(c.duration % 60).padStart(2, '0')}`) : null),
            text, c.buttonText ? button(c.buttonText, c.buttonUrl) : null);
          break;
        case 8:
          bubble = h('div', {class: 'chat-bubble', dataset: {type: 'file'}},
            text,
            h('div', {class: 'chat-file'}, icon('file', 28),
              h('div', null, h('p', {class: 'chat-file-name'}, richText(c.fileName || 'file name', values)),
                h('p', {class: 'chat-file-type'}, (c.fileType || 'type').toUpperCase()))));
          break;
        default:
          bubble = h('div', {class: 'chat-bubble', dataset: {type: 'text'}}, text || h('p', {class: 'chat-text muted'}, 'Type the message to see it here.'));
      }
      replace(screen, h('div', {class: 'chat-row'}, bubble), h('p', {class: 'chat-time'}, 'now'));
    },
  };
}
