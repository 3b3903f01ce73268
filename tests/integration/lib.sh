# Helpers for the integration tests: temporary directories, process bookkeeping, waiting on a
# condition with a deadline, reading the controller's node table. Sourced by test_*.sh.
set -u

BUILD=${1:?usage: $0 BUILD_DIR}
SRC=${RAILYARD_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
CTL=$BUILD/controller/railyard-controller
# The operator's command line: over --state-dir "$T/ctl" it talks to the serving controller's
# api.sock as a local admin. Isolated from the caller's profiles and environment.
RY=$BUILD/client/railyard
unset RAILYARD_URL RAILYARD_TOKEN RAILYARD_CA RAILYARD_PROFILE RAILYARD_CONTROLLER RAILYARD_STATE_DIR
AGENT=$BUILD/nodeagent/railyard-agent
ROGUE=$BUILD/tests/integration/rogue_client
FIXTURES=$SRC/tests/fixtures/sysroots
export LSAN_OPTIONS="suppressions=$SRC/tests/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

T=$(mktemp -d /tmp/railyard-it.XXXXXX)
export RAILYARD_CONFIG=$T/cli-config.json
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
PIDS=()
FAILS=0
PASSES=0

cleanup() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	# RAILYARD_TEST_KEEP=1: a passing run's logs are kept too (to compare with a failing one).
	if [ "$FAILS" -eq 0 ] && [ -z "${RAILYARD_TEST_KEEP:-}" ]; then rm -rf "$T"; else echo "logs kept in $T"; fi
}
trap cleanup EXIT

ok() { PASSES=$((PASSES + 1)); echo "ok   - $*"; }
fail() { FAILS=$((FAILS + 1)); echo "FAIL - $*"; }
check() { # check "description" command...
	local what=$1; shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}
finish() {
	echo "$PASSES passed, $FAILS failed"
	[ "$FAILS" -eq 0 ]
	exit $?
}
die() { fail "$*"; finish; }

# wait_for SECONDS command...: poll the condition every 100 ms until it holds or time runs out.
wait_for() {
	local deadline=$(($(date +%s%N) / 1000000 + $1 * 1000)); shift
	while ! "$@" 2>/dev/null; do
		[ $(($(date +%s%N) / 1000000)) -ge $deadline ] && return 1
		sleep 0.1
	done
	return 0
}

# node_field HOSTNAME FIELD: a field of a node from `railyard nodes --json` ("" when absent).
node_field() {
	"$RY" nodes --json --state-dir "$T/ctl" | jq -r --arg h "$1" \
		".items[] | select(.hostname == \$h) | .$2 // empty"
}
node_state_is() { [ "$(node_field "$1" state)" = "$2" ]; }
count_state() { "$RY" nodes --json --state-dir "$T/ctl" | jq "[.items[] | select(.state == \"$1\")] | length"; }
count_is() { [ "$(count_state "$1")" = "$2" ]; }
log_has() { grep -q -- "$2" "$1"; }
refused() { ! "$@"; }
# jq -e exits 0 on empty input (jq 1.6): an empty file or command must fail a check too.
jqt() { local out; out=$(jq -e "$@") && [ -n "$out" ]; }
exited() { ! kill -0 "$1" 2>/dev/null; }

