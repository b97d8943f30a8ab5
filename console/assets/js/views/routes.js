// Operator: the routes that pick a connector for an SMS, tried in their
// order: prefixes, companies and senders they match, strategy and
// connectors (with weights for the weighted strategy).

import {h, replace} from '../dom.js';
import {get, post, put, del, enc, isUnavailable, ApiError} from '../api.js';
import {num} from '../format.js';
import {pageHeader, emptyState, table, row, loading, unavailable, busy, confirmDialog, toast} from '../ui.js';
import {field, formError, clearErrors, showErrors} from '../forms.js';

const COLUMNS = [{label: 'Order', class: 'num'}, {label: 'Prefixes'}, {label: 'Companies'}, {label: 'Senders'}, {label: 'Strategy'},
  {label: 'Connectors'}, {label: 'Actions', class: 'col-actions'}];
const STRATEGIES = [{value: 'failover', label: 'Failover (first healthy)'}, {value: 'round-robin', label: 'Round robin'}, {value: 'weighted', label: 'Weighted'}];

function list(s) {
  return s.split(/[\s,]+/).map((x) => x.trim()).filter(Boolean);
}

// targets reads "name" or "name:weight" items.
function targets(s) {
  return list(s).map((x) => {
    const i = x.lastIndexOf(':');
    return i > 0 ? {name: x.slice(0, i), weight: Number(x.slice(i + 1)) || 0} : {name: x, weight: 0};
  });
}

function targetsText(cs) {
  return (cs || []).map((c) => (c.weight ? `${c.name}:${c.weight}` : c.name)).join(' ');
}

function routeForm(connectors, onSaved) {
  const pos = field({label: 'Order', name: 'position', type: 'number', id: 'route-position', value: '', hint: 'Routes are tried from the lowest. Empty: last.', attrs: {min: '0'}});
  const pre = field({label: 'Prefixes', name: 'prefixes', id: 'route-prefixes', placeholder: '44 447', hint: 'Country or number prefixes, digits only. Empty: every number.'});
  const comp = field({label: 'Company ids', name: 'companyIds', id: 'route-companies', hint: 'Empty: every company.'});
  const snd = field({label: 'Sender ids', name: 'senderIds', id: 'route-senders', hint: 'Empty: every sender.'});
  const strat = field({label: 'Strategy', name: 'strategy', type: 'select', id: 'route-strategy', value: 'failover', options: STRATEGIES});
  const conns = field({label: 'Connectors', name: 'connectors', required: true, id: 'route-connectors',
    hint: `In order; name:weight for the weighted strategy. Known: ${connectors.map((c) => c.name).join(', ') || 'none'}.`});
  const submit = h('button', {type: 'submit', class: 'btn btn-primary', id: 'route-save'}, 'Add route');
  const cancel = h('button', {type: 'button', class: 'btn btn-ghost', id: 'route-cancel', hidden: true}, 'Cancel');
  const title = h('h2', null, 'New route');
  const form = h('form', {class: 'card form', id: 'route-form', novalidate: true, dataset: {editing: ''}},
    title, formError(), h('div', {class: 'form-grid'}, pos.wrap, pre.wrap, comp.wrap, snd.wrap, strat.wrap, conns.wrap), h('div', {class: 'form-actions'}, submit, cancel));
  const reset = () => {
    form.dataset.editing = '';
    replace(title, 'New route');
    submit.textContent = 'Add route';
    cancel.hidden = true;
    for (const f of [pos, pre, comp, snd, conns]) f.input.value = '';
    strat.input.value = 'failover';
    clearErrors(form);
  };
  cancel.addEventListener('click', reset);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearErrors(form);
    const body = {prefixes: list(pre.input.value), companyIds: list(comp.input.value), senderIds: list(snd.input.value),
      strategy: strat.input.value, connectors: targets(conns.input.value)};
    if (pos.input.value !== '') body.position = Number(pos.input.value);
    if (!body.connectors.length) {
      conns.setError('Name at least one connector.');
      conns.input.focus();
      return;
    }
    const editing = form.dataset.editing;
    await busy(submit, 'Saving…', async () => {
      try {
        if (editing) await put('/admin/v1/routes/' + enc(editing), body);
        else await post('/admin/v1/routes', body);
        toast(editing ? 'Route saved.' : 'Route added.');
        reset();
        await onSaved();
      } catch (err) {
        showErrors(form, err);
      }
    });
  });
  const edit = (r) => {
    reset();
    form.dataset.editing = String(r.id);
    replace(title, `Edit route ${r.position}`);
    submit.textContent = 'Save route';
    cancel.hidden = false;
    pos.input.value = String(r.position);
    pre.input.value = (r.prefixes || []).join(' ');
    comp.input.value = (r.companyIds || []).join(' ');
    snd.input.value = (r.senderIds || []).join(' ');
    strat.input.value = r.strategy || 'failover';
    conns.input.value = targetsText(r.connectors);
    form.scrollIntoView({block: 'start'});
    pre.input.focus();
  };
  return {form, edit};
}

