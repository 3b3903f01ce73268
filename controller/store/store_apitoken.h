/* The store's tokens (store_apitoken.c): enrollment tokens (an agent's one-time ticket to a
 * cluster) and the bearer tokens of the REST API. Only hashes of secrets are stored. */
#ifndef RAILYARD_CONTROLLER_STORE_APITOKEN_H
#define RAILYARD_CONTROLLER_STORE_APITOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/store/store.h"

/* ---- Enrollment tokens ----------------------------------------------------------------------
 * A token lets agents enroll into one cluster, a number of times, until it expires or is
 * revoked; store_enroll_node() (store_nodes.h) consumes one use. */

/* Prefix of every enrollment token. */
#define STORE_TOKEN_PREFIX "ry1."

/* In one transaction: ensure cluster, create an enrollment token valid for ttl_ms (> 0) and
 * uses (>= 1) enrollments, and write the audit row 'token.create' (actor "admin"). The token is
 * STORE_TOKEN_PREFIX followed by 64 hex digits (256 random bits); only its SHA-256 (hex) is
 * stored. On success *ret_token is the token (caller frees with free()); it cannot be recovered
 * later. Errors: -EINVAL (bad ttl/uses/NULL), -RY_E_INVALID (bad cluster name), -RY_E_DB,
 * -RY_E_CRYPTO, -errno from the random source. */
STORE_WUR int store_token_create(struct store *s, const char *cluster, int64_t ttl_ms, int uses,
				 int64_t now_ms, char **ret_token);

/* As store_token_create() with the audit actor given (borrowed, 1..STORE_TEXT_MAX bytes). */
STORE_WUR int store_token_create_as(struct store *s, const char *actor, const char *cluster,
				    int64_t ttl_ms, int uses, int64_t now_ms, char **ret_token);

/* Read-only check of a token: on success *ret_cluster is the cluster it is bound to (caller
 * frees with free()); nothing is consumed. Errors: -RY_E_TOKEN_UNKNOWN, -RY_E_TOKEN_REVOKED
 * (v10), -RY_E_TOKEN_EXPIRED (now_ms >= expiry), -RY_E_TOKEN_USED (no uses left; checked after
 * expiry), -EINVAL, -RY_E_DB. */
STORE_WUR int store_token_check(struct store *s, const char *token, int64_t now_ms,
				char **ret_cluster);

/* An enrollment token as listed: never the token; its id is the first 16 hex digits of the
 * token's SHA-256 (what the audit rows name, 12 of them). */
struct store_enroll_token {
	char *id, *cluster;
	int64_t created_at_ms, expires_at_ms, revoked_at_ms; /* revoked 0: not revoked */
	int uses_left, uses_total;
};
/* The newest enrollment tokens (limit 0: 50), newest first (free with
 * store_enroll_tokens_free()). */
STORE_WUR int store_enroll_tokens_list(struct store *s, size_t limit,
				       struct store_enroll_token **ret, size_t *ret_n);
void store_enroll_tokens_free(struct store_enroll_token *v, size_t n);
/* The public id of an enrollment token (what lists show): 0 or -RY_E_CRYPTO. */
int store_enroll_token_id(const char *token, char out[17]);
/* The cluster of the enrollment token whose id is id (caller frees): -RY_E_NOT_FOUND. */
STORE_WUR int store_enroll_token_cluster(struct store *s, const char *id, char **ret_cluster);
/* Revoke the enrollment token whose id is id (16 hex digits), audited as actor; an agent that
 * presents it is refused "enrollment token revoked". 1 revoked, 0 it was revoked already,
 * -RY_E_NOT_FOUND. */
STORE_WUR int store_enroll_token_revoke(struct store *s, const char *id, const char *actor,
					int64_t now_ms);

/* ---- API tokens (schema v9) ------------------------------------------------------------------
 * Bearer tokens of the REST API: "rya1.<id>.<secret>", id 16 hex digits (64 random bits, the
 * token's public name in lists and audit rows), secret 64 hex digits (256 random bits). Only the
 * SHA-256 of the secret is stored (as enrollment tokens), so a token is shown once, when it is
 * made. Each token has a role (admin, integrator, operator, viewer: what it may do is
 * controller/api/authz.h's business, not the store's) and an optional scope: a JSON array of
 * cluster names (NULL: every cluster). */
#define STORE_API_TOKEN_PREFIX "rya1."
/* Longest token name; most clusters in a scope. */
#define STORE_API_NAME_MAX     64
#define STORE_API_CLUSTERS_MAX 64
/* store_api_token_touch() writes last_used_at at most once per this many ms per token. */
#define STORE_API_TOUCH_MS 60000

/* A token as stored (never its secret); strings owned, freed by store_api_token_free(). */
struct store_api_token {
	char *id, *name, *role, *created_by;
	char *clusters_json; /* compact JSON array of names; NULL: every cluster */
	int64_t created_at_ms;
	int64_t expires_at_ms;	 /* 0: never */
	int64_t revoked_at_ms;	 /* 0: not revoked */
	int64_t last_used_at_ms; /* 0: never used (as far as store_api_token_touch() knows) */
};

