// Campaigns: the list (and a form to start one, for roles that may) and a campaign's page: live
// progress (round k of n) from the event stream, then the failures first (the verdict's
// findings, bad nodes and links, failing pairs with their reasons), per-rail heatmaps of each
// pairs test (latency or bandwidth, as its rule judges it), the congestion results and the
// other tests' rows.

import {h, failingLinksList, failingPairsTable, clear, fill, badge, timeEl, campLink, nodeLink, sortableTable, coalesce, notice, section, kv,
        naturalCompare, fmtNum, fmtActor, attributionBadge, words, failingNodeItem, fmtDuration} from '../dom.js';
import {heatmap} from '../heatmap.js';
import {playbookForm} from './deployments.js';
import {confirmDialog} from './confirm.js';

function progressText(c) {
  const p = c.progress || {};
  if (c.state !== 'running') {
    return p.rounds_total ? `${p.rounds_done ?? 0} of ${p.rounds_total} rounds run` : 'no round run';
  }
  if (!p.rounds_total) return 'starting: no round planned yet';
  const k = Math.min((p.rounds_done ?? 0) + 1, p.rounds_total);
  const t = (c.tests || [])[p.test_index];
  return `Round ${k} of ${p.rounds_total}${p.rounds_total_final === false ? ' (so far)' : ''}` +
    (t ? `: test ${p.test_index + 1} of ${c.tests.length}, ${t.name}` : '') +
    (p.eta_s ? `, about ${fmtDuration(p.eta_s)} left` : '');
}

export async function campaignsView(ctx) {
  const {api, session} = ctx;
  ctx.title('Campaigns');
  const status = h('div');
  const table = sortableTable({
    caption: 'Validation campaigns, newest first',
    columns: [
      {key: 'id', label: 'Campaign', value: (c) => c.id, render: (c) => campLink(c.id)},
      {key: 'cluster', label: 'Cluster', value: (c) => c.cluster, render: (c) => c.cluster},
      {key: 'pb', label: 'Playbook', value: (c) => c.playbook, render: (c) => `${c.playbook} ${c.version}`},
      {key: 'transport', label: 'Transport', value: (c) => c.transport, render: (c) => c.transport + (c.quick ? ' (quick)' : '')},
      {key: 'nodes', label: 'Nodes', numeric: true, value: (c) => c.nodes_count, render: (c) => String(c.nodes_count ?? '')},
      {key: 'state', label: 'State', value: (c) => c.state, render: (c) => badge(c.state)},
      {key: 'progress', label: 'Progress', render: (c) => progressText(c)},
      {key: 'result', label: 'Verdict', value: (c) => c.result, render: (c) => (c.result ? badge(c.result) : '—')},
      {key: 'created', label: 'Created', numeric: true, value: (c) => -c.created_at_ms, render: (c) => timeEl(c.created_at_ms)},
    ],
    rowAttrs: (c) => ({dataset: {campaign: c.id}}),
    empty: 'No campaign yet.',
  });
  ctx.root.append(h('h1', null, 'Campaigns'));
  if (session.may('configure')) {
    const quick = h('input', {type: 'checkbox', checked: true, id: 'camp-quick'});
    const signoff = h('input', {type: 'checkbox', id: 'camp-signoff'});
    const tests = h('input', {type: 'text', id: 'camp-tests', placeholder: 'all (or e.g. pair-lat,pair-bw)'});
    const transport = h('select', {id: 'camp-transport'}, h('option', {value: ''}, 'the playbook\'s'),
      h('option', {value: 'tcp'}, 'tcp'), h('option', {value: 'verbs'}, 'verbs'));
    const form = playbookForm(ctx, {
      kind: 'camp',
      fields: h('div', null,
        h('div', {class: 'row'}, h('label', {for: 'camp-tests'}, 'Tests'), tests),
        h('div', {class: 'row'}, h('label', {for: 'camp-transport'}, 'Transport'), transport),
        h('div', {class: 'row'}, h('label', {for: 'camp-quick'}, 'Quick (a smoke run)'), quick),
        h('div', {class: 'row'}, h('label', {for: 'camp-signoff'}, 'Sign the report when it ends'), signoff)),
      submit: async ({cluster, playbook}) => {
        const body = {cluster, playbook, quick: quick.checked, signoff: signoff.checked};
        if (tests.value.trim()) body.tests = tests.value.trim();
        if (transport.value) body.transport = transport.value;
        const c = await api.post('/api/v1/campaigns', body);
        ctx.navigate('/campaigns/' + encodeURIComponent(c.id));
      },
    });
    ctx.root.append(h('details', {class: 'card new'}, h('summary', null, 'New campaign'), form));
  }
  ctx.root.append(status, table.el);
  const load = async () => {
    table.setRows((await api.get('/api/v1/campaigns?limit=200')).items);
    clear(status);
  };
  const refresh = coalesce(() => load().catch((e) => fill(status, notice(e.message))), 1000);
  for (const t of ['campaign.state', 'campaign.progress', 'reset', 'open']) ctx.on(t, refresh);
  await load();
  return () => refresh.cancel();
}

