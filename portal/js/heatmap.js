// A pair heatmap, drawn here rather than with a charting library: nodes x nodes, one cell per
// unordered pair (the lower triangle), coloured on viridis (perceptually uniform, readable with
// the common colour-vision deficiencies and in greyscale) with a legend; failing pairs are
// outlined in black and white (a shape, not a colour), pairs without a value are hatched grey.
// Up to SVG_MAX nodes it is SVG (a <rect> per pair, with labels and a <title> each); above, one
// <canvas> (a 1,024-node campaign is half a million pairs). Either way it is one tab stop: the
// arrow keys move a cursor over the pairs, "n" jumps to the next failing one, and the readout
// below (aria-live) says the pair, its value and the verdict's reason, as hovering does.

import {h, s, fmtNum} from './dom.js';

export const SVG_MAX = 48;

// matplotlib's viridis at 0, 1/9, ..., 1.
const VIRIDIS = [[68, 1, 84], [72, 40, 120], [62, 73, 137], [49, 104, 142], [38, 130, 142],
  [31, 158, 137], [53, 183, 121], [110, 206, 88], [181, 222, 43], [253, 231, 37]];

export function viridis(t) {
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x));
  const f = x - i;
  const c = VIRIDIS[i].map((v, k) => Math.round(v + (VIRIDIS[i + 1][k] - v) * f));
  return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
}

let uid = 0;

function shorten(label, max = 18) {
  return label.length > max ? label.slice(0, max - 1) + '…' : label;
}

