/* The controller's SQLite store, core: two connections (writer, reader) each behind its mutex,
 * statements prepared once per connection and cached, transactions, errors, opening and schema
 * migrations. The table groups are in store_nodes.c, store_audit.c, store_deploy.c and
 * store_bench.c. */
#include "controller/store/store_int.h"

#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define STORE_BUSY_TIMEOUT_MS 5000

static struct store_sql SQL_BEGIN = STORE_SQL("BEGIN IMMEDIATE");
static struct store_sql SQL_COMMIT = STORE_SQL("COMMIT");
/* Nested levels are savepoints of one name: RELEASE and ROLLBACK TO act on the innermost. */
static struct store_sql SQL_SAVEPOINT = STORE_SQL("SAVEPOINT ry");
static struct store_sql SQL_RELEASE = STORE_SQL("RELEASE ry");
static struct store_sql SQL_ROLLBACK_TO = STORE_SQL("ROLLBACK TO ry");
static struct store_sql SQL_DATA_VERSION = STORE_SQL("PRAGMA data_version");
static struct store_sql SQL_ROLLBACK = STORE_SQL("ROLLBACK");
static struct store_sql SQL_USER_VERSION = STORE_SQL("PRAGMA user_version");

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

/* Is the file system that holds path mounted read-only (or remounted so after an error)? */
static bool read_only_fs(const char *path)
{
	struct statvfs sv;

	return path && statvfs(path, &sv) == 0 && (sv.f_flag & ST_RDONLY);
}

/* Record SQLite's message for a failed call and map rc to a project error. Caller holds the
 * connection's lock (or owns the store exclusively during open). */
int store_db_fail(struct store_conn *c, int rc, const char *what)
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
	case SQLITE_IOERR:
		if (rc == SQLITE_IOERR_NOMEM)
			return -ENOMEM;
		/* SQLite keeps the errno of the failed system call: a full disk, a file system
		 * gone read-only or a failing disk say so, not "database error". */
		switch (c->db ? sqlite3_system_errno(c->db) : 0) {
		case EACCES:
			if ((rc & 0xff) != SQLITE_IOERR)
				return -EACCES;
			break;
		case ENOSPC:
			return -RY_E_DISK_FULL;
		case EROFS:
			return -EROFS;
		}
		/* That errno is not always kept (SQLite reads errno after other calls): ask the
		 * file system itself. */
		if (read_only_fs(c->s->path))
			return -EROFS;
		return (rc & 0xff) == SQLITE_IOERR ? -EIO : -RY_E_DB;
	default:
		return -RY_E_DB;
	}
}

/* Record an inconsistency found by the store itself (no SQLite message to report). */
int store_db_fail_msg(struct store_conn *c, const char *msg)
{
	set_errmsg(c->s, "%s", msg);
	return -RY_E_DB;
}

/* Return the cached statement id, preparing it on first use, with parameters bound from fmt:
 * 't' const char * (NULL binds NULL), 'l' int64_t. Text is bound SQLITE_STATIC: the caller
 * keeps it alive until store_q_end(). */
