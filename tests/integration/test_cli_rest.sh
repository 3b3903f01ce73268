#!/usr/bin/env bash
# Integration: the `railyard` operator CLI over real HTTPS against a serving controller. Login
# (a bad token refused), tokens made through the API, enrollment, nodes (paged), a check-mode
# deployment and an agent's restart followed by watch on the event stream (lines, --json), a
# validation campaign with its sign-off exported and verified; the exit codes: 3 for a role
# without the right, 4 for an unknown object, 5 for a closed port or an untrusted certificate,
# 2 for usage; the completion script parses.
. "$(dirname "$0")/lib.sh"

PB=$T/tcp-baseline.yaml
loose_baseline "$PB" || die "loose_baseline"
[ -x "$RY" ] || { echo "skip: $RY not built"; exit 77; }
export RAILYARD_CONFIG=$T/cli/config.json

"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
start_controller --heartbeat-interval 300ms
check "the API's URL is written" wait_for 10 test -s "$T/ctl/api.addr"
URL=$(cat "$T/ctl/api.addr")
CA=$T/ctl/ca.crt
ADMIN=$("$CTL" api-token create --name a --role admin --state-dir "$T/ctl" 2>/dev/null |
	awk '/^token:/ {print $2}')
check "the first admin token is made on the controller's host" test -n "$ADMIN"

# ---- login and tokens -------------------------------------------------------------------------
check "login with a bad token: exit 3" ry 3 login "$URL" --token rya1.nope --ca "$CA"
check "  with the API's error" err_has "railyard: unauthenticated: "
check "  and nothing saved" test ! -e "$RAILYARD_CONFIG"
check "login as the admin (token from stdin)" bash -c "echo '$ADMIN' | '$RY' login '$URL' \
	--token - --ca '$CA' --name admin >'$T/out' 2>'$T/err'"
check "  the file is 0600 in a 0700 directory" test \
	"$(stat -c %a "$RAILYARD_CONFIG")/$(stat -c %a "$T/cli")" = 600/700
check "  it holds the URL, the token and the CA" jqt --arg u "$URL" --arg t "$ADMIN" --arg c "$CA" \
	'.current == "admin" and .profiles.admin == {url: $u, token: $t, ca: $c}' "$RAILYARD_CONFIG"
check "tokens create: an integrator scoped to cluster it" ry 0 tokens create --name integ \
	--role integrator --clusters it --json
INT=$(jq -r .token "$T/out")
check "  the secret printed once, said so" bash -c "[ -n '$INT' ] && grep -q 'shown only once' '$T/err'"
check "tokens create: a viewer" ry 0 tokens create --name view --role viewer
VIEW=$(awk '/^token:/ {print $2}' "$T/out")
check "  its human form" bash -c "[ -n '$VIEW' ] && grep -q '^role: viewer' '$T/out'"
check "tokens list: three, no secret" ry 0 tokens list --json
check "  as the API lists them" jqt '(.items | length) == 3 and ([.items[].name] | sort) ==
	["a", "integ", "view"]' "$T/out"
check "  never a secret" bash -c "! grep -q '${VIEW#*.}' '$T/out'"
check "login as the integrator, a second profile" ry 0 login "$URL" --token "$INT" --ca "$CA" --name integ
check "  now the current one" jqt '.current == "integ" and (.profiles | length) == 2' "$RAILYARD_CONFIG"
check "the integrator may not list tokens: exit 3" ry 3 tokens list
check "  forbidden" err_has "railyard: forbidden: "

# ---- enrollment and nodes ---------------------------------------------------------------------
check "enrollment-token create" ry 0 enrollment-token create --cluster it --uses 3 --json
TOKEN=$(jq -r .token "$T/out") FP=$(jq -r .ca_fingerprint "$T/out")
for n in a:h200-ib b:h200-roce c:h200-ib-2; do
	enroll "${n%%:*}" "$FIXTURES/${n#*:}" || die "enroll ${n%%:*}"
	start_agent "${n%%:*}" "$FIXTURES/${n#*:}"
done
online() { "$RY" nodes --cluster it --state online --json >"$T/out" 2>"$T/err" &&
	[ "$(jq '.items | length' "$T/out")" = 3 ]; }
