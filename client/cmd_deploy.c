/* railyard deploy and deployments: a playbook sent to a cluster (POST /api/v1/deployments) and
 * followed until it ends, a line per node as it finishes; deployments listed or shown. */
#include "client/rc.h"
#include "common/util/util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The playbook limit of the API (PB_MAX_SIZE), checked here to say it before sending. */
#define POLL_MS 500

enum {
	OPT_CLUSTER = 900,
	OPT_PLAYBOOK,
	OPT_CHECK,
	OPT_BATCH,
	OPT_MAX_FAIL,
	OPT_CANARY,
	OPT_PAUSE,
	OPT_PAUSE_MS,
	OPT_NO_WAIT,
	OPT_DIFF,
	OPT_TIMEOUT,
	OPT_NODES,
	OPT_MAINTENANCE,
	OPT_MIN_IN_SERVICE,
	OPT_JOB_TIMEOUT,
	OPT_SIGN,
};

static bool node_finished(const json_t *n)
{
	const char *st = rc_str(n, "state", "waiting");

	return strcmp(st, "waiting") != 0 && strcmp(st, "sent") != 0;
}

/* Poll the deployment until it ends, printing each node once as it finishes (on out), with the
 * steps that did not end ok (diffs: and their diffs). 0 with *ret its last document, or the
 * exit code. */
static int follow(struct rc *rc, const char *path, int64_t timeout_ms, bool diffs, FILE *out,
		  json_t **ret)
{
	int64_t deadline = util_now_mono_ms() + timeout_ms;
	char *seen = NULL;
	size_t seen_n = 0;
	int r;

	for (;;) {
		json_t *d = NULL, *n;
		size_t i;

		if ((r = rc_api(rc, "GET", path, NULL, &d)) != 0)
			break;
		if (!seen) {
			seen_n = json_array_size(json_object_get(d, "nodes"));
			if (!(seen = calloc(seen_n + 1, 1))) {
				json_decref(d);
				r = RC_FAILED;
				break;
			}
		}
		json_array_foreach(json_object_get(d, "nodes"), i, n)
		{
			if (i < seen_n && !seen[i] && node_finished(n)) {
				seen[i] = 1;
				rc_print_deploy_node(out, n);
				rc_print_deploy_steps(out, n, diffs);
			}
		}
		fflush(out);
		if (rc_deploy_final(JSTR(d, "state"))) {
			*ret = d;
			break;
		}
		json_decref(d);
		if (util_now_mono_ms() > deadline) {
			util_fprintf_safe(stderr, RC_PROG ": still running after %lld s\n",
					  (long long)(timeout_ms / 1000));
			r = RC_FAILED;
			break;
		}
		usleep(POLL_MS * 1000);
	}
	free(seen);
	return r;
}

struct deploy_args {
	const char *cluster, *playbook, *batch, *max_fail, *nodes, *min_in_service;
	int64_t canary, pause_ms, timeout_ms, job_timeout_ms;
	bool check, no_wait, diff, maintenance, sign;
};

