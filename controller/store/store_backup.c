/* Online backup and offline restore of the controller's database through SQLite's backup API.
 * Neither goes through a struct store: a backup reads the live file on a read-only connection of
 * its own (never a write to it, so a serving controller stays its only writer), a restore writes
 * a database that nobody serves. */
#include "controller/store/store.h"
#include "controller/store/store_backup.h"

#include "common/util/error.h"
#include "common/util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BACKUP_BUSY_MS 5000
/* A backup step that finds the source locked (rare under WAL: a reader waits only for a
 * recovery) is retried for this long. */
#define BACKUP_RETRY_MS 30000

static void say(char *errbuf, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!errbuf || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(errbuf, errlen, fmt, ap);
	va_end(ap);
}

static int sqlite_err(int rc, sqlite3 *db)
{
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
	case SQLITE_CANTOPEN:
	case SQLITE_PERM:
	case SQLITE_READONLY:
		return db && sqlite3_system_errno(db) == EACCES ? -EACCES : -RY_E_DB;
	case SQLITE_IOERR:
		return db && sqlite3_system_errno(db) == ENOSPC ? -RY_E_DISK_FULL : -RY_E_DB;
	default:
		return -RY_E_DB;
	}
}

static int open_db(const char *path, int flags, sqlite3 **ret, char *errbuf, size_t errlen)
{
	sqlite3 *db = NULL;
	int rc = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, NULL);

	if (rc != SQLITE_OK) {
		int r = sqlite_err(rc, db);

		say(errbuf, errlen, "%s: %s", path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		sqlite3_close_v2(db);
		return r;
	}
	sqlite3_extended_result_codes(db, 1);
	(void)sqlite3_busy_timeout(db, BACKUP_BUSY_MS);
	*ret = db;
	return 0;
}

/* The first column of a one-row statement as text into buf. */
static int one_text(sqlite3 *db, const char *sql, char *buf, size_t len, char *errbuf,
		    size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL), r = 0;

	buf[0] = '\0';
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const unsigned char *v = sqlite3_column_text(st, 0);

		snprintf(buf, len, "%s", v ? (const char *)v : "");
	} else if (rc != SQLITE_DONE) {
		r = sqlite_err(rc, db);
		say(errbuf, errlen, "%s: %s", sql, sqlite3_errmsg(db));
	}
	sqlite3_finalize(st);
	return r;
}

/* What a copy holds, for the caller's message: schema version and a few counts. */
static int describe(sqlite3 *db, struct store_backup_info *info, char *errbuf, size_t errlen)
{
	static const struct {
		const char *sql;
		size_t off;
	} counts[] = {
		{"SELECT count(*) FROM nodes", offsetof(struct store_backup_info, nodes)},
		{"SELECT count(*) FROM deployments",
		 offsetof(struct store_backup_info, deployments)},
		{"SELECT count(*) FROM step_results",
		 offsetof(struct store_backup_info, step_results)},
		{"SELECT count(*) FROM campaigns", offsetof(struct store_backup_info, campaigns)},
		{"SELECT count(*) FROM bench_runs", offsetof(struct store_backup_info, bench_runs)},
	};
	char buf[64];
	int r;

	r = one_text(db, "PRAGMA user_version", buf, sizeof(buf), errbuf, errlen);
	if (r < 0)
		return r;
	info->schema_version = atoi(buf);
	if (info->schema_version < 1 || info->schema_version > STORE_SCHEMA_VERSION) {
		say(errbuf, errlen,
		    info->schema_version < 1
			    ? "not a railyard controller database (schema version %d)"
			    : "schema version %d is newer than this program's (%d)",
		    info->schema_version, STORE_SCHEMA_VERSION);
		return info->schema_version < 1 ? -RY_E_CORRUPT : -RY_E_SCHEMA;
	}
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		r = one_text(db, counts[i].sql, buf, sizeof(buf), errbuf, errlen);
		if (r < 0) {
			say(errbuf, errlen, "not a railyard controller database (%s failed)",
			    counts[i].sql);
			return -RY_E_CORRUPT;
		}
		*(int64_t *)((char *)info + counts[i].off) = strtoll(buf, NULL, 10);
	}
	return 0;
}

static int integrity(sqlite3 *db, const char *what, char *errbuf, size_t errlen)
{
	char buf[256];
	int r = one_text(db, "PRAGMA integrity_check", buf, sizeof(buf), errbuf, errlen);

	if (r < 0) {
		say(errbuf, errlen, "%s: %s", what, sqlite3_errmsg(db));
		return r;
	}
	if (strcmp(buf, "ok") != 0) {
		say(errbuf, errlen, "%s fails its integrity check: %s", what, buf);
		return -RY_E_CORRUPT;
	}
	return 0;
}

