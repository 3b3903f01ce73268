#!/usr/bin/env bash
# `make demo`: a controller and four agents on fixture H200 nodes, all on 127.0.0.1, in a
# temporary directory. Enroll, wait until all are online, show the node table and the
# controller's footprint, then shut everything down.
# `make demo-portal` (deploy/demo.sh BUILD --portal): the same, then the controller and agents
# keep running and serving the web portal (docs/portal.md) on HTTP (default 127.0.0.1:8443),
# with its URL and login tokens printed, until Ctrl-C.
set -euo pipefail
BUILD=${1:-build}
PORTAL=false
[ "${2:-}" = --portal ] && PORTAL=true
HTTP_LISTEN=127.0.0.1:0
$PORTAL && HTTP_LISTEN=${HTTP:-127.0.0.1:8443}
SRC=$(cd "$(dirname "$0")/.." && pwd)
CTL=$BUILD/controller/railyard-controller
RY=$BUILD/client/railyard
AGENT=$BUILD/nodeagent/railyard-agent
FIX=$SRC/tests/fixtures/sysroots
NODES=(h200-ib h200-roce h200-degraded h200-ib-2)
DEMO=$(mktemp -d /tmp/railyard-demo.XXXXXX)
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$DEMO"
}
trap cleanup EXIT

