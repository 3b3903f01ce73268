/* Unit tests for the pure parts of sign-off reports: configuration snapshots from the fixture
 * sysroots' facts, their flattening and diff, drift grouped over nodes, the per-metric
 * comparison with a baseline, and the canonical bytes that are signed. */
#include "controller/signoff/canon.h"
#include "controller/signoff/compare.h"
#include "controller/signoff/results.h"
#include "controller/signoff/snapshot.h"
#include "nodeagent/facts/facts.h"

#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static json_t *facts_of(const char *name)
{
	const char *src = getenv("RAILYARD_SOURCE_DIR");
	json_t *f = NULL;
	char *p;

	assert_non_null(src);
	assert_true(asprintf(&p, "%s/tests/fixtures/sysroots/%s", src, name) > 0);
	assert_int_equal(facts_collect(p, &f), 0);
	free(p);
	return f;
}

static json_t *snapshot_of(const char *name)
{
	json_t *f = facts_of(name), *s = so_snapshot(f);

	json_decref(f);
	assert_non_null(s);
	return s;
}

static const json_t *hca(const json_t *snap, const char *dev)
{
	const json_t *h;
	size_t i;

	json_array_foreach(json_object_get(snap, "hcas"), i,
			   h) if (strcmp(json_string_value(json_object_get(h, "device")), dev) ==
				  0) return h;
	fail_msg("no HCA %s", dev);
	return NULL;
}

#define JS(o, k) json_string_value(json_object_get((o), (k)))

static void test_snapshot_h200(void **state)
{
	json_t *s = snapshot_of("h200-ib");
	const json_t *h0 = hca(s, "mlx5_0");

	(void)state;
	assert_string_equal(JS(s, "kernel"), "6.1.0-28-amd64");
	assert_string_equal(JS(json_object_get(s, "ofed"), "version"), "24.10-1.1.4.0");
	assert_string_equal(JS(s, "nvidia_driver"), "550.127.05");
	assert_int_equal(json_array_size(json_object_get(s, "hcas")), 8);
	assert_int_equal(json_array_size(json_object_get(s, "gpus")), 8);
	assert_string_equal(JS(h0, "fw_ver"), "28.42.1000");
	assert_string_equal(JS(h0, "pcie"), "Gen5 x16");
	assert_string_equal(JS(h0, "pcie_max"), "Gen5 x16");
	assert_string_equal(JS(h0, "state"), "ACTIVE");
	assert_int_equal(json_integer_value(json_object_get(h0, "rate_gbps")), 400);
	assert_non_null(JS(s, "gpudirect"));
	assert_true(strncmp(JS(s, "topology_digest"), "sha256:", 7) == 0);
	assert_int_equal(strlen(JS(s, "topology_digest")), 7 + 64);
	json_decref(s);
}

/* The degraded node's faults are what its snapshot differs by; its topology is the same. */
static void test_snapshot_diff_degraded(void **state)
{
	json_t *a = snapshot_of("h200-ib"), *b = snapshot_of("h200-degraded");
	json_t *d = so_snapshot_diff(a, b), *flat = so_snapshot_flat(b), *c;
	bool down = false, rate = false, pcie = false;
	size_t i;

	(void)state;
	assert_string_equal(JS(hca(b, "mlx5_6"), "pcie"), "Gen4 x8");
	assert_string_equal(JS(hca(b, "mlx5_6"), "pcie_max"), "Gen5 x16");
	assert_string_equal(JS(flat, "hca.mlx5_3.state"), "DOWN");
	assert_string_equal(JS(flat, "hca.mlx5_3"), "present");
	json_array_foreach(d, i, c)
	{
		const char *f = JS(c, "field");

		down |= strcmp(f, "hca.mlx5_3.state") == 0 &&
			strcmp(JS(c, "from"), "ACTIVE") == 0 && strcmp(JS(c, "to"), "DOWN") == 0;
		rate |= strcmp(f, "hca.mlx5_5.rate_gbps") == 0 &&
			json_integer_value(json_object_get(c, "to")) == 200;
		pcie |= strcmp(f, "hca.mlx5_6.pcie") == 0;
		assert_true(strcmp(f, "topology_digest") != 0);
		if (i > 0) /* sorted by field */
			assert_true(strcmp(JS(json_array_get(d, i - 1), "field"), f) < 0);
	}
	assert_true(down && rate && pcie);
	json_decref(a);
	json_decref(b);
	json_decref(d);
	json_decref(flat);
}

