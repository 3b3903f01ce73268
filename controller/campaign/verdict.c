/* The verdict: rules over every row, the cluster's distribution for relative rules, failures
 * attributed to nodes, rails and links, explanations from the nodes' facts. One pass per test
 * over the rows; per-node and per-rail counters in flat arrays, so a 1024-node x 8-rail
 * campaign (4.2 M rows) is judged in well under two seconds. */
#include "controller/campaign/verdict.h"
#include "common/util/util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Failures listed per test (the count is always complete). */
#define VD_FAILURES_LISTED 200
/* Links listed (the count is always complete). */
#define VD_LINKS_LISTED 500
/* Findings listed (then one line says how many more there were). */
#define VD_FINDINGS_LISTED 200
/* Rails per node the attribution tracks. */
#define VD_RAILS_MAX 32
/* Scale of the MAD to a standard deviation under a normal distribution. */
#define VD_MAD_SCALE 1.4826

/* fail_code values besides a rule index. */
#define FC_NONE	     -1
#define FC_ERROR     -2
#define FC_MISSING   -3
#define FC_CANCELLED -4
#define FC_SKIP	     -5 /* not part of this test's judgement */
#define FC_INVALID   -6 /* its reports are not evidence: judged by nobody */
/* Invalid rows listed per test (the count is always complete). */
#define VD_INVALID_LISTED 200

static const char *const phase_names[VD_PHASE_COUNT] = {
	"run",		 "retest",	 "isolated-lat", "isolated-bw",
	"congested-lat", "congested-bw", "congestor",
};

const char *vd_phase_name(enum vd_phase p)
{
	return (unsigned)p < VD_PHASE_COUNT ? phase_names[p] : "?";
}

int vd_phase_parse(const char *s, enum vd_phase *ret)
{
	for (int i = 0; s && i < VD_PHASE_COUNT; i++) {
		if (strcmp(s, phase_names[i]) == 0) {
			*ret = (enum vd_phase)i;
			return 0;
		}
	}
	return -EINVAL;
}

static const char *const op_names[] = {">=", "<=", ">", "<", "==", "!="};

const char *vd_op_name(enum vd_op op)
{
	return (unsigned)op < RY_ARRAY_SIZE(op_names) ? op_names[op] : "?";
}

int vd_op_parse(const char *s, enum vd_op *ret)
{
	for (size_t i = 0; s && i < RY_ARRAY_SIZE(op_names); i++) {
		if (strcmp(s, op_names[i]) == 0) {
			*ret = (enum vd_op)i;
			return 0;
		}
	}
	return -EINVAL;
}

static const char *const rel_names[] = {NULL, "median", "min", "max", "mad"};

int vd_rel_parse(const char *s, enum vd_rel *ret)
{
	if (!s) {
		*ret = VD_ABS;
		return 0;
	}
	for (size_t i = 1; i < RY_ARRAY_SIZE(rel_names); i++) {
		if (strcmp(s, rel_names[i]) == 0) {
			*ret = (enum vd_rel)i;
			return 0;
		}
	}
	return -EINVAL;
}

static bool holds(enum vd_op op, double v, double t)
{
	switch (op) {
	case VD_GE:
		return v >= t;
	case VD_LE:
		return v <= t;
	case VD_GT:
		return v > t;
	case VD_LT:
		return v < t;
	case VD_EQ:
		return v == t;
	case VD_NE:
		return v != t;
	}
	return false;
}

/* ---- order statistics -------------------------------------------------------------------- */

static void swapd(double *a, double *b)
{
	double t = *a;

	*a = *b;
	*b = t;
}

/* The k-th smallest of v[0..n) (0-based), reordering v. Hoare's selection with a median-of-three
 * pivot: O(n) expected. */
static double select_k(double *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2, i = lo, j = hi;
		double pivot;

		if (v[mid] < v[lo])
			swapd(&v[mid], &v[lo]);
		if (v[hi] < v[lo])
			swapd(&v[hi], &v[lo]);
		if (v[hi] < v[mid])
			swapd(&v[hi], &v[mid]);
		pivot = v[mid];
		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				swapd(&v[i], &v[j]);
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return v[k];
	}
	return v[k];
}

/* Median of v[0..n) (n > 0; the mean of the middle two for even n), reordering v. */
static double median_of(double *v, size_t n)
{
	double hi = select_k(v, n, n / 2), lo;

	if (n % 2)
		return hi;
	/* After selection everything left of n/2 is <= hi: the lower middle is their maximum. */
	lo = v[0];
	for (size_t i = 1; i < n / 2; i++)
		if (v[i] > lo)
			lo = v[i];
	return (lo + hi) / 2;
}

struct dist {
	size_t n;
	double min, max, median, mad;
};

/* Distribution of v[0..n), reordering v (n may be 0). */
static void dist_of(double *v, size_t n, struct dist *d)
{
	memset(d, 0, sizeof(*d));
	d->n = n;
	if (!n)
		return;
	d->min = d->max = v[0];
	for (size_t i = 1; i < n; i++) {
		d->min = v[i] < d->min ? v[i] : d->min;
		d->max = v[i] > d->max ? v[i] : d->max;
	}
	d->median = median_of(v, n);
	for (size_t i = 0; i < n; i++)
		v[i] = fabs(v[i] - d->median);
	d->mad = median_of(v, n);
}

static json_t *dist_json(const struct dist *d)
{
	return json_pack("{s:I, s:f, s:f, s:f, s:f}", "n", (json_int_t)d->n, "min", d->min,
			 "median", d->median, "mad", d->mad, "max", d->max);
}

/* ---- text -------------------------------------------------------------------------------- */

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
	va_list ap;
	char *s = NULL;
	int r;

	va_start(ap, f);
	r = vasprintf(&s, f, ap);
	va_end(ap);
	return r < 0 ? NULL : s;
}

/* Append a string (taking it) to a JSON array; NULL (allocation failure) is dropped. */
static void push_str(json_t *arr, char *s)
{
	if (s)
		json_array_append_new(arr, json_string(s));
	free(s);
}

/* "%.3g"-like numbers that keep whole values whole. */
static void num(char *buf, size_t len, double v)
{
	if (isnan(v))
		snprintf(buf, len, "n/a");
	else if (fabs(v) >= 100 || v == floor(v))
		snprintf(buf, len, "%.1f", v);
	else
		snprintf(buf, len, "%.3g", v);
}

/* ---- per-test state ---------------------------------------------------------------------- */

struct rule_eval {
	double threshold, stat; /* stat: the distribution's value (relative rules) */
	char src[128];		/* where stat came from: "of 12 rows", "gpu-2 -> gpu-3" */
	size_t evaluated, failed;
	bool usable; /* a relative rule over no measurement cannot be applied */
};

/* Outcome of a re-run of a suspect pair itself. */
struct rerun {
	uint32_t a, b;
	int32_t rail;
	bool ok;
};

struct vd {
	const struct vd_input *in;
	size_t *lo, *hi;	/* per test: its rows lie in [lo, hi) (rows of others may too) */
	int32_t *maxrail;	/* per test: the largest rail of its rows (-1: none per rail) */
	double *buf;		/* nrows doubles */
	int16_t *fail_code;	/* per row of the current test */
	size_t R;		/* rail slots of the current test (1 when not per rail) */
	uint32_t *tot, *bad;	/* per node x rail: judged rows, failing rows (VD_RUN) */
	uint32_t *conf, *clear; /* per node x rail: retests against good peers failed / passed */
	uint8_t *missing;	/* per node x rail: the rail is missing */
	uint8_t *bad_rail;	/* per node x rail: attributed bad */
	size_t *first_fail;	/* per node x rail: a failing row (SIZE_MAX: none) */
	bool *node_bad;		/* per node, over all tests */
	double *ref;		/* per node: its own extreme of a field (robust min/max) */
	size_t *ref_row;	/* per node: the row that holds it */
	uint32_t *dis, *seen;	/* per node, current test: rows in dispute, rows reported */
	uint32_t *inv;		/* per node, current test: invalid rows blamed on it */
	json_t **node_reasons;	/* per node: array of strings */
	json_t **node_rails;	/* per node: object rail -> {device, reasons} */
	json_t *links, *findings;
	size_t nlinks, nfindings;
	bool any_fail;
	bool any_incomplete; /* a test had rows whose reports were not evidence */
	bool loopback;	     /* the current test is a loopback: a node is its own peer */
	/* Per rail: the value most nodes have (explanations compare a node with it); computed
	 * once, on first use. */
	double common_rate[VD_RAILS_MAX], common_mtu[VD_RAILS_MAX];
	bool common_known;
};

static const char *node_name(const struct vd *v, uint32_t i)
{
	return v->in->nodes[i].hostname ? v->in->nodes[i].hostname : v->in->nodes[i].id;
}

/* The device of rail k of node i from its facts, or NULL. */
static const char *rail_device(const struct vd *v, uint32_t i, int32_t k)
{
	const json_t *rails = json_object_get(v->in->nodes[i].facts, "rails");

	return k < 0 ? NULL
		     : json_string_value(
			       json_object_get(json_array_get(rails, (size_t)k), "device"));
}

