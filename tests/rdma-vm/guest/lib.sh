# Helpers for guest test scripts; /init sources this before /ry/test.sh. busybox sh.
# Environment from /init: RY_ID RY_N RY_MODE RY_DEV RY_IF RY_IP RY_PEERS (+ /ry/env from the runner).

ry_log() {
	echo "[g$RY_ID $(cut -d' ' -f1 /proc/uptime)] $*"
}

ry_die() {
	echo "RY-ERROR: guest $RY_ID: $*"
	exit 1
}

# ry_gid_index DEV IPV4: index of the RoCE v2 GID ::ffff:IPV4 on port 1, by type and address.
ry_gid_index() {
	# shellcheck disable=SC2046,SC2183 # the four octets are split on purpose
	_want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' $(echo "$2" | tr . ' '))
	for _g in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		_n=${_g##*/}
		[ "$(cat "$_g" 2>/dev/null)" = "$_want" ] || continue
		[ "$(cat /sys/class/infiniband/"$1"/ports/1/gid_attrs/types/"$_n" 2>/dev/null)" = "RoCE v2" ] ||
			continue
		echo "$_n"
		return 0
	done
	return 1
}

# ry_retry SECONDS CMD...: run CMD until it succeeds, at most SECONDS (one try a second).
ry_retry() {
	_end=$(($(cut -d. -f1 /proc/uptime) + $1))
	shift
	while ! "$@"; do
		[ "$(cut -d. -f1 /proc/uptime)" -lt "$_end" ] || return 1
		sleep 1
	done
}

# ry_perf_check KIND NAME FILE: parse a perftest result table (KIND lat or bw) and print
# "RY-METRIC NAME VALUE UNIT" (bw: average in the unit of the header, MB/sec unless
# --report_gbits; lat: t_typical in usec). inf, nan and zero are a failed measurement.
ry_perf_check() {
	awk -v kind="$1" -v name="$2" -v id="$RY_ID" '
		/BW average\[/ { u = $0; sub(/.*BW average\[/, "", u); sub(/\].*/, "", u); unit = u }
		$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5 { row = $0; nrow++ }
		END {
			if (nrow == 0) { print "RY-WARN: guest " id ": " name ": no result row"; exit 1 }
			if (tolower(row) ~ /nan|inf/) { print "RY-WARN: guest " id ": " name ": failed measurement: " row; exit 1 }
			n = split(row, f, " ")
			v = (kind == "bw") ? f[4] : f[5]
			if (v !~ /^[0-9]+(\.[0-9]+)?$/ || v + 0 <= 0) {
				print "RY-WARN: guest " id ": " name ": failed measurement: " row; exit 1
			}
			if (kind == "bw" && unit == "") unit = "MB/sec"
			printf "RY-METRIC %s %s %s\n", name, v, (kind == "bw") ? unit : "usec"
		}' "$3"
}

# A failed measurement (perftest's clock calibration fails now and then under emulation and it
# prints 0.00/inf/nan while exiting 0) is repeated, up to this many attempts in all. So is an
# attempt that hangs: an rdma_cm REQ lost on the emulated wire is retried by the kernel's CM for
# about a minute, so one attempt gets RY_PERF_ATTEMPT_S and is then abandoned and repeated.
RY_PERF_ATTEMPTS=3
RY_PERF_ATTEMPT_S=30

# ry_perf_client KIND NAME SERVER BIN ARGS...: run a perftest client against SERVER, retrying
# while the server is not listening yet (perftest clients do not retry), then check its output.
# 0: measured (RY-METRIC printed), 2: failed measurement or hung attempt; any other failure ends
# the script.
ry_perf_client() {
	_kind=$1 _name=$2 _srv=$3
	shift 3
	_gid=$(ry_gid_index "$RY_DEV" "$RY_IP") || ry_die "no RoCE v2 GID for $RY_IP on $RY_DEV"
	_end=$(($(cut -d. -f1 /proc/uptime) + 60))
	while :; do
		_crc=0
		# Test hook (--env RY_PERF_HANG_FIRST=NAME): the first attempt of test NAME hangs
		# (a sleep in its place, abandoned after 3 s), as an attempt with a lost CM REQ does.
		if [ "${RY_PERF_HANG_FIRST:-}" = "$_name" ] && [ ! -e "/tmp/$_name.hung-once" ]; then
			: >"/tmp/$_name.hung-once"
			timeout 3 sleep 60 >"/tmp/$_name.cli" 2>&1 || _crc=$?
		else
			timeout "$RY_PERF_ATTEMPT_S" "$@" -d "$RY_DEV" -x "$_gid" -F "$_srv" \
				>"/tmp/$_name.cli" 2>&1 || _crc=$?
		fi
		[ $_crc != 0 ] || break
		# busybox timeout: 143 (TERM); coreutils: 124.
		if [ $_crc = 124 ] || [ $_crc = 143 ]; then
			echo "RY-WARN: guest $RY_ID: $_name: attempt hung; abandoned"
			tail -3 "/tmp/$_name.cli"
			return 2
		fi
		# Server not listening yet: TCP refused, or (-R) the rdma_cm connect REJECTED.
		if grep -q -e "Couldn't connect" -e "Connection refused" -e "Unable to perform rdma_client" \
			-e "Unexpected CM event" -e "RDMA_CM_EVENT_REJECTED" "/tmp/$_name.cli" &&
			[ "$(cut -d. -f1 /proc/uptime)" -lt "$_end" ]; then
			sleep 1
			continue
		fi
		cat "/tmp/$_name.cli"
		ry_die "$_name client failed"
	done
	# Test hook (--env RY_PERF_FAIL_FIRST=1): the first measurement of each test counts as failed.
	if [ -n "${RY_PERF_FAIL_FIRST:-}" ] && [ ! -e "/tmp/$_name.failed-once" ]; then
		: >"/tmp/$_name.failed-once"
		echo "RY-WARN: guest $RY_ID: $_name: failed measurement (forced by RY_PERF_FAIL_FIRST)"
		return 2
	fi
	ry_perf_check "$_kind" "$_name" "/tmp/$_name.cli" || {
		grep -i "correlation\|conflicting\|warning" "/tmp/$_name.cli" || true
		return 2
	}
}

# ry_perf_server_start NAME BIN ARGS...: start a perftest server in the background. Its bound
# (RY_PERF_SERVER_S) covers the client's whole wait for it plus one attempt.
RY_PERF_SERVER_S=120
ry_perf_server_start() {
	_name=$1
	shift
	_gid=$(ry_gid_index "$RY_DEV" "$RY_IP") || ry_die "no RoCE v2 GID for $RY_IP on $RY_DEV"
	timeout "$RY_PERF_SERVER_S" "$@" -d "$RY_DEV" -x "$_gid" -F >"/tmp/$_name.srv" 2>&1 &
	RY_SERVER_PID=$!
}

# ry_perf_server_wait NAME: wait for the server started last; fail with its output if it failed.
ry_perf_server_wait() {
	if ! wait "$RY_SERVER_PID"; then
		cat "/tmp/$1.srv"
		ry_die "$1 server failed"
	fi
}

# ry_perf_server_stop: the client gave up on this server (failed measurement or hung attempt):
# stop it, whatever state it is in.
ry_perf_server_stop() {
	kill "$RY_SERVER_PID" 2>/dev/null || true
	wait "$RY_SERVER_PID" 2>/dev/null || true
}

# ry_perf_local KIND NAME BIN ARGS...: server and client on this guest's own rxe device.
ry_perf_local() {
	_k=$1 _nm=$2
	shift 2
	_try=1
	while :; do
		ry_perf_server_start "$_nm" "$@"
		_rc=0
		ry_perf_client "$_k" "$_nm" "$RY_IP" "$@" || _rc=$?
		if [ $_rc = 0 ]; then
			ry_perf_server_wait "$_nm"
			return 0
		fi
		ry_perf_server_stop
		[ $_try -lt $RY_PERF_ATTEMPTS ] || ry_die "$_nm: $_try failed attempts"
		_try=$((_try + 1))
	done
}

# Across guests the client decides, and the two sides speak through "boards": each guest
# publishes KEY=VALUE as files served by busybox httpd, and the other polls them. A value is read
# as often as needed, so a read that comes back empty is harmless (busybox nc, used here before
# as a one-shot message, now and then delivered an empty message, and that lost the word).
# Attempt N of test NAME:
#   server: starts a perftest server, posts srv.NAME.N=ready, waits for NAME.N on the client's
#           board: "done" ends the test, "again" stops its server (finished or hung) for N+1;
#   client: waits for srv.NAME.N (so it never reaches a server of an earlier attempt), runs,
#           posts NAME.N = done or again; after "done" it stays until the server has set
#           srv.NAME.N=read, so that the word is not lost when the client's guest powers off.
RY_BOARD_PORT=8099

# ry_board_post KEY VALUE: publish KEY=VALUE on this guest's board (started on first use).
ry_board_post() {
	# mkdir is atomic: of two callers at once (a guest serving and a client in a ring), one
	# starts httpd.
	if mkdir /tmp/board 2>/dev/null; then
		httpd -p "$RY_BOARD_PORT" -h /tmp/board || ry_die "cannot start the board (httpd)"
	fi
	echo "$2" >"/tmp/board/.$1.tmp" && mv "/tmp/board/.$1.tmp" "/tmp/board/$1"
}

# ry_board_get HOST KEY: KEY's value on HOST's board. 1: not (yet) there, or an empty reply;
# 2: HOST does not answer. (busybox wget crashes in the guest, so the GET goes through nc; a
# short or empty reply is just "not yet": reads are repeatable.)
ry_board_get() {
	_br=$(printf 'GET /%s HTTP/1.0\r\n\r\n' "$2" |
		timeout 10 nc -w 2 "$1" "$RY_BOARD_PORT" 2>/dev/null) || [ -n "$_br" ] || return 2
	printf '%s\n' "$_br" | tr -d '\r' | awk 'NR == 1 { if ($2 != "200") exit 1; next }
		body { print; got = 1 } /^$/ { body = 1 } END { exit !got }'
}

# ry_board_wait HOST KEY SECONDS: print KEY's value from HOST's board once it is posted; 1 when
# it is not posted within SECONDS.
ry_board_wait() {
	_bend=$(($(cut -d. -f1 /proc/uptime) + $3))
	while :; do
		_bv=$(ry_board_get "$1" "$2") || _bv=
		[ -z "$_bv" ] || { echo "$_bv"; return 0; }
		[ "$(cut -d. -f1 /proc/uptime)" -lt "$_bend" ] || return 1
		sleep 0.2
	done
}

# ry_board_ack HOST KEY VALUE SECONDS: after posting our last word, stay until HOST shows it
# read it (KEY = VALUE on HOST's board) or HOST is gone (it powered off, so it read it, or it
# failed, which its own verdict reports), so our board outlives the reading. 1 on timeout.
ry_board_ack() {
	_bend=$(($(cut -d. -f1 /proc/uptime) + $4))
	_gone=0
	while :; do
		_brc=0
		_bv=$(ry_board_get "$1" "$2") || _brc=$?
		[ "$_bv" != "$3" ] || return 0
		if [ $_brc = 2 ]; then
			_gone=$((_gone + 1))
			[ $_gone -lt 2 ] || return 0
		else
			_gone=0
		fi
		[ "$(cut -d. -f1 /proc/uptime)" -lt "$_bend" ] || return 1
		sleep 0.2
	done
}

# ry_pair_peer: the one other guest of a pair (RY_PEERS).
ry_pair_peer() {
	# shellcheck disable=SC2086 # split on purpose
	set -- $RY_PEERS
	[ $# = 1 ] || ry_die "a pair test needs exactly one peer (RY_PEERS='$RY_PEERS')"
	echo "$1"
}

# ry_perf_serve NAME CLIENT PORT BIN ARGS...: serve one test (perftest -p PORT) until the
# client (the guest at address CLIENT, running ry_perf_remote with the same NAME) is done.
ry_perf_serve() {
	_nm=$1 _cli=$2 _port=$3
	shift 3
	_try=1
	while :; do
		ry_perf_server_start "$_nm" "$@" -p "$_port"
		ry_board_post "srv.$_nm.$_try" ready
		_msg=$(ry_board_wait "$_cli" "$_nm.$_try" $((RY_PERF_SERVER_S + 30))) ||
			{ ry_perf_server_stop; ry_die "$_nm: no word from the client"; }
		case "$_msg" in
		done)
			ry_board_post "srv.$_nm.$_try" read
			ry_perf_server_wait "$_nm"
			return 0
			;;
		again)
			ry_perf_server_stop
			: >"/tmp/$_nm.restarted"
			ry_log "$_nm: client asked for another run"
			;;
		*)
			ry_perf_server_stop
			ry_die "$_nm: unexpected word from the client '$_msg'"
			;;
		esac
		_try=$((_try + 1))
	done
}

