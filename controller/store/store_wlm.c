/* The store: workload-manager bindings and the ledger of drains and resumes (schema v16;
 * store_wlm.h). A row is written ahead in its finding's transaction (store_wlm_enqueue_locked())
 * and moves once from pending to done, failed or not_ours. */
#include "controller/store/store_int.h"
#include "controller/store/store_wlm.h"
#include "controller/wlm/wlm.h"

#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

static struct store_sql SQL_BINDING_PUT = STORE_SQL(
	"INSERT INTO wlm_bindings (cluster_id, doc, updated_by, updated_at) VALUES (?1, ?2, ?3, "
	"?4) "
	"ON CONFLICT (cluster_id) DO UPDATE SET doc = ?2, updated_by = ?3, updated_at = ?4");
static struct store_sql SQL_BINDING_GET =
	STORE_SQL("SELECT c.name, b.doc, b.updated_by, b.updated_at FROM wlm_bindings b "
		  "JOIN clusters c ON c.id = b.cluster_id WHERE c.name = ?1");
static struct store_sql SQL_BINDING_DOC =
	STORE_SQL("SELECT doc FROM wlm_bindings WHERE cluster_id = ?1");
static struct store_sql SQL_BINDING_DELETE =
	STORE_SQL("DELETE FROM wlm_bindings WHERE cluster_id = ?1");
static struct store_sql SQL_BOUND = STORE_SQL(
	"SELECT c.name FROM wlm_bindings b JOIN clusters c ON c.id = b.cluster_id ORDER BY c.name");
static struct store_sql SQL_ACTION_INSERT = STORE_SQL(
	"INSERT INTO wlm_actions (cluster_id, node_id, hostname, wlm_name, action, reason, source, "
	"source_id, state, created_at, next_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'pending', "
	"?9, ?9)");
#define ACTION_COLUMNS                                                                             \
	"SELECT a.id, c.name, a.node_id, a.hostname, a.wlm_name, a.action, a.reason, a.source, "   \
	"a.source_id, a.state, a.result, a.attempts, a.created_at, a.next_at, a.done_at "          \
	"FROM wlm_actions a JOIN clusters c ON c.id = a.cluster_id "
static struct store_sql SQL_ACTIONS = STORE_SQL(
	ACTION_COLUMNS "WHERE (?1 IS NULL OR c.name = ?1) AND (?2 IS NULL OR a.state = ?2) "
		       "ORDER BY a.id DESC LIMIT ?3");
static struct store_sql SQL_BY_SOURCE =
	STORE_SQL(ACTION_COLUMNS "WHERE a.source = ?1 AND a.source_id = ?2 ORDER BY a.id");
static struct store_sql SQL_PENDING =
	STORE_SQL(ACTION_COLUMNS "WHERE a.state = 'pending' ORDER BY a.id LIMIT ?1");
static struct store_sql SQL_ACTION_RESULT = STORE_SQL(
	"UPDATE wlm_actions SET state = ?2, result = ?3, attempts = attempts + 1, next_at = ?4, "
	"done_at = CASE WHEN ?2 = 'pending' THEN NULL ELSE ?5 END "
	"WHERE id = ?1 AND state = 'pending'");
static struct store_sql SQL_DRAINED_BY_US = STORE_SQL(
	"SELECT a.action FROM wlm_actions a JOIN clusters c ON c.id = a.cluster_id "
	"WHERE c.name = ?1 AND a.wlm_name = ?2 AND a.state = 'done' ORDER BY a.id DESC LIMIT 1");

void store_wlm_binding_free(struct store_wlm_binding *b)
{
	if (!b)
		return;
	free(b->cluster);
	free(b->doc_json);
	free(b->updated_by);
	free(b);
}

int store_wlm_binding_put(struct store *s, const char *cluster, const char *doc_json,
			  const char *actor, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int64_t cid = 0;
	int r;

	if (!s || !doc_json || !actor)
		return -EINVAL;
	if (!store_text_ok(cluster, STORE_TEXT_MAX))
		return -RY_E_INVALID;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r >= 0)
		r = store_cluster_ensure_locked(c, cluster, now_ms, &cid);
	if (r >= 0)
		r = store_q_exec(c, NULL, &SQL_BINDING_PUT, "lttl", cid, doc_json, actor, now_ms);
	if (r >= 0)
		r = store_audit_locked(c, now_ms, actor, "cluster.wlm.set", cluster, "ok", NULL);
	if (r < 0)
		store_tx_rollback(c);
	else
		r = store_tx_commit(c);
	pthread_mutex_unlock(&c->lock);
	return r < 0 ? r : 0;
}

