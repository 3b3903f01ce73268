/* Unit tests of controller/store/store_backup.c: a backup taken while a write transaction is
 * open holds only what was committed, it is a self-contained file, a failed backup leaves the
 * destination as it was; restore refuses foreign, damaged and newer files and replaces a
 * database whole. Each test works in its own temporary directory. (A database on a read-only
 * file system: tests/integration/test_diskfault.sh.) */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "controller/store/store.h"
#include "controller/store/store_backup.h"
#include "common/util/error.h"

#include <dirent.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define T0 1700000000000LL

struct fx {
	char dir[256];
	char db[300], out[300], out2[300];
	char err[512];
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/ry-backup-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->db, sizeof(f->db), "%s/controller.db", f->dir);
	snprintf(f->out, sizeof(f->out), "%s/backup.db", f->dir);
	snprintf(f->out2, sizeof(f->out2), "%s/restored.db", f->dir);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	struct dirent *de;
	DIR *d = opendir(f->dir);

	while (d && (de = readdir(d))) {
		char p[600];

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", f->dir, de->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* A store at f->db with n clusters (one committed transaction each). */
static void make_db(struct fx *f, int n)
{
	struct store *s = NULL;

	assert_int_equal(store_open(f->db, &s), 0);
	for (int i = 0; i < n; i++) {
		char name[32];

		snprintf(name, sizeof(name), "c%d", i);
		assert_int_equal(store_cluster_ensure(s, name, T0), 0);
	}
	store_free(s);
}

static long count_clusters(const char *path)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	long n = -1;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM clusters", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

static void exec_sql(const char *path, const char *sql)
{
	sqlite3 *db = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* A write transaction open on another connection during the backup: the copy holds what was
 * committed, never what is not; the writer is not disturbed and commits after. */
static void test_backup_is_a_snapshot(void **state)
{
	struct fx *f = *state;
	struct store_backup_info info;
	sqlite3 *w = NULL;
	char wal[320];

	make_db(f, 3);
	assert_int_equal(sqlite3_open(f->db, &w), SQLITE_OK);
	assert_int_equal(sqlite3_exec(w,
				      "BEGIN IMMEDIATE; INSERT INTO clusters (name, created_at) "
				      "VALUES ('uncommitted', 0)",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(store_backup(f->db, f->out, &info, f->err, sizeof(f->err)), 0);
	assert_int_equal(sqlite3_exec(w, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(w);
	assert_int_equal(info.schema_version, STORE_SCHEMA_VERSION);
	assert_int_equal(count_clusters(f->out), 3);
	assert_int_equal(count_clusters(f->db), 4);
	/* One file: rollback journal mode, no -wal beside it, mode 0600. */
	snprintf(wal, sizeof(wal), "%s-wal", f->out);
	assert_false(exists(wal));
	{
		struct stat sb;

		assert_int_equal(stat(f->out, &sb), 0);
		assert_int_equal(sb.st_mode & 0777, 0600);
	}
	assert_int_equal(store_backup_check(f->out, &info, f->err, sizeof(f->err)), 0);
}

/* A backup that fails leaves an existing destination as it was, and no temporary. */
static void test_backup_failure_keeps_destination(void **state)
{
	struct fx *f = *state;
	char missing[320];
	struct dirent *de;
	DIR *d;
	int n = 0;

	make_db(f, 2);
	assert_int_equal(store_backup(f->db, f->out, NULL, f->err, sizeof(f->err)), 0);
	snprintf(missing, sizeof(missing), "%s/nope.db", f->dir);
	assert_true(store_backup(missing, f->out, NULL, f->err, sizeof(f->err)) < 0);
	assert_true(f->err[0] != '\0');
	assert_int_equal(count_clusters(f->out), 2);
	d = opendir(f->dir);
	assert_non_null(d);
	while ((de = readdir(d)))
		n += strstr(de->d_name, ".ry-tmp") != NULL;
	closedir(d);
	assert_int_equal(n, 0);
	/* A later backup replaces the file whole. */
	make_db(f, 5);
	assert_int_equal(store_backup(f->db, f->out, NULL, f->err, sizeof(f->err)), 0);
	assert_int_equal(count_clusters(f->out), 5);
}

static void test_check_refuses_foreign_damaged_newer(void **state)
{
	struct fx *f = *state;
	char path[320];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/text", f->dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("not a database at all, but long enough to look like a header or two\n", fp);
	fclose(fp);
	assert_int_equal(store_backup_check(path, NULL, f->err, sizeof(f->err)), -RY_E_CORRUPT);
	/* A SQLite database that is not ours. */
	snprintf(path, sizeof(path), "%s/other.db", f->dir);
	exec_sql(path, "CREATE TABLE t (x); PRAGMA user_version = 3;");
	assert_int_equal(store_backup_check(path, NULL, f->err, sizeof(f->err)), -RY_E_CORRUPT);
	assert_non_null(strstr(f->err, "not a railyard controller database"));
	/* Ours, damaged: the header of a table's root page overwritten. */
	make_db(f, 1);
	assert_int_equal(store_backup(f->db, f->out, NULL, f->err, sizeof(f->err)), 0);
	{
		sqlite3 *db = NULL;
		sqlite3_stmt *st = NULL;
		int root = 0, psize = 0;

		assert_int_equal(sqlite3_open_v2(f->out, &db, SQLITE_OPEN_READONLY, NULL),
				 SQLITE_OK);
		assert_int_equal(sqlite3_prepare_v2(db,
						    "SELECT rootpage FROM sqlite_master WHERE "
						    "name = 'clusters'",
						    -1, &st, NULL),
				 SQLITE_OK);
		assert_int_equal(sqlite3_step(st), SQLITE_ROW);
		root = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
		assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA page_size", -1, &st, NULL),
				 SQLITE_OK);
		assert_int_equal(sqlite3_step(st), SQLITE_ROW);
		psize = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
		sqlite3_close(db);
		fp = fopen(f->out, "r+");
		assert_non_null(fp);
		assert_int_equal(fseek(fp, (long)(root - 1) * psize, SEEK_SET), 0);
		fputs("garbage over a b-tree page header", fp);
		fclose(fp);
	}
	assert_int_equal(store_backup_check(f->out, NULL, f->err, sizeof(f->err)), -RY_E_CORRUPT);
	assert_int_equal(store_restore(f->out, f->out2, NULL, f->err, sizeof(f->err)),
			 -RY_E_CORRUPT);
	assert_false(exists(f->out2));
	/* Ours, from a newer program. */
	make_db(f, 1);
	assert_int_equal(store_backup(f->db, f->out, NULL, f->err, sizeof(f->err)), 0);
	exec_sql(f->out, "PRAGMA user_version = 9999;");
	assert_int_equal(store_backup_check(f->out, NULL, f->err, sizeof(f->err)), -RY_E_SCHEMA);
	assert_int_equal(store_restore(f->out, f->out2, NULL, f->err, sizeof(f->err)),
			 -RY_E_SCHEMA);
	assert_false(exists(f->out2));
}

/* Restore creates a missing database (0600) or replaces one whole, WAL and all. */
static void test_restore_replaces(void **state)
{
	struct fx *f = *state;
	struct store_backup_info info;
	struct store *s = NULL;
	struct stat sb;

	make_db(f, 2);
	assert_int_equal(store_backup(f->db, f->out, NULL, f->err, sizeof(f->err)), 0);
	assert_int_equal(store_restore(f->out, f->out2, &info, f->err, sizeof(f->err)), 0);
	assert_int_equal(count_clusters(f->out2), 2);
	assert_int_equal(stat(f->out2, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	/* Over a database with more rows, some of them only in its WAL (a store still open). */
	assert_int_equal(store_open(f->db, &s), 0);
	assert_int_equal(store_cluster_ensure(s, "late", T0), 0);
	assert_int_equal(store_cluster_ensure(s, "later", T0), 0);
	store_free(s);
	assert_int_equal(count_clusters(f->db), 4);
	assert_int_equal(store_restore(f->out, f->db, &info, f->err, sizeof(f->err)), 0);
	assert_int_equal(count_clusters(f->db), 2);
	/* The store opens it as serve would. */
	assert_int_equal(store_open(f->db, &s), 0);
	store_free(s);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
	const struct CMUnitTest tests[] = {
		T(test_backup_is_a_snapshot),
		T(test_backup_failure_keeps_destination),
		T(test_check_refuses_foreign_damaged_newer),
		T(test_restore_replaces),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
