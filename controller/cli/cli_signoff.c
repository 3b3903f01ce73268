/* railyard-controller signoff create|list|show|export|verify and revalidate: the front end of
 * the sign-off service (docs/signoff.md). create asks the serving controller to sign (its REST
 * API over api.sock); list, show and export read the database. verify works offline: no state
 * directory, no network. revalidate has the serving controller check (or apply) the
 * configuration, run the baseline's campaign again and sign a report that compares the two, and
 * follows it. */
#include "controller/campaign/campaign.h"
#include "controller/cli/cli.h"
#include "common/httpc/httpc.h"
#include "controller/rollout/deploy.h"
#include "controller/signoff/revalidate.h"
#include "controller/signoff/signoff.h"
#include "controller/state.h"
#include "controller/store/store.h"
#include "controller/store/store_signoff.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long a campaign's sign-off may take to appear once the campaign ended. */
#define SIGNOFF_WAIT_MS 60000
/* How long revalidate waits for its deployment. */
#define DEPLOY_WAIT_MS (30 * 60 * 1000)
#define POLL_MS	       200

enum {
	OPT_STATE_DIR = 900,
	OPT_JSON,
	OPT_CAMPAIGN,
	OPT_DIR,
	OPT_CA,
	OPT_CLUSTER,
	OPT_BASELINE,
	OPT_PLAYBOOK,
	OPT_APPLY,
	OPT_BW,
	OPT_LAT,
	OPT_REPORT
};

#define JSTR(o, k) json_string_value(json_object_get((o), (k)))

static int exit_of(const struct ctl_error *e)
{
	return strcmp(e->code, CTL_ERR_INVALID) == 0 ? 2 : 1;
}

/* "so-1a2b3c4d  pass  prod-a  signoff  2026-12-01T04:30:00Z  c-…" and, when stale, why. */
void cli_signoff_print(FILE *out, const json_t *s, bool reasons)
{
	const json_t *r;
	size_t i;

	/* Never a bare pass: the label says "pass (smoke)", "pass +1 excluded (acceptance)". */
	util_fprintf_safe(out, "%-11s %-22s %-12s %-12s %s  campaign %s%s%s%s\n", JSTR(s, "id"),
			  JSTR(s, "label") ? JSTR(s, "label") : JSTR(s, "verdict"),
			  JSTR(s, "cluster"), JSTR(s, "kind"), JSTR(s, "created_at"),
			  JSTR(s, "campaign"), JSTR(s, "baseline") ? "  baseline " : "",
			  JSTR(s, "baseline") ? JSTR(s, "baseline") : "",
			  json_is_true(json_object_get(s, "stale")) ? "  STALE" : "");
	if (!reasons)
		return;
	util_fprintf_safe(out, "  sha256 %s, %lld bytes\n", JSTR(s, "sha256"),
			  (long long)json_integer_value(json_object_get(s, "size")));
	json_array_foreach(json_object_get(s, "summary"), i, r)
		util_fprintf_safe(out, "  %s\n", json_string_value(r));
	json_array_foreach(json_object_get(s, "reasons"), i, r)
		util_fprintf_safe(out, "  stale: %s\n", json_string_value(r));
}

/* The four commands over the service share their options and their shape. */
enum so_act { SO_CREATE, SO_LIST, SO_SHOW, SO_EXPORT };

struct so_args {
	const char *state_dir, *campaign, *cluster, *dir;
	bool json, report;
};