static int parse_deploy(struct rc *rc, const struct rc_command *cmd, int argc, char **argv,
			struct deploy_args *a)
{
	static const struct option opts[] = {
		{"cluster", required_argument, NULL, OPT_CLUSTER},
		{"playbook", required_argument, NULL, OPT_PLAYBOOK},
		{"check", no_argument, NULL, OPT_CHECK},
		{"batch", required_argument, NULL, OPT_BATCH},
		{"max-fail", required_argument, NULL, OPT_MAX_FAIL},
		{"canary", required_argument, NULL, OPT_CANARY},
		{"pause", required_argument, NULL, OPT_PAUSE},
		{"pause-ms", required_argument, NULL, OPT_PAUSE_MS}, /* the old spelling */
		{"no-wait", no_argument, NULL, OPT_NO_WAIT},
		{"diff", no_argument, NULL, OPT_DIFF},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"nodes", required_argument, NULL, OPT_NODES},
		{"maintenance", no_argument, NULL, OPT_MAINTENANCE},
		{"min-in-service", required_argument, NULL, OPT_MIN_IN_SERVICE},
		{"job-timeout", required_argument, NULL, OPT_JOB_TIMEOUT},
		{"sign", no_argument, NULL, OPT_SIGN},
		{0},
	};
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, opts)) != -1) {
		switch (c) {
		case OPT_CLUSTER:
			a->cluster = optarg;
			break;
		case OPT_PLAYBOOK:
			a->playbook = optarg;
			break;
		case OPT_CHECK:
			a->check = true;
			break;
		case OPT_BATCH:
			a->batch = optarg;
			break;
		case OPT_MAX_FAIL:
			a->max_fail = optarg;
			break;
		case OPT_CANARY:
			if ((r = rc_parse_int("--canary", optarg, 0, 100000, &a->canary)) != 0)
				return r;
			break;
		case OPT_PAUSE:
			if ((r = rc_parse_duration("--pause", optarg, 0, 86400000, &a->pause_ms)) !=
			    0)
				return r;
			break;
		case OPT_PAUSE_MS:
			if ((r = rc_parse_int("--pause-ms", optarg, 0, 86400000, &a->pause_ms)) !=
			    0)
				return r;
			break;
		case OPT_DIFF:
			a->diff = true;
			break;
		case OPT_TIMEOUT:
			if ((r = rc_parse_duration("--timeout", optarg, 1000, 7LL * 86400000,
						   &a->timeout_ms)) != 0)
				return r;
			break;
		case OPT_NO_WAIT:
			a->no_wait = true;
			break;
		case OPT_NODES:
			a->nodes = optarg;
			break;
		case OPT_MAINTENANCE:
			a->maintenance = true;
			break;
		case OPT_MIN_IN_SERVICE:
			a->min_in_service = optarg;
			break;
		case OPT_JOB_TIMEOUT:
			if ((r = rc_parse_duration("--job-timeout", optarg, 1000, 7LL * 86400000,
						   &a->job_timeout_ms)) != 0)
				return r;
			break;
		case OPT_SIGN:
			a->sign = true;
			break;
		default:
			return rc_usage(cmd, c);
		}
	}
	if ((r = rc_positionals(cmd, argc, argv, 0, false)) != 0)
		return r;
	if (!a->cluster || !a->playbook)
		return rc_bad("deploy", "(--cluster and --playbook are required)");
	if (!a->maintenance && (a->min_in_service || a->job_timeout_ms > 0 || a->sign))
		return rc_bad("deploy", "(--min-in-service, --job-timeout and --sign go with "
					"--maintenance)");
	if (a->maintenance && (a->check || a->max_fail || a->canary >= 0 || a->pause_ms >= 0))
		return rc_bad("deploy --maintenance",
			      "(--check, --max-fail, --canary and --pause are a deployment's; a "
			      "maintenance stops at the first batch with a failing node)");
	return 0;
}

/* "0.75" or "75%" into a fraction in [0, 1); -1 when malformed. */
double rc_parse_fraction(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s)
		return -1;
	if (strcmp(end, "%") == 0)
		v /= 100;
	else if (*end)
		return -1;
	return v >= 0 && v < 1 ? v : -1;
}

/* The body of POST /api/v1/maintenances from the shared options. */
json_t *rc_maint_body(const char *cluster, const char *mode, const char *scope, const char *batch,
		      const char *min_in_service, int64_t job_timeout_ms, bool sign)
{
	json_t *b = json_pack("{s:s, s:s, s:b}", "cluster", cluster, "mode", mode, "sign", sign);

	if (b && scope)
		json_object_set_new(b, "scope", json_string(scope));
	if (b && batch)
		json_object_set_new(b, "batch", json_string(batch));
	if (b && min_in_service)
		json_object_set_new(b, "min_in_service",
				    json_real(rc_parse_fraction(min_in_service)));
	if (b && job_timeout_ms > 0)
		json_object_set_new(b, "job_timeout_ms", json_integer(job_timeout_ms));
	return b;
}

