#!/usr/bin/env bash
# Integration: signed sign-off reports and revalidation over three agents on 127.0.0.1 (the
# tcp-baseline campaign). A campaign signed as it ends; the export verified by stock OpenSSL
# (the commands its HTML view shows, run as shown) and by `signoff verify`, offline; every
# tamper case refused with its exit code, and a report forged by a member node with its own
# certificate refused by both and by `railyard signoff verify` without railyard-controller;
# refusals for campaigns that cannot be signed; a node's facts changed (OFED version, MTU)
# making the sign-off stale for exactly that node; revalidation naming exactly that drift; a
# node joining, a node revoked and a deployment after the sign-off making it stale with the
# reason. Everything through `railyard --state-dir` (the serving controller's api.sock).
. "$(dirname "$0")/lib.sh"

PB=$T/tcp-baseline.yaml
loose_baseline "$PB" || die "loose_baseline"
# A rule on the bw test's CPU cost (docs/campaigns.md, "CPU cost"), wide open: the point is that
# it is judged on every measured pair (a figure missing from a row would fail it).
sed -i '/metric: pair-bw.gbps/a\    - {metric: pair-bw.cpu_thread_cores_client, op: "<=", value: 65536}' "$PB"
grep -q 'pair-bw.cpu_thread_cores_client' "$PB" || die "the CPU rule"
# A configuration playbook deployed before the baseline, on the nodes with OFED: the baseline
# certifies it, so a revalidation checks it again (and it fails once gpu-node-02's OFED moves).
cat >"$T/ofed-pin.yaml" <<'YAML'
name: ofed-pin
version: "1"
target:
  selector: [{fact: hostname, op: matches, value: "^gpu-node-0[12]$"}]
steps:
  - name: ofed below 25
    type: assert
    params:
      that:
        - {fact: ofed.version, op: "version<", value: "25", message: OFED moved to 25}
YAML

"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
start_controller --heartbeat-interval 300ms
new_token 4
cp -a "$FIXTURES/h200-roce" "$T/roce-root"
for n in a:$FIXTURES/h200-ib b:$T/roce-root c:$FIXTURES/h200-ib-2; do
	enroll "${n%%:*}" "${n#*:}" || die "enroll ${n%%:*}"
	start_agent "${n%%:*}" "${n#*:}"
done
check "three agents online" wait_for 30 count_is online 3

so() { "$RY" signoff "$@" --state-dir "$T/ctl"; }
# The sign-offs as a list (railyard's --json is the REST page: {items, next_cursor}).
so_list() { so list --json | jq .items; }
verify() { "$RY" signoff verify "$@"; }
rc_of() { "$@" >"$T/rc.out" 2>&1; echo $?; }
quiet() { "$@" >/dev/null 2>&1; }
val() { "$RY" validate --state-dir "$T/ctl" --cluster it --playbook "$PB" --quick "$@"; }

# ---- what cannot be signed --------------------------------------------------------------------
check "unknown campaign refused: not found" test "$(rc_of so create c-00000000)" = 4
check "  named" log_has "$T/rc.out" "no campaign c-00000000"
val --no-wait >"$T/running.out" 2>&1
RUNNING=$(awk '/^campaign c-/ {sub(":", "", $2); print $2; exit}' "$T/running.out")
check "a running campaign is refused" test "$(rc_of so create "$RUNNING")" = 1
check "  with the reason" log_has "$T/rc.out" "is running"
"$RY" campaign cancel "$RUNNING" --state-dir "$T/ctl" >/dev/null 2>&1
# railyard's campaign cancel asks and returns: wait until it has ended.
cancelled() { [ "$("$RY" campaign show "$RUNNING" --json --state-dir "$T/ctl" | jq -r .state)" = cancelled ]; }
wait_for 30 cancelled || fail "campaign $RUNNING did not end cancelled"
check "a cancelled campaign is refused" test "$(rc_of so create "$RUNNING")" = 1
check "  with the reason" log_has "$T/rc.out" "is cancelled"
check "nothing stored" test "$(so_list | jq length)" = 0

# ---- a deployment, then a campaign signed as it ends ------------------------------------------
"$RY" deploy --timeout 60s --state-dir "$T/ctl" --cluster it --playbook "$T/ofed-pin.yaml" --canary 0 \
	--pause 0s >"$T/deploy-pin.out" 2>&1
