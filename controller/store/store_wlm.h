/* The workload-manager tables (controller/wlm/wlm.h): each cluster's binding, and the ledger of
 * drains and resumes the controller means to do, written ahead. A row is inserted in the
 * transaction that stores its finding (a campaign's verdict, a deployment node's failure, a
 * maintenance's step) and carried out by the WLM worker: pending -> done | failed | not_ours.
 * A row that is done is never done again; a pending one is carried out after a restart. */
#ifndef RAILYARD_CONTROLLER_STORE_WLM_H
#define RAILYARD_CONTROLLER_STORE_WLM_H

#include "controller/store/store.h"

#include <stdbool.h>
#include <stdint.h>

/* A cluster's binding as stored: the validated document (wlm_binding_json()). */
struct store_wlm_binding {
	char *cluster;
	char *doc_json;
	char *updated_by;
	int64_t updated_at;
};
void store_wlm_binding_free(struct store_wlm_binding *b);

/* Bind cluster (created when missing) with doc_json (validated by the caller), replacing its
 * binding; an audit row by actor in the same transaction. */
STORE_WUR int store_wlm_binding_put(struct store *s, const char *cluster, const char *doc_json,
				    const char *actor, int64_t now_ms);
/* The binding of cluster (reader): -RY_E_NOT_FOUND when unbound. */
STORE_WUR int store_wlm_binding_get(struct store *s, const char *cluster,
				    struct store_wlm_binding **ret);
/* Unbind: 1 removed, 0 was not bound. Pending ledger rows stay (the worker fails them: no
 * binding). Audited. */
STORE_WUR int store_wlm_binding_delete(struct store *s, const char *cluster, const char *actor,
				       int64_t now_ms);
/* Every bound cluster's name (caller frees each and the array). */
STORE_WUR int store_wlm_bound_clusters(struct store *s, char ***ret, size_t *ret_n);

/* A drain or resume the controller means to do. Strings borrowed. */
struct store_wlm_intent {
	const char *cluster;   /* name */
	const char *node_id;   /* the node's id (may be NULL for a host the store does not know) */
	const char *hostname;  /* mapped to the WLM name with the binding's node_map */
	const char *action;    /* "drain" or "resume" */
	const char *source;    /* "campaign", "deployment", "maintenance", "health" */
	const char *source_id; /* the campaign's, deployment's, maintenance's id */
	const char *finding;   /* drain: what was found (fitted into the reason); resume: why */
};

/* Write an intent ahead, in its own transaction: 1 stored, 0 the cluster is not bound (nothing
 * stored), -RY_E_INVALID (a field missing or wrong, or a host name that maps to no legal WLM
 * name: nothing stored), store errors. The reason is fitted here (wlm_reason_fit()) and stored
 * with the row, so what is set on the node is what the ledger says. Inside a transaction of
 * the store's own code, use store_wlm_enqueue_locked() (store_int.h) instead. The caller kicks
 * the worker (ctl_wlm_kick()) after its commit. */
STORE_WUR int store_wlm_enqueue(struct store *s, const struct store_wlm_intent *a, int64_t now_ms);

/* One ledger row. */
struct store_wlm_action {
	int64_t id;
	char *cluster, *node_id, *hostname, *wlm_name, *action, *reason, *source, *source_id;
	char *state;  /* pending, done, failed, not_ours */
	char *result; /* what the WLM said: the admin's reason (not_ours), the error (failed) */
	int attempts;
	int64_t created_at, next_at, done_at; /* done_at 0 while pending */
};
void store_wlm_actions_free(struct store_wlm_action *v, size_t n);

/* The ledger of cluster (NULL: every cluster), newest first, at most limit rows (0: 1000);
 * state NULL: any. Reader. */
STORE_WUR int store_wlm_actions(struct store *s, const char *cluster, const char *state,
				size_t limit, struct store_wlm_action **ret, size_t *ret_n);
/* The rows one source wrote (source "maintenance", its id), oldest first: how far its drains
 * and resumes got. Reader. */
STORE_WUR int store_wlm_actions_by_source(struct store *s, const char *source,
					  const char *source_id, struct store_wlm_action **ret,
					  size_t *ret_n);
/* The pending rows in order of id (the worker's queue), at most limit. */
STORE_WUR int store_wlm_pending(struct store *s, size_t limit, struct store_wlm_action **ret,
				size_t *ret_n);
/* Record what carrying row id out came to: state done, not_ours or failed (final), or pending
 * again with next_at (a retry); result may be NULL. Only a pending row moves: 1 moved, 0 not. */
STORE_WUR int store_wlm_action_result(struct store *s, int64_t id, const char *state,
				      const char *result, int64_t next_at, int64_t now_ms);
/* Is the node's newest finished drain or resume in the ledger a drain that is done (we drained
 * it, and no resume of ours since)? 1 yes, 0 no. For hooks that cannot read a reason. */
STORE_WUR int store_wlm_drained_by_us(struct store *s, const char *cluster, const char *wlm_name);

#endif
