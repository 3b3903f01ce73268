/* The controller's services called directly over a temporary store, as a front end would: the
 * tokens-and-audit service (API tokens, enrollment tokens, the audit log), the health reads and
 * the backup and restore entry points, the nodes and playbooks services, and collective bench
 * runs (params, refusals, the job token kept out of the documents). Each test opens a fresh state
 * directory holding only controller.db. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/util/error.h"
#include "common/util/fs.h"
#include "controller/bench/bench.h"
#include "controller/health.h"
#include "controller/nodes.h"
#include "controller/playbooks.h"
#include "controller/service.h"
#include "controller/state.h"
#include "controller/store/store.h"
#include "controller/store/store_apitoken.h"
#include "controller/store/store_bench.h"
#include "controller/store/store_nodes.h"
#include "controller/tokens.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NOW	   1700000000000LL
#define ACTOR	   "test:services"
#define JSTR(o, k) json_string_value(json_object_get((o), (k)))
#define JINT(o, k) json_integer_value(json_object_get((o), (k)))

struct fx {
	char dir[512], db[600];
	struct store *st;
	struct ctl_error err;
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/ry-services-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->db, sizeof(f->db), "%s/controller.db", f->dir);
	if (store_open(f->db, &f->st) < 0) {
		rmdir(f->dir);
		free(f);
		return -1;
	}
	ctl_error_init(&f->err);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	struct dirent *de;
	DIR *d;

	ctl_error_done(&f->err);
	store_free(f->st);
	d = opendir(f->dir);
	while (d && (de = readdir(d))) {
		char p[1100];

		if (de->d_name[0] == '.')
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

/* The error a call left: its code and field, then reset for the next call. */
static void expect_error(struct fx *f, int r, const char *code, const char *field)
{
	assert_true(r < 0);
	assert_non_null(f->err.code);
	assert_string_equal(f->err.code, code);
	if (field)
		assert_string_equal(f->err.field, field);
	assert_true(f->err.message[0] != '\0');
	ctl_error_done(&f->err);
	ctl_error_init(&f->err);
}

static json_t *api_token(struct fx *f, const char *name, const char *role, const json_t *cl,
			 int64_t ttl_ms)
{
	struct ctl_api_token_request rq = {.name = name,
					   .role = role,
					   .clusters = cl,
					   .ttl_ms = ttl_ms,
					   .actor = ACTOR,
					   .now_ms = NOW};
	json_t *doc = NULL;

	assert_int_equal(ctl_api_token_create(f->st, &rq, &doc, &f->err), 0);
	assert_null(f->err.code);
	return doc;
}

/* ---- API tokens ---------------------------------------------------------------------------- */

static void test_api_token_create_list_authenticate(void **state)
{
	struct fx *f = *state;
	json_t *cl = json_pack("[s]", "c1");
	json_t *made = api_token(f, "ci", "operator", cl, 0), *list = NULL, *t;
	const char *token = JSTR(made, "token");
	struct ctl_api_identity who;
	char *text;

	assert_non_null(token);
	assert_int_equal(strncmp(token, STORE_API_TOKEN_PREFIX, strlen(STORE_API_TOKEN_PREFIX)), 0);
	assert_string_equal(JSTR(made, "name"), "ci");
	assert_string_equal(JSTR(made, "role"), "operator");

	/* The listing shows the token, never its secret. */
	assert_int_equal(ctl_api_tokens_list(f->st, &list, &f->err), 0);
	assert_int_equal(json_array_size(list), 1);
	t = json_array_get(list, 0);
	assert_string_equal(JSTR(t, "id"), JSTR(made, "id"));
	assert_string_equal(JSTR(t, "created_by"), ACTOR);
	assert_null(json_object_get(t, "token"));
	assert_true(json_equal(json_object_get(t, "clusters"), cl));
	assert_int_equal(JINT(t, "last_used_at_ms"), 0);
	text = json_dumps(list, JSON_COMPACT);
	assert_non_null(text);
	assert_null(strstr(text, strrchr(token, '.') + 1)); /* the secret part */
	free(text);
	json_decref(list);

	/* Authenticate: who it is, its scope, and the use recorded. */
	assert_int_equal(ctl_api_token_authenticate(f->st, token, NOW + 5, &who, &f->err), 0);
	assert_string_equal(who.id, JSTR(made, "id"));
	assert_string_equal(who.name, "ci");
	assert_string_equal(who.role, "operator");
	assert_non_null(who.clusters_json);
	assert_non_null(strstr(who.clusters_json, "\"c1\""));
	ctl_api_identity_done(&who);
	assert_null(who.clusters_json);
	assert_int_equal(ctl_api_tokens_list(f->st, &list, &f->err), 0);
	assert_int_equal(JINT(json_array_get(list, 0), "last_used_at_ms"), NOW + 5);
	json_decref(list);

	/* A second token of the same name conflicts. */
	{
		struct ctl_api_token_request rq = {
			.name = "ci", .role = "viewer", .actor = ACTOR, .now_ms = NOW};
		json_t *doc = NULL;

		expect_error(f, ctl_api_token_create(f->st, &rq, &doc, &f->err), CTL_ERR_CONFLICT,
			     "name");
		assert_null(doc);
	}
	json_decref(cl);
	json_decref(made);
}

