/* The verdict of a validation campaign: every result row judged against the acceptance rules
 * (absolute, or relative to the cluster's own distribution: median, MAD, min, max), the failures
 * attributed to a node, a rail or a link (ClusterKit's method: a node failing with most of its
 * peers, or against known-good peers on retest, is the bad one; a pair that fails alone points
 * at the link), and the facts that explain them. Pure: no store, no clock, no I/O, so it is
 * measured alone (bench/campaign-verdict.sh) and unit-tested on synthetic campaigns.
 * Reference: docs/campaigns.md, "Verdict". */
#ifndef RAILYARD_CONTROLLER_VERDICT_H
#define RAILYARD_CONTROLLER_VERDICT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What became of a scheduled slot. */
enum vd_state {
	VD_OK,	      /* measured: v holds its values */
	VD_ERROR,     /* the run failed (error says why: offline, timeout, refused, ...) */
	VD_MISSING,   /* a side lacks the rail */
	VD_CANCELLED, /* not measured: the campaign was cancelled */
	VD_INVALID,   /* the run's reports failed the plausibility checks (evidence.h): error
			 says why, blame whose report; never in a statistic */
};

/* Whose report made a row VD_INVALID. */
enum vd_blame { VD_BLAME_A = 1, VD_BLAME_B = 2, VD_BLAME_BOTH = 3 /* they disagree */ };

/* Which part of a test a row belongs to. */
enum vd_phase {
	VD_RUN,	      /* the pattern's own rounds */
	VD_RETEST,    /* a suspect re-run, against itself or a good peer */
	VD_ISO_LAT,   /* congestion: victim latency alone */
	VD_ISO_BW,    /* congestion: victim bandwidth alone */
	VD_CON_LAT,   /* congestion: victim latency under congestion */
	VD_CON_BW,    /* congestion: victim bandwidth under congestion */
	VD_CONGESTOR, /* congestion: a congestor flow (not judged) */
	VD_PHASE_COUNT,
};

enum vd_op { VD_GE, VD_LE, VD_GT, VD_LT, VD_EQ, VD_NE };
enum vd_rel { VD_ABS, VD_MEDIAN, VD_MIN, VD_MAX, VD_MAD };

/* One acceptance rule. field: index into the test's fields (for congestion tests, into
 * VD_CONGESTION_FIELDS). Strings borrowed. */
struct vd_rule {
	const char *metric; /* "pair-bw.gbps" */
	const char *message;
	enum vd_op op;
	enum vd_rel rel;
	double value;
	size_t field;
	int line;
};

/* Fields every congestion rule may name, in this order (impact factors are computed from the
 * victims' isolated and congested rows; their raw fields are VD_CONGESTION_RAW). */
#define VD_CONGESTION_FIELDS                                                                       \
	{                                                                                          \
		"impact_avg", "impact_p99", "impact_bw", "isolated_p99_us", "congested_p99_us",    \
			"isolated_gbps", "congested_gbps"                                          \
	}
#define VD_CONGESTION_NFIELDS 7
/* The raw values a congestion row carries: latency rows mean and p99, bandwidth rows gbps. */
enum { VD_RAW_MEAN_US, VD_RAW_P99_US, VD_RAW_GBPS, VD_RAW_N };

/* A test. Rows of a lat/bw test carry nfields values named fields[] (the metric fields its rules
 * use: "p99_us", "gbps", "counters.link_downed"); rows of a congestion test carry VD_RAW_N. */
struct vd_test {
	const char *name, *kind, *pattern; /* kind: "lat", "bw", "congestion", "gpu" (each node
					      against itself, as a loopback; pattern NULL),
					      "collective" (one row for the whole job: a == b, the
					      node it is attributed to, or VD_ROW_WHOLE) */
	bool per_rail;
	const char *const *fields;
	size_t nfields;
	const struct vd_rule *rules;
	size_t nrules;
};

