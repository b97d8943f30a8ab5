// One campaign: its counters, a chart of deliveries over time (built from
// the CSV export of its messages), the buttons that move it (start,
// pause, resume, cancel) and, for a survey, the answers per option.

import {h, replace, icon} from '../dom.js';
import {get, post, enc, ApiError} from '../api.js';
import {num, pct, dateTime, ago, CHANNEL_LABEL, STATUS_LABEL, campaignStatus} from '../format.js';
import {badge, campaignBadge, pageHeader, progress, campaignProgress, notice, confirmDialog, toast, busy, keepPolling, loading, emptyState, table, row, errorState} from '../ui.js';
import {parseCSV} from '../csv.js';
import {bucketize, timeChart, barChart} from '../charts.js';

const LIVE = new Set(['Queuing', 'InProgress']);
const CHART_AUTO_LIMIT = 20000;

function counter(label, value, id, note) {
  return h('div', {class: 'counter', id}, h('dt', null, label), h('dd', null, value, note ? h('span', {class: 'counter-note'}, note) : null));
}

// counters shows the campaign's counters as the API answers them;
// cancelled, when known, says how many of the failed were cancelled.
function counters(c, cancelled) {
  const items = [
    counter('Messages', num(c.totalMessages), 'count-total'),
    counter('Delivered', num(c.deliveredCount), 'count-delivered', c.channel === 'Chat' ? 'by chat' : null),
    counter('Failed', num(c.failedCount), 'count-failed', cancelled ? `${num(cancelled)} cancelled` : null),
    counter('Pending', num(c.pendingCount), 'count-pending', c.waitingForWindowCount ? `${num(c.waitingForWindowCount)} waiting for the send window` : null),
    counter('Unconfirmed', num(c.unconfirmedCount), 'count-unconfirmed', 'sent, no receipt'),
  ];
  if (c.channel === 'Chat') {
    items.push(
      counter('Seen', num(c.seenCount), 'count-seen'),
      counter('SMS fallbacks', num(c.smsFallbackCount), 'count-fallback', `${num(c.smsFallbackDeliveredCount)} delivered · ${num(c.smsFallbackFailedCount)} failed`),
      counter('Overall delivery rate', pct(c.overallDeliveryRate, 2), 'count-rate', 'chat or SMS fallback'));
  } else if (c.totalMessages) {
    const rate = (c.deliveredCount / c.totalMessages) * 100;
    items.push(counter('Delivery rate', pct(rate, 2), 'count-rate'));
  }
  return h('dl', {class: 'counters'}, items);
}

function meta(c) {
  const items = [
    ['Channel', CHANNEL_LABEL[c.channel] || c.channel],
    ['Sending', c.sendingMode],
    ['Template', c.templateId ? h('a', {href: '#/templates/' + enc(c.templateId)}, c.templateName || c.templateId) : 'none (direct send)'],
    ['Created', dateTime(c.createdAt)],
  ];
  if (c.scheduledAt) items.push(['Scheduled for', dateTime(c.scheduledAt)]);
  if (c.startedAt) items.push(['Started', dateTime(c.startedAt)]);
  if (c.completedAt) items.push(['Completed', dateTime(c.completedAt)]);
  if (c.cancelledAt) items.push(['Cancelled', dateTime(c.cancelledAt)]);
  if (c.sendWindow) items.push(['Send window', `${c.sendWindow.from}–${c.sendWindow.to}${c.sendWindow.timeZone ? ' ' + c.sendWindow.timeZone : ' recipient time'}`]);
  if (c.validityPeriod) items.push(['Validity', `${num(c.validityPeriod)} s`]);
  return h('dl', {class: 'meta'}, items.map(([k, v]) => h('div', null, h('dt', null, k), h('dd', null, v))));
}

