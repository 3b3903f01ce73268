/* The deployment service: create a deployment (validate the playbook, pick the target nodes and
 * their batches, store it for the serving controller's rollout pass), and read deployments
 * back as JSON. Returns data; never prints. Thread-safe over a thread-safe store. */
#ifndef RAILYARD_CONTROLLER_DEPLOY_H
#define RAILYARD_CONTROLLER_DEPLOY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/service.h"
#include "controller/store/store.h"

/* A deployment to create; every pointer borrowed. */
struct ctl_deploy_request {
	const char *cluster;
	const char *playbook_text; /* the playbook exactly as it is stored and hashed */
	size_t playbook_len;
	const char *playbook_file; /* its name in diagnostics (FILE:LINE:COL) */
	const char *batch;	   /* "N" or "P%"; NULL: the playbook's */
	const char *max_fail;	   /* "N" or "P%"; NULL: the playbook's */
	int canary;		   /* -1: the playbook's */
	int64_t pause_ms;	   /* -1: the playbook's */
	bool check;
	const char *nodes; /* a node limit (a selector, docs/campaigns.md): only the targets it
			      takes; NULL: every target */
	const char *actor; /* for the audit log */
	const char *id;	   /* the id to give it ("d-" and 1..16 of [0-9a-f]): a caller that
			      stores it first makes the same one after a restart; NULL: a new one */
};

/* A node of the cluster the deployment does not target, and why. */
struct ctl_deploy_skip {
	char *node_id, *hostname, *reason;
};

/* What was created; release with ctl_deploy_created_done(). */
struct ctl_deploy_created {
	char id[20];
	char *playbook, *version;
	size_t n_targets, n_batches;
	struct ctl_deploy_skip *skipped;
	size_t n_skipped;
};

/* Create a deployment: nothing is stored unless all of it is. Errors (err filled): a playbook
 * that does not parse (CTL_ERR_PLAYBOOK, with every FILE:LINE:COL), one that targets another
 * cluster, a bad batch/max_fail or node limit, a node limit that takes none of the targets
 * (CTL_ERR_INVALID, field set), an id that is malformed (CTL_ERR_INVALID) or taken
 * (CTL_ERR_CONFLICT), an unknown cluster
 * (CTL_ERR_NOT_FOUND), the store (CTL_ERR_UNAVAILABLE / CTL_ERR_INTERNAL). */
__attribute__((warn_unused_result)) int ctl_deploy_create(struct store *st,
							  const struct ctl_deploy_request *rq,
							  struct ctl_deploy_created *ret,
							  struct ctl_error *err);
void ctl_deploy_created_done(struct ctl_deploy_created *c);

/* How much of a deployment ctl_deploy_get() returns. */
enum ctl_deploy_detail {
	CTL_DEPLOY_SUMMARY, /* the deployment */
	CTL_DEPLOY_NODES,   /* and its nodes */
	CTL_DEPLOY_STEPS,   /* and each node's step results */
};

/* One deployment as JSON (the document `deployments ID --json` prints: id, cluster,
 * playbook, version, check_mode, state, reason, policy, current_batch, times; nodes with their
 * state and counts, failed_step {index, name, message, detail} where one failed; steps with status,
 * diff, message, duration). New reference. */
__attribute__((warn_unused_result)) int ctl_deploy_get(struct store *st, const char *id,
						       enum ctl_deploy_detail detail, json_t **ret,
						       struct ctl_error *err);
/* The step each node of a deployment failed at, by node id: {index, name, message (its
 * headline), detail}, only for the nodes that have a failed step (the first one in the plan's
 * order). New reference. */
__attribute__((warn_unused_result)) int ctl_deploy_failed_steps(struct store *st, const char *id,
								json_t **ret);
/* The newest deployments (limit 0: 50), summaries, newest first. New reference (an array). */
__attribute__((warn_unused_result)) int ctl_deploy_list(struct store *st, size_t limit,
							json_t **ret, struct ctl_error *err);
/* Ask the serving controller's rollout to cancel a deployment (audited as actor): nothing more
 * is sent, the plans running finish, then it ends "cancelled". 1 requested (or already), 0 it
 * has ended (err says so, CTL_ERR_CONFLICT), or an error (CTL_ERR_NOT_FOUND, the store). */
__attribute__((warn_unused_result)) int ctl_deploy_cancel(struct store *st, const char *id,
							  const char *actor, struct ctl_error *err);
/* Is this deployment state final (succeeded, partial, failed, cancelled)? */
bool ctl_deploy_state_final(const char *state);

#endif
