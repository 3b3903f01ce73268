/* Who may do what over the REST API: the four roles of an API token, the permission each route
 * needs, the role x permission matrix (ONE table in authz.c, mirrored in docs/rest.md) and a
 * token's cluster scope. Pure: no store, no I/O; every function is thread-safe. */
#ifndef RAILYARD_CONTROLLER_API_AUTHZ_H
#define RAILYARD_CONTROLLER_API_AUTHZ_H

#include <stdbool.h>
#include <stddef.h>

/* A token's role (stored by name: api_role_name()). */
enum api_role {
	API_ADMIN,	/* everything */
	API_INTEGRATOR, /* configure, operate, read */
	API_OPERATOR,	/* operate, read */
	API_VIEWER,	/* read */
};
#define API_ROLE_COUNT 4

/* What a route needs. Each route names exactly one; the HTTP layer keeps that mapping. */
enum api_perm {
	API_PERM_READ,	    /* GET of anything in the token's scope */
	API_PERM_OPERATE,   /* revalidate; cancel a deployment or campaign the token started */
	API_PERM_CONFIGURE, /* playbooks, deployments, campaigns (incl. cancelling others'),
			     * sign-offs create, enrollment tokens */
	API_PERM_ADMIN,	    /* API tokens, node revoke, anything else */
};
#define API_PERM_COUNT 4

/* One row of the matrix: a role, its name, and allowed[perm]. */
struct api_authz_row {
	enum api_role role;
	const char *name;
	bool allowed[API_PERM_COUNT];
};

/* The matrix itself (static storage, never freed): API_ROLE_COUNT rows, row i for role i;
 * *ret_n (if not NULL) is API_ROLE_COUNT. For tests and docs; decisions use api_allowed(). */
const struct api_authz_row *api_authz_table(size_t *ret_n);

/* Role by its name ("admin", "integrator", "operator", "viewer"; exact, lower case): 0 and
 * *ret, or -RY_E_INVALID (unknown name or NULL; *ret untouched). */
__attribute__((warn_unused_result)) int api_role_parse(const char *name, enum api_role *ret);

/* The role's name (static), or NULL for a value that is not a role. */
const char *api_role_name(enum api_role role);

/* The permission's name ("read", "operate", "configure", "admin"; static), or NULL. */
const char *api_perm_name(enum api_perm perm);

/* May a token of role do what perm covers? false for values out of range (fails closed). */
bool api_allowed(enum api_role role, enum api_perm perm);

/* Is cluster within a token's scope (ctl_scope_contains(), controller/scope.h, which the event
 * stream uses too)? clusters_json: NULL (every cluster: always true) or a JSON
 * array of cluster names as the store keeps it. cluster: the object's cluster (borrowed); NULL
 * (an object of no cluster, such as an API token) is in scope only for an unscoped token.
 * Anything but an array of strings (malformed JSON, over 16 KiB, a non-string element) is no
 * scope at all: false (fails closed). Cost: parses the scope, O(its length). */
bool api_in_scope(const char *clusters_json, const char *cluster);

#endif
