/* railyard wlm set / show / unset / actions: a cluster's workload-manager binding (Slurm, or the
 * site's command hooks) and the ledger of the drains and resumes the controller did there
 * (docs/operations.md, "Maintenance with Slurm"). The controller validates the binding; this
 * only builds the document. */
#include "client/rc.h"
#include "common/util/util.h"

#include <stdlib.h>
#include <string.h>

enum {
	OPT_CLUSTER = 900,
	OPT_SLURM,
	OPT_SLURM_CONF,
	OPT_SLURM_BIN,
	OPT_MAP,
	OPT_TIMEOUT,
	OPT_FILE,
	OPT_STATE,
};

static int cluster_path(char *buf, size_t len, const char *cluster, const char *suffix)
{
	if (!cluster)
		return rc_bad("--cluster", "(required)");
	return rc_id_path(buf, len, "/api/v1/clusters/", cluster, suffix);
}

static void print_binding(const json_t *b)
{
	const json_t *m = json_object_get(b, "node_map"), *h = json_object_get(b, "hooks"), *v;
	const char *k;

	util_fprintf_safe(stdout, "cluster: %s\n", rc_str(b, "cluster", "?"));
	util_fprintf_safe(stdout, "kind: %s\n", rc_str(b, "kind", "?"));
	if (json_object_get(b, "slurm")) {
		util_fprintf_safe(stdout, "slurm bin_dir: %s\n",
				  rc_str(json_object_get(b, "slurm"), "bin_dir", "-"));
		util_fprintf_safe(stdout, "slurm conf: %s\n",
				  rc_str(json_object_get(b, "slurm"), "conf", "(default)"));
	}
	json_object_foreach((json_t *)h, k, v)
	{
		char *a = json_dumps(v, JSON_COMPACT);

		util_fprintf_safe(stdout, "hook %s: %s\n", k, a ? a : "?");
		free(a);
	}
	printf("timeout: %llds\n", JINT(b, "timeout_s"));
	printf("node map: %zu entr%s\n", json_object_size(m),
	       json_object_size(m) == 1 ? "y" : "ies");
	json_object_foreach((json_t *)m, k, v)
		util_fprintf_safe(stdout, "  %s = %s\n", k, json_string_value(v));
}

static int cmd_set(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"cluster", required_argument, NULL, OPT_CLUSTER},
		{"slurm", no_argument, NULL, OPT_SLURM},
		{"slurm-conf", required_argument, NULL, OPT_SLURM_CONF},
		{"slurm-bin-dir", required_argument, NULL, OPT_SLURM_BIN},
		{"map", required_argument, NULL, OPT_MAP},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"file", required_argument, NULL, OPT_FILE},
		{0},
	};
	const char *cluster = NULL, *conf = NULL, *bin = NULL, *file = NULL;
	json_t *map = json_object(), *body = NULL, *doc = NULL;
	bool slurm = false;
	int64_t timeout_ms = -1;
	char path[512], *text = NULL;
	int c, r = 0;

	while (r == 0 && (c = rc_getopt(rc, argc, argv, opts)) != -1) {
		switch (c) {
		case OPT_CLUSTER:
			cluster = optarg;
			break;
		case OPT_SLURM:
			slurm = true;
			break;
		case OPT_SLURM_CONF:
			conf = optarg;
			break;
		case OPT_SLURM_BIN:
			bin = optarg;
			break;
		case OPT_FILE:
			file = optarg;
			break;
		case OPT_TIMEOUT:
			r = rc_parse_duration("--timeout", optarg, 1000, 300000, &timeout_ms);
			break;
		case OPT_MAP: {
			char *eq = strchr(optarg, '=');

			if (!eq || eq == optarg || !eq[1]) {
				r = rc_bad("--map (HOST=NAME)", optarg);
				break;
			}
			*eq = '\0';
			json_object_set_new(map, optarg, json_string(eq + 1));
			*eq = '=';
			break;
		}
		default:
			r = rc_usage(cmd, c);
		}
	}
	if (r == 0)
		r = rc_positionals(cmd, argc, argv, 0, false);
	if (r == 0 && slurm == !!file)
		r = rc_bad("wlm set", "(give --slurm, or --file with a binding document)");
	if (r == 0 && file && (conf || bin))
		r = rc_bad("wlm set", "(--slurm-conf and --slurm-bin-dir go with --slurm)");
	if (r == 0)
		r = cluster_path(path, sizeof(path), cluster, "/wlm");
	if (r == 0 && file) {
		json_error_t je;

		r = rc_read_file("binding", file, 1024 * 1024, &text);
		if (r == 0 && !(body = json_loads(text, 0, &je))) {
			fprintf(stderr, RC_PROG ": %s:%d:%d: %s\n", file, je.line, je.column,
				je.text);
			r = RC_USAGE;
		}
	} else if (r == 0) {
		body = json_pack("{s:s, s:{s:s?, s:s?}}", "kind", "slurm", "slurm", "conf", conf,
				 "bin_dir", bin);
	}
	if (r == 0 && json_object_size(map) > 0)
		json_object_set(body, "node_map", map);
	if (r == 0 && timeout_ms > 0)
		json_object_set_new(body, "timeout_s", json_integer((timeout_ms + 999) / 1000));
	if (r == 0)
		r = rc_api(rc, "PUT", path, body, &doc);
	if (r == 0)
		r = rc->json ? rc_print_json(stdout, doc) : (print_binding(doc), 0);
	free(text);
	json_decref(map);
	json_decref(body);
	json_decref(doc);
	return r;
}

