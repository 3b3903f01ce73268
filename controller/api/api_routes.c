/* The REST API's routes: ONE table (method, path, permission, cluster-scoped, handler), mirrored
 * in docs/rest.md and walked by the matrix test; handlers call the controller's services. */
#include "controller/api/api_int.h"

#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/hist.h"
#include "common/util/util.h"
#include "controller/bench/bench.h"
#include "controller/campaign/campaign.h"
#include "controller/api/api_streams.h"
#include "controller/api/openapi_doc.h"
#include "controller/engine/engine.h"
#include "controller/events.h"
#include "controller/health.h"
#include "controller/nodes.h"
#include "controller/playbooks.h"
#include "controller/rollout/deploy.h"
#include "controller/signoff/revalidate.h"
#include "controller/maint/maint.h"
#include "controller/signoff/signoff.h"
#include "controller/signoff/html.h"
#include "controller/server_int.h"
#include "controller/state.h"
#include "controller/tokens.h"
#include "controller/watch.h"
#include "controller/wlm/wlm.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSTR(o, k) json_string_value(json_object_get((o), (k)))
#define PAGE_FETCH 10000 /* rows a listing reads from a service before paging */

/* Run a service call that fills doc and err; reply with the error when it fails. */
#define SERVICE(c, call)                                                                           \
	do {                                                                                       \
		struct ctl_error err_;                                                             \
		int r_;                                                                            \
		ctl_error_init(&err_);                                                             \
		r_ = (call);                                                                       \
		if (r_ < 0)                                                                        \
			api_service_error((c), &err_);                                             \
		ctl_error_done(&err_);                                                             \
		if (r_ < 0)                                                                        \
			goto out;                                                                  \
	} while (0)
#define ERR (&err_)

/* The one reply for an object that is absent or out of the caller's scope: the same status and
 * bytes for both, so that a scoped caller cannot tell another cluster's object from none. */
static void not_found(struct api_call *c, const char *what, const char *id)
{
	api_error(c, 404, CTL_ERR_NOT_FOUND, "id", "no %s %s", what, id);
}

/* A scoped object: out of scope is the same 404 as absent (no existence leak). */
static bool visible(struct api_call *c, const json_t *obj, const char *what, const char *id)
{
	if (api_scope_ok(c, JSTR(obj, "cluster")))
		return true;
	not_found(c, what, id);
	return false;
}

/* The body's cluster, which must be in the caller's scope (otherwise the same 404 as an unknown
 * cluster): checked before anything else of the body, so that a scoped caller learns nothing. */
static bool scoped_cluster(struct api_call *c, const json_t *b, const char **ret)
{
	if (api_str(c, b, "cluster", true, ret) < 0)
		return false;
	if (!api_scope_ok(c, *ret)) {
		api_error(c, 404, CTL_ERR_NOT_FOUND, "cluster", "unknown cluster %s", *ret);
		return false;
	}
	return true;
}

/* ---- health and metrics ---------------------------------------------------------------------- */

static void get_healthz(struct api_call *c)
{
	api_json(c, 200, json_pack("{s:s}", "status", "ok"));
}

/* Ready: the store answers, the server is not stopping, and the state directory takes a write
 * (a full or read-only disk stores nothing: a controller that cannot keep what it is sent is
 * not ready for it, however well it reads). */
static void get_readyz(struct api_call *c)
{
	struct ctl_error err;
	int r, w = 0;

	ctl_error_init(&err);
	r = ctl_health_store(c->st, &err);
	if (r >= 0 && !ctl_server_failed(c->srv))
		w = ctl_api_ready_probe(c->srv);
	if (r < 0 || ctl_server_failed(c->srv))
		api_error(c, 503, CTL_ERR_UNAVAILABLE, NULL, "not ready: %s",
			  r < 0 ? err.message : "the server is stopping");
	else if (w < 0)
		api_error(c, 503, CTL_ERR_UNAVAILABLE, NULL,
			  "not ready: the state directory cannot be written: %s", ry_strerror(w));
	else
		api_json(c, 200,
			 json_pack("{s:s, s:i}", "status", "ready", "sessions",
				   ctl_server_online_count(c->srv)));
	ctl_error_done(&err);
}

/* ---- clusters and nodes ---------------------------------------------------------------------- */

static void get_clusters(struct api_call *c)
{
	json_t *nodes = NULL, *by = json_object(), *n, *out = json_array(), *v;
	const char *k;
	size_t i;

	SERVICE(c, ctl_nodes_list(c->st, NULL, NULL, false, &nodes, ERR));
	json_array_foreach(nodes, i, n)
	{
		const char *cl = JSTR(n, "cluster"), *state = JSTR(n, "state");
		json_t *e = json_object_get(by, cl);

		if (!e) {
			e = json_pack("{s:s, s:i, s:{}}", "cluster", cl, "nodes", 0, "states");
			json_object_set_new(by, cl, e);
		}
		json_object_set_new(
			e, "nodes",
			json_integer(json_integer_value(json_object_get(e, "nodes")) + 1));
		v = json_object_get(json_object_get(e, "states"), state);
		json_object_set_new(json_object_get(e, "states"), state,
				    json_integer(json_integer_value(v) + 1));
	}
	json_object_foreach(by, k, v) json_array_append(out, v);
	api_page(c, out);
	out = NULL;
out:
	json_decref(nodes);
	json_decref(by);
	json_decref(out);
}

static void get_nodes(struct api_call *c)
{
	const char *facts = http_req_query(c->req, "facts");
	json_t *nodes = NULL;

	/* A node's facts are ~11 KB: a fleet's listing carries them only when asked. */
	SERVICE(c, ctl_nodes_list(c->st, http_req_query(c->req, "cluster"),
				  http_req_query(c->req, "state"),
				  facts && (strcmp(facts, "true") == 0 || strcmp(facts, "1") == 0),
				  &nodes, ERR));
	{
		json_t *n;
		size_t i;

		json_array_foreach(nodes, i, n) ctl_wlm_annotate(ctl_server_wlm(c->srv), n);
	}
	api_page(c, nodes);
out:;
}

/* The node id_or_host names among those the caller sees: *ret (caller frees with json_decref()),
 * or -1 with the reply set. Unknown and out of scope are the one 404 of not_found(). A host name
 * that several clusters have is resolved within the caller's scope, so that a scoped caller
 * learns nothing from "ambiguous" about another cluster's hosts (O(nodes) then: a listing). */
static int node_lookup(struct api_call *c, const char *id_or_host, json_t **ret)
{
	struct ctl_error err;
	json_t *n = NULL, *all = NULL, *e;
	const char *only = NULL;
	size_t i, seen = 0;
	int r;

	ctl_error_init(&err);
	r = ctl_node_get(c->st, id_or_host, &n, &err);
	if (r < 0 && err.code && strcmp(err.code, CTL_ERR_CONFLICT) == 0 && !c->local && c->scope) {
		ctl_error_done(&err);
		ctl_error_init(&err);
		r = ctl_nodes_list(c->st, NULL, NULL, false, &all, &err);
		json_array_foreach(all, i, e)
		{
			const char *h = JSTR(e, "hostname"), *cl = JSTR(e, "cluster");

			if (h && strcmp(h, id_or_host) == 0 && api_scope_ok(c, cl)) {
				only = JSTR(e, "id");
				seen++;
			}
		}
		if (r >= 0 && seen == 1)
			r = ctl_node_get(c->st, only, &n, &err);
		else if (r >= 0 && seen > 1)
			r = ctl_error_set(&err, -RY_E_INVALID, CTL_ERR_CONFLICT, "node",
					  "host name %s is ambiguous: use the id", id_or_host);
		else if (r >= 0)
			r = ctl_error_set(&err, -RY_E_NOT_FOUND, CTL_ERR_NOT_FOUND, "id", "-");
	}
	if (r >= 0 && !api_scope_ok(c, JSTR(n, "cluster")))
		r = ctl_error_set(&err, -RY_E_NOT_FOUND, CTL_ERR_NOT_FOUND, "id", "-");
	if (r < 0 && err.code && strcmp(err.code, CTL_ERR_NOT_FOUND) == 0)
		not_found(c, "node", id_or_host);
	else if (r < 0)
		api_service_error(c, &err);
	ctl_error_done(&err);
	json_decref(all);
	if (r < 0) {
		json_decref(n);
		return -1;
	}
	*ret = n;
	return 0;
}