static void test_snapshot_empty(void **state)
{
	json_t *s = so_snapshot(NULL), *self;

	(void)state;
	assert_non_null(s);
	assert_null(json_object_get(s, "kernel"));
	assert_string_equal(JS(s, "gpudirect"), "none");
	assert_int_equal(json_array_size(json_object_get(s, "hcas")), 0);
	self = so_snapshot_diff(s, s);
	assert_int_equal(json_array_size(self), 0);
	json_decref(self);
	json_decref(s);
}

/* The snapshot's gpudirect is the node's own method: a node whose facts say dma-buf is dmabuf
 * even with nvidia_peermem loaded (it used to say peermem); peermem needs its module. */
static void test_snapshot_gpudirect(void **state)
{
	static const struct {
		const char *facts, *want;
	} cases[] = {
		{"{\"gpudirect\": {\"method\": \"dma-buf\", \"dmabuf\": true},"
		 " \"modules\": {\"loaded\": [\"nvidia_peermem\", \"nvidia\", \"mlx5_ib\"]},"
		 " \"nvidia_driver\": {\"open_kernel_module\": true, \"version\": \"550.127.05\"}}",
		 "dmabuf"},
		{"{\"gpudirect\": {\"method\": \"dma-buf\", \"dmabuf\": true},"
		 " \"modules\": {\"loaded\": [\"nvidia\"]}}",
		 "dmabuf"},
		{"{\"gpudirect\": {\"method\": \"peermem\", \"dmabuf\": false},"
		 " \"modules\": {\"loaded\": [\"nvidia_peermem\", \"nvidia\"]},"
		 " \"nvidia_driver\": {\"open_kernel_module\": false, \"version\": "
		 "\"550.127.05\"}}",
		 "peermem"},
		{"{\"gpudirect\": {\"method\": \"peermem\", \"dmabuf\": false},"
		 " \"modules\": {\"loaded\": [\"nvidia\"]},"
		 " \"nvidia_driver\": {\"open_kernel_module\": true, \"version\": \"470.1\"}}",
		 "none"},
		/* An agent before the gpudirect fact: nvidia_peermem loaded or nothing. */
		{"{\"modules\": {\"loaded\": [\"nvidia_peermem\"]},"
		 " \"nvidia_driver\": {\"open_kernel_module\": true}}",
		 "peermem"},
		{"{\"nvidia_driver\": {\"open_kernel_module\": true}}", "none"},
	};
	json_t *f, *s;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		f = json_loads(cases[i].facts, JSON_REJECT_DUPLICATES, NULL);
		assert_non_null(f);
		s = so_snapshot(f);
		assert_non_null(s);
		if (strcmp(JS(s, "gpudirect"), cases[i].want) != 0)
			fail_msg("case %zu: gpudirect %s, want %s", i, JS(s, "gpudirect"),
				 cases[i].want);
		json_decref(s);
		json_decref(f);
	}
	/* The fixture H200 sysroot (kernel 6.1, open modules, driver 550, nvidia_peermem loaded):
	 * its facts say dma-buf, and so does its snapshot. */
	f = facts_of("h200-ib");
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(f, "gpudirect"), "method")),
		"dma-buf");
	s = so_snapshot(f);
	assert_string_equal(JS(s, "gpudirect"), "dmabuf");
	json_decref(s);
	json_decref(f);
}

static json_t *node(const char *host, json_t *snap)
{
	return json_pack("{s:s, s:o}", "hostname", host, "snapshot", snap);
}

/* RoCE nodes (their MTU is known). Three nodes upgraded alike are one group naming three nodes; one
 * MTU change names its node; a node gone and a node new are listed. */
