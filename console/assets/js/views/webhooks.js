// Webhooks: the company's endpoints (register, with optional batches;
// remove; rotate the secret, shown once) and, on an endpoint's page, its
// delivery log with status codes and latency, and redelivery.

import {h, replace} from '../dom.js';
import {get, post, del, enc, isUnavailable, ApiError} from '../api.js';
import {dateTime, num} from '../format.js';
import {pageHeader, emptyState, pager, table, row, loading, unavailable, busy, confirmDialog, toast, copyButton} from '../ui.js';
import {field, fieldset, formError, clearErrors, showErrors} from '../forms.js';

const EVENTS = ['message.status', 'campaign.status', 'survey.answered', 'message.inbound', 'optout.changed'];
const COLUMNS = [{label: 'URL'}, {label: 'Events'}, {label: 'Batches'}, {label: 'State'}, {label: 'Created'}, {label: 'Actions', class: 'col-actions'}];
const LOG_COLUMNS = [{label: 'Event'}, {label: 'State'}, {label: 'Attempts', class: 'num'}, {label: 'Status code', class: 'num'},
  {label: 'Latency', class: 'num'}, {label: 'Last attempt'}, {label: 'Next attempt'}, {label: 'Actions', class: 'col-actions'}];
const STATE_CLASS = {Waiting: 'badge-pending', Delivered: 'badge-delivered', GaveUp: 'badge-failed'};

function enabledBadge(e) {
  return h('span', {class: 'badge ' + (e.enabled ? 'badge-completed' : 'badge-failed'), dataset: {enabled: String(!!e.enabled)}, title: e.disabledReason || null},
    e.enabled ? 'Enabled' : 'Disabled');
}

function batchText(b) {
  if (!b) return 'One event a request';
  return `Up to ${num(b.maxEvents)} events` + (b.maxWaitMs ? `, waits ${num(b.maxWaitMs)} ms` : '');
}

// secretBox shows a new secret once, with a copy button.
function secretBox(title, secret) {
  return h('div', {class: 'notice notice-success secret-box', role: 'status'},
    h('strong', null, title), h('p', null, 'Copy the signing secret now: it is not shown again.'),
    h('div', {class: 'secret-row'}, h('code', {class: 'secret', id: 'new-secret-value'}, secret), copyButton(() => secret)));
}

function registerForm(ctx, reveal) {
  const url = field({label: 'URL', name: 'url', required: true, id: 'hook-url', placeholder: 'https://hooks.example.com/herald', attrs: {autocomplete: 'off', inputmode: 'url'}});
  const boxes = EVENTS.map((ev) => field({label: ev, name: 'eventChoice', type: 'checkbox', id: 'hook-ev-' + ev.replace('.', '-'), value: ev === 'message.status'}));
  boxes.forEach((b, i) => { b.input.value = EVENTS[i]; });
  const evWrap = h('div', {class: 'field', dataset: {field: 'events'}}, fieldset('Events', boxes.map((b) => b.wrap)), h('p', {class: 'field-error', hidden: true}));
  const batching = field({label: 'Send events in batches', name: 'batch', type: 'checkbox', id: 'hook-batch'});
  const maxEvents = field({label: 'Most events a request', name: 'batch.maxEvents', type: 'number', id: 'hook-max-events', value: '100', hint: '1 to 1000.', attrs: {min: '1', max: '1000'}});
  const maxWait = field({label: 'Longest wait (ms)', name: 'batch.maxWaitMs', type: 'number', id: 'hook-max-wait', value: '1000', hint: '0 to 60000: how long the oldest event may wait for the batch to fill.', attrs: {min: '0', max: '60000'}});
  const batchBox = h('div', {class: 'form-grid form-grid-2', id: 'hook-batch-settings', hidden: true}, maxEvents.wrap, maxWait.wrap);
  batching.input.addEventListener('change', () => { batchBox.hidden = !batching.input.checked; });
  const submit = h('button', {type: 'submit', class: 'btn btn-primary', id: 'hook-register'}, 'Register endpoint');
  const form = h('form', {class: 'card form', id: 'hook-form', novalidate: true},
    h('h2', null, 'New endpoint'), formError(), url.wrap, evWrap, batching.wrap, batchBox, h('div', {class: 'form-actions'}, submit));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearErrors(form);
    const body = {url: url.input.value.trim(), events: boxes.filter((b) => b.input.checked).map((b) => b.input.value)};
    if (!body.url) {
      url.setError('Enter the URL Herald posts events to.');
      url.input.focus();
      return;
    }
    if (batching.input.checked) body.batch = {maxEvents: Number(maxEvents.input.value), maxWaitMs: Number(maxWait.input.value || 0)};
    await busy(submit, 'Registering…', async () => {
      try {
        const ep = await post('/api/v1/webhooks', body);
        await ctx.reload();
        replace(reveal, secretBox(`Endpoint ${ep.url} registered.`, ep.secret));
        url.input.value = '';
      } catch (err) {
        showErrors(form, err);
      }
    });
  });
  return form;
}

