// Sign-offs: the list, and a sign-off's page: its verdict, whether the controller verifies the
// stored report against its CA, whether it still describes the cluster (stale, with reasons),
// the failures with their reasons, the configuration differences (between the nodes, against the
// baseline for a revalidation), the downloads (report, signature, HTML, CA) with the command that
// verifies them offline, and, for roles that may, Revalidate.

import {h, failingLinksList, failingPairsTable, clear, fill, badge, verdictOf, timeEl, soLink, campLink, sortableTable, notice, section, kv, coalesce,
        naturalCompare, fmtNum, fmtTime, fmtActor, words, failingNodeItem, attributionBadge, sameVersion} from '../dom.js';
import {confirmDialog} from './confirm.js';

export async function signoffsView(ctx) {
  const {api} = ctx;
  ctx.title('Sign-offs');
  const campaign = ctx.query.get('campaign');
  const status = h('div');
  const table = sortableTable({
    caption: campaign ? `Sign-offs of campaign ${campaign}` : 'Sign-offs, newest first',
    columns: [
      {key: 'id', label: 'Sign-off', value: (s) => s.id, render: (s) => soLink(s.id)},
      {key: 'cluster', label: 'Cluster', value: (s) => s.cluster, render: (s) => s.cluster},
      {key: 'kind', label: 'Kind', value: (s) => s.kind, render: (s) => s.kind},
      {key: 'verdict', label: 'Verdict', value: (s) => s.verdict, render: (s) => verdictOf(s)},
      {key: 'campaign', label: 'Campaign', render: (s) => campLink(s.campaign)},
      {key: 'baseline', label: 'Baseline', render: (s) => (s.baseline ? soLink(s.baseline) : '—')},
      {key: 'created', label: 'Signed', numeric: true, value: (s) => -s.created_at_ms, render: (s) => timeEl(s.created_at_ms)},
      {key: 'actor', label: 'By', render: (s) => fmtActor(s.actor)},
    ],
    rowAttrs: (s) => ({dataset: {signoff: s.id}}),
    empty: 'No sign-off yet.',
  });
  ctx.root.append(h('h1', null, 'Sign-offs'), status, table.el);
  const load = async () => {
    let items = (await api.get('/api/v1/signoffs?limit=200')).items;
    if (campaign) items = items.filter((s) => s.campaign === campaign);
    table.setRows(items);
    clear(status);
  };
  const refresh = coalesce(() => load().catch((e) => fill(status, notice(e.message))), 500);
  for (const t of ['signoff.created', 'reset', 'open']) ctx.on(t, refresh);
  await load();
  return () => refresh.cancel();
}

// The fields of the nodes' configuration snapshots on which they differ.
function configDifferences(nodes) {
  const flat = (snap) => {
    const out = {};
    if (!snap) return out;
    for (const k of ['os', 'kernel', 'nvidia_driver', 'gpudirect', 'topology_digest']) {
      if (snap[k] !== undefined) out[k] = String(snap[k]);
    }
    if (snap.ofed) for (const [k, v] of Object.entries(snap.ofed)) out['ofed.' + k] = String(v);
    if (snap.software) for (const [k, v] of Object.entries(snap.software)) out['software.' + k] = String(v);
    if (Array.isArray(snap.hcas)) {
      out['hcas'] = String(snap.hcas.length);
      out['hcas active'] = String(snap.hcas.filter((x) => String(x.state).toUpperCase() === 'ACTIVE').length);
      out['hca firmware'] = [...new Set(snap.hcas.map((x) => x.fw_ver))].sort().join(', ');
      out['hca rates'] = [...new Set(snap.hcas.map((x) => x.rate_gbps))].sort((a, b) => a - b).join(', ');
      out['hca pcie'] = [...new Set(snap.hcas.map((x) => x.pcie))].sort().join(', ');
    }
    if (Array.isArray(snap.gpus)) {
      out['gpus'] = String(snap.gpus.length);
      out['gpu pcie'] = [...new Set(snap.gpus.map((x) => x.pcie))].sort().join(', ');
    }
    return out;
  };
  const per = nodes.map((n) => ({host: n.hostname, f: flat(n.snapshot)}));
  const fields = new Set(per.flatMap((p) => Object.keys(p.f)));
  const rows = [];
  const spelled = [];
  for (const field of [...fields].sort()) {
    const groups = new Map();
    for (const p of per) {
      const v = p.f[field] ?? '(absent)';
      if (!groups.has(v)) groups.set(v, []);
      groups.get(v).push(p.host);
    }
    if (groups.size < 2) continue;
    // One version spelled two ways (24.10-1.1.4.0 and 24.10-1.1.4) is no difference: said apart.
    const values = [...groups.keys()];
    if (values.every((v) => sameVersion(v, values[0]))) {
      spelled.push({field, values});
      continue;
    }
    for (const [value, hosts] of [...groups].sort((a, b) => b[1].length - a[1].length)) {
      rows.push({field, value, hosts: hosts.sort(naturalCompare)});
    }
  }
  rows.spelled = spelled;
  return rows;
}

