#!/usr/bin/env bash
# Integration: a real controller and agents as processes on 127.0.0.1. Enrollment and its
# refusals, all online, kill -9 and restart, controller restart, facts refresh, revocation,
# clients with no/foreign certificates, malformed streams; then a clean shutdown.
. "$(dirname "$0")/lib.sh"

"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
start_controller --heartbeat-interval 300ms --heartbeat-timeout 1500ms
echo "controller at $ADDR (logs in $T)"

# --- enrollment and its refusals --------------------------------------------------------------
new_token 1
FP="sha256:$(printf '0%.0s' {1..64})"
check "wrong CA fingerprint refused" refused enroll x1 "$FIXTURES/h200-ib"
check "mismatch named, token not sent" log_has "$T/x1.enroll.log" "CA fingerprint mismatch"
FP=$(awk '/^ca-fingerprint:/ {print $2}' "$T/token.out")
check "no audit entry from the pinned-out attempt" \
	bash -c "! '$RY' audit --state-dir $T/ctl | grep -q refused"
check "enroll agent a1 (the same token still works)" enroll a1 "$FIXTURES/h200-ib"
check "private key is mode 0600" test "$(stat -c %a "$T/a1/node.key")" = 600
check "token reuse refused" refused enroll x2 $FIXTURES/h200-roce
check "reuse names the reason" log_has "$T/x2.enroll.log" "already used"
check "refused enrollment is audited" bash -c "'$RY' audit --state-dir $T/ctl | grep refused | grep -q 'already used'"

TOKEN=ry1.0000000000000000000000000000000000000000000000000000000000000000
check "unknown token refused" refused enroll x3 $FIXTURES/h200-roce
check "unknown token names the reason" log_has "$T/x3.enroll.log" "unknown"
new_token 1 1s # the shortest a token lives (the serving controller makes it)
sleep 1.2
check "expired token refused" refused enroll x4 $FIXTURES/h200-roce
check "expired token names the reason" log_has "$T/x4.enroll.log" "expired"
check "no node stored by refused enrollments" count_is enrolled 1

new_token 4
cp -a "$FIXTURES/h200-roce" "$T/roce-root"
check "enroll agent a2" enroll a2 "$T/roce-root"
check "enroll agent a3" enroll a3 "$FIXTURES/h200-degraded"
check "enroll a rogue identity" enroll rogue "$FIXTURES/h200-ib-2" --hostname rogue-node
check "duplicate host name refused" refused enroll x5 $FIXTURES/h200-ib
check "duplicate names the reason" log_has "$T/x5.enroll.log" "already enrolled"

# --- sessions -----------------------------------------------------------------------------------
start_agent a1 "$FIXTURES/h200-ib"
start_agent a2 "$T/roce-root"
start_agent a3 "$FIXTURES/h200-degraded"
check "3 agents online" wait_for 20 count_is online 3
check "facts stored: degraded node shows a DOWN port" bash -c \
	"'$RY' node show gpu-node-03 --json --state-dir $T/ctl | jq -e '.facts.rdma.devices[] | select(.ports[0].state==\"DOWN\")' >/dev/null"
A1_ID=$(node_field gpu-node-01 id)

kill -9 "${AGENT_PID[a1]}"
check "kill -9 of an agent: offline after the heartbeat timeout" wait_for 10 node_state_is gpu-node-01 offline
check "other agents stay online" count_is online 2
start_agent a1 "$FIXTURES/h200-ib"
check "restarted agent online again" wait_for 20 node_state_is gpu-node-01 online
check "same node id, no re-enrollment" test "$(node_field gpu-node-01 id)" = "$A1_ID"

# Facts refresh: change the RoCE node's kernel release, then SIGHUP asks every agent.
echo "6.1.0-99-amd64" >"$T/roce-root/proc/sys/kernel/osrelease"
kill -HUP "$CTL_PID"
check "SIGHUP refreshes facts from agents" wait_for 10 \
	bash -c "[ \"\$('$RY' node show gpu-node-02 --json --state-dir $T/ctl | jq -r '.facts.kernel.release')\" = 6.1.0-99-amd64 ]"

# Controller restart: agents reconnect on their own.
kill -TERM "$CTL_PID"
check "controller exits cleanly on SIGTERM" wait_for 15 exited "$CTL_PID"
wait "$CTL_PID"
check "controller exit status 0" test $? -eq 0
# No controller serves: what it stored as it stopped is read with sqlite3.
check "nodes offline while the controller is down" test "$(sqlite3 "$T/ctl/controller.db" \
	"SELECT count(*) >= 3 AND sum(state = 'online') = 0 FROM nodes")" = 1
# Restarted for a fleet of 6 under 2 heartbeats a second: Welcome stretches the 300 ms to 3 s,
# and each session's 1.5 s timeout with it (15 s).
log_mark=$(wc -l <"$T/controller.log")
start_controller --heartbeat-interval 300ms --heartbeat-timeout 1500ms --expected-agents 6 \
	--max-heartbeat-rate 2