/* "gpu-3 rail 2 (mlx5_2)" / "gpu-3" */
static void where(const struct vd *v, uint32_t i, int32_t k, char *buf, size_t len)
{
	const char *dev = rail_device(v, i, k);

	if (k < 0)
		snprintf(buf, len, "%s", node_name(v, i));
	else if (dev)
		snprintf(buf, len, "%s rail %d (%s)", node_name(v, i), (int)k, dev);
	else
		snprintf(buf, len, "%s rail %d", node_name(v, i), (int)k);
}

/* The rule's threshold in words: "370" or "17.0 (2.1 x min 8.1)". */
static void threshold_text(const struct vd_rule *r, const struct rule_eval *e, char *buf,
			   size_t len)
{
	char t[32], s[32], val[32];

	num(t, sizeof(t), e->threshold);
	num(s, sizeof(s), e->stat);
	num(val, sizeof(val), r->value);
	if (r->rel == VD_ABS)
		snprintf(buf, len, "%s", t);
	else if (r->rel == VD_MAD)
		snprintf(buf, len, "%s (median %s %s %s x MAD, %s)", t, s,
			 r->op == VD_GE || r->op == VD_GT ? "-" : "+", val, e->src);
	else
		snprintf(buf, len, "%s (%s x %s %s, %s)", t, val, rel_names[r->rel], s, e->src);
}

/* Why row i failed, in words (caller frees). */
static char *row_reason(const struct vd *v, const struct vd_test *T, const struct rule_eval *ev,
			size_t i)
{
	const struct vd_row *w = &v->in->rows[i];
	int fc = v->fail_code[i];
	char thr[320], meas[32];

	if (fc == FC_ERROR)
		return fmt("%s: %s", T->name, w->error ? w->error : "the run failed");
	if (fc == FC_MISSING)
		return fmt("%s: %s", T->name, w->error ? w->error : "rail missing");
	if (fc < 0)
		return NULL;
	threshold_text(&T->rules[fc], &ev[fc], thr, sizeof(thr));
	if (!isfinite(w->v[T->rules[fc].field]))
		return fmt("%s: %s missing from a measured result (the rule %s %s %s cannot hold)",
			   T->name, T->fields[T->rules[fc].field], T->fields[T->rules[fc].field],
			   vd_op_name(T->rules[fc].op), thr);
	num(meas, sizeof(meas), w->v[T->rules[fc].field]);
	return fmt("%s: %s %s, not %s %s%s%s%s", T->name, T->fields[T->rules[fc].field], meas,
		   vd_op_name(T->rules[fc].op), thr, T->rules[fc].message ? " (" : "",
		   T->rules[fc].message ? T->rules[fc].message : "",
		   T->rules[fc].message ? ")" : "");
}

/* ---- explanations from facts ------------------------------------------------------------- */

/* The value most nodes have for rail k's member (0 when none): Boyer-Moore majority vote,
 * enough to tell the odd one out. O(nodes). */
static double common_rail_value(const struct vd *v, size_t k, const char *member)
{
	double cand = 0;
	size_t cnt = 0;

	for (size_t i = 0; i < v->in->nnodes; i++) {
		const json_t *rail =
			json_array_get(json_object_get(v->in->nodes[i].facts, "rails"), k);
		const json_t *x = json_object_get(rail, member);

		if (!json_is_number(x))
			continue;
		if (cnt == 0) {
			cand = json_number_value(x);
			cnt = 1;
		} else if (json_number_value(x) == cand) {
			cnt++;
		} else {
			cnt--;
		}
	}
	return cand;
}

/* Fill the per-rail common values once: O(nodes x rails) instead of that per explanation. */
static void common_values(struct vd *v)
{
	if (v->common_known)
		return;
	for (size_t k = 0; k < VD_RAILS_MAX; k++) {
		v->common_rate[k] = common_rail_value(v, k, "rate_gbps");
		v->common_mtu[k] = common_rail_value(v, k, "mtu");
	}
	v->common_known = true;
}

/* A finding (taken); past VD_FINDINGS_LISTED only counted. */
static void finding(struct vd *v, char *line)
{
	if (v->nfindings++ < VD_FINDINGS_LISTED)
		push_str(v->findings, line);
	else
		free(line);
}

/* Append to reasons what node i's facts say about rail k (k < 0: every rail) and the node. */
static void explain(struct vd *v, uint32_t i, int32_t k, json_t *reasons)
{
	const json_t *facts = v->in->nodes[i].facts, *rails = json_object_get(facts, "rails");
	const json_t *gpus = json_object_get(facts, "gpus"),
		     *gd = json_object_get(facts, "gpudirect");
	size_t lo = k < 0 ? 0 : (size_t)k, hi = k < 0 ? json_array_size(rails) : (size_t)k + 1;

	common_values(v);

	for (size_t r = lo; r < hi && r < json_array_size(rails); r++) {
		const json_t *rail = json_array_get(rails, r),
			     *pcie = json_object_get(rail, "pcie");
		const char *dev = json_string_value(json_object_get(rail, "device"));
		double rate = json_number_value(json_object_get(rail, "rate_gbps"));
		double mtu = json_number_value(json_object_get(rail, "mtu"));
		double crate = r < VD_RAILS_MAX ? v->common_rate[r] : 0;
		double cmtu = r < VD_RAILS_MAX ? v->common_mtu[r] : 0;
		json_int_t w = json_integer_value(json_object_get(pcie, "width"));
		json_int_t mw = json_integer_value(json_object_get(pcie, "max_width"));
		const char *sp = json_string_value(json_object_get(pcie, "speed"));
		const char *msp = json_string_value(json_object_get(pcie, "max_speed"));
		const json_t *numa = json_object_get(rail, "numa_node");
		const json_t *gnuma = json_object_get(json_array_get(gpus, r), "numa_node");

		if (!dev)
			dev = "?";
		if (rate > 0 && crate > rate)
			push_str(reasons, fmt("facts: %s port runs at %g Gb/s; rail %zu of the "
					      "cluster runs at %g",
					      dev, rate, r, crate));
		if (w > 0 && mw > w)
			push_str(reasons, fmt("facts: %s PCIe link trained at x%lld of x%lld", dev,
					      (long long)w, (long long)mw));
		if (sp && msp && strcmp(sp, msp) != 0 && strcmp(sp, "Unknown") != 0)
			push_str(reasons, fmt("facts: %s PCIe link at %s of %s", dev, sp, msp));
		if (mtu > 0 && cmtu > mtu)
			push_str(reasons,
				 fmt("facts: %s active MTU %g; the cluster's rail %zu uses %g", dev,
				     mtu, r, cmtu));
		if (json_is_integer(numa) && json_is_integer(gnuma) &&
		    json_integer_value(numa) >= 0 && json_integer_value(gnuma) >= 0 &&
		    json_integer_value(numa) != json_integer_value(gnuma))
			push_str(reasons, fmt("facts: GPU %zu is on NUMA node %lld, %s on %lld "
					      "(across sockets)",
					      r, (long long)json_integer_value(gnuma), dev,
					      (long long)json_integer_value(numa)));
	}
	if (json_array_size(gpus) > 0 && json_is_object(gd) &&
	    !json_is_true(json_object_get(gd, "peermem")) &&
	    !json_is_true(json_object_get(gd, "dmabuf")))
		push_str(reasons,
			 fmt("facts: GPUDirect RDMA unavailable: nvidia_peermem not loaded "
			     "and no dma-buf support"));
}

/* MTU of the two ends of a link differ? Append it. */
static void explain_link(const struct vd *v, uint32_t a, uint32_t b, int32_t k, json_t *reasons)
{
	const json_t *ra = json_array_get(json_object_get(v->in->nodes[a].facts, "rails"),
					  (size_t)(k < 0 ? 0 : k));
	const json_t *rb = json_array_get(json_object_get(v->in->nodes[b].facts, "rails"),
					  (size_t)(k < 0 ? 0 : k));
	double ma = json_number_value(json_object_get(ra, "mtu"));
	double mb = json_number_value(json_object_get(rb, "mtu"));

	if (ma > 0 && mb > 0 && ma != mb)
		push_str(reasons, fmt("facts: MTU mismatch: %g on %s, %g on %s", ma,
				      node_name(v, a), mb, node_name(v, b)));
}

/* ---- lat / bw tests ---------------------------------------------------------------------- */

/* A test's verdict entry gets its result, failure count, and (taking them) its stats, rules
 * and listed failures. */
static void test_done(json_t *tj, bool fail, size_t nfail, json_t *stats, json_t *rules,
		      json_t *failures)
{
	json_object_set_new(tj, "result", json_string(fail ? "fail" : "pass"));
	json_object_set_new(tj, "failed", json_integer((json_int_t)nfail));
	json_object_set_new(tj, "stats", stats);
	json_object_set_new(tj, "rules", rules);
	json_object_set_new(tj, "failures", failures);
	json_object_set_new(tj, "failures_total", json_integer((json_int_t)nfail));
}

static bool row_in(const struct vd_row *w, uint32_t t, bool retest_too)
{
	return w->test == t && (w->phase == VD_RUN || (retest_too && w->phase == VD_RETEST));
}

