#!/usr/bin/env bash
# Integration: what a node may report, and what outsiders get. Enrolled nodes speaking the
# protocol with their own certificates (rogue_client) try to write into a deployment they are not
# part of, rewrite a step after the deployment succeeded, finish a plan they were never sent, and
# send 150 StepEvents of 1 MiB; a flood of bad-token enrollments; values with terminal controls
# in facts, messages and names; and the smaller defects (same node twice in a benchmark, a node
# without facts, a playbook naming a module "--version").
. "$(dirname "$0")/lib.sh"

PREP=$SRC/tests/fixtures/prepare-sysroot.sh
dep_field() { "$RY" deployments "$1" --json --state-dir "$T/ctl" | jq -r "$2"; }
last_id() { awk '/^deployment d-/ {sub(":", "", $2); print $2; exit}' "$1"; }
rogue() { # rogue NAME [options]: rogue_client with NAME's certificate
	local name=$1; shift
	"$ROGUE" --target "$ADDR" --ca "$T/ctl/ca.crt" --cert "$T/$name/node.crt" --key "$T/$name/node.key" "$@"
}
no_esc() { ! LC_ALL=C grep -q $'\e' "$@"; }
# audit_refusals PATTERN: sets N, the audit rows matching it (10000: the CLI's largest --limit).
# Not in a subshell, so that a refused read ends the test here rather than counting 0.
audit_refusals() {
	local rows
	rows=$("$RY" audit --state-dir "$T/ctl" --limit 10000) || die "railyard audit failed"
	N=$(grep -c "$1" <<<"$rows" || true)
}

"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
start_controller --heartbeat-interval 300ms --heartbeat-timeout 5000ms

# --- names with terminal controls are refused ---------------------------------------------------------
out=$("$RY" enrollment-token create --state-dir "$T/ctl" --cluster $'a\n\e[31mevil' 2>&1); rc=$?
# The API refuses it (400, exit 1) and names the field, not the value (the old CLI: exit 2,
# the name shown escaped).
check "a cluster name with control characters is refused (exit $rc)" test "$rc" -eq 1
check "the refusal names the field" grep -q 'invalid_argument: bad cluster name (field cluster)' <<<"$out"
check "... and carries no raw escape" no_esc <<<"$out"
check "nothing was stored for it" bash -c "! '$RY' audit --state-dir '$T/ctl' | grep -q evil"

# --- nodes: a real agent, two scripted members, one node of another cluster ---------------------------
new_token 4
"$PREP" "$FIXTURES/h200-ib" "$T/root-a" >/dev/null || die "prepare a"
enroll a "$T/root-a" --hostname node-a || die "enroll a"
enroll m "$FIXTURES/h200-ib-2" --hostname rogue-m || die "enroll m"
enroll w "$FIXTURES/h200-ib-2" --hostname rogue-w || die "enroll w"
enroll silent "$FIXTURES/h200-ib-2" --hostname silent-node || die "enroll silent"
"$RY" enrollment-token create --state-dir "$T/ctl" --cluster other >"$T/token-other.out" || die "token other"
TOKEN=$(awk '/^token:/ {print $2}' "$T/token-other.out")
enroll o "$FIXTURES/h200-roce" --hostname outsider || die "enroll outsider"
start_agent a "$T/root-a"
check "node-a online" wait_for 20 node_state_is node-a online

# --- TLS: a full handshake with a node's certificate brings no session tickets --------------------------
# (agents never resume a session; OpenSSL's two tickets a handshake were a connect storm's CPU for
# nothing: rpc_tls_no_session_tickets(), docs/scaling.md)
# (s_client's input stays open for a second: a ticket comes after the handshake, and OpenSSL's
# own s_server sends two in that time)
sleep 1 | timeout 10 openssl s_client -connect "$ADDR" -alpn h2 -servername railyard-controller \
	-CAfile "$T/ctl/ca.crt" -cert "$T/a/node.crt" -key "$T/a/node.key" -msg >"$T/s_client.out" 2>&1
check "a TLS 1.3 handshake with node-a's certificate completes" \
	grep -aq "Verify return code: 0 (ok)" "$T/s_client.out"
check "... and the controller sends no session ticket" \
	bash -c "! grep -aq NewSessionTicket '$T/s_client.out'"

