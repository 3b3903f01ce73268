/* railyard signoff list|show|export|verify and revalidate: sign-offs read over the API,
 * exported as the four files a customer keeps (signoff.json, signoff.p7s, signoff.html, ca.pem),
 * verified offline by the verifier railyard-controller has too (common/signoff/verify.h). */
#include "client/rc.h"
#include "common/signoff/verify.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
	OPT_CLUSTER = 900,
	OPT_DIR,
	OPT_CA_FILE,
	OPT_BASELINE,
	OPT_PLAYBOOK,
	OPT_APPLY,
	OPT_BW,
	OPT_LAT,
	OPT_MAINTENANCE,
	OPT_MT_BATCH,
	OPT_MT_MIN,
	OPT_MT_JOBS,
	OPT_MT_NODES,
};

/* "/api/v1/signoffs/ID[/FILE]" into buf: 0, or RC_USAGE for an ID too long. */
static int signoff_path(char *buf, size_t len, const char *id, const char *file)
{
	char *e = httpc_escape(id);
	size_t n = e ? (size_t)snprintf(buf, len, "/api/v1/signoffs/%s%s%s", e, file ? "/" : "",
					file ? file : "")
		     : len;

	free(e);
	return n < len ? 0 : rc_bad("sign-off id", id);
}

/* A sign-off at length: its line, then what failed from its signed report (fetched; without it
 * the line and summary alone), its summary and digest. */
static void print_signoff(struct rc *rc, const json_t *so)
{
	json_t *report = NULL;
	char path[512], *data = NULL;
	size_t len = 0;

	if (signoff_path(path, sizeof(path), rc_str(so, "id", ""), "signoff.json") == 0 &&
	    rc_api_bytes(rc, path, &data, &len) == 0)
		report = json_loadb(data, len, 0, NULL);
	free(data);
	rc_print_signoff(stdout, so, true, report);
	json_decref(report);
}

static int cmd_list(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"cluster", required_argument, NULL, OPT_CLUSTER},
		{0},
	};
	const char *cluster = NULL;
	char path[512], *e = NULL;
	json_t *items = NULL, *s;
	size_t i;
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, opts)) != -1) {
		if (c != OPT_CLUSTER)
			return rc_usage(cmd, c);
		cluster = optarg;
	}
	if ((r = rc_positionals(cmd, argc, argv, 0, false)) != 0)
		return r;
	if (cluster && (!(e = httpc_escape(cluster)) || strlen(e) > 400)) {
		free(e);
		return rc_bad("--cluster", cluster);
	}
	snprintf(path, sizeof(path), "/api/v1/signoffs%s%s", e ? "?cluster=" : "", e ? e : "");
	free(e);
	if ((r = rc_api_list(rc, path, &items)) != 0)
		return r;
	if (rc->json) {
		r = rc_print_list(items);
	} else {
		printf("%-11s %-22s %-12s %-12s %-20s  %s\n", "ID", "VERDICT", "CLUSTER", "KIND",
		       "CREATED", "CAMPAIGN");
		json_array_foreach(items, i, s)
		{
			rc_print_signoff(stdout, s, false, NULL);
		}
	}
	json_decref(items);
	return r;
}

static int cmd_show(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {{"report", no_argument, NULL, 'r'}, {0}};
	json_t *doc = NULL;
	bool report = false;
	char path[512];
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, opts)) != -1) {
		if (c != 'r')
			return rc_usage(cmd, c);
		report = true;
	}
	if ((r = rc_positionals(cmd, argc, argv, 1, false)) != 0)
		return r;
	/* --report: the signed report itself, the bytes that signoff.p7s signs. */
	if (report) {
		char *data = NULL;
		size_t len = 0;

		if ((r = signoff_path(path, sizeof(path), argv[optind], "signoff.json")) != 0 ||
		    (r = rc_api_bytes(rc, path, &data, &len)) != 0)
			return r;
		r = fwrite(data, 1, len, stdout) == len ? RC_OK : RC_FAILED;
		free(data);
		return r;
	}
	if ((r = signoff_path(path, sizeof(path), argv[optind], NULL)) != 0 ||
	    (r = rc_api(rc, "GET", path, NULL, &doc)) != 0)
		return r;
	if (rc->json)
		r = rc_print_json(stdout, doc);
	else
		print_signoff(rc, doc);
	json_decref(doc);
	return r;
}