/* The robust extreme of field f over test t's VD_RUN rows: each reporting node's (the client's)
 * own lowest (hi: highest) value, then the second lowest (highest) of those, so that no one
 * node — its lucky run, or its lie — sets everyone's threshold; with one reporting node, its
 * own. *ret_row: the row holding it; *ret_nodes: how many nodes reported. NaN when none. */
static double robust_extreme(struct vd *v, uint32_t t, size_t f, bool hi, size_t *ret_row,
			     size_t *ret_nodes)
{
	const struct vd_input *in = v->in;
	size_t best = SIZE_MAX, second = SIZE_MAX, nodes = 0;

	for (size_t i = 0; i < in->nnodes; i++) {
		v->ref[i] = NAN;
		v->ref_row[i] = SIZE_MAX;
	}
	for (size_t i = v->lo[t]; i < v->hi[t]; i++) {
		const struct vd_row *w = &in->rows[i];
		double x;

		if (!row_in(w, t, false) || w->state != VD_OK || !isfinite(x = w->v[f]))
			continue;
		if (isnan(v->ref[w->a]) || (hi ? x > v->ref[w->a] : x < v->ref[w->a])) {
			v->ref[w->a] = x;
			v->ref_row[w->a] = i;
		}
	}
	for (size_t i = 0; i < in->nnodes; i++) {
		double x = v->ref[i];

		if (isnan(x))
			continue;
		nodes++;
		if (best == SIZE_MAX || (hi ? x > v->ref[best] : x < v->ref[best])) {
			second = best;
			best = i;
		} else if (second == SIZE_MAX || (hi ? x > v->ref[second] : x < v->ref[second])) {
			second = i;
		}
	}
	*ret_nodes = nodes;
	if (best == SIZE_MAX) {
		*ret_row = SIZE_MAX;
		return NAN;
	}
	if (second == SIZE_MAX)
		second = best;
	*ret_row = v->ref_row[second];
	return v->ref[second];
}

/* Thresholds of every rule of test t over its VD_RUN rows. */
static void thresholds(struct vd *v, uint32_t t, struct rule_eval *ev, json_t *stats)
{
	const struct vd_input *in = v->in;
	const struct vd_test *T = &in->tests[t];

	for (size_t f = 0; f < T->nfields; f++) {
		size_t n = 0;
		struct dist d;
		bool needed = stats != NULL;

		for (size_t r = 0; r < T->nrules && !needed; r++)
			needed = T->rules[r].field == f && T->rules[r].rel != VD_ABS;
		if (!needed)
			continue;
		for (size_t i = v->lo[t]; i < v->hi[t]; i++) {
			const struct vd_row *w = &in->rows[i];

			if (row_in(w, t, false) && w->state == VD_OK && isfinite(w->v[f]))
				v->buf[n++] = w->v[f];
		}
		dist_of(v->buf, n, &d);
		if (stats)
			json_object_set_new(stats, T->fields[f], dist_json(&d));
		for (size_t r = 0; r < T->nrules; r++) {
			const struct vd_rule *R = &T->rules[r];

			if (R->field != f || R->rel == VD_ABS)
				continue;
			ev[r].usable = d.n > 0;
			snprintf(ev[r].src, sizeof(ev[r].src), "of %zu rows", d.n);
			switch (R->rel) {
			case VD_MEDIAN:
				ev[r].stat = d.median;
				ev[r].threshold = R->value * d.median;
				break;
			case VD_MIN:
			case VD_MAX: {
				size_t row, nodes;
				double x = robust_extreme(v, t, f, R->rel == VD_MAX, &row, &nodes);

				ev[r].stat = x;
				ev[r].threshold = R->value * x;
				if (row != SIZE_MAX)
					snprintf(ev[r].src, sizeof(ev[r].src),
						 "%s -> %s, %s of %zu reporting nodes' own %s",
						 node_name(v, in->rows[row].a),
						 node_name(v, in->rows[row].b),
						 nodes > 1
							 ? (R->rel == VD_MAX ? "the second highest"
									     : "the second lowest")
							 : "the only one",
						 nodes, rel_names[R->rel]);
				break;
			}
			case VD_MAD:
				ev[r].stat = d.median;
				ev[r].threshold =
					R->op == VD_GE || R->op == VD_GT
						? d.median - R->value * VD_MAD_SCALE * d.mad
						: d.median + R->value * VD_MAD_SCALE * d.mad;
				break;
			case VD_ABS:
				break;
			}
		}
	}
	for (size_t r = 0; r < T->nrules; r++) {
		if (T->rules[r].rel == VD_ABS) {
			ev[r].usable = true;
			ev[r].threshold = T->rules[r].value;
		}
	}
}

/* Judge every VD_RUN/VD_RETEST row of test t into fail_code. */
static void judge_rows(struct vd *v, uint32_t t, struct rule_eval *ev)
{
	const struct vd_input *in = v->in;
	const struct vd_test *T = &in->tests[t];

	for (size_t i = v->lo[t]; i < v->hi[t]; i++) {
		const struct vd_row *w = &in->rows[i];
		int fc = FC_NONE;

		if (!row_in(w, t, true)) {
			v->fail_code[i] = FC_SKIP;
			continue;
		}
		switch (w->state) {
		case VD_ERROR:
			fc = FC_ERROR;
			break;
		case VD_MISSING:
			fc = FC_MISSING;
			break;
		case VD_CANCELLED:
			fc = FC_CANCELLED;
			break;
		case VD_INVALID:
			fc = FC_INVALID;
			break;
		default:
			for (size_t r = 0; r < T->nrules; r++) {
				double x = w->v[T->rules[r].field];

				/* A counter the device does not expose (or that reset) is not
				 * evaluated; a metric missing from a measured result fails. */
				if (!ev[r].usable ||
				    (!isfinite(x) &&
				     strncmp(T->fields[T->rules[r].field], "counters.", 9) == 0))
					continue;
				if (w->phase == VD_RUN)
					ev[r].evaluated++;
				if (!isfinite(x) || !holds(T->rules[r].op, x, ev[r].threshold)) {
					if (w->phase == VD_RUN)
						ev[r].failed++;
					if (fc == FC_NONE)
						fc = (int)r;
				}
			}
		}
		v->fail_code[i] = (int16_t)fc;
	}
}

static bool is_fail(int fc)
{
	return fc >= 0 || fc == FC_ERROR || fc == FC_MISSING;
}

static size_t slot_of(const struct vd *v, uint32_t node, int32_t rail)
{
	return (size_t)node * v->R + (size_t)(rail < 0 ? 0 : rail);
}

/* Count VD_RUN outcomes per node and rail; missing rails. */
static void count_runs(struct vd *v, uint32_t t)
{
	const struct vd_input *in = v->in;

	for (size_t i = v->lo[t]; i < v->hi[t]; i++) {
		const struct vd_row *w = &in->rows[i];
		int fc = v->fail_code[i];
		uint32_t ends[2] = {w->a, w->b};

		if (w->test != t || w->phase != VD_RUN || fc == FC_SKIP || fc == FC_CANCELLED ||
		    fc == FC_INVALID)
			continue;
		if (fc == FC_MISSING) {
			if (w->missing & 1)
				v->missing[slot_of(v, w->a, w->rail)] = 1;
			if (w->missing & 2)
				v->missing[slot_of(v, w->b, w->rail)] = 1;
			continue;
		}
		for (int e = 0; e < (w->a == w->b ? 1 : 2); e++) {
			size_t s = slot_of(v, ends[e], w->rail);

			v->tot[s]++;
			if (is_fail(fc)) {
				v->bad[s]++;
				if (v->first_fail[s] == SIZE_MAX)
					v->first_fail[s] = i;
			}
		}
	}
}

static int cmp_rerun(const void *x, const void *y)
{
	const struct rerun *p = x, *q = y;

	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	if (p->b != q->b)
		return p->b < q->b ? -1 : 1;
	return (p->rail > q->rail) - (p->rail < q->rail);
}

/* Retest rows: against a good peer they confirm or clear the suspect end; a re-run of the
 * suspect pair itself is kept in *ret_reruns (sorted) for the pair's own judgement. */
static int count_retests(struct vd *v, uint32_t t, struct rerun **ret_reruns, size_t *ret_n)
{
	const struct vd_input *in = v->in;
	struct rerun *rr = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = v->lo[t]; i < v->hi[t]; i++) {
		const struct vd_row *w = &in->rows[i];
		int fc = v->fail_code[i];
		bool good_a, good_b;

		if (w->test != t || w->phase != VD_RETEST || fc == FC_CANCELLED || fc == FC_SKIP ||
		    fc == FC_INVALID)
			continue;
		good_a = v->tot[slot_of(v, w->a, w->rail)] > 0 &&
			 v->bad[slot_of(v, w->a, w->rail)] == 0;
		good_b = v->tot[slot_of(v, w->b, w->rail)] > 0 &&
			 v->bad[slot_of(v, w->b, w->rail)] == 0;
		if (good_a != good_b) {
			size_t s = slot_of(v, good_a ? w->b : w->a, w->rail);

			if (is_fail(fc))
				v->conf[s]++;
			else
				v->clear[s]++;
			continue;
		}
		if (n == cap) {
			struct rerun *x = realloc(rr, (cap = cap ? cap * 2 : 64) * sizeof(*rr));

			if (!x) {
				free(rr);
				return -ENOMEM;
			}
			rr = x;
		}
		rr[n++] = (struct rerun){w->a < w->b ? w->a : w->b, w->a < w->b ? w->b : w->a,
					 w->rail, !is_fail(fc)};
	}
	if (n)
		qsort(rr, n, sizeof(*rr), cmp_rerun);
	*ret_reruns = rr;
	*ret_n = n;
	return 0;
}