static void get_node(struct api_call *c)
{
	json_t *n = NULL;

	if (node_lookup(c, http_req_capture(c->req, "id"), &n) == 0) {
		ctl_wlm_annotate(ctl_server_wlm(c->srv), n);
		api_json(c, 200, n);
	}
}

/* ---- workload manager ---------------------------------------------------------------------- */

/* The {cluster} of the path, in the caller's scope (otherwise the 404 of an unknown one). */
static const char *path_cluster(struct api_call *c)
{
	const char *cl = http_req_capture(c->req, "cluster");

	if (!cl || !api_scope_ok(c, cl)) {
		api_error(c, 404, CTL_ERR_NOT_FOUND, "cluster", "unknown cluster %s", cl ? cl : "");
		return NULL;
	}
	return cl;
}

static void get_wlm(struct api_call *c)
{
	const char *cl = path_cluster(c);
	json_t *doc = NULL;

	if (!cl)
		return;
	SERVICE(c, ctl_wlm_binding_get(c->st, cl, &doc, ERR));
	api_json(c, 200, doc);
out:;
}

static void put_wlm(struct api_call *c)
{
	static const char *const keys[] = {"kind", "slurm", "hooks", "node_map", "timeout_s", NULL};
	const char *cl = path_cluster(c);
	json_t *b, *doc = NULL;

	if (!cl || !(b = api_body(c, keys)))
		return;
	SERVICE(c, ctl_wlm_binding_set(c->st, cl, b, c->actor, &doc, ERR));
	ctl_wlm_kick(ctl_server_wlm(c->srv)); /* read the new WLM's node states now */
	api_json(c, 200, doc);
out:;
}

static void delete_wlm(struct api_call *c)
{
	const char *cl = path_cluster(c);

	if (!cl)
		return;
	SERVICE(c, ctl_wlm_binding_unset(c->st, cl, c->actor, ERR));
	api_json(c, 200, json_pack("{s:s, s:b}", "cluster", cl, "bound", 0));
out:;
}

static void get_wlm_actions(struct api_call *c)
{
	const char *cl = path_cluster(c);
	json_t *v = NULL;

	if (!cl)
		return;
	SERVICE(c, ctl_wlm_actions_list(c->st, cl, http_req_query(c->req, "state"), &v, ERR));
	api_page(c, v);
out:;
}

static void get_wlm_nodes(struct api_call *c)
{
	const char *cl = path_cluster(c);

	if (cl)
		api_json(c, 200,
			 json_pack("{s:s, s:o}", "cluster", cl, "nodes",
				   ctl_wlm_nodes(ctl_server_wlm(c->srv), cl)));
}

static void post_node_revoke(struct api_call *c)
{
	json_t *n = NULL, *done = NULL;

	if (node_lookup(c, http_req_capture(c->req, "id"), &n) < 0)
		return;
	SERVICE(c, ctl_node_revoke(c->st, JSTR(n, "id"), c->actor, &done, ERR));
	api_json(c, 200, done);
out:
	json_decref(n);
}

static void get_node_health_events(struct api_call *c)
{
	json_t *n = NULL, *v = NULL;
	const char *lim = http_req_query(c->req, "limit");
	long limit = 100;

	if (lim) {
		char *end;
		errno = 0;
		limit = strtol(lim, &end, 10);
		if (errno || *end || end == lim || limit < 1 || limit > 1000) {
			api_error(c, 400, CTL_ERR_INVALID, "limit", "limit must be 1..1000");
			return;
		}
	}
	if (node_lookup(c, http_req_capture(c->req, "id"), &n) < 0)
		return;
	SERVICE(c, ctl_watch_node_events(c->st, JSTR(n, "id"), (size_t)limit, &v, ERR));
	api_json(c, 200, v);
out:
	json_decref(n);
}

static void post_node_health_ack(struct api_call *c)
{
	json_t *n = NULL, *done = NULL;

	if (node_lookup(c, http_req_capture(c->req, "id"), &n) < 0)
		return;
	SERVICE(c, ctl_watch_ack(c->st, JSTR(n, "id"), c->actor, &done, ERR));
	api_json(c, 200, done);
out:
	json_decref(n);
}

/* ---- deployments ------------------------------------------------------------------------------
 */

static void get_deployments(struct api_call *c)
{
	json_t *v = NULL;

	SERVICE(c, ctl_deploy_list(c->st, PAGE_FETCH, &v, ERR));
	api_page(c, v);
out:;
}

static void get_deployment(struct api_call *c)
{
	const char *id = http_req_capture(c->req, "id");
	json_t *d = NULL;

	SERVICE(c, ctl_deploy_get(c->st, id, CTL_DEPLOY_STEPS, &d, ERR));
	if (visible(c, d, "deployment", id)) {
		api_json(c, 200, d);
		d = NULL;
	}
out:
	json_decref(d);
}

static void post_deployment(struct api_call *c)
{
	static const char *const keys[] = {"cluster", "playbook", "check", "batch", "max_fail",
					   "canary",  "pause_ms", "nodes", NULL};
	json_t *b = api_body(c, keys), *doc = NULL;
	struct ctl_deploy_request rq = {.canary = -1, .pause_ms = -1, .actor = c->actor};
	struct ctl_deploy_created made = {0};
	int64_t canary = -1;

	if (!b || !scoped_cluster(c, b, &rq.cluster) ||
	    api_str(c, b, "playbook", true, &rq.playbook_text) < 0 ||
	    api_bool(c, b, "check", &rq.check) < 0 ||
	    api_str(c, b, "batch", false, &rq.batch) < 0 ||
	    api_str(c, b, "max_fail", false, &rq.max_fail) < 0 ||
	    api_str(c, b, "nodes", false, &rq.nodes) < 0 ||
	    api_int(c, b, "canary", 0, 100000, &canary) < 0 ||
	    api_int(c, b, "pause_ms", 0, 86400000, &rq.pause_ms) < 0)
		return;
	rq.canary = (int)canary;
	rq.playbook_len = strlen(rq.playbook_text);
	rq.playbook_file = "playbook";
	SERVICE(c, ctl_deploy_create(c->st, &rq, &made, ERR));
	ctl_engine_kick(c->srv->engine); /* the rollout pass starts it now */
	SERVICE(c, ctl_deploy_get(c->st, made.id, CTL_DEPLOY_NODES, &doc, ERR));
	/* And what `railyard-controller deploy` prints: the batches, the nodes left out and why. */
	{
		json_t *sk = json_array();

		for (size_t i = 0; i < made.n_skipped; i++)
			json_array_append_new(sk, json_pack("{s:s, s:s, s:s}", "node_id",
							    made.skipped[i].node_id, "hostname",
							    made.skipped[i].hostname, "reason",
							    made.skipped[i].reason));
		json_object_set_new(doc, "batches", json_integer((json_int_t)made.n_batches));
		json_object_set_new(doc, "skipped", sk);
	}
	api_json(c, 201, doc);
out:
	ctl_deploy_created_done(&made);
}

