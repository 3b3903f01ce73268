/* railyard node show|revoke, audit, enrollment-token list|revoke, playbook check: the
 * controller's administration over the REST API (what railyard-controller once did on its own
 * host, now the same over api.sock with --local). */
#include "client/rc.h"
#include "common/util/util.h"

#include <stdlib.h>
#include <string.h>

enum { OPT_LIMIT = 900, OPT_NODE, OPT_CLUSTER };

/* A document's scalar fields, "key: value" a line (strings escaped: they come from nodes). */
static void print_fields(const json_t *doc)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)doc, k, v)
	{
		char when[64];

		if (json_is_string(v))
			util_fprintf_safe(stdout, "%s: %s\n", k, json_string_value(v));
		else if (json_is_integer(v) && strstr(k, "_ms") &&
			 strcmp(k + strlen(k) - 3, "_ms") == 0 && strstr(k, "_at")) {
			rc_format_time(json_integer_value(v), when, sizeof(when));
			printf("%s: %s\n", k, when);
		} else if (json_is_integer(v))
			printf("%s: %lld\n", k, (long long)json_integer_value(v));
		else if (json_is_boolean(v))
			printf("%s: %s\n", k, json_is_true(v) ? "true" : "false");
	}
}

/* Commands that take no option of their own and one positional: 0 or the exit code. */
static int one_arg(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	int c;

	while ((c = rc_getopt(rc, argc, argv, (const struct option[]){{0}})) != -1)
		return rc_usage(cmd, c);
	return rc_positionals(cmd, argc, argv, 1, false);
}

static int cmd_node_show(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	json_t *doc = NULL;
	char path[512];
	int r;

	if ((r = one_arg(rc, cmd, argc, argv)) != 0 ||
	    (r = rc_id_path(path, sizeof(path), "/api/v1/nodes/", argv[optind], "")) != 0 ||
	    (r = rc_api(rc, "GET", path, NULL, &doc)) != 0)
		return r;
	if (rc->json) {
		r = rc_print_json(stdout, doc);
	} else {
		const json_t *health = json_object_get(doc, "health"), *why;
		size_t i;

		/* Health first: is it healthy, and if not, why (reasons come from the node and the
		 * verdict: printed escaped). */
		util_fprintf_safe(stdout, "health: %s\n", rc_str(health, "state", "unknown"));
		json_array_foreach(json_object_get(health, "reasons"), i, why) util_fprintf_safe(
			stdout, "  - %s\n", json_string_value(why) ? json_string_value(why) : "?");
		/* Its state in the cluster's workload manager, when the cluster is bound (the
		 * reason comes from the WLM: escaped). */
		if ((why = json_object_get(doc, "wlm")))
			util_fprintf_safe(stdout, "wlm: %s %s%s%s%s\n", rc_str(why, "name", "?"),
					  rc_str(why, "state", "?"),
					  json_is_true(json_object_get(why, "drained"))
						  ? json_is_true(json_object_get(why, "ours"))
							    ? " (drained by railyard)"
							    : " (drained by someone else)"
						  : "",
					  *rc_str(why, "reason", "") ? ": " : "",
					  rc_str(why, "reason", ""));
		print_fields(doc);
	}
	json_decref(doc);
	return r;
}

int rc_post_id(struct rc *rc, const struct rc_command *cmd, int argc, char **argv,
	       const char *prefix, const char *suffix, const char *done)
{
	json_t *doc = NULL;
	char path[512];
	int r;

	if ((r = one_arg(rc, cmd, argc, argv)) != 0 ||
	    (r = rc_id_path(path, sizeof(path), prefix, argv[optind], suffix)) != 0 ||
	    (r = rc_api(rc, "POST", path, NULL, &doc)) != 0)
		return r;
	if (rc->json)
		r = doc ? rc_print_json(stdout, doc) : 0;
	else
		util_fprintf_safe(stdout, "%s %s\n", done, rc_str(doc, "id", argv[optind]));
	json_decref(doc);
	return r;
}

static int cmd_node_revoke(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	return rc_post_id(rc, cmd, argc, argv, "/api/v1/nodes/", "/revoke", "revoked node");
}

static int cmd_audit(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {{"limit", required_argument, NULL, OPT_LIMIT}, {0}};
	json_t *items = NULL, *e;
	int64_t limit = 50;
	size_t i;
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, opts)) != -1) {
		if (c != OPT_LIMIT)
			return rc_usage(cmd, c);
		if ((r = rc_parse_int("--limit", optarg, 1, 10000, &limit)) != 0)
			return r;
	}
	if ((r = rc_positionals(cmd, argc, argv, 0, false)) != 0 ||
	    (r = rc_api_list(rc, "/api/v1/audit", &items)) != 0)
		return r;
	/* Newest first: the first --limit entries. */
	while (json_array_size(items) > (size_t)limit)
		json_array_remove(items, json_array_size(items) - 1);
	if (rc->json) {
		r = rc_print_list(items);
	} else {
		printf("%-20s %-14s %-18s %-16s %-8s %s\n", "WHEN", "ACTOR", "ACTION", "TARGET",
		       "OUTCOME", "DETAIL");
		json_array_foreach(items, i, e)
		{
			char when[64];

			rc_format_time(JINT(e, "at_ms"), when, sizeof(when));
			util_fprintf_safe(stdout, "%-20s %-14s %-18s %-16s %-8s %s\n", when,
					  rc_str(e, "actor", "?"), rc_str(e, "action", "?"),
					  rc_str(e, "target", "-"), rc_str(e, "outcome", "?"),
					  rc_str(e, "detail", ""));
		}
	}
	json_decref(items);
	return r;
}

