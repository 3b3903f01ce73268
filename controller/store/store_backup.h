/* Backup and restore of the store's database (store_backup.c), through SQLite's backup API. */
#ifndef RAILYARD_CONTROLLER_STORE_BACKUP_H
#define RAILYARD_CONTROLLER_STORE_BACKUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/store/store.h"

/* ---- backup and restore (store_backup.c) ---------------------------------------------------
 * Through SQLite's backup API, on connections of their own (no struct store). */

/* What a database file holds: its schema version and a few row counts. */
struct store_backup_info {
	int schema_version;
	int64_t nodes, deployments, step_results, campaigns, bench_runs;
};

/* Copy the database at db_path into dest, safe while a controller serves it: one read
 * transaction on a read-only connection (a consistent snapshot; under WAL the writer never
 * waits for it, and nothing is written to db_path). dest is written as a temporary beside it,
 * integrity-checked, synced and renamed over dest (an existing file is replaced whole; a failed
 * backup leaves dest as it was); it is a self-contained database (no -wal), mode 0600.
 * *ret_info (may be NULL) describes the copy. Errors (reason in errbuf): -errno, -RY_E_CORRUPT,
 * -RY_E_SCHEMA, -RY_E_DISK_FULL, -RY_E_BUSY, -RY_E_DB. Thread-safe; takes no store lock. */
STORE_WUR int store_backup(const char *db_path, const char *dest,
			   struct store_backup_info *ret_info, char *errbuf, size_t errlen);

/* Check a backup file without changing it: PRAGMA integrity_check, and a schema version this
 * program knows. 0 with *ret_info (may be NULL); -RY_E_CORRUPT (not a database, not ours, or
 * damaged), -RY_E_SCHEMA (newer), -errno; the reason in errbuf. */
STORE_WUR int store_backup_check(const char *path, struct store_backup_info *ret_info, char *errbuf,
				 size_t errlen);

/* Replace the database at db_path (created 0600 when missing) with the backup at src_path,
 * checked first as store_backup_check(). The copy is one write transaction into db_path
 * through its own journal, so a restore that fails or is killed leaves the old database whole.
 * The caller makes sure nobody serves db_path (the serve lock). *ret_info (may be NULL)
 * describes the restored database. Errors as store_backup(). */
STORE_WUR int store_restore(const char *src_path, const char *db_path,
			    struct store_backup_info *ret_info, char *errbuf, size_t errlen);

#endif
