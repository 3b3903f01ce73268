/* Unit tests of controller/signoff/html: the fixture report (tests/fixtures/signoff/report.json)
 * renders with its verdict, failing node, one heatmap cell per measured pair, rail and test, the
 * failing cells outlined, configuration drift highlighted and the verification commands; host
 * names are escaped; bad input is refused with the reason; members of the wrong type anywhere
 * in the tree render as "?" without a crash; more than 32 hosts give a strip, not a matrix; a
 * report that summarises its results (results_summary) gets per-rail strips of per-host means
 * and a histogram of them, and survives the same mutations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <math.h>

#include "common/signoff/verify.h"
#include "common/util/error.h"
#include "controller/signoff/html.h"
#include "controller/signoff/snapshot.h"

#ifndef SIGNOFF_FIXTURE
#define SIGNOFF_FIXTURE "tests/fixtures/signoff/report.json"
#endif

static const char *fixture_path = SIGNOFF_FIXTURE;

static char *read_fixture(size_t *ret_len)
{
	FILE *f = fopen(fixture_path, "rb");
	char *buf = malloc(1 << 20);
	size_t n;

	assert_non_null(f);
	assert_non_null(buf);
	n = fread(buf, 1, (1 << 20) - 1, f);
	assert_true(n > 0 && feof(f));
	fclose(f);
	buf[n] = '\0';
	*ret_len = n;
	return buf;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static bool has_ci(const char *hay, const char *needle)
{
	for (size_t n = strlen(needle); *hay; hay++) {
		if (strncasecmp(hay, needle, n) == 0)
			return true;
	}
	return false;
}

/* Render, expect success and a well-formed, self-contained page. Caller frees. */
/* text as the page escapes it (the verification commands hold & and '). Caller frees. */
static char *html_escaped(const char *text)
{
	char *out = malloc(6 * strlen(text) + 1), *p = out;

	assert_non_null(out);
	for (; *text; text++) {
		const char *rep = *text == '&' ? "&amp;" : *text == '\'' ? "&#39;" : NULL;

		if (rep)
			p = stpcpy(p, rep);
		else
			*p++ = *text;
	}
	*p = '\0';
	return out;
}

static char *render_ok(const char *json, size_t len)
{
	char err[256] = "", *html = NULL;
	size_t n = 0;
	int r = so_html_render(json, len, &html, &n, err, sizeof(err));

	if (r != 0)
		fail_msg("render: %d: %s", r, err);
	assert_non_null(html);
	assert_int_equal(strlen(html), n);
	assert_true(strncmp(html, "<!DOCTYPE html>", 15) == 0);
	assert_true(n > 20 && strcmp(html + n - 8, "</html>\n") == 0);
	assert_false(has_ci(html, "<script"));
	assert_null(strstr(html, "http://"));
	assert_null(strstr(html, "https://"));
	assert_false(has_ci(html, "@font-face"));
	return html;
}

static char *render_doc(const json_t *doc)
{
	char *s = json_dumps(doc, JSON_SORT_KEYS | JSON_INDENT(2)), *html;

	assert_non_null(s);
	html = render_ok(s, strlen(s));
	free(s);
	return html;
}

/* The title of every heatmap cell: "a → b rail r: ..."; n cells. */
static void check_cell_count(const char *html, size_t n)
{
	size_t cells = 0;

	for (const char *p = strstr(html, "<rect class=\"cell"); p;
	     p = strstr(p + 1, "<rect class=\"cell")) {
		const char *t = strstr(p, "<title>"), *end = strstr(p, "</title>");
		const char *arrow = strstr(t, " → "), *rail = strstr(t, " rail ");

		assert_true(t && end && t < end && t - p < 200);
		assert_true(arrow && arrow < end && rail && rail < end && arrow < rail);
		cells++;
	}
	assert_int_equal(cells, n);
}

static void check_cell_titles(const char *html)
{
	check_cell_count(html, 24); /* 6 pairs x 2 rails x 2 tests */
}

/* Every failing cell carries the marks that need no colour: a matrix cell its double outline
 * and a ✕ drawn right after it, a strip's host a ✕ right above it; no passing cell has one. */
static void check_marks(const char *html)
{
	for (const char *p = strstr(html, "<rect class=\"cell"); p;
	     p = strstr(p + 1, "<rect class=\"cell")) {
		const char *end = strstr(p, "</rect>"), *eol = strchr(p, '\n');
		bool bad = strncmp(p, "<rect class=\"cell bad", 21) == 0;
		const char *mark = strstr(end, ">✕</text>");

		assert_true(end && eol && end < eol);
		assert_int_equal(strncmp(end + 7, "<rect class=\"failmark\"", 22) == 0, bad);
		assert_int_equal(mark && mark < eol, bad);
	}
	for (const char *p = strstr(html, "<rect class=\"hostcell"); p;
	     p = strstr(p + 1, "<rect class=\"hostcell")) {
		bool bad = strncmp(p, "<rect class=\"hostcell bad", 25) == 0;
		const char *before = p - strlen(">✕</text>");

		assert_int_equal(strncmp(before, ">✕</text>", strlen(">✕</text>")) == 0, bad);
	}
}

/* How to verify comes before any raw JSON, which is last and collapsed; no value is "?". */
static void check_order_and_values(const char *html)
{
	const char *verify = strstr(html, "id=\"verify\""),
		   *raw = strstr(html, "<pre class=\"json\"");
	const char *details = strstr(html, "<details class=\"raw\">");

	assert_non_null(verify);
	assert_non_null(raw);
	assert_non_null(details);
	assert_true(verify < details && details < raw);
	assert_null(strstr(verify, "<h2 id=\"heatmaps\""));
	assert_null(strchr(html, '?'));
	assert_null(strstr(html, "e+0")); /* numbers in plain decimal */
	assert_null(strstr(html, "&lt;-&gt;"));
}

/* WCAG 2 relative luminance of "#rrggbb", and the contrast ratio of two. */
static double luminance(const char *hex)
{
	static const double w[3] = {0.2126, 0.7152, 0.0722};
	unsigned rgb[3];
	double l = 0;

	assert_int_equal(sscanf(hex, "#%2x%2x%2x", &rgb[0], &rgb[1], &rgb[2]), 3);
	for (size_t i = 0; i < 3; i++) {
		double c = rgb[i] / 255.0;

		l += w[i] * (c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4));
	}
	return l;
}

static double contrast(double a, double b)
{
	return a > b ? (a + 0.05) / (b + 0.05) : (b + 0.05) / (a + 0.05);
}

