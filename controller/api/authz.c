/* The REST API's authorization: the role x permission matrix, as ONE table (docs/rest.md
 * mirrors it; tests/unit/test_auth.c walks it), and the cluster scope of a token. */
#include "controller/api/authz.h"
#include "controller/scope.h"

#include "common/util/error.h"
#include "common/util/util.h"

#include <jansson.h>
#include <string.h>

/* Longest scope document read (the store keeps at most 64 names of 64 bytes). */

/* clang-format off */
static const struct api_authz_row authz_table[API_ROLE_COUNT] = {
	/* role, name                                      READ   OPERATE  CONFIGURE  ADMIN */
	[API_ADMIN]      = {API_ADMIN,      "admin",      {true,  true,    true,      true}},
	[API_INTEGRATOR] = {API_INTEGRATOR, "integrator", {true,  true,    true,      false}},
	[API_OPERATOR]   = {API_OPERATOR,   "operator",   {true,  true,    false,     false}},
	[API_VIEWER]     = {API_VIEWER,     "viewer",     {true,  false,   false,     false}},
};
/* clang-format on */

static const char *const perm_names[API_PERM_COUNT] = {
	[API_PERM_READ] = "read",
	[API_PERM_OPERATE] = "operate",
	[API_PERM_CONFIGURE] = "configure",
	[API_PERM_ADMIN] = "admin",
};

_Static_assert(API_VIEWER + 1 == API_ROLE_COUNT, "API_ROLE_COUNT counts the roles");
_Static_assert(API_PERM_ADMIN + 1 == API_PERM_COUNT, "API_PERM_COUNT counts the permissions");

const struct api_authz_row *api_authz_table(size_t *ret_n)
{
	if (ret_n)
		*ret_n = API_ROLE_COUNT;
	return authz_table;
}

int api_role_parse(const char *name, enum api_role *ret)
{
	for (size_t i = 0; name && i < API_ROLE_COUNT; i++) {
		if (strcmp(name, authz_table[i].name) == 0) {
			*ret = authz_table[i].role;
			return 0;
		}
	}
	return -RY_E_INVALID;
}

/* Enum values are compared as unsigned so that a negative value is out of range too. */
const char *api_role_name(enum api_role role)
{
	return (unsigned)role < API_ROLE_COUNT ? authz_table[role].name : NULL;
}

const char *api_perm_name(enum api_perm perm)
{
	return (unsigned)perm < API_PERM_COUNT ? perm_names[perm] : NULL;
}

bool api_allowed(enum api_role role, enum api_perm perm)
{
	if ((unsigned)role >= API_ROLE_COUNT || (unsigned)perm >= API_PERM_COUNT)
		return false;
	return authz_table[role].allowed[perm];
}

bool api_in_scope(const char *clusters_json, const char *cluster)
{
	return ctl_scope_contains(clusters_json, cluster);
}