check "the OFED pin is deployed" test $? -eq 0
"$RY" deploy --timeout 60s --state-dir "$T/ctl" --cluster it --playbook "$PB" --canary 0 --pause 0s \
	>"$T/deploy.out" 2>&1
check "the playbook is deployed" test $? -eq 0
val --signoff --json >"$T/val.json" 2>"$T/val.err"
check "validate --signoff passes" test $? -eq 0
SO=$(jq -r '.signoff.id // empty' "$T/val.json")
CAMP=$(jq -r .id "$T/val.json")
check "the campaign was signed as it ended" test -n "$SO"
check "one sign-off, of that campaign, pass" jqt --arg c "$CAMP" \
	'length == 1 and .[0].campaign == $c and .[0].verdict == "pass" and .[0].kind == "signoff"' \
	<(so_list)
check "a second sign-off of the campaign is refused" test "$(rc_of so create "$CAMP")" = 1
check "  naming the first" log_has "$T/rc.out" "signed off already: $SO"

# ---- export and offline verification -------------------------------------------------------
so export "$SO" --dir "$T/out" >"$T/export.out" 2>&1
check "export writes exactly the four files" test "$(cd "$T/out" && ls | tr '\n' ' ')" = \
	"ca.pem signoff.html signoff.json signoff.p7s "
check "ca.pem is the controller's CA" cmp -s "$T/out/ca.pem" "$T/ctl/ca.crt"
shown_recipe "$T/out/signoff.html" >"$T/recipe.sh"
check "the HTML view shows the stock-OpenSSL commands with the signer check" bash -c \
	"grep -q -- '-signer signer.pem' '$T/recipe.sh' && grep -q 'extendedKeyUsage' '$T/recipe.sh'"
mkdir -p "$T/genuine" && cp "$T/out/signoff.json" "$T/out/signoff.p7s" "$T/out/ca.pem" "$T/genuine/"
check "  which, run as shown, verify it" run_recipe "$T/recipe.sh" "$T/genuine"
check "signoff verify: exit 0" test "$(rc_of verify "$T/out/signoff.json" "$T/out/signoff.p7s" \
	--ca "$T/out/ca.pem")" = 0
check "  prints the verdict" log_has "$T/rc.out" "verdict: pass"
check "  and the signer" log_has "$T/rc.out" "by Railyard sign-off"
R=$T/out/signoff.json
check "report: schema, cluster, kind, verdict" jqt '.schema == "railyard-signoff/2" and
	.cluster == "it" and .kind == "signoff" and .verdict == "pass" and .baseline == null' "$R"
check "report: a tcp baseline is a smoke / baseline report, not an acceptance sign-off" jqt '
	.acceptance == false and any(.acceptance_reasons[]; test("^transport tcp")) and
	(.headline | test("^pass; smoke / baseline report")) and (.summary[0] == .headline) and
	(.summary[1] | test("^not an acceptance sign-off: "))' "$R"
check "report: three nodes with their configuration snapshot" jqt '(.nodes | length) == 3 and
	all(.nodes[]; .snapshot.kernel != null and .agent_version != null and
	(.snapshot.topology_digest | startswith("sha256:")))' "$R"
check "report: the RoCE node's OFED and MTU" jqt '.nodes[] | select(.hostname == "gpu-node-02") |
	.snapshot.ofed.version == "24.10-1.1.4" and
	(.snapshot.hcas[] | select(.device == "mlx5_0") | .mtu) == 4096' "$R"
check "report: software versions from facts" jqt '.nodes[] | select(.hostname == "gpu-node-01") |
	.snapshot.software == {"nccl": "2.23.4", "ucx": "1.17.0", "openmpi": "4.1.7"}' "$R"
check "report: every result row of the campaign" test "$(jq '.results | length' "$R")" = \
	"$("$RY" campaign show "$CAMP" --results --json --state-dir "$T/ctl" | jq '.results | length')"
check "report: measured rows carry metrics" jqt '[.results[] | select(.state == "done" and
	.role == "measure")] | length > 0 and all(.[]; .metrics != null)' "$R"
check "report: the definition and thresholds" jqt '(.campaign.definition.tests | length) == 4 and
	(.evaluation.tests[0].rules | length) >= 1 and .campaign.playbook.name == "tcp-baseline"' "$R"
