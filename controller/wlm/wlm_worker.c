/* The WLM worker of a serving controller: one thread that carries the ledger's pending drains
 * and resumes out (per node in order of id), records each result in the ledger, retries a
 * failed command with backoff, and keeps what the WLM says of each bound cluster's nodes for
 * the front ends. Its commands may block for the binding's timeout, so it has its own thread:
 * the engine's passes only kick it. */
#include "controller/wlm/wlm.h"
#include "controller/events.h"
#include "controller/server.h"
#include "controller/service.h"
#include "controller/session.h"
#include "controller/state.h"
#include "controller/store/store.h"
#include "controller/store/store_wlm.h"

#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A row is retried this many times (backoff 1 s, 2 s, ... at most 60 s) before it fails. */
#define WLM_ATTEMPTS_MAX   8
#define WLM_BACKOFF_MAX_MS 60000
/* The worker looks at the ledger at least this often, and reads each bound cluster's node
 * states this often. */
#define WLM_WAKE_MS    2000
#define WLM_REFRESH_MS 5000
/* Pending rows read per round. */
#define WLM_BATCH 200

struct ctl_wlm {
	struct ctl_server *srv;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool kicked, stopping;
	json_t *nodes; /* {cluster: {name: {...}}}, under lock */
	int64_t refreshed_ms;
};

static struct store *store_of(struct ctl_wlm *w)
{
	return ctl_server_state(w->srv)->store;
}

/* Bindings loaded for one round (NULL entries: unbound), and for Slurm what one sinfo said of
 * every node at the round's first resume (NULL until then, or when it failed). */
struct bcache {
	char **cluster;
	struct wlm_binding **b;
	json_t **snap;
	bool *snapped;
	size_t n;
};

static const struct wlm_binding *binding(struct ctl_wlm *w, struct bcache *c, const char *cluster)
{
	struct wlm_binding *b = NULL;
	char **nc;
	struct wlm_binding **nb;

	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->cluster[i], cluster) == 0)
			return c->b[i];
	if (wlm_binding_load(store_of(w), cluster, &b) < 0)
		b = NULL;
	nc = realloc(c->cluster, (c->n + 1) * sizeof(*nc));
	if (nc)
		c->cluster = nc;
	nb = realloc(c->b, (c->n + 1) * sizeof(*nb));
	if (nb)
		c->b = nb;
	{
		json_t **ns = realloc(c->snap, (c->n + 1) * sizeof(*ns));
		bool *nd;

		if (ns)
			c->snap = ns;
		nd = realloc(c->snapped, (c->n + 1) * sizeof(*nd));
		if (nd)
			c->snapped = nd;
		if (!ns || !nd)
			nc = NULL;
	}
	if (!nc || !nb || !(c->cluster[c->n] = strdup(cluster))) {
		wlm_binding_free(b);
		return NULL;
	}
	c->snap[c->n] = NULL;
	c->snapped[c->n] = false;
	c->b[c->n++] = b;
	return b;
}

/* What one sinfo said of node name of cluster this round (borrowed; NULL: not known). Taken
 * once per cluster and round: a campaign's resumes of a thousand passing nodes cost one sinfo
 * and a call per node that is really drained by us, not a thousand queries. */
static const json_t *snapshot(struct bcache *c, const char *cluster, const char *name)
{
	for (size_t i = 0; i < c->n; i++) {
		char why[256];

		if (strcmp(c->cluster[i], cluster) != 0)
			continue;
		if (!c->snapped[i] && c->b[i] && c->b[i]->kind == WLM_SLURM) {
			c->snapped[i] = true;
			if (wlm_query_all(c->b[i], &c->snap[i], why, sizeof(why)) < 0)
				c->snap[i] = NULL;
		}
		return json_object_get(c->snap[i], name);
	}
	return NULL;
}

static void bcache_done(struct bcache *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->cluster[i]);
		wlm_binding_free(c->b[i]);
		json_decref(c->snap[i]);
	}
	free(c->cluster);
	free(c->b);
	free(c->snap);
	free(c->snapped);
}

