#!/usr/bin/env bash
# Integration: start-up errors are clear and exit non-zero; bad options and files name the
# problem. Nothing here needs a running agent. Every serve has --http on an ephemeral port (or
# fails before it listens): its default, 127.0.0.1:8443, may be taken on the machine running the
# test, and that must neither fail a serve that should start nor pass one that should not.
. "$(dirname "$0")/lib.sh"

expect_fail() { # expect_fail "what" "message pattern" command...
	local what=$1 pat=$2 out rc; shift 2
	out=$("$@" 2>&1); rc=$?
	if [ $rc -ne 0 ] && grep -q -- "$pat" <<<"$out"; then
		ok "$what (exit $rc)"
	else
		fail "$what: exit $rc, output: $out"
	fi
}

expect_fail "serve on an uninitialised directory" "railyard-controller init" \
	"$CTL" serve --state-dir "$T/none" --listen 127.0.0.1:0 --http 127.0.0.1:0
touch "$T/file"
expect_fail "init under a file" "Not a directory" "$CTL" init --state-dir "$T/file/ctl"
expect_fail "bad duration" "invalid --heartbeat-interval" \
	"$CTL" serve --state-dir "$T/ctl" --heartbeat-interval 5parsecs
# expect_rc "what" CODE "message pattern" command...: fails with exactly that exit code.
expect_rc() {
	local what=$1 want=$2 pat=$3 out rc; shift 3
	out=$("$@" 2>&1); rc=$?
	if [ $rc -eq "$want" ] && grep -q -- "$pat" <<<"$out"; then
		ok "$what (exit $rc)"
	else
		fail "$what: exit $rc (want $want), output: $out"
	fi
}
expect_fail "controller: unknown command" "unknown command" "$CTL" frobnicate
expect_fail "a command refuses another command's option" "unrecognized option '--san'" "$CTL" version --san x
# The operations command line is railyard's: its usage errors exit 2.
expect_rc "railyard: unknown command" 2 "unknown command 'frobnicate'" "$RY" frobnicate
expect_rc "railyard: unknown subcommand" 2 "unknown command 'bench frob'" "$RY" bench frob
expect_rc "railyard: unknown flag" 2 "unrecognized option '--frobnicate'" "$RY" nodes --frobnicate
expect_rc "railyard: an extra argument" 2 "unexpected argument 'extra'" "$RY" nodes extra
for args in "--help" "-h" "serve -h" "version --help"; do
	# shellcheck disable=SC2086
	out=$("$CTL" $args 2>&1); rc=$?
	check "controller '$args' prints usage and exits 0 ($rc)" bash -c "[ $rc -eq 0 ] && grep -q '^usage: railyard-controller' <<<\"\$1\"" _ "$out"
done
for args in "--help" "-h" "bench --help" "enrollment-token -h" "deploy --help" "bench run --help"; do
	# shellcheck disable=SC2086
	out=$("$RY" $args 2>&1); rc=$?
	check "railyard '$args' prints usage and exits 0 ($rc)" bash -c "[ $rc -eq 0 ] && grep -q '^usage: railyard' <<<\"\$1\"" _ "$out"
done

"$CTL" init --state-dir "$T/ctl" >/dev/null || die "init"
expect_fail "init twice" "already initialised" "$CTL" init --state-dir "$T/ctl"
check "CA key is mode 0600" test "$(stat -c %a "$T/ctl/ca.key")" = 600
check "server key is mode 0600" test "$(stat -c %a "$T/ctl/server.key")" = 600
check "database is mode 0600" test "$(stat -c %a "$T/ctl/controller.db")" = 600

cp -a "$T/ctl" "$T/ctl2"
start_controller
expect_fail "port in use" "Address already in use" \
	"$CTL" serve --state-dir "$T/ctl2" --listen "127.0.0.1:$PORT" --http 127.0.0.1:0
wait_for 10 test -s "$T/ctl/api.addr" || die "no api.addr"
API_PORT=$(sed 's/.*://' "$T/ctl/api.addr")
expect_fail "the API's port in use" "Address already in use" \
	"$CTL" serve --state-dir "$T/ctl2" --listen 127.0.0.1:0 --http "127.0.0.1:$API_PORT"
# A heartbeat as long as the agents' keepalive: it serves, and says what that costs.
"$CTL" serve --state-dir "$T/ctl2" --listen 127.0.0.1:0 --http 127.0.0.1:0 --heartbeat-interval 2m \
	>"$T/hb2m.log" 2>&1 &
hb_pid=$!
PIDS+=("$hb_pid")
check "--heartbeat-interval 2m: a warning that each heartbeat draws a PING" \
	wait_for 20 log_has "$T/hb2m.log" "not shorter than the agents' default keepalive (120000 ms)"
