/* The "results" of a sign-off report (docs/signoff.md): every row of the campaign when there
 * are at most SO_RESULTS_LISTED_MAX, otherwise the rows a reader must see one by one (not
 * measured, retests, congestion, those the verdict names) and per host and rail an aggregate
 * of the test's main field ("results_summary"), so that a 1024-node x 8-rail campaign (8.4 M
 * rows) gives a report of megabytes, not gigabytes. Rows are fed one by one with indexes into
 * the hosts and tests given up front: no row is kept unless listed. Pure. */
#ifndef RAILYARD_SIGNOFF_RESULTS_H
#define RAILYARD_SIGNOFF_RESULTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define SO_RESULTS_LISTED_MAX 50000

struct so_results;

/* One result row; strings and JSON borrowed. rail -1: not per rail. */
struct so_row {
	size_t test, a, b; /* indexes into the tests and hosts of so_results_new() */
	int rail;
	const char *phase, *role, *device, *state, *error;
	const json_t *metrics, *counters;
};

/* An accumulator for rows of tests [{name, kind}] over hosts [hostname] (both borrowed, kept
 * alive until so_results_finish()); total: how many rows will come; failures: the verdict's
 * evaluation (its tests[].failures name node ids, mapped through ids [id] parallel to hosts).
 * NULL on allocation failure. */
struct so_results *so_results_new(const json_t *tests, const json_t *hosts, const json_t *ids,
				  const json_t *evaluation, size_t total);
/* Add a row: -EINVAL for an index out of range, -ENOMEM. */
int so_results_add(struct so_results *r, const struct so_row *row);
/* Set doc's "results" and "results_summary" (null when every row is listed) and free r. 0 or
 * -ENOMEM. */
int so_results_finish(struct so_results *r, json_t *doc);
void so_results_free(struct so_results *r);

#endif