/* Did the suspect pair pass its own re-run? -1: not re-run. */
static int rerun_ok(const struct rerun *rr, size_t n, uint32_t a, uint32_t b, int32_t rail)
{
	struct rerun key = {a < b ? a : b, a < b ? b : a, rail, false};
	const struct rerun *hit = n ? bsearch(&key, rr, n, sizeof(*rr), cmp_rerun) : NULL;

	return hit ? hit->ok : -1;
}

/* Node i's rail slot s is bad: it fails with most of its peers (at least two), or a retest
 * against a good peer confirmed it and none cleared it, or the rail is missing. */
static bool slot_bad(const struct vd *v, size_t s)
{
	return v->missing[s] || (v->bad[s] >= 2 && 2 * v->bad[s] > v->tot[s]) ||
	       (v->conf[s] > 0 && v->clear[s] == 0) || (v->loopback && v->bad[s] > 0);
}

static json_t *rail_entry(struct vd *v, uint32_t i, int32_t k)
{
	char key[16];
	json_t *o;

	snprintf(key, sizeof(key), "%d", (int)k);
	o = json_object_get(v->node_rails[i], key);
	if (!o) {
		const char *dev = rail_device(v, i, k);

		o = json_pack("{s:i, s:s?, s:s, s:[]}", "rail", (int)k, "device", dev, "result",
			      "fail", "reasons");
		json_object_set_new(v->node_rails[i], key, o);
	}
	return json_object_get(o, "reasons");
}

/* One bad slot (node i, rail slot s) into reasons and findings. whole: the node as a whole
 * (not per rail, or every rail of it bad). */
static void name_bad(struct vd *v, uint32_t t, const struct rule_eval *ev, uint32_t i, size_t s,
		     int32_t rail, bool whole, json_t *reasons)
{
	const struct vd_test *T = &v->in->tests[t];
	char w[128], *why = NULL;

	where(v, i, whole ? -1 : rail, w, sizeof(w));
	if (v->missing[s]) {
		push_str(reasons, fmt("%s: rail %d missing (no active port; other nodes have it)",
				      T->name, (int)rail));
		finding(v, fmt("%s: rail %d missing on %s (no active port)", T->name, (int)rail,
			       node_name(v, i)));
		return;
	}
	if (v->first_fail[s] != SIZE_MAX)
		why = row_reason(v, T, ev, v->first_fail[s]);
	if (T->kind && strcmp(T->kind, "gpu") == 0) {
		/* A node's own GPUs: no peers to count, the check says what failed. */
		const char *note =
			v->first_fail[s] != SIZE_MAX ? v->in->rows[v->first_fail[s]].note : NULL;

		push_str(reasons, fmt("%s", why ? why : "the GPU check failed"));
		if (note)
			push_str(reasons, fmt("%s", note));
		size_t pre = strlen(T->name) + 2; /* row_reason()'s "NAME: " */
		const char *bare = why && strncmp(why, T->name, pre - 2) == 0 && strlen(why) >= pre
					   ? why + pre
					   : why;
		bool own = bare && strstr(bare, "checks_failed");

		/* The checks' own failures say it all; a rule of the playbook says itself. */
		finding(v, fmt("%s: node %s is bad: %s%s%s", T->name, node_name(v, i),
			       note   ? note
			       : bare ? bare
				      : "the GPU check failed",
			       note && bare && !own ? "; " : "", note && bare && !own ? bare : ""));
		free(why);
		return;
	}
	if (v->tot[s] == 0)
		push_str(reasons, fmt("%s: failed against good peers on retest (%u of %u)", T->name,
				      v->conf[s], v->conf[s] + v->clear[s]));
	else
		push_str(reasons,
			 fmt("%s: fails with %u of %u peers%s%s%s", T->name, v->bad[s], v->tot[s],
			     v->conf[s] ? ", and against good peers on retest" : "",
			     why ? "; e.g. " : "", why ? why : ""));
	if (v->first_fail[s] != SIZE_MAX && v->in->rows[v->first_fail[s]].note)
		push_str(reasons, fmt("%s", v->in->rows[v->first_fail[s]].note));
	explain(v, i, whole ? -1 : rail, reasons);
	finding(v, fmt("%s: %s %s is bad: fails with %u of %u peers%s%s%s", T->name,
		       whole ? "node" : "rail", w, v->bad[s], v->tot[s],
		       v->conf[s] ? " (confirmed on retest)" : "", why ? "; e.g. " : "",
		       why ? why : ""));
	free(why);
}

/* Name the bad nodes and rails of test t: a node whose every rail is bad is named as the node
 * (with its first bad rail's evidence), otherwise each bad rail. */
static void attribute(struct vd *v, uint32_t t, const struct rule_eval *ev)
{
	const struct vd_test *T = &v->in->tests[t];

	for (uint32_t i = 0; i < v->in->nnodes; i++) {
		size_t nbad = 0, nrails = 0, first = SIZE_MAX;

		for (size_t k = 0; k < v->R; k++) {
			size_t s = (size_t)i * v->R + k;

			if (v->tot[s] || v->missing[s] || v->conf[s])
				nrails++;
			if (!slot_bad(v, s))
				continue;
			v->bad_rail[s] = 1;
			first = first == SIZE_MAX ? k : first;
			nbad++;
		}
		if (!nbad)
			continue;
		v->node_bad[i] = true;
		v->any_fail = true;
		if (!T->per_rail || nbad >= nrails) {
			size_t s = (size_t)i * v->R + first;

			name_bad(v, t, ev, i, s, T->per_rail ? (int32_t)first : -1, true,
				 v->node_reasons[i]);
			if (T->per_rail && nrails > 1)
				push_str(v->node_reasons[i],
					 fmt("%s: every rail fails (%zu of %zu)", T->name, nbad,
					     nrails));
			continue;
		}
		for (size_t k = 0; k < v->R; k++) {
			size_t s = (size_t)i * v->R + k;

			if (v->bad_rail[s])
				name_bad(v, t, ev, i, s, (int32_t)k, false,
					 rail_entry(v, i, (int32_t)k));
		}
	}
}

/* Failures that no bad end explains: links (or, after a clean re-run, transients). */
static void links(struct vd *v, uint32_t t, const struct rule_eval *ev, const struct rerun *rr,
		  size_t nrr, json_t *failures, size_t *nfail)
{
	const struct vd_input *in = v->in;
	const struct vd_test *T = &in->tests[t];

	for (size_t i = v->lo[t]; i < v->hi[t]; i++) {
		const struct vd_row *w = &in->rows[i];
		int fc = v->fail_code[i];
		bool ends_bad;
		char *why;
		json_t *f = NULL, *lk;

		if (w->test != t || w->phase != VD_RUN || !is_fail(fc))
			continue;
		why = row_reason(v, T, ev, i);
		ends_bad = v->bad_rail[slot_of(v, w->a, w->rail)] ||
			   v->bad_rail[slot_of(v, w->b, w->rail)];
		(*nfail)++;
		if (json_array_size(failures) < VD_FAILURES_LISTED) {
			f = json_pack("{s:s, s:s, s:s?, s:s}", "a", in->nodes[w->a].id, "b",
				      in->nodes[w->b].id, "reason", why, "attributed",
				      ends_bad ? "node" : "link");
			json_object_set_new(f, "rail",
					    w->rail < 0 ? json_null() : json_integer(w->rail));
			json_array_append_new(failures, f);
		}
		if (!ends_bad && fc != FC_MISSING) {
			int ok = rerun_ok(rr, nrr, w->a, w->b, w->rail);
			char wa[128], wb[128];

			where(v, w->a, w->rail, wa, sizeof(wa));
			where(v, w->b, w->rail, wb, sizeof(wb));
			if (ok == 1 && v->conf[slot_of(v, w->a, w->rail)] == 0 &&
			    v->conf[slot_of(v, w->b, w->rail)] == 0) {
				finding(v, fmt("%s: %s <-> %s failed once and passed on retest "
					       "(transient): %s",
					       T->name, wa, wb, why ? why : ""));
				if (f)
					json_object_set_new(f, "attributed",
							    json_string("transient"));
				free(why);
				continue;
			}
			v->any_fail = true;
			if (v->nlinks++ < VD_LINKS_LISTED) {
				json_t *reasons = json_array();

				push_str(reasons, fmt("%s", why ? why : "failed"));
				if (ok == 0)
					push_str(reasons, fmt("failed again on retest"));
				if (w->note)
					push_str(reasons, fmt("%s", w->note));
				explain_link(v, w->a, w->b, w->rail, reasons);
				lk = json_pack("{s:s, s:s, s:s, s:s, s:o}", "a", in->nodes[w->a].id,
					       "b", in->nodes[w->b].id, "a_host",
					       node_name(v, w->a), "b_host", node_name(v, w->b),
					       "reasons", reasons);
				json_object_set_new(lk, "rail",
						    w->rail < 0 ? json_null()
								: json_integer(w->rail));
				json_object_set_new(lk, "test", json_string(T->name));
				json_array_append_new(v->links, lk);
			}
			finding(v, fmt("%s: link %s <-> %s is suspect (both ends pass with other "
				       "peers): %s",
				       T->name, wa, wb, why ? why : ""));
		}
		free(why);
	}
}

