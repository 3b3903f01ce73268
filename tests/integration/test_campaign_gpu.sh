#!/usr/bin/env bash
# Integration: a campaign's GPU parts over two agents on 127.0.0.1, each on the libcuda test
# double (RAILYARD_SEAM_LIBCUDA; 8 GPUs with the fixture node's PCI addresses and UUIDs): a gpu
# test (each
# node's GPU check, one-sided runs over the sessions; agent b's double copies H2D at 40 GB/s,
# below the 48 GB/s minimum, and is named for it) and a latency test in GPU memory (mem: cuda,
# staged over tcp), then the verdict.
. "$(dirname "$0")/lib.sh"

DOUBLE=$BUILD/tests/gpu/libcuda-double.so
[ -f "$DOUBLE" ] || { echo "SKIP integration_campaign_gpu: $DOUBLE not built"; exit 77; }
BUS=0000:17:00.0,0000:28:00.0,0000:39:00.0,0000:4a:00.0,0000:99:00.0,0000:aa:00.0,0000:bb:00.0,0000:cc:00.0
uuids() { # the fixture's GPU UUIDs in bus order, comma-separated
	awk '/GPU UUID/ {print $3}' "$FIXTURES/$1"/proc/driver/nvidia/gpus/*/information | paste -sd,
}

"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
start_controller --heartbeat-interval 300ms
new_token 2
enroll a "$FIXTURES/h200-ib" || die "enroll a"
enroll b "$FIXTURES/h200-ib-2" || die "enroll b"
RAILYARD_SEAM_LIBCUDA=$DOUBLE RAILYARD_CUDA_DOUBLE_GPUS=8 RAILYARD_CUDA_DOUBLE_BUS=$BUS \
	RAILYARD_CUDA_DOUBLE_UUIDS=$(uuids h200-ib) RAILYARD_CUDA_DOUBLE_RATES=h2d=55.5,d2h=55.3,d2d=1959 \
	start_agent a "$FIXTURES/h200-ib"
RAILYARD_SEAM_LIBCUDA=$DOUBLE RAILYARD_CUDA_DOUBLE_GPUS=8 RAILYARD_CUDA_DOUBLE_BUS=$BUS \
	RAILYARD_CUDA_DOUBLE_UUIDS=$(uuids h200-ib-2) RAILYARD_CUDA_DOUBLE_RATES=h2d=40,d2h=55.3,d2d=1959 \
	start_agent b "$FIXTURES/h200-ib-2"
check "two agents online" wait_for 30 count_is online 2
"$RY" nodes --json --state-dir "$T/ctl" | jq .items >"$T/nodes.json"
host_b=$(jq -r '.[] | select(.hostname != "gpu-node-01") | .hostname' "$T/nodes.json")

cat >"$T/gpu.yaml" <<EOF
name: gpu-it
version: "1"
steps:
  - {name: facts readable, type: assert, params: {that: [{fact: kernel.release, op: "!=", value: ""}]}}
validation:
  requires: []
  transport: tcp
  tests:
    - {name: gpu-health, kind: gpu, size: 64K, repeats: 3}
    - {name: gpu-lat, kind: lat, pattern: pairs, size: 4K, iters: 100, mem: cuda}
  acceptance:
    - {metric: gpu-lat.p50_us, op: "<=", value: 1000000}
EOF
"$RY" validate --state-dir "$T/ctl" --cluster it --playbook "$T/gpu.yaml" --seed 3 --json \
	>"$T/camp.json" 2>"$T/camp.err"
check "the campaign fails (node b's GPUs are slow)" test $? -eq 1
check "the gpu test ran on both nodes, one slot each" jqt \
	'.verdict.tests[] | select(.name == "gpu-health") | .rows == 2 and .measured == 2' "$T/camp.json"
check "its rules: the check's own limits, evaluated on both" jqt '.verdict.tests[] |
	select(.name == "gpu-health") | .rules[] | select(.metric == "gpu-health.checks_failed") |
	.evaluated == 2 and .failed == 1' "$T/camp.json"
check "node b is bad, named with the figure that failed" jqt --arg h "$host_b" '.verdict.nodes[] |
	select(.hostname == $h) | .result == "fail" and
	any(.reasons[]; test("h2d 40.0 GB/s, below 48.0"))' "$T/camp.json"
check "node a passes" jqt '.verdict.nodes[] | select(.hostname == "gpu-node-01") |
	.result == "pass"' "$T/camp.json"
check "the finding names the node" jqt --arg h "$host_b" \
	'any(.verdict.findings[]; test("gpu-health: node " + $h + " is bad"))' "$T/camp.json"
check "health read from /proc only: not read, not failed" jqt '.verdict.tests[] |
	select(.name == "gpu-health") | .stats.not_read.min > 0' "$T/camp.json"
check "the GPU-memory latency pair passed" jqt '.verdict.tests[] | select(.name == "gpu-lat") |
	.result == "pass" and .measured == 1' "$T/camp.json"
"$RY" campaign show "$(jq -r .id "$T/camp.json")" --results --json --state-dir "$T/ctl" \
	>"$T/rows.json"
lat_bench=$(jq -r '.results[] | select(.test_index == 1 and .phase == "run") | .bench_id' "$T/rows.json")
"$RY" bench show "$lat_bench" --json --state-dir "$T/ctl" >"$T/lat.json"
check "the latency run is stored" test -s "$T/lat.json"
check "both sides in GPU memory, staged, on the first GPU (its UUID from the facts)" jqt '
	.result.environment.client.mem_path == "staged" and
	.result.environment.server.mem_path == "staged" and
	all(.result.environment.client.mem, .result.environment.server.mem;
	    test("^cuda:GPU-5b7c0[14]00-")) and .result.environment.client.gpu.index == 0' "$T/lat.json"
check_sanitizers
finish