// opts: {title, nodes: [{id, label}], cells: [{i, j, value, fail, reason, state}] (i > j: node
// indexes), metric, unit, better: 'lower'|'higher'}
export function heatmap(opts) {
  const {title, nodes, cells, metric, unit = '', better = 'lower'} = opts;
  const n = nodes.length;
  const id = `hm${++uid}`;
  // The scale spans the 2nd to the 98th percentile (with 50 values or more): a few outliers
  // (a bad node's pairs) take its end colour instead of squeezing every other pair into one.
  const vals = cells.map((c) => c.value).filter((v) => typeof v === 'number' && Number.isFinite(v))
    .sort((x, y) => x - y);
  const q = (f) => vals[Math.min(vals.length - 1, Math.max(0, Math.round(f * (vals.length - 1))))];
  const vmin = vals.length ? vals[0] : 0, vmax = vals.length ? vals[vals.length - 1] : 1;
  const min = vals.length >= 50 ? q(0.02) : vmin, max = vals.length >= 50 ? q(0.98) : vmax;
  const norm = (v) => (max > min ? (v - min) / (max - min) : 0.5);
  const colour = (c) => (typeof c.value === 'number' && Number.isFinite(c.value) ? viridis(norm(c.value)) : null);
  const byKey = new Map(cells.map((c) => [`${c.i},${c.j}`, c]));
  const failing = cells.filter((c) => c.fail).sort((a, b) => a.i - b.i || a.j - b.j);

  const readout = h('p', {class: 'readout', id: id + '-readout', 'aria-live': 'polite'},
    failing.length ? `${failing.length} failing pair${failing.length === 1 ? '' : 's'}: focus the map and press n to go through them.`
      : 'Hover a cell, or focus the map and use the arrow keys.');
  const describe = (c) => {
    if (!c) return '';
    const a = nodes[c.i].label, b = nodes[c.j].label;
    const v = typeof c.value === 'number' ? `${metric} ${fmtNum(c.value, 4)}${unit ? ' ' + unit : ''}` : `no ${metric}`;
    const st = c.fail ? `FAIL${c.attributed ? ' (' + c.attributed + ')' : ''}` : c.state === 'done' || !c.state ? 'pass' : c.state;
    return `${a} ↔ ${b}: ${v} · ${st}${c.reason ? ': ' + c.reason : ''}`;
  };
  const show = (c) => {
    readout.textContent = describe(c);
    readout.dataset.pair = c ? `${nodes[c.i].id}|${nodes[c.j].id}` : '';
    readout.dataset.fail = c && c.fail ? 'true' : 'false';
  };

  let cur = failing[0] ? {i: failing[0].i, j: failing[0].j} : {i: 1, j: 0};
  let plot, moveCursor;
  const cellSize = n <= SVG_MAX ? Math.max(12, Math.min(28, Math.floor(560 / Math.max(1, n - 1))))
    : Math.max(1, Math.floor(768 / Math.max(1, n - 1)));

  if (n <= SVG_MAX) {
    const c = cellSize, L = 120;
    const w = L + (n - 1) * c + 4, hgt = (n - 1) * c + L;
    const svg = s('svg', {class: 'heatmap-svg', viewBox: `0 0 ${w} ${hgt}`, width: String(w), height: String(hgt),
      role: 'application', tabindex: '0', 'aria-roledescription': 'heatmap',
      'aria-label': `${title}: ${n} nodes, ${cells.length} pairs. Arrow keys move between pairs, n goes to the next failing pair.`,
      'aria-describedby': id + '-readout'});
    const defs = s('defs', null, s('pattern', {id: id + '-hatch', width: '6', height: '6', patternUnits: 'userSpaceOnUse',
      patternTransform: 'rotate(45)'}, s('rect', {width: '6', height: '6', fill: '#d0d0d0'}),
    s('line', {x1: '0', y1: '0', x2: '0', y2: '6', stroke: '#808080', 'stroke-width': '2'})));
    svg.append(defs);
    for (let i = 1; i < n; i++) {
      const t = s('text', {x: String(L - 6), y: String((i - 1) * c + c / 2), class: 'hm-label', 'text-anchor': 'end',
        'dominant-baseline': 'central'}, shorten(nodes[i].label));
      t.append(s('title', null, nodes[i].label));
      svg.append(t);
    }
    for (let j = 0; j < n - 1; j++) {
      const x = L + j * c + c / 2, y = (n - 1) * c + 6;
      const t = s('text', {x: String(x), y: String(y), class: 'hm-label', 'text-anchor': 'end',
        transform: `rotate(-60 ${x} ${y})`}, shorten(nodes[j].label));
      t.append(s('title', null, nodes[j].label));
      svg.append(t);
    }
    const g = s('g', {class: 'cells'});
    for (let i = 1; i < n; i++) {
      for (let j = 0; j < i; j++) {
        const cell = byKey.get(`${i},${j}`);
        if (!cell) continue;
        const fill = colour(cell);
        const r = s('rect', {x: String(L + j * c), y: String((i - 1) * c), width: String(c - 1), height: String(c - 1),
          fill: fill || `url(#${id}-hatch)`, class: ['cell', cell.fail ? 'fail' : null, fill ? null : 'novalue'],
          dataset: {i: String(i), j: String(j), a: nodes[i].id, b: nodes[j].id, fail: String(Boolean(cell.fail))}});
        r.append(s('title', null, describe(cell)));
        g.append(r);
      }
    }
    svg.append(g);
    // Failing pairs: a black outline with a white one inside, readable on any colour.
    for (const f of failing) {
      const x = L + f.j * c, y = (f.i - 1) * c;
      svg.append(s('rect', {x: String(x + 1), y: String(y + 1), width: String(c - 3), height: String(c - 3), fill: 'none',
        stroke: '#000', 'stroke-width': '2.5', class: 'fail-mark', 'pointer-events': 'none'}),
      s('rect', {x: String(x + 2.5), y: String(y + 2.5), width: String(Math.max(0, c - 6)), height: String(Math.max(0, c - 6)),
        fill: 'none', stroke: '#fff', 'stroke-width': '1', 'pointer-events': 'none'}));
    }
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
      const p = {i: Number(t.dataset.i), j: Number(t.dataset.j)};
      show(byKey.get(`${p.i},${p.j}`));
    });
    plot = svg;
  } else {
    const c = cellSize;
    const side = (n - 1) * c;
    const dpr = window.devicePixelRatio || 1;
    const canvas = h('canvas', {class: 'heatmap-canvas', width: String(Math.round(side * dpr)), height: String(Math.round(side * dpr)),
      tabindex: '0', role: 'application', 'aria-roledescription': 'heatmap',
      'aria-label': `${title}: ${n} nodes in host-name order, ${cells.length} pairs. Arrow keys move between pairs, n goes to the next failing pair.`,
      'aria-describedby': id + '-readout'});
    canvas.style.width = side + 'px';
    canvas.style.height = side + 'px';
    const g2 = canvas.getContext('2d');
    g2.scale(dpr, dpr);
    g2.fillStyle = '#ffffff';
    g2.fillRect(0, 0, side, side);
    const gap = c >= 4 ? 1 : 0;
    for (const cell of cells) {
      const fill = colour(cell);
      g2.fillStyle = fill || '#c8c8c8';
      g2.fillRect(cell.j * c, (cell.i - 1) * c, c - gap, c - gap);
    }
    // Failing pairs: a black ring around the cell (its colour redrawn over it), and inside a
    // white one where cells are big enough to keep their colour visible around it.
    g2.lineWidth = 1;
    for (const f of failing) {
      g2.strokeStyle = '#000';
      g2.strokeRect(f.j * c - 0.5, (f.i - 1) * c - 0.5, c + 1, c + 1);
    }
    for (const f of failing) {
      g2.fillStyle = colour(f) || '#c8c8c8';
      g2.fillRect(f.j * c, (f.i - 1) * c, c - gap, c - gap);
      if (c >= 8) {
        g2.strokeStyle = '#fff';
        g2.strokeRect(f.j * c + 1.5, (f.i - 1) * c + 1.5, c - gap - 3, c - gap - 3);
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

  // The legend: the scale with its ends, which way is better, and the two marks.
  const lg = `${id}-grad`;
  const legend = s('svg', {class: 'legend', viewBox: '0 0 420 44', width: '420', height: '44', role: 'img',
    'aria-label': `Colour scale: ${fmtNum(min, 4)} to ${fmtNum(max, 4)} ${unit} (values from ${fmtNum(vmin, 4)} to ${fmtNum(vmax, 4)}), ${better} is better; outlined: failing; hatched: no value`},
  s('defs', null, s('linearGradient', {id: lg, x1: '0', x2: '1', y1: '0', y2: '0'},
    VIRIDIS.map((v, k) => s('stop', {offset: String(k / (VIRIDIS.length - 1)), 'stop-color': `rgb(${v.join(',')})`})))),
  s('rect', {x: '0', y: '0', width: '200', height: '14', fill: `url(#${lg})`}),
  s('text', {x: '0', y: '30', class: 'hm-legend'}, `${min > vmin ? '≤ ' : ''}${fmtNum(min, 4)} ${unit}`),
  s('text', {x: '200', y: '30', class: 'hm-legend', 'text-anchor': 'end'}, `${max < vmax ? '≥ ' : ''}${fmtNum(max, 4)} ${unit}`),
  s('text', {x: '100', y: '42', class: 'hm-legend', 'text-anchor': 'middle'}, `${better} is better`),
  s('rect', {x: '222', y: '1', width: '12', height: '12', fill: '#888', stroke: '#000', 'stroke-width': '2.5'}),
  s('text', {x: '240', y: '12', class: 'hm-legend'}, 'failing'),
  s('rect', {x: '300', y: '1', width: '12', height: '12', fill: '#c8c8c8'}),
  s('text', {x: '318', y: '12', class: 'hm-legend'}, 'no value'));

  return h('figure', {class: 'heatmap', dataset: {nodes: String(n), pairs: String(cells.length),
    failing: String(failing.length), mode: n <= SVG_MAX ? 'svg' : 'canvas'}},
  h('figcaption', null, title), h('div', {class: 'heatmap-scroll'}, plot), legend, readout);
}