/* Is name a valid API token name: 1..STORE_API_NAME_MAX of [A-Za-z0-9._-], and not 16 hex
 * digits (an id's form: revoke and get take either)? For callers that check before opening. */
bool store_api_name_ok(const char *name);

/* Make an API token, in one transaction with the audit row 'api_token.create' by actor (target
 * the token id, detail its name, role, scope and expiry). name: as store_api_name_ok(), and
 * unique among the tokens not revoked. role: "admin", "integrator", "operator" or "viewer".
 * clusters_json: NULL (every cluster) or a JSON array of 1..STORE_API_CLUSTERS_MAX distinct cluster
 * names, each checked by the store itself with the rule of ctl_valid_cluster_name() (1-64 of
 * [A-Za-z0-9._-], starting with a letter or digit); the clusters need not exist yet; stored in
 * compact form. ttl_ms: > 0, or 0 for a token that never expires. On success *ret_token is the
 * token and *ret_id (if ret_id is not NULL) its id (caller frees both with free()); the token
 * cannot be recovered later. Errors (nothing stored): -EINVAL (NULL s/ret_token, ttl < 0 or now +
 * ttl overflowing), -RY_E_INVALID (name, role, clusters or actor), -RY_E_EXISTS (a token of that
 * name that is not revoked), -RY_E_DB, -RY_E_CRYPTO, -ENOMEM, -errno of the random source. */
STORE_WUR int store_api_token_create(struct store *s, const char *name, const char *role,
				     const char *clusters_json, int64_t ttl_ms, const char *actor,
				     int64_t now_ms, char **ret_token, char **ret_id);

/* Check a bearer token, read only (the reader connection: no write, no fsync, never waits for a
 * writer). The secret is compared in constant time, and before anything else about the token is
 * told. On success *ret is the token (free with store_api_token_free()); the caller checks its
 * role and scope. Errors, in the order they are tested:
 *   -EINVAL              NULL argument
 *   -RY_E_INVALID        malformed: not "rya1." + 16 + "." + 64 lower-case hex digits
 *   -RY_E_TOKEN_UNKNOWN  no token has that id
 *   -RY_E_TOKEN_SECRET   the id is known, the secret is not its secret
 *   -RY_E_REVOKED        revoked (at any time, before or after now_ms)
 *   -RY_E_TOKEN_EXPIRED  now_ms >= its expiry
 *   -RY_E_DB, -RY_E_CRYPTO, -ENOMEM
 * All of them are 401 to a client; the distinct codes are for logs and tests. */
STORE_WUR int store_api_token_check(struct store *s, const char *token, int64_t now_ms,
				    struct store_api_token **ret);

/* Record that token id was used at now_ms: last_used_at is written only when it is unset or at
 * least STORE_API_TOUCH_MS older than now_ms, and never for a revoked token, so calling this on
 * every request costs one guarded UPDATE on the writer; a caller can skip the call when
 * now_ms - t->last_used_at_ms < STORE_API_TOUCH_MS from store_api_token_check(). Returns 1 when
 * it wrote, 0 when there was nothing to write (recent use, revoked or unknown id), -EINVAL,
 * -RY_E_DB. */
STORE_WUR int store_api_token_touch(struct store *s, const char *id, int64_t now_ms);

/* Look a token up by id, or else by name (the one not revoked, or else the newest revoked one
 * of that name). On success *ret is a new token (free with store_api_token_free()).
 * -RY_E_NOT_FOUND, -EINVAL, -RY_E_DB, -ENOMEM. Read only. */
STORE_WUR int store_api_token_get(struct store *s, const char *id_or_name,
				  struct store_api_token **ret);

/* Every token, revoked and expired ones included, oldest first (then by name). *ret is a new
 * array of *ret_n tokens (NULL when none; free with store_api_tokens_free()). -EINVAL, -RY_E_DB,
 * -ENOMEM. Read only. */
STORE_WUR int store_api_tokens_list(struct store *s, struct store_api_token ***ret, size_t *ret_n);

/* Revoke a token (by id or name, as store_api_token_get()), in one transaction with the audit
 * row 'api_token.revoke' by actor (borrowed, required; target the id, detail the name). Returns
 * 1 when it was revoked now, 0 when it was revoked already (nothing written); in both cases
 * *ret_id, if ret_id is not NULL, is its id (caller frees with free()). -RY_E_NOT_FOUND,
 * -EINVAL, -RY_E_INVALID (actor), -RY_E_DB, -ENOMEM. */
STORE_WUR int store_api_token_revoke(struct store *s, const char *id_or_name, const char *actor,
				     int64_t now_ms, char **ret_id);

/* Free a token, or an array from store_api_tokens_list(). Accept NULL. */
void store_api_token_free(struct store_api_token *t);
void store_api_tokens_free(struct store_api_token **v, size_t n);

#endif
