#!/usr/bin/env bash
# CTest rdma_vm_campaign_verbs: validation campaigns over verbs on a real kernel RDMA stack. A
# controller on the host, an agent in each of 4 soft-RoCE guests (cluster mode), and `railyard-
# controller validate --signoff` with the playbook playbooks/softroce-campaign.yaml (deployed
# first: the configuration it certifies, with the Open MPI and UCX settings of rxe): pairs latency
# and bandwidth per rail, a random ring, incast and an all-reduce over the 4 guests launched
# through the agents (and once over TCP, the baseline). Healthy, it ends in an acceptance sign-off that passes; then a deployment slows one
# guest (a netem delay on its wire NIC, by a command step), and the same campaign must fail
# naming the slow guest, and only it, by the relative latency rule, in an acceptance sign-off,
# with every result row stored once, port counter deltas from rxe's hw_counters in the
# summaries, over verbs. The collective's own playbook (playbooks/softroce-collective.yaml,
# certifying the same deployment) passes the healthy guests and, with the slow guest's delay
# raised to 600 ms, fails naming it (its pairwise probe, confirmed by a job without the
# launcher). Then the nodes are revoked, which ends the agents (the guests' pass).
#
# Addresses: the controller sends a benchmark client to the server's address as it sees the
# server agent's session. Through qemu's user-mode NIC every guest would be 127.0.0.1, so the
# host side runs in a network namespace of its own (unshare -rn) where 10.99.0.(10+i) is a local
# address whose route prefers the source 192.168.77.(10+i): guest i dials the controller at
# 10.99.0.(10+i) and the controller sees it at its wire address, as on a cluster.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
: "${RAILYARD_BUILD_DIR:?set RAILYARD_BUILD_DIR}"
CTL=$RAILYARD_BUILD_DIR/controller/railyard-controller
RY=$RAILYARD_BUILD_DIR/client/railyard
# Four guests: a relative rule's `min` is the second lowest of the reporting nodes' own minimums
# (docs/campaigns.md), so the healthy pairs must come from two clients; with three guests, two of
# the three pairs go through the slow one.
N=4
SLOW=3             # the guest made slow: rdma-g3
SLOW_DELAY=50ms    # netem delay of every packet it sends on the wire
COLL_DELAY=600ms   # the same, raised for the collective's playbook (softroce-collective.yaml)
CAMPAIGN_S=300     # bound on the campaign itself (≈50 s)
skip() {
	echo "SKIP rdma-vm campaign-verbs: $*" >&2
	exit 77
}

if [ -z "${RY_CAMPAIGN_NETNS:-}" ]; then
	[ -x "$CTL" ] && [ -x "$RY" ] && [ -x "$RAILYARD_BUILD_DIR/nodeagent/railyard-agent" ] ||
		{ echo "campaign-verbs: controller/railyard/agent not built" >&2; exit 1; }
	command -v jq >/dev/null 2>&1 || skip "jq not found"
	command -v qemu-system-x86_64 >/dev/null 2>&1 ||
		skip "qemu-system-x86_64 not found (package qemu-system-x86; deploy/install-deps.sh)"
	# The image first, in the foreground: its skip (no archive, no tool) is this test's.
	rc=0
	"$HERE/build-image.sh" || rc=$?
	[ $rc = 0 ] || exit $rc
	command -v unshare >/dev/null 2>&1 && command -v ip >/dev/null 2>&1 ||
		skip "unshare or ip not found (util-linux, iproute2)"
	unshare -rn true 2>/dev/null ||
		skip "cannot create a user and network namespace (unshare -rn): unprivileged user namespaces are off"
	export RY_CAMPAIGN_NETNS=1
	exec unshare -rn "$0" "$@"
fi

# ---- in the namespace -----------------------------------------------------------------------
ip link set lo up
for ((i = 0; i < N; i++)); do
	ip addr add "192.168.77.$((10 + i))/32" dev lo
	ip addr add "10.99.0.$((10 + i))/32" dev lo
	ip route replace local "10.99.0.$((10 + i))" dev lo table local src "192.168.77.$((10 + i))"
done

