/* The HTML view of a sign-off report: the signed JSON in, one page out, failures first (verdict
 * and what failed and why, then the report's facts, tests, heatmaps, latency histograms,
 * configuration, revalidation, provenance, how to verify, and the raw JSON last, collapsed).
 * Owns only the render's buffers. Every member is read defensively: a hostile file gets "not
 * reported" where a value is absent or of the wrong type, never a crash and never a "?". */
#include <ctype.h>
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
#include "controller/signoff/snapshot.h" /* so_version_same */

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

/* What the page says for a value the report does not hold (absent, or of the wrong type). */
#define NOT_REPORTED "not reported"

/* v in plain decimal with at least sig significant digits, never in exponent form below 1e15
 * (1180, 14.5, 0.0123, 12,345; not 1.18e+03), trailing zeros of a fraction dropped; "—" when
 * not finite. Returns buf (len >= 32). */
static const char *num(double v, int sig, char *buf, size_t len)
{
	double a = fabs(v);
	int dec;
	char tmp[64], *dot;

	if (!isfinite(v)) {
		snprintf(buf, len, "—");
		return buf;
	}
	if (a >= 1e15 || (a > 0 && a < 1e-6)) {
		snprintf(buf, len, "%.*g", sig, v);
		return buf;
	}
	dec = sig - 1 - (a > 0 ? (int)floor(log10(a)) : 0);
	dec = dec < 0 ? 0 : dec > 9 ? 9 : dec;
	snprintf(tmp, sizeof(tmp), "%.*f", dec, v);
	dot = strchr(tmp, '.');
	if (dot) {
		char *end = tmp + strlen(tmp);

		while (end > dot + 1 && end[-1] == '0')
			*--end = '\0';
		if (end == dot + 1)
			*dot = '\0';
	}
	if (a >= 10000) { /* group the integer digits by thousands */
		size_t neg = tmp[0] == '-', idig = strcspn(tmp + neg, "."), k = 0;

		for (size_t i = 0; tmp[i] && k + 2 < len; i++) {
			size_t pos = i - neg;

			if (i > neg && pos < idig && (idig - pos) % 3 == 0)
				buf[k++] = ',';
			buf[k++] = tmp[i];
		}
		buf[k] = '\0';
		return buf;
	}
	snprintf(buf, len, "%s", tmp);
	return buf;
}

/* A scalar as text: strings as they are, numbers in plain decimal, true/false, "—" for null
 * (not applicable in this schema) and "not reported" for absent or anything else. buf holds a
 * formatted number (len >= 64). */
static const char *scalar(const json_t *v, char *buf, size_t len)
{
	const char *s;

	if (json_is_real(v))
		return num(json_real_value(v), RY_JSON_REAL_SHORT, buf, len);
	s = ry_json_scalar_str(v, RY_JSON_REAL_SHORT, buf, len);
	if (s)
		return s;
	return json_is_null(v) ? "—" : NOT_REPORTED;
}

static void out_scalar(struct ry_buf *o, const json_t *v)
{
	char buf[64];

	out_esc(o, scalar(v, buf, sizeof(buf)));
}

/* <tag>escaped text</tag>; NULL text shows "not reported". */
static void out_elem(struct ry_buf *o, const char *tag, const char *text)
{
	out_printf(o, "<%s>", tag);
	out_esc(o, text ? text : NOT_REPORTED);
	out_printf(o, "</%s>", tag);
}

/* The strings of an array, each escaped, separated by sep. */
static void out_joined(struct ry_buf *o, const json_t *arr, const char *sep)
{
	size_t i;
	const json_t *x;

	if (!json_is_array(arr)) {
		out_puts(o, NOT_REPORTED);
		return;
	}
	if (!json_array_size(arr))
		out_puts(o, "none");
	json_array_foreach(arr, i, x)
	{
		if (i)
			out_puts(o, sep);
		out_scalar(o, x);
	}
}

