#!/usr/bin/env bash
# Integration: railyard-coll under mpirun on this host, 4 ranks made 2 nodes by RAILYARD_NODE
# (ob1 over shared memory and TCP: no RDMA here). The JSON document: every op at every size,
# nccl-tests' byte counts and bus bandwidth, exact data (wrong 0), the node pair, the CPU
# figures consistent; usage errors; one node (no pairs); the NCCL backend over the libnccl and
# libcuda doubles (tests/doubles/nccl_double.c, tests/gpu/libcuda_double.c), and a node-local
# rank without a GPU refused. That the checker catches bad data is test_coll_math's proof.
. "$(dirname "$0")/lib.sh"

COLL=$BUILD/nodeagent/coll/railyard-coll
[ -x "$COLL" ] || { echo "SKIP: railyard-coll not built (no MPI found: openmpi-bin, libopenmpi-dev)"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
# A sanitizer build: LeakSanitizer would report what Open MPI keeps from MPI_Init and its
# unloaded plugins (stacks it cannot unwind, so not suppressible by name); ASan and UBSan stay
# on. Our leaks are integration_coll_valgrind's business, in a normal build.
if grep -q '^RAILYARD_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
	export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
fi

# mpi NP ARGS...: railyard-coll on NP ranks, two per node n0, n1, ... (stdout $T/out, stderr $T/err)
mpi() {
	local np=$1
	shift
	timeout 150 mpirun --allow-run-as-root --oversubscribe -np "$np" --mca btl self,vader,tcp \
		--mca pml ob1 sh -c 'RAILYARD_NODE=n$((OMPI_COMM_WORLD_RANK / 2)) exec "$0" "$@"' \
		"$COLL" "$@" >"$T/out" 2>"$T/err"
}
SIZES='[256,512,1024,2048,4096,8192,16384,32768,65536,131072,262144]'
# busbw / algbw over 4 ranks (doc/PERFORMANCE.md of NVIDIA/nccl-tests)
FACTOR='def f: {"allreduce": 1.5, "allgather": 0.75, "reducescatter": 0.75, "alltoall": 0.75, "sendrecv": 1}[.];
	def near(a; b): ((a - b) | if . < 0 then -. else . end) <= 1e-6 * ((b | if . < 0 then -. else . end) + 1e-9);'

# Shared between the MPI and the NCCL runs: the whole sweep's figures.
check_sweep() { # check_sweep LABEL
	check "$1: exactly one line on stdout" test "$(wc -l <"$T/out")" = 1
	check "$1: every op at every size, ascending" jqt --argjson s "$SIZES" \
		'([.results[] | .op] | unique) == ["allgather","allreduce","alltoall","reducescatter","sendrecv"]
		and ([.results[] | select(.op == "allreduce") | .bytes] == $s)
		and ([.results[] | select(.op == "allgather") | .bytes] == $s)
		and ([.results[] | select(.op == "reducescatter") | .bytes] == $s)
		and ([.results[] | select(.op == "alltoall") | .bytes] == $s)
		and ([.results[] | select(.op == "sendrecv") | .bytes] == $s)' "$T/out"
	check "$1: count is the buffer (allreduce, sendrecv) or the per-rank split" jqt \
		'all(.results[]; .count == (if .op == "allreduce" or .op == "sendrecv"
			then .bytes / 4 else .bytes / 16 end))' "$T/out"
	check "$1: algbw = bytes / time" jqt "$FACTOR"'all(.results[]; .time_us > 0 and
		near(.algbw_gbs; .bytes / .time_us / 1000))' "$T/out"
	check "$1: busbw = algbw x nccl-tests factor" jqt "$FACTOR"'all(.results[];
		near(.busbw_gbs; .algbw_gbs * (.op | f)))' "$T/out"
	check "$1: every result exact (wrong 0)" jqt 'all(.results[]; .wrong == 0)' "$T/out"
	check "$1: two nodes of two ranks" jqt \
		'.ranks == 4 and .nodes == [{"node": "n0", "ranks": [0, 1]}, {"node": "n1", "ranks": [2, 3]}]' \
		"$T/out"
	check "$1: one node pair, n0 with n1, gbps from its time" jqt \
		'(.pairs | length) == 1 and .pairs[0].a == "n0" and .pairs[0].b == "n1"
		and .pairs[0].bytes == 65536 and .pairs[0].gbps > 0
		and ((.pairs[0].gbps - 65536 * 8 / .pairs[0].time_us / 1000) | fabs) < 1e-6 * .pairs[0].gbps' \
		"$T/out"
	check "$1: bus_gb = sum of bytes x factor x iters" jqt "$FACTOR"'near(.cpu.bus_gb;
		([.results[] | .bytes * (.op | f) * 5] | add) / 1e9)' "$T/out"
	check "$1: CPU figures consistent" jqt "$FACTOR"'.cpu as $c | $c.wall_s > 0
		and $c.ranks_cpu_s > 0 and near($c.cores; $c.ranks_cpu_s / $c.wall_s)
		and near($c.cpu_s_per_gb; $c.ranks_cpu_s / $c.bus_gb) and $c.host_cpu_s >= 0
		and near($c.host_cores; $c.host_cpu_s / $c.wall_s)
		and near($c.host_cpu_s_per_gb; $c.host_cpu_s / $c.bus_gb)' "$T/out"
}