// ---- one campaign ------------------------------------------------------------------------------

const DEFAULT_FIELD = {lat: 'p50_us', bw: 'gbps'};
const UNIT = {p50_us: 'µs', p90_us: 'µs', p99_us: 'µs', p999_us: 'µs', mean_us: 'µs', min_us: 'µs', max_us: 'µs',
  gbps: 'Gb/s', gbps_reverse: 'Gb/s', msg_rate: 'msg/s'};
const OP = {'<=': '≤', '>=': '≥', '<': '<', '>': '>', '==': '='};

function holds(v, op, t) {
  switch (op) {
    case '<=': return v <= t;
    case '<': return v < t;
    case '>=': return v >= t;
    case '>': return v > t;
    case '==': return v === t;
    default: return true;
  }
}

// The rule a pairs test's map is coloured by: the verdict's (with its computed threshold and,
// when relative, the reference it multiplies), or while it runs an absolute rule of the spec.
function ruleOf(c, ti) {
  const t = c.tests[ti];
  const vt = ((c.verdict && c.verdict.tests) || [])[ti] || null;
  const pre = t.name + '.';
  let r = vt && (vt.rules || []).find((x) => x.metric && x.metric.startsWith(pre));
  if (!r) {
    const a = ((c.spec && c.spec.acceptance) || []).find((x) => x.metric && x.metric.startsWith(pre) && !x.relative);
    if (a) r = {...a, threshold: a.value};
  }
  if (!r) return null;
  const field = r.metric.slice(pre.length);
  let reference = null;
  if (['median', 'min', 'max'].includes(r.relative) && typeof r.value === 'number' && r.value !== 0 &&
      typeof r.threshold === 'number') {
    reference = r.threshold / r.value;
  } else if (r.relative === 'mad') {
    const st = vt && vt.stats && vt.stats[field];
    reference = st && typeof st.median === 'number' ? st.median : null;
  }
  return {metric: r.metric, field, op: r.op, value: r.value, relative: r.relative || null,
    threshold: typeof r.threshold === 'number' ? r.threshold : null, reference,
    threshold_text: r.threshold_text || null, evaluated: r.evaluated, failed: r.failed};
}

// The rule in words, with the numbers the legend shows: "p50_us ≤ 11.52 µs (0.9999 × min 11.52 µs)".
function ruleText(rule, unit) {
  const u = unit ? ' ' + unit : '';
  if (rule.threshold === null) return `${rule.field} ${OP[rule.op] || rule.op} ${rule.relative ? rule.value + ' × ' + rule.relative : fmtNum(rule.value, 4)}`;
  let t = `${rule.field} ${OP[rule.op] || rule.op} ${fmtNum(rule.threshold, 4)}${u}`;
  if (rule.relative === 'mad') t += ` (median ${fmtNum(rule.reference, 4)}${u} + ${rule.value} scaled MADs)`;
  else if (rule.relative) t += ` (${rule.value} × ${rule.relative} ${fmtNum(rule.reference, 4)}${u})`;
  return t;
}

