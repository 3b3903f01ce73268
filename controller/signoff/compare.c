/* Per-metric deltas between a report and its baseline. */
#include "controller/signoff/compare.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const LAT_FIELDS[] = {"p50_us", "p99_us"};
static const char *const BW_FIELDS[] = {"gbps"};

/* "TEST|A|B|RAIL" of a measured row, or false when the row is not one compared. */
static bool row_key(const json_t *row, char *buf, size_t len)
{
	const char *test = json_string_value(json_object_get(row, "test"));
	const char *a = json_string_value(json_object_get(row, "a"));
	const char *b = json_string_value(json_object_get(row, "b"));
	const char *phase = json_string_value(json_object_get(row, "phase"));
	const char *state = json_string_value(json_object_get(row, "state"));
	const json_t *rail = json_object_get(row, "rail");

	if (!test || !a || !b || !phase || !state || strcmp(phase, "run") != 0 ||
	    strcmp(state, "done") != 0)
		return false;
	snprintf(buf, len, "%s|%s|%s|%lld", test, a, b,
		 json_is_integer(rail) ? (long long)json_integer_value(rail) : -1LL);
	return true;
}

static json_t *index_rows(const json_t *rows)
{
	json_t *idx = json_object(), *row;
	size_t i;
	char key[1024];

	json_array_foreach(rows, i, row) if (idx && row_key(row, key, sizeof(key)) &&
					     !json_object_get(idx, key))
		json_object_set(idx, key, row);
	return idx;
}

static void compare_field(json_t *metrics, json_t *regressions, const json_t *base,
			  const json_t *cur, const char *field, bool higher_better, double tol)
{
	const json_t *bv = json_object_get(json_object_get(base, "metrics"), field);
	const json_t *cv = json_object_get(json_object_get(cur, "metrics"), field);
	double b, c, delta;
	bool regressed;
	json_t *m;

	if (!json_is_number(bv) || !json_is_number(cv))
		return;
	b = json_number_value(bv);
	c = json_number_value(cv);
	if (!isfinite(b) || !isfinite(c) || b <= 0)
		return;
	delta = (c - b) / b * 100.0;
	regressed = higher_better ? delta < -tol : delta > tol;
	m = json_pack("{s:O, s:s, s:O, s:O, s:O, s:f, s:f, s:f, s:b}", "test",
		      json_object_get(cur, "test"), "field", field, "a", json_object_get(cur, "a"),
		      "b", json_object_get(cur, "b") ? json_object_get(cur, "b") : json_null(),
		      "rail",
		      json_object_get(cur, "rail") ? json_object_get(cur, "rail") : json_null(),
		      "baseline", b, "current", c, "delta_pct", round(delta * 100.0) / 100.0,
		      "regressed", regressed);
	if (!m)
		return;
	if (regressed)
		json_array_append(regressions, m);
	json_array_append_new(metrics, m);
}

struct ranked {
	json_t *m;
	double size; /* |delta_pct| */
	size_t i;    /* the position so_compare() found it at */
};

static int by_worst(const void *x, const void *y)
{
	const struct ranked *a = x, *b = y;

	if (a->size != b->size)
		return a->size < b->size ? 1 : -1;
	return a->i < b->i ? -1 : a->i > b->i;
}

/* The regressions by the size of their change, largest first; equal ones in the order found
 * (the position breaks ties: qsort is not stable). O(n log n). */
static void sort_worst_first(json_t *regressions)
{
	size_t n = json_array_size(regressions);
	struct ranked *v = n ? calloc(n, sizeof(*v)) : NULL;

	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		v[i].m = json_incref(json_array_get(regressions, i));
		v[i].size = fabs(json_number_value(json_object_get(v[i].m, "delta_pct")));
		v[i].i = i;
	}
	qsort(v, n, sizeof(*v), by_worst);
	json_array_clear(regressions);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(regressions, v[i].m);
	free(v);
}

/* Summarised reports: per test, host and rail, the mean of the main field. */
static void compare_summaries(json_t *metrics, json_t *regressions, const json_t *base,
			      const json_t *cur, double bw_pct, double lat_pct)
{
	json_t *idx = json_object(), *e;
	size_t i;
	char key[1024];

	json_array_foreach(base, i, e)
	{
		const json_t *rail = json_object_get(e, "rail");

		snprintf(key, sizeof(key), "%s|%s|%lld",
			 json_string_value(json_object_get(e, "test")),
			 json_string_value(json_object_get(e, "host")),
			 json_is_integer(rail) ? (long long)json_integer_value(rail) : -1LL);
		json_object_set(idx, key, e);
	}
	json_array_foreach(cur, i, e)
	{
		const json_t *rail = json_object_get(e, "rail"), *b;
		const char *kind = json_string_value(json_object_get(e, "kind"));
		json_t *bm, *cm, *brow, *crow;
		bool lat;

		snprintf(key, sizeof(key), "%s|%s|%lld",
			 json_string_value(json_object_get(e, "test")),
			 json_string_value(json_object_get(e, "host")),
			 json_is_integer(rail) ? (long long)json_integer_value(rail) : -1LL);
		b = json_object_get(idx, key);
		if (!b || !kind)
			continue;
		lat = strcmp(kind, "lat") == 0;
		bm = json_pack("{s:O}", json_string_value(json_object_get(e, "field")),
			       json_object_get(b, "mean"));
		cm = json_pack("{s:O}", json_string_value(json_object_get(e, "field")),
			       json_object_get(e, "mean"));
		brow = json_pack("{s:o}", "metrics", bm);
		crow = json_pack("{s:O, s:O, s:O, s:n, s:o}", "test", json_object_get(e, "test"),
				 "a", json_object_get(e, "host"), "rail", rail ? rail : json_null(),
				 "b", "metrics", cm);
		if (brow && crow)
			compare_field(metrics, regressions, brow, crow,
				      json_string_value(json_object_get(e, "field")), !lat,
				      lat ? lat_pct : bw_pct);
		json_decref(brow);
		json_decref(crow);
	}
	json_decref(idx);
}