static int binding_row(sqlite3_stmt *st, void *ret)
{
	struct store_wlm_binding *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	if (store_col_dup(st, 0, &b->cluster) < 0 || store_col_dup(st, 1, &b->doc_json) < 0 ||
	    store_col_dup(st, 2, &b->updated_by) < 0) {
		store_wlm_binding_free(b);
		return -ENOMEM;
	}
	b->updated_at = sqlite3_column_int64(st, 3);
	*(struct store_wlm_binding **)ret = b;
	return 0;
}

int store_wlm_binding_get(struct store *s, const char *cluster, struct store_wlm_binding **ret)
{
	if (!s || !cluster || !ret)
		return -EINVAL;
	return store_q_row(&s->r, &SQL_BINDING_GET, cluster, binding_row, ret);
}

int store_wlm_binding_delete(struct store *s, const char *cluster, const char *actor,
			     int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int64_t cid = 0;
	int changes = 0, r;

	if (!s || !cluster || !actor)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r >= 0) {
		r = store_cluster_id_locked(c, cluster, &cid);
		if (r == -RY_E_NOT_FOUND)
			r = 0; /* no such cluster: nothing bound */
		else if (r >= 0)
			r = store_q_exec(c, &changes, &SQL_BINDING_DELETE, "l", cid);
	}
	if (r >= 0 && changes > 0)
		r = store_audit_locked(c, now_ms, actor, "cluster.wlm.unset", cluster, "ok", NULL);
	if (r < 0)
		store_tx_rollback(c);
	else
		r = store_tx_commit(c);
	pthread_mutex_unlock(&c->lock);
	return r < 0 ? r : changes > 0;
}

static int name_row(sqlite3_stmt *st, void *elem)
{
	return store_col_dup(st, 0, (char **)elem);
}

static void names_free(void *v, size_t n)
{
	char **s = v;

	for (size_t i = 0; s && i < n; i++)
		free(s[i]);
	free(s);
}

int store_wlm_bound_clusters(struct store *s, char ***ret, size_t *ret_n)
{
	if (!s || !ret || !ret_n)
		return -EINVAL;
	return store_q_list(&s->r, &SQL_BOUND, sizeof(char *), name_row, names_free, (void **)ret,
			    ret_n, "");
}

static bool one_of(const char *v, const char *const *set)
{
	for (; v && *set; set++)
		if (strcmp(v, *set) == 0)
			return true;
	return false;
}

int store_wlm_enqueue_locked(struct store_conn *c, const struct store_wlm_intent *a, int64_t now_ms)
{
	static const char *const actions[] = {"drain", "resume", NULL};
	static const char *const sources[] = {"campaign", "deployment", "maintenance", "health",
					      NULL};
	struct wlm_binding b = {0};
	char name[WLM_NAME_MAX + 1], reason[WLM_REASON_MAX + 1], *doc = NULL;
	int64_t cid = 0;
	int r;

	if (!c || !a)
		return -EINVAL;
	if (!a->cluster || !a->hostname || !one_of(a->action, actions) ||
	    !one_of(a->source, sources) || !store_text_ok(a->source_id, STORE_TEXT_MAX) ||
	    !store_text_ok(a->hostname, STORE_TEXT_MAX))
		return -RY_E_INVALID;
	r = store_cluster_id_locked(c, a->cluster, &cid);
	if (r == -RY_E_NOT_FOUND)
		return 0;
	if (r < 0)
		return r;
	{
		sqlite3_stmt *st = NULL;

		r = store_q_start(c, &SQL_BINDING_DOC, &st, "l", cid);
		if (r >= 0)
			r = store_q_step(c, st);
		if (r == 1 && store_col_dup(st, 0, &doc) < 0)
			r = -ENOMEM;
		store_q_end(st);
	}
	if (r <= 0)
		return r; /* 0: not bound */
	/* The map alone is read here: the document was validated when it was stored. */
	{
		json_t *d = json_loads(doc, 0, NULL);

		b.node_map = json_object_get(d, "node_map");
		r = wlm_node_name(&b, a->hostname, name, sizeof(name));
		json_decref(d);
	}
	free(doc);
	if (r < 0)
		return -RY_E_INVALID;
	if (strcmp(a->action, "drain") == 0)
		wlm_reason_fit(reason, sizeof(reason), a->source, a->source_id, a->finding);
	else
		snprintf(reason, sizeof(reason), "%s", a->finding ? a->finding : "");
	r = store_q_exec(c, NULL, &SQL_ACTION_INSERT, "ltttttttl", cid, a->node_id, a->hostname,
			 name, a->action, reason, a->source, a->source_id, now_ms);
	return r < 0 ? r : 1;
}

