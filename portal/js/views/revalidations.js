// Revalidations: the list, and one revalidation followed live (revalidation.state events):
// pending, configuring (its check-mode deployment), validating (its campaign, with the round it
// is at), then signed with the new sign-off and its verdict, failed with the reason, or cancelled.

import {h, clear, fill, badge, timeEl, soLink, depLink, campLink, rvLink, sortableTable, notice, section, kv,
        coalesce} from '../dom.js';
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
      {key: 'actor', label: 'By', render: (r) => r.actor},
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

export async function revalidationView(ctx, id) {
  const {api, session} = ctx;
  const head = h('div', {class: 'head'});
  const status = h('div');
  const actions = h('div', {class: 'actions'});
  const body = h('div');
  const steps = h('ol', {class: 'steps-line', 'aria-label': 'Progress'});
  ctx.root.append(head, status, actions, section('Revalidation', steps, body));
  let rv = null;

  async function load() {
    rv = await api.get('/api/v1/revalidations/' + api.enc(id));
    if (ctx.dead) return;
    let camp = null;
    if (rv.campaign && rv.state === 'validating') camp = await api.get('/api/v1/campaigns/' + api.enc(rv.campaign)).catch(() => null);
    ctx.title(`${rv.id} ${rv.state}`);
    fill(head, h('h1', null, 'Revalidation ', h('span', null, rv.id)), badge(rv.state, 'rv-state'));
    head.dataset.state = rv.state;
    const at = STEPS.indexOf(rv.state);
    fill(steps, ...STEPS.map((s, i) => h('li', {class: [i < at || rv.state === 'signed' ? 'done' : null, i === at ? 'current' : null],
      'aria-current': i === at ? 'step' : null}, s)));
    if (rv.state === 'failed' || rv.state === 'cancelled') steps.append(h('li', {class: 'current'}, rv.state));
    const p = camp && camp.progress;
    // The verdict and what it found lead: the regressions and failed checks the report's
    // summary starts with, then the configuration checks, then the rest.
    const findings = rv.summary && rv.summary.length ? h('section', {class: 'findings', 'aria-label': 'Findings'},
      h('h2', null, 'Verdict ', badge(rv.verdict)),
      h('ul', {class: 'reasons'}, rv.summary.slice(0, 15).map((l) => h('li', null, l))),
      rv.summary.length > 15 ? h('p', {class: 'mute'}, `and ${rv.summary.length - 15} more in the sign-off`) : null) : null;
    const checks = (rv.checks || []).map((c, i) => h('li', null, `${i + 1}. `,
      (c.playbook && c.playbook.name) || 'the playbook', ' ', (c.playbook && c.playbook.version) || '', ' ',
      c.deployment ? [depLink(c.deployment), ' ', badge(c.state || 'pending')] : badge('waiting'),
      c.reason ? ' ' + c.reason : ''));
    fill(body, findings, kv([
      ['Cluster', rv.cluster], ['Baseline', soLink(rv.baseline)],
      ['Mode', rv.apply ? 'apply the playbook' : 'check mode (nothing on the nodes changes)'],
      ['Playbook', rv.custom_playbook ? 'its own' : 'the baseline\'s'],
      ['Tolerances', `bandwidth ${rv.tolerance_bw_pct || 'default'} %, latency ${rv.tolerance_lat_pct || 'default'} %`],
      ['State', badge(rv.state)], ['Reason', rv.reason ?? null],
      ['Configuration checked', checks.length ? h('ul', {class: 'checks'}, checks) : 'none'],
      ['Campaign', rv.campaign ? [campLink(rv.campaign), p ? ` (${p.rounds_done} of ${p.rounds_total} rounds)` : ''] : null],
      ['Sign-off', rv.signoff ? soLink(rv.signoff) : null],
      ['Verdict', rv.verdict ? badge(rv.verdict) : null],
      ['Started by', rv.actor], ['Created', timeEl(rv.created_at_ms)], ['Finished', timeEl(rv.finished_at_ms)],
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
  ctx.on('reset', refresh);
  ctx.on('open', refresh);
  await load();
  return () => refresh.cancel();
}
