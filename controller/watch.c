/* The agents' health watchers on the controller (controller/watch.h). */
#include "controller/watch.h"

#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"
#include "controller/engine/engine.h"
#include "controller/events.h"
#include "controller/session.h"
#include "controller/state.h"
#include "controller/store/store_health.h"
#include "controller/store/store_nodes.h"
#include "controller/store/store_deploy.h"
#include "common/playbook/playbook.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define WATCH_SOURCE_MAX 64
#define WATCH_WHAT_MAX	 160
#define WATCH_BOOT_MAX	 64
/* An event stamped further ahead than this of the controller's clock is refused (its clock is
 * wrong, or it lies). */
#define WATCH_FUTURE_MS (5 * 60 * 1000)

static bool one_of(const char *v, const char *const *set)
{
	for (; v && *set; set++)
		if (strcmp(v, *set) == 0)
			return true;
	return false;
}

/* Printable (no control bytes), at most max bytes; empty allowed. */
static bool text_or_empty(const char *s, size_t max)
{
	return s && (!*s || ctl_valid_text(s, max));
}

static void refuse(struct ctl_outcome *o, const char *why)
{
	o->verdict = CTL_REFUSE;
	o->err_code = "invalid_field";
	snprintf(o->target, sizeof(o->target), "health event");
	snprintf(o->why, sizeof(o->why), "HealthEvent: %s", why);
}

static void on_health_event(struct ctl_server *srv, struct ctl_session *s,
			    const Railyard__V1__AgentMessage *m, struct ctl_outcome *o)
{
	static const char *const kinds[] = {"xid",    "kmsg",	   "port", "gpu",
					    "nvlink", "readiness", NULL};
	static const char *const sevs[] = {"info", "warning", "critical", NULL};
	const Railyard__V1__HealthEvent *h = m->health_event;
	const char *node_id = ctl_session_node_id(s), *hostname = ctl_session_hostname(s);
	int64_t now = util_now_unix_ms();
	struct store_health_event ev = {0};
	int r;

	if (!one_of(h->kind, kinds)) {
		refuse(o, "kind must be xid, kmsg, port, gpu, nvlink or readiness");
		return;
	}
	if (!one_of(h->severity, sevs)) {
		refuse(o, "severity must be info, warning or critical");
		return;
	}
	if (!ctl_valid_text(h->source, WATCH_SOURCE_MAX) ||
	    !ctl_valid_text(h->what, WATCH_WHAT_MAX)) {
		refuse(o, "source (1-64) and what (1-160) must be printable text");
		return;
	}
	if (!text_or_empty(h->detail, STORE_HEALTH_DETAIL_MAX) ||
	    !text_or_empty(h->boot_id, WATCH_BOOT_MAX)) {
		refuse(o, "detail (at most 1024) and boot_id (at most 64) must be printable text");
		return;
	}
	if (h->at_ms <= 0 || h->at_ms > now + WATCH_FUTURE_MS || h->repeats > 1000000000ULL) {
		refuse(o, "at_ms must be a time not in the future, repeats at most 10^9");
		return;
	}
	ev.node_id = (char *)node_id;
	ev.at_ms = h->at_ms;
	ev.received_ms = now;
	ev.kind = h->kind;
	ev.severity = h->severity;
	ev.source = h->source;
	ev.what = h->what;
	ev.detail = h->detail;
	ev.boot_id = h->boot_id;
	ev.repeats = (int64_t)h->repeats;
	r = store_health_add(ctl_server_state(srv)->store, &ev);
	if (r == -EINVAL) {
		refuse(o, "a field the store refuses");
		return;
	}
	if (r < 0) {
		ctl_outcome_store_error(srv, o, r, "storing a health event");
		return;
	}
	if (strcmp(h->severity, "info") != 0)
		log_warn("node %s: health %s: %s (%s)", hostname, h->severity, h->what, h->source);
	ctl_events_emit(ctl_server_events(srv), "node.health", ctl_session_cluster(s),
			json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I}", "node", node_id,
				  "hostname", hostname, "kind", h->kind, "severity", h->severity,
				  "source", h->source, "what", h->what, "at_ms",
				  (json_int_t)h->at_ms));
	o->verdict = CTL_DONE;
	if (strcmp(h->severity, "critical") == 0)
		o->kick = true; /* the WLM worker: a drain may have been written ahead */
}