static int cmd_etoken_list(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	json_t *items = NULL, *t;
	size_t i;
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, (const struct option[]){{0}})) != -1)
		return rc_usage(cmd, c);
	if ((r = rc_positionals(cmd, argc, argv, 0, false)) != 0 ||
	    (r = rc_api_list(rc, "/api/v1/enrollment-tokens", &items)) != 0)
		return r;
	if (rc->json) {
		r = rc_print_list(items);
	} else {
		printf("%-24s %-12s %-8s %-9s %-20s %s\n", "ID", "CLUSTER", "STATE", "USES LEFT",
		       "CREATED", "EXPIRES");
		json_array_foreach(items, i, t)
		{
			char made[64], exp[64];

			rc_format_time(JINT(t, "created_at_ms"), made, sizeof(made));
			rc_format_time(JINT(t, "expires_at_ms"), exp, sizeof(exp));
			util_fprintf_safe(stdout, "%-24s %-12s %-8s %4lld/%-4lld %-20s %s\n",
					  rc_str(t, "id", "?"), rc_str(t, "cluster", "?"),
					  rc_str(t, "state", "?"), JINT(t, "uses_left"),
					  JINT(t, "uses_total"), made, exp);
		}
	}
	json_decref(items);
	return r;
}

static int cmd_etoken_revoke(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	json_t *doc = NULL;
	char path[512];
	int r;

	if ((r = one_arg(rc, cmd, argc, argv)) != 0 ||
	    (r = rc_id_path(path, sizeof(path), "/api/v1/enrollment-tokens/", argv[optind], "")) !=
		    0 ||
	    (r = rc_api(rc, "DELETE", path, NULL, &doc)) != 0)
		return r;
	if (rc->json && doc)
		r = rc_print_json(stdout, doc);
	else if (!rc->json)
		util_fprintf_safe(stdout, "revoked enrollment token %s\n", argv[optind]);
	json_decref(doc);
	return r;
}

static int cmd_playbook_check(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"node", required_argument, NULL, OPT_NODE},
		{"cluster", required_argument, NULL, OPT_CLUSTER},
		{0},
	};
	const char *node = NULL, *cluster = NULL;
	json_t *body = NULL, *doc = NULL, *s, *plan;
	char *text = NULL;
	size_t i;
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, opts)) != -1) {
		if (c == OPT_NODE)
			node = optarg;
		else if (c == OPT_CLUSTER)
			cluster = optarg;
		else
			return rc_usage(cmd, c);
	}
	if ((r = rc_positionals(cmd, argc, argv, 1, false)) != 0 ||
	    (r = rc_read_file("playbook", argv[optind], RC_PLAYBOOK_MAX, &text)) != 0)
		return r;
	rc->playbook = argv[optind];
	body = json_pack("{s:s, s:s*, s:s*}", "playbook", text, "node", node, "cluster", cluster);
	r = body ? rc_api(rc, "POST", "/api/v1/playbooks/check", body, &doc) : RC_FAILED;
	if (r == 0 && rc->json) {
		r = rc_print_json(stdout, doc);
	} else if (r == 0) {
		util_fprintf_safe(stdout, "%s: valid: %s %s (sha256 %s), %zu steps\n", argv[optind],
				  rc_str(doc, "name", "?"), rc_str(doc, "version", "?"),
				  rc_str(doc, "sha256", "?"),
				  json_array_size(json_object_get(doc, "steps")));
		if ((plan = json_object_get(doc, "plan"))) {
			util_fprintf_safe(stdout, "plan for %s:\n", rc_str(plan, "hostname", "?"));
			json_array_foreach(json_object_get(plan, "steps"), i, s)
				util_fprintf_safe(stdout, "  %-24s %s\n", rc_str(s, "name", "?"),
						  rc_str(s, "type", "?"));
		}
	}
	json_decref(body);
	json_decref(doc);
	free(text);
	return r;
}

const struct rc_command rc_admin_commands[] = {
	{"node show", "ID|HOST", "show one node (id or host name)", cmd_node_show},
	{"node revoke", "ID|HOST",
	 "revoke a node: its certificate is refused and a connected agent is cut off",
	 cmd_node_revoke},
	{"audit", "[--limit 50]", "the audit log, newest first (admins)", cmd_audit},
	{"enrollment-token list", "", "list enrollment tokens (never their secrets)",
	 cmd_etoken_list},
	{"enrollment-token revoke", "ID", "revoke an enrollment token", cmd_etoken_revoke},
	{"playbook check", "FILE [--node ID|HOST] [--cluster C]",
	 "check a playbook (problems as FILE:LINE:COL); with --node, render it for that node",
	 cmd_playbook_check},
	{0},
};
