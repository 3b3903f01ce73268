/* The store: clusters, enrollment of a node (consuming an enrollment token, store_apitoken.c),
 * nodes and their states, revocation. */
#include "controller/store/store_int.h"
#include "controller/store/store_nodes.h"

#include "common/util/error.h"
#include "common/util/util.h"
#include "common/log/log.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Columns read by node_from_row(), in this order; NODE_COLUMNS_AS(FACTS) with the facts column
 * as an expression. */
#define NODE_COLUMNS_AS(facts)                                                                     \
	"SELECT n.id, c.name, n.hostname, n.state, n.cert_serial, n.cert_fingerprint, "            \
	"n.agent_version, " facts ", n.enrolled_at, n.last_seen, n.summary, n.snapshot, "          \
	"n.derived_v FROM nodes n JOIN clusters c ON c.id = n.cluster_id "
#define NODE_COLUMNS NODE_COLUMNS_AS("(SELECT facts FROM node_facts WHERE node_id = n.id)")
/* Rows in a transaction of store_nodes_rederive(). */
#define REDERIVE_BATCH 256

static struct store_sql SQL_CLUSTER_ENSURE =
	STORE_SQL("INSERT INTO clusters (name, created_at) VALUES (?1, ?2) "
		  "ON CONFLICT (name) DO NOTHING");
static struct store_sql SQL_CLUSTER_ID = STORE_SQL("SELECT id FROM clusters WHERE name = ?1");
static struct store_sql SQL_NODES_ALL_OFFLINE =
	STORE_SQL("UPDATE nodes SET state = 'offline' WHERE state = 'online'");
static struct store_sql SQL_NODES_EXPIRE = STORE_SQL("UPDATE nodes SET state = 'offline' "
						     "WHERE state = 'online' AND last_seen < ?1");
static struct store_sql SQL_NODES_REVOKED =
	STORE_SQL("SELECT id FROM nodes WHERE state = 'revoked'");
static struct store_sql SQL_NODE_BY_HOSTNAME =
	STORE_SQL(NODE_COLUMNS "WHERE n.hostname = ?1 LIMIT 2");
static struct store_sql SQL_NODE_BY_ID = STORE_SQL(NODE_COLUMNS "WHERE n.id = ?1");
static struct store_sql SQL_NODE_DELETE = STORE_SQL("DELETE FROM nodes WHERE id = ?1");
static struct store_sql SQL_NODE_FACTS_GET =
	STORE_SQL("SELECT facts FROM node_facts WHERE node_id = ?1");
static struct store_sql SQL_NODE_FACTS =
	STORE_SQL("UPDATE nodes SET last_seen = MAX(last_seen, ?2), summary = ?3, snapshot = ?4, "
		  "derived_v = ?5 WHERE id = ?1 AND state != 'revoked'");
/* After the node's own row changed (so it exists and is not revoked). */
static struct store_sql SQL_NODE_FACTS_PUT =
	STORE_SQL("INSERT INTO node_facts (node_id, facts) VALUES (?1, ?2) "
		  "ON CONFLICT (node_id) DO UPDATE SET facts = excluded.facts");
/* The facts only where the derived members are not of the deriver's version (?1). */
static struct store_sql SQL_NODE_BRIEF = STORE_SQL(NODE_COLUMNS_AS(
	"CASE WHEN n.derived_v = ?1 THEN NULL ELSE "
	"(SELECT facts FROM node_facts WHERE node_id = n.id) END") "ORDER BY c.name, n.hostname");
static struct store_sql SQL_NODE_UNDERIVED =
	STORE_SQL("SELECT n.id, f.facts FROM nodes n JOIN node_facts f ON f.node_id = n.id "
		  "WHERE n.derived_v != ?1 LIMIT ?2");
static struct store_sql SQL_NODE_DERIVED =
	STORE_SQL("UPDATE nodes SET summary = ?2, snapshot = ?3, derived_v = ?4 WHERE id = ?1");
/* The node's stored facts are these bytes, and the members derived from them are current. */
static struct store_sql SQL_NODE_FACTS_SAME =
	STORE_SQL("SELECT 1 FROM node_facts f JOIN nodes n ON n.id = f.node_id "
		  "WHERE f.node_id = ?1 AND f.facts = ?2 AND n.derived_v = ?3");