// What failed, from the signed report's evaluation (the campaign's verdict): the failing nodes
// with their reasons, one entry each; links; the failing pairs (transients apart: not failures);
// nodes left out. Returns {items: [Node], count}.
function failures(report) {
  const ev = report.evaluation || {};
  const hosts = new Map((report.nodes || []).map((n) => [n.id, n.hostname]));
  const hostOf = (x) => hosts.get(x) || x;
  const out = [];
  const bad = (ev.nodes || []).filter((n) => n.result === 'fail').sort((a, b) => naturalCompare(a.hostname, b.hostname));
  if (bad.length) out.push(h('h3', null, 'Failing nodes'), h('ul', {class: 'failing-nodes'}, bad.map((n) => failingNodeItem(n, 'fail'))));
  if ((ev.links || []).length) {
    out.push(h('h3', null, 'Failing links'), failingLinksList(ev.links));
  }
  const pairs = [], transients = [];
  for (const t of ev.tests || []) {
    for (const f of t.failures || []) (f.attributed === 'transient' ? transients : pairs).push({t, f});
  }
  if (pairs.length) {
    out.push(failingPairsTable(pairs, hostOf));
  }
  if (transients.length) {
    out.push(h('p', {class: 'transients'}, attributionBadge('transient'), ' not failures: ',
      transients.map(({t, f}) => `${hostOf(f.a)} ↔ ${hostOf(f.b)} (${t.name})`).join(', ')));
  }
  if ((ev.left_out || []).length) {
    out.push(h('h3', null, 'Left out'), h('ul', {class: 'reasons'}, ev.left_out.map((n) => h('li', null, `${n.hostname}: ${words(n.reason)}`))));
  }
  return {items: out, count: bad.length + (ev.links || []).length + pairs.length};
}

// How to verify the downloaded files offline (docs/signoff.md, "Verifying"): the railyard
// verifier, or stock OpenSSL in two steps. The OpenSSL text is common/signoff/verify.h's
// SO_VERIFY_OPENSSL with the download names; its first step alone accepts a signature by any
// certificate the CA issued (a node's TLS certificate too), the second checks that the signer is
// the sign-off key (extended key usage 1.3.6.1.5.5.7.3.36 and nothing else).
function verifyCommands(id) {
  const json = `${id}-signoff.json`, p7s = `${id}-signoff.p7s`;
  return {
    railyard: `railyard signoff verify ${json} ${p7s} --ca ca.pem`,
    openssl: `openssl cms -verify -binary -content ${json} -in ${p7s} -inform PEM \\\n` +
      '    -CAfile ca.pem -purpose any -signer signer.pem -out /dev/null &&\n' +
      'openssl x509 -in signer.pem -noout -ext extendedKeyUsage |\n' +
      "    grep -Eqx ' *(1\\.3\\.6\\.1\\.5\\.5\\.7\\.3\\.36|Document Signing)' &&\n" +
      "echo 'sign-off verified: signed by the sign-off key'",
  };
}

