/* The HTML view of a sign-off report: the signed JSON in, one page out (header and verdict,
 * failures, heatmaps, latency histograms, configuration, revalidation, provenance, how to
 * verify). Owns only the render's buffers. Every member is read defensively: a hostile file
 * gets "?" where a value is absent or of the wrong type, never a crash. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/signoff/verify.h" /* the verification commands shown */
#include "common/util/buf.h"
#include "common/util/error.h"
#include "common/util/json.h"
#include "common/util/util.h"
#include "controller/signoff/html.h"

/* Above this many hosts a heatmap is one strip of per-host medians, not the matrix: a
 * 1024 x 1024 matrix per rail would make the page hundreds of MB, and 64 x 64 cells x 8 rails x
 * 2 tests already make it 5 MB. */
#define MATRIX_HOSTS_MAX 32
/* Heatmaps drawn per test (one per rail) and on the whole page. */
#define MAPS_PER_TEST_MAX 16
#define MAPS_MAX	  64
/* Latency histograms on the page, and the bins of each. */
#define HISTS_MAX 32
#define HIST_BINS 20

/* ---- output buffer ------------------------------------------------------------------------ */

/* The page is rendered into a struct ry_buf; its first failure sticks and the render returns
 * -ENOMEM. No bound of its own beyond SIZE_MAX / 4: the report it renders is bounded. */
#define OUT_MAX (SIZE_MAX / 4)

static void out_write(struct ry_buf *o, const char *s, size_t n)
{
	ry_buf_addn(o, s, n);
}

static void out_puts(struct ry_buf *o, const char *s)
{
	ry_buf_add(o, s);
}

/* printf-style append. Only for the page's own text and numbers: strings from the report go
 * through out_esc(). */
__attribute__((format(printf, 2, 3))) static void out_printf(struct ry_buf *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ry_buf_vaddf(o, fmt, ap);
	va_end(ap);
}

/* The text of o (caller frees), or a copy of dflt when o is empty; NULL when an append failed
 * or out of memory. o is done. */
static char *take_or(struct ry_buf *o, const char *dflt)
{
	char *s = NULL;

	if (ry_buf_len(o) == 0 && !ry_buf_error(o)) {
		ry_buf_done(o);
		return strdup(dflt);
	}
	if (ry_buf_take(o, &s, NULL) < 0)
		return NULL;
	return s;
}

static const char *esc_of(unsigned char ch)
{
	switch (ch) {
	case '&':
		return "&amp;";
	case '<':
		return "&lt;";
	case '>':
		return "&gt;";
	case '"':
		return "&quot;";
	case '\'':
		return "&#39;";
	case '\t':
	case '\n':
		return NULL;
	default:
		return ch < 0x20 || ch == 0x7f ? "&#xFFFD;" : NULL;
	}
}

/* s HTML-escaped (text and attribute values alike); control characters become U+FFFD. */
static void out_esc(struct ry_buf *o, const char *s)
{
	const char *run = s;

	for (; *s; s++) {
		const char *rep = esc_of((unsigned char)*s);

		if (!rep)
			continue;
		out_write(o, run, (size_t)(s - run));
		out_puts(o, rep);
		run = s + 1;
	}
	out_write(o, run, (size_t)(s - run));
}

/* ---- reading the report ------------------------------------------------------------------- */

static bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static const char *jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* A number member, NaN when absent or not a number. */
static double jnum(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The member at a dotted path ("ofed.version"), or NULL. */
static const json_t *jpath(const json_t *v, const char *path)
{
	char key[64];

	while (v && *path) {
		size_t n = strcspn(path, ".");

		if (n >= sizeof(key))
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		v = json_object_get(v, key);
		path += n + (path[n] == '.');
	}
	return v;
}

/* A scalar as text: strings as they are, numbers, true/false, "—" for null (not applicable in
 * this schema) and "?" for absent or anything else. buf holds a formatted number. */
static const char *scalar(const json_t *v, char *buf, size_t len)
{
	const char *s = ry_json_scalar_str(v, RY_JSON_REAL_SHORT, buf, len);

	if (s)
		return s;
	return json_is_null(v) ? "—" : "?";
}

static void out_scalar(struct ry_buf *o, const json_t *v)
{
	char buf[64];

	out_esc(o, scalar(v, buf, sizeof(buf)));
}

/* <tag>escaped text</tag>; NULL text shows "?". */
static void out_elem(struct ry_buf *o, const char *tag, const char *text)
{
	out_printf(o, "<%s>", tag);
	out_esc(o, text ? text : "?");
	out_printf(o, "</%s>", tag);
}

/* The strings of an array, each escaped, separated by sep ("?" for an item that is not one). */
static void out_joined(struct ry_buf *o, const json_t *arr, const char *sep)
{
	size_t i;
	const json_t *x;

	if (!json_is_array(arr)) {
		out_puts(o, "?");
		return;
	}
	json_array_foreach(arr, i, x)
	{
		if (i)
			out_puts(o, sep);
		out_scalar(o, x);
	}
}

/* The strings of an array as a list. */
static void out_list(struct ry_buf *o, const json_t *arr)
{
	size_t i;
	const json_t *x;

	if (!json_is_array(arr)) {
		out_puts(o, "?");
		return;
	}
	if (!json_array_size(arr))
		return;
	out_puts(o, "<ul>");
	json_array_foreach(arr, i, x)
	{
		out_puts(o, "<li>");
		out_scalar(o, x);
		out_puts(o, "</li>");
	}
	out_puts(o, "</ul>");
}

/* ---- render state ------------------------------------------------------------------------- */

struct idname {
	const char *id, *host;
};

struct ctx {
	struct ry_buf o;
	const json_t *root, *eval;
	struct idname *ids; /* the report's nodes[], sorted by id */
	size_t nids;
	unsigned seq; /* unique ids of SVG gradients */
	size_t maps;  /* heatmaps drawn */
};

static int idname_cmp(const void *x, const void *y)
{
	return strcmp(((const struct idname *)x)->id, ((const struct idname *)y)->id);
}

static int ids_build(struct ctx *c)
{
	const json_t *nodes = json_object_get(c->root, "nodes"), *n;
	size_t i;

	c->ids = calloc(json_array_size(nodes) + 1, sizeof(*c->ids));
	if (!c->ids)
		return -ENOMEM;
	json_array_foreach(nodes, i, n)
	{
		const char *id = jstr(n, "id"), *host = jstr(n, "hostname");

		if (id && host)
			c->ids[c->nids++] = (struct idname){id, host};
	}
	qsort(c->ids, c->nids, sizeof(*c->ids), idname_cmp);
	return 0;
}

/* The host name of a node id as evaluation documents carry them; the id itself when the report
 * does not know it; NULL when id is not a string. */
static const char *host_of(const struct ctx *c, const json_t *id)
{
	struct idname key = {json_string_value(id), NULL}, *hit;

	if (!key.id)
		return NULL;
	hit = bsearch(&key, c->ids, c->nids, sizeof(*c->ids), idname_cmp);
	return hit ? hit->host : key.id;
}

/* The evaluation's entry of test name, or NULL. */
static const json_t *eval_test(const struct ctx *c, const char *name)
{
	const json_t *tests = json_object_get(c->eval, "tests"), *t;
	size_t i;

	json_array_foreach(tests, i, t)
	{
		if (streq(jstr(t, "name"), name))
			return t;
	}
	return NULL;
}

/* ---- tables ------------------------------------------------------------------------------- */

/* A column of a table of objects: its heading and the member's dotted path. */
struct col {
	const char *title, *path;
};

static void table_open(struct ry_buf *o, const struct col *cols, size_t n)
{
	out_puts(o, "<table><thead><tr>");
	for (size_t k = 0; k < n; k++)
		out_elem(o, "th", cols[k].title);
	out_puts(o, "</tr></thead><tbody>\n");
}

/* One row per element of arr, one scalar cell per column; none says so. */
static void table_of(struct ry_buf *o, const json_t *arr, const struct col *cols, size_t n,
		     const char *none)
{
	size_t i;
	const json_t *row;

	if (!json_array_size(arr)) {
		out_elem(o, "p", json_is_array(arr) ? none : "?");
		return;
	}
	table_open(o, cols, n);
	json_array_foreach(arr, i, row)
	{
		out_puts(o, "<tr>");
		for (size_t k = 0; k < n; k++) {
			out_puts(o, "<td>");
			out_scalar(o, jpath(row, cols[k].path));
			out_puts(o, "</td>");
		}
		out_puts(o, "</tr>\n");
	}
	out_puts(o, "</tbody></table>\n");
}

/* A definition list of an object's members at the given paths. */
static void fields_of(struct ry_buf *o, const json_t *obj, const struct col *cols, size_t n)
{
	out_puts(o, "<dl>");
	for (size_t k = 0; k < n; k++) {
		out_elem(o, "dt", cols[k].title);
		out_puts(o, "<dd>");
		out_scalar(o, jpath(obj, cols[k].path));
		out_puts(o, "</dd>");
	}
	out_puts(o, "</dl>\n");
}

/* A JSON value pretty-printed in a <pre>. */
static void out_pre_json(struct ry_buf *o, const json_t *v)
{
	char *s;

	if (!v) {
		out_puts(o, "<pre>?</pre>\n");
		return;
	}
	s = json_dumps(v,
		       JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(16));
	if (!s) {
		ry_buf_fail(o, -ENOMEM);
		return;
	}
	out_puts(o, "<pre>");
	out_esc(o, s);
	out_puts(o, "</pre>\n");
	free(s);
}

/* ---- head, header and verdict ------------------------------------------------------------- */

static const char page_style[] =
	"body{font:14px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif;color:#1f2328;"
	"background:#fff;margin:0 auto;max-width:1280px;padding:24px}\n"
	"h1{font-size:22px;margin:0 0 8px}h2{font-size:18px;border-bottom:1px solid #d0d7de;"
	"padding-bottom:4px;margin-top:32px}h3{font-size:15px;margin:20px 0 6px}\n"
	"table{border-collapse:collapse;margin:6px 0 12px}th,td{border:1px solid #d0d7de;"
	"padding:3px 8px;text-align:left;vertical-align:top}th{background:#f6f8fa}\n"
	"td ul,dd ul{margin:0;padding-left:18px}\n"
	"dl{display:grid;grid-template-columns:max-content auto;gap:2px 16px;margin:6px 0}"
	"dt{color:#57606a}dd{margin:0;word-break:break-all}\n"
	"pre,code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;"
	"font-size:12px}pre{background:#f6f8fa;padding:8px;overflow-x:auto}\n"
	".verdict{color:#fff;padding:14px 20px;border-radius:6px;margin:16px 0}"
	".verdict "
	".big{font-size:40px;font-weight:700;text-transform:uppercase;letter-spacing:2px}\n"
	".verdict.pass{background:#1a7f37}.verdict.fail{background:#cf222e}"
	".verdict.incomplete{background:#bf8700}.verdict.regressed{background:#cf222e}"
	".verdict.unknown{background:#6e7781}.verdict.smoke{background:#9a6700}\n"
	".badge{display:inline-block;background:rgba(255,255,255,.25);border-radius:4px;"
	"padding:1px 8px;margin-right:8px}\n"
	"td.differs{background:#fff3b0}.flag{color:#cf222e;font-weight:600}.note{color:#57606a}\n"
	".scroll{overflow-x:auto}svg{display:block;margin:6px 0 14px}"
	"svg text{font-size:11px;fill:#1f2328}\n"
	"@media print{.scroll{overflow:visible}}\n";

static void page_head(struct ctx *c)
{
	struct ry_buf *o = &c->o;

	out_puts(o, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		    "style-src 'unsafe-inline'\">\n<meta name=\"viewport\" "
		    "content=\"width=device-width, initial-scale=1\">\n<title>Railyard sign-off ");
	out_esc(o, jstr(c->root, "cluster") ? jstr(c->root, "cluster") : "?");
	out_puts(o, " ");
	out_esc(o, jstr(c->root, "id") ? jstr(c->root, "id") : "?");
	out_puts(o, "</title>\n<style>\n");
	out_puts(o, page_style);
	out_puts(o, "</style>\n</head>\n<body>\n");
}

static void sec_header(struct ctx *c)
{
	static const struct col cols[] = {
		{"cluster", "cluster"},
		{"report", "id"},
		{"created at", "created_at"},
		{"controller version", "controller.version"},
		{"CA fingerprint", "controller.ca_fingerprint"},
	};
	const char *kind = jstr(c->root, "kind");
	struct ry_buf *o = &c->o;

	out_puts(o, "<header>\n<h1>");
	out_esc(o, streq(kind, "revalidation") ? "Revalidation"
		   : streq(kind, "signoff")    ? "Sign-off"
					       : "?");
	out_puts(o, ": ");
	out_scalar(o, json_object_get(c->root, "cluster"));
	out_puts(o, "</h1>\n");
	fields_of(o, c->root, cols, RY_ARRAY_SIZE(cols));
	out_printf(o, "<p class=\"note\">%zu nodes; kind ",
		   json_array_size(json_object_get(c->root, "nodes")));
	out_scalar(o, json_object_get(c->root, "kind"));
	out_puts(o, "</p>\n</header>\n");
}

/* The campaign's member, else the evaluation's. */
static const json_t *campaign_or_eval(const struct ctx *c, const char *key)
{
	const json_t *v = json_object_get(json_object_get(c->root, "campaign"), key);

	return v ? v : json_object_get(c->eval, key);
}

static void sec_verdict(struct ctx *c)
{
	const char *v = jstr(c->root, "verdict"), *tr;
	const json_t *quick = campaign_or_eval(c, "quick");
	bool known = streq(v, "pass") || streq(v, "fail") || streq(v, "incomplete") ||
		     streq(v, "regressed");
	bool acceptance = json_is_true(json_object_get(c->root, "acceptance"));
	size_t excluded = json_array_size(json_object_get(c->root, "excluded")), i;
	const json_t *x;
	struct ry_buf *o = &c->o;

	/* A pass that is not an acceptance sign-off is never shown as a green pass. */
	out_printf(o, "<section class=\"verdict %s\" id=\"verdict\">\n<div class=\"big\">",
		   !known || !v			     ? "unknown"
		   : streq(v, "pass") && !acceptance ? "smoke"
						     : v);
	out_esc(o, v ? v : "?");
	if (excluded)
		out_printf(o, " with %zu excluded", excluded);
	out_puts(o, "</div>\n<div class=\"kind\" id=\"acceptance\">");
	if (acceptance) {
		out_puts(o, "Acceptance sign-off");
	} else {
		out_puts(o, "Smoke / baseline report: not an acceptance sign-off");
		json_array_foreach(json_object_get(c->root, "acceptance_reasons"), i, x)
		{
			out_puts(o, i ? "; " : " (");
			out_scalar(o, x);
		}
		if (json_array_size(json_object_get(c->root, "acceptance_reasons")))
			out_puts(o, ")");
		else if (!json_object_get(c->root, "acceptance"))
			out_puts(o, " (signed before acceptance rules)");
	}
	out_puts(o, "</div>\n");
	json_array_foreach(json_object_get(c->root, "excluded"), i, x)
	{
		out_puts(o, "<div class=\"kind\">excluded: ");
		out_scalar(o, json_object_get(x, "hostname"));
		out_puts(o, ": ");
		out_scalar(o, json_array_get(json_object_get(x, "reasons"), 0));
		out_puts(o, "</div>\n");
	}
	out_puts(o, "<div><span class=\"badge\">transport: ");
	tr = json_string_value(campaign_or_eval(c, "transport"));
	if (streq(tr, "tcp"))
		out_puts(o, "TCP baseline (not RDMA)");
	else if (streq(tr, "verbs"))
		out_puts(o, "verbs (RDMA)");
	else
		out_esc(o, tr ? tr : "?");
	out_puts(o, "</span><span class=\"badge\">");
	out_puts(o, json_is_true(quick)	   ? "smoke run (--quick): thresholds indicative"
		    : json_is_false(quick) ? "full run"
					   : "run length ?");
	out_puts(o, "</span></div>\n</section>\n<h2 id=\"summary\">Summary</h2>\n");
	out_list(o, json_object_get(c->root, "summary"));
	if (!json_array_size(json_object_get(c->root, "summary")))
		out_puts(o, "<p class=\"note\">no summary lines</p>\n");
}

/* ---- failures ----------------------------------------------------------------------------- */

static bool rail_failing(const json_t *rail)
{
	return streq(jstr(rail, "result"), "fail");
}

static bool node_failing(const json_t *n)
{
	const json_t *rails = json_object_get(n, "rails"), *r;
	size_t i;

	if (streq(jstr(n, "result"), "fail"))
		return true;
	json_array_foreach(rails, i, r)
	{
		if (rail_failing(r))
			return true;
	}
	return false;
}

static void node_rails_cell(struct ry_buf *o, const json_t *n)
{
	const json_t *rails = json_object_get(n, "rails"), *r;
	size_t i;

	out_puts(o, "<td>");
	json_array_foreach(rails, i, r)
	{
		if (!rail_failing(r))
			continue;
		out_puts(o, "<div><b>rail ");
		out_scalar(o, json_object_get(r, "rail"));
		out_puts(o, " (");
		out_scalar(o, json_object_get(r, "device"));
		out_puts(o, ")</b>");
		out_list(o, json_object_get(r, "reasons"));
		out_puts(o, "</div>");
	}
	out_puts(o, "</td>");
}

static void failing_nodes(struct ctx *c)
{
	static const struct col cols[] = {
		{"node", NULL}, {"result", NULL}, {"reasons", NULL}, {"failing rails", NULL}};
	const json_t *nodes = json_object_get(c->eval, "nodes"), *n;
	struct ry_buf *o = &c->o;
	size_t i, shown = 0;

	out_puts(o, "<h3>Nodes and rails</h3>\n");
	json_array_foreach(nodes, i, n)
	{
		const char *host = jstr(n, "hostname");

		if (!node_failing(n))
			continue;
		if (!shown++)
			table_open(o, cols, RY_ARRAY_SIZE(cols));
		out_puts(o, "<tr>");
		out_elem(o, "td", host ? host : jstr(n, "id"));
		out_puts(o, "<td class=\"flag\">");
		out_scalar(o, json_object_get(n, "result"));
		out_puts(o, "</td><td>");
		out_list(o, json_object_get(n, "reasons"));
		out_puts(o, "</td>");
		node_rails_cell(o, n);
		out_puts(o, "</tr>\n");
	}
	if (shown)
		out_puts(o, "</tbody></table>\n");
	else
		out_elem(o, "p", json_is_array(nodes) ? "No node and no rail failed." : "?");
}

/* A pair's end named by its host, else by what the evaluation holds. */
static void out_end(struct ctx *c, const json_t *host, const json_t *id)
{
	const char *h = json_string_value(host);

	out_esc(&c->o, h ? h : host_of(c, id) ? host_of(c, id) : "?");
}

static void failing_links(struct ctx *c)
{
	static const struct col cols[] = {
		{"link", NULL}, {"rail", NULL}, {"test", NULL}, {"reasons", NULL}};
	const json_t *links = json_object_get(c->eval, "links"), *l;
	struct ry_buf *o = &c->o;
	size_t i;

	out_puts(o, "<h3>Links</h3>\n");
	if (!json_array_size(links)) {
		out_elem(o, "p", json_is_array(links) ? "No link failed." : "?");
		return;
	}
	table_open(o, cols, RY_ARRAY_SIZE(cols));
	json_array_foreach(links, i, l)
	{
		out_puts(o, "<tr><td>");
		out_end(c, json_object_get(l, "a_host"), json_object_get(l, "a"));
		out_puts(o, " ↔ ");
		out_end(c, json_object_get(l, "b_host"), json_object_get(l, "b"));
		out_puts(o, "</td><td>");
		out_scalar(o, json_object_get(l, "rail"));
		out_puts(o, "</td><td>");
		out_scalar(o, json_object_get(l, "test"));
		out_puts(o, "</td><td>");
		out_list(o, json_object_get(l, "reasons"));
		out_puts(o, "</td></tr>\n");
	}
	out_puts(o, "</tbody></table>\n");
	if (jnum(c->eval, "links_total") > (double)json_array_size(links))
		out_printf(o, "<p class=\"note\">%.0f suspect links in all; %zu listed.</p>\n",
			   jnum(c->eval, "links_total"), json_array_size(links));
}

static void test_rules(struct ry_buf *o, const json_t *t)
{
	static const struct col cols[] = {
		{"metric", NULL},    {"op", NULL},	  {"value", NULL}, {"relative", NULL},
		{"threshold", NULL}, {"evaluated", NULL}, {"failed", NULL}};
	static const char *const keys[] = {"metric", "op", "value", "relative"};
	const json_t *rules = json_object_get(t, "rules"), *r;
	size_t i;

	if (!json_array_size(rules)) {
		out_elem(o, "p", json_is_array(rules) ? "No acceptance rule." : "?");
		return;
	}
	table_open(o, cols, RY_ARRAY_SIZE(cols));
	json_array_foreach(rules, i, r)
	{
		const json_t *thr = json_object_get(r, "threshold_text");

		out_puts(o, "<tr>");
		for (size_t k = 0; k < RY_ARRAY_SIZE(keys); k++) {
			out_puts(o, "<td>");
			out_scalar(o, json_object_get(r, keys[k]));
			out_puts(o, "</td>");
		}
		out_puts(o, "<td>");
		out_scalar(o, json_is_string(thr) ? thr : json_object_get(r, "threshold"));
		out_puts(o, "</td><td>");
		out_scalar(o, json_object_get(r, "evaluated"));
		out_puts(o, json_number_value(json_object_get(r, "failed")) > 0
				    ? "</td><td class=\"flag\">"
				    : "</td><td>");
		out_scalar(o, json_object_get(r, "failed"));
		out_puts(o, "</td></tr>\n");
	}
	out_puts(o, "</tbody></table>\n");
}

static void test_failures(struct ctx *c, const json_t *t)
{
	static const struct col cols[] = {{"client (a)", NULL},
					  {"server (b)", NULL},
					  {"rail", NULL},
					  {"attributed", NULL},
					  {"reason", NULL}};
	const json_t *fails = json_object_get(t, "failures"), *f;
	struct ry_buf *o = &c->o;
	size_t i;

	if (!json_array_size(fails)) {
		out_elem(o, "p", json_is_array(fails) ? "No failing pair." : "?");
		return;
	}
	table_open(o, cols, RY_ARRAY_SIZE(cols));
	json_array_foreach(fails, i, f)
	{
		out_puts(o, "<tr><td>");
		out_end(c, NULL, json_object_get(f, "a"));
		out_puts(o, "</td><td>");
		out_end(c, NULL, json_object_get(f, "b"));
		out_puts(o, "</td><td>");
		out_scalar(o, json_object_get(f, "rail"));
		out_puts(o, "</td><td>");
		out_scalar(o, json_object_get(f, "attributed"));
		out_puts(o, "</td><td>");
		out_scalar(o, json_object_get(f, "reason"));
		out_puts(o, "</td></tr>\n");
	}
	out_puts(o, "</tbody></table>\n");
	if (jnum(t, "failures_total") > (double)json_array_size(fails))
		out_printf(o, "<p class=\"note\">%.0f failing pairs in all; %zu listed.</p>\n",
			   jnum(t, "failures_total"), json_array_size(fails));
}

static void eval_tests(struct ctx *c)
{
	static const char *const keys[] = {"kind", "pattern",  "per_rail", "result",
					   "rows", "measured", "failed"};
	const json_t *tests = json_object_get(c->eval, "tests"), *t;
	struct ry_buf *o = &c->o;
	size_t i;

	if (!json_is_array(tests))
		out_elem(o, "p", "Tests: ?");
	json_array_foreach(tests, i, t)
	{
		out_puts(o, "<h3>Test ");
		out_scalar(o, json_object_get(t, "name"));
		out_puts(o, "</h3>\n<p>");
		for (size_t k = 0; k < RY_ARRAY_SIZE(keys); k++) {
			out_printf(o, "%s%s ", k ? "; " : "", keys[k]);
			out_scalar(o, json_object_get(t, keys[k]));
		}
		out_puts(o, "</p>\n");
		test_rules(o, t);
		test_failures(c, t);
	}
}

static void sec_failures(struct ctx *c)
{
	static const struct col left[] = {{"id", "id"}, {"host", "hostname"}, {"reason", "reason"}};
	const json_t *lo = json_object_get(c->eval, "left_out");

	out_puts(&c->o, "<h2 id=\"failures\">Failures</h2>\n");
	if (!json_is_object(c->eval))
		out_elem(&c->o, "p", "The report holds no evaluation: ?");
	failing_nodes(c);
	failing_links(c);
	eval_tests(c);
	if (json_array_size(lo)) {
		out_puts(&c->o, "<h3>Left out</h3>\n");
		table_of(&c->o, lo, left, RY_ARRAY_SIZE(left), "");
	}
}

/* ---- heatmaps ----------------------------------------------------------------------------- */

/* One measured slot of a run phase (results[] with phase "run"). */
struct cell {
	const char *test, *kind, *a, *b, *state, *error;
	long long rail;
	bool has_rail;
	bool bad; /* failed, or a failure of the test's verdict */
	double gbps, p50, p99;
};

/* Rails in order: "not per rail" after every rail, rails by number. */
static int rail_cmp(bool pa, long long ra, bool pb, long long rb)
{
	if (pa != pb)
		return pa ? 1 : -1;
	return ra < rb ? -1 : ra > rb;
}

static int cell_cmp(const void *x, const void *y)
{
	const struct cell *p = x, *q = y;
	int r = strcmp(p->test, q->test);

	if (r || (r = rail_cmp(p->has_rail, p->rail, q->has_rail, q->rail)))
		return r;
	r = strcmp(p->a, q->a);
	return r ? r : strcmp(p->b, q->b);
}

static bool cell_from(const json_t *r, struct cell *x)
{
	const json_t *rail = json_object_get(r, "rail"), *m = json_object_get(r, "metrics");

	*x = (struct cell){.test = jstr(r, "test"),
			   .kind = jstr(r, "kind"),
			   .a = jstr(r, "a"),
			   .b = jstr(r, "b"),
			   .state = jstr(r, "state"),
			   .error = jstr(r, "error"),
			   .has_rail = json_is_integer(rail),
			   .gbps = jnum(m, "gbps"),
			   .p50 = jnum(m, "p50_us"),
			   .p99 = jnum(m, "p99_us")};
	x->rail = x->has_rail ? (long long)json_integer_value(rail) : 0;
	return x->test && x->a && x->b && streq(jstr(r, "phase"), "run");
}

/* The run-phase results, sorted by test, rail, a, b. Caller frees *ret. */
static int cells_collect(const struct ctx *c, struct cell **ret, size_t *ret_n)
{
	const json_t *res = json_object_get(c->root, "results"), *r;
	struct cell *v = calloc(json_array_size(res) + 1, sizeof(*v));
	size_t i, n = 0;

	if (!v)
		return -ENOMEM;
	json_array_foreach(res, i, r)
	{
		if (cell_from(r, &v[n]))
			n++;
	}
	qsort(v, n, sizeof(*v), cell_cmp);
	*ret = v;
	*ret_n = n;
	return 0;
}

static bool cell_done(const struct cell *x)
{
	return streq(x->state, "done");
}

/* The heatmap value of a bandwidth or latency cell, NaN when none. */
static double cell_value(const struct cell *x, bool bw)
{
	if (!cell_done(x))
		return NAN;
	if (bw)
		return x->gbps;
	return isfinite(x->p50) ? x->p50 : x->p99;
}

/* A failure of the verdict, by host names. */
struct fkey {
	const char *a, *b;
	long long rail;
	bool has_rail;
};

static int fkey_cmp(const void *x, const void *y)
{
	const struct fkey *p = x, *q = y;
	int r = strcmp(p->a, q->a);

	if (r)
		return r;
	r = strcmp(p->b, q->b);
	return r ? r : rail_cmp(p->has_rail, p->rail, q->has_rail, q->rail);
}

/* Mark the cells of one test (n, sorted) that its verdict lists as failures or that failed. */
static int cells_mark_bad(const struct ctx *c, struct cell *cells, size_t n)
{
	const json_t *fails = json_object_get(eval_test(c, cells[0].test), "failures"), *f;
	struct fkey *keys = calloc(json_array_size(fails) + 1, sizeof(*keys));
	size_t i, nk = 0;

	if (!keys)
		return -ENOMEM;
	json_array_foreach(fails, i, f)
	{
		const json_t *rail = json_object_get(f, "rail");
		struct fkey k = {host_of(c, json_object_get(f, "a")),
				 host_of(c, json_object_get(f, "b")), 0, json_is_integer(rail)};

		k.rail = k.has_rail ? (long long)json_integer_value(rail) : 0;
		if (k.a && k.b)
			keys[nk++] = k;
	}
	qsort(keys, nk, sizeof(*keys), fkey_cmp);
	for (i = 0; i < n; i++) {
		struct fkey k = {cells[i].a, cells[i].b, cells[i].rail, cells[i].has_rail};

		cells[i].bad = streq(cells[i].state, "failed") ||
			       bsearch(&k, keys, nk, sizeof(*keys), fkey_cmp) != NULL;
	}
	free(keys);
	return 0;
}

/* A test's kind: its results' own, else the evaluation's. */
static const char *test_kind(const struct ctx *c, const struct cell *cells, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (cells[i].kind)
			return cells[i].kind;
	}
	return jstr(eval_test(c, cells[0].test), "kind");
}