# valgrind (integration_coll_valgrind): every path of ours frees what it took, one rank per node
# (v0, v1) so the pair phase runs; Open MPI's and PMIx's own start-up, thread and finalize
# allocations are suppressed (coll-valgrind.supp), ours are not. The NCCL backend's frees are
# the doubles' checks above (allocations, streams, contexts, communicators left at exit): under
# valgrind the libcuda double's exit outlasts any sensible timeout.
run_valgrind() {
	command -v valgrind >/dev/null || { echo "SKIP: no valgrind"; exit 77; }
	if grep -q '^RAILYARD_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
		echo "SKIP: a sanitizer build"
		exit 77
	fi
	timeout 240 mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self,vader,tcp \
		--mca pml ob1 sh -c 'RAILYARD_NODE=v$OMPI_COMM_WORLD_RANK exec valgrind -q \
		--num-callers=40 --leak-check=full --errors-for-leak-kinds=definite,indirect \
		--error-exitcode=9 --suppressions=/usr/share/openmpi/openmpi-valgrind.supp \
		--suppressions="$0" "$@"' "$SRC/tests/integration/coll-valgrind.supp" \
		"$COLL" --max-bytes 1K --iters 2 --warmup 1 --pair-bytes 1K --pair-iters 2 \
		>"$T/out" 2>"$T/err"
	check "valgrind, MPI backend over 2 nodes: no leak, no error" test $? = 0 || tail -30 "$T/err"
	check "  ... every op ran, exact, and the pair was measured" jqt \
		'(.pairs | length) == 1 and ([.results[].op] | unique | length) == 5
		and all(.results[]; .wrong == 0)' "$T/out"
	finish
}
[ "${2:-}" != valgrind ] || run_valgrind

SWEEP=(--min-bytes 256 --max-bytes 256K --iters 5 --warmup 2 --pair-bytes 64K --pair-iters 3)
mpi 4 "${SWEEP[@]}"
check "MPI sweep over 4 ranks exits 0" test $? = 0 || cat "$T/err"
check "the document names program, backend, library, data" jqt \
	'.program == "railyard-coll" and .version == 1 and .backend == "mpi"
	and (.library | startswith("Open MPI v")) and .dtype == "float" and .redop == "sum"
	and .iters == 5 and .warmup == 2' "$T/out"
check_sweep mpi

mpi 4 --ops allreduce --no-check --min-bytes 1K --max-bytes 4K --iters 2 --warmup 0
check "--no-check: wrong is -1, only the ops asked for" jqt \
	'[.results[] | [.op, .bytes, .wrong]] == [["allreduce",1024,-1],["allreduce",2048,-1],["allreduce",4096,-1]]' \
	"$T/out"
