#!/usr/bin/env bash
# Integration: a collective run launched through the agents, without SSH (docs/bench.md,
# "Launching collectives without SSH"). A controller and three agents on this host; `railyard
# bench run --kind collective` runs an MPI program (mpi_hello, standing in for railyard-coll)
# whose every rank runs under an orted that an agent started, with no ssh on the agents' PATH.
# Then, while a run holds, a fake launcher asks the launcher's socket for what the relay must
# refuse: another binary, an extra argument, an unknown key, a host launched already, a node
# outside the job, a wrong token, and the token again after the run ended.
. "$(dirname "$0")/lib.sh"

HELLO=$BUILD/tests/integration/mpi_hello
[ -x "$HELLO" ] && [ -x /usr/bin/mpirun ] && [ -x /usr/bin/orted ] ||
	{ echo "skip: Open MPI (mpirun, orted, mpicc) is not installed"; exit 77; }

check "no ssh on the agents' PATH" nossh_path

# The program the launcher's agent runs: mpi_hello, holding while $T/hold exists; railyard-coll
# itself while $T/use-coll exists.
COLL=$BUILD/nodeagent/coll/railyard-coll
cat >"$T/coll.sh" <<EOS
#!/bin/sh
if [ -e "$T/use-coll" ]; then exec "$COLL" "\$@"; fi
if [ -e "$T/hold" ]; then exec "$HELLO" --hold "$T/hold" "\$@"; fi
exec "$HELLO" "\$@"
EOS
chmod +x "$T/coll.sh"

"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
# Beats far apart: the launcher agent under valgrind may not answer within 3 x 300 ms.
start_controller --heartbeat-interval 3s
new_token 4
enroll a "$FIXTURES/h200-ib" || die "enroll a"
enroll b "$FIXTURES/h200-ib-2" || die "enroll b"
enroll c "$FIXTURES/h200-roce" || die "enroll c"
enroll d "$FIXTURES/h200-degraded" || die "enroll d"
for n in a b c; do echo "coll_program = $T/coll.sh" >>"$T/$n/agent.conf"; done
# The launcher's agent (its socket, the relay, mpirun, an orted of its own) under valgrind when
# there is one (and no sanitizer build): no leak, no error, through its SIGTERM at the end.
# "Possibly lost" is not counted: gRPC's back-off keeps abseil's random pool (8 blocks made once,
# reachable only through an interior pointer) for the life of the process.
VG=()
if command -v valgrind >/dev/null && ! ldd "$AGENT" | grep -q libasan; then
	VG=("$(command -v valgrind)" -q --leak-check=full --show-possibly-lost=no
		--errors-for-leak-kinds=definite,indirect --error-exitcode=99 --log-file="$T/valgrind-a.log")
fi
for n in a b c; do
	if [ "$n" = a ]; then
		start_coll_agent "$n" "$FIXTURES/h200-ib" "${VG[@]}"
	else
		start_coll_agent "$n" "$FIXTURES/h200-ib"
	fi
done
check "agents online" wait_for 60 count_is online 3
id_of() { node_field "$1" id; }
A=$(id_of gpu-node-01) B=$(id_of gpu-node-04) C=$(id_of gpu-node-02) D=$(id_of gpu-node-03)
check "socket made 0600 in the state directory" test "$(stat -c %a "$T/a/launch.sock")" = 600

coll() { "$RY" bench run --state-dir "$T/ctl" --kind collective "$@"; }

# Refusals of the order itself, before anything is stored.
refused coll --nodes gpu-node-01 --timeout 20s >"$T/one.out" 2>&1
check "one node is refused, naming nodes" grep -q "nodes" "$T/one.out"
refused coll --nodes gpu-node-01,gpu-node-01 --timeout 20s >"$T/twice.out" 2>&1
check "a node twice is refused" grep -q "named twice" "$T/twice.out"
refused coll --nodes gpu-node-01,gpu-node-04 --ops allreduce,bogus --timeout 20s >"$T/ops.out" 2>&1
check "an unknown op is refused, naming it" grep -q "unknown operation 'bogus'" "$T/ops.out"

# The run, for real, through the relay. One rank per "node": the three share this host, where
# Open MPI's shared-memory transport (vader, in /dev/shm) names its segments by host name and
# local rank, so two local ranks on each of them would map one another's segments.
coll --nodes gpu-node-01,gpu-node-04,gpu-node-02 --timeout 60s --json \
	>"$T/run.json" 2>"$T/run.err"