int store_q_vstart(struct store_conn *c, struct store_sql *q, sqlite3_stmt **ret, const char *fmt,
		   va_list ap)
{
	static _Atomic int next_slot;
	int slot = q->slot, rc, i = 1;
	sqlite3_stmt *st;

	if (!slot) {
		/* First use anywhere: take a slot (two threads racing waste one, harmlessly). */
		int want = ++next_slot, expected = 0;

		slot = atomic_compare_exchange_strong(&q->slot, &expected, want) ? want : expected;
	}
	if (slot > STORE_STMT_MAX) {
		set_errmsg(c->s, "more than %d kinds of statements", STORE_STMT_MAX);
		return -EINVAL;
	}
	st = c->stmts[slot - 1];
	if (!st) {
		rc = sqlite3_prepare_v3(c->db, q->text, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
		if (rc != SQLITE_OK)
			return store_db_fail(c, rc, "prepare");
		c->stmts[slot - 1] = st;
	}
	/* Catches a format string out of step with its SQL (a programmer error). */
	if ((int)strlen(fmt) != sqlite3_bind_parameter_count(st)) {
		set_errmsg(c->s, "statement %.60s: %zu values for %d parameters", q->text,
			   strlen(fmt), sqlite3_bind_parameter_count(st));
		return -EINVAL;
	}
	for (const char *f = fmt; *f; f++, i++) {
		if (*f == 't') {
			const char *v = va_arg(ap, const char *);

			rc = v ? sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC)
			       : sqlite3_bind_null(st, i);
		} else if (*f == 'd') {
			rc = sqlite3_bind_double(st, i, va_arg(ap, double));
		} else {
			rc = sqlite3_bind_int64(st, i, va_arg(ap, int64_t));
		}
		if (rc != SQLITE_OK) {
			sqlite3_clear_bindings(st);
			return store_db_fail(c, rc, "bind");
		}
	}
	*ret = st;
	return 0;
}

int store_q_start(struct store_conn *c, struct store_sql *q, sqlite3_stmt **ret, const char *fmt,
		  ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = store_q_vstart(c, q, ret, fmt, ap);
	va_end(ap);
	return r;
}

/* Step st: 1 for a row, 0 when done, negative error. */
int store_q_step(struct store_conn *c, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	return store_db_fail(c, rc, "step");
}

/* Make st ready for its next use; NULL is fine. */
void store_q_end(sqlite3_stmt *st)
{
	if (!st)
		return;
	(void)sqlite3_reset(st);
	(void)sqlite3_clear_bindings(st);
}

/* Run a statement that returns no rows; *ret_changes (if not NULL) gets the rows changed. */
int store_q_exec(struct store_conn *c, int *ret_changes, struct store_sql *q, const char *fmt, ...)
{
	sqlite3_stmt *st = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = store_q_vstart(c, q, &st, fmt, ap);
	va_end(ap);
	if (r < 0)
		return r;
	r = store_q_step(c, st);
	store_q_end(st);
	if (r < 0)
		return r;
	if (ret_changes)
		*ret_changes = sqlite3_changes(c->db);
	return 0;
}

/* BEGIN IMMEDIATE without waiting for another process's write lock under c->lock: SQLite's
 * busy timeout would sleep with the mutex held and queue every other writer of this process
 * (the rollout, the API, enrollment) behind, say, a backup. The wait is ours instead, with the
 * mutex let go between tries, up to the same STORE_BUSY_TIMEOUT_MS. Caller holds c->lock once,
 * and no transaction is open. */
static int begin_immediate(struct store_conn *c)
{
	int64_t deadline = util_now_mono_ms() + STORE_BUSY_TIMEOUT_MS;
	int delay_ms = 1, r;

	(void)sqlite3_busy_timeout(c->db, 0);
	for (;;) {
		r = store_q_exec(c, NULL, &SQL_BEGIN, "");
		if (r != -RY_E_BUSY || util_now_mono_ms() >= deadline)
			break;
		pthread_mutex_unlock(&c->lock);
		usleep((useconds_t)delay_ms * 1000);
		pthread_mutex_lock(&c->lock);
		delay_ms = delay_ms < 32 ? delay_ms * 2 : 50;
	}
	(void)sqlite3_busy_timeout(c->db, STORE_BUSY_TIMEOUT_MS);
	return r;
}

/* Nesting: level 1 is the transaction, deeper levels are savepoints (a store function called
 * inside store_batch_begin()). A nested begin that fails leaves no level: the rollback its
 * caller may send is absorbed (tx_orphans), and the batch is marked broken, so that its owner
 * rolls all of it back. */
