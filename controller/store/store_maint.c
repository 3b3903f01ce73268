/* The store: maintenances (schema v17), the serving controller's record of a rolling "drain,
 * configure, validate, hand back" over a cluster that runs jobs, with its batches and nodes. */
#include "controller/store/store_int.h"
#include "controller/store/store_maint.h"
#include "controller/store/store_wlm.h"

#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#define MAINT_ACTIVE "('pending', 'running')"

/* Columns read by maint_from_row(), in this order. */
#define MAINT_COLUMNS                                                                              \
	"SELECT m.id, c.name, m.actor, m.mode, m.scope, m.playbook, m.baseline_id, m.batch, "      \
	"m.state, m.reason, m.batch_size, m.n_batches, m.current_batch, m.min_in_service, "        \
	"m.job_timeout_ms, m.sign, m.cancel_requested_at, m.created_at, m.started_at, "            \
	"m.finished_at FROM maintenances m JOIN clusters c ON c.id = m.cluster_id "

static struct store_sql SQL_MAINT_INSERT = STORE_SQL(
	"INSERT INTO maintenances (id, cluster_id, actor, mode, scope, playbook, baseline_id, "
	"batch, batch_size, n_batches, current_batch, min_in_service, job_timeout_ms, sign, state, "
	"created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0, ?11, ?12, ?13, 'pending', "
	"?14)");
static struct store_sql SQL_MAINT_BUSY = STORE_SQL(
	"SELECT id FROM maintenances WHERE cluster_id = ?1 AND state IN " MAINT_ACTIVE " LIMIT 1");
static struct store_sql SQL_BATCH_INSERT =
	STORE_SQL("INSERT INTO maintenance_batches (maintenance_id, batch, state) VALUES (?1, ?2, "
		  "'waiting')");
static struct store_sql SQL_NODE_INSERT =
	STORE_SQL("INSERT INTO maintenance_nodes (maintenance_id, node_id, hostname, batch, state, "
		  "since) VALUES (?1, ?2, ?3, ?4, 'waiting', ?5)");
static struct store_sql SQL_MAINT_GET = STORE_SQL(MAINT_COLUMNS "WHERE m.id = ?1");
static struct store_sql SQL_MAINT_LIST =
	STORE_SQL(MAINT_COLUMNS "ORDER BY m.created_at DESC, m.id DESC LIMIT ?1");
static struct store_sql SQL_MAINT_ACTIVE =
	STORE_SQL(MAINT_COLUMNS "WHERE m.state IN " MAINT_ACTIVE " ORDER BY m.created_at, m.id");
static struct store_sql SQL_BATCHES = STORE_SQL(
	"SELECT batch, state, deployment_id, campaign_id, signoff_id, started_at, finished_at "
	"FROM maintenance_batches WHERE maintenance_id = ?1 ORDER BY batch");
static struct store_sql SQL_NODES =
	STORE_SQL("SELECT node_id, hostname, state, reason, jobs, batch, since "
		  "FROM maintenance_nodes WHERE maintenance_id = ?1 ORDER BY batch, hostname");
static struct store_sql SQL_MAINT_UPDATE = STORE_SQL(
	"UPDATE maintenances SET state = COALESCE(?2, state), reason = COALESCE(?3, reason), "
	"current_batch = CASE WHEN ?4 >= 0 THEN ?4 ELSE current_batch END, "
	"started_at = COALESCE(started_at, ?5), "
	"finished_at = CASE WHEN ?6 > 0 THEN ?6 ELSE finished_at END "
	"WHERE id = ?1 AND state IN " MAINT_ACTIVE);
static struct store_sql SQL_BATCH_UPDATE = STORE_SQL(
	"UPDATE maintenance_batches SET state = COALESCE(?3, state), "
	"deployment_id = COALESCE(?4, deployment_id), campaign_id = COALESCE(?5, campaign_id), "
	"signoff_id = COALESCE(?6, signoff_id), "
	"started_at = CASE WHEN ?3 = 'draining' THEN ?7 ELSE started_at END, "
	"finished_at = CASE WHEN ?3 IN ('done', 'failed', 'skipped') THEN ?7 ELSE finished_at END "
	"WHERE maintenance_id = ?1 AND batch = ?2");
static struct store_sql SQL_SKIP_BATCHES =
	STORE_SQL("UPDATE maintenance_batches SET state = 'skipped', finished_at = ?3 "
		  "WHERE maintenance_id = ?1 AND batch > ?2 AND state = 'waiting'");
