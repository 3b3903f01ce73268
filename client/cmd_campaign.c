/* railyard validate and campaigns: a validation campaign started (POST /api/v1/campaigns) and
 * followed with a progress line per change until its verdict, Ctrl-C cancelling it; campaigns
 * listed or shown. */
#include "client/rc.h"
#include "common/util/util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define POLL_MS 500
/* How long an interrupted validate waits for the cancel to be carried out, and how long the
 * sign-off of an ended campaign may take to appear. */
#define CANCEL_WAIT_MS	20000
#define SIGNOFF_WAIT_MS 60000

enum {
	OPT_CLUSTER = 900,
	OPT_PLAYBOOK,
	OPT_TESTS,
	OPT_NODES,
	OPT_TRANSPORT,
	OPT_QUICK,
	OPT_SEED,
	OPT_ALLOW_MISSING,
	OPT_SIGNOFF,
	OPT_DRY_RUN,
	OPT_NO_WAIT,
	OPT_RESULTS
};

struct validate_args {
	const char *playbook;
	bool no_wait;
	json_t *body; /* the request but its playbook */
};

static int parse_validate(struct rc *rc, const struct rc_command *cmd, int argc, char **argv,
			  struct validate_args *a)
{
	static const struct option opts[] = {
		{"cluster", required_argument, NULL, OPT_CLUSTER},
		{"playbook", required_argument, NULL, OPT_PLAYBOOK},
		{"tests", required_argument, NULL, OPT_TESTS},
		{"nodes", required_argument, NULL, OPT_NODES},
		{"transport", required_argument, NULL, OPT_TRANSPORT},
		{"quick", no_argument, NULL, OPT_QUICK},
		{"seed", required_argument, NULL, OPT_SEED},
		{"allow-missing", no_argument, NULL, OPT_ALLOW_MISSING},
		{"signoff", no_argument, NULL, OPT_SIGNOFF},
		{"dry-run", no_argument, NULL, OPT_DRY_RUN},
		{"no-wait", no_argument, NULL, OPT_NO_WAIT},
		{0},
	};
	static const char *const keys[] = {
		[OPT_CLUSTER - OPT_CLUSTER] = "cluster",
		[OPT_TESTS - OPT_CLUSTER] = "tests",
		[OPT_NODES - OPT_CLUSTER] = "nodes",
		[OPT_TRANSPORT - OPT_CLUSTER] = "transport",
		[OPT_QUICK - OPT_CLUSTER] = "quick",
		[OPT_ALLOW_MISSING - OPT_CLUSTER] = "allow_missing",
		[OPT_SIGNOFF - OPT_CLUSTER] = "signoff",
		[OPT_DRY_RUN - OPT_CLUSTER] = "dry_run",
	};
	int64_t seed;
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, opts)) != -1) {
		switch (c) {
		case OPT_PLAYBOOK:
			a->playbook = optarg;
			break;
		case OPT_TRANSPORT:
			if (strcmp(optarg, "tcp") != 0 && strcmp(optarg, "verbs") != 0)
				return rc_bad("--transport (tcp or verbs)", optarg);
			/* fall through */
		case OPT_CLUSTER:
		case OPT_TESTS:
		case OPT_NODES:
			json_object_set_new(a->body, keys[c - OPT_CLUSTER], json_string(optarg));
			break;
		case OPT_QUICK:
		case OPT_ALLOW_MISSING:
		case OPT_SIGNOFF:
		case OPT_DRY_RUN:
			json_object_set_new(a->body, keys[c - OPT_CLUSTER], json_true());
			break;
		case OPT_SEED:
			if ((r = rc_parse_int("--seed", optarg, 0, 1LL << 53, &seed)) != 0)
				return r;
			json_object_set_new(a->body, "seed", json_integer(seed));
			break;
		case OPT_NO_WAIT:
			a->no_wait = true;
			break;
		default:
			return rc_usage(cmd, c);
		}
	}
	if ((r = rc_positionals(cmd, argc, argv, 0, false)) != 0)
		return r;
	if (!JSTR(a->body, "cluster") || !a->playbook)
		return rc_bad("validate", "(--cluster and --playbook are required)");
	return 0;
}

