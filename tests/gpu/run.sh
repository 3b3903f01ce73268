#!/usr/bin/env bash
# GPU tests for a machine with an NVIDIA GPU (/work/shared/notes/gpu-machine.md: no packages
# there; bring the binaries with tests/gpu/pack.sh). Steps, each PASS, FAIL or SKIP with why:
#   1. facts vs nvidia-smi -q -x (tests/gpu/facts-vs-smi.sh FACTS_JSON SMI_XML, when present)
#   2. railyard-agent gpu-check: per GPU H2D/D2H/D2D copy bandwidth and the health readings
#   3. railyard-bench gpu-info: each GPU's CUDA facts and a dma-buf export of its memory
#   4. railyard-bench --mem cuda over tcp on loopback with --check-data (staged), lat and bw
#   5. railyard-bench --mem cuda over verbs (GPUDirect RDMA: dma-buf, else nvidia-peermem) on the
#      first RDMA device, where there is one
#   6. railyard-agent health-check: the GPU watcher (a baseline and one tick) and the GPUDirect
#      RDMA readiness check; on the double, NVML's double ($RAILYARD_GPU_RUN_NVML_DOUBLE) replays
#      an uncorrected ECC error that must come back as a critical event
#   7. railyard-coll --backend nccl under mpirun, one rank per GPU: every op over a size sweep,
#      the data check (needs mpirun and libnccl.so.2 there; on the double, the libnccl double
#      $RAILYARD_NCCL_DOUBLE)
# Usage: run.sh [--bin DIR] [--out DIR] [--port P] [--quick]
#   --bin DIR  holds railyard-agent and railyard-bench: a pack.sh bundle's bin/ (the default when
#              this script sits in a bundle) or a build tree ($RAILYARD_BUILD_DIR)
#   --out DIR  where the documents go (default: a new temporary directory, kept)
#   --quick    small copies and few iterations (the CI run on the double: seconds, not minutes)
# RAILYARD_SEAM_LIBCUDA=.../libcuda-double.so runs it without a GPU on the tests' double
# (nvidia-smi steps skip). Exit: 0 nothing failed, 1 a step failed, 77 no GPU here at all.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
bin='' out='' port=19700 quick=0
while [ $# -gt 0 ]; do
	case "$1" in
	--bin) bin=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--port) port=$2; shift 2 ;;
	--quick) quick=1; shift ;;
	*) echo "usage: $0 [--bin DIR] [--out DIR] [--port P] [--quick]" >&2; exit 2 ;;
	esac
done
find_bin() { # find_bin NAME: a bundle's bin/, --bin, or a build tree
	local d
	for d in "$bin" "$HERE/bin" "${RAILYARD_BUILD_DIR:-}/nodeagent" \
		"${RAILYARD_BUILD_DIR:-}/nodeagent/bench" "${RAILYARD_BUILD_DIR:-}/nodeagent/coll" \
		"$HERE/../../build/nodeagent" "$HERE/../../build/nodeagent/bench" \
		"$HERE/../../build/nodeagent/coll"; do
		[ -n "$d" ] && [ -x "$d/$1" ] && { echo "$d/$1"; return 0; }
	done
	return 1
}
AGENT=$(find_bin railyard-agent) || { echo "run: railyard-agent not found (--bin DIR)" >&2; exit 2; }
BENCH=$(find_bin railyard-bench) || { echo "run: railyard-bench not found (--bin DIR)" >&2; exit 2; }
# A bundle's libraries: its lib/ beside bin/.
libdir="$(dirname "$AGENT")/../lib"
if [ -d "$libdir" ]; then
	libdir=$(cd "$libdir" && pwd)
	export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
out=${out:-$(mktemp -d /tmp/railyard-gpu-XXXXXX)}
mkdir -p "$out"
PASS=0 FAIL=0 SKIP=0
pass() { PASS=$((PASS + 1)); echo "PASS $*"; }
fail() { FAIL=$((FAIL + 1)); echo "FAIL $*"; }
skip() { SKIP=$((SKIP + 1)); echo "SKIP $*"; }
note() { echo "     $*"; }
# json FILE EXPR: a Python expression over the document d (python3 is on the GPU machine;
# jq is not).
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

