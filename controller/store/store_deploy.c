/* The store: playbooks, deployments, their nodes and step results, and the reports nodes
 * make on them (accepted only when they fit what was sent). */
#include "controller/store/store_deploy.h"
#include "controller/store/store_int.h"

#include "common/util/error.h"
#include "common/util/util.h"
#include "proto/railyard/v1/limits.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Columns read by deployment_from_row(), in this order. */
#define DEPLOY_COLUMNS                                                                             \
	"SELECT d.id, c.name, p.name, p.version, p.sha256, d.check_mode, d.policy, d.state, "      \
	"d.reason, d.current_batch, d.created_at, d.finished_at, d.actor, "                        \
	"d.cancel_requested_at "                                                                   \
	"FROM deployments d JOIN clusters c ON c.id = d.cluster_id "                               \
	"JOIN playbooks p ON p.id = d.playbook_id "

static struct store_sql SQL_DEPLOY_GET = STORE_SQL(DEPLOY_COLUMNS "WHERE d.id = ?1");
static struct store_sql SQL_DEPLOY_INSERT =
	STORE_SQL("INSERT INTO deployments (id, cluster_id, playbook_id, check_mode, "
		  "policy, state, created_at, actor) "
		  "VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?7)");
static struct store_sql SQL_DEPLOY_CANCEL =
	STORE_SQL("UPDATE deployments SET cancel_requested_at = "
		  "COALESCE(cancel_requested_at, ?2) "
		  "WHERE id = ?1 AND state IN ('pending', 'running')");
static struct store_sql SQL_DEPLOY_LIST =
	STORE_SQL(DEPLOY_COLUMNS "ORDER BY d.created_at DESC, d.id LIMIT ?1");
static struct store_sql SQL_DEPLOY_LIST_ACTIVE =
	STORE_SQL(DEPLOY_COLUMNS "WHERE d.state IN ('pending', 'running') "
				 "ORDER BY d.created_at, d.id");
static struct store_sql SQL_DEPLOY_NODES = STORE_SQL(
	"SELECT node_id, hostname, batch, state, ok, changed, failed, "
	"skipped, message, sent_at, finished_at, reboot_step, reboot_since, reboot_ms, reboot_name "
	"FROM deployment_nodes "
	"WHERE deployment_id = ?1 ORDER BY batch, hostname");
static struct store_sql SQL_DEPLOY_COUNTS =
	STORE_SQL("SELECT batch = ?2, state, count(*), max(batch) FROM deployment_nodes "
		  "WHERE deployment_id = ?1 GROUP BY batch = ?2, state");
/* ?2: a state; ?3: a batch (-1: any); ?4: sent before (0: any). */
static struct store_sql SQL_DEPLOY_NODES_IN = STORE_SQL(
	"SELECT node_id, hostname, batch, state, ok, changed, failed, "
	"skipped, message, sent_at, finished_at, reboot_step, reboot_since, reboot_ms, reboot_name "
	"FROM deployment_nodes "
	"WHERE deployment_id = ?1 AND state = ?2 AND (?3 < 0 OR batch = ?3) "
	"AND (?4 = 0 OR sent_at < ?4) ORDER BY batch, hostname");
static struct store_sql SQL_DEPLOY_NODE_ONE = STORE_SQL(
	"SELECT node_id, hostname, batch, state, ok, changed, failed, "
	"skipped, message, sent_at, finished_at, reboot_step, reboot_since, reboot_ms, reboot_name "
	"FROM deployment_nodes "
	"WHERE deployment_id = ?1 AND node_id = ?2");
static struct store_sql SQL_DEPLOY_SKIP_WAITING =
	STORE_SQL("UPDATE deployment_nodes SET state = 'skipped', message = ?2, finished_at = ?3 "
		  "WHERE deployment_id = ?1 AND state = 'waiting'");
static struct store_sql SQL_DEPLOY_NODE_BYTES =
	STORE_SQL("UPDATE deployment_nodes SET result_bytes = result_bytes + ?3 "
		  "WHERE deployment_id = ?1 AND node_id = ?2");
static struct store_sql SQL_DEPLOY_NODE_DONE =
	STORE_SQL("UPDATE deployment_nodes SET state = ?3, message = ?4, ok = ?5, "
		  "changed = ?6, failed = ?7, skipped = ?8, finished_at = ?9 "
		  "WHERE deployment_id = ?1 AND node_id = ?2 AND state = 'sent'");
static struct store_sql SQL_DEPLOY_NODE_GET =
	STORE_SQL("SELECT state, plan_steps, result_bytes, ok, changed, failed, "
		  "skipped, reboot_step FROM deployment_nodes WHERE deployment_id = ?1 AND "
		  "node_id = ?2");