json_t *so_compare(const json_t *baseline, const json_t *current, double bw_pct, double lat_pct)
{
	const json_t *bs =
		json_object_get(json_object_get(baseline, "results_summary"), "per_host_rail");
	const json_t *cs =
		json_object_get(json_object_get(current, "results_summary"), "per_host_rail");
	const json_t *baseline_results = json_object_get(baseline, "results");
	const json_t *results = json_object_get(current, "results");
	json_t *idx = index_rows(baseline_results), *metrics = json_array();
	json_t *regressions = json_array(), *row;
	size_t i;
	char key[1024];

	if (!idx || !metrics || !regressions) {
		json_decref(idx);
		json_decref(metrics);
		json_decref(regressions);
		return NULL;
	}
	if (json_is_array(bs) && json_is_array(cs)) {
		compare_summaries(metrics, regressions, bs, cs, bw_pct, lat_pct);
		results = NULL; /* the listed rows are the exceptions, not a sample */
	}
	json_array_foreach(results, i, row)
	{
		const char *kind = json_string_value(json_object_get(row, "kind"));
		const json_t *base;
		bool lat;

		if (!kind || !row_key(row, key, sizeof(key)) || !(base = json_object_get(idx, key)))
			continue;
		if (strcmp(kind, "collective") == 0) {
			/* The job's bus bandwidth and its small-size time (docs/signoff.md). */
			compare_field(metrics, regressions, base, row, "busbw_gbs", true, bw_pct);
			compare_field(metrics, regressions, base, row, "lat_us", false, lat_pct);
			continue;
		}
		lat = strcmp(kind, "lat") == 0;
		if (!lat && strcmp(kind, "bw") != 0)
			continue;
		for (size_t f = 0; lat && f < sizeof(LAT_FIELDS) / sizeof(*LAT_FIELDS); f++)
			compare_field(metrics, regressions, base, row, LAT_FIELDS[f], false,
				      lat_pct);
		for (size_t f = 0; !lat && f < sizeof(BW_FIELDS) / sizeof(*BW_FIELDS); f++)
			compare_field(metrics, regressions, base, row, BW_FIELDS[f], true, bw_pct);
	}
	json_decref(idx);
	sort_worst_first(regressions);
	return json_pack("{s:{s:f, s:f}, s:o, s:o}", "tolerance", "bw_pct", bw_pct, "lat_pct",
			 lat_pct, "metrics", metrics, "regressions", regressions);
}

const char *so_regressions_mode(const json_t *mode)
{
	return json_is_string(mode) && strcmp(json_string_value(mode), "inform") == 0 ? "inform"
										      : "fail";
}

const char *so_revalidation_verdict(const char *campaign_result, size_t regressions, bool inform,
				    size_t failed_checks)
{
	if (campaign_result && strcmp(campaign_result, "fail") == 0)
		return "fail";
	if ((regressions > 0 && !inform) || failed_checks > 0)
		return "regressed";
	return campaign_result ? campaign_result : "incomplete";
}

char *so_regression_line(const json_t *m)
{
	const json_t *b = json_object_get(m, "b"), *rail = json_object_get(m, "rail");
	char railbuf[32] = "", *line = NULL;

	if (json_is_integer(rail))
		snprintf(railbuf, sizeof(railbuf), " rail %lld",
			 (long long)json_integer_value(rail));
	if (asprintf(&line, "%s.%s %s%s%s%s: %g -> %g (%+.1f %%)",
		     json_string_value(json_object_get(m, "test")),
		     json_string_value(json_object_get(m, "field")),
		     json_string_value(json_object_get(m, "a")), json_is_string(b) ? " -> " : "",
		     json_is_string(b) ? json_string_value(b) : "", railbuf,
		     json_number_value(json_object_get(m, "baseline")),
		     json_number_value(json_object_get(m, "current")),
		     json_number_value(json_object_get(m, "delta_pct"))) < 0)
		return NULL;
	return line;
}
