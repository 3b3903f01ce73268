/* The store: validation campaigns (the spec, nodes and seed their schedule is regenerated from,
 * a cursor, the verdict) and their result rows, one per scheduled slot, each started together
 * with the benchmark run that measures it. */
#include "controller/store/store_bench.h"
#include "controller/store/store_campaign.h"
#include "controller/store/store_int.h"

#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Columns read by campaign_from_row(), in this order. */
#define CAMPAIGN_COLUMNS                                                                           \
	"SELECT m.id, c.name, m.actor, p.name, p.version, p.sha256, m.spec, m.nodes, "             \
	"m.left_out, m.options, m.progress, m.state, m.verdict, m.error, m.seed, m.test_idx, "     \
	"m.round, m.round_started_at, m.cancel_requested_at, m.created_at, m.finished_at "         \
	"FROM campaigns m JOIN clusters c ON c.id = m.cluster_id "                                 \
	"JOIN playbooks p ON p.id = m.playbook_id "

/* Columns read by row_from_stmt(), in this order. */
#define ROW_COLUMNS                                                                                \
	"SELECT test_idx, round, slot, phase, role, node_a, node_b, rail, bench_id, state, "       \
	"summary, error, started_at, live_at, finished_at FROM campaign_results "

#define ROW_FINAL "('done', 'failed', 'missing', 'cancelled')"

static struct store_sql SQL_CAMPAIGN_ADVANCE =
	STORE_SQL("UPDATE campaigns SET test_idx = ?2, round = ?3, "
		  "progress = COALESCE(?4, progress), round_started_at = NULL "
		  "WHERE id = ?1 AND state = 'running'");
static struct store_sql SQL_CAMPAIGN_CANCEL =
	STORE_SQL("UPDATE campaigns SET cancel_requested_at = COALESCE(cancel_requested_at, ?2) "
		  "WHERE id = ?1 AND state = 'running'");
static struct store_sql SQL_CAMPAIGN_CURSOR =
	STORE_SQL("SELECT test_idx, round FROM campaigns WHERE id = ?1 AND state = 'running'");
static struct store_sql SQL_CAMPAIGN_COUNTS =
	STORE_SQL("SELECT test_idx, state, count(*) FROM campaign_results "
		  "WHERE campaign_id = ?1 GROUP BY test_idx, state ORDER BY test_idx, state");
static struct store_sql SQL_CAMPAIGN_FINISH =
	STORE_SQL("UPDATE campaigns SET state = ?2, verdict = COALESCE(?3, verdict), "
		  "error = COALESCE(?4, error), finished_at = ?5 "
		  "WHERE id = ?1 AND state = 'running'");
static struct store_sql SQL_CAMPAIGN_GET = STORE_SQL(CAMPAIGN_COLUMNS "WHERE m.id = ?1");
static struct store_sql SQL_CAMPAIGN_INSERT =
	STORE_SQL("INSERT INTO campaigns (id, cluster_id, playbook_id, actor, spec, nodes, "
		  "left_out, options, progress, seed, state, created_at) "
		  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'running', ?11)");
static struct store_sql SQL_CAMPAIGN_LIST =
	STORE_SQL(CAMPAIGN_COLUMNS "ORDER BY m.created_at DESC, m.id LIMIT ?1");
static struct store_sql SQL_CAMPAIGN_LIST_ACTIVE =
	STORE_SQL(CAMPAIGN_COLUMNS "WHERE m.state = 'running' ORDER BY m.created_at, m.id");
static struct store_sql SQL_CAMPAIGN_ROUND_STAMP =
	STORE_SQL("UPDATE campaigns SET round_started_at = COALESCE(round_started_at, ?2) "
		  "WHERE id = ?1");
static struct store_sql SQL_ROW_INSERT = STORE_SQL(
	"INSERT INTO campaign_results (campaign_id, test_idx, round, slot, phase, role, node_a, "
	"node_b, rail, state, error, finished_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
	"NULLIF(?9, -1), ?10, ?11, CASE WHEN ?10 = 'missing' THEN ?12 END) ON CONFLICT DO NOTHING");
