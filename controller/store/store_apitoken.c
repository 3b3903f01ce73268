/* The store's tokens. API tokens (schema v9), the bearer tokens of the REST API: the api_tokens
 * table, making a token (shown once, only the SHA-256 of its secret kept), checking one on the
 * reader connection, the last-used stamp, listing and revocation. Enrollment tokens: the
 * enroll_tokens table, making, checking, listing and revoking them (store_enroll_node() in
 * store_nodes.c consumes one). */
#include "controller/store/store_apitoken.h"
#include "controller/store/store_int.h"

#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STORE_TOKEN_RANDOM 32 /* bytes of an enrollment token: 256 bits */
#define API_ID_BYTES	   8  /* 64 bits: a public name, unique by chance */
#define API_SECRET_BYTES   32 /* 256 bits */
#define API_ID_HEX	   (2 * API_ID_BYTES)
#define API_SECRET_HEX	   (2 * API_SECRET_BYTES)
#define API_PREFIX_LEN	   (sizeof(STORE_API_TOKEN_PREFIX) - 1)
#define API_TOKEN_LEN	   (API_PREFIX_LEN + API_ID_HEX + 1 + API_SECRET_HEX)
/* Longest clusters document read: 64 names of 64 bytes with room for whitespace. */
#define API_CLUSTERS_JSON_MAX (16 * 1024)
/* Longest cluster name (as ctl_valid_cluster_name()). */
#define API_CLUSTER_NAME_MAX 64

/* Columns read by token_from_row(), in this order; the check adds secret_hash as column 9. */
#define API_COLUMNS                                                                                \
	"id, name, role, clusters, created_by, created_at, expires_at, revoked_at, last_used_at"

static struct store_sql SQL_API_INSERT =
	STORE_SQL("INSERT INTO api_tokens (id, name, role, clusters, secret_hash, created_by, "
		  "created_at, expires_at) "
		  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, CASE ?9 WHEN 0 THEN NULL ELSE ?8 END)");
static struct store_sql SQL_API_CHECK =
	STORE_SQL("SELECT " API_COLUMNS ", secret_hash FROM api_tokens WHERE id = ?1");
/* By id, else the live token of that name, else the newest revoked one. Names never have an
 * id's form, so at most one row matches by id and it is not also matched by name. */
static struct store_sql SQL_API_LOOKUP =
	STORE_SQL("SELECT " API_COLUMNS " FROM api_tokens WHERE id = ?1 OR name = ?1 "
		  "ORDER BY id = ?1 DESC, revoked_at IS NULL DESC, revoked_at DESC LIMIT 1");
static struct store_sql SQL_API_LIST =
	STORE_SQL("SELECT " API_COLUMNS " FROM api_tokens ORDER BY created_at, name, id");
static struct store_sql SQL_API_REVOKE =
	STORE_SQL("UPDATE api_tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL");
static struct store_sql SQL_API_TOUCH =
	STORE_SQL("UPDATE api_tokens SET last_used_at = ?2 WHERE id = ?1 AND revoked_at IS NULL "
		  "AND (last_used_at IS NULL OR last_used_at <= ?2 - ?3)");

static struct store_sql SQL_TOKEN_GET =
	STORE_SQL("SELECT t.id, t.cluster_id, c.name, t.expires_at, t.uses_left, t.revoked_at "
		  "FROM enroll_tokens t JOIN clusters c ON c.id = t.cluster_id "
		  "WHERE t.token_hash = ?1");
/* A token's public id is the first 16 hex digits of its hash (the audit rows name 12). */
static struct store_sql SQL_TOKEN_LIST =
	STORE_SQL("SELECT substr(t.token_hash, 1, 16), c.name, t.created_at, t.expires_at, "
		  "t.uses_left, t.uses_total, t.revoked_at FROM enroll_tokens t "
		  "JOIN clusters c ON c.id = t.cluster_id ORDER BY t.created_at DESC, t.id DESC "
		  "LIMIT ?1");
static struct store_sql SQL_TOKEN_FIND =
	STORE_SQL("SELECT t.id, c.name, t.revoked_at FROM enroll_tokens t "
		  "JOIN clusters c ON c.id = t.cluster_id WHERE t.token_hash LIKE ?1 || '%'");
