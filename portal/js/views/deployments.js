// Deployments: the list (and, for roles that may, a form to start one), and a deployment's page
// that follows it live from the event stream: batch by batch, node by node, step by step, with
// each step's status, message and diff; cancel for roles that may.

import {h, clear, fill, badge, timeEl, depLink, nodeLink, sortableTable, coalesce, notice, section, kv,
        naturalCompare, fmtNum} from '../dom.js';
import {diffView} from '../diff.js';
import {confirmDialog} from './confirm.js';

const FINAL = new Set(['succeeded', 'partial', 'failed', 'cancelled']);

// A node's first failed step (null when none failed).
function failedStep(n) {
  return (n.steps || []).find((st) => st.status === 'failed') || null;
}
// The raw detail an agent may keep beneath a step's human message (the expression it evaluated).
function stepDetail(st) {
  for (const k of ['detail', 'raw', 'expression']) if (typeof st[k] === 'string' && st[k] && st[k] !== st.message) return st[k];
  return null;
}
// What failed, in words: "gpu-node-03: step "hca ports active": mlx5_3 port 1 is DOWN" for the
// first node that failed (and how many others did), from a deployment with its nodes and steps.
function failureLine(d) {
  const bad = (d.nodes || []).filter((n) => n.state === 'failed' || n.state === 'unreachable')
    .sort((a, b) => naturalCompare(a.hostname, b.hostname));
  if (!bad.length) return null;
  const n = bad[0], st = failedStep(n);
  return h('span', {class: 'failure-line', dataset: {node: n.node_id}},
    h('span', {class: 'icon', 'aria-hidden': 'true'}, '✕ '), h('b', null, n.hostname), ': ',
    st ? ['step ', h('q', {class: 'step-name'}, st.name), st.message ? ': ' + st.message : ''] : (n.message || n.state),
    bad.length > 1 ? ` (and ${bad.length - 1} more node${bad.length === 2 ? '' : 's'})` : '');
}

function playbookForm(ctx, {kind, fields, submit}) {
  // Shared by the deployment and campaign forms: cluster, playbook (a file or pasted text).
  const {api} = ctx;
  const id = (x) => `${kind}-${x}`;
  const cluster = h('select', {id: id('cluster'), required: true});
  const file = h('input', {id: id('file'), type: 'file', accept: '.yaml,.yml,text/yaml,text/plain'});
  const text = h('textarea', {id: id('playbook'), rows: '10', required: true, spellcheck: 'false',
    placeholder: 'name: ...\nversion: "1.0"\nsteps: ...'});
  const out = h('div', {class: 'form-status'});
  const go = h('button', {type: 'submit', class: 'primary'}, kind === 'dep' ? 'Start deployment' : 'Start campaign');
  file.addEventListener('change', async () => {
    if (file.files && file.files[0]) text.value = await file.files[0].text();
  });
  // A deployment may reuse a playbook uploaded before (newest first), and check the text before
  // it starts anything (POST /api/v1/playbooks/check: nothing is stored).
  let reuse = null, checkBtn = null;
  const checkOut = h('div', {class: 'check-status', role: 'status'});
  if (kind === 'dep') {
    reuse = h('select', {id: id('uploaded')}, h('option', {value: ''}, 'none: a file or the text below'));
    reuse.addEventListener('change', async () => {
      if (!reuse.value) return;
      try {
        text.value = (await api.get('/api/v1/playbooks/' + api.enc(reuse.value))).text || '';
      } catch (e) { fill(checkOut, notice('Could not read the playbook: ' + e.message)); }
    });
    checkBtn = h('button', {type: 'button', id: id('check-playbook'), on: {click: async () => {
      clear(checkOut);
      checkBtn.disabled = true;
      try {
        const body = {playbook: text.value};
        if (cluster.value) body.cluster = cluster.value;
        const r = await api.post('/api/v1/playbooks/check', body);
        checkOut.append(h('p', {class: 'check-ok', dataset: {valid: 'true'}}, h('span', {class: 'icon', 'aria-hidden': 'true'}, '✓ '),
          `Valid: ${r.name} ${r.version}, ${(r.steps || []).length} step${(r.steps || []).length === 1 ? '' : 's'}` +
          ((r.steps || []).length ? ` (${r.steps.map((x) => x.name).join(', ')})` : '')));
      } catch (e) {
        checkOut.append(h('div', {dataset: {valid: 'false'}}, notice(e.message),
          e.details ? h('ul', {class: 'reasons'}, e.details.map((d) => h('li', null, `line ${d.line} column ${d.column}: ${d.message}`))) : null));
      } finally {
        checkBtn.disabled = false;
      }
    }}}, 'Check playbook');
  }
  const form = h('form', {class: 'stack', on: {submit: async (ev) => {
    ev.preventDefault();
    clear(out);
    go.disabled = true;
    try {
      await submit({cluster: cluster.value, playbook: text.value});
    } catch (e) {
      out.append(notice(e.message));
      if (e.details) out.append(h('ul', {class: 'reasons'}, e.details.map((d) => h('li', null, `line ${d.line} column ${d.column}: ${d.message}`))));
    } finally {
      go.disabled = false;
    }
  }}},
  h('div', {class: 'row'}, h('label', {for: id('cluster')}, 'Cluster'), cluster),
  reuse ? h('div', {class: 'row'}, h('label', {for: id('uploaded')}, 'Uploaded playbook'), reuse) : null,
  h('div', {class: 'row'}, h('label', {for: id('file')}, 'Playbook file'), file),
  h('div', {class: 'row'}, h('label', {for: id('playbook')}, 'Playbook (YAML)'), text),
  checkBtn ? h('div', {class: 'row'}, checkBtn, checkOut) : null,
  fields, go, out);
  if (reuse) {
    // Edited text is no longer the uploaded playbook.
    text.addEventListener('input', () => { reuse.value = ''; clear(checkOut); });
    (async () => {
      const list = (await api.get('/api/v1/playbooks?limit=50')).items || [];
      const seen = new Set();
      for (const u of list) {
        if (seen.has(u.sha256)) continue;
        seen.add(u.sha256);
        reuse.append(h('option', {value: u.sha256}, `${u.name} ${u.version} (${u.cluster}, ${String(u.sha256).slice(0, 12)})`));
      }
    })().catch((e) => out.append(notice('Could not list the uploaded playbooks: ' + e.message)));
  }
  (async () => {
    const cs = (await api.getAll('/api/v1/clusters')).map((c) => c.cluster).sort(naturalCompare);
    const names = ctx.session.who.clusters === null ? cs : [...new Set([...cs, ...ctx.session.who.clusters])];
    cluster.append(...names.map((c) => h('option', {value: c}, c)));
  })().catch((e) => out.append(notice('Could not list the clusters: ' + e.message)));
  return form;
}
export {playbookForm};

