/* Revalidation: the results of a new report against those of its baseline, per metric, with
 * the regressions beyond the tolerances (docs/signoff.md, COMPARISON). Pure. */
#ifndef RAILYARD_SIGNOFF_COMPARE_H
#define RAILYARD_SIGNOFF_COMPARE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Default tolerances: a bandwidth that fell by more than 5 %, a latency that rose by more than
 * 10 %, is a regression. */
#define SO_TOLERANCE_BW_PCT  5.0
#define SO_TOLERANCE_LAT_PCT 10.0

/* Compare two reports: their "results" rows (phase "run", state "done", matched by test, a, b
 * and rail; p50_us and p99_us of latency rows, gbps of bandwidth rows) or, when both are
 * summarised, their per-host-and-rail means (a = the host, b = null). Returns {tolerance:
 * {bw_pct, lat_pct}, metrics: [{test, field, a, b, rail, baseline, current, delta_pct,
 * regressed}], regressions: [the regressed ones, worst first]}, or NULL on allocation
 * failure. */
json_t *so_compare(const json_t *baseline, const json_t *current, double bw_pct, double lat_pct);

/* validation.tolerance.regressions as stored ("fail" or "inform"; borrowed): "inform" only when
 * it says so, "fail" otherwise (absent, null, anything else). A static string. */
const char *so_regressions_mode(const json_t *mode);

/* The verdict of a revalidation report (docs/signoff.md, "Verdicts"): the campaign's own result
 * (campaign_result: "pass", "fail", "incomplete", ...; NULL is "incomplete"), outranked by
 * "regressed" when regressions > 0 and regressions fail (inform false) or failed_checks > 0, and
 * by nothing but "fail": fail > regressed > incomplete > pass. A static string or
 * campaign_result itself. */
const char *so_revalidation_verdict(const char *campaign_result, size_t regressions, bool inform,
				    size_t failed_checks);

/* A regression of so_compare()'s "regressions" for a person: "pair-bw.gbps gpu-node-01 ->
 * gpu-node-02 rail 0: 9.41 -> 6.49 (-31.0 %)". Caller frees; NULL on allocation failure. */
char *so_regression_line(const json_t *m);

#endif
