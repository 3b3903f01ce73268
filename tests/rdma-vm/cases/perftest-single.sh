# Guest test (mode single): perftest and rping over rxe0 on dummy0 as a health check of the
# harness. Sourced by /init after /ry/lib.sh; exit 0 pass, anything else fail.
set -e
ry_log "GID index $(ry_gid_index "$RY_DEV" "$RY_IP") for $RY_IP"
ry_perf_local lat write_lat ib_write_lat -p 18601 -n 1000
ry_perf_local lat send_lat ib_send_lat -p 18602 -n 1000
ry_perf_local lat read_lat ib_read_lat -p 18603 -n 500
ry_perf_local bw write_bw ib_write_bw -p 18604 -n 500 -s 65536
ry_perf_local bw send_bw ib_send_bw -p 18605 -n 500 -s 65536
ry_perf_local lat write_lat_rdma_cm ib_write_lat -p 18606 -n 500 -R
# rdma_cm through rping: server for one connection, client with data verification.
timeout 30 rping -s -a "$RY_IP" -C 10 >/tmp/rping.srv 2>&1 &
srv=$!
ry_retry 20 timeout 20 rping -c -a "$RY_IP" -C 10 -v -S 64 >/tmp/rping.cli 2>&1 ||
	{ cat /tmp/rping.cli; ry_die "rping client failed"; }
wait $srv || { cat /tmp/rping.srv; ry_die "rping server failed"; }
[ "$(grep -c 'ping data' /tmp/rping.cli)" -eq 10 ] || { cat /tmp/rping.cli; ry_die "rping: not 10 verified pings"; }
ry_log "rping: 10 verified pings"