/* The request's body: what was given, nothing more (the API's defaults stand). */
static json_t *deploy_body(const struct deploy_args *a, const char *text)
{
	json_t *b = json_pack("{s:s, s:s, s:b}", "cluster", a->cluster, "playbook", text, "check",
			      a->check);

	if (b && a->batch)
		json_object_set_new(b, "batch", json_string(a->batch));
	if (b && a->max_fail)
		json_object_set_new(b, "max_fail", json_string(a->max_fail));
	if (b && a->canary >= 0)
		json_object_set_new(b, "canary", json_integer(a->canary));
	if (b && a->pause_ms >= 0)
		json_object_set_new(b, "pause_ms", json_integer(a->pause_ms));
	if (b && a->nodes)
		json_object_set_new(b, "nodes", json_string(a->nodes));
	return b;
}

static int cmd_deploy(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	struct deploy_args a = {.canary = -1, .pause_ms = -1, .timeout_ms = 30LL * 60000};
	json_t *body = NULL, *made = NULL, *last = NULL, *sk;
	FILE *out = stdout;
	char *text = NULL, *id = NULL, path[256];
	const char *reason;
	size_t i;
	int r;

	if ((r = parse_deploy(rc, cmd, argc, argv, &a)) != 0)
		return r;
	if (a.min_in_service && rc_parse_fraction(a.min_in_service) < 0)
		return rc_bad("--min-in-service (a fraction in [0, 1), or P%)", a.min_in_service);
	if ((r = rc_read_file("deploy", a.playbook, RC_PLAYBOOK_MAX, &text)) != 0)
		return r;
	rc->playbook = a.playbook;
	if (a.maintenance) {
		/* Drained, configured, validated and handed back in batches (cmd_maint.c). */
		body = rc_maint_body(a.cluster, "deploy", a.nodes, a.batch, a.min_in_service,
				     a.job_timeout_ms, a.sign);
		if (body)
			json_object_set_new(body, "playbook", json_string(text));
		r = body ? rc_maint_run(rc, body, a.no_wait) : RC_FAILED;
		goto out;
	}
	if (!(body = deploy_body(&a, text))) {
		r = RC_FAILED;
		goto out;
	}
	if ((r = rc_api(rc, "POST", "/api/v1/deployments", body, &made)) != 0)
		goto out;
	if (rc->json && a.no_wait) {
		r = rc_print_json(stdout, made);
		goto out;
	}
	/* With --json the document is the output; what a person follows goes to stderr. */
	if (rc->json)
		out = stderr;
	/* The nodes of the cluster the playbook's hosts pattern left out, and why. */
	json_array_foreach(json_object_get(made, "skipped"), i, sk)
		util_fprintf_safe(out, "  %-14s not targeted: %s\n", rc_str(sk, "hostname", "?"),
				  rc_str(sk, "reason", "?"));
	util_fprintf_safe(out, "deployment %s: %s %s on %zu nodes of %s in %lld batches%s\n",
			  rc_str(made, "id", "?"), rc_str(made, "playbook", "?"),
			  rc_str(made, "version", "?"),
			  json_array_size(json_object_get(made, "nodes")), a.cluster,
			  JINT(made, "batches"),
			  a.check ? " (check mode: nothing will change)" : "");
	fflush(out);
	if (a.no_wait)
		goto out;
	if (!(id = httpc_escape(rc_str(made, "id", "")))) {
		r = RC_FAILED;
		goto out;
	}
	snprintf(path, sizeof(path), "/api/v1/deployments/%s", id);
	if ((r = follow(rc, path, a.timeout_ms, a.diff, out, &last)) != 0) {
		util_fprintf_safe(stderr,
				  RC_PROG ": the deployment carries on; follow it with `" RC_PROG
					  " deployments %s`\n",
				  rc_str(made, "id", "?"));
		goto out;
	}
	reason = JSTR(last, "reason");
	util_fprintf_safe(out, "deployment %s %s%s%s\n", rc_str(last, "id", "?"),
			  rc_str(last, "state", "?"), reason ? ": " : "", reason ? reason : "");
	if (rc->json)
		rc_print_json(stdout, last);
	r = strcmp(rc_str(last, "state", ""), "succeeded") == 0 ? RC_OK : RC_FAILED;
out:
	json_decref(body);
	json_decref(made);
	json_decref(last);
	free(text);
	free(id);
	return r;
}

