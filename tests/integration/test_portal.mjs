// The portal in headless Chromium, driven by playwright-core (no test runner: each check waits on
// a condition with a deadline and prints "ok - ..." or "FAIL - ..."; test_portal.sh counts them).
// Run by test_portal.sh with a JSON file: the controller's URL, tokens (viewer, integrator,
// operator, all scoped to cluster it), the campaign and sign-off it made, the pairs the verdict
// fails, where to put screenshots and downloads. What it checks:
//   viewer:     logs in; the overview (its problems figure counts the bad node); nodes with their
//               states and health (the bad node failing); ?health=problems; the bad node's page
//               (name and reasons in the first screen, its DOWN port a problem, its slow rail and
//               narrow PCIe link marked); filter and sort (keyboard); the
//               node that reports HTML as its host name and OS shows it as text and runs nothing;
//               no mutating control on any page; a crafted POST refused (403); a narrow window.
//   integrator: the failed deployment names its step and message in the list, its page and the
//               node's row, its skipped steps one line; reuses an uploaded playbook and checks
//               one in the form; starts a check-mode deployment from the form and watches it
//               live to its end (the pause between batches shown)
//               (a node done while the deployment still runs, without reloading); opens a step's
//               diff (coloured lines; the HTML in it stays text); the campaign's heatmap has one
//               cell per pair and outlines and marks (✕) exactly the pairs the verdict fails
//               (hover and keyboard tell why), its legend's threshold the rule's; the failing
//               campaign and its sign-off show the failing node and its reason in the first
//               1280x800 viewport; the heatmap module with synthetic cells (natural order, a
//               transient not outlined, pass and fail 3:1 apart in luminance); the sign-off's
//               verdict, verification and downloads.
//   operator:   revalidates from the sign-off page (with confirmation) and follows it live
//               (a progress bar while it configures or validates).
//   every page: no console error, no page error, no dialog (alert), no <img>; a screenshot.
import {createRequire} from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const require = createRequire(import.meta.url);
const {chromium} = require(cfg.playwright);

const T = 15000; // the deadline of one wait, unless said otherwise
let fails = 0;
const errors = [];
const dialogs = [];

