// Maintenances: the list, and one maintenance followed live (maintenance.state and
// maintenance.node events): its batches with their deployments, campaigns and sign-offs, and
// each node's maintenance state, failures first (held out, then the nodes at work: waiting for
// jobs with the job ids, draining, configuring, validating; then the rest).

import {h, clear, fill, badge, timeEl, depLink, campLink, soLink, link, nodeLink, sortableTable, notice, section,
        kv, coalesce, fmtActor, words, fmtDuration} from '../dom.js';
import {confirmDialog} from './confirm.js';

const FINAL = new Set(['succeeded', 'failed', 'cancelled']);
// Failures first, then what is at work, then the rest (as `railyard maintenance show`).
const RANK = ['held_out', 'waiting_for_jobs', 'draining', 'configuring', 'rebooting', 'validating',
  'waiting', 'resumed', 'skipped'];
const rank = (s) => { const i = RANK.indexOf(s); return i < 0 ? RANK.length : i; };

export function mtLink(id) { return link('/maintenances/' + encodeURIComponent(id), id); }

export async function maintenancesView(ctx) {
  const {api} = ctx;
  ctx.title('Maintenances');
  const status = h('div');
  const table = sortableTable({
    caption: 'Maintenances, newest first',
    columns: [
      {key: 'id', label: 'Maintenance', value: (m) => m.id, render: (m) => mtLink(m.id)},
      {key: 'cluster', label: 'Cluster', value: (m) => m.cluster, render: (m) => m.cluster},
      {key: 'mode', label: 'Mode', value: (m) => m.mode, render: (m) => m.mode},
      {key: 'playbook', label: 'Playbook', render: (m) => (m.playbook ? `${m.playbook.name} ${m.playbook.version}` : '—')},
      {key: 'state', label: 'State', value: (m) => m.state, render: (m) => badge(m.state)},
      {key: 'batch', label: 'Batch', numeric: true, value: (m) => m.current_batch,
        render: (m) => `${Math.min(m.current_batch + 1, m.n_batches)} of ${m.n_batches}`},
      {key: 'reason', label: 'Reason', render: (m) => (m.reason ? words(m.reason) : '')},
      {key: 'created', label: 'Created', numeric: true, value: (m) => -m.created_at_ms, render: (m) => timeEl(m.created_at_ms)},
      {key: 'actor', label: 'By', render: (m) => fmtActor(m.actor)},
    ],
    rowAttrs: (m) => ({dataset: {maintenance: m.id, state: m.state}}),
    empty: 'No maintenance yet. Start one with `railyard deploy --maintenance` or `railyard revalidate --maintenance`.',
  });
  ctx.root.append(h('h1', null, 'Maintenances'), status, table.el);
  const load = async () => {
    table.setRows((await api.get('/api/v1/maintenances?limit=200')).items);
    clear(status);
  };
  const refresh = coalesce(() => load().catch((e) => fill(status, notice(e.message))), 500);
  for (const t of ['maintenance.state', 'reset', 'open']) ctx.on(t, refresh);
  await load();
  return () => refresh.cancel();
}

