#!/usr/bin/env bash
# Boot soft-RoCE qemu guests (software emulation), run a guest test script in each and report
# pass/fail. Usage:
#   run-vm.sh [options] single | pair | cluster N
#     --script FILE     guest test script (sourced by the guest's /init after /ry/lib.sh); required
#     --name NAME       log directory name under $RAILYARD_BUILD_DIR/rdma-vm/logs (default: mode)
#     --timeout S       wall-clock bound for each qemu (default 240); the guest script gets S-30
#     --env K=V         exported to the guest script (repeatable)
#     --listen          open a TCP listener on 127.0.0.1 (guests: 10.0.2.2:$RY_HOST_PORT) that
#                       every guest must reach once (cluster mode)
#     --mem M --smp S   guest memory (default 512M) and vCPUs (default: 2 single, 1 otherwise)
#     --no-build        do not (re)build the image first
#     --host-net        give every guest the user-mode NIC to the host (10.0.2.2), in any mode
#     --disk FILE       attach FILE (raw) to guest 0 as a virtio disk, /dev/vda (single mode)
#     --reboot          a guest that reboots boots again (qemu without -no-reboot): its run ends
#                       only through isa-debug-exit (or the timeout)
# Exit: 0 every guest passed, 1 failure (console tails printed), 77 cannot run here (skip).
set -euo pipefail

SRC_DIR=${RAILYARD_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD_DIR=${RAILYARD_BUILD_DIR:-}
HERE=$SRC_DIR/tests/rdma-vm
script='' name='' timeout=240 mem=512M smp='' build=1 listen=0 mode='' n=1
hostnet=0 disk='' reboot=0
envs=()

die() {
	echo "run-vm: error: $*" >&2
	exit 1
}
skip() {
	echo "SKIP rdma-vm: $*" >&2
	exit 77
}

while [ $# -gt 0 ]; do
	case "$1" in
	--script) script=$2; shift 2 ;;
	--name) name=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--env) envs+=("$2"); shift 2 ;;
	--listen) listen=1; shift ;;
	--mem) mem=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--no-build) build=0; shift ;;
	--host-net) hostnet=1; shift ;;
	--disk) disk=$2; shift 2 ;;
	--reboot) reboot=1; shift ;;
	single) mode=single n=1; shift ;;
	pair) mode=pair n=2; shift ;;
	cluster) mode=cluster n=${2:-}; shift 2 || die "cluster needs N" ;;
	*) die "unknown argument '$1' (see the header of $0)" ;;
	esac
done
[ -n "$BUILD_DIR" ] || die "RAILYARD_BUILD_DIR is not set"
[ -n "$mode" ] || die "no mode given (single, pair or cluster N)"
[ -n "$script" ] && [ -f "$script" ] || die "no guest script given (--script FILE)"
case "$n" in 1 | 2 | 3 | 4) ;; *) die "cluster size must be 2..4 on this machine (got '$n')" ;; esac
[ "$mode" != cluster ] || [ "$n" -ge 2 ] || die "cluster size must be 2..4"
case "$timeout" in '' | *[!0-9]*) die "bad --timeout" ;; esac
[ "$timeout" -ge 40 ] || die "--timeout must be at least 40 s"
[ -z "$disk" ] || [ "$mode" = single ] || die "--disk is for single mode"
[ -z "$disk" ] || [ -f "$disk" ] || die "--disk $disk: no such file"
[ "$mode" != cluster ] || hostnet=1
name=${name:-$mode}
if [ -z "$smp" ]; then
	# One guest may use both cores; several guests share them.
	[ "$mode" = single ] && smp=2 || smp=1
fi

command -v qemu-system-x86_64 >/dev/null 2>&1 ||
	skip "qemu-system-x86_64 not found (package qemu-system-x86; deploy/install-deps.sh)"
qemu-system-x86_64 -accel help 2>/dev/null | grep -qx tcg || skip "qemu has no TCG accelerator"
for t in setpriv timeout cpio gzip; do
	command -v $t >/dev/null 2>&1 || skip "host tool '$t' not found"
