/* Unit tests of controller/store: migrations, refusal of foreign and newer databases, token
 * rules, enrollment, node state transitions, revocation, audit, API tokens and concurrent use.
 * Each test works on a fresh database in its own temporary directory. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "controller/store/store.h"
#include "controller/store/store_apitoken.h"
#include "controller/store/store_audit.h"
#include "controller/store/store_bench.h"
#include "controller/store/store_campaign.h"
#include "controller/store/store_deploy.h"
#include "controller/store/store_int.h"
#include "controller/store/store_nodes.h"
#include "controller/store/store_playbook.h"
#include "controller/store/store_revalidate.h"
#include "controller/store/store_signoff.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define T0	1700000000000LL /* an arbitrary "now" in unix ms */
#define HOUR_MS (3600LL * 1000)

struct fx {
	char dir[256];
	char path[300];
	struct store *s;
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/ry-store-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/store.db", f->dir);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	struct dirent *de;
	DIR *d;

	store_free(f->s);
	d = opendir(f->dir);
	if (d) {
		while ((de = readdir(d))) {
			char p[600];

			if (de->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "%s/%s", f->dir, de->d_name);
			unlink(p);
		}
		closedir(d);
	}
	rmdir(f->dir);
	free(f);
	return 0;
}

/* Open the fixture's store at the current schema. */
static struct store *fx_open(struct fx *f)
{
	assert_int_equal(store_open(f->path, &f->s), 0);
	return f->s;
}

/* A second, raw connection to inspect or prepare the file behind the store's back. */
static sqlite3 *raw_open(const char *path)
{
	sqlite3 *db = NULL;

	assert_int_equal(
		sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL),
		SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	return db;
}

static void raw_exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &err);

	if (rc != SQLITE_OK)
		fail_msg("%s: %s", sql, err ? err : "?");
}

/* First column of the first row of sql (one text parameter, may be NULL) as int64; -1 if no
 * row. */