/* The colour scale of a test, shared by its maps so that rails compare: the measured range
 * widened to span at least a fifth of its good end, so that a spread of a few percent (noise)
 * does not paint half a healthy map red. */
struct scale {
	double lo, hi; /* measured (NaN: nothing measured) */
	double s0, s1; /* the scale's ends */
	bool bw;       /* high is good; else low is good */
	const char *unit;
	const char *what; /* what lo..hi span: "measured", "per-host means" */
};

static void scale_start(struct scale *sc, bool bw, const char *what)
{
	*sc = (struct scale){NAN, NAN, NAN, NAN, bw, bw ? "Gb/s" : "µs", what};
}

static void scale_add(struct scale *sc, double v)
{
	if (!isfinite(v))
		return;
	sc->lo = isnan(sc->lo) || v < sc->lo ? v : sc->lo;
	sc->hi = isnan(sc->hi) || v > sc->hi ? v : sc->hi;
}

static void scale_end(struct scale *sc)
{
	sc->s0 = sc->bw && 0.8 * sc->hi < sc->lo ? 0.8 * sc->hi : sc->lo;
	sc->s1 = !sc->bw && 1.25 * sc->lo > sc->hi ? 1.25 * sc->lo : sc->hi;
}

static void scale_init(struct scale *sc, const struct cell *cells, size_t n, bool bw)
{
	scale_start(sc, bw, "measured");
	for (size_t i = 0; i < n; i++) {
		if (strcmp(cells[i].a, cells[i].b) != 0)
			scale_add(sc, cell_value(&cells[i], bw));
	}
	scale_end(sc);
}

/* One heatmap: the cells of one test and rail, their hosts (sorted, distinct). */
struct heat {
	const struct cell *cells;
	size_t n;
	const char **hosts;
	size_t nhosts;
	const struct scale *sc;
};

static int str_cmp(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static int heat_init(struct heat *h, const struct cell *cells, size_t n, const struct scale *sc)
{
	size_t k = 0;

	*h = (struct heat){cells, n, calloc(2 * n + 1, sizeof(char *)), 0, sc};
	if (!h->hosts)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(cells[i].a, cells[i].b) == 0)
			continue;
		h->hosts[k++] = cells[i].a;
		h->hosts[k++] = cells[i].b;
	}
	qsort(h->hosts, k, sizeof(char *), str_cmp);
	for (size_t i = 0; i < k; i++) {
		if (!h->nhosts || strcmp(h->hosts[h->nhosts - 1], h->hosts[i]) != 0)
			h->hosts[h->nhosts++] = h->hosts[i];
	}
	return 0;
}

static size_t heat_host(const struct heat *h, const char *host)
{
	const char **hit = bsearch(&host, h->hosts, h->nhosts, sizeof(char *), str_cmp);

	return hit ? (size_t)(hit - h->hosts) : 0;
}

/* Goodness 0 (bad, red) .. 1 (good, green) as an RGB colour; bandwidth is good high, latency
 * low. */
static void heat_colour(const struct scale *sc, double v, char *buf, size_t len)
{
	static const double stops[3][3] = {{215, 48, 39}, {254, 224, 139}, {26, 152, 80}};
	double g = sc->s1 > sc->s0 ? (v - sc->s0) / (sc->s1 - sc->s0) : 1, t;
	size_t s;

	g = sc->bw ? g : 1 - g;
	g = !(g >= 0) ? 0 : g > 1 ? 1 : g; /* NaN from infinite spans too */
	s = g < 0.5 ? 0 : 1;
	t = (g - 0.5 * (double)s) * 2;
	snprintf(buf, len, "#%02x%02x%02x",
		 (unsigned)lround(stops[s][0] + t * (stops[s + 1][0] - stops[s][0])),
		 (unsigned)lround(stops[s][1] + t * (stops[s + 1][1] - stops[s][1])),
		 (unsigned)lround(stops[s][2] + t * (stops[s + 1][2] - stops[s][2])));
}