async function listBox(ctx, box, reveal) {
  const list = await get('/api/v1/webhooks', {signal: ctx.signal});
  const eps = Array.isArray(list) ? list : [];
  const rows = eps.map((ep) => {
    const rotate = h('button', {type: 'button', class: 'btn btn-secondary btn-small', dataset: {rotate: ep.id}}, 'Rotate secret');
    rotate.addEventListener('click', async () => {
      const ok = await confirmDialog({title: 'Rotate the signing secret?', text: 'Requests carry a signature of the old secret too for the next 24 hours.', confirm: 'Rotate'});
      if (!ok) return;
      await busy(rotate, 'Rotating…', async () => {
        try {
          const got = await post('/api/v1/webhooks/' + enc(ep.id) + '/rotate-secret');
          replace(reveal, secretBox(`New secret of ${ep.url}. The old one works until ${dateTime(got.previousSecretExpiresAt)}.`, got.secret));
        } catch (err) {
          toast(err instanceof ApiError ? err.message : String(err), 'error');
        }
      });
    });
    const remove = h('button', {type: 'button', class: 'btn btn-danger-text btn-small', dataset: {remove: ep.id}, 'aria-label': `Remove ${ep.url}`}, 'Remove');
    remove.addEventListener('click', async () => {
      const ok = await confirmDialog({title: 'Remove this endpoint?', text: `${ep.url} gets no more events.`, confirm: 'Remove', danger: true});
      if (!ok) return;
      await busy(remove, 'Removing…', async () => {
        try {
          await del('/api/v1/webhooks/' + enc(ep.id));
          replace(reveal);
          await ctx.reload();
        } catch (err) {
          toast(err instanceof ApiError ? err.message : String(err), 'error');
        }
      });
    });
    return row(COLUMNS, [
      h('a', {href: '#/webhooks/' + enc(ep.id), class: 'mono'}, ep.url),
      (ep.events || []).join(', '),
      batchText(ep.batch),
      enabledBadge(ep),
      dateTime(ep.createdAt),
      h('div', {class: 'row-actions'}, h('a', {class: 'btn btn-secondary btn-small', href: '#/webhooks/' + enc(ep.id)}, 'Deliveries'), rotate, remove),
    ], {dataset: {webhookId: ep.id}});
  });
  replace(box, h('h2', {id: 'hooks-title'}, 'Endpoints'),
    eps.length ? table(COLUMNS, rows, {id: 'hooks-table', caption: 'Webhook endpoints'}) : emptyState('No endpoints yet', 'Register one above to be told of messages, campaigns, answers, inbound SMS and opt-outs.'));
}

export async function render(ctx) {
  if (ctx.params.id) return renderLog(ctx);
  const reveal = h('div', {id: 'hook-secret'});
  const box = h('section', {class: 'card', id: 'hooks', 'aria-labelledby': 'hooks-title'}, h('h2', {id: 'hooks-title'}, 'Endpoints'), loading());
  ctx.reload = () => listBox(ctx, box, reveal);
  replace(ctx.main, pageHeader('Webhooks'), reveal, registerForm(ctx, reveal), box);
  try {
    await ctx.reload();
  } catch (err) {
    if (!isUnavailable(err)) throw err;
    replace(ctx.main, pageHeader('Webhooks'), unavailable('Webhooks', 'This server sends no webhooks.'));
  }
}