# ry_perf_remote KIND NAME SERVER PORT BIN ARGS...: client side of ry_perf_serve (same NAME).
ry_perf_remote() {
	_k=$1 _nm=$2 _srv=$3 _port=$4
	shift 4
	_try=1
	while :; do
		ry_board_wait "$_srv" "srv.$_nm.$_try" 60 >/dev/null ||
			ry_die "$_nm: the server side did not start attempt $_try"
		_rc=0
		ry_perf_client "$_k" "$_nm" "$_srv" "$@" -p "$_port" || _rc=$?
		_msg="done"
		[ $_rc = 0 ] || [ $_try -ge $RY_PERF_ATTEMPTS ] || _msg=again
		ry_board_post "$_nm.$_try" "$_msg"
		if [ $_msg = done ]; then
			ry_board_ack "$_srv" "srv.$_nm.$_try" read 60 ||
				ry_die "$_nm: the server side did not read our word"
		fi
		[ $_rc = 0 ] && return 0
		[ $_msg = again ] || ry_die "$_nm: $_try failed attempts"
		_try=$((_try + 1))
	done
}

# ---- railyard-bench ------------------------------------------------------------------------
# Each call uses the next control port from RY_BENCH_PORT (default 19500) upwards.

# ry_bench_next_port: sets RY_BENCH_PORT to a fresh port.
ry_bench_next_port() {
	RY_BENCH_PORT=$((${RY_BENCH_PORT:-19500} + 1))
}

