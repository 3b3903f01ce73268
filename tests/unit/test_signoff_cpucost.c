/* Unit tests of controller/signoff/cpucost: a report's cpu_cost from a verdict's per-test
 * medians (bw tests with CPU figures only, unknown figures null, the line that says them), and
 * the HTML view showing it next to its test (and nothing for a report from before it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "controller/signoff/cpucost.h"
#include "controller/signoff/html.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *dist(double median, int n)
{
	return json_pack("{s:i, s:f, s:f, s:f, s:f}", "n", n, "min", median, "median", median,
			 "mad", 0.0, "max", median);
}

static json_t *evaluation(void)
{
	json_t *bw = json_pack("{s:s, s:s, s:{s:o, s:o, s:o, s:o, s:o, s:o, s:o}}", "name",
			       "pair-bw", "kind", "bw", "stats", "gbps", dist(14, 6),
			       "cpu_cores_client", dist(1.9, 6), "cpu_cores_server", dist(1.7, 6),
			       "cpu_s_per_gb_client", dist(0.13, 6), "cpu_s_per_gb_server",
			       dist(0.12, 6), "cpu_thread_cores_client", dist(0.31, 6),
			       "cpu_thread_cores_server", dist(0.42, 0));
	json_t *old = json_pack("{s:s, s:s, s:{s:o}}", "name", "old-bw", "kind", "bw", "stats",
				"gbps", dist(10, 3));
	json_t *lat = json_pack("{s:s, s:s, s:{s:o, s:o}}", "name", "pair-lat", "kind", "lat",
				"stats", "p50_us", dist(2, 6), "cpu_cores_client", dist(1, 6));
	json_t *ev = json_pack("{s:[o, o, o]}", "tests", lat, bw, old);

	assert_non_null(ev);
	return ev;
}

static void test_from_medians(void **state)
{
	json_t *ev = evaluation(), *cost, *e;

	(void)state;
	cost = so_cpu_cost(ev, "tcp");
	assert_non_null(cost);
	/* the lat test and the bw test without CPU figures (an older agent) are left out */
	assert_int_equal(json_array_size(cost), 1);
	e = json_array_get(cost, 0);
	assert_string_equal(json_string_value(json_object_get(e, "test")), "pair-bw");
	assert_string_equal(json_string_value(json_object_get(e, "transport")), "tcp");
	assert_int_equal(json_integer_value(json_object_get(e, "pairs")), 6);
	assert_true(json_real_value(json_object_get(e, "gbps")) == 14);
	assert_true(json_real_value(json_object_get(json_object_get(e, "client"), "cores")) == 1.9);
	assert_true(json_real_value(json_object_get(json_object_get(e, "server"), "s_per_gb")) ==
		    0.12);
	/* n = 0: no median, null rather than 0 */
	assert_true(json_is_null(json_object_get(json_object_get(e, "server"), "thread_cores")));
	assert_string_equal(
		json_string_value(json_object_get(e, "text")),
		"tcp pair-bw: 14 Gb/s for 1.9 cores on the client (0.13 CPU-s/GB) and "
		"1.7 on the server (0.12 CPU-s/GB), host-wide; benchmark threads 0.31 + "
		"unknown cores (medians over 6 pairs)");
	json_decref(cost);
	/* no transport, no tests */
	cost = so_cpu_cost(ev, NULL);
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(cost, 0), "text")),
			       "pair-bw: 14 Gb/s"));
	json_decref(cost);
	json_decref(ev);
	cost = so_cpu_cost(NULL, "tcp");
	assert_int_equal(json_array_size(cost), 0);
	json_decref(cost);
}

static char *render(const json_t *doc)
{
	char *s = json_dumps(doc, 0), *html = NULL, err[256];
	size_t n = 0;

	assert_non_null(s);
	assert_int_equal(so_html_render(s, strlen(s), &html, &n, err, sizeof(err)), 0);
	free(s);
	return html;
}

/* The fixture report (before cpu_cost) shows none; with one for its bw test, the line, escaped,
 * under that test. */
static void test_html(void **state)
{
	json_error_t je;
	json_t *doc = json_load_file(SIGNOFF_FIXTURE, 0, &je), *t;
	const char *bw = NULL;
	char *html;
	size_t i;

	(void)state;
	assert_non_null(doc);
	html = render(doc);
	assert_null(strstr(html, "class=\"cpu\""));
	free(html);
	json_array_foreach(json_object_get(json_object_get(doc, "evaluation"), "tests"), i, t)
	{
		if (!bw && strcmp(json_string_value(json_object_get(t, "kind")), "bw") == 0)
			bw = json_string_value(json_object_get(t, "name"));
	}
	assert_non_null(bw);
	json_object_set_new(doc, "cpu_cost",
			    json_pack("[{s:s, s:s}]", "test", bw, "text", "tcp x: 1 Gb/s <for> 2"));
	html = render(doc);
	assert_non_null(strstr(html, "<p class=\"cpu\">CPU cost: tcp x: 1 Gb/s &lt;for&gt; 2</p>"));
	free(html);
	json_decref(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_from_medians),
		cmocka_unit_test(test_html),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