int store_wlm_enqueue(struct store *s, const struct store_wlm_intent *a, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int r;

	if (!s || !a)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r >= 0)
		r = store_wlm_enqueue_locked(c, a, now_ms);
	if (r <= 0)
		store_tx_rollback(c);
	else {
		int rc = store_tx_commit(c);

		if (rc < 0)
			r = rc;
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

static struct store_sql SQL_CAMPAIGN_CLUSTER =
	STORE_SQL("SELECT cl.name FROM campaigns ca JOIN clusters cl ON cl.id = ca.cluster_id "
		  "WHERE ca.id = ?1");
static struct store_sql SQL_DEPLOY_NODE_FAILED =
	STORE_SQL("SELECT cl.name, dn.hostname, dn.message FROM deployment_nodes dn "
		  "JOIN deployments d ON d.id = dn.deployment_id "
		  "JOIN clusters cl ON cl.id = d.cluster_id "
		  "WHERE dn.deployment_id = ?1 AND dn.node_id = ?2 AND dn.state = 'failed' "
		  "AND d.check_mode = 0");

/* The first column of q's first row (bound from fmt) as a copy in *ret; 0 none. */
static int first_text(struct store_conn *c, struct store_sql *q, char **ret, const char *a,
		      const char *b)
{
	sqlite3_stmt *st = NULL;
	int r = b ? store_q_start(c, q, &st, "tt", a, b) : store_q_start(c, q, &st, "t", a);

	*ret = NULL;
	if (r >= 0)
		r = store_q_step(c, st);
	if (r == 1)
		r = store_col_dup(st, 0, ret) < 0 ? -ENOMEM : 1;
	store_q_end(st);
	return r;
}

int store_wlm_enqueue_verdict_locked(struct store_conn *c, const char *campaign_id,
				     const char *state, const char *verdict_json, int64_t now_ms)
{
	char *cluster = NULL;
	json_t *v = NULL, *node;
	const char *result;
	size_t i;
	int r;

	if (!verdict_json || !state ||
	    (strcmp(state, "passed") != 0 && strcmp(state, "failed") != 0))
		return 0; /* cancelled, error: no verdict to act on */
	r = first_text(c, &SQL_CAMPAIGN_CLUSTER, &cluster, campaign_id, NULL);
	if (r <= 0)
		return r;
	v = json_loads(verdict_json, 0, NULL);
	result = json_string_value(json_object_get(v, "result"));
	if (!v || !result || strcmp(result, "incomplete") == 0) {
		json_decref(v);
		free(cluster);
		return 0;
	}
	r = 0;
	json_array_foreach(json_object_get(v, "nodes"), i, node)
	{
		const char *nr = json_string_value(json_object_get(node, "result"));
		const char *host = json_string_value(json_object_get(node, "hostname"));
		const char *why =
			json_string_value(json_array_get(json_object_get(node, "reasons"), 0));
		char finding[512];
		struct store_wlm_intent a = {
			.cluster = cluster,
			.node_id = json_string_value(json_object_get(node, "id")),
			.hostname = host,
			.source = "campaign",
			.source_id = campaign_id,
			.finding = finding,
		};

		if (!nr || !host)
			continue;
		if (strcmp(nr, "pass") == 0) {
			a.action = "resume";
			snprintf(finding, sizeof(finding), "passed campaign %s", campaign_id);
		} else {
			/* fail or excluded: the host and its first reason, the rest in the verdict
			 */
			a.action = "drain";
			snprintf(finding, sizeof(finding), "%s%s %s", host,
				 strcmp(nr, "excluded") == 0 ? " excluded:" : "",
				 why ? why : "failed the verdict");
		}
		r = store_wlm_enqueue_locked(c, &a, now_ms);
		if (r == -RY_E_INVALID)
			r = 0; /* a host name that maps to no WLM name: nothing to drain */
		if (r < 0)
			break;
	}
	json_decref(v);
	free(cluster);
	return r < 0 ? r : 0;
}

int store_wlm_enqueue_deploy_failed_locked(struct store_conn *c, const char *deployment_id,
					   const char *node_id, int64_t now_ms)
{
	sqlite3_stmt *st = NULL;
	int r = store_q_start(c, &SQL_DEPLOY_NODE_FAILED, &st, "tt", deployment_id, node_id);

	if (r >= 0)
		r = store_q_step(c, st);
	if (r == 1) {
		const char *host = (const char *)sqlite3_column_text(st, 1);
		const char *msg = (const char *)sqlite3_column_text(st, 2);
		char finding[512];
		struct store_wlm_intent a = {
			.cluster = (const char *)sqlite3_column_text(st, 0),
			.node_id = node_id,
			.hostname = host,
			.action = "drain",
			.source = "deployment",
			.source_id = deployment_id,
			.finding = finding,
		};

		snprintf(finding, sizeof(finding), "%s failed: %s", host ? host : node_id,
			 msg && *msg ? msg : "the plan failed");
		/* The statement stays open while the row is inserted: its text is borrowed. */
		r = store_wlm_enqueue_locked(c, &a, now_ms);
		if (r == -RY_E_INVALID)
			r = 0;
	}
	store_q_end(st);
	return r < 0 ? r : 0;
}

void store_wlm_actions_free(struct store_wlm_action *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].cluster);
		free(v[i].node_id);
		free(v[i].hostname);
		free(v[i].wlm_name);
		free(v[i].action);
		free(v[i].reason);
		free(v[i].source);
		free(v[i].source_id);
		free(v[i].state);
		free(v[i].result);
	}
	free(v);
}

