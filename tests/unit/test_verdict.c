/* Unit tests of controller/campaign/verdict on synthetic campaigns built in code: rules absolute
 * and relative (median, MAD, min) with the thresholds they report, attribution to a node (by
 * majority, by retest against good peers), a rail, a missing rail or a link, transients, run
 * errors, counters, congestion impact factors, explanations from the facts, the flags, bad input
 * and the suspects a retest round is planned from. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "controller/campaign/verdict.h"

#define NODES_MAX  12
#define ROWS_MAX   512
#define FIELDS_MAX 4

/* A campaign under construction: nodes named by one letter (id "id-x", host "gpu-x"), rows whose
 * values live in vals[] (NaN unless set), as vin_build() lays them out. */
struct camp {
	struct vd_node nodes[NODES_MAX];
	char ids[NODES_MAX][16], hosts[NODES_MAX][16];
	json_t *facts[NODES_MAX];
	struct vd_test tests[2];
	struct vd_row rows[ROWS_MAX];
	double vals[ROWS_MAX][FIELDS_MAX];
	struct vd_input in;
};

/* Facts excerpt of a healthy node with nrails rails (400 Gb/s, MTU 4096, PCIe x16 Gen5, rails
 * and GPUs 0..3 on NUMA 0, the rest on 1, GPUDirect via peermem). */
static json_t *healthy_facts(size_t nrails)
{
	json_t *f = json_pack("{s:[], s:[], s:{s:b, s:b}}", "rails", "gpus", "gpudirect", "peermem",
			      1, "dmabuf", 0);

	assert_non_null(f);
	for (size_t k = 0; k < nrails; k++) {
		char dev[16];

		snprintf(dev, sizeof(dev), "mlx5_%zu", k);
		assert_int_equal(
			json_array_append_new(
				json_object_get(f, "rails"),
				json_pack("{s:s, s:i, s:i, s:i, s:i, s:{s:i, s:i, s:s, s:s}}",
					  "device", dev, "port", 1, "rate_gbps", 400, "mtu", 4096,
					  "numa_node", k < 4 ? 0 : 1, "pcie", "width", 16,
					  "max_width", 16, "speed", "32.0 GT/s PCIe", "max_speed",
					  "32.0 GT/s PCIe")),
			0);
		assert_int_equal(
			json_array_append_new(json_object_get(f, "gpus"),
					      json_pack("{s:i}", "numa_node", k < 4 ? 0 : 1)),
			0);
	}
	return f;
}

/* A campaign of strlen(letters) nodes with healthy facts of nrails rails. */
static struct camp *camp_new(const char *letters, size_t nrails)
{
	struct camp *c = calloc(1, sizeof(*c));
	size_t n = strlen(letters);

	assert_non_null(c);
	assert_true(n <= NODES_MAX);
	for (size_t i = 0; i < n; i++) {
		snprintf(c->ids[i], sizeof(c->ids[i]), "id-%c", letters[i]);
		snprintf(c->hosts[i], sizeof(c->hosts[i]), "gpu-%c", letters[i]);
		c->facts[i] = healthy_facts(nrails);
		c->nodes[i] = (struct vd_node){c->ids[i], c->hosts[i], c->facts[i], NULL};
	}
	c->in.tests = c->tests;
	c->in.ntests = 1;
	c->in.nodes = c->nodes;
	c->in.nnodes = n;
	c->in.rows = c->rows;
	c->in.transport = "verbs";
	return c;
}

static void camp_free(struct camp *c)
{
	for (size_t i = 0; c && i < NODES_MAX; i++)
		json_decref(c->facts[i]);
	free(c);
}

/* Append a measured row of phase ph with value x in field 0 (the other fields NaN). */
static struct vd_row *add(struct camp *c, uint32_t t, uint32_t a, uint32_t b, int32_t rail,
			  enum vd_phase ph, double x)
{
	size_t i = c->in.nrows++;

	assert_true(i < ROWS_MAX);
	for (size_t f = 0; f < FIELDS_MAX; f++)
		c->vals[i][f] = NAN;
	c->vals[i][0] = x;
	c->rows[i] = (struct vd_row){.test = t,
				     .a = a,
				     .b = b,
				     .rail = rail,
				     .state = VD_OK,
				     .phase = (uint8_t)ph,
				     .v = c->vals[i]};
	return &c->rows[i];
}

/* Every unordered pair (a < b) of test t on rails 0..nrails-1 (0: rail -1), measured x plus a
 * small spread so that the distribution is not flat. */
static void add_pairs(struct camp *c, uint32_t t, size_t nrails, double x, double spread)
{
	size_t k = 0;

	for (uint32_t a = 0; a < c->in.nnodes; a++)
		for (uint32_t b = a + 1; b < c->in.nnodes; b++)
			for (size_t r = 0; r < (nrails ? nrails : 1); r++, k++)
				add(c, t, a, b, nrails ? (int32_t)r : -1, VD_RUN,
				    x + spread * (double)(k % 4) / 3);
}

/* The VD_RUN row of test t between a and b (either direction) on rail. */
static struct vd_row *row_of(struct camp *c, uint32_t t, uint32_t a, uint32_t b, int32_t rail)
{
	for (size_t i = 0; i < c->in.nrows; i++) {
		struct vd_row *w = &c->rows[i];

		if (w->test == t && w->phase == VD_RUN && w->rail == rail &&
		    ((w->a == a && w->b == b) || (w->a == b && w->b == a)))
			return w;
	}
	fail_msg("no row %u-%u rail %d", a, b, rail);
	return NULL;
}

/* Field f of row w, writable. */
static double *val(struct camp *c, const struct vd_row *w, size_t f)
{
	return &c->vals[w - c->rows][f];
}

static json_t *judge(struct camp *c)
{
	json_t *doc = NULL;

	assert_int_equal(vd_evaluate(&c->in, &doc), 0);
	assert_non_null(doc);
	return doc;
}

/* root at "a/0/b" (array indexes as numbers); NULL when absent. */
static json_t *jget(json_t *root, const char *path)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *seg = strtok_r(buf, "/", &save); seg && root; seg = strtok_r(NULL, "/", &save))
		root = json_is_array(root) ? json_array_get(root, strtoul(seg, NULL, 10))
					   : json_object_get(root, seg);
	return root;
}

static const char *jstr(json_t *root, const char *path)
{
	json_t *x = jget(root, path);

	if (!json_is_string(x))
		fail_msg("%s: not a string", path);
	return json_string_value(x);
}

static double jnum(json_t *root, const char *path)
{
	json_t *x = jget(root, path);

	if (!json_is_number(x))
		fail_msg("%s: not a number", path);
	return json_number_value(x);
}

static size_t jsize(json_t *root, const char *path)
{
	json_t *x = jget(root, path);

	if (!json_is_array(x))
		fail_msg("%s: not an array", path);
	return json_array_size(x);
}

/* Lines of the array at path that contain needle. */
static size_t lines_with(json_t *root, const char *path, const char *needle)
{
	json_t *arr = jget(root, path), *x;
	size_t i, n = 0;

	json_array_foreach(arr, i, x) n +=
		json_is_string(x) && strstr(json_string_value(x), needle);
	return n;
}

#define assert_line(root, path, needle)                                                            \
	do {                                                                                       \
		if (lines_with(root, path, needle) == 0) {                                         \
			char *d_ = json_dumps(jget(root, path), JSON_INDENT(1));                   \
			fprintf(stderr, "%s: %s\n", path, d_ ? d_ : "(none)");                     \
			free(d_);                                                                  \
			fail_msg("%s: no line with \"%s\"", path, needle);                         \
		}                                                                                  \
	} while (0)

#define assert_no_line(root, path, needle)                                                         \
	do {                                                                                       \
		if (lines_with(root, path, needle) != 0)                                           \
			fail_msg("%s: a line with \"%s\"", path, needle);                          \
	} while (0)

#define assert_near(x, y) assert_true(fabs((x) - (y)) < 1e-9)

/* The verdict's entry of node id. */
static json_t *node_of(json_t *doc, const char *id)
{
	json_t *nodes = json_object_get(doc, "nodes"), *o;
	size_t i;

	json_array_foreach(nodes, i, o) if (strcmp(json_string_value(json_object_get(o, "id")),
						   id) == 0) return o;
	fail_msg("no node %s", id);
	return NULL;
}

static void assert_node(json_t *doc, const char *id, const char *result)
{
	json_t *o = node_of(doc, id);

	if (strcmp(jstr(o, "result"), result) != 0) {
		char *d = json_dumps(o, JSON_INDENT(1));

		fprintf(stderr, "%s\n", d ? d : "");
		free(d);
		fail_msg("node %s: %s, expected %s", id, jstr(o, "result"), result);
	}
}