check "the collective run succeeds" test $? -eq 0 || { cat "$T/run.err"; tail -30 "$T/a.log"; }
check "3 ranks, allreduce of the ranks right" jqt '.result.coll.ranks == 3 and
	.result.coll.sum == 3' "$T/run.json"
check "rank order is the order of --nodes" jqt --arg a "$A" --arg b "$B" --arg c "$C" \
	'[.result.coll.procs[].node] == [$a,$b,$c]' "$T/run.json"
check "every rank's parent is an orted" jqt \
	'[.result.coll.procs[] | select(.parent_comm == "orted")] | length == 3' "$T/run.json"
check "every orted's parent is the agent of the rank's node" jqt \
	--argjson pa "${AGENT_PID[a]}" --argjson pb "${AGENT_PID[b]}" --argjson pc "${AGENT_PID[c]}" \
	--arg a "$A" --arg b "$B" --arg c "$C" \
	'[.result.coll.procs[] | select((.node == $a and .grandparent == $pa) or
	  (.node == $b and .grandparent == $pb) or (.node == $c and .grandparent == $pc))] |
	 length == 3' "$T/run.json"
check "three daemons launched, through the relay" jqt '.result.launch.daemons == 3 and
	.result.launch.mca.plm_rsh_no_tree_spawn == "1" and
	(.result.launch.mca.plm_rsh_agent | endswith("railyard-agent rsh"))' "$T/run.json"
check "the tcp baseline's settings" jqt '.result.launch.mca.pml == "ob1" and
	.result.launch.mca.btl == "tcp,self,vader"' "$T/run.json"
check "params: launcher first, hosts in rank order, defaults" jqt --arg a "$A" \
	'.client_node == $a and .server_node == $a and .params.hosts[0].node == $a and
	 (.params.hosts | length) == 3 and .params.ranks_per_node == 1 and
	 .params.settings.ucx == "/etc/ucx/ucx.conf"' "$T/run.json"
check "the job token is never shown" jqt '.params | has("job_token") | not' "$T/run.json"
RUN=$(jq -r .id "$T/run.json")
"$RY" bench show "$RUN" --state-dir "$T/ctl" >"$T/show.out" 2>&1
check "bench show prints the collective's rows" grep -q "allreduce .* busbw .* wrong 0" "$T/show.out" ||
	cat "$T/show.out"
check "nor in the list" bash -c "! '$RY' bench list --json --state-dir '$T/ctl' | grep -q job_token"
check "each agent started one orted for it" bash -c "grep -q 'bench $RUN: orted started' '$T/a.log' &&
	grep -q 'bench $RUN: orted started' '$T/b.log' && grep -q 'bench $RUN: orted started' '$T/c.log'"

# railyard-coll itself over the relay: nccl-tests' figures, the data checked, a node pair each.
if [ -x "$COLL" ]; then
	touch "$T/use-coll"
	coll --nodes gpu-node-01,gpu-node-04,gpu-node-02 --ops allreduce,allgather --min-bytes 8 \
		--max-bytes 65536 --warmup 1 --iters 5 --timeout 90s --json >"$T/coll.json" 2>"$T/coll.err"
	check "railyard-coll over the relay succeeds" test $? -eq 0 || tail -5 "$T/coll.err"
	# (allgather's sizes are rounded to whole elements per rank, as nccl-tests does)
	check "  its sweep: allreduce 8 B..64 KiB, allgather too, 3 ranks, nothing wrong" jqt \
		'.result.coll.program == "railyard-coll" and .result.coll.ranks == 3 and
		 ([.result.coll.results[] | select(.op == "allreduce")] | length) == 14 and
		 ([.result.coll.results[] | select(.op == "allgather")] | length) >= 10 and
		 ([.result.coll.results[] | select(.wrong != 0)] | length) == 0 and
		 ([.result.coll.results[] | .busbw_gbs] | max) > 0' "$T/coll.json"
	check "  a pair for each two of the 3 nodes" jqt '(.result.coll.pairs | length) == 3' "$T/coll.json"
	"$RY" bench show "$(jq -r .id "$T/coll.json")" --state-dir "$T/ctl" >"$T/coll-show.out" 2>&1
	check "  bench show prints its rows" grep -q "allgather .* B .* busbw .* wrong 0" "$T/coll-show.out"
	rm -f "$T/use-coll"
