#!/usr/bin/env bash
# Integration: deployments. Five agents on copies of the fixture nodes (one degraded, which fails
# the port asserts), the shipped h200-ndr-ib playbook: check mode changes nothing (hashes of
# every sysroot), max_fail stops a rollout and skips the rest, a tolerated failure finishes
# "partial", a second apply changes nothing, and a controller killed with -9 mid-rollout resumes
# without running any node twice. One writer: `railyard --state-dir` talks to the serving
# controller's api.sock (deploy audited as local:uid N) and is refused, storing nothing, while
# none serves.
. "$(dirname "$0")/lib.sh"

PREP=$SRC/tests/fixtures/prepare-sysroot.sh
# The shipped playbooks with stand-in vendor keys pinned (the fixture nodes cannot reach the
# vendors' repositories; tests/fixtures/vendor-keys.sh, test_driver_stack.sh for the pins).
"$SRC/tests/fixtures/vendor-keys.sh" "$T/keys" || die "stand-in vendor keys (gpg installed?)"
for pb in h200-ndr-ib h200-roce; do
	"$SRC/tests/fixtures/pin-test-keys.sh" "$T/keys" "$SRC/playbooks/$pb.yaml" "$T/$pb.yaml" || die "pin $pb"
done
PB=$T/h200-ndr-ib.yaml
"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
start_controller --heartbeat-interval 300ms
new_token 6

# name:fixture:enrolled host name (batches follow host names: a, b, c, node-03, node-04)
NODES="a:h200-ib:gpu-a b:h200-ib:gpu-b c:h200-ib:gpu-c d:h200-degraded:gpu-node-03 e:h200-ib-2:gpu-node-04 r:h200-roce:gpu-roce"
for spec in $NODES; do
	IFS=: read -r name fix host <<<"$spec"
	"$PREP" "$FIXTURES/$fix" "$T/root-$name" "$T/keys" || die "prepare $name"
	enroll "$name" "$T/root-$name" --hostname "$host" || die "enroll $name"
	start_agent "$name" "$T/root-$name"
done
check "6 agents online" wait_for 20 count_is online 6

tree_hash() { (cd "$T" && find root-* -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum); }
dep_field() { "$RY" deployments "$1" --json --state-dir "$T/ctl" | jq -r "$2"; }
# The shipped playbook pauses a minute between batches behind a canary: not here.
deploy() { "$RY" deploy --state-dir "$T/ctl" --cluster it --playbook "$PB" --timeout 60s --canary 0 --pause 0s "$@"; }
# What is stored, read while no controller serves.
q() { sqlite3 -cmd ".timeout 5000" "$T/ctl/controller.db" "$1"; }
last_id() { awk '/^deployment d-/ {sub(":", "", $2); print $2; exit}' "$1"; }

# --- check mode ----------------------------------------------------------------------------------
before=$(tree_hash)
deploy --check --max-fail 1 >"$T/check.out" 2>&1
check "check run ends partial (the degraded node fails its asserts)" grep -q "partial" "$T/check.out"
CHECK_ID=$(last_id "$T/check.out")
check "check mode changed nothing on any node" test "$before" = "$(tree_hash)"
check "RoCE node not targeted by the IB playbook: said, with the reason" \
	grep -qE "^  gpu-roce +not targeted: ." "$T/check.out"
check "  ... and the stored deployment has no row for it" \
	test "$(dep_field "$CHECK_ID" '[.nodes[] | select(.hostname=="gpu-roce")] | length')" = 0
check "check mode reports what would change" \
	test "$(dep_field "$CHECK_ID" '[.nodes[] | select(.hostname=="gpu-a") | .steps[] | select(.status=="changed")] | length')" -gt 0
check "check mode shows a diff for nccl.conf" bash -c \
	"'$RY' deployments $CHECK_ID --json --state-dir $T/ctl | jq -r '.nodes[0].steps[].diff' | grep -q '+++ /etc/nccl.conf'"
check "degraded node's failure is named" bash -c \
	"'$RY' deployments $CHECK_ID --json --state-dir $T/ctl | jq -r '.nodes[] | select(.hostname==\"gpu-node-03\") | .steps[].message' | grep -q 'mlx5_3 port 1'"