static struct store_sql SQL_ROW_START =
	STORE_SQL("UPDATE campaign_results SET state = 'running', bench_id = ?5, started_at = ?6 "
		  "WHERE campaign_id = ?1 AND test_idx = ?2 AND round = ?3 AND slot = ?4 "
		  "AND state = 'pending'");
static struct store_sql SQL_ROW_UPDATE =
	STORE_SQL("UPDATE campaign_results SET state = ?5, summary = COALESCE(?6, summary), "
		  "error = COALESCE(?7, error), "
		  "live_at = CASE WHEN ?8 THEN COALESCE(live_at, ?9) ELSE live_at END, "
		  "finished_at = CASE WHEN ?5 IN " ROW_FINAL " THEN ?10 ELSE NULL END "
		  "WHERE campaign_id = ?1 AND test_idx = ?2 AND round = ?3 AND slot = ?4 "
		  "AND state NOT IN " ROW_FINAL);
static struct store_sql SQL_ROWS =
	STORE_SQL(ROW_COLUMNS
		  "WHERE campaign_id = ?1 AND (?2 < 0 OR test_idx = ?2) AND (?3 < 0 OR round = ?3) "
		  "ORDER BY test_idx, round, slot");

static bool one_of(const char *s, const char *const *set, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		if (strcmp(s, set[i]) == 0)
			return true;
	return false;
}

bool store_campaign_state_final(const char *state)
{
	static const char *const f[] = {"passed", "failed", "cancelled", "error"};

	return one_of(state, f, RY_ARRAY_SIZE(f));
}

bool store_campaign_row_final(const char *state)
{
	static const char *const f[] = {"done", "failed", "missing", "cancelled", "invalid"};

	return one_of(state, f, RY_ARRAY_SIZE(f));
}

static bool row_state_ok(const char *state)
{
	static const char *const all[] = {"pending", "running",	  "done",   "failed",
					  "missing", "cancelled", "invalid"};

	return one_of(state, all, RY_ARRAY_SIZE(all));
}

int store_campaign_create(struct store *s, const struct store_campaign_new *m, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int64_t cluster_id = 0, playbook_id = 0;
	int r;

	if (!s || !m || !store_text_ok(m->id, STORE_TEXT_MAX) ||
	    !store_text_ok(m->cluster, STORE_TEXT_MAX) ||
	    !store_text_ok(m->actor, STORE_TEXT_MAX) ||
	    !store_text_ok(m->playbook_name, STORE_TEXT_MAX) ||
	    !store_text_ok(m->playbook_version, STORE_TEXT_MAX) ||
	    !store_text_ok(m->playbook_sha256, STORE_TEXT_MAX) || !m->playbook_text ||
	    !m->spec_json || !m->nodes_json || !m->left_out_json || !m->options_json ||
	    !m->progress_json)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto out;
	r = store_cluster_id_locked(c, m->cluster, &cluster_id);
	if (r >= 0)
		r = store_playbook_put_locked(c, m->playbook_name, m->playbook_version,
					      m->playbook_sha256, m->playbook_text, now_ms,
					      &playbook_id);
	if (r >= 0)
		r = store_q_exec(c, NULL, &SQL_CAMPAIGN_INSERT, "tllttttttll", m->id, cluster_id,
				 playbook_id, m->actor, m->spec_json, m->nodes_json,
				 m->left_out_json, m->options_json, m->progress_json, m->seed,
				 now_ms);
	if (r >= 0)
		r = store_audit_locked(c, now_ms, m->actor, "campaign.create", m->id, "created",
				       m->playbook_name);
	if (r < 0) {
		store_tx_rollback(c);
		goto out;
	}
	r = store_tx_commit(c);
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

void store_campaign_free(struct store_campaign *m)
{
	if (!m)
		return;
	free(m->id);
	free(m->cluster);
	free(m->actor);
	free(m->playbook_name);
	free(m->playbook_version);
	free(m->playbook_sha256);
	free(m->spec_json);
	free(m->nodes_json);
	free(m->left_out_json);
	free(m->options_json);
	free(m->progress_json);
	free(m->state);
	free(m->verdict_json);
	free(m->error);
	free(m);
}

void store_campaigns_free(struct store_campaign **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		store_campaign_free(v[i]);
	free(v);
}

static int campaign_from_row(sqlite3_stmt *st, void *elem)
{
	struct store_campaign *m = calloc(1, sizeof(*m));
	char **text[] = {&m->id,
			 &m->cluster,
			 &m->actor,
			 &m->playbook_name,
			 &m->playbook_version,
			 &m->playbook_sha256,
			 &m->spec_json,
			 &m->nodes_json,
			 &m->left_out_json,
			 &m->options_json,
			 &m->progress_json,
			 &m->state,
			 &m->verdict_json,
			 &m->error};

	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < RY_ARRAY_SIZE(text); i++) {
		if (store_col_dup(st, (int)i, text[i]) < 0) {
			store_campaign_free(m);
			return -ENOMEM;
		}
	}
	m->seed = sqlite3_column_int64(st, 14);
	m->test_idx = sqlite3_column_int(st, 15);
	m->round = sqlite3_column_int(st, 16);
	m->round_started_ms = sqlite3_column_int64(st, 17);
	m->cancel_requested_ms = sqlite3_column_int64(st, 18);
	m->created_at_ms = sqlite3_column_int64(st, 19);
	m->finished_at_ms = sqlite3_column_int64(st, 20);
	*(struct store_campaign **)elem = m;
	return 0;
}

