#!/usr/bin/env bash
# Benchmark, not a test: the web portal's time to first render in headless Chromium (Debian's
# chromium driven by playwright-core from npm, as tests/integration/test_portal.sh installs it).
# A fresh state directory gets, written straight into its database before serve (the one writer
# is not serving yet):
#  - NODES nodes (cluster "bench", offline, each with the facts of the h200-ib fixture under its
#    own host name, as bench/rest-bench.sh writes them);
#  - a finished campaign over the first PAIRS_NODES of them: one pairs latency test, a result
#    row per pair (256 nodes: 32,640 rows) with p50 latencies around 8 us, one slow node (its
#    pairs 6x slower) and the verdict that names it (the first 200 failures listed, as the
#    verdict lists them).
# Then, RUNS times each, in a fresh page load with the token in sessionStorage: the time from
# navigation to the nodes table holding every node, and to the campaign page's pair heatmap
# being drawn (a canvas above 48 nodes); with the API reply's size and duration (resource
# timing) beside it. Prints each run and the median; screenshots go to BUILD/portal-artifacts.
# Usage: bench/portal-render.sh [--build DIR] [--nodes 1000] [--pairs-nodes 256] [--runs 5]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$SRC/build nodes=1000 pnodes=256 runs=5
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--nodes) nodes=$2; shift 2 ;;
	--pairs-nodes) pnodes=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	*) echo "usage: $0 [--build DIR] [--nodes 1000] [--pairs-nodes 256] [--runs 5]" >&2; exit 2 ;;
	esac
done
[ "$pnodes" -le "$nodes" ] || { echo "$0: --pairs-nodes must be at most --nodes" >&2; exit 2; }
for c in sqlite3 jq curl python3 node; do
	command -v "$c" >/dev/null || { echo "$0: needs $c" >&2; exit 1; }
