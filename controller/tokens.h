/* The tokens-and-audit service: API tokens (create, list, revoke, authenticate a bearer token),
 * enrollment tokens (create, list, look up, revoke) and the audit log. Returns data (JSON or a
 * struct) and a ctl_error, never prints; the REST API and the command line format it. Every
 * function takes the store (borrowed) and works without a serving controller: the command line
 * can open a state directory (ctl_state_open()) and call them on its store, e.g. to create the
 * first admin token offline (ctl_api_token_create() with actor "admin"). Thread-safety is the
 * store's: any thread. */
#ifndef RAILYARD_CONTROLLER_TOKENS_H
#define RAILYARD_CONTROLLER_TOKENS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "controller/service.h"

struct store;

/* ---- API tokens ---------------------------------------------------------------------------- */

/* Longest token name; most clusters in a token's scope. */
#define CTL_API_NAME_MAX     64
#define CTL_API_CLUSTERS_MAX 64

/* Is name a valid API token name: 1..CTL_API_NAME_MAX of [A-Za-z0-9._-], and not 16 hex digits
 * (an id's form: revoke and get take either)? For front ends that check before they ask. */
bool ctl_api_token_name_ok(const char *name);

/* What makes an API token (every pointer borrowed). */
struct ctl_api_token_request {
	const char *name;	/* 1..64 of [A-Za-z0-9._-], not an id's form (field "name") */
	const char *role;	/* admin, integrator, operator or viewer (field "role") */
	const json_t *clusters; /* NULL or JSON null: every cluster; else an array of names */
	int64_t ttl_ms;		/* 0: never expires; else > 0 (field "ttl_ms") */
	const char *actor;	/* who asks, for the audit row 'api_token.create' */
	int64_t now_ms;
};

/* Make an API token; *ret {id, name, role, token} (new reference; the token is shown only
 * here, the caller wipes what it copies). CTL_ERR_INVALID naming the field (name, role,
 * clusters, ttl_ms), CTL_ERR_CONFLICT (field name: a token of that name is not revoked),
 * CTL_ERR_UNAVAILABLE / CTL_ERR_INTERNAL (the store). */
__attribute__((warn_unused_result)) int ctl_api_token_create(struct store *st,
							     const struct ctl_api_token_request *rq,
							     json_t **ret, struct ctl_error *err);
/* Every API token, revoked and expired ones included, never a secret: [{id, name, role,
 * clusters (array or null), created_by, created_at_ms, expires_at_ms, revoked_at_ms,
 * last_used_at_ms}]. New reference. */
__attribute__((warn_unused_result)) int ctl_api_tokens_list(struct store *st, json_t **ret,
							    struct ctl_error *err);
/* One API token by id, or else by name (the one not revoked, or else the newest revoked one),
 * never its secret: *ret as an element of ctl_api_tokens_list() (new reference). Read only.
 * CTL_ERR_NOT_FOUND (field id), CTL_ERR_UNAVAILABLE / CTL_ERR_INTERNAL (the store). */
__attribute__((warn_unused_result)) int ctl_api_token_get(struct store *st, const char *id_or_name,
							  json_t **ret, struct ctl_error *err);
/* Revoke a token by id or name, audited as actor; *ret {id, revoked: true} (also when it was
 * revoked already). CTL_ERR_NOT_FOUND (field id). */
__attribute__((warn_unused_result)) int ctl_api_token_revoke(struct store *st,
							     const char *id_or_name,
							     const char *actor, int64_t now_ms,
							     json_t **ret, struct ctl_error *err);

/* Who a bearer token is (what a front end needs to authorize a request). */
struct ctl_api_identity {
	char id[32];
	char name[CTL_API_NAME_MAX + 1];
	char role[16];	     /* as stored; the caller parses it */
	char *clusters_json; /* owned: a JSON array of cluster names; NULL: every cluster */
};
/* Release what an identity owns (NULL fine). */
void ctl_api_identity_done(struct ctl_api_identity *id);
/* Check a bearer token (read only, constant-time secret comparison) and record its use at most
 * once a STORE_API_TOUCH_MS. On success *ret is filled (release with ctl_api_identity_done()).
 * Errors: CTL_ERR_UNAUTHENTICATED with the message a client may see ("the API token has
 * expired", "the API token was revoked", "not a valid API token", "the token could not be
 * checked now" when the store failed). */
__attribute__((warn_unused_result)) int
ctl_api_token_authenticate(struct store *st, const char *token, int64_t now_ms,
			   struct ctl_api_identity *ret, struct ctl_error *err);

/* ---- enrollment tokens --------------------------------------------------------------------- */

/* Longest life and most uses of an enrollment token. */
#define CTL_ENROLL_TTL_MAX_MS (30LL * 86400000)
#define CTL_ENROLL_USES_MAX   100000

/* Make an enrollment token for cluster (created if new), valid ttl_ms (1000..30 days) for uses
 * (1..100000) enrollments, audited 'token.create' as actor. *ret {token, id, cluster, uses,
 * ttl_ms} (new reference; the token is shown only here). CTL_ERR_INVALID naming the field
 * (cluster, uses, ttl_ms). */
__attribute__((warn_unused_result)) int
ctl_enroll_token_create(struct store *st, const char *actor, const char *cluster, int64_t uses,
			int64_t ttl_ms, int64_t now_ms, json_t **ret, struct ctl_error *err);
/* The newest enrollment tokens (limit 0: 50), newest first, never the token itself: [{id,
 * cluster, state: active | used | expired | revoked (at now_ms), created_at_ms, expires_at_ms,
 * revoked_at_ms, uses_left, uses_total}]. New reference. */
__attribute__((warn_unused_result)) int ctl_enroll_tokens_list(struct store *st, size_t limit,
							       int64_t now_ms, json_t **ret,
							       struct ctl_error *err);
/* One enrollment token's {id, cluster} (for a scope check before revoking). CTL_ERR_NOT_FOUND
 * (field id). */
__attribute__((warn_unused_result)) int ctl_enroll_token_get(struct store *st, const char *id,
							     json_t **ret, struct ctl_error *err);
/* Revoke an enrollment token by id, audited as actor; *ret {id, cluster, state: "revoked"}
 * (also when it was revoked already). CTL_ERR_NOT_FOUND (field id). */
__attribute__((warn_unused_result)) int ctl_enroll_token_revoke(struct store *st, const char *id,
								const char *actor, int64_t now_ms,
								json_t **ret,
								struct ctl_error *err);

/* ---- audit log ----------------------------------------------------------------------------- */

/* The newest audit rows (at most limit, >= 1), newest first: [{at_ms, actor, action,
 * target (may be absent), outcome, detail (may be absent)}]. New reference. */
__attribute__((warn_unused_result)) int ctl_audit_list(struct store *st, size_t limit, json_t **ret,
						       struct ctl_error *err);

#endif
