/* railyard-agent: the node agent's command line. A table of subcommands (enroll, run, facts,
 * apply, gpu-check, version), each parsing its own options and explaining them (COMMAND --help);
 * the work is done by the libraries. */
#include "nodeagent/apply/apply.h"
#include "nodeagent/benchjob.h"
#include "nodeagent/config.h"
#include "nodeagent/enroll.h"
#include "nodeagent/facts/facts.h"
#include "nodeagent/gpucheck.h"
#include "nodeagent/health_check_cmd.h"
#include "nodeagent/launch.h"
#include "nodeagent/session.h"
#include "common/log/log.h"
#include "common/rpc/rpc.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "railyard-agent"

/* Exit statuses: 0 done, 1 failed, 2 usage, and these. */
#define AGENT_EXIT_REFUSED 3 /* run: the controller refused this node */
#define AGENT_EXIT_LOCKED  4 /* the state directory is in use by another agent */
/* The lock file of the state directory (held by `run` and `enroll`). */
#define AGENT_LOCK "agent.lock"

/* One subcommand: its name, its options as the usage lists them (synopsis), what it does and
 * each option explained (help; NULL when the command answers --help itself), and the function
 * that parses its options (argv[0] is its name) and returns the exit status. */
struct agent_cmd {
	const char *name;
	const char *synopsis;
	const char *help;
	int (*run)(const struct agent_cmd *cmd, int argc, char **argv);
};

static const struct agent_cmd agent_cmds[];

/* Options every subcommand but gpu-check takes. */
#define OPT_LOG_LEVEL                                                                              \
	{"log-level", required_argument, NULL, 'v'},                                               \
	{                                                                                          \
		"help", no_argument, NULL, 'h'                                                     \
	}
#define HELP_LOG_LEVEL                                                                             \
	"  --log-level L          error, warn, info (the default) or debug; also before COMMAND\n"

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " [--log-level L] COMMAND [options]\n\n");
	for (const struct agent_cmd *c = agent_cmds; c->name; c++) {
		const char *s = c->synopsis;

		if (!*s) {
			fprintf(f, "  %s\n", c->name);
			continue;
		}
		/* The synopsis's lines, the first beside the name, the others under it. */
		fprintf(f, "  %-10s ", c->name);
		while (*s) {
			size_t n = strcspn(s, "\n");

			fprintf(f, "%.*s\n", (int)n, s);
			s += n + (s[n] == '\n');
			if (*s)
				fprintf(f, "  %-10s ", "");
		}
	}
	fprintf(f,
		"\n" PROG " COMMAND --help explains a command's options. --state-dir defaults "
		"to\n" AGENT_DEFAULT_STATE_DIR ", --sysroot to /.\n"
		"Exit codes: 0 done, 1 failed, 2 usage, 3 the controller refused this node (run),\n"
		"4 the state directory is in use by another railyard-agent (run, enroll).\n");
}

/* The usage of one command: its synopsis, then what it does and its options. */
static void cmd_usage(const struct agent_cmd *c, FILE *f)
{
	const char *s = c->synopsis;
	size_t indent = strlen("usage: " PROG " ") + strlen(c->name) + 1;

	fprintf(f, "usage: " PROG " %s%s", c->name, *s ? " " : "\n");
	while (*s) {
		size_t n = strcspn(s, "\n");

		fprintf(f, "%.*s\n", (int)n, s);
		s += n + (s[n] == '\n');
		if (*s)
			fprintf(f, "%*s", (int)indent, "");
	}
	if (c->help)
		fprintf(f, "\n%s", c->help);
}

/* getopt's verdict on an option it does not know, or one missing its value (it said which): the
 * command's usage, exit 2. */
static int cmd_bad_usage(const struct agent_cmd *c)
{
	cmd_usage(c, stderr);
	return 2;
}

/* Arguments left after the options: none is taken. */
static int no_operands(const struct agent_cmd *c, int argc, char **argv)
{
	if (optind >= argc)
		return 0;
	fprintf(stderr, PROG " %s: unexpected '%s'\n", c->name, argv[optind]);
	return cmd_bad_usage(c);
}

static int bad(const char *what, const char *value)
{
	fprintf(stderr, "railyard-agent: invalid %s '%s'\n", what, value ? value : "");
	return 2;
}

struct run_ctx {
	struct agent_session *s;
	int result;
};

static void *run_thread(void *arg)
{
	struct run_ctx *ctx = arg;

	ctx->result = agent_session_run(ctx->s);
	/* A fatal refusal ends the process as a signal would. */
	if (ctx->result < 0)
		kill(getpid(), SIGTERM);
	return NULL;
}

