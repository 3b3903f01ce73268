// Building the page: elements made with createElement / createTextNode only. Every string that
// comes from the API (host names, facts, messages, diffs) is untrusted and reaches the page as
// a text node or an attribute value, never as HTML (the CSP enforces Trusted Types, so an HTML
// sink would throw anyway). Also: formatting helpers and a sortable table.

const SVG_NS = 'http://www.w3.org/2000/svg';

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.setAttribute('class', Array.isArray(v) ? v.filter(Boolean).join(' ') : v);
    else if (k === 'on') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    else if (k === 'dataset') for (const [dk, dv] of Object.entries(v)) el.dataset[dk] = String(dv);
    else if (k === 'hidden' || k === 'disabled' || k === 'checked' || k === 'selected' ||
             k === 'open' || k === 'required' || k === 'multiple') el[k] = Boolean(v);
    else if (k === 'value') el.value = String(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

// h('a', {href: '#/nodes', class: 'x'}, 'text', child, [more]): an HTML element.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

// The same in the SVG namespace.
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

// Replace el's children with these (strings as text, arrays flattened, null skipped) and add
// more: the DOM's own append() would print "null" and stringify arrays.
export function fill(el, ...children) {
  clear(el);
  append(el, children);
  return el;
}
export function add(el, ...children) {
  append(el, children);
  return el;
}

// A link to a page of the portal: #/what/ID with the id encoded.
export function link(path, ...children) {
  return h('a', {href: '#' + path}, ...children);
}
export function nodeLink(id, label) { return link('/nodes/' + encodeURIComponent(id), label || id); }
export function depLink(id) { return link('/deployments/' + encodeURIComponent(id), id); }
export function campLink(id) { return link('/campaigns/' + encodeURIComponent(id), id); }
export function soLink(id) { return link('/signoffs/' + encodeURIComponent(id), id); }
export function rvLink(id) { return link('/revalidations/' + encodeURIComponent(id), id); }

// A state or verdict as a badge: the word is always shown (never colour alone).
const TONES = {
  online: 'good', succeeded: 'good', passed: 'good', pass: 'good', ok: 'good', signed: 'good',
  current: 'good', active: 'good', verified: 'good',
  offline: 'warn', partial: 'warn', stale: 'warn', changed: 'info', running: 'info',
  pending: 'info', waiting: 'info', sent: 'info', configuring: 'info', validating: 'info',
  enrolled: 'info', uncovered: 'warn', incomplete: 'warn', transient: 'warn',
  failed: 'bad', fail: 'bad', regressed: 'bad', error: 'bad', revoked: 'bad', unreachable: 'bad', cancelled: 'mute',
  skipped: 'mute', none: 'mute',
};
export function badge(word, extraClass) {
  const w = word === null || word === undefined ? '—' : String(word);
  return h('span', {class: ['badge', 'tone-' + (TONES[w] || 'mute'), extraClass]}, w);
}

// A sign-off's verdict as every page shows it (docs/signoff.md, "Acceptance"): the verdict, the
// nodes it excluded, and whether it is an acceptance sign-off or a smoke / baseline report (never
// a bare pass). cls goes to the verdict's own badge.
export function verdictOf(so, cls) {
  const kind = so.acceptance
    ? h('span', {class: ['badge', 'tone-good', 'kind'], dataset: {acceptance: 'yes'}}, 'acceptance sign-off')
    : h('span', {class: ['badge', 'tone-warn', 'kind'], dataset: {acceptance: 'no'},
      title: (so.acceptance_reasons || []).join('; ') || 'not an acceptance sign-off'}, 'smoke / baseline report');
  return h('span', {class: 'verdict-of'}, badge(so.verdict, cls),
    so.excluded > 0 ? h('span', {class: ['badge', 'tone-warn', 'excluded']}, `${so.excluded} excluded`) : null,
    kind);
}

export function fmtTime(ms) {
  if (!ms) return '—';
  const d = new Date(ms);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function ago(ms, now = Date.now()) {
  if (!ms) return '—';
  const s = Math.round((now - ms) / 1000);
  if (s < 0) return 'just now';
  if (s < 60) return s + ' s ago';
  if (s < 3600) return Math.round(s / 60) + ' min ago';
  if (s < 86400) return Math.round(s / 3600) + ' h ago';
  return Math.round(s / 86400) + ' d ago';
}

// A <time> element: absolute time shown, relative in its title.
export function timeEl(ms) {
  if (!ms) return h('span', {class: 'mute'}, '—');
  return h('time', {datetime: new Date(ms).toISOString(), title: ago(ms)}, fmtTime(ms));
}

export function fmtNum(v, digits = 3) {
  if (v === null || v === undefined || Number.isNaN(v)) return '—';
  if (typeof v !== 'number') return String(v);
  if (Math.abs(v) >= 1000) return v.toFixed(0);
  return Number(v.toPrecision(digits)).toString();
}

// Natural order of host names: gpu-node-2 before gpu-node-10.
const collator = new Intl.Collator('en', {numeric: true, sensitivity: 'base'});
export const naturalCompare = (a, b) => collator.compare(String(a ?? ''), String(b ?? ''));

export function section(title, ...children) {
  return h('section', {class: 'card'}, h('h2', null, title), ...children);
}

export function kv(pairs) {
  const dl = h('dl', {class: 'kv'});
  for (const [k, v] of pairs) {
    if (v === undefined) continue;
    dl.append(h('dt', null, k), h('dd', null, v === null ? '—' : v));
  }
  return dl;
}

// A message in the page: role=alert for errors, status otherwise.
export function notice(text, kind = 'error') {
  return h('p', {class: ['notice', 'notice-' + kind], role: kind === 'error' ? 'alert' : 'status'}, text);
}

// A table that sorts on its headers (buttons, so the keyboard can) and renders only rows.
// columns: [{key, label, value: row => sort value, render: row => Node|string, numeric, title}]
// Returns {el, setRows(rows), sortBy(key, dir)}.
export function sortableTable({columns, rows = [], sort = null, caption = null, rowAttrs = null,
                               empty = 'Nothing to show.'}) {
  const table = h('table', {class: 'grid'});
  if (caption) table.append(h('caption', null, caption));
  const thead = h('thead');
  const tbody = h('tbody');
  const tr = h('tr');
  let state = sort ? {...sort} : null;
  let current = rows;
  const ths = new Map();
  for (const c of columns) {
    const th = h('th', {scope: 'col', class: c.numeric ? 'num' : null, title: c.title || null});
    if (c.value) {
      const btn = h('button', {type: 'button', class: 'sort', dataset: {key: c.key}, on: {
        click: () => {
          const dir = state && state.key === c.key && state.dir === 'ascending' ? 'descending' : 'ascending';
          state = {key: c.key, dir};
          render();
        },
      }}, c.label);
      th.append(btn);
    } else {
      th.append(c.label);
    }
    ths.set(c.key, th);
    tr.append(th);
  }
  thead.append(tr);
  table.append(thead, tbody);

  function render() {
    let list = current;
    if (state) {
      const col = columns.find((c) => c.key === state.key);
      if (col && col.value) {
        const sign = state.dir === 'ascending' ? 1 : -1;
        list = current.map((r, i) => [col.value(r), i, r]);
        list.sort((a, b) => {
          const x = a[0], y = b[0];
          let d;
          if (x === y) d = 0;
          else if (x === null || x === undefined) d = 1;
          else if (y === null || y === undefined) d = -1;
          else if (typeof x === 'number' && typeof y === 'number') d = (x - y) * sign;
          else d = naturalCompare(x, y) * sign;
          return d || a[1] - b[1];
        });
        list = list.map((e) => e[2]);
      }
    }
    for (const [k, th] of ths) {
      if (state && state.key === k) th.setAttribute('aria-sort', state.dir);
      else th.removeAttribute('aria-sort');
    }
    const frag = document.createDocumentFragment();
    for (const r of list) {
      const row = h('tr', rowAttrs ? rowAttrs(r) : null);
      for (const c of columns) {
        const v = c.render ? c.render(r) : r[c.key];
        row.append(h('td', {class: c.numeric ? 'num' : null}, v === null || v === undefined ? '—' : v));
      }
      frag.append(row);
    }
    if (!list.length) frag.append(h('tr', null, h('td', {colspan: columns.length, class: 'mute'}, empty)));
    clear(tbody).append(frag);
  }
  render();
  return {
    el: h('div', {class: 'table-wrap'}, table),
    setRows(r) { current = r; render(); },
    sortBy(key, dir = 'ascending') { state = {key, dir}; render(); },
  };
}

// Run fn at most once per `ms`, and once more after the last call: for refetches on events.
export function coalesce(fn, ms = 250) {
  let timer = null, running = false, again = false;
  const run = async () => {
    timer = null;
    if (running) { again = true; return; }
    running = true;
    // API errors are the view's to show; anything else is a bug and is logged.
    try { await fn(); } catch (e) { if (!(e && 'status' in e)) console.error(e); }
    running = false;
    if (again) { again = false; schedule(); }
  };
  const schedule = () => { if (!timer) timer = setTimeout(run, ms); };
  schedule.cancel = () => { if (timer) clearTimeout(timer); timer = null; again = false; };
  return schedule;
}
