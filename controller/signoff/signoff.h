/* Sign-off reports (docs/signoff.md): built from the store after a campaign ended, signed with
 * the controller's sign-off key (a detached CMS signature over the exact JSON bytes), stored,
 * listed, exported with an HTML view and the CA, verified (common/signoff/verify.h, which
 * works offline); revalidation against a
 * baseline (per-metric deltas, configuration drift) and staleness (what changed since). The
 * service returns data and never prints. */
#ifndef RAILYARD_CONTROLLER_SIGNOFF_H
#define RAILYARD_CONTROLLER_SIGNOFF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/signoff/verify.h" /* enum so_verify_status, so_verify_files() */
#include "controller/service.h"
#include "controller/state.h"
#include "controller/store/store.h"

/* Sign the report of an ended campaign and store it. The campaign must have passed or failed
 * (running, cancelled, error: CTL_ERR_CONFLICT with the reason; unknown: CTL_ERR_NOT_FOUND)
 * and have no sign-off yet (CTL_ERR_CONFLICT naming it). A campaign started by `revalidate`
 * (options.baseline) gives a revalidation report against that baseline. *ret: the summary as
 * ctl_signoff_get() gives it. */
__attribute__((warn_unused_result)) int ctl_signoff_create(struct ctl_state *state,
							   const char *campaign_id,
							   const char *actor, json_t **ret,
							   struct ctl_error *err);

/* One sign-off: {id, cluster, campaign, kind, baseline, verdict, sha256, actor, created_at,
 * size, stale, stale_reasons: [...]}; with_report also "report" (the parsed JSON). */
__attribute__((warn_unused_result)) int ctl_signoff_get(struct store *st, const char *id,
							bool with_report, json_t **ret,
							struct ctl_error *err);
/* A stored sign-off's signed bytes, as a front end serves them (signoff.json, signoff.p7s):
 * every member owned, released with ctl_signoff_files_done() (NULL fine). */
struct ctl_signoff_files {
	char *cluster; /* for a scope check */
	char *report;  /* the signed report's bytes (report_len of them) */
	size_t report_len;
	char *signature; /* PEM PKCS#7, detached */
};
/* Read them (CTL_ERR_NOT_FOUND, field id; the store). */
__attribute__((warn_unused_result)) int ctl_signoff_files_get(struct store *st, const char *id,
							      struct ctl_signoff_files *ret,
							      struct ctl_error *err);
void ctl_signoff_files_done(struct ctl_signoff_files *f);
/* The newest sign-offs (cluster NULL: all; limit 0: 50), summaries without staleness. */
__attribute__((warn_unused_result)) int ctl_signoff_list(struct store *st, const char *cluster,
							 size_t limit, json_t **ret,
							 struct ctl_error *err);
/* Write signoff.json, signoff.p7s, signoff.html and ca.pem into dir (created if missing; the
 * four files replaced atomically one by one). *ret: {dir, files: [...], sha256}. */
__attribute__((warn_unused_result)) int ctl_signoff_export(struct ctl_state *state, const char *id,
							   const char *dir, json_t **ret,
							   struct ctl_error *err);

/* Verify a stored sign-off as a customer would: its signed bytes and signature against the
 * controller's CA certificate. *ret: {id, cluster, verified, status, reason, signer, signed_at,
 * kind, verdict, created_at, summary, ...} (as so_verify_bytes()). CTL_ERR_NOT_FOUND. */
__attribute__((warn_unused_result)) int ctl_signoff_verify_stored(struct ctl_state *state,
								  const char *id, json_t **ret,
								  struct ctl_error *err);

/* Staleness of the newest sign-off of each cluster, per node: {CLUSTER: {signoff, stale,
 * reasons: [...], nodes: {HOSTNAME: [reasons]}, covered: [HOSTNAME]}} (a covered node without
 * reasons is current). For `nodes`. */
__attribute__((warn_unused_result)) int ctl_signoff_staleness(struct store *st, json_t **ret,
							      struct ctl_error *err);

/* Load the sign-off certificate and key of a state directory (signoff.pem), creating them when
 * missing (a state directory made before sign-offs). Caller frees both. */
__attribute__((warn_unused_result)) int ctl_signer_load(struct ctl_state *state, X509 **ret_cert,
							EVP_PKEY **ret_key, char *errbuf,
							size_t errlen);

#endif
