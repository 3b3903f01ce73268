#!/usr/bin/env bash
# Integration: the web portal. First over curl, no browser: the controller serves index.html and
# its files from the binary with their content types, caching headers, nosniff and the CSP;
# 304 on If-None-Match; nothing but the table's files (traversal, unknown names, other methods);
# the portal's routes are not API routes; GET /api/v1/whoami per role. Then in headless Chromium
# (playwright-core from npm, pinned, installed once into BUILD/npm-portal, driving Debian's
# chromium: no browser is ever downloaded) against this controller with three fixture agents,
# one of which reports HTML as its host name and OS: test_portal.mjs logs in as a viewer, an
# integrator and an operator and checks what docs/portal.md promises (its header lists it);
# here, the sign-off files the browser downloaded are verified with stock openssl. Screenshots
# of every page are kept in BUILD/portal-artifacts (RAILYARD_PORTAL_ARTIFACTS: elsewhere). Exit 77
# (skipped) when chromium is missing or the npm registry cannot be reached, once the checks that
# ran passed. RAILYARD_BROWSER_ROOT=DIR: node and chromium are those of the system root DIR, run
# there with chroot (tests/package/test_portal_debian.sh: a fresh Debian 12's own; it mounts /tmp,
# the sources and the build into DIR at their paths); npm stays this machine's.
. "$(dirname "$0")/lib.sh"

# The newest playwright-core that runs on Debian 12's Node.js 18 (engines "node": ">=18"; 1.62.0
# and later refuse it: "Playwright requires Node.js 20 or higher"). bench/portal-render.sh reads
# this line; tests/package/test_portal_debian.sh runs this test with Debian 12's node and chromium.
PLAYWRIGHT_VERSION=1.61.1
NPM_DIR=$(cd "$BUILD" && pwd)/npm-portal
CHROMIUM=${RAILYARD_CHROMIUM:-/usr/bin/chromium}
ART=${RAILYARD_PORTAL_ARTIFACTS:-$(cd "$BUILD" && pwd)/portal-artifacts}
BROOT=${RAILYARD_BROWSER_ROOT:-}
BRUN=() # what runs node and chromium: here, or chrooted into BROOT with a clean environment
[ -z "$BROOT" ] || BRUN=(chroot "$BROOT" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root LANG=C.UTF-8)
XSS_OS='<img src=x onerror=alert(1)>'
XSS_HOST='<img/src=x/onerror=alert(1)>'

"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
start_controller --heartbeat-interval 300ms
check "the API's URL is written" wait_for 10 test -s "$T/ctl/api.addr"
URL=$(cat "$T/ctl/api.addr")
CA=$T/ctl/ca.crt
ADMIN=$("$CTL" api-token create --name first-admin --role admin --state-dir "$T/ctl" 2>/dev/null |
	awk '/^token:/ {print $2}')
[ -n "$ADMIN" ] || die "the first admin token"

# hdr FILE NAME: a header's value from a curl -D dump
hdr() { awk -v n="$(echo "$2" | tr A-Z a-z)" -F': ' 'tolower($1) == n {sub(/\r$/, "", $2); print $2}' "$1"; }
get() { # get PATH [curl args]: the status; headers in $T/hdr, body in $T/resp
	local p=$1; shift
	curl -s --path-as-is --cacert "$CA" -D "$T/hdr" -o "$T/resp" -w '%{http_code}' "$@" "$URL$p"
}

# ---- static serving, no browser ------------------------------------------------------------
check "GET /: 200" test "$(get /)" = 200
check "  text/html; charset=utf-8" test "$(hdr "$T/hdr" Content-Type)" = "text/html; charset=utf-8"
check "  Cache-Control: no-cache, with an ETag" bash -c "[ '$(hdr "$T/hdr" Cache-Control)' = no-cache ] &&
	[ -n '$(hdr "$T/hdr" ETag)' ]"
check "  X-Content-Type-Options: nosniff" test "$(hdr "$T/hdr" X-Content-Type-Options)" = nosniff
CSP=$(hdr "$T/hdr" Content-Security-Policy)
check "  a strict CSP: self only, no inline, no framing, no base, Trusted Types" bash -c "
	for d in \"default-src 'self'\" \"script-src 'self'\" \"style-src 'self'\" \"connect-src 'self'\" \
		\"object-src 'none'\" \"base-uri 'none'\" \"frame-ancestors 'none'\" \"require-trusted-types-for 'script'\"; do
		grep -qF \"\$d\" <<<\"$CSP\" || exit 1
	done
	! grep -q 'unsafe' <<<\"$CSP\""