function ok(cond, what, detail) {
  if (cond) console.log('ok   - ' + what);
  else { fails++; console.log('FAIL - ' + what + (detail !== undefined ? ': ' + detail : '')); }
}
async function step(what, fn) {
  try {
    await fn();
    console.log('ok   - ' + what);
  } catch (e) {
    fails++;
    console.log('FAIL - ' + what + ': ' + String(e && e.message || e).split('\n').slice(0, 4).join(' | '));
  }
}
function expectEq(got, want, what) {
  if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

const browser = await chromium.launch({executablePath: cfg.chromium, args: ['--no-sandbox'], timeout: 60000});

async function session(role) {
  // The controller's certificate is issued by its own CA, which this throwaway profile does not
  // trust: the TLS errors are ignored here (the curl checks pin the CA).
  const context = await browser.newContext({ignoreHTTPSErrors: true, acceptDownloads: true,
    viewport: {width: 1280, height: 800}});
  const page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'assert') errors.push(`${role} ${page.url()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`${role} ${page.url()}: page error: ${e.message}`));
  page.on('dialog', async (d) => { dialogs.push(`${role}: ${d.type()} ${d.message()}`); await d.dismiss(); });
  return {context, page};
}

async function shot(page, name) {
  await page.screenshot({path: path.join(cfg.artifacts, name + '.png'), fullPage: true});
}

async function go(page, hash, ready) {
  await page.goto(cfg.url + '/' + hash);
  await page.locator(ready).first().waitFor({timeout: T});
}

async function login(page, role) {
  await page.goto(cfg.url + '/');
  await page.locator('#token').fill(cfg.tokens[role]);
  await page.locator('form.login button[type=submit]').click();
  await page.locator(`#who-text .role[data-role="${role}"]`).waitFor({timeout: T});
}

const noImages = async (page) => expectEq(await page.locator('img').count(), 0, '<img> elements in the page');
const mutating = 'button.danger, button.primary, details.new, #revalidate, form.stack';

// ---- viewer ------------------------------------------------------------------------------------
{
  const {context, page} = await session('viewer');
  await step('viewer: log in with the token; the page says the role and scope', async () => {
    await login(page, 'viewer');
    expectEq((await page.locator('#who-text .scope').textContent()).trim(), 'it', 'scope');
    await page.locator('#live[data-status="live"]').waitFor({timeout: T});
  });
  await step('viewer: the overview shows cluster it with 3 nodes online and its sign-off', async () => {
    await go(page, '#/', '.cluster[data-cluster="it"]');
    const card = page.locator('.cluster[data-cluster="it"]');
    // The count follows node.online/node.offline live: an agent that missed its heartbeats under
    // load (ASan, a busy host) is offline for a moment and back, so the count is waited for.
    const online = card.locator('[data-stat="online"] .stat-value');
    await page.waitForFunction((n) => document.querySelector(
      '.cluster[data-cluster="it"] [data-stat="online"] .stat-value')?.textContent === n, String(cfg.nodes),
    {timeout: T}).catch(() => {});
    expectEq(await online.textContent(), String(cfg.nodes), 'online');
    await card.locator('.signoff-status').waitFor({timeout: T});
    // The last real deployment and the last check are two labelled entries, never one.
    expectEq(await card.locator('dd[data-last="deployment"]').count(), 1, 'last deployment entry');
    expectEq(await card.locator('dd[data-last="check"]').count(), 1, 'last check entry');
    // Problems first: the degraded node is counted and named, with a link to the filtered table.
    const problems = Number(await card.locator('[data-stat="problems"] .stat-value').textContent());
    if (!(problems >= 1 && problems <= cfg.nodes)) throw new Error('problems figure: ' + problems);
    expectEq(await card.locator('.problems').getAttribute('data-problems'), String(problems), 'problems block');
    const li = card.locator(`.problem-nodes li[data-health="failing"]`, {hasText: cfg.bad_node});
    await li.waitFor({timeout: T});
    const href = await card.locator('.problems-head a').getAttribute('href');
    if (!/health=problems/.test(href) || !/cluster=it/.test(href)) throw new Error('problems link: ' + href);
    await shot(page, '01-overview');
  });
  await step('viewer: the nodes page lists every node, online', async () => {
    await go(page, '#/nodes', 'tr[data-node]');
    await page.waitForFunction((n) => document.querySelectorAll('tr[data-node][data-state="online"]').length === n,
      cfg.nodes, {timeout: T});
    // The node the deployment failed on (and whose port is DOWN) is marked bad: word, icon, class.
    const bad = page.locator('tr[data-node]', {hasText: cfg.bad_node});
    expectEq(await bad.getAttribute('data-health'), 'failing', 'the bad node row\'s health');
    const cell = bad.locator('.badge.health');
    expectEq((await cell.textContent()).replace(/\s+/g, ' ').trim(), '✕ failing', 'its health cell');
    if (!/\bhealth-failing\b/.test(await cell.getAttribute('class'))) throw new Error('no health-failing class');
    // "current" (covered by the newest sign-off) is never a green OK.
    const cov = await page.locator('.badge.coverage').evaluateAll((bs) => bs.map((b) => b.className));
    if (cov.some((c) => /tone-good/.test(c))) throw new Error('coverage styled as good: ' + cov);
    await shot(page, '02-nodes');
  });
  await step('viewer: the Scheduler column says the bad node is drained by railyard, its reason as text', async () => {
    await go(page, '#/nodes', 'tr[data-node]');
    const b = page.locator('tr[data-node]', {hasText: cfg.bad_node}).locator('.badge.wlm');
    await b.waitFor({timeout: T});
    expectEq(await b.getAttribute('data-wlm'), 'drained', 'its WLM state');
    expectEq(await b.getAttribute('data-ours'), 'yes', 'whose drain');
    expectEq((await b.textContent()).trim(), 'drained (railyard)', 'its Scheduler cell');
    expectEq(await b.getAttribute('title'), cfg.wlm_reason, 'the reason on hover');
    await page.locator('tr[data-node]', {hasText: cfg.bad_node}).locator('a').first().click();
    const panel = page.locator('.wlm-panel[data-ours="yes"]');
    await panel.waitFor({timeout: T});
    const reason = await panel.locator('dt').filter({hasText: /^Reason$/}).locator('xpath=following-sibling::dd[1]').textContent();
    expectEq(reason, cfg.wlm_reason, 'the node page\'s reason, as text');
    await noImages(page);
    await shot(page, '02a-node-wlm');
    await go(page, '#/nodes', 'tr[data-node]');
  });
  await step('viewer: the host name the node reports and its OS are shown as text, nothing runs', async () => {
    await page.locator('.table-wrap[data-facts="true"]').waitFor({timeout: T});
    const row = page.locator('tr[data-node]', {hasText: 'xss-node'});
    await row.waitFor({timeout: T});
    const cells = await row.locator('td').allTextContents();
    if (!cells.includes(cfg.xss_os)) throw new Error('the OS cell is not the literal text: ' + JSON.stringify(cells));
    await noImages(page);
    await row.locator('a').click();
    await page.locator('h1 .hostname', {hasText: 'xss-node'}).waitFor({timeout: T});
    const dd = async (label) => page.locator('dt').filter({hasText: new RegExp(`^${label}$`)}).first()
      .locator('xpath=following-sibling::dd[1]').textContent();
    expectEq(await dd('Reported host name'), cfg.xss_host, 'reported host name');
    expectEq(await dd('OS'), cfg.xss_os, 'OS');
    await noImages(page);
    await shot(page, '03-node-xss');
  });
  await step('viewer: filtering and sorting the nodes, by keyboard', async () => {
    await go(page, '#/nodes', 'tr[data-node]');
    await page.locator('#f-text').fill('xss');
    await page.waitForFunction(() => document.querySelectorAll('tr[data-node]').length === 1, null, {timeout: T});
    await page.locator('#f-text').fill('');
    await page.locator('button.sort[data-key="hostname"]').focus();
    await page.keyboard.press('Enter'); // ascending was the default: now descending
    await page.waitForFunction(() => {
      const th = document.querySelector('button.sort[data-key="hostname"]').closest('th');
      const names = [...document.querySelectorAll('tr[data-node] td:nth-child(2)')].map((td) => td.textContent);
      return th.getAttribute('aria-sort') === 'descending' && names.length > 1 &&
        names.every((x, i) => i === 0 || names[i - 1].localeCompare(x, 'en', {numeric: true}) >= 0);
    }, null, {timeout: T});
  });
  await step('viewer: ?health=problems filters the table to the nodes not healthy', async () => {
    await go(page, '#/nodes?cluster=it&health=problems', 'tr[data-node]');
    expectEq(await page.locator('#f-health').inputValue(), 'problems', 'health filter');
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('tr[data-node]')];
      return rows.length >= 1 && rows.every((r) => r.dataset.health !== 'healthy');
    }, null, {timeout: T});
    await page.locator('tr[data-node]', {hasText: cfg.bad_node}).waitFor({timeout: T});
  });
  await step('viewer: the bad node\'s page leads with its health: name and reasons in the first 1280x800', async () => {
    await page.locator('tr[data-node]', {hasText: cfg.bad_node}).locator('a').first().click();
    await page.locator('h1 .hostname', {hasText: cfg.bad_node}).waitFor({timeout: T});
    await page.evaluate(() => window.scrollTo(0, 0));
    const inFirst = async (loc, what) => {
      await loc.first().waitFor({timeout: T});
      const b = await loc.first().boundingBox();
      if (!b || b.y + b.height > 800) throw new Error(`${what} is not within the first 800 px: ${JSON.stringify(b)}`);
    };
    await inFirst(page.locator('h1 .hostname'), 'the name');
    expectEq(await page.locator('.health-panel').getAttribute('data-health'), 'failing', 'health');
    await inFirst(page.locator('.health-reasons li', {hasText: 'failed at step "hca ports active"'}), 'the failed step');
    await inFirst(page.locator('.health-reasons li', {hasText: 'mlx5_3 port is DOWN'}), 'the DOWN port');
    await page.screenshot({path: path.join(cfg.artifacts, '03a-node-bad-first-screen.png')});
    // The DOWN port is a problem, not a grey badge quieter than "active".
    const down = page.locator('tr[data-device="mlx5_3"] .badge');
    const up = page.locator('tr[data-device="mlx5_0"] .badge');
    if (!/\bport-problem\b/.test(await down.getAttribute('class'))) throw new Error('the DOWN badge has no problem class');
    expectEq((await down.textContent()).replace(/\s+/g, ' ').trim(), '✕ down', 'the DOWN badge');
    const style = (l) => l.evaluate((e) => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]);
    const [dc, db] = await style(down), [uc, ub] = await style(up);
    if (dc === uc || db === ub) throw new Error(`DOWN styled like active: ${dc}/${db} vs ${uc}/${ub}`);
    // The slow rail and the narrow PCIe link are marked; the healthy ones are not.
    await page.locator('tr[data-device="mlx5_5"] .port-slow').waitFor({timeout: T});
    await page.locator('tr[data-device="mlx5_6"] .pcie-degraded').waitFor({timeout: T});
    expectEq(await page.locator('tr[data-device="mlx5_0"] .port-slow, tr[data-device="mlx5_0"] .pcie-degraded').count(), 0, 'marks on mlx5_0');
    await noImages(page);
    await shot(page, '03b-node-bad');
  });
  const pages = [
    ['#/', '.cluster', '04-viewer-overview'],
    ['#/deployments', 'table.grid', '05-viewer-deployments'],
    ['#/campaigns', 'tr[data-campaign]', '06-viewer-campaigns'],
    [`#/campaigns/${cfg.campaign}`, 'figure.heatmap', '07-viewer-campaign'],
    ['#/signoffs', 'tr[data-signoff]', '08-viewer-signoffs'],
    [`#/signoffs/${cfg.signoff}`, '.verify[data-verified="true"]', '09-viewer-signoff'],
    ['#/revalidations', 'table.grid', '10-viewer-revalidations'],
    ['#/maintenances', 'tr[data-maintenance]', '10b-viewer-maintenances'],
    [`#/maintenances/${cfg.maintenance}`, 'tr[data-node]', '10c-viewer-maintenance'],
  ];
  for (const [hash, ready, name] of pages) {
    await step(`viewer: ${hash} has no control that would be refused`, async () => {
      await go(page, hash, ready);
      expectEq(await page.locator(mutating).count(), 0, 'mutating controls');
      await shot(page, name);
    });
  }
  await step('viewer: a crafted request is refused: POST /api/v1/deployments 403, revalidation 403', async () => {
    const headers = {Authorization: 'Bearer ' + cfg.tokens.viewer, 'Content-Type': 'application/json'};
    const r1 = await page.request.post(cfg.url + '/api/v1/deployments',
      {headers, data: {cluster: 'it', playbook: cfg.deploy_playbook, check: true}});
    expectEq(r1.status(), 403, 'deployment');
    expectEq((await r1.json()).error.code, 'forbidden', 'error code');
    const r2 = await page.request.post(cfg.url + '/api/v1/revalidations', {headers, data: {cluster: 'it', baseline: cfg.signoff}});
    expectEq(r2.status(), 403, 'revalidation');
  });
  await step('viewer: a narrow window (390 px): nothing wider than the window', async () => {
    await page.setViewportSize({width: 390, height: 844});
    for (const [hash, ready, name] of [['#/nodes', 'tr[data-node]', '11-nodes-narrow'],
      [`#/signoffs/${cfg.signoff}`, '.verify', '12-signoff-narrow']]) {
      await go(page, hash, ready);
      const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      if (over > 1) throw new Error(`${hash}: the page is ${over} px wider than the window`);
      await shot(page, name);
    }
  });
  await context.close();
}

