#!/usr/bin/env bash
# Integration: benchmarks ordered over the agents' sessions. The controller sends the server
# side its RunBench, waits for BenchReady, sends the client side, and stores both results.
# TCP transport on 127.0.0.1 (the verbs transport is proven in the soft-RoCE guests).
. "$(dirname "$0")/lib.sh"

"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
start_controller --heartbeat-interval 300ms
new_token 3
enroll a "$FIXTURES/h200-ib" || die "enroll a"
enroll b "$FIXTURES/h200-ib-2" || die "enroll b"
enroll c "$FIXTURES/h200-roce" || die "enroll c"
start_agent a "$FIXTURES/h200-ib"
start_agent b "$FIXTURES/h200-ib-2"
check "agents online" wait_for 20 count_is online 2
bench() { "$RY" bench run --state-dir "$T/ctl" --from gpu-node-01 --to gpu-node-04 "$@"; }

bench --kind lat --iters 300 --json --timeout 30s >"$T/lat.json"
check "latency run succeeds" test $? -eq 0
check "latency result has 300 samples" test "$(jq '.result.results[0].latency.count' "$T/lat.json")" = 300
check "latency p50 is a positive number" jqt '.result.results[0].latency.p50 > 0' "$T/lat.json"
check "server side reported too" jqt '.server_result.ok == true' "$T/lat.json"
bench --kind bw --size 65536 --iters 500 --check-data --json --timeout 30s >"$T/bw.json"
check "bandwidth run with data check succeeds" test $? -eq 0
check "bandwidth in Gb/s is positive" jqt '.result.results[0].bw.gbps > 0' "$T/bw.json"
check "data was checked" jqt '.result.results[0].data_check.checked > 0' "$T/bw.json"
check "human output names the figures" bash -c \
	"'$RY' bench show \$(jq -r .id '$T/lat.json') --state-dir '$T/ctl' | grep -q 'p50'"

# Verbs knobs travel to both agents (tcp ignores them, but the engine reports what it got).
bench --kind lat --iters 50 --ib-port 2 --gid-index 3 --tclass 32 --sl 1 --json --timeout 30s \
	>"$T/knobs.json"
check "a run with --ib-port/--gid-index/--tclass/--sl succeeds" test $? -eq 0
check "the agents got ib_port 2 and gid_index 3" jqt '.result.params.ib_port == 2 and
	.result.params.gid_index == 3 and .server_result.params.ib_port == 2' "$T/knobs.json"
runs_before=$("$RY" bench list --state-dir "$T/ctl" | wc -l)
refused bench --kind lat --sl 16 >"$T/sl.out" 2>&1
check "an SL over 15 is refused, naming the flag" grep -q "invalid --sl '16'" "$T/sl.out"
check "  ... and nothing is stored" test "$("$RY" bench list --state-dir "$T/ctl" | wc -l)" = "$runs_before"

# Bad orders are answered with failed results, not silence.
refused bench --kind bw --size 100000000 --timeout 20s >"$T/big.out" 2>&1
check "oversized message refused by the agent, reason stored" grep -qi "size" "$T/big.out"
refused bench --kind lat --transport carrier-pigeon --timeout 20s >"$T/tr.out" 2>&1
check "unknown transport refused" grep -qi "transport" "$T/tr.out"
refused "$RY" bench run --state-dir "$T/ctl" --from gpu-node-01 --to gpu-node-02 --kind lat \
	--timeout 2s >"$T/off.out" 2>&1
check "a run to an offline node fails at its deadline" grep -q "no result before the deadline" "$T/off.out"
check "controller and agents still up" count_is online 2

# Cancel: a 60 s run stopped mid-measurement; both agents stop within the engine's poll, free
# the run (a new one starts at once), and late reports do not change the stored state.
bstate() { "$RY" bench show "$1" --json --state-dir "$T/ctl" | jq -r .state; }
bench --kind bw --size 65536 --duration 60 --timeout 90s --no-wait >"$T/long.out" 2>&1
check "bench run --no-wait returns at once" test $? -eq 0
id=$(sed -n 's/^bench \(b-[0-9a-f]*\):.*/\1/p' "$T/long.out")
check "--no-wait prints the run id" test -n "$id"
check "the long run is measuring on both agents" wait_for 20 bash -c \
	"grep -q 'bench $id: running' '$T/a.log' && grep -q 'bench $id: serving' '$T/b.log'"
"$RY" bench cancel "$id" --state-dir "$T/ctl" >"$T/cancel.out" 2>&1
check "bench cancel exits 0" test $? -eq 0
check "bench cancel says cancelled" grep -q "bench $id: cancelled" "$T/cancel.out"
check "stored state is cancelled, reason given" jqt '.state == "cancelled" and
	(.error | test("cancelled by operator"))' <("$RY" bench show "$id" --json --state-dir "$T/ctl")
# Each agent gets the Cancel; the side that gets it first stops and the other may end on the
# peer's reason ("peer: canceled") before its own Cancel arrives ("not running here").
got_cancel() { grep -q -e "bench $2: cancelled by the controller" -e "Cancel of bench $2: not running here" "$1"; }
check "client agent got the Cancel" wait_for 10 got_cancel "$T/a.log" "$id"
check "server agent got the Cancel" wait_for 10 got_cancel "$T/b.log" "$id"
check "at least one side stopped on it" bash -c \
	"grep -q 'bench $id: cancelled by the controller' '$T/a.log' '$T/b.log'"
