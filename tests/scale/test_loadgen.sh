#!/usr/bin/env bash
# railyard-loadgen in small: 50 simulated agents enroll through the token flow, come online,
# take a check-mode deployment (every result stored; 50 plans are rendered and sent by the
# rollout's helper threads, one per CPU), come back after a kill -9 of the
# controller, and are cached (a second run enrolls nobody). Then the descriptor guard: with
# `ulimit -n 128` a controller refuses the agents beyond its room with RESOURCE_EXHAUSTED and a
# retry hint instead of letting gRPC's accept() fail.
. "$(dirname "$0")/../integration/lib.sh"
LOADGEN=$BUILD/tests/scale/railyard-loadgen
N=50

"$CTL" init --state-dir "$T/ctl" >/dev/null || die "init"
start_controller
new_token $N
lg() { # lg NAME AGENTS [options]: run the load generator in the background (LG_PID)
	"$LOADGEN" --controller "$ADDR" --token "$TOKEN" --ca-fingerprint "$FP" --agents "$2" \
		--state-dir "$T/agents" --sysroot "$FIXTURES/h200-ib" --json --reconnect-max 1s \
		"${@:3}" >"$T/$1.out" 2>"$T/$1.log" &
	LG_PID=$!
	PIDS+=("$LG_PID")
}
event_after() { # KIND MS: the first event of that kind after MS (unix ms)
	jq -r --arg k "$1" --argjson t "$2" 'select(.event == $k and .unix_ms > $t) | .unix_ms' \
		"$T/$3.out" 2>/dev/null | head -1
}
has_event() { [ -n "$(event_after "$1" "$2" "$3")" ]; }
# jqf [jq options] EXPR FILE: does any JSON line of FILE satisfy EXPR? (jq 1.6's -e exits 0 on
# empty input and looks only at the last output)
jqf() { [ -s "${@: -1}" ] && jq -e -s "${@:1:$#-2}" "any(.[]; ${@: -2:1})" "${@: -1}" >/dev/null; }

lg run1 $N
check "$N agents enroll" wait_for 60 has_event enrolled 0 run1
check "all $N online" wait_for 60 has_event all_online 0 run1
check "the controller lists $N online nodes" count_is online $N
check "each node has its own certificate" \
	test "$("$RY" nodes --json --state-dir "$T/ctl" | jq '[.items[].cert_fingerprint] | unique | length')" = $N

playbook=$T/check.yaml
printf 'name: lg\nversion: "1"\nsteps:\n' >"$playbook"
for i in 0 1 2; do
	printf '  - name: s%d\n    type: file\n    params:\n      path: /etc/lg/f%d\n      content: "x\\n"\n' $i $i >>"$playbook"
done
"$RY" deploy --state-dir "$T/ctl" --cluster it --playbook "$playbook" --check --batch 100% \
	--canary 0 --pause 0s --no-wait >"$T/deploy.out" 2>&1 || die "deploy"
DEP=$(grep -o 'd-[0-9a-f]*' "$T/deploy.out" | head -1)
dep_succeeded() { "$RY" deployments "$DEP" --json --state-dir "$T/ctl" | jqt '.state == "succeeded"'; }
check "the check-mode deployment succeeds on all" wait_for 60 dep_succeeded
check "every step result is stored once" \
	test "$("$RY" deployments "$DEP" --json --state-dir "$T/ctl" | jq '[.nodes[].steps[]] | length')" = $((N * 3))
check "the load generator saw every end acknowledged" \
	wait_for 10 jqf --arg d "$DEP" 'select(.event == "deployment" and .id == $d and .nodes == 50)' "$T/run1.out"

t=$(($(date +%s%N) / 1000000))
kill -9 "$CTL_PID"
wait "$CTL_PID" 2>/dev/null
start_controller
check "all back after kill -9 of the controller" wait_for 60 has_event all_online "$t" run1
kill -TERM "$LG_PID"
check "the load generator stops on SIGTERM" wait_for 30 exited "$LG_PID"

lg run2 $N
check "a second run reuses the keys (nobody enrolls again)" \
	wait_for 30 jqf 'select(.event == "enrolled" and .enrolled == 50 and .ms < 5000)' "$T/run2.out"
check "and comes online" wait_for 60 has_event all_online 0 run2
kill -TERM "$LG_PID"
wait "$LG_PID" 2>/dev/null

# The descriptor guard: 100 agents on a controller that has room for about 30.
kill -TERM "$CTL_PID"
wait "$CTL_PID" 2>/dev/null
"$CTL" init --state-dir "$T/ctl2" >/dev/null || die "init 2"
(
	ulimit -n 128 || exit 1
	exec "$CTL" serve --state-dir "$T/ctl2" --listen 127.0.0.1:0 --http 127.0.0.1:0 \
		>>"$T/controller2.log" 2>&1
) &
CTL_PID=$!
PIDS+=("$CTL_PID")
wait_for 20 test -s "$T/ctl2/controller.addr" || die "controller 2 did not start"
ADDR=$(cat "$T/ctl2/controller.addr")
"$RY" enrollment-token create --state-dir "$T/ctl2" --cluster it --uses 100 >"$T/token2.out" || die "token 2"
TOKEN=$(awk '/^token:/ {print $2}' "$T/token2.out")
FP=$(awk '/^ca-fingerprint:/ {print $2}' "$T/token2.out")
rm -rf "$T/agents"
# Slowly enough that a refused agent has let go of its connection before many more come: a
# burst beyond the margin reaches the limit in accept() before any session can be refused (the
# listener is then replaced, test_fd_limit.sh).
lg run3 100 --enroll-parallel 2 --connect-rate 10
status() { grep '"t_ms"' "$T/run3.out" | tail -1 >"$T/run3.last"; }
refused_full() { status && jqf '.refused_full > 0 and .sessions >= 100' "$T/run3.last"; }
check "agents beyond the room are refused at the descriptor limit" wait_for 120 refused_full
status
online=$(jq .online "$T/run3.last")
check "some are online ($online), not all" test "${online:-0}" -gt 0 -a "${online:-0}" -lt 100
check "gRPC's accept() never failed" refused log_has "$T/controller2.log" "Failed accept4"
check "the controller says why it refuses" log_has "$T/controller2.log" "at its open-file limit"
check_sanitizers
finish
