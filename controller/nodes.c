/* The nodes service. */
#include "controller/nodes.h"
#include "controller/watch.h"

#include "common/facts/facts_doc.h"
#include "common/util/error.h"
#include "common/util/util.h"
#include "controller/rollout/deploy.h"
#include "controller/signoff/compare.h"
#include "controller/signoff/signoff.h"
#include "controller/signoff/snapshot.h"
#include "controller/store/store.h"
#include "controller/store/store_campaign.h"
#include "controller/store/store_deploy.h"
#include "controller/store/store_nodes.h"
#include "controller/store/store_signoff.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* At most this many reasons from one source (a verdict can name many rails). */
#define HEALTH_REASONS_MAX 8
/* Deployments looked at for each listing to find each cluster's newest applied one. */
#define HEALTH_DEPLOY_SCAN 50

static int derive(const struct json_t *facts, char **ret_summary, char **ret_snapshot)
{
	json_t *snap = so_snapshot((const json_t *)facts);
	char *summary = facts_summary((const json_t *)facts);
	char *text = snap ? json_dumps(snap, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	json_decref(snap);
	if (!summary || !text) {
		free(summary);
		free(text);
		return -ENOMEM;
	}
	*ret_summary = summary;
	*ret_snapshot = text;
	return 0;
}

const struct store_facts_deriver ctl_facts_deriver = {CTL_FACTS_DERIVED_VERSION, derive};

/* ---- health --------------------------------------------------------------------------------- */

static bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static void problem(json_t *problems, const char *severity, const char *source, const char *device,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void problem(json_t *problems, const char *severity, const char *source, const char *device,
		    const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	json_array_append_new(problems,
			      json_pack("{s:s, s:s, s:s*, s:s}", "severity", severity, "source",
					source, "device", device, "text", text));
}

static void verdict_problems(json_t *out, const struct ctl_health_in *in)
{
	const char *result = json_string_value(json_object_get(in->verdict_node, "result"));
	const json_t *reasons = json_object_get(in->verdict_node, "reasons"), *x, *rail;
	const char *so = in->signoff_id ? in->signoff_id : "newest sign-off";
	size_t i, k, shown = 0;

	if (!streq(result, "fail") && !streq(result, "excluded")) {
		/* A passing node whose rails the verdict failed still fails. */
		json_array_foreach(json_object_get(in->verdict_node, "rails"), i, rail)
		{
			if (!streq(json_string_value(json_object_get(rail, "result")), "fail"))
				continue;
			json_array_foreach(json_object_get(rail, "reasons"), k, x)
			{
				if (json_is_string(x) && shown++ < HEALTH_REASONS_MAX)
					problem(out, "failing", "signoff",
						json_string_value(json_object_get(rail, "device")),
						"sign-off %s: %s", so, json_string_value(x));
			}
		}
		return;
	}
	json_array_foreach(reasons, i, x)
	{
		if (json_is_string(x) && shown++ < HEALTH_REASONS_MAX)
			problem(out, "failing", "signoff", NULL, "%s sign-off %s: %s",
				streq(result, "excluded") ? "excluded from" : "failed", so,
				json_string_value(x));
	}
	if (!shown)
		problem(out, "failing", "signoff", NULL, "%s sign-off %s",
			streq(result, "excluded") ? "excluded from" : "failed", so);
}

static void deploy_problems(json_t *out, const struct ctl_health_in *in)
{
	const char *dep = in->deployment_id ? in->deployment_id : "the newest deployment";
	const char *pb = in->playbook ? in->playbook : "";

	if (streq(in->deploy_state, "unreachable"))
		problem(out, "failing", "deployment", NULL,
			"deployment %s (%s) could not reach it%s%s", dep, pb,
			in->deploy_message ? ": " : "",
			in->deploy_message ? in->deploy_message : "");
	else if (streq(in->deploy_state, "failed") && in->failed_step)
		problem(out, "failing", "deployment", NULL,
			"deployment %s (%s) failed at step \"%s\"%s%s", dep, pb, in->failed_step,
			in->failed_message && in->failed_message[0] ? ": " : "",
			in->failed_message ? in->failed_message : "");
	else if (streq(in->deploy_state, "failed"))
		problem(out, "failing", "deployment", NULL, "deployment %s (%s) failed%s%s", dep,
			pb, in->deploy_message ? ": " : "",
			in->deploy_message ? in->deploy_message : "");
}

/* The HCAs' ports and PCIe links, from the snapshot's hcas [{device, state, rate_gbps, pcie,
 * pcie_max}] (a snapshot keeps each HCA's first port: one port an HCA on these nodes). */
static void port_problems(json_t *out, const json_t *snapshot)
{
	const json_t *hcas = json_object_get(snapshot, "hcas"), *e;
	double fastest = 0;
	size_t i;

	json_array_foreach(hcas, i, e)
	{
		const json_t *rate = json_object_get(e, "rate_gbps");

		if (streq(json_string_value(json_object_get(e, "state")), "ACTIVE") &&
		    json_is_number(rate) && json_number_value(rate) > fastest)
			fastest = json_number_value(rate);
	}
	json_array_foreach(hcas, i, e)
	{
		const char *dev = json_string_value(json_object_get(e, "device"));
		const char *state = json_string_value(json_object_get(e, "state"));
		const char *pcie = json_string_value(json_object_get(e, "pcie"));
		const char *pmax = json_string_value(json_object_get(e, "pcie_max"));
		const json_t *rate = json_object_get(e, "rate_gbps");

		if (!dev)
			continue;
		if (state && !streq(state, "ACTIVE"))
			problem(out, "failing", "port", dev, "%s port is %s", dev, state);
		else if (state && json_is_number(rate) && json_number_value(rate) < fastest)
			problem(out, "degraded", "rate", dev,
				"%s runs at %g Gb/s, the fastest rails at %g Gb/s", dev,
				json_number_value(rate), fastest);
		if (pcie && pmax && strcmp(pcie, pmax) != 0)
			problem(out, "degraded", "pcie", dev, "%s PCIe link is %s, capable of %s",
				dev, pcie, pmax);
	}
}

json_t *ctl_node_port_problems(const json_t *snapshot)
{
	json_t *out = json_array();

	if (out)
		port_problems(out, snapshot);
	return out;
}

json_t *ctl_node_health(const struct ctl_health_in *in)
{
	json_t *problems = json_array(), *reasons = json_array(), *p;
	const char *state = "healthy";
	bool failing = false, degraded = false, unknown = false;
	size_t i;

	if (!problems || !reasons)
		goto nomem;
	verdict_problems(problems, in);
	json_array_foreach(in->regressions, i, p)
	{
		if (json_is_string(p) && i < HEALTH_REASONS_MAX)
			problem(problems, in->regressed ? "failing" : "degraded", "regression",
				NULL, "%s revalidation %s: %s",
				in->regressed ? "regressed in" : "regression (informs) in",
				in->signoff_id ? in->signoff_id : "", json_string_value(p));
	}
	deploy_problems(problems, in);
	json_array_foreach(in->watch, i, p)
	{
		if (i < HEALTH_REASONS_MAX && json_is_object(p))
			json_array_append(problems, p);
	}
	if (in->ports)
		json_array_extend(problems, (json_t *)in->ports);
	else
		port_problems(problems, in->snapshot);
	if (streq(in->state, "revoked"))
		problem(problems, "unknown", "node", NULL, "revoked");
	else if (streq(in->state, "enrolled"))
		problem(problems, "unknown", "node", NULL, "never connected");
	else if (!streq(in->state, "online"))
		problem(problems, "unknown", "node", NULL, "offline");
	else if (!in->snapshot && !in->ports)
		problem(problems, "unknown", "node", NULL, "no facts reported yet");
	json_array_foreach(problems, i, p)
	{
		const char *sev = json_string_value(json_object_get(p, "severity"));

		failing |= streq(sev, "failing");
		degraded |= streq(sev, "degraded");
		unknown |= streq(sev, "unknown");
		if (json_array_append(reasons, json_object_get(p, "text")) < 0)
			goto nomem;
	}
	if (json_array_size(problems) != json_array_size(reasons))
		goto nomem;
	state = failing ? "failing" : degraded ? "degraded" : unknown ? "unknown" : "healthy";
	return json_pack("{s:s, s:o, s:o}", "state", state, "reasons", reasons, "problems",
			 problems);
nomem:
	json_decref(problems);
	json_decref(reasons);
	return NULL;
}

/* The regressions of a revalidation sign-off by host name, read from its signed report once: a
 * sign-off never changes, so they are kept by its id (a few dozen). */
#define REGRESSION_MEMO_MAX 64
static struct {
	pthread_mutex_t lock;
	json_t *by_id; /* {SIGNOFF_ID: {inform, hosts: {HOST: [line]}}} */
} regmemo = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void add_line(json_t *by_host, const char *host, const char *line)
{
	json_t *a;

	if (!host)
		return;
	a = json_object_get(by_host, host);
	if (!a && json_object_set_new(by_host, host, a = json_array()) < 0)
		return;
	if (json_array_size(a) < HEALTH_REASONS_MAX)
		json_array_append_new(a, json_string(line));
}

/* A new reference: {inform: whether its tolerance lets regressions inform only, hosts: {HOST:
 * [line]}} of sign-off id (no host when it has no regressions or its report cannot be read). */
static json_t *regressions_of(struct store *st, const char *id)
{
	struct store_signoff *so = NULL;
	json_t *out, *hosts, *report = NULL, *m, *cmp;
	size_t i;

	pthread_mutex_lock(&regmemo.lock);
	out = json_deep_copy(json_object_get(regmemo.by_id, id));
	pthread_mutex_unlock(&regmemo.lock);
	if (out || !(out = json_pack("{s:b, s:{}}", "inform", false, "hosts")))
		return out;
	hosts = json_object_get(out, "hosts");
	if (store_signoff_get(st, id, true, &so) >= 0 && so->report)
		report = json_loadb(so->report, so->report_len, 0, NULL);
	cmp = json_object_get(report, "comparison");
	json_object_set_new(
		out, "inform",
		json_boolean(streq(json_string_value(json_object_get(
					   json_object_get(cmp, "tolerance"), "regressions")),
				   "inform")));
	json_array_foreach(json_object_get(cmp, "regressions"), i, m)
	{
		char *line = so_regression_line(m);

		if (line) {
			add_line(hosts, json_string_value(json_object_get(m, "a")), line);
			if (!json_equal(json_object_get(m, "a"), json_object_get(m, "b")))
				add_line(hosts, json_string_value(json_object_get(m, "b")), line);
		}
		free(line);
	}
	json_decref(report);
	store_signoff_free(so);
	pthread_mutex_lock(&regmemo.lock);
	if (!regmemo.by_id || json_object_size(regmemo.by_id) >= REGRESSION_MEMO_MAX) {
		json_decref(regmemo.by_id);
		regmemo.by_id = json_object();
	}
	json_object_set_new(regmemo.by_id, id, json_deep_copy(out));
	pthread_mutex_unlock(&regmemo.lock);
	return out;
}

/* What the nodes' health needs of their clusters, read once a listing: {CLUSTER: {signoff,
 * verdict: {NODE_ID: row}, deployment, playbook, nodes: {NODE_ID: {state, message, step,
 * step_message}}}}. Best effort: what cannot be read is left out (the node then says less). */
static json_t *health_context(struct store *st, const json_t *stale)
{
	json_t *ctx = json_object();
	struct store_deployment **deps = NULL;
	const char *cluster;
	const json_t *c;
	size_t nd = 0;

	if (!ctx)
		return NULL;
	json_object_foreach((json_t *)stale, cluster, c)
	{
		const char *id = json_string_value(json_object_get(c, "signoff"));
		struct store_signoff *so = NULL;
		struct store_campaign *m = NULL;
		json_t *verdict = NULL, *byid = json_object(), *row;
		size_t i;

		if (!id || !byid || store_signoff_get(st, id, false, &so) < 0) {
			json_decref(byid);
			continue;
		}
		if (so->campaign_id && store_campaign_get(st, so->campaign_id, &m) >= 0 &&
		    m->verdict_json)
			verdict = json_loads(m->verdict_json, 0, NULL);
		json_array_foreach(json_object_get(verdict, "nodes"), i, row)
		{
			const char *nid = json_string_value(json_object_get(row, "id"));

			if (nid)
				json_object_set(byid, nid, row);
		}
		json_object_set_new(ctx, cluster,
				    json_pack("{s:s, s:o}", "signoff", id, "verdict", byid));
		if (streq(so->kind, "revalidation"))
			json_object_set_new(json_object_get(ctx, cluster), "regressions",
					    regressions_of(st, id));
		json_decref(verdict);
		store_campaign_free(m);
		store_signoff_free(so);
	}
	if (store_deployments_list(st, false, HEALTH_DEPLOY_SCAN, &deps, &nd) < 0)
		return ctx;
	for (size_t i = 0; i < nd; i++) {
		const struct store_deployment *d = deps[i];
		struct store_deploy_node *dn = NULL;
		size_t n = 0;
		json_t *cl = json_object_get(ctx, d->cluster), *nodes, *failed = NULL;
		bool any_failed = false;
		char pb[256];

		if (d->check_mode || streq(d->state, "pending") ||
		    (cl && json_object_get(cl, "deployment")))
			continue; /* not applied, not started, or an older one */
		if (!cl) {
			cl = json_object();
			if (json_object_set_new(ctx, d->cluster, cl) < 0)
				continue;
		}
		nodes = json_object();
		snprintf(pb, sizeof(pb), "%s %s", d->playbook_name, d->playbook_version);
		json_object_set_new(cl, "deployment", json_string(d->id));
		json_object_set_new(cl, "playbook", json_string(pb));
		json_object_set_new(cl, "nodes", nodes);
		if (store_deploy_nodes(st, d->id, &dn, &n) < 0)
			continue;
		for (size_t k = 0; k < n; k++) {
			json_object_set_new(nodes, dn[k].node_id,
					    json_pack("{s:s, s:s?}", "state", dn[k].state,
						      "message", dn[k].message));
			any_failed |= streq(dn[k].state, "failed");
		}
		/* The first failed step of each node, its headline (deploy.c says them). */
		if (any_failed && ctl_deploy_failed_steps(st, d->id, &failed) == 0) {
			const char *nid;
			json_t *f;

			json_object_foreach(failed, nid, f)
			{
				json_t *o = json_object_get(nodes, nid);

				if (!o)
					continue;
				json_object_set(o, "step", json_object_get(f, "name"));
				json_object_set(o, "step_message", json_object_get(f, "message"));
			}
			json_decref(failed);
		}
		store_deploy_nodes_free(dn, n);
	}
	store_deployments_free(deps, nd);
	return ctx;
}

/* The port problems of the nodes' stored snapshots, so that a listing does not parse every
 * snapshot again (a thousand nodes: 50 ms): by node id and a hash of the snapshot's text.
 * Bounded: emptied when it holds PORT_MEMO_MAX. */
#define PORT_MEMO_BUCKETS 4096
#define PORT_MEMO_MAX	  100000
struct port_memo {
	struct port_memo *next;
	uint64_t hash;
	size_t len;
	json_t *problems;
	char id[];
};
static struct {
	pthread_mutex_t lock;
	struct port_memo *bucket[PORT_MEMO_BUCKETS];
	size_t n;
} memo = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t fnv1a(const char *s, size_t *ret_len)
{
	uint64_t h = 1469598103934665603ULL;
	size_t n = 0;

	for (; s[n]; n++)
		h = (h ^ (unsigned char)s[n]) * 1099511628211ULL;
	*ret_len = n;
	return h;
}

/* The port problems of snapshot text (NULL when it does not parse): a new reference. */
static json_t *ports_of_text(const char *id, const char *text)
{
	size_t len, b, idlen = strlen(id);
	uint64_t hash = fnv1a(text, &len);
	struct port_memo *m;
	json_t *snap, *out = NULL;

	b = (size_t)(fnv1a(id, &idlen) % PORT_MEMO_BUCKETS);
	pthread_mutex_lock(&memo.lock);
	for (m = memo.bucket[b]; m; m = m->next) {
		if (strcmp(m->id, id) == 0 && m->hash == hash && m->len == len) {
			out = json_deep_copy(m->problems);
			break;
		}
	}
	pthread_mutex_unlock(&memo.lock);
	if (out || !(snap = json_loads(text, 0, NULL)))
		return out;
	out = ctl_node_port_problems(snap);
	json_decref(snap);
	m = out ? malloc(sizeof(*m) + idlen + 1) : NULL;
	if (!m)
		return out;
	m->hash = hash;
	m->len = len;
	m->problems = json_deep_copy(out);
	memcpy(m->id, id, idlen + 1);
	pthread_mutex_lock(&memo.lock);
	if (memo.n >= PORT_MEMO_MAX) {
		for (size_t i = 0; i < PORT_MEMO_BUCKETS; i++) {
			while (memo.bucket[i]) {
				struct port_memo *x = memo.bucket[i];

				memo.bucket[i] = x->next;
				json_decref(x->problems);
				free(x);
			}
		}
		memo.n = 0;
	}
	m->next = memo.bucket[b];
	memo.bucket[b] = m;
	memo.n++;
	pthread_mutex_unlock(&memo.lock);
	return out;
}

static json_t *node_health(const json_t *hctx, const json_t *watch, const struct store_node *nd,
			   const json_t *facts)
{
	const json_t *c = json_object_get(hctx, nd->cluster);
	const json_t *dn = json_object_get(json_object_get(c, "nodes"), nd->id);
	json_t *snap = NULL, *ports = NULL, *o;
	struct ctl_health_in in = {
		.state = nd->state,
		.signoff_id = json_string_value(json_object_get(c, "signoff")),
		.verdict_node = json_object_get(json_object_get(c, "verdict"), nd->id),
		.deployment_id = json_string_value(json_object_get(c, "deployment")),
		.playbook = json_string_value(json_object_get(c, "playbook")),
		.deploy_state = json_string_value(json_object_get(dn, "state")),
		.deploy_message = json_string_value(json_object_get(dn, "message")),
		.failed_step = json_string_value(json_object_get(dn, "step")),
		.failed_message = json_string_value(json_object_get(dn, "step_message")),
		.regressions = json_object_get(
			json_object_get(json_object_get(c, "regressions"), "hosts"), nd->hostname),
		.regressed =
			!json_is_true(json_object_get(json_object_get(c, "regressions"), "inform")),
		.watch = json_object_get(watch, nd->id),
	};

	if (nd->derived && nd->snapshot_json)
		ports = ports_of_text(nd->id, nd->snapshot_json);
	else if (facts)
		snap = so_snapshot(facts);
	in.snapshot = snap;
	in.ports = ports;
	o = ctl_node_health(&in);
	json_decref(snap);
	json_decref(ports);
	return o;
}

/* ---- listings ---------------------------------------------------------------------------------
 */

/* A node against its cluster's newest sign-off: {state: current | stale | uncovered | none,
 * signoff, reasons}. */
static json_t *node_signoff(const json_t *stale, const struct store_node *nd)
{
	const json_t *c = json_object_get(stale, nd->cluster), *h;
	const json_t *why = json_object_get(json_object_get(c, "nodes"), nd->hostname);
	bool covered = false;
	size_t i;

	if (!c || strcmp(nd->state, "revoked") == 0)
		return json_pack("{s:s}", "state", "none");
	json_array_foreach(json_object_get(c, "covered"), i, h) covered |=
		strcmp(json_string_value(h), nd->hostname) == 0;
	return json_pack("{s:s, s:O, s:o}", "state",
			 json_array_size(why) ? "stale"
			 : covered	      ? "current"
					      : "uncovered",
			 "signoff", json_object_get(c, "signoff"), "reasons",
			 why ? json_incref((json_t *)why) : json_array());
}

/* A node as the listings show it: its summary as derived when its facts were written, or
 * (written before, or by another deriver) from the facts now; the facts only with_facts. */
static json_t *node_json(const struct store_node *n, const json_t *stale, const json_t *hctx,
			 const json_t *watch, bool with_facts)
{
	bool parse = n->facts_json && (with_facts || !n->derived || !n->snapshot_json);
	json_t *facts = parse ? json_loads(n->facts_json, 0, NULL) : NULL;
	char *summary = n->derived ? (n->summary ? strdup(n->summary) : NULL)
			: facts	   ? facts_summary(facts)
				   : NULL;
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:s?, s:o, s:s?, s:o}",
			      "id", n->id, "hostname", n->hostname, "cluster", n->cluster, "state",
			      n->state, "cert_serial", n->cert_serial, "cert_fingerprint",
			      n->cert_fingerprint, "enrolled_at_ms", (json_int_t)n->enrolled_at_ms,
			      "last_seen_ms", (json_int_t)n->last_seen_ms, "agent_version",
			      n->agent_version, "facts", facts ? facts : json_null(), "summary",
			      summary, "signoff", node_signoff(stale, n));

	free(summary);
	if (o && json_object_set_new(o, "health", node_health(hctx, watch, n, facts)) < 0) {
		json_decref(o);
		return NULL;
	}
	if (o && !with_facts)
		json_object_del(o, "facts");
	return o;
}

