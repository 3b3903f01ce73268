// The REST API client (docs/rest.md): the token goes in the Authorization header of every call,
// never in a URL or a cookie. Errors carry the API's error body. A 401 (token expired, revoked)
// ends the session.

export class ApiError extends Error {
  constructor(status, body, path) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status;
    this.code = e.code || null;
    this.field = e.field || null;
    this.details = e.details || null;
    this.path = path;
  }
}

let token = null;
let onUnauthorized = () => {};

export function setToken(t) { token = t; }
export function getToken() { return token; }
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

async function request(method, path, body, {raw = false, signal} = {}) {
  const headers = {Accept: raw ? '*/*' : 'application/json'};
  if (token) headers.Authorization = 'Bearer ' + token;
  const init = {method, headers, cache: 'no-store', credentials: 'omit', signal, redirect: 'error'};
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  if (raw && r.ok) return r;
  let doc = null;
  const text = await r.text();
  if (text) {
    try { doc = JSON.parse(text); } catch (e) { doc = null; }
  }
  if (!r.ok) {
    const err = new ApiError(r.status, doc, path);
    if (r.status === 401) onUnauthorized(err);
    throw err;
  }
  return doc;
}

export const get = (path, opts) => request('GET', path, undefined, opts);
export const post = (path, body, opts) => request('POST', path, body === undefined ? {} : body, opts);
// POST without a body (cancel routes read none).
export const postEmpty = (path, opts) => request('POST', path, undefined, opts);

// Every item of a list, following next_cursor (pages of 1000), at most `max`.
export async function getAll(path, max = 100000) {
  const items = [];
  let cursor = null;
  const sep = path.includes('?') ? '&' : '?';
  do {
    const page = await get(`${path}${sep}limit=1000${cursor ? '&cursor=' + encodeURIComponent(cursor) : ''}`);
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor && items.length < max);
  return items;
}

// The first item of a list (or null): the newest deployment of a cluster, say.
export async function first(path) {
  const sep = path.includes('?') ? '&' : '?';
  const page = await get(`${path}${sep}limit=1`);
  return page.items.length ? page.items[0] : null;
}

// Fetch a file the API serves (a sign-off's signature, say) and save it: the token cannot ride
// on a plain link, so the bytes come through fetch() and leave as a blob download.
export async function download(path, filename) {
  const r = await request('GET', path, undefined, {raw: true});
  const blob = await r.blob();
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.hidden = true;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

export const enc = encodeURIComponent;
