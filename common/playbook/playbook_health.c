/* A playbook's health section: what the agents' health watchers watch between campaigns and
 * how loud each finding is (interval, port counter rules, Xid overrides, GPU and NVLink
 * thresholds, the readiness checks required and GPUDirect Storage's settings), checked with
 * FILE:LINE:COL diagnostics and turned into the JSON object the controller sends to agents
 * (every default filled in). Reference: docs/playbooks.md, "health", and docs/health.md. */
#include "common/playbook/playbook_int.h"
#include "common/util/util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct hctx {
	const char *file;
	struct pb_diags *d;
	int errors;
};

static void herr(struct hctx *c, const struct pb_node *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void herr(struct hctx *c, const struct pb_node *n, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pb_diags_add(c->d, c->file, n ? n->line : 1, n ? n->col : 1, "%s", msg);
	c->errors++;
}

static const char *kind_word(const struct pb_node *n)
{
	return n->kind == PBN_MAP ? "a mapping" : n->kind == PBN_SEQ ? "a list" : "a scalar";
}

/* n is a mapping whose keys are all in keys (NULL-terminated; NULL keys: any); false (and an
 * error) when n is not a mapping. */
static bool hmap(struct hctx *c, const struct pb_node *n, const char *where,
		 const char *const *keys, const char *key_list)
{
	if (n->kind != PBN_MAP) {
		herr(c, n, "%s: expected a mapping, got %s", where, kind_word(n));
		return false;
	}
	for (size_t i = 0; keys && i < n->n; i++) {
		bool known = false;

		for (size_t k = 0; keys[k]; k++)
			known = known || strcmp(n->keys[i]->text, keys[k]) == 0;
		if (!known)
			herr(c, n->keys[i], "%s: unknown key \"%s\" (%s)", where, n->keys[i]->text,
			     key_list);
	}
	return true;
}

/* A plain number >= 0 (errors a minute). */
static bool hnum(struct hctx *c, const struct pb_node *n, const char *where, double *ret)
{
	char *end;
	double v;

	if (n->kind != PBN_SCALAR || !n->plain || !n->len) {
		herr(c, n, "%s: expected a number >= 0", where);
		return false;
	}
	v = strtod(n->text, &end);
	if (*end || !isfinite(v) || v < 0 || v > 1e12) {
		herr(c, n, "%s: expected a number >= 0, got \"%s\"", where, n->text);
		return false;
	}
	*ret = v;
	return true;
}

/* A rate as JSON: an integer when it is whole (the usual case), else a real. */
static json_t *hnumber(double v)
{
	return v == floor(v) && v < 1e15 ? json_integer((json_int_t)v) : json_real(v);
}

/* {warning: N, critical: N} errors a minute into {"warning", "critical"} over def_w/def_c. */
static json_t *hrate(struct hctx *c, const struct pb_node *n, const char *where, double def_w,
		     double def_c)
{
	static const char *const keys[] = {"warning", "critical", NULL};
	double w = def_w, cr = def_c;
	const struct pb_node *v;
	char sub[128];

	if (n && hmap(c, n, where, keys, "warning, critical")) {
		if ((v = pb_node_get(n, "warning"))) {
			snprintf(sub, sizeof(sub), "%s.warning", where);
			hnum(c, v, sub, &w);
		}
		if ((v = pb_node_get(n, "critical"))) {
			snprintf(sub, sizeof(sub), "%s.critical", where);
			hnum(c, v, sub, &cr);
		}
		if (w > 0 && cr > 0 && cr < w)
			herr(c, n, "%s: critical (%g) below warning (%g)", where, cr, w);
	}
	return json_pack("{s:o, s:o}", "warning", hnumber(w), "critical", hnumber(cr));
}

/* A plain integer in [lo, hi]. */
static bool hint(struct hctx *c, const struct pb_node *n, const char *where, long long lo,
		 long long hi, long long *ret)
{
	long long v;

	if (pb_scalar_int(n, &v) < 0 || v < lo || v > hi) {
		herr(c, n, "%s: expected an integer from %lld to %lld", where, lo, hi);
		return false;
	}
	*ret = v;
	return true;
}

/* A duration in [lo_ms, hi_ms], as seconds. */
static void hduration(struct hctx *c, const struct pb_node *n, const char *where, int64_t lo_ms,
		      int64_t hi_ms, json_t *o, const char *key)
{
	int64_t ms = 0;

	if (n->kind != PBN_SCALAR || util_parse_duration_ms(n->text, &ms) < 0 || ms < lo_ms ||
	    ms > hi_ms || ms % 1000) {
		herr(c, n, "%s: expected whole seconds from %llds to %llds (e.g. \"30s\", \"2m\")",
		     where, (long long)(lo_ms / 1000), (long long)(hi_ms / 1000));
		return;
	}
	json_object_set_new(o, key, json_integer(ms / 1000));
}

/* ports: {COUNTER: {warning, critical}}: the agent's rules for those counters replaced. */
static json_t *hports(struct hctx *c, const struct pb_node *n)
{
	json_t *o = json_object();
	char where[128];

	if (!n || !hmap(c, n, "health.ports", NULL, NULL))
		return o;
	if (n->n > PB_HEALTH_MAX_PORT_RULES)
		herr(c, n, "health.ports: %zu rules, at most %d", n->n, PB_HEALTH_MAX_PORT_RULES);
	for (size_t i = 0; i < n->n; i++) {
		const char *k = n->keys[i]->text;

		snprintf(where, sizeof(where), "health.ports.%.64s", k);
		if (!k[0] || strlen(k) > 63 ||
		    strspn(k, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(k)) {
			herr(c, n->keys[i],
			     "%s: expected a counter name (a-z, 0-9, '_'; 63 at most) as sysfs "
			     "names it",
			     where);
			continue;
		}
		json_object_set_new(o, k, hrate(c, n->items[i], where, 0, 0));
	}
	return o;
}

/* xid: {critical: [N], warning: [N], ignore: [N]}: the kernel log watcher's severities of those
 * Xid numbers replaced. */
static json_t *hxid(struct hctx *c, const struct pb_node *n)
{
	static const char *const keys[] = {"critical", "warning", "ignore", NULL};
	json_t *o = json_pack("{s:[], s:[], s:[]}", "critical", "warning", "ignore");
	char seen_in[100001 / 8 + 1];
	char where[64];

	memset(seen_in, 0, sizeof(seen_in));
	if (!n || !o || !hmap(c, n, "health.xid", keys, "critical, warning, ignore"))
		return o;
	for (size_t k = 0; keys[k]; k++) {
		const struct pb_node *l = pb_node_get(n, keys[k]);

		snprintf(where, sizeof(where), "health.xid.%s", keys[k]);
		if (!l)
			continue;
		if (l->kind != PBN_SEQ || l->n > PB_HEALTH_MAX_XIDS) {
			herr(c, l, "%s: expected a list of at most %d Xid numbers", where,
			     PB_HEALTH_MAX_XIDS);
			continue;
		}
		for (size_t i = 0; i < l->n; i++) {
			long long x;
			char w[112];

			snprintf(w, sizeof(w), "%s[%zu]", where, i);
			if (!hint(c, l->items[i], w, 1, 100000, &x))
				continue;
			if (seen_in[x / 8] & (1 << (x % 8))) {
				herr(c, l->items[i], "%s: Xid %lld is listed twice", w, x);
				continue;
			}
			seen_in[x / 8] |= (char)(1 << (x % 8));
			json_array_append_new(json_object_get(o, keys[k]), json_integer(x));
		}
	}
	return o;
}

static const char *const sev_words[] = {"warning", "critical", "ignore", NULL};

/* gpu: {ecc_corrected_per_min, throttle: {...}} and nvlink: {...} into the "gpu" object. */
static json_t *hgpu(struct hctx *c, const struct pb_node *gpu, const struct pb_node *nvl)
{
	static const char *const gkeys[] = {"ecc_corrected_per_min", "throttle", NULL};
	static const char *const tkeys[] = {"hw_slowdown", "hw_thermal_slowdown",
					    "hw_power_brake_slowdown", NULL};
	static const char *const tdefs[] = {"warning", "critical", "warning"};
	static const char *const nkeys[] = {"expected", "crc_per_min", "replay_per_min",
					    "recovery_per_min", NULL};
	const struct pb_node *v, *t = NULL;
	json_t *o, *thr, *nv;
	long long expected = -1;
	bool g = gpu && hmap(c, gpu, "health.gpu", gkeys, "ecc_corrected_per_min, throttle");
	bool l = nvl && hmap(c, nvl, "health.nvlink", nkeys,
			     "expected, crc_per_min, replay_per_min, recovery_per_min");

	o = json_object();
	thr = json_object();
	json_object_set_new(o, "ecc_corrected_per_min",
			    hrate(c, g ? pb_node_get(gpu, "ecc_corrected_per_min") : NULL,
				  "health.gpu.ecc_corrected_per_min", PB_HEALTH_ECC_CORRECTED_WARN,
				  0));
	if (g && (t = pb_node_get(gpu, "throttle")) &&
	    !hmap(c, t, "health.gpu.throttle", tkeys,
		  "hw_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown"))
		t = NULL;
	for (size_t k = 0; tkeys[k]; k++) {
		const char *s = tdefs[k];

		if (t && (v = pb_node_get(t, tkeys[k]))) {
			bool ok = false;

			for (size_t w = 0; v->kind == PBN_SCALAR && sev_words[w]; w++)
				ok = ok || strcmp(v->text, sev_words[w]) == 0;
			if (ok)
				s = v->text;
			else
				herr(c, v,
				     "health.gpu.throttle.%s: expected warning, critical or ignore",
				     tkeys[k]);
		}
		json_object_set_new(thr, tkeys[k], json_string(s));
	}
	json_object_set_new(o, "throttle", thr);
	if (l && (v = pb_node_get(nvl, "expected")))
		hint(c, v, "health.nvlink.expected", 0, 18, &expected);
	nv = json_pack("{s:I}", "expected", (json_int_t)expected);
	json_object_set_new(nv, "crc_per_min",
			    hrate(c, l ? pb_node_get(nvl, "crc_per_min") : NULL,
				  "health.nvlink.crc_per_min", PB_HEALTH_NVLINK_CRC_WARN,
				  PB_HEALTH_NVLINK_CRC_CRIT));
	json_object_set_new(nv, "replay_per_min",
			    hrate(c, l ? pb_node_get(nvl, "replay_per_min") : NULL,
				  "health.nvlink.replay_per_min", PB_HEALTH_NVLINK_REPLAY_WARN, 0));
	json_object_set_new(nv, "recovery_per_min",
			    hrate(c, l ? pb_node_get(nvl, "recovery_per_min") : NULL,
				  "health.nvlink.recovery_per_min", PB_HEALTH_NVLINK_RECOVERY_WARN,
				  PB_HEALTH_NVLINK_RECOVERY_CRIT));
	json_object_set_new(o, "nvlink", nv);
	return o;
}

/* A YAML value into JSON, plain scalars typed by the core schema (null, booleans, integers,
 * floats; the rest strings). NULL when too deep. */
static json_t *hvalue(const struct pb_node *n, int depth)
{
	json_t *o;
	long long i;
	bool b;
	char *end;
	double d;

	if (depth > 8)
		return NULL;
	if (n->kind == PBN_SCALAR) {
		if (!n->plain)
			return json_string(n->text);
		if (pb_scalar_is_null(n))
			return json_null();
		if (pb_scalar_bool(n, &b) == 0)
			return json_boolean(b);
		if (pb_scalar_int(n, &i) == 0)
			return json_integer(i);
		d = strtod(n->text, &end);
		if (n->len && !*end && isfinite(d) && strchr("+-.0123456789", n->text[0]))
			return json_real(d);
		return json_string(n->text);
	}
	o = n->kind == PBN_SEQ ? json_array() : json_object();
	for (size_t k = 0; o && k < n->n; k++) {
		json_t *v = hvalue(n->items[k], depth + 1);

		if (!v || (n->kind == PBN_SEQ ? json_array_append_new(o, v)
					      : json_object_set_new(o, n->keys[k]->text, v)) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

static bool habs_path(struct hctx *c, const struct pb_node *n, const char *where)
{
	if (n->kind != PBN_SCALAR || n->text[0] != '/' || n->len > 1000 ||
	    strstr(n->text, "/../") || strpbrk(n->text, "\n\r\t")) {
		herr(c, n, "%s: expected an absolute path", where);
		return false;
	}
	return true;
}

/* gds: {cufile, expect, gdscheck, gdscheck_timeout, supported}. */
static json_t *hgds(struct hctx *c, const struct pb_node *n)
{
	static const char *const keys[] = {"cufile",	       "expect",    "gdscheck",
					   "gdscheck_timeout", "supported", NULL};
	json_t *o = json_pack("{s:s, s:s, s:i, s:{}, s:[]}", "cufile", PB_HEALTH_CUFILE, "gdscheck",
			      PB_HEALTH_GDSCHECK, "gdscheck_timeout_s",
			      PB_HEALTH_GDSCHECK_TIMEOUT_S, "expect", "supported");
	const struct pb_node *v;
	char where[300];

	if (!n || !o ||
	    !hmap(c, n, "health.gds", keys,
		  "cufile, expect, gdscheck, gdscheck_timeout, supported"))
		return o;
	if ((v = pb_node_get(n, "cufile")) && habs_path(c, v, "health.gds.cufile"))
		json_object_set_new(o, "cufile", json_string(v->text));
	if ((v = pb_node_get(n, "gdscheck")) && habs_path(c, v, "health.gds.gdscheck"))
		json_object_set_new(o, "gdscheck", json_string(v->text));
	if ((v = pb_node_get(n, "gdscheck_timeout")))
		hduration(c, v, "health.gds.gdscheck_timeout", 1000, 600000, o,
			  "gdscheck_timeout_s");
	if ((v = pb_node_get(n, "expect")) && hmap(c, v, "health.gds.expect", NULL, NULL)) {
		if (v->n > PB_HEALTH_MAX_EXPECT)
			herr(c, v, "health.gds.expect: %zu keys, at most %d", v->n,
			     PB_HEALTH_MAX_EXPECT);
		for (size_t i = 0; i < v->n; i++) {
			const char *k = v->keys[i]->text;
			json_t *val;
			char *dump;

			snprintf(where, sizeof(where), "health.gds.expect.%.200s", k);
			if (!k[0] || k[0] == '.' || k[strlen(k) - 1] == '.' || strstr(k, "..") ||
			    strlen(k) > 200) {
				herr(c, v->keys[i],
				     "%s: expected a dotted key of cufile.json "
				     "(properties.rdma_dev_addr_list)",
				     where);
				continue;
			}
			val = hvalue(v->items[i], 0);
			dump = val ? json_dumps(val, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
			if (!dump || strlen(dump) > PB_HEALTH_MAX_VALUE)
				herr(c, v->items[i],
				     "%s: value too large (at most %d bytes as JSON)", where,
				     PB_HEALTH_MAX_VALUE);
			else
				json_object_set(json_object_get(o, "expect"), k, val);
			free(dump);
			json_decref(val);
		}
	}
	if ((v = pb_node_get(n, "supported"))) {
		if (v->kind != PBN_SEQ || v->n > PB_HEALTH_MAX_SUPPORTED) {
			herr(c, v, "health.gds.supported: expected a list of at most %d names",
			     PB_HEALTH_MAX_SUPPORTED);
			return o;
		}
		for (size_t i = 0; i < v->n; i++) {
			const struct pb_node *s = v->items[i];

			if (s->kind != PBN_SCALAR || !s->len || s->len > 64 ||
			    strchr(s->text, ':')) {
				herr(c, s,
				     "health.gds.supported[%zu]: expected a name gdscheck -p "
				     "prints "
				     "(\"NVMe\", \"Userspace RDMA\")",
				     i);
				continue;
			}
			json_array_append_new(json_object_get(o, "supported"),
					      json_string(s->text));
		}
	}
	return o;
}

/* require: [fabric_manager, gpudirect_rdma, gds] */
static json_t *hrequire(struct hctx *c, const struct pb_node *n)
{
	static const char *const checks[] = {"fabric_manager", "gpudirect_rdma", "gds", NULL};
	json_t *o = json_array();

	if (!n || !o)
		return o;
	if (n->kind != PBN_SEQ) {
		herr(c, n, "health.require: expected a list of checks, got %s", kind_word(n));
		return o;
	}
	for (size_t i = 0; i < n->n; i++) {
		const struct pb_node *s = n->items[i];
		bool known = false, dup = false;
		size_t k;
		json_t *x;

		for (k = 0; s->kind == PBN_SCALAR && checks[k]; k++)
			known = known || strcmp(s->text, checks[k]) == 0;
		if (!known) {
			herr(c, s,
			     "health.require[%zu]: unknown check (fabric_manager, gpudirect_rdma, "
			     "gds)",
			     i);
			continue;
		}
		json_array_foreach(o, k, x) dup = dup || strcmp(json_string_value(x), s->text) == 0;
		if (dup)
			herr(c, s, "health.require[%zu]: \"%s\" is listed twice", i, s->text);
		else
			json_array_append_new(o, json_string(s->text));
	}
	return o;
}

int pb_health_parse(const char *file, const struct pb_node *n, json_t **ret, struct pb_diags *d)
{
	static const char *const keys[] = {"interval", "ports",	  "xid", "gpu",
					   "nvlink",   "require", "gds", NULL};
	struct hctx c = {.file = file, .d = d};
	const struct pb_node *v;
	json_t *o = json_pack("{s:i}", "version", PB_HEALTH_SCHEMA), *rd;
	char *dump;

	if (!o)
		return 1;
	json_object_set_new(o, "interval_s", json_integer(PB_HEALTH_INTERVAL_S));
	if (n && !hmap(&c, n, "health", keys, "interval, ports, xid, gpu, nvlink, require, gds"))
		n = NULL;
	if (n && (v = pb_node_get(n, "interval")))
		hduration(&c, v, "health.interval", 1000, 3600000, o, "interval_s");
	json_object_set_new(o, "ports", hports(&c, n ? pb_node_get(n, "ports") : NULL));
	json_object_set_new(o, "xid", hxid(&c, n ? pb_node_get(n, "xid") : NULL));
	json_object_set_new(
		o, "gpu",
		hgpu(&c, n ? pb_node_get(n, "gpu") : NULL, n ? pb_node_get(n, "nvlink") : NULL));
	rd = json_object();
	json_object_set_new(rd, "require", hrequire(&c, n ? pb_node_get(n, "require") : NULL));
	json_object_set_new(rd, "gds", hgds(&c, n ? pb_node_get(n, "gds") : NULL));
	json_object_set_new(o, "readiness", rd);
	/* every list and value above is bounded; this only guards the sum */
	dump = json_dumps(o, JSON_COMPACT);
	if (!dump || strlen(dump) > PB_HEALTH_JSON_MAX)
		herr(&c, n, "health: %zu bytes as JSON, over %d", dump ? strlen(dump) : 0,
		     PB_HEALTH_JSON_MAX);
	free(dump);
	if (c.errors) {
		json_decref(o);
		return c.errors;
	}
	*ret = o;
	return 0;
}
