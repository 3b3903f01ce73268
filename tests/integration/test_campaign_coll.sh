#!/usr/bin/env bash
# Integration: a campaign's collective test (docs/campaigns.md, "Collectives") over agents on this
# host, launched through them with no ssh on their PATH (the tcp baseline: no RDMA here).
# Healthy: three agents, railyard-coll's all-reduce and all-to-all sweep, correct data, bus
# bandwidth as nccl-tests defines it, the CPU it cost, a pass. Then a lying launcher (an
# enrolled node speaking the protocol, rogue_client --mode liar, first by host name so it
# launches) reports a job it never launched: impossible figures, or a plausible report that
# blames an honest node. Neither may pass or blame the honest node: the job without the
# launcher, launched by the next node, is run for real and passes, so the liar is named.
. "$(dirname "$0")/lib.sh"

COLL=$BUILD/nodeagent/coll/railyard-coll
[ -x "$COLL" ] && [ -x /usr/bin/mpirun ] && [ -x /usr/bin/orted ] ||
	{ echo "SKIP integration_campaign_coll: Open MPI or railyard-coll is not built"; exit 77; }

check "no ssh on the agents' PATH" nossh_path

"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
start_controller --heartbeat-interval 3s
new_token 4
enroll a "$FIXTURES/h200-ib" || die "enroll a"
enroll b "$FIXTURES/h200-ib-2" || die "enroll b"
enroll c "$FIXTURES/h200-roce" || die "enroll c"
for n in a b c; do
	echo "coll_program = $COLL" >>"$T/$n/agent.conf"
	start_coll_agent "$n" "$FIXTURES/h200-ib"
done
check "three agents online" wait_for 60 count_is online 3

# One rank per node: the three "nodes" share this host (Open MPI's shared-memory segments are
# named by host name). 0.002 GB/s at 64 KiB is 32 ms a call: any honest run beats it by far.
cat >"$T/pb.yaml" <<'PB'
name: coll-it
version: "1"
steps:
  - {name: facts readable, type: assert, params: {that: [{fact: kernel.release, op: "!=", value: ""}]}}
validation:
  transport: tcp
  requires: []
  tests:
    - {name: coll, kind: collective, ops: [allreduce, alltoall], min_size: 8, max_size: 64K,
       iters: 5, warmup: 1, timeout: 60s}
  acceptance:
    - {metric: coll.busbw_gbs, op: ">=", value: 0.002}
PB
show() { "$RY" campaign show "$1" --json --results --state-dir "$T/ctl"; }
"$RY" validate --state-dir "$T/ctl" --cluster it --playbook "$T/pb.yaml" --dry-run --json \
	>"$T/plan.json" 2>"$T/plan.err"
check "the dry run: one round, one slot, launched by the first host name" jqt '
	.tests[0].kind == "collective" and .tests[0].round_count == 1 and
	(.tests[0].rounds[0] | length) == 1 and .tests[0].rounds[0][0].a_host == "gpu-node-01"' \
	"$T/plan.json"

"$RY" validate --state-dir "$T/ctl" --cluster it --playbook "$T/pb.yaml" --seed 1 --json \
	>"$T/ok.run.json" 2>"$T/ok.err"
rc=$?
check "healthy: the campaign passes (exit $rc)" test $rc -eq 0 || tail -20 "$T/ok.err"
show "$(jq -r .id "$T/ok.run.json")" >"$T/ok.json"
check "healthy: the collective test passed, measured once" jqt '.verdict.tests[0] |
	.kind == "collective" and .result == "pass" and .rows == 1 and .measured == 1' "$T/ok.json"
check "healthy: its summary has every op, the data exact, bus bandwidth, the pair probe" jqt '
	.results[0].summary.metrics | .busbw_gbs > 0 and .allreduce_busbw_gbs == .busbw_gbs and
	.alltoall_busbw_gbs > 0 and .lat_us > 0 and .wrong == 0 and .pair_min_gbps > 0 and
	.cpu_cores >= 0 and .cpu_s_per_gb > 0' "$T/ok.json"
