# Guest test (mode single): the project's own verbs code (nodeagent/bench/verbs) through
# verbs-smoke: device, port, GID selection by type and address, MR/CQ/QP, RTS, send and RDMA write.
set -e
want=$(ry_gid_index "$RY_DEV" "$RY_IP") || ry_die "no RoCE v2 GID for $RY_IP"
out=$(verbs-smoke --dev "$RY_DEV" --ifname "$RY_IF" 2>&1) || { echo "$out"; ry_die "verbs-smoke failed"; }
echo "$out"
got=$(echo "$out" | sed -n 's/^verbs-smoke: gid index \([0-9]*\) .*/\1/p')
[ "$got" = "$want" ] || ry_die "verbs-smoke chose GID index '$got', sysfs says $want"
echo "$out" | grep -q '^verbs-smoke: PASS' || ry_die "verbs-smoke did not report PASS"
# An address the interface does not have has no GID: refused, not a silent fallback to index 0.
if out=$(verbs-smoke --dev "$RY_DEV" --ipv4 10.9.9.9 --iters 1 2>&1); then
	echo "$out"
	ry_die "verbs-smoke accepted an address without a GID"
fi
echo "$out" | grep -q "no RoCE v2 GID" || { echo "$out"; ry_die "unexpected error for a foreign address"; }
if out=$(verbs-smoke --dev nosuch0 --iters 1 2>&1); then
	ry_die "verbs-smoke opened a device that does not exist"
fi
ry_log "foreign address and unknown device refused"