static struct store_sql SQL_DEPLOY_NODE_REBOOTING = STORE_SQL(
	"UPDATE deployment_nodes SET reboot_step = ?3, reboot_since = ?4, reboot_name = ?5 "
	"WHERE deployment_id = ?1 AND node_id = ?2 AND state = 'sent'");
/* The reboot step's result came: the reboot is over, its duration as the controller saw it. */
static struct store_sql SQL_DEPLOY_NODE_REBOOTED =
	STORE_SQL("UPDATE deployment_nodes SET reboot_ms = max(0, ?4 - reboot_since), "
		  "reboot_step = NULL WHERE deployment_id = ?1 AND node_id = ?2 AND "
		  "reboot_step = ?3");
static struct store_sql SQL_DEPLOY_NODES_REBOOTING = STORE_SQL(
	"SELECT node_id, hostname, batch, state, ok, changed, failed, "
	"skipped, message, sent_at, finished_at, reboot_step, reboot_since, reboot_ms, reboot_name "
	"FROM deployment_nodes WHERE deployment_id = ?1 AND state = 'sent' AND "
	"reboot_step IS NOT NULL ORDER BY batch, hostname");
static struct store_sql SQL_DEPLOY_NODE_INSERT =
	STORE_SQL("INSERT INTO deployment_nodes (deployment_id, node_id, "
		  "hostname, batch, state) VALUES (?1, ?2, ?3, ?4, 'waiting')");
static struct store_sql SQL_DEPLOY_NODE_SENT =
	STORE_SQL("UPDATE deployment_nodes SET state = 'sent', sent_at = ?3, "
		  "plan_steps = ?4, finished_at = NULL "
		  "WHERE deployment_id = ?1 AND node_id = ?2 AND state = 'waiting'");
/* Only a node that has not finished moves; a late or repeated report changes nothing. */
static struct store_sql SQL_DEPLOY_NODE_UPDATE =
	STORE_SQL("UPDATE deployment_nodes SET state = ?3, "
		  "message = COALESCE(?4, message), "
		  "ok = ?5, changed = ?6, failed = ?7, skipped = ?8, "
		  "sent_at = CASE WHEN ?3 = 'sent' THEN ?9 ELSE sent_at END, "
		  "finished_at = CASE WHEN ?3 IN ('waiting', 'sent') THEN NULL "
		  "ELSE ?9 END "
		  "WHERE deployment_id = ?1 AND node_id = ?2 "
		  "AND state IN ('waiting', 'sent')");
static struct store_sql SQL_DEPLOY_TEXT =
	STORE_SQL("SELECT p.text FROM deployments d JOIN playbooks p "
		  "ON p.id = d.playbook_id WHERE d.id = ?1");
static struct store_sql SQL_DEPLOY_UPDATE =
	STORE_SQL("UPDATE deployments SET state = ?2, reason = COALESCE(?3, reason), "
		  "current_batch = ?4, finished_at = ?5 WHERE id = ?1");
static struct store_sql SQL_PLAYBOOK_ID = STORE_SQL("SELECT id FROM playbooks WHERE sha256 = ?1");
static struct store_sql SQL_PLAYBOOK_PUT =
	STORE_SQL("INSERT INTO playbooks (name, version, sha256, text, created_at) "
		  "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (sha256) DO NOTHING");
static struct store_sql SQL_STEP_COUNTS =
	STORE_SQL("SELECT status, count(*) FROM step_results "
		  "WHERE deployment_id = ?1 AND node_id = ?2 GROUP BY status");
static struct store_sql SQL_STEP_GET =
	STORE_SQL("SELECT name, status, diff, message FROM step_results "
		  "WHERE deployment_id = ?1 AND node_id = ?2 AND idx = ?3");
