#!/usr/bin/env bash
# Integration: crashes at random points. The controller killed with -9 again and again while a
# three-batch rollout runs and while a campaign measures (every kill at a random moment, start-up
# and the reconnect storm included): each time the database passes integrity_check, no stored
# result is lost, and in the end every step and every benchmark ran and is stored exactly once.
# An agent killed with -9 inside file steps that write 200 KiB files, at the creation, the
# write, the close or the rename of a file's temporary (seen with inotify, not guessed): every
# file is the old or the new content, never torn, and the outcome is reported after the restart.
# Kill points come from $RANDOM, seeded and printed (RAILYARD_TEST_SEED repeats a run).
. "$(dirname "$0")/lib.sh"

PREP=$SRC/tests/fixtures/prepare-sysroot.sh
KOW=$BUILD/tests/integration/kill_on_write
HB=(--heartbeat-interval 300ms --heartbeat-timeout 1500ms --reconnect-grace 30s)
SEED=${RAILYARD_TEST_SEED:-$$}
RANDOM=$SEED
echo "seed $SEED"
db() { sqlite3 -cmd ".timeout 5000" "$T/ctl/controller.db" "$@"; }
intact() { [ "$(db 'PRAGMA integrity_check')" = ok ]; }
dep_field() { "$RY" deployments "$1" --json --state-dir "$T/ctl" | jq -r "$2"; }
deploy() { "$RY" deploy --state-dir "$T/ctl" --cluster it --canary 0 --pause 0s "$@"; }
last_id() { awk '/^deployment d-/ {sub(":", "", $2); print $2; exit}' "$1"; }
finished() { [[ "$(dep_field "$1" .state)" =~ ^(succeeded|partial|failed)$ ]]; }
# kill_ctl: kill -9 the controller and wait for it; the database must be whole as it left it.
kill_ctl() {
	kill -9 "$CTL_PID"
	wait "$CTL_PID" 2>/dev/null
}
# random_s LO HI: a random duration from LO to HI milliseconds, in seconds (for sleep)
random_s() {
	local ms=$(($1 + RANDOM % ($2 - $1)))
	printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}

"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
start_controller "${HB[@]}"
new_token 3
for spec in a:h200-ib b:h200-ib-2 c:h200-roce; do
	IFS=: read -r name fix <<<"$spec"
	"$PREP" "$FIXTURES/$fix" "$T/root-$name" >/dev/null || die "prepare $name"
	mkdir -p "$T/root-$name/var/tmp"
	enroll "$name" "$T/root-$name" --hostname "node-$name" || die "enroll $name"
	start_agent "$name" "$T/root-$name"
done
check "3 agents online" wait_for 30 count_is online 3

# --- the controller killed -9 five times during a three-batch rollout ----------------------------
{
	printf 'name: crash\nversion: "1"\nsteps:\n'
	for ((i = 0; i < 40; i++)); do
		printf '  - name: c%d\n    type: command\n    params:\n      argv: [/bin/sh, -c, "echo %d >>\\"$RAILYARD_SYSROOT/var/tmp/runs-crash\\"; sleep 0.05"]\n' "$i" "$i"
	done
} >"$T/crash.yaml"
deploy --playbook "$T/crash.yaml" --batch 1 --max-fail 0 --no-wait >"$T/crash.out" 2>&1 || fail "deploy crash"
R=$(last_id "$T/crash.out")
stored() { db "SELECT count(*) FROM step_results WHERE deployment_id = '$R'"; }
check "the rollout started" wait_for 30 bash -c "[ -s '$T/root-a/var/tmp/runs-crash' ]"
lost=0 broken=0 kills=""
for k in 1 2 3 4 5; do
	sleep "$(random_s 200 1800)" # a random moment: the point is where it lands
	finished "$R" && break
	before=$(stored)
	kill_ctl
	intact || broken=$((broken + 1))
	after=$(stored)
	[ "$after" -ge "$before" ] || lost=$((lost + 1))
	kills+=" $before"
	start_controller "${HB[@]}"
done
echo "controller killed with $kills step results stored"
check "the database passed integrity_check after every kill" test "$broken" = 0
check "no stored step result was lost by a kill" test "$lost" = 0
check "the rollout was killed at least three times before it ended" test "$(wc -w <<<"$kills")" -ge 3
check "the rollout finishes after the last restart" wait_for 120 finished "$R"
check "  ... succeeded, with 120 step results" test "$(dep_field "$R" '.state + " " + ([.nodes[].steps[]] | length | tostring)')" = "succeeded 120"
check "  ... 40 distinct steps per node, none stored twice" test "$(db "SELECT count(DISTINCT node_id || ':' || idx) FROM step_results WHERE deployment_id = '$R'")" = 120
for n in a b c; do
	check "  ... node $n ran each of the 40 steps exactly once" \
		test "$(sort -n "$T/root-$n/var/tmp/runs-crash" | uniq | wc -l) $(wc -l <"$T/root-$n/var/tmp/runs-crash")" = "40 40"
	check "  ... agent $n accepted the plan once" test "$(grep -c "plan $R: running" "$T/$n.log")" = 1
