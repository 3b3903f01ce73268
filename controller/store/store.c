/* The controller's SQLite store: one connection behind a mutex, statements prepared once and
 * cached, every state change one transaction. Owns the database handle and its statements. */
#include "controller/store/store_int.h"

#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"
#include "proto/railyard/v1/limits.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STORE_BUSY_TIMEOUT_MS 5000
#define STORE_TOKEN_RANDOM    32 /* bytes: 256 bits */
#define STORE_AUDIT_LIST_MAX  100000

/* Columns read by node_from_row(), in this order. */
#define NODE_COLUMNS                                                                               \
	"SELECT n.id, c.name, n.hostname, n.state, n.cert_serial, n.cert_fingerprint, "            \
	"n.agent_version, n.facts, n.enrolled_at, n.last_seen "                                    \
	"FROM nodes n JOIN clusters c ON c.id = n.cluster_id "

/* Columns read by deployment_from_row(), in this order. */
#define DEPLOY_COLUMNS                                                                             \
	"SELECT d.id, c.name, p.name, p.version, p.sha256, d.check_mode, d.policy, d.state, "      \
	"d.reason, d.current_batch, d.created_at, d.finished_at "                                  \
	"FROM deployments d JOIN clusters c ON c.id = d.cluster_id "                               \
	"JOIN playbooks p ON p.id = d.playbook_id "

/* Columns read by bench_from_row(), in this order. */
#define BENCH_COLUMNS                                                                              \
	"SELECT id, kind, transport, client_node, server_node, server_address, params, state, "    \
	"server_port, result, server_result, error, deadline_ms, created_at, finished_at, "        \
	"cancel_requested_at FROM bench_runs "

enum stmt_id {
	STMT_BEGIN,
	STMT_COMMIT,
	STMT_ROLLBACK,
	STMT_USER_VERSION,
	STMT_CLUSTER_ENSURE,
	STMT_CLUSTER_ID,
	STMT_TOKEN_INSERT,
	STMT_TOKEN_GET,
	STMT_TOKEN_USE,
	STMT_NODE_BY_ID,
	STMT_NODE_BY_HOSTNAME,
	STMT_NODE_LIST,
	STMT_NODE_STATE,
	STMT_NODE_IN_CLUSTER,
	STMT_NODE_DELETE,
	STMT_NODE_INSERT,
	STMT_NODE_ONLINE,
	STMT_NODE_TOUCH,
	STMT_NODE_FACTS,
	STMT_NODE_OFFLINE,
	STMT_NODES_EXPIRE,
	STMT_NODES_ALL_OFFLINE,
	STMT_NODE_REVOKE,
	STMT_REVOKED_INSERT,
	STMT_REVOKED_GET,
	STMT_AUDIT_INSERT,
	STMT_AUDIT_LIST,
	STMT_PLAYBOOK_PUT,
	STMT_PLAYBOOK_ID,
	STMT_DEPLOY_INSERT,
	STMT_DEPLOY_NODE_INSERT,
	STMT_DEPLOY_GET,
	STMT_DEPLOY_LIST,
	STMT_DEPLOY_LIST_ACTIVE,
	STMT_DEPLOY_TEXT,
	STMT_DEPLOY_UPDATE,
	STMT_DEPLOY_NODES,
	STMT_DEPLOY_NODE_UPDATE,
	STMT_STEP_LIST,
	STMT_BENCH_INSERT,
	STMT_BENCH_GET,
	STMT_BENCH_LIST,
	STMT_BENCH_LIST_ACTIVE,
	STMT_BENCH_UPDATE,
	STMT_BENCH_CANCEL,
	STMT_DEPLOY_NODE_GET,
	STMT_DEPLOY_NODE_SENT,
	STMT_STEP_GET,
	STMT_STEP_INSERT,
	STMT_STEP_COUNTS,
	STMT_DEPLOY_NODE_BYTES,
	STMT_DEPLOY_NODE_DONE,
	STMT_NODE_SEEN,
	STMT_NODES_REVOKED,
	STMT_DATA_VERSION,
	STMT__MAX
};

static const char *const stmt_sql[STMT__MAX] = {
	[STMT_BEGIN] = "BEGIN IMMEDIATE",
	[STMT_COMMIT] = "COMMIT",
	[STMT_ROLLBACK] = "ROLLBACK",
	[STMT_USER_VERSION] = "PRAGMA user_version",
	[STMT_CLUSTER_ENSURE] = "INSERT INTO clusters (name, created_at) VALUES (?1, ?2) "
				"ON CONFLICT (name) DO NOTHING",
	[STMT_CLUSTER_ID] = "SELECT id FROM clusters WHERE name = ?1",
	[STMT_TOKEN_INSERT] = "INSERT INTO enroll_tokens (cluster_id, token_hash, created_at, "
			      "expires_at, uses_left, uses_total) VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
	[STMT_TOKEN_GET] = "SELECT t.id, t.cluster_id, c.name, t.expires_at, t.uses_left "
			   "FROM enroll_tokens t JOIN clusters c ON c.id = t.cluster_id "
			   "WHERE t.token_hash = ?1",
	[STMT_TOKEN_USE] = "UPDATE enroll_tokens SET uses_left = uses_left - 1 "
			   "WHERE id = ?1 AND uses_left > 0",
	[STMT_NODE_BY_ID] = NODE_COLUMNS "WHERE n.id = ?1",
	[STMT_NODE_BY_HOSTNAME] = NODE_COLUMNS "WHERE n.hostname = ?1 LIMIT 2",
	[STMT_NODE_LIST] = NODE_COLUMNS "ORDER BY c.name, n.hostname",
	[STMT_NODE_STATE] = "SELECT state FROM nodes WHERE id = ?1",
	[STMT_NODE_IN_CLUSTER] = "SELECT id, state, cert_serial FROM nodes "
				 "WHERE cluster_id = ?1 AND hostname = ?2",
	[STMT_NODE_DELETE] = "DELETE FROM nodes WHERE id = ?1",
	[STMT_NODE_INSERT] = "INSERT INTO nodes (id, cluster_id, hostname, cert_serial, "
			     "cert_fingerprint, state, enrolled_at, last_seen) "
			     "VALUES (?1, ?2, ?3, ?4, ?5, 'enrolled', ?6, 0)",
	[STMT_NODE_ONLINE] = "UPDATE nodes SET state = 'online', last_seen = MAX(last_seen, ?2), "
			     "agent_version = COALESCE(?3, agent_version), "
			     "facts = COALESCE(?4, facts) WHERE id = ?1 AND state != 'revoked'",
	[STMT_NODE_TOUCH] = "UPDATE nodes SET last_seen = MAX(last_seen, ?2), "
			    "state = CASE state WHEN 'offline' THEN 'online' ELSE state END "
			    "WHERE id = ?1 AND state != 'revoked'",
	[STMT_NODE_FACTS] = "UPDATE nodes SET facts = ?3, last_seen = MAX(last_seen, ?2) "
			    "WHERE id = ?1 AND state != 'revoked'",
	[STMT_NODE_OFFLINE] = "UPDATE nodes SET state = 'offline', last_seen = MAX(last_seen, ?2) "
			      "WHERE id = ?1 AND state != 'revoked'",
	[STMT_NODES_EXPIRE] = "UPDATE nodes SET state = 'offline' "
			      "WHERE state = 'online' AND last_seen < ?1",
	[STMT_NODES_ALL_OFFLINE] = "UPDATE nodes SET state = 'offline' WHERE state = 'online'",
	[STMT_NODE_REVOKE] = "UPDATE nodes SET state = 'revoked', revoked_at = ?2 WHERE id = ?1",
	[STMT_REVOKED_INSERT] = "INSERT OR IGNORE INTO revoked_certs (serial, node_id, revoked_at) "
				"VALUES (?1, ?2, ?3)",
	[STMT_REVOKED_GET] = "SELECT 1 FROM revoked_certs WHERE serial = ?1",
	[STMT_AUDIT_INSERT] = "INSERT INTO audit_log (at, actor, action, target, outcome, detail) "
			      "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	[STMT_AUDIT_LIST] = "SELECT at, actor, action, target, outcome, detail FROM audit_log "
			    "ORDER BY at DESC, id DESC LIMIT ?1",
	[STMT_PLAYBOOK_PUT] = "INSERT INTO playbooks (name, version, sha256, text, created_at) "
			      "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (sha256) DO NOTHING",
	[STMT_PLAYBOOK_ID] = "SELECT id FROM playbooks WHERE sha256 = ?1",
	[STMT_DEPLOY_INSERT] =
		"INSERT INTO deployments (id, cluster_id, playbook_id, check_mode, "
		"policy, state, created_at) VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6)",
	[STMT_DEPLOY_NODE_INSERT] = "INSERT INTO deployment_nodes (deployment_id, node_id, "
				    "hostname, batch, state) VALUES (?1, ?2, ?3, ?4, 'waiting')",
	[STMT_DEPLOY_GET] = DEPLOY_COLUMNS "WHERE d.id = ?1",
	[STMT_DEPLOY_LIST] = DEPLOY_COLUMNS "ORDER BY d.created_at DESC, d.id LIMIT ?1",
	[STMT_DEPLOY_LIST_ACTIVE] = DEPLOY_COLUMNS "WHERE d.state IN ('pending', 'running') "
						   "ORDER BY d.created_at, d.id",
	[STMT_DEPLOY_TEXT] = "SELECT p.text FROM deployments d JOIN playbooks p "
			     "ON p.id = d.playbook_id WHERE d.id = ?1",
	[STMT_DEPLOY_UPDATE] = "UPDATE deployments SET state = ?2, reason = COALESCE(?3, reason), "
			       "current_batch = ?4, finished_at = ?5 WHERE id = ?1",
	[STMT_DEPLOY_NODES] = "SELECT node_id, hostname, batch, state, ok, changed, failed, "
			      "skipped, message, sent_at, finished_at FROM deployment_nodes "
			      "WHERE deployment_id = ?1 ORDER BY batch, hostname",
	/* Only a node that has not finished moves; a late or repeated report changes nothing. */
	[STMT_DEPLOY_NODE_UPDATE] = "UPDATE deployment_nodes SET state = ?3, "
				    "message = COALESCE(?4, message), "
				    "ok = ?5, changed = ?6, failed = ?7, skipped = ?8, "
				    "sent_at = CASE WHEN ?3 = 'sent' THEN ?9 ELSE sent_at END, "
				    "finished_at = CASE WHEN ?3 IN ('waiting', 'sent') THEN NULL "
				    "ELSE ?9 END "
				    "WHERE deployment_id = ?1 AND node_id = ?2 "
				    "AND state IN ('waiting', 'sent')",
	[STMT_BENCH_INSERT] = "INSERT INTO bench_runs (id, kind, transport, client_node, "
			      "server_node, params, state, deadline_ms, created_at) "
			      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', ?7, ?8)",
	[STMT_BENCH_GET] = BENCH_COLUMNS "WHERE id = ?1",
	[STMT_BENCH_LIST] = BENCH_COLUMNS "ORDER BY created_at DESC, id LIMIT ?1",
	[STMT_BENCH_LIST_ACTIVE] = BENCH_COLUMNS
	"WHERE state NOT IN ('succeeded', 'failed', 'cancelled') ORDER BY created_at, id",
	[STMT_BENCH_UPDATE] =
		"UPDATE bench_runs SET state = ?2, server_address = COALESCE(?3, server_address), "
		"server_port = COALESCE(?4, server_port), result = COALESCE(?5, result), "
		"server_result = COALESCE(?6, server_result), error = COALESCE(?7, error), "
		"finished_at = CASE WHEN ?2 IN ('succeeded', 'failed', 'cancelled') THEN ?8 "
		"ELSE NULL END "
		"WHERE id = ?1 AND state NOT IN ('succeeded', 'failed', 'cancelled')",
	[STMT_BENCH_CANCEL] =
		"UPDATE bench_runs SET cancel_requested_at = COALESCE(cancel_requested_at, ?2) "
		"WHERE id = ?1 AND state NOT IN ('succeeded', 'failed', 'cancelled')",
	[STMT_DEPLOY_NODE_GET] =
		"SELECT state, plan_steps, result_bytes, ok, changed, failed, "
		"skipped FROM deployment_nodes WHERE deployment_id = ?1 AND node_id = ?2",
	[STMT_DEPLOY_NODE_SENT] = "UPDATE deployment_nodes SET state = 'sent', sent_at = ?3, "
				  "plan_steps = ?4, finished_at = NULL "
				  "WHERE deployment_id = ?1 AND node_id = ?2 AND state = 'waiting'",
	[STMT_STEP_GET] = "SELECT name, status, diff, message FROM step_results "
			  "WHERE deployment_id = ?1 AND node_id = ?2 AND idx = ?3",
	[STMT_STEP_INSERT] = "INSERT INTO step_results (deployment_id, node_id, idx, name, status, "
			     "diff, message, duration_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	[STMT_STEP_COUNTS] = "SELECT status, count(*) FROM step_results "
			     "WHERE deployment_id = ?1 AND node_id = ?2 GROUP BY status",
	[STMT_DEPLOY_NODE_BYTES] = "UPDATE deployment_nodes SET result_bytes = result_bytes + ?3 "
				   "WHERE deployment_id = ?1 AND node_id = ?2",
	[STMT_DEPLOY_NODE_DONE] = "UPDATE deployment_nodes SET state = ?3, message = ?4, ok = ?5, "
				  "changed = ?6, failed = ?7, skipped = ?8, finished_at = ?9 "
				  "WHERE deployment_id = ?1 AND node_id = ?2 AND state = 'sent'",
	[STMT_NODE_SEEN] = "UPDATE nodes SET last_seen = MAX(last_seen, ?2) "
			   "WHERE id = ?1 AND state != 'revoked'",
	[STMT_NODES_REVOKED] = "SELECT id FROM nodes WHERE state = 'revoked'",
	[STMT_DATA_VERSION] = "PRAGMA data_version",
	[STMT_STEP_LIST] = "SELECT node_id, idx, name, status, diff, message, duration_ms "
			   "FROM step_results WHERE deployment_id = ?1 ORDER BY node_id, idx",
};

