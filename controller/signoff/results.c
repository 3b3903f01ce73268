/* Result rows of a report: all of them, or the ones that matter plus per-host aggregates. */
#include "controller/signoff/results.h"

#include "common/util/util.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per test, host and rail: the test's main field over the rows the host was in. */
struct agg {
	uint32_t n, failed;
	double sum, min, max;
};

struct so_results {
	const json_t *tests, *hosts;
	size_t ntests, nhosts, nrails;
	bool summarise;
	json_t *rows;	  /* listed rows */
	json_t *failures; /* "t|a|b|rail" of the rows the verdict names */
	struct agg *agg;  /* [test][host][rail + 1] (slot 0: not per rail) */
	size_t total;
};

#define RAILS_MAX 64

static const char *main_field(const char *kind)
{
	if (!kind)
		return NULL;
	if (strcmp(kind, "lat") == 0)
		return "p50_us";
	if (strcmp(kind, "bw") == 0)
		return "gbps";
	return NULL;
}

static long index_of(const json_t *ids, const char *id)
{
	const json_t *v;
	size_t i;

	json_array_foreach(ids, i, v) if (id && json_is_string(v) &&
					  strcmp(json_string_value(v), id) == 0) return (long)i;
	return -1;
}

static void failure_key(char *buf, size_t len, size_t t, size_t a, size_t b, int rail)
{
	snprintf(buf, len, "%zu|%zu|%zu|%d", t, a, b, rail);
}

/* The rows the verdict names, by test, client, server and rail. */
static json_t *failure_set(const json_t *tests, const json_t *ids, const json_t *evaluation)
{
	json_t *set = json_object(), *et, *f;
	size_t i, k;
	char key[96];

	json_array_foreach(json_object_get(evaluation, "tests"), i, et)
	{
		const char *name = json_string_value(json_object_get(et, "name"));
		long t = -1;
		const json_t *tt;
		size_t j;

		json_array_foreach(tests, j,
				   tt) if (name && t < 0 &&
					   strcmp(json_string_value(json_object_get(tt, "name")),
						  name) == 0) t = (long)j;
		if (t < 0)
			continue;
		json_array_foreach(json_object_get(et, "failures"), k, f)
		{
			long a = index_of(ids, json_string_value(json_object_get(f, "a")));
			long b = index_of(ids, json_string_value(json_object_get(f, "b")));
			const json_t *rail = json_object_get(f, "rail");

			if (a < 0 || b < 0)
				continue;
			failure_key(key, sizeof(key), (size_t)t, (size_t)a, (size_t)b,
				    json_is_integer(rail) ? (int)json_integer_value(rail) : -1);
			json_object_set_new(set, key, json_true());
		}
	}
	return set;
}

struct so_results *so_results_new(const json_t *tests, const json_t *hosts, const json_t *ids,
				  const json_t *evaluation, size_t total)
{
	struct so_results *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->tests = tests;
	r->hosts = hosts;
	r->ntests = json_array_size(tests);
	r->nhosts = json_array_size(hosts);
	r->nrails = RAILS_MAX + 1;
	r->summarise = total > SO_RESULTS_LISTED_MAX;
	r->rows = json_array();
	r->failures = r->summarise ? failure_set(tests, ids, evaluation) : json_object();
	if (r->summarise)
		r->agg = calloc(r->ntests * r->nhosts * r->nrails + 1, sizeof(*r->agg));
	if (!r->rows || !r->failures || (r->summarise && !r->agg)) {
		so_results_free(r);
		return NULL;
	}
	return r;
}

void so_results_free(struct so_results *r)
{
	if (!r)
		return;
	json_decref(r->rows);
	json_decref(r->failures);
	free(r->agg);
	free(r);
}

static json_t *row_json(const struct so_results *r, const struct so_row *w)
{
	const json_t *t = json_array_get(r->tests, w->test);
	json_t *o =
		json_pack("{s:O?, s:O?, s:s, s:s, s:O, s:O, s:s, s:s?, s:s?, s:O?, s:O?}", "test",
			  json_object_get(t, "name"), "kind", json_object_get(t, "kind"), "phase",
			  w->phase, "role", w->role, "a", json_array_get(r->hosts, w->a), "b",
			  json_array_get(r->hosts, w->b), "state", w->state, "device", w->device,
			  "error", w->error, "metrics", w->metrics, "counters", w->counters);

	if (o)
		json_object_set_new(o, "rail", w->rail < 0 ? json_null() : json_integer(w->rail));
	return o;
}