check "  no inline script or style in the page" bash -c "! grep -Eiq '<script>|<script [^>]*>[^<]|<style|style=| on[a-z]+=' '$T/resp'"
ETAG=$(hdr "$T/hdr" ETag)
check "  If-None-Match: 304" test "$(get / -H "If-None-Match: $ETAG")" = 304
mapfile -t ASSETS < <(grep -o '\(src\|href\)="/portal/[^"]*"' "$T/resp" | sed 's/^[a-z]*="//; s/"$//')
check "the page names its files under /portal/VERSION/" test "${#ASSETS[@]}" -ge 3
for a in "${ASSETS[@]}"; do
	case "$a" in *.js) want="text/javascript; charset=utf-8" ;; *.css) want="text/css; charset=utf-8" ;;
	*.svg) want="image/svg+xml" ;; *) want=? ;; esac
	check "GET $a: 200, $want, cached for good" bash -c "[ '$(get "$a")' = 200 ] &&
		[ '$(hdr "$T/hdr" Content-Type)' = '$want' ] &&
		[ '$(hdr "$T/hdr" Cache-Control)' = 'public, max-age=31536000, immutable' ] &&
		[ '$(hdr "$T/hdr" X-Content-Type-Options)' = nosniff ] && [ -s '$T/resp' ]"
