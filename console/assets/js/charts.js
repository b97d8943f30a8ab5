// Hand-written SVG charts, drawn at the width of their container and
// drawn again when it changes. Each chart comes with a data table for
// screen readers and for those who want the numbers.

import {h, s, replace} from './dom.js';
import {num, pct, time, duration} from './format.js';

// responsive calls draw(width) now and whenever el's width changes.
function responsive(el, draw) {
  let last = 0;
  const run = () => {
    const w = Math.floor(el.clientWidth || 600);
    if (w === last) return;
    last = w;
    draw(w);
  };
  if (typeof ResizeObserver !== 'undefined') new ResizeObserver(run).observe(el);
  requestAnimationFrame(run);
  run();
}

// niceScale gives the axis of counts up to v: a whole step of 1, 2 or 5
// times a power of ten, and the top, at most about four steps.
function niceScale(v) {
  const raw = Math.max(1, v) / 4;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  let step = 10 * p;
  for (const m of [1, 2, 5]) {
    if (m * p >= raw) {
      step = m * p;
      break;
    }
  }
  step = Math.max(1, Math.round(step));
  return {step, max: step * Math.max(1, Math.ceil(v / step))};
}

const BUCKETS = [100, 200, 500, 1e3, 2e3, 5e3, 10e3, 15e3, 30e3, 60e3, 120e3, 300e3, 600e3, 900e3, 1800e3, 3600e3, 7200e3, 10800e3, 21600e3, 43200e3, 86400e3, 7 * 86400e3];

// bucketize groups events {t: ms, series} into at most maxBuckets
// buckets of a round size, from the time from (the campaign's start) or
// the first event.
export function bucketize(events, seriesNames, from, maxBuckets = 40) {
  if (!events.length) return {buckets: [], size: 0};
  let min = typeof from === 'number' && isFinite(from) ? from : Infinity;
  let max = -Infinity;
  for (const e of events) {
    if (e.t < min) min = e.t;
    if (e.t > max) max = e.t;
  }
  const range = Math.max(1, max - min);
  let size = BUCKETS[BUCKETS.length - 1];
  for (const b of BUCKETS) {
    if (range / b < maxBuckets) {
      size = b;
      break;
    }
  }
  const start = Math.floor(min / size) * size;
  const n = Math.floor((max - start) / size) + 1;
  const buckets = [];
  for (let i = 0; i < n; i++) {
    const b = {t: start + i * size};
    for (const name of seriesNames) b[name] = 0;
    buckets.push(b);
  }
  for (const e of events) {
    const i = Math.floor((e.t - start) / size);
    buckets[i][e.series] += 1;
  }
  return {buckets, size};
}

