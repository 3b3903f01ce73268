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
struct ctl_bench_created;

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

/* A collective benchmark over several nodes (kind "collective", docs/bench.md "Collective
 * runs"); strings borrowed. */
struct ctl_coll_request {
	const char *const *nodes; /* ids or host names, in rank order; the first launches */
	size_t n_nodes;		  /* 2..CTL_COLL_NODES_MAX */
	const char *transport;	  /* "verbs"|"tcp" */
	const char *backend;	  /* "mpi"|"nccl"; NULL: "mpi" */
	const char *ops;	  /* comma-separated; NULL: all five */
	int64_t ranks_per_node;	  /* 0: 1 */
	int64_t min_bytes, max_bytes, iters, warmup, pair_bytes, pair_iters; /* 0: defaults */
	/* (warmup -1: none) */
	const char *nccl_tests; /* all_reduce_perf's path (backend nccl); NULL: none */
	int64_t timeout_ms;	/* the whole run */
	const char *cluster;	/* NULL, or the cluster every node must belong to */
	const char *actor;	/* who orders it (audited); NULL: "admin" */
};

#define CTL_COLL_NODES_MAX 256
/* Where the playbooks' mpi, ucx and nccl steps write their settings (playbooks/). */
#define CTL_COLL_MPI_SETTINGS  "/etc/openmpi/openmpi-mca-params.conf"
#define CTL_COLL_UCX_SETTINGS  "/etc/ucx/ucx.conf"
#define CTL_COLL_NCCL_SETTINGS "/etc/nccl.conf"
#define CTL_COLL_RANKS_MAX     64

/* The params document of a collective run (docs/bench.md "Collective runs", with a fresh
 * job_token) for rq, its nodes resolved and checked (known, of one cluster, distinct), and the
 * launcher's node id (the first node) in ret_launcher. The campaign's collective test calls it
 * too. Errors name the field (CTL_ERR_INVALID, CTL_ERR_NOT_FOUND). *ret_params: new reference. */
__attribute__((warn_unused_result)) int
ctl_bench_collective_params(struct store *st, const struct ctl_coll_request *rq,
			    json_t **ret_params, char ret_launcher[64], struct ctl_error *err);
/* Add a fresh one-time job token (256 bits, hex) to a collective run's params: 0, -ENOMEM, or
 * the random source's error. */
__attribute__((warn_unused_result)) int ctl_bench_add_job_token(json_t *params);
/* Store a pending collective run (client = server = the launcher). */
__attribute__((warn_unused_result)) int
ctl_bench_create_collective(struct store *st, const struct ctl_coll_request *rq,
			    struct ctl_bench_created *ret, struct ctl_error *err);
/* Remove what a bench run's params hold that never leaves the controller (job_token) from a
 * params object (borrowed, changed in place; NULL is fine). */
void ctl_bench_params_redact(json_t *params);

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

/* The launch relay of collective runs (controller/bench/launch.c): LaunchRequest from a run's
 * launcher, checked and passed on to the target as LaunchOrder; LaunchStatus back as LaunchReply.
 * Registered by ctl_bench_register(). */
__attribute__((warn_unused_result)) int ctl_launch_register(struct ctl_engine *e);
/* A collective run ended: forget its launched hosts (the launch state is in memory). */
void ctl_launch_forget(const char *bench_id);
/* How many daemons the controller ordered for run bench_id (in memory: 0 after a controller
 * restart or ctl_launch_forget()): what a launcher's "launch.daemons" may claim at most.
 * Thread-safe. */
unsigned ctl_launch_count(const char *bench_id);

/* Register the pass and the handlers with the engine, before it starts. */
__attribute__((warn_unused_result)) int ctl_bench_register(struct ctl_server *srv,
							   struct ctl_engine *e);

#endif
