#!/usr/bin/env bash
# Integration: start-up errors are clear and exit non-zero; bad options and files name the
# problem. Nothing here needs a running agent.
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
	"$CTL" serve --state-dir "$T/none" --listen 127.0.0.1:0
touch "$T/file"
expect_fail "init under a file" "Not a directory" "$CTL" init --state-dir "$T/file/ctl"
expect_fail "bad duration" "invalid --heartbeat-interval" \
	"$CTL" serve --state-dir "$T/ctl" --heartbeat-interval 5parsecs
expect_fail "unknown command" "unknown command" "$CTL" frobnicate

"$CTL" init --state-dir "$T/ctl" >/dev/null || die "init"
expect_fail "init twice" "already initialised" "$CTL" init --state-dir "$T/ctl"
check "CA key is mode 0600" test "$(stat -c %a "$T/ctl/ca.key")" = 600
check "server key is mode 0600" test "$(stat -c %a "$T/ctl/server.key")" = 600
check "database is mode 0600" test "$(stat -c %a "$T/ctl/controller.db")" = 600

start_controller
expect_fail "port in use" "Address already in use" \
	"$CTL" serve --state-dir "$T/ctl" --listen "127.0.0.1:$PORT"
check "first controller unaffected" kill -0 "$CTL_PID"
kill -TERM "$CTL_PID"
wait "$CTL_PID"

cp -a "$T/ctl" "$T/corrupt"
head -c 8192 /dev/urandom >"$T/corrupt/controller.db"
rm -f "$T/corrupt/controller.db-wal" "$T/corrupt/controller.db-shm"
expect_fail "corrupt database" "corrupt" "$CTL" serve --state-dir "$T/corrupt" --listen 127.0.0.1:0
expect_fail "corrupt database (nodes)" "corrupt" "$CTL" nodes --state-dir "$T/corrupt"

expect_fail "agent run without enrollment" "enroll first" "$AGENT" run --state-dir "$T/agent-none"
mkdir -p "$T/agent-bad"
printf 'controller = 127.0.0.1:1\nnode_id n-1\n' >"$T/agent-bad/agent.conf"
expect_fail "malformed agent.conf names file:line" "agent.conf:2" "$AGENT" run --state-dir "$T/agent-bad"
expect_fail "enroll without a token" "required" "$AGENT" enroll --controller 127.0.0.1:1
expect_fail "enroll to a closed port" "connecting to 127.0.0.1:1" \
	"$AGENT" enroll --controller 127.0.0.1:1 --token x --ca-fingerprint sha256:00 \
	--state-dir "$T/agent-x" --hostname h1 --timeout 2s
expect_fail "revoke an unknown node" "not found" "$CTL" node revoke nosuch --state-dir "$T/ctl"
check "agent facts on a fixture" bash -c "'$AGENT' facts --sysroot '$FIXTURES/h200-ib' | grep -q '8 HCA 8/8 active IB 400G'"
finish