double=0
smi=0
if [ -n "${RAILYARD_SEAM_LIBCUDA:-}" ]; then
	double=1
	echo "run: on the libcuda TEST DOUBLE ($RAILYARD_SEAM_LIBCUDA), not a GPU"
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >"$out/smi-L.txt" 2>&1; then
	smi=1
	echo "run: $(grep -c '^GPU ' "$out/smi-L.txt") GPU(s): $(head -1 "$out/smi-L.txt")"
	nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1 |
		sed 's/^/run: driver /'
else
	echo "SKIP gpu: no NVIDIA GPU here (nvidia-smi missing or failing: $(head -1 "$out/smi-L.txt" 2>/dev/null))"
	exit 77
fi
echo "run: binaries $AGENT, $BENCH; documents in $out"

# 1. facts vs nvidia-smi
if ! "$AGENT" facts --json >"$out/facts.json" 2>"$out/facts.err"; then
	fail "facts: railyard-agent facts failed: $(tail -1 "$out/facts.err")"
elif [ $smi = 0 ]; then
	skip "facts vs nvidia-smi: no nvidia-smi (double)"
else
	nvidia-smi -q -x >"$out/smi.xml" 2>"$out/smi.err"
	note "facts: $(json "$out/facts.json" "len(d.get('gpus', []))") GPU(s), sources $(json "$out/facts.json" "sorted(set(g.get('source', 'procfs') for g in d.get('gpus', [])))")"
	if [ ! -x "$HERE/facts-vs-smi.sh" ]; then
		skip "facts vs nvidia-smi: $HERE/facts-vs-smi.sh is not here (the gpu-facts work adds it)"
	elif "$HERE/facts-vs-smi.sh" "$out/facts.json" "$out/smi.xml" >"$out/facts-vs-smi.txt" 2>&1; then
		pass "facts vs nvidia-smi -q -x"
	else
		fail "facts vs nvidia-smi -q -x: $(tail -3 "$out/facts-vs-smi.txt" | tr '\n' ' ')"
	fi
fi

# 2. the GPU check, with its figures
check_args=()
[ $quick = 0 ] || check_args=(--size 4M --repeats 3)
"$AGENT" gpu-check "${check_args[@]}" --json >"$out/gpu-check.json" 2>"$out/gpu-check.err"
rc=$?
if [ "$(json "$out/gpu-check.json" "d.get('ok')" 2>/dev/null)" != True ]; then
	fail "gpu-check did not run (exit $rc): $(tail -1 "$out/gpu-check.err")"
else
	n=$(json "$out/gpu-check.json" "len(d['gpus'])")
	json "$out/gpu-check.json" "'\n'.join('     GPU %d %s %s: H2D %.1f D2H %.1f D2D %.1f GB/s (median of %d); %s' % (g['index'], g['bus_id'], g.get('serial', ''), g['bandwidth']['h2d']['gb_s'], g['bandwidth']['d2h']['gb_s'], g['bandwidth']['d2d']['gb_s'], g['bandwidth']['h2d']['samples'], ', '.join('%s %s' % (c['name'], c['status']) for c in g['checks'])) for g in d['gpus'] if 'h2d' in g['bandwidth'])"
	measured=$(json "$out/gpu-check.json" "sum(1 for g in d['gpus'] if all(g['bandwidth'].get(k, {}).get('gb_s', 0) > 0 for k in ('h2d', 'd2h', 'd2d')))")
	if [ $smi = 1 ] && [ "$n" != "$(grep -c '^GPU ' "$out/smi-L.txt")" ]; then
		fail "gpu-check saw $n GPU(s), nvidia-smi -L lists $(grep -c '^GPU ' "$out/smi-L.txt")"
	elif [ "$measured" != "$n" ]; then
		fail "gpu-check measured $measured of $n GPU(s): $(json "$out/gpu-check.json" "d['failures'][:3]")"
	else
		pass "gpu-check measured every GPU ($n)"
	fi
	# The GPUs' health is the machine's, not the tools': reported, not judged here.
	note "gpu-check verdict: $(json "$out/gpu-check.json" "'passed' if d['passed'] else 'failed: ' + '; '.join(d['failures'][:4])"); not read: $(json "$out/gpu-check.json" "d['summary']['not_read']")"
