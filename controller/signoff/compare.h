/* Revalidation: the results of a new report against those of its baseline, per metric, with
 * the regressions beyond the tolerances (docs/signoff.md, COMPARISON). Pure. */
#ifndef RAILYARD_SIGNOFF_COMPARE_H
#define RAILYARD_SIGNOFF_COMPARE_H

#include <jansson.h>

/* Default tolerances: a bandwidth that fell by more than 5 %, a latency that rose by more than
 * 10 %, is a regression. */
#define SO_TOLERANCE_BW_PCT  5.0
#define SO_TOLERANCE_LAT_PCT 10.0

/* Compare two reports: their "results" rows (phase "run", state "done", matched by test, a, b
 * and rail; p50_us and p99_us of latency rows, gbps of bandwidth rows) or, when both are
 * summarised, their per-host-and-rail means (a = the host, b = null). Returns {tolerance:
 * {bw_pct, lat_pct}, metrics: [{test, field, a, b, rail, baseline, current, delta_pct,
 * regressed}], regressions: [the regressed ones]}, or NULL on allocation failure. */
json_t *so_compare(const json_t *baseline, const json_t *current, double bw_pct, double lat_pct);

#endif
