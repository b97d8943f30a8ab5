// The company's campaigns, newest first, with live progress: while any
// campaign of the page is Queuing or InProgress the page asks again every
// two seconds and moves the bars.

import {h, replace} from '../dom.js';
import {get} from '../api.js';
import {num, dateTime, CHANNEL_LABEL, campaignStatus} from '../format.js';
import {campaignBadge, pageHeader, emptyState, pager, progress, campaignProgress, table, row, keepPolling} from '../ui.js';

const LIVE = new Set(['Queuing', 'InProgress']);
const STATUSES = ['Queuing', 'Ready', 'InProgress', 'Paused', 'Completed', 'Failed'];
const COLUMNS = [
  {label: 'Campaign'}, {label: 'Status'}, {label: 'Progress', class: 'col-progress'},
  {label: 'Delivered', class: 'num'}, {label: 'Failed', class: 'num'}, {label: 'Created'},
];

function hrefFor(page, status) {
  const q = new URLSearchParams();
  if (page > 1) q.set('page', page);
  if (status) q.set('status', status);
  const qs = q.toString();
  return '#/campaigns' + (qs ? '?' + qs : '');
}

export async function render(ctx) {
  const page = Math.max(1, parseInt(ctx.query.get('page') || '1', 10) || 1);
  const status = STATUSES.includes(ctx.query.get('status')) ? ctx.query.get('status') : '';
  const filter = h('select', {id: 'status-filter', name: 'status'},
    h('option', {value: ''}, 'All statuses'),
    STATUSES.map((st) => h('option', {value: st, selected: st === status}, st === 'InProgress' ? 'In progress' : st)));
  filter.addEventListener('change', () => ctx.navigate(hrefFor(1, filter.value).slice(1)));
  const live = h('p', {class: 'live-note muted', 'aria-live': 'polite', id: 'live-note'});
  const body = h('div', {id: 'campaigns'});
  replace(ctx.main,
    pageHeader('Campaigns', h('a', {class: 'btn btn-primary', href: '#/campaigns/new'}, 'New bulk campaign')),
    h('div', {class: 'toolbar'}, h('label', {for: 'status-filter'}, 'Status'), filter, live),
    body);

  let rows = new Map(); // campaignId -> update
  let shownIds = null;
  const tick = async () => {
    const list = await get('/api/v1/campaigns', {query: {page, pageSize: 20, status}, signal: ctx.signal});
    if (ctx.signal.aborted) return false;
    const ids = list.campaigns.map((c) => c.campaignId).join(',');
    if (ids !== shownIds) {
      shownIds = ids;
      rows = new Map();
      if (!list.campaigns.length) {
        replace(body, status
          ? emptyState('No campaign in this status', 'Choose another status, or all of them.')
          : emptyState('No campaigns yet', 'A bulk campaign sends a template to a list of recipients from a CSV file. Direct sends are not listed here.',
            h('a', {class: 'btn btn-primary', href: '#/campaigns/new'}, 'New bulk campaign'),
            h('a', {class: 'btn btn-secondary', href: '#/templates/new/sms'}, 'New SMS template')));
      } else {
        const trs = list.campaigns.map((c) => {
          const bar = progress();
          const statusCell = h('span');
          const delivered = h('span');
          const failed = h('span');
          const tr = row(COLUMNS, [
            h('div', null, h('a', {href: '#/campaigns/' + encodeURIComponent(c.campaignId), class: 'strong'}, c.name),
              h('div', {class: 'muted small'}, CHANNEL_LABEL[c.channel] || c.channel, ' · ', c.sendingMode)),
            statusCell, bar.el, delivered, failed, dateTime(c.createdAt)], {dataset: {campaignId: c.campaignId}});
          const update = (x) => {
            replace(statusCell, campaignBadge(x));
            const p = campaignProgress(x);
            bar.set(p.done, p.total, p.label, p.kind, p.parts);
            replace(delivered, num(x.deliveredCount));
            replace(failed, num(x.failedCount));
            tr.dataset.status = x.status;
            tr.dataset.shownStatus = campaignStatus(x);
          };
          update(c);
          rows.set(c.campaignId, update);
          return tr;
        });
        replace(body, table(COLUMNS, trs, {id: 'campaigns-table', caption: 'Campaigns'}), pager(list, (p) => hrefFor(p, status)));
      }
    } else {
      for (const c of list.campaigns) rows.get(c.campaignId)?.(c);
    }
    const anyLive = list.campaigns.some((c) => LIVE.has(c.status));
    replace(live, anyLive ? 'Updating every 2 seconds while campaigns are being prepared or sent.' : '');
    return anyLive;
  };
  if (await tick()) {
    keepPolling(ctx.signal, 2000, tick, (err) => {
      if (err) replace(live, `Could not refresh (${err.message}); trying again.`);
    });
  }
}