# wait_for SECONDS what command...
wait_for() {
	local end=$(($(date +%s) + $1)) what=$2; shift 2
	until "$@" >/dev/null 2>&1; do
		if [ "$(date +%s)" -ge $end ]; then
			echo "demo: timed out waiting for $what (logs: $DEMO)" >&2
			trap - EXIT
			exit 1
		fi
		sleep 0.2
	done
}
online_count() { "$RY" nodes --json --state-dir "$DEMO/ctl" | grep -c '"state": "online"' || true; }
all_online() { [ "$(online_count)" -eq ${#NODES[@]} ]; }

echo "== railyard demo in $DEMO"
"$CTL" init --state-dir "$DEMO/ctl" | sed 's/^/   /'
"$CTL" serve --state-dir "$DEMO/ctl" --listen 127.0.0.1:0 --http "$HTTP_LISTEN" --heartbeat-interval 1s \
	>"$DEMO/controller.log" 2>&1 &
CTL_PID=$!
pids+=("$CTL_PID")
wait_for 20 "the controller to listen (log: $DEMO/controller.log)" test -s "$DEMO/ctl/controller.addr"
ADDR=$(cat "$DEMO/ctl/controller.addr")
echo "== controller listening on $ADDR"

"$RY" enrollment-token create --state-dir "$DEMO/ctl" --cluster demo --uses ${#NODES[@]} --ttl 10m \
	--controller "$ADDR" >"$DEMO/token"
TOKEN=$(awk '/^token:/ {print $2}' "$DEMO/token")
FP=$(awk '/^ca-fingerprint:/ {print $2}' "$DEMO/token")
echo "== one-time token for ${#NODES[@]} nodes, CA pinned by $FP"

# Each agent works on its own copy of a fixture node, with test doubles for the programs
# that cannot run here (see tests/fixtures/prepare-sysroot.sh). The vendors' servers cannot be
# reached either: stand-in repository keys, made for this run, are served at their key URLs and
# pinned in copies of the shipped playbooks in place of NVIDIA's fingerprints.
"$SRC/tests/fixtures/vendor-keys.sh" "$DEMO/keys"
mkdir -p "$DEMO/playbooks"
for pb in h200-ndr-ib.yaml h200-roce.yaml; do
	"$SRC/tests/fixtures/pin-test-keys.sh" "$DEMO/keys" "$SRC/playbooks/$pb" "$DEMO/playbooks/$pb"
done
for n in "${NODES[@]}"; do
	"$SRC/tests/fixtures/prepare-sysroot.sh" "$FIX/$n" "$DEMO/root-$n" "$DEMO/keys"
	"$AGENT" enroll --controller "$ADDR" --token "$TOKEN" --ca-fingerprint "$FP" \
		--state-dir "$DEMO/$n" --sysroot "$DEMO/root-$n" | sed 's/^/   /'
	"$AGENT" run --state-dir "$DEMO/$n" --sysroot "$DEMO/root-$n" >"$DEMO/$n.log" 2>&1 &
	pids+=("$!")
done
wait_for 30 "all agents online" all_online
echo "== all ${#NODES[@]} nodes online"
echo
"$RY" nodes --state-dir "$DEMO/ctl"
echo

# The controller's footprint with the agents connected, over a few heartbeats
# (schedstat: nanoseconds on CPU, all threads).
cpu0=$(cat /proc/$CTL_PID/task/*/schedstat | awk '{s += $1} END {print s}')
t0=$(date +%s%N)
sleep 5
cpu1=$(cat /proc/$CTL_PID/task/*/schedstat | awk '{s += $1} END {print s}')
t1=$(date +%s%N)
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$CTL_PID/status")
thr=$(awk '/^Threads/ {print $2}' "/proc/$CTL_PID/status")
awk -v c=$((cpu1 - cpu0)) -v ns=$((t1 - t0)) -v rss="$rss" -v thr="$thr" -v n=${#NODES[@]} \
	'BEGIN { printf "== controller with %d agents: RSS %.1f MiB, %d threads, CPU %.3f%% of one core over %.1f s\n", n, rss / 1024, thr, 100 * c / ns, ns / 1e9 }'

# Deploy: the shipped playbooks, check mode first, then for real, then again (idempotent).
# The demo skips the playbooks' canary and pause between batches, and tolerates the one
# degraded node so that the rollout goes on past it.
deploy() { # deploy PLAYBOOK ARGS...
	local pb=$1; shift
	"$RY" deploy --state-dir "$DEMO/ctl" --cluster demo --playbook "$DEMO/playbooks/$pb" \
		--canary 0 --pause 0s --max-fail 1 --timeout 120s "$@" | tee "$DEMO/deploy.out" |
		sed 's/^/   /' || true
	DEP=$(awk '/^deployment d-/ {sub(":", "", $2); print $2; exit}' "$DEMO/deploy.out")
}
changed_steps() { # changed_steps HOSTNAME
	"$RY" deployments "$DEP" --json --state-dir "$DEMO/ctl" | jq -r --arg h "$1" \
		'.nodes[] | select(.hostname == $h) | .steps[] | select(.status == "changed") | "      \(.name)"'
}
echo "== h200-ndr-ib in check mode: what would change"
deploy h200-ndr-ib.yaml --check
echo "   steps that would change on gpu-node-01:"
changed_steps gpu-node-01
echo "   diff of the CUDA repository step on gpu-node-01 (stand-in key pinned):"
"$RY" deployments "$DEP" --json --state-dir "$DEMO/ctl" | jq -r \
	'.nodes[] | select(.hostname == "gpu-node-01") | .steps[] | select(.name == "cuda repository") | .diff' |
	sed 's/^/      /'
echo "   diff of /etc/nccl.conf on gpu-node-01:"
"$RY" deployments "$DEP" --json --state-dir "$DEMO/ctl" | jq -r \
	'.nodes[] | select(.hostname == "gpu-node-01") | .steps[] | select(.name == "nccl settings") | .diff' |
	sed 's/^/      /'
for pb in h200-ndr-ib.yaml h200-roce.yaml; do
	echo "== apply $pb"
	t0=$(date +%s%N)
	deploy "$pb"
	t1=$(date +%s%N)
	awk -v ns=$((t1 - t0)) 'BEGIN { printf "   rollout took %.2f s\n", ns / 1e9 }'
	"$RY" deployments "$DEP" --json --state-dir "$DEMO/ctl" | jq -r \
		'.nodes[] | . as $n | .steps[] | select(.status == "failed") | "   \($n.hostname) failed \(.name): \(.message)"'
done
echo "== apply h200-ndr-ib again: nothing left to change"
deploy h200-ndr-ib.yaml
"$RY" deployments "$DEP" --json --state-dir "$DEMO/ctl" | jq -r \
	'"   changed steps over all nodes: \([.nodes[].changed] | add)"'
echo "== deployments"
"$RY" deployments --state-dir "$DEMO/ctl" | sed 's/^/   /'

echo "== benchmarks over the agents' sessions (TCP baseline on loopback; verbs runs in tests/rdma-vm)"
"$RY" bench run --state-dir "$DEMO/ctl" --from gpu-node-01 --to gpu-node-04 --kind lat \
	--iters 2000 --timeout 60s | sed 's/^/   /' || true
"$RY" bench run --state-dir "$DEMO/ctl" --from gpu-node-01 --to gpu-node-04 --kind bw \
	--size 65536 --iters 5000 --check-data --timeout 60s | sed 's/^/   /' || true

echo "== validation campaign: tcp-baseline over the four nodes, quick (every pair, a random ring,"
echo "   incast; a TCP baseline here, verbs campaigns run in tests/rdma-vm)"
"$RY" validate --state-dir "$DEMO/ctl" --cluster demo --playbook "$SRC/playbooks/tcp-baseline.yaml" \
	--quick --signoff | sed 's/^/   /' || true
"$RY" campaigns --state-dir "$DEMO/ctl" | sed 's/^/   /'

echo "== sign-off: the campaign's signed report, exported and verified offline"
OUT=$(cd "$BUILD" && pwd)/demo-signoff
SO=$("$RY" signoff list --json --state-dir "$DEMO/ctl" | jq -r '.items[0].id // empty')
if [ -n "$SO" ]; then
	"$RY" signoff export "$SO" --dir "$OUT" --state-dir "$DEMO/ctl" | sed 's/^/   /'
	# Stock OpenSSL, both steps, as docs/signoff.md shows them (SO_VERIFY_OPENSSL): the
	# signature alone would accept any certificate the CA issued, a node's too.
	cat >"$DEMO/verify-openssl.sh" <<'RECIPE'
openssl cms -verify -binary -content signoff.json -in signoff.p7s -inform PEM \
    -CAfile ca.pem -purpose any -signer signer.pem -out /dev/null &&
openssl x509 -in signer.pem -noout -ext extendedKeyUsage |
    grep -Eqx ' *(1\.3\.6\.1\.5\.5\.7\.3\.36|Document Signing)' &&
echo 'sign-off verified: signed by the sign-off key'
RECIPE
	(cd "$OUT" && { sh "$DEMO/verify-openssl.sh" 2>&1; r=$?; rm -f signer.pem; exit $r; }) |
		sed 's/^/   openssl: /'
	echo "   \$ railyard signoff verify signoff.json signoff.p7s --ca ca.pem   (no controller needed)"
	RAILYARD_CONFIG="$DEMO/railyard.json" "$BUILD/client/railyard" signoff verify \
		"$OUT/signoff.json" "$OUT/signoff.p7s" --ca "$OUT/ca.pem" | sed 's/^/   /' || true
	echo "   sign-off $SO: $OUT/signoff.html (kept after the demo)"
else
	echo "   no sign-off was made (see the controller's log)"
fi

echo "== the REST API and the railyard CLI"
API=$(cat "$DEMO/ctl/api.addr")
VIEWER=$("$RY" token create --name demo-viewer --role viewer --state-dir "$DEMO/ctl" 2>/dev/null |
	awk '/^token:/ {print $2}')
echo "   API: $API (CA: $DEMO/ctl/ca.crt)"
echo "   viewer token: $VIEWER"
echo "   \$ railyard --url $API --token … --ca …/ca.crt nodes"
RAILYARD_CONFIG="$DEMO/railyard.json" "$BUILD/client/railyard" --url "$API" --token "$VIEWER" \
	--ca "$DEMO/ctl/ca.crt" nodes | sed 's/^/   /' || true

if $PORTAL; then
	ADMIN=$("$RY" token create --name demo-admin --role admin --state-dir "$DEMO/ctl" 2>/dev/null |
		awk '/^token:/ {print $2}')
	echo "== the web portal: $API/"
	echo "   log in with the admin token:  $ADMIN"
	echo "   or the viewer token:          $VIEWER"
	echo "   its certificate is issued by the demo controller's own CA: $DEMO/ctl/ca.crt"
	echo "   ($FP); trust that CA in the browser, or accept its warning for this demo."
	echo "   Serving until Ctrl-C (logs in $DEMO)."
	trap 'echo; echo "== Ctrl-C"' INT
	trap 'echo; echo "== terminated"' TERM
	# wait returns when a trapped signal comes in (or when the controller exits on its own).
	wait "$CTL_PID" || true
	if ! kill -0 "$CTL_PID" 2>/dev/null; then
		echo "== the controller exited on its own; its log's end:"
		tail -5 "$DEMO/controller.log" | sed 's/^/   /'
		exit 1
	fi
fi
echo "== shutting down"
for p in "${pids[@]:1}"; do kill -TERM "$p"; done
for p in "${pids[@]:1}"; do wait "$p"; done
kill -TERM "$CTL_PID"
wait "$CTL_PID"
pids=()
echo "== done: controller and agents exited cleanly"