static struct store_sql SQL_SKIP_NODES =
	STORE_SQL("UPDATE maintenance_nodes SET state = 'skipped', since = ?3, reason = ?4 "
		  "WHERE maintenance_id = ?1 AND batch > ?2 AND state = 'waiting'");
/* A node moves only from the state the pass saw (any unended one when from is NULL): a move
 * replayed after a crash changes nothing and writes no second ledger row. Its `since` is kept
 * when only its blocking jobs change. */
static struct store_sql SQL_NODE_MOVE = STORE_SQL(
	"UPDATE maintenance_nodes SET state = ?3, reason = ?4, jobs = ?5, "
	"since = CASE WHEN state = ?3 THEN since ELSE ?6 END "
	"WHERE maintenance_id = ?1 AND node_id = ?2 AND "
	"(state = ?7 OR (?7 IS NULL AND state NOT IN ('resumed', 'held_out', 'skipped'))) AND "
	"NOT (state IS ?3 AND reason IS ?4 AND jobs IS ?5)");
static struct store_sql SQL_MAINT_CANCEL =
	STORE_SQL("UPDATE maintenances SET cancel_requested_at = COALESCE(cancel_requested_at, ?2) "
		  "WHERE id = ?1 AND state IN " MAINT_ACTIVE);

bool store_maint_state_final(const char *state)
{
	return strcmp(state, "succeeded") == 0 || strcmp(state, "failed") == 0 ||
	       strcmp(state, "cancelled") == 0;
}

void store_maint_free(struct store_maint *m)
{
	if (!m)
		return;
	free(m->id);
	free(m->cluster);
	free(m->actor);
	free(m->mode);
	free(m->scope);
	free(m->playbook);
	free(m->baseline_id);
	free(m->batch);
	free(m->state);
	free(m->reason);
	free(m);
}

void store_maints_free(struct store_maint **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		store_maint_free(v[i]);
	free(v);
}

static void maints_free_v(void *v, size_t n)
{
	store_maints_free(v, n);
}

static int maint_row(sqlite3_stmt *st, void *elem)
{
	struct store_maint *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	if (store_col_dup(st, 0, &m->id) < 0 || store_col_dup(st, 1, &m->cluster) < 0 ||
	    store_col_dup(st, 2, &m->actor) < 0 || store_col_dup(st, 3, &m->mode) < 0 ||
	    store_col_dup(st, 4, &m->scope) < 0 || store_col_dup(st, 5, &m->playbook) < 0 ||
	    store_col_dup(st, 6, &m->baseline_id) < 0 || store_col_dup(st, 7, &m->batch) < 0 ||
	    store_col_dup(st, 8, &m->state) < 0 || store_col_dup(st, 9, &m->reason) < 0) {
		store_maint_free(m);
		return -ENOMEM;
	}
	m->batch_size = sqlite3_column_int(st, 10);
	m->n_batches = sqlite3_column_int(st, 11);
	m->current_batch = sqlite3_column_int(st, 12);
	m->min_in_service = sqlite3_column_double(st, 13);
	m->job_timeout_ms = sqlite3_column_int64(st, 14);
	m->sign = sqlite3_column_int(st, 15) != 0;
	m->cancel_requested_ms = sqlite3_column_int64(st, 16);
	m->created_at_ms = sqlite3_column_int64(st, 17);
	m->started_at_ms = sqlite3_column_int64(st, 18);
	m->finished_at_ms = sqlite3_column_int64(st, 19);
	*(struct store_maint **)elem = m;
	return 0;
}

void store_maint_batches_free(struct store_maint_batch *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		free(v[i].state);
		free(v[i].deployment_id);
		free(v[i].campaign_id);
		free(v[i].signoff_id);
	}
	free(v);
}

static void batches_free_v(void *v, size_t n)
{
	store_maint_batches_free(v, n);
}

static int batch_row(sqlite3_stmt *st, void *elem)
{
	struct store_maint_batch *b = elem;

	memset(b, 0, sizeof(*b));
	b->batch = sqlite3_column_int(st, 0);
	b->started_at_ms = sqlite3_column_int64(st, 5);
	b->finished_at_ms = sqlite3_column_int64(st, 6);
	if (store_col_dup(st, 1, &b->state) < 0 || store_col_dup(st, 2, &b->deployment_id) < 0 ||
	    store_col_dup(st, 3, &b->campaign_id) < 0 || store_col_dup(st, 4, &b->signoff_id) < 0)
		return -ENOMEM;
	return 0;
}

