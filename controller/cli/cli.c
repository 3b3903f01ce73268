/* The subcommand table of railyard-controller and what its commands share: global options,
 * usage at every level, option helpers, error printing. */
#include "controller/cli/cli.h"
#include "common/util/exitcode.h"
#include "controller/service.h"
#include "controller/state.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROG "railyard-controller"

static const struct cli_command *const tables[] = {
	cli_admin_commands,
	cli_apitoken_commands,
	cli_backup_commands,
};

/* One line per option, whichever command names it (the flags railyard shares mean the same). */
static const struct util_option_help option_help[] = {
	{"--state-dir", "the state directory (default " CTL_DEFAULT_STATE_DIR ")"},
	{"--san", "another name or IP address for the server certificate (repeatable)"},
	{"--listen", "the agents' gRPC address (mutual TLS), HOST:PORT; port 0 picks one"},
	{"--heartbeat-interval", "how often agents send a heartbeat (told to them)"},
	{"--heartbeat-timeout", "silence after which a node is offline (default 3 x interval)"},
	{"--facts-refresh", "how often agents are asked for their facts again"},
	{"--threads", "gRPC completion-queue threads"},
	{"--apply-timeout", "a node that reports no plan's end within this fails"},
	{"--reconnect-grace", "after start, how long offline nodes are waited for"},
	{"--expected-agents", "agents expected (checked against the heartbeat rate and fd limit)"},
	{"--max-heartbeat-rate", "heartbeats a second the whole fleet may send"},
	{"--http", "the REST API and portal's HTTPS address, HOST:PORT, or off"},
	{"--http-cert", "the REST API's certificate (PEM; default: the controller's own)"},
	{"--http-key", "the key of --http-cert"},
	{"--name", "the token's name (unique; letters, digits, . _ -)"},
	{"--role", "admin, integrator, operator or viewer"},
	{"--clusters", "the clusters it may see, comma-separated (default: every cluster)"},
	{"--ttl", "how long it is valid (a duration: 30d; default: never expires)"},
	{"--json", "print the result as JSON"},
	{"--to", "the file the copy is written to (not the database itself)"},
	{"--from", "the backup to restore (checked before anything is replaced)"},
	{"--force", "replace an existing database"},
};

int cli_usage(const struct cli_command *cmd, FILE *f)
{
	fprintf(f, "usage: " PROG " %s%s%s\n  %s\n", cmd->name, cmd->synopsis[0] ? " " : "",
		cmd->synopsis, cmd->help);
	util_print_options(f, cmd->synopsis, option_help, RY_ARRAY_SIZE(option_help));
	fprintf(f, "--state-dir defaults to " CTL_DEFAULT_STATE_DIR "; durations take ms, s, m, h, "
		   "d.\n");
	return f == stdout ? 0 : 2;
}

/* Every command whose name starts with prefix ("" for all). */
static void usage_all(const char *prefix, FILE *f)
{
	size_t plen = strlen(prefix);

	fprintf(f, "usage: " PROG " [--log-level error|warn|info|debug] COMMAND [options]\n\n");
	for (size_t t = 0; t < RY_ARRAY_SIZE(tables); t++)
		for (const struct cli_command *c = tables[t]; c->name; c++)
			if (strncmp(c->name, prefix, plen) == 0)
				fprintf(f, "  %-16s %s\n", c->name, c->help);
	if (prefix[0])
		return;
	fprintf(f,
		"\n" PROG " COMMAND --help shows a command's options.\n--state-dir defaults "
		"to " CTL_DEFAULT_STATE_DIR "; durations take ms, s, m, h, d.\n\n"
		"Operations (nodes, deploy, validate, campaigns, signoff, bench, audit, tokens, "
		"...)\n"
		"are `railyard`'s: on this host `railyard --local COMMAND` (or --state-dir DIR)\n"
		"talks to the serving controller over STATE_DIR/api.sock. The old spellings\n"
		"here (" PROG
		" nodes, bench run, token create, ...) still run it, saying so.\n\n" RY_EXIT_HELP);
}

int cli_bad(const char *what, const char *value)
{
	char *safe = util_escape(value ? value : "", false);

	fprintf(stderr, PROG ": invalid %s '%s'\n", what, safe ? safe : "");
	free(safe);
	return 2;
}

int cli_parse_ms(const char *what, const char *s, int64_t *ret)
{
	if (util_parse_duration_ms(s, ret) < 0 || *ret <= 0 || *ret > INT32_MAX)
		return cli_bad(what, s);
	return 0;
}

int cli_positionals(const struct cli_command *cmd, int argc, char **argv, int n)
{
	if (argc - optind == n)
		return 0;
	if (argc - optind > n) {
		fprintf(stderr, PROG " %s: unexpected argument '%s'\n", cmd->name,
			argv[optind + n]);
		return cli_usage(cmd, stderr);
	}
	fprintf(stderr, PROG " %s: missing argument\n", cmd->name);
	return cli_usage(cmd, stderr);
}