static int cmd_create(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {{"campaign", required_argument, NULL, 'c'}, {0}};
	const char *campaign = NULL;
	json_t *body = NULL, *doc = NULL;
	int c, r;

	/* signoff create CAMPAIGN; --campaign ID is the old spelling. */
	while ((c = rc_getopt(rc, argc, argv, opts)) != -1) {
		if (c != 'c')
			return rc_usage(cmd, c);
		campaign = optarg;
	}
	if ((r = rc_positionals(cmd, argc, argv, campaign ? 0 : 1, false)) != 0)
		return r;
	if (!campaign)
		campaign = argv[optind];
	if (!(body = json_pack("{s:s}", "campaign", campaign)))
		return rc_bad("campaign id", campaign);
	if ((r = rc_api(rc, "POST", "/api/v1/signoffs", body, &doc)) == 0) {
		if (rc->json)
			r = rc_print_json(stdout, doc);
		else
			print_signoff(rc, doc);
	}
	json_decref(body);
	json_decref(doc);
	return r;
}

/* Download path into dir/name. 0 or the exit code. */
static int download(struct rc *rc, const char *path, const char *dir, const char *name,
		    json_t *files)
{
	char *data = NULL, out[PATH_MAX];
	size_t len = 0;
	int r = rc_api_bytes(rc, path, &data, &len);

	if (r != 0)
		return r;
	if ((size_t)snprintf(out, sizeof(out), "%s/%s", dir, name) >= sizeof(out)) {
		free(data);
		return rc_bad("--dir (too long)", dir);
	}
	r = fs_write_file_atomic(out, data, len, 0644);
	free(data);
	if (r < 0) {
		util_fprintf_safe(stderr, RC_PROG ": writing %s: %s\n", out, ry_strerror(r));
		return RC_FAILED;
	}
	json_array_append_new(files, json_string(out));
	return 0;
}

static int cmd_export(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"dir", required_argument, NULL, OPT_DIR},
		{0},
	};
	static const char *const names[] = {"signoff.json", "signoff.p7s", "signoff.html"};
	const char *dir = NULL, *id;
	json_t *files = json_array(), *f;
	char path[512];
	size_t i;
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, opts)) != -1) {
		if (c != OPT_DIR) {
			json_decref(files);
			return rc_usage(cmd, c);
		}
		dir = optarg;
	}
	if ((r = rc_positionals(cmd, argc, argv, 1, false)) != 0)
		goto out;
	id = argv[optind];
	if (!dir) {
		r = rc_bad("signoff export", "(--dir is required)");
		goto out;
	}
	if (!files || (r = fs_mkdir_p(dir, 0755)) < 0) {
		util_fprintf_safe(stderr, RC_PROG ": %s: %s\n", dir,
				  files ? ry_strerror(r) : "out of memory");
		r = RC_FAILED;
		goto out;
	}
	for (i = 0; i < RY_ARRAY_SIZE(names); i++)
		if ((r = signoff_path(path, sizeof(path), id, names[i])) != 0 ||
		    (r = download(rc, path, dir, names[i], files)) != 0)
			goto out;
	/* The CA that signed it, so that the directory verifies on its own. */
	if ((r = download(rc, "/api/v1/ca.pem", dir, "ca.pem", files)) != 0)
		goto out;
	if (rc->json) {
		json_t *doc = json_pack("{s:s, s:s, s:O}", "id", id, "dir", dir, "files", files);

		r = doc ? rc_print_json(stdout, doc) : RC_FAILED;
		json_decref(doc);
	} else {
		json_array_foreach(files, i, f)
			util_fprintf_safe(stdout, "%s\n", json_string_value(f));
		/* How to check them, on stderr: stdout stays the list of files. */
		util_fprintf_safe(stderr, "verify them in %s with\n", dir);
		fputs("  " SO_VERIFY_RAILYARD "\nor with stock OpenSSL (both steps: the first "
		      "alone accepts any certificate the CA issued):\n" SO_VERIFY_OPENSSL "\n",
		      stderr);
	}