fi

# 3. dma-buf export
"$BENCH" gpu-info --json >"$out/gpu-info.json" 2>"$out/gpu-info.err"
rc=$?
if ! json "$out/gpu-info.json" "len(d)" >/dev/null 2>&1; then
	fail "gpu-info did not run: $(tail -1 "$out/gpu-info.err")"
else
	json "$out/gpu-info.json" "'\n'.join('     GPU %d %s: DMA_BUF_SUPPORTED %d, GPU_DIRECT_RDMA_SUPPORTED %d, export: %s' % (g['index'], g['bus_id'], g['dmabuf_supported'], g['gpudirect_rdma_supported'], g['dmabuf_export']) for g in d)"
	if [ $rc = 0 ]; then
		pass "dma-buf export of GPU memory (cuMemGetHandleForAddressRange)"
	else
		fail "dma-buf export: $(json "$out/gpu-info.json" "[g['dmabuf_export'] for g in d if g['dmabuf_export'] != 'ok']")"
	fi
fi

# bench_pair NAME SERVER_ARGS -- CLIENT_ARGS: a server in the background, the client against
# 127.0.0.1; both documents in $out/NAME.{srv,cli}.json. 0 when both say ok.
bench_pair() {
	local name=$1 args=() cargs=() srv
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
	shift
	cargs=("$@")
	port=$((port + 1))
	timeout 120 "$BENCH" "${args[@]}" -p "$port" --json >"$out/$name.srv.json" 2>"$out/$name.srv.err" &
	srv=$!
	timeout 120 "$BENCH" "${cargs[@]}" -p "$port" --timeout 20000 --json 127.0.0.1 \
		>"$out/$name.cli.json" 2>"$out/$name.cli.err"
	local crc=$?
	wait "$srv"
	local src=$?
	[ $crc = 0 ] && [ $src = 0 ]
}

# 4. GPU memory over tcp, staged through pinned host memory, every message checked
tcp_tests=("lat -s 65536 -n 2000" "bw -s 1M -n 2000 -q 2")
[ $quick = 0 ] || tcp_tests=("lat -s 4096 -n 200" "bw -s 64K -n 300 -q 2")
for t in "${tcp_tests[@]}"; do
	kind=${t%% *}
	# shellcheck disable=SC2086 # $t splits into arguments on purpose
	if bench_pair "tcp-$kind" $t --mem cuda --check-data -- $t --mem cuda --check-data; then
		f=$out/tcp-$kind.cli.json
		path=$(json "$f" "d['environment']['client'].get('mem_path')")
		checked=$(json "$f" "d['results'][0]['data_check']['checked']")
		if [ "$path" = staged ] && [ "$checked" -gt 0 ]; then
			pass "tcp $kind, --mem cuda --check-data: $(json "$f" "('p50 %.2f us' % d['results'][0]['latency']['p50']) if 'latency' in d['results'][0] else ('%.2f Gb/s' % d['results'][0]['bw']['gbps'])"), $checked messages checked, staged"
		else
			fail "tcp $kind: mem_path $path, $checked messages checked"
		fi
	else
		fail "tcp $kind --mem cuda: $(tail -1 "$out/tcp-$kind.cli.err") / $(tail -1 "$out/tcp-$kind.srv.err")"
	fi
done

# 5. GPU memory over verbs, where there is an RDMA device
dev=$(find /sys/class/infiniband -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort | head -1)
if [ -z "$dev" ]; then
	skip "cuda + verbs: no RDMA device (/sys/class/infiniband is empty)"