/* An object that has ended is a 409 for anyone; cancelling what another caller started takes
 * the configure right. */
static bool may_cancel(struct api_call *c, const char *state, const char *what, const char *id,
		       bool ended, const char *owner)
{
	if (ended) {
		api_error(c, 409, CTL_ERR_CONFLICT, "id", "%s %s has ended (%s)", what, id, state);
		return false;
	}
	if ((owner && strcmp(owner, c->actor) == 0) || api_may(c, API_PERM_CONFIGURE))
		return true;
	api_error(c, 403, "forbidden", NULL, "the %s role may cancel only what it started",
		  api_role_name(c->role));
	return false;
}

/* A cancel that found the object ended: 409; requested: 202. */
static void cancel_reply(struct api_call *c, int r, const struct ctl_error *err, const char *id)
{
	if (r < 0 || (r == 0 && err->code))
		api_service_error(c, err);
	else
		api_json(c, 202, json_pack("{s:s, s:s}", "id", id, "state", "cancel_requested"));
}

/* A cancel of an object whose service reads it (get), says whether a state is final, and
 * cancels it (runs, revalidations, maintenances): seen in the caller's scope, its own with
 * operate, anyone's with configure; the pass is kicked when a cancel was stamped. */
struct cancel_kind {
	const char *what; /* "benchmark run", "revalidation", "maintenance" */
	int (*get)(struct store *st, const char *id, json_t **ret, struct ctl_error *err);
	bool (*final)(const char *state);
	int (*cancel)(struct store *st, const char *id, const char *actor, struct ctl_error *err);
};

static void cancel_object(struct api_call *c, const struct cancel_kind *k)
{
	const char *id = http_req_capture(c->req, "id");
	struct ctl_error err;
	json_t *v = NULL;
	int r;

	SERVICE(c, k->get(c->st, id, &v, ERR));
	if (!visible(c, v, k->what, id) ||
	    !may_cancel(c, JSTR(v, "state"), k->what, id, k->final(JSTR(v, "state")),
			JSTR(v, "actor")))
		goto out;
	ctl_error_init(&err);
	r = k->cancel(c->st, id, c->actor, &err);
	if (r > 0)
		ctl_engine_kick(c->srv->engine);
	cancel_reply(c, r, &err, id);
	ctl_error_done(&err);
out:
	json_decref(v);
}

static void post_deployment_cancel(struct api_call *c)
{
	const char *id = http_req_capture(c->req, "id");
	struct ctl_error err;
	json_t *d = NULL;
	int r;

	SERVICE(c, ctl_deploy_get(c->st, id, CTL_DEPLOY_SUMMARY, &d, ERR));
	if (!visible(c, d, "deployment", id) ||
	    !may_cancel(c, JSTR(d, "state"), "deployment", id,
			ctl_deploy_state_final(JSTR(d, "state")), JSTR(d, "actor")))
		goto out;
	ctl_error_init(&err);
	r = ctl_deploy_cancel(c->st, id, c->actor, &err);
	if (r > 0)
		ctl_engine_kick(c->srv->engine);
	cancel_reply(c, r, &err, id);
	ctl_error_done(&err);
out:
	json_decref(d);
}

/* ---- campaigns ---------------------------------------------------------------------------------
 */

static void get_campaigns(struct api_call *c)
{
	json_t *v = NULL;

	SERVICE(c, ctl_campaign_list(c->st, PAGE_FETCH, &v, ERR));
	api_page(c, v);
out:;
}

static void get_campaign_with(struct api_call *c, bool rows)
{
	const char *id = http_req_capture(c->req, "id");
	json_t *m = NULL;

	SERVICE(c, ctl_campaign_get(c->st, id, rows, &m, ERR));
	if (visible(c, m, "campaign", id)) {
		api_json(c, 200, m);
		m = NULL;
	}
out:
	json_decref(m);
}

static void get_campaign(struct api_call *c)
{
	get_campaign_with(c, false);
}

static void get_campaign_results(struct api_call *c)
{
	get_campaign_with(c, true);
}

static void post_campaign(struct api_call *c)
{
	static const char *const keys[] = {
		"cluster",	 "playbook", "tests",	"nodes",   "transport", "quick",
		"allow_missing", "seed",     "signoff", "dry_run", NULL};
	json_t *b = api_body(c, keys), *doc = NULL;
	struct ctl_campaign_request rq = {.seed = -1, .actor = c->actor};
	bool dry = false;

	if (!b || !scoped_cluster(c, b, &rq.cluster) ||
	    api_str(c, b, "playbook", true, &rq.playbook_text) < 0 ||
	    api_str(c, b, "tests", false, &rq.tests) < 0 ||
	    api_str(c, b, "nodes", false, &rq.nodes) < 0 ||
	    api_str(c, b, "transport", false, &rq.transport) < 0 ||
	    api_bool(c, b, "quick", &rq.quick) < 0 ||
	    api_bool(c, b, "allow_missing", &rq.allow_missing) < 0 ||
	    api_int(c, b, "seed", 0, 1LL << 53, &rq.seed) < 0 ||
	    api_bool(c, b, "signoff", &rq.signoff) < 0 || api_bool(c, b, "dry_run", &dry) < 0)
		return;
	rq.playbook_len = strlen(rq.playbook_text);
	rq.playbook_file = "playbook";
	SERVICE(c, ctl_campaign_create(c->st, &rq, dry, &doc, ERR));
	if (!dry)
		ctl_engine_kick(c->srv->engine);
	api_json(c, dry ? 200 : 201, doc);
out:;
}

static void post_campaign_cancel(struct api_call *c)
{
	const char *id = http_req_capture(c->req, "id");
	json_t *m = NULL;
	int r;

	SERVICE(c, ctl_campaign_get(c->st, id, false, &m, ERR));
	if (!visible(c, m, "campaign", id))
		goto out;
	if (strcmp(JSTR(m, "state"), "running") != 0) {
		api_error(c, 409, CTL_ERR_CONFLICT, "id", "campaign %s has ended (%s)", id,
			  JSTR(m, "state"));
		goto out;
	}
	/* Cancelling what another caller started takes the configure right. */
	if (strcmp(JSTR(m, "actor"), c->actor) != 0 && !api_may(c, API_PERM_CONFIGURE)) {
		api_error(c, 403, "forbidden", NULL,
			  "the %s role may cancel only the campaigns it started",
			  api_role_name(c->role));
		goto out;
	}
	SERVICE(c, (r = ctl_campaign_cancel(c->st, id, c->actor, ERR)));
	ctl_engine_kick(c->srv->engine);
	api_json(c, r ? 202 : 409,
		 r ? json_pack("{s:s, s:s}", "id", id, "state", "cancel_requested")
		   : json_pack("{s:{s:s, s:s}}", "error", "code", CTL_ERR_CONFLICT, "message",
			       "the campaign has ended already"));
out:
	json_decref(m);
}

/* ---- sign-offs ----------------------------------------------------------------------------------
 */

