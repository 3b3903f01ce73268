/* railyard-controller's administrative commands: init, token create, serve, nodes, node revoke,
 * audit, playbook check, version. token create and node revoke go through the serving
 * controller (one writer); token create writes the database itself when none serves. */
#include "controller/cli/cli.h"
#include "common/util/exitcode.h"
#include "common/httpc/httpc.h"
#include "controller/server.h"
#include "controller/service.h"
#include "controller/api/api.h"
#include "controller/nodes.h"
#include "controller/state.h"
#include "common/facts/facts_doc.h"
#include "common/log/log.h"
#include "common/playbook/playbook.h"
#include "common/rpc/rpc.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define JSTR(o, k) json_string_value(json_object_get((o), (k)))

#define MAX_SANS 32

/* Options of each command, in the order of its getopt table. */
enum {
	OPT_STATE_DIR = 1000,
	OPT_JSON,
	OPT_LIMIT,
	OPT_FACTS,
	OPT_CLUSTER,
	OPT_STATE,
	OPT_CURSOR,
	OPT_FIELDS
};

/* Macros, not const objects: C does not take an object as an initializer of a static array (gcc
 * folds it anyway, clang refuses). */
#define OPT_STATE_DIR_ENTRY                                                                        \
	{                                                                                          \
		"state-dir", required_argument, NULL, OPT_STATE_DIR                                \
	}
#define OPT_HELP_ENTRY                                                                             \
	{                                                                                          \
		"help", no_argument, NULL, 'h'                                                     \
	}

static int cmd_init(const struct cli_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		OPT_STATE_DIR_ENTRY,
		{"san", required_argument, NULL, 'S'},
		OPT_HELP_ENTRY,
		{0},
	};
	const char *state_dir = CTL_DEFAULT_STATE_DIR, *sans[MAX_SANS];
	struct ctl_state *st = NULL;
	size_t n_sans = 0;
	char err[512] = "";
	int c, r;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_STATE_DIR:
			state_dir = optarg;
			break;
		case 'S':
			if (n_sans == MAX_SANS)
				return cli_bad("--san (too many)", optarg);
			sans[n_sans++] = optarg;
			break;
		case 'h':
			return cli_usage(cmd, stdout);
		default:
			return cli_usage(cmd, stderr);
		}
	}
	if ((r = cli_positionals(cmd, argc, argv, 0)) != 0)
		return r;
	r = ctl_state_init(state_dir, sans, n_sans, err, sizeof(err));
	if (r < 0) {
		log_error("init: %s", err[0] ? err : ry_strerror(r));
		return 1;
	}
	if (cli_open_state(state_dir, false, &st) < 0)
		return 1;
	printf("initialised %s\nca-fingerprint: %s\n", state_dir, st->ca_fingerprint);
	ctl_state_free(st);
	return 0;
}

