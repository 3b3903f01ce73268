/* railyard-controller validate|campaigns|campaign show|campaign cancel: the front end of the
 * campaign service. validate has the serving controller plan a campaign from a playbook's
 * validation section (or prints the schedule with --dry-run), then follows it in the database
 * with a progress line until the verdict; cancel asks the serving controller too. */
#include "controller/campaign/campaign.h"
#include "controller/cli/cli.h"
#include "common/httpc/httpc.h"
#include "controller/state.h"
#include "controller/store/store.h"
#include "common/log/log.h"
#include "common/playbook/playbook.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long `campaign cancel` (and an interrupted `validate`) waits for the serving controller to
 * carry the cancel out. */
#define CANCEL_WAIT_MS 20000
/* Progress poll. */
#define POLL_MS 500

enum { OPT_STATE_DIR = 900, OPT_JSON };

#define JSTR(o, k) json_string_value(json_object_get((o), (k)))
#define JINT(o, k) json_integer_value(json_object_get((o), (k)))

volatile sig_atomic_t cli_interrupted;

void cli_on_interrupt(int sig)
{
	cli_interrupted = sig;
}

static bool ended(const json_t *c)
{
	const char *s = JSTR(c, "state");

	return s && strcmp(s, "running") != 0;
}

/* "test pair-lat, round 2 of 3 | rounds 4 of 12 | 10 done, 1 failed | ETA 35 s" */
static void progress_line(const json_t *c, char *buf, size_t len)
{
	const json_t *p = json_object_get(c, "progress");
	const json_t *test =
		json_array_get(json_object_get(c, "tests"), (size_t)JINT(p, "test_index"));
	json_int_t rounds = JINT(test, "rounds") + JINT(test, "retest_rounds");
	const json_t *eta = json_object_get(p, "eta_s");
	char etas[32] = "";

	if (json_is_integer(eta))
		snprintf(etas, sizeof(etas), " | ETA %lld s", (long long)json_integer_value(eta));
	snprintf(buf, len,
		 "test %s, round %lld of %lld%s | rounds %lld of %lld%s | %lld done, "
		 "%lld failed%s",
		 JSTR(p, "test") ? JSTR(p, "test") : "-",
		 /* Past its rounds, a test waits for its retests to be planned. */
		 (long long)(JINT(p, "round") < rounds ? JINT(p, "round") + 1 : rounds),
		 (long long)rounds,
		 json_is_integer(json_object_get(test, "retest_rounds")) ? "" : "+retests",
		 (long long)JINT(p, "rounds_done"), (long long)JINT(p, "rounds_total"),
		 json_is_true(json_object_get(p, "rounds_total_final")) ? "" : "+",
		 (long long)JINT(p, "rows_done"), (long long)JINT(p, "rows_failed"), etas);
}