/* The lightest failing fill and the darkest passing fill of the matrix cells in [from, to). */
static void fill_range(const char *from, const char *to, double *ret_fail_max, double *ret_pass_min)
{
	*ret_fail_max = -1;
	*ret_pass_min = 2;
	for (const char *p = strstr(from, "<rect class=\"cell"); p && p < to;
	     p = strstr(p + 1, "<rect class=\"cell")) {
		const char *f = strstr(p, " fill=\"#");
		double l;

		if (strncmp(p, "<rect class=\"cell bad novalue", 29) == 0 ||
		    strncmp(p, "<rect class=\"cell novalue", 25) == 0)
			continue;
		assert_non_null(f);
		l = luminance(f + 7);
		if (strncmp(p, "<rect class=\"cell bad", 21) == 0)
			*ret_fail_max = l > *ret_fail_max ? l : *ret_fail_max;
		else
			*ret_pass_min = l < *ret_pass_min ? l : *ret_pass_min;
	}
}

static void test_fixture(void **state)
{
	size_t len;
	char *json = read_fixture(&len), *html, *recipe;

	(void)state;
	html = render_ok(json, len);
	fprintf(stderr, "fixture page: %zu bytes (report %zu bytes)\n", strlen(html), len);
	/* Verdict first and big. */
	assert_non_null(strstr(html, "<section class=\"verdict fail\" id=\"verdict\">\n"
				     "<div class=\"big\">fail</div>"));
	assert_true(strstr(html, "class=\"verdict fail\"") < strstr(html, "id=\"failures\""));
	assert_non_null(strstr(html, "verbs (RDMA)"));
	assert_non_null(strstr(html, "<li>pair-lat: rail gpu-node-03 rail 1 (mlx5_1) is bad"));
	/* The failing node with its failing rail and reasons in words, a list, before any of the
	 * report's facts; the test's name said once in a reason. */
	assert_non_null(strstr(html, "<b class=\"node\">gpu-node-03</b> <span class=\"state "
				     "fail\">FAIL</span>"));
	assert_non_null(strstr(html,
			       "rail 1 (mlx5_1) <span class=\"state fail\">FAIL</span><ul "
			       "class=\"reasons\"><li>pair-lat: fails with 3 of 3 peers; e.g. "
			       "p99_us 14.5, not ≤ 4.62 (2.1 × min 2.2)</li>"));
	assert_null(strstr(html, "e.g. pair-lat: "));
	assert_true(strstr(html, "<b class=\"node\">gpu-node-03</b>") <
		    strstr(html, "id=\"report\""));
	assert_true(strstr(html, "id=\"failures\"") < strstr(html, "CA fingerprint"));
	assert_non_null(strstr(html, "1 node and 6 failing pairs fail the rules: listed below."));
	/* Printed as shown: colours kept, no map or table split across pages. */
	assert_non_null(strstr(html, "@media print{"));
	assert_non_null(strstr(html, "print-color-adjust:exact"));
	assert_non_null(
		strstr(html, "svg,table,dl,.verdict,.failed-list>li,pre{break-inside:avoid"));
	/* Failures map node ids to host names. */
	assert_non_null(strstr(html,
			       "<tr class=\"fail\"><td>gpu-node-01</td><td>gpu-node-03</td>"
			       "<td>1</td><td>a bad node or rail at one end</td><td>pair-lat: "
			       "p99_us 14.5, not ≤ 4.62"));
	assert_null(strstr(html, "<td>n-03</td>"));
	/* Times with their zone. */
	assert_non_null(strstr(html, "<span class=\"t\">2026-12-01 04:30:00 UTC</span>"));
	/* Rules. */
	assert_non_null(strstr(html,
			       "<td>pair-bw.gbps</td><td>&gt;=</td><td>0.93</td>"
			       "<td>median</td><td>362.7 (0.93 x median 389.9)</td><td>12</td>"
			       "<td class=\"flag\">3</td>"));
	/* Heatmaps: every measured pair per rail per test, the three pairs of gpu-node-03 on
	 * rail 1 outlined in each test. */
	check_cell_titles(html);
	assert_int_equal(count(html, "<title>gpu-node-01 → gpu-node-02 rail 0: "), 2);
	assert_int_equal(count(html, "<title>gpu-node-01 → gpu-node-02 rail 1: 392.1 Gb/s</title>"),
			 1);
	assert_int_equal(count(html, "<title>gpu-node-01 → gpu-node-02 rail 0: 392.4 Gb/s</title>"),
			 1);
	/* The latency maps draw p99_us, the field the rule judges. */
	assert_int_equal(count(html, "<title>gpu-node-01 → gpu-node-03 rail 1: 14.5 µs [failing]"),
			 1);
	assert_int_equal(count(html, "<rect class=\"cell bad\""), 6);
	assert_int_equal(count(html, "[failing]</title></rect>"), 6);
	check_marks(html);
	for (const char *p = strstr(html, "<rect class=\"cell bad\""); p;
	     p = strstr(p + 1, "<rect class=\"cell bad\"")) {
		const char *t = strstr(p, "<title>");

		assert_true(strncmp(strstr(t, " rail ") - 11, "gpu-node-03", 11) == 0 ||
			    strncmp(t + 7, "gpu-node-03", 11) == 0);
		assert_true(strncmp(strstr(t, " rail "), " rail 1:", 8) == 0);
	}
	assert_int_equal(count(html, "<h4>pair-lat, rail "), 2);
	assert_int_equal(count(html, "<h4>pair-bw, rail "), 2);
	/* The latency histogram with the p99 rule's threshold. */
	assert_int_equal(count(html, "class=\"threshold\""), 1);
	assert_non_null(strstr(html, "p99_us threshold 4.62"));
	/* Values printed in the cells (3 significant digits), the legend tied to the rule. */
	assert_non_null(strstr(html, "fill=\"#fff\">184</text>"));
	assert_non_null(strstr(html, ">colour: margin to the rule gbps ≥ 370 Gb/s</text>"));
	assert_non_null(strstr(html, ">fails beyond the threshold 4.62 µs</text>"));
	assert_non_null(strstr(html, ">median 389.9 Gb/s (dashed tick)</text>"));
	assert_non_null(strstr(html, ">min 2.2 µs (dashed tick)</text>"));
	assert_null(strstr(html, "over"
				 " a cell")); /* no hover: the page is archived and printed */
	assert_false(has_ci(html, "hover"));
	/* Configuration: gpu-node-04's OFED and MTU differ from the majority; gpu-node-03's PCIe
	 * link is degraded. */
	assert_int_equal(count(html, "<td class=\"differs\">24.07-0.6.1.0</td>"), 1);
	assert_int_equal(count(html, "<td>24.10-1.1.4.0</td>"), 3);
	assert_int_equal(count(html, "<td class=\"differs\">1024, 4096</td>"), 1);
	assert_int_equal(count(html, "<td class=\"differs flag\">mlx5_1 Gen4 x16 of Gen5 x16</td>"),
			 1);
	assert_int_equal(count(html, "class=\"differs"), 3);
	/* No revalidation; provenance; the verification commands. */
	assert_null(strstr(html, "id=\"revalidation\""));
	assert_non_null(strstr(html, "<td>h100-base</td><td>3.1</td>"));
	assert_non_null(strstr(html, "<summary>4 nodes</summary>gpu-node-01, gpu-node-02"));
	assert_non_null(strstr(html, "&quot;acceptance&quot;: ["));
	check_order_and_values(html);
	/* The verification commands: the railyard verifier, and the stock-OpenSSL recipe whole,
	 * signer check included (the signature check alone accepts a node's certificate). */
	recipe = html_escaped(SO_VERIFY_OPENSSL);
	assert_non_null(strstr(html, recipe));
	assert_non_null(strstr(recipe, "-signer signer.pem"));
	assert_non_null(strstr(recipe, "-ext extendedKeyUsage"));
	assert_non_null(strstr(html, "<pre>" SO_VERIFY_RAILYARD "</pre>"));
	assert_int_equal(count(html, "openssl cms -verify"), 1);
	free(recipe);
	free(html);
	free(json);
}

