#!/usr/bin/env bash
# Integration: the agents' health watchers (docs/health.md). Three agents on fixture nodes whose
# sysroots carry a kernel log (dev/kmsg, a file of records) and port counters: an Xid 79 written
# to the log makes its node failing with the Xid named (REST, `railyard nodes`, `node health`),
# a critical event makes the cluster's sign-off stale for that node (with the event as the
# reason), a repeat inside the dedup window is not a second event, a restarted agent does not report it
# again (the same boot), the kernel's transmit watchdog is named with its netdev, a rising
# symbol-error rate, a port going DOWN and transmit timeouts on its netdev fail the other node,
# /metrics names the unhealthy nodes and counts the events, acknowledging returns a node to
# healthy, and an agent-side limit on the interval is refused with its name.
. "$(dirname "$0")/lib.sh"

PREP=$SRC/tests/fixtures/prepare-sysroot.sh
"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
start_controller --heartbeat-interval 300ms
new_token 3
IB=sys/class/infiniband/mlx5_0/ports/1
for spec in a:gpu-a b:gpu-b c:gpu-c; do
	IFS=: read -r name host <<<"$spec"
	"$PREP" "$FIXTURES/h200-ib" "$T/root-$name" || die "prepare $name"
	mkdir -p "$T/root-$name/dev" "$T/root-$name/proc/sys/kernel/random" "$T/root-$name/$IB/counters"
	: >"$T/root-$name/dev/kmsg"
	echo "6b3a1f0e-2c4d-4e5f-8a9b-0c1d2e3f4a5b" >"$T/root-$name/proc/sys/kernel/random/boot_id"
	for c in symbol_error link_downed port_rcv_errors; do echo 0 >"$T/root-$name/$IB/counters/$c"; done
	# mlx5_0's netdev (the fixture's only one, IPoIB) with one transmit queue.
	mkdir -p "$T/root-$name/sys/class/net/ibp22s0/queues/tx-0"
	echo 0 >"$T/root-$name/sys/class/net/ibp22s0/queues/tx-0/tx_timeout"
	enroll "$name" "$T/root-$name" --hostname "$host" || die "enroll $name"
	start_agent "$name" "$T/root-$name" --health-interval 1s
done
check "3 agents online" wait_for 20 count_is online 3
check "both healthy before anything happened" \
	bash -c "[ \"\$('$RY' nodes --json --state-dir '$T/ctl' | jq -r '[.items[].health.state] | unique | join(\",\")')\" = healthy ]"

# A signed baseline before anything happens (the loose tcp baseline: its verdict is not the
# point here), so that a critical event afterwards makes the sign-off stale for that node.
PB=$T/tcp-baseline.yaml
loose_baseline "$PB" || die "loose_baseline"
"$RY" deploy --timeout 60s --state-dir "$T/ctl" --cluster it --playbook "$PB" --canary 0 --pause 0s \
	>"$T/deploy.out" 2>&1
check "the baseline playbook is deployed" test $? -eq 0
"$RY" validate --state-dir "$T/ctl" --cluster it --playbook "$PB" --quick --signoff --json \
	>"$T/val.json" 2>"$T/val.err"
check "a signed baseline" test -n "$(jq -r '.signoff.id // empty' "$T/val.json")"

health() { node_field "$1" health.state; }
events() { # events HOST [jq filter]: how many of the node's stored events match
	"$RY" node health "$1" --json --state-dir "$T/ctl" | jq "[.events[] | select(${2:-true})] | length"
}
kmsg() { printf '%s\n' "$2" >>"$T/root-$1/dev/kmsg"; }
events_are() { [ "$(events "$1" "$2")" = "$3" ]; } # events_are HOST FILTER N
health_is() { [ "$(health "$1")" = "$2" ]; }

# --- the kernel log ----------------------------------------------------------------------------
kmsg a "6,100,1000,-;Linux version 6.1.0-28-amd64"
kmsg a "3,101,2000,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
check "Xid 79 makes gpu-a failing" wait_for 20 health_is gpu-a failing
"$RY" node show gpu-a --state-dir "$T/ctl" >"$T/show-a.out" 2>&1
check "  node show names it first: the Xid, its meaning and the GPU" \
	grep -q "^  - Xid 79: GPU has fallen off the bus (0000:18:00" "$T/show-a.out"
check "  stored with the kernel's line as evidence" \
	test "$(events gpu-a '.kind == "xid" and .severity == "critical" and (.detail | contains("fallen off the bus."))')" = 1
