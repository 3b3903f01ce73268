/* The store's deployments (store_deploy.c): a playbook applied to a cluster's nodes in batches,
 * each node's state and the results of its steps. */
#ifndef RAILYARD_CONTROLLER_STORE_DEPLOY_H
#define RAILYARD_CONTROLLER_STORE_DEPLOY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/store/store.h"

/* ---- Deployments (schema v3) ---------------------------------------------------------------
 * A deployment applies one playbook to the nodes of one cluster in batches. Deployment states:
 * pending -> running -> succeeded | partial (finished with tolerated failures) | failed (stopped,
 * reason says why) | cancelled (v10: a cancel was requested; the nodes it had not sent to are
 * skipped, those running their plan finish it). Node states: waiting -> sent -> succeeded | failed
 * | unreachable, or skipped (never sent because the rollout stopped). */

/* What a new deployment records; all strings borrowed. */
struct store_deployment_new {
	const char *id, *cluster, *actor;
	const char *playbook_name, *playbook_version, *playbook_sha256, *playbook_text;
	const char *policy_json; /* the rollout policy as applied, for display and resume */
	bool check_mode;
};

/* One target node with its batch (0 = first). Strings borrowed. */
struct store_deploy_target {
	const char *node_id, *hostname;
	int batch;
};

struct store_deployment {
	char *id, *cluster, *playbook_name, *playbook_version, *playbook_sha256;
	char *policy_json, *state, *reason; /* reason NULL unless set */
	char *actor;			    /* who made it ("" before v10) */
	bool check_mode;
	int current_batch;
	int64_t created_at_ms, finished_at_ms; /* finished 0 while not finished */
	int64_t cancel_requested_ms;	       /* 0: no cancel requested */
};

struct store_deploy_node {
	char *node_id, *hostname, *state, *message; /* message may be NULL */
	int batch, ok, changed, failed, skipped;
	int64_t sent_at_ms, finished_at_ms;
	/* A reboot under way (its plan's `reboot` step, reported by the node): the step, or -1;
	 * since when (the controller's clock). reboot_ms: how long the last one took, from the
	 * node's "rebooting" to that step's result (-1: none). */
	int reboot_step;
	char *reboot_name; /* that step's name, as the node said it (NULL: none) */
	int64_t reboot_since_ms, reboot_ms;
};

struct store_step_result {
	char *node_id; /* set by store_step_results(); ignored by store_step_result_put() */
	char *name, *status, *diff, *message; /* status: ok, changed, failed, skipped */
	int idx;
	int64_t duration_ms;
	int64_t at_ms; /* when the controller took the report (a reboot's end); 0: now */
};

/* Store the playbook (deduplicated by SHA-256), the deployment (pending) and its nodes
 * (waiting) in one transaction, with an audit row. -RY_E_NOT_FOUND for an unknown cluster,
 * -EINVAL for a missing or over-long field; nothing is stored on any error. */
STORE_WUR int store_deployment_create(struct store *s, const struct store_deployment_new *d,
				      const struct store_deploy_target *targets, size_t n,
				      int64_t now_ms);
STORE_WUR int store_deployment_get(struct store *s, const char *id, struct store_deployment **ret);
void store_deployment_free(struct store_deployment *d);
/* active_only: pending and running, oldest first; otherwise the newest `limit` (0: 50). */
STORE_WUR int store_deployments_list(struct store *s, bool active_only, size_t limit,
				     struct store_deployment ***ret, size_t *ret_n);
void store_deployments_free(struct store_deployment **v, size_t n);
/* Ask the rollout to cancel a pending or running deployment (audited as actor). 1 requested (or
 * already), 0 it has ended, -RY_E_NOT_FOUND. */
STORE_WUR int store_deployment_request_cancel(struct store *s, const char *id, const char *actor,
					      int64_t now_ms);
/* The exact playbook text of a deployment (caller frees). */
STORE_WUR int store_deployment_playbook_text(struct store *s, const char *id, char **ret_text);
/* Set state, reason (NULL keeps it) and current batch; a final state stamps finished_at. */
STORE_WUR int store_deployment_update(struct store *s, const char *id, const char *state,
				      const char *reason, int current_batch, int64_t now_ms);
/* The deployment's nodes ordered by batch, hostname (caller frees with
 * store_deploy_nodes_free()). */
STORE_WUR int store_deploy_nodes(struct store *s, const char *id, struct store_deploy_node **ret,
				 size_t *ret_n);
void store_deploy_nodes_free(struct store_deploy_node *v, size_t n);
/* How a deployment's nodes stand, counted by the database (no row leaves it): all batches, and
 * the batch `batch`. */
struct store_deploy_counts {
	size_t total, failed_total, sent_total; /* failed: failed or unreachable */
	int last_batch;
	size_t waiting, sent, failed; /* in `batch` */
};
STORE_WUR int store_deploy_counts(struct store *s, const char *id, int batch,
				  struct store_deploy_counts *ret);