/* Options of act (each command takes only its own), then its positionals (show, export: ID). */
static int so_parse(const struct cli_command *cmd, enum so_act act, int argc, char **argv,
		    struct so_args *a)
{
	static const struct option opts[] = {
		{"state-dir", required_argument, NULL, OPT_STATE_DIR},
		{"json", no_argument, NULL, OPT_JSON},
		{"campaign", required_argument, NULL, OPT_CAMPAIGN},
		{"cluster", required_argument, NULL, OPT_CLUSTER},
		{"report", no_argument, NULL, OPT_REPORT},
		{"dir", required_argument, NULL, OPT_DIR},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int ch;

	a->state_dir = CTL_DEFAULT_STATE_DIR;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (ch == OPT_STATE_DIR)
			a->state_dir = optarg;
		else if (ch == OPT_JSON && act != SO_EXPORT)
			a->json = true;
		else if (ch == OPT_CAMPAIGN && act == SO_CREATE)
			a->campaign = optarg;
		else if (ch == OPT_CLUSTER && act == SO_LIST)
			a->cluster = optarg;
		else if (ch == OPT_REPORT && act == SO_SHOW)
			a->report = a->json = true;
		else if (ch == OPT_DIR && act == SO_EXPORT)
			a->dir = optarg;
		else
			return cli_usage(cmd, ch == 'h' ? stdout : stderr);
	}
	if ((ch = cli_positionals(cmd, argc, argv, act == SO_SHOW || act == SO_EXPORT)) != 0)
		return ch;
	if (act == SO_CREATE && !a->campaign)
		return cli_bad("signoff create", "(--campaign is required)");
	if (act == SO_EXPORT && !a->dir)
		return cli_bad("signoff export", "(--dir is required)");
	return 0;
}

static void so_print(enum so_act act, const struct so_args *a, const json_t *doc)
{
	const json_t *e;
	size_t i;

	if (a->json) {
		cli_print_json(stdout, doc);
	} else if (act == SO_LIST) {
		json_array_foreach(doc, i, e) cli_signoff_print(stdout, e, false);
	} else if (act == SO_EXPORT) {
		json_array_foreach(json_object_get(doc, "files"), i, e)
			util_fprintf_safe(stdout, "%s\n", json_string_value(e));
	} else {
		cli_signoff_print(stdout, doc, true);
	}
}

/* signoff create: the serving controller signs (one writer). */
static int so_create(const struct so_args *a, json_t **ret, struct ctl_error *err)
{
	struct httpc *api = NULL;
	json_t *body;
	int r;

	if (cli_api_need("signoff create", a->state_dir, &api) != 0)
		return 1;
	body = json_pack("{s:s}", "campaign", a->campaign);
	r = body ? cli_api_call(api, "POST", "/api/v1/signoffs", body, NULL, ret, err)
		 : ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "campaign",
				 "the campaign id is not UTF-8 text");
	json_decref(body);
	httpc_free(api);
	if (r < 0) {
		cli_error(err);
		return exit_of(err);
	}
	return 0;
}

static int so_command(const struct cli_command *cmd, int argc, char **argv, enum so_act act)
{
	struct so_args a = {0};
	struct ctl_state *st = NULL;
	struct ctl_error err;
	json_t *doc = NULL;
	int r = so_parse(cmd, act, argc, argv, &a), rc = 1;

	if (r != 0)
		return r;
	if (act == SO_CREATE) {
		ctl_error_init(&err);
		rc = so_create(&a, &doc, &err);
		if (rc == 0)
			so_print(act, &a, doc);
		json_decref(doc);
		ctl_error_done(&err);
		return rc;
	}
	if (cli_open_state(a.state_dir, false, &st) < 0)
		return 1;
	ctl_error_init(&err);
	if (act == SO_LIST)
		r = ctl_signoff_list(st->store, a.cluster, 0, &doc, &err);
	else if (act == SO_SHOW)
		r = ctl_signoff_get(st->store, argv[optind], a.report, &doc, &err);
	else
		r = ctl_signoff_export(st, argv[optind], a.dir, &doc, &err);
	if (r < 0) {
		cli_error(&err);
		rc = exit_of(&err);
	} else {
		so_print(act, &a, doc);
		rc = 0;
	}
	json_decref(doc);
	ctl_error_done(&err);
	ctl_state_free(st);
	return rc;
}

static int cmd_create(const struct cli_command *cmd, int argc, char **argv)
{
	return so_command(cmd, argc, argv, SO_CREATE);
}

static int cmd_list(const struct cli_command *cmd, int argc, char **argv)
{
	return so_command(cmd, argc, argv, SO_LIST);
}

static int cmd_show(const struct cli_command *cmd, int argc, char **argv)
{
	return so_command(cmd, argc, argv, SO_SHOW);
}

static int cmd_export(const struct cli_command *cmd, int argc, char **argv)
{
	return so_command(cmd, argc, argv, SO_EXPORT);
}