/* One SQLite connection with its own statement cache, used under its own mutex. */
struct store_conn {
	struct store *s;
	pthread_mutex_t lock;
	sqlite3 *db;
	sqlite3_stmt *stmts[STMT__MAX];
};

/* Two connections to one file: the writer runs every write transaction (and the reads inside
 * them); the reader (query_only) serves the reads that stand alone. Under WAL a reader never
 * waits for a writer, so lookups on latency-sensitive paths (a session opening, a listing) do
 * not queue behind a write that waits for another process's lock or a slow fsync. */
struct store {
	struct store_conn w, r;
	pthread_mutex_t errlock; /* errmsg */
	char errmsg[256];
	char *path;
};

static void set_errmsg(struct store *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_errmsg(struct store *s, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&s->errlock);
	va_start(ap, fmt);
	vsnprintf(s->errmsg, sizeof(s->errmsg), fmt, ap);
	va_end(ap);
	log_debug("store: %s", s->errmsg);
	pthread_mutex_unlock(&s->errlock);
}

/* Record SQLite's message for a failed call and map rc to a project error. Caller holds the
 * connection's lock (or owns the store exclusively during open). */
static int db_fail(struct store_conn *c, int rc, const char *what)
{
	const char *msg = c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc);

	set_errmsg(c->s, "%s: %s", what, msg);
	switch (rc & 0xff) {
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return -RY_E_CORRUPT;
	case SQLITE_FULL:
		return -RY_E_DISK_FULL;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -RY_E_BUSY;
	case SQLITE_PERM:
	case SQLITE_READONLY:
	case SQLITE_CANTOPEN:
		/* SQLite keeps the errno of the failed system call. */
		return sqlite3_system_errno(c->db) == EACCES ? -EACCES : -RY_E_DB;
	case SQLITE_IOERR:
		return sqlite3_system_errno(c->db) == ENOSPC ? -RY_E_DISK_FULL : -RY_E_DB;
	default:
		return -RY_E_DB;
	}
}

/* Record an inconsistency found by the store itself (no SQLite message to report). */
static int db_fail_msg(struct store_conn *c, const char *msg)
{
	set_errmsg(c->s, "%s", msg);
	return -RY_E_DB;
}

/* Return the cached statement id, preparing it on first use, with parameters bound from fmt:
 * 't' const char * (NULL binds NULL), 'l' int64_t. Text is bound SQLITE_STATIC: the caller
 * keeps it alive until q_end(). */
static int q_vstart(struct store_conn *c, enum stmt_id id, sqlite3_stmt **ret, const char *fmt,
		    va_list ap)
{
	sqlite3_stmt *st = c->stmts[id];
	int rc, i = 1;

	if (!st) {
		rc = sqlite3_prepare_v3(c->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT, &st,
					NULL);
		if (rc != SQLITE_OK)
			return db_fail(c, rc, "prepare");
		c->stmts[id] = st;
	}
	/* Catches a format string out of step with its SQL (a programmer error). */
	if ((int)strlen(fmt) != sqlite3_bind_parameter_count(st)) {
		set_errmsg(c->s, "statement %d: %zu values for %d parameters", (int)id, strlen(fmt),
			   sqlite3_bind_parameter_count(st));
		return -EINVAL;
	}
	for (const char *f = fmt; *f; f++, i++) {
		if (*f == 't') {
			const char *v = va_arg(ap, const char *);

			rc = v ? sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC)
			       : sqlite3_bind_null(st, i);
		} else {
			rc = sqlite3_bind_int64(st, i, va_arg(ap, int64_t));
		}
		if (rc != SQLITE_OK) {
			sqlite3_clear_bindings(st);
			return db_fail(c, rc, "bind");
		}
	}
	*ret = st;
	return 0;
}

static int q_start(struct store_conn *c, enum stmt_id id, sqlite3_stmt **ret, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = q_vstart(c, id, ret, fmt, ap);
	va_end(ap);
	return r;
}

/* Step st: 1 for a row, 0 when done, negative error. */
static int q_step(struct store_conn *c, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	return db_fail(c, rc, "step");
}

/* Make st ready for its next use; NULL is fine. */
static void q_end(sqlite3_stmt *st)
{
	if (!st)
		return;
	(void)sqlite3_reset(st);
	(void)sqlite3_clear_bindings(st);
}

/* Run a statement that returns no rows; *ret_changes (if not NULL) gets the rows changed. */
static int q_exec(struct store_conn *c, int *ret_changes, enum stmt_id id, const char *fmt, ...)
{
	sqlite3_stmt *st = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = q_vstart(c, id, &st, fmt, ap);
	va_end(ap);
	if (r < 0)
		return r;
	r = q_step(c, st);
	q_end(st);
	if (r < 0)
		return r;
	if (ret_changes)
		*ret_changes = sqlite3_changes(c->db);
	return 0;
}

static int tx_begin(struct store_conn *c)
{
	return q_exec(c, NULL, STMT_BEGIN, "");
}

static void tx_rollback(struct store_conn *c)
{
	if (!sqlite3_get_autocommit(c->db))
		(void)q_exec(c, NULL, STMT_ROLLBACK, "");
}

static int tx_commit(struct store_conn *c)
{
	int r = q_exec(c, NULL, STMT_COMMIT, "");

	if (r < 0)
		tx_rollback(c);
	return r;
}

/* Copy a text column; NULL stays NULL. */
static int col_dup(sqlite3_stmt *st, int col, char **ret)
{
	const unsigned char *v = sqlite3_column_text(st, col);
	char *d = NULL;

	if (v) {
		d = strdup((const char *)v);
		if (!d)
			return -ENOMEM;
	}
	*ret = d;
	return 0;
}

/* Step st to its end, appending one zeroed element of esz bytes per row and filling it with
 * row(). *ret_v and *ret_n get what was collected even on failure (an element is counted before
 * it is filled), so that the caller's free function releases a partial array. Caller holds the
 * lock. Cost: O(rows), doubling reallocations. */
