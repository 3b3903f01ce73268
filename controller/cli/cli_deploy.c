/* railyard-controller deploy and deployments: the front end of the deployment service. deploy
 * reads the playbook, has the serving controller create the deployment (its REST API over
 * api.sock), then follows it in the database as the controller runs it. */
#include "controller/cli/cli.h"
#include "common/httpc/httpc.h"
#include "controller/rollout/deploy.h"
#include "controller/state.h"
#include "controller/store/store.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OPT_STATE_DIR = 1000, OPT_JSON };

#define JSTR(o, k) json_string_value(json_object_get((o), (k)))
#define JINT(o, k) ((int)json_integer_value(json_object_get((o), (k))))

/* Messages come from the nodes: printed escaped (one line, no terminal control). */
static void print_node_line(FILE *out, const json_t *n)
{
	const char *msg = JSTR(n, "message");

	util_fprintf_safe(out,
			  "  %-14s batch %-2d %-11s ok %d, changed %d, failed %d, skipped %d%s%s\n",
			  JSTR(n, "hostname"), JINT(n, "batch"), JSTR(n, "state"), JINT(n, "ok"),
			  JINT(n, "changed"), JINT(n, "failed"), JINT(n, "skipped"),
			  msg ? "  " : "", msg ? msg : "");
}

static bool node_finished(const json_t *n)
{
	const char *st = JSTR(n, "state");

	return strcmp(st, "waiting") != 0 && strcmp(st, "sent") != 0;
}

/* Follow a deployment until it ends or timeout_ms passes, printing each node as it finishes.
 * Returns the exit code: 0 succeeded, 1 otherwise. */
int cli_deploy_follow(struct store *store, const char *id, int64_t timeout_ms, FILE *out)
{
	int64_t deadline = util_now_mono_ms() + timeout_ms;
	char *seen = NULL;
	size_t seen_n = 0;
	int rc = 1;

	for (;;) {
		struct ctl_error err;
		json_t *d = NULL, *nodes, *n;
		size_t i;
		bool done;

		ctl_error_init(&err);
		if (ctl_deploy_get(store, id, CTL_DEPLOY_NODES, &d, &err) < 0) {
			cli_error(&err);
			ctl_error_done(&err);
			break;
		}
		nodes = json_object_get(d, "nodes");
		if (!seen) {
			seen_n = json_array_size(nodes);
			seen = calloc(seen_n + 1, 1);
		}
		json_array_foreach(nodes, i, n)
		{
			if (seen && i < seen_n && !seen[i] && node_finished(n)) {
				seen[i] = 1;
				print_node_line(out, n);
			}
		}
		done = ctl_deploy_state_final(JSTR(d, "state"));
		if (done) {
			const char *reason = JSTR(d, "reason");

			util_fprintf_safe(out, "deployment %s %s%s%s\n", id, JSTR(d, "state"),
					  reason ? ": " : "", reason ? reason : "");
			rc = strcmp(JSTR(d, "state"), "succeeded") == 0 ? 0 : 1;
		}
		json_decref(d);
		if (done)
			break;
		if (util_now_mono_ms() >= deadline) {
			fprintf(out,
				"deployment %s still running after %lld s (the controller "
				"carries on; follow it with `deployments %s`)\n",
				id, (long long)(timeout_ms / 1000), id);
			break;
		}
		fflush(out);
		usleep(200 * 1000);
	}
	free(seen);
	return rc;
}

/* Every step's diff, as `deploy --diff` shows them: escaped, keeping their lines. */
static void print_diffs(struct store *store, const char *id, FILE *out)
{
	struct ctl_error err;
	json_t *d = NULL, *n, *s;
	size_t i, k;

	ctl_error_init(&err);
	if (ctl_deploy_get(store, id, CTL_DEPLOY_STEPS, &d, &err) < 0) {
		cli_error(&err);
		ctl_error_done(&err);
		return;
	}
	json_array_foreach(json_object_get(d, "nodes"), i, n)
	{
		json_array_foreach(json_object_get(n, "steps"), k, s)
		{
			char *diff;

			if (!JSTR(s, "diff")[0])
				continue;
			diff = util_escape(JSTR(s, "diff"), true);
			util_fprintf_safe(out, "--- %s: %s (%s)\n", JSTR(n, "node_id"),
					  JSTR(s, "name"), JSTR(s, "status"));
			fputs(diff ? diff : "(out of memory)\n", out);
			free(diff);
		}
	}
	json_decref(d);
}

