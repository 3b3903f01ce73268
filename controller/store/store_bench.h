/* The store's benchmark runs (store_bench.c): one run between a client and a server node, its
 * state and the engine's results. */
#ifndef RAILYARD_CONTROLLER_STORE_BENCH_H
#define RAILYARD_CONTROLLER_STORE_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/store/store.h"

/* ---- Benchmark runs (schema v4, cancel v5) --------------------------------------------------
 * States: pending -> server_sent -> server_ready (port known) -> client_sent -> succeeded |
 * failed | cancelled (final). The controller drives them; results are the engine's JSON
 * documents. */
struct store_bench_run {
	char *id, *kind, *transport, *client_node, *server_node, *server_address, *params_json;
	char *campaign_id; /* NULL unless a campaign ordered it (v7) */
	char *actor;	   /* who ordered it; NULL for a campaign's runs and before v10 */
	char *cluster;	   /* the client node's cluster (NULL: the node is gone) */
	char *state, *result_json, *server_result_json, *error; /* NULL until set */
	int server_port;
	int64_t deadline_ms, created_at_ms, finished_at_ms;
	int64_t cancel_requested_ms; /* 0: no cancel requested */
};

/* Is this bench state final (succeeded, failed, cancelled)? */
bool store_bench_state_final(const char *state);

/* Store a pending run (strings borrowed). deadline_ms is the whole run's budget. */
STORE_WUR int store_bench_create(struct store *s, const char *id, const char *kind,
				 const char *transport, const char *client_node,
				 const char *server_node, const char *params_json,
				 int64_t deadline_ms, int64_t now_ms);
/* A benchmark run to store (store_bench_create_new(), store_campaign_row_start()); strings
 * borrowed. */
struct store_bench_new {
	const char *id, *kind, *transport, *client_node, *server_node, *params_json;
	const char *server_address; /* NULL: the server node's address when it is sent */
	int64_t deadline_ms;
	const char *actor; /* who ordered it (audited by store_bench_create_new()); NULL: none */
};
/* As store_bench_create(), with b's server_address (when not NULL) stored in the same write: a
 * serving controller never sees the run without the address it was ordered with. */
STORE_WUR int store_bench_create_new(struct store *s, const struct store_bench_new *b,
				     int64_t now_ms);
STORE_WUR int store_bench_get(struct store *s, const char *id, struct store_bench_run **ret);
void store_bench_run_free(struct store_bench_run *b);
/* active_only: not finished, oldest first; otherwise the newest `limit` (0: 50). */
STORE_WUR int store_bench_list(struct store *s, bool active_only, size_t limit,
			       struct store_bench_run ***ret, size_t *ret_n);
void store_bench_runs_free(struct store_bench_run **v, size_t n);
/* Move a run that has not finished: new state, and any of server_address, server_port (> 0),
 * result_json, server_result_json, error that are set (NULL/0 keep). A final state stamps
 * finished_at. Returns 1 when it moved, 0 when the run had already finished. */
STORE_WUR int store_bench_update(struct store *s, const char *id, const char *state,
				 const char *server_address, int server_port,
				 const char *result_json, const char *server_result_json,
				 const char *error, int64_t now_ms);
/* Ask for a run to be cancelled (the serving controller tells the agents and marks it
 * cancelled), audited as actor (NULL: the controller itself, not audited). 1: requested (or
 * already requested), 0: the run has already finished, -RY_E_NOT_FOUND: no such run. */
STORE_WUR int store_bench_request_cancel(struct store *s, const char *id, const char *actor,
					 int64_t now_ms);

#endif