/* Copy all of src's main database into dst in one step: one read transaction on src (a
 * consistent snapshot, which under WAL never blocks the writer) and one write transaction on
 * dst (all or nothing). */
static int copy_db(sqlite3 *src, sqlite3 *dst, char *errbuf, size_t errlen)
{
	struct timespec pause = {0, 50 * 1000 * 1000};
	sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
	int rc, waited = 0, r;

	if (!b) {
		r = sqlite_err(sqlite3_errcode(dst), dst);
		say(errbuf, errlen, "backup: %s", sqlite3_errmsg(dst));
		return r;
	}
	while ((rc = sqlite3_backup_step(b, -1)) == SQLITE_BUSY || rc == SQLITE_LOCKED) {
		if (waited >= BACKUP_RETRY_MS)
			break;
		nanosleep(&pause, NULL);
		waited += 50;
	}
	(void)sqlite3_backup_finish(b);
	if (rc == SQLITE_DONE)
		return 0;
	r = sqlite_err(rc, dst);
	/* The error is the destination's when it has one (a full disk), else the source's. */
	say(errbuf, errlen, "backup: %s",
	    sqlite3_errcode(dst) != SQLITE_OK ? sqlite3_errmsg(dst) : sqlite3_errstr(rc));
	return r;
}

/* Does db_path have a -wal with frames in it (commits that only the WAL holds)? */
static bool wal_pending(const char *db_path)
{
	char *wal = NULL;
	struct stat sb;
	bool v;

	if (asprintf(&wal, "%s-wal", db_path) < 0)
		return true;
	v = stat(wal, &sb) == 0 ? sb.st_size > 0 : errno != ENOENT;
	free(wal);
	return v;
}

/* Open db_path read-only as an immutable file (SQLite takes no lock and reads no WAL): only for
 * a database nobody can be writing. */
static int open_immutable(const char *db_path, sqlite3 **ret)
{
	char *uri = malloc(strlen(db_path) * 3 + 32), *o;
	int r;

	if (!uri)
		return -ENOMEM;
	o = uri + sprintf(uri, "file:");
	for (const unsigned char *p = (const unsigned char *)db_path; *p; p++) {
		if (*p == '%' || *p == '?' || *p == '#' || *p < 0x20 || *p >= 0x7f)
			o += sprintf(o, "%%%02X", *p);
		else
			*o++ = (char)*p;
	}
	strcpy(o, "?immutable=1");
	r = open_db(uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, ret, NULL, 0);
	free(uri);
	return r;
}

static int exec(sqlite3 *db, const char *sql, char *errbuf, size_t errlen)
{
	int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);

	if (rc == SQLITE_OK)
		return 0;
	say(errbuf, errlen, "%s: %s", sql, sqlite3_errmsg(db));
	return sqlite_err(rc, db);
}

static int fsync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		r = -errno;
	close(fd);
	return r;
}

int store_backup(const char *db_path, const char *dest, struct store_backup_info *ret_info,
		 char *errbuf, size_t errlen)
{
	struct store_backup_info info = {0};
	sqlite3 *src = NULL, *dst = NULL;
	char *tmp = NULL, *journal = NULL, buf[32];
	int fd, r;

	if (!db_path || !dest)
		return -EINVAL;
	/* A temporary beside the destination, renamed over it once complete and synced: a
	 * backup killed half-way never leaves a file that looks like a backup. */
	if (asprintf(&tmp, "%s.ry-tmpXXXXXX", dest) < 0)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		say(errbuf, errlen, "%s: %s", dest, ry_strerror(r));
		free(tmp);
		return r;
	}
	close(fd);
	/* Read-only: no write to the live database, no checkpoint when it closes. */
	r = open_db(db_path, SQLITE_OPEN_READONLY, &src, errbuf, errlen);
	if (r < 0)
		goto out;
	r = open_db(tmp, SQLITE_OPEN_READWRITE, &dst, errbuf, errlen);
	if (r < 0)
		goto out;
	/* On a read-only file system SQLite cannot make the -shm a WAL reader needs. With no
	 * -wal to read (the controller stopped cleanly) the file alone is the database, and
	 * nobody can write it there: read it as an immutable file. */
	if (one_text(src, "SELECT count(*) FROM sqlite_master", buf, sizeof(buf), NULL, 0) < 0 &&
	    !wal_pending(db_path)) {
		sqlite3_close_v2(src);
		src = NULL;
		r = open_immutable(db_path, &src);
		if (r < 0) {
			say(errbuf, errlen, "%s: cannot be read", db_path);
			goto out;
		}
	}
	r = copy_db(src, dst, errbuf, errlen);
	if (r < 0)
		goto out;
	/* One self-contained file (no -wal beside it), synced at each commit. */
	r = exec(dst, "PRAGMA journal_mode = DELETE", errbuf, errlen);
	if (r >= 0)
		r = exec(dst, "PRAGMA synchronous = FULL", errbuf, errlen);
	if (r >= 0)
		r = integrity(dst, "the copy", errbuf, errlen);
	if (r >= 0)
		r = describe(dst, &info, errbuf, errlen);
	if (r < 0)
		goto out;
	sqlite3_close_v2(dst);
	dst = NULL;
	r = fsync_path(tmp);
	if (r >= 0 && rename(tmp, dest) < 0)
		r = -errno;
	if (r >= 0)
		r = fs_sync_parent(dest);
	if (r < 0) {
		say(errbuf, errlen, "%s: %s", dest, ry_strerror(r));
		goto out;
	}
	if (ret_info)
		*ret_info = info;
