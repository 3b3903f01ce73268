// The overview: each cluster with, first, its problems (the nodes that are not healthy, worst
// first, with the first reason of each and a link to the nodes table filtered to them), then its nodes by state (online, offline, revoked, drifted), its
// newest deployment of the real configuration and, apart, its newest check-mode deployment (a
// revalidation's check), its newest campaign, and its sign-off status (signed, stale with the reasons, or
// none). Refreshed when the event stream says something changed.

import {h, clear, fill, badge, verdictOf, timeEl, depLink, campLink, soLink, coalesce, notice, naturalCompare, link,
        nodeLink, words} from '../dom.js';
import {mtLink} from './maintenances.js';
import {HEALTH, healthOf, healthBadge, healthGist} from './nodes.js';

const STATES = ['online', 'offline', 'enrolled', 'revoked'];

export async function overviewView(ctx) {
  const {api} = ctx;
  ctx.title('Overview');
  const body = h('div', {class: 'clusters'});
  const status = h('div');
  ctx.root.append(h('h1', null, 'Overview'), status, body);

  async function load() {
    const [clusters, nodes] = await Promise.all([
      api.getAll('/api/v1/clusters'),
      api.getAll('/api/v1/nodes'),
    ]);
    clusters.sort((a, b) => naturalCompare(a.cluster, b.cluster));
    const cards = await Promise.all(clusters.map(async (c) => {
      const q = 'cluster=' + api.enc(c.cluster);
      // The last real deployment and the last check apart: a revalidation's check-mode
      // deployment must not hide a failed deployment of the real configuration.
      const [dep, check, camp, so, mt] = await Promise.all([
        api.first('/api/v1/deployments?check_mode=false&' + q),
        api.first('/api/v1/deployments?check_mode=true&' + q),
        api.first('/api/v1/campaigns?' + q),
        api.first('/api/v1/signoffs?' + q),
        api.first('/api/v1/maintenances?' + q).catch(() => null),
      ]);
      const detail = so ? await api.get('/api/v1/signoffs/' + api.enc(so.id)) : null;
      return card(c, nodes.filter((n) => n.cluster === c.cluster), dep, check, camp, detail, mt);
    }));
    clear(status);
    fill(body, ...cards);
    if (!cards.length) body.append(h('p', {class: 'mute'}, 'No cluster yet: no node has enrolled.'));
  }

  function card(c, nodes, dep, check, camp, so, mt) {
    const counts = Object.fromEntries(STATES.map((s) => [s, 0]));
    let drifted = 0;
    const bad = [];
    for (const n of nodes) {
      counts[n.state] = (counts[n.state] || 0) + 1;
      if (n.signoff && n.signoff.state === 'stale') drifted++;
      if (healthOf(n).state !== 'healthy') bad.push(n);
    }
    bad.sort((a, b) => HEALTH[healthOf(a).state].rank - HEALTH[healthOf(b).state].rank ||
      naturalCompare(a.hostname, b.hostname));
    const failing = bad.filter((n) => healthOf(n).state === 'failing').length;
    const nodesQ = '/nodes?cluster=' + encodeURIComponent(c.cluster) + '&health=problems';
    const problems = h('div', {class: ['problems', bad.length ? (failing ? 'problems-bad' : 'problems-warn') : 'problems-none'],
      dataset: {problems: String(bad.length)}},
    h('p', {class: 'problems-head'},
      h('span', {class: 'icon', 'aria-hidden': 'true'}, bad.length ? (failing ? HEALTH.failing.icon : HEALTH.degraded.icon) : HEALTH.healthy.icon), ' ',
      bad.length ? link(nodesQ, h('span', {class: 'problems-count'}, String(bad.length)),
        ` of ${nodes.length} node${nodes.length === 1 ? '' : 's'} not healthy`)
        : h('span', null, h('span', {class: 'problems-count'}, '0'), ` problems: every node of ${nodes.length} is healthy`)),
    bad.length ? h('ul', {class: 'problem-nodes'}, bad.slice(0, 5).map((n) => {
      const hl = healthOf(n);
      const gist = healthGist(hl);
      return h('li', {dataset: {node: n.id, health: hl.state}, title: (hl.reasons || []).join('\n') || null},
        healthBadge(hl), ' ', nodeLink(n.id, n.hostname), gist ? h('span', {class: 'why'}, ': ', gist) : null);
    })) : null,
    bad.length > 5 ? h('p', {class: 'mute'}, link(nodesQ, `and ${bad.length - 5} more`)) : null);
    const stat = (label, value, key) => h('div', {class: 'stat', dataset: {stat: key}},
      h('span', {class: 'stat-value'}, String(value)), h('span', {class: 'stat-label'}, label));
    let signoff;
    if (!so) {
      signoff = h('div', {class: 'signoff-status', dataset: {signoff: 'none'}}, badge('none'), ' no sign-off yet');
    } else if (so.stale) {
      signoff = h('div', {class: 'signoff-status', dataset: {signoff: 'stale'}},
        badge('stale'), ' ', soLink(so.id), ' (verdict ', verdictOf(so), ') no longer describes the cluster:',
        h('ul', {class: 'reasons'}, so.reasons.slice(0, 5).map((r) => h('li', null, r))),
        so.reasons.length > 5 ? h('p', {class: 'mute'}, `and ${so.reasons.length - 5} more`) : null);
    } else {
      signoff = h('div', {class: 'signoff-status', dataset: {signoff: 'signed'}},
        badge('signed'), ' ', soLink(so.id), ', verdict ', verdictOf(so), ', ', timeEl(so.created_at_ms));
    }
    return h('section', {class: 'card cluster', dataset: {cluster: c.cluster}, 'aria-label': 'Cluster ' + c.cluster},
      h('h2', null, link('/nodes?cluster=' + encodeURIComponent(c.cluster), c.cluster)),
      problems,
      h('div', {class: 'stats'},
        stat('not healthy', bad.length, 'problems'),
        stat('nodes', c.nodes, 'nodes'), stat('online', counts.online, 'online'),
        stat('offline', counts.offline, 'offline'), stat('revoked', counts.revoked, 'revoked'),
        stat('drifted', drifted, 'drifted'),
        counts.enrolled ? stat('never connected', counts.enrolled, 'enrolled') : null),
      h('dl', {class: 'kv'},
        h('dt', null, 'Last deployment'),
        h('dd', {dataset: {last: 'deployment'}}, dep ? [depLink(dep.id), ' ', dep.playbook, ' ',
          badge(dep.state), ' ', timeEl(dep.created_at_ms)] : 'none'),
        h('dt', null, 'Last check (check mode)'),
        h('dd', {dataset: {last: 'check'}}, check ? [depLink(check.id), ' ', check.playbook, ' ',
          badge(check.state), ' ', timeEl(check.created_at_ms)] : 'none'),
        h('dt', null, 'Last campaign'),
        h('dd', null, camp ? [campLink(camp.id), ' ', camp.playbook, ' ', badge(camp.state), ' ',
          timeEl(camp.created_at_ms)] : 'none'),
        h('dt', null, 'Sign-off'),
        h('dd', null, signoff),
        h('dt', null, 'Last maintenance'),
        h('dd', {dataset: {last: 'maintenance'}}, mt ? [mtLink(mt.id), ' ', badge(mt.state), ' ',
          mt.state === 'running' ? `batch ${mt.current_batch + 1} of ${mt.n_batches} ` : '',
          mt.reason ? [words(mt.reason), ' '] : '', timeEl(mt.created_at_ms)] : 'none')));
  }

  const refresh = coalesce(async () => {
    try { await load(); } catch (e) { fill(status, notice('Could not refresh: ' + e.message)); }
  }, 500);
  for (const t of ['node.online', 'node.offline', 'deployment.state', 'campaign.state', 'signoff.created',
                   'revalidation.state', 'maintenance.state', 'reset', 'open']) ctx.on(t, refresh);
  await load();
  return () => refresh.cancel();
}
