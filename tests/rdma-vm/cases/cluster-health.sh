# Guest test (mode cluster N): every guest pings its peers over the wire, runs ib_send_lat over
# rxe in a ring (server for the previous guest, client of the next; with 3 guests that is every
# pair), and reaches the host at 10.0.2.2 with a TCP connect to the runner's listener.
set -e
for p in $RY_PEERS; do
	ry_retry 30 ping -c 1 -W 2 "$p" >/dev/null || ry_die "no ICMP reply from $p"
done
ry_log "peers$RY_PEERS answer ICMP"
next=192.168.77.$((10 + (RY_ID + 1) % RY_N))
prev=192.168.77.$((10 + (RY_ID + RY_N - 1) % RY_N))
ry_perf_serve ring "$prev" 18801 ib_send_lat -n 200 &
serve=$!
ry_perf_remote lat ring "$next" 18801 ib_send_lat -n 200
ry_log "ring: ib_send_lat to $next measured"
wait $serve || ry_die "ring server failed"
[ -n "$RY_HOST_PORT" ] || ry_die "RY_HOST_PORT not set (runner started without --listen)"
reply=$(echo "guest $RY_ID" | timeout 10 nc 10.0.2.2 "$RY_HOST_PORT") || ry_die "TCP to 10.0.2.2:$RY_HOST_PORT failed"
[ "$reply" = "railyard-host-ok guest $RY_ID" ] || ry_die "bad reply from the host: '$reply'"
ry_log "host 10.0.2.2:$RY_HOST_PORT answered"