check "  gpu-b stays healthy" test "$(health gpu-b)" = healthy
check "the sign-off is stale for gpu-a, with the event as the reason" bash -c \
	"[ \"\$('$RY' node show gpu-a --json --state-dir '$T/ctl' | jq -r '.signoff.state + \"|\" + (.signoff.reasons | join(\";\"))')\" = 'stale|critical health event since the sign-off: Xid 79: GPU has fallen off the bus (0000:18:00)' ]"
check "  and current for gpu-b" test "$(node_field gpu-b signoff.state)" = current
# The same Xid again inside the dedup window, then an AER line: once the AER is stored, the
# repeat (read before it) is known not to have become a second event.
kmsg a "3,102,3000,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
kmsg a "4,103,4000,-;pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0"
check "an AER corrected error is a warning event" wait_for 20 events_are gpu-a '.kind == "kmsg" and .severity == "warning"' 1
check "  the repeated Xid inside the window is not a second event" test "$(events gpu-a '.kind == "xid"')" = 1

# A restart of the agent in the same boot: what it reported is not reported again.
kill "${AGENT_PID[a]}"
wait "${AGENT_PID[a]}" 2>/dev/null
start_agent a "$T/root-a" --health-interval 1s
check "agent a back online" wait_for 20 node_state_is gpu-a online
kmsg a "garbage that is no kernel record"
kmsg a "4,104,5000,-;mlx5_core 0000:17:00.0 ib0: Link down"
check "a new line after the restart (and after a line of garbage) is reported" wait_for 20 events_are gpu-a '.what == "link down"' 1
check "  the Xid of before the restart is not reported again" test "$(events gpu-a '.kind == "xid"')" = 1
kmsg a "2,105,6000,-;NETDEV WATCHDOG: ibp22s0 (mlx5_core): transmit queue 2 timed out"
check "the kernel's transmit watchdog is a critical event naming the netdev" wait_for 20 events_are gpu-a \
	'.kind == "kmsg" and .severity == "critical" and .what == "transmit queue timed out" and .source == "ibp22s0"' 1

# --- the fabric ports --------------------------------------------------------------------------
echo 100000 >"$T/root-b/$IB/counters/symbol_error"
check "a symbol-error rate over its rule fails gpu-b" wait_for 20 health_is gpu-b failing
check "  the event names the port, the counter and the rule" \
	test "$(events gpu-b '.kind == "port" and (.what | test("^mlx5_0/1: symbol_error \\+100000 .*critical at 240/min"))')" = 1
echo "1: DOWN" >"$T/root-b/$IB/state"
check "a port going DOWN is a critical event" \
	wait_for 20 events_are gpu-b '.what == "mlx5_0/1: ACTIVE -> DOWN" and .severity == "critical"' 1
echo 3 >"$T/root-b/sys/class/net/ibp22s0/queues/tx-0/tx_timeout"
check "transmit timeouts on the port's netdev are a critical event naming it" wait_for 20 events_are gpu-b \
	'.kind == "port" and .severity == "critical" and (.what | test("^mlx5_0/1: tx_timeout \\+3 on ibp22s0 "))' 1

# --- what the controller makes of them ----------------------------------------------------------
"$RY" nodes --state-dir "$T/ctl" >"$T/nodes.out" 2>&1
check "railyard nodes shows both failing" test "$(grep -c ' failing ' "$T/nodes.out")" = 2
ADMIN=$("$CTL" api-token create --name first-admin --role admin --state-dir "$T/ctl" 2>/dev/null |
	awk '/^token:/ {print $2}')
curl -s --cacert "$T/ctl/ca.crt" -H "Authorization: Bearer $ADMIN" "$(cat "$T/ctl/api.addr")/metrics" \
	>"$T/metrics.out" 2>&1
if [ -s "$T/metrics.out" ] && grep -q railyard_ "$T/metrics.out"; then
	check "/metrics names the unhealthy nodes" grep -q '^railyard_node_unhealthy{cluster="it",node="gpu-a"} 1' "$T/metrics.out"
	check "  counts nodes by health" grep -q '^railyard_nodes_health{cluster="it",state="unhealthy"} 2' "$T/metrics.out"
	check "  counts events (a counter)" grep -q '^railyard_health_events_total{cluster="it",kind="xid",severity="critical"} 1' "$T/metrics.out"
	# The shipped alert rules (deploy/prometheus) use only metrics the controller writes.
	for m in $(grep -o 'railyard_[a-z_]*' "$SRC/deploy/prometheus/railyard-alerts.yml" | sort -u); do
		check "  alert rules' metric $m is written" grep -q "^# TYPE $m " "$T/metrics.out"
	done
else
	fail "/metrics not read: $(head -c 300 "$T/metrics.out")"
