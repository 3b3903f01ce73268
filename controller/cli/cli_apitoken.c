/* railyard-controller api-token create: the REST API's first admin token, made on the
 * controller's host. It goes through the serving controller (one writer); with none serving it
 * writes the database itself (the first admin token is made before the first serve). Listing
 * and revoking are `railyard token list|revoke`. A token is printed once, when it is made; the
 * store keeps only a hash of its secret. */
#include "controller/api/authz.h"
#include "controller/cli/cli.h"
#include "common/httpc/httpc.h"
#include "controller/service.h"
#include "controller/state.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define PROG "railyard-controller"
/* Longest --ttl: ten years (a token that should live longer is one that never expires). */
#define API_TTL_MAX_MS (3650LL * 86400 * 1000)
/* Who the audit log names for these commands with no controller serving: the host's
 * administrator (through the serving controller: "local:uid N"). */
#define ACTOR "admin"

#define JSTR(o, k) json_string_value(json_object_get((o), (k)))

enum { OPT_STATE_DIR = 900, OPT_JSON, OPT_NAME, OPT_ROLE, OPT_CLUSTERS, OPT_TTL };

/* "a,b" into a JSON array (compact text, caller frees *ret): each name valid, none twice, at
 * most STORE_API_CLUSTERS_MAX. 0, or 2 with the reason on stderr. */
static int parse_clusters(const char *list, char **ret)
{
	json_t *arr = json_array();
	char *copy = strdup(list), *save = NULL, *name;
	const char *p;
	int rc = 2;
	size_t i;

	if (!arr || !copy) {
		log_error("out of memory");
		rc = 1;
		goto out;
	}
	/* strtok_r would skip the empty name of "a,,b" or "a,": look for them first. */
	for (p = list; *p; p++)
		if (*p == ',' && (p == list || p[1] == ',' || p[1] == '\0'))
			break;
	if (!*list || *p) {
		cli_bad("--clusters (an empty cluster name)", list);
		goto out;
	}
	for (name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		if (!ctl_valid_cluster_name(name)) {
			cli_bad("cluster name in --clusters (1-64 letters, digits, '.', '_' "
				"or '-', starting with a letter or digit)",
				name);
			goto out;
		}
		for (i = 0; i < json_array_size(arr); i++) {
			if (strcmp(json_string_value(json_array_get(arr, i)), name) == 0) {
				cli_bad("--clusters (a cluster named twice)", name);
				goto out;
			}
		}
		if (json_array_size(arr) == STORE_API_CLUSTERS_MAX) {
			fprintf(stderr, PROG ": invalid --clusters: more than %d clusters\n",
				STORE_API_CLUSTERS_MAX);
			goto out;
		}
		json_array_append_new(arr, json_string(name));
	}
	*ret = json_dumps(arr, JSON_COMPACT);
	rc = *ret ? 0 : 1;
out:
	free(copy);
	json_decref(arr);
	return rc;
}

/* "active", "expired" or "revoked" at now_ms. */
static const char *token_state(const struct store_api_token *t, int64_t now_ms)
{
	if (t->revoked_at_ms)
		return "revoked";
	if (t->expires_at_ms && now_ms >= t->expires_at_ms)
		return "expired";
	return "active";
}

static json_t *ms_or_null(int64_t ms)
{
	return ms ? json_integer(ms) : json_null();
}

/* A token as JSON (never its secret; it has none to give). */
static json_t *token_json(const struct store_api_token *t, int64_t now_ms)
{
	json_t *clusters = t->clusters_json ? json_loads(t->clusters_json, 0, NULL) : NULL;

	return json_pack("{s:s, s:s, s:s, s:o, s:s, s:s, s:I, s:o, s:o, s:o}", "id", t->id, "name",
			 t->name, "role", t->role, "clusters", clusters ? clusters : json_null(),
			 "state", token_state(t, now_ms), "created_by", t->created_by,
			 "created_at_ms", (json_int_t)t->created_at_ms, "expires_at_ms",
			 ms_or_null(t->expires_at_ms), "revoked_at_ms",
			 ms_or_null(t->revoked_at_ms), "last_used_at_ms",
			 ms_or_null(t->last_used_at_ms));
}