static struct store_sql SQL_STEP_INSERT =
	STORE_SQL("INSERT INTO step_results (deployment_id, node_id, idx, name, status, "
		  "diff, message, duration_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
static struct store_sql SQL_STEP_LIST =
	STORE_SQL("SELECT node_id, idx, name, status, diff, message, duration_ms "
		  "FROM step_results WHERE deployment_id = ?1 ORDER BY node_id, idx");

static void deployments_free_v(void *v, size_t n)
{
	store_deployments_free(v, n);
}

static void deploy_nodes_free_v(void *v, size_t n)
{
	store_deploy_nodes_free(v, n);
}

static void step_results_free_v(void *v, size_t n)
{
	store_step_results_free(v, n);
}

/* ---- deployments ---------------------------------------------------------------------------- */

static bool deploy_state_ok(const char *st)
{
	static const char *const states[] = {"pending", "running", "succeeded",
					     "partial", "failed",  "cancelled"};

	for (size_t i = 0; st && i < RY_ARRAY_SIZE(states); i++)
		if (strcmp(st, states[i]) == 0)
			return true;
	return false;
}

static bool deploy_node_state_ok(const char *st)
{
	static const char *const states[] = {"waiting", "sent",	       "succeeded",
					     "failed",	"unreachable", "skipped"};

	for (size_t i = 0; st && i < RY_ARRAY_SIZE(states); i++)
		if (strcmp(st, states[i]) == 0)
			return true;
	return false;
}

int store_playbook_put_locked(struct store_conn *c, const char *name, const char *version,
			      const char *sha256, const char *text, int64_t now_ms, int64_t *ret_id)
{
	sqlite3_stmt *st = NULL;
	int r = store_q_exec(c, NULL, &SQL_PLAYBOOK_PUT, "ttttl", name, version, sha256, text,
			     now_ms);

	if (r >= 0)
		r = store_q_start(c, &SQL_PLAYBOOK_ID, &st, "t", sha256);
	if (r >= 0) {
		r = store_q_step(c, st);
		if (r == 1)
			*ret_id = sqlite3_column_int64(st, 0);
		r = r == 1 ? 0 : r == 0 ? store_db_fail_msg(c, "playbook vanished") : r;
	}
	store_q_end(st);
	return r;
}

int store_deployment_create(struct store *s, const struct store_deployment_new *d,
			    const struct store_deploy_target *targets, size_t n, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int64_t cluster_id = 0, playbook_id = 0;
	int r;

	if (!s || !d || (n && !targets) || !store_text_ok(d->id, STORE_TEXT_MAX) ||
	    !store_text_ok(d->cluster, STORE_TEXT_MAX) ||
	    !store_text_ok(d->playbook_name, STORE_TEXT_MAX) ||
	    !store_text_ok(d->playbook_version, STORE_TEXT_MAX) ||
	    !store_text_ok(d->playbook_sha256, STORE_TEXT_MAX) || !d->playbook_text ||
	    !d->policy_json || !d->actor)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!store_text_ok(targets[i].node_id, STORE_TEXT_MAX) ||
		    !store_text_ok(targets[i].hostname, STORE_TEXT_MAX) || targets[i].batch < 0)
			return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto out;
	r = store_cluster_id_locked(c, d->cluster, &cluster_id);
	if (r >= 0)
		r = store_playbook_put_locked(c, d->playbook_name, d->playbook_version,
					      d->playbook_sha256, d->playbook_text, now_ms,
					      &playbook_id);
	if (r < 0)
		goto fail;
	r = store_q_exec(c, NULL, &SQL_DEPLOY_INSERT, "tllltlt", d->id, cluster_id, playbook_id,
			 (int64_t)d->check_mode, d->policy_json, now_ms, d->actor);
	for (size_t i = 0; r >= 0 && i < n; i++)
		r = store_q_exec(c, NULL, &SQL_DEPLOY_NODE_INSERT, "tttl", d->id,
				 targets[i].node_id, targets[i].hostname,
				 (int64_t)targets[i].batch);
	if (r >= 0)
		r = store_audit_locked(c, now_ms, d->actor,
				       d->check_mode ? "deploy.check" : "deploy.apply", d->id,
				       "created", d->playbook_name);
	if (r < 0)
		goto fail;
	r = store_tx_commit(c);
	goto out;
fail:
	store_tx_rollback(c);
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

void store_deployment_free(struct store_deployment *d)
{
	if (!d)
		return;
	free(d->id);
	free(d->cluster);
	free(d->playbook_name);
	free(d->playbook_version);
	free(d->playbook_sha256);
	free(d->policy_json);
	free(d->state);
	free(d->reason);
	free(d->actor);
	free(d);
}

void store_deployments_free(struct store_deployment **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		store_deployment_free(v[i]);
	free(v);
}

static int deployment_from_row(sqlite3_stmt *st, struct store_deployment **ret)
{
	struct store_deployment *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	if (store_col_dup(st, 0, &d->id) < 0 || store_col_dup(st, 1, &d->cluster) < 0 ||
	    store_col_dup(st, 2, &d->playbook_name) < 0 ||
	    store_col_dup(st, 3, &d->playbook_version) < 0 ||
	    store_col_dup(st, 4, &d->playbook_sha256) < 0 ||
	    store_col_dup(st, 6, &d->policy_json) < 0 || store_col_dup(st, 7, &d->state) < 0 ||
	    store_col_dup(st, 8, &d->reason) < 0 || store_col_dup(st, 12, &d->actor) < 0) {
		store_deployment_free(d);
		return -ENOMEM;
	}
	d->check_mode = sqlite3_column_int(st, 5) != 0;
	d->current_batch = sqlite3_column_int(st, 9);
	d->created_at_ms = sqlite3_column_int64(st, 10);
	d->finished_at_ms = sqlite3_column_int64(st, 11);
	d->cancel_requested_ms = sqlite3_column_int64(st, 13);
	*ret = d;
	return 0;
}

static int deployment_row(sqlite3_stmt *st, void *elem)
{
	return deployment_from_row(st, elem);
}

int store_deployment_get(struct store *s, const char *id, struct store_deployment **ret)
{
	if (!s || !id || !ret)
		return -EINVAL;
	return store_q_row(&s->r, &SQL_DEPLOY_GET, id, deployment_row, ret);
}

int store_deployments_list(struct store *s, bool active_only, size_t limit,
			   struct store_deployment ***ret, size_t *ret_n)
{
	if (!s || !ret || !ret_n)
		return -EINVAL;
	if (active_only)
		return store_q_list(&s->r, &SQL_DEPLOY_LIST_ACTIVE,
				    sizeof(struct store_deployment *), deployment_row,
				    deployments_free_v, (void **)ret, ret_n, "");
	return store_q_list(&s->r, &SQL_DEPLOY_LIST, sizeof(struct store_deployment *),
			    deployment_row, deployments_free_v, (void **)ret, ret_n, "l",
			    (int64_t)(limit ? limit : 50));
}

int store_deployment_request_cancel(struct store *s, const char *id, const char *actor,
				    int64_t now_ms)
{
	struct store_deployment *d = NULL;
	int r;

	if (!s || !id || !actor)
		return -EINVAL;
	r = store_cancel_request(s, &SQL_DEPLOY_CANCEL, id, actor, "deploy.cancel", now_ms);
	if (r != 0)
		return r;
	/* Nothing moved: it has ended, or there is no such deployment. */
	r = store_deployment_get(s, id, &d);
	store_deployment_free(d);
	return r < 0 ? r : 0;
}

int store_deployment_playbook_text(struct store *s, const char *id, char **ret_text)
{
	if (!s || !id || !ret_text)
		return -EINVAL;
	return store_q_text(&s->r, &SQL_DEPLOY_TEXT, id, ret_text);
}

int store_deployment_update(struct store *s, const char *id, const char *state, const char *reason,
			    int current_batch, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	bool terminal;
	int changes = 0, r;

	if (!s || !id || !deploy_state_ok(state) || current_batch < 0)
		return -EINVAL;
	terminal = strcmp(state, "pending") != 0 && strcmp(state, "running") != 0;
	pthread_mutex_lock(&c->lock);
	r = store_q_exec(c, &changes, &SQL_DEPLOY_UPDATE, "tttll", id, state, reason,
			 (int64_t)current_batch, terminal ? now_ms : (int64_t)0);
	if (r >= 0 && changes == 0)
		r = -RY_E_NOT_FOUND;
	pthread_mutex_unlock(&c->lock);
	return r;
}

void store_deploy_nodes_free(struct store_deploy_node *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		free(v[i].node_id);
		free(v[i].hostname);
		free(v[i].state);
		free(v[i].message);
		free(v[i].reboot_name);
	}
	free(v);
}

