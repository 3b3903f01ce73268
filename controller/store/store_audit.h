/* The store's audit log (store_audit.c): one row per change of state, by whom, with what
 * outcome; newest first. */
#ifndef RAILYARD_CONTROLLER_STORE_AUDIT_H
#define RAILYARD_CONTROLLER_STORE_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/store/store.h"

/* Largest audit detail, in bytes. */
#define STORE_AUDIT_DETAIL_MAX (64 * 1024)

/* One audit row; strings owned, freed by store_audit_entries_free(). target and detail may be
 * NULL. */
struct store_audit_entry {
	int64_t at_ms;
	char *actor, *action, *target, *outcome, *detail;
};

/* Append an audit row. actor, action, outcome: required; target, detail: may be NULL (all
 * borrowed). -EINVAL if a required one is NULL, -RY_E_TOO_BIG if detail is over
 * STORE_AUDIT_DETAIL_MAX or another field over STORE_TEXT_MAX, -RY_E_DB. */
int store_audit(struct store *s, int64_t now_ms, const char *actor, const char *action,
		const char *target, const char *outcome, const char *detail);

/* The newest audit rows first (by time, then insertion order), at most limit of them. *ret is
 * a new array of *ret_n entries (NULL when none; free with store_audit_entries_free()).
 * -RY_E_DB, -ENOMEM. */
STORE_WUR int store_audit_list(struct store *s, size_t limit, struct store_audit_entry **ret,
			       size_t *ret_n);

/* Free an array from store_audit_list(). Accepts NULL. */
void store_audit_entries_free(struct store_audit_entry *e, size_t n);

#endif
