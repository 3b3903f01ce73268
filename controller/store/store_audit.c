/* The store: the audit log. */
#include "controller/store/store_audit.h"
#include "controller/store/store_int.h"

#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#define STORE_AUDIT_LIST_MAX 100000

static struct store_sql SQL_AUDIT_INSERT =
	STORE_SQL("INSERT INTO audit_log (at, actor, action, target, outcome, detail) "
		  "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
static struct store_sql SQL_AUDIT_LIST =
	STORE_SQL("SELECT at, actor, action, target, outcome, detail FROM audit_log "
		  "ORDER BY at DESC, id DESC LIMIT ?1");

static void audit_free_v(void *v, size_t n)
{
	store_audit_entries_free(v, n);
}

int store_audit_locked(struct store_conn *c, int64_t now_ms, const char *actor, const char *action,
		       const char *target, const char *outcome, const char *detail)
{
	return store_q_exec(c, NULL, &SQL_AUDIT_INSERT, "lttttt", now_ms, actor, action, target,
			    outcome, detail);
}

int store_audit(struct store *s, int64_t now_ms, const char *actor, const char *action,
		const char *target, const char *outcome, const char *detail)
{
	struct store_conn *c = &s->w;
	int r;

	if (!s || !actor || !action || !outcome)
		return -EINVAL;
	if (strnlen(actor, STORE_TEXT_MAX + 1) > STORE_TEXT_MAX ||
	    strnlen(action, STORE_TEXT_MAX + 1) > STORE_TEXT_MAX ||
	    strnlen(outcome, STORE_TEXT_MAX + 1) > STORE_TEXT_MAX ||
	    (target && strnlen(target, STORE_TEXT_MAX + 1) > STORE_TEXT_MAX) ||
	    (detail && strnlen(detail, STORE_AUDIT_DETAIL_MAX + 1) > STORE_AUDIT_DETAIL_MAX))
		return -RY_E_TOO_BIG;
	pthread_mutex_lock(&c->lock);
	r = store_audit_locked(c, now_ms, actor, action, target, outcome, detail);
	pthread_mutex_unlock(&c->lock);
	return r;
}

void store_audit_entries_free(struct store_audit_entry *e, size_t n)
{
	if (!e)
		return;
	for (size_t i = 0; i < n; i++) {
		free(e[i].actor);
		free(e[i].action);
		free(e[i].target);
		free(e[i].outcome);
		free(e[i].detail);
	}
	free(e);
}

static int audit_row(sqlite3_stmt *st, void *elem)
{
	struct store_audit_entry *e = elem;

	e->at_ms = sqlite3_column_int64(st, 0);
	if (store_col_dup(st, 1, &e->actor) < 0 || store_col_dup(st, 2, &e->action) < 0 ||
	    store_col_dup(st, 3, &e->target) < 0 || store_col_dup(st, 4, &e->outcome) < 0 ||
	    store_col_dup(st, 5, &e->detail) < 0)
		return -ENOMEM;
	return 0;
}

int store_audit_list(struct store *s, size_t limit, struct store_audit_entry **ret, size_t *ret_n)
{
	if (!s || !ret || !ret_n)
		return -EINVAL;
	if (limit > STORE_AUDIT_LIST_MAX)
		limit = STORE_AUDIT_LIST_MAX;
	return store_q_list(&s->r, &SQL_AUDIT_LIST, sizeof(struct store_audit_entry), audit_row,
			    audit_free_v, (void **)ret, ret_n, "l", (int64_t)limit);
}
