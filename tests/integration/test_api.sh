#!/usr/bin/env bash
# Integration: the REST API over real HTTPS (curl) and the state directory's unix socket. The
# flow as an integrator token does it (enrollment token, nodes, check-mode deployment, campaign,
# sign-off download and offline verification); the whole role x route x scope matrix from the
# route table itself; every bad input of the table in docs/rest.md answered with the error body,
# nothing stored, the server still serving; mutations audited with the token's id and name.
. "$(dirname "$0")/lib.sh"

PB=$T/tcp-baseline.yaml
loose_baseline "$PB" || die "loose_baseline"
"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
start_controller --heartbeat-interval 300ms
check "the API's URL is written" wait_for 10 test -s "$T/ctl/api.addr"
URL=$(cat "$T/ctl/api.addr")
CA=$T/ctl/ca.crt

# api METHOD PATH TOKEN [BODY [CONTENT-TYPE]]: the status; the body in $T/body (an event
# stream is read for 2 s)
api() {
	local args=(-s -o "$T/body" -w '%{http_code}' --cacert "$CA" -X "$1")
	[[ "$2" == /api/v1/events* ]] && args+=(--max-time 2)
	: >"$T/body" # curl leaves the file alone when no byte of body comes
	[ -n "$3" ] && args+=(-H "Authorization: Bearer $3")
	[ $# -ge 4 ] && args+=(-H "Content-Type: ${5:-application/json}" --data-binary "$4")
	curl "${args[@]}" "$URL$2"
}
body() { jq -r "$1" "$T/body"; }
is_error_body() { jq -e '.error.code | type == "string"' "$T/body" >/dev/null; }
mktoken() { # NAME ROLE [CLUSTERS-JSON]: a token made through the API by the first admin
	api POST /api/v1/api-tokens "$ADMIN" \
		"{\"name\":\"$1\",\"role\":\"$2\"${3:+,\"clusters\":$3}}" >/dev/null
	body .token
}

ADMIN=$("$CTL" api-token create --name first-admin --role admin --state-dir "$T/ctl" 2>/dev/null |
	awk '/^token:/ {print $2}')
check "the first admin token is made offline" test -n "$ADMIN"
check "health needs no token" test "$(api GET /healthz "")" = 200
check "readiness" test "$(api GET /readyz "")" = 200
INT=$(mktoken integrator integrator '["it"]')
check "an integrator token scoped to cluster it" test -n "$INT"

# ---- the flow, as the integrator --------------------------------------------------------------
check "enrollment token through the API: 201" test "$(api POST /api/v1/enrollment-tokens "$INT" \
	'{"cluster":"it","uses":3,"ttl_ms":600000}')" = 201
TOKEN=$(body .token) FP=$(body .ca_fingerprint) ETID=$(body .id)
for n in a:h200-ib b:h200-roce c:h200-ib-2; do
	enroll "${n%%:*}" "$FIXTURES/${n#*:}" || die "enroll ${n%%:*}"
	start_agent "${n%%:*}" "$FIXTURES/${n#*:}"
done
online() { [ "$(api GET "/api/v1/nodes?cluster=it&state=online" "$INT")" = 200 ] &&
	[ "$(body '.items | length')" = 3 ]; }
check "three nodes online, seen through the API" wait_for 30 online
NODE=$(body '.items[0].id')
pbjson=$(jq -Rs . <"$PB")
check "a check-mode deployment: 201" test "$(api POST /api/v1/deployments "$INT" \
	"{\"cluster\":\"it\",\"playbook\":$pbjson,\"check\":true,\"canary\":0,\"pause_ms\":0}")" = 201
DEP=$(body .id)
dep_final() { api GET "/api/v1/deployments/$DEP" "$INT" >/dev/null &&
	case "$(body .state)" in succeeded | partial | failed) true ;; *) false ;; esac; }
check "  it ends" wait_for 60 dep_final
check "  succeeded, with per-node step results" jqt '.state == "succeeded" and
	(.nodes | length) == 3 and all(.nodes[]; (.steps | length) >= 1)' "$T/body"
# A cluster name the store would refuse (over 64 bytes) is the request's fault: it was a 500
# "storing the deployment: Invalid argument" (fuzz_rest).
long_cluster=$(printf 'c%.0s' $(seq 300))
check "a deployment to a cluster name of 300 bytes: 400" test "$(api POST /api/v1/deployments "$ADMIN" \
	"{\"cluster\":\"$long_cluster\",\"playbook\":$pbjson,\"check\":true}")" = 400
check "  the body says cluster" test "$(body .error.field)" = cluster
check "a campaign: 201" test "$(api POST /api/v1/campaigns "$INT" \
	"{\"cluster\":\"it\",\"playbook\":$pbjson,\"quick\":true,\"signoff\":true}")" = 201
CAMP=$(body .id)
camp_ended() { api GET "/api/v1/campaigns/$CAMP" "$INT" >/dev/null && [ "$(body .state)" != running ]; }
check "  it ends" wait_for 120 camp_ended
check "  passed" test "$(body .state)" = passed
[ "$(body .state)" = passed ] || echo "  campaign: $(jq -c '{state, error, verdict}' "$T/body" | head -c 3000)"
signed() { api GET "/api/v1/signoffs?cluster=it" "$INT" >/dev/null &&
	[ "$(body '.items | length')" -ge 1 ]; }
