// Small DOM helpers. Every element is built with createElement and text
// nodes: no HTML string is ever parsed, so no value from the server or
// from a file can become markup.

const SVG_NS = 'http://www.w3.org/2000/svg';

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false || c === true) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

function setProps(el, props, isSVG) {
  if (!props) return;
  for (const [k, v] of Object.entries(props)) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2).toLowerCase(), v);
    } else if (k === 'class') {
      if (isSVG) el.setAttribute('class', v);
      else el.className = Array.isArray(v) ? v.filter(Boolean).join(' ') : v;
    } else if (k === 'dataset') {
      for (const [dk, dv] of Object.entries(v)) if (dv !== undefined && dv !== null) el.dataset[dk] = dv;
    } else if (!isSVG && (k === 'value' || k === 'checked' || k === 'disabled' || k === 'selected' || k === 'hidden' || k === 'multiple')) {
      el[k] = v;
    } else if (k === 'for') {
      el.setAttribute('for', v);
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
}

// h builds an HTML element: h('a', {href: '#/x', class: 'link'}, 'text', child).
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  setProps(el, props, false);
  append(el, children);
  return el;
}

// s builds an SVG element.
export function s(tag, props, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setProps(el, props, true);
  append(el, children);
  return el;
}

// replace empties el and appends children.
export function replace(el, ...children) {
  while (el.firstChild) el.removeChild(el.firstChild);
  append(el, children);
  return el;
}

let uid = 0;
// nextId returns a document-unique id with the given prefix.
export function nextId(prefix = 'id') {
  uid += 1;
  return `${prefix}-${uid}`;
}

// sleep waits ms milliseconds, or until signal aborts (then it rejects).
export function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal && signal.aborted) { reject(signal.reason); return; }
    const t = setTimeout(() => { if (signal) signal.removeEventListener('abort', onAbort); resolve(); }, ms);
    function onAbort() { clearTimeout(t); reject(signal.reason); }
    if (signal) signal.addEventListener('abort', onAbort, {once: true});
  });
}

// debounce calls fn ms after the last call.
export function debounce(fn, ms) {
  let t = null;
  const d = (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
  d.cancel = () => clearTimeout(t);
  return d;
}

// icon returns a small inline SVG icon by name (decorative).
export function icon(name, size = 16) {
  const paths = {
    play: 'M8 5v14l11-7z',
    file: 'M6 2h8l6 6v14H6z M14 2v6h6',
    image: 'M3 5h18v14H3z M3 16l5-5 4 4 3-3 6 6 M15.5 9.5a1.5 1.5 0 1 0 0.01 0',
    link: 'M10 14a4 4 0 0 0 5.7 0l3-3a4 4 0 0 0-5.7-5.7l-1 1 M14 10a4 4 0 0 0-5.7 0l-3 3a4 4 0 0 0 5.7 5.7l1-1',
    refresh: 'M20 11a8 8 0 1 0-2.3 5.7 M20 4v7h-7',
  };
  return s('svg', {width: size, height: size, viewBox: '0 0 24 24', 'aria-hidden': 'true', focusable: 'false', class: 'icon'},
    s('path', {d: paths[name] || '', fill: name === 'play' ? 'currentColor' : 'none', stroke: 'currentColor', 'stroke-width': '2', 'stroke-linecap': 'round', 'stroke-linejoin': 'round'}));
}
