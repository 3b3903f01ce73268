#!/usr/bin/env bash
# Benchmark, not a test: what the agent's health watchers cost (docs/health.md, "Cost"). One
# controller on 127.0.0.1 and three agents on copies of one fixture node, side by side in one
# run: watchers off (--health-interval 0: the anchor), at the default interval (10 s), and at
# 1 s (ten times the work). Each sysroot has a kernel log (dev/kmsg) that grows by a line a
# second, its HCAs' port counters and their netdevs' transmit queues (64 each); with the
# tests' NVML double built, the GPU watcher reads 8 GPUs through it. After a warm-up, the CPU
# time (utime + stime of /proc/PID/stat) and the RSS (VmRSS) of each agent over the window: CPU
# as % of one core, RSS growth in KiB.
# Usage: bench/agent-health.sh [--build DIR] [--secs 120] [--fixture h200-ib]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$SRC/build secs=120 fixture=h200-ib
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--secs) secs=$2; shift 2 ;;
	--fixture) fixture=$2; shift 2 ;;
	*) echo "usage: $0 [--build DIR] [--secs 120] [--fixture h200-ib]" >&2; exit 2 ;;
	esac
done
CTL=$BUILD/controller/railyard-controller
RY=$BUILD/client/railyard
AGENT=$BUILD/nodeagent/railyard-agent
W=$(mktemp -d /tmp/railyard-health-bench.XXXXXX)
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
# The NVML double, when the tests built it (the GPU watcher then reads 8 GPUs).
NVML=$(find "$BUILD/tests" -name 'libnvml_double.so' 2>/dev/null | head -1 || true)

"$CTL" init --state-dir "$W/ctl" >/dev/null
"$CTL" serve --state-dir "$W/ctl" --listen 127.0.0.1:0 --http 127.0.0.1:0 >"$W/controller.log" 2>&1 &
pids+=("$!")
wait_for 20 test -s "$W/ctl/controller.addr"
addr=$(cat "$W/ctl/controller.addr")
"$RY" enrollment-token create --state-dir "$W/ctl" --cluster bench --uses 3 >"$W/token"
token=$(awk '/^token:/ {print $2}' "$W/token")
fp=$(awk '/^ca-fingerprint:/ {print $2}' "$W/token")
declare -A PID
for mode in off:0 default:10s fast:1s; do
	name=${mode%%:*} iv=${mode#*:}
	root=$W/root-$name
	cp -a "$SRC/tests/fixtures/sysroots/$fixture" "$root"
	mkdir -p "$root/dev" "$root/proc/sys/kernel/random"
	: >"$root/dev/kmsg"
	cat /proc/sys/kernel/random/boot_id >"$root/proc/sys/kernel/random/boot_id"
	for p in "$root"/sys/class/infiniband/*/ports/*; do
		mkdir -p "$p/counters"
		for c in symbol_error link_downed port_rcv_errors port_xmit_data port_rcv_data; do
			echo 0 >"$p/counters/$c"
		done
	done
	# Each HCA's netdev with 64 transmit queues (mlx5's channels on a many-core host), whose
	# tx_timeout the port watcher sums every tick.
	for nd in "$root"/sys/class/infiniband/*/device/net/*; do
		for q in $(seq 0 63); do
			mkdir -p "$root/sys/class/net/${nd##*/}/queues/tx-$q"
			echo 0 >"$root/sys/class/net/${nd##*/}/queues/tx-$q/tx_timeout"
		done
	done
	(umask 077 && printf "%s\n" "$token" >"$W/$name.token")
	"$AGENT" enroll --controller "$addr" --token-file "$W/$name.token" --ca-fingerprint "$fp" \
		--state-dir "$W/$name" --sysroot "$root" --hostname "bench-$name" >/dev/null 2>&1
	env ${NVML:+RAILYARD_NVML_LIBRARY=$NVML} "$AGENT" run --state-dir "$W/$name" --sysroot "$root" \
		--health-interval "$iv" >"$W/$name.log" 2>&1 &
	PID[$name]=$!
	pids+=("$!")
done
# The kernel logs grow by a line a second (a chatty kernel: nothing the watchers report), the
# port data counters move as under traffic.
(
	i=1000
	while sleep 1; do
		i=$((i + 1))
		for name in off default fast; do
			printf '6,%d,%d,-;eth0: link becomes ready\n' "$i" "$((i * 1000))" >>"$W/root-$name/dev/kmsg"
			for p in "$W/root-$name"/sys/class/infiniband/*/ports/*/counters; do
				echo $((i * 4096)) >"$p/port_xmit_data"
			done
		done
	done
) &
pids+=("$!")
sleep 10 # warm-up: sessions open, first facts sent, baselines taken

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
declare -A C0 R0
for name in off default fast; do C0[$name]=$(cpu_ticks "${PID[$name]}"); R0[$name]=$(rss_kib "${PID[$name]}"); done
t0=$(date +%s%N)
sleep "$secs"
t1=$(date +%s%N)
hz=$(getconf CLK_TCK)
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print (b - a) / 1e9}')
echo "agent health watchers, ${wall%.*} s window, fixture $fixture${NVML:+, NVML double (8 GPUs)}"
printf '%-28s %12s %14s %14s\n' "agent" "CPU % core" "RSS KiB" "RSS growth KiB"
for name in off default fast; do
	c1=$(cpu_ticks "${PID[$name]}")
	r1=$(rss_kib "${PID[$name]}")
	cpu=$(awk -v a="${C0[$name]}" -v b="$c1" -v hz="$hz" -v w="$wall" 'BEGIN {printf "%.3f", (b - a) / hz / w * 100}')
	label=$name
	[ "$name" = off ] && label="off (anchor)"
	[ "$name" = default ] && label="on, every 10 s (default)"
	[ "$name" = fast ] && label="on, every 1 s"
	printf '%-28s %12s %14s %14s\n' "$label" "$cpu" "$r1" "$((r1 - R0[$name]))"
done
events=$("$RY" nodes --json --state-dir "$W/ctl" | jq '[.items[].health.state] | join(",")')
echo "node health after the window: $events (the lines written are of no interest: healthy)"