check "  and was signed" wait_for 30 signed
SO=$(body '.items[0].id')
for f in signoff.json signoff.p7s signoff.html; do
	api GET "/api/v1/signoffs/$SO/$f" "$INT" >/dev/null && cp "$T/body" "$T/$f"
done
api GET /api/v1/ca.pem "$INT" >/dev/null && cp "$T/body" "$T/ca.pem"
shown_recipe "$T/signoff.html" >"$T/recipe.sh"
check "the downloaded sign-off verifies with stock openssl, as its HTML view says" \
	run_recipe "$T/recipe.sh" "$T"
check "  and offline" "$RY" signoff verify "$T/signoff.json" "$T/signoff.p7s" --ca "$T/ca.pem"
check "the page is the page" grep -q "openssl cms -verify" "$T/signoff.html"
# hdr URL-PATH TOKEN NAME [curl args]: the value of a reply header ("" when absent)
hdr() {
	curl -s -D - -o /dev/null --cacert "$CA" ${2:+-H "Authorization: Bearer $2"} "${@:4}" "$URL$1" |
		awk -v n="$(tr 'A-Z' 'a-z' <<<"$3")" -F': ' 'tolower($1) == n {sub(/\r$/, "", $2); print $2}'
}
check "the page is served with a policy: its inline style, no script, sandboxed" test \
	"$(hdr "/api/v1/signoffs/$SO/signoff.html" "$INT" Content-Security-Policy)" = \
	"default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; sandbox"
check "  the page needs no more: no script, no external reference in it" bash -c "
	! grep -qi '<script\|<img\|<link\|<iframe\|<object\|src=\|@import\|<[^>]* on[a-z]*=' '$T/signoff.html'"
for p in /healthz /api/v1/nodes "/api/v1/signoffs/$SO/signoff.json" /; do
	check "HTTPS reply of $p: Strict-Transport-Security" test "$(hdr "$p" "$INT" Strict-Transport-Security)" = max-age=31536000
done
check "  an error reply too" test "$(hdr /api/v1/nope "" Strict-Transport-Security)" = max-age=31536000
check "  not over the unix socket (plain HTTP: HSTS is for HTTPS only)" bash -c "
	! curl -s -D - -o /dev/null --unix-socket '$T/ctl/api.sock' http://localhost/healthz |
		grep -qi '^strict-transport-security'"
check "the controller verifies a stored sign-off: 200" test "$(api GET "/api/v1/signoffs/$SO/verify" "$INT")" = 200
check "  verified, signed by the controller's sign-off key" jqt --arg s "$SO" '.verified == true and
	.status == 0 and .id == $s and (.signer | test("sign")) and .verdict == "pass"' "$T/body"
OPR=$(mktoken operator operator '["it"]')

# ---- playbooks: check, upload, list, read ------------------------------------------------------
check "a playbook checks: 200" test "$(api POST /api/v1/playbooks/check "$INT" "{\"playbook\":$pbjson}")" = 200
check "  valid, with its steps" jqt '.valid == true and .name == "tcp-baseline" and (.steps | length) >= 1' "$T/body"
check "  nothing was stored" bash -c "curl -s --cacert '$CA' -H 'Authorization: Bearer $INT' \
	'$URL/api/v1/playbooks' | jq -e '.items == []' >/dev/null"
check "  rendered with a node's facts: the plan for that node" test "$(api POST /api/v1/playbooks/check "$INT" \
	"{\"playbook\":$pbjson,\"node\":\"$NODE\"}")" = 200
check "  the plan names the node" jqt --arg n "$NODE" '.plan.node == $n and (.plan.steps | length) >= 1' "$T/body"
check "a playbook with an error: 400 invalid_playbook, line and column" test "$(api POST /api/v1/playbooks/check "$INT" \
	'{"playbook":"name: x\nversion: 1\nsteps:\n  - name: a\n    type: nosuchstep\n"}')" = 400
check "  details with line and column" jqt '.error.code == "invalid_playbook" and
	(.error.details | length) >= 1 and .error.details[0].line == 5' "$T/body"
check "upload a playbook for cluster it: 201" test "$(api POST /api/v1/playbooks "$INT" \
	"{\"cluster\":\"it\",\"playbook\":$pbjson}")" = 201
PBSHA=$(body .sha256)
check "  its SHA-256 is the text's" test "$PBSHA" = "$(sha256sum <"$PB" | cut -d' ' -f1)"
check "  listed" bash -c "curl -s --cacert '$CA' -H 'Authorization: Bearer $INT' '$URL/api/v1/playbooks?cluster=it' |
	jq -e --arg s '$PBSHA' 'any(.items[]; .sha256 == \$s and .actor != \"\")' >/dev/null"
check "  read back byte for byte" bash -c "curl -s --cacert '$CA' -H 'Authorization: Bearer $INT' \
	'$URL/api/v1/playbooks/$PBSHA' | jq -j .text | cmp -s - '$PB'"
check "  audited" bash -c "'$RY' audit --limit 200 --state-dir '$T/ctl' | grep -q 'playbook.upload'"