static struct store_sql SQL_TOKEN_REVOKE =
	STORE_SQL("UPDATE enroll_tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL");
static struct store_sql SQL_TOKEN_INSERT =
	STORE_SQL("INSERT INTO enroll_tokens (cluster_id, token_hash, created_at, "
		  "expires_at, uses_left, uses_total) VALUES (?1, ?2, ?3, ?4, ?5, ?5)");

static const char *const api_roles[] = {"admin", "integrator", "operator", "viewer"};

static bool is_lower_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool is_name_char(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	       ch == '.' || ch == '_' || ch == '-';
}

bool store_api_name_ok(const char *name)
{
	size_t n = name ? strnlen(name, STORE_API_NAME_MAX + 1) : 0;
	bool hex = n == API_ID_HEX;

	if (n == 0 || n > STORE_API_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!is_name_char(name[i]))
			return false;
		hex = hex && strchr("0123456789abcdefABCDEF", name[i]);
	}
	return !hex;
}

static bool api_role_ok(const char *role)
{
	for (size_t i = 0; role && i < RY_ARRAY_SIZE(api_roles); i++)
		if (strcmp(role, api_roles[i]) == 0)
			return true;
	return false;
}

/* The rule of ctl_valid_cluster_name() (controller/service.c), kept here so that the store
 * does not depend on the services: 1-64 of [A-Za-z0-9._-], starting with a letter or digit. */
static bool cluster_name_ok(const char *name)
{
	size_t n = strnlen(name, API_CLUSTER_NAME_MAX + 1);

	if (n == 0 || n > API_CLUSTER_NAME_MAX || !is_name_char(name[0]) || name[0] == '.' ||
	    name[0] == '_' || name[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_name_char(name[i]))
			return false;
	return true;
}

/* Check a scope document and write it compactly into *ret (caller frees): a JSON array of
 * 1..STORE_API_CLUSTERS_MAX distinct valid cluster names. -RY_E_INVALID, -ENOMEM. */
static int clusters_normalize(const char *clusters_json, char **ret)
{
	size_t len = strnlen(clusters_json, API_CLUSTERS_JSON_MAX + 1), n, i, j;
	json_t *root;
	char *out;
	int r = -RY_E_INVALID;

	if (len > API_CLUSTERS_JSON_MAX)
		return -RY_E_INVALID;
	root = json_loadb(clusters_json, len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_array(root))
		goto out;
	n = json_array_size(root);
	if (n == 0 || n > STORE_API_CLUSTERS_MAX)
		goto out;
	for (i = 0; i < n; i++) {
		const char *name = json_string_value(json_array_get(root, i));

		/* json_string_length: a name with a NUL inside is not a name. */
		if (!name || strlen(name) != json_string_length(json_array_get(root, i)) ||
		    !cluster_name_ok(name))
			goto out;
		for (j = 0; j < i; j++)
			if (strcmp(name, json_string_value(json_array_get(root, j))) == 0)
				goto out;
	}
	out = json_dumps(root, JSON_COMPACT);
	if (!out) {
		r = -ENOMEM;
		goto out;
	}
	*ret = out;
	r = 0;
out:
	json_decref(root);
	return r;
}

void store_api_token_free(struct store_api_token *t)
{
	if (!t)
		return;
	free(t->id);
	free(t->name);
	free(t->role);
	free(t->created_by);
	free(t->clusters_json);
	free(t);
}

void store_api_tokens_free(struct store_api_token **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		store_api_token_free(v[i]);
	free(v);
}

static void tokens_free_v(void *v, size_t n)
{
	store_api_tokens_free(v, n);
}

/* Build a token from a row of API_COLUMNS (NULL times read as 0). */
static int token_from_row(sqlite3_stmt *st, struct store_api_token **ret)
{
	struct store_api_token *t = calloc(1, sizeof(*t));
	char **cols[] = {&t->id, &t->name, &t->role, &t->clusters_json, &t->created_by};

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < RY_ARRAY_SIZE(cols); i++) {
		if (store_col_dup(st, (int)i, cols[i]) < 0) {
			store_api_token_free(t);
			return -ENOMEM;
		}
	}
	t->created_at_ms = sqlite3_column_int64(st, 5);
	t->expires_at_ms = sqlite3_column_int64(st, 6);
	t->revoked_at_ms = sqlite3_column_int64(st, 7);
	t->last_used_at_ms = sqlite3_column_int64(st, 8);
	*ret = t;
	return 0;
}

