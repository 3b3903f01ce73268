/* GPU checks: measure each GPU's copy bandwidth, read the node's facts, judge both against the
 * limits, and say per GPU what passed, failed or could not be read; the agent's `gpu-check`
 * command line. Owns only the documents it builds. */
#include "nodeagent/gpucheck.h"
#include "nodeagent/facts/facts.h"

#include "common/log/log.h"
#include "common/util/error.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void gpu_check_opts_init(struct gpu_check_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->h2d_min = GPU_CHECK_H2D_MIN;
	o->d2h_min = GPU_CHECK_D2H_MIN;
	o->d2d_min = GPU_CHECK_D2D_MIN;
	o->size = GPUBW_SIZE_DEFAULT;
	o->repeats = GPUBW_REPEATS_DEFAULT;
	o->gpu = -1;
}

static bool min_ok(double v)
{
	return isfinite(v) && v >= 0 && v <= 100000;
}

int gpu_check_opts_from_json(const json_t *params, struct gpu_check_opts *o, char *err,
			     size_t errlen)
{
	const char *key;
	json_t *v;

	if (!json_is_object(params)) {
		snprintf(err, errlen, "parameters must be a JSON object");
		return -RY_E_INVALID;
	}
	json_object_foreach((json_t *)params, key, v)
	{
		json_int_t n = json_integer_value(v);
		double d = json_number_value(v);
		bool ok = true;

		if (strcmp(key, "kind") == 0)
			ok = json_is_string(v) && strcmp(json_string_value(v), "gpu") == 0;
		else if (strcmp(key, "gpu") == 0 && json_is_integer(v))
			ok = n >= -1 && n < GPU_CHECK_GPUS_MAX && (o->gpu = (int)n, true);
		else if (strcmp(key, "size") == 0 && json_is_integer(v))
			ok = n >= (json_int_t)GPUBW_SIZE_MIN && n <= (json_int_t)GPUBW_SIZE_MAX &&
			     (o->size = (uint64_t)n, true);
		else if (strcmp(key, "repeats") == 0 && json_is_integer(v))
			ok = n >= 1 && n <= GPUBW_REPEATS_MAX && (o->repeats = (uint32_t)n, true);
		else if (strcmp(key, "h2d_min_gb_s") == 0 && json_is_number(v))
			ok = min_ok(d) && (o->h2d_min = d, true);
		else if (strcmp(key, "d2h_min_gb_s") == 0 && json_is_number(v))
			ok = min_ok(d) && (o->d2h_min = d, true);
		else if (strcmp(key, "d2d_min_gb_s") == 0 && json_is_number(v))
			ok = min_ok(d) && (o->d2d_min = d, true);
		else
			ok = false;
		if (!ok) {
			snprintf(err, errlen,
				 "GPU check parameter '%.32s': unknown, of the wrong "
				 "type or out of range",
				 key);
			return -RY_E_INVALID;
		}
	}
	return 0;
}

/* ---- judging ------------------------------------------------------------------------------ */

struct judge {
	json_t *checks, *failures, *not_read;
	unsigned failed, unread;
	char who[160]; /* "GPU 0 (0000:18:00.0, SN 1654024199045)" */
};

