// Nodes: the fleet as a sortable, filterable table (state, host name, HCA ports active/total and
// their rate, GPUs, driver versions, last seen, sign-off drift), and a node's page with its facts
// (HCAs and ports, GPUs, PCIe links, versions), its deployments and its campaign results.
// Everything here was reported by the node: text only.

import {h, clear, fill, badge, timeEl, ago, nodeLink, depLink, campLink, soLink, sortableTable, coalesce,
        notice, section, kv, naturalCompare, fmtNum} from '../dom.js';

// The columns' values from a node's facts (or, without facts, from its one-line summary).
export function derive(n) {
  const f = n.facts || null;
  const d = {ports: null, active: null, hcas: null, rateMin: null, rateMax: null, gpus: null,
    gpuModel: null, driver: null, ofed: null, kernel: null, os: null};
  if (f) {
    const devs = (f.rdma && Array.isArray(f.rdma.devices)) ? f.rdma.devices : [];
    d.hcas = devs.length;
    d.ports = 0;
    d.active = 0;
    for (const dev of devs) {
      for (const p of dev.ports || []) {
        d.ports++;
        if (p.state_num !== 4) continue;
        d.active++;
        if (typeof p.rate_gbps === 'number') {
          d.rateMin = d.rateMin === null ? p.rate_gbps : Math.min(d.rateMin, p.rate_gbps);
          d.rateMax = d.rateMax === null ? p.rate_gbps : Math.max(d.rateMax, p.rate_gbps);
        }
      }
    }
    if (Array.isArray(f.gpus)) {
      d.gpus = f.gpus.length;
      d.gpuModel = f.gpus.length ? f.gpus[0].model : null;
    }
    d.driver = (f.nvidia_driver && f.nvidia_driver.version) || null;
    d.ofed = (f.ofed && f.ofed.version) || null;
    d.kernel = (f.kernel && f.kernel.release) || null;
    d.os = (f.os && (f.os.pretty_name || f.os.name)) || null;
  } else if (typeof n.summary === 'string') {
    // "Debian 12 | 6.1.0 | 8 cpu/2 numa | 2015 GiB | 8 HCA 7/8 active IB 200-400G | 8 GPU H200"
    const m = /(\d+) HCA (\d+)\/(\d+) active(?: \S+ (\d+)(?:-(\d+))?G)?/.exec(n.summary);
    if (m) {
      d.hcas = Number(m[1]); d.active = Number(m[2]); d.ports = Number(m[3]);
      if (m[4]) { d.rateMin = Number(m[4]); d.rateMax = Number(m[5] || m[4]); }
    }
    const g = /(\d+) GPU ([^|]*)/.exec(n.summary);
    if (g) { d.gpus = Number(g[1]); d.gpuModel = g[2].trim(); }
  }
  return d;
}

function rateText(d) {
  if (d.rateMin === null) return null;
  return d.rateMin === d.rateMax ? `${d.rateMin}G` : `${d.rateMin}–${d.rateMax}G`;
}