else
	for t in "lat --op write -s 8 -n 2000" "bw --op write -s 1M -n 5000 -q 2" "bw --op read -s 1M -n 5000"; do
		kind=${t%% *}
		name=verbs-${kind}-$(echo "$t" | awk '{print $3}')
		# shellcheck disable=SC2086
		if bench_pair "$name" $t --transport verbs -d "$dev" --mem cuda --check-data -- \
			$t --transport verbs -d "$dev" --mem cuda --check-data; then
			f=$out/$name.cli.json
			pass "verbs $t on $dev, --mem cuda --check-data: through $(json "$f" "d['environment']['client']['mem_path']") $(json "$f" "d['environment']['client'].get('mem_note', '')")"
		else
			fail "verbs $t on $dev --mem cuda: $(tail -1 "$out/$name.cli.err")"
		fi
	done
	# Each way alone: which this node offers is a finding, not a failure.
	for g in dmabuf peermem; do
		if bench_pair "verbs-$g" bw --transport verbs -d "$dev" --mem cuda --gpudirect "$g" -s 1M -n 1000 -- \
			bw --transport verbs -d "$dev" --mem cuda --gpudirect "$g" -s 1M -n 1000; then
			note "verbs --gpudirect $g: works ($(json "$out/verbs-$g.cli.json" "'%.1f Gb/s' % d['results'][0]['bw']['gbps']"))"
		else
			note "verbs --gpudirect $g: not available here: $(tail -1 "$out/verbs-$g.cli.err")"
		fi
	done
fi

# 6. the health watchers, once: the GPU watcher and a readiness check
if ! "$AGENT" health-check --help >/dev/null 2>&1; then
	skip "health-check: this railyard-agent has no health-check subcommand"
elif [ $double = 1 ] && [ -z "${RAILYARD_GPU_RUN_NVML_DOUBLE:-}" ]; then
	skip "health-check: on the libcuda double without an NVML double (RAILYARD_GPU_RUN_NVML_DOUBLE)"
else
	hc_env=()
	if [ $double = 1 ]; then
		fx=$HERE/../fixtures/nvml/health
		hc_env=(RAILYARD_NVML_LIBRARY="$RAILYARD_GPU_RUN_NVML_DOUBLE"
			RAILYARD_NVML_DOUBLE_DATA="$fx/hgx-2gpu.txt"
			RAILYARD_NVML_DOUBLE_SERIES="$fx/ecc-uncorrected.jsonl")
	fi
	interval=5000
	[ $quick = 0 ] || interval=1000
	env ${hc_env[@]+"${hc_env[@]}"} "$AGENT" health-check --require gpudirect_rdma --interval-ms $interval \
		--json >"$out/health-check.json" 2>"$out/health-check.err"
	rc=$?
	if [ $rc -gt 1 ] || ! json "$out/health-check.json" "d['version']" >/dev/null 2>&1; then
		fail "health-check did not run (exit $rc): $(tail -1 "$out/health-check.err")"
	else
		note "health-check: $(json "$out/health-check.json" "d['gpu_watcher'].get('note', '')"); $(json "$out/health-check.json" "'%(critical)d critical, %(warning)d warning, %(info)d info' % d['summary']")"
		json "$out/health-check.json" "'\n'.join('     %s %s %s: %s (%s)' % (e['severity'], e['kind'], e['source'], e['what'], e['detail']) for e in d['events'])"
		on=$(json "$out/health-check.json" "d['gpu_watcher']['on']")
		watched=$(json "$out/health-check.json" "d['gpu_watcher'].get('note', '').split(' ')[1] if d['gpu_watcher'].get('note', '').startswith('NVML: ') else -1")
		if [ "$on" != True ]; then
			fail "health-check: the GPU watcher is off: $(json "$out/health-check.json" "d['gpu_watcher'].get('note')")"
		elif [ $double = 1 ]; then
			ecc=$(json "$out/health-check.json" "sum(1 for e in d['events'] if e['source'] == 'gpu1' and e['severity'] == 'critical' and 'uncorrectable ECC' in e['what'])")
			if [ "$ecc" = 1 ]; then
				pass "health-check on the NVML double: the replayed uncorrected ECC error is a critical event"
			else
				fail "health-check on the NVML double: no critical ECC event for gpu1"
			fi
		elif [ $smi = 1 ] && [ "$watched" != "$(grep -c '^GPU ' "$out/smi-L.txt")" ]; then
			fail "health-check watched $watched GPU(s), nvidia-smi -L lists $(grep -c '^GPU ' "$out/smi-L.txt")"
		else
			# The node's health is the machine's: reported above, not judged here.
			pass "health-check: the GPU watcher read $watched GPU(s) twice, $interval ms apart"
		fi
	fi