# What failed and why, in words, without --json: the node's line names the step and its
# headline; the evaluator's text lies beneath (the REST API's detail); the steps the failure
# skipped are one line; --diff shows check mode's changes.
"$RY" deployments "$CHECK_ID" --state-dir "$T/ctl" >"$T/show.out" 2>&1
DOWN='every HCA port must be ACTIVE: mlx5_3 port 1 is DOWN'
check "deployments ID: the degraded node's line names the failed step and says why" \
	grep -qE "^  gpu-node-03 .* failed .*step 2 \"hca ports active at ndr\" failed: $DOWN; " "$T/show.out"
check "  in words, no expression on the node's line" \
	bash -c "! grep '^  gpu-node-03 ' '$T/show.out' | grep -q 'rdma.devices\['"
check "  the step below it, the evaluator's text indented beneath" bash -c \
	"grep -qE '^      failed   step 2 \"hca ports active at ndr\": $DOWN; ' '$T/show.out' &&
	grep -qE '^          .*\(rdma.devices\[3\]\.ports\[0\] is mlx5_3 port 1\)' '$T/show.out'"
check "  the steps it skipped, one line" grep -qE \
	'^      skipped  steps 3-[0-9]+: [0-9]+ steps skipped: not run: step "hca ports active at ndr" failed$' "$T/show.out"
check "  the REST API: message (one line) and detail apart" test "$(dep_field "$CHECK_ID" \
	'[.nodes[] | select(.hostname=="gpu-node-03") | .steps[] | select(.status=="failed") |
	(.message | startswith("every HCA port must be ACTIVE: mlx5_3 port 1 is DOWN") and (contains("\n") | not)) and
	(.detail | contains("rdma.devices[3].ports[0].state = DOWN"))] == [true]')" = true
check "  the node's message names the step too" test "$(dep_field "$CHECK_ID" \
	'.nodes[] | select(.hostname=="gpu-node-03") | .message | startswith("step 2 \"hca ports active at ndr\" failed: every HCA port")')" = true
check "deployment show ID --diff: check mode's changes without --json" bash -c \
	"'$RY' deployment show $CHECK_ID --diff --state-dir '$T/ctl' | grep -q '^          +++ /etc/nccl.conf'"
check "deploy went through the serving controller's api.sock (audited as local:uid $(id -u))" bash -c \
	"'$RY' audit --state-dir '$T/ctl' | grep -q ' local:uid $(id -u) *deploy.check *$CHECK_ID '"

# --- max_fail stops the rollout ------------------------------------------------------------------
# followed by watch off a terminal: a line per node as it ends and per batch, none per step;
# and on a terminal of 80 columns: bars redrawn in place, fitted to the width, and above them
# the failed node's line and the batches'
"$RY" watch --state-dir "$T/ctl" >"$T/watch.out" 2>"$T/watch.err" &
WATCH=$!
script -qfec "stty cols 80 rows 24; exec '$RY' watch --state-dir '$T/ctl'" /dev/null \
	>"$T/tty.out" 2>&1 &
TTY=$!
PIDS+=("$WATCH" "$TTY")
streams() { curl -s --unix-socket "$T/ctl/api.sock" http://localhost/metrics |
	grep -qx "railyard_http_streams $1"; }
check "watch, and watch on a terminal, follow the event stream" wait_for 10 streams 2
refused deploy --batch 2 --max-fail 0 >"$T/stop.out" 2>&1
STOP_ID=$(last_id "$T/stop.out")
check "watch: the stopped deployment's end" wait_for 10 grep -q "^deployment $STOP_ID failed: max_fail" "$T/watch.out"
check "  a line per node that ran the plan (4)" test "$(grep -c "^deployment $STOP_ID gpu-" "$T/watch.out")" = 4
check "  none per step" bash -c "! grep -qE '^deployment $STOP_ID [a-z0-9.-]+ step ' '$T/watch.out'"
check "  the failed node's line: which step and why" grep -q \
	"^deployment $STOP_ID gpu-node-03 failed: step 2 \"hca ports active at ndr\" failed: $DOWN" "$T/watch.out"