W=$RAILYARD_BUILD_DIR/rdma-vm/campaign-verbs
rm -rf "$W"
mkdir -p "$W"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
fails=0
check() { # check "what" command...
	local what=$1
	shift
	if "$@" >/dev/null; then echo "ok   - $what"; else echo "FAIL - $what"; fails=$((fails + 1)); fi
}
# jq -e exits 0 on empty input (jq 1.6): an empty file or command must fail a check too.
jqt() { local out; out=$(jq -e "$@") && [ -n "$out" ]; }
# railyard over the serving controller's api.sock (--state-dir), never a profile; lists are
# the REST pages ({items, next_cursor}).
unset RAILYARD_URL RAILYARD_TOKEN RAILYARD_CA RAILYARD_PROFILE RAILYARD_CONTROLLER RAILYARD_STATE_DIR
export RAILYARD_CONFIG=$W/cli-config.json
c() { "$RY" "$@" --state-dir "$W/ctl"; }
online() { [ "$(c nodes --json | jq '[.items[] | select(.state == "online")] | length')" = "$1" ]; }
t0=$(date +%s)

"$CTL" init --state-dir "$W/ctl" >"$W/init.log" 2>&1
"$CTL" serve --state-dir "$W/ctl" --listen 0.0.0.0:0 --http 127.0.0.1:0 --heartbeat-interval 2s \
	--heartbeat-timeout 20s >"$W/controller.log" 2>&1 &
ctl_pid=$!
pids+=("$ctl_pid")
for _ in $(seq 200); do
	[ -s "$W/ctl/controller.addr" ] && break
	sleep 0.1
done
[ -s "$W/ctl/controller.addr" ] || { cat "$W/controller.log"; exit 1; }
port=$(sed 's/.*://' "$W/ctl/controller.addr")
c enrollment-token create --cluster rdma --uses $N --ttl 10m >"$W/token"
token=$(awk '/^token:/ {print $2}' "$W/token")
fp=$(awk '/^ca-fingerprint:/ {print $2}' "$W/token")

# The guests, in the background; they end when their agents are revoked (or at the timeout).
"$HERE/run-vm.sh" --no-build --name campaign_verbs --timeout 840 --mem 768M \
	--env "RY_CTL_PORT=$port" --env "RY_TOKEN=$token" --env "RY_FP=$fp" \
	--script "$HERE/cases/campaign-verbs.sh" cluster $N >"$W/run-vm.log" 2>&1 &
vm=$!
pids+=("$vm")
end=$(($(date +%s) + 150))
until online $N; do
	if ! kill -0 $vm 2>/dev/null; then
		rc=0
		wait $vm || rc=$?
		cat "$W/run-vm.log"
		[ $rc != 77 ] || exit 77
		echo "campaign-verbs: the guests ended before their agents came online" >&2
		exit 1
	fi
	if [ "$(date +%s)" -ge $end ]; then
		echo "campaign-verbs: the guests' agents did not come online" >&2
		cat "$W/run-vm.log" >&2
		exit 1
	fi
	sleep 0.5
done
echo "ok   - $N guest agents enrolled and online ($(($(date +%s) - t0)) s)"
c nodes --json | jq .items >"$W/nodes.json"
id_of() { jq -r --arg h "$1" '.[] | select(.hostname == $h) | .id' "$W/nodes.json"; }
slow_id=$(id_of rdma-g$SLOW)

# ---- the configuration it certifies ---------------------------------------------------------
# A verdict certifies the playbook's configuration (validation.requires, by default the playbook
# itself): a node on which its last deployment did not succeed fails before any test.
PB=$HERE/playbooks/softroce-campaign.yaml
# The collective's own validation (its one assert step is never deployed: it certifies
# softroce-campaign's deployment, validation.requires).
COLL_PB=$HERE/playbooks/softroce-collective.yaml
"$RY" deploy --timeout 120s --state-dir "$W/ctl" --cluster rdma --playbook "$PB" --canary 0 --pause 0s \
	>"$W/deploy.log" 2>&1 ||
	{ cat "$W/deploy.log"; echo "campaign-verbs: the deployment failed" >&2; exit 1; }
