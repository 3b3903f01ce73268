// Revalidations: the list, and one revalidation followed live (revalidation.state events):
// pending, configuring (its check-mode deployment), validating (its campaign, with the round it
// is at), then signed with the new sign-off and its verdict, failed with the reason, or cancelled.

import {h, clear, fill, badge, timeEl, soLink, depLink, campLink, rvLink, sortableTable, notice, section, kv,
        coalesce, fmtActor, fmtNum, words, fmtDuration} from '../dom.js';
import {confirmDialog} from './confirm.js';

const FINAL = new Set(['signed', 'failed', 'cancelled']);
const STEPS = ['pending', 'configuring', 'validating', 'signed'];

export async function revalidationsView(ctx) {
  const {api} = ctx;
  ctx.title('Revalidations');
  const status = h('div');
  const table = sortableTable({
    caption: 'Revalidations, newest first',
    columns: [
      {key: 'id', label: 'Revalidation', value: (r) => r.id, render: (r) => rvLink(r.id)},
      {key: 'cluster', label: 'Cluster', value: (r) => r.cluster, render: (r) => r.cluster},
      {key: 'baseline', label: 'Baseline', render: (r) => soLink(r.baseline)},
      {key: 'state', label: 'State', value: (r) => r.state, render: (r) => badge(r.state)},
      {key: 'verdict', label: 'Verdict', render: (r) => (r.verdict ? badge(r.verdict) : '—')},
      {key: 'signoff', label: 'Sign-off', render: (r) => (r.signoff ? soLink(r.signoff) : '—')},
      {key: 'created', label: 'Created', numeric: true, value: (r) => -r.created_at_ms, render: (r) => timeEl(r.created_at_ms)},
      {key: 'actor', label: 'By', render: (r) => fmtActor(r.actor)},
    ],
    rowAttrs: (r) => ({dataset: {revalidation: r.id}}),
    empty: 'No revalidation yet. Start one from a sign-off\'s page.',
  });
  ctx.root.append(h('h1', null, 'Revalidations'), status, table.el);
  const load = async () => {
    table.setRows((await api.get('/api/v1/revalidations?limit=200')).items);
    clear(status);
  };
  const refresh = coalesce(() => load().catch((e) => fill(status, notice(e.message))), 500);
  for (const t of ['revalidation.state', 'reset', 'open']) ctx.on(t, refresh);
  await load();
  return () => refresh.cancel();
}

// Where a revalidation is, as one bar: its check-mode deployment (nodes done) while configuring,
// its campaign (rounds run, with the campaign's estimate) while validating.
function progressOf(rv, dep, camp) {
  if (rv.state === 'configuring') {
    const nodes = (dep && dep.nodes) || [];
    const done = nodes.filter((n) => !['waiting', 'sent'].includes(n.state)).length;
    const checks = rv.checks || [];
    const k = Math.max(1, checks.findIndex((c) => c.deployment && dep && c.deployment === dep.id) + 1);
    return {value: done, max: nodes.length || 1,
      text: `Checking the configuration${checks.length > 1 ? ` (playbook ${k} of ${checks.length})` : ''}: ` +
        (nodes.length ? `${done} of ${nodes.length} nodes done` : 'starting') + '; then the campaign runs'};
  }
  if (rv.state === 'validating') {
    const p = (camp && camp.progress) || {};
    if (!p.rounds_total) return {value: 0, max: 1, text: 'Validating: the campaign starts'};
    return {value: p.rounds_done || 0, max: p.rounds_total,
      text: `Validating: campaign round ${Math.min((p.rounds_done || 0) + 1, p.rounds_total)} of ${p.rounds_total}` +
        (p.rounds_total_final === false ? ' (so far)' : '') +
        (p.eta_s ? `, about ${fmtDuration(p.eta_s)} left` : ', no estimate yet') + '; then the report is signed'};
  }
  if (rv.state === 'pending') return {value: 0, max: 1, text: 'Waiting to start'};
  return null;
}