done
JS=$(printf '%s\n' "${ASSETS[@]}" | grep '/js/app\.js$')
BASE=${JS%/js/app.js}
check "the modules the entry point imports are served" bash -c "
	for m in \$(curl -s --cacert '$CA' '$URL$JS' | grep -o \"from '\\./[a-z/]*\\.js'\" | sed \"s/from '\\.\\///; s/'//\"); do
		[ \"\$(curl -s -o /dev/null -w '%{http_code}' --cacert '$CA' '$URL$BASE/js/'\$m)\" = 200 ] || exit 1
	done"
check "HEAD / answers without a body" bash -c "[ \"\$(curl -s -I --cacert '$CA' -o '$T/hh' -w '%{http_code}' '$URL/')\" = 200 ] &&
	grep -qi '^content-security-policy:' '$T/hh'"
for p in "$BASE/js/nope.js" "$BASE/../../controller.db" "$BASE/%2e%2e/%2e%2e/ca.key" "$BASE/js%2fapp.js" \
	/portal/0000000000000000/js/app.js /index.html /portal "$BASE" /favicon.ico; do
	check "GET $p: 404" test "$(get "$p")" = 404
done
check "POST /: 405, Allow: GET, HEAD" bash -c "[ '$(get / -X POST -H 'Content-Type: application/json' -d '{}')' = 405 ] &&
	[ '$(hdr "$T/hdr" Allow)' = 'GET, HEAD' ]"
check "the portal's routes are not API routes (api routes --json)" bash -c "
	'$CTL' api routes --json | jq -e 'all(.[]; .path != \"/\" and (.path | startswith(\"/portal\") | not))' >/dev/null"

# API tokens through the API, as a customer's admin would make them.
api() { # api METHOD PATH TOKEN [BODY]: the status; the body in $T/body
	local args=(-s -o "$T/body" -w '%{http_code}' --cacert "$CA" -X "$1" -H "Authorization: Bearer $3")
	[ $# -ge 4 ] && args+=(-H "Content-Type: application/json" --data-binary "$4")
	curl "${args[@]}" "$URL$2"
}
mktoken() { # NAME ROLE CLUSTERS-JSON
	api POST /api/v1/api-tokens "$ADMIN" "{\"name\":\"$1\",\"role\":\"$2\",\"clusters\":$3}" >/dev/null
	jq -r .token "$T/body"
}
VIEWER=$(mktoken viewer viewer '["it"]')
INTEG=$(mktoken integrator integrator '["it"]')
OPER=$(mktoken operator operator '["it"]')
check "whoami as a scoped viewer: role, read only, cluster it" bash -c "[ '$(api GET /api/v1/whoami "$VIEWER")' = 200 ] &&
	jq -e '.role == \"viewer\" and .permissions == [\"read\"] and .clusters == [\"it\"] and
		(.actor | startswith(\"api:viewer (\"))' '$T/body' >/dev/null"
check "whoami as an integrator: read, operate, configure" bash -c "[ '$(api GET /api/v1/whoami "$INTEG")' = 200 ] &&
	jq -e '.permissions == [\"read\", \"operate\", \"configure\"]' '$T/body' >/dev/null"
check "whoami as the unscoped admin: every permission, every cluster" bash -c "[ '$(api GET /api/v1/whoami "$ADMIN")' = 200 ] &&
	jq -e '.permissions == [\"read\", \"operate\", \"configure\", \"admin\"] and .clusters == null' '$T/body' >/dev/null"
check "whoami without a token: 401" test "$(api GET /api/v1/whoami "")" = 401

# ---- the browser: can it run here? --------------------------------------------------------------
SKIPPED=
PW=$NPM_DIR/node_modules/playwright-core
have_pw() { [ "$("${BRUN[@]}" node -p "require('$PW/package.json').version" 2>/dev/null)" = "$PLAYWRIGHT_VERSION" ]; }
if [ ! -x "$BROOT$CHROMIUM" ]; then
	SKIPPED="no Chromium at $BROOT$CHROMIUM (Debian: apt-get install chromium; deploy/install-deps.sh installs it)"
elif ! "${BRUN[@]}" node --version >/dev/null 2>&1; then
	SKIPPED="no node${BROOT:+ in $BROOT} (deploy/install-deps.sh installs npm, which brings it)"
elif ! have_pw; then
	if ! command -v npm >/dev/null; then
		SKIPPED="no npm (deploy/install-deps.sh installs it)"
	elif ! timeout 60 npm ping --fetch-retries=0 --fetch-timeout=20000 >"$T/npm-ping.log" 2>&1; then
		why=$(grep -m1 -o 'reason: .*' "$T/npm-ping.log" || sed -n 's/^npm error code //p' "$T/npm-ping.log" | head -1)
		SKIPPED="the npm registry $(npm config get registry 2>/dev/null) cannot be reached (${why:-no answer in 60 s})"
	else
		mkdir -p "$NPM_DIR"
		# playwright-core downloads no browser on install; the variable says so to any other.
		PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 timeout 220 npm install --prefix "$NPM_DIR" --no-audit \
			--no-fund "playwright-core@$PLAYWRIGHT_VERSION" >"$T/npm-install.log" 2>&1
		if ! have_pw; then
			if ! timeout 60 npm ping --fetch-retries=0 --fetch-timeout=20000 >/dev/null 2>&1; then
				SKIPPED="the npm registry went away while installing playwright-core"
			else
				tail -20 "$T/npm-install.log"
				fail "npm install playwright-core@$PLAYWRIGHT_VERSION into $NPM_DIR"
			fi
		fi
	fi
fi
if [ -n "$SKIPPED" ] || ! have_pw; then
	if [ "$FAILS" -eq 0 ] && [ -n "$SKIPPED" ]; then
		echo "$PASSES passed, browser tests not run"
		echo "SKIP: portal browser tests: $SKIPPED"
		exit 77
	fi
	finish
fi

# ---- the fleet: three agents, one reporting HTML as its host name and OS, one degraded ---------
# gpu-node-03 (h200-degraded): mlx5_3 DOWN, mlx5_5 at 200 of 400 Gb/s, mlx5_6 at PCIe x8 of x16.
check "an enrollment token for cluster it: 201" test "$(api POST /api/v1/enrollment-tokens "$INTEG" \
	'{"cluster":"it","uses":4,"ttl_ms":600000}')" = 201
TOKEN=$(jq -r .token "$T/body") FP=$(jq -r .ca_fingerprint "$T/body")
# gpu-node-01 runs on a copy with a kernel log (dev/kmsg), to which the browser test writes an
# Xid: its page must show the event live, and acknowledging it (operator) take it back.
ROOT_A=$T/root-a
cp -a "$FIXTURES/h200-ib" "$ROOT_A"
mkdir -p "$ROOT_A/dev" "$ROOT_A/proc/sys/kernel/random"
: >"$ROOT_A/dev/kmsg"
echo "6b3a1f0e-2c4d-4e5f-8a9b-0c1d2e3f4a5b" >"$ROOT_A/proc/sys/kernel/random/boot_id"
enroll a "$ROOT_A" || die "enroll a"
start_agent a "$ROOT_A" --health-interval 1s
enroll b "$FIXTURES/h200-degraded" || die "enroll b"
start_agent b "$FIXTURES/h200-degraded"
XR=$T/xss-root
cp -a "$FIXTURES/h200-ib-2" "$XR"
printf '%s\n' "$XSS_HOST" >"$XR/proc/sys/kernel/hostname"
sed -i "s|^NAME=.*|NAME=\"$XSS_OS\"|; s|^PRETTY_NAME=.*|PRETTY_NAME=\"$XSS_OS\"|" "$XR/etc/os-release"
check "the node's facts carry the HTML as its host name and OS" bash -c "
	'$AGENT' facts --json --sysroot '$XR' | jq -e --arg h '$XSS_HOST' --arg o '$XSS_OS' \
		'.hostname == \$h and .os.pretty_name == \$o' >/dev/null"
# The controller takes RFC 1123 host names only: such a name never becomes a node's name. The
# node enrolls under another and reports the HTML in its facts, which the portal shows.
check "enrolling under that host name is refused by the controller" bash -c "
	! '$AGENT' enroll --controller '$ADDR' --token '$TOKEN' --ca-fingerprint '$FP' --state-dir '$T/xr0' \
		--sysroot '$XR' >'$T/xr0.log' 2>&1 && grep -qi 'host' '$T/xr0.log'"
enroll x "$XR" --hostname xss-node || die "enroll x (see $T/x.enroll.log)"
start_agent x "$XR"
online() { [ "$(api GET "/api/v1/nodes?cluster=it&state=online" "$VIEWER")" = 200 ] &&
	[ "$(jq '.items | length' "$T/body")" = 3 ]; }
check "three nodes online" wait_for 30 online

# A deployment that fails on the degraded node, before the campaign: hca-up configures nothing
# and asserts every HCA port ACTIVE (as tests/integration/test_campaign.sh's). Applied, not
# check mode: a node's health takes its cluster's newest applied deployment.
HCA_UP='name: hca-up
version: "1"
steps:
  - {name: hca ports active, type: assert, params: {that: [{fact: "rdma.devices[*].ports[*].state", op: "==", value: ACTIVE, message: every HCA port must be ACTIVE}]}}
  - {name: facts readable, type: assert, params: {that: [{fact: kernel.release, op: "!=", value: ""}]}}
  - {name: still readable, type: assert, params: {that: [{fact: kernel.release, op: "!=", value: ""}]}}'
check "hca-up uploaded as a playbook of cluster it (the deployment form offers it): 201" test "$(api POST \
	/api/v1/playbooks "$INTEG" "$(jq -n --arg pb "$HCA_UP" '{cluster: "it", playbook: $pb}')")" = 201
check "a deployment of hca-up: 201" test "$(api POST /api/v1/deployments "$INTEG" "$(jq -n --arg pb "$HCA_UP" \
	'{cluster: "it", playbook: $pb, check: false, batch: "100%", canary: 0, pause_ms: 0, max_fail: "1"}')")" = 201
HCA_DEP=$(jq -r .id "$T/body")
dep_ended() { api GET "/api/v1/deployments/$HCA_DEP" "$VIEWER" >/dev/null &&
	jq -e '.state != "pending" and .state != "running"' "$T/body" >/dev/null; }
check "  it ends" wait_for 60 dep_ended
check "  failing on gpu-node-03 only, at its first step" jqt '[.nodes[] | select(.state != "succeeded") |
	.hostname] == ["gpu-node-03"] and (.nodes[] | select(.hostname == "gpu-node-03") |
	[.steps[] | .status] == ["failed", "skipped", "skipped"])' "$T/body"
check "GET /api/v1/nodes/gpu-node-03: 200" test "$(api GET /api/v1/nodes/gpu-node-03 "$VIEWER")" = 200
check "  its health: failing, naming the failed step and the DOWN port" jqt --arg d "$HCA_DEP" '.health.state == "failing" and
	(.health.reasons | any(startswith("deployment \($d) (hca-up 1) failed at step \"hca ports active\"")) and
	any(. == "mlx5_3 port is DOWN"))' "$T/body"
check "  its slow rail and narrow PCIe link as degradations" jqt '.health.problems as $p |
	any($p[]; .source == "rate" and .device == "mlx5_5" and .severity == "degraded") and
	any($p[]; .source == "pcie" and .device == "mlx5_6" and .severity == "degraded")' "$T/body"

# A campaign whose latency rule fails both pairs of one node: with three nodes each is the client
# of one pair (the circle schedule), so the robust `min` (the second lowest reporting node's own
# minimum: docs/campaigns.md, "Verdict") is the middle pair, and 0.9999 x that passes only the
# fastest pair; the other two share a node, which fails with 2 of 2 peers (no retest).
PB=$T/tight.yaml
loose_baseline "$PB" || die "loose_baseline"
sed -i 's/- {metric: pair-lat.p50_us, relative: median, op: "<=", value: 1000}/- {metric: pair-lat.p50_us, relative: min, op: "<=", value: 0.9999}/' "$PB"
grep -q 'value: 0.9999}' "$PB" || die "the tight rule"
check "a campaign with a tight latency rule, signed when it ends: 201" test "$(api POST /api/v1/campaigns "$INTEG" \
	"$(jq -n --rawfile pb "$PB" '{cluster: "it", playbook: $pb, quick: true, signoff: true, tests: "pair-lat,pair-bw"}')")" = 201
CAMP=$(jq -r .id "$T/body")
camp_ended() { api GET "/api/v1/campaigns/$CAMP" "$VIEWER" >/dev/null && [ "$(jq -r .state "$T/body")" != running ]; }
check "  it ends" wait_for 180 camp_ended
cp "$T/body" "$T/campaign.json"
check "  failed, on pair-lat" jqt '.state == "failed" and .result == "fail" and
	(.verdict.tests[0].failures | length) >= 1' "$T/campaign.json"
# Three nodes: any two pairs share a node, so the node both failing pairs share is named.
check "  naming a failing node with its reasons" jqt '[.verdict.nodes[] | select(.result == "fail" and
	(.reasons | length) >= 1)] | length == 1' "$T/campaign.json"
signed() { api GET "/api/v1/signoffs?cluster=it" "$VIEWER" >/dev/null && [ "$(jq '.items | length' "$T/body")" -ge 1 ]; }
check "  and was signed" wait_for 30 signed
SO=$(jq -r '.items[0].id' "$T/body")

# The cluster bound to a stand-in Slurm (docs/operations.md, "Maintenance with Slurm"): its sinfo
# says gpu-node-03 is drained by railyard, with markup in the reason (shown as text, never run);
# its scontrol accepts the drains the failed deployment and campaign wrote.
mkdir -p "$T/fakeslurm"
WLM_REASON='railyard: deployment d-1: gpu-node-03 failed: <img src=x onerror=alert(1)>'
printf '#!/bin/sh\nprintf "%%s\\n" "gpu-node-03|drained|%s" "gpu-node-01|idle|none"\n' "$WLM_REASON" >"$T/fakeslurm/sinfo"
printf '#!/bin/sh\nexit 0\n' >"$T/fakeslurm/scontrol"
chmod +x "$T/fakeslurm/sinfo" "$T/fakeslurm/scontrol"
check "the cluster is bound to the stand-in Slurm: 200" test "$(api PUT /api/v1/clusters/it/wlm "$INTEG" \
	"{\"kind\": \"slurm\", \"slurm\": {\"bin_dir\": \"$T/fakeslurm\"}}")" = 200
wlm_seen() { api GET /api/v1/nodes/gpu-node-03 "$VIEWER" >/dev/null && jq -e '.wlm.ours == true' "$T/body" >/dev/null; }
check "  gpu-node-03's document says drained by railyard" wait_for 20 wlm_seen
# A maintenance, cancelled at once: its page lists its nodes (the browser reads it).
check "a maintenance: 201" test "$(api POST /api/v1/maintenances "$INTEG" "$(jq -n \
	--rawfile pb "$SRC/tests/integration/portal-check.yaml" \
	'{cluster: "it", playbook: $pb, batch: "1", min_in_service: 0}')")" = 201
MT=$(jq -r .id "$T/body")
api POST "/api/v1/maintenances/$MT/cancel" "$INTEG" >/dev/null
mt_over() { api GET "/api/v1/maintenances/$MT" "$VIEWER" >/dev/null && [ "$(jq -r .state "$T/body")" = cancelled ]; }
check "  cancelled" wait_for 30 mt_over

# What the browser must find: the pairs the verdict fails (sorted node ids; a transient, retested
# and passed, is no failure), the failing nodes with their reasons, the sign-off.
jq -n --arg url "$URL" --arg viewer "$VIEWER" --arg integ "$INTEG" --arg oper "$OPER" --arg so "$SO" \
	--arg camp "$CAMP" --arg hca_dep "$HCA_DEP" --arg xss_os "$XSS_OS" --arg xss_host "$XSS_HOST" --arg art "$ART" \
	--arg dl "$T/downloads" --arg chromium "$CHROMIUM" --arg pw "$PW" --rawfile pb "$SRC/tests/integration/portal-check.yaml" --arg wlm_reason "$WLM_REASON" --arg mt "$MT" --arg kmsg "$ROOT_A/dev/kmsg" \
	--slurpfile c "$T/campaign.json" '{url: $url, tokens: {viewer: $viewer, integrator: $integ, operator: $oper},
	signoff: $so, campaign: $camp, xss_os: $xss_os, xss_host: $xss_host, artifacts: $art, downloads: $dl,
	chromium: $chromium, playwright: $pw, deploy_playbook: $pb, nodes: ($c[0].nodes | length),
	failing: ([$c[0].verdict.tests[0].failures[] | select(.attributed != "transient") | [.a, .b] | sort | join("|")] | unique),
	failing_rows: ($c[0].verdict.tests[0] | ([.failures[] | select(.attributed != "transient")] | length) +
		((.failures_total // 0) - (.failures | length))),
	failing_nodes: [$c[0].verdict.nodes[] | select(.result == "fail") | {id, hostname, reasons}],
	bad_node: "gpu-node-03", hca_dep: $hca_dep, kmsg: $kmsg, kmsg_node: "gpu-node-01", wlm_reason: $wlm_reason, maintenance: $mt,
	verdict: $c[0].result}' >"$T/portal.json"
rm -rf "$ART" && mkdir -p "$ART" "$T/downloads"
echo "browser: node $("${BRUN[@]}" node --version), $("${BRUN[@]}" "$CHROMIUM" --version 2>/dev/null | head -1)," \
	"playwright-core $PLAYWRIGHT_VERSION${BROOT:+ (node and chromium of $BROOT)}"
timeout 480 "${BRUN[@]}" node "$SRC/tests/integration/test_portal.mjs" "$T/portal.json" >"$T/browser.log" 2>&1
rc=$?
cat "$T/browser.log"
PASSES=$((PASSES + $(grep -c '^ok ' "$T/browser.log")))
FAILS=$((FAILS + $(grep -c '^FAIL ' "$T/browser.log")))
check "the browser tests ran to their end" test "$rc" -eq 0

# ---- what the browser downloaded verifies -----------------------------------------------------
DL=$T/downloads
check "the downloaded report verifies with the page's OpenSSL commands, run as shown" bash -c \
	"cd '$DL' && sh verify-openssl.sh >'$T/recipe.out' 2>&1 && grep -q '^sign-off verified' '$T/recipe.out'"
check "  which check the signer" grep -q -- '-signer signer.pem' "$DL/verify-openssl.sh"
# A copy rewritten by a node and signed with its own certificate: refused by the same commands.
mkdir -p "$T/forged" && cp "$DL/ca.pem" "$DL/verify-openssl.sh" "$T/forged/"
jq '.summary = ["every test passed"]' "$DL/$SO-signoff.json" >"$T/forged/$SO-signoff.json"
openssl cms -sign -binary -md sha256 -signer "$T/a/node.crt" -inkey "$T/a/node.key" \
	-in "$T/forged/$SO-signoff.json" -outform PEM -out "$T/forged/$SO-signoff.p7s" 2>/dev/null
check "  a copy signed by a node's certificate: the signature alone passes" openssl cms -verify \
	-binary -content "$T/forged/$SO-signoff.json" -in "$T/forged/$SO-signoff.p7s" -inform PEM \
	-CAfile "$T/forged/ca.pem" -purpose any -out /dev/null
check "  the page's commands refuse it" bash -c "cd '$T/forged' && ! sh verify-openssl.sh >'$T/recipe.out' 2>&1 &&
	! grep -q '^sign-off verified' '$T/recipe.out'"
check "  and with signoff verify" "$RY" signoff verify "$DL/$SO-signoff.json" "$DL/$SO-signoff.p7s" --ca "$DL/ca.pem"
check "  the CA is the controller's" cmp -s "$DL/ca.pem" "$CA"
check "  the HTML report is the controller's" bash -c "[ '$(api GET "/api/v1/signoffs/$SO/signoff.html" "$VIEWER")' = 200 ] &&
	cmp -s '$T/body' '$DL/$SO-signoff.html'"
check "screenshots of every page are kept" bash -c "[ \$(ls '$ART'/*.png 2>/dev/null | wc -l) -ge 10 ]"
echo "screenshots: $ART"

kill -TERM "$CTL_PID"
check "controller exits cleanly" wait_for 15 exited "$CTL_PID"
check_sanitizers
finish
