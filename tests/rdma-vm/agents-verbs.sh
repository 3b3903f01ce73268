#!/usr/bin/env bash
# CTest rdma_vm_agents_verbs: the product path end to end on a real kernel RDMA stack. A
# controller on the host, an agent in each of 2 soft-RoCE guests (cluster mode: the guests share
# a wire with rxe on eth0 and reach the host at 10.0.2.2), and verbs benchmarks ordered with
# `railyard bench run` between them: RunBench over the sessions, the server agent
# leasing its control port, the client agent measuring over rxe, both results stored. Then the
# health watchers on the real kernel: an Xid line in rdma-g1's /dev/kmsg, rxe0's error counters
# under lossy traffic, its link down and up, each seen by its agent. Then the nodes are revoked,
# which ends the agents (exit 3): the guests' pass.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
: "${RAILYARD_BUILD_DIR:?set RAILYARD_BUILD_DIR}"
CTL=$RAILYARD_BUILD_DIR/controller/railyard-controller
RY=$RAILYARD_BUILD_DIR/client/railyard
[ -x "$CTL" ] && [ -x "$RY" ] && [ -x "$RAILYARD_BUILD_DIR/nodeagent/railyard-agent" ] ||
	{ echo "agents-verbs: controller/railyard/agent not built" >&2; exit 1; }
