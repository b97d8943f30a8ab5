// The overview of either side. A company sees today's messages by status
// and channel and its delivery rate, summed from the counters of the
// campaigns created today, and their failed messages by reason (the
// details each failed message carries), read from those campaigns'
// failed messages up to a bound. Direct sends are left out: GET
// /campaigns does not list them, and the page says so. The operator sees
// each connector's live throughput and the companies. The admin API has
// no aggregate of all companies' messages: the page says so rather than
// guess.

import {h, replace} from '../dom.js';
import {get, isUnavailable} from '../api.js';
import {num, pct, CHANNEL_LABEL} from '../format.js';
import {session} from '../session.js';
import {pageHeader, emptyState, table, row, loading, notice, keepPolling} from '../ui.js';
import {stateBadge} from './connectors.js';

function counter(label, value, id, note, kind) {
  return h('div', {class: 'counter' + (kind ? ' counter-' + kind : ''), id}, h('dt', null, label), h('dd', null, value, note ? h('span', {class: 'counter-note'}, note) : null));
}

function startOfToday() {
  const d = new Date();
  d.setHours(0, 0, 0, 0);
  return d;
}

// todaysCampaigns reads the campaigns created since midnight (local
// time), newest first, a page of 100 at a time.
async function todaysCampaigns(signal) {
  const since = startOfToday().getTime();
  const out = [];
  for (let page = 1; page <= 10; page++) {
    const list = await get('/api/v1/campaigns', {query: {page, pageSize: 100}, signal});
    const cs = list.campaigns || [];
    for (const c of cs) {
      if (new Date(c.createdAt).getTime() < since) return out;
      out.push(c);
    }
    if (page >= (list.totalPages || 0)) break;
  }
  return out;
}

const STATUSES = [
  {key: 'deliveredCount', label: 'Delivered'},
  {key: 'unconfirmedCount', label: 'Unconfirmed'},
  {key: 'pendingCount', label: 'Pending'},
  {key: 'failedCount', label: 'Failed'},
];

// maxFailurePages bounds the pages of failed messages the overview reads
// to count them by reason.
const maxFailurePages = 20;

// failuresByReason counts the failed messages of campaigns cs by their
// details, reading at most maxFailurePages pages of 100. It answers the
// counts, largest first, and how many failed messages it read.
async function failuresByReason(cs, signal) {
  const counts = new Map();
  let read = 0;
  let pages = 0;
  for (const c of cs) {
    for (let page = 1; (c.failedCount || 0) > 0 && pages < maxFailurePages; page++) {
      pages++;
      const list = await get('/api/v1/messages', {query: {campaignId: c.campaignId, status: 'Failed', page, pageSize: 100}, signal});
      for (const m of list.messages || []) {
        const reason = m.details || 'No reason given';
        const k = (CHANNEL_LABEL[m.channelType] || m.channelType) + '\u0000' + reason;
        counts.set(k, (counts.get(k) || 0) + 1);
        read++;
      }
      if (page >= (list.totalPages || 0)) break;
    }
  }
  const rows = [...counts.entries()].map(([k, n]) => {
    const [channel, reason] = k.split('\u0000');
    return {channel, reason, n};
  }).sort((a, b) => b.n - a.n || a.reason.localeCompare(b.reason));
  return {rows, read};
}