/* The scope for a person: "all", or the names joined by commas (caller frees). */
static char *scope_text(const struct store_api_token *t)
{
	json_t *arr = t->clusters_json ? json_loads(t->clusters_json, 0, NULL) : NULL;
	size_t i, n = json_array_size(arr), len = 0;
	char *out;

	if (!t->clusters_json)
		return strdup("all");
	for (i = 0; i < n; i++)
		len += strlen(json_string_value(json_array_get(arr, i))) + 1;
	out = calloc(1, len + 1);
	for (i = 0; out && i < n; i++) {
		if (i)
			strcat(out, ",");
		strcat(out, json_string_value(json_array_get(arr, i)));
	}
	json_decref(arr);
	return out;
}

static void print_time(const char *label, int64_t ms, const char *unset)
{
	char when[64];

	cli_format_time(ms, when, sizeof(when));
	printf("%s: %s\n", label, ms ? when : unset);
}

/* POST /api/v1/api-tokens: 0 with *ret_token and *ret_id (caller frees), or negative with the
 * API's reason in err: -RY_E_EXISTS for a name taken, -RY_E_INVALID for what it refused. */
static int create_api(struct httpc *api, const char *name, const char *role, const char *clusters,
		      int64_t ttl_ms, char **ret_token, char **ret_id, struct ctl_error *err)
{
	json_t *b = json_pack("{s:s, s:s}", "name", name, "role", role), *doc = NULL;
	char *token = NULL, *id = NULL;
	int r = -ENOMEM;

	if (!b || (clusters && json_object_set_new(b, "clusters", json_loads(clusters, 0, NULL))) ||
	    (ttl_ms && json_object_set_new(b, "ttl_ms", json_integer(ttl_ms)))) {
		r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
		goto out;
	}
	r = cli_api_call(api, "POST", "/api/v1/api-tokens", b, NULL, &doc, err);
	if (r < 0) {
		if (strcmp(err->code, CTL_ERR_CONFLICT) == 0)
			r = -RY_E_EXISTS;
		else if (strcmp(err->code, CTL_ERR_INVALID) == 0)
			r = -RY_E_INVALID;
		goto out;
	}
	if (!JSTR(doc, "token") || !JSTR(doc, "id") || !(token = strdup(JSTR(doc, "token"))) ||
	    !(id = strdup(JSTR(doc, "id")))) {
		r = ctl_error_set(err, -EPROTO, CTL_ERR_INTERNAL, NULL,
				  "the controller's reply has no token");
		goto out;
	}
	*ret_token = token;
	*ret_id = id;
	token = id = NULL;
	r = 0;
out:
	if (token)
		explicit_bzero(token, strlen(token));
	if (JSTR(doc, "token"))
		explicit_bzero((char *)JSTR(doc, "token"), strlen(JSTR(doc, "token")));
	free(token);
	free(id);
	json_decref(b);
	json_decref(doc);
	return r;
}

