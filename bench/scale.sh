#!/usr/bin/env bash
# Benchmark, not a test: one controller against N simulated agents (railyard-loadgen: real
# enrollment, one mTLS connection and session each, plans simulated). For each N given it
# prints, on this machine (the load generator shares its CPUs with the controller):
#  enroll    the enrollment of N agents through the token flow (excluded from the rest);
#  online    a cold connect storm: the controller restarted, all N connecting at
#            --connect-rate, until every agent has its Welcome;
#  idle      the controller's CPU (% of one core, utime+stime) over --idle-secs at the default
#            heartbeat (--heartbeat, stretched by the controller with the fleet to stay under
#            --max-heartbeat-rate a second; "hb s": the interval its Welcome told), and its
#            RSS: total / N and (total - RSS before any agent) / N;
#  GET       GET /api/v1/nodes?limit=1000 over one keep-alive connection for 10 s: p50/p99;
#  deploy    a check-mode deployment to all N (one batch, no canary, no pause): from the
#            deploy command to the last plan received, and to the last ApplyDone acknowledged
#            (committed) as the agents see it;
#  reconnect kill -9 of the controller, started again on the same port at once: until all N
#            are online again, and how many are not after --reconnect-wait;
# with the controller's CPU seconds in the storm and in the reconnect (less sensitive than wall
# times to other load on the machine); then a table of every N with each figure's growth
# against the first N.
# Descriptors: each agent is one on each side; the script raises ulimit -n (root may raise the
# hard limit) and says what it got.
# Usage: bench/scale.sh [--build DIR] [--controller BIN] [--work DIR] [--connect-rate 2000]
#        [--idle-secs 30] [--heartbeat 5s] [--max-heartbeat-rate R] [--steps-delay 10ms]
#        [--reconnect-wait 120] [--perf DIR]
#        [--json FILE] N [N...]
# (--perf DIR: `perf record` of the controller in the storm, the deployment and the reconnect,
# into DIR/N-storm.data, N-deploy.data, N-reconnect.data; `perf report -i FILE --sort
# comm,dso,sym` reads them. Recording costs the controller a little CPU.)
# (--controller: another railyard-controller binary, e.g. an older build, against the same
# load generator.)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$SRC/build ctl_bin= work= rate=2000 idle_secs=30 hb=5s hb_rate= step_delay=10ms
reconnect_wait=120 json_out= perf_dir=
ns=()
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--controller) ctl_bin=$2; shift 2 ;;
	--work) work=$2; shift 2 ;;
	--connect-rate) rate=$2; shift 2 ;;
	--idle-secs) idle_secs=$2; shift 2 ;;
	--heartbeat) hb=$2; shift 2 ;;
	--max-heartbeat-rate) hb_rate=$2; shift 2 ;;
	--steps-delay) step_delay=$2; shift 2 ;;
	--reconnect-wait) reconnect_wait=$2; shift 2 ;;
	--json) json_out=$2; shift 2 ;;
	--perf) perf_dir=$(mkdir -p "$2" && cd "$2" && pwd); shift 2 ;;
	-*) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
	*) ns+=("$1"); shift ;;
	esac
done
[ ${#ns[@]} -gt 0 ] || { echo "usage: $0 [options] N [N...]" >&2; exit 2; }
for c in jq curl; do command -v $c >/dev/null || { echo "$0: needs $c" >&2; exit 1; }; done
# A build tree is brought up to date; a directory of copied binaries (same layout) is used as
# it is (so that a long run is not changed under it by a rebuild).
if [ -f "$BUILD/CMakeCache.txt" ] || [ ! -e "$BUILD" ]; then
	[ -f "$BUILD/CMakeCache.txt" ] || cmake -S "$SRC" -B "$BUILD" >/dev/null
	cmake --build "$BUILD" --target railyard-controller railyard railyard-loadgen railyard-rest-load \
		-j"$(nproc)" >/dev/null
fi
CTL=${ctl_bin:-$BUILD/controller/railyard-controller}
# Operations go through railyard over the state directory's api.sock (any controller serves it).
RY=$BUILD/client/railyard
LOADGEN=$BUILD/tests/scale/railyard-loadgen
LOAD=$BUILD/bench/railyard-rest-load
SYSROOT=$SRC/tests/fixtures/sysroots/h200-ib
max_n=0
for n in "${ns[@]}"; do [ "$n" -gt "$max_n" ] && max_n=$n; done
want=$((max_n * 2 + 4096))
ulimit -Hn "$want" 2>/dev/null || true
ulimit -n "$want" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -ge $((max_n + 512)) ] ||
	echo "$0: warning: ulimit -n is $(ulimit -n), short of $max_n agents" >&2
if [ -z "$work" ]; then
	W=$(mktemp -d /tmp/railyard-scale.XXXXXX)
	own=1
else
	W=$work own=0
	mkdir -p "$W"
fi
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ "$own" = 0 ] || rm -rf "$W"
}
trap cleanup EXIT