static void campaigns_free_v(void *v, size_t n)
{
	store_campaigns_free(v, n);
}

int store_campaign_get(struct store *s, const char *id, struct store_campaign **ret)
{
	struct store_campaign **v = NULL;
	size_t n = 0;
	int r;

	if (!s || !id || !ret)
		return -EINVAL;
	r = store_q_list(&s->r, &SQL_CAMPAIGN_GET, sizeof(*v), campaign_from_row, campaigns_free_v,
			 (void **)&v, &n, "t", id);
	if (r < 0)
		return r;
	if (n == 0) {
		free(v);
		return -RY_E_NOT_FOUND;
	}
	*ret = v[0];
	free(v);
	return 0;
}

int store_campaigns_list(struct store *s, bool active_only, size_t limit,
			 struct store_campaign ***ret, size_t *ret_n)
{
	if (!s || !ret || !ret_n)
		return -EINVAL;
	if (active_only)
		return store_q_list(&s->r, &SQL_CAMPAIGN_LIST_ACTIVE,
				    sizeof(struct store_campaign *), campaign_from_row,
				    campaigns_free_v, (void **)ret, ret_n, "");
	return store_q_list(&s->r, &SQL_CAMPAIGN_LIST, sizeof(struct store_campaign *),
			    campaign_from_row, campaigns_free_v, (void **)ret, ret_n, "l",
			    (int64_t)(limit ? limit : 50));
}

/* Run one update on the writer; 1 when a row changed, 0 when none did. */
static int update1(struct store *s, struct store_sql *q, const char *fmt, ...)
{
	struct store_conn *c = &s->w;
	sqlite3_stmt *st = NULL;
	va_list ap;
	int r;

	pthread_mutex_lock(&c->lock);
	va_start(ap, fmt);
	r = store_q_vstart(c, q, &st, fmt, ap);
	va_end(ap);
	if (r >= 0)
		r = store_q_step(c, st);
	if (r >= 0)
		r = sqlite3_changes(c->db) > 0 ? 1 : 0;
	store_q_end(st);
	pthread_mutex_unlock(&c->lock);
	return r;
}

int store_campaign_advance(struct store *s, const char *id, int test_idx, int round,
			   const char *progress_json, int64_t now_ms)
{
	(void)now_ms;
	if (!s || !id || test_idx < 0 || round < 0)
		return -EINVAL;
	return update1(s, &SQL_CAMPAIGN_ADVANCE, "tllt", id, (int64_t)test_idx, (int64_t)round,
		       progress_json);
}