dep=$(awk '/^deployment d-/ {sub(":", "", $2); print $2; exit}' "$W/deploy.log")
check "the playbook deployed on every guest (its configuration, one assert)" jqt --argjson n $N '
	.state == "succeeded" and ([.nodes[] | select(.state == "succeeded")] | length) == $n' \
	<(c deployments "$dep" --json)

# ---- the campaigns ---------------------------------------------------------------------------
# campaign NAME PLAYBOOK: validate over verbs (signed off as it ends), follow it to its end; its
# document in $W/NAME.json, its sign-off (with the report) in $W/NAME-signoff.json, its id in $id.
campaign() {
	local tc end last="" line so
	c validate --cluster rdma --playbook "$2" --transport verbs --seed 7 --signoff --no-wait \
		>"$W/$1-validate.log"
	cat "$W/$1-validate.log"
	id=$(awk '/^campaign c-/ {sub(":", "", $2); print $2; exit}' "$W/$1-validate.log")
	[ -n "$id" ] || { echo "campaign-verbs: no campaign stored" >&2; exit 1; }
	tc=$(date +%s)
	end=$((tc + CAMPAIGN_S))
	while :; do
		state=$(c campaign show "$id" --json | jq -r .state)
		[ "$state" = running ] || break
		line=$(c campaign show "$id")
		[ "$line" = "$last" ] || echo "  [$(($(date +%s) - tc)) s] $line"
		last=$line
		if [ "$(date +%s)" -ge $end ]; then
			echo "campaign-verbs: campaign $id still running after $CAMPAIGN_S s; cancelling" >&2
			c campaign cancel "$id" || true
			break
		fi
		sleep 2
	done
	echo "campaign $id ended ($state) after $(($(date +%s) - tc)) s"
	c campaign show "$id" | tee "$W/$1-verdict.txt"
	c campaign show "$id" --json --results >"$W/$1.json"
	# Signed as it ends: wait for the sign-off (bounded).
	for _ in $(seq 100); do
		c signoff list --json 2>/dev/null | jq .items >"$W/signoffs.json"
		jq -e --arg c "$id" 'any(.[]; .campaign == $c)' "$W/signoffs.json" >/dev/null && break
		sleep 0.2
	done
	so=$(jq -r --arg c "$id" '.[] | select(.campaign == $c) | .id' "$W/signoffs.json")
	# railyard's signoff show has no --report: the signed report is the exported signoff.json.
	c signoff show "$so" --json >"$W/$1-signoff-show.json" || true
	c signoff export "$so" --dir "$W/$1-signoff" >/dev/null || true
	jq -s '.[0] + {report: .[1]}' "$W/$1-signoff-show.json" "$W/$1-signoff/signoff.json" \
		>"$W/$1-signoff.json" || true
}
c validate --cluster rdma --playbook "$PB" --transport verbs --seed 7 --dry-run >"$W/plan.txt"
cat "$W/plan.txt"

# Healthy: a full verbs campaign on every node, certifying its configuration, is an acceptance
# sign-off that passes.
campaign healthy "$PB"
check "healthy: the campaign passed, every node" jqt '.state == "passed" and
	.verdict.result == "pass" and all(.verdict.nodes[]; .result == "pass")' "$W/healthy.json"
check "healthy: an acceptance sign-off that passes" jqt '.verdict == "pass" and .acceptance == true and
	.headline == "pass; acceptance sign-off" and .report.acceptance_reasons == []' \
	"$W/healthy-signoff.json"
# The collective (test 4): one MPI job over the 4 guests, UCX over rxe with the deployed
# settings, launched through the agents (the guests have no SSH).
check "healthy: the collective passed: 4 ranks, exact data, bus bandwidth" jqt '
	.verdict.tests[4].result == "pass" and (.results[] | select(.test_index == 4) |
	.phase == "run" and .state == "done" and .summary.coll.ranks == 4 and
	.summary.metrics.wrong == 0 and
	.summary.metrics.busbw_gbs > 0)' "$W/healthy.json"
coll_bench=$(jq -r '.results[] | select(.test_index == 4 and .phase == "run") | .bench_id' \
	"$W/healthy.json")