export async function revalidationView(ctx, id) {
  const {api, session} = ctx;
  const head = h('div', {class: 'head'});
  const status = h('div');
  const actions = h('div', {class: 'actions'});
  const body = h('div');
  const prog = h('div', {class: 'progress-wrap'});
  const steps = h('ol', {class: 'steps-line', 'aria-label': 'Progress'});
  ctx.root.append(head, status, actions, section('Revalidation', steps, prog, body));
  let rv = null;

  async function load() {
    rv = await api.get('/api/v1/revalidations/' + api.enc(id));
    if (ctx.dead) return;
    let camp = null, dep = null;
    if (rv.campaign && rv.state === 'validating') camp = await api.get('/api/v1/campaigns/' + api.enc(rv.campaign)).catch(() => null);
    if (rv.state === 'configuring') {
      const c = (rv.checks || []).find((x) => x.deployment && !['succeeded', 'failed', 'cancelled'].includes(x.state)) ||
        (rv.checks || []).filter((x) => x.deployment).pop();
      if (c) dep = await api.get('/api/v1/deployments/' + api.enc(c.deployment)).catch(() => null);
    }
    if (ctx.dead) return;
    ctx.title(`${rv.id} ${rv.state}`);
    fill(head, h('h1', null, 'Revalidation ', h('span', null, rv.id)), badge(rv.state, 'rv-state'),
      rv.verdict ? [' ', badge(rv.verdict, 'rv-verdict')] : null);
    head.dataset.state = rv.state;
    const at = STEPS.indexOf(rv.state);
    fill(steps, ...STEPS.map((s, i) => h('li', {class: [i < at || rv.state === 'signed' ? 'done' : null, i === at ? 'current' : null],
      'aria-current': i === at ? 'step' : null}, s)));
    if (rv.state === 'failed' || rv.state === 'cancelled') steps.append(h('li', {class: 'current'}, rv.state));
    const pr = progressOf(rv, dep, camp);
    if (pr) {
      fill(prog, h('label', {for: 'rv-progress', class: 'progress-text'}, pr.text),
        h('progress', {id: 'rv-progress', max: String(pr.max), value: String(pr.value)}));
    } else clear(prog);
    // The verdict and what it found lead: the regressions and failed checks the report's
    // summary starts with, then the configuration checks, then the rest.
    const reg = rv.regressions || [];
    const findings = rv.verdict || (rv.summary && rv.summary.length) ? h('section', {class: ['findings', 'verdict-card'], 'aria-label': 'Findings',
      dataset: {verdict: rv.verdict || ''}},
    h('h2', null, 'Verdict ', rv.verdict ? badge(rv.verdict) : badge('none')),
    rv.state === 'failed' && rv.reason ? h('p', {class: 'notice notice-error'}, 'Failed: ', words(rv.reason)) : null,
    (rv.summary || []).length ? h('ul', {class: 'reasons'}, rv.summary.slice(0, 15).map((l) => h('li', null, words(l)))) : null,
    (rv.summary || []).length > 15 ? h('p', {class: 'mute'}, `and ${rv.summary.length - 15} more in the sign-off`) : null,
    reg.length ? sortableTable({caption: `Regressions beyond the tolerance (${reg.length})`, columns: [
      {key: 'test', label: 'Test', render: (m) => m.test}, {key: 'field', label: 'Field', render: (m) => m.field},
      {key: 'pair', label: 'Pair', render: (m) => `${m.a}${m.b ? ' ↔ ' + m.b : ''}`},
      {key: 'base', label: 'Baseline', numeric: true, render: (m) => fmtNum(m.baseline, 4)},
      {key: 'cur', label: 'Now', numeric: true, render: (m) => fmtNum(m.current, 4)},
      {key: 'delta', label: 'Change', numeric: true, render: (m) => `${fmtNum(m.delta_pct, 3)} %`},
    ], rows: reg.slice(0, 20)}).el : null)
      : rv.state === 'failed' ? h('p', {class: 'notice notice-error'}, 'Failed: ', words(rv.reason || 'no reason recorded')) : null;
    const checks = (rv.checks || []).map((c, i) => h('li', null, `${i + 1}. `,
      (c.playbook && c.playbook.name) || 'the playbook', ' ', (c.playbook && c.playbook.version) || '', ' ',
      c.deployment ? [depLink(c.deployment), ' ', badge(c.state || 'pending')] : badge('waiting'),
      c.reason ? ' ' + words(c.reason) : ''));
    const tol = (x, what) => (x ? `${what} ${fmtNum(x, 3)} %` : `${what} as the playbook says (or the default)`);
    const tolerances = !rv.tolerance_bw_pct && !rv.tolerance_lat_pct ? 'as the playbook says (or the defaults)'
      : `${tol(rv.tolerance_bw_pct, 'bandwidth')}; ${tol(rv.tolerance_lat_pct, 'latency')}`;
    const p = camp && camp.progress;
    fill(body, findings, kv([
      ['Cluster', rv.cluster], ['Baseline', soLink(rv.baseline)],
      ['Mode', rv.apply ? 'apply the playbook' : 'check mode (nothing on the nodes changes)'],
      ['Playbook', rv.custom_playbook ? 'its own' : 'the baseline\'s'],
      ['Tolerances', tolerances],
      ['State', badge(rv.state)], ['Reason', rv.reason ? words(rv.reason) : null],
      ['Configuration checked', checks.length ? h('ul', {class: 'checks'}, checks) : 'none'],
      ['Campaign', rv.campaign ? [campLink(rv.campaign), p && p.rounds_total ? ` (${p.rounds_done} of ${p.rounds_total} rounds)` : ''] : null],
      ['Sign-off', rv.signoff ? soLink(rv.signoff) : null],
      ['Verdict', rv.verdict ? badge(rv.verdict) : null],
      ['Started by', fmtActor(rv.actor)], ['Created', timeEl(rv.created_at_ms)], ['Finished', timeEl(rv.finished_at_ms)],
    ]));
    clear(actions);
    if (!FINAL.has(rv.state) && session.mayCancel(rv)) {
      actions.append(h('button', {type: 'button', class: 'danger', on: {click: async () => {
        if (!await confirmDialog({title: `Cancel ${rv.id}?`, text: 'The part it runs now is cancelled too.',
          confirm: 'Cancel revalidation', cancel: 'Keep it running'})) return;
        try {
          await api.postEmpty(`/api/v1/revalidations/${api.enc(rv.id)}/cancel`);
          refresh();
        } catch (e) { fill(status, notice('Could not cancel: ' + e.message)); }
      }}}, 'Cancel revalidation'));
    }
    clear(status);
  }
  const refresh = coalesce(() => load().catch((e) => fill(status, notice('Could not refresh: ' + e.message))), 300);
  ctx.on('revalidation.state', (ev) => { if (ev.id === id) refresh(); });
  ctx.on('campaign.progress', (ev) => { if (rv && ev.id === rv.campaign) refresh(); });
  for (const t of ['deployment.state', 'deployment.node']) {
    ctx.on(t, (ev) => { if (rv && rv.state === 'configuring' && (rv.checks || []).some((c) => c.deployment === ev.id)) refresh(); });
  }
  ctx.on('reset', refresh);
  ctx.on('open', refresh);
  await load();
  return () => refresh.cancel();
}
