# Guest test (mode cluster N, driven by agents-verbs.sh on the host): each guest enrolls a
# railyard-agent with the controller on the host (10.0.2.2 through the user-mode NIC) and runs
# it; the host orders verbs benchmarks between the guests over the agents' sessions. The host
# revokes the nodes when its checks are done: an agent that exits 3 (revoked) is the pass.
# Environment from the runner: RY_CTL (HOST:PORT), RY_TOKEN, RY_FP.
set -e
[ -n "${RY_CTL:-}" ] && [ -n "${RY_TOKEN:-}" ] && [ -n "${RY_FP:-}" ] ||
	ry_die "RY_CTL, RY_TOKEN and RY_FP must come from agents-verbs.sh"
ry_retry 30 timeout 60 railyard-agent enroll --controller "$RY_CTL" --token "$RY_TOKEN" \
	--ca-fingerprint "$RY_FP" --state-dir /tmp/agent --hostname "rdma-g$RY_ID" \
	>/tmp/enroll.log 2>&1 || { cat /tmp/enroll.log; ry_die "enrollment failed"; }
ry_log "enrolled as rdma-g$RY_ID"
rc=0
# The health watchers sample every second: the host checks what they see of this real kernel
# (its /dev/kmsg, rxe0's port state and counters).
timeout $((RY_TIMEOUT - 15)) railyard-agent run --state-dir /tmp/agent --reconnect-max 2s \
	--health-interval 1s >/tmp/agent.log 2>&1 || rc=$?
grep -h "health" /tmp/agent.log | sed "s/^/[g$RY_ID agent] /" || true
grep -h "bench" /tmp/agent.log | sed "s/^/[g$RY_ID agent] /" || true
! grep -q "Sanitizer\|runtime error:" /tmp/agent.log || { cat /tmp/agent.log; ry_die "sanitizer report"; }
[ $rc = 3 ] || { tail -20 /tmp/agent.log; ry_die "agent exited $rc, not 3 (revoked by the host at the end)"; }
ry_log "agent revoked by the host: done"