static struct store_sql SQL_NODE_INSERT =
	STORE_SQL("INSERT INTO nodes (id, cluster_id, hostname, cert_serial, "
		  "cert_fingerprint, state, enrolled_at, last_seen) "
		  "VALUES (?1, ?2, ?3, ?4, ?5, 'enrolled', ?6, 0)");
static struct store_sql SQL_NODE_IN_CLUSTER = STORE_SQL("SELECT id, state, cert_serial FROM nodes "
							"WHERE cluster_id = ?1 AND hostname = ?2");
static struct store_sql SQL_NODE_LIST = STORE_SQL(NODE_COLUMNS "ORDER BY c.name, n.hostname");
static struct store_sql SQL_NODE_SCAN =
	STORE_SQL(NODE_COLUMNS "WHERE c.name = ?1 AND n.state != 'revoked' ORDER BY n.hostname");
static struct store_sql SQL_NODE_OFFLINE =
	STORE_SQL("UPDATE nodes SET state = 'offline', last_seen = MAX(last_seen, ?2) "
		  "WHERE id = ?1 AND state != 'revoked'");
static struct store_sql SQL_NODE_ONLINE =
	STORE_SQL("UPDATE nodes SET state = 'online', last_seen = MAX(last_seen, ?2), "
		  "agent_version = COALESCE(?3, agent_version), "
		  "summary = CASE WHEN ?4 IS NULL THEN summary ELSE ?5 END, "
		  "snapshot = CASE WHEN ?4 IS NULL THEN snapshot ELSE ?6 END, "
		  "derived_v = CASE WHEN ?4 IS NULL THEN derived_v ELSE ?7 END "
		  "WHERE id = ?1 AND state != 'revoked'");
static struct store_sql SQL_NODE_REVOKE =
	STORE_SQL("UPDATE nodes SET state = 'revoked', revoked_at = ?2 WHERE id = ?1");
static struct store_sql SQL_NODE_SEEN = STORE_SQL("UPDATE nodes SET last_seen = MAX(last_seen, ?2) "
						  "WHERE id = ?1 AND state != 'revoked'");
static struct store_sql SQL_NODE_STATE = STORE_SQL("SELECT state FROM nodes WHERE id = ?1");
static struct store_sql SQL_NODE_TOUCH =
	STORE_SQL("UPDATE nodes SET last_seen = MAX(last_seen, ?2), "
		  "state = CASE state WHEN 'offline' THEN 'online' ELSE state END "
		  "WHERE id = ?1 AND state != 'revoked'");
static struct store_sql SQL_REVOKED_GET =
	STORE_SQL("SELECT 1 FROM revoked_certs WHERE serial = ?1");
static struct store_sql SQL_REVOKED_INSERT =
	STORE_SQL("INSERT OR IGNORE INTO revoked_certs (serial, node_id, revoked_at) "
		  "VALUES (?1, ?2, ?3)");
static struct store_sql SQL_TOKEN_USE =
	STORE_SQL("UPDATE enroll_tokens SET uses_left = uses_left - 1 "
		  "WHERE id = ?1 AND uses_left > 0");

/* The array free functions of the listings, with the type store_q_list() takes. */
static void nodes_free_v(void *v, size_t n)
{
	store_nodes_free(v, n);
}

static void ids_free_v(void *v, size_t n)
{
	store_ids_free(v, n);
}

/* What the deriver made of a node's facts (all NULL, version 0: nothing). */
struct derived {
	char *summary, *snapshot;
	int64_t version;
};

static void derived_done(struct derived *d)
{
	free(d->summary);
	free(d->snapshot);
}

/* Derive from root with s's deriver; a failure (logged) leaves d empty but for the version, so
 * that the row is not derived again and again: its listing then shows no summary. */
static void derive(const struct store *s, const json_t *root, struct derived *d)
{
	const struct store_facts_deriver *dv = s->deriver;
	int r;

	*d = (struct derived){NULL, NULL, 0};
	if (!dv)
		return;
	d->version = dv->version;
	r = dv->derive((const struct json_t *)root, &d->summary, &d->snapshot);
	if (r < 0) {
		log_debug("store: deriving a node's summary failed: %s", ry_strerror(r));
		free(d->summary);
		free(d->snapshot);
		d->summary = d->snapshot = NULL;
	}
}

