/* Internals of the sign-off service: the report built from the store (report.c) and the
 * service around it (signoff.c). */
#ifndef RAILYARD_SIGNOFF_INT_H
#define RAILYARD_SIGNOFF_INT_H

#include "controller/signoff/canon.h"
#include "controller/signoff/signoff.h"
#include "controller/store/store.h"
#include "controller/store/store_campaign.h"
#include "controller/store/store_signoff.h"

/* Deployments listed per report, at most (the newest first, then one per playbook). */
#define SO_DEPLOYMENTS_SCANNED 1000

/* The report of campaign m (ended: passed or failed), as id, created at now_ms; baseline (with
 * its report bytes) NULL unless a revalidation. *ret new reference. Errors into err. */
__attribute__((warn_unused_result)) int
so_report_build(struct store *st, const struct store_campaign *m, const char *ca_fingerprint,
		const struct store_signoff *baseline, const char *id, int64_t now_ms, json_t **ret,
		struct ctl_error *err);

#endif
