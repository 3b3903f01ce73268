# Guest test (mode pair): perftest between two guests over one virtual wire, rxe on each eth0.
# Guest 0 serves, guest 1 is the client; clients retry until the server listens, and a failed
# measurement or a hung attempt is run again with a fresh server (lib.sh ry_perf_serve /
# ry_perf_remote). CTest sets RY_PERF_HANG_FIRST=write_lat: that test's first attempt hangs, so
# the again-path (abandon, stop the server, fresh server) is proven on every run.
set -e
srv=192.168.77.10
tests="lat:write_lat:ib_write_lat:18701:-n 300
lat:send_lat:ib_send_lat:18702:-n 300
bw:write_bw:ib_write_bw:18703:-n 200 -s 65536
lat:write_lat_rdma_cm:ib_write_lat:18704:-n 200 -R"
echo "$tests" | while IFS=: read -r kind name bin port args; do
	if [ "$RY_ID" = 0 ]; then
		ry_perf_serve "$name" "$(ry_pair_peer)" "$port" $bin $args
		ry_log "$name server done"
	else
		ry_perf_remote "$kind" "$name" "$srv" "$port" $bin $args
	fi
done
if [ "$RY_ID" = 0 ] && [ -n "${RY_PERF_HANG_FIRST:-}" ]; then
	[ -e "/tmp/$RY_PERF_HANG_FIRST.restarted" ] ||
		ry_die "$RY_PERF_HANG_FIRST: hung first attempt did not lead to a fresh server"
	ry_log "$RY_PERF_HANG_FIRST: hung attempt abandoned, measured on a fresh server"
fi