# ---- benchmark runs ------------------------------------------------------------------------------
api GET "/api/v1/nodes?cluster=it" "$INT" >/dev/null
N1=$(body '.items[0].hostname') N2=$(body '.items[1].hostname')
check "a benchmark run over the API: 201" test "$(api POST /api/v1/bench-runs "$OPR" \
	"{\"cluster\":\"it\",\"from\":\"$N1\",\"to\":\"$N2\",\"kind\":\"lat\",\"transport\":\"tcp\",\"iters\":200}")" = 201
BR=$(body .id)
check "  of cluster it, ordered by the operator" jqt '.cluster == "it" and (.actor | startswith("api:operator"))' "$T/body"
br_done() { api GET "/api/v1/bench-runs/$BR" "$OPR" >/dev/null && [ "$(body .state)" = succeeded ]; }
check "  it succeeds, with a result" wait_for 60 br_done
check "  200 samples, p50 latency measured" jqt '.result.results[0].latency.count == 200 and
	.result.results[0].latency.p50 > 0' "$T/body"
check "  cancelling it now: 409" test "$(api POST "/api/v1/bench-runs/$BR/cancel" "$OPR")" = 409
check "a bad transport: 400 naming it" test "$(api POST /api/v1/bench-runs "$OPR" \
	"{\"cluster\":\"it\",\"from\":\"$N1\",\"to\":\"$N2\",\"transport\":\"carrier-pigeon\"}")" = 400
check "  the body says transport" test "$(body .error.field)" = transport
check "a node twice: 400" test "$(api POST /api/v1/bench-runs "$OPR" \
	"{\"cluster\":\"it\",\"from\":\"$N1\",\"to\":\"$N1\"}")" = 400
check "a viewer may not order one: 403" test "$(api POST /api/v1/bench-runs "$(mktoken viewer viewer '["it"]')" \
	"{\"cluster\":\"it\",\"from\":\"$N1\",\"to\":\"$N2\"}")" = 403

# ---- enrollment tokens: listed (never the token), revoked ---------------------------------------
check "enrollment tokens are listed by id, used up, without the token" bash -c "
	curl -s --cacert '$CA' -H 'Authorization: Bearer $INT' '$URL/api/v1/enrollment-tokens' >'$T/et.json'
	jq -e --arg id '$ETID' 'any(.items[]; .id == \$id and .state == \"used\" and .uses_left == 0 and
		.uses_total == 3)' '$T/et.json' >/dev/null && ! grep -q '$TOKEN' '$T/et.json'"
api POST /api/v1/enrollment-tokens "$INT" '{"cluster":"it","uses":5}' >/dev/null
T2=$(body .token) T2ID=$(body .id)
check "a token revoked: 200" test "$(api DELETE "/api/v1/enrollment-tokens/$T2ID" "$INT")" = 200
check "  listed as revoked" bash -c "curl -s --cacert '$CA' -H 'Authorization: Bearer $INT' \
	'$URL/api/v1/enrollment-tokens' | jq -e --arg id '$T2ID' 'any(.items[]; .id == \$id and .state == \"revoked\")' >/dev/null"
check "  an agent presenting it is refused, saying so" bash -c "
	! '$AGENT' enroll --controller '$ADDR' --token '$T2' --ca-fingerprint '$FP' --state-dir '$T/x' \
		--sysroot '$FIXTURES/h200-ib' >'$T/x.enroll.log' 2>&1 && grep -q 'revoked' '$T/x.enroll.log'"
check "an unknown token id: 404" test "$(api DELETE /api/v1/enrollment-tokens/0000000000000000 "$INT")" = 404

# ---- revalidation and cancels, run by the serving controller ---------------------------------
check "an operator may not apply a configuration: 403 naming apply" bash -c "
	[ \"\$(curl -s -o '$T/rv.err' -w '%{http_code}' --cacert '$CA' -H 'Authorization: Bearer $OPR' \
		-H 'Content-Type: application/json' -d '{\"cluster\":\"it\",\"baseline\":\"$SO\",\"apply\":true}' \
		'$URL/api/v1/revalidations')\" = 403 ] && jq -e '.error.field == \"apply\"' '$T/rv.err' >/dev/null"
check "an unknown baseline: 404 naming it" test "$(api POST /api/v1/revalidations "$OPR" \
	'{"cluster":"it","baseline":"so-00000000"}')" = 404
check "  the body says baseline" test "$(body .error.field)" = baseline
check "a tolerance out of range: 400 naming it" test "$(api POST /api/v1/revalidations "$OPR" \
	"{\"cluster\":\"it\",\"baseline\":\"$SO\",\"tolerance_bw_pct\":-1}")" = 400
check "  the body says tolerance_bw_pct" test "$(body .error.field)" = tolerance_bw_pct
check "an operator revalidates against the sign-off: 201" test "$(api POST /api/v1/revalidations "$OPR" \
	"{\"cluster\":\"it\",\"baseline\":\"$SO\",\"tolerance_bw_pct\":1000,\"tolerance_lat_pct\":1000}")" = 201
RV=$(body .id)
check "  pending, in check mode" jqt '.state == "pending" and .apply == false and .actor != ""' "$T/body"
rv_ended() { api GET "/api/v1/revalidations/$RV" "$OPR" >/dev/null &&
	case "$(body .state)" in signed | failed | cancelled) true ;; *) false ;; esac; }