/* A pairs latency test on p99_us: <= 5 us and <= 2.1 x the cluster's minimum. */
static const char *const lat_fields[] = {"p99_us"};
static const struct vd_rule lat_rules[] = {
	{"pair-lat.p99_us", NULL, VD_LE, VD_ABS, 5.0, 0, 10},
	{"pair-lat.p99_us", NULL, VD_LE, VD_MIN, 2.1, 0, 11},
};

static void lat_test(struct camp *c)
{
	c->tests[0] =
		(struct vd_test){"pair-lat", "lat", "pairs", false, lat_fields, 1, lat_rules, 2};
}

/* A per-rail pairs bandwidth test: gbps >= 370 and counters.link_downed == 0. */
static const char *const bw_fields[] = {"gbps", "counters.link_downed"};
static const struct vd_rule bw_rules[] = {
	{"pair-bw.gbps", NULL, VD_GE, VD_ABS, 370, 0, 20},
	{"pair-bw.counters.link_downed", NULL, VD_EQ, VD_ABS, 0, 1, 21},
};

static void bw_test(struct camp *c, bool per_rail)
{
	c->tests[0] =
		(struct vd_test){"pair-bw", "bw", "pairs", per_rail, bw_fields, 2, bw_rules, 2};
}

/* ---- tests --------------------------------------------------------------------------------- */

static void test_names(void **state)
{
	enum vd_op op = VD_NE;
	enum vd_rel rel = VD_MAX;
	enum vd_phase ph = VD_RUN;
	static const char *const phases[] = {"run",	    "retest",	     "isolated-lat",
					     "isolated-bw", "congested-lat", "congested-bw",
					     "congestor"};

	(void)state;
	assert_int_equal(vd_op_parse("<=", &op), 0);
	assert_int_equal(op, VD_LE);
	assert_string_equal(vd_op_name(VD_NE), "!=");
	assert_int_equal(vd_op_parse("=<", &op), -EINVAL);
	assert_int_equal(op, VD_LE);
	assert_int_equal(vd_rel_parse(NULL, &rel), 0);
	assert_int_equal(rel, VD_ABS);
	assert_int_equal(vd_rel_parse("mad", &rel), 0);
	assert_int_equal(rel, VD_MAD);
	assert_int_equal(vd_rel_parse("mean", &rel), -EINVAL);
	for (int i = 0; i < VD_PHASE_COUNT; i++) {
		assert_string_equal(vd_phase_name((enum vd_phase)i), phases[i]);
		assert_int_equal(vd_phase_parse(phases[i], &ph), 0);
		assert_int_equal(ph, i);
	}
	assert_int_equal(vd_phase_parse("Run", &ph), -EINVAL);
	assert_int_equal(vd_phase_parse(NULL, &ph), -EINVAL);
}

static void test_all_pass(void **state)
{
	struct camp *c = camp_new("abcd", 0);
	json_t *doc;

	(void)state;
	lat_test(c);
	add_pairs(c, 0, 0, 1.1, 0.3); /* 1.1 .. 1.4 */
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "pass");
	assert_string_equal(jstr(doc, "transport"), "verbs");
	assert_false(json_is_true(jget(doc, "baseline")));
	assert_string_equal(jstr(doc, "tests/0/result"), "pass");
	assert_int_equal(jnum(doc, "tests/0/rows"), 6);
	assert_int_equal(jnum(doc, "tests/0/measured"), 6);
	assert_int_equal(jnum(doc, "tests/0/failed"), 0);
	assert_int_equal(jsize(doc, "tests/0/failures"), 0);
	assert_int_equal(jnum(doc, "tests/0/rules/0/evaluated"), 6);
	assert_int_equal(jnum(doc, "tests/0/rules/1/evaluated"), 6);
	assert_int_equal(jnum(doc, "tests/0/rules/1/failed"), 0);
	assert_near(jnum(doc, "tests/0/rules/0/threshold"), 5.0);
	assert_near(jnum(doc, "tests/0/rules/1/threshold"), 2.1 * 1.1);
	assert_string_equal(jstr(doc, "tests/0/rules/1/relative"), "min");
	assert_int_equal(jnum(doc, "tests/0/stats/p99_us/n"), 6);
	assert_near(jnum(doc, "tests/0/stats/p99_us/min"), 1.1);
	assert_near(jnum(doc, "tests/0/stats/p99_us/max"), 1.4);
	for (size_t i = 0; i < 4; i++) {
		json_t *o = json_array_get(json_object_get(doc, "nodes"), i);

		assert_string_equal(jstr(o, "result"), "pass");
		assert_int_equal(jsize(o, "reasons"), 0);
		assert_int_equal(jsize(o, "rails"), 0);
	}
	assert_int_equal(jsize(doc, "nodes"), 4);
	assert_string_equal(jstr(doc, "nodes/2/hostname"), "gpu-c");
	assert_int_equal(jsize(doc, "links"), 0);
	assert_int_equal(jnum(doc, "links_total"), 0);
	assert_line(doc, "findings", "every test passed on 4 nodes");
	json_decref(doc);
	camp_free(c);
}

static void test_bad_node_majority(void **state)
{
	struct camp *c = camp_new("abs", 0);
	json_t *doc;

	(void)state;
	lat_test(c);
	add(c, 0, 0, 1, -1, VD_RUN, 1.2);
	add(c, 0, 0, 2, -1, VD_RUN, 9.0);
	add(c, 0, 2, 1, -1, VD_RUN, 9.5);
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "fail");
	assert_string_equal(jstr(doc, "tests/0/result"), "fail");
	assert_node(doc, "id-s", "fail");
	assert_node(doc, "id-a", "pass");
	assert_node(doc, "id-b", "pass");
	assert_line(node_of(doc, "id-s"), "reasons", "pair-lat: fails with 2 of 2 peers");
	/* The evidence quotes the first failing rule: the absolute one. */
	assert_line(node_of(doc, "id-s"), "reasons", "p99_us 9.0, not <= 5.0");
	assert_int_equal(jsize(node_of(doc, "id-s"), "rails"), 0);
	assert_line(doc, "findings", "pair-lat: node gpu-s is bad: fails with 2 of 2 peers");
	assert_no_line(doc, "findings", "gpu-a is bad");
	assert_no_line(doc, "findings", "every test passed");
	assert_int_equal(jsize(doc, "links"), 0);
	assert_int_equal(jnum(doc, "tests/0/failed"), 2);
	assert_int_equal(jsize(doc, "tests/0/failures"), 2);
	assert_string_equal(jstr(doc, "tests/0/failures/0/attributed"), "node");
	assert_string_equal(jstr(doc, "tests/0/failures/1/attributed"), "node");
	assert_true(json_is_null(jget(doc, "tests/0/failures/0/rail")));
	/* The absolute rule fails both rows. The relative one's minimum is not the one pair a-b
	 * (1.2, reported by gpu-a alone) but the second lowest of the reporting nodes' own
	 * minimums: gpu-s's 9.5; it fails nothing. */
	assert_int_equal(jnum(doc, "tests/0/rules/0/failed"), 2);
	assert_int_equal(jnum(doc, "tests/0/rules/1/failed"), 0);
	assert_near(jnum(doc, "tests/0/rules/1/threshold"), 2.1 * 9.5);
	assert_string_equal(jstr(doc, "tests/0/rules/1/threshold_text"),
			    "19.9 (2.1 x min 9.5, gpu-s -> gpu-b, the second lowest of 2 reporting "
			    "nodes' own min)");
	json_decref(doc);
	camp_free(c);
}

/* A node that reports a plausible but low latency in every run it measures cannot set the
 * threshold that judges everyone else: the minimum is the second lowest of the reporting nodes'
 * own minimums. */
static void test_robust_min_liar(void **state)
{
	static const struct vd_rule rules[] = {
		{"pair-lat.p99_us", NULL, VD_LE, VD_MIN, 2.0, 0, 11},
	};
	struct camp *c = camp_new("abcl", 0);
	json_t *doc;

	(void)state;
	c->tests[0] = (struct vd_test){"pair-lat", "lat", "pairs", false, lat_fields, 1, rules, 1};
	add(c, 0, 0, 1, -1, VD_RUN, 8.0);
	add(c, 0, 1, 2, -1, VD_RUN, 8.2);
	add(c, 0, 2, 0, -1, VD_RUN, 7.9);
	add(c, 0, 3, 0, -1, VD_RUN, 1.1); /* gpu-l measures each of its runs, and lies */
	add(c, 0, 3, 1, -1, VD_RUN, 1.2);
	add(c, 0, 3, 2, -1, VD_RUN, 1.1);
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "pass");
	for (const char *id = "abcl"; *id; id++) {
		char nid[8];

		snprintf(nid, sizeof(nid), "id-%c", *id);
		assert_node(doc, nid, "pass");
	}
	/* Reporting minimums: a 8.0, b 8.2, c 7.9, l 1.1: the second lowest is c's 7.9. */
	assert_near(jnum(doc, "tests/0/rules/0/threshold"), 2.0 * 7.9);
	assert_string_equal(jstr(doc, "tests/0/rules/0/threshold_text"),
			    "15.8 (2.0 x min 7.9, gpu-c -> gpu-a, the second lowest of 4 reporting "
			    "nodes' own min)");
	/* The raw minimum is still in the stats. */
	assert_near(jnum(doc, "tests/0/stats/p99_us/min"), 1.1);
	json_decref(doc);
	camp_free(c);
}

