#!/usr/bin/env bash
# Integration: the `reboot` step, at its seam. One agent on a fixture sysroot whose agent.conf
# sets reboot_command to a script that does what the kernel does to the agent's view of a
# reboot: a new boot id in the sysroot's proc/sys/kernel/random/boot_id (or, in "hang" mode,
# nothing: a host that did not go down). This test plays the init system: it stops the agent
# (SIGTERM, as systemd does on the way down) once the controller shows the node rebooting, and
# starts it again (as its unit does at boot). Checked: a plan [count, reboot, count] succeeds
# with each counting step run exactly once and the reboot's duration shown; an agent started
# again without a reboot fails the step ("the host did not reboot"); a node that never comes
# back is failed by the controller with the timeout; check mode says "would reboot" and
# reboots nothing; if_changed with nothing changed does not reboot. The real kernel's reboot is
# tests/rdma-vm/reboot-vm.sh's.
. "$(dirname "$0")/lib.sh"

PREP=$SRC/tests/fixtures/prepare-sysroot.sh
ROOT=$T/root-a
"$PREP" "$FIXTURES/h200-ib" "$ROOT" >/dev/null || die "prepare the sysroot"
mkdir -p "$ROOT/proc/sys/kernel/random" "$ROOT/var/count"
BOOT0=$(cat /proc/sys/kernel/random/uuid)
echo "$BOOT0" >"$ROOT/proc/sys/kernel/random/boot_id"
boot_id() { cat "$ROOT/proc/sys/kernel/random/boot_id"; }

# The reboot command: what a reboot changes that the agent can see (the boot id), no more.
cat >"$T/fake-reboot" <<'EOF'
#!/bin/sh
set -eu
root=${RAILYARD_SYSROOT:?}
echo "$(date +%s%N) $*" >>"$root/var/count/reboots"
if [ "$(cat "$root/../reboot-mode")" = reboot ]; then
	cat /proc/sys/kernel/random/uuid >"$root/proc/sys/kernel/random/boot_id"
fi
EOF
chmod 755 "$T/fake-reboot"
echo reboot >"$T/reboot-mode"
# A counting step: appends a line to /var/count/NAME each time it runs.
cat >"$ROOT/usr/local/sbin/count" <<'EOF'
#!/bin/sh
echo run >>"$RAILYARD_SYSROOT/var/count/$1"
EOF
chmod 755 "$ROOT/usr/local/sbin/count"
runs() { [ -f "$ROOT/var/count/$1" ] && wc -l <"$ROOT/var/count/$1" || echo 0; }
reboots() { runs reboots; }
reboots_are() { [ "$(reboots)" = "$1" ]; }

"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
start_controller --heartbeat-interval 300ms
new_token 2
enroll a "$ROOT" --hostname gpu-a || die "enroll"
echo "reboot_command = $T/fake-reboot --now" >>"$T/a/agent.conf"
start_agent a "$ROOT"
check "agent online" wait_for 20 count_is online 1

playbook() { # playbook FILE TIMEOUT IF_CHANGED FIRST_STEP_TYPE
	cat >"$1" <<EOF
name: reboot-test
version: "1"
steps:
  - name: count before
    type: command
    params: {argv: [count, before]}
  - name: reboot
    type: reboot
    params: {timeout: $2, if_changed: $3}
  - name: count after
    type: command
    params: {argv: [count, after]}
EOF
}
dep() { "$RY" deployments "$1" --json --state-dir "$T/ctl"; }
node() { dep "$1" | jq -r ".nodes[0].$2"; }
dep_state() { dep "$1" | jq -r .state; }
state_is() { [ "$(dep_state "$1")" = "$2" ]; }
deploy() { "$RY" deploy --state-dir "$T/ctl" --cluster it --no-wait --playbook "$@"; }
last_id() { awk '/^deployment d-/ {sub(":", "", $2); print $2; exit}' "$1"; }
rebooting() { [ "$(node "$1" reboot.state)" = rebooting ]; }
agent_says() { log_has "$T/a.log" "$1"; }
# The init system on the way down, then at the next boot.
stop_agent() {
	kill -TERM "${AGENT_PID[a]}" && wait_for 20 exited "${AGENT_PID[a]}"
}

