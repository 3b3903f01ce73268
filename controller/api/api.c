/* The REST API's dispatcher: every request is authenticated (API token, or the unix socket's
 * peer), authorized (the route's permission against the token's role) and handed to its route
 * with the caller's cluster scope; errors share one body. */
#include "controller/api/api_int.h"
#include "controller/api/api_streams.h"

#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"
#include "controller/portal/portal.h"
#include "controller/state.h"
#include "controller/tokens.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ctl_api {
	struct ctl_server *srv;
	struct http_server *http;
	struct http_route *routes;
	struct api_streams *streams; /* GET /api/v1/events: per token, per peer, in all */
	char *addr_path;
	/* Wakes the event streams every few seconds, so that an idle one sends its keepalive
	 * and a client that went away is noticed. */
	pthread_t ticker;
	bool ticker_started, stopping;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* /readyz's write probe of the state directory, at most one a READY_PROBE_MS (the route
	 * is public: a flood of it costs one fsync a second, not one each). Under lock. */
	int64_t probe_at_ms;
	int probe_r;
};

#define READY_PROBE_MS 1000

#define TICK_MS 5000

struct http_server *ctl_api_http(struct ctl_server *srv)
{
	return srv->api ? srv->api->http : NULL;
}

struct api_streams *ctl_api_streams(struct ctl_server *srv)
{
	return srv->api ? srv->api->streams : NULL;
}