int store_campaign_finish(struct store *s, const char *id, const char *state,
			  const char *verdict_json, const char *error, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int changes = 0, r;

	if (!s || !id || !store_campaign_state_final(state))
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r >= 0)
		r = store_q_exec(c, &changes, &SQL_CAMPAIGN_FINISH, "ttttl", id, state,
				 verdict_json, error, now_ms);
	if (r >= 0 && changes > 0)
		r = store_audit_locked(c, now_ms, "controller", "campaign.finish", id, state,
				       error);
	/* The verdict's bad nodes drained, its passing ones resumed if ours, where the cluster
	 * is bound: written ahead with the verdict (store_wlm.h). */
	if (r >= 0 && changes > 0)
		r = store_wlm_enqueue_verdict_locked(c, id, state, verdict_json, now_ms);
	if (r < 0)
		store_tx_rollback(c);
	else
		r = store_tx_commit(c);
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	return changes > 0 ? 1 : 0;
}

int store_campaign_request_cancel(struct store *s, const char *id, const char *actor,
				  int64_t now_ms)
{
	struct store_campaign *m = NULL;
	int r;

	if (!s || !id)
		return -EINVAL;
	r = store_cancel_request(s, &SQL_CAMPAIGN_CANCEL, id, actor, "campaign.cancel", now_ms);
	if (r != 0)
		return r;
	/* Nothing moved: finished, or no such campaign. */
	r = store_campaign_get(s, id, &m);
	store_campaign_free(m);
	return r < 0 ? r : 0;
}

/* Is the campaign running with its cursor at (test_idx, round)? Caller holds c->lock. */
static int cursor_at(struct store_conn *c, const char *id, int test_idx, int round)
{
	sqlite3_stmt *st = NULL;
	int r = store_q_start(c, &SQL_CAMPAIGN_CURSOR, &st, "t", id);

	if (r >= 0) {
		r = store_q_step(c, st);
		if (r == 1)
			r = sqlite3_column_int(st, 0) == test_idx &&
			    sqlite3_column_int(st, 1) == round;
	}
	store_q_end(st);
	return r;
}

int store_campaign_round_insert(struct store *s, const char *id, int test_idx, int round,
				const struct store_campaign_row *rows, size_t n, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int r;

	if (!s || !id || (n && !rows))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!store_text_ok(rows[i].phase, STORE_TEXT_MAX) ||
		    !store_text_ok(rows[i].role, STORE_TEXT_MAX) ||
		    !store_text_ok(rows[i].node_a, STORE_TEXT_MAX) ||
		    !store_text_ok(rows[i].node_b, STORE_TEXT_MAX) ||
		    (strcmp(rows[i].state, "pending") != 0 &&
		     strcmp(rows[i].state, "missing") != 0))
			return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto out;
	r = cursor_at(c, id, test_idx, round);
	for (size_t i = 0; r == 1 && i < n; i++) {
		const struct store_campaign_row *w = &rows[i];

		int e = store_q_exec(c, NULL, &SQL_ROW_INSERT, "tlllttttlttl", id,
				     (int64_t)test_idx, (int64_t)round, (int64_t)w->slot, w->phase,
				     w->role, w->node_a, w->node_b, (int64_t)w->rail, w->state,
				     w->error, now_ms);

		if (e < 0)
			r = e;
	}
	if (r == 1) {
		int e = store_q_exec(c, NULL, &SQL_CAMPAIGN_ROUND_STAMP, "tl", id, now_ms);

		r = e < 0 ? e : 1;
	}
	if (r != 1) {
		store_tx_rollback(c);
		goto out;
	}
	r = store_tx_commit(c);
	if (r >= 0)
		r = 1;
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

void store_campaign_rows_free(struct store_campaign_row *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		free(v[i].phase);
		free(v[i].role);
		free(v[i].node_a);
		free(v[i].node_b);
		free(v[i].bench_id);
		free(v[i].state);
		free(v[i].summary_json);
		free(v[i].error);
	}
	free(v);
}

