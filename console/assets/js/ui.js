// Shared pieces of the screens: badges, progress bars, empty and loading
// states, notices, pagination, a confirmation dialog and toasts.

import {h, replace, nextId} from './dom.js';
import {STATUS_LABEL, num, pct, campaignStatus} from './format.js';

export function badge(status) {
  return h('span', {class: 'badge badge-' + String(status).toLowerCase(), dataset: {status}}, STATUS_LABEL[status] || status);
}

// campaignBadge is a campaign's badge: Cancelled for a cancelled one (the
// API answers it Completed, with cancelledAt).
export function campaignBadge(c) {
  return badge(campaignStatus(c));
}

export function pageHeader(title, ...actions) {
  return h('div', {class: 'page-header'},
    h('h1', {tabindex: '-1', id: 'page-title'}, title),
    actions.length ? h('div', {class: 'page-actions'}, actions) : null);
}

export function loading(text = 'Loading…') {
  return h('div', {class: 'loading', role: 'status'}, h('span', {class: 'spinner', 'aria-hidden': 'true'}), text);
}

export function emptyState(title, text, ...actions) {
  return h('div', {class: 'empty'},
    h('p', {class: 'empty-title'}, title),
    text ? h('p', {class: 'empty-text'}, text) : null,
    actions.length ? h('div', {class: 'empty-actions'}, actions) : null);
}

// notice is a message box: kind is info, success, warning or error.
export function notice(kind, text, ...more) {
  return h('div', {class: 'notice notice-' + kind, role: kind === 'error' ? 'alert' : 'status'}, text, more);
}

// unavailable is the state of a feature the server lacks.
export function unavailable(what, detail) {
  return h('div', {class: 'notice notice-muted unavailable', dataset: {state: 'unavailable'}},
    h('strong', null, `${what}: not available on this server.`), ' ', detail || 'This version of Herald does not offer it yet.');
}

// progress returns a bar and its setter: set(done, total, label, kind,
// parts). parts, when given, split the bar into segments [{key, label,
// value}] (each a class progress-part-<key>), in place of one fill.
export function progress() {
  const fill = h('div', {class: 'progress-fill'});
  const bar = h('div', {class: 'progress', role: 'progressbar', 'aria-valuemin': '0', 'aria-valuemax': '100'}, fill);
  const text = h('span', {class: 'progress-text'});
  const el = h('div', {class: 'progress-wrap'}, bar, text);
  return {
    el,
    set(done, total, label, kind, parts) {
      const p = total > 0 ? Math.min(100, (done / total) * 100) : 0;
      bar.className = 'progress' + (kind ? ' progress-' + kind : '');
      bar.setAttribute('aria-valuenow', p.toFixed(0));
      if (parts) {
        const shown = parts.filter((x) => x.value > 0);
        replace(bar, shown.map((x) => {
          const seg = h('div', {class: 'progress-part progress-part-' + x.key, dataset: {part: x.key, value: String(x.value)}, title: `${x.label}: ${num(x.value)}`});
          seg.style.width = (total > 0 ? Math.min(100, (x.value / total) * 100) : 0).toFixed(2) + '%'; // CSSOM: no inline style attribute under the CSP
          return seg;
        }));
        bar.setAttribute('aria-label', `${label || 'Progress'}: ` + shown.map((x) => `${num(x.value)} ${x.label.toLowerCase()}`).join(', '));
      } else {
        if (fill.parentNode !== bar) replace(bar, fill);
        fill.style.width = p.toFixed(2) + '%';
        bar.setAttribute('aria-label', label || 'Progress');
      }
      replace(text, `${num(done)} / ${num(total)}`, total > 0 ? ` · ${pct(p, 0)}` : '');
    },
  };
}

// campaignProgress is what a progress bar shows of a campaign: messages
// written while it is Queuing, final messages afterwards, in parts:
// delivered, unconfirmed and failed. A cancelled campaign's bar shows its
// cancelled messages apart: the API counts them in failedCount; cancelled,
// when known (from the campaign's export), splits them out, else the part
// not delivered is shown as "failed or cancelled".
export function campaignProgress(c, cancelled) {
  if (c.status === 'Queuing') return {done: c.preparedCount || 0, total: c.totalMessages || 0, label: 'Messages prepared', kind: 'preparing'};
  const done = (c.deliveredCount || 0) + (c.failedCount || 0) + (c.unconfirmedCount || 0);
  const total = c.totalMessages || 0;
  const parts = [{key: 'delivered', label: 'Delivered', value: c.deliveredCount || 0}, {key: 'unconfirmed', label: 'Unconfirmed', value: c.unconfirmedCount || 0}];
  if (campaignStatus(c) === 'Cancelled') {
    if (typeof cancelled === 'number') {
      parts.push({key: 'failed', label: 'Failed', value: Math.max(0, (c.failedCount || 0) - cancelled)}, {key: 'cancelled', label: 'Cancelled', value: cancelled});
    } else {
      parts.push({key: 'cancelled', label: 'Failed or cancelled', value: c.failedCount || 0});
    }
    return {done, total, label: 'Messages of the cancelled campaign', kind: 'cancelled', parts};
  }
  parts.push({key: 'failed', label: 'Failed', value: c.failedCount || 0});
  return {done, total, label: 'Messages delivered or failed', kind: c.status === 'Failed' ? 'failed' : c.status === 'Completed' ? 'done' : '', parts};
}