static void *ticker_main(void *arg)
{
	struct ctl_api *a = arg;
	struct timespec ts;

	pthread_mutex_lock(&a->lock);
	while (!a->stopping) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += TICK_MS / 1000;
		pthread_cond_timedwait(&a->cond, &a->lock, &ts);
		if (a->stopping)
			break;
		pthread_mutex_unlock(&a->lock);
		http_server_wake_streams(a->http);
		pthread_mutex_lock(&a->lock);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

int ctl_api_ready_probe(struct ctl_server *srv)
{
	struct ctl_api *a = srv->api;
	int64_t now = util_now_mono_ms();
	char *path = ctl_state_path(srv->state, CTL_API_READY_PROBE);
	int r;

	if (!path)
		return -ENOMEM;
	if (!a) {
		r = fs_probe_write(path, 4096);
		goto out;
	}
	pthread_mutex_lock(&a->lock);
	if (a->probe_at_ms && now - a->probe_at_ms < READY_PROBE_MS) {
		r = a->probe_r;
	} else {
		r = fs_probe_write(path, 4096);
		a->probe_r = r;
		a->probe_at_ms = now;
	}
	pthread_mutex_unlock(&a->lock);
out:
	free(path);
	return r;
}

void api_error(struct api_call *c, unsigned status, const char *code, const char *field,
	       const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	http_reply_error(c->req, status, code, msg, field);
}

void api_service_error(struct api_call *c, const struct ctl_error *err)
{
	static const struct {
		const char *code;
		unsigned status;
	} map[] = {
		{CTL_ERR_INVALID, 400},	 {CTL_ERR_PLAYBOOK, 400},    {CTL_ERR_NOT_FOUND, 404},
		{CTL_ERR_CONFLICT, 409}, {CTL_ERR_UNAVAILABLE, 503}, {CTL_ERR_INTERNAL, 500},
	};
	unsigned status = 500;
	json_t *e, *details;

	for (size_t i = 0; i < RY_ARRAY_SIZE(map); i++)
		if (err->code && strcmp(err->code, map[i].code) == 0)
			status = map[i].status;
	if (!err->diags.count) {
		http_reply_error(c->req, status, err->code ? err->code : CTL_ERR_INTERNAL,
				 err->message, err->field[0] ? err->field : NULL);
		return;
	}
	details = json_array();
	for (size_t i = 0; i < err->diags.count; i++)
		json_array_append_new(details, json_pack("{s:s, s:i, s:i, s:s}", "file",
							 err->diags.items[i].file, "line",
							 err->diags.items[i].line, "column",
							 err->diags.items[i].col, "message",
							 err->diags.items[i].message));
	e = json_pack("{s:{s:s, s:s, s:s?, s:o}}", "error", "code", err->code, "message",
		      err->message, "field", err->field[0] ? err->field : NULL, "details", details);
	http_reply_json(c->req, status, e);
}

void api_json(struct api_call *c, unsigned status, json_t *doc)
{
	if (!doc) {
		http_reply_error(c->req, 500, CTL_ERR_INTERNAL, "out of memory", NULL);
		return;
	}
	http_reply_json(c->req, status, doc);
}

bool api_scope_ok(const struct api_call *c, const char *cluster)
{
	return c->local || !c->scope || api_in_scope(c->scope, cluster);
}

bool api_may(const struct api_call *c, enum api_perm perm)
{
	return c->local || api_allowed(c->role, perm);
}

void api_page(struct api_call *c, json_t *items)
{
	const char *ls = http_req_query(c->req, "limit"), *cs = http_req_query(c->req, "cursor");
	const char *fc = http_req_query(c->req, "cluster"), *fs = http_req_query(c->req, "state");
	const char *fm = http_req_query(c->req, "check_mode");
	long long limit = API_LIMIT_DEFAULT, from = 0;
	json_t *page = json_array(), *e;
	size_t i, seen = 0;
	char *end, next[32] = "";

	if (ls && ((limit = strtoll(ls, &end, 10)) < 1 || limit > API_LIMIT_MAX || *end || !*ls)) {
		json_decref(items);
		json_decref(page);
		api_error(c, 400, CTL_ERR_INVALID, "limit", "limit must be 1..%d", API_LIMIT_MAX);
		return;
	}
	if (cs && ((from = strtoll(cs, &end, 10)) < 0 || *end || !*cs)) {
		json_decref(items);
		json_decref(page);
		api_error(c, 400, CTL_ERR_INVALID, "cursor", "not a cursor of this list");
		return;
	}
	if (fm && strcmp(fm, "true") != 0 && strcmp(fm, "false") != 0) {
		json_decref(items);
		json_decref(page);
		api_error(c, 400, CTL_ERR_INVALID, "check_mode",
			  "check_mode must be true or false");
		return;
	}
	json_array_foreach(items, i, e)
	{
		const char *cl = json_string_value(json_object_get(e, "cluster"));
		const char *st = json_string_value(json_object_get(e, "state"));
		const json_t *cm = json_object_get(e, "check_mode");

		if (cl && !api_scope_ok(c, cl))
			continue;
		/* ?cluster= and ?state= filter every list whose items have them; ?check_mode= the
		 * deployments (a check apart from the real configuration: the overview). */
		if ((fc && (!cl || strcmp(cl, fc) != 0)) || (fs && (!st || strcmp(st, fs) != 0)) ||
		    (fm && (!json_is_boolean(cm) || json_is_true(cm) != (strcmp(fm, "true") == 0))))
			continue;
		if ((long long)seen++ < from)
			continue;
		if ((long long)json_array_size(page) == limit) {
			snprintf(next, sizeof(next), "%lld", from + limit);
			break;
		}
		json_array_append(page, e);
	}
	json_decref(items);
	api_json(c, 200,
		 json_pack("{s:o, s:s?}", "items", page, "next_cursor", next[0] ? next : NULL));
}

json_t *api_body(struct api_call *c, const char *const *allowed)
{
	json_t *b = http_req_json(c->req), *v;
	const char *k;

	if (!b)
		return NULL;
	json_object_foreach(b, k, v)
	{
		bool ok = false;

		for (size_t i = 0; allowed[i]; i++)
			ok |= strcmp(k, allowed[i]) == 0;
		if (!ok) {
			api_error(c, 400, CTL_ERR_INVALID, k, "unknown field \"%s\"", k);
			return NULL;
		}
	}
	return b;
}

int api_str(struct api_call *c, const json_t *body, const char *key, bool required,
	    const char **ret)
{
	const json_t *v = json_object_get(body, key);

	if (!v && !required)
		return 0;
	if (!json_is_string(v)) {
		api_error(c, 400, CTL_ERR_INVALID, key, "%s: %s", key,
			  v ? "expected a string" : "required");
		return -1;
	}
	*ret = json_string_value(v);
	return 0;
}

int api_bool(struct api_call *c, const json_t *body, const char *key, bool *ret)
{
	const json_t *v = json_object_get(body, key);

	if (!v)
		return 0;
	if (!json_is_boolean(v)) {
		api_error(c, 400, CTL_ERR_INVALID, key, "%s: expected true or false", key);
		return -1;
	}
	*ret = json_is_true(v);
	return 0;
}

int api_int(struct api_call *c, const json_t *body, const char *key, int64_t min, int64_t max,
	    int64_t *ret)
{
	const json_t *v = json_object_get(body, key);

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
		api_error(c, 400, CTL_ERR_INVALID, key, "%s: expected an integer %lld..%lld", key,
			  (long long)min, (long long)max);
		return -1;
	}
	*ret = json_integer_value(v);
	return 0;
}

