/* Internals of the store shared by its files (store.c: connections, statements, transactions,
 * opening and migrating; one file per table group: store_nodes.c, store_audit.c,
 * store_deploy.c, store_bench.c, store_apitoken.c), store_migrations.c and the unit tests. */
#ifndef RAILYARD_CONTROLLER_STORE_INT_H
#define RAILYARD_CONTROLLER_STORE_INT_H

#include <pthread.h>

#include "common/util/hist.h"
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>

#include "controller/store/store.h"
#include "controller/store/store_bench.h"
#include "controller/store/store_nodes.h"

/* Statements prepared by one connection and kept, at most this many kinds in the program. */
#define STORE_STMT_MAX 256

/* One SQL statement of the store, declared next to the code that runs it with STORE_SQL();
 * each connection prepares it on first use and caches it in the slot the statement gets then
 * (the same slot in every connection). */
struct store_sql {
	const char *text;
	_Atomic int slot; /* 1 + index in store_conn.stmts; 0 until first used */
};
#define STORE_SQL(sql_text)                                                                        \
	{                                                                                          \
		(sql_text), 0                                                                      \
	}

/* One SQLite connection with its own statement cache, used under its own mutex. */
struct store_conn {
	struct store *s;
	pthread_mutex_t lock;
	sqlite3 *db;
	sqlite3_stmt *stmts[STORE_STMT_MAX];
	int64_t tx_start_us; /* when the open write transaction began (monotonic) */
	int tx_depth;	     /* open levels: 1 the transaction, more are savepoints */
	int tx_orphans;	     /* rollbacks to absorb: nested begins that failed */
	bool tx_broken;	     /* a nested level failed: the batch must be rolled back */
};

/* Two connections to one file: the writer runs every write transaction (and the reads inside
 * them); the reader (query_only) serves the reads that stand alone. Under WAL a reader never
 * waits for a writer, so lookups on latency-sensitive paths (a session opening, a listing) do
 * not queue behind a write that waits for another process's lock or a slow fsync. */
struct store {
	struct store_conn w, r;
	struct ry_hist tx_latency; /* write transactions, BEGIN to COMMIT (fsync included) */
	pthread_mutex_t errlock;   /* errmsg */
	char errmsg[256];
	char *path;
	const struct store_facts_deriver *deriver; /* NULL: none (nothing derived) */
};

/* Record SQLite's message for a failed call and map rc to a project error (-ENOMEM,
 * -RY_E_CORRUPT, -RY_E_DISK_FULL, -RY_E_BUSY, -EACCES, -EROFS, -EIO, -RY_E_DB). Caller holds
 * c->lock. */
int store_db_fail(struct store_conn *c, int rc, const char *what);
/* Record an inconsistency found by the store itself; -RY_E_DB. */
int store_db_fail_msg(struct store_conn *c, const char *msg);

/* Statement q, prepared on c once and cached, with parameters bound from fmt: 't' const char *
 * (NULL binds NULL), 'l' int64_t, 'd' double. Text is bound SQLITE_STATIC: the caller keeps it
 * alive until store_q_end(). Caller holds c->lock. */
int store_q_vstart(struct store_conn *c, struct store_sql *q, sqlite3_stmt **ret, const char *fmt,
		   va_list ap);
int store_q_start(struct store_conn *c, struct store_sql *q, sqlite3_stmt **ret, const char *fmt,
		  ...);
/* Step st: 1 for a row, 0 when done, negative error. */
int store_q_step(struct store_conn *c, sqlite3_stmt *st);
/* Make st ready for its next use; NULL is fine. */
void store_q_end(sqlite3_stmt *st);
/* Run a statement that returns no rows; *ret_changes (if not NULL) gets the rows changed. */
int store_q_exec(struct store_conn *c, int *ret_changes, struct store_sql *q, const char *fmt, ...);
/* A listing: q (parameters from fmt) run on c under its lock, every row collected with row()
 * into an array of esz-byte elements. On failure array_free releases what was collected;
 * *ret_v and *ret_n are written only on success. Cost: O(rows), doubling reallocations. */
int store_q_list(struct store_conn *c, struct store_sql *q, size_t esz,
		 int (*row)(sqlite3_stmt *st, void *elem), void (*array_free)(void *v, size_t n),
		 void **ret_v, size_t *ret_n, const char *fmt, ...);
/* BEGIN IMMEDIATE / ROLLBACK (when a transaction is open) / COMMIT (rolls back on failure);
 * inside a transaction already open (a batch, store_batch_begin()) a savepoint / ROLLBACK TO
 * and RELEASE / RELEASE. Caller holds c->lock. */
int store_tx_begin(struct store_conn *c);
void store_tx_rollback(struct store_conn *c);
int store_tx_commit(struct store_conn *c);
/* The first row q (one text parameter: key) gives, turned into *ret by row(), on c under its
 * lock: -RY_E_NOT_FOUND when there is no row. */