/* Facts must be a JSON object of bounded size; checked before anything is written. On success
 * *ret is what s's deriver makes of them (derived_done()). */
static int facts_validate(const struct store *s, const char *facts_json, struct derived *ret)
{
	json_error_t err;
	json_t *root;
	size_t len = strnlen(facts_json, (size_t)STORE_FACTS_MAX + 1);

	if (len > STORE_FACTS_MAX)
		return -RY_E_INVALID;
	root = json_loadb(facts_json, len, JSON_REJECT_DUPLICATES, &err);
	if (!root) {
		log_debug("store: facts rejected: %s at line %d", err.text, err.line);
		return -RY_E_INVALID;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		return -RY_E_INVALID;
	}
	derive(s, root, ret);
	json_decref(root);
	return 0;
}

int store_cluster_ensure_locked(struct store_conn *c, const char *name, int64_t now_ms,
				int64_t *ret_id)
{
	sqlite3_stmt *st = NULL;
	int r;

	r = store_q_exec(c, NULL, &SQL_CLUSTER_ENSURE, "tl", name, now_ms);
	if (r < 0)
		return r;
	r = store_q_start(c, &SQL_CLUSTER_ID, &st, "t", name);
	if (r < 0)
		return r;
	r = store_q_step(c, st);
	if (r == 1) {
		if (ret_id)
			*ret_id = sqlite3_column_int64(st, 0);
		r = 0;
	} else if (r == 0) {
		r = store_db_fail_msg(c, "cluster vanished");
	}
	store_q_end(st);
	return r;
}

int store_cluster_id_locked(struct store_conn *c, const char *name, int64_t *ret_id)
{
	sqlite3_stmt *st = NULL;
	int r = store_q_start(c, &SQL_CLUSTER_ID, &st, "t", name);

	if (r >= 0) {
		r = store_q_step(c, st);
		if (r == 1)
			*ret_id = sqlite3_column_int64(st, 0);
		r = r == 1 ? 0 : r == 0 ? -RY_E_NOT_FOUND : r;
	}
	store_q_end(st);
	return r;
}

