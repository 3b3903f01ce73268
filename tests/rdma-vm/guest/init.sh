#!/bin/sh
# PID 1 of an rdma-vm guest: mounts, loads the soft-RoCE modules, brings up the network of the
# mode given on the kernel command line, creates rxe0, runs /ry/test.sh, reports through port 0xf4.
export PATH=/usr/sbin:/usr/bin:/opt/railyard/bin
export HOME=/root

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm

# Exit byte b makes qemu exit with (b << 1) | 1: 0 -> 1 (pass), 1 -> 3 (fail), 38 -> 77 (skip).
ry_exit() {
	echo "RY-RESULT: guest $RY_ID $2"
	printf "\\$(printf %o "$1")" | dd of=/dev/port bs=1 seek=244 count=1 conv=notrunc 2>/dev/null
	# Not reached under qemu with isa-debug-exit; otherwise power off (qemu exits 0 = fail).
	poweroff -f
}
ry_fail() {
	echo "RY-ERROR: guest $RY_ID: $*"
	ry_exit 1 FAIL
}

RY_ID=0
RY_N=1
RY_MODE=single
RY_TIMEOUT=120
RY_HOSTNET=0
for w in $(cat /proc/cmdline); do
	case "$w" in
	ry.id=*) RY_ID=${w#ry.id=} ;;
	ry.n=*) RY_N=${w#ry.n=} ;;
	ry.mode=*) RY_MODE=${w#ry.mode=} ;;
	ry.timeout=*) RY_TIMEOUT=${w#ry.timeout=} ;;
	ry.hostnet=*) RY_HOSTNET=${w#ry.hostnet=} ;;
	esac
done
[ -f /ry/env ] && . /ry/env
export RY_ID RY_N RY_MODE RY_TIMEOUT
echo "RY-BOOT: guest $RY_ID mode $RY_MODE n $RY_N uptime $(cut -d' ' -f1 /proc/uptime)"

while read -r m; do
	insmod "/usr/lib/ry-modules/$m" || ry_fail "insmod $m failed"
done </usr/lib/ry-modules/order

# Interface by MAC: the runner gives the wire NIC 52:54:00:77:00:<id> and the user-mode NIC
# 52:54:00:02:00:<id>, so names do not depend on probe order.
ry_if_by_mac() {
	for d in /sys/class/net/*; do
		[ "$(cat "$d/address" 2>/dev/null)" = "$1" ] && basename "$d" && return 0
	done
	return 1
}
ry_wait_if() {
	i=0
	while [ $i -lt 100 ]; do
		ry_if_by_mac "$1" && return 0
		i=$((i + 1))
		sleep 0.1
	done
	return 1
}

/usr/bin/ip link set lo up
hexid=$(printf %02x "$RY_ID")
case "$RY_MODE" in
single)
	RY_IF=dummy0
	RY_IP=192.168.77.1
	RY_PEERS=
	;;
pair | cluster)
	RY_IF=$(ry_wait_if "52:54:00:77:00:$hexid") || ry_fail "no wire NIC 52:54:00:77:00:$hexid"
	RY_IP=192.168.77.$((10 + RY_ID))
	RY_PEERS=
	j=0
	while [ $j -lt "$RY_N" ]; do
		[ $j = "$RY_ID" ] || RY_PEERS="$RY_PEERS 192.168.77.$((10 + j))"
		j=$((j + 1))
	done
	;;
*) ry_fail "unknown mode $RY_MODE" ;;
esac
/usr/bin/ip link set "$RY_IF" up || ry_fail "cannot bring up $RY_IF"
/usr/bin/ip addr add "$RY_IP/24" dev "$RY_IF" || ry_fail "cannot address $RY_IF"
if [ "$RY_MODE" = cluster ] || [ "$RY_HOSTNET" = 1 ]; then
	# User-mode NIC: 10.0.2.2 is the host's loopback. No default route: nothing else is reachable.
	RY_HOSTIF=$(ry_wait_if "52:54:00:02:00:$hexid") || ry_fail "no user-mode NIC"
	/usr/bin/ip link set "$RY_HOSTIF" up
	/usr/bin/ip addr add 10.0.2.15/24 dev "$RY_HOSTIF" || ry_fail "cannot address $RY_HOSTIF"
fi
export RY_IF RY_IP RY_PEERS RY_HOSTIF
export RY_DEV=rxe0

/usr/bin/rdma link add rxe0 type rxe netdev "$RY_IF" || ry_fail "rdma link add rxe0 on $RY_IF failed"
i=0
until grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 100 ] || ry_fail "rxe0 port did not become ACTIVE"
	sleep 0.1
done
echo "RY-READY: guest $RY_ID if $RY_IF ip $RY_IP peers$RY_PEERS uptime $(cut -d' ' -f1 /proc/uptime)"

# qemu 7.2's virtio-net (Debian 12's) can stop taking a guest's frames for good: the driver's
# transmit queue stays stopped and the kernel logs "NETDEV WATCHDOG: ... transmit queue 0 timed
# out" every 5 s from then on (qemu issue 1365; seen once in a CI run, in the middle of a
# campaign). Taking the link down and up restarts the queue, as podman's net-recovery service
# does for the same fault. Each recovery is on the console as RY-WARN, which run-vm.sh repeats.
# One queue pair per NIC here (qemu's default); the loop forks nothing but sleep.
ry_tx_watch() {
	q=/sys/class/net/$1/queues/tx-0/tx_timeout
	if ! read -r seen <"$q"; then
		echo "RY-WARN: guest $RY_ID: $1 has no tx_timeout counter; a stalled queue is not recovered"
		return
	fi
	while sleep 2; do
		read -r now <"$q" || return
		[ "$now" = "$seen" ] && continue
		echo "RY-WARN: guest $RY_ID: $1's transmit queue stalled (tx_timeout $seen -> $now, the qemu virtio-net fault); link taken down and up at uptime $(cut -d' ' -f1 /proc/uptime)"
		/usr/bin/ip link set "$1" down
		/usr/bin/ip link set "$1" up
		read -r seen <"$q" || return
	done
}
for nic in $([ "$RY_IF" = dummy0 ] || echo "$RY_IF") $RY_HOSTIF; do
	ry_tx_watch "$nic" </dev/null &
done

if [ ! -f /ry/test.sh ]; then
	ry_fail "no /ry/test.sh in the initramfs"
fi
cd /tmp || ry_fail "no /tmp"
timeout "$RY_TIMEOUT" sh -c '. /ry/lib.sh && . /ry/test.sh' </dev/null 2>&1
rc=$?
echo "RY-DONE: guest $RY_ID rc $rc uptime $(cut -d' ' -f1 /proc/uptime)"
case $rc in
0) ry_exit 0 PASS ;;
77) ry_exit 38 SKIP ;;
124 | 143) ry_fail "test script timed out after $RY_TIMEOUT s" ;;
*) ry_fail "test script exited $rc" ;;
esac
