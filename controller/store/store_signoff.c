/* The store: sign-off reports, kept as the exact bytes that were signed with their detached
 * signature, one per campaign. */
#include "controller/store/store_int.h"
#include "controller/store/store_signoff.h"

#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* Columns read by signoff_from_row(), in this order; the last two only WITH_BYTES. */
#define SIGNOFF_COLUMNS                                                                            \
	"SELECT s.id, c.name, s.campaign_id, s.kind, s.baseline_id, s.verdict, s.sha256, "         \
	"s.actor, s.nodes, s.created_at, length(CAST(s.report AS BLOB)), s.acceptance, "           \
	"s.excluded "
#define SIGNOFF_FROM  "FROM signoffs s JOIN clusters c ON c.id = s.cluster_id "
#define WITH_BYTES    ", s.report, s.signature "
#define SIGNOFF_NCOLS 13

static struct store_sql SQL_SIGNOFF_INSERT = STORE_SQL(
	"INSERT INTO signoffs (id, cluster_id, campaign_id, kind, baseline_id, verdict, sha256, "
	"report, signature, nodes, actor, created_at, acceptance, excluded) VALUES (?1, ?2, ?3, "
	"?4, "
	"?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)");
static struct store_sql SQL_SIGNOFF_CAMPAIGN_CHECK =
	STORE_SQL("SELECT (SELECT count(*) FROM campaigns WHERE id = ?1), "
		  "(SELECT count(*) FROM signoffs WHERE campaign_id = ?1)");
static struct store_sql SQL_SIGNOFF_GET = STORE_SQL(SIGNOFF_COLUMNS SIGNOFF_FROM "WHERE s.id = ?1");
static struct store_sql SQL_SIGNOFF_GET_BYTES =
	STORE_SQL(SIGNOFF_COLUMNS WITH_BYTES SIGNOFF_FROM "WHERE s.id = ?1");
static struct store_sql SQL_SIGNOFF_OF_CAMPAIGN =
	STORE_SQL(SIGNOFF_COLUMNS SIGNOFF_FROM "WHERE s.campaign_id = ?1");
static struct store_sql SQL_SIGNOFF_LIST =
	STORE_SQL(SIGNOFF_COLUMNS SIGNOFF_FROM "WHERE ?1 IS NULL OR c.name = ?1 "
					       "ORDER BY s.created_at DESC, s.id DESC LIMIT ?2");

void store_signoff_free(struct store_signoff *so)
{
	if (!so)
		return;
	free(so->id);
	free(so->cluster);
	free(so->campaign_id);
	free(so->kind);
	free(so->baseline_id);
	free(so->verdict);
	free(so->sha256);
	free(so->actor);
	free(so->nodes_json);
	free(so->report);
	free(so->signature);
	free(so);
}

void store_signoffs_free(struct store_signoff **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		store_signoff_free(v[i]);
	free(v);
}

static void signoffs_free_v(void *v, size_t n)
{
	store_signoffs_free(v, n);
}

static int signoff_from_row(sqlite3_stmt *st, void *elem)
{
	struct store_signoff *so = calloc(1, sizeof(*so));
	char **text[] = {&so->id,     &so->cluster,	&so->campaign_id,
			 &so->kind,   &so->baseline_id, &so->verdict,
			 &so->sha256, &so->actor,	&so->nodes_json};

	if (!so)
		return -ENOMEM;
	for (size_t i = 0; i < RY_ARRAY_SIZE(text); i++)
		if (store_col_dup(st, (int)i, text[i]) < 0)
			goto nomem;
	so->created_at_ms = sqlite3_column_int64(st, 9);
	so->report_len = (size_t)sqlite3_column_int64(st, 10);
	so->acceptance = sqlite3_column_int64(st, 11) != 0;
	so->excluded = (int)sqlite3_column_int64(st, 12);
	if (sqlite3_column_count(st) > SIGNOFF_NCOLS &&
	    (store_col_dup(st, SIGNOFF_NCOLS, &so->report) < 0 ||
	     store_col_dup(st, SIGNOFF_NCOLS + 1, &so->signature) < 0))
		goto nomem;
	*(struct store_signoff **)elem = so;
	return 0;
nomem:
	store_signoff_free(so);
	return -ENOMEM;
}