# start_controller [extra serve args]: serve on 127.0.0.1 (port from $PORT, or a free one).
start_controller() {
	rm -f "$T/ctl/controller.addr"
	"$CTL" serve --state-dir "$T/ctl" --listen "127.0.0.1:${PORT:-0}" --http 127.0.0.1:0 "$@" \
		>>"$T/controller.log" 2>&1 &
	CTL_PID=$!
	PIDS+=("$CTL_PID")
	wait_for 20 test -s "$T/ctl/controller.addr" || die "controller did not start (see $T/controller.log)"
	ADDR=$(cat "$T/ctl/controller.addr")
	PORT=${ADDR##*:}
}

new_token() { # new_token USES [TTL] -> sets TOKEN and FP
	"$RY" enrollment-token create --state-dir "$T/ctl" --cluster it --uses "$1" --ttl "${2:-1h}" \
		>"$T/token.out" || die "enrollment-token create"
	TOKEN=$(awk '/^token:/ {print $2}' "$T/token.out")
	FP=$(awk '/^ca-fingerprint:/ {print $2}' "$T/token.out")
}

enroll() { # enroll NAME SYSROOT [extra args]: with $TOKEN from a 0600 file, as an operator would
	local name=$1 sysroot=$2; shift 2
	(umask 077 && printf '%s\n' "$TOKEN" >"$T/$name.token") || return 1
	"$AGENT" enroll --controller "$ADDR" --token-file "$T/$name.token" --ca-fingerprint "$FP" \
		--state-dir "$T/$name" --sysroot "$sysroot" "$@" >"$T/$name.enroll.log" 2>&1
}

declare -A AGENT_PID
start_agent() { # start_agent NAME SYSROOT [run options...]
	"$AGENT" run --state-dir "$T/$1" --sysroot "$2" --reconnect-max 1s "${@:3}" >>"$T/$1.log" 2>&1 &
	AGENT_PID[$1]=$!
	PIDS+=("$!")
}

# liar SPEC: (re)start the lying member (rogue_client --mode liar) enrolled as "liar" in $T/liar,
# with the facts in $T/liar-facts.json; its reports are rewritten by --lie SPEC.
liar() {
	[ -z "${LIAR_PID:-}" ] || { kill "$LIAR_PID" 2>/dev/null; wait "$LIAR_PID" 2>/dev/null; }
	"$ROGUE" --target "$ADDR" --ca "$T/ctl/ca.crt" --cert "$T/liar/node.crt" \
		--key "$T/liar/node.key" --mode liar --facts "$T/liar-facts.json" --lie "$1" \
		>>"$T/liar.out" 2>>"$T/liar.err" &
	LIAR_PID=$!
	PIDS+=("$LIAR_PID")
}

# Collective runs on this host (docs/bench.md, "Launching collectives without SSH"):
# nossh_path makes $T/bin, the agents' PATH: Open MPI's programs and the basics, and no ssh or
# rsh on it. start_coll_agent NAME SYSROOT starts an agent with that PATH and a TMPDIR of its
# own, as on hosts of their own (Open MPI names its session directories by host name, which
# the "nodes" here share); extra words before the agent run it under a wrapper (valgrind).
nossh_path() {
	mkdir -p "$T/bin"
	for p in mpirun orted orterun hostname sh cat; do
		[ -e "/usr/bin/$p" ] && ln -sf "/usr/bin/$p" "$T/bin/$p"
	done
	! PATH="$T/bin" command -v ssh rsh >/dev/null
}
start_coll_agent() { # start_coll_agent NAME SYSROOT [WRAPPER...]
	local name=$1 sysroot=$2
	shift 2
	mkdir -p "$T/tmp-$name"
	TMPDIR="$T/tmp-$name" PATH="$T/bin" "$@" "$AGENT" run --state-dir "$T/$name" \
		--sysroot "$sysroot" --reconnect-max 1s >>"$T/$name.log" 2>&1 &
	AGENT_PID[$name]=$!
	PIDS+=("$!")
}

# check_sanitizers: fail when any log of this test holds an ASan/UBSan/LSan report.
check_sanitizers() {
	if grep -q "ERROR: LeakSanitizer\|ERROR: AddressSanitizer\|runtime error:" "$T"/*.log; then
		fail "sanitizer reports in the logs"
		grep -h -A5 "ERROR: \|runtime error:" "$T"/*.log | head -60
	fi
}

# loose_baseline DEST: playbooks/tcp-baseline.yaml with its acceptance lines opened wide, for the
# tests whose point is not the verdict but that need it to pass (the pipeline around it: sign-off,
# API, CLI). On two busy cores a TCP pair can be 4x slower than the cluster's median; the real
# lines are judged where the verdict is the point (test_campaign.sh, tests/rdma-vm). Its
# revalidations' regressions inform only (a p99 that rose 800 % between two runs on busy cores
# is the scheduler's); the regression logic is tests/unit/test_signoff.c's.
loose_baseline() {
	sed -e '/metric: pair-lat.p50_us/s/value: [0-9.]*/value: 1000/' \
		-e '/metric: pair-bw.gbps/s/value: [0-9.]*/value: 0.0001/' \
		-e '/metric: ring-bw.gbps/s/value: [0-9.]*/value: 0.0001/' \
		-e '/metric: incast.impact_bw/s/value: [0-9.]*/value: 100000/' \
		-e 's/^validation:$/validation:\n  tolerance: {regressions: inform}/' \
		"$SRC/playbooks/tcp-baseline.yaml" >"$1"
	grep -q 'value: 1000}' "$1" && grep -q 'value: 100000}' "$1" &&
		grep -q 'regressions: inform' "$1"
}

# shown_recipe HTML: the stock-OpenSSL verification commands as a sign-off's HTML view shows them
# (its <pre> that starts with "openssl cms -verify"), unescaped: tests run the text a customer
# reads, not a copy of it.
shown_recipe() {
	sed -n '/^<pre>openssl cms -verify/,/<\/pre>/p' "$1" | sed 's/^<pre>//; s/<\/pre>$//' |
		sed "s/&#39;/'/g; s/&quot;/\"/g; s/&lt;/</g; s/&gt;/>/g; s/&amp;/\\&/g"
}
# run_recipe SCRIPT DIR: run the commands in SCRIPT with sh in DIR (which holds signoff.json,
# signoff.p7s and ca.pem), the output in DIR/recipe.out; true only when they exit 0 and print
# their verified line.
run_recipe() {
	(cd "$2" && rm -f signer.pem && sh "$1" >recipe.out 2>&1) &&
		grep -q '^sign-off verified' "$2/recipe.out"
}
