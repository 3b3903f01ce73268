/* CPU cost next to bandwidth (cpucost.h): the verdict's medians of the cpu_* fields. */
#include "controller/signoff/cpucost.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static json_t *median_of(const json_t *stats, const char *field)
{
	const json_t *s = json_object_get(stats, field);
	const json_t *m = json_object_get(s, "median");

	if (json_integer_value(json_object_get(s, "n")) <= 0 || !json_is_number(m) ||
	    !isfinite(json_number_value(m)))
		return json_null();
	return json_real(json_number_value(m));
}

static json_t *side(const json_t *stats, const char *who)
{
	char a[48], b[48], c[48];

	snprintf(a, sizeof(a), "cpu_cores_%s", who);
	snprintf(b, sizeof(b), "cpu_s_per_gb_%s", who);
	snprintf(c, sizeof(c), "cpu_thread_cores_%s", who);
	return json_pack("{s:o, s:o, s:o}", "cores", median_of(stats, a), "s_per_gb",
			 median_of(stats, b), "thread_cores", median_of(stats, c));
}

static bool any_cpu(const json_t *stats)
{
	const char *k;
	const json_t *x;

	json_object_foreach((json_t *)stats, k, x)
	{
		if (strncmp(k, "cpu_", 4) == 0 && json_integer_value(json_object_get(x, "n")) > 0)
			return true;
	}
	return false;
}

json_t *so_cpu_cost(const json_t *evaluation, const char *transport)
{
	json_t *out = json_array(), *e;
	const json_t *t;
	char line[512];
	size_t i;

	if (!out)
		return NULL;
	json_array_foreach(json_object_get(evaluation, "tests"), i, t)
	{
		const json_t *stats = json_object_get(t, "stats");
		const char *kind = json_string_value(json_object_get(t, "kind"));

		if (kind && strcmp(kind, "collective") == 0 && any_cpu(stats)) {
			/* One job: every rank's CPU and every node's host-wide, per GB moved in
			 * nccl-tests' bus terms (docs/bench.md, "Collectives"). */
			e = json_pack("{s:O?, s:s, s:s?, s:o, s:o, s:o, s:o}", "test",
				      json_object_get(t, "name"), "kind", "collective", "transport",
				      transport, "busbw_gbs", median_of(stats, "busbw_gbs"),
				      "cores", median_of(stats, "cpu_cores"), "s_per_gb",
				      median_of(stats, "cpu_s_per_gb"), "host_s_per_gb",
				      median_of(stats, "host_cpu_s_per_gb"));
		} else if (kind && strcmp(kind, "bw") == 0 && any_cpu(stats)) {
			e = json_pack("{s:O?, s:s?, s:I, s:o, s:o, s:o}", "test",
				      json_object_get(t, "name"), "transport", transport, "pairs",
				      json_integer_value(
					      json_object_get(json_object_get(stats, "gbps"), "n")),
				      "gbps", median_of(stats, "gbps"), "client",
				      side(stats, "client"), "server", side(stats, "server"));
		} else {
			continue;
		}
		/* Either kind: its line as text beside the figures. */
		if (!e)
			goto nomem;
		so_cpu_cost_line(e, line, sizeof(line));
		if (json_object_set_new(e, "text", json_string(line)) < 0 ||
		    json_array_append_new(out, e) < 0)
			goto nomem;
	}
	return out;
nomem:
	json_decref(out);
	return NULL;
}

/* "%.3g" of a figure, or "unknown". */
static const char *fig(const json_t *o, const char *k, char *buf, size_t len)
{
	const json_t *x = json_object_get(o, k);

	if (!json_is_number(x))
		return "unknown";
	snprintf(buf, len, "%.3g", json_number_value(x));
	return buf;
}

void so_cpu_cost_line(const json_t *e, char *buf, size_t len)
{
	const json_t *c = json_object_get(e, "client"), *s = json_object_get(e, "server");
	const char *tr = json_string_value(json_object_get(e, "transport"));
	const char *test = json_string_value(json_object_get(e, "test"));
	char f[8][32];

	if (json_is_string(json_object_get(e, "kind"))) { /* a collective */
		snprintf(buf, len,
			 "%s%s%s: bus bandwidth %s GB/s for %s cores over all ranks (%s CPU-s/GB; "
			 "host-wide %s CPU-s/GB over the job's nodes)",
			 tr ? tr : "", tr ? " " : "", test ? test : "-",
			 fig(e, "busbw_gbs", f[0], 32), fig(e, "cores", f[1], 32),
			 fig(e, "s_per_gb", f[2], 32), fig(e, "host_s_per_gb", f[3], 32));
		return;
	}
	snprintf(buf, len,
		 "%s%s%s: %s Gb/s for %s cores on the client (%s CPU-s/GB) and %s on the server "
		 "(%s CPU-s/GB), host-wide; benchmark threads %s + %s cores (medians over %lld "
		 "pairs)",
		 tr ? tr : "", tr ? " " : "", test ? test : "-", fig(e, "gbps", f[0], 32),
		 fig(c, "cores", f[1], 32), fig(c, "s_per_gb", f[2], 32), fig(s, "cores", f[3], 32),
		 fig(s, "s_per_gb", f[4], 32), fig(c, "thread_cores", f[5], 32),
		 fig(s, "thread_cores", f[6], 32),
		 (long long)json_integer_value(json_object_get(e, "pairs")));
}