check "  ... and it serves" kill -0 "$hb_pid"
kill "$hb_pid"
wait "$hb_pid" 2>/dev/null
# A second serve on a served state directory: refused before it touches anything.
addr_before=$(cat "$T/ctl/controller.addr")
out=$("$CTL" serve --state-dir "$T/ctl" --listen 127.0.0.1:0 --http 127.0.0.1:0 2>&1); rc=$?
check "second serve on the same state directory exits 6, busy ($rc)" test "$rc" -eq 6
check "it names the serving pid" grep -q "already served by another railyard-controller (pid $CTL_PID)" <<<"$out"
check "controller.addr unchanged" test "$(cat "$T/ctl/controller.addr")" = "$addr_before"
check "first controller unaffected" kill -0 "$CTL_PID"
expect_rc "revoke an unknown node: not found" 4 "no node nosuch" \
	"$RY" node revoke nosuch --state-dir "$T/ctl"
# A user who may not reach the serving controller's api.sock is told so.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	expect_fail "permission denied is named as such" "Permission denied" \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$RY" nodes --state-dir "$T/ctl"
else
	echo "SKIP: permission check needs root and setpriv"
fi
kill -TERM "$CTL_PID"
wait "$CTL_PID"
expect_fail "--listen with an out-of-range port" "invalid --listen" \
	"$CTL" serve --state-dir "$T/ctl2" --listen 127.0.0.1:99999
expect_fail "--listen without a port" "invalid --listen" \
	"$CTL" serve --state-dir "$T/ctl2" --listen 127.0.0.1
expect_fail "agent --controller with an out-of-range port" "invalid --controller" \
	"$AGENT" run --state-dir "$T/agent-none" --controller 127.0.0.1:70000
expect_fail "agent --keepalive under a second" "invalid --keepalive (1s to 1h) '500ms'" \
	"$AGENT" run --state-dir "$T/agent-none" --keepalive 500ms
expect_fail "agent apply on a missing sysroot" "sysroot $T/nonexistent: No such file" \
	"$AGENT" apply --sysroot "$T/nonexistent" --playbook "$SRC/playbooks/h200-ndr-ib.yaml"
check "and nothing was created there" test ! -e "$T/nonexistent"
expect_fail "agent facts on a missing sysroot" "No such file" \
	"$AGENT" facts --sysroot "$T/nonexistent"

cp -a "$T/ctl" "$T/corrupt"
head -c 8192 /dev/urandom >"$T/corrupt/controller.db"
rm -f "$T/corrupt/controller.db-wal" "$T/corrupt/controller.db-shm"
expect_fail "corrupt database" "corrupt" "$CTL" serve --state-dir "$T/corrupt" --listen 127.0.0.1:0 \
	--http 127.0.0.1:0
expect_rc "railyard on a corrupt state directory (none serves it): unreachable" 5 "api.sock" \
	"$RY" nodes --state-dir "$T/corrupt"

expect_fail "agent run without enrollment" "enroll first" "$AGENT" run --state-dir "$T/agent-none"
mkdir -p "$T/agent-bad"
printf 'controller = 127.0.0.1:1\nnode_id n-1\n' >"$T/agent-bad/agent.conf"
expect_fail "malformed agent.conf names file:line" "agent.conf:2" "$AGENT" run --state-dir "$T/agent-bad"
printf 'controller = 127.0.0.1:99999\nnode_id = n-1\n' >"$T/agent-bad/agent.conf"
expect_fail "agent.conf with a bad controller port" "not HOST:PORT" "$AGENT" run --state-dir "$T/agent-bad"
expect_fail "enroll without a token" "required" "$AGENT" enroll --controller 127.0.0.1:1
printf 'ry1.x\n' >"$T/token.644" && chmod 644 "$T/token.644"
expect_fail "enroll --token-file readable by others" "mode 0644 lets others at the token; chmod 600" \
	"$AGENT" enroll --controller 127.0.0.1:1 --token-file "$T/token.644" --ca-fingerprint sha256:00 \
	--state-dir "$T/agent-x"
check "  and nothing was created" test ! -e "$T/agent-x"
expect_fail "enroll --token and --token-file" "choose one" \
	"$AGENT" enroll --controller 127.0.0.1:1 --token x --token-file - --ca-fingerprint sha256:00 \
	--state-dir "$T/agent-x" </dev/null
expect_fail "enroll --token-file - with nothing on stdin" "standard input: empty" \
	"$AGENT" enroll --controller 127.0.0.1:1 --token-file - --ca-fingerprint sha256:00 \
	--state-dir "$T/agent-x" </dev/null
expect_fail "enroll to a closed port" "connecting to 127.0.0.1:1" \
	"$AGENT" enroll --controller 127.0.0.1:1 --token x --ca-fingerprint sha256:00 \
	--state-dir "$T/agent-x" --hostname h1 --timeout 2s
# One writer: a change with no controller serving is refused, clearly (and stores nothing).
expect_rc "node revoke with no controller serving: unreachable" 5 "$T/ctl/api.sock" \
	"$RY" node revoke nosuch --state-dir "$T/ctl"
check "agent facts on a fixture" bash -c "'$AGENT' facts --sysroot '$FIXTURES/h200-ib' | grep -q '8 HCA 8/8 active IB 400G'"
finish