/* The deployment's nodes in state, of batch (-1: any), sent before sent_before_ms (0: any),
 * ordered by batch, hostname (caller frees with store_deploy_nodes_free()). */
STORE_WUR int store_deploy_nodes_in(struct store *s, const char *id, const char *state, int batch,
				    int64_t sent_before_ms, struct store_deploy_node **ret,
				    size_t *ret_n);
/* One node of a deployment (caller frees with store_deploy_nodes_free(*ret, 1));
 * -RY_E_NOT_FOUND when it is not part of it. */
STORE_WUR int store_deploy_node_get(struct store *s, const char *id, const char *node_id,
				    struct store_deploy_node **ret);
/* Every node still waiting becomes skipped with message; returns how many. */
STORE_WUR int store_deploy_nodes_skip_waiting(struct store *s, const char *id, const char *message,
					      int64_t now_ms);
/* store_deploy_node_sent() for n nodes in one transaction: ret_moved[i] says whether node i
 * was waiting (and is sent now). Nothing is stored on an error. */
STORE_WUR int store_deploy_nodes_sent(struct store *s, const char *id, const char *const *node_ids,
				      const int *plan_steps, size_t n, int64_t now_ms,
				      bool *ret_moved);
/* Move a node that has not finished to state with counts {ok, changed, failed, skipped} (NULL:
 * zeros) and message (NULL keeps it). Returns 1 when it moved, 0 when the node had already
 * finished (late or repeated reports change nothing). */
STORE_WUR int store_deploy_node_update(struct store *s, const char *id, const char *node_id,
				       const char *state, const char *message, const int counts[4],
				       int64_t now_ms);
/* What a report from a node did (store_report_step(), store_report_apply_done()). */
enum store_report {
	STORE_REPORT_STORED = 1,    /* new: stored */
	STORE_REPORT_DUPLICATE = 2, /* the same report again (a re-send after a reconnect): no-op */
};

/* The plan was sent to the node (state waiting -> sent, sent_at = now_ms), with plan_steps
 * steps: the step indexes it may report. 1 when it moved, 0 when the node was not waiting. */
STORE_WUR int store_deploy_node_sent(struct store *s, const char *id, const char *node_id,
				     int plan_steps, int64_t now_ms);

/* A node reports one step of deployment id, in one transaction. Accepted only when the node is
 * one the deployment was sent to (state 'sent') and res->idx is a step of that plan; a step is
 * stored once: the same report again is STORE_REPORT_DUPLICATE (also after the node finished),
 * a different one is refused. Beyond RY_PROTO_RESULT_BYTES_MAX of diffs and messages per node
 * the diff is replaced by a note. Refusals return -RY_E_REFUSED with the reason in why (nothing
 * stored). -RY_E_INVALID for an unknown status; database errors as usual (nothing stored). */
STORE_WUR int store_report_step(struct store *s, const char *id, const char *node_id,
				const struct store_step_result *res, char *why, size_t whylen);

/* A node reports that step idx of its plan reboots it now: stored as the node's reboot under
 * way (since now_ms) until that step's result comes (store_report_step() then keeps the
 * reboot's duration). Accepted only from a node the plan was sent to and still running there,
 * for a step of that plan without a result; the same notice again, or one after the step's
 * result, is STORE_REPORT_DUPLICATE; -RY_E_REFUSED with why otherwise (nothing stored). */
STORE_WUR int store_report_rebooting(struct store *s, const char *id, const char *node_id, int idx,
				     const char *name, int64_t now_ms, char *why, size_t whylen);
/* The nodes of a deployment still running with a reboot under way (caller frees with
 * store_deploy_nodes_free()). */
STORE_WUR int store_deploy_nodes_rebooting(struct store *s, const char *id,
					   struct store_deploy_node **ret, size_t *ret_n);

/* A node reports the end of its plan (state succeeded or failed, counts {ok, changed, failed,
 * skipped}, message may be NULL), in one transaction. Accepted only from a node the plan was
 * sent to and still running there, when its step results are all stored and the counts and
 * status agree with them (a plan the agent refused outright: failed, no steps, zero counts).
 * The same end again after it was stored is STORE_REPORT_DUPLICATE; anything else is
 * -RY_E_REFUSED with the reason in why. */
STORE_WUR int store_report_apply_done(struct store *s, const char *id, const char *node_id,
				      const char *state, const char *message, const int counts[4],
				      int64_t now_ms, char *why, size_t whylen);

/* All step results of a deployment ordered by node, index (caller frees). */
STORE_WUR int store_step_results(struct store *s, const char *id, struct store_step_result **ret,
				 size_t *ret_n);
void store_step_results_free(struct store_step_result *v, size_t n);

#endif