int store_tx_begin(struct store_conn *c)
{
	int r;

	if (c->tx_depth == 0) {
		c->tx_start_us = util_now_mono_us();
		r = begin_immediate(c);
		if (r >= 0)
			c->tx_depth = 1;
		return r;
	}
	r = sqlite3_get_autocommit(c->db)
		    ? store_db_fail_msg(c, "the enclosing transaction was rolled back")
		    : store_q_exec(c, NULL, &SQL_SAVEPOINT, "");
	if (r < 0) {
		c->tx_broken = true;
		c->tx_orphans++;
		return r;
	}
	c->tx_depth++;
	return 0;
}

void store_tx_rollback(struct store_conn *c)
{
	if (c->tx_orphans > 0) {
		c->tx_orphans--;
		return;
	}
	if (c->tx_depth <= 1) {
		if (!sqlite3_get_autocommit(c->db))
			(void)store_q_exec(c, NULL, &SQL_ROLLBACK, "");
		c->tx_depth = 0;
		return;
	}
	/* SQLite itself may have rolled the whole transaction back (a full disk, an I/O
	 * error): then there is no savepoint left either. */
	if (sqlite3_get_autocommit(c->db) || store_q_exec(c, NULL, &SQL_ROLLBACK_TO, "") < 0 ||
	    store_q_exec(c, NULL, &SQL_RELEASE, "") < 0)
		c->tx_broken = true;
	if (sqlite3_get_autocommit(c->db))
		c->tx_depth = 0;
	else
		c->tx_depth--;
}

int store_tx_commit(struct store_conn *c)
{
	int r;

	if (c->tx_depth <= 1) {
		r = store_q_exec(c, NULL, &SQL_COMMIT, "");
		if (r < 0) {
			store_tx_rollback(c);
		} else {
			c->tx_depth = 0;
			ry_hist_add(&c->s->tx_latency, util_now_mono_us() - c->tx_start_us);
		}
		return r;
	}
	r = sqlite3_get_autocommit(c->db)
		    ? store_db_fail_msg(c, "the enclosing transaction was rolled back")
		    : store_q_exec(c, NULL, &SQL_RELEASE, "");
	if (r < 0) {
		store_tx_rollback(c);
		c->tx_broken = true;
		return r;
	}
	c->tx_depth--;
	return 0;
}

int store_batch_begin(struct store *s)
{
	struct store_conn *c = &s->w;
	int r;

	pthread_mutex_lock(&c->lock);
	c->tx_broken = false;
	c->tx_orphans = 0;
	r = c->tx_depth == 0 ? store_tx_begin(c) : -EBUSY;
	if (r < 0)
		pthread_mutex_unlock(&c->lock);
	return r;
}

int store_batch_item_begin(struct store *s)
{
	return store_tx_begin(&s->w);
}

void store_batch_item_end(struct store *s, bool keep)
{
	struct store_conn *c = &s->w;

	if (c->tx_depth <= 1) {
		/* Its savepoint never opened (the begin failed): the batch cannot be trusted. */
		c->tx_broken = true;
		return;
	}
	if (!keep)
		store_tx_rollback(c);
	else if (store_tx_commit(c) < 0)
		c->tx_broken = true;
}

bool store_batch_broken(struct store *s)
{
	return s->w.tx_broken || sqlite3_get_autocommit(s->w.db);
}

/* Roll back whatever is open, savepoints included. Caller holds c->lock. */
static void tx_abort(struct store_conn *c)
{
	if (!sqlite3_get_autocommit(c->db))
		(void)store_q_exec(c, NULL, &SQL_ROLLBACK, "");
	c->tx_depth = 0;
	c->tx_orphans = 0;
	c->tx_broken = false;
}