now_ms() { echo $(($(date +%s%N) / 1000000)); }
wait_for() { # SECONDS command...: 0 when it held in time
	local end=$(($(date +%s) + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt $end ] || return 1
		sleep 0.2
	done
}
HZ=$(getconf CLK_TCK)
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
# The first loadgen event of a kind whose unix_ms is after $2: its unix_ms.
event_after() { # KIND AFTER_MS
	jq -r --arg k "$1" --argjson t "$2" \
		'select(.event == $k and .unix_ms > $t) | .unix_ms' "$LG_OUT" 2>/dev/null | head -1
}
has_event_after() { [ -n "$(event_after "$1" "$2")" ]; }
# perf record of the controller until perf_stop (with --perf only).
PERFPID=
perf_start() { # PHASE
	[ -n "$perf_dir" ] || return 0
	perf record -q -F 499 -p "$CPID" -o "$perf_dir/$N-$1.data" >/dev/null 2>&1 &
	PERFPID=$!
	pids+=("$PERFPID")
}
perf_stop() {
	[ -n "$PERFPID" ] || return 0
	kill -INT "$PERFPID" 2>/dev/null || true
	wait "$PERFPID" 2>/dev/null || true
	PERFPID=
}
last_status() { grep '"t_ms"' "$LG_OUT" | tail -1; }

start_ctl() { # extra serve args
	rm -f "$D/ctl/controller.addr"
	"$CTL" serve --state-dir "$D/ctl" --listen "127.0.0.1:${PORT:-0}" --http 127.0.0.1:0 \
		--heartbeat-interval "$hb" ${hb_rate:+--max-heartbeat-rate "$hb_rate"} \
		--expected-agents "$N" "$@" >>"$D/controller.log" 2>&1 &
	CPID=$!
	pids+=("$CPID")
	wait_for 60 test -s "$D/ctl/controller.addr" || { echo "$0: controller did not start" >&2; exit 1; }
	ADDR=$(cat "$D/ctl/controller.addr")
	PORT=${ADDR##*:}
	wait_for 30 test -S "$D/ctl/api.sock"
}

rows=()
run_one() {
	N=$1 D=$W/n$1 PORT=
	rm -rf "$D"
	mkdir -p "$D"
	"$CTL" init --state-dir "$D/ctl" >/dev/null
	start_ctl
	"$RY" enrollment-token create --state-dir "$D/ctl" --cluster scale --uses "$N" --ttl 24h >"$D/token"
	local token fp
	token=$(awk '/^token:/ {print $2}' "$D/token")
	fp=$(awk '/^ca-fingerprint:/ {print $2}' "$D/token")
	LG_OUT=$D/loadgen.out
	local lg=("$LOADGEN" --controller "$ADDR" --token "$token" --ca-fingerprint "$fp"
		--agents "$N" --state-dir "$D/agents" --sysroot "$SYSROOT" --json
		--step-delay "$step_delay" --connect-rate "$rate")

	# enrollment (not part of the storm)
	local t0 t1
	t0=$(now_ms)
	"${lg[@]}" --enroll-only >"$D/enroll.out" 2>"$D/enroll.err" ||
		{ echo "$0: enrollment failed:" >&2; tail -5 "$D/enroll.err" >&2; exit 1; }
	t1=$(now_ms)
	local enroll_s
	enroll_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1000 }')

	# cold connect storm: a fresh controller process
	kill -TERM "$CPID"
	wait "$CPID" 2>/dev/null || true
	start_ctl
	sleep 2
	local rss0
	rss0=$(rss_kb "$CPID")
	local sk0 sk1
	sk0=$(ticks "$CPID")
	perf_start storm
	"${lg[@]}" >"$LG_OUT" 2>"$D/loadgen.err" &
	LGPID=$!
	pids+=("$LGPID")
	wait_for 60 has_event_after connecting 0 || { echo "$0: loadgen did not start" >&2; exit 1; }
	local tc ta online_s
	tc=$(event_after connecting 0)
	if wait_for 600 has_event_after all_online "$tc"; then
		ta=$(event_after all_online "$tc")
		online_s=$(awk -v a="$tc" -v b="$ta" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
	else
		online_s="timeout($(last_status | jq .online)/$N)"
	fi
	local la_storm storm_cpu
	perf_stop
	sk1=$(ticks "$CPID")
	storm_cpu=$(awk -v d=$((sk1 - sk0)) -v hz="$HZ" 'BEGIN { printf "%.1f", d / hz }')
	la_storm=$(loadavg)

	# idle
	local url ca admin hb_s
	url=$(cat "$D/ctl/api.addr") ca=$D/ctl/ca.crt
	admin=$("$RY" token create --name bench --role admin --state-dir "$D/ctl" 2>/dev/null |
		awk '/^token:/ { print $2 }')
	hb_s=$(curl -s --cacert "$ca" -H "Authorization: Bearer $admin" "$url/metrics" |
		awk '$1 == "railyard_heartbeat_interval_seconds" { print $2 + 0 }')
	sleep 10
	local k0 k1 n0 n1 lk0 lk1 rss cpu lgcpu rss_per rss_delta la_idle
	k0=$(ticks "$CPID") lk0=$(ticks "$LGPID") n0=$(now_ms)
	sleep "$idle_secs"
	k1=$(ticks "$CPID") lk1=$(ticks "$LGPID") n1=$(now_ms)
	rss=$(rss_kb "$CPID")
	la_idle=$(loadavg)
	cpu=$(awk -v d=$((k1 - k0)) -v hz="$HZ" -v ms=$((n1 - n0)) 'BEGIN { printf "%.1f", 100 * d / hz / (ms / 1000) }')
	lgcpu=$(awk -v d=$((lk1 - lk0)) -v hz="$HZ" -v ms=$((n1 - n0)) 'BEGIN { printf "%.1f", 100 * d / hz / (ms / 1000) }')
	rss_per=$(awk -v r="$rss" -v n="$N" 'BEGIN { printf "%.0f", r / n }')
	rss_delta=$(awk -v r="$rss" -v r0="$rss0" -v n="$N" 'BEGIN { printf "%.0f", (r - r0) / n }')

	# GET /api/v1/nodes
	local out p50 p99 bytes
	out=$("$LOAD" get --url "$url" --path "/api/v1/nodes?limit=1000" --conns 1 --seconds 10 \
		--ca "$ca" --token "$admin" 2>&1) || true
	p50=$(awk -F= '$1 == "p50_ms" { print $2 }' <<<"$out")
	p99=$(awk -F= '$1 == "p99_ms" { print $2 }' <<<"$out")
	bytes=$(awk -F= '$1 == "bytes_per_reply" { print $2 }' <<<"$out")

	# a check-mode deployment to all N
	local td dep plan_s done_s dep_state la_dep
	perf_start deploy
	td=$(now_ms)
	"$RY" deploy --state-dir "$D/ctl" --cluster scale --playbook "$SRC/playbooks/h200-ndr-ib.yaml" \
		--check --batch 100% --canary 0 --pause 0s --max-fail 100% --no-wait >"$D/deploy.out" 2>&1 ||
		{ echo "$0: deploy failed:" >&2; cat "$D/deploy.out" >&2; exit 1; }
	dep=$(grep -o 'd-[0-9a-f]*' "$D/deploy.out" | head -1)
	if wait_for 600 bash -c "jq -e --arg d '$dep' 'select(.event == \"deployment\" and .id == \$d)' '$LG_OUT'"; then
		local ev
		ev=$(jq -c --arg d "$dep" 'select(.event == "deployment" and .id == $d)' "$LG_OUT" | head -1)
		plan_s=$(jq -r --argjson t "$td" '(.last_plan_unix_ms - $t) / 1000 | . * 10 | round / 10' <<<"$ev")
		done_s=$(jq -r --argjson t "$td" '(.last_ack_unix_ms - $t) / 1000 | . * 10 | round / 10' <<<"$ev")
	else
		plan_s=timeout done_s=timeout
	fi
	perf_stop
	wait_for 60 bash -c "'$RY' deployments '$dep' --json --state-dir '$D/ctl' | jq -e '.state != \"running\" and .state != \"pending\"'" || true
	dep_state=$("$RY" deployments "$dep" --json --state-dir "$D/ctl" | jq -r .state)
	la_dep=$(loadavg)

	# reconnect storm after kill -9
	local tk tr back_s behind la_re
	sleep 3
	tk=$(now_ms)
	kill -9 "$CPID"
	wait "$CPID" 2>/dev/null || true
	start_ctl
	local rk0 rk1 re_cpu
	rk0=$(ticks "$CPID")
	perf_start reconnect
	if wait_for "$reconnect_wait" has_event_after all_online "$tk"; then
		tr=$(event_after all_online "$tk")
		back_s=$(awk -v a="$tk" -v b="$tr" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
		behind=0
	else
		back_s="timeout"
		behind=$((N - $(last_status | jq .online)))
	fi
	la_re=$(loadavg)
	perf_stop
	rk1=$(ticks "$CPID")
	re_cpu=$(awk -v d=$((rk1 - rk0)) -v hz="$HZ" 'BEGIN { printf "%.1f", d / hz }')
	kill -TERM "$LGPID" "$CPID" 2>/dev/null || true
	wait "$LGPID" "$CPID" 2>/dev/null || true

	local row
	row=$(printf '%6d %8s %8s %6s %5s %9s %9s %6s %6s %8s %8s %9s %10s %6s  %s' "$N" \
		"$enroll_s" "$online_s" "$cpu" "${hb_s:-?}" "$rss_per" "$rss_delta" "$lgcpu" "${p50:-?}" "${p99:-?}" "$plan_s" \
		"$done_s" "$back_s" "$behind" "$dep_state")
	rows+=("$row")
	echo "$HEADER"
	echo "$row"
	echo "  load average: storm $la_storm; idle $la_idle; deploy $la_dep; reconnect $la_re;" \
		"GET /nodes reply $bytes B; ulimit -n $(ulimit -n); $(nproc) CPUs"
	echo "  controller CPU: storm $storm_cpu s ($(awk -v c="$storm_cpu" -v n="$N" \
		'BEGIN { printf "%.1f", 1000 * c / n }') ms/agent), reconnect $re_cpu s"
	if [ -n "$json_out" ]; then
		jq -nc --argjson n "$N" --arg enroll "$enroll_s" --arg online "$online_s" --arg cpu "$cpu" \
			--arg rss_per "$rss_per" --arg rss_delta "$rss_delta" --arg lgcpu "$lgcpu" \
			--arg hb_s "${hb_s:-}" --arg p50 "${p50:-}" --arg p99 "${p99:-}" --arg plan "$plan_s" --arg done "$done_s" \
			--arg back "$back_s" --argjson behind "$behind" --arg state "$dep_state" \
			--arg la "storm $la_storm; idle $la_idle; deploy $la_dep; reconnect $la_re" \
			--arg storm_cpu "$storm_cpu" --arg re_cpu "$re_cpu" \
			'{n: $n, enroll_s: $enroll, online_s: $online, idle_cpu_pct: $cpu,
			  heartbeat_s: $hb_s,
			  rss_kb_per_agent: $rss_per, rss_kb_per_agent_delta: $rss_delta,
			  loadgen_idle_cpu_pct: $lgcpu, get_nodes_p50_ms: $p50, get_nodes_p99_ms: $p99,
			  deploy_plans_s: $plan, deploy_done_s: $done, reconnect_s: $back,
			  left_behind: $behind, deployment: $state, loadavg: $la,
			  storm_cpu_s: $storm_cpu, reconnect_cpu_s: $re_cpu}' >>"$json_out"
	fi
}

HEADER=$(printf '%6s %8s %8s %6s %5s %9s %9s %6s %6s %8s %8s %9s %10s %6s  %s' N "enroll s" \
	"online s" "cpu %" "hb s" "kB/agent" "kB/ag-0" "lg %" "GETp50" "GETp99" "plans s" "deploy s" \
	"reconn s" behind deployment)
for n in "${ns[@]}"; do
	run_one "$n"
done
echo
echo "==== railyard-controller with N simulated agents; $(nproc) CPUs shared with the load generator ===="
echo "(online: cold connect storm at --connect-rate $rate/s; cpu: idle, % of one core, at the heartbeat"
echo " the controller told (hb s: $hb, stretched with the fleet under --max-heartbeat-rate${hb_rate:+ $hb_rate});"
echo " kB/agent: RSS / N, kB/ag-0: (RSS - RSS before agents) / N; lg %: the load generator's idle CPU;"
echo " GET: /api/v1/nodes?limit=1000 in ms; plans/deploy: s from deploy to the last plan / last end stored;"
echo " reconn: s from kill -9 to all online again; behind: not online after ${reconnect_wait} s)"
echo "$HEADER"
printf '%s\n' "${rows[@]}"
if [ ${#rows[@]} -gt 1 ]; then
	echo "growth against N=${ns[0]} (value / first value; N grows by N/${ns[0]}):"
	base=${rows[0]}
	for r in "${rows[@]:1}"; do
		awk -v b="$base" -v r="$r" 'BEGIN {
			split(b, x); split(r, y)
			printf "  N x%-5.1f online x%s  cpu x%s  kB/agent x%s  GETp50 x%s  plans x%s  deploy x%s  reconnect x%s\n",
				y[1] / x[1], g(y[3], x[3]), g(y[4], x[4]), g(y[6], x[6]), g(y[9], x[9]),
				g(y[11], x[11]), g(y[12], x[12]), g(y[13], x[13]) }
			function g(a, b) { return (a + 0 > 0 && b + 0 > 0) ? sprintf("%.1f", a / b) : "?" }'
	done
fi