# --- check mode: "would reboot", nothing rebooted ---------------------------------------------
playbook "$T/pb.yaml" 60s false
deploy "$T/pb.yaml" --check >"$T/check.out" 2>&1 || die "deploy --check: $(cat "$T/check.out")"
CID=$(last_id "$T/check.out")
check "check mode: the deployment succeeds" wait_for 30 state_is "$CID" succeeded
check "check mode: the reboot step says \"would reboot\"" test \
	"$(dep "$CID" | jq -r '.nodes[0].steps[1] | .status + " " + .message')" = "changed would reboot"
check "check mode: nothing rebooted, nothing counted" \
	test "$(reboots)/$(runs before)/$(runs after)/$(boot_id)" = "0/0/0/$BOOT0"

# --- a plan that reboots in its middle ---------------------------------------------------------
deploy "$T/pb.yaml" >"$T/d1.out" 2>&1 || die "deploy: $(cat "$T/d1.out")"
D1=$(last_id "$T/d1.out")
check "the controller shows the node rebooting" wait_for 30 rebooting "$D1"
check "  ... step 2 \"rebooting\" in its steps, step 1 done" test \
	"$(dep "$D1" | jq -r '[.nodes[0].steps[] | "\(.index):\(.status):\(.name)"] | join(",")')" = \
	"0:changed:count before,1:rebooting:reboot"
check "  ... the reboot command ran once (after the controller had the notice), with its arguments" \
	wait_for 10 bash -c "[ \"\$(wc -l <'$ROOT/var/count/reboots')\" = 1 ] && grep -q ' --now$' '$ROOT/var/count/reboots'"
check "  ... the reboot was journaled (boot id, time) before the command ran" \
	grep -q "\"reboot\":1,\"boot_id\":\"$BOOT0\"" "$T/a/jobs/$D1.log"
check "  ... the agent starts no further step and waits to be stopped" \
	test "$(runs after)" = 0
stop_agent || fail "the agent did not stop on SIGTERM while rebooting"
check "offline while rebooting: the node is not failed" test "$(node "$D1" state)" = sent
"$RY" deployments "$D1" --state-dir "$T/ctl" >"$T/d1.rebooting" 2>&1
check "deployments ID (text) while it reboots: the node's line and the step" bash -c \
	"grep -qE '^  gpu-a .* sent .*, rebooting \(step 2\)' '$T/d1.rebooting' &&
	grep -qE '^      rebooting step 2 \"reboot\": rebooting: waiting for the node to come back' '$T/d1.rebooting'"
# The controller killed while the node is down: the reboot under way is in its database.
kill -9 "$CTL_PID" && wait_for 20 exited "$CTL_PID" || fail "the controller did not die"
start_controller --heartbeat-interval 300ms
check "a controller restarted (kill -9) during the reboot still shows it" rebooting "$D1"
start_agent a "$ROOT"
check "after the boot the plan finishes" wait_for 30 state_is "$D1" succeeded
check "each counting step ran exactly once" test "$(runs before)/$(runs after)" = 1/1
check "the reboot step: changed, with its duration and both boot ids" \
	jqt -r '.nodes[0].steps[1] | select(.status == "changed" and
		(.message | test("^rebooted in [0-9.]+ s: boot id [0-9a-f-]{36} -> [0-9a-f-]{36}, kernel 6.1.0-28-amd64"))) | .name' \
	<(dep "$D1")
check "the node shows the reboot's duration (the controller's view)" \
	jqt '.nodes[0].reboot | select(.state == "rebooted" and .duration_ms > 0)' <(dep "$D1")
check "the agent said it judged the reboot" agent_says "step 2 (reboot) changed: rebooted in"
"$RY" deployments "$D1" --state-dir "$T/ctl" >"$T/d1.show" 2>&1
check "deployments ID (text): the reboot step and its message" \
	grep -qE "changed +step 2 \"reboot\": rebooted in [0-9.]+ s" "$T/d1.show"
check "  ... and the node's line, the reboot's duration" \
	grep -qE "^  gpu-a .* skipped 0, rebooted in [0-9.]+ s" "$T/d1.show"

# --- if_changed with nothing changed: no reboot ------------------------------------------------
cat >"$T/pb-ifc.yaml" <<'EOF'
name: reboot-if-changed
version: "1"
steps:
  - name: already there
    type: command
    params: {argv: [count, never], creates: /etc}
  - name: reboot if needed
    type: reboot
    params: {if_changed: true}
