// A pair heatmap, drawn here rather than with a charting library, to the one design the portal
// and the signed HTML share (docs/portal.md, "Heatmaps"): the lower triangle, one cell per
// unordered pair, nodes in natural order on both axes; colour is the margin to the rule (viridis,
// t = 0 fails, t = 1 a 50 % margin or wider; without a rule, the value on [0, max]); failures are
// marked without colour (a white-and-black double outline and a ✕, FAIL where the cell is wide
// enough); a transient (retested, passed) is no failure: a neutral ↻ only; values printed in cells
// 34 px wide or more; a pair without a value is hatched and says "no value". Up to SVG_MAX nodes
// it is SVG (a <rect> per pair, with labels and a <title> each); above, one <canvas> (a
// 1,024-node campaign is half a million pairs). Either way it is one tab stop: the arrow keys
// move a cursor over the pairs, "n" jumps to the next failing one, and the readout below
// (aria-live) says the pair, its value and the verdict's reason, as pointing at a cell does.

import {h, s, fmtNum, naturalCompare} from './dom.js';

export const SVG_MAX = 48;
// Cells at least this wide print their value; FAIL_WORD_MIN wide say FAIL beside the ✕.
export const VALUE_MIN = 34;
const FAIL_WORD_MIN = 48;
// Passing cells take the palette from PASS_MIN up (PASS_MIN + (1 - PASS_MIN) x their place on
// the scale), failing ones its dark end: every pass, however thin its margin, is at least 3:1
// from every fail in luminance (the signed HTML does the same: controller/signoff/html.c).
export const PASS_MIN = 0.45;

// matplotlib's viridis at 0, 1/9, ..., 1.
const VIRIDIS = [[68, 1, 84], [72, 40, 120], [62, 73, 137], [49, 104, 142], [38, 130, 142],
  [31, 158, 137], [53, 183, 121], [110, 206, 88], [181, 222, 43], [253, 231, 37]];

function viridisRgb(t) {
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x));
  const f = x - i;
  return VIRIDIS[i].map((v, k) => Math.round(v + (VIRIDIS[i + 1][k] - v) * f));
}

export function viridis(t) {
  const c = viridisRgb(t);
  return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
}

