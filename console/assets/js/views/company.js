// Operator: one company: activation, rate, API keys, SMS senders and
// their approval, chat services.

import {h, replace} from '../dom.js';
import {get, post, put, del, enc, isUnavailable} from '../api.js';
import {num, dateTime} from '../format.js';
import {unavailable, busy, toast, confirmDialog, copyButton, table, row, emptyState, loading, errorState} from '../ui.js';
import {field, formError, clearErrors, showErrors} from '../forms.js';
import {memo} from '../session.js';
import {activeBadge} from './companies.js';

function section(id, title, ...children) {
  return h('section', {class: 'card', id, 'aria-labelledby': id + '-title'}, h('h2', {id: id + '-title'}, title), children);
}

export async function render(ctx) {
  const id = ctx.params.id;
  let co = await get('/admin/v1/companies/' + enc(id), {signal: ctx.signal});
  memo.put('companies', {id: co.id, name: co.name});
  ctx.setTitle(co.name);

  const title = h('h1', {tabindex: '-1', id: 'page-title'}, co.name);
  const statusEl = h('span', {id: 'company-status'});
  const toggle = h('button', {type: 'button', class: 'btn', id: 'company-toggle'});
  const facts = h('p', {class: 'muted small'});
  const showCompany = () => {
    replace(title, co.name);
    replace(statusEl, activeBadge(co.active));
    toggle.textContent = co.active ? 'Deactivate' : 'Activate';
    toggle.className = 'btn ' + (co.active ? 'btn-danger-outline' : 'btn-primary');
    replace(facts, h('span', {class: 'mono'}, co.id), co.createdAt ? ` · created ${dateTime(co.createdAt)}` : '',
      ` · ${co.maxPerSecond ? num(co.maxPerSecond) + ' messages a second' : 'no rate limit'}`);
  };
  toggle.addEventListener('click', async () => {
    if (co.active) {
      const ok = await confirmDialog({title: `Deactivate ${co.name}?`, text: 'Its API keys are refused (503) until it is activated again. Messages already accepted are still sent.', confirm: 'Deactivate', danger: true});
      if (!ok) {
        toggle.focus();
        return;
      }
    }
    await busy(toggle, co.active ? 'Deactivating…' : 'Activating…', async () => {
      try {
        co = await post(`/admin/v1/companies/${enc(id)}/${co.active ? 'deactivate' : 'activate'}`);
        toast(co.active ? `${co.name} is active.` : `${co.name} is inactive.`);
      } catch (err) {
        toast(err.message, 'error');
      }
    });
    showCompany();
    toggle.focus();
  });

  // Rate limit.
  const rate = field({label: 'Messages a second', name: 'maxPerSecond', type: 'number', value: co.maxPerSecond || 0, id: 'rate-input',
    hint: 'SMS and chat together, for every Herald process sharing the database. 0: no limit.', attrs: {min: '0', step: 'any', inputmode: 'decimal'}});
  const rateBtn = h('button', {type: 'submit', class: 'btn btn-secondary', id: 'rate-save'}, 'Save rate');
  const rateForm = h('form', {class: 'form', id: 'rate-form', novalidate: true}, formError(), h('div', {class: 'inline-row'}, rate.wrap, rateBtn));
  rateForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearErrors(rateForm);
    const v = Number(rate.input.value);
    if (rate.input.value.trim() === '' || !isFinite(v) || v < 0) {
      rate.setError('Enter 0 or a positive number.');
      rate.input.focus();
      return;
    }
    await busy(rateBtn, 'Saving…', async () => {
      try {
        co = await put(`/admin/v1/companies/${enc(id)}/rate-limit`, {maxPerSecond: v});
        showCompany();
        toast('Rate saved.');
      } catch (err) {
        showErrors(rateForm, err);
      }
    });
  });

  const keys = section('api-keys', 'API keys', loading());
  const senders = section('sms-senders', 'SMS senders', loading());
  const chats = section('chat-services', 'Chat services', loading());

  replace(ctx.main,
    h('div', {class: 'breadcrumb'}, h('a', {href: '#/operator/companies'}, '← Companies')),
    h('div', {class: 'page-header'}, h('div', null, h('div', {class: 'title-row'}, title, statusEl), facts), h('div', {class: 'page-actions'}, toggle)),
    h('div', {class: 'grid-2'}, section('rate', 'Rate limit', rateForm), keys),
    h('div', {class: 'grid-2'}, senders, chats));
  showCompany();
  await Promise.all([renderKeys(ctx, id, keys), renderSenders(ctx, id, senders), renderChats(ctx, id, chats)]);
}

