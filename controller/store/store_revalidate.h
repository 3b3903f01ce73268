/* The store's revalidations (store_revalidate.c): a signed-off cluster configured and validated
 * again, compared with its baseline. */
#ifndef RAILYARD_CONTROLLER_STORE_REVALIDATE_H
#define RAILYARD_CONTROLLER_STORE_REVALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/store/store.h"

/* ---- Revalidations (schema v10) ---------------------------------------------------------------
 * A revalidation runs in the serving controller: pending -> configuring (a deployment of the
 * playbook, check mode unless apply) -> validating (the baseline's campaign again, signed and
 * compared with the baseline) -> signed (signoff_id, verdict) | failed (reason) | cancelled. */
struct store_revalidation_new {
	const char *id, *cluster, *baseline_id, *actor;
	const char *playbook;	 /* the playbook to check or apply; NULL: the baseline's */
	const char *checks_json; /* v13: the configuration plan, [{playbook, deployment: null}] */
	bool apply;
	double tolerance_bw_pct, tolerance_lat_pct; /* >= 0; 0: the playbook's or default */
};

struct store_revalidation {
	char *id, *cluster, *baseline_id, *playbook, *state, *actor;
	char *reason, *deployment_id, *campaign_id, *signoff_id, *verdict; /* NULL until set */
	char *checks_json; /* v13: [{playbook, deployment}]; NULL for one from before v13 */
	bool apply;
	double tolerance_bw_pct, tolerance_lat_pct;
	int64_t cancel_requested_ms, created_at_ms, finished_at_ms; /* 0: not (yet) */
};

/* Is this revalidation state final (signed, failed, cancelled)? */
bool store_revalidation_state_final(const char *state);
/* Store a pending revalidation with an audit row, in one transaction. -RY_E_NOT_FOUND for an
 * unknown cluster or a baseline that is not a sign-off of that cluster; -EINVAL for a missing or
 * over-long field; nothing is stored on any error. */
STORE_WUR int store_revalidation_create(struct store *s, const struct store_revalidation_new *n,
					int64_t now_ms);
STORE_WUR int store_revalidation_get(struct store *s, const char *id,
				     struct store_revalidation **ret);
/* active_only: those not ended, oldest first; otherwise the newest `limit` (0: 50). */
STORE_WUR int store_revalidations_list(struct store *s, bool active_only, size_t limit,
				       struct store_revalidation ***ret, size_t *ret_n);
void store_revalidation_free(struct store_revalidation *v);
void store_revalidations_free(struct store_revalidation **v, size_t n);
/* Move a revalidation that has not ended to u->state; u's reason, deployment_id, campaign_id,
 * signoff_id, verdict and checks_json are set when not NULL. A final state stamps finished_at. 1
 * moved, 0 it had ended. */
STORE_WUR int store_revalidation_update(struct store *s, const char *id,
					const struct store_revalidation *u, int64_t now_ms);
/* Ask for a cancel (audited as actor): 1 requested (or already), 0 it has ended,
 * -RY_E_NOT_FOUND. */
STORE_WUR int store_revalidation_request_cancel(struct store *s, const char *id, const char *actor,
						int64_t now_ms);

#endif