/* Take the state directory's lock: one agent per state directory, or two would run every
 * plan twice and supersede each other's sessions forever. */
static int lock_state(const char *cmd, const char *state_dir, int *ret_fd)
{
	long holder = 0;
	int r = fs_lock_dir(state_dir, AGENT_LOCK, ret_fd, &holder);

	if (r == -RY_E_LOCKED) {
		log_error("%s: state directory %s is in use by another railyard-agent (pid %ld); "
			  "stop it first",
			  cmd, state_dir, holder);
		return AGENT_EXIT_LOCKED;
	}
	if (r < 0) {
		log_error("%s: cannot lock %s/%s: %s%s", cmd, state_dir, AGENT_LOCK, ry_strerror(r),
			  r == -ENOENT ? " (enroll first: railyard-agent enroll ...)" : "");
		return 1;
	}
	return 0;
}

/* The sysroot must exist: a mistyped one would have plans write a tree of their own. */
static int check_sysroot(const char *sysroot)
{
	struct stat st;

	if (stat(sysroot, &st) < 0) {
		fprintf(stderr, "railyard-agent: sysroot %s: %s\n", sysroot, ry_strerror(-errno));
		return 2;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "railyard-agent: sysroot %s: not a directory\n", sysroot);
		return 2;
	}
	return 0;
}