async function listOrNull(path, signal) {
  try {
    const r = await get(path, {signal});
    return Array.isArray(r) ? r : [];
  } catch (err) {
    if (isUnavailable(err)) return null;
    throw err;
  }
}

async function renderKeys(ctx, id, box) {
  let list;
  try {
    list = await listOrNull(`/admin/v1/companies/${enc(id)}/api-keys`, ctx.signal);
  } catch (err) {
    replace(box, h('h2', {id: 'api-keys-title'}, 'API keys'), errorState(err));
    return;
  }
  const keyName = field({label: 'Key name', name: 'name', id: 'key-name', placeholder: 'production', hint: 'What the key is for, to tell keys apart.', attrs: {autocomplete: 'off', maxlength: '100'}});
  const grace = field({label: 'The other keys', name: 'previousKeysExpireIn', id: 'key-grace', value: '0',
    hint: 'A new key revokes the company’s other keys. Give them time to let programs move to the new key.',
    options: [{value: 0, label: 'Revoke at once'}, {value: 3600, label: 'Keep working 1 hour'}, {value: 86400, label: 'Keep working 1 day'}, {value: 604800, label: 'Keep working 7 days'}]});
  const createBtn = h('button', {type: 'submit', class: 'btn btn-primary', id: 'key-create'}, 'Create API key');
  const reveal = h('div', {id: 'new-key', 'aria-live': 'polite'});
  const legacy = list === null;
  const form = h('form', {class: 'form', id: 'key-form', novalidate: true}, formError(), h('div', {class: 'inline-row'}, keyName.wrap, legacy ? null : grace.wrap, createBtn));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearErrors(form);
    const expireIn = legacy ? 0 : Number(grace.input.value) || 0;
    const others = legacy ? 1 : (await listOrNull(`/admin/v1/companies/${enc(id)}/api-keys`, ctx.signal) || []).length;
    if (others > 0 && expireIn === 0) {
      const ok = await confirmDialog({title: 'Revoke the company’s other keys?', text: `A new API key revokes the company’s other ${others === 1 ? 'key' : others + ' keys'}: programs using ${others === 1 ? 'it' : 'them'} stop working at once. To let them move first, choose how long the other keys keep working.`, confirm: 'Create and revoke', danger: true});
      if (!ok) return;
    }
    await busy(createBtn, 'Creating…', async () => {
      try {
        const body = {name: keyName.input.value.trim() || undefined};
        if (expireIn > 0) body.previousKeysExpireIn = expireIn;
        const r = await post(`/admin/v1/companies/${enc(id)}/api-keys`, body);
        keyName.input.value = '';
        const secret = r.apiKey;
        const code = h('code', {class: 'secret', id: 'new-key-value'}, secret);
        replace(reveal, h('div', {class: 'notice notice-success secret-box'},
          h('p', null, h('strong', null, 'Copy this key now: '), 'it is shown once, and only its hash is kept.'),
          h('div', {class: 'secret-row'}, code, copyButton(() => secret)),
          h('button', {type: 'button', class: 'btn btn-ghost btn-small', onclick: () => replace(reveal)}, 'I have copied it')));
        if (!legacy) await renderKeyList();
      } catch (err) {
        showErrors(form, err);
      }
    });
  });
  const listEl = h('div', {id: 'key-list'});
  const renderKeyList = async () => {
    if (legacy) {
      replace(listEl, unavailable('Listing keys', 'This server cannot list or revoke single keys yet; creating a key replaces the previous one.'));
      return;
    }
    const items = await listOrNull(`/admin/v1/companies/${enc(id)}/api-keys`, ctx.signal);
    const cols = [{label: 'Name'}, {label: 'Created'}, {label: 'Last used'}, {label: 'Expires'}, {label: 'Actions', class: 'col-actions'}];
    replace(listEl, items && items.length ? table(cols, items.map((k) => {
      const b = h('button', {type: 'button', class: 'btn btn-ghost btn-small btn-danger-text', 'aria-label': `Revoke key ${k.name || k.id}`}, 'Revoke');
      b.addEventListener('click', async () => {
        const ok = await confirmDialog({title: `Revoke “${k.name || 'this key'}”?`, text: 'Programs using it are refused at once. This cannot be undone.', confirm: 'Revoke key', danger: true});
        if (!ok) {
          b.focus();
          return;
        }
        try {
          await del(`/admin/v1/companies/${enc(id)}/api-keys/${enc(k.id)}`);
          toast('Key revoked.');
          await renderKeyList();
        } catch (err) {
          toast(err.message, 'error');
        }
      });
      return row(cols, [k.name || h('em', null, 'unnamed'), dateTime(k.createdAt), k.lastUsedAt ? dateTime(k.lastUsedAt) : 'never',
        k.expiresAt ? h('span', {class: 'key-expires', 'data-expires': k.expiresAt}, dateTime(k.expiresAt)) : 'never', b]);
    }), {id: 'keys-table', caption: 'API keys'}) : emptyState('No API key', 'Create one to let the company use the API.'));
  };
  replace(box, h('h2', {id: 'api-keys-title'}, 'API keys'), listEl, form, reveal);
  await renderKeyList();
}

