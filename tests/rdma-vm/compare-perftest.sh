#!/usr/bin/env bash
# Benchmark, not a test: run perftest and railyard-bench with the same parameters in the same
# soft-RoCE guest, back to back and alternating, several rounds, and print a side-by-side table
# (medians) with ratios. Without railyard-bench in the build it runs perftest alone and says so.
# Usage: compare-perftest.sh [--rounds N] [--iters N] [--size BYTES] [--tests "write_lat ..."]
#        [--no-pin]
# (default size: 2 B for latency, 64 KiB for bandwidth tests; servers run on vCPU 0 and clients
# on vCPU 1 unless --no-pin)
# Needs RAILYARD_BUILD_DIR (a configured and built tree). Emulated figures: compare only side by
# side, never with real hardware.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export RAILYARD_SOURCE_DIR=${RAILYARD_SOURCE_DIR:-$(cd "$HERE/../.." && pwd)}
rounds=3 iters=1000 size='' tests="write_lat send_lat read_lat write_bw" pin=1
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--size) size=$2; shift 2 ;;
	--tests) tests=$2; shift 2 ;;
	--no-pin) pin=0; shift ;;
	*) echo "usage: $0 [--rounds N] [--iters N] [--size BYTES] [--tests \"write_lat ...\"] [--no-pin]" >&2; exit 2 ;;
	esac
done
: "${RAILYARD_BUILD_DIR:?set RAILYARD_BUILD_DIR to a built tree}"
for v in "$rounds" "$iters" "${size:-0}"; do
	case "$v" in '' | *[!0-9]*) echo "compare-perftest: numbers only" >&2; exit 2 ;; esac
done
for t in $tests; do
	case "$t" in write_lat | send_lat | read_lat | write_bw | send_bw | read_bw) ;;
	*) echo "compare-perftest: unknown test '$t'" >&2; exit 2 ;; esac
done
timeout=$((60 + rounds * $(wc -w <<<"$tests") * 30))
rc=0
"$HERE/run-vm.sh" --name compare --timeout "$timeout" --script "$HERE/cases/compare.sh" \
	--env "RY_CMP_ROUNDS=$rounds" --env "RY_CMP_ITERS=$iters" --env "RY_CMP_SIZE=$size" \
	--env "RY_CMP_TESTS=$tests" --env "RY_CMP_PIN=$pin" single >/dev/null || rc=$?
log=$RAILYARD_BUILD_DIR/rdma-vm/logs/compare/guest0.log
[ $rc = 0 ] || { echo "compare-perftest: guest run failed (rc $rc); see $log" >&2; tail -20 "$log" >&2; exit $rc; }
grep -q '^RY-NOTE railyard-bench is not in the image' "$log" &&
	echo "NOTE: railyard-bench is not built yet: perftest alone (no ratios)."
echo "soft-RoCE, one guest, looped back on rxe0; $rounds rounds, $iters iterations," \
	"${size:+$size B}${size:-2 B latency / 65536 B bandwidth}"
# Median and best (lowest latency, highest bandwidth) per tool and test: emulation only ever
# adds time, so the best round shows each tool's own cost and the median the typical run.
# "paired": the median over rounds of each round's railyard/perftest ratio (the two ran back to
# back), which a load that drifts between rounds does not move the way it moves a best or a
# median of either tool alone. Failed measurements (inf/nan/0) are counted, never averaged in.
tr -d '\r' <"$log" | awk -v tests="$tests" '
	/^RY-CMP / {
		tool = $2; t = $3
		if ($5 == "failed") { bad[tool, t]++; next }
		n[tool, t]++; v[tool, t, n[tool, t]] = $5; unit[t] = $6; at[tool, t, $4] = $5
		rounds[$4] = 1
	}
	# the median over rounds of railyard/perftest, as ratio() takes them
	function paired(t,   k, a, r, i, j, x) {
		k = 0
		for (r in rounds)
			if ((("perftest", t, r) in at) && (("railyard-bench", t, r) in at) && at["perftest", t, r] > 0)
				a[++k] = at["railyard-bench", t, r] / at["perftest", t, r]
		if (k == 0) return "-"
		for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
		return sprintf("%.2f", (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2)
	}
	# sorted values of (tool, t) into a[1..k]; returns k
	function sorted(tool, t, a,   k, i, j, x) {
		k = n[tool, t]
		for (i = 1; i <= k; i++) a[i] = v[tool, t, i]
		for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
		return k
	}
	function median(tool, t,   k, a) {
		k = sorted(tool, t, a)
		if (k == 0) return ""
		return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	function best(tool, t, bw,   k, a) {
		k = sorted(tool, t, a)
		if (k == 0) return ""
		return bw ? a[k] : a[1]
	}
	function ratio(p, r) { return (p != "" && r != "" && p > 0) ? sprintf("%.2f", r / p) : "-" }
	function show(x) { return x == "" ? "-" : x }
	END {
		printf "%-10s %-7s %9s %9s %6s   %9s %9s %6s  %6s  %s\n", "", "", "median", "", "", "best", "", "", "", ""
		printf "%-10s %-7s %9s %9s %6s   %9s %9s %6s  %6s  %s\n", "test", "unit", "perftest", "railyard", "ratio", "perftest", "railyard", "ratio", "paired", "failed(p/r)"
		split(tests, ts, " ")
		for (i = 1; i in ts; i++) {
			t = ts[i]; bw = (t ~ /_bw$/)
			p = median("perftest", t); r = median("railyard-bench", t)
			pb = best("perftest", t, bw); rb = best("railyard-bench", t, bw)
			printf "%-10s %-7s %9s %9s %6s   %9s %9s %6s  %6s  %d/%d\n", t, unit[t], show(p), show(r), ratio(p, r), show(pb), show(rb), ratio(pb, rb), paired(t), bad["perftest", t], bad["railyard-bench", t]
		}
	}'