static void test_api_token_bad_input(void **state)
{
	struct fx *f = *state;
	json_t *num = json_integer(3), *doc = NULL, *list = NULL;
	struct ctl_api_token_request rq = {
		.name = "ok", .role = "admin", .actor = ACTOR, .now_ms = NOW};

	rq.role = "root";
	expect_error(f, ctl_api_token_create(f->st, &rq, &doc, &f->err), CTL_ERR_INVALID, "role");
	rq.role = NULL;
	expect_error(f, ctl_api_token_create(f->st, &rq, &doc, &f->err), CTL_ERR_INVALID, "role");
	rq.role = "admin";
	rq.name = "has space";
	expect_error(f, ctl_api_token_create(f->st, &rq, &doc, &f->err), CTL_ERR_INVALID, "name");
	rq.name = "0123456789abcdef"; /* an id's form */
	expect_error(f, ctl_api_token_create(f->st, &rq, &doc, &f->err), CTL_ERR_INVALID, "name");
	rq.name = "ok";
	rq.clusters = num;
	expect_error(f, ctl_api_token_create(f->st, &rq, &doc, &f->err), CTL_ERR_INVALID,
		     "clusters");
	rq.clusters = NULL;
	rq.ttl_ms = -1;
	expect_error(f, ctl_api_token_create(f->st, &rq, &doc, &f->err), CTL_ERR_INVALID, "ttl_ms");
	assert_null(doc);
	/* Nothing was stored. */
	assert_int_equal(ctl_api_tokens_list(f->st, &list, &f->err), 0);
	assert_int_equal(json_array_size(list), 0);
	json_decref(list);
	json_decref(num);
}