static int cmd_run(const struct agent_session_opts *o)
{
	struct run_ctx ctx = {0};
	char err[512] = "";
	pthread_t t;
	sigset_t set;
	int sig, r, lock_fd = -1;

	r = lock_state("run", o->state_dir, &lock_fd);
	if (r)
		return r;
	r = agent_session_new(o, &ctx.s, err, sizeof(err));
	if (r < 0) {
		log_error("run: %s", err[0] ? err : ry_strerror(r));
		close(lock_fd);
		return 1;
	}
	if (pthread_create(&t, NULL, run_thread, &ctx) != 0) {
		log_error("run: cannot start the session thread");
		agent_session_free(ctx.s);
		close(lock_fd);
		return 1;
	}
	log_info("railyard-agent %s running (state %s%s%s); SIGTERM stops it", RAILYARD_VERSION,
		 o->state_dir, o->controller ? ", controller " : "",
		 o->controller ? o->controller : "");
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	while (sigwait(&set, &sig) != 0)
		;
	if (ctx.result == 0)
		log_info("received %s, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
	agent_session_stop(ctx.s);
	pthread_join(t, NULL);
	agent_session_free(ctx.s);
	close(lock_fd);
	if (ctx.result < 0) {
		log_error("the controller refused this node (%s); enroll it again",
			  ry_strerror(ctx.result));
		return AGENT_EXIT_REFUSED;
	}
	return 0;
}

static int cmd_facts(const char *sysroot, bool json)
{
	json_t *facts = NULL, *w;
	char *text;
	size_t i;

	if (facts_collect(sysroot, &facts) < 0) {
		log_error("facts: out of memory");
		return 1;
	}
	if (json) {
		text = json_dumps(facts, JSON_INDENT(2) | JSON_SORT_KEYS);
		if (text)
			printf("%s\n", text);
		free(text);
	} else {
		text = facts_summary(facts);
		printf("%s\n", text ? text : "-");
		free(text);
		json_array_foreach(json_object_get(facts, "warnings"), i, w)
			fprintf(stderr, "warning: %s\n", json_string_value(w));
	}
	json_decref(facts);
	return 0;
}

/* The enrollment token: --token's, or the one --token-file reads (*ret_owned: caller clears
 * and frees it). 0, or 2 (a usage error) with the reason on stderr. */
static int enroll_token(struct agent_enroll_opts *eo, const char *token_file, char **ret_owned)
{
	char err[512] = "";

	if (!token_file)
		return 0;
	if (eo->token) {
		fprintf(stderr, "railyard-agent enroll: --token and --token-file: choose one "
				"(--token-file keeps the token off the command line)\n");
		return 2;
	}
	if (agent_token_read(token_file, ret_owned, err, sizeof(err)) < 0) {
		fprintf(stderr, "railyard-agent enroll: %s\n", err);
		return 2;
	}
	eo->token = *ret_owned;
	return 0;
}

static int set_log_level(const char *arg)
{
	enum log_level level;

	if (log_level_parse(arg, &level) < 0)
		return bad("--log-level", arg);
	log_set_level(level);
	return 0;
}

/* Signals blocked before gRPC starts threads (the main thread takes them), then gRPC. */
static void rpc_start(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	rpc_log_init();
	rpc_init();
}

static int run_enroll(const struct agent_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"controller", required_argument, NULL, 'C'},
		{"token", required_argument, NULL, 't'},
		{"token-file", required_argument, NULL, 'F'},
		{"ca-fingerprint", required_argument, NULL, 'f'},
		{"state-dir", required_argument, NULL, 'd'},
		{"hostname", required_argument, NULL, 'H'},
		{"sysroot", required_argument, NULL, 'r'},
		{"timeout", required_argument, NULL, 'T'},
		OPT_LOG_LEVEL,
		{NULL, 0, NULL, 0},
	};
	struct agent_enroll_opts eo = {
		.state_dir = AGENT_DEFAULT_STATE_DIR, .sysroot = "/", .timeout_ms = 15000};
	const char *token_file = NULL;
	char *file_token = NULL, err[1024] = "";
	int64_t ms;
	int c, rc;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'C':
			if (!util_hostport_ok(optarg, false))
				return bad("--controller (HOST:PORT with a port of 1-65535)",
					   optarg);
			eo.controller = optarg;
			break;
		case 't':
			eo.token = optarg;
			break;
		case 'F':
			token_file = optarg;
			break;
		case 'f':
			eo.ca_fingerprint = optarg;
			break;
		case 'd':
			eo.state_dir = optarg;
			break;
		case 'H':
			eo.hostname = optarg;
			break;
		case 'r':
			eo.sysroot = optarg;
			break;
		case 'T':
			if (util_parse_duration_ms(optarg, &ms) < 0 || ms <= 0 || ms > 3600000)
				return bad("--timeout", optarg);
			eo.timeout_ms = (int)ms;
			break;
		case 'v':
			if ((rc = set_log_level(optarg)) != 0)
				return rc;
			break;
		case 'h':
			cmd_usage(cmd, stdout);
			return 0;
		default:
			return cmd_bad_usage(cmd);
		}
	}
	if ((rc = no_operands(cmd, argc, argv)) != 0 || (rc = check_sysroot(eo.sysroot)) != 0)
		return rc;
	rpc_start();
	rc = enroll_token(&eo, token_file, &file_token);
	if (rc == 0 && (!eo.controller || !eo.token || !eo.ca_fingerprint)) {
		fprintf(stderr, "railyard-agent enroll: --controller, --token-file (or "
				"--token) and --ca-fingerprint are required\n");
		rc = 2;
	}
	if (rc == 0) {
		int lock_fd = -1, r = fs_mkdir_p(eo.state_dir, 0700);

		if (r < 0) {
			log_error("enroll: state directory %s: %s", eo.state_dir, ry_strerror(r));
			rc = 1;
		} else if ((rc = lock_state("enroll", eo.state_dir, &lock_fd)) == 0) {
			if (agent_enroll(&eo, err, sizeof(err)) < 0) {
				log_error("enroll: %s", err);
				rc = 1;
			}
			close(lock_fd);
		}
	}
	if (file_token) {
		explicit_bzero(file_token, strlen(file_token));
		free(file_token);
	}
	rpc_shutdown();
	return rc;
}

/* --outbox-max: bytes, or K, M or G of them; at least 16K, at most 1T. */
static int parse_outbox_max(const char *arg, size_t *ret)
{
	char *end;
	unsigned long long v = strtoull(arg, &end, 10);
	unsigned long long mult = strcmp(end, "K") == 0	  ? 1024ULL
				  : strcmp(end, "M") == 0 ? 1024ULL * 1024
				  : strcmp(end, "G") == 0 ? 1024ULL * 1024 * 1024
				  : *end == '\0'	  ? 1
							  : 0;

	if (end == arg || arg[0] == '-' || !mult || v * mult < 16 * 1024 || v > (1ULL << 40) / mult)
		return -EINVAL;
	*ret = (size_t)(v * mult);
	return 0;
}

/* --bench-ports LO-HI within 1024-65535, or 0 (none). */
static int parse_bench_ports(const char *arg, uint16_t *ret_lo, uint16_t *ret_hi)
{
	unsigned long lo, hi;
	int used = 0;

	if (strcmp(arg, "0") == 0) {
		*ret_lo = *ret_hi = 0;
		return 0;
	}
	if (sscanf(arg, "%lu-%lu%n", &lo, &hi, &used) != 2 || (size_t)used != strlen(arg) ||
	    lo < 1024 || hi > 65535 || lo > hi)
		return -EINVAL;
	*ret_lo = (uint16_t)lo;
	*ret_hi = (uint16_t)hi;
	return 0;
}