static void agg_add(struct agg *g, bool measured, double v)
{
	if (!measured) {
		g->failed++;
		return;
	}
	if (g->n == 0 || v < g->min)
		g->min = v;
	if (g->n == 0 || v > g->max)
		g->max = v;
	g->n++;
	g->sum += v;
}

/* A row the summary keeps in full: not measured, not a pattern row, or named by the verdict. */
static bool listed(const struct so_results *r, const struct so_row *w, const char *field)
{
	char key[96];

	if (!field || strcmp(w->state, "done") != 0 || strcmp(w->phase, "run") != 0 ||
	    strcmp(w->role, "measure") != 0)
		return true;
	failure_key(key, sizeof(key), w->test, w->a, w->b, w->rail);
	return json_object_get(r->failures, key) != NULL;
}

int so_results_add(struct so_results *r, const struct so_row *w)
{
	const char *field;
	const json_t *v;
	bool measured;
	json_t *o;

	if (w->test >= r->ntests || w->a >= r->nhosts || w->b >= r->nhosts || w->rail < -1 ||
	    w->rail >= RAILS_MAX || !w->phase || !w->role || !w->state)
		return -EINVAL;
	r->total++;
	field = main_field(
		json_string_value(json_object_get(json_array_get(r->tests, w->test), "kind")));
	if (r->summarise && field && strcmp(w->phase, "run") == 0 &&
	    strcmp(w->role, "measure") == 0) {
		size_t base = w->test * r->nhosts * r->nrails + (size_t)(w->rail + 1);

		v = json_object_get(w->metrics, field);
		measured = strcmp(w->state, "done") == 0 && json_is_number(v);
		agg_add(&r->agg[base + w->a * r->nrails], measured, json_number_value(v));
		if (w->b != w->a)
			agg_add(&r->agg[base + w->b * r->nrails], measured, json_number_value(v));
	}
	if (r->summarise && !listed(r, w, field))
		return 0;
	o = row_json(r, w);
	if (!o || json_array_append_new(r->rows, o) < 0)
		return -ENOMEM;
	return 0;
}

static json_t *summary(const struct so_results *r)
{
	json_t *per = json_array(), *o;
	char reason[160];

	if (!per)
		return NULL;
	for (size_t t = 0; t < r->ntests; t++) {
		const json_t *test = json_array_get(r->tests, t);
		const char *field = main_field(json_string_value(json_object_get(test, "kind")));

		for (size_t h = 0; field && h < r->nhosts; h++)
			for (size_t k = 0; k < r->nrails; k++) {
				const struct agg *g = &r->agg[(t * r->nhosts + h) * r->nrails + k];

				if (g->n == 0 && g->failed == 0)
					continue;
				o = json_pack("{s:O, s:O, s:O, s:s, s:I, s:I}", "test",
					      json_object_get(test, "name"), "kind",
					      json_object_get(test, "kind"), "host",
					      json_array_get(r->hosts, h), "field", field, "n",
					      (json_int_t)g->n, "failed", (json_int_t)g->failed);
				if (!o)
					continue;
				json_object_set_new(
					o, "rail", k == 0 ? json_null() : json_integer((int)k - 1));
				json_object_set_new(o, "mean",
						    g->n ? json_real(g->sum / g->n) : json_null());
				json_object_set_new(o, "min",
						    g->n ? json_real(g->min) : json_null());
				json_object_set_new(o, "max",
						    g->n ? json_real(g->max) : json_null());
				json_array_append_new(per, o);
			}
	}
	snprintf(reason, sizeof(reason),
		 "more than %d result rows: the rows not measured, retests, congestion and those "
		 "the verdict names are listed; per host and rail, the aggregate",
		 SO_RESULTS_LISTED_MAX);
	return json_pack("{s:I, s:I, s:s, s:o}", "rows_total", (json_int_t)r->total, "rows_listed",
			 (json_int_t)json_array_size(r->rows), "reason", reason, "per_host_rail",
			 per);
}

int so_results_finish(struct so_results *r, json_t *doc)
{
	json_t *s = r->summarise ? summary(r) : json_null();
	int rc = 0;

	if (!s || json_object_set(doc, "results", r->rows) < 0 ||
	    json_object_set_new(doc, "results_summary", s) < 0)
		rc = -ENOMEM;
	so_results_free(r);
	return rc;
}
