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

	if ((r = cli_simple_opts(cmd, argc, argv, &state_dir, &json, NULL, NULL, 0)) != 0)
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
	{"serve",
	 "[--state-dir D] [--listen HOST:PORT] [--heartbeat-interval 5s]\n"
	 "        [--heartbeat-timeout 15s] [--facts-refresh 1h] [--threads 4]\n"
	 "        [--apply-timeout 30m] [--reconnect-grace 30s] [--expected-agents N]\n"
	 "        [--max-heartbeat-rate 300] [--http HOST:PORT|off]\n"
	 "        [--http-cert FILE --http-key FILE]",
	 "serve the agents (gRPC with mutual TLS), the REST API (HTTPS, default 127.0.0.1:8443, "
	 "and the state directory's api.sock), and run deployments, campaigns and benchmarks",
	 cmd_serve},
	{"api routes", "[--json]", "list the REST API's routes and the permission each needs",
	 cmd_api_routes},
	{"version", "", "print the version", cmd_version},
	{0},
};