out:
	sqlite3_close_v2(dst);
	sqlite3_close_v2(src);
	if (r < 0) {
		(void)unlink(tmp);
		/* and the journal a failed write of the copy may have left */
		if (asprintf(&journal, "%s-journal", tmp) >= 0)
			(void)unlink(journal);
	}
	free(journal);
	free(tmp);
	return r;
}

int store_backup_check(const char *path, struct store_backup_info *ret_info, char *errbuf,
		       size_t errlen)
{
	struct store_backup_info info = {0};
	sqlite3 *db = NULL;
	int r;

	if (!path)
		return -EINVAL;
	if (access(path, R_OK) < 0) {
		r = -errno;
		say(errbuf, errlen, "%s: %s", path, ry_strerror(r));
		return r;
	}
	r = open_db(path, SQLITE_OPEN_READONLY, &db, errbuf, errlen);
	if (r >= 0)
		r = integrity(db, path, errbuf, errlen);
	if (r >= 0)
		r = describe(db, &info, errbuf, errlen);
	sqlite3_close_v2(db);
	if (r == -RY_E_CORRUPT && errbuf && !errbuf[0])
		say(errbuf, errlen, "%s: not a SQLite database", path);
	if (r >= 0 && ret_info)
		*ret_info = info;
	return r;
}

int store_restore(const char *src_path, const char *db_path, struct store_backup_info *ret_info,
		  char *errbuf, size_t errlen)
{
	struct store_backup_info info = {0};
	sqlite3 *src = NULL, *dst = NULL;
	bool created = false, copied = false;
	char mode[32];
	int fd, r;

	if (!src_path || !db_path)
		return -EINVAL;
	r = store_backup_check(src_path, &info, errbuf, errlen);
	if (r < 0)
		return r;
	/* As store_open(): the file is never there with a wider mode. */
	fd = open(db_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd >= 0) {
		close(fd);
		created = true;
	} else if (errno != EEXIST) {
		r = -errno;
		say(errbuf, errlen, "%s: %s", db_path, ry_strerror(r));
		return r;
	}
	r = open_db(src_path, SQLITE_OPEN_READONLY, &src, errbuf, errlen);
	if (r >= 0)
		r = open_db(db_path, SQLITE_OPEN_READWRITE, &dst, errbuf, errlen);
	/* Into the database file itself, through its own journal: one write transaction, so a
	 * restore that is killed leaves the old database whole, and a -wal beside it is
	 * checkpointed or replaced the way SQLite does it, never copied around. */
	if (r >= 0)
		r = copy_db(src, dst, errbuf, errlen);
	copied = r >= 0;
	if (r >= 0)
		r = one_text(dst, "PRAGMA journal_mode = WAL", mode, sizeof(mode), errbuf, errlen);
	if (r >= 0)
		r = integrity(dst, db_path, errbuf, errlen);
	if (r >= 0)
		r = describe(dst, &info, errbuf, errlen);
	sqlite3_close_v2(dst);
	sqlite3_close_v2(src);
	/* A file this call made and could not fill is not left looking like a database. */
	if (r < 0 && created && !copied)
		(void)unlink(db_path);
	if (r >= 0 && ret_info)
		*ret_info = info;
	return r;
}