/* ---- the nodes' health settings ------------------------------------------------------------ */

/* Playbooks' health sections by content hash: each playbook is parsed once (bounded; a full
 * cache is emptied). Process-wide: the key is the content, so servers may share it. */
#define CONFIG_CACHE_MAX 64
/* The playbooks looked at for a node: its newest applied ones. */
#define CONFIG_SCAN 8
/* How often the pass looks for deployments that ended. */
#define CONFIG_SCAN_MS 2000

static struct {
	pthread_mutex_t lock;
	struct {
		char sha[65];
		char *json; /* NULL: the playbook has no health section */
	} e[CONFIG_CACHE_MAX];
	size_t n;
	int64_t seen_finished_ms; /* deployments that ended after this are still to announce */
	int64_t next_scan_ms;
} cfg_cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The health JSON of a playbook (sha, text): 1 and *ret (caller frees) when it has a health
 * section, 0 when not, -ENOMEM. */
static int playbook_health_text(const char *sha, const char *text, char **ret)
{
	struct playbook *pb = NULL;
	char *json = NULL;
	size_t i;
	int r = 0;

	pthread_mutex_lock(&cfg_cache.lock);
	for (i = 0; i < cfg_cache.n; i++)
		if (strcmp(cfg_cache.e[i].sha, sha) == 0) {
			r = cfg_cache.e[i].json ? 1 : 0;
			if (r && !(*ret = strdup(cfg_cache.e[i].json)))
				r = -ENOMEM;
			pthread_mutex_unlock(&cfg_cache.lock);
			return r;
		}
	pthread_mutex_unlock(&cfg_cache.lock);
	/* A stored playbook was valid when it was stored; one that no longer parses (a newer
	 * controller's stricter rules) is as if it had no health section. */
	if (playbook_parse(text, strlen(text), "stored playbook", &pb, NULL) == 0 &&
	    playbook_has_health(pb))
		json = json_dumps(playbook_health_json(pb), JSON_COMPACT | JSON_SORT_KEYS);
	playbook_free(pb);
	pthread_mutex_lock(&cfg_cache.lock);
	if (cfg_cache.n == CONFIG_CACHE_MAX) {
		for (i = 0; i < cfg_cache.n; i++)
			free(cfg_cache.e[i].json);
		cfg_cache.n = 0;
	}
	snprintf(cfg_cache.e[cfg_cache.n].sha, sizeof(cfg_cache.e[0].sha), "%s", sha);
	cfg_cache.e[cfg_cache.n].json = json ? strdup(json) : NULL;
	cfg_cache.n++;
	pthread_mutex_unlock(&cfg_cache.lock);
	if (!json)
		return 0;
	*ret = json;
	return 1;
}

int ctl_watch_node_config(struct store *st, const char *node_id, char **ret_json, char **ret_from)
{
	struct store_health_event *v = NULL;
	size_t n = 0;
	char *json = NULL;
	int r = store_health_node_playbooks(st, node_id, CONFIG_SCAN, &v, &n);

	for (size_t i = 0; r >= 0 && i < n; i++) {
		r = playbook_health_text(v[i].source, v[i].detail ? v[i].detail : "", &json);
		if (r == 1) {
			*ret_json = json;
			*ret_from = strdup(v[i].what);
			store_health_events_free(v, n);
			if (!*ret_from) {
				free(json);
				return -ENOMEM;
			}
			return 0;
		}
	}
	store_health_events_free(v, n);
	if (r < 0)
		return r;
	*ret_json = strdup("");
	*ret_from = strdup("");
	if (!*ret_json || !*ret_from) {
		free(*ret_json);
		free(*ret_from);
		return -ENOMEM;
	}
	return 0;
}

