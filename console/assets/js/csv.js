// CSV parsing (RFC 4180: quoted fields, doubled quotes, line breaks in
// quotes, CRLF or LF), with the delimiter guessed from the header line:
// comma, semicolon or tab. A byte order mark is dropped.

export function detectDelimiter(text) {
  const firstLine = text.split(/\r?\n/, 1)[0] || '';
  let best = ',';
  let bestCount = 0;
  for (const d of [',', ';', '\t']) {
    const n = firstLine.split(d).length - 1;
    if (n > bestCount) {
      best = d;
      bestCount = n;
    }
  }
  return best;
}

// parseCSV returns the rows of text, each an array of strings, and the
// line each row started on (1-based).
export function parseCSV(text, delimiter) {
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const d = delimiter || detectDelimiter(text);
  const rows = [];
  const lines = [];
  let row = [];
  let fieldText = '';
  let quoted = false;
  let line = 1;
  let rowLine = 1;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          fieldText += '"';
          i += 2;
          continue;
        }
        quoted = false;
        i++;
        continue;
      }
      if (c === '\n') line++;
      fieldText += c;
      i++;
      continue;
    }
    if (c === '"' && fieldText === '') {
      quoted = true;
      i++;
      continue;
    }
    if (c === d) {
      row.push(fieldText);
      fieldText = '';
      i++;
      continue;
    }
    if (c === '\r' || c === '\n') {
      row.push(fieldText);
      fieldText = '';
      rows.push(row);
      lines.push(rowLine);
      row = [];
      if (c === '\r' && text[i + 1] === '\n') i++;
      i++;
      line++;
      rowLine = line;
      continue;
    }
    fieldText += c;
    i++;
  }
  if (fieldText !== '' || row.length) {
    row.push(fieldText);
    rows.push(row);
    lines.push(rowLine);
  }
  // Blank lines are no rows.
  const out = [];
  const outLines = [];
  rows.forEach((r, k) => {
    if (r.length === 1 && r[0].trim() === '') return;
    out.push(r);
    outLines.push(lines[k]);
  });
  return {rows: out, lines: outLines};
}

// PHONE_RE is the API's rule: 10 to 15 digits after an optional +.
const PHONE_RE = /^\+?[0-9]{10,15}$/;

// checkPhone says why a phone number would be skipped, or '' when it is
// valid. Spaces, dashes, dots and brackets are removed first.
export function cleanPhone(raw) {
  return String(raw || '').trim().replace(/[\s().-]/g, '');
}

export function phoneProblem(raw) {
  const v = cleanPhone(raw);
  if (!v) return 'phone number missing';
  if (!PHONE_RE.test(v)) return 'not a phone number (10 to 15 digits after an optional +)';
  return '';
}

// recipientsFromCSV reads a recipients file: a header row with
// phoneNumber, optionally externalUserId, and one column per
// placeholder. It returns {error} or {columns, placeholderColumns,
// valid: [{line, recipient}], invalid: [{line, phoneNumber, reason}]}.
export function recipientsFromCSV(text) {
  const {rows, lines} = parseCSV(text);
  if (!rows.length) return {error: 'The file is empty.'};
  const header = rows[0].map((c) => c.trim());
  const norm = (c) => c.toLowerCase().replace(/[\s_-]/g, '');
  const phoneCol = header.findIndex((c) => ['phonenumber', 'phone', 'msisdn'].includes(norm(c)));
  if (phoneCol < 0) return {error: 'The header row has no phoneNumber column. The first row must name the columns: phoneNumber, optionally externalUserId, and one column per placeholder.'};
  const extCol = header.findIndex((c) => norm(c) === 'externaluserid');
  const placeholderColumns = [];
  header.forEach((c, k) => {
    if (k !== phoneCol && k !== extCol && c !== '') placeholderColumns.push({index: k, name: c});
  });
  const valid = [];
  const invalid = [];
  for (let r = 1; r < rows.length; r++) {
    const cells = rows[r];
    const raw = (cells[phoneCol] || '').trim();
    const problem = phoneProblem(raw);
    if (problem) {
      invalid.push({line: lines[r], phoneNumber: raw, reason: problem});
      continue;
    }
    const recipient = {phoneNumber: cleanPhone(raw)};
    const ext = extCol >= 0 ? (cells[extCol] || '').trim() : '';
    if (ext) recipient.externalUserId = ext;
    const ph = {};
    for (const p of placeholderColumns) {
      const v = cells[p.index];
      if (v !== undefined && v !== '') ph[p.name] = v;
    }
    if (Object.keys(ph).length) recipient.placeholders = ph;
    valid.push({line: lines[r], recipient});
  }
  return {columns: header, phoneColumn: header[phoneCol], externalColumn: extCol >= 0 ? header[extCol] : null, placeholderColumns: placeholderColumns.map((p) => p.name), valid, invalid, rowCount: rows.length - 1};
}

// PLACEHOLDER_RE matches {{name}} as the server reads it: letters,
// digits and underscores between double braces.
export const PLACEHOLDER_RE = /\{\{([A-Za-z0-9_]+)\}\}/g;

// placeholdersIn lists the placeholder names of the texts, each once.
export function placeholdersIn(...texts) {
  const seen = new Set();
  for (const t of texts) {
    if (!t) continue;
    for (const m of String(t).matchAll(PLACEHOLDER_RE)) seen.add(m[1]);
  }
  return [...seen];
}

// fill replaces the placeholders of text that have a value in values.
export function fill(text, values) {
  return String(text || '').replace(PLACEHOLDER_RE, (all, name) => (values && values[name] !== undefined && values[name] !== '' ? String(values[name]) : all));
}