W=$RAILYARD_BUILD_DIR/rdma-vm/agents-verbs
rm -rf "$W"
mkdir -p "$W"
# railyard talks to the serving controller's api.sock (--state-dir), never to a profile.
unset RAILYARD_URL RAILYARD_TOKEN RAILYARD_CA RAILYARD_PROFILE RAILYARD_CONTROLLER RAILYARD_STATE_DIR
export RAILYARD_CONFIG=$W/cli-config.json
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
fails=0
check() { # check "what" command...
	local what=$1
	shift
	if "$@" >/dev/null; then echo "ok   - $what"; else echo "FAIL - $what"; fails=$((fails + 1)); fi
}
wait_for() { # wait_for SECONDS command...
	local end=$(($(date +%s) + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt $end ] || return 1
		sleep 0.5
	done
}
online() { [ "$("$RY" nodes --json --state-dir "$W/ctl" | jq '[.items[] | select(.state == "online")] | length')" = "$1" ]; }

"$CTL" init --state-dir "$W/ctl" >"$W/init.log" 2>&1
"$CTL" serve --state-dir "$W/ctl" --listen 127.0.0.1:0 --http 127.0.0.1:0 --heartbeat-interval 2s \
	--heartbeat-timeout 20s \
	>"$W/controller.log" 2>&1 &
pids+=($!)
wait_for 60 test -s "$W/ctl/controller.addr" || { cat "$W/controller.log"; exit 1; }
port=$(sed 's/.*://' "$W/ctl/controller.addr")
"$RY" enrollment-token create --state-dir "$W/ctl" --cluster rdma --uses 2 --ttl 10m >"$W/token"
token=$(awk '/^token:/ {print $2}' "$W/token")
fp=$(awk '/^ca-fingerprint:/ {print $2}' "$W/token")

# The guests, in the background; they end when their agents are revoked (or at the timeout).
# Deadlines with room for a loaded host (it passed alone in 25 s and failed once at load 6-9):
# the guests' boot and enrollment get 240 s, the guests 420 s in all, CTest 540 s.
"$HERE/run-vm.sh" --name agents_verbs --timeout 420 --mem 768M \
	--env "RY_CTL=10.0.2.2:$port" --env "RY_TOKEN=$token" --env "RY_FP=$fp" \
	--script "$HERE/cases/agents-verbs.sh" cluster 2 >"$W/run-vm.log" 2>&1 &
vm=$!
pids+=($vm)
if ! wait_for 240 online 2; then
	echo "agents-verbs: the guests' agents did not come online" >&2
	cat "$W/run-vm.log" >&2
	exit 1
fi
echo "ok   - both guest agents enrolled and online"
bench() { # bench NAME ARGS...: client rdma-g1, server rdma-g0 on the wire; a failed run is
	# the checks' to judge (and shown here), never the end of the script
	local nm=$1 rc=0
	shift
	"$RY" bench run --state-dir "$W/ctl" --from rdma-g1 --to rdma-g0 --transport verbs \
		--server-address 192.168.77.10 --timeout 90s --json "$@" >"$W/$nm.json" 2>"$W/$nm.err" ||
		rc=$?
	[ $rc = 0 ] || echo "  (bench $nm: exit $rc: $(jq -c '{state, error}' "$W/$nm.json" 2>/dev/null) $(tail -3 "$W/$nm.err"))"
}
bench lat --kind lat --op write --iters 200 --check-data
check "verbs write latency ordered through the controller succeeds" \
	jq -e '.state == "succeeded" and .result.ok and .server_result.ok' "$W/lat.json"
check "it ran on rxe0 over RoCE v2 with a measured p50" jq -e '
	.result.environment.client.device == "rxe0" and
	.result.environment.client.link_layer == "Ethernet" and
	.result.results[0].latency.p50 > 0 and .result.results[0].data_check.checked > 0' "$W/lat.json"
check "the server agent served on a leased port (18515-18546)" \
	jq -e '.server_port >= 18515 and .server_port <= 18546 and
	.server_address == "192.168.77.10"' "$W/lat.json"
bench bw --kind bw --op write --size 65536 --iters 300 --qps 2 --check-data
check "verbs write bandwidth, 2 QPs, succeeds with a rate" jq -e '.state == "succeeded" and
	.result.results[0].bw.gbps > 0 and .result.results[0].data_check.checked > 0' "$W/bw.json"
bench cm --kind lat --op send --iters 200 --rdma-cm
check "send latency over rdma_cm succeeds" jq -e '.state == "succeeded"' "$W/cm.json"
# A bad order is a failed result from the agent, not silence.
bench bad --kind lat --device mlx5_9 --iters 10
check "an unknown device is refused by the agent, naming what exists" \
	jq -e '.state == "failed" and (.error | test("mlx5_9.*not found.*rxe0"))' "$W/bad.json"

# ---- the health watchers on a real kernel (docs/health.md) ------------------------------------
# Deployments of command steps to both guests (the product path: no shell into the guests)
# write an Xid line to their kernel logs, lose packets on their wire under verbs traffic, and
# take their links down and up; rdma-g1's watchers must see each from the real /dev/kmsg and
# rxe0's port. (The facts' host name is the guest kernel's, not the enrolled rdma-gN: no
# selector.)
health_pb() { # health_pb NAME ARGV-JSON...: a playbook of command steps for both guests
	local name=$1 i=0
	shift
	{
		printf 'name: %s\nversion: "1"\nsteps:\n' "$name"
		for a in "$@"; do
			i=$((i + 1))
			printf '  - name: step %d\n    type: command\n    params: {argv: %s, timeout: 60s}\n' "$i" "$a"
		done
	} >"$W/$name.yaml"
	"$RY" deploy --state-dir "$W/ctl" --cluster rdma --playbook "$W/$name.yaml" --canary 0 --pause 0s \
		--timeout 120s >"$W/$name.out" 2>&1
}
events() { "$RY" node health rdma-g1 --json --limit 1000 --state-dir "$W/ctl" | jq "[.events[] | select($1)] | length"; }
done_on_both() { # done_on_both DEPLOY-OUTPUT: the deployment succeeded on both guests
	local id
	id=$(awk '/^deployment d-/ {sub(":", "", $2); print $2; exit}' "$1")
	[ -n "$id" ] && "$RY" deployments "$id" --json --state-dir "$W/ctl" |
		jq -e '.state == "succeeded" and ([.nodes[] | select(.state == "succeeded")] | length) == 2' >/dev/null
}
has_event() { [ "$(events "$1")" -ge 1 ]; }
health_pb health-xid '["/bin/sh", "-c", "echo \"<3>NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=proof, GPU has fallen off the bus.\" >/dev/kmsg"]'
check "the Xid line was written to the guests' kernel logs (a deployment)" done_on_both "$W/health-xid.out"
check "  its agent read it from the real /dev/kmsg: an Xid 79, critical" \
	wait_for 30 has_event '.kind == "xid" and .severity == "critical" and (.what | startswith("Xid 79"))'
check "  rdma-g1 is failing for it" bash -c "'$RY' node show rdma-g1 --state-dir '$W/ctl' | grep -q 'Xid 79: GPU has fallen off the bus'"
# Packet loss on the guests' egress under verbs traffic: rxe retransmits, its error counters
# rise. (rxe on this emulated wire retransmits under the benchmarks above already, and a rise
# that goes on is one episode, reported again only every 30 ticks: what is checked is that the
# watcher reported rxe0's retransmission or sequence-error counters rising under this test's
# verbs traffic at all; the lossy benchmark makes sure there is some. It may itself fail.)
health_pb health-loss-on '["/usr/sbin/tc", "qdisc", "add", "dev", "eth0", "root", "netem", "loss", "1%"]'
check "1 % loss on the guests' wire (a deployment)" done_on_both "$W/health-loss-on.out"
bench lossy --kind bw --op write --size 4096 --duration 20s --qps 2
health_pb health-loss-off '["/usr/sbin/tc", "qdisc", "del", "dev", "eth0", "root"]'
check "  rdma-g1's watchers saw rxe0's error counters rise under verbs traffic" \
	wait_for 45 has_event '.kind == "port" and (.source == "rxe0/1") and (.what | test("(completer_retry_err|rcvd_seq_err|out_of_seq_request|duplicate_request|retry_exceeded_err) \\+[0-9]+"))'
# The link down for 5 s and up again (ip link, in one step: the session runs over the other NIC).
health_pb health-link '["/bin/sh", "-c", "ip link set eth0 down && sleep 5 && ip link set eth0 up"]'
check "the guests' links down and up (a deployment)" done_on_both "$W/health-link.out"
check "  seen: rxe0's port ACTIVE -> DOWN, critical" wait_for 30 has_event '.what == "rxe0/1: ACTIVE -> DOWN" and .severity == "critical"'
check "  and back: DOWN -> ACTIVE" wait_for 30 has_event '.what == "rxe0/1: DOWN -> ACTIVE"'
"$RY" node health rdma-g1 --state-dir "$W/ctl" >"$W/health-events.txt" 2>&1 || true
sed 's/^/[rdma-g1 health] /' "$W/health-events.txt" | head -30

for n in rdma-g0 rdma-g1; do "$RY" node revoke "$n" --state-dir "$W/ctl" >/dev/null; done
rc=0
wait "$vm" || rc=$?
cat "$W/run-vm.log"
grep -ah "\[g[0-9]" "$RAILYARD_BUILD_DIR"/rdma-vm/logs/agents_verbs/guest*.log | tail -40 || true
check "both guests ended with their agents revoked" test $rc = 0
[ $fails = 0 ] || { echo "agents-verbs: $fails check(s) failed; logs in $W and $RAILYARD_BUILD_DIR/rdma-vm/logs/agents_verbs"; exit 1; }
echo "agents-verbs: all passed"