async function companyOverview(ctx) {
  const cs = await todaysCampaigns(ctx.signal);
  const by = {};
  const total = {messages: 0, deliveredCount: 0, unconfirmedCount: 0, pendingCount: 0, failedCount: 0, fallback: 0};
  for (const c of cs) {
    const ch = c.channel || 'Smpp';
    by[ch] = by[ch] || {messages: 0, deliveredCount: 0, unconfirmedCount: 0, pendingCount: 0, failedCount: 0};
    by[ch].messages += c.totalMessages || 0;
    total.messages += c.totalMessages || 0;
    for (const s of STATUSES) {
      by[ch][s.key] += c[s.key] || 0;
      total[s.key] += c[s.key] || 0;
    }
    total.fallback += c.smsFallbackDeliveredCount || 0;
  }
  const final = total.deliveredCount + total.failedCount + total.unconfirmedCount;
  const rate = final > 0 ? (total.deliveredCount / final) * 100 : null;
  const failures = await failuresByReason(cs, ctx.signal);
  const fcolumns = [{label: 'Reason'}, {label: 'Channel'}, {label: 'Messages', class: 'num'}];
  const frows = failures.rows.map((f) => row(fcolumns, [f.reason, f.channel, num(f.n)], {dataset: {reason: f.reason}}));
  const columns = [{label: 'Channel'}, {label: 'Messages', class: 'num'}, ...STATUSES.map((s) => ({label: s.label, class: 'num'})), {label: 'Delivery rate', class: 'num'}];
  const rows = Object.entries(by).map(([ch, v]) => {
    const f = v.deliveredCount + v.failedCount + v.unconfirmedCount;
    return row(columns, [CHANNEL_LABEL[ch] || ch, num(v.messages), ...STATUSES.map((s) => num(v[s.key])), f ? pct((v.deliveredCount / f) * 100) : '–'], {dataset: {channel: ch}});
  });
  replace(ctx.main, pageHeader('Overview'),
    h('p', {class: 'muted', id: 'overview-scope'}, `Campaigns created today: ${num(cs.length)}. Counts are those of their messages so far. `,
      'Direct sends are not counted: the campaign list leaves them out.'),
    h('dl', {class: 'counters', id: 'overview-counters'},
      counter('Messages today', num(total.messages), 'ov-total'),
      counter('Delivered', num(total.deliveredCount), 'ov-delivered', total.fallback ? `${num(total.fallback)} by SMS fallback` : null, 'good'),
      counter('Failed', num(total.failedCount), 'ov-failed', null, total.failedCount ? 'bad' : null),
      counter('Pending', num(total.pendingCount), 'ov-pending'),
      counter('Delivery rate', rate === null ? '–' : pct(rate), 'ov-rate', 'of the messages with a final status')),
    h('section', {class: 'card', id: 'overview-channels', 'aria-labelledby': 'ov-channels-title'}, h('h2', {id: 'ov-channels-title'}, 'By channel'),
      rows.length ? table(columns, rows, {id: 'overview-table', caption: 'Today’s messages by channel'}) : emptyState('No messages today', 'Campaigns created today are counted here.')),
    h('section', {class: 'card', id: 'overview-failures', 'aria-labelledby': 'ov-failures-title'}, h('h2', {id: 'ov-failures-title'}, 'Failures by reason'),
      frows.length ? table(fcolumns, frows, {id: 'failures-table', caption: 'Today’s failed messages by reason'}) : emptyState('No failed messages today', null),
      failures.read < total.failedCount ? h('p', {class: 'muted small', id: 'failures-note'}, `Counted over ${num(failures.read)} of ${num(total.failedCount)} failed messages.`) : null));
}

async function operatorOverview(ctx) {
  const companies = await get('/admin/v1/companies', {query: {pageSize: 1}, signal: ctx.signal}).catch((err) => { if (isUnavailable(err)) return null; throw err; });
  let conns = null;
  try {
    conns = (await get('/admin/v1/smpp-connectors', {signal: ctx.signal})).connectors || [];
  } catch (err) {
    if (!isUnavailable(err)) throw err;
  }
  const box = h('section', {class: 'card', id: 'overview-connectors', 'aria-labelledby': 'ov-conn-title'});
  const columns = [{label: 'Connector'}, {label: 'State'}, {label: 'Binds up', class: 'num'}, {label: 'Window in use', class: 'num'},
    {label: 'Throughput', class: 'num'}, {label: 'Submits', class: 'num'}, {label: 'Errors', class: 'num'}];
  const counters = h('dl', {class: 'counters', id: 'overview-counters'});
  const draw = (cs) => {
    let rate = 0;
    let up = 0;
    for (const c of cs) {
      if (c.state) rate += c.state.submitsPerSecond || 0;
      if (c.state && c.state.healthy) up++;
    }
    replace(counters,
      companies ? counter('Companies', num(companies.totalCount), 'ov-companies') : null,
      counter('Connectors healthy', `${num(up)} / ${num(cs.length)}`, 'ov-healthy', null, up < cs.length ? 'bad' : 'good'),
      counter('Submits a second', rate.toFixed(1), 'ov-throughput'));
    replace(box, h('h2', {id: 'ov-conn-title'}, 'Connectors'),
      cs.length ? table(columns, cs.map((c) => {
        const st = c.state;
        return row(columns, [h('a', {href: '#/operator/connectors'}, c.name), stateBadge(st), st ? `${num(st.bindsUp)} / ${num(st.binds)}` : '–',
          st ? num(st.windowInUse) : '–', st ? `${(st.submitsPerSecond || 0).toFixed(1)}/s` : '–', st ? num(st.submits) : '–', st ? num(st.errors) : '–'], {dataset: {connector: c.name}});
      }), {id: 'overview-connectors-table', caption: 'Throughput by connector'}) : emptyState('No connectors', null));
  };
  replace(ctx.main, pageHeader('Overview'), counters, conns ? box : notice('muted', 'This server has no SMPP connectors of its own.'),
    notice('muted', 'Messages by status, channel and failure reason across companies: the admin API has no aggregate of them yet. Each company sees its own on its overview.'));
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