static int q_collect(struct store_conn *c, sqlite3_stmt *st, size_t esz,
		     int (*row)(sqlite3_stmt *st, void *elem), void **ret_v, size_t *ret_n)
{
	char *v = NULL;
	size_t n = 0, cap = 0;
	int r;

	while ((r = q_step(c, st)) == 1) {
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			char *nv = realloc(v, ncap * esz);

			if (!nv) {
				r = -ENOMEM;
				break;
			}
			v = nv;
			cap = ncap;
		}
		memset(v + n * esz, 0, esz);
		n++;
		r = row(st, v + (n - 1) * esz);
		if (r < 0)
			break;
	}
	*ret_v = v;
	*ret_n = n;
	return r < 0 ? r : 0;
}

/* A listing: statement id (parameters from fmt, as q_start()) run on c under its lock, every
 * row collected with row() into an array of esz-byte elements. On failure array_free releases
 * what was collected; *ret_v and *ret_n are written only on success. */
static int q_list(struct store_conn *c, enum stmt_id id, size_t esz,
		  int (*row)(sqlite3_stmt *st, void *elem), void (*array_free)(void *v, size_t n),
		  void **ret_v, size_t *ret_n, const char *fmt, ...)
{
	sqlite3_stmt *st = NULL;
	void *v = NULL;
	size_t n = 0;
	va_list ap;
	int r;

	pthread_mutex_lock(&c->lock);
	va_start(ap, fmt);
	r = q_vstart(c, id, &st, fmt, ap);
	va_end(ap);
	if (r >= 0)
		r = q_collect(c, st, esz, row, &v, &n);
	q_end(st);
	pthread_mutex_unlock(&c->lock);
	if (r < 0) {
		array_free(v, n);
		return r;
	}
	*ret_v = v;
	*ret_n = n;
	return 0;
}

/* The array free functions of the listings, with the type q_list() takes. */
static void nodes_free_v(void *v, size_t n)
{
	store_nodes_free(v, n);
}

static void ids_free_v(void *v, size_t n)
{
	store_ids_free(v, n);
}

static void audit_free_v(void *v, size_t n)
{
	store_audit_entries_free(v, n);
}

static void deployments_free_v(void *v, size_t n)
{
	store_deployments_free(v, n);
}

static void deploy_nodes_free_v(void *v, size_t n)
{
	store_deploy_nodes_free(v, n);
}

static void step_results_free_v(void *v, size_t n)
{
	store_step_results_free(v, n);
}

static void bench_runs_free_v(void *v, size_t n)
{
	store_bench_runs_free(v, n);
}

static bool text_ok(const char *v, size_t max)
{
	return v && v[0] && strnlen(v, max + 1) <= max;
}

/* Facts must be a JSON object of bounded size; checked before anything is written. */
static int facts_validate(const char *facts_json)
{
	json_error_t err;
	json_t *root;
	size_t len = strnlen(facts_json, (size_t)STORE_FACTS_MAX + 1);
	bool ok;

	if (len > STORE_FACTS_MAX)
		return -RY_E_INVALID;
	root = json_loadb(facts_json, len, JSON_REJECT_DUPLICATES, &err);
	if (!root) {
		log_debug("store: facts rejected: %s at line %d", err.text, err.line);
		return -RY_E_INVALID;
	}
	ok = json_is_object(root);
	json_decref(root);
	return ok ? 0 : -RY_E_INVALID;
}

/* SHA-256 of the token as lower-case hex: the only form in which tokens are stored. */
static int token_hash(const char *token, char out[2 * 32 + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (!EVP_Digest(token, strlen(token), md, &mdlen, EVP_sha256(), NULL) || mdlen != 32)
		return -RY_E_CRYPTO;
	util_hex(md, mdlen, out);
	return 0;
}

static int user_version_locked(struct store_conn *c, int *ret)
{
	sqlite3_stmt *st = NULL;
	int r;

	r = q_start(c, STMT_USER_VERSION, &st, "");
	if (r < 0)
		return r;
	r = q_step(c, st);
	if (r == 1) {
		*ret = sqlite3_column_int(st, 0);
		r = 0;
	} else if (r == 0) {
		r = db_fail_msg(c, "user_version returned no row");
	}
	q_end(st);
	return r;
}

/* Run a constant pragma and return its first column's text in buf ("" when it gives no row). */
static int pragma_text(struct store_conn *c, const char *sql, char *buf, size_t size)
{
	sqlite3_stmt *st = NULL;
	int rc, r = 0;

	rc = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return db_fail(c, rc, sql);
	buf[0] = '\0';
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const unsigned char *v = sqlite3_column_text(st, 0);

		snprintf(buf, size, "%s", v ? (const char *)v : "");
	} else if (rc != SQLITE_DONE) {
		r = db_fail(c, rc, sql);
	}
	sqlite3_finalize(st);
	return r;
}

/* Apply each migration above the current version up to target, one transaction each. The
 * version is re-read inside the write transaction so that two processes opening the same
 * file do not both run a step. */
static int migrate(struct store_conn *c, int target)
{
	int cur, rc, r;

	for (size_t i = 0; i < store_migrations_count; i++) {
		const struct store_migration *m = &store_migrations[i];
		char sql[64];

		if (m->version > target)
			break;
		r = tx_begin(c);
		if (r < 0)
			return r;
		r = user_version_locked(c, &cur);
		if (r < 0)
			goto fail;
		if (cur >= m->version) {
			r = tx_commit(c);
			if (r < 0)
				return r;
			continue;
		}
		if (cur != m->version - 1) {
			r = db_fail_msg(c, "schema version gap");
			goto fail;
		}
		rc = sqlite3_exec(c->db, m->sql, NULL, NULL, NULL);
		if (rc != SQLITE_OK) {
			r = db_fail(c, rc, "migration");
			goto fail;
		}
		/* PRAGMA takes no parameters; the value is a compiled-in constant. */
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", m->version);
		rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
		if (rc != SQLITE_OK) {
			r = db_fail(c, rc, "set user_version");
			goto fail;
		}
		r = tx_commit(c);
		if (r < 0)
			return r;
		log_debug("store: migrated to schema version %d", m->version);
	}
	return 0;
fail:
	tx_rollback(c);
	return r;
}

/* Open one connection of s to path and set its per-connection pragmas. */
static int conn_open(struct store *s, struct store_conn *c, const char *path, bool reader)
{
	char buf[64];
	int rc, r;

	c->s = s;
	r = -pthread_mutex_init(&c->lock, NULL);
	if (r < 0)
		return r;
	/* Our mutex serializes every use of the connection. */
	rc = sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK)
		return db_fail(c, rc, "open");
	sqlite3_extended_result_codes(c->db, 1);
	rc = sqlite3_busy_timeout(c->db, STORE_BUSY_TIMEOUT_MS);
	if (rc != SQLITE_OK)
		return db_fail(c, rc, "busy_timeout");
	r = pragma_text(c, "PRAGMA foreign_keys = ON", buf, sizeof(buf));
	/* Every commit durable (enrollments, revocations, results); one fsync per commit. */
	if (r >= 0)
		r = pragma_text(c, "PRAGMA synchronous = FULL", buf, sizeof(buf));
	if (r >= 0 && reader)
		r = pragma_text(c, "PRAGMA query_only = 1", buf, sizeof(buf));
	return r;
}

static void conn_close(struct store_conn *c)
{
	if (!c->s)
		return;
	for (size_t i = 0; i < STMT__MAX; i++)
		sqlite3_finalize(c->stmts[i]);
	sqlite3_close_v2(c->db);
	pthread_mutex_destroy(&c->lock);
}

static int store_open_impl(const char *path, int version, unsigned flags, struct store **ret)
{
	struct store *s = NULL;
	struct store_conn *c;
	char buf[64];
	int fd, r, cur;

	if (!path || !ret || version < 0 || version > STORE_SCHEMA_VERSION)
		return -EINVAL;
	/* Create the file ourselves so that it never exists with a wider mode; SQLite gives the
	 * -wal and -shm files the database file's mode. Never open (and close) an existing one:
	 * a close() drops every POSIX lock this process holds on it, SQLite's included. */
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd >= 0)
		close(fd);
	else if (errno != EEXIST)
		return -errno;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	c = &s->w;
	pthread_mutex_init(&s->errlock, NULL);
	s->path = strdup(path);
	if (!s->path) {
		r = -ENOMEM;
		goto fail;
	}
	r = conn_open(s, c, path, false);
	if (r < 0)
		goto fail;
	/* The first read of the header tells a foreign file (SQLITE_NOTADB -> RY_E_CORRUPT). */
	r = user_version_locked(c, &cur);
	if (r < 0)
		goto fail;
	if (cur > STORE_SCHEMA_VERSION || cur > version) {
		set_errmsg(s, "schema version %d, this program knows %d", cur, version);
		r = -RY_E_SCHEMA;
		goto fail;
	}
	if (flags & STORE_OPEN_QUICK_CHECK) {
		r = pragma_text(c, "PRAGMA quick_check", buf, sizeof(buf));
		if (r < 0)
			goto fail;
		if (strcmp(buf, "ok") != 0) {
			set_errmsg(s, "quick_check: %s", buf);
			r = -RY_E_CORRUPT;
			goto fail;
		}
	}
	/* Already WAL (every database but a new one): a read of the header, no write lock. */
	r = pragma_text(c, "PRAGMA journal_mode", buf, sizeof(buf));
	if (r >= 0 && strcmp(buf, "wal") != 0)
		r = pragma_text(c, "PRAGMA journal_mode = WAL", buf, sizeof(buf));
	if (r < 0)
		goto fail;
	if (strcmp(buf, "wal") != 0) {
		r = db_fail_msg(c, "cannot enable WAL");
		goto fail;
	}
	/* An up-to-date schema needs no write transaction at all (read-only commands must not
	 * take write locks). */
	if (cur < version) {
		r = migrate(c, version);
		if (r < 0)
			goto fail;
	}
	r = conn_open(s, &s->r, path, true);
	if (r < 0)
		goto fail;
	*ret = s;
	return 0;
fail:
	store_free(s);
	return r;
}

int store_open_at_version(const char *path, int version, struct store **ret)
{
	return store_open_impl(path, version, STORE_OPEN_QUICK_CHECK, ret);
}

int store_open_flags(const char *path, unsigned flags, struct store **ret)
{
	return store_open_impl(path, STORE_SCHEMA_VERSION, flags, ret);
}

int store_open(const char *path, struct store **ret)
{
	return store_open_impl(path, STORE_SCHEMA_VERSION, STORE_OPEN_QUICK_CHECK, ret);
}