/* Carry one row out: its final state (or "pending" to retry) and the result's words. */
static const char *carry_out(struct ctl_wlm *w, const struct wlm_binding *b, struct bcache *bc,
			     const struct store_wlm_action *a, char *result, size_t len, int *ret_r)
{
	enum wlm_resume how = 0;
	const json_t *seen;
	int r;

	*ret_r = 0;
	result[0] = '\0';
	if (!b) {
		snprintf(result, len, "the cluster is not bound to a workload manager (any more)");
		return "failed";
	}
	if (strcmp(a->action, "drain") == 0) {
		r = wlm_drain(b, a->wlm_name, a->reason, result, len);
		if (r == 0) {
			snprintf(result, len, "drained");
			return "done";
		}
		*ret_r = r;
		return "pending";
	}
	/* The round's sinfo rules out the nodes that are not ours to resume; a node it says is
	 * ours has its reason read again just before the resume (wlm_resume_if_ours()). */
	seen = snapshot(bc, a->cluster, a->wlm_name);
	if (seen && !json_is_true(json_object_get(seen, "ours"))) {
		const char *why = json_string_value(json_object_get(seen, "reason"));

		if (!json_is_true(json_object_get(seen, "drained")) && (!why || !*why)) {
			snprintf(result, len, "already in service");
			return "done";
		}
		snprintf(result, len, "%s", why && *why ? why : "drained, no reason");
		return "not_ours";
	}
	r = wlm_resume_if_ours(b, a->wlm_name, &how, result, len);
	if (r == -ENOTSUP) {
		/* Hooks that cannot read a reason: ours when our ledger's last word on the node is
		 * a drain that was done. */
		r = store_wlm_drained_by_us(store_of(w), a->cluster, a->wlm_name);
		if (r == 1) {
			r = wlm_resume(b, a->wlm_name, result, len);
			how = WLM_RESUMED;
		} else if (r == 0) {
			snprintf(result, len, "not drained by railyard (ledger)");
			return "not_ours";
		}
	}
	if (r == -RY_E_NOT_FOUND)
		return "failed"; /* the WLM does not know the node: retrying changes nothing */
	if (r < 0) {
		*ret_r = r;
		return "pending";
	}
	if (how == WLM_NOT_OURS)
		return "not_ours"; /* result: the admin's reason */
	snprintf(result, len, "%s", how == WLM_RESUMED ? "resumed" : "already in service");
	return "done";
}

static bool blocked(char **v, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], key) == 0)
			return true;
	return false;
}

static void round_ledger(struct ctl_wlm *w)
{
	struct store_wlm_action *v = NULL;
	struct bcache bc = {0};
	char **blk = NULL;
	size_t n = 0, nb = 0;
	int r = store_wlm_pending(store_of(w), WLM_BATCH, &v, &n);

	if (r < 0) {
		if (!ctl_store_transient(r))
			log_error("wlm: reading the ledger: %s", ry_strerror(r));
		return;
	}
	blk = calloc(n ? n : 1, sizeof(*blk));
	for (size_t i = 0; blk && i < n; i++) {
		const struct store_wlm_action *a = &v[i];
		char key[600], result[600];
		const char *state;
		int64_t now = util_now_unix_ms(), next = 0;
		int err = 0;

		pthread_mutex_lock(&w->lock);
		r = w->stopping;
		pthread_mutex_unlock(&w->lock);
		if (r)
			break;
		snprintf(key, sizeof(key), "%s/%s", a->cluster, a->wlm_name);
		/* Per node in order: a row waits for the ones before it. */
		if (blocked(blk, nb, key))
			continue;
		if (a->next_at > now) {
			blk[nb++] = strdup(key);
			continue;
		}
		state = carry_out(w, binding(w, &bc, a->cluster), &bc, a, result, sizeof(result),
				  &err);
		now = util_now_unix_ms(); /* done_at: when the command came back */
		if (strcmp(state, "pending") == 0) {
			int64_t backoff = 1000LL << (a->attempts < 6 ? a->attempts : 6);

			if (a->attempts + 1 >= WLM_ATTEMPTS_MAX)
				state = "failed";
			next = now + (backoff < WLM_BACKOFF_MAX_MS ? backoff : WLM_BACKOFF_MAX_MS);
			log_warn("wlm: %s %s (%s %s): %s%s", a->action, a->wlm_name, a->source,
				 a->source_id, result,
				 strcmp(state, "failed") == 0 ? ", gave up" : "");
		}
		r = store_wlm_action_result(store_of(w), a->id, state, result, next, now);
		if (r < 0) {
			log_error("wlm: recording %s %s: %s", a->action, a->wlm_name,
				  ry_strerror(r));
			break; /* the next round finds it pending: the command is idempotent */
		}
		if (strcmp(state, "pending") == 0)
			blk[nb++] = strdup(key);
		else
			log_info("wlm: %s %s (%s %s): %s: %s", a->action, a->wlm_name, a->source,
				 a->source_id, state, result);
		ctl_events_emit(ctl_server_events(w->srv), "wlm.action", a->cluster,
				json_pack("{s:I, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "id",
					  (json_int_t)a->id, "node", a->wlm_name, "hostname",
					  a->hostname, "action", a->action, "source", a->source,
					  "source_id", a->source_id, "state", state, "result",
					  result));
		(void)err;
	}
	for (size_t i = 0; i < nb; i++)
		free(blk[i]);
	free(blk);
	bcache_done(&bc);
	store_wlm_actions_free(v, n);
}