# ry_bench_check NAME JSON ARGS...: the client's JSON result must say ok; with --check-data every
# step must have verified data; with -x G the environment must show GID index G. Prints one
# summary line (p50 latency or average Gb/s of the first step).
ry_bench_check() {
	_nm=$1 _js=$2
	shift 2
	grep -q '"ok": true' "$_js" || { cat "$_js"; ry_die "$_nm: result is not ok"; }
	case " $* " in
	*" --check-data "*)
		_unchecked=$(grep -o '"checked": [0-9]*' "$_js" | grep -c '": 0$' || true)
		grep -q '"checked": [1-9]' "$_js" && [ "$_unchecked" = 0 ] ||
			{ cat "$_js"; ry_die "$_nm: data not verified in every step"; }
		;;
	esac
	_v=$(grep -m1 -o '"p50": [0-9.e+-]*' "$_js" || grep -m1 -o '"gbps": [0-9.e+-]*' "$_js" || true)
	[ -n "$_v" ] || { cat "$_js"; ry_die "$_nm: no measurement in the result"; }
	ry_log "$_nm: ok $(echo "$_v" | tr -d \") ($(grep -c '"data_check"' "$_js") step(s))"
}

# ry_bench_local NAME ARGS...: railyard-bench server and client with ARGS on this guest's own
# rxe device (looped back); both must succeed; the client's JSON is in /tmp/NAME.json.
ry_bench_local() {
	_nm=$1
	shift
	ry_bench_next_port
	timeout 120 railyard-bench "$@" -p "$RY_BENCH_PORT" --timeout 30000 >"/tmp/$_nm.srv" 2>&1 &
	_spid=$!
	_rc=0
	timeout 120 railyard-bench "$@" -p "$RY_BENCH_PORT" --timeout 30000 --json "$RY_IP" \
		>"/tmp/$_nm.json" 2>"/tmp/$_nm.err" || _rc=$?
	_src=0
	wait $_spid || _src=$?
	if [ $_rc != 0 ] || [ $_src != 0 ]; then
		cat "/tmp/$_nm.err" "/tmp/$_nm.json" "/tmp/$_nm.srv"
		ry_die "$_nm: client rc $_rc, server rc $_src"
	fi
	ry_bench_check "$_nm" "/tmp/$_nm.json" "$@"
}