static int run_run(const struct agent_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"state-dir", required_argument, NULL, 'd'},
		{"sysroot", required_argument, NULL, 'r'},
		{"controller", required_argument, NULL, 'C'},
		{"reconnect-max", required_argument, NULL, 'R'},
		{"bench-ports", required_argument, NULL, 'B'},
		{"outbox-max", required_argument, NULL, 'O'},
		{"keepalive", required_argument, NULL, 'K'},
		{"health-interval", required_argument, NULL, 'H'},
		OPT_LOG_LEVEL,
		{NULL, 0, NULL, 0},
	};
	struct agent_session_opts so = {.state_dir = AGENT_DEFAULT_STATE_DIR,
					.sysroot = "/",
					.bench_port_lo = AGENT_BENCH_PORT_LO,
					.bench_port_hi = AGENT_BENCH_PORT_HI};
	int64_t ms;
	int c, rc;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			so.state_dir = optarg;
			break;
		case 'r':
			so.sysroot = optarg;
			break;
		case 'C':
			if (!util_hostport_ok(optarg, false))
				return bad("--controller (HOST:PORT with a port of 1-65535)",
					   optarg);
			so.controller = optarg;
			break;
		case 'R':
			if (util_parse_duration_ms(optarg, &ms) < 0 || ms < 100 || ms > 3600000)
				return bad("--reconnect-max", optarg);
			so.backoff_max_ms = (int)ms;
			if (so.backoff_max_ms < 500)
				so.backoff_base_ms = so.backoff_max_ms / 2;
			break;
		case 'K':
			/* A controller that stops reading while its kernel still acknowledges (a
			 * hung process, a proxy in between) is noticed after this silence plus
			 * RPC_KEEPALIVE_TIMEOUT_MS. Shorter than the heartbeat interval, every
			 * heartbeat costs the controller a PING too. */
			if (util_parse_duration_ms(optarg, &ms) < 0 || ms < 1000 || ms > 3600000)
				return bad("--keepalive (1s to 1h)", optarg);
			so.keepalive_ms = (int)ms;
			break;
		case 'H':
			/* 0 turns the watchers off; under a second a rate means little. */
			if (util_parse_duration_ms(optarg, &ms) < 0 || (ms != 0 && ms < 1000) ||
			    ms > 3600000)
				return bad("--health-interval (0 = off, or 1s to 1h)", optarg);
			so.health_interval_ms = ms == 0 ? -1 : ms;
			break;
		case 'B':
			if (parse_bench_ports(optarg, &so.bench_port_lo, &so.bench_port_hi) < 0)
				return bad("--bench-ports (LO-HI within 1024-65535, or 0)", optarg);
			break;
		case 'O':
			if (parse_outbox_max(optarg, &so.outbox_max) < 0)
				return bad("--outbox-max (bytes, K, M or G; at least 16K)", optarg);
			break;
		case 'v':
			if ((rc = set_log_level(optarg)) != 0)
				return rc;
			break;
		case 'h':
			cmd_usage(cmd, stdout);
			return 0;
		default:
			return cmd_bad_usage(cmd);
		}
	}
	if ((rc = no_operands(cmd, argc, argv)) != 0 || (rc = check_sysroot(so.sysroot)) != 0)
		return rc;
	rpc_start();
	rc = cmd_run(&so);
	rpc_shutdown();
	return rc;
}

static int run_facts(const struct agent_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"sysroot", required_argument, NULL, 'r'},
		{"json", no_argument, NULL, 'j'},
		OPT_LOG_LEVEL,
		{NULL, 0, NULL, 0},
	};
	const char *sysroot = "/";
	bool json = false;
	int c, rc;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			sysroot = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'v':
			if ((rc = set_log_level(optarg)) != 0)
				return rc;
			break;
		case 'h':
			cmd_usage(cmd, stdout);
			return 0;
		default:
			return cmd_bad_usage(cmd);
		}
	}
	if ((rc = no_operands(cmd, argc, argv)) != 0 || (rc = check_sysroot(sysroot)) != 0)
		return rc;
	return cmd_facts(sysroot, json);
}

