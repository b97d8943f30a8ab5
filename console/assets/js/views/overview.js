// The overview of either side. A company sees today's messages (since
// local midnight) by status and channel, its delivery rate and its failed
// messages by reason, from GET /api/v1/summary: campaigns, direct sends
// and fallback SMS alike. The operator sees each connector's live
// throughput and the same summary over every company, with a row per
// company, from GET /admin/v1/summary.

import {h, replace} from '../dom.js';
import {get, isUnavailable} from '../api.js';
import {num, pct, CHANNEL_LABEL} from '../format.js';
import {session} from '../session.js';
import {pageHeader, emptyState, table, row, loading, notice, keepPolling} from '../ui.js';
import {stateBadge} from './connectors.js';

function counter(label, value, id, note, kind) {
  return h('div', {class: 'counter' + (kind ? ' counter-' + kind : ''), id}, h('dt', null, label), h('dd', null, value, note ? h('span', {class: 'counter-note'}, note) : null));
}

// startOfToday is local midnight, the start of the summaries.
function startOfToday() {
  const d = new Date();
  d.setHours(0, 0, 0, 0);
  return d;
}

const CHANNELS = ['Smpp', 'Chat'];

// The summary's statuses, as the page shows them: Pending gathers the
// messages not settled yet (Pending, Sending, Sent awaiting a report),
// Delivered the Delivered and Seen ones.
const STATUSES = [
  {label: 'Delivered', of: (b) => b.Delivered + b.Seen},
  {label: 'Seen', of: (b) => b.Seen},
  {label: 'Pending', of: (b) => b.Pending + b.Sending + b.Sent},
  {label: 'Failed', of: (b) => b.Failed},
];

function rate(r) {
  return r === null || r === undefined ? '\u2013' : pct(r);
}

// summaryParts draws a summary (of GET /summary): its counters, its table
// by channel and its failures by reason.
function summaryParts(sum, extra) {
  const b = sum.byStatus;
  const counters = h('dl', {class: 'counters', id: 'overview-counters'},
    ...(extra || []),
    counter('Messages today', num(sum.total), 'ov-total'),
    counter('Delivered', num(b.Delivered + b.Seen), 'ov-delivered', b.Seen ? `${num(b.Seen)} seen` : null, 'good'),
    counter('Failed', num(b.Failed), 'ov-failed', null, b.Failed ? 'bad' : null),
    counter('Pending', num(b.Pending + b.Sending + b.Sent), 'ov-pending'),
    counter('Delivery rate', rate(sum.deliveryRate), 'ov-rate', 'of the messages with a final status'));
  const columns = [{label: 'Channel'}, {label: 'Messages', class: 'num'}, ...STATUSES.map((s) => ({label: s.label, class: 'num'})), {label: 'Delivery rate', class: 'num'}];
  const rows = CHANNELS.filter((ch) => sum.byChannel[ch].total > 0).map((ch) => {
    const v = sum.byChannel[ch];
    return row(columns, [CHANNEL_LABEL[ch] || ch, num(v.total), ...STATUSES.map((s) => num(s.of(v.byStatus))), rate(v.deliveryRate)], {dataset: {channel: ch}});
  });
  const fcolumns = [{label: 'Reason'}, {label: 'Channel'}, {label: 'Messages', class: 'num'}];
  const frows = sum.failuresByReason.map((f) => {
    const reason = f.reason || 'No reason given';
    return row(fcolumns, [reason, CHANNEL_LABEL[f.channel] || f.channel, num(f.count)], {dataset: {reason}});
  });
  return {
    counters,
    channels: h('section', {class: 'card', id: 'overview-channels', 'aria-labelledby': 'ov-channels-title'}, h('h2', {id: 'ov-channels-title'}, 'By channel'),
      rows.length ? table(columns, rows, {id: 'overview-table', caption: 'Today\u2019s messages by channel'}) : emptyState('No messages today', 'Campaigns, direct sends and fallback SMS are counted here.')),
    failures: h('section', {class: 'card', id: 'overview-failures', 'aria-labelledby': 'ov-failures-title'}, h('h2', {id: 'ov-failures-title'}, 'Failures by reason'),
      frows.length ? table(fcolumns, frows, {id: 'failures-table', caption: 'Today\u2019s failed messages by reason'}) : emptyState('No failed messages today', null)),
  };
}

