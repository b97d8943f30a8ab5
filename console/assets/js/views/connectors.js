// Operator: the SMPP connectors with their live state (binds up, window
// in use, submits, errors), created, edited and deleted here. A
// connector's password is written, never shown back: the page only says
// whether one is set.

import {h, replace} from '../dom.js';
import {get, post, put, del, enc, isUnavailable, ApiError} from '../api.js';
import {dateTime, num, ago} from '../format.js';
import {pageHeader, emptyState, table, row, loading, unavailable, busy, confirmDialog, toast, keepPolling} from '../ui.js';
import {field, formError, clearErrors, showErrors} from '../forms.js';

const COLUMNS = [{label: 'Connector'}, {label: 'State'}, {label: 'Binds up', class: 'num'}, {label: 'Window in use', class: 'num'},
  {label: 'Submits', class: 'num'}, {label: 'Errors', class: 'num'}, {label: 'Settings'}, {label: 'Actions', class: 'col-actions'}];

// stateBadge says whether a connector is up: Healthy, Down, or Not
// running when this process holds no state of it.
export function stateBadge(st) {
  if (!st) return h('span', {class: 'badge badge-draft', dataset: {state: 'none'}}, 'Not running');
  return st.healthy
    ? h('span', {class: 'badge badge-delivered', dataset: {state: 'healthy'}}, 'Healthy')
    : h('span', {class: 'badge badge-failed', dataset: {state: 'down'}}, 'Down');
}

function connectorForm(ctx, onSaved) {
  const name = field({label: 'Name', name: 'name', required: true, id: 'conn-name', hint: 'Letters, digits and dashes; routes name it.', attrs: {autocomplete: 'off'}});
  const addr = field({label: 'Address', name: 'addr', required: true, id: 'conn-addr', placeholder: 'smsc.example.net:2775', attrs: {autocomplete: 'off'}});
  const sys = field({label: 'System id', name: 'systemId', required: true, id: 'conn-system-id', attrs: {autocomplete: 'off'}});
  const pw = field({label: 'Password', name: 'password', type: 'password', id: 'conn-password', hint: 'Up to 8 characters (SMPP).', attrs: {autocomplete: 'new-password', maxlength: '8'}});
  const bind = field({label: 'Bind', name: 'bindType', type: 'select', id: 'conn-bind', value: 'transceiver',
    options: [{value: 'transceiver', label: 'Transceiver'}, {value: 'transmitter', label: 'Transmitter'}]});
  const binds = field({label: 'Binds', name: 'binds', type: 'number', id: 'conn-binds', value: '1', attrs: {min: '1'}});
  const win = field({label: 'Window', name: 'window', type: 'number', id: 'conn-window', value: '10', hint: 'Submits awaiting an answer, per bind.', attrs: {min: '1'}});
  const rate = field({label: 'Messages a second', name: 'maxPerSecond', type: 'number', id: 'conn-rate', value: '', hint: 'Empty: no limit.', attrs: {min: '0', step: 'any'}});
  const tls = field({label: 'TLS', name: 'tls', type: 'checkbox', id: 'conn-tls'});
  const pwState = h('p', {class: 'hint', id: 'conn-password-state'});
  pw.wrap.appendChild(pwState);
  const submit = h('button', {type: 'submit', class: 'btn btn-primary', id: 'conn-save'}, 'Add connector');
  const cancel = h('button', {type: 'button', class: 'btn btn-ghost', id: 'conn-cancel', hidden: true}, 'Cancel');
  const title = h('h2', {id: 'conn-form-title'}, 'New connector');
  const form = h('form', {class: 'card form', id: 'conn-form', novalidate: true, dataset: {editing: ''}},
    title, formError(), h('div', {class: 'form-grid'}, name.wrap, addr.wrap, sys.wrap, pw.wrap, bind.wrap, binds.wrap, win.wrap, rate.wrap), tls.wrap,
    h('div', {class: 'form-actions'}, submit, cancel));
  const reset = () => {
    form.dataset.editing = '';
    replace(title, 'New connector');
    submit.textContent = 'Add connector';
    cancel.hidden = true;
    name.input.disabled = false;
    for (const f of [name, addr, sys, pw, rate]) f.input.value = '';
    binds.input.value = '1';
    win.input.value = '10';
    bind.input.value = 'transceiver';
    tls.input.checked = false;
    replace(pwState);
    clearErrors(form);
  };
  cancel.addEventListener('click', reset);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearErrors(form);
    const editing = form.dataset.editing;
    const body = {name: name.input.value.trim(), addr: addr.input.value.trim(), systemId: sys.input.value.trim(), bindType: bind.input.value,
      binds: Number(binds.input.value || 0), window: Number(win.input.value || 0), maxPerSecond: Number(rate.input.value || 0), tls: tls.input.checked};
    if (pw.input.value) body.password = pw.input.value;
    if (!body.name) {
      name.setError('Enter the connector’s name.');
      name.input.focus();
      return;
    }
    await busy(submit, 'Saving…', async () => {
      try {
        if (editing) await put('/admin/v1/smpp-connectors/' + enc(editing), body);
        else await post('/admin/v1/smpp-connectors', body);
        toast(editing ? `Connector ${editing} saved.` : `Connector ${body.name} added.`);
        reset();
        await onSaved();
      } catch (err) {
        showErrors(form, err);
      }
    });
  });
  const edit = (c) => {
    reset();
    form.dataset.editing = c.name;
    replace(title, 'Edit ' + c.name);
    submit.textContent = 'Save connector';
    cancel.hidden = false;
    name.input.value = c.name;
    name.input.disabled = true;
    addr.input.value = c.addr || '';
    sys.input.value = c.systemId || '';
    bind.input.value = c.bindType || 'transceiver';
    binds.input.value = String(c.binds || 1);
    win.input.value = String(c.window || 10);
    rate.input.value = c.maxPerSecond ? String(c.maxPerSecond) : '';
    tls.input.checked = !!c.tls;
    replace(pwState, c.passwordSet ? 'A password is set. Leave this empty to keep it.' : 'No password is set.');
    form.scrollIntoView({block: 'start'});
    addr.input.focus();
  };
  return {form, edit};
}

