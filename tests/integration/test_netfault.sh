#!/usr/bin/env bash
# Integration: network faults between the agents and the controller, through a TCP proxy per
# agent (tests/integration/faultproxy.c; this kernel may lack sch_netem, and a proxy can also
# reset one connection or freeze it while new ones pass). During an 80-step rollout on three
# nodes: node a's connections are reset at random chunks the whole time; node b's are delayed,
# reset, refused, then blackholed for longer than the heartbeat timeout and healed; node c's
# session is severed (half-open: silence, no FIN, no RST) while new connections pass. Every
# session recovers, no plan or step runs twice (runs files and the agents' journals), and every
# result arrives exactly once.
. "$(dirname "$0")/lib.sh"

PREP=$SRC/tests/fixtures/prepare-sysroot.sh
PROXY=$BUILD/tests/integration/faultproxy
HB=(--heartbeat-interval 300ms --heartbeat-timeout 1500ms)
STEPS=80
SEED=${RAILYARD_TEST_SEED:-$$}
echo "seed $SEED"

declare -A PCTL PADDR
NPROXY=0
# start_proxy NAME: a proxy in front of the controller for agent NAME
start_proxy() {
	"$PROXY" --upstream "$ADDR" --addr-file "$T/proxy-$1.addr" --control-file "$T/proxy-$1.ctl" \
		--seed "$((SEED + NPROXY++))" >>"$T/proxy-$1.log" 2>&1 &
	PIDS+=("$!")
	wait_for 10 test -s "$T/proxy-$1.ctl" -a -s "$T/proxy-$1.addr" || die "proxy $1 did not start"
	PCTL[$1]=$(cut -d: -f2 "$T/proxy-$1.ctl")
	PADDR[$1]=$(cat "$T/proxy-$1.addr")
}
# pctl NAME COMMAND: tell proxy NAME what to do; its answer ("ok ...") on stdout
pctl() {
	local fd reply
	exec {fd}<>"/dev/tcp/127.0.0.1/${PCTL[$1]}" || return 1
	printf '%s\n' "$2" >&"$fd"
	read -r -t 10 reply <&"$fd"
	exec {fd}>&-
	echo "$reply"
	[[ $reply == ok* ]]
}
stat_of() { pctl "$1" stats | tr ' ' '\n' | sed -n "s/^$2=//p"; }
dep_field() { "$RY" deployments "$1" --json --state-dir "$T/ctl" | jq -r "$2"; }
last_id() { awk '/^deployment d-/ {sub(":", "", $2); print $2; exit}' "$1"; }
finished() { [[ "$(dep_field "$1" .state)" =~ ^(succeeded|partial|failed)$ ]]; }
sessions() { grep -c "connected to .* as node" "$T/$1.log"; }
more_sessions() { [ "$(sessions "$1")" -gt "$2" ]; }
runs_of() { cat "$T/root-$1/var/tmp/runs-net" 2>/dev/null; }
started() { [ -s "$T/root-$1/var/tmp/runs-net" ]; }

"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
start_controller "${HB[@]}"
new_token 3
for spec in a:h200-ib b:h200-ib-2 c:h200-roce; do
	IFS=: read -r name fix <<<"$spec"
	"$PREP" "$FIXTURES/$fix" "$T/root-$name" >/dev/null || die "prepare $name"
	mkdir -p "$T/root-$name/var/tmp"
	enroll "$name" "$T/root-$name" --hostname "node-$name" || die "enroll $name"
	start_proxy "$name"
	# The proxy's kernel acknowledges what a severed session sends, so only the agent's PING
	# tells: after 10 s of silence here (120 s by default), then 30 s for the answer.
	start_agent "$name" "$T/root-$name" --controller "${PADDR[$name]}" --keepalive 10s
done
check "3 agents online through their proxies" wait_for 30 count_is online 3
one_each() { for n in a b c; do [[ "$(pctl $n stats)" == *" live=1 "* ]] || return 1; done; }
check "  ... each session through its proxy" one_each

{
	printf 'name: net\nversion: "1"\nsteps:\n'
	for ((i = 0; i < STEPS; i++)); do
		printf '  - name: s%d\n    type: command\n    params:\n      argv: [/bin/sh, -c, "echo %d >>\\"$RAILYARD_SYSROOT/var/tmp/runs-net\\"; sleep 0.1"]\n' "$i" "$i"
	done
} >"$T/net.yaml"
"$RY" deploy --state-dir "$T/ctl" --cluster it --playbook "$T/net.yaml" --canary 0 --pause 0s \
	--max-fail 0 --no-wait >"$T/net.out" 2>&1 || fail "deploy"