int store_cluster_ensure(struct store *s, const char *name, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int r;

	if (!s)
		return -EINVAL;
	if (!store_text_ok(name, STORE_TEXT_MAX))
		return -RY_E_INVALID;
	pthread_mutex_lock(&c->lock);
	r = store_cluster_ensure_locked(c, name, now_ms, NULL);
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* Make room for a new node of hostname in the cluster: -RY_E_EXISTS if a live node has it; a
 * revoked one is deleted (its serial is kept in the revocation list). */
static int enroll_clear_hostname_locked(struct store_conn *c, int64_t cluster_id,
					const char *hostname, int64_t now_ms)
{
	sqlite3_stmt *st = NULL;
	char *id = NULL, *serial = NULL;
	int r;

	r = store_q_start(c, &SQL_NODE_IN_CLUSTER, &st, "lt", cluster_id, hostname);
	if (r < 0)
		return r;
	r = store_q_step(c, st);
	if (r <= 0)
		goto out;
	if (strcmp((const char *)sqlite3_column_text(st, 1), "revoked") != 0) {
		r = -RY_E_EXISTS;
		goto out;
	}
	r = store_col_dup(st, 0, &id);
	if (r < 0)
		goto out;
	r = store_col_dup(st, 2, &serial);
	if (r < 0)
		goto out;
	store_q_end(st);
	st = NULL;
	r = store_q_exec(c, NULL, &SQL_REVOKED_INSERT, "ttl", serial, id, now_ms);
	if (r < 0)
		goto out;
	r = store_q_exec(c, NULL, &SQL_NODE_DELETE, "t", id);
out:
	store_q_end(st);
	free(id);
	free(serial);
	return r;
}

int store_enroll_node(struct store *s, const struct store_enroll *e, int64_t now_ms,
		      char **ret_cluster)
{
	struct store_conn *c = &s->w;
	struct store_token_row row = {0};
	char *detail = NULL;
	int r, changed = 0;

	if (!s || !e || !e->token || !e->node_id || !e->hostname || !e->cert_serial ||
	    !e->cert_fingerprint)
		return -EINVAL;
	if (!store_text_ok(e->node_id, STORE_TEXT_MAX) ||
	    !store_text_ok(e->hostname, STORE_TEXT_MAX) ||
	    !store_text_ok(e->cert_serial, STORE_TEXT_MAX) ||
	    !store_text_ok(e->cert_fingerprint, STORE_TEXT_MAX))
		return -RY_E_INVALID;

	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto unlock;
	r = store_token_lookup_locked(c, e->token, now_ms, &row);
	if (r < 0)
		goto rollback;
	r = enroll_clear_hostname_locked(c, row.cluster_id, e->hostname, now_ms);
	if (r < 0)
		goto rollback;
	r = store_q_exec(c, &changed, &SQL_TOKEN_USE, "l", row.id);
	if (r < 0)
		goto rollback;
	if (changed != 1) {
		r = -RY_E_TOKEN_USED;
		goto rollback;
	}
	r = store_q_exec(c, NULL, &SQL_NODE_INSERT, "tltttl", e->node_id, row.cluster_id,
			 e->hostname, e->cert_serial, e->cert_fingerprint, now_ms);
	if (r < 0) {
		/* The id is chosen by the controller; a clash is a duplicate, not a DB fault. */
		if (sqlite3_extended_errcode(c->db) == SQLITE_CONSTRAINT_PRIMARYKEY ||
		    sqlite3_extended_errcode(c->db) == SQLITE_CONSTRAINT_UNIQUE)
			r = -RY_E_EXISTS;
		goto rollback;
	}
	/* The peer is only recorded, so a long one is cut rather than refused. */
	if (asprintf(&detail, "cluster=%s hostname=%s serial=%s peer=%.255s", row.cluster,
		     e->hostname, e->cert_serial,
		     e->peer && e->peer[0] ? e->peer : "unknown") < 0) {
		detail = NULL;
		r = -ENOMEM;
		goto rollback;
	}
	r = store_audit_locked(c, now_ms, "agent", "node.enroll", e->node_id, "success", detail);
	if (r < 0)
		goto rollback;
	r = store_tx_commit(c);
	goto unlock;
rollback:
	store_tx_rollback(c);
unlock:
	pthread_mutex_unlock(&c->lock);
	free(detail);
	if (r < 0 || !ret_cluster) {
		free(row.cluster);
		return r;
	}
	*ret_cluster = row.cluster;
	return 0;
}

void store_node_free(struct store_node *n)
{
	if (!n)
		return;
	free(n->id);
	free(n->cluster);
	free(n->hostname);
	free(n->state);
	free(n->cert_serial);
	free(n->cert_fingerprint);
	free(n->agent_version);
	free(n->facts_json);
	free(n->summary);
	free(n->snapshot_json);
	free(n);
}

void store_nodes_free(struct store_node **nodes, size_t n)
{
	if (!nodes)
		return;
	for (size_t i = 0; i < n; i++)
		store_node_free(nodes[i]);
	free(nodes);
}

/* Build a node from a row of NODE_COLUMNS. */
static int node_from_row(sqlite3_stmt *st, struct store_node **ret)
{
	struct store_node *n = calloc(1, sizeof(*n));
	char **cols[] = {&n->id,	  &n->cluster,		&n->hostname,	   &n->state,
			 &n->cert_serial, &n->cert_fingerprint, &n->agent_version, &n->facts_json};
	char **derived[] = {&n->summary, &n->snapshot_json};

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < RY_ARRAY_SIZE(cols); i++) {
		if (store_col_dup(st, (int)i, cols[i]) < 0) {
			store_node_free(n);
			return -ENOMEM;
		}
	}
	n->enrolled_at_ms = sqlite3_column_int64(st, 8);
	n->last_seen_ms = sqlite3_column_int64(st, 9);
	/* Whose version derived_v is, node_mark() tells; derived stays false until then. */
	n->derived = false;
	for (size_t i = 0; i < RY_ARRAY_SIZE(derived); i++) {
		if (store_col_dup(st, 10 + (int)i, derived[i]) < 0) {
			store_node_free(n);
			return -ENOMEM;
		}
	}
	n->derived_version = sqlite3_column_int64(st, 12);
	*ret = n;
	return 0;
}