done
NET=$BUILD_DIR/tests/rdma-vm/rdma-vm-net
if [ "$mode" = cluster ] || [ "$mode" = pair ] || [ $listen = 1 ]; then
	[ -x "$NET" ] || die "$NET not built (cmake --build $BUILD_DIR --target rdma-vm-net)"
fi

OUT=$BUILD_DIR/rdma-vm
if [ $build = 1 ]; then
	rc=0
	"$HERE/build-image.sh" "$OUT" || rc=$?
	[ $rc = 0 ] || exit $rc
fi
IMG=$OUT/image
[ -f "$IMG/vmlinuz" ] && [ -f "$IMG/overlay.cpio.gz" ] || die "no image in $IMG (run build-image.sh)"

LOG=$OUT/logs/$name
rm -rf "$LOG"
mkdir -p "$LOG/run/ry"

pids=()
helper_pids=()
cleanup() {
	local p
	for p in "${pids[@]}" "${helper_pids[@]}"; do
		kill -KILL "$p" 2>/dev/null || true
	done
}
trap cleanup EXIT
trap 'echo "run-vm: interrupted, guests killed" >&2; exit 1' INT TERM HUP

hostport=
if [ $listen = 1 ]; then
	setpriv --pdeathsig KILL "$NET" listen "$LOG/listen.port" "$LOG/listen.record" "$n" \
		"$timeout" >"$LOG/listen.log" 2>&1 &
	listen_pid=$!
	helper_pids+=("$listen_pid")
fi
if [ "$mode" != single ]; then
	setpriv --pdeathsig KILL "$NET" hub "$n" "$LOG/hub.ports" "$((timeout + 10))" \
		>"$LOG/hub.log" 2>&1 &
	helper_pids+=($!)
fi
# The helpers write their port files before serving; wait for them (bounded).
waitfiles=()
[ $listen = 0 ] || waitfiles+=("$LOG/listen.port")
[ "$mode" = single ] || waitfiles+=("$LOG/hub.ports")
for f in "${waitfiles[@]}"; do
	for _ in $(seq 100); do
		[ -s "$f" ] && break
		sleep 0.05
	done
	[ -s "$f" ] || die "helper did not start: $(cat "${f%.*}.log" 2>/dev/null)"
done
[ $listen = 1 ] && hostport=$(cat "$LOG/listen.port")
hubports=()
[ "$mode" = single ] || read -r -a hubports <"$LOG/hub.ports"

# Per-run initramfs segment: the test script and its environment (the kernel unpacks
# concatenated compressed cpio archives in order).
cp "$script" "$LOG/run/ry/test.sh"
{
	[ -z "$hostport" ] || echo "RY_HOST_PORT=$hostport"
	for e in "${envs[@]}"; do
		printf '%s\n' "${e%%=*}='${e#*=}'"
	done
	echo "export RY_HOST_PORT ${envs[*]%%=*}"
} >"$LOG/run/ry/env"
(cd "$LOG/run" && find . -mindepth 1 | cpio -o -H newc -R 0:0 --quiet) | gzip -1 >"$LOG/run.cpio.gz"
cat "$IMG/base.cpio.gz" "$IMG/overlay.cpio.gz" "$LOG/run.cpio.gz" >"$LOG/initrd.img"