# The CPU cost of the bandwidth tests (docs/signoff.md, "CPU cost"): each measured bw row's
# metrics carry both sides' figures, the evaluation their medians, the report one cpu_cost entry
# per bw test whose figures are those medians and whose text says them. Sizes are not asserted
# (a busy machine): presence and consistency.
check "report: measured bw rows carry both sides' CPU cost" jqt '[.results[] |
	select(.state == "done" and .role == "measure" and .metrics.gbps != null)] | length > 0 and
	all(.[]; .metrics.cpu_thread_cores_client >= 0 and .metrics.cpu_thread_cores_server >= 0)' "$R"
check "report: cpu_cost, one entry per bw test, the evaluation's medians" jqt '
	([.evaluation.tests[] | select(.kind == "bw") | .name] | sort) as $bw |
	([.cpu_cost[].test] | sort) == $bw and ($bw | length) > 0 and
	all(.cpu_cost[]; . as $e | .transport == "tcp" and .pairs > 0 and
		($e.client.thread_cores >= 0) and ($e.server.thread_cores >= 0) and
		(.text | test("^tcp .*: [0-9.e+]+ Gb/s for .* cores on the client")))' "$R"
check "report: cpu_cost figures are the stats' medians" jqt '. as $r | all(.cpu_cost[]; . as $e |
	($r.evaluation.tests[] | select(.name == $e.test) | .stats) as $s |
	$e.gbps == $s.gbps.median and
	$e.client.thread_cores == $s.cpu_thread_cores_client.median and
	$e.server.thread_cores == $s.cpu_thread_cores_server.median)' "$R"
check "report: the CPU rule judged on every measured pair of its test" jqt '
	[.evaluation.tests[] | select(.name == "pair-bw") | .rules[] |
	 select(.metric == "pair-bw.cpu_thread_cores_client")] as $r |
	($r | length) == 1 and $r[0].evaluated > 0 and $r[0].failed == 0 and
	$r[0].evaluated == ([.results[] | select(.test == "pair-bw" and .state == "done" and
		.role == "measure" and .phase == "run")] | length)' "$R"
check "html: the CPU cost next to each bw test" grep -q '<p class="cpu">CPU cost: tcp ' \
	"$T/out/signoff.html"
so show "$SO" >"$T/show.out" 2>&1
check "signoff show: the CPU cost" grep -q '^cpu cost: tcp .* Gb/s for .* cores' \
	"$T/show.out"
"$RY" campaign show "$CAMP" --state-dir "$T/ctl" >"$T/cshow.out" 2>&1
check "campaign show: the CPU cost" grep -q '^cpu cost: tcp .* Gb/s for .* cores' "$T/cshow.out"
check "report: the deployments that applied the playbooks" jqt '(.deployments | length) == 2 and
	([.deployments[].playbook.name] == ["tcp-baseline", "ofed-pin"]) and
	(.deployments[0].nodes | length) == 3 and (.deployments[1].nodes | length) == 2 and
	all(.deployments[]; .check_mode == false) and
	.playbooks[0].sha256 == .deployments[0].playbook.sha256' "$R"
H=$T/out/signoff.html
check "html: the verdict, every node, the verification commands" bash -c \
	"grep -q 'pass' '$H' && grep -q gpu-node-01 '$H' && grep -q gpu-node-02 '$H' &&
	 grep -q gpu-node-04 '$H' && grep -q 'openssl cms -verify' '$H' &&
	 grep -q '<pre>railyard signoff verify signoff.json signoff.p7s --ca ca.pem</pre>' '$H'"
check "html: self-contained (no script, no remote reference)" bash -c \
	"! grep -qi '<script\|https\?://' '$H'"
check "html: how to verify before the raw JSON (last, collapsed); no \"?\" for a value" bash -c \
	"[ \$(grep -n 'id=\"verify\"' '$H' | cut -d: -f1) -lt \
	  \$(grep -n '<details class=\"raw\">' '$H' | head -1 | cut -d: -f1) ] && ! grep -q '?' '$H'"