static void actions_free_v(void *v, size_t n)
{
	store_wlm_actions_free(v, n);
}

static int action_row(sqlite3_stmt *st, void *elem)
{
	struct store_wlm_action *a = elem;

	a->id = sqlite3_column_int64(st, 0);
	if (store_col_dup(st, 1, &a->cluster) < 0 || store_col_dup(st, 2, &a->node_id) < 0 ||
	    store_col_dup(st, 3, &a->hostname) < 0 || store_col_dup(st, 4, &a->wlm_name) < 0 ||
	    store_col_dup(st, 5, &a->action) < 0 || store_col_dup(st, 6, &a->reason) < 0 ||
	    store_col_dup(st, 7, &a->source) < 0 || store_col_dup(st, 8, &a->source_id) < 0 ||
	    store_col_dup(st, 9, &a->state) < 0 || store_col_dup(st, 10, &a->result) < 0)
		return -ENOMEM;
	a->attempts = sqlite3_column_int(st, 11);
	a->created_at = sqlite3_column_int64(st, 12);
	a->next_at = sqlite3_column_int64(st, 13);
	a->done_at = sqlite3_column_int64(st, 14);
	return 0;
}

int store_wlm_actions(struct store *s, const char *cluster, const char *state, size_t limit,
		      struct store_wlm_action **ret, size_t *ret_n)
{
	if (!s || !ret || !ret_n)
		return -EINVAL;
	return store_q_list(&s->r, &SQL_ACTIONS, sizeof(struct store_wlm_action), action_row,
			    actions_free_v, (void **)ret, ret_n, "ttl", cluster, state,
			    (int64_t)(limit ? limit : 1000));
}

int store_wlm_actions_by_source(struct store *s, const char *source, const char *source_id,
				struct store_wlm_action **ret, size_t *ret_n)
{
	if (!s || !source || !source_id || !ret || !ret_n)
		return -EINVAL;
	return store_q_list(&s->r, &SQL_BY_SOURCE, sizeof(struct store_wlm_action), action_row,
			    actions_free_v, (void **)ret, ret_n, "tt", source, source_id);
}

int store_wlm_pending(struct store *s, size_t limit, struct store_wlm_action **ret, size_t *ret_n)
{
	if (!s || !ret || !ret_n)
		return -EINVAL;
	return store_q_list(&s->r, &SQL_PENDING, sizeof(struct store_wlm_action), action_row,
			    actions_free_v, (void **)ret, ret_n, "l",
			    (int64_t)(limit ? limit : 100));
}

int store_wlm_action_result(struct store *s, int64_t id, const char *state, const char *result,
			    int64_t next_at, int64_t now_ms)
{
	static const char *const states[] = {"pending", "done", "failed", "not_ours", NULL};
	struct store_conn *c = &s->w;
	int changes = 0, r;

	if (!s || !one_of(state, states))
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r >= 0)
		r = store_q_exec(c, &changes, &SQL_ACTION_RESULT, "lttll", id, state, result,
				 next_at, now_ms);
	if (r < 0)
		store_tx_rollback(c);
	else
		r = store_tx_commit(c);
	pthread_mutex_unlock(&c->lock);
	return r < 0 ? r : changes > 0;
}

int store_wlm_drained_by_us(struct store *s, const char *cluster, const char *wlm_name)
{
	struct store_conn *c = &s->r;
	sqlite3_stmt *st = NULL;
	int r;

	if (!s || !cluster || !wlm_name)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_q_start(c, &SQL_DRAINED_BY_US, &st, "tt", cluster, wlm_name);
	if (r >= 0) {
		r = store_q_step(c, st);
		if (r == 1)
			r = strcmp((const char *)sqlite3_column_text(st, 0), "drain") == 0;
	}
	store_q_end(st);
	pthread_mutex_unlock(&c->lock);
	return r;
}