static void test_drift_grouped(void **state)
{
	json_t *base = json_array(), *cur = json_array(), *d, *g;
	const char *hosts[] = {"n1", "n2", "n3"};
	size_t i;
	char *line;

	(void)state;
	for (i = 0; i < 3; i++) {
		json_t *b = snapshot_of("h200-roce"), *c = snapshot_of("h200-roce");

		json_object_set_new(json_object_get(c, "ofed"), "version",
				    json_string("25.01-0.6.0.0"));
		if (i == 1)
			json_object_set_new((json_t *)hca(c, "mlx5_2"), "mtu", json_integer(1024));
		json_array_append_new(base, node(hosts[i], b));
		json_array_append_new(cur, node(hosts[i], c));
	}
	json_array_append_new(base, node("gone", snapshot_of("h200-roce")));
	json_array_append_new(cur, node("new", snapshot_of("h200-roce")));
	d = so_drift(base, cur);
	assert_non_null(d);
	assert_int_equal(json_array_size(json_object_get(d, "drift")), 2);
	g = json_array_get(json_object_get(d, "drift"), 0);
	assert_string_equal(JS(g, "field"), "hca.mlx5_2.mtu");
	assert_int_equal(json_array_size(json_object_get(g, "nodes")), 1);
	line = so_drift_line(g);
	assert_string_equal(line, "hca.mlx5_2.mtu 4096 -> 1024 on n2");
	free(line);
	g = json_array_get(json_object_get(d, "drift"), 1);
	assert_string_equal(JS(g, "field"), "ofed.version");
	line = so_drift_line(g);
	assert_string_equal(line, "ofed.version 24.10-1.1.4 -> 25.01-0.6.0.0 on 3 nodes");
	free(line);
	assert_string_equal(json_string_value(json_array_get(json_object_get(d, "nodes_added"), 0)),
			    "new");
	assert_string_equal(
		json_string_value(json_array_get(json_object_get(d, "nodes_removed"), 0)), "gone");
	json_decref(d);
	json_decref(base);
	json_decref(cur);
}

static json_t *row(const char *test, const char *kind, const char *a, const char *b, int rail,
		   const char *field, double v)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:{s:f}}", "test", test, "kind", kind,
			 "phase", "run", "state", "done", "a", a, "b", b, "rail", rail, "metrics",
			 field, v);
}

/* A report holding rows as its results. */
static void wrap(json_t **rows)
{
	*rows = json_pack("{s:o}", "results", *rows);
}

/* Beyond the tolerance only: bandwidth down 6 % regresses at 5 %, down 4 % does not; latency
 * up 11 % regresses at 10 %; a latency that fell or a row only one side has is not. */
static void test_compare(void **state)
{
	json_t *base = json_array(), *cur = json_array(), *c, *m;
	size_t i;
	int regressed = 0;

	(void)state;
	json_array_append_new(base, row("bw", "bw", "n1", "n2", 0, "gbps", 100.0));
	json_array_append_new(cur, row("bw", "bw", "n1", "n2", 0, "gbps", 94.0));
	json_array_append_new(base, row("bw", "bw", "n1", "n2", 1, "gbps", 100.0));
	json_array_append_new(cur, row("bw", "bw", "n1", "n2", 1, "gbps", 96.0));
	json_array_append_new(base, row("lat", "lat", "n1", "n2", 0, "p99_us", 10.0));
	json_array_append_new(cur, row("lat", "lat", "n1", "n2", 0, "p99_us", 11.1));
	json_array_append_new(base, row("lat", "lat", "n1", "n3", 0, "p99_us", 10.0));
	json_array_append_new(cur, row("lat", "lat", "n1", "n3", 0, "p99_us", 8.0));
	json_array_append_new(cur, row("lat", "lat", "n2", "n3", 0, "p99_us", 50.0));
	wrap(&base);
	wrap(&cur);
	c = so_compare(base, cur, SO_TOLERANCE_BW_PCT, SO_TOLERANCE_LAT_PCT);
	assert_non_null(c);
	assert_int_equal(json_array_size(json_object_get(c, "metrics")), 4);
	json_array_foreach(json_object_get(c, "metrics"), i, m) regressed +=
		json_is_true(json_object_get(m, "regressed"));
	assert_int_equal(regressed, 2);
	assert_int_equal(json_array_size(json_object_get(c, "regressions")), 2);
	/* Worst first: latency +11 % before bandwidth -6 %. */
	assert_string_equal(JS(json_array_get(json_object_get(c, "regressions"), 0), "field"),
			    "p99_us");
	m = json_array_get(json_object_get(c, "regressions"), 1);
	assert_string_equal(JS(m, "field"), "gbps");
	assert_true(json_real_value(json_object_get(m, "delta_pct")) < -5.9);
	json_decref(c);
	json_decref(base);
	json_decref(cur);
}