static void send_config(struct ctl_server *srv, const char *node_id)
{
	Railyard__V1__ControllerMessage m = RAILYARD__V1__CONTROLLER_MESSAGE__INIT;
	Railyard__V1__HealthConfig hc = RAILYARD__V1__HEALTH_CONFIG__INIT;
	char *json = NULL, *from = NULL;
	int r = ctl_watch_node_config(ctl_server_state(srv)->store, node_id, &json, &from);

	if (r < 0) {
		log_warn("node %s: its health settings not read: %s", node_id, ry_strerror(r));
		return;
	}
	hc.config_json = json;
	hc.playbook = from;
	m.body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_HEALTH_CONFIG;
	m.health_config = &hc;
	if (ctl_session_send(srv, node_id, &m) >= 0 && *from)
		log_debug("node %s: health settings of %s sent", node_id, from);
	free(json);
	free(from);
}

static void config_node_online(void *ud, const char *node_id)
{
	send_config(ud, node_id);
}

/* Deployments that ended since the last look: their nodes (online, succeeded) get their
 * settings again (the playbook may have brought a health section). */
static void config_pass(void *ud)
{
	struct ctl_server *srv = ud;
	struct store *st = ctl_server_state(srv)->store;
	struct store_deployment **deps = NULL;
	int64_t now = util_now_unix_ms(), newest;
	size_t nd = 0;

	pthread_mutex_lock(&cfg_cache.lock);
	if (now < cfg_cache.next_scan_ms) {
		pthread_mutex_unlock(&cfg_cache.lock);
		return;
	}
	cfg_cache.next_scan_ms = now + CONFIG_SCAN_MS;
	if (!cfg_cache.seen_finished_ms)
		cfg_cache.seen_finished_ms = now; /* at start: the sessions' Hellos send them */
	newest = cfg_cache.seen_finished_ms;
	pthread_mutex_unlock(&cfg_cache.lock);
	if (store_deployments_list(st, false, 20, &deps, &nd) < 0)
		return;
	for (size_t i = 0; i < nd; i++) {
		struct store_deploy_node *dn = NULL;
		size_t n = 0;

		if (deps[i]->check_mode || deps[i]->finished_at_ms <= cfg_cache.seen_finished_ms ||
		    store_deploy_nodes(st, deps[i]->id, &dn, &n) < 0)
			continue;
		if (deps[i]->finished_at_ms > newest)
			newest = deps[i]->finished_at_ms;
		for (size_t k = 0; k < n; k++)
			if (strcmp(dn[k].state, "succeeded") == 0 &&
			    ctl_session_online(srv, dn[k].node_id))
				send_config(srv, dn[k].node_id);
		store_deploy_nodes_free(dn, n);
	}
	store_deployments_free(deps, nd);
	pthread_mutex_lock(&cfg_cache.lock);
	cfg_cache.seen_finished_ms = newest;
	pthread_mutex_unlock(&cfg_cache.lock);
}

static const struct ctl_pass config_pass_def = {
	.name = "health-config",
	.run = config_pass,
	.node_online = config_node_online,
};

int ctl_watch_register(struct ctl_server *srv, struct ctl_engine *e)
{
	int r = ctl_engine_handle(e, RAILYARD__V1__AGENT_MESSAGE__BODY_HEALTH_EVENT,
				  on_health_event);

	if (r >= 0)
		r = ctl_engine_add_pass(e, &config_pass_def, srv);
	return r;
}