fi

# 7. collectives through NCCL: railyard-coll under mpirun on this host, one rank per GPU
COLL=$(find_bin railyard-coll) || COLL=''
ncclargs=()
if [ $double = 1 ]; then
	ngpu=${RAILYARD_CUDA_DOUBLE_GPUS:-1}
	[ -z "${RAILYARD_NCCL_DOUBLE:-}" ] || ncclargs=(--nccl-lib "$RAILYARD_NCCL_DOUBLE")
else
	ngpu=$(grep -c '^GPU ' "$out/smi-L.txt" 2>/dev/null || echo 0)
fi
if [ -z "$COLL" ]; then
	skip "collectives: railyard-coll not built (no MPI where it was built)"
elif ! command -v mpirun >/dev/null 2>&1; then
	skip "collectives: no mpirun here (Open MPI: openmpi-bin)"
elif [ $double = 1 ] && [ ${#ncclargs[@]} = 0 ]; then
	skip "collectives: on the libcuda double without the libnccl double (RAILYARD_NCCL_DOUBLE)"
else
	sweep=(--max-bytes 1G)
	[ $quick = 0 ] || sweep=(--max-bytes 1M --iters 5 --warmup 1)
	mpirun --allow-run-as-root --oversubscribe -np "$ngpu" --mca btl self,vader --mca pml ob1 \
		"$COLL" --backend nccl ${ncclargs[@]+"${ncclargs[@]}"} "${sweep[@]}" \
		>"$out/coll-nccl.json" 2>"$out/coll-nccl.err"
	rc=$?
	if [ $rc != 0 ] && grep -q 'cannot load libnccl.so.2' "$out/coll-nccl.err"; then
		skip "collectives: no libnccl.so.2 here"
	elif [ $rc != 0 ] || ! json "$out/coll-nccl.json" "d['version']" >/dev/null 2>&1; then
		fail "collectives: railyard-coll --backend nccl failed (exit $rc): $(grep 'railyard-coll' "$out/coll-nccl.err" | head -2 | tr '\n' ' ')"
	else
		note "collectives: $(json "$out/coll-nccl.json" "d['library']"), $ngpu rank(s); at the largest size: $(json "$out/coll-nccl.json" "', '.join('%s %.1f GB/s busbw (algbw %.1f)' % (r['op'], r['busbw_gbs'], r['algbw_gbs']) for r in d['results'] if r['bytes'] == max(x['bytes'] for x in d['results'] if x['op'] == r['op']))")"
		wrong=$(json "$out/coll-nccl.json" "sum(r['wrong'] for r in d['results'])")
		ops=$(json "$out/coll-nccl.json" "len(set(r['op'] for r in d['results']))")
		if [ "$wrong" = 0 ] && [ "$ops" = 5 ]; then
			pass "collectives through NCCL: 5 ops over the sweep on $ngpu GPU(s), every result exact"
		else
			fail "collectives through NCCL: $wrong wrong elements, $ops of 5 ops"
		fi
	fi
fi

echo "run: $PASS passed, $FAIL failed, $SKIP skipped (documents in $out)"
[ $double = 0 ] || echo "run: on the TEST DOUBLE: the figures are the double's, not a GPU's"
[ $FAIL = 0 ]
