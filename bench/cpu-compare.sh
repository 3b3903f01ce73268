#!/usr/bin/env bash
# Benchmark, not a test: the CPU cost of TCP bandwidth on 127.0.0.1, railyard-bench against
# iperf3, in one run: alternating rounds of one TCP stream each, and per tool the receiver's
# Gb/s, each side's CPU (iperf3 -J's cpu_utilization_percent host_total (sender) and
# remote_total (receiver): the process's user + system time over the test's wall time;
# railyard-bench's benchmark thread (RUSAGE_THREAD) over its data phase, the same measure, and
# its host-wide /proc/stat figure beside it) as cores, and as CPU-seconds per GB moved
# (cores x 8 / Gb/s), per side and both sides together (on loopback the kernel's receive work
# lands on whichever side's system call ran it, so the split moves; the sum does not). Prints
# medians side by side with the ratio railyard/iperf3 (<= 1.00: railyard-bench spends no more
# CPU per byte). docs/bench.md, "CPU cost".
# Usage: cpu-compare.sh [--rounds N] [--secs S] [--size BYTES] [--build DIR]
# Needs iperf3, jq and python3 (deploy/install-deps.sh) and a built railyard-bench.
set -euo pipefail
exec </dev/null # neither tool may wait on a terminal (runs hung without this)
HERE=$(cd "$(dirname "$0")" && pwd)
rounds=3 secs=3 size=131072
build=${RAILYARD_BUILD_DIR:-$HERE/../build}
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=$2; shift 2 ;;
	--secs) secs=$2; shift 2 ;;
	--size) size=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	*) echo "usage: $0 [--rounds N] [--secs S] [--size B] [--build DIR]" >&2; exit 2 ;;
	esac
done
. "$HERE/lib.sh"
bench_numbers cpu-compare "$rounds" "$secs" "$size"
[ "$secs" -ge 2 ] || { echo "cpu-compare: --secs 2 at least" >&2; exit 2; }
[ "$rounds" -ge 1 ] || { echo "cpu-compare: --rounds 1 at least" >&2; exit 2; }
bench_setup cpu-compare iperf3 jq python3
# A port nothing listens on now, on 127.0.0.1 (the kernel's pick): a port another program
# holds would take iperf3's client to the wrong server.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Each run prints "TOOL GBPS SEND_CORES RECV_CORES SEND_HOST RECV_HOST" or "TOOL failed".
run_iperf3() { # PORT
	local port=$1 out='' i
	iperf3 -s -1 -B 127.0.0.1 -p "$port" >"$tmp/ips.log" 2>&1 &
	local srv=$!
	pids+=($srv)
	for i in $(seq 50); do # the server needs a moment; iperf3's client does not retry
		if out=$(timeout $((secs * 2 + 10)) iperf3 -c 127.0.0.1 -p "$port" -t "$secs" -l "$size" -J 2>/dev/null); then
			break
		fi
		out=''
		sleep 0.1
	done
	# A server that never saw its client (a port taken meanwhile) would wait forever.
	[ -n "$out" ] || kill $srv 2>/dev/null || true
	wait $srv 2>/dev/null || true
	[ -n "$out" ] || { echo "iperf3 failed"; return; }
	jq -r '"iperf3 \(.end.sum_received.bits_per_second / 1e9) " +
		"\(.end.cpu_utilization_percent.host_total / 100) " +
		"\(.end.cpu_utilization_percent.remote_total / 100) - -"' <<<"$out" 2>/dev/null ||
		echo "iperf3 failed"
}