/* Rows whose reports are not evidence: never in a statistic, the test and the verdict
 * incomplete (not pass), the reporting node named. */
static void test_invalid_rows(void **state)
{
	struct camp *c = camp_new("abcd", 0);
	struct vd_row *w;
	json_t *doc;

	(void)state;
	lat_test(c);
	add_pairs(c, 0, 0, 2.0, 0.3);
	w = row_of(c, 0, 0, 3, -1);
	w->state = VD_INVALID;
	w->blame = VD_BLAME_B;
	w->error = "invalid result from gpu-d (server side): p50_us -5 is negative";
	c->vals[w - c->rows][0] = -5;
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "incomplete");
	assert_string_equal(jstr(doc, "tests/0/result"), "incomplete");
	assert_int_equal(jnum(doc, "tests/0/invalid"), 1);
	assert_string_equal(jstr(doc, "tests/0/invalid_rows/0/node"), "id-d");
	assert_int_equal(jnum(doc, "tests/0/measured"), 5);
	assert_int_equal(jnum(doc, "tests/0/stats/p99_us/n"), 5);
	assert_true(jnum(doc, "tests/0/stats/p99_us/min") >= 2.0);
	assert_node(doc, "id-d", "fail");
	assert_node(doc, "id-a", "pass");
	assert_line(node_of(doc, "id-d"), "reasons", "p50_us -5 is negative");
	assert_line(doc, "findings", "node gpu-d reported results that are not evidence");
	assert_no_line(doc, "findings", "every test passed");
	json_decref(doc);
	camp_free(c);
}

/* Two reports of a run that differ: a node in dispute with most of its peers is the one that
 * rewrote them; a single dispute names neither. */
static void test_invalid_dispute(void **state)
{
	struct camp *c = camp_new("abcd", 0);
	json_t *doc;

	(void)state;
	lat_test(c);
	add_pairs(c, 0, 0, 2.0, 0.3);
	for (uint32_t p = 0; p < 3; p++) {
		struct vd_row *w = row_of(c, 0, p, 3, -1);

		w->state = VD_INVALID;
		w->blame = VD_BLAME_BOTH;
		w->error =
			"invalid result: the client's and the server's reports of the run differ";
	}
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "incomplete");
	assert_node(doc, "id-d", "fail");
	for (const char *id = "abc"; *id; id++) {
		char nid[8];

		snprintf(nid, sizeof(nid), "id-%c", *id);
		assert_node(doc, nid, "pass");
	}
	assert_string_equal(jstr(doc, "tests/0/invalid_rows/0/node"), "id-d");
	json_decref(doc);

	/* One dispute between a and b: neither is judged, the finding names both. */
	for (uint32_t p = 0; p < 3; p++)
		row_of(c, 0, p, 3, -1)->state = VD_OK;
	row_of(c, 0, 0, 1, -1)->state = VD_INVALID;
	row_of(c, 0, 0, 1, -1)->blame = VD_BLAME_BOTH;
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "incomplete");
	assert_node(doc, "id-a", "pass");
	assert_node(doc, "id-b", "pass");
	assert_true(json_is_null(jget(doc, "tests/0/invalid_rows/0/node")) ||
		    !jget(doc, "tests/0/invalid_rows/0/node"));
	assert_line(doc, "findings", "gpu-a and gpu-b report their run differently");
	json_decref(doc);
	camp_free(c);
}

/* A measured row without the metric a rule names fails that rule (it is not "not evaluated");
 * a counter the device does not expose is not evaluated. */
static void test_missing_metric_fails(void **state)
{
	struct camp *c = camp_new("abc", 0);
	json_t *doc;

	(void)state;
	bw_test(c, false);
	add_pairs(c, 0, 0, 390, 2);
	for (size_t i = 0; i < c->in.nrows; i++)
		c->vals[i][1] = NAN; /* link_downed not exposed */
	c->vals[1][0] = NAN;	     /* a result with no gbps */
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "fail");
	assert_int_equal(jnum(doc, "tests/0/rules/0/evaluated"), 3);
	assert_int_equal(jnum(doc, "tests/0/rules/0/failed"), 1);
	assert_int_equal(jnum(doc, "tests/0/rules/1/evaluated"), 0);
	assert_line(doc, "links/0/reasons", "gbps missing from a measured result");
	json_decref(doc);
	camp_free(c);
}

/* A node whose configuration or preflight fails is bad before any test; up to max_excluded
 * such nodes are excluded by name and the rest judged without them. */
static void test_gate_and_exclusion(void **state)
{
	struct camp *c = camp_new("abcd", 0);
	json_t *gate = json_pack("[s, s]",
				 "configuration: h200-ndr-ib 1.0 (deployment d-1) did not succeed "
				 "on this node: failed: hca ports active at ndr",
				 "preflight: mlx5_3 port 1 is DOWN (phys_state Polling)");
	json_t *gate2 = json_pack("[s]", "preflight: 4 GPUs, the playbook expects 8");
	json_t *doc;

	(void)state;
	lat_test(c);
	add_pairs(c, 0, 0, 2.0, 0.3);
	c->nodes[3].gate = gate;
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "fail");
	assert_node(doc, "id-d", "fail");
	assert_node(doc, "id-a", "pass");
	assert_line(node_of(doc, "id-d"), "reasons", "mlx5_3 port 1 is DOWN");
	assert_line(doc, "findings", "node gpu-d is bad: configuration: h200-ndr-ib 1.0");
	assert_int_equal(jsize(doc, "excluded"), 0);
	assert_true(json_is_true(jget(doc, "acceptance")));
	json_decref(doc);

	/* The playbook allows one: the verdict passes with gpu-d excluded, its rows not counted. */
	c->in.max_excluded = 1;
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "pass");
	assert_int_equal(jsize(doc, "excluded"), 1);
	assert_string_equal(jstr(doc, "excluded/0/hostname"), "gpu-d");
	assert_line(doc, "excluded/0/reasons", "did not succeed on this node");
	assert_node(doc, "id-d", "excluded");
	assert_line(node_of(doc, "id-d"), "reasons", "mlx5_3 port 1 is DOWN");
	assert_int_equal(jnum(doc, "tests/0/measured"), 3);
	assert_line(doc, "findings", "excluded: node gpu-d (validation.max_excluded 1)");
	assert_line(doc, "findings", "every test passed on 3 nodes");
	json_decref(doc);

	/* Two failing nodes with room for one: none is excluded. */
	c->nodes[2].gate = gate2;
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "fail");
	assert_int_equal(jsize(doc, "excluded"), 0);
	assert_node(doc, "id-c", "fail");
	assert_node(doc, "id-d", "fail");
	assert_line(doc, "findings", "more nodes fail than the playbook may exclude");
	json_decref(doc);
	json_decref(gate);
	json_decref(gate2);
	camp_free(c);
}

/* A liar excluded: its invalid rows no longer make the verdict incomplete. */
static void test_exclusion_of_liar(void **state)
{
	struct camp *c = camp_new("abcd", 0);
	struct vd_row *w;
	json_t *doc;

	(void)state;
	lat_test(c);
	add_pairs(c, 0, 0, 2.0, 0.3);
	w = row_of(c, 0, 0, 3, -1);
	w->state = VD_INVALID;
	w->blame = VD_BLAME_B;
	w->error = "invalid result from gpu-d (server side): p50_us -5 is negative";
	c->in.max_excluded = 1;
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "pass");
	assert_string_equal(jstr(doc, "excluded/0/hostname"), "gpu-d");
	assert_line(doc, "excluded/0/reasons", "not evidence");
	json_decref(doc);
	camp_free(c);
}