/* A revalidation whose bandwidth fell 31 % (tolerance 5 %) and whose p99 rose 2541 %: the
 * regressions come worst first, and the verdict is "regressed" although the campaign passed;
 * with validation.tolerance.regressions: inform it is the campaign's own. A failing campaign
 * stays "fail"; an incomplete one that regressed is "regressed"; nothing regressed, the
 * campaign's verdict. A failed configuration check regresses whatever the mode. */
static void test_revalidation_verdict(void **state)
{
	json_t *base = json_array(), *cur = json_array(), *c, *regs, *mode;
	char *line;

	(void)state;
	json_array_append_new(base, row("pair-bw", "bw", "n1", "n2", 0, "gbps", 9.41));
	json_array_append_new(cur, row("pair-bw", "bw", "n1", "n2", 0, "gbps", 6.49));
	json_array_append_new(base, row("pair-lat", "lat", "n1", "n2", 0, "p99_us", 10.0));
	json_array_append_new(cur, row("pair-lat", "lat", "n1", "n2", 0, "p99_us", 264.1));
	/* Not per rail: rail null in both. */
	json_object_set_new(json_array_get(base, 1), "rail", json_null());
	json_object_set_new(json_array_get(cur, 1), "rail", json_null());
	json_array_append_new(base, row("pair-bw", "bw", "n1", "n3", 0, "gbps", 9.41));
	json_array_append_new(cur, row("pair-bw", "bw", "n1", "n3", 0, "gbps", 9.40));
	wrap(&base);
	wrap(&cur);
	c = so_compare(base, cur, SO_TOLERANCE_BW_PCT, SO_TOLERANCE_LAT_PCT);
	assert_non_null(c);
	regs = json_object_get(c, "regressions");
	assert_int_equal(json_array_size(json_object_get(c, "metrics")), 3);
	assert_int_equal(json_array_size(regs), 2);
	/* Worst first: the latency's +2541 % before the bandwidth's -31 %. */
	assert_string_equal(JS(json_array_get(regs, 0), "field"), "p99_us");
	assert_string_equal(JS(json_array_get(regs, 1), "field"), "gbps");
	line = so_regression_line(json_array_get(regs, 1));
	assert_string_equal(line, "pair-bw.gbps n1 -> n2 rail 0: 9.41 -> 6.49 (-31.0 %)");
	free(line);
	line = so_regression_line(json_array_get(regs, 0));
	assert_string_equal(line, "pair-lat.p99_us n1 -> n2: 10 -> 264.1 (+2541.0 %)");
	free(line);

	assert_string_equal(so_revalidation_verdict("pass", json_array_size(regs), false, 0),
			    "regressed");
	assert_string_equal(so_revalidation_verdict("pass", json_array_size(regs), true, 0),
			    "pass");
	assert_string_equal(so_revalidation_verdict("fail", json_array_size(regs), false, 0),
			    "fail");
	assert_string_equal(so_revalidation_verdict("incomplete", 2, false, 0), "regressed");
	assert_string_equal(so_revalidation_verdict("incomplete", 2, true, 0), "incomplete");
	assert_string_equal(so_revalidation_verdict(NULL, 0, false, 0), "incomplete");
	assert_string_equal(so_revalidation_verdict("pass", 0, false, 0), "pass");
	assert_string_equal(so_revalidation_verdict("pass", 0, true, 1), "regressed");
	assert_string_equal(so_revalidation_verdict("fail", 0, false, 1), "fail");

	/* The mode as the campaign's options store it: inform only when it says so. */
	mode = json_string("inform");
	assert_string_equal(so_regressions_mode(mode), "inform");
	json_decref(mode);
	mode = json_string("warn");
	assert_string_equal(so_regressions_mode(mode), "fail");
	json_decref(mode);
	assert_string_equal(so_regressions_mode(NULL), "fail");
	json_decref(c);
	json_decref(base);
	json_decref(cur);
}