void store_free(struct store *s)
{
	if (!s)
		return;
	conn_close(&s->r);
	conn_close(&s->w);
	pthread_mutex_destroy(&s->errlock);
	free(s->path);
	free(s);
}

const char *store_errmsg(struct store *s)
{
	static __thread char buf[256];

	if (!s)
		return "";
	pthread_mutex_lock(&s->errlock);
	snprintf(buf, sizeof(buf), "%s", s->errmsg);
	pthread_mutex_unlock(&s->errlock);
	return buf;
}

const char *store_path(struct store *s)
{
	return s->path;
}

int store_schema_version(struct store *s)
{
	struct store_conn *c = &s->r;
	int r, v = 0;

	if (!s)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = user_version_locked(c, &v);
	pthread_mutex_unlock(&c->lock);
	return r < 0 ? r : v;
}

/* Ensure the cluster exists and return its row id. */
static int cluster_ensure_locked(struct store_conn *c, const char *name, int64_t now_ms,
				 int64_t *ret_id)
{
	sqlite3_stmt *st = NULL;
	int r;

	r = q_exec(c, NULL, STMT_CLUSTER_ENSURE, "tl", name, now_ms);
	if (r < 0)
		return r;
	r = q_start(c, STMT_CLUSTER_ID, &st, "t", name);
	if (r < 0)
		return r;
	r = q_step(c, st);
	if (r == 1) {
		if (ret_id)
			*ret_id = sqlite3_column_int64(st, 0);
		r = 0;
	} else if (r == 0) {
		r = db_fail_msg(c, "cluster vanished");
	}
	q_end(st);
	return r;
}

int store_cluster_ensure(struct store *s, const char *name, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int r;

	if (!s)
		return -EINVAL;
	if (!text_ok(name, STORE_TEXT_MAX))
		return -RY_E_INVALID;
	pthread_mutex_lock(&c->lock);
	r = cluster_ensure_locked(c, name, now_ms, NULL);
	pthread_mutex_unlock(&c->lock);
	return r;
}

static int audit_locked(struct store_conn *c, int64_t now_ms, const char *actor, const char *action,
			const char *target, const char *outcome, const char *detail)
{
	return q_exec(c, NULL, STMT_AUDIT_INSERT, "lttttt", now_ms, actor, action, target, outcome,
		      detail);
}

int store_token_create_as(struct store *s, const char *actor, const char *cluster, int64_t ttl_ms,
			  int uses, int64_t now_ms, char **ret_token)
{
	struct store_conn *c = &s->w;
	unsigned char rnd[STORE_TOKEN_RANDOM];
	char hex[2 * STORE_TOKEN_RANDOM + 1], hash[2 * 32 + 1];
	char *token = NULL, *detail = NULL;
	int64_t cluster_id;
	int r;

	if (!s || !ret_token || ttl_ms <= 0 || uses < 1 || now_ms > INT64_MAX - ttl_ms)
		return -EINVAL;
	if (!text_ok(cluster, STORE_TEXT_MAX) || !text_ok(actor, STORE_TEXT_MAX))
		return -RY_E_INVALID;
	r = util_random_bytes(rnd, sizeof(rnd));
	if (r < 0)
		return r;
	util_hex(rnd, sizeof(rnd), hex);
	if (asprintf(&token, STORE_TOKEN_PREFIX "%s", hex) < 0)
		return -ENOMEM;
	r = token_hash(token, hash);
	if (r < 0)
		goto out;
	/* The audit names the token by a prefix of its hash, never by the token. */
	if (asprintf(&detail, "token=%.12s uses=%d expires_at=%lld", hash, uses,
		     (long long)(now_ms + ttl_ms)) < 0) {
		detail = NULL;
		r = -ENOMEM;
		goto out;
	}

	pthread_mutex_lock(&c->lock);
	r = tx_begin(c);
	if (r < 0)
		goto unlock;
	r = cluster_ensure_locked(c, cluster, now_ms, &cluster_id);
	if (r < 0)
		goto rollback;
	r = q_exec(c, NULL, STMT_TOKEN_INSERT, "ltlll", cluster_id, hash, now_ms, now_ms + ttl_ms,
		   (int64_t)uses);
	if (r < 0)
		goto rollback;
	r = audit_locked(c, now_ms, actor, "token.create", cluster, "success", detail);
	if (r < 0)
		goto rollback;
	r = tx_commit(c);
	goto unlock;
rollback:
	tx_rollback(c);
unlock:
	pthread_mutex_unlock(&c->lock);
out:
	explicit_bzero(rnd, sizeof(rnd));
	explicit_bzero(hex, sizeof(hex));
	free(detail);
	if (r < 0) {
		if (token)
			explicit_bzero(token, strlen(token));
		free(token);
		return r;
	}
	*ret_token = token;
	return 0;
}

int store_token_create(struct store *s, const char *cluster, int64_t ttl_ms, int uses,
		       int64_t now_ms, char **ret_token)
{
	return store_token_create_as(s, "admin", cluster, ttl_ms, uses, now_ms, ret_token);
}

struct token_row {
	int64_t id, cluster_id;
	char *cluster;
};

/* Look a token up and apply the rules (unknown, expired, used up). On success the row is
 * filled (row->cluster owned by the caller). */
static int token_lookup_locked(struct store_conn *c, const char *token, int64_t now_ms,
			       struct token_row *row)
{
	char hash[2 * 32 + 1];
	sqlite3_stmt *st = NULL;
	int r;

	/* Anything longer than a token cannot be one; no need to hash it. */
	if (strnlen(token, STORE_TEXT_MAX + 1) > STORE_TEXT_MAX)
		return -RY_E_TOKEN_UNKNOWN;
	r = token_hash(token, hash);
	if (r < 0)
		return r;
	r = q_start(c, STMT_TOKEN_GET, &st, "t", hash);
	if (r < 0)
		return r;
	r = q_step(c, st);
	if (r < 0)
		goto out;
	if (r == 0) {
		r = -RY_E_TOKEN_UNKNOWN;
		goto out;
	}
	if (now_ms >= sqlite3_column_int64(st, 3)) {
		r = -RY_E_TOKEN_EXPIRED;
		goto out;
	}
	if (sqlite3_column_int64(st, 4) <= 0) {
		r = -RY_E_TOKEN_USED;
		goto out;
	}
	r = col_dup(st, 2, &row->cluster);
	if (r < 0)
		goto out;
	row->id = sqlite3_column_int64(st, 0);
	row->cluster_id = sqlite3_column_int64(st, 1);
out:
	q_end(st);
	return r;
}

int store_token_check(struct store *s, const char *token, int64_t now_ms, char **ret_cluster)
{
	struct store_conn *c = &s->r;
	struct token_row row = {0};
	int r;

	if (!s || !token || !ret_cluster)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = token_lookup_locked(c, token, now_ms, &row);
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	*ret_cluster = row.cluster;
	return 0;
}

/* Make room for a new node of hostname in the cluster: -RY_E_EXISTS if a live node has it; a
 * revoked one is deleted (its serial is kept in the revocation list). */
static int enroll_clear_hostname_locked(struct store_conn *c, int64_t cluster_id,
					const char *hostname, int64_t now_ms)
{
	sqlite3_stmt *st = NULL;
	char *id = NULL, *serial = NULL;
	int r;

	r = q_start(c, STMT_NODE_IN_CLUSTER, &st, "lt", cluster_id, hostname);
	if (r < 0)
		return r;
	r = q_step(c, st);
	if (r <= 0)
		goto out;
	if (strcmp((const char *)sqlite3_column_text(st, 1), "revoked") != 0) {
		r = -RY_E_EXISTS;
		goto out;
	}
	r = col_dup(st, 0, &id);
	if (r < 0)
		goto out;
	r = col_dup(st, 2, &serial);
	if (r < 0)
		goto out;
	q_end(st);
	st = NULL;
	r = q_exec(c, NULL, STMT_REVOKED_INSERT, "ttl", serial, id, now_ms);
	if (r < 0)
		goto out;
	r = q_exec(c, NULL, STMT_NODE_DELETE, "t", id);
out:
	q_end(st);
	free(id);
	free(serial);
	return r;
}

int store_enroll_node(struct store *s, const struct store_enroll *e, int64_t now_ms,
		      char **ret_cluster)
{
	struct store_conn *c = &s->w;
	struct token_row row = {0};
	char *detail = NULL;
	int r, changed = 0;

	if (!s || !e || !e->token || !e->node_id || !e->hostname || !e->cert_serial ||
	    !e->cert_fingerprint)
		return -EINVAL;
	if (!text_ok(e->node_id, STORE_TEXT_MAX) || !text_ok(e->hostname, STORE_TEXT_MAX) ||
	    !text_ok(e->cert_serial, STORE_TEXT_MAX) ||
	    !text_ok(e->cert_fingerprint, STORE_TEXT_MAX))
		return -RY_E_INVALID;

	pthread_mutex_lock(&c->lock);
	r = tx_begin(c);
	if (r < 0)
		goto unlock;
	r = token_lookup_locked(c, e->token, now_ms, &row);
	if (r < 0)
		goto rollback;
	r = enroll_clear_hostname_locked(c, row.cluster_id, e->hostname, now_ms);
	if (r < 0)
		goto rollback;
	r = q_exec(c, &changed, STMT_TOKEN_USE, "l", row.id);
	if (r < 0)
		goto rollback;
	if (changed != 1) {
		r = -RY_E_TOKEN_USED;
		goto rollback;
	}
	r = q_exec(c, NULL, STMT_NODE_INSERT, "tltttl", e->node_id, row.cluster_id, e->hostname,
		   e->cert_serial, e->cert_fingerprint, now_ms);
	if (r < 0) {
		/* The id is chosen by the controller; a clash is a duplicate, not a DB fault. */
		if (sqlite3_extended_errcode(c->db) == SQLITE_CONSTRAINT_PRIMARYKEY ||
		    sqlite3_extended_errcode(c->db) == SQLITE_CONSTRAINT_UNIQUE)
			r = -RY_E_EXISTS;
		goto rollback;
	}
	/* The peer is only recorded, so a long one is cut rather than refused. */
	if (asprintf(&detail, "cluster=%s hostname=%s serial=%s peer=%.255s", row.cluster,
		     e->hostname, e->cert_serial,
		     e->peer && e->peer[0] ? e->peer : "unknown") < 0) {
		detail = NULL;
		r = -ENOMEM;
		goto rollback;
	}
	r = audit_locked(c, now_ms, "agent", "node.enroll", e->node_id, "success", detail);
	if (r < 0)
		goto rollback;
	r = tx_commit(c);
	goto unlock;
rollback:
	tx_rollback(c);
unlock:
	pthread_mutex_unlock(&c->lock);
	free(detail);
	if (r < 0 || !ret_cluster) {
		free(row.cluster);
		return r;
	}
	*ret_cluster = row.cluster;
	return 0;
}