static int run_apply(const struct agent_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"playbook", required_argument, NULL, 'p'},
		{"sysroot", required_argument, NULL, 'r'},
		{"check", no_argument, NULL, 'k'},
		{"json", no_argument, NULL, 'j'},
		OPT_LOG_LEVEL,
		{NULL, 0, NULL, 0},
	};
	const char *sysroot = "/", *playbook = NULL;
	bool json = false, check = false;
	int c, rc;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			playbook = optarg;
			break;
		case 'r':
			sysroot = optarg;
			break;
		case 'k':
			check = true;
			break;
		case 'j':
			json = true;
			break;
		case 'v':
			if ((rc = set_log_level(optarg)) != 0)
				return rc;
			break;
		case 'h':
			cmd_usage(cmd, stdout);
			return 0;
		default:
			return cmd_bad_usage(cmd);
		}
	}
	if ((rc = no_operands(cmd, argc, argv)) != 0 || (rc = check_sysroot(sysroot)) != 0)
		return rc;
	if (!playbook) {
		fprintf(stderr, "railyard-agent apply: --playbook is required\n");
		return 2;
	}
	return apply_cmd(playbook, sysroot, check, json, stdout);
}

/* gpu-check parses its options and answers --help itself (gpucheck.c). */
static int run_gpu_check(const struct agent_cmd *cmd, int argc, char **argv)
{
	(void)cmd;
	return gpu_check_cmd(argc, argv, stdout);
}

/* health-check parses its options and answers --help itself (health_check_cmd.c). */
static int run_health_check(const struct agent_cmd *cmd, int argc, char **argv)
{
	(void)cmd;
	return agent_health_check_main(argc, argv);
}

static int run_version(const struct agent_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		OPT_LOG_LEVEL,
		{NULL, 0, NULL, 0},
	};
	int c, rc;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'v':
			if ((rc = set_log_level(optarg)) != 0)
				return rc;
			break;
		case 'h':
			cmd_usage(cmd, stdout);
			return 0;
		default:
			return cmd_bad_usage(cmd);
		}
	}
	if ((rc = no_operands(cmd, argc, argv)) != 0)
		return rc;
	printf("railyard-agent %s\n", RAILYARD_VERSION);
	return 0;
}

/* rsh takes what mpirun passes it as it is (no options of its own): launch.c. */
static int run_rsh(const struct agent_cmd *cmd, int argc, char **argv)
{
	(void)cmd;
	return agent_rsh_main(argc, argv);
}