fi

# A run that holds, attacked through the launcher's socket with the job's own token.
touch "$T/hold"
coll --nodes gpu-node-01,gpu-node-04,gpu-node-02 --timeout 60s --no-wait >"$T/hold.out" 2>&1
HOLD=$(sed -n 's/^bench \(b-[0-9a-f]*\):.*/\1/p' "$T/hold.out")
check "the holding run started" test -n "$HOLD"
check "its three daemons are up" wait_for 30 bash -c \
	"[ \$(grep -c 'bench $HOLD: orted started' '$T/a.log' '$T/b.log' '$T/c.log' | awk -F: '{s+=\$2} END {print s}') -eq 3 ]"
MPIRUN=$(pgrep -P "${AGENT_PID[a]}" -x mpirun | head -1)
check "mpirun runs under the launcher's agent" test -n "$MPIRUN"
TOK=$(tr '\0' '\n' <"/proc/$MPIRUN/environ" | sed -n 's/^RAILYARD_JOB_TOKEN=//p')
check "the job's token is in mpirun's environment" test ${#TOK} -eq 64
orteds() { pgrep -c -x orted -P "${AGENT_PID[a]},${AGENT_PID[b]},${AGENT_PID[c]}"; }
before=$(orteds)
rsh() { # rsh TOKEN HOST ARGS...: the fake launcher
	local tok=$1; shift
	RAILYARD_JOB=$HOLD RAILYARD_JOB_TOKEN=$tok RAILYARD_LAUNCH_SOCK=$T/a/launch.sock \
		"$AGENT" rsh "$@"
}
good=(" orted" --daemonize -mca ess '"env"' -mca ess_base_jobid '"1"' -mca ess_base_vpid 1
	-mca ess_base_num_procs '"4"' -mca orte_hnp_uri '"1.0;tcp://127.0.0.1:9"'
	--mca plm_rsh_no_tree_spawn '"1"' -mca plm '"rsh"' -mca plm_rsh_agent "\"$AGENT rsh\"")
refusal() { # refusal NAME REASON TOKEN HOST ARGS...
	local name=$1 why=$2; shift 2
	rsh "$@" >"$T/rsh.out" 2>&1; local rc=$?
	check "$name: refused (exit $rc), saying why" bash -c \
		"[ $rc -eq 1 ] && grep -q -- '$why' '$T/rsh.out'" || cat "$T/rsh.out"
}
env -u RAILYARD_JOB "$AGENT" rsh "$B" " orted" >"$T/rsh.out" 2>&1; rc=$?
check "rsh outside a run: exit 1 (exit $rc), naming what it lacks" bash -c \
	"[ $rc -eq 1 ] && grep -q 'RAILYARD_JOB, RAILYARD_JOB_TOKEN and RAILYARD_LAUNCH_SOCK must be set' '$T/rsh.out'"
refusal "another binary" "only orted may be started" "$TOK" "$B" /bin/sh -c id
refusal "an extra argument" "not -mca KEY VALUE" "$TOK" "$B" "${good[@]}" --debug
refusal "an unknown key" "orte_fork_agent. is not allowed" "$TOK" "$B" "${good[@]}" \
	-mca orte_fork_agent '"/bin/sh"'
refusal "a host launched already (a replayed token)" "launched already" "$TOK" "$B" "${good[@]}"
refusal "a node outside the job" "is not a node of the job" "$TOK" "$D" "${good[@]}"
refusal "a wrong token" "wrong job token" "$(printf '%064d' 0)" "$B" "${good[@]}"
# Another node's agent with the right token: only the run's launcher may ask.
RAILYARD_JOB=$HOLD RAILYARD_JOB_TOKEN=$TOK RAILYARD_LAUNCH_SOCK=$T/b/launch.sock \
	"$AGENT" rsh "$C" "${good[@]}" >"$T/rsh.out" 2>&1; rc=$?
check "a node that is not the launcher: refused (exit $rc)" bash -c \
	"[ $rc -eq 1 ] && grep -q 'node $B is not its launcher' '$T/rsh.out'" || cat "$T/rsh.out"
check "nothing was started" test "$(orteds)" = "$before"
rm -f "$T/hold"
check "the holding run succeeds once released" wait_for 30 bash -c \
	"'$RY' bench show $HOLD --json --state-dir '$T/ctl' | jq -e '.state == \"succeeded\"' >/dev/null"
refusal "the token after the run ended" "the run is succeeded" "$TOK" "$C" "${good[@]}"
"$RY" audit --json --limit 200 --state-dir "$T/ctl" >"$T/audit.json" 2>&1
check "the refusals are audited (report.refuse, LaunchRequest)" jqt '[.items[] |
	select(.action == "report.refuse" and (tostring | test("LaunchRequest: launch for")))] |
	length >= 1' "$T/audit.json" || head -c 1500 "$T/audit.json"