// The heatmaps of one pairs test: one per rail (or one, without rails).
function testHeatmaps(c, ti, rows) {
  const t = c.tests[ti];
  const vt = ((c.verdict && c.verdict.tests) || [])[ti] || null;
  const rule = ruleOf(c, ti);
  const field = rule ? rule.field : DEFAULT_FIELD[t.kind];
  const better = /us$/.test(field) ? 'lower' : 'higher';
  const unit = UNIT[field] || '';
  const nodes = (c.nodes || []).map((n) => ({id: n.id, label: n.hostname})).sort((a, b) => naturalCompare(a.label, b.label));
  const index = new Map(nodes.map((n, i) => [n.id, i]));
  const failures = new Map();
  for (const f of (vt && vt.failures) || []) {
    for (const k of [`${f.a}|${f.b}|${f.rail}`, `${f.b}|${f.a}|${f.rail}`]) failures.set(k, f);
  }
  const byRail = new Map();
  for (const r of rows) {
    if (r.test_index !== ti || r.role !== 'measure' || r.phase !== 'run') continue;
    const rail = r.rail === null || r.rail === undefined ? null : r.rail;
    if (!byRail.has(rail)) byRail.set(rail, []);
    byRail.get(rail).push(r);
  }
  const out = [];
  for (const rail of [...byRail.keys()].sort((a, b) => (a ?? -1) - (b ?? -1))) {
    const cells = [];
    for (const r of byRail.get(rail)) {
      const ia = index.get(r.a), ib = index.get(r.b);
      if (ia === undefined || ib === undefined || ia === ib) continue;
      const m = r.summary && r.summary.metrics;
      const value = m && typeof m[field] === 'number' ? m[field] : null;
      const f = failures.get(`${r.a}|${r.b}|${rail}`);
      let fail = false, reason = null, attributed = null;
      if (f) {
        // A transient is listed by the verdict but is no failure.
        fail = f.attributed !== 'transient'; reason = words(f.reason, t.name); attributed = f.attributed;
      } else if (r.state === 'failed' || r.state === 'missing') {
        fail = true; reason = r.error || r.state;
      } else if (rule && rule.threshold !== null && value !== null && !holds(value, rule.op, rule.threshold)) {
        // Beyond the failures the verdict lists: the rule's threshold says.
        fail = true; reason = `${field} ${fmtNum(value, 4)}, not ${OP[rule.op] || rule.op} ${fmtNum(rule.threshold, 4)}`;
      }
      cells.push({i: Math.max(ia, ib), j: Math.min(ia, ib), value, fail, reason, attributed, state: r.state});
    }
    const railName = rail === null ? '' : `, rail ${rail}${railDevice(c, rail)}`;
    const map = heatmap({title: `${t.name}: ${field}${railName}`, nodes, cells, metric: field, unit, better, rule});
    map.insertBefore(h('p', {class: 'rule-text'}, vt ? badge(vt.result) : null, vt ? ' ' : null,
      rule ? ['Rule: ', h('span', {class: 'rule', title: rule.threshold_text || ''}, ruleText(rule, unit)),
        typeof rule.failed === 'number' ? `; ${rule.failed} of ${rule.evaluated} pairs fail it` : '']
        : `No rule on ${field}: the colour is the value from 0 to the highest.`), map.children[1]);
    out.push(map);
  }
  return out;
}

function railDevice(c, rail) {
  const devs = new Set((c.nodes || []).map((n) => (n.rails || [])[rail]).filter(Boolean).map((r) => r.device));
  return devs.size === 1 ? ` (${[...devs][0]})` : '';
}