// ---- integrator --------------------------------------------------------------------------------
{
  const {context, page} = await session('integrator');
  await step('integrator: log in', () => login(page, 'integrator'));
  let depId = null;
  await step('integrator: the failed deployment says which step failed, and why, without a click', async () => {
    await go(page, '#/deployments', `tr[data-deployment="${cfg.hca_dep}"]`);
    const line = page.locator(`tr[data-deployment="${cfg.hca_dep}"] .failure-line`);
    await line.waitFor({timeout: T});
    const text = await line.textContent();
    if (!text.includes(cfg.bad_node) || !text.includes('hca ports active')) throw new Error('the list says: ' + text);
    await go(page, `#/deployments/${cfg.hca_dep}`, '.failure-head');
    const head = page.locator('.failure-head');
    const b = await head.boundingBox();
    if (!b || b.y + b.height > 800) throw new Error('"What failed" is not in the first screen: ' + JSON.stringify(b));
    if (!(await head.textContent()).includes('hca ports active')) throw new Error('the head says: ' + await head.textContent());
    const node = page.locator('details.node', {hasText: cfg.bad_node});
    const sum = await node.locator(':scope > summary .failed-step').textContent();
    if (!sum.includes('hca ports active')) throw new Error('the node row says: ' + sum);
    await node.locator(':scope > summary').click();
    // The two steps skipped after the failure are one line, not a row each.
    await node.locator('tr.skipped-run[data-skipped="2"]', {hasText: '2 steps skipped after the failure'}).waitFor({timeout: T});
    expectEq(await node.locator('tr.step[data-status="skipped"]').count(), 0, 'skipped rows');
    expectEq(await node.locator('tr.step-failed').count(), 1, 'failed rows');
    await shot(page, '13a-deployment-failed');
  });
  await step('integrator: start a check-mode deployment from the form', async () => {
    await go(page, '#/deployments', 'details.new');
    await page.locator('details.new > summary').click();
    await page.locator('#dep-cluster option[value="it"]').waitFor({state: 'attached', timeout: T});
    await page.locator('#dep-cluster').selectOption('it');
    // An uploaded playbook can be reused: choosing it fills the text.
    const up = page.locator('#dep-uploaded option', {hasText: 'hca-up 1'});
    await up.waitFor({state: 'attached', timeout: T});
    await page.locator('#dep-uploaded').selectOption(await up.getAttribute('value'));
    await page.waitForFunction(() => document.querySelector('#dep-playbook').value.includes('name: hca-up'), null, {timeout: T});
    // The text is checked before anything starts (a broken one would answer 400, which the
    // browser logs as a console error: not exercised here).
    await page.locator('#dep-playbook').fill(cfg.deploy_playbook);
    await page.locator('#dep-check-playbook').click();
    await page.locator('.check-status .check-ok', {hasText: 'portal-check 1.0'}).waitFor({timeout: T});
    if (!await page.locator('#dep-check').isChecked()) throw new Error('check mode is not the default');
    await page.locator('#dep-batch').fill('1');
    await page.locator('#dep-canary').fill('0');
    await page.locator('#dep-pause').fill('1500');
    await shot(page, '13-deployment-form');
    await page.locator('form.stack button[type=submit]').click();
    await page.waitForURL(/#\/deployments\/d-[0-9a-f]+$/, {timeout: T});
    depId = decodeURIComponent(page.url().split('/').pop());
  });
  await step('integrator: the deployment progresses live, node by node (no reload)', async () => {
    // A node done while the deployment still runs: only the event stream can have drawn that.
    // And the pause between two batches (1.5 s after each, batches of one) is shown while it runs.
    const paused = page.waitForFunction(() => /Pausing between batches: batch \d+ starts in about [\d.]+ s/
      .test(document.querySelector('.progress-wrap .pause')?.textContent || ''), null, {timeout: 60000, polling: 50});
    await page.waitForFunction(() => {
      const st = document.querySelector('.head')?.dataset.state;
      const done = document.querySelectorAll('details.node[data-state="succeeded"]').length;
      const all = document.querySelectorAll('details.node').length;
      return st === 'running' && done >= 1 && done < all;
    }, null, {timeout: 60000, polling: 50});
    await shot(page, '14-deployment-running');
    await paused;
    await page.locator('.head[data-state="succeeded"]').waitFor({timeout: 90000});
    await page.waitForFunction((n) => document.querySelectorAll('details.node[data-state="succeeded"]').length === n,
      cfg.nodes, {timeout: T});
    expectEq(await page.locator('progress#dep-progress').getAttribute('value'), String(cfg.nodes), 'progress');
  });
  await step('integrator: a step\'s diff, additions coloured, its HTML kept as text', async () => {
    const node = page.locator('details.node').first();
    await node.locator(':scope > summary').click();
    const btn = node.locator('button[data-step="1"]');
    await btn.click();
    expectEq(await btn.getAttribute('aria-expanded'), 'true', 'aria-expanded');
    const diff = node.locator('pre.diff');
    await diff.waitFor({timeout: T});
    const adds = await diff.locator('.dl-add').allTextContents();
    if (!adds.includes('+<img src=x onerror=alert(1)>')) throw new Error('added lines: ' + JSON.stringify(adds));
    expectEq(await diff.locator('.dl-file').count(), 2, 'file header lines');
    const colour = await diff.locator('.dl-add').first().evaluate((e) => getComputedStyle(e).backgroundColor);
    if (colour === 'rgba(0, 0, 0, 0)') throw new Error('additions are not coloured');
    await noImages(page);
    await shot(page, '15-deployment-diff');
  });
  await step('integrator: the campaign\'s heatmap has one cell per pair and outlines the failing ones', async () => {
    await go(page, `#/campaigns/${cfg.campaign}`, 'figure.heatmap');
    const fig = page.locator('figure.heatmap').first();
    expectEq(await fig.locator('figcaption').textContent(), 'pair-lat: p50_us', 'the first map');
    const n = cfg.nodes;
    expectEq(await fig.locator('rect.cell').count(), n * (n - 1) / 2, 'cells');
    const failing = await fig.locator('rect.cell.fail').evaluateAll((rs) =>
      rs.map((r) => [r.dataset.a, r.dataset.b].sort().join('|')).sort());
    expectEq(failing, cfg.failing, 'failing cells');
    expectEq(await fig.locator('rect.fail-mark').count(), cfg.failing.length, 'outlines');
    // Marked without colour too: a ✕ (or ✕ FAIL) on each failing cell, none elsewhere.
    expectEq(await fig.locator('text.fail-glyph').count(), cfg.failing.length, 'failure glyphs');
    if (!(await fig.locator('text.fail-glyph').allTextContents()).every((t) => t.startsWith('✕'))) throw new Error('glyph');
    // Coloured by the margin to the rule, whose threshold the legend states as the rule text does.
    expectEq(await fig.getAttribute('data-scale'), 'rule', 'colour scale');
    const rule = await fig.locator('.rule-text .rule').textContent();
    const tick = await fig.locator('svg.legend [data-tick="threshold"]').textContent();
    if (!rule.includes(tick)) throw new Error(`the legend's threshold "${tick}" is not the rule's "${rule}"`);
    await fig.locator('svg.legend').waitFor({timeout: T});
    await shot(page, '16-campaign');
  });
  await step('integrator: hovering a failing cell, and the keyboard, say the value and the verdict\'s reason', async () => {
    const fig = page.locator('figure.heatmap').first();
    await fig.locator('rect.cell.fail').first().hover();
    const readout = fig.locator('.readout');
    await page.waitForFunction((el) => el.dataset.fail === 'true', await readout.elementHandle(), {timeout: T});
    const text = await readout.textContent();
    if (!/p50_us [0-9.]+ µs · FAIL \((node|link|transient)\): .*not <=/.test(text)) throw new Error('readout: ' + text);
    await fig.locator('rect.cell:not(.fail)').first().hover();
    await page.waitForFunction((el) => el.dataset.fail === 'false' && /· pass/.test(el.textContent),
      await readout.elementHandle(), {timeout: T});
    await fig.locator('svg.heatmap-svg').focus();
    await page.keyboard.press('n');
    await page.waitForFunction((el) => el.dataset.fail === 'true', await readout.elementHandle(), {timeout: T});
    await shot(page, '17-campaign-readout');
  });
  await step('integrator: the failures come first, naming the failing pairs', async () => {
    const sections = await page.locator('main section.card h2').allTextContents();
    if (sections.indexOf('Failures') < 0 || sections.indexOf('Failures') > sections.indexOf('Pairs')) {
      throw new Error('sections: ' + JSON.stringify(sections));
    }
    const rows = await page.locator('section.failures table tbody tr').count();
    if (rows < cfg.failing.length) throw new Error(`${rows} failure rows`);
  });
  // In the first 1280x800 viewport, unscrolled: each failing node's name and its first reason.
  const firstViewport = async (page, what) => {
    await page.evaluate(() => window.scrollTo(0, 0));
    const vh = page.viewportSize().height;
    if (!cfg.failing_nodes.length) throw new Error('the campaign names no failing node');
    for (const nd of cfg.failing_nodes) {
      const li = page.locator(`li.failing-node[data-failing-node="${nd.id}"]`);
      const name = li.locator('.node-name');
      const reason = li.locator('.node-reason').first();
      expectEq((await name.textContent()).trim(), nd.hostname, `${what}: the failing node's name`);
      // The reason as the verdict words it, up to its first figure (the page writes numbers and
      // arrows its own way: 1180 for %g's 1.18e+03, → for ->).
      const want = String(nd.reasons[0]).split(/[0-9]/)[0];
      const got = (await reason.textContent()).trim();
      if (!want || !got.startsWith(want)) throw new Error(`${what}: its reason: got ${JSON.stringify(got)}, want ${JSON.stringify(nd.reasons[0])}`);
      for (const [el, label] of [[name, 'name'], [reason, 'reason']]) {
        const b = await el.boundingBox();
        if (!b || b.y < 0 || b.y + b.height > vh) throw new Error(`${what}: the failing node's ${label} is not in the first viewport: ${JSON.stringify(b)}`);
      }
    }
  };
  await step('integrator: the failing campaign leads with the failing node and its reason (first 1280x800 viewport)', async () => {
    await go(page, `#/campaigns/${cfg.campaign}`, 'li.failing-node .node-reason');
    await firstViewport(page, 'campaign');
    // The counters cannot contradict the verdict: pairs failing the rules apart from failed runs.
    const cells = await page.locator('tr[data-test="pair-lat"] td').allTextContents();
    const heads = await page.locator('table', {has: page.locator('tr[data-test="pair-lat"]')}).locator('th').allTextContents();
    const col = heads.findIndex((x) => x.startsWith('Pairs failing the rules'));
    if (col < 0 || heads.findIndex((x) => x.startsWith('Runs failed')) < 0) throw new Error('columns: ' + JSON.stringify(heads));
    expectEq(cells[col], String(cfg.failing_rows), 'pairs failing the rules');
    // The bandwidth test's CPU cost next to it (docs/campaigns.md, "CPU cost"); the latency
    // test has none.
    const cpuCol = heads.findIndex((x) => x.startsWith('CPU cost'));
    if (cpuCol < 0) throw new Error('no CPU cost column: ' + JSON.stringify(heads));
    expectEq(cells[cpuCol], '—', 'pair-lat CPU cost');
    const bwCells = await page.locator('tr[data-test="pair-bw"] td').allTextContents();
    if (!/^[0-9.e+]+ Gb\/s for [0-9.e+-]+ \+ [0-9.e+-]+ cores \(.* CPU-s\/GB\)$/.test(bwCells[cpuCol] || '')) {
      throw new Error('pair-bw CPU cost: ' + JSON.stringify(bwCells[cpuCol]));
    }
    // Node and link failures are marked as failures, in words.
    for (const a of await page.locator('section.failures tr.failing-pair .badge.attr').allTextContents()) {
      if (!/ failure$/.test(a)) throw new Error('attribution badge: ' + a);
    }
    await page.screenshot({path: path.join(cfg.artifacts, '16a-campaign-first-viewport.png')});
    // 400 px wide: the page is never wider than the window (tables and maps scroll in their box).
    await page.setViewportSize({width: 400, height: 800});
    try {
      await go(page, `#/campaigns/${cfg.campaign}`, 'li.failing-node .node-reason');
      const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      if (over > 1) throw new Error(`the campaign page is ${over} px wider than a 400-px window`);
      await shot(page, '16c-campaign-narrow');
    } finally {
      await page.setViewportSize({width: 1280, height: 800});
    }
  });
  await step('integrator: the heatmap module: natural order, a transient is no failure, pass and fail differ in luminance', async () => {
    const r = await page.evaluate(async () => {
      const src = document.querySelector('script[type="module"][src$="/js/app.js"]').src;
      const mod = await import(src.replace(/app\.js$/, 'heatmap.js'));
      const nodes = [{id: 'n10', label: 'node-10'}, {id: 'n2', label: 'node-2'}, {id: 'n1', label: 'node-1'}];
      const fig = mod.heatmap({title: 'synthetic', metric: 'p50_us', unit: 'µs', better: 'lower', nodes,
        rule: {op: '<=', threshold: 10, relative: 'median', value: 2, reference: 5},
        cells: [{i: 1, j: 0, value: 20, fail: true, attributed: 'node', reason: 'p50_us 20, not <= 10'},
          {i: 2, j: 0, value: 9.9, fail: true, attributed: 'transient', reason: 'retested, passed'},
          {i: 2, j: 1, value: 5, fail: false}]});
      fig.id = 'synthetic-map';
      document.querySelector('main').prepend(fig);
      const cell = (a, b) => fig.querySelector(`rect.cell[data-a="${a}"][data-b="${b}"], rect.cell[data-a="${b}"][data-b="${a}"]`);
      const box = (e) => { const b = e.getBBox(); return [b.x, b.y, b.x + b.width, b.y + b.height]; };
      const inside = (m, c) => { const x = box(m), y = box(c); return x[0] >= y[0] - 1 && x[1] >= y[1] - 1 && x[2] <= y[2] + 1 && x[3] <= y[3] + 1; };
      const lum = (fill) => {
        const [r, g, b] = fill.match(/[0-9.]+/g).map(Number).map((v) => {
          const c = v / 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
        });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
      };
      const fail = cell('n2', 'n10'), tr = cell('n1', 'n10'), pass = cell('n1', 'n2');
      const marks = [...fig.querySelectorAll('rect.fail-mark')];
      const glyphs = [...fig.querySelectorAll('text.fail-glyph')];
      const lf = lum(getComputedStyle(fail).fill), lp = lum(getComputedStyle(pass).fill), lt = lum(getComputedStyle(tr).fill);
      const label = (t) => t.firstChild.nodeValue; // its text, without its <title>
      return {rows: [...fig.querySelectorAll('text.hm-label[data-row]')].map(label),
        cols: [...fig.querySelectorAll('text.hm-label[data-col]')].map(label),
        failIs: fail.classList.contains('fail'), transientIs: tr.classList.contains('fail'),
        marks: marks.length, marksOnFail: marks.every((m) => inside(m, fail)), marksOnTransient: marks.some((m) => inside(m, tr)),
        glyphs: glyphs.map((g) => g.textContent), glyphOnFail: glyphs.every((g) => inside(g, fail)),
        transientGlyph: fig.querySelectorAll('text.transient-glyph').length,
        contrast: (Math.max(lf, lp) + 0.05) / (Math.min(lf, lp) + 0.05), transientDarker: lt > lf,
        // The transient passed by 1 %: the thinnest margin, the darkest a pass is drawn.
        thinContrast: (Math.max(lf, lt) + 0.05) / (Math.min(lf, lt) + 0.05),
        values: [...fig.querySelectorAll('text.hm-value')].map((t) => t.textContent),
        tick: fig.querySelector('svg.legend [data-tick="threshold"]').textContent,
        legend: fig.querySelector('svg.legend').getAttribute('aria-label')};
    });
    expectEq(r.rows, ['node-2', 'node-10'], 'rows in natural order');
    expectEq(r.cols, ['node-1', 'node-2'], 'columns in natural order');
    expectEq([r.failIs, r.transientIs], [true, false], 'fail / transient classes');
    expectEq([r.marks, r.marksOnFail, r.marksOnTransient], [1, true, false], 'the outline: on the failing cell only');
    expectEq([r.glyphs.length, r.glyphOnFail, r.transientGlyph], [1, true, 1], 'the ✕ on the failing cell, ↻ on the transient');
    if (!(r.contrast >= 3)) throw new Error(`pass vs fail luminance contrast ${r.contrast.toFixed(2)}:1, below 3:1`);
    if (!r.transientDarker) throw new Error('a transient is drawn in the failing colour');
    if (!(r.thinContrast >= 3)) throw new Error(`a pass by 1 % vs a fail: contrast ${r.thinContrast.toFixed(2)}:1, below 3:1`);
    expectEq(r.values.sort(), ['20', '5', '9.9'], 'values printed in the cells');
    expectEq(r.tick, '<= 10 µs'.replace('<=', '≤'), 'the legend\'s threshold tick');
    await page.locator('#synthetic-map').screenshot({path: path.join(cfg.artifacts, '16b-heatmap-synthetic.png')});
    await page.evaluate(() => document.getElementById('synthetic-map').remove());
  });
  await step('integrator: the sign-off shows its verdict, verified, and the failures', async () => {
    await go(page, `#/signoffs/${cfg.signoff}`, '.verify[data-verified="true"]');
    expectEq(await page.locator('.head .badge.verdict').textContent(), cfg.verdict, 'verdict');
    // A TCP baseline is never shown as a bare pass: it says it is a smoke / baseline report.
    expectEq(await page.locator('.head .badge.kind').getAttribute('data-acceptance'), 'no', 'acceptance');
    expectEq(await page.locator('.head .badge.kind').textContent(), 'smoke / baseline report', 'report kind');
    await page.locator('li.failing-node .node-reason').first().waitFor({timeout: T});
    await firstViewport(page, 'sign-off');
    await page.screenshot({path: path.join(cfg.artifacts, '18a-signoff-first-viewport.png')});
    const items = await page.locator('section.card', {has: page.locator('h2', {hasText: 'Failures'})}).locator('li').count();
    if (cfg.verdict === 'fail' && items < 1) throw new Error('no failure listed');
    // The signed report's CPU cost line of its bandwidth test (docs/signoff.md, "CPU cost").
    const cost = page.locator('.cpu-cost li[data-test="pair-bw"]');
    await cost.waitFor({timeout: T});
    const line = await cost.textContent();
    if (!/^tcp pair-bw: .* Gb\/s for .* cores on the client/.test(line)) throw new Error('CPU cost line: ' + line);
    await shot(page, '18-signoff');
  });
  await step('integrator: the sign-off\'s downloads (report, signature, HTML, CA)', async () => {
    fs.mkdirSync(cfg.downloads, {recursive: true});
    for (const f of ['signoff.json', 'signoff.p7s', 'signoff.html', 'ca.pem']) {
      const [dl] = await Promise.all([page.waitForEvent('download', {timeout: T}),
        page.locator(`[data-file="${f}"]`).click()]);
      const name = f === 'ca.pem' ? 'ca.pem' : `${cfg.signoff}-${f}`;
      expectEq(dl.suggestedFilename(), name, 'file name');
      await dl.saveAs(path.join(cfg.downloads, name));
      if (!fs.statSync(path.join(cfg.downloads, name)).size) throw new Error(name + ' is empty');
    }
    // The verification commands as the page shows them: test_portal.sh runs the OpenSSL one.
    for (const k of ['railyard', 'openssl'])
      fs.writeFileSync(path.join(cfg.downloads, `verify-${k}.sh`),
        await page.locator(`pre[data-verify="${k}"]`).textContent() + '\n');
  });
  await context.close();
}

// ---- operator ----------------------------------------------------------------------------------
{
  const {context, page} = await session('operator');
  await step('operator: log in; no deployment form (configure), but Revalidate (operate)', async () => {
    await login(page, 'operator');
    await go(page, '#/deployments', 'table.grid');
    expectEq(await page.locator('details.new').count(), 0, 'deployment form');
    await go(page, `#/signoffs/${cfg.signoff}`, '#revalidate');
  });
  await step('operator: Revalidate asks first; cancelling the question starts nothing', async () => {
    await page.locator('#revalidate').click();
    const dlg = page.locator('dialog.confirm');
    await dlg.waitFor({timeout: T});
    await shot(page, '19-revalidate-confirm');
    await dlg.locator('button[value="no"]').click();
    await dlg.waitFor({state: 'detached', timeout: T});
    if (!page.url().includes('#/signoffs/')) throw new Error('navigated away: ' + page.url());
  });
  await step('operator: revalidate, confirmed, and follow it live to its end', async () => {
    await page.locator('#revalidate').click();
    await page.locator('dialog.confirm button[value="yes"]').click();
    await page.waitForURL(/#\/revalidations\/rv-[0-9a-f]+$/, {timeout: T});
    // Running, it shows a progress bar (the deployment's nodes, then the campaign's rounds).
    await page.waitForFunction(() => ['configuring', 'validating'].includes(document.querySelector('.head')?.dataset.state) &&
      document.querySelector('progress#rv-progress') && /of|starts|starting/.test(document.querySelector('label[for="rv-progress"]').textContent),
    null, {timeout: 90000, polling: 100});
    await shot(page, '20-revalidation-running');
    await page.waitForFunction(() => ['signed', 'failed', 'cancelled'].includes(document.querySelector('.head')?.dataset.state),
      null, {timeout: 240000, polling: 250});
    const st = await page.locator('.head').getAttribute('data-state');
    if (st !== 'signed') throw new Error('ended ' + st + ': ' + await page.locator('main').textContent());
    await page.locator('dt').filter({hasText: /^Sign-off$/}).first().locator('xpath=following-sibling::dd[1]/a')
      .waitFor({timeout: T});
    await shot(page, '21-revalidation');
  });
  await step('operator: a node\'s health event shows on its page live, first; acknowledging takes it back', async () => {
    // An idempotent GET on the request context's pooled connection, minutes after its last
    // use: the controller closes connections idle for 15 s, and a reuse racing that close
    // reads ECONNRESET (seen under load). A browser retries such a GET once; so does this.
    const get = () => page.request.get(cfg.url + '/api/v1/nodes', {headers: {Authorization: 'Bearer ' + cfg.tokens.operator}});
    const nodes = await (await get().catch((e) => {
      if (!/ECONNRESET|EPIPE|socket hang up/.test(String(e))) throw e;
      return get();
    })).json();
    const me = nodes.items.find((x) => x.hostname === cfg.kmsg_node);
    await go(page, '#/nodes/' + encodeURIComponent(me.id), 'section.health-events');
    await page.locator('section.health-events p').first().waitFor({timeout: T});
    // The agent's watcher reads the line from the node's kernel log; the page follows the event.
    fs.appendFileSync(cfg.kmsg, "3,900,9000000,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n");
    const row = page.locator('section.health-events tr[data-severity="critical"][data-open="true"]', {hasText: 'Xid 79'});
    await row.waitFor({timeout: 30000});
    await page.locator('section.health-panel[data-health="failing"] .health-reasons li[data-source="watch"]', {hasText: 'Xid 79: GPU has fallen off the bus'})
      .waitFor({timeout: T});
    // First screen: the health panel and the event, within 1280x800.
    for (const sel of ['section.health-panel', 'section.health-events tr[data-severity="critical"]']) {
      const box = await page.locator(sel).first().boundingBox();
      if (!box || box.y > 800) throw new Error(sel + ' is not on the first screen: ' + JSON.stringify(box));
    }
    await shot(page, '22-node-health-event');
    await page.locator('section.health-events button', {hasText: 'Acknowledge'}).click();
    await page.locator('dialog.confirm button[value="yes"]').click();
    await page.locator('section.health-events tr[data-open="false"]', {hasText: 'Xid 79'}).waitFor({timeout: T});
    await page.waitForFunction(() => !document.querySelector('section.health-panel .health-reasons li[data-source="watch"]'),
      null, {timeout: T});
  });
  await context.close();
}

ok(dialogs.length === 0, 'no dialog (alert) was opened by any page', dialogs.join('; '));
ok(errors.length === 0, 'no console error on any page', errors.join(' || '));
await browser.close();
console.log(`browser: ${fails} failed`);
process.exit(fails ? 1 : 0);