/* Rows of test t whose reports were not evidence (VD_INVALID): listed, and the node that made
 * each invalid named. A report that failed the checks names its node. When the two reports of a
 * run differ, a node in dispute with at least two peers and in more than half of its reported
 * rows is the one that rewrote them (its peers agree with everyone else); otherwise both ends
 * are named as disputing and neither is judged. The test is then incomplete unless it fails.
 * Returns how many rows were invalid. */
static size_t invalids(struct vd *v, uint32_t t, json_t *tj)
{
	const struct vd_input *in = v->in;
	const struct vd_test *T = &in->tests[t];
	json_t *list = json_array();
	size_t n = 0;

	memset(v->dis, 0, in->nnodes * sizeof(*v->dis));
	memset(v->seen, 0, in->nnodes * sizeof(*v->seen));
	memset(v->inv, 0, in->nnodes * sizeof(*v->inv));
	for (size_t i = v->lo[t]; i < v->hi[t]; i++) {
		const struct vd_row *w = &in->rows[i];

		if (w->test != t || (w->state != VD_OK && w->state != VD_INVALID))
			continue;
		v->seen[w->a]++;
		if (w->b != w->a)
			v->seen[w->b]++;
		if (w->state == VD_INVALID && w->blame == VD_BLAME_BOTH) {
			v->dis[w->a]++;
			if (w->b != w->a)
				v->dis[w->b]++;
		}
	}
	for (size_t i = v->lo[t]; i < v->hi[t]; i++) {
		const struct vd_row *w = &in->rows[i];
		uint32_t who = w->blame == VD_BLAME_B ? w->b : w->a;
		bool named = w->blame != VD_BLAME_BOTH;
		json_t *o;

		if (w->test != t || w->state != VD_INVALID)
			continue;
		n++;
		if (!named) {
			bool la = v->dis[w->a] >= 2 && 2 * v->dis[w->a] > v->seen[w->a];
			bool lb = v->dis[w->b] >= 2 && 2 * v->dis[w->b] > v->seen[w->b];

			named = la != lb;
			who = la ? w->a : w->b;
		}
		if (json_array_size(list) < VD_INVALID_LISTED) {
			o = json_pack("{s:s, s:s, s:s, s:s?}", "a", in->nodes[w->a].id, "b",
				      in->nodes[w->b].id, "reason",
				      w->error ? w->error : "invalid result", "node",
				      named ? in->nodes[who].id : NULL);
			json_object_set_new(o, "rail",
					    w->rail < 0 ? json_null() : json_integer(w->rail));
			json_array_append_new(list, o);
		}
		if (!named) {
			finding(v, fmt("%s: %s and %s report their run differently; neither is "
				       "judged: %s",
				       T->name, node_name(v, w->a), node_name(v, w->b),
				       w->error ? w->error : "invalid result"));
			continue;
		}
		if (v->inv[who]++ > 0)
			continue;
		v->node_bad[who] = true;
		push_str(v->node_reasons[who],
			 fmt("%s: reported results that are not evidence; e.g. %s", T->name,
			     w->error ? w->error : "invalid result"));
		finding(v, fmt("%s: node %s reported results that are not evidence (not counted): "
			       "%s",
			       T->name, node_name(v, who), w->error ? w->error : "invalid result"));
	}
	json_object_set_new(tj, "invalid", json_integer((json_int_t)n));
	json_object_set_new(tj, "invalid_rows", list);
	if (n) {
		v->any_incomplete = true;
		if (strcmp(json_string_value(json_object_get(tj, "result")), "pass") == 0)
			json_object_set_new(tj, "result", json_string("incomplete"));
	}
	return n;
}

/* A lat/bw/gpu or collective test's entry completed: its row counts, result and failure count,
 * its stats, rules and listed failures (taken), its invalid rows; a failure before it is kept. */
static void test_close(struct vd *v, uint32_t t, json_t *tj, bool fail_before, size_t rows,
		       size_t measured, size_t nfail, json_t *stats, json_t *rules,
		       json_t *failures)
{
	json_object_set_new(tj, "rows", json_integer((json_int_t)rows));
	json_object_set_new(tj, "measured", json_integer((json_int_t)measured));
	test_done(tj, v->any_fail, nfail, stats, rules, failures);
	invalids(v, t, tj);
	v->any_fail = v->any_fail || fail_before;
}

/* Test t's rules as the verdict lists them, with what each evaluated. */
static json_t *rules_json(const struct vd_test *T, const struct rule_eval *ev)
{
	json_t *rules = json_array();

	for (size_t k = 0; rules && k < T->nrules; k++) {
		char thr[320];
		json_t *o;

		threshold_text(&T->rules[k], &ev[k], thr, sizeof(thr));
		o = json_pack("{s:s, s:s, s:f, s:s?, s:I, s:I, s:s, s:i}", "metric",
			      T->rules[k].metric, "op", vd_op_name(T->rules[k].op), "value",
			      T->rules[k].value, "relative", rel_names[T->rules[k].rel],
			      "evaluated", (json_int_t)ev[k].evaluated, "failed",
			      (json_int_t)ev[k].failed, "threshold_text", thr, "line",
			      T->rules[k].line);
		json_object_set_new(o, "threshold",
				    ev[k].usable ? json_real(ev[k].threshold) : json_null());
		json_array_append_new(rules, o);
	}
	return rules;
}

static int eval_pattern(struct vd *v, uint32_t t, json_t *tj)
{
	const struct vd_input *in = v->in;
	const struct vd_test *T = &in->tests[t];
	struct rule_eval *ev = calloc(T->nrules ? T->nrules : 1, sizeof(*ev));
	struct rerun *rr = NULL;
	size_t nrr = 0, nslots, rows = 0, measured = 0, nfail = 0;
	json_t *stats = json_object(), *rules = json_array(), *failures = json_array();
	int32_t maxrail = v->maxrail[t];
	bool fail_before = v->any_fail;
	int r = -ENOMEM;

	if (!ev || !stats || !rules || !failures)
		goto out;
	if (maxrail >= VD_RAILS_MAX) {
		r = -EINVAL;
		goto out;
	}
	v->R = (size_t)(maxrail < 0 ? 1 : maxrail + 1);
	/* A gpu test checks each node alone: a failing row names its node, as a loopback. */
	v->loopback = (T->pattern && strcmp(T->pattern, "loopback") == 0) ||
		      (T->kind && strcmp(T->kind, "gpu") == 0);
	nslots = in->nnodes * v->R;
	memset(v->tot, 0, nslots * sizeof(*v->tot));
	memset(v->bad, 0, nslots * sizeof(*v->bad));
	memset(v->conf, 0, nslots * sizeof(*v->conf));
	memset(v->clear, 0, nslots * sizeof(*v->clear));
	memset(v->missing, 0, nslots);
	memset(v->bad_rail, 0, nslots);
	for (size_t s = 0; s < nslots; s++)
		v->first_fail[s] = SIZE_MAX;

	thresholds(v, t, ev, stats);
	judge_rows(v, t, ev);
	count_runs(v, t);
	r = count_retests(v, t, &rr, &nrr);
	if (r < 0)
		goto out;
	v->any_fail = false;
	attribute(v, t, ev);
	links(v, t, ev, rr, nrr, failures, &nfail);
	for (size_t i = v->lo[t]; i < v->hi[t]; i++) {
		if (in->rows[i].test == t && in->rows[i].phase == VD_RUN) {
			rows++;
			measured += in->rows[i].state == VD_OK;
		}
	}
	json_decref(rules);
	rules = rules_json(T, ev);
	if (!rules) {
		r = -ENOMEM;
		goto out;
	}
	test_close(v, t, tj, fail_before, rows, measured, nfail, stats, rules, failures);
	stats = rules = failures = NULL;
	r = 0;
out:
	free(ev);
	free(rr);
	json_decref(stats);
	json_decref(rules);
	json_decref(failures);
	return r;
}

/* ---- collective tests -------------------------------------------------------------------- */

/* Name node i bad for test T: why (taken), then the evidence lines note (borrowed) and more
 * (taken); each may be NULL. */
static void coll_bad(struct vd *v, const struct vd_test *T, uint32_t i, char *why, const char *note,
		     char *more, json_t *failures)
{
	v->node_bad[i] = true;
	v->any_fail = true;
	push_str(v->node_reasons[i], fmt("%s: %s", T->name, why ? why : "the job failed"));
	if (note)
		push_str(v->node_reasons[i], fmt("%s", note));
	if (more)
		push_str(v->node_reasons[i], fmt("%s", more));
	finding(v, fmt("%s: node %s is bad: %s%s%s%s%s", T->name, node_name(v, i),
		       why ? why : "the job failed", note ? "; " : "", note ? note : "",
		       more ? "; " : "", more ? more : ""));
	json_array_append_new(failures, json_pack("{s:s, s:s}", "node", v->in->nodes[i].id,
						  "reason", why ? why : "the job failed"));
	free(why);
	free(more);
}

