#!/usr/bin/env bash
# Benchmark, not a test: railyard-bench --transport tcp against sockperf (ping-pong latency, p50
# one-way) and iperf3 (bandwidth, receiver side) on 127.0.0.1, alternating which runs first,
# several rounds; prints the medians side by side with ratios (>= 1.00: railyard-bench as good).
# Usage: tcp-compare.sh [--rounds N] [--secs S] [--lat-size BYTES] [--bw-size BYTES] [--build DIR]
# Needs sockperf, iperf3 and jq (deploy/install-deps.sh) and a built railyard-bench.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
rounds=3 secs=3 lat_size=64 bw_size=131072
build=${RAILYARD_BUILD_DIR:-$HERE/../build}
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=$2; shift 2 ;;
	--secs) secs=$2; shift 2 ;;
	--lat-size) lat_size=$2; shift 2 ;;
	--bw-size) bw_size=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	*) echo "usage: $0 [--rounds N] [--secs S] [--lat-size B] [--bw-size B] [--build DIR]" >&2; exit 2 ;;
	esac
done
. "$HERE/lib.sh"
bench_numbers tcp-compare "$rounds" "$secs" "$lat_size" "$bw_size"
[ "$secs" -ge 2 ] || { echo "tcp-compare: --secs 2 at least" >&2; exit 2; }
bench_setup tcp-compare sockperf iperf3 jq
port=$((20000 + RANDOM % 20000))

# Each measurement prints one number or "failed"; failures are counted, never averaged in.
# Every run gets a fresh port (the caller's counter: these run in subshells).
lat_sockperf() { # PORT
	local port=$1
	sockperf server --tcp -i 127.0.0.1 -p $port >"$tmp/sps.log" 2>&1 &
	local srv=$!
	pids+=($srv)
	local out='' i
	for i in $(seq 50); do # the server needs a moment; sockperf's client does not retry
		if out=$(sockperf ping-pong --tcp -i 127.0.0.1 -p $port -m "$lat_size" -t "$secs" 2>&1) &&
			grep -q 'percentile 50.000' <<<"$out"; then
			break
		fi
		out=''
		sleep 0.1
	done
	kill $srv 2>/dev/null || true
	wait $srv 2>/dev/null || true
	awk '/percentile 50.000/ { v = $NF } END { print (v == "" ? "failed" : v) }' <<<"$out"
}

lat_railyard() { # PORT
	local port=$1
	"$bench" lat -p $port -s "$lat_size" -D "$secs" >"$tmp/rbs.log" 2>&1 &
	local srv=$!
	pids+=($srv)
	local v
	v=$("$bench" lat -p $port -s "$lat_size" -D "$secs" --metrics 127.0.0.1 2>"$tmp/rbc.err" |
		awk '$1 == "RY-METRIC" { print $3 }') || true
	wait $srv 2>/dev/null || true
	echo "${v:-failed}"
}

bw_iperf3() { # PORT
	local port=$1
	iperf3 -s -1 -p $port >"$tmp/ips.log" 2>&1 &
	local srv=$!
	pids+=($srv)
	local out='' i
	for i in $(seq 50); do
		if out=$(iperf3 -c 127.0.0.1 -p $port -t "$secs" -l "$bw_size" -J 2>/dev/null); then
			break
		fi
		out=''
		sleep 0.1
	done
	wait $srv 2>/dev/null || true
	jq -r '(.end.sum_received.bits_per_second // empty) / 1e9' <<<"$out" 2>/dev/null || echo failed
}

bw_railyard() { # PORT
	local port=$1
	"$bench" bw -p $port -s "$bw_size" -D "$secs" >"$tmp/rbs.log" 2>&1 &
	local srv=$!
	pids+=($srv)
	local v
	v=$("$bench" bw -p $port -s "$bw_size" -D "$secs" --json 127.0.0.1 2>"$tmp/rbc.err" |
		jq -r '.results[0].bw.gbps // empty') || true
	wait $srv 2>/dev/null || true
	echo "${v:-failed}"
}

: >"$tmp/results"
for r in $(seq "$rounds"); do
	if [ $((r % 2)) = 1 ]; then order="base ry"; else order="ry base"; fi
	for who in $order; do
		port=$((port + 2))
		if [ $who = base ]; then
			echo "lat sockperf $(lat_sockperf $port)" >>"$tmp/results"
			echo "bw iperf3 $(bw_iperf3 $((port + 1)))" >>"$tmp/results"
		else
			echo "lat railyard $(lat_railyard $port)" >>"$tmp/results"
			echo "bw railyard $(bw_railyard $((port + 1)))" >>"$tmp/results"
		fi
	done
done

echo "127.0.0.1, $(nproc) CPUs, $rounds rounds of ${secs} s, alternating; medians"
echo "latency: p50 one-way (RTT/2) of a ${lat_size}-byte TCP ping-pong, usec (lower is better)"
echo "bandwidth: one TCP stream of ${bw_size}-byte writes, receiver side, Gb/s (higher is better)"
awk '
	{ key = $1 " " $2; if ($3 == "failed") { bad[key]++; next } n[key]++; v[key, n[key]] = $3 }
	function median(key,   k, i, j, x, a) {
		k = n[key]
		if (k == 0) return ""
		for (i = 1; i <= k; i++) a[i] = v[key, i]
		for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
		return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	END {
		printf "%-10s %-10s %12s %16s %8s %s\n", "test", "baseline", "baseline", "railyard-bench", "ratio", "failed(b/r)"
		b = median("lat sockperf"); r = median("lat railyard")
		printf "%-10s %-10s %12s %16s %8s %d/%d\n", "lat_p50", "sockperf", (b == "" ? "-" : sprintf("%.2f", b)), (r == "" ? "-" : sprintf("%.2f", r)), (b != "" && r != "" && r > 0) ? sprintf("%.2f", b / r) : "-", bad["lat sockperf"], bad["lat railyard"]
		b = median("bw iperf3"); r = median("bw railyard")
		printf "%-10s %-10s %12s %16s %8s %d/%d\n", "bw_gbps", "iperf3", (b == "" ? "-" : sprintf("%.2f", b)), (r == "" ? "-" : sprintf("%.2f", r)), (b != "" && r != "" && b > 0) ? sprintf("%.2f", r / b) : "-", bad["bw iperf3"], bad["bw railyard"]
		print "ratio: latency sockperf/railyard, bandwidth railyard/iperf3 (target >= 0.95)"
	}' "$tmp/results"
echo "raw:"
sed 's/^/  /' "$tmp/results"