/* Are n's derived members of s's deriver? */
static void node_mark(const struct store *s, struct store_node *n)
{
	n->derived = s->deriver && n->derived_version == s->deriver->version;
}

/* By id, or else by hostname when unique across clusters. */
static int node_lookup_locked(struct store_conn *c, const char *key, struct store_node **ret)
{
	struct store_node *n = NULL;
	sqlite3_stmt *st = NULL;
	int r;

	r = store_q_start(c, &SQL_NODE_BY_ID, &st, "t", key);
	if (r < 0)
		return r;
	r = store_q_step(c, st);
	if (r == 1) {
		r = node_from_row(st, ret);
		store_q_end(st);
		return r;
	}
	store_q_end(st);
	if (r < 0)
		return r;

	r = store_q_start(c, &SQL_NODE_BY_HOSTNAME, &st, "t", key);
	if (r < 0)
		return r;
	r = store_q_step(c, st);
	if (r < 0)
		goto out;
	if (r == 0) {
		r = -RY_E_NOT_FOUND;
		goto out;
	}
	r = node_from_row(st, &n);
	if (r < 0)
		goto out;
	r = store_q_step(c, st);
	if (r < 0)
		goto out;
	if (r == 1) {
		r = -ENOTUNIQ;
		goto out;
	}
	*ret = n;
	n = NULL;
out:
	store_q_end(st);
	store_node_free(n);
	return r;
}

int store_node_get(struct store *s, const char *id_or_hostname, struct store_node **ret)
{
	struct store_conn *c = &s->r;
	struct store_node *n = NULL;
	int r;

	if (!s || !id_or_hostname || !ret)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = node_lookup_locked(c, id_or_hostname, &n);
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	node_mark(s, n);
	*ret = n;
	return 0;
}

int store_node_facts(struct store *s, const char *id, char **ret_facts)
{
	if (!s || !id || !ret_facts)
		return -EINVAL;
	return store_q_text(&s->r, &SQL_NODE_FACTS_GET, id, ret_facts);
}

static int node_row(sqlite3_stmt *st, void *elem)
{
	return node_from_row(st, elem);
}

static int nodes_listing(struct store *s, bool brief, struct store_node ***ret_nodes, size_t *ret_n)
{
	struct store_node **v = NULL;
	size_t n = 0;
	int r;

	if (!s || !ret_nodes || !ret_n)
		return -EINVAL;
	if (brief)
		r = store_q_list(&s->r, &SQL_NODE_BRIEF, sizeof(*v), node_row, nodes_free_v,
				 (void **)&v, &n, "l",
				 (int64_t)(s->deriver ? s->deriver->version : -1));
	else
		r = store_q_list(&s->r, &SQL_NODE_LIST, sizeof(*v), node_row, nodes_free_v,
				 (void **)&v, &n, "");
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		node_mark(s, v[i]);
	*ret_nodes = v;
	*ret_n = n;
	return 0;
}

int store_nodes_list(struct store *s, struct store_node ***ret_nodes, size_t *ret_n)
{
	return nodes_listing(s, false, ret_nodes, ret_n);
}

int store_nodes_scan(struct store *s, const char *cluster,
		     int (*fn)(void *ud, const struct store_node *n), void *ud)
{
	struct store_conn *c = &s->r;
	sqlite3_stmt *st = NULL;
	int r;

	if (!s || !cluster || !fn)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_q_start(c, &SQL_NODE_SCAN, &st, "t", cluster);
	while (r >= 0 && (r = store_q_step(c, st)) == 1) {
		/* The row's own text, borrowed: valid until the next step. */
		struct store_node n = {
			.id = (char *)sqlite3_column_text(st, 0),
			.cluster = (char *)sqlite3_column_text(st, 1),
			.hostname = (char *)sqlite3_column_text(st, 2),
			.state = (char *)sqlite3_column_text(st, 3),
			.cert_serial = (char *)sqlite3_column_text(st, 4),
			.cert_fingerprint = (char *)sqlite3_column_text(st, 5),
			.agent_version = (char *)sqlite3_column_text(st, 6),
			.facts_json = (char *)sqlite3_column_text(st, 7),
			.enrolled_at_ms = sqlite3_column_int64(st, 8),
			.last_seen_ms = sqlite3_column_int64(st, 9),
			.summary = (char *)sqlite3_column_text(st, 10),
			.snapshot_json = (char *)sqlite3_column_text(st, 11),
			.derived_version = sqlite3_column_int64(st, 12),
		};

		if (!n.id || !n.cluster || !n.hostname || !n.state) {
			r = -ENOMEM; /* sqlite3_column_text() of a NOT NULL column */
			break;
		}
		node_mark(s, &n);
		r = fn(ud, &n);
	}
	store_q_end(st);
	pthread_mutex_unlock(&c->lock);
	return r < 0 ? r : 0;
}

