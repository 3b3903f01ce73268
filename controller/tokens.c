/* The tokens-and-audit service: API tokens, enrollment tokens and the audit log over the store,
 * as data and a ctl_error. */
#include "controller/tokens.h"

#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"
#include "controller/store/store_apitoken.h"
#include "controller/store/store_audit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(CTL_API_NAME_MAX == STORE_API_NAME_MAX, "tokens.h and the store agree on names");
_Static_assert(CTL_API_CLUSTERS_MAX == STORE_API_CLUSTERS_MAX,
	       "tokens.h and the store agree on scopes");

static const char *const api_roles[] = {"admin", "integrator", "operator", "viewer"};

static int nomem(struct ctl_error *err)
{
	return ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
}

static void wipe_free(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
}

/* ---- API tokens ---------------------------------------------------------------------------- */

int ctl_api_token_create(struct store *st, const struct ctl_api_token_request *rq, json_t **ret,
			 struct ctl_error *err)
{
	char *token = NULL, *id = NULL, *cls = NULL;
	bool role_ok = false;
	json_t *doc;
	int r;

	if (!rq->name || !store_api_name_ok(rq->name))
		return ctl_error_set(
			err, -RY_E_INVALID, CTL_ERR_INVALID, "name",
			"bad name (1..64 of A-Za-z0-9._-) or clusters (an array of names)");
	for (size_t i = 0; rq->role && i < RY_ARRAY_SIZE(api_roles); i++)
		role_ok |= strcmp(rq->role, api_roles[i]) == 0;
	if (!role_ok)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "role",
				     "role must be admin, integrator, operator or viewer");
	if (rq->ttl_ms < 0)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "ttl_ms",
				     "ttl_ms must be 0 (never expires) or positive");
	if (rq->clusters && !json_is_null(rq->clusters) && !json_is_array(rq->clusters))
		/* json_dumps() encodes only arrays and objects: a number here was a 500. */
		return ctl_error_set(
			err, -RY_E_INVALID, CTL_ERR_INVALID, "clusters",
			"clusters must be an array of cluster names (or null for all)");
	if (rq->clusters && !json_is_null(rq->clusters) &&
	    !(cls = json_dumps(rq->clusters, JSON_COMPACT)))
		return nomem(err);
	r = store_api_token_create(st, rq->name, rq->role, cls, rq->ttl_ms, rq->actor, rq->now_ms,
				   &token, &id);
	free(cls);
	if (r == -RY_E_EXISTS)
		return ctl_error_set(err, r, CTL_ERR_CONFLICT, "name",
				     "a token named %s exists already", rq->name);
	if (r == -RY_E_INVALID || r == -EINVAL)
		return ctl_error_set(
			err, r, CTL_ERR_INVALID, NULL,
			"bad name (1..64 of A-Za-z0-9._-) or clusters (an array of names)");
	if (r < 0)
		return ctl_error_store(err, r, "API token not created");
	doc = json_pack("{s:s, s:s, s:s, s:s}", "id", id, "name", rq->name, "role", rq->role,
			"token", token);
	wipe_free(token);
	free(id);
	if (!doc)
		return nomem(err);
	*ret = doc;
	return 0;
}

static json_t *api_token_json(const struct store_api_token *t)
{
	json_t *cl = t->clusters_json ? json_loads(t->clusters_json, 0, NULL) : NULL;

	return json_pack("{s:s, s:s, s:s, s:o, s:s, s:I, s:I, s:I, s:I}", "id", t->id, "name",
			 t->name, "role", t->role, "clusters", cl ? cl : json_null(), "created_by",
			 t->created_by, "created_at_ms", (json_int_t)t->created_at_ms,
			 "expires_at_ms", (json_int_t)t->expires_at_ms, "revoked_at_ms",
			 (json_int_t)t->revoked_at_ms, "last_used_at_ms",
			 (json_int_t)t->last_used_at_ms);
}