static int64_t raw_int(sqlite3 *db, const char *sql, const char *param)
{
	sqlite3_stmt *st = NULL;
	int64_t v = -1;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (param)
		assert_int_equal(sqlite3_bind_text(st, 1, param, -1, SQLITE_STATIC), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int64_t raw_count_in(const char *path, const char *sql, const char *param)
{
	sqlite3 *db = raw_open(path);
	int64_t v = raw_int(db, sql, param);

	sqlite3_close(db);
	return v;
}

static int64_t uses_left(struct fx *f, const char *token)
{
	unsigned char md[32];
	unsigned int mdlen = 0;
	char hex[65];

	assert_true(EVP_Digest(token, strlen(token), md, &mdlen, EVP_sha256(), NULL));
	util_hex(md, sizeof(md), hex);
	return raw_count_in(f->path, "SELECT uses_left FROM enroll_tokens WHERE token_hash = ?1",
			    hex);
}

static size_t audit_count(struct store *s)
{
	struct store_audit_entry *e = NULL;
	size_t n = 0;

	assert_int_equal(store_audit_list(s, 100000, &e, &n), 0);
	store_audit_entries_free(e, n);
	return n;
}

static char *make_token(struct store *s, const char *cluster, int uses, int64_t now)
{
	char *tok = NULL;

	assert_int_equal(store_token_create(s, cluster, HOUR_MS, uses, now, &tok), 0);
	assert_non_null(tok);
	return tok;
}

static int enroll(struct store *s, const char *token, const char *id, const char *host,
		  const char *serial, int64_t now, char **ret_cluster)
{
	struct store_enroll e = {
		.token = token,
		.node_id = id,
		.hostname = host,
		.cert_serial = serial,
		.cert_fingerprint = "sha256:00ff",
		.peer = "127.0.0.1:5555",
	};

	return store_enroll_node(s, &e, now, ret_cluster);
}

/* Token + enrollment of one node in cluster "c1" (id, hostname, serial as given). */
static void enroll_one(struct store *s, const char *id, const char *host, const char *serial)
{
	char *tok = make_token(s, "c1", 1, T0);

	assert_int_equal(enroll(s, tok, id, host, serial, T0, NULL), 0);
	free(tok);
}

static struct store_node *get_node(struct store *s, const char *key)
{
	struct store_node *n = NULL;

	assert_int_equal(store_node_get(s, key, &n), 0);
	assert_non_null(n);
	return n;
}

static void assert_state(struct store *s, const char *key, const char *state)
{
	struct store_node *n = get_node(s, key);

	assert_string_equal(n->state, state);
	store_node_free(n);
}

static bool has_table(const char *path, const char *name)
{
	return raw_count_in(path, "SELECT count(*) FROM sqlite_master WHERE name = ?1", name) == 1;
}

/* Whole file into memory (test-sized files only); *len 0 and NULL if missing. */
static unsigned char *slurp(const char *path, size_t *len)
{
	unsigned char *buf = NULL;
	struct stat st;
	FILE *fp = fopen(path, "rb");

	*len = 0;
	if (!fp)
		return NULL;
	assert_int_equal(fstat(fileno(fp), &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	*len = fread(buf, 1, (size_t)st.st_size, fp);
	fclose(fp);
	return buf;
}

static bool file_contains(const char *path, const char *needle)
{
	size_t len;
	unsigned char *buf = slurp(path, &len);
	bool found = buf && memmem(buf, len, needle, strlen(needle)) != NULL;

	free(buf);
	return found;
}

/* ---- migrations and opening ---- */

static void test_migration_table(void **state)
{
	(void)state;
	assert_int_equal(store_migrations_count, STORE_SCHEMA_VERSION);
	for (size_t i = 0; i < store_migrations_count; i++) {
		assert_int_equal(store_migrations[i].version, (int)i + 1);
		assert_non_null(store_migrations[i].sql);
	}
}

static void test_open_empty(void **state)
{
	struct fx *f = *state;
	struct stat st;
	char wal[400];
	sqlite3 *db;
	sqlite3_stmt *q;

	fx_open(f);
	assert_int_equal(store_schema_version(f->s), STORE_SCHEMA_VERSION);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 0077, 0);
	for (size_t i = 0; i < 5; i++) {
		static const char *const tables[] = {"clusters", "nodes", "enroll_tokens",
						     "audit_log", "revoked_certs"};

		assert_true(has_table(f->path, tables[i]));
	}
	assert_true(has_table(f->path, "nodes_hostname"));

	/* WAL is on, and its files are as private as the database. */
	assert_int_equal(store_cluster_ensure(f->s, "c1", T0), 0);
	snprintf(wal, sizeof(wal), "%s-wal", f->path);
	assert_int_equal(stat(wal, &st), 0);
	assert_int_equal(st.st_mode & 0077, 0);
	db = raw_open(f->path);
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(q, 0), "wal");
	sqlite3_finalize(q);
	sqlite3_close(db);

	/* Reopening keeps data and version. */
	store_free(f->s);
	f->s = NULL;
	fx_open(f);
	assert_int_equal(store_schema_version(f->s), STORE_SCHEMA_VERSION);
	assert_int_equal(
		raw_count_in(f->path, "SELECT count(*) FROM clusters WHERE name = ?1", "c1"), 1);
}

static void test_migrate_from_v0(void **state)
{
	struct fx *f = *state;

	assert_int_equal(store_open_at_version(f->path, 0, &f->s), 0);
	assert_int_equal(store_schema_version(f->s), 0);
	assert_false(has_table(f->path, "nodes"));
	store_free(f->s);
	f->s = NULL;
	fx_open(f);
	assert_int_equal(store_schema_version(f->s), STORE_SCHEMA_VERSION);
	assert_true(has_table(f->path, "revoked_certs"));
}

static void test_migrate_from_v1(void **state)
{
	struct fx *f = *state;
	struct store_node *n;
	sqlite3 *db;

	assert_int_equal(store_open_at_version(f->path, 1, &f->s), 0);
	assert_int_equal(store_schema_version(f->s), 1);
	assert_true(has_table(f->path, "nodes"));
	assert_false(has_table(f->path, "revoked_certs"));
	store_free(f->s);
	f->s = NULL;

	/* Data as a v1 controller would have left it. */
	db = raw_open(f->path);
	raw_exec(db,
		 "INSERT INTO clusters (id, name, created_at) VALUES (1, 'c1', 1);"
		 "INSERT INTO nodes (id, cluster_id, hostname, cert_serial, cert_fingerprint,"
		 " state, enrolled_at, last_seen, facts, revoked_at) VALUES"
		 " ('n-old', 1, 'gpu01', 'ABCD01', 'fp1', 'revoked', 10, 20, NULL, 30),"
		 " ('n-live', 1, 'gpu02', 'ABCD02', 'fp2', 'online', 10, 40, '{\"a\":1}', NULL);");
	sqlite3_close(db);

	fx_open(f);
	assert_int_equal(store_schema_version(f->s), STORE_SCHEMA_VERSION);
	/* The v1 revocation is carried into the revocation list, matched case-insensitively. */
	assert_int_equal(store_cert_is_revoked(f->s, "abcd01"), 1);
	assert_int_equal(store_cert_is_revoked(f->s, "ABCD02"), 0);
	n = get_node(f->s, "gpu02");
	assert_string_equal(n->id, "n-live");
	assert_string_equal(n->cluster, "c1");
	assert_string_equal(n->state, "online");
	assert_null(n->agent_version);
	assert_string_equal(n->facts_json, "{\"a\":1}");
	assert_int_equal(n->last_seen_ms, 40);
	store_node_free(n);
	assert_int_equal(store_node_online(f->s, "n-live", "2.0", NULL, 50), 0);
	n = get_node(f->s, "n-live");
	assert_string_equal(n->agent_version, "2.0");
	store_node_free(n);
	assert_true(has_table(f->path, "nodes_state_last_seen"));
}

static void test_migrate_from_v2(void **state)
{
	struct fx *f = *state;
	char *tok, *cluster = NULL;

	assert_int_equal(store_open_at_version(f->path, 2, &f->s), 0);
	assert_false(has_table(f->path, "deployments"));
	tok = make_token(f->s, "c1", 2, T0);
	store_free(f->s);
	f->s = NULL;
	fx_open(f);
	assert_int_equal(store_schema_version(f->s), STORE_SCHEMA_VERSION);
	assert_true(has_table(f->path, "deployments"));
	assert_true(has_table(f->path, "step_results"));
	/* v2 data survives: the token still works and names its cluster. */
	assert_int_equal(store_token_check(f->s, tok, T0 + 1, &cluster), 0);
	assert_string_equal(cluster, "c1");
	free(cluster);
	free(tok);
}

static void test_migrate_from_v3(void **state)
{
	struct fx *f = *state;
	char *tok, *cluster = NULL;

	assert_int_equal(store_open_at_version(f->path, 3, &f->s), 0);
	assert_true(has_table(f->path, "deployments"));
	assert_false(has_table(f->path, "bench_runs"));
	tok = make_token(f->s, "c3", 1, T0);
	store_free(f->s);
	f->s = NULL;
	fx_open(f);
	assert_int_equal(store_schema_version(f->s), STORE_SCHEMA_VERSION);
	assert_true(has_table(f->path, "bench_runs"));
	assert_int_equal(raw_count_in(f->path,
				      "SELECT count(*) FROM pragma_table_info('bench_runs') "
				      "WHERE name = ?1",
				      "cancel_requested_at"),
			 1);
	assert_int_equal(store_token_check(f->s, tok, T0 + 1, &cluster), 0);
	assert_string_equal(cluster, "c3");
	free(cluster);
	free(tok);
}

static void test_newer_schema_refused(void **state)
{
	struct fx *f = *state;
	struct store *s = NULL;
	sqlite3 *db = raw_open(f->path);
	char sql[128];

	snprintf(sql, sizeof(sql), "CREATE TABLE future (x); PRAGMA user_version = %d;",
		 STORE_SCHEMA_VERSION + 1);
	raw_exec(db, sql);
	sqlite3_close(db);
	assert_int_equal(store_open(f->path, &s), -RY_E_SCHEMA);
	assert_null(s);
	/* The refused file is left as it was. */
	assert_int_equal(raw_count_in(f->path, "PRAGMA user_version", NULL),
			 STORE_SCHEMA_VERSION + 1);

	/* A test-only open at an older version refuses a current database too. */
	unlink(f->path);
	fx_open(f);
	store_free(f->s);
	f->s = NULL;
	assert_int_equal(store_open_at_version(f->path, 1, &s), -RY_E_SCHEMA);
	assert_null(s);
}

static void test_garbage_refused(void **state)
{
	struct fx *f = *state;
	struct store *s = NULL;
	unsigned char *after;
	char buf[8192];
	size_t len;
	int fd;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = "this is not a database\n"[i % 23];
	fd = open(f->path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	close(fd);
	assert_int_equal(store_open(f->path, &s), -RY_E_CORRUPT);
	assert_null(s);
	after = slurp(f->path, &len);
	assert_int_equal(len, sizeof(buf));
	assert_memory_equal(after, buf, sizeof(buf));
	free(after);

	/* A short foreign file too. */
	fd = open(f->path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "hello", 5), 5);
	close(fd);
	assert_int_equal(store_open(f->path, &s), -RY_E_CORRUPT);
	assert_null(s);
}

static void test_quick_check_refused(void **state)
{
	struct fx *f = *state;
	struct store *s = NULL;
	char detail[512], junk[4096];
	struct stat st;
	int fd;

	fx_open(f);
	memset(detail, 'd', sizeof(detail) - 1);
	detail[sizeof(detail) - 1] = '\0';
	for (int i = 0; i < 200; i++)
		assert_int_equal(store_audit(f->s, T0 + i, "t", "x", NULL, "ok", detail), 0);
	store_free(f->s); /* last connection: checkpoints the WAL into the file */
	f->s = NULL;
	assert_int_equal(stat(f->path, &st), 0);
	assert_true(st.st_size >= 16 * 4096);

	/* Smash interior pages, leaving the header page intact. */
	memset(junk, 0xa5, sizeof(junk));
	fd = open(f->path, O_WRONLY);
	assert_true(fd >= 0);
	for (off_t off = 4 * 4096; off + 4096 <= st.st_size - 4096; off += 4096)
		assert_int_equal(pwrite(fd, junk, sizeof(junk), off), (ssize_t)sizeof(junk));
	close(fd);
	assert_int_equal(store_open(f->path, &s), -RY_E_CORRUPT);
	assert_null(s);
}

static void test_open_bad_args(void **state)
{
	struct fx *f = *state;
	struct store *s = NULL;
	char p[400];

	assert_int_equal(store_open(NULL, &s), -EINVAL);
	assert_int_equal(store_open(f->path, NULL), -EINVAL);
	snprintf(p, sizeof(p), "%s/missing/dir/store.db", f->dir);
	assert_int_equal(store_open(p, &s), -ENOENT);
	assert_null(s);
	assert_int_equal(store_open_at_version(f->path, STORE_SCHEMA_VERSION + 1, &s), -EINVAL);
}

/* ---- tokens and enrollment ---- */

static void test_token_single_use(void **state)
{
	struct fx *f = *state;
	char *tok, *cluster = NULL;

	fx_open(f);
	tok = make_token(f->s, "c1", 1, T0);
	assert_int_equal(strncmp(tok, STORE_TOKEN_PREFIX, strlen(STORE_TOKEN_PREFIX)), 0);
	assert_int_equal(strlen(tok), strlen(STORE_TOKEN_PREFIX) + 64);

	assert_int_equal(store_token_check(f->s, tok, T0 + 1, &cluster), 0);
	assert_string_equal(cluster, "c1");
	free(cluster);
	cluster = NULL;
	/* The check is a peek: it consumed nothing. */
	assert_int_equal(uses_left(f, tok), 1);

	assert_int_equal(enroll(f->s, tok, "n1", "gpu01", "01", T0 + 2, &cluster), 0);
	assert_string_equal(cluster, "c1");
	free(cluster);
	cluster = NULL;
	assert_int_equal(uses_left(f, tok), 0);

	assert_int_equal(enroll(f->s, tok, "n2", "gpu02", "02", T0 + 3, &cluster),
			 -RY_E_TOKEN_USED);
	assert_null(cluster);
	assert_int_equal(store_token_check(f->s, tok, T0 + 3, &cluster), -RY_E_TOKEN_USED);
	assert_int_equal(store_node_get(f->s, "n2", &(struct store_node *){NULL}), -RY_E_NOT_FOUND);

	/* Two tokens are never equal. */
	{
		char *tok2 = make_token(f->s, "c1", 1, T0);

		assert_string_not_equal(tok, tok2);
		free(tok2);
	}
	free(tok);
}

static void test_token_expired(void **state)
{
	struct fx *f = *state;
	char *tok = NULL, *cluster = NULL;

	fx_open(f);
	assert_int_equal(store_token_create(f->s, "c1", 1000, 1, T0, &tok), 0);
	assert_int_equal(store_token_check(f->s, tok, T0 + 999, &cluster), 0);
	free(cluster);
	cluster = NULL;
	assert_int_equal(store_token_check(f->s, tok, T0 + 1000, &cluster), -RY_E_TOKEN_EXPIRED);
	assert_int_equal(enroll(f->s, tok, "n1", "gpu01", "01", T0 + 5000, &cluster),
			 -RY_E_TOKEN_EXPIRED);
	assert_null(cluster);
	assert_int_equal(uses_left(f, tok), 1);
	assert_int_equal(store_node_get(f->s, "n1", &(struct store_node *){NULL}), -RY_E_NOT_FOUND);
	free(tok);
}

static void test_token_unknown(void **state)
{
	struct fx *f = *state;
	char *tok, *cluster = NULL, long_tok[1024];

	fx_open(f);
	tok = make_token(f->s, "c1", 1, T0);
	/* Same shape, one digit changed. */
	tok[strlen(tok) - 1] = tok[strlen(tok) - 1] == '0' ? '1' : '0';
	assert_int_equal(store_token_check(f->s, tok, T0, &cluster), -RY_E_TOKEN_UNKNOWN);
	assert_int_equal(store_token_check(f->s, "", T0, &cluster), -RY_E_TOKEN_UNKNOWN);
	memset(long_tok, 'a', sizeof(long_tok) - 1);
	long_tok[sizeof(long_tok) - 1] = '\0';
	assert_int_equal(store_token_check(f->s, long_tok, T0, &cluster), -RY_E_TOKEN_UNKNOWN);
	assert_int_equal(enroll(f->s, tok, "n1", "gpu01", "01", T0, &cluster), -RY_E_TOKEN_UNKNOWN);
	assert_null(cluster);
	assert_int_equal(store_token_check(f->s, NULL, T0, &cluster), -EINVAL);
	free(tok);
}

static void test_token_multi_use(void **state)
{
	struct fx *f = *state;
	char *tok, id[16], host[16];

	fx_open(f);
	tok = make_token(f->s, "c1", 3, T0);
	assert_int_equal(uses_left(f, tok), 3);
	for (int i = 0; i < 3; i++) {
		snprintf(id, sizeof(id), "n%d", i);
		snprintf(host, sizeof(host), "gpu%02d", i);
		assert_int_equal(enroll(f->s, tok, id, host, id, T0 + i, NULL), 0);
		assert_int_equal(uses_left(f, tok), 2 - i);
	}
	assert_int_equal(enroll(f->s, tok, "n9", "gpu09", "09", T0 + 9, NULL), -RY_E_TOKEN_USED);
	assert_int_equal(raw_count_in(f->path, "SELECT uses_total FROM enroll_tokens", NULL), 3);
	free(tok);
}

/* Enrollment tokens are listed by id (never the token) and revoked: refused from then on with
 * their own error, the audit saying who; an unknown or malformed id is not found. */
static void test_token_list_revoke(void **state)
{
	struct fx *f = *state;
	struct store_enroll_token *v = NULL;
	char *tok, *cluster = NULL, id[17];
	size_t n = 0;

	fx_open(f);
	tok = make_token(f->s, "c1", 2, T0);
	assert_int_equal(store_enroll_token_id(tok, id), 0);
	assert_int_equal(store_enroll_tokens_list(f->s, 0, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].id, id);
	assert_string_equal(v[0].cluster, "c1");
	assert_int_equal(v[0].uses_left, 2);
	assert_int_equal(v[0].revoked_at_ms, 0);
	store_enroll_tokens_free(v, n);
	assert_int_equal(store_enroll_token_cluster(f->s, id, &cluster), 0);
	assert_string_equal(cluster, "c1");
	free(cluster);
	assert_int_equal(store_enroll_token_revoke(f->s, id, "api:ci (01)", T0 + 1), 1);
	assert_int_equal(store_enroll_token_revoke(f->s, id, "api:ci (01)", T0 + 2), 0);
	assert_int_equal(enroll(f->s, tok, "n1", "gpu01", "01", T0 + 3, NULL), -RY_E_TOKEN_REVOKED);
	assert_int_equal(store_token_check(f->s, tok, T0 + 3, &cluster), -RY_E_TOKEN_REVOKED);
	assert_int_equal(
		raw_count_in(f->path,
			     "SELECT count(*) FROM audit_log WHERE action = 'token.revoke' "
			     "AND actor = 'api:ci (01)'",
			     NULL),
		1);
	assert_int_equal(store_enroll_tokens_list(f->s, 0, &v, &n), 0);
	assert_int_equal(v[0].revoked_at_ms, T0 + 1);
	store_enroll_tokens_free(v, n);
	assert_int_equal(store_enroll_token_revoke(f->s, "0000000000000000", "a", T0),
			 -RY_E_NOT_FOUND);
	assert_int_equal(store_enroll_token_revoke(f->s, "%", "a", T0), -RY_E_NOT_FOUND);
	assert_int_equal(store_enroll_token_cluster(f->s, "zz", &cluster), -RY_E_NOT_FOUND);
	free(tok);
}

/* A playbook uploaded for a cluster: stored once by hash, listed per cluster, audited; an
 * unknown cluster stores nothing. */
static void test_playbook_uploads(void **state)
{
	struct fx *f = *state;
	struct store_playbook_upload *u = NULL;
	size_t n = 0;

	fx_open(f);
	assert_int_equal(store_cluster_ensure(f->s, "c1", T0), 0);
	assert_int_equal(store_cluster_ensure(f->s, "c2", T0), 0);
	assert_int_equal(store_playbook_upload(f->s, "nope", "h200", "1", "sha-a", "name: h200\n",
					       "admin", T0),
			 -RY_E_NOT_FOUND);
	assert_int_equal(raw_count_in(f->path, "SELECT count(*) FROM playbooks", NULL), 0);
	assert_int_equal(store_playbook_upload(f->s, "c1", "h200", "1", "sha-a", "name: h200\n",
					       "admin", T0 + 1),
			 0);
	assert_int_equal(store_playbook_upload(f->s, "c2", "h200", "1", "sha-a", "name: h200\n",
					       "ops", T0 + 2),
			 0);
	assert_int_equal(store_playbook_upload(f->s, "c1", "h200", "1", "sha-a", "name: h200\n",
					       "ci", T0 + 3),
			 0);
	assert_int_equal(raw_count_in(f->path, "SELECT count(*) FROM playbooks", NULL), 1);
	assert_int_equal(store_playbook_uploads(f->s, "sha-a", 0, &u, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(u[0].cluster, "c1");
	assert_string_equal(u[0].actor, "ci"); /* again: the newest */
	assert_int_equal(u[0].created_at_ms, T0 + 3);
	assert_int_equal(u[0].size, 11);
	store_playbook_uploads_free(u, n);
	assert_int_equal(store_playbook_uploads(f->s, NULL, 0, &u, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(u[0].cluster, "c1"); /* newest first */
	store_playbook_uploads_free(u, n);
	assert_int_equal(
		raw_count_in(f->path,
			     "SELECT count(*) FROM audit_log WHERE action = 'playbook.upload'",
			     NULL),
		3);
}

static void test_token_bound_to_cluster(void **state)
{
	struct fx *f = *state;
	char *t1, *t2, *cluster = NULL;
	struct store_node *n = NULL;

	fx_open(f);
	t1 = make_token(f->s, "alpha", 1, T0);
	t2 = make_token(f->s, "beta", 1, T0);
	assert_int_equal(enroll(f->s, t2, "nb", "gpu01", "0b", T0, &cluster), 0);
	assert_string_equal(cluster, "beta");
	free(cluster);
	cluster = NULL;
	/* The same hostname may live in two clusters. */
	assert_int_equal(enroll(f->s, t1, "na", "gpu01", "0a", T0, &cluster), 0);
	assert_string_equal(cluster, "alpha");
	free(cluster);

	n = get_node(f->s, "nb");
	assert_string_equal(n->cluster, "beta");
	assert_string_equal(n->hostname, "gpu01");
	assert_string_equal(n->cert_serial, "0b");
	assert_string_equal(n->cert_fingerprint, "sha256:00ff");
	assert_int_equal(n->enrolled_at_ms, T0);
	store_node_free(n);
	n = NULL;
	/* ... and then the hostname no longer names one node. */
	assert_int_equal(store_node_get(f->s, "gpu01", &n), -ENOTUNIQ);
	assert_null(n);
	free(t1);
	free(t2);
}

static void test_token_bad_args(void **state)
{
	struct fx *f = *state;
	char *tok = NULL;

	fx_open(f);
	assert_int_equal(store_token_create(f->s, "c1", HOUR_MS, 0, T0, &tok), -EINVAL);
	assert_int_equal(store_token_create(f->s, "c1", 0, 1, T0, &tok), -EINVAL);
	assert_int_equal(store_token_create(f->s, "c1", -5, 1, T0, &tok), -EINVAL);
	assert_int_equal(store_token_create(f->s, "c1", INT64_MAX, 1, T0, &tok), -EINVAL);
	assert_int_equal(store_token_create(f->s, "", HOUR_MS, 1, T0, &tok), -RY_E_INVALID);
	assert_null(tok);
	assert_int_equal(raw_count_in(f->path, "SELECT count(*) FROM enroll_tokens", NULL), 0);
	assert_int_equal(raw_count_in(f->path, "SELECT count(*) FROM clusters", NULL), 0);
}

static void test_token_not_stored_plaintext(void **state)
{
	struct fx *f = *state;
	unsigned char md[32];
	unsigned int mdlen = 0;
	char hash[65], wal[400], *tok;
	bool hash_seen;

	fx_open(f);
	tok = make_token(f->s, "c1", 2, T0);
	assert_int_equal(enroll(f->s, tok, "n1", "gpu01", "01", T0, NULL), 0);
	assert_true(EVP_Digest(tok, strlen(tok), md, &mdlen, EVP_sha256(), NULL));
	util_hex(md, sizeof(md), hash);
	snprintf(wal, sizeof(wal), "%s-wal", f->path);

	/* While open (data mostly in the WAL) ... */
	assert_false(file_contains(f->path, tok));
	assert_false(file_contains(wal, tok));
	assert_false(file_contains(f->path, tok + strlen(STORE_TOKEN_PREFIX)));
	assert_false(file_contains(wal, tok + strlen(STORE_TOKEN_PREFIX)));
	hash_seen = file_contains(f->path, hash) || file_contains(wal, hash);
	assert_true(hash_seen); /* proves the search looks at the right bytes */

	/* ... and after the final checkpoint. */
	store_free(f->s);
	f->s = NULL;
	assert_false(file_contains(f->path, tok + strlen(STORE_TOKEN_PREFIX)));
	assert_true(file_contains(f->path, hash));
	free(tok);
}

static void test_duplicate_hostname(void **state)
{
	struct fx *f = *state;
	char *t1, *t2, *cluster = NULL;
	size_t audits;

	fx_open(f);
	t1 = make_token(f->s, "c1", 1, T0);
	t2 = make_token(f->s, "c1", 1, T0);
	assert_int_equal(enroll(f->s, t1, "n1", "gpu01", "01", T0, NULL), 0);
	audits = audit_count(f->s);

	assert_int_equal(enroll(f->s, t2, "n2", "gpu01", "02", T0, &cluster), -RY_E_EXISTS);
	assert_null(cluster);
	assert_int_equal(uses_left(f, t2), 1);
	assert_int_equal(audit_count(f->s), audits);
	assert_int_equal(store_node_get(f->s, "n2", &(struct store_node *){NULL}), -RY_E_NOT_FOUND);
	assert_state(f->s, "gpu01", "enrolled");

	/* A clashing node id is a duplicate too, and also consumes nothing. */
	assert_int_equal(enroll(f->s, t2, "n1", "gpu02", "02", T0, NULL), -RY_E_EXISTS);
	assert_int_equal(uses_left(f, t2), 1);
	assert_non_null(strstr(store_errmsg(f->s), "UNIQUE"));

	/* The token still works for a new hostname. */
	assert_int_equal(enroll(f->s, t2, "n2", "gpu02", "02", T0, NULL), 0);
	assert_int_equal(uses_left(f, t2), 0);
	free(t1);
	free(t2);
}

static void test_enroll_bad_args(void **state)
{
	struct fx *f = *state;
	char *tok, big[STORE_TEXT_MAX + 2];

	fx_open(f);
	tok = make_token(f->s, "c1", 1, T0);
	assert_int_equal(store_enroll_node(f->s, NULL, T0, NULL), -EINVAL);
	assert_int_equal(enroll(f->s, tok, NULL, "gpu01", "01", T0, NULL), -EINVAL);
	assert_int_equal(enroll(f->s, tok, "n1", "", "01", T0, NULL), -RY_E_INVALID);
	memset(big, 'h', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(enroll(f->s, tok, "n1", big, "01", T0, NULL), -RY_E_INVALID);
	assert_int_equal(uses_left(f, tok), 1);
	free(tok);
}

/* ---- node states ---- */

static void test_node_transitions(void **state)
{
	struct fx *f = *state;
	struct store_node *n;
	char *text = NULL;
	int count = -1;

	fx_open(f);
	enroll_one(f->s, "n1", "gpu01", "01");
	enroll_one(f->s, "n2", "gpu02", "02");

	n = get_node(f->s, "n1");
	assert_string_equal(n->state, "enrolled");
	assert_int_equal(n->last_seen_ms, 0);
	assert_null(n->agent_version);
	assert_null(n->facts_json);
	store_node_free(n);

	assert_int_equal(store_node_online(f->s, "n1", "1.0.0", "{\"gpus\":8}", T0 + 10), 0);
	n = get_node(f->s, "gpu01");
	assert_string_equal(n->state, "online");
	assert_int_equal(n->last_seen_ms, T0 + 10);
	assert_string_equal(n->agent_version, "1.0.0");
	assert_string_equal(n->facts_json, "{\"gpus\":8}");
	store_node_free(n);

	assert_int_equal(store_node_touch(f->s, "n1", T0 + 20), 0);
	assert_int_equal(store_node_touch(f->s, "n1", T0 + 15), 0); /* late, out of order */
	n = get_node(f->s, "n1");
	assert_int_equal(n->last_seen_ms, T0 + 20);
	store_node_free(n);

	/* Reaper: strictly older than the cut-off; enrolled nodes are not touched. */
	assert_int_equal(store_nodes_expire(f->s, T0 + 20, T0 + 100, &count), 0);
	assert_int_equal(count, 0);
	assert_state(f->s, "n1", "online");
	assert_int_equal(store_nodes_expire(f->s, T0 + 21, T0 + 100, &count), 0);
	assert_int_equal(count, 1);
	assert_state(f->s, "n1", "offline");
	assert_state(f->s, "n2", "enrolled");

	/* A heartbeat brings an expired node back; it never promotes 'enrolled'. */
	assert_int_equal(store_node_touch(f->s, "n1", T0 + 30), 0);
	assert_state(f->s, "n1", "online");
	assert_int_equal(store_node_touch(f->s, "n2", T0 + 30), 0);
	assert_state(f->s, "n2", "enrolled");

	/* Heartbeats between writes only read. */
	assert_int_equal(store_node_check(f->s, "n1"), 0);
	assert_int_equal(store_node_check(f->s, "nope"), -RY_E_NOT_FOUND);
	assert_int_equal(store_node_check(f->s, NULL), -EINVAL);
	n = get_node(f->s, "n1");
	assert_int_equal(n->last_seen_ms, T0 + 30);
	store_node_free(n);

	/* The session's end writes when the node was last heard (never backwards). */
	assert_int_equal(store_node_offline(f->s, "n1", T0 + 40), 0);
	n = get_node(f->s, "n1");
	assert_string_equal(n->state, "offline");
	assert_int_equal(n->last_seen_ms, T0 + 40);
	store_node_free(n);
	assert_int_equal(store_node_offline(f->s, "n1", T0 + 35), 0);
	n = get_node(f->s, "n1");
	assert_int_equal(n->last_seen_ms, T0 + 40);
	store_node_free(n);

	/* Hello again without facts keeps the stored ones. */
	assert_int_equal(store_node_online(f->s, "n1", "1.1.0", NULL, T0 + 50), 0);
	n = get_node(f->s, "n1");
	assert_string_equal(n->agent_version, "1.1.0");
	assert_string_equal(n->facts_json, "{\"gpus\":8}");
	store_node_free(n);

	assert_int_equal(store_node_set_facts(f->s, "n1", "{\"gpus\":7}", T0 + 60), 0);
	n = get_node(f->s, "n1");
	assert_string_equal(n->facts_json, "{\"gpus\":7}");
	assert_int_equal(n->last_seen_ms, T0 + 60);
	store_node_free(n);

	/* The facts alone, by id only (the rollout's read for a render). */
	assert_int_equal(store_node_facts(f->s, "n1", &text), 0);
	assert_string_equal(text, "{\"gpus\":7}");
	free(text);
	text = NULL;
	assert_int_equal(store_node_facts(f->s, "gpu01", &text), -RY_E_NOT_FOUND);
	assert_int_equal(store_node_facts(f->s, "n2", &text), -RY_E_NOT_FOUND); /* none yet */
	assert_int_equal(store_node_facts(f->s, "nope", &text), -RY_E_NOT_FOUND);
	assert_int_equal(store_node_facts(f->s, NULL, &text), -EINVAL);
	assert_null(text);

	assert_int_equal(store_node_online(f->s, "n2", NULL, NULL, T0 + 60), 0);
	assert_int_equal(store_nodes_all_offline(f->s, T0 + 70), 0);
	assert_state(f->s, "n1", "offline");
	assert_state(f->s, "n2", "offline");

	assert_int_equal(store_node_touch(f->s, "nope", T0), -RY_E_NOT_FOUND);
	assert_int_equal(store_node_online(f->s, "nope", NULL, NULL, T0), -RY_E_NOT_FOUND);
	assert_int_equal(store_node_offline(f->s, "nope", T0), -RY_E_NOT_FOUND);
	assert_int_equal(store_node_set_facts(f->s, "nope", "{}", T0), -RY_E_NOT_FOUND);
	assert_int_equal(store_node_get(f->s, "nope", &(struct store_node *){NULL}),
			 -RY_E_NOT_FOUND);
}

/* store_nodes_scan()'s callback: "host:facts;" appended to scan_seen ("-": none); stops with
 * -ECANCELED after the host named by ud. */
static char scan_seen[256];

static int scan_note(void *ud, const struct store_node *n)
{
	size_t len = strlen(scan_seen);

	snprintf(scan_seen + len, sizeof(scan_seen) - len, "%s:%s;", n->hostname,
		 n->facts_json ? n->facts_json : "-");
	return ud && strcmp(ud, n->hostname) == 0 ? -ECANCELED : 0;
}

static void test_nodes_list_order(void **state)
{
	struct fx *f = *state;
	struct store_node **v = NULL;
	size_t n = 99;
	char *tb, *ta;

	fx_open(f);
	assert_int_equal(store_nodes_list(f->s, &v, &n), 0);
	assert_int_equal(n, 0);
	store_nodes_free(v, n);

	tb = make_token(f->s, "b", 3, T0);
	ta = make_token(f->s, "a", 3, T0);
	assert_int_equal(enroll(f->s, tb, "x1", "h0", "s1", T0, NULL), 0);
	assert_int_equal(enroll(f->s, ta, "x2", "h2", "s2", T0, NULL), 0);
	assert_int_equal(enroll(f->s, ta, "x3", "h1", "s3", T0, NULL), 0);
	assert_int_equal(store_nodes_list(f->s, &v, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(v[0]->cluster, "a");
	assert_string_equal(v[0]->hostname, "h1");
	assert_string_equal(v[1]->cluster, "a");
	assert_string_equal(v[1]->hostname, "h2");
	assert_string_equal(v[2]->cluster, "b");
	assert_string_equal(v[2]->hostname, "h0");
	store_nodes_free(v, n);

	/* One cluster's, in place: by host name, facts included, revoked ones left out; the
	 * callback may stop the scan. */
	assert_int_equal(enroll(f->s, ta, "x4", "h0", "s4", T0, NULL), 0);
	assert_int_equal(store_node_online(f->s, "x2", "1", "{\"k\":2}", T0 + 1), 0);
	assert_int_equal(store_node_revoke(f->s, "x4", "test", T0 + 2, NULL), 0);
	scan_seen[0] = '\0';
	assert_int_equal(store_nodes_scan(f->s, "a", scan_note, NULL), 0);
	assert_string_equal(scan_seen, "h1:-;h2:{\"k\":2};");
	scan_seen[0] = '\0';
	assert_int_equal(store_nodes_scan(f->s, "a", scan_note, (void *)"h1"), -ECANCELED);
	assert_string_equal(scan_seen, "h1:-;");
	assert_int_equal(store_nodes_scan(f->s, "nope", scan_note, NULL), 0);
	assert_int_equal(store_nodes_scan(f->s, NULL, scan_note, NULL), -EINVAL);
	free(ta);
	free(tb);
}

static void test_facts_invalid(void **state)
{
	struct fx *f = *state;
	static const char *const bad[] = {
		"[1,2]", "{bad", "42", "", "{\"a\":1,\"a\":2}", "{\"a\":1} trailing"};
	struct store_node *n;
	char *huge;
	size_t len = STORE_FACTS_MAX + 16;

	fx_open(f);
	enroll_one(f->s, "n1", "gpu01", "01");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(store_node_online(f->s, "n1", "1.0", bad[i], T0 + 5),
				 -RY_E_INVALID);
		assert_int_equal(store_node_set_facts(f->s, "n1", bad[i], T0 + 5), -RY_E_INVALID);
	}
	/* A valid object, but over the size limit. */
	huge = malloc(len + 1);
	assert_non_null(huge);
	memset(huge, ' ', len);
	memcpy(huge, "{\"a\":1}", 7);
	huge[len] = '\0';
	assert_int_equal(store_node_online(f->s, "n1", "1.0", huge, T0 + 5), -RY_E_INVALID);
	/* An over-long agent version is refused the same way. */
	memset(huge, 'v', STORE_TEXT_MAX + 1);
	huge[STORE_TEXT_MAX + 1] = '\0';
	assert_int_equal(store_node_online(f->s, "n1", huge, "{}", T0 + 5), -RY_E_INVALID);
	free(huge);

	n = get_node(f->s, "n1");
	assert_string_equal(n->state, "enrolled");
	assert_int_equal(n->last_seen_ms, 0);
	assert_null(n->agent_version);
	assert_null(n->facts_json);
	store_node_free(n);

	assert_int_equal(store_node_online(f->s, "n1", "1.0", "{\"ok\":true}", T0 + 6), 0);
	assert_int_equal(store_node_set_facts(f->s, "n1", "[]", T0 + 7), -RY_E_INVALID);
	n = get_node(f->s, "n1");
	assert_string_equal(n->facts_json, "{\"ok\":true}");
	assert_int_equal(n->last_seen_ms, T0 + 6);
	store_node_free(n);
}

/* ---- revocation ---- */

static void test_revoke(void **state)
{
	struct fx *f = *state;
	struct store_node *n;
	char *id = NULL, *tok;
	size_t audits;
	int count = -1;

	fx_open(f);
	enroll_one(f->s, "n1", "gpu01", "01AB");
	assert_int_equal(store_node_online(f->s, "n1", "1.0", "{}", T0 + 10), 0);
	assert_int_equal(store_cert_is_revoked(f->s, "01AB"), 0);

	assert_int_equal(store_node_revoke(f->s, "gpu01", "alice", T0 + 20, &id), 0);
	assert_string_equal(id, "n1");
	free(id);
	id = NULL;
	assert_state(f->s, "n1", "revoked");
	assert_int_equal(raw_count_in(f->path, "SELECT revoked_at FROM nodes WHERE id = ?1", "n1"),
			 T0 + 20);
	assert_int_equal(store_cert_is_revoked(f->s, "01AB"), 1);
	assert_int_equal(store_cert_is_revoked(f->s, "01ab"), 1);
	assert_int_equal(store_cert_is_revoked(f->s, "FFFF"), 0);

	/* A revoked node cannot come back, and nothing is written. */
	assert_int_equal(store_node_touch(f->s, "n1", T0 + 30), -RY_E_REVOKED);
	assert_int_equal(store_node_check(f->s, "n1"), -RY_E_REVOKED);
	assert_int_equal(store_node_online(f->s, "n1", "2.0", "{\"x\":1}", T0 + 30), -RY_E_REVOKED);
	assert_int_equal(store_node_set_facts(f->s, "n1", "{\"x\":1}", T0 + 30), -RY_E_REVOKED);
	assert_int_equal(store_node_offline(f->s, "n1", T0 + 30), 0); /* stays revoked */
	assert_int_equal(store_nodes_expire(f->s, T0 + 1000, T0 + 1000, &count), 0);
	assert_int_equal(count, 0);
	assert_int_equal(store_nodes_all_offline(f->s, T0 + 30), 0);
	n = get_node(f->s, "n1");
	assert_string_equal(n->state, "revoked");
	assert_int_equal(n->last_seen_ms, T0 + 10);
	assert_string_equal(n->agent_version, "1.0");
	assert_string_equal(n->facts_json, "{}");
	store_node_free(n);

	/* Revoking again is a no-op. */
	audits = audit_count(f->s);
	assert_int_equal(store_node_revoke(f->s, "n1", "alice", T0 + 40, NULL), 0);
	assert_int_equal(audit_count(f->s), audits);
	assert_int_equal(store_node_revoke(f->s, "nope", "alice", T0, &id), -RY_E_NOT_FOUND);
	assert_null(id);

	/* The hostname can be enrolled again; the old serial stays revoked. */
	tok = make_token(f->s, "c1", 1, T0 + 50);
	assert_int_equal(enroll(f->s, tok, "n1b", "gpu01", "02CD", T0 + 50, NULL), 0);
	n = get_node(f->s, "gpu01");
	assert_string_equal(n->id, "n1b");
	assert_string_equal(n->state, "enrolled");
	store_node_free(n);
	assert_int_equal(store_node_get(f->s, "n1", &(struct store_node *){NULL}), -RY_E_NOT_FOUND);
	assert_int_equal(store_cert_is_revoked(f->s, "01AB"), 1);
	assert_int_equal(store_cert_is_revoked(f->s, "02CD"), 0);
	free(tok);
}

/* ---- audit ---- */

static void test_audit(void **state)
{
	struct fx *f = *state;
	struct store_audit_entry *e = NULL;
	size_t n = 0;
	char *tok;

	fx_open(f);
	tok = make_token(f->s, "c1", 1, T0 + 1);
	assert_int_equal(enroll(f->s, tok, "n1", "gpu01", "01", T0 + 2, NULL), 0);
	assert_int_equal(store_node_revoke(f->s, "n1", "bob", T0 + 3, NULL), 0);
	assert_int_equal(
		store_audit(f->s, T0 + 4, "controller", "node.enroll", "gpu09", "refused", NULL),
		0);

	assert_int_equal(store_audit_list(f->s, 100, &e, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(e[0].at_ms, T0 + 4);
	assert_string_equal(e[0].actor, "controller");
	assert_string_equal(e[0].action, "node.enroll");
	assert_string_equal(e[0].target, "gpu09");
	assert_string_equal(e[0].outcome, "refused");
	assert_null(e[0].detail);

	assert_int_equal(e[1].at_ms, T0 + 3);
	assert_string_equal(e[1].actor, "bob");
	assert_string_equal(e[1].action, "node.revoke");
	assert_string_equal(e[1].target, "n1");
	assert_string_equal(e[1].outcome, "success");

	assert_int_equal(e[2].at_ms, T0 + 2);
	assert_string_equal(e[2].actor, "agent");
	assert_string_equal(e[2].action, "node.enroll");
	assert_string_equal(e[2].target, "n1");
	assert_string_equal(e[2].outcome, "success");
	assert_non_null(strstr(e[2].detail, "hostname=gpu01"));
	assert_non_null(strstr(e[2].detail, "peer=127.0.0.1:5555"));

	assert_int_equal(e[3].at_ms, T0 + 1);
	assert_string_equal(e[3].actor, "admin");
	assert_string_equal(e[3].action, "token.create");
	assert_string_equal(e[3].target, "c1");
	assert_null(strstr(e[3].detail, tok + strlen(STORE_TOKEN_PREFIX)));
	store_audit_entries_free(e, n);

	/* Limit keeps the newest. */
	assert_int_equal(store_audit_list(f->s, 2, &e, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(e[0].at_ms, T0 + 4);
	assert_int_equal(e[1].at_ms, T0 + 3);
	store_audit_entries_free(e, n);

	assert_int_equal(store_audit(f->s, T0, NULL, "x", NULL, "ok", NULL), -EINVAL);
	assert_int_equal(store_audit(f->s, T0, "a", "x", NULL, NULL, NULL), -EINVAL);
	assert_int_equal(audit_count(f->s), 4);
	free(tok);
}

/* ---- concurrency ---- */

#define THREADS	   4
#define ITERATIONS 300

struct worker {
	struct store *s;
	char id[16];
	int failures;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (int i = 1; i <= ITERATIONS; i++) {
		struct store_node *n = NULL;

		if (store_node_touch(w->s, w->id, T0 + i) != 0)
			w->failures++;
		if (store_node_touch(w->s, "shared", T0 + i) != 0)
			w->failures++;
		if (store_node_get(w->s, w->id, &n) != 0 || n->last_seen_ms != T0 + i)
			w->failures++;
		store_node_free(n);
		if (i % 50 == 0 &&
		    store_audit(w->s, T0 + i, w->id, "test.tick", NULL, "ok", NULL) != 0)
			w->failures++;
	}
	return NULL;
}

static void test_concurrent(void **state)
{
	struct fx *f = *state;
	struct worker w[THREADS];
	pthread_t th[THREADS];
	char host[16], *tok;

	fx_open(f);
	tok = make_token(f->s, "c1", THREADS + 1, T0);
	assert_int_equal(enroll(f->s, tok, "shared", "shared", "ff", T0, NULL), 0);
	for (int i = 0; i < THREADS; i++) {
		w[i].s = f->s;
		w[i].failures = 0;
		snprintf(w[i].id, sizeof(w[i].id), "w%d", i);
		snprintf(host, sizeof(host), "host%d", i);
		assert_int_equal(enroll(f->s, tok, w[i].id, host, w[i].id, T0, NULL), 0);
		assert_int_equal(store_node_online(f->s, w[i].id, "1", NULL, T0), 0);
	}
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(w[i].failures, 0);
	}
	for (int i = 0; i < THREADS; i++) {
		struct store_node *n = get_node(f->s, w[i].id);

		assert_int_equal(n->last_seen_ms, T0 + ITERATIONS);
		store_node_free(n);
	}
	{
		struct store_node *n = get_node(f->s, "shared");

		assert_int_equal(n->last_seen_ms, T0 + ITERATIONS);
		store_node_free(n);
	}
	/* token.create + enrollments + the workers' ticks */
	assert_int_equal(audit_count(f->s), 1 + (THREADS + 1) + THREADS * (ITERATIONS / 50));
	free(tok);
}

static void test_deployments(void **state)
{
	struct fx *f = *state;
	struct store_deploy_target t[] = {
		{"n-a", "gpu01", 0},
		{"n-b", "gpu02", 1},
	};
	struct store_deployment_new d = {
		.id = "d-1",
		.cluster = "c1",
		.actor = "admin",
		.playbook_name = "h200",
		.playbook_version = "1.0",
		.playbook_sha256 = "abc123",
		.playbook_text = "name: h200\n",
		.policy_json = "{\"batch\":1}",
		.check_mode = true,
	};
	struct store_deployment *got = NULL, **list = NULL;
	struct store_deploy_node *nodes = NULL;
	const int counts[4] = {3, 1, 0, 0};
	size_t n = 0;
	char *text = NULL;

	fx_open(f);
	/* Unknown cluster: nothing stored. */
	assert_int_equal(store_deployment_create(f->s, &d, t, 2, T0), -RY_E_NOT_FOUND);
	assert_int_equal(raw_count_in(f->path, "SELECT count(*) FROM playbooks", NULL), 0);
	assert_int_equal(store_cluster_ensure(f->s, "c1", T0), 0);
	assert_int_equal(store_deployment_create(f->s, &d, t, 2, T0), 0);
	/* The same playbook text is stored once. */
	d.id = "d-2";
	assert_int_equal(store_deployment_create(f->s, &d, t, 1, T0 + 1), 0);
	assert_int_equal(raw_count_in(f->path, "SELECT count(*) FROM playbooks", NULL), 1);
	/* Duplicate id: refused whole. */
	assert_true(store_deployment_create(f->s, &d, t, 1, T0 + 2) < 0);
	assert_int_equal(raw_count_in(f->path,
				      "SELECT count(*) FROM deployment_nodes WHERE "
				      "deployment_id = ?1",
				      "d-2"),
			 1);

	assert_int_equal(store_deployment_get(f->s, "d-1", &got), 0);
	assert_string_equal(got->state, "pending");
	assert_string_equal(got->cluster, "c1");
	assert_string_equal(got->playbook_sha256, "abc123");
	assert_true(got->check_mode);
	store_deployment_free(got);
	assert_int_equal(store_deployment_playbook_text(f->s, "d-1", &text), 0);
	assert_string_equal(text, "name: h200\n");
	free(text);

	assert_int_equal(store_deployments_list(f->s, true, 0, &list, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(list[0]->id, "d-1"); /* oldest first */
	store_deployments_free(list, n);

	assert_int_equal(store_deploy_node_sent(f->s, "d-1", "n-a", 4, T0 + 5), 1);
	assert_int_equal(store_deploy_node_sent(f->s, "d-1", "n-a", 4, T0 + 6), 0); /* once */
	assert_int_equal(
		store_deploy_node_update(f->s, "d-1", "n-a", "succeeded", "ok", counts, T0 + 9), 1);
	/* A late, repeated report changes nothing. */
	assert_int_equal(
		store_deploy_node_update(f->s, "d-1", "n-a", "failed", "late", counts, T0 + 10), 0);
	assert_int_equal(store_deploy_node_update(f->s, "d-1", "n-a", "bogus", NULL, NULL, T0),
			 -EINVAL);
	assert_int_equal(store_deploy_nodes(f->s, "d-1", &nodes, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(nodes[0].hostname, "gpu01");
	assert_string_equal(nodes[0].state, "succeeded");
	assert_string_equal(nodes[0].message, "ok");
	assert_int_equal(nodes[0].ok, 3);
	assert_int_equal(nodes[0].changed, 1);
	assert_int_equal(nodes[0].sent_at_ms, T0 + 5);
	assert_int_equal(nodes[0].finished_at_ms, T0 + 9);
	assert_string_equal(nodes[1].state, "waiting");
	assert_int_equal(nodes[1].batch, 1);
	store_deploy_nodes_free(nodes, n);

	assert_int_equal(
		store_deployment_update(f->s, "d-1", "failed", "max_fail exceeded", 1, T0 + 20), 0);
	assert_int_equal(store_deployment_get(f->s, "d-1", &got), 0);
	assert_string_equal(got->state, "failed");
	assert_string_equal(got->reason, "max_fail exceeded");
	assert_int_equal(got->finished_at_ms, T0 + 20);
	store_deployment_free(got);
	assert_int_equal(store_deployment_update(f->s, "d-1", "bogus", NULL, 0, T0), -EINVAL);
	assert_int_equal(store_deployment_update(f->s, "nope", "running", NULL, 0, T0),
			 -RY_E_NOT_FOUND);
	assert_int_equal(store_deployments_list(f->s, true, 0, &list, &n), 0);
	assert_int_equal(n, 1);
	store_deployments_free(list, n);
}

/* What the rollout pass reads instead of every node row: counts by the database, the nodes in
 * one state, one node; and its writes: a chunk marked sent in one transaction, the waiting ones
 * skipped at once. */
static void test_deploy_counts(void **state)
{
	struct fx *f = *state;
	struct store_deploy_target t[] = {
		{"n-a", "gpu01", 0},
		{"n-b", "gpu02", 0},
		{"n-c", "gpu03", 1},
		{"n-d", "gpu04", 2},
	};
	struct store_deployment_new d = {
		.id = "d-1",
		.cluster = "c1",
		.actor = "admin",
		.playbook_name = "h200",
		.playbook_version = "1.0",
		.playbook_sha256 = "abc123",
		.playbook_text = "name: h200\n",
		.policy_json = "{}",
	};
	const char *ids[] = {"n-a", "n-b", "n-x"};
	int steps[] = {3, 3, 3};
	bool moved[3] = {false, false, true};
	struct store_deploy_counts k;
	struct store_deploy_node *v = NULL;
	size_t n = 0;

	fx_open(f);
	assert_int_equal(store_cluster_ensure(f->s, "c1", T0), 0);
	assert_int_equal(store_deployment_create(f->s, &d, t, 4, T0), 0);
	assert_int_equal(store_deploy_counts(f->s, "d-1", 0, &k), 0);
	assert_int_equal(k.total, 4);
	assert_int_equal(k.last_batch, 2);
	assert_int_equal(k.waiting, 2);
	assert_int_equal(k.sent + k.sent_total + k.failed + k.failed_total, 0);

	/* n-x is not part of it: not moved, the others are, in one transaction. */
	assert_int_equal(store_deploy_nodes_sent(f->s, "d-1", ids, steps, 3, T0 + 5, moved), 0);
	assert_true(moved[0] && moved[1] && !moved[2]);
	assert_int_equal(store_deploy_nodes_sent(f->s, "d-1", ids, steps, 2, T0 + 6, moved), 0);
	assert_true(!moved[0] && !moved[1]); /* once */
	assert_int_equal(
		store_deploy_node_update(f->s, "d-1", "n-b", "unreachable", "gone", NULL, T0 + 7),
		1);
	assert_int_equal(store_deploy_counts(f->s, "d-1", 0, &k), 0);
	assert_int_equal(k.waiting, 0);
	assert_int_equal(k.sent, 1);
	assert_int_equal(k.failed, 1); /* unreachable counts as failed */
	assert_int_equal(k.sent_total, 1);
	assert_int_equal(k.failed_total, 1);
	assert_int_equal(store_deploy_counts(f->s, "d-1", 1, &k), 0);
	assert_int_equal(k.waiting, 1);
	assert_int_equal(k.sent, 0);

	/* Every pass reads the counts: from the index alone (v12), not row by row. */
	{
		sqlite3 *db = raw_open(f->path);
		sqlite3_stmt *st = NULL;
		bool covering = false;

		assert_int_equal(
			sqlite3_prepare_v2(db,
					   "EXPLAIN QUERY PLAN SELECT batch = 0, state, "
					   "count(*), max(batch) FROM deployment_nodes "
					   "WHERE deployment_id = 'd-1' GROUP BY batch = 0, state",
					   -1, &st, NULL),
			SQLITE_OK);
		while (sqlite3_step(st) == SQLITE_ROW)
			covering =
				covering || strstr((const char *)sqlite3_column_text(st, 3),
						   "COVERING INDEX deployment_nodes_state") != NULL;
		sqlite3_finalize(st);
		sqlite3_close(db);
		assert_true(covering);
	}

	/* Sent before a time: the timed-out ones only. */
	assert_int_equal(store_deploy_nodes_in(f->s, "d-1", "sent", 0, T0 + 5, &v, &n), 0);
	assert_int_equal(n, 0);
	store_deploy_nodes_free(v, n);
	assert_int_equal(store_deploy_nodes_in(f->s, "d-1", "sent", 0, T0 + 6, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].node_id, "n-a");
	store_deploy_nodes_free(v, n);
	assert_int_equal(store_deploy_nodes_in(f->s, "d-1", "waiting", -1, 0, &v, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].hostname, "gpu03"); /* by batch, host name */
	assert_string_equal(v[1].hostname, "gpu04");
	store_deploy_nodes_free(v, n);
	assert_int_equal(store_deploy_nodes_in(f->s, "d-1", "bogus", -1, 0, &v, &n), -EINVAL);

	assert_int_equal(store_deploy_node_get(f->s, "d-1", "n-a", &v), 0);
	assert_string_equal(v->state, "sent");
	assert_int_equal(v->sent_at_ms, T0 + 5);
	store_deploy_nodes_free(v, 1);
	assert_int_equal(store_deploy_node_get(f->s, "d-1", "n-x", &v), -RY_E_NOT_FOUND);

	assert_int_equal(store_deploy_nodes_skip_waiting(f->s, "d-1", "rollout stopped", T0 + 9),
			 2);
	assert_int_equal(store_deploy_nodes_skip_waiting(f->s, "d-1", "rollout stopped", T0 + 9),
			 0);
	assert_int_equal(store_deploy_node_get(f->s, "d-1", "n-d", &v), 0);
	assert_string_equal(v->state, "skipped");
	assert_string_equal(v->message, "rollout stopped");
	store_deploy_nodes_free(v, 1);
}

/* Group commit: items of a batch in savepoints of their own (a refused one leaves nothing, the
 * store functions' own transactions nest), nothing visible to the reader before the commit,
 * and a batch whose transaction SQLite gave up is not committed. */
static void test_batch(void **state)
{
	struct fx *f = *state;
	struct store_deploy_target t[] = {{"n-a", "gpu01", 0}, {"n-b", "gpu02", 0}};
	struct store_deployment_new d = {
		.id = "d-1",
		.cluster = "c1",
		.actor = "admin",
		.playbook_name = "h200",
		.playbook_version = "1.0",
		.playbook_sha256 = "abc123",
		.playbook_text = "name: h200\n",
		.policy_json = "{}",
	};
	struct store_step_result s0 = {.name = "s0", .status = "ok", .diff = "", .idx = 0};
	struct store_step_result s1 = {.name = "s1", .status = "ok", .diff = "", .idx = 1};
	struct store_step_result bad = {.name = "s0", .status = "failed", .diff = "", .idx = 0};
	struct store_deploy_counts k;
	char why[512];
	sqlite3 *raw;

	fx_open(f);
	assert_int_equal(store_cluster_ensure(f->s, "c1", T0), 0);
	assert_int_equal(store_deployment_create(f->s, &d, t, 2, T0), 0);
	assert_int_equal(store_deploy_node_sent(f->s, "d-1", "n-a", 2, T0), 1);

	assert_int_equal(store_batch_begin(f->s), 0);
	/* item 1: stored */
	assert_int_equal(store_batch_item_begin(f->s), 0);
	assert_int_equal(store_report_step(f->s, "d-1", "n-a", &s0, why, sizeof(why)),
			 STORE_REPORT_STORED);
	store_batch_item_end(f->s, true);
	/* item 2: refused inside (a rewritten result): its own rollback, nothing left */
	assert_int_equal(store_batch_item_begin(f->s), 0);
	assert_int_equal(store_report_step(f->s, "d-1", "n-a", &bad, why, sizeof(why)),
			 -RY_E_REFUSED);
	store_batch_item_end(f->s, true);
	/* item 3: stored, then undone by its item (a retry) */
	assert_int_equal(store_batch_item_begin(f->s), 0);
	assert_int_equal(store_report_step(f->s, "d-1", "n-a", &s1, why, sizeof(why)),
			 STORE_REPORT_STORED);
	store_batch_item_end(f->s, false);
	assert_false(store_batch_broken(f->s));
	/* The reader does not see the batch before it commits. */
	assert_int_equal(raw_count_in(f->path, "SELECT count(*) FROM step_results", NULL), 0);
	assert_int_equal(store_batch_commit(f->s), 0);
	assert_int_equal(raw_count_in(f->path, "SELECT count(*) FROM step_results", NULL), 1);
	assert_int_equal(
		raw_count_in(f->path, "SELECT count(*) FROM step_results WHERE idx = 1", NULL), 0);
	/* The writer is free again: an ordinary write works. */
	assert_int_equal(store_deploy_node_sent(f->s, "d-1", "n-b", 2, T0), 1);

	/* A batch rolled back leaves nothing. */
	assert_int_equal(store_batch_begin(f->s), 0);
	assert_int_equal(store_batch_item_begin(f->s), 0);
	assert_int_equal(store_report_step(f->s, "d-1", "n-a", &s1, why, sizeof(why)),
			 STORE_REPORT_STORED);
	store_batch_item_end(f->s, true);
	store_batch_rollback(f->s);
	assert_int_equal(raw_count_in(f->path, "SELECT count(*) FROM step_results", NULL), 1);

	/* A transaction that vanished under the batch (here: rolled back behind the store's
	 * back, as SQLite does after some I/O errors) is not committed. */
	assert_int_equal(store_batch_begin(f->s), 0);
	assert_int_equal(store_batch_item_begin(f->s), 0);
	assert_int_equal(store_report_step(f->s, "d-1", "n-a", &s1, why, sizeof(why)),
			 STORE_REPORT_STORED);
	store_batch_item_end(f->s, true);
	assert_int_equal(sqlite3_exec(f->s->w.db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	assert_true(store_batch_broken(f->s));
	assert_true(store_batch_commit(f->s) < 0);
	assert_int_equal(raw_count_in(f->path, "SELECT count(*) FROM step_results", NULL), 1);

	/* Another process holds the write lock: a batch cannot start, and says so in time. */
	raw = raw_open(f->path);
	raw_exec(raw, "BEGIN IMMEDIATE");
	assert_int_equal(store_batch_begin(f->s), -RY_E_BUSY);
	raw_exec(raw, "ROLLBACK");
	sqlite3_close(raw);
	assert_int_equal(store_deploy_counts(f->s, "d-1", 0, &k), 0);
	assert_int_equal(k.sent, 2);
}

/* Reports from nodes: only from a node the plan was sent to, while it runs there, for steps of
 * its plan, once; the end only after every step and consistent with them. */
static void test_reports(void **state)
{
	struct fx *f = *state;
	struct store_deploy_target t[] = {
		{"n-a", "gpu01", 0},
		{"n-b", "gpu02", 1},
	};
	struct store_deployment_new d = {
		.id = "d-1",
		.cluster = "c1",
		.actor = "admin",
		.playbook_name = "h200",
		.playbook_version = "1.0",
		.playbook_sha256 = "abc123",
		.playbook_text = "name: h200\n",
		.policy_json = "{}",
	};
	struct store_step_result s0 = {
		.name = "s0", .status = "changed", .diff = "-a\n+b\n", .message = "", .idx = 0};
	struct store_step_result s1 = {
		.name = "s1", .status = "ok", .diff = "", .message = "fine", .idx = 1};
	struct store_step_result *res = NULL;
	int ok_counts[4] = {1, 1, 0, 0}, bad_counts[4] = {2, 0, 0, 0}, zero[4] = {0};
	char why[512];
	size_t n = 0;

	fx_open(f);
	assert_int_equal(store_cluster_ensure(f->s, "c1", T0), 0);
	assert_int_equal(store_deployment_create(f->s, &d, t, 2, T0), 0);

	/* Not part of the deployment at all (another cluster's node). */
	assert_int_equal(store_report_step(f->s, "d-1", "n-x", &s0, why, sizeof(why)),
			 -RY_E_REFUSED);
	assert_non_null(strstr(why, "not part of deployment d-1"));
	/* A member that was never sent the plan. */
	assert_int_equal(store_report_step(f->s, "d-1", "n-a", &s0, why, sizeof(why)),
			 -RY_E_REFUSED);
	assert_non_null(strstr(why, "never sent its plan"));
	assert_int_equal(store_report_apply_done(f->s, "d-1", "n-b", "succeeded", NULL, zero, T0,
						 why, sizeof(why)),
			 -RY_E_REFUSED);
	assert_int_equal(store_deploy_node_sent(f->s, "d-1", "n-a", 2, T0 + 1), 1);
	/* A step outside the plan. */
	s1.idx = 2;
	assert_int_equal(store_report_step(f->s, "d-1", "n-a", &s1, why, sizeof(why)),
			 -RY_E_REFUSED);
	assert_non_null(strstr(why, "not in the plan"));
	s1.idx = 1;
	assert_int_equal(store_report_step(f->s, "d-1", "n-a", &s0, why, sizeof(why)),
			 STORE_REPORT_STORED);
	/* The same report again (a re-send) is a no-op; a different one is refused. */
	assert_int_equal(store_report_step(f->s, "d-1", "n-a", &s0, why, sizeof(why)),
			 STORE_REPORT_DUPLICATE);
	s0.status = "failed";
	assert_int_equal(store_report_step(f->s, "d-1", "n-a", &s0, why, sizeof(why)),
			 -RY_E_REFUSED);
	assert_non_null(strstr(why, "already reported as changed"));
	s0.status = "changed";
	s0.status = "bogus";
	assert_int_equal(store_report_step(f->s, "d-1", "n-a", &s0, why, sizeof(why)),
			 -RY_E_INVALID);
	s0.status = "changed";
	/* The end before all steps, or contradicting them. */
	assert_int_equal(store_report_apply_done(f->s, "d-1", "n-a", "succeeded", NULL, ok_counts,
						 T0 + 2, why, sizeof(why)),
			 -RY_E_REFUSED);
	assert_non_null(strstr(why, "before its step results (1 of 2"));
	assert_int_equal(store_report_step(f->s, "d-1", "n-a", &s1, why, sizeof(why)),
			 STORE_REPORT_STORED);
	assert_int_equal(store_report_apply_done(f->s, "d-1", "n-a", "succeeded", NULL, bad_counts,
						 T0 + 2, why, sizeof(why)),
			 -RY_E_REFUSED);
	assert_non_null(strstr(why, "contradicts"));
	assert_int_equal(store_report_apply_done(f->s, "d-1", "n-a", "failed", NULL, ok_counts,
						 T0 + 2, why, sizeof(why)),
			 -RY_E_REFUSED);
	assert_int_equal(store_report_apply_done(f->s, "d-1", "n-a", "succeeded", NULL, ok_counts,
						 T0 + 3, why, sizeof(why)),
			 STORE_REPORT_STORED);
	/* After the end: the same end again is a re-send; a rewritten step or end is refused. */
	assert_int_equal(store_report_apply_done(f->s, "d-1", "n-a", "succeeded", NULL, ok_counts,
						 T0 + 4, why, sizeof(why)),
			 STORE_REPORT_DUPLICATE);
	assert_int_equal(store_report_step(f->s, "d-1", "n-a", &s1, why, sizeof(why)),
			 STORE_REPORT_DUPLICATE);
	s1.status = "failed";
	assert_int_equal(store_report_step(f->s, "d-1", "n-a", &s1, why, sizeof(why)),
			 -RY_E_REFUSED);
	assert_int_equal(store_report_apply_done(f->s, "d-1", "n-a", "failed", NULL, zero, T0 + 5,
						 why, sizeof(why)),
			 -RY_E_REFUSED);
	assert_non_null(strstr(why, "already finished on node n-a as succeeded"));
	assert_int_equal(store_step_results(f->s, "d-1", &res, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(res[0].status, "changed");
	assert_string_equal(res[1].status, "ok");
	store_step_results_free(res, n);

	/* A plan the agent refused whole: failed with no steps. */
	assert_int_equal(store_deploy_node_sent(f->s, "d-1", "n-b", 3, T0 + 6), 1);
	assert_int_equal(store_report_apply_done(f->s, "d-1", "n-b", "failed", "plan refused", zero,
						 T0 + 7, why, sizeof(why)),
			 STORE_REPORT_STORED);
}

/* Diffs beyond a node's budget for a deployment are replaced by a note; the status stays. */
static void test_report_budget(void **state)
{
	struct fx *f = *state;
	struct store_deploy_target t[] = {{"n-a", "gpu01", 0}};
	struct store_deployment_new d = {
		.id = "d-1",
		.cluster = "c1",
		.actor = "admin",
		.playbook_name = "h200",
		.playbook_version = "1.0",
		.playbook_sha256 = "abc123",
		.playbook_text = "name: h200\n",
		.policy_json = "{}",
	};
	size_t big = 256 * 1024, steps = 80, n = 0;
	char *diff = malloc(big + 1), why[512], name[16];
	struct store_step_result *res = NULL;

	assert_non_null(diff);
	memset(diff, 'x', big);
	diff[big] = '\0';
	fx_open(f);
	assert_int_equal(store_cluster_ensure(f->s, "c1", T0), 0);
	assert_int_equal(store_deployment_create(f->s, &d, t, 1, T0), 0);
	assert_int_equal(store_deploy_node_sent(f->s, "d-1", "n-a", (int)steps, T0), 1);
	for (size_t i = 0; i < steps; i++) {
		struct store_step_result r = {.name = name,
					      .status = "changed",
					      .diff = diff,
					      .message = "",
					      .idx = (int)i};

		snprintf(name, sizeof(name), "s%zu", i);
		assert_int_equal(store_report_step(f->s, "d-1", "n-a", &r, why, sizeof(why)),
				 STORE_REPORT_STORED);
		/* Re-sent with its full diff: still the same report. */
		assert_int_equal(store_report_step(f->s, "d-1", "n-a", &r, why, sizeof(why)),
				 STORE_REPORT_DUPLICATE);
	}
	assert_int_equal(store_step_results(f->s, "d-1", &res, &n), 0);
	assert_int_equal(n, steps);
	assert_int_equal(strlen(res[0].diff), big);
	assert_non_null(strstr(res[steps - 1].diff, "size budget"));
	assert_string_equal(res[steps - 1].status, "changed");
	store_step_results_free(res, n);
	/* The budget, and a short note for each step beyond it. */
	assert_true(raw_count_in(f->path, "SELECT sum(length(diff)) FROM step_results", NULL) <=
		    16 * 1024 * 1024 + (int64_t)steps * 128);
	free(diff);
}

static void test_bench_runs(void **state)
{
	struct fx *f = *state;
	struct store_bench_run *b = NULL, **list = NULL;
	size_t n = 0;

	fx_open(f);
	assert_int_equal(store_bench_create(f->s, "b-1", "lat", "tcp", "n-a", "n-b", "{\"size\":2}",
					    60000, T0),
			 0);
	assert_int_equal(store_bench_create(f->s, "b-2", "bw", "verbs", "n-a", "n-b", "{}", 0, T0),
			 -EINVAL);
	assert_int_equal(
		store_bench_update(f->s, "b-1", "server_sent", NULL, 0, NULL, NULL, NULL, T0 + 1),
		1);
	assert_int_equal(store_bench_update(f->s, "b-1", "server_ready", "127.0.0.1", 40000, NULL,
					    NULL, NULL, T0 + 2),
			 1);
	/* Zero port and NULLs keep what is there. */
	assert_int_equal(
		store_bench_update(f->s, "b-1", "client_sent", NULL, 0, NULL, NULL, NULL, T0 + 3),
		1);
	assert_int_equal(store_bench_get(f->s, "b-1", &b), 0);
	assert_string_equal(b->state, "client_sent");
	assert_string_equal(b->server_address, "127.0.0.1");
	assert_int_equal(b->server_port, 40000);
	assert_null(b->result_json);
	assert_int_equal(b->finished_at_ms, 0);
	store_bench_run_free(b);
	assert_int_equal(store_bench_list(f->s, true, 0, &list, &n), 0);
	assert_int_equal(n, 1);
	store_bench_runs_free(list, n);

	assert_int_equal(store_bench_update(f->s, "b-1", "succeeded", NULL, 0, "{\"ok\":true}",
					    NULL, NULL, T0 + 9),
			 1);
	/* A late report changes nothing. */
	assert_int_equal(
		store_bench_update(f->s, "b-1", "failed", NULL, 0, NULL, NULL, "late", T0 + 10), 0);
	assert_int_equal(store_bench_update(f->s, "b-1", "weird", NULL, 0, NULL, NULL, NULL, T0),
			 -EINVAL);
	assert_int_equal(store_bench_get(f->s, "b-1", &b), 0);
	assert_string_equal(b->state, "succeeded");
	assert_string_equal(b->result_json, "{\"ok\":true}");
	assert_null(b->error);
	assert_int_equal(b->finished_at_ms, T0 + 9);
	store_bench_run_free(b);
	assert_int_equal(store_bench_list(f->s, true, 0, &list, &n), 0);
	assert_int_equal(n, 0);
	store_bench_runs_free(list, n);
	assert_int_equal(store_bench_get(f->s, "nope", &b), -RY_E_NOT_FOUND);
}

static void test_bench_cancel(void **state)
{
	struct fx *f = *state;
	struct store_bench_run *b = NULL, **list = NULL;
	size_t n = 0;

	fx_open(f);
	assert_int_equal(
		store_bench_create(f->s, "b-1", "bw", "tcp", "n-a", "n-b", "{}", 60000, T0), 0);
	assert_int_equal(store_bench_get(f->s, "b-1", &b), 0);
	assert_int_equal(b->cancel_requested_ms, 0);
	store_bench_run_free(b);
	/* A request is recorded once; asking again keeps the first time. */
	assert_int_equal(store_bench_request_cancel(f->s, "b-1", "admin", T0 + 5), 1);
	assert_int_equal(store_bench_request_cancel(f->s, "b-1", "admin", T0 + 7), 1);
	assert_int_equal(store_bench_get(f->s, "b-1", &b), 0);
	assert_int_equal(b->cancel_requested_ms, T0 + 5);
	assert_string_equal(b->state, "pending");
	store_bench_run_free(b);
	/* The controller carries it out: cancelled is final. */
	assert_int_equal(store_bench_update(f->s, "b-1", "cancelled", NULL, 0, NULL, NULL,
					    "cancelled by operator", T0 + 8),
			 1);
	assert_true(store_bench_state_final("cancelled"));
	assert_false(store_bench_state_final("client_sent"));
	assert_int_equal(
		store_bench_update(f->s, "b-1", "succeeded", NULL, 0, "{}", NULL, NULL, T0 + 9), 0);
	assert_int_equal(store_bench_get(f->s, "b-1", &b), 0);
	assert_string_equal(b->state, "cancelled");
	assert_string_equal(b->error, "cancelled by operator");
	assert_int_equal(b->finished_at_ms, T0 + 8);
	store_bench_run_free(b);
	assert_int_equal(store_bench_list(f->s, true, 0, &list, &n), 0);
	assert_int_equal(n, 0);
	store_bench_runs_free(list, n);
	/* Finished runs and unknown ones. */
	assert_int_equal(store_bench_request_cancel(f->s, "b-1", "admin", T0 + 10), 0);
	assert_int_equal(store_bench_request_cancel(f->s, "nope", "admin", T0 + 10),
			 -RY_E_NOT_FOUND);
	assert_int_equal(store_bench_request_cancel(f->s, NULL, "admin", T0), -EINVAL);
}

/* v4 -> v5 rebuilds bench_runs: rows survive, and the new state is allowed. */
static void test_migrate_bench_v4(void **state)
{
	struct fx *f = *state;
	struct store_bench_run *b = NULL;

	sqlite3 *db;

	/* A row as a v4 program wrote it (today's insert names columns v4 does not have). */
	assert_int_equal(store_open_at_version(f->path, 4, &f->s), 0);
	store_free(f->s);
	f->s = NULL;
	db = raw_open(f->path);
	raw_exec(db, "INSERT INTO bench_runs (id, kind, transport, client_node, server_node, "
		     "params, state, deadline_ms, created_at) VALUES ('b-old', 'lat', 'verbs', "
		     "'n-a', 'n-b', '{\"size\":2}', 'pending', 30000, 1000)");
	sqlite3_close(db);
	fx_open(f);
	assert_int_equal(store_schema_version(f->s), STORE_SCHEMA_VERSION);
	assert_int_equal(store_bench_get(f->s, "b-old", &b), 0);
	assert_string_equal(b->transport, "verbs");
	assert_string_equal(b->params_json, "{\"size\":2}");
	assert_int_equal(b->deadline_ms, 30000);
	assert_int_equal(b->cancel_requested_ms, 0);
	store_bench_run_free(b);
	assert_true(has_table(f->path, "bench_runs_state"));
	assert_int_equal(store_bench_request_cancel(f->s, "b-old", "admin", T0 + 1), 1);
	assert_int_equal(
		store_bench_update(f->s, "b-old", "cancelled", NULL, 0, NULL, NULL, NULL, T0 + 2),
		1);
}

/* Run sql on the database file directly (the store closed): for rows of an old schema that
 * today's statements no longer fit. */
static void raw_sql(const char *path, const char *sql)
{
	sqlite3 *db = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* Deployment d-1 of cluster c1 (playbook h200 1.0) with nodes n-a (batch 0) and n-b (batch 1),
 * created by actor, as a v3..v9 schema holds it. */
static void old_deployment(struct fx *f, const char *actor)
{
	char sql[2048];

	store_free(f->s);
	f->s = NULL;
	snprintf(sql, sizeof(sql),
		 "INSERT INTO playbooks (name, version, sha256, text, created_at) "
		 "VALUES ('h200', '1.0', 'abc123', 'name: h200\n', %lld);"
		 "INSERT INTO deployments (id, cluster_id, playbook_id, check_mode, policy, state, "
		 "created_at) VALUES ('d-1', (SELECT id FROM clusters WHERE name = 'c1'), "
		 "(SELECT id FROM playbooks WHERE sha256 = 'abc123'), 0, '{}', 'pending', %lld);"
		 "INSERT INTO deployment_nodes (deployment_id, node_id, hostname, batch, state) "
		 "VALUES ('d-1', 'n-a', 'gpu01', 0, 'waiting'), ('d-1', 'n-b', 'gpu02', 1, "
		 "'waiting');"
		 "INSERT INTO audit_log (at, actor, action, target, outcome, detail) VALUES (%lld, "
		 "'%s', 'deploy.apply', 'd-1', 'created', 'h200');",
		 (long long)T0, (long long)T0, (long long)T0, actor);
	raw_sql(f->path, sql);
}

/* A deployment in flight when the controller is upgraded to v6: its nodes' plans were sent
 * without a step count, and their reports are still accepted (no count to check them against);
 * a node that was never sent its plan still is not. */
static void test_migrate_deploy_v5(void **state)
{
	struct fx *f = *state;
	struct store_step_result s7 = {
		.name = "s7", .status = "ok", .diff = "", .message = "", .idx = 7};
	int counts[4] = {1, 0, 0, 0};
	char why[512];

	assert_int_equal(store_open_at_version(f->path, 5, &f->s), 0);
	assert_int_equal(store_cluster_ensure(f->s, "c1", T0), 0);
	old_deployment(f, "admin");
	raw_sql(f->path, "UPDATE deployment_nodes SET state = 'sent', sent_at = 1 WHERE "
			 "node_id = 'n-a'");
	fx_open(f);
	assert_int_equal(store_report_step(f->s, "d-1", "n-a", &s7, why, sizeof(why)),
			 STORE_REPORT_STORED);
	assert_int_equal(store_report_apply_done(f->s, "d-1", "n-a", "succeeded", NULL, counts,
						 T0 + 2, why, sizeof(why)),
			 STORE_REPORT_STORED);
	assert_int_equal(store_report_step(f->s, "d-1", "n-b", &s7, why, sizeof(why)),
			 -RY_E_REFUSED);
	assert_non_null(strstr(why, "never sent its plan"));
}

static const struct store_campaign_new campaign_c1 = {
	.id = "c-1",
	.cluster = "c1",
	.actor = "admin",
	.playbook_name = "h200",
	.playbook_version = "1.0",
	.playbook_sha256 = "abc123",
	.playbook_text = "name: h200\n",
	.spec_json = "{\"transport\":\"tcp\",\"tests\":[]}",
	.nodes_json = "[]",
	.left_out_json = "[]",
	.options_json = "{}",
	.progress_json = "{\"tests\":[]}",
	.seed = 42,
};

/* A campaign's life: created with its playbook, the cursor only ever moves while running, rows
 * inserted once per round (and only for the round at the cursor), a row started together with
 * its benchmark run (once), final rows stay final, the end stored once, counts per state. */
static void test_campaigns(void **state)
{
	struct fx *f = *state;
	struct store_campaign *m = NULL, **list = NULL;
	struct store_campaign_row rows[3] = {
		{.slot = 0,
		 .phase = "run",
		 .role = "measure",
		 .node_a = "n-a",
		 .node_b = "n-b",
		 .rail = -1,
		 .state = "pending"},
		{.slot = 1,
		 .phase = "run",
		 .role = "measure",
		 .node_a = "n-c",
		 .node_b = "n-d",
		 .rail = 3,
		 .state = "pending"},
		{.slot = 2,
		 .phase = "run",
		 .role = "measure",
		 .node_a = "n-e",
		 .node_b = "n-f",
		 .rail = 7,
		 .state = "missing",
		 .error = "rail 7 missing on e"},
	};
	struct store_campaign_row *got = NULL;
	struct store_campaign_count *k = NULL;
	struct store_bench_new b = {"b-1", "lat", "tcp", "n-a", "n-b", "{\"kind\":\"lat\"}",
				    NULL,  30000, NULL};
	struct store_bench_run *run = NULL;
	size_t n = 0;

	fx_open(f);
	assert_int_equal(store_campaign_create(f->s, &campaign_c1, T0), -RY_E_NOT_FOUND);
	assert_int_equal(store_cluster_ensure(f->s, "c1", T0), 0);
	assert_int_equal(store_campaign_create(f->s, &campaign_c1, T0), 0);
	assert_int_not_equal(store_campaign_create(f->s, &campaign_c1, T0), 0); /* same id */
	assert_int_equal(store_campaign_get(f->s, "c-1", &m), 0);
	assert_string_equal(m->state, "running");
	assert_string_equal(m->cluster, "c1");
	assert_string_equal(m->playbook_sha256, "abc123");
	assert_int_equal(m->seed, 42);
	assert_int_equal(m->test_idx, 0);
	assert_int_equal(m->round, 0);
	store_campaign_free(m);
	assert_int_equal(store_campaign_get(f->s, "c-9", &m), -RY_E_NOT_FOUND);

	/* Rows only for the round at the cursor. */
	assert_int_equal(store_campaign_round_insert(f->s, "c-1", 0, 1, rows, 3, T0 + 1), 0);
	assert_int_equal(store_campaign_round_insert(f->s, "c-1", 0, 0, rows, 3, T0 + 1), 1);
	/* Again (a resumed round): the rows stay as they are. */
	assert_int_equal(store_campaign_round_insert(f->s, "c-1", 0, 0, rows, 3, T0 + 2), 1);
	assert_int_equal(store_campaign_rows(f->s, "c-1", 0, 0, &got, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(got[0].rail, -1);
	assert_int_equal(got[1].rail, 3);
	assert_string_equal(got[2].state, "missing");
	assert_string_equal(got[2].error, "rail 7 missing on e");
	assert_int_equal(got[2].finished_at_ms, T0 + 1);
	assert_null(got[0].bench_id);
	store_campaign_rows_free(got, n);
	got = NULL;

	/* A row starts with its run, once; the run knows its campaign. */
	assert_int_equal(store_campaign_row_start(f->s, "c-1", 0, 0, 0, &b, T0 + 3), 1);
	assert_int_equal(store_campaign_row_start(f->s, "c-1", 0, 0, 0, &b, T0 + 3), 0);
	b.id = "b-2";
	assert_int_equal(store_campaign_row_start(f->s, "c-1", 0, 0, 0, &b, T0 + 3), 0);
	assert_int_equal(store_bench_get(f->s, "b-2", &run), -RY_E_NOT_FOUND);
	assert_int_equal(store_bench_get(f->s, "b-1", &run), 0);
	assert_string_equal(run->campaign_id, "c-1");
	assert_string_equal(run->state, "pending");
	store_bench_run_free(run);
	/* A missing row never starts. */
	b.id = "b-3";
	assert_int_equal(store_campaign_row_start(f->s, "c-1", 0, 0, 2, &b, T0 + 3), 0);

	/* Updates: live is stamped once; a final row stays final. */
	assert_int_equal(store_campaign_row_update(f->s, "c-1", 0, 0, 0, "running", NULL, NULL,
						   true, T0 + 4),
			 1);
	assert_int_equal(store_campaign_row_update(f->s, "c-1", 0, 0, 0, "running", NULL, NULL,
						   true, T0 + 5),
			 1);
	assert_int_equal(store_campaign_row_update(f->s, "c-1", 0, 0, 0, "done", "{\"metrics\":{}}",
						   NULL, false, T0 + 6),
			 1);
	assert_int_equal(store_campaign_row_update(f->s, "c-1", 0, 0, 0, "failed", NULL, "late",
						   false, T0 + 7),
			 0);
	assert_int_equal(store_campaign_row_update(f->s, "c-1", 0, 0, 0, "pending", NULL, NULL,
						   false, T0 + 7),
			 -EINVAL);
	assert_int_equal(store_campaign_row_update(f->s, "c-1", 0, 0, 1, "failed", NULL,
						   "offline: d", false, T0 + 8),
			 1);
	assert_int_equal(store_campaign_rows(f->s, "c-1", -1, -1, &got, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(got[0].state, "done");
	assert_string_equal(got[0].bench_id, "b-1");
	assert_string_equal(got[0].summary_json, "{\"metrics\":{}}");
	assert_null(got[0].error);
	assert_int_equal(got[0].live_at_ms, T0 + 4);
	assert_int_equal(got[0].finished_at_ms, T0 + 6);
	assert_string_equal(got[1].error, "offline: d");
	store_campaign_rows_free(got, n);
	assert_int_equal(store_campaign_counts(f->s, "c-1", &k, &n), 0);
	assert_int_equal(n, 3); /* done, failed, missing */
	for (size_t i = 0; i < n; i++)
		assert_int_equal(k[i].n, 1);
	free(k);

	/* The cursor, then the end (once), then nothing moves. */
	assert_int_equal(store_campaign_advance(f->s, "c-1", 0, 1, "{\"tests\":[1]}", T0 + 9), 1);
	assert_int_equal(store_campaign_get(f->s, "c-1", &m), 0);
	assert_int_equal(m->round, 1);
	assert_string_equal(m->progress_json, "{\"tests\":[1]}");
	store_campaign_free(m);
	assert_int_equal(store_campaign_request_cancel(f->s, "c-1", "admin", T0 + 10), 1);
	assert_int_equal(store_campaign_finish(f->s, "c-1", "running", NULL, NULL, T0), -EINVAL);
	assert_int_equal(store_campaign_finish(f->s, "c-1", "cancelled",
					       "{\"result\":\"incomplete\"}",
					       "cancelled by operator", T0 + 11),
			 1);
	assert_int_equal(store_campaign_finish(f->s, "c-1", "failed", NULL, NULL, T0 + 12), 0);
	assert_int_equal(store_campaign_advance(f->s, "c-1", 1, 0, NULL, T0 + 13), 0);
	assert_int_equal(store_campaign_request_cancel(f->s, "c-1", "admin", T0 + 14), 0);
	assert_int_equal(store_campaign_request_cancel(f->s, "c-9", "admin", T0 + 14),
			 -RY_E_NOT_FOUND);
	assert_int_equal(store_campaign_get(f->s, "c-1", &m), 0);
	assert_string_equal(m->state, "cancelled");
	assert_string_equal(m->verdict_json, "{\"result\":\"incomplete\"}");
	assert_int_equal(m->cancel_requested_ms, T0 + 10);
	assert_int_equal(m->finished_at_ms, T0 + 11);
	store_campaign_free(m);
	assert_int_equal(store_campaigns_list(f->s, true, 0, &list, &n), 0);
	assert_int_equal(n, 0);
	store_campaigns_free(list, n);
	assert_int_equal(store_campaigns_list(f->s, false, 0, &list, &n), 0);
	assert_int_equal(n, 1);
	store_campaigns_free(list, n);
	assert_true(store_campaign_state_final("passed"));
	assert_false(store_campaign_state_final("running"));
	assert_true(store_campaign_row_final("missing"));
	assert_false(store_campaign_row_final("running"));
}

/* v6 -> v7: bench runs made before campaigns existed have no campaign; campaigns can be made. */
static void test_migrate_campaign_v6(void **state)
{
	struct fx *f = *state;
	struct store_bench_run *b = NULL;

	assert_int_equal(store_open_at_version(f->path, 6, &f->s), 0);
	assert_int_equal(store_cluster_ensure(f->s, "c1", T0), 0);
	store_free(f->s);
	f->s = NULL;
	{
		sqlite3 *db = raw_open(f->path);

		raw_exec(db, "INSERT INTO bench_runs (id, kind, transport, client_node, "
			     "server_node, params, state, deadline_ms, created_at) VALUES ('b-6', "
			     "'bw', 'tcp', 'n-a', 'n-b', '{}', 'succeeded', 1000, 1000)");
		sqlite3_close(db);
	}
	fx_open(f);
	assert_int_equal(store_schema_version(f->s), STORE_SCHEMA_VERSION);
	assert_int_equal(store_bench_get(f->s, "b-6", &b), 0);
	assert_null(b->campaign_id);
	assert_string_equal(b->state, "succeeded");
	store_bench_run_free(b);
	assert_true(has_table(f->path, "campaign_results"));
	assert_int_equal(store_campaign_create(f->s, &campaign_c1, T0), 0);
}

/* Sign-offs: one per campaign, of a campaign that exists, the report kept byte for byte (a
 * byte-exact copy is what the signature covers), listed newest first and per cluster; a
 * migration from v7 keeps campaigns and adds the table. */
static void test_signoffs(void **state)
{
	struct fx *f = *state;
	static const char report[] = "{\n  \"a\": 1.5,\n  \"b\": \"\u00e9\"\n}\n";
	struct store_signoff_new n = {
		.id = "so-1",
		.cluster = "c1",
		.campaign_id = "c-1",
		.kind = "signoff",
		.verdict = "pass",
		.sha256 = "sha256:00",
		.report = report,
		.report_len = sizeof(report) - 1,
		.signature = "-----BEGIN CMS-----\n...\n-----END CMS-----\n",
		.nodes_json = "[]",
		.actor = "admin",
	};
	struct store_signoff *so = NULL, **v = NULL;
	struct store_campaign_new c2 = campaign_c1;
	size_t k = 0;
	char *text = NULL;

	fx_open(f);
	assert_int_equal(store_cluster_ensure(f->s, "c1", T0), 0);
	assert_int_equal(store_signoff_create(f->s, &n, T0), -RY_E_NOT_FOUND); /* no campaign */
	assert_int_equal(store_signoff_get(f->s, "so-1", false, &so), -RY_E_NOT_FOUND);
	assert_int_equal(store_campaign_create(f->s, &campaign_c1, T0), 0);
	assert_int_equal(store_signoff_create(f->s, &n, T0 + 1), 0);
	n.id = "so-2";
	assert_int_equal(store_signoff_create(f->s, &n, T0 + 2), -RY_E_EXISTS); /* same campaign */
	c2.id = "c-2";
	assert_int_equal(store_campaign_create(f->s, &c2, T0), 0);
	n.campaign_id = "c-2";
	n.kind = "revalidation";
	n.baseline_id = "so-1";
	n.verdict = "fail";
	n.report_len = 0;
	assert_int_equal(store_signoff_create(f->s, &n, T0 + 2), -EINVAL);
	n.report_len = sizeof(report) - 1;
	n.cluster = "nope";
	assert_int_equal(store_signoff_create(f->s, &n, T0 + 2), -RY_E_NOT_FOUND);
	n.cluster = "c1";
	assert_int_equal(store_signoff_create(f->s, &n, T0 + 2), 0);

	assert_int_equal(store_signoff_get(f->s, "so-1", false, &so), 0);
	assert_null(so->report);
	assert_int_equal(so->report_len, sizeof(report) - 1);
	assert_string_equal(so->campaign_id, "c-1");
	assert_null(so->baseline_id);
	store_signoff_free(so);
	assert_int_equal(store_signoff_get(f->s, "so-2", true, &so), 0);
	assert_memory_equal(so->report, report, sizeof(report));
	assert_string_equal(so->baseline_id, "so-1");
	assert_string_equal(so->kind, "revalidation");
	assert_true(so->created_at_ms == T0 + 2);
	assert_non_null(strstr(so->signature, "BEGIN CMS"));
	store_signoff_free(so);
	assert_int_equal(store_signoff_of_campaign(f->s, "c-2", &so), 0);
	assert_string_equal(so->id, "so-2");
	store_signoff_free(so);

	assert_int_equal(store_signoffs_list(f->s, NULL, 0, &v, &k), 0);
	assert_int_equal(k, 2);
	assert_string_equal(v[0]->id, "so-2");
	store_signoffs_free(v, k);
	assert_int_equal(store_signoffs_list(f->s, "other", 0, &v, &k), 0);
	assert_int_equal(k, 0);
	store_signoffs_free(v, k);

	assert_int_equal(store_playbook_text_by_sha(f->s, "abc123", &text), 0);
	assert_string_equal(text, "name: h200\n");
	free(text);
	assert_int_equal(store_playbook_text_by_sha(f->s, "zzz", &text), -RY_E_NOT_FOUND);
}

static void test_migrate_signoff_v7(void **state)
{
	struct fx *f = *state;
	struct store_campaign *m = NULL;

	assert_int_equal(store_open_at_version(f->path, 7, &f->s), 0);
	assert_int_equal(store_cluster_ensure(f->s, "c1", T0), 0);
	assert_int_equal(store_campaign_create(f->s, &campaign_c1, T0), 0);
	store_free(f->s);
	f->s = NULL;
	assert_false(has_table(f->path, "signoffs"));
	fx_open(f);
	assert_int_equal(store_schema_version(f->s), STORE_SCHEMA_VERSION);
	assert_true(has_table(f->path, "signoffs"));
	assert_int_equal(store_campaign_get(f->s, "c-1", &m), 0);
	assert_string_equal(m->state, "running");
	store_campaign_free(m);
}

/* ---- API tokens (schema v9) ---- */

#define API_TOKEN_LEN (5 + 16 + 1 + 64)

static char *make_api_token(struct store *s, const char *name, const char *role,
			    const char *clusters, int64_t ttl_ms, int64_t now, char **ret_id)
{
	char *tok = NULL;

	assert_int_equal(
		store_api_token_create(s, name, role, clusters, ttl_ms, "admin", now, &tok, ret_id),
		0);
	assert_non_null(tok);
	return tok;
}

/* SHA-256 hex of s, as the store hashes secrets. */
static void sha256_hex(const char *s, char out[65])
{
	unsigned char md[32];
	unsigned int mdlen = 0;

	assert_true(EVP_Digest(s, strlen(s), md, &mdlen, EVP_sha256(), NULL));
	util_hex(md, sizeof(md), out);
}

/* Create, then check: the token's form, the row it gives back, the audit row; a token that
 * never expires; the check writes nothing. */
static void test_api_token_roundtrip(void **state)
{
	struct fx *f = *state;
	struct store_api_token *t = NULL;
	struct store_audit_entry *e = NULL;
	char *tok, *tok2, *id = NULL;
	size_t n = 0;

	fx_open(f);
	tok = make_api_token(f->s, "ci-pipeline", "integrator", " [ \"prod-a\", \"prod-b\" ] ",
			     HOUR_MS, T0, &id);
	assert_int_equal(strlen(tok), API_TOKEN_LEN);
	assert_memory_equal(tok, STORE_API_TOKEN_PREFIX, 5);
	assert_int_equal(strlen(id), 16);
	assert_memory_equal(tok + 5, id, 16);
	assert_int_equal(tok[5 + 16], '.');

	assert_int_equal(store_api_token_check(f->s, tok, T0 + 1, &t), 0);
	assert_string_equal(t->id, id);
	assert_string_equal(t->name, "ci-pipeline");
	assert_string_equal(t->role, "integrator");
	assert_string_equal(t->clusters_json, "[\"prod-a\",\"prod-b\"]"); /* compact */
	assert_string_equal(t->created_by, "admin");
	assert_true(t->created_at_ms == T0);
	assert_true(t->expires_at_ms == T0 + HOUR_MS);
	assert_true(t->revoked_at_ms == 0);
	assert_true(t->last_used_at_ms == 0);
	store_api_token_free(t);
	t = NULL;

	assert_int_equal(store_audit_list(f->s, 10, &e, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(e[0].action, "api_token.create");
	assert_string_equal(e[0].actor, "admin");
	assert_string_equal(e[0].target, id);
	assert_non_null(strstr(e[0].detail, "name=ci-pipeline"));
	assert_non_null(strstr(e[0].detail, "role=integrator"));
	assert_null(strstr(e[0].detail, tok + 5 + 17)); /* never the secret */
	store_audit_entries_free(e, n);

	/* No ttl: never expires; no clusters: every cluster. */
	tok2 = make_api_token(f->s, "root", "admin", NULL, 0, T0, NULL);
	assert_int_equal(store_api_token_check(f->s, tok2, INT64_MAX, &t), 0);
	assert_string_equal(t->role, "admin");
	assert_null(t->clusters_json);
	assert_true(t->expires_at_ms == 0);
	assert_int_equal(raw_count_in(f->path,
				      "SELECT count(*) FROM api_tokens WHERE expires_at IS NULL "
				      "AND clusters IS NULL AND name = ?1",
				      "root"),
			 1);
	store_api_token_free(t);

	/* Checking is read only: no audit row, no last-used stamp. */
	assert_int_equal(audit_count(f->s), 2);
	assert_int_equal(
		raw_count_in(f->path,
			     "SELECT count(*) FROM api_tokens WHERE last_used_at IS NOT NULL",
			     NULL),
		0);
	free(tok);
	free(tok2);
	free(id);
}

/* The token is shown once: the database holds the SHA-256 of its secret, never the token or
 * the secret (in the file, the WAL, or any column). */
static void test_api_token_hashed(void **state)
{
	struct fx *f = *state;
	char hash[65], wal[400], *tok, *id = NULL;
	const char *secret;
	bool hash_seen;

	fx_open(f);
	tok = make_api_token(f->s, "viewer-1", "viewer", NULL, HOUR_MS, T0, &id);
	secret = tok + 5 + 16 + 1;
	sha256_hex(secret, hash);
	assert_int_equal(raw_count_in(f->path,
				      "SELECT count(*) FROM api_tokens WHERE secret_hash = ?1",
				      hash),
			 1);
	assert_int_equal(
		raw_count_in(f->path,
			     "SELECT count(*) FROM api_tokens WHERE instr(id || name || role "
			     "|| coalesce(clusters, '') || secret_hash || created_by, ?1) > 0",
			     secret),
		0);
	assert_int_equal(
		raw_count_in(f->path,
			     "SELECT count(*) FROM audit_log WHERE instr(coalesce(detail, '') "
			     "|| coalesce(target, ''), ?1) > 0",
			     secret),
		0);
	snprintf(wal, sizeof(wal), "%s-wal", f->path);
	assert_false(file_contains(f->path, secret));
	assert_false(file_contains(wal, secret));
	hash_seen = file_contains(f->path, hash) || file_contains(wal, hash);
	assert_true(hash_seen); /* the search looks at the right bytes */
	store_free(f->s);
	f->s = NULL;
	assert_false(file_contains(f->path, secret));
	assert_true(file_contains(f->path, hash));
	free(tok);
	free(id);
}

/* Each refusal with its own code: malformed, unknown id, wrong secret, revoked, expired. */
static void test_api_token_refused(void **state)
{
	struct fx *f = *state;
	static const char *const malformed[] = {
		"",
		"rya1.",
		"ry1.0123456789abcdef."
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"rya2.0123456789abcdef."
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"rya1."
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"rya1.0123456789ABCDEF."
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"rya1.0123456789abcdef."
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde",
		"rya1.0123456789abcdef."
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0",
		"rya1.0123456789abcdeg."
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"rya1.0123456789abcdef."
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeF",
		"Bearer "
		"rya1.0123456789abcdef.0123456789abcdef0123456789abcdef0123456789abcdef01234567",
		"rya1.0123456789abcde."
		"f0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	};
	struct store_api_token *t = NULL;
	char *tok, *other, *bad, *etok, *id = NULL;

	fx_open(f);
	tok = make_api_token(f->s, "op", "operator", "[\"c1\"]", HOUR_MS, T0, &id);
	other = make_api_token(f->s, "op2", "operator", NULL, 0, T0, NULL);
	etok = make_token(f->s, "c1", 1, T0); /* an enrollment token is no API token */
	for (size_t i = 0; i < RY_ARRAY_SIZE(malformed); i++)
		if (store_api_token_check(f->s, malformed[i], T0, &t) != -RY_E_INVALID)
			fail_msg("malformed token %zu accepted or misread", i);
	assert_int_equal(store_api_token_check(f->s, etok, T0, &t), -RY_E_INVALID);
	bad = strdup(tok);
	assert_non_null(bad);
	bad[strlen(bad) - 1] = bad[strlen(bad) - 1] == '0' ? '1' : '0';
	assert_int_equal(store_api_token_check(f->s, bad, T0, &t), -RY_E_TOKEN_SECRET);
	/* Another token's secret with this id: wrong secret too. */
	memcpy(bad + 22, other + 22, 64);
	assert_int_equal(store_api_token_check(f->s, bad, T0, &t), -RY_E_TOKEN_SECRET);
	strcpy(bad, tok);
	bad[5] = bad[5] == '0' ? '1' : '0';
	assert_int_equal(store_api_token_check(f->s, bad, T0, &t), -RY_E_TOKEN_UNKNOWN);
	assert_int_equal(store_api_token_check(NULL, tok, T0, &t), -EINVAL);
	assert_int_equal(store_api_token_check(f->s, NULL, T0, &t), -EINVAL);
	assert_int_equal(store_api_token_check(f->s, tok, T0, NULL), -EINVAL);

	/* Expiry: valid until the last millisecond before it. */
	assert_int_equal(store_api_token_check(f->s, tok, T0 + HOUR_MS - 1, &t), 0);
	store_api_token_free(t);
	t = NULL;
	assert_int_equal(store_api_token_check(f->s, tok, T0 + HOUR_MS, &t), -RY_E_TOKEN_EXPIRED);
	assert_int_equal(store_api_token_check(f->s, tok, T0 + 100 * HOUR_MS, &t),
			 -RY_E_TOKEN_EXPIRED);

	/* Revoked: refused at any time, before expiry too; a wrong secret still says only that. */
	assert_int_equal(store_api_token_revoke(f->s, id, "admin", T0 + 5, NULL), 1);
	assert_int_equal(store_api_token_check(f->s, tok, T0 + 1, &t), -RY_E_REVOKED);
	assert_int_equal(store_api_token_check(f->s, tok, T0 + 100 * HOUR_MS, &t), -RY_E_REVOKED);
	strcpy(bad, tok);
	bad[strlen(bad) - 1] = bad[strlen(bad) - 1] == '0' ? '1' : '0';
	assert_int_equal(store_api_token_check(f->s, bad, T0 + 1, &t), -RY_E_TOKEN_SECRET);
	assert_null(t);
	/* The other token is untouched. */
	assert_int_equal(store_api_token_check(f->s, other, T0 + 1, &t), 0);
	store_api_token_free(t);
	free(bad);
	free(tok);
	free(other);
	free(etok);
	free(id);
}

/* Bad input is refused before anything is stored; a live name is unique. */
static void test_api_token_bad_args(void **state)
{
	struct fx *f = *state;
	static const char *const bad_names[] = {
		"",
		"a b",
		"a/b",
		"caf\xc3\xa9",
		"a\nb",
		"0123456789abcdef",
		"0123456789ABCDEF",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", /* 65 */
	};
	static const char *const bad_roles[] = {"", "root", "Admin", "viewer "};
	static const char *const bad_clusters[] = {
		"",
		"[]",
		"{}",
		"[1]",
		"[\"\"]",
		"[\"-a\"]",
		"[\".a\"]",
		"[\"a\",\"a\"]",
		"[\"a b\"]",
		"\"a\"",
		"[\"a\\u0000b\"]",
		"[\"a\"",
		"null",
		"[null]",
		"[[\"a\"]]",
		"[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]",
	};
	char *tok = NULL, *id = NULL, big[64 * 8 + 16], *p;

	fx_open(f);
	for (size_t i = 0; i < RY_ARRAY_SIZE(bad_names); i++)
		if (store_api_token_create(f->s, bad_names[i], "viewer", NULL, 0, "admin", T0, &tok,
					   &id) != -RY_E_INVALID)
			fail_msg("bad name %zu not refused", i);
	assert_int_equal(
		store_api_token_create(f->s, NULL, "viewer", NULL, 0, "admin", T0, &tok, &id),
		-RY_E_INVALID);
	for (size_t i = 0; i < RY_ARRAY_SIZE(bad_roles); i++)
		assert_int_equal(store_api_token_create(f->s, "n", bad_roles[i], NULL, 0, "admin",
							T0, &tok, &id),
				 -RY_E_INVALID);
	assert_int_equal(store_api_token_create(f->s, "n", NULL, NULL, 0, "admin", T0, &tok, &id),
			 -RY_E_INVALID);
	for (size_t i = 0; i < RY_ARRAY_SIZE(bad_clusters); i++)
		if (store_api_token_create(f->s, "n", "viewer", bad_clusters[i], 0, "admin", T0,
					   &tok, &id) != -RY_E_INVALID)
			fail_msg("bad clusters %zu not refused", i);
	/* 65 clusters: one too many. */
	p = big;
	p += sprintf(p, "[");
	for (int i = 0; i < 65; i++)
		p += sprintf(p, "%s\"c%d\"", i ? "," : "", i);
	sprintf(p, "]");
	assert_int_equal(
		store_api_token_create(f->s, "n", "viewer", big, 0, "admin", T0, &tok, &id),
		-RY_E_INVALID);
	assert_int_equal(
		store_api_token_create(f->s, "n", "viewer", NULL, -1, "admin", T0, &tok, &id),
		-EINVAL);
	assert_int_equal(store_api_token_create(f->s, "n", "viewer", NULL, INT64_MAX, "admin", T0,
						&tok, &id),
			 -EINVAL);
	assert_int_equal(store_api_token_create(f->s, "n", "viewer", NULL, 0, "", T0, &tok, &id),
			 -RY_E_INVALID);
	assert_int_equal(
		store_api_token_create(f->s, "n", "viewer", NULL, 0, "admin", T0, NULL, &id),
		-EINVAL);
	assert_null(tok);
	assert_null(id);
	assert_int_equal(raw_count_in(f->path, "SELECT count(*) FROM api_tokens", NULL), 0);
	assert_int_equal(audit_count(f->s), 0);

	/* The limits themselves are fine: 64 clusters, a 64-byte name, 15 or 17 hex digits. */
	p = big;
	p += sprintf(p, "[");
	for (int i = 0; i < 64; i++)
		p += sprintf(p, "%s\"c%d\"", i ? "," : "", i);
	sprintf(p, "]");
	free(make_api_token(f->s,
			    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
			    "viewer", big, 0, T0, NULL));
	free(make_api_token(f->s, "0123456789abcde", "viewer", NULL, 0, T0, NULL));
	free(make_api_token(f->s, "0123456789abcdef0", "viewer", NULL, 0, T0, NULL));
	free(make_api_token(f->s, "A.b_c-9", "viewer", "[\"c1\",\"C1\",\"a.b_c-d\"]", 0, T0, NULL));

	/* A name is taken while its token is not revoked. */
	tok = make_api_token(f->s, "dup", "viewer", NULL, 0, T0, &id);
	free(tok);
	tok = NULL;
	assert_int_equal(
		store_api_token_create(f->s, "dup", "admin", NULL, 0, "admin", T0, &tok, NULL),
		-RY_E_EXISTS);
	assert_null(tok);
	assert_int_equal(audit_count(f->s), 5);
	assert_int_equal(store_api_token_revoke(f->s, "dup", "admin", T0 + 1, NULL), 1);
	free(make_api_token(f->s, "dup", "admin", NULL, 0, T0 + 2, NULL));
	free(id);
}

/* Listing, lookup and revocation by id or name, the last-used stamp. */
static void test_api_tokens_list_revoke(void **state)
{
	struct fx *f = *state;
	struct store_api_token **v = NULL, *t = NULL;
	struct store_audit_entry *e = NULL;
	char *ta, *tb, *ta2, *id_a = NULL, *id_b = NULL, *id_a2 = NULL, *got = NULL;
	size_t n = 0;

	fx_open(f);
	assert_int_equal(store_api_tokens_list(f->s, &v, &n), 0);
	assert_int_equal(n, 0);
	assert_null(v);
	ta = make_api_token(f->s, "alpha", "viewer", "[\"c1\"]", HOUR_MS, T0, &id_a);
	tb = make_api_token(f->s, "beta", "admin", NULL, 0, T0 + 1, &id_b);

	assert_int_equal(store_api_tokens_list(f->s, &v, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0]->name, "alpha");
	assert_string_equal(v[0]->id, id_a);
	assert_string_equal(v[0]->clusters_json, "[\"c1\"]");
	assert_true(v[0]->expires_at_ms == T0 + HOUR_MS);
	assert_string_equal(v[1]->name, "beta");
	assert_null(v[1]->clusters_json);
	store_api_tokens_free(v, n);

	/* Last used: stamped, then at most once a minute; never on a revoked or unknown one. */
	assert_int_equal(store_api_token_touch(f->s, id_a, T0 + 10), 1);
	assert_int_equal(store_api_token_touch(f->s, id_a, T0 + 20), 0);
	assert_int_equal(store_api_token_touch(f->s, id_a, T0 + 10 + STORE_API_TOUCH_MS - 1), 0);
	assert_int_equal(store_api_token_touch(f->s, id_a, T0 + 10 + STORE_API_TOUCH_MS), 1);
	assert_int_equal(store_api_token_touch(f->s, "0000000000000000", T0 + 10), 0);
	assert_int_equal(store_api_token_touch(f->s, NULL, T0), -EINVAL);
	assert_int_equal(store_api_token_check(f->s, ta, T0 + 100000, &t), 0);
	assert_true(t->last_used_at_ms == T0 + 10 + STORE_API_TOUCH_MS);
	store_api_token_free(t);
	t = NULL;

	/* Get and revoke by name and by id. */
	assert_int_equal(store_api_token_get(f->s, "alpha", &t), 0);
	assert_string_equal(t->id, id_a);
	store_api_token_free(t);
	assert_int_equal(store_api_token_get(f->s, id_b, &t), 0);
	assert_string_equal(t->name, "beta");
	store_api_token_free(t);
	assert_int_equal(store_api_token_get(f->s, "gamma", &t), -RY_E_NOT_FOUND);
	assert_int_equal(store_api_token_revoke(f->s, "alpha", "bob", T0 + 100, &got), 1);
	assert_string_equal(got, id_a);
	free(got);
	got = NULL;
	assert_int_equal(store_api_token_revoke(f->s, "alpha", "bob", T0 + 200, &got), 0);
	assert_string_equal(got, id_a);
	free(got);
	assert_int_equal(store_api_token_touch(f->s, id_a, T0 + 10 * STORE_API_TOUCH_MS), 0);
	assert_int_equal(store_api_token_revoke(f->s, id_b, "bob", T0 + 300, NULL), 1);
	assert_int_equal(store_api_token_revoke(f->s, "gamma", "bob", T0 + 300, NULL),
			 -RY_E_NOT_FOUND);
	assert_int_equal(store_api_token_revoke(f->s, "alpha", "", T0 + 300, NULL), -RY_E_INVALID);
	assert_int_equal(store_api_token_revoke(f->s, NULL, "bob", T0 + 300, NULL), -EINVAL);

	assert_int_equal(store_audit_list(f->s, 10, &e, &n), 0);
	assert_int_equal(n, 4); /* 2 created, 2 revoked (the repeat wrote nothing) */
	assert_string_equal(e[0].action, "api_token.revoke");
	assert_string_equal(e[0].target, id_b);
	assert_string_equal(e[0].actor, "bob");
	assert_non_null(strstr(e[0].detail, "name=beta"));
	assert_string_equal(e[1].action, "api_token.revoke");
	assert_string_equal(e[1].target, id_a);
	assert_true(e[1].at_ms == T0 + 100);
	store_audit_entries_free(e, n);

	/* A successor of the same name: the name finds it while it lives, then the newest. */
	ta2 = make_api_token(f->s, "alpha", "operator", NULL, 0, T0 + 400, &id_a2);
	assert_int_equal(store_api_token_get(f->s, "alpha", &t), 0);
	assert_string_equal(t->id, id_a2);
	assert_true(t->revoked_at_ms == 0);
	store_api_token_free(t);
	assert_int_equal(store_api_token_revoke(f->s, "alpha", "bob", T0 + 500, NULL), 1);
	assert_int_equal(store_api_token_get(f->s, "alpha", &t), 0);
	assert_string_equal(t->id, id_a2);
	assert_true(t->revoked_at_ms == T0 + 500);
	store_api_token_free(t);

	assert_int_equal(store_api_tokens_list(f->s, &v, &n), 0);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++)
		assert_true(v[i]->revoked_at_ms != 0);
	assert_true(v[0]->revoked_at_ms == T0 + 100);
	store_api_tokens_free(v, n);
	free(ta);
	free(tb);
	free(ta2);
	free(id_a);
	free(id_b);
	free(id_a2);
}

/* v9 -> v10 rebuilds deployments: rows, their nodes and step results survive with every
 * reference whole, the creator is carried over from the audit log, and the new states work. */
static void test_migrate_deploy_v9(void **state)
{
	struct fx *f = *state;
	struct store_step_result s0 = {
		.name = "s0", .status = "ok", .diff = "", .message = "", .idx = 0};
	struct store_step_result *res = NULL;
	struct store_deployment *got = NULL;
	struct store_deploy_node *nodes = NULL;
	size_t n = 0;
	char why[256];

	assert_int_equal(store_open_at_version(f->path, 9, &f->s), 0);
	assert_int_equal(store_cluster_ensure(f->s, "c1", T0), 0);
	old_deployment(f, "api:ci (0011223344556677)");
	raw_sql(f->path,
		"UPDATE deployment_nodes SET state = 'sent', sent_at = 1, plan_steps = 1 "
		"WHERE node_id = 'n-a';"
		"INSERT INTO step_results (deployment_id, node_id, idx, name, status, diff, "
		"message, duration_ms) VALUES ('d-1', 'n-a', 0, 's0', 'ok', '', '', 0);");
	fx_open(f);
	assert_int_equal(store_deployment_get(f->s, "d-1", &got), 0);
	assert_string_equal(got->actor, "api:ci (0011223344556677)");
	assert_string_equal(got->state, "pending");
	assert_int_equal(got->cancel_requested_ms, 0);
	store_deployment_free(got);
	assert_int_equal(store_deploy_nodes(f->s, "d-1", &nodes, &n), 0);
	assert_int_equal(n, 2);
	store_deploy_nodes_free(nodes, n);
	assert_int_equal(store_step_results(f->s, "d-1", &res, &n), 0);
	assert_int_equal(n, 1);
	store_step_results_free(res, n);
	/* Cancel: requested once (audited), then ended; an ended one answers 0. */
	assert_int_equal(store_deployment_request_cancel(f->s, "d-1", "admin", T0 + 5), 1);
	assert_int_equal(store_deployment_request_cancel(f->s, "d-1", "admin", T0 + 6), 1);
	assert_int_equal(store_deployment_get(f->s, "d-1", &got), 0);
	assert_int_equal(got->cancel_requested_ms, T0 + 5);
	store_deployment_free(got);
	assert_int_equal(store_deployment_update(f->s, "d-1", "cancelled", "cancelled on request",
						 0, T0 + 7),
			 0);
	assert_int_equal(store_deployment_request_cancel(f->s, "d-1", "admin", T0 + 8), 0);
	assert_int_equal(store_deployment_request_cancel(f->s, "d-9", "admin", T0 + 8),
			 -RY_E_NOT_FOUND);
	/* A step from a node still refers to a deployment that exists. */
	assert_int_equal(store_report_step(f->s, "d-1", "n-a", &s0, why, sizeof(why)),
			 STORE_REPORT_DUPLICATE);
}

/* A revalidation's life: refused without a baseline of its cluster (nothing stored), created
 * pending, moved with its parts, final once, cancel requested only while not ended. */
static void test_revalidations(void **state)
{
	struct fx *f = *state;
	static const char report[] = "{}";
	struct store_signoff_new so = {
		.id = "so-1",
		.cluster = "c1",
		.campaign_id = "c-1",
		.kind = "signoff",
		.verdict = "pass",
		.sha256 = "sha256:00",
		.report = report,
		.report_len = sizeof(report) - 1,
		.signature = "sig",
		.nodes_json = "[]",
		.actor = "admin",
	};
	struct store_revalidation_new rn = {.id = "rv-1",
					    .cluster = "c1",
					    .baseline_id = "so-1",
					    .actor = "local:uid 0",
					    .tolerance_bw_pct = 10,
					    .tolerance_lat_pct = 20};
	struct store_revalidation u = {.state = "configuring", .reason = "deploying"};
	struct store_revalidation signed_ = {
		.state = "signed", .signoff_id = "so-1", .verdict = "pass"};
	struct store_revalidation *v = NULL, **list = NULL;
	size_t n = 0;

	fx_open(f);
	assert_int_equal(store_cluster_ensure(f->s, "c1", T0), 0);
	assert_int_equal(store_cluster_ensure(f->s, "c2", T0), 0);
	assert_int_equal(store_revalidation_create(f->s, &rn, T0), -RY_E_NOT_FOUND);
	assert_int_equal(store_campaign_create(f->s, &campaign_c1, T0), 0);
	assert_int_equal(store_signoff_create(f->s, &so, T0), 0);
	rn.cluster = "c2"; /* a baseline of another cluster */
	assert_int_equal(store_revalidation_create(f->s, &rn, T0), -RY_E_NOT_FOUND);
	rn.cluster = "c1";
	rn.tolerance_bw_pct = -1;
	assert_int_equal(store_revalidation_create(f->s, &rn, T0), -EINVAL);
	rn.tolerance_bw_pct = 10;
	assert_int_equal(store_revalidations_list(f->s, false, 0, &list, &n), 0);
	assert_int_equal(n, 0);
	store_revalidations_free(list, n);
	assert_int_equal(store_revalidation_create(f->s, &rn, T0 + 1), 0);
	assert_int_equal(store_revalidation_get(f->s, "rv-1", &v), 0);
	assert_string_equal(v->state, "pending");
	assert_null(v->playbook);
	assert_null(v->deployment_id);
	assert_true(v->tolerance_lat_pct == 20);
	store_revalidation_free(v);
	assert_int_equal(store_revalidation_update(f->s, "rv-1", &u, T0 + 2), 1);
	assert_int_equal(store_revalidation_request_cancel(f->s, "rv-1", "admin", T0 + 3), 1);
	assert_int_equal(store_revalidations_list(f->s, true, 0, &list, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(list[0]->reason, "deploying");
	assert_int_equal(list[0]->cancel_requested_ms, T0 + 3);
	store_revalidations_free(list, n);
	/* Every field lands where it belongs. */
	assert_int_equal(
		store_revalidation_create(
			f->s,
			&(struct store_revalidation_new){
				.id = "rv-2", .cluster = "c1", .baseline_id = "so-1", .actor = "a"},
			T0 + 3),
		0);
	assert_int_equal(store_revalidation_update(f->s, "rv-2", &signed_, T0 + 4), 1);
	assert_int_equal(store_revalidation_get(f->s, "rv-2", &v), 0);
	assert_string_equal(v->signoff_id, "so-1");
	assert_string_equal(v->verdict, "pass");
	assert_int_equal(v->finished_at_ms, T0 + 4);
	store_revalidation_free(v);
	u = (struct store_revalidation){.state = "cancelled", .reason = "cancelled on request"};
	assert_int_equal(store_revalidation_update(f->s, "rv-1", &u, T0 + 4), 1);
	u.state = "signed";
	assert_int_equal(store_revalidation_update(f->s, "rv-1", &u, T0 + 5), 0); /* final */
	assert_int_equal(store_revalidation_request_cancel(f->s, "rv-1", "admin", T0 + 6), 0);
	assert_int_equal(store_revalidation_request_cancel(f->s, "rv-9", "admin", T0 + 6),
			 -RY_E_NOT_FOUND);
	assert_int_equal(store_revalidation_get(f->s, "rv-1", &v), 0);
	assert_string_equal(v->state, "cancelled");
	assert_string_equal(v->reason, "cancelled on request");
	assert_int_equal(v->finished_at_ms, T0 + 4);
	store_revalidation_free(v);
	u.state = "bogus";
	assert_int_equal(store_revalidation_update(f->s, "rv-1", &u, T0 + 7), -EINVAL);
}

/* From v8: sign-offs (and what they hang on) are kept, api_tokens is added. */
static void test_migrate_apitoken_v8(void **state)
{
	struct fx *f = *state;
	struct store_signoff *so = NULL;
	struct store_api_token *t = NULL;
	char *tok;

	assert_int_equal(store_open_at_version(f->path, 8, &f->s), 0);
	assert_int_equal(store_cluster_ensure(f->s, "c1", T0), 0);
	assert_int_equal(store_campaign_create(f->s, &campaign_c1, T0), 0);
	store_free(f->s);
	f->s = NULL;
	/* A sign-off row as v8 stored it (today's store_signoff_create() writes v14's columns). */
	raw_sql(f->path,
		"INSERT INTO signoffs (id, cluster_id, campaign_id, kind, verdict, sha256, "
		"report, signature, nodes, actor, created_at) SELECT 'so-1', id, 'c-1', "
		"'signoff', 'pass', 'sha256:00', '{}', '-----BEGIN CMS-----', '[]', "
		"'admin', 1 FROM clusters WHERE name = 'c1'");
	assert_false(has_table(f->path, "api_tokens"));
	fx_open(f);
	assert_int_equal(store_schema_version(f->s), STORE_SCHEMA_VERSION);
	assert_true(has_table(f->path, "api_tokens"));
	assert_true(has_table(f->path, "api_tokens_live_name"));
	assert_int_equal(store_signoff_get(f->s, "so-1", true, &so), 0);
	assert_string_equal(so->report, "{}");
	assert_string_equal(so->verdict, "pass");
	/* v14: a report signed before acceptance rules is not an acceptance sign-off. */
	assert_false(so->acceptance);
	assert_int_equal(so->excluded, 0);
	store_signoff_free(so);
	tok = make_api_token(f->s, "first-admin", "admin", NULL, 0, T0 + 2, NULL);
	assert_int_equal(store_api_token_check(f->s, tok, T0 + 3, &t), 0);
	store_api_token_free(t);
	free(tok);
}

/* ---- derived members of a node's facts (v11) ------------------------------------------------ */

static int derive_calls;

/* A deriver for the tests: the summary names the facts' "name", the snapshot is {"n": name};
 * facts without a "name" fail. */
static int test_derive(const struct json_t *facts, char **ret_summary, char **ret_snapshot)
{
	const char *name = json_string_value(json_object_get((const json_t *)facts, "name"));

	derive_calls++;
	if (!name)
		return -RY_E_INVALID;
	if (asprintf(ret_summary, "summary of %s", name) < 0)
		return -ENOMEM;
	if (asprintf(ret_snapshot, "{\"n\":\"%s\"}", name) < 0) {
		free(*ret_summary);
		return -ENOMEM;
	}
	return 0;
}

static const struct store_facts_deriver deriver_v1 = {1, test_derive};
static const struct store_facts_deriver deriver_v2 = {2, test_derive};

static struct store_node *brief_one(struct store *s)
{
	struct store_node **v = NULL, *n;
	size_t cnt = 0;

	assert_int_equal(store_nodes_brief(s, &v, &cnt), 0);
	assert_int_equal(cnt, 1);
	n = v[0];
	free(v);
	return n;
}

/* Facts written with a deriver: the brief listing has the summary and snapshot and no facts;
 * the full one and a get have both. Another deriver version (or none) sees them as not derived
 * and gets the facts; rederive brings every row to its version, once. A failed derivation
 * stores no summary and is not retried. Nothing but the node's own rows carries them. */
static void test_facts_derived(void **state)
{
	struct fx *f = *state;
	struct store_node *n, **v = NULL;
	size_t cnt = 0;
	char *tok;

	fx_open(f);
	tok = make_token(f->s, "c1", 3, T0);
	assert_int_equal(enroll(f->s, tok, "n1", "h1", "s1", T0, NULL), 0);
	store_set_facts_deriver(f->s, &deriver_v1);
	assert_int_equal(store_node_online(f->s, "n1", "1.0", "{\"name\":\"alpha\"}", T0 + 1), 0);
	n = brief_one(f->s);
	assert_true(n->derived);
	assert_int_equal(n->derived_version, 1);
	assert_null(n->facts_json);
	assert_string_equal(n->summary, "summary of alpha");
	assert_string_equal(n->snapshot_json, "{\"n\":\"alpha\"}");
	store_node_free(n);
	n = get_node(f->s, "n1");
	assert_true(n->derived);
	assert_string_equal(n->facts_json, "{\"name\":\"alpha\"}");
	store_node_free(n);
	/* A Hello without facts keeps them and what was derived from them. */
	assert_int_equal(store_node_online(f->s, "n1", "1.1", NULL, T0 + 2), 0);
	n = brief_one(f->s);
	assert_string_equal(n->summary, "summary of alpha");
	store_node_free(n);
	assert_int_equal(store_node_set_facts(f->s, "n1", "{\"name\":\"beta\"}", T0 + 3), 0);
	n = brief_one(f->s);
	assert_string_equal(n->summary, "summary of beta");
	store_node_free(n);

	/* Another version: not derived, the facts come with the brief listing. */
	store_set_facts_deriver(f->s, &deriver_v2);
	n = brief_one(f->s);
	assert_false(n->derived);
	assert_string_equal(n->facts_json, "{\"name\":\"beta\"}");
	store_node_free(n);
	derive_calls = 0;
	assert_int_equal(store_nodes_rederive(f->s, &cnt), 0);
	assert_int_equal(cnt, 1);
	assert_int_equal(derive_calls, 1);
	assert_int_equal(store_nodes_rederive(f->s, &cnt), 0);
	assert_int_equal(cnt, 0);
	n = brief_one(f->s);
	assert_true(n->derived);
	assert_int_equal(n->derived_version, 2);
	assert_null(n->facts_json);
	store_node_free(n);

	/* A derivation that fails: stored without a summary, facts kept, not derived again. */
	assert_int_equal(store_node_set_facts(f->s, "n1", "{\"other\":1}", T0 + 4), 0);
	n = brief_one(f->s);
	assert_true(n->derived);
	assert_null(n->summary);
	store_node_free(n);
	assert_int_equal(store_nodes_rederive(f->s, &cnt), 0);
	assert_int_equal(cnt, 0);
	n = get_node(f->s, "n1");
	assert_string_equal(n->facts_json, "{\"other\":1}");
	store_node_free(n);

	/* Without a deriver nothing counts as derived; rederive does nothing. */
	store_set_facts_deriver(f->s, NULL);
	assert_int_equal(store_nodes_rederive(f->s, &cnt), 0);
	assert_int_equal(cnt, 0);
	assert_int_equal(store_nodes_brief(f->s, &v, &cnt), 0);
	assert_int_equal(cnt, 1);
	assert_false(v[0]->derived);
	assert_non_null(v[0]->facts_json);
	store_nodes_free(v, cnt);

	/* Facts of a revoked node are refused as before, and its facts row goes with the node. */
	assert_int_equal(store_node_revoke(f->s, "n1", "admin", T0 + 5, NULL), 0);
	assert_int_equal(store_node_set_facts(f->s, "n1", "{\"name\":\"x\"}", T0 + 6),
			 -RY_E_REVOKED);
	n = get_node(f->s, "n1");
	assert_string_equal(n->facts_json, "{\"other\":1}");
	store_node_free(n);
	free(tok);
}

/* v10 -> v11: facts move out of the nodes row with nothing lost; serve's rederive then fills
 * in the summaries (a node without facts stays without). */
static void test_migrate_facts_v10(void **state)
{
	struct fx *f = *state;
	struct store_node **v = NULL;
	size_t n = 0;
	char *tok;

	assert_int_equal(store_open_at_version(f->path, 10, &f->s), 0);
	tok = make_token(f->s, "c1", 3, T0);
	assert_int_equal(enroll(f->s, tok, "n1", "h1", "s1", T0, NULL), 0);
	assert_int_equal(enroll(f->s, tok, "n2", "h2", "s2", T0, NULL), 0);
	store_free(f->s);
	f->s = NULL;
	raw_sql(f->path, "UPDATE nodes SET facts = '{\"name\":\"old\"}', state = 'offline' "
			 "WHERE id = 'n1'");
	fx_open(f);
	store_set_facts_deriver(f->s, &deriver_v1);
	assert_int_equal(store_nodes_brief(f->s, &v, &n), 0);
	assert_int_equal(n, 2);
	assert_false(v[0]->derived);
	assert_string_equal(v[0]->facts_json, "{\"name\":\"old\"}");
	assert_null(v[1]->facts_json);
	store_nodes_free(v, n);
	assert_int_equal(store_nodes_rederive(f->s, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(store_nodes_brief(f->s, &v, &n), 0);
	assert_true(v[0]->derived);
	assert_string_equal(v[0]->summary, "summary of old");
	assert_null(v[0]->facts_json);
	assert_false(v[1]->derived);
	store_nodes_free(v, n);
	free(tok);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_migration_table),
		T(test_open_empty),
		T(test_migrate_from_v0),
		T(test_migrate_from_v1),
		T(test_migrate_from_v2),
		T(test_migrate_from_v3),
		T(test_newer_schema_refused),
		T(test_deployments),
		T(test_reports),
		T(test_deploy_counts),
		T(test_batch),
		T(test_report_budget),
		T(test_migrate_deploy_v5),
		T(test_bench_runs),
		T(test_bench_cancel),
		T(test_migrate_bench_v4),
		T(test_campaigns),
		T(test_migrate_campaign_v6),
		T(test_signoffs),
		T(test_migrate_signoff_v7),
		T(test_api_token_roundtrip),
		T(test_api_token_hashed),
		T(test_api_token_refused),
		T(test_api_token_bad_args),
		T(test_api_tokens_list_revoke),
		T(test_migrate_apitoken_v8),
		T(test_migrate_deploy_v9),
		T(test_revalidations),
		T(test_garbage_refused),
		T(test_quick_check_refused),
		T(test_open_bad_args),
		T(test_token_single_use),
		T(test_token_expired),
		T(test_token_unknown),
		T(test_token_multi_use),
		T(test_token_list_revoke),
		T(test_playbook_uploads),
		T(test_token_bound_to_cluster),
		T(test_token_bad_args),
		T(test_token_not_stored_plaintext),
		T(test_duplicate_hostname),
		T(test_enroll_bad_args),
		T(test_node_transitions),
		T(test_nodes_list_order),
		T(test_facts_invalid),
		T(test_facts_derived),
		T(test_migrate_facts_v10),
		T(test_revoke),
		T(test_audit),
		T(test_concurrent),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
