#!/usr/bin/env bash
# Integration: `railyard --local` on the controller's host: plain HTTP over STATE_DIR/api.sock
# (no token, no profile), --state-dir before or after the command, the default socket used when
# nothing names a controller, and the exit codes of a missing socket, a missing object, usage.
. "$(dirname "$0")/lib.sh"

RY=$BUILD/client/railyard
[ -x "$RY" ] || { echo "skip: $RY not built"; exit 77; }
unset RAILYARD_URL RAILYARD_TOKEN RAILYARD_CA RAILYARD_PROFILE RAILYARD_STATE_DIR
export RAILYARD_CONFIG=$T/cli/config.json

# ry WANT ARGS...: run railyard (stdout in $T/out, stderr in $T/err) and expect exit WANT.
ry() {
	local want=$1 got
	shift
	"$RY" "$@" >"$T/out" 2>"$T/err"
	got=$?
	[ "$got" = "$want" ] && return 0
	echo "  railyard $*: exit $got, want $want: $(head -c 400 "$T/err")"
	return 1
}
out_has() { grep -q -- "$1" "$T/out"; }
err_has() { grep -q -- "$1" "$T/err"; }

"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"

# ---- before a controller serves -----------------------------------------------------------
check "no controller serving: exit 5" ry 5 nodes --state-dir "$T/ctl"
check "  said so, naming the directory" err_has "no controller is serving $T/ctl"
check "login without a URL: exit 2" ry 2 login --token x
check "  says what is missing and how to give it" err_has "URL is missing: railyard login https://"
check "--help names --local and --state-dir" ry 0 --help
check "  both" bash -c "grep -q -- '--local' '$T/out' && grep -q -- '--state-dir DIR' '$T/out'"

start_controller --heartbeat-interval 300ms
check "the socket is made" wait_for 10 test -S "$T/ctl/api.sock"

# ---- --local over api.sock -----------------------------------------------------------------
check "nodes --state-dir DIR (after the command)" ry 0 nodes --state-dir "$T/ctl" --json
check "  the REST document" jqt '.items == []' "$T/out"
check "--state-dir DIR nodes (before the command)" ry 0 --state-dir "$T/ctl" nodes
check "--local with RAILYARD_STATE_DIR" bash -c "RAILYARD_STATE_DIR='$T/ctl' '$RY' --local nodes \
	--json >'$T/out' 2>'$T/err'"
check "a relative --state-dir is taken from the working directory" bash -c "cd '$T' && '$RY' \
	nodes --state-dir ctl --json >/dev/null"
check "with nothing naming a controller, the default state directory's socket" bash -c \
	"RAILYARD_STATE_DIR='$T/ctl' '$RY' nodes --json >'$T/out' 2>'$T/err'"
check "enrollment-token create over the socket (no token)" ry 0 --local --state-dir "$T/ctl" \
	enrollment-token create --cluster it --uses 2 --json
check "  a token" jqt '.token | startswith("")' "$T/out"
check "an unknown deployment: exit 4" ry 4 deployments 999999 --state-dir "$T/ctl"
check "an unknown command: exit 2" ry 2 frobnicate --state-dir "$T/ctl"
check "a socket path too long: exit 2" ry 2 nodes --state-dir "/$(printf 'x%.0s' $(seq 120))"
check "  said so" err_has "too long for a unix socket"

finish