int store_q_row(struct store_conn *c, struct store_sql *q, const char *key,
		int (*row)(sqlite3_stmt *st, void *ret), void *ret);
/* The first column of the first row q (one text parameter: key) gives, copied into *ret, on
 * c under its lock: -RY_E_NOT_FOUND when there is no row. */
int store_q_text(struct store_conn *c, struct store_sql *q, const char *key, char **ret);
/* Copy a text column into *ret (NULL stays NULL); -ENOMEM. */
int store_col_dup(sqlite3_stmt *st, int col, char **ret);
/* v is 1..max bytes. */
bool store_text_ok(const char *v, size_t max);
/* Append an audit row inside the caller's transaction (store_audit.c). */
int store_audit_locked(struct store_conn *c, int64_t now_ms, const char *actor, const char *action,
		       const char *target, const char *outcome, const char *detail);

/* Ask for a cancel: q (parameters id, now_ms) stamps the row while it has not ended; when it
 * did and actor is not NULL, an audit row (action, "requested") goes in the same transaction.
 * 1 stamped (or already), 0 nothing moved (ended, or no such row: the caller tells which). */
int store_cancel_request(struct store *s, struct store_sql *q, const char *id, const char *actor,
			 const char *action, int64_t now_ms);

/* SHA-256 of a token (or of a token's secret) as lower-case hex into out: the only form in
 * which enrollment and API tokens are stored (store_apitoken.c). 0 or -RY_E_CRYPTO. */
int store_token_hash(const char *token, char out[2 * 32 + 1]);
/* Create cluster name if it is missing (created_at = now_ms) and return its row id in *ret_id
 * (may be NULL), under the caller's lock (store_nodes.c). */
int store_cluster_ensure_locked(struct store_conn *c, const char *name, int64_t now_ms,
				int64_t *ret_id);
/* The row id of cluster name (-RY_E_NOT_FOUND), under the caller's lock (store_nodes.c). */
int store_cluster_id_locked(struct store_conn *c, const char *name, int64_t *ret_id);
/* An enrollment token that may still be used: its row, its cluster's row and name (owned). */
struct store_token_row {
	int64_t id, cluster_id;
	char *cluster;
};
/* Look an enrollment token up and apply the rules (unknown, revoked, expired, used up), under
 * the caller's lock (store_apitoken.c). On success *row is filled (row->cluster: caller frees). */
int store_token_lookup_locked(struct store_conn *c, const char *token, int64_t now_ms,
			      struct store_token_row *row);
/* Store a playbook by its content hash (once) and return its row id, inside the caller's
 * transaction (store_deploy.c). */
int store_playbook_put_locked(struct store_conn *c, const char *name, const char *version,
			      const char *sha256, const char *text, int64_t now_ms,
			      int64_t *ret_id);

/* Insert a pending benchmark run (campaign_id may be NULL), under the caller's lock
 * (store_bench.c). */
int store_bench_insert_locked(struct store_conn *c, const struct store_bench_new *b,
			      const char *campaign_id, int64_t now_ms);

/* store_wlm_enqueue() inside the caller's transaction on c (the writer, its lock held): a
 * drain or resume written ahead with the finding that asks for it (store_wlm.h). 1 stored, 0
 * the cluster is not bound, -RY_E_INVALID (nothing stored), store errors (the caller rolls
 * back). */
struct store_wlm_intent;
int store_wlm_enqueue_locked(struct store_conn *c, const struct store_wlm_intent *a,
			     int64_t now_ms);

/* Inside the transaction that ends campaign campaign_id with state and its verdict: each node
 * the verdict fails or excludes is drained ("campaign" source, its first reason the finding),
 * each node it passes resumed if ours, when the campaign's cluster is bound. Only the states
 * passed and failed act (a cancelled or incomplete verdict judges no node). 0 or an error. */
int store_wlm_enqueue_verdict_locked(struct store_conn *c, const char *campaign_id,
				     const char *state, const char *verdict_json, int64_t now_ms);
/* Inside the transaction that moved node_id of deployment_id to failed: drain it ("deployment"
 * source, its message the finding), when the deployment's cluster is bound. 0 or an error. */
int store_wlm_enqueue_deploy_failed_locked(struct store_conn *c, const char *deployment_id,
					   const char *node_id, int64_t now_ms);

/* One schema step: run sql (constant text, several statements) to go from version - 1 to
 * version. */
struct store_migration {
	int version;
	const char *sql;
	bool rebuilds; /* rebuilds a table: runs with foreign keys off, checked before commit */
};

/* Ordered migrations 1..STORE_SCHEMA_VERSION; store_migrations[i].version == i + 1. */
extern const struct store_migration store_migrations[];
extern const size_t store_migrations_count;

/* As store_open(), but migrate only up to version (0..STORE_SCHEMA_VERSION); a database already
 * newer than version gives -RY_E_SCHEMA. For tests of migrations. */
STORE_WUR int store_open_at_version(const char *path, int version, struct store **ret);

#endif