function connectorRow(c, edit, reload) {
  const st = c.state;
  const editBtn = h('button', {type: 'button', class: 'btn btn-secondary btn-small', dataset: {edit: c.name}, 'aria-label': `Edit ${c.name}`}, 'Edit');
  editBtn.addEventListener('click', () => edit(c));
  const delBtn = h('button', {type: 'button', class: 'btn btn-danger-text btn-small', dataset: {delete: c.name}, 'aria-label': `Delete ${c.name}`}, 'Delete');
  delBtn.addEventListener('click', async () => {
    const ok = await confirmDialog({title: `Delete ${c.name}?`, text: 'Its binds are closed. A route that names it must be changed first.', confirm: 'Delete', danger: true});
    if (!ok) return;
    await busy(delBtn, 'Deleting…', async () => {
      try {
        await del('/admin/v1/smpp-connectors/' + enc(c.name));
        toast(`Connector ${c.name} deleted.`);
        await reload();
      } catch (err) {
        toast(err instanceof ApiError ? err.message : String(err), 'error');
      }
    });
  });
  return row(COLUMNS, [
    h('div', null, h('span', {class: 'strong'}, c.name), h('div', {class: 'muted small mono'}, c.addr)),
    stateBadge(st),
    st ? h('span', {class: 'binds-up'}, `${num(st.bindsUp)} / ${num(st.binds)}`) : '–',
    st ? num(st.windowInUse) : '–',
    st ? h('span', null, num(st.submits), h('div', {class: 'muted small'}, `${(st.submitsPerSecond || 0).toFixed(1)}/s`)) : '–',
    st ? h('span', null, num(st.errors), st.lastError ? h('div', {class: 'muted small', title: dateTime(st.lastErrorAt)}, st.lastError, ' · ', ago(st.lastErrorAt)) : null) : '–',
    h('div', {class: 'small'}, `${c.systemId} · ${c.bindType} · ${num(c.binds)} × window ${num(c.window)}`,
      c.maxPerSecond ? ` · ${num(c.maxPerSecond)}/s` : '', c.tls ? ' · TLS' : '',
      h('div', {class: 'muted', dataset: {passwordSet: String(!!c.passwordSet)}}, c.passwordSet ? 'Password set' : 'No password')),
    h('div', {class: 'row-actions'}, editBtn, delBtn),
  ], {dataset: {connector: c.name}});
}

export async function render(ctx) {
  const box = h('section', {class: 'card', id: 'connectors', 'aria-labelledby': 'connectors-title'}, h('h2', {id: 'connectors-title'}, 'Connectors'), loading());
  const live = h('p', {class: 'muted small live-note', id: 'connectors-updated', 'aria-live': 'off'});
  let editor;
  const reload = async () => {
    const list = await get('/admin/v1/smpp-connectors', {signal: ctx.signal});
    const cs = list.connectors || [];
    replace(box, h('h2', {id: 'connectors-title'}, 'Connectors'), live,
      cs.length ? table(COLUMNS, cs.map((c) => connectorRow(c, editor.edit, reload)), {id: 'connectors-table', caption: 'SMPP connectors'})
        : emptyState('No connectors', 'Add the first SMSC below.'));
    replace(live, 'Live state, updated ' + new Date().toLocaleTimeString());
  };
  editor = connectorForm(ctx, reload);
  replace(ctx.main, pageHeader('SMPP connectors', h('a', {class: 'btn btn-secondary', href: '#/operator/routes'}, 'Routes')), box, editor.form);
  try {
    await reload();
  } catch (err) {
    if (!isUnavailable(err)) throw err;
    replace(ctx.main, pageHeader('SMPP connectors'), unavailable('SMPP connectors', 'This server has no routing of its own.'));
    return;
  }
  // The state changes on its own: refresh the table while the form is not
  // being edited.
  keepPolling(ctx.signal, 3000, async () => {
    if (editor.form.dataset.editing || editor.form.contains(document.activeElement) || document.querySelector('dialog[open]')) return true;
    await reload();
    return true;
  });
}
