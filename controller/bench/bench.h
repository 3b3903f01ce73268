/* Benchmark runs between two nodes: the service (order a run, read runs back as JSON, ask for a
 * cancel; returns data, never prints) and, in a serving controller, the engine pass that drives
 * runs from the database and the handlers of the agents' BenchReady/BenchResult. */
#ifndef RAILYARD_CONTROLLER_BENCH_H
#define RAILYARD_CONTROLLER_BENCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "controller/service.h"
#include "controller/store/store.h"

struct ctl_server;
struct ctl_engine;

/* A benchmark to run; strings borrowed. */
struct ctl_bench_request {
	const char *from, *to;	      /* client and server node (id or host name) */
	const char *kind, *transport; /* "lat"|"bw", "tcp"|"verbs" */
	const char *op, *device;      /* NULL: the engine's defaults */
	const char *server_address; /* NULL: the server node's address as the controller sees it */
	int64_t size, iters, duration_s, qps; /* 0: the engine's defaults */
	int64_t gid_index;		      /* -2: not given (-1: choose by type and address) */
	int64_t ib_port, tclass, sl;	      /* -1: not given */
	bool sweep, bidir, check_data, rdma_cm;
	int64_t timeout_ms;  /* the whole run */
	const char *cluster; /* NULL, or the cluster both nodes must belong to */
	const char *actor;   /* who orders it (audited); NULL: "admin" */
};

/* What was stored. */
struct ctl_bench_created {
	char id[20];
	char client_id[64], server_id[64];
	char client_host[256], server_host[256];
};

/* Store a pending run for the serving controller (audited). Errors: an unknown node, or one
 * not of rq->cluster (CTL_ERR_NOT_FOUND, field from/to), the same node twice, nodes of two
 * clusters, a bad kind or transport (CTL_ERR_INVALID), the store. */
__attribute__((warn_unused_result)) int ctl_bench_create(struct store *st,
							 const struct ctl_bench_request *rq,
							 struct ctl_bench_created *ret,
							 struct ctl_error *err);
/* One run as JSON (the document `bench show --json` prints). New reference. */
__attribute__((warn_unused_result)) int ctl_bench_get(struct store *st, const char *id,
						      json_t **ret, struct ctl_error *err);
/* The newest runs (limit 0: 50) as a JSON array, newest first. New reference. */
__attribute__((warn_unused_result)) int ctl_bench_list(struct store *st, size_t limit, json_t **ret,
						       struct ctl_error *err);
/* Is this state final (succeeded, failed, cancelled)? As the store decides it. */
bool ctl_bench_state_final(const char *state);
/* Ask the serving controller to cancel a run: 1 requested (or already), 0 the run has already
 * finished (err says how), or an error (CTL_ERR_NOT_FOUND). */
__attribute__((warn_unused_result)) int ctl_bench_cancel(struct store *st, const char *id,
							 const char *actor, struct ctl_error *err);

/* Register the pass and the handlers with the engine, before it starts. */
__attribute__((warn_unused_result)) int ctl_bench_register(struct ctl_server *srv,
							   struct ctl_engine *e);

#endif