static int cmd_show(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"cluster", required_argument, NULL, OPT_CLUSTER},
		{0},
	};
	const char *cluster = NULL;
	bool unset = strcmp(cmd->name, "wlm unset") == 0;
	json_t *doc = NULL;
	char path[512];
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, opts)) != -1) {
		if (c == OPT_CLUSTER)
			cluster = optarg;
		else
			return rc_usage(cmd, c);
	}
	if ((r = rc_positionals(cmd, argc, argv, 0, false)) != 0 ||
	    (r = cluster_path(path, sizeof(path), cluster, "/wlm")) != 0)
		return r;
	r = rc_api(rc, unset ? "DELETE" : "GET", path, NULL, &doc);
	if (r == 0 && rc->json)
		r = rc_print_json(stdout, doc);
	else if (r == 0 && unset)
		util_fprintf_safe(stdout, "cluster %s: unbound\n", cluster);
	else if (r == 0)
		print_binding(doc);
	json_decref(doc);
	return r;
}

static int cmd_actions(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"cluster", required_argument, NULL, OPT_CLUSTER},
		{"state", required_argument, NULL, OPT_STATE},
		{0},
	};
	const char *cluster = NULL, *state = NULL;
	json_t *items = NULL, *o;
	char path[600], *es = NULL;
	size_t i;
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, opts)) != -1) {
		if (c == OPT_CLUSTER)
			cluster = optarg;
		else if (c == OPT_STATE)
			state = optarg;
		else
			return rc_usage(cmd, c);
	}
	if ((r = rc_positionals(cmd, argc, argv, 0, false)) != 0 ||
	    (r = cluster_path(path, sizeof(path), cluster, "/wlm/actions")) != 0)
		return r;
	if (state) {
		es = httpc_escape(state);
		if (!es || strlen(path) + strlen(es) + 8 >= sizeof(path)) {
			free(es);
			return rc_bad("--state", state);
		}
		strcat(path, "?state=");
		strcat(path, es);
		free(es);
	}
	if ((r = rc_api_list(rc, path, &items)) != 0)
		return r;
	if (rc->json) {
		r = rc_print_list(items);
		json_decref(items);
		return r;
	}
	printf("%-6s %-20s %-14s %-7s %-9s %-24s %s\n", "ID", "WHEN", "NODE", "ACTION", "STATE",
	       "SOURCE", "REASON / RESULT");
	json_array_foreach(items, i, o)
	{
		char when[64], src[160];

		rc_format_time(JINT(o, "created_at"), when, sizeof(when));
		snprintf(src, sizeof(src), "%s %s", rc_str(o, "source", "?"),
			 rc_str(o, "source_id", "?"));
		/* Reasons and results come from the WLM and the nodes: printed escaped. */
		util_fprintf_safe(stdout, "%-6lld %-20s %-14s %-7s %-9s %-24s %s%s%s\n",
				  JINT(o, "id"), when, rc_str(o, "node", "?"),
				  rc_str(o, "action", "?"), rc_str(o, "state", "?"), src,
				  rc_str(o, "reason", ""), JSTR(o, "result") ? " -> " : "",
				  rc_str(o, "result", ""));
	}
	json_decref(items);
	return 0;
}

const struct rc_command rc_wlm_commands[] = {
	{"wlm set",
	 "--cluster C (--slurm [--slurm-conf PATH] [--slurm-bin-dir DIR] | --file BINDING.json) "
	 "[--map HOST=NAME]... [--timeout 30s]",
	 "bind a cluster to Slurm or to command hooks (drain bad nodes, resume ours)", cmd_set},
	{"wlm show", "--cluster C", "show a cluster's workload-manager binding", cmd_show},
	{"wlm unset", "--cluster C", "remove a cluster's workload-manager binding", cmd_show},
	{"wlm actions", "--cluster C [--state pending|done|failed|not_ours]",
	 "the drains and resumes the controller did or means to do, newest first", cmd_actions},
	{0},
};