static int cmd_token_create(const struct cli_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		OPT_STATE_DIR_ENTRY,
		{"cluster", required_argument, NULL, 'c'},
		{"ttl", required_argument, NULL, 't'},
		{"uses", required_argument, NULL, 'u'},
		{"controller", required_argument, NULL, 'C'},
		OPT_HELP_ENTRY,
		{0},
	};
	const char *state_dir = CTL_DEFAULT_STATE_DIR, *cluster = NULL, *controller = NULL;
	int64_t ttl_ms = 3600 * 1000, now = util_now_unix_ms();
	struct ctl_state *st = NULL;
	struct httpc *api = NULL;
	struct ctl_error err;
	json_t *body = NULL, *doc = NULL;
	char *token = NULL, when[64], *end;
	const char *fp = NULL;
	long uses = 1;
	int c, r, rc = 1;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_STATE_DIR:
			state_dir = optarg;
			break;
		case 'c':
			cluster = optarg;
			break;
		case 't':
			if (cli_parse_ms("--ttl", optarg, &ttl_ms))
				return 2;
			/* As the API takes it: a token that expires within a second is a typo. */
			if (ttl_ms < 1000)
				return cli_bad("--ttl (at least 1s)", optarg);
			break;
		case 'u':
			uses = strtol(optarg, &end, 10);
			if (*end || uses < 1 || uses > 100000)
				return cli_bad("--uses", optarg);
			break;
		case 'C':
			if (!util_hostport_ok(optarg, false))
				return cli_bad("--controller (HOST:PORT with a port of 1-65535)",
					       optarg);
			controller = optarg;
			break;
		case 'h':
			return cli_usage(cmd, stdout);
		default:
			return cli_usage(cmd, stderr);
		}
	}
	if ((r = cli_positionals(cmd, argc, argv, 0)) != 0)
		return r;
	if (!cluster)
		return cli_bad("--cluster", "(missing)");
	if (!ctl_valid_cluster_name(cluster)) {
		cli_bad("cluster name (1-64 letters, digits, '.', '_' or '-', starting with a "
			"letter or digit)",
			cluster);
		return 2;
	}
	ctl_error_init(&err);
	/* Through the serving controller; with none serving (an integrator's first tokens, made
	 * before the first serve), in the database directly. */
	r = cli_api_open(state_dir, &api);
	if (r < 0)
		goto out;
	if (r > 0) {
		body = json_pack("{s:s, s:I, s:I}", "cluster", cluster, "uses", (json_int_t)uses,
				 "ttl_ms", (json_int_t)ttl_ms);
		if (!body) {
			log_error("token create: out of memory");
			goto out;
		}
		r = cli_api_call(api, "POST", "/api/v1/enrollment-tokens", body, NULL, &doc, &err);
		if (r < 0) {
			log_error("token create: %s", err.message);
			goto out;
		}
		if (!JSTR(doc, "token") || !JSTR(doc, "ca_fingerprint") ||
		    !(token = strdup(JSTR(doc, "token")))) {
			log_error("token create: the controller's reply has no token");
			goto out;
		}
		fp = JSTR(doc, "ca_fingerprint");
	} else {
		if (cli_open_state(state_dir, false, &st) < 0)
			goto out;
		r = store_token_create(st->store, cluster, ttl_ms, (int)uses, now, &token);
		if (r < 0) {
			log_error("token create: %s", ry_strerror(r));
			goto out;
		}
		fp = st->ca_fingerprint;
	}
	cli_format_time(now + ttl_ms, when, sizeof(when));
	printf("token: %s\nca-fingerprint: %s\ncluster: %s\nexpires: %s\nuses: %ld\n", token, fp,
	       cluster, when, uses);
	printf("\nOn each node:\n  railyard-agent enroll --controller %s --token %s "
	       "--ca-fingerprint %s\n",
	       controller ? controller : "CONTROLLER:7443", token, fp);
	rc = 0;
out:
	if (token)
		explicit_bzero(token, strlen(token));
	free(token);
	json_decref(body);
	json_decref(doc);
	ctl_error_done(&err);
	ctl_state_free(st);
	httpc_free(api);
	return rc;
}

/* The REST API's certificate and key when the operator gives their own (PEM files). */
static int read_api_pem(const char *cert, const char *key, struct ctl_api_config *acfg,
			char **ret_cert, char **ret_key)
{
	size_t len = 0;
	int r;

	if (!cert && !key)
		return 0;
	if (!cert || !key) {
		log_error("serve: --http-cert and --http-key go together");
		return -EINVAL;
	}
	if ((r = fs_read_file(cert, PKI_PEM_MAX, ret_cert, &len)) < 0 ||
	    (r = fs_read_file(key, PKI_PEM_MAX, ret_key, &len)) < 0) {
		log_error("serve: %s: %s", *ret_cert ? key : cert, ry_strerror(r));
		return r;
	}
	acfg->cert_pem = *ret_cert;
	acfg->key_pem = *ret_key;
	return 0;
}

static int serve(const char *state_dir, const struct ctl_server_config *cfg,
		 struct ctl_api_config *acfg, const char *http_cert, const char *http_key)
{
	struct ctl_state *st = NULL;
	struct ctl_server *srv = NULL;
	struct ctl_api *api = NULL;
	char *api_cert = NULL, *api_key = NULL;
	char err[512] = "";
	long holder = 0;
	sigset_t set;
	int sig, rc = 1, lock_fd = -1, r;