done
CHROMIUM=${RAILYARD_CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || { echo "$0: needs Chromium at $CHROMIUM (deploy/install-deps.sh installs it)" >&2; exit 1; }
[ -f "$BUILD/CMakeCache.txt" ] || cmake -S "$SRC" -B "$BUILD" >/dev/null
cmake --build "$BUILD" --target railyard-controller railyard railyard-agent -j"$(nproc)" >/dev/null
BUILD=$(cd "$BUILD" && pwd)
PW_VERSION=$(sed -n 's/^PLAYWRIGHT_VERSION=//p' "$SRC/tests/integration/test_portal.sh")
PW=$BUILD/npm-portal/node_modules/playwright-core
if [ "$(node -p "require('$PW/package.json').version" 2>/dev/null)" != "$PW_VERSION" ]; then
	mkdir -p "$BUILD/npm-portal"
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$BUILD/npm-portal" --no-audit --no-fund \
		"playwright-core@$PW_VERSION" >/dev/null
fi
CTL=$BUILD/controller/railyard-controller
RY=$BUILD/client/railyard
AGENT=$BUILD/nodeagent/railyard-agent
W=$(mktemp -d /tmp/railyard-portal-bench.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT

# ---- the database, before serve ------------------------------------------------------------
. "$SRC/bench/seed-nodes.sh"
seed_nodes "$W/ctl" "$nodes" "$AGENT" "$SRC/tests/fixtures/sysroots/h200-ib"
now=$(($(date +%s%N) / 1000000))
python3 - "$W/ctl/controller.db" "$pnodes" "$now" "$SRC/playbooks/tcp-baseline.yaml" <<'PY'
import hashlib, json, random, sqlite3, statistics, sys

db, n, now, pbfile = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
random.seed(7)
con = sqlite3.connect(db)
text = open(pbfile).read()
sha = hashlib.sha256(text.encode()).hexdigest()
con.execute("INSERT INTO playbooks (name, version, sha256, text, created_at) VALUES (?, ?, ?, ?, ?)",
            ("tcp-baseline", "1.0", sha, text, now))
pb_id = con.execute("SELECT id FROM playbooks WHERE sha256 = ?", (sha,)).fetchone()[0]
cl_id = con.execute("SELECT id FROM clusters WHERE name = 'bench'").fetchone()[0]
ids = ["n-%012x" % i for i in range(1, n + 1)]
hosts = ["bench-%04d" % i for i in range(1, n + 1)]
slow = ids[n // 3]  # the bad node
test = {"name": "pair-lat", "kind": "lat", "line": 24, "col": 7, "pattern": "pairs", "per_rail": False,
        "op": "write", "iters": 2000, "qps": 1, "bidir": False, "size": 8, "duration_s": 0}
spec = {"transport": "tcp", "signoff": False, "quick": False, "tests": [test],
        "acceptance": [{"metric": "pair-lat.p50_us", "test": "pair-lat", "field": "p50_us", "op": "<=",
                        "value": 4, "relative": "median", "message": None, "line": 31}]}
nodes = [{"id": i, "hostname": h, "rails": [], "gpus": [], "gpudirect": {"peermem": True, "dmabuf": True}}
         for i, h in zip(ids, hosts)]
rows, values, k = [], [], 0
for a in range(n):
    for b in range(a + 1, n):
        v = random.gauss(8.0, 0.6)
        if ids[a] == slow or ids[b] == slow:
            v *= 6
        values.append(v)
        m = {"min_us": v * 0.9, "p50_us": v, "p90_us": v * 1.2, "p99_us": v * 1.6, "p999_us": v * 2.5,
             "max_us": v * 3, "mean_us": v * 1.05, "stddev_us": v * 0.1}
        summ = {"metrics": m, "counters": {}, "counters_unknown": {},
                "env": {"a": {"device": "", "port": 0, "mtu": 9000, "link_gbps": 0},
                        "b": {"device": "", "port": 0, "mtu": 9000, "link_gbps": 0}}}
        rows.append(("c-bench256", 0, k // 1000, k % 1000, "run", "measure", ids[a], ids[b], None,
                     None, "done", json.dumps(summ), None, now - 3600000, None, now - 3500000))
        k += 1
med = statistics.median(values)
thr = 4 * med
failures = [{"a": r[6], "b": r[7], "reason": "pair-lat: p50_us %.1f, not <= %.1f (4.0 x median %.2f)" % (
    json.loads(r[11])["metrics"]["p50_us"], thr, med), "attributed": "node", "rail": None}
    for r in rows if json.loads(r[11])["metrics"]["p50_us"] > thr]
verdict = {"result": "fail", "transport": "tcp", "baseline": True, "quick": False,
           "tests": [{"name": "pair-lat", "kind": "lat", "pattern": "pairs", "per_rail": False,
                      "rows": len(rows), "measured": len(rows), "result": "fail", "failed": len(failures),
                      "stats": {"p50_us": {"n": len(rows), "min": min(values), "median": med, "mad": 0.4,
                                           "max": max(values)}},
                      "rules": [{"metric": "pair-lat.p50_us", "op": "<=", "value": 4, "relative": "median",
                                 "evaluated": len(rows), "failed": len(failures),
                                 "threshold_text": "%.1f (4.0 x median %.2f)" % (thr, med), "line": 31,
                                 "threshold": thr}],
                      "failures": failures[:200], "failures_total": len(failures)}],
           "nodes": [{"id": i, "hostname": h, "result": "fail" if i == slow else "pass",
                      "reasons": ["pair-lat: fails with %d of %d peers" % (n - 1, n - 1)] if i == slow else [],
                      "rails": []} for i, h in zip(ids, hosts)],
           "links": [], "links_total": 0,
           "findings": ["pair-lat: node %s is bad: fails with %d of %d peers" % (hosts[n // 3], n - 1, n - 1)],
           "left_out": []}
rounds = n - 1 if n % 2 == 0 else n
con.execute("INSERT INTO campaigns (id, cluster_id, playbook_id, actor, spec, nodes, left_out, options, progress,"
            " seed, state, test_idx, round, verdict, created_at, finished_at) VALUES"
            " (?, ?, ?, 'bench', ?, ?, '[]', ?, ?, 1, 'failed', 1, 0, ?, ?, ?)",
            ("c-bench256", cl_id, pb_id, json.dumps(spec), json.dumps(nodes),
             json.dumps({"tests": None, "nodes": None, "transport": None, "quick": False,
                         "allow_missing": False, "signoff": False}),
             json.dumps({"tests": [{"name": "pair-lat", "rounds": rounds, "retest": []}]}),
             json.dumps(verdict), now - 3600000, now - 3400000))
con.executemany("INSERT INTO campaign_results (campaign_id, test_idx, round, slot, phase, role, node_a, node_b,"
                " rail, bench_id, state, summary, error, started_at, live_at, finished_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
con.commit()
print("seeded: %d pairs, %d failing (%d listed)" % (len(rows), len(failures), min(200, len(failures))),
      file=sys.stderr)
PY

"$CTL" serve --state-dir "$W/ctl" --listen 127.0.0.1:0 --http 127.0.0.1:0 >"$W/controller.log" 2>&1 &
pids+=("$!")
for _ in $(seq 300); do [ -s "$W/ctl/api.addr" ] && break; sleep 0.1; done
[ -s "$W/ctl/api.addr" ] || { echo "$0: the controller did not start:" >&2; tail "$W/controller.log" >&2; exit 1; }
URL=$(cat "$W/ctl/api.addr")
# A viewer token per measure: each page load opens the event stream, and one token may hold 16
# (docs/rest.md); the 6 loads of a measure stay under it while the closed ones are noticed.
TOKEN=
for k in 1 2 3; do
	TOKEN=$TOKEN${TOKEN:+,}$("$RY" token create --name "bench-$k" --role viewer --state-dir "$W/ctl" \
		2>/dev/null | awk '/^token:/ { print $2 }')
done
echo "controller $URL; $nodes nodes, a $pnodes-node campaign; $(nproc) CPUs, load average" \
	"$(cut -d' ' -f1-3 /proc/loadavg); $("$CHROMIUM" --version 2>/dev/null | head -1), playwright-core $PW_VERSION"
mkdir -p "$BUILD/portal-artifacts"
node "$SRC/bench/portal-render.mjs" "$PW" "$CHROMIUM" "$URL" "$TOKEN" "$nodes" "$pnodes" c-bench256 "$runs" \
	"$BUILD/portal-artifacts"
echo "screenshots: $BUILD/portal-artifacts/bench-*.png"