static int deploy_node_row(sqlite3_stmt *st, void *elem)
{
	struct store_deploy_node *e = elem;

	if (store_col_dup(st, 0, &e->node_id) < 0 || store_col_dup(st, 1, &e->hostname) < 0 ||
	    store_col_dup(st, 3, &e->state) < 0 || store_col_dup(st, 8, &e->message) < 0)
		return -ENOMEM;
	e->batch = sqlite3_column_int(st, 2);
	e->ok = sqlite3_column_int(st, 4);
	e->changed = sqlite3_column_int(st, 5);
	e->failed = sqlite3_column_int(st, 6);
	e->skipped = sqlite3_column_int(st, 7);
	e->sent_at_ms = sqlite3_column_int64(st, 9);
	e->finished_at_ms = sqlite3_column_int64(st, 10);
	e->reboot_step =
		sqlite3_column_type(st, 11) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 11);
	e->reboot_since_ms = sqlite3_column_int64(st, 12);
	e->reboot_ms =
		sqlite3_column_type(st, 13) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 13);
	if (store_col_dup(st, 14, &e->reboot_name) < 0)
		return -ENOMEM;
	return 0;
}

int store_deploy_nodes(struct store *s, const char *id, struct store_deploy_node **ret,
		       size_t *ret_n)
{
	if (!s || !id || !ret || !ret_n)
		return -EINVAL;
	return store_q_list(&s->r, &SQL_DEPLOY_NODES, sizeof(struct store_deploy_node),
			    deploy_node_row, deploy_nodes_free_v, (void **)ret, ret_n, "t", id);
}