EOF
deploy "$T/pb-ifc.yaml" >"$T/d2.out" 2>&1 || die "deploy if_changed: $(cat "$T/d2.out")"
D2=$(last_id "$T/d2.out")
check "if_changed, nothing changed: succeeded" wait_for 30 state_is "$D2" succeeded
check "  ... the step is ok: \"nothing changed: no reboot\", no reboot" test \
	"$(dep "$D2" | jq -r '.nodes[0].steps[1] | .status + " " + .message')/$(reboots)" = \
	"ok nothing changed: no reboot/1"

# --- the agent starts again, but the host did not reboot ---------------------------------------
echo hang >"$T/reboot-mode"
BOOT1=$(boot_id)
deploy "$T/pb.yaml" >"$T/d3.out" 2>&1 || die "deploy: $(cat "$T/d3.out")"
D3=$(last_id "$T/d3.out")
check "no reboot: the node is shown rebooting" wait_for 30 rebooting "$D3"
wait_for 10 reboots_are 2 || fail "the reboot command did not run"
stop_agent || fail "the agent did not stop"
start_agent a "$ROOT"
check "an agent restarted in the same boot: the deployment fails" \
	wait_for 30 state_is "$D3" failed
check "  ... the reboot step failed: the host did not reboot" test \
	"$(dep "$D3" | jq -r '.nodes[0].steps[1] | .status + " " + .message')" = \
	"failed the host did not reboot: the agent started again with the same boot id $BOOT1"
check "  ... and the step after it did not run" test "$(runs after)" = 1

# --- a node that never comes back: the controller fails it -------------------------------------
playbook "$T/pb-short.yaml" 2s false
deploy "$T/pb-short.yaml" >"$T/d4.out" 2>&1 || die "deploy: $(cat "$T/d4.out")"
D4=$(last_id "$T/d4.out")
check "never back: shown rebooting" wait_for 30 rebooting "$D4"
wait_for 10 reboots_are 3 || fail "the reboot command did not run"
stop_agent || fail "the agent did not stop"
check "the controller fails the node after the step's timeout" \
	wait_for 30 state_is "$D4" failed
check "  ... with that reason" test "$(node "$D4" message)" = \
	"step 2 \"reboot\": the node did not come back from its reboot within 2 s"
check "  ... the controller's log says so" log_has "$T/controller.log" "did not come back from its reboot"

# A late agent: its result for the failed node is refused, nothing changes.
start_agent a "$ROOT"
check "a late agent comes back online" wait_for 20 count_is online 1
check "  ... the failed node stays failed" test "$(node "$D4" state)" = failed
check "  ... no step after the reboot ran" test "$(runs after)" = 1

# --- a node's "rebooting" is checked: a forged one at a step that is no reboot step ------------------
"$AGENT" facts --sysroot "$FIXTURES/h200-ib-2" --json >"$T/r.facts" || fail "facts of the rogue"
enroll r "$FIXTURES/h200-ib-2" --hostname rogue-r || die "enroll the rogue"
rogue() { "$ROGUE" --target "$ADDR" --ca "$T/ctl/ca.crt" --cert "$T/r/node.crt" --key "$T/r/node.key" "$@"; }
rogue --mode agent --plans 1 --gate "$T/never" --facts "$T/r.facts" >"$T/r.out" 2>&1 &
PIDS+=("$!")
check "the rogue member is online" wait_for 20 node_state_is rogue-r online
cat >"$T/pb-rogue.yaml" <<'EOF'
name: reboot-forged
version: "1"
target:
  selector: [{fact: hostname, op: "==", value: gpu-node-04}]
steps:
  - name: count before
    type: command
    params: {argv: [count, before]}
  - name: reboot
    type: reboot
EOF
deploy "$T/pb-rogue.yaml" >"$T/d5.out" 2>&1 || die "deploy: $(cat "$T/d5.out")"
D5=$(last_id "$T/d5.out")
check "the rogue got the plan" wait_for 20 grep -q "WAITING $D5" "$T/r.out"
rogue --mode forge --plans 0 --forge rebooting:0 --deployment "$D5" >"$T/r-forge.out" 2>&1
check "  ... its \"rebooting\" at step 1 (a command) is taken as a notice" grep -q RECEIPT "$T/r-forge.out"
check "  ... and the rollout fails the node: step 1 is no reboot step" wait_for 20 state_is "$D5" failed
check "  ... with that reason" test "$(node "$D5" message)" = \
	"the node said it reboots at step 1, which is not a reboot step of the playbook"

check_sanitizers
finish
