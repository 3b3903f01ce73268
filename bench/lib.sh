# Shared set-up of the compare scripts (tcp-compare.sh, cpu-compare.sh), sourced once their
# options are read ($build set).
# bench_numbers NAME VALUE...: every value a whole number, or exit 2.
bench_numbers() {
	local name=$1 v
	shift
	for v in "$@"; do
		case "$v" in '' | *[!0-9]*) echo "$name: numbers only" >&2; exit 2 ;; esac
	done
}
# bench_setup NAME TOOL...: $bench (the built railyard-bench) and every TOOL on PATH, or exit 2;
# then $tmp, a directory of this run, and $pids, processes to stop, both cleaned up at exit.
bench_setup() {
	local name=$1 t
	shift
	bench=$build/nodeagent/bench/railyard-bench
	[ -x "$bench" ] || { echo "$name: $bench not built (set RAILYARD_BUILD_DIR or --build)" >&2; exit 2; }
	for t in "$@"; do
		command -v "$t" >/dev/null || { echo "$name: $t missing (deploy/install-deps.sh)" >&2; exit 2; }
	done
	tmp=$(mktemp -d)
	pids=()
	trap bench_cleanup EXIT
}
bench_cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