void store_maint_nodes_free(struct store_maint_node *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		free(v[i].node_id);
		free(v[i].hostname);
		free(v[i].state);
		free(v[i].reason);
		free(v[i].jobs);
	}
	free(v);
}

static void nodes_free_v(void *v, size_t n)
{
	store_maint_nodes_free(v, n);
}

static int node_row(sqlite3_stmt *st, void *elem)
{
	struct store_maint_node *d = elem;

	memset(d, 0, sizeof(*d));
	d->batch = sqlite3_column_int(st, 5);
	d->since_ms = sqlite3_column_int64(st, 6);
	if (store_col_dup(st, 0, &d->node_id) < 0 || store_col_dup(st, 1, &d->hostname) < 0 ||
	    store_col_dup(st, 2, &d->state) < 0 || store_col_dup(st, 3, &d->reason) < 0 ||
	    store_col_dup(st, 4, &d->jobs) < 0)
		return -ENOMEM;
	return 0;
}

/* The workload manager's request for a node that moved, in the caller's transaction: a row of
 * the drain and resume ledger (store_wlm.h, source "maintenance"), carried out by the WLM
 * worker. A cluster bound to no workload manager gets none; a host name that maps to no legal
 * WLM name gets none either (the WLM cannot be asked about it: its jobs are never known to be
 * done, so it is held out before it is changed). */
static int ledger_locked(struct store_conn *c, const char *id, const char *cluster,
			 const struct store_maint_move *mv, int64_t now_ms)
{
	struct store_wlm_intent a = {
		.cluster = cluster,
		.node_id = mv->node_id,
		.hostname = mv->hostname,
		.action = mv->wlm == STORE_MAINT_WLM_DRAIN ? "drain" : "resume",
		.source = "maintenance",
		.source_id = id,
		.finding = mv->wlm_reason		      ? mv->wlm_reason
			   : mv->wlm == STORE_MAINT_WLM_DRAIN ? "maintenance"
							      : "passed its maintenance",
	};
	int r;

	if (!mv->hostname)
		return -EINVAL;
	r = store_wlm_enqueue_locked(c, &a, now_ms);
	return r == -RY_E_INVALID ? 0 : r;
}