static void out_rail(struct ry_buf *o, const struct cell *x)
{
	if (x->has_rail)
		out_printf(o, " rail %lld", x->rail);
}

/* The tooltip of a matrix cell: "a → b rail r: value unit". */
static void cell_title(struct ry_buf *o, const struct heat *h, const struct cell *x)
{
	double v = cell_value(x, h->sc->bw);

	out_puts(o, "<title>");
	out_esc(o, x->a);
	out_puts(o, " → ");
	out_esc(o, x->b);
	out_rail(o, x);
	if (isfinite(v)) {
		out_printf(o, ": %.4g %s", v, h->sc->unit);
	} else {
		out_puts(o, ": ");
		out_esc(o, x->state ? x->state : "?");
		if (x->error) {
			out_puts(o, " (");
			out_esc(o, x->error);
			out_puts(o, ")");
		}
	}
	if (x->bad)
		out_puts(o, " [failing]");
	out_puts(o, "</title>");
}

/* A cell at (x, y) of size w x ht: coloured by value, or grey with an X when not measured;
 * outlined in red when failing. */
static void cell_rect(struct ry_buf *o, const struct heat *h, const struct cell *x, double px,
		      double py, double w, double ht)
{
	double v = cell_value(x, h->sc->bw);
	char fill[16] = "#c8c8c8";

	if (isfinite(v))
		heat_colour(h->sc, v, fill, sizeof(fill));
	out_printf(o,
		   "<rect class=\"cell%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
		   "fill=\"%s\"%s>",
		   x->bad ? " bad" : "", px, py, w, ht, fill,
		   x->bad ? " stroke=\"#d1001f\" stroke-width=\"3\"" : "");
	cell_title(o, h, x);
	out_puts(o, "</rect>");
	if (!isfinite(v))
		out_printf(o,
			   "<path d=\"M%.1f %.1fl%.1f %.1fM%.1f %.1fl%.1f %.1f\" stroke=\"#555\"/>",
			   px + 2, py + 2, w - 4, ht - 4, px + w - 2, py + 2, 4 - w, ht - 4);
	out_puts(o, "\n");
}

/* The colour legend under a map at y: the scale's ends with their colours, the measured range,
 * grey and red. */
static void heat_legend(struct ctx *c, const struct scale *sc, double y)
{
	struct ry_buf *o = &c->o;
	char lo[16], hi[16];
	unsigned id = c->seq++;

	if (isnan(sc->lo)) {
		out_printf(o, "<text x=\"4\" y=\"%.1f\">no measured value</text>\n", y + 12);
		return;
	}
	heat_colour(sc, sc->s0, lo, sizeof(lo));
	heat_colour(sc, sc->s1, hi, sizeof(hi));
	out_printf(o,
		   "<defs><linearGradient id=\"g%u\"><stop offset=\"0\" stop-color=\"%s\"/>"
		   "<stop offset=\"0.5\" stop-color=\"#fee08b\"/><stop offset=\"1\" "
		   "stop-color=\"%s\"/></linearGradient></defs>\n",
		   id, lo, hi);
	out_printf(o,
		   "<text x=\"100\" y=\"%.1f\" text-anchor=\"end\">%.4g</text><rect x=\"106\" "
		   "y=\"%.1f\" width=\"160\" height=\"12\" fill=\"url(#g%u)\"/><text x=\"272\" "
		   "y=\"%.1f\">%.4g %s (%s is good)</text>\n",
		   y + 10, sc->s0, y, id, y + 10, sc->s1, sc->unit, sc->bw ? "high" : "low");
	out_printf(o,
		   "<text x=\"4\" y=\"%.1f\">%s over the test's rails: min %.4g, max %.4g "
		   "%s</text>\n",
		   y + 28, sc->what, sc->lo, sc->hi, sc->unit);
	out_printf(o,
		   "<rect x=\"4\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"#c8c8c8\"/>"
		   "<text x=\"20\" y=\"%.1f\">not measured or failed</text>"
		   "<rect x=\"180\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"#fff\" "
		   "stroke=\"#d1001f\" stroke-width=\"3\"/><text x=\"198\" y=\"%.1f\">failing in "
		   "the verdict</text>\n",
		   y + 36, y + 46, y + 36, y + 46);
}