// timeChart draws stacked bars per time bucket. series: [{key, label,
// class}].
export function timeChart({buckets, size, series, title, unit = 'messages'}) {
  const totals = {};
  for (const se of series) totals[se.key] = buckets.reduce((a, b) => a + b[se.key], 0);
  const svgWrap = h('div', {class: 'chart-svg'});
  const legend = h('ul', {class: 'legend', 'aria-hidden': 'true'}, series.map((se) => h('li', null, h('span', {class: 'swatch ' + se.class}), se.label)));
  const tableEl = h('details', {class: 'chart-data'},
    h('summary', null, 'Show the numbers'),
    h('div', {class: 'table-wrap'}, h('table', {class: 'table'},
      h('caption', {class: 'sr-only'}, title),
      h('thead', null, h('tr', null, h('th', {scope: 'col'}, `From (${duration(size)} each)`), series.map((se) => h('th', {scope: 'col'}, se.label)))),
      h('tbody', null, buckets.filter((b) => series.some((se) => b[se.key] > 0)).map((b) => h('tr', null,
        h('th', {scope: 'row'}, time(new Date(b.t), size < 1000)), series.map((se) => h('td', null, num(b[se.key])))))),
      h('tfoot', null, h('tr', null, h('th', {scope: 'row'}, 'Total'), series.map((se) => h('td', {dataset: {series: se.key}}, num(totals[se.key]))))))));
  const fig = h('figure', {class: 'chart', 'aria-label': title, dataset: {totals: JSON.stringify(totals)}}, legend, svgWrap, tableEl);
  const scale = niceScale(Math.max(1, ...buckets.map((b) => series.reduce((a, se) => a + b[se.key], 0))));
  const maxV = scale.max;
  responsive(svgWrap, (width) => {
    const height = width < 500 ? 200 : 260;
    const m = {top: 12, right: 12, bottom: 30, left: 44};
    const iw = Math.max(10, width - m.left - m.right);
    const ih = height - m.top - m.bottom;
    const n = Math.max(buckets.length, 1);
    const slot = iw / n;
    const bw = Math.max(2, Math.min(48, slot * 0.75));
    const g = s('g', {transform: `translate(${m.left},${m.top})`});
    for (let v = 0; v <= maxV; v += scale.step) {
      const y = ih - (v / maxV) * ih;
      g.appendChild(s('line', {x1: 0, x2: iw, y1: y, y2: y, class: 'grid'}));
      g.appendChild(s('text', {x: -8, y: y + 4, 'text-anchor': 'end', class: 'axis'}, num(v)));
    }
    buckets.forEach((b, i) => {
      let y = ih;
      const x = i * slot + (slot - bw) / 2;
      for (const se of series) {
        const v = b[se.key];
        if (!v) continue;
        const bh = (v / maxV) * ih;
        y -= bh;
        g.appendChild(s('rect', {x: x.toFixed(1), y: y.toFixed(1), width: bw.toFixed(1), height: Math.max(1, bh).toFixed(1), class: 'bar ' + se.class, rx: 2},
          s('title', null, `${time(new Date(b.t), size < 1000)}: ${num(v)} ${se.label.toLowerCase()}`)));
      }
    });
    // About six time labels along the axis.
    const every = Math.max(1, Math.ceil(n / Math.max(2, Math.floor(iw / 90))));
    buckets.forEach((b, i) => {
      if (i % every) return;
      g.appendChild(s('text', {x: (i * slot + slot / 2).toFixed(1), y: ih + 18, 'text-anchor': 'middle', class: 'axis'}, time(new Date(b.t), size < 1000)));
    });
    g.appendChild(s('line', {x1: 0, x2: iw, y1: ih, y2: ih, class: 'baseline'}));
    const svg = s('svg', {width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `${title}: ${unit} per ${duration(size)}`}, g);
    replace(svgWrap, svg);
  });
  return fig;
}

// barChart draws horizontal bars, one per item {label, value, note}.
export function barChart({items, title, valueLabel = (v) => num(v)}) {
  const svgWrap = h('div', {class: 'chart-svg'});
  const fig = h('figure', {class: 'chart', 'aria-label': title}, svgWrap,
    h('details', {class: 'chart-data'}, h('summary', null, 'Show the numbers'),
      h('div', {class: 'table-wrap'}, h('table', {class: 'table'}, h('caption', {class: 'sr-only'}, title),
        h('thead', null, h('tr', null, h('th', {scope: 'col'}, 'Option'), h('th', {scope: 'col'}, 'Answers'), h('th', {scope: 'col'}, 'Share'))),
        h('tbody', null, items.map((it) => h('tr', null, h('th', {scope: 'row'}, it.label), h('td', null, num(it.value)), h('td', null, it.note || '')))))))) ;
  const maxV = Math.max(1, ...items.map((i) => i.value));
  responsive(svgWrap, (width) => {
    const rowH = 52;
    const height = items.length * rowH + 8;
    const labelRoom = 0;
    const iw = Math.max(10, width - 8 - labelRoom);
    const g = s('g', {transform: 'translate(4,4)'});
    items.forEach((it, i) => {
      const y = i * rowH;
      const w = (it.value / maxV) * iw;
      g.appendChild(s('text', {x: 0, y: y + 15, class: 'bar-label'}, it.label));
      g.appendChild(s('text', {x: iw, y: y + 15, 'text-anchor': 'end', class: 'bar-value'}, valueLabel(it.value) + (it.note ? ' · ' + it.note : '')));
      g.appendChild(s('rect', {x: 0, y: y + 22, width: iw, height: 18, rx: 4, class: 'bar-track'}));
      g.appendChild(s('rect', {x: 0, y: y + 22, width: Math.max(it.value ? 3 : 0, w).toFixed(1), height: 18, rx: 4, class: 'bar series-' + (i % 6)},
        s('title', null, `${it.label}: ${valueLabel(it.value)}${it.note ? ' (' + it.note + ')' : ''}`)));
    });
    replace(svgWrap, s('svg', {width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': title + ': ' + items.map((it) => `${it.label} ${valueLabel(it.value)}`).join(', ')}, g));
  });
  return fig;
}

export {pct};