static int str_cmp(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* A reason as written for a reader: an operator spelled as a sign ("not <= 4.62" is "not ≤
 * 4.62"), arrows as arrows, a test's name said once ("pair-bw: fails ...; e.g. pair-bw: gbps
 * 183.6" is "...; e.g. gbps 183.6"). Escaped. */
static void out_reason(struct ry_buf *o, const char *s)
{
	static const struct {
		const char *from, *to;
	} subst[] = {{" <= ", " ≤ "}, {" >= ", " ≥ "},	      {"<->", "↔"},
		     {" -> ", " → "}, {" x min ", " × min "}, {" x median ", " × median "}};
	char prefix[72];
	size_t np = strcspn(s, ": "), k = 0;
	struct ry_buf t;
	char *text = NULL;

	if (!*s)
		return;
	prefix[0] = '\0';
	if (np > 0 && np < 64 && s[np] == ':' && s[np + 1] == ' ')
		snprintf(prefix, sizeof(prefix), "e.g. %.*s: ", (int)np, s);
	ry_buf_init(&t, OUT_MAX);
	while (s[k]) {
		size_t j, pl = strlen(prefix);

		if (pl && strncmp(s + k, prefix, pl) == 0) {
			ry_buf_add(&t, "e.g. ");
			k += pl;
			continue;
		}
		for (j = 0; j < RY_ARRAY_SIZE(subst); j++) {
			if (strncmp(s + k, subst[j].from, strlen(subst[j].from)) == 0)
				break;
		}
		if (j < RY_ARRAY_SIZE(subst)) {
			ry_buf_add(&t, subst[j].to);
			k += strlen(subst[j].from);
		} else {
			ry_buf_addn(&t, s + k, 1);
			k++;
		}
	}
	if (ry_buf_take(&t, &text, NULL) < 0 || !text) {
		ry_buf_fail(o, -ENOMEM);
		return;
	}
	out_esc(o, text);
	free(text);
}

/* A reason member: the reason, or "no reason given". */
static void out_reason_v(struct ry_buf *o, const json_t *v)
{
	if (json_is_string(v) && *json_string_value(v))
		out_reason(o, json_string_value(v));
	else
		out_puts(o, "no reason given");
}

/* A list of reasons, one item each. */
static void out_reasons(struct ry_buf *o, const json_t *arr)
{
	size_t i;
	const json_t *x;

	if (!json_array_size(arr)) {
		out_puts(o, json_is_array(arr) ? "" : NOT_REPORTED);
		return;
	}
	out_puts(o, "<ul class=\"reasons\">");
	json_array_foreach(arr, i, x)
	{
		out_puts(o, "<li>");
		out_reason_v(o, x);
		out_puts(o, "</li>");
	}
	out_puts(o, "</ul>");
}

/* A time of the report (RFC 3339, UTC: "2026-12-01T04:30:00.123Z") as "2026-12-01 04:30:00
 * UTC", kept on one line; any other text as it is. */
static void out_time(struct ry_buf *o, const json_t *v)
{
	const char *s = json_string_value(v);
	size_t n = s ? strlen(s) : 0, frac;
	bool iso = n >= 20 && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' &&
		   s[16] == ':' && s[n - 1] == 'Z';

	frac = iso && s[19] == '.' ? strspn(s + 20, "0123456789") + 1 : 0;
	if (!iso || 19 + frac + 1 != n) {
		char buf[64];

		out_esc(o, scalar(v, buf, sizeof(buf)));
		return;
	}
	out_puts(o, "<span class=\"t\">");
	out_write(o, s, 10);
	out_puts(o, " ");
	out_write(o, s + 11, 8);
	out_puts(o, " UTC</span>");
}

/* Who acted: "local:uid 0" (the controller's own command line) as "uid 0 on the controller
 * host"; a user name as it is. */
static void out_actor(struct ry_buf *o, const json_t *v)
{
	const char *s = json_string_value(v);
	char buf[64];

	if (s && strncmp(s, "local:", 6) == 0) {
		out_esc(o, s + 6);
		out_puts(o, " on the controller host (command line)");
		return;
	}
	out_esc(o, scalar(v, buf, sizeof(buf)));
}

/* A member at a dotted path, as its kind reads: times with their zone, actors in words. */
static void out_field(struct ry_buf *o, const char *path, const json_t *v)
{
	size_t n = path ? strlen(path) : 0;

	if (n > 3 && strcmp(path + n - 3, "_at") == 0)
		out_time(o, v);
	else if (n >= 5 && strcmp(path + n - 5, "actor") == 0)
		out_actor(o, v);
	else
		out_scalar(o, v);
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
		out_elem(o, "p", json_is_array(arr) ? none : NOT_REPORTED);
		return;
	}
	table_open(o, cols, n);
	json_array_foreach(arr, i, row)
	{
		out_puts(o, "<tr>");
		for (size_t k = 0; k < n; k++) {
			out_puts(o, "<td>");
			out_field(o, cols[k].path, jpath(row, cols[k].path));
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
		out_field(o, cols[k].path, jpath(obj, cols[k].path));
		out_puts(o, "</dd>");
	}
	out_puts(o, "</dl>\n");
}

/* A JSON value pretty-printed in a <pre>. */
static void out_pre_json(struct ry_buf *o, const json_t *v)
{
	char *s;

	if (!v) {
		out_puts(o, "<p>" NOT_REPORTED "</p>\n");
		return;
	}
	s = json_dumps(v,
		       JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(16));
	if (!s) {
		ry_buf_fail(o, -ENOMEM);
		return;
	}
	out_puts(o, "<pre class=\"json\">");
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
	"td ul,dd ul,li ul{margin:0;padding-left:18px}\n"
	"dl{display:grid;grid-template-columns:max-content auto;gap:2px 16px;margin:6px 0}"
	"dt{color:#57606a}dd{margin:0;overflow-wrap:anywhere}.t{white-space:nowrap}\n"
	"pre,code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;"
	"font-size:12px}pre{background:#f6f8fa;padding:8px;overflow-x:auto}\n"
	".verdict{color:#fff;padding:14px 20px;border-radius:6px;margin:16px 0}"
	".verdict "
	".big{font-size:40px;font-weight:700;text-transform:uppercase;letter-spacing:2px}\n"
	".verdict.pass{background:#1a7f37}.verdict.fail{background:#cf222e}"
	".verdict.incomplete{background:#bf8700}.verdict.regressed{background:#cf222e}"
	".verdict.unknown{background:#6e7781}.verdict.smoke{background:#9a6700}\n"
	".verdict ul{margin:4px 0;padding-left:22px}.verdict .why{font-size:16px;margin:4px 0}\n"
	".badge{display:inline-block;background:rgba(255,255,255,.25);border-radius:4px;"
	"padding:1px 8px;margin-right:8px}\n"
	".failed-list>li{margin:6px 0}.failed-list b.node{font-size:15px}"
	".state{font-weight:700;border:1px solid;border-radius:3px;padding:0 5px;"
	"margin-left:6px}.state.fail{color:#cf222e}.state.transient{color:#57606a}\n"
	".config td:first-child{white-space:nowrap}"
	"td.differs{background:#fff3b0;font-weight:600}td.differs::before{content:\"≠ \"}"
	".flag{color:#cf222e;font-weight:600}.note{color:#57606a}\n"
	".scroll{overflow-x:auto}svg{display:block;margin:6px 0 14px}"
	/* Ink is inherited, so that a cell's text may set its own fill (black or white). */
	"svg{fill:#1f2328}svg text{font-size:11px}svg text.v{font-size:10px}"
	"svg text.mark{font-size:13px;font-weight:700}\n"
	"details.raw{margin:8px 0}details.raw summary{cursor:pointer;color:#0969da}\n"
	"@media print{body{max-width:none;padding:0;font-size:11pt}"
	"*{-webkit-print-color-adjust:exact;print-color-adjust:exact}"
	".scroll{overflow:visible}nav{display:none}"
	"svg,table,dl,.verdict,.failed-list>li,pre{break-inside:avoid;page-break-inside:avoid}"
	"h2,h3,h4{break-after:avoid;page-break-after:avoid}"
	"a[href^=\"http\"]::after{content:\" (\" attr(href) \")\"}"
	"details.raw>summary::after{content:\" (see signoff.json)\"}}\n";

static void page_head(struct ctx *c)
{
	struct ry_buf *o = &c->o;

	out_puts(o, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		    "style-src 'unsafe-inline'\">\n<meta name=\"viewport\" "
		    "content=\"width=device-width, initial-scale=1\">\n<title>Railyard sign-off ");
	out_esc(o, jstr(c->root, "cluster") ? jstr(c->root, "cluster") : "(cluster not reported)");
	out_puts(o, " ");
	out_esc(o, jstr(c->root, "id") ? jstr(c->root, "id") : "(id not reported)");
	out_puts(o, "</title>\n<style>\n");
	out_puts(o, page_style);
	out_puts(o, "</style>\n</head>\n<body>\n");
}

/* The page's title: what it is and for which cluster; its facts come after its failures. */
static void sec_title(struct ctx *c)
{
	const char *kind = jstr(c->root, "kind");
	struct ry_buf *o = &c->o;

	out_puts(o, "<header>\n<h1>");
	out_esc(o, streq(kind, "revalidation") ? "Revalidation"
		   : streq(kind, "signoff")    ? "Sign-off"
					       : "Report");
	out_puts(o, ": ");
	out_scalar(o, json_object_get(c->root, "cluster"));
	out_puts(o, "</h1>\n<p class=\"note\">");
	out_time(o, json_object_get(c->root, "created_at"));
	out_printf(o, " · %zu nodes · report ", json_array_size(json_object_get(c->root, "nodes")));
	out_scalar(o, json_object_get(c->root, "id"));
	out_puts(o, "</p>\n</header>\n");
}

static void sec_report(struct ctx *c)
{
	static const struct col cols[] = {
		{"cluster", "cluster"},
		{"report", "id"},
		{"kind", "kind"},
		{"created at", "created_at"},
		{"controller version", "controller.version"},
		{"CA fingerprint", "controller.ca_fingerprint"},
	};

	out_puts(&c->o, "<h2 id=\"report\">Report</h2>\n");
	fields_of(&c->o, c->root, cols, RY_ARRAY_SIZE(cols));
}

/* The campaign's member, else the evaluation's. */
static const json_t *campaign_or_eval(const struct ctx *c, const char *key)
{
	const json_t *v = json_object_get(json_object_get(c->root, "campaign"), key);

	return v ? v : json_object_get(c->eval, key);
}

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

static bool failure_transient(const json_t *f)
{
	return streq(jstr(f, "attributed"), "transient");
}

/* What the verdict counts: failing nodes, failing pairs (transients are not failures) and the
 * transients retested and passed. */
struct tally {
	size_t nodes, pairs, transients, links;
};

static struct tally tally_of(const struct ctx *c)
{
	struct tally t = {0};
	const json_t *x, *f;
	size_t i, k;

	json_array_foreach(json_object_get(c->eval, "nodes"), i, x)
	{
		t.nodes += node_failing(x);
	}
	json_array_foreach(json_object_get(c->eval, "tests"), i, x)
	{
		size_t listed = 0;
		double total = jnum(x, "failures_total");

		json_array_foreach(json_object_get(x, "failures"), k, f)
		{
			if (failure_transient(f))
				t.transients++;
			else
				t.pairs++;
			listed++;
		}
		if (isfinite(total) && total > (double)listed && total < 1e12)
			t.pairs += (size_t)total - listed;
	}
	t.links = json_array_size(json_object_get(c->eval, "links"));
	return t;
}

/* One sentence under the verdict: what it means, in words. */
static void verdict_why(struct ctx *c, const char *v)
{
	struct tally t = tally_of(c);
	const json_t *cmp = json_object_get(c->root, "comparison");
	struct ry_buf *o = &c->o;

	out_puts(o, "<div class=\"why\" id=\"why\">");
	if (streq(v, "pass")) {
		out_puts(o, "Every node, rail and pair measured met the rules.");
	} else if (streq(v, "fail")) {
		out_printf(o, "%zu %s and %zu failing %s", t.nodes, t.nodes == 1 ? "node" : "nodes",
			   t.pairs, t.pairs == 1 ? "pair" : "pairs");
		if (t.links)
			out_printf(o, " (%zu suspect %s)", t.links,
				   t.links == 1 ? "link" : "links");
		out_puts(o, " fail the rules: listed below.");
	} else if (streq(v, "regressed")) {
		out_printf(o,
			   "The tests passed, but against the baseline %zu %s beyond tolerance "
			   "or a configuration check failed: listed below.",
			   json_array_size(json_object_get(cmp, "regressions")),
			   json_array_size(json_object_get(cmp, "regressions")) == 1
				   ? "metric is"
				   : "metrics are");
	} else if (streq(v, "incomplete")) {
		out_puts(o, "Not every test ran to its end: the rules could not be judged on every "
			    "pair.");
	} else {
		out_puts(o, "The report's verdict is not one this page knows.");
	}
	if (t.transients)
		out_printf(o, " %zu %s retested and passed (transient, not counted as failures).",
			   t.transients, t.transients == 1 ? "pair was" : "pairs were");
	out_puts(o, "</div>\n");
}

static void sec_verdict(struct ctx *c)
{
	const char *v = jstr(c->root, "verdict"), *tr;
	const json_t *quick = campaign_or_eval(c, "quick");
	bool known = streq(v, "pass") || streq(v, "fail") || streq(v, "incomplete") ||
		     streq(v, "regressed");
	bool acceptance = json_is_true(json_object_get(c->root, "acceptance"));
	size_t excluded = json_array_size(json_object_get(c->root, "excluded")), i;
	const json_t *x, *reasons = json_object_get(c->root, "acceptance_reasons");
	struct ry_buf *o = &c->o;

	/* A pass that is not an acceptance sign-off is never shown as a green pass. */
	out_printf(o, "<section class=\"verdict %s\" id=\"verdict\">\n<div class=\"big\">",
		   !known || !v			     ? "unknown"
		   : streq(v, "pass") && !acceptance ? "smoke"
						     : v);
	out_esc(o, v ? v : "unknown verdict");
	if (excluded)
		out_printf(o, " with %zu excluded", excluded);
	out_puts(o, "</div>\n");
	verdict_why(c, v);
	out_puts(o, "<div class=\"kind\" id=\"acceptance\">");
	if (acceptance) {
		out_puts(o, "Acceptance sign-off");
	} else {
		out_puts(o, "Smoke / baseline report: not an acceptance sign-off");
		if (json_array_size(reasons)) {
			out_puts(o, ", because:");
			out_reasons(o, reasons);
		} else if (!json_object_get(c->root, "acceptance")) {
			out_puts(o, " (signed before acceptance rules)");
		}
	}
	out_puts(o, "</div>\n");
	if (excluded) {
		out_puts(o, "<div class=\"kind\" id=\"excluded\">Excluded from this verdict:<ul>");
		json_array_foreach(json_object_get(c->root, "excluded"), i, x)
		{
			out_puts(o, "<li><b>");
			out_scalar(o, json_object_get(x, "hostname"));
			out_puts(o, "</b>");
			out_reasons(o, json_object_get(x, "reasons"));
			out_puts(o, "</li>");
		}
		out_puts(o, "</ul></div>\n");
	}
	out_puts(o, "<div><span class=\"badge\">transport: ");
	tr = json_string_value(campaign_or_eval(c, "transport"));
	if (streq(tr, "tcp"))
		out_puts(o, "TCP baseline (not RDMA)");
	else if (streq(tr, "verbs"))
		out_puts(o, "verbs (RDMA)");
	else
		out_esc(o, tr ? tr : NOT_REPORTED);
	out_puts(o, "</span><span class=\"badge\">");
	out_puts(o, json_is_true(quick)	   ? "smoke run (--quick): thresholds indicative"
		    : json_is_false(quick) ? "full run"
					   : "run length not reported");
	out_puts(o, "</span></div>\n</section>\n");
}

/* ---- failures ----------------------------------------------------------------------------- */

static int node_nat_cmp(const void *x, const void *y)
{
	const json_t *p = *(const json_t *const *)x, *q = *(const json_t *const *)y;
	const char *a = jstr(p, "hostname"), *b = jstr(q, "hostname");

	if (!a || !b)
		return a ? -1 : b ? 1 : 0;
	return util_natcmp(a, b);
}

/* The members of arr (objects with a hostname) in natural order of host name. Caller frees;
 * NULL when out of memory. */
static const json_t **nodes_sorted(const json_t *arr)
{
	size_t n = json_array_size(arr);
	const json_t **v = calloc(n + 1, sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		v[i] = json_array_get(arr, i);
	qsort(v, n, sizeof(*v), node_nat_cmp);
	return v;
}

static void failing_rails(struct ry_buf *o, const json_t *n)
{
	const json_t *rails = json_object_get(n, "rails"), *r;
	size_t i, shown = 0;

	json_array_foreach(rails, i, r)
	{
		if (!rail_failing(r))
			continue;
		out_puts(o, shown++ ? "<li>" : "<ul><li>");
		out_puts(o, "rail ");
		out_scalar(o, json_object_get(r, "rail"));
		out_puts(o, " (");
		out_scalar(o, json_object_get(r, "device"));
		out_puts(o, ") <span class=\"state fail\">FAIL</span>");
		out_reasons(o, json_object_get(r, "reasons"));
		out_puts(o, "</li>");
	}
	if (shown)
		out_puts(o, "</ul>");
}

static int failing_nodes(struct ctx *c)
{
	const json_t *nodes = json_object_get(c->eval, "nodes");
	const json_t **v = nodes_sorted(nodes);
	struct ry_buf *o = &c->o;
	size_t shown = 0;

	if (!v)
		return -ENOMEM;
	out_puts(o, "<h3>Nodes and rails</h3>\n");
	for (size_t i = 0; i < json_array_size(nodes); i++) {
		const json_t *n = v[i];
		const char *host = jstr(n, "hostname");

		if (!node_failing(n))
			continue;
		out_puts(o, shown++ ? "<li>"
				    : "<ul class=\"failed-list\" id=\"failing-nodes\">\n<li>");
		out_puts(o, "<b class=\"node\">");
		out_esc(o, host ? host : jstr(n, "id") ? jstr(n, "id") : "unnamed node");
		out_puts(o, "</b> <span class=\"state fail\">");
		out_puts(o, streq(jstr(n, "result"), "fail") ? "FAIL" : "FAILING RAIL");
		out_puts(o, "</span>");
		out_reasons(o, json_object_get(n, "reasons"));
		failing_rails(o, n);
		out_puts(o, "</li>\n");
	}
	if (shown)
		out_puts(o, "</ul>\n");
	else
		out_elem(o, "p",
			 json_is_array(nodes) ? "No node and no rail failed."
					      : "Nodes: " NOT_REPORTED);
	free(v);
	return 0;
}

/* A pair's end named by its host, else by what the evaluation holds. */
static void out_end(struct ctx *c, const json_t *host, const json_t *id)
{
	const char *h = json_string_value(host);

	out_esc(&c->o, h ? h : host_of(c, id) ? host_of(c, id) : "unnamed node");
}

static void failing_links(struct ctx *c)
{
	const json_t *links = json_object_get(c->eval, "links"), *l;
	struct ry_buf *o = &c->o;
	size_t i;

	if (!json_array_size(links))
		return;
	out_puts(o, "<h3>Links</h3>\n<ul class=\"failed-list\">\n");
	json_array_foreach(links, i, l)
	{
		out_puts(o, "<li><b>");
		out_end(c, json_object_get(l, "a_host"), json_object_get(l, "a"));
		out_puts(o, " ↔ ");
		out_end(c, json_object_get(l, "b_host"), json_object_get(l, "b"));
		out_puts(o, "</b>, rail ");
		out_scalar(o, json_object_get(l, "rail"));
		out_puts(o, ", test ");
		out_scalar(o, json_object_get(l, "test"));
		out_puts(o, " <span class=\"state fail\">FAIL</span>");
		out_reasons(o, json_object_get(l, "reasons"));
		out_puts(o, "</li>\n");
	}
	out_puts(o, "</ul>\n");
	if (jnum(c->eval, "links_total") > (double)json_array_size(links))
		out_printf(o, "<p class=\"note\">%.0f suspect links in all; %zu listed.</p>\n",
			   jnum(c->eval, "links_total"), json_array_size(links));
}

/* Who the verdict puts a failing pair on, in words. */
static void out_attributed(struct ry_buf *o, const json_t *f)
{
	const char *a = jstr(f, "attributed");

	if (streq(a, "node"))
		out_puts(o, "a bad node or rail at one end");
	else if (streq(a, "link"))
		out_puts(o, "the link (both ends are fine elsewhere)");
	else if (streq(a, "transient"))
		out_puts(o, "transient: retested and passed");
	else
		out_scalar(o, json_object_get(f, "attributed"));
}

/* The pairs of a test that fail (transient false) or that were transient (true). */
static void test_pairs(struct ctx *c, const json_t *t, bool transient)
{
	static const struct col cols[] = {{"client (a)", NULL},
					  {"server (b)", NULL},
					  {"rail", NULL},
					  {"attributed to", NULL},
					  {"reason", NULL}};
	const json_t *fails = json_object_get(t, "failures"), *f;
	struct ry_buf *o = &c->o;
	size_t i, shown = 0;

	json_array_foreach(fails, i, f)
	{
		if (failure_transient(f) != transient)
			continue;
		if (!shown++) {
			out_puts(o, transient
					    ? "<h3>Retested and passed (transient, not a failure): "
					    : "<h3>Failing pairs: ");
			out_scalar(o, json_object_get(t, "name"));
			out_puts(o, "</h3>\n");
			table_open(o, cols, RY_ARRAY_SIZE(cols));
		}
		out_puts(o, transient ? "<tr class=\"transient\"><td>" : "<tr class=\"fail\"><td>");
		out_end(c, NULL, json_object_get(f, "a"));
		out_puts(o, "</td><td>");
		out_end(c, NULL, json_object_get(f, "b"));
		out_puts(o, "</td><td>");
		out_scalar(o, json_object_get(f, "rail"));
		out_puts(o, "</td><td>");
		out_attributed(o, f);
		out_puts(o, "</td><td>");
		out_reason_v(o, json_object_get(f, "reason"));
		out_puts(o, "</td></tr>\n");
	}
	if (shown)
		out_puts(o, "</tbody></table>\n");
	if (!transient && jnum(t, "failures_total") > (double)json_array_size(fails))
		out_printf(o, "<p class=\"note\">%.0f failing pairs in all; %zu listed.</p>\n",
			   jnum(t, "failures_total"), json_array_size(fails));
}

/* Deployments of the report that did not succeed. */
static void failing_deployments(struct ctx *c)
{
	const json_t *deps = json_object_get(c->root, "deployments"), *d;
	struct ry_buf *o = &c->o;
	size_t i, shown = 0;

	json_array_foreach(deps, i, d)
	{
		const char *st = jstr(d, "state");

		if (!st || streq(st, "succeeded") || streq(st, "running") || streq(st, "pending"))
			continue;
		out_puts(o, shown++ ? "<li>"
				    : "<h3>Deployments</h3>\n<ul class=\"failed-list\">\n<li>");
		out_puts(o, "<b>");
		out_scalar(o, json_object_get(d, "id"));
		out_puts(o, "</b> (playbook ");
		out_scalar(o, jpath(d, "playbook.name"));
		out_puts(o, " ");
		out_scalar(o, jpath(d, "playbook.version"));
		out_puts(o, "): <span class=\"state fail\">");
		out_esc(o, st);
		out_puts(o, "</span>");
		if (json_is_string(json_object_get(d, "reason"))) {
			out_puts(o, ": ");
			out_reason_v(o, json_object_get(d, "reason"));
		}
		out_puts(o, "</li>\n");
	}
	if (shown)
		out_puts(o, "</ul>\n");
}

static int sec_failures(struct ctx *c)
{
	static const struct col left[] = {{"id", "id"}, {"host", "hostname"}, {"reason", "reason"}};
	const json_t *lo = json_object_get(c->eval, "left_out"), *t;
	const json_t *tests = json_object_get(c->eval, "tests");
	size_t i;
	int r;

	out_puts(&c->o, "<h2 id=\"failures\">What failed, and why</h2>\n");
	if (!json_is_object(c->eval))
		out_elem(&c->o, "p", "The report holds no evaluation.");
	r = failing_nodes(c);
	if (r < 0)
		return r;
	failing_links(c);
	json_array_foreach(tests, i, t)
	{
		test_pairs(c, t, false);
	}
	json_array_foreach(tests, i, t)
	{
		test_pairs(c, t, true);
	}
	failing_deployments(c);
	if (json_array_size(lo)) {
		out_puts(&c->o, "<h3>Left out of the campaign</h3>\n");
		table_of(&c->o, lo, left, RY_ARRAY_SIZE(left), "");
	}
	out_puts(&c->o, "<h3 id=\"summary\">Summary</h3>\n");
	if (json_array_size(json_object_get(c->root, "summary")))
		out_reasons(&c->o, json_object_get(c->root, "summary"));
	else
		out_puts(&c->o, "<p class=\"note\">no summary lines</p>\n");
	return 0;
}

/* ---- tests and rules ---------------------------------------------------------------------- */

static void test_rules(struct ry_buf *o, const json_t *t)
{
	static const struct col cols[] = {
		{"metric", NULL},    {"op", NULL},	  {"value", NULL}, {"relative", NULL},
		{"threshold", NULL}, {"evaluated", NULL}, {"failed", NULL}};
	static const char *const keys[] = {"metric", "op", "value", "relative"};
	const json_t *rules = json_object_get(t, "rules"), *r;
	size_t i;

	if (!json_array_size(rules)) {
		out_elem(o, "p",
			 json_is_array(rules) ? "No acceptance rule." : "Rules: " NOT_REPORTED);
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

/* A bw test's CPU cost next to its bandwidth, from the report's cpu_cost (docs/signoff.md); a
 * report from before it has none and shows none. */
static void test_cpu(struct ctx *c, const json_t *t)
{
	const json_t *e;
	size_t i;

	json_array_foreach(json_object_get(c->root, "cpu_cost"), i, e)
	{
		if (!streq(jstr(e, "test"), jstr(t, "name")) || !jstr(e, "text"))
			continue;
		out_puts(&c->o, "<p class=\"cpu\">CPU cost: ");
		out_esc(&c->o, jstr(e, "text"));
		out_puts(&c->o, "</p>\n");
	}
}

static void sec_tests(struct ctx *c)
{
	static const char *const keys[] = {"kind", "pattern",  "per_rail", "result",
					   "rows", "measured", "failed"};
	const json_t *tests = json_object_get(c->eval, "tests"), *t;
	struct ry_buf *o = &c->o;
	size_t i;

	out_puts(o, "<h2 id=\"tests\">Tests and rules</h2>\n");
	if (!json_is_array(tests))
		out_elem(o, "p", "Tests: " NOT_REPORTED);
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
		test_cpu(c, t);
		test_rules(o, t);
	}
}

/* ---- heatmaps ----------------------------------------------------------------------------- */

/* One measured slot of a run phase (results[] with phase "run"). */
struct cell {
	const char *test, *kind, *a, *b, *state, *error;
	long long rail;
	bool has_rail;
	bool bad;	/* failed, or a failure of the test's verdict */
	bool transient; /* failed once, retested and passed: not a failure */
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

/* A failure of the verdict, by host names. */
struct fkey {
	const char *a, *b;
	long long rail;
	bool has_rail;
	bool transient;
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
				 host_of(c, json_object_get(f, "b")), 0, json_is_integer(rail),
				 failure_transient(f)};

		k.rail = k.has_rail ? (long long)json_integer_value(rail) : 0;
		if (k.a && k.b)
			keys[nk++] = k;
	}
	qsort(keys, nk, sizeof(*keys), fkey_cmp);
	for (i = 0; i < n; i++) {
		struct fkey k = {cells[i].a, cells[i].b, cells[i].rail, cells[i].has_rail, false};
		const struct fkey *hit = bsearch(&k, keys, nk, sizeof(*keys), fkey_cmp);

		/* A transient is listed among the failures but is none. */
		cells[i].bad = streq(cells[i].state, "failed") || (hit && !hit->transient);
		cells[i].transient = hit && hit->transient;
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

/* The colour scale of a test, shared by its maps so that rails compare (docs/signoff.md,
 * "Heatmaps"): colour is the margin to the rule, not the data's min-max. */
enum field { F_GBPS, F_P50, F_P99 };
static const char *const field_names[] = {"gbps", "p50_us", "p99_us"};

struct scale {
	bool bw;	      /* higher is better (op >=); else lower (op <=) */
	enum field field;     /* the metric drawn */
	const char *unit;     /* "Gb/s", "µs" */
	double thr;	      /* the binding threshold T; NaN: no rule on the field */
	double ref;	      /* the relative rule's reference (median, min); NaN when none */
	const char *ref_name; /* its name, borrowed from the report */
	double max;	      /* the largest value drawn (the scale without a rule), NaN: none */
	bool any_bad, any_none, any_transient; /* what the legend explains */
};

/* Whether metric ("TEST.FIELD" or "FIELD") is field of test. */
static bool metric_is(const char *m, const char *test, const char *field)
{
	size_t n = strlen(test);

	return m && (streq(m, field) ||
		     (strncmp(m, test, n) == 0 && m[n] == '.' && streq(m + n + 1, field)));
}

/* The scale of a test drawn as bandwidth (gbps) or latency: the field its rules judge
 * (p99_us before p50_us), unless fixed >= 0 (a summary holds one field); T the binding
 * threshold (the highest of the >= rules, the lowest of the <= rules), the reference that of a
 * relative rule, from the test's stats. */
static void scale_rule(struct scale *sc, const struct ctx *c, const char *test, bool bw, int fixed)
{
	const json_t *t = eval_test(c, test), *rules = json_object_get(t, "rules"), *r;
	size_t i;

	*sc = (struct scale){.bw = bw,
			     .field = bw ? F_GBPS : F_P50,
			     .unit = bw ? "Gb/s" : "µs",
			     .thr = NAN,
			     .ref = NAN,
			     .max = NAN};
	if (fixed >= 0) {
		sc->field = (enum field)fixed;
	} else if (!bw) {
		json_array_foreach(rules, i, r)
		{
			if (metric_is(jstr(r, "metric"), test, "p99_us"))
				sc->field = F_P99;
		}
	}
	json_array_foreach(rules, i, r)
	{
		const char *op = jstr(r, "op"), *rel = jstr(r, "relative");
		double thr = jnum(r, "threshold"), ref;

		if (!metric_is(jstr(r, "metric"), test, field_names[sc->field]) || !isfinite(thr) ||
		    thr <= 0)
			continue;
		if (op && (bw ? !streq(op, ">=") && !streq(op, ">")
			      : !streq(op, "<=") && !streq(op, "<")))
			continue;
		if (isnan(sc->thr) || (bw ? thr > sc->thr : thr < sc->thr))
			sc->thr = thr;
		ref = rel ? jnum(json_object_get(json_object_get(t, "stats"),
						 field_names[sc->field]),
				 rel)
			  : NAN;
		if (isfinite(ref)) {
			sc->ref = ref;
			sc->ref_name = rel;
		}
	}
}

/* The cell's value of the scale's field, NaN when not measured. */
static double cell_value(const struct cell *x, const struct scale *sc)
{
	if (!cell_done(x))
		return NAN;
	return sc->field == F_GBPS ? x->gbps : sc->field == F_P50 ? x->p50 : x->p99;
}

static void scale_add(struct scale *sc, double v)
{
	if (isfinite(v) && v >= 0 && (isnan(sc->max) || v > sc->max))
		sc->max = v;
}

/* Whether v is beyond the rule's threshold. */
static bool scale_fails(const struct scale *sc, double v)
{
	return isfinite(sc->thr) && isfinite(v) && (sc->bw ? v < sc->thr : v > sc->thr);
}

/* The value at a margin m to T (the legend's right end at m = 0.5). */
static double scale_at(const struct scale *sc, double m)
{
	return sc->bw ? sc->thr * (1 + m) : sc->thr * (1 - m);
}

/* A value's place on the legend's scale: 0 fails; passing, its margin to T over a 50 % margin
 * (1 at 50 % or more). Without a rule: on 0..max, anchored at zero (a 3 % spread is a 3 %
 * step). Its colour: colour_t(). */
static double scale_t(const struct scale *sc, double v, bool bad)
{
	double t;

	if (bad || scale_fails(sc, v))
		return 0;
	if (isfinite(sc->thr))
		t = (sc->bw ? (v - sc->thr) / sc->thr : (sc->thr - v) / sc->thr) / 0.5;
	else
		t = !(sc->max > 0) ? 1 : sc->bw ? v / sc->max : 1 - v / sc->max;
	return !(t >= 0) ? 0 : t > 1 ? 1 : t; /* NaN from infinite values too */
}

/* Passing cells take viridis from PASS_T0 up, failing ones its dark end (0): every pass is at
 * least 3:1 from a fail in WCAG contrast, whatever its margin (test_signoff_html checks it). */
#define PASS_T0 0.45

/* The colour place of a cell: 0 fails; a pass PASS_T0 + its place on the scale. */
static double colour_t(const struct scale *sc, double v, bool bad)
{
	return bad || scale_fails(sc, v) ? 0 : PASS_T0 + (1 - PASS_T0) * scale_t(sc, v, false);
}

/* Viridis, 11 stops from t = 0 (dark purple) to 1 (yellow): monotonic in lightness, so that
 * fail and pass differ in luminance for every colour vision and in greyscale. */
static const unsigned char viridis[11][3] = {{68, 1, 84},    {72, 36, 117},  {65, 68, 135},
					     {53, 95, 141},  {42, 120, 142}, {33, 145, 140},
					     {34, 168, 132}, {68, 191, 112}, {122, 209, 81},
					     {189, 223, 38}, {253, 231, 37}};

static void viridis_rgb(double t, unsigned rgb[3])
{
	double x = (!(t >= 0) ? 0 : t > 1 ? 1 : t) * 10, f;
	size_t k = x >= 10 ? 9 : (size_t)x;

	f = x - (double)k;
	for (size_t i = 0; i < 3; i++)
		rgb[i] = (unsigned)lround(viridis[k][i] + f * (viridis[k + 1][i] - viridis[k][i]));
}

/* WCAG 2 relative luminance of an sRGB colour. */
static double rel_lum(const unsigned rgb[3])
{
	static const double w[3] = {0.2126, 0.7152, 0.0722};
	double l = 0;

	for (size_t i = 0; i < 3; i++) {
		double s = rgb[i] / 255.0;

		l += w[i] * (s <= 0.04045 ? s / 12.92 : pow((s + 0.055) / 1.055, 2.4));
	}
	return l;
}

/* The fill of t as "#rrggbb" and the ink readable on it (black on light, white on dark). */
static const char *fill_of(double t, char *buf, size_t len)
{
	unsigned rgb[3];

	viridis_rgb(t, rgb);
	snprintf(buf, len, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
	return rel_lum(rgb) > 0.179 ? "#000" : "#fff";
}

/* The hatch of a pair without a value, once per map. */
static void hatch_def(struct ry_buf *o, unsigned id)
{
	out_printf(
		o,
		"<defs><pattern id=\"nv%u\" width=\"6\" height=\"6\" "
		"patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect "
		"width=\"6\" height=\"6\" fill=\"#d0d7de\"/><path d=\"M0 0V6\" stroke=\"#8c959f\" "
		"stroke-width=\"2\"/></pattern></defs>\n",
		id);
}

/* The mark of a failure, visible on any fill: a double outline (black outside, white inside)
 * and a glyph. */
static void fail_mark(struct ry_buf *o, double px, double py, double w, double ht, const char *ink)
{
	out_printf(o,
		   "<rect class=\"failmark\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
		   "fill=\"none\" stroke=\"#000\" stroke-width=\"1.5\"/>",
		   px + 0.75, py + 0.75, w - 1.5, ht - 1.5);
	if (w >= 12)
		out_printf(o,
			   "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
			   "fill=\"none\" stroke=\"#fff\" stroke-width=\"2\"/>",
			   px + 2.5, py + 2.5, w - 5, ht - 5);
	out_printf(o,
		   "<text class=\"mark\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
		   "fill=\"%s\"%s>✕</text>",
		   px + w / 2, w >= 34 ? py + 15 : py + ht / 2 + 4.5, ink,
		   w >= 20 ? "" : " font-size=\"9\"");
}

/* The legend of a map at y: the scale tied to the rule, its ticks in the metric's unit, and
 * swatches of the marks used. */
#define LEGEND_H 96.0
#define LX	 4.0   /* the bar's left */
#define LW	 260.0 /* its width */
static void heat_legend(struct ctx *c, const struct scale *sc, double y, unsigned hatch)
{
	struct ry_buf *o = &c->o;
	unsigned id = c->seq++;
	char a[64], b[64], fill[16];
	double sx = LX;

	out_printf(o, "<defs><linearGradient id=\"g%u\">", id);
	for (size_t k = 0; k <= 10; k++) {
		fill_of(PASS_T0 + (1 - PASS_T0) * (double)k / 10, fill, sizeof(fill));
		out_printf(o, "<stop offset=\"%.1f\" stop-color=\"%s\"/>", (double)k / 10, fill);
	}
	out_puts(o, "</linearGradient></defs>\n");
	if (isfinite(sc->thr)) {
		out_printf(o,
			   "<text x=\"%.0f\" y=\"%.1f\">colour: margin to the rule %s %s %s %s"
			   "</text>\n",
			   LX, y + 10, field_names[sc->field], sc->bw ? "≥" : "≤",
			   num(sc->thr, 4, a, sizeof(a)), sc->unit);
		out_printf(o,
			   "<rect x=\"%.0f\" y=\"%.1f\" width=\"%.0f\" height=\"12\" "
			   "fill=\"url(#g%u)\"/>"
			   "<path d=\"M%.1f %.1fv18\" stroke=\"#000\" stroke-width=\"2\"/>"
			   "<text x=\"%.0f\" y=\"%.1f\">fails beyond the threshold %s %s</text>"
			   "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">≥ 50 %% margin (%s %s)"
			   "</text>\n",
			   LX, y + 16, LW, id, LX + 1, y + 13, LX, y + 42,
			   num(sc->thr, 4, a, sizeof(a)), sc->unit, LX + LW, y + 56,
			   num(scale_at(sc, 0.5), 4, b, sizeof(b)), sc->unit);
		if (isfinite(sc->ref) && sc->ref_name) {
			double t = scale_t(sc, sc->ref, scale_fails(sc, sc->ref));
			double x = LX + LW * (scale_fails(sc, sc->ref) ? 0 : t);

			out_printf(o,
				   "<path class=\"ref\" d=\"M%.1f %.1fv18\" stroke=\"#000\" "
				   "stroke-dasharray=\"3 2\"/><text x=\"%.1f\" y=\"%.1f\">",
				   x, y + 13, LX + LW + 8, y + 26);
			out_esc(o, sc->ref_name);
			out_printf(o, " %s %s (dashed tick)</text>\n",
				   num(sc->ref, 4, a, sizeof(a)), sc->unit);
		}
	} else if (isfinite(sc->max)) {
		num(sc->max, 4, a, sizeof(a));
		out_printf(o,
			   "<text x=\"%.0f\" y=\"%.1f\">colour: no rule on %s: 0 to max (%s %s), "
			   "%s is better</text>\n"
			   "<rect x=\"%.0f\" y=\"%.1f\" width=\"%.0f\" height=\"12\" "
			   "fill=\"url(#g%u)\"/>"
			   "<text x=\"%.0f\" y=\"%.1f\">%s%s %s</text>"
			   "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s%s %s</text>\n",
			   LX, y + 10, field_names[sc->field], a, sc->unit,
			   sc->bw ? "higher" : "lower", LX, y + 16, LW, id, LX, y + 42,
			   sc->bw ? "0" : "max ", sc->bw ? "" : a, sc->unit, LX + LW, y + 56,
			   sc->bw ? "max " : "0", sc->bw ? a : "", sc->unit);
	} else {
		out_printf(o, "<text x=\"%.0f\" y=\"%.1f\">no measured value</text>\n", LX, y + 10);
	}
	/* Swatches of the marks the map uses. */
	if (sc->any_bad) {
		const char *ink = fill_of(0, fill, sizeof(fill));

		out_printf(o,
			   "<rect x=\"%.0f\" y=\"%.1f\" width=\"24\" height=\"24\" fill=\"%s\"/>",
			   sx, y + 66, fill);
		fail_mark(o, sx, y + 66, 24, 24, ink);
		out_printf(o, "<text x=\"%.0f\" y=\"%.1f\">fail (✕, outlined)</text>\n", sx + 30,
			   y + 82);
		sx += 150;
	}
	if (sc->any_none) {
		out_printf(o,
			   "<rect x=\"%.0f\" y=\"%.1f\" width=\"24\" height=\"24\" "
			   "fill=\"url(#nv%u)\"/><text x=\"%.0f\" y=\"%.1f\">no value (not "
			   "measured)</text>\n",
			   sx, y + 66, hatch, sx + 30, y + 82);
		sx += 190;
	}
	if (sc->any_transient)
		out_printf(o,
			   "<text x=\"%.0f\" y=\"%.1f\" font-size=\"13\">↻</text><text x=\"%.0f\" "
			   "y=\"%.1f\">transient: failed, retested and passed (not a failure)"
			   "</text>\n",
			   sx + 6, y + 83, sx + 30, y + 82);
}

/* One heatmap: the cells of one test and rail, their hosts (natural order, distinct). */
struct heat {
	const struct cell *cells;
	size_t n;
	const char **hosts;
	size_t nhosts;
	struct scale *sc;
	unsigned hatch; /* the id of the map's hatch */
};

static int host_cmp(const void *x, const void *y)
{
	return util_natcmp(*(const char *const *)x, *(const char *const *)y);
}

static int heat_init(struct heat *h, const struct cell *cells, size_t n, struct scale *sc)
{
	size_t k = 0;

	*h = (struct heat){cells, n, calloc(2 * n + 1, sizeof(char *)), 0, sc, 0};
	if (!h->hosts)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(cells[i].a, cells[i].b) == 0)
			continue;
		h->hosts[k++] = cells[i].a;
		h->hosts[k++] = cells[i].b;
	}
	qsort(h->hosts, k, sizeof(char *), host_cmp);
	for (size_t i = 0; i < k; i++) {
		if (!h->nhosts || strcmp(h->hosts[h->nhosts - 1], h->hosts[i]) != 0)
			h->hosts[h->nhosts++] = h->hosts[i];
	}
	return 0;
}

static size_t heat_host(const struct heat *h, const char *host)
{
	const char **hit = bsearch(&host, h->hosts, h->nhosts, sizeof(char *), host_cmp);

	return hit ? (size_t)(hit - h->hosts) : 0;
}

static void out_rail(struct ry_buf *o, const struct cell *x)
{
	if (x->has_rail)
		out_printf(o, " rail %lld", x->rail);
}

/* The title of a matrix cell, for screen readers and a pointer: "a → b rail r: value unit". */
static void cell_title(struct ry_buf *o, const struct heat *h, const struct cell *x, double v,
		       bool bad)
{
	char buf[64];

	out_puts(o, "<title>");
	out_esc(o, x->a);
	out_puts(o, " → ");
	out_esc(o, x->b);
	out_rail(o, x);
	if (isfinite(v)) {
		out_printf(o, ": %s %s", num(v, 4, buf, sizeof(buf)), h->sc->unit);
	} else {
		out_puts(o, ": no value, ");
		out_esc(o, x->state ? x->state : "state not reported");
		if (x->error) {
			out_puts(o, " (");
			out_esc(o, x->error);
			out_puts(o, ")");
		}
	}
	if (bad)
		out_puts(o, " [failing]");
	else if (x->transient)
		out_puts(o, " [transient: retested and passed]");
	out_puts(o, "</title>");
}

/* A cell at (px, py) of side cs: its fill from the scale (hatched without a value), its value
 * printed when it fits, a failure marked without colour, a transient with a neutral glyph. */
static void cell_draw(struct ry_buf *o, const struct heat *h, const struct cell *x, double px,
		      double py, double cs)
{
	double v = cell_value(x, h->sc);
	bool bad = x->bad || scale_fails(h->sc, v), has = isfinite(v);
	char fill[32], buf[64];
	const char *ink = "#000";

	if (has)
		ink = fill_of(colour_t(h->sc, v, bad), fill, sizeof(fill));
	else
		snprintf(fill, sizeof(fill), "url(#nv%u)", h->hatch);
	h->sc->any_bad |= bad;
	h->sc->any_none |= !has;
	h->sc->any_transient |= x->transient && !bad;
	out_printf(o,
		   "<rect class=\"cell%s%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
		   "fill=\"%s\">",
		   bad ? " bad" : "", has ? "" : " novalue", px, py, cs, cs, fill);
	cell_title(o, h, x, v, bad);
	out_puts(o, "</rect>");
	if (bad)
		fail_mark(o, px, py, cs, cs, has ? ink : "#000");
	else if (x->transient)
		out_printf(o,
			   "<text class=\"transient\" x=\"%.1f\" y=\"%.1f\" fill=\"%s\" "
			   "font-size=\"10\">↻</text>",
			   px + 2, py + 10, ink);
	if (cs >= 34)
		out_printf(o,
			   "<text class=\"v\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
			   "fill=\"%s\"%s>%s</text>",
			   px + cs / 2, bad ? py + cs - 6 : py + cs / 2 + 4, ink,
			   has ? "" : " font-size=\"8\"",
			   has ? num(v, 3, buf, sizeof(buf)) : "no value");
	out_puts(o, "\n");
}

/* The lower triangle: one cell per unordered pair, the later host (natural order) the row. */
static void heat_matrix(struct ctx *c, struct heat *h)
{
	struct ry_buf *o = &c->o;
	size_t lmax = 0, n = h->nhosts;
	double cs = n <= 16 ? 40 : 22, lw, grid, width;

	for (size_t i = 0; i < n; i++)
		lmax = strlen(h->hosts[i]) > lmax ? strlen(h->hosts[i]) : lmax;
	lw = 12 + 6.5 * (double)(lmax > 40 ? 40 : lmax);
	grid = cs * (double)(n - 1);
	width = lw + grid + 20;
	h->hatch = c->seq++;
	out_printf(o, "<div class=\"scroll\"><svg width=\"%.0f\" height=\"%.0f\" role=\"img\">\n",
		   width > 620 ? width : 620, lw + grid + 14 + LEGEND_H);
	hatch_def(o, h->hatch);
	for (size_t i = 0; i + 1 < n; i++) {
		double mid = lw + cs * ((double)i + 0.5) + 4;

		out_printf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", lw - 4, mid);
		out_esc(o, h->hosts[i + 1]);
		out_printf(o, "</text><text transform=\"translate(%.1f %.1f) rotate(-90)\">", mid,
			   lw - 4);
		out_esc(o, h->hosts[i]);
		out_puts(o, "</text>\n");
	}
	/* Failing cells last, so that their outline is drawn over their neighbours. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < h->n; i++) {
			const struct cell *x = &h->cells[i];
			size_t a, b, row, col;
			bool bad;

			if (strcmp(x->a, x->b) == 0)
				continue;
			bad = x->bad || scale_fails(h->sc, cell_value(x, h->sc));
			if (bad != (pass == 1))
				continue;
			a = heat_host(h, x->a);
			b = heat_host(h, x->b);
			row = a > b ? a : b;
			col = a > b ? b : a;
			cell_draw(o, h, x, lw + cs * (double)col, lw + cs * (double)(row - 1), cs);
		}
	}
	heat_legend(c, h->sc, lw + grid + 14, h->hatch);
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

/* A host's cell of a strip at px, width w: filled like a matrix cell (a mean beyond the
 * threshold takes the failure's colour), a host the verdict fails marked with a ✕ above it and
 * outlined (not one whose mean a bad peer pulled down: the verdict puts that on the peer). */
static void strip_rect(struct ry_buf *o, struct scale *sc, unsigned hatch, double v, bool bad,
		       double px, double w)
{
	char fill[32];

	sc->any_bad |= bad;
	sc->any_none |= !isfinite(v);
	if (isfinite(v))
		fill_of(colour_t(sc, v, bad), fill, sizeof(fill));
	else
		snprintf(fill, sizeof(fill), "url(#nv%u)", hatch);
	if (bad)
		out_printf(o,
			   "<text class=\"mark\" x=\"%.1f\" y=\"13\" text-anchor=\"middle\" "
			   "font-size=\"9\">✕</text>",
			   px + w / 2);
	out_printf(o,
		   "<rect class=\"hostcell%s\" x=\"%.1f\" y=\"16\" width=\"%.1f\" height=\"28\" "
		   "fill=\"%s\"%s><title>",
		   bad ? " bad" : "", px, w, fill,
		   bad ? " stroke=\"#000\" stroke-width=\"1\"" : "");
}

static void strip_cell(struct ry_buf *o, const struct heat *h, size_t host, const struct hv *vals,
		       size_t nv, bool bad)
{
	double med = nv ? (vals[(nv - 1) / 2].v + vals[nv / 2].v) / 2 : NAN;
	char buf[64];

	strip_rect(o, h->sc, h->hatch, med, bad, 8 + 6 * (double)host, 6);
	out_esc(o, h->hosts[host]);
	out_rail(o, &h->cells[0]);
	if (nv)
		out_printf(o, ": median %s %s over %zu pairs", num(med, 4, buf, sizeof(buf)),
			   h->sc->unit, nv);
	else
		out_puts(o, ": no measured pair");
	out_printf(o, "%s</title></rect>\n", bad ? " [failing]" : "");
}

/* More than MATRIX_HOSTS_MAX hosts: one strip of per-host medians. */
static int heat_strip(struct ctx *c, struct heat *h)
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
		double val = cell_value(x, h->sc);
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
	h->hatch = c->seq++;
	out_printf(&c->o,
		   "<p class=\"note\">%zu hosts: more than %d, so each host's median over the "
		   "pairs it is in is shown as one strip instead of the matrix.</p>\n"
		   "<div class=\"scroll\"><svg width=\"%.0f\" height=\"%.0f\" role=\"img\">\n",
		   h->nhosts, MATRIX_HOSTS_MAX,
		   16 + 6 * (double)h->nhosts > 620 ? 16 + 6 * (double)h->nhosts : 620,
		   56 + LEGEND_H);
	hatch_def(&c->o, h->hatch);
	for (size_t host = 0; host < h->nhosts; host++) {
		size_t k = j;

		while (j < nv && v[j].host == host)
			j++;
		strip_cell(&c->o, h, host, v + k, j - k, bad[host]);
	}
	heat_legend(c, h->sc, 56, h->hatch);
	out_puts(&c->o, "</svg></div>\n");
	free(v);
	free(bad);
	return 0;
}

static int heat_map(struct ctx *c, const struct cell *cells, size_t n, struct scale *sc)
{
	struct heat h;
	int r = heat_init(&h, cells, n, sc);

	if (r < 0)
		return r;
	sc->any_bad = sc->any_none = sc->any_transient = false;
	out_puts(&c->o, "<h4>");
	out_esc(&c->o, cells[0].test);
	if (cells[0].has_rail)
		out_printf(&c->o, ", rail %lld", cells[0].rail);
	out_printf(&c->o, " (%s, %s)</h4>\n", field_names[sc->field], sc->unit);
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
	scale_rule(&sc, c, cells[0].test, bw, -1);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(cells[i].a, cells[i].b) != 0)
			scale_add(&sc, cell_value(&cells[i], &sc));
	}
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
	qsort(v, n, sizeof(*v), host_cmp);
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

		if (streq(jstr(f, "attributed"), "node") || failure_transient(f))
			continue;
		for (size_t e = 0; e < 2; e++) {
			struct fkey k = {ends[e], "", 0, json_is_integer(rail), false};

			k.rail = k.has_rail ? (long long)json_integer_value(rail) : 0;
			if (k.a)
				keys[nk++] = k;
		}
	}
	qsort(keys, nk, sizeof(*keys), fkey_cmp);
	for (i = 0; i < n; i++) {
		struct fkey k = {ph[i].host, "", ph[i].rail, ph[i].has_rail, false};

		ph[i].bad = ph[i].failed > 0 || verdict_names(c, &ph[i]) ||
			    bsearch(&k, keys, nk, sizeof(*keys), fkey_cmp) != NULL;
	}
	free(keys);
	return 0;
}

/* A number of the summary: 4 significant digits, "—" when absent or not finite. */
static void out_num(struct ry_buf *o, double v)
{
	char buf[64];

	out_puts(o, num(v, 4, buf, sizeof(buf)));
}

/* A count: integral text, "not reported" when absent or not finite. */
static void out_count(struct ry_buf *o, double v)
{
	char buf[64];

	if (isfinite(v))
		out_puts(o, num(v, 15, buf, sizeof(buf)));
	else
		out_puts(o, NOT_REPORTED);
}

/* A host's cell of a summary strip: "HOST rail r: mean V UNIT over n pairs (min…max)". */
static void phr_cell(struct ry_buf *o, struct scale *sc, unsigned hatch, const struct phr *x,
		     double px, double w)
{
	bool bad = x->bad;

	strip_rect(o, sc, hatch, x->n == 0 ? NAN : x->mean, bad, px, w);
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
	out_printf(o, "%s</title></rect>\n", bad ? " [failing]" : "");
}

/* One rail's strip of a summarised test: a cell per host, at the host's place among the test's
 * hosts so that the rails line up. */
static void phr_map(struct ctx *c, const struct phr *ph, size_t n, const char **hosts,
		    size_t nhosts, struct scale *sc)
{
	struct ry_buf *o = &c->o;
	double w = nhosts <= 64 ? 14 : 6, width = 16 + w * (double)nhosts;
	unsigned hatch = c->seq++;

	sc->any_bad = sc->any_none = sc->any_transient = false;
	out_puts(o, "<h4>");
	out_esc(o, ph[0].test);
	if (ph[0].has_rail)
		out_printf(o, ", rail %lld", ph[0].rail);
	out_printf(o, " (per-host mean of %s, %s)</h4>\n", field_names[sc->field], sc->unit);
	out_printf(o, "<div class=\"scroll\"><svg width=\"%.0f\" height=\"%.0f\" role=\"img\">\n",
		   width > 620 ? width : 620, 56 + LEGEND_H);
	hatch_def(o, hatch);
	/* Failing hosts last, so that their outline is drawn over their neighbours. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			const char **hit =
				bsearch(&ph[i].host, hosts, nhosts, sizeof(char *), host_cmp);
			if (ph[i].bad == (pass == 1) && hit)
				phr_cell(o, sc, hatch, &ph[i], 8 + w * (double)(hit - hosts), w);
		}
	}
	heat_legend(c, sc, 56, hatch);
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
	scale_rule(&sc, c, g->test, bw, bw ? F_GBPS : F_P50);
	for (size_t i = 0; i < g->nph; i++)
		scale_add(&sc, g->ph[i].mean);
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
		 "<h2 id=\"heatmaps\">Heatmaps</h2>\n<p class=\"note\">One cell per pair of "
		 "nodes (the lower triangle; nodes in natural order), its value printed where "
		 "the cell is wide enough. Colour is the margin to the test's rule, on the "
		 "colour-blind-safe viridis scale: dark purple fails, yellow passes with a 50 % "
		 "margin or more; without a rule, the value on 0 to its maximum. A failing pair "
		 "is also outlined black and white and marked ✕; a pair without a value is "
		 "hatched grey; ↻ marks a transient (retested and passed, not a failure).</p>\n");
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
			char b0[64], b1[64];

			if (!h->count[f][k])
				continue;
			out_printf(o,
				   "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
				   "fill=\"%s\"><title>%s %s–%s µs: %zu</title></rect>\n",
				   HX + bw * (double)(k * h->nf + f), HY + HH - ht, bw, ht,
				   hist_colours[f], hist_fields[f], num(e0, 4, b0, sizeof(b0)),
				   num(e1, 4, b1, sizeof(b1)), h->count[f][k]);
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
		char b[64];

		out_printf(o,
			   "<path d=\"M%.1f %.1fv5\" stroke=\"#1f2328\"/><text x=\"%.1f\" "
			   "y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
			   x, HY + HH, x, HY + HH + 16, num(e, 3, b, sizeof(b)));
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
		char b[64];

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
			"fill=\"#d1001f\">%s threshold %s</text>\n",
			x, HY - 6, HY + HH, x + 4, HY - 8 + 12 * (double)f, hist_fields[f],
			num(h->thr[f], 4, b, sizeof(b)));
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
	out_puts(&o, n ? "" : NOT_REPORTED);
out:
	/* NOT_REPORTED only when out of memory before the values; values all "" give "". */
	dflt = v && nums ? "" : NOT_REPORTED;
	free(v);
	free(nums);
	return take_or(&o, dflt);
}

/* Each HCA or GPU whose PCIe link trained below its capability; "ok"; "not reported" when
 * unknown. */
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
		out_puts(o, jstr(x, name) ? jstr(x, name) : "(unnamed)");
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
	return take_or(&o, known ? "ok" : NOT_REPORTED);
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
		return s ? strndup(s, 12) : strdup(NOT_REPORTED);
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

/* Whether a column holds a vendor's version, compared semantically (so_version_same()). */
static bool cfg_version(const struct cfg_col *col)
{
	return (col->how == CFG_PATH && so_version_field(col->path)) ||
	       (col->how == CFG_HCA && streq(col->path, "fw_ver"));
}

/* A node's row; a version spelled otherwise than most nodes' but the same version is not
 * highlighted, and is said in notes. */
static void cfg_row(struct ry_buf *o, struct ry_buf *notes, const struct cfg *t, const json_t *node,
		    size_t i)
{
	const char *host = jstr(node, "hostname");

	host = host ? host : jstr(node, "id") ? jstr(node, "id") : "unnamed node";
	out_puts(o, "<tr>");
	out_elem(o, "td", host);
	for (size_t k = 0; k < CFG_NCOLS; k++) {
		const char *v = t->cell[i * CFG_NCOLS + k];
		bool other = t->n > 1 && strcmp(v, t->major[k]) != 0;
		bool same = other && cfg_version(&cfg_cols[k]) && so_version_same(v, t->major[k]);
		bool differs = other && !same;
		bool flag = cfg_cols[k].how == CFG_PCIE && strcmp(v, "ok") != 0 &&
			    strcmp(v, NOT_REPORTED) != 0;
		static const char *const cls[2][2] = {
			{"<td>", "<td class=\"flag\">"},
			{"<td class=\"differs\">", "<td class=\"differs flag\">"}};

		out_puts(o, cls[differs][flag]);
		out_esc(o, v);
		out_puts(o, "</td>");
		if (same) {
			out_puts(notes, "<li>");
			out_esc(notes, cfg_cols[k].title);
			out_puts(notes, " on ");
			out_esc(notes, host);
			out_puts(notes, ": ");
			out_esc(notes, v);
			out_puts(notes, " = ");
			out_esc(notes, t->major[k]);
			out_puts(notes, " (same version, spelled differently)</li>\n");
		}
	}
	out_puts(o, "</tr>\n");
}

struct nidx {
	const char *host;
	size_t i;
};

static int nidx_cmp(const void *x, const void *y)
{
	const struct nidx *p = x, *q = y;

	return util_natcmp(p->host, q->host);
}

static int sec_config(struct ctx *c)
{
	const json_t *nodes = json_object_get(c->root, "nodes"), *n;
	struct cfg t = {0};
	struct nidx *order;
	struct ry_buf notes;
	size_t i;
	int r;

	out_puts(&c->o, "<h2 id=\"configuration\">Configuration</h2>\n<p class=\"note\">Each "
			"node's last facts, nodes in natural order. A value that differs from most "
			"nodes' is highlighted and marked ≠; versions are compared as versions (a "
			"vendor's two spellings of one version are not a difference); a PCIe link "
			"below its capability is flagged.</p>\n");
	r = cfg_build(&t, nodes);
	if (r < 0 || !t.n) {
		if (r == 0)
			out_elem(&c->o, "p",
				 json_is_array(nodes) ? "No node." : "Nodes: " NOT_REPORTED);
		cfg_done(&t);
		return r;
	}
	out_puts(&c->o, "<div class=\"scroll\"><table class=\"config\"><thead><tr><th>node</th>");
	for (size_t k = 0; k < CFG_NCOLS; k++)
		out_elem(&c->o, "th", cfg_cols[k].title);
	out_puts(&c->o, "</tr></thead><tbody>\n");
	order = calloc(t.n + 1, sizeof(*order));
	if (!order) {
		cfg_done(&t);
		return -ENOMEM;
	}
	json_array_foreach(nodes, i, n)
	{
		order[i] = (struct nidx){jstr(n, "hostname") ? jstr(n, "hostname") : "", i};
	}
	qsort(order, t.n, sizeof(*order), nidx_cmp);
	ry_buf_init(&notes, OUT_MAX);
	for (i = 0; i < t.n; i++)
		cfg_row(&c->o, &notes, &t, json_array_get(nodes, order[i].i), order[i].i);
	out_puts(&c->o, "</tbody></table></div>\n");
	if (ry_buf_len(&notes)) {
		out_puts(&c->o, "<p id=\"same-version\">Versions spelled differently but the same "
				"(not drift):</p>\n<ul>\n");
		out_write(&c->o, ry_buf_str(&notes), ry_buf_len(&notes));
		out_puts(&c->o, "</ul>\n");
	}
	if (ry_buf_error(&notes))
		ry_buf_fail(&c->o, -ENOMEM);
	ry_buf_done(&notes);
	free(order);
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
		out_elem(o, "p",
			 json_is_array(drift) ? "No configuration drift." : "Drift: " NOT_REPORTED);
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

/* Version fields whose two spellings were judged the same version: not drift, said so. */
static void same_version_list(struct ry_buf *o, const json_t *same)
{
	const json_t *d;
	size_t i;

	if (!json_array_size(same))
		return;
	out_puts(o, "<p>Versions spelled differently but the same (not drift):</p>\n<ul "
		    "id=\"same-version\">\n");
	json_array_foreach(same, i, d)
	{
		out_puts(o, "<li>");
		out_scalar(o, json_object_get(d, "field"));
		out_puts(o, ": ");
		out_scalar(o, json_object_get(d, "from"));
		out_puts(o, " = ");
		out_scalar(o, json_object_get(d, "to"));
		out_puts(o, " (same version, spelled differently) on ");
		out_joined(o, json_object_get(d, "nodes"), ", ");
		out_puts(o, "</li>\n");
	}
	out_puts(o, "</ul>\n");
}

/* The failed steps of the configuration checks, per node, with their messages; the nodes a
 * check would change. */
static void check_steps(struct ry_buf *o, const json_t *checks)
{
	const json_t *chk, *f;
	size_t i, k, shown = 0;

	json_array_foreach(checks, i, chk)
	{
		const json_t *failed = json_object_get(chk, "failed");
		const json_t *differ = json_object_get(chk, "differ");

		if (!json_array_size(failed) && !json_array_size(differ))
			continue;
		out_puts(o,
			 shown++ ? "<li>" : "<ul class=\"failed-list\" id=\"check-steps\">\n<li>");
		out_puts(o, "<b>");
		out_scalar(o, jpath(chk, "playbook.name"));
		out_puts(o, " ");
		out_scalar(o, jpath(chk, "playbook.version"));
		out_puts(o, "</b>");
		if (json_array_size(failed))
			out_puts(o, " <span class=\"state fail\">FAILED</span><ul>");
		json_array_foreach(failed, k, f)
		{
			out_puts(o, "<li><b>");
			out_scalar(o, json_object_get(f, "host"));
			out_puts(o, "</b>: step “");
			out_scalar(o, jpath(f, "step.name"));
			out_puts(o, "”: ");
			out_reason_v(o, json_is_string(jpath(f, "step.message"))
						? jpath(f, "step.message")
						: json_object_get(f, "message"));
			out_puts(o, "</li>");
		}
		if (json_array_size(failed))
			out_puts(o, "</ul>");
		if (json_array_size(differ)) {
			out_printf(o, " %zu %s from it: ", json_array_size(differ),
				   json_array_size(differ) == 1 ? "node differs" : "nodes differ");
			out_joined(o, differ, ", ");
		}
		out_puts(o, "</li>\n");
	}
	if (shown)
		out_puts(o, "</ul>\n");
}

/* A revalidation's regressions and checks, right after the verdict. */
static void sec_regressions(struct ctx *c)
{
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
	check_steps(o, json_object_get(cmp, "checks"));
}

/* A tolerance in percent, or what applies when the report does not say. */
static void out_tolerance(struct ry_buf *o, const char *what, const json_t *v)
{
	char buf[64];

	out_printf(o, "<dt>%s tolerance</dt><dd>", what);
	if (json_is_number(v))
		out_printf(o, "%s %%", num(json_number_value(v), 4, buf, sizeof(buf)));
	else
		out_puts(o, "not recorded in this report");
	out_puts(o, "</dd>");
}

/* The revalidation's baseline, tolerances, drift and nodes, after the findings. */
static void sec_revalidation(struct ctx *c)
{
	static const struct col base[] = {{"baseline report", "id"},
					  {"sha256", "sha256"},
					  {"created at", "created_at"},
					  {"verdict", "verdict"}};
	const json_t *cmp = json_object_get(c->root, "comparison");
	const json_t *tol = json_object_get(cmp, "tolerance");
	struct ry_buf *o = &c->o;

	if (!cmp || json_is_null(cmp))
		return;
	out_puts(o, "<h2 id=\"revalidation\">Revalidation</h2>\n");
	fields_of(o, json_object_get(c->root, "baseline"), base, RY_ARRAY_SIZE(base));
	out_puts(o, "<dl>");
	out_tolerance(o, "bandwidth", json_object_get(tol, "bw_pct"));
	out_tolerance(o, "latency", json_object_get(tol, "lat_pct"));
	out_puts(o, "<dt>regressions</dt><dd>");
	out_puts(o, streq(jstr(tol, "regressions"), "inform") ? "inform only"
							      : "fail the revalidation");
	out_puts(o, "</dd></dl>\n<h3>Drift</h3>\n");
	drift_table(o, json_object_get(cmp, "drift"));
	same_version_list(o, json_object_get(cmp, "same_version"));
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
		out_elem(o, "p",
			 json_is_array(deps) ? "No deployment." : "Deployments: " NOT_REPORTED);
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
			out_field(o, cols[k].path, jpath(d, cols[k].path));
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
}

/* The campaign's options and definition as raw JSON, last and collapsed: what was run, for
 * whoever needs the detail (the signed signoff.json holds it all). */
static void sec_raw(struct ctx *c)
{
	const json_t *cp = json_object_get(c->root, "campaign");
	struct ry_buf *o = &c->o;

	out_puts(o, "<h2 id=\"raw\">Raw data</h2>\n<details class=\"raw\"><summary>Campaign "
		    "options (JSON)</summary>\n");
	out_pre_json(o, json_object_get(cp, "options"));
	out_puts(o, "</details>\n<details class=\"raw\"><summary>Definition: tests and "
		    "acceptance as run (JSON)</summary>\n");
	out_pre_json(o, json_object_get(cp, "definition"));
	out_puts(o, "</details>\n");
}

static void sec_footer(struct ctx *c)
{
	out_puts(&c->o,
		 "<section id=\"verify-section\">\n<h2 id=\"verify\">How to verify</h2>\n<p>This "
		 "page is a view of "
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
	out_puts(&c->o, "</pre>\n</section>\n");
}

static void nav(struct ctx *c)
{
	const json_t *cmp = json_object_get(c->root, "comparison");

	out_puts(&c->o, "<nav>");
	if (cmp && !json_is_null(cmp))
		out_puts(&c->o, "<a href=\"#regressions\">regressions</a> · ");
	out_puts(&c->o,
		 "<a href=\"#failures\">what failed</a> · <a href=\"#summary\">summary</a>"
		 " · <a href=\"#report\">report</a> · <a href=\"#tests\">tests</a>"
		 " · <a href=\"#heatmaps\">heatmaps</a> · <a href=\"#latency\">latency</a> · "
		 "<a href=\"#configuration\">configuration</a> · <a href=\"#provenance\">"
		 "playbooks</a> · <a href=\"#campaign\">campaign</a> · <a href=\"#verify\">"
		 "verify</a> · <a href=\"#raw\">raw data</a></nav>\n");
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
	/* The verdict and its failures first, then the facts; verification before raw JSON. */
	page_head(c);
	sec_title(c);
	sec_verdict(c);
	sec_regressions(c);
	r = sec_failures(c);
	if (r < 0)
		goto out;
	nav(c);
	sec_report(c);
	sec_tests(c);
	r = sec_heatmaps(c, groups, ngroups);
	if (r == 0)
		r = sec_histograms(c, groups, ngroups);
	if (r < 0)
		goto out;
	r = sec_config(c);
	if (r < 0)
		goto out;
	sec_revalidation(c);
	sec_provenance(c);
	sec_footer(c);
	sec_raw(c);
	out_puts(&c->o, "</body>\n</html>\n");
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
