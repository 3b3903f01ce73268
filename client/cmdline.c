/* The CLI's option helpers: every command's getopt table merged with the global options, usage
 * lines, positionals, numbers, files. */
#include "client/rc.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <stdlib.h>
#include <string.h>

enum { OPT_URL = 3000, OPT_TOKEN, OPT_CA, OPT_PROFILE, OPT_JSON, OPT_LOCAL, OPT_STATE_DIR };

/* The most options one command may have, globals included. */
#define OPTS_MAX 48

const struct option rc_global_options[] = {
	{"url", required_argument, NULL, OPT_URL},
	{"token", required_argument, NULL, OPT_TOKEN},
	{"ca", required_argument, NULL, OPT_CA},
	{"profile", required_argument, NULL, OPT_PROFILE},
	{"json", no_argument, NULL, OPT_JSON},
	{"local", no_argument, NULL, OPT_LOCAL},
	{"state-dir", required_argument, NULL, OPT_STATE_DIR},
	{"help", no_argument, NULL, 'h'},
	{0},
};

/* --token -: the token from the first line of stdin (it then shows in no process listing). */
static int token_from_stdin(struct rc *rc)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, stdin);

	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	if (n <= 0) {
		free(line);
		return rc_bad("--token - (no token on stdin)", "");
	}
	if (rc->token_buf) {
		explicit_bzero(rc->token_buf, strlen(rc->token_buf));
		free(rc->token_buf);
	}
	rc->token = rc->token_buf = line;
	return 0;
}

int rc_getopt(struct rc *rc, int argc, char **argv, const struct option *own)
{
	struct option all[OPTS_MAX];
	size_t n = 0;
	int c;

	for (; own && own[n].name && n < OPTS_MAX - 8; n++)
		all[n] = own[n];
	for (size_t i = 0; rc_global_options[i].name; i++)
		all[n++] = rc_global_options[i];
	all[n] = (struct option){0};
	for (;;) {
		/* "+": the options of main() stop at the command's name. */
		c = getopt_long(argc, argv, own ? "h" : "+h", all, NULL);
		switch (c) {
		case OPT_URL:
			rc->url = optarg;
			break;
		case OPT_TOKEN:
			if (strcmp(optarg, "-") == 0) {
				if (token_from_stdin(rc) != 0)
					return '?';
			} else {
				rc->token = optarg;
			}
			break;
		case OPT_CA:
			rc->ca = optarg;
			break;
		case OPT_PROFILE:
			rc->profile = optarg;
			break;
		case OPT_JSON:
			rc->json = true;
			break;
		case OPT_LOCAL:
			rc->local = true;
			break;
		case OPT_STATE_DIR:
			rc->local = true;
			rc->state_dir = optarg;
			break;
		default:
			return c;
		}
	}
}

int rc_usage(const struct rc_command *cmd, int c)
{
	FILE *f = c == 'h' ? stdout : stderr;

	fprintf(f, "usage: " RC_PROG " %s%s%s\n  %s\n", cmd->name, cmd->synopsis[0] ? " " : "",
		cmd->synopsis, cmd->help);
	fprintf(f, "Every command takes --json and the global options (" RC_PROG " --help).\n");
	return c == 'h' ? RC_HELP : RC_USAGE;
}

int rc_bad(const char *what, const char *value)
{
	util_fprintf_safe(stderr, RC_PROG ": invalid %s '%s'\n", what, value ? value : "");
	return RC_USAGE;
}

int rc_positionals(const struct rc_command *cmd, int argc, char **argv, int n, bool up_to)
{
	int left = argc - optind;

	if (left == n || (up_to && left < n))
		return 0;
	if (left > n)
		util_fprintf_safe(stderr, RC_PROG " %s: unexpected argument '%s'\n", cmd->name,
				  argv[optind + n]);
	else
		fprintf(stderr, RC_PROG " %s: missing argument\n", cmd->name);
	return rc_usage(cmd, '?');
}

int rc_parse_int(const char *what, const char *s, int64_t min, int64_t max, int64_t *ret)
{
	char *end;
	long long v = strtoll(s, &end, 10);

	if (!s[0] || *end || v < min || v > max)
		return rc_bad(what, s);
	*ret = v;
	return 0;
}

int rc_parse_duration(const char *what, const char *s, int64_t min_ms, int64_t max_ms,
		      int64_t *ret_ms)
{
	size_t n = strlen(s);
	int64_t v;

	/* A unit always: "--pause 2" was milliseconds in one spelling and seconds in another. A
	 * bare number is read as seconds, as railyard-controller did, and said. */
	if (n && s[n - 1] >= '0' && s[n - 1] <= '9' && util_parse_duration_ms(s, &v) == 0)
		util_fprintf_safe(stderr,
				  RC_PROG ": %s %s: a duration takes a unit (%ss); read as "
					  "seconds\n",
				  what, s, s);
	if (!n || util_parse_duration_ms(s, &v) < 0 || v < min_ms || v > max_ms)
		return rc_bad(what, s);
	*ret_ms = v;
	return 0;
}

int rc_id_path(char *buf, size_t len, const char *prefix, const char *id, const char *suffix)
{
	char *e = httpc_escape(id);
	size_t n = e ? (size_t)snprintf(buf, len, "%s%s%s", prefix, e, suffix) : len;

	free(e);
	return n >= len ? rc_bad("id", id) : 0;
}

int rc_print_list(const json_t *items)
{
	json_t *doc = json_pack("{s:O, s:n}", "items", items, "next_cursor");
	int r = doc ? rc_print_json(stdout, doc) : RC_FAILED;

	json_decref(doc);
	return r;
}

int rc_read_file(const char *what, const char *path, size_t max, char **ret_text)
{
	size_t len = 0;
	int r = fs_read_file(path, max, ret_text, &len);

	if (r < 0) {
		util_fprintf_safe(stderr, RC_PROG ": %s: %s: %s\n", what, path, ry_strerror(r));
		return RC_FAILED;
	}
	if (strlen(*ret_text) != len) {
		util_fprintf_safe(stderr, RC_PROG ": %s: %s: holds a NUL byte\n", what, path);
		free(*ret_text);
		*ret_text = NULL;
		return RC_FAILED;
	}
	return 0;
}