/* Why a report is not an acceptance sign-off comes from the campaign; the verdict carries it. */
static void test_acceptance(void **state)
{
	struct camp *c = camp_new("ab", 0);
	json_t *why =
		json_pack("[s, s]", "quick: a smoke run (every test shrunk)",
			  "transport tcp: a baseline over the hosts' TCP stacks, not the RDMA "
			  "fabric");
	json_t *doc;

	(void)state;
	lat_test(c);
	add_pairs(c, 0, 0, 2.0, 0.3);
	doc = judge(c);
	assert_true(json_is_true(jget(doc, "acceptance")));
	assert_int_equal(jsize(doc, "acceptance_reasons"), 0);
	json_decref(doc);
	c->in.not_acceptance = why;
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "pass");
	assert_true(json_is_false(jget(doc, "acceptance")));
	assert_line(doc, "acceptance_reasons", "quick: a smoke run");
	assert_line(doc, "acceptance_reasons", "transport tcp");
	json_decref(doc);
	json_decref(why);
	camp_free(c);
}

static void test_link(void **state)
{
	struct camp *c = camp_new("abcd", 1);
	json_t *doc;

	(void)state;
	lat_test(c);
	add_pairs(c, 0, 0, 1.1, 0.3);
	*val(c, row_of(c, 0, 0, 1, -1), 0) = 20.0;
	/* Unequal MTUs at the ends are the likely cause. */
	json_object_set_new(json_array_get(json_object_get(c->facts[1], "rails"), 0), "mtu",
			    json_integer(1024));
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "fail");
	assert_string_equal(jstr(doc, "tests/0/result"), "fail");
	for (const char *id = "abcd"; *id; id++) {
		char s[8];

		snprintf(s, sizeof(s), "id-%c", *id);
		assert_node(doc, s, "pass");
	}
	assert_int_equal(jsize(doc, "links"), 1);
	assert_int_equal(jnum(doc, "links_total"), 1);
	assert_string_equal(jstr(doc, "links/0/a"), "id-a");
	assert_string_equal(jstr(doc, "links/0/b"), "id-b");
	assert_string_equal(jstr(doc, "links/0/a_host"), "gpu-a");
	assert_string_equal(jstr(doc, "links/0/test"), "pair-lat");
	assert_true(json_is_null(jget(doc, "links/0/rail")));
	assert_line(doc, "links/0/reasons", "p99_us 20.0, not <= 5.0");
	assert_line(doc, "links/0/reasons", "MTU mismatch: 4096 on gpu-a, 1024 on gpu-b");
	assert_line(doc, "findings", "link gpu-a <-> gpu-b is suspect");
	assert_no_line(doc, "findings", "is bad");
	assert_string_equal(jstr(doc, "tests/0/failures/0/attributed"), "link");
	json_decref(doc);
	camp_free(c);
}

/* The majority is strict: failing with half of the peers is not enough; with more it is. */
static void test_majority_boundary(void **state)
{
	struct camp *c = camp_new("abcde", 0);
	json_t *doc;

	(void)state;
	lat_test(c);
	add_pairs(c, 0, 0, 1.1, 0.3);
	*val(c, row_of(c, 0, 0, 1, -1), 0) = 9.0;
	*val(c, row_of(c, 0, 0, 2, -1), 0) = 9.0;
	doc = judge(c);
	assert_node(doc, "id-a", "pass");
	assert_int_equal(jsize(doc, "links"), 2);
	json_decref(doc);
	*val(c, row_of(c, 0, 0, 3, -1), 0) = 9.0;
	doc = judge(c);
	assert_node(doc, "id-a", "fail");
	assert_line(node_of(doc, "id-a"), "reasons", "fails with 3 of 4 peers");
	assert_int_equal(jsize(doc, "links"), 0);
	for (const char *id = "bcde"; *id; id++) {
		char s[8];

		snprintf(s, sizeof(s), "id-%c", *id);
		assert_node(doc, s, "pass");
	}
	json_decref(doc);
	camp_free(c);
}

static void test_two_nodes(void **state)
{
	struct camp *c = camp_new("ab", 0);
	json_t *doc;

	(void)state;
	lat_test(c);
	add(c, 0, 0, 1, -1, VD_RUN, 30.0);
	doc = judge(c);
	/* One pair cannot tell a node from its link. */
	assert_string_equal(jstr(doc, "result"), "fail");
	assert_node(doc, "id-a", "pass");
	assert_node(doc, "id-b", "pass");
	assert_int_equal(jsize(doc, "links"), 1);
	assert_no_line(doc, "findings", "is bad");
	assert_line(doc, "findings", "link gpu-a <-> gpu-b");
	json_decref(doc);
	camp_free(c);
}

/* A loopback has no peer to outvote: one failing loopback names its node's rail. */
static void test_loopback(void **state)
{
	static const char *const fields[] = {"gbps"};
	static const struct vd_rule rules[] = {
		{"loopback-bw.gbps", NULL, VD_GE, VD_ABS, 370, 0, 5},
	};
	struct camp *c = camp_new("abc", 2);
	json_t *doc;

	(void)state;
	c->tests[0] = (struct vd_test){"loopback-bw", "bw", "loopback", true, fields, 1, rules, 1};
	for (uint32_t n = 0; n < 3; n++)
		for (int32_t r = 0; r < 2; r++)
			add(c, 0, n, n, r, VD_RUN, n == 2 && r == 1 ? 120.0 : 390.0);
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "fail");
	assert_node(doc, "id-a", "pass");
	assert_node(doc, "id-b", "pass");
	assert_node(doc, "id-c", "fail");
	assert_int_equal(jsize(doc, "links"), 0);
	assert_line(doc, "findings", "rail gpu-c rail 1");
	json_decref(doc);
	camp_free(c);
}

static void test_per_rail(void **state)
{
	struct camp *c = camp_new("abc", 4);
	json_t *doc, *rail;

	(void)state;
	bw_test(c, true);
	add_pairs(c, 0, 4, 385, 7);
	*val(c, row_of(c, 0, 0, 2, 2), 0) = 110;
	*val(c, row_of(c, 0, 1, 2, 2), 0) = 95;
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "fail");
	assert_node(doc, "id-c", "fail");
	assert_node(doc, "id-a", "pass");
	assert_node(doc, "id-b", "pass");
	assert_int_equal(jsize(node_of(doc, "id-c"), "reasons"), 0);
	assert_int_equal(jsize(node_of(doc, "id-c"), "rails"), 1);
	assert_int_equal(jsize(node_of(doc, "id-a"), "rails"), 0);
	rail = jget(node_of(doc, "id-c"), "rails/0");
	assert_int_equal(jnum(rail, "rail"), 2);
	assert_string_equal(jstr(rail, "device"), "mlx5_2");
	assert_string_equal(jstr(rail, "result"), "fail");
	assert_line(rail, "reasons", "pair-bw: fails with 2 of 2 peers");
	assert_line(doc, "findings", "pair-bw: rail gpu-c rail 2 (mlx5_2) is bad");
	assert_int_equal(jsize(doc, "links"), 0);
	assert_int_equal(jnum(doc, "tests/0/failures/0/rail"), 2);
	json_decref(doc);

	/* Every rail of c bad: the node itself. */
	for (int32_t k = 0; k < 4; k++) {
		*val(c, row_of(c, 0, 0, 2, k), 0) = 100;
		*val(c, row_of(c, 0, 1, 2, k), 0) = 100;
	}
	doc = judge(c);
	assert_node(doc, "id-c", "fail");
	assert_line(node_of(doc, "id-c"), "reasons", "pair-bw: every rail fails (4 of 4)");
	assert_line(node_of(doc, "id-c"), "reasons", "fails with 2 of 2 peers");
	assert_int_equal(jsize(node_of(doc, "id-c"), "rails"), 0);
	assert_line(doc, "findings", "pair-bw: node gpu-c is bad");
	assert_node(doc, "id-a", "pass");
	assert_int_equal(jsize(doc, "links"), 0);
	assert_int_equal(jnum(doc, "tests/0/failed"), 8);
	json_decref(doc);
	camp_free(c);
}

static void test_missing_rail(void **state)
{
	struct camp *c = camp_new("abc", 4);
	json_t *doc, *rail;
	struct vd_row *w;

	(void)state;
	bw_test(c, true);
	add_pairs(c, 0, 4, 385, 7);
	/* c has three rails: its rail-3 slots are scheduled, marked missing on its side, not run.
	 */
	w = row_of(c, 0, 0, 2, 3);
	w->state = VD_MISSING;
	w->missing = w->a == 2 ? 1 : 2;
	w = row_of(c, 0, 1, 2, 3);
	w->state = VD_MISSING;
	w->missing = w->a == 2 ? 1 : 2;
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "fail");
	assert_node(doc, "id-c", "fail");
	assert_node(doc, "id-a", "pass");
	assert_node(doc, "id-b", "pass");
	rail = jget(node_of(doc, "id-c"), "rails/0");
	assert_non_null(rail);
	assert_int_equal(jnum(rail, "rail"), 3);
	assert_line(rail, "reasons", "rail 3 missing");
	assert_line(doc, "findings", "rail 3 missing on gpu-c");
	assert_int_equal(jsize(doc, "links"), 0);
	assert_int_equal(jnum(doc, "tests/0/rows"), 12);
	assert_int_equal(jnum(doc, "tests/0/measured"), 10);
	assert_int_equal(jnum(doc, "tests/0/rules/0/evaluated"), 10);
	json_decref(doc);
	camp_free(c);
}

