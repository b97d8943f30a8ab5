// A new bulk campaign from a CSV file: pick a template, read the file
// here (header row: phoneNumber, optionally externalUserId, one column per
// placeholder), see the rows that cannot be sent before sending, then
// send and follow the campaign.

import {h, replace} from '../dom.js';
import {get, post, enc, idempotencyKey, ApiError} from '../api.js';
import {num, CHANNEL_LABEL, typeLabel} from '../format.js';
import {pageHeader, notice, busy, emptyState, table, row} from '../ui.js';
import {field, fieldset, formError, clearErrors, showErrors} from '../forms.js';
import {recipientsFromCSV, placeholdersIn, fill} from '../csv.js';

const MAX_FILE = 64 * 1024 * 1024;

async function allTemplates(signal) {
  const out = [];
  for (let page = 1; page <= 10; page++) {
    const list = await get('/api/v1/templates', {query: {page, pageSize: 100}, signal});
    out.push(...list.templates);
    if (page >= list.totalPages) break;
  }
  return out;
}

function templatePlaceholders(t) {
  if (!t) return [];
  const cfg = (() => {
    try {
      return typeof t.typeSpecificConfig === 'string' ? JSON.parse(t.typeSpecificConfig) || {} : t.typeSpecificConfig || {};
    } catch (_) {
      return {};
    }
  })();
  return placeholdersIn(t.templateContent, t.smsFallbackTemplateContent, cfg.buttonUrl, cfg.fileUrl);
}