/* A host name that is markup stays text everywhere it appears. */
static void test_escaped(void **state)
{
	static const char evil[] = "<script>alert(1)</script>";
	size_t len, n = 0;
	char *json = read_fixture(&len), *out = malloc(2 * len), *html;

	(void)state;
	assert_non_null(out);
	for (const char *p = json; *p;) {
		if (strncmp(p, "gpu-node-03", 11) == 0) {
			memcpy(out + n, evil, sizeof(evil) - 1);
			n += sizeof(evil) - 1;
			p += 11;
		} else {
			out[n++] = *p++;
		}
	}
	html = render_ok(out, n);
	assert_true(count(html, "&lt;script&gt;alert(1)&lt;/script&gt;") > 10);
	check_cell_titles(html);
	assert_int_equal(count(html, "<rect class=\"cell bad\""), 6);
	free(html);
	free(out);
	free(json);
}

static int render_err(const char *json, char *err, size_t errlen)
{
	char *html = (char *)"untouched";
	size_t n = 12345;
	int r = so_html_render(json, strlen(json), &html, &n, err, errlen);

	assert_string_equal(html, "untouched");
	assert_int_equal(n, 12345);
	return r;
}

static void test_bad_input(void **state)
{
	char err[256];

	(void)state;
	assert_int_equal(
		render_err("{\n  \"schema\": \"railyard-signoff/1\",\n  oops\n}", err, sizeof(err)),
		-RY_E_INVALID);
	assert_true(strncmp(err, "not JSON: 3:", 12) == 0);
	assert_int_equal(render_err("", err, sizeof(err)), -RY_E_INVALID);
	assert_true(strncmp(err, "not JSON: 1:", 12) == 0);
	assert_int_equal(render_err("{\"a\": 1, \"a\": 2}", err, sizeof(err)), -RY_E_INVALID);
	assert_non_null(strstr(err, "not JSON"));
	assert_int_equal(render_err("[1]", err, sizeof(err)), -RY_E_INVALID);
	assert_non_null(strstr(err, "object"));
	assert_int_equal(render_err("{\"id\": \"so-1\"}", err, sizeof(err)), -RY_E_INVALID);
	assert_string_equal(err, "missing member: schema");
	assert_int_equal(render_err("{\"schema\": \"railyard-signoff/3\"}", err, sizeof(err)),
			 -RY_E_INVALID);
	assert_non_null(strstr(err, "schema"));
	assert_non_null(strstr(err, "railyard-signoff/3"));
	assert_int_equal(render_err("{\"schema\": 1}", err, sizeof(err)), -RY_E_INVALID);
	assert_non_null(strstr(err, "schema"));
	assert_int_equal(render_err("{\"schema\": \"railyard-signoff/1\", \"id\": \"so-1\", "
				    "\"kind\": \"signoff\", \"cluster\": \"c\", "
				    "\"created_at\": \"2026-12-01T00:00:00Z\"}",
				    err, sizeof(err)),
			 -RY_E_INVALID);
	assert_string_equal(err, "missing member: verdict");
	/* No errbuf at all, and one too small for the reason. */
	assert_int_equal(render_err("nope", NULL, 0), -RY_E_INVALID);
	assert_int_equal(render_err("nope", err, 4), -RY_E_INVALID);
	assert_int_equal(strlen(err), 3);
}

/* Wrong types where the brief names them, and a revalidation whose members are odd. */
static void test_wrong_types(void **state)
{
	size_t len;
	char *json = read_fixture(&len), *html;
	json_t *doc = json_loadb(json, len, 0, NULL);

	(void)state;
	assert_non_null(doc);
	json_object_set_new(doc, "results", json_integer(5));
	json_object_set_new(doc, "nodes", json_string("x"));
	json_object_set_new(doc, "summary", json_object());
	json_object_set_new(doc, "verdict", json_integer(3));
	json_object_set_new(doc, "comparison", json_string("x"));
	json_object_set_new(json_object_get(doc, "evaluation"), "tests", json_true());
	html = render_doc(doc);
	assert_non_null(strstr(html, "class=\"verdict unknown\""));
	assert_non_null(strstr(html, "<div class=\"big\">unknown verdict</div>"));
	assert_non_null(strstr(html, "id=\"revalidation\""));
	assert_non_null(strstr(html, "Nodes: not reported"));
	assert_null(strchr(html, '?'));
	assert_null(strstr(html, "<rect class=\"cell"));
	free(html);
	json_decref(doc);
	free(json);
}

