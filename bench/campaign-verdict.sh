#!/usr/bin/env bash
# Benchmark, not a test: the verdict of a synthetic campaign (default 1024 nodes x 8 rails, pairs
# per rail, a latency and a bandwidth test: 8,380,416 result rows, with a bad node, a bad rail,
# two bad links and missing rails injected), vd_evaluate() timed alone, RUNS times; prints each
# run and the median against the target (<= 2000 ms). Fails when a run's verdict misses an
# injected fault or names a healthy part. With --compare DIR it does the same with the bench
# binary of another build (e.g. an older commit) in the same run, side by side.
# Usage: bench/campaign-verdict.sh [--build DIR] [--nodes 1024] [--rails 8] [--runs 5] [--compare DIR]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$SRC/build nodes=1024 rails=8 runs=5 compare=
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--nodes) nodes=$2; shift 2 ;;
	--rails) rails=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--compare) compare=$2; shift 2 ;;
	*) echo "usage: $0 [--build DIR] [--nodes 1024] [--rails 8] [--runs 5] [--compare DIR]" >&2; exit 2 ;;
	esac
done
target_ms=2000

# Build the bench if needed (configure the build directory when it has never been).
[ -f "$BUILD/CMakeCache.txt" ] || cmake -S "$SRC" -B "$BUILD" >/dev/null
cmake --build "$BUILD" --target railyard-verdict-bench -j"$(nproc)" >/dev/null

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# measure LABEL BUILD-DIR: every run, then the median line
measure() {
	local label=$1 bin=$2/bench/railyard-verdict-bench out ms=() peak=() rows=0 i
	for ((i = 1; i <= runs; i++)); do
		if ! out=$("$bin" --nodes "$nodes" --rails "$rails"); then
			printf '%s\n' "$out" >&2
			echo "$0: $label run $i: the verdict is wrong (see above)" >&2
			exit 1
		fi
		get() { awk -F= -v k="$1" '$1 == k { print $2 }' <<<"$out"; }
		rows=$(get rows)
		ms+=("$(get evaluate_ms)")
		peak+=("$(get peak_rss_mib)")
		printf '%-8s run %d: vd_evaluate %8s ms, program %8s ms, RSS %s -> %s MiB (peak %s MiB), %s findings, %s links, faults found: %s\n' \
			"$label" "$i" "$(get evaluate_ms)" "$(get total_ms)" "$(get rss_before_mib)" \
			"$(get rss_after_mib)" "$(get peak_rss_mib)" "$(get findings)" "$(get links)" \
			"$(get faults_found)"
	done
	local mms mpeak
	mms=$(printf '%s\n' "${ms[@]}" | median)
	mpeak=$(printf '%s\n' "${peak[@]}" | median)
	printf '%-8s verdict %s nodes x %s rails: %s rows in %.0f ms, peak RSS %.0f MiB (target <= %d ms)%s\n' \
		"$label" "$nodes" "$rails" "$rows" "$mms" "$mpeak" "$target_ms" \
		"$(awk -v m="$mms" -v t="$target_ms" 'BEGIN { if (m > t) print ": MISSED" }')"
}

echo "median of $runs runs; vd_evaluate() timed alone, on $(nproc) CPUs"
measure this "$BUILD"
[ -z "$compare" ] || measure compare "$compare"
