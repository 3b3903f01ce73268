/* Collective tests of a campaign (docs/campaigns.md, "Collectives"): one job over every selected
 * node, launched by the first through the agents (no SSH), measured by railyard-coll
 * (docs/bench.md, "Collectives"). Pure: no store, no clock. */
#ifndef RAILYARD_CONTROLLER_CAMPAIGN_COLL_H
#define RAILYARD_CONTROLLER_CAMPAIGN_COLL_H

#include <jansson.h>
#include <stddef.h>

/* The job's pairwise probe (railyard-coll --pair-bytes, --pair-iters). */
#define CP_COLL_PAIR_BYTES (4 << 20)
#define CP_COLL_PAIR_ITERS 10
/* A node stands out as the slow one when the median of its pairs is below this share of the
 * median of the pairs without it. */
#define CP_COLL_SLOW_RATIO 0.8

struct cp_coll_host {
	const char *node, *host; /* node id, host name (borrowed) */
};

/* nccl-tests' bus bandwidth factor of op over n ranks (doc/PERFORMANCE.md): allreduce
 * 2(n-1)/n, allgather, reducescatter and alltoall (n-1)/n, sendrecv 1; NaN for another op. */
double cp_coll_busbw_factor(const char *op, size_t n);

/* The parameters of the job of a collective test (the playbook's normalized test) over hosts
 * (the first launches), as a benchmark run of kind "collective" carries them, without its job
 * token (the run's owner adds it). New reference; NULL on allocation failure. */
json_t *cp_coll_params(const json_t *test, const char *transport, const struct cp_coll_host *hosts,
		       size_t n);

/* The same with hosts as the JSON array [{node, host}] (borrowed). */
json_t *cp_coll_params_hosts(const json_t *test, const char *transport, const json_t *hosts);

/* The launcher's report doc (BenchResult of the run) checked against the job's params and the
 * campaign's node entries (rails for the link ceilings): 0 plausible, 1 not (why says the first
 * problem), -EINVAL. The launcher is the only reporter: a finding is about it. */
__attribute__((warn_unused_result)) int cp_coll_evidence(const json_t *doc, const json_t *params,
							 const json_t *nodes, char *why,
							 size_t len);

/* The node a slow collective is attributed to: *ret the index into hosts of the node whose pairs
 * (median) are below CP_COLL_SLOW_RATIO of the pairs without it, the lowest such ratio; -1 when
 * none stands out or the job has 2 nodes. why says which, in words. -ENOMEM. */
__attribute__((warn_unused_result)) int cp_coll_slowest(const json_t *coll, const json_t *hosts,
							int *ret, char *why, size_t len);

/* A checked report's summary (docs/campaigns.md, "Results"): {metrics: {busbw_gbs, algbw_gbs,
 * avg_busbw_gbs, lat_us, OP_busbw_gbs, OP_lat_us, wrong, pair_min_gbps, cpu_cores, cpu_s_per_gb,
 * host_cpu_s_per_gb}, counters: {}, counters_unknown: {}, coll: {slowest: NODE_ID|null, why,
 * library, ranks}}. New reference; NULL on allocation failure. */
json_t *cp_coll_summary(const json_t *doc, const json_t *params);

#endif