static int token_row(sqlite3_stmt *st, void *elem)
{
	return token_from_row(st, elem);
}

int store_api_token_create(struct store *s, const char *name, const char *role,
			   const char *clusters_json, int64_t ttl_ms, const char *actor,
			   int64_t now_ms, char **ret_token, char **ret_id)
{
	unsigned char rnd[API_ID_BYTES + API_SECRET_BYTES];
	char id[API_ID_HEX + 1], secret[API_SECRET_HEX + 1], hash[2 * 32 + 1], expires[32];
	char *token = NULL, *detail = NULL, *clusters = NULL, *id_copy = NULL;
	struct store_conn *c;
	int r;

	if (!s || !ret_token || ttl_ms < 0 || (ttl_ms > 0 && now_ms > INT64_MAX - ttl_ms))
		return -EINVAL;
	if (!store_api_name_ok(name) || !api_role_ok(role) || !store_text_ok(actor, STORE_TEXT_MAX))
		return -RY_E_INVALID;
	if (clusters_json) {
		r = clusters_normalize(clusters_json, &clusters);
		if (r < 0)
			return r;
	}
	c = &s->w;
	r = util_random_bytes(rnd, sizeof(rnd));
	if (r < 0)
		goto out;
	util_hex(rnd, API_ID_BYTES, id);
	util_hex(rnd + API_ID_BYTES, API_SECRET_BYTES, secret);
	r = store_token_hash(secret, hash);
	if (r < 0)
		goto out;
	if (asprintf(&token, STORE_API_TOKEN_PREFIX "%s.%s", id, secret) < 0) {
		token = NULL;
		r = -ENOMEM;
		goto out;
	}
	if (ttl_ms > 0)
		snprintf(expires, sizeof(expires), "%lld", (long long)(now_ms + ttl_ms));
	else
		snprintf(expires, sizeof(expires), "never");
	/* The audit names the token by its id and name; the secret appears nowhere but here. */
	if (asprintf(&detail, "name=%s role=%s clusters=%s expires_at=%s", name, role,
		     clusters ? clusters : "*", expires) < 0) {
		detail = NULL;
		r = -ENOMEM;
		goto out;
	}
	if (ret_id && !(id_copy = strdup(id))) {
		r = -ENOMEM;
		goto out;
	}

	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto unlock;
	r = store_q_exec(c, NULL, &SQL_API_INSERT, "ttttttlll", id, name, role, clusters, hash,
			 actor, now_ms, ttl_ms > 0 ? now_ms + ttl_ms : 0, (int64_t)(ttl_ms > 0));
	if (r < 0) {
		/* The live name's unique index (an id clash has odds of 2^-64 per pair). */
		if (sqlite3_extended_errcode(c->db) == SQLITE_CONSTRAINT_UNIQUE ||
		    sqlite3_extended_errcode(c->db) == SQLITE_CONSTRAINT_PRIMARYKEY)
			r = -RY_E_EXISTS;
		goto rollback;
	}
	r = store_audit_locked(c, now_ms, actor, "api_token.create", id, "success", detail);
	if (r < 0)
		goto rollback;
	r = store_tx_commit(c);
	goto unlock;
rollback:
	store_tx_rollback(c);
unlock:
	pthread_mutex_unlock(&c->lock);
out:
	explicit_bzero(rnd, sizeof(rnd));
	explicit_bzero(secret, sizeof(secret));
	free(detail);
	free(clusters);
	if (r < 0) {
		if (token)
			explicit_bzero(token, strlen(token));
		free(token);
		free(id_copy);
		return r;
	}
	*ret_token = token;
	if (ret_id)
		*ret_id = id_copy;
	return 0;
}

/* Split a token of the exact form "rya1.<16 hex>.<64 hex>" (lower case): id copied into id,
 * *ret_secret pointing into token. -RY_E_INVALID otherwise. */
