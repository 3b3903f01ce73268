/* Internals of the REST API shared by the dispatcher (api.c) and the routes (api_routes.c). */
#ifndef RAILYARD_CONTROLLER_API_INT_H
#define RAILYARD_CONTROLLER_API_INT_H

#include "controller/api/api.h"
#include "controller/api/authz.h"
#include "controller/http/http.h"
#include "controller/server_int.h"
#include "controller/service.h"

#include <jansson.h>
#include <stdbool.h>

/* Most items a list returns in one page, and the default. */
#define API_LIMIT_MAX	  1000
#define API_LIMIT_DEFAULT 100

/* One request, authenticated and authorized. */
struct api_call {
	struct http_req *req;
	struct ctl_server *srv;
	struct store *st;
	bool local; /* over the unix socket: admin, every cluster */
	enum api_role role;
	char *scope;	   /* the token's clusters (JSON array); NULL: every cluster */
	char token_id[40]; /* "" for local */
	char actor[192];   /* for the audit log: "api:NAME (ID)" or "local:uid N" */
};

typedef void (*api_fn)(struct api_call *c);

/* A route: the permission it needs, whether its object belongs to a cluster, the handler. */
struct api_route {
	const char *method, *path;
	int perm; /* enum api_perm, or API_PUBLIC */
	int scoped;
	api_fn fn;
	unsigned http_flags;
	int fleet; /* about every cluster at once: only for tokens not scoped to clusters */
};
#define API_PUBLIC (-1) /* no token needed (health) */

extern const struct api_route api_routes[];
extern const size_t api_routes_count;

/* The serving controller's HTTP server (for its metrics). */
struct http_server *ctl_api_http(struct ctl_server *srv);
/* Its budget of event streams (controller/api/api_streams.h). */
struct api_streams *ctl_api_streams(struct ctl_server *srv);
/* Can the state directory take a write now (fs_probe_write() of a 4 KiB block to
 * CTL_API_READY_PROBE there)? 0 or -errno; one probe a second at most, the others get its
 * result. Thread-safe. */
int ctl_api_ready_probe(struct ctl_server *srv);

/* Replies. */
void api_error(struct api_call *c, unsigned status, const char *code, const char *field,
	       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A service's error with its HTTP status (400, 404, 409, 503, 500); playbook diagnostics go
 * into "details". */
void api_service_error(struct api_call *c, const struct ctl_error *err);
/* 200 (or status) with doc (stolen). */
void api_json(struct api_call *c, unsigned status, json_t *doc);
/* A page of items (stolen array): those in the caller's scope (by their "cluster" member) and
 * matching ?cluster= and ?state= (when given), from ?cursor, at most ?limit: {"items": [...],
 * "next_cursor": "N" | null}. */
void api_page(struct api_call *c, json_t *items);
/* Is cluster within the caller's scope (local and unscoped tokens: every cluster)? */
bool api_scope_ok(const struct api_call *c, const char *cluster);
/* May the caller do what perm covers? */
bool api_may(const struct api_call *c, enum api_perm perm);

/* Request bodies: the JSON object (NULL: the reply is set), with only the keys in allowed
 * (NULL-terminated; another is a 400 naming it). */
json_t *api_body(struct api_call *c, const char *const *allowed);
/* A member of the body: absent is fine unless required; a wrong type is a 400 naming it.
 * Return 0, or -1 with the reply set. */
int api_str(struct api_call *c, const json_t *body, const char *key, bool required,
	    const char **ret);
int api_bool(struct api_call *c, const json_t *body, const char *key, bool *ret);
int api_int(struct api_call *c, const json_t *body, const char *key, int64_t min, int64_t max,
	    int64_t *ret);
int api_num(struct api_call *c, const json_t *body, const char *key, double min, double max,
	    double *ret);

#endif
