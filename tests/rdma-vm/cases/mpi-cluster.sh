# Guest test (mode cluster 3): Open MPI 4.1 + UCX 1.13 across the guests, no SSH.
# Every guest: host name rdma-g<i> (Open MPI tells nodes apart by name), /etc/hosts for all, the
# test-only ssh stand-in's server (/ry/test-rsh --serve). Guest 1 also serves one ucx_perftest.
# Guest 0 then: checks that the stand-in refuses anything but orted; UCP tag latency to guest 1
# over rxe (ucx_perftest); an MPI_Allreduce sweep on all three guests launched by mpirun through
# the stand-in, once over TCP (pml ob1, btl tcp) as the baseline and once over UCX on rxe0 (pml
# ucx, rc_verbs + ud_verbs); every element of every result checked, every rank on its own guest.
set -e
RY_MPI_BIN=/opt/railyard/bin/mpi-allreduce
[ -x "$RY_MPI_BIN" ] || { echo "SKIP: mpi-allreduce not built (no MPI on the build host)"; exit 77; }
[ "$RY_N" = 3 ] || ry_die "mpi-cluster runs on cluster 3 (RY_N=$RY_N)"

hostname "rdma-g$RY_ID"
echo "hosts: files" >/etc/nsswitch.conf
j=0
while [ $j -lt "$RY_N" ]; do
	echo "192.168.77.$((10 + j)) rdma-g$j" >>/etc/hosts
	j=$((j + 1))
done
/ry/test-rsh --serve >/dev/null

# UCX over soft-RoCE (README.md, "Open MPI and UCX"): the RDMA device only (not the user-mode
# NIC, whose 10.0.2.15 every guest shares); UD's destination-GID check drops every packet rxe
# delivers (UD wire-up then times out); rendezvous RDMA reads capped at 64 KiB in flight (1 MiB
# reads overran the emulated wire and hung).
export UCX_NET_DEVICES=rxe0:1 UCX_TLS=rc_verbs,ud_verbs UCX_UD_ETH_DGID_CHECK=n \
	UCX_RC_VERBS_TX_NUM_GET_BYTES=65536 UCX_RC_VERBS_MAX_GET_ZCOPY=65536
UCX_PERF_PORT=13337
G0=192.168.77.10

if [ "$RY_ID" = 1 ]; then
	timeout 150 ucx_perftest -p $UCX_PERF_PORT >/tmp/ucxperf.srv 2>&1 &
	ucxsrv=$!
fi
ry_board_post rsh ready

if [ "$RY_ID" != 0 ]; then
	# --env RY_MPI_NETEM=1: guest 2 is slowed (20 ms netem on its wire NIC) when guest 0 asks.
	if [ "$RY_ID" = 2 ] && [ "${RY_MPI_NETEM:-0}" = 1 ]; then
		ry_board_wait $G0 slow 240 >/dev/null || ry_die "no word from guest 0"
		/usr/sbin/tc qdisc add dev "$RY_IF" root netem delay 20ms || ry_die "tc netem failed"
		ry_board_post slowed yes
	fi
	# Stay up (our orted and rank live here) until guest 0 is done, then let it know we saw it.
	ry_board_wait $G0 mpi 240 >/dev/null || ry_die "no word from guest 0"
	if [ "$RY_ID" = 1 ]; then
		wait "$ucxsrv" || { cat /tmp/ucxperf.srv; ry_die "ucx_perftest server failed"; }
	fi
	ry_board_post seen yes
	exit 0
fi

for p in $RY_PEERS; do
	ry_board_wait "$p" rsh 60 >/dev/null || ry_die "the test-rsh server on $p did not start"
done

# 1. The stand-in starts orted and nothing else.
rc=0
/ry/test-rsh rdma-g1 /bin/sh -c id >/tmp/rsh-refused.out 2>&1 || rc=$?
[ $rc != 0 ] && grep -q "refused: only /usr/bin/orted" /tmp/rsh-refused.out ||
	{ cat /tmp/rsh-refused.out; ry_die "test-rsh did not refuse /bin/sh"; }
ry_log "test-rsh refused another binary: $(cat /tmp/rsh-refused.out)"

# 2. UCX between two guests over rxe: UCP tag-matching latency (the server waits for us).
end=$(($(cut -d. -f1 /proc/uptime) + 60))
while :; do
	rc=0
	timeout 60 ucx_perftest 192.168.77.11 -p $UCX_PERF_PORT -t tag_lat -n 200 >/tmp/ucxperf.cli 2>&1 ||
		rc=$?
	[ $rc != 0 ] || break
	grep -q -i "connect\|refused" /tmp/ucxperf.cli && [ "$(cut -d. -f1 /proc/uptime)" -lt $end ] ||
		{ cat /tmp/ucxperf.cli; ry_die "ucx_perftest tag_lat to rdma-g1 failed (rc $rc)"; }
	sleep 1
