#!/usr/bin/env bash
# Benchmark, not a test: what one plan step costs end to end. Starts a controller and AGENTS
# agents on 127.0.0.1, deploys a check-mode plan of STEPS file steps to all of them twice: once
# timed (the rollout's wall time as `deploy` sees it, which polls every 200 ms, and steps per
# second), once with strace -c attached to the controller and one agent for their fsync and
# fdatasync calls per step; and says whether every result was stored. With --compare DIR it does the same with the binaries of
# another build (e.g. an older commit) in the same run, side by side.
# Usage: bench/plan-steps.sh [--build DIR] [--steps 200] [--agents 2] [--timeout 600s] [--compare DIR]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$SRC/build steps=200 agents=2 compare= timeout=600s
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--steps) steps=$2; shift 2 ;;
	--agents) agents=$2; shift 2 ;;
	--compare) compare=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	*) echo "usage: $0 [--build DIR] [--steps 200] [--agents 2] [--timeout 600s] [--compare DIR]" >&2; exit 2 ;;
	esac
done
FIX=$SRC/tests/fixtures/sysroots
command -v strace >/dev/null || { echo "$0: needs strace (apt-get install strace)" >&2; exit 1; }
command -v jq >/dev/null || { echo "$0: needs jq" >&2; exit 1; }
W=$(mktemp -d /tmp/railyard-steps.XXXXXX)
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

for p in timed traced; do
	{
		printf 'name: %s\nversion: "1"\nsteps:\n' "$p"
		for ((i = 0; i < steps; i++)); do
			printf '  - name: s%d\n    type: file\n    params:\n      path: /etc/ry-bench/f%d\n      content: "step %d\\n"\n' "$i" "$i" "$i"
		done
	} >"$W/$p.yaml"
done

# fsync and fdatasync calls in an strace -c summary
syncs() { awk '$NF == "fsync" || $NF == "fdatasync" {s += $4} END {print s + 0}' "$1"; }

# measure LABEL BUILD-DIR: one line of figures
measure() {
	local label=$1 b=$2 d=$W/$1
	local ctl=$b/controller/railyard-controller agent=$b/nodeagent/railyard-agent
	local ry=$b/client/railyard
	mkdir -p "$d"
	"$ctl" init --state-dir "$d/ctl" >/dev/null
	"$ctl" serve --state-dir "$d/ctl" --listen 127.0.0.1:0 --http 127.0.0.1:0 >"$d/controller.log" 2>&1 &
	local cpid=$!
	pids+=("$cpid")
	wait_for 20 test -s "$d/ctl/controller.addr"
	wait_for 20 test -S "$d/ctl/api.sock"
	local addr token fp apid=
	addr=$(cat "$d/ctl/controller.addr")
	"$ry" enrollment-token create --state-dir "$d/ctl" --cluster b --uses "$agents" >"$d/token"
	token=$(awk '/^token:/ {print $2}' "$d/token")
	fp=$(awk '/^ca-fingerprint:/ {print $2}' "$d/token")
	for ((i = 0; i < agents; i++)); do
		mkdir -p "$d/root$i"
		cp -a "$FIX/h200-ib/." "$d/root$i/"
		"$agent" enroll --controller "$addr" --token "$token" --ca-fingerprint "$fp" \
			--state-dir "$d/a$i" --sysroot "$d/root$i" --hostname "bench-$i" >/dev/null
		"$agent" run --state-dir "$d/a$i" --sysroot "$d/root$i" >"$d/a$i.log" 2>&1 &
		pids+=("$!")
		[ -n "$apid" ] || apid=$!
	done
	wait_for 30 bash -c "[ \$('$ctl' nodes --json --state-dir '$d/ctl' | grep -c '\"online\"') = $agents ]"
	local t0 t1 id stored state
	t0=$(date +%s%N)
	"$ry" deploy --state-dir "$d/ctl" --cluster b --playbook "$W/timed.yaml" --check \
		--timeout "$timeout" >"$d/deploy.out" 2>&1 || true
	t1=$(date +%s%N)
	strace -f -qq -c -e trace=fsync,fdatasync -p "$cpid" -o "$d/strace.ctl" &
	local s1=$!
	strace -f -qq -c -e trace=fsync,fdatasync -p "$apid" -o "$d/strace.agent" &
	local s2=$!
	sleep 1 # strace attached
	"$ry" deploy --state-dir "$d/ctl" --cluster b --playbook "$W/traced.yaml" --check \
		--timeout "$timeout" >"$d/deploy2.out" 2>&1 || true
	kill -INT "$s1" "$s2" 2>/dev/null || true
	wait "$s1" "$s2" 2>/dev/null || true
	id=$(awk '/^deployment d-/ {sub(":", "", $2); print $2; exit}' "$d/deploy.out")
	state=$("$ry" deployments "$id" --json --state-dir "$d/ctl" | jq -r .state)
	stored=$("$ry" deployments "$id" --json --state-dir "$d/ctl" | jq '[.nodes[].steps[]] | length')
	awk -v l="$label" -v ns=$((t1 - t0)) -v n=$((steps * agents)) -v st="$stored" -v s="$state" \
		-v c="$(syncs "$d/strace.ctl")" -v a="$(syncs "$d/strace.agent")" -v per="$steps" \
		'BEGIN { printf "%-12s %8.2f %10.0f %12.2f %12.2f %9s %s\n", l, ns / 1e9, n / (ns / 1e9),
			 c / n, a / per, st "/" n, s }'
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	pids=()
}

echo "check-mode plan of $steps file steps on $agents agents (syncs counted in a second, traced run)"
printf '%-12s %8s %10s %12s %12s %9s %s\n' build "wall s" "steps/s" "ctl sync/st" "agt sync/st" stored state
measure this "$BUILD"
[ -z "$compare" ] || measure compare "$compare"
