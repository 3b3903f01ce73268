#!/usr/bin/env bash
# Integration: `railyard --local` on the controller's host: plain HTTP over STATE_DIR/api.sock
# (no token, no profile), --state-dir before or after the command, the default socket used when
# nothing names a controller, and the exit codes of a missing socket, a missing object, usage.
. "$(dirname "$0")/lib.sh"

[ -x "$RY" ] || { echo "skip: $RY not built"; exit 77; }
export RAILYARD_CONFIG=$T/cli/config.json

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
check "enrollment-token list: a header row and the token" ry 0 enrollment-token list \
	--state-dir "$T/ctl"
check "  the header" bash -c "head -1 '$T/out' | grep -q '^ID .*CLUSTER .*STATE'"
ETOK=$(awk 'NR == 2 {print $1}' "$T/out")
check "enrollment-token revoke ID" ry 0 enrollment-token revoke "$ETOK" --state-dir "$T/ctl"
check "  listed as revoked" bash -c "'$RY' enrollment-token list --json --state-dir '$T/ctl' |
	jq -e --arg id '$ETOK' '.items[] | select(.id == \$id) | .state == \"revoked\"' >/dev/null"
check "--ttl takes a unit" ry 0 enrollment-token create --cluster it --ttl 2h --state-dir "$T/ctl"
check "--ttl-ms still works" ry 0 enrollment-token create --cluster it --ttl-ms 60000 \
	--state-dir "$T/ctl"
n_tokens=$("$RY" enrollment-token list --json --state-dir "$T/ctl" | jq '.items | length')
check "--controller with port 0: usage (exit 2), an address the agent would refuse" ry 2 \
	enrollment-token create --cluster it --controller 10.0.0.1:0 --state-dir "$T/ctl"
check "  ... naming the flag" err_has "invalid --controller"
check "  ... and no token made" test "$("$RY" enrollment-token list --json --state-dir "$T/ctl" |
	jq '.items | length')" = "$n_tokens"
check "an unknown deployment: exit 4" ry 4 deployments 999999 --state-dir "$T/ctl"
check "deployment show of an unknown one: exit 4" ry 4 deployment show 999999 --state-dir "$T/ctl"
check "campaign show of an unknown one: exit 4" ry 4 campaign show c-nope --state-dir "$T/ctl"
check "node show of an unknown one: exit 4" ry 4 node show nope --state-dir "$T/ctl"
check "campaign show without an ID: exit 2" ry 2 campaign show --state-dir "$T/ctl"
check "tokens list (the old spelling) still works" ry 0 tokens list --state-dir "$T/ctl"
check "token create over the socket" ry 0 token create --name t1 --role viewer --ttl 1d \
	--state-dir "$T/ctl"
check "tokens: the list, with a header row" ry 0 tokens --state-dir "$T/ctl"
check "  t1 in it" bash -c "head -1 '$T/out' | grep -q '^ID ' && grep -q ' t1 ' '$T/out'"

# ---- playbook check -------------------------------------------------------------------------
printf 'name: bad\nversion: "1"\nsteps:\n  - name: x\n    type: nosuchtype\n' >"$T/bad.yaml"
check "playbook check of a bad playbook: exit 1" ry 1 playbook check "$T/bad.yaml" \
	--state-dir "$T/ctl"
check "  its problem at FILE:LINE:COL" grep -q "^$T/bad.yaml:[0-9]*:[0-9]*: " "$T/err"
check "playbook check of a good one" ry 0 playbook check "$SRC/playbooks/tcp-baseline.yaml" \
	--state-dir "$T/ctl"
check "  valid" out_has ": valid: "

# ---- nodes, bench, revoke, audit --------------------------------------------------------------
"$RY" enrollment-token create --cluster it --uses 2 --state-dir "$T/ctl" >"$T/token.out" ||
	die "enrollment-token create"
TOKEN=$(awk '/^token:/ {print $2}' "$T/token.out")
FP=$(awk '/^ca-fingerprint:/ {print $2}' "$T/token.out")
enroll a "$FIXTURES/h200-ib" || die "enroll a"
enroll b "$FIXTURES/h200-ib-2" || die "enroll b"
start_agent a "$FIXTURES/h200-ib"
start_agent b "$FIXTURES/h200-ib-2"
online() { [ "$("$RY" nodes --state online --json --state-dir "$T/ctl" | jq '.items | length')" = 2 ]; }
check "two nodes online" wait_for 30 online
check "nodes: a header row" ry 0 nodes --state-dir "$T/ctl"
check "  NODE HOSTNAME ..." bash -c "head -1 '$T/out' | grep -q '^NODE .*HOSTNAME'"
check "node show HOST" ry 0 node show gpu-node-01 --state-dir "$T/ctl"
check "  its fields" out_has "^hostname: gpu-node-01"
check "bench run between the two agents" ry 0 bench run --from gpu-node-01 --to gpu-node-04 \
	--kind lat --iters 100 --timeout 30s --json --state-dir "$T/ctl"
check "  the REST document, succeeded" jqt '.state == "succeeded" and
	.result.results[0].latency.count == 100' "$T/out"