static void print_plan(FILE *out, const json_t *plan)
{
	const json_t *t, *l;
	size_t i;

	util_fprintf_safe(out, "dry run: %s %s over %s on %zu nodes of %s (seed %lld)%s\n",
			  rc_str(plan, "playbook", "?"), rc_str(plan, "version", "?"),
			  rc_str(plan, "transport", "?"),
			  json_array_size(json_object_get(plan, "nodes")),
			  rc_str(plan, "cluster", "?"), JINT(plan, "seed"),
			  json_is_true(json_object_get(plan, "quick")) ? ", quick" : "");
	json_array_foreach(json_object_get(plan, "tests"), i, t)
	{
		util_fprintf_safe(out, "  %-14s %-10s %-12s %s%lld round(s), %lld slot(s)\n",
				  rc_str(t, "name", "?"), rc_str(t, "kind", "?"),
				  rc_str(t, "pattern", "-"),
				  json_is_true(json_object_get(t, "per_rail")) ? "per rail, " : "",
				  JINT(t, "round_count"), JINT(t, "slots"));
	}
	json_array_foreach(json_object_get(plan, "left_out"), i, l)
	{
		util_fprintf_safe(out, "  left out: %s (%s)\n", rc_str(l, "hostname", "?"),
				  rc_str(l, "reason", "?"));
	}
}

static void print_started(FILE *out, const json_t *doc, const json_t *body)
{
	const json_t *l;
	size_t i;

	util_fprintf_safe(
		out, "campaign %s: %s %s over %s on %zu nodes of %s, %zu test(s)%s%s\n",
		rc_str(doc, "id", "?"), rc_str(doc, "playbook", "?"), rc_str(doc, "version", "?"),
		rc_str(doc, "transport", "?"), json_array_size(json_object_get(doc, "nodes")),
		rc_str(body, "cluster", "?"), json_array_size(json_object_get(doc, "tests")),
		json_is_true(json_object_get(doc, "baseline")) ? " (tcp: a baseline)" : "",
		json_is_true(json_object_get(body, "quick")) ? " (quick: a smoke run)" : "");
	json_array_foreach(json_object_get(doc, "left_out"), i, l)
	{
		util_fprintf_safe(out, "  left out: %s (%s)\n", rc_str(l, "hostname", "?"),
				  rc_str(l, "reason", "?"));
	}
	fflush(out);
}

/* Follow the campaign at path until it ends: a progress line whenever a round moves on or its
 * results come in. A signal asks for its cancel once. 0 with *ret its last view, or the exit
 * code. */
static int follow(struct rc *rc, const char *path, const char *id, FILE *out, json_t **ret)
{
	char last[64] = "", key[64], line[512], cancel[300];
	int64_t deadline = 0;
	json_t *c = NULL;
	int r;

	for (;;) {
		const json_t *p;

		if ((r = rc_api(rc, "GET", path, NULL, &c)) != 0)
			return r;
		if (rc_campaign_final(JSTR(c, "state")) ||
		    (deadline && util_now_mono_ms() > deadline))
			break;
		p = json_object_get(c, "progress");
		snprintf(key, sizeof(key), "%lld/%lld/%lld", JINT(p, "test_index"),
			 JINT(p, "round"), JINT(p, "rows_done") + JINT(p, "rows_failed"));
		if (strcmp(key, last) != 0) {
			rc_campaign_progress(c, line, sizeof(line));
			util_fprintf_safe(out, "campaign %s: %s\n", id, line);
			fflush(out);
			snprintf(last, sizeof(last), "%s", key);
		}
		if (rc_interrupted && !deadline) {
			util_fprintf_safe(stderr, "campaign %s: interrupted; cancelling it\n", id);
			snprintf(cancel, sizeof(cancel), "%s/cancel", path);
			r = rc_api(rc, "POST", cancel, NULL, NULL);
			/* 409: it ended meanwhile; the next poll shows how. */
			if (r != 0 && r != RC_FAILED) {
				json_decref(c);
				return r;
			}
			deadline = util_now_mono_ms() + CANCEL_WAIT_MS;
		}
		json_decref(c);
		c = NULL;
		usleep(POLL_MS * 1000);
	}
	*ret = c;
	return 0;
}

/* The sign-off the controller makes as the campaign ends (its summary), or NULL when none came
 * within SIGNOFF_WAIT_MS (said on stderr). */