int store_audit(struct store *s, int64_t now_ms, const char *actor, const char *action,
		const char *target, const char *outcome, const char *detail)
{
	struct store_conn *c = &s->w;
	int r;

	if (!s || !actor || !action || !outcome)
		return -EINVAL;
	if (strnlen(actor, STORE_TEXT_MAX + 1) > STORE_TEXT_MAX ||
	    strnlen(action, STORE_TEXT_MAX + 1) > STORE_TEXT_MAX ||
	    strnlen(outcome, STORE_TEXT_MAX + 1) > STORE_TEXT_MAX ||
	    (target && strnlen(target, STORE_TEXT_MAX + 1) > STORE_TEXT_MAX) ||
	    (detail && strnlen(detail, STORE_AUDIT_DETAIL_MAX + 1) > STORE_AUDIT_DETAIL_MAX))
		return -RY_E_TOO_BIG;
	pthread_mutex_lock(&c->lock);
	r = audit_locked(c, now_ms, actor, action, target, outcome, detail);
	pthread_mutex_unlock(&c->lock);
	return r;
}

void store_node_free(struct store_node *n)
{
	if (!n)
		return;
	free(n->id);
	free(n->cluster);
	free(n->hostname);
	free(n->state);
	free(n->cert_serial);
	free(n->cert_fingerprint);
	free(n->agent_version);
	free(n->facts_json);
	free(n);
}

void store_nodes_free(struct store_node **nodes, size_t n)
{
	if (!nodes)
		return;
	for (size_t i = 0; i < n; i++)
		store_node_free(nodes[i]);
	free(nodes);
}

/* Build a node from a row of NODE_COLUMNS. */
static int node_from_row(sqlite3_stmt *st, struct store_node **ret)
{
	struct store_node *n = calloc(1, sizeof(*n));
	char **cols[] = {&n->id,	  &n->cluster,		&n->hostname,	   &n->state,
			 &n->cert_serial, &n->cert_fingerprint, &n->agent_version, &n->facts_json};

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < RY_ARRAY_SIZE(cols); i++) {
		if (col_dup(st, (int)i, cols[i]) < 0) {
			store_node_free(n);
			return -ENOMEM;
		}
	}
	n->enrolled_at_ms = sqlite3_column_int64(st, 8);
	n->last_seen_ms = sqlite3_column_int64(st, 9);
	*ret = n;
	return 0;
}

/* By id, or else by hostname when unique across clusters. */
static int node_lookup_locked(struct store_conn *c, const char *key, struct store_node **ret)
{
	struct store_node *n = NULL;
	sqlite3_stmt *st = NULL;
	int r;

	r = q_start(c, STMT_NODE_BY_ID, &st, "t", key);
	if (r < 0)
		return r;
	r = q_step(c, st);
	if (r == 1) {
		r = node_from_row(st, ret);
		q_end(st);
		return r;
	}
	q_end(st);
	if (r < 0)
		return r;

	r = q_start(c, STMT_NODE_BY_HOSTNAME, &st, "t", key);
	if (r < 0)
		return r;
	r = q_step(c, st);
	if (r < 0)
		goto out;
	if (r == 0) {
		r = -RY_E_NOT_FOUND;
		goto out;
	}
	r = node_from_row(st, &n);
	if (r < 0)
		goto out;
	r = q_step(c, st);
	if (r < 0)
		goto out;
	if (r == 1) {
		r = -ENOTUNIQ;
		goto out;
	}
	*ret = n;
	n = NULL;
out:
	q_end(st);
	store_node_free(n);
	return r;
}

int store_node_get(struct store *s, const char *id_or_hostname, struct store_node **ret)
{
	struct store_conn *c = &s->r;
	struct store_node *n = NULL;
	int r;

	if (!s || !id_or_hostname || !ret)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = node_lookup_locked(c, id_or_hostname, &n);
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	*ret = n;
	return 0;
}

static int node_row(sqlite3_stmt *st, void *elem)
{
	return node_from_row(st, elem);
}

int store_nodes_list(struct store *s, struct store_node ***ret_nodes, size_t *ret_n)
{
	if (!s || !ret_nodes || !ret_n)
		return -EINVAL;
	return q_list(&s->r, STMT_NODE_LIST, sizeof(struct store_node *), node_row, nodes_free_v,
		      (void **)ret_nodes, ret_n, "");
}

/* After an UPDATE guarded by "state != 'revoked'" changed nothing: say why. */
/* 0 when the node exists and is not revoked; -RY_E_REVOKED, -RY_E_NOT_FOUND, -RY_E_DB. */
static int node_state_locked(struct store_conn *c, const char *id)
{
	sqlite3_stmt *st = NULL;
	int r;

	r = q_start(c, STMT_NODE_STATE, &st, "t", id);
	if (r < 0)
		return r;
	r = q_step(c, st);
	if (r == 0)
		r = -RY_E_NOT_FOUND;
	else if (r == 1)
		r = strcmp((const char *)sqlite3_column_text(st, 0), "revoked") == 0 ? -RY_E_REVOKED
										     : 0;
	q_end(st);
	return r;
}

static int node_why_unchanged_locked(struct store_conn *c, const char *id)
{
	int r = node_state_locked(c, id);

	return r == 0 ? db_fail_msg(c, "node update matched nothing") : r;
}

/* Run one of the per-node updates (each a single autocommit statement, so one transaction). */
static int node_update(struct store *s, const char *id, enum stmt_id stmt, int64_t now_ms,
		       const char *a, const char *b)
{
	struct store_conn *c = &s->w;
	int r, changed = 0;

	pthread_mutex_lock(&c->lock);
	switch (stmt) {
	case STMT_NODE_ONLINE:
		r = q_exec(c, &changed, stmt, "tltt", id, now_ms, a, b);
		break;
	case STMT_NODE_FACTS:
		r = q_exec(c, &changed, stmt, "tlt", id, now_ms, a);
		break;
	default:
		r = q_exec(c, &changed, stmt, "tl", id, now_ms);
		break;
	}
	if (r == 0 && changed == 0)
		r = node_why_unchanged_locked(c, id);
	pthread_mutex_unlock(&c->lock);
	return r;
}

int store_node_online(struct store *s, const char *id, const char *agent_version,
		      const char *facts_json, int64_t now_ms)
{
	int r;

	if (!s || !id)
		return -EINVAL;
	if (agent_version && strnlen(agent_version, STORE_TEXT_MAX + 1) > STORE_TEXT_MAX)
		return -RY_E_INVALID;
	if (facts_json) {
		r = facts_validate(facts_json);
		if (r < 0)
			return r;
	}
	return node_update(s, id, STMT_NODE_ONLINE, now_ms, agent_version, facts_json);
}

int store_node_touch(struct store *s, const char *id, int64_t now_ms)
{
	if (!s || !id)
		return -EINVAL;
	return node_update(s, id, STMT_NODE_TOUCH, now_ms, NULL, NULL);
}

int store_node_check(struct store *s, const char *id)
{
	struct store_conn *c = &s->r;
	int r;

	if (!s || !id)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = node_state_locked(c, id);
	pthread_mutex_unlock(&c->lock);
	return r;
}

int store_node_set_facts(struct store *s, const char *id, const char *facts_json, int64_t now_ms)
{
	int r;

	if (!s || !id || !facts_json)
		return -EINVAL;
	r = facts_validate(facts_json);
	if (r < 0)
		return r;
	return node_update(s, id, STMT_NODE_FACTS, now_ms, facts_json, NULL);
}

int store_node_offline(struct store *s, const char *id, int64_t now_ms)
{
	int r;

	if (!s || !id)
		return -EINVAL;
	r = node_update(s, id, STMT_NODE_OFFLINE, now_ms, NULL, NULL);
	/* The session of a revoked node ending is expected; it stays revoked. */
	return r == -RY_E_REVOKED ? 0 : r;
}

int store_nodes_expire(struct store *s, int64_t older_than_ms, int64_t now_ms, int *ret_count)
{
	struct store_conn *c = &s->w;
	int r, changed = 0;

	if (!s)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = q_exec(c, &changed, STMT_NODES_EXPIRE, "l", older_than_ms);
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	if (ret_count)
		*ret_count = changed;
	return 0;
}

int store_nodes_all_offline(struct store *s, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int r;

	if (!s)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = q_exec(c, NULL, STMT_NODES_ALL_OFFLINE, "");
	pthread_mutex_unlock(&c->lock);
	return r;
}

int store_nodes_seen(struct store *s, const char *const *ids, const int64_t *times_ms, size_t n)
{
	struct store_conn *c = &s->w;
	int r;

	if (!s || (n && (!ids || !times_ms)))
		return -EINVAL;
	if (n == 0)
		return 0;
	pthread_mutex_lock(&c->lock);
	r = tx_begin(c);
	for (size_t i = 0; r >= 0 && i < n; i++)
		r = q_exec(c, NULL, STMT_NODE_SEEN, "tl", ids[i], times_ms[i]);
	if (r >= 0)
		r = tx_commit(c);
	else
		tx_rollback(c);
	pthread_mutex_unlock(&c->lock);
	return r;
}

void store_ids_free(char **ids, size_t n)
{
	if (!ids)
		return;
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
}

static int id_row(sqlite3_stmt *st, void *elem)
{
	return col_dup(st, 0, elem);
}

int store_nodes_revoked(struct store *s, char ***ret_ids, size_t *ret_n)
{
	if (!s || !ret_ids || !ret_n)
		return -EINVAL;
	return q_list(&s->r, STMT_NODES_REVOKED, sizeof(char *), id_row, ids_free_v,
		      (void **)ret_ids, ret_n, "");
}

