# Guest test (mode cluster N, driven by campaign-verbs.sh on the host): each guest enrolls a
# railyard-agent with the controller and runs it while the host runs a validation campaign over
# verbs (the host slows one guest down later with a deployment: a netem delay, by a command
# step that targets its host name). The host revokes the nodes when its checks are done: an
# agent that exits 3 (revoked) is the pass.
# Environment from the runner: RY_CTL_PORT, RY_TOKEN, RY_FP.
#
# The controller must see each agent at its wire address, since that is where it sends the
# other guests' benchmark clients: through the user-mode NIC every guest would be 127.0.0.1. So
# guest i dials 10.99.0.(10+i) through the user-mode NIC's gateway; on the host side (a network
# namespace of the test) that address is local and its route prefers the source
# 192.168.77.(10+i), this guest's wire address, which is what the controller records.
set -e
[ -n "${RY_CTL_PORT:-}" ] && [ -n "${RY_TOKEN:-}" ] && [ -n "${RY_FP:-}" ] ||
	ry_die "RY_CTL_PORT, RY_TOKEN and RY_FP must come from campaign-verbs.sh"
/usr/bin/ip route add 10.99.0.0/24 via 10.0.2.2 dev "$RY_HOSTIF" ||
	ry_die "cannot route 10.99.0.0/24 through the user-mode NIC"
ctl=10.99.0.$((10 + RY_ID)):$RY_CTL_PORT
# The host name playbooks target this guest by (facts.hostname).
echo "rdma-g$RY_ID" >/proc/sys/kernel/hostname || ry_die "cannot set the host name"
ry_retry 30 timeout 60 railyard-agent enroll --controller "$ctl" --token "$RY_TOKEN" \
	--ca-fingerprint "$RY_FP" --state-dir /tmp/agent --hostname "rdma-g$RY_ID" \
	>/tmp/enroll.log 2>&1 || { cat /tmp/enroll.log; ry_die "enrollment failed"; }
ry_log "enrolled as rdma-g$RY_ID through $ctl"
rc=0
timeout $((RY_TIMEOUT - 15)) railyard-agent run --state-dir /tmp/agent --reconnect-max 2s \
	>/tmp/agent.log 2>&1 || rc=$?
# What went wrong with a benchmark side, for the console log.
grep -hE " (warn|error): bench " /tmp/agent.log | tail -20 | sed "s/^/[g$RY_ID agent] /" || true
ry_log "agent: $(grep -c 'bench .*: done' /tmp/agent.log || true) benchmark side(s) done"
! grep -q "Sanitizer\|runtime error:" /tmp/agent.log || { cat /tmp/agent.log; ry_die "sanitizer report"; }
[ $rc = 3 ] || { tail -20 /tmp/agent.log; ry_die "agent exited $rc, not 3 (revoked by the host at the end)"; }
ry_log "agent revoked by the host: done"