# ry_bench_fails NAME PATTERN CMD...: CMD must fail (not hang: 60 s bound) and say PATTERN.
ry_bench_fails() {
	_nm=$1 _pat=$2
	shift 2
	_rc=0
	timeout 60 "$@" >"/tmp/$_nm.out" 2>&1 || _rc=$?
	[ $_rc != 0 ] || { cat "/tmp/$_nm.out"; ry_die "$_nm: succeeded, should have failed"; }
	[ $_rc != 124 ] && [ $_rc != 143 ] || { cat "/tmp/$_nm.out"; ry_die "$_nm: hung"; }
	! grep -q "Sanitizer" "/tmp/$_nm.out" || { cat "/tmp/$_nm.out"; ry_die "$_nm: sanitizer report"; }
	grep -q -e "$_pat" "/tmp/$_nm.out" ||
		{ cat "/tmp/$_nm.out"; ry_die "$_nm: output lacks '$_pat'"; }
	ry_log "$_nm: refused as expected: $(grep -m1 -e "$_pat" "/tmp/$_nm.out")"
}

# ry_wait_rdma_traffic PKTS SECONDS: wait until RY_DEV has sent PKTS more packets than when
# called (its hw_counters/sent_pkts, which soft-RoCE counts for loopback too): a test is past its
# set-up (QPs created, connected, the first barrier) and moving data. Fails when the device has no
# such counter or the deadline passes.
ry_wait_rdma_traffic() {
	_c=/sys/class/infiniband/$RY_DEV/ports/1/hw_counters/sent_pkts
	[ -r "$_c" ] || return 1
	_from=$(cat "$_c")
	_end=$(($(cut -d. -f1 /proc/uptime) + $2))
	while [ $(($(cat "$_c") - _from)) -lt "$1" ]; do
		[ "$(cut -d. -f1 /proc/uptime)" -lt "$_end" ] || return 1
		sleep 0.1
	done
}

# ry_wait_rc_qps N SECONDS: wait until at least N RC QPs exist on this node (a test runs).
ry_wait_rc_qps() {
	_end=$(($(cut -d. -f1 /proc/uptime) + $2))
	while [ "$(/usr/bin/rdma res show qp 2>/dev/null | grep -c 'type RC')" -lt "$1" ]; do
		[ "$(cut -d. -f1 /proc/uptime)" -lt "$_end" ] || return 1
		sleep 0.1
	done
}
