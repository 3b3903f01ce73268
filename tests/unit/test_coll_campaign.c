/* Unit tests of controller/campaign/coll (a campaign's collective test) and the verdict of a
 * collective: nccl-tests' bus bandwidth factors; the launcher's report checked as evidence,
 * starting from an honest report and changing one thing as a lying launcher would (busbw that
 * is not algbw x the factor, bandwidth above the links, a node outside the job, ranks missing,
 * an op not ordered, pairs that do not cover the job, CPU figures that do not add up); the slow
 * node named from the job's pairwise probe (and nobody named when none stands out, or with 2
 * nodes); and the verdict naming that node, or failing the test as a whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "controller/campaign/coll.h"
#include "controller/campaign/verdict.h"

static const char *const ids[] = {"n-a", "n-b", "n-c"};

static void test_factors(void **state)
{
	(void)state;
	assert_true(fabs(cp_coll_busbw_factor("allreduce", 4) - 1.5) < 1e-12);
	assert_true(fabs(cp_coll_busbw_factor("allgather", 4) - 0.75) < 1e-12);
	assert_true(fabs(cp_coll_busbw_factor("reducescatter", 8) - 0.875) < 1e-12);
	assert_true(fabs(cp_coll_busbw_factor("alltoall", 2) - 0.5) < 1e-12);
	assert_true(fabs(cp_coll_busbw_factor("sendrecv", 16) - 1.0) < 1e-12);
	assert_true(isnan(cp_coll_busbw_factor("broadcast", 4)));
}

/* The job's params over n nodes, 2 ranks each, ops allreduce and alltoall. */
static json_t *params(size_t n, const char *transport)
{
	json_t *hosts = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(hosts,
				      json_pack("{s:s, s:s}", "node", ids[i], "host", ids[i]));
	return json_pack("{s:s, s:s, s:s, s:o, s:i, s:[s, s], s:i, s:i, s:i, s:i}", "kind",
			 "collective", "transport", transport, "backend", "mpi", "hosts", hosts,
			 "ranks_per_node", 2, "ops", "allreduce", "alltoall", "min_bytes", 1024,
			 "max_bytes", 1048576, "iters", 20, "warmup", 5);
}

/* Node entries: one hardware rail of rate Gb/s each (0: soft RDMA, no PCI function). */
static json_t *nodes(size_t n, double rate)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++) {
		json_t *r = json_pack("{s:s, s:f}", "device", "mlx5_0", "rate_gbps",
				      rate > 0 ? rate : 10.0);

		if (rate > 0)
			json_object_set_new(r, "pci_address", json_string("0000:16:00.0"));
		json_array_append_new(a, json_pack("{s:s, s:[o]}", "id", ids[i], "rails", r));
	}
	return a;
}

static json_t *result(const char *op, double bytes, double t_us, size_t ranks)
{
	double alg = bytes / t_us / 1e3;

	return json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:i}", "op", op, "bytes", bytes, "count",
			 bytes / 4, "time_us", t_us, "algbw_gbs", alg, "busbw_gbs",
			 alg * cp_coll_busbw_factor(op, ranks), "wrong", 0);
}

/* An honest report of the job over n nodes: pairs at pair[k] Gb/s (k over (0,1), (0,2), (1,2)). */
static json_t *report(size_t n, const double *pair)
{
	size_t ranks = 2 * n;
	json_t *nl = json_array(), *res = json_array(), *pairs = json_array();
	double bus = 0, wall = 2.0, rc = 3.0, hc = 4.0;
	const char *ops[] = {"allreduce", "alltoall"};
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		json_array_append_new(nl, json_pack("{s:s, s:[i, i]}", "node", ids[i], "ranks",
						    (int)(2 * i), (int)(2 * i + 1)));
	for (size_t o = 0; o < 2; o++)
		for (double b = 1024; b <= 1048576; b *= 32) {
			json_array_append_new(res, result(ops[o], b, 10 + b / 1000, ranks));
			bus += b * cp_coll_busbw_factor(ops[o], ranks) * 20 / 1e9;
		}
	for (size_t a = 0; a < n; a++)
		for (size_t b = a + 1; b < n; b++, k++)
			json_array_append_new(pairs,
					      json_pack("{s:s, s:s, s:i, s:f, s:f}", "a", ids[a],
							"b", ids[b], "bytes", 4194304, "time_us",
							100.0, "gbps", pair[k]));
	return json_pack("{s:s, s:{s:s, s:i, s:s, s:s, s:i, s:o, s:i, s:o, s:o, s:{s:f, s:f, s:f, "
			 "s:f, s:f, s:f, s:f}}}",
			 "kind", "collective", "coll", "program", "railyard-coll", "version", 1,
			 "backend", "mpi", "library", "Open MPI v4.1.4", "ranks", (int)ranks,
			 "nodes", nl, "iters", 20, "results", res, "pairs", pairs, "cpu", "wall_s",
			 wall, "ranks_cpu_s", rc, "host_cpu_s", hc, "bus_gb", bus, "cores",
			 rc / wall, "cpu_s_per_gb", rc / bus, "host_cpu_s_per_gb", hc / bus);
}