	/* One serving controller per state directory: a second one would mark every node offline,
	 * overwrite controller.addr and race the first on the database. */
	r = fs_lock_dir(state_dir, CTL_SERVE_LOCK, &lock_fd, &holder);
	if (r == -RY_E_LOCKED) {
		log_error("serve: %s is already served by another railyard-controller (pid %ld); "
			  "stop it first",
			  state_dir, holder);
		return RY_EXIT_LOCKED;
	}
	if (r < 0) {
		log_error("serve: cannot lock %s/%s: %s%s", state_dir, CTL_SERVE_LOCK,
			  ry_strerror(r),
			  r == -ENOENT ? " (run `railyard-controller init` first)" : "");
		return 1;
	}
	if (cli_open_state(state_dir, true, &st) < 0)
		goto out;
	rpc_log_init();
	rpc_init();
	if (ctl_server_start(st, cfg, &srv, err, sizeof(err)) < 0) {
		log_error("serve: %s", err);
		goto out_rpc;
	}
	if (read_api_pem(http_cert, http_key, acfg, &api_cert, &api_key) < 0)
		goto out_rpc;
	if (ctl_api_start(srv, acfg, &api, err, sizeof(err)) < 0) {
		log_error("serve: REST API: %s", err);
		goto out_rpc;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	for (;;) {
		if (sigwait(&set, &sig) != 0)
			continue;
		if (sig == SIGHUP) {
			log_info("SIGHUP: asked %d agents for fresh facts",
				 ctl_server_refresh_facts(srv));
			continue;
		}
		if (!ctl_server_failed(srv))
			log_info("received %s, shutting down",
				 sig == SIGINT ? "SIGINT" : "SIGTERM");
		break;
	}
	rc = ctl_server_failed(srv) ? 1 : 0;
out_rpc:
	ctl_api_stop(api);
	ctl_server_free(srv);
	free(api_cert);
	if (api_key)
		explicit_bzero(api_key, strlen(api_key));
	free(api_key);
	rpc_shutdown();
out:
	ctl_state_free(st);
	close(lock_fd);
	return rc;
}

static int cmd_serve(const struct cli_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		OPT_STATE_DIR_ENTRY,
		{"listen", required_argument, NULL, 'l'},
		{"heartbeat-interval", required_argument, NULL, 'i'},
		{"heartbeat-timeout", required_argument, NULL, 'T'},
		{"facts-refresh", required_argument, NULL, 'F'},
		{"threads", required_argument, NULL, 'n'},
		{"apply-timeout", required_argument, NULL, 'A'},
		{"reconnect-grace", required_argument, NULL, 'G'},
		{"expected-agents", required_argument, NULL, 'E'},
		{"max-heartbeat-rate", required_argument, NULL, 'R'},
		{"http", required_argument, NULL, 'H'},
		{"http-cert", required_argument, NULL, 'C'},
		{"http-key", required_argument, NULL, 'K'},
		OPT_HELP_ENTRY,
		{0},
	};
	const char *state_dir = CTL_DEFAULT_STATE_DIR;
	int64_t interval_ms = 5000, timeout_ms = 0, refresh_ms = 0, apply_timeout_ms = 0;
	int64_t grace_ms = 30000;
	struct ctl_server_config cfg = {.listen = "0.0.0.0:7443"};
	struct ctl_api_config acfg = {.listen = CTL_API_LISTEN_DEFAULT};
	const char *http_cert = NULL, *http_key = NULL;
	long threads = 4, expected = 0, hb_rate = CTL_MAX_HEARTBEAT_RATE_DEFAULT;
	sigset_t set;
	char *end;
	int c, r;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_STATE_DIR:
			state_dir = optarg;
			break;
		case 'l':
			if (!util_hostport_ok(optarg, true))
				return cli_bad("--listen (HOST:PORT with a port of 0-65535)",
					       optarg);
			cfg.listen = optarg;
			break;
		case 'i':
			if (cli_parse_ms("--heartbeat-interval", optarg, &interval_ms))
				return 2;
			break;
		case 'T':
			if (cli_parse_ms("--heartbeat-timeout", optarg, &timeout_ms))
				return 2;
			break;
		case 'F':
			if (cli_parse_ms("--facts-refresh", optarg, &refresh_ms))
				return 2;
			break;
		case 'n':
			threads = strtol(optarg, &end, 10);
			if (*end || threads < 1 || threads > 64)
				return cli_bad("--threads", optarg);
			break;
		case 'A':
			if (cli_parse_ms("--apply-timeout", optarg, &apply_timeout_ms))
				return 2;
			break;
		case 'G':
			if (cli_parse_ms("--reconnect-grace", optarg, &grace_ms))
				return 2;
			break;
		case 'E':
			expected = strtol(optarg, &end, 10);
			if (*end || end == optarg || expected < 0 || expected > 10000000)
				return cli_bad("--expected-agents (0-10000000)", optarg);
			break;
		case 'R':
			hb_rate = strtol(optarg, &end, 10);
			if (*end || end == optarg || hb_rate < 0 || hb_rate > 1000000)
				return cli_bad(
					"--max-heartbeat-rate (0-1000000 a second, 0: no cap)",
					optarg);
			break;
		case 'H':
			if (strcmp(optarg, "off") == 0)
				acfg.listen = NULL;
			else if (!util_hostport_ok(optarg, true))
				return cli_bad("--http (HOST:PORT with a port of 0-65535, or off)",
					       optarg);
			else
				acfg.listen = optarg;
			break;
		case 'C':
			http_cert = optarg;
			break;
		case 'K':
			http_key = optarg;
			break;
		case 'h':
			return cli_usage(cmd, stdout);
		default:
			return cli_usage(cmd, stderr);
		}
	}
	if ((r = cli_positionals(cmd, argc, argv, 0)) != 0)
		return r;
	/* Block before any thread exists so gRPC's threads inherit the mask; serve() takes the
	 * signals with sigwait. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	cfg.heartbeat_interval_ms = (int)interval_ms;
	cfg.heartbeat_timeout_ms = (int)(timeout_ms ? timeout_ms : 3 * interval_ms);
	cfg.facts_refresh_ms = (int)refresh_ms;
	cfg.threads = (int)threads;
	cfg.cert_days = 365;
	cfg.apply_timeout_ms = apply_timeout_ms;
	cfg.reconnect_grace_ms = grace_ms;
	cfg.expected_agents = expected;
	cfg.max_heartbeat_rate = (int)hb_rate;
	return serve(state_dir, &cfg, &acfg, http_cert, http_key);
}

/* --state-dir and --json, for the listing commands. */
static int list_opts(const struct cli_command *cmd, int argc, char **argv, const char **state_dir,
		     bool *json, long *limit, int positionals)
{
	static const struct option opts[] = {
		OPT_STATE_DIR_ENTRY,
		{"json", no_argument, NULL, OPT_JSON},
		{"limit", required_argument, NULL, OPT_LIMIT},
		OPT_HELP_ENTRY,
		{0},
	};
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_STATE_DIR:
			*state_dir = optarg;
			break;
		case OPT_JSON:
			if (!json)
				return cli_usage(cmd, stderr);
			*json = true;
			break;
		case OPT_LIMIT:
			if (!limit)
				return cli_usage(cmd, stderr);
			*limit = strtol(optarg, &end, 10);
			if (*end || *limit < 1 || *limit > 100000)
				return cli_bad("--limit", optarg);
			break;
		case 'h':
			return cli_usage(cmd, stdout);
		default:
			return cli_usage(cmd, stderr);
		}
	}
	return cli_positionals(cmd, argc, argv, positionals);
}

