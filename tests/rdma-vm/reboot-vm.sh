#!/usr/bin/env bash
# CTest rdma_vm_reboot: the `reboot` step on a real kernel. A controller on the host, one
# soft-RoCE guest (single mode with the user-mode NIC) whose agent keeps its state directory on
# a small ext4 disk image made here, and qemu WITHOUT -no-reboot, so that a reboot in the guest
# restarts it. A plan [count, reboot, count] is deployed: the guest's kernel really reboots in
# the middle step, its agent is started again at boot (cases/reboot.sh plays the agent's systemd
# unit: the guests run busybox /init, not systemd), the plan finishes; no step before the
# reboot runs twice, the deployment shows the reboot with its duration and the kernel after
# the boot. The reboot's duration is printed (RY-METRIC). Then the node is revoked, which ends
# the agent (exit 3): the guest's pass.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
: "${RAILYARD_BUILD_DIR:?set RAILYARD_BUILD_DIR}"
CTL=$RAILYARD_BUILD_DIR/controller/railyard-controller
RY=$RAILYARD_BUILD_DIR/client/railyard
[ -x "$CTL" ] && [ -x "$RY" ] && [ -x "$RAILYARD_BUILD_DIR/nodeagent/railyard-agent" ] ||
	{ echo "reboot-vm: controller/railyard/agent not built" >&2; exit 1; }
command -v mkfs.ext4 >/dev/null 2>&1 || { echo "SKIP rdma-vm reboot: mkfs.ext4 not found (e2fsprogs)" >&2; exit 77; }
W=$RAILYARD_BUILD_DIR/rdma-vm/reboot
rm -rf "$W"
mkdir -p "$W"
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
dep() { "$RY" deployments "$1" --json --state-dir "$W/ctl"; }
dep_is() { [ "$(dep "$1" | jq -r .state)" = "$2" ]; }
rebooting() { [ "$(dep "$1" | jq -r '.nodes[0].reboot.state')" = rebooting ]; }

# The guest's persistent disk: ext4, empty.
truncate -s 32M "$W/disk.img"
mkfs.ext4 -q -F -L persist "$W/disk.img"

"$CTL" init --state-dir "$W/ctl" >"$W/init.log" 2>&1
"$CTL" serve --state-dir "$W/ctl" --listen 127.0.0.1:0 --http 127.0.0.1:0 --heartbeat-interval 2s \
	--heartbeat-timeout 20s >"$W/controller.log" 2>&1 &
pids+=($!)
wait_for 60 test -s "$W/ctl/controller.addr" || { cat "$W/controller.log"; exit 1; }
port=$(sed 's/.*://' "$W/ctl/controller.addr")
"$RY" enrollment-token create --state-dir "$W/ctl" --cluster rb --uses 1 --ttl 10m >"$W/token"
token=$(awk '/^token:/ {print $2}' "$W/token")
fp=$(awk '/^ca-fingerprint:/ {print $2}' "$W/token")

"$HERE/run-vm.sh" --name reboot --timeout 240 --mem 512M --host-net --reboot --disk "$W/disk.img" \
	--env "RY_CTL=10.0.2.2:$port" --env "RY_TOKEN=$token" --env "RY_FP=$fp" \
	--script "$HERE/cases/reboot.sh" single >"$W/run-vm.log" 2>&1 &
vm=$!
pids+=($vm)
if ! wait_for 150 online 1; then
	echo "reboot-vm: the guest's agent did not come online" >&2
	cat "$W/run-vm.log" >&2
	exit 1
fi
echo "ok   - the guest's agent enrolled and online"

cat >"$W/reboot.yaml" <<'YAML'
name: reboot-real-kernel
version: "1"
steps:
  - name: count before
    type: command
    params: {argv: [sh, -c, "echo run >> /persist/count-before"]}
  - name: reboot
    type: reboot
    params: {timeout: 3m, expect_kernel: "6.*-amd64"}
  - name: count after
    type: command
    params: {argv: [sh, -c, "echo run >> /persist/count-after"]}
YAML
"$RY" deploy --state-dir "$W/ctl" --cluster rb --playbook "$W/reboot.yaml" --no-wait >"$W/deploy.out" 2>&1
id=$(awk '/^deployment d-/ {sub(":", "", $2); print $2; exit}' "$W/deploy.out")
check "the deployment shows the node rebooting" wait_for 60 rebooting "$id"
check "the node is back and the plan finished" wait_for 150 dep_is "$id" succeeded
# The old session vanished with the kernel (no FIN through qemu's user NIC); the agent of the
# second boot opened a new one.
check "the node came back on a new session (one per boot)" \
	test "$(grep -c '(rb-g0) online' "$W/controller.log")" = 2
dep "$id" >"$W/deployment.json"
check "the reboot step: changed, the boot ids and the kernel after the boot" jq -e '
	.nodes[0].steps[1] | .status == "changed" and
	(.message | test("^rebooted in [0-9.]+ s: boot id [0-9a-f-]{36} -> [0-9a-f-]{36}, kernel 6[^ ]*-amd64$"))' \
	"$W/deployment.json"
check "the node shows the reboot and its duration (the controller's clock)" \
	jq -e '.nodes[0].reboot.state == "rebooted" and .nodes[0].reboot.duration_ms > 1000' "$W/deployment.json"
check "the steps around it: changed once each" \
	jq -e '[.nodes[0].steps[] | .status] == ["changed", "changed", "changed"]' "$W/deployment.json"
agent_ms=$(jq -r '.nodes[0].steps[1].duration_ms' "$W/deployment.json")
ctl_ms=$(jq -r '.nodes[0].reboot.duration_ms' "$W/deployment.json")
echo "RY-METRIC reboot duration (agent: reboot record to judged after the boot) ${agent_ms} ms"
echo "RY-METRIC reboot duration (controller: rebooting notice to the step's result) ${ctl_ms} ms"

"$RY" node revoke rb-g0 --state-dir "$W/ctl" >/dev/null
rc=0
wait "$vm" || rc=$?
cat "$W/run-vm.log"
grep -a "\[g0" "$RAILYARD_BUILD_DIR"/rdma-vm/logs/reboot/guest0.log | tail -30 || true
check "the guest passed (journal succeeded, agent revoked)" test $rc = 0
check "the step before the reboot ran once, the one after it once" \
	grep -q "RY-METRIC reboot count_before 1" "$W/run-vm.log"
check "  ... (after)" grep -q "RY-METRIC reboot count_after 1" "$W/run-vm.log"
check "the guest booted twice and ran the reboot command once" \
	bash -c "grep -q 'RY-METRIC reboot boots 2' '$W/run-vm.log' && grep -q 'RY-METRIC reboot commands 1' '$W/run-vm.log'"
[ $fails = 0 ] || { echo "reboot-vm: $fails check(s) failed; logs in $W and $RAILYARD_BUILD_DIR/rdma-vm/logs/reboot"; exit 1; }
echo "reboot-vm: all passed"