static void get_signoffs(struct api_call *c)
{
	json_t *v = NULL;

	SERVICE(c, ctl_signoff_list(c->st, http_req_query(c->req, "cluster"), PAGE_FETCH, &v, ERR));
	api_page(c, v);
out:;
}

static void get_signoff(struct api_call *c)
{
	const char *id = http_req_capture(c->req, "id");
	json_t *s = NULL;

	SERVICE(c, ctl_signoff_get(c->st, id, false, &s, ERR));
	if (visible(c, s, "sign-off", id)) {
		api_json(c, 200, s);
		s = NULL;
	}
out:
	json_decref(s);
}

/* The signed bytes, the signature or the page of a sign-off. */
static void get_signoff_file(struct api_call *c)
{
	const char *id = http_req_capture(c->req, "id"), *file = http_req_capture(c->req, "file");
	struct ctl_signoff_files so = {0};
	char *html = NULL, why[256] = "";
	size_t hlen = 0;

	SERVICE(c, ctl_signoff_files_get(c->st, id, &so, ERR));
	if (!api_scope_ok(c, so.cluster)) {
		api_error(c, 404, CTL_ERR_NOT_FOUND, "id", "no sign-off %s", id);
	} else if (strcmp(file, "signoff.json") == 0) {
		http_reply_bytes(c->req, 200, "application/json", so.report, so.report_len);
	} else if (strcmp(file, "signoff.p7s") == 0) {
		http_reply_bytes(c->req, 200, "application/pkcs7-signature", so.signature,
				 strlen(so.signature));
	} else if (strcmp(file, "signoff.html") != 0) {
		api_error(c, 404, CTL_ERR_NOT_FOUND, "file",
			  "a sign-off has signoff.json, signoff.p7s and signoff.html");
	} else if (so_html_render(so.report, so.report_len, &html, &hlen, why, sizeof(why)) < 0) {
		api_error(c, 500, CTL_ERR_INTERNAL, NULL, "rendering: %s", why);
	} else {
		/* From the API's origin: its inline style only, no script (html.h). */
		http_reply_bytes(c->req, 200, "text/html; charset=utf-8", html, hlen);
		if (http_reply_header(c->req, "Content-Security-Policy", SO_HTML_CSP) < 0)
			api_error(c, 500, CTL_ERR_INTERNAL, NULL, "out of memory");
	}
out:
	free(html);
	ctl_signoff_files_done(&so);
}

/* The stored sign-off verified against the controller's CA, as `signoff verify` would. */
static void get_signoff_verify(struct api_call *c)
{
	const char *id = http_req_capture(c->req, "id");
	json_t *v = NULL;

	SERVICE(c, ctl_signoff_verify_stored(c->srv->state, id, &v, ERR));
	if (visible(c, v, "sign-off", id)) {
		api_json(c, 200, v);
		v = NULL;
	}
out:
	json_decref(v);
}

/* The OpenAPI document, built into the program from docs/openapi.yaml. */
static void get_openapi(struct api_call *c)
{
	http_reply_bytes(c->req, 200, "application/yaml", ctl_openapi_yaml, ctl_openapi_yaml_len);
}

static void get_ca(struct api_call *c)
{
	http_reply_bytes(c->req, 200, "application/x-pem-file", c->srv->state->ca_pem,
			 strlen(c->srv->state->ca_pem));
}

static void post_signoff(struct api_call *c)
{
	static const char *const keys[] = {"campaign", NULL};
	json_t *b = api_body(c, keys), *m = NULL, *s = NULL;
	const char *id = NULL;

	if (!b || api_str(c, b, "campaign", true, &id) < 0)
		return;
	SERVICE(c, ctl_campaign_get(c->st, id, false, &m, ERR));
	if (!visible(c, m, "campaign", id))
		goto out;
	SERVICE(c, ctl_signoff_create(c->srv->state, id, c->actor, &s, ERR));
	api_json(c, 201, s);
out:
	json_decref(m);
}

/* ---- benchmark runs ---------------------------------------------------------------------------
 */

static void get_bench_runs(struct api_call *c)
{
	json_t *v = NULL;

	SERVICE(c, ctl_bench_list(c->st, PAGE_FETCH, &v, ERR));
	api_page(c, v);
out:;
}

static void get_bench_run(struct api_call *c)
{
	const char *id = http_req_capture(c->req, "id");
	json_t *b = NULL;

	SERVICE(c, ctl_bench_get(c->st, id, &b, ERR));
	if (visible(c, b, "benchmark run", id)) {
		api_json(c, 200, b);
		b = NULL;
	}
out:
	json_decref(b);
}

/* A list field: an array of strings or one comma-separated string, into a NULL-terminated
 * vector (*ret_copy holds what the vector points into; the caller frees both). */
static int api_list(struct api_call *c, const json_t *body, const char *key, size_t max,
		    const char ***ret, size_t *ret_n, char **ret_copy)
{
	const json_t *v = json_object_get(body, key), *e;
	const char **vec = calloc(max + 1, sizeof(*vec));
	size_t n = 0, i;
	char *copy = NULL, *save = NULL, *tok;

	if (!vec)
		goto bad;
	if (json_is_string(v)) {
		copy = strdup(json_string_value(v));
		for (tok = copy ? strtok_r(copy, ",", &save) : NULL; tok;
		     tok = strtok_r(NULL, ",", &save)) {
			if (n == max)
				goto toomany;
			vec[n++] = tok;
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, e)
		{
			if (!json_is_string(e))
				goto bad;
			if (n == max)
				goto toomany;
			vec[n++] = json_string_value(e);
		}
	} else {
		goto bad;
	}
	*ret = vec;
	*ret_n = n;
	*ret_copy = copy;
	return 0;
toomany:
	api_error(c, 400, CTL_ERR_INVALID, key, "%s: more than %zu entries", key, max);
	free(vec);
	free(copy);
	return -1;
bad:
	api_error(c, 400, CTL_ERR_INVALID, key, "%s: %s", key,
		  v ? "expected an array of strings or a comma-separated string" : "required");
	free(vec);
	free(copy);
	return -1;
}