BID=$(jq -r .id "$T/out")
check "bench show ID: the figures" ry 0 bench show "$BID" --state-dir "$T/ctl"
check "  p50" out_has "p50"
check "bench list: a header row and the run" ry 0 bench list --state-dir "$T/ctl"
check "  both" bash -c "head -1 '$T/out' | grep -q '^RUN ' && grep -q '^$BID ' '$T/out'"
check "bench show of an unknown run: exit 4" ry 4 bench show b-nope --state-dir "$T/ctl"
check "bench run without --to: exit 2" ry 2 bench run --from gpu-node-01 --state-dir "$T/ctl"
# Ctrl-C while it follows cancels the run.
"$RY" bench run --from gpu-node-01 --to gpu-node-04 --kind bw --size 65536 --duration 60s \
	--timeout 90s --state-dir "$T/ctl" >"$T/long.out" 2>"$T/long.err" &
LONG=$!
PIDS+=("$LONG")
check "a long run starts" wait_for 20 grep -q "^bench b-" "$T/long.out"
LID=$(sed -n 's/^bench \(b-[0-9a-f]*\):.*/\1/p' "$T/long.out" | head -1)
check "  it measures" wait_for 20 grep -q "bench $LID: running" "$T/a.log"
kill -INT "$LONG"
check "Ctrl-C: bench run ends" wait_for 30 exited "$LONG"
wait "$LONG"
check "  with 130" test $? = 130
check "  saying it cancels the run" grep -q "interrupted; cancelling it" "$T/long.err"
check "  the run is cancelled" bash -c "'$RY' bench show '$LID' --json --state-dir '$T/ctl' |
	jq -e '.state == \"cancelled\"' >/dev/null"
check "node revoke HOST" ry 0 node revoke gpu-node-04 --state-dir "$T/ctl"
check "  the agent is cut off (exits)" wait_for 20 exited "${AGENT_PID[b]}"
check "  its state is revoked" bash -c "'$RY' node show gpu-node-04 --json --state-dir '$T/ctl' |
	jq -e '.state == \"revoked\"' >/dev/null"
check "audit: a header row, the revocation by the local user" ry 0 audit --state-dir "$T/ctl"
check "  both" bash -c "head -1 '$T/out' | grep -q '^WHEN .*ACTOR' && grep -q 'local:uid' \
	'$T/out' && grep -qi 'revoke' '$T/out'"
check "audit --limit 1: one entry" bash -c "'$RY' audit --limit 1 --json --state-dir '$T/ctl' |
	jq -e '.items | length == 1' >/dev/null"

# ---- railyard-controller's old spellings run railyard --local, saying so ---------------------
ctl() { "$CTL" "$@" >"$T/out" 2>"$T/err"; }
check "railyard-controller nodes (deprecated) runs railyard" ctl nodes --json --state-dir "$T/ctl"
check "  said on stderr" err_has "'nodes' is deprecated; running: railyard --local nodes"
check "  the REST document" jqt '.items | length == 2' "$T/out"
check "railyard-controller token create: an enrollment token" ctl token create --cluster it \
	--ttl 1h --state-dir "$T/ctl"
check "  what it runs" err_has "running: railyard --local enrollment-token create"
check "  the token" out_has "^token: "
# api-token create is the controller's own command; while it serves, the serving controller
# makes the token (one writer): railyard --local token create, audited as the local caller.
check "railyard-controller api-token create while served: made through the controller" ctl \
	api-token create --name served --role viewer --ttl 1d --state-dir "$T/ctl"
check "  said so" err_has "is served (pid $CTL_PID): the token is made through it"
check "  the token" out_has "^token: rya1\."
check "  audited as the local caller, not written by this process" bash -c "'$RY' audit --json \
	--state-dir '$T/ctl' | jq -e '[.items[] | select(.action == \"api_token.create\")][0] |
	(.actor | startswith(\"local:uid\")) and (.detail | test(\"served\"))' >/dev/null"
check "railyard-controller audit: railyard's exit code" bash -c "'$CTL' audit --limit 0 \
	--state-dir '$T/ctl' 2>/dev/null; test \$? = 2"
check "railyard-controller --help: the daemon's commands, and where the others went" bash -c \
	"'$CTL' --help | grep -q 'railyard --local COMMAND' && ! '$CTL' --help | grep -q '^  bench'"
# Every option of every command of both binaries has its line in --help.
for c in "$CTL serve" "$CTL init" "$CTL backup" "$CTL restore" "$CTL api-token create" \
	"$RY bench run" "$RY deploy" "$RY validate" "$RY revalidate" "$RY enrollment-token create"; do
	check "$(basename "${c%% *}") ${c#* } --help explains each option of its synopsis" bash -c "
		h=\$($c --help) || exit 1
		for f in \$(sed -n '1,/^  [^[ -]/p' <<<\"\$h\" | grep -oE -- '--[a-z][a-z-]*' | sort -u); do
			grep -qE -- \"^  \$f +[^ ]\" <<<\"\$h\" || { echo \"no line for \$f\"; exit 1; }
		done"
done
check "a second serve on the served directory: exit 6" bash -c "'$CTL' serve --state-dir \
	'$T/ctl' --listen 127.0.0.1:0 --http off >'$T/serve2.log' 2>&1; test \$? = 6"

check "an unknown command: exit 2" ry 2 frobnicate --state-dir "$T/ctl"
check "a socket path too long: exit 2" ry 2 nodes --state-dir "/$(printf 'x%.0s' $(seq 120))"
check "  said so" err_has "too long for a unix socket"

finish