/* The verdict for a person: one line per test, the findings, the nodes that failed. */
void cli_campaign_print_verdict(FILE *out, const json_t *c)
{
	const json_t *v = json_object_get(c, "verdict"), *t, *x, *n;
	size_t i, k;
	int64_t secs = (JINT(c, "finished_at_ms") - JINT(c, "created_at_ms")) / 1000;

	util_fprintf_safe(out, "campaign %s: %s (%s%s, %zu nodes, %lld s)%s%s\n", JSTR(c, "id"),
			  JSTR(c, "state"), JSTR(c, "transport"),
			  json_is_true(json_object_get(c, "quick")) ? ", quick" : "",
			  json_array_size(json_object_get(c, "nodes")), (long long)secs,
			  JSTR(c, "error") ? ": " : "", JSTR(c, "error") ? JSTR(c, "error") : "");
	if (!json_is_object(v))
		return;
	json_array_foreach(json_object_get(v, "tests"), i, t)
	{
		char stats[160] = "";
		const char *key;
		size_t len = 0;

		json_object_foreach((json_t *)json_object_get(t, "stats"), key, x)
		{
			if (len < sizeof(stats) - 48 && JINT(x, "n") > 0)
				len += (size_t)snprintf(
					stats + len, sizeof(stats) - len, "%s%s median %.3g",
					len ? ", " : "", key,
					json_number_value(json_object_get(x, "median")));
		}
		if (json_object_get(t, "victim_pairs"))
			util_fprintf_safe(out,
					  "  %-14s %-10s %-12s %-4s %lld victim pair(s), %lld "
					  "failed  %s\n",
					  JSTR(t, "name"), JSTR(t, "kind"), "-", JSTR(t, "result"),
					  (long long)JINT(t, "victim_pairs"),
					  (long long)JINT(t, "failed"), stats);
		else
			util_fprintf_safe(out,
					  "  %-14s %-10s %-12s %-4s %lld of %lld measured, %lld "
					  "failed  %s\n",
					  JSTR(t, "name"), JSTR(t, "kind"), JSTR(t, "pattern"),
					  JSTR(t, "result"), (long long)JINT(t, "measured"),
					  (long long)JINT(t, "rows"), (long long)JINT(t, "failed"),
					  stats);
	}
	util_fprintf_safe(out, "findings:\n");
	json_array_foreach(json_object_get(v, "findings"), i, x)
		util_fprintf_safe(out, "  - %s\n", json_string_value(x));
	json_array_foreach(json_object_get(v, "nodes"), i, n)
	{
		if (strcmp(JSTR(n, "result"), "pass") == 0)
			continue;
		util_fprintf_safe(out, "node %s (%s): FAIL\n", JSTR(n, "hostname"), JSTR(n, "id"));
		json_array_foreach(json_object_get(n, "reasons"), k, x)
			util_fprintf_safe(out, "    %s\n", json_string_value(x));
		json_array_foreach(json_object_get(n, "rails"), k, x)
		{
			size_t j;
			const json_t *y;

			util_fprintf_safe(out, "  rail %lld (%s):\n", (long long)JINT(x, "rail"),
					  JSTR(x, "device") ? JSTR(x, "device") : "?");
			json_array_foreach(json_object_get(x, "reasons"), j, y)
				util_fprintf_safe(out, "    %s\n", json_string_value(y));
		}
	}
}

/* The schedule of a dry run, for a person. */
static void print_plan(FILE *out, const json_t *plan)
{
	const json_t *t, *l;
	size_t i;

	util_fprintf_safe(out, "dry run: %s %s over %s on %zu nodes of %s (seed %lld)%s\n",
			  JSTR(plan, "playbook"), JSTR(plan, "version"), JSTR(plan, "transport"),
			  json_array_size(json_object_get(plan, "nodes")), JSTR(plan, "cluster"),
			  (long long)JINT(plan, "seed"),
			  json_is_true(json_object_get(plan, "quick")) ? ", quick" : "");
	json_array_foreach(json_object_get(plan, "tests"), i, t) util_fprintf_safe(
		out, "  %-14s %-10s %-12s %s%lld round(s), %lld slot(s)\n", JSTR(t, "name"),
		JSTR(t, "kind"), JSTR(t, "pattern") ? JSTR(t, "pattern") : "-",
		json_is_true(json_object_get(t, "per_rail")) ? "per rail, " : "",
		(long long)JINT(t, "round_count"), (long long)JINT(t, "slots"));
	json_array_foreach(json_object_get(plan, "left_out"), i, l) util_fprintf_safe(
		out, "  left out: %s (%s)\n", JSTR(l, "hostname"), JSTR(l, "reason"));
}

/* Ask for the cancel of campaign id: through the serving controller's API when api is not
 * NULL, else in the store. 1 requested, 0 it has ended (err says so), negative on error. */
static int request_cancel(struct store *st, struct httpc *api, const char *id,
			  struct ctl_error *err)
{
	char path[256];
	int r;