cat >"$T/small.yaml" <<'EOF'
name: small
version: "1"
steps:
  - name: first
    type: file
    params:
      path: /etc/ry-small/one
      content: "1\n"
  - name: second
    type: file
    params:
      path: /etc/ry-small/two
      content: "2\n"
EOF

# rogue-m answers its plan honestly (with a message full of terminal controls), then tries to
# rewrite its first step as failed once the deployment has succeeded.
rogue m --mode agent --plans 1 --forge step-failed --done-message $'done\e[2J\nFORGED ROW  node-z  succeeded' >"$T/m.out" 2>&1 &
M_PID=$!
PIDS+=("$M_PID")
check "rogue-m online" wait_for 20 node_state_is rogue-m online
# railyard deploy does not print the nodes not targeted: they are in the API's reply, which
# --no-wait --json prints; the deployment is then followed to its end.
"$RY" deploy --state-dir "$T/ctl" --cluster it --playbook "$T/small.yaml" --canary 0 --pause 0s \
	--no-wait --json >"$T/d1.json" 2>"$T/d1.err"
D1=$(jq -r '.id // empty' "$T/d1.json")
check "a node without facts is not targeted, and the reason is right" jqt '.skipped |
	any(.[]; .hostname == "silent-node" and .reason == "no facts yet (its agent has never connected)")' "$T/d1.json"
d1_ended() { [[ "$(dep_field "$D1" .state)" =~ ^(succeeded|partial|failed|cancelled)$ ]]; }
wait_for 60 d1_ended
check "deployment with the honest member succeeded" test "$(dep_field "$D1" .state)" = succeeded
wait "$M_PID"
check "rogue-m's rewrite of step 0 after success was refused" \
	grep -q "^ERROR report_refused: step 0 of deployment $D1 was already reported as ok" "$T/m.out"
check "its step 0 still says ok" \
	test "$(dep_field "$D1" '.nodes[] | select(.hostname=="rogue-m") | .steps[0].status')" = ok
check "the deployment still says succeeded" test "$(dep_field "$D1" .state)" = succeeded
check "the refusal is audited, naming the deployment" \
	bash -c "'$RY' audit --state-dir '$T/ctl' | grep report.refuse | grep -q '$D1'"
check "and logged with a count" log_has "$T/controller.log" "StepEvent refused: step 0 of deployment $D1 was already reported as ok; a result is never overwritten (1 refused in this session)"

# --- terminal controls from a node never reach a terminal raw ---------------------------------------------
"$RY" deployments "$D1" --state-dir "$T/ctl" >"$T/d1-show.out"
check "deployments ID: the node's message is shown escaped" grep -q 'done\\x1b\[2J\\nFORGED ROW' "$T/d1-show.out"
check "deployments ID: no raw escape" no_esc "$T/d1-show.out"
check "deployments ID: no forged row (one line per node)" test "$(grep -c 'FORGED ROW' "$T/d1-show.out")" = 1
# An honest agent drops such a value from its facts (its collector says "not UTF-8 text"); a
# node that sends it anyway gets it stored, and shown escaped.
printf '{"kernel": {"release": "6.1.0\\u001b[31m\\nFORGED  node  online"}}' >"$T/evil-facts.json"
rogue w --mode hello --facts "$T/evil-facts.json" --expect WELCOME >/dev/null 2>&1
check "the controller stored rogue-w's odd facts" bash -c \
	"'$RY' node show rogue-w --json --state-dir '$T/ctl' | jq -r '.facts.kernel.release' | grep -q FORGED"
"$RY" nodes --state-dir "$T/ctl" >"$T/nodes.out"
check "nodes: no raw escape" no_esc "$T/nodes.out"
check "nodes: one line per node and the header" test "$(wc -l <"$T/nodes.out")" = "$(("$("$RY" nodes --json --state-dir "$T/ctl" | jq '.items | length')" + 1))"
check "nodes: the value is shown escaped" grep -q '6.1.0\\x1b\[31m\\nFORGED' "$T/nodes.out"

# --- an outsider writes into a deployment of another cluster --------------------------------------------
rogue o --mode forge --forge step-failed --deployment "$D1" >"$T/o1.out" 2>&1
check "a node of another cluster cannot add a step to the deployment" \
	grep -q "^ERROR report_refused: node .* is not part of deployment $D1" "$T/o1.out"