// WCAG relative luminance of an [r, g, b] colour.
export function luminance(rgb) {
  const lin = (v) => { const c = v / 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * lin(rgb[0]) + 0.7152 * lin(rgb[1]) + 0.0722 * lin(rgb[2]);
}

// 256 steps of the palette, with the text colour each needs: a cell is coloured once per draw.
const PALETTE = Array.from({length: 256}, (_, k) => {
  const rgb = viridisRgb(k / 255);
  return {fill: `rgb(${rgb[0]}, ${rgb[1]}, ${rgb[2]})`, ink: luminance(rgb) > 0.18 ? '#000' : '#fff'};
});
const paletteAt = (t) => PALETTE[Math.round(Math.min(1, Math.max(0, t)) * 255)];

// The colour position of a value: its margin to the rule's threshold over 50 %, or, without a
// rule, the value on [0, max] anchored at zero. Returns {tOf(v), margin(v) or null}.
export function colourScale({rule, better, max}) {
  const T = rule && Number.isFinite(rule.threshold) && rule.threshold !== 0 ? rule.threshold : null;
  const lower = better === 'lower';
  if (T !== null) {
    const margin = (v) => (lower ? (T - v) / T : (v - T) / T);
    return {T, margin, tOf: (v) => Math.min(1, Math.max(0, margin(v) / 0.5))};
  }
  const m = max > 0 ? max : 1;
  return {T: null, margin: null, tOf: (v) => Math.min(1, Math.max(0, lower ? 1 - v / m : v / m))};
}

const OPS = {'<=': '≤', '>=': '≥', '<': '<', '>': '>', '==': '='};

let uid = 0;

function shorten(label, max = 18) {
  return label.length > max ? label.slice(0, max - 1) + '…' : label;
}

// opts: {title, nodes: [{id, label}], cells: [{i, j, value, fail, reason, attributed, state}]
// (i, j: node indexes), metric, unit, better: 'lower'|'higher', rule: {op, threshold,
// reference, relative, value} or null}. Nodes are drawn in natural order of their labels,
// whatever order they come in. A cell attributed `transient` is never a failure.
export function heatmap(opts) {
  const {title, metric, unit = '', better = 'lower', rule = null} = opts;
  const order = opts.nodes.map((nd, k) => k).sort((x, y) => naturalCompare(opts.nodes[x].label, opts.nodes[y].label) || x - y);
  const nodes = order.map((k) => opts.nodes[k]);
  const pos = new Array(order.length);
  order.forEach((k, p) => { pos[k] = p; });
  const n = nodes.length;
  const cells = [];
  for (const c0 of opts.cells) {
    const a = pos[c0.i], b = pos[c0.j];
    if (a === undefined || b === undefined || a === b) continue;
    const transient = c0.attributed === 'transient';
    const fail = Boolean(c0.fail) && !transient;
    cells.push({...c0, i: Math.max(a, b), j: Math.min(a, b), fail, transient});
  }
  const id = `hm${++uid}`;
  const finite = (v) => typeof v === 'number' && Number.isFinite(v);
  let vmax = 0;
  for (const c of cells) if (finite(c.value) && c.value > vmax) vmax = c.value;
  const scale = colourScale({rule, better, max: vmax});
  for (const c of cells) {
    c.t = !finite(c.value) ? null : c.fail ? 0 : PASS_MIN + (1 - PASS_MIN) * scale.tOf(c.value);
  }
  const u = unit ? ' ' + unit : '';
  const byKey = new Map(cells.map((c) => [`${c.i},${c.j}`, c]));
  const failing = cells.filter((c) => c.fail).sort((a, b) => a.i - b.i || a.j - b.j);
  const transients = cells.filter((c) => c.transient).length;

  const readout = h('p', {class: 'readout', id: id + '-readout', 'aria-live': 'polite'},
    failing.length ? `${failing.length} failing pair${failing.length === 1 ? '' : 's'}: focus the map and press n to go through them.`
      : 'Point at a cell, or focus the map and use the arrow keys.');
  const describe = (c) => {
    if (!c) return '';
    const a = nodes[c.i].label, b = nodes[c.j].label;
    const v = finite(c.value) ? `${metric} ${fmtNum(c.value, 4)}${u}` : `no value (${metric} not measured)`;
    let st;
    if (c.fail) st = `FAIL${c.attributed ? ' (' + c.attributed + ')' : ''}`;
    else if (c.transient) st = 'transient: retested, passed';
    else if (c.state && c.state !== 'done') st = c.state;
    else if (scale.margin && finite(c.value)) st = `pass, ${fmtNum(scale.margin(c.value) * 100, 2)} % margin to the rule`;
    else st = 'pass';
    return `${a} ↔ ${b}: ${v} · ${st}${c.reason ? ': ' + c.reason : ''}`;
  };
  const show = (c) => {
    readout.textContent = describe(c);
    readout.dataset.pair = c ? `${nodes[c.i].id}|${nodes[c.j].id}` : '';
    readout.dataset.fail = c && c.fail ? 'true' : 'false';
  };

  let cur = failing[0] ? {i: failing[0].i, j: failing[0].j} : {i: 1, j: 0};
  let plot, moveCursor;
  const cellSize = n <= SVG_MAX ? Math.max(12, Math.min(56, Math.floor(560 / Math.max(1, n - 1))))
    : Math.max(1, Math.floor(768 / Math.max(1, n - 1)));

  if (n <= SVG_MAX) {
    // Room for the labels: the longest (shortened) one, about 6.2 px a character at 11 px, beside
    // the rows and, turned by 60°, below the columns.
    const longest = nodes.reduce((m, nd) => Math.max(m, shorten(nd.label).length), 1) * 6.2;
    const c = cellSize, L = Math.ceil(Math.max(40, longest + 12)), B = Math.ceil(longest * 0.87 + 18);
    const w = L + (n - 1) * c + 4, hgt = (n - 1) * c + B;
    const svg = s('svg', {class: 'heatmap-svg', viewBox: `0 0 ${w} ${hgt}`, width: String(w), height: String(hgt),
      role: 'application', tabindex: '0', 'aria-roledescription': 'heatmap',
      'aria-label': `${title}: ${n} nodes, ${cells.length} pairs, ${failing.length} failing. Arrow keys move between pairs, n goes to the next failing pair.`,
      'aria-describedby': id + '-readout'});
    svg.append(s('defs', null, s('pattern', {id: id + '-hatch', width: '6', height: '6', patternUnits: 'userSpaceOnUse',
      patternTransform: 'rotate(45)'}, s('rect', {width: '6', height: '6', fill: '#d0d0d0'}),
    s('line', {x1: '0', y1: '0', x2: '0', y2: '6', stroke: '#808080', 'stroke-width': '2'}))));
    for (let i = 1; i < n; i++) {
      const t = s('text', {x: String(L - 6), y: String((i - 1) * c + c / 2), class: 'hm-label', 'text-anchor': 'end',
        'dominant-baseline': 'central', dataset: {row: nodes[i].id}}, shorten(nodes[i].label));
      t.append(s('title', null, nodes[i].label));
      svg.append(t);
    }
    for (let j = 0; j < n - 1; j++) {
      const x = L + j * c + c / 2, y = (n - 1) * c + 6;
      const t = s('text', {x: String(x), y: String(y), class: 'hm-label', 'text-anchor': 'end',
        transform: `rotate(-60 ${x} ${y})`, dataset: {col: nodes[j].id}}, shorten(nodes[j].label));
      t.append(s('title', null, nodes[j].label));
      svg.append(t);
    }
    const g = s('g', {class: 'cells'});
    const marks = s('g', {class: 'marks', 'pointer-events': 'none'});
    const wide = c >= VALUE_MIN;
    for (let i = 1; i < n; i++) {
      for (let j = 0; j < i; j++) {
        const cell = byKey.get(`${i},${j}`);
        if (!cell) continue;
        const p = cell.t === null ? null : paletteAt(cell.t);
        const x = L + j * c, y = (i - 1) * c;
        const r = s('rect', {x: String(x), y: String(y), width: String(c - 1), height: String(c - 1),
          fill: p ? p.fill : `url(#${id}-hatch)`,
          class: ['cell', cell.fail ? 'fail' : null, p ? null : 'novalue', cell.transient ? 'transient' : null],
          dataset: {i: String(i), j: String(j), a: nodes[i].id, b: nodes[j].id, fail: String(cell.fail),
            t: cell.t === null ? '' : cell.t.toFixed(3)}});
        r.append(s('title', null, describe(cell)));
        g.append(r);
        const cx = x + (c - 1) / 2, cy = y + (c - 1) / 2, ink = p ? p.ink : '#000';
        if (cell.fail) {
          // Black outside, white inside: one of the two shows on any fill; and a glyph.
          marks.append(s('rect', {x: String(x + 0.75), y: String(y + 0.75), width: String(c - 2.5), height: String(c - 2.5),
            fill: 'none', stroke: '#000', 'stroke-width': '1.5', class: 'fail-mark'}),
          s('rect', {x: String(x + 3), y: String(y + 3), width: String(Math.max(0, c - 7)), height: String(Math.max(0, c - 7)),
            fill: 'none', stroke: '#fff', 'stroke-width': '3', class: 'fail-mark-inner'}));
          const word = c >= FAIL_WORD_MIN ? '✕ FAIL' : '✕';
          marks.append(s('text', {x: String(cx), y: String(wide && finite(cell.value) ? cy - 7 : cy), class: 'fail-glyph',
            'text-anchor': 'middle', 'dominant-baseline': 'central', fill: ink,
            'font-size': String(wide ? 11 : Math.max(9, Math.floor(c * 0.6)))}, word));
        } else if (cell.transient && c >= 20) {
          marks.append(s('text', {x: String(x + c - 4), y: String(y + 3), class: 'transient-glyph', 'text-anchor': 'end',
            'dominant-baseline': 'hanging', fill: ink, 'font-size': '10'}, '↻'));
        }
        if (wide && finite(cell.value)) {
          marks.append(s('text', {x: String(cx), y: String(cell.fail ? cy + 7 : cy), class: 'hm-value', 'text-anchor': 'middle',
            'dominant-baseline': 'central', fill: ink}, fmtNum(cell.value, 3)));
        } else if (!p && c >= FAIL_WORD_MIN) {
          marks.append(s('text', {x: String(cx), y: String(cy), class: 'hm-value hm-novalue', 'text-anchor': 'middle',
            'dominant-baseline': 'central', fill: '#000'}, 'no value'));
        }
      }
    }
    svg.append(g, marks);
    const cursor = s('rect', {class: 'hm-cursor', width: String(c + 1), height: String(c + 1), fill: 'none',
      'pointer-events': 'none', visibility: 'hidden'});
    svg.append(cursor);
    moveCursor = (p, visible) => {
      cursor.setAttribute('x', String(L + p.j * c - 1));
      cursor.setAttribute('y', String((p.i - 1) * c - 1));
      cursor.setAttribute('visibility', visible ? 'visible' : 'hidden');
    };
    svg.addEventListener('mouseover', (ev) => {
      const t = ev.target;
      if (!(t instanceof SVGRectElement) || !t.classList.contains('cell')) return;
      show(byKey.get(`${t.dataset.i},${t.dataset.j}`));
    });
    plot = svg;
  } else {
    const c = cellSize;
    const side = (n - 1) * c;
    const dpr = window.devicePixelRatio || 1;
    const canvas = h('canvas', {class: 'heatmap-canvas', width: String(Math.round(side * dpr)), height: String(Math.round(side * dpr)),
      tabindex: '0', role: 'application', 'aria-roledescription': 'heatmap',
      'aria-label': `${title}: ${n} nodes in natural host-name order, ${cells.length} pairs, ${failing.length} failing. Arrow keys move between pairs, n goes to the next failing pair.`,
      'aria-describedby': id + '-readout'});
    canvas.style.width = side + 'px';
    canvas.style.height = side + 'px';
    const g2 = canvas.getContext('2d');
    g2.scale(dpr, dpr);
    g2.fillStyle = '#ffffff';
    g2.fillRect(0, 0, side, side);
    const gap = c >= 4 ? 1 : 0;
    for (const cell of cells) {
      g2.fillStyle = cell.t === null ? '#c8c8c8' : paletteAt(cell.t).fill;
      g2.fillRect(cell.j * c, (cell.i - 1) * c, c - gap, c - gap);
    }
    // Failing pairs: a black ring around the cell (its colour redrawn over it), and inside a
    // white one and a ✕ where cells are big enough.
    g2.lineWidth = 1;
    g2.strokeStyle = '#000';
    for (const f of failing) g2.strokeRect(f.j * c - 0.5, (f.i - 1) * c - 0.5, c + 1, c + 1);
    g2.textAlign = 'center';
    g2.textBaseline = 'middle';
    g2.font = `${Math.max(8, Math.floor(c * 0.6))}px sans-serif`;
    for (const f of failing) {
      g2.fillStyle = f.t === null ? '#c8c8c8' : paletteAt(f.t).fill;
      g2.fillRect(f.j * c, (f.i - 1) * c, c - gap, c - gap);
      if (c >= 8) {
        g2.strokeStyle = '#fff';
        g2.strokeRect(f.j * c + 1.5, (f.i - 1) * c + 1.5, c - gap - 3, c - gap - 3);
      }
      if (c >= 12) {
        g2.fillStyle = '#fff';
        g2.fillText('✕', f.j * c + c / 2, (f.i - 1) * c + c / 2);
      }
    }
    const cursor = h('div', {class: 'hm-cursor-box', hidden: true});
    moveCursor = (p, visible) => {
      cursor.hidden = !visible;
      cursor.style.left = (p.j * c - 2) + 'px';
      cursor.style.top = ((p.i - 1) * c - 2) + 'px';
      cursor.style.width = (c + 2) + 'px';
      cursor.style.height = (c + 2) + 'px';
    };
    canvas.addEventListener('mousemove', (ev) => {
      const r = canvas.getBoundingClientRect();
      const i = Math.floor((ev.clientY - r.top) / c) + 1, j = Math.floor((ev.clientX - r.left) / c);
      if (j >= 0 && j < i && i < n) show(byKey.get(`${i},${j}`));
    });
    plot = h('div', {class: 'heatmap-canvas-wrap'}, canvas, cursor);
    plot.focusTarget = canvas;
  }

  const focusEl = plot.focusTarget || plot;
  focusEl.addEventListener('focus', () => { moveCursor(cur, true); show(byKey.get(`${cur.i},${cur.j}`)); });
  focusEl.addEventListener('blur', () => moveCursor(cur, false));
  focusEl.addEventListener('keydown', (ev) => {
    let {i, j} = cur;
    if (ev.key === 'ArrowUp') i = Math.max(j + 1, i - 1);
    else if (ev.key === 'ArrowDown') i = Math.min(n - 1, i + 1);
    else if (ev.key === 'ArrowLeft') j = Math.max(0, j - 1);
    else if (ev.key === 'ArrowRight') j = Math.min(i - 1, j + 1);
    else if (ev.key === 'Home') { i = 1; j = 0; }
    else if (ev.key === 'n' || ev.key === 'N') {
      if (!failing.length) return;
      const k = failing.findIndex((f) => f.i > cur.i || (f.i === cur.i && f.j > cur.j));
      const f = failing[k < 0 ? 0 : k];
      i = f.i; j = f.j;
    } else return;
    ev.preventDefault();
    cur = {i, j};
    moveCursor(cur, true);
    show(byKey.get(`${i},${j}`));
  });

  return h('figure', {class: 'heatmap', dataset: {nodes: String(n), pairs: String(cells.length),
    failing: String(failing.length), transient: String(transients), mode: n <= SVG_MAX ? 'svg' : 'canvas',
    scale: scale.T === null ? 'max' : 'rule', threshold: scale.T === null ? '' : String(scale.T)}},
  h('figcaption', null, title), h('div', {class: 'heatmap-scroll'}, plot),
  legend({id, scale, rule, better, unit: u, vmax, transients}), readout);
}

// The legend, tied to the rule: a bar from "fails" (t = 0) to a 50 % margin (t = 1) with ticks
// at the threshold and, for a relative rule, at its reference; without a rule, 0 to max. Then
// the marks: fail (✕), no value, transient (↻) when there is one.
function legend({id, scale, rule, better, unit, vmax, transients}) {
  const lg = `${id}-grad`, X0 = 44, X1 = 344, lower = better === 'lower';
  const parts = [];
  const stops = (from) => Array.from({length: 11}, (_, k) => {
    const t = from + (1 - from) * k / 10;
    return s('stop', {offset: String(k / 10), 'stop-color': viridis(t)});
  });
  let label;
  if (scale.T !== null) {
    const T = scale.T;
    const at50 = lower ? T * 0.5 : T * 1.5;
    const xOf = (v) => X0 + scale.tOf(v) * (X1 - X0);
    parts.push(s('defs', null, s('linearGradient', {id: lg, x1: '0', x2: '1', y1: '0', y2: '0'}, stops(PASS_MIN))),
      s('rect', {x: '0', y: '16', width: String(X0 - 2), height: '16', fill: viridis(0)}),
      s('text', {x: String((X0 - 2) / 2), y: '24', class: 'hm-legend hm-legend-inv', 'text-anchor': 'middle',
        'dominant-baseline': 'central'}, '✕ fails'),
      s('rect', {x: String(X0), y: '16', width: String(X1 - X0), height: '16', fill: `url(#${lg})`}),
      s('line', {x1: String(X0 - 1), x2: String(X0 - 1), y1: '14', y2: '38', stroke: '#000', 'stroke-width': '1.5'}),
      s('text', {x: String(X0 - 1), y: '48', class: 'hm-legend hm-tick', 'text-anchor': 'start', dataset: {tick: 'threshold'}},
        `${OPS[rule.op] || rule.op || ''} ${fmtNum(T, 4)}${unit}`.trim()),
      s('text', {x: String(X1), y: '48', class: 'hm-legend', 'text-anchor': 'end'}, `${fmtNum(at50, 4)}${unit}: ≥ 50 % margin`));
    if (Number.isFinite(rule.reference)) {
      const x = xOf(rule.reference);
      parts.push(s('line', {x1: String(x), x2: String(x), y1: '10', y2: '32', stroke: '#000', 'stroke-width': '1', 'stroke-dasharray': '2 1'}),
        s('text', {x: String(x), y: '8', class: 'hm-legend hm-tick', 'text-anchor': x > X1 - 60 ? 'end' : x < X0 + 40 ? 'start' : 'middle',
          dataset: {tick: 'reference'}}, `${rule.relative || 'reference'} ${fmtNum(rule.reference, 4)}${unit}`));
    }
    label = `Colour: the margin to the rule, threshold ${fmtNum(T, 4)}${unit}; the darkest colour fails, the brightest is a 50 % margin or more.`;
  } else {
    parts.push(s('defs', null, s('linearGradient', {id: lg, x1: '0', x2: '1', y1: '0', y2: '0'}, stops(0))),
      s('rect', {x: String(X0), y: '16', width: String(X1 - X0), height: '16', fill: `url(#${lg})`}),
      s('text', {x: String(X0), y: '48', class: 'hm-legend', 'text-anchor': 'start'}, lower ? `max ${fmtNum(vmax, 4)}${unit}` : `0${unit}`),
      s('text', {x: String(X1), y: '48', class: 'hm-legend', 'text-anchor': 'end'}, lower ? `0${unit}` : `max ${fmtNum(vmax, 4)}${unit}`),
      s('text', {x: String((X0 + X1) / 2), y: '8', class: 'hm-legend', 'text-anchor': 'middle'}, 'no rule: 0 to max'));
    label = `Colour: no rule, the value from 0 to the max ${fmtNum(vmax, 4)}${unit}.`;
  }
  parts.push(s('text', {x: String(X0 + (X1 - X0) / 2), y: '62', class: 'hm-legend mute-fill', 'text-anchor': 'middle'},
    `${lower ? 'lower' : 'higher'} is better`));
  // The marks, at the right.
  let x = X1 + 18;
  parts.push(s('rect', {x: String(x), y: '12', width: '20', height: '20', fill: viridis(0)}),
    s('rect', {x: String(x + 0.75), y: '12.75', width: '18.5', height: '18.5', fill: 'none', stroke: '#000', 'stroke-width': '1.5'}),
    s('rect', {x: String(x + 3), y: '15', width: '14', height: '14', fill: 'none', stroke: '#fff', 'stroke-width': '3'}),
    s('text', {x: String(x + 10), y: '22', fill: '#fff', 'font-size': '10', 'text-anchor': 'middle', 'dominant-baseline': 'central'}, '✕'),
    s('text', {x: String(x + 26), y: '22', class: 'hm-legend', 'dominant-baseline': 'central'}, 'fail (✕)'));
  x += 82;
  parts.push(s('pattern', {id: id + '-lhatch', width: '6', height: '6', patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)'},
    s('rect', {width: '6', height: '6', fill: '#d0d0d0'}), s('line', {x1: '0', y1: '0', x2: '0', y2: '6', stroke: '#808080', 'stroke-width': '2'})),
  s('rect', {x: String(x), y: '12', width: '20', height: '20', fill: `url(#${id}-lhatch)`}),
  s('text', {x: String(x + 26), y: '22', class: 'hm-legend', 'dominant-baseline': 'central'}, 'no value (not measured)'));
  let W = x + 175;
  if (transients) {
    x += 175;
    parts.push(s('rect', {x: String(x), y: '12', width: '20', height: '20', fill: viridis(0.6)}),
      s('text', {x: String(x + 10), y: '22', 'font-size': '11', 'text-anchor': 'middle', 'dominant-baseline': 'central'}, '↻'),
      s('text', {x: String(x + 26), y: '22', class: 'hm-legend', 'dominant-baseline': 'central'}, 'transient (↻): retested, passed'));
    W = x + 200;
  }
  return s('svg', {class: 'legend', viewBox: `0 0 ${W} 66`, width: String(W), height: '66', role: 'img',
    'aria-label': `${label} Marked ✕ with a double outline: failing. Hatched: no value (not measured).` +
      (transients ? ' ↻: transient, retested and passed, not a failure.' : '')}, ...parts);
}
