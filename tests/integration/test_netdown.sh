#!/usr/bin/env bash
# Integration: the network between an agent and its controller stops delivering anything (the
# controller's side of the wire goes down: no FIN, no RST, nothing acknowledged). The agent's
# keepalive PING would take 120 s + 30 s; the socket's TCP_USER_TIMEOUT (the keepalive's 30 s
# answer timeout, which gRPC sets on the agent's socket) ends the connection once a heartbeat
# has gone unacknowledged for 30 s. The controller marks the node offline after its heartbeat
# timeout, and when the wire is back the agent reconnects by itself.
# The controller serves inside a network namespace of the test's own, joined to this one by a
# veth pair on a private /30; nothing leaves the machine. Needs root and `ip` (skipped otherwise).
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (a network namespace)"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: needs ip (iproute2)"; exit 77; }

NS=railyard-nd$$
H=rynd$$h C=rynd$$c # veth names: at most 15 characters
NET=10.213.$(($$ % 250)).
netdown_cleanup() {
	ip netns del "$NS" 2>/dev/null
	ip link del "$H" 2>/dev/null
	cleanup
}
trap netdown_cleanup EXIT
ip netns add "$NS" 2>/dev/null || { echo "SKIP: cannot make a network namespace here"; exit 77; }
ip link add "$H" type veth peer name "$C" && ip link set "$C" netns "$NS" &&
	ip addr add "${NET}1/30" dev "$H" && ip link set "$H" up &&
	ip -n "$NS" addr add "${NET}2/30" dev "$C" && ip -n "$NS" link set "$C" up &&
	ip -n "$NS" link set lo up || { echo "SKIP: cannot make a veth pair here"; exit 77; }

"$CTL" init --state-dir "$T/ctl" >/dev/null || die "init"
ip netns exec "$NS" "$CTL" serve --state-dir "$T/ctl" --listen "${NET}2:7443" \
	--http 127.0.0.1:0 --heartbeat-interval 2s >>"$T/controller.log" 2>&1 &
CTL_PID=$!
PIDS+=("$CTL_PID")
wait_for 20 test -s "$T/ctl/controller.addr" || die "controller did not start (see $T/controller.log)"
ADDR=${NET}2:7443
new_token 1
enroll a "$FIXTURES/h200-ib" --hostname node-a || die "enroll (see $T/a.enroll.log)"
start_agent a "$FIXTURES/h200-ib"
check "the agent is online across the veth pair (default --keepalive)" wait_for 30 node_state_is node-a online

ip -n "$NS" link set "$C" down
down_at=$(date +%s)
check "the controller marks the node offline (heartbeat timeout)" wait_for 30 node_state_is node-a offline
# 60 s: twice the user timeout, well short of the keepalive's 150 s.
check "the agent ends the dead connection itself, before its keepalive would" \
	wait_for 60 log_has "$T/a.log" "session ended"
echo "agent ended its session $(($(date +%s) - down_at)) s after the wire went down:" \
	"$(grep -m1 'session ended' "$T/a.log" | sed 's/.*warn: //')"

ip -n "$NS" link set "$C" up
check "with the wire back the agent reconnects" wait_for 60 node_state_is node-a online
check "  ... in a second session" test "$(grep -c 'connected to' "$T/a.log")" -ge 2
check_sanitizers
finish