check "  the controller runs it to its end" wait_for 180 rv_ended
cp "$T/body" "$T/rv.json"
# Its verdict compares this run's measurements with the baseline's, within tolerances of at most
# 1000 %: noise on a busy host can fail it, so the state machine is what is asserted (signed),
# and that the revalidation reports the verdict its sign-off holds, whichever it is.
check "  signed, with the deployment, campaign and sign-off it made" jqt '.state == "signed" and
	(.deployment | startswith("d-")) and (.campaign | startswith("c-")) and
	(.signoff | startswith("so-")) and (.verdict == "pass" or .verdict == "fail")' "$T/rv.json"
jqt '.state == "signed"' "$T/rv.json" || echo "  revalidation: $(jq -c . "$T/rv.json")"
RVDEP=$(body .deployment) RVSO=$(body .signoff)
check "  its verdict is its sign-off's" bash -c "
	curl -s --cacert '$CA' -H 'Authorization: Bearer $OPR' '$URL/api/v1/signoffs/$RVSO' |
		jq -e --arg v \"\$(jq -r .verdict '$T/rv.json')\" '.verdict == \$v' >/dev/null"
check "  its deployment was in check mode" bash -c "
	curl -s --cacert '$CA' -H 'Authorization: Bearer $OPR' '$URL/api/v1/deployments/$RVDEP' |
		jq -e '.check_mode == true and .state == \"succeeded\"' >/dev/null"
check "  its sign-off is a revalidation against the baseline" bash -c "
	curl -s --cacert '$CA' -H 'Authorization: Bearer $OPR' '$URL/api/v1/signoffs/$RVSO' |
		jq -e '.kind == \"revalidation\" and .baseline == \"$SO\"' >/dev/null"
