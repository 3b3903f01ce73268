/* railyard nodes and enrollment-token create: the cluster's nodes (every page of the listing),
 * and the one-time tokens with which new nodes enroll. */
#include "client/rc.h"
#include "common/util/util.h"

#include <stdlib.h>
#include <string.h>

enum { OPT_CLUSTER = 900, OPT_STATE, OPT_USES, OPT_TTL, OPT_TTL_MS, OPT_CONTROLLER };

/* "?k=v&k2=v2" of the options given (escaped), appended to path into buf. 0 or RC_USAGE. */
static int with_query(char *buf, size_t len, const char *path, const char *k1, const char *v1,
		      const char *k2, const char *v2)
{
	char *e1 = v1 ? httpc_escape(v1) : NULL, *e2 = v2 ? httpc_escape(v2) : NULL;
	size_t n = (size_t)snprintf(buf, len, "%s%s%s%s%s%s%s%s%s", path, v1 || v2 ? "?" : "",
				    e1 ? k1 : "", e1 ? "=" : "", e1 ? e1 : "", e1 && e2 ? "&" : "",
				    e2 ? k2 : "", e2 ? "=" : "", e2 ? e2 : "");

	free(e1);
	free(e2);
	if (n >= len || (v1 && !e1) || (v2 && !e2))
		return rc_bad("filter (too long)", v1 ? v1 : v2);
	return 0;
}

/* The table (docs/cli.md): HEALTH is the controller's word (healthy, failing, degraded,
 * unknown); SIGNOFF is only whether the newest sign-off still describes the node. */
static void print_nodes(const json_t *items)
{
	const json_t *o;
	size_t i;

	printf("%-16s %-14s %-10s %-8s %-9s %-20s %-8s %-8s %-15s %s\n", "NODE", "HOSTNAME",
	       "CLUSTER", "STATE", "HEALTH", "LAST SEEN", "AGENT", "SIGNOFF", "WLM", "FACTS");
	/* Host names, versions and facts come from the nodes: printed escaped. */
	json_array_foreach(items, i, o)
	{
		char when[64], wlm[64];
		const json_t *w = json_object_get(o, "wlm");

		rc_format_time(JINT(o, "last_seen_ms"), when, sizeof(when));
		/* WLM: the workload manager's state of the node, "+ours" when the drain is ours
		 * (railyard wlm actions says why); "-" when its cluster is not bound. */
		snprintf(wlm, sizeof(wlm), "%s%s", w ? rc_str(w, "state", "?") : "-",
			 json_is_true(json_object_get(w, "ours")) ? "+ours" : "");
		util_fprintf_safe(stdout, "%-16s %-14s %-10s %-8s %-9s %-20s %-8s %-8s %-15s %s\n",
				  rc_str(o, "id", "?"), rc_str(o, "hostname", "?"),
				  rc_str(o, "cluster", "?"), rc_str(o, "state", "?"),
				  rc_str(json_object_get(o, "health"), "state", "-"), when,
				  rc_str(o, "agent_version", "-"),
				  rc_str(json_object_get(o, "signoff"), "state", "-"), wlm,
				  rc_str(o, "summary", "-"));
	}
}

static int cmd_nodes(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"cluster", required_argument, NULL, OPT_CLUSTER},
		{"state", required_argument, NULL, OPT_STATE},
		{0},
	};
	const char *cluster = NULL, *state = NULL;
	json_t *items = NULL;
	char path[1024];
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
	    (r = with_query(path, sizeof(path), "/api/v1/nodes", "cluster", cluster, "state",
			    state)) != 0)
		return r;
	if ((r = rc_api_list(rc, path, &items)) != 0)
		return r;
	if (rc->json) {
		r = rc_print_list(items);
	} else {
		print_nodes(items);
	}
	json_decref(items);
	return r;
}

static int cmd_enroll_token(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"cluster", required_argument, NULL, OPT_CLUSTER},
		{"uses", required_argument, NULL, OPT_USES},
		{"ttl", required_argument, NULL, OPT_TTL},
		{"controller", required_argument, NULL, OPT_CONTROLLER},
		{"ttl-ms", required_argument, NULL,
		 OPT_TTL_MS}, /* the old spelling, for a release */
		{0},
	};
	json_t *body = NULL, *doc = NULL;
	const char *cluster = NULL, *controller = "CONTROLLER:7443";
	int64_t uses = 1, ttl = 3600000;
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, opts)) != -1) {
		switch (c) {
		case OPT_CLUSTER:
			cluster = optarg;
			break;
		case OPT_CONTROLLER:
			/* Printed into the agent's command line: an address it would refuse is
			 * refused here. */
			if (!util_hostport_ok(optarg, false))
				return rc_bad("--controller (HOST:PORT, port 1-65535)", optarg);
			controller = optarg;
			break;
		case OPT_USES:
			if ((r = rc_parse_int("--uses", optarg, 1, 100000, &uses)) != 0)
				return r;
			break;
		case OPT_TTL:
			if ((r = rc_parse_duration("--ttl", optarg, 1000, 30LL * 86400000, &ttl)) !=
			    0)
				return r;
			break;
		case OPT_TTL_MS:
			if ((r = rc_parse_int("--ttl-ms", optarg, 1000, 30LL * 86400000, &ttl)) !=
			    0)
				return r;
			break;
		default:
			return rc_usage(cmd, c);
		}
	}
	if ((r = rc_positionals(cmd, argc, argv, 0, false)) != 0)
		return r;
	if (!cluster)
		return rc_bad("enrollment-token create", "(--cluster is required)");
	body = json_pack("{s:s, s:I, s:I}", "cluster", cluster, "uses", (json_int_t)uses, "ttl_ms",
			 (json_int_t)ttl);
	r = body ? rc_api(rc, "POST", "/api/v1/enrollment-tokens", body, &doc) : RC_FAILED;
	if (r == 0 && rc->json) {
		r = rc_print_json(stdout, doc);
	} else if (r == 0) {
		const char *tok = rc_str(doc, "token", "?"),
			   *fp = rc_str(doc, "ca_fingerprint", "?");

		/* One line per call: util_fprintf_safe() escapes a newline inside. */
		util_fprintf_safe(stdout, "token: %s\n", tok);
		util_fprintf_safe(stdout, "ca-fingerprint: %s\n", fp);
		util_fprintf_safe(stdout, "cluster: %s\n", rc_str(doc, "cluster", "?"));
		printf("uses: %lld\n\nOn each node:\n", JINT(doc, "uses"));
		util_fprintf_safe(stdout,
				  "  railyard-agent enroll --controller %s --token %s "
				  "--ca-fingerprint %s\n",
				  controller, tok, fp);
	}
	json_decref(body);
	json_decref(doc);
	return r;
}

const struct rc_command rc_nodes_commands[] = {
	{"nodes", "[--cluster C] [--state S]",
	 "list the nodes (every page), with their state, agent, sign-off and facts", cmd_nodes},
	{"enrollment-token create", "--cluster C [--uses 1] [--ttl 1h] [--controller HOST:PORT]",
	 "make a one-time token with which nodes of a cluster enroll", cmd_enroll_token},
	{0},
};