static json_t *at(json_t *doc, const char *a, size_t i)
{
	return json_array_get(json_object_get(json_object_get(doc, "coll"), a), i);
}

/* Checks doc; returns 1 when refused, with why containing want. */
static void refused(json_t *doc, json_t *p, json_t *nd, const char *want)
{
	char why[256];

	assert_int_equal(cp_coll_evidence(doc, p, nd, why, sizeof(why)), 1);
	if (!strstr(why, want))
		fail_msg("\"%s\" does not say \"%s\"", why, want);
}

static void test_evidence(void **state)
{
	const double pair[] = {90, 90, 90};
	json_t *p = params(3, "verbs"), *nd = nodes(3, 100), *d;
	char why[256];

	(void)state;
	d = report(3, pair);
	assert_int_equal(cp_coll_evidence(d, p, nd, why, sizeof(why)), 0);
	json_decref(d);

	/* busbw that is not algbw x the factor (a launcher "rounding up"). */
	d = report(3, pair);
	json_object_set_new(
		at(d, "results", 0), "busbw_gbs",
		json_real(json_number_value(json_object_get(at(d, "results", 0), "busbw_gbs")) *
			  2));
	refused(d, p, nd, "is not algbw x");
	json_decref(d);

	/* algbw that is not bytes / time. */
	d = report(3, pair);
	json_object_set_new(at(d, "results", 1), "time_us", json_real(1.0));
	refused(d, p, nd, "is not bytes / time");
	json_decref(d);

	/* Consistent but impossible: 1 MiB in 1 ns, far above 3 x 100 Gb/s links. */
	d = report(3, pair);
	json_array_set_new(json_object_get(json_object_get(d, "coll"), "results"), 1,
			   result("allreduce", 1048576, 0.001, 6));
	refused(d, p, nd, "above what the nodes' links carry");
	json_decref(d);

	/* A node outside the job ran ranks. */
	d = report(3, pair);
	json_object_set_new(at(d, "nodes", 2), "node", json_string("n-z"));
	refused(d, p, nd, "not one of the job's");
	json_decref(d);

	/* Fewer ranks than ordered. */
	d = report(3, pair);
	json_object_set_new(json_object_get(d, "coll"), "ranks", json_integer(4));
	refused(d, p, nd, "ranks 4");
	json_decref(d);

	/* An op nobody ordered; an ordered op missing. */
	d = report(3, pair);
	json_object_set_new(at(d, "results", 0), "op", json_string("allgather"));
	refused(d, p, nd, "was not ordered");
	json_decref(d);
	d = report(3, pair);
	json_array_clear(json_object_get(json_object_get(d, "coll"), "results"));
	refused(d, p, nd, "no result of allreduce");
	json_decref(d);

	/* Wrong counts that are not counts. */
	d = report(3, pair);
	json_object_set_new(at(d, "results", 0), "wrong", json_integer(-1));
	refused(d, p, nd, "wrong is not a count");
	json_decref(d);

	/* Pairs: one missing, one twice, one above the link. */
	d = report(3, pair);
	json_array_remove(json_object_get(json_object_get(d, "coll"), "pairs"), 2);
	refused(d, p, nd, "2 node pairs probed");
	json_decref(d);
	d = report(3, pair);
	json_object_set_new(at(d, "pairs", 2), "a", json_string("n-a"));
	json_object_set_new(at(d, "pairs", 2), "b", json_string("n-b"));
	refused(d, p, nd, "is not a new pair");
	json_decref(d);
	d = report(3, pair);
	json_object_set_new(at(d, "pairs", 0), "gbps", json_real(400));
	refused(d, p, nd, "above the link's");
	json_decref(d);

	/* CPU figures that do not add up. */
	d = report(3, pair);
	json_object_set_new(json_object_get(json_object_get(d, "coll"), "cpu"), "bus_gb",
			    json_real(1e6));
	refused(d, p, nd, "is not what the results moved");
	json_decref(d);
	d = report(3, pair);
	json_object_set_new(json_object_get(json_object_get(d, "coll"), "cpu"), "cores",
			    json_real(0.01));
	refused(d, p, nd, "cpu.cores");
	json_decref(d);

	/* Not railyard-coll's document at all. */
	d = json_pack("{s:s}", "kind", "collective");
	refused(d, p, nd, "no collective results");
	json_decref(d);
	json_decref(p);
	json_decref(nd);
}