static int token_split(const char *token, char id[API_ID_HEX + 1], const char **ret_secret)
{
	const char *p = token + API_PREFIX_LEN;

	if (strnlen(token, API_TOKEN_LEN + 1) != API_TOKEN_LEN ||
	    memcmp(token, STORE_API_TOKEN_PREFIX, API_PREFIX_LEN) != 0 ||
	    !is_lower_hex(p, API_ID_HEX) || p[API_ID_HEX] != '.' ||
	    !is_lower_hex(p + API_ID_HEX + 1, API_SECRET_HEX))
		return -RY_E_INVALID;
	memcpy(id, p, API_ID_HEX);
	id[API_ID_HEX] = '\0';
	*ret_secret = p + API_ID_HEX + 1;
	return 0;
}

int store_api_token_check(struct store *s, const char *token, int64_t now_ms,
			  struct store_api_token **ret)
{
	char id[API_ID_HEX + 1], hash[2 * 32 + 1];
	const char *secret = NULL, *stored;
	struct store_api_token *t = NULL;
	sqlite3_stmt *st = NULL;
	struct store_conn *c;
	int r;

	if (!s || !token || !ret)
		return -EINVAL;
	r = token_split(token, id, &secret);
	if (r < 0)
		return r;
	r = store_token_hash(secret, hash);
	if (r < 0)
		return r;
	c = &s->r;
	pthread_mutex_lock(&c->lock);
	r = store_q_start(c, &SQL_API_CHECK, &st, "t", id);
	if (r < 0)
		goto out;
	r = store_q_step(c, st);
	if (r < 0)
		goto out;
	if (r == 0) {
		r = -RY_E_TOKEN_UNKNOWN;
		goto out;
	}
	/* Constant time over the whole hash: the comparison tells nothing of where it differs. */
	stored = (const char *)sqlite3_column_text(st, 9);
	if (!stored || strlen(stored) != 2 * 32 || CRYPTO_memcmp(stored, hash, 2 * 32) != 0) {
		r = -RY_E_TOKEN_SECRET;
		goto out;
	}
	if (sqlite3_column_type(st, 7) != SQLITE_NULL) {
		r = -RY_E_REVOKED;
		goto out;
	}
	if (sqlite3_column_type(st, 6) != SQLITE_NULL && now_ms >= sqlite3_column_int64(st, 6)) {
		r = -RY_E_TOKEN_EXPIRED;
		goto out;
	}
	r = token_from_row(st, &t);
out:
	store_q_end(st);
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	*ret = t;
	return 0;
}

int store_api_token_touch(struct store *s, const char *id, int64_t now_ms)
{
	struct store_conn *c;
	int r, changed = 0;

	if (!s || !id)
		return -EINVAL;
	c = &s->w;
	pthread_mutex_lock(&c->lock);
	r = store_q_exec(c, &changed, &SQL_API_TOUCH, "tll", id, now_ms,
			 (int64_t)STORE_API_TOUCH_MS);
	pthread_mutex_unlock(&c->lock);
	return r < 0 ? r : changed > 0;
}

/* By id or name (see SQL_API_LOOKUP), under the caller's lock. */
static int lookup_locked(struct store_conn *c, const char *key, struct store_api_token **ret)
{
	sqlite3_stmt *st = NULL;
	int r = store_q_start(c, &SQL_API_LOOKUP, &st, "t", key);

	if (r < 0)
		return r;
	r = store_q_step(c, st);
	if (r == 1)
		r = token_from_row(st, ret);
	else if (r == 0)
		r = -RY_E_NOT_FOUND;
	store_q_end(st);
	return r;
}

int store_api_token_get(struct store *s, const char *id_or_name, struct store_api_token **ret)
{
	struct store_api_token *t = NULL;
	struct store_conn *c;
	int r;

	if (!s || !id_or_name || !ret)
		return -EINVAL;
	c = &s->r;
	pthread_mutex_lock(&c->lock);
	r = lookup_locked(c, id_or_name, &t);
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	*ret = t;
	return 0;
}

int store_api_tokens_list(struct store *s, struct store_api_token ***ret, size_t *ret_n)
{
	if (!s || !ret || !ret_n)
		return -EINVAL;
	return store_q_list(&s->r, &SQL_API_LIST, sizeof(struct store_api_token *), token_row,
			    tokens_free_v, (void **)ret, ret_n, "");
}