static int listing(struct store *st, const char *cluster, const char *state, bool with_facts,
		   json_t **ret, struct ctl_error *err)
{
	struct store_node **nodes = NULL;
	json_t *stale = NULL, *hctx = NULL, *watch = NULL, *arr = json_array();
	size_t n = 0;
	int r = !arr	     ? -ENOMEM
		: with_facts ? store_nodes_list(st, &nodes, &n)
			     : store_nodes_brief(st, &nodes, &n);

	if (r < 0) {
		json_decref(arr);
		return ctl_error_store(err, r, "listing nodes");
	}
	r = ctl_signoff_staleness(st, &stale, err);
	if (r >= 0 && !(hctx = health_context(st, stale)))
		r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	if (r >= 0)
		r = ctl_watch_open(st, cluster, NULL, util_now_unix_ms(), &watch, err);
	for (size_t i = 0; r >= 0 && i < n; i++) {
		const struct store_node *nd = nodes[i];
		json_t *o;

		if ((cluster && strcmp(nd->cluster, cluster) != 0) ||
		    (state && strcmp(nd->state, state) != 0))
			continue;
		o = node_json(nd, stale, hctx, watch, with_facts);
		if (!o || json_array_append_new(arr, o) < 0)
			r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	}
	store_nodes_free(nodes, n);
	json_decref(stale);
	json_decref(hctx);
	json_decref(watch);
	if (r < 0) {
		json_decref(arr);
		return r;
	}
	*ret = arr;
	return 0;
}