int ctl_watch_open(struct store *st, const char *cluster, const char *node_id, int64_t now_ms,
		   json_t **ret, struct ctl_error *err)
{
	struct store_health_event *v = NULL;
	size_t n = 0;
	json_t *out = json_object();
	int r = out ? store_health_open(st, cluster, node_id, now_ms - CTL_WATCH_WARN_WINDOW_MS,
					CTL_WATCH_OPEN_MAX, &v, &n)
		    : -ENOMEM;

	for (size_t i = 0; r >= 0 && i < n; i++) {
		json_t *list = json_object_get(out, v[i].node_id);
		char *text = NULL;
		json_t *p =
			asprintf(&text, "%s (%s, health event %lld)", v[i].what, v[i].source,
				 (long long)v[i].id) < 0
				? NULL
				: json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I}", "severity",
					    strcmp(v[i].severity, "critical") == 0 ? "failing"
										   : "degraded",
					    "source", "watch", "kind", v[i].kind, "device",
					    v[i].source, "text", text, "event", (json_int_t)v[i].id,
					    "at_ms", (json_int_t)v[i].received_ms);

		free(text);

		if (!list) {
			list = json_array();
			if (json_object_set_new(out, v[i].node_id, list) < 0)
				list = NULL;
		}
		if (!p || !list || json_array_append_new(list, p) < 0)
			r = -ENOMEM;
	}
	store_health_events_free(v, n);
	if (r < 0) {
		json_decref(out);
		return ctl_error_store(err, r, "reading health events");
	}
	*ret = out;
	return 0;
}

static int node_lookup(struct store *st, const char *id_or_host, struct store_node **ret,
		       struct ctl_error *err)
{
	int r = store_node_get(st, id_or_host, ret);

	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "node", "no node %s", id_or_host);
	if (r == -ENOTUNIQ)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_CONFLICT, "node",
				     "host name %s is ambiguous: use the id", id_or_host);
	if (r < 0)
		return ctl_error_store(err, r, "reading the node");
	return 0;
}

static json_t *event_json(const struct store_health_event *e)
{
	json_t *o = json_pack("{s:I, s:I, s:I, s:s, s:s, s:s, s:s, s:s, s:I, s:s}", "id",
			      (json_int_t)e->id, "at_ms", (json_int_t)e->at_ms, "received_ms",
			      (json_int_t)e->received_ms, "kind", e->kind, "severity", e->severity,
			      "source", e->source, "what", e->what, "detail",
			      e->detail ? e->detail : "", "repeats", (json_int_t)e->repeats,
			      "boot_id", e->boot_id ? e->boot_id : "");

	if (o && e->acked_ms) {
		json_object_set_new(o, "acked_ms", json_integer(e->acked_ms));
		json_object_set_new(o, "acked_by", json_string(e->acked_by ? e->acked_by : ""));
	}
	return o;
}

int ctl_watch_node_events(struct store *st, const char *id_or_host, size_t limit, json_t **ret,
			  struct ctl_error *err)
{
	struct store_node *nd = NULL;
	struct store_health_event *v = NULL;
	size_t n = 0;
	json_t *arr;
	int r = node_lookup(st, id_or_host, &nd, err);

	if (r < 0)
		return r;
	r = store_health_node(st, nd->id, 0, limit, &v, &n);
	if (r < 0) {
		store_node_free(nd);
		return ctl_error_store(err, r, "reading health events");
	}
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		json_array_append_new(arr, event_json(&v[i]));
	*ret = arr ? json_pack("{s:s, s:s, s:s, s:o}", "node", nd->id, "hostname", nd->hostname,
			       "cluster", nd->cluster, "events", arr)
		   : NULL;
	store_health_events_free(v, n);
	store_node_free(nd);
	if (!*ret)
		return ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	return 0;
}

int ctl_watch_ack(struct store *st, const char *id_or_host, const char *actor, json_t **ret,
		  struct ctl_error *err)
{
	struct store_node *nd = NULL;
	int n = 0, r = node_lookup(st, id_or_host, &nd, err);

	if (r < 0)
		return r;
	r = store_health_ack(st, nd->id, actor ? actor : "admin", util_now_unix_ms(), &n);
	if (r < 0) {
		store_node_free(nd);
		return ctl_error_store(err, r, "acknowledging health events");
	}
	*ret = json_pack("{s:s, s:s, s:i}", "node", nd->id, "hostname", nd->hostname,
			 "acknowledged", n);
	store_node_free(nd);
	return 0;
}