# (Which pair is slowest on one shared host is luck: only a failing collective names a node.)
check "healthy: 3 ranks of Open MPI, the probe's reading in words" jqt '.results[0].summary.coll |
	.ranks == 3 and (.library | startswith("Open MPI")) and (.why | length) > 0' "$T/ok.json"
bench=$(jq -r '.results[0].bench_id' "$T/ok.json")
"$RY" bench show "$bench" --json --state-dir "$T/ctl" >"$T/ok-bench.json"
check "healthy: busbw = algbw x 2(n-1)/n for the 3 ranks (nccl-tests' all-reduce)" jqt '
	[.result.coll.results[] | select(.op == "allreduce") |
	 (.busbw_gbs - .algbw_gbs * 4 / 3) | fabs < 1e-9 * (1 + .)] | all' "$T/ok-bench.json"
check "healthy: every rank ran through the relay (three daemons), tcp settings" jqt '
	.result.launch.daemons == 3 and .result.launch.mca.pml == "ob1"' "$T/ok-bench.json"
check "healthy: the job token is not in the run's document" jqt '.params | has("job_token") | not' \
	"$T/ok-bench.json"
"$RY" campaign show "$(jq -r .id "$T/ok.run.json")" --state-dir "$T/ctl" >"$T/ok.txt"
check "healthy: campaign show prints the collective's CPU cost" \
	grep -q "cpu cost: tcp coll: bus bandwidth .* GB/s for .* cores over all ranks" "$T/ok.txt" ||
	cat "$T/ok.txt"

# ---- a lying launcher -------------------------------------------------------------------------
enroll liar "$FIXTURES/h200-roce" --hostname a-liar || die "enroll liar"
jq '.hostname = "a-liar"' "$SRC/tests/fixtures/facts/h200-ib.json" >"$T/liar-facts.json"
campaign() { # campaign SPEC NAME: the liar, gpu-node-01 and gpu-node-04; $T/NAME.json
	liar "$1"
	wait_for 30 count_is online 4 || die "the liar did not come online (see $T/liar.err)"
	"$RY" validate --state-dir "$T/ctl" --cluster it --playbook "$T/pb.yaml" --seed 1 \
		--nodes a-liar,gpu-node-01,gpu-node-04 --json >"$T/$2.run.json" 2>"$T/$2.err"
	RC=$?
	show "$(jq -r .id "$T/$2.run.json")" >"$T/$2.json" ||
		die "$2: no campaign (validate said: $(head -c 600 "$T/$2.err"))"
}
LIAR=$(node_field a-liar id)
liar_named() { # liar_named FILE REASON: the liar fails with REASON, the honest nodes pass
	jq -e --arg l "$LIAR" --arg why "$2" '.verdict.result == "fail" and
		all(.verdict.nodes[]; if .id == $l then .result == "fail" and any(.reasons[]; test($why))
		else .result == "pass" end)' "$1" >/dev/null
}

# A launcher that makes its report up launched nothing: the controller, which relayed every
# daemon of the job, fails the run before its figures count (impossible ones would be refused
# as evidence next: test_coll_campaign). The job without it then runs for real and passes.
for lie in impossible:coll:impossible blame:coll:blame=gpu-node-04; do
	name=${lie%%:*}
	campaign "${lie#*:}" "$name"
	check "$name: not a pass (exit $RC)" test $RC -eq 1
	check "$name: the liar's job failed: the controller launched none of its daemons" jqt '
		.results[] | select(.phase == "run") | .state == "failed" and
		(.error | test("the controller launched 0 of"))' "$T/$name.json"
	check "$name: the job without it ran for real, launched by gpu-node-01, and passed" jqt '
		.results[] | select(.phase == "retest") | .state == "done" and
		.summary.coll.ranks == 2 and .summary.metrics.wrong == 0 and
		.summary.metrics.busbw_gbs >= 0.002' "$T/$name.json"
	check "$name: the liar is named, gpu-node-01 and gpu-node-04 are not" liar_named \
		"$T/$name.json" "the job without it passed"
done
finish