int store_maint_create(struct store *s, const struct store_maint_new *n,
		       const struct store_maint_target *nodes, size_t n_nodes, int n_batches,
		       int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int64_t cluster_id = 0;
	int r;

	if (!s || !n || !store_text_ok(n->id, STORE_TEXT_MAX) ||
	    !store_text_ok(n->cluster, STORE_TEXT_MAX) ||
	    !store_text_ok(n->actor, STORE_TEXT_MAX) || !store_text_ok(n->mode, 16) ||
	    !store_text_ok(n->batch, 16) || !n->playbook || n->batch_size < 1 || n_batches < 0 ||
	    !(n->min_in_service >= 0) || n->job_timeout_ms < 0 || (n_nodes && !nodes))
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto out;
	r = store_cluster_id_locked(c, n->cluster, &cluster_id);
	/* One maintenance of a cluster at a time: two would each count the other's nodes as in
	 * service. */
	if (r >= 0) {
		sqlite3_stmt *q = NULL;

		r = store_q_start(c, &SQL_MAINT_BUSY, &q, "l", cluster_id);
		if (r >= 0)
			r = store_q_step(c, q);
		store_q_end(q);
		if (r == 1)
			r = -RY_E_EXISTS;
	}
	if (r >= 0)
		r = store_q_exec(c, NULL, &SQL_MAINT_INSERT, "tlttttttlldlll", n->id, cluster_id,
				 n->actor, n->mode, n->scope, n->playbook, n->baseline_id, n->batch,
				 (int64_t)n->batch_size, (int64_t)n_batches, n->min_in_service,
				 n->job_timeout_ms, (int64_t)n->sign, now_ms);
	for (int b = 0; r >= 0 && b < n_batches; b++)
		r = store_q_exec(c, NULL, &SQL_BATCH_INSERT, "tl", n->id, (int64_t)b);
	for (size_t i = 0; r >= 0 && i < n_nodes; i++)
		r = store_q_exec(c, NULL, &SQL_NODE_INSERT, "tttll", n->id, nodes[i].node_id,
				 nodes[i].hostname, (int64_t)nodes[i].batch, now_ms);
	if (r >= 0)
		r = store_audit_locked(c, now_ms, n->actor, "maintenance.create", n->id, "created",
				       n->mode);
	if (r < 0) {
		store_tx_rollback(c);
		goto out;
	}
	r = store_tx_commit(c);
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

int store_maint_get(struct store *s, const char *id, struct store_maint **ret)
{
	if (!s || !id || !ret)
		return -EINVAL;
	return store_q_row(&s->r, &SQL_MAINT_GET, id, maint_row, ret);
}

int store_maints_list(struct store *s, bool active_only, size_t limit, struct store_maint ***ret,
		      size_t *ret_n)
{
	if (!s || !ret || !ret_n)
		return -EINVAL;
	if (active_only)
		return store_q_list(&s->r, &SQL_MAINT_ACTIVE, sizeof(struct store_maint *),
				    maint_row, maints_free_v, (void **)ret, ret_n, "");
	return store_q_list(&s->r, &SQL_MAINT_LIST, sizeof(struct store_maint *), maint_row,
			    maints_free_v, (void **)ret, ret_n, "l", (int64_t)(limit ? limit : 50));
}

int store_maint_batches(struct store *s, const char *id, struct store_maint_batch **ret,
			size_t *ret_n)
{
	if (!s || !id || !ret || !ret_n)
		return -EINVAL;
	return store_q_list(&s->r, &SQL_BATCHES, sizeof(struct store_maint_batch), batch_row,
			    batches_free_v, (void **)ret, ret_n, "t", id);
}

int store_maint_nodes(struct store *s, const char *id, struct store_maint_node **ret, size_t *ret_n)
{
	if (!s || !id || !ret || !ret_n)
		return -EINVAL;
	return store_q_list(&s->r, &SQL_NODES, sizeof(struct store_maint_node), node_row,
			    nodes_free_v, (void **)ret, ret_n, "t", id);
}

int store_maint_apply(struct store *s, struct store_maint_step *st, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int changes = 0, r;

	if (!s || !st || !st->id || !st->cluster || (st->n_moves && !st->moves))
		return -EINVAL;
	for (size_t i = 0; i < st->n_moves; i++) {
		st->moves[i].moved = false;
		if (!st->moves[i].node_id || !st->moves[i].to)
			return -EINVAL;
	}
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto out;
	/* The maintenance row first: one that has ended takes nothing more. */
	r = store_q_exec(c, &changes, &SQL_MAINT_UPDATE, "tttlll", st->id, st->state, st->reason,
			 (int64_t)st->current_batch,
			 st->state && strcmp(st->state, "running") == 0 ? now_ms : (int64_t)0,
			 st->state && store_maint_state_final(st->state) ? now_ms : (int64_t)0);
	if (r >= 0 && changes == 0)
		goto rollback;
	if (r >= 0 && st->batch >= 0)
		r = store_q_exec(c, NULL, &SQL_BATCH_UPDATE, "tlttttl", st->id, (int64_t)st->batch,
				 st->batch_state, st->deployment_id, st->campaign_id,
				 st->signoff_id, now_ms);
	if (r >= 0 && st->skip_later) {
		r = store_q_exec(c, NULL, &SQL_SKIP_BATCHES, "tll", st->id, (int64_t)st->batch,
				 now_ms);
		if (r >= 0)
			r = store_q_exec(c, NULL, &SQL_SKIP_NODES, "tllt", st->id,
					 (int64_t)st->batch, now_ms,
					 "the maintenance stopped before its batch");
	}
	for (size_t i = 0; r >= 0 && i < st->n_moves; i++) {
		struct store_maint_move *mv = &st->moves[i];
		int moved = 0;

		r = store_q_exec(c, &moved, &SQL_NODE_MOVE, "tttttlt", st->id, mv->node_id, mv->to,
				 mv->reason, mv->jobs, now_ms, mv->from);
		if (r >= 0 && moved && mv->wlm != STORE_MAINT_WLM_NONE)
			r = ledger_locked(c, st->id, st->cluster, mv, now_ms);
		mv->moved = moved > 0;
	}
	if (r < 0)
		goto rollback;
	r = store_tx_commit(c);
	if (r >= 0)
		r = 1;
	goto out;
rollback:
	store_tx_rollback(c);
	for (size_t i = 0; i < st->n_moves; i++)
		st->moves[i].moved = false;
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

int store_maint_request_cancel(struct store *s, const char *id, const char *actor, int64_t now_ms)
{
	struct store_maint *m = NULL;
	int r;

	if (!s || !id || !actor)
		return -EINVAL;
	r = store_cancel_request(s, &SQL_MAINT_CANCEL, id, actor, "maintenance.cancel", now_ms);
	if (r != 0)
		return r;
	r = store_maint_get(s, id, &m);
	store_maint_free(m);
	return r < 0 ? r : 0;
}