/* Each node of arr reduced to the comma-separated top-level fields (NULL: all). */
static int project(json_t *arr, const char *fields)
{
	json_t *o;
	size_t i;

	if (!fields)
		return 0;
	json_array_foreach(arr, i, o)
	{
		json_t *keep = json_object();
		const char *f = fields;

		if (!keep)
			return -ENOMEM;
		while (*f) {
			size_t len = strcspn(f, ",");
			char key[64];
			json_t *v;

			snprintf(key, sizeof(key), "%.*s", (int)(len < 63 ? len : 63), f);
			v = json_object_get(o, key);
			if (v)
				json_object_set(keep, key, v);
			f += len + (f[len] == ',');
		}
		json_array_set_new(arr, i, keep);
	}
	return 0;
}

/* The page of arr from offset cursor, limit long: {"items", "next_cursor"} as the REST API
 * pages its lists. New reference. */
static json_t *page(json_t *arr, long cursor, long limit)
{
	json_t *items = json_array();
	size_t n = json_array_size(arr);
	char next[32];

	for (size_t i = (size_t)cursor; i < n && i < (size_t)(cursor + limit); i++)
		json_array_append(items, json_array_get(arr, i));
	snprintf(next, sizeof(next), "%ld", cursor + limit);
	return json_pack("{s:o, s:s?}", "items", items, "next_cursor",
			 (size_t)(cursor + limit) < n ? next : NULL);
}

