/* Revalidation (docs/signoff.md): check (or apply) a cluster's configuration, rerun the campaign
 * of a baseline sign-off with the same tests, nodes, transport and seed, and sign a report
 * compared with the baseline. The service stores the request and returns data; the serving
 * controller's engine pass drives it: pending -> configuring (a deployment) -> validating (a
 * campaign) -> signed | failed | cancelled. Every part is an ordinary deployment, campaign and
 * sign-off, listed and followed as such. */
#ifndef RAILYARD_CONTROLLER_REVALIDATE_H
#define RAILYARD_CONTROLLER_REVALIDATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "controller/service.h"
#include "controller/store/store.h"

struct ctl_server;
struct ctl_engine;

/* A revalidation to start; every pointer borrowed. */
struct ctl_revalidate_request {
	const char *cluster;
	const char *baseline;	   /* a sign-off of that cluster */
	const char *playbook_text; /* the configuration to check or apply; NULL: the baseline's */
	size_t playbook_len;
	const char *playbook_file; /* its name in diagnostics */
	bool apply;		   /* apply the playbook (otherwise check mode: nothing changes) */
	double tolerance_bw_pct;   /* 0: the playbook's (or the default); else (0, 1000] */
	double tolerance_lat_pct;
	const char *actor; /* for the audit log, and whose parts they are */
};

/* Validate and store a revalidation for the serving controller; nothing is stored on error.
 * Errors (err filled): an unknown cluster or a baseline that is not one of its sign-offs
 * (CTL_ERR_NOT_FOUND, field cluster / baseline), a baseline whose playbook is gone
 * (CTL_ERR_CONFLICT), a playbook that does not parse or targets another cluster
 * (CTL_ERR_PLAYBOOK / CTL_ERR_INVALID), a tolerance out of range (CTL_ERR_INVALID), the store.
 * *ret: the revalidation as ctl_revalidate_get() gives it. */
__attribute__((warn_unused_result)) int
ctl_revalidate_create(struct store *st, const struct ctl_revalidate_request *rq, json_t **ret,
		      struct ctl_error *err);
/* One revalidation: {id, cluster, baseline, apply, custom_playbook, tolerance_bw_pct,
 * tolerance_lat_pct, state, reason, deployment, campaign, signoff, verdict, actor,
 * created_at_ms, finished_at_ms, cancel_requested_at_ms}. New reference. */
__attribute__((warn_unused_result)) int ctl_revalidate_get(struct store *st, const char *id,
							   json_t **ret, struct ctl_error *err);
/* The newest revalidations (limit 0: 50), newest first. New reference (an array). */
__attribute__((warn_unused_result)) int ctl_revalidate_list(struct store *st, size_t limit,
							    json_t **ret, struct ctl_error *err);
/* Ask the serving controller to cancel a revalidation (and the deployment or campaign it
 * runs): 1 requested, 0 it has ended (CTL_ERR_CONFLICT in err), or an error. */
__attribute__((warn_unused_result)) int
ctl_revalidate_cancel(struct store *st, const char *id, const char *actor, struct ctl_error *err);
/* Is this state final (signed, failed, cancelled)? */
bool ctl_revalidate_state_final(const char *state);

/* The engine pass of a serving controller (before the engine starts); revalidate_pass.c. */
__attribute__((warn_unused_result)) int ctl_revalidate_register(struct ctl_server *srv,
								struct ctl_engine *e);

#endif