int store_data_version(struct store *s, int64_t *ret)
{
	struct store_conn *c = &s->r;
	sqlite3_stmt *st = NULL;
	int r;

	if (!s || !ret)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = q_start(c, STMT_DATA_VERSION, &st, "");
	if (r >= 0)
		r = q_step(c, st);
	if (r == 1) {
		*ret = sqlite3_column_int64(st, 0);
		r = 0;
	} else if (r == 0) {
		r = db_fail_msg(c, "data_version returned no row");
	}
	q_end(st);
	pthread_mutex_unlock(&c->lock);
	return r;
}

int store_node_revoke(struct store *s, const char *id_or_hostname, const char *actor,
		      int64_t now_ms, char **ret_node_id)
{
	struct store_conn *c = &s->w;
	struct store_node *n = NULL;
	char *detail = NULL;
	int r;

	if (!s || !id_or_hostname || !actor)
		return -EINVAL;
	if (!text_ok(actor, STORE_TEXT_MAX))
		return -RY_E_INVALID;
	pthread_mutex_lock(&c->lock);
	r = tx_begin(c);
	if (r < 0)
		goto unlock;
	r = node_lookup_locked(c, id_or_hostname, &n);
	if (r < 0)
		goto rollback;
	if (strcmp(n->state, "revoked") == 0) {
		r = tx_commit(c);
		goto unlock;
	}
	r = q_exec(c, NULL, STMT_NODE_REVOKE, "tl", n->id, now_ms);
	if (r < 0)
		goto rollback;
	r = q_exec(c, NULL, STMT_REVOKED_INSERT, "ttl", n->cert_serial, n->id, now_ms);
	if (r < 0)
		goto rollback;
	if (asprintf(&detail, "cluster=%s hostname=%s serial=%s", n->cluster, n->hostname,
		     n->cert_serial) < 0) {
		detail = NULL;
		r = -ENOMEM;
		goto rollback;
	}
	r = audit_locked(c, now_ms, actor, "node.revoke", n->id, "success", detail);
	if (r < 0)
		goto rollback;
	r = tx_commit(c);
	goto unlock;
rollback:
	tx_rollback(c);
unlock:
	pthread_mutex_unlock(&c->lock);
	free(detail);
	if (r == 0 && ret_node_id) {
		*ret_node_id = n->id;
		n->id = NULL;
	}
	store_node_free(n);
	return r;
}

int store_cert_is_revoked(struct store *s, const char *serial_hex)
{
	struct store_conn *c = &s->r;
	sqlite3_stmt *st = NULL;
	int r;

	if (!s || !serial_hex)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = q_start(c, STMT_REVOKED_GET, &st, "t", serial_hex);
	if (r == 0)
		r = q_step(c, st);
	q_end(st);
	pthread_mutex_unlock(&c->lock);
	return r;
}

void store_audit_entries_free(struct store_audit_entry *e, size_t n)
{
	if (!e)
		return;
	for (size_t i = 0; i < n; i++) {
		free(e[i].actor);
		free(e[i].action);
		free(e[i].target);
		free(e[i].outcome);
		free(e[i].detail);
	}
	free(e);
}

static int audit_row(sqlite3_stmt *st, void *elem)
{
	struct store_audit_entry *e = elem;

	e->at_ms = sqlite3_column_int64(st, 0);
	if (col_dup(st, 1, &e->actor) < 0 || col_dup(st, 2, &e->action) < 0 ||
	    col_dup(st, 3, &e->target) < 0 || col_dup(st, 4, &e->outcome) < 0 ||
	    col_dup(st, 5, &e->detail) < 0)
		return -ENOMEM;
	return 0;
}

int store_audit_list(struct store *s, size_t limit, struct store_audit_entry **ret, size_t *ret_n)
{
	if (!s || !ret || !ret_n)
		return -EINVAL;
	if (limit > STORE_AUDIT_LIST_MAX)
		limit = STORE_AUDIT_LIST_MAX;
	return q_list(&s->r, STMT_AUDIT_LIST, sizeof(struct store_audit_entry), audit_row,
		      audit_free_v, (void **)ret, ret_n, "l", (int64_t)limit);
}

/* ---- deployments ---------------------------------------------------------------------------- */

static bool deploy_state_ok(const char *st)
{
	static const char *const states[] = {"pending", "running", "succeeded", "partial",
					     "failed"};

	for (size_t i = 0; st && i < RY_ARRAY_SIZE(states); i++)
		if (strcmp(st, states[i]) == 0)
			return true;
	return false;
}

static bool deploy_node_state_ok(const char *st)
{
	static const char *const states[] = {"waiting", "sent",	       "succeeded",
					     "failed",	"unreachable", "skipped"};

	for (size_t i = 0; st && i < RY_ARRAY_SIZE(states); i++)
		if (strcmp(st, states[i]) == 0)
			return true;
	return false;
}

int store_deployment_create(struct store *s, const struct store_deployment_new *d,
			    const struct store_deploy_target *targets, size_t n, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	sqlite3_stmt *st = NULL;
	int64_t cluster_id = 0, playbook_id = 0;
	int r;

	if (!s || !d || (n && !targets) || !text_ok(d->id, STORE_TEXT_MAX) ||
	    !text_ok(d->cluster, STORE_TEXT_MAX) || !text_ok(d->playbook_name, STORE_TEXT_MAX) ||
	    !text_ok(d->playbook_version, STORE_TEXT_MAX) ||
	    !text_ok(d->playbook_sha256, STORE_TEXT_MAX) || !d->playbook_text || !d->policy_json ||
	    !d->actor)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!text_ok(targets[i].node_id, STORE_TEXT_MAX) ||
		    !text_ok(targets[i].hostname, STORE_TEXT_MAX) || targets[i].batch < 0)
			return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = tx_begin(c);
	if (r < 0)
		goto out;
	r = q_start(c, STMT_CLUSTER_ID, &st, "t", d->cluster);
	if (r >= 0) {
		r = q_step(c, st);
		if (r == 1)
			cluster_id = sqlite3_column_int64(st, 0);
		r = r == 1 ? 0 : r == 0 ? -RY_E_NOT_FOUND : r;
	}
	q_end(st);
	st = NULL;
	if (r < 0)
		goto fail;
	r = q_exec(c, NULL, STMT_PLAYBOOK_PUT, "ttttl", d->playbook_name, d->playbook_version,
		   d->playbook_sha256, d->playbook_text, now_ms);
	if (r >= 0)
		r = q_start(c, STMT_PLAYBOOK_ID, &st, "t", d->playbook_sha256);
	if (r >= 0) {
		r = q_step(c, st);
		if (r == 1)
			playbook_id = sqlite3_column_int64(st, 0);
		r = r == 1 ? 0 : r == 0 ? db_fail_msg(c, "playbook vanished") : r;
	}
	q_end(st);
	if (r < 0)
		goto fail;
	r = q_exec(c, NULL, STMT_DEPLOY_INSERT, "tllltl", d->id, cluster_id, playbook_id,
		   (int64_t)d->check_mode, d->policy_json, now_ms);
	for (size_t i = 0; r >= 0 && i < n; i++)
		r = q_exec(c, NULL, STMT_DEPLOY_NODE_INSERT, "tttl", d->id, targets[i].node_id,
			   targets[i].hostname, (int64_t)targets[i].batch);
	if (r >= 0)
		r = audit_locked(c, now_ms, d->actor,
				 d->check_mode ? "deploy.check" : "deploy.apply", d->id, "created",
				 d->playbook_name);
	if (r < 0)
		goto fail;
	r = tx_commit(c);
	goto out;
fail:
	tx_rollback(c);
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

void store_deployment_free(struct store_deployment *d)
{
	if (!d)
		return;
	free(d->id);
	free(d->cluster);
	free(d->playbook_name);
	free(d->playbook_version);
	free(d->playbook_sha256);
	free(d->policy_json);
	free(d->state);
	free(d->reason);
	free(d);
}

void store_deployments_free(struct store_deployment **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		store_deployment_free(v[i]);
	free(v);
}

static int deployment_from_row(sqlite3_stmt *st, struct store_deployment **ret)
{
	struct store_deployment *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	if (col_dup(st, 0, &d->id) < 0 || col_dup(st, 1, &d->cluster) < 0 ||
	    col_dup(st, 2, &d->playbook_name) < 0 || col_dup(st, 3, &d->playbook_version) < 0 ||
	    col_dup(st, 4, &d->playbook_sha256) < 0 || col_dup(st, 6, &d->policy_json) < 0 ||
	    col_dup(st, 7, &d->state) < 0 || col_dup(st, 8, &d->reason) < 0) {
		store_deployment_free(d);
		return -ENOMEM;
	}
	d->check_mode = sqlite3_column_int(st, 5) != 0;
	d->current_batch = sqlite3_column_int(st, 9);
	d->created_at_ms = sqlite3_column_int64(st, 10);
	d->finished_at_ms = sqlite3_column_int64(st, 11);
	*ret = d;
	return 0;
}

int store_deployment_get(struct store *s, const char *id, struct store_deployment **ret)
{
	struct store_conn *c = &s->r;
	sqlite3_stmt *st = NULL;
	int r;

	if (!s || !id || !ret)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = q_start(c, STMT_DEPLOY_GET, &st, "t", id);
	if (r >= 0) {
		r = q_step(c, st);
		if (r == 1)
			r = deployment_from_row(st, ret);
		else if (r == 0)
			r = -RY_E_NOT_FOUND;
	}
	q_end(st);
	pthread_mutex_unlock(&c->lock);
	return r;
}

static int deployment_row(sqlite3_stmt *st, void *elem)
{
	return deployment_from_row(st, elem);
}

int store_deployments_list(struct store *s, bool active_only, size_t limit,
			   struct store_deployment ***ret, size_t *ret_n)
{
	if (!s || !ret || !ret_n)
		return -EINVAL;
	if (active_only)
		return q_list(&s->r, STMT_DEPLOY_LIST_ACTIVE, sizeof(struct store_deployment *),
			      deployment_row, deployments_free_v, (void **)ret, ret_n, "");
	return q_list(&s->r, STMT_DEPLOY_LIST, sizeof(struct store_deployment *), deployment_row,
		      deployments_free_v, (void **)ret, ret_n, "l", (int64_t)(limit ? limit : 50));
}