static int cmd_nodes(const struct cli_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		OPT_STATE_DIR_ENTRY,
		{"json", no_argument, NULL, OPT_JSON},
		{"facts", no_argument, NULL, OPT_FACTS},
		{"cluster", required_argument, NULL, OPT_CLUSTER},
		{"state", required_argument, NULL, OPT_STATE},
		{"limit", required_argument, NULL, OPT_LIMIT},
		{"cursor", required_argument, NULL, OPT_CURSOR},
		{"fields", required_argument, NULL, OPT_FIELDS},
		OPT_HELP_ENTRY,
		{0},
	};
	static const char *const states[] = {"enrolled", "online", "offline", "revoked", NULL};
	const char *state_dir = CTL_DEFAULT_STATE_DIR, *cluster = NULL, *state = NULL;
	const char *fields = NULL;
	struct ctl_state *st = NULL;
	struct ctl_error err;
	json_t *arr = NULL, *o;
	bool json = false, facts = false;
	long limit = 0, cursor = -1;
	char *end;
	size_t i;
	int c, r, rc = 1;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_STATE_DIR:
			state_dir = optarg;
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_FACTS:
			facts = true;
			break;
		case OPT_CLUSTER:
			cluster = optarg;
			break;
		case OPT_STATE:
			for (i = 0; states[i] && strcmp(states[i], optarg) != 0; i++)
				;
			if (!states[i])
				return cli_bad("--state (enrolled, online, offline, revoked)",
					       optarg);
			state = optarg;
			break;
		case OPT_LIMIT:
			limit = strtol(optarg, &end, 10);
			if (*end || end == optarg || limit < 1 || limit > 100000)
				return cli_bad("--limit (1-100000)", optarg);
			break;
		case OPT_CURSOR:
			cursor = strtol(optarg, &end, 10);
			if (*end || end == optarg || cursor < 0)
				return cli_bad("--cursor (a next_cursor of the previous page)",
					       optarg);
			break;
		case OPT_FIELDS:
			if (!optarg[0] ||
			    strspn(optarg, "abcdefghijklmnopqrstuvwxyz_,") != strlen(optarg))
				return cli_bad("--fields (names, comma-separated)", optarg);
			fields = optarg;
			break;
		case 'h':
			return cli_usage(cmd, stdout);
		default:
			return cli_usage(cmd, stderr);
		}
	}
	if ((r = cli_positionals(cmd, argc, argv, 0)) != 0)
		return r;
	if (!json && (facts || fields || limit || cursor >= 0)) {
		log_error("nodes: --facts, --fields, --limit and --cursor go with --json");
		return 2;
	}
	if (cli_open_state(state_dir, false, &st) < 0)
		return 1;
	ctl_error_init(&err);
	/* Facts are ~11-20 KB a node: only when asked (the REST listing's ?facts=true). */
	if (ctl_nodes_list(st->store, cluster, state, facts || (fields && strstr(fields, "facts")),
			   &arr, &err) < 0) {
		cli_error(&err);
		goto out;
	}
	if (json) {
		json_t *doc;

		if (project(arr, fields) < 0) {
			log_error("nodes: out of memory");
			goto out;
		}
		if (!limit && cursor < 0) {
			rc = cli_print_json(stdout, arr);
			goto out;
		}
		doc = page(arr, cursor < 0 ? 0 : cursor, limit ? limit : 100);
		rc = doc ? cli_print_json(stdout, doc) : 1;
		json_decref(doc);
		goto out;
	}
	printf("%-16s %-14s %-10s %-8s %-20s %-8s %-8s %s\n", "NODE", "HOSTNAME", "CLUSTER",
	       "STATE", "LAST SEEN", "AGENT", "SIGNOFF", "FACTS");
	/* Host names, versions and facts come from the nodes: printed escaped. */
	json_array_foreach(arr, i, o)
	{
		char when[64];

		cli_format_time(json_integer_value(json_object_get(o, "last_seen_ms")), when,
				sizeof(when));
		util_fprintf_safe(stdout, "%-16s %-14s %-10s %-8s %-20s %-8s %-8s %s\n",
				  JSTR(o, "id"), JSTR(o, "hostname"), JSTR(o, "cluster"),
				  JSTR(o, "state"), when,
				  JSTR(o, "agent_version") ? JSTR(o, "agent_version") : "-",
				  JSTR(json_object_get(o, "signoff"), "state"),
				  JSTR(o, "summary") ? JSTR(o, "summary") : "-");
	}
	rc = 0;