fi
ry 0 node ack gpu-a --state-dir "$T/ctl"
check "acknowledging: gpu-a's events acknowledged, said" out_has "health events acknowledged"
check "  gpu-a is healthy again" test "$(health gpu-a)" = healthy
check "  gpu-b is still failing" test "$(health gpu-b)" = failing
check "  the events stay, marked acknowledged" test "$(events gpu-a '.acked_ms != null')" -ge 3
check "  the acknowledgement is audited" bash -c "'$RY' audit --state-dir '$T/ctl' | grep -q 'health.ack'"
ry 4 node ack no-such-node --state-dir "$T/ctl"
check "acknowledging an unknown node: refused, named" err_has "no-such-node"

# --- the playbook's health settings, pushed to the nodes it configured --------------------------
# A playbook whose health section ignores Xid 13 and makes Xid 31 critical, applied to all:
# the agents take it (said in their logs) and keep it (health.json); an Xid 13 then makes no
# event, an Xid 31 a critical one.
cat >"$T/health-pb.yaml" <<'YAML'
name: health-settings
version: "2"
steps:
  - name: nothing to change
    type: command
    params: {argv: [/bin/true], creates: /}
health:
  interval: 1s
  ports:
    symbol_error: {warning: 1}
  xid:
    ignore: [13]
    critical: [31]
YAML
"$RY" deploy --timeout 60s --state-dir "$T/ctl" --cluster it --playbook "$T/health-pb.yaml" --canary 0 \
	--pause 0s >"$T/deploy-health.out" 2>&1
check "the playbook with a health section is deployed" test $? -eq 0
check "  agent a takes its settings (said in its log)" wait_for 20 log_has "$T/a.log" "settings of health-settings 2 taken"
check "  and keeps them in its state directory" jqt '.xid.ignore == [13]' "$T/a/health.json"
kmsg a "3,200,9000,-;NVRM: Xid (PCI:0000:18:00): 13, Graphics SM Warp Exception"
kmsg a "3,201,9100,-;NVRM: Xid (PCI:0000:3b:00): 31, MMU Fault"
check "an Xid 31 is critical by the playbook" wait_for 20 events_are gpu-a '.kind == "xid" and (.what | startswith("Xid 31")) and .severity == "critical"' 1
check "  the Xid 13 before it was ignored by the playbook" test "$(events gpu-a '.kind == "xid" and (.what | startswith("Xid 13"))')" = 0
# The playbook's port rule replaces the agent's for symbol_error: a warning from 1 a minute, no
# critical level (the default would make 5 in a second critical).
echo 5 >"$T/root-a/$IB/counters/symbol_error"
check "a port rule of the playbook: symbol_error a warning at 1/min, never critical" \
	wait_for 20 events_are gpu-a '.kind == "port" and (.what | test("symbol_error \\+5 .*warning at 1/min")) and .severity == "warning"' 1
printf '{"version": 1, "interval_s": "soon"}' >"$T/bad-health.json"
check "agent health-check: a malformed configuration is refused, naming the key" bash -c \
	"'$AGENT' health-check --config '$T/bad-health.json' --sysroot '$T/root-a' 2>&1 | grep -q interval"

# --- bad input --------------------------------------------------------------------------------
# A node speaking the protocol with its own certificate (rogue_client, as agent c: stopped
# first) sends HealthEvents out of the protocol's limits: each refused with invalid_field,
# nothing stored; an honest one is stored.
kill "${AGENT_PID[c]}"
wait "${AGENT_PID[c]}" 2>/dev/null
check "agent c stopped" wait_for 20 node_state_is gpu-c offline
rogue() { "$ROGUE" --target "$ADDR" --ca "$T/ctl/ca.crt" --cert "$T/c/node.crt" --key "$T/c/node.key" "$@"; }
for v in bad-kind bad-severity future control huge-detail empty-source; do
	rogue --mode forge --forge "health:$v" >"$T/rogue-$v.out" 2>&1
	check "HealthEvent with $v: refused (invalid_field)" grep -q "^ERROR invalid_field: HealthEvent" "$T/rogue-$v.out"
done
check "  none of them stored" test "$(events gpu-c)" = 0
rogue --mode forge --forge "health:ok" >"$T/rogue-ok.out" 2>&1
check "an honest HealthEvent is stored" bash -c "grep -q '^RECEIPT' '$T/rogue-ok.out' && [ \"\$('$RY' node health gpu-c --json --state-dir '$T/ctl' | jq '.events | length')\" = 1 ]"
"$AGENT" run --state-dir "$T/a" --sysroot "$T/root-a" --health-interval 10ms >"$T/bad.out" 2>&1
check "agent: --health-interval under a second is refused with its name" grep -q -- "--health-interval" "$T/bad.out"

check_sanitizers
finish