run_railyard() { # PORT
	local port=$1 v
	"$bench" bw -p "$port" -s "$size" -D "$secs" >"$tmp/rbs.log" 2>&1 &
	local srv=$!
	pids+=($srv)
	v=$(timeout $((secs * 2 + 20)) "$bench" bw -p "$port" -s "$size" -D "$secs" --json 127.0.0.1 2>"$tmp/rbc.err" |
		jq -r '.results[0] | "railyard \(.bw.gbps) \(.cpu.client.thread_cores) " +
			"\(.cpu.server.thread_cores) \(.cpu.client.host_cores // "-") " +
			"\(.cpu.server.host_cores // "-")"') || true
	[ -n "$v" ] || kill $srv 2>/dev/null || true
	wait $srv 2>/dev/null || true
	echo "${v:-railyard failed}"
}

: >"$tmp/results"
for r in $(seq "$rounds"); do
	if [ $((r % 2)) = 1 ]; then order="base ry"; else order="ry base"; fi
	for who in $order; do
		port=$(free_port)
		if [ $who = base ]; then run_iperf3 "$port"; else run_railyard "$port"; fi >>"$tmp/results"
	done
done

echo "127.0.0.1, $(nproc) CPUs, $rounds rounds of ${secs} s, one TCP stream of ${size}-byte writes, alternating; medians"
echo "cores: the tool's own CPU (user + system) over the run; CPU-s/GB = cores x 8 / Gb/s"
awk '
	$2 == "failed" { bad[$1]++; next }
	{ n[$1]++; k = n[$1]; g[$1, k] = $2; s[$1, k] = $3; r[$1, k] = $4; hs[$1, k] = $5; hr[$1, k] = $6
	  spg[$1, k] = $3 * 8 / $2; rpg[$1, k] = $4 * 8 / $2; t[$1, k] = $3 + $4; tpg[$1, k] = ($3 + $4) * 8 / $2 }
	function med(arr, t,   k, i, j, x, a) {
		k = n[t]
		if (k == 0) return ""
		for (i = 1; i <= k; i++) a[i] = arr[t, i]
		for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
		return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	function f(v) { return v == "" ? "-" : sprintf("%.3f", v) }
	function ratio(a, b) { return (a == "" || b == "" || b <= 0) ? "-" : sprintf("%.2f", a / b) }
	END {
		printf "%-22s %10s %16s %8s\n", "", "iperf3", "railyard-bench", "ratio"
		printf "%-22s %10s %16s %8s\n", "Gb/s (receiver)", f(med(g, "iperf3")), f(med(g, "railyard")), ratio(med(g, "railyard"), med(g, "iperf3"))
		printf "%-22s %10s %16s %8s\n", "sender cores", f(med(s, "iperf3")), f(med(s, "railyard")), ratio(med(s, "railyard"), med(s, "iperf3"))
		printf "%-22s %10s %16s %8s\n", "receiver cores", f(med(r, "iperf3")), f(med(r, "railyard")), ratio(med(r, "railyard"), med(r, "iperf3"))
		printf "%-22s %10s %16s %8s\n", "sender CPU-s/GB", f(med(spg, "iperf3")), f(med(spg, "railyard")), ratio(med(spg, "railyard"), med(spg, "iperf3"))
		printf "%-22s %10s %16s %8s\n", "receiver CPU-s/GB", f(med(rpg, "iperf3")), f(med(rpg, "railyard")), ratio(med(rpg, "railyard"), med(rpg, "iperf3"))
		printf "%-22s %10s %16s %8s\n", "both sides cores", f(med(t, "iperf3")), f(med(t, "railyard")), ratio(med(t, "railyard"), med(t, "iperf3"))
		printf "%-22s %10s %16s %8s\n", "both sides CPU-s/GB", f(med(tpg, "iperf3")), f(med(tpg, "railyard")), ratio(med(tpg, "railyard"), med(tpg, "iperf3"))
		printf "%-22s %10s %16s\n", "host-wide cores (s/r)", "-", f(med(hs, "railyard")) "/" f(med(hr, "railyard"))
		printf "failed runs: iperf3 %d, railyard-bench %d\n", bad["iperf3"], bad["railyard"]
	}' "$tmp/results"
echo "raw (tool Gb/s sender-cores receiver-cores host-sender host-receiver):"
sed 's/^/  /' "$tmp/results"