static void heat_matrix(struct ctx *c, const struct heat *h)
{
	struct ry_buf *o = &c->o;
	size_t lmax = 0;
	double cs = h->nhosts <= 16 ? 28 : h->nhosts <= 32 ? 18 : 12, lw, side;

	for (size_t i = 0; i < h->nhosts; i++)
		lmax = strlen(h->hosts[i]) > lmax ? strlen(h->hosts[i]) : lmax;
	lw = 12 + 6.5 * (double)(lmax > 40 ? 40 : lmax);
	side = lw + cs * (double)h->nhosts;
	out_printf(o, "<div class=\"scroll\"><svg width=\"%.0f\" height=\"%.0f\" role=\"img\">\n",
		   side + 130 > 540 ? side + 130 : 540, side + 64);
	for (size_t i = 0; i < h->nhosts; i++) {
		double mid = lw + cs * ((double)i + 0.5) + 4;

		out_printf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", lw - 4, mid);
		out_esc(o, h->hosts[i]);
		out_printf(o, "</text><text transform=\"translate(%.1f %.1f) rotate(-90)\">", mid,
			   lw - 4);
		out_esc(o, h->hosts[i]);
		out_puts(o, "</text>\n");
	}
	out_printf(o,
		   "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
		   "fill=\"#f6f8fa\"/>\n",
		   lw, lw, side - lw, side - lw);
	/* Failing cells last, so that their outline is drawn over their neighbours. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < h->n; i++) {
			const struct cell *x = &h->cells[i];

			if (x->bad != (pass == 1) || strcmp(x->a, x->b) == 0)
				continue;
			cell_rect(o, h, x, lw + cs * (double)heat_host(h, x->b),
				  lw + cs * (double)heat_host(h, x->a), cs, cs);
		}
	}
	out_printf(o, "<text x=\"%.1f\" y=\"12\">server (b) →</text>", side + 8);
	out_printf(o, "<text x=\"%.1f\" y=\"26\">↓ client (a)</text>\n", side + 8);
	heat_legend(c, h->sc, side + 8);
	out_puts(o, "</svg></div>\n");
}

/* Per host of a strip: the median of the values of the pairs it is in. */
struct hv {
	size_t host;
	double v;
};

static int hv_cmp(const void *x, const void *y)
{
	const struct hv *p = x, *q = y;

	if (p->host != q->host)
		return p->host < q->host ? -1 : 1;
	return p->v < q->v ? -1 : p->v > q->v;
}

static void strip_cell(struct ry_buf *o, const struct heat *h, size_t host, const struct hv *vals,
		       size_t nv, bool bad)
{
	double med = nv ? (vals[(nv - 1) / 2].v + vals[nv / 2].v) / 2 : NAN,
	       x = 8 + 6 * (double)host;
	char fill[16] = "#c8c8c8";

	if (nv)
		heat_colour(h->sc, med, fill, sizeof(fill));
	out_printf(o,
		   "<rect class=\"hostcell%s\" x=\"%.0f\" y=\"4\" width=\"6\" height=\"28\" "
		   "fill=\"%s\"%s><title>",
		   bad ? " bad" : "", x, fill, bad ? " stroke=\"#d1001f\" stroke-width=\"2\"" : "");
	out_esc(o, h->hosts[host]);
	out_rail(o, &h->cells[0]);
	if (nv)
		out_printf(o, ": median %.4g %s over %zu pairs", med, h->sc->unit, nv);
	else
		out_puts(o, ": no measured pair");
	out_printf(o, "%s</title></rect>\n", bad ? " [failing]" : "");
}

/* More than MATRIX_HOSTS_MAX hosts: one strip of per-host medians. */
static int heat_strip(struct ctx *c, const struct heat *h)
{
	struct hv *v = calloc(2 * h->n + 1, sizeof(*v));
	bool *bad = calloc(h->nhosts, sizeof(*bad));
	size_t nv = 0, j = 0;

	if (!v || !bad) {
		free(v);
		free(bad);
		return -ENOMEM;
	}
	for (size_t i = 0; i < h->n; i++) {
		const struct cell *x = &h->cells[i];
		double val = cell_value(x, h->sc->bw);
		size_t a = heat_host(h, x->a), b = heat_host(h, x->b);

		if (a == b)
			continue;
		bad[a] = bad[a] || x->bad;
		bad[b] = bad[b] || x->bad;
		if (!isfinite(val))
			continue;
		v[nv++] = (struct hv){a, val};
		v[nv++] = (struct hv){b, val};
	}
	qsort(v, nv, sizeof(*v), hv_cmp);
	out_printf(&c->o,
		   "<p class=\"note\">%zu hosts: more than %d, so each host's median over the "
		   "pairs it is in is shown as one strip instead of the matrix.</p>\n"
		   "<div class=\"scroll\"><svg width=\"%.0f\" height=\"96\" role=\"img\">\n",
		   h->nhosts, MATRIX_HOSTS_MAX, 16 + 6 * (double)h->nhosts);
	for (size_t host = 0; host < h->nhosts; host++) {
		size_t k = j;

		while (j < nv && v[j].host == host)
			j++;
		strip_cell(&c->o, h, host, v + k, j - k, bad[host]);
	}
	heat_legend(c, h->sc, 40);
	out_puts(&c->o, "</svg></div>\n");
	free(v);
	free(bad);
	return 0;
}

static int heat_map(struct ctx *c, const struct cell *cells, size_t n, const struct scale *sc)
{
	struct heat h;
	int r = heat_init(&h, cells, n, sc);

	if (r < 0)
		return r;
	out_puts(&c->o, "<h4>");
	out_esc(&c->o, cells[0].test);
	if (cells[0].has_rail)
		out_printf(&c->o, ", rail %lld", cells[0].rail);
	out_printf(&c->o, " (%s, %s)</h4>\n", sc->bw ? "gbps" : "p50_us", sc->unit);
	if (h.nhosts > MATRIX_HOSTS_MAX)
		r = heat_strip(c, &h);
	else
		heat_matrix(c, &h);
	free(h.hosts);
	return r;
}

static bool rail_eq(const struct cell *x, const struct cell *y)
{
	return x->has_rail == y->has_rail && x->rail == y->rail;
}

/* One test's heatmaps (cells sorted by rail), at most MAPS_PER_TEST_MAX. */
static int heat_test(struct ctx *c, struct cell *cells, size_t n)
{
	const char *kind = test_kind(c, cells, n);
	bool bw = streq(kind, "bw"), pairs = false;
	size_t maps = 0, left = 0;
	struct scale sc;
	int r = 0;

	for (size_t i = 0; i < n && !pairs; i++)
		pairs = strcmp(cells[i].a, cells[i].b) != 0;
	if ((!bw && !streq(kind, "lat")) || !pairs)
		return 0;
	r = cells_mark_bad(c, cells, n);
	scale_init(&sc, cells, n, bw);
	out_puts(&c->o, "<h3>Test ");
	out_esc(&c->o, cells[0].test);
	out_puts(&c->o, "</h3>\n");
	for (size_t i = 0, j; i < n && r == 0; i = j) {
		for (j = i; j < n && rail_eq(&cells[i], &cells[j]); j++)
			;
		if (maps >= MAPS_PER_TEST_MAX || c->maps >= MAPS_MAX) {
			left++;
			continue;
		}
		maps++;
		c->maps++;
		r = heat_map(c, cells + i, j - i, &sc);
	}
	if (left)
		out_printf(&c->o, "<p class=\"note\">%zu more maps of this test left out.</p>\n",
			   left);
	return r;
}

/* ---- summarised results ------------------------------------------------------------------- */

/* One entry of results_summary.per_host_rail: a host's mean of a field over the measured pairs
 * it is in on a rail, when the report does not list every row. */
struct phr {
	const char *test, *kind, *host, *field;
	long long rail;
	bool has_rail;
	bool bad;			  /* rows not done, or a failure of the test's verdict */
	double n, failed, mean, min, max; /* NaN when absent or not a number */
};

static int phr_cmp(const void *x, const void *y)
{
	const struct phr *p = x, *q = y;
	int r = strcmp(p->test, q->test);

	if (r || (r = rail_cmp(p->has_rail, p->rail, q->has_rail, q->rail)))
		return r;
	return strcmp(p->host, q->host);
}

static bool phr_rail_eq(const struct phr *x, const struct phr *y)
{
	return x->has_rail == y->has_rail && x->rail == y->rail;
}

/* The per-host summary, sorted by test, rail, host. Caller frees *ret. */
static int phrs_collect(const struct ctx *c, struct phr **ret, size_t *ret_n)
{
	const json_t *sum = json_object_get(c->root, "results_summary");
	const json_t *arr = json_object_get(sum, "per_host_rail"), *e;
	struct phr *v = calloc(json_array_size(arr) + 1, sizeof(*v));
	size_t i, n = 0;

	if (!v)
		return -ENOMEM;
	json_array_foreach(arr, i, e)
	{
		const json_t *rail = json_object_get(e, "rail");
		struct phr x = {.test = jstr(e, "test"),
				.kind = jstr(e, "kind"),
				.host = jstr(e, "host"),
				.field = jstr(e, "field"),
				.has_rail = json_is_integer(rail),
				.n = jnum(e, "n"),
				.failed = jnum(e, "failed"),
				.mean = jnum(e, "mean"),
				.min = jnum(e, "min"),
				.max = jnum(e, "max")};

		x.rail = x.has_rail ? (long long)json_integer_value(rail) : 0;
		if (x.test && x.host && x.field)
			v[n++] = x;
	}
	qsort(v, n, sizeof(*v), phr_cmp);
	*ret = v;
	*ret_n = n;
	return 0;
}

/* A test's rows listed in results and its entries of the per-host summary. */
struct tgroup {
	const char *test, *kind;
	struct cell *cells; /* sorted by rail, a, b */
	size_t ncells;
	struct phr *ph; /* sorted by rail, host; only those of the kind's field */
	size_t nph;
};

/* A group's kind: its summary's, else its results', else the evaluation's. */
static const char *group_kind(const struct ctx *c, const struct tgroup *g)
{
	for (size_t i = 0; i < g->nph; i++) {
		if (g->ph[i].kind)
			return g->ph[i].kind;
	}
	return g->ncells ? test_kind(c, g->cells, g->ncells) : jstr(eval_test(c, g->test), "kind");
}

/* Keep the summary entries of the field a map of the group's kind shows. */
static void group_filter(struct tgroup *g)
{
	const char *field = streq(g->kind, "bw") ? "gbps" : streq(g->kind, "lat") ? "p50_us" : NULL;
	size_t k = 0;

	for (size_t i = 0; i < g->nph; i++) {
		if (streq(g->ph[i].field, field))
			g->ph[k++] = g->ph[i];
	}
	g->nph = k;
}

/* The tests of both sorted lists, in name order. Caller frees *ret. */
static int groups_build(const struct ctx *c, struct cell *cells, size_t nc, struct phr *ph,
			size_t np, struct tgroup **ret, size_t *ret_n)
{
	struct tgroup *g = calloc(nc + np + 1, sizeof(*g));
	size_t i = 0, j = 0, n = 0;

	if (!g)
		return -ENOMEM;
	while (i < nc || j < np) {
		struct tgroup *x = &g[n++];

		x->test = j >= np || (i < nc && strcmp(cells[i].test, ph[j].test) <= 0)
				  ? cells[i].test
				  : ph[j].test;
		x->cells = cells + i;
		for (; i < nc && strcmp(cells[i].test, x->test) == 0; i++)
			x->ncells++;
		x->ph = ph + j;
		for (; j < np && strcmp(ph[j].test, x->test) == 0; j++)
			x->nph++;
		x->kind = group_kind(c, x);
		group_filter(x);
	}
	*ret = g;
	*ret_n = n;
	return 0;
}

/* The distinct hosts of entries, sorted. Caller frees *ret. */
static int phr_hosts(const struct phr *ph, size_t n, const char ***ret, size_t *ret_n)
{
	const char **v = calloc(n + 1, sizeof(*v));
	size_t k = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		v[i] = ph[i].host;
	qsort(v, n, sizeof(*v), str_cmp);
	for (size_t i = 0; i < n; i++) {
		if (!k || strcmp(v[k - 1], v[i]) != 0)
			v[k++] = v[i];
	}
	*ret = v;
	*ret_n = k;
	return 0;
}

/* Is the host (an entry of the summary) a bad node, or a bad rail of it, in the verdict? */
static bool verdict_names(const struct ctx *c, const struct phr *x)
{
	const json_t *nodes = json_object_get(json_object_get(c->root, "evaluation"), "nodes"), *n,
		     *r;
	size_t i, k;

	json_array_foreach(nodes, i, n)
	{
		if (!streq(jstr(n, "hostname"), x->host) || !node_failing(n))
			continue;
		if (streq(jstr(n, "result"), "fail") &&
		    !json_array_size(json_object_get(n, "rails")))
			return true;
		json_array_foreach(json_object_get(n, "rails"), k, r)
		{
			const json_t *ri = json_object_get(r, "rail");

			if (rail_failing(r) &&
			    (!x->has_rail ||
			     (json_is_integer(ri) && json_integer_value(ri) == x->rail)))
				return true;
		}
	}
	return false;
}

/* Mark the hosts of a test's entries (n, sorted) that have rows not done, that the verdict
 * names as a bad node or rail, or that are an end of a failing link (a failure the verdict puts
 * on a node outlines that node only, not its peers). */
static int phrs_mark_bad(const struct ctx *c, struct phr *ph, size_t n)
{
	const json_t *fails = json_object_get(eval_test(c, ph[0].test), "failures"), *f;
	struct fkey *keys = calloc(2 * json_array_size(fails) + 1, sizeof(*keys));
	size_t i, nk = 0;

	if (!keys)
		return -ENOMEM;
	json_array_foreach(fails, i, f)
	{
		const json_t *rail = json_object_get(f, "rail");
		const char *ends[2] = {host_of(c, json_object_get(f, "a")),
				       host_of(c, json_object_get(f, "b"))};

		if (streq(jstr(f, "attributed"), "node"))
			continue;
		for (size_t e = 0; e < 2; e++) {
			struct fkey k = {ends[e], "", 0, json_is_integer(rail)};

			k.rail = k.has_rail ? (long long)json_integer_value(rail) : 0;
			if (k.a)
				keys[nk++] = k;
		}
	}
	qsort(keys, nk, sizeof(*keys), fkey_cmp);
	for (i = 0; i < n; i++) {
		struct fkey k = {ph[i].host, "", ph[i].rail, ph[i].has_rail};

		ph[i].bad = ph[i].failed > 0 || verdict_names(c, &ph[i]) ||
			    bsearch(&k, keys, nk, sizeof(*keys), fkey_cmp) != NULL;
	}
	free(keys);
	return 0;
}

/* A number of the summary: "%.4g", "?" when absent or not finite. */
static void out_num(struct ry_buf *o, double v)
{
	if (isfinite(v))
		out_printf(o, "%.4g", v);
	else
		out_puts(o, "?");
}

/* A count: integral text, "?" when absent or not finite. */
static void out_count(struct ry_buf *o, double v)
{
	if (isfinite(v))
		out_printf(o, "%.15g", v);
	else
		out_puts(o, "?");
}

/* A host's cell of a summary strip: "HOST rail r: mean V UNIT over n pairs (min…max)". */
static void phr_cell(struct ry_buf *o, const struct scale *sc, const struct phr *x, double px,
		     double w)
{
	char fill[16] = "#c8c8c8";

	if (isfinite(x->mean))
		heat_colour(sc, x->mean, fill, sizeof(fill));
	out_printf(o,
		   "<rect class=\"hostcell%s\" x=\"%.1f\" y=\"4\" width=\"%.1f\" height=\"28\" "
		   "fill=\"%s\"%s><title>",
		   x->bad ? " bad" : "", px, w, fill,
		   x->bad ? " stroke=\"#d1001f\" stroke-width=\"2\"" : "");
	out_esc(o, x->host);
	if (x->has_rail)
		out_printf(o, " rail %lld", x->rail);
	if (x->n == 0) {
		out_puts(o, ": no measured pair");
	} else {
		out_puts(o, ": mean ");
		out_num(o, x->mean);
		out_printf(o, " %s over ", sc->unit);
		out_count(o, x->n);
		out_puts(o, " pairs (");
		out_num(o, x->min);
		out_puts(o, "…");
		out_num(o, x->max);
		out_puts(o, ")");
	}
	if (x->failed > 0) {
		out_puts(o, ", ");
		out_count(o, x->failed);
		out_puts(o, " not done");
	}
	out_printf(o, "%s</title></rect>\n", x->bad ? " [failing]" : "");
}

/* One rail's strip of a summarised test: a cell per host, at the host's place among the test's
 * hosts so that the rails line up. */
static void phr_map(struct ctx *c, const struct phr *ph, size_t n, const char **hosts,
		    size_t nhosts, const struct scale *sc)
{
	struct ry_buf *o = &c->o;
	double w = nhosts <= 64 ? 14 : 6, width = 16 + w * (double)nhosts;

	out_puts(o, "<h4>");
	out_esc(o, ph[0].test);
	if (ph[0].has_rail)
		out_printf(o, ", rail %lld", ph[0].rail);
	out_printf(o, " (per-host mean of %s, %s)</h4>\n", sc->bw ? "gbps" : "p50_us", sc->unit);
	out_printf(o, "<div class=\"scroll\"><svg width=\"%.0f\" height=\"96\" role=\"img\">\n",
		   width > 540 ? width : 540);
	/* Failing hosts last, so that their outline is drawn over their neighbours. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			const char **hit =
				bsearch(&ph[i].host, hosts, nhosts, sizeof(char *), str_cmp);

			if (ph[i].bad == (pass == 1) && hit)
				phr_cell(o, sc, &ph[i], 8 + w * (double)(hit - hosts), w);
		}
	}
	heat_legend(c, sc, 40);
	out_puts(o, "</svg></div>\n");
}

/* The heatmaps of a summarised test: per rail one strip of per-host means. */
static int phr_test(struct ctx *c, struct tgroup *g)
{
	bool bw = streq(g->kind, "bw");
	const char **hosts = NULL;
	size_t nhosts = 0, maps = 0, left = 0;
	struct scale sc;
	int r = phr_hosts(g->ph, g->nph, &hosts, &nhosts);

	if (r == 0)
		r = phrs_mark_bad(c, g->ph, g->nph);
	if (r < 0) {
		free(hosts);
		return r;
	}
	scale_start(&sc, bw, "per-host means");
	for (size_t i = 0; i < g->nph; i++)
		scale_add(&sc, g->ph[i].mean);
	scale_end(&sc);
	out_puts(&c->o, "<h3>Test ");
	out_esc(&c->o, g->test);
	out_printf(&c->o,
		   "</h3>\n<p class=\"note\">%zu hosts; each cell is a host's mean over the "
		   "measured pairs it is in on that rail.</p>\n",
		   nhosts);
	for (size_t i = 0, j; i < g->nph; i = j) {
		for (j = i; j < g->nph && phr_rail_eq(&g->ph[i], &g->ph[j]); j++)
			;
		if (maps >= MAPS_PER_TEST_MAX || c->maps >= MAPS_MAX) {
			left++;
			continue;
		}
		maps++;
		c->maps++;
		phr_map(c, g->ph + i, j - i, hosts, nhosts, &sc);
	}
	if (left)
		out_printf(&c->o, "<p class=\"note\">%zu more maps of this test left out.</p>\n",
			   left);
	free(hosts);
	return 0;
}

/* "N result rows; per-host means shown (K listed in full)", when the report summarises. */
static void summary_note(struct ctx *c)
{
	const json_t *sum = json_object_get(c->root, "results_summary");
	const char *why = jstr(sum, "reason");
	struct ry_buf *o = &c->o;

	if (!sum || json_is_null(sum))
		return;
	out_puts(o, "<p class=\"note summarised\">");
	out_count(o, jnum(sum, "rows_total"));
	out_puts(o, " result rows; per-host means shown (");
	out_count(o, jnum(sum, "rows_listed"));
	out_puts(o, " listed in full)");
	if (why) {
		out_puts(o, ": ");
		out_esc(o, why);
	}
	out_puts(o, "</p>\n");
}

static int sec_heatmaps(struct ctx *c, struct tgroup *g, size_t n)
{
	size_t left = 0;
	int r = 0;

	out_puts(&c->o,
		 "<h2 id=\"heatmaps\">Heatmaps</h2>\n<p class=\"note\">Rows are clients "
		 "(a), columns servers (b); a red outline marks a failing pair, grey with an "
		 "X a pair not measured. Hover a cell for its value.</p>\n");
	summary_note(c);
	for (size_t i = 0; i < n && r == 0; i++) {
		if (c->maps >= MAPS_MAX)
			left++;
		else if (g[i].nph)
			r = phr_test(c, &g[i]);
		else if (g[i].ncells)
			r = heat_test(c, g[i].cells, g[i].ncells);
	}
	if (left)
		out_printf(&c->o,
			   "<p class=\"note\">%zu more tests left out (%d maps at most).</p>\n",
			   left, MAPS_MAX);
	if (!c->maps)
		out_elem(&c->o, "p", "No pair test of kind lat or bw.");
	return r;
}

/* ---- latency histograms ------------------------------------------------------------------- */

struct hist {
	double lo, hi;		    /* the log axis */
	size_t count[2][HIST_BINS]; /* p50_us, p99_us */
	size_t max;
	double thr[2];	  /* rule thresholds on the fields, NaN when none */
	size_t nf;	  /* fields shown: p50_us, or both */
	const char *what; /* what is counted: "pairs", "host rails" */
};

static const char *const hist_fields[2] = {"p50_us", "p99_us"};
static const char *const hist_colours[2] = {"#4a7ebb", "#e08a2e"};

/* The threshold of a rule of test on field ("TEST.FIELD" or "FIELD"), NaN when none. */
static double rule_threshold(const json_t *t, const char *test, const char *field)
{
	const json_t *rules = json_object_get(t, "rules"), *r;
	size_t i, n = strlen(test);

	json_array_foreach(rules, i, r)
	{
		const char *m = jstr(r, "metric");

		if (!m || !isfinite(jnum(r, "threshold")))
			continue;
		if (streq(m, field) ||
		    (strncmp(m, test, n) == 0 && m[n] == '.' && streq(m + n + 1, field)))
			return jnum(r, "threshold");
	}
	return NAN;
}

static void hist_range(struct hist *h, double v)
{
	if (!isfinite(v) || v <= 0)
		return;
	h->lo = isnan(h->lo) || v < h->lo ? v : h->lo;
	h->hi = isnan(h->hi) || v > h->hi ? v : h->hi;
}

static size_t hist_bin(const struct hist *h, double v)
{
	double k = floor(log(v / h->lo) / log(h->hi / h->lo) * HIST_BINS);

	return !(k >= 0) ? 0 : k >= HIST_BINS ? HIST_BINS - 1 : (size_t)k; /* NaN: 0 */
}

/* Bins over the values of each field shown (vals[f], n each; NaN where none); false when there
 * is no positive value. */
static bool hist_fill(struct hist *h, double *const vals[2], size_t n)
{
	h->lo = h->hi = NAN;
	for (size_t f = 0; f < h->nf; f++) {
		for (size_t i = 0; i < n; i++)
			hist_range(h, vals[f][i]);
	}
	if (isnan(h->lo))
		return false;
	hist_range(h, h->thr[0]);
	hist_range(h, h->thr[1]);
	if (h->hi <= h->lo * 1.0001) {
		h->lo /= 1.2;
		h->hi *= 1.2;
	}
	for (size_t f = 0; f < h->nf; f++) {
		for (size_t i = 0; i < n; i++) {
			double v = vals[f][i];
			size_t *k;

			if (!isfinite(v) || v <= 0)
				continue;
			k = &h->count[f][hist_bin(h, v)];
			h->max = ++*k > h->max ? *k : h->max;
		}
	}
	return true;
}

#define HX 56.0	 /* plot left */
#define HW 560.0 /* plot width */
#define HY 24.0	 /* plot top */
#define HH 160.0 /* plot height */

static double hist_x(const struct hist *h, double v)
{
	return HX + HW * log(v / h->lo) / log(h->hi / h->lo);
}

static void hist_bars(struct ry_buf *o, const struct hist *h)
{
	double bw = HW / HIST_BINS / (double)h->nf;

	for (size_t f = 0; f < h->nf; f++) {
		for (size_t k = 0; k < HIST_BINS; k++) {
			double ht = HH * (double)h->count[f][k] / (double)h->max;
			double e0 = h->lo * pow(h->hi / h->lo, (double)k / HIST_BINS);
			double e1 = h->lo * pow(h->hi / h->lo, (double)(k + 1) / HIST_BINS);

			if (!h->count[f][k])
				continue;
			out_printf(o,
				   "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
				   "fill=\"%s\"><title>%s %.4g–%.4g µs: %zu</title></rect>\n",
				   HX + bw * (double)(k * h->nf + f), HY + HH - ht, bw, ht,
				   hist_colours[f], hist_fields[f], e0, e1, h->count[f][k]);
		}
	}
}

static void hist_axes(struct ry_buf *o, const struct hist *h)
{
	out_printf(o,
		   "<path d=\"M%.1f %.1fV%.1fH%.1f\" stroke=\"#1f2328\" fill=\"none\"/>\n"
		   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%zu</text>"
		   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">0</text>"
		   "<text transform=\"translate(14 %.1f) rotate(-90)\" text-anchor=\"middle\">"
		   "%s</text>\n",
		   HX, HY, HY + HH, HX + HW, HX - 4, HY + 8, h->max, HX - 4, HY + HH, HY + HH / 2,
		   h->what);
	for (size_t k = 0; k <= HIST_BINS; k += 5) {
		double e = h->lo * pow(h->hi / h->lo, (double)k / HIST_BINS);
		double x = HX + HW * (double)k / HIST_BINS;

		out_printf(o,
			   "<path d=\"M%.1f %.1fv5\" stroke=\"#1f2328\"/><text x=\"%.1f\" "
			   "y=\"%.1f\" text-anchor=\"middle\">%.3g</text>\n",
			   x, HY + HH, x, HY + HH + 16, e);
	}
	out_printf(o,
		   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">latency, µs (log scale, "
		   "%d bins)</text>\n",
		   HX + HW / 2, HY + HH + 34, HIST_BINS);
}

static void hist_marks(struct ry_buf *o, const struct hist *h)
{
	for (size_t f = 0; f < h->nf; f++) {
		double x;

		out_printf(o,
			   "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\"/>"
			   "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
			   HX + HW + 16, HY + 16 * (double)f, hist_colours[f], HX + HW + 30,
			   HY + 9 + 16 * (double)f, hist_fields[f]);
		if (!isfinite(h->thr[f]) || h->thr[f] <= 0)
			continue;
		x = hist_x(h, h->thr[f]);
		out_printf(
			o,
			"<path class=\"threshold\" d=\"M%.1f %.1fV%.1f\" stroke=\"#d1001f\" "
			"stroke-width=\"2\" stroke-dasharray=\"5 3\"/><text x=\"%.1f\" y=\"%.1f\" "
			"fill=\"#d1001f\">%s threshold %.4g</text>\n",
			x, HY - 6, HY + HH, x + 4, HY - 8 + 12 * (double)f, hist_fields[f],
			h->thr[f]);
	}
}

/* The histogram of h's values, or why there is none. */
static void hist_draw(struct ctx *c, struct hist *h, double *const vals[2], size_t n)
{
	struct ry_buf *o = &c->o;

	if (!hist_fill(h, vals, n)) {
		out_elem(o, "p", "No measured latency.");
		return;
	}
	out_printf(o, "<div class=\"scroll\"><svg width=\"%.0f\" height=\"%.0f\" role=\"img\">\n",
		   HX + HW + 110, HY + HH + 44);
	hist_bars(o, h);
	hist_axes(o, h);
	hist_marks(o, h);
	out_puts(o, "</svg></div>\n");
}

static void hist_title(struct ry_buf *o, const char *test)
{
	out_puts(o, "<h3>Test ");
	out_esc(o, test);
	out_puts(o, "</h3>\n");
}

/* The histogram of a latency test's listed pairs: p50_us and p99_us of those measured. */
static int hist_test(struct ctx *c, const struct tgroup *g)
{
	const json_t *t = eval_test(c, g->test);
	struct hist h = {
		.thr = {rule_threshold(t, g->test, "p50_us"), rule_threshold(t, g->test, "p99_us")},
		.nf = 2,
		.what = "pairs"};
	double *v = calloc(2 * g->ncells + 1, sizeof(*v));
	double *vals[2] = {v, v + g->ncells};

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < g->ncells; i++) {
		bool done = cell_done(&g->cells[i]);

		vals[0][i] = done ? g->cells[i].p50 : NAN;
		vals[1][i] = done ? g->cells[i].p99 : NAN;
	}
	hist_title(&c->o, g->test);
	hist_draw(c, &h, vals, g->ncells);
	free(v);
	return 0;
}

/* The histogram of a summarised latency test: the per-host means of p50_us (p99_us is not in
 * the summary). */
static int hist_sum_test(struct ctx *c, const struct tgroup *g)
{
	const json_t *t = eval_test(c, g->test);
	struct hist h = {
		.thr = {rule_threshold(t, g->test, "p50_us"), NAN}, .nf = 1, .what = "host rails"};
	double *v = calloc(g->nph + 1, sizeof(*v));
	double *vals[2] = {v, v};
	const char **hosts = NULL;
	size_t nhosts = 0;

	if (!v || phr_hosts(g->ph, g->nph, &hosts, &nhosts) < 0) {
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < g->nph; i++)
		v[i] = g->ph[i].mean;
	hist_title(&c->o, g->test);
	out_printf(&c->o,
		   "<p class=\"note\">per-host mean of p50_us over %zu hosts: %zu values, one "
		   "per host and rail (p99_us is not in the summary).</p>\n",
		   nhosts, g->nph);
	hist_draw(c, &h, vals, g->nph);
	free(hosts);
	free(v);
	return 0;
}

static int sec_histograms(struct ctx *c, const struct tgroup *g, size_t n)
{
	size_t shown = 0, left = 0;
	int r = 0;

	out_puts(&c->o, "<h2 id=\"latency\">Latency histograms</h2>\n");
	for (size_t i = 0; i < n && r == 0; i++) {
		if (!streq(g[i].kind, "lat") || (!g[i].nph && !g[i].ncells))
			continue;
		if (shown >= HISTS_MAX) {
			left++;
			continue;
		}
		shown++;
		r = g[i].nph ? hist_sum_test(c, &g[i]) : hist_test(c, &g[i]);
	}
	if (left)
		out_printf(&c->o, "<p class=\"note\">%zu more tests left out.</p>\n", left);
	if (!shown)
		out_elem(&c->o, "p", "No latency test.");
	return r;
}

/* ---- configuration ------------------------------------------------------------------------ */

enum cfg_how { CFG_PATH, CFG_HCA, CFG_PCIE, CFG_TOPO };

static const struct cfg_col {
	const char *title, *path; /* CFG_HCA: the member of each hcas[] */
	enum cfg_how how;
} cfg_cols[] = {
	{"OS", "os", CFG_PATH},
	{"kernel", "kernel", CFG_PATH},
	{"OFED", "ofed.version", CFG_PATH},
	{"NVIDIA driver", "nvidia_driver", CFG_PATH},
	{"GPUDirect", "gpudirect", CFG_PATH},
	{"NCCL", "software.nccl", CFG_PATH},
	{"UCX", "software.ucx", CFG_PATH},
	{"Open MPI", "software.openmpi", CFG_PATH},
	{"HCA firmware", "fw_ver", CFG_HCA},
	{"MTU", "mtu", CFG_HCA},
	{"HCA rate (Gb/s)", "rate_gbps", CFG_HCA},
	{"PCIe", NULL, CFG_PCIE},
	{"topology", "topology_digest", CFG_TOPO},
};
#define CFG_NCOLS RY_ARRAY_SIZE(cfg_cols)

/* The text of every node's cells (owned), then each column's majority (borrowed). */
struct cfg {
	size_t n;
	char **cell; /* n x CFG_NCOLS */
	const char *major[CFG_NCOLS];
};

static void cfg_done(struct cfg *t)
{
	for (size_t i = 0; t->cell && i < t->n * CFG_NCOLS; i++)
		free(t->cell[i]);
	free(t->cell);
}

/* The distinct values of member key over the HCAs, sorted, joined with ", ". */
static char *cfg_hca(const json_t *snap, const char *key)
{
	const json_t *hcas = json_object_get(snap, "hcas"), *x;
	size_t n = 0, i;
	const char **v = calloc(json_array_size(hcas) + 1, sizeof(*v));
	char(*nums)[64] = calloc(json_array_size(hcas) + 1, sizeof(*nums));
	struct ry_buf o;
	const char *dflt;

	ry_buf_init(&o, OUT_MAX);
	if (!v || !nums)
		goto out;
	json_array_foreach(hcas, i, x)
	{
		v[n] = scalar(json_object_get(x, key), nums[n], sizeof(nums[n]));
		n++;
	}
	qsort(v, n, sizeof(*v), str_cmp);
	for (i = 0; i < n; i++) {
		if (i && strcmp(v[i], v[i - 1]) == 0)
			continue;
		out_puts(&o, ry_buf_len(&o) ? ", " : "");
		out_puts(&o, v[i]);
	}
	out_puts(&o, n ? "" : "?");
out:
	/* "?" only when out of memory before the values; values that are all "" give "". */
	dflt = v && nums ? "" : "?";
	free(v);
	free(nums);
	return take_or(&o, dflt);
}

/* Each HCA or GPU whose PCIe link trained below its capability; "ok"; "?" when unknown. */
static void cfg_pcie_of(struct ry_buf *o, const json_t *arr, const char *name, size_t *known)
{
	const json_t *x;
	size_t i;

	json_array_foreach(arr, i, x)
	{
		const char *now = jstr(x, "pcie"), *max = jstr(x, "pcie_max");

		if (!now || !max)
			continue;
		(*known)++;
		if (strcmp(now, max) == 0)
			continue;
		out_puts(o, ry_buf_len(o) ? "; " : "");
		out_puts(o, jstr(x, name) ? jstr(x, name) : "?");
		out_puts(o, " ");
		out_puts(o, now);
		out_puts(o, " of ");
		out_puts(o, max);
	}
}

static char *cfg_pcie(const json_t *snap)
{
	struct ry_buf o;
	size_t known = 0;

	ry_buf_init(&o, OUT_MAX);
	cfg_pcie_of(&o, json_object_get(snap, "hcas"), "device", &known);
	cfg_pcie_of(&o, json_object_get(snap, "gpus"), "bus", &known);
	return take_or(&o, known ? "ok" : "?");
}

static char *cfg_text(const json_t *snap, const struct cfg_col *col)
{
	char buf[64];
	const char *s;

	switch (col->how) {
	case CFG_HCA:
		return cfg_hca(snap, col->path);
	case CFG_PCIE:
		return cfg_pcie(snap);
	case CFG_TOPO:
		s = jstr(snap, col->path);
		if (s && strncmp(s, "sha256:", 7) == 0)
			s += 7;
		return s ? strndup(s, 12) : strdup("?");
	default:
		return strdup(scalar(jpath(snap, col->path), buf, sizeof(buf)));
	}
}

/* The most frequent value of column k (ties: the first in byte order). */
static int cfg_majority(struct cfg *t, size_t k)
{
	const char **v = calloc(t->n + 1, sizeof(*v));
	size_t best = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++)
		v[i] = t->cell[i * CFG_NCOLS + k];
	qsort(v, t->n, sizeof(*v), str_cmp);
	for (size_t i = 0, j; i < t->n; i = j) {
		for (j = i; j < t->n && strcmp(v[i], v[j]) == 0; j++)
			;
		if (j - i > best) {
			best = j - i;
			t->major[k] = v[i];
		}
	}
	free(v);
	return 0;
}