// The verdict and its failures, in words, before anything else of a finished campaign.
function verdictSection(c, hostOf) {
  const v = c.verdict;
  if (!v) {
    return h('section', {class: 'card verdict-card', dataset: {verdict: 'none'}}, h('h2', null, 'Verdict'),
      h('p', {class: 'mute'}, c.state === 'running'
        ? 'The verdict comes when the campaign ends; failed runs show in the maps below as they happen.'
        : 'No verdict' + (c.error ? ': ' + c.error : '.')));
  }
  const badNodes = (v.nodes || []).filter((n) => n.result === 'fail')
    .sort((a, b) => naturalCompare(a.hostname, b.hostname));
  const pairs = [], transients = [];
  let more = 0;
  for (const t of v.tests || []) {
    for (const f of t.failures || []) (f.attributed === 'transient' ? transients : pairs).push({t, f});
    more += Math.max(0, (t.failures_total || 0) - (t.failures || []).length);
  }
  const failingPairs = pairs.length + more;
  const links = v.links_total ?? (v.links || []).length;
  const what = [];
  if (badNodes.length) what.push(`${badNodes.length} node${badNodes.length === 1 ? '' : 's'} failing`);
  if (links) what.push(`${links} link${links === 1 ? '' : 's'} failing`);
  if (failingPairs) what.push(`${failingPairs} pair${failingPairs === 1 ? '' : 's'} failing the rules`);
  if ((v.excluded || []).length) what.push(`${v.excluded.length} excluded`);
  const lead = v.result === 'pass' ? 'Passed: every test measured and within its rules.'
    : v.result === 'incomplete' ? 'Incomplete: something required was not measured; nothing failed.'
      : `Failed${what.length ? ': ' + what.join(', ') : ''}.`;
  const parts = [h('p', {class: 'verdict-line'}, badge(v.result, 'verdict'), ' ', lead, ' ',
    v.acceptance === false ? h('span', {class: ['badge', 'tone-warn', 'kind'],
      title: (v.acceptance_reasons || []).join('; ')}, 'smoke / baseline run')
      : v.acceptance ? h('span', {class: ['badge', 'tone-good', 'kind']}, 'acceptance run') : null)];
  if (badNodes.length) parts.push(h('h3', null, 'Failing nodes'), h('ul', {class: 'failing-nodes'}, badNodes.map((n) => failingNodeItem(n, 'fail'))));
  if ((v.excluded || []).length) {
    parts.push(h('h3', null, 'Excluded nodes (the cluster was judged without them)'),
      h('ul', {class: 'failing-nodes'}, v.excluded.map((n) => failingNodeItem(n, 'excluded'))));
  }
  if ((v.links || []).length) {
    parts.push(h('h3', null, 'Failing links'), failingLinksList(v.links));
    if (v.links_total > v.links.length) parts.push(h('p', {class: 'mute'}, `and ${v.links_total - v.links.length} more links`));
  }
  if (pairs.length) {
    parts.push(failingPairsTable(pairs, hostOf));
    if (more) parts.push(h('p', {class: 'mute'}, `and ${more} more failing pairs not listed by the verdict (marked in the maps)`));
  } else if (v.result === 'pass') {
    parts.push(h('p', null, 'No failing pair.'));
  }
  if (transients.length) {
    parts.push(h('p', {class: 'transients'}, attributionBadge('transient'), ' not failures: ',
      transients.map(({t, f}) => `${hostOf(f.a)} ↔ ${hostOf(f.b)}${f.rail === null || f.rail === undefined ? '' : ' rail ' + f.rail} (${t.name})`).join(', ')));
  }
  if ((v.findings || []).length) {
    parts.push(h('details', {class: 'findings-all', open: !badNodes.length && !pairs.length},
      h('summary', null, `The verdict's findings (${v.findings.length})`),
      h('ul', {class: 'findings'}, v.findings.map((f) => h('li', null, words(f))))));
  }
  if ((v.left_out || []).length) {
    parts.push(h('h3', null, 'Left out'), h('ul', {class: 'reasons'}, v.left_out.map((n) => h('li', null, `${n.hostname}: ${words(n.reason)}`))));
  }
  return h('section', {class: ['card', 'verdict-card', 'failures', 'verdict-' + v.result], dataset: {verdict: v.result}},
    h('h2', null, v.result === 'pass' ? 'Verdict' : 'Failures'), parts);
}

// A bw test's CPU cost next to its bandwidth, from the verdict's medians: "31.1 Gb/s for
// 1.68 + 1.68 cores (0.433 + 0.434 CPU-s/GB)"; '—' when its rows carry no CPU figure.
function cpuCost(vt) {
  const st = (vt && vt.stats) || {};
  const med = (f) => (st[f] && st[f].n > 0 && typeof st[f].median === 'number' ? fmtNum(st[f].median, 3) : 'unknown');
  if (!vt || vt.kind !== 'bw' || !Object.keys(st).some((k) => k.startsWith('cpu_') && st[k].n > 0)) return '—';
  return `${med('gbps')} Gb/s for ${med('cpu_cores_client')} + ${med('cpu_cores_server')} cores ` +
    `(${med('cpu_s_per_gb_client')} + ${med('cpu_s_per_gb_server')} CPU-s/GB)`;
}

