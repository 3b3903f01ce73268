#!/usr/bin/env bash
# Benchmark, not a test: run perftest and railyard-bench with the same parameters in the same
# soft-RoCE guest, back to back and alternating, several rounds, and print a side-by-side table
# (medians) with ratios. Without railyard-bench in the build it runs perftest alone and says so.
# Usage: compare-perftest.sh [--rounds N] [--iters N] [--size BYTES] [--tests "write_lat ..."]
# (default size: 2 B for latency, 64 KiB for bandwidth tests)
# Needs RAILYARD_BUILD_DIR (a configured and built tree). Emulated figures: compare only side by
# side, never with real hardware.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export RAILYARD_SOURCE_DIR=${RAILYARD_SOURCE_DIR:-$(cd "$HERE/../.." && pwd)}
rounds=3 iters=1000 size='' tests="write_lat send_lat read_lat write_bw"
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--size) size=$2; shift 2 ;;
	--tests) tests=$2; shift 2 ;;
	*) echo "usage: $0 [--rounds N] [--iters N] [--size BYTES] [--tests \"write_lat ...\"]" >&2; exit 2 ;;
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
	--env "RY_CMP_TESTS=$tests" single >/dev/null || rc=$?
log=$RAILYARD_BUILD_DIR/rdma-vm/logs/compare/guest0.log
[ $rc = 0 ] || { echo "compare-perftest: guest run failed (rc $rc); see $log" >&2; tail -20 "$log" >&2; exit $rc; }
grep -q '^RY-NOTE railyard-bench is not in the image' "$log" &&
	echo "NOTE: railyard-bench is not built yet: perftest alone (no ratios)."
echo "soft-RoCE, one guest, looped back on rxe0; $rounds rounds, $iters iterations," \
	"${size:+$size B}${size:-2 B latency / 65536 B bandwidth}"
# Median per tool and test; failed measurements (inf/nan/0) are counted, never averaged in.
tr -d '\r' <"$log" | awk -v tests="$tests" '
	/^RY-CMP / {
		tool = $2; t = $3
		if ($5 == "failed") { bad[tool, t]++; next }
		n[tool, t]++; v[tool, t, n[tool, t]] = $5; unit[t] = $6
	}
	function median(tool, t,   k, i, j, x, a) {
		k = n[tool, t]
		if (k == 0) return ""
		for (i = 1; i <= k; i++) a[i] = v[tool, t, i]
		for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
		return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	END {
		printf "%-10s %-8s %14s %16s %8s %s\n", "test", "unit", "perftest", "railyard-bench", "ratio", "failed(p/r)"
		split(tests, ts, " ")
		for (i = 1; i in ts; i++) {
			t = ts[i]; p = median("perftest", t); r = median("railyard-bench", t)
			ratio = (p != "" && r != "" && p > 0) ? sprintf("%.2f", r / p) : "-"
			printf "%-10s %-8s %14s %16s %8s %d/%d\n", t, unit[t], (p == "" ? "-" : p), (r == "" ? "-" : r), ratio, bad["perftest", t], bad["railyard-bench", t]
		}
	}'