check "client engine ended (canceled result)" wait_for 10 log_has "$T/a.log" "bench $id: .*canceled"
check "server engine ended (canceled result)" wait_for 10 log_has "$T/b.log" "bench $id: .*canceled"
check "late reports leave it cancelled" test "$(bstate "$id")" = cancelled
bench --kind lat --iters 100 --timeout 30s >"$T/after.out" 2>&1
check "the next run succeeds right after a cancel" test $? -eq 0
"$RY" bench cancel "$id" --state-dir "$T/ctl" >"$T/cancel2.out" 2>&1; rc=$?
check "cancel of a finished run is refused (exit 1: $rc), naming its state" bash -c \
	"[ $rc -eq 1 ] && grep -q 'conflict: benchmark run $id has ended (cancelled)' '$T/cancel2.out'"
"$RY" bench cancel b-00000000 --state-dir "$T/ctl" >"$T/cancel3.out" 2>&1; rc=$?
check "cancel of an unknown run is refused (exit 4: $rc)" bash -c \
	"[ $rc -eq 4 ] && grep -q 'not_found: no benchmark run b-00000000' '$T/cancel3.out'"

# Ctrl-C while `bench run` follows a run cancels the run instead of leaving it behind.
"$RY" bench run --state-dir "$T/ctl" --from gpu-node-01 --to gpu-node-04 --kind bw \
	--size 65536 --duration 60 --timeout 90s >"$T/int.out" 2>"$T/int.err" &
bpid=$!
check "interrupted run starts" wait_for 20 bash -c "grep -q '^bench b-' '$T/int.out'"
id=$(sed -n 's/^bench \(b-[0-9a-f]*\):.*/\1/p' "$T/int.out" | head -1)
check "interrupted run is measuring" wait_for 20 log_has "$T/a.log" "bench $id: running"
kill -INT "$bpid"
wait "$bpid"
check "interrupted bench run exits 130" test $? -eq 130
check "it said it is cancelling" grep -q "interrupted; cancelling it" "$T/int.err"
check "interrupted run is stored as cancelled" test "$(bstate "$id")" = cancelled
check "both agents stopped it" wait_for 10 bash -c \
	"grep -q 'bench $id: .*canceled' '$T/a.log' && grep -q 'bench $id: .*canceled' '$T/b.log'"
check "controller and agents still up after cancels" count_is online 2

# An order lost with its agent: the server's agent is stopped when the controller sends it
# RunBench, then killed (the message dies in its socket); the restarted agent is sent the order
# again when it reconnects, and the run goes on instead of waiting out its deadline.
kill -STOP "${AGENT_PID[b]}"
bench --kind lat --iters 100 --timeout 60s --no-wait >"$T/lost.out" 2>&1
id=$(sed -n 's/^bench \(b-[0-9a-f]*\):.*/\1/p' "$T/lost.out" | head -1)
state_is() { [ "$(bstate "$1")" = "$2" ]; }
check "a run for a stopped server agent is sent to it" wait_for 20 state_is "$id" server_sent
kill -9 "${AGENT_PID[b]}"
wait "${AGENT_PID[b]}" 2>/dev/null
start_agent b "$FIXTURES/h200-ib-2"
check "  ... the restarted agent is sent the order again" wait_for 30 log_has "$T/controller.log" "bench $id: server side sent again to"
check "  ... and the run succeeds" wait_for 40 state_is "$id" succeeded
check "  ... both agents online" wait_for 20 count_is online 2

# Control ports are leased from --bench-ports: one another process holds is skipped; with all
# of them taken the run fails naming the range (and the agent keeps serving).
kill -TERM "${AGENT_PID[b]}"
wait "${AGENT_PID[b]}"
check "server agent offline for its restart" wait_for 20 node_state_is gpu-node-04 offline
busybox nc -l -p 18600 </dev/null >/dev/null 2>&1 &
hold1=$!
PIDS+=("$hold1")
start_agent b "$FIXTURES/h200-ib-2" --bench-ports 18600-18601
check "server agent back with --bench-ports 18600-18601" wait_for 20 node_state_is gpu-node-04 online
check "port holder listens" wait_for 10 bash -c "ss -Hltn 'sport = :18600' | grep -q 18600"
bench --kind lat --iters 100 --timeout 30s >"$T/lease.out" 2>&1
check "a run with the first port taken succeeds" test $? -eq 0
id=$(sed -n 's/^bench \(b-[0-9a-f]*\):.*/\1/p' "$T/lease.out" | head -1)
check "the agent skipped the taken port" log_has "$T/b.log" "bench $id: port 18600 is taken, trying the next"
check "it served on the next one" log_has "$T/controller.log" "bench $id: server .* listening on port 18601"
check "bench show names the port" jqt '.server_port == 18601' <("$RY" bench show "$id" --json --state-dir "$T/ctl")
busybox nc -l -p 18601 </dev/null >/dev/null 2>&1 &
hold2=$!
PIDS+=("$hold2")
check "second port holder listens" wait_for 10 bash -c "ss -Hltn 'sport = :18601' | grep -q 18601"
refused bench --kind lat --iters 100 --timeout 20s >"$T/lease2.out" 2>&1
check "all ports taken: the run fails naming the range" grep -q "no free benchmark port in 18600-18601" "$T/lease2.out"
kill "$hold1" "$hold2" 2>/dev/null
bench --kind lat --iters 100 --timeout 30s >/dev/null 2>&1
check "ports free again: the next run succeeds" test $? -eq 0

for n in a b; do kill -TERM "${AGENT_PID[$n]}"; wait "${AGENT_PID[$n]}"; done
kill -TERM "$CTL_PID"
wait "$CTL_PID"
check "controller exits 0" test $? -eq 0
check_sanitizers
finish