check "a revalidation cancelled at once ends cancelled" bash -c "
	id=\$(curl -s --cacert '$CA' -H 'Authorization: Bearer $OPR' -H 'Content-Type: application/json' \
		-d '{\"cluster\":\"it\",\"baseline\":\"$SO\"}' '$URL/api/v1/revalidations' | jq -r .id)
	[ \"\$(curl -s -o /dev/null -w '%{http_code}' -X POST --cacert '$CA' -H 'Authorization: Bearer $OPR' \
		\"$URL/api/v1/revalidations/\$id/cancel\")\" = 202 ] || exit 1
	for i in \$(seq 100); do
		st=\$(curl -s --cacert '$CA' -H 'Authorization: Bearer $OPR' \"$URL/api/v1/revalidations/\$id\" | jq -r .state)
		[ \"\$st\" = cancelled ] && exit 0; sleep 0.1
	done; exit 1"
# A deployment held between batches by its pause, then cancelled: the rest is never sent.
check "a deployment in batches of one with a long pause: 201" test "$(api POST /api/v1/deployments "$INT" \
	"{\"cluster\":\"it\",\"playbook\":$pbjson,\"check\":true,\"batch\":\"1\",\"canary\":0,\"pause_ms\":600000}")" = 201
CDEP=$(body .id)
first_done() { api GET "/api/v1/deployments/$CDEP" "$INT" >/dev/null &&
	jq -e '[.nodes[] | select(.state == "succeeded")] | length == 1' "$T/body" >/dev/null; }
check "  its first batch ends, the pause holds the rest" wait_for 60 first_done
check "  an operator may not cancel what an integrator started: 403" \
	test "$(api POST "/api/v1/deployments/$CDEP/cancel" "$OPR")" = 403
check "  the integrator cancels it: 202" test "$(api POST "/api/v1/deployments/$CDEP/cancel" "$INT")" = 202
cdep_final() { api GET "/api/v1/deployments/$CDEP" "$INT" >/dev/null && [ "$(body .state)" = cancelled ]; }
check "  it ends cancelled" wait_for 30 cdep_final
check "  the nodes it had not reached are skipped" jqt '([.nodes[] | select(.state == "skipped")] |
	length) == 2 and .reason == "cancelled on request"' "$T/body"
check "  a second cancel: 409" test "$(api POST "/api/v1/deployments/$CDEP/cancel" "$INT")" = 409
check "  the cancel is audited" bash -c "
	'$RY' audit --limit 200 --state-dir '$T/ctl' | grep -q 'api:integrator ([0-9a-f]*) *deploy.cancel'"
check "a GET answers with an ETag, If-None-Match gives 304" bash -c "
	etag=\$(curl -s -D - -o /dev/null --cacert '$CA' -H 'Authorization: Bearer $INT' \
		'$URL/api/v1/signoffs/$SO' | awk -F': ' 'tolower(\$1) == \"etag\" {print \$2}' | tr -d '\r')
	[ -n \"\$etag\" ] && [ \"\$(curl -s -o /dev/null -w '%{http_code}' --cacert '$CA' \
		-H 'Authorization: Bearer $INT' -H \"If-None-Match: \$etag\" '$URL/api/v1/signoffs/$SO')\" = 304 ]"
check "the OpenAPI document is served, byte for byte docs/openapi.yaml" bash -c "
	[ \"\$(curl -s -o '$T/openapi.yaml' -w '%{http_code}' --cacert '$CA' -H 'Authorization: Bearer $INT' \
		'$URL/api/v1/openapi.yaml')\" = 200 ] && cmp -s '$T/openapi.yaml' '$SRC/docs/openapi.yaml'"
check "lists filter by state and cluster" bash -c "
	curl -s --cacert '$CA' -H 'Authorization: Bearer $INT' '$URL/api/v1/campaigns?state=passed&cluster=it' |
		jq -e '(.items | length) >= 1 and all(.items[]; .state == \"passed\")' >/dev/null &&
	curl -s --cacert '$CA' -H 'Authorization: Bearer $INT' '$URL/api/v1/deployments?state=running' |
		jq -e '.items == []' >/dev/null"
check "the CA certificate needs no token" test "$(api GET /api/v1/ca.pem "")" = 200
check "the unix socket acts as admin without a token" test "$(curl -s -o "$T/body" -w '%{http_code}' \
	--unix-socket "$T/ctl/api.sock" http://localhost/api/v1/api-tokens)" = 200
check "mutations are audited with the token's name and id" bash -c "
	'$RY' audit --limit 200 --state-dir '$T/ctl' | grep -q 'api:integrator ([0-9a-f]*) *campaign.create'"

check "the event stream replays what happened, as Server-Sent Events" bash -c "
	curl -s --max-time 2 --cacert '$CA' -H 'Authorization: Bearer $INT' \
		'$URL/api/v1/events?last_event_id=0' >'$T/events.txt'
	grep -q '^event: node.online' '$T/events.txt' && grep -q '^event: deployment.step' '$T/events.txt' &&
	grep -q '^event: campaign.state' '$T/events.txt' && grep -q '^event: signoff.created' '$T/events.txt' &&
	grep -q '^event: revalidation.state' '$T/events.txt' &&
	grep -q '^id: [0-9]' '$T/events.txt'"
check "campaign.progress never points past the campaign's last test" bash -c "
	n=\$(curl -s --cacert '$CA' -H 'Authorization: Bearer $INT' '$URL/api/v1/campaigns/$CAMP' | jq '.tests | length')
	grep -A1 '^event: campaign.progress' '$T/events.txt' | sed -n 's/^data: //p' |
		jq -e -s --arg c '$CAMP' --argjson n \"\$n\" 'map(select(.id == \$c)) |
			length > 0 and all(.[]; .test_index < \$n)' >/dev/null"
LAST=$(grep '^id: ' "$T/events.txt" | tail -1 | cut -d' ' -f2)
check "Last-Event-ID resumes after that event" bash -c "
	curl -s --max-time 2 --cacert '$CA' -H 'Authorization: Bearer $INT' -H 'Last-Event-ID: $((LAST - 1))' \
		'$URL/api/v1/events' >'$T/events2.txt'
	[ \"\$(grep -c '^id: ' '$T/events2.txt')\" = 1 ] && grep -q '^id: $LAST\$' '$T/events2.txt'"
check "an id from before a restart (higher than any) gets a reset" bash -c "
	curl -s --max-time 2 --cacert '$CA' -H 'Authorization: Bearer $INT' -H 'Last-Event-ID: 999999' \
		'$URL/api/v1/events' | grep -q '^event: reset'"
# The stream starts from now: the revocation is made once its headers came (the stream is open).
check "a live event reaches a subscriber" bash -c "
	(curl -s -N --max-time 20 -D '$T/live.hdr' --cacert '$CA' -H 'Authorization: Bearer $INT' '$URL/api/v1/events' >'$T/live.txt' &)
	for i in \$(seq 100); do grep -q '^HTTP/1.1 200' '$T/live.hdr' 2>/dev/null && break; sleep 0.1; done
	'$RY' node revoke gpu-node-04 --state-dir '$T/ctl' >/dev/null 2>&1; kill -TERM ${AGENT_PID[c]}
	for i in \$(seq 150); do grep -q '^event: node.offline' '$T/live.txt' && exit 0; sleep 0.1; done; exit 1"
check "/metrics is not for a token scoped to clusters: 403" test "$(api GET /metrics "$INT")" = 403
api GET /metrics "$ADMIN" >/dev/null
cp "$T/body" "$T/metrics.txt"
# Campaigns by state as the API lists them (the revalidation's campaign passes or fails on the
# host's noise; what is checked is that /metrics counts what the store holds).
api GET "/api/v1/campaigns?limit=1000" "$ADMIN" >/dev/null
cp "$T/body" "$T/campaigns.json"
check "/metrics: nodes by state, sessions, requests by route, campaigns by state" bash -c "
	grep -q '^railyard_nodes{state=\"online\"} ' '$T/metrics.txt' && grep -q '^railyard_sessions ' '$T/metrics.txt' &&
	grep -q '^railyard_http_requests_total{route=\"/api/v1/nodes\"' '$T/metrics.txt' &&
	jq -r '.items | group_by(.state)[] | \"railyard_campaigns{state=\\\"\\(.[0].state)\\\"} \\(length)\"' \
		'$T/campaigns.json' | sort >'$T/camp.want' && [ -s '$T/camp.want' ] &&
	grep '^railyard_campaigns{' '$T/metrics.txt' | sort | cmp -s - '$T/camp.want'"
check "/metrics: agent messages by kind, store and RPC latency histograms" bash -c "
	grep -q '^railyard_rpc_messages_total{kind=\"Hello\"} [1-9]' '$T/metrics.txt' &&
	grep -q '^railyard_rpc_messages_total{kind=\"Heartbeat\"} [1-9]' '$T/metrics.txt' &&
	grep -q '^railyard_rpc_store_duration_seconds_bucket{kind=\"StepEvent\",le=\"+Inf\"} [1-9]' '$T/metrics.txt' &&
	grep -q '^railyard_store_transaction_duration_seconds_count [1-9]' '$T/metrics.txt'"
# promtool: Debian's prometheus package ships it; rather than install (and start) a Prometheus
# server, the package is downloaded once into the build directory and promtool taken from it.
PROMTOOL=$(command -v promtool || true)
if [ -z "$PROMTOOL" ]; then
	PROMTOOL=$(cd "$BUILD" && pwd)/tools/promtool
	if [ ! -x "$PROMTOOL" ]; then
		mkdir -p "$BUILD/tools/deb"
		(cd "$BUILD/tools/deb" && apt-get download prometheus >/dev/null 2>&1 &&
			dpkg-deb -x prometheus_*.deb x && cp x/usr/bin/promtool "$PROMTOOL") || true
	fi
fi
if [ -x "$PROMTOOL" ]; then
	check "promtool check metrics accepts it" bash -c "'$PROMTOOL' check metrics <'$T/metrics.txt'"
else
	echo "SKIP promtool check metrics: no promtool and the prometheus package could not be downloaded"
fi

# ---- maintenances: one made and cancelled (the matrix reads it) --------------------------------
check "an operator may not start a maintenance: 403" test "$(api POST /api/v1/maintenances "$OPR" \
	"{\"cluster\":\"it\",\"playbook\":$pbjson}")" = 403
check "an integrator starts one: 201" test "$(api POST /api/v1/maintenances "$INT" \
	"{\"cluster\":\"it\",\"playbook\":$pbjson,\"batch\":\"1\",\"min_in_service\":0}")" = 201
MT=$(body .id)
check "  cancelled: 202" test "$(api POST "/api/v1/maintenances/$MT/cancel" "$INT")" = 202
mt_cancelled() { api GET "/api/v1/maintenances/$MT" "$INT" >/dev/null && [ "$(body .state)" = cancelled ]; }
check "  it ends cancelled" wait_for 60 mt_cancelled

# ---- the matrix: every route x role x scope ---------------------------------------------------
"$CTL" api routes --json >"$T/routes.json"
declare -A TOK
for role in admin integrator operator viewer; do
	TOK[$role/all]=$(mktoken "m-$role-all" "$role")
	TOK[$role/it]=$(mktoken "m-$role-it" "$role" '["it"]')
	TOK[$role/other]=$(mktoken "m-$role-other" "$role" '["other"]')
done
allowed() { # ROLE PERM
	case "$2" in
	public | read) true ;;
	operate) [ "$1" != viewer ] ;;
	configure) [ "$1" = admin ] || [ "$1" = integrator ] ;;
	admin) [ "$1" = admin ] ;;
	esac
}
# unknown_like ID: an id of the same shape that names nothing (its last 4 characters changed)
unknown_like() { local t=0000; [ "${1: -4}" = 0000 ] && t=ffff; echo "${1:0:${#1}-4}$t"; }
# same_as_unknown METHOD PATH ID TOKEN [BODY]: is the reply (status $got, body $T/body) to PATH,
# which names the existing ID out of the caller's scope, byte for byte the reply to the same
# request naming an unknown id (the id itself, echoed in the message, aside)?
same_as_unknown() {
	local method=$1 path=$2 id=$3 tok=$4 unk got2
	unk=$(unknown_like "$id")
	cp "$T/body" "$T/body.scope"
	got2=$(api "$method" "${path//$id/$unk}" "$tok" "${@:5}")
	cp "$T/body" "$T/body.unknown"
	cp "$T/body.scope" "$T/body"
	[ "$got2" = "$got" ] && cmp -s <(sed "s/$id/ID/g" "$T/body.scope") <(sed "s/$unk/ID/g" "$T/body.unknown")
}
# The cluster's workload-manager routes read a binding: bind "it" to hooks that do nothing (the
# matrix's DELETE unbinds it again, after every GET of the binding).
api PUT /api/v1/clusters/it/wlm "$ADMIN" '{"kind":"hooks","hooks":{"drain":["/bin/true"],"resume":["/bin/true"]}}' >/dev/null
bad=0 total=0 leaks=0 compared=0
while IFS=$'\t' read -r method path perm scoped fleet; do
	for role in admin integrator operator viewer; do
		for scope in all it other; do
			p=$path bodyarg=() idv=
			p=${p//\{file\}/signoff.json}
			case "$path" in
			*/nodes/\{id\}/revoke) idv=$([ $scope = other ] && echo "$NODE" || echo n-none) ;;
			*/nodes/*) idv=$NODE ;;
			*/deployments/*) idv=$DEP ;;
			*/campaigns/*) idv=$CAMP ;;
			*/signoffs/*) idv=$SO ;;
			*/revalidations/*) idv=$RV ;;
			*/maintenances/*) idv=$MT ;;
			*/playbooks/*) idv=$PBSHA ;;
			*/enrollment-tokens/*) idv=$ETID ;;
			*/bench-runs/*) idv=$BR ;;
			*/api-tokens/*) idv=0000000000000000 ;;
			/api/v1/events) p="$p?last_event_id=0" ;;
			/api/v1/clusters/\{cluster\}/*) p=${p//\{cluster\}/it} ;;
			esac
			[ -z "$idv" ] || p=${p//\{id\}/$idv} p=${p//\{sha256\}/$idv}
			if [ "$method" = POST ]; then
				case "$path" in
				/api/v1/signoffs) bodyarg=("{\"campaign\":\"$CAMP\"}") ;;
				*\{id\}*) bodyarg=("{}") ;;
				/api/v1/api-tokens) bodyarg=("{}") ;;
				*) bodyarg=('{"cluster":"it"}') ;;
				esac
			fi
			got=$(api "$method" "$p" "${TOK[$role/$scope]}" "${bodyarg[@]}")
			if ! allowed "$role" "$perm"; then
				want=403
			elif [ "$fleet" = true ] && [ "$scope" != all ]; then
				want=403
			elif [ "$scope" = other ] && [ "$scoped" = true ]; then
				if [ "$method" = GET ] && [[ "$path" != *\{* ]]; then
					want=200-no-it
				else
					want=404
				fi
			else
				want=granted
			fi
			ok=false
			case "$want" in
			granted) [ "$got" != 401 ] && [ "$got" != 403 ] &&
				{ [ "$method" != GET ] || [ "$got" = 200 ]; } && ok=true ;;
			200-no-it) [ "$got" = 200 ] && if [ "$path" = /api/v1/events ]; then
				! grep -q '"cluster":"it"' "$T/body"; else jq -e '[.items[] |
				select(.cluster == "it")] | length == 0' "$T/body" >/dev/null; fi &&
				ok=true ;;
			*) [ "$got" = "$want" ] && is_error_body && ok=true ;;
			esac
			total=$((total + 1))
			if ! $ok; then
				bad=$((bad + 1))
				echo "  matrix: $method $p as $role/$scope: got $got, want $want: $(head -c 200 "$T/body")"
			fi
			# Out of scope must be indistinguishable from unknown (docs/rest.md).
			if [ "$want" = 404 ] && [ -n "$idv" ]; then
				compared=$((compared + 1))
				if ! same_as_unknown "$method" "$p" "$idv" "${TOK[$role/$scope]}" "${bodyarg[@]}"; then
					leaks=$((leaks + 1))
					echo "  leak: $method $p as $role/$scope: $got $(head -c 200 "$T/body.scope")" \
						"but for an unknown id: $(head -c 200 "$T/body.unknown")"
				fi
			fi
		done
	done
done < <(jq -r '.[] | [.method, .path, .perm, (.scoped | tostring), (.fleet | tostring)] | @tsv' \
	"$T/routes.json")
check "the matrix: $total requests (routes x 4 roles x 3 scopes) as the table says" test "$bad" -eq 0
check "  every route was walked" test "$total" -eq $(($(jq length "$T/routes.json") * 12))
n_idroutes=$(jq '[.[] | select(.scoped and (.path | test("[{]")))] | length' "$T/routes.json")
check "  out of scope = unknown, byte for byte: $compared replies of $n_idroutes routes with an id, $leaks differ" \
	bash -c "[ '$leaks' = 0 ] && [ '$compared' -ge '$n_idroutes' ]"

# ---- nodes by host name: out of scope is unknown; a name two clusters have, within scope ------
api GET "/api/v1/nodes/$NODE" "$ADMIN" >/dev/null
HOST1=$(body .hostname)
api GET "/api/v1/nodes?cluster=it" "$ADMIN" >/dev/null
HOST2=$(jq -r --arg h "$HOST1" '[.items[] | select(.hostname != $h and .state == "online")][0].hostname' "$T/body")
check "a node by host name, out of scope: 404" test "$(api GET "/api/v1/nodes/$HOST1" "${TOK[viewer/other]}")" = 404
got=404
check "  byte for byte an unknown host's reply" same_as_unknown GET "/api/v1/nodes/$HOST1" "$HOST1" "${TOK[viewer/other]}"
check "a scoped admin revoking another cluster's node by host name: 404" \
	test "$(api POST "/api/v1/nodes/$HOST2/revoke" "${TOK[admin/other]}")" = 404
check "  byte for byte an unknown host's reply" same_as_unknown POST "/api/v1/nodes/$HOST2/revoke" "$HOST2" "${TOK[admin/other]}"
check "  and the node was not revoked" bash -c "curl -s --cacert '$CA' -H 'Authorization: Bearer $ADMIN' \
	'$URL/api/v1/nodes/$HOST2' | jq -e '.state == \"online\"' >/dev/null"
api POST /api/v1/enrollment-tokens "$ADMIN" '{"cluster":"other","uses":1}' >/dev/null
TOKEN=$(body .token) FP=$(body .ca_fingerprint)
check "a node of cluster other enrolls with the host name $HOST1 of cluster it" \
	enroll d "$FIXTURES/h200-ib" --hostname "$HOST1"
check "  unscoped, the host name is ambiguous: 409" test "$(api GET "/api/v1/nodes/$HOST1" "$ADMIN")" = 409
check "  scoped to it: it's node, not \"ambiguous\" (which would tell of the other)" bash -c "
	[ \"\$(curl -s -o '$T/h.json' -w '%{http_code}' --cacert '$CA' -H 'Authorization: Bearer ${TOK[viewer/it]}' \
		'$URL/api/v1/nodes/$HOST1')\" = 200 ] && jq -e --arg n '$NODE' '.id == \$n and .cluster == \"it\"' '$T/h.json' >/dev/null"
check "  scoped to other: other's node" bash -c "
	[ \"\$(curl -s -o '$T/h.json' -w '%{http_code}' --cacert '$CA' -H 'Authorization: Bearer ${TOK[viewer/other]}' \
		'$URL/api/v1/nodes/$HOST1')\" = 200 ] && jq -e '.cluster == \"other\"' '$T/h.json' >/dev/null"

# ---- bad input: the error body, nothing stored, still serving ------------------------------
ncamp() { "$RY" campaigns --json --state-dir "$T/ctl" | jq ".items | length"; }
ndep() { "$RY" deployments --json --state-dir "$T/ctl" | jq ".items | length"; }
before="$(ncamp)/$(ndep)"
bad_is() { # WHAT STATUS FIELD METHOD PATH TOKEN [BODY [CTYPE]]
	local what=$1 want=$2 field=$3; shift 3
	local got; got=$(api "$@")
	check "$what: $want" bash -c "[ '$got' = '$want' ] && jq -e '.error.code | type == \"string\"' '$T/body' >/dev/null"
	[ -z "$field" ] || check "  names the field $field" test "$(body .error.field)" = "$field"
}
bad_is "malformed JSON" 400 "" POST /api/v1/campaigns "$INT" '{"cluster": "it",'
bad_is "a wrong type" 400 cluster POST /api/v1/campaigns "$INT" '{"cluster": 5}'
bad_is "an unknown field" 400 colour POST /api/v1/campaigns "$INT" '{"cluster":"it","colour":"red"}'
bad_is "a missing field" 400 playbook POST /api/v1/campaigns "$INT" '{"cluster":"it"}'
bad_is "not an object" 400 "" POST /api/v1/campaigns "$INT" '[1,2]'
bad_is "a wrong content type" 415 "" POST /api/v1/campaigns "$INT" '{"cluster":"it"}' text/plain
head -c 1100000 /dev/zero | tr '\0' ' ' >"$T/big.json"
bad_is "an oversized body" 413 "" POST /api/v1/campaigns "$INT" "@$T/big.json"
bad_is "a playbook that does not validate" 400 "" POST /api/v1/campaigns "$INT" \
	'{"cluster":"it","playbook":"name: x\nversion: \"1\"\nsteps: []\nvalidation:\n  tests: 3\n"}'
check "  its FILE:LINE:COL problems in details" jqt '.error.details | length > 0 and
	all(.[]; .line > 0 and .column > 0)' "$T/body"
bad_is "an unknown route" 404 "" GET /api/v1/nope "$INT"
bad_is "a wrong method" 405 "" DELETE /api/v1/campaigns "$INT"
check "  with Allow" bash -c "curl -s -D - -o /dev/null --cacert '$CA' -X DELETE -H 'Authorization: Bearer $INT' \
	'$URL/api/v1/campaigns' | grep -qi '^allow: GET, HEAD, POST'"
bad_is "path traversal" 404 "" GET "/api/v1/signoffs/..%2F..%2Fetc/passwd" "$INT"
bad_is "no token" 401 "" GET /api/v1/nodes ""
bad_is "a garbage token" 401 "" GET /api/v1/nodes "rya1.zz"
bad_is "a wrong secret" 401 "" GET /api/v1/nodes "${INT%.*}.$(printf '0%.0s' {1..64})"
"$CTL" api-token create --name short --role viewer --ttl 1s --state-dir "$T/ctl" >"$T/short.out" 2>/dev/null
SHORT=$(awk '/^token:/ {print $2}' "$T/short.out")
expired() { [ "$(api GET /api/v1/nodes "$SHORT")" = 401 ] && [ "$(body .error.message)" = "the API token has expired" ]; }
check "an expired token: 401, says so" wait_for 10 expired
api DELETE "/api/v1/api-tokens/m-viewer-all" "$ADMIN" >/dev/null
bad_is "a revoked token" 401 "" GET /api/v1/nodes "${TOK[viewer/all]}"
check "  says so" test "$(body .error.message)" = "the API token was revoked"
bad_is "a role without the right" 403 "" POST /api/v1/api-tokens "$INT" '{}'
bad_is "a token's clusters not an array (was a 500)" 400 clusters POST /api/v1/api-tokens "$ADMIN" \
	'{"name":"x","role":"viewer","clusters":86400000}'
bad_is "another scope's object" 404 "" GET "/api/v1/campaigns/$CAMP" "${TOK[admin/other]}"
check "nothing was stored by any of it" test "$(ncamp)/$(ndep)" = "$before"
check "the server still serves" test "$(api GET /healthz "")" = 200

kill -TERM "$CTL_PID"
check "controller exits cleanly" wait_for 15 exited "$CTL_PID"
check "the socket and api.addr are gone" bash -c "[ ! -e '$T/ctl/api.sock' ] && [ ! -e '$T/ctl/api.addr' ]"
check_sanitizers
finish
