#!/usr/bin/env bash
# Integration: a cluster bound to command hooks (kind "hooks", as a Kubernetes site binds
# kubectl cordon / uncordon): a deployment that fails on gpu-node-03 drains it through the drain
# hook, with {node} and {reason} each arriving as one argument, verbatim (spaces, ";", "$(...)":
# no shell); without a state hook, a passing campaign resumes only the node the ledger says we
# drained. No Slurm needed.
. "$(dirname "$0")/lib.sh"

"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
start_controller --heartbeat-interval 300ms
new_token 4
for n in a:h200-ib b:h200-ib-2 c:h200-roce d:h200-degraded; do
	enroll "${n%%:*}" "$FIXTURES/${n#*:}" || die "enroll ${n%%:*}"
	start_agent "${n%%:*}" "$FIXTURES/${n#*:}"
done
check "four agents online" wait_for 30 count_is online 4

# The recording hook: each argument on its own line between brackets, one call per block.
cat >"$T/hook" <<EOF
#!/bin/sh
{ echo "call"; for a in "\$@"; do printf '[%s]\n' "\$a"; done; } >>"$T/hook.log"
EOF
chmod +x "$T/hook"
cat >"$T/binding.json" <<EOF
{"kind": "hooks", "hooks": {"drain": ["$T/hook", "cordon", "{node}", "--reason", "{reason}"],
 "resume": ["$T/hook", "uncordon", "{node}"]}, "node_map": {"gpu-node-04": "worker-4"}}
EOF
check "wlm set --file binds the cluster to hooks" "$RY" wlm set --cluster it --file "$T/binding.json" --state-dir "$T/ctl"

# ---- a deployment that fails on gpu-node-03 drains it through the hook ---------------------------
cat >"$T/hca-up.yaml" <<'EOF'
name: hca-up
version: "1"
steps:
  - {name: hca ports active, type: assert, params: {that: [{fact: "rdma.devices[*].ports[*].state", op: "==", value: ACTIVE, message: "ports; $(touch /tmp/ry-pwned) must be ACTIVE"}]}}
EOF
"$RY" deploy --state-dir "$T/ctl" --cluster it --playbook "$T/hca-up.yaml" --canary 0 --pause 0s \
	--max-fail 1 --timeout 60s >"$T/deploy.out" 2>&1
dep=$(awk '/^deployment d-/ {sub(":", "", $2); print $2; exit}' "$T/deploy.out")
check "the deployment $dep failed on gpu-node-03" jqt '[.nodes[] | select(.state == "failed") | .hostname] == ["gpu-node-03"]' \
	<("$RY" deployments "$dep" --json --state-dir "$T/ctl")
drained() { grep -q "^\[cordon\]$" "$T/hook.log" 2>/dev/null; }
check "the drain hook ran" wait_for 20 drained
# call / [cordon] / [gpu-node-03] / [--reason] / [REASON]
check "  ... with the node name as one argument" test "$(sed -n 3p "$T/hook.log")" = "[gpu-node-03]"
reason=$(sed -n 5p "$T/hook.log")
check "  ... and the reason as one argument, verbatim (\"; \$(\" and spaces kept, 100 bytes): $reason" bash -c \
	"[[ \"\$1\" == '[railyard: deployment $dep: gpu-node-03 failed: step 1 hca ports active failed: ports; \$('*']' ]] &&
	[ \${#1} -le 102 ]" _ "$reason"
check "  ... never through a shell" test ! -e /tmp/ry-pwned
check "  ... one call only" test "$(grep -c '^call$' "$T/hook.log")" = 1
ledger() { "$RY" wlm actions --cluster it --json --state-dir "$T/ctl" | jq -r "$1"; }
check "the ledger row: deployment source, done" test \
	"$(ledger '.items[] | select(.action == "drain") | .source + " " + .source_id + " " + .state')" = "deployment $dep done"

# ---- a passing campaign resumes only the node the ledger says we drained ------------------------
cat >"$T/plain.yaml" <<'EOF'
name: plain
version: "1"
steps:
  - {name: facts readable, type: assert, params: {that: [{fact: kernel.release, op: "!=", value: ""}]}}
validation:
  transport: tcp
  requires: []
  tests:
    - {name: pair-lat, kind: lat, pattern: pairs, size: 8, iters: 100}
  acceptance:
    - {metric: pair-lat.p50_us, op: ">=", value: 0}
EOF
"$RY" validate --state-dir "$T/ctl" --cluster it --playbook "$T/plain.yaml" --quick --json >"$T/c.json" 2>"$T/c.err"
cid=$(jq -r .id "$T/c.json")
check "campaign $cid passes" jqt '.verdict.result == "pass"' <("$RY" campaign show "$cid" --json --state-dir "$T/ctl")
ended() { [ "$(ledger "[.items[] | select(.source_id == \"$cid\" and .state == \"pending\")] | length")" = 0 ] &&
	[ "$(ledger "[.items[] | select(.source_id == \"$cid\")] | length")" = 4 ]; }
check "the campaign's four resume rows ended" wait_for 20 ended
check "gpu-node-03 (drained by us) uncordoned, the only uncordon" test \
	"$(grep -A2 '^call$' "$T/hook.log" | grep -A1 '^\[uncordon\]$' | grep -v uncordon)" = "[gpu-node-03]"
check "  ... the others: not ours (the ledger drained none of them)" test \
	"$(ledger "[.items[] | select(.source_id == \"$cid\" and .state == \"not_ours\") | .node] | sort | join(\" \")")" = \
	"gpu-node-01 gpu-node-02 worker-4"
check "node_map names gpu-node-04 worker-4 in the ledger" test \
	"$(ledger "[.items[] | select(.hostname == \"gpu-node-04\")][0].node")" = worker-4

check_sanitizers
finish