/* Read what the WLM says of each bound cluster's nodes; a node whose state or reason changed
 * is told to the event stream. */
static void round_refresh(struct ctl_wlm *w)
{
	char **clusters = NULL;
	size_t n = 0;

	if (store_wlm_bound_clusters(store_of(w), &clusters, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		struct wlm_binding *b = NULL;
		json_t *now = NULL, *before, *v;
		const char *name;
		char why[256];

		if (wlm_binding_load(store_of(w), clusters[i], &b) < 0 ||
		    wlm_query_all(b, &now, why, sizeof(why)) < 0) {
			wlm_binding_free(b);
			continue;
		}
		pthread_mutex_lock(&w->lock);
		before = json_incref(
			json_object_get(json_object_get(w->nodes, clusters[i]), "nodes"));
		json_object_set_new(w->nodes, clusters[i],
				    json_pack("{s:O, s:O, s:I}", "node_map", b->node_map, "nodes",
					      now, "seen_at", (json_int_t)util_now_unix_ms()));
		pthread_mutex_unlock(&w->lock);
		wlm_binding_free(b);
		json_object_foreach(now, name, v)
		{
			json_t *was = json_object_get(before, name);

			if (!json_equal(was, v))
				ctl_events_emit(ctl_server_events(w->srv), "wlm.node", clusters[i],
						json_pack("{s:s, s:O}", "node", name, "wlm", v));
		}
		json_decref(before);
		json_decref(now);
	}
	for (size_t i = 0; i < n; i++)
		free(clusters[i]);
	free(clusters);
}

static void *worker_main(void *ud)
{
	struct ctl_wlm *w = ud;

	for (;;) {
		struct timespec ts;
		bool stop;
		int64_t now;

		pthread_mutex_lock(&w->lock);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += WLM_WAKE_MS / 1000;
		while (!w->kicked && !w->stopping)
			if (pthread_cond_timedwait(&w->cond, &w->lock, &ts) == ETIMEDOUT)
				break;
		w->kicked = false;
		stop = w->stopping;
		pthread_mutex_unlock(&w->lock);
		if (stop)
			break;
		round_ledger(w);
		now = util_now_mono_ms();
		if (now - w->refreshed_ms >= WLM_REFRESH_MS) {
			w->refreshed_ms = now;
			round_refresh(w);
		}
	}
	return NULL;
}

int ctl_wlm_start(struct ctl_server *srv, struct ctl_wlm **ret)
{
	struct ctl_wlm *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->srv = srv;
	w->nodes = json_object();
	w->refreshed_ms = util_now_mono_ms() - WLM_REFRESH_MS;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	if (!w->nodes || pthread_create(&w->thread, NULL, worker_main, w) != 0) {
		json_decref(w->nodes);
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->cond);
		free(w);
		return -EAGAIN;
	}
	*ret = w;
	return 0;
}

void ctl_wlm_kick(struct ctl_wlm *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->kicked = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

void ctl_wlm_stop(struct ctl_wlm *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	json_decref(w->nodes);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w);
}

json_t *ctl_wlm_nodes(struct ctl_wlm *w, const char *cluster)
{
	json_t *v;

	if (!w || !cluster)
		return json_object();
	pthread_mutex_lock(&w->lock);
	v = json_deep_copy(json_object_get(json_object_get(w->nodes, cluster), "nodes"));
	pthread_mutex_unlock(&w->lock);
	return v ? v : json_object();
}

void ctl_wlm_annotate(struct ctl_wlm *w, json_t *node)
{
	struct wlm_binding b = {0};
	char name[WLM_NAME_MAX + 1];
	const char *cluster = json_string_value(json_object_get(node, "cluster"));
	const char *host = json_string_value(json_object_get(node, "hostname"));
	json_t *e, *v;

	if (!w || !cluster || !host)
		return;
	pthread_mutex_lock(&w->lock);
	e = json_object_get(w->nodes, cluster);
	b.node_map = json_object_get(e, "node_map");
	if (e && wlm_node_name(&b, host, name, sizeof(name)) == 0) {
		v = json_object_get(json_object_get(e, "nodes"), name);
		v = v ? json_deep_copy(v) : json_pack("{s:s}", "state", "unknown");
		json_object_set_new(v, "name", json_string(name));
		json_object_set(v, "seen_at", json_object_get(e, "seen_at"));
		json_object_set_new(node, "wlm", v);
	}
	pthread_mutex_unlock(&w->lock);
}