static json_t *signoff_of(struct rc *rc, const char *cluster, const char *id)
{
	int64_t deadline = util_now_mono_ms() + SIGNOFF_WAIT_MS;
	char path[512], *cl = httpc_escape(cluster);

	snprintf(path, sizeof(path), "/api/v1/signoffs?cluster=%s", cl ? cl : "");
	free(cl);
	while (!rc_interrupted) {
		json_t *items = NULL, *s, *found = NULL;
		size_t i;

		if (rc_api_list(rc, path, &items) != 0)
			return NULL;
		json_array_foreach(items, i, s)
		{
			if (strcmp(rc_str(s, "campaign", ""), id) == 0) {
				found = json_incref(s);
				break;
			}
		}
		json_decref(items);
		if (found)
			return found;
		if (util_now_mono_ms() > deadline)
			break;
		usleep(POLL_MS * 1000);
	}
	util_fprintf_safe(stderr, RC_PROG ": campaign %s: no sign-off appeared\n", id);
	return NULL;
}

static int cmd_validate(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	struct validate_args a = {.body = json_object()};
	json_t *doc = NULL, *c = NULL, *so = NULL;
	char *text = NULL, *id = NULL, path[256];
	bool dry, signoff;
	FILE *out;
	int r;

	if (!a.body)
		return RC_FAILED;
	if ((r = parse_validate(rc, cmd, argc, argv, &a)) != 0)
		goto out;
	if ((r = rc_read_file("validate", a.playbook, RC_PLAYBOOK_MAX, &text)) != 0)
		goto out;
	rc->playbook = a.playbook;
	json_object_set_new(a.body, "playbook", json_string(text));
	dry = json_is_true(json_object_get(a.body, "dry_run"));
	signoff = json_is_true(json_object_get(a.body, "signoff"));
	/* Caught before the campaign exists: a Ctrl-C during the request still cancels it. */
	if (!dry && !a.no_wait)
		rc_catch_interrupts();
	if ((r = rc_api(rc, "POST", "/api/v1/campaigns", a.body, &doc)) != 0)
		goto out;
	if (rc->json && (dry || a.no_wait)) {
		r = rc_print_json(stdout, doc);
		goto out;
	}
	if (dry) {
		print_plan(stdout, doc);
		goto out;
	}
	out = rc->json ? stderr : stdout;
	print_started(out, doc, a.body);
	if (a.no_wait)
		goto out;
	if (!(id = httpc_escape(rc_str(doc, "id", "")))) {
		r = RC_FAILED;
		goto out;
	}
	snprintf(path, sizeof(path), "/api/v1/campaigns/%s", id);
	if ((r = follow(rc, path, rc_str(doc, "id", "?"), out, &c)) != 0)
		goto out;
	if (signoff && !rc_interrupted &&
	    (strcmp(rc_str(c, "state", ""), "passed") == 0 ||
	     strcmp(rc_str(c, "state", ""), "failed") == 0) &&
	    (so = signoff_of(rc, rc_str(a.body, "cluster", ""), rc_str(doc, "id", ""))))
		json_object_set(c, "signoff", so);
	if (rc->json) {
		rc_print_json(stdout, c);
	} else {
		rc_print_verdict(stdout, c);
		if (so)
			rc_print_signoff(stdout, so, false, NULL);
	}
	r = rc_interrupted				    ? RC_INTERRUPTED
	    : strcmp(rc_str(c, "state", ""), "passed") == 0 ? RC_OK
							    : RC_FAILED;
	if (signoff && !so && r == RC_OK)
		r = RC_FAILED;
out:
	json_decref(a.body);
	json_decref(doc);
	json_decref(c);
	json_decref(so);
	free(text);
	free(id);
	return r;
}

static void print_list(const json_t *items)
{
	const json_t *c;
	size_t i;

	printf("%-11s %-12s %-16s %-6s %-10s %-5s %9s  %s\n", "ID", "CLUSTER", "PLAYBOOK", "OVER",
	       "STATE", "RESULT", "NODES", "ENDED/PROGRESS");
	json_array_foreach(items, i, c)
	{
		char when[32], line[512];

		rc_format_time(JINT(c, "created_at_ms"), when, sizeof(when));
		rc_campaign_progress(c, line, sizeof(line));
		util_fprintf_safe(stdout, "%-11s %-12s %-16s %-6s %-10s %-5s %3lld nodes  %s\n",
				  rc_str(c, "id", "?"), rc_str(c, "cluster", "?"),
				  rc_str(c, "playbook", "?"), rc_str(c, "transport", "?"),
				  rc_str(c, "state", "?"), rc_str(c, "result", "-"),
				  JINT(c, "nodes_count"),
				  rc_campaign_final(JSTR(c, "state")) ? when : line);
	}
}