int api_num(struct api_call *c, const json_t *body, const char *key, double min, double max,
	    double *ret)
{
	const json_t *v = json_object_get(body, key);

	if (!v)
		return 0;
	if (!json_is_number(v) || !(json_number_value(v) >= min) ||
	    !(json_number_value(v) <= max)) {
		api_error(c, 400, CTL_ERR_INVALID, key, "%s: expected a number %g..%g", key, min,
			  max);
		return -1;
	}
	*ret = json_number_value(v);
	return 0;
}

/* The caller behind the request: the unix socket's peer, or the bearer token. 0, or -1 with
 * the reply (401) set. */
static int authenticate(struct api_call *c)
{
	const struct http_peer *p = http_req_peer(c->req);
	const char *h = http_req_header(c->req, "Authorization");
	struct ctl_api_identity who;
	struct ctl_error err;
	int r;

	if (p->local) {
		c->local = true;
		c->role = API_ADMIN;
		snprintf(c->actor, sizeof(c->actor), "local:uid %ld", (long)p->uid);
		return 0;
	}
	if (!h || strncasecmp(h, "Bearer ", 7) != 0) {
		api_error(c, 401, "unauthenticated", NULL,
			  "an API token is required (Authorization: Bearer rya1....)");
		return -1;
	}
	ctl_error_init(&err);
	r = ctl_api_token_authenticate(c->st, h + 7, util_now_unix_ms(), &who, &err);
	if (r >= 0 && api_role_parse(who.role, &c->role) < 0) {
		ctl_api_identity_done(&who);
		r = ctl_error_set(&err, -RY_E_INVALID, CTL_ERR_UNAUTHENTICATED, NULL,
				  "not a valid API token");
	}
	if (r < 0) {
		api_error(c, 401, "unauthenticated", NULL, "%s", err.message);
		ctl_error_done(&err);
		return -1;
	}
	ctl_error_done(&err);
	snprintf(c->token_id, sizeof(c->token_id), "%s", who.id);
	snprintf(c->actor, sizeof(c->actor), "api:%s (%s)", who.name, who.id);
	c->scope = who.clusters_json; /* taken */
	who.clusters_json = NULL;
	return 0;
}

static void dispatch(struct http_req *req)
{
	const struct api_route *rt = http_req_route_data(req);
	struct api_call c = {.req = req, .srv = http_req_userdata(req)};

	c.st = c.srv->state->store;
	if (rt->perm != API_PUBLIC) {
		if (authenticate(&c) < 0)
			goto out;
		if (!api_may(&c, (enum api_perm)rt->perm)) {
			api_error(&c, 403, "forbidden", NULL, "the %s role may not do this (%s)",
				  api_role_name(c.role), api_perm_name((enum api_perm)rt->perm));
			goto out;
		}
		/* What spans every cluster (API tokens, the audit log, fleet metrics) is for
		 * unscoped tokens: a scoped admin could otherwise mint itself an unscoped
		 * token, a scoped viewer count another customer's nodes. */
		if (rt->fleet && c.scope) {
			api_error(&c, 403, "forbidden", NULL,
				  "a token scoped to clusters may not do this");
			goto out;
		}
	}
	rt->fn(&c);
out:
	free(c.scope);
}