int cli_open_state(const char *dir, bool server, struct ctl_state **ret)
{
	char err[512] = "";
	int r = ctl_state_open(dir, server, ret, err, sizeof(err));

	if (r < 0)
		log_error("%s", err[0] ? err : ry_strerror(r));
	return r;
}

void cli_error(const struct ctl_error *e)
{
	ctl_error_print(e, PROG, stderr);
}

void cli_format_time(int64_t unix_ms, char *buf, size_t len)
{
	time_t t = (time_t)(unix_ms / 1000);
	struct tm tm;

	if (unix_ms <= 0) {
		snprintf(buf, len, "-");
		return;
	}
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int cli_print_json(FILE *f, const void *json)
{
	char *s = json_dumps(json, JSON_INDENT(2));

	if (!s)
		return 1;
	fprintf(f, "%s\n", s);
	free(s);
	return 0;
}

/* The command named by argv[0] (and argv[1] for a group: "bench run"). *ret_words: 1 or 2. */
static const struct cli_command *find(int argc, char **argv, int *ret_words, bool *ret_group)
{
	*ret_group = false;
	for (size_t t = 0; t < RY_ARRAY_SIZE(tables); t++) {
		for (const struct cli_command *c = tables[t]; c->name; c++) {
			size_t len = strlen(argv[0]);

			if (strcmp(c->name, argv[0]) == 0) {
				*ret_words = 1;
				return c;
			}
			if (strncmp(c->name, argv[0], len) == 0 && c->name[len] == ' ') {
				*ret_group = true;
				if (argc > 1 && strcmp(c->name + len + 1, argv[1]) == 0) {
					*ret_words = 2;
					return c;
				}
			}
		}
	}
	return NULL;
}

int cli_main(int argc, char **argv)
{
	const struct cli_command *cmd;
	enum log_level level;
	bool group;
	int words;

	log_set_ident(PROG);
	argc--;
	argv++;
	/* Global options come before the command. */
	while (argc > 0 && strncmp(argv[0], "--log-level", 11) == 0 &&
	       (argv[0][11] == '=' || argv[0][11] == '\0')) {
		const char *v = argv[0][11] == '=' ? argv[0] + 12 : (argc > 1 ? argv[1] : NULL);
		int used = argv[0][11] == '=' ? 1 : 2;

		if (log_level_parse(v, &level) < 0)
			return cli_bad("--log-level", v);
		log_set_level(level);
		argc -= used;
		argv += used;
	}
	if (argc < 1) {
		usage_all("", stderr);
		return 2;
	}
	if (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0 ||
	    strcmp(argv[0], "help") == 0) {
		usage_all("", stdout);
		return 0;
	}
	cmd = find(argc, argv, &words, &group);
	if (!cmd && (words = cli_alias_run(argc, argv)) >= 0)
		return words;
	if (!cmd) {
		char prefix[64];
		bool help =
			argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);

		if (group) {
			/* "bench" alone, "bench --help", "bench frobnicate". */
			snprintf(prefix, sizeof(prefix), "%s ", argv[0]);
			if (argc > 1 && !help) {
				char *safe = util_escape(argv[1], false);

				fprintf(stderr, PROG ": unknown command '%s %s'\n", argv[0],
					safe ? safe : "");
				free(safe);
			}
			usage_all(prefix, help ? stdout : stderr);
			return help ? 0 : 2;
		}
		{
			char *safe = util_escape(argv[0], false);

			fprintf(stderr, PROG ": unknown command '%s'\n", safe ? safe : "");
			free(safe);
		}
		usage_all("", stderr);
		return 2;
	}
	/* The command parses the rest; argv[0] stays its name for getopt's messages. */
	argc -= words - 1;
	argv += words - 1;
	optind = 1;
	opterr = 1;
	return cmd->run(cmd, argc, argv);
}

int cli_simple_opts(const struct cli_command *cmd, int argc, char **argv, const char **state_dir,
		    bool *json, bool *results, bool *no_wait, int n)
{
	enum { OPT_STATE_DIR = 900, OPT_JSON, OPT_RESULTS, OPT_NO_WAIT };
	static const struct option opts[] = {
		{"state-dir", required_argument, NULL, OPT_STATE_DIR},
		{"json", no_argument, NULL, OPT_JSON},
		{"results", no_argument, NULL, OPT_RESULTS},
		{"no-wait", no_argument, NULL, OPT_NO_WAIT},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == OPT_STATE_DIR)
			*state_dir = optarg;
		else if (c == OPT_JSON && json)
			*json = true;
		else if (c == OPT_RESULTS && results)
			*results = true;
		else if (c == OPT_NO_WAIT && no_wait)
			*no_wait = true;
		else if (c == 'h')
			return cli_usage(cmd, stdout);
		else
			return cli_usage(cmd, stderr);
	}
	return cli_positionals(cmd, argc, argv, n);
}