int store_deploy_counts(struct store *s, const char *id, int batch, struct store_deploy_counts *ret)
{
	struct store_conn *c = &s->r;
	struct store_deploy_counts k = {0};
	sqlite3_stmt *st = NULL;
	int r;

	if (!s || !id || !ret)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_q_start(c, &SQL_DEPLOY_COUNTS, &st, "tl", id, (int64_t)batch);
	while (r >= 0 && (r = store_q_step(c, st)) == 1) {
		bool cur = sqlite3_column_int(st, 0) != 0;
		const char *state = (const char *)sqlite3_column_text(st, 1);
		size_t n = (size_t)sqlite3_column_int64(st, 2);
		int last = sqlite3_column_int(st, 3);
		bool failed = strcmp(state, "failed") == 0 || strcmp(state, "unreachable") == 0;

		k.total += n;
		if (last > k.last_batch)
			k.last_batch = last;
		if (failed)
			k.failed_total += n;
		if (strcmp(state, "sent") == 0)
			k.sent_total += n;
		if (!cur)
			continue;
		if (strcmp(state, "waiting") == 0)
			k.waiting += n;
		if (strcmp(state, "sent") == 0)
			k.sent += n;
		if (failed)
			k.failed += n;
	}
	store_q_end(st);
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	*ret = k;
	return 0;
}

int store_deploy_nodes_in(struct store *s, const char *id, const char *state, int batch,
			  int64_t sent_before_ms, struct store_deploy_node **ret, size_t *ret_n)
{
	if (!s || !id || !deploy_node_state_ok(state) || !ret || !ret_n)
		return -EINVAL;
	return store_q_list(&s->r, &SQL_DEPLOY_NODES_IN, sizeof(struct store_deploy_node),
			    deploy_node_row, deploy_nodes_free_v, (void **)ret, ret_n, "ttll", id,
			    state, (int64_t)batch, sent_before_ms);
}

int store_deploy_node_get(struct store *s, const char *id, const char *node_id,
			  struct store_deploy_node **ret)
{
	struct store_deploy_node *v = NULL;
	size_t n = 0;
	int r;

	if (!s || !id || !node_id || !ret)
		return -EINVAL;
	r = store_q_list(&s->r, &SQL_DEPLOY_NODE_ONE, sizeof(struct store_deploy_node),
			 deploy_node_row, deploy_nodes_free_v, (void **)&v, &n, "tt", id, node_id);
	if (r < 0)
		return r;
	if (n == 0) {
		store_deploy_nodes_free(v, n);
		return -RY_E_NOT_FOUND;
	}
	*ret = v;
	return 0;
}

int store_deploy_nodes_skip_waiting(struct store *s, const char *id, const char *message,
				    int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int changes = 0, r;

	if (!s || !id || !message)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_q_exec(c, &changes, &SQL_DEPLOY_SKIP_WAITING, "ttl", id, message, now_ms);
	pthread_mutex_unlock(&c->lock);
	return r < 0 ? r : changes;
}

int store_deploy_nodes_sent(struct store *s, const char *id, const char *const *node_ids,
			    const int *plan_steps, size_t n, int64_t now_ms, bool *ret_moved)
{
	struct store_conn *c = &s->w;
	int r;

	if (!s || !id || (n && (!node_ids || !plan_steps || !ret_moved)))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!node_ids[i] || plan_steps[i] < 0)
			return -EINVAL;
	if (n == 0)
		return 0;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	for (size_t i = 0; r >= 0 && i < n; i++) {
		int changes = 0;

		r = store_q_exec(c, &changes, &SQL_DEPLOY_NODE_SENT, "ttll", id, node_ids[i],
				 now_ms, (int64_t)plan_steps[i]);
		ret_moved[i] = changes > 0;
	}
	if (r >= 0)
		r = store_tx_commit(c);
	else
		store_tx_rollback(c);
	pthread_mutex_unlock(&c->lock);
	return r;
}

int store_deploy_node_update(struct store *s, const char *id, const char *node_id,
			     const char *state, const char *message, const int counts[4],
			     int64_t now_ms)
{
	struct store_conn *c = &s->w;
	static const int zero[4] = {0, 0, 0, 0};
	int changes = 0, r;

	if (!s || !id || !node_id || !deploy_node_state_ok(state))
		return -EINVAL;
	if (!counts)
		counts = zero;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r >= 0)
		r = store_q_exec(c, &changes, &SQL_DEPLOY_NODE_UPDATE, "ttttlllll", id, node_id,
				 state, message, (int64_t)counts[0], (int64_t)counts[1],
				 (int64_t)counts[2], (int64_t)counts[3], now_ms);
	/* A node failed here is drained where the cluster is bound, in the same transaction. */
	if (r >= 0 && changes > 0 && strcmp(state, "failed") == 0)
		r = store_wlm_enqueue_deploy_failed_locked(c, id, node_id, now_ms);
	if (r < 0)
		store_tx_rollback(c);
	else
		r = store_tx_commit(c);
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	return changes > 0 ? 1 : 0;
}

static bool step_status_ok(const char *status)
{
	static const char *const statuses[] = {"ok", "changed", "failed", "skipped"};

	for (size_t i = 0; status && i < RY_ARRAY_SIZE(statuses); i++)
		if (strcmp(status, statuses[i]) == 0)
			return true;
	return false;
}