static const struct agent_cmd agent_cmds[] = {
	{"enroll",
	 "--controller HOST:PORT (--token-file FILE|- | --token T)\n"
	 "--ca-fingerprint sha256:HEX\n"
	 "[--state-dir D] [--hostname H] [--sysroot DIR] [--timeout 15s]",
	 "Enroll this node with a controller, once: a key and a certificate signed by the\n"
	 "controller's CA are written to the state directory, with the controller's address.\n"
	 "\n"
	 "  --controller HOST:PORT the controller's agent port\n"
	 "  --token-file FILE|-    the enrollment token, read from FILE (mode 0600) or stdin (-):\n"
	 "                         it stays off the command line\n"
	 "  --token T              the enrollment token itself (other users see it in ps;\n"
	 "                         prefer --token-file)\n"
	 "  --ca-fingerprint sha256:HEX\n"
	 "                         the controller's CA, as `railyard-controller token create`\n"
	 "                         printed it: the connection is trusted only if it matches\n"
	 "  --state-dir D          where the agent keeps its key, certificate and journal\n"
	 "                         (default " AGENT_DEFAULT_STATE_DIR ")\n"
	 "  --hostname H           the name to enroll under (default: the host name in the\n"
	 "                         facts read under --sysroot)\n"
	 "  --sysroot DIR          the root the facts are read from (default /)\n"
	 "  --timeout 15s          how long to wait for the controller's answers (up to "
	 "1h)\n" HELP_LOG_LEVEL,
	 run_enroll},
	{"run",
	 "[--state-dir D] [--sysroot DIR] [--controller HOST:PORT]\n"
	 "[--reconnect-max 30s] [--bench-ports 18515-18546|0]\n"
	 "[--outbox-max 32M] [--keepalive 120s] [--health-interval 10s]",
	 "Serve the controller this node enrolled with, until SIGTERM: report facts and\n"
	 "heartbeats, apply the playbooks and run the benchmarks it sends. Exit 3 when the\n"
	 "controller refuses this node (enroll it again), 4 when another agent serves the\n"
	 "state directory.\n"
	 "\n"
	 "  --state-dir D          the enrolled state directory (default " AGENT_DEFAULT_STATE_DIR
	 ")\n"
	 "  --sysroot DIR          the root facts are read from and plans applied to (default /)\n"
	 "  --controller HOST:PORT the controller's address, instead of agent.conf's (the one\n"
	 "                         enrolled with)\n"
	 "  --reconnect-max 30s    the longest wait between two attempts to reconnect (100ms-1h)\n"
	 "  --bench-ports LO-HI    the ports benchmark servers listen on (within 1024-65535),\n"
	 "                         or 0 for any free port (default 18515-18546)\n"
	 "  --outbox-max 32M       the most the results kept for an absent controller may take\n"
	 "                         (bytes, K, M or G; at least 16K)\n"
	 "  --keepalive 120s       silence from the controller before it is pinged "
	 "(1s-1h)\n"
	 "  --health-interval 10s  how often the health watchers sample ports and GPUs (1s-1h;\n"
	 "                         0: the watchers are off; docs/health.md)\n" HELP_LOG_LEVEL,
	 run_run},
	{"facts", "[--sysroot DIR] [--json]",
	 "Collect this node's facts (hardware, drivers, firmware, software) and print a summary,\n"
	 "or the whole document.\n"
	 "\n"
	 "  --sysroot DIR          the root the facts are read from (default /)\n"
	 "  --json                 the facts document instead of the summary\n" HELP_LOG_LEVEL,
	 run_facts},
	{"apply", "--playbook FILE [--sysroot DIR] [--check] [--json]",
	 "Apply a playbook to this node without a controller (its facts are this node's). Exit\n"
	 "0 when every step ended ok or changed, 1 when a step failed or was not run, 2 when\n"
	 "the playbook could not be loaded or rendered.\n"
	 "\n"
	 "  --playbook FILE        the playbook (YAML)\n"
	 "  --sysroot DIR          the root the facts are read from and the plan applied to\n"
	 "                         (default /)\n"
	 "  --check                only say what would change; change nothing\n"
	 "  --json                 the summary as JSON\n" HELP_LOG_LEVEL,
	 run_apply},
	{"gpu-check",
	 "[--gpu N] [--size BYTES] [--repeats N]\n"
	 "[--h2d-min GB/s] [--d2h-min GB/s] [--d2d-min GB/s]\n"
	 "[--sysroot DIR | --facts FILE] [--json]",
	 NULL, run_gpu_check},
	{"health-check",
	 "[--playbook FILE | --config FILE] [--require LIST] [--sysroot DIR]\n"
	 "[--interval-ms N] [--json]",
	 NULL, run_health_check},
	{"rsh", "HOST COMMAND [ARGS...]",
	 "Open MPI's remote launcher within a collective run (its mpirun's plm_rsh_agent): ask\n"
	 "this node's agent to have HOST's agent start the run's daemon, through the\n"
	 "controller, with no shell and no SSH. Reads RAILYARD_JOB, RAILYARD_JOB_TOKEN and\n"
	 "RAILYARD_LAUNCH_SOCK, which the run sets. Exit 0 when the daemon started, 1 when the\n"
	 "launch was refused or failed (the reason on stderr).\n",
	 run_rsh},
	{"version", "", "Print the agent's version.\n\n" HELP_LOG_LEVEL, run_version},
	{NULL, NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		OPT_LOG_LEVEL,
		{NULL, 0, NULL, 0},
	};
	const struct agent_cmd *cmd;
	int c, rc;

	/* First of all OpenSSL's calls: no atexit handler. OpenSSL frees its state there, and a
	 * gRPC thread (TLS handshakes) that ends after it ran leaves behind the two per-thread
	 * random generators (EVP_RAND_CTX) it had made: an exit-time race that LeakSanitizer
	 * caught once, in an agent stopped after a reconnect on a busy host. Without the handler
	 * a live thread's state stays reachable and an ending thread frees its own. */
	OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
	log_set_ident(PROG);
	/* Options before the command; "+" stops at the command. */
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'v':
			if ((rc = set_log_level(optarg)) != 0)
				return rc;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	for (cmd = agent_cmds; cmd->name; cmd++)
		if (strcmp(cmd->name, argv[optind]) == 0)
			break;
	if (!cmd->name) {
		fprintf(stderr, PROG ": unknown command '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	/* The command parses the rest; argv[0] is its name for getopt's messages. optind 0 makes
	 * glibc start afresh (and forget the "+" of the pass above). */
	argc -= optind;
	argv += optind;
	optind = 0;
	return cmd->run(cmd, argc, argv);
}
