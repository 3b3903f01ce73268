/* The store: benchmark runs between two nodes. */
#include "controller/store/store_bench.h"
#include "controller/store/store_int.h"

#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* Columns read by bench_from_row(), in this order. */
#define BENCH_COLUMNS                                                                              \
	"SELECT id, kind, transport, client_node, server_node, server_address, params, state, "    \
	"server_port, result, server_result, error, deadline_ms, created_at, finished_at, "        \
	"cancel_requested_at, campaign_id, actor, (SELECT c.name FROM nodes n JOIN clusters c "    \
	"ON c.id = n.cluster_id WHERE n.id = bench_runs.client_node) FROM bench_runs "

static struct store_sql SQL_BENCH_CANCEL =
	STORE_SQL("UPDATE bench_runs SET cancel_requested_at = COALESCE(cancel_requested_at, ?2) "
		  "WHERE id = ?1 AND state NOT IN ('succeeded', 'failed', 'cancelled')");
static struct store_sql SQL_BENCH_GET = STORE_SQL(BENCH_COLUMNS "WHERE id = ?1");
static struct store_sql SQL_BENCH_INSERT =
	STORE_SQL("INSERT INTO bench_runs (id, kind, transport, client_node, "
		  "server_node, params, state, deadline_ms, created_at, campaign_id, "
		  "server_address, actor) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', ?7, ?8, ?9, "
		  "?10, ?11)");
static struct store_sql SQL_BENCH_LIST =
	STORE_SQL(BENCH_COLUMNS "ORDER BY created_at DESC, id LIMIT ?1");
static struct store_sql SQL_BENCH_LIST_ACTIVE = STORE_SQL(
	BENCH_COLUMNS
	"WHERE state NOT IN ('succeeded', 'failed', 'cancelled') ORDER BY created_at, id");
static struct store_sql SQL_BENCH_UPDATE = STORE_SQL(
	"UPDATE bench_runs SET state = ?2, server_address = COALESCE(?3, server_address), "
	"server_port = COALESCE(?4, server_port), result = COALESCE(?5, result), "
	"server_result = COALESCE(?6, server_result), error = COALESCE(?7, error), "
	"finished_at = CASE WHEN ?2 IN ('succeeded', 'failed', 'cancelled') THEN ?8 "
	"ELSE NULL END "
	"WHERE id = ?1 AND state NOT IN ('succeeded', 'failed', 'cancelled')");

static void bench_runs_free_v(void *v, size_t n)
{
	store_bench_runs_free(v, n);
}

/* ---- benchmark runs -------------------------------------------------------------------------- */

int store_bench_insert_locked(struct store_conn *c, const struct store_bench_new *b,
			      const char *campaign_id, int64_t now_ms)
{
	if (!store_text_ok(b->id, STORE_TEXT_MAX) || !store_text_ok(b->kind, STORE_TEXT_MAX) ||
	    !store_text_ok(b->transport, STORE_TEXT_MAX) ||
	    !store_text_ok(b->client_node, STORE_TEXT_MAX) ||
	    !store_text_ok(b->server_node, STORE_TEXT_MAX) || !b->params_json ||
	    b->deadline_ms <= 0 || (b->server_address && !store_text_ok(b->server_address, 300)) ||
	    (b->actor && !store_text_ok(b->actor, STORE_TEXT_MAX)))
		return -EINVAL;
	return store_q_exec(c, NULL, &SQL_BENCH_INSERT, "ttttttllttt", b->id, b->kind, b->transport,
			    b->client_node, b->server_node, b->params_json, b->deadline_ms, now_ms,
			    campaign_id, b->server_address, b->actor);
}

