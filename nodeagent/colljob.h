/* A collective benchmark run on its launcher node (kind "collective", docs/bench.md "Collective
 * runs"): mpirun without a shell, in its own process group, its daemons launched through the
 * agents (nodeagent/launch.h), the benchmark program's rank 0 document collected as the result. */
#ifndef RAILYARD_AGENT_COLLJOB_H
#define RAILYARD_AGENT_COLLJOB_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct agent_launch;

/* What the agent was configured with (borrowed; NULL: the defaults). */
struct agent_coll_conf {
	const char *mpirun;	     /* /usr/bin/mpirun */
	const char *coll_program;    /* railyard-coll beside the agent */
	const char *sock_path;	     /* <state dir>/launch.sock */
	struct agent_launch *launch; /* counts the daemons launched */
};

/* Run the collective of params (a RunBench's params_json, parsed; borrowed) for bench_id, until
 * it ends, deadline_ms passes or *cancel is set. Always sets *ret_result (the result document of
 * docs/bench.md, ok or with "error"); returns true when ok (mpirun exited 0 and rank 0's
 * document parsed). */
bool agent_coll_run(const struct agent_coll_conf *conf, const char *bench_id, const json_t *params,
		    uint32_t deadline_ms, atomic_bool *cancel, json_t **ret_result);

/* nccl-tests' all_reduce_perf output (its text table) as a railyard-coll document (docs/bench.md
 * "Launching collectives without SSH"): one "allreduce" row per size line with the out-of-place
 * figures (size, count, time, algbw, busbw, #wrong; "N/A" wrong is -1), "ranks" from its
 * "#  Rank" lines. 0 with *ret (new reference), or -RY_E_INVALID when no size line was found. */
__attribute__((warn_unused_result)) int agent_nccl_tests_parse(const char *text, json_t **ret);

#endif
