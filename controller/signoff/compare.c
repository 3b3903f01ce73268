/* Per-metric deltas between a report and its baseline. */
#include "controller/signoff/compare.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
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
	return json_pack("{s:{s:f, s:f}, s:o, s:o}", "tolerance", "bw_pct", bw_pct, "lat_pct",
			 lat_pct, "metrics", metrics, "regressions", regressions);
}