static void test_revalidation(void **state)
{
	size_t len;
	char *json = read_fixture(&len), *html;
	json_t *doc = json_loadb(json, len, 0, NULL);

	(void)state;
	assert_non_null(doc);
	json_object_set_new(doc, "kind", json_string("revalidation"));
	json_object_set_new(doc, "baseline",
			    json_pack("{s:s, s:s, s:s, s:s}", "id", "so-0001", "sha256", "ab12",
				      "created_at", "2026-06-01T00:00:00Z", "verdict", "pass"));
	json_object_set_new(
		doc, "comparison",
		json_pack("{s:{s:i, s:i}, s:[], s:[{s:s, s:s, s:s, s:s, s:i, s:f, s:f, s:f, s:b}],"
			  " s:[{s:s, s:s, s:s, s:[s]}], s:[s], s:[]}",
			  "tolerance", "bw_pct", 5, "lat_pct", 10, "metrics", "regressions", "test",
			  "pair-bw", "field", "gbps", "a", "gpu-node-01", "b", "gpu-node-03",
			  "rail", 1, "baseline", 391.0, "current", 183.6, "delta_pct", -53.0,
			  "regressed", 1, "drift", "field", "ofed.version", "from", "24.10", "to",
			  "<b>25.01</b>", "nodes", "gpu-node-04", "nodes_added", "gpu-node-05",
			  "nodes_removed"));
	json_object_set_new(
		json_object_get(doc, "comparison"), "checks",
		json_pack("[{s:{s:s, s:s}, s:s, s:b, s:s, s:[{s:s, s:s, s:s, s:{s:s, s:s}}], "
			  "s:[s]}]",
			  "playbook", "name", "h100-base", "version", "3.1", "deployment", "d-1",
			  "check_mode", 1, "state", "failed", "failed", "host", "gpu-node-03",
			  "state", "failed", "message", "stopped at a failed step", "step", "name",
			  "hca ports active at ndr", "message", "mlx5_3 port 1 is DOWN", "differ",
			  "gpu-node-02"));
	html = render_doc(doc);
	assert_non_null(strstr(html, "<h1>Revalidation: fixture</h1>"));
	/* A failed check names the node, the step and its message, before the failures. */
	assert_non_null(strstr(html, "<li><b>gpu-node-03</b>: step “hca ports active at ndr”: "
				     "mlx5_3 port 1 is DOWN</li>"));
	assert_non_null(strstr(html, " 1 node differs from it: gpu-node-02</li>"));
	assert_true(strstr(html, "id=\"check-steps\"") < strstr(html, "id=\"failures\""));
	assert_non_null(strstr(html, "<dd>so-0001</dd>"));
	assert_non_null(strstr(html, "<td>gpu-node-01</td><td>gpu-node-03</td><td>1</td>"
				     "<td>391</td><td>183.6</td><td>-53</td>"));
	assert_non_null(strstr(html, "<td>ofed.version</td><td>24.10 → &lt;b&gt;25.01&lt;/b&gt;"
				     "</td><td>gpu-node-04</td>"));
	assert_non_null(strstr(html, "added: gpu-node-05<br>removed: none</p>"));
	/* The regressions lead, before the failures; the tolerances in words. */
	assert_true(strstr(html, "id=\"regressions\"") < strstr(html, "id=\"failures\""));
	assert_non_null(strstr(html, "<dt>bandwidth tolerance</dt><dd>5 %</dd>"));
	assert_null(strchr(html, '?'));
	free(html);
	json_decref(doc);
	free(json);
}

/* A failed run is grey with an X and outlined. */
static void test_failed_cell(void **state)
{
	size_t len, i;
	char *json = read_fixture(&len), *html;
	json_t *doc = json_loadb(json, len, 0, NULL), *r;

	(void)state;
	assert_non_null(doc);
	json_array_foreach(json_object_get(doc, "results"), i, r)
	{
		if (strcmp(json_string_value(json_object_get(r, "test")), "pair-bw") == 0 &&
		    json_integer_value(json_object_get(r, "rail")) == 0 &&
		    strcmp(json_string_value(json_object_get(r, "b")), "gpu-node-02") == 0) {
			json_object_set_new(r, "state", json_string("failed"));
			json_object_set_new(r, "error", json_string("offline: gpu-node-02"));
		}
	}
	html = render_doc(doc);
	check_cell_titles(html);
	assert_int_equal(count(html, "<rect class=\"cell bad"), 7);
	/* Hatched, "no value", and marked as a failure. */
	assert_non_null(strstr(html, "<rect class=\"cell bad novalue\""));
	assert_non_null(strstr(html, "fill=\"url(#nv"));
	assert_non_null(strstr(html, "<title>gpu-node-01 → gpu-node-02 rail 0: no value, failed "
				     "(offline: gpu-node-02) [failing]</title></rect><rect "
				     "class=\"failmark\""));
	assert_non_null(strstr(html, ">no value</text>"));
	assert_non_null(strstr(html, ">no value (not measured)</text>"));
	check_marks(html);
	free(html);
	json_decref(doc);
	free(json);
}

/* Mutate every value of the fixture in turn into another type and render; with
 * SIGNOFF_MUTANT_STRIDE=k (the valgrind run) only every k-th mutant is rendered. */
static size_t mutations, stride = 1;

static json_t *wrong_value(size_t k)
{
	switch (k % 7) {
	case 0:
		return json_integer(5);
	case 1:
		return json_string("x<&>");
	case 2:
		return json_array();
	case 3:
		return json_object();
	case 4:
		return json_null();
	case 5:
		return json_real(-1e300);
	default:
		return json_real(1e300);
	}
}

static void render_mutant(json_t *root, bool schema)
{
	char *s, *html = NULL, err[256];
	size_t n;
	int r;

	if (mutations++ % stride)
		return;
	s = json_dumps(root, JSON_SORT_KEYS);
	assert_non_null(s);
	r = so_html_render(s, strlen(s), &html, &n, err, sizeof(err));
	if (schema) {
		assert_int_equal(r, -RY_E_INVALID);
	} else {
		if (r != 0)
			fail_msg("mutant %zu: %d %s", mutations, r, err);
		assert_false(has_ci(html, "<script"));
		assert_true(strcmp(html + n - 8, "</html>\n") == 0);
	}
	free(html);
	free(s);
}

static void mutate(json_t *root, json_t *v, bool top)
{
	const char *key;
	json_t *x;
	size_t i;

	json_object_foreach(v, key, x)
	{
		json_incref(x);
		for (size_t k = 0; k < 2; k++) {
			json_object_set_new(v, key, wrong_value(mutations + 3 * k));
			render_mutant(root, top && strcmp(key, "schema") == 0);
		}
		json_object_set_new(v, key, x);
		mutate(root, x, false);
	}
	json_array_foreach(v, i, x)
	{
		json_incref(x);
		json_array_set_new(v, i, wrong_value(mutations));
		render_mutant(root, false);
		json_array_set_new(v, i, x);
		mutate(root, x, false);
	}
}