# ---- tampering and bad input ----------------------------------------------------------------
sed '0,/"p50_us": [0-9]/s//&9/' "$R" >"$T/edited.json"
check "an edited number: openssl refuses" refused quiet openssl cms -verify -binary \
	-content "$T/edited.json" -in "$T/out/signoff.p7s" -inform PEM -CAfile "$T/out/ca.pem" \
	-purpose any -out /dev/null
check "an edited number: exit 1" test "$(rc_of verify "$T/edited.json" "$T/out/signoff.p7s" \
	--ca "$T/out/ca.pem")" = 1
check "  not verified, and why" log_has "$T/rc.out" "NOT VERIFIED: signature does not match"
head -c 300 "$T/out/signoff.p7s" >"$T/trunc.p7s"
check "a truncated signature: exit 1" test "$(rc_of verify "$R" "$T/trunc.p7s" --ca "$T/out/ca.pem")" = 1
head -c 2000 "$R" >"$T/trunc.json"
check "a truncated report: exit 1" test "$(rc_of verify "$T/trunc.json" "$T/out/signoff.p7s" \
	--ca "$T/out/ca.pem")" = 1
"$CTL" init --state-dir "$T/other" >/dev/null 2>&1
check "another CA: exit 1" test "$(rc_of verify "$R" "$T/out/signoff.p7s" --ca "$T/other/ca.crt")" = 1
check "  not issued by it" log_has "$T/rc.out" "not issued by this CA"
check "a CA file that is not a certificate: exit 1" test \
	"$(rc_of verify "$R" "$T/out/signoff.p7s" --ca "$R")" = 1
check "  says so" log_has "$T/rc.out" "not a PEM certificate"
check "a missing file: exit 2" test "$(rc_of verify "$R" "$T/nope.p7s" --ca "$T/out/ca.pem")" = 2
openssl cms -sign -binary -md sha256 -signer "$T/a/node.crt" -inkey "$T/a/node.key" \
	-in "$R" -outform PEM -out "$T/node.p7s" 2>/dev/null
check "signed by a node's certificate: exit 1" test "$(rc_of verify "$R" "$T/node.p7s" \
	--ca "$T/out/ca.pem")" = 1
check "  not a sign-off certificate" log_has "$T/rc.out" "not a sign-off certificate"

# ---- a member node forges a report with its own certificate (same CA) -------------------------
# The report rewritten (every result row "done", the summary "every test passed") and signed
# with node a's TLS client key from its state directory, as any enrolled node could.
mkdir -p "$T/forged" && cp "$T/out/ca.pem" "$T/forged/"
jq '.verdict = "pass" | .summary = ["every test passed"] | .results |= map(.state = "done")' \
	"$R" >"$T/forged/signoff.json"
openssl cms -sign -binary -md sha256 -signer "$T/a/node.crt" -inkey "$T/a/node.key" \
	-in "$T/forged/signoff.json" -outform PEM -out "$T/forged/signoff.p7s" 2>/dev/null
check "forgery: the signature check alone (what was shown before) accepts it" quiet \
	openssl cms -verify -binary -content "$T/forged/signoff.json" -in "$T/forged/signoff.p7s" \
	-inform PEM -CAfile "$T/forged/ca.pem" -purpose any -out /dev/null
check "forgery: the commands the HTML view shows refuse it" refused run_recipe "$T/recipe.sh" \
	"$T/forged"
check "  no verified line" refused grep -q 'sign-off verified' "$T/forged/recipe.out"
check "forgery: railyard signoff verify: exit 1" test "$(rc_of verify \
	"$T/forged/signoff.json" "$T/forged/signoff.p7s" --ca "$T/forged/ca.pem")" = 1
# railyard, alone in a directory, with a PATH and an environment without railyard-controller.
mkdir -p "$T/alone" && cp "$BUILD/client/railyard" "$T/alone/"
alone() { env -i PATH=/usr/bin:/bin HOME="$T/alone" "$T/alone/railyard" signoff verify "$@"; }
check "no railyard-controller in that PATH" refused env -i PATH=/usr/bin:/bin sh -c \
	'command -v railyard-controller'
check "railyard signoff verify without railyard-controller: the genuine report, exit 0" test \
	"$(rc_of alone "$T/genuine/signoff.json" "$T/genuine/signoff.p7s" --ca "$T/genuine/ca.pem")" = 0