/* A collective benchmark over several nodes of a cluster (kind "collective"). */
static void post_collective(struct api_call *c, const json_t *b)
{
	struct ctl_coll_request rq = {.transport = "tcp", .timeout_ms = 300000, .actor = c->actor};
	const char **nodes = NULL, **ops = NULL;
	char *nodes_copy = NULL, *ops_copy = NULL, *ops_text = NULL;
	struct ctl_bench_created made;
	json_t *doc = NULL;
	size_t n_ops = 0;

	static const char *const two_sided[] = {
		"from",	   "to",	 "op",	  "device",    "server_address",
		"size",	   "duration_s", "qps",	  "gid_index", "ib_port",
		"tclass",  "sl",	 "sweep", "bidir",     "check_data",
		"rdma_cm", NULL};

	for (size_t i = 0; two_sided[i]; i++) {
		if (json_object_get(b, two_sided[i])) {
			api_error(c, 400, CTL_ERR_INVALID, two_sided[i],
				  "%s: not a field of a collective run", two_sided[i]);
			return;
		}
	}
	if (!scoped_cluster(c, b, &rq.cluster) ||
	    api_list(c, b, "nodes", CTL_COLL_NODES_MAX, &nodes, &rq.n_nodes, &nodes_copy) < 0 ||
	    (json_object_get(b, "ops") && api_list(c, b, "ops", 16, &ops, &n_ops, &ops_copy) < 0) ||
	    api_str(c, b, "transport", false, &rq.transport) < 0 ||
	    api_str(c, b, "backend", false, &rq.backend) < 0 ||
	    api_str(c, b, "nccl_tests", false, &rq.nccl_tests) < 0 ||
	    api_int(c, b, "ranks_per_node", 1, CTL_COLL_RANKS_MAX, &rq.ranks_per_node) < 0 ||
	    api_int(c, b, "min_bytes", 1, 1LL << 34, &rq.min_bytes) < 0 ||
	    api_int(c, b, "max_bytes", 1, 1LL << 34, &rq.max_bytes) < 0 ||
	    api_int(c, b, "iters", 1, 100000, &rq.iters) < 0 ||
	    api_int(c, b, "warmup", 0, 100000, &rq.warmup) < 0 ||
	    api_int(c, b, "timeout_ms", 1000, 86400000, &rq.timeout_ms) < 0)
		goto out;
	/* warmup 0 is a value of its own, not "the default". */
	if (json_object_get(b, "warmup") && rq.warmup == 0)
		rq.warmup = -1;
	rq.nodes = nodes;
	if (ops) {
		size_t len = 0;

		for (size_t i = 0; i < n_ops; i++)
			len += strlen(ops[i]) + 1;
		ops_text = calloc(1, len + 1);
		for (size_t i = 0; ops_text && i < n_ops; i++) {
			if (strchr(ops[i], ',')) {
				api_error(c, 400, CTL_ERR_INVALID, "ops",
					  "ops: a name with a comma");
				goto out;
			}
			if (i)
				strcat(ops_text, ",");
			strcat(ops_text, ops[i]);
		}
		rq.ops = ops_text ? ops_text : "";
	}
	SERVICE(c, ctl_bench_create_collective(c->st, &rq, &made, ERR));
	ctl_engine_kick(c->srv->engine);
	SERVICE(c, ctl_bench_get(c->st, made.id, &doc, ERR));
	api_json(c, 201, doc);
out:
	free(nodes);
	free(nodes_copy);
	free(ops);
	free(ops_copy);
	free(ops_text);
}

/* A benchmark between two nodes of a cluster, as `railyard-controller bench run` orders it. The
 * numbers' bounds are the engine's (the agents validate them against their devices too); a
 * collective over several nodes has its own fields. */
static void post_bench_run(struct api_call *c)
{
	static const char *const keys[] = {
		"cluster",    "from",		"to",	      "kind",	"transport",	  "op",
		"device",     "server_address", "size",	      "iters",	"duration_s",	  "qps",
		"gid_index",  "ib_port",	"tclass",     "sl",	"sweep",	  "bidir",
		"check_data", "rdma_cm",	"timeout_ms", "nodes",	"ranks_per_node", "backend",
		"ops",	      "min_bytes",	"max_bytes",  "warmup", "nccl_tests",	  NULL};
	json_t *b = api_body(c, keys), *doc = NULL;
	struct ctl_bench_request rq = {.kind = "lat",
				       .transport = "tcp",
				       .timeout_ms = 60000,
				       .gid_index = -2,
				       .ib_port = -1,
				       .tclass = -1,
				       .sl = -1,
				       .actor = c->actor};
	struct ctl_bench_created made;

	if (b && json_is_string(json_object_get(b, "kind")) &&
	    strcmp(json_string_value(json_object_get(b, "kind")), "collective") == 0) {
		post_collective(c, b);
		return;
	}
	for (const char *const *k = keys + 21; b && *k; k++) {
		if (json_object_get(b, *k)) {
			api_error(c, 400, CTL_ERR_INVALID, *k,
				  "%s: a field of kind collective only", *k);
			return;
		}
	}
	if (!b || !scoped_cluster(c, b, &rq.cluster) || api_str(c, b, "from", true, &rq.from) < 0 ||
	    api_str(c, b, "to", true, &rq.to) < 0 || api_str(c, b, "kind", false, &rq.kind) < 0 ||
	    api_str(c, b, "transport", false, &rq.transport) < 0 ||
	    api_str(c, b, "op", false, &rq.op) < 0 ||
	    api_str(c, b, "device", false, &rq.device) < 0 ||
	    api_str(c, b, "server_address", false, &rq.server_address) < 0 ||
	    api_int(c, b, "size", 1, 100000000, &rq.size) < 0 ||
	    api_int(c, b, "iters", 1, 100000000, &rq.iters) < 0 ||
	    api_int(c, b, "duration_s", 1, 86400, &rq.duration_s) < 0 ||
	    api_int(c, b, "qps", 1, 65536, &rq.qps) < 0 ||
	    api_int(c, b, "gid_index", -1, 65535, &rq.gid_index) < 0 ||
	    api_int(c, b, "ib_port", 1, 255, &rq.ib_port) < 0 ||
	    api_int(c, b, "tclass", 0, 255, &rq.tclass) < 0 ||
	    api_int(c, b, "sl", 0, 15, &rq.sl) < 0 || api_bool(c, b, "sweep", &rq.sweep) < 0 ||
	    api_bool(c, b, "bidir", &rq.bidir) < 0 ||
	    api_bool(c, b, "check_data", &rq.check_data) < 0 ||
	    api_bool(c, b, "rdma_cm", &rq.rdma_cm) < 0 ||
	    api_int(c, b, "timeout_ms", 1000, 86400000, &rq.timeout_ms) < 0)
		return;
	SERVICE(c, ctl_bench_create(c->st, &rq, &made, ERR));
	ctl_engine_kick(c->srv->engine); /* the bench pass sends it now */
	SERVICE(c, ctl_bench_get(c->st, made.id, &doc, ERR));
	api_json(c, 201, doc);
out:;
}

static void post_bench_cancel(struct api_call *c)
{
	static const struct cancel_kind k = {"benchmark run", ctl_bench_get, ctl_bench_state_final,
					     ctl_bench_cancel};

	cancel_object(c, &k);
}

/* ---- playbooks --------------------------------------------------------------------------------
 */

static void get_playbooks(struct api_call *c)
{
	json_t *v = NULL;

	SERVICE(c, ctl_playbook_list(c->st, PAGE_FETCH, &v, ERR));
	api_page(c, v);
out:;
}

/* An uploaded playbook, with the uploads of the caller's clusters only: one uploaded for none
 * of them is the same 404 as an unknown one. */
static void get_playbook(struct api_call *c)
{
	const char *sha = http_req_capture(c->req, "sha256");
	json_t *p = NULL, *ups, *u;
	size_t i;

	SERVICE(c, ctl_playbook_get(c->st, sha, &p, ERR));
	ups = json_object_get(p, "uploads");
	for (i = json_array_size(ups); i-- > 0;) {
		u = json_array_get(ups, i);
		if (!api_scope_ok(c, JSTR(u, "cluster")))
			json_array_remove(ups, i);
	}
	if (json_array_size(ups) == 0) {
		api_error(c, 404, CTL_ERR_NOT_FOUND, "sha256", "no playbook %s", sha);
		goto out;
	}
	api_json(c, 200, p);
	p = NULL;
out:
	json_decref(p);
}

static void post_playbook(struct api_call *c)
{
	static const char *const keys[] = {"cluster", "playbook", NULL};
	json_t *b = api_body(c, keys), *doc = NULL;
	const char *cluster = NULL, *text = NULL;

	if (!b || !scoped_cluster(c, b, &cluster) || api_str(c, b, "playbook", true, &text) < 0)
		return;
	SERVICE(c, ctl_playbook_upload(c->st, cluster, text, strlen(text), c->actor, &doc, ERR));
	api_json(c, 201, doc);
out:;
}