check "nodes: three online" wait_for 30 online
check "  pages followed to the end (a page of one)" bash -c "RAILYARD_PAGE_SIZE=1 '$RY' nodes \
	--json | jq -e '(.items | length) == 3 and .next_cursor == null' >/dev/null"
check "  the table names them" bash -c "'$RY' nodes --cluster it | grep -c ' online ' | grep -qx 3"
check "  with a HEALTH column: three healthy nodes (every port active at one rate)" bash -c "
	'$RY' nodes --cluster it >'$T/nodes.txt' && head -1 '$T/nodes.txt' | grep -q ' HEALTH ' &&
	[ \$(grep -c ' online  *healthy ' '$T/nodes.txt') = 3 ]"
check "  node show leads with its health" bash -c "'$RY' node show \$('$RY' nodes --cluster it --json |
	jq -r '.items[0].id') | head -1 | grep -qx 'health: healthy'"
check "  another cluster's nodes: none" bash -c "'$RY' nodes --cluster other --json |
	jq -e '.items == []' >/dev/null"

# ---- a check-mode deployment and an agent's restart, followed on the event stream by watch --
"$RY" watch >"$T/watch.out" 2>"$T/watch.err" &
WATCH=$!
"$RY" watch --json >"$T/watch.json" 2>"$T/watch-json.err" &
WATCHJ=$!
PIDS+=("$WATCH" "$WATCHJ")
# Both follow the stream before anything happens: the controller counts its open streams.
streams() { curl -sf --cacert "$CA" -H "Authorization: Bearer $ADMIN" "$URL/metrics" |
	grep -qx "railyard_http_streams $1"; }
check "watch and watch --json follow the event stream" wait_for 10 streams 2
check "deploy --check: exit 0" ry 0 deploy --cluster it --playbook "$PB" --check --canary 0 \
	--pause-ms 0
check "  a line per node, then the end" bash -c "[ \$(grep -c '^  [a-z0-9-]* *batch' '$T/out') = 3 ] &&
	grep -q '^deployment d-[0-9a-f]* succeeded' '$T/out'"
DEP=$(awk '/^deployment d-/ {sub(":", "", $2); print $2; exit}' "$T/out")
check "watch said when it ended" wait_for 10 grep -qx "deployment $DEP succeeded" "$T/watch.out"
check "  off a terminal, a line per node as it ended" test "$(grep -c "^deployment $DEP [a-z0-9.-]* succeeded$" \
	"$T/watch.out")" = 3
check "  and none per step" bash -c "! grep -q '^deployment $DEP .* step ' '$T/watch.out'"
kill -TERM "${AGENT_PID[b]}"
wait "${AGENT_PID[b]}" 2>/dev/null
start_agent b "$FIXTURES/h200-roce"
check "an agent stopped and started: three online again" wait_for 30 online
# jq -s: every line is one JSON document.
wjson() { jq -se --arg d "$DEP" "$1" "$T/watch.json" >/dev/null; }
check "watch --json: the deployment's end, with its type and event id" wait_for 10 wjson \
	'any(.[]; .type == "deployment.state" and .id == $d and .state == "succeeded" and
	(.event_id | type) == "number")'
check "  the node that went offline, and online again" wait_for 10 wjson \
	'any(.[]; .type == "node.offline") and
	any(.[]; .type == "node.online")'
check "watch: the node's lines" wait_for 10 bash -c "grep -q '^node [a-z0-9.-]* offline$' \
	'$T/watch.out' && grep -q '^node [a-z0-9.-]* online$' '$T/watch.out'"
kill -INT "$WATCH" "$WATCHJ"
wait "$WATCH"
check "  and ends on Ctrl-C with 0" test $? = 0
wait "$WATCHJ"
check "  as does watch --json" test $? = 0
check "  nothing on stderr" test ! -s "$T/watch.err" -a ! -s "$T/watch-json.err"
check "deployments --json: the API's listing" ry 0 deployments --json
check "  with the check-mode one" jqt --arg d "$DEP" '[.items[] | select(.id == $d and
	.check_mode and .state == "succeeded")] | length == 1' "$T/out"
