#!/usr/bin/env bash
# Benchmark, not a test: the REST API under load (issue 11). A fresh state directory gets NODES
# nodes written straight into its database before serve (cluster "bench", offline, each with
# the facts of the h200-ib fixture under its own host name, so that a reply is the size of a
# real one); then, with railyard-rest-load (libcurl multi, keep-alive, TLS verified against
# the controller's CA):
#  a) GET /api/v1/nodes?limit=1000 with 1, 4 and 8 connections, SECS each: requests/s, p50/p99,
#     reply size;
#  b) SUBS subscribers of GET /api/v1/events for SSE_SECS while one of two real agents (cluster
#     "live") is stopped and started again over and over (node.offline, node.online): streams
#     connected, events per subscriber, GET /healthz p50/p99 on a connection of its own;
#  c) the controller's CPU over each phase (utime + stime from /proc/PID/stat, % of one core)
#     and its RSS and peak RSS (VmRSS, VmHWM) after each.
# Reference, not a like-for-like comparison: the same GET, same load generator, against the
# same reply bytes as a static file served by `python3 -m http.server` over plain HTTP/1.1.
# Usage: bench/rest-bench.sh [--build DIR] [--nodes 1000] [--subscribers 1000] [--secs 10] [--sse-secs 15]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$SRC/build nodes=1000 subs=1000 secs=10 sse_secs=15
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--nodes) nodes=$2; shift 2 ;;
	--subscribers) subs=$2; shift 2 ;;
	--secs) secs=$2; shift 2 ;;
	--sse-secs) sse_secs=$2; shift 2 ;;
	*) echo "usage: $0 [--build DIR] [--nodes 1000] [--subscribers 1000] [--secs 10] [--sse-secs 15]" >&2; exit 2 ;;
	esac
done
for c in sqlite3 jq curl python3; do
	command -v "$c" >/dev/null || { echo "$0: needs $c" >&2; exit 1; }
done
[ -f "$BUILD/CMakeCache.txt" ] || cmake -S "$SRC" -B "$BUILD" >/dev/null
cmake --build "$BUILD" --target railyard-controller railyard railyard-agent railyard-rest-load \
	-j"$(nproc)" >/dev/null