rogue o --mode forge --forge done-failed --deployment "$D1" >"$T/o2.out" 2>&1
check "... nor end it" grep -q "^ERROR report_refused: node .* is not part of deployment $D1" "$T/o2.out"
check "nothing of the outsider is stored in it" \
	test "$(dep_field "$D1" '[.nodes[] | select(.hostname=="outsider")] | length')" = 0
check "the deployment is unchanged" test "$(dep_field "$D1" '.state + " " + ([.nodes[].steps[]] | length | tostring)')" = "succeeded 4"
# A message read ahead of one that ends the session is not handled (dropped; a node would send it
# again on its next session): the forged StepEvent after a 2 MiB FactsUpdate is never refused.
refused_before=$(grep -c "(outsider): StepEvent refused" "$T/controller.log")
rogue o --mode forge --forge huge-facts-step --deployment "$D1" >"$T/o3.out" 2>&1
check "a FactsUpdate over 1 MiB ends the session" \
	grep -q "^STREAM ENDED INVALID_ARGUMENT: FactsUpdate over 1 MiB" "$T/o3.out"
check "... and the StepEvent read ahead of it was not handled" \
	test "$(grep -c "(outsider): StepEvent refused" "$T/controller.log")" = "$refused_before"

# --- 150 StepEvents of 1 MiB --------------------------------------------------------------------------------
size_before=$(stat -c %s "$T/ctl/controller.db")
wal_before=$(stat -c %s "$T/ctl/controller.db-wal" 2>/dev/null || echo 0)
rogue m --mode forge --forge big-steps:150 --deployment "$D1" >"$T/big.out" 2>&1
check "150 StepEvents of 1 MiB: every one refused" test "$(grep -c '^ERROR invalid_field: StepEvent: diff over 256 KiB' "$T/big.out")" = 150
size_after=$(stat -c %s "$T/ctl/controller.db")
wal_after=$(stat -c %s "$T/ctl/controller.db-wal" 2>/dev/null || echo 0)
grew=$((size_after + wal_after - size_before - wal_before))
check "the database grew by less than 1 MB ($grew bytes)" test "$grew" -lt 1000000
audit_refusals 'more refused since the last entry'
check "one audit row stands for the flood" test "$N" -le 1
check "the session survived the refusals" bash -c "! grep -q 'too many refused reports' '$T/controller.log'"

# --- a node still waiting in a later batch ends a plan it was never sent ----------------------------------
"$RY" deploy --state-dir "$T/ctl" --cluster it --playbook "$T/small.yaml" --canary 0 --batch 1 \
	--pause 120s --max-fail 0 --no-wait >"$T/d2.out" 2>&1 || fail "deploy d2"
D2=$(last_id "$T/d2.out")
w_state() { dep_field "$D2" '.nodes[] | select(.hostname=="rogue-w") | .state'; }
check "node-a's batch finished; the rollout pauses" wait_for 30 bash -c \
	"[ \"\$('$RY' deployments $D2 --json --state-dir '$T/ctl' | jq -r '.nodes[] | select(.hostname==\"node-a\") | .state')\" = succeeded ]"
check "rogue-w is waiting" test "$(w_state)" = waiting
rogue w --mode forge --forge done-succeeded --deployment "$D2" >"$T/w1.out" 2>&1
check "a waiting node's ApplyDone succeeded is refused" \
	grep -q "^ERROR report_refused: deployment $D2 never sent its plan to node" "$T/w1.out"
rogue w --mode forge --forge done-failed --deployment "$D2" >"$T/w2.out" 2>&1
check "so is its ApplyDone failed" grep -q "^ERROR report_refused: deployment $D2 never sent its plan" "$T/w2.out"
check "rogue-w is still waiting" test "$(w_state)" = waiting
check "the rollout was not stopped by it (max_fail 0)" test "$(dep_field "$D2" .state)" = running

# --- the same rules for benchmark reports -----------------------------------------------------------------
# Its client (rogue-m) is gone: the run stays pending, whoever comes online.
"$RY" bench run --state-dir "$T/ctl" --from rogue-m --to rogue-w --kind lat --timeout 60s --no-wait \
	>"$T/b1.out" 2>&1 || fail "bench run"