// Runs: what was measured, per test, with two counters that cannot be read as the verdict's:
// runs that failed (the benchmark errored or never reported) and pairs that break the rules.
function testsTable(c) {
  const vts = (c.verdict && c.verdict.tests) || [];
  const failingOf = (ti) => {
    const vt = vts[ti];
    if (!vt) return null;
    const fl = vt.failures || [];
    return fl.filter((f) => f.attributed !== 'transient').length + Math.max(0, (vt.failures_total || 0) - fl.length);
  };
  return sortableTable({
    caption: 'Tests',
    columns: [
      {key: 'name', label: 'Test', render: (t) => t.name},
      {key: 'kind', label: 'Kind', render: (t) => `${t.kind}, ${t.pattern}`},
      {key: 'verdict', label: 'Verdict', render: (t) => {
        const ti = c.tests.indexOf(t);
        if (vts[ti]) return badge(vts[ti].result);
        if (c.state === 'running') {
          const at = (c.progress || {}).test_index ?? 0;
          return badge(ti < at ? 'measured' : ti === at ? 'running' : 'planned');
        }
        return '—';
      }},
      {key: 'rounds', label: 'Rounds', numeric: true, render: (t) => String(t.rounds + (t.retest_rounds || 0))},
      {key: 'done', label: 'Runs done', numeric: true, title: 'benchmark runs that reported, of those planned',
        render: (t) => (t.rows ? `${t.done} of ${t.rows}` : c.state === 'running' ? 'planned, not started' : 'not run')},
      {key: 'failed', label: 'Runs failed', numeric: true, title: 'benchmark runs that errored or never reported (not the rules)',
        render: (t) => (t.rows ? String(t.failed) : '—')},
      {key: 'fpairs', label: 'Pairs failing the rules', numeric: true, title: 'pairs the verdict fails (transients are not failures)',
        render: (t) => { const k = failingOf(c.tests.indexOf(t)); return k === null ? '—' : String(k); }},
      {key: 'cpu', label: 'CPU cost', title: 'bw tests: median Gb/s, and host-wide cores busy and CPU-seconds per GB on the client + the server (docs/campaigns.md, "CPU cost")',
        render: (t) => cpuCost(vts[c.tests.indexOf(t)])},
    ],
    rows: c.tests || [],
    rowAttrs: (t) => ({dataset: {test: t.name}}),
  }).el;
}

function congestionSection(c, rows, hostOf) {
  const out = [];
  (c.tests || []).forEach((t, ti) => {
    if (t.kind !== 'congestion') return;
    const vt = ((c.verdict && c.verdict.tests) || [])[ti];
    const stats = (vt && vt.stats) || {};
    const part = [h('h3', null, t.name, ' ', vt ? badge(vt.result) : badge(c.state === 'running' ? 'running' : 'none'))];
    if (vt) {
      for (const r of vt.rules || []) {
        part.push(h('p', null, `${r.metric} ${OP[r.op] || r.op} ${typeof r.threshold === 'number' ? fmtNum(r.threshold, 4) : r.threshold_text}: ${r.failed} of ${r.evaluated} failed`));
      }
    }
    if (Object.keys(stats).length) {
      part.push(sortableTable({
        caption: `${t.name}: victims alone and under congestion`,
        columns: [
          {key: 'k', label: 'Measure', render: (r) => r[0]},
          {key: 'median', label: 'Median', numeric: true, render: (r) => fmtNum(r[1].median, 4)},
          {key: 'min', label: 'Min', numeric: true, render: (r) => fmtNum(r[1].min, 4)},
          {key: 'max', label: 'Max', numeric: true, render: (r) => fmtNum(r[1].max, 4)},
          {key: 'n', label: 'Pairs', numeric: true, render: (r) => String(r[1].n)},
        ],
        rows: Object.entries(stats),
      }).el);
    }
    const victims = rows.filter((r) => r.test_index === ti && r.role === 'measure');
    if (victims.length) {
      part.push(sortableTable({
        caption: `${t.name}: victim runs`,
        columns: [
          {key: 'phase', label: 'Phase', value: (r) => r.phase, render: (r) => r.phase},
          {key: 'pair', label: 'Pair', render: (r) => `${hostOf(r.a)} → ${hostOf(r.b)}`},
          {key: 'v', label: 'Result', render: (r) => {
            const m = (r.summary && r.summary.metrics) || {};
            return m.p99_us !== undefined ? `p99 ${fmtNum(m.p99_us, 4)} µs` : m.gbps !== undefined ? `${fmtNum(m.gbps, 4)} Gb/s` : (r.error || '—');
          }},
          {key: 'state', label: 'State', render: (r) => badge(r.state === 'done' ? 'ok' : r.state)},
        ],
        rows: victims,
      }).el);
    }
    out.push(h('div', {class: 'congestion', dataset: {test: t.name}}, part));
  });
  return out.length ? section('Congestion', out) : null;
}