static int cmd_create(const struct cli_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"name", required_argument, NULL, OPT_NAME},
		{"role", required_argument, NULL, OPT_ROLE},
		{"clusters", required_argument, NULL, OPT_CLUSTERS},
		{"ttl", required_argument, NULL, OPT_TTL},
		{"state-dir", required_argument, NULL, OPT_STATE_DIR},
		{"json", no_argument, NULL, OPT_JSON},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	const char *state_dir = CTL_DEFAULT_STATE_DIR, *name = NULL, *role_arg = NULL;
	const char *clusters_arg = NULL;
	char *clusters = NULL, *token = NULL, *id = NULL, *scope = NULL;
	struct store_api_token *t = NULL;
	int64_t ttl_ms = 0, now = util_now_unix_ms();
	struct ctl_state *st = NULL;
	struct httpc *api = NULL;
	struct ctl_error err;
	enum api_role role;
	bool json = false;
	int c, r, rc = 1;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_NAME:
			name = optarg;
			break;
		case OPT_ROLE:
			role_arg = optarg;
			break;
		case OPT_CLUSTERS:
			clusters_arg = optarg;
			break;
		case OPT_TTL:
			if (util_parse_duration_ms(optarg, &ttl_ms) < 0 || ttl_ms <= 0 ||
			    ttl_ms > API_TTL_MAX_MS)
				return cli_bad("--ttl (a duration above 0 and up to 3650d)",
					       optarg);
			break;
		case OPT_STATE_DIR:
			state_dir = optarg;
			break;
		case OPT_JSON:
			json = true;
			break;
		case 'h':
			return cli_usage(cmd, stdout);
		default:
			return cli_usage(cmd, stderr);
		}
	}
	if ((r = cli_positionals(cmd, argc, argv, 0)) != 0)
		return r;
	if (!name)
		return cli_bad("--name", "(missing)");
	if (!store_api_name_ok(name))
		return cli_bad("--name (1-64 letters, digits, '.', '_' or '-'; not 16 hex digits)",
			       name);
	if (!role_arg)
		return cli_bad("--role", "(missing)");
	if (api_role_parse(role_arg, &role) < 0)
		return cli_bad("--role (admin, integrator, operator or viewer)", role_arg);
	if (clusters_arg && (r = parse_clusters(clusters_arg, &clusters)) != 0)
		return r;

	ctl_error_init(&err);
	/* Through the serving controller, else (none serves) in the database; either way the
	 * token is read back from the database to show it. */
	if (cli_api_open(state_dir, &api) < 0 || cli_open_state(state_dir, false, &st) < 0)
		goto out;
	if (api)
		r = create_api(api, name, api_role_name(role), clusters, ttl_ms, &token, &id, &err);
	else
		r = store_api_token_create(st->store, name, api_role_name(role), clusters, ttl_ms,
					   ACTOR, now, &token, &id);
	if (r == -RY_E_EXISTS) {
		log_error("api-token create: a token named '%s' exists already (revoke it first, "
			  "or choose another name)",
			  name);
		goto out;
	}
	if (r < 0) {
		log_error("api-token create: %s", api ? err.message : ry_strerror(r));
		rc = r == -RY_E_INVALID ? 2 : 1;
		goto out;
	}
	r = store_api_token_get(st->store, id, &t);
	if (r < 0) {
		/* Made, but not readable back: the token must still reach the user. */
		log_error("api-token create: reading the new token back: %s", ry_strerror(r));
		printf("token: %s\nid: %s\n", token, id);
		goto warn;
	}
	if (json) {
		json_t *o = token_json(t, now);

		json_object_set_new(o, "token", json_string(token));
		rc = cli_print_json(stdout, o);
		json_decref(o);
		if (rc)
			goto out;
	} else {
		scope = scope_text(t);
		printf("token: %s\nid: %s\nname: %s\nrole: %s\nclusters: %s\n", token, t->id,
		       t->name, t->role, scope ? scope : "?");
		print_time("expires", t->expires_at_ms, "never");
	}
warn:
	fflush(stdout);
	fprintf(stderr,
		PROG ": this token is shown only once; store it now. It cannot be recovered, "
		     "only revoked (" PROG " api-token revoke %s).\n",
		id);
	rc = 0;
out:
	if (token)
		explicit_bzero(token, strlen(token));
	free(token);
	free(id);
	free(scope);
	free(clusters);
	store_api_token_free(t);
	ctl_state_free(st);
	httpc_free(api);
	ctl_error_done(&err);
	return rc;
}

const struct cli_command cli_apitoken_commands[] = {
	{"api-token create",
	 "--name NAME --role admin|integrator|operator|viewer [--clusters A,B] [--ttl 30d]\n"
	 "        [--json] [--state-dir D]\n"
	 "  (no --clusters: every cluster; no --ttl: never expires)",
	 "make a REST API token (shown once)", cmd_create},
	{0},
};
