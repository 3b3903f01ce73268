/* A node's benchmark report is evidence, not a fact: before a campaign counts a run, its two
 * reports are checked against what the controller ordered and what the nodes' facts allow —
 * finite, non-negative, ordered percentiles, sample counts the iterations or duration allow,
 * bandwidth at most the line rate of the ports used, latency at least the transport's floor,
 * counters that did not go backwards, CPU costs that add up (no host spending less than its own
 * benchmark thread), and both sides' copies of the run's results equal. A run
 * that fails a check is stored as invalid with the reason and the node that reported it; it
 * never enters a statistic (docs/campaigns.md, "Evidence"). Pure: no store, no clock. */
#ifndef RAILYARD_CONTROLLER_EVIDENCE_H
#define RAILYARD_CONTROLLER_EVIDENCE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Latency floors (µs, the smallest sample a run may hold) and ceilings; docs/campaigns.md says
 * where each comes from. */
#define CP_EV_TCP_FLOOR_US	1.0
#define CP_EV_VERBS_FLOOR_US	0.2
#define CP_EV_LINE_MARGIN	1.05 /* bandwidth at most the ports' rate x this */
#define CP_EV_TCP_CEIL_GBPS	800  /* a TCP stream, and a software RDMA device (rxe, siw) */
#define CP_EV_GPU_CEIL_GB_S	1000.0
#define CP_EV_GPU_D2D_CEIL_GB_S 10000.0
/* CPU cost figures (docs/campaigns.md, "Evidence"): CPUs a host may have, the slack of
 * /proc/stat's tick accounting (CPU-seconds per CPU: two ticks at USER_HZ 100), and the relative
 * tolerance of figures computed from each other. */
#define CP_EV_CPU_NCPU_MAX   65536
#define CP_EV_CPU_TICK_SLACK 0.02
#define CP_EV_CPU_REL_TOL    0.01

/* Who a finding is about: the client's report, the server's, or both (they disagree). */
enum cp_blame { CP_BLAME_CLIENT = 1, CP_BLAME_SERVER = 2, CP_BLAME_BOTH = 3 };

struct cp_evidence {
	const char *kind;	       /* "lat", "bw", "gpu" */
	const char *transport;	       /* "tcp", "verbs" */
	const json_t *params;	       /* the parameters the controller ordered */
	const json_t *client, *server; /* the reports; server NULL for a one-sided run */
	const json_t *a, *b;	       /* the campaign's node entries (rails, gpus) */
	int32_t rail;		       /* -1: not per rail */
};

/* The readers and the reason writer every plausibility check shares (evidence.c, coll.c).
 * cp_ev_num: the number at k, NAN when absent or not a number; cp_ev_int: the integer at k, 0
 * otherwise. cp_ev_why: formats the reason into why and returns 1 (the "not plausible" result). */
double cp_ev_num(const json_t *o, const char *k);
int64_t cp_ev_int(const json_t *o, const char *k);
int cp_ev_why(char *why, size_t len, const char *f, ...) __attribute__((format(printf, 3, 4)));

/* 0: the reports are plausible. 1: they are not: *blame says whose report, why the first
 * problem found ("p50_us -5 is negative"). -EINVAL for a NULL argument. */
__attribute__((warn_unused_result)) int
cp_evidence_check(const struct cp_evidence *e, enum cp_blame *blame, char *why, size_t len);

#endif