int store_bench_create(struct store *s, const char *id, const char *kind, const char *transport,
		       const char *client_node, const char *server_node, const char *params_json,
		       int64_t deadline_ms, int64_t now_ms)
{
	struct store_bench_new b = {id,		 kind, transport,   client_node, server_node,
				    params_json, NULL, deadline_ms, NULL};
	struct store_conn *c = &s->w;
	int r;

	if (!s)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_bench_insert_locked(c, &b, NULL, now_ms);
	pthread_mutex_unlock(&c->lock);
	return r;
}

int store_bench_create_new(struct store *s, const struct store_bench_new *b, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int r;

	if (!s || !b)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto out;
	r = store_bench_insert_locked(c, b, NULL, now_ms);
	/* A run someone ordered is audited; the campaigns' own runs are not (their campaign is). */
	if (r >= 0 && b->actor)
		r = store_audit_locked(c, now_ms, b->actor, "bench.create", b->id, "created",
				       b->kind);
	if (r < 0) {
		store_tx_rollback(c);
		goto out;
	}
	r = store_tx_commit(c);
out:
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
	free(b->campaign_id);
	free(b->actor);
	free(b->cluster);
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
	if (store_col_dup(st, 0, &b->id) < 0 || store_col_dup(st, 1, &b->kind) < 0 ||
	    store_col_dup(st, 2, &b->transport) < 0 || store_col_dup(st, 3, &b->client_node) < 0 ||
	    store_col_dup(st, 4, &b->server_node) < 0 ||
	    store_col_dup(st, 5, &b->server_address) < 0 ||
	    store_col_dup(st, 6, &b->params_json) < 0 || store_col_dup(st, 7, &b->state) < 0 ||
	    store_col_dup(st, 9, &b->result_json) < 0 ||
	    store_col_dup(st, 10, &b->server_result_json) < 0 ||
	    store_col_dup(st, 11, &b->error) < 0 || store_col_dup(st, 16, &b->campaign_id) < 0 ||
	    store_col_dup(st, 17, &b->actor) < 0 || store_col_dup(st, 18, &b->cluster) < 0) {
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

static int bench_row(sqlite3_stmt *st, void *elem)
{
	return bench_from_row(st, elem);
}

int store_bench_get(struct store *s, const char *id, struct store_bench_run **ret)
{
	if (!s || !id || !ret)
		return -EINVAL;
	return store_q_row(&s->r, &SQL_BENCH_GET, id, bench_row, ret);
}

int store_bench_list(struct store *s, bool active_only, size_t limit, struct store_bench_run ***ret,
		     size_t *ret_n)
{
	if (!s || !ret || !ret_n)
		return -EINVAL;
	if (active_only)
		return store_q_list(&s->r, &SQL_BENCH_LIST_ACTIVE, sizeof(struct store_bench_run *),
				    bench_row, bench_runs_free_v, (void **)ret, ret_n, "");
	return store_q_list(&s->r, &SQL_BENCH_LIST, sizeof(struct store_bench_run *), bench_row,
			    bench_runs_free_v, (void **)ret, ret_n, "l",
			    (int64_t)(limit ? limit : 50));
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
	r = store_q_start(c, &SQL_BENCH_UPDATE, &st, "tttltttl", id, state, server_address,
			  (int64_t)server_port, result_json, server_result_json, error, now_ms);
	if (r >= 0) {
		/* A zero port means "keep": bind NULL in its place. */
		if (server_port == 0)
			sqlite3_bind_null(st, 4);
		r = store_q_step(c, st);
		if (r >= 0)
			changes = sqlite3_changes(c->db);
	}
	store_q_end(st);
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

int store_bench_request_cancel(struct store *s, const char *id, const char *actor, int64_t now_ms)
{
	struct store_bench_run *b = NULL;
	int r;

	if (!s || !id)
		return -EINVAL;
	r = store_cancel_request(s, &SQL_BENCH_CANCEL, id, actor, "bench.cancel", now_ms);
	if (r != 0)
		return r;
	/* Nothing moved: finished, or no such run. */
	r = store_bench_get(s, id, &b);
	store_bench_run_free(b);
	return r < 0 ? r : 0;
}
