/* railyard-controller api-token create: the REST API's first admin token, made on the
 * controller's host. While a controller serves the state directory it runs `railyard --local
 * token create` (one writer); with none serving it writes the database itself under the serve
 * lock (the first admin token is made before the first serve). Listing
 * and revoking are `railyard token list|revoke`. A token is printed once, when it is made; the
 * store keeps only a hash of its secret. Offline, the tokens service does the work (tokens.h). */
#include "controller/api/authz.h"
#include "controller/cli/cli.h"
#include "controller/service.h"
#include "controller/state.h"
#include "controller/tokens.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "railyard-controller"
#define CLI  "railyard"
/* Longest --ttl: ten years (a token that should live longer is one that never expires). */
#define API_TTL_MAX_MS (3650LL * 86400 * 1000)
/* Who the audit log names for these commands with no controller serving: the host's
 * administrator (through the serving controller: "local:uid N"). */
#define ACTOR "admin"

#define JSTR(o, k) json_string_value(json_object_get((o), (k)))

enum { OPT_STATE_DIR = 900, OPT_JSON, OPT_NAME, OPT_ROLE, OPT_CLUSTERS, OPT_TTL };

/* "a,b" into a JSON array (*ret a new reference): each name valid, none twice, at most
 * CTL_API_CLUSTERS_MAX. 0, or 2 with the reason on stderr (1: out of memory). */
static int parse_clusters(const char *list, json_t **ret)
{
	json_t *arr = json_array();
	char *copy = strdup(list), *save = NULL, *name;
	const char *p;
	int rc = 2;
	size_t i;

	if (!arr || !copy) {
		log_error("out of memory");
		rc = 1;
		goto out;
	}
	/* strtok_r would skip the empty name of "a,,b" or "a,": look for them first. */
	for (p = list; *p; p++)
		if (*p == ',' && (p == list || p[1] == ',' || p[1] == '\0'))
			break;
	if (!*list || *p) {
		cli_bad("--clusters (an empty cluster name)", list);
		goto out;
	}
	for (name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		if (!ctl_valid_cluster_name(name)) {
			cli_bad("cluster name in --clusters (1-64 letters, digits, '.', '_' "
				"or '-', starting with a letter or digit)",
				name);
			goto out;
		}
		for (i = 0; i < json_array_size(arr); i++) {
			if (strcmp(json_string_value(json_array_get(arr, i)), name) == 0) {
				cli_bad("--clusters (a cluster named twice)", name);
				goto out;
			}
		}
		if (json_array_size(arr) == CTL_API_CLUSTERS_MAX) {
			fprintf(stderr, PROG ": invalid --clusters: more than %d clusters\n",
				CTL_API_CLUSTERS_MAX);
			goto out;
		}
		json_array_append_new(arr, json_string(name));
	}
	*ret = arr;
	arr = NULL;
	rc = 0;
out:
	free(copy);
	json_decref(arr);
	return rc;
}

static void print_time(const char *label, int64_t ms, const char *unset)
{
	char when[64];

	cli_format_time(ms, when, sizeof(when));
	printf("%s: %s\n", label, ms ? when : unset);
}

