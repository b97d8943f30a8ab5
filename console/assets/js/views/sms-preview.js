// The live SMS preview of a template text. Encoding, segments and the
// characters left are the server's: POST /api/v1/templates/preview, asked
// 300 ms after the last keystroke. A server without that endpoint gets a
// preview marked unavailable; nothing is estimated here.

import {h, replace, debounce, nextId} from '../dom.js';
import {post, isUnavailable, ApiError} from '../api.js';
import {num} from '../format.js';

export function smsPreview({id = 'sms-preview', title = 'SMS preview', sender = () => ''} = {}) {
  const samples = new Map(); // placeholder -> input
  const samplesEl = h('div', {class: 'samples', id: id + '-samples'});
  const bubble = h('div', {class: 'sms-bubble', id: id + '-text'});
  const stats = h('div', {class: 'preview-stats', id: id + '-stats'});
  const status = h('div', {class: 'preview-status', 'aria-live': 'polite', id: id + '-status'});
  const senderEl = h('div', {class: 'phone-title'});
  const el = h('section', {class: 'preview card', id, 'aria-labelledby': id + '-title', dataset: {state: 'empty'}},
    h('h2', {id: id + '-title'}, title),
    status,
    h('div', {class: 'phone phone-sms', 'aria-label': 'How the message looks on a phone'},
      h('div', {class: 'phone-bar'}, senderEl), h('div', {class: 'phone-screen'}, bubble)),
    stats,
    samplesEl);

  let content = '';
  let seq = 0;
  let inflight = null;
  let unavailable = false;

  const setState = (state) => { el.dataset.state = state; };
  const values = () => {
    const v = {};
    for (const [name, input] of samples) if (input.value !== '') v[name] = input.value;
    return v;
  };

  const syncSamples = (names) => {
    for (const [name, input] of samples) {
      if (!names.includes(name)) {
        input.closest('.field').remove();
        samples.delete(name);
      }
    }
    for (const name of names) {
      if (samples.has(name)) continue;
      const fid = nextId('sample');
      const input = h('input', {id: fid, type: 'text', autocomplete: 'off', dataset: {placeholder: name}});
      input.addEventListener('input', () => schedule());
      samples.set(name, input);
      samplesEl.appendChild(h('div', {class: 'field field-inline'}, h('label', {for: fid}, h('code', null, `{{${name}}}`)), input));
    }
    samplesEl.hidden = samples.size === 0;
    if (samples.size && !samplesEl.querySelector('.samples-title')) {
      samplesEl.prepend(h('p', {class: 'samples-title'}, 'Sample values'));
    }
  };

  const stat = (label, value, sid) => h('div', {class: 'stat', id: sid}, h('dt', null, label), h('dd', null, value));

  const run = async () => {
    if (unavailable) return;
    const my = ++seq;
    if (inflight) inflight.abort();
    if (!content.trim()) {
      setState('empty');
      replace(status, h('p', {class: 'muted'}, 'Type the message to see how it is sent.'));
      replace(stats);
      replace(bubble);
      return;
    }
    inflight = new AbortController();
    setState('loading');
    el.setAttribute('aria-busy', 'true');
    try {
      const r = await post('/api/v1/templates/preview', {templateContent: content, placeholders: values()}, {signal: inflight.signal});
      if (my !== seq) return;
      setState('ready');
      syncSamples(r.placeholders || []);
      replace(bubble, r.renderedText);
      replace(status, r.missingPlaceholders && r.missingPlaceholders.length
        ? h('p', {class: 'hint'}, 'No sample value for ', r.missingPlaceholders.map((n, i) => [i ? ', ' : '', h('code', null, n)]), ': shown as written.')
        : null);
      replace(stats, h('dl', {class: 'stats'},
        stat('Encoding', r.encoding, id + '-encoding'),
        stat('Characters', num(r.characters), id + '-characters'),
        stat('Segments', num(r.segments), id + '-segments'),
        stat('Left in segment', num(r.charactersLeft), id + '-left'),
        stat('Per segment', num(r.charactersPerSegment), id + '-per-segment')),
      r.encoding === 'UCS-2' ? h('p', {class: 'hint'}, 'A character outside the GSM-7 alphabet makes the whole message UCS-2: 70 characters a segment instead of 160.') : null);
    } catch (err) {
      if (err && err.name === 'AbortError') return;
      if (my !== seq) return;
      if (isUnavailable(err)) {
        unavailable = true;
        setState('unavailable');
        replace(bubble);
        replace(stats);
        replace(status, h('div', {class: 'notice notice-muted'},
          h('strong', null, 'Preview unavailable. '),
          'This server does not compute SMS previews yet (POST /api/v1/templates/preview). The encoding, segments and characters left will show here once it does.'));
        return;
      }
      setState('error');
      replace(stats);
      const msg = err instanceof ApiError ? (err.fields.templateContent || err.message) : String(err.message || err);
      replace(status, h('p', {class: 'field-error'}, msg));
    } finally {
      if (my === seq) el.removeAttribute('aria-busy');
    }
  };
  const schedule = debounce(run, 300);

  return {
    el,
    update(text) {
      content = text || '';
      replace(senderEl, sender() || 'SMS');
      schedule();
    },
    now() {
      schedule.cancel();
      run();
    },
    sampleValues: values,
    isUnavailable: () => unavailable,
  };
}