c bench show "$coll_bench" --json >"$W/healthy-coll.json"
check "healthy: over pml ucx, the deployed UCX settings exported, 4 daemons through the relay" jqt '
	.result.launch.mca.pml == "ucx" and (.result.launch.env | index("UCX_TLS")) != null and
	.result.settings.ucx.UCX_NET_DEVICES == "rxe0:1" and .result.launch.daemons == 4' \
	"$W/healthy-coll.json"
check "healthy: the sign-off's CPU cost has the collective's line" jqt '
	any(.report.cpu_cost[]; .test == "allreduce" and (.text | test("bus bandwidth")))' \
	"$W/healthy-signoff.json"
# The same job over TCP (pml ob1): the baseline.
c validate --cluster rdma --playbook "$PB" --transport tcp --tests allreduce --seed 7 --json \
	>"$W/tcp-coll.json" 2>"$W/tcp-coll.err" || true
check "tcp baseline: the collective passes, labelled a baseline" jqt '.verdict.baseline == true and
	.verdict.tests[0].name == "allreduce" and .verdict.tests[0].result == "pass"' "$W/tcp-coll.json" ||
	tail -5 "$W/tcp-coll.err"
c campaign show "$(jq -r .id "$W/tcp-coll.json")" --json --results >"$W/tcp-coll-rows.json"
c bench show "$(jq -r '.results[0].bench_id' "$W/tcp-coll-rows.json")" --json >"$W/tcp-coll-bench.json"
check "tcp baseline: pml ob1 over the TCP transport" jqt '.result.launch.mca.pml == "ob1"' \
	"$W/tcp-coll-bench.json"
echo "collective figures: verbs $(jq -c '.results[] | select(.test_index == 4) | .summary.metrics' "$W/healthy.json")"
echo "collective figures: tcp $(jq -c '.results[0].summary.metrics' "$W/tcp-coll-rows.json")"
# The collective's playbook on the healthy guests: its line (150 ms) passes them.
campaign coll-healthy "$COLL_PB"
check "collective playbook, healthy: passed, every node, 4 ranks, exact data" jqt '
	.state == "passed" and all(.verdict.nodes[]; .result == "pass") and
	(.results[] | select(.test_index == 0 and .phase == "run") | .state == "done" and
	.summary.coll.ranks == 4 and .summary.metrics.wrong == 0)' "$W/coll-healthy.json"
echo "collective figures: healthy $(jq -c '.results[] | select(.test_index == 0) | .summary.metrics' \
	"$W/coll-healthy.json")"

# Degraded by a deployment of its own: a command step puts a netem delay on rdma-g$SLOW's wire
# NIC (its RDMA port's netdev, from its facts), so every RoCE packet it sends waits the delay.
# delay_guest NAME VERB DELAY: playbook NAME runs `tc qdisc VERB ... netem delay DELAY` there
# (add, then change), deployed to rdma-g$SLOW alone and succeeded.
delay_guest() {
	cat >"$W/$1.yaml" <<EOF
name: $1
version: "1"
target:
  selector:
    - {fact: hostname, op: "==", value: rdma-g$SLOW}
steps:
  - name: delay the wire
    type: command
    params:
      argv: [/usr/sbin/tc, qdisc, $2, dev, "\${facts.rdma.devices[0].ports[0].netdev}", root, netem, delay, $3]
      timeout: 30s
EOF
	"$RY" deploy --timeout 120s --state-dir "$W/ctl" --cluster rdma --playbook "$W/$1.yaml" --canary 0 \
		--pause 0s >"$W/$1-deploy.log" 2>&1 || { cat "$W/$1-deploy.log"; exit 1; }
	dep=$(awk '/^deployment d-/ {sub(":", "", $2); print $2; exit}' "$W/$1-deploy.log")
	check "rdma-g$SLOW delayed $3 by a deployment (netem on its wire NIC)" jqt --arg h "rdma-g$SLOW" '
		.state == "succeeded" and ([.nodes[] | .hostname] == [$h])' <(c deployments "$dep" --json)
}
delay_guest slow-guest add $SLOW_DELAY

campaign slow "$PB"
J=$W/slow.json