int store_api_token_revoke(struct store *s, const char *id_or_name, const char *actor,
			   int64_t now_ms, char **ret_id)
{
	struct store_api_token *t = NULL;
	struct store_conn *c;
	char *detail = NULL;
	int r, revoked = 0, changed = 0;

	if (!s || !id_or_name || !actor)
		return -EINVAL;
	if (!store_text_ok(actor, STORE_TEXT_MAX))
		return -RY_E_INVALID;
	c = &s->w;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto unlock;
	r = lookup_locked(c, id_or_name, &t);
	if (r < 0)
		goto rollback;
	r = store_q_exec(c, &changed, &SQL_API_REVOKE, "tl", t->id, now_ms);
	if (r < 0)
		goto rollback;
	if (changed == 0) { /* revoked already: nothing to write */
		r = store_tx_commit(c);
		goto unlock;
	}
	if (asprintf(&detail, "name=%s role=%s", t->name, t->role) < 0) {
		detail = NULL;
		r = -ENOMEM;
		goto rollback;
	}
	r = store_audit_locked(c, now_ms, actor, "api_token.revoke", t->id, "success", detail);
	if (r < 0)
		goto rollback;
	r = store_tx_commit(c);
	revoked = 1;
	goto unlock;
rollback:
	store_tx_rollback(c);
unlock:
	pthread_mutex_unlock(&c->lock);
	free(detail);
	if (r == 0 && ret_id) {
		*ret_id = t->id;
		t->id = NULL;
	}
	store_api_token_free(t);
	return r < 0 ? r : revoked;
}

/* ---- enrollment tokens ----------------------------------------------------------------------- */