check "deployments ID --json: its nodes and steps" ry 0 deployments "$DEP" --json
check "  three nodes, steps each" jqt '(.nodes | length) == 3 and all(.nodes[]; (.steps | length) >= 1)' "$T/out"
printf 'name: x\nversion: "1"\nsteps: []\nvalidation:\n  tests: 3\n' >"$T/bad.yaml"
check "a playbook that does not validate: exit 1" ry 1 deploy --cluster it --playbook "$T/bad.yaml"
check "  its problems as FILE:LINE:COL, the file named as given" \
	grep -q "^$T/bad.yaml:[0-9]*:[0-9]*: " "$T/err"

# ---- a campaign, its sign-off exported and verified -------------------------------------------
check "validate --quick --signoff over three nodes: exit 0" ry 0 validate --cluster it \
	--playbook "$PB" --quick --signoff
check "  progress lines, then the verdict" bash -c "grep -q '^campaign c-[0-9a-f]*: test ' '$T/out' &&
	grep -q '^campaign c-[0-9a-f]*: passed (tcp, quick, 3 nodes' '$T/out'"
CAMP=$(awk '/^campaign c-.*: passed/ {sub(":", "", $2); print $2; exit}' "$T/out")
check "  and the sign-off" grep -q "^so-[0-9a-f]* *pass .*campaign $CAMP" "$T/out"
check "campaigns: listed" bash -c "'$RY' campaigns | grep -q '^$CAMP .* passed'"
check "campaigns ID --results --json" ry 0 campaigns "$CAMP" --results --json
check "  its rows" jqt '.state == "passed" and (.results | length) > 0' "$T/out"
check "signoff list" ry 0 signoff list --json
SO=$(jq -r --arg c "$CAMP" '.items[] | select(.campaign == $c) | .id' "$T/out")
check "  has the campaign's" test -n "$SO"
check "signoff show" bash -c "'$RY' signoff show '$SO' | grep -q '^  sha256 '"
check "signoff export: exit 0" ry 0 signoff export "$SO" --dir "$T/export"
check "  exactly the four files" test "$(cd "$T/export" && ls | tr '\n' ' ')" = \
	"ca.pem signoff.html signoff.json signoff.p7s "
check "signoff export: says how to verify, on stderr" bash -c "grep -q '^  railyard signoff verify' \
	'$T/err' && grep -q -- '-signer signer.pem' '$T/err'"
# The verifier is railyard's own: no railyard-controller in PATH, beside it or in the environment.
check "signoff verify without railyard-controller: exit 0" bash -c "env -i PATH=/usr/bin:/bin \
	'$RY' signoff verify '$T/export/signoff.json' '$T/export/signoff.p7s' --ca '$T/export/ca.pem' \
	>'$T/out' 2>'$T/err'"
check "  verified" grep -q "^verified: $SO of cluster it" "$T/out"
sed '0,/"p50_us": [0-9]/s//&9/' "$T/export/signoff.json" >"$T/edited.json"
check "  an edited report: exit 1, not verified" bash -c "env -i PATH=/usr/bin:/bin '$RY' signoff \
	verify '$T/edited.json' '$T/export/signoff.p7s' --ca '$T/export/ca.pem' 2>'$T/err'; [ \$? = 1 ] &&
	grep -q 'NOT VERIFIED: signature does not match' '$T/err'"
check "  a missing file: exit 2" bash -c "'$RY' signoff verify '$T/nope.json' \
	'$T/export/signoff.p7s' --ca '$T/export/ca.pem' 2>/dev/null; [ \$? = 2 ]"
check "revalidate against it (run by the controller): exit 0" ry 0 revalidate --cluster it \
	--baseline "$SO" --tolerance-bw 1000 --tolerance-lat 1000 --json
cp "$T/out" "$T/rv.json"; cp "$T/err" "$T/rv.err"
check "  a revalidation report naming its baseline" jqt --arg b "$SO" \
	'.kind == "revalidation" and .baseline == $b and .verdict == "pass"' "$T/rv.json"
check "  progress on stderr, a line per step, until signed" bash -c "
	grep -q '^revalidate rv-[0-9a-f]*: validating, campaign c-' '$T/rv.err' &&
	grep -q '^revalidate rv-[0-9a-f]*: signed' '$T/rv.err'"