int store_deployment_playbook_text(struct store *s, const char *id, char **ret_text)
{
	struct store_conn *c = &s->r;
	sqlite3_stmt *st = NULL;
	int r;

	if (!s || !id || !ret_text)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = q_start(c, STMT_DEPLOY_TEXT, &st, "t", id);
	if (r >= 0) {
		r = q_step(c, st);
		if (r == 1)
			r = col_dup(st, 0, ret_text);
		else if (r == 0)
			r = -RY_E_NOT_FOUND;
	}
	q_end(st);
	pthread_mutex_unlock(&c->lock);
	return r;
}

int store_deployment_update(struct store *s, const char *id, const char *state, const char *reason,
			    int current_batch, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	bool terminal;
	int changes = 0, r;

	if (!s || !id || !deploy_state_ok(state) || current_batch < 0)
		return -EINVAL;
	terminal = strcmp(state, "pending") != 0 && strcmp(state, "running") != 0;
	pthread_mutex_lock(&c->lock);
	r = q_exec(c, &changes, STMT_DEPLOY_UPDATE, "tttll", id, state, reason,
		   (int64_t)current_batch, terminal ? now_ms : (int64_t)0);
	if (r >= 0 && changes == 0)
		r = -RY_E_NOT_FOUND;
	pthread_mutex_unlock(&c->lock);
	return r;
}

void store_deploy_nodes_free(struct store_deploy_node *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		free(v[i].node_id);
		free(v[i].hostname);
		free(v[i].state);
		free(v[i].message);
	}
	free(v);
}

static int deploy_node_row(sqlite3_stmt *st, void *elem)
{
	struct store_deploy_node *e = elem;

	if (col_dup(st, 0, &e->node_id) < 0 || col_dup(st, 1, &e->hostname) < 0 ||
	    col_dup(st, 3, &e->state) < 0 || col_dup(st, 8, &e->message) < 0)
		return -ENOMEM;
	e->batch = sqlite3_column_int(st, 2);
	e->ok = sqlite3_column_int(st, 4);
	e->changed = sqlite3_column_int(st, 5);
	e->failed = sqlite3_column_int(st, 6);
	e->skipped = sqlite3_column_int(st, 7);
	e->sent_at_ms = sqlite3_column_int64(st, 9);
	e->finished_at_ms = sqlite3_column_int64(st, 10);
	return 0;
}

int store_deploy_nodes(struct store *s, const char *id, struct store_deploy_node **ret,
		       size_t *ret_n)
{
	if (!s || !id || !ret || !ret_n)
		return -EINVAL;
	return q_list(&s->r, STMT_DEPLOY_NODES, sizeof(struct store_deploy_node), deploy_node_row,
		      deploy_nodes_free_v, (void **)ret, ret_n, "t", id);
}

int store_deploy_node_update(struct store *s, const char *id, const char *node_id,
			     const char *state, const char *message, const int counts[4],
			     int64_t now_ms)
{
	struct store_conn *c = &s->w;
	static const int zero[4] = {0, 0, 0, 0};
	int changes = 0, r;

	if (!s || !id || !node_id || !deploy_node_state_ok(state))
		return -EINVAL;
	if (!counts)
		counts = zero;
	pthread_mutex_lock(&c->lock);
	r = q_exec(c, &changes, STMT_DEPLOY_NODE_UPDATE, "ttttlllll", id, node_id, state, message,
		   (int64_t)counts[0], (int64_t)counts[1], (int64_t)counts[2], (int64_t)counts[3],
		   now_ms);
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	return changes > 0 ? 1 : 0;
}

static bool step_status_ok(const char *status)
{
	static const char *const statuses[] = {"ok", "changed", "failed", "skipped"};

	for (size_t i = 0; status && i < RY_ARRAY_SIZE(statuses); i++)
		if (strcmp(status, statuses[i]) == 0)
			return true;
	return false;
}

int store_deploy_node_sent(struct store *s, const char *id, const char *node_id, int plan_steps,
			   int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int changes = 0, r;

	if (!s || !id || !node_id || plan_steps < 0)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = q_exec(c, &changes, STMT_DEPLOY_NODE_SENT, "ttll", id, node_id, now_ms,
		   (int64_t)plan_steps);
	pthread_mutex_unlock(&c->lock);
	return r < 0 ? r : changes > 0;
}

/* The deployment node row of (id, node_id): its state (copied into state), plan_steps (-1 when
 * the plan was never sent), result_bytes and counts. -RY_E_NOT_FOUND when the node is not
 * part of the deployment. */
struct dnode_row {
	char state[16];
	bool sent;	    /* the plan was sent to it (it may have finished since) */
	int64_t plan_steps; /* steps of that plan; -1: unknown (sent before schema v6) */
	int64_t result_bytes;
	int counts[4];
};

static int dnode_get_locked(struct store_conn *c, const char *id, const char *node_id,
			    struct dnode_row *row)
{
	sqlite3_stmt *st = NULL;
	int r;

	r = q_start(c, STMT_DEPLOY_NODE_GET, &st, "tt", id, node_id);
	if (r < 0)
		return r;
	r = q_step(c, st);
	if (r == 1) {
		snprintf(row->state, sizeof(row->state), "%s",
			 (const char *)sqlite3_column_text(st, 0));
		row->sent = sqlite3_column_type(st, 1) != SQLITE_NULL;
		row->plan_steps = row->sent ? sqlite3_column_int64(st, 1) : -1;
		row->result_bytes = sqlite3_column_int64(st, 2);
		for (int i = 0; i < 4; i++)
			row->counts[i] = sqlite3_column_int(st, 3 + i);
		r = 0;
	} else if (r == 0) {
		r = -RY_E_NOT_FOUND;
	}
	q_end(st);
	return r;
}

static bool same_text(const unsigned char *stored, const char *v)
{
	return strcmp(stored ? (const char *)stored : "", v ? v : "") == 0;
}