async function renderLog(ctx) {
  const id = ctx.params.id;
  const page = Math.max(1, parseInt(ctx.query.get('page') || '1', 10) || 1);
  const ep = await get('/api/v1/webhooks/' + enc(id), {signal: ctx.signal});
  ctx.setTitle('Webhook deliveries');
  const refresh = h('button', {type: 'button', class: 'btn btn-secondary', id: 'deliveries-refresh'}, 'Refresh');
  refresh.addEventListener('click', () => ctx.navigate(location.hash.slice(1)));
  const box = h('section', {class: 'card', id: 'deliveries', 'aria-labelledby': 'deliveries-title'}, h('h2', {id: 'deliveries-title'}, 'Delivery log'), loading());
  replace(ctx.main,
    h('nav', {class: 'breadcrumb', 'aria-label': 'Breadcrumb'}, h('a', {href: '#/webhooks'}, 'Webhooks')),
    pageHeader(ep.url, refresh),
    h('dl', {class: 'counters counters-small', id: 'hook-summary'},
      h('div', {class: 'counter'}, h('dt', null, 'State'), h('dd', null, enabledBadge(ep))),
      h('div', {class: 'counter counter-list'}, h('dt', null, 'Events'), h('dd', null, (ep.events || []).join(', '))),
      h('div', {class: 'counter counter-list'}, h('dt', null, 'Batches'), h('dd', null, batchText(ep.batch)))),
    ep.disabledReason ? h('div', {class: 'notice notice-warning'}, 'Disabled: ' + ep.disabledReason) : null,
    box);
  const list = await get('/api/v1/webhooks/' + enc(id) + '/deliveries', {query: {page, pageSize: 20}, signal: ctx.signal});
  const ds = list.deliveries || [];
  const rows = ds.map((d) => {
    const again = h('button', {type: 'button', class: 'btn btn-secondary btn-small', dataset: {redeliver: d.eventId}, 'aria-label': `Send event ${d.eventId} again`}, 'Redeliver');
    again.addEventListener('click', async () => {
      await busy(again, 'Sending…', async () => {
        try {
          await post('/api/v1/webhooks/' + enc(id) + '/deliveries/' + enc(d.eventId) + '/redeliver');
          toast('The event is sent again.');
          ctx.navigate(location.hash.slice(1));
        } catch (err) {
          toast(err instanceof ApiError ? err.message : String(err), 'error');
        }
      });
    });
    return row(LOG_COLUMNS, [
      h('div', null, h('span', {class: 'strong'}, d.eventType), h('div', {class: 'muted small mono'}, d.eventId), h('div', {class: 'muted small'}, dateTime(d.eventCreatedAt))),
      h('span', {class: 'badge ' + (STATE_CLASS[d.status] || ''), dataset: {status: d.status}}, d.status === 'GaveUp' ? 'Gave up' : d.status),
      num(d.attempts),
      h('span', {class: 'status-code'}, d.lastStatusCode ? String(d.lastStatusCode) : '–', d.lastError ? h('div', {class: 'muted small'}, d.lastError) : null),
      typeof d.lastLatencyMs === 'number' ? `${d.lastLatencyMs.toFixed(1)} ms` : '–',
      d.lastAttemptAt ? dateTime(d.lastAttemptAt) : '–',
      d.nextAttemptAt ? dateTime(d.nextAttemptAt) : '–',
      again,
    ], {dataset: {eventId: d.eventId}});
  });
  replace(box, h('h2', {id: 'deliveries-title'}, 'Delivery log'),
    h('p', {class: 'muted'}, 'Events of the last seven days, the latest first.'),
    ds.length ? table(LOG_COLUMNS, rows, {id: 'deliveries-table', caption: 'Deliveries'}) : emptyState('No events yet', 'Events sent to this endpoint appear here.'),
    pager(list, (p) => '#/webhooks/' + enc(id) + '?page=' + p));
}
