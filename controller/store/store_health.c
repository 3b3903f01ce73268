/* The store: the agents' health events (store_health.h). */
#include "controller/store/store_health.h"
#include "controller/store/store_int.h"
#include "controller/store/store_wlm.h"

#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#define STORE_HEALTH_LIST_MAX 100000

static struct store_sql SQL_HEALTH_INSERT = STORE_SQL(
	"INSERT INTO health_events (node_id, at, received_at, kind, severity, source, what, "
	"detail, boot_id, repeats) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
static struct store_sql SQL_HEALTH_COUNT =
	STORE_SQL("INSERT INTO health_event_counts (cluster_id, kind, severity, count) "
		  "SELECT cluster_id, ?2, ?3, 1 FROM nodes WHERE id = ?1 "
		  "ON CONFLICT (cluster_id, kind, severity) DO UPDATE SET count = count + 1");
/* The node's events past the newest STORE_HEALTH_KEEP_PER_NODE that no longer count. */
static struct store_sql SQL_HEALTH_TRIM = STORE_SQL(
	"DELETE FROM health_events WHERE node_id = ?1 AND id <= (SELECT id FROM health_events "
	"WHERE node_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2) "
	"AND NOT (severity = 'critical' AND acked_at IS NULL)");

#define HEALTH_COLUMNS                                                                             \
	"SELECT e.id, e.node_id, n.hostname, c.name, e.at, e.received_at, e.kind, e.severity, "    \
	"e.source, e.what, e.detail, e.boot_id, e.repeats, e.acked_at, e.acked_by "                \
	"FROM health_events e JOIN nodes n ON n.id = e.node_id JOIN clusters c ON c.id = "         \
	"n.cluster_id "

/* Through health_events_severity: every critical one, the warnings since ?2. */
static struct store_sql SQL_HEALTH_OPEN = STORE_SQL(
	HEALTH_COLUMNS "WHERE e.acked_at IS NULL AND (e.severity = 'critical' OR (e.severity = "
		       "'warning' AND e.received_at >= ?2)) AND (?1 IS NULL OR c.name = ?1) "
		       "AND (?4 IS NULL OR e.node_id = ?4) ORDER BY e.id DESC LIMIT ?3");
static struct store_sql SQL_HEALTH_CRITICAL = STORE_SQL(
	HEALTH_COLUMNS "WHERE e.severity = 'critical' AND e.received_at > ?2 AND c.name = ?1 "
		       "ORDER BY e.id DESC LIMIT ?3");
static struct store_sql SQL_HEALTH_NODE =
	STORE_SQL(HEALTH_COLUMNS "WHERE e.node_id = ?1 AND e.received_at >= ?2 "
				 "ORDER BY e.id DESC LIMIT ?3");
static struct store_sql SQL_HEALTH_ACK =
	STORE_SQL("UPDATE health_events SET acked_at = ?2, acked_by = ?3 WHERE node_id = ?1 AND "
		  "acked_at IS NULL AND severity != 'info'");
static struct store_sql SQL_HEALTH_COUNTS =
	STORE_SQL("SELECT c.name, h.kind, h.severity, h.count FROM health_event_counts h "
		  "JOIN clusters c ON c.id = h.cluster_id ORDER BY c.name, h.kind, h.severity");

static struct store_sql SQL_HEALTH_NODE_PLAYBOOKS = STORE_SQL(
	"SELECT p.name || ' ' || p.version, p.sha256, p.text FROM deployment_nodes dn "
	"JOIN deployments d ON d.id = dn.deployment_id JOIN playbooks p ON p.id = d.playbook_id "
	"WHERE dn.node_id = ?1 AND dn.state = 'succeeded' AND d.check_mode = 0 "
	"ORDER BY d.created_at DESC, d.id DESC LIMIT ?2");

/* The node's cluster and host name, and whether another critical event of it is open (then a
 * drain was asked for already). */
static struct store_sql SQL_HEALTH_NODE_INFO = STORE_SQL(
	"SELECT c.name, n.hostname, (SELECT COUNT(*) FROM health_events e WHERE e.node_id = n.id "
	"AND e.severity = 'critical' AND e.acked_at IS NULL AND e.id != ?2) "
	"FROM nodes n JOIN clusters c ON c.id = n.cluster_id WHERE n.id = ?1");

static bool one_of(const char *v, const char *const *set)
{
	for (; v && *set; set++)
		if (strcmp(v, *set) == 0)
			return true;
	return false;
}

int store_health_add(struct store *s, const struct store_health_event *ev)
{
	static const char *const kinds[] = {"xid",    "kmsg",	   "port", "gpu",
					    "nvlink", "readiness", NULL};
	static const char *const sevs[] = {"info", "warning", "critical", NULL};
	struct store_conn *c;
	int r;

	if (!s || !ev || !store_text_ok(ev->node_id, STORE_TEXT_MAX) || !one_of(ev->kind, kinds) ||
	    !one_of(ev->severity, sevs) || !store_text_ok(ev->source, STORE_TEXT_MAX) ||
	    !store_text_ok(ev->what, STORE_TEXT_MAX) || ev->repeats < 0 ||
	    (ev->detail &&
	     strnlen(ev->detail, STORE_HEALTH_DETAIL_MAX + 1) > STORE_HEALTH_DETAIL_MAX) ||
	    (ev->boot_id && strnlen(ev->boot_id, 65) > 64))
		return -EINVAL;
	c = &s->w;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto out;
	r = store_q_exec(c, NULL, &SQL_HEALTH_INSERT, "tllttttttl", ev->node_id, ev->at_ms,
			 ev->received_ms, ev->kind, ev->severity, ev->source, ev->what,
			 ev->detail ? ev->detail : "", ev->boot_id ? ev->boot_id : "", ev->repeats);
	if (r >= 0)
		r = store_q_exec(c, NULL, &SQL_HEALTH_COUNT, "ttt", ev->node_id, ev->kind,
				 ev->severity);
	/* A critical event the node has no other open one of: drained in its workload manager
	 * (when its cluster is bound), written ahead in this transaction (store_wlm.h). */
	if (r >= 0 && strcmp(ev->severity, "critical") == 0) {
		int64_t id = sqlite3_last_insert_rowid(c->db);
		sqlite3_stmt *st = NULL;
		char *cluster = NULL, *host = NULL, sid[32], finding[256];
		int64_t others = 0;

		r = store_q_start(c, &SQL_HEALTH_NODE_INFO, &st, "tl", ev->node_id, id);
		if (r >= 0 && (r = store_q_step(c, st)) == 1) {
			others = sqlite3_column_int64(st, 2);
			if (store_col_dup(st, 0, &cluster) < 0 || store_col_dup(st, 1, &host) < 0)
				r = -ENOMEM;
		}
		store_q_end(st);
		if (r >= 0 && cluster && host && others == 0) {
			struct store_wlm_intent a = {.cluster = cluster,
						     .node_id = ev->node_id,
						     .hostname = host,
						     .action = "drain",
						     .source = "health",
						     .source_id = sid,
						     .finding = finding};
			snprintf(sid, sizeof(sid), "event-%lld", (long long)id);
			snprintf(finding, sizeof(finding), "%s (%s)", ev->what, ev->source);
			r = store_wlm_enqueue_locked(c, &a, ev->received_ms);
			if (r == -RY_E_INVALID)
				r = 0; /* a host name that maps to no WLM name: nothing to drain */
		}
		free(cluster);
		free(host);
	}
	if (r >= 0)
		r = store_q_exec(c, NULL, &SQL_HEALTH_TRIM, "tl", ev->node_id,
				 (int64_t)STORE_HEALTH_KEEP_PER_NODE - 1);
	if (r < 0)
		store_tx_rollback(c);
	else
		r = store_tx_commit(c);
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

static int health_row(sqlite3_stmt *st, void *elem)
{
	struct store_health_event *e = elem;

	e->id = sqlite3_column_int64(st, 0);
	e->at_ms = sqlite3_column_int64(st, 4);
	e->received_ms = sqlite3_column_int64(st, 5);
	e->repeats = sqlite3_column_int64(st, 12);
	e->acked_ms = sqlite3_column_int64(st, 13);
	if (store_col_dup(st, 1, &e->node_id) < 0 || store_col_dup(st, 2, &e->hostname) < 0 ||
	    store_col_dup(st, 3, &e->cluster) < 0 || store_col_dup(st, 6, &e->kind) < 0 ||
	    store_col_dup(st, 7, &e->severity) < 0 || store_col_dup(st, 8, &e->source) < 0 ||
	    store_col_dup(st, 9, &e->what) < 0 || store_col_dup(st, 10, &e->detail) < 0 ||
	    store_col_dup(st, 11, &e->boot_id) < 0 || store_col_dup(st, 14, &e->acked_by) < 0)
		return -ENOMEM;
	return 0;
}

static void health_free_v(void *v, size_t n)
{
	store_health_events_free(v, n);
}

int store_health_open(struct store *s, const char *cluster, const char *node_id,
		      int64_t warn_since_ms, size_t limit, struct store_health_event **ret,
		      size_t *ret_n)
{
	if (!s || !ret || !ret_n)
		return -EINVAL;
	if (limit > STORE_HEALTH_LIST_MAX)
		limit = STORE_HEALTH_LIST_MAX;
	return store_q_list(&s->r, &SQL_HEALTH_OPEN, sizeof(struct store_health_event), health_row,
			    health_free_v, (void **)ret, ret_n, "tllt", cluster, warn_since_ms,
			    (int64_t)limit, node_id);
}

int store_health_critical_since(struct store *s, const char *cluster, int64_t since_ms,
				size_t limit, struct store_health_event **ret, size_t *ret_n)
{
	if (!s || !cluster || !ret || !ret_n)
		return -EINVAL;
	if (limit > STORE_HEALTH_LIST_MAX)
		limit = STORE_HEALTH_LIST_MAX;
	return store_q_list(&s->r, &SQL_HEALTH_CRITICAL, sizeof(struct store_health_event),
			    health_row, health_free_v, (void **)ret, ret_n, "tll", cluster,
			    since_ms, (int64_t)limit);
}

int store_health_node(struct store *s, const char *node_id, int64_t since_ms, size_t limit,
		      struct store_health_event **ret, size_t *ret_n)
{
	if (!s || !node_id || !ret || !ret_n)
		return -EINVAL;
	if (limit > STORE_HEALTH_LIST_MAX)
		limit = STORE_HEALTH_LIST_MAX;
	return store_q_list(&s->r, &SQL_HEALTH_NODE, sizeof(struct store_health_event), health_row,
			    health_free_v, (void **)ret, ret_n, "tll", node_id, since_ms,
			    (int64_t)limit);
}

int store_health_ack(struct store *s, const char *node_id, const char *actor, int64_t now_ms,
		     int *ret_n)
{
	struct store_conn *c;
	char detail[64];
	int n = 0, r;

	if (!s || !store_text_ok(node_id, STORE_TEXT_MAX) || !store_text_ok(actor, STORE_TEXT_MAX))
		return -EINVAL;
	c = &s->w;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto out;
	r = store_q_exec(c, &n, &SQL_HEALTH_ACK, "tlt", node_id, now_ms, actor);
	snprintf(detail, sizeof(detail), "%d events acknowledged", n);
	if (r >= 0)
		r = store_audit_locked(c, now_ms, actor, "health.ack", node_id, "ok", detail);
	if (r < 0)
		store_tx_rollback(c);
	else
		r = store_tx_commit(c);
out:
	pthread_mutex_unlock(&c->lock);
	if (r >= 0 && ret_n)
		*ret_n = n;
	return r;
}

static int count_row(sqlite3_stmt *st, void *elem)
{
	struct store_health_event *e = elem;

	e->repeats = sqlite3_column_int64(st, 3);
	if (store_col_dup(st, 0, &e->cluster) < 0 || store_col_dup(st, 1, &e->kind) < 0 ||
	    store_col_dup(st, 2, &e->severity) < 0)
		return -ENOMEM;
	return 0;
}

int store_health_counts(struct store *s, struct store_health_event **ret, size_t *ret_n)
{
	if (!s || !ret || !ret_n)
		return -EINVAL;
	return store_q_list(&s->r, &SQL_HEALTH_COUNTS, sizeof(struct store_health_event), count_row,
			    health_free_v, (void **)ret, ret_n, "");
}

static int playbook_row(sqlite3_stmt *st, void *elem)
{
	struct store_health_event *e = elem;

	if (store_col_dup(st, 0, &e->what) < 0 || store_col_dup(st, 1, &e->source) < 0 ||
	    store_col_dup(st, 2, &e->detail) < 0)
		return -ENOMEM;
	return 0;
}

int store_health_node_playbooks(struct store *s, const char *node_id, size_t limit,
				struct store_health_event **ret, size_t *ret_n)
{
	if (!s || !node_id || !ret || !ret_n)
		return -EINVAL;
	return store_q_list(&s->r, &SQL_HEALTH_NODE_PLAYBOOKS, sizeof(struct store_health_event),
			    playbook_row, health_free_v, (void **)ret, ret_n, "tl", node_id,
			    (int64_t)limit);
}

void store_health_events_free(struct store_health_event *e, size_t n)
{
	if (!e)
		return;
	for (size_t i = 0; i < n; i++) {
		free(e[i].node_id);
		free(e[i].hostname);
		free(e[i].cluster);
		free(e[i].kind);
		free(e[i].severity);
		free(e[i].source);
		free(e[i].what);
		free(e[i].detail);
		free(e[i].boot_id);
		free(e[i].acked_by);
	}
	free(e);
}