check "revalidate with an unknown baseline: exit 4" ry 4 revalidate --cluster it --baseline so-00000000
check "  naming it" err_has "baseline"
"$RY" validate --cluster it --playbook "$PB" --quick >"$T/int.out" 2>"$T/int.err" &
VAL=$!
PIDS+=("$VAL")
check "an interrupted validate: it was running" wait_for 30 grep -q '^campaign c-[0-9a-f]*: test ' "$T/int.out"
kill -INT "$VAL"
wait "$VAL"
check "  Ctrl-C: exit 130" test $? = 130
ICAMP=$(awk '/^campaign c-/ {sub(":", "", $2); print $2; exit}' "$T/int.out")
check "  the campaign was cancelled through the API" bash -c "grep -q 'interrupted; cancelling it' \
	'$T/int.err' && '$RY' campaigns '$ICAMP' --json | jq -e '.state == \"cancelled\"' >/dev/null"
check "watch --once: nothing running" bash -c "'$RY' watch --once | grep -qx 'nothing running'"

# ---- refusals and exit codes ------------------------------------------------------------------
check "the viewer may not deploy: exit 3" ry 3 --token "$VIEW" deploy --cluster it \
	--playbook "$PB" --check
check "  forbidden" err_has "railyard: forbidden: "
check "an unknown deployment: exit 4" ry 4 deployments d-00000000
check "  not_found, the field named" err_has "railyard: not_found: .*(field id)"
check "a closed port: exit 5" ry 5 --url https://127.0.0.1:1 nodes
check "  cannot reach" err_has "cannot reach https://127.0.0.1:1"
"$CTL" init --state-dir "$T/other" >/dev/null 2>&1
check "another CA: exit 5 (TLS)" ry 5 --ca "$T/other/ca.crt" nodes
check "a plain http:// URL: exit 2" ry 2 --url "http${URL#https}" nodes
check "usage: exit 2" ry 2 deploy --cluster it
check "an unknown command: exit 2" ry 2 frobnicate
check "a profile's token goes to its URL only (localhost: none sent): exit 3" \
	ry 3 --url "https://localhost:${URL##*:}" --ca "$CA" nodes
check "the environment instead of a profile" bash -c "RAILYARD_CONFIG=$T/none.json \
	RAILYARD_URL='$URL' RAILYARD_TOKEN='$VIEW' RAILYARD_CA='$CA' '$RY' nodes --json >/dev/null"
check "completion bash parses" bash -c "'$RY' completion bash | bash -n"
check "  and completes" bash -c ". <('$RY' completion bash); COMP_WORDS=(railyard signoff ex)
	COMP_CWORD=2; _railyard; [ \"\${COMPREPLY[*]}\" = export ]"
# Valgrind and AddressSanitizer do not mix: the sanitizer build checks leaks itself.
if command -v valgrind >/dev/null && ! ldd "$RY" | grep -q libasan; then
	for args in "nodes" "deployments $DEP" "signoff export $SO --dir $T/vg"; do
		check "no leak under valgrind: railyard $args" bash -c "valgrind -q --leak-check=full \
			--error-exitcode=99 '$RY' $args >/dev/null 2>'$T/valgrind.log'"
	done
	valgrind -q --leak-check=full --error-exitcode=99 "$RY" watch >"$T/vg-watch.out" \
		2>"$T/valgrind-watch.log" &
	VGW=$!
	PIDS+=("$VGW")
	wait_for 30 streams 1
	sleep 2
	kill -INT "$VGW"
	wait "$VGW"
	check "no leak under valgrind: railyard watch, then Ctrl-C: exit 0" test $? = 0 -a \
		! -s "$T/valgrind-watch.log"
fi
check "logout" ry 0 logout
check "  the current profile gone, the other kept" jqt '.current == null and
	(.profiles | keys) == ["admin"]' "$RAILYARD_CONFIG"
check "  with no profile chosen, no controller: exit 2" ry 2 nodes
check "  the other one by name" ry 0 --profile admin nodes

kill -TERM "$CTL_PID"
check "controller exits cleanly" wait_for 15 exited "$CTL_PID"
check_sanitizers
finish