async function renderSenders(ctx, id, box) {
  let list;
  try {
    list = await listOrNull(`/admin/v1/companies/${enc(id)}/sms-senders`, ctx.signal);
  } catch (err) {
    replace(box, h('h2', {id: 'sms-senders-title'}, 'SMS senders'), errorState(err));
    return;
  }
  const legacy = list === null;
  const memoName = 'senders.' + id;
  const listEl = h('div', {id: 'sender-list'});
  const approve = async (s, button) => {
    await busy(button, 'Approving…', async () => {
      try {
        const r = await post(`/admin/v1/companies/${enc(id)}/sms-senders/${enc(s.id)}/approve`);
        memo.put(memoName, {id: r.id, senderId: r.senderId || s.senderId, approved: true});
        toast(`Sender ${r.senderId || s.senderId} approved.`);
      } catch (err) {
        toast(err.message, 'error');
      }
    });
    await draw();
  };
  const draw = async () => {
    const items = legacy ? memo.list(memoName) : await listOrNull(`/admin/v1/companies/${enc(id)}/sms-senders`, ctx.signal) || [];
    const cols = [{label: 'Sender id'}, {label: 'Status'}, {label: 'Actions', class: 'col-actions'}];
    replace(listEl,
      legacy ? unavailable('Listing senders', 'This server cannot list a company’s senders yet: those registered in this tab are shown, and any other can be approved by its number.') : null,
      items.length ? table(cols, items.map((s) => {
        const b = s.approved ? null : h('button', {type: 'button', class: 'btn btn-primary btn-small', 'aria-label': `Approve ${s.senderId}`, dataset: {senderId: s.senderId}}, 'Approve');
        if (b) b.addEventListener('click', () => approve(s, b));
        return row(cols, [h('span', {class: 'mono'}, s.senderId || `#${s.id}`),
          h('span', {class: 'badge ' + (s.approved ? 'badge-completed' : 'badge-queuing'), dataset: {approved: String(!!s.approved)}}, s.approved ? 'Approved' : 'Waiting for approval'), b]);
      }), {id: 'senders-table', caption: 'SMS senders'}) : emptyState('No SMS sender', 'Register the sender id the company’s SMS come from.'));
  };
  const sid = field({label: 'Sender id', name: 'senderId', id: 'sender-id', hint: 'Up to 11 letters and digits, or a phone number.', attrs: {autocomplete: 'off', maxlength: '16'}});
  const regBtn = h('button', {type: 'submit', class: 'btn btn-secondary', id: 'sender-register'}, 'Register sender');
  const form = h('form', {class: 'form', id: 'sender-form', novalidate: true}, formError(), h('div', {class: 'inline-row'}, sid.wrap, regBtn));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearErrors(form);
    if (!sid.input.value.trim()) {
      sid.setError('Enter the sender id.');
      sid.input.focus();
      return;
    }
    await busy(regBtn, 'Registering…', async () => {
      try {
        const r = await post(`/admin/v1/companies/${enc(id)}/sms-senders`, {senderId: sid.input.value.trim()});
        memo.put(memoName, {id: r.id, senderId: r.senderId || sid.input.value.trim(), approved: !!r.approved});
        toast(`Sender ${r.senderId} registered; approve it to let the company use it.`);
        sid.input.value = '';
      } catch (err) {
        showErrors(form, err);
      }
    });
    await draw();
  });
  let byNumber = null;
  if (legacy) {
    const num2 = field({label: 'Sender number', name: 'smsSenderId', type: 'number', id: 'approve-number', hint: 'The id answered when the sender was registered.', attrs: {min: '1', inputmode: 'numeric'}});
    const b = h('button', {type: 'submit', class: 'btn btn-secondary'}, 'Approve');
    byNumber = h('form', {class: 'form', id: 'approve-form', novalidate: true}, formError(), h('div', {class: 'inline-row'}, num2.wrap, b));
    byNumber.addEventListener('submit', async (e) => {
      e.preventDefault();
      clearErrors(byNumber);
      const n = num2.input.value.trim();
      if (!n) {
        num2.setError('Enter the sender’s number.');
        return;
      }
      await busy(b, 'Approving…', async () => {
        try {
          const r = await post(`/admin/v1/companies/${enc(id)}/sms-senders/${enc(n)}/approve`);
          memo.put(memoName, {id: r.id, senderId: r.senderId || `#${r.id}`, approved: true});
          toast('Sender approved.');
          num2.input.value = '';
        } catch (err) {
          showErrors(byNumber, err);
        }
      });
      await draw();
    });
  }
  replace(box, h('h2', {id: 'sms-senders-title'}, 'SMS senders'), listEl, form, byNumber ? h('details', {class: 'more'}, h('summary', null, 'Approve a sender by its number'), byNumber) : null);
  await draw();
}