static int cmd_verify(const struct cli_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"ca", required_argument, NULL, OPT_CA},
		{"json", no_argument, NULL, OPT_JSON},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	const char *ca = NULL;
	json_t *doc = NULL;
	bool json = false;
	int ch, r;
	enum so_verify_status s;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (ch == OPT_CA)
			ca = optarg;
		else if (ch == OPT_JSON)
			json = true;
		else
			return cli_usage(cmd, ch == 'h' ? stdout : stderr);
	}
	if ((r = cli_positionals(cmd, argc, argv, 2)) != 0)
		return r;
	if (!ca)
		return cli_bad("signoff verify", "(--ca is required)");
	s = so_verify_files(argv[optind], argv[optind + 1], ca, &doc);
	if (json)
		cli_print_json(stdout, doc);
	else
		so_verify_print(stdout, stderr, "railyard-controller", doc);
	json_decref(doc);
	return (int)s;
}

/* Wait for the sign-off of campaign id (the serving controller signs it as the campaign ends). */
int cli_signoff_wait(struct store *st, const char *campaign, json_t **ret)
{
	int64_t deadline = util_now_mono_ms() + SIGNOFF_WAIT_MS;

	for (;;) {
		struct store_signoff *so = NULL;
		struct ctl_error err;
		int r = store_signoff_of_campaign(st, campaign, &so);

		if (r >= 0) {
			ctl_error_init(&err);
			r = ctl_signoff_get(st, so->id, false, ret, &err);
			if (r < 0)
				cli_error(&err);
			ctl_error_done(&err);
			store_signoff_free(so);
			return r;
		}
		if (r != -RY_E_NOT_FOUND || util_now_mono_ms() > deadline) {
			log_error("campaign %s: no sign-off %s", campaign,
				  r == -RY_E_NOT_FOUND ? "appeared (see the controller's log)"
						       : ry_strerror(r));
			return -1;
		}
		usleep(POLL_MS * 1000);
	}
}

struct reval {
	const char *cluster, *baseline, *playbook;
	bool apply, json;
	double bw, lat;
};

/* Wait until revalidation id has ended, or (unless to_end) has a deployment other than dep or a
 * campaign; *ret: its latest view. A signal asks the serving controller to cancel
 * it (once). 0, or -1 said. */
static int reval_wait(struct store *st, struct httpc *api, const char *id, const char *dep,
		      bool to_end, json_t **ret)
{
	bool asked = false;

	for (;;) {
		struct ctl_error err;
		json_t *v = NULL;
		int r;

		ctl_error_init(&err);
		r = ctl_revalidate_get(st, id, &v, &err);
		if (r < 0) {
			cli_error(&err);
			ctl_error_done(&err);
			return -1;
		}
		if (cli_interrupted && !asked) {
			char path[256];

			asked = true;
			fprintf(stderr, "revalidate: interrupted; cancelling %s\n", id);
			if (cli_api_path(path, sizeof(path), "/api/v1/revalidations/", id,
					 "/cancel") == 0 &&
			    cli_api_call(api, "POST", path, NULL, NULL, NULL, &err) < 0 &&
			    strcmp(err.code, CTL_ERR_CONFLICT) != 0)
				cli_error(&err);
		}
		ctl_error_done(&err);
		if ((!to_end &&
		     ((JSTR(v, "deployment") && strcmp(JSTR(v, "deployment"), dep) != 0) ||
		      JSTR(v, "campaign"))) ||
		    ctl_revalidate_state_final(JSTR(v, "state"))) {
			json_decref(*ret);
			*ret = v;
			return 0;
		}
		json_decref(v);
		usleep(POLL_MS * 1000);
	}
}

/* The revalidation as the serving controller runs it: its deployment followed node by node,
 * then its campaign round by round; *ret its final view. 0, or -1 said. */