async function companyOverview(ctx) {
  const since = startOfToday();
  const sum = await get('/api/v1/summary', {query: {since: since.toISOString()}, signal: ctx.signal});
  const parts = summaryParts(sum);
  replace(ctx.main, pageHeader('Overview'),
    h('p', {class: 'muted', id: 'overview-scope'}, `Messages created since ${since.toLocaleString()}: campaigns, direct sends and fallback SMS.`),
    parts.counters, parts.channels, parts.failures);
}

// companiesTable lists the companies of the operator's summary.
function companiesTable(sum) {
  const columns = [{label: 'Company'}, {label: 'Messages', class: 'num'}, ...STATUSES.filter((s) => s.label !== 'Seen').map((s) => ({label: s.label, class: 'num'})), {label: 'Delivery rate', class: 'num'}];
  const rows = sum.companies.map((c) => row(columns, [c.name || c.companyId, num(c.total), ...STATUSES.filter((s) => s.label !== 'Seen').map((s) => num(s.of(c.byStatus))), rate(c.deliveryRate)],
    {dataset: {company: c.companyId}}));
  return h('section', {class: 'card', id: 'overview-companies', 'aria-labelledby': 'ov-companies-title'}, h('h2', {id: 'ov-companies-title'}, 'By company'),
    rows.length ? table(columns, rows, {id: 'overview-companies-table', caption: 'Today\u2019s messages by company'}) : emptyState('No messages today', null));
}

async function operatorOverview(ctx) {
  const companies = await get('/admin/v1/companies', {query: {pageSize: 1}, signal: ctx.signal}).catch((err) => { if (isUnavailable(err)) return null; throw err; });
  let conns = null;
  try {
    conns = (await get('/admin/v1/smpp-connectors', {signal: ctx.signal})).connectors || [];
  } catch (err) {
    if (!isUnavailable(err)) throw err;
  }
  const sum = await get('/admin/v1/summary', {query: {since: startOfToday().toISOString()}, signal: ctx.signal});
  const parts = summaryParts(sum);
  const box = h('section', {class: 'card', id: 'overview-connectors', 'aria-labelledby': 'ov-conn-title'});
  const columns = [{label: 'Connector'}, {label: 'State'}, {label: 'Binds up', class: 'num'}, {label: 'Window in use', class: 'num'},
    {label: 'Throughput', class: 'num'}, {label: 'Submits', class: 'num'}, {label: 'Errors', class: 'num'}];
  const counters = h('dl', {class: 'counters', id: 'overview-conn-counters'});
  const draw = (cs) => {
    let tput = 0;
    let up = 0;
    for (const c of cs) {
      if (c.state) tput += c.state.submitsPerSecond || 0;
      if (c.state && c.state.healthy) up++;
    }
    replace(counters,
      companies ? counter('Companies', num(companies.totalCount), 'ov-companies') : null,
      counter('Connectors healthy', `${num(up)} / ${num(cs.length)}`, 'ov-healthy', null, up < cs.length ? 'bad' : 'good'),
      counter('Submits a second', tput.toFixed(1), 'ov-throughput'));
    replace(box, h('h2', {id: 'ov-conn-title'}, 'Connectors'),
      cs.length ? table(columns, cs.map((c) => {
        const st = c.state;
        return row(columns, [h('a', {href: '#/operator/connectors'}, c.name), stateBadge(st), st ? `${num(st.bindsUp)} / ${num(st.binds)}` : '–',
          st ? num(st.windowInUse) : '–', st ? `${(st.submitsPerSecond || 0).toFixed(1)}/s` : '–', st ? num(st.submits) : '–', st ? num(st.errors) : '–'], {dataset: {connector: c.name}});
      }), {id: 'overview-connectors-table', caption: 'Throughput by connector'}) : emptyState('No connectors', null));
  };
  replace(ctx.main, pageHeader('Overview'),
    h('p', {class: 'muted', id: 'overview-scope'}, `Messages of every company created since ${startOfToday().toLocaleString()}.`),
    parts.counters, companiesTable(sum), parts.channels, parts.failures,
    counters, conns ? box : notice('muted', 'This server has no SMPP connectors of its own.'));
  if (!conns) return;
  draw(conns);
  keepPolling(ctx.signal, 3000, async () => {
    draw((await get('/admin/v1/smpp-connectors', {signal: ctx.signal})).connectors || []);
    return true;
  });
}

export async function render(ctx) {
  replace(ctx.main, pageHeader('Overview'), loading());
  const s = session.get();
  if (s && s.role === 'operator') return operatorOverview(ctx);
  return companyOverview(ctx);
}