static void test_mutations(void **state)
{
	size_t len;
	char *json = read_fixture(&len);
	json_t *doc = json_loadb(json, len, 0, NULL);

	(void)state;
	assert_non_null(doc);
	if (getenv("SIGNOFF_MUTANT_STRIDE"))
		stride = strtoul(getenv("SIGNOFF_MUTANT_STRIDE"), NULL, 10);
	stride = stride ? stride : 1;
	mutate(doc, doc, true);
	fprintf(stderr, "%zu mutants, %zu rendered\n", mutations,
		(mutations + stride - 1) / stride);
	assert_true(mutations > 800);
	json_decref(doc);
	free(json);
}

/* A report of one bandwidth test over n hosts, all pairs on one rail-less map. */
static json_t *hosts_doc(int n)
{
	json_t *doc = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:[]}", "schema", SO_SCHEMA, "id",
				"so-big", "kind", "signoff", "cluster", "big", "created_at",
				"2026-12-01T00:00:00Z", "verdict", "pass", "results");
	json_t *res = json_object_get(doc, "results");

	assert_non_null(doc);
	for (int i = 0; i < n; i++) {
		for (int j = i + 1; j < n; j++) {
			char a[16], b[16];

			snprintf(a, sizeof(a), "h%03d", i);
			snprintf(b, sizeof(b), "h%03d", j);
			json_array_append_new(
				res, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:n, s:{s:f}}",
					       "test", "pair-bw", "kind", "bw", "phase", "run", "a",
					       a, "b", b, "state", "done", "rail", "metrics",
					       "gbps", 300.0 + i + j));
		}
	}
	return doc;
}

/* More than 32 hosts: per-host medians in one strip per map; 32 keep the matrix. */
static void test_strip(void **state)
{
	json_t *doc = hosts_doc(70);
	char *html;

	(void)state;
	/* h000 → h001 did not run: both hosts are marked ✕ above the strip. */
	json_object_set_new(json_array_get(json_object_get(doc, "results"), 0), "state",
			    json_string("failed"));
	html = render_doc(doc);
	assert_null(strstr(html, "<rect class=\"cell"));
	assert_int_equal(count(html, "<rect class=\"hostcell"), 70);
	assert_int_equal(count(html, "<rect class=\"hostcell bad\""), 2);
	assert_non_null(strstr(html, "70 hosts: more than 32"));
	check_marks(html);
	assert_non_null(strstr(html, "<title>h002: median 337 Gb/s over 69 pairs</title>"));
	assert_non_null(
		strstr(html, "<title>h000: median 335.5 Gb/s over 68 pairs [failing]</title>"));
	assert_true(strlen(html) < 100000);
	free(html);
	json_decref(doc);

	doc = hosts_doc(33);
	html = render_doc(doc);
	assert_null(strstr(html, "<rect class=\"cell"));
	assert_int_equal(count(html, "<rect class=\"hostcell"), 33);
	free(html);
	json_decref(doc);

	doc = hosts_doc(32);
	html = render_doc(doc);
	assert_null(strstr(html, "<rect class=\"hostcell"));
	assert_int_equal(count(html, "<rect class=\"cell"), 32 * 31 / 2);
	free(html);
	json_decref(doc);
}

/* The fixture as a summarised report: results_summary.per_host_rail holds each host's mean,
 * min and max per test and rail computed from the fixture's 24 rows (gpu-node-02 on rail 0 of
 * pair-bw with one row not done), and results keeps 2 rows. */
static json_t *summary_doc(void)
{
	size_t len, i;
	char *json = read_fixture(&len);
	json_t *doc = json_loadb(json, len, 0, NULL), *rows, *r, *phr = json_array();
	json_t *listed = json_array();

	free(json);
	assert_non_null(doc);
	rows = json_object_get(doc, "results");
	json_array_foreach(rows, i, r)
	{
		const char *test = json_string_value(json_object_get(r, "test"));
		const char *kind = json_string_value(json_object_get(r, "kind"));
		const char *field = strcmp(kind, "bw") == 0 ? "gbps" : "p50_us";
		double v = json_number_value(json_object_get(json_object_get(r, "metrics"), field));
		json_int_t rail = json_integer_value(json_object_get(r, "rail"));

		for (size_t e = 0; e < 2; e++) {
			const char *host = json_string_value(json_object_get(r, e ? "b" : "a"));
			json_t *x = NULL, *y;
			size_t k;

			json_array_foreach(phr, k, y)
			{
				if (strcmp(json_string_value(json_object_get(y, "test")), test) ==
					    0 &&
				    strcmp(json_string_value(json_object_get(y, "host")), host) ==
					    0 &&
				    json_integer_value(json_object_get(y, "rail")) == rail)
					x = y;
			}
			if (!x) {
				x = json_pack("{s:s, s:s, s:s, s:I, s:s, s:i, s:i, s:f, s:f, s:f}",
					      "test", test, "kind", kind, "host", host, "rail",
					      rail, "field", field, "n", 0, "failed", 0, "mean",
					      0.0, "min", v, "max", v);
				json_array_append_new(phr, x);
			}
			json_int_t n = json_integer_value(json_object_get(x, "n"));
			double mean = json_number_value(json_object_get(x, "mean"));

			json_object_set_new(x, "n", json_integer(n + 1));
			json_object_set_new(x, "mean",
					    json_real((mean * (double)n + v) / (double)(n + 1)));
			if (v < json_number_value(json_object_get(x, "min")))
				json_object_set_new(x, "min", json_real(v));
			if (v > json_number_value(json_object_get(x, "max")))
				json_object_set_new(x, "max", json_real(v));
			if (strcmp(test, "pair-bw") == 0 && rail == 0 &&
			    strcmp(host, "gpu-node-02") == 0)
				json_object_set_new(x, "failed", json_integer(1));
		}
		if (rail == 1 &&
		    strcmp(json_string_value(json_object_get(r, "a")), "gpu-node-01") == 0 &&
		    strcmp(json_string_value(json_object_get(r, "b")), "gpu-node-03") == 0)
			json_array_append(listed, r);
	}
	assert_int_equal(json_array_size(phr), 16);
	assert_int_equal(json_array_size(listed), 2);
	json_object_set_new(doc, "results", listed);
	json_object_set_new(doc, "results_summary",
			    json_pack("{s:i, s:i, s:s, s:o}", "rows_total", 24, "rows_listed", 2,
				      "reason", "more than 8 rows <listed>", "per_host_rail", phr));
	return doc;
}

/* A summarised report: one strip per test and rail of per-host means, the hosts of failing
 * rows or pairs outlined, and a histogram of the per-host means of p50_us. */