// A node's health (the controller's, docs/rest-api.md "Node health") as a word, an icon and a
// colour: never colour alone. "current" below is the sign-off's coverage, not health.
export const HEALTH = {
  failing: {icon: '✕', tone: 'bad', rank: 0},
  degraded: {icon: '!', tone: 'warn', rank: 1},
  unknown: {icon: '?', tone: 'mute', rank: 2},
  healthy: {icon: '✓', tone: 'good', rank: 3},
};
export function healthOf(n) {
  const hl = n.health || {state: 'unknown', reasons: []};
  return HEALTH[hl.state] ? hl : {state: 'unknown', reasons: hl.reasons || []};
}
export function healthBadge(hl) {
  const k = HEALTH[hl.state];
  return h('span', {class: `badge health tone-${k.tone} health-${hl.state}`, dataset: {health: hl.state}},
    h('span', {class: 'icon', 'aria-hidden': 'true'}, k.icon), ' ' + hl.state);
}
// The table's cell: one element, built without the general h() (a 1,000-row table draws it
// 1,000 times): the icon as text, the word, the classes the badge has.
function healthCellBadge(hl) {
  const k = HEALTH[hl.state];
  const el = document.createElement('span');
  el.className = `badge health tone-${k.tone} health-${hl.state}`;
  el.dataset.health = hl.state;
  el.textContent = `${k.icon} ${hl.state}`;
  return el;
}
// What is wrong, in a few words a problem ("sign-off failed · mlx5_3 DOWN · mlx5_5 slow"); the
// reasons in full are the cell's title and the node page's first section.
export function healthGist(hl) {
  const words = [];
  const seen = new Set();
  for (const p of hl.problems || []) {
    const w = p.source === 'signoff' ? (/^excluded/.test(p.text) ? 'excluded from sign-off' : 'sign-off failed')
      : p.source === 'regression' ? (p.severity === 'failing' ? 'regressed' : 'regression (informs)')
      : p.source === 'deployment' ? 'deployment failed'
      : p.source === 'port' ? `${p.device} ${String(p.text).replace(/^.* is /, '')}`
      : p.source === 'rate' ? `${p.device} slow`
      : p.source === 'pcie' ? `${p.device} PCIe narrow`
      : String(p.text).replace(/:.*$/, '');
    if (!seen.has(w)) { seen.add(w); words.push(w); }
  }
  return words.join(' · ');
}
// The cell: the badge, and the gist beneath it unless the node's state (its own column) is all
// there is to say (an offline node with nothing else known: most of a large fleet at times).
function healthCell(n) {
  const hl = healthOf(n);
  const problems = hl.problems || [];
  if (!problems.some((p) => p.source !== 'node')) return healthCellBadge(hl);
  return h('span', {title: (hl.reasons || []).join('\n')}, healthCellBadge(hl), h('span', {class: 'health-why'}, healthGist(hl)));
}

// The sign-off's coverage: current means "still described by the newest sign-off", not "OK".
const COVERAGE = {current: 'covered', stale: 'stale', uncovered: 'not covered', none: 'no sign-off'};
function driftCell(n) {
  const so = n.signoff || {state: 'none'};
  if (so.state === 'current') return h('span', {class: 'badge tone-info coverage', title: 'Covered by the cluster\'s newest sign-off (this says nothing of its health)'}, 'covered');
  if (so.state !== 'stale') return badge(COVERAGE[so.state] ? so.state : 'none');
  return h('span', {title: (so.reasons || []).join('\n')}, badge('stale'), ` ${so.reasons.length} change${so.reasons.length === 1 ? '' : 's'}`);
}