static void test_slowest(void **state)
{
	json_t *p3 = params(3, "verbs"), *p2 = params(2, "verbs"), *d;
	int who;
	char why[256];

	(void)state;
	/* c slowed: a-b 90, a-c 9, b-c 9 -> c (its pairs 9 against 90 without it). */
	d = report(3, (const double[]){90, 9, 9});
	assert_int_equal(cp_coll_slowest(json_object_get(d, "coll"), json_object_get(p3, "hosts"),
					 &who, why, sizeof(why)),
			 0);
	assert_int_equal(who, 2);
	assert_non_null(strstr(why, "slowest in the job's pairwise probe"));
	json_decref(d);
	/* Even pairs: nobody stands out. */
	d = report(3, (const double[]){90, 85, 88});
	assert_int_equal(cp_coll_slowest(json_object_get(d, "coll"), json_object_get(p3, "hosts"),
					 &who, why, sizeof(why)),
			 0);
	assert_int_equal(who, -1);
	json_decref(d);
	/* Two nodes: which end is slow cannot be told. */
	d = report(2, (const double[]){9});
	assert_int_equal(cp_coll_slowest(json_object_get(d, "coll"), json_object_get(p2, "hosts"),
					 &who, why, sizeof(why)),
			 0);
	assert_int_equal(who, -1);
	assert_non_null(strstr(why, "2 nodes"));
	json_decref(d);
	json_decref(p3);
	json_decref(p2);
}

static void test_summary(void **state)
{
	json_t *p = params(3, "verbs"), *d = report(3, (const double[]){90, 9, 9}), *s;
	const json_t *m;

	(void)state;
	s = cp_coll_summary(d, p);
	assert_non_null(s);
	m = json_object_get(s, "metrics");
	/* The first op (allreduce) at its largest size, 1 MiB in 10 + 1048.576 us. */
	assert_true(fabs(json_number_value(json_object_get(m, "algbw_gbs")) -
			 1048576 / (10 + 1048.576) / 1e3) < 1e-9);
	assert_true(fabs(json_number_value(json_object_get(m, "busbw_gbs")) -
			 json_number_value(json_object_get(m, "allreduce_busbw_gbs"))) < 1e-12);
	assert_true(fabs(json_number_value(json_object_get(m, "lat_us")) - (10 + 1.024)) < 1e-9);
	assert_non_null(json_object_get(m, "alltoall_busbw_gbs"));
	assert_int_equal(json_integer_value(json_object_get(m, "wrong")), 0);
	assert_true(fabs(json_number_value(json_object_get(m, "pair_min_gbps")) - 9) < 1e-12);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(s, "coll"), "slowest")), "n-c");
	json_decref(s);
	json_decref(d);
	json_decref(p);
}

/* The verdict of a collective over 3 nodes (rule busbw >= 10): its job, launched by node 0,
 * measured busbw and named node (a; VD_ROW_WHOLE: none); then, when retest is set, the job
 * without node 0 launched by node 1, with its busbw and named node. */
struct coll_case {
	double busbw;
	uint32_t named;
	uint8_t flags;
	enum vd_state st;
	bool retest;
	double re_busbw;
	uint32_t re_named;
	uint8_t re_flags;
};

