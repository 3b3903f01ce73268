/* The controller's persistent state in one SQLite database: what is common to every table
 * (the handle, opening and migrating, errors, clusters, group commit). Each table or area has its
 * own header beside its .c: store_nodes.h, store_audit.h, store_apitoken.h (enrollment and API
 * tokens), store_deploy.h, store_bench.h, store_campaign.h, store_signoff.h, store_revalidate.h,
 * store_playbook.h, store_backup.h, store_wlm.h. Two connections (a writer and a query-only
 * reader), each behind its own mutex; schema migrations by PRAGMA user_version. Times are unix
 * milliseconds supplied by the caller. */
#ifndef RAILYARD_CONTROLLER_STORE_H
#define RAILYARD_CONTROLLER_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_WUR __attribute__((warn_unused_result))

/* Schema version this program creates and understands. */
#define STORE_SCHEMA_VERSION 19

/* Largest length of a name, hostname, id, serial, fingerprint or version string. */
#define STORE_TEXT_MAX 255

/* Opaque handle. All functions taking a struct store are safe to call from several threads at
 * once (they serialize on the store's mutex), except store_free(). */
struct store;

/* Open (creating with mode 0600 if missing) the database at path and bring its schema up to
 * STORE_SCHEMA_VERSION, each missing migration in its own transaction. Sets WAL, foreign keys and
 * a 5 s busy timeout. On success *ret is a new store (free with store_free()).
 * Errors: -EINVAL (NULL argument), -errno from creating the file, -RY_E_CORRUPT (not a SQLite
 * database, or PRAGMA quick_check fails), -RY_E_SCHEMA (the database is newer than this
 * program), -RY_E_DB (any other SQLite failure), -ENOMEM. */
STORE_WUR int store_open(const char *path, struct store **ret);

/* Flags of store_open_flags(). */
#define STORE_OPEN_QUICK_CHECK 1u /* run PRAGMA quick_check (reads the whole file: O(size)) */

/* As store_open(), with flags: 0 for command-line tools that only need the data (no full-file
 * check; no write lock either when the schema is current). */
STORE_WUR int store_open_flags(const char *path, unsigned flags, struct store **ret);

/* The path the store was opened with (borrowed). */
const char *store_path(struct store *s);

/* Close the database and free the store. Accepts NULL. Not thread-safe: no other call on s may
 * be running or follow. */
void store_free(struct store *s);

/* Last SQLite error message recorded on s (any thread), copied into a thread-local buffer that
 * stays valid until this thread calls store_errmsg() again. "" if none; never NULL. */
const char *store_errmsg(struct store *s);

/* The database's PRAGMA user_version (>= 0), or -RY_E_DB. */
STORE_WUR int store_schema_version(struct store *s);

/* Create cluster name if it does not exist yet (created_at = now_ms). name: 1..STORE_TEXT_MAX
 * bytes, else -RY_E_INVALID. -RY_E_DB on failure. */
int store_cluster_ensure(struct store *s, const char *name, int64_t now_ms);

/* SQLite's data_version of the reader connection: changes whenever any connection (this
 * process's writer or another process) committed since the last call. */
STORE_WUR int store_data_version(struct store *s, int64_t *ret);

/* The latency of the store's write transactions (BEGIN IMMEDIATE to COMMIT, the fsync and any
 * wait for another process's lock included), for /metrics. */
struct ry_hist;
const struct ry_hist *store_tx_latency(const struct store *s);

/* ---- Group commit -----------------------------------------------------------------------
 * Several state changes in one write transaction, so one fsync: the serving controller's
 * ingest worker stores a run of agents' messages so, each in a savepoint of its own, and
 * acknowledges none of them before the commit. Between store_batch_begin() and
 * store_batch_commit()/_rollback() the calling thread holds the writer connection (other
 * threads' writes wait for the end of the batch); the store functions it calls meanwhile run
 * inside the batch (their transactions become savepoints). Reads on the reader connection do
 * not see the batch before it commits: only handlers that read through the writer belong in
 * one. */
STORE_WUR int store_batch_begin(struct store *s);
/* One item: a savepoint, ended with keep (released) or not (rolled back to). */
STORE_WUR int store_batch_item_begin(struct store *s);
void store_batch_item_end(struct store *s, bool keep);
/* Did something fail so that the batch cannot commit (SQLite rolled the transaction back, or
 * a savepoint failed)? */
bool store_batch_broken(struct store *s);
/* Commit (a broken batch is rolled back and fails) and let go of the writer. */
STORE_WUR int store_batch_commit(struct store *s);
void store_batch_rollback(struct store *s);

#endif