static void test_api_token_expired_revoked_unknown(void **state)
{
	struct fx *f = *state;
	json_t *shortlived = api_token(f, "short", "viewer", NULL, 1000);
	json_t *gone = api_token(f, "gone", "admin", NULL, 0), *doc = NULL;
	struct ctl_api_identity who;

	/* Valid just before its expiry, expired at it. */
	assert_int_equal(ctl_api_token_authenticate(f->st, JSTR(shortlived, "token"), NOW + 999,
						    &who, &f->err),
			 0);
	assert_null(who.clusters_json);
	ctl_api_identity_done(&who);
	expect_error(f,
		     ctl_api_token_authenticate(f->st, JSTR(shortlived, "token"), NOW + 1000, &who,
						&f->err),
		     CTL_ERR_UNAUTHENTICATED, NULL);
	assert_int_equal(ctl_api_token_authenticate(f->st, JSTR(shortlived, "token"), NOW + 1000,
						    &who, &f->err),
			 -RY_E_TOKEN_EXPIRED);
	assert_string_equal(f->err.message, "the API token has expired");
	ctl_error_done(&f->err);
	ctl_error_init(&f->err);

	/* Revoke by name; the answer names the id; then it no longer authenticates. */
	assert_int_equal(ctl_api_token_revoke(f->st, "gone", ACTOR, NOW + 1, &doc, &f->err), 0);
	assert_string_equal(JSTR(doc, "id"), JSTR(gone, "id"));
	assert_true(json_is_true(json_object_get(doc, "revoked")));
	json_decref(doc);
	doc = NULL;
	assert_true(ctl_api_token_authenticate(f->st, JSTR(gone, "token"), NOW + 2, &who, &f->err) <
		    0);
	assert_string_equal(f->err.code, CTL_ERR_UNAUTHENTICATED);
	assert_string_equal(f->err.message, "the API token was revoked");
	ctl_error_done(&f->err);
	ctl_error_init(&f->err);

	/* Revoking again is not an error (already revoked); an unknown one is not found. */
	assert_int_equal(ctl_api_token_revoke(f->st, "gone", ACTOR, NOW + 3, &doc, &f->err), 0);
	json_decref(doc);
	doc = NULL;
	expect_error(f, ctl_api_token_revoke(f->st, "nosuch", ACTOR, NOW, &doc, &f->err),
		     CTL_ERR_NOT_FOUND, "id");

	/* Malformed and unknown tokens: one message. */
	assert_true(ctl_api_token_authenticate(f->st, "rya1.nonsense", NOW, &who, &f->err) < 0);
	assert_string_equal(f->err.message, "not a valid API token");
	ctl_error_done(&f->err);
	ctl_error_init(&f->err);
	json_decref(shortlived);
	json_decref(gone);
}

/* ---- enrollment tokens and the audit log --------------------------------------------------- */

static void test_enroll_tokens(void **state)
{
	struct fx *f = *state;
	json_t *made = NULL, *list = NULL, *doc = NULL, *t;

	assert_int_equal(ctl_enroll_token_create(f->st, ACTOR, "c1", 2, 60000, NOW, &made, &f->err),
			 0);
	assert_non_null(JSTR(made, "token"));
	assert_int_equal(strlen(JSTR(made, "id")), 16);
	assert_string_equal(JSTR(made, "cluster"), "c1");
	assert_int_equal(JINT(made, "uses"), 2);

	assert_int_equal(ctl_enroll_tokens_list(f->st, 0, NOW + 1, &list, &f->err), 0);
	assert_int_equal(json_array_size(list), 1);
	t = json_array_get(list, 0);
	assert_string_equal(JSTR(t, "id"), JSTR(made, "id"));
	assert_string_equal(JSTR(t, "state"), "active");
	assert_int_equal(JINT(t, "uses_left"), 2);
	assert_null(json_object_get(t, "token"));
	json_decref(list);
	/* Past its life it lists as expired. */
	assert_int_equal(ctl_enroll_tokens_list(f->st, 0, NOW + 60000, &list, &f->err), 0);
	assert_string_equal(JSTR(json_array_get(list, 0), "state"), "expired");
	json_decref(list);

	assert_int_equal(ctl_enroll_token_get(f->st, JSTR(made, "id"), &doc, &f->err), 0);
	assert_string_equal(JSTR(doc, "cluster"), "c1");
	json_decref(doc);
	doc = NULL;
	assert_int_equal(
		ctl_enroll_token_revoke(f->st, JSTR(made, "id"), ACTOR, NOW + 2, &doc, &f->err), 0);
	assert_string_equal(JSTR(doc, "state"), "revoked");
	assert_string_equal(JSTR(doc, "cluster"), "c1");
	json_decref(doc);
	doc = NULL;
	assert_int_equal(ctl_enroll_tokens_list(f->st, 0, NOW + 3, &list, &f->err), 0);
	assert_string_equal(JSTR(json_array_get(list, 0), "state"), "revoked");
	json_decref(list);

	/* Bad input names its field; unknown ids are not found. */
	expect_error(f, ctl_enroll_token_create(f->st, ACTOR, "-bad", 1, 60000, NOW, &doc, &f->err),
		     CTL_ERR_INVALID, "cluster");
	expect_error(f, ctl_enroll_token_create(f->st, ACTOR, "c1", 0, 60000, NOW, &doc, &f->err),
		     CTL_ERR_INVALID, "uses");
	expect_error(f, ctl_enroll_token_create(f->st, ACTOR, "c1", 1, 10, NOW, &doc, &f->err),
		     CTL_ERR_INVALID, "ttl_ms");
	expect_error(f, ctl_enroll_token_get(f->st, "0000000000000000", &doc, &f->err),
		     CTL_ERR_NOT_FOUND, "id");
	expect_error(f,
		     ctl_enroll_token_revoke(f->st, "0000000000000000", ACTOR, NOW, &doc, &f->err),
		     CTL_ERR_NOT_FOUND, "id");
	assert_null(doc);
	json_decref(made);
}

