/* Internals shared by the campaign service (campaign.c), its engine pass (campaign_pass.c) and
 * plan.c: a stored campaign loaded back (spec, nodes with rails, seed), each test's rounds
 * regenerated from it, the benchmark parameters of a slot, the summary of a finished run, the
 * retests of a test's suspects and the verdict's input built from the result rows. */
#ifndef RAILYARD_CONTROLLER_CAMPAIGN_INT_H
#define RAILYARD_CONTROLLER_CAMPAIGN_INT_H

#include "controller/campaign/campaign.h"
#include "controller/campaign/schedule.h"
#include "controller/campaign/verdict.h"
#include "controller/store/store_bench.h"
#include "controller/store/store_campaign.h"

/* Suspect pairs retested per test, at most (a node failing with most peers needs none). */
#define CP_RETEST_SUSPECTS_MAX 64
/* Rounds of retests per test, at most. */
#define CP_RETEST_ROUNDS_MAX 8
/* Beyond a run's own duration, what its deadline allows (connection, setup, reports). */
#define CP_RUN_SLACK_MS 30000
/* Congestors run this much longer than the victims' measurement; they are stopped once the
 * victims are done. */
#define CP_CONGESTOR_EXTRA_S 30
/* A slot waits this long for a node that is not connected (an agent reconnecting after a
 * controller restart, within its back-off) before it fails as offline. */
#define CP_OFFLINE_GRACE_MS 45000
/* Victims start this long after every congestor is running (its warm-up margin). */
#define CP_CONGESTOR_WARMUP_MS 1000
/* A GPU check's own budget (8 GPUs x 3 directions x the copies), before CP_RUN_SLACK_MS. */
#define CP_GPU_CHECK_MS 120000
/* Failures and unread readings of a GPU check kept in a row's summary; fields of a gpu test. */
#define CP_GPU_LISTED 16
#define CP_GPU_FIELDS 5
/* A bw test's CPU cost fields (plan.c's cp_cpu_fields; docs/campaigns.md, "CPU cost"). */
#define CP_CPU_FIELDS 6
/* A memory spec a campaign gives a side ("cuda:GPU-<uuid>"), NUL included. */
#define BENCH_MEM_SPEC_MAX 64

/* One rail of a node: the RDMA device and its first active port. */
struct cp_rail {
	const char *device; /* borrowed from the campaign's nodes JSON */
	int port;
};

struct cp_node {
	const char *id, *hostname; /* borrowed from the campaign's nodes JSON */
	const json_t *facts;	   /* the node's entry (rails, gpus, gpudirect) */
	struct cp_rail *rails;
	uint32_t nrails;
};

/* A campaign as stored, loaded back. */
struct cp_campaign {
	json_t *spec;  /* {transport, quick, tests, acceptance} */
	json_t *nodes; /* [{id, hostname, rails, gpus, gpudirect}] */
	struct cp_node *v;
	size_t n;
	uint64_t seed;
	const char *transport;
	bool quick;
};

__attribute__((warn_unused_result)) int cp_load(const char *spec_json, const char *nodes_json,
						int64_t seed, struct cp_campaign *ret);
void cp_done(struct cp_campaign *c);
/* Index of the node with this id (binary search over the ids, which are sorted), or -1. */
long cp_node_index(const struct cp_campaign *c, const char *id);
/* The spec's test t, borrowed (NULL out of range); the number of tests. */
const json_t *cp_test(const struct cp_campaign *c, size_t t);
size_t cp_ntests(const struct cp_campaign *c);

enum cp_role { CP_MEASURE, CP_CONGESTOR };

/* One slot of a round: a is the client, b the server (node indexes); rail -1: none. */
struct cp_slot {
	uint32_t a, b;
	int32_t rail;
	uint8_t missing; /* SCHED_MISSING_A | SCHED_MISSING_B */
	uint8_t phase;	 /* enum vd_phase */
	uint8_t role;	 /* enum cp_role */
};

/* A test's rounds: slots[start[k] .. start[k+1]) is round k. */
struct cp_rounds {
	struct cp_slot *slots;
	size_t *start; /* nrounds + 1 entries */
	size_t nrounds, nslots;
	uint64_t seed;	 /* the test's own seed (random-ring, congestion) */
	uint32_t *order; /* ring order (ring, random-ring), else NULL */
	size_t norder;
};

/* Regenerate test t's rounds. Errors: -EINVAL with why (e.g. "incast needs at least 3 nodes;
 * 2 selected"), -ENOMEM. */
__attribute__((warn_unused_result)) int cp_test_rounds(const struct cp_campaign *c, size_t t,
						       struct cp_rounds *ret, char *why,
						       size_t whylen);
void cp_rounds_done(struct cp_rounds *r);

/* A collective's launchers (docs/campaigns.md, "Collectives"): k 0 the job's, the node first by
 * (host name, id); k 1 its retest's, the second. c->n >= 2 for k 1. */
uint32_t cp_coll_launcher(const struct cp_campaign *c, int k);

/* The benchmark of a slot of test t: kind ("lat", "bw", "gpu"), parameters as JSON (new
 * reference; with "sides" for per-side device, port and memory), and its deadline. Errors:
 * -RY_E_NOT_FOUND when the slot cannot run as the test asks (mem: cuda and a side has no GPU
 * for its rail; why says so: the row fails with it), -EINVAL, -ENOMEM. */
__attribute__((warn_unused_result)) int
cp_slot_bench(const struct cp_campaign *c, size_t t, const struct cp_slot *s, const char **ret_kind,
	      json_t **ret_params, int64_t *ret_deadline_ms, char *why, size_t whylen);

/* The summary of a finished run (docs/campaigns.md, "Results"): {metrics, counters,
 * counters_unknown, env}. New reference; NULL on allocation failure. */
json_t *cp_summary(const struct store_bench_run *b);

/* The retest rounds of test t from its rows (its VD_RUN rows all final): JSON
 * [[{"a": i, "b": j, "rail": k}, ...], ...] with node indexes; [] when nothing to retest. */
__attribute__((warn_unused_result)) int cp_retests(const struct cp_campaign *c, size_t t,
						   const struct store_campaign_row *rows, size_t n,
						   json_t **ret);

/* The verdict over every row of the campaign. config: node id -> reasons its configuration
 * fails ("configuration: ..."), may be NULL. */
__attribute__((warn_unused_result)) int cp_verdict(const struct cp_campaign *c,
						   const struct store_campaign_row *rows, size_t n,
						   bool cancelled, const json_t *config,
						   json_t **ret);

/* The progress document's entry of test t: {"rounds": N, "retest": null | rounds}. */
size_t cp_progress_rounds(const json_t *progress, size_t t, bool *ret_retest_known);

#endif