// pager renders Previous / Next links for a list answer.
export function pager(list, hrefFor) {
  const totalPages = list.totalPages || 0;
  if (totalPages <= 1) return null;
  const page = list.page || 1;
  return h('nav', {class: 'pager', 'aria-label': 'Pages'},
    page > 1 ? h('a', {class: 'btn btn-secondary', href: hrefFor(page - 1), rel: 'prev'}, '← Previous') : h('span', {class: 'btn btn-secondary', 'aria-disabled': 'true'}, '← Previous'),
    h('span', {class: 'pager-info'}, `Page ${page} of ${totalPages} · ${num(list.totalCount)} in all`),
    page < totalPages ? h('a', {class: 'btn btn-secondary', href: hrefFor(page + 1), rel: 'next'}, 'Next →') : h('span', {class: 'btn btn-secondary', 'aria-disabled': 'true'}, 'Next →'));
}

// confirmDialog asks a question in a modal <dialog>; it resolves true
// when the person confirms.
export function confirmDialog({title, text, confirm = 'Confirm', cancel = 'Cancel', danger = false}) {
  return new Promise((resolve) => {
    const titleId = nextId('dlg');
    const ok = h('button', {type: 'button', class: danger ? 'btn btn-danger' : 'btn btn-primary', id: 'confirm-ok'}, confirm);
    const no = h('button', {type: 'button', class: 'btn btn-secondary', id: 'confirm-cancel'}, cancel);
    const dlg = h('dialog', {class: 'dialog', 'aria-labelledby': titleId},
      h('h2', {id: titleId}, title),
      text ? h('p', null, text) : null,
      h('div', {class: 'dialog-actions'}, no, ok));
    let answered = false;
    const done = (v) => {
      if (answered) return;
      answered = true;
      dlg.close();
      dlg.remove();
      resolve(v);
    };
    ok.addEventListener('click', () => done(true));
    no.addEventListener('click', () => done(false));
    dlg.addEventListener('cancel', (e) => { e.preventDefault(); done(false); });
    document.body.appendChild(dlg);
    dlg.showModal();
    no.focus();
  });
}

// toast shows a short message in the corner, read out by screen readers.
export function toast(text, kind = 'success') {
  const region = document.getElementById('toasts');
  if (!region) return;
  const t = h('div', {class: 'toast toast-' + kind}, text);
  region.appendChild(t);
  setTimeout(() => t.classList.add('toast-out'), 4500);
  setTimeout(() => t.remove(), 5000);
}

// busy disables button while fn runs, with a text saying so.
export async function busy(button, text, fn) {
  const old = button.textContent;
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  button.textContent = text;
  try {
    return await fn();
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
    button.textContent = old;
  }
}

// copyButton copies text to the clipboard.
export function copyButton(getText, label = 'Copy') {
  const b = h('button', {type: 'button', class: 'btn btn-secondary btn-small'}, label);
  b.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(getText());
      b.textContent = 'Copied';
    } catch (_) {
      b.textContent = 'Select and copy';
    }
    setTimeout(() => { b.textContent = label; }, 2000);
  });
  return b;
}

// errorState shows an error that stopped a whole page.
export function errorState(err, retry) {
  return h('div', {class: 'notice notice-error', role: 'alert'},
    h('strong', null, err && err.title ? err.title + ': ' : 'Something went wrong: '),
    (err && err.message) || String(err),
    retry ? h('div', {class: 'notice-actions'}, h('button', {type: 'button', class: 'btn btn-secondary btn-small', onclick: retry}, 'Try again')) : null);
}

// table builds a table whose cells carry their column's name for the
// narrow layout. columns: [{label, class}], rows: arrays of cells.
export function table(columns, rows, opts = {}) {
  return h('div', {class: 'table-wrap'},
    h('table', {class: 'table table-stack' + (opts.class ? ' ' + opts.class : ''), id: opts.id},
      opts.caption ? h('caption', {class: 'sr-only'}, opts.caption) : null,
      h('thead', null, h('tr', null, columns.map((c) => h('th', {scope: 'col', class: c.class}, c.label)))),
      h('tbody', null, rows)));
}

export function row(columns, cells, props) {
  return h('tr', props || null, cells.map((c, i) => h('td', {'data-label': columns[i].label, class: columns[i].class}, c)));
}

// keepPolling calls tick every ms milliseconds in the background until it
// returns false or signal aborts; a failed tick is reported to onError and
// tried again later, waiting longer each time.
export function keepPolling(signal, ms, tick, onError) {
  (async () => {
    let failures = 0;
    for (;;) {
      try {
        await sleepFor(failures ? Math.min(15000, ms * (failures + 1)) : ms, signal);
      } catch (_) {
        return;
      }
      try {
        const more = await tick();
        failures = 0;
        if (onError) onError(null);
        if (more === false) return;
      } catch (err) {
        if (signal.aborted || (err && err.name === 'AbortError')) return;
        failures++;
        if (onError) onError(err);
      }
    }
  })();
}

function sleepFor(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal.aborted) { reject(new Error('aborted')); return; }
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(t); reject(new Error('aborted')); }, {once: true});
  });
}