export async function maintenanceView(ctx, id) {
  const {api, session} = ctx;
  const head = h('div', {class: 'head'});
  const status = h('div');
  const actions = h('div', {class: 'actions'});
  const body = h('div');
  ctx.root.append(head, status, actions, body);
  let m = null;

  async function load() {
    m = await api.get('/api/v1/maintenances/' + api.enc(id));
    if (ctx.dead) return;
    ctx.title(`${m.id} ${m.state}`);
    fill(head, h('h1', null, 'Maintenance ', h('span', null, m.id)), badge(m.state, 'mt-state'));
    head.dataset.state = m.state;
    const nodes = [...(m.nodes || [])].sort((a, b) => rank(a.state) - rank(b.state) || a.batch - b.batch ||
      a.hostname.localeCompare(b.hostname));
    const held = nodes.filter((n) => n.state === 'held_out');
    const now = Date.now();
    const nodeTable = sortableTable({
      caption: `Nodes (${nodes.length}), failures first`,
      columns: [
        {key: 'host', label: 'Node', render: (n) => nodeLink(n.node_id, n.hostname)},
        {key: 'batch', label: 'Batch', numeric: true, render: (n) => String(n.batch)},
        {key: 'state', label: 'State', render: (n) => badge(n.state)},
        {key: 'since', label: 'For', numeric: true, render: (n) => (n.since_ms ? fmtDuration(Math.max(0, (now - n.since_ms) / 1000)) : '')},
        {key: 'why', label: 'Jobs or reason', render: (n) => (n.jobs && n.jobs.length ? 'waiting for job(s) ' + n.jobs.join(', ')
          : n.reason ? words(n.reason) : '')},
      ],
      rows: nodes,
      rowAttrs: (n) => ({dataset: {node: n.hostname, state: n.state}}),
    });
    const batchTable = sortableTable({
      caption: `Batches of ${m.batch_size} (asked ${m.batch}, min_in_service ${m.min_in_service})`,
      columns: [
        {key: 'batch', label: 'Batch', numeric: true, render: (b) => String(b.batch)},
        {key: 'state', label: 'State', render: (b) => badge(b.state)},
        {key: 'dep', label: 'Deployment', render: (b) => (b.deployment ? depLink(b.deployment) : '—')},
        {key: 'camp', label: 'Campaign', render: (b) => (b.campaign ? campLink(b.campaign) : '—')},
        {key: 'so', label: 'Sign-off', render: (b) => (b.signoff ? soLink(b.signoff) : '—')},
        {key: 'started', label: 'Started', render: (b) => timeEl(b.started_at_ms)},
        {key: 'finished', label: 'Finished', render: (b) => timeEl(b.finished_at_ms)},
      ],
      rows: m.batches || [],
      rowAttrs: (b) => ({dataset: {batch: String(b.batch), state: b.state}}),
    });
    fill(body,
      m.state === 'failed' || m.state === 'cancelled' ? h('p', {class: 'notice notice-error'}, `${m.state}: `, words(m.reason || 'no reason recorded')) : null,
      held.length ? section(`Held out (${held.length}): left drained in the workload manager`,
        h('ul', {class: 'reasons'}, held.map((n) => h('li', {dataset: {node: n.hostname}}, nodeLink(n.node_id, n.hostname), ': ', words(n.reason || ''))))) : null,
      section('Nodes', nodeTable.el),
      section('Batches', batchTable.el),
      section('Maintenance', kv([
        ['Cluster', m.cluster], ['Mode', m.mode], ['Scope', m.scope || 'the whole cluster'],
        ['Playbook', m.playbook ? `${m.playbook.name} ${m.playbook.version}` : null],
        ['Baseline', m.baseline ? soLink(m.baseline) : null],
        ['Batch', `${Math.min(m.current_batch + 1, m.n_batches)} of ${m.n_batches}`],
        ['Out of service now', String(m.out_of_service)],
        ['Job timeout', fmtDuration(m.job_timeout_ms / 1000)],
        ['Started by', fmtActor(m.actor)], ['Created', timeEl(m.created_at_ms)], ['Finished', timeEl(m.finished_at_ms)],
      ])));
    clear(actions);
    if (!FINAL.has(m.state) && session.mayCancel(m)) {
      actions.append(h('button', {type: 'button', class: 'danger', on: {click: async () => {
        if (!await confirmDialog({title: `Cancel ${m.id}?`,
          text: 'Nodes not changed yet are handed back; nodes being configured or validated stay drained.',
          confirm: 'Cancel maintenance', cancel: 'Keep it running'})) return;
        try {
          await api.postEmpty(`/api/v1/maintenances/${api.enc(m.id)}/cancel`);
          refresh();
        } catch (e) { fill(status, notice('Could not cancel: ' + e.message)); }
      }}}, 'Cancel maintenance'));
    }
    clear(status);
  }
  const refresh = coalesce(() => load().catch((e) => fill(status, notice('Could not refresh: ' + e.message))), 300);
  for (const t of ['maintenance.state', 'maintenance.node']) ctx.on(t, (ev) => { if (ev.id === id) refresh(); });
  ctx.on('reset', refresh);
  ctx.on('open', refresh);
  await load();
  return () => refresh.cancel();
}