static void test_run_errors(void **state)
{
	struct camp *c = camp_new("abcx", 0);
	json_t *doc;

	(void)state;
	lat_test(c);
	add_pairs(c, 0, 0, 1.1, 0.3);
	for (uint32_t i = 0; i < 3; i++) {
		struct vd_row *w = row_of(c, 0, i, 3, -1);

		w->state = VD_ERROR;
		w->v = NULL;
		w->error = "offline: gpu-x is not connected";
	}
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "fail");
	assert_node(doc, "id-x", "fail");
	assert_line(node_of(doc, "id-x"), "reasons", "fails with 3 of 3 peers");
	assert_line(node_of(doc, "id-x"), "reasons", "offline: gpu-x is not connected");
	for (const char *id = "abc"; *id; id++) {
		char s[8];

		snprintf(s, sizeof(s), "id-%c", *id);
		assert_node(doc, s, "pass");
	}
	assert_int_equal(jsize(doc, "links"), 0);
	assert_int_equal(jnum(doc, "tests/0/rows"), 6);
	assert_int_equal(jnum(doc, "tests/0/measured"), 3);
	assert_int_equal(jnum(doc, "tests/0/rules/0/evaluated"), 3);
	assert_int_equal(jnum(doc, "tests/0/failed"), 3);
	json_decref(doc);
	camp_free(c);
}

/* The pair a-b fails once in the run; its re-run and both ends against good peers pass. */
static void test_transient(void **state)
{
	struct camp *c = camp_new("abgh", 0);
	json_t *doc;

	(void)state;
	lat_test(c);
	add_pairs(c, 0, 0, 1.1, 0.3);
	*val(c, row_of(c, 0, 0, 1, -1), 0) = 25.0;
	add(c, 0, 1, 0, -1, VD_RETEST, 1.2); /* the pair itself, reversed */
	add(c, 0, 0, 2, -1, VD_RETEST, 1.3);
	add(c, 0, 1, 3, -1, VD_RETEST, 1.2);
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "pass");
	assert_string_equal(jstr(doc, "tests/0/result"), "pass");
	assert_line(doc, "findings",
		    "gpu-a <-> gpu-b failed once and passed on retest (transient)");
	assert_int_equal(jsize(doc, "links"), 0);
	assert_node(doc, "id-a", "pass");
	assert_node(doc, "id-b", "pass");
	assert_string_equal(jstr(doc, "tests/0/failures/0/attributed"), "transient");
	/* Retest rows are judged but not counted as the test's rows. */
	assert_int_equal(jnum(doc, "tests/0/rows"), 6);
	assert_int_equal(jnum(doc, "tests/0/rules/0/evaluated"), 6);
	json_decref(doc);

	/* The same pair fails its re-run: the link, now with the retest as evidence. */
	*val(c, &c->rows[6], 0) = 24.0;
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "fail");
	assert_int_equal(jsize(doc, "links"), 1);
	assert_line(doc, "links/0/reasons", "failed again on retest");
	assert_no_line(doc, "findings", "transient");
	assert_node(doc, "id-a", "pass");
	assert_node(doc, "id-b", "pass");
	json_decref(doc);
	camp_free(c);
}

/* a fails with one peer of three only (no majority), but also against a good peer on retest. */
static void test_retest_confirms(void **state)
{
	struct camp *c = camp_new("abgh", 0);
	json_t *doc;

	(void)state;
	lat_test(c);
	add_pairs(c, 0, 0, 1.1, 0.3);
	*val(c, row_of(c, 0, 0, 1, -1), 0) = 25.0;
	doc = judge(c);
	assert_node(doc, "id-a", "pass");
	assert_int_equal(jsize(doc, "links"), 1);
	json_decref(doc);

	add(c, 0, 0, 1, -1, VD_RETEST, 26.0);
	add(c, 0, 0, 2, -1, VD_RETEST, 27.0);
	add(c, 0, 3, 1, -1, VD_RETEST, 1.2);
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "fail");
	assert_node(doc, "id-a", "fail");
	assert_node(doc, "id-b", "pass");
	assert_node(doc, "id-g", "pass");
	assert_line(node_of(doc, "id-a"), "reasons",
		    "fails with 1 of 3 peers, and against good peers on retest");
	assert_line(doc, "findings",
		    "node gpu-a is bad: fails with 1 of 3 peers (confirmed on "
		    "retest)");
	assert_int_equal(jsize(doc, "links"), 0);
	assert_string_equal(jstr(doc, "tests/0/failures/0/attributed"), "node");
	json_decref(doc);

	/* Cleared by another good peer: no longer confirmed. */
	add(c, 0, 0, 3, -1, VD_RETEST, 1.2);
	doc = judge(c);
	assert_node(doc, "id-a", "pass");
	assert_int_equal(jsize(doc, "links"), 1);
	json_decref(doc);
	camp_free(c);
}

static void test_relative_median_mad(void **state)
{
	static const char *const fields[] = {"gbps"};
	static const struct vd_rule rules[] = {
		{"pair-bw.gbps", NULL, VD_GE, VD_MEDIAN, 0.93, 0, 1},
		{"pair-bw.gbps", "below the pack", VD_GE, VD_MAD, 3, 0, 2},
	};
	static const double gbps[] = {390, 388, 392, 389, 391, 200};
	struct camp *c = camp_new("abcd", 0);
	json_t *doc;
	size_t k = 0;

	(void)state;
	c->tests[0] = (struct vd_test){"pair-bw", "bw", "pairs", false, fields, 1, rules, 2};
	add_pairs(c, 0, 0, 0, 0);
	for (size_t i = 0; i < c->in.nrows; i++)
		c->vals[i][0] = gbps[k++];
	/* median 389.5; deviations 0.5 0.5 1.5 1.5 2.5 189.5: MAD 1.5 */
	doc = judge(c);
	assert_near(jnum(doc, "tests/0/stats/gbps/median"), 389.5);
	assert_near(jnum(doc, "tests/0/stats/gbps/mad"), 1.5);
	assert_near(jnum(doc, "tests/0/stats/gbps/min"), 200);
	assert_near(jnum(doc, "tests/0/stats/gbps/max"), 392);
	assert_near(jnum(doc, "tests/0/rules/0/threshold"), 0.93 * 389.5);
	assert_near(jnum(doc, "tests/0/rules/1/threshold"), 389.5 - 3 * 1.4826 * 1.5);
	assert_string_equal(jstr(doc, "tests/0/rules/1/relative"), "mad");
	assert_string_equal(jstr(doc, "tests/0/rules/1/threshold_text"),
			    "382.8 (median 389.5 - 3.0 x MAD, of 6 rows)");
	assert_int_equal(jnum(doc, "tests/0/rules/0/failed"), 1);
	assert_int_equal(jnum(doc, "tests/0/rules/1/failed"), 1);
	/* c-d measured 200: a link; the reason quotes the median rule first. */
	assert_int_equal(jsize(doc, "links"), 1);
	assert_string_equal(jstr(doc, "links/0/a"), "id-c");
	assert_line(doc, "links/0/reasons",
		    "gbps 200.0, not >= 362.2 (0.93 x median 389.5, of 6 rows)");
	json_decref(doc);

	/* 375 passes the median rule but not the MAD rule: its message is quoted. */
	c->vals[5][0] = 375;
	doc = judge(c);
	assert_int_equal(jnum(doc, "tests/0/rules/0/failed"), 0);
	assert_int_equal(jnum(doc, "tests/0/rules/1/failed"), 1);
	assert_line(doc, "links/0/reasons",
		    "(median 389.5 - 3.0 x MAD, of 6 rows) (below the pack)");
	json_decref(doc);
	camp_free(c);
}