int store_nodes_brief(struct store *s, struct store_node ***ret_nodes, size_t *ret_n)
{
	return nodes_listing(s, true, ret_nodes, ret_n);
}

void store_set_facts_deriver(struct store *s, const struct store_facts_deriver *d)
{
	if (s)
		s->deriver = d;
}

/* One transaction of store_nodes_rederive(): up to REDERIVE_BATCH rows; *ret_n how many. */
static int rederive_batch(struct store *s, size_t *ret_n)
{
	struct store_conn *c = &s->w;
	struct {
		char *id, *facts;
	} rows[REDERIVE_BATCH];
	int64_t version = s->deriver->version;
	sqlite3_stmt *st = NULL;
	size_t n = 0;
	int r;

	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto unlock;
	r = store_q_start(c, &SQL_NODE_UNDERIVED, &st, "ll", version, (int64_t)REDERIVE_BATCH);
	while (r >= 0 && (r = store_q_step(c, st)) == 1) {
		rows[n].id = rows[n].facts = NULL;
		if (store_col_dup(st, 0, &rows[n].id) < 0 ||
		    store_col_dup(st, 1, &rows[n].facts) < 0)
			r = -ENOMEM;
		n++;
	}
	store_q_end(st);
	for (size_t i = 0; r >= 0 && i < n; i++) {
		json_t *root = json_loads(rows[i].facts, 0, NULL);
		struct derived d = {NULL, NULL, version};

		if (json_is_object(root))
			derive(s, root, &d);
		json_decref(root);
		r = store_q_exec(c, NULL, &SQL_NODE_DERIVED, "tttl", rows[i].id, d.summary,
				 d.snapshot, version);
		derived_done(&d);
	}
	if (r >= 0)
		r = store_tx_commit(c);
	else
		store_tx_rollback(c);
unlock:
	pthread_mutex_unlock(&c->lock);
	for (size_t i = 0; i < n; i++) {
		free(rows[i].id);
		free(rows[i].facts);
	}
	if (r >= 0)
		*ret_n = n;
	return r;
}

int store_nodes_rederive(struct store *s, size_t *ret_n)
{
	size_t total = 0, n = 0;
	int r = 0;

	if (!s)
		return -EINVAL;
	if (s->deriver) {
		do {
			r = rederive_batch(s, &n);
			total += r >= 0 ? n : 0;
		} while (r >= 0 && n == REDERIVE_BATCH);
	}
	if (r >= 0 && ret_n)
		*ret_n = total;
	return r;
}

/* After an UPDATE guarded by "state != 'revoked'" changed nothing: say why. */
/* 0 when the node exists and is not revoked; -RY_E_REVOKED, -RY_E_NOT_FOUND, -RY_E_DB. */
static int node_state_locked(struct store_conn *c, const char *id)
{
	sqlite3_stmt *st = NULL;
	int r;

	r = store_q_start(c, &SQL_NODE_STATE, &st, "t", id);
	if (r < 0)
		return r;
	r = store_q_step(c, st);
	if (r == 0)
		r = -RY_E_NOT_FOUND;
	else if (r == 1)
		r = strcmp((const char *)sqlite3_column_text(st, 0), "revoked") == 0 ? -RY_E_REVOKED
										     : 0;
	store_q_end(st);
	return r;
}

static int node_why_unchanged_locked(struct store_conn *c, const char *id)
{
	int r = node_state_locked(c, id);

	return r == 0 ? store_db_fail_msg(c, "node update matched nothing") : r;
}

/* Run one of the per-node updates (each a single autocommit statement, so one transaction); d:
 * what was derived from the facts among a and b (NULL for the statements without facts). */