	if (!api)
		return ctl_campaign_cancel(st, id, "admin", err);
	if ((r = cli_api_path(path, sizeof(path), "/api/v1/campaigns/", id, "/cancel")) < 0)
		return ctl_error_set(err, r, CTL_ERR_INVALID, "id", "bad campaign id");
	r = cli_api_call(api, "POST", path, NULL, NULL, NULL, err);
	if (r >= 0)
		return 1;
	if (err->code && strcmp(err->code, CTL_ERR_CONFLICT) == 0) {
		json_t *c = NULL;
		struct ctl_error e2;

		/* As the service words it: "ID has already ended (STATE)". */
		ctl_error_init(&e2);
		if (ctl_campaign_get(st, id, false, &c, &e2) == 0 && ended(c))
			ctl_error_set(err, 0, CTL_ERR_CONFLICT, "id", "%s has already ended (%s)",
				      id, JSTR(c, "state"));
		json_decref(c);
		ctl_error_done(&e2);
		return 0;
	}
	return r;
}

/* Follow campaign id until it ends; a progress line whenever it changes (stderr with json). A
 * signal requests its cancel once (through api when not NULL). *ret gets its last state. */
int cli_campaign_follow(struct store *st, const char *id, FILE *out, struct httpc *api,
			json_t **ret)
{
	struct ctl_error err;
	json_t *c = NULL;
	char last[512] = "", line[512];
	bool asked = false;
	int64_t deadline = 0;
	int r;

	ctl_error_init(&err);
	for (;;) {
		r = ctl_campaign_get(st, id, false, &c, &err);
		if (r < 0) {
			cli_error(&err);
			break;
		}
		if (ended(c) || (deadline && util_now_mono_ms() > deadline))
			break;
		/* A line per round (and when a round's results come in), not per poll. */
		{
			const json_t *p = json_object_get(c, "progress");
			char key[64];

			snprintf(key, sizeof(key), "%lld/%lld/%lld",
				 (long long)JINT(p, "test_index"), (long long)JINT(p, "round"),
				 (long long)(JINT(p, "rows_done") + JINT(p, "rows_failed")));
			if (strcmp(key, last) != 0) {
				progress_line(c, line, sizeof(line));
				util_fprintf_safe(out, "campaign %s: %s\n", id, line);
				fflush(out);
				snprintf(last, sizeof(last), "%s", key);
			}
		}
		if (cli_interrupted && !asked) {
			asked = true;
			fprintf(stderr, "campaign %s: interrupted; cancelling it\n", id);
			if (request_cancel(st, api, id, &err) < 0) {
				cli_error(&err);
				break;
			}
			deadline = util_now_mono_ms() + CANCEL_WAIT_MS;
		}
		json_decref(c);
		c = NULL;
		usleep(POLL_MS * 1000);
	}
	ctl_error_done(&err);
	if (!c)
		return -1;
	*ret = c;
	return 0;
}

/* POST /api/v1/campaigns with rq (and dry_run): *ret the campaign (or the plan), as
 * ctl_campaign_create() gives it. */
static int campaign_create_api(struct httpc *api, const struct ctl_campaign_request *rq,
			       bool dry_run, json_t **ret, struct ctl_error *err)
{
	json_t *b =
		json_pack("{s:s, s:s%, s:b, s:b, s:b, s:b}", "cluster", rq->cluster, "playbook",
			  rq->playbook_text, rq->playbook_len, "quick", rq->quick, "allow_missing",
			  rq->allow_missing, "signoff", rq->signoff, "dry_run", dry_run);
	int r;

	/* jansson takes UTF-8 only: anything else cannot be a playbook either. */
	if (!b)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_PLAYBOOK, "playbook",
				     "%s: not UTF-8 text", rq->playbook_file);
	if ((rq->tests && json_object_set_new(b, "tests", json_string(rq->tests)) < 0) ||
	    (rq->nodes && json_object_set_new(b, "nodes", json_string(rq->nodes)) < 0) ||
	    (rq->transport &&
	     json_object_set_new(b, "transport", json_string(rq->transport)) < 0) ||
	    (rq->seed >= 0 && json_object_set_new(b, "seed", json_integer(rq->seed)) < 0)) {
		json_decref(b);
		return ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	}
	r = cli_api_call(api, "POST", "/api/v1/campaigns", b, rq->playbook_file, ret, err);
	json_decref(b);
	return r < 0 ? r : 0;
}