/* The result rows of a campaign, one line each. */
static void print_results(const json_t *c)
{
	const json_t *w;
	size_t i;

	printf("%-5s %-5s %-4s %-8s %-7s %-16s %-16s %-8s %s\n", "TEST", "ROUND", "SLOT", "PHASE",
	       "ROLE", "A", "B", "STATE", "ERROR");
	json_array_foreach(json_object_get(c, "results"), i, w)
	{
		util_fprintf_safe(stdout, "%-5lld %-5lld %-4lld %-8s %-7s %-16s %-16s %-8s %s\n",
				  JINT(w, "test_index"), JINT(w, "round"), JINT(w, "slot"),
				  rc_str(w, "phase", "?"), rc_str(w, "role", "?"),
				  rc_str(w, "a", "?"), rc_str(w, "b", "?"), rc_str(w, "state", "?"),
				  rc_str(w, "error", ""));
	}
}

static int cmd_campaigns(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"results", no_argument, NULL, OPT_RESULTS},
		{0},
	};
	bool results = false;
	json_t *doc = NULL;
	char *id, path[256];
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, opts)) != -1) {
		if (c != OPT_RESULTS)
			return rc_usage(cmd, c);
		results = true;
	}
	/* "campaign show ID", "campaigns [ID]" */
	if ((r = rc_positionals(cmd, argc, argv, 1, strcmp(cmd->name, "campaigns") == 0)) != 0)
		return r;
	if (optind == argc) {
		if (results)
			return rc_bad("campaigns --results", "(it needs a campaign's ID)");
		if ((r = rc_api_list(rc, "/api/v1/campaigns", &doc)) != 0)
			return r;
		if (rc->json)
			doc = json_pack("{s:o, s:n}", "items", doc, "next_cursor");
	} else {
		if (!(id = httpc_escape(argv[optind])) ||
		    (size_t)snprintf(path, sizeof(path), "/api/v1/campaigns/%s%s", id,
				     results ? "/results" : "") >= sizeof(path)) {
			free(id);
			return rc_bad("campaign id", argv[optind]);
		}
		free(id);
		if ((r = rc_api(rc, "GET", path, NULL, &doc)) != 0)
			return r;
	}
	if (rc->json) {
		r = rc_print_json(stdout, doc);
	} else if (optind == argc) {
		print_list(doc);
	} else if (rc_campaign_final(JSTR(doc, "state"))) {
		rc_print_verdict(stdout, doc);
		if (results)
			print_results(doc);
	} else {
		char line[512];

		rc_campaign_progress(doc, line, sizeof(line));
		util_fprintf_safe(stdout, "campaign %s: running: %s\n", rc_str(doc, "id", "?"),
				  line);
		if (results)
			print_results(doc);
	}
	json_decref(doc);
	return r;
}

static int cmd_cancel(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	/* --no-wait (railyard-controller's) is what it does anyway: drop it before parsing. */
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--no-wait") == 0) {
			memmove(argv + i, argv + i + 1, (size_t)(argc - i) * sizeof(*argv));
			argc--;
			break;
		}
	return rc_post_id(rc, cmd, argc, argv, "/api/v1/campaigns/", "/cancel",
			  "cancel requested: campaign");
}

const struct rc_command rc_campaign_commands[] = {
	{"validate",
	 "--cluster C --playbook FILE [--tests a,b] [--nodes SELECTOR]\n"
	 "        [--transport tcp|verbs] [--quick] [--seed N] [--allow-missing]\n"
	 "        [--signoff] [--dry-run] [--no-wait]",
	 "run the playbook's validation campaign and print its verdict (exit 0 passed, 1 "
	 "otherwise; Ctrl-C cancels it)",
	 cmd_validate},
	{"campaigns", "[ID] [--results]",
	 "list campaigns, or show one: progress while it runs, then its verdict (--results: and "
	 "its result rows)",
	 cmd_campaigns},
	{"campaign show", "ID [--results]",
	 "show a campaign: progress while it runs, then its verdict (--results: and its rows)",
	 cmd_campaigns},
	{"campaign cancel", "ID", "cancel a running campaign", cmd_cancel},
	{0},
};