/* SHA-256 of the token as lower-case hex: the only form in which tokens are stored. */
int store_token_hash(const char *token, char out[2 * 32 + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (!EVP_Digest(token, strlen(token), md, &mdlen, EVP_sha256(), NULL) || mdlen != 32)
		return -RY_E_CRYPTO;
	util_hex(md, mdlen, out);
	return 0;
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
	if (!store_text_ok(cluster, STORE_TEXT_MAX) || !store_text_ok(actor, STORE_TEXT_MAX))
		return -RY_E_INVALID;
	r = util_random_bytes(rnd, sizeof(rnd));
	if (r < 0)
		return r;
	util_hex(rnd, sizeof(rnd), hex);
	if (asprintf(&token, STORE_TOKEN_PREFIX "%s", hex) < 0)
		return -ENOMEM;
	r = store_token_hash(token, hash);
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
	r = store_tx_begin(c);
	if (r < 0)
		goto unlock;
	r = store_cluster_ensure_locked(c, cluster, now_ms, &cluster_id);
	if (r < 0)
		goto rollback;
	r = store_q_exec(c, NULL, &SQL_TOKEN_INSERT, "ltlll", cluster_id, hash, now_ms,
			 now_ms + ttl_ms, (int64_t)uses);
	if (r < 0)
		goto rollback;
	r = store_audit_locked(c, now_ms, actor, "token.create", cluster, "success", detail);
	if (r < 0)
		goto rollback;
	r = store_tx_commit(c);
	goto unlock;
rollback:
	store_tx_rollback(c);
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

int store_token_lookup_locked(struct store_conn *c, const char *token, int64_t now_ms,
			      struct store_token_row *row)
{
	char hash[2 * 32 + 1];
	sqlite3_stmt *st = NULL;
	int r;

	/* Anything longer than a token cannot be one; no need to hash it. */
	if (strnlen(token, STORE_TEXT_MAX + 1) > STORE_TEXT_MAX)
		return -RY_E_TOKEN_UNKNOWN;
	r = store_token_hash(token, hash);
	if (r < 0)
		return r;
	r = store_q_start(c, &SQL_TOKEN_GET, &st, "t", hash);
	if (r < 0)
		return r;
	r = store_q_step(c, st);
	if (r < 0)
		goto out;
	if (r == 0) {
		r = -RY_E_TOKEN_UNKNOWN;
		goto out;
	}
	if (sqlite3_column_type(st, 5) != SQLITE_NULL) {
		r = -RY_E_TOKEN_REVOKED;
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
	r = store_col_dup(st, 2, &row->cluster);
	if (r < 0)
		goto out;
	row->id = sqlite3_column_int64(st, 0);
	row->cluster_id = sqlite3_column_int64(st, 1);
out:
	store_q_end(st);
	return r;
}

int store_token_check(struct store *s, const char *token, int64_t now_ms, char **ret_cluster)
{
	struct store_conn *c = &s->r;
	struct store_token_row row = {0};
	int r;

	if (!s || !token || !ret_cluster)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_token_lookup_locked(c, token, now_ms, &row);
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	*ret_cluster = row.cluster;
	return 0;
}

void store_enroll_tokens_free(struct store_enroll_token *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		free(v[i].id);
		free(v[i].cluster);
	}
	free(v);
}

static void enroll_tokens_free_v(void *v, size_t n)
{
	store_enroll_tokens_free(v, n);
}

static int enroll_token_row(sqlite3_stmt *st, void *elem)
{
	struct store_enroll_token *t = elem;

	if (store_col_dup(st, 0, &t->id) < 0 || store_col_dup(st, 1, &t->cluster) < 0)
		return -ENOMEM;
	t->created_at_ms = sqlite3_column_int64(st, 2);
	t->expires_at_ms = sqlite3_column_int64(st, 3);
	t->uses_left = sqlite3_column_int(st, 4);
	t->uses_total = sqlite3_column_int(st, 5);
	t->revoked_at_ms = sqlite3_column_int64(st, 6);
	return 0;
}

int store_enroll_tokens_list(struct store *s, size_t limit, struct store_enroll_token **ret,
			     size_t *ret_n)
{
	if (!s || !ret || !ret_n)
		return -EINVAL;
	return store_q_list(&s->r, &SQL_TOKEN_LIST, sizeof(struct store_enroll_token),
			    enroll_token_row, enroll_tokens_free_v, (void **)ret, ret_n, "l",
			    (int64_t)(limit ? limit : 50));
}

/* An enrollment token's id: 16 lower-case hex digits. */
static bool hex16(const char *id)
{
	return strnlen(id, API_ID_HEX + 1) == 16 && is_lower_hex(id, 16);
}

int store_enroll_token_cluster(struct store *s, const char *id, char **ret_cluster)
{
	struct store_conn *c = &s->r;
	sqlite3_stmt *st = NULL;
	int r;

	if (!s || !id || !ret_cluster)
		return -EINVAL;
	if (!hex16(id))
		return -RY_E_NOT_FOUND;
	pthread_mutex_lock(&c->lock);
	r = store_q_start(c, &SQL_TOKEN_FIND, &st, "t", id);
	if (r >= 0) {
		r = store_q_step(c, st);
		r = r == 1 ? store_col_dup(st, 1, ret_cluster) : r == 0 ? -RY_E_NOT_FOUND : r;
	}
	store_q_end(st);
	pthread_mutex_unlock(&c->lock);
	return r;
}

int store_enroll_token_revoke(struct store *s, const char *id, const char *actor, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	sqlite3_stmt *st = NULL;
	int64_t row = 0;
	bool revoked = false;
	char *cluster = NULL;
	int changes = 0, r;

	if (!s || !id || !store_text_ok(actor, STORE_TEXT_MAX))
		return -EINVAL;
	if (!hex16(id))
		return -RY_E_NOT_FOUND;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto out;
	r = store_q_start(c, &SQL_TOKEN_FIND, &st, "t", id);
	if (r >= 0) {
		r = store_q_step(c, st);
		if (r == 1) {
			row = sqlite3_column_int64(st, 0);
			revoked = sqlite3_column_type(st, 2) != SQLITE_NULL;
			r = store_col_dup(st, 1, &cluster);
		} else if (r == 0) {
			r = -RY_E_NOT_FOUND;
		}
	}
	store_q_end(st);
	if (r >= 0 && !revoked)
		r = store_q_exec(c, &changes, &SQL_TOKEN_REVOKE, "ll", row, now_ms);
	if (r >= 0 && changes)
		r = store_audit_locked(c, now_ms, actor, "token.revoke", cluster, "revoked", id);
	if (r < 0) {
		store_tx_rollback(c);
		goto out;
	}
	r = store_tx_commit(c);
out:
	pthread_mutex_unlock(&c->lock);
	free(cluster);
	return r < 0 ? r : changes > 0;
}

int store_enroll_token_id(const char *token, char out[17])
{
	char hash[2 * 32 + 1];
	int r = store_token_hash(token, hash);

	if (r < 0)
		return r;
	memcpy(out, hash, 16);
	out[16] = '\0';
	return 0;
}