static void print_one(const json_t *d, bool diffs)
{
	const char *reason = JSTR(d, "reason");
	const json_t *n;
	size_t i;

	util_fprintf_safe(stdout, "%s  %s %s on %s  %s%s%s%s\n", rc_str(d, "id", "?"),
			  rc_str(d, "playbook", "?"), rc_str(d, "version", "?"),
			  rc_str(d, "cluster", "?"), rc_str(d, "state", "?"),
			  json_is_true(json_object_get(d, "check_mode")) ? " (check)" : "",
			  reason ? ": " : "", reason ? reason : "");
	json_array_foreach(json_object_get(d, "nodes"), i, n)
	{
		rc_print_deploy_node(stdout, n);
		rc_print_deploy_steps(stdout, n, diffs);
	}
}

static void print_list(const json_t *items)
{
	const json_t *d;
	size_t i;

	printf("%-11s %-16s %-10s %-10s %-6s %s\n", "ID", "PLAYBOOK", "CLUSTER", "STATE", "MODE",
	       "REASON");
	json_array_foreach(items, i, d)
	{
		util_fprintf_safe(stdout, "%-11s %-16s %-10s %-10s %-6s %s\n", rc_str(d, "id", "?"),
				  rc_str(d, "playbook", "?"), rc_str(d, "cluster", "?"),
				  rc_str(d, "state", "?"),
				  json_is_true(json_object_get(d, "check_mode")) ? "check"
										 : "apply",
				  rc_str(d, "reason", ""));
	}
}

static int cmd_deployments(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"diff", no_argument, NULL, OPT_DIFF},
		{0},
	};
	json_t *doc = NULL;
	char *id = NULL, path[256];
	bool diffs = false;
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, opts)) != -1) {
		if (c != OPT_DIFF)
			return rc_usage(cmd, c);
		diffs = true;
	}
	/* "deployment show ID", "deployments [ID]" */
	if ((r = rc_positionals(cmd, argc, argv, 1, strcmp(cmd->name, "deployments") == 0)) != 0)
		return r;
	if (optind < argc) {
		if (!(id = httpc_escape(argv[optind])) ||
		    (size_t)snprintf(path, sizeof(path), "/api/v1/deployments/%s", id) >=
			    sizeof(path)) {
			free(id);
			return rc_bad("deployment id", argv[optind]);
		}
		free(id);
		r = rc_api(rc, "GET", path, NULL, &doc);
	} else {
		r = rc_api_list(rc, "/api/v1/deployments", &doc);
		if (r == 0 && rc->json) {
			json_t *page = json_pack("{s:o, s:n}", "items", doc, "next_cursor");

			doc = page;
		}
	}
	if (r != 0)
		return r;
	if (rc->json)
		r = rc_print_json(stdout, doc);
	else if (optind < argc)
		print_one(doc, diffs);
	else
		print_list(doc);
	json_decref(doc);
	return r;
}

static int cmd_cancel(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	return rc_post_id(rc, cmd, argc, argv, "/api/v1/deployments/", "/cancel",
			  "cancel requested: deployment");
}

const struct rc_command rc_deploy_commands[] = {
	{"deploy",
	 "--cluster C --playbook FILE [--check] [--batch N|P%] [--max-fail N|P%]\n"
	 "        [--canary N] [--pause 30s] [--nodes SEL] [--no-wait] [--diff] [--timeout 30m]\n"
	 "        [--maintenance [--min-in-service F|P%] [--job-timeout 1h] [--sign]]",
	 "deploy a playbook to a cluster's nodes (check mode: diffs only; --nodes: only those) "
	 "and follow it; --maintenance: drain, configure, validate and resume in batches "
	 "(exit 0 succeeded, 1 otherwise)",
	 cmd_deploy},
	{"deployments", "[ID] [--diff]",
	 "list deployments, or show one with its nodes and the steps that did not end ok "
	 "(--diff: with the changes, as in check mode; --json: every step)",
	 cmd_deployments},
	{"deployment show", "ID [--diff]",
	 "show a deployment with its nodes and the steps that did not end ok (--diff: with the "
	 "changes; --json: every step)",
	 cmd_deployments},
	{"deployment cancel", "ID", "cancel a running deployment (nodes not started are skipped)",
	 cmd_cancel},
	{0},
};
