# Guest test (mode pair): the project's verbs code between two nodes. Guest 0 serves, guest 1
# connects; QP info crosses over TCP, then RDMA writes and sends over rxe on each eth0.
set -e
want=$(ry_gid_index "$RY_DEV" "$RY_IP") || ry_die "no RoCE v2 GID for $RY_IP"
if [ "$RY_ID" = 0 ]; then
	role="--server 18900"
else
	role="--client 192.168.77.10:18900"
fi
out=$(timeout 90 verbs-smoke --dev "$RY_DEV" --ifname "$RY_IF" --iters 50 $role 2>&1) ||
	{ echo "$out"; ry_die "verbs-smoke $role failed"; }
echo "$out"
got=$(echo "$out" | sed -n 's/^verbs-smoke: gid index \([0-9]*\) .*/\1/p')
[ "$got" = "$want" ] || ry_die "verbs-smoke chose GID index '$got', sysfs says $want"
echo "$out" | grep -q '^verbs-smoke: PASS' || ry_die "verbs-smoke did not report PASS"
