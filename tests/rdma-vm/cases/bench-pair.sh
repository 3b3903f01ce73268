# Guest test (mode pair): railyard-bench's verbs transport between two guests over the wire
# (rxe on each eth0): guest 0 serves every test, guest 1 is the client; latency and bandwidth,
# write/send/read, side channel and rdma_cm, with data checks.
set -e
V="--transport verbs"
SRV=192.168.77.10
port=19600

# run NAME ARGS...: one test; the server side waits for the client (which retries its connect).
run() {
	_nm=$1
	shift
	port=$((port + 1))
	if [ "$RY_ID" = 0 ]; then
		timeout 120 railyard-bench "$@" -p $port --timeout 60000 >"/tmp/$_nm.srv" 2>&1 ||
			{ cat "/tmp/$_nm.srv"; ry_die "$_nm: server failed"; }
		ry_log "$_nm: server ok"
	else
		timeout 120 railyard-bench "$@" -p $port --timeout 60000 --json $SRV \
			>"/tmp/$_nm.json" 2>"/tmp/$_nm.err" ||
			{ cat "/tmp/$_nm.err" "/tmp/$_nm.json"; ry_die "$_nm: client failed"; }
		ry_bench_check "$_nm" "/tmp/$_nm.json" "$@"
	fi
}

run lat_write lat $V --op write -n 200 --check-data
if [ "$RY_ID" = 1 ]; then
	gid=$(ry_gid_index "$RY_DEV" "$RY_IP") || ry_die "no RoCE v2 GID for $RY_IP"
	grep -q "\"gid_index\": $gid" /tmp/lat_write.json ||
		{ cat /tmp/lat_write.json; ry_die "lat_write: GID index is not $gid"; }
fi
run lat_send_cm lat $V --op send -n 200 --rdma-cm --check-data
run lat_read lat $V --op read -n 200 --check-data
run bw_write bw $V --op write -s 16384 -n 300 -q 2 --check-data
run bw_send_cm bw $V --op send -s 4096 -n 300 --bidir --rdma-cm --check-data
run bw_read_cm bw $V --op read -s 16384 -n 200 --rdma-cm --check-data
ry_log "bench-pair: all passed"