export async function signoffView(ctx, id) {
  const {api, session} = ctx;
  const so = await api.get('/api/v1/signoffs/' + api.enc(id));
  ctx.title(`${so.id} ${so.verdict}`);
  const verifyEl = h('div', {class: 'verify', dataset: {verified: 'pending'}}, h('span', {class: 'mute'}, 'Checking the signature…'));
  const fail = h('div', {class: 'failures'}, h('p', {class: 'mute'}, 'Loading the report…'));
  const regress = h('div', {class: 'regressions'});
  const diffs = h('div', null, h('p', {class: 'mute'}, 'Loading the report…'));
  const cpu = h('div', {class: 'cpu-cost'}, h('p', {class: 'mute'}, 'Loading the report…'));
  const status = h('div');
  const actions = h('div', {class: 'actions'});
  const file = (name) => h('button', {type: 'button', class: 'download', dataset: {file: name}, on: {click: async () => {
    clear(status);
    try { await api.download(`/api/v1/signoffs/${api.enc(so.id)}/${name}`, `${so.id}-${name}`); }
    catch (e) { status.append(notice(`Could not download ${name}: ${e.message}`)); }
  }}}, name);

  if (session.may('operate')) {
    actions.append(h('button', {type: 'button', class: 'primary', id: 'revalidate', on: {click: async () => {
      const ok = await confirmDialog({
        title: `Revalidate ${so.cluster} against ${so.id}?`,
        text: 'The controller deploys the baseline\'s playbook in check mode (nothing on the nodes changes), ' +
          'runs the baseline\'s campaign again and signs a report that compares the two.',
        confirm: 'Revalidate', cancel: 'Cancel', danger: false});
      if (!ok) return;
      try {
        const rv = await api.post('/api/v1/revalidations', {cluster: so.cluster, baseline: so.id});
        ctx.navigate('/revalidations/' + encodeURIComponent(rv.id));
      } catch (e) {
        fill(status, notice('Could not start a revalidation: ' + e.message));
      }
    }}}, 'Revalidate'));
  }

  // The verdict and what failed lead; the report's metadata, the configuration and the
  // downloads follow.
  const lead = so.headline || so.verdict;
  ctx.root.append(
    h('div', {class: 'head'}, h('h1', null, 'Sign-off ', h('span', null, so.id)), verdictOf(so, 'verdict')),
    status, actions,
    h('section', {class: ['card', 'verdict-card', 'verdict-' + so.verdict], dataset: {verdict: so.verdict}},
      h('h2', null, so.verdict === 'pass' ? 'Verdict' : 'Verdict and failures'),
      h('p', {class: 'verdict-line'}, badge(so.verdict), ' ', `${lead} (${so.cluster}, ${(so.covered || []).length} nodes covered)`),
      so.acceptance ? null : h('div', {class: 'acceptance-no'},
        h('p', null, 'Not an acceptance sign-off, because:'),
        h('ul', {class: 'reasons'}, (so.acceptance_reasons || ['not an acceptance sign-off']).map((r) => h('li', null, r)))),
      (so.excluded_nodes || []).length ? [h('h3', null, 'Excluded nodes (judged without them)'),
        h('ul', {class: 'failing-nodes'}, so.excluded_nodes.map((n) => failingNodeItem(n, 'excluded')))] : null,
      so.stale ? [h('p', {class: 'stale'}, badge('stale'), ' It no longer describes the cluster:'),
        h('ul', {class: 'reasons stale-reasons'}, (so.reasons || []).map((r) => h('li', null, r)))] : null,
      regress, fail),
    section('Verification', verifyEl),
    section('Summary', h('ul', {class: 'findings'}, (so.summary || []).map((l) => h('li', null, words(l))))),
    section('Bandwidth and its CPU cost', cpu),
    section('Configuration differences', diffs),
    section('Details', kv([
      ['Cluster', so.cluster], ['Kind', so.kind],
      ['Campaign', campLink(so.campaign)], ['Baseline', so.baseline ? soLink(so.baseline) : null],
      ['Signed', timeEl(so.created_at_ms)], ['By', fmtActor(so.actor)], ['Report SHA-256', h('code', null, so.sha256)],
      ['Nodes covered', String((so.covered || []).length)],
      ['Still describes the cluster', so.stale ? badge('stale') : badge('current')],
    ])),
    section('Downloads',
      h('div', {class: 'downloads'}, file('signoff.json'), file('signoff.p7s'), file('signoff.html'),
        h('a', {href: '/api/v1/ca.pem', download: 'ca.pem', class: 'button-link', dataset: {file: 'ca.pem'}}, 'ca.pem')),
      h('p', null, 'Verify offline (compare the CA\'s fingerprint with the one your administrator gave you), with the railyard command line:'),
      h('pre', {class: 'cmd', dataset: {verify: 'railyard'}}, verifyCommands(so.id).railyard),
      h('p', null, 'or with nothing but OpenSSL, both steps: the first alone also accepts a signature by any other certificate of the CA, such as a node\'s; the second checks that the signer is the sign-off key. Trust the report only when the last line prints.'),
      h('pre', {class: 'cmd', dataset: {verify: 'openssl'}}, verifyCommands(so.id).openssl)));

  (async () => {
    try {
      const v = await api.get(`/api/v1/signoffs/${api.enc(so.id)}/verify`);
      verifyEl.dataset.verified = String(Boolean(v.verified));
      fill(verifyEl, v.verified
        ? h('p', null, badge('verified'), ` The stored report and its signature verify against the controller's CA: signed by ${v.signer} at ${Number.isNaN(Date.parse(v.signed_at)) ? v.signed_at : fmtTime(Date.parse(v.signed_at))}.`)
        : h('p', null, badge('failed'), ` The stored report does not verify: ${v.reason || 'status ' + v.status}.`));
    } catch (e) {
      verifyEl.dataset.verified = 'unknown';
      fill(verifyEl, notice('The controller could not check the signature: ' + e.message, e.status === 404 ? 'info' : 'error'));
    }
  })();

  (async () => {
    const report = await api.get(`/api/v1/signoffs/${api.enc(so.id)}/signoff.json`);
    if (ctx.dead) return;
    const fl = failures(report);
    fill(fail, fl.count ? fl.items : [h('p', null, so.verdict === 'pass' ? 'No failure: every test passed.' : 'No failing node, link or pair.'), fl.items]);
    const costs = Array.isArray(report.cpu_cost) ? report.cpu_cost : [];
    fill(cpu, costs.length ? h('ul', {class: 'findings'}, costs.map((e) => h('li', {dataset: {test: e.test}}, e.text)))
      : h('p', null, 'The report holds no CPU figures (no bandwidth test, or agents that did not report them).'));
    const rows = configDifferences(report.nodes || []);
    const parts = [];
    const cmp = report.comparison;
    const plain = (v) => (v === null || v === undefined ? '(absent)' : typeof v === 'object' ? JSON.stringify(v) : String(v));
    if (cmp) {
      const reg = cmp.regressions || [];
      const tol = cmp.tolerance || {};
      const pct = (x) => (typeof x === 'number' ? `${fmtNum(x, 3)} %` : 'not recorded');
      fill(regress, h('h3', null, `Against the baseline ${report.baseline ? report.baseline.id : ''}: ` +
        `${reg.length} regression${reg.length === 1 ? '' : 's'} beyond the tolerance (bandwidth ${pct(tol.bw_pct)}, latency ${pct(tol.lat_pct)})`),
      reg.length ? sortableTable({caption: 'Regressions', columns: [
        {key: 'test', label: 'Test', render: (m) => m.test}, {key: 'field', label: 'Field', render: (m) => m.field},
        {key: 'pair', label: 'Pair', render: (m) => `${m.a}${m.b ? ' ↔ ' + m.b : ''}`},
        {key: 'base', label: 'Baseline', numeric: true, render: (m) => fmtNum(m.baseline, 4)},
        {key: 'cur', label: 'Now', numeric: true, render: (m) => fmtNum(m.current, 4)},
        {key: 'delta', label: 'Change', numeric: true, render: (m) => `${fmtNum(m.delta_pct, 3)} %`},
      ], rows: reg}).el : null);
      parts.push(h('h3', null, `Against the baseline ${report.baseline ? report.baseline.id : ''}`));
      if ((cmp.drift || []).length) {
        parts.push(sortableTable({caption: 'Configuration drift since the baseline', columns: [
          {key: 'field', label: 'Field', render: (d) => d.field},
          {key: 'from', label: 'Baseline', render: (d) => plain(d.from)},
          {key: 'to', label: 'Now', render: (d) => plain(d.to)},
          {key: 'nodes', label: 'Nodes', render: (d) => (d.nodes || []).join(', ')},
          {key: 'note', label: 'Note', render: (d) => (sameVersion(plain(d.from), plain(d.to)) ? 'the same version, spelled differently' : '')},
        ], rows: cmp.drift, rowAttrs: (d) => (sameVersion(plain(d.from), plain(d.to)) ? {class: 'mute'} : null)}).el);
      } else parts.push(h('p', null, 'No configuration drift since the baseline.'));
      if ((cmp.nodes_added || []).length) parts.push(h('p', null, 'Nodes added: ' + cmp.nodes_added.join(', ')));
      if ((cmp.nodes_removed || []).length) parts.push(h('p', null, 'Nodes removed: ' + cmp.nodes_removed.join(', ')));
    }
    parts.push(h('h3', null, 'Between the nodes'));
    parts.push(rows.length ? sortableTable({caption: 'Where the nodes\' configurations differ', columns: [
      {key: 'field', label: 'Field', render: (r) => r.field},
      {key: 'value', label: 'Value', render: (r) => r.value},
      {key: 'hosts', label: 'Nodes', render: (r) => r.hosts.join(', ')},
    ], rows}).el : h('p', null, 'The nodes are configured alike.'));
    if (rows.spelled.length) {
      parts.push(h('p', {class: 'mute'}, 'Spelled differently, the same version: ',
        rows.spelled.map((x) => `${x.field} (${x.values.join(' and ')})`).join('; '), '.'));
    }
    fill(diffs, ...parts);
  })().catch((e) => {
    if (ctx.dead) return;
    fill(fail, notice('Could not read the report: ' + e.message));
    clear(diffs);
    clear(cpu);
  });
}
