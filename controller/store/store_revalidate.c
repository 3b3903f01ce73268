/* The store: revalidations (schema v10), the serving controller's record of one "check the
 * configuration, rerun the baseline's campaign, sign a report compared with the baseline". */
#include "controller/store/store_int.h"
#include "controller/store/store_revalidate.h"

#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* Columns read by revalidation_from_row(), in this order. */
#define REVAL_COLUMNS                                                                              \
	"SELECT r.id, c.name, r.baseline_id, r.playbook, r.apply, r.tolerance_bw, "                \
	"r.tolerance_lat, r.state, r.reason, r.deployment_id, r.campaign_id, r.signoff_id, "       \
	"r.verdict, r.actor, r.cancel_requested_at, r.created_at, r.finished_at, r.checks "        \
	"FROM revalidations r JOIN clusters c ON c.id = r.cluster_id "

static struct store_sql SQL_REVAL_INSERT = STORE_SQL(
	"INSERT INTO revalidations (id, cluster_id, baseline_id, playbook, apply, tolerance_bw, "
	"tolerance_lat, state, actor, created_at, checks) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
	"'pending', ?8, ?9, ?10)");
static struct store_sql SQL_REVAL_GET = STORE_SQL(REVAL_COLUMNS "WHERE r.id = ?1");
static struct store_sql SQL_REVAL_LIST =
	STORE_SQL(REVAL_COLUMNS "ORDER BY r.created_at DESC, r.id DESC LIMIT ?1");
static struct store_sql SQL_REVAL_ACTIVE =
	STORE_SQL(REVAL_COLUMNS "WHERE r.state IN ('pending', 'configuring', 'validating') "
				"ORDER BY r.created_at, r.id");
/* Only a revalidation that has not ended moves. */
static struct store_sql SQL_REVAL_UPDATE =
	STORE_SQL("UPDATE revalidations SET state = ?2, reason = COALESCE(?3, reason), "
		  "deployment_id = COALESCE(?4, deployment_id), "
		  "campaign_id = COALESCE(?5, campaign_id), signoff_id = COALESCE(?6, signoff_id), "
		  "verdict = COALESCE(?7, verdict), checks = COALESCE(?9, checks), "
		  "finished_at = CASE WHEN ?8 > 0 THEN ?8 ELSE NULL END "
		  "WHERE id = ?1 AND state IN ('pending', 'configuring', 'validating')");
static struct store_sql SQL_REVAL_CANCEL =
	STORE_SQL("UPDATE revalidations SET cancel_requested_at = "
		  "COALESCE(cancel_requested_at, ?2) "
		  "WHERE id = ?1 AND state IN ('pending', 'configuring', 'validating')");
static struct store_sql SQL_BASELINE_OK =
	STORE_SQL("SELECT count(*) FROM signoffs s JOIN clusters c ON c.id = s.cluster_id "
		  "WHERE s.id = ?1 AND c.name = ?2");

bool store_revalidation_state_final(const char *state)
{
	return strcmp(state, "signed") == 0 || strcmp(state, "failed") == 0 ||
	       strcmp(state, "cancelled") == 0;
}

static bool state_ok(const char *st)
{
	static const char *const states[] = {"pending", "configuring", "validating",
					     "signed",	"failed",      "cancelled"};

	for (size_t i = 0; st && i < RY_ARRAY_SIZE(states); i++)
		if (strcmp(st, states[i]) == 0)
			return true;
	return false;
}

void store_revalidation_free(struct store_revalidation *v)
{
	if (!v)
		return;
	free(v->id);
	free(v->cluster);
	free(v->baseline_id);
	free(v->playbook);
	free(v->state);
	free(v->reason);
	free(v->deployment_id);
	free(v->campaign_id);
	free(v->signoff_id);
	free(v->verdict);
	free(v->actor);
	free(v->checks_json);
	free(v);
}

void store_revalidations_free(struct store_revalidation **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		store_revalidation_free(v[i]);
	free(v);
}

static void revalidations_free_v(void *v, size_t n)
{
	store_revalidations_free(v, n);
}