int store_deploy_node_sent(struct store *s, const char *id, const char *node_id, int plan_steps,
			   int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int changes = 0, r;

	if (!s || !id || !node_id || plan_steps < 0)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_q_exec(c, &changes, &SQL_DEPLOY_NODE_SENT, "ttll", id, node_id, now_ms,
			 (int64_t)plan_steps);
	pthread_mutex_unlock(&c->lock);
	return r < 0 ? r : changes > 0;
}

/* The deployment node row of (id, node_id): its state (copied into state), plan_steps (-1 when
 * the plan was never sent), result_bytes and counts. -RY_E_NOT_FOUND when the node is not
 * part of the deployment. */
struct dnode_row {
	char state[16];
	bool sent;	     /* the plan was sent to it (it may have finished since) */
	int64_t plan_steps;  /* steps of that plan; -1: unknown (sent before schema v6) */
	int64_t reboot_step; /* a reboot under way at that step, or -1 */
	int64_t result_bytes;
	int counts[4];
};

static int dnode_get_locked(struct store_conn *c, const char *id, const char *node_id,
			    struct dnode_row *row)
{
	sqlite3_stmt *st = NULL;
	int r;

	r = store_q_start(c, &SQL_DEPLOY_NODE_GET, &st, "tt", id, node_id);
	if (r < 0)
		return r;
	r = store_q_step(c, st);
	if (r == 1) {
		snprintf(row->state, sizeof(row->state), "%s",
			 (const char *)sqlite3_column_text(st, 0));
		row->sent = sqlite3_column_type(st, 1) != SQLITE_NULL;
		row->plan_steps = row->sent ? sqlite3_column_int64(st, 1) : -1;
		row->result_bytes = sqlite3_column_int64(st, 2);
		row->reboot_step = sqlite3_column_type(st, 7) == SQLITE_NULL
					   ? -1
					   : sqlite3_column_int64(st, 7);
		for (int i = 0; i < 4; i++)
			row->counts[i] = sqlite3_column_int(st, 3 + i);
		r = 0;
	} else if (r == 0) {
		r = -RY_E_NOT_FOUND;
	}
	store_q_end(st);
	return r;
}

/* dnode_get_locked() for a node's report: a node outside the deployment is refused
 * (-RY_E_REFUSED, why says so). */
static int dnode_member_locked(struct store_conn *c, const char *id, const char *node_id,
			       struct dnode_row *row, char *why, size_t whylen)
{
	int r = dnode_get_locked(c, id, node_id, row);

	if (r == -RY_E_NOT_FOUND) {
		snprintf(why, whylen, "node %s is not part of deployment %s", node_id, id);
		r = -RY_E_REFUSED;
	}
	return r;
}

static bool same_text(const unsigned char *stored, const char *v)
{
	return strcmp(stored ? (const char *)stored : "", v ? v : "") == 0;
}