done
check "  ... no report was refused" bash -c "! grep -q 'refused' '$T/a.log' '$T/b.log' '$T/c.log'"

# --- the controller killed -9 three times during a campaign --------------------------------------
cat >"$T/camp.yaml" <<EOF
name: crash-campaign
version: "1"
steps:
  - {name: facts readable, type: assert, params: {that: [{fact: kernel.release, op: "!=", value: ""}]}}
validation:
  requires: []
  transport: tcp
  tests:
    - {name: pair-lat, kind: lat, pattern: pairs, size: 8, iters: 300}
    - {name: pair-bw, kind: bw, pattern: pairs, size: 64K, duration: 1s}
  acceptance:
    - {metric: pair-lat.p50_us, relative: median, op: "<=", value: 1000}
    - {metric: pair-bw.gbps, relative: median, op: ">=", value: 0.0001}
EOF
check "all agents back for the campaign" wait_for 30 count_is online 3
"$RY" validate --state-dir "$T/ctl" --cluster it --playbook "$T/camp.yaml" --no-wait >"$T/camp.out" 2>&1
C=$(sed -n 's/^campaign \(c-[0-9a-f]*\):.*/\1/p' "$T/camp.out" | head -1)
check "a campaign started" test -n "$C"
cstate() { "$RY" campaign show "$C" --json --state-dir "$T/ctl" | jq -r .state; }
ended() { [ "$(cstate)" != running ]; }
done_rows() { db "SELECT count(*) FROM campaign_results WHERE campaign_id = '$C' AND state = 'done'"; }
lost=0 broken=0 kills=""
for k in 1 2 3; do
	sleep "$(random_s 300 2500)"
	ended && break
	before=$(done_rows)
	kill_ctl
	intact || broken=$((broken + 1))
	after=$(done_rows)
	[ "$after" -ge "$before" ] || lost=$((lost + 1))
	kills+=" $before"
	start_controller "${HB[@]}"
done
echo "campaign: controller killed with $kills results done"
check "the database passed integrity_check after every kill" test "$broken" = 0
check "no finished benchmark result was lost by a kill" test "$lost" = 0
check "the campaign was killed at least twice" test "$(wc -w <<<"$kills")" -ge 2
check "the campaign ends after the last restart" wait_for 180 ended
"$RY" campaign show "$C" --json --results --state-dir "$T/ctl" >"$T/camp.json"
check "  ... passed, 3 pairs x 2 tests measured, every row done" jqt '.state == "passed" and
	([.results[] | select(.phase == "run")] | length) == 6 and all(.results[]; .state == "done")' "$T/camp.json"
check "  ... each pair once per test" jqt '[.results[] | select(.phase == "run") |
	[.test_index, ([.a, .b] | sort)]] | unique | length == 6' "$T/camp.json"
rows=$(jq '[.results[] | select(.bench_id)] | length' "$T/camp.json")
check "  ... one benchmark run per row ($rows), none run twice" test \
	"$(db "SELECT count(*) || ' ' || count(DISTINCT id) FROM bench_runs WHERE campaign_id = '$C'")" = "$rows $rows"
check "  ... every run succeeded with both sides' results stored" test "$(db "SELECT count(*) FROM bench_runs
	WHERE campaign_id = '$C' AND state = 'succeeded' AND result IS NOT NULL AND server_result IS NOT NULL")" = "$rows"
if [ "$FAILS" -gt 0 ]; then # what CI keeps of a failure is this output, not $T
	jq -c '.results[] | {test_index, round, slot, a, b, state, error, bench_id}' "$T/camp.json"
	db "SELECT id, state, error FROM bench_runs WHERE campaign_id = '$C'"
fi