int ctl_api_tokens_list(struct store *st, json_t **ret, struct ctl_error *err)
{
	struct store_api_token **v = NULL;
	size_t n = 0;
	json_t *arr;
	int r = store_api_tokens_list(st, &v, &n);

	if (r < 0)
		return ctl_error_store(err, r, "API tokens not read");
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		if (json_array_append_new(arr, api_token_json(v[i])) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	store_api_tokens_free(v, n);
	if (!arr)
		return nomem(err);
	*ret = arr;
	return 0;
}

bool ctl_api_token_name_ok(const char *name)
{
	return store_api_name_ok(name);
}

int ctl_api_token_get(struct store *st, const char *id_or_name, json_t **ret, struct ctl_error *err)
{
	struct store_api_token *t = NULL;
	json_t *doc;
	int r = store_api_token_get(st, id_or_name, &t);

	if (r == -RY_E_NOT_FOUND || r == -EINVAL)
		return ctl_error_set(err, -RY_E_NOT_FOUND, CTL_ERR_NOT_FOUND, "id",
				     "no API token %s", id_or_name ? id_or_name : "");
	if (r < 0)
		return ctl_error_store(err, r, "API token not read");
	doc = api_token_json(t);
	store_api_token_free(t);
	if (!doc)
		return nomem(err);
	*ret = doc;
	return 0;
}

int ctl_api_token_revoke(struct store *st, const char *id_or_name, const char *actor,
			 int64_t now_ms, json_t **ret, struct ctl_error *err)
{
	char *done = NULL;
	json_t *doc;
	int r = store_api_token_revoke(st, id_or_name, actor, now_ms, &done);

	if (r == -RY_E_NOT_FOUND || r == -EINVAL)
		return ctl_error_set(err, -RY_E_NOT_FOUND, CTL_ERR_NOT_FOUND, "id",
				     "no API token %s", id_or_name ? id_or_name : "");
	if (r == -RY_E_INVALID)
		return ctl_error_set(err, r, CTL_ERR_INVALID, "actor", "bad actor");
	if (r < 0)
		return ctl_error_store(err, r, "API token not revoked");
	doc = json_pack("{s:s, s:b}", "id", done, "revoked", 1);
	free(done);
	if (!doc)
		return nomem(err);
	*ret = doc;
	return 0;
}

void ctl_api_identity_done(struct ctl_api_identity *id)
{
	if (!id)
		return;
	free(id->clusters_json);
	id->clusters_json = NULL;
}

int ctl_api_token_authenticate(struct store *st, const char *token, int64_t now_ms,
			       struct ctl_api_identity *ret, struct ctl_error *err)
{
	struct store_api_token *t = NULL;
	char *cl = NULL;
	int r = store_api_token_check(st, token, now_ms, &t);

	if (r < 0)
		return ctl_error_set(err, r, CTL_ERR_UNAUTHENTICATED, NULL, "%s",
				     r == -RY_E_TOKEN_EXPIRED ? "the API token has expired"
				     : r == -RY_E_REVOKED     ? "the API token was revoked"
				     : ctl_store_transient(r) ? "the token could not be checked now"
							      : "not a valid API token");
	if (t->clusters_json && !(cl = strdup(t->clusters_json))) {
		store_api_token_free(t);
		return nomem(err);
	}
	/* A failed touch costs only the last-use time: the request goes on. */
	if (now_ms - t->last_used_at_ms >= STORE_API_TOUCH_MS &&
	    store_api_token_touch(st, t->id, now_ms) < 0)
		log_debug("tokens: token %s: last use not recorded", t->id);
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->id, sizeof(ret->id), "%s", t->id);
	snprintf(ret->name, sizeof(ret->name), "%s", t->name);
	snprintf(ret->role, sizeof(ret->role), "%s", t->role);
	ret->clusters_json = cl;
	store_api_token_free(t);
	return 0;
}

/* ---- enrollment tokens --------------------------------------------------------------------- */

int ctl_enroll_token_create(struct store *st, const char *actor, const char *cluster, int64_t uses,
			    int64_t ttl_ms, int64_t now_ms, json_t **ret, struct ctl_error *err)
{
	char *token = NULL, id[17];
	json_t *doc;
	int r;

	if (!cluster || !ctl_valid_cluster_name(cluster))
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "cluster",
				     "bad cluster name");
	if (uses < 1 || uses > CTL_ENROLL_USES_MAX)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "uses",
				     "uses: expected an integer 1..%d", CTL_ENROLL_USES_MAX);
	if (ttl_ms < 1000 || ttl_ms > CTL_ENROLL_TTL_MAX_MS)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "ttl_ms",
				     "ttl_ms: expected an integer 1000..%lld",
				     (long long)CTL_ENROLL_TTL_MAX_MS);
	r = store_token_create_as(st, actor, cluster, ttl_ms, (int)uses, now_ms, &token);
	if (r == -RY_E_INVALID || r == -EINVAL)
		return ctl_error_set(err, r, CTL_ERR_INVALID, NULL, "bad cluster or actor");
	if (r < 0)
		return ctl_error_store(err, r, "enrollment token not created");
	if (store_enroll_token_id(token, id) < 0)
		id[0] = '\0';
	doc = json_pack("{s:s, s:s, s:s, s:I, s:I}", "token", token, "id", id, "cluster", cluster,
			"uses", (json_int_t)uses, "ttl_ms", (json_int_t)ttl_ms);
	wipe_free(token);
	if (!doc)
		return nomem(err);
	*ret = doc;
	return 0;
}