int store_report_step(struct store *s, const char *id, const char *node_id,
		      const struct store_step_result *res, char *why, size_t whylen)
{
	static const char elided[] = "(diff not stored: this node's results for the deployment "
				     "are over their size budget)\n";
	struct store_conn *c = &s->w;
	struct dnode_row row;
	sqlite3_stmt *st = NULL;
	const char *diff;
	size_t bytes;
	int r;

	if (!s || !id || !node_id || !res || !res->name || res->idx < 0 || !why)
		return -EINVAL;
	if (!step_status_ok(res->status))
		return -RY_E_INVALID;
	diff = res->diff ? res->diff : "";
	bytes = strlen(diff) + (res->message ? strlen(res->message) : 0);
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto out;
	r = dnode_member_locked(c, id, node_id, &row, why, whylen);
	if (r < 0)
		goto rollback;
	/* Stored before? The same report is a re-send; a different one is never an overwrite. */
	r = store_q_start(c, &SQL_STEP_GET, &st, "ttl", id, node_id, (int64_t)res->idx);
	if (r >= 0)
		r = store_q_step(c, st);
	if (r == 1) {
		const unsigned char *stored_diff = sqlite3_column_text(st, 2);
		bool same = same_text(sqlite3_column_text(st, 0), res->name) &&
			    same_text(sqlite3_column_text(st, 1), res->status) &&
			    same_text(sqlite3_column_text(st, 3), res->message) &&
			    (same_text(stored_diff, diff) || same_text(stored_diff, elided));

		if (same) {
			r = STORE_REPORT_DUPLICATE;
		} else {
			snprintf(why, whylen,
				 "step %d of deployment %s was already reported as %s; a result is "
				 "never overwritten",
				 res->idx, id, (const char *)sqlite3_column_text(st, 1));
			r = -RY_E_REFUSED;
		}
		store_q_end(st);
		goto rollback; /* nothing to write */
	}
	store_q_end(st);
	if (r < 0)
		goto rollback;
	if (strcmp(row.state, "sent") != 0) {
		if (!row.sent)
			snprintf(why, whylen, "deployment %s never sent its plan to node %s (%s)",
				 id, node_id, row.state);
		else
			snprintf(why, whylen,
				 "deployment %s is no longer running on node %s (%s): step %d "
				 "refused",
				 id, node_id, row.state, res->idx);
		r = -RY_E_REFUSED;
		goto rollback;
	}
	if (row.plan_steps >= 0 && res->idx >= row.plan_steps) {
		snprintf(why, whylen, "step %d is not in the plan node %s was sent (%lld steps)",
			 res->idx, node_id, (long long)row.plan_steps);
		r = -RY_E_REFUSED;
		goto rollback;
	}
	if (row.result_bytes + (int64_t)bytes > RY_PROTO_RESULT_BYTES_MAX) {
		diff = elided;
		bytes = strlen(elided) + (res->message ? strlen(res->message) : 0);
	}
	r = store_q_exec(c, NULL, &SQL_STEP_INSERT, "ttlttttl", id, node_id, (int64_t)res->idx,
			 res->name, res->status, diff, res->message, res->duration_ms);
	if (r >= 0)
		r = store_q_exec(c, NULL, &SQL_DEPLOY_NODE_BYTES, "ttl", id, node_id,
				 (int64_t)bytes);
	if (r >= 0 && row.reboot_step == res->idx)
		r = store_q_exec(c, NULL, &SQL_DEPLOY_NODE_REBOOTED, "ttll", id, node_id,
				 (int64_t)res->idx,
				 res->at_ms > 0 ? res->at_ms : util_now_unix_ms());
	if (r >= 0)
		r = store_tx_commit(c);
	if (r >= 0)
		r = STORE_REPORT_STORED;
	goto out;
rollback:
	store_tx_rollback(c);
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

int store_report_rebooting(struct store *s, const char *id, const char *node_id, int idx,
			   const char *name, int64_t now_ms, char *why, size_t whylen)
{
	struct store_conn *c = &s->w;
	struct dnode_row row;
	sqlite3_stmt *st = NULL;
	int r;

	if (!s || !id || !node_id || idx < 0 || !name || !why)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto out;
	r = dnode_member_locked(c, id, node_id, &row, why, whylen);
	if (r < 0)
		goto rollback;
	/* The step's result is in (a re-send of the notice after it), or the notice again. */
	r = store_q_start(c, &SQL_STEP_GET, &st, "ttl", id, node_id, (int64_t)idx);
	if (r >= 0)
		r = store_q_step(c, st);
	store_q_end(st);
	if (r < 0)
		goto rollback;
	if (r == 1 || row.reboot_step == idx) {
		r = STORE_REPORT_DUPLICATE;
		goto rollback;
	}
	if (strcmp(row.state, "sent") != 0) {
		snprintf(why, whylen,
			 "deployment %s is not running on node %s (%s): its reboot at step %d "
			 "refused",
			 id, node_id, row.state, idx);
		r = -RY_E_REFUSED;
		goto rollback;
	}
	if (row.plan_steps >= 0 && idx >= row.plan_steps) {
		snprintf(why, whylen, "step %d is not in the plan node %s was sent (%lld steps)",
			 idx, node_id, (long long)row.plan_steps);
		r = -RY_E_REFUSED;
		goto rollback;
	}
	if (row.reboot_step >= 0) {
		snprintf(why, whylen, "node %s is already rebooting at step %lld of deployment %s",
			 node_id, (long long)row.reboot_step, id);
		r = -RY_E_REFUSED;
		goto rollback;
	}
	r = store_q_exec(c, NULL, &SQL_DEPLOY_NODE_REBOOTING, "ttllt", id, node_id, (int64_t)idx,
			 now_ms, name);
	if (r >= 0)
		r = store_tx_commit(c);
	if (r >= 0)
		r = STORE_REPORT_STORED;
	goto out;
rollback:
	store_tx_rollback(c);
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

int store_deploy_nodes_rebooting(struct store *s, const char *id, struct store_deploy_node **ret,
				 size_t *ret_n)
{
	if (!s || !id || !ret || !ret_n)
		return -EINVAL;
	return store_q_list(&s->r, &SQL_DEPLOY_NODES_REBOOTING, sizeof(struct store_deploy_node),
			    deploy_node_row, deploy_nodes_free_v, (void **)ret, ret_n, "t", id);
}

/* Counts {ok, changed, failed, skipped} and total of the stored step results of a node. */
static int step_counts_locked(struct store_conn *c, const char *id, const char *node_id,
			      int counts[4], int *ret_total)
{
	static const char *const order[] = {"ok", "changed", "failed", "skipped"};
	sqlite3_stmt *st = NULL;
	int r, total = 0;

	memset(counts, 0, 4 * sizeof(int));
	r = store_q_start(c, &SQL_STEP_COUNTS, &st, "tt", id, node_id);
	if (r < 0)
		return r;
	while ((r = store_q_step(c, st)) == 1) {
		const char *status = (const char *)sqlite3_column_text(st, 0);

		for (int i = 0; i < 4; i++)
			if (strcmp(status, order[i]) == 0)
				counts[i] = sqlite3_column_int(st, 1);
		total += sqlite3_column_int(st, 1);
	}
	store_q_end(st);
	*ret_total = total;
	return r;
}

int store_report_apply_done(struct store *s, const char *id, const char *node_id, const char *state,
			    const char *message, const int counts[4], int64_t now_ms, char *why,
			    size_t whylen)
{
	struct store_conn *c = &s->w;
	struct dnode_row row;
	int stored[4], total = 0, changes = 0, r;
	bool failed;

	if (!s || !id || !node_id || !counts || !why || !state ||
	    (strcmp(state, "succeeded") != 0 && strcmp(state, "failed") != 0))
		return -EINVAL;
	failed = strcmp(state, "failed") == 0;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto out;
	r = dnode_member_locked(c, id, node_id, &row, why, whylen);
	if (r < 0)
		goto rollback;
	if (strcmp(row.state, "sent") != 0) {
		if (strcmp(row.state, state) == 0 &&
		    memcmp(row.counts, counts, sizeof(row.counts)) == 0)
			r = STORE_REPORT_DUPLICATE;
		else if (!row.sent)
			snprintf(why, whylen, "deployment %s never sent its plan to node %s (%s)",
				 id, node_id, row.state);
		else
			snprintf(why, whylen, "deployment %s already finished on node %s as %s", id,
				 node_id, row.state);
		if (r != STORE_REPORT_DUPLICATE)
			r = -RY_E_REFUSED;
		goto rollback;
	}
	r = step_counts_locked(c, id, node_id, stored, &total);
	if (r < 0)
		goto rollback;
	if (total == 0 && failed && !counts[0] && !counts[1] && !counts[2] && !counts[3]) {
		/* The agent refused the plan as a whole: no step ran. */
	} else if (row.plan_steps >= 0 && total != row.plan_steps) {
		snprintf(
			why, whylen,
			"the end of deployment %s came before its step results (%d of %lld stored)",
			id, total, (long long)row.plan_steps);
		r = -RY_E_REFUSED;
		goto rollback;
	} else if (memcmp(stored, counts, sizeof(stored)) != 0 || failed != (stored[2] > 0)) {
		snprintf(why, whylen,
			 "the end of deployment %s (%s: ok %d, changed %d, failed %d, skipped %d) "
			 "contradicts its step results (ok %d, changed %d, failed %d, skipped %d)",
			 id, state, counts[0], counts[1], counts[2], counts[3], stored[0],
			 stored[1], stored[2], stored[3]);
		r = -RY_E_REFUSED;
		goto rollback;
	}
	r = store_q_exec(c, &changes, &SQL_DEPLOY_NODE_DONE, "ttttlllll", id, node_id, state,
			 message, (int64_t)counts[0], (int64_t)counts[1], (int64_t)counts[2],
			 (int64_t)counts[3], now_ms);
	if (r >= 0 && changes != 1)
		r = store_db_fail_msg(c, "deployment node vanished");
	/* A node the plan failed on is drained where the cluster is bound (store_wlm.h): the
	 * intent is stored with the failure. */
	if (r >= 0 && strcmp(state, "failed") == 0)
		r = store_wlm_enqueue_deploy_failed_locked(c, id, node_id, now_ms);
	if (r < 0)
		goto rollback;
	r = store_tx_commit(c);
	if (r >= 0)
		r = STORE_REPORT_STORED;
	goto out;
rollback:
	store_tx_rollback(c);
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

void store_step_results_free(struct store_step_result *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		free(v[i].node_id);
		free(v[i].name);
		free(v[i].status);
		free(v[i].diff);
		free(v[i].message);
	}
	free(v);
}

static int step_row(sqlite3_stmt *st, void *elem)
{
	struct store_step_result *e = elem;

	if (store_col_dup(st, 0, &e->node_id) < 0 || store_col_dup(st, 2, &e->name) < 0 ||
	    store_col_dup(st, 3, &e->status) < 0 || store_col_dup(st, 4, &e->diff) < 0 ||
	    store_col_dup(st, 5, &e->message) < 0)
		return -ENOMEM;
	e->idx = sqlite3_column_int(st, 1);
	e->duration_ms = sqlite3_column_int64(st, 6);
	return 0;
}

int store_step_results(struct store *s, const char *id, struct store_step_result **ret,
		       size_t *ret_n)
{
	if (!s || !id || !ret || !ret_n)
		return -EINVAL;
	return store_q_list(&s->r, &SQL_STEP_LIST, sizeof(struct store_step_result), step_row,
			    step_results_free_v, (void **)ret, ret_n, "t", id);
}
