/* railyard: the operator's command line over the controller's REST API. Parses the global
 * options, finds the command in the tables and runs it. */
#include "client/rc.h"
#include "common/util/util.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

const struct rc_command *const rc_tables[] = {
	rc_login_commands,    rc_nodes_commands,   rc_admin_commands, rc_deploy_commands,
	rc_campaign_commands, rc_signoff_commands, rc_bench_commands, rc_tokens_commands,
	rc_wlm_commands,      rc_maint_commands,   rc_watch_commands, rc_completion_commands,
	rc_alias_commands,
};
const size_t rc_tables_count = RY_ARRAY_SIZE(rc_tables);
const size_t rc_tables_listed = RY_ARRAY_SIZE(rc_tables) - 1;

static void usage_all(const char *prefix, FILE *f)
{
	size_t plen = strlen(prefix);

	fprintf(f, "usage: " RC_PROG " [--url URL] [--token T|-] [--ca FILE] [--profile P] "
		   "[--local] [--state-dir DIR] COMMAND [options] [--json]\n\n");
	for (size_t t = 0; t < rc_tables_listed; t++)
		for (const struct rc_command *c = rc_tables[t]; c->name; c++)
			if (strncmp(c->name, prefix, plen) == 0)
				fprintf(f, "  %-24s %s\n", c->name, c->help);
	if (plen)
		return;
	fprintf(f,
		"\n" RC_PROG " COMMAND --help shows a command's options.\n\n"
		"Where to connect: --url, --token (- reads it from stdin), --ca (the controller's\n"
		"ca.crt; without it the system's store), else RAILYARD_URL, RAILYARD_TOKEN,\n"
		"RAILYARD_CA, else the profile `login` saved (--profile, RAILYARD_PROFILE) in\n"
		"$RAILYARD_CONFIG or ~/.config/railyard/config.json. A profile's token goes only "
		"to\n"
		"its own URL. --json prints the API's JSON document.\n\n"
		"On the controller's host: --local talks plain HTTP to STATE_DIR/api.sock (no\n"
		"token, no profile: root or the controller's user is an admin); --state-dir DIR\n"
		"names the state directory and implies --local (default $RAILYARD_STATE_DIR, "
		"else\n" RC_DEFAULT_STATE_DIR
		"). When neither --url, RAILYARD_URL nor a profile names a\n"
		"controller and that directory's api.sock exists, it is used. Global options go\n"
		"before or after the command.\n\n" RY_EXIT_HELP);
}

/* The command named by argv[0] (and argv[1] for a group: "signoff list"). */
static const struct rc_command *find(int argc, char **argv, int *ret_words, bool *ret_group)
{
	size_t len = strlen(argv[0]);

	const struct rc_command *one = NULL;

	*ret_group = false;
	for (size_t t = 0; t < rc_tables_count; t++) {
		for (const struct rc_command *c = rc_tables[t]; c->name; c++) {
			/* "tokens list" before "tokens" (which lists too): two words win. */
			if (strcmp(c->name, argv[0]) == 0 && !one)
				one = c;
			if (strncmp(c->name, argv[0], len) == 0 && c->name[len] == ' ') {
				*ret_group = true;
				if (argc > 1 && strcmp(c->name + len + 1, argv[1]) == 0) {
					*ret_words = 2;
					return c;
				}
			}
		}
	}
	if (one) {
		*ret_group = false;
		*ret_words = 1;
	}
	return one;
}

static int unknown(int argc, char **argv, bool group)
{
	bool help = argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
	char prefix[64];

	if (!group) {
		util_fprintf_safe(stderr, RC_PROG ": unknown command '%s'\n", argv[0]);
		usage_all("", stderr);
		return RC_USAGE;
	}
	/* "signoff" alone, "signoff --help", "signoff frobnicate". */
	if (argc > 1 && !help)
		util_fprintf_safe(stderr, RC_PROG ": unknown command '%s %s'\n", argv[0], argv[1]);
	snprintf(prefix, sizeof(prefix), "%s ", argv[0]);
	usage_all(prefix, help ? stdout : stderr);
	return help ? RC_OK : RC_USAGE;
}

static int run(struct rc *rc, int argc, char **argv)
{
	const struct rc_command *cmd;
	bool group;
	int c, words;

	/* Global options before the command. */
	opterr = 1;
	while ((c = rc_getopt(rc, argc, argv, NULL)) != -1) {
		if (c == 'h') {
			usage_all("", stdout);
			return RC_OK;
		}
		usage_all("", stderr);
		return RC_USAGE;
	}
	argc -= optind;
	argv += optind;
	if (argc < 1) {
		usage_all("", stderr);
		return RC_USAGE;
	}
	if (strcmp(argv[0], "help") == 0) {
		usage_all("", stdout);
		return RC_OK;
	}
	if (!(cmd = find(argc, argv, &words, &group)))
		return unknown(argc, argv, group);
	/* The command parses the rest; argv[0] stays its name for getopt's messages. optind 0
	 * makes glibc start afresh: the "+" (stop at the command) of the global pass goes. */
	argc -= words - 1;
	argv += words - 1;
	optind = 0;
	return cmd->run(rc, cmd, argc, argv);
}

int main(int argc, char **argv)
{
	struct rc rc = {0};
	int code;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, RC_PROG ": cannot initialise libcurl\n");
		return RC_FAILED;
	}
	code = run(&rc, argc, argv);
	if (code == RC_HELP)
		code = RC_OK;
	rc_done(&rc);
	curl_global_cleanup();
	return code;
}
