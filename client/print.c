/* The CLI's human output shared by its commands: deployments, campaigns and sign-offs look as
 * railyard-controller prints them. Every string that came from the server goes out through
 * util_fprintf_safe(): escaped, so that a host name can neither move the cursor nor forge a
 * line. */
#include "client/rc.h"
#include "common/util/util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int rc_print_json(FILE *f, const json_t *doc)
{
	char *s = json_dumps(doc, JSON_INDENT(2) | JSON_ENCODE_ANY);

	if (!s)
		return RC_FAILED;
	fprintf(f, "%s\n", s);
	free(s);
	return RC_OK;
}

void rc_format_time(int64_t unix_ms, char *buf, size_t len)
{
	time_t t = (time_t)(unix_ms / 1000);
	struct tm tm;

	if (unix_ms <= 0) {
		snprintf(buf, len, "-");
		return;
	}
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

const char *rc_str(const json_t *o, const char *key, const char *dflt)
{
	const char *s = JSTR(o, key);

	return s ? s : dflt;
}

bool rc_deploy_final(const char *state)
{
	return state && strcmp(state, "pending") != 0 && strcmp(state, "running") != 0;
}

bool rc_campaign_final(const char *state)
{
	return state && strcmp(state, "running") != 0;
}

void rc_print_deploy_node(FILE *out, const json_t *n)
{
	const char *msg = JSTR(n, "message");
	const json_t *rb = json_object_get(n, "reboot");
	char reboot[64] = "";

	/* A reboot in its plan (docs/rollout.md, "Reboots"): under way, or how long it took. */
	if (json_is_object(rb) && strcmp(rc_str(rb, "state", ""), "rebooting") == 0)
		snprintf(reboot, sizeof(reboot), ", rebooting (step %lld)", JINT(rb, "step") + 1);
	else if (json_is_object(rb))
		snprintf(reboot, sizeof(reboot), ", rebooted in %.1f s",
			 (double)JINT(rb, "duration_ms") / 1000);
	util_fprintf_safe(out,
			  "  %-14s batch %-2lld %-11s ok %lld, changed %lld, failed %lld, skipped "
			  "%lld%s%s%s\n",
			  rc_str(n, "hostname", "?"), JINT(n, "batch"), rc_str(n, "state", "?"),
			  JINT(n, "ok"), JINT(n, "changed"), JINT(n, "failed"), JINT(n, "skipped"),
			  reboot, msg && *msg ? "  " : "", msg ? msg : "");
}

void rc_campaign_progress(const json_t *c, char *buf, size_t len)
{
	const json_t *p = json_object_get(c, "progress");
	const json_t *test =
		json_array_get(json_object_get(c, "tests"), (size_t)JINT(p, "test_index"));
	long long rounds = JINT(test, "rounds") + JINT(test, "retest_rounds");
	const json_t *eta = json_object_get(p, "eta_s");
	char etas[32] = "";

	if (json_is_integer(eta))
		snprintf(etas, sizeof(etas), " | ETA %lld s", (long long)json_integer_value(eta));
	/* Most important first (a bar too narrow drops fields from the last, rc_fit_fields()):
	 * where it is, what failed, the whole, when it ends. */
	snprintf(buf, len,
		 "test %s, round %lld of %lld%s | %lld done, %lld failed | rounds %lld of "
		 "%lld%s%s",
		 rc_str(p, "test", "-"),
		 /* Past its rounds, a test waits for its retests to be planned. */
		 JINT(p, "round") < rounds ? JINT(p, "round") + 1 : rounds, rounds,
		 json_is_integer(json_object_get(test, "retest_rounds")) ? "" : "+retests",
		 JINT(p, "rows_done"), JINT(p, "rows_failed"), JINT(p, "rounds_done"),
		 JINT(p, "rounds_total"),
		 json_is_true(json_object_get(p, "rounds_total_final")) ? "" : "+", etas);
}

/* A string element of an array ("-" when it is not a string). */
static const char *sv(const json_t *x)
{
	return json_is_string(x) ? json_string_value(x) : "-";
}

/* A node's host name from the campaign's nodes, or its id. */
static const char *host_of(const json_t *c, const char *id)
{
	const json_t *n;
	size_t i;

	json_array_foreach(json_object_get(c, "nodes"), i, n)
	{
		if (id && strcmp(rc_str(n, "id", ""), id) == 0)
			return rc_str(n, "hostname", id);
	}
	return id ? id : "-";
}

static int by_hostname(const void *x, const void *y)
{
	return util_natcmp(JSTR(*(const json_t *const *)x, "hostname"),
			   JSTR(*(const json_t *const *)y, "hostname"));
}

/* The elements of an array sorted by host name (natural order); free() the vector. */
static const json_t **sorted_by_host(const json_t *arr, size_t *ret_n)
{
	size_t n = json_array_size(arr), i;
	const json_t **v = calloc(n ? n : 1, sizeof(*v));
	const json_t *x;

	*ret_n = 0;
	if (!v)
		return NULL;
	json_array_foreach(arr, i, x) v[i] = x;
	qsort(v, n, sizeof(*v), by_hostname);
	*ret_n = n;
	return v;
}

static void print_test(FILE *out, const json_t *t)
{
	char stats[160] = "";
	const char *key;
	const json_t *x;
	size_t len = 0;

	json_object_foreach((json_t *)json_object_get(t, "stats"), key, x)
	{
		/* CPU costs have their own lines (print_cpu_costs). */
		if (strncmp(key, "cpu_", 4) == 0)
			continue;
		if (len < sizeof(stats) - 48 && JINT(x, "n") > 0)
			len += (size_t)snprintf(stats + len, sizeof(stats) - len,
						"%s%s median %.4g", len ? ", " : "", key,
						json_number_value(json_object_get(x, "median")));
	}
	if (json_object_get(t, "victim_pairs"))
		util_fprintf_safe(
			out, "  %-14s %-10s %-12s %-4s %lld victim pair(s), %lld failing  %s\n",
			rc_str(t, "name", "-"), rc_str(t, "kind", "-"), "-",
			rc_str(t, "result", "-"), JINT(t, "victim_pairs"), JINT(t, "failed"),
			stats);
	else
		util_fprintf_safe(
			out,
			"  %-14s %-10s %-12s %-4s %lld of %lld measured, %lld failing the "
			"rules  %s\n",
			rc_str(t, "name", "-"), rc_str(t, "kind", "-"), rc_str(t, "pattern", "-"),
			rc_str(t, "result", "-"), JINT(t, "measured"), JINT(t, "rows"),
			JINT(t, "failed"), stats);
}

static void print_failed_node(FILE *out, const json_t *n)
{
	const json_t *x, *y;
	size_t k, j;

	util_fprintf_safe(out, "  %s (%s): %s\n", rc_str(n, "hostname", "-"), rc_str(n, "id", "-"),
			  strcmp(rc_str(n, "result", ""), "excluded") == 0 ? "EXCLUDED" : "FAIL");
	json_array_foreach(json_object_get(n, "reasons"), k, x)
		util_fprintf_safe(out, "    - %s\n", sv(x));
	json_array_foreach(json_object_get(n, "rails"), k, x)
	{
		if (strcmp(rc_str(x, "result", "fail"), "pass") == 0)
			continue;
		util_fprintf_safe(out, "    rail %lld (%s):\n", JINT(x, "rail"),
				  rc_str(x, "device", "-"));
		json_array_foreach(json_object_get(x, "reasons"), j, y)
			util_fprintf_safe(out, "      - %s\n", sv(y));
	}
}

/* At most this many failing pairs are listed (--json has them all). */
#define RC_PAIRS_SHOWN 20

/* The failing pairs of every test, host names for ids; transients (retested and passed: not
 * failures) apart. */
static void print_pairs(FILE *out, const json_t *c, const json_t *v)
{
	const json_t *t, *f;
	size_t i, k, shown = 0, total = 0, transient = 0, more = 0;

	json_array_foreach(json_object_get(v, "tests"), i, t)
	{
		json_array_foreach(json_object_get(t, "failures"), k, f)
		{
			bool tr = strcmp(rc_str(f, "attributed", ""), "transient") == 0;
			const char *reason;
			char rail[32] = "";
			size_t tn;

			if (tr) {
				transient++;
				continue;
			}
			total++;
			if (shown >= RC_PAIRS_SHOWN)
				continue;
			if (!shown++)
				util_fprintf_safe(out, "failing pairs:\n");
			if (json_is_integer(json_object_get(f, "rail")))
				snprintf(rail, sizeof(rail), " rail %lld", JINT(f, "rail"));
			/* Reasons start with their test's name ("pair-bw: gbps ..."): said once. */
			reason = rc_str(f, "reason", "-");
			tn = strlen(rc_str(t, "name", ""));
			if (tn && strncmp(reason, rc_str(t, "name", ""), tn) == 0 &&
			    strncmp(reason + tn, ": ", 2) == 0)
				reason += tn + 2;
			util_fprintf_safe(out, "  %-12s %s ↔ %s%s: %s (%s)\n",
					  rc_str(t, "name", "-"), host_of(c, JSTR(f, "a")),
					  host_of(c, JSTR(f, "b")), rail, reason,
					  rc_str(f, "attributed", "-"));
		}
		/* The verdict lists a test's first failures; failures_total counts them all. */
		if ((size_t)JINT(t, "failures_total") >
		    json_array_size(json_object_get(t, "failures")))
			more += (size_t)JINT(t, "failures_total") -
				json_array_size(json_object_get(t, "failures"));
	}
	if (total > shown || more)
		util_fprintf_safe(out, "  ... and %zu more (--json lists what the verdict keeps)\n",
				  total - shown + more);
	if (transient)
		util_fprintf_safe(
			out,
			"transient: %zu pair(s) failed once and passed when retested (not "
			"failures)\n",
			transient);
}

/* A verdict (a campaign's, or a signed report's evaluation), failures first: the result and
 * whether it is an acceptance, the failing or excluded nodes in natural order with a reason per
 * line, failing links, failing pairs (host names from who's nodes); with all, then the tests
 * and the findings. */
/* A test's median of field as "%.3g", or "unknown" (the sign-off's words). */
static const char *cpu_med(const json_t *stats, const char *field, char *buf, size_t len)
{
	const json_t *x = json_object_get(stats, field);

	if (JINT(x, "n") <= 0 || !json_is_number(json_object_get(x, "median")))
		return "unknown";
	snprintf(buf, len, "%.3g", json_number_value(json_object_get(x, "median")));
	return buf;
}

/* The CPU each bw test cost next to its bandwidth (docs/campaigns.md, "CPU cost"): a signed
 * report's own lines (cpu_cost[].text), else from the verdict's medians, in the same words. */
static void print_cpu_costs(FILE *out, const json_t *who, const json_t *v)
{
	const json_t *cost = json_object_get(who, "cpu_cost"), *x;
	const char *tr = JSTR(who, "transport");
	char f[8][32];
	size_t i;

	if (json_is_array(cost)) {
		json_array_foreach(cost, i, x)
			util_fprintf_safe(out, "cpu cost: %s\n", rc_str(x, "text", "-"));
		return;
	}
	json_array_foreach(json_object_get(v, "tests"), i, x)
	{
		const json_t *st = json_object_get(x, "stats");

		if (strcmp(rc_str(x, "kind", ""), "collective") == 0 &&
		    JINT(json_object_get(st, "cpu_cores"), "n") > 0) {
			/* In the sign-off's words (so_cpu_cost_line()). */
			util_fprintf_safe(
				out,
				"cpu cost: %s%s%s: bus bandwidth %s GB/s for %s cores over "
				"all ranks (%s CPU-s/GB; host-wide %s CPU-s/GB over the "
				"job's nodes)\n",
				tr ? tr : "", tr ? " " : "", rc_str(x, "name", "?"),
				cpu_med(st, "busbw_gbs", f[0], 32),
				cpu_med(st, "cpu_cores", f[1], 32),
				cpu_med(st, "cpu_s_per_gb", f[2], 32),
				cpu_med(st, "host_cpu_s_per_gb", f[3], 32));
			continue;
		}
		if (strcmp(rc_str(x, "kind", ""), "bw") != 0 ||
		    (JINT(json_object_get(st, "cpu_cores_client"), "n") <= 0 &&
		     JINT(json_object_get(st, "cpu_thread_cores_client"), "n") <= 0))
			continue;
		util_fprintf_safe(
			out,
			"cpu cost: %s%s%s: %s Gb/s for %s cores on the client (%s CPU-s/GB) and %s "
			"on the server (%s CPU-s/GB), host-wide; benchmark threads %s + %s cores "
			"(medians over %lld pairs)\n",
			tr ? tr : "", tr ? " " : "", rc_str(x, "name", "?"),
			cpu_med(st, "gbps", f[0], 32), cpu_med(st, "cpu_cores_client", f[1], 32),
			cpu_med(st, "cpu_s_per_gb_client", f[2], 32),
			cpu_med(st, "cpu_cores_server", f[3], 32),
			cpu_med(st, "cpu_s_per_gb_server", f[4], 32),
			cpu_med(st, "cpu_thread_cores_client", f[5], 32),
			cpu_med(st, "cpu_thread_cores_server", f[6], 32),
			JINT(json_object_get(st, "gbps"), "n"));
	}
}

static void print_evaluation(FILE *out, const json_t *who, const json_t *v, const char *verdict,
			     bool all)
{
	const json_t **nodes, *x;
	const char *own = rc_str(v, "result", "-");
	size_t i, n, bad = 0;

	/* A sign-off's verdict may outrank its campaign's (a revalidation: regressed). */
	util_fprintf_safe(out, "verdict: %s%s%s%s, %s\n", verdict ? verdict : own,
			  verdict && strcmp(verdict, own) ? " (the campaign's own: " : "",
			  verdict && strcmp(verdict, own) ? own : "",
			  verdict && strcmp(verdict, own) ? ")" : "",
			  json_is_true(json_object_get(v, "acceptance"))
				  ? "an acceptance"
				  : "not an acceptance (a smoke / baseline run):");
	json_array_foreach(json_object_get(v, "acceptance_reasons"), i, x)
		util_fprintf_safe(out, "  - %s\n", sv(x));
	nodes = sorted_by_host(json_object_get(v, "nodes"), &n);
	for (i = 0; nodes && i < n; i++)
		bad += strcmp(rc_str(nodes[i], "result", "-"), "pass") != 0;
	if (bad)
		util_fprintf_safe(out, "failing or excluded nodes (%zu of %zu):\n", bad, n);
	for (i = 0; nodes && i < n; i++)
		if (strcmp(rc_str(nodes[i], "result", "-"), "pass") != 0)
			print_failed_node(out, nodes[i]);
	free(nodes);
	json_array_foreach(json_object_get(v, "links"), i, x)
	{
		const json_t *y;
		size_t k;

		if (!i)
			util_fprintf_safe(out, "failing links (%lld):\n", JINT(v, "links_total"));
		util_fprintf_safe(out, "  %s ↔ %s rail %lld (%s):\n", rc_str(x, "a_host", "-"),
				  rc_str(x, "b_host", "-"), JINT(x, "rail"),
				  rc_str(x, "test", "-"));
		json_array_foreach(json_object_get(x, "reasons"), k, y)
			util_fprintf_safe(out, "    - %s\n", sv(y));
	}
	print_pairs(out, who, v);
	print_cpu_costs(out, who, v);
	json_array_foreach(json_object_get(v, "left_out"), i, x) util_fprintf_safe(
		out, "left out: %s: %s\n", rc_str(x, "hostname", "-"), rc_str(x, "reason", "-"));
	if (!all)
		return;
	util_fprintf_safe(out, "tests:\n");
	json_array_foreach(json_object_get(v, "tests"), i, x)
	{
		print_test(out, x);
	}
	if (json_array_size(json_object_get(v, "findings")))
		util_fprintf_safe(out, "findings:\n");
	json_array_foreach(json_object_get(v, "findings"), i, x)
	{
		util_fprintf_safe(out, "  - %s\n", sv(x));
	}
}

void rc_print_verdict(FILE *out, const json_t *c)
{
	const json_t *v = json_object_get(c, "verdict");
	const char *err = JSTR(c, "error");
	long long secs = (JINT(c, "finished_at_ms") - JINT(c, "created_at_ms")) / 1000;

	util_fprintf_safe(out, "campaign %s: %s (%s%s, %zu nodes, %lld s)%s%s\n",
			  rc_str(c, "id", "-"), rc_str(c, "state", "-"),
			  rc_str(c, "transport", "-"),
			  json_is_true(json_object_get(c, "quick")) ? ", quick" : "",
			  json_array_size(json_object_get(c, "nodes")), secs, err ? ": " : "",
			  err ? err : "");
	/* The verdict and its failures first; what was measured after. */
	if (json_is_object(v))
		print_evaluation(out, c, v, NULL, true);
}

void rc_print_signoff(FILE *out, const json_t *s, bool detail, const json_t *report)
{
	const json_t *r, *ev = json_object_get(report, "evaluation");
	size_t i;

	/* Never a bare pass: the controller's label says "pass (smoke)", "pass +1 excluded
	 * (acceptance)". */
	util_fprintf_safe(out, "%-11s %-22s %-12s %-12s %s  campaign %s%s%s%s\n",
			  rc_str(s, "id", "-"), rc_str(s, "label", rc_str(s, "verdict", "-")),
			  rc_str(s, "cluster", "-"), rc_str(s, "kind", "-"),
			  rc_str(s, "created_at", "-"), rc_str(s, "campaign", "-"),
			  JSTR(s, "baseline") ? "  baseline " : "", rc_str(s, "baseline", ""),
			  json_is_true(json_object_get(s, "stale")) ? "  STALE" : "");
	if (!detail)
		return;
	json_array_foreach(json_object_get(s, "reasons"), i, r)
		util_fprintf_safe(out, "  stale: %s\n", sv(r));
	/* What failed, from the signed report's evaluation, then its summary (a revalidation's
	 * leads with the regressions, failed checks and drift) and digest. */
	if (json_is_object(ev))
		print_evaluation(out, report, ev, rc_str(s, "verdict", NULL), false);
	if (json_array_size(json_object_get(s, "summary")))
		util_fprintf_safe(out, "summary:\n");
	json_array_foreach(json_object_get(s, "summary"), i, r)
		util_fprintf_safe(out, "  %s\n", sv(r));
	util_fprintf_safe(out, "  sha256 %s, %lld bytes\n", rc_str(s, "sha256", "-"),
			  JINT(s, "size"));
}

/* Each line of text (a step's detail or diff) after indent, escaped. */
static void print_lines(FILE *out, const char *indent, const char *text)
{
	while (text && *text) {
		size_t n = strcspn(text, "\n");

		util_fprintf_safe(out, "%s%.*s\n", indent, (int)n, text);
		text += n + (text[n] == '\n');
	}
}

void rc_print_deploy_steps(FILE *out, const json_t *n, bool diffs)
{
	const json_t *steps = json_object_get(n, "steps");
	size_t count = json_array_size(steps);

	for (size_t i = 0; i < count; i++) {
		const json_t *s = json_array_get(steps, i);
		const char *st = rc_str(s, "status", "?"), *msg = rc_str(s, "message", "");
		const char *detail = rc_str(s, "detail", ""), *diff = rc_str(s, "diff", "");
		long long num = JINT(s, "index") + 1;

		if (strcmp(st, "skipped") == 0) {
			/* A run of steps skipped for the same reason is one line. */
			size_t k = i + 1;

			while (k < count &&
			       strcmp(rc_str(json_array_get(steps, k), "status", ""), "skipped") ==
				       0 &&
			       strcmp(rc_str(json_array_get(steps, k), "message", ""), msg) == 0)
				k++;
			if (k - i > 1)
				util_fprintf_safe(
					out,
					"      skipped  steps %lld-%lld: %zu steps skipped%s%s\n",
					num, JINT(json_array_get(steps, k - 1), "index") + 1, k - i,
					*msg ? ": " : "", msg);
			else
				util_fprintf_safe(out, "      skipped  step %lld \"%s\"%s%s\n", num,
						  rc_str(s, "name", "?"), *msg ? ": " : "", msg);
			i = k - 1;
			continue;
		}
		if (strcmp(st, "failed") != 0 && strcmp(st, "changed") != 0 &&
		    strcmp(st, "rebooting") != 0)
			continue;
		/* "changed" and "would change" say no more than the status */
		if (strcmp(msg, "changed") == 0 || strcmp(msg, "would change") == 0)
			msg = "";
		util_fprintf_safe(out, "      %-8s step %lld \"%s\"%s%s\n", st, num,
				  rc_str(s, "name", "?"), *msg ? ": " : "", msg);
		if (strcmp(st, "failed") == 0)
			print_lines(out, "          ", detail);
		if (diffs)
			print_lines(out, "          ", diff);
	}
}

void rc_fit_fields(const char *text, size_t room, char *out, size_t len)
{
	const char *part[16], *eta = NULL;
	size_t plen[16], n = 0, first = 0, total;
	bool keep[16];

	for (const char *p = text; *p && n < 16;) {
		const char *sep = strstr(p, " | ");
		size_t l = sep ? (size_t)(sep - p) : strlen(p);

		if (n > 0 && strncmp(p, "ETA ", 4) == 0 && !eta)
			eta = p;
		part[n] = p;
		plen[n] = l;
		keep[n++] = true;
		p = sep ? sep + 3 : p + l;
	}
	total = 0;
	for (size_t i = 0; i < n; i++)
		total += plen[i] + (i ? 3 : 0);
	for (size_t i = n - 1; i >= 1 && total > room; i--) {
		if (part[i] == eta)
			continue;
		keep[i] = false;
		total -= plen[i] + 3;
	}
	if (n && total > room) {
		size_t rest = total - plen[0]; /* what the kept fields after the first take */

		first = room > rest + 3 ? room - rest - 3 : 0;
	} else if (n) {
		first = plen[0];
	}
	out[0] = '\0';
	if (!n || !len)
		return;
	snprintf(out, len, "%.*s%s", (int)first, part[0], first < plen[0] ? "..." : "");
	for (size_t i = 1; i < n; i++) {
		size_t l = strlen(out);

		if (keep[i])
			snprintf(out + l, len - l, " | %.*s", (int)plen[i], part[i]);
	}
}
