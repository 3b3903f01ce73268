/* railyard tokens list|create|revoke: the REST API's tokens (/api/v1/api-tokens, for unscoped
 * admins). A token's secret is printed once, when it is made: the controller keeps only its
 * hash. */
#include "client/rc.h"
#include "common/util/util.h"

#include <stdlib.h>
#include <string.h>

enum { OPT_NAME = 900, OPT_ROLE, OPT_CLUSTERS, OPT_TTL, OPT_TTL_MS };

/* Longest --ttl-ms the API takes: ten years. */
#define TTL_MAX_MS (3650LL * 86400000)

/* "active", "expired" or "revoked" now. */
static const char *token_state(const json_t *t)
{
	long long exp = JINT(t, "expires_at_ms");

	if (JINT(t, "revoked_at_ms"))
		return "revoked";
	if (exp && util_now_unix_ms() >= exp)
		return "expired";
	return "active";
}

/* "all", or the cluster names joined by commas, into buf. */
static void scope_text(const json_t *t, char *buf, size_t len)
{
	const json_t *cl = json_object_get(t, "clusters"), *c;
	size_t i, n = 0;

	if (!json_is_array(cl)) {
		snprintf(buf, len, "all");
		return;
	}
	buf[0] = '\0';
	json_array_foreach(cl, i, c)
	{
		if (n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "," : "",
					      json_is_string(c) ? json_string_value(c) : "?");
	}
}

static int cmd_list(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	json_t *items = NULL, *t;
	size_t i;
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, (const struct option[]){{0}})) != -1)
		return rc_usage(cmd, c);
	if ((r = rc_positionals(cmd, argc, argv, 0, false)) != 0 ||
	    (r = rc_api_list(rc, "/api/v1/api-tokens", &items)) != 0)
		return r;
	if (rc->json) {
		r = rc_print_list(items);
		json_decref(items);
		return r;
	}
	printf("%-16s %-20s %-10s %-7s %-20s %-20s %s\n", "ID", "NAME", "ROLE", "STATE", "CLUSTERS",
	       "EXPIRES", "LAST USED");
	json_array_foreach(items, i, t)
	{
		char expires[32], used[32], scope[256];

		rc_format_time(JINT(t, "expires_at_ms"), expires, sizeof(expires));
		rc_format_time(JINT(t, "last_used_at_ms"), used, sizeof(used));
		scope_text(t, scope, sizeof(scope));
		util_fprintf_safe(stdout, "%-16s %-20s %-10s %-7s %-20s %-20s %s\n",
				  rc_str(t, "id", "?"), rc_str(t, "name", "?"),
				  rc_str(t, "role", "?"), token_state(t), scope,
				  JINT(t, "expires_at_ms") ? expires : "never", used);
	}
	json_decref(items);
	return 0;
}

/* "a,b" into a JSON array of names; NULL (said) for an empty name. */
static json_t *cluster_list(const char *list)
{
	json_t *arr = json_array();
	const char *p = list;

	while (arr) {
		size_t n = strcspn(p, ",");

		if (!n) {
			rc_bad("--clusters (an empty cluster name)", list);
			json_decref(arr);
			return NULL;
		}
		json_array_append_new(arr, json_stringn(p, n));
		if (!p[n])
			break;
		p += n + 1;
	}
	return arr;
}

