/* GPU checks of a node (docs/bench.md, "GPU checks"): per GPU the pinned H2D, D2H and
 * device-to-device copy bandwidth (CUDA events, median of repeats) against minimums, and the
 * health the facts report from NVML: no uncorrectable ECC errors, no pending or failed row
 * remaps, the PCIe link at its maximum generation and width, no hardware-slowdown or thermal
 * clock events, persistence mode on. A reading the facts do not carry is "not read", never a
 * silent pass. Run by `railyard-agent gpu-check` and by a campaign's `gpu` test (RunBench with
 * kind "gpu"). */
#ifndef RAILYARD_AGENT_GPUCHECK_H
#define RAILYARD_AGENT_GPUCHECK_H

#include "nodeagent/bench/cuda.h"
#include "nodeagent/bench/gpubw.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

/* Default minimums, GB/s (1e9 bytes/s). H2D/D2H: the gate of Azure's H200 health check; a real
 * H200 over PCIe Gen5 x16 measured 55.5 (H2D) and 55.3 (D2H). D2D: ours, about three quarters of
 * the 1959 GB/s that H200 measured. Sources: docs/bench.md. */
#define GPU_CHECK_H2D_MIN  48.0
#define GPU_CHECK_D2H_MIN  48.0
#define GPU_CHECK_D2D_MIN  1500.0
#define GPU_CHECK_GPUS_MAX 64

struct gpu_check_opts {
	double h2d_min, d2h_min, d2d_min; /* GB/s; 0 disables that bandwidth check */
	uint64_t size;			  /* bytes per copy */
	uint32_t repeats;		  /* timed copies per direction (median kept) */
	int gpu;			  /* CUDA ordinal; -1: every GPU */
	const atomic_bool *cancel;	  /* may be NULL */
};

/* Defaults: the minimums above, GPUBW_SIZE_DEFAULT, GPUBW_REPEATS_DEFAULT, every GPU. */
void gpu_check_opts_init(struct gpu_check_opts *o);

/* The options of a RunBench with "kind": "gpu" (docs/bench.md): keys kind, gpu, size,
 * repeats, h2d_min_gb_s, d2h_min_gb_s, d2d_min_gb_s; unknown keys, wrong types and values out
 * of bounds are -RY_E_INVALID with the reason in err. o must hold gpu_check_opts_init(). */
__attribute__((warn_unused_result)) int
gpu_check_opts_from_json(const json_t *params, struct gpu_check_opts *o, char *err, size_t errlen);

/* What was measured on one GPU: its CUDA facts, and the bandwidth (r 0) or why not (r < 0,
 * err). */
struct gpu_check_measured {
	struct bench_cuda_devinfo info;
	struct gpubw_result bw;
	int r;
	char err[256];
};

/* Judge measured GPUs m[0..n) against o and facts (a facts_collect() document, borrowed; may be
 * NULL: every reading not read). Pure. The document (new reference; NULL on ENOMEM):
 * {version, ok: true, tool, passed, limits, gpus: [{index, name, bus_id, uuid, serial?,
 * source?, nearest_hca?, bandwidth: {h2d|d2h|d2d: {gb_s, min_gb_s, max_gb_s, samples}},
 * checks: [{name, status: pass|fail|not_read, detail}], passed}], failures: [text],
 * not_read: [text], summary: {gpus, h2d_gb_s, d2h_gb_s, d2d_gb_s (the lowest of the GPUs),
 * checks_failed, not_read}}. A facts GPU that CUDA does not see fails the check (when every GPU
 * was measured). */
json_t *gpu_check_evaluate(const json_t *facts, const struct gpu_check_measured *m, size_t n,
			   const struct gpu_check_opts *o);

/* The whole check: find the GPUs (libcuda; the test seam's double when set), measure each, then
 * read the facts under sysroot (after the copies: an idle GPU may have downtrained its PCIe
 * link) or take facts (borrowed) when not NULL, and judge. *ret: the document (caller frees).
 * Errors (reason in err): bench_cuda_get()'s (-ENOENT no driver, -ENODEV no GPU), -ENODEV (o->gpu
 * not there), -ENOMEM. A failing GPU is a result with passed false, not an error. */
__attribute__((warn_unused_result)) int gpu_check_run(const char *sysroot, const json_t *facts,
						      const struct gpu_check_opts *o, json_t **ret,
						      char *err, size_t errlen);

/* `railyard-agent gpu-check [options]`: argv[0] is "gpu-check". Prints a table (or --json) on
 * out; returns the exit status: 0 passed, 1 failed or could not run (reason on stderr), 2 usage. */
int gpu_check_cmd(int argc, char **argv, FILE *out);

#endif