// A collective test: one job over every node (docs/campaigns.md, "Collectives"): bus bandwidth
// per op as nccl-tests reports it, the slow node the job's pairwise probe names, the CPU cost.
const COLL_OPS = ['allreduce', 'allgather', 'reducescatter', 'alltoall', 'sendrecv'];
function collectiveSection(c, rows, hostOf) {
  const out = [];
  (c.tests || []).forEach((t, ti) => {
    if (t.kind !== 'collective') return;
    const vt = ((c.verdict && c.verdict.tests) || [])[ti];
    const row = rows.find((r) => r.test_index === ti && r.phase === 'run');
    const sum = (row && row.summary) || {};
    const m = sum.metrics || {};
    const coll = sum.coll || {};
    const part = [h('h3', null, t.name, ' ', vt ? badge(vt.result) : badge(c.state === 'running' ? 'running' : 'none'))];
    if (row && row.error) part.push(h('p', {class: 'error'}, row.error));
    const ops = COLL_OPS.filter((op) => m[`${op}_busbw_gbs`] !== undefined);
    if (ops.length) {
      part.push(sortableTable({
        caption: `${t.name}: ${coll.ranks ?? '?'} ranks over ${(c.nodes || []).length} nodes${coll.library ? ` (${coll.library})` : ''}`,
        columns: [
          {key: 'op', label: 'Op', render: (op) => op},
          {key: 'bus', label: 'Bus bandwidth (GB/s, largest size)', numeric: true, value: (op) => m[`${op}_busbw_gbs`], render: (op) => fmtNum(m[`${op}_busbw_gbs`], 4)},
          {key: 'lat', label: 'Time at the smallest size (µs)', numeric: true, value: (op) => m[`${op}_lat_us`], render: (op) => fmtNum(m[`${op}_lat_us`], 4)},
        ],
        rows: ops,
      }).el);
    }
    const facts = [];
    if (m.wrong !== undefined) facts.push(['Wrong elements', String(m.wrong)]);
    if (m.pair_min_gbps !== undefined) facts.push(['Slowest node pair (Gb/s)', fmtNum(m.pair_min_gbps, 4)]);
    if (coll.why) facts.push(['Slow node', coll.slowest ? `${hostOf(coll.slowest)}: ${coll.why}` : coll.why]);
    if (m.cpu_cores !== undefined) facts.push(['CPU', `${fmtNum(m.cpu_cores, 3)} cores over all ranks, ${fmtNum(m.cpu_s_per_gb, 3)} CPU-s/GB`]);
    if (facts.length) part.push(kv(facts));
    out.push(h('div', {class: 'collective', dataset: {test: t.name}}, part));
  });
  return out.length ? section('Collectives', out) : null;
}

function otherTestsSection(c, rows, hostOf) {
  const out = [];
  (c.tests || []).forEach((t, ti) => {
    if (t.kind === 'congestion' || t.kind === 'collective' || t.pattern === 'pairs') return;
    const field = DEFAULT_FIELD[t.kind];
    out.push(sortableTable({
      caption: `${t.name} (${t.pattern})`,
      columns: [
        {key: 'pair', label: 'Pair', value: (r) => hostOf(r.a), render: (r) => `${hostOf(r.a)} → ${hostOf(r.b)}`},
        {key: 'rail', label: 'Rail', render: (r) => (r.rail === null ? '—' : String(r.rail))},
        {key: 'v', label: field, numeric: true, value: (r) => r.summary && r.summary.metrics && r.summary.metrics[field],
          render: (r) => fmtNum(r.summary && r.summary.metrics && r.summary.metrics[field], 4)},
        {key: 'state', label: 'State', render: (r) => badge(r.state === 'done' ? 'ok' : r.state)},
        {key: 'err', label: 'Error', render: (r) => r.error},
      ],
      rows: rows.filter((r) => r.test_index === ti && r.role === 'measure'),
    }).el);
  });
  return out.length ? section('Other tests', out) : null;
}