static int node_update(struct store *s, const char *id, struct store_sql *stmt, int64_t now_ms,
		       const char *a, const char *b, const struct derived *d)
{
	struct store_conn *c = &s->w;
	const char *facts = stmt == &SQL_NODE_ONLINE ? b : stmt == &SQL_NODE_FACTS ? a : NULL;
	int r, changed = 0;

	pthread_mutex_lock(&c->lock);
	/* With facts, the node's row and its facts in one transaction. */
	r = facts ? store_tx_begin(c) : 0;
	if (r < 0)
		goto unlock;
	if (stmt == &SQL_NODE_ONLINE)
		r = store_q_exec(c, &changed, stmt, "tlttttl", id, now_ms, a, b, d->summary,
				 d->snapshot, d->version);
	else if (stmt == &SQL_NODE_FACTS)
		r = store_q_exec(c, &changed, stmt, "tlttl", id, now_ms, d->summary, d->snapshot,
				 d->version);
	else
		r = store_q_exec(c, &changed, stmt, "tl", id, now_ms);
	if (r == 0 && changed == 0)
		r = node_why_unchanged_locked(c, id);
	if (r == 0 && facts)
		r = store_q_exec(c, NULL, &SQL_NODE_FACTS_PUT, "tt", id, facts);
	if (facts) {
		if (r == 0)
			r = store_tx_commit(c);
		else
			store_tx_rollback(c);
	}
unlock:
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* Are facts_json the node's stored facts, byte for byte? On the writer (inside a batch, it
 * sees what the batch wrote). */
static bool facts_unchanged(struct store *s, const char *id, const char *facts_json)
{
	struct store_conn *c = &s->w;
	sqlite3_stmt *st = NULL;
	bool same = false;

	pthread_mutex_lock(&c->lock);
	if (store_q_start(c, &SQL_NODE_FACTS_SAME, &st, "ttl", id, facts_json,
			  (int64_t)(s->deriver ? s->deriver->version : 0)) == 0)
		same = store_q_step(c, st) == 1;
	store_q_end(st);
	pthread_mutex_unlock(&c->lock);
	return same;
}

int store_node_online(struct store *s, const char *id, const char *agent_version,
		      const char *facts_json, int64_t now_ms)
{
	struct derived d = {NULL, NULL, 0};
	int r;

	if (!s || !id)
		return -EINVAL;
	if (agent_version && strnlen(agent_version, STORE_TEXT_MAX + 1) > STORE_TEXT_MAX)
		return -RY_E_INVALID;
	/* The same facts as stored (every reconnect of an unchanged node): nothing to parse or
	 * write. SQLite compares the bytes. */
	if (facts_json && facts_unchanged(s, id, facts_json))
		facts_json = NULL;
	if (facts_json) {
		r = facts_validate(s, facts_json, &d);
		if (r < 0)
			return r;
	}
	r = node_update(s, id, &SQL_NODE_ONLINE, now_ms, agent_version, facts_json, &d);
	derived_done(&d);
	return r;
}

int store_node_touch(struct store *s, const char *id, int64_t now_ms)
{
	if (!s || !id)
		return -EINVAL;
	return node_update(s, id, &SQL_NODE_TOUCH, now_ms, NULL, NULL, NULL);
}

int store_node_check(struct store *s, const char *id)
{
	struct store_conn *c = &s->r;
	int r;

	if (!s || !id)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = node_state_locked(c, id);
	pthread_mutex_unlock(&c->lock);
	return r;
}

int store_node_set_facts(struct store *s, const char *id, const char *facts_json, int64_t now_ms)
{
	struct derived d;
	int r;

	if (!s || !id || !facts_json)
		return -EINVAL;
	r = facts_validate(s, facts_json, &d);
	if (r < 0)
		return r;
	r = node_update(s, id, &SQL_NODE_FACTS, now_ms, facts_json, NULL, &d);
	derived_done(&d);
	return r;
}

int store_node_offline(struct store *s, const char *id, int64_t now_ms)
{
	int r;

	if (!s || !id)
		return -EINVAL;
	r = node_update(s, id, &SQL_NODE_OFFLINE, now_ms, NULL, NULL, NULL);
	/* The session of a revoked node ending is expected; it stays revoked. */
	return r == -RY_E_REVOKED ? 0 : r;
}

