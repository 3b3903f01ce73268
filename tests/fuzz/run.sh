#!/usr/bin/env bash
# `make fuzz`: run each fuzz target for a bounded time and print what it did and found.
# Usage: tests/fuzz/run.sh BUILD SECS [TARGET...]   (all targets of BUILD when none is named)
# Each target starts from its seeds (tests/fuzz/corpus/TARGET, read only) and the inputs it
# found before (BUILD/fuzz-out/corpus/TARGET, kept between runs), with tests/fuzz/TARGET.dict.
# Findings (crash-, leak-, timeout-, oom- inputs) land in BUILD/fuzz-out/artifacts/; the
# target's log in BUILD/fuzz-out/TARGET.log. Exit 1 when a target found something.
# tests/fuzz/TARGET.options: libFuzzer flags of that target, one per line (the stateful targets
# turn off libFuzzer's per-input leak check, whose full scan after every input that allocates
# more than it frees would cost more than the input; LeakSanitizer still checks at exit).
# FUZZ_ARGS: more libFuzzer flags (e.g. "-jobs=2 -workers=2").
set -uo pipefail
build=$1
secs=$2
shift 2
src=$(cd "$(dirname "$0")/../.." && pwd)
bin=$build/tests/fuzz
out=$build/fuzz-out
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	for f in "$bin"/fuzz_*; do
		[ -x "$f" ] && targets+=("$(basename "$f")")
	done
fi
if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz: no targets in $bin (configure with -DRAILYARD_FUZZ=ON and clang)" >&2
	exit 2
fi
mkdir -p "$out/artifacts"
found=0
printf '%-22s %6s %12s %9s %7s %s\n' target secs execs exec/s corpus findings
for t in "${targets[@]}"; do
	work=$out/corpus/$t
	log=$out/$t.log
	mkdir -p "$work"
	args=(-max_total_time="$secs" -print_final_stats=1 -timeout=20 -rss_limit_mb=2560
		-artifact_prefix="$out/artifacts/$t-")
	[ -f "$src/tests/fuzz/$t.dict" ] && args+=(-dict="$src/tests/fuzz/$t.dict")
	if [ -f "$src/tests/fuzz/$t.options" ]; then
		while read -r opt; do
			[ -n "$opt" ] && args+=("$opt")
		done <"$src/tests/fuzz/$t.options"
	fi
	before=$(find "$out/artifacts" -name "$t-*" 2>/dev/null | wc -l)
	start=$(date +%s)
	# shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags
	"$bin/$t" "${args[@]}" ${FUZZ_ARGS:-} "$work" "$src/tests/fuzz/corpus/$t" >"$log" 2>&1
	rc=$?
	took=$(($(date +%s) - start))
	execs=$(awk '/stat::number_of_executed_units/ {n += $2} END {print n + 0}' "$log")
	rate=$(awk '/stat::average_exec_per_sec/ {n += $2} END {print n + 0}' "$log")
	corpus=$(find "$work" -type f | wc -l)
	after=$(find "$out/artifacts" -name "$t-*" 2>/dev/null | wc -l)
	what=none
	if [ "$rc" -ne 0 ] || [ "$after" -gt "$before" ]; then
		found=1
		what="rc $rc: $(grep -m1 -E 'ERROR: |invariant broken|runtime error' "$log" || echo "see $log")"
	fi
	printf '%-22s %6s %12s %9s %7s %s\n' "$t" "$took" "$execs" "$rate" "$corpus" "$what"
done
[ "$found" -eq 0 ] || echo "fuzz: findings above; inputs in $out/artifacts, logs in $out" >&2
exit "$found"