D=$(last_id "$T/net.out")
check "the plan started on every node" wait_for 30 bash -c "[ -s '$T/root-a/var/tmp/runs-net' ] && [ -s '$T/root-b/var/tmp/runs-net' ] && [ -s '$T/root-c/var/tmp/runs-net' ]"
sa=$(sessions a) sb=$(sessions b) sc=$(sessions c)

# c: the session goes silent, as behind a partition that drops everything (or a peer that
# lost power): no FIN, no RST. Only the agent's own keepalive (its PING) can tell.
pctl c sever >/dev/null
severed_at=$(date +%s)
check "c: the controller drops the silent session (heartbeat timeout)" wait_for 15 node_state_is node-c offline
# a: a connection reset at random, about one chunk in 25, for the rest of the plan.
pctl a "flaky 25" >/dev/null
# b: a slow path, a reset, a refusing listener, then a blackhole that outlasts the heartbeat
# timeout and heals.
pctl b "delay 250" >/dev/null
sleep 1.5 # a while on the slow path: steps go on and are acknowledged late
pctl b reset >/dev/null
check "b: reconnects after a reset" wait_for 30 more_sessions b "$sb"
sb=$(sessions b)
pctl b refuse >/dev/null
sleep 2 # refused connection attempts meanwhile
pctl b pass >/dev/null
check "b: reconnects once the listener takes connections again" wait_for 30 more_sessions b "$sb"
sb=$(sessions b)
pctl b freeze >/dev/null
check "b: the controller drops the blackholed session" wait_for 15 node_state_is node-b offline
sleep 1 # the blackhole lasts a little longer than that
pctl b pass >/dev/null
check "b: back after the blackhole heals" wait_for 30 more_sessions b "$sb"
check "a: its sessions were reset and reopened meanwhile ($(stat_of a resets) resets)" more_sessions a "$sa"
pctl a pass >/dev/null
check "c: the agent notices the dead session itself and reconnects" wait_for 90 more_sessions c "$sc"
echo "c reconnected $(($(date +%s) - severed_at)) s after its session went silent"

check "the deployment finishes" wait_for 120 finished "$D"
check "  ... succeeded, with all $((3 * STEPS)) step results" \
	test "$(dep_field "$D" '.state + " " + ([.nodes[].steps[]] | length | tostring)')" = "succeeded $((3 * STEPS))"
for n in a b c; do
	check "$n: every step ran exactly once" test "$(runs_of $n | sort -n | uniq | wc -l) $(runs_of $n | wc -l)" = "$STEPS $STEPS"
	check "$n: the plan was accepted once, however often it was re-sent" test "$(grep -c "plan $D: running" "$T/$n.log")" = 1
	j=$T/$n/jobs/$D.log
	check "$n: its journal holds the plan once, $STEPS distinct starts and outcomes, one end" test \
		"$(jq -rs '[([.[] | select(.plan)] | length), ([.[] | select(.run != null) | .run] | unique | length),
		([.[] | select(.run != null)] | length), ([.[] | select(.step != null) | .step] | unique | length),
		([.[] | select(.step != null)] | length), ([.[] | select(.done)] | length)] | map(tostring) | join(" ")' "$j" 2>/dev/null)" \
		= "1 $STEPS $STEPS $STEPS $STEPS 1"
	check "$n: nothing was refused" bash -c "! grep -q 'refused' '$T/$n.log'"
	check "$n: its outbox drains (everything acknowledged)" wait_for 20 bash -c "[ ! -s '$T/$n/outbox.log' ]"
done
echo "sessions: a $(sessions a), b $(sessions b), c $(sessions c); resets: a $(stat_of a resets), b $(stat_of b resets)"
check "all three online at the end" wait_for 30 count_is online 3

for n in a b c; do kill -TERM "${AGENT_PID[$n]}"; done
for n in a b c; do wait "${AGENT_PID[$n]}"; done
kill -TERM "$CTL_PID"
wait "$CTL_PID"
check "the controller stops cleanly on SIGTERM" test $? -eq 0
check_sanitizers
finish
