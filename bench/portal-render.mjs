// bench/portal-render.sh's browser half: time to first render of the nodes page and of a
// campaign's pair heatmap, each in a fresh page load (the token already in sessionStorage), from
// navigation start (performance.now() in the page) to the moment the rendered DOM is there.
//   node portal-render.mjs PLAYWRIGHT_DIR CHROMIUM URL TOKENS NODES PAIRS_NODES CAMPAIGN RUNS SHOTS_DIR
// TOKENS: comma-separated, one per measure (each load opens an event stream; one token may hold
// 16 at a time).
// A screenshot of each page goes to SHOTS_DIR.
import {createRequire} from 'node:module';

const [pw, chromiumPath, url, tokensS, nodesS, pnodesS, campaign, runsS, shots] = process.argv.slice(2);
const nodes = Number(nodesS), pnodes = Number(pnodesS), runs = Number(runsS);
const {chromium} = createRequire(import.meta.url)(pw);

const browser = await chromium.launch({executablePath: chromiumPath, args: ['--no-sandbox']});
const context = await browser.newContext({ignoreHTTPSErrors: true, viewport: {width: 1280, height: 800}});
const page = await context.newPage();
const errors = [];
page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
page.on('pageerror', (e) => errors.push(e.message));
await page.goto(url + '/');
const tokens = tokensS.split(',');
let measures = 0;

const median = (v) => { const s = [...v].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

// One load of hash; ready() runs in the page and returns true once the view is drawn. settled(),
// when given, holds once the view has read all it reads: the next load waits for it, so that no
// read is cut off by the navigation (the page would log the aborted fetch as an error, and the
// controller would still be answering it while the next run is timed).
async function measure(label, hash, ready, apiPath, settled) {
  const total = [], api = [];
  let bytes = 0;
  await page.evaluate((t) => sessionStorage.setItem('railyard.token', t), tokens[measures++ % tokens.length]);
  for (let i = 0; i <= runs; i++) {
    await page.goto(`${url}/?run=${i}${hash}`);
    const t = await (await page.waitForFunction(ready, null, {polling: 'raf', timeout: 120000})).jsonValue();
    const res = await page.evaluate((p) => performance.getEntriesByType('resource')
      .filter((e) => e.name.includes(p)).map((e) => ({d: e.responseEnd - e.startTime, b: e.decodedBodySize}))[0] || null, apiPath);
    if (settled) await page.waitForFunction(settled, null, {timeout: 120000});
    if (i === 0) continue; // the first load warms the caches (portal files, the database's pages)
    total.push(t);
    if (res) { api.push(res.d); bytes = res.b; }
    console.log(`${label} run ${i}: first render ${t.toFixed(0)} ms (the API reply ${res ? res.d.toFixed(0) : '?'} ms, ${(bytes / 1e6).toFixed(1)} MB)`);
  }
  console.log(`${label}: median first render ${median(total).toFixed(0)} ms over ${runs} runs ` +
    `(min ${Math.min(...total).toFixed(0)}, max ${Math.max(...total).toFixed(0)}); of which the API reply median ${median(api).toFixed(0)} ms, ${(bytes / 1e6).toFixed(1)} MB`);
  return median(total);
}

// performance.now() counts from this document's navigation start.
const nodesReady = new Function(`return document.querySelectorAll('tr[data-node]').length >= ${nodes} ? performance.now() : false;`);
const mapReady = new Function(`const f = document.querySelector('figure.heatmap'); return f && f.dataset.pairs === '${pnodes * (pnodes - 1) / 2}' ? performance.now() : false;`);
const nodesFull = new Function(`return document.querySelector('.table-wrap[data-facts="true"]') && document.querySelectorAll('tr[data-node]').length >= ${nodes} ? performance.now() : false;`);
// The nodes page reads the list, then the list with the facts (views/nodes.js): the first
// measure is drawn before the second read ends.
const a = await measure(`nodes page, ${nodes} nodes`, '#/nodes', nodesReady, '/api/v1/nodes?limit', nodesFull);
const a2 = await measure(`nodes page, ${nodes} nodes, with their facts`, '#/nodes', nodesFull, '/api/v1/nodes?facts');
await page.screenshot({path: `${shots}/bench-nodes-${nodes}.png`});
const b = await measure(`heatmap, ${pnodes} nodes (${pnodes * (pnodes - 1) / 2} pairs)`, `#/campaigns/${campaign}`, mapReady, `/campaigns/${campaign}/results`);
await page.locator('figure.heatmap').screenshot({path: `${shots}/bench-heatmap-${pnodes}.png`});
const mode = await page.evaluate(() => document.querySelector('figure.heatmap').dataset.mode);
const failing = await page.evaluate(() => document.querySelector('figure.heatmap').dataset.failing);
console.log(`summary: nodes page (${nodes} nodes) ${a.toFixed(0)} ms, with every column from the facts ${a2.toFixed(0)} ms; ${pnodes}-node heatmap (${mode}, ${failing} failing pairs outlined) ${b.toFixed(0)} ms`);
if (errors.length) console.log('console errors: ' + errors.join(' | '));
await browser.close();
process.exit(errors.length ? 1 : 0);
