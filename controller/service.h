/* What the controller's services (rollout, bench, and next campaigns) share: the error they
 * return, for any front end to show. Services validate, store in one transaction and return
 * data; they never print. The command line prints an error; the REST API sends it as
 * {"error": {"code", "message", "field"}}. */
#ifndef RAILYARD_CONTROLLER_SERVICE_H
#define RAILYARD_CONTROLLER_SERVICE_H

#include <stdbool.h>
#include <stdio.h>

#include "common/playbook/playbook.h"

/* Error codes (ctl_error.code). */
#define CTL_ERR_INVALID		"invalid_argument" /* a field of the request is wrong */
#define CTL_ERR_PLAYBOOK	"invalid_playbook" /* the playbook does not parse or validate */
#define CTL_ERR_NOT_FOUND	"not_found"
#define CTL_ERR_CONFLICT	"conflict"    /* the object is in a state that refuses it */
#define CTL_ERR_UNAVAILABLE	"unavailable" /* the database, for now: try again */
#define CTL_ERR_INTERNAL	"internal"
#define CTL_ERR_UNAUTHENTICATED "unauthenticated" /* a credential that is not valid (now) */

struct ctl_error {
	const char *code;      /* one of CTL_ERR_*; NULL while no error */
	char field[64];	       /* the request field at fault ("" when none) */
	char message[1024];    /* one line for a human */
	struct pb_diags diags; /* with CTL_ERR_PLAYBOOK: every FILE:LINE:COL problem */
};

void ctl_error_init(struct ctl_error *e);
void ctl_error_done(struct ctl_error *e);
/* Fill e (code static; field may be NULL) and return r (a negative error), for
 * `return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "batch", "...")`. */
int ctl_error_set(struct ctl_error *e, int r, const char *code, const char *field, const char *fmt,
		  ...) __attribute__((format(printf, 5, 6)));
/* An error of the store: unavailable (busy, disk full, read-only or failing file system) or
 * internal. */
int ctl_error_store(struct ctl_error *e, int r, const char *what);
/* Is r a store failure that passes (-RY_E_BUSY: another process's lock; -RY_E_DISK_FULL;
 * -EROFS, -EIO: the file system read-only or failing, until it is repaired; -RY_E_DB: any other
 * SQLite failure)? Work that meets one is retried later, not failed for good. */
bool ctl_store_transient(int r);
/* A cluster name: 1-64 of [A-Za-z0-9._-], starting with a letter or digit. */
bool ctl_valid_cluster_name(const char *name);

/* Parse a playbook for cluster: every problem into err's diags (CTL_ERR_PLAYBOOK), a playbook
 * whose target names another cluster refused (CTL_ERR_INVALID, field cluster). *ret (free with
 * playbook_free()) on success. */
__attribute__((warn_unused_result)) int
ctl_playbook_for_cluster(const char *text, size_t len, const char *file, const char *cluster,
			 struct playbook **ret, struct ctl_error *err);

/* A node selector (docs/campaigns.md): comma-separated host names or node ids, globs * ? [..],
 * "!" to exclude. Check one from outside (CTL_ERR_INVALID naming field: empty, a bad item, more
 * than 64 items, an item over 255 bytes). */
__attribute__((warn_unused_result)) int ctl_node_selector_check(const char *sel, const char *field,
								struct ctl_error *err);
/* Does a checked selector take the node (host name, id; borrowed)? The includes (none: every
 * node) less the excludes; NULL sel takes every node. */
bool ctl_node_selected(const char *sel, const char *hostname, const char *id);

/* An object id a caller chose: prefix ("d-", "c-") and 1..16 of [0-9a-f]. */
bool ctl_valid_object_id(const char *id, const char *prefix);

/* One line "prog: message" (and the playbook diagnostics, one per line) on f, escaped. */
void ctl_error_print(const struct ctl_error *e, const char *prog, FILE *f);

#endif