done
lat=$(awk '/^Final:/ { print $3 }' /tmp/ucxperf.cli)
[ -n "$lat" ] || { cat /tmp/ucxperf.cli; ry_die "no result from ucx_perftest"; }
echo "RY-METRIC ucx_tag_lat_p50 $lat usec"

# 3. MPI_Allreduce across the three guests, launched through the stand-in.
# ry_mpi NAME MAXBYTES MCA...: run the sweep; every rank on its own guest; every result right.
ry_mpi() {
	_nm=$1 _max=$2
	shift 2
	_t0=$(cut -d' ' -f1 /proc/uptime)
	_rc=0
	timeout 120 mpirun --allow-run-as-root -np 3 -H rdma-g0,rdma-g1,rdma-g2 --bind-to none \
		--mca plm_rsh_agent /ry/test-rsh --mca oob_tcp_if_include 192.168.77.0/24 "$@" \
		"$RY_MPI_BIN" --min-bytes 4 --max-bytes "$_max" --iters 5 --warmup 1 \
		>"/tmp/$_nm.out" 2>&1 || _rc=$?
	ry_log "$_nm: mpirun exit $_rc after $_t0 .. $(cut -d' ' -f1 /proc/uptime) s"
	[ $_rc = 0 ] || { tail -40 "/tmp/$_nm.out"; ry_die "$_nm: mpirun failed (exit $_rc)"; }
	grep '^RY-MPI allreduce' "/tmp/$_nm.out"
	grep -q '^RY-MPI hosts 0=rdma-g0 1=rdma-g1 2=rdma-g2 library Open MPI v4.1.4 wrong 0$' \
		"/tmp/$_nm.out" || { cat "/tmp/$_nm.out"; ry_die "$_nm: ranks not on rdma-g0..2, or wrong results"; }
	if ! grep -q '^RY-MPI allreduce ranks 3 ' "/tmp/$_nm.out" ||
		grep '^RY-MPI allreduce' "/tmp/$_nm.out" | grep -qv ' wrong 0$'; then
		cat "/tmp/$_nm.out"
		ry_die "$_nm: no result for 3 ranks, or wrong elements in a result"
	fi
	awk -v nm="$_nm" -v max="$_max" '$1 == "RY-MPI" && $6 == max {
		print "RY-METRIC " nm "_busbw_" max " " $14 " GB/s"; print "RY-METRIC " nm "_time_" max " " $10 " usec" }
		$1 == "RY-MPI" && $6 == 8 { print "RY-METRIC " nm "_time_8 " $10 " usec" }' "/tmp/$_nm.out"
}
ry_mpi tcp 1048576 --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include 192.168.77.0/24
# pml_ucx_devices: Open MPI 4.1 only bumps pml ucx for mlx* devices by default, and a forced
# pml ucx without a matching device fails MPI_Init.
ry_mpi ucx 1048576 --mca pml ucx --mca pml_ucx_devices any --mca btl ^openib,tcp \
	-x UCX_NET_DEVICES -x UCX_TLS -x UCX_UD_ETH_DGID_CHECK -x UCX_RC_VERBS_TX_NUM_GET_BYTES \
	-x UCX_RC_VERBS_MAX_GET_ZCOPY

# --env RY_MPI_NETEM=1 (a finding, not a CTest assertion): the same sweeps with rdma-g2 slowed;
# the 1 MiB all-reduce time must grow by at least a fifth on both transports.
if [ "${RY_MPI_NETEM:-0}" = 1 ]; then
	ry_board_post slow please
	ry_board_wait 192.168.77.12 slowed 60 >/dev/null || ry_die "guest 2 did not slow down"
	ry_mpi tcp_slow 1048576 --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include 192.168.77.0/24
	ry_mpi ucx_slow 1048576 --mca pml ucx --mca pml_ucx_devices any --mca btl ^openib,tcp \
		-x UCX_NET_DEVICES -x UCX_TLS -x UCX_UD_ETH_DGID_CHECK -x UCX_RC_VERBS_TX_NUM_GET_BYTES \
		-x UCX_RC_VERBS_MAX_GET_ZCOPY
	for t in tcp ucx; do
		awk -v t=$t '$1 == "RY-MPI" && $6 == 1048576 { v[FILENAME] = $10 }
			END { h = v["/tmp/" t ".out"]; s = v["/tmp/" t "_slow.out"]
				printf "RY-METRIC %s_slow_ratio_1048576 %.2f x\n", t, s / h; exit !(s > 1.2 * h) }' \
			"/tmp/$t.out" "/tmp/${t}_slow.out" || ry_die "$t: rdma-g2 slowed by 20 ms is not seen at 1 MiB"
	done
fi

ry_board_post mpi finished
for p in $RY_PEERS; do
	ry_board_ack "$p" seen yes 60 || ry_die "guest $p did not read our word"
done