static bool audit_has(const json_t *rows, const char *action, const char *actor)
{
	const json_t *e;
	size_t i;

	json_array_foreach(rows, i, e) if (strcmp(JSTR(e, "action"), action) == 0 &&
					   strcmp(JSTR(e, "actor"), actor) == 0) return true;
	return false;
}

static void test_audit(void **state)
{
	struct fx *f = *state;
	json_t *a = api_token(f, "auditme", "viewer", NULL, 0), *e = NULL, *rows = NULL;

	assert_int_equal(ctl_api_token_revoke(f->st, "auditme", ACTOR, NOW + 1, &e, &f->err), 0);
	json_decref(e);
	e = NULL;
	assert_int_equal(ctl_enroll_token_create(f->st, ACTOR, "c2", 1, 60000, NOW, &e, &f->err),
			 0);
	json_decref(e);
	assert_int_equal(ctl_audit_list(f->st, 100, &rows, &f->err), 0);
	assert_true(audit_has(rows, "api_token.create", ACTOR));
	assert_true(audit_has(rows, "api_token.revoke", ACTOR));
	assert_true(audit_has(rows, "token.create", ACTOR));
	assert_false(audit_has(rows, "node.revoke", ACTOR));
	json_decref(rows);
	rows = NULL;
	assert_int_equal(ctl_audit_list(f->st, 1, &rows, &f->err), 0);
	assert_int_equal(json_array_size(rows), 1);
	json_decref(rows);
	rows = NULL;
	expect_error(f, ctl_audit_list(f->st, 0, &rows, &f->err), CTL_ERR_INVALID, "limit");
	json_decref(a);
}

/* ---- health, metrics, backup ------------------------------------------------------------- */

static void test_health_metrics_backup(void **state)
{
	struct fx *f = *state;
	char *text = NULL, to[700];
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	struct ctl_backup_info info;

	assert_non_null(m);
	assert_int_equal(ctl_health_store(f->st, &f->err), 0);
	assert_int_equal(ctl_metrics_nodes(f->st, m, &f->err), 0);
	assert_int_equal(ctl_metrics_objects(f->st, m, &f->err), 0);
	fclose(m);
	assert_non_null(strstr(text, "railyard_nodes{state=\"online\"} 0\n"));
	assert_non_null(strstr(text, "# TYPE railyard_deployments gauge\n"));
	assert_non_null(strstr(text, "railyard_store_transaction_duration_seconds"));
	free(text);

	snprintf(to, sizeof(to), "%s/backup.db", f->dir);
	assert_int_equal(ctl_backup(f->dir, to, &info, &f->err), 0);
	assert_int_equal(access(to, R_OK), 0);
	assert_true(info.schema_version > 0);
	expect_error(f, ctl_backup(f->dir, f->db, NULL, &f->err), CTL_ERR_INVALID, "to");
	snprintf(to, sizeof(to), "%s-wal", f->db);
	expect_error(f, ctl_backup(f->dir, to, NULL, &f->err), CTL_ERR_INVALID, "to");
	expect_error(f, ctl_backup(f->dir, "", NULL, &f->err), CTL_ERR_INVALID, "to");
	snprintf(to, sizeof(to), "%s/nothing-here", f->dir);
	expect_error(f, ctl_backup(to, "/dev/null/x", NULL, &f->err), CTL_ERR_NOT_FOUND,
		     "state_dir");
}