mpi 2 --ops allreduce --min-bytes 8 --max-bytes 8 --iters 2
check "two ranks on one node: no pairs" jqt '.nodes == [{"node": "n0", "ranks": [0, 1]}] and .pairs == []' \
	"$T/out"
mpi 4 --ops allgather,alltoall --min-bytes 8 --max-bytes 128 --iters 2 --pair-bytes 8
check "sizes whose per-rank split is under 16 bytes are left out" jqt \
	'[.results[] | [.op, .bytes]] == [["allgather",64],["allgather",128],["alltoall",64],["alltoall",128]]' \
	"$T/out"

mpi 2 --ops allreduce,broadcast
check "an unknown op: exit 2" test $? = 2
check "  ... naming it" grep -q "railyard-coll: --ops: unknown op 'broadcast'" "$T/err"
mpi 2 --min-bytes 1M --max-bytes 1K
check "--min-bytes over --max-bytes: exit 2" test $? = 2
check "  ... saying so" grep -q "min-bytes 1048576 is over --max-bytes 1024" "$T/err"
mpi 2 --iters 0
check "--iters 0: exit 2" test $? = 2
check "  ... naming the option" grep -q "invalid --iters '0'" "$T/err"
mpi 2 --max-bytes 4Q
check "a size with a bad suffix: exit 2" test $? = 2
check "  ... naming the option" grep -q "invalid --max-bytes '4Q'" "$T/err"
check "and nothing on stdout for them" test ! -s "$T/out"

# NCCL on the doubles: "device" memory is host memory, NCCL is MPI underneath.
if [ -n "${RAILYARD_NCCL_DOUBLE:-}" ] && [ -n "${RAILYARD_CUDA_DOUBLE:-}" ]; then
	export RAILYARD_CUDA_DOUBLE_LEAKCHECK=1
	RAILYARD_CUDA_DOUBLE_GPUS=4 mpi 4 --backend nccl --nccl-lib "$RAILYARD_NCCL_DOUBLE" \
		--cuda-lib "$RAILYARD_CUDA_DOUBLE" "${SWEEP[@]}"
	check "NCCL sweep on the doubles exits 0 (nothing leaked)" test $? = 0 || cat "$T/err"
	check "NCCL: backend and version from ncclGetVersion" jqt \
		'.backend == "nccl" and .library == "NCCL 2.21.5"' "$T/out"
	check_sweep nccl
	RAILYARD_NCCL_DOUBLE_CORRUPT=allreduce RAILYARD_CUDA_DOUBLE_GPUS=4 mpi 4 --backend nccl \
		--nccl-lib "$RAILYARD_NCCL_DOUBLE" --cuda-lib "$RAILYARD_CUDA_DOUBLE" \
		--ops allreduce,allgather --min-bytes 1K --max-bytes 4K --iters 3
	check "a library that corrupts one element: the sweep still exits 0" test $? = 0
	check "  ... and every all-reduce counts exactly that element, nothing else is wrong" jqt \
		'[.results[] | [.op, .wrong]] == [["allreduce",1],["allreduce",1],["allreduce",1],
		["allgather",0],["allgather",0],["allgather",0]]' "$T/out"
	RAILYARD_CUDA_DOUBLE_GPUS=2 mpi 4 --backend nccl --nccl-lib "$RAILYARD_NCCL_DOUBLE" \
		--cuda-lib "$RAILYARD_CUDA_DOUBLE" --ops allreduce --max-bytes 64
	check "NCCL with more ranks than GPUs on a host: exit 1" test $? = 1
	check "  ... naming the rank without a GPU" grep -q "node-local rank 2 has no GPU (2 here)" "$T/err"
	check "  ... and nothing on stdout" test ! -s "$T/out"
	mpi 2 --backend nccl --nccl-lib "$T/no-such-libnccl.so.2" --cuda-lib "$RAILYARD_CUDA_DOUBLE"
	check "NCCL library missing: exit 1" test $? = 1
	check "  ... naming it" grep -q "cannot load $T/no-such-libnccl.so.2" "$T/err"
else
	echo "note: NCCL doubles not built (no libcuda double): NCCL backend not tested here"
fi
finish