B1=$(awk '/^bench b-/ {sub(":", "", $2); print $2; exit}' "$T/b1.out")
rogue o --mode forge --forge bench-result --deployment "$B1" >"$T/ob.out" 2>&1
check "a node that is not part of a benchmark cannot report its result" \
	grep -q "^ERROR report_refused: node .* is not part of bench $B1" "$T/ob.out"
rogue w --mode forge --forge bench-ready --deployment "$B1" >"$T/wb.out" 2>&1
check "its server cannot say it listens before it was sent the order" \
	grep -q "^ERROR report_refused: bench $B1 has not been sent to node" "$T/wb.out"
rogue w --mode forge --forge bench-result:client --deployment "$B1" >"$T/wb3.out" 2>&1
check "its server cannot report as its client (the role must be the node's)" \
	grep -q "^ERROR report_refused: bench $B1: node .* is not its client side" "$T/wb3.out"
rogue w --mode forge --forge bench-result --deployment b-nosuch >"$T/wb2.out" 2>&1
check "a result for a benchmark that does not exist is refused" \
	grep -q "^ERROR report_refused: BenchResult for unknown bench b-nosuch" "$T/wb2.out"
check "the run has no result from any of them" \
	test "$("$RY" bench show "$B1" --json --state-dir "$T/ctl" | jq -r '[.result, .server_result, .server_port] | map(select(. != null)) | length')" = 0
"$RY" bench cancel "$B1" --state-dir "$T/ctl" --no-wait >/dev/null 2>&1