/* A node: id and host name (borrowed), its facts excerpt (borrowed; may be NULL) as the campaign
 * stored it: {rails: [{device, port, rate_gbps, mtu, numa_node, pcie: {width, max_width, speed,
 * max_speed}}], gpus: [{numa_node}], gpudirect: {peermem, dmabuf}}. */
struct vd_node {
	const char *id, *hostname;
	const json_t *facts;
	const json_t *gate; /* borrowed, may be NULL: why the node fails before any test (its
			       configuration's deployment, its preflight), strings */
};

/* One result row. a is the client, b the server (a == b: loopback); rail -1 when not per
 * rail. v: the test's values (NaN = not measured), read only when state is VD_OK. error: why it
 * failed (VD_ERROR). note: what the campaign saw around it (port counters that moved, path MTU
 * of each end), appended to the reasons when the row fails; may be NULL. */
struct vd_row {
	uint32_t test;
	uint32_t a, b;
	int32_t rail;
	uint8_t state;	 /* enum vd_state */
	uint8_t phase;	 /* enum vd_phase */
	uint8_t missing; /* VD_MISSING: 1 the rail is missing on a, 2 on b */
	uint8_t blame;	 /* VD_INVALID: enum vd_blame */
	uint8_t flags;	 /* VD_ROW_* */
	const double *v;
	const char *error, *note;
};

/* A collective's row that names no node when it fails (none of the job's nodes stands out):
 * the test fails as a whole. */
#define VD_ROW_WHOLE 1

struct vd_input {
	const struct vd_test *tests;
	size_t ntests;
	const struct vd_node *nodes;
	size_t nnodes;
	const struct vd_row *rows;
	size_t nrows;
	bool quick;		      /* the verdict says it was a smoke run */
	const char *transport;	      /* "verbs" or "tcp" (tcp: labelled a baseline) */
	bool cancelled;		      /* the campaign was cancelled: the verdict is partial */
	size_t max_excluded;	      /* failing nodes the playbook lets the verdict exclude */
	const json_t *not_acceptance; /* borrowed, may be NULL: why this cannot be an acceptance
					 sign-off (strings; [] or NULL: it can) */
};

/* Judge a campaign. *ret (new reference) is the verdict document (docs/campaigns.md):
 * {result: pass|fail|incomplete, transport, baseline, quick, tests: [{name, kind, pattern,
 * result, rows, measured, failed, stats: {FIELD: {n, min, median, mad, max}}, rules: [{metric,
 * op, value, relative, threshold, failed, evaluated}], failures: [...], failures_total}],
 * nodes: [{id, hostname, result, reasons, rails: [{rail, device, result, reasons}]}], links:
 * [{a, b, rail, tests, reasons}], findings: [lines a human reads first]}.
 * Cost: O(rows x rules) plus a quickselect per relative rule. Errors: -EINVAL (a row naming a
 * test or node out of range), -ENOMEM. */
__attribute__((warn_unused_result)) int vd_evaluate(const struct vd_input *in, json_t **ret);

/* A pair to re-run: a test's failing slot (a, b, rail). */
struct vd_suspect {
	uint32_t a, b;
	int32_t rail;
};

/* The suspects of test t among rows of phase VD_RUN (a rule failed, or the run failed while both
 * nodes were up: error does not start with "offline"), and the nodes that passed every row of t
 * (good[i] = true). *ret_v (caller frees with free()) and *ret_n written on success. */
__attribute__((warn_unused_result)) int vd_suspects(const struct vd_input *in, uint32_t t,
						    struct vd_suspect **ret_v, size_t *ret_n,
						    bool *good);

/* Parse an acceptance operator / relative base; 0 or -EINVAL. */
__attribute__((warn_unused_result)) int vd_op_parse(const char *s, enum vd_op *ret);
__attribute__((warn_unused_result)) int vd_rel_parse(const char *s, enum vd_rel *ret);
const char *vd_op_name(enum vd_op op);
const char *vd_phase_name(enum vd_phase p);
/* "run", "retest", "isolated-lat", ... back to the phase; -EINVAL. */
__attribute__((warn_unused_result)) int vd_phase_parse(const char *s, enum vd_phase *ret);

#endif