t0=$(date +%s%N)
for ((i = 0; i < n; i++)); do
	netargs=()
	hex=$(printf %02x $i)
	if [ "$mode" != single ]; then
		netargs+=(-netdev "socket,id=w0,udp=127.0.0.1:${hubports[$i]},localaddr=127.0.0.1:0"
			-device "virtio-net-pci,netdev=w0,mac=52:54:00:77:00:$hex")
	fi
	if [ $hostnet = 1 ]; then
		netargs+=(-netdev "user,id=u0,ipv6=off,net=10.0.2.0/24,host=10.0.2.2"
			-device "virtio-net-pci,netdev=u0,mac=52:54:00:02:00:$hex")
	fi
	[ -z "$disk" ] || netargs+=(-drive "file=$disk,format=raw,if=virtio,cache=writeback")
	noreboot=(-no-reboot)
	[ $reboot = 0 ] || noreboot=()
	# pdeathsig at both ends: if this script is killed (even by SIGKILL), timeout dies, and
	# with it qemu.
	setpriv --pdeathsig KILL timeout -k 5 "$timeout" setpriv --pdeathsig KILL \
		qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp "$smp" -m "$mem" \
		-nodefaults -no-user-config -display none -monitor none "${noreboot[@]}" \
		-serial "file:$LOG/guest$i.log" \
		-kernel "$IMG/vmlinuz" -initrd "$LOG/initrd.img" \
		-append "console=ttyS0 quiet panic=-1 tsc=reliable ry.id=$i ry.n=$n ry.mode=$mode ry.hostnet=$hostnet ry.timeout=$((timeout - 30))" \
		-device isa-debug-exit,iobase=0xf4,iosize=0x04 "${netargs[@]}" \
		</dev/null >"$LOG/qemu$i.log" 2>&1 &
	pids+=($!)
done

# Wait for every guest; the first failure kills the others (they would only wait for it).
declare -A result
fail=0 skipped=0 left=$n killed_rest=0
declare -A live
for ((i = 0; i < n; i++)); do
	live[${pids[$i]}]=1
done
while [ $left -gt 0 ]; do
	rc=0 done_pid=
	wait -n -p done_pid "${!live[@]}" || rc=$?
	# None of them is a job any more (reaped while the rest were killed): the rest failed.
	[ -n "$done_pid" ] || break
	unset "live[$done_pid]"
	for ((i = 0; i < n; i++)); do
		[ "${pids[$i]}" = "$done_pid" ] || continue
		case $rc in
		1) result[$i]=pass ;;
		77) result[$i]=skip; skipped=1 ;;
		3) result[$i]="FAIL (guest test failed)"; fail=1 ;;
		124 | 137 | 143) [ $killed_rest = 1 ] && result[$i]="FAIL (killed after another guest failed)" ||
			result[$i]="FAIL (killed at the ${timeout} s timeout: hang)"; fail=1 ;;
		0) result[$i]="FAIL (guest stopped without a result: panic or /init died)"; fail=1 ;;
		*) result[$i]="FAIL (qemu exit $rc: $(tail -1 "$LOG/qemu$i.log"))"; fail=1 ;;
		esac
	done
	left=$((left - 1))
	if [ $fail = 1 ] && [ $left -gt 0 ] && [ $killed_rest = 0 ]; then
		killed_rest=1
		for p in "${!live[@]}"; do
			kill -KILL "$p" 2>/dev/null || true
		done
	fi
done
ms=$((($(date +%s%N) - t0) / 1000000))
secs=$((ms / 1000)).$(printf %03d $((ms % 1000)))
if [ $listen = 1 ] && [ $fail = 0 ]; then
	if ! wait "$listen_pid"; then
		echo "run-vm: host listener did not get $n connections: $(cat "$LOG/listen.log")" >&2
		fail=1
	fi
fi
for ((i = 0; i < n; i++)); do
	st=${result[$i]:-"FAIL (killed after another guest failed)"}
	echo "run-vm: $name guest $i: $st (console: $LOG/guest$i.log)"
	case "$st" in pass | skip) ;; *)
		[ $fail = 1 ] || fail=1
		echo "----- guest $i console tail -----"
		tail -n 40 "$LOG/guest$i.log" 2>/dev/null || true
		echo "---------------------------------"
		;;
	esac
done
grep -h '^RY-METRIC\|^RY-WARN' "$LOG"/guest*.log 2>/dev/null | sed 's/^/run-vm: /' || true
echo "run-vm: $name: $n guest(s) in ${secs} s"
if [ $fail = 1 ]; then
	echo "run-vm: $name FAILED"
	exit 1
fi
if [ $skipped = 1 ]; then
	skip "$name: a guest skipped (see console logs in $LOG)"
fi
echo "run-vm: $name PASSED"