# --- reading ahead: an ack covers only what is stored; one Receipt per commit -----------------------------
# rogue-m answers a 20-step plan, a Heartbeat after each StepEvent, while another process holds the
# database's write lock. The controller reads ahead of what it cannot store yet; a RefreshFacts
# (SIGHUP) sent meanwhile carries the session's ack, which must not cover the first StepEvent (nor the
# heartbeats read after it). Once the lock goes, the run is stored and acknowledged together.
{
	printf 'name: burst\nversion: "1"\nsteps:\n'
	for i in $(seq 0 19); do
		printf '  - name: b%d\n    type: file\n    params:\n      path: /etc/ry-burst/f%d\n      content: "%d\\n"\n' "$i" "$i" "$i"
	done
} >"$T/burst.yaml"
metric() { curl -s --unix-socket "$T/ctl/api.sock" http://localhost/metrics | awk -v k="$1" '$1 == k { print $2 }'; }
heartbeats_read() { [ "$(metric 'railyard_rpc_messages_total{kind="Heartbeat"}')" -ge "$1" ]; }
rogue m --mode agent --plans 1 --gate "$T/gate" --heartbeats >"$T/burst.out" 2>&1 &
B_PID=$!
PIDS+=("$B_PID")
check "rogue-m online again" wait_for 20 node_state_is rogue-m online
"$RY" deploy --state-dir "$T/ctl" --cluster it --playbook "$T/burst.yaml" --canary 0 --pause 0s \
	--max-fail 100% --no-wait >"$T/d3.out" 2>&1
D3=$(last_id "$T/d3.out")
check "rogue-m has the 20-step plan" wait_for 20 grep -q "^WAITING $D3" "$T/burst.out"
(
	echo "BEGIN IMMEDIATE;"
	echo "INSERT INTO audit_log (at, actor, action, outcome) VALUES (0, 'test', 'lock', 'held');"
	until [ -e "$T/unlock" ]; do sleep 0.1; done
	echo "COMMIT;"
) | sqlite3 -cmd ".timeout 5000" "$T/ctl/controller.db" &
LOCKER=$!
locked() { ! sqlite3 -cmd ".timeout 0" "$T/ctl/controller.db" "BEGIN IMMEDIATE; ROLLBACK;" >/dev/null 2>&1; }
check "another process holds the write lock" wait_for 10 locked
hb0=$(metric 'railyard_rpc_messages_total{kind="Heartbeat"}')
touch "$T/gate"
check "rogue-m sent 20 StepEvents, 20 Heartbeats and its ApplyDone" wait_for 20 grep -q "^SENT" "$T/burst.out"
read -r _ first_seq last_seq < <(grep "^SENT" "$T/burst.out")
check "the controller read the heartbeats behind the StepEvents it cannot store" \
	wait_for 20 heartbeats_read $((hb0 + 20))
kill -HUP "$CTL_PID"
check "a RefreshFacts came meanwhile" wait_for 20 grep -q "^MSG refresh_facts" "$T/burst.out"
rf_ack=$(awk '$1 == "MSG" && $2 == "refresh_facts" { print $3; exit }' "$T/burst.out")
check "its ack ($rf_ack) covers nothing from the first StepEvent ($first_seq) on" test "$rf_ack" -lt "$first_seq"
touch "$T/unlock"
wait "$LOCKER"
check "after the lock, everything is acknowledged" wait_for 30 grep -q "^RECEIPTS" "$T/burst.out"
receipts=$(awk '$1 == "RECEIPTS" { print $2 }' "$T/burst.out")
check "... by fewer Receipts ($receipts) than the 21 reports" test "$receipts" -lt 21
check "... and no ack went past the last message ($last_seq)" \
	bash -c "! awk '\$1 == \"MSG\" && \$3 > $last_seq' '$T/burst.out' | grep -q ."
check "rogue-m's 20 steps are stored, in order" test "$(dep_field "$D3" \
	'[.nodes[] | select(.hostname=="rogue-m") | .steps[].name] | join(",")')" = "$(seq -s, -f 'b%g' 0 19)"
wait "$B_PID"

# --- the smaller defects --------------------------------------------------------------------------------------
nbench() { "$RY" bench list --json --state-dir "$T/ctl" | jq '.items | length'; }
runs_before=$(nbench)
out=$("$RY" bench run --state-dir "$T/ctl" --from node-a --to node-a --kind lat 2>&1); rc=$?
check "bench run with --from and --to the same node is refused at once (exit $rc)" test "$rc" -eq 1
check "... saying so" grep -q "name the same node" <<<"$out"
check "... and stores nothing ($runs_before runs before)" test "$(nbench)" = "$runs_before"
cat >"$T/dash.yaml" <<'EOF'
name: dash
version: "1"
steps:
  - name: load
    type: kmod
    params:
      name: --version
EOF
out=$("$RY" deploy --state-dir "$T/ctl" --cluster it --playbook "$T/dash.yaml" 2>&1); rc=$?
check "a kmod step named --version is refused before anything is stored (exit $rc)" test "$rc" -ne 0
check "... naming the place" grep -q "dash.yaml:7:13: name: bad module name \"--version\"" <<<"$out"
check "... and no deployment was created" test "$("$RY" deployments --json --state-dir "$T/ctl" | jq '[.items[] | select(.playbook=="dash")] | length')" = 0

# --- a flood of bad-token enrollments (last: it blocks 127.0.0.1 for a while) ----------------------------------
audit_refusals "node.enroll.*refused"
before=$N
start=$(date +%s%N)
"$ROGUE" --target "$ADDR" --ca "$T/ctl/ca.crt" --mode flood --count 3000 >"$T/flood.out" 2>&1
ms=$((($(date +%s%N) - start) / 1000000))
echo "3000 bad-token Enroll calls in $ms ms: $(tr '\n' ' ' <"$T/flood.out")"
check "at most 10 reach the token check" test "$(awk '$1=="PERMISSION_DENIED" {print $2}' "$T/flood.out")" -le 10
check "the rest are turned away (RESOURCE_EXHAUSTED)" test "$(awk '$1=="RESOURCE_EXHAUSTED" {print $2}' "$T/flood.out")" -ge 2990
check "the refusal says when to retry" grep -q "too many refused enrollment attempts from 127.0.0.1; retry in" "$T/flood.out"
audit_refusals "node.enroll.*refused"
after=$N
check "the audit log got at most 2 rows for 3000 refusals ($((after - before)))" test $((after - before)) -le 2
check "the controller log too" test "$(grep -c "enrollment refused for" "$T/controller.log")" -le 4
check "node-a's session was not disturbed" node_state_is node-a online

# --- nothing raw anywhere -----------------------------------------------------------------------------------------------
"$RY" audit --state-dir "$T/ctl" --limit 1000 >"$T/audit.out"
check "audit: no raw escape" no_esc "$T/audit.out"
check "controller log: no raw escape" no_esc "$T/controller.log"

kill -TERM "${AGENT_PID[a]}"
wait "${AGENT_PID[a]}"
kill -TERM "$CTL_PID"
wait "$CTL_PID"
check "controller exits 0" test $? -eq 0
check_sanitizers
finish