check "  verified, its verdict" bash -c "grep -q '^verified: $SO of cluster it' '$T/rc.out' &&
	grep -q '^verdict: pass' '$T/rc.out'"
check "  the forgery, exit 1" test "$(rc_of alone "$T/forged/signoff.json" \
	"$T/forged/signoff.p7s" --ca "$T/forged/ca.pem")" = 1
check "  not a sign-off certificate" log_has "$T/rc.out" "NOT VERIFIED: .*not a sign-off certificate"
alone "$T/genuine/signoff.json" "$T/genuine/signoff.p7s" --ca "$T/genuine/ca.pem" --json |
	jq -S . >"$T/alone.json"
verify "$T/genuine/signoff.json" "$T/genuine/signoff.p7s" --ca "$T/genuine/ca.pem" --json |
	jq -S . >"$T/ctl-verify.json"
check "  --json: the same document as with the test's environment" bash -c \
	"jq -e '.verified == true and .status == 0' '$T/alone.json' >/dev/null &&
	 cmp -s '$T/alone.json' '$T/ctl-verify.json'"
jq '.schema = "railyard-signoff/9"' "$R" >"$T/s9.json"
openssl cms -sign -binary -md sha256 -signer "$T/ctl/signoff.crt" -inkey "$T/ctl/signoff.key" \
	-in "$T/s9.json" -outform PEM -out "$T/s9.p7s" 2>/dev/null
check "an unknown schema version, properly signed: exit 3" test "$(rc_of verify "$T/s9.json" \
	"$T/s9.p7s" --ca "$T/out/ca.pem")" = 3
check "  names the version" log_has "$T/rc.out" "unknown report schema railyard-signoff/9"

# ---- a playbook that asks for a sign-off --------------------------------------------------------
sed 's/^validation:$/validation:\n  signoff: true/' "$PB" >"$T/auto.yaml"
"$RY" validate --state-dir "$T/ctl" --cluster it --playbook "$T/auto.yaml" --quick --json \
	>"$T/auto.json" 2>/dev/null
signed_off() { so_list | jq -e --arg c "$1" 'any(.[]; .campaign == $c)' >/dev/null; }
check "validation.signoff: true signs without being asked" wait_for 20 signed_off \
	"$(jq -r .id "$T/auto.json")"

# ---- drift: a node's configuration changes ---------------------------------------------------
sostate() { "$RY" nodes --json --state-dir "$T/ctl" | jq -r --arg h "$1" '.items[] | select(.hostname == $h) | .signoff.state'; }
check "every node current against the sign-off" bash -c \
	"[ \"\$('$RY' nodes --json --state-dir '$T/ctl' | jq -c '[.items[].signoff.state] | unique')\" = '[\"current\"]' ]"
sed -i 's/24\.10-1\.1\.4/25.01-0.6.0/g' "$T/roce-root/usr/bin/ofed_info"
echo 1500 >"$T/roce-root/sys/class/net/enp22s0np0/mtu"
kill -HUP "$CTL_PID"
check "refreshed facts show the new OFED" wait_for 15 bash -c "[ \"\$('$RY' node show gpu-node-02 \
	--json --state-dir '$T/ctl' | jq -r '.facts.ofed.version')\" = 25.01-0.6.0 ]"
check "the changed node is stale" test "$(sostate gpu-node-02)" = stale
check "the others stay current" test "$(sostate gpu-node-01)/$(sostate gpu-node-04)" = current/current
"$RY" nodes --json --state-dir "$T/ctl" | jq .items >"$T/nodes.json"
check "  why: the OFED version and the MTU" jqt '.[] | select(.hostname == "gpu-node-02") |
	.signoff.reasons | any(contains("ofed.version 24.10-1.1.4 -> 25.01-0.6.0")) and
	any(contains("hca.mlx5_0.mtu 4096 -> 1024"))' "$T/nodes.json"
check "signoff show: stale, naming the node" jqt '.stale == true and
	(.reasons | length > 0) and all(.reasons[]; startswith("gpu-node-02: "))' <(so show "$SO" --json)