void ctl_watch_metrics(struct store *st, int64_t now_ms, FILE *f)
{
	struct store_health_event *v = NULL;
	size_t n = 0, listed = 0;
	json_t *per = json_object(); /* cluster -> {unhealthy: {node: 1}, degraded: {node: 1}} */
	const char *cluster;
	json_t *c;

	fprintf(f, "# HELP railyard_health_events_total Health events the agents' watchers "
		   "reported.\n# TYPE railyard_health_events_total counter\n");
	if (store_health_counts(st, &v, &n) >= 0)
		for (size_t i = 0; i < n; i++)
			fprintf(f,
				"railyard_health_events_total{cluster=\"%s\",kind=\"%s\","
				"severity=\"%s\"} %lld\n",
				v[i].cluster, v[i].kind, v[i].severity, (long long)v[i].repeats);
	store_health_events_free(v, n);
	v = NULL;
	n = 0;
	if (!per || store_health_open(st, NULL, NULL, now_ms - CTL_WATCH_WARN_WINDOW_MS,
				      CTL_WATCH_OPEN_MAX, &v, &n) < 0) {
		json_decref(per);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *cl = json_object_get(per, v[i].cluster);
		if (!cl) {
			cl = json_pack("{s:{}, s:{}, s:{}}", "unhealthy", "degraded", "host");
			json_object_set_new(per, v[i].cluster, cl);
		}
		if (!cl)
			continue;
		json_object_set_new(json_object_get(cl, "host"), v[i].node_id,
				    json_string(v[i].hostname));
		json_object_set_new(json_object_get(cl, strcmp(v[i].severity, "critical") == 0
								? "unhealthy"
								: "degraded"),
				    v[i].node_id, json_true());
	}
	fprintf(f, "# HELP railyard_nodes_health Nodes whose watchers reported open critical "
		   "(unhealthy) or warning (degraded, the last hour) events.\n"
		   "# TYPE railyard_nodes_health gauge\n");
	json_object_foreach(per, cluster, c)
	{
		json_t *unh = json_object_get(c, "unhealthy"),
		       *deg = json_object_get(c, "degraded");
		size_t only_degraded = 0;
		const char *id;
		json_t *x;

		json_object_foreach(deg, id, x)
		{
			(void)x;
			only_degraded += json_object_get(unh, id) == NULL;
		}
		fprintf(f, "railyard_nodes_health{cluster=\"%s\",state=\"unhealthy\"} %zu\n",
			cluster, json_object_size(unh));
		fprintf(f, "railyard_nodes_health{cluster=\"%s\",state=\"degraded\"} %zu\n",
			cluster, only_degraded);
	}
	fprintf(f,
		"# HELP railyard_node_unhealthy A node with open critical health events (at most "
		"%d named).\n# TYPE railyard_node_unhealthy gauge\n"
		"# HELP railyard_node_unhealthy_unlisted Unhealthy nodes of a cluster past those "
		"named.\n# TYPE railyard_node_unhealthy_unlisted gauge\n",
		CTL_WATCH_METRIC_NODES_MAX);
	json_object_foreach(per, cluster, c)
	{
		const char *id;
		json_t *x;
		size_t unlisted = 0;

		json_object_foreach(json_object_get(c, "unhealthy"), id, x)
		{
			(void)x;
			if (listed >= CTL_WATCH_METRIC_NODES_MAX) {
				unlisted++;
				continue;
			}
			listed++;
			fprintf(f, "railyard_node_unhealthy{cluster=\"%s\",node=\"%s\"} 1\n",
				cluster,
				json_string_value(json_object_get(json_object_get(c, "host"), id)));
		}
		if (unlisted)
			fprintf(f, "railyard_node_unhealthy_unlisted{cluster=\"%s\"} %zu\n",
				cluster, unlisted);
	}
	store_health_events_free(v, n);
	json_decref(per);
}
