/* The health service: what /readyz and /metrics read of the store, and the backup and restore
 * of a state directory's database. Returns data and a ctl_error, never prints. None needs a
 * serving controller: backup works on a state directory whether or not a controller serves it
 * (the command line's `backup`), restore on one nobody serves (`restore`), the others on any
 * open store. */
#ifndef RAILYARD_CONTROLLER_HEALTH_H
#define RAILYARD_CONTROLLER_HEALTH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "controller/service.h"

struct store;

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

/* What a backup (or a restored database) holds; its integrity was checked. */
struct ctl_backup_info {
	int schema_version;
	int64_t nodes, deployments, step_results, campaigns, bench_runs;
};

/* Back the database of the state directory state_dir (borrowed) up to dest (borrowed), safely
 * while a controller serves it (store_backup(): one consistent snapshot, dest replaced whole,
 * mode 0600). *ret_info (may be NULL) describes the copy. Only the database: the keys of the
 * state directory are the caller's to keep. Errors: CTL_ERR_INVALID (field "to": empty, or the
 * database or its -wal/-shm/-journal itself), CTL_ERR_NOT_FOUND (no database in state_dir),
 * CTL_ERR_UNAVAILABLE (busy, disk full), CTL_ERR_INTERNAL (corrupt, newer schema, I/O). */
__attribute__((warn_unused_result)) int ctl_backup(const char *state_dir, const char *dest,
						   struct ctl_backup_info *ret_info,
						   struct ctl_error *err);

/* Replace the database of the state directory state_dir (borrowed), which nobody serves, with
 * the backup at from (borrowed). Holds the serve lock (CTL_SERVE_LOCK) throughout, so no serve
 * starts on a half-restored directory; refuses a directory without its CA (ca.crt, ca.key: the
 * nodes' certificates chain to it), a file that is not a sound backup of a schema this program
 * knows (store_backup_check()), the database itself, and an existing non-empty database unless
 * force. The copy is one transaction (store_restore(): a failed restore leaves the old database
 * whole); then the directory is opened as serve opens it (migrated, CA and server key loaded).
 * *ret_info (may be NULL) describes the restored database; it is written once the copy is made,
 * also when the open after it fails. Errors: -RY_E_LOCKED CTL_ERR_CONFLICT (field state_dir: a
 * controller serves it, its pid in the message), CTL_ERR_NOT_FOUND (field state_dir: no CA),
 * CTL_ERR_INVALID (field from: not a database, damaged, newer schema, the database itself),
 * CTL_ERR_CONFLICT (field force: a database exists), CTL_ERR_UNAVAILABLE (busy, disk full),
 * CTL_ERR_INTERNAL (I/O; field restored: the copy is made but serve could not open it). Not
 * thread-safe with another restore of the same directory in this process (the lock is a
 * process's). */
__attribute__((warn_unused_result)) int ctl_restore(const char *state_dir, const char *from,
						    bool force, struct ctl_backup_info *ret_info,
						    struct ctl_error *err);

#endif