check "the controller logged each of the 7 refusals" test \
	"$(grep -c "launch refused to $A" "$T/controller.log")" -ge 7
no_orted() { [ "$(orteds)" = 0 ]; }
check "no orted left over" wait_for 10 no_orted

# Cancel of a holding run: mpirun's group and every orted of the run stop.
touch "$T/hold"
coll --nodes gpu-node-01,gpu-node-04,gpu-node-02 --timeout 60s --no-wait >"$T/cancel.out" 2>&1
CAN=$(sed -n 's/^bench \(b-[0-9a-f]*\):.*/\1/p' "$T/cancel.out")
check "a third run holds with its three daemons" wait_for 30 bash -c \
	"[ \$(grep -c 'bench $CAN: orted started' '$T/a.log' '$T/b.log' '$T/c.log' | awk -F: '{s+=\$2} END {print s}') -eq 3 ]"
"$RY" bench cancel "$CAN" --state-dir "$T/ctl" >"$T/cancel2.out" 2>&1
check "bench cancel stops it" grep -q "bench $CAN: cancelled" "$T/cancel2.out"
check "its daemons and mpirun are gone" wait_for 15 no_orted
no_mpirun() { ! pgrep -P "${AGENT_PID[a]}" -x mpirun >/dev/null; }
check "  ... and its mpirun" wait_for 15 no_mpirun
check "the target agents were told (Cancel)" bash -c "grep -q 'bench $CAN: its daemon here stops' '$T/b.log' &&
	grep -q 'bench $CAN: its daemon here stops' '$T/c.log'"
rm -f "$T/hold"

# A campaign's collective test (the lead's kind) over the relay, railyard-coll measuring.
if [ -x "$COLL" ]; then
	touch "$T/use-coll"
	cat >"$T/coll-pb.yaml" <<EOS
name: coll-smoke
version: "1"
steps:
  - {name: facts readable, type: assert, params: {that: [{fact: kernel.release, op: "!=", value: ""}]}}
validation:
  transport: tcp
  tests:
    - {name: allreduce, kind: collective, ops: [allreduce], min_size: 8, max_size: 64K,
       ranks_per_node: 1, backend: mpi, iters: 5, warmup: 1, timeout: 60s}
  acceptance:
    - {metric: allreduce.busbw_gbs, op: ">=", value: 0.0000001}
EOS
	"$RY" validate --state-dir "$T/ctl" --cluster it --playbook "$T/coll-pb.yaml" \
		--nodes gpu-node-01,gpu-node-04,gpu-node-02 --json >"$T/camp.json" 2>"$T/camp.err"
	# (the campaign's own result also weighs the enrolled node left out, d: the lead's verdict)
	check "a campaign's collective test measures and passes over the relay" jqt \
		'.verdict.tests[0].kind == "collective" and .verdict.tests[0].measured == 1 and
		 .verdict.tests[0].result == "pass" and .verdict.tests[0].stats.wrong.max == 0' \
		"$T/camp.json" ||
		{ tail -5 "$T/camp.err"; head -c 1500 "$T/camp.json"; }
	rm -f "$T/use-coll"
fi

if [ ${#VG[@]} -gt 0 ]; then
	kill -TERM "${AGENT_PID[a]}"
	wait "${AGENT_PID[a]}"; rc=$?
	check "the launcher's agent under valgrind: exit 0 after SIGTERM, no report (exit $rc)" \
		bash -c "[ $rc -eq 0 ] && ! [ -s '$T/valgrind-a.log' ]" || head -40 "$T/valgrind-a.log"
fi
finish