static const char *enroll_token_state(const struct store_enroll_token *t, int64_t now)
{
	if (t->revoked_at_ms)
		return "revoked";
	if (now >= t->expires_at_ms)
		return "expired";
	return t->uses_left > 0 ? "active" : "used";
}

int ctl_enroll_tokens_list(struct store *st, size_t limit, int64_t now_ms, json_t **ret,
			   struct ctl_error *err)
{
	struct store_enroll_token *v = NULL;
	size_t n = 0;
	json_t *arr;
	int r = store_enroll_tokens_list(st, limit, &v, &n);

	if (r < 0)
		return ctl_error_store(err, r, "enrollment tokens not read");
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		if (json_array_append_new(
			    arr, json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:i, s:i}", "id",
					   v[i].id, "cluster", v[i].cluster, "state",
					   enroll_token_state(&v[i], now_ms), "created_at_ms",
					   (json_int_t)v[i].created_at_ms, "expires_at_ms",
					   (json_int_t)v[i].expires_at_ms, "revoked_at_ms",
					   (json_int_t)v[i].revoked_at_ms, "uses_left",
					   v[i].uses_left, "uses_total", v[i].uses_total)) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	store_enroll_tokens_free(v, n);
	if (!arr)
		return nomem(err);
	*ret = arr;
	return 0;
}

int ctl_enroll_token_get(struct store *st, const char *id, json_t **ret, struct ctl_error *err)
{
	char *cluster = NULL;
	json_t *doc;
	int r = id ? store_enroll_token_cluster(st, id, &cluster) : -RY_E_NOT_FOUND;

	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "id", "no enrollment token %s",
				     id ? id : "");
	if (r < 0)
		return ctl_error_store(err, r, "enrollment token not read");
	doc = json_pack("{s:s, s:s}", "id", id, "cluster", cluster);
	free(cluster);
	if (!doc)
		return nomem(err);
	*ret = doc;
	return 0;
}

int ctl_enroll_token_revoke(struct store *st, const char *id, const char *actor, int64_t now_ms,
			    json_t **ret, struct ctl_error *err)
{
	json_t *doc = NULL;
	int r = ctl_enroll_token_get(st, id, &doc, err);

	if (r < 0)
		return r;
	r = store_enroll_token_revoke(st, id, actor, now_ms);
	if (r == -RY_E_NOT_FOUND) {
		json_decref(doc);
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "id", "no enrollment token %s", id);
	}
	if (r < 0) {
		json_decref(doc);
		return ctl_error_store(err, r, "enrollment token not revoked");
	}
	if (json_object_set_new(doc, "state", json_string("revoked")) < 0) {
		json_decref(doc);
		return nomem(err);
	}
	*ret = doc;
	return 0;
}

/* ---- audit log ----------------------------------------------------------------------------- */

int ctl_audit_list(struct store *st, size_t limit, json_t **ret, struct ctl_error *err)
{
	struct store_audit_entry *e = NULL;
	size_t n = 0;
	json_t *arr;
	int r;

	if (limit < 1)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "limit",
				     "limit: expected at least 1");
	r = store_audit_list(st, limit, &e, &n);
	if (r < 0)
		return ctl_error_store(err, r, "audit log not read");
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		if (json_array_append_new(
			    arr, json_pack("{s:I, s:s, s:s, s:s?, s:s, s:s?}", "at_ms",
					   (json_int_t)e[i].at_ms, "actor", e[i].actor, "action",
					   e[i].action, "target", e[i].target, "outcome",
					   e[i].outcome, "detail", e[i].detail)) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	store_audit_entries_free(e, n);
	if (!arr)
		return nomem(err);
	*ret = arr;
	return 0;
}