export async function render(ctx) {
  const templates = await allTemplates(ctx.signal);
  if (!templates.length) {
    replace(ctx.main, pageHeader('New bulk campaign'), emptyState('No template yet', 'A bulk campaign sends a template. Create one first.',
      h('a', {class: 'btn btn-primary', href: '#/templates/new/sms'}, 'New SMS template'),
      h('a', {class: 'btn btn-secondary', href: '#/templates/new/chat'}, 'New chat template')));
    return;
  }
  const sms = templates.filter((t) => t.channelType !== 'Chat');
  const chat = templates.filter((t) => t.channelType === 'Chat');
  const wanted = ctx.query.get('templateId') || '';
  const tplSelect = h('select', {id: 'bulk-template', name: 'templateId', required: true, 'aria-describedby': 'bulk-template-hint bulk-template-error'},
    h('option', {value: ''}, 'Choose a template'),
    sms.length ? h('optgroup', {label: 'SMS'}, sms.map((t) => h('option', {value: t.id, selected: t.id === wanted}, t.name))) : null,
    chat.length ? h('optgroup', {label: 'Chat'}, chat.map((t) => h('option', {value: t.id, selected: t.id === wanted}, `${t.name} (${typeLabel(t.messageType)})`))) : null);
  const tplWrap = h('div', {class: 'field', dataset: {field: 'templateId'}},
    h('label', {for: 'bulk-template'}, 'Template', h('span', {class: 'req', 'aria-hidden': 'true'}, ' *')), tplSelect,
    h('p', {class: 'hint', id: 'bulk-template-hint'}, 'SMS templates go out as SMS, chat templates through your chat service.'),
    h('p', {class: 'field-error', id: 'bulk-template-error', hidden: true}));
  const tplInfo = h('div', {class: 'template-info', id: 'template-info'});

  const fileInput = h('input', {type: 'file', id: 'bulk-file', name: 'recipients', accept: '.csv,text/csv,text/plain', 'aria-describedby': 'bulk-file-hint bulk-file-error'});
  const fileWrap = h('div', {class: 'field', dataset: {field: 'recipients'}},
    h('label', {for: 'bulk-file'}, 'Recipients (CSV file)', h('span', {class: 'req', 'aria-hidden': 'true'}, ' *')),
    fileInput,
    h('p', {class: 'hint', id: 'bulk-file-hint'}, 'First row: ', h('code', null, 'phoneNumber'), ', optionally ', h('code', null, 'externalUserId'),
      ', then one column per placeholder (', h('code', null, 'name'), ' for ', h('code', null, '{{name}}'), '). Comma, semicolon or tab separated. The file is read in this browser.'),
    h('p', {class: 'field-error', id: 'bulk-file-error', hidden: true}));
  const defaultsBox = h('div', {class: 'defaults', id: 'bulk-defaults'});
  const validity = field({label: 'Validity', name: 'validityPeriod', type: 'number', optional: true, id: 'bulk-validity',
    hint: 'Seconds from the start (60 to 604800); overrides the template’s.', attrs: {min: '60', max: '604800', inputmode: 'numeric'}});
  const summary = h('div', {id: 'csv-summary', 'aria-live': 'polite'});
  // skipMissing: leave out the rows without a value for a placeholder
  // (missingPlaceholders "skip"); kept across redraws of the summary.
  const skipMissing = h('input', {type: 'checkbox', id: 'bulk-skip-missing', name: 'missingPlaceholders'});
  const send = h('button', {type: 'submit', class: 'btn btn-primary', id: 'bulk-send', disabled: true}, 'Create campaign');
  const form = h('form', {class: 'form', id: 'bulk-form', novalidate: true},
    h('section', {class: 'card'}, h('h2', null, '1. Template'), formError(), tplWrap, tplInfo),
    h('section', {class: 'card'}, h('h2', null, '2. Recipients'), fileWrap, summary),
    h('section', {class: 'card'}, h('h2', null, '3. Send'), defaultsBox, validity.wrap,
      h('p', {class: 'muted small'}, 'The campaign is created Ready: nothing is sent until you start it on its page.'),
      h('div', {class: 'form-actions'}, send)));
  replace(ctx.main, pageHeader('New bulk campaign'), form);

  let parsed = null;
  let fileName = '';
  let idemKey = idempotencyKey();
  const defaults = new Map();
  const chosen = () => templates.find((t) => t.id === tplSelect.value) || null;

  const updateDefaults = () => {
    const t = chosen();
    const names = templatePlaceholders(t);
    const fromFile = new Set(parsed && !parsed.error ? parsed.placeholderColumns : []);
    for (const k of [...defaults.keys()]) if (!names.includes(k)) defaults.delete(k);
    const inputs = names.map((n) => {
      const f = field({label: `{{${n}}}`, name: 'placeholders.' + n, value: defaults.get(n)?.value || '', id: 'default-' + n,
        optional: fromFile.has(n),
        hint: fromFile.has(n) ? 'A column of the file: this value is used where its cell is empty.' : 'Not a column of the file: this value goes to every recipient.'});
      defaults.set(n, f.input);
      return f.wrap;
    });
    replace(defaultsBox, inputs.length ? fieldset('Placeholder values', inputs) : null);
  };

  const updateInfo = () => {
    const t = chosen();
    if (!t) {
      replace(tplInfo);
      return;
    }
    const names = templatePlaceholders(t);
    replace(tplInfo, h('div', {class: 'template-card'},
      h('p', {class: 'muted small'}, `${CHANNEL_LABEL[t.channelType] || t.channelType} · ${typeLabel(t.messageType)}`),
      t.templateContent ? h('p', {class: 'message-text'}, t.templateContent) : null,
      h('p', {class: 'small'}, names.length ? ['Placeholders: ', names.map((n, i) => [i ? ', ' : '', h('code', null, n)])] : 'No placeholders.'),
      h('a', {href: '#/templates/' + enc(t.id), class: 'small'}, 'Open the template')));
  };

  // lacking counts the rows without a value for each placeholder of the
  // template: no cell (an empty cell is sent as no value) and no value for
  // everyone. It returns [{name, rows}] and the rows lacking any.
  const lacking = () => {
    const t = chosen();
    if (!t || !parsed || parsed.error) return {names: [], rows: []};
    const hasDefault = (n) => defaults.get(n) && defaults.get(n).value !== '';
    const names = templatePlaceholders(t).filter((n) => !hasDefault(n)).map((n) => ({name: n, rows: []}));
    const rows = [];
    for (const v of parsed.valid) {
      let lacks = false;
      for (const m of names) {
        if (!(v.recipient.placeholders && v.recipient.placeholders[m.name] !== undefined)) {
          m.rows.push(v.line);
          lacks = true;
        }
      }
      if (lacks) rows.push(v);
    }
    return {names: names.filter((m) => m.rows.length), rows};
  };

  const updateSummary = () => {
    const miss = lacking();
    const skipping = skipMissing.checked && miss.rows.length > 0;
    const sending = parsed && !parsed.error ? parsed.valid.length - (skipping ? miss.rows.length : 0) : 0;
    send.disabled = !(parsed && !parsed.error && sending > 0 && chosen());
    if (!parsed) {
      replace(summary);
      return;
    }
    if (parsed.error) {
      replace(summary, notice('error', parsed.error));
      return;
    }
    const t = chosen();
    const names = templatePlaceholders(t);
    const cols = new Set(parsed.placeholderColumns);
    const unused = parsed.placeholderColumns.filter((c) => t && !names.includes(c));
    const parts = [
      h('dl', {class: 'counters counters-small', id: 'csv-counts'},
        h('div', {class: 'counter'}, h('dt', null, 'Rows'), h('dd', null, num(parsed.rowCount))),
        h('div', {class: 'counter counter-good'}, h('dt', null, 'Will be sent'), h('dd', {id: 'csv-valid'}, num(sending))),
        h('div', {class: 'counter' + (parsed.invalid.length ? ' counter-bad' : '')}, h('dt', null, 'Invalid'), h('dd', {id: 'csv-invalid'}, num(parsed.invalid.length)))),
      h('p', {class: 'small muted'}, `${fileName}: columns `, parsed.columns.map((c, i) => [i ? ', ' : '', h('code', null, c)]), '.'),
    ];
    if (unused.length) parts.push(notice('warning', `Columns the template does not use: ${unused.join(', ')}.`));
    if (parsed.invalid.length) {
      const cols2 = [{label: 'Line'}, {label: 'Phone number'}, {label: 'Problem'}];
      const shown = parsed.invalid.slice(0, 200);
      parts.push(h('div', {class: 'invalid-rows', id: 'invalid-rows'},
        h('h3', null, `${num(parsed.invalid.length)} row${parsed.invalid.length === 1 ? '' : 's'} will be left out`),
        table(cols2, shown.map((r) => row(cols2, [String(r.line), r.phoneNumber ? h('span', {class: 'mono'}, r.phoneNumber) : h('em', null, 'empty'), r.reason])), {id: 'invalid-table', caption: 'Rows left out'}),
        parsed.invalid.length > shown.length ? h('p', {class: 'muted small'}, `and ${num(parsed.invalid.length - shown.length)} more.`) : null));
    }
    if (parsed.valid.length && t) {
      const sample = parsed.valid.slice(0, 3);
      parts.push(h('div', {class: 'sample-messages'}, h('h3', null, 'First messages'),
        sample.map((v) => {
          const values = {};
          for (const [k, input] of defaults) if (input.value) values[k] = input.value;
          Object.assign(values, v.recipient.placeholders || {});
          return h('div', {class: 'sample-message'}, h('span', {class: 'mono small'}, v.recipient.phoneNumber), h('p', {class: 'message-text'}, fill(t.templateContent, values)));
        })));
    }
    if (miss.names.length) {
      const all = parsed.valid.length;
      parts.push(h('div', {class: 'notice notice-warning missing-placeholders', id: 'missing-placeholders', role: 'status'},
        h('strong', null, `${num(miss.rows.length)} of ${num(all)} row${all === 1 ? '' : 's'} lack${miss.rows.length === 1 ? 's' : ''} a placeholder value`),
        h('ul', {class: 'missing-list'}, miss.names.map((m) => h('li', {dataset: {placeholder: m.name, rows: String(m.rows.length)}},
          h('code', null, `{{${m.name}}}`), `: ${num(m.rows.length)} row${m.rows.length === 1 ? '' : 's'} without a value`,
          m.rows.length === all ? (cols.has(m.name) ? ' (the column is empty)' : ' (not a column of the file: add one, or a value for everyone below)')
            : ` (line${m.rows.length === 1 ? '' : 's'} ${m.rows.slice(0, 10).join(', ')}${m.rows.length > 10 ? ', …' : ''})`))),
        h('p', null, skipping ? 'Those rows will be left out.' : 'Their messages will show the placeholder as written, braces included.'),
        h('div', {class: 'field field-check'}, skipMissing, h('label', {for: 'bulk-skip-missing'},
          `Skip those recipients (${num(miss.rows.length)} row${miss.rows.length === 1 ? '' : 's'})`))));
    }
    replace(summary, parts);
  };

  tplSelect.addEventListener('change', () => {
    clearErrors(form);
    idemKey = idempotencyKey();
    updateInfo();
    updateDefaults();
    updateSummary();
  });
  skipMissing.addEventListener('change', () => {
    idemKey = idempotencyKey();
    updateSummary();
    skipMissing.focus();
  });
  defaultsBox.addEventListener('input', () => {
    idemKey = idempotencyKey();
    updateSummary();
  });
  fileInput.addEventListener('change', async () => {
    clearErrors(form);
    idemKey = idempotencyKey();
    const f = fileInput.files && fileInput.files[0];
    if (!f) {
      parsed = null;
    } else if (f.size > MAX_FILE) {
      parsed = {error: 'The file is larger than 64 MiB, the most one send takes.'};
    } else {
      fileName = f.name;
      try {
        parsed = recipientsFromCSV(await f.text());
        if (!parsed.error && parsed.valid.length + parsed.invalid.length === 0) parsed = {error: 'The file has a header row but no recipients.'};
        if (!parsed.error && parsed.valid.length > 200000) parsed = {error: `The file has ${num(parsed.valid.length)} recipients; one campaign takes at most 200,000.`};
      } catch (err) {
        parsed = {error: 'The file could not be read: ' + err.message};
      }
    }
    updateDefaults();
    updateSummary();
  });

  // recipientLine maps recipients[i] of an error to its line in the file.
  const describe = (path, msg) => {
    const m = /^recipients\[(\d+)\]\.?(.*)$/.exec(path);
    if (m && parsed && parsed.valid[Number(m[1])]) return `Line ${parsed.valid[Number(m[1])].line}${m[2] ? ' (' + m[2] + ')' : ''}: ${msg}`;
    return `${path}: ${msg}`;
  };

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearErrors(form);
    const t = chosen();
    if (!t) {
      showErrors(form, new ApiError(400, {message: 'Choose a template.', validationErrors: {templateId: 'Choose a template.'}}));
      return;
    }
    if (!parsed || parsed.error || !parsed.valid.length) {
      showErrors(form, new ApiError(400, {message: 'Choose a CSV file with at least one valid recipient.', validationErrors: {recipients: 'Choose a CSV file with at least one valid recipient.'}}));
      return;
    }
    const body = {templateId: t.id, recipients: parsed.valid.map((v) => v.recipient)};
    const ph = {};
    for (const [k, input] of defaults) if (input.value !== '') ph[k] = input.value;
    if (Object.keys(ph).length) body.placeholders = ph;
    const v = validity.input.value.trim();
    if (v) body.validityPeriod = Number(v);
    if (skipMissing.checked && lacking().rows.length) body.missingPlaceholders = 'skip';
    const path = t.channelType === 'Chat' ? '/api/v1/chat/send' : '/api/v1/sms/promotional';
    await busy(send, 'Sending…', async () => {
      try {
        const r = await post(path, body, {headers: {'Idempotency-Key': idemKey}});
        const skipped = [];
        if (parsed.invalid.length) skipped.push(`${num(parsed.invalid.length)} invalid row${parsed.invalid.length === 1 ? '' : 's'} left out of the file`);
        if (r.invalidPhoneNumbers && r.invalidPhoneNumbers.length) skipped.push(`${num(r.invalidPhoneNumbers.length)} refused by the server as invalid (${r.invalidPhoneNumbers.slice(0, 5).join(', ')})`);
        if (r.contentTooLong && r.contentTooLong.length) skipped.push(`${num(r.contentTooLong.length)} whose message would be too long`);
        if (r.optedOutPhoneNumbers && r.optedOutPhoneNumbers.length) skipped.push(`${num(r.optedOutPhoneNumbers.length)} opted out`);
        const skippedMissing = r.missingPlaceholderPhoneNumbers || [];
        if (skippedMissing.length) skipped.push(`${num(skippedMissing.length)} without a value for a placeholder`);
        else if (r.missingPlaceholders && r.missingPlaceholders.length) {
          skipped.push(`${r.missingPlaceholders.map((m) => `${num(m.recipients)} without {{${m.name}}}`).join(', ')}: shown as written`);
        }
        ctx.flash(`Campaign created with ${num(r.messageCount)} message${r.messageCount === 1 ? '' : 's'}${skipped.length ? '; ' + skipped.join('; ') : ''}. Start it once it is Ready.`, skipped.length ? 'warning' : 'success');
        ctx.navigate('/campaigns/' + enc(r.campaignId));
      } catch (err) {
        if (err.status === 429) {
          showErrors(form, new ApiError(429, {message: err.message}));
          return;
        }
        showErrors(form, err, describe);
      }
    });
  });

  updateInfo();
  updateDefaults();
  updateSummary();
}