function field(id, label, input, help) {
  input.id = id;
  return h('div', {class: 'row'}, h('label', {for: id}, label), input, help ? h('span', {class: 'help'}, help) : null);
}

export async function deploymentsView(ctx) {
  const {api, session} = ctx;
  ctx.title('Deployments');
  const status = h('div');
  // Which step failed, for the failed and partial ones: read once each (a finished deployment
  // does not change), the newest 20 of them.
  const failures = new Map();
  const table = sortableTable({
    caption: 'Deployments, newest first',
    columns: [
      {key: 'id', label: 'Deployment', value: (d) => d.id, render: (d) => depLink(d.id)},
      {key: 'cluster', label: 'Cluster', value: (d) => d.cluster, render: (d) => d.cluster},
      {key: 'pb', label: 'Playbook', value: (d) => d.playbook, render: (d) => `${d.playbook} ${d.version}`},
      {key: 'mode', label: 'Mode', value: (d) => d.check_mode, render: (d) => (d.check_mode ? 'check' : 'apply')},
      {key: 'state', label: 'State', value: (d) => d.state, render: (d) => badge(d.state)},
      {key: 'reason', label: 'What failed, or why it ended', render: (d) => (failures.has(d.id)
        ? h('span', null, failures.get(d.id), d.reason ? h('span', {class: 'mute'}, ' — ', d.reason) : null)
        : d.reason)},
      {key: 'created', label: 'Created', numeric: true, value: (d) => -d.created_at_ms, render: (d) => timeEl(d.created_at_ms)},
      {key: 'actor', label: 'By', value: (d) => d.actor, render: (d) => d.actor},
    ],
    rowAttrs: (d) => ({dataset: {deployment: d.id}}),
    empty: 'No deployment yet.',
  });
  ctx.root.append(h('h1', null, 'Deployments'));
  if (session.may('configure')) {
    const check = h('input', {type: 'checkbox', checked: true});
    const batch = h('input', {type: 'text', placeholder: 'playbook\'s (e.g. 1 or 25%)', size: '12'});
    const maxFail = h('input', {type: 'text', placeholder: 'playbook\'s', size: '12'});
    const canary = h('input', {type: 'number', min: '0', max: '100000', placeholder: 'playbook\'s'});
    const pause = h('input', {type: 'number', min: '0', max: '86400000', placeholder: 'playbook\'s'});
    const form = playbookForm(ctx, {
      kind: 'dep',
      fields: h('div', null,
        field('dep-check', 'Check mode (change nothing, show what would change)', check),
        field('dep-batch', 'Batch', batch), field('dep-maxfail', 'Failures tolerated', maxFail),
        field('dep-canary', 'Canary nodes', canary), field('dep-pause', 'Pause between batches (ms)', pause)),
      submit: async ({cluster, playbook}) => {
        const body = {cluster, playbook, check: check.checked};
        if (batch.value.trim()) body.batch = batch.value.trim();
        if (maxFail.value.trim()) body.max_fail = maxFail.value.trim();
        if (canary.value !== '') body.canary = Number(canary.value);
        if (pause.value !== '') body.pause_ms = Number(pause.value);
        const d = await api.post('/api/v1/deployments', body);
        ctx.navigate('/deployments/' + encodeURIComponent(d.id));
      },
    });
    ctx.root.append(h('details', {class: 'card new'}, h('summary', null, 'New deployment'), form));
  }
  ctx.root.append(status, table.el);
  const load = async () => {
    const page = await api.get('/api/v1/deployments?limit=200');
    table.setRows(page.items);
    clear(status);
    const todo = page.items.filter((d) => (d.state === 'failed' || d.state === 'partial') && !failures.has(d.id)).slice(0, 20);
    if (!todo.length) return;
    const got = await Promise.all(todo.map((d) => api.get('/api/v1/deployments/' + api.enc(d.id)).catch(() => null)));
    if (ctx.dead) return;
    for (const d of got) if (d) failures.set(d.id, failureLine(d));
    table.setRows(page.items);
  };
  const refresh = coalesce(() => load().catch((e) => fill(status, notice(e.message))), 500);
  for (const t of ['deployment.state', 'reset', 'open']) ctx.on(t, refresh);
  await load();
  return () => refresh.cancel();
}