/* The same for <=: median + k x 1.4826 x MAD. */
static void test_mad_upper(void **state)
{
	static const char *const fields[] = {"p99_us"};
	static const struct vd_rule rules[] = {
		{"pair-lat.p99_us", NULL, VD_LE, VD_MAD, 4, 0, 1},
	};
	static const double p99[] = {1.0, 1.2, 1.1, 1.3, 5.0, 1.2}; /* median 1.2, MAD 0.1 */
	struct camp *c = camp_new("abcd", 0);
	json_t *doc;

	(void)state;
	c->tests[0] = (struct vd_test){"pair-lat", "lat", "pairs", false, fields, 1, rules, 1};
	add_pairs(c, 0, 0, 0, 0);
	for (size_t i = 0; i < c->in.nrows; i++)
		c->vals[i][0] = p99[i];
	doc = judge(c);
	assert_near(jnum(doc, "tests/0/stats/p99_us/median"), 1.2);
	assert_true(fabs(jnum(doc, "tests/0/stats/p99_us/mad") - 0.1) < 1e-12);
	assert_true(fabs(jnum(doc, "tests/0/rules/0/threshold") - (1.2 + 4 * 1.4826 * 0.1)) <
		    1e-12);
	assert_int_equal(jnum(doc, "tests/0/rules/0/failed"), 1);
	json_decref(doc);
	camp_free(c);
}

static int cmp_double(const void *x, const void *y)
{
	double p = *(const double *)x, q = *(const double *)y;

	return (p > q) - (p < q);
}

/* The order statistics against a sort, over many sizes with ties. */
static void test_stats_against_sort(void **state)
{
	static const struct vd_rule rules[] = {
		{"x.v", NULL, VD_LE, VD_MEDIAN, 1.0, 0, 1},
	};
	static const char *const fields[] = {"v"};
	struct camp *c = camp_new("ab", 0);
	double sorted[ROWS_MAX], dev[ROWS_MAX];
	uint64_t x = 88172645463325252ull;

	(void)state;
	c->tests[0] = (struct vd_test){"x", "lat", "pairs", false, fields, 1, rules, 1};
	for (size_t n = 1; n <= 200; n++) {
		json_t *doc;
		double med, mad;

		c->in.nrows = 0;
		for (size_t i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			/* Few distinct values when n is even: ties everywhere. */
			sorted[i] = (double)(x % (n % 2 ? 1000 : 7));
			add(c, 0, 0, 1, -1, VD_RUN, sorted[i]);
		}
		qsort(sorted, n, sizeof(*sorted), cmp_double);
		med = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
		for (size_t i = 0; i < n; i++)
			dev[i] = fabs(sorted[i] - med);
		qsort(dev, n, sizeof(*dev), cmp_double);
		mad = n % 2 ? dev[n / 2] : (dev[n / 2 - 1] + dev[n / 2]) / 2;
		doc = judge(c);
		if (jnum(doc, "tests/0/stats/v/median") != med ||
		    jnum(doc, "tests/0/stats/v/mad") != mad ||
		    jnum(doc, "tests/0/stats/v/min") != sorted[0] ||
		    jnum(doc, "tests/0/stats/v/max") != sorted[n - 1])
			fail_msg("n=%zu: median %g mad %g, expected %g %g", n,
				 jnum(doc, "tests/0/stats/v/median"),
				 jnum(doc, "tests/0/stats/v/mad"), med, mad);
		json_decref(doc);
	}
	camp_free(c);
}

static void test_counters(void **state)
{
	struct camp *c = camp_new("abcd", 0);
	json_t *doc;
	struct vd_row *w;

	(void)state;
	bw_test(c, false);
	add_pairs(c, 0, 0, 385, 7);
	for (size_t i = 0; i < c->in.nrows; i++)
		c->vals[i][1] = 0;
	w = row_of(c, 0, 0, 1, -1);
	*val(c, w, 1) = 1;
	w->note = "counters moved: link_downed +1";
	/* Not measured (the counter unknown on that port): not evaluated, not a failure. */
	*val(c, row_of(c, 0, 2, 3, -1), 1) = NAN;
	*val(c, row_of(c, 0, 1, 3, -1), 1) = NAN;
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "fail");
	assert_string_equal(jstr(doc, "tests/0/rules/1/metric"), "pair-bw.counters.link_downed");
	assert_int_equal(jnum(doc, "tests/0/rules/1/evaluated"), 4);
	assert_int_equal(jnum(doc, "tests/0/rules/1/failed"), 1);
	assert_int_equal(jnum(doc, "tests/0/rules/0/evaluated"), 6);
	assert_int_equal(jnum(doc, "tests/0/rules/0/failed"), 0);
	assert_int_equal(jnum(doc, "tests/0/failed"), 1);
	assert_int_equal(jsize(doc, "links"), 1);
	assert_line(doc, "links/0/reasons", "pair-bw: counters.link_downed 1.0, not == 0.0");
	assert_line(doc, "links/0/reasons", "counters moved: link_downed +1");
	assert_int_equal(jnum(doc, "tests/0/stats/counters.link_downed/n"), 4);
	json_decref(doc);
	camp_free(c);
}

/* Congestion: victims 0->1 and 2->3, congestors 4 and 5. */
static void test_congestion(void **state)
{
	static const char *const raw[] = {"mean_us", "p99_us", "gbps"};
	static const struct vd_rule rules[] = {
		{"incast.impact_p99", NULL, VD_LE, VD_ABS, 3.0, 1, 30},
		{"incast.impact_bw", NULL, VD_LE, VD_ABS, 2.5, 2, 31},
	};
	struct camp *c = camp_new("abcdef", 0);
	json_t *doc;
	struct vd_row *w;

	(void)state;
	c->tests[0] = (struct vd_test){"incast", "congestion", NULL, false, raw, 3, rules, 2};
	/* victim 0->1: latency 1.5/2.0 alone, 3.0/8.0 congested; bandwidth 390 -> 195 */
	w = add(c, 0, 0, 1, -1, VD_ISO_LAT, 1.5);
	*val(c, w, 1) = 2.0;
	w = add(c, 0, 0, 1, -1, VD_CON_LAT, 3.0);
	*val(c, w, 1) = 8.0;
	w = add(c, 0, 0, 1, -1, VD_ISO_BW, NAN);
	*val(c, w, 2) = 390;
	w = add(c, 0, 0, 1, -1, VD_CON_BW, NAN);
	*val(c, w, 2) = 195;
	/* victim 2->3: 1.5/2.0 -> 1.8/3.0; 390 -> 380 */
	w = add(c, 0, 2, 3, -1, VD_ISO_LAT, 1.5);
	*val(c, w, 1) = 2.0;
	w = add(c, 0, 2, 3, -1, VD_CON_LAT, 1.8);
	*val(c, w, 1) = 3.0;
	w = add(c, 0, 2, 3, -1, VD_ISO_BW, NAN);
	*val(c, w, 2) = 390;
	w = add(c, 0, 2, 3, -1, VD_CON_BW, NAN);
	*val(c, w, 2) = 380;
	add(c, 0, 4, 1, -1, VD_CONGESTOR, 0);
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "fail");
	assert_string_equal(jstr(doc, "tests/0/kind"), "congestion");
	assert_string_equal(jstr(doc, "tests/0/result"), "fail");
	assert_int_equal(jnum(doc, "tests/0/victim_pairs"), 2);
	assert_int_equal(jnum(doc, "tests/0/congestors_failed"), 0);
	assert_near(jnum(doc, "tests/0/stats/impact_p99/max"), 4.0);
	assert_near(jnum(doc, "tests/0/stats/impact_p99/min"), 1.5);
	assert_near(jnum(doc, "tests/0/stats/impact_p99/median"), 2.75);
	assert_near(jnum(doc, "tests/0/stats/impact_avg/max"), 2.0);
	assert_near(jnum(doc, "tests/0/stats/impact_bw/max"), 2.0);
	assert_near(jnum(doc, "tests/0/stats/impact_bw/min"), 390.0 / 380.0);
	assert_near(jnum(doc, "tests/0/stats/isolated_p99_us/median"), 2.0);
	assert_near(jnum(doc, "tests/0/stats/congested_gbps/min"), 195);
	assert_int_equal(jnum(doc, "tests/0/rules/0/evaluated"), 2);
	assert_int_equal(jnum(doc, "tests/0/rules/0/failed"), 1);
	assert_int_equal(jnum(doc, "tests/0/rules/1/evaluated"), 2);
	assert_int_equal(jnum(doc, "tests/0/rules/1/failed"), 0);
	assert_int_equal(jnum(doc, "tests/0/failed"), 1);
	assert_int_equal(jsize(doc, "tests/0/failures"), 1);
	assert_string_equal(jstr(doc, "tests/0/failures/0/a"), "id-a");
	assert_string_equal(jstr(doc, "tests/0/failures/0/b"), "id-b");
	assert_string_equal(jstr(doc, "tests/0/failures/0/attributed"), "fabric");
	assert_non_null(strstr(jstr(doc, "tests/0/failures/0/reason"),
			       "incast: impact_p99 4.0, not <= 3.0 (victim gpu-a -> gpu-b)"));
	assert_line(doc, "findings", "incast: impact_p99 4.0, not <= 3.0");
	assert_no_line(doc, "findings", "understated");
	/* No node is blamed for congestion. */
	assert_node(doc, "id-a", "pass");
	assert_node(doc, "id-b", "pass");
	json_decref(doc);

	/* A congestor that failed: the impact is understated. Within bounds: pass. */
	w = add(c, 0, 5, 3, -1, VD_CONGESTOR, 0);
	w->state = VD_ERROR;
	w->v = NULL;
	w->error = "timeout";
	*val(c, &c->rows[1], 1) = 5.0; /* impact_p99 2.5 */
	doc = judge(c);
	assert_int_equal(jnum(doc, "tests/0/congestors_failed"), 1);
	assert_line(doc, "findings",
		    "congestor gpu-f -> gpu-d failed (timeout): the impact is "
		    "understated");
	assert_string_equal(jstr(doc, "tests/0/result"), "pass");
	assert_int_equal(jnum(doc, "tests/0/rules/0/failed"), 0);
	json_decref(doc);

	/* A victim not measured fails the test. */
	c->rows[6].state = VD_ERROR;
	c->rows[6].error = "refused";
	doc = judge(c);
	assert_string_equal(jstr(doc, "tests/0/result"), "fail");
	assert_line(doc, "findings", "victim gpu-c -> gpu-d not measured: refused");
	json_decref(doc);
	camp_free(c);
}