int store_report_step(struct store *s, const char *id, const char *node_id,
		      const struct store_step_result *res, char *why, size_t whylen)
{
	static const char elided[] = "(diff not stored: this node's results for the deployment "
				     "are over their size budget)\n";
	struct store_conn *c = &s->w;
	struct dnode_row row;
	sqlite3_stmt *st = NULL;
	const char *diff;
	size_t bytes;
	int r;

	if (!s || !id || !node_id || !res || !res->name || res->idx < 0 || !why)
		return -EINVAL;
	if (!step_status_ok(res->status))
		return -RY_E_INVALID;
	diff = res->diff ? res->diff : "";
	bytes = strlen(diff) + (res->message ? strlen(res->message) : 0);
	pthread_mutex_lock(&c->lock);
	r = tx_begin(c);
	if (r < 0)
		goto out;
	r = dnode_get_locked(c, id, node_id, &row);
	if (r == -RY_E_NOT_FOUND) {
		snprintf(why, whylen, "node %s is not part of deployment %s", node_id, id);
		r = -RY_E_REFUSED;
	}
	if (r < 0)
		goto rollback;
	/* Stored before? The same report is a re-send; a different one is never an overwrite. */
	r = q_start(c, STMT_STEP_GET, &st, "ttl", id, node_id, (int64_t)res->idx);
	if (r >= 0)
		r = q_step(c, st);
	if (r == 1) {
		const unsigned char *stored_diff = sqlite3_column_text(st, 2);
		bool same = same_text(sqlite3_column_text(st, 0), res->name) &&
			    same_text(sqlite3_column_text(st, 1), res->status) &&
			    same_text(sqlite3_column_text(st, 3), res->message) &&
			    (same_text(stored_diff, diff) || same_text(stored_diff, elided));

		if (same) {
			r = STORE_REPORT_DUPLICATE;
		} else {
			snprintf(why, whylen,
				 "step %d of deployment %s was already reported as %s; a result is "
				 "never overwritten",
				 res->idx, id, (const char *)sqlite3_column_text(st, 1));
			r = -RY_E_REFUSED;
		}
		q_end(st);
		goto rollback; /* nothing to write */
	}
	q_end(st);
	if (r < 0)
		goto rollback;
	if (strcmp(row.state, "sent") != 0) {
		if (!row.sent)
			snprintf(why, whylen, "deployment %s never sent its plan to node %s (%s)",
				 id, node_id, row.state);
		else
			snprintf(why, whylen,
				 "deployment %s is no longer running on node %s (%s): step %d "
				 "refused",
				 id, node_id, row.state, res->idx);
		r = -RY_E_REFUSED;
		goto rollback;
	}
	if (row.plan_steps >= 0 && res->idx >= row.plan_steps) {
		snprintf(why, whylen, "step %d is not in the plan node %s was sent (%lld steps)",
			 res->idx, node_id, (long long)row.plan_steps);
		r = -RY_E_REFUSED;
		goto rollback;
	}
	if (row.result_bytes + (int64_t)bytes > RY_PROTO_RESULT_BYTES_MAX) {
		diff = elided;
		bytes = strlen(elided) + (res->message ? strlen(res->message) : 0);
	}
	r = q_exec(c, NULL, STMT_STEP_INSERT, "ttlttttl", id, node_id, (int64_t)res->idx, res->name,
		   res->status, diff, res->message, res->duration_ms);
	if (r >= 0)
		r = q_exec(c, NULL, STMT_DEPLOY_NODE_BYTES, "ttl", id, node_id, (int64_t)bytes);
	if (r >= 0)
		r = tx_commit(c);
	if (r >= 0)
		r = STORE_REPORT_STORED;
	goto out;
rollback:
	tx_rollback(c);
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* Counts {ok, changed, failed, skipped} and total of the stored step results of a node. */
static int step_counts_locked(struct store_conn *c, const char *id, const char *node_id,
			      int counts[4], int *ret_total)
{
	static const char *const order[] = {"ok", "changed", "failed", "skipped"};
	sqlite3_stmt *st = NULL;
	int r, total = 0;

	memset(counts, 0, 4 * sizeof(int));
	r = q_start(c, STMT_STEP_COUNTS, &st, "tt", id, node_id);
	if (r < 0)
		return r;
	while ((r = q_step(c, st)) == 1) {
		const char *status = (const char *)sqlite3_column_text(st, 0);

		for (int i = 0; i < 4; i++)
			if (strcmp(status, order[i]) == 0)
				counts[i] = sqlite3_column_int(st, 1);
		total += sqlite3_column_int(st, 1);
	}
	q_end(st);
	*ret_total = total;
	return r;
}

int store_report_apply_done(struct store *s, const char *id, const char *node_id, const char *state,
			    const char *message, const int counts[4], int64_t now_ms, char *why,
			    size_t whylen)
{
	struct store_conn *c = &s->w;
	struct dnode_row row;
	int stored[4], total = 0, changes = 0, r;
	bool failed;

	if (!s || !id || !node_id || !counts || !why || !state ||
	    (strcmp(state, "succeeded") != 0 && strcmp(state, "failed") != 0))
		return -EINVAL;
	failed = strcmp(state, "failed") == 0;
	pthread_mutex_lock(&c->lock);
	r = tx_begin(c);
	if (r < 0)
		goto out;
	r = dnode_get_locked(c, id, node_id, &row);
	if (r == -RY_E_NOT_FOUND) {
		snprintf(why, whylen, "node %s is not part of deployment %s", node_id, id);
		r = -RY_E_REFUSED;
	}
	if (r < 0)
		goto rollback;
	if (strcmp(row.state, "sent") != 0) {
		if (strcmp(row.state, state) == 0 &&
		    memcmp(row.counts, counts, sizeof(row.counts)) == 0)
			r = STORE_REPORT_DUPLICATE;
		else if (!row.sent)
			snprintf(why, whylen, "deployment %s never sent its plan to node %s (%s)",
				 id, node_id, row.state);
		else
			snprintf(why, whylen, "deployment %s already finished on node %s as %s", id,
				 node_id, row.state);
		if (r != STORE_REPORT_DUPLICATE)
			r = -RY_E_REFUSED;
		goto rollback;
	}
	r = step_counts_locked(c, id, node_id, stored, &total);
	if (r < 0)
		goto rollback;
	if (total == 0 && failed && !counts[0] && !counts[1] && !counts[2] && !counts[3]) {
		/* The agent refused the plan as a whole: no step ran. */
	} else if (row.plan_steps >= 0 && total != row.plan_steps) {
		snprintf(
			why, whylen,
			"the end of deployment %s came before its step results (%d of %lld stored)",
			id, total, (long long)row.plan_steps);
		r = -RY_E_REFUSED;
		goto rollback;
	} else if (memcmp(stored, counts, sizeof(stored)) != 0 || failed != (stored[2] > 0)) {
		snprintf(why, whylen,
			 "the end of deployment %s (%s: ok %d, changed %d, failed %d, skipped %d) "
			 "contradicts its step results (ok %d, changed %d, failed %d, skipped %d)",
			 id, state, counts[0], counts[1], counts[2], counts[3], stored[0],
			 stored[1], stored[2], stored[3]);
		r = -RY_E_REFUSED;
		goto rollback;
	}
	r = q_exec(c, &changes, STMT_DEPLOY_NODE_DONE, "ttttlllll", id, node_id, state, message,
		   (int64_t)counts[0], (int64_t)counts[1], (int64_t)counts[2], (int64_t)counts[3],
		   now_ms);
	if (r >= 0 && changes != 1)
		r = db_fail_msg(c, "deployment node vanished");
	if (r >= 0)
		r = tx_commit(c);
	if (r >= 0)
		r = STORE_REPORT_STORED;
	goto out;
rollback:
	tx_rollback(c);
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

void store_step_results_free(struct store_step_result *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		free(v[i].node_id);
		free(v[i].name);
		free(v[i].status);
		free(v[i].diff);
		free(v[i].message);
	}
	free(v);
}

static int step_row(sqlite3_stmt *st, void *elem)
{
	struct store_step_result *e = elem;

	if (col_dup(st, 0, &e->node_id) < 0 || col_dup(st, 2, &e->name) < 0 ||
	    col_dup(st, 3, &e->status) < 0 || col_dup(st, 4, &e->diff) < 0 ||
	    col_dup(st, 5, &e->message) < 0)
		return -ENOMEM;
	e->idx = sqlite3_column_int(st, 1);
	e->duration_ms = sqlite3_column_int64(st, 6);
	return 0;
}

int store_step_results(struct store *s, const char *id, struct store_step_result **ret,
		       size_t *ret_n)
{
	if (!s || !id || !ret || !ret_n)
		return -EINVAL;
	return q_list(&s->r, STMT_STEP_LIST, sizeof(struct store_step_result), step_row,
		      step_results_free_v, (void **)ret, ret_n, "t", id);
}

/* ---- benchmark runs -------------------------------------------------------------------------- */

int store_bench_create(struct store *s, const char *id, const char *kind, const char *transport,
		       const char *client_node, const char *server_node, const char *params_json,
		       int64_t deadline_ms, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int r;

	if (!s || !text_ok(id, STORE_TEXT_MAX) || !text_ok(kind, STORE_TEXT_MAX) ||
	    !text_ok(transport, STORE_TEXT_MAX) || !text_ok(client_node, STORE_TEXT_MAX) ||
	    !text_ok(server_node, STORE_TEXT_MAX) || !params_json || deadline_ms <= 0)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = q_exec(c, NULL, STMT_BENCH_INSERT, "ttttttll", id, kind, transport, client_node,
		   server_node, params_json, deadline_ms, now_ms);
	pthread_mutex_unlock(&c->lock);
	return r;
}

void store_bench_run_free(struct store_bench_run *b)
{
	if (!b)
		return;
	free(b->id);
	free(b->kind);
	free(b->transport);
	free(b->client_node);
	free(b->server_node);
	free(b->server_address);
	free(b->params_json);
	free(b->state);
	free(b->result_json);
	free(b->server_result_json);
	free(b->error);
	free(b);
}

void store_bench_runs_free(struct store_bench_run **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		store_bench_run_free(v[i]);
	free(v);
}

static int bench_from_row(sqlite3_stmt *st, struct store_bench_run **ret)
{
	struct store_bench_run *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	if (col_dup(st, 0, &b->id) < 0 || col_dup(st, 1, &b->kind) < 0 ||
	    col_dup(st, 2, &b->transport) < 0 || col_dup(st, 3, &b->client_node) < 0 ||
	    col_dup(st, 4, &b->server_node) < 0 || col_dup(st, 5, &b->server_address) < 0 ||
	    col_dup(st, 6, &b->params_json) < 0 || col_dup(st, 7, &b->state) < 0 ||
	    col_dup(st, 9, &b->result_json) < 0 || col_dup(st, 10, &b->server_result_json) < 0 ||
	    col_dup(st, 11, &b->error) < 0) {
		store_bench_run_free(b);
		return -ENOMEM;
	}
	b->server_port = sqlite3_column_int(st, 8);
	b->deadline_ms = sqlite3_column_int64(st, 12);
	b->created_at_ms = sqlite3_column_int64(st, 13);
	b->finished_at_ms = sqlite3_column_int64(st, 14);
	b->cancel_requested_ms = sqlite3_column_int64(st, 15);
	*ret = b;
	return 0;
}

int store_bench_get(struct store *s, const char *id, struct store_bench_run **ret)
{
	struct store_conn *c = &s->r;
	sqlite3_stmt *st = NULL;
	int r;

	if (!s || !id || !ret)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = q_start(c, STMT_BENCH_GET, &st, "t", id);
	if (r >= 0) {
		r = q_step(c, st);
		if (r == 1)
			r = bench_from_row(st, ret);
		else if (r == 0)
			r = -RY_E_NOT_FOUND;
	}
	q_end(st);
	pthread_mutex_unlock(&c->lock);
	return r;
}

static int bench_row(sqlite3_stmt *st, void *elem)
{
	return bench_from_row(st, elem);
}

int store_bench_list(struct store *s, bool active_only, size_t limit, struct store_bench_run ***ret,
		     size_t *ret_n)
{
	if (!s || !ret || !ret_n)
		return -EINVAL;
	if (active_only)
		return q_list(&s->r, STMT_BENCH_LIST_ACTIVE, sizeof(struct store_bench_run *),
			      bench_row, bench_runs_free_v, (void **)ret, ret_n, "");
	return q_list(&s->r, STMT_BENCH_LIST, sizeof(struct store_bench_run *), bench_row,
		      bench_runs_free_v, (void **)ret, ret_n, "l", (int64_t)(limit ? limit : 50));
}

int store_bench_update(struct store *s, const char *id, const char *state,
		       const char *server_address, int server_port, const char *result_json,
		       const char *server_result_json, const char *error, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	static const char *const states[] = {"pending",	    "server_sent", "server_ready",
					     "client_sent", "succeeded",   "failed",
					     "cancelled"};
	bool ok = false;
	int changes = 0, r;
	sqlite3_stmt *st = NULL;

	for (size_t i = 0; state && i < RY_ARRAY_SIZE(states); i++)
		ok |= strcmp(state, states[i]) == 0;
	if (!s || !id || !ok || server_port < 0 || server_port > 65535)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = q_start(c, STMT_BENCH_UPDATE, &st, "tttltttl", id, state, server_address,
		    (int64_t)server_port, result_json, server_result_json, error, now_ms);
	if (r >= 0) {
		/* A zero port means "keep": bind NULL in its place. */
		if (server_port == 0)
			sqlite3_bind_null(st, 4);
		r = q_step(c, st);
		if (r >= 0)
			changes = sqlite3_changes(c->db);
	}
	q_end(st);
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	return changes > 0 ? 1 : 0;
}

bool store_bench_state_final(const char *state)
{
	return state && (strcmp(state, "succeeded") == 0 || strcmp(state, "failed") == 0 ||
			 strcmp(state, "cancelled") == 0);
}

int store_bench_request_cancel(struct store *s, const char *id, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	struct store_bench_run *b = NULL;
	int changes = 0, r;

	if (!s || !id)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = q_exec(c, &changes, STMT_BENCH_CANCEL, "tl", id, now_ms);
	pthread_mutex_unlock(&c->lock);
	if (r < 0 || changes > 0)
		return r < 0 ? r : 1;
	/* Nothing moved: finished, or no such run. */
	r = store_bench_get(s, id, &b);
	store_bench_run_free(b);
	return r < 0 ? r : 0;
}