# ---- revalidation ------------------------------------------------------------------------------
# By default it checks what the baseline certified: ofed-pin (which gpu-node-02's new OFED
# fails) and tcp-baseline, in the order they were applied; the failed check makes it regressed.
"$RY" revalidate --state-dir "$T/ctl" --cluster it --baseline "$SO" --json >"$T/rv.json" 2>"$T/rv.err"
check "revalidate against the baseline: exit 1 (regressed)" test $? -eq 1
RV=$(jq -r '.id // empty' "$T/rv.json")
check "a revalidation report naming its baseline, verdict regressed" jqt --arg b "$SO" \
	'.kind == "revalidation" and .baseline == $b and .verdict == "regressed"' "$T/rv.json"
check "  ... each configuration check said as it starts (check mode) and ends" bash -c "
	grep -q 'configuration 1 of 2: ofed-pin 1, deployment .*, check mode (nothing changed)' '$T/rv.err' &&
	grep -q 'configuration 2 of 2: tcp-baseline 1.0, deployment .*, check mode' '$T/rv.err' &&
	grep -q 'configuration 2 of 2: succeeded' '$T/rv.err'"
# The deployments the checks made are the last two, newest first.
check "each configuration the baseline certified was checked, not changed" bash -c "
	'$RY' deployments --json --state-dir '$T/ctl' | jq -e '.items[0].check_mode == true and
		.items[1].check_mode == true and .items[1].playbook == \"ofed-pin\" and
		.items[0].playbook == \"tcp-baseline\" and .items[1].version == \"1\" and
		.items[0].version == \"1.0\"' >/dev/null"
REVAL=$(curl -s --unix-socket "$T/ctl/api.sock" http://localhost/api/v1/revalidations | jq -r '.items[0].id')
curl -s --unix-socket "$T/ctl/api.sock" "http://localhost/api/v1/revalidations/$REVAL" >"$T/reval.json"
check "the stored revalidation says regressed, with its checks" jqt --arg s "$RV" '.signoff == $s and
	.verdict == "regressed" and ([.checks[].playbook.name] == ["ofed-pin", "tcp-baseline"]) and
	all(.checks[]; .check_mode == true and (.deployment | startswith("d-")))' "$T/reval.json"
check "  its REST reply leads with the verdict, then the findings" jqt '(.summary[0] |
	startswith("regressed; smoke / baseline report")) and (.summary[2] |
	startswith("revalidation against"))' "$T/reval.json"
check "the sign-off list shows regressed" jqt --arg s "$RV" 'any(.[]; .id == $s and .verdict == "regressed")' \
	<(so_list)
so show "$RV" >"$T/rv-show.txt"
check "signoff show: regressed first, the campaign's own pass said, the summary after" awk '
	NR == 2 && /^verdict: regressed \(the campaign.s own: pass\), not an acceptance/ {v = NR}
	/^summary:$/ {s = NR} /^  revalidation against so-/ {r = NR} /^  sha256 / {h = NR}
	END {exit !(v && s > v && r > s && h > r)}' "$T/rv-show.txt"
# railyard's signoff show has no --report: the signed report is the exported signoff.json.
so export "$RV" --dir "$T/rv" >/dev/null 2>&1
jq '{report: .}' "$T/rv/signoff.json" >"$T/rv-report.json"
check "the failed check is a finding, naming the node and the message" jqt '.report.summary |
	any(startswith("check: ofed-pin 1 (d-") and contains("on gpu-node-02") and contains("OFED moved to 25"))' \
	"$T/rv-report.json"
check "the checks in the signed report" jqt '.report.comparison.checks | length == 2 and
	(.[0].playbook.name == "ofed-pin" and .[0].failed[0].host == "gpu-node-02") and
	(.[1].playbook.name == "tcp-baseline" and .[1].state == "succeeded")' "$T/rv-report.json"
check "the campaign's own verdict stays in evaluation" jqt '.report.evaluation.result == "pass"' "$T/rv-report.json"
check "drift lists exactly that node and those fields" jqt '.report.comparison.drift |
	([.[].field] | sort) == ["hca.mlx5_0.mtu", "ofed.package", "ofed.version"] and
	all(.[]; .nodes == ["gpu-node-02"])' "$T/rv-report.json"
check "drift: from and to" jqt '.report.comparison.drift[] | select(.field == "ofed.version") |
	.from == "24.10-1.1.4" and .to == "25.01-0.6.0"' "$T/rv-report.json"
