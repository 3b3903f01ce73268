#!/usr/bin/env bash
# Integration: the workload-manager hand-off against a real Slurm (slurm.sh: a slurmctld and one
# slurmd per node on this host). Four fixture agents named like the Slurm nodes, the cluster
# bound to Slurm; a campaign in which gpu-node-03 (h200-degraded, a DOWN port) fails drains it
# with a reason naming the campaign, the others stay idle, and gpu-node-01, drained by an admin
# beforehand, stays drained with the admin's reason; a campaign it passes resumes gpu-node-03
# (ours) and still not gpu-node-01; the controller killed with kill -9 between a verdict and
# its drain drains after the restart, once. Bad bindings are refused with the field named.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/slurm.sh"

command -v sqlite3 >/dev/null || { echo "skip: no sqlite3"; exit 77; }
slurm_start gpu-node-01 gpu-node-02 gpu-node-03 gpu-node-04

# scontrol through a recording wrapper: each call is logged, and while $T/block exists it fails
# (the WLM is unreachable) without doing anything.
mkdir -p "$T/bin"
cat >"$T/bin/scontrol" <<EOF
#!/bin/sh
if [ -e "$T/block" ]; then echo "blocked \$*" >>"$T/scontrol.log"; echo "unreachable" >&2; exit 1; fi
echo "ran \$*" >>"$T/scontrol.log"
exec $SLURM_BIN/scontrol "\$@"
EOF
for t in sinfo squeue; do ln -s "$SLURM_BIN/$t" "$T/bin/$t"; done
chmod +x "$T/bin/scontrol"

"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
start_controller --heartbeat-interval 300ms
new_token 4
for n in a:h200-ib b:h200-ib-2 c:h200-roce d:h200-degraded; do
	enroll "${n%%:*}" "$FIXTURES/${n#*:}" || die "enroll ${n%%:*}"
	start_agent "${n%%:*}" "$FIXTURES/${n#*:}"
done
check "four agents online" wait_for 30 count_is online 4

# ---- the binding ----------------------------------------------------------------------------
wlm() { "$RY" wlm "$@" --state-dir "$T/ctl"; }
refused wlm set --cluster it --slurm --slurm-conf relative/slurm.conf >"$T/b1.out" 2>&1
check "a relative slurm.conf is refused, the field named" grep -q "slurm.conf: must be an absolute path" "$T/b1.out"
refused wlm set --cluster it --slurm --map 'gpu-node-01=bad name!' >"$T/b2.out" 2>&1
check "an illegal node name in the map is refused, the host named" grep -q "node_map.gpu-node-01: \"bad name!\" is not a legal node name" "$T/b2.out"
printf '{"kind": "hooks", "hooks": {"drain": ["kubectl", "cordon", "{node}"], "resume": ["/bin/true"]}}' >"$T/relhook.json"
refused wlm set --cluster it --file "$T/relhook.json" >"$T/b3.out" 2>&1
check "a hook whose program is not an absolute path is refused" grep -q "hooks.drain\[0\]: the program must be an absolute path" "$T/b3.out"
printf '{"kind": "slurm", "timeout_s": 100000}' >"$T/longto.json"
refused wlm set --cluster it --file "$T/longto.json" >"$T/b4.out" 2>&1
check "an unbounded timeout is refused" grep -q "timeout_s: an integer from 1 to 300" "$T/b4.out"
check "nothing was stored by the refused bindings" refused wlm show --cluster it
check "wlm set binds the cluster to Slurm" wlm set --cluster it --slurm --slurm-conf "$SLURM_CONF" \
	--slurm-bin-dir "$T/bin" --timeout 10s
wlm show --cluster it --json >"$T/binding.json"
check "wlm show: kind, conf, bin_dir, timeout as set" jqt --arg c "$SLURM_CONF" --arg b "$T/bin" '
	.kind == "slurm" and .slurm.conf == $c and .slurm.bin_dir == $b and .timeout_s == 10' "$T/binding.json"