static json_t *verdict_of(const struct coll_case *k)
{
	static const char *const fields[] = {"busbw_gbs", "wrong"};
	static const struct vd_rule rules[] = {
		{.metric = "ar.busbw_gbs", .op = VD_GE, .rel = VD_ABS, .value = 10, .field = 0},
		{.metric = "ar.wrong", .op = VD_EQ, .rel = VD_ABS, .value = 0, .field = 1}};
	struct vd_node nd[3];
	struct vd_test t = {.name = "ar",
			    .kind = "collective",
			    .fields = fields,
			    .nfields = 2,
			    .rules = rules,
			    .nrules = 2};
	double v[2][2] = {{k->busbw, 0}, {k->re_busbw, 0}};
	struct vd_row w[2] = {{.test = 0,
			       .a = k->named,
			       .b = 0,
			       .rail = -1,
			       .state = (uint8_t)k->st,
			       .phase = VD_RUN,
			       .flags = k->flags,
			       .v = v[0],
			       .error = k->st == VD_ERROR ? "mpirun exited 1" : NULL,
			       .note = "slowest in the job's pairwise probe"},
			      {.test = 0,
			       .a = k->re_named,
			       .b = 1,
			       .rail = -1,
			       .state = VD_OK,
			       .phase = VD_RETEST,
			       .flags = k->re_flags,
			       .v = v[1]}};
	struct vd_input in = {.tests = &t,
			      .ntests = 1,
			      .nodes = nd,
			      .nnodes = 3,
			      .rows = w,
			      .nrows = k->retest ? 2 : 1,
			      .transport = "verbs"};
	json_t *doc = NULL;

	for (size_t i = 0; i < 3; i++)
		nd[i] = (struct vd_node){ids[i], ids[i], NULL, NULL};
	assert_int_equal(vd_evaluate(&in, &doc), 0);
	return doc;
}

static const char *node_result(const json_t *doc, size_t i)
{
	return json_string_value(
		json_object_get(json_array_get(json_object_get(doc, "nodes"), i), "result"));
}

/* The verdict's result, each node's ("ppf": n-a pass, n-b pass, n-c fail), a finding that must
 * be there. */
static void expect(const struct coll_case *k, const char *result, const char *nodes,
		   const char *finding)
{
	json_t *doc = verdict_of(k), *f;
	bool found = false;
	size_t i;

	assert_string_equal(json_string_value(json_object_get(doc, "result")), result);
	for (i = 0; i < 3; i++)
		assert_string_equal(node_result(doc, i), nodes[i] == 'f' ? "fail" : "pass");
	json_array_foreach(json_object_get(doc, "findings"), i, f) found |=
		strstr(json_string_value(f), finding) != NULL;
	if (!found)
		fail_msg("no finding says \"%s\": %s", finding,
			 json_dumps(json_object_get(doc, "findings"), 0));
	json_decref(doc);
}

static void test_verdict(void **state)
{
	(void)state;
	/* Slow, n-c named, no second job: named on the one report, said so. */
	expect(&(struct coll_case){.busbw = 5, .named = 2}, "fail", "ppf", "report alone");
	/* Slow, nobody stands out: the test fails as a whole. */
	expect(&(struct coll_case){.busbw = 5, .flags = VD_ROW_WHOLE}, "fail", "ppp",
	       "no single node stands out");
	/* The job failed: as a whole, with its error. */
	expect(&(struct coll_case){.busbw = NAN, .flags = VD_ROW_WHOLE, .st = VD_ERROR}, "fail",
	       "ppp", "mpirun exited 1");
	/* Fast enough: pass. */
	expect(&(struct coll_case){.busbw = 50}, "pass", "ppp", "every test passed");
	/* n-c named, and the job without n-a (launched by n-b) fails too: confirmed. */
	expect(&(struct coll_case){.busbw = 5,
				   .named = 2,
				   .retest = true,
				   .re_busbw = 4,
				   .re_named = 1,
				   .re_flags = VD_ROW_WHOLE},
	       "fail", "ppf", "confirmed: the job without n-a, launched by n-b, fails too");
	/* A launcher that blames n-c, when the job without it (n-c in it) passes: the launcher
	 * is named, n-c is not. */
	expect(&(struct coll_case){.busbw = 5, .named = 2, .retest = true, .re_busbw = 50}, "fail",
	       "fpp", "its report is not confirmed");
	/* The launcher names itself and the job without it passes: it is the slow one. */
	expect(&(struct coll_case){.busbw = 5, .named = 0, .retest = true, .re_busbw = 50}, "fail",
	       "fpp", "the job without it passed");
	/* Both jobs fail and neither names a node: as a whole. */
	expect(&(struct coll_case){.busbw = 5,
				   .flags = VD_ROW_WHOLE,
				   .retest = true,
				   .re_busbw = 4,
				   .re_named = 1,
				   .re_flags = VD_ROW_WHOLE},
	       "fail", "ppp", "no single node stands out");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_factors), cmocka_unit_test(test_evidence),
		cmocka_unit_test(test_slowest), cmocka_unit_test(test_summary),
		cmocka_unit_test(test_verdict),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
