#!/usr/bin/env bash
# Integration: event streams cannot take the REST API's listener. One viewer token opening
# stream after stream (the flood of an outside review: 4,096 of them filled the connection limit
# and every other client waited) gets its share (16) and a 429 with Retry-After for each of the
# rest, on a connection the server closes; streams from one address past its share (64) the
# same; meanwhile an admin's GET /api/v1/nodes is answered at once. Streams closed by their
# client give their slots back. 127.0.0.1 only, ephemeral ports.
. "$(dirname "$0")/lib.sh"

PER_TOKEN=16 PER_PEER=64 # controller/api/api_streams.h
"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
start_controller
wait_for 10 test -s "$T/ctl/api.addr" || die "no api.addr"
URL=$(cat "$T/ctl/api.addr")
HPORT=${URL##*:}
CA=$T/ctl/ca.crt
mkapi() { "$CTL" api-token create --name "$1" --role "$2" --state-dir "$T/ctl" 2>/dev/null | awk '/^token:/ {print $2}'; }
ADMIN=$(mkapi admin admin)
for i in 1 2 3 4 5; do V[i]=$(mkapi "viewer$i" viewer); done
check "tokens made" test -n "$ADMIN" -a -n "${V[5]}"

# admin_nodes_in SECONDS: the admin's listing answered 200 within that many seconds
admin_nodes_in() {
	local t0=$(date +%s%N) code
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time "$1" --cacert "$CA" \
		-H "Authorization: Bearer $ADMIN" "$URL/api/v1/nodes")
	echo "  admin GET /api/v1/nodes: $code in $((($(date +%s%N) - t0) / 1000000)) ms"
	[ "$code" = 200 ]
}

# The flood: 200 streams asked for with one viewer token, then the address's share filled
# with three more tokens, then one more from a fifth.
python3 "$SRC/tests/integration/sse_flood.py" "$HPORT" "$CA" "$T/release" "${V[1]}:200" \
	"${V[2]}:$PER_TOKEN" "${V[3]}:$PER_TOKEN" "${V[4]}:$PER_TOKEN" "${V[5]}:3" >"$T/flood.out" 2>&1 &
FLOOD=$!
PIDS+=("$FLOOD")
check "the flood ran (every reply in time)" wait_for 120 grep -q '^HOLDING' "$T/flood.out"
cat "$T/flood.out"
check "one token: its $PER_TOKEN streams, 429 for the other $((200 - PER_TOKEN)), each closed by the server" \
	grep -qx "0 200=$PER_TOKEN 429=$((200 - PER_TOKEN)) closed=$((200 - PER_TOKEN))" "$T/flood.out"
check "three more tokens fill the address's share ($PER_PEER)" \
	bash -c "grep -qx '1 200=$PER_TOKEN closed=0' '$T/flood.out' && grep -qx '2 200=$PER_TOKEN closed=0' '$T/flood.out' &&
		grep -qx '3 200=$PER_TOKEN closed=0' '$T/flood.out'"
check "  a fifth token from that address: 429" grep -qx "4 429=3 closed=3" "$T/flood.out"
check "  $PER_PEER streams held" grep -qx "HOLDING $PER_PEER" "$T/flood.out"
check "with the streams held, an admin's GET /api/v1/nodes is answered within 5 s" admin_nodes_in 5
check "  and the portal's page" test "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$CA" "$URL/")" = 200
curl -s -D "$T/refused.hdr" -o "$T/refused.json" --max-time 10 --cacert "$CA" \
	-H "Authorization: Bearer ${V[1]}" "$URL/api/v1/events"
check "the refusal: 429 too_many_requests, naming the token's share" jqt \
	".error.code == \"too_many_requests\" and (.error.message | test(\"token has $PER_TOKEN event streams\"))" "$T/refused.json"
check "  with Retry-After and Connection: close" bash -c "
	grep -qi '^HTTP/1.1 429' '$T/refused.hdr' && grep -qi '^retry-after: 15' '$T/refused.hdr' &&
	grep -qi '^connection: close' '$T/refused.hdr'"
check "the unix socket's admin is not counted: a stream there" bash -c "
	curl -s -o /dev/null -w '%{http_code}' --max-time 2 --unix-socket '$T/ctl/api.sock' \
		http://localhost/api/v1/events | grep -qx 200"

# The streams end (the client goes): their slots come back once the server notices (its next
# keepalive write, within ~15 s plus the 5 s tick).
touch "$T/release"
check "the flood's client exits" wait_for 20 exited "$FLOOD"
stream_ok() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --cacert "$CA" \
	-H "Authorization: Bearer ${V[1]}" "$URL/api/v1/events")" = 200 ]; }
check "closed streams give their slots back: the token streams again" wait_for 45 stream_ok
check "the server still serves" admin_nodes_in 5

kill -TERM "$CTL_PID"
check "controller exits cleanly" wait_for 15 exited "$CTL_PID"
check_sanitizers
finish