/* Check (and with a node, render) a playbook; nothing is stored. A node outside the caller's
 * scope is as unknown as a missing one. */
static void post_playbook_check(struct api_call *c)
{
	static const char *const keys[] = {"cluster", "playbook", "node", NULL};
	json_t *b = api_body(c, keys), *doc = NULL;
	const char *cluster = NULL, *text = NULL, *node = NULL;
	char *node_cluster = NULL;

	if (!b || (json_object_get(b, "cluster") && !scoped_cluster(c, b, &cluster)) ||
	    api_str(c, b, "playbook", true, &text) < 0 || api_str(c, b, "node", false, &node) < 0)
		return;
	SERVICE(c, ctl_playbook_check(c->st, text, strlen(text), "playbook", cluster, node, &doc,
				      &node_cluster, ERR));
	if (node_cluster && !api_scope_ok(c, node_cluster)) {
		api_error(c, 404, CTL_ERR_NOT_FOUND, "node", "no node %s", node);
		goto out;
	}
	api_json(c, 200, doc);
	doc = NULL;
out:
	json_decref(doc);
	free(node_cluster);
}

/* ---- revalidations --------------------------------------------------------------------------- */

static void get_revalidations(struct api_call *c)
{
	json_t *v = NULL;

	SERVICE(c, ctl_revalidate_list(c->st, PAGE_FETCH, &v, ERR));
	api_page(c, v);
out:;
}

static void get_revalidation(struct api_call *c)
{
	const char *id = http_req_capture(c->req, "id");
	json_t *v = NULL;

	SERVICE(c, ctl_revalidate_get(c->st, id, &v, ERR));
	if (visible(c, v, "revalidation", id)) {
		api_json(c, 200, v);
		v = NULL;
	}
out:
	json_decref(v);
}

/* Revalidating is an operator's right; applying a configuration (or bringing one's own) to the
 * nodes takes configure. */
static void post_revalidation(struct api_call *c)
{
	static const char *const keys[] = {"cluster", "baseline",	  "playbook",
					   "apply",   "tolerance_bw_pct", "tolerance_lat_pct",
					   NULL};
	json_t *b = api_body(c, keys), *doc = NULL;
	struct ctl_revalidate_request rq = {.actor = c->actor};

	if (!b || !scoped_cluster(c, b, &rq.cluster) ||
	    api_str(c, b, "baseline", true, &rq.baseline) < 0 ||
	    api_str(c, b, "playbook", false, &rq.playbook_text) < 0 ||
	    api_bool(c, b, "apply", &rq.apply) < 0 ||
	    api_num(c, b, "tolerance_bw_pct", 0, 1000, &rq.tolerance_bw_pct) < 0 ||
	    api_num(c, b, "tolerance_lat_pct", 0, 1000, &rq.tolerance_lat_pct) < 0)
		return;
	if ((rq.apply || rq.playbook_text) && !api_may(c, API_PERM_CONFIGURE)) {
		api_error(c, 403, "forbidden", rq.apply ? "apply" : "playbook",
			  "the %s role may revalidate the baseline's configuration in check mode "
			  "only (configure)",
			  api_role_name(c->role));
		return;
	}
	if (rq.playbook_text) {
		rq.playbook_len = strlen(rq.playbook_text);
		rq.playbook_file = "playbook";
	}
	SERVICE(c, ctl_revalidate_create(c->st, &rq, &doc, ERR));
	ctl_engine_kick(c->srv->engine); /* the revalidation pass starts it now */
	api_json(c, 201, doc);
out:;
}

static void post_revalidation_cancel(struct api_call *c)
{
	static const struct cancel_kind k = {"revalidation", ctl_revalidate_get,
					     ctl_revalidate_state_final, ctl_revalidate_cancel};

	cancel_object(c, &k);
}

/* ---- maintenances ------------------------------------------------------------------------ */

static void get_maintenances(struct api_call *c)
{
	json_t *v = NULL;

	SERVICE(c, ctl_maint_list(c->st, PAGE_FETCH, &v, ERR));
	api_page(c, v);
out:;
}

static void get_maintenance(struct api_call *c)
{
	const char *id = http_req_capture(c->req, "id");
	json_t *v = NULL;

	SERVICE(c, ctl_maint_get(c->st, id, &v, ERR));
	if (visible(c, v, "maintenance", id)) {
		api_json(c, 200, v);
		v = NULL;
	}
out:
	json_decref(v);
}

/* A maintenance drains, reconfigures and hands back nodes: the configure right. */
static void post_maintenance(struct api_call *c)
{
	static const char *const keys[] = {"cluster",	     "mode",  "scope", "playbook",
					   "baseline",	     "batch", "sign",  "min_in_service",
					   "job_timeout_ms", NULL};
	json_t *b = api_body(c, keys), *doc = NULL;
	struct ctl_maint_request rq = {.min_in_service = -1, .actor = c->actor};

	if (!b || !scoped_cluster(c, b, &rq.cluster) ||
	    api_str(c, b, "mode", false, &rq.mode) < 0 ||
	    api_str(c, b, "scope", false, &rq.scope) < 0 ||
	    api_str(c, b, "playbook", false, &rq.playbook_text) < 0 ||
	    api_str(c, b, "baseline", false, &rq.baseline) < 0 ||
	    api_str(c, b, "batch", false, &rq.batch) < 0 || api_bool(c, b, "sign", &rq.sign) < 0 ||
	    api_num(c, b, "min_in_service", 0, 1, &rq.min_in_service) < 0 ||
	    api_int(c, b, "job_timeout_ms", 1, CTL_MAINT_JOB_TIMEOUT_MAX_MS, &rq.job_timeout_ms) <
		    0)
		return;
	if (rq.playbook_text) {
		rq.playbook_len = strlen(rq.playbook_text);
		rq.playbook_file = "playbook";
	}
	SERVICE(c, ctl_maint_create(c->st, &rq, &doc, ERR));
	ctl_engine_kick(c->srv->engine); /* the maintenance pass starts it now */
	api_json(c, 201, doc);
out:;
}

static void post_maintenance_cancel(struct api_call *c)
{
	static const struct cancel_kind k = {"maintenance", ctl_maint_get, ctl_maint_state_final,
					     ctl_maint_cancel};

	cancel_object(c, &k);
}

/* ---- enrollment and API tokens ------------------------------------------------------------- */

static void post_enrollment_token(struct api_call *c)
{
	static const char *const keys[] = {"cluster", "uses", "ttl_ms", NULL};
	json_t *b = api_body(c, keys), *doc = NULL;
	const char *cluster = NULL;
	int64_t uses = 1, ttl = 3600000;

	if (!b || !scoped_cluster(c, b, &cluster) ||
	    api_int(c, b, "uses", 1, CTL_ENROLL_USES_MAX, &uses) < 0 ||
	    api_int(c, b, "ttl_ms", 1000, CTL_ENROLL_TTL_MAX_MS, &ttl) < 0)
		return;
	SERVICE(c, ctl_enroll_token_create(c->st, c->actor, cluster, uses, ttl, util_now_unix_ms(),
					   &doc, ERR));
	json_object_set_new(doc, "ca_fingerprint", json_string(c->srv->state->ca_fingerprint));
	api_json(c, 201, doc);
out:;
}

