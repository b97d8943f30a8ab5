// Operator: the companies of this server, and a new one.

import {h, replace} from '../dom.js';
import {get, post, enc, isUnavailable, ApiError} from '../api.js';
import {num, dateTime} from '../format.js';
import {pageHeader, emptyState, pager, table, row, unavailable, busy, loading} from '../ui.js';
import {field, formError, clearErrors, showErrors} from '../forms.js';
import {memo} from '../session.js';

const COLUMNS = [{label: 'Company'}, {label: 'Status'}, {label: 'Rate (messages/s)', class: 'num'}, {label: 'Created'}];

export function activeBadge(active) {
  return h('span', {class: 'badge ' + (active ? 'badge-completed' : 'badge-paused'), dataset: {active: String(!!active)}}, active ? 'Active' : 'Inactive');
}

function companyRow(c) {
  return row(COLUMNS, [
    h('div', null, h('a', {href: '#/operator/companies/' + enc(c.id), class: 'strong'}, c.name), h('div', {class: 'muted small mono'}, c.id)),
    activeBadge(c.active),
    c.maxPerSecond ? num(c.maxPerSecond) : 'no limit',
    c.createdAt ? dateTime(c.createdAt) : '–',
  ], {dataset: {companyId: c.id}});
}

function createForm(ctx) {
  const name = field({label: 'Name', name: 'name', required: true, id: 'company-name', hint: 'Unique on this server. A new company is inactive until you activate it.', attrs: {autocomplete: 'off', maxlength: '200'}});
  const submit = h('button', {type: 'submit', class: 'btn btn-primary', id: 'company-create'}, 'Create company');
  const form = h('form', {class: 'card form form-inline', id: 'company-form', novalidate: true},
    h('h2', null, 'New company'), formError(), h('div', {class: 'inline-row'}, name.wrap, submit));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearErrors(form);
    const n = name.input.value.trim();
    if (!n) {
      name.setError('Enter the company’s name.');
      name.input.focus();
      return;
    }
    await busy(submit, 'Creating…', async () => {
      try {
        const c = await post('/admin/v1/companies', {name: n});
        memo.put('companies', {id: c.id, name: c.name});
        ctx.flash(`Company “${c.name}” created. It stays inactive until you activate it.`);
        ctx.navigate('/operator/companies/' + enc(c.id));
      } catch (err) {
        if (err instanceof ApiError && err.status === 409 && !err.fields.name) err.fields = {name: err.message || 'A company of that name exists already.'};
        showErrors(form, err);
      }
    });
  });
  return form;
}

function openByID(ctx) {
  const idf = field({label: 'Company id', name: 'companyId', id: 'open-company-id', placeholder: '0190a1e0-…', attrs: {autocomplete: 'off', spellcheck: 'false'}});
  const form = h('form', {class: 'form form-inline', id: 'open-company', novalidate: true}, h('div', {class: 'inline-row'}, idf.wrap,
    h('button', {type: 'submit', class: 'btn btn-secondary'}, 'Open')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const v = idf.input.value.trim();
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v)) {
      idf.setError('A company id is a UUID, like 0190a1e0-0000-7000-8000-00000000de70.');
      idf.input.focus();
      return;
    }
    ctx.navigate('/operator/companies/' + enc(v));
  });
  return form;
}

export async function render(ctx) {
  const page = Math.max(1, parseInt(ctx.query.get('page') || '1', 10) || 1);
  const listBox = h('section', {class: 'card', id: 'companies', 'aria-labelledby': 'companies-title'}, h('h2', {id: 'companies-title'}, 'Companies'), loading());
  replace(ctx.main, pageHeader('Companies'), createForm(ctx), listBox);
  let list;
  try {
    list = await get('/admin/v1/companies', {query: {page, pageSize: 20}, signal: ctx.signal});
  } catch (err) {
    if (!isUnavailable(err)) throw err;
    // An older server: no listing. Offer the companies this tab knows of
    // and opening one by its id.
    const known = memo.list('companies');
    const rows = [];
    for (const k of known.slice(0, 20)) {
      try {
        rows.push(companyRow(await get('/admin/v1/companies/' + enc(k.id), {signal: ctx.signal})));
      } catch (e) {
        if (e instanceof ApiError && e.status === 404) memo.remove('companies', k.id);
      }
    }
    replace(listBox, h('h2', {id: 'companies-title'}, 'Companies'),
      unavailable('Listing companies', 'This server cannot list its companies yet (GET /admin/v1/companies). Companies created or opened in this tab are shown below; open any other by its id.'),
      openByID(ctx),
      rows.length ? table(COLUMNS, rows, {id: 'companies-table', caption: 'Companies known to this tab'}) : emptyState('No company opened in this tab yet', null));
    return;
  }
  const companies = list.companies || [];
  replace(listBox, h('h2', {id: 'companies-title'}, 'Companies'),
    companies.length ? table(COLUMNS, companies.map(companyRow), {id: 'companies-table', caption: 'Companies'}) : emptyState('No companies yet', 'Create the first one above.'),
    pager({...list, totalPages: list.totalPages || Math.ceil((list.totalCount || 0) / (list.pageSize || 20))}, (p) => '#/operator/companies?page=' + p));
}