static int cmd_validate(const struct cli_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"state-dir", required_argument, NULL, OPT_STATE_DIR},
		{"json", no_argument, NULL, OPT_JSON},
		{"cluster", required_argument, NULL, 'c'},
		{"playbook", required_argument, NULL, 'p'},
		{"tests", required_argument, NULL, 't'},
		{"nodes", required_argument, NULL, 'n'},
		{"transport", required_argument, NULL, 'T'},
		{"quick", no_argument, NULL, 'q'},
		{"seed", required_argument, NULL, 's'},
		{"allow-missing", no_argument, NULL, 'M'},
		{"dry-run", no_argument, NULL, 'd'},
		{"signoff", no_argument, NULL, 'S'},
		{"no-wait", no_argument, NULL, 'W'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	struct ctl_campaign_request rq = {.seed = -1, .actor = "admin"};
	const char *state_dir = CTL_DEFAULT_STATE_DIR, *playbook = NULL;
	bool json = false, dry_run = false, no_wait = false;
	struct ctl_state *st = NULL;
	struct httpc *api = NULL;
	struct ctl_error err;
	json_t *doc = NULL, *c = NULL, *so = NULL;
	char *text = NULL, *end;
	size_t len = 0;
	int ch, r, rc = 1;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case OPT_STATE_DIR:
			state_dir = optarg;
			break;
		case OPT_JSON:
			json = true;
			break;
		case 'c':
			rq.cluster = optarg;
			break;
		case 'p':
			playbook = optarg;
			break;
		case 't':
			rq.tests = optarg;
			break;
		case 'n':
			rq.nodes = optarg;
			break;
		case 'T':
			if (strcmp(optarg, "tcp") != 0 && strcmp(optarg, "verbs") != 0)
				return cli_bad("--transport", optarg);
			rq.transport = optarg;
			break;
		case 'q':
			rq.quick = true;
			break;
		case 's':
			rq.seed = strtoll(optarg, &end, 10);
			if (!optarg[0] || *end || rq.seed < 0 || rq.seed > (1LL << 53))
				return cli_bad("--seed", optarg);
			break;
		case 'M':
			rq.allow_missing = true;
			break;
		case 'd':
			dry_run = true;
			break;
		case 'S':
			rq.signoff = true;
			break;
		case 'W':
			no_wait = true;
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
		return cli_bad("validate", "(--cluster and --playbook are required)");
	if (cli_read_playbook("validate", playbook, &text, &len))
		return 1;
	rq.playbook_text = text;
	rq.playbook_len = len;
	rq.playbook_file = playbook;
	ctl_error_init(&err);
	/* The serving controller stores the campaign (one writer). A dry run stores nothing: with
	 * no controller serving, it is planned here. */
	if (dry_run)
		r = cli_api_open(state_dir, &api) < 0 ? 1 : 0;
	else
		r = cli_api_need("validate", state_dir, &api);
	if (r != 0)
		goto out;
	/* Following it, and a dry run planned here, read the database. */
	if ((!api || (!no_wait && !dry_run)) && cli_open_state(state_dir, false, &st) < 0)
		goto out;
	if (api)
		r = campaign_create_api(api, &rq, dry_run, &doc, &err);
	else
		r = ctl_campaign_create(st->store, &rq, dry_run, &doc, &err);
	if (r < 0) {
		cli_error(&err);
		rc = strcmp(err.code, CTL_ERR_INVALID) == 0 ? 2 : 1;
		goto out;
	}
	if (dry_run) {
		if (json)
			cli_print_json(stdout, doc);
		else
			print_plan(stdout, doc);
		rc = 0;
		goto out;
	}
	util_fprintf_safe(json ? stderr : stdout,
			  "campaign %s: %s %s over %s on %zu nodes of %s, %zu test(s)%s%s\n",
			  JSTR(doc, "id"), JSTR(doc, "playbook"), JSTR(doc, "version"),
			  JSTR(doc, "transport"), json_array_size(json_object_get(doc, "nodes")),
			  rq.cluster, json_array_size(json_object_get(doc, "tests")),
			  json_is_true(json_object_get(doc, "baseline")) ? " (tcp: a baseline)"
									 : "",
			  rq.quick ? " (quick: a smoke run)" : "");
	{
		const json_t *l;
		size_t i;

		json_array_foreach(json_object_get(doc, "left_out"), i, l)
			util_fprintf_safe(json ? stderr : stdout, "  left out: %s (%s)\n",
					  JSTR(l, "hostname"), JSTR(l, "reason"));
	}
	fflush(json ? stderr : stdout);
	if (no_wait) {
		rc = 0;
		goto out;
	}
	sigaction(SIGINT, &(struct sigaction){.sa_handler = cli_on_interrupt}, NULL);
	sigaction(SIGTERM, &(struct sigaction){.sa_handler = cli_on_interrupt}, NULL);
	if (cli_campaign_follow(st->store, JSTR(doc, "id"), json ? stderr : stdout, api, &c) < 0)
		goto out;
	json_decref(c);
	c = NULL;
	{
		struct ctl_error e2;

		ctl_error_init(&e2);
		r = ctl_campaign_get(st->store, JSTR(doc, "id"), false, &c, &e2);
		if (r < 0)
			cli_error(&e2);
		ctl_error_done(&e2);
		if (r < 0)
			goto out;
	}
	if (rq.signoff && !cli_interrupted &&
	    (strcmp(JSTR(c, "state"), "passed") == 0 || strcmp(JSTR(c, "state"), "failed") == 0) &&
	    cli_signoff_wait(st->store, JSTR(doc, "id"), &so) == 0)
		json_object_set(c, "signoff", so);
	if (json) {
		cli_print_json(stdout, c);
	} else {
		cli_campaign_print_verdict(stdout, c);
		if (so)
			cli_signoff_print(stdout, so, false);
	}
	rc = cli_interrupted ? 130 : strcmp(JSTR(c, "state"), "passed") == 0 ? 0 : 1;
	if (rq.signoff && !so && rc == 0)
		rc = 1;
out:
	json_decref(doc);
	json_decref(c);
	json_decref(so);
	ctl_error_done(&err);
	ctl_state_free(st);
	httpc_free(api);
	free(text);
	return rc;
}

