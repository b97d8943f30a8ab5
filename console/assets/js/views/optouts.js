// Opt-outs: the numbers that asked the company to stop, adding and
// removing one by hand, and the words that opt a number out or back in
// by SMS.

import {h, replace} from '../dom.js';
import {get, post, put, del, enc, isUnavailable, ApiError} from '../api.js';
import {dateTime, num} from '../format.js';
import {pageHeader, emptyState, pager, table, row, loading, unavailable, busy, confirmDialog, toast} from '../ui.js';
import {field, formError, clearErrors, showErrors} from '../forms.js';

const COLUMNS = [{label: 'Phone'}, {label: 'Channel'}, {label: 'Source'}, {label: 'Since'}, {label: 'Actions', class: 'col-actions'}];
const SOURCE_LABEL = {api: 'Added by hand or API', keyword: 'SMS keyword', chat: 'Chat unsubscribe'};

function href(phone, page) {
  const q = new URLSearchParams();
  if (phone) q.set('phoneNumber', phone);
  if (page > 1) q.set('page', page);
  return '#/opt-outs' + (q.toString() ? '?' + q.toString() : '');
}

function addForm(ctx) {
  const pf = field({label: 'Phone number', name: 'phoneNumber', required: true, id: 'optout-phone', placeholder: '+447700900123', attrs: {inputmode: 'tel', autocomplete: 'off'}});
  const cf = field({label: 'Channel', name: 'channel', type: 'select', id: 'optout-channel', value: 'All',
    options: [{value: 'All', label: 'Every message'}, {value: 'Chat', label: 'Chat only'}]});
  const submit = h('button', {type: 'submit', class: 'btn btn-primary', id: 'optout-add'}, 'Opt out');
  const form = h('form', {class: 'card form', id: 'optout-form', novalidate: true},
    h('h2', null, 'Add a number'), formError(), h('div', {class: 'form-grid'}, pf.wrap, cf.wrap), h('div', {class: 'form-actions'}, submit));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearErrors(form);
    const phone = pf.input.value.trim();
    if (!phone) {
      pf.setError('Enter the phone number to opt out.');
      pf.input.focus();
      return;
    }
    await busy(submit, 'Adding…', async () => {
      try {
        await post('/api/v1/opt-outs', {phoneNumber: phone, channel: cf.input.value});
        ctx.flash(`${phone} is opted out.`);
        ctx.navigate('/opt-outs');
      } catch (err) {
        showErrors(form, err);
      }
    });
  });
  return form;
}

function words(s) {
  return s.split(/[\s,]+/).map((w) => w.trim()).filter(Boolean);
}

async function keywordsCard(ctx) {
  const card = h('section', {class: 'card', id: 'keywords', 'aria-labelledby': 'keywords-title'}, h('h2', {id: 'keywords-title'}, 'Keywords'), loading());
  let kw;
  try {
    kw = await get('/api/v1/opt-outs/keywords', {signal: ctx.signal});
  } catch (err) {
    if (ctx.signal.aborted) return card;
    replace(card, h('h2', {id: 'keywords-title'}, 'Keywords'), isUnavailable(err) ? unavailable('Keywords') : h('p', {class: 'notice notice-error'}, err.message));
    return card;
  }
  const out = field({label: 'Opt out words', name: 'optOut', id: 'kw-optout', value: (kw.optOut || []).join(' '), hint: 'An SMS whose whole text is one of these opts its sender out of everything. Separate words with spaces. Empty turns it off.'});
  const inn = field({label: 'Opt back in words', name: 'optIn', id: 'kw-optin', value: (kw.optIn || []).join(' '), hint: 'An SMS whose whole text is one of these opts its sender back in.'});
  const save = h('button', {type: 'submit', class: 'btn btn-secondary', id: 'kw-save'}, 'Save keywords');
  const form = h('form', {class: 'form', id: 'keywords-form', novalidate: true}, formError(), h('div', {class: 'form-grid form-grid-2'}, out.wrap, inn.wrap), h('div', {class: 'form-actions'}, save));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearErrors(form);
    await busy(save, 'Saving…', async () => {
      try {
        const got = await put('/api/v1/opt-outs/keywords', {optOut: words(out.input.value), optIn: words(inn.input.value)});
        out.input.value = (got.optOut || []).join(' ');
        inn.input.value = (got.optIn || []).join(' ');
        toast('Keywords saved.');
      } catch (err) {
        showErrors(form, err);
      }
    });
  });
  replace(card, h('h2', {id: 'keywords-title'}, 'Keywords'), form);
  return card;
}

export async function render(ctx) {
  const phone = (ctx.query.get('phoneNumber') || '').trim();
  const page = Math.max(1, parseInt(ctx.query.get('page') || '1', 10) || 1);
  const listBox = h('section', {class: 'card', id: 'optouts', 'aria-labelledby': 'optouts-title'}, h('h2', {id: 'optouts-title'}, 'Opted-out numbers'), loading());
  const kwBox = h('div');
  replace(ctx.main, pageHeader('Opt-outs'), addForm(ctx), listBox, kwBox);
  let list;
  try {
    list = await get('/api/v1/opt-outs', {query: {phoneNumber: phone, page, pageSize: 20}, signal: ctx.signal});
  } catch (err) {
    if (!isUnavailable(err)) throw err;
    replace(listBox, h('h2', {id: 'optouts-title'}, 'Opted-out numbers'), unavailable('Opt-outs', 'This server keeps no opt-out list.'));
    return;
  }
  const items = list.optOuts || [];
  const rows = items.map((o) => {
    const remove = h('button', {type: 'button', class: 'btn btn-danger-text btn-small', dataset: {phone: o.phoneNumber, channel: o.channel},
      'aria-label': `Remove ${o.phoneNumber} (${o.channel})`}, 'Remove');
    remove.addEventListener('click', async () => {
      const ok = await confirmDialog({title: 'Remove this opt-out?', text: `Messages to ${o.phoneNumber} will be sent again.`, confirm: 'Remove', danger: true});
      if (!ok) return;
      await busy(remove, 'Removing…', async () => {
        try {
          await del('/api/v1/opt-outs/' + enc(o.phoneNumber), {query: {channel: o.channel}});
          ctx.flash(`${o.phoneNumber} is no longer opted out.`);
          ctx.navigate(href(phone, page).slice(1));
        } catch (err) {
          toast(err instanceof ApiError ? err.message : String(err), 'error');
        }
      });
    });
    return row(COLUMNS, [h('span', {class: 'mono'}, o.phoneNumber), o.channel === 'Chat' ? 'Chat only' : 'Every message',
      SOURCE_LABEL[o.source] || o.source, dateTime(o.createdAt), remove], {dataset: {phone: o.phoneNumber}});
  });
  replace(listBox, h('h2', {id: 'optouts-title'}, 'Opted-out numbers'),
    h('p', {class: 'muted', id: 'optouts-count'}, `${num(list.totalCount)} number${list.totalCount === 1 ? '' : 's'} opted out.`),
    items.length ? table(COLUMNS, rows, {id: 'optouts-table', caption: 'Opted-out numbers'}) : emptyState('Nobody opted out', null),
    pager(list, (p) => href(phone, p)));
  replace(kwBox, await keywordsCard(ctx));
}
