#!/usr/bin/env bash
# CTest rdma_vm_agents_verbs: the product path end to end on a real kernel RDMA stack. A
# controller on the host, an agent in each of 2 soft-RoCE guests (cluster mode: the guests share
# a wire with rxe on eth0 and reach the host at 10.0.2.2), and verbs benchmarks ordered with
# `railyard bench run` between them: RunBench over the sessions, the server agent
# leasing its control port, the client agent measuring over rxe, both results stored. Then
# the nodes are revoked, which ends the agents (exit 3): the guests' pass.
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
bench() { # bench NAME ARGS...: client rdma-g1, server rdma-g0 on the wire
	local nm=$1
	shift
	"$RY" bench run --state-dir "$W/ctl" --from rdma-g1 --to rdma-g0 --transport verbs \
		--server-address 192.168.77.10 --timeout 90s --json "$@" >"$W/$nm.json" 2>"$W/$nm.err"
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
bench bad --kind lat --device mlx5_9 --iters 10 || true
check "an unknown device is refused by the agent, naming what exists" \
	jq -e '.state == "failed" and (.error | test("mlx5_9.*not found.*rxe0"))' "$W/bad.json"

for n in rdma-g0 rdma-g1; do "$RY" node revoke "$n" --state-dir "$W/ctl" >/dev/null; done
rc=0
wait "$vm" || rc=$?
cat "$W/run-vm.log"
grep -ah "\[g[0-9]" "$RAILYARD_BUILD_DIR"/rdma-vm/logs/agents_verbs/guest*.log | tail -40 || true
check "both guests ended with their agents revoked" test $rc = 0
[ $fails = 0 ] || { echo "agents-verbs: $fails check(s) failed; logs in $W and $RAILYARD_BUILD_DIR/rdma-vm/logs/agents_verbs"; exit 1; }
echo "agents-verbs: all passed"