/* The same document built in another order gives the same bytes; they end with one newline,
 * parse back to the document, and dump again to themselves. */
static void test_canonical_bytes(void **state)
{
	json_t *a = json_pack("{s:s, s:f, s:[i, i], s:{s:s, s:n}}", "z", "last", "m", 1.08, "a", 1,
			      2, "k", "y", "é", "b");
	json_t *b = json_pack("{s:{s:n, s:s}, s:[i, i], s:f, s:s}", "k", "b", "y", "é", "a", 1, 2,
			      "m", 1.08, "z", "last");
	size_t la = 0, lb = 0, lc = 0;
	char *x = so_report_bytes(a, &la), *y = so_report_bytes(b, &lb), *z;
	json_t *back;
	char h1[SO_SHA256_TEXT_LEN], h2[SO_SHA256_TEXT_LEN];

	(void)state;
	assert_non_null(x);
	assert_non_null(y);
	assert_int_equal(la, lb);
	assert_memory_equal(x, y, la);
	assert_int_equal(x[la - 1], '\n');
	assert_true(la < 2 || x[la - 2] != '\n');
	assert_non_null(strstr(x, "1.08"));
	assert_null(strstr(x, "1.0800000"));
	back = json_loadb(x, la, 0, NULL);
	assert_true(json_equal(back, a));
	z = so_report_bytes(back, &lc);
	assert_int_equal(lc, la);
	assert_memory_equal(z, x, la);
	so_sha256_text(x, la, h1);
	so_sha256_text(y, lb, h2);
	assert_string_equal(h1, h2);
	x[3] ^= 1;
	so_sha256_text(x, la, h2);
	assert_string_not_equal(h1, h2);
	free(x);
	free(y);
	free(z);
	json_decref(a);
	json_decref(b);
	json_decref(back);
}

static void test_time(void **state)
{
	json_t *t = so_time_json(1764563400123LL), *z = so_time_json(0);

	(void)state;
	assert_string_equal(json_string_value(t), "2025-12-01T04:30:00.123Z");
	assert_true(json_is_null(z));
	json_decref(t);
}

/* Up to SO_RESULTS_LISTED_MAX rows every row is listed; beyond, only the rows not measured,
 * retests and those the verdict names, with per host and rail the mean, min and max of the
 * test's main field over the pairs the host was in. */