CTL=$BUILD/controller/railyard-controller
RY=$BUILD/client/railyard
AGENT=$BUILD/nodeagent/railyard-agent
LOAD=$BUILD/bench/railyard-rest-load
FIX=$SRC/tests/fixtures/sysroots
W=$(mktemp -d /tmp/railyard-rest-bench.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT

wait_for() { # SECONDS command...
	local end=$(($(date +%s) + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt $end ] || { echo "$0: timed out: $*" >&2; exit 1; }
		sleep 0.2
	done
}
get() { awk -F= -v k="$1" '$1 == k { print $2 }' <<<"$out"; }

# CPU and memory of a process over a phase: begin PID, then end PID prints "cpu% rss hwm".
HZ=$(getconf CLK_TCK)
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
begin() { t_ticks=$(ticks "$1") t_ns=$(date +%s%N); }
end() {
	local dt=$(($(ticks "$1") - t_ticks)) ns=$(($(date +%s%N) - t_ns))
	awk -v dt="$dt" -v hz="$HZ" -v ns="$ns" '/^VmRSS:/ { r = $2 } /^VmHWM:/ { h = $2 }
		END { printf "%.0f %.0f %.0f\n", 100 * dt / hz / (ns / 1e9), r / 1024, h / 1024 }' \
		"/proc/$1/status"
}
summary=()

# ---- the state directory: NODES nodes in the database, before serve --------------------------
. "$SRC/bench/seed-nodes.sh"
seed_nodes "$W/ctl" "$nodes" "$AGENT" "$FIX/h200-ib"

# The controller needs a descriptor per stream: raise the soft limit where it is short.
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge $((subs + 256)) ] ||
	ulimit -n "$(ulimit -Hn)" || true
"$CTL" serve --state-dir "$W/ctl" --listen 127.0.0.1:0 --http 127.0.0.1:0 \
	>"$W/controller.log" 2>&1 &
CPID=$!
pids+=("$CPID")
wait_for 30 test -s "$W/ctl/api.addr"
wait_for 30 test -s "$W/ctl/controller.addr"
URL=$(cat "$W/ctl/api.addr") CA=$W/ctl/ca.crt
ADMIN=$("$RY" token create --name bench --role admin --state-dir "$W/ctl" 2>/dev/null |
	awk '/^token:/ { print $2 }')
api() { curl -sf --cacert "$CA" -H "Authorization: Bearer $ADMIN" "$@"; }
limit=$((nodes < 1000 ? nodes : 1000))
api -o "$W/nodes.json" "$URL/api/v1/nodes?limit=$limit"
[ "$(jq '.items | length' "$W/nodes.json")" = "$limit" ] ||
	{ echo "$0: GET /api/v1/nodes does not list $limit nodes" >&2; exit 1; }
echo "controller $URL, $nodes nodes, GET /api/v1/nodes?limit=$limit: $(stat -c %s "$W/nodes.json") bytes;" \
	"ulimit -n $(ulimit -n); $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- a) GET /api/v1/nodes, and the reference ----------------------------------------------------
# load LABEL PID URL PATH [--ca CA --token T]: one GET run per connection count
load() {
	local label=$1 pid=$2 url=$3 path=$4 c m
	shift 4
	for c in 1 4 8; do
		begin "$pid"
		if ! out=$("$LOAD" get --url "$url" --path "$path" --conns "$c" --seconds "$secs" "$@"); then
			printf '%s\n' "$out" >&2
			echo "$0: $label: the load generator failed (see above)" >&2
			exit 1
		fi
		read -r cpu rss hwm <<<"$(end "$pid")"
		m=$(printf '%-34s conns %d: %7s req/s  p50 %8s ms  p90 %8s ms  p99 %8s ms  max %8s ms  %s B/reply  %s connections  server CPU %s%%  RSS %s MiB (peak %s MiB)' \
			"$label" "$c" "$(get rps)" "$(get p50_ms)" "$(get p90_ms)" "$(get p99_ms)" \
			"$(get max_ms)" "$(get bytes_per_reply)" "$(get connections)" "$cpu" "$rss" "$hwm")
		echo "$m"
		summary+=("$m")
	done
}
echo "a) GET, ${secs} s per run"
load "railyard GET /api/v1/nodes (TLS)" "$CPID" "$URL" "/api/v1/nodes?limit=$limit" \
	--ca "$CA" --token "$ADMIN"
mkdir "$W/static"
cp "$W/nodes.json" "$W/static/nodes.json"
# http.server's own main and handler, keep-alive (HTTP/1.1) and Nagle off as curl and the
# controller have them: with Nagle on, each reply on a connection waits for a delayed ACK.
python3 -u -c 'import sys, functools, http.server as h
class H(h.SimpleHTTPRequestHandler):
	protocol_version = "HTTP/1.1"
	disable_nagle_algorithm = True
h.test(HandlerClass=functools.partial(H, directory=sys.argv[1]), port=0, bind="127.0.0.1",
	protocol="HTTP/1.1")' \
	"$W/static" >"$W/python.log" 2>&1 &
PYPID=$!
pids+=("$PYPID")
wait_for 10 grep -q ' port ' "$W/python.log"
pyport=$(sed -n 's/.* port \([0-9]*\) .*/\1/p' "$W/python.log" | head -1)
load "reference: python3 http.server (HTTP)" "$PYPID" "http://127.0.0.1:$pyport" /nodes.json
kill "$PYPID"

# ---- b) SUBS event-stream subscribers while a node goes offline and online ---------------------
api -o "$W/et.json" -H 'Content-Type: application/json' \
	-d '{"cluster":"live","uses":2,"ttl_ms":600000}' "$URL/api/v1/enrollment-tokens"
ADDR=$(cat "$W/ctl/controller.addr")
declare -A APID
agent() { # NAME SYSROOT: run it
	"$AGENT" run --state-dir "$W/$1" --sysroot "$FIX/$2" --reconnect-max 1s >>"$W/$1.log" 2>&1 &
	APID[$1]=$!
	pids+=("$!")
}
for n in a:h200-ib b:h200-roce; do
	"$AGENT" enroll --controller "$ADDR" --token "$(jq -r .token "$W/et.json")" \
		--ca-fingerprint "$(jq -r .ca_fingerprint "$W/et.json")" --state-dir "$W/${n%%:*}" \
		--sysroot "$FIX/${n#*:}" >"$W/${n%%:*}.enroll.log" 2>&1
	agent "${n%%:*}" "${n#*:}"
done
online() { [ "$(api "$URL/api/v1/nodes?cluster=live&state=online" | jq '.items | length')" = 2 ]; }
wait_for 30 online
last_event() { # the id of the newest event, from a replay of the ring
	{ curl -s --max-time 1 --cacert "$CA" -H "Authorization: Bearer $ADMIN" \
		"$URL/api/v1/events?last_event_id=0" || true; } | awk '/^id: / { id = $2 } END { print id + 0 }'
}

echo "b) $subs subscribers of GET /api/v1/events, ${sse_secs} s after they connect"
"$LOAD" sse --url "$URL" --ca "$CA" --token "$ADMIN" --subscribers "$subs" \
	--seconds "$sse_secs" >"$W/sse.out" 2>"$W/sse.err" &
SSEPID=$!
pids+=("$SSEPID")
begin "$CPID"
wait_for 90 grep -q '^ready' "$W/sse.out"
read -r cpu rss hwm <<<"$(end "$CPID")"
m=$(printf 'connecting %s streams: %s, server CPU %s%%  RSS %s MiB (peak %s MiB)' "$subs" \
	"$(sed -n 's/^ready //p' "$W/sse.out")" "$cpu" "$rss" "$hwm")
echo "$m"
summary+=("$m")
first=$(last_event)
begin "$CPID"
deadline=$(($(date +%s) + sse_secs * 8 / 10)) cycles=0
while [ "$(date +%s)" -lt $deadline ]; do
	kill -TERM "${APID[a]}"
	wait "${APID[a]}" 2>/dev/null || true
	sleep 0.3
	agent a h200-ib
	sleep 1
	cycles=$((cycles + 1))
done
set +e
wait "$SSEPID"
set -e
read -r cpu rss hwm <<<"$(end "$CPID")"
out=$(cat "$W/sse.out")
sed 's/^/  /' "$W/sse.err" >&2
emitted=$(($(last_event) - first))
m=$(printf '%s/%s streams connected (%s ended early), %s events emitted (%d stop/start cycles), events per subscriber min %s max %s; GET /healthz x %s (%s errors) while they are open: p50 %s ms p99 %s ms max %s ms; server CPU %s%%  RSS %s MiB (peak %s MiB)' \
	"$(get subscribers_connected)" "$subs" "$(get subscribers_ended_early)" "$emitted" "$cycles" \
	"$(get events_per_subscriber_min)" "$(get events_per_subscriber_max)" \
	"$(get healthz_requests)" "$(get healthz_errors)" "$(get healthz_p50_ms)" \
	"$(get healthz_p99_ms)" "$(get healthz_max_ms)" "$cpu" "$rss" "$hwm")
echo "$m"
summary+=("$m")

echo
echo "==== summary: $nodes nodes, $subs subscribers, $(nproc) CPUs (the load generator runs on the same host) ===="
printf '%s\n' "${summary[@]}"
echo "(the python3 http.server lines are a reference point: a static file over plain HTTP, no TLS, no auth, no JSON built; not a like-for-like comparison)"