/* A collective is one measurement of the whole job (docs/campaigns.md, "Collectives"). Its rows:
 * the job (VD_RUN) and, when that failed and the campaign has 3 nodes or more, the same job
 * without its launcher, launched by another node (VD_RETEST). A row's a is the node the job's
 * pairwise probe names (VD_ROW_WHOLE: none), b the job's launcher. The verdict names a node only
 * when two reporters agree, or when the launcher is the one the jobs point at:
 * - the job passes: the test passes;
 * - it fails and its retest fails too: the named node when the retest names it as well (or
 *   names none) and it is not the first launcher; otherwise the test fails as a whole;
 * - it fails and the job without its launcher passes: the launcher is named (it named itself,
 *   or its report blamed a node that passes without it: not confirmed);
 * - no retest (2 nodes): the named node on the one report, said so; else as a whole. */
static int eval_collective(struct vd *v, uint32_t t, json_t *tj)
{
	const struct vd_input *in = v->in;
	const struct vd_test *T = &in->tests[t];
	struct rule_eval *ev = calloc(T->nrules ? T->nrules : 1, sizeof(*ev));
	json_t *stats = json_object(), *rules = NULL, *failures = json_array();
	size_t rows = 0, measured = 0, nfail = 0, ri = SIZE_MAX, qi = SIZE_MAX;
	bool fail_before = v->any_fail;
	int r = -ENOMEM;

	if (!ev || !stats || !failures)
		goto out;
	thresholds(v, t, ev, stats);
	judge_rows(v, t, ev);
	v->any_fail = false;
	for (size_t i = v->lo[t]; i < v->hi[t]; i++) {
		const struct vd_row *w = &in->rows[i];

		if (w->test != t || v->fail_code[i] == FC_CANCELLED || v->fail_code[i] == FC_SKIP)
			continue;
		if (w->phase == VD_RUN && ri == SIZE_MAX) {
			ri = i;
			rows++;
			measured += w->state == VD_OK;
		} else if (w->phase == VD_RETEST && qi == SIZE_MAX) {
			qi = i;
		}
	}
	if (ri != SIZE_MAX && (is_fail(v->fail_code[ri]) || v->fail_code[ri] == FC_INVALID)) {
		const struct vd_row *w = &in->rows[ri], *q = qi != SIZE_MAX ? &in->rows[qi] : NULL;
		bool named = !(w->flags & VD_ROW_WHOLE), rerun = q && q->state != VD_INVALID;
		bool q_fail = rerun && is_fail(v->fail_code[qi]);
		bool q_named = rerun && !(q->flags & VD_ROW_WHOLE);
		char *why = is_fail(v->fail_code[ri]) ? row_reason(v, T, ev, ri) : NULL;
		const char *bare = why ? why + strlen(T->name) + 2 : "its report is not evidence";

		if (!rerun && v->fail_code[ri] == FC_INVALID) {
			/* The launcher is named by invalids(); nothing was measured. */
		} else if (!rerun) {
			v->any_fail = true;
			if (named)
				coll_bad(
					v, T, w->a, fmt("%s", bare), w->note,
					fmt("named by the launcher's report alone (no second job)"),
					failures);
			else
				finding(v,
					fmt("%s: fails over the job's nodes, no single node stands "
					    "out: %s%s%s",
					    T->name, bare, w->note ? "; " : "",
					    w->note ? w->note : ""));
		} else if (!q_fail) {
			/* The job without its launcher passed. */
			v->any_fail = true;
			if (named && w->a != w->b)
				coll_bad(
					v, T, w->b,
					fmt("its job failed (%s) and named %s, but the job without "
					    "it, %s included, passed: its report is not confirmed",
					    bare, node_name(v, w->a), node_name(v, w->a)),
					NULL, NULL, failures);
			else if (v->fail_code[ri] != FC_INVALID)
				coll_bad(v, T, w->b,
					 fmt("%s; the job without it passed (launched by %s)", bare,
					     node_name(v, q->b)),
					 w->note, NULL, failures);
		} else if (named && w->a != w->b && (!q_named || q->a == w->a)) {
			/* Both jobs point at the same node. */
			coll_bad(v, T, w->a, fmt("%s", bare), w->note,
				 fmt("confirmed: the job without %s, launched by %s, fails too",
				     node_name(v, w->b), node_name(v, q->b)),
				 failures);
		} else if (q_named && (!named || w->a == w->b)) {
			/* The retest (another launcher, the first left out) names it. */
			coll_bad(v, T, q->a, fmt("%s", bare), q->note,
				 fmt("named by the job without %s, launched by %s",
				     node_name(v, w->b), node_name(v, q->b)),
				 failures);
		} else {
			v->any_fail = true;
			finding(v,
				fmt("%s: fails in the job and in its retest without %s, no single "
				    "node stands out: %s%s%s",
				    T->name, node_name(v, w->b), bare, w->note ? "; " : "",
				    w->note ? w->note : ""));
			json_array_append_new(failures, json_pack("{s:n, s:s}", "node", "reason",
								  why ? why : "the job failed"));
		}
		free(why);
	}
	rules = rules_json(T, ev);
	if (!rules)
		goto out;
	nfail = json_array_size(failures);
	test_close(v, t, tj, fail_before, rows, measured, nfail, stats, rules, failures);
	stats = rules = failures = NULL;
	r = 0;
out:
	free(ev);
	json_decref(stats);
	json_decref(rules);
	json_decref(failures);
	return r;
}

/* ---- congestion tests -------------------------------------------------------------------- */

struct victim {
	uint32_t a, b;
	double raw[4][VD_RAW_N]; /* iso-lat, iso-bw, con-lat, con-bw */
	bool have[4];
	const char *error;
};

static int phase_slot(uint8_t phase)
{
	switch (phase) {
	case VD_ISO_LAT:
		return 0;
	case VD_ISO_BW:
		return 1;
	case VD_CON_LAT:
		return 2;
	case VD_CON_BW:
		return 3;
	default:
		return -1;
	}
}

static int eval_congestion(struct vd *v, uint32_t t, json_t *tj)
{
	static const char *const names[] = VD_CONGESTION_FIELDS;
	const struct vd_input *in = v->in;
	const struct vd_test *T = &in->tests[t];
	struct victim *vs = NULL;
	size_t nv = 0, cap = 0, nfail = 0, cong_failed = 0;
	json_t *stats = json_object(), *rules = json_array(), *failures = json_array();
	size_t *evaluated = calloc(T->nrules + 1, sizeof(size_t));
	size_t *failed = calloc(T->nrules + 1, sizeof(size_t));
	bool fail = false;
	int r = -ENOMEM;

	if (!stats || !rules || !failures || !evaluated || !failed)
		goto out;
	for (size_t i = v->lo[t]; i < v->hi[t]; i++) {
		const struct vd_row *w = &in->rows[i];
		int ps = phase_slot(w->phase);
		size_t k;

		if (w->test != t)
			continue;
		if (w->phase == VD_CONGESTOR) {
			if (w->state == VD_ERROR) {
				cong_failed++;
				if (cong_failed <= 5)
					finding(v,
						fmt("%s: congestor %s -> %s failed "
						    "(%s): the impact "
						    "is understated",
						    T->name, node_name(v, w->a), node_name(v, w->b),
						    w->error ? w->error : "?"));
			}
			continue;
		}
		if (ps < 0)
			continue;
		for (k = 0; k < nv && !(vs[k].a == w->a && vs[k].b == w->b); k++)
			;
		if (k == nv) {
			if (nv == cap) {
				struct victim *x =
					realloc(vs, (cap = cap ? cap * 2 : 16) * sizeof(*vs));

				if (!x)
					goto out;
				vs = x;
			}
			memset(&vs[nv], 0, sizeof(vs[nv]));
			vs[nv].a = w->a;
			vs[nv].b = w->b;
			nv++;
		}
		if (w->state == VD_OK) {
			memcpy(vs[k].raw[ps], w->v, sizeof(vs[k].raw[ps]));
			vs[k].have[ps] = true;
		} else if (w->state == VD_ERROR && !vs[k].error) {
			vs[k].error = w->error ? w->error : "the run failed";
		}
	}
	for (size_t f = 0; f < VD_CONGESTION_NFIELDS; f++) {
		size_t n = 0;
		struct dist d;

		for (size_t k = 0; k < nv; k++) {
			double x[VD_CONGESTION_NFIELDS];
			struct victim *p = &vs[k];

			x[0] = p->raw[2][VD_RAW_MEAN_US] / p->raw[0][VD_RAW_MEAN_US];
			x[1] = p->raw[2][VD_RAW_P99_US] / p->raw[0][VD_RAW_P99_US];
			x[2] = p->raw[1][VD_RAW_GBPS] / p->raw[3][VD_RAW_GBPS];
			x[3] = p->raw[0][VD_RAW_P99_US];
			x[4] = p->raw[2][VD_RAW_P99_US];
			x[5] = p->raw[1][VD_RAW_GBPS];
			x[6] = p->raw[3][VD_RAW_GBPS];
			if ((f <= 1 || f == 3 || f == 4) && !(p->have[0] && p->have[2]))
				continue;
			if ((f == 2 || f >= 5) && !(p->have[1] && p->have[3]))
				continue;
			if (!isfinite(x[f]))
				continue;
			v->buf[n++] = x[f];
			for (size_t q = 0; q < T->nrules; q++) {
				const struct vd_rule *R = &T->rules[q];
				char m[32], th[32];

				if (R->field != f)
					continue;
				evaluated[q]++;
				if (holds(R->op, x[f], R->value))
					continue;
				failed[q]++;
				nfail++;
				fail = true;
				num(m, sizeof(m), x[f]);
				num(th, sizeof(th), R->value);
				if (json_array_size(failures) < VD_FAILURES_LISTED) {
					char *why = fmt("%s: %s %s, not %s %s (victim %s -> %s)",
							T->name, names[f], m, vd_op_name(R->op), th,
							node_name(v, p->a), node_name(v, p->b));

					json_array_append_new(
						failures,
						json_pack("{s:s, s:s, s:n, s:s?, s:s}", "a",
							  in->nodes[p->a].id, "b",
							  in->nodes[p->b].id, "rail", "reason", why,
							  "attributed", "fabric"));
					if (failed[q] <= 5)
						finding(v, fmt("%s", why ? why : ""));
					free(why);
				}
			}
		}
		dist_of(v->buf, n, &d);
		json_object_set_new(stats, names[f], dist_json(&d));
	}
	for (size_t k = 0; k < nv; k++) {
		if (!vs[k].error)
			continue;
		fail = true;
		nfail++;
		finding(v, fmt("%s: victim %s -> %s not measured: %s", T->name,
			       node_name(v, vs[k].a), node_name(v, vs[k].b), vs[k].error));
	}
	for (size_t q = 0; q < T->nrules; q++)
		json_array_append_new(
			rules, json_pack("{s:s, s:s, s:f, s:f, s:I, s:I, s:i}", "metric",
					 T->rules[q].metric, "op", vd_op_name(T->rules[q].op),
					 "value", T->rules[q].value, "threshold", T->rules[q].value,
					 "evaluated", (json_int_t)evaluated[q], "failed",
					 (json_int_t)failed[q], "line", T->rules[q].line));
	if (fail)
		v->any_fail = true;
	json_object_set_new(tj, "victim_pairs", json_integer((json_int_t)nv));
	json_object_set_new(tj, "congestors_failed", json_integer((json_int_t)cong_failed));
	test_done(tj, fail, nfail, stats, rules, failures);
	stats = rules = failures = NULL;
	invalids(v, t, tj);
	r = 0;
out:
	free(vs);
	free(evaluated);
	free(failed);
	json_decref(stats);
	json_decref(rules);
	json_decref(failures);
	return r;
}