static void rows_free_v(void *v, size_t n)
{
	store_campaign_rows_free(v, n);
}

static int row_from_stmt(sqlite3_stmt *st, void *elem)
{
	struct store_campaign_row *w = elem;

	memset(w, 0, sizeof(*w));
	w->test_idx = sqlite3_column_int(st, 0);
	w->round = sqlite3_column_int(st, 1);
	w->slot = sqlite3_column_int(st, 2);
	w->rail = sqlite3_column_type(st, 7) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 7);
	w->started_at_ms = sqlite3_column_int64(st, 12);
	w->live_at_ms = sqlite3_column_int64(st, 13);
	w->finished_at_ms = sqlite3_column_int64(st, 14);
	if (store_col_dup(st, 3, &w->phase) < 0 || store_col_dup(st, 4, &w->role) < 0 ||
	    store_col_dup(st, 5, &w->node_a) < 0 || store_col_dup(st, 6, &w->node_b) < 0 ||
	    store_col_dup(st, 8, &w->bench_id) < 0 || store_col_dup(st, 9, &w->state) < 0 ||
	    store_col_dup(st, 10, &w->summary_json) < 0 || store_col_dup(st, 11, &w->error) < 0)
		return -ENOMEM;
	return 0;
}

int store_campaign_rows(struct store *s, const char *id, int test_idx, int round,
			struct store_campaign_row **ret, size_t *ret_n)
{
	if (!s || !id || !ret || !ret_n)
		return -EINVAL;
	return store_q_list(&s->r, &SQL_ROWS, sizeof(struct store_campaign_row), row_from_stmt,
			    rows_free_v, (void **)ret, ret_n, "tll", id, (int64_t)test_idx,
			    (int64_t)round);
}

int store_campaign_row_start(struct store *s, const char *id, int test_idx, int round, int slot,
			     const struct store_bench_new *b, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int changes = 0, r;

	if (!s || !id || !b)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto out;
	/* The row first: a row that is no longer pending stores no run. */
	r = store_q_exec(c, &changes, &SQL_ROW_START, "tllltl", id, (int64_t)test_idx,
			 (int64_t)round, (int64_t)slot, b->id, now_ms);
	if (r >= 0 && changes > 0)
		r = store_bench_insert_locked(c, b, id, now_ms);
	if (r < 0 || changes == 0) {
		store_tx_rollback(c);
		goto out;
	}
	r = store_tx_commit(c);
out:
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	return changes > 0 ? 1 : 0;
}

int store_campaign_row_update(struct store *s, const char *id, int test_idx, int round, int slot,
			      const char *state, const char *summary_json, const char *error,
			      bool live, int64_t now_ms)
{
	if (!s || !id || !row_state_ok(state) || strcmp(state, "pending") == 0)
		return -EINVAL;
	return update1(s, &SQL_ROW_UPDATE, "tllltttlll", id, (int64_t)test_idx, (int64_t)round,
		       (int64_t)slot, state, summary_json, error, (int64_t)live, now_ms, now_ms);
}

static int count_row(sqlite3_stmt *st, void *elem)
{
	struct store_campaign_count *k = elem;
	const unsigned char *state = sqlite3_column_text(st, 1);

	k->test_idx = sqlite3_column_int(st, 0);
	snprintf(k->state, sizeof(k->state), "%s", state ? (const char *)state : "");
	k->n = sqlite3_column_int64(st, 2);
	return 0;
}

static void counts_free_v(void *v, size_t n)
{
	(void)n;
	free(v);
}

int store_campaign_counts(struct store *s, const char *id, struct store_campaign_count **ret_v,
			  size_t *ret_n)
{
	if (!s || !id || !ret_v || !ret_n)
		return -EINVAL;
	return store_q_list(&s->r, &SQL_CAMPAIGN_COUNTS, sizeof(struct store_campaign_count),
			    count_row, counts_free_v, (void **)ret_v, ret_n, "t", id);
}
