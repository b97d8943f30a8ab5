// The template editor: SMS templates with the server's live SMS preview,
// chat templates of the eight message types with a phone preview drawn
// here, and their SMS fallback.

import {h, replace, debounce} from '../dom.js';
import {get, post, put, del, enc} from '../api.js';
import {MESSAGE_TYPES, dateTime} from '../format.js';
import {confirmDialog, busy, toast, notice} from '../ui.js';
import {field, fieldset, formError, clearErrors, showErrors} from '../forms.js';
import {placeholdersIn} from '../csv.js';
import {smsPreview} from './sms-preview.js';
import {chatPreview} from './chat-preview.js';

const FILE_TYPES = ['PDF', 'DOC', 'DOCX', 'TXT', 'RTF', 'XLS', 'XLSX', 'CSV', 'PPT', 'PPTX', 'ZIP', 'RAR'];
const CFG = 'typeSpecificConfig.';

function parseConfig(raw) {
  if (!raw) return {};
  if (typeof raw === 'object') return raw;
  try {
    return JSON.parse(raw) || {};
  } catch (_) {
    return {};
  }
}

// contentLabel is what templateContent is for a chat type.
function contentLabel(type) {
  switch (type) {
    case 6: return {label: 'Question', required: true, hint: 'At most 85 characters once filled in.'};
    case 1: case 3: case 4: return {label: 'Text', required: true, hint: 'Up to 1,000 characters. Use {{name}} for a value filled in per recipient.'};
    case 2: case 5: return null;
    default: return {label: 'Text', required: false, hint: 'Shown with the media.'};
  }
}

async function loadChoices(path, signal) {
  try {
    const r = await get(path, {signal});
    return Array.isArray(r) ? r : [];
  } catch (_) {
    return [];
  }
}

export async function render(ctx) {
  const id = ctx.params.id;
  let tpl = null;
  if (id) tpl = await get(`/api/v1/templates/${enc(id)}`, {signal: ctx.signal});
  const kind = tpl ? (tpl.channelType === 'Chat' ? 'chat' : 'sms') : ctx.params.kind;
  const [senders, services] = await Promise.all([
    loadChoices('/api/v1/sms-senders', ctx.signal),
    kind === 'chat' ? loadChoices('/api/v1/chat-services', ctx.signal) : Promise.resolve([]),
  ]);
  ctx.setTitle(tpl ? tpl.name : kind === 'chat' ? 'New chat template' : 'New SMS template');
  if (kind === 'chat') return renderChat(ctx, tpl, senders, services);
  return renderSMS(ctx, tpl, senders);
}

function header(ctx, tpl, kindLabel) {
  return [
    h('div', {class: 'breadcrumb'}, h('a', {href: '#/templates'}, '← Templates')),
    h('div', {class: 'page-header'},
      h('div', null,
        h('h1', {tabindex: '-1', id: 'page-title'}, tpl ? tpl.name : `New ${kindLabel === 'SMS' ? 'SMS' : 'chat'} template`),
        tpl ? h('p', {class: 'muted small'}, `${kindLabel} template · updated ${dateTime(tpl.updatedAt)}`) : null),
      tpl ? h('div', {class: 'page-actions'},
        h('a', {class: 'btn btn-secondary', href: '#/campaigns/new?templateId=' + enc(tpl.id)}, 'Send to a list')) : null),
  ];
}

function senderOptions(senders, none) {
  return [{value: '', label: none}, ...senders.map((s) => ({value: s.id, label: s.senderId}))];
}

function validityField(value) {
  return field({label: 'Validity', name: 'validityPeriod', type: 'number', value: value || '', optional: true,
    hint: 'Seconds (60 to 604800). A message still waiting when it runs out fails EXPIRED instead of arriving late.',
    attrs: {min: '60', max: '604800', step: '1', inputmode: 'numeric'}});
}