static int cfg_build(struct cfg *t, const json_t *nodes)
{
	const json_t *n;
	size_t i;
	int r = 0;

	t->n = json_array_size(nodes);
	t->cell = calloc(t->n * CFG_NCOLS + 1, sizeof(*t->cell));
	if (!t->cell)
		return -ENOMEM;
	json_array_foreach(nodes, i, n)
	{
		for (size_t k = 0; k < CFG_NCOLS; k++) {
			t->cell[i * CFG_NCOLS + k] =
				cfg_text(json_object_get(n, "snapshot"), &cfg_cols[k]);
			if (!t->cell[i * CFG_NCOLS + k])
				return -ENOMEM;
		}
	}
	for (size_t k = 0; k < CFG_NCOLS && r == 0; k++)
		r = cfg_majority(t, k);
	return r;
}

static void cfg_row(struct ry_buf *o, const struct cfg *t, const json_t *node, size_t i)
{
	const char *host = jstr(node, "hostname");

	out_puts(o, "<tr>");
	out_elem(o, "td", host ? host : jstr(node, "id"));
	for (size_t k = 0; k < CFG_NCOLS; k++) {
		const char *v = t->cell[i * CFG_NCOLS + k];
		bool differs = t->n > 1 && strcmp(v, t->major[k]) != 0;
		bool flag = cfg_cols[k].how == CFG_PCIE && strcmp(v, "ok") != 0 && strcmp(v, "?");
		static const char *const cls[2][2] = {
			{"<td>", "<td class=\"flag\">"},
			{"<td class=\"differs\">", "<td class=\"differs flag\">"}};

		out_puts(o, cls[differs][flag]);
		out_esc(o, v);
		out_puts(o, "</td>");
	}
	out_puts(o, "</tr>\n");
}

