// Message search: by phone number, external user id and campaign, with
// status and dates. The search lives in the address, so that it can be
// bookmarked and the back button works.

import {h, replace} from '../dom.js';
import {get, enc, ApiError} from '../api.js';
import {dateTime, CHANNEL_LABEL} from '../format.js';
import {badge, pageHeader, emptyState, pager, table, row, loading} from '../ui.js';
import {field, formError, clearErrors, showErrors} from '../forms.js';

const FIELDS = ['phoneNumber', 'externalUserId', 'campaignId', 'status', 'startDate', 'endDate'];
const COLUMNS = [{label: 'Phone'}, {label: 'Status'}, {label: 'Channel'}, {label: 'Message', class: 'col-text'}, {label: 'Details'}, {label: 'Sent'}, {label: 'Delivered'}, {label: 'Campaign'}];

async function campaignOptions(signal) {
  try {
    const list = await get('/api/v1/campaigns', {query: {pageSize: 100}, signal});
    return list.campaigns;
  } catch (_) {
    return [];
  }
}

function queryHref(values, page) {
  const q = new URLSearchParams();
  for (const k of FIELDS) if (values[k]) q.set(k, values[k]);
  if (page > 1) q.set('page', page);
  return '#/messages' + (q.toString() ? '?' + q.toString() : '');
}

export async function render(ctx) {
  const values = {};
  for (const k of FIELDS) values[k] = (ctx.query.get(k) || '').trim();
  const page = Math.max(1, parseInt(ctx.query.get('page') || '1', 10) || 1);
  const campaigns = await campaignOptions(ctx.signal);
  const campaignChoices = [{value: '', label: 'Any campaign'}, ...campaigns.map((c) => ({value: c.campaignId, label: c.name}))];
  if (values.campaignId && !campaigns.some((c) => c.campaignId === values.campaignId)) campaignChoices.push({value: values.campaignId, label: values.campaignId});

  const phone = field({label: 'Phone number', name: 'phoneNumber', value: values.phoneNumber, id: 'q-phone', placeholder: '+447700900123', attrs: {inputmode: 'tel', autocomplete: 'off'}});
  const ext = field({label: 'External user id', name: 'externalUserId', value: values.externalUserId, id: 'q-external', attrs: {autocomplete: 'off'}});
  const camp = field({label: 'Campaign', name: 'campaignId', type: 'select', value: values.campaignId, options: campaignChoices, id: 'q-campaign'});
  const status = field({label: 'Status', name: 'status', type: 'select', value: values.status, id: 'q-status',
    options: [{value: '', label: 'Any status'}, ...['Pending', 'Sending', 'Sent', 'Delivered', 'Seen', 'Failed'].map((s) => ({value: s, label: s}))]});
  const from = field({label: 'From', name: 'startDate', type: 'date', value: values.startDate, id: 'q-from'});
  const to = field({label: 'To', name: 'endDate', type: 'date', value: values.endDate, id: 'q-to'});
  const submit = h('button', {type: 'submit', class: 'btn btn-primary', id: 'search-submit'}, 'Search');
  const clear = h('a', {class: 'btn btn-ghost', href: '#/messages'}, 'Clear');
  const form = h('form', {class: 'card form search-form', id: 'message-search', role: 'search', novalidate: true},
    formError(),
    h('div', {class: 'form-grid'}, phone.wrap, ext.wrap, camp.wrap, status.wrap, from.wrap, to.wrap),
    h('div', {class: 'form-actions'}, submit, clear));
  const results = h('div', {id: 'message-results', 'aria-live': 'polite'});
  replace(ctx.main, pageHeader('Messages'), form, results);

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    clearErrors(form);
    const v = {phoneNumber: phone.input.value.trim(), externalUserId: ext.input.value.trim(), campaignId: camp.input.value,
      status: status.input.value, startDate: from.input.value, endDate: to.input.value};
    if (!v.phoneNumber && !v.externalUserId && !v.campaignId) {
      showErrors(form, new ApiError(400, {message: 'Give a phone number, an external user id or a campaign.', validationErrors: {phoneNumber: 'Give a phone number, an external user id or a campaign.'}}));
      return;
    }
    const target = queryHref(v, 1);
    if (location.hash === target) ctx.navigate(target.slice(1));
    else location.hash = target;
  });

  if (!values.phoneNumber && !values.externalUserId && !values.campaignId) {
    replace(results, emptyState('Find messages', 'Search by a phone number, an external user id or a campaign, then narrow by status and dates.'));
    return;
  }
  replace(results, loading('Searching…'));
  let list;
  try {
    const q = {page, pageSize: 50};
    for (const k of FIELDS) if (values[k]) q[k] = values[k];
    list = await get('/api/v1/messages', {query: q, signal: ctx.signal});
  } catch (err) {
    if (ctx.signal.aborted) return;
    replace(results);
    showErrors(form, err);
    return;
  }
  const names = new Map(campaigns.map((c) => [c.campaignId, c.name]));
  if (!list.messages.length) {
    replace(results, emptyState('No messages found', 'No message matches this search.'));
    return;
  }
  replace(results,
    h('p', {class: 'muted', id: 'result-count'}, `${list.totalCount} message${list.totalCount === 1 ? '' : 's'} found.`),
    table(COLUMNS, list.messages.map((m) => row(COLUMNS, [
      h('span', {class: 'mono'}, m.phoneNumber, m.externalUserId ? h('div', {class: 'muted small'}, m.externalUserId) : null),
      badge(m.status),
      CHANNEL_LABEL[m.channelType] || m.channelType,
      h('span', {class: 'message-text'}, m.messageContent),
      [m.details || '', m.smsErrorCode ? h('div', {class: 'muted small'}, 'error ' + m.smsErrorCode) : null],
      m.sentAt ? dateTime(m.sentAt) : '–',
      m.deliveredAt ? dateTime(m.deliveredAt) : '–',
      h('a', {href: '#/campaigns/' + enc(m.campaignId)}, names.get(m.campaignId) || 'Open'),
    ])), {id: 'messages-table', caption: 'Messages found'}),
    pager(list, (p) => queryHref(values, p)));
}