static int cmd_campaigns(const struct cli_command *cmd, int argc, char **argv)
{
	const char *state_dir = CTL_DEFAULT_STATE_DIR;
	struct ctl_state *st = NULL;
	struct ctl_error err;
	bool json = false;
	json_t *doc = NULL, *c;
	size_t i;
	int r, rc = 1;

	if ((r = cli_simple_opts(cmd, argc, argv, &state_dir, &json, NULL, NULL, 0)) != 0)
		return r;
	ctl_error_init(&err);
	if (cli_open_state(state_dir, false, &st) < 0)
		return 1;
	if (ctl_campaign_list(st->store, 50, &doc, &err) < 0) {
		cli_error(&err);
		goto out;
	}
	if (json) {
		cli_print_json(stdout, doc);
	} else {
		json_array_foreach(doc, i, c)
		{
			char when[32], line[512];

			cli_format_time(JINT(c, "created_at_ms"), when, sizeof(when));
			progress_line(c, line, sizeof(line));
			util_fprintf_safe(
				stdout, "%-11s %-12s %-16s %-6s %-10s %-5s %3lld nodes  %s\n",
				JSTR(c, "id"), JSTR(c, "cluster"), JSTR(c, "playbook"),
				JSTR(c, "transport"), JSTR(c, "state"),
				JSTR(c, "result") ? JSTR(c, "result") : "-",
				(long long)JINT(c, "nodes_count"), ended(c) ? when : line);
		}
	}
	rc = 0;
out:
	json_decref(doc);
	ctl_error_done(&err);
	ctl_state_free(st);
	return rc;
}

