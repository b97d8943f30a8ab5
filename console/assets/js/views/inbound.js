// Inbound SMS: what people sent to the company's senders, the latest
// first, narrowed by phone number, a page at a time.

import {h, replace} from '../dom.js';
import {get, isUnavailable} from '../api.js';
import {dateTime, num} from '../format.js';
import {pageHeader, emptyState, pager, table, row, loading, unavailable} from '../ui.js';
import {field, formError, showErrors} from '../forms.js';

const COLUMNS = [{label: 'From'}, {label: 'To'}, {label: 'Text', class: 'col-text'}, {label: 'Parts', class: 'num'}, {label: 'Received'}];

function href(phone, page) {
  const q = new URLSearchParams();
  if (phone) q.set('phoneNumber', phone);
  if (page > 1) q.set('page', page);
  return '#/inbound' + (q.toString() ? '?' + q.toString() : '');
}

export async function render(ctx) {
  const phone = (ctx.query.get('phoneNumber') || '').trim();
  const page = Math.max(1, parseInt(ctx.query.get('page') || '1', 10) || 1);
  const pf = field({label: 'Phone number', name: 'phoneNumber', value: phone, id: 'inbound-phone', placeholder: '+447700900123', attrs: {inputmode: 'tel', autocomplete: 'off'}});
  const form = h('form', {class: 'card form form-inline', id: 'inbound-search', role: 'search', novalidate: true},
    formError(), h('div', {class: 'inline-row'}, pf.wrap, h('button', {type: 'submit', class: 'btn btn-secondary', id: 'inbound-submit'}, 'Filter')));
  const results = h('div', {id: 'inbound-results', 'aria-live': 'polite'}, loading());
  replace(ctx.main, pageHeader('Inbound SMS'), form, results);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const target = href(pf.input.value.trim(), 1);
    if (location.hash === target) ctx.navigate(target.slice(1));
    else location.hash = target;
  });
  let list;
  try {
    list = await get('/api/v1/inbound', {query: {phoneNumber: phone, page, pageSize: 20}, signal: ctx.signal});
  } catch (err) {
    if (ctx.signal.aborted) return;
    if (isUnavailable(err)) {
      replace(results, unavailable('Inbound SMS', 'This server does not store inbound SMS.'));
      return;
    }
    replace(results);
    showErrors(form, err);
    return;
  }
  const msgs = list.messages || [];
  if (!msgs.length) {
    replace(results, emptyState(phone ? 'No SMS from this number' : 'No inbound SMS yet', 'SMS people send to your approved senders appear here.'));
    return;
  }
  replace(results,
    h('p', {class: 'muted', id: 'inbound-count'}, `${num(list.totalCount)} SMS received.`),
    table(COLUMNS, msgs.map((m) => row(COLUMNS, [
      h('span', {class: 'mono'}, '+' + m.phoneNumber),
      h('span', {class: 'mono'}, m.to),
      h('span', {class: 'message-text'}, m.text),
      num(m.parts),
      dateTime(m.receivedAt),
    ], {dataset: {inboundId: m.id}})), {id: 'inbound-table', caption: 'Inbound SMS'}),
    pager(list, (p) => href(phone, p)));
}