function formButtons(ctx, tpl, submitLabel) {
  const save = h('button', {type: 'submit', class: 'btn btn-primary', id: 'template-save'}, submitLabel);
  const out = [save, h('a', {class: 'btn btn-ghost', href: '#/templates'}, 'Back to templates')];
  if (tpl) {
    const d = h('button', {type: 'button', class: 'btn btn-danger-outline', id: 'template-delete'}, 'Delete');
    d.addEventListener('click', async () => {
      const ok = await confirmDialog({title: `Delete “${tpl.name}”?`, text: 'Campaigns already sent keep their messages. This cannot be undone.', confirm: 'Delete template', danger: true});
      if (!ok) {
        d.focus();
        return;
      }
      try {
        await del(`/api/v1/templates/${enc(tpl.id)}`);
        ctx.flash(`Template “${tpl.name}” deleted.`);
        ctx.navigate('/templates');
      } catch (err) {
        toast('Delete failed: ' + err.message, 'error');
      }
    });
    out.push(h('span', {class: 'spacer'}), d);
  }
  return {save, el: h('div', {class: 'form-actions'}, out)};
}

async function save(ctx, form, button, tpl, body, createPath) {
  clearErrors(form);
  await busy(button, 'Saving…', async () => {
    try {
      const saved = tpl ? await put(`/api/v1/templates/${enc(tpl.id)}`, body) : await post(createPath, body);
      ctx.flash(tpl ? 'Template saved.' : `Template “${saved.name}” created.`);
      ctx.navigate('/templates/' + enc(saved.id), {replace: !tpl});
    } catch (err) {
      showErrors(form, err);
    }
  });
}

function numberOrNull(v) {
  const s = String(v || '').trim();
  if (!s) return null;
  const n = Number(s);
  return isFinite(n) ? n : s;
}

function renderSMS(ctx, tpl, senders) {
  const name = field({label: 'Name', name: 'name', required: true, value: tpl ? tpl.name : '', id: 'tpl-name', hint: 'Unique among your templates.'});
  const desc = field({label: 'Description', name: 'description', optional: true, value: tpl ? tpl.description || '' : '', id: 'tpl-description'});
  const content = field({label: 'Message', name: 'templateContent', type: 'textarea', rows: 6, required: true, id: 'tpl-content',
    value: tpl ? tpl.templateContent : '', hint: 'Use {{name}} for a value filled in per recipient: letters, digits and _ between double braces.'});
  const sender = field({label: 'SMS sender', name: 'smsSenderId', type: 'select', id: 'tpl-sender',
    value: tpl ? tpl.smsSenderId ?? '' : senders.length === 1 ? senders[0].id : '',
    options: senderOptions(senders, senders.length ? 'Choose a sender' : 'No approved sender'),
    hint: senders.length ? 'The approved sender id the messages come from.' : 'Your company has no approved sender yet: ask the operator.'});
  const validity = validityField(tpl && tpl.validityPeriod);
  const buttons = formButtons(ctx, tpl, tpl ? 'Save template' : 'Create template');
  const preview = smsPreview({id: 'sms-preview', sender: () => {
    const s = senders.find((x) => String(x.id) === sender.input.value);
    return s ? s.senderId : '';
  }});
  const form = h('form', {class: 'card form', id: 'template-form', novalidate: true},
    formError(), name.wrap, desc.wrap, content.wrap, sender.wrap, validity.wrap, buttons.el);
  replace(ctx.main, header(ctx, tpl, 'SMS'), h('div', {class: 'editor'}, form, h('div', {class: 'editor-side'}, preview.el)));

  content.input.addEventListener('input', () => preview.update(content.input.value));
  sender.input.addEventListener('change', () => preview.update(content.input.value));
  preview.update(content.input.value);
  preview.now();
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const body = {
      name: name.input.value.trim(),
      description: desc.input.value.trim() || null,
      templateContent: content.input.value,
      smsSenderId: sender.input.value ? Number(sender.input.value) : null,
    };
    const v = numberOrNull(validity.input.value);
    if (v !== null) body.validityPeriod = v;
    else if (tpl) body.validityPeriod = 0;
    save(ctx, form, buttons.save, tpl, body, '/api/v1/templates/sms');
  });
}