# --- an agent killed -9 inside file steps: every file old or new, never torn -----------------------
# Three steps, each writing a 200 KiB file of node c (the only node the selector picks: the
# h200-roce fixture's host name); the last through a template. Version v's files are
# $T/exp-v/f0..f2.
gen_big() {
	local v=$1 k
	mkdir -p "$T/exp-$v"
	for k in 0 1 2; do
		awk -v v="$v" -v k="$k" 'BEGIN { if (k == 2) printf "version %s\n", v
			for (i = 0; i < 3000; i++) printf "v%s f%s line %05d the quick brown fox jumps over the lazy dog\n", v, k, i }' \
			>"$T/exp-$v/f$k"
	done
	{
		printf 'name: big\nversion: "%s"\ntarget:\n  selector: [{fact: hostname, op: "==", value: gpu-node-02}]\n' "$v"
		printf 'vars:\n  ver: "%s"\nsteps:\n' "$v"
		for k in 0 1; do
			printf '  - name: f%d\n    type: file\n    params:\n      path: /etc/ry-big/f%d\n      content: |\n' "$k" "$k"
			sed 's/^/        /' "$T/exp-$v/f$k"
		done
		printf '  - name: f2\n    type: file\n    params:\n      path: /etc/ry-big/f2\n      template: |\n'
		sed -e '1s/.*/version ${vars.ver}/' -e 's/^/        /' "$T/exp-$v/f2"
	} >"$T/big-$v.yaml"
}
hash_of() { if [ -e "$1" ]; then sha256sum <"$1" | cut -c1-16; else echo absent; fi; }
BIG=$T/root-c/etc/ry-big
mkdir -p "$BIG"
declare -A cur
for k in 0 1 2; do cur[$k]=absent; done
POINTS=(create write close rename)
torn=0 inside=0 reported=0 unordered=0 points=""
for v in 1 2 3 4 5 6; do
	gen_big "$v"
	at=${POINTS[RANDOM % 4]}
	nth=$((RANDOM % 3 + 1))
	rm -f "$T/kow.ready"
	"$KOW" --dir "$BIG" --pid "${AGENT_PID[c]}" --at "$at" --nth "$nth" --timeout 60 \
		--ready "$T/kow.ready" >"$T/kow-$v.out" 2>&1 &
	KP=$!
	wait_for 10 test -e "$T/kow.ready" || fail "v$v: the killer is not watching"
	deploy --playbook "$T/big-$v.yaml" --max-fail 100% --no-wait >"$T/big-$v.out" 2>&1 || fail "deploy big v$v"
	D=$(last_id "$T/big-$v.out")
	wait "$KP" || fail "v$v: the agent was not killed at $at $nth ($(cat "$T/kow-$v.out"))"
	wait "${AGENT_PID[c]}" 2>/dev/null
	points+=" $at#$nth"
	# Every file whole: the version before or this one. Steps run in order, so the new ones
	# are a prefix.
	seen_old=0
	for k in 0 1 2; do
		h=$(hash_of "$BIG/f$k")
		new=$(hash_of "$T/exp-$v/f$k")
		if [ "$h" = "$new" ]; then
			[ "$seen_old" = 1 ] && unordered=$((unordered + 1))
		elif [ "$h" = "${cur[$k]}" ]; then
			seen_old=1
		else
			torn=$((torn + 1))
			echo "v$v: f$k is neither the old nor the new content (killed at $at #$nth)"
		fi
		cur[$k]=$h
	done
	start_agent c "$T/root-c"
	if ! wait_for 60 finished "$D"; then
		fail "v$v: the deployment finished after the agent's restart"
		continue
	fi
	# A kill that landed between steps (the step's outcome journaled first) resumes the plan
	# after the restart, which writes the later files: whole again, old or new; that is the
	# content the next round starts from.
	for k in 0 1 2; do
		h=$(hash_of "$BIG/f$k")
		if [ "$h" != "$(hash_of "$T/exp-$v/f$k")" ] && [ "$h" != "${cur[$k]}" ]; then
			torn=$((torn + 1))
			echo "v$v: after the restart f$k is neither the old nor the new content"
		fi
		cur[$k]=$h
	done
	# The outcome after the restart: all three steps reported, the one killed inside named.
	out=$(dep_field "$D" '.nodes[0] | .state + " " + ([.steps[]] | length | tostring)')
	if [ "$out" = "failed 3" ] && dep_field "$D" '.nodes[0].steps[].message' | grep -q "interrupted: the agent stopped while this step ran"; then
		inside=$((inside + 1))
		reported=$((reported + 1))
	elif [ "$out" = "succeeded 3" ]; then
		reported=$((reported + 1))
	else
		echo "v$v: node c reported '$out' after being killed at $at #$nth"
	fi
done
echo "agent killed at:$points; $inside of 6 inside a step"
check "no file was ever torn (6 kills inside 200 KiB file writes)" test "$torn" = 0
check "files were replaced in step order" test "$unordered" = 0
check "every interrupted plan's outcome was reported after the restart (3 steps each)" test "$reported" = 6
check "the kills landed inside a step, and were reported so" test "$inside" -ge 5
gen_big 7
deploy --playbook "$T/big-7.yaml" --timeout 120s >"$T/big-7.out" 2>&1
check "a last deployment of version 7 succeeds" grep -q "succeeded$" "$T/big-7.out"
check "  ... and leaves exactly its content" bash -c "for k in 0 1 2; do cmp -s '$BIG/f'\$k '$T/exp-7/f'\$k || exit 1; done"
check "  ... and no temporary of a killed write behind" test -z "$(find "$BIG" -name '.*ry-tmp*')"

check "all agents online at the end" wait_for 30 count_is online 3
for n in a b c; do kill -TERM "${AGENT_PID[$n]}"; done
for n in a b c; do wait "${AGENT_PID[$n]}"; done
kill -TERM "$CTL_PID"
wait "$CTL_PID"
check "the controller stops cleanly on SIGTERM" test $? -eq 0
check_sanitizers
finish