out:
	json_decref(files);
	return r;
}

/* Verified here, offline, by the same code as railyard-controller's (common/signoff/verify.c):
 * nothing is sent to the API and no other program is needed. */
static int cmd_verify(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	enum so_verify_status s;
	json_t *doc = NULL;
	int c, r;

	/* --ca is a global option: here it names the CA that signed the report. */
	while ((c = rc_getopt(rc, argc, argv, (const struct option[]){{0}})) != -1)
		return rc_usage(cmd, c);
	if ((r = rc_positionals(cmd, argc, argv, 2, false)) != 0)
		return r;
	if (!rc->ca)
		return rc_bad("signoff verify", "(--ca is required: the exported ca.pem)");
	s = so_verify_files(argv[optind], argv[optind + 1], rc->ca, &doc);
	if (rc->json && doc)
		rc_print_json(stdout, doc);
	else
		so_verify_print(stdout, stderr, RC_PROG, doc);
	json_decref(doc);
	return doc ? (int)s : RC_FAILED;
}

#define RV_POLL_MS 500

/* Follow a revalidation (path: its URL path) until it ends, a line when its state or part
 * changes; Ctrl-C asks for its cancel once. 0 with *ret its last view, or the exit code. */
/* Each configuration check (the baseline's playbooks, in order) once its deployment exists, and
 * again once that deployment ends: *started and *ended count what was shown. */
static void rv_checks(FILE *out, const json_t *v, size_t *started, size_t *ended)
{
	const json_t *checks = json_object_get(v, "checks");
	size_t n = json_array_size(checks);

	for (; *started < n; (*started)++) {
		const json_t *c = json_array_get(checks, *started),
			     *pb = json_object_get(c, "playbook");

		if (!JSTR(c, "deployment"))
			break;
		util_fprintf_safe(
			out, "revalidate %s: configuration %zu of %zu: %s %s, deployment %s, %s\n",
			rc_str(v, "id", "?"), *started + 1, n, rc_str(pb, "name", "the playbook"),
			rc_str(pb, "version", ""), JSTR(c, "deployment"),
			json_is_true(json_object_get(c, "check_mode"))
				? "check mode (nothing changed)"
				: "applying it");
	}
	for (; *ended < *started; (*ended)++) {
		const json_t *c = json_array_get(checks, *ended);

		if (!rc_deploy_final(rc_str(c, "state", "")))
			break;
		util_fprintf_safe(out, "revalidate %s: configuration %zu of %zu: %s%s%s\n",
				  rc_str(v, "id", "?"), *ended + 1, n, rc_str(c, "state", "?"),
				  JSTR(c, "reason") ? ": " : "", rc_str(c, "reason", ""));
	}
}

static int rv_follow(struct rc *rc, const char *path, FILE *out, json_t **ret)
{
	char last[256] = "", cancel[512];
	size_t started = 0, ended = 0;
	bool asked = false;
	json_t *v = NULL;
	int r;

	for (;;) {
		char now[256];

		if ((r = rc_api(rc, "GET", path, NULL, &v)) != 0)
			return r;
		rv_checks(out, v, &started, &ended);
		snprintf(now, sizeof(now), "%s %s %s", rc_str(v, "state", "?"),
			 rc_str(v, "deployment", "-"), rc_str(v, "campaign", "-"));
		if (strcmp(now, last) != 0) {
			const char *st = rc_str(v, "state", "?");

			util_fprintf_safe(
				out, "revalidate %s: %s%s%s%s%s\n", rc_str(v, "id", "?"), st,
				strcmp(st, "configuring") == 0 ? ", deployment " : "",
				strcmp(st, "configuring") == 0 ? rc_str(v, "deployment", "?") : "",
				strcmp(st, "validating") == 0 ? ", campaign " : "",
				strcmp(st, "validating") == 0 ? rc_str(v, "campaign", "?") : "");
			fflush(out);
			snprintf(last, sizeof(last), "%s", now);
		}
		if (strcmp(rc_str(v, "state", ""), "signed") == 0 ||
		    strcmp(rc_str(v, "state", ""), "failed") == 0 ||
		    strcmp(rc_str(v, "state", ""), "cancelled") == 0)
			break;
		if (rc_interrupted && !asked) {
			asked = true;
			util_fprintf_safe(stderr, "revalidate %s: interrupted; cancelling it\n",
					  rc_str(v, "id", "?"));
			snprintf(cancel, sizeof(cancel), "%s/cancel", path);
			r = rc_api(rc, "POST", cancel, NULL, NULL);
			/* 409: it ended meanwhile; the next poll shows how. */
			if (r != 0 && r != RC_FAILED) {
				json_decref(v);
				return r;
			}
		}
		json_decref(v);
		v = NULL;
		usleep(RV_POLL_MS * 1000);
	}
	*ret = v;
	return 0;
}