static int revalidate_follow(struct ctl_state *st, struct httpc *api, const struct reval *rv,
			     const char *id, json_t **ret)
{
	FILE *out = rv->json ? stderr : stdout;
	json_t *camp = NULL;
	int r;

	char last[64] = "";
	size_t k = 0;

	/* Each configuration check in turn (the baseline's playbooks), then the campaign. A check
	 * may start and end between two polls: every check that has a deployment by now is shown,
	 * in the plan's order, with its own deployment. */
	for (;;) {
		const json_t *checks, *pb;
		const char *dep;
		size_t n;

		if (reval_wait(st->store, api, id, last, false, ret) < 0)
			return -1;
		checks = json_object_get(*ret, "checks");
		n = json_array_size(checks);
		dep = JSTR(*ret, "deployment");
		if (!dep || (n == 0 && strcmp(dep, last) == 0))
			break;
		while (k < (n ? n : 1)) {
			const char *d = n ? JSTR(json_array_get(checks, k), "deployment") : dep;

			if (!d || (n == 0 && strcmp(d, last) == 0))
				break;
			pb = json_object_get(json_array_get(checks, k), "playbook");
			util_fprintf_safe(
				out,
				"revalidate %s: configuration %zu of %zu: %s %s, deployment "
				"%s, %s\n",
				id, k + 1, n ? n : 1,
				JSTR(pb, "name") ? JSTR(pb, "name") : "the playbook",
				JSTR(pb, "version") ? JSTR(pb, "version") : "", d,
				rv->apply ? "applying it" : "check mode (nothing changed)");
			fflush(out);
			cli_deploy_follow(st->store, d, DEPLOY_WAIT_MS, out);
			snprintf(last, sizeof(last), "%s", d);
			k++;
		}
		if (k >= (n ? n : 1) || JSTR(*ret, "campaign") ||
		    ctl_revalidate_state_final(JSTR(*ret, "state")))
			break;
	}
	if (JSTR(*ret, "campaign") && !cli_interrupted) {
		util_fprintf_safe(out, "revalidate %s: campaign %s, the baseline's again\n", id,
				  JSTR(*ret, "campaign"));
		fflush(out);
		/* Its Ctrl-C cancels the campaign; the revalidation then ends failed. */
		r = cli_campaign_follow(st->store, JSTR(*ret, "campaign"), out, api, &camp);
		json_decref(camp);
		if (r < 0)
			return -1;
	}
	return reval_wait(st->store, api, id, "", true, ret);
}

static int parse_pct(const char *what, const char *s, double *ret)
{
	char *end;

	*ret = strtod(s, &end);
	if (!s[0] || *end || !(*ret > 0) || *ret > 1000)
		return cli_bad(what, s);
	return 0;
}

