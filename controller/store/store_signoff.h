/* The store's sign-off reports (store_signoff.c): the signed bytes and their signature, at most
 * one per campaign. */
#ifndef RAILYARD_CONTROLLER_STORE_SIGNOFF_H
#define RAILYARD_CONTROLLER_STORE_SIGNOFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/store/store.h"

/* ---- Sign-off reports (schema v8) ------------------------------------------------------------
 * A sign-off is the exact JSON bytes that were signed (docs/signoff.md) and the detached CMS
 * signature over them (PEM); at most one per campaign. */
struct store_signoff_new {
	const char *id, *cluster, *campaign_id, *kind, *baseline_id; /* baseline_id may be NULL */
	const char *verdict, *sha256, *report, *signature, *actor;
	size_t report_len;	/* report's bytes (it holds no NUL) */
	const char *nodes_json; /* the report's nodes: [{id, hostname, snapshot}] */
	bool acceptance;	/* an acceptance sign-off, not a smoke / baseline report (v14) */
	int excluded;		/* nodes its verdict excluded (v14) */
};

struct store_signoff {
	char *id, *cluster, *campaign_id, *kind, *baseline_id, *verdict, *sha256, *actor;
	char *nodes_json;
	char *report, *signature; /* NULL unless asked for (store_signoff_get(..., true, ...)) */
	size_t report_len;
	int64_t created_at_ms;
	bool acceptance; /* v14; false for reports signed before */
	int excluded;
};

/* Store a sign-off with an audit row, in one transaction. -RY_E_EXISTS when the campaign has one
 * already (nothing stored), -RY_E_NOT_FOUND for an unknown cluster or campaign, -EINVAL for a
 * missing or over-long field. */
STORE_WUR int store_signoff_create(struct store *s, const struct store_signoff_new *n,
				   int64_t now_ms);
/* One sign-off by id, with the report and signature when with_bytes. -RY_E_NOT_FOUND. */
STORE_WUR int store_signoff_get(struct store *s, const char *id, bool with_bytes,
				struct store_signoff **ret);
/* The sign-off of a campaign (without bytes). -RY_E_NOT_FOUND when it has none. */
STORE_WUR int store_signoff_of_campaign(struct store *s, const char *campaign_id,
					struct store_signoff **ret);
/* The newest sign-offs (cluster NULL: of every cluster; limit 0: 50), newest first, without
 * bytes. */
STORE_WUR int store_signoffs_list(struct store *s, const char *cluster, size_t limit,
				  struct store_signoff ***ret, size_t *ret_n);
void store_signoff_free(struct store_signoff *so);
void store_signoffs_free(struct store_signoff **v, size_t n);

#endif