int store_batch_commit(struct store *s)
{
	struct store_conn *c = &s->w;
	int r;

	if (store_batch_broken(s) || c->tx_depth != 1) {
		tx_abort(c);
		r = store_db_fail_msg(c, "the batch's transaction was rolled back");
	} else {
		r = store_tx_commit(c);
		if (r < 0)
			tx_abort(c);
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

void store_batch_rollback(struct store *s)
{
	struct store_conn *c = &s->w;

	tx_abort(c);
	pthread_mutex_unlock(&c->lock);
}

const struct ry_hist *store_tx_latency(const struct store *s)
{
	return &s->tx_latency;
}

int store_q_row(struct store_conn *c, struct store_sql *q, const char *key,
		int (*row)(sqlite3_stmt *st, void *ret), void *ret)
{
	sqlite3_stmt *st = NULL;
	int r;

	pthread_mutex_lock(&c->lock);
	r = store_q_start(c, q, &st, "t", key);
	if (r >= 0) {
		r = store_q_step(c, st);
		if (r == 1)
			r = row(st, ret);
		else if (r == 0)
			r = -RY_E_NOT_FOUND;
	}
	store_q_end(st);
	pthread_mutex_unlock(&c->lock);
	return r;
}

static int text_row(sqlite3_stmt *st, void *ret)
{
	return store_col_dup(st, 0, ret);
}

int store_q_text(struct store_conn *c, struct store_sql *q, const char *key, char **ret)
{
	return store_q_row(c, q, key, text_row, ret);
}

/* Copy a text column; NULL stays NULL. */
int store_col_dup(sqlite3_stmt *st, int col, char **ret)
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

	while ((r = store_q_step(c, st)) == 1) {
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

/* A listing: statement id (parameters from fmt, as store_q_start()) run on c under its lock, every
 * row collected with row() into an array of esz-byte elements. On failure array_free releases
 * what was collected; *ret_v and *ret_n are written only on success. */
int store_q_list(struct store_conn *c, struct store_sql *q, size_t esz,
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
	r = store_q_vstart(c, q, &st, fmt, ap);
	va_end(ap);
	if (r >= 0)
		r = q_collect(c, st, esz, row, &v, &n);
	store_q_end(st);
	pthread_mutex_unlock(&c->lock);
	if (r < 0) {
		array_free(v, n);
		return r;
	}
	*ret_v = v;
	*ret_n = n;
	return 0;
}

bool store_text_ok(const char *v, size_t max)
{
	return v && v[0] && strnlen(v, max + 1) <= max;
}

static int user_version_locked(struct store_conn *c, int *ret)
{
	sqlite3_stmt *st = NULL;
	int r;

	r = store_q_start(c, &SQL_USER_VERSION, &st, "");
	if (r < 0)
		return r;
	r = store_q_step(c, st);
	if (r == 1) {
		*ret = sqlite3_column_int(st, 0);
		r = 0;
	} else if (r == 0) {
		r = store_db_fail_msg(c, "user_version returned no row");
	}
	store_q_end(st);
	return r;
}

/* Run a constant pragma and return its first column's text in buf ("" when it gives no row). */
static int pragma_text(struct store_conn *c, const char *sql, char *buf, size_t size)
{
	sqlite3_stmt *st = NULL;
	int rc, r = 0;

	rc = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return store_db_fail(c, rc, sql);
	buf[0] = '\0';
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const unsigned char *v = sqlite3_column_text(st, 0);

		snprintf(buf, size, "%s", v ? (const char *)v : "");
	} else if (rc != SQLITE_DONE) {
		r = store_db_fail(c, rc, sql);
	}
	sqlite3_finalize(st);
	return r;
}

/* Apply migration m when the database is one version below it, in one transaction. The
 * version is re-read inside the write transaction so that two processes opening the same file
 * do not both run a step. */
static int migrate_one(struct store_conn *c, const struct store_migration *m)
{
	char sql[64];
	int cur, rc, r;

	r = store_tx_begin(c);
	if (r < 0)
		return r;
	r = user_version_locked(c, &cur);
	if (r < 0)
		goto fail;
	if (cur >= m->version)
		return store_tx_commit(c);
	if (cur != m->version - 1) {
		r = store_db_fail_msg(c, "schema version gap");
		goto fail;
	}
	rc = sqlite3_exec(c->db, m->sql, NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		r = store_db_fail(c, rc, "migration");
		goto fail;
	}
	/* A rebuilt table must leave every reference whole (foreign_key_check: no row). */
	if (m->rebuilds) {
		char fk[64];

		r = pragma_text(c, "PRAGMA foreign_key_check", fk, sizeof(fk));
		if (r >= 0 && fk[0])
			r = store_db_fail_msg(c, "the migration broke a foreign key");
		if (r < 0)
			goto fail;
	}
	/* PRAGMA takes no parameters; the value is a compiled-in constant. */
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", m->version);
	rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		r = store_db_fail(c, rc, "set user_version");
		goto fail;
	}
	r = store_tx_commit(c);
	if (r >= 0)
		log_debug("store: migrated to schema version %d", m->version);
	return r;
fail:
	store_tx_rollback(c);
	return r;
}

/* Apply each migration above the current version up to target. One that rebuilds a table runs
 * with foreign keys off (they cannot change inside a transaction), as SQLite's documentation
 * of ALTER TABLE says to. */
static int migrate(struct store_conn *c, int target)
{
	char buf[64];
	int r;

	for (size_t i = 0; i < store_migrations_count; i++) {
		const struct store_migration *m = &store_migrations[i];

		if (m->version > target)
			break;
		if (m->rebuilds &&
		    (r = pragma_text(c, "PRAGMA foreign_keys = OFF", buf, sizeof(buf))) < 0)
			return r;
		r = migrate_one(c, m);
		if (m->rebuilds) {
			int r2 = pragma_text(c, "PRAGMA foreign_keys = ON", buf, sizeof(buf));

			if (r >= 0)
				r = r2;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* Open one connection of s to path and set its per-connection pragmas. */
static int conn_open(struct store *s, struct store_conn *c, const char *path, bool reader)
{
	char buf[64];
	int rc, r;

	c->s = s;
	{
		/* Recursive: a batch (store_batch_begin()) holds the writer while the store
		 * functions it calls take it again. */
		pthread_mutexattr_t ma;

		pthread_mutexattr_init(&ma);
		pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
		r = -pthread_mutex_init(&c->lock, &ma);
		pthread_mutexattr_destroy(&ma);
	}
	if (r < 0)
		return r;
	/* Our mutex serializes every use of the connection. */
	rc = sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK)
		return store_db_fail(c, rc, "open");
	sqlite3_extended_result_codes(c->db, 1);
	rc = sqlite3_busy_timeout(c->db, STORE_BUSY_TIMEOUT_MS);
	if (rc != SQLITE_OK)
		return store_db_fail(c, rc, "busy_timeout");
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
	for (size_t i = 0; i < STORE_STMT_MAX; i++)
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
		r = store_db_fail_msg(c, "cannot enable WAL");
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

int store_data_version(struct store *s, int64_t *ret)
{
	struct store_conn *c = &s->r;
	sqlite3_stmt *st = NULL;
	int r;

	if (!s || !ret)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_q_start(c, &SQL_DATA_VERSION, &st, "");
	if (r >= 0)
		r = store_q_step(c, st);
	if (r == 1) {
		*ret = sqlite3_column_int64(st, 0);
		r = 0;
	} else if (r == 0) {
		r = store_db_fail_msg(c, "data_version returned no row");
	}
	store_q_end(st);
	pthread_mutex_unlock(&c->lock);
	return r;
}

int store_cancel_request(struct store *s, struct store_sql *q, const char *id, const char *actor,
			 const char *action, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int changes = 0, r;

	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto out;
	r = store_q_exec(c, &changes, q, "tl", id, now_ms);
	if (r >= 0 && changes && actor)
		r = store_audit_locked(c, now_ms, actor, action, id, "requested", NULL);
	if (r < 0) {
		store_tx_rollback(c);
		goto out;
	}
	r = store_tx_commit(c);
out:
	pthread_mutex_unlock(&c->lock);
	return r < 0 ? r : changes > 0;
}