static int revalidation_from_row(sqlite3_stmt *st, struct store_revalidation **ret)
{
	struct store_revalidation *v = calloc(1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	if (store_col_dup(st, 0, &v->id) < 0 || store_col_dup(st, 1, &v->cluster) < 0 ||
	    store_col_dup(st, 2, &v->baseline_id) < 0 || store_col_dup(st, 3, &v->playbook) < 0 ||
	    store_col_dup(st, 7, &v->state) < 0 || store_col_dup(st, 8, &v->reason) < 0 ||
	    store_col_dup(st, 9, &v->deployment_id) < 0 ||
	    store_col_dup(st, 10, &v->campaign_id) < 0 ||
	    store_col_dup(st, 11, &v->signoff_id) < 0 || store_col_dup(st, 12, &v->verdict) < 0 ||
	    store_col_dup(st, 13, &v->actor) < 0 || store_col_dup(st, 17, &v->checks_json) < 0) {
		store_revalidation_free(v);
		return -ENOMEM;
	}
	v->apply = sqlite3_column_int(st, 4) != 0;
	v->tolerance_bw_pct = sqlite3_column_double(st, 5);
	v->tolerance_lat_pct = sqlite3_column_double(st, 6);
	v->cancel_requested_ms = sqlite3_column_int64(st, 14);
	v->created_at_ms = sqlite3_column_int64(st, 15);
	v->finished_at_ms = sqlite3_column_int64(st, 16);
	*ret = v;
	return 0;
}

static int revalidation_row(sqlite3_stmt *st, void *elem)
{
	return revalidation_from_row(st, elem);
}

int store_revalidation_create(struct store *s, const struct store_revalidation_new *n,
			      int64_t now_ms)
{
	struct store_conn *c = &s->w;
	sqlite3_stmt *st = NULL;
	int64_t cluster_id = 0;
	int r;

	if (!s || !n || !store_text_ok(n->id, STORE_TEXT_MAX) ||
	    !store_text_ok(n->cluster, STORE_TEXT_MAX) ||
	    !store_text_ok(n->baseline_id, STORE_TEXT_MAX) ||
	    !store_text_ok(n->actor, STORE_TEXT_MAX) || !(n->tolerance_bw_pct >= 0) ||
	    !(n->tolerance_lat_pct >= 0))
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto out;
	r = store_cluster_id_locked(c, n->cluster, &cluster_id);
	/* The baseline is a sign-off of the same cluster. */
	if (r >= 0)
		r = store_q_start(c, &SQL_BASELINE_OK, &st, "tt", n->baseline_id, n->cluster);
	if (r >= 0) {
		r = store_q_step(c, st);
		r = r == 1  ? (sqlite3_column_int(st, 0) ? 0 : -RY_E_NOT_FOUND)
		    : r < 0 ? r
			    : -RY_E_DB;
	}
	store_q_end(st);
	if (r >= 0)
		r = store_q_exec(c, NULL, &SQL_REVAL_INSERT, "tlttlddtlt", n->id, cluster_id,
				 n->baseline_id, n->playbook, (int64_t)n->apply,
				 n->tolerance_bw_pct, n->tolerance_lat_pct, n->actor, now_ms,
				 n->checks_json);
	if (r >= 0)
		r = store_audit_locked(c, now_ms, n->actor,
				       n->apply ? "revalidate.apply" : "revalidate.check", n->id,
				       "created", n->baseline_id);
	if (r < 0) {
		store_tx_rollback(c);
		goto out;
	}
	r = store_tx_commit(c);
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

int store_revalidation_get(struct store *s, const char *id, struct store_revalidation **ret)
{
	if (!s || !id || !ret)
		return -EINVAL;
	return store_q_row(&s->r, &SQL_REVAL_GET, id, revalidation_row, ret);
}

int store_revalidations_list(struct store *s, bool active_only, size_t limit,
			     struct store_revalidation ***ret, size_t *ret_n)
{
	if (!s || !ret || !ret_n)
		return -EINVAL;
	if (active_only)
		return store_q_list(&s->r, &SQL_REVAL_ACTIVE, sizeof(struct store_revalidation *),
				    revalidation_row, revalidations_free_v, (void **)ret, ret_n,
				    "");
	return store_q_list(&s->r, &SQL_REVAL_LIST, sizeof(struct store_revalidation *),
			    revalidation_row, revalidations_free_v, (void **)ret, ret_n, "l",
			    (int64_t)(limit ? limit : 50));
}

int store_revalidation_update(struct store *s, const char *id, const struct store_revalidation *u,
			      int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int changes = 0, r;

	if (!s || !id || !u || !state_ok(u->state))
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_q_exec(c, &changes, &SQL_REVAL_UPDATE, "tttttttlt", id, u->state, u->reason,
			 u->deployment_id, u->campaign_id, u->signoff_id, u->verdict,
			 store_revalidation_state_final(u->state) ? now_ms : (int64_t)0,
			 u->checks_json);
	pthread_mutex_unlock(&c->lock);
	return r < 0 ? r : changes > 0;
}

int store_revalidation_request_cancel(struct store *s, const char *id, const char *actor,
				      int64_t now_ms)
{
	struct store_revalidation *v = NULL;
	int r;

	if (!s || !id || !actor)
		return -EINVAL;
	r = store_cancel_request(s, &SQL_REVAL_CANCEL, id, actor, "revalidate.cancel", now_ms);
	if (r != 0)
		return r;
	r = store_revalidation_get(s, id, &v);
	store_revalidation_free(v);
	return r < 0 ? r : 0;
}