/* Revalidation runs in the serving controller (POST /api/v1/revalidations); the command follows
 * it and prints the sign-off it made. */
static int cmd_revalidate(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"cluster", required_argument, NULL, OPT_CLUSTER},
		{"baseline", required_argument, NULL, OPT_BASELINE},
		{"playbook", required_argument, NULL, OPT_PLAYBOOK},
		{"apply", no_argument, NULL, OPT_APPLY},
		{"tolerance-bw", required_argument, NULL, OPT_BW},
		{"tolerance-lat", required_argument, NULL, OPT_LAT},
		{"maintenance", no_argument, NULL, OPT_MAINTENANCE},
		{"batch", required_argument, NULL, OPT_MT_BATCH},
		{"min-in-service", required_argument, NULL, OPT_MT_MIN},
		{"job-timeout", required_argument, NULL, OPT_MT_JOBS},
		{"nodes", required_argument, NULL, OPT_MT_NODES},
		{0},
	};
	const char *cluster = NULL, *baseline = NULL, *playbook = NULL;
	const char *mt_batch = NULL, *mt_min = NULL, *mt_nodes = NULL;
	int64_t mt_jobs = 0;
	bool maintenance = false;
	json_t *body = json_object(), *doc = NULL, *v = NULL, *so = NULL;
	char *text = NULL, *id = NULL, path[256];
	FILE *out;
	int c, r;

	if (!body)
		return RC_FAILED;
	while ((c = rc_getopt(rc, argc, argv, opts)) != -1) {
		int64_t pct;

		switch (c) {
		case OPT_CLUSTER:
			cluster = optarg;
			break;
		case OPT_BASELINE:
			baseline = optarg;
			break;
		case OPT_PLAYBOOK:
			playbook = optarg;
			break;
		case OPT_APPLY:
			json_object_set_new(body, "apply", json_true());
			break;
		case OPT_MAINTENANCE:
			maintenance = true;
			break;
		case OPT_MT_BATCH:
			mt_batch = optarg;
			break;
		case OPT_MT_MIN:
			mt_min = optarg;
			if (rc_parse_fraction(optarg) < 0) {
				r = rc_bad("--min-in-service (a fraction in [0, 1), or P%)",
					   optarg);
				goto out;
			}
			break;
		case OPT_MT_JOBS:
			if ((r = rc_parse_duration("--job-timeout", optarg, 1000, 7LL * 86400000,
						   &mt_jobs)) != 0)
				goto out;
			break;
		case OPT_MT_NODES:
			mt_nodes = optarg;
			break;
		case OPT_BW:
		case OPT_LAT:
			if ((r = rc_parse_int(c == OPT_BW ? "--tolerance-bw" : "--tolerance-lat",
					      optarg, 1, 1000, &pct)) != 0)
				goto out;
			json_object_set_new(body,
					    c == OPT_BW ? "tolerance_bw_pct" : "tolerance_lat_pct",
					    json_integer(pct));
			break;
		default:
			r = rc_usage(cmd, c);
			goto out;
		}
	}
	if ((r = rc_positionals(cmd, argc, argv, 0, false)) != 0)
		goto out;
	if (!cluster || !baseline) {
		r = rc_bad("revalidate", "(--cluster and --baseline are required)");
		goto out;
	}
	if (!maintenance && (mt_batch || mt_min || mt_jobs || mt_nodes)) {
		r = rc_bad("revalidate", "(--batch, --min-in-service, --job-timeout and --nodes go "
					 "with --maintenance)");
		goto out;
	}
	if (maintenance) {
		/* In batches, drained from the workload manager and handed back (cmd_maint.c):
		 * the configuration is applied, as a maintenance is there to change it. */
		json_t *mb = rc_maint_body(cluster, "revalidate", mt_nodes, mt_batch, mt_min,
					   mt_jobs, true);

		if (mb)
			json_object_set_new(mb, "baseline", json_string(baseline));
		if (mb && playbook) {
			if ((r = rc_read_file("revalidate", playbook, RC_PLAYBOOK_MAX, &text)) !=
			    0) {
				json_decref(mb);
				goto out;
			}
			rc->playbook = playbook;
			json_object_set_new(mb, "playbook", json_string(text));
		}
		r = mb ? rc_maint_run(rc, mb, false) : RC_FAILED;
		json_decref(mb);
		goto out;
	}
	json_object_set_new(body, "cluster", json_string(cluster));
	json_object_set_new(body, "baseline", json_string(baseline));
	if (playbook) {
		if ((r = rc_read_file("revalidate", playbook, RC_PLAYBOOK_MAX, &text)) != 0)
			goto out;
		rc->playbook = playbook;
		json_object_set_new(body, "playbook", json_string(text));
	}
	out = rc->json ? stderr : stdout; /* --json: stdout carries the document alone */
	rc_catch_interrupts();
	if ((r = rc_api(rc, "POST", "/api/v1/revalidations", body, &doc)) != 0)
		goto out;
	if (!(id = httpc_escape(rc_str(doc, "id", "")))) {
		r = RC_FAILED;
		goto out;
	}
	snprintf(path, sizeof(path), "/api/v1/revalidations/%s", id);
	if ((r = rv_follow(rc, path, out, &v)) != 0)
		goto out;
	if (strcmp(rc_str(v, "state", ""), "signed") != 0) {
		util_fprintf_safe(stderr, RC_PROG ": revalidate %s: %s%s%s; no report\n",
				  rc_str(v, "id", "?"), rc_str(v, "state", "?"),
				  JSTR(v, "reason") ? ": " : "", rc_str(v, "reason", ""));
		r = rc_interrupted ? RC_INTERRUPTED : RC_FAILED;
		goto out;
	}
	free(id);
	if (!(id = httpc_escape(rc_str(v, "signoff", "")))) {
		r = RC_FAILED;
		goto out;
	}
	snprintf(path, sizeof(path), "/api/v1/signoffs/%s", id);
	if ((r = rc_api(rc, "GET", path, NULL, &so)) != 0)
		goto out;
	if (rc->json)
		rc_print_json(stdout, so);
	else
		print_signoff(rc, so);
	r = strcmp(rc_str(so, "verdict", ""), "pass") == 0 ? RC_OK : RC_FAILED;
