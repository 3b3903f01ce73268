/* railyard-controller: option parsing for the subcommands in admin.c. */
#include "controller/admin.h"
#include "controller/state.h"
#include "common/playbook/playbook.h"
#include "common/log/log.h"
#include "common/util/util.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SANS 32

static void usage(FILE *f)
{
	fprintf(f,
		"usage: railyard-controller [--log-level L] COMMAND [options]\n"
		"\n"
		"  init --state-dir D [--san NAME|IP]...     create database, CA and server cert\n"
		"  token create --cluster NAME [--ttl 1h] [--uses 1] [--state-dir D]\n"
		"  serve [--state-dir D] [--listen HOST:PORT] [--heartbeat-interval 5s]\n"
		"        [--heartbeat-timeout 15s] [--facts-refresh 1h] [--threads 4]\n"
		"        [--apply-timeout 30m] [--reconnect-grace 30s]\n"
		"  nodes [--state-dir D] [--json]\n"
		"  node revoke NODE [--state-dir D]\n"
		"  audit [--state-dir D] [--limit 50]\n"
		"  playbook check FILE [--facts FACTS.json]\n"
		"  deploy --cluster C --playbook FILE [--check] [--batch N|P%%] [--max-fail "
		"N|P%%]\n"
		"         [--canary N] [--pause 30s] [--no-wait] [--diff] [--timeout 30m]\n"
		"         [--state-dir D]\n"
		"  deployments [ID] [--json] [--state-dir D]\n"
		"  bench run --from NODE --to NODE --kind lat|bw [--transport tcp|verbs]\n"
		"         [--op send|write|read] [--size N] [--iters N] [--duration S] [--qps N]\n"
		"         [--sweep] [--bidir] [--check-data] [--rdma-cm] [--device DEV]\n"
		"         [--gid-index N] [--ib-port N] [--tclass N] [--sl N]\n"
		"         [--server-address HOST] [--timeout 60s] [--no-wait] [--json]\n"
		"         [--state-dir D]          (Ctrl-C while it waits cancels the run)\n"
		"  bench list | bench show ID [--json] [--state-dir D]\n"
		"  bench cancel ID [--no-wait] [--state-dir D]\n"
		"  version\n"
		"\n"
		"--state-dir defaults to " CTL_DEFAULT_STATE_DIR
		"; durations take ms, s, m, h, d.\n");
}

static int bad(const char *what, const char *value)
{
	fprintf(stderr, "railyard-controller: invalid %s '%s'\n", what, value ? value : "");
	return 2;
}