/* Enrollment tokens (never the token itself: it is shown once, when made). */
static void get_enrollment_tokens(struct api_call *c)
{
	json_t *v = NULL;

	SERVICE(c, ctl_enroll_tokens_list(c->st, PAGE_FETCH, util_now_unix_ms(), &v, ERR));
	api_page(c, v);
out:;
}

static void delete_enrollment_token(struct api_call *c)
{
	const char *id = http_req_capture(c->req, "id");
	json_t *v = NULL;

	SERVICE(c, ctl_enroll_token_get(c->st, id, &v, ERR));
	if (!api_scope_ok(c, JSTR(v, "cluster"))) {
		api_error(c, 404, CTL_ERR_NOT_FOUND, "id", "no enrollment token %s", id);
		goto out;
	}
	json_decref(v);
	v = NULL;
	SERVICE(c, ctl_enroll_token_revoke(c->st, id, c->actor, util_now_unix_ms(), &v, ERR));
	api_json(c, 200, v);
	v = NULL;
out:
	json_decref(v);
}

static void get_api_tokens(struct api_call *c)
{
	json_t *v = NULL;

	SERVICE(c, ctl_api_tokens_list(c->st, &v, ERR));
	api_page(c, v);
out:;
}

static void post_api_token(struct api_call *c)
{
	static const char *const keys[] = {"name", "role", "clusters", "ttl_ms", NULL};
	json_t *b = api_body(c, keys), *doc = NULL;
	struct ctl_api_token_request rq = {.actor = c->actor, .now_ms = util_now_unix_ms()};

	if (!b || api_str(c, b, "name", true, &rq.name) < 0 ||
	    api_str(c, b, "role", true, &rq.role) < 0 ||
	    api_int(c, b, "ttl_ms", 0, 3650LL * 86400000, &rq.ttl_ms) < 0)
		return;
	rq.clusters = json_object_get(b, "clusters");
	SERVICE(c, ctl_api_token_create(c->st, &rq, &doc, ERR));
	api_json(c, 201, doc);
out:;
}

/* Who the caller is: its role, the permissions that role has and its cluster scope, so that a
 * client (the portal) shows only what the caller may do without trying it. */
static void get_whoami(struct api_call *c)
{
	json_t *perms = json_array(), *cl = c->scope ? json_loads(c->scope, 0, NULL) : json_null();

	/* A scope that does not parse is no cluster at all (api_in_scope() fails closed too). */
	if (c->scope && !json_is_array(cl)) {
		json_decref(cl);
		cl = json_array();
	}
	for (int p = 0; p < API_PERM_COUNT; p++)
		if (api_may(c, (enum api_perm)p))
			json_array_append_new(perms, json_string(api_perm_name((enum api_perm)p)));
	api_json(c, 200,
		 json_pack("{s:s, s:s?, s:s, s:o, s:o}", "actor", c->actor, "token",
			   c->token_id[0] ? c->token_id : NULL, "role", api_role_name(c->role),
			   "permissions", perms, "clusters", cl));
}

static void delete_api_token(struct api_call *c)
{
	const char *id = http_req_capture(c->req, "id");
	json_t *v = NULL;

	SERVICE(c, ctl_api_token_revoke(c->st, id, c->actor, util_now_unix_ms(), &v, ERR));
	api_json(c, 200, v);
out:;
}

/* ---- audit ------------------------------------------------------------------------------------
 */

static void get_audit(struct api_call *c)
{
	json_t *v = NULL;

	SERVICE(c, ctl_audit_list(c->st, 10000, &v, ERR));
	api_page(c, v);
out:;
}

/* ---- events and metrics ---------------------------------------------------------------------- */

/* One Server-Sent Events client: its subscription, its stream and its slot in the budget. */
struct sse {
	struct ctl_events_sub *sub;
	struct http_stream *stream;
	struct api_streams *budget; /* NULL: holds no slot (the unix socket) */
	size_t slot;
};

static void sse_wake(void *cls)
{
	struct sse *x = cls;

	if (x->stream)
		http_stream_wake(x->stream);
}

static ssize_t sse_read(void *cls, char *buf, size_t max)
{
	struct sse *x = cls;

	return x->sub ? ctl_events_read(x->sub, buf, max) : 0;
}

static void sse_free(void *cls)
{
	struct sse *x = cls;

	ctl_events_unsubscribe(x->sub);
	if (x->budget)
		api_streams_give(x->budget, x->slot);
	free(x);
}

/* A slot for the caller's stream in the budget (api_streams.h), or false with the reply set:
 * 429 for a token or address that has its share, 503 when every slot is taken, each with
 * Retry-After and the connection closed (a refused client keeps no connection either). The unix
 * socket's peers (root and the controller's user, on a listener of their own) are not counted. */
static bool stream_slot(struct api_call *c, struct sse *x)
{
	struct api_streams *b = ctl_api_streams(c->srv);
	enum api_streams_refusal why;

	if (c->local)
		return true;
	why = b ? api_streams_take(b, c->token_id, http_req_peer(c->req)->addr, &x->slot)
		: API_STREAMS_TOTAL;
	if (why == API_STREAMS_OK) {
		x->budget = b;
		return true;
	}
	if (why == API_STREAMS_PER_TOKEN)
		api_error(c, 429, "too_many_requests", NULL,
			  "this API token has %d event streams open, its most: close one first",
			  API_STREAMS_PER_TOKEN_DEFAULT);
	else if (why == API_STREAMS_PER_PEER)
		api_error(c, 429, "too_many_requests", NULL,
			  "%d event streams are open from this address, its most: close one first",
			  API_STREAMS_PER_PEER_DEFAULT);
	else
		api_error(c, 503, CTL_ERR_UNAVAILABLE, NULL,
			  "the controller serves %d event streams, its most: try again later",
			  API_STREAMS_TOTAL_DEFAULT);
	if (http_reply_header(c->req, "Retry-After", "15") < 0 ||
	    http_reply_header(c->req, "Connection", "close") < 0)
		api_error(c, 500, CTL_ERR_INTERNAL, NULL, "out of memory");
	return false;
}

/* GET /api/v1/events: Server-Sent Events from Last-Event-ID (or ?last_event_id) on, else from
 * now; only the caller's clusters. */
static void get_events(struct api_call *c)
{
	const char *last = http_req_header(c->req, "Last-Event-ID");
	struct sse *x = calloc(1, sizeof(*x));
	uint64_t after;
	char *end;

	if (!last)
		last = http_req_query(c->req, "last_event_id");
	if (!x) {
		api_error(c, 500, CTL_ERR_INTERNAL, NULL, "out of memory");
		return;
	}
	if (last) {
		after = strtoull(last, &end, 10);
		if (!*last || *end) {
			free(x);
			api_error(c, 400, CTL_ERR_INVALID, "Last-Event-ID", "not an event id");
			return;
		}
	} else {
		after = ctl_events_last_id(c->srv->events);
	}
	if (!stream_slot(c, x)) {
		free(x);
		return;
	}
	x->stream = http_reply_stream(c->req, "text/event-stream", sse_read, sse_free, x);
	if (!x->stream)
		return; /* x was freed; the reply is a 500 */
	x->sub = ctl_events_subscribe(c->srv->events, after, c->local ? NULL : c->scope, sse_wake,
				      x);
	if (x->sub)
		http_stream_wake(x->stream);
}

/* Prometheus text: the HTTP counters, nodes by state, sessions, deployments and campaigns by
 * state. */
