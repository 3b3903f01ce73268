/* The store's maintenances (store_maint.c): a playbook rolled over a cluster that runs jobs, in
 * batches that are drained from the workload manager, configured, validated and handed back.
 * Every transition of a maintenance, its batches and its nodes is stored in one transaction with
 * the workload-manager requests it implies (the drain and resume ledger), so a controller killed
 * at any point resumes from exactly what was stored and never drains or resumes a node twice. */
#ifndef RAILYARD_CONTROLLER_STORE_MAINT_H
#define RAILYARD_CONTROLLER_STORE_MAINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/store/store.h"

/* ---- Maintenances (schema v17) -----------------------------------------------------------
 * Maintenance: pending -> running -> succeeded | failed (reason) | cancelled.
 * Batch: waiting -> draining -> configuring -> validating -> done | failed; skipped (the
 * maintenance stopped before it).
 * Node: waiting -> draining | waiting_for_jobs (jobs: the blocking job ids) -> configuring
 * (rebooting while its deployment's reboot step runs) -> validating -> resumed | held_out
 * (reason; left drained); skipped (its batch never started). */

/* What a new maintenance records; strings borrowed. */
struct store_maint_new {
	const char *id, *cluster, *actor;
	const char *mode;	 /* "deploy" or "revalidate" */
	const char *scope;	 /* the node selector; NULL: the whole cluster */
	const char *playbook;	 /* the exact text applied */
	const char *baseline_id; /* revalidate: the sign-off compared with; NULL otherwise */
	const char *batch;	 /* as asked: "N" or "P%" */
	int batch_size;		 /* nodes per batch, after the min_in_service cap */
	double min_in_service;	 /* [0, 1) */
	int64_t job_timeout_ms;
	bool sign;
};

/* A node of a new maintenance with its batch (0 first). Strings borrowed. */
struct store_maint_target {
	const char *node_id, *hostname;
	int batch;
};

struct store_maint {
	char *id, *cluster, *actor, *mode, *scope, *playbook, *baseline_id, *batch;
	char *state, *reason; /* reason NULL unless set */
	int batch_size, n_batches, current_batch;
	double min_in_service;
	int64_t job_timeout_ms;
	bool sign;
	int64_t cancel_requested_ms, created_at_ms, started_at_ms, finished_at_ms; /* 0: not yet */
};

struct store_maint_batch {
	int batch;
	char *state, *deployment_id, *campaign_id, *signoff_id; /* ids NULL until set */
	int64_t started_at_ms, finished_at_ms;
};

struct store_maint_node {
	char *node_id, *hostname, *state;
	char *reason; /* held_out, skipped: why; NULL otherwise */
	char *jobs;   /* waiting_for_jobs: the blocking job ids, "12,15"; NULL otherwise */
	int batch;
	int64_t since_ms; /* when it entered its state */
};

/* What a node move asks of the workload manager, in the same transaction. */
enum store_maint_wlm { STORE_MAINT_WLM_NONE, STORE_MAINT_WLM_DRAIN, STORE_MAINT_WLM_RESUME };

/* One node's move: from (NULL: any state that has not ended) to to. Strings borrowed. */
struct store_maint_move {
	const char *node_id, *hostname;
	const char *from, *to;
	const char *reason, *jobs; /* stored as given (NULL clears) */
	enum store_maint_wlm wlm;
	const char *wlm_reason; /* the finding the ledger's reason ends with ("railyard:
				   maintenance ID: FINDING", store_wlm.h); resume: why */
	bool moved;		/* out: the move happened (its ledger row was written) */
};

/* One transition, all of it in one transaction; strings borrowed, NULL keeps. */
struct store_maint_step {
	const char *id, *cluster;
	const char *state, *reason; /* the maintenance's; a final state stamps finished_at */
	int current_batch;	    /* -1 keeps */
	int batch;		    /* the batch that moves; -1 none */
	const char *batch_state;
	const char *deployment_id, *campaign_id, *signoff_id;
	bool skip_later; /* every batch after `batch` and its waiting nodes: skipped */
	struct store_maint_move *moves;
	size_t n_moves;
};

bool store_maint_state_final(const char *state);
/* Store a pending maintenance, its batches (0..n_batches-1, waiting) and nodes (waiting), with
 * an audit row, in one transaction. -RY_E_NOT_FOUND: unknown cluster; -RY_E_EXISTS: a
 * maintenance of the cluster has not ended; -EINVAL: a missing or
 * over-long field; nothing is stored on any error. */
STORE_WUR int store_maint_create(struct store *s, const struct store_maint_new *n,
				 const struct store_maint_target *nodes, size_t n_nodes,
				 int n_batches, int64_t now_ms);
STORE_WUR int store_maint_get(struct store *s, const char *id, struct store_maint **ret);
/* active_only: pending and running, oldest first; otherwise the newest `limit` (0: 50). */
STORE_WUR int store_maints_list(struct store *s, bool active_only, size_t limit,
				struct store_maint ***ret, size_t *ret_n);
void store_maint_free(struct store_maint *m);
void store_maints_free(struct store_maint **v, size_t n);
/* Its batches in order / its nodes by batch and host name (caller frees with the _free). */
STORE_WUR int store_maint_batches(struct store *s, const char *id, struct store_maint_batch **ret,
				  size_t *ret_n);
void store_maint_batches_free(struct store_maint_batch *v, size_t n);
STORE_WUR int store_maint_nodes(struct store *s, const char *id, struct store_maint_node **ret,
				size_t *ret_n);
void store_maint_nodes_free(struct store_maint_node *v, size_t n);
/* Apply st to a maintenance that has not ended: its state, the batch's, each node move whose
 * node is in `from` (each with its ledger row), in one transaction. 1 applied, 0 the maintenance
 * had ended (nothing stored), negative error (nothing stored). */
STORE_WUR int store_maint_apply(struct store *s, struct store_maint_step *st, int64_t now_ms);
/* Ask for a cancel (audited as actor): 1 requested (or already), 0 it has ended,
 * -RY_E_NOT_FOUND. */
STORE_WUR int store_maint_request_cancel(struct store *s, const char *id, const char *actor,
					 int64_t now_ms);

#endif