/* The campaign exists (else -RY_E_NOT_FOUND) and has no sign-off yet (else -RY_E_EXISTS). */
static int campaign_free_for_signoff(struct store_conn *c, const char *campaign_id)
{
	sqlite3_stmt *st = NULL;
	int r = store_q_start(c, &SQL_SIGNOFF_CAMPAIGN_CHECK, &st, "t", campaign_id);

	if (r >= 0)
		r = store_q_step(c, st);
	if (r == 1) {
		if (sqlite3_column_int64(st, 0) == 0)
			r = -RY_E_NOT_FOUND;
		else if (sqlite3_column_int64(st, 1) > 0)
			r = -RY_E_EXISTS;
		else
			r = 0;
	} else if (r == 0) {
		r = store_db_fail_msg(c, "no answer from a count");
	}
	store_q_end(st);
	return r;
}

int store_signoff_create(struct store *s, const struct store_signoff_new *n, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int64_t cluster_id = 0;
	int r;

	if (!s || !n || !store_text_ok(n->id, STORE_TEXT_MAX) ||
	    !store_text_ok(n->cluster, STORE_TEXT_MAX) ||
	    !store_text_ok(n->campaign_id, STORE_TEXT_MAX) ||
	    !store_text_ok(n->kind, STORE_TEXT_MAX) ||
	    (n->baseline_id && !store_text_ok(n->baseline_id, STORE_TEXT_MAX)) ||
	    !store_text_ok(n->verdict, STORE_TEXT_MAX) ||
	    !store_text_ok(n->sha256, STORE_TEXT_MAX) || !store_text_ok(n->actor, STORE_TEXT_MAX) ||
	    !n->report || n->report_len == 0 || memchr(n->report, 0, n->report_len) ||
	    !n->signature || !n->signature[0] || !n->nodes_json)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto out;
	r = store_cluster_id_locked(c, n->cluster, &cluster_id);
	if (r >= 0)
		r = campaign_free_for_signoff(c, n->campaign_id);
	if (r >= 0) {
		/* The report is bound as text of exactly report_len bytes. */
		char *copy = strndup(n->report, n->report_len);

		r = copy ? store_q_exec(c, NULL, &SQL_SIGNOFF_INSERT, "tltttttttttlll", n->id,
					cluster_id, n->campaign_id, n->kind, n->baseline_id,
					n->verdict, n->sha256, copy, n->signature, n->nodes_json,
					n->actor, now_ms, (int64_t)n->acceptance,
					(int64_t)(n->excluded > 0 ? n->excluded : 0))
			 : -ENOMEM;
		free(copy);
	}
	if (r >= 0)
		r = store_audit_locked(c, now_ms, n->actor, "signoff.create", n->id, n->verdict,
				       n->campaign_id);
	if (r < 0) {
		store_tx_rollback(c);
		goto out;
	}
	r = store_tx_commit(c);
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* The one sign-off q finds for key: -RY_E_NOT_FOUND when none. */
static int signoff_one(struct store *s, struct store_sql *q, const char *key,
		       struct store_signoff **ret)
{
	struct store_signoff **v = NULL;
	size_t n = 0;
	int r;

	if (!s || !key || !ret)
		return -EINVAL;
	r = store_q_list(&s->r, q, sizeof(*v), signoff_from_row, signoffs_free_v, (void **)&v, &n,
			 "t", key);
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

int store_signoff_get(struct store *s, const char *id, bool with_bytes, struct store_signoff **ret)
{
	return signoff_one(s, with_bytes ? &SQL_SIGNOFF_GET_BYTES : &SQL_SIGNOFF_GET, id, ret);
}

int store_signoff_of_campaign(struct store *s, const char *campaign_id, struct store_signoff **ret)
{
	return signoff_one(s, &SQL_SIGNOFF_OF_CAMPAIGN, campaign_id, ret);
}

int store_signoffs_list(struct store *s, const char *cluster, size_t limit,
			struct store_signoff ***ret, size_t *ret_n)
{
	if (!s || !ret || !ret_n)
		return -EINVAL;
	return store_q_list(&s->r, &SQL_SIGNOFF_LIST, sizeof(struct store_signoff *),
			    signoff_from_row, signoffs_free_v, (void **)ret, ret_n, "tl", cluster,
			    (int64_t)(limit ? limit : 50));
}