static void item(struct judge *j, const char *name, const char *status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void item(struct judge *j, const char *name, const char *status, const char *fmt, ...)
{
	char detail[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	json_array_append_new(j->checks, json_pack("{ss ss ss}", "name", name, "status", status,
						   "detail", detail));
	if (strcmp(status, "fail") == 0) {
		j->failed++;
		json_array_append_new(j->failures, json_sprintf("%s: %s", j->who, detail));
	} else if (strcmp(status, "not_read") == 0) {
		j->unread++;
		json_array_append_new(j->not_read, json_sprintf("%s: %s", j->who, detail));
	}
}

/* A facts member that is a count or a flag: true/1.. = set, false/0 = clear; -1 absent (or
 * of another type: not a reading we understand). */
static int flag_of(const json_t *o, const char *key, json_int_t *ret_n)
{
	const json_t *v = json_object_get(o, key);

	if (json_is_boolean(v)) {
		*ret_n = json_is_true(v);
		return 1;
	}
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*ret_n = json_integer_value(v);
		return 1;
	}
	return -1;
}

static void check_bw(struct judge *j, const struct gpu_check_measured *m, enum gpubw_dir d,
		     double min, json_t *bw)
{
	const struct gpubw_dir_result *x = &m->bw.dir[d];
	const char *name = gpubw_dir_name(d);

	if (m->r < 0) {
		item(j, name, "fail", "%s not measured: %s", name, m->err);
		return;
	}
	json_object_set_new(bw, name,
			    json_pack("{sf sf sf si}", "gb_s", x->median_gbs, "min_gb_s",
				      x->min_gbs, "max_gb_s", x->max_gbs, "samples",
				      (int)x->samples));
	if (min <= 0)
		item(j, name, "pass", "%s %.1f GB/s (not checked)", name, x->median_gbs);
	else if (x->median_gbs >= min)
		item(j, name, "pass", "%s %.1f GB/s, at least %.1f", name, x->median_gbs, min);
	else
		item(j, name, "fail", "%s %.1f GB/s, below %.1f (median of %u)", name,
		     x->median_gbs, min, x->samples);
}

static void check_ecc(struct judge *j, const json_t *g)
{
	const json_t *ecc = json_object_get(g, "ecc");
	json_int_t en, vol, agg;

	if (!json_is_object(ecc)) {
		item(j, "ecc", "not_read", "ECC not read (the facts have no ecc)");
		return;
	}
	if (flag_of(ecc, "enabled", &en) > 0 && !en) {
		item(j, "ecc", "fail", "ECC is disabled: uncorrectable errors are not counted");
		return;
	}
	if (flag_of(ecc, "volatile_uncorrected", &vol) < 0 ||
	    flag_of(ecc, "aggregate_uncorrected", &agg) < 0) {
		item(j, "ecc", "not_read", "ECC uncorrectable counts not read");
		return;
	}
	if (vol || agg)
		item(j, "ecc", "fail",
		     "ECC uncorrectable errors: %lld since the driver loaded, %lld over its "
		     "lifetime (must be 0)",
		     (long long)vol, (long long)agg);
	else
		item(j, "ecc", "pass", "ECC uncorrectable 0 (volatile and aggregate)");
}

static void check_remap(struct judge *j, const json_t *g)
{
	const json_t *rr = json_object_get(g, "remapped_rows");
	json_int_t pending, failure;

	if (!json_is_object(rr) || flag_of(rr, "pending", &pending) < 0 ||
	    flag_of(rr, "failure", &failure) < 0) {
		item(j, "row_remap", "not_read", "row remapping not read");
		return;
	}
	if (pending && failure)
		item(j, "row_remap", "fail", "row remap pending and a remap failed");
	else if (pending)
		item(j, "row_remap", "fail", "row remap pending (the GPU needs a reset)");
	else if (failure)
		item(j, "row_remap", "fail", "a row remap failed (no spare rows left)");
	else
		item(j, "row_remap", "pass", "no row remap pending or failed");
}

static void check_pcie(struct judge *j, const json_t *g)
{
	const json_t *p = json_object_get(g, "pcie");
	json_int_t gen, gmax, w, wmax;

	if (!json_is_object(p) || flag_of(p, "gen", &gen) < 0 || flag_of(p, "gen_max", &gmax) < 0 ||
	    flag_of(p, "width", &w) < 0 || flag_of(p, "width_max", &wmax) < 0) {
		item(j, "pcie", "not_read", "PCIe link generation and width not read");
		return;
	}
	if (gen < gmax || w < wmax)
		item(j, "pcie", "fail", "PCIe link at Gen%lld x%lld, the GPU can do Gen%lld x%lld",
		     (long long)gen, (long long)w, (long long)gmax, (long long)wmax);
	else
		item(j, "pcie", "pass", "PCIe Gen%lld x%lld (its maximum)", (long long)gen,
		     (long long)w);
}

static void check_clocks(struct judge *j, const json_t *g)
{
	const json_t *c = json_object_get(g, "clocks_event_reasons"), *a;
	json_int_t hw, th;
	char names[128] = "";
	size_t len = 0, i;

	if (!json_is_object(c) || flag_of(c, "hw_slowdown", &hw) < 0 ||
	    flag_of(c, "thermal", &th) < 0) {
		item(j, "clocks", "not_read", "clock event reasons not read");
		return;
	}
	json_array_foreach(json_object_get(c, "active"), i, a)
	{
		if (json_is_string(a) && len < sizeof(names) - 1)
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s",
						len ? ", " : "", json_string_value(a));
	}
	if (hw || th)
		item(j, "clocks", "fail", "clocks held down by %s%s%s%s%s",
		     hw ? "a hardware slowdown" : "", hw && th ? " and " : "",
		     th ? "a thermal event" : "", names[0] ? "; active: " : "", names);
	else
		item(j, "clocks", "pass", "no hardware-slowdown or thermal clock event");
}

