// Form fields with their labels, hints and errors. A field's wrapper
// carries data-field with the JSON path the API names in
// validationErrors, so that each error is shown under its field.

import {h, nextId, replace} from './dom.js';

// field builds a labelled control. o: {label, name (JSON path), type,
// value, hint, required, options [{value, label}] for a select, rows for
// a textarea, placeholder, attrs}.
export function field(o) {
  const id = o.id || nextId('f');
  const hintId = id + '-hint';
  const errId = id + '-error';
  let input;
  const common = {id, name: o.name, required: o.required || false, 'aria-describedby': [o.hint ? hintId : '', errId].filter(Boolean).join(' '), placeholder: o.placeholder, ...(o.attrs || {})};
  if (o.type === 'select') {
    input = h('select', common, (o.options || []).map((opt) => h('option', {value: String(opt.value), selected: String(opt.value) === String(o.value ?? '')}, opt.label)));
  } else if (o.type === 'textarea') {
    input = h('textarea', {...common, rows: o.rows || 4}, );
    input.value = o.value ?? '';
  } else if (o.type === 'checkbox') {
    input = h('input', {...common, type: 'checkbox', checked: !!o.value});
  } else {
    input = h('input', {...common, type: o.type || 'text', value: o.value ?? ''});
  }
  const label = h('label', {for: id}, o.label, o.required ? h('span', {class: 'req', 'aria-hidden': 'true'}, ' *') : null, o.optional ? h('span', {class: 'optional'}, ' (optional)') : null);
  const hint = o.hint ? h('p', {class: 'hint', id: hintId}, o.hint) : null;
  const err = h('p', {class: 'field-error', id: errId, hidden: true});
  const wrap = o.type === 'checkbox'
    ? h('div', {class: 'field field-check', dataset: {field: o.name}}, input, label, hint, err)
    : h('div', {class: 'field', dataset: {field: o.name}}, label, input, hint, err);
  return {wrap, input, setError: (msg) => setFieldError(wrap, msg)};
}

function setFieldError(wrap, msg) {
  const err = wrap.querySelector(':scope > .field-error');
  const input = wrap.querySelector('input, select, textarea');
  if (!err) return;
  if (msg) {
    replace(err, msg);
    err.hidden = false;
    wrap.classList.add('has-error');
    if (input) input.setAttribute('aria-invalid', 'true');
  } else {
    replace(err);
    err.hidden = true;
    wrap.classList.remove('has-error');
    if (input) input.removeAttribute('aria-invalid');
  }
}

// formError is the box at the top of a form for errors that belong to
// no field.
export function formError() {
  return h('div', {class: 'form-error notice notice-error', role: 'alert', tabindex: '-1', hidden: true});
}

// clearErrors removes every error shown in form.
export function clearErrors(form) {
  form.querySelectorAll('[data-field].has-error').forEach((w) => setFieldError(w, ''));
  form.querySelectorAll('.form-error').forEach((b) => { replace(b); b.hidden = true; });
}

// findField finds the wrapper of a JSON path, or of the nearest path
// above it ("typeSpecificConfig.items[2].title", then
// "typeSpecificConfig.items[2]", then "typeSpecificConfig.items").
function findField(form, path) {
  let p = path;
  while (p) {
    const w = form.querySelector(`[data-field="${CSS.escape(p)}"]`);
    if (w) return {wrap: w, exact: p === path};
    const dot = p.lastIndexOf('.');
    const br = p.lastIndexOf('[');
    const cut = Math.max(dot, br);
    if (cut <= 0) break;
    p = p.slice(0, cut);
  }
  return null;
}

// showErrors shows err (an ApiError or anything thrown) in form: each
// validation error under its field, the rest in the form's error box.
// It focuses the first field in error and returns how many it placed.
export function showErrors(form, err, describe) {
  clearErrors(form);
  const box = form.querySelector('.form-error');
  const leftover = [];
  let first = null;
  const fields = (err && err.fields) || {};
  const byWrap = new Map();
  for (const [path, msg] of Object.entries(fields)) {
    const f = findField(form, path);
    if (!f) {
      leftover.push(describe ? describe(path, msg) : `${path}: ${msg}`);
      continue;
    }
    const text = f.exact ? msg : `${describe ? describe(path, msg) : path + ': ' + msg}`;
    byWrap.set(f.wrap, (byWrap.has(f.wrap) ? byWrap.get(f.wrap) + ' ' : '') + text);
  }
  for (const [wrap, text] of byWrap) {
    setFieldError(wrap, text);
    if (!first) first = wrap;
  }
  if (!Object.keys(fields).length) leftover.push((err && err.message) || String(err));
  if (box && leftover.length) {
    replace(box, leftover.length === 1 ? leftover[0] : h('ul', null, leftover.map((l) => h('li', null, l))));
    box.hidden = false;
    if (!first) first = box;
  }
  if (first) {
    const input = first.querySelector && first.querySelector('input, select, textarea');
    (input || first).focus?.();
    if (!input) first.scrollIntoView?.({block: 'center'});
  }
  return byWrap.size;
}

export function fieldset(legend, ...children) {
  return h('fieldset', {class: 'fieldset'}, h('legend', null, legend), children);
}