function any(xs, all) {
  return xs && xs.length ? xs.join(', ') : h('span', {class: 'muted'}, all);
}

export async function render(ctx) {
  let connectors;
  try {
    connectors = (await get('/admin/v1/smpp-connectors', {signal: ctx.signal})).connectors || [];
  } catch (err) {
    if (!isUnavailable(err)) throw err;
    replace(ctx.main, pageHeader('Routes'), unavailable('Routes', 'This server has no routing of its own.'));
    return;
  }
  const box = h('section', {class: 'card', id: 'routes', 'aria-labelledby': 'routes-title'}, h('h2', {id: 'routes-title'}, 'Routes'), loading());
  let editor;
  const reload = async () => {
    const rs = (await get('/admin/v1/routes', {signal: ctx.signal})).routes || [];
    const rows = rs.map((r) => {
      const editBtn = h('button', {type: 'button', class: 'btn btn-secondary btn-small', dataset: {edit: String(r.id)}, 'aria-label': `Edit route ${r.position}`}, 'Edit');
      editBtn.addEventListener('click', () => editor.edit(r));
      const delBtn = h('button', {type: 'button', class: 'btn btn-danger-text btn-small', dataset: {delete: String(r.id)}, 'aria-label': `Delete route ${r.position}`}, 'Delete');
      delBtn.addEventListener('click', async () => {
        if (!await confirmDialog({title: 'Delete this route?', text: 'SMS it matched take the next route.', confirm: 'Delete', danger: true})) return;
        await busy(delBtn, 'Deleting…', async () => {
          try {
            await del('/admin/v1/routes/' + enc(String(r.id)));
            toast('Route deleted.');
            await reload();
          } catch (err) {
            toast(err instanceof ApiError ? err.message : String(err), 'error');
          }
        });
      });
      return row(COLUMNS, [num(r.position), any(r.prefixes, 'every number'), any(r.companyIds, 'every company'), any(r.senderIds, 'every sender'),
        (STRATEGIES.find((s) => s.value === r.strategy) || {label: r.strategy}).label,
        h('ol', {class: 'route-targets'}, (r.connectors || []).map((c) => h('li', null, c.name, c.weight ? ` (weight ${c.weight})` : ''))),
        h('div', {class: 'row-actions'}, editBtn, delBtn)], {dataset: {routeId: String(r.id)}});
    });
    replace(box, h('h2', {id: 'routes-title'}, 'Routes'), h('p', {class: 'muted'}, 'An SMS takes the first route that matches its number, company and sender.'),
      rs.length ? table(COLUMNS, rows, {id: 'routes-table', caption: 'Routes in their order'}) : emptyState('No routes', 'Every SMS goes to the default connector.'));
  };
  editor = routeForm(connectors, reload);
  replace(ctx.main, pageHeader('Routes', h('a', {class: 'btn btn-secondary', href: '#/operator/connectors'}, 'Connectors')), box, editor.form);
  await reload();
}