export async function nodesView(ctx) {
  const {api} = ctx;
  ctx.title('Nodes');
  const status = h('div');
  const count = h('p', {class: 'count', role: 'status'});
  const text = h('input', {id: 'f-text', type: 'search', placeholder: 'host name or id', autocomplete: 'off'});
  const stateSel = h('select', {id: 'f-state'}, h('option', {value: ''}, 'any state'),
    ['online', 'offline', 'enrolled', 'revoked'].map((s) => h('option', {value: s}, s)));
  const clusterSel = h('select', {id: 'f-cluster'}, h('option', {value: ''}, 'any cluster'));
  const healthSel = h('select', {id: 'f-health'}, h('option', {value: ''}, 'any health'),
    h('option', {value: 'problems'}, 'not healthy'),
    Object.keys(HEALTH).map((s) => h('option', {value: s}, s)));
  const driftSel = h('select', {id: 'f-drift'}, h('option', {value: ''}, 'any sign-off coverage'),
    Object.entries(COVERAGE).map(([v, t]) => h('option', {value: v}, v === 'current' ? 'covered by the newest sign-off' : t)));
  const filters = h('form', {class: 'filters', role: 'search', 'aria-label': 'Filter nodes', on: {submit: (e) => e.preventDefault()}},
    h('span', {class: 'f'}, h('label', {for: 'f-text'}, 'Host name'), text),
    h('span', {class: 'f'}, h('label', {for: 'f-health'}, 'Health'), healthSel),
    h('span', {class: 'f'}, h('label', {for: 'f-state'}, 'State'), stateSel),
    h('span', {class: 'f'}, h('label', {for: 'f-cluster'}, 'Cluster'), clusterSel),
    h('span', {class: 'f'}, h('label', {for: 'f-drift'}, 'Sign-off'), driftSel));

  const columns = [
    {key: 'state', label: 'State', value: (r) => r.n.state, render: (r) => badge(r.n.state)},
    {key: 'hostname', label: 'Host name', value: (r) => r.n.hostname, render: (r) => nodeLink(r.n.id, r.n.hostname)},
    {key: 'health', label: 'Health', value: (r) => HEALTH[healthOf(r.n).state].rank, render: (r) => healthCell(r.n)},
    {key: 'cluster', label: 'Cluster', value: (r) => r.n.cluster, render: (r) => r.n.cluster},
    {key: 'hcas', label: 'HCA ports', title: 'active / total ports', numeric: true,
      value: (r) => (r.d.ports ? r.d.active / r.d.ports + r.d.ports / 1e6 : null),
      render: (r) => (r.d.ports === null ? null : h('span', {class: r.d.active < r.d.ports ? 'warn-text' : null}, `${r.d.active}/${r.d.ports}`))},
    {key: 'rate', label: 'Rate', numeric: true, value: (r) => r.d.rateMin, render: (r) => rateText(r.d)},
    {key: 'gpus', label: 'GPUs', numeric: true, value: (r) => r.d.gpus,
      render: (r) => (r.d.gpus === null ? null : `${r.d.gpus}${r.d.gpuModel ? ' × ' + r.d.gpuModel : ''}`)},
    {key: 'driver', label: 'NVIDIA driver', value: (r) => r.d.driver, render: (r) => r.d.driver},
    {key: 'ofed', label: 'OFED', value: (r) => r.d.ofed, render: (r) => r.d.ofed},
    {key: 'os', label: 'OS', value: (r) => r.d.os, render: (r) => r.d.os},
    {key: 'seen', label: 'Last seen', numeric: true, value: (r) => -r.n.last_seen_ms,
      render: (r) => h('time', {datetime: new Date(r.n.last_seen_ms).toISOString(), title: new Date(r.n.last_seen_ms).toISOString()},
        r.n.state === 'online' ? 'now' : ago(r.n.last_seen_ms))},
    {key: 'drift', label: 'Newest sign-off', value: (r) => (r.n.signoff || {}).state, render: (r) => driftCell(r.n)},
    {key: 'wlm', label: 'Scheduler', title: 'the workload manager\'s state of the node (its cluster bound to Slurm or hooks)',
      value: (r) => wlmText(r.n.wlm), render: (r) => wlmCell(r.n.wlm)},
  ];
  const table = sortableTable({columns, sort: {key: 'hostname', dir: 'ascending'},
    caption: 'Nodes', rowAttrs: (r) => ({dataset: {node: r.n.id, state: r.n.state, health: healthOf(r.n).state}}), empty: 'No node matches.'});
  ctx.root.append(h('h1', null, 'Nodes'), filters, count, status, table.el);

  let rows = [];
  const want = ctx.query.get('cluster');
  const wantHealth = ctx.query.get('health');
  if (wantHealth && [...healthSel.options].some((o) => o.value === wantHealth)) healthSel.value = wantHealth;

  function apply() {
    const q = text.value.trim().toLowerCase();
    const st = stateSel.value, cl = clusterSel.value, dr = driftSel.value, he = healthSel.value;
    const shown = rows.filter((r) => (!q || r.n.hostname.toLowerCase().includes(q) || r.n.id.includes(q)) &&
      (!he || (he === 'problems' ? healthOf(r.n).state !== 'healthy' : healthOf(r.n).state === he)) &&
      (!st || r.n.state === st) && (!cl || r.n.cluster === cl) &&
      (!dr || ((r.n.signoff || {}).state || 'none') === dr));
    table.setRows(shown);
    count.textContent = `${shown.length} of ${rows.length} node${rows.length === 1 ? '' : 's'}`;
  }
  for (const el of [text, healthSel, stateSel, clusterSel, driftSel]) el.addEventListener('input', apply);

  function show(nodes, withFacts) {
    rows = nodes.map((n) => ({n, d: derive(n)}));
    const clusters = [...new Set(nodes.map((n) => n.cluster))].sort(naturalCompare);
    const keep = clusterSel.value || want || '';
    fill(clusterSel, h('option', {value: ''}, 'any cluster'), clusters.map((c) => h('option', {value: c}, c)));
    clusterSel.value = clusters.includes(keep) ? keep : '';
    clear(status);
    apply();
    table.el.dataset.facts = String(withFacts);
    // One cluster (a scoped token's usual view): its column says nothing and costs the other
    // columns their width (a thousand rows wrap, and lay out, more lines); the filter stays.
    table.el.dataset.clusters = String(clusters.length);
  }

  // Two reads, one after the other: the list without facts (about 0.4 KB a node: the table is
  // drawn first from each node's summary line), then with them (about 11 KB a node: the driver,
  // OFED and OS columns). Sequential on purpose: at once, the big one slows the small one down
  // (the controller parses every node's facts for both).
  let first = true;
  async function load() {
    if (first) {
      first = false;
      show(await api.getAll('/api/v1/nodes'), false);
    }
    show(await api.getAll('/api/v1/nodes?facts=true'), true);
  }

  const refresh = coalesce(async () => {
    try { await load(); } catch (e) { fill(status, notice('Could not refresh: ' + e.message)); }
  }, 1000);
  // A node going on or offline changes its row in place; one never seen means a refetch.
  const onState = (state) => (ev) => {
    const r = rows.find((x) => x.n.id === ev.id);
    if (!r) { refresh(); return; }
    r.n.state = state;
    r.n.last_seen_ms = Date.now();
    apply();
  };
  ctx.on('node.online', onState('online'));
  ctx.on('node.offline', onState('offline'));
  // The workload manager's word on a node changed (docs/operations.md, "Maintenance with Slurm").
  ctx.on('wlm.node', (ev) => {
    const r = rows.find((x) => x.n.cluster === ev.cluster && x.n.wlm && x.n.wlm.name === ev.node);
    if (!r) { refresh(); return; }
    r.n.wlm = Object.assign({name: ev.node}, ev.wlm);
    apply();
  });
  // A node's health follows the newest applied deployment and sign-off: read again when one ends
  // or is made (not at every state a deployment passes through).
  ctx.on('deployment.state', (ev) => { if (['succeeded', 'partial', 'failed', 'cancelled'].includes(ev.state)) refresh(); });
  ctx.on('signoff.created', refresh);
  ctx.on('reset', refresh);
  await load();
  // After the first read: a stream that connects meanwhile need not cost another 11 MB.
  ctx.on('open', refresh);
  return () => refresh.cancel();
}