static int cmd_revalidate(const struct cli_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"state-dir", required_argument, NULL, OPT_STATE_DIR},
		{"json", no_argument, NULL, OPT_JSON},
		{"cluster", required_argument, NULL, OPT_CLUSTER},
		{"baseline", required_argument, NULL, OPT_BASELINE},
		{"playbook", required_argument, NULL, OPT_PLAYBOOK},
		{"apply", no_argument, NULL, OPT_APPLY},
		{"tolerance-bw", required_argument, NULL, OPT_BW},
		{"tolerance-lat", required_argument, NULL, OPT_LAT},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	const char *state_dir = CTL_DEFAULT_STATE_DIR;
	struct reval rv = {0};
	struct ctl_state *st = NULL;
	struct httpc *api = NULL;
	struct ctl_error err;
	json_t *body = NULL, *made = NULL, *v = NULL, *so = NULL;
	char *pb_text = NULL, id[64];
	size_t pb_len = 0;
	int ch, r, rc = 1;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case OPT_STATE_DIR:
			state_dir = optarg;
			break;
		case OPT_JSON:
			rv.json = true;
			break;
		case OPT_CLUSTER:
			rv.cluster = optarg;
			break;
		case OPT_BASELINE:
			rv.baseline = optarg;
			break;
		case OPT_PLAYBOOK:
			rv.playbook = optarg;
			break;
		case OPT_APPLY:
			rv.apply = true;
			break;
		case OPT_BW:
			if (parse_pct("--tolerance-bw", optarg, &rv.bw))
				return 2;
			break;
		case OPT_LAT:
			if (parse_pct("--tolerance-lat", optarg, &rv.lat))
				return 2;
			break;
		default:
			return cli_usage(cmd, ch == 'h' ? stdout : stderr);
		}
	}
	if ((r = cli_positionals(cmd, argc, argv, 0)) != 0)
		return r;
	if (!rv.cluster || !rv.baseline)
		return cli_bad("revalidate", "(--cluster and --baseline are required)");
	if (rv.playbook && cli_read_playbook("revalidate", rv.playbook, &pb_text, &pb_len))
		return 1;
	ctl_error_init(&err);
	/* The serving controller runs it (one writer); following it reads the database. */
	if (cli_api_need("revalidate", state_dir, &api) != 0 ||
	    cli_open_state(state_dir, false, &st) < 0)
		goto out;
	body = json_pack("{s:s, s:s, s:b, s:f, s:f}", "cluster", rv.cluster, "baseline",
			 rv.baseline, "apply", rv.apply, "tolerance_bw_pct", rv.bw,
			 "tolerance_lat_pct", rv.lat);
	if (!body ||
	    (pb_text && json_object_set_new(body, "playbook", json_stringn(pb_text, pb_len)) < 0)) {
		log_error("revalidate: %s",
			  pb_text ? "the playbook is not UTF-8 text" : "out of memory");
		goto out;
	}
	r = cli_api_call(api, "POST", "/api/v1/revalidations", body, rv.playbook, &made, &err);
	if (r < 0) {
		cli_error(&err);
		rc = strcmp(err.code, CTL_ERR_INVALID) == 0 ? 2 : 1;
		goto out;
	}
	snprintf(id, sizeof(id), "%s", JSTR(made, "id"));
	util_fprintf_safe(rv.json ? stderr : stdout,
			  "revalidate %s: against %s, run by the serving "
			  "controller\n",
			  id, rv.baseline);
	sigaction(SIGINT, &(struct sigaction){.sa_handler = cli_on_interrupt}, NULL);
	sigaction(SIGTERM, &(struct sigaction){.sa_handler = cli_on_interrupt}, NULL);
	if (revalidate_follow(st, api, &rv, id, &v) < 0)
		goto out;
	if (strcmp(JSTR(v, "state"), "signed") != 0) {
		log_error("revalidate %s: %s%s%s; no report", id, JSTR(v, "state"),
			  JSTR(v, "reason") ? ": " : "",
			  JSTR(v, "reason") ? JSTR(v, "reason") : "");
		rc = cli_interrupted ? 130 : 1;
		goto out;
	}
	r = ctl_signoff_get(st->store, JSTR(v, "signoff"), false, &so, &err);
	if (r < 0) {
		cli_error(&err);
		goto out;
	}
	if (rv.json) {
		cli_print_json(stdout, so);
	} else {
		json_t *camp = NULL;

		/* The sign-off first: its verdict and summary lead with the regressions and the
		 * configuration checks; the campaign's own verdict follows. */
		cli_signoff_print(stdout, so, true);
		if (ctl_campaign_get(st->store, JSTR(v, "campaign"), false, &camp, &err) == 0)
			cli_campaign_print_verdict(stdout, camp);
		json_decref(camp);
	}
	rc = cli_interrupted ? 130 : strcmp(JSTR(so, "verdict"), "pass") == 0 ? 0 : 1;
out:
	json_decref(body);
	json_decref(made);
	json_decref(v);
	json_decref(so);
	ctl_error_done(&err);
	free(pb_text);
	ctl_state_free(st);
	httpc_free(api);
	return rc;
}

const struct cli_command cli_signoff_commands[] = {
	{"signoff create", "--campaign ID [--json] [--state-dir D]",
	 "sign the report of a finished campaign", cmd_create},
	{"signoff list", "[--cluster C] [--json] [--state-dir D]", "list sign-offs, newest first",
	 cmd_list},
	{"signoff show", "ID [--json] [--report] [--state-dir D]",
	 "show a sign-off: verdict, summary, and whether it is stale (and why)", cmd_show},
	{"signoff export", "ID --dir D [--state-dir D]",
	 "write signoff.json, signoff.p7s, signoff.html and ca.pem into a directory", cmd_export},
	{"signoff verify", "REPORT.json SIGNATURE.p7s --ca CA.pem [--json]",
	 "verify a sign-off offline (exit 0 verified, 1 not verified, 2 usage, 3 bad report)",
	 cmd_verify},
	{"revalidate",
	 "--cluster C --baseline SIGNOFF [--playbook F] [--apply]\n"
	 "        [--tolerance-bw PCT] [--tolerance-lat PCT] [--json] [--state-dir D]",
	 "check (or --apply) the configuration, rerun the baseline's campaign, sign a report "
	 "compared with the baseline",
	 cmd_revalidate},
	{0},
};
