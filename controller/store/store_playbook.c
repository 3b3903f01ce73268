/* The store: playbooks uploaded for a cluster (schema v10). The text is kept once, by its
 * SHA-256, in playbooks (shared with deployments and campaigns); cluster_playbooks says which
 * cluster it was uploaded for, by whom and when. */
#include "controller/store/store_int.h"
#include "controller/store/store_playbook.h"

#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#define UPLOAD_COLUMNS                                                                             \
	"SELECT c.name, p.name, p.version, p.sha256, length(CAST(p.text AS BLOB)), u.actor, "      \
	"u.created_at FROM cluster_playbooks u JOIN clusters c ON c.id = u.cluster_id "            \
	"JOIN playbooks p ON p.id = u.playbook_id "

static struct store_sql SQL_UPLOAD_PUT =
	STORE_SQL("INSERT INTO cluster_playbooks (cluster_id, playbook_id, actor, created_at) "
		  "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (cluster_id, playbook_id) DO UPDATE SET "
		  "actor = excluded.actor, created_at = excluded.created_at");
static struct store_sql SQL_UPLOAD_LIST =
	STORE_SQL(UPLOAD_COLUMNS "ORDER BY u.created_at DESC, p.sha256 LIMIT ?1");
static struct store_sql SQL_UPLOAD_OF =
	STORE_SQL(UPLOAD_COLUMNS "WHERE p.sha256 = ?1 ORDER BY c.name");
static struct store_sql SQL_PLAYBOOK_BY_SHA =
	STORE_SQL("SELECT text FROM playbooks WHERE sha256 = ?1");

void store_playbook_uploads_free(struct store_playbook_upload *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		free(v[i].cluster);
		free(v[i].name);
		free(v[i].version);
		free(v[i].sha256);
		free(v[i].actor);
	}
	free(v);
}

static void uploads_free_v(void *v, size_t n)
{
	store_playbook_uploads_free(v, n);
}

static int upload_row(sqlite3_stmt *st, void *elem)
{
	struct store_playbook_upload *u = elem;

	if (store_col_dup(st, 0, &u->cluster) < 0 || store_col_dup(st, 1, &u->name) < 0 ||
	    store_col_dup(st, 2, &u->version) < 0 || store_col_dup(st, 3, &u->sha256) < 0 ||
	    store_col_dup(st, 5, &u->actor) < 0)
		return -ENOMEM;
	u->size = (size_t)sqlite3_column_int64(st, 4);
	u->created_at_ms = sqlite3_column_int64(st, 6);
	return 0;
}

int store_playbook_upload(struct store *s, const char *cluster, const char *name,
			  const char *version, const char *sha256, const char *text,
			  const char *actor, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int64_t cluster_id = 0, playbook_id = 0;
	int r;

	if (!s || !store_text_ok(cluster, STORE_TEXT_MAX) || !store_text_ok(name, STORE_TEXT_MAX) ||
	    !store_text_ok(version, STORE_TEXT_MAX) || !store_text_ok(sha256, STORE_TEXT_MAX) ||
	    !text || !store_text_ok(actor, STORE_TEXT_MAX))
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto out;
	r = store_cluster_id_locked(c, cluster, &cluster_id);
	if (r >= 0)
		r = store_playbook_put_locked(c, name, version, sha256, text, now_ms, &playbook_id);
	if (r >= 0)
		r = store_q_exec(c, NULL, &SQL_UPLOAD_PUT, "lltl", cluster_id, playbook_id, actor,
				 now_ms);
	if (r >= 0)
		r = store_audit_locked(c, now_ms, actor, "playbook.upload", sha256, "stored", name);
	if (r < 0) {
		store_tx_rollback(c);
		goto out;
	}
	r = store_tx_commit(c);
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

int store_playbook_uploads(struct store *s, const char *sha256, size_t limit,
			   struct store_playbook_upload **ret, size_t *ret_n)
{
	if (!s || !ret || !ret_n)
		return -EINVAL;
	if (sha256)
		return store_q_list(&s->r, &SQL_UPLOAD_OF, sizeof(struct store_playbook_upload),
				    upload_row, uploads_free_v, (void **)ret, ret_n, "t", sha256);
	return store_q_list(&s->r, &SQL_UPLOAD_LIST, sizeof(struct store_playbook_upload),
			    upload_row, uploads_free_v, (void **)ret, ret_n, "l",
			    (int64_t)(limit ? limit : 50));
}

int store_playbook_text_by_sha(struct store *s, const char *sha256, char **ret_text)
{
	if (!s || !sha256 || !ret_text)
		return -EINVAL;
	return store_q_text(&s->r, &SQL_PLAYBOOK_BY_SHA, sha256, ret_text);
}