check "the campaign ended failed (the slow guest), over verbs, not a tcp baseline" jqt '
	.state == "failed" and .result == "fail" and .transport == "verbs" and
	.verdict.transport == "verbs" and .verdict.baseline == false and .verdict.quick == false' "$J"
check "exactly one node is named bad: the slow guest rdma-g$SLOW" jqt --arg s "$slow_id" '
	[.verdict.nodes[] | select(.result != "pass") | .id] == [$s]' "$J"
check "the others pass" jqt --arg s "$slow_id" --argjson n $N '
	[.verdict.nodes[] | select(.id != $s and .result == "pass")] | length == $n - 1' "$J"
check "its reason names the latency test and the relative rule" jqt --arg s "$slow_id" '
	.verdict.nodes[] | select(.id == $s) | any(.reasons[];
	test("^pair-lat: fails with 3 of 3 peers; e\\.g\\. pair-lat: min_us [0-9.]+, not <= [0-9.]+ \\(10.0 x min [0-9.]+, rdma-g[0-2] -> rdma-g[0-2], the second lowest of [34] reporting nodes"))' "$J"
check "the rule failed on the 3 pairs through the slow guest, of 6" jqt '
	.verdict.tests[] | select(.name == "pair-lat") | .rules[] |
	select(.metric == "pair-lat.min_us" and .relative == "min") | .evaluated == 6 and .failed == 3' "$J"
check "a finding names the slow node; no link is suspected" jqt '
	any(.verdict.findings[]; test("^pair-lat: node rdma-g'$SLOW' is bad")) and .verdict.links == []' "$J"
check "an acceptance sign-off, verdict fail (not a smoke report)" jqt '.acceptance == true and
	.verdict == "fail" and .headline == "fail; acceptance sign-off"' "$W/slow-signoff.json"
check "  ... its report names the slow guest" jqt '.report.acceptance_reasons == [] and
	any(.report.summary[]; test("rdma-g'$SLOW' is bad"))' "$W/slow-signoff.json"
# The all-reduce's line in this playbook only catches a broken run (50 ms is within what hosts
# differ by: softroce-collective.yaml); it passes with 4 ranks, the slow one among them.
check "the other tests pass (the collective too: its line here only catches a broken run)" jqt '
	[.verdict.tests[] | select(.name != "pair-lat") | .result] == ["pass", "pass", "pass", "pass"]' "$J"
# Rows: test indexes follow the playbook (0 pair-lat, 1 pair-bw, 2 ring-bw, 3 incast).
for t in 0:pair-lat 1:pair-bw; do
	check "${t#*:}: every pair measured once (6 pairs), rail 0, over rxe0" jqt --argjson t "${t%%:*}" '
		[.results[] | select(.test_index == $t)] as $r | ($r | length) == 6 and
		([$r[] | [.a, .b] | sort] | unique | length) == 6 and all($r[]; .phase == "run" and
		.state == "done" and .rail == 0 and .summary.env.a.device == "rxe0" and
		.summary.env.b.device == "rxe0")' "$J"
done
check "random ring: $N slots in one round, every node sends once and receives once" jqt --argjson n $N '
	[.results[] | select(.test_index == 2)] as $r | ($r | length) == $n and
	([$r[].round] | unique) == [0] and ([$r[].a] | unique | length) == $n and
	([$r[].b] | unique | length) == $n and all($r[]; .a != .b and .state == "done")' "$J"
check "incast: isolated and congested victim rows measured, a congestor ran" jqt '
	[.results[] | select(.test_index == 3)] as $r |
	([$r[] | select(.role == "measure") | .phase] | unique) ==
		["congested-bw", "congested-lat", "isolated-bw", "isolated-lat"] and
	all($r[] | select(.role == "measure"); .state == "done") and
	any($r[]; .role == "congestor" and .phase == "congestor")' "$J"
check "incast: one victim pair with impact stats" jqt '.verdict.tests[] | select(.name == "incast") |
	.victim_pairs == 1 and .stats.impact_p99.n == 1 and .stats.impact_bw.n == 1 and
	.stats.impact_p99.median > 0 and .stats.impact_bw.median > 0' "$J"