// A node's state in its cluster's workload manager: Slurm's word, and whether the drain is ours
// (a drain by railyard: its reason starts "railyard:"); "—" when the cluster is not bound.
export function wlmText(w) {
  if (!w) return null;
  return w.state + (w.drained && w.ours ? ' (railyard)' : w.drained ? ' (other)' : '');
}
function wlmCell(w) {
  if (!w) return '—';
  return h('span', {class: ['badge', 'wlm', w.drained ? 'tone-warn' : 'tone-info'], title: w.reason || '',
    dataset: {wlm: w.state, ours: w.ours ? 'yes' : 'no'}}, wlmText(w));
}

// A deployment's node: "step NAME: MESSAGE" for its first failed step, else its message.
export function failedStep(me) {
  return (me.steps || []).find((st) => st.status === 'failed') || null;
}
function failedStepText(me) {
  const st = failedStep(me);
  if (!st) return me.message;
  return h('span', {class: 'failed-step'}, 'step ', h('q', null, st.name), st.message ? ': ' + st.message : '');
}

// The health's problems as list items, the sign-off's verdict on the node as one item with its
// reasons beneath (each reason without the repeated "failed sign-off so-…: ").
function problemItems(problems) {
  const icon = (sev) => h('span', {class: 'icon', 'aria-hidden': 'true'}, (HEALTH[sev] || HEALTH.unknown).icon);
  const items = [];
  const so = problems.filter((p) => p.source === 'signoff');
  if (so.length) {
    const m = /^((?:failed|excluded from) sign-off|sign-off) (\S+?):?(?: |$)/.exec(so[0].text);
    const how = {'sign-off': 'Rails failed by sign-off', 'failed sign-off': 'Failed by sign-off', 'excluded from sign-off': 'Excluded from sign-off'};
    const head = m ? `${how[m[1]]} ${m[2]}` : 'Newest sign-off';
    const why = so.map((p) => p.text.replace(/^(?:(?:failed|excluded from) )?sign-off \S+: /, '')).filter((t, i) => t !== so[i].text);
    items.push(h('li', {class: 'sev-failing', dataset: {source: 'signoff', severity: 'failing'}}, icon('failing'), ' ', head,
      why.length ? [':', h('ul', null, why.map((t) => h('li', null, t)))] : null));
  }
  for (const p of problems) {
    if (p.source === 'signoff') continue;
    items.push(h('li', {class: 'sev-' + p.severity, dataset: {source: p.source, severity: p.severity}}, icon(p.severity), ' ', p.text));
  }
  return items;
}