static void get_metrics(struct api_call *c)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct ctl_error err;
	int r;

	if (!f) {
		api_error(c, 500, CTL_ERR_INTERNAL, NULL, "out of memory");
		return;
	}
	ctl_error_init(&err);
	r = http_server_metrics(ctl_api_http(c->srv), f);
	if (r >= 0)
		r = ctl_metrics_nodes(c->st, f, &err);
	if (r >= 0) {
		fprintf(f,
			"# HELP railyard_sessions Agents connected now.\n"
			"# TYPE railyard_sessions gauge\nrailyard_sessions %d\n",
			ctl_server_online_count(c->srv));
		r = ctl_metrics_objects(c->st, f, &err);
	}
	if (r >= 0) {
		ctl_sessions_metrics(c->srv, f);
		ctl_engine_metrics(c->srv->engine, f);
	}
	fclose(f);
	ctl_error_done(&err);
	if (r < 0)
		api_error(c, 503, CTL_ERR_UNAVAILABLE, NULL, "metrics unavailable now");
	else
		http_reply_bytes(c->req, 200, "text/plain; version=0.0.4; charset=utf-8", text,
				 len);
	free(text);
}

/* ---- the table ----------------------------------------------------------------------------------
 */

#define R(m, p, perm, scoped, fn)                                                                  \
	{                                                                                          \
		m, p, perm, scoped, fn, 0, 0                                                       \
	}
const struct api_route api_routes[] = {
	R("GET", "/healthz", API_PUBLIC, 0, get_healthz),
	R("GET", "/readyz", API_PUBLIC, 0, get_readyz),
	R("GET", "/api/v1/clusters", API_PERM_READ, 1, get_clusters),
	R("GET", "/api/v1/clusters/{cluster}/wlm", API_PERM_READ, 1, get_wlm),
	R("PUT", "/api/v1/clusters/{cluster}/wlm", API_PERM_CONFIGURE, 1, put_wlm),
	R("DELETE", "/api/v1/clusters/{cluster}/wlm", API_PERM_CONFIGURE, 1, delete_wlm),
	R("GET", "/api/v1/clusters/{cluster}/wlm/actions", API_PERM_READ, 1, get_wlm_actions),
	R("GET", "/api/v1/clusters/{cluster}/wlm/nodes", API_PERM_READ, 1, get_wlm_nodes),
	R("GET", "/api/v1/nodes", API_PERM_READ, 1, get_nodes),
	R("GET", "/api/v1/nodes/{id}", API_PERM_READ, 1, get_node),
	R("POST", "/api/v1/nodes/{id}/revoke", API_PERM_ADMIN, 1, post_node_revoke),
	R("GET", "/api/v1/nodes/{id}/health-events", API_PERM_READ, 1, get_node_health_events),
	R("POST", "/api/v1/nodes/{id}/health/ack", API_PERM_OPERATE, 1, post_node_health_ack),
	R("GET", "/api/v1/playbooks", API_PERM_READ, 1, get_playbooks),
	R("POST", "/api/v1/playbooks", API_PERM_CONFIGURE, 1, post_playbook),
	R("GET", "/api/v1/playbooks/{sha256}", API_PERM_READ, 1, get_playbook),
	R("POST", "/api/v1/playbooks/check", API_PERM_CONFIGURE, 1, post_playbook_check),
	R("GET", "/api/v1/deployments", API_PERM_READ, 1, get_deployments),
	R("POST", "/api/v1/deployments", API_PERM_CONFIGURE, 1, post_deployment),
	R("GET", "/api/v1/deployments/{id}", API_PERM_READ, 1, get_deployment),
	R("POST", "/api/v1/deployments/{id}/cancel", API_PERM_OPERATE, 1, post_deployment_cancel),
	R("GET", "/api/v1/campaigns", API_PERM_READ, 1, get_campaigns),
	R("POST", "/api/v1/campaigns", API_PERM_CONFIGURE, 1, post_campaign),
	R("GET", "/api/v1/campaigns/{id}", API_PERM_READ, 1, get_campaign),
	R("GET", "/api/v1/campaigns/{id}/results", API_PERM_READ, 1, get_campaign_results),
	R("POST", "/api/v1/campaigns/{id}/cancel", API_PERM_OPERATE, 1, post_campaign_cancel),
	R("GET", "/api/v1/signoffs", API_PERM_READ, 1, get_signoffs),
	R("POST", "/api/v1/signoffs", API_PERM_CONFIGURE, 1, post_signoff),
	R("GET", "/api/v1/signoffs/{id}", API_PERM_READ, 1, get_signoff),
	R("GET", "/api/v1/signoffs/{id}/verify", API_PERM_READ, 1, get_signoff_verify),
	R("GET", "/api/v1/signoffs/{id}/{file}", API_PERM_READ, 1, get_signoff_file),
	R("GET", "/api/v1/bench-runs", API_PERM_READ, 1, get_bench_runs),
	R("POST", "/api/v1/bench-runs", API_PERM_OPERATE, 1, post_bench_run),
	R("GET", "/api/v1/bench-runs/{id}", API_PERM_READ, 1, get_bench_run),
	R("POST", "/api/v1/bench-runs/{id}/cancel", API_PERM_OPERATE, 1, post_bench_cancel),
	R("GET", "/api/v1/maintenances", API_PERM_READ, 1, get_maintenances),
	R("POST", "/api/v1/maintenances", API_PERM_CONFIGURE, 1, post_maintenance),
	R("GET", "/api/v1/maintenances/{id}", API_PERM_READ, 1, get_maintenance),
	R("POST", "/api/v1/maintenances/{id}/cancel", API_PERM_OPERATE, 1, post_maintenance_cancel),
	R("GET", "/api/v1/revalidations", API_PERM_READ, 1, get_revalidations),
	R("POST", "/api/v1/revalidations", API_PERM_OPERATE, 1, post_revalidation),
	R("GET", "/api/v1/revalidations/{id}", API_PERM_READ, 1, get_revalidation),
	R("POST", "/api/v1/revalidations/{id}/cancel", API_PERM_OPERATE, 1,
	  post_revalidation_cancel),
	R("GET", "/api/v1/ca.pem", API_PUBLIC, 0, get_ca),
	R("GET", "/api/v1/enrollment-tokens", API_PERM_CONFIGURE, 1, get_enrollment_tokens),
	R("POST", "/api/v1/enrollment-tokens", API_PERM_CONFIGURE, 1, post_enrollment_token),
	R("DELETE", "/api/v1/enrollment-tokens/{id}", API_PERM_CONFIGURE, 1,
	  delete_enrollment_token),
	{"GET", "/api/v1/api-tokens", API_PERM_ADMIN, 0, get_api_tokens, 0, 1},
	{"POST", "/api/v1/api-tokens", API_PERM_ADMIN, 0, post_api_token, 0, 1},
	{"DELETE", "/api/v1/api-tokens/{id}", API_PERM_ADMIN, 0, delete_api_token, 0, 1},
	{"GET", "/api/v1/audit", API_PERM_ADMIN, 0, get_audit, 0, 1},
	R("GET", "/api/v1/whoami", API_PERM_READ, 0, get_whoami),
	{"GET", "/api/v1/events", API_PERM_READ, 1, get_events, HTTP_ROUTE_NO_ETAG, 0},
	{"GET", "/metrics", API_PERM_READ, 0, get_metrics, HTTP_ROUTE_NO_ETAG, 1},
	R("GET", "/api/v1/openapi.yaml", API_PERM_READ, 0, get_openapi),
};
const size_t api_routes_count = RY_ARRAY_SIZE(api_routes);