check "  a line per batch" grep -qx "deployment $STOP_ID batch 1 of 3 done, 0 nodes failed so far" "$T/watch.out"
kill -INT "$WATCH"
wait "$WATCH"
check "  ends on Ctrl-C with 0, nothing on stderr" test "$?" = 0 -a ! -s "$T/watch.err"
check "watch on a terminal: the failed node's line, which step and why" wait_for 10 grep -q \
	"deployment $STOP_ID gpu-node-03 failed: step 2 \"hca ports active at ndr\" failed: $DOWN" "$T/tty.out"
check "  the batches' lines" grep -q "deployment $STOP_ID batch 1 of 3 done, 0 nodes failed so far" "$T/tty.out"
# the bars drawn, without their terminal controls
bars() { sed 's/\x1b\[[0-9;]*[A-Za-z]//g' "$T/tty.out" | tr '\r' '\n' | grep '^\[[#.]*\] '; }
bars_lead() { bars | grep -qE "^\[[#.]*\] +[0-9]+% deployment $STOP_ID: [0-5] of 5 nodes done(, 1 failed)?( \| |$)"; }
bars_fit() { [ "$(bars | wc -l)" -gt 0 ] && bars | awk 'length > 80 {bad=1} END {exit bad}'; }
check "  progress bars: the nodes done (and failed) first" bars_lead
check "  none wider than the terminal" bars_fit
kill -TERM "$TTY"
wait "$TTY" 2>/dev/null
check "rollout stopped by max_fail" test "$(dep_field "$STOP_ID" .state)" = failed
check "reason names the rule" test "$(dep_field "$STOP_ID" .reason)" = "max_fail exceeded: 1 of 5 nodes failed, 0 tolerated"
check "the batch after the failure was skipped" \
	test "$(dep_field "$STOP_ID" '.nodes[] | select(.hostname=="gpu-node-04") | .state')" = skipped
check "first batch applied" \
	test "$(dep_field "$STOP_ID" '.nodes[] | select(.hostname=="gpu-a") | .state')" = succeeded
check "node-04 untouched (no nccl.conf)" test ! -e "$T/root-e/etc/nccl.conf"

# --- tolerated failure, then idempotence ------------------------------------------------------------
refused deploy --batch 2 --max-fail 1 >"$T/apply1.out" 2>&1
A1=$(last_id "$T/apply1.out")
check "tolerated failure ends partial" test "$(dep_field "$A1" .state)" = partial
check "node-04 applied this time" \
	test "$(dep_field "$A1" '.nodes[] | select(.hostname=="gpu-node-04") | .changed')" -gt 0
check "files written on node-04" grep -q NCCL_IB_HCA "$T/root-e/etc/nccl.conf"
refused deploy --max-fail 20% >"$T/apply2.out" 2>&1
A2=$(last_id "$T/apply2.out")
check "second apply: zero changes on every healthy node" \
	test "$(dep_field "$A2" '[.nodes[] | select(.hostname!="gpu-node-03") | .changed] | add')" = 0
check "second apply: healthy nodes succeeded" \
	test "$(dep_field "$A2" '[.nodes[] | select(.state=="succeeded")] | length')" = 4

# --- controller killed mid-rollout ---------------------------------------------------------------------
deploy --batch 1 --pause 2s --max-fail 1 --no-wait >"$T/resume.out" 2>&1 || fail "deploy --no-wait"
R=$(last_id "$T/resume.out")
done_count() { dep_field "$R" '[.nodes[] | select(.state=="succeeded" or .state=="failed")] | length'; }
done_at_least() { [ "$(done_count)" -ge "$1" ]; }
check "first node of the slow rollout finished" wait_for 20 done_at_least 1
kill -9 "$CTL_PID"
wait "$CTL_PID" 2>/dev/null
check "deployment still running in the database" test "$(q "SELECT state FROM deployments WHERE id = '$R'")" = running
# One writer: with no controller serving (its api.sock left behind by kill -9), railyard is
# refused (exit 5, unreachable) with one line naming the socket, and nothing is stored.
ndep() { q "SELECT count(*) FROM deployments"; }
ntok() { q "SELECT count(*) FROM enroll_tokens"; }
n_before=$(ndep) t_before=$(ntok)
out=$(deploy --no-wait 2>&1); rc=$?
check "deploy with no controller serving is refused: exit 5 ($rc)" test "$rc" -eq 5
check "  ... saying so in one line naming the api.sock ($out)" \
	bash -c '[ "$(printf "%s\n" "$1" | wc -l)" = 1 ] && grep -q "api.sock" <<<"$1"' _ "$out"