// The chat providers and the channels each reaches.
const providers = [
  {value: 'herald', label: 'Herald', channels: ['viber']},
  {value: 'vonage', label: 'Vonage', channels: ['viber', 'whatsapp']},
  {value: 'infobip', label: 'Infobip', channels: ['viber']},
  {value: 'meta-whatsapp', label: 'Meta WhatsApp', channels: ['whatsapp']},
];
const channelLabels = {viber: 'Viber', whatsapp: 'WhatsApp'};

function providerLabel(name) {
  const p = providers.find((x) => x.value === name);
  return p ? p.label : name || 'Herald';
}

// credentialsBody reads the credentials box: undefined when empty (kept
// on an edit), the object written, or an error to show under the field.
function credentialsBody(text) {
  const t = text.trim();
  if (!t) return {value: undefined};
  let v;
  try {
    v = JSON.parse(t);
  } catch {
    return {error: 'Enter a JSON object, such as {"apiKey": "…", "apiSecret": "…"}.'};
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return {error: 'Enter a JSON object, such as {"apiKey": "…"}.'};
  return {value: v};
}

async function renderChats(ctx, id, box) {
  let list;
  try {
    list = await listOrNull(`/admin/v1/companies/${enc(id)}/chat-services`, ctx.signal);
  } catch (err) {
    replace(box, h('h2', {id: 'chat-services-title'}, 'Chat services'), errorState(err));
    return;
  }
  const legacy = list === null;
  const memoName = 'chat.' + id;
  const listEl = h('div', {id: 'chat-list'});
  let editing = null; // the service being edited, or null when adding

  const brand = field({label: 'Brand name', name: 'brandName', id: 'chat-brand', attrs: {autocomplete: 'off'}});
  const svc = field({label: 'Provider service id', name: 'providerServiceId', id: 'chat-service-id',
    hint: 'The service’s id or sender at the provider (a WhatsApp phone number id, a Viber service id).', attrs: {autocomplete: 'off'}});
  const provider = field({label: 'Provider', name: 'provider', type: 'select', id: 'chat-provider', value: 'herald', options: providers});
  const channel = field({label: 'Channel', name: 'channel', type: 'select', id: 'chat-channel', value: 'viber', options: []});
  const baseUrl = field({label: 'Base URL', name: 'baseUrl', id: 'chat-base-url', optional: true, placeholder: 'https://…',
    hint: 'Empty: the provider’s public endpoint.', attrs: {autocomplete: 'off', inputmode: 'url'}});
  const creds = field({label: 'Credentials', name: 'credentials', type: 'textarea', rows: 3, id: 'chat-credentials', optional: true,
    placeholder: '{"apiKey": "…", "apiSecret": "…"}',
    hint: 'A JSON object; the provider’s page lists its fields. Stored encrypted and never shown again.',
    attrs: {autocomplete: 'off', spellcheck: 'false', class: 'mono'}});
  const removeCreds = field({label: 'Remove the stored credentials', name: 'removeCredentials', type: 'checkbox', id: 'chat-remove-credentials'});
  const credsState = h('p', {class: 'muted small', id: 'chat-credentials-state', 'aria-live': 'polite'});
  const fillChannels = (wanted) => {
    const p = providers.find((x) => x.value === provider.input.value) || providers[0];
    replace(channel.input, p.channels.map((c) => h('option', {value: c, selected: c === wanted}, channelLabels[c] || c)));
    if (!p.channels.includes(wanted)) channel.input.value = p.channels[0];
  };
  provider.input.addEventListener('change', () => fillChannels(channel.input.value));
  fillChannels('viber');

  const addBtn = h('button', {type: 'submit', class: 'btn btn-secondary', id: 'chat-add'}, 'Add chat service');
  const cancelBtn = h('button', {type: 'button', class: 'btn btn-ghost', id: 'chat-cancel', hidden: true}, 'Cancel');
  const formTitle = h('h3', {class: 'small', id: 'chat-form-title'}, 'Add a chat service');
  const form = h('form', {class: 'form', id: 'chat-form', novalidate: true}, formTitle, formError(),
    h('div', {class: 'form-grid form-grid-2'}, brand.wrap, svc.wrap, provider.wrap, channel.wrap),
    baseUrl.wrap, creds.wrap, credsState, removeCreds.wrap, h('div', {class: 'form-actions'}, addBtn, cancelBtn));

  const setMode = (c) => {
    editing = c;
    clearErrors(form);
    brand.input.value = c ? c.brandName : '';
    svc.input.value = c ? c.providerServiceId || '' : '';
    provider.input.value = c ? c.provider || 'herald' : 'herald';
    fillChannels(c ? c.channel || 'viber' : 'viber');
    baseUrl.input.value = c && c.baseUrl ? c.baseUrl : '';
    creds.input.value = '';
    removeCreds.input.checked = false;
    removeCreds.wrap.hidden = !(c && c.credentialsSet);
    replace(credsState, c ? (c.credentialsSet ? 'Credentials are set: leave the box empty to keep them.' : 'No credentials are set.') : '');
    replace(formTitle, c ? `Edit ${c.brandName}` : 'Add a chat service');
    addBtn.textContent = c ? 'Save chat service' : 'Add chat service';
    cancelBtn.hidden = !c;
    form.dataset.editing = c ? String(c.id) : '';
  };
  setMode(null);
  cancelBtn.addEventListener('click', () => setMode(null));

  const draw = async () => {
    const items = legacy ? memo.list(memoName) : await listOrNull(`/admin/v1/companies/${enc(id)}/chat-services`, ctx.signal) || [];
    const cols = [{label: 'Brand'}, {label: 'Provider'}, {label: 'Credentials'}, {label: 'Actions', class: 'col-actions'}];
    replace(listEl,
      legacy ? unavailable('Listing chat services', 'This server cannot list a company’s chat services yet: those added in this tab are shown.') : null,
      items.length ? table(cols, items.map((c) => {
        const edit = legacy ? null : h('button', {type: 'button', class: 'btn btn-ghost btn-small', 'aria-label': `Edit ${c.brandName}`, dataset: {chatService: String(c.id)}}, 'Edit');
        if (edit) {
          edit.addEventListener('click', () => {
            setMode(c);
            brand.input.focus();
          });
        }
        const set = !!c.credentialsSet;
        return row(cols, [
          h('div', null, c.brandName, h('div', {class: 'mono small muted'}, c.providerServiceId || ''),
            c.createdAt ? h('div', {class: 'small muted'}, 'added ' + dateTime(c.createdAt)) : null),
          h('span', {dataset: {provider: c.provider || 'herald', channel: c.channel || 'viber'}}, `${providerLabel(c.provider)} · ${channelLabels[c.channel] || c.channel || 'Viber'}`),
          h('span', {class: 'badge ' + (set ? 'badge-completed' : 'badge-draft'), dataset: {credentialsSet: String(set)}}, set ? 'Set' : 'None'),
          edit]);
      }), {id: 'chat-table', caption: 'Chat services'})
        : emptyState('No chat service', 'Add the company’s service at the chat provider to send chat messages.'));
  };

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearErrors(form);
    const c = credentialsBody(creds.input.value);
    if (c.error) {
      creds.setError(c.error);
      creds.input.focus();
      return;
    }
    const body = {brandName: brand.input.value.trim(), providerServiceId: svc.input.value.trim(),
      provider: provider.input.value, channel: channel.input.value, baseUrl: baseUrl.input.value.trim() || null};
    if (c.value !== undefined) body.credentials = c.value;
    else if (editing && removeCreds.input.checked) body.credentials = null;
    let saved = false;
    await busy(addBtn, editing ? 'Saving…' : 'Adding…', async () => {
      try {
        const r = editing
          ? await put(`/admin/v1/companies/${enc(id)}/chat-services/${enc(editing.id)}`, body)
          : await post(`/admin/v1/companies/${enc(id)}/chat-services`, body);
        memo.put(memoName, r);
        toast(editing ? `Chat service ${r.brandName} saved.` : `Chat service ${r.brandName} added.`);
        saved = true;
      } catch (err) {
        showErrors(form, err);
      }
    });
    if (saved) setMode(null); // also empties the credentials box
    await draw();
  });
  replace(box, h('h2', {id: 'chat-services-title'}, 'Chat services'), listEl, form);
  await draw();
}