int ctl_nodes_list(struct store *st, const char *cluster, const char *state, bool with_facts,
		   json_t **ret, struct ctl_error *err)
{
	return listing(st, cluster, state, with_facts, ret, err);
}

int ctl_node_get(struct store *st, const char *id_or_host, json_t **ret, struct ctl_error *err)
{
	struct store_node *nd = NULL;
	json_t *stale = NULL, *hctx = NULL, *watch = NULL, *o = NULL;
	int r = store_node_get(st, id_or_host, &nd);

	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "node", "no node %s", id_or_host);
	if (r == -ENOTUNIQ)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_CONFLICT, "node",
				     "host name %s is ambiguous: use the id", id_or_host);
	if (r < 0)
		return ctl_error_store(err, r, "reading the node");
	r = ctl_signoff_staleness(st, &stale, err);
	if (r >= 0)
		r = ctl_watch_open(st, nd->cluster, nd->id, util_now_unix_ms(), &watch, err);
	if (r >= 0) {
		hctx = health_context(st, stale);
		o = hctx ? node_json(nd, stale, hctx, watch, true) : NULL;
		if (!o)
			r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	}
	store_node_free(nd);
	json_decref(stale);
	json_decref(hctx);
	json_decref(watch);
	if (r < 0)
		return r;
	*ret = o;
	return 0;
}

int ctl_node_revoke(struct store *st, const char *id_or_host, const char *actor, json_t **ret,
		    struct ctl_error *err)
{
	char *id = NULL;
	int r = store_node_revoke(st, id_or_host, actor ? actor : "admin", util_now_unix_ms(), &id);

	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "node", "no node %s", id_or_host);
	if (r == -ENOTUNIQ)
		return ctl_error_set(err, r, CTL_ERR_CONFLICT, "node",
				     "host name %s is ambiguous: use the id", id_or_host);
	if (r < 0)
		return ctl_error_store(err, r, "revoking the node");
	*ret = json_pack("{s:s, s:s}", "id", id, "state", "revoked");
	free(id);
	return 0;
}