check "  ... and storing nothing" test "$(ndep)" = "$n_before"
"$RY" enrollment-token create --state-dir "$T/ctl" --cluster it >"$T/offline-token.out" 2>&1; rc=$?
check "enrollment-token create with no controller serving is refused: exit 5 ($rc)" test "$rc" -eq 5
check "  ... and stores no token" test "$(ntok)" = "$t_before"
start_controller --heartbeat-interval 300ms
check "restarted controller resumes and finishes the rollout" wait_for 60 \
	bash -c "[ \"\$('$RY' deployments $R --json --state-dir $T/ctl | jq -r .state)\" = partial ]"
"$RY" enrollment-token create --state-dir "$T/ctl" --cluster it >"$T/local-token.out" 2>&1
check "enrollment-token create over api.sock" grep -q '^token: ry1\.' "$T/local-token.out"
check "  ... with the CA fingerprint" grep -q "^ca-fingerprint: $FP$" "$T/local-token.out"
check "  ... audited as the host's local admin" bash -c "'$RY' audit --state-dir '$T/ctl' --limit 1 | grep -q ' local:uid $(id -u) *token.create '"
for name in a b c d e; do
	n=$(grep -c "plan $R: running" "$T/$name.log")
	check "agent $name ran the resumed deployment exactly once ($n)" test "$n" = 1
done
check "every targeted node has a result" test "$(done_count)" = 5

# --- session lost mid-plan: the agent finishes and reports on reconnect --------------------------
"$RY" deploy --state-dir "$T/ctl" --cluster it --playbook "$SRC/tests/fixtures/playbooks/good/slow.yaml" \
	--no-wait --max-fail 100% --canary 0 --pause 0s >"$T/slow.out" 2>&1 || fail "deploy slow"
S=$(last_id "$T/slow.out")
running_on_a() { grep -q "plan $S: running" "$T/a.log"; }
check "slow plan started on the agents" wait_for 20 running_on_a
kill -9 "$CTL_PID"
wait "$CTL_PID" 2>/dev/null
plan_done_on_a() { grep -q "plan $S: succeeded" "$T/a.log"; }
check "agent finishes the plan without a controller" wait_for 20 plan_done_on_a
start_controller --heartbeat-interval 300ms
check "results reported after reconnect" wait_for 30 \
	bash -c "[ \"\$('$RY' deployments $S --json --state-dir $T/ctl | jq -r .state)\" = succeeded ]"
check "the slow step's result was stored" \
	test "$(dep_field "$S" '[.nodes[].steps[] | select(.name=="wait a little" and .status=="changed")] | length')" = 6
check "agent a ran the slow plan once" test "$(grep -c "plan $S: running" "$T/a.log")" = 1

# --- the RoCE playbook on the RoCE node, and revalidate everywhere -----------------------------------
"$RY" deploy --timeout 60s --state-dir "$T/ctl" --cluster it --playbook "$T/h200-roce.yaml" \
	--canary 0 --pause 0s >"$T/roce.out" 2>&1
check "h200-roce applies cleanly to the RoCE node" grep -q "succeeded$" "$T/roce.out"
check "RoCE QoS set through mlnx_qos" grep -q "mlnx_qos .*--trust dscp" "$T/root-r/var/log/railyard-doubles.log"
refused "$RY" deploy --timeout 60s --state-dir "$T/ctl" --cluster it --playbook "$SRC/playbooks/revalidate.yaml" \
	--canary 0 --pause 0s >"$T/reval.out" 2>&1
V=$(last_id "$T/reval.out")
check "revalidate fails only the degraded node" \
	test "$(dep_field "$V" '[.nodes[] | select(.state=="failed") | .hostname] | join(",")')" = gpu-node-03
check "revalidate changes nothing" test "$(dep_field "$V" '[.nodes[].changed] | add')" = 0

for name in a b c d e r; do kill -TERM "${AGENT_PID[$name]}"; done
for name in a b c d e r; do wait "${AGENT_PID[$name]}"; done
kill -TERM "$CTL_PID"
wait "$CTL_PID"
check "controller exits 0" test $? -eq 0
check_sanitizers
finish
