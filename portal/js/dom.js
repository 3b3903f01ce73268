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
  enrolled: 'info', uncovered: 'warn', incomplete: 'warn', transient: 'mute', excluded: 'warn',
  failed: 'bad', fail: 'bad', regressed: 'bad', error: 'bad', revoked: 'bad', unreachable: 'bad', cancelled: 'mute',
  skipped: 'mute', none: 'mute', planned: 'mute', measured: 'info', rebooting: 'warn',
  critical: 'bad', warning: 'warn', info: 'info',
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

// Times in UTC, with the zone said: "2026-12-03 14:05:09 UTC" (the command line prints the same
// instant as ...Z); the reader's local time would differ between a customer and the integrator.
export function fmtTime(ms) {
  if (!ms) return '—';
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return '—';
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getUTCFullYear()}-${p(d.getUTCMonth() + 1)}-${p(d.getUTCDate())} ` +
    `${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} UTC`;
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

// A <time> element: absolute time shown (never wrapped mid-value), relative in its title.
export function timeEl(ms) {
  if (!ms) return h('span', {class: 'mute'}, '—');
  return h('time', {datetime: new Date(ms).toISOString(), title: ago(ms), class: 'nowrap'}, fmtTime(ms));
}

// A number for people: `digits` significant digits, never exponent notation (1180, not
// 1.18e+03; 0.000123, not 1.23e-4); integers from 1,000 up in full.
export function fmtNum(v, digits = 3) {
  if (v === null || v === undefined || Number.isNaN(v)) return '—';
  if (typeof v !== 'number') return String(v);
  if (!Number.isFinite(v)) return v > 0 ? '∞' : '−∞';
  const a = Math.abs(v);
  if (a >= 1000) return v.toFixed(0);
  if (a === 0) return '0';
  const decimals = Math.min(20, Math.max(0, digits - 1 - Math.floor(Math.log10(a))));
  const t = v.toFixed(decimals);
  return t.includes('.') ? t.replace(/0+$/, '').replace(/\.$/, '') : t;
}

// A duration in seconds for people: "45 s", "12 min", "2 h 5 min".
export function fmtDuration(sec) {
  const x = Math.max(0, Math.round(Number(sec) || 0));
  if (x < 90) return `${x} s`;
  if (x < 5400) return `${Math.round(x / 60)} min`;
  return `${Math.floor(x / 3600)} h ${Math.round((x % 3600) / 60)} min`;
}

// Who did something, as the API names it ("local:uid 0", "api:NAME (ID)"), for people:
// "local (uid 0)", "NAME (ID, API token)".
export function fmtActor(actor) {
  if (actor === null || actor === undefined || actor === '') return '—';
  const m = /^([a-z]+):(.*)$/.exec(String(actor));
  if (!m) return String(actor);
  const [, kind, rest] = m;
  if (kind === 'local') return `local (${rest})`;
  if (kind === 'api') {
    const t = /^(.*) \((.*)\)$/.exec(rest);
    return t ? `${t[1]} (${t[2]}, API token)` : `${rest} (API token)`;
  }
  return `${rest} (${kind})`;
}

// A failing pair's attribution (docs/campaigns.md, "Attribution") as a badge with its word: a
// node, link or fabric finding is a failure; a transient (failed, retested, passed) is not.
export function attributionBadge(a) {
  if (a === 'transient') {
    return h('span', {class: ['badge', 'tone-mute', 'attr'], dataset: {attr: a}}, 'transient: retested, passed');
  }
  return h('span', {class: ['badge', 'tone-bad', 'attr'], dataset: {attr: a || 'unknown'}}, a ? `${a} failure` : 'failure');
}

// A reason from a verdict for people: arrows as the pages draw them, numbers without exponents,
// and without the test's name where the test is said beside it ("pair-bw: pair-bw: ...").
export function words(reason, test) {
  let r = String(reason ?? '').replace(/ <-> /g, ' ↔ ').replace(/ -> /g, ' → ')
    // C's %g: "1.18e+03" is 1180 (a signed exponent, standing alone: never part of a name).
    .replace(/(^|[\s(=,])([0-9]+(?:\.[0-9]+)?e[+-][0-9]+)(?=$|[\s),;:])/g, (m, pre, num) => pre + fmtNum(Number(num), 3));
  if (test && r.startsWith(test + ': ')) r = r.slice(test.length + 2);
  return r;
}

// A failing (or excluded) node of a verdict ({id, hostname, reasons, rails}) as a list item: its
// name and a word, then its reasons one entry each (never one line joined by ";").
export function failingNodeItem(n, word = 'fail') {
  // "fails with 2 of 2 peers; e.g. <one failing pair>": the example on a line of its own.
  const reason = (r) => {
    const k = String(r).indexOf('; e.g. ');
    return k < 0 ? h('li', {class: 'node-reason'}, words(r))
      : h('li', {class: 'node-reason'}, words(String(r).slice(0, k)), h('span', {class: 'eg'}, 'e.g. ' + words(String(r).slice(k + 7))));
  };
  const reasons = [...(n.reasons || []).map(reason),
    ...(n.rails || []).filter((r) => r.result === 'fail').map((r) => h('li', {class: 'node-reason'},
      `rail ${r.rail}${r.device ? ' (' + r.device + ')' : ''}: `, (r.reasons || []).map((x) => words(x)).join(', ') || 'failed'))];
  return h('li', {class: 'failing-node', dataset: {failingNode: n.id || n.hostname}},
    h('span', {class: 'node-name'}, n.id ? nodeLink(n.id, n.hostname) : n.hostname), ' ', badge(word),
    h('ul', {class: 'reasons node-reasons'}, reasons.length ? reasons : h('li', {class: 'node-reason'}, word)));
}

// A verdict's failing links ({a_host, b_host, rail, test, reasons}) as a list, one entry each.
export function failingLinksList(links) {
  return h('ul', {class: 'reasons'}, links.map((l) => h('li', null,
    `${l.a_host} ↔ ${l.b_host}${l.rail === null || l.rail === undefined ? '' : ', rail ' + l.rail} (${l.test}): `,
    (l.reasons || []).map((r) => words(r, l.test)).join(', '))));
}

// A verdict's failing pairs ([{t: its test, f: the failure}], transients left out by the
// caller) as a sortable table, host names from hostOf(node id).
export function failingPairsTable(pairs, hostOf) {
  return sortableTable({
    caption: 'Failing pairs, by test',
    columns: [
      {key: 'test', label: 'Test', value: (r) => r.t.name, render: (r) => h('span', {class: 'nowrap'}, r.t.name)},
      {key: 'pair', label: 'Pair', value: (r) => hostOf(r.f.a), render: (r) => `${hostOf(r.f.a)} ↔ ${hostOf(r.f.b)}`},
      {key: 'rail', label: 'Rail', render: (r) => (r.f.rail === null || r.f.rail === undefined ? '—' : String(r.f.rail))},
      {key: 'attr', label: 'Attributed to', value: (r) => r.f.attributed, render: (r) => attributionBadge(r.f.attributed)},
      {key: 'reason', label: 'Reason', render: (r) => words(r.f.reason, r.t.name)},
    ],
    rows: pairs,
    rowAttrs: (r) => ({class: 'failing-pair', dataset: {attr: r.f.attributed || ''}}),
  }).el;
}

// Versions a vendor spells two ways ("24.10-1.1.4.0" and "24.10-1.1.4"): the same when their
// numeric parts agree once trailing zero parts are dropped, and their other parts agree.
export function sameVersion(x, y) {
  if (x === y) return true;
  if (typeof x !== 'string' || typeof y !== 'string') return false;
  const parts = (v) => {
    const p = v.trim().replace(/^v/i, '').split(/[.\-_]/).filter((e) => e !== '');
    while (p.length > 1 && /^0+$/.test(p[p.length - 1])) p.pop();
    return p.map((e) => (/^[0-9]+$/.test(e) ? String(Number(e)) : e.toLowerCase()));
  };
  const a = parts(x), b = parts(y);
  return a.length > 0 && a.length === b.length && a.every((e, i) => e === b[i]) && /[0-9]/.test(x);
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