static int cmd_create(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"name", required_argument, NULL, OPT_NAME},
		{"role", required_argument, NULL, OPT_ROLE},
		{"clusters", required_argument, NULL, OPT_CLUSTERS},
		{"ttl", required_argument, NULL, OPT_TTL},
		{"ttl-ms", required_argument, NULL,
		 OPT_TTL_MS}, /* the old spelling, for a release */
		{0},
	};
	const char *name = NULL, *role = NULL, *clusters = NULL;
	json_t *body = NULL, *doc = NULL, *cl = NULL;
	int64_t ttl = 0;
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, opts)) != -1) {
		switch (c) {
		case OPT_NAME:
			name = optarg;
			break;
		case OPT_ROLE:
			role = optarg;
			break;
		case OPT_CLUSTERS:
			clusters = optarg;
			break;
		case OPT_TTL:
			if ((r = rc_parse_duration("--ttl", optarg, 1, TTL_MAX_MS, &ttl)) != 0)
				return r;
			break;
		case OPT_TTL_MS:
			if ((r = rc_parse_int("--ttl-ms", optarg, 1, TTL_MAX_MS, &ttl)) != 0)
				return r;
			break;
		default:
			return rc_usage(cmd, c);
		}
	}
	if ((r = rc_positionals(cmd, argc, argv, 0, false)) != 0)
		return r;
	if (!name || !role)
		return rc_bad("token create", "(--name and --role are required)");
	if (clusters && !(cl = cluster_list(clusters)))
		return RC_USAGE;
	body = json_pack("{s:s, s:s}", "name", name, "role", role);
	if (!body) {
		json_decref(cl);
		return RC_FAILED;
	}
	if (cl)
		json_object_set_new(body, "clusters", cl);
	if (ttl)
		json_object_set_new(body, "ttl_ms", json_integer(ttl));
	if ((r = rc_api(rc, "POST", "/api/v1/api-tokens", body, &doc)) != 0)
		goto out;
	if (rc->json)
		r = rc_print_json(stdout, doc);
	else {
		/* One line per call: util_fprintf_safe() escapes a newline inside. */
		util_fprintf_safe(stdout, "token: %s\n", rc_str(doc, "token", "?"));
		util_fprintf_safe(stdout, "id: %s\n", rc_str(doc, "id", "?"));
		util_fprintf_safe(stdout, "name: %s\n", rc_str(doc, "name", "?"));
		util_fprintf_safe(stdout, "role: %s\n", rc_str(doc, "role", "?"));
		util_fprintf_safe(stdout, "clusters: %s\n", clusters ? clusters : "all");
	}
	fflush(stdout);
	util_fprintf_safe(stderr,
			  RC_PROG ": this token is shown only once; store it now. It cannot be "
				  "recovered, only revoked (" RC_PROG " token revoke %s).\n",
			  rc_str(doc, "id", "?"));
out:
	if (doc && JSTR(doc, "token"))
		explicit_bzero((char *)JSTR(doc, "token"), strlen(JSTR(doc, "token")));
	json_decref(body);
	json_decref(doc);
	return r;
}

static int cmd_revoke(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	json_t *doc = NULL;
	char path[512], *e;
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, (const struct option[]){{0}})) != -1)
		return rc_usage(cmd, c);
	if ((r = rc_positionals(cmd, argc, argv, 1, false)) != 0)
		return r;
	if (!(e = httpc_escape(argv[optind])) ||
	    (size_t)snprintf(path, sizeof(path), "/api/v1/api-tokens/%s", e) >= sizeof(path)) {
		free(e);
		return rc_bad("token id", argv[optind]);
	}
	free(e);
	if ((r = rc_api(rc, "DELETE", path, NULL, &doc)) != 0)
		return r;
	if (rc->json)
		r = rc_print_json(stdout, doc);
	else
		util_fprintf_safe(stdout, "revoked API token %s\n", rc_str(doc, "id", "?"));
	json_decref(doc);
	return r;
}

#define CREATE_SYNOPSIS                                                                            \
	"--name N --role admin|integrator|operator|viewer [--clusters a,b] [--ttl 30d]"
#define CREATE_HELP                                                                                \
	"make an API token (shown once; no --clusters: every cluster; no --ttl: never expires)"

const struct rc_command rc_tokens_commands[] = {
	{"token create", CREATE_SYNOPSIS, CREATE_HELP, cmd_create},
	{"token list", "", "list the REST API's tokens (never their secrets)", cmd_list},
	{"token revoke", "ID|NAME", "revoke an API token", cmd_revoke},
	{"tokens", "", "list the REST API's tokens (= token list)", cmd_list},
	{0},
};

/* The old spellings, kept working. */
const struct rc_command rc_alias_commands[] = {
	{"tokens list", "", "list the REST API's tokens", cmd_list},
	{"tokens create", CREATE_SYNOPSIS, CREATE_HELP, cmd_create},
	{"tokens revoke", "ID|NAME", "revoke an API token", cmd_revoke},
	{0},
};
