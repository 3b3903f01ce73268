# Guest test (mode single): railyard-bench's verbs transport with GPU memory (--mem cuda) on the
# libcuda TEST DOUBLE (its "device memory" is host memory, so rxe can register it the way
# nvidia-peermem lets a NIC register GPU memory): the real registration code over a real kernel
# RDMA stack. rxe cannot register the double's dma-buf (a memfd, not a dma-buf), so --gpudirect
# auto falls back to peermem and says why, and --gpudirect dmabuf is refused with the reason.
# Latency over write uses write-with-immediate (the CPU does not poll GPU memory); every
# message's data is checked through the double's copies.
set -e
V="--transport verbs"
export RAILYARD_SEAM_LIBCUDA=/opt/railyard/bin/libcuda-double.so
[ -f "$RAILYARD_SEAM_LIBCUDA" ] || { echo "SKIP bench-gpu: the libcuda double is not in the image"; exit 77; }
export RAILYARD_CUDA_DOUBLE_GPUS=2 RAILYARD_CUDA_DOUBLE_LEAKCHECK=1

# mem_path_is NAME PATH: both sides' results say how the GPU memory was registered.
mem_path_is() {
	[ "$(grep -c "\"mem_path\": \"$2\"" "/tmp/$1.json")" = 2 ] ||
		{ cat "/tmp/$1.json"; ry_die "$1: mem_path is not $2 on both sides"; }
}

ry_bench_local gpu_lat_write lat $V --op write -n 200 --mem cuda --check-data
mem_path_is gpu_lat_write peermem
grep -q '"mem_note": "dma-buf not used: ibv_reg_dmabuf_mr' /tmp/gpu_lat_write.json ||
	{ cat /tmp/gpu_lat_write.json; ry_die "gpu_lat_write: the fallback is not explained"; }
grep -q '"inline_size": 0' /tmp/gpu_lat_write.json || ry_die "gpu_lat_write: inline with GPU memory"
ry_bench_local gpu_lat_send lat $V --op send -n 200 --mem cuda:1 --gpudirect peermem --check-data
mem_path_is gpu_lat_send peermem
grep -q '"bus_id": "0000:28:00.0"' /tmp/gpu_lat_send.json || ry_die "gpu_lat_send: not GPU 1"
ry_bench_local gpu_lat_read lat $V --op read -n 200 --mem cuda --check-data
ry_bench_local gpu_bw_write bw $V --op write -s 65536 -n 300 -q 2 --mem cuda --check-data
ry_bench_local gpu_bw_read bw $V --op read -s 65536 -n 300 --mem cuda --check-data
ry_bench_local gpu_bw_send bw $V --op send -s 16384 -n 300 --bidir --mem cuda --check-data
mem_path_is gpu_bw_send peermem
# The server in GPU memory, the client in host memory (memory is local).
ry_bench_next_port
timeout 60 railyard-bench lat $V --op write -n 100 --mem cuda --check-data -p "$RY_BENCH_PORT" \
	--timeout 30000 >/tmp/gpu_mixed.srv 2>&1 &
spid=$!
timeout 60 railyard-bench lat $V --op write -n 100 --check-data -p "$RY_BENCH_PORT" --timeout 30000 \
	--json "$RY_IP" >/tmp/gpu_mixed.json 2>/tmp/gpu_mixed.err || { cat /tmp/gpu_mixed.err; ry_die "gpu_mixed"; }
wait $spid || { cat /tmp/gpu_mixed.srv; ry_die "gpu_mixed: server failed"; }
ry_bench_check gpu_mixed /tmp/gpu_mixed.json --check-data
[ "$(grep -c '"mem_path": "peermem"' /tmp/gpu_mixed.json)" = 1 ] || ry_die "gpu_mixed: one GPU side"
# Forced dma-buf: rxe refuses it, and the run is refused saying so (no fallback).
ry_bench_next_port
timeout 60 railyard-bench lat $V -n 10 --mem cuda --gpudirect dmabuf -p "$RY_BENCH_PORT" \
	--timeout 30000 >/tmp/gpu_dmabuf.srv 2>&1 &
spid=$!
ry_bench_fails gpu_dmabuf "dma-buf registration: ibv_reg_dmabuf_mr" \
	railyard-bench lat $V -n 10 --mem cuda --gpudirect dmabuf -p "$RY_BENCH_PORT" --timeout 30000 "$RY_IP"
! wait $spid || { cat /tmp/gpu_dmabuf.srv; ry_die "gpu_dmabuf: the server did not refuse"; }
ry_bench_fails gpu_nogpu "cuda memory: no GPU 5: this host has 2" \
	railyard-bench lat $V -n 10 --mem cuda:5
ry_log "bench-gpu: all passed"