// ---- a node's page -------------------------------------------------------------------------

// The HCAs' ports: a port not ACTIVE is a problem (danger, never quieter than "active"); an active
// port slower than the node's fastest is marked; the PCIe column is the HCA's link (gen and
// width), marked when below what it is capable of.
function hcaTable(f) {
  const rows = [];
  const pci = pciByAddress(f);
  let fastest = 0;
  for (const dev of (f.rdma && f.rdma.devices) || []) {
    for (const p of dev.ports || []) {
      rows.push({dev, p});
      if (portActive(p) && typeof p.rate_gbps === 'number') fastest = Math.max(fastest, p.rate_gbps);
    }
  }
  if (!rows.length) return h('p', {class: 'mute'}, 'No RDMA device reported.');
  const slow = (r) => portActive(r.p) && typeof r.p.rate_gbps === 'number' && r.p.rate_gbps < fastest;
  const t = sortableTable({
    caption: 'HCAs and ports',
    columns: [
      {key: 'dev', label: 'Device', value: (r) => r.dev.name, render: (r) => r.dev.name},
      {key: 'port', label: 'Port', numeric: true, render: (r) => String(r.p.port)},
      {key: 'state', label: 'State', value: (r) => r.p.state, render: (r) => portBadge(r.p)},
      {key: 'phys', label: 'Physical', render: (r) => r.p.phys_state},
      {key: 'rate', label: 'Rate', render: (r) => (slow(r)
        ? h('span', {class: 'warn-text port-slow', title: `slower than this node's fastest rails (${fastest} Gb/s)`},
          h('span', {class: 'icon', 'aria-hidden': 'true'}, '! '), r.p.rate, ` — below ${fastest} Gb/s`)
        : r.p.rate)},
      {key: 'pcie', label: 'PCIe', render: (r) => {
        const d = pci.get(String(r.dev.pci_address || '').toLowerCase());
        if (!d) return '—';
        return degraded(d)
          ? h('span', {class: 'warn-text pcie-degraded'}, h('span', {class: 'icon', 'aria-hidden': 'true'}, '! '), linkText(d))
          : linkText(d);
      }},
      {key: 'll', label: 'Link layer', render: (r) => r.p.link_layer},
      {key: 'netdev', label: 'Netdev', render: (r) => r.p.netdev},
      {key: 'fw', label: 'Firmware', render: (r) => r.dev.fw_ver},
      {key: 'pci', label: 'PCI', render: (r) => r.dev.pci_address},
      {key: 'numa', label: 'NUMA', numeric: true, render: (r) => (r.dev.numa_node === undefined ? null : String(r.dev.numa_node))},
    ],
    rows,
    rowAttrs: (r) => ({dataset: {device: r.dev.name, port: String(r.p.port)}, class: portActive(r.p) ? (slow(r) ? 'port-slow-row' : null) : 'port-problem-row'}),
  });
  return t.el;
}

function portActive(p) {
  return String(p.state || '').toUpperCase() === 'ACTIVE';
}

