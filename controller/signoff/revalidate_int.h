/* Internals of revalidation shared by its service (revalidate.c) and its engine pass
 * (revalidate_pass.c). */
#ifndef RAILYARD_CONTROLLER_REVALIDATE_INT_H
#define RAILYARD_CONTROLLER_REVALIDATE_INT_H

#include <jansson.h>

#include "controller/service.h"
#include "controller/store/store.h"

/* The baseline sign-off of cluster: its signed report and its campaign's playbook text (what
 * the pass reruns). *ret_report (new reference) and *ret_text (caller frees) on success.
 * CTL_ERR_NOT_FOUND (field baseline: absent, or another cluster's), CTL_ERR_CONFLICT (its
 * playbook is no longer stored), the store. */
__attribute__((warn_unused_result)) int
ctl_revalidate_baseline(struct store *st, const char *cluster, const char *baseline,
			json_t **ret_report, char **ret_text, struct ctl_error *err);

#endif
