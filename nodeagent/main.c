/* railyard-agent: option parsing for enroll, run and facts. */
#include "nodeagent/apply/apply.h"
#include "nodeagent/benchjob.h"
#include "nodeagent/config.h"
#include "nodeagent/enroll.h"
#include "nodeagent/facts/facts.h"
#include "nodeagent/gpucheck.h"
#include "nodeagent/session.h"
#include "common/log/log.h"
#include "common/rpc/rpc.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Exit status when the state directory is in use by another agent. */
#define AGENT_EXIT_LOCKED 4
/* The lock file of the state directory (held by `run` and `enroll`). */
#define AGENT_LOCK "agent.lock"

static void usage(FILE *f)
{
	fprintf(f, "usage: railyard-agent [--log-level L] COMMAND [options]\n"
		   "\n"
		   "  enroll --controller HOST:PORT (--token-file FILE|- | --token T)\n"
		   "         --ca-fingerprint sha256:HEX\n"
		   "         [--state-dir D] [--hostname H] [--sysroot DIR] [--timeout 15s]\n"
		   "  run    [--state-dir D] [--sysroot DIR] [--controller HOST:PORT]\n"
		   "         [--reconnect-max 30s] [--bench-ports 18515-18546|0]\n"
		   "         [--outbox-max 32M] [--keepalive 120s]\n"
		   "  facts  [--sysroot DIR] [--json]\n"
		   "  gpu-check [--gpu N] [--json] ...  (railyard-agent gpu-check --help)\n"
		   "  version\n"
		   "\n"
		   "--state-dir defaults to " AGENT_DEFAULT_STATE_DIR ", --sysroot to /.\n");
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
		return 3;
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

int main(int argc, char **argv)
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
		{"reconnect-max", required_argument, NULL, 'R'},
		{"bench-ports", required_argument, NULL, 'B'},
		{"outbox-max", required_argument, NULL, 'O'},
		{"keepalive", required_argument, NULL, 'K'},
		{"json", no_argument, NULL, 'j'},
		{"playbook", required_argument, NULL, 'p'},
		{"check", no_argument, NULL, 'k'},
		{"log-level", required_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct agent_enroll_opts eo = {0};
	struct agent_session_opts so = {.bench_port_lo = AGENT_BENCH_PORT_LO,
					.bench_port_hi = AGENT_BENCH_PORT_HI};
	const char *cmd;
	int64_t ms;
	bool json = false, check = false;
	const char *playbook = NULL, *token_file = NULL;
	char *file_token = NULL;
	enum log_level level;
	sigset_t set;
	int c, rc;

	log_set_ident("railyard-agent");
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	cmd = argv[1];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		usage(stdout);
		return 0;
	}
	/* Subcommands with options of their own. */
	if (strcmp(cmd, "gpu-check") == 0)
		return gpu_check_cmd(argc - 1, argv + 1, stdout);
	eo.state_dir = so.state_dir = AGENT_DEFAULT_STATE_DIR;
	eo.sysroot = so.sysroot = "/";
	eo.timeout_ms = 15000;
	argc--;
	argv++;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'C':
			if (!util_hostport_ok(optarg, false))
				return bad("--controller (HOST:PORT with a port of 1-65535)",
					   optarg);
			eo.controller = so.controller = optarg;
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
			eo.state_dir = so.state_dir = optarg;
			break;
		case 'H':
			eo.hostname = optarg;
			break;
		case 'r':
			eo.sysroot = so.sysroot = optarg;
			break;
		case 'T':
			if (util_parse_duration_ms(optarg, &ms) < 0 || ms <= 0 || ms > 3600000)
				return bad("--timeout", optarg);
			eo.timeout_ms = (int)ms;
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
		case 'B': {
			unsigned long lo, hi;
			int used = 0;

			if (strcmp(optarg, "0") == 0) {
				so.bench_port_lo = so.bench_port_hi = 0;
				break;
			}
			if (sscanf(optarg, "%lu-%lu%n", &lo, &hi, &used) != 2 ||
			    (size_t)used != strlen(optarg) || lo < 1024 || hi > 65535 || lo > hi)
				return bad("--bench-ports (LO-HI within 1024-65535, or 0)", optarg);
			so.bench_port_lo = (uint16_t)lo;
			so.bench_port_hi = (uint16_t)hi;
			break;
		}
		case 'O': {
			char *end;
			unsigned long long v = strtoull(optarg, &end, 10);
			unsigned long long mult = strcmp(end, "K") == 0	  ? 1024ULL
						  : strcmp(end, "M") == 0 ? 1024ULL * 1024
						  : strcmp(end, "G") == 0 ? 1024ULL * 1024 * 1024
						  : *end == '\0'	  ? 1
									  : 0;

			if (end == optarg || optarg[0] == '-' || !mult || v * mult < 16 * 1024 ||
			    v > (1ULL << 40) / mult)
				return bad("--outbox-max (bytes, K, M or G; at least 16K)", optarg);
			so.outbox_max = (size_t)(v * mult);
			break;
		}
		case 'j':
			json = true;
			break;
		case 'p':
			playbook = optarg;
			break;
		case 'k':
			check = true;
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

	if ((strcmp(cmd, "facts") == 0 || strcmp(cmd, "apply") == 0 || strcmp(cmd, "run") == 0 ||
	     strcmp(cmd, "enroll") == 0) &&
	    (rc = check_sysroot(so.sysroot)) != 0)
		return rc;
	if (strcmp(cmd, "facts") == 0)
		return cmd_facts(so.sysroot, json);
	if (strcmp(cmd, "apply") == 0) {
		if (!playbook) {
			fprintf(stderr, "railyard-agent apply: --playbook is required\n");
			return 2;
		}
		return apply_cmd(playbook, so.sysroot, check, json, stdout);
	}
	if (strcmp(cmd, "version") == 0) {
		printf("railyard-agent %s\n", RAILYARD_VERSION);
		return 0;
	}
	if (strcmp(cmd, "enroll") != 0 && strcmp(cmd, "run") != 0) {
		fprintf(stderr, "railyard-agent: unknown command '%s'\n", cmd);
		usage(stderr);
		return 2;
	}
	/* Signals blocked before gRPC starts threads; the main thread takes them. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	rpc_log_init();
	rpc_init();
	if (strcmp(cmd, "enroll") == 0) {
		char err[1024] = "";

		rc = enroll_token(&eo, token_file, &file_token);
		if (rc == 0 && (!eo.controller || !eo.token || !eo.ca_fingerprint)) {
			fprintf(stderr, "railyard-agent enroll: --controller, --token-file (or "
					"--token) and --ca-fingerprint are required\n");
			rc = 2;
		}
		if (rc == 0) {
			int lock_fd = -1, r = fs_mkdir_p(eo.state_dir, 0700);

			if (r < 0) {
				log_error("enroll: state directory %s: %s", eo.state_dir,
					  ry_strerror(r));
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
	} else {
		rc = cmd_run(&so);
	}
	rpc_shutdown();
	return rc;
}