function renderChat(ctx, tpl, senders, services) {
  const cfg = parseConfig(tpl && tpl.typeSpecificConfig);
  const model = {
    messageType: tpl ? Number(tpl.messageType) : 1,
    config: {
      imageUrl: cfg.imageUrl || '', buttonText: cfg.buttonText || '', buttonUrl: cfg.buttonUrl || '',
      videoUrl: cfg.videoUrl || '', thumbnailUrl: cfg.thumbnailUrl || '', duration: cfg.duration || '',
      fileUrl: cfg.fileUrl || '', fileName: cfg.fileName || '', fileType: cfg.fileType || '',
      items: Array.isArray(cfg.items) && cfg.items.length ? cfg.items.map((x) => ({...x})) : [{}, {}],
      options: Array.isArray(cfg.options) && cfg.options.length ? cfg.options.map((x) => ({...x})) : [{}, {}],
    },
    // The template approved at WhatsApp that stands for the message:
    // its name, language and the values of its {{1}}, {{2}}, ...
    providerTemplate: {
      name: cfg.providerTemplate?.name || '',
      language: cfg.providerTemplate?.language || '',
      parameters: Array.isArray(cfg.providerTemplate?.parameters) ? [...cfg.providerTemplate.parameters] : [],
    },
  };

  const name = field({label: 'Name', name: 'name', required: true, value: tpl ? tpl.name : '', id: 'tpl-name', hint: 'Unique among your templates.'});
  const desc = field({label: 'Description', name: 'description', optional: true, value: tpl ? tpl.description || '' : '', id: 'tpl-description'});
  const type = field({label: 'Message type', name: 'messageType', type: 'select', required: true, id: 'tpl-type', value: model.messageType,
    options: MESSAGE_TYPES.map((t) => ({value: t.id, label: t.label}))});
  const service = field({label: 'Chat service', name: 'chatServiceId', type: 'select', required: true, id: 'tpl-service',
    value: tpl ? tpl.chatServiceId : services.length === 1 ? services[0].id : '',
    options: [{value: '', label: services.length ? 'Choose a chat service' : 'No chat service'}, ...services.map((s) => ({value: s.id, label: s.brandName}))],
    hint: services.length ? null : 'Your company has no chat service yet: ask the operator.'});
  const content = field({label: 'Text', name: 'templateContent', type: 'textarea', rows: 4, id: 'tpl-content', value: tpl ? tpl.templateContent || '' : ''});
  const typeBox = h('div', {class: 'type-fields', id: 'type-fields'});
  const ptBox = h('div', {id: 'provider-template'});

  const fbEnabled = field({label: 'Send an SMS instead when the chat app cannot reach the person', name: 'smsFallbackEnabled', type: 'checkbox', id: 'tpl-fallback', value: tpl ? tpl.smsFallbackEnabled : false,
    hint: 'Chat errors 8, 9 and 10: the person blocked the service, has no chat app, or no suitable device.'});
  const fbContent = field({label: 'Fallback SMS', name: 'smsFallbackTemplateContent', type: 'textarea', rows: 3, id: 'tpl-fallback-content',
    value: tpl ? tpl.smsFallbackTemplateContent || '' : '', hint: 'GSM-7 characters only; placeholders take the values of the chat message.'});
  const fbSender = field({label: 'Fallback SMS sender', name: 'smsFallbackSenderId', type: 'select', id: 'tpl-fallback-sender',
    value: tpl ? tpl.smsFallbackSenderId ?? '' : senders.length === 1 ? senders[0].id : '', options: senderOptions(senders, senders.length ? 'Choose a sender' : 'No approved sender')});
  const fbPreview = smsPreview({id: 'fallback-preview', title: 'Fallback SMS preview', sender: () => {
    const s = senders.find((x) => String(x.id) === fbSender.input.value);
    return s ? s.senderId : '';
  }});
  const fbBox = h('div', {class: 'fallback-fields'}, fbContent.wrap, fbSender.wrap);
  const validity = validityField(tpl && tpl.validityPeriod);
  const buttons = formButtons(ctx, tpl, tpl ? 'Save template' : 'Create template');
  const preview = chatPreview();
  const samplesBox = h('div', {class: 'card samples', id: 'chat-samples'});
  const sampleValues = {};

  const form = h('form', {class: 'card form', id: 'template-form', novalidate: true},
    formError(), name.wrap, desc.wrap, h('div', {class: 'form-grid form-grid-2'}, type.wrap, service.wrap), content.wrap, typeBox, ptBox,
    fieldset('SMS fallback', fbEnabled.wrap, fbBox), validity.wrap, buttons.el);
  replace(ctx.main, header(ctx, tpl, 'Chat'), h('div', {class: 'editor'}, form, h('div', {class: 'editor-side'}, preview.el, samplesBox, fbPreview.el)));

  const bindText = (f, obj, key) => {
    f.input.addEventListener('input', () => {
      obj[key] = f.input.value;
      refresh();
    });
    return f.wrap;
  };

  const urlField = (label, key, hint, required = true) => bindText(field({label, name: CFG + key, type: 'url', value: model.config[key], required, optional: !required, hint, attrs: {inputmode: 'url', placeholder: 'https://'}}), model.config, key);
  const textField = (label, key, hint, required = true, attrs) => bindText(field({label, name: CFG + key, value: model.config[key], required, optional: !required, hint, attrs}), model.config, key);

  const renderTypeFields = () => {
    const t = model.messageType;
    const cl = contentLabel(t);
    content.wrap.hidden = !cl;
    if (cl) {
      content.wrap.querySelector('label').firstChild.textContent = cl.label;
      content.wrap.querySelector('.req')?.remove();
      content.wrap.querySelector('.optional')?.remove();
      content.wrap.querySelector('label').append(cl.required ? h('span', {class: 'req', 'aria-hidden': 'true'}, ' *') : h('span', {class: 'optional'}, ' (optional)'));
      content.input.required = cl.required;
      let hint = content.wrap.querySelector('.hint');
      if (!hint) {
        hint = h('p', {class: 'hint', id: content.input.id + '-hint'});
        content.input.after(hint);
        content.input.setAttribute('aria-describedby', hint.id + ' ' + content.input.id + '-error');
      }
      replace(hint, cl.hint);
    }
    const parts = [];
    if (t === 2 || t === 4) parts.push(urlField('Image URL', 'imageUrl', 'HTTPS, JPG or PNG, at most 1 MB; no placeholders. Herald checks it when you save.'));
    if (t === 3 || t === 4) parts.push(h('div', {class: 'form-grid form-grid-2'}, textField('Button text', 'buttonText', '1 to 30 characters.'), urlField('Button URL', 'buttonUrl', 'HTTPS; placeholders allowed.')));
    if (t === 7) {
      parts.push(urlField('Video URL', 'videoUrl', 'HTTPS; Herald reads its size when you save.'));
      parts.push(urlField('Thumbnail URL', 'thumbnailUrl', null, false));
      parts.push(h('div', {class: 'form-grid form-grid-2'}, textField('Button text', 'buttonText', null, false), urlField('Button URL', 'buttonUrl', null, false)));
      parts.push(textField('Duration', 'duration', 'Seconds.', false, {inputmode: 'numeric'}));
    }
    if (t === 8) {
      parts.push(urlField('File URL', 'fileUrl', 'HTTPS; placeholders allowed.'));
      parts.push(h('div', {class: 'form-grid form-grid-2'},
        textField('File name', 'fileName', null),
        bindText(field({label: 'File type', name: CFG + 'fileType', type: 'select', required: true, value: model.config.fileType,
          options: [{value: '', label: 'Choose a type'}, ...FILE_TYPES.map((x) => ({value: x, label: x}))]}), model.config, 'fileType')));
      parts[parts.length - 1].querySelector('select').addEventListener('change', (e) => { model.config.fileType = e.target.value; refresh(); });
    }
    if (t === 5) parts.push(listEditor('Cards', 'items', 2, 5, 'Add a card', (item, i) => [
      textField2(item, 'title', `Title`, CFG + `items[${i}].title`, true, '2 to 38 characters.'),
      urlField2(item, 'imageUrl', 'Image URL', CFG + `items[${i}].imageUrl`, true),
      h('div', {class: 'form-grid form-grid-2'},
        textField2(item, 'buttonText', 'Button text', CFG + `items[${i}].buttonText`, true, 'Up to 10 characters.'),
        urlField2(item, 'buttonUrl', 'Button URL', CFG + `items[${i}].buttonUrl`, true)),
      h('div', {class: 'form-grid form-grid-2'},
        textField2(item, 'secondaryButtonText', 'Second button text', CFG + `items[${i}].secondaryButtonText`, false, 'Up to 12 characters.'),
        urlField2(item, 'secondaryButtonUrl', 'Second button URL', CFG + `items[${i}].secondaryButtonUrl`, false)),
    ], (i) => `Card ${i + 1}`));
    if (t === 6) parts.push(listEditor('Options', 'options', 2, 5, 'Add an option', (item, i) => [
      h('div', {class: 'form-grid form-grid-2'},
        textField2(item, 'optionText', 'Text', CFG + `options[${i}].optionText`, true, 'What the person taps; up to 50 characters.'),
        textField2(item, 'optionValue', 'Value', CFG + `options[${i}].optionValue`, true, 'What the answer records.')),
    ], (i) => `Option ${i + 1}`));
    replace(typeBox, parts);
  };

  function textField2(obj, key, label, path, required, hint) {
    return bindText(field({label, name: path, value: obj[key] || '', required, optional: !required, hint}), obj, key);
  }
  function urlField2(obj, key, label, path, required) {
    return bindText(field({label, name: path, type: 'url', value: obj[key] || '', required, optional: !required, attrs: {inputmode: 'url', placeholder: 'https://'}}), obj, key);
  }
  function listEditor(legend, key, min, max, addLabel, fieldsOf, itemLabel) {
    const list = model.config[key];
    const box = h('fieldset', {class: 'fieldset list-editor', dataset: {field: CFG + key}},
      h('legend', null, `${legend} (${min} to ${max})`),
      h('p', {class: 'field-error', hidden: true}),
      list.map((item, i) => h('div', {class: 'list-item'},
        h('div', {class: 'list-item-head'}, h('h3', null, itemLabel(i)),
          list.length > min ? h('button', {type: 'button', class: 'btn btn-ghost btn-small', 'aria-label': `Remove ${itemLabel(i).toLowerCase()}`, onclick: () => {
            list.splice(i, 1);
            renderTypeFields();
            refresh();
          }}, 'Remove') : null),
        fieldsOf(item, i))),
      list.length < max ? h('button', {type: 'button', class: 'btn btn-secondary btn-small', onclick: () => {
        list.push({});
        renderTypeFields();
        refresh();
        const items = typeBox.querySelectorAll('.list-item');
        items[items.length - 1]?.querySelector('input')?.focus();
      }}, addLabel) : null);
    return box;
  }

  const onWhatsApp = () => services.find((x) => String(x.id) === service.input.value)?.channel === 'whatsapp';
  const ptGiven = () => {
    const pt = model.providerTemplate;
    return pt.name.trim() !== '' || pt.language.trim() !== '' || pt.parameters.length > 0;
  };

  // renderProviderTemplate shows the WhatsApp template fields when the
  // chosen service is on WhatsApp, and nothing otherwise.
  const renderProviderTemplate = () => {
    if (!onWhatsApp()) {
      replace(ptBox);
      return;
    }
    const pt = model.providerTemplate;
    const bind = (f, set) => {
      f.input.addEventListener('input', () => {
        set(f.input.value);
        refresh();
      });
      return f.wrap;
    };
    const P = CFG + 'providerTemplate.';
    const nameF = field({label: 'Template name', name: P + 'name', id: 'tpl-pt-name', value: pt.name, optional: true,
      hint: 'The name of the template approved at WhatsApp, as it is written there.'});
    const langF = field({label: 'Language', name: P + 'language', id: 'tpl-pt-language', value: pt.language, optional: true,
      hint: 'The language of the approved template: en, en_US, pt_BR.', attrs: {autocomplete: 'off', spellcheck: 'false'}});
    const params = pt.parameters.map((v, i) => {
      const f = field({label: `{{${i + 1}}}`, name: `${P}parameters[${i}]`, id: `tpl-pt-param-${i + 1}`, value: v, required: true,
        attrs: {'data-parameter': String(i + 1), placeholder: 'Text or {{placeholder}}'}});
      f.input.addEventListener('input', () => {
        pt.parameters[i] = f.input.value;
        refresh();
      });
      const remove = h('button', {type: 'button', class: 'btn btn-ghost btn-small', 'aria-label': `Remove parameter ${i + 1}`, onclick: () => {
        pt.parameters.splice(i, 1);
        renderProviderTemplate();
        refresh();
      }}, 'Remove');
      return h('div', {class: 'list-item provider-parameter'}, f.wrap, remove);
    });
    const add = pt.parameters.length < 100 ? h('button', {type: 'button', class: 'btn btn-secondary btn-small', id: 'tpl-pt-add', onclick: () => {
      pt.parameters.push('');
      renderProviderTemplate();
      refresh();
      ptBox.querySelector(`#tpl-pt-param-${pt.parameters.length}`)?.focus();
    }}, 'Add a parameter') : null;
    replace(ptBox, h('fieldset', {class: 'fieldset list-editor', dataset: {field: CFG + 'providerTemplate'}},
      h('legend', null, 'WhatsApp template'),
      h('p', {class: 'hint'}, 'WhatsApp lets a company start a conversation with an approved template only. Name it to send it instead of the text. Each parameter fills {{1}}, {{2}}, … of the approved template, in order; it may hold your placeholders.'),
      h('p', {class: 'field-error', hidden: true}),
      h('div', {class: 'form-grid form-grid-2'}, bind(nameF, (v) => { pt.name = v; }), bind(langF, (v) => { pt.language = v; })),
      h('fieldset', {class: 'fieldset list-editor', dataset: {field: P + 'parameters'}},
        h('legend', null, 'Parameters'),
        h('p', {class: 'field-error', hidden: true}),
        params.length ? params : h('p', {class: 'muted small', id: 'tpl-pt-none'}, 'No parameters: the approved template has no {{1}}.'),
        add)));
  };

  const configBody = () => {
    const o = typeConfig();
    if (!onWhatsApp() || !ptGiven()) return o;
    const pt = model.providerTemplate;
    return {...(o || {}), providerTemplate: {name: pt.name.trim(), language: pt.language.trim(), parameters: [...pt.parameters]}};
  };

  const typeConfig = () => {
    const c = model.config;
    const t = model.messageType;
    const pick = (...keys) => {
      const o = {};
      for (const k of keys) if (c[k] !== '' && c[k] !== undefined) o[k] = c[k];
      return o;
    };
    switch (t) {
      case 2: return pick('imageUrl');
      case 3: return pick('buttonText', 'buttonUrl');
      case 4: return pick('imageUrl', 'buttonText', 'buttonUrl');
      case 5: return {items: c.items.map((it) => {
        const o = {};
        for (const k of ['title', 'imageUrl', 'buttonText', 'buttonUrl', 'secondaryButtonText', 'secondaryButtonUrl']) if (it[k]) o[k] = it[k];
        return o;
      })};
      case 6: return {options: c.options.map((o) => ({optionText: o.optionText || '', optionValue: o.optionValue || ''}))};
      case 7: {
        const o = pick('videoUrl', 'thumbnailUrl', 'buttonText', 'buttonUrl');
        if (String(c.duration).trim()) o.duration = Number(c.duration);
        return o;
      }
      case 8: return pick('fileUrl', 'fileName', 'fileType');
      default: return null;
    }
  };

  const renderSamples = () => {
    const names = placeholdersIn(model.messageType === 2 || model.messageType === 5 ? '' : content.input.value, model.config.buttonUrl, model.config.fileUrl, model.config.fileName,
      ...(onWhatsApp() ? model.providerTemplate.parameters : []));
    for (const k of Object.keys(sampleValues)) if (!names.includes(k)) delete sampleValues[k];
    const existing = new Set([...samplesBox.querySelectorAll('input[data-placeholder]')].map((i) => i.dataset.placeholder));
    samplesBox.hidden = names.length === 0;
    if (names.length === existing.size && names.every((n) => existing.has(n))) return;
    replace(samplesBox, h('h2', null, 'Sample values'),
      names.length ? names.map((n) => {
        const f = field({label: `{{${n}}}`, name: 'sample.' + n, value: sampleValues[n] || '', attrs: {'data-placeholder': n, autocomplete: 'off'}});
        f.input.addEventListener('input', () => {
          sampleValues[n] = f.input.value;
          drawPreview();
        });
        return f.wrap;
      }) : h('p', {class: 'muted small'}, 'The template has no placeholders.'));
  };

  const drawPreview = () => {
    const s = services.find((x) => String(x.id) === service.input.value);
    preview.update({messageType: model.messageType, templateContent: content.wrap.hidden ? '' : content.input.value, config: configBody() || {}, brandName: s ? s.brandName : ''}, sampleValues);
  };
  const refresh = () => {
    renderSamples();
    drawPreview();
  };
  const refreshFallback = () => {
    fbBox.hidden = !fbEnabled.input.checked;
    fbPreview.el.hidden = !fbEnabled.input.checked;
    if (fbEnabled.input.checked) fbPreview.update(fbContent.input.value);
  };

  type.input.addEventListener('change', () => {
    model.messageType = Number(type.input.value);
    renderTypeFields();
    refresh();
  });
  service.input.addEventListener('change', () => {
    renderProviderTemplate();
    refresh();
  });
  content.input.addEventListener('input', debounce(refresh, 50));
  fbEnabled.input.addEventListener('change', refreshFallback);
  fbContent.input.addEventListener('input', refreshFallback);
  fbSender.input.addEventListener('change', refreshFallback);
  renderTypeFields();
  renderProviderTemplate();
  refresh();
  refreshFallback();

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const body = {
      name: name.input.value.trim(),
      description: desc.input.value.trim() || null,
      messageType: model.messageType,
      chatServiceId: service.input.value ? Number(service.input.value) : null,
      templateContent: content.wrap.hidden ? '' : content.input.value,
      typeSpecificConfig: configBody(),
      smsFallbackEnabled: fbEnabled.input.checked,
      smsFallbackTemplateContent: fbEnabled.input.checked ? fbContent.input.value : null,
      smsFallbackSenderId: fbEnabled.input.checked && fbSender.input.value ? Number(fbSender.input.value) : null,
    };
    if (body.chatServiceId === null) delete body.chatServiceId;
    const v = numberOrNull(validity.input.value);
    if (v !== null) body.validityPeriod = v;
    else if (tpl) body.validityPeriod = 0;
    save(ctx, form, buttons.save, tpl, body, '/api/v1/templates/chat');
  });
  if (!services.length) form.prepend(notice('warning', 'Your company has no chat service: a chat template needs one. Ask the operator to add it.'));
}
