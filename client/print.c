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

	util_fprintf_safe(out,
			  "  %-14s batch %-2lld %-11s ok %lld, changed %lld, failed %lld, skipped "
			  "%lld%s%s\n",
			  rc_str(n, "hostname", "?"), JINT(n, "batch"), rc_str(n, "state", "?"),
			  JINT(n, "ok"), JINT(n, "changed"), JINT(n, "failed"), JINT(n, "skipped"),
			  msg && *msg ? "  " : "", msg ? msg : "");
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

/* A string element of an array ("?" when it is not a string). */
static const char *sv(const json_t *x)
{
	return json_is_string(x) ? json_string_value(x) : "?";
}

static void print_test(FILE *out, const json_t *t)
{
	char stats[160] = "";
	const char *key;
	const json_t *x;
	size_t len = 0;

	json_object_foreach((json_t *)json_object_get(t, "stats"), key, x)
	{
		if (len < sizeof(stats) - 48 && JINT(x, "n") > 0)
			len += (size_t)snprintf(stats + len, sizeof(stats) - len,
						"%s%s median %.3g", len ? ", " : "", key,
						json_number_value(json_object_get(x, "median")));
	}
	if (json_object_get(t, "victim_pairs"))
		util_fprintf_safe(out,
				  "  %-14s %-10s %-12s %-4s %lld victim pair(s), %lld failed  %s\n",
				  rc_str(t, "name", "?"), rc_str(t, "kind", "?"), "-",
				  rc_str(t, "result", "?"), JINT(t, "victim_pairs"),
				  JINT(t, "failed"), stats);
	else
		util_fprintf_safe(out,
				  "  %-14s %-10s %-12s %-4s %lld of %lld measured, %lld failed  "
				  "%s\n",
				  rc_str(t, "name", "?"), rc_str(t, "kind", "?"),
				  rc_str(t, "pattern", "-"), rc_str(t, "result", "?"),
				  JINT(t, "measured"), JINT(t, "rows"), JINT(t, "failed"), stats);
}

static void print_failed_node(FILE *out, const json_t *n)
{
	const json_t *x, *y;
	size_t k, j;

	util_fprintf_safe(out, "node %s (%s): FAIL\n", rc_str(n, "hostname", "?"),
			  rc_str(n, "id", "?"));
	json_array_foreach(json_object_get(n, "reasons"), k, x)
		util_fprintf_safe(out, "    %s\n", sv(x));
	json_array_foreach(json_object_get(n, "rails"), k, x)
	{
		util_fprintf_safe(out, "  rail %lld (%s):\n", JINT(x, "rail"),
				  rc_str(x, "device", "?"));
		json_array_foreach(json_object_get(x, "reasons"), j, y)
			util_fprintf_safe(out, "    %s\n", sv(y));
	}
}

void rc_print_verdict(FILE *out, const json_t *c)
{
	const json_t *v = json_object_get(c, "verdict"), *x;
	const char *err = JSTR(c, "error");
	long long secs = (JINT(c, "finished_at_ms") - JINT(c, "created_at_ms")) / 1000;
	size_t i;

	util_fprintf_safe(out, "campaign %s: %s (%s%s, %zu nodes, %lld s)%s%s\n",
			  rc_str(c, "id", "?"), rc_str(c, "state", "?"),
			  rc_str(c, "transport", "?"),
			  json_is_true(json_object_get(c, "quick")) ? ", quick" : "",
			  json_array_size(json_object_get(c, "nodes")), secs, err ? ": " : "",
			  err ? err : "");
	if (!json_is_object(v))
		return;
	json_array_foreach(json_object_get(v, "tests"), i, x)
	{
		print_test(out, x);
	}
	util_fprintf_safe(out, "findings:\n");
	json_array_foreach(json_object_get(v, "findings"), i, x)
	{
		util_fprintf_safe(out, "  - %s\n", sv(x));
	}
	json_array_foreach(json_object_get(v, "nodes"), i, x)
	{
		if (strcmp(rc_str(x, "result", "?"), "pass") != 0)
			print_failed_node(out, x);
	}
}

void rc_print_signoff(FILE *out, const json_t *s, bool detail)
{
	const json_t *r;
	size_t i;

	/* Never a bare pass: the controller's label says "pass (smoke)", "pass +1 excluded
	 * (acceptance)". */
	util_fprintf_safe(out, "%-11s %-22s %-12s %-12s %s  campaign %s%s%s%s\n",
			  rc_str(s, "id", "?"), rc_str(s, "label", rc_str(s, "verdict", "?")),
			  rc_str(s, "cluster", "?"), rc_str(s, "kind", "?"),
			  rc_str(s, "created_at", "-"), rc_str(s, "campaign", "-"),
			  JSTR(s, "baseline") ? "  baseline " : "", rc_str(s, "baseline", ""),
			  json_is_true(json_object_get(s, "stale")) ? "  STALE" : "");
	if (!detail)
		return;
	util_fprintf_safe(out, "  sha256 %s, %lld bytes\n", rc_str(s, "sha256", "?"),
			  JINT(s, "size"));
	json_array_foreach(json_object_get(s, "summary"), i, r)
		util_fprintf_safe(out, "  %s\n", sv(r));
	json_array_foreach(json_object_get(s, "reasons"), i, r)
		util_fprintf_safe(out, "  stale: %s\n", sv(r));
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
		if (strcmp(st, "failed") != 0 && strcmp(st, "changed") != 0)
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