static int sec_config(struct ctx *c)
{
	const json_t *nodes = json_object_get(c->root, "nodes"), *n;
	struct cfg t = {0};
	size_t i;
	int r;

	out_puts(&c->o,
		 "<h2 id=\"configuration\">Configuration</h2>\n<p class=\"note\">Each "
		 "node's last facts. A value that differs from most nodes' is highlighted; a "
		 "PCIe link below its capability is flagged.</p>\n");
	r = cfg_build(&t, nodes);
	if (r < 0 || !t.n) {
		if (r == 0)
			out_elem(&c->o, "p", json_is_array(nodes) ? "No node." : "Nodes: ?");
		cfg_done(&t);
		return r;
	}
	out_puts(&c->o, "<div class=\"scroll\"><table class=\"config\"><thead><tr><th>node</th>");
	for (size_t k = 0; k < CFG_NCOLS; k++)
		out_elem(&c->o, "th", cfg_cols[k].title);
	out_puts(&c->o, "</tr></thead><tbody>\n");
	json_array_foreach(nodes, i, n)
	{
		cfg_row(&c->o, &t, n, i);
	}
	out_puts(&c->o, "</tbody></table></div>\n");
	cfg_done(&t);
	return 0;
}

/* ---- revalidation, provenance, footer ----------------------------------------------------- */

static void drift_table(struct ry_buf *o, const json_t *drift)
{
	static const struct col cols[] = {{"field", NULL}, {"change", NULL}, {"nodes", NULL}};
	const json_t *d;
	size_t i;

	if (!json_array_size(drift)) {
		out_elem(o, "p", json_is_array(drift) ? "No configuration drift." : "Drift: ?");
		return;
	}
	table_open(o, cols, RY_ARRAY_SIZE(cols));
	json_array_foreach(drift, i, d)
	{
		out_puts(o, "<tr><td>");
		out_scalar(o, json_object_get(d, "field"));
		out_puts(o, "</td><td>");
		out_scalar(o, json_object_get(d, "from"));
		out_puts(o, " → ");
		out_scalar(o, json_object_get(d, "to"));
		out_puts(o, "</td><td>");
		out_joined(o, json_object_get(d, "nodes"), ", ");
		out_puts(o, "</td></tr>\n");
	}
	out_puts(o, "</tbody></table>\n");
}