# ---- drain with reasons; an admin's drain is not ours ------------------------------------------
scontrol update NodeName=gpu-node-01 State=DRAIN Reason="admin: fan replaced, burn-in"
check "gpu-node-01 drained by an admin beforehand" test "$(slurm_node_state gpu-node-01)" = drained
playbook() { # playbook NAME PREFLIGHT: a quick latency validation whose rule always holds
	cat >"$T/$1.yaml" <<EOF
name: $1
version: "1"
steps:
  - {name: facts readable, type: assert, params: {that: [{fact: kernel.release, op: "!=", value: ""}]}}
validation:
  transport: tcp
  requires: []
$2
  tests:
    - {name: pair-lat, kind: lat, pattern: pairs, size: 8, iters: 100}
  acceptance:
    - {metric: pair-lat.p50_us, op: ">=", value: 0}
EOF
}
playbook ports "  preflight: {ports_active: true}"
playbook plain ""
val() { "$RY" validate --state-dir "$T/ctl" --cluster it --quick --seed 3 --json "$@"; }
actions() { wlm actions --cluster it --json | jq "[.items[] | select($1)]"; }
row_state() { actions "$1" | jq -r '.[0].state'; }
node_is() { [ "$(slurm_node_state "$1")" = "$2" ]; }
sinfo_log() { echo "--- $1" >>"$T/sinfo.log"; "$SLURM_BIN/sinfo" -N -o '%N %T %E' >>"$T/sinfo.log"; }

val --playbook "$T/ports.yaml" >"$T/c1.json" 2>"$T/c1.err"
c1=$(jq -r .id "$T/c1.json")
check "campaign 1 fails on gpu-node-03 only (its DOWN port)" jqt '
	[.verdict.nodes[] | select(.result != "pass") | .hostname] == ["gpu-node-03"]' \
	<("$RY" campaign show "$c1" --json --state-dir "$T/ctl")
check "gpu-node-03 ends DRAIN" wait_for 20 node_is gpu-node-03 drained
sinfo_log "after campaign $c1"
reason=$(slurm_node_reason gpu-node-03)
check "  ... with a railyard: reason naming the campaign and the finding ($reason)" \
	bash -c "[[ '$reason' == 'railyard: campaign $c1: gpu-node-03 preflight: '* ]]"
check "  ... at most 100 bytes, no quotes" bash -c "[ ${#reason} -le 100 ] && [[ '$reason' != *'\"'* ]]"
check "the passing nodes stay idle" bash -c "[ '$(slurm_node_state gpu-node-02)' = idle ] && [ '$(slurm_node_state gpu-node-04)' = idle ]"
check "the ledger: gpu-node-03's drain is done, from campaign $c1" test \
	"$(row_state ".node == \"gpu-node-03\" and .action == \"drain\" and .source_id == \"$c1\"")" = done
check "  ... gpu-node-01 passed but its drain is the admin's: not_ours, the admin's reason kept" wait_for 10 test \
	"$(actions ".node == \"gpu-node-01\" and .source_id == \"$c1\"" | jq -r '.[0].state + " " + .[0].result')" = \
	"not_ours admin: fan replaced, burn-in"
check "gpu-node-01 is still drained with the admin's reason" test \
	"$(slurm_node_state gpu-node-01)|$(slurm_node_reason gpu-node-01)" = "drained|admin: fan replaced, burn-in"
check "scontrol never resumed gpu-node-01" refused grep -q "NodeName=gpu-node-01 State=RESUME" "$T/scontrol.log"
"$RY" nodes --state-dir "$T/ctl" >"$T/nodes.txt"
check "railyard nodes shows the WLM state, ours marked" wait_for 10 bash -c \
	"'$RY' nodes --state-dir '$T/ctl' | grep -qE '^n-[0-9a-f]+ +gpu-node-03 .* drained\+ours '"
check "the node's REST document carries its WLM state" wait_for 10 bash -c \
	"'$RY' nodes --json --state-dir '$T/ctl' | jq -e '.items[] | select(.hostname == \"gpu-node-01\") |
	 .wlm.name == \"gpu-node-01\" and .wlm.drained == true and .wlm.ours == false and (.wlm.reason | startswith(\"admin:\"))'"

check "railyard node show says whose drain it is, and why" bash -c "'$RY' node show gpu-node-01 --state-dir '$T/ctl' |
	grep -qx 'wlm: gpu-node-01 drained (drained by someone else): admin: fan replaced, burn-in'"

# ---- a node we drained is resumed when it passes; the admin's is not ---------------------------
val --playbook "$T/plain.yaml" >"$T/c2.json" 2>"$T/c2.err"
c2=$(jq -r .id "$T/c2.json")
check "campaign 2 passes every node" jqt '.verdict.result == "pass"' <("$RY" campaign show "$c2" --json --state-dir "$T/ctl")
check "gpu-node-03 (drained by us) is resumed: idle" wait_for 20 node_is gpu-node-03 idle
sinfo_log "after campaign $c2"
check "  ... its resume row is done" test "$(row_state ".node == \"gpu-node-03\" and .source_id == \"$c2\"")" = done
check "gpu-node-01 is still drained after a passing revalidation" wait_for 10 test \
	"$(row_state ".node == \"gpu-node-01\" and .source_id == \"$c2\"")" = not_ours