int store_nodes_expire(struct store *s, int64_t older_than_ms, int64_t now_ms, int *ret_count)
{
	struct store_conn *c = &s->w;
	int r, changed = 0;

	if (!s)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_q_exec(c, &changed, &SQL_NODES_EXPIRE, "l", older_than_ms);
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	if (ret_count)
		*ret_count = changed;
	return 0;
}

int store_nodes_all_offline(struct store *s, int64_t now_ms)
{
	struct store_conn *c = &s->w;
	int r;

	if (!s)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_q_exec(c, NULL, &SQL_NODES_ALL_OFFLINE, "");
	pthread_mutex_unlock(&c->lock);
	return r;
}

int store_nodes_seen(struct store *s, const char *const *ids, const int64_t *times_ms, size_t n)
{
	struct store_conn *c = &s->w;
	int r;

	if (!s || (n && (!ids || !times_ms)))
		return -EINVAL;
	if (n == 0)
		return 0;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	for (size_t i = 0; r >= 0 && i < n; i++)
		r = store_q_exec(c, NULL, &SQL_NODE_SEEN, "tl", ids[i], times_ms[i]);
	if (r >= 0)
		r = store_tx_commit(c);
	else
		store_tx_rollback(c);
	pthread_mutex_unlock(&c->lock);
	return r;
}

void store_ids_free(char **ids, size_t n)
{
	if (!ids)
		return;
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
}

static int id_row(sqlite3_stmt *st, void *elem)
{
	return store_col_dup(st, 0, elem);
}

int store_nodes_revoked(struct store *s, char ***ret_ids, size_t *ret_n)
{
	if (!s || !ret_ids || !ret_n)
		return -EINVAL;
	return store_q_list(&s->r, &SQL_NODES_REVOKED, sizeof(char *), id_row, ids_free_v,
			    (void **)ret_ids, ret_n, "");
}

int store_node_revoke(struct store *s, const char *id_or_hostname, const char *actor,
		      int64_t now_ms, char **ret_node_id)
{
	struct store_conn *c = &s->w;
	struct store_node *n = NULL;
	char *detail = NULL;
	int r;

	if (!s || !id_or_hostname || !actor)
		return -EINVAL;
	if (!store_text_ok(actor, STORE_TEXT_MAX))
		return -RY_E_INVALID;
	pthread_mutex_lock(&c->lock);
	r = store_tx_begin(c);
	if (r < 0)
		goto unlock;
	r = node_lookup_locked(c, id_or_hostname, &n);
	if (r < 0)
		goto rollback;
	if (strcmp(n->state, "revoked") == 0) {
		r = store_tx_commit(c);
		goto unlock;
	}
	r = store_q_exec(c, NULL, &SQL_NODE_REVOKE, "tl", n->id, now_ms);
	if (r < 0)
		goto rollback;
	r = store_q_exec(c, NULL, &SQL_REVOKED_INSERT, "ttl", n->cert_serial, n->id, now_ms);
	if (r < 0)
		goto rollback;
	if (asprintf(&detail, "cluster=%s hostname=%s serial=%s", n->cluster, n->hostname,
		     n->cert_serial) < 0) {
		detail = NULL;
		r = -ENOMEM;
		goto rollback;
	}
	r = store_audit_locked(c, now_ms, actor, "node.revoke", n->id, "success", detail);
	if (r < 0)
		goto rollback;
	r = store_tx_commit(c);
	goto unlock;
rollback:
	store_tx_rollback(c);
unlock:
	pthread_mutex_unlock(&c->lock);
	free(detail);
	if (r == 0 && ret_node_id) {
		*ret_node_id = n->id;
		n->id = NULL;
	}
	store_node_free(n);
	return r;
}

int store_cert_is_revoked(struct store *s, const char *serial_hex)
{
	struct store_conn *c = &s->r;
	sqlite3_stmt *st = NULL;
	int r;

	if (!s || !serial_hex)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = store_q_start(c, &SQL_REVOKED_GET, &st, "t", serial_hex);
	if (r == 0)
		r = store_q_step(c, st);
	store_q_end(st);
	pthread_mutex_unlock(&c->lock);
	return r;
}