out:
	json_decref(arr);
	ctl_error_done(&err);
	ctl_state_free(st);
	return rc;
}

/* The REST API's route table (method, path, permission, cluster-scoped): docs/rest.md mirrors
 * it; the matrix test walks it. */
static int cmd_api_routes(const struct cli_command *cmd, int argc, char **argv)
{
	const struct ctl_api_route_info *v;
	const char *state_dir = NULL;
	bool json = false;
	size_t n = 0;
	json_t *arr;
	int r;

	if ((r = list_opts(cmd, argc, argv, &state_dir, &json, NULL, 0)) != 0)
		return r;
	v = ctl_api_routes(&n);
	arr = json_array();
	for (size_t i = 0; i < n; i++) {
		if (json)
			json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:b, s:b}", "method",
							     v[i].method, "path", v[i].path, "perm",
							     v[i].perm, "scoped", v[i].scoped,
							     "fleet", v[i].fleet));
		else
			printf("%-7s %-40s %-10s %s\n", v[i].method, v[i].path, v[i].perm,
			       v[i].scoped  ? "cluster-scoped"
			       : v[i].fleet ? "unscoped tokens only"
					    : "");
	}
	if (json)
		cli_print_json(stdout, arr);
	json_decref(arr);
	return 0;
}

static int cmd_node_revoke(const struct cli_command *cmd, int argc, char **argv)
{
	const char *state_dir = CTL_DEFAULT_STATE_DIR;
	struct httpc *api = NULL;
	struct ctl_error err;
	json_t *doc = NULL;
	char path[512];
	int r, rc = 1;

	if ((r = list_opts(cmd, argc, argv, &state_dir, NULL, NULL, 1)) != 0)
		return r;
	ctl_error_init(&err);
	if (cli_api_need("node revoke", state_dir, &api) != 0)
		goto out;
	if (cli_api_path(path, sizeof(path), "/api/v1/nodes/", argv[optind], "/revoke") < 0) {
		cli_bad("node (id or host name)", argv[optind]);
		goto out;
	}
	if (cli_api_call(api, "POST", path, NULL, NULL, &doc, &err) < 0) {
		log_error("node revoke %s: %s", argv[optind], err.message);
		goto out;
	}
	util_fprintf_safe(stdout, "revoked node %s\n", JSTR(doc, "id") ? JSTR(doc, "id") : "?");
	rc = 0;
out:
	json_decref(doc);
	ctl_error_done(&err);
	httpc_free(api);
	return rc;
}