check "  ... with the admin's reason" test "$(slurm_node_reason gpu-node-01)" = "admin: fan replaced, burn-in"

# ---- kill -9 between the verdict and the drain: drained after the restart, once -----------------
touch "$T/block"
val --playbook "$T/ports.yaml" >"$T/c3.json" 2>"$T/c3.err"
c3=$(jq -r .id "$T/c3.json")
db() { sqlite3 "$T/ctl/controller.db" "$1"; }
check "the drain is written ahead and fails while Slurm is unreachable" wait_for 20 test \
	"$(db "SELECT state || ' ' || (attempts > 0) FROM wlm_actions WHERE source_id = '$c3' AND action = 'drain'")" = "pending 1"
check "  ... gpu-node-03 is not drained yet" node_is gpu-node-03 idle
kill -9 "$CTL_PID"
wait "$CTL_PID" 2>/dev/null
rm -f "$T/block"
check "  ... while the controller is down, nothing drains it" node_is gpu-node-03 idle
start_controller --heartbeat-interval 300ms
check "after the restart gpu-node-03 is drained" wait_for 30 node_is gpu-node-03 drained
sinfo_log "after the restart"
check "  ... with the reason of campaign $c3" bash -c "[[ '$(slurm_node_reason gpu-node-03)' == 'railyard: campaign $c3: '* ]]"
check "  ... by one scontrol call that ran" test "$(grep -c "^ran update NodeName=gpu-node-03 State=DRAIN Reason=railyard: campaign $c3" "$T/scontrol.log")" = 1
check "  ... the ledger row is done, never redone" wait_for 10 test \
	"$(db "SELECT state FROM wlm_actions WHERE source_id = '$c3' AND action = 'drain'")" = done
check "every row of ours ended (none pending)" wait_for 10 test "$(db "SELECT count(*) FROM wlm_actions WHERE state = 'pending'")" = 0

# ---- the interface the maintenance codes against (wlm.h), with a running job -----------------
PROBE=$BUILD/tests/integration/wlm_probe
printf '{"kind": "slurm", "slurm": {"conf": "%s"}, "timeout_s": 10}' "$SLURM_CONF" >"$T/probe.json"
"$SLURM_BIN/srun" -w gpu-node-02 sleep 300 >"$T/srun.log" 2>&1 &
SRUN=$!
PIDS+=("$SRUN")
check "a job runs on gpu-node-02" wait_for 20 node_is gpu-node-02 allocated
sinfo_log "with a job on gpu-node-02"
"$PROBE" "$T/probe.json" it gpu-node-02 >"$T/probe.out" 2>&1
check "query: gpu-node-02 allocated, not drained, its running job and user" jqt '
	.name == "gpu-node-02" and .state == "allocated" and .drained == false and .reason == "" and
	(.jobs | length) == 1 and (.jobs[0].id | test("^[0-9]+$")) and .jobs[0].user == "root"' "$T/probe.out"
check "drain through the interface" "$PROBE" "$T/probe.json" it gpu-node-02 drain "railyard: maintenance m-1: test"
probe_line() { "$PROBE" "$T/probe.json" it "$1" | jq -r '"\(.state) \(.drained) \(.ours) \(.jobs | length)"'; }
check "  ... a node with a running job drains (draining), the job keeps running" test \
	"$(probe_line gpu-node-02)" = "draining true true 1"
kill "$SRUN" 2>/dev/null
check "  ... drained once the job ended" wait_for 30 node_is gpu-node-02 drained
check "resume-if-ours resumes it" test "$("$PROBE" "$T/probe.json" it gpu-node-02 resume)" = resumed
check "  ... and leaves gpu-node-01 (the admin's) alone, saying why" test \
	"$("$PROBE" "$T/probe.json" it gpu-node-01 resume)" = "not_ours: admin: fan replaced, burn-in"
refused "$PROBE" "$T/probe.json" it gpu-node-99 >/dev/null 2>"$T/p99.err"
check "a node Slurm does not know: an error naming it" grep -q "Slurm has no node gpu-node-99" "$T/p99.err"

# ---- unbind ---------------------------------------------------------------------------------
check "wlm unset removes the binding" wlm unset --cluster it
check "  ... then show says it is not bound (exit 1+)" refused wlm show --cluster it

if [ "$FAILS" -gt 0 ]; then
	echo "--- sinfo along the way"; cat "$T/sinfo.log"
	echo "--- scontrol calls"; cat "$T/scontrol.log"
	tail -n 30 "$T/controller.log"
fi
check_sanitizers
finish