static int cmd_show(const struct cli_command *cmd, int argc, char **argv)
{
	const char *state_dir = CTL_DEFAULT_STATE_DIR;
	struct ctl_state *st = NULL;
	struct ctl_error err;
	bool json = false, results = false;
	json_t *doc = NULL;
	int r, rc = 1;

	if ((r = cli_simple_opts(cmd, argc, argv, &state_dir, &json, &results, NULL, 1)) != 0)
		return r;
	ctl_error_init(&err);
	if (cli_open_state(state_dir, false, &st) < 0)
		return 1;
	if (ctl_campaign_get(st->store, argv[optind], results, &doc, &err) < 0) {
		cli_error(&err);
		goto out;
	}
	if (json) {
		cli_print_json(stdout, doc);
	} else if (ended(doc)) {
		cli_campaign_print_verdict(stdout, doc);
	} else {
		char line[512];

		progress_line(doc, line, sizeof(line));
		util_fprintf_safe(stdout, "campaign %s: running: %s\n", JSTR(doc, "id"), line);
	}
	rc = 0;
out:
	json_decref(doc);
	ctl_error_done(&err);
	ctl_state_free(st);
	return rc;
}

static int cmd_cancel(const struct cli_command *cmd, int argc, char **argv)
{
	const char *state_dir = CTL_DEFAULT_STATE_DIR, *id;
	struct ctl_state *st = NULL;
	struct httpc *api = NULL;
	struct ctl_error err;
	bool no_wait = false;
	json_t *c = NULL;
	int64_t deadline;
	int r, rc = 1;

	if ((r = cli_simple_opts(cmd, argc, argv, &state_dir, NULL, NULL, &no_wait, 1)) != 0)
		return r;
	id = argv[optind];
	ctl_error_init(&err);
	/* The serving controller takes the request; waiting for it reads the database. */
	if (cli_api_need("campaign cancel", state_dir, &api) != 0 ||
	    cli_open_state(state_dir, false, &st) < 0)
		goto out;
	r = request_cancel(st->store, api, id, &err);
	if (r <= 0) {
		util_fprintf_safe(stderr, "railyard-controller: campaign cancel: %s\n",
				  err.message);
		goto out;
	}
	if (no_wait) {
		util_fprintf_safe(stdout, "campaign %s: cancel requested\n", id);
		rc = 0;
		goto out;
	}
	deadline = util_now_mono_ms() + CANCEL_WAIT_MS;
	for (;;) {
		json_decref(c);
		c = NULL;
		if (ctl_campaign_get(st->store, id, false, &c, &err) < 0) {
			cli_error(&err);
			goto out;
		}
		if (ended(c) || util_now_mono_ms() > deadline)
			break;
		usleep(POLL_MS * 1000);
	}
	if (strcmp(JSTR(c, "state"), "cancelled") == 0) {
		util_fprintf_safe(stdout, "campaign %s: cancelled\n", id);
		rc = 0;
	} else if (ended(c)) {
		util_fprintf_safe(stdout, "campaign %s: ended %s before the cancel took effect\n",
				  id, JSTR(c, "state"));
	} else {
		util_fprintf_safe(
			stdout,
			"campaign %s: cancel requested; the controller has not carried it "
			"out within %d s (it will)\n",
			id, CANCEL_WAIT_MS / 1000);
	}
out:
	json_decref(c);
	ctl_error_done(&err);
	ctl_state_free(st);
	httpc_free(api);
	return rc;
}

const struct cli_command cli_campaign_commands[] = {
	{"validate",
	 "--cluster C --playbook F [--tests a,b] [--nodes SELECTOR]\n"
	 "        [--transport tcp|verbs] [--quick] [--seed N] [--allow-missing]\n"
	 "        [--signoff] [--dry-run] [--json] [--no-wait] [--state-dir D]",
	 "run the playbook's validation campaign over the cluster and print its verdict "
	 "(Ctrl-C cancels it)",
	 cmd_validate},
	{"campaigns", "[--json] [--state-dir D]", "list recent validation campaigns",
	 cmd_campaigns},
	{"campaign show", "ID [--json] [--results] [--state-dir D]",
	 "show a campaign: progress while it runs, then its verdict", cmd_show},
	{"campaign cancel", "ID [--no-wait] [--state-dir D]", "cancel a running campaign",
	 cmd_cancel},
	{0},
};