// ---- one deployment, live ----------------------------------------------------------------------

export async function deploymentView(ctx, id) {
  const {api, session} = ctx;
  ctx.title(id);
  const openNodes = new Set();
  const openDiffs = new Set();
  const nodeEls = new Map();
  const head = h('div', {class: 'head'});
  const summary = h('div');
  const actions = h('div', {class: 'actions'});
  const progress = h('div', {class: 'progress-wrap'});
  const batches = h('div', {class: 'batches'});
  const status = h('div');
  const failure = h('div');
  ctx.root.append(head, failure, status, actions, section('Deployment', progress, summary), batches);
  let dep = null;
  let pauseTimer = null;

  // A reboot in the node's plan (docs/rollout.md, "Reboots"): under way, or how long it took.
  function rebootOf(n) {
    const r = n.reboot;
    if (!r) return null;
    if (r.state === 'rebooting') return [badge('rebooting', 'reboot'), ' '];
    return [h('span', {class: 'reboot'}, `rebooted in ${(r.duration_ms / 1000).toFixed(1)} s`), ' · '];
  }

  function stepsTable(n) {
    const table = h('table', {class: 'grid steps'},
      h('caption', null, `Steps on ${n.hostname}`),
      h('thead', null, h('tr', null, ['#', 'Step', 'Status', 'Message', 'Time', 'Diff'].map((x) => h('th', {scope: 'col'}, x)))));
    const tbody = h('tbody');
    const steps = n.steps || [];
    const failedAt = steps.findIndex((st) => st.status === 'failed');
    for (let i = 0; i < steps.length; i++) {
      const st = steps[i];
      // The skipped steps after a failure: one line, not a row each.
      if (failedAt >= 0 && i > failedAt && st.status === 'skipped') {
        let j = i;
        while (j < steps.length && steps[j].status === 'skipped') j++;
        if (j - i > 1) {
          tbody.append(h('tr', {class: 'skipped-run', dataset: {skipped: String(j - i)}},
            h('td', {class: 'num'}, `${st.index + 1}–${steps[j - 1].index + 1}`),
            h('td', {colspan: '5', class: 'mute'}, `${j - i} steps skipped after the failure`)));
          i = j - 1;
          continue;
        }
      }
      const key = `${n.node_id}:${st.index}`;
      const hasDiff = typeof st.diff === 'string' && st.diff.length > 0;
      const diffRow = h('tr', {class: 'diff-row', hidden: !openDiffs.has(key)},
        h('td', {colspan: '6'}, hasDiff ? diffView(st.diff) : null));
      let btn = null;
      if (hasDiff) {
        btn = h('button', {type: 'button', class: 'small', 'aria-expanded': String(openDiffs.has(key)),
          dataset: {step: String(st.index)}, on: {click: () => {
            const open = !openDiffs.has(key);
            if (open) openDiffs.add(key); else openDiffs.delete(key);
            diffRow.hidden = !open;
            btn.setAttribute('aria-expanded', String(open));
            btn.textContent = open ? 'Hide diff' : 'Show diff';
          }}}, openDiffs.has(key) ? 'Hide diff' : 'Show diff');
      }
      const detail = stepDetail(st);
      tbody.append(h('tr', {class: ['step', st.status === 'failed' ? 'step-failed' : null], dataset: {step: String(st.index), status: st.status}},
        h('td', {class: 'num'}, String(st.index + 1)), h('td', null, st.name), h('td', null, badge(st.status)),
        h('td', {class: 'msg'}, st.message || '', detail ? h('details', {class: 'raw'}, h('summary', null, 'detail'), h('code', null, detail)) : null),
        h('td', {class: 'num'}, `${st.duration_ms ?? 0} ms`),
        h('td', null, btn || h('span', {class: 'mute'}, 'none'))), diffRow);
    }
    if (!(n.steps || []).length) tbody.append(h('tr', null, h('td', {colspan: '6', class: 'mute'},
      n.state === 'waiting' ? 'Not sent yet.' : 'No step reported yet.')));
    table.append(tbody);
    return h('div', {class: 'table-wrap'}, table);
  }

  function nodeEl(n) {
    let e = nodeEls.get(n.node_id);
    if (!e) {
      const details = h('details', {class: 'node', dataset: {node: n.node_id}});
      details.addEventListener('toggle', () => {
        if (details.open) openNodes.add(n.node_id); else openNodes.delete(n.node_id);
      });
      e = {details, sig: null};
      nodeEls.set(n.node_id, e);
    }
    // Redraw only what changed: the signature covers what is shown.
    const sig = JSON.stringify([n.state, n.message, n.ok, n.changed, n.failed, n.skipped, n.reboot,
      (n.steps || []).map((s) => [s.index, s.status, s.message, stepDetail(s), s.diff ? s.diff.length : 0])]);
    if (sig !== e.sig) {
      e.sig = sig;
      e.details.dataset.state = n.state;
      fill(e.details, 
        h('summary', null, h('span', {class: 'hostname'}, n.hostname), ' ', badge(n.state), ' ',
          rebootOf(n),
          h('span', {class: 'counts'}, `ok ${n.ok} · changed ${n.changed} · failed ${n.failed} · skipped ${n.skipped}`),
          failedStep(n) ? h('span', {class: 'failed-step'}, ' — failed at step ', h('q', {class: 'step-name'}, failedStep(n).name),
            failedStep(n).message ? ': ' + failedStep(n).message : '')
            : n.message ? h('span', {class: 'msg'}, ' — ', n.message) : null),
        h('p', null, nodeLink(n.node_id, 'node page')),
        stepsTable(n));
      e.details.open = openNodes.has(n.node_id);
    }
    return e.details;
  }

  function draw() {
    ctx.title(`${dep.id} ${dep.state}`);
    fill(head, h('h1', null, 'Deployment ', h('span', null, dep.id)), badge(dep.state, 'dep-state'));
    head.dataset.state = dep.state;
    const p = dep.policy || {};
    fill(summary, kv([
      ['Cluster', dep.cluster], ['Playbook', `${dep.playbook} ${dep.version}`],
      ['Mode', dep.check_mode ? 'check (nothing is changed)' : 'apply'],
      ['State', badge(dep.state)], ['Reason', dep.reason ?? null],
      ['Batches', p.batch_count > 0 ? `${p.batch_count} node(s) each` : `${p.batch_percent}% of the nodes each`],
      ['Failures tolerated', p.max_fail_count > 0 ? String(p.max_fail_count) : `${p.max_fail_percent ?? 0}%`],
      ['Canary', String(p.canary ?? 0)], ['Pause', `${p.pause_ms ?? 0} ms`],
      ['Started by', dep.actor], ['Created', timeEl(dep.created_at_ms)], ['Finished', timeEl(dep.finished_at_ms)],
      ['SHA-256', h('code', null, dep.sha256)],
    ]));
    const nodes = dep.nodes || [];
    const done = nodes.filter((n) => !['waiting', 'sent'].includes(n.state)).length;
    const nb = nodes.reduce((m, n) => Math.max(m, n.batch + 1), 0);
    // Between two batches the rollout waits pause_ms (the policy's): the current batch has not
    // been sent and the one before has finished. When it ends is the previous batch's last
    // finish plus the pause.
    let pause = null;
    const cur = nodes.filter((n) => n.batch === dep.current_batch);
    const prev = nodes.filter((n) => n.batch === dep.current_batch - 1);
    if (dep.state === 'running' && p.pause_ms > 0 && cur.length && prev.length &&
        cur.every((n) => n.state === 'waiting') && prev.every((n) => !['waiting', 'sent'].includes(n.state))) {
      const until = Math.max(...prev.map((n) => n.finished_at_ms || 0)) + p.pause_ms;
      const left = Math.max(0, (until - Date.now()) / 1000);
      pause = h('p', {class: 'pause', role: 'status'},
        `Pausing between batches: batch ${dep.current_batch + 1} starts in about ${left < 10 ? left.toFixed(1) : Math.round(left)} s` +
        ` (pause ${fmtNum(p.pause_ms / 1000)} s)`);
    }
    // No event says that a batch ended and the next waits: while nothing is in flight and some
    // node still waits, read the deployment again every 0.7 s (the pause, then its end).
    clearTimeout(pauseTimer);
    if (dep.state === 'running' && !nodes.some((n) => n.state === 'sent') && nodes.some((n) => n.state === 'waiting')) {
      pauseTimer = setTimeout(() => { if (!ctx.dead) refresh(); }, 700);
    }
    fill(progress, 
      h('label', {for: 'dep-progress'}, `${done} of ${nodes.length} nodes done` +
        (nb ? `, batch ${Math.min(dep.current_batch + 1, nb)} of ${nb}` : '')),
      h('progress', {id: 'dep-progress', max: String(nodes.length || 1), value: String(done)}), pause);
    const fl = failureLine(dep);
    fill(failure, fl ? h('div', {class: 'failure-head', role: 'status'}, h('h2', null, 'What failed'), fl) : null);
    const byBatch = new Map();
    for (const n of nodes) {
      if (!byBatch.has(n.batch)) byBatch.set(n.batch, []);
      byBatch.get(n.batch).push(n);
    }
    const frag = [];
    for (const b of [...byBatch.keys()].sort((x, y) => x - y)) {
      const list = byBatch.get(b).sort((x, y) => naturalCompare(x.hostname, y.hostname));
      const states = list.map((n) => n.state);
      const bstate = states.every((s) => s === 'waiting') ? 'waiting'
        : states.some((s) => s === 'sent') ? 'running' : 'done';
      frag.push(h('section', {class: 'card batch', dataset: {batch: String(b), state: bstate}},
        h('h2', null, `Batch ${b + 1}`, dep.current_batch === b && !FINAL.has(dep.state) ? ' (current)' : '', ' ',
          badge(bstate)),
        list.map(nodeEl)));
    }
    fill(batches, ...frag);
    clear(actions);
    if (!FINAL.has(dep.state) && session.mayCancel(dep)) {
      actions.append(h('button', {type: 'button', class: 'danger', on: {click: async () => {
        const ok = await confirmDialog({title: `Cancel ${dep.id}?`,
          text: 'Nothing more is sent to the nodes; plans already running finish.', confirm: 'Cancel deployment', cancel: 'Keep it running'});
        if (!ok) return;
        try {
          await api.postEmpty(`/api/v1/deployments/${api.enc(dep.id)}/cancel`);
          refresh();
        } catch (e) {
          fill(status, notice('Could not cancel: ' + e.message));
        }
      }}}, 'Cancel deployment'));
    }
  }

  async function load() {
    dep = await api.get('/api/v1/deployments/' + api.enc(id));
    if (ctx.dead) return;
    clear(status);
    draw();
  }
  const refresh = coalesce(() => load().catch((e) => fill(status, notice('Could not refresh: ' + e.message))), 150);
  const mine = (ev) => { if (ev.id === id) refresh(); };
  for (const t of ['deployment.state', 'deployment.node', 'deployment.step']) ctx.on(t, mine);
  ctx.on('reset', refresh);
  ctx.on('open', refresh);
  await load();
  return () => { refresh.cancel(); clearTimeout(pauseTimer); };
}