export async function campaignView(ctx, id) {
  const {api, session} = ctx;
  ctx.title(id);
  const head = h('div', {class: 'head'});
  const status = h('div');
  const actions = h('div', {class: 'actions'});
  const body = h('div');
  ctx.root.append(head, status, actions, body);
  let c = null;

  function draw(rows) {
    ctx.title(`${c.id} ${c.state}`);
    const hosts = new Map((c.nodes || []).map((n) => [n.id, n.hostname]));
    const hostOf = (idv) => hosts.get(idv) || idv;
    fill(head, h('h1', null, 'Campaign ', h('span', null, c.id)), badge(c.state, 'camp-state'),
      c.result ? [' ', badge(c.result, 'camp-result')] : null);
    head.dataset.state = c.state;
    const p = c.progress || {};
    const running = c.state === 'running';
    const prog = h('div', {class: 'progress-wrap'},
      h('label', {for: 'camp-progress', class: 'progress-text'}, progressText(c)),
      h('progress', {id: 'camp-progress', max: String(p.rounds_total || 1), value: String(p.rounds_done || 0)}),
      h('p', {class: 'mute counters'}, `${p.rows_done ?? 0} benchmark runs reported, ${p.rows_failed ?? 0} runs failed ` +
        '(errored or never reported; the rules are judged in the verdict)'));
    const maps = [];
    (c.tests || []).forEach((t, ti) => {
      if ((t.kind === 'lat' || t.kind === 'bw') && t.pattern === 'pairs' && (c.nodes || []).length >= 2) {
        maps.push(...testHeatmaps(c, ti, rows));
      }
    });
    const details = section('Details', kv([
      ['Cluster', c.cluster], ['Playbook', `${c.playbook} ${c.version}`],
      ['Transport', `${c.transport}${c.quick ? ' (quick: a smoke run, thresholds indicative)' : ''}`],
      ['Nodes', String((c.nodes || []).length)], ['Seed', String(c.seed)], ['Started by', fmtActor(c.actor)],
      ['Created', timeEl(c.created_at_ms)], ['Finished', timeEl(c.finished_at_ms)],
      ['Error', c.error ?? null],
    ]));
    // Running: its progress first; ended: the verdict and its failures first, the runs after.
    const runs = section(running ? 'Progress' : 'Runs', prog, testsTable(c));
    fill(body, running ? runs : null, verdictSection(c, hostOf),
      maps.length ? h('section', {class: 'card'}, h('h2', null, 'Pairs'), h('div', {class: 'heatmaps'}, maps)) : null,
      congestionSection(c, rows, hostOf) || '', collectiveSection(c, rows, hostOf) || '',
      otherTestsSection(c, rows, hostOf) || '',
      running ? null : runs, details);
    clear(actions);
    if (c.state === 'running' && session.mayCancel(c)) {
      actions.append(h('button', {type: 'button', class: 'danger', on: {click: async () => {
        if (!await confirmDialog({title: `Cancel ${c.id}?`, text: 'Running benchmarks stop; the verdict will be incomplete.',
          confirm: 'Cancel campaign', cancel: 'Keep it running'})) return;
        try {
          await api.postEmpty(`/api/v1/campaigns/${api.enc(c.id)}/cancel`);
          refresh();
        } catch (e) { fill(status, notice('Could not cancel: ' + e.message)); }
      }}}, 'Cancel campaign'));
    }
    if (c.state !== 'running') {
      actions.append(h('a', {href: '#/signoffs?campaign=' + encodeURIComponent(c.id), class: 'button-link'}, 'Sign-offs of this campaign'));
    }
  }

  async function load() {
    const doc = await api.get(`/api/v1/campaigns/${api.enc(id)}/results`);
    if (ctx.dead) return;
    c = doc;
    clear(status);
    draw(doc.results || []);
  }
  const refresh = coalesce(() => load().catch((e) => fill(status, notice('Could not refresh: ' + e.message))), 1000);
  const mine = (ev) => { if (ev.id === id) refresh(); };
  ctx.on('campaign.progress', mine);
  ctx.on('campaign.state', mine);
  // An ended campaign does not change: no second read of its results (20 MB for 256 nodes)
  // when the event stream opens or resets; one seen running is read again, it may have ended.
  const live = () => { if (!c || c.state === 'running') refresh(); };
  ctx.on('reset', live);
  ctx.on('open', live);
  await load();
  return () => refresh.cancel();
}