static void check_persistence(struct judge *j, const json_t *g)
{
	json_int_t on;

	if (flag_of(g, "persistence_mode", &on) < 0)
		item(j, "persistence", "not_read", "persistence mode not read");
	else if (!on)
		item(j, "persistence", "fail", "persistence mode is off");
	else
		item(j, "persistence", "pass", "persistence mode on");
}

/* "0000:18:00.0" and "00000000:18:00.0" are the same bus. */
static bool same_bus(const char *a, const char *b)
{
	while (*a == '0' && a[1] && a[1] != ':')
		a++;
	while (*b == '0' && b[1] && b[1] != ':')
		b++;
	return strcasecmp(a, b) == 0;
}

static const char *str_of(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* The facts entry of a CUDA GPU: by UUID, else by PCI bus id. */
static const json_t *facts_gpu(const json_t *facts, const struct bench_cuda_devinfo *d,
			       size_t *ret_index)
{
	const json_t *g;
	size_t i;

	json_array_foreach(json_object_get(facts, "gpus"), i, g)
	{
		const char *uuid = str_of(g, "uuid");

		if (uuid && d->uuid[0] && strcasecmp(uuid, d->uuid) == 0) {
			*ret_index = i;
			return g;
		}
	}
	json_array_foreach(json_object_get(facts, "gpus"), i, g)
	{
		const char *bus = str_of(g, "bus") ? str_of(g, "bus") : str_of(g, "pci_bus_id");

		if (bus && d->bus_id[0] && same_bus(bus, d->bus_id)) {
			*ret_index = i;
			return g;
		}
	}
	return NULL;
}

static void min_into(json_t *summary, const char *key, double v)
{
	const json_t *cur = json_object_get(summary, key);

	if (isfinite(v) && (!cur || v < json_real_value(cur)))
		json_object_set_new(summary, key, json_real(v));
}

json_t *gpu_check_evaluate(const json_t *facts, const struct gpu_check_measured *m, size_t n,
			   const struct gpu_check_opts *o)
{
	json_t *doc, *gpus = json_array(), *failures = json_array(), *not_read = json_array();
	json_t *summary = json_object();
	bool *seen = calloc(json_array_size(json_object_get(facts, "gpus")) + 1, sizeof(*seen));
	unsigned failed = 0, unread = 0;
	const json_t *fg;
	size_t i;

	if (!gpus || !failures || !not_read || !summary || !seen)
		goto nomem;
	for (i = 0; i < n; i++) {
		const struct gpu_check_measured *x = &m[i];
		struct judge j = {json_array(), failures, not_read, 0, 0, ""};
		size_t fi = 0;
		const json_t *g = facts ? facts_gpu(facts, &x->info, &fi) : NULL;
		const char *serial = str_of(g, "serial");
		json_t *bw = json_object(), *e;

		if (!j.checks || !bw) {
			json_decref(j.checks);
			json_decref(bw);
			goto nomem;
		}
		snprintf(j.who, sizeof(j.who), "GPU %d (%s%s%s)", x->info.ordinal,
			 x->info.bus_id[0] ? x->info.bus_id : "bus ?", serial ? ", SN " : "",
			 serial ? serial : "");
		check_bw(&j, x, GPUBW_H2D, o->h2d_min, bw);
		check_bw(&j, x, GPUBW_D2H, o->d2h_min, bw);
		check_bw(&j, x, GPUBW_D2D, o->d2d_min, bw);
		if (g) {
			seen[fi] = true;
			check_ecc(&j, g);
			check_remap(&j, g);
			check_pcie(&j, g);
			check_clocks(&j, g);
			check_persistence(&j, g);
		} else {
			item(&j, "facts", "not_read",
			     "health not read: the facts have no GPU %s%s%s", x->info.bus_id,
			     x->info.uuid[0] ? " / " : "", x->info.uuid);
		}
		if (x->r == 0) {
			min_into(summary, "h2d_gb_s", x->bw.dir[GPUBW_H2D].median_gbs);
			min_into(summary, "d2h_gb_s", x->bw.dir[GPUBW_D2H].median_gbs);
			min_into(summary, "d2d_gb_s", x->bw.dir[GPUBW_D2D].median_gbs);
		}
		e = json_pack("{si ss ss ss so so sb}", "index", x->info.ordinal, "name",
			      x->info.name, "bus_id", x->info.bus_id, "uuid", x->info.uuid,
			      "bandwidth", bw, "checks", j.checks, "passed", j.failed == 0);
		if (e && serial)
			json_object_set_new(e, "serial", json_string(serial));
		if (e && str_of(g, "source"))
			json_object_set_new(e, "source", json_string(str_of(g, "source")));
		if (e && json_is_object(json_object_get(g, "nearest_hca")))
			json_object_set(e, "nearest_hca", json_object_get(g, "nearest_hca"));
		json_array_append_new(gpus, e);
		failed += j.failed;
		unread += j.unread;
	}
	/* A GPU the node has (facts) that CUDA cannot use is a failed GPU (fell off the bus,
	 * driver error), when every GPU was measured. */
	json_array_foreach(o->gpu < 0 ? json_object_get(facts, "gpus") : NULL, i, fg)
	{
		const char *bus = str_of(fg, "bus") ? str_of(fg, "bus") : str_of(fg, "pci_bus_id");

		if (seen[i])
			continue;
		failed++;
		json_array_append_new(failures,
				      json_sprintf("GPU %s%s%s is in the facts but CUDA does not "
						   "see it",
						   bus ? bus : "?", str_of(fg, "uuid") ? " / " : "",
						   str_of(fg, "uuid") ? str_of(fg, "uuid") : ""));
	}
	json_object_set_new(summary, "gpus", json_integer((json_int_t)n));
	json_object_set_new(summary, "checks_failed", json_integer(failed));
	json_object_set_new(summary, "not_read", json_integer(unread));
	doc = json_pack("{si sb ss sb s{sf sf sf sI si} so so so so}", "version", 1, "ok", true,
			"tool", "railyard gpu-check", "passed", failed == 0 && n > 0, "limits",
			"h2d_min_gb_s", o->h2d_min, "d2h_min_gb_s", o->d2h_min, "d2d_min_gb_s",
			o->d2d_min, "size", (json_int_t)o->size, "repeats", (int)o->repeats, "gpus",
			gpus, "failures", failures, "not_read", not_read, "summary", summary);
	free(seen);
	return doc;
nomem:
	free(seen);
	json_decref(gpus);
	json_decref(failures);
	json_decref(not_read);
	json_decref(summary);
	return NULL;
}

int gpu_check_run(const char *sysroot, const json_t *facts, const struct gpu_check_opts *o,
		  json_t **ret, char *err, size_t errlen)
{
	const struct bench_cuda *cu;
	struct gpu_check_measured *m = NULL;
	json_t *collected = NULL, *doc;
	int count = 0, lo, hi, r;
	size_t n = 0;

	r = bench_cuda_get(&cu, err, errlen);
	if (r < 0)
		return r;
	if (cu->device_get_count(&count) != BCU_SUCCESS || count <= 0) {
		snprintf(err, errlen, "no CUDA GPU on this host");
		return -ENODEV;
	}
	if (count > GPU_CHECK_GPUS_MAX)
		count = GPU_CHECK_GPUS_MAX;
	if (o->gpu >= count) {
		snprintf(err, errlen, "no GPU %d: this host has %d (0..%d)", o->gpu, count,
			 count - 1);
		return -ENODEV;
	}
	lo = o->gpu < 0 ? 0 : o->gpu;
	hi = o->gpu < 0 ? count : o->gpu + 1;
	m = calloc((size_t)(hi - lo), sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (int d = lo; d < hi; d++, n++) {
		struct gpu_check_measured *x = &m[n];

		if (bench_cuda_devinfo(cu, d, &x->info) < 0) {
			x->info.ordinal = d;
			x->r = -ENODEV;
			snprintf(x->err, sizeof(x->err), "CUDA cannot open GPU %d", d);
			continue;
		}
		x->r = gpubw_measure(d, o->size, o->repeats, o->cancel, &x->bw, x->err,
				     sizeof(x->err));
		if (x->r == -ECANCELED) {
			snprintf(err, errlen, "canceled");
			free(m);
			return -ECANCELED;
		}
	}
	/* After the copies: an idle GPU may have lowered its PCIe link (power saving). */
	if (!facts) {
		r = facts_collect(sysroot, &collected);
		if (r < 0) {
			free(m);
			snprintf(err, errlen, "reading the facts: %s", ry_strerror(r));
			return r;
		}
		facts = collected;
	}
	doc = gpu_check_evaluate(facts, m, n, o);
	if (doc && facts != collected)
		json_object_set_new(doc, "facts", json_string("given"));
	json_decref(collected);
	free(m);
	if (!doc) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	*ret = doc;
	return 0;
}

/* ---- railyard-agent gpu-check -------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: railyard-agent gpu-check [--gpu N] [--size BYTES] [--repeats N]\n"
		"         [--h2d-min GB/s] [--d2h-min GB/s] [--d2d-min GB/s]\n"
		"         [--sysroot DIR | --facts FILE] [--json]\n"
		"Per GPU: pinned H2D, D2H and device-to-device copy bandwidth (CUDA events, "
		"median\n"
		"of --repeats copies of --size bytes; defaults 10 x 256M) against the minimums\n"
		"(defaults 48, 48 and 1500 GB/s; 0 turns one off), and from the facts (NVML):\n"
		"ECC uncorrectable 0, no pending or failed row remap, PCIe at its maximum\n"
		"generation and width, no hardware-slowdown or thermal clock event, persistence\n"
		"mode on. --facts judges a facts document (railyard-agent facts --json) instead\n"
		"of reading this node's. Exit: 0 passed, 1 failed or could not run, 2 usage.\n");
}

static int parse_num(const char *s, double lo, double hi, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi))
		return -1;
	*ret = v;
	return 0;
}

static int parse_size(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;
	uint64_t mult = 1;

	errno = 0;
	if (!s[0] || s[0] == '-')
		return -1;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (strcmp(end, "K") == 0)
		mult = 1ull << 10;
	else if (strcmp(end, "M") == 0)
		mult = 1ull << 20;
	else if (strcmp(end, "G") == 0)
		mult = 1ull << 30;
	else if (*end)
		return -1;
	if (v > GPUBW_SIZE_MAX / mult || v * mult < GPUBW_SIZE_MIN)
		return -1;
	*ret = v * mult;
	return 0;
}

static void print_table(FILE *out, const json_t *doc)
{
	const json_t *g, *c, *s;
	size_t i, k;

	json_array_foreach(json_object_get(doc, "gpus"), i, g)
	{
		fprintf(out, "GPU %lld  %s  %s  %s\n",
			(long long)json_integer_value(json_object_get(g, "index")),
			str_of(g, "name"), str_of(g, "bus_id"), str_of(g, "uuid"));
		json_array_foreach(json_object_get(g, "checks"), k, c)
			fprintf(out, "  %-12s %-9s %s\n", str_of(c, "name"),
				strcmp(str_of(c, "status"), "not_read") == 0 ? "not read"
									     : str_of(c, "status"),
				str_of(c, "detail"));
	}
	json_array_foreach(json_object_get(doc, "failures"), i, s)
	{
		if (strstr(json_string_value(s), "CUDA does not see"))
			fprintf(out, "FAIL %s\n", json_string_value(s));
	}
	fprintf(out, "%s: %lld check(s) failed, %lld not read\n",
		json_is_true(json_object_get(doc, "passed")) ? "PASSED" : "FAILED",
		(long long)json_integer_value(
			json_object_get(json_object_get(doc, "summary"), "checks_failed")),
		(long long)json_integer_value(
			json_object_get(json_object_get(doc, "summary"), "not_read")));
}

int gpu_check_cmd(int argc, char **argv, FILE *out)
{
	static const struct option opts[] = {
		{"gpu", required_argument, NULL, 'g'},
		{"size", required_argument, NULL, 's'},
		{"repeats", required_argument, NULL, 'n'},
		{"h2d-min", required_argument, NULL, 'H'},
		{"d2h-min", required_argument, NULL, 'D'},
		{"d2d-min", required_argument, NULL, 'X'},
		{"sysroot", required_argument, NULL, 'r'},
		{"facts", required_argument, NULL, 'f'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct gpu_check_opts o;
	const char *sysroot = "/", *facts_file = NULL;
	json_t *facts = NULL, *doc = NULL;
	char err[256] = "";
	bool json = false;
	double v;
	int c, r, rc;

	gpu_check_opts_init(&o);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'g':
			if (parse_num(optarg, 0, GPU_CHECK_GPUS_MAX - 1, &v) < 0 || v != (int)v)
				goto bad;
			o.gpu = (int)v;
			break;
		case 's':
			if (parse_size(optarg, &o.size) < 0)
				goto bad;
			break;
		case 'n':
			if (parse_num(optarg, 1, GPUBW_REPEATS_MAX, &v) < 0 || v != (int)v)
				goto bad;
			o.repeats = (uint32_t)v;
			break;
		case 'H':
		case 'D':
		case 'X':
			if (parse_num(optarg, 0, 100000, &v) < 0)
				goto bad;
			*(c == 'H' ? &o.h2d_min : c == 'D' ? &o.d2h_min : &o.d2d_min) = v;
			break;
		case 'r':
			sysroot = optarg;
			break;
		case 'f':
			facts_file = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(out);
			return 0;
		default:
			goto bad;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "railyard-agent gpu-check: unexpected '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (facts_file) {
		json_error_t je;

		facts = json_load_file(facts_file, JSON_REJECT_DUPLICATES, &je);
		if (!json_is_object(facts)) {
			fprintf(stderr, "railyard-agent gpu-check: %s: %s\n", facts_file,
				facts ? "not a JSON object" : je.text);
			json_decref(facts);
			return 2;
		}
	}
	r = gpu_check_run(sysroot, facts, &o, &doc, err, sizeof(err));
	json_decref(facts);
	if (r < 0) {
		fprintf(stderr, "railyard-agent gpu-check: cannot run: %s\n", err);
		if (json) {
			doc = json_pack("{si sb ss sb s{si ss}}", "version", 1, "ok", false, "tool",
					"railyard gpu-check", "passed", false, "error", "code", r,
					"message", err);
			if (doc)
				json_dumpf(doc, out, JSON_INDENT(2));
			fputc('\n', out);
			json_decref(doc);
		}
		return 1;
	}
	rc = json_is_true(json_object_get(doc, "passed")) ? 0 : 1;
	if (json) {
		json_dumpf(doc, out, JSON_INDENT(2));
		fputc('\n', out);
	} else {
		print_table(out, doc);
	}
	json_decref(doc);
	return rc;
bad:
	fprintf(stderr, "railyard-agent gpu-check: invalid %s\n", argv[optind - 1]);
	usage(stderr);
	return 2;
}