/* ---- the whole ------------------------------------------------------------------------------ */

static void vd_done(struct vd *v)
{
	free(v->lo);
	free(v->hi);
	free(v->maxrail);
	free(v->buf);
	free(v->fail_code);
	free(v->tot);
	free(v->bad);
	free(v->conf);
	free(v->clear);
	free(v->missing);
	free(v->bad_rail);
	free(v->first_fail);
	free(v->node_bad);
	free(v->ref);
	free(v->ref_row);
	free(v->dis);
	free(v->seen);
	free(v->inv);
	for (size_t i = 0; v->node_reasons && i < v->in->nnodes; i++)
		json_decref(v->node_reasons[i]);
	for (size_t i = 0; v->node_rails && i < v->in->nnodes; i++)
		json_decref(v->node_rails[i]);
	free(v->node_reasons);
	free(v->node_rails);
	json_decref(v->links);
	json_decref(v->findings);
}

static int vd_init(struct vd *v, const struct vd_input *in)
{
	size_t nslots = (in->nnodes ? in->nnodes : 1) * VD_RAILS_MAX;

	memset(v, 0, sizeof(*v));
	v->in = in;
	v->lo = calloc(in->ntests + 1, sizeof(*v->lo));
	v->hi = calloc(in->ntests + 1, sizeof(*v->hi));
	v->maxrail = malloc((in->ntests + 1) * sizeof(*v->maxrail));
	v->buf = malloc((in->nrows ? in->nrows : 1) * sizeof(*v->buf));
	v->fail_code = malloc((in->nrows ? in->nrows : 1) * sizeof(*v->fail_code));
	v->tot = malloc(nslots * sizeof(*v->tot));
	v->bad = malloc(nslots * sizeof(*v->bad));
	v->conf = malloc(nslots * sizeof(*v->conf));
	v->clear = malloc(nslots * sizeof(*v->clear));
	v->missing = malloc(nslots);
	v->bad_rail = malloc(nslots);
	v->first_fail = malloc(nslots * sizeof(*v->first_fail));
	v->node_bad = calloc(in->nnodes + 1, sizeof(*v->node_bad));
	v->ref = calloc(in->nnodes + 1, sizeof(*v->ref));
	v->ref_row = calloc(in->nnodes + 1, sizeof(*v->ref_row));
	v->dis = calloc(in->nnodes + 1, sizeof(*v->dis));
	v->seen = calloc(in->nnodes + 1, sizeof(*v->seen));
	v->inv = calloc(in->nnodes + 1, sizeof(*v->inv));
	v->node_reasons = calloc(in->nnodes + 1, sizeof(*v->node_reasons));
	v->node_rails = calloc(in->nnodes + 1, sizeof(*v->node_rails));
	v->links = json_array();
	v->findings = json_array();
	if (!v->lo || !v->hi || !v->maxrail || !v->buf || !v->fail_code || !v->tot || !v->bad ||
	    !v->conf || !v->clear || !v->missing || !v->bad_rail || !v->first_fail ||
	    !v->node_bad || !v->node_reasons || !v->node_rails || !v->links || !v->findings ||
	    !v->ref || !v->ref_row || !v->dis || !v->seen || !v->inv)
		return -ENOMEM;
	for (size_t i = 0; i < in->nnodes; i++) {
		v->node_reasons[i] = json_array();
		v->node_rails[i] = json_object();
		if (!v->node_reasons[i] || !v->node_rails[i])
			return -ENOMEM;
	}
	/* Each test's span of rows, so that its passes skip the other tests' rows (a campaign's
	 * rows come test by test: the spans do not overlap). check_input() ran: test < ntests. */
	for (size_t t = 0; t < in->ntests; t++) {
		v->lo[t] = in->nrows;
		v->maxrail[t] = -1;
	}
	for (size_t i = 0; i < in->nrows; i++) {
		const struct vd_row *w = &in->rows[i];

		if (i < v->lo[w->test])
			v->lo[w->test] = i;
		v->hi[w->test] = i + 1;
		if (w->rail > v->maxrail[w->test])
			v->maxrail[w->test] = w->rail;
	}
	return 0;
}

static int check_input(const struct vd_input *in)
{
	if (!in || (in->ntests && !in->tests) || (in->nnodes && !in->nodes) ||
	    (in->nrows && !in->rows))
		return -EINVAL;
	for (size_t t = 0; t < in->ntests; t++) {
		const struct vd_test *T = &in->tests[t];
		bool cong = T->kind && strcmp(T->kind, "congestion") == 0;

		if (!T->name || !T->kind || (T->nrules && !T->rules))
			return -EINVAL;
		for (size_t r = 0; r < T->nrules; r++)
			if (T->rules[r].field >= (cong ? VD_CONGESTION_NFIELDS : T->nfields))
				return -EINVAL;
	}
	for (size_t i = 0; i < in->nrows; i++) {
		const struct vd_row *w = &in->rows[i];

		if (w->test >= in->ntests || w->a >= in->nnodes || w->b >= in->nnodes ||
		    w->rail >= VD_RAILS_MAX || w->phase >= VD_PHASE_COUNT ||
		    w->state > VD_INVALID || (w->state == VD_OK && !w->v) ||
		    (w->state == VD_INVALID && (w->blame < VD_BLAME_A || w->blame > VD_BLAME_BOTH)))
			return -EINVAL;
	}
	return 0;
}

/* One evaluation; excluded (NULL: none) marks the nodes left out of it, whose rows the caller
 * removed. */