/* Remove dir and the files in it (no deeper). */
static void rm_dir(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		char p[1100];

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* Enroll one node in the fixture's store, back it up, and restore the backup into an
 * initialised state directory: every refusal first, then the restore. */
static void test_restore(void **state)
{
	struct fx *f = *state;
	char sd[700], backup[700], junk[700], live[800], why[512] = "", pid[64];
	struct ctl_backup_info info = {0};
	struct store_enroll e = {.node_id = "node-0001",
				 .hostname = "gpu01",
				 .cert_serial = "01",
				 .cert_fingerprint = "ff",
				 .peer = "127.0.0.1"};
	struct store *st2 = NULL;
	json_t *tok = NULL, *n = NULL;
	long holder = 0;
	FILE *fp;
	int fd = -1;

	assert_int_equal(ctl_enroll_token_create(f->st, ACTOR, "c1", 1, 60000, NOW, &tok, &f->err),
			 0);
	e.token = JSTR(tok, "token");
	assert_int_equal(store_enroll_node(f->st, &e, NOW + 1, NULL), 0);
	json_decref(tok);
	snprintf(backup, sizeof(backup), "%s/backup.db", f->dir);
	assert_int_equal(ctl_backup(f->dir, backup, &info, &f->err), 0);
	assert_int_equal(info.nodes, 1);

	snprintf(sd, sizeof(sd), "%s/sd", f->dir);
	assert_int_equal(ctl_state_init(sd, NULL, 0, why, sizeof(why)), 0);
	snprintf(live, sizeof(live), "%s/controller.db", sd);

	/* No CA in the fixture's directory (only controller.db). */
	expect_error(f, ctl_restore(f->dir, backup, true, NULL, &f->err), CTL_ERR_NOT_FOUND,
		     "state_dir");
	/* A database there already, and no --force. */
	expect_error(f, ctl_restore(sd, backup, false, NULL, &f->err), CTL_ERR_CONFLICT, "force");
	/* Not a database. */
	snprintf(junk, sizeof(junk), "%s/junk.db", f->dir);
	fp = fopen(junk, "w");
	assert_non_null(fp);
	fputs("this is not an SQLite database, only some text long enough to look at\n", fp);
	fclose(fp);
	expect_error(f, ctl_restore(sd, junk, true, NULL, &f->err), CTL_ERR_INVALID, "from");
	expect_error(f, ctl_restore(sd, "", true, NULL, &f->err), CTL_ERR_INVALID, "from");
	/* The database itself. */
	expect_error(f, ctl_restore(sd, live, true, NULL, &f->err), CTL_ERR_INVALID, "from");
	/* Served (its serve lock held): refused, naming the holder. */
	assert_int_equal(fs_lock_dir(sd, CTL_SERVE_LOCK, &fd, &holder), 0);
	assert_int_equal(ctl_restore(sd, backup, true, NULL, &f->err), -RY_E_LOCKED);
	assert_string_equal(f->err.code, CTL_ERR_CONFLICT);
	assert_string_equal(f->err.field, "state_dir");
	snprintf(pid, sizeof(pid), "(pid %ld)", (long)getpid());
	assert_non_null(strstr(f->err.message, pid));
	ctl_error_done(&f->err);
	ctl_error_init(&f->err);
	close(fd);
	/* None of the refusals touched the initialised database: no node in it. */
	assert_int_equal(store_open(live, &st2), 0);
	expect_error(f, ctl_node_get(st2, "gpu01", &n, &f->err), CTL_ERR_NOT_FOUND, NULL);
	store_free(st2);
	st2 = NULL;

	/* The restore. */
	memset(&info, 0, sizeof(info));
	assert_int_equal(ctl_restore(sd, backup, true, &info, &f->err), 0);
	assert_true(info.schema_version > 0);
	assert_int_equal(info.nodes, 1);
	assert_int_equal(store_open(live, &st2), 0);
	assert_int_equal(ctl_node_get(st2, "gpu01", &n, &f->err), 0);
	assert_string_equal(JSTR(n, "id"), "node-0001");
	json_decref(n);
	store_free(st2);
	/* The lock was let go. */
	fd = -1;
	assert_int_equal(fs_lock_dir(sd, CTL_SERVE_LOCK, &fd, &holder), 0);
	close(fd);
	rm_dir(sd);
}

/* ---- nodes and playbooks --------------------------------------------------------------------
 */

static void test_nodes(void **state)
{
	struct fx *f = *state;
	json_t *tok = NULL, *nodes = NULL, *n = NULL;
	struct store_enroll e = {.node_id = "node-0001",
				 .hostname = "gpu01",
				 .cert_serial = "01",
				 .cert_fingerprint = "ff",
				 .peer = "127.0.0.1"};

	assert_int_equal(ctl_nodes_list(f->st, NULL, NULL, false, &nodes, &f->err), 0);
	assert_int_equal(json_array_size(nodes), 0);
	json_decref(nodes);
	assert_int_equal(ctl_enroll_token_create(f->st, ACTOR, "c1", 1, 60000, NOW, &tok, &f->err),
			 0);
	e.token = JSTR(tok, "token");
	assert_int_equal(store_enroll_node(f->st, &e, NOW + 1, NULL), 0);
	assert_int_equal(ctl_nodes_list(f->st, "c1", NULL, false, &nodes, &f->err), 0);
	assert_int_equal(json_array_size(nodes), 1);
	assert_string_equal(JSTR(json_array_get(nodes, 0), "hostname"), "gpu01");
	assert_null(json_object_get(json_array_get(nodes, 0), "facts"));
	json_decref(nodes);
	assert_int_equal(ctl_nodes_list(f->st, "c2", NULL, false, &nodes, &f->err), 0);
	assert_int_equal(json_array_size(nodes), 0);
	json_decref(nodes);
	assert_int_equal(ctl_node_get(f->st, "gpu01", &n, &f->err), 0);
	assert_string_equal(JSTR(n, "id"), "node-0001");
	json_decref(n);
	n = NULL;
	expect_error(f, ctl_node_get(f->st, "gpu99", &n, &f->err), CTL_ERR_NOT_FOUND, NULL);
	/* The token's one use is spent. */
	assert_int_equal(ctl_enroll_tokens_list(f->st, 0, NOW + 2, &n, &f->err), 0);
	assert_string_equal(JSTR(json_array_get(n, 0), "state"), "used");
	json_decref(n);
	json_decref(tok);
}

static void test_playbooks(void **state)
{
	struct fx *f = *state;
	static const char good[] = "name: svc\nversion: 1\nsteps:\n"
				   "  - name: marker\n    type: file\n    params:\n"
				   "      path: /etc/railyard-svc\n      content: \"x\\n\"\n";
	static const char bad[] = "name: svc\nversion: 1\nsteps: 3\n";
	json_t *up = NULL, *got = NULL, *list = NULL;

	/* Uploads are for a cluster the controller knows. */
	expect_error(f, ctl_playbook_upload(f->st, "c1", good, strlen(good), ACTOR, &up, &f->err),
		     CTL_ERR_NOT_FOUND, "cluster");
	assert_int_equal(store_cluster_ensure(f->st, "c1", NOW), 0);
	assert_int_equal(ctl_playbook_upload(f->st, "c1", good, strlen(good), ACTOR, &up, &f->err),
			 0);
	assert_string_equal(JSTR(up, "name"), "svc");
	assert_int_equal(strlen(JSTR(up, "sha256")), 64);
	assert_int_equal(ctl_playbook_get(f->st, JSTR(up, "sha256"), &got, &f->err), 0);
	assert_string_equal(JSTR(got, "text"), good);
	assert_int_equal(ctl_playbook_list(f->st, 0, &list, &f->err), 0);
	assert_int_equal(json_array_size(list), 1);
	json_decref(list);
	json_decref(got);
	got = NULL;

	assert_true(ctl_playbook_upload(f->st, "c1", bad, strlen(bad), ACTOR, &got, &f->err) < 0);
	assert_string_equal(f->err.code, CTL_ERR_PLAYBOOK);
	assert_true(f->err.diags.count > 0);
	ctl_error_done(&f->err);
	ctl_error_init(&f->err);
	expect_error(f, ctl_playbook_get(f->st, "00", &got, &f->err), CTL_ERR_NOT_FOUND, NULL);
	expect_error(f,
		     ctl_playbook_upload(f->st, "-bad", good, strlen(good), ACTOR, &got, &f->err),
		     CTL_ERR_INVALID, "cluster");
	assert_null(got);
	json_decref(up);
}

/* ---- collective runs ------------------------------------------------------------------------ */

static void enroll(struct fx *f, const char *cluster, const char *id, const char *host)
{
	json_t *tok = NULL;
	struct store_enroll e = {.node_id = id,
				 .hostname = host,
				 .cert_serial = id,
				 .cert_fingerprint = id,
				 .peer = "127.0.0.1"};

	assert_int_equal(
		ctl_enroll_token_create(f->st, ACTOR, cluster, 1, 60000, NOW, &tok, &f->err), 0);
	e.token = JSTR(tok, "token");
	assert_int_equal(store_enroll_node(f->st, &e, NOW + 1, NULL), 0);
	json_decref(tok);
}

static void test_bench_collective(void **state)
{
	struct fx *f = *state;
	const char *three[] = {"gpu02", "node-0001", "gpu03"}, *bad[3];
	struct ctl_coll_request rq = {.nodes = three,
				      .n_nodes = 3,
				      .transport = "tcp",
				      .timeout_ms = 60000,
				      .actor = ACTOR};
	struct ctl_bench_created made;
	struct store_bench_run *b = NULL;
	char launcher[64];
	json_t *p = NULL, *doc = NULL, *raw;
	const char *tok;

	enroll(f, "c1", "node-0001", "gpu01");
	enroll(f, "c1", "node-0002", "gpu02");
	enroll(f, "c1", "node-0003", "gpu03");
	enroll(f, "c2", "node-0004", "gpu04");
	/* The params: hosts in the order given, resolved, the launcher first; the defaults. */
	assert_int_equal(ctl_bench_collective_params(f->st, &rq, &p, launcher, &f->err), 0);
	assert_string_equal(launcher, "node-0002");
	assert_string_equal(JSTR(json_array_get(json_object_get(p, "hosts"), 1), "node"),
			    "node-0001");
	assert_string_equal(JSTR(json_array_get(json_object_get(p, "hosts"), 1), "host"), "gpu01");
	assert_int_equal(JINT(p, "ranks_per_node"), 1);
	assert_int_equal(json_array_size(json_object_get(p, "ops")), 5);
	assert_int_equal(JINT(p, "max_bytes"), 64 << 20);
	assert_int_equal(JINT(p, "warmup"), 5);
	assert_string_equal(JSTR(json_object_get(p, "settings"), "ucx"), "/etc/ucx/ucx.conf");
	tok = JSTR(p, "job_token");
	assert_non_null(tok);
	assert_int_equal(strlen(tok), 64);
	assert_int_equal(strspn(tok, "0123456789abcdef"), 64);
	json_decref(p);
	p = NULL;
	/* warmup -1: none; ops chosen. */
	rq.warmup = -1;
	rq.ops = "sendrecv,allreduce";
	assert_int_equal(ctl_bench_collective_params(f->st, &rq, &p, launcher, &f->err), 0);
	assert_int_equal(JINT(p, "warmup"), 0);
	assert_string_equal(json_string_value(json_array_get(json_object_get(p, "ops"), 0)),
			    "sendrecv");
	json_decref(p);
	p = NULL;
	/* Refusals, each naming its field; nothing made. */
	rq.ops = "allreduce,allreduce";
	expect_error(f, ctl_bench_collective_params(f->st, &rq, &p, launcher, &f->err),
		     CTL_ERR_INVALID, "ops");
	rq.ops = "allreduce,";
	expect_error(f, ctl_bench_collective_params(f->st, &rq, &p, launcher, &f->err),
		     CTL_ERR_INVALID, "ops");
	rq.ops = NULL;
	rq.n_nodes = 1;
	expect_error(f, ctl_bench_collective_params(f->st, &rq, &p, launcher, &f->err),
		     CTL_ERR_INVALID, "nodes");
	rq.n_nodes = 3;
	rq.ranks_per_node = 65;
	expect_error(f, ctl_bench_collective_params(f->st, &rq, &p, launcher, &f->err),
		     CTL_ERR_INVALID, "ranks_per_node");
	rq.ranks_per_node = 0;
	rq.min_bytes = 1 << 20;
	rq.max_bytes = 1024;
	expect_error(f, ctl_bench_collective_params(f->st, &rq, &p, launcher, &f->err),
		     CTL_ERR_INVALID, "min_bytes");
	rq.min_bytes = rq.max_bytes = 0;
	rq.backend = "gloo";
	expect_error(f, ctl_bench_collective_params(f->st, &rq, &p, launcher, &f->err),
		     CTL_ERR_INVALID, "backend");
	rq.backend = NULL;
	rq.transport = "carrier-pigeon";
	expect_error(f, ctl_bench_collective_params(f->st, &rq, &p, launcher, &f->err),
		     CTL_ERR_INVALID, "transport");
	rq.transport = "verbs";
	bad[0] = "gpu01", bad[1] = "node-0001", bad[2] = "gpu03";
	rq.nodes = bad;
	expect_error(f, ctl_bench_collective_params(f->st, &rq, &p, launcher, &f->err),
		     CTL_ERR_INVALID, "nodes");
	bad[1] = "gpu04"; /* of c2 */
	expect_error(f, ctl_bench_collective_params(f->st, &rq, &p, launcher, &f->err),
		     CTL_ERR_NOT_FOUND, "nodes");
	bad[1] = "gpu99";
	expect_error(f, ctl_bench_collective_params(f->st, &rq, &p, launcher, &f->err),
		     CTL_ERR_NOT_FOUND, "nodes");
	rq.cluster = "c2";
	rq.nodes = three;
	expect_error(f, ctl_bench_collective_params(f->st, &rq, &p, launcher, &f->err),
		     CTL_ERR_NOT_FOUND, "nodes");
	assert_null(p);
	rq.cluster = "c1";
	/* Stored one-sided for its launcher; the token is in the store, never in the document. */
	assert_int_equal(ctl_bench_create_collective(f->st, &rq, &made, &f->err), 0);
	assert_string_equal(made.client_id, "node-0002");
	assert_string_equal(made.server_id, "node-0002");
	assert_int_equal(ctl_bench_get(f->st, made.id, &doc, &f->err), 0);
	assert_string_equal(JSTR(doc, "kind"), "collective");
	assert_string_equal(JSTR(doc, "transport"), "verbs");
	assert_non_null(json_object_get(doc, "params"));
	assert_null(json_object_get(json_object_get(doc, "params"), "job_token"));
	assert_int_equal(json_array_size(json_object_get(json_object_get(doc, "params"), "hosts")),
			 3);
	json_decref(doc);
	assert_int_equal(ctl_bench_list(f->st, 0, &doc, &f->err), 0);
	assert_null(
		json_object_get(json_object_get(json_array_get(doc, 0), "params"), "job_token"));
	json_decref(doc);
	assert_int_equal(store_bench_get(f->st, made.id, &b), 0);
	raw = json_loads(b->params_json, 0, NULL);
	assert_int_equal(strlen(JSTR(raw, "job_token")), 64);
	json_decref(raw);
	store_bench_run_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_api_token_create_list_authenticate, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_api_token_bad_input, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_api_token_expired_revoked_unknown, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_enroll_tokens, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_audit, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_health_metrics_backup, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_restore, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_nodes, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_playbooks, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_bench_collective, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
