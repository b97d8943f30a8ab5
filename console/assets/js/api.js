// The HTTP API client. Company requests carry X-API-Key, operator
// requests Authorization: Bearer; both come from the session. Errors are
// ApiError, with the API's validationErrors map in fields.

import {session} from './session.js';

export class ApiError extends Error {
  constructor(status, body, fallback) {
    const b = body && typeof body === 'object' ? body : {};
    super(b.message || fallback || `The server answered ${status}`);
    this.status = status;
    this.title = b.error || '';
    this.fields = b.validationErrors && typeof b.validationErrors === 'object' ? b.validationErrors : {};
    this.body = b;
  }
}

// isUnavailable tells whether err says the server has no such route: a
// 404 of the router ("No route ...") or a 405 (the path exists for
// other methods only). A 404 about a missing resource is not one.
export function isUnavailable(err) {
  if (!(err instanceof ApiError)) return false;
  if (err.status === 405) return true;
  return err.status === 404 && /^No route/i.test(err.message);
}

let onUnauthorized = () => {};
// setUnauthorizedHandler sets what happens when a signed-in request is
// answered 401 (the key was revoked, the token changed).
export function setUnauthorizedHandler(fn) {
  onUnauthorized = fn;
}

function authHeaders(path, secret) {
  const s = secret !== undefined ? {secret, role: path.startsWith('/admin/') ? 'operator' : 'company'} : session.get();
  if (!s) return {};
  if (path.startsWith('/admin/')) return s.role === 'operator' ? {'Authorization': 'Bearer ' + s.secret} : {};
  if (path.startsWith('/api/')) return s.role === 'company' ? {'X-API-Key': s.secret} : {};
  return {};
}

// request sends one API request. opts: body (JSON), query (object; empty
// values left out), signal, secret (sign-in checks: use this instead of
// the session, and never treat a 401 as the end of the session), text
// (answer read as text), headers.
export async function request(method, path, opts = {}) {
  let url = path;
  if (opts.query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.query)) {
      if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
    }
    const qs = q.toString();
    if (qs) url += '?' + qs;
  }
  const headers = {'Accept': opts.text ? 'text/csv, */*' : 'application/json', ...authHeaders(path, opts.secret), ...(opts.headers || {})};
  const init = {method, headers, signal: opts.signal, credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer'};
  if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(opts.body);
  }
  let res;
  try {
    res = await fetch(url, init);
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new ApiError(0, null, 'Cannot reach the Herald server. Check that it is running, then try again.');
  }
  if (res.status === 204) return null;
  const type = res.headers.get('Content-Type') || '';
  if (res.ok && opts.text) return res.text();
  let body = null;
  if (type.includes('json')) {
    try {
      body = await res.json();
    } catch (_) {
      body = null;
    }
  } else {
    await res.text().catch(() => '');
  }
  if (!res.ok) {
    const err = new ApiError(res.status, body, res.statusText);
    if (res.status === 401 && opts.secret === undefined) onUnauthorized(err);
    if (res.status === 429 && body && !body.message && body.error) err.message = body.error;
    throw err;
  }
  return body;
}

export const get = (path, opts) => request('GET', path, opts);
export const post = (path, body, opts = {}) => request('POST', path, {...opts, body});
export const put = (path, body, opts = {}) => request('PUT', path, {...opts, body});
export const del = (path, opts) => request('DELETE', path, opts);

// idempotencyKey returns a fresh Idempotency-Key for one send.
export function idempotencyKey() {
  if (crypto.randomUUID) return 'console-' + crypto.randomUUID();
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return 'console-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

// enc encodes one path segment.
export const enc = encodeURIComponent;