static int evaluate(const struct vd_input *in, const bool *excluded, json_t **ret)
{
	struct vd v;
	json_t *doc = NULL, *tests = NULL, *nodes = NULL;
	bool fail = false;
	size_t judged = in->nnodes;
	int r;

	r = vd_init(&v, in);
	tests = json_array();
	nodes = json_array();
	if (r < 0 || !tests || !nodes) {
		r = -ENOMEM;
		goto out;
	}
	if (in->quick)
		finding(&v, fmt("quick run: every test shrunk to a smoke run; the "
				"thresholds are indicative, not a sign-off"));
	if (in->transport && strcmp(in->transport, "tcp") == 0)
		finding(&v, fmt("transport tcp: a baseline over the hosts' TCP stacks, "
				"not RDMA"));
	/* What fails a node before any test: its configuration, its preflight. */
	for (uint32_t i = 0; i < in->nnodes; i++) {
		const json_t *g = in->nodes[i].gate, *x;
		size_t k;

		if (excluded && excluded[i]) {
			judged--;
			continue;
		}
		json_array_foreach(g, k, x)
		{
			if (!json_is_string(x))
				continue;
			v.node_bad[i] = true;
			fail = true;
			push_str(v.node_reasons[i], fmt("%s", json_string_value(x)));
			if (k == 0)
				finding(&v, fmt("node %s is bad: %s%s", node_name(&v, i),
						json_string_value(x),
						json_array_size(g) > 1 ? " (and more)" : ""));
		}
	}
	for (uint32_t t = 0; t < in->ntests; t++) {
		const struct vd_test *T = &in->tests[t];
		json_t *tj = json_pack("{s:s, s:s, s:s?, s:b}", "name", T->name, "kind", T->kind,
				       "pattern", T->pattern, "per_rail", T->per_rail);

		if (!tj) {
			r = -ENOMEM;
			goto out;
		}
		v.any_fail = false;
		r = strcmp(T->kind, "congestion") == 0	 ? eval_congestion(&v, t, tj)
		    : strcmp(T->kind, "collective") == 0 ? eval_collective(&v, t, tj)
							 : eval_pattern(&v, t, tj);
		json_array_append_new(tests, tj);
		if (r < 0)
			goto out;
		fail |= v.any_fail;
	}
	for (uint32_t i = 0; i < in->nnodes; i++) {
		json_t *rails = json_array(), *x;
		const char *key;
		json_t *o;

		json_object_foreach(v.node_rails[i], key, x) json_array_append(rails, x);
		o = json_pack("{s:s, s:s?, s:s, s:O, s:o}", "id", in->nodes[i].id, "hostname",
			      in->nodes[i].hostname, "result",
			      excluded && excluded[i] ? "excluded"
			      : v.node_bad[i]	      ? "fail"
						      : "pass",
			      "reasons", v.node_reasons[i], "rails", rails);
		json_array_append_new(nodes, o);
	}
	if (!fail && !in->cancelled && !v.any_incomplete)
		finding(&v, fmt("every test passed on %zu nodes", judged));
	if (v.nfindings > VD_FINDINGS_LISTED)
		push_str(v.findings, fmt("... and %zu more findings (every node's and link's own "
					 "reasons are complete)",
					 v.nfindings - VD_FINDINGS_LISTED));
	doc = json_pack("{s:s, s:s?, s:b, s:b, s:O, s:O, s:O, s:O, s:I}", "result",
			in->cancelled	   ? "incomplete"
			: fail		   ? "fail"
			: v.any_incomplete ? "incomplete"
					   : "pass",
			"transport", in->transport, "baseline",
			in->transport && strcmp(in->transport, "tcp") == 0, "quick", in->quick,
			"tests", tests, "nodes", nodes, "links", v.links, "findings", v.findings,
			"links_total", (json_int_t)v.nlinks);
	if (!doc) {
		r = -ENOMEM;
		goto out;
	}
	*ret = doc;
	r = 0;
out:
	json_decref(tests);
	json_decref(nodes);
	vd_done(&v);
	return r;
}

/* The verdict's acceptance and exclusions (docs/campaigns.md, "Verdict"): whether a pass could
 * be an acceptance sign-off, and the nodes left out of it. */
static int finish(json_t *doc, const struct vd_input *in, json_t *excluded)
{
	json_t *why = json_is_array(in->not_acceptance) ? json_deep_copy(in->not_acceptance)
							: json_array();

	if (!why || !excluded)
		goto oom;
	if (json_object_set_new(doc, "acceptance", json_boolean(json_array_size(why) == 0)) < 0 ||
	    json_object_set_new(doc, "acceptance_reasons", why) < 0 ||
	    json_object_set_new(doc, "excluded", excluded) < 0)
		return -ENOMEM;
	return 0;
oom:
	json_decref(why);
	json_decref(excluded);
	return -ENOMEM;
}

int vd_evaluate(const struct vd_input *in, json_t **ret)
{
	struct vd_input in2;
	struct vd_row *rows = NULL;
	bool *ex = NULL;
	json_t *doc = NULL, *doc2 = NULL, *excluded = NULL, *o, *nodes;
	size_t nbad = 0, n2 = 0, i;
	int r = check_input(in);

	if (r < 0)
		return r;
	r = evaluate(in, NULL, &doc);
	if (r < 0)
		return r;
	nodes = json_object_get(doc, "nodes");
	json_array_foreach(nodes, i, o) nbad +=
		strcmp(json_string_value(json_object_get(o, "result")), "fail") == 0;
	if (nbad == 0 || nbad > in->max_excluded || in->cancelled) {
		if (nbad > 0 && in->max_excluded > 0 && !in->cancelled) {
			json_array_insert_new(
				json_object_get(doc, "findings"), 0,
				json_string_nocheck("more nodes fail than the playbook may exclude "
						    "(validation.max_excluded): none is excluded"));
		}
		r = finish(doc, in, json_array());
		goto out;
	}
	/* Up to max_excluded failing nodes are excluded by name and reason: the cluster is judged
	 * again without them (their rows do not count, for them or their peers). */
	ex = calloc(in->nnodes + 1, sizeof(*ex));
	rows = calloc(in->nrows + 1, sizeof(*rows));
	excluded = json_array();
	if (!ex || !rows || !excluded) {
		r = -ENOMEM;
		goto out;
	}
	json_array_foreach(nodes, i, o)
	{
		if (strcmp(json_string_value(json_object_get(o, "result")), "fail") != 0)
			continue;
		ex[i] = true;
		json_array_append_new(excluded,
				      json_pack("{s:O, s:O?, s:O}", "id", json_object_get(o, "id"),
						"hostname", json_object_get(o, "hostname"),
						"reasons", json_object_get(o, "reasons")));
	}
	for (i = 0; i < in->nrows; i++)
		if (!ex[in->rows[i].a] && !ex[in->rows[i].b])
			rows[n2++] = in->rows[i];
	in2 = *in;
	in2.rows = rows;
	in2.nrows = n2;
	r = evaluate(&in2, ex, &doc2);
	if (r < 0)
		goto out;
	json_array_foreach(json_object_get(doc2, "nodes"), i, o)
	{
		if (ex[i])
			json_object_set(o, "reasons",
					json_object_get(json_array_get(nodes, i), "reasons"));
	}
	json_array_foreach(excluded, i, o)
	{
		char *line =
			fmt("excluded: node %s (validation.max_excluded %zu): %s",
			    json_string_value(json_object_get(o, "hostname")), in->max_excluded,
			    json_string_value(json_array_get(json_object_get(o, "reasons"), 0)));

		if (line)
			json_array_insert_new(json_object_get(doc2, "findings"), i,
					      json_string_nocheck(line));
		free(line);
	}
	json_decref(doc);
	doc = doc2;
	doc2 = NULL;
	r = finish(doc, in, excluded);
	excluded = NULL;
out:
	if (r < 0) {
		json_decref(doc);
		doc = NULL;
	}
	json_decref(doc2);
	json_decref(excluded);
	free(rows);
	free(ex);
	if (r >= 0)
		*ret = doc;
	return r;
}

int vd_suspects(const struct vd_input *in, uint32_t t, struct vd_suspect **ret_v, size_t *ret_n,
		bool *good)
{
	struct vd v;
	struct rule_eval *ev = NULL;
	struct vd_suspect *sv = NULL;
	size_t n = 0, cap = 0;
	int r = check_input(in);

	if (r < 0)
		return r;
	if (t >= in->ntests || strcmp(in->tests[t].kind, "congestion") == 0)
		return -EINVAL;
	r = vd_init(&v, in);
	ev = calloc(in->tests[t].nrules + 1, sizeof(*ev));
	if (r < 0 || !ev) {
		r = -ENOMEM;
		goto out;
	}
	v.R = 1;
	thresholds(&v, t, ev, NULL);
	judge_rows(&v, t, ev);
	for (size_t i = 0; i < in->nnodes; i++)
		good[i] = false;
	for (size_t i = v.lo[t]; i < v.hi[t]; i++) {
		const struct vd_row *w = &in->rows[i];
		int fc = v.fail_code[i];

		if (w->test != t || w->phase != VD_RUN || fc == FC_SKIP || fc == FC_CANCELLED ||
		    fc == FC_MISSING)
			continue;
		if (fc == FC_NONE) {
			good[w->a] = good[w->b] = true;
			continue;
		}
		if (fc == FC_ERROR && w->error && strncmp(w->error, "offline", 7) == 0)
			continue;
		if (n == cap) {
			struct vd_suspect *x =
				realloc(sv, (cap = cap ? cap * 2 : 32) * sizeof(*sv));

			if (!x) {
				r = -ENOMEM;
				goto out;
			}
			sv = x;
		}
		sv[n++] = (struct vd_suspect){w->a, w->b, w->rail};
	}
	/* A node in any failing row is not good. */
	for (size_t i = v.lo[t]; i < v.hi[t]; i++) {
		const struct vd_row *w = &in->rows[i];

		if (w->test == t && w->phase == VD_RUN && is_fail(v.fail_code[i]))
			good[w->a] = good[w->b] = false;
	}
	*ret_v = sv;
	*ret_n = n;
	sv = NULL;
	r = 0;
out:
	free(sv);
	free(ev);
	vd_done(&v);
	return r;
}