out:
	json_decref(body);
	json_decref(doc);
	json_decref(v);
	json_decref(so);
	free(text);
	free(id);
	return r;
}

const struct rc_command rc_signoff_commands[] = {
	{"signoff create", "CAMPAIGN", "sign a passed campaign's report", cmd_create},
	{"signoff list", "[--cluster C]", "list sign-offs, newest first", cmd_list},
	{"signoff show", "ID [--report]",
	 "show a sign-off: verdict, summary, and whether it is stale (and why)", cmd_show},
	{"signoff export", "ID --dir D",
	 "download signoff.json, signoff.p7s, signoff.html and the CA (ca.pem) into a directory",
	 cmd_export},
	{"signoff verify", "REPORT.json SIGNATURE.p7s --ca CA.pem",
	 "verify a sign-off offline: signature, signer, schema (exit 0 verified, 1 not verified, "
	 "2 usage, 3 bad report)",
	 cmd_verify},
	{"revalidate",
	 "--cluster C --baseline SIGNOFF [--playbook FILE] [--apply]\n"
	 "        [--tolerance-bw PCT] [--tolerance-lat PCT]\n"
	 "        [--maintenance [--batch N|P%] [--min-in-service F|P%] [--job-timeout 1h]\n"
	 "        [--nodes SEL]]",
	 "check the configuration, rerun a sign-off's campaign, sign a report compared with it "
	 "(run by the controller; Ctrl-C cancels it)",
	 cmd_revalidate},
	{0},
};
