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
# prints 0.00/inf/nan while exiting 0) is repeated, up to this many attempts in all.
RY_PERF_ATTEMPTS=3

# ry_perf_client KIND NAME SERVER BIN ARGS...: run a perftest client against SERVER, retrying
# while the server is not listening yet (perftest clients do not retry), then check its output.
# 0: measured (RY-METRIC printed), 2: failed measurement; any other failure ends the script.
ry_perf_client() {
	_kind=$1 _name=$2 _srv=$3
	shift 3
	_gid=$(ry_gid_index "$RY_DEV" "$RY_IP") || ry_die "no RoCE v2 GID for $RY_IP on $RY_DEV"
	_end=$(($(cut -d. -f1 /proc/uptime) + 60))
	while :; do
		if timeout 60 "$@" -d "$RY_DEV" -x "$_gid" -F "$_srv" >"/tmp/$_name.cli" 2>&1; then
			break
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

# ry_perf_server_start NAME BIN ARGS...: start a perftest server in the background (60 s bound).
ry_perf_server_start() {
	_name=$1
	shift
	_gid=$(ry_gid_index "$RY_DEV" "$RY_IP") || ry_die "no RoCE v2 GID for $RY_IP on $RY_DEV"
	timeout 60 "$@" -d "$RY_DEV" -x "$_gid" -F >"/tmp/$_name.srv" 2>&1 &
	RY_SERVER_PID=$!
}

# ry_perf_server_wait NAME: wait for the server started last; fail with its output if it failed.
ry_perf_server_wait() {
	if ! wait "$RY_SERVER_PID"; then
		cat "/tmp/$1.srv"
		ry_die "$1 server failed"
	fi
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
		ry_perf_server_wait "$_nm"
		[ $_rc = 0 ] && return 0
		[ $_try -lt $RY_PERF_ATTEMPTS ] || ry_die "$_nm: $_try failed measurements"
		_try=$((_try + 1))
	done
}

# Across guests a repeated measurement needs a fresh server: after each run the server side
# listens on PORT+1000 (busybox nc) for "again" or "done" from the client.

# ry_perf_serve NAME PORT BIN ARGS...: serve one test (perftest -p PORT) until the client is done.
ry_perf_serve() {
	_nm=$1 _port=$2
	shift 2
	while :; do
		ry_perf_server_start "$_nm" "$@" -p "$_port"
		ry_perf_server_wait "$_nm"
		# -w: after its stdin (/dev/null) ends, busybox nc keeps reading the connection
		# for up to that long; without it, the client's message raced nc's exit and
		# arrived as an empty message.
		_msg=$(timeout 60 nc -l -p $((_port + 1000)) -w 10 </dev/null) ||
			ry_die "$_nm: no word from the client"
		case "$_msg" in
		again) ry_log "$_nm: client asked for another run" ;;
		done) return 0 ;;
		*) ry_die "$_nm: unexpected control message '$_msg'" ;;
		esac
	done
}

# ry_perf_remote KIND NAME SERVER PORT BIN ARGS...: client side of ry_perf_serve.
ry_perf_remote() {
	_k=$1 _nm=$2 _srv=$3 _port=$4
	shift 4
	_try=1
	while :; do
		_rc=0
		ry_perf_client "$_k" "$_nm" "$_srv" "$@" -p "$_port" || _rc=$?
		_msg="done"
		[ $_rc = 0 ] || [ $_try -ge $RY_PERF_ATTEMPTS ] || _msg=again
		ry_retry 30 sh -c "echo $_msg | nc $_srv $((_port + 1000))" ||
			ry_die "$_nm: cannot reach the server's control port"
		[ $_rc = 0 ] && return 0
		[ $_msg = again ] || ry_die "$_nm: $_try failed measurements"
		_try=$((_try + 1))
	done
}