check "agents reconnect to the restarted controller" wait_for 30 count_is online 3
check "Welcome tells the stretched heartbeat (3000 ms)" wait_for 10 log_has "$T/a1.log" "heartbeat 3000 ms"
ADMIN=$("$CTL" api-token create --name it-admin --role admin --state-dir "$T/ctl" | awk '/^token:/ {print $2}')
metric() { # NAME{LABELS}: its value on /metrics
	curl -s --cacert "$T/ctl/ca.crt" -H "Authorization: Bearer $ADMIN" "$(cat "$T/ctl/api.addr")/metrics" |
		awk -v m="$1" '$1 == m { print $2 }'
}
check "/metrics: the interval told now" test "$(metric railyard_heartbeat_interval_seconds)" = 3.000
heartbeats_at_least() { [ "$(metric 'railyard_rpc_messages_total{kind="Heartbeat"}')" -ge "$1" ]; }
check "two stretched heartbeats from each agent" wait_for 20 heartbeats_at_least 6
check "no session ended at the unstretched timeout meanwhile" \
	bash -c "! tail -n +$((log_mark + 1)) '$T/controller.log' | grep -q 'heartbeat timeout'"
check "all still online" count_is online 3

# --- refusals on Connect ---------------------------------------------------------------------------
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=intruder \
	-keyout "$T/other.key" -out "$T/other.crt" >/dev/null 2>&1 || die "openssl"
check "client without a certificate refused (UNAUTHENTICATED)" \
	"$ROGUE" --target "$ADDR" --ca "$T/ctl/ca.crt" --mode hello --expect UNAUTHENTICATED
check "controller log says why (no certificate)" wait_for 5 log_has "$T/controller.log" "no client certificate"
check "certificate from another CA refused (UNAVAILABLE)" \
	"$ROGUE" --target "$ADDR" --ca "$T/ctl/ca.crt" --cert "$T/other.crt" --key "$T/other.key" \
	--mode hello --expect UNAVAILABLE
check "controller log says why (foreign certificate)" wait_for 5 log_has "$T/controller.log" "certificate verify failed"
R="--target $ADDR --ca $T/ctl/ca.crt --cert $T/rogue/node.crt --key $T/rogue/node.key"
check "valid certificate accepted" "$ROGUE" $R --mode hello --expect WELCOME
for m in garbage no-hello bad-seq no-body bad-facts huge-facts; do
	check "malformed stream ($m) gets INVALID_ARGUMENT" "$ROGUE" $R --mode $m --expect INVALID_ARGUMENT
done
check "malformed facts were not stored" bash -c \
	"[ \"\$('$RY' node show rogue-node --json --state-dir $T/ctl | jq -r '.facts | type')\" = object ]"
check "the real agents are still online" count_is online 3
check "controller still running" kill -0 "$CTL_PID"

# --- revocation ---------------------------------------------------------------------------------------
"$RY" node revoke gpu-node-02 --state-dir "$T/ctl" >/dev/null || fail "node revoke"
check "revoked agent is cut off and exits" wait_for 10 exited "${AGENT_PID[a2]}"
wait "${AGENT_PID[a2]}"
check "revoked agent exit status 3" test $? -eq 3
check "revoked node state" node_state_is gpu-node-02 revoked
start_agent a2 "$T/roce-root"
check "revoked node refused on reconnect" wait_for 10 exited "${AGENT_PID[a2]}"
check "controller log names the revocation" log_has "$T/controller.log" "revoked"
check "the other agents are unaffected" count_is online 2
# A certificate's serial in the revocation table refuses it even while its node is not revoked
# (the controller takes the serial recorded at enrollment for the certificate it issued).
rogue_id=$("$RY" nodes --json --state-dir "$T/ctl" | jq -r '.items[] | select(.hostname=="rogue-node") | .id')
rogue_serial=$(openssl x509 -noout -serial -in "$T/rogue/node.crt" | cut -d= -f2)
sqlite3 -cmd ".timeout 5000" "$T/ctl/controller.db" \
	"INSERT INTO revoked_certs (serial, node_id, revoked_at) VALUES ('$rogue_serial', '$rogue_id', 0);"
check "a revoked serial is refused at Connect (PERMISSION_DENIED)" \
	"$ROGUE" $R --mode hello --expect PERMISSION_DENIED
check "... saying so" log_has "$T/controller.log" "certificate of $rogue_id is revoked"

# --- clean shutdown ------------------------------------------------------------------------------------
for a in a1 a3; do kill -TERM "${AGENT_PID[$a]}"; done
for a in a1 a3; do
	wait "${AGENT_PID[$a]}"
	check "agent $a exits 0 on SIGTERM" test $? -eq 0
done
check "nodes offline after their agents stop" wait_for 10 count_is online 0
kill -TERM "$CTL_PID"
wait "$CTL_PID"
check "controller exits 0" test $? -eq 0
# An agent whose controller is gone stops on SIGTERM at once, not after its connect timeout (10 s)
runs=$(grep -c 'railyard-agent .* running' "$T/a1.log")
start_agent a1 "$FIXTURES/h200-ib"
check "agent a1 runs without a controller" wait_for 10 bash -c \
	"[ \$(grep -c 'railyard-agent .* running' '$T/a1.log') -gt $runs ]"
kill -TERM "${AGENT_PID[a1]}"
check "... stops within 5 s of SIGTERM (its connect timeout is 10 s)" wait_for 5 exited "${AGENT_PID[a1]}"
wait "${AGENT_PID[a1]}"
check "... with status 0" test $? -eq 0
check_sanitizers
finish