// CHART_SERIES are the series of the delivery chart, counted as the
// counters above it count: a campaign's own messages (delivered, failed,
// cancelled: the last two together are failedCount) apart from the SMS
// sent in place of chat messages (smsFallbackDeliveredCount and
// smsFallbackFailedCount).
const CHART_SERIES = [
  {key: 'delivered', label: 'Delivered', class: 'series-delivered'},
  {key: 'failed', label: 'Failed', class: 'series-failed'},
  {key: 'cancelled', label: 'Cancelled', class: 'series-cancelled'},
  {key: 'fallbackDelivered', label: 'SMS fallback delivered', class: 'series-fallback-delivered'},
  {key: 'fallbackFailed', label: 'SMS fallback failed', class: 'series-fallback-failed'},
];

// chartEvents reads the CSV export into delivery events, and counts the
// cancelled messages (failed with details CANCELLED).
function chartEvents(text) {
  const {rows} = parseCSV(text, ',');
  const out = {events: [], cancelled: 0};
  if (rows.length < 2) return out;
  const head = rows[0];
  const col = (n) => head.indexOf(n);
  const iStatus = col('status');
  const iDetails = col('details');
  const iFallback = col('fallbackFor');
  const iDelivered = col('deliveredAt');
  const iUpdated = col('updatedAt');
  for (let r = 1; r < rows.length; r++) {
    const x = rows[r];
    const fallback = iFallback >= 0 && !!x[iFallback];
    const cancelled = x[iStatus] === 'Failed' && x[iDetails] === 'CANCELLED';
    if (cancelled && !fallback) out.cancelled++;
    const d = x[iDelivered];
    if (d) {
      const t = Date.parse(d);
      if (!isNaN(t)) out.events.push({t, series: fallback ? 'fallbackDelivered' : 'delivered'});
    } else if (x[iStatus] === 'Failed' && x[iUpdated]) {
      const t = Date.parse(x[iUpdated]);
      if (!isNaN(t)) out.events.push({t, series: fallback ? 'fallbackFailed' : cancelled ? 'cancelled' : 'failed'});
    }
  }
  return out;
}