static void sec_revalidation(struct ctx *c)
{
	static const struct col base[] = {{"baseline report", "id"},
					  {"sha256", "sha256"},
					  {"created at", "created_at"},
					  {"verdict", "verdict"}};
	static const struct col tol[] = {{"bandwidth tolerance (%)", "tolerance.bw_pct"},
					 {"latency tolerance (%)", "tolerance.lat_pct"},
					 {"regressions", "tolerance.regressions"}};
	static const struct col reg[] = {{"test", "test"},
					 {"field", "field"},
					 {"a", "a"},
					 {"b", "b"},
					 {"rail", "rail"},
					 {"baseline", "baseline"},
					 {"current", "current"},
					 {"delta %", "delta_pct"}};
	static const struct col chk[] = {{"playbook", "playbook.name"},
					 {"version", "playbook.version"},
					 {"deployment", "deployment"},
					 {"check mode", "check_mode"},
					 {"state", "state"},
					 {"reason", "reason"}};
	const json_t *cmp = json_object_get(c->root, "comparison");
	struct ry_buf *o = &c->o;

	if (!cmp || json_is_null(cmp))
		return;
	/* A revalidation's regressions come first, before any other finding. */
	out_printf(o,
		   "<h2 id=\"regressions\">Regressions</h2>\n<p>%zu of %zu metrics beyond "
		   "tolerance",
		   json_array_size(json_object_get(cmp, "regressions")),
		   json_array_size(json_object_get(cmp, "metrics")));
	if (streq(jstr(json_object_get(cmp, "tolerance"), "regressions"), "inform"))
		out_puts(o,
			 " (they inform only: the playbook's "
			 "<code>validation.tolerance.regressions</code> is <code>inform</code>)");
	out_puts(o, ".</p>\n");
	table_of(o, json_object_get(cmp, "regressions"), reg, RY_ARRAY_SIZE(reg), "No regression.");
	out_puts(o, "<h3>Configuration checks</h3>\n");
	table_of(o, json_object_get(cmp, "checks"), chk, RY_ARRAY_SIZE(chk), "None recorded.");
	out_puts(o, "<h2 id=\"revalidation\">Revalidation</h2>\n");
	fields_of(o, json_object_get(c->root, "baseline"), base, RY_ARRAY_SIZE(base));
	fields_of(o, cmp, tol, RY_ARRAY_SIZE(tol));
	out_puts(o, "<h3>Drift</h3>\n");
	drift_table(o, json_object_get(cmp, "drift"));
	out_puts(o, "<h3>Nodes</h3>\n<p>added: ");
	out_joined(o, json_object_get(cmp, "nodes_added"), ", ");
	out_puts(o, "<br>removed: ");
	out_joined(o, json_object_get(cmp, "nodes_removed"), ", ");
	out_puts(o, "</p>\n");
}

static void deployments_table(struct ry_buf *o, const json_t *deps)
{
	static const struct col cols[] = {{"id", "id"},
					  {"playbook", "playbook.name"},
					  {"version", "playbook.version"},
					  {"sha256", "playbook.sha256"},
					  {"state", "state"},
					  {"check mode", "check_mode"},
					  {"created at", "created_at"},
					  {"finished at", "finished_at"}};
	const json_t *d;
	size_t i;

	if (!json_array_size(deps)) {
		out_elem(o, "p", json_is_array(deps) ? "No deployment." : "Deployments: ?");
		return;
	}
	out_puts(o, "<div class=\"scroll\"><table><thead><tr>");
	for (size_t k = 0; k < RY_ARRAY_SIZE(cols); k++)
		out_elem(o, "th", cols[k].title);
	out_puts(o, "<th>nodes</th></tr></thead><tbody>\n");
	json_array_foreach(deps, i, d)
	{
		out_puts(o, "<tr>");
		for (size_t k = 0; k < RY_ARRAY_SIZE(cols); k++) {
			out_puts(o, "<td>");
			out_scalar(o, jpath(d, cols[k].path));
			out_puts(o, "</td>");
		}
		out_printf(o, "<td><details><summary>%zu nodes</summary>",
			   json_array_size(json_object_get(d, "nodes")));
		out_joined(o, json_object_get(d, "nodes"), ", ");
		out_puts(o, "</details></td></tr>\n");
	}
	out_puts(o, "</tbody></table></div>\n");
}

static void sec_provenance(struct ctx *c)
{
	static const struct col pbs[] = {
		{"name", "name"}, {"version", "version"}, {"sha256", "sha256"}};
	static const struct col camp[] = {{"campaign", "id"},
					  {"state", "state"},
					  {"created at", "created_at"},
					  {"finished at", "finished_at"},
					  {"transport", "transport"},
					  {"quick", "quick"},
					  {"seed", "seed"},
					  {"actor", "actor"},
					  {"playbook", "playbook.name"},
					  {"playbook version", "playbook.version"},
					  {"playbook sha256", "playbook.sha256"}};
	static const struct col left[] = {{"id", "id"}, {"host", "hostname"}, {"reason", "reason"}};
	const json_t *cp = json_object_get(c->root, "campaign");
	struct ry_buf *o = &c->o;

	out_puts(o, "<h2 id=\"provenance\">Playbooks and deployments</h2>\n<h3>Playbooks</h3>\n");
	table_of(o, json_object_get(c->root, "playbooks"), pbs, RY_ARRAY_SIZE(pbs), "None.");
	out_puts(o, "<h3>Deployments</h3>\n");
	deployments_table(o, json_object_get(c->root, "deployments"));
	out_puts(o, "<h2 id=\"campaign\">Campaign</h2>\n");
	fields_of(o, cp, camp, RY_ARRAY_SIZE(camp));
	out_puts(o, "<h3>Nodes left out</h3>\n");
	table_of(o, json_object_get(cp, "left_out"), left, RY_ARRAY_SIZE(left), "None.");
	out_puts(o, "<h3>Options</h3>\n");
	out_pre_json(o, json_object_get(cp, "options"));
	out_puts(o, "<h3>Definition (tests and acceptance as run)</h3>\n");
	out_pre_json(o, json_object_get(cp, "definition"));
}

static void sec_footer(struct ctx *c)
{
	out_puts(&c->o,
		 "<footer>\n<h2 id=\"verify\">How to verify</h2>\n<p>This page is a view of "
		 "<code>signoff.json</code>; the signature covers that file, not this page. "
		 "In the directory of <code>signoff.json</code>, <code>signoff.p7s</code> and "
		 "<code>ca.pem</code>, with the railyard command line:</p>\n<pre>");
	out_esc(&c->o, SO_VERIFY_RAILYARD);
	out_puts(&c->o,
		 "</pre>\n<p>or with stock OpenSSL, both steps: the first checks the "
		 "signature and that the CA issued the signer, the second that the signer is "
		 "the sign-off key (extended key usage Document Signing, "
		 "1.3.6.1.5.5.7.3.36, and nothing else). The first alone also accepts a "
		 "signature by any other certificate of the CA, such as a node's.</p>\n<pre>");
	out_esc(&c->o, SO_VERIFY_OPENSSL);
	out_puts(&c->o, "</pre>\n</footer>\n</body>\n</html>\n");
}

static void nav(struct ctx *c)
{
	const json_t *cmp = json_object_get(c->root, "comparison");

	out_puts(&c->o, "<nav><a href=\"#summary\">summary</a> · ");
	if (cmp && !json_is_null(cmp))
		out_puts(&c->o, "<a href=\"#regressions\">regressions</a> · ");
	out_puts(&c->o,
		 "<a href=\"#failures\">failures</a>"
		 " · <a href=\"#heatmaps\">heatmaps</a> · <a href=\"#latency\">latency</a> · "
		 "<a href=\"#configuration\">configuration</a> · <a href=\"#provenance\">"
		 "playbooks</a> · <a href=\"#campaign\">campaign</a> · <a href=\"#verify\">"
		 "verify</a></nav>\n");
}

/* ---- entry -------------------------------------------------------------------------------- */

static int render(struct ctx *c)
{
	struct cell *cells = NULL;
	struct phr *ph = NULL;
	struct tgroup *groups = NULL;
	size_t ncells = 0, nph = 0, ngroups = 0;
	int r = ids_build(c);

	if (r == 0)
		r = cells_collect(c, &cells, &ncells);
	if (r == 0)
		r = phrs_collect(c, &ph, &nph);
	if (r == 0)
		r = groups_build(c, cells, ncells, ph, nph, &groups, &ngroups);
	if (r < 0)
		goto out;
	page_head(c);
	sec_header(c);
	sec_verdict(c);
	nav(c);
	sec_revalidation(c);
	sec_failures(c);
	r = sec_heatmaps(c, groups, ngroups);
	if (r == 0)
		r = sec_histograms(c, groups, ngroups);
	if (r < 0)
		goto out;
	r = sec_config(c);
	if (r < 0)
		goto out;
	sec_provenance(c);
	sec_footer(c);
	r = ry_buf_error(&c->o) ? -ENOMEM : 0;
out:
	free(groups);
	free(ph);
	free(cells);
	return r;
}

/* The members so_html_render() requires besides "schema". */
static const char *const required[] = {"id", "kind", "cluster", "created_at", "verdict"};

static int check_report(const json_t *root, char *errbuf, size_t errlen)
{
	const char *schema = jstr(root, "schema");

	if (!json_is_object(root)) {
		snprintf(errbuf, errlen, "not a JSON object");
		return -RY_E_INVALID;
	}
	if (!json_object_get(root, "schema")) {
		snprintf(errbuf, errlen, "missing member: schema");
		return -RY_E_INVALID;
	}
	if (!streq(schema, SO_SCHEMA) && !streq(schema, SO_SCHEMA_V1)) {
		char *s = schema ? util_escape(schema, false) : NULL;

		snprintf(errbuf, errlen, "schema %s%s%s is not %s", s ? "\"" : "",
			 s ? s : "(not a string)", s ? "\"" : "", SO_SCHEMA);
		free(s);
		return -RY_E_INVALID;
	}
	for (size_t k = 0; k < RY_ARRAY_SIZE(required); k++) {
		if (!json_object_get(root, required[k])) {
			snprintf(errbuf, errlen, "missing member: %s", required[k]);
			return -RY_E_INVALID;
		}
	}
	return 0;
}

int so_html_render(const char *json, size_t len, char **ret_html, size_t *ret_len, char *errbuf,
		   size_t errlen)
{
	struct ctx c = {0};
	json_error_t jerr;
	char dummy[1];
	int r;

	ry_buf_init(&c.o, OUT_MAX);
	if (!errbuf || !errlen) {
		errbuf = dummy;
		errlen = sizeof(dummy);
	}
	errbuf[0] = '\0';
	c.root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!c.root) {
		if (json_error_code(&jerr) == json_error_out_of_memory) {
			snprintf(errbuf, errlen, "out of memory parsing the report");
			return -ENOMEM;
		}
		snprintf(errbuf, errlen, "not JSON: %d:%d: %s", jerr.line, jerr.column, jerr.text);
		return -RY_E_INVALID;
	}
	r = check_report(c.root, errbuf, errlen);
	if (r < 0)
		goto out;
	c.eval = json_object_get(c.root, "evaluation");
	r = render(&c);
	if (r < 0) {
		snprintf(errbuf, errlen, "out of memory rendering the page");
		goto out;
	}
	r = ry_buf_take(&c.o, ret_html, ret_len);
out:
	ry_buf_done(&c.o);
	free(c.ids);
	json_decref((json_t *)c.root);
	return r;
}