function portBadge(p) {
  if (portActive(p)) return badge('active');
  const w = String(p.state || 'unknown').toLowerCase();
  return h('span', {class: ['badge', 'tone-bad', 'port-problem'], dataset: {port: w}},
    h('span', {class: 'icon', 'aria-hidden': 'true'}, '✕'), ' ', w);
}

function pciByAddress(f) {
  const m = new Map();
  for (const d of (f.pci && f.pci.devices) || []) m.set(String(d.address).toLowerCase(), d);
  return m;
}

function linkText(d) {
  if (!d) return null;
  const cur = `Gen${d.gen ?? '?'} x${d.current_link_width ?? '?'}`;
  const max = `Gen${d.max_gen ?? '?'} x${d.max_link_width ?? '?'}`;
  return cur === max ? cur : `${cur} (capable of ${max})`;
}

function degraded(d) {
  return d && ((d.gen && d.max_gen && d.gen < d.max_gen) ||
    (d.current_link_width && d.max_link_width && d.current_link_width < d.max_link_width));
}

function gpuTable(f) {
  const gpus = Array.isArray(f.gpus) ? f.gpus : [];
  if (!gpus.length) return h('p', {class: 'mute'}, 'No GPU reported.');
  const pci = pciByAddress(f);
  return sortableTable({
    caption: 'GPUs',
    columns: [
      {key: 'minor', label: '#', numeric: true, render: (g) => String(g.minor ?? '')},
      {key: 'model', label: 'Model', render: (g) => g.model},
      {key: 'bus', label: 'Bus', render: (g) => g.bus},
      {key: 'link', label: 'PCIe link', render: (g) => {
        const d = pci.get(String(g.bus || '').toLowerCase());
        return h('span', {class: degraded(d) ? 'warn-text' : null}, linkText(d) || '—');
      }},
      {key: 'numa', label: 'NUMA', numeric: true, render: (g) => (g.numa_node === undefined ? null : String(g.numa_node))},
      {key: 'vbios', label: 'VBIOS', render: (g) => g.video_bios},
      {key: 'uuid', label: 'UUID', render: (g) => h('code', null, String(g.uuid ?? ''))},
    ],
    rows: gpus,
  }).el;
}

function pcieTable(f) {
  const devs = (f.pci && f.pci.devices) || [];
  if (!devs.length) return h('p', {class: 'mute'}, 'No PCIe device reported.');
  return sortableTable({
    caption: 'PCIe links',
    columns: [
      {key: 'addr', label: 'Address', value: (d) => d.address, render: (d) => d.address},
      {key: 'id', label: 'Vendor:device', render: (d) => `${d.vendor}:${d.device}`},
      {key: 'class', label: 'Class', render: (d) => d.class},
      {key: 'link', label: 'Link', render: (d) => h('span', {class: degraded(d) ? 'warn-text' : null}, linkText(d),
        degraded(d) ? ' — below its capability' : '')},
      {key: 'speed', label: 'Speed', render: (d) => d.current_link_speed},
      {key: 'numa', label: 'NUMA', numeric: true, render: (d) => (d.numa_node === undefined ? null : String(d.numa_node))},
    ],
    rows: devs,
  }).el;
}

function versions(n, f) {
  const mods = (f.modules && f.modules.versions) || {};
  return kv([
    ['Reported host name', f.hostname ?? null],
    ['OS', (f.os && (f.os.pretty_name || f.os.name)) ?? null],
    ['Kernel', f.kernel ? `${f.kernel.release ?? ''} ${f.kernel.version ?? ''}`.trim() : null],
    ['NVIDIA driver', f.nvidia_driver ? `${f.nvidia_driver.version ?? '?'}${f.nvidia_driver.open_kernel_module ? ' (open kernel module)' : ''}` : null],
    ['OFED', f.ofed ? (f.ofed.package || f.ofed.version || null) : null],
    ['mlx5_core', (f.ofed && f.ofed.mlx5_core_version) || mods.mlx5_core || null],
    ['CPU', f.cpu ? `${f.cpu.model ?? '?'}, ${f.cpu.count ?? '?'} CPUs, ${f.cpu.numa_nodes ?? '?'} NUMA nodes` : null],
    ['Memory', f.memory && f.memory.total_kib ? `${fmtNum(f.memory.total_kib / 1048576)} GiB` : null],
    ['Agent', n.agent_version],
    ...Object.entries(mods).map(([k, v]) => ['Module ' + k, String(v)]),
  ]);
}