/* What the facts say about a bad rail and node. */
static void test_explanations(void **state)
{
	struct camp *c = camp_new("abc", 4);
	json_t *doc, *r1, *gd;

	(void)state;
	bw_test(c, true);
	add_pairs(c, 0, 4, 385, 7);
	*val(c, row_of(c, 0, 0, 2, 1), 0) = 180;
	*val(c, row_of(c, 0, 1, 2, 1), 0) = 181;
	r1 = json_array_get(json_object_get(c->facts[2], "rails"), 1);
	json_object_set_new(r1, "rate_gbps", json_integer(200));
	json_object_set_new(r1, "mtu", json_integer(1024));
	json_object_set_new(json_object_get(r1, "pcie"), "width", json_integer(8));
	json_object_set_new(json_object_get(r1, "pcie"), "speed", json_string("16.0 GT/s PCIe"));
	json_object_set_new(json_array_get(json_object_get(c->facts[2], "gpus"), 1), "numa_node",
			    json_integer(1));
	gd = json_object_get(c->facts[2], "gpudirect");
	json_object_set_new(gd, "peermem", json_false());
	json_object_set_new(gd, "dmabuf", json_false());
	doc = judge(c);
	assert_node(doc, "id-c", "fail");
	r1 = jget(node_of(doc, "id-c"), "rails/0");
	assert_int_equal(jnum(r1, "rail"), 1);
	assert_line(r1, "reasons",
		    "facts: mlx5_1 port runs at 200 Gb/s; rail 1 of the cluster "
		    "runs at 400");
	assert_line(r1, "reasons", "facts: mlx5_1 PCIe link trained at x8 of x16");
	assert_line(r1, "reasons", "facts: mlx5_1 PCIe link at 16.0 GT/s PCIe of 32.0 GT/s PCIe");
	assert_line(r1, "reasons", "facts: mlx5_1 active MTU 1024; the cluster's rail 1 uses 4096");
	assert_line(r1, "reasons", "facts: GPU 1 is on NUMA node 1, mlx5_1 on 0 (across sockets)");
	assert_line(r1, "reasons", "facts: GPUDirect RDMA unavailable");
	/* Only the bad rail is explained. */
	assert_no_line(r1, "reasons", "mlx5_0");
	assert_int_equal(jsize(doc, "links"), 0);
	json_decref(doc);

	/* Facts alone do not fail a node: healthy measurements, odd facts, a pass. */
	*val(c, row_of(c, 0, 0, 2, 1), 0) = 388;
	*val(c, row_of(c, 0, 1, 2, 1), 0) = 389;
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "pass");
	assert_node(doc, "id-c", "pass");
	json_decref(doc);

	/* dma-buf alone is enough for GPUDirect; no GPUs, nothing to say. */
	*val(c, row_of(c, 0, 0, 2, 1), 0) = 180;
	*val(c, row_of(c, 0, 1, 2, 1), 0) = 181;
	json_object_set_new(gd, "dmabuf", json_true());
	doc = judge(c);
	assert_no_line(jget(node_of(doc, "id-c"), "rails/0"), "reasons", "GPUDirect");
	json_decref(doc);
	json_object_set_new(gd, "dmabuf", json_false());
	json_object_set_new(c->facts[2], "gpus", json_array());
	doc = judge(c);
	assert_no_line(jget(node_of(doc, "id-c"), "rails/0"), "reasons", "GPUDirect");
	assert_no_line(jget(node_of(doc, "id-c"), "rails/0"), "reasons", "NUMA");
	json_decref(doc);
	camp_free(c);
}

static void test_flags(void **state)
{
	struct camp *c = camp_new("abcd", 0);
	json_t *doc;

	(void)state;
	lat_test(c);
	add_pairs(c, 0, 0, 1.1, 0.3);
	c->in.quick = true;
	c->in.transport = "tcp";
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "pass");
	assert_true(json_is_true(jget(doc, "quick")));
	assert_true(json_is_true(jget(doc, "baseline")));
	assert_string_equal(jstr(doc, "transport"), "tcp");
	assert_line(doc, "findings", "quick run");
	assert_line(doc, "findings", "baseline");
	json_decref(doc);

	/* Cancelled: the slots not run are no failures, and the verdict is partial. */
	c->in.quick = false;
	c->in.transport = "verbs";
	c->in.cancelled = true;
	for (size_t i = 3; i < c->in.nrows; i++)
		c->rows[i].state = VD_CANCELLED;
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "incomplete");
	assert_false(json_is_true(jget(doc, "baseline")));
	assert_no_line(doc, "findings", "quick run");
	assert_no_line(doc, "findings", "every test passed");
	assert_int_equal(jnum(doc, "tests/0/failed"), 0);
	assert_int_equal(jnum(doc, "tests/0/measured"), 3);
	assert_string_equal(jstr(doc, "nodes/3/result"), "pass");
	json_decref(doc);

	/* Cancelled with a failure already seen: still incomplete, the failure still named. */
	*val(c, &c->rows[0], 0) = 30;
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "incomplete");
	assert_string_equal(jstr(doc, "tests/0/result"), "fail");
	json_decref(doc);
	camp_free(c);
}

static void test_bad_input(void **state)
{
	static const char *const raw[] = {"mean_us", "p99_us", "gbps"};
	static const struct vd_rule bad_field[] = {
		{"pair-lat.x", NULL, VD_LE, VD_ABS, 1, 1, 1},
	};
	struct camp *c = camp_new("abc", 0);
	json_t *doc = NULL;
	struct vd_suspect *sv = NULL;
	size_t n = 99;
	bool good[3];

	(void)state;
	lat_test(c);
	add_pairs(c, 0, 0, 1.1, 0.3);
	assert_int_equal(vd_evaluate(NULL, &doc), -EINVAL);
	c->rows[1].test = 1;
	assert_int_equal(vd_evaluate(&c->in, &doc), -EINVAL);
	assert_null(doc);
	c->rows[1].test = 0;
	c->rows[2].b = 3;
	assert_int_equal(vd_evaluate(&c->in, &doc), -EINVAL);
	assert_int_equal(vd_suspects(&c->in, 0, &sv, &n, good), -EINVAL);
	c->rows[2].b = 2;
	c->rows[2].a = UINT32_MAX;
	assert_int_equal(vd_evaluate(&c->in, &doc), -EINVAL);
	c->rows[2].a = 1;
	c->rows[0].v = NULL; /* measured without values */
	assert_int_equal(vd_evaluate(&c->in, &doc), -EINVAL);
	c->rows[0].v = c->vals[0];
	c->rows[0].rail = 32; /* beyond the rails tracked */
	assert_int_equal(vd_evaluate(&c->in, &doc), -EINVAL);
	c->rows[0].rail = -1;
	c->rows[0].phase = VD_PHASE_COUNT;
	assert_int_equal(vd_evaluate(&c->in, &doc), -EINVAL);
	c->rows[0].phase = VD_RUN;
	c->rows[0].state = 9; /* no such state: not read as measured */
	c->rows[0].v = NULL;
	assert_int_equal(vd_evaluate(&c->in, &doc), -EINVAL);
	c->rows[0].state = VD_OK;
	c->rows[0].v = c->vals[0];
	c->tests[0].rules = bad_field; /* a rule on a field the rows do not carry */
	c->tests[0].nrules = 1;
	assert_int_equal(vd_evaluate(&c->in, &doc), -EINVAL);
	assert_null(doc);

	/* Suspects of a congestion test, or of no test. */
	c->tests[0] = (struct vd_test){"incast", "congestion", NULL, false, raw, 3, NULL, 0};
	assert_int_equal(vd_suspects(&c->in, 0, &sv, &n, good), -EINVAL);
	lat_test(c);
	assert_int_equal(vd_suspects(&c->in, 1, &sv, &n, good), -EINVAL);
	assert_null(sv);
	assert_int_equal(n, 99);

	/* And the input is good again. */
	assert_int_equal(vd_evaluate(&c->in, &doc), 0);
	assert_string_equal(jstr(doc, "result"), "pass");
	json_decref(doc);
	camp_free(c);
}