async function downloadCSV(c, button) {
  await busy(button, 'Preparing…', async () => {
    try {
      const text = await get(`/api/v1/campaigns/${enc(c.campaignId)}/messages.csv`, {text: true});
      const url = URL.createObjectURL(new Blob([text], {type: 'text/csv'}));
      const a = h('a', {href: url, download: `campaign-${c.campaignId}.csv`, hidden: true});
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (err) {
      toast('The export failed: ' + err.message, 'error');
    }
  });
}

export async function render(ctx) {
  const id = ctx.params.id;
  let c = await get(`/api/v1/campaigns/${enc(id)}`, {signal: ctx.signal});
  ctx.setTitle(c.name);

  const title = h('h1', {tabindex: '-1', id: 'page-title'}, c.name);
  const statusEl = h('span', {id: 'campaign-status'});
  const actions = h('div', {class: 'page-actions', id: 'campaign-actions'});
  const stateNote = h('div', {id: 'campaign-note'});
  const bar = progress();
  const countersEl = h('div');
  const metaEl = h('div');
  const liveNote = h('p', {class: 'muted small', 'aria-live': 'polite', id: 'live-note'});
  const chartBody = h('div', {id: 'delivery-chart'}, loading('Loading the chart…'));
  const chartRefresh = h('button', {type: 'button', class: 'btn btn-ghost btn-small'}, icon('refresh'), ' Refresh');
  const surveyCard = h('section', {class: 'card', id: 'survey-card', hidden: true, 'aria-labelledby': 'survey-title'});
  const messagesBody = h('div', {id: 'campaign-messages'});
  const exportBtn = h('button', {type: 'button', class: 'btn btn-secondary btn-small'}, 'Download CSV');
  exportBtn.addEventListener('click', () => downloadCSV(c, exportBtn));

  replace(ctx.main,
    h('div', {class: 'breadcrumb'}, h('a', {href: '#/campaigns'}, '← Campaigns')),
    h('div', {class: 'page-header'}, h('div', {class: 'title-row'}, title, statusEl), actions),
    stateNote,
    h('section', {class: 'card', 'aria-label': 'Progress'}, bar.el, liveNote, countersEl),
    h('div', {class: 'grid-2'},
      h('section', {class: 'card', 'aria-labelledby': 'chart-title'},
        h('div', {class: 'card-header'}, h('h2', {id: 'chart-title'}, 'Deliveries over time'), chartRefresh),
        chartBody),
      h('section', {class: 'card', 'aria-labelledby': 'details-title'}, h('h2', {id: 'details-title'}, 'Details'), metaEl)),
    surveyCard,
    h('section', {class: 'card', 'aria-labelledby': 'messages-title'},
      h('div', {class: 'card-header'}, h('h2', {id: 'messages-title'}, 'Latest messages'),
        h('div', {class: 'card-actions'}, exportBtn, h('a', {class: 'btn btn-secondary btn-small', href: '#/messages?campaignId=' + enc(id)}, 'Search messages'))),
      messagesBody));

  // Chart: loaded when the final counts move, at most every 4 seconds.
  // It also counts a cancelled campaign's cancelled messages.
  let cancelledCount;
  let chartFinal = -1;
  let chartAt = 0;
  let chartLoading = false;
  const loadChart = async (force) => {
    if (chartLoading) return;
    const final = c.deliveredCount + c.failedCount + (c.smsFallbackDeliveredCount || 0) + (c.smsFallbackFailedCount || 0);
    if (!force && (final === chartFinal || Date.now() - chartAt < 4000)) return;
    if (!force && c.totalMessages > CHART_AUTO_LIMIT && chartFinal >= 0) return;
    chartLoading = true;
    chartAt = Date.now();
    try {
      const text = await get(`/api/v1/campaigns/${enc(id)}/messages.csv`, {text: true, signal: ctx.signal});
      chartFinal = final;
      const {events, cancelled} = chartEvents(text);
      if (campaignStatus(c) === 'Cancelled' && cancelled !== cancelledCount) {
        cancelledCount = cancelled;
        show();
      }
      if (!events.length) {
        replace(chartBody, emptyState('Nothing delivered yet', c.status === 'Ready' ? 'Start the campaign to send its messages.' : 'Deliveries appear here as the receipts come in.'));
      } else {
        const present = new Set(events.map((e) => e.series));
        const series = CHART_SERIES.filter((se) => se.key === 'delivered' || se.key === 'failed' || present.has(se.key));
        const {buckets, size} = bucketize(events, series.map((se) => se.key), c.startedAt ? Date.parse(c.startedAt) : undefined);
        replace(chartBody, timeChart({buckets, size, title: 'Deliveries over time', series}),
          c.channel === 'Chat' ? h('p', {class: 'muted small', id: 'chart-note'}, 'Chat messages and the SMS sent in their place are counted apart, as in the counters above.') : null);
      }
    } catch (err) {
      if (!ctx.signal.aborted) replace(chartBody, errorState(err));
    } finally {
      chartLoading = false;
    }
  };
  chartRefresh.addEventListener('click', () => loadChart(true));

  const loadMessages = async () => {
    try {
      const list = await get('/api/v1/messages', {query: {campaignId: id, pageSize: 10}, signal: ctx.signal});
      if (!list.messages.length) {
        replace(messagesBody, emptyState(c.status === 'Queuing' ? 'Preparing the messages…' : 'No messages', null));
        return;
      }
      const cols = [{label: 'Phone'}, {label: 'Status'}, {label: 'Channel'}, {label: 'Details'}, {label: 'Delivered'}];
      replace(messagesBody, table(cols, list.messages.map((m) => row(cols, [
        m.phoneNumber, badge(m.status), CHANNEL_LABEL[m.channelType] || m.channelType, m.details || '', m.deliveredAt ? dateTime(m.deliveredAt) : '–']))),
      list.totalCount > list.messages.length ? h('p', {class: 'muted small'}, `The latest ${list.messages.length} of ${num(list.totalCount)}.`) : null);
    } catch (err) {
      if (!ctx.signal.aborted) replace(messagesBody, errorState(err));
    }
  };

  // Survey: known from the template's type; a deleted template is asked
  // through the summary itself.
  let survey = false;
  const loadSurvey = async () => {
    if (!survey) return;
    try {
      const sum = await get(`/api/v1/survey-results/${enc(id)}/summary`, {signal: ctx.signal});
      renderSurvey(sum);
    } catch (err) {
      if (ctx.signal.aborted) return;
      replace(surveyCard, h('h2', {id: 'survey-title'}, 'Survey answers'), errorState(err));
    }
  };
  const renderSurvey = (sum) => {
    surveyCard.hidden = false;
    const items = (sum.optionBreakdown || []).map((o) => ({label: o.optionText, value: o.count, note: pct(o.percentage, 1)}));
    replace(surveyCard,
      h('div', {class: 'card-header'}, h('h2', {id: 'survey-title'}, 'Survey answers'),
        h('button', {type: 'button', class: 'btn btn-ghost btn-small', onclick: () => loadSurvey()}, icon('refresh'), ' Refresh')),
      h('dl', {class: 'counters counters-small'},
        counter('Answers', num(sum.totalResponses), 'survey-total'),
        counter('Surveys sent', num(sum.totalMessagesSent), 'survey-sent'),
        counter('Response rate', pct(sum.responseRate, 2), 'survey-rate')),
      sum.totalResponses ? h('div', {id: 'survey-chart'}, barChart({items, title: 'Answers per option'}))
        : emptyState('No answers yet', 'Answers appear here as people reply, in the chat app or by SMS.'));
  };
  if (c.channel === 'Chat' && c.templateId) {
    try {
      const t = await get(`/api/v1/templates/${enc(c.templateId)}`, {signal: ctx.signal});
      survey = Number(t.messageType) === 6;
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) survey = true; // try the summary
    }
    if (survey) {
      try {
        renderSurvey(await get(`/api/v1/survey-results/${enc(id)}/summary`, {signal: ctx.signal}));
      } catch (err) {
        survey = false;
      }
    }
  }

  const act = async (button, verb, path) => {
    await busy(button, verb + '…', async () => {
      try {
        await post(`/api/v1/campaigns/${enc(id)}/${path}`);
        c = await get(`/api/v1/campaigns/${enc(id)}`, {signal: ctx.signal});
        show();
        loadChart(true); // a cancel fails messages at once: the chart and the bar follow
        const shown = campaignStatus(c);
        toast(`Campaign ${STATUS_LABEL[shown] ? STATUS_LABEL[shown].toLowerCase() : shown}.`);
        startPolling();
      } catch (err) {
        if (ctx.signal.aborted) return;
        replace(stateNote, notice('error', `${verb} failed: ${err.message}`));
        try {
          c = await get(`/api/v1/campaigns/${enc(id)}`, {signal: ctx.signal});
          show();
        } catch (_) { /* keep what is shown */ }
      }
    });
  };

  const renderActions = () => {
    const btns = [];
    const mk = (label, idName, cls, fn) => {
      const b = h('button', {type: 'button', class: 'btn ' + cls, id: idName});
      b.textContent = label;
      b.addEventListener('click', () => fn(b));
      btns.push(b);
    };
    if (c.status === 'Ready') mk('Start campaign', 'action-start', 'btn-primary', (b) => act(b, 'Start', 'start'));
    if (c.status === 'InProgress') mk('Pause', 'action-pause', 'btn-secondary', (b) => act(b, 'Pause', 'pause'));
    if (c.status === 'Paused') mk('Resume', 'action-resume', 'btn-primary', (b) => act(b, 'Resume', 'resume'));
    if (['Ready', 'InProgress', 'Paused'].includes(c.status)) {
      mk('Cancel campaign', 'action-cancel', 'btn-danger-outline', async (b) => {
        const pending = c.pendingCount || 0;
        const ok = await confirmDialog({
          title: 'Cancel this campaign?',
          text: `The ${num(pending)} message${pending === 1 ? '' : 's'} not sent yet will fail with CANCELLED and never be sent. Messages already handed to a provider are not called back. This cannot be undone.`,
          confirm: 'Cancel campaign', cancel: 'Keep it', danger: true,
        });
        if (ok) await act(b, 'Cancel', 'cancel');
        else b.focus();
      });
    }
    replace(actions, btns);
  };

  const show = () => {
    replace(title, c.name);
    replace(statusEl, campaignBadge(c));
    renderActions();
    const cancelled = campaignStatus(c) === 'Cancelled' ? cancelledCount : undefined;
    const p = campaignProgress(c, cancelled);
    bar.set(p.done, p.total, p.label, p.kind, p.parts);
    replace(countersEl, counters(c, cancelled));
    replace(metaEl, meta(c));
    let note = null;
    if (c.status === 'Queuing') note = notice('info', `Preparing the messages: ${num(c.preparedCount)} of ${num(c.totalMessages)} written. You can start the campaign once it is Ready.`);
    else if (c.status === 'Ready' && c.scheduledAt) note = notice('info', `Scheduled to start ${dateTime(c.scheduledAt)}.`);
    else if (c.status === 'Ready') note = notice('info', 'Every message is written. Nothing is sent until you start the campaign.');
    else if (c.status === 'Paused') note = notice('warning', 'Paused: nothing more is sent until you resume it.');
    else if (c.status === 'Failed') note = notice('error', c.failureReason || 'The campaign failed.');
    else if (campaignStatus(c) === 'Cancelled') note = notice('info', `Cancelled ${dateTime(c.cancelledAt)}: the messages not handed to a provider by then were not sent${typeof cancelled === 'number' ? ` (${num(cancelled)})` : ''}; they count as failed, with details CANCELLED.`);
    else if (c.status === 'Completed' && c.pendingCount > 0) note = notice('info', `Every message was sent; ${num(c.pendingCount)} still wait for their delivery report.`);
    if (note) note.dataset.status = c.status;
    replace(stateNote, note);
  };
  show();
  await Promise.all([loadChart(true), loadMessages()]);

  // Poll while something moves: preparing, sending, receipts still coming
  // after completion, or survey answers in the minutes after it.
  const moving = () => LIVE.has(c.status) || (c.status === 'Ready' && !!c.scheduledAt) || (c.status === 'Completed' && c.pendingCount > 0 && Date.now() - Date.parse(c.completedAt || c.createdAt) < 10 * 60e3)
    || (survey && c.status === 'Completed' && Date.now() - Date.parse(c.completedAt || c.createdAt) < 60e3);
  let polling = false;
  let ticks = 0;
  const tick = async () => {
    const before = c.status;
    c = await get(`/api/v1/campaigns/${enc(id)}`, {signal: ctx.signal});
    show();
    ticks++;
    const more = moving();
    await loadChart(!more || before !== c.status);
    if (before !== c.status || ticks % 3 === 0 || !more) await loadMessages();
    if (survey) await loadSurvey();
    replace(liveNote, more ? `Updated ${ago(new Date().toISOString())}; refreshing every 2 seconds.` : '');
    if (!more) polling = false;
    return more;
  };
  const startPolling = () => {
    if (polling || !moving()) return;
    polling = true;
    replace(liveNote, 'Refreshing every 2 seconds.');
    keepPolling(ctx.signal, 2000, tick, (err) => {
      if (err) replace(liveNote, `Could not refresh (${err.message}); trying again.`);
    });
  };
  startPolling();
}