static int cmd_audit(const struct cli_command *cmd, int argc, char **argv)
{
	const char *state_dir = CTL_DEFAULT_STATE_DIR;
	struct ctl_state *st = NULL;
	struct store_audit_entry *e = NULL;
	long limit = 50;
	size_t n = 0;
	int r;

	if ((r = list_opts(cmd, argc, argv, &state_dir, NULL, &limit, 0)) != 0)
		return r;
	if (cli_open_state(state_dir, false, &st) < 0)
		return 1;
	r = store_audit_list(st->store, (size_t)limit, &e, &n);
	if (r < 0) {
		log_error("audit: %s", ry_strerror(r));
		ctl_state_free(st);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		char when[64];

		cli_format_time(e[i].at_ms, when, sizeof(when));
		util_fprintf_safe(stdout, "%s %-8s %-14s %-16s %-8s %s\n", when, e[i].actor,
				  e[i].action, e[i].target ? e[i].target : "-", e[i].outcome,
				  e[i].detail ? e[i].detail : "");
	}
	store_audit_entries_free(e, n);
	ctl_state_free(st);
	return 0;
}

static int cmd_playbook_check(const struct cli_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"facts", required_argument, NULL, 'f'},
		OPT_HELP_ENTRY,
		{0},
	};
	const char *facts = NULL;
	int c, r;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			facts = optarg;
			break;
		case 'h':
			return cli_usage(cmd, stdout);
		default:
			return cli_usage(cmd, stderr);
		}
	}
	if ((r = cli_positionals(cmd, argc, argv, 1)) != 0)
		return r;
	return playbook_cmd_check(argv[optind], facts, stdout, stderr);
}

static int cmd_version(const struct cli_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {OPT_HELP_ENTRY, {0}};
	int c, r;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1)
		return c == 'h' ? cli_usage(cmd, stdout) : cli_usage(cmd, stderr);
	if ((r = cli_positionals(cmd, argc, argv, 0)) != 0)
		return r;
	printf("railyard-controller %s\n", RAILYARD_VERSION);
	return 0;
}

const struct cli_command cli_admin_commands[] = {
	{"init", "[--state-dir D] [--san NAME|IP]...",
	 "create the state directory: database, CA and server certificate", cmd_init},
	{"token create",
	 "--cluster NAME [--ttl 1h] [--uses 1] [--controller HOST:PORT] [--state-dir D]",
	 "make an enrollment token for a cluster (shown once)", cmd_token_create},
	{"serve",
	 "[--state-dir D] [--listen HOST:PORT] [--heartbeat-interval 5s]\n"
	 "        [--heartbeat-timeout 15s] [--facts-refresh 1h] [--threads 4]\n"
	 "        [--apply-timeout 30m] [--reconnect-grace 30s] [--expected-agents N]\n"
	 "        [--max-heartbeat-rate 300] [--http HOST:PORT|off]\n"
	 "        [--http-cert FILE --http-key FILE]",
	 "serve the agents (gRPC with mutual TLS), the REST API (HTTPS, default 127.0.0.1:8443, "
	 "and the state directory's api.sock), and run deployments, campaigns and benchmarks",
	 cmd_serve},
	{"nodes",
	 "[--cluster C] [--state S] [--json [--facts] [--fields a,b] [--limit N [--cursor C]]]\n"
	 "        [--state-dir D]",
	 "list the enrolled nodes (--json: without their facts unless --facts; with --limit or "
	 "--cursor one page, {items, next_cursor}, as the REST API pages)",
	 cmd_nodes},
	{"api routes", "[--json]", "list the REST API's routes and the permission each needs",
	 cmd_api_routes},
	{"node revoke", "NODE [--state-dir D]", "revoke a node (id or host name)", cmd_node_revoke},
	{"audit", "[--limit 50] [--state-dir D]", "show the audit log, newest first", cmd_audit},
	{"playbook check", "FILE [--facts FACTS.json]",
	 "validate a playbook (and render it with a node's facts)", cmd_playbook_check},
	{"version", "", "print the version", cmd_version},
	{0},
};