c bench list --json | jq .items >"$W/runs.json"
check "every benchmark run was served at the server guest's wire address" jqt '
	length > 0 and all(.[] | select(.kind != "collective"); .server_address != null and
	(.server_address | test("^192\\.168\\.77\\.1[0-9]$")))' "$W/runs.json"
check "every summary carries a counters object" jqt '
	all(.results[] | select(.state == "done"); .summary.counters | type == "object")' "$J"
check "verbs runs: rxe hw_counters deltas, packets sent and received" jqt '
	all(.results[] | select(.state == "done" and .role == "measure" and .test_index != 4); .summary.counters |
	length > 0 and .sent_pkts > 0 and .rcvd_pkts > 0)' "$J"
# Figures for the log.
jq -r '.verdict.tests[] | "stats \(.name): " + ([.stats | to_entries[] |
	"\(.key) n \(.value.n) min \(.value.min) median \(.value.median) max \(.value.max)"] |
	join("; "))' "$J"
jq -r '.results[] | select(.role == "measure") | "row t\(.test_index) r\(.round) \(.phase) " +
	"\(.a[0:8])->\(.b[0:8]) \(.state) " + (.summary.metrics // {} | tostring) + " " +
	(.summary.counters // {} | with_entries(select(.value != 0)) | tostring)' "$J"

# The collective's playbook with rdma-g$SLOW's wire delayed 600 ms (a deployment changes the
# netem qdisc): far beyond what the emulator's speed moves the healthy figure.
delay_guest slower-guest change $COLL_DELAY
campaign coll-slow "$COLL_PB"
J=$W/coll-slow.json
check "collective playbook, slowed: failed over verbs, only the slow guest named bad" jqt --arg s "$slow_id" '
	.state == "failed" and .verdict.transport == "verbs" and .verdict.tests[0].result == "fail" and
	[.verdict.nodes[] | select(.result != "pass") | .id] == [$s]' "$J"
check "  ... by its lat_us line, confirmed without the launcher" jqt --arg s "$slow_id" '
	.verdict.nodes[] | select(.id == $s) | any(.reasons[]; test("^allreduce: lat_us [0-9.]+, not <= 150000")) and
	any(.reasons[]; test("confirmed: the job without rdma-g0, launched by rdma-g1, fails too"))' "$J"
check "  ... named by the job's pairwise probe" jqt --arg s "$slow_id" '.results[] |
	select(.test_index == 0 and .phase == "run") | .summary.coll.slowest == $s' "$J"
check "  ... an acceptance sign-off, verdict fail, naming it" jqt '.acceptance == true and
	.verdict == "fail" and any(.report.summary[]; test("rdma-g'$SLOW' is bad"))' "$W/coll-slow-signoff.json"
echo "collective figures: slowed $(jq -c '.results[] | select(.test_index == 0) | .summary.metrics' "$J")"

for n in $(jq -r '.[].id' "$W/nodes.json"); do c node revoke "$n" >/dev/null; done
rc=0
wait "$vm" || rc=$?
cat "$W/run-vm.log"
grep -ah "\[g[0-9]" "$RAILYARD_BUILD_DIR"/rdma-vm/logs/campaign_verbs/guest*.log | tail -40 || true
check "every guest ended with its agent revoked" test $rc = 0
# The controller stops on SIGTERM (a sanitized build runs its leak check then).
kill -TERM "$ctl_pid"
for _ in $(seq 100); do
	kill -0 "$ctl_pid" 2>/dev/null || break
	sleep 0.2
done
kill -KILL "$ctl_pid" 2>/dev/null || true # still running after 20 s: a failure
rc=0
wait "$ctl_pid" || rc=$?
check "the controller stopped cleanly on SIGTERM" test $rc = 0
check "no sanitizer report from the controller" \
	bash -c '! grep -q "ERROR: LeakSanitizer\|ERROR: AddressSanitizer\|runtime error:" "$1"' _ \
	"$W/controller.log"
echo "campaign-verbs: $(($(date +%s) - t0)) s in the namespace"
[ $fails = 0 ] || { echo "campaign-verbs: $fails check(s) failed; logs in $W and $RAILYARD_BUILD_DIR/rdma-vm/logs/campaign_verbs"; exit 1; }
echo "campaign-verbs: all passed"