static void test_results_summarised(void **state)
{
	json_t *tests = json_pack("[{s:s, s:s}]", "name", "pair-lat", "kind", "lat");
	json_t *hosts = json_pack("[s, s, s, s]", "h0", "h1", "h2", "h3");
	json_t *ids = json_pack("[s, s, s, s]", "n0", "n1", "n2", "n3");
	json_t *eval = json_pack("{s:[{s:s, s:[{s:s, s:s, s:i}]}]}", "tests", "name", "pair-lat",
				 "failures", "a", "n1", "b", "n2", "rail", 0);
	static const size_t pa[6] = {0, 0, 0, 1, 1, 2}, pb[6] = {1, 2, 3, 2, 3, 3};
	const size_t total = SO_RESULTS_LISTED_MAX + 6000;
	struct so_results *r = so_results_new(tests, hosts, ids, eval, total);
	json_t *doc = json_object(), *small = json_object(), *e,
	       *m2 = json_pack("{s:f}", "p50_us", 3.0);
	json_t *m1 = json_pack("{s:f}", "p50_us", 1.0);
	const json_t *sum, *per;
	size_t i, named = 0;

	(void)state;
	assert_non_null(r);
	for (i = 0; i < total; i++) {
		size_t p = i % 6;
		struct so_row w = {.test = 0,
				   .a = pa[p],
				   .b = pb[p],
				   .rail = (int)(i / 6 % 2),
				   .phase = i == 7 ? "retest" : "run",
				   .role = "measure",
				   .state = i == 5 ? "failed" : "done",
				   .error = i == 5 ? "x" : NULL,
				   .metrics = pa[p] == 2 || pb[p] == 2 ? m2 : m1};

		named += p == 3 && w.rail == 0 && i != 7 && i != 5;
		assert_int_equal(so_results_add(r, &w), 0);
	}
	{
		struct so_row bad = {.test = 1, .phase = "run", .role = "measure", .state = "done"};

		assert_int_equal(so_results_add(r, &bad), -EINVAL);
	}
	assert_int_equal(so_results_finish(r, doc), 0);
	sum = json_object_get(doc, "results_summary");
	assert_int_equal(json_integer_value(json_object_get(sum, "rows_total")), total);
	/* the failed row, the retest, every row of the pair the verdict names */
	assert_int_equal(json_array_size(json_object_get(doc, "results")), named + 2);
	assert_int_equal(json_integer_value(json_object_get(sum, "rows_listed")), named + 2);
	per = json_object_get(sum, "per_host_rail");
	assert_int_equal(json_array_size(per), 4 * 2);
	json_array_foreach(per, i, e)
	{
		const char *h = json_string_value(json_object_get(e, "host"));

		assert_string_equal(json_string_value(json_object_get(e, "field")), "p50_us");
		if (strcmp(h, "h2") == 0)
			assert_true(json_real_value(json_object_get(e, "min")) == 3.0);
		else if (strcmp(h, "h3") == 0)
			assert_true(json_real_value(json_object_get(e, "max")) == 3.0 &&
				    json_real_value(json_object_get(e, "min")) == 1.0);
	}
	/* A campaign of three rows: all listed, no summary. */
	r = so_results_new(tests, hosts, ids, eval, 3);
	for (i = 0; i < 3; i++) {
		struct so_row w = {.test = 0,
				   .a = 0,
				   .b = 1,
				   .rail = -1,
				   .phase = "run",
				   .role = "measure",
				   .state = "done",
				   .metrics = m1};

		assert_int_equal(so_results_add(r, &w), 0);
	}
	assert_int_equal(so_results_finish(r, small), 0);
	assert_int_equal(json_array_size(json_object_get(small, "results")), 3);
	assert_true(json_is_null(json_object_get(small, "results_summary")));
	assert_true(json_is_null(
		json_object_get(json_array_get(json_object_get(small, "results"), 0), "rail")));
	json_decref(small);
	json_decref(doc);
	json_decref(m1);
	json_decref(m2);
	json_decref(tests);
	json_decref(hosts);
	json_decref(ids);
	json_decref(eval);
}

/* Two summarised reports compare host by host: a host whose mean latency rose 20 % regresses. */
static void test_compare_summaries(void **state)
{
	json_t *b = json_pack(
		"{s:[], s:{s:[{s:s, s:s, s:s, s:i, s:s, s:f}, {s:s, s:s, s:s, s:i, s:s, "
		"s:f}]}}",
		"results", "results_summary", "per_host_rail", "test", "pl", "kind", "lat", "host",
		"h1", "rail", 0, "field", "p50_us", "mean", 2.0, "test", "pl", "kind", "lat",
		"host", "h2", "rail", 0, "field", "p50_us", "mean", 2.0);
	json_t *c = json_deep_copy(b), *cmp;
	json_t *h2 = json_array_get(
		json_object_get(json_object_get(c, "results_summary"), "per_host_rail"), 1);

	(void)state;
	json_object_set_new(h2, "mean", json_real(2.4));
	cmp = so_compare(b, c, SO_TOLERANCE_BW_PCT, SO_TOLERANCE_LAT_PCT);
	assert_int_equal(json_array_size(json_object_get(cmp, "metrics")), 2);
	assert_int_equal(json_array_size(json_object_get(cmp, "regressions")), 1);
	assert_string_equal(JS(json_array_get(json_object_get(cmp, "regressions"), 0), "a"), "h2");
	json_decref(cmp);
	json_decref(b);
	json_decref(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_snapshot_h200),
		cmocka_unit_test(test_snapshot_diff_degraded),
		cmocka_unit_test(test_snapshot_empty),
		cmocka_unit_test(test_snapshot_gpudirect),
		cmocka_unit_test(test_drift_grouped),
		cmocka_unit_test(test_compare),
		cmocka_unit_test(test_revalidation_verdict),
		cmocka_unit_test(test_canonical_bytes),
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_results_summarised),
		cmocka_unit_test(test_compare_summaries),
	};

	if (!getenv("RAILYARD_SOURCE_DIR")) {
		fprintf(stderr, "RAILYARD_SOURCE_DIR not set (run under ctest); skipping\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