check "per-metric deltas against the baseline, tolerances recorded" jqt '.report.comparison |
	(.metrics | length) > 0 and all(.metrics[]; .delta_pct != null and .baseline > 0) and
	.tolerance == {"bw_pct": 5, "lat_pct": 10, "regressions": "inform"}' "$T/rv-report.json"
check "the summary leads with the verdict, then the revalidation" jqt '(.report.summary[0] ==
	.report.headline) and (.report.summary[2] | startswith("revalidation against '"$SO"'"))' \
	"$T/rv-report.json"
check "the baseline's id and hash in the signed report" jqt --arg s "$(so show "$SO" --json |
	jq -r .sha256)" '.report.baseline.sha256 == $s' "$T/rv-report.json"
check "the revalidation verifies offline" test "$(rc_of verify "$T/rv/signoff.json" \
	"$T/rv/signoff.p7s" --ca "$T/rv/ca.pem")" = 0
check "its page shows the drift" grep -q "25.01-0.6.0" "$T/rv/signoff.html"
check "its page: regressed, the regressions and checks before the configuration" bash -c "
	grep -q 'class=\"verdict regressed\"' '$T/rv/signoff.html' &&
	[ \$(grep -n 'id=\"regressions\"' '$T/rv/signoff.html' | cut -d: -f1) -lt \
	  \$(grep -n 'id=\"configuration\"' '$T/rv/signoff.html' | cut -d: -f1) ]"
check "the old sign-off is still stale" jqt '.stale == true' <(so show "$SO" --json)
check "the new one is current" jqt '.stale == false' <(so show "$RV" --json)

# The overview reads the last real deployment and the last check apart.
dep_of() { curl -s --unix-socket "$T/ctl/api.sock" \
	"http://localhost/api/v1/deployments?cluster=it&limit=1&check_mode=$1" | jq -r '.items[0] | "\(.playbook) \(.check_mode)"'; }
check "the last real deployment is not replaced by the checks" test "$(dep_of false)" = "tcp-baseline false"
check "  the last check, apart" test "$(dep_of true)" = "tcp-baseline true"
check "  a bad check_mode filter: 400" test "$(curl -s -o /dev/null -w '%{http_code}' \
	--unix-socket "$T/ctl/api.sock" 'http://localhost/api/v1/deployments?check_mode=maybe')" = 400

# --playbook overrides: that playbook alone is checked; regressions inform (the playbook's
# tolerance), so the verdict is the campaign's.
"$RY" revalidate --state-dir "$T/ctl" --cluster it --baseline "$SO" --playbook "$PB" --json \
	>"$T/rv2.json" 2>"$T/rv2.err"
check "revalidate --playbook: exit 0" test $? -eq 0
RV2=$(curl -s --unix-socket "$T/ctl/api.sock" http://localhost/api/v1/revalidations | jq -r '.items[0].id')
check "  one check, of that playbook" jqt '([.checks[].playbook.name] == ["tcp-baseline"]) and
	.checks[0].check_mode == true' <(curl -s --unix-socket "$T/ctl/api.sock" \
	"http://localhost/api/v1/revalidations/$RV2")
check "  the campaign's verdict" jqt '.verdict == "pass"' "$T/rv2.json"

# ---- a node joins, a node is revoked, a deployment after the sign-off ---------------------
enroll d "$FIXTURES/h200-degraded" || die "enroll d"
check "a node that joined makes it stale" jqt '.reasons | any(. == "gpu-node-03: joined after the sign-off")' \
	<(so show "$RV" --json)
"$RY" node revoke gpu-node-04 --state-dir "$T/ctl" >/dev/null 2>&1
check "a revoked node makes it stale" jqt '.reasons | any(. == "gpu-node-04: revoked after the sign-off")' \
	<(so show "$RV" --json)
"$RY" deploy --timeout 60s --state-dir "$T/ctl" --cluster it --playbook "$PB" --canary 0 --pause 0s \
	>"$T/deploy2.out" 2>&1
check "a deployment after it makes it stale" jqt '.reasons | any(test("^deployment d-[0-9a-f]+ applied tcp-baseline 1.0 after the sign-off$"))' \
	<(so show "$RV" --json)

kill -TERM "$CTL_PID"
check "controller exits cleanly" wait_for 15 exited "$CTL_PID"
check_sanitizers
finish