/* Suspects of a test: the failing VD_RUN pairs, not those with an end offline; good nodes are
 * those with a passing row and no failing one. Nodes a..h = 0..7. */
static void test_suspects(void **state)
{
	struct camp *c = camp_new("abcdefgh", 0);
	struct vd_suspect *sv = NULL;
	size_t n = 0;
	bool good[8];
	struct vd_row *w;

	(void)state;
	lat_test(c);
	add_pairs(c, 0, 0, 1.1, 0.3);
	*val(c, row_of(c, 0, 0, 1, -1), 0) = 9.0; /* a-b: a rule */
	w = row_of(c, 0, 2, 3, -1);		  /* c-d: the run failed */
	w->state = VD_ERROR;
	w->error = "timeout: no result in 60 s";
	w = row_of(c, 0, 2, 4, -1); /* c-e: e offline */
	w->state = VD_ERROR;
	w->error = "offline: gpu-e is not connected";
	for (uint32_t i = 0; i < 7; i++) { /* h: never run */
		w = row_of(c, 0, i, 7, -1);
		w->state = VD_CANCELLED;
	}
	add(c, 0, 5, 6, -1, VD_RETEST, 50.0); /* retests are no suspects */
	for (size_t i = 0; i < 8; i++)
		good[i] = true;
	assert_int_equal(vd_suspects(&c->in, 0, &sv, &n, good), 0);
	assert_int_equal(n, 2);
	assert_non_null(sv);
	assert_int_equal(sv[0].a, 0);
	assert_int_equal(sv[0].b, 1);
	assert_int_equal(sv[0].rail, -1);
	assert_int_equal(sv[1].a, 2);
	assert_int_equal(sv[1].b, 3);
	for (size_t i = 0; i < 8; i++)
		if (good[i] != (i == 5 || i == 6))
			fail_msg("good[%zu] = %d", i, good[i]);
	free(sv);

	/* Every row passes: no suspects; every node run is good. */
	for (size_t i = 0; i < c->in.nrows; i++)
		if (c->rows[i].state != VD_CANCELLED) {
			c->rows[i].state = VD_OK;
			c->rows[i].error = NULL;
			c->vals[i][0] = 1.2;
		}
	sv = NULL;
	assert_int_equal(vd_suspects(&c->in, 0, &sv, &n, good), 0);
	assert_int_equal(n, 0);
	free(sv);
	for (size_t i = 0; i < 8; i++)
		assert_int_equal(good[i], i != 7);
	camp_free(c);
}

/* Two tests in one verdict: a node named by one is failed overall; each test keeps its result. */
static void test_two_tests(void **state)
{
	static const char *const fields[] = {"gbps"};
	static const struct vd_rule rules[] = {{"pair-bw.gbps", NULL, VD_GE, VD_ABS, 370, 0, 1}};
	struct camp *c = camp_new("abcd", 0);
	json_t *doc;

	(void)state;
	lat_test(c);
	c->tests[1] = (struct vd_test){"pair-bw", "bw", "pairs", false, fields, 1, rules, 1};
	c->in.ntests = 2;
	add_pairs(c, 0, 0, 1.1, 0.3);
	add_pairs(c, 1, 0, 385, 7);
	for (uint32_t i = 0; i < 3; i++)
		*val(c, row_of(c, 1, i, 3, -1), 0) = 120;
	doc = judge(c);
	assert_string_equal(jstr(doc, "result"), "fail");
	assert_string_equal(jstr(doc, "tests/0/result"), "pass");
	assert_string_equal(jstr(doc, "tests/1/result"), "fail");
	assert_int_equal(jnum(doc, "tests/0/rows"), 6);
	assert_int_equal(jnum(doc, "tests/1/rows"), 6);
	assert_node(doc, "id-d", "fail");
	assert_line(node_of(doc, "id-d"), "reasons", "pair-bw: fails with 3 of 3 peers");
	assert_no_line(node_of(doc, "id-d"), "reasons", "pair-lat");
	assert_node(doc, "id-a", "pass");
	json_decref(doc);
	camp_free(c);
}

/* Append row i of src (with its values) to dst. */
static void copy_row(struct camp *dst, const struct camp *src, size_t i)
{
	size_t k = dst->in.nrows++;

	dst->rows[k] = src->rows[i];
	memcpy(dst->vals[k], src->vals[i], sizeof(src->vals[i]));
	dst->rows[k].v = dst->vals[k];
}

/* The rows of two tests interleaved give the same verdict as the rows test by test. */
static void test_row_order(void **state)
{
	static const char *const fields[] = {"gbps"};
	static const struct vd_rule rules[] = {
		{"pair-bw.gbps", NULL, VD_GE, VD_MEDIAN, 0.93, 0, 1},
	};
	struct camp *c = camp_new("abcde", 2), *m = camp_new("abcde", 2);
	json_t *grouped, *mixed;
	size_t n, n0;

	(void)state;
	for (struct camp *x = c; x; x = x == c ? m : NULL) {
		lat_test(x);
		x->tests[1] = (struct vd_test){"pair-bw", "bw", "pairs", true, fields, 1, rules, 1};
		x->in.ntests = 2;
	}
	add_pairs(c, 0, 0, 1.1, 0.3);
	*val(c, row_of(c, 0, 0, 1, -1), 0) = 9; /* a link */
	add(c, 0, 0, 1, -1, VD_RETEST, 9.5);
	add_pairs(c, 1, 2, 385, 7);
	for (uint32_t i = 0; i < 4; i++) /* e rail 1: bad */
		*val(c, row_of(c, 1, i, 4, 1), 0) = 200;
	n = c->in.nrows;
	n0 = 11; /* 10 pairs and a retest */
	/* m: the same rows alternating between the tests, each test's rows in the same order. */
	for (size_t j = 0, k = n0; j < n0 || k < n;) {
		if (j < n0)
			copy_row(m, c, j++);
		if (k < n)
			copy_row(m, c, k++);
	}
	grouped = judge(c);
	mixed = judge(m);
	assert_string_equal(jstr(grouped, "tests/1/result"), "fail");
	assert_int_equal(jsize(grouped, "links"), 1);
	assert_int_equal(jsize(node_of(grouped, "id-e"), "rails"), 1);
	if (!json_equal(grouped, mixed)) {
		char *a = json_dumps(grouped, JSON_INDENT(1)),
		     *b = json_dumps(mixed, JSON_INDENT(1));

		fprintf(stderr, "grouped: %s\nmixed: %s\n", a ? a : "", b ? b : "");
		free(a);
		free(b);
		fail_msg("the verdict depends on how the tests' rows interleave");
	}
	json_decref(grouped);
	json_decref(mixed);
	camp_free(c);
	camp_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_all_pass),
		cmocka_unit_test(test_bad_node_majority),
		cmocka_unit_test(test_link),
		cmocka_unit_test(test_majority_boundary),
		cmocka_unit_test(test_two_nodes),
		cmocka_unit_test(test_per_rail),
		cmocka_unit_test(test_loopback),
		cmocka_unit_test(test_missing_rail),
		cmocka_unit_test(test_run_errors),
		cmocka_unit_test(test_transient),
		cmocka_unit_test(test_retest_confirms),
		cmocka_unit_test(test_relative_median_mad),
		cmocka_unit_test(test_mad_upper),
		cmocka_unit_test(test_stats_against_sort),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_congestion),
		cmocka_unit_test(test_explanations),
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_suspects),
		cmocka_unit_test(test_two_tests),
		cmocka_unit_test(test_row_order),
		cmocka_unit_test(test_robust_min_liar),
		cmocka_unit_test(test_invalid_rows),
		cmocka_unit_test(test_invalid_dispute),
		cmocka_unit_test(test_missing_metric_fails),
		cmocka_unit_test(test_gate_and_exclusion),
		cmocka_unit_test(test_exclusion_of_liar),
		cmocka_unit_test(test_acceptance),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
