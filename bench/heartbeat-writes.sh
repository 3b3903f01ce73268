#!/usr/bin/env bash
# Benchmark, not a test: what a serving controller costs per heartbeat. Starts a controller
# and the four fixture agents on 127.0.0.1 with a short heartbeat interval, then counts the
# controller's fsync/fdatasync calls (strace) and its CPU time over a window. With --compare
# BIN it does the same with another controller binary (e.g. an older build) in the same run
# and prints both side by side.
# Usage: bench/heartbeat-writes.sh [--build DIR] [--interval 200ms] [--secs 10] [--compare BIN]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$SRC/build interval=200ms secs=10 compare=
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--interval) interval=$2; shift 2 ;;
	--secs) secs=$2; shift 2 ;;
	--compare) compare=$2; shift 2 ;;
	*) echo "usage: $0 [--build DIR] [--interval 200ms] [--secs 10] [--compare BIN]" >&2; exit 2 ;;
	esac
done
AGENT=$BUILD/nodeagent/railyard-agent
FIX=$SRC/tests/fixtures/sysroots
NODES=(h200-ib h200-roce h200-degraded h200-ib-2)
command -v strace >/dev/null || { echo "$0: needs strace (apt-get install strace)" >&2; exit 1; }
W=$(mktemp -d /tmp/railyard-hb.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT

wait_for() { # SECONDS command...
	local end=$(($(date +%s) + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt $end ] || { echo "$0: timed out: $*" >&2; exit 1; }
		sleep 0.2
	done
}

# measure LABEL CONTROLLER-BINARY: prints "LABEL fsyncs/s cpu%"
measure() {
	local label=$1 ctl=$2 d=$W/$1
	mkdir -p "$d"
	"$ctl" init --state-dir "$d/ctl" >/dev/null
	"$ctl" serve --state-dir "$d/ctl" --listen 127.0.0.1:0 --http 127.0.0.1:0 --heartbeat-interval "$interval" \
		>"$d/controller.log" 2>&1 &
	local cpid=$!
	pids+=("$cpid")
	wait_for 20 test -s "$d/ctl/controller.addr"
	local addr token fp
	addr=$(cat "$d/ctl/controller.addr")
	"$ctl" token create --state-dir "$d/ctl" --cluster hb --uses ${#NODES[@]} \
		--controller "$addr" >"$d/token"
	token=$(awk '/^token:/ {print $2}' "$d/token")
	fp=$(awk '/^ca-fingerprint:/ {print $2}' "$d/token")
	for n in "${NODES[@]}"; do
		"$AGENT" enroll --controller "$addr" --token "$token" --ca-fingerprint "$fp" \
			--state-dir "$d/$n" --sysroot "$FIX/$n" >/dev/null
		"$AGENT" run --state-dir "$d/$n" --sysroot "$FIX/$n" >"$d/$n.log" 2>&1 &
		pids+=("$!")
	done
	wait_for 30 bash -c "[ \$('$ctl' nodes --json --state-dir '$d/ctl' | grep -c '\"online\"') = ${#NODES[@]} ]"
	local c0 c1 t0 t1
	c0=$(cat /proc/$cpid/task/*/schedstat | awk '{s += $1} END {print s}')
	t0=$(date +%s%N)
	timeout "$secs" strace -f -qq -c -e trace=fsync,fdatasync -p "$cpid" -o "$d/strace" || true
	c1=$(cat /proc/$cpid/task/*/schedstat | awk '{s += $1} END {print s}')
	t1=$(date +%s%N)
	local calls
	calls=$(awk '$NF == "fsync" || $NF == "fdatasync" {s += $4} END {print s + 0}' "$d/strace")
	awk -v l="$label" -v c="$calls" -v ns=$((t1 - t0)) -v cpu=$((c1 - c0)) \
		'BEGIN { printf "%-10s %10.1f %12.2f\n", l, c / (ns / 1e9), 100 * cpu / ns }'
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	pids=()
}

echo "controller, ${#NODES[@]} agents, heartbeat every $interval, ${secs} s window (strace attached)"
printf "%-10s %10s %12s\n" binary "fsync/s" "cpu % core"
measure current "$BUILD/controller/railyard-controller"
[ -z "$compare" ] || measure compare "$compare"
