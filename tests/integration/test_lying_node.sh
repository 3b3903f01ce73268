#!/usr/bin/env bash
# Integration: a campaign member that lies (issue 22). Two honest agents and an enrolled node
# speaking the protocol with its own certificate (rogue_client --mode liar): it runs every
# benchmark side it is sent for real, with the project's engine, then rewrites the result it
# reports (its peer's copy of the run stays honest). Each lie is a campaign of its own (tcp,
# pairs, quick): impossible figures (negative, 1e308, null, 1 ns over TCP, more samples than
# iterations) and a plausible rewrite (every figure halved) must never pass, never enter a
# statistic, and name the liar, not an honest node, even under a rule relative to the minimum.
. "$(dirname "$0")/lib.sh"

"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
# Default heartbeats: the liar runs each benchmark side on its session's thread and is silent
# meanwhile, as long as a timed run lasts.
start_controller
new_token 3
for n in a:h200-ib b:h200-ib-2; do
	enroll "${n%%:*}" "$FIXTURES/${n#*:}" --hostname "honest-${n%%:*}" || die "enroll ${n%%:*}"
	start_agent "${n%%:*}" "$FIXTURES/${n#*:}"
done
enroll liar "$FIXTURES/h200-roce" --hostname liar || die "enroll liar"
jq '.hostname = "liar"' "$SRC/tests/fixtures/facts/h200-ib.json" >"$T/liar-facts.json"

show() { "$RY" campaign show "$1" --json --results --state-dir "$T/ctl"; }
# The review's rule: a pair's median latency within 20x the cluster's best. Lines that only a
# broken run crosses otherwise: the honest pair passes on a busy machine.
cat >"$T/pb.yaml" <<'PB'
name: liar-check
version: "1"
steps:
  - {name: facts readable, type: assert, params: {that: [{fact: kernel.release, op: "!=", value: ""}]}}
validation:
  transport: tcp
  requires: []
  tests:
    - {name: pair-lat, kind: lat, pattern: pairs, size: 8, iters: 200}
    - {name: pair-bw, kind: bw, pattern: pairs, size: 64K, duration: 1s}
  acceptance:
    - {metric: pair-lat.p50_us, relative: min, op: "<=", value: 20}
    - {metric: pair-bw.gbps, op: ">=", value: 0.0001}
PB
# campaign SPEC NAME: a campaign with the liar lying SPEC; its document in $T/NAME.json.
campaign() {
	liar "$1"
	wait_for 30 count_is online 3 || die "the liar did not come online (see $T/liar.err)"
	"$RY" validate --state-dir "$T/ctl" --cluster it --playbook "$T/pb.yaml" --quick \
		--seed 3 --json >"$T/$2.run.json" 2>"$T/$2.err"
	RC=$?
	show "$(jq -r .id "$T/$2.run.json")" >"$T/$2.json" ||
		die "$2: no campaign (validate said: $(head -c 600 "$T/$2.err"))"
}
# Assertions every lie must hold: not a pass (exit 1), the liar named and no honest node, every
# row through the liar invalid with the reason, none of them in a statistic.
judged() { # judged NAME TEST REASON-REGEX
	local J=$T/$1.json t=$2 re=$3
	check "$1: not a pass (exit $RC, verdict $(jq -r .verdict.result "$J"))" \
		jqt --argjson rc "$RC" '$rc == 1 and .verdict.result != "pass"' "$J"
	check "  ... the liar is named, no honest node is" jqt '[.verdict.nodes[] |
		select(.result != "pass") | .hostname] == ["liar"]' "$J"
	check "  ... its reason says what was impossible" jqt --arg re "$re" '.verdict.nodes[] |
		select(.hostname == "liar") | any(.reasons[]; test($re))' "$J"
	check "  ... $t: both rows through the liar invalid, naming it; the honest pair counted" jqt \
		--arg t "$t" '(.verdict.tests[] | select(.name == $t)) as $v |
		$v.invalid == 2 and all($v.invalid_rows[]; .node != null) and
		([.results[] | select(.test_index == ($v.name | if . == "pair-lat" then 0 else 1 end)
		and .phase == "run" and .state == "invalid")] | length) == 2 and
		($v.stats | to_entries | all(.value.n <= 1))' "$J"
}
check "two honest agents online" wait_for 30 count_is online 2

campaign 'p50=-5' negative
judged negative pair-lat 'p50_us -5 is negative'
campaign '*=0.001' nanosecond
judged nanosecond pair-lat 'below the tcp floor of 1 us'
check "  ... the 20 x min rule's reference comes from an honest pair, and names it" jqt '
	.verdict.tests[0].rules[0].threshold_text | test("x min [0-9.]+, honest-[ab] -> honest-[ab]")' \
	"$T/nanosecond.json"
campaign 'gbps=1e308' huge
judged huge pair-bw 'gbps 1e\+308 is above'
campaign '*=null' nulls
judged nulls pair-lat 'is missing'
campaign 'count=1000000' samples
judged samples pair-lat '1000000 latency samples from a run of 100 iterations'
# A plausible rewrite passes every bound; the honest peer's copy of the run says otherwise, and
# the liar is the one node in dispute with both of its peers.
campaign '*x0.5' halved
judged halved pair-lat "reports of the run differ"
check "  ... nothing of the liar's in the signed-off figures: no row of it is done" jqt '
	[.results[] | select(.state == "done") | .a, .b] as $ends |
	([.verdict.nodes[] | select(.hostname == "liar") | .id][0]) as $l | all($ends[]; . != $l)' \
	"$T/halved.json"

kill "$LIAR_PID" 2>/dev/null
for n in a b; do kill -TERM "${AGENT_PID[$n]}"; done
for n in a b; do wait "${AGENT_PID[$n]}"; done
kill -TERM "$CTL_PID"
wait "$CTL_PID"
check "the controller stops cleanly on SIGTERM" test $? -eq 0
check_sanitizers
finish