static int parse_ms(const char *what, const char *s, int64_t *ret)
{
	if (util_parse_duration_ms(s, ret) < 0 || *ret <= 0 || *ret > INT32_MAX)
		return bad(what, s);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"state-dir", required_argument, NULL, 'd'},
		{"san", required_argument, NULL, 'S'},
		{"cluster", required_argument, NULL, 'c'},
		{"ttl", required_argument, NULL, 't'},
		{"uses", required_argument, NULL, 'u'},
		{"listen", required_argument, NULL, 'l'},
		{"heartbeat-interval", required_argument, NULL, 'i'},
		{"heartbeat-timeout", required_argument, NULL, 'T'},
		{"facts-refresh", required_argument, NULL, 'F'},
		{"threads", required_argument, NULL, 'n'},
		{"json", no_argument, NULL, 'j'},
		{"limit", required_argument, NULL, 'L'},
		{"controller", required_argument, NULL, 'C'},
		{"facts", required_argument, NULL, 'f'},
		{"playbook", required_argument, NULL, 'p'},
		{"check", no_argument, NULL, 'k'},
		{"batch", required_argument, NULL, 'b'},
		{"max-fail", required_argument, NULL, 'm'},
		{"canary", required_argument, NULL, 'y'},
		{"no-wait", no_argument, NULL, 'W'},
		{"pause", required_argument, NULL, 'P'},
		{"diff", no_argument, NULL, 'D'},
		{"timeout", required_argument, NULL, 'o'},
		{"apply-timeout", required_argument, NULL, 'A'},
		{"reconnect-grace", required_argument, NULL, 'G'},
		{"from", required_argument, NULL, 1001},
		{"to", required_argument, NULL, 1002},
		{"kind", required_argument, NULL, 1003},
		{"transport", required_argument, NULL, 1004},
		{"op", required_argument, NULL, 1005},
		{"size", required_argument, NULL, 1006},
		{"iters", required_argument, NULL, 1007},
		{"duration", required_argument, NULL, 1008},
		{"qps", required_argument, NULL, 1009},
		{"sweep", no_argument, NULL, 1010},
		{"bidir", no_argument, NULL, 1011},
		{"check-data", no_argument, NULL, 1012},
		{"rdma-cm", no_argument, NULL, 1013},
		{"device", required_argument, NULL, 1014},
		{"server-address", required_argument, NULL, 1015},
		{"gid-index", required_argument, NULL, 1016},
		{"ib-port", required_argument, NULL, 1017},
		{"tclass", required_argument, NULL, 1018},
		{"sl", required_argument, NULL, 1019},
		{"log-level", required_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *state_dir = CTL_DEFAULT_STATE_DIR, *cluster = NULL, *controller = NULL;
	const char *facts = NULL;
	struct ctl_deploy_opts dopt = {.canary = -1, .pause_ms = -1, .timeout_ms = 30 * 60 * 1000};
	int64_t apply_timeout_ms = 0, grace_ms = 30000;
	struct ctl_bench_opts bopt = {.kind = "lat",
				      .transport = "tcp",
				      .timeout_ms = 60000,
				      .gid_index = -2,
				      .ib_port = -1,
				      .tclass = -1,
				      .sl = -1};
	bool timeout_set = false;
	const char *sans[MAX_SANS];
	size_t n_sans = 0;
	int64_t ttl_ms = 3600 * 1000, interval_ms = 5000, timeout_ms = 0, refresh_ms = 0;
	long uses = 1, threads = 4, limit = 50;
	bool json = false;
	struct ctl_server_config cfg = {0};
	const char *cmd, *sub = NULL;
	enum log_level level;
	char *end;
	int c;

	log_set_ident("railyard-controller");
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	/* Global options come before the command. */
	while (argc > 1 && strncmp(argv[1], "--log-level", 11) == 0) {
		const char *v = argv[1][11] == '=' ? argv[1] + 12 : (argc > 2 ? argv[2] : NULL);

		if (log_level_parse(v, &level) < 0)
			return bad("--log-level", v);
		log_set_level(level);
		argc -= argv[1][11] == '=' ? 1 : 2;
		argv += argv[1][11] == '=' ? 1 : 2;
	}
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	cmd = argv[1];
	if (strcmp(cmd, "token") == 0 || strcmp(cmd, "node") == 0 || strcmp(cmd, "playbook") == 0 ||
	    strcmp(cmd, "bench") == 0) {
		if (argc < 3) {
			usage(stderr);
			return 2;
		}
		sub = argv[2];
		argc--;
		argv++;
	}
	argc--;
	argv++;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			state_dir = optarg;
			break;
		case 'S':
			if (n_sans == MAX_SANS)
				return bad("--san (too many)", optarg);
			sans[n_sans++] = optarg;
			break;
		case 'c':
			cluster = optarg;
			break;
		case 't':
			if (parse_ms("--ttl", optarg, &ttl_ms))
				return 2;
			break;
		case 'u':
			uses = strtol(optarg, &end, 10);
			if (*end || uses < 1 || uses > 100000)
				return bad("--uses", optarg);
			break;
		case 'l':
			if (!util_hostport_ok(optarg, true))
				return bad("--listen (HOST:PORT with a port of 0-65535)", optarg);
			cfg.listen = optarg;
			break;
		case 'i':
			if (parse_ms("--heartbeat-interval", optarg, &interval_ms))
				return 2;
			break;
		case 'T':
			if (parse_ms("--heartbeat-timeout", optarg, &timeout_ms))
				return 2;
			break;
		case 'F':
			if (parse_ms("--facts-refresh", optarg, &refresh_ms))
				return 2;
			break;
		case 'n':
			threads = strtol(optarg, &end, 10);
			if (*end || threads < 1 || threads > 64)
				return bad("--threads", optarg);
			break;
		case 'j':
			json = true;
			break;
		case 'L':
			limit = strtol(optarg, &end, 10);
			if (*end || limit < 1 || limit > 100000)
				return bad("--limit", optarg);
			break;
		case 'C':
			if (!util_hostport_ok(optarg, false))
				return bad("--controller (HOST:PORT with a port of 1-65535)",
					   optarg);
			controller = optarg;
			break;
		case 'f':
			facts = optarg;
			break;
		case 'p':
			dopt.playbook = optarg;
			break;
		case 'k':
			dopt.check = true;
			break;
		case 'b':
			dopt.batch = optarg;
			break;
		case 'm':
			dopt.max_fail = optarg;
			break;
		case 'y':
			dopt.canary = (int)strtol(optarg, &end, 10);
			if (*end || dopt.canary < 0 || dopt.canary > 100000)
				return bad("--canary", optarg);
			break;
		case 'W':
			dopt.no_wait = true;
			break;
		case 'P':
			if (util_parse_duration_ms(optarg, &dopt.pause_ms) < 0 ||
			    dopt.pause_ms > 86400000)
				return bad("--pause", optarg);
			break;
		case 'D':
			dopt.show_diffs = true;
			break;
		case 'o':
			if (parse_ms("--timeout", optarg, &dopt.timeout_ms))
				return 2;
			timeout_set = true;
			break;
		case 1001:
			bopt.from = optarg;
			break;
		case 1002:
			bopt.to = optarg;
			break;
		case 1003:
			bopt.kind = optarg;
			break;
		case 1004:
			bopt.transport = optarg;
			break;
		case 1005:
			bopt.op = optarg;
			break;
		case 1006:
		case 1007:
		case 1008:
		case 1009: {
			long long v = strtoll(optarg, &end, 10);
			int64_t *dst = c == 1006   ? &bopt.size
				       : c == 1007 ? &bopt.iters
				       : c == 1008 ? &bopt.duration_s
						   : &bopt.qps;

			/* Bounds are the engine's (the agent validates); this only refuses junk. */
			if (*end || v < 1 || v > 100000000LL)
				return bad("benchmark number", optarg);
			*dst = v;
			break;
		}
		case 1010:
			bopt.sweep = true;
			break;
		case 1011:
			bopt.bidir = true;
			break;
		case 1012:
			bopt.check_data = true;
			break;
		case 1013:
			bopt.rdma_cm = true;
			break;
		case 1014:
			bopt.device = optarg;
			break;
		case 1015:
			bopt.server_address = optarg;
			break;
		case 1016:
		case 1017:
		case 1018:
		case 1019: {
			/* The same value goes to both sides; the agents validate it against their
			 * device (e.g. a GID index not in use). */
			static const long long lo[] = {-1, 1, 0, 0}, hi[] = {65535, 255, 255, 15};
			static const char *const flag[] = {"--gid-index", "--ib-port", "--tclass",
							   "--sl"};
			long long v = strtoll(optarg, &end, 10);
			int k = c - 1016;
			int64_t *dst = k == 0	? &bopt.gid_index
				       : k == 1 ? &bopt.ib_port
				       : k == 2 ? &bopt.tclass
						: &bopt.sl;

			if (!optarg[0] || *end || v < lo[k] || v > hi[k])
				return bad(flag[k], optarg);
			*dst = v;
			break;
		}
		case 'A':
			if (parse_ms("--apply-timeout", optarg, &apply_timeout_ms))
				return 2;
			break;
		case 'G':
			if (parse_ms("--reconnect-grace", optarg, &grace_ms))
				return 2;
			break;
		case 'v':
			if (log_level_parse(optarg, &level) < 0)
				return bad("--log-level", optarg);
			log_set_level(level);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}

	if (strcmp(cmd, "init") == 0)
		return ctl_cmd_init(state_dir, sans, n_sans);
	if (strcmp(cmd, "token") == 0 && strcmp(sub, "create") == 0) {
		if (!cluster)
			return bad("--cluster", "(missing)");
		return ctl_cmd_token_create(state_dir, cluster, ttl_ms, (int)uses, controller);
	}
	if (strcmp(cmd, "serve") == 0) {
		sigset_t set;

		/* Block before any thread exists so gRPC's threads inherit the mask; the main
		 * thread takes the signals with sigwait. */
		sigemptyset(&set);
		sigaddset(&set, SIGINT);
		sigaddset(&set, SIGTERM);
		sigaddset(&set, SIGHUP);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
		if (!cfg.listen)
			cfg.listen = "0.0.0.0:7443";
		cfg.heartbeat_interval_ms = (int)interval_ms;
		cfg.heartbeat_timeout_ms = (int)(timeout_ms ? timeout_ms : 3 * interval_ms);
		cfg.facts_refresh_ms = (int)refresh_ms;
		cfg.threads = (int)threads;
		cfg.cert_days = 365;
		cfg.apply_timeout_ms = apply_timeout_ms;
		cfg.reconnect_grace_ms = grace_ms;
		return ctl_cmd_serve(state_dir, &cfg);
	}
	if (strcmp(cmd, "nodes") == 0)
		return ctl_cmd_nodes(state_dir, json, stdout);
	if (strcmp(cmd, "node") == 0 && strcmp(sub, "revoke") == 0) {
		if (optind >= argc)
			return bad("node", "(missing NODE)");
		return ctl_cmd_node_revoke(state_dir, argv[optind]);
	}
	if (strcmp(cmd, "playbook") == 0 && strcmp(sub, "check") == 0) {
		if (optind >= argc)
			return bad("playbook check", "(missing FILE)");
		return playbook_cmd_check(argv[optind], facts, stdout, stderr);
	}
	if (strcmp(cmd, "deploy") == 0) {
		if (!cluster || !dopt.playbook)
			return bad("deploy", "(--cluster and --playbook are required)");
		dopt.cluster = cluster;
		return ctl_cmd_deploy(state_dir, &dopt, stdout);
	}
	if (strcmp(cmd, "deployments") == 0)
		return ctl_cmd_deployments(state_dir, optind < argc ? argv[optind] : NULL, json,
					   stdout);
	if (strcmp(cmd, "bench") == 0 && strcmp(sub, "run") == 0) {
		if (!bopt.from || !bopt.to)
			return bad("bench run", "(--from and --to are required)");
		if (strcmp(bopt.kind, "lat") != 0 && strcmp(bopt.kind, "bw") != 0)
			return bad("--kind", bopt.kind);
		if (timeout_set)
			bopt.timeout_ms = dopt.timeout_ms;
		bopt.json = json;
		bopt.no_wait = dopt.no_wait;
		return ctl_cmd_bench_run(state_dir, &bopt, stdout);
	}
	if (strcmp(cmd, "bench") == 0 && strcmp(sub, "cancel") == 0) {
		if (optind >= argc)
			return bad("bench cancel", "(missing ID)");
		return ctl_cmd_bench_cancel(state_dir, argv[optind], !dopt.no_wait, stdout);
	}
	if (strcmp(cmd, "bench") == 0 && strcmp(sub, "list") == 0)
		return ctl_cmd_bench_show(state_dir, NULL, json, stdout);
	if (strcmp(cmd, "bench") == 0 && strcmp(sub, "show") == 0) {
		if (optind >= argc)
			return bad("bench show", "(missing ID)");
		return ctl_cmd_bench_show(state_dir, argv[optind], json, stdout);
	}
	if (strcmp(cmd, "audit") == 0)
		return ctl_cmd_audit(state_dir, (size_t)limit, stdout);
	if (strcmp(cmd, "version") == 0) {
		printf("railyard-controller %s\n", RAILYARD_VERSION);
		return 0;
	}
	fprintf(stderr, "railyard-controller: unknown command '%s%s%s'\n", cmd, sub ? " " : "",
		sub ? sub : "");
	usage(stderr);
	return 2;
}
