/* The health service: what /readyz and /metrics read of the store, and a backup of a state
 * directory's database. Returns data and a ctl_error, never prints. None needs a serving
 * controller: the backup entry point works on a state directory whether or not a controller
 * serves it (the command line's `backup`), the others on any open store. */
#ifndef RAILYARD_CONTROLLER_HEALTH_H
#define RAILYARD_CONTROLLER_HEALTH_H

#include <stdio.h>

#include "controller/service.h"
#include "controller/store/store.h"
#include "controller/store/store_backup.h"

/* Does the store answer a read now? 0, or CTL_ERR_UNAVAILABLE / CTL_ERR_INTERNAL with the
 * store's reason in the message. */
__attribute__((warn_unused_result)) int ctl_health_store(struct store *st, struct ctl_error *err);

/* What the store says about the fleet, as Prometheus text on f (borrowed), in two parts so that
 * a front end can put its own lines between them: ctl_metrics_nodes() writes railyard_nodes
 * (enrolled nodes by state); ctl_metrics_objects() railyard_deployments and
 * railyard_campaigns (by state) and the store's write-transaction latency histogram. Each reads
 * everything before it writes: on error nothing was written. */
__attribute__((warn_unused_result)) int ctl_metrics_nodes(struct store *st, FILE *f,
							  struct ctl_error *err);
__attribute__((warn_unused_result)) int ctl_metrics_objects(struct store *st, FILE *f,
							    struct ctl_error *err);

/* Back the database of the state directory state_dir (borrowed) up to dest (borrowed), safely
 * while a controller serves it (store_backup(): one consistent snapshot, dest replaced whole,
 * mode 0600). *ret_info (may be NULL) describes the copy. Only the database: the keys of the
 * state directory are the caller's to keep. Errors: CTL_ERR_INVALID (field "to": empty, or the
 * database or its -wal/-shm/-journal itself), CTL_ERR_NOT_FOUND (no database in state_dir),
 * CTL_ERR_UNAVAILABLE (busy, disk full), CTL_ERR_INTERNAL (corrupt, newer schema, I/O). */
__attribute__((warn_unused_result)) int ctl_backup(const char *state_dir, const char *dest,
						   struct store_backup_info *ret_info,
						   struct ctl_error *err);

#endif