static int cmd_create(const struct cli_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"name", required_argument, NULL, OPT_NAME},
		{"role", required_argument, NULL, OPT_ROLE},
		{"clusters", required_argument, NULL, OPT_CLUSTERS},
		{"ttl", required_argument, NULL, OPT_TTL},
		{"state-dir", required_argument, NULL, OPT_STATE_DIR},
		{"json", no_argument, NULL, OPT_JSON},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	const char *state_dir = CTL_DEFAULT_STATE_DIR, *name = NULL, *role_arg = NULL;
	const char *clusters_arg = NULL, *scope;
	json_t *clusters = NULL, *doc = NULL;
	int64_t ttl_ms = 0, now = util_now_unix_ms();
	struct ctl_state *st = NULL;
	struct ctl_error err;
	enum api_role role;
	bool json = false;
	int c, r, rc = 1, lock_fd = -1;
	long holder = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_NAME:
			name = optarg;
			break;
		case OPT_ROLE:
			role_arg = optarg;
			break;
		case OPT_CLUSTERS:
			clusters_arg = optarg;
			break;
		case OPT_TTL:
			if (util_parse_duration_ms(optarg, &ttl_ms) < 0 || ttl_ms <= 0 ||
			    ttl_ms > API_TTL_MAX_MS)
				return cli_bad("--ttl (a duration above 0 and up to 3650d)",
					       optarg);
			break;
		case OPT_STATE_DIR:
			state_dir = optarg;
			break;
		case OPT_JSON:
			json = true;
			break;
		case 'h':
			return cli_usage(cmd, stdout);
		default:
			return cli_usage(cmd, stderr);
		}
	}
	if ((r = cli_positionals(cmd, argc, argv, 0)) != 0)
		return r;
	if (!name)
		return cli_bad("--name", "(missing)");
	if (!ctl_api_token_name_ok(name))
		return cli_bad("--name (1-64 letters, digits, '.', '_' or '-'; not 16 hex digits)",
			       name);
	if (!role_arg)
		return cli_bad("--role", "(missing)");
	if (api_role_parse(role_arg, &role) < 0)
		return cli_bad("--role (admin, integrator, operator or viewer)", role_arg);
	if (clusters_arg && (r = parse_clusters(clusters_arg, &clusters)) != 0)
		return r;

	/* One writer: a serving controller makes the token itself (railyard over its api.sock);
	 * with none, the serve lock is held while the database is written, so none starts. */
	r = fs_lock_dir(state_dir, CTL_SERVE_LOCK, &lock_fd, &holder);
	if (r == -RY_E_LOCKED) {
		json_decref(clusters);
		fprintf(stderr,
			PROG ": %s is served (pid %ld): the token is made through it: " CLI
			     " --local token create\n",
			state_dir, holder);
		return cli_run_railyard(state_dir, "token create", argc - 1, argv + 1);
	}
	ctl_error_init(&err);
	if (r < 0) {
		log_error("api-token create: cannot lock %s/%s: %s", state_dir, CTL_SERVE_LOCK,
			  ry_strerror(r));
		goto out;
	}
	if (cli_open_state(state_dir, false, &st) < 0)
		goto out;
	r = ctl_api_token_create(st->store,
				 &(struct ctl_api_token_request){.name = name,
								 .role = api_role_name(role),
								 .clusters = clusters,
								 .ttl_ms = ttl_ms,
								 .actor = ACTOR,
								 .now_ms = now},
				 &doc, &err);
	if (r < 0 && strcmp(err.code, CTL_ERR_CONFLICT) == 0) {
		log_error("api-token create: a token named '%s' exists already (revoke it first, "
			  "or choose another name)",
			  name);
		goto out;
	}
	if (r < 0) {
		log_error("api-token create: %s", err.message);
		rc = strcmp(err.code, CTL_ERR_INVALID) == 0 ? 2 : 1;
		goto out;
	}
	/* The document the REST API answers with (the secret once, then never again). */
	if (json) {
		if ((rc = cli_print_json(stdout, doc)) != 0)
			goto out;
	} else {
		scope = clusters_arg ? clusters_arg : "all";
		printf("token: %s\nid: %s\nname: %s\nrole: %s\nclusters: %s\n", JSTR(doc, "token"),
		       JSTR(doc, "id"), JSTR(doc, "name"), JSTR(doc, "role"), scope);
		print_time("expires", ttl_ms ? now + ttl_ms : 0, "never");
	}
	fflush(stdout);
	fprintf(stderr,
		PROG ": this token is shown only once; store it now. It cannot be recovered, "
		     "only revoked (" CLI " token revoke %s).\n",
		JSTR(doc, "id"));
	rc = 0;
out:
	if (JSTR(doc, "token"))
		explicit_bzero((char *)JSTR(doc, "token"), strlen(JSTR(doc, "token")));
	json_decref(doc);
	json_decref(clusters);
	ctl_state_free(st);
	if (lock_fd >= 0)
		close(lock_fd);
	ctl_error_done(&err);
	return rc;
}

const struct cli_command cli_apitoken_commands[] = {
	{"api-token create",
	 "--name NAME --role admin|integrator|operator|viewer [--clusters A,B] [--ttl 30d]\n"
	 "        [--json] [--state-dir D]\n"
	 "  (no --clusters: every cluster; no --ttl: never expires)",
	 "make a REST API token (shown once)", cmd_create},
	{0},
};
