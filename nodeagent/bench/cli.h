/* railyard-bench's command line and output, kept in the library so that tests exercise them:
 * argument parsing into bench_params, the perftest-like table, RY-METRIC lines. */
#ifndef RAILYARD_BENCH_CLI_H
#define RAILYARD_BENCH_CLI_H

#include "nodeagent/bench/bench.h"

#include <stdbool.h>
#include <stdio.h>

struct bench_cli {
	struct bench_params params; /* validated */
	const char *peer;	    /* borrowed from argv; NULL: run as server */
	bool json;		    /* --json: one JSON document on stdout */
	bool metrics;		    /* --metrics: "RY-METRIC NAME VALUE UNIT" lines */
	bool help;		    /* -h: print usage, nothing else parsed */
};

/* Parse argv (argv[0] is the program). Uses getopt_long: not thread-safe. On failure writes a
 * one-line reason to err and returns -RY_E_INVALID (usage), -ERANGE or another error of
 * bench_params_validate(). *ret_cli is written only on success. */
__attribute__((warn_unused_result)) int
bench_cli_parse(int argc, char **argv, struct bench_cli *ret_cli, char *err, size_t errlen);

void bench_cli_usage(FILE *f);

/* The result as a perftest-like table (columns compatible with perftest's, extras at the end)
 * with a header naming transport, op, environment and what the latency means. */
void bench_cli_print(FILE *f, const json_t *result);

/* One line per result: "RY-METRIC <op>_<kind>[_<size>] VALUE UNIT", latency as p50 in usec,
 * bandwidth as average MB/sec (2^20 bytes, as perftest prints by default); _<size> only with
 * -a. The forms tests/rdma-vm/guest/lib.sh's ry_perf_check prints for perftest. */
void bench_cli_print_metrics(FILE *f, const json_t *result);

/* `railyard-bench gpu-info [--mem cuda[:GPU]] [--json]` (argv[0] is "gpu-info"): what CUDA says
 * about the GPU (or each GPU) and whether a buffer of it exports as a dma-buf, as a table or
 * JSON on out. Returns the exit status: 0 every GPU exported, 1 one did not or none could be
 * opened (reason on stderr), 2 usage. */
int bench_cli_gpu_info(int argc, char **argv, FILE *out);

#endif