static int cmd_deploy(const struct cli_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"state-dir", required_argument, NULL, OPT_STATE_DIR},
		{"cluster", required_argument, NULL, 'c'},
		{"playbook", required_argument, NULL, 'p'},
		{"check", no_argument, NULL, 'k'},
		{"batch", required_argument, NULL, 'b'},
		{"max-fail", required_argument, NULL, 'm'},
		{"canary", required_argument, NULL, 'y'},
		{"pause", required_argument, NULL, 'P'},
		{"no-wait", no_argument, NULL, 'W'},
		{"diff", no_argument, NULL, 'D'},
		{"timeout", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	struct ctl_deploy_request rq = {.canary = -1, .pause_ms = -1};
	const char *state_dir = CTL_DEFAULT_STATE_DIR, *playbook = NULL, *id;
	int64_t timeout_ms = 30 * 60 * 1000;
	bool no_wait = false, diffs = false;
	struct ctl_state *st = NULL;
	struct httpc *api = NULL;
	struct ctl_error err;
	json_t *body = NULL, *made = NULL, *sk;
	char *text = NULL, *end;
	size_t len = 0, i;
	int c, r, rc = 1;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_STATE_DIR:
			state_dir = optarg;
			break;
		case 'c':
			rq.cluster = optarg;
			break;
		case 'p':
			playbook = optarg;
			break;
		case 'k':
			rq.check = true;
			break;
		case 'b':
			rq.batch = optarg;
			break;
		case 'm':
			rq.max_fail = optarg;
			break;
		case 'y':
			rq.canary = (int)strtol(optarg, &end, 10);
			if (*end || rq.canary < 0 || rq.canary > 100000)
				return cli_bad("--canary", optarg);
			break;
		case 'P':
			if (util_parse_duration_ms(optarg, &rq.pause_ms) < 0 ||
			    rq.pause_ms > 86400000)
				return cli_bad("--pause", optarg);
			break;
		case 'W':
			no_wait = true;
			break;
		case 'D':
			diffs = true;
			break;
		case 'o':
			if (cli_parse_ms("--timeout", optarg, &timeout_ms))
				return 2;
			break;
		case 'h':
			return cli_usage(cmd, stdout);
		default:
			return cli_usage(cmd, stderr);
		}
	}
	if ((r = cli_positionals(cmd, argc, argv, 0)) != 0)
		return r;
	if (!rq.cluster || !playbook)
		return cli_bad("deploy", "(--cluster and --playbook are required)");
	if (cli_read_playbook("deploy", playbook, &text, &len))
		return 1;
	ctl_error_init(&err);
	/* The serving controller creates it (one writer); following it reads the database. */
	if (cli_api_need("deploy", state_dir, &api) != 0 ||
	    (!no_wait && cli_open_state(state_dir, false, &st) < 0))
		goto out;
	body = json_pack("{s:s, s:s%, s:b}", "cluster", rq.cluster, "playbook", text, len, "check",
			 rq.check);
	if (!body) {
		/* jansson takes UTF-8 only: anything else cannot be a playbook either. */
		log_error("deploy: %s: not UTF-8 text", playbook);
		goto out;
	}
	if ((rq.batch && json_object_set_new(body, "batch", json_string(rq.batch)) < 0) ||
	    (rq.max_fail && json_object_set_new(body, "max_fail", json_string(rq.max_fail)) < 0) ||
	    (rq.canary >= 0 && json_object_set_new(body, "canary", json_integer(rq.canary)) < 0) ||
	    (rq.pause_ms >= 0 &&
	     json_object_set_new(body, "pause_ms", json_integer(rq.pause_ms)) < 0)) {
		log_error("deploy: out of memory");
		goto out;
	}
	r = cli_api_call(api, "POST", "/api/v1/deployments", body, playbook, &made, &err);
	if (r < 0) {
		cli_error(&err);
		rc = strcmp(err.code, CTL_ERR_INVALID) == 0 ? 2 : 1;
		goto out;
	}
	id = JSTR(made, "id");
	json_array_foreach(json_object_get(made, "skipped"), i, sk) util_fprintf_safe(
		stdout, "  %-14s not targeted: %s\n", JSTR(sk, "hostname"), JSTR(sk, "reason"));
	util_fprintf_safe(stdout, "deployment %s: %s %s on %zu nodes of %s in %lld batches%s\n", id,
			  JSTR(made, "playbook"), JSTR(made, "version"),
			  json_array_size(json_object_get(made, "nodes")), rq.cluster,
			  (long long)json_integer_value(json_object_get(made, "batches")),
			  rq.check ? " (check mode: nothing will change)" : "");
	if (no_wait) {
		rc = 0;
		goto out;
	}
	fflush(stdout);
	rc = cli_deploy_follow(st->store, id, timeout_ms, stdout);
	if (diffs)
		print_diffs(st->store, id, stdout);