static void test_summary(void **state)
{
	json_t *doc = summary_doc();
	char *html = render_doc(doc), *hist;
	size_t cells = 0, bars = 0;

	(void)state;
	assert_non_null(strstr(html,
			       "<p class=\"note summarised\">24 result rows; per-host means "
			       "shown (2 listed in full): more than 8 rows &lt;listed&gt;</p>"));
	assert_true(strstr(html, "24 result rows") < strstr(html, "<rect class=\"hostcell"));
	/* No matrix from the 2 listed rows: 4 hosts x 2 rails x 2 tests cells. */
	assert_null(strstr(html, "<rect class=\"cell"));
	for (const char *p = strstr(html, "<rect class=\"hostcell"); p;
	     p = strstr(p + 1, "<rect class=\"hostcell")) {
		const char *t = strstr(p, "<title>"), *end = strstr(p, "</title>");

		assert_true(t && end && t < end && t - p < 200);
		assert_true(strncmp(t, "<title>gpu-node-0", 17) == 0);
		assert_true(strncmp(t + 18, " rail ", 6) == 0);
		assert_non_null(strstr(t, ": mean "));
		assert_true(strstr(t, ": mean ") < end);
		cells++;
	}
	assert_int_equal(cells, 16);
	assert_int_equal(count(html, "<h4>pair-lat, rail "), 2);
	assert_int_equal(count(html, "<h4>pair-bw, rail "), 2);
	assert_int_equal(count(html, "<title>gpu-node-03 rail 1: "), 2);
	assert_int_equal(count(html, "<title>gpu-node-01 rail 0: "), 2);
	assert_non_null(strstr(html, "<title>gpu-node-03 rail 1: mean 10.3 µs over 3 pairs "
				     "(9.7…10.9) [failing]</title>"));
	assert_non_null(strstr(html, "<title>gpu-node-03 rail 1: mean 187.8 Gb/s over 3 pairs "
				     "(183.6…192) [failing]</title>"));
	assert_non_null(strstr(html, "<title>gpu-node-01 rail 0: mean 1.94 µs over 3 pairs "
				     "(1.91…1.97)</title>"));
	/* Outlined: gpu-node-03 on rail 1 in both tests (the verdict's bad rail; its failures are
	 * put on the node, so its peers stay plain), and gpu-node-02 on rail 0 of pair-bw, with a
	 * row not done. */
	assert_int_equal(count(html, "<rect class=\"hostcell bad\""), 3);
	assert_int_equal(count(html, "[failing]</title></rect>"), 3);
	check_marks(html);
	assert_non_null(strstr(html, "<title>gpu-node-02 rail 0: mean 390.8 Gb/s over 3 pairs "
				     "(389.6…392.4), 1 not done [failing]</title>"));
	for (const char *p = strstr(html, "<rect class=\"hostcell bad\""); p;
	     p = strstr(p + 1, "<rect class=\"hostcell bad\"")) {
		const char *t = strstr(p, "<title>");

		assert_true(strncmp(t + 18, " rail 1:", 8) == 0 ||
			    strncmp(t, "<title>gpu-node-02 rail 0:", 26) == 0);
	}
	assert_non_null(strstr(html, ">colour: margin to the rule gbps ≥ 370 Gb/s</text>"));
	/* No rule on p50_us (the rule judges p99_us, not in the summary): 0 to max. */
	assert_non_null(strstr(html, ">colour: no rule on p50_us: 0 to max (10.3 µs), lower is "
				     "better</text>"));
	/* The histogram: only p50_us, one value per host and rail. */
	hist = strstr(html, "id=\"latency\"");
	assert_non_null(hist);
	assert_non_null(strstr(hist, "per-host mean of p50_us over 4 hosts: 8 values"));
	assert_null(strstr(hist, "<title>p99_us "));
	assert_null(strstr(hist, "p99_us threshold"));
	for (const char *p = strstr(hist, "<title>p50_us "); p; p = strstr(p + 1, "<title>p50_us "))
		bars += strtoul(strstr(p, " µs: ") + strlen(" µs: "), NULL, 10);
	assert_int_equal(bars, 8);
	assert_int_equal(count(hist, "<h3>Test "), 1);
	/* The rest as before: the verdict's failures still name the pairs. */
	assert_non_null(strstr(html,
			       "<tr class=\"fail\"><td>gpu-node-01</td><td>gpu-node-03</td>"
			       "<td>1</td><td>a bad node or rail at one end</td><td>pair-lat: "
			       "p99_us 14.5, not ≤ 4.62"));
	free(html);

	/* A test without summary entries is drawn from its rows as before. */
	json_t *phr = json_object_get(json_object_get(doc, "results_summary"), "per_host_rail"), *x;
	size_t i = 0;

	while (i < json_array_size(phr)) {
		x = json_array_get(phr, i);
		if (strcmp(json_string_value(json_object_get(x, "test")), "pair-bw") == 0)
			json_array_remove(phr, i);
		else
			i++;
	}
	html = render_doc(doc);
	assert_int_equal(count(html, "<rect class=\"hostcell"), 8);
	check_cell_count(html, 1); /* pair-bw's one listed pair */
	assert_int_equal(count(html, "<h4>pair-bw, rail 1 (gbps, Gb/s)</h4>"), 1);
	free(html);
	json_decref(doc);
}

/* The mutations of test_mutations on the summarised report. */
static void test_summary_mutations(void **state)
{
	json_t *doc = summary_doc();
	size_t before = mutations;

	(void)state;
	mutate(doc, doc, true);
	fprintf(stderr, "%zu summary mutants\n", mutations - before);
	assert_true(mutations - before > 300);
	json_decref(doc);
}

/* Values at the ends of the doubles: log scales and colour spans must not overflow into a crash
 * or an undefined conversion. */