export async function nodeView(ctx, id) {
  const {api} = ctx;
  const n = await api.get('/api/v1/nodes/' + api.enc(id));
  ctx.title(n.hostname);
  const f = n.facts || {};
  const so = n.signoff || {state: 'none'};
  const hl = healthOf(n);
  const head = h('div', {class: 'head'},
    h('h1', null, 'Node ', h('span', {class: 'hostname'}, n.hostname)), healthBadge(hl), badge(n.state, 'node-state'));
  // Health first (the first screen answers "is it healthy, and if not what and why").
  const healthPanel = h('section', {class: ['card', 'health-panel', 'health-' + hl.state], dataset: {health: hl.state},
    'aria-label': 'Health'},
  h('h2', null, 'Health: ', healthBadge(hl)),
  (hl.problems || []).length ? h('ul', {class: 'health-reasons'}, problemItems(hl.problems))
    : h('p', {class: 'mute'}, hl.state === 'healthy'
      ? 'Every HCA port is active at the node\'s rate, and neither the newest sign-off nor the newest deployment found a fault.'
      : 'Nothing is known to be wrong.'),
  h('p', {class: 'mute coverage-line'}, 'Newest sign-off: ', so.signoff
    ? [so.state === 'current' ? 'covers this node as it is now' : so.state === 'stale' ? 'no longer describes this node' : 'does not cover this node',
      ' (', soLink(so.signoff), ')']
    : 'none yet'));
  const deps = h('div', null, h('p', {class: 'mute'}, 'Loading…'));
  const camps = h('div', null, h('p', {class: 'mute'}, 'Loading…'));
  ctx.root.append(head, healthPanel,
    section('Node', kv([
      ['Id', h('code', null, n.id)], ['Cluster', n.cluster], ['State', badge(n.state)],
      ['Last seen', timeEl(n.last_seen_ms)], ['Enrolled', timeEl(n.enrolled_at_ms)],
      ['Summary', n.summary ?? null],
      ['Certificate', h('code', null, n.cert_fingerprint)],
      ['Newest sign-off', h('span', null, driftCell(n), so.signoff ? [' ', soLink(so.signoff)] : null)],
    ]), so.reasons && so.reasons.length ? h('ul', {class: 'reasons', 'aria-label': 'Why the sign-off is stale'},
      so.reasons.map((r) => h('li', null, r))) : null,
    Array.isArray(f.warnings) && f.warnings.length ? h('div', null, h('h3', null, 'Warnings from the agent'),
      h('ul', null, f.warnings.map((w) => h('li', null, typeof w === 'string' ? w : JSON.stringify(w))))) : null),
    section('Workload manager', wlmPanel(n.wlm)),
    section('Versions', versions(n, f)),
    section('HCAs and ports', hcaTable(f)),
    section('GPUs', gpuTable(f)),
    section('PCIe links', pcieTable(f)),
    section('Deployments', deps),
    section('Campaign results', camps));

  // Its deployments: the newest 20 of its cluster, those that included it.
  (async () => {
    const list = (await api.get('/api/v1/deployments?limit=20&cluster=' + api.enc(n.cluster))).items;
    const details = await Promise.all(list.map((d) => api.get('/api/v1/deployments/' + api.enc(d.id))));
    const mine = [];
    for (const d of details) {
      const me = (d.nodes || []).find((x) => x.node_id === n.id);
      if (me) mine.push({d, me});
    }
    fill(deps, mine.length ? sortableTable({
      caption: 'Deployments that included this node (of the cluster\'s newest 20)',
      columns: [
        {key: 'id', label: 'Deployment', render: (r) => depLink(r.d.id)},
        {key: 'pb', label: 'Playbook', render: (r) => `${r.d.playbook} ${r.d.version}${r.d.check_mode ? ' (check)' : ''}`},
        {key: 'state', label: 'On this node', render: (r) => badge(r.me.state)},
        {key: 'counts', label: 'ok / changed / failed / skipped', render: (r) => `${r.me.ok} / ${r.me.changed} / ${r.me.failed} / ${r.me.skipped}`},
        {key: 'msg', label: 'Failed step, or message', render: (r) => failedStepText(r.me)},
        {key: 'at', label: 'Created', render: (r) => timeEl(r.d.created_at_ms)},
      ],
      rows: mine,
    }).el : h('p', {class: 'mute'}, 'None of the cluster\'s newest deployments included this node.'));
  })().catch((e) => { if (!ctx.dead) fill(deps, notice(e.message)); });

  // Its campaign results: the verdict's line for it in the cluster's newest 10 campaigns.
  (async () => {
    const list = (await api.get('/api/v1/campaigns?limit=10&cluster=' + api.enc(n.cluster))).items;
    const details = await Promise.all(list.map((c) => api.get('/api/v1/campaigns/' + api.enc(c.id))));
    const mine = [];
    for (const c of details) {
      const inIt = (c.nodes || []).some((x) => x.id === n.id);
      if (!inIt) continue;
      const v = c.verdict && (c.verdict.nodes || []).find((x) => x.id === n.id);
      const fails = [];
      for (const t of (c.verdict && c.verdict.tests) || []) {
        for (const fl of t.failures || []) if (fl.a === n.id || fl.b === n.id) fails.push(`${t.name}: ${fl.reason}`);
      }
      mine.push({c, v, fails});
    }
    fill(camps, mine.length ? sortableTable({
      caption: 'Campaigns this node took part in (of the cluster\'s newest 10)',
      columns: [
        {key: 'id', label: 'Campaign', render: (r) => campLink(r.c.id)},
        {key: 'pb', label: 'Playbook', render: (r) => r.c.playbook},
        {key: 'state', label: 'Campaign', render: (r) => badge(r.c.state)},
        {key: 'result', label: 'This node', render: (r) => (r.v ? badge(r.v.result) : badge(r.c.state === 'running' ? 'running' : 'none'))},
        {key: 'why', label: 'Reasons and failed pairs', render: (r) => {
          const all = [...((r.v && r.v.reasons) || []), ...r.fails];
          return all.length ? h('ul', {class: 'reasons'}, all.slice(0, 8).map((x) => h('li', null, x))) : '—';
        }},
        {key: 'at', label: 'Created', render: (r) => timeEl(r.c.created_at_ms)},
      ],
      rows: mine,
    }).el : h('p', {class: 'mute'}, 'This node took part in none of the cluster\'s newest campaigns.'));
  })().catch((e) => { if (!ctx.dead) fill(camps, notice(e.message)); });

  const refresh = coalesce(async () => {
    const m = await api.get('/api/v1/nodes/' + api.enc(id));
    head.querySelector('.node-state').replaceWith(badge(m.state, 'node-state'));
    const p = ctx.root.querySelector('.wlm-panel');
    if (p) p.replaceWith(wlmPanel(m.wlm));
  }, 500);
  const mine = (ev) => { if (ev.id === n.id) refresh(); };
  ctx.on('node.online', mine);
  ctx.on('node.offline', mine);
  const wlmMine = (ev) => { if (ev.cluster === n.cluster && (ev.hostname === n.hostname || (n.wlm && ev.node === n.wlm.name))) refresh(); };
  ctx.on('wlm.node', wlmMine);
  ctx.on('wlm.action', wlmMine);
  return () => refresh.cancel();
}

// The node in its cluster's workload manager: its name there, state, reason and whose drain it is.
function wlmPanel(w) {
  if (!w) return h('p', {class: 'mute wlm-panel'}, 'The node\'s cluster is not bound to a workload manager (railyard wlm set).');
  return h('div', {class: 'wlm-panel', dataset: {wlm: w.state, ours: w.ours ? 'yes' : 'no'}}, kv([
    ['Name there', h('code', null, w.name)],
    ['State', wlmCell(w)],
    ['Reason', w.reason || '—'],
    ['Drained by', w.drained ? (w.ours ? 'railyard' : 'someone else (railyard never resumes it)') : '—'],
    ['Read', w.seen_at ? timeEl(w.seen_at) : '—'],
  ]));
}