int ctl_api_start(struct ctl_server *srv, const struct ctl_api_config *cfg, struct ctl_api **ret,
		  char *errbuf, size_t errlen)
{
	struct ctl_api *a = calloc(1, sizeof(*a));
	char *sock = ctl_state_path(srv->state, CTL_API_SOCKET);
	struct http_config hc = {
		.listen = cfg->listen,
		.cert_pem = cfg->cert_pem ? cfg->cert_pem : srv->state->server_chain_pem,
		.key_pem = cfg->key_pem ? cfg->key_pem : srv->state->server_key_pem,
		.unix_path = sock,
	};
	size_t n_routes = api_routes_count + ctl_portal_routes_count();
	int r = -ENOMEM;

	if (!a || !sock || !(a->routes = calloc(n_routes, sizeof(*a->routes))) ||
	    !(a->streams = api_streams_new(NULL)))
		goto fail;
	for (size_t i = 0; i < api_routes_count; i++)
		a->routes[i] = (struct http_route){.method = api_routes[i].method,
						   .pattern = api_routes[i].path,
						   .handler = dispatch,
						   .flags = api_routes[i].http_flags,
						   .data = (void *)&api_routes[i]};
	a->srv = srv;
	pthread_mutex_init(&a->lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&a->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	/* The portal's files: public routes beside the API's, not in its table (docs/portal.md). */
	ctl_portal_routes(a->routes + api_routes_count);
	r = http_server_start(&hc, a->routes, n_routes, srv, &a->http, errbuf, errlen);
	if (r < 0)
		goto fail_sync;
	srv->api = a;
	a->ticker_started = pthread_create(&a->ticker, NULL, ticker_main, a) == 0;
	a->addr_path = ctl_state_path(srv->state, CTL_API_ADDR);
	if (a->addr_path && cfg->listen) {
		char url[300];
		const char *colon = strrchr(cfg->listen, ':');
		int n = snprintf(url, sizeof(url), "https://%.*s:%u\n", (int)(colon - cfg->listen),
				 cfg->listen, http_server_port(a->http));

		if (fs_write_file_atomic(a->addr_path, url, (size_t)n, 0644) < 0)
			log_warn("api: cannot write %s", a->addr_path);
		log_info("REST API on https://%.*s:%u and %s", (int)(colon - cfg->listen),
			 cfg->listen, http_server_port(a->http), sock);
	} else {
		log_info("REST API on %s", sock);
	}
	free(sock);
	*ret = a;
	return 0;
fail_sync:
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->cond);
fail:
	if (r == -ENOMEM)
		snprintf(errbuf, errlen, "out of memory");
	free(sock);
	if (a) {
		free(a->routes);
		api_streams_free(a->streams);
	}
	free(a);
	return r;
}

uint16_t ctl_api_port(const struct ctl_api *api)
{
	return api ? http_server_port(api->http) : 0;
}

void ctl_api_stop(struct ctl_api *api)
{
	if (!api)
		return;
	pthread_mutex_lock(&api->lock);
	api->stopping = true;
	pthread_cond_broadcast(&api->cond);
	pthread_mutex_unlock(&api->lock);
	if (api->ticker_started)
		pthread_join(api->ticker, NULL);
	http_server_stop(api->http); /* every stream ended: their slots are given back */
	api_streams_free(api->streams);
	api->srv->api = NULL;
	pthread_mutex_destroy(&api->lock);
	pthread_cond_destroy(&api->cond);
	if (api->addr_path)
		unlink(api->addr_path);
	free(api->addr_path);
	free(api->routes);
	free(api);
}

const struct ctl_api_route_info *ctl_api_routes(size_t *ret_n)
{
	static struct ctl_api_route_info info[256];
	static _Atomic int filled;

	if (!filled) {
		for (size_t i = 0; i < api_routes_count && i < RY_ARRAY_SIZE(info); i++)
			info[i] = (struct ctl_api_route_info){
				api_routes[i].method, api_routes[i].path,
				api_routes[i].perm == API_PUBLIC
					? "public"
					: api_perm_name((enum api_perm)api_routes[i].perm),
				api_routes[i].scoped, api_routes[i].fleet};
		filled = 1;
	}
	*ret_n = api_routes_count < RY_ARRAY_SIZE(info) ? api_routes_count : RY_ARRAY_SIZE(info);
	return info;
}