static void test_extremes(void **state)
{
	static const double vals[] = {1e-300, 1e300, -1e300, 0, 2.5};
	json_t *doc = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:[], s:{s:[{s:s, s:s, s:[{s:s, "
				"s:f}]}]}}",
				"schema", SO_SCHEMA, "id", "so-x", "kind", "signoff", "cluster",
				"x", "created_at", "2026-12-01T00:00:00Z", "verdict", "fail",
				"results", "evaluation", "tests", "name", "t", "kind", "lat",
				"rules", "metric", "t.p99_us", "threshold", 1e300);
	json_t *res = json_object_get(doc, "results");
	char *html;

	(void)state;
	assert_non_null(doc);
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		char b[16];

		snprintf(b, sizeof(b), "h%zu", i + 1);
		json_array_append_new(res, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, "
						     "s:{s:f, s:f}}",
						     "test", "t", "kind", "lat", "phase", "run",
						     "a", "h0", "b", b, "state", "done", "rail",
						     (json_int_t)INT64_MIN, "metrics", "p50_us",
						     vals[i], "p99_us", -vals[i]));
	}
	html = render_doc(doc);
	check_cell_count(html, 5);
	assert_int_equal(count(html, "class=\"threshold\""), 1);
	free(html);
	json_decref(doc);
}

/* The fixture with one more failure of pair-lat, gpu-node-01 ↔ gpu-node-02 on rail 0, that
 * the verdict calls transient (it failed, was retested and passed). */
static json_t *transient_doc(void)
{
	size_t len, i;
	char *json = read_fixture(&len);
	json_t *doc = json_loadb(json, len, 0, NULL), *t;

	free(json);
	assert_non_null(doc);
	json_array_foreach(json_object_get(json_object_get(doc, "evaluation"), "tests"), i, t)
	{
		if (strcmp(json_string_value(json_object_get(t, "name")), "pair-lat") == 0)
			json_array_append_new(
				json_object_get(t, "failures"),
				json_pack("{s:s, s:s, s:i, s:s, s:s}", "a", "n-01", "b", "n-02",
					  "rail", 0, "attributed", "transient", "reason",
					  "pair-lat: p99_us 9.1, not <= 4.62; retested: 2.2"));
	}
	return doc;
}

/* A report with failing pairs, as a customer reads it: the failures lead; verification before
 * any raw JSON; no "?"; every failing cell marked without colour; a transient is neither
 * outlined nor listed with the failures; the fills of passing and failing pairs differ in
 * luminance (WCAG 2 relative luminance from the cell's rgb fill). Luminance is what survives
 * every colour-vision deficiency and greyscale printing, and viridis is monotonic in it: a
 * pass is always lighter than a fail: passes take viridis from 0.45 up, so that even one with a
 * thin margin (pair-bw here: 5 %) is at least 3:1 from any fail; a fail is also told apart by
 * the ✕ and the outline (checked for every failing cell). */
static void test_failing_report(void **state)
{
	json_t *doc = transient_doc();
	char *html = render_doc(doc);
	const char *lat = strstr(html, "<h3>Test pair-lat</h3>\n<h4>");
	const char *end = strstr(html, "<h2 id=\"latency\">"), *tr;
	double fail_max, pass_min;

	(void)state;
	check_order_and_values(html);
	check_marks(html);
	/* The failing node and its reason come before the report's facts. */
	assert_true(strstr(html, "<b class=\"node\">gpu-node-03</b>") <
		    strstr(html, "<h2 id=\"report\">"));
	assert_true(strstr(html, "e.g. p99_us 14.5, not ≤ 4.62") < strstr(html, "seed"));
	/* Still 6 failing pairs; the transient is said apart. */
	assert_non_null(strstr(html, "6 failing pairs"));
	assert_non_null(strstr(html, "1 pair was retested and passed (transient, not counted as "
				     "failures)."));
	assert_int_equal(count(html, "<rect class=\"cell bad\""), 6);
	tr = strstr(html, "<h3>Retested and passed (transient, not a failure): pair-lat</h3>");
	assert_non_null(tr);
	assert_non_null(strstr(tr, "<tr class=\"transient\"><td>gpu-node-01</td><td>gpu-node-02"
				   "</td><td>0</td><td>transient: retested and passed</td>"));
	assert_null(strstr(html, "<tr class=\"fail\"><td>gpu-node-01</td><td>gpu-node-02</td>"));
	/* Its cell: not outlined, a neutral ↻, explained in the legend. */
	assert_non_null(strstr(html, "<rect class=\"cell\" "));
	tr = strstr(html, "<title>gpu-node-01 → gpu-node-02 rail 0: 2.2 µs [transient: retested "
			  "and passed]</title></rect><text class=\"transient\"");
	assert_non_null(tr);
	assert_non_null(strstr(html, ">transient: failed, retested and passed (not a failure)"));
	/* Pass and fail fills: 3:1 on pair-lat, and on every map of the report. */
	assert_true(lat && end && lat < end);
	fill_range(lat, end, &fail_max, &pass_min);
	assert_true(fail_max >= 0 && pass_min <= 1);
	fprintf(stderr, "pair-lat: lightest fail %.3f, darkest pass %.3f: contrast %.2f\n",
		fail_max, pass_min, contrast(fail_max, pass_min));
	assert_true(contrast(fail_max, pass_min) >= 3.0);
	fill_range(html, end, &fail_max, &pass_min);
	fprintf(stderr, "all maps: lightest fail %.3f, darkest pass %.3f: contrast %.2f\n",
		fail_max, pass_min, contrast(fail_max, pass_min));
	assert_true(pass_min > fail_max);
	assert_true(contrast(fail_max, pass_min) >= 3.0);
	free(html);
	json_decref(doc);
}

/* Nodes in natural order everywhere: gpu-node-9 before gpu-node-10. */
static void test_natural_order(void **state)
{
	size_t len, n = 0;
	char *json = read_fixture(&len), *out = malloc(2 * len), *html;
	const char *svg, *cfg;

	(void)state;
	assert_non_null(out);
	for (const char *p = json; *p;) {
		const char *to = strncmp(p, "gpu-node-01", 11) == 0   ? "gpu-node-9"
				 : strncmp(p, "gpu-node-04", 11) == 0 ? "gpu-node-10"
								      : NULL;

		if (to) {
			n += (size_t)(stpcpy(out + n, to) - (out + n));
			p += 11;
		} else {
			out[n++] = *p++;
		}
	}
	html = render_ok(out, n);
	cfg = strstr(html, "<table class=\"config\">");
	assert_non_null(cfg);
	assert_true(strstr(cfg, "<tr><td>gpu-node-02</td>") <
		    strstr(cfg, "<tr><td>gpu-node-9</td>"));
	assert_true(strstr(cfg, "<tr><td>gpu-node-9</td>") <
		    strstr(cfg, "<tr><td>gpu-node-10</td>"));
	/* The first map: rows 03, 9, 10 (the lower triangle has no row for the first node). */
	svg = strstr(html, "<svg");
	assert_non_null(svg);
	assert_true(strstr(svg, "text-anchor=\"end\">gpu-node-03</text>") <
		    strstr(svg, "text-anchor=\"end\">gpu-node-9</text>"));
	assert_true(strstr(svg, "text-anchor=\"end\">gpu-node-9</text>") <
		    strstr(svg, "text-anchor=\"end\">gpu-node-10</text>"));
	assert_null(strstr(svg, "text-anchor=\"end\">gpu-node-02</text>"));
	check_cell_titles(html);
	free(html);
	free(out);
	free(json);
}

/* Versions a vendor spells two ways are the same version; real differences stay. */
static void test_version_same(void **state)
{
	static const char *const same[][2] = {
		{"24.10-1.1.4.0", "24.10-1.1.4"},
		{"24.10-1.1.4", "24.10-1.1.4.0"},
		{"2.23.4", "2.23.4"},
		{"550.127.05", "550.127.5"},
		{"1.0", "1"},
		{"28.42.1000", "28.42.1000.0"},
		{"1.0.0", "1"},
		{"24.10.0-1.1.4", "24.10-1.1.4"},
	};
	static const char *const differ[][2] = {
		{"24.10-1.1.4.1", "24.10-1.1.4"},
		{"24.10-1.1.4.0", "24.07-0.6.1.0"},
		{"2.23.4", "2.23.40"},
		{"1.10", "1.1"},
		{"10.0", "1"},
		{"24.10-1.1.4.0.1", "24.10-1.1.4"},
		{"abc", "abc.0"},
		{"550.127.05", "560.35.03"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		if (!so_version_same(same[i][0], same[i][1]))
			fail_msg("%s and %s: not the same version", same[i][0], same[i][1]);
	}
	for (size_t i = 0; i < sizeof(differ) / sizeof(differ[0]); i++) {
		if (so_version_same(differ[i][0], differ[i][1]) ||
		    so_version_same(differ[i][1], differ[i][0]))
			fail_msg("%s and %s: the same version", differ[i][0], differ[i][1]);
	}
	assert_false(so_version_same(NULL, "1"));
	assert_true(so_version_same(NULL, NULL));
	assert_true(so_version_field("ofed.version"));
	assert_true(so_version_field("hca.mlx5_0.fw_ver"));
	assert_true(so_version_field("software.nccl"));
	assert_true(so_version_field("nvidia_driver"));
	assert_false(so_version_field("kernel")); /* 6.1.0-28 and 6.1-28 are two kernels */
	assert_false(so_version_field("ofed.package"));
	assert_false(so_version_field("topology_digest"));
	assert_false(so_version_field("hca.mlx5_0.fw_ver.x"));
}

/* Drift between a baseline and now: a respelled version is not drift, and is said; a changed
 * driver is drift. The HTML of the same: the configuration table does not highlight a
 * respelled OFED version and says why. */
static void test_same_version(void **state)
{
	json_t *base = json_pack("[{s:s, s:{s:{s:s}, s:s, s:s}}]", "hostname", "gpu-node-01",
				 "snapshot", "ofed", "version", "24.10-1.1.4.0", "nvidia_driver",
				 "550.127.05", "kernel", "6.1.0-28-amd64");
	json_t *now = json_pack("[{s:s, s:{s:{s:s}, s:s, s:s}}]", "hostname", "gpu-node-01",
				"snapshot", "ofed", "version", "24.10-1.1.4", "nvidia_driver",
				"560.35.03", "kernel", "6.1-28-amd64");
	json_t *d = so_drift(base, now), *doc, *g;
	size_t len;
	char *json, *html;

	(void)state;
	assert_non_null(d);
	assert_int_equal(json_array_size(json_object_get(d, "drift")), 2);
	g = json_array_get(json_object_get(d, "drift"), 0);
	assert_string_equal(json_string_value(json_object_get(g, "field")), "kernel");
	g = json_array_get(json_object_get(d, "drift"), 1);
	assert_string_equal(json_string_value(json_object_get(g, "field")), "nvidia_driver");
	assert_int_equal(json_array_size(json_object_get(d, "same_version")), 1);
	g = json_array_get(json_object_get(d, "same_version"), 0);
	assert_string_equal(json_string_value(json_object_get(g, "field")), "ofed.version");
	assert_string_equal(json_string_value(json_array_get(json_object_get(g, "nodes"), 0)),
			    "gpu-node-01");
	json_decref(d);
	json_decref(base);
	json_decref(now);

	json = read_fixture(&len);
	doc = json_loadb(json, len, 0, NULL);
	free(json);
	assert_non_null(doc);
	g = json_array_get(json_object_get(doc, "nodes"), 1);
	assert_string_equal(json_string_value(json_object_get(g, "hostname")), "gpu-node-02");
	json_object_set_new(json_object_get(json_object_get(g, "snapshot"), "ofed"), "version",
			    json_string("24.10-1.1.4"));
	html = render_doc(doc);
	assert_int_equal(count(html, "<td>24.10-1.1.4</td>"), 1);
	assert_int_equal(count(html, "<td class=\"differs\">24.07-0.6.1.0</td>"), 1);
	assert_non_null(strstr(html, "<li>OFED on gpu-node-02: 24.10-1.1.4 = 24.10-1.1.4.0 (same "
				     "version, spelled differently)</li>"));
	free(html);
	/* In a revalidation, the comparison's same_version. */
	json_object_set_new(doc, "comparison",
			    json_pack("{s:[], s:[], s:[], s:[{s:s, s:s, s:s, s:[s]}]}", "metrics",
				      "regressions", "drift", "same_version", "field",
				      "ofed.version", "from", "24.10-1.1.4.0", "to", "24.10-1.1.4",
				      "nodes", "gpu-node-04"));
	html = render_doc(doc);
	assert_non_null(strstr(html, "<li>ofed.version: 24.10-1.1.4.0 = 24.10-1.1.4 (same version, "
				     "spelled differently) on gpu-node-04</li>"));
	assert_non_null(strstr(html, "No configuration drift."));
	free(html);
	json_decref(doc);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixture),		  cmocka_unit_test(test_escaped),
		cmocka_unit_test(test_bad_input),	  cmocka_unit_test(test_wrong_types),
		cmocka_unit_test(test_revalidation),	  cmocka_unit_test(test_failed_cell),
		cmocka_unit_test(test_mutations),	  cmocka_unit_test(test_strip),
		cmocka_unit_test(test_extremes),	  cmocka_unit_test(test_summary),
		cmocka_unit_test(test_summary_mutations), cmocka_unit_test(test_failing_report),
		cmocka_unit_test(test_natural_order),	  cmocka_unit_test(test_version_same),
		cmocka_unit_test(test_same_version),
	};

	if (argc > 1)
		fixture_path = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