out:
	json_decref(body);
	json_decref(made);
	ctl_error_done(&err);
	ctl_state_free(st);
	httpc_free(api);
	free(text);
	return rc;
}

static int cmd_deployments(const struct cli_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"state-dir", required_argument, NULL, OPT_STATE_DIR},
		{"json", no_argument, NULL, OPT_JSON},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	const char *state_dir = CTL_DEFAULT_STATE_DIR, *id = NULL;
	struct ctl_state *st = NULL;
	struct ctl_error err;
	json_t *doc = NULL, *n;
	bool json = false;
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
		case 'h':
			return cli_usage(cmd, stdout);
		default:
			return cli_usage(cmd, stderr);
		}
	}
	if (argc - optind > 1)
		return cli_positionals(cmd, argc, argv, 1);
	id = optind < argc ? argv[optind] : NULL;
	ctl_error_init(&err);
	if (cli_open_state(state_dir, false, &st) < 0)
		return 1;
	r = id ? ctl_deploy_get(st->store, id, json ? CTL_DEPLOY_STEPS : CTL_DEPLOY_NODES, &doc,
				&err)
	       : ctl_deploy_list(st->store, 50, &doc, &err);
	if (r < 0) {
		cli_error(&err);
		goto out;
	}
	if (json) {
		rc = cli_print_json(stdout, doc);
		goto out;
	}
	if (id) {
		const char *reason = JSTR(doc, "reason");

		util_fprintf_safe(stdout, "%s  %s %s on %s  %s%s%s%s\n", id, JSTR(doc, "playbook"),
				  JSTR(doc, "version"), JSTR(doc, "cluster"), JSTR(doc, "state"),
				  json_is_true(json_object_get(doc, "check_mode")) ? " (check)"
										   : "",
				  reason ? ": " : "", reason ? reason : "");
		json_array_foreach(json_object_get(doc, "nodes"), i, n) print_node_line(stdout, n);
	} else {
		printf("%-11s %-16s %-10s %-10s %-6s %s\n", "ID", "PLAYBOOK", "CLUSTER", "STATE",
		       "MODE", "REASON");
		json_array_foreach(doc, i, n)
		{
			const char *reason = JSTR(n, "reason");

			util_fprintf_safe(
				stdout, "%-11s %-16s %-10s %-10s %-6s %s\n", JSTR(n, "id"),
				JSTR(n, "playbook"), JSTR(n, "cluster"), JSTR(n, "state"),
				json_is_true(json_object_get(n, "check_mode")) ? "check" : "apply",
				reason ? reason : "");
		}
	}
	rc = 0;
out:
	json_decref(doc);
	ctl_error_done(&err);
	ctl_state_free(st);
	return rc;
}

const struct cli_command cli_deploy_commands[] = {
	{"deploy",
	 "--cluster C --playbook FILE [--check] [--batch N|P%] [--max-fail N|P%]\n"
	 "        [--canary N] [--pause 30s] [--no-wait] [--diff] [--timeout 30m] [--state-dir D]",
	 "deploy a playbook to a cluster's nodes (check mode: diffs only) and follow it",
	 cmd_deploy},
	{"deployments", "[ID] [--json] [--state-dir D]",
	 "list deployments, or show one with its nodes (--json: and steps and diffs)",
	 cmd_deployments},
	{0},
};
