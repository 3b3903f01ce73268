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

/* One line per option, whichever command names it in its synopsis (a flag means one thing in
 * every command: one vocabulary). Durations take a unit: 500ms, 2s, 5m, 1h, 1d. */
static const struct util_option_help option_help[] = {
	{"--allow-missing", "run with the nodes there are when some of the playbook's are missing"},
	{"--apply", "apply the configuration before the campaign (default: check it only)"},
	{"--baseline", "the sign-off to compare with (its ID)"},
	{"--batch", "nodes per batch, a number or a percentage (N or P%)"},
	{"--bidir", "traffic both ways at once"},
	{"--ca", "the controller's CA certificate (PEM; default: the system's store)"},
	{"--canary", "nodes of the first batch, which must all succeed before the rest start"},
	{"--check", "check mode: compute the diffs, change nothing"},
	{"--check-data", "check the payload of every message received"},
	{"--cluster", "the cluster (its name)"},
	{"--controller", "HOST:PORT the agents dial, printed in the enroll command"},
	{"--device", "the RDMA device (e.g. mlx5_0; default: the node's first)"},
	{"--diff", "print every step's diff when it ends"},
	{"--dir", "the directory the files are written into"},
	{"--dry-run", "print the plan (rounds, pairs) and start nothing"},
	{"--duration", "measure for this long instead of --iters (a duration: 10s)"},
	{"--follow", "follow it until it ends, a line per change"},
	{"--from", "the client node (ID or host name)"},
	{"--gid-index", "the GID index (RoCE) on both sides"},
	{"--ib-port", "the device port on both sides"},
	{"--iters", "iterations per message size"},
	{"--backend", "a collective's library: mpi (Open MPI) or nccl"},
	{"--ops", "a collective's operations: allreduce,allgather,reducescatter,alltoall,sendrecv"},
	{"--min-bytes", "a collective's smallest size (bytes)"},
	{"--max-bytes", "a collective's largest size (bytes)"},
	{"--ranks-per-node", "a collective's ranks on each node (one per GPU on H200 nodes)"},
	{"--warmup", "a collective's untimed iterations per size"},
	{"--job-timeout", "maintenance: how long a drained node's running jobs are waited for (a "
			  "duration: 1h); then it is held out"},
	{"--kind", "lat (latency percentiles), bw (bandwidth) or collective (over --nodes)"},
	{"--limit", "at most this many entries"},
	{"--maintenance", "roll it in batches drained from the workload manager, validated and "
			  "resumed (docs/operations.md, Maintenance with Slurm)"},
	{"--max-fail", "failed nodes (N or P%) after which the deployment stops"},
	{"--min-in-service", "maintenance: the fraction of the nodes that stays in service (0.9 or "
			     "90%; default 0.5)"},
	{"--name", "the name (of the profile, of the token)"},
	{"--no-wait", "return once it is started, without following it"},
	{"--node", "render for this node (ID or host name), with its facts"},
	{"--nodes", "the nodes it acts on: a selector of host names or ids, globs, ! to exclude "
		    "(default: the cluster's); bench run --kind collective: A,B,C in rank order, "
		    "the first launches"},
	{"--once", "print what runs now, then exit"},
	{"--op", "send, write or read (verbs)"},
	{"--pause", "the wait between batches (a duration: 30s)"},
	{"--playbook", "the playbook file (YAML)"},
	{"--qps", "queue pairs (verbs)"},
	{"--quick", "fewer iterations and rounds: a smoke test"},
	{"--rdma-cm", "connect through RDMA CM"},
	{"--report", "print the signed report itself (the bytes the signature covers)"},
	{"--results", "with the result rows"},
	{"--role", "admin, integrator, operator or viewer"},
	{"--clusters", "the clusters a token may act on, a,b (default: every cluster)"},
	{"--seed", "the seed of the pairing (the same seed, the same plan)"},
	{"--server-address", "the address the client dials (default: the server node's)"},
	{"--sign", "maintenance: sign each batch's campaign"},
	{"--signoff", "sign a report when the campaign passes, and print it"},
	{"--size", "message size in bytes"},
	{"--sl", "the InfiniBand service level (0-15)"},
	{"--state", "only nodes in this state (online, offline, revoked, ...)"},
	{"--sweep", "every message size from 2 bytes up to --size"},
	{"--tclass", "the traffic class (RoCE)"},
	{"--tests", "only these of the playbook's tests, a,b"},
	{"--timeout", "give up following after this long (a duration: 30m)"},
	{"--to", "the server node (ID or host name)"},
	{"--token", "the API token; - reads it from stdin"},
	{"--tolerance-bw", "bandwidth drop allowed against the baseline, in percent"},
	{"--tolerance-lat", "latency rise allowed against the baseline, in percent"},
	{"--transport", "tcp or verbs"},
	{"--ttl", "how long it stays valid (a duration: 1h, 30d)"},
	{"--uses", "how many enrollments it allows"},
};

int rc_usage(const struct rc_command *cmd, int c)
{
	FILE *f = c == 'h' ? stdout : stderr;

	fprintf(f, "usage: " RC_PROG " %s%s%s\n  %s\n", cmd->name, cmd->synopsis[0] ? " " : "",
		cmd->synopsis, cmd->help);
	util_print_options(f, cmd->synopsis, option_help, RY_ARRAY_SIZE(option_help));
	fprintf(f, "  %-18s %s\n", "--json", "print the API's JSON document");
	fprintf(f, "And the global options (--url, --token, --ca, --profile, --local, "
		   "--state-dir: " RC_PROG " --help).\n");
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
