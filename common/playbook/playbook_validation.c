/* A playbook's validation section: the tests a validation campaign runs (kind, pattern,
 * parameters) and the acceptance rules its verdict applies, checked with FILE:LINE:COL
 * diagnostics and turned into a normalized JSON spec (every default filled in, sizes in bytes,
 * durations in seconds). Reference: docs/playbooks.md, "validation". */
#include "common/playbook/playbook_int.h"
#include "common/util/util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Metrics each kind of test measures (rules name them as TEST.FIELD); counters.NAME is valid
 * for every kind. */
static const char *const lat_fields[] = {"min_us", "p50_us",  "p90_us",	   "p99_us", "p999_us",
					 "max_us", "mean_us", "stddev_us", NULL};
/* A bandwidth test's: the forward direction, and the CPU cost of each side (docs/campaigns.md,
 * "CPU cost"): host-wide cores busy, host-wide CPU-seconds per GB moved, the benchmark thread's
 * cores. A figure an agent could not know is absent, and a rule on it fails that row. */
static const char *const bw_fields[] = {"gbps",
					"msg_rate",
					"cpu_cores_client",
					"cpu_cores_server",
					"cpu_s_per_gb_client",
					"cpu_s_per_gb_server",
					"cpu_thread_cores_client",
					"cpu_thread_cores_server",
					NULL};
static const char *const congestion_fields[] = {
	"impact_avg",	    "impact_p99",    "impact_bw",      "isolated_p99_us",
	"congested_p99_us", "isolated_gbps", "congested_gbps", NULL};
/* A GPU check's: the lowest of the node's GPUs (GB/s), the checks that failed and the readings
 * that could not be made (docs/bench.md, "GPU checks"), the GPUs measured. */
static const char *const gpu_fields[] = {"h2d_gb_s", "d2h_gb_s", "d2d_gb_s", "checks_failed",
					 "not_read", "gpus",	 NULL};
/* A collective's (docs/campaigns.md, "Collectives"): the test's first op at the largest size
 * (bus and algorithm bandwidth, GB/s as nccl-tests prints them), nccl-tests' "Avg bus bandwidth"
 * of that op over the sweep, its time at the smallest size, the wrong elements of every op, the
 * slowest node pair of the pairwise probe (Gb/s), the CPU cost; and OP_busbw_gbs / OP_lat_us of
 * every op (pb_metric_ok()). */
static const char *const coll_fields[] = {
	"busbw_gbs", "algbw_gbs",    "avg_busbw_gbs",	  "lat_us", "wrong", "pair_min_gbps",
	"cpu_cores", "cpu_s_per_gb", "host_cpu_s_per_gb", NULL};
static const char *const coll_ops[] = {"allreduce", "allgather", "reducescatter",
				       "alltoall",  "sendrecv",	 NULL};

static bool in(const char *s, const char *const *set)
{
	for (size_t i = 0; s && set[i]; i++)
		if (strcmp(s, set[i]) == 0)
			return true;
	return false;
}

bool pb_metric_ok(const char *kind, const char *field)
{
	if (!kind || !field)
		return false;
	if (strncmp(field, "counters.", 9) == 0)
		return field[9] != '\0' &&
		       strspn(field + 9,
			      "abcdefghijklmnopqrstuvwxyz"
			      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == strlen(field + 9);
	if (strcmp(kind, "lat") == 0)
		return in(field, lat_fields);
	if (strcmp(kind, "bw") == 0)
		return in(field, bw_fields);
	if (strcmp(kind, "congestion") == 0)
		return in(field, congestion_fields);
	if (strcmp(kind, "gpu") == 0)
		return in(field, gpu_fields);
	if (strcmp(kind, "collective") == 0) {
		for (size_t i = 0; coll_ops[i]; i++) {
			size_t n = strlen(coll_ops[i]);

			if (strncmp(field, coll_ops[i], n) == 0 && field[n] == '_' &&
			    (strcmp(field + n + 1, "busbw_gbs") == 0 ||
			     strcmp(field + n + 1, "lat_us") == 0))
				return true;
		}
		return in(field, coll_fields);
	}
	return false;
}

struct vctx {
	const char *file;
	struct pb_diags *d;
	int errors;
};

static void verr(struct vctx *c, const struct pb_node *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void verr(struct vctx *c, const struct pb_node *n, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pb_diags_add(c->d, c->file, n ? n->line : 1, n ? n->col : 1, "%s", msg);
	c->errors++;
}

static const struct pb_node *scalar(struct vctx *c, const struct pb_node *map, const char *key,
				    const char *where)
{
	const struct pb_node *n = pb_node_get(map, key);

	if (n && (n->kind != PBN_SCALAR || pb_scalar_is_null(n))) {
		verr(c, n, "%s.%s: expected a scalar", where, key);
		return NULL;
	}
	return n;
}

/* "8", "128K", "1M", "2G" (powers of 1024) into bytes. */
static int parse_size(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;
	uint64_t mult = 1;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	if (strcmp(end, "K") == 0 || strcmp(end, "KiB") == 0)
		mult = 1024;
	else if (strcmp(end, "M") == 0 || strcmp(end, "MiB") == 0)
		mult = 1024 * 1024;
	else if (strcmp(end, "G") == 0 || strcmp(end, "GiB") == 0)
		mult = 1024ULL * 1024 * 1024;
	else if (*end)
		return -EINVAL;
	if (v == 0 || v > (1ULL << 32) / mult)
		return -EINVAL;
	*ret = v * mult;
	return 0;
}

/* A GB/s minimum of a gpu test: a number from 0 (not checked) to 100000. */
static void gpu_min(struct vctx *c, const struct pb_node *t, const char *key, const char *where,
		    double def, json_t *o)
{
	const struct pb_node *n = scalar(c, t, key, where);
	double v = def;
	char *end;

	if (n) {
		v = strtod(n->text, &end);
		if (*end || !(v >= 0 && v <= 100000))
			verr(c, n,
			     "%s.%s: expected GB/s from 0 (not checked) to 100000, got \"%s\"",
			     where, key, n->text);
	}
	json_object_set_new(o, key, json_real(v));
}

/* The keys of a gpu test: {name, kind, size (bytes per copy), repeats, h2d_min, d2h_min,
 * d2d_min (GB/s)}; defaults as railyard-agent gpu-check's. */
static void parse_gpu_test(struct vctx *c, const struct pb_node *t, const char *where, json_t *o)
{
	static const char *const keys[] = {"name",    "kind",	 "size",    "repeats",
					   "h2d_min", "d2h_min", "d2d_min", NULL};
	const struct pb_node *n;
	uint64_t size = 256ull << 20;
	long long v = 10;

	for (size_t k = 0; k < t->n; k++)
		if (!in(t->keys[k]->text, keys))
			verr(c, t->keys[k],
			     "%s: \"%s\" is not a key of a gpu test (size, repeats, "
			     "h2d_min, d2h_min, d2d_min)",
			     where, t->keys[k]->text);
	n = scalar(c, t, "size", where);
	if (n && (parse_size(n->text, &size) < 0 || size < (64u << 10)))
		verr(c, n, "%s.size: expected bytes per copy from 64K to 4G, like 256M, got \"%s\"",
		     where, n->text);
	json_object_set_new(o, "size", json_integer((json_int_t)size));
	n = scalar(c, t, "repeats", where);
	if (n && (pb_scalar_int(n, &v) < 0 || v < 1 || v > 1000))
		verr(c, n, "%s.repeats: expected 1-1000 timed copies", where);
	json_object_set_new(o, "repeats", json_integer(v));
	gpu_min(c, t, "h2d_min", where, 48, o);
	gpu_min(c, t, "d2h_min", where, 48, o);
	gpu_min(c, t, "d2d_min", where, 1500, o);
}

/* An absolute path of a collective test: printable, no "..", at most 255 bytes. */
static void coll_path(struct vctx *c, const struct pb_node *n, const char *where, const char *key,
		      const char *def, json_t *o)
{
	bool ok = n && n->text[0] == '/' && n->len < 256 && !strstr(n->text, "..");

	for (size_t i = 0; ok && i < n->len; i++)
		ok = n->text[i] > ' ' && n->text[i] < 0x7f;
	if (n && !ok)
		verr(c, n, "%s.%s: expected an absolute path (no spaces, no \"..\"), got \"%s\"",
		     where, key, n->text);
	if (n || def)
		json_object_set_new(o, key, json_string(n ? n->text : def));
}

/* The keys of a collective test (docs/campaigns.md, "Collectives"): {name, kind, ops, min_size,
 * max_size, ranks_per_node, backend, iters, warmup, timeout_s, settings: {mpi, ucx, nccl},
 * nccl_tests, pair_size, pair_iters (the job's pairwise probe)}. */
static void parse_coll_test(struct vctx *c, const struct pb_node *t, const char *where, json_t *o)
{
	static const char *const keys[] = {"name",	"kind",		  "ops",      "min_size",
					   "max_size",	"ranks_per_node", "backend",  "iters",
					   "warmup",	"timeout",	  "settings", "nccl_tests",
					   "pair_size", "pair_iters",	  NULL};
	static const char *const skeys[] = {"mpi", "ucx", "nccl", NULL};
	static const char *const sdefs[] = {"/etc/openmpi/openmpi-mca-params.conf",
					    "/etc/ucx/ucx.conf", "/etc/nccl.conf"};
	const struct pb_node *n, *ops = pb_node_get(t, "ops"), *set = pb_node_get(t, "settings");
	json_t *arr = json_array(), *so = json_object();
	uint64_t lo = 8, hi = 64ull << 20;
	long long v;
	int64_t ms = 600000;

	for (size_t k = 0; k < t->n; k++)
		if (!in(t->keys[k]->text, keys))
			verr(c, t->keys[k],
			     "%s: \"%s\" is not a key of a collective test (ops, min_size, "
			     "max_size, ranks_per_node, backend, iters, warmup, timeout, settings, "
			     "nccl_tests, pair_size, pair_iters)",
			     where, t->keys[k]->text);
	if (ops && ops->kind != PBN_SEQ)
		verr(c, ops,
		     "%s.ops: expected a list of allreduce, allgather, reducescatter, "
		     "alltoall, sendrecv",
		     where);
	for (size_t k = 0; ops && ops->kind == PBN_SEQ && k < ops->n; k++) {
		const struct pb_node *x = ops->items[k];
		bool dup = false;

		for (size_t j = 0; x->kind == PBN_SCALAR && j < json_array_size(arr); j++)
			dup |= strcmp(json_string_value(json_array_get(arr, j)), x->text) == 0;
		if (x->kind != PBN_SCALAR || !in(x->text, coll_ops) || dup)
			verr(c, x,
			     "%s.ops[%zu]: expected one of allreduce, allgather, reducescatter, "
			     "alltoall, sendrecv, each once",
			     where, k);
		else
			json_array_append_new(arr, json_string(x->text));
	}
	if (json_array_size(arr) == 0)
		json_array_append_new(arr, json_string("allreduce"));
	json_object_set_new(o, "ops", arr);
	n = scalar(c, t, "min_size", where);
	if (n && (parse_size(n->text, &lo) < 0 || lo < 4))
		verr(c, n, "%s.min_size: expected bytes from 4, like 8 or 1K, got \"%s\"", where,
		     n->text);
	n = scalar(c, t, "max_size", where);
	if (n && (parse_size(n->text, &hi) < 0 || hi > (1ull << 30)))
		verr(c, n, "%s.max_size: expected bytes up to 1G, like 64M, got \"%s\"", where,
		     n->text);
	if (lo > hi)
		verr(c, n ? n : t, "%s.max_size: below min_size", where);
	json_object_set_new(o, "min_size", json_integer((json_int_t)lo));
	json_object_set_new(o, "max_size", json_integer((json_int_t)hi));
	n = scalar(c, t, "ranks_per_node", where);
	v = 1;
	if (n && (pb_scalar_int(n, &v) < 0 || v < 1 || v > 64))
		verr(c, n, "%s.ranks_per_node: expected 1-64 (one per GPU on an H200 node: 8)",
		     where);
	json_object_set_new(o, "ranks_per_node", json_integer(v));
	n = scalar(c, t, "backend", where);
	if (n && strcmp(n->text, "mpi") != 0 && strcmp(n->text, "nccl") != 0)
		verr(c, n, "%s.backend: expected mpi or nccl, got \"%s\"", where, n->text);
	json_object_set_new(o, "backend", json_string(n ? n->text : "mpi"));
	n = scalar(c, t, "iters", where);
	v = 20;
	if (n && (pb_scalar_int(n, &v) < 0 || v < 1 || v > 100000))
		verr(c, n, "%s.iters: expected 1-100000 timed iterations per size", where);
	json_object_set_new(o, "iters", json_integer(v));
	n = scalar(c, t, "warmup", where);
	v = 5;
	if (n && (pb_scalar_int(n, &v) < 0 || v < 0 || v > 10000))
		verr(c, n, "%s.warmup: expected 0-10000 iterations per size", where);
	json_object_set_new(o, "warmup", json_integer(v));
	n = scalar(c, t, "pair_size", where);
	{
		uint64_t ps = 4u << 20;

		if (n && (parse_size(n->text, &ps) < 0 || ps > (256u << 20)))
			verr(c, n, "%s.pair_size: expected bytes up to 256M, like 4M, got \"%s\"",
			     where, n->text);
		json_object_set_new(o, "pair_size", json_integer((json_int_t)ps));
	}
	n = scalar(c, t, "pair_iters", where);
	v = 10;
	if (n && (pb_scalar_int(n, &v) < 0 || v < 1 || v > 10000))
		verr(c, n, "%s.pair_iters: expected 1-10000 exchanges per node pair", where);
	json_object_set_new(o, "pair_iters", json_integer(v));
	n = scalar(c, t, "timeout", where);
	if (n &&
	    (util_parse_duration_ms(n->text, &ms) < 0 || ms < 10000 || ms > 3600000 || ms % 1000))
		verr(c, n, "%s.timeout: expected whole seconds from 10s to 1h, got \"%s\"", where,
		     n->text);
	json_object_set_new(o, "timeout_s", json_integer(ms / 1000));
	if (set && set->kind != PBN_MAP)
		verr(c, set, "%s.settings: expected a mapping (mpi, ucx, nccl: file paths)", where);
	for (size_t k = 0; set && set->kind == PBN_MAP && k < set->n; k++)
		if (!in(set->keys[k]->text, skeys))
			verr(c, set->keys[k], "%s.settings: unknown key \"%s\" (mpi, ucx, nccl)",
			     where, set->keys[k]->text);
	for (size_t k = 0; skeys[k]; k++)
		coll_path(c, set && set->kind == PBN_MAP ? scalar(c, set, skeys[k], where) : NULL,
			  where, skeys[k], sdefs[k], so);
	json_object_set_new(o, "settings", so);
	coll_path(c, scalar(c, t, "nccl_tests", where), where, "nccl_tests", NULL, o);
	if (json_object_get(o, "nccl_tests") &&
	    strcmp(json_string_value(json_object_get(o, "backend")), "nccl") != 0)
		verr(c, pb_node_get(t, "nccl_tests"), "%s.nccl_tests: only with backend: nccl",
		     where);
}

/* One test: {name, kind, pattern, per_rail, op, size, duration, iters, qps, bidir, mem, gpu}
 * or, for kind congestion, {name, kind, congestors, victims, fraction, size, duration}, or for
 * kind gpu, see parse_gpu_test(). */
static json_t *parse_test(struct vctx *c, const struct pb_node *t, size_t i)
{
	static const char *const keys[] = {
		"name",	      "kind",	 "pattern",  "per_rail",      "op",  "size",
		"duration",   "iters",	 "qps",	     "bidir",	      "mem", "gpu",
		"congestors", "victims", "fraction", "traffic_class", NULL};
	static const char *const kinds[] = {"lat", "bw", "congestion", "gpu", "collective", NULL};
	static const char *const patterns[] = {"loopback", "pairs", "ring", "random-ring", NULL};
	static const char *const ops[] = {"write", "send", "read", NULL};
	static const char *const congestors[] = {"incast", "all-to-all", NULL};
	const struct pb_node *n, *name = NULL, *kind = NULL;
	char where[64];
	json_t *o = json_object();
	bool congestion;
	int errors = c->errors;

	snprintf(where, sizeof(where), "tests[%zu]", i);
	n = pb_node_get(t, "kind");
	/* A gpu or collective test's keys are its own (parse_gpu_test(), parse_coll_test()). */
	for (size_t k = 0;
	     k < t->n && !(n && n->kind == PBN_SCALAR &&
			   (strcmp(n->text, "gpu") == 0 || strcmp(n->text, "collective") == 0));
	     k++)
		if (!in(t->keys[k]->text, keys))
			verr(c, t->keys[k], "%s: unknown key \"%s\"", where, t->keys[k]->text);
	name = scalar(c, t, "name", where);
	kind = scalar(c, t, "kind", where);
	if (!name)
		verr(c, t, "%s: missing required key \"name\"", where);
	else if (strspn(name->text, "abcdefghijklmnopqrstuvwxyz0123456789_-") != name->len ||
		 name->len > 48 || !name->len)
		verr(c, name, "%s.name: \"%s\" may only use a-z, 0-9, '-' and '_' (48 at most)",
		     where, name->text);
	if (!kind)
		verr(c, t, "%s: missing required key \"kind\"", where);
	else if (!in(kind->text, kinds))
		verr(c, kind,
		     "%s.kind: unknown kind \"%s\" (expected lat, bw, congestion, gpu or "
		     "collective)",
		     where, kind->text);
	if (c->errors > errors) {
		json_decref(o);
		return NULL;
	}
	congestion = strcmp(kind->text, "congestion") == 0;
	json_object_set_new(o, "name", json_string(name->text));
	json_object_set_new(o, "kind", json_string(kind->text));
	json_object_set_new(o, "line", json_integer(t->line));
	json_object_set_new(o, "col", json_integer(t->col));
	if (strcmp(kind->text, "gpu") == 0) {
		parse_gpu_test(c, t, where, o);
		return o;
	}
	if (strcmp(kind->text, "collective") == 0) {
		parse_coll_test(c, t, where, o);
		return o;
	}

	if (congestion) {
		const struct pb_node *v = pb_node_get(t, "victims");
		json_t *victims = json_array();

		for (const char *const *k =
			     (const char *const[]){"pattern", "per_rail", "op", "iters", "qps",
						   "bidir", "mem", "gpu", NULL};
		     *k; k++)
			if ((n = pb_node_get(t, *k)))
				verr(c, n, "%s.%s: not a key of a congestion test", where, *k);
		n = scalar(c, t, "congestors", where);
		if (n && !in(n->text, congestors))
			verr(c, n, "%s.congestors: expected incast or all-to-all, got \"%s\"",
			     where, n->text);
		json_object_set_new(o, "congestors", json_string(n ? n->text : "incast"));
		if (v && v->kind != PBN_SEQ)
			verr(c, v, "%s.victims: expected a list of lat and bw", where);
		for (size_t k = 0; v && v->kind == PBN_SEQ && k < v->n; k++) {
			if (v->items[k]->kind != PBN_SCALAR ||
			    (strcmp(v->items[k]->text, "lat") != 0 &&
			     strcmp(v->items[k]->text, "bw") != 0))
				verr(c, v->items[k], "%s.victims[%zu]: expected lat or bw", where,
				     k);
			else
				json_array_append_new(victims, json_string(v->items[k]->text));
		}
		if (json_array_size(victims) == 0) {
			json_array_append_new(victims, json_string("lat"));
			json_array_append_new(victims, json_string("bw"));
		}
		json_object_set_new(o, "victims", victims);
		n = scalar(c, t, "fraction", where);
		if (n) {
			char *end;
			double f = strtod(n->text, &end);

			if (*end || !(f > 0 && f < 1))
				verr(c, n,
				     "%s.fraction: expected a number between 0 and 1 (the share "
				     "of nodes that congest), got \"%s\"",
				     where, n->text);
			json_object_set_new(o, "fraction", json_real(f));
		} else {
			json_object_set_new(o, "fraction", json_real(0.5));
		}
	} else {
		long long v;

		n = scalar(c, t, "pattern", where);
		if (!n)
			verr(c, t, "%s: missing required key \"pattern\"", where);
		else if (!in(n->text, patterns))
			verr(c, n,
			     "%s.pattern: unknown pattern \"%s\" (expected loopback, pairs, ring "
			     "or "
			     "random-ring)",
			     where, n->text);
		json_object_set_new(o, "pattern", json_string(n ? n->text : "pairs"));
		n = scalar(c, t, "per_rail", where);
		{
			bool b = false;

			if (n && pb_scalar_bool(n, &b) < 0)
				verr(c, n, "%s.per_rail: expected true or false", where);
			json_object_set_new(o, "per_rail", json_boolean(b));
		}
		n = scalar(c, t, "op", where);
		if (n && !in(n->text, ops))
			verr(c, n, "%s.op: expected write, send or read, got \"%s\"", where,
			     n->text);
		json_object_set_new(o, "op", json_string(n ? n->text : "write"));
		n = scalar(c, t, "iters", where);
		if (n && (pb_scalar_int(n, &v) < 0 || v < 1 || v > 100000000))
			verr(c, n, "%s.iters: expected a count of 1 or more", where);
		json_object_set_new(o, "iters", json_integer(n ? v : 0));
		n = scalar(c, t, "qps", where);
		if (n && (pb_scalar_int(n, &v) < 0 || v < 1 || v > 64))
			verr(c, n, "%s.qps: expected 1-64", where);
		json_object_set_new(o, "qps", json_integer(n ? v : 1));
		n = scalar(c, t, "bidir", where);
		{
			bool b = false;

			if (n && pb_scalar_bool(n, &b) < 0)
				verr(c, n, "%s.bidir: expected true or false", where);
			json_object_set_new(o, "bidir", json_boolean(b));
		}
		/* Memory of the buffers: host, or GPU memory (GPUDirect RDMA over verbs), the GPU
		 * of each rail chosen by topology (nearest) or by index (GPU i for rail i). */
		n = scalar(c, t, "mem", where);
		if (n && strcmp(n->text, "host") != 0 && strcmp(n->text, "cuda") != 0)
			verr(c, n, "%s.mem: expected host or cuda, got \"%s\"", where, n->text);
		json_object_set_new(o, "mem", json_string(n ? n->text : "host"));
		n = scalar(c, t, "gpu", where);
		if (n && strcmp(n->text, "nearest") != 0 && strcmp(n->text, "index") != 0)
			verr(c, n, "%s.gpu: expected nearest or index, got \"%s\"", where, n->text);
		else if (n && strcmp(json_string_value(json_object_get(o, "mem")), "cuda") != 0)
			verr(c, n, "%s.gpu: pairs GPUs with rails for mem: cuda", where);
		if (strcmp(json_string_value(json_object_get(o, "mem")), "cuda") == 0)
			json_object_set_new(o, "gpu", json_string(n ? n->text : "nearest"));
	}
	n = scalar(c, t, "size", where);
	{
		uint64_t size = strcmp(kind->text, "lat") == 0 ? 8 : 1024 * 1024;

		if (n && parse_size(n->text, &size) < 0)
			verr(c, n, "%s.size: expected bytes like 8, 128K or 1M, got \"%s\"", where,
			     n->text);
		json_object_set_new(o, "size", json_integer((json_int_t)size));
	}
	n = scalar(c, t, "duration", where);
	{
		int64_t ms = strcmp(kind->text, "lat") == 0 ? 0 : 5000;

		if (n && (util_parse_duration_ms(n->text, &ms) < 0 || ms < 1000 || ms > 3600000 ||
			  ms % 1000))
			verr(c, n, "%s.duration: expected whole seconds from 1s to 1h, got \"%s\"",
			     where, n->text);
		json_object_set_new(o, "duration_s", json_integer(ms / 1000));
	}
	n = scalar(c, t, "traffic_class", where);
	if (n) {
		long long tc;

		if (pb_scalar_int(n, &tc) < 0 || tc < 0 || tc > 255)
			verr(c, n, "%s.traffic_class: expected 0-255 (the GRH traffic class / ToS)",
			     where);
		else
			json_object_set_new(o, "traffic_class", json_integer(tc));
	}
	if (strcmp(kind->text, "lat") == 0 &&
	    json_integer_value(json_object_get(o, "iters")) == 0 &&
	    json_integer_value(json_object_get(o, "duration_s")) == 0)
		json_object_set_new(o, "iters", json_integer(1000));
	return o;
}

static const char *const rule_ops[] = {">=", "<=", ">", "<", "==", "!=", NULL};

/* One rule: {metric: TEST.FIELD, op, value, relative: median|min|max}. */
static json_t *parse_rule(struct vctx *c, const struct pb_node *r, size_t i, const json_t *tests)
{
	static const char *const keys[] = {"metric", "op", "value", "relative", "message", NULL};
	static const char *const relatives[] = {"median", "mad", "min", "max", NULL};
	const struct pb_node *metric, *op, *value, *rel, *msg;
	const json_t *test = NULL, *t;
	char where[64], test_name[64];
	const char *dot;
	double v = 0;
	size_t k;
	int errors = c->errors;

	snprintf(where, sizeof(where), "acceptance[%zu]", i);
	for (k = 0; k < r->n; k++)
		if (!in(r->keys[k]->text, keys))
			verr(c, r->keys[k], "%s: unknown key \"%s\"", where, r->keys[k]->text);
	metric = scalar(c, r, "metric", where);
	op = scalar(c, r, "op", where);
	value = scalar(c, r, "value", where);
	rel = scalar(c, r, "relative", where);
	msg = scalar(c, r, "message", where);
	if (!metric)
		verr(c, r, "%s: missing required key \"metric\"", where);
	if (!op)
		verr(c, r, "%s: missing required key \"op\"", where);
	if (!value)
		verr(c, r, "%s: missing required key \"value\"", where);
	if (c->errors > errors)
		return NULL;
	dot = strchr(metric->text, '.');
	if (!dot || (size_t)(dot - metric->text) >= sizeof(test_name)) {
		verr(c, metric, "%s.metric: expected TEST.FIELD (e.g. pair-bw.gbps), got \"%s\"",
		     where, metric->text);
		return NULL;
	}
	snprintf(test_name, sizeof(test_name), "%.*s", (int)(dot - metric->text), metric->text);
	json_array_foreach(tests, k, t) if (strcmp(json_string_value(json_object_get(t, "name")),
						   test_name) == 0) test = t;
	if (!test) {
		verr(c, metric, "%s.metric: no test named \"%s\" in tests", where, test_name);
		return NULL;
	}
	if (!pb_metric_ok(json_string_value(json_object_get(test, "kind")), dot + 1))
		verr(c, metric, "%s.metric: \"%s\" is not a metric of a %s test", where, dot + 1,
		     json_string_value(json_object_get(test, "kind")));
	if (!in(op->text, rule_ops))
		verr(c, op, "%s.op: expected >=, <=, >, <, == or !=, got \"%s\"", where, op->text);
	{
		char *end;

		v = strtod(value->text, &end);
		if (*end || !isfinite(v))
			verr(c, value, "%s.value: expected a number, got \"%s\"", where,
			     value->text);
	}
	if (rel && !in(rel->text, relatives))
		verr(c, rel, "%s.relative: expected median, mad, min or max, got \"%s\"", where,
		     rel->text);
	if (rel && strcmp(json_string_value(json_object_get(test, "kind")), "gpu") == 0 &&
	    strcmp(dot + 1, "checks_failed") == 0)
		verr(c, rel,
		     "%s.relative: checks_failed is a count of failed checks; compare it with "
		     "a number",
		     where);
	if (rel && strcmp(json_string_value(json_object_get(test, "kind")), "collective") == 0)
		verr(c, rel,
		     "%s.relative: a collective is one measurement of the whole cluster; use an "
		     "absolute value",
		     where);
	if (rel && strcmp(json_string_value(json_object_get(test, "kind")), "congestion") == 0)
		verr(c, rel,
		     "%s.relative: a congestion impact is already a ratio (congested over "
		     "isolated); use an absolute value",
		     where);
	if (c->errors > errors)
		return NULL;
	return json_pack("{s:s, s:s, s:s, s:s, s:f, s:s?, s:s?, s:i}", "metric", metric->text,
			 "test", test_name, "field", dot + 1, "op", op->text, "value", v,
			 "relative", rel ? rel->text : NULL, "message", msg ? msg->text : NULL,
			 "line", r->line);
}

/* A percentage: "5%" or 5, above 0 and at most 1000. */
static int parse_pct(const char *s, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || (*end && strcmp(end, "%") != 0) || !(v > 0) || v > 1000)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* tolerance: {bandwidth: 5%, latency: 10%, regressions: fail}: how far a revalidation may drift
 * from its baseline before a metric counts as a regression, and whether regressions fail the
 * revalidation (its verdict "regressed") or only inform (docs/signoff.md). */
static void parse_tolerance(struct vctx *c, const struct pb_node *t, json_t *o)
{
	static const char *const keys[] = {"bandwidth", "latency", "regressions", NULL};
	static const char *const modes[] = {"fail", "inform", NULL};
	static const char *const out[] = {"bw_pct", "lat_pct"};
	const struct pb_node *mode;
	json_t *tol;

	if (!t)
		return;
	if (t->kind != PBN_MAP) {
		verr(c, t,
		     "validation.tolerance: expected a mapping (bandwidth, latency, regressions)");
		return;
	}
	for (size_t k = 0; k < t->n; k++)
		if (!in(t->keys[k]->text, keys))
			verr(c, t->keys[k],
			     "validation.tolerance: unknown key \"%s\" (expected bandwidth, "
			     "latency or regressions)",
			     t->keys[k]->text);
	tol = json_object();
	mode = scalar(c, t, "regressions", "validation.tolerance");
	if (mode && !in(mode->text, modes))
		verr(c, mode,
		     "validation.tolerance.regressions: expected fail or inform, got \"%s\"",
		     mode->text);
	json_object_set_new(
		tol, "regressions",
		json_string(mode && strcmp(mode->text, "inform") == 0 ? "inform" : "fail"));
	for (size_t i = 0; i < RY_ARRAY_SIZE(out); i++) {
		const struct pb_node *n = scalar(c, t, keys[i], "validation.tolerance");
		double v;

		if (!n)
			continue;
		if (parse_pct(n->text, &v) < 0)
			verr(c, n,
			     "validation.tolerance.%s: expected a percentage above 0, e.g. 5%%, "
			     "got \"%s\"",
			     keys[i], n->text);
		else
			json_object_set_new(tol, out[i], json_real(v));
	}
	json_object_set_new(o, "tolerance", tol);
}

/* requires: [h200-ndr-ib, h200-roce]: the configuration playbooks this validation certifies
 * (docs/campaigns.md, "Configuration"); [] certifies none. */
static void parse_requires(struct vctx *c, const struct pb_node *t, json_t *o)
{
	json_t *arr;

	if (!t)
		return;
	if (t->kind != PBN_SEQ) {
		verr(c, t, "validation.requires: expected a list of playbook names");
		return;
	}
	arr = json_array();
	for (size_t i = 0; i < t->n; i++) {
		const struct pb_node *x = t->items[i];

		if (x->kind != PBN_SCALAR || pb_scalar_is_null(x) || !x->text[0] ||
		    strlen(x->text) > 128 ||
		    strspn(x->text, "abcdefghijklmnopqrstuvwxyz"
				    "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "0123456789._-") != strlen(x->text)) {
			verr(c, x, "validation.requires[%zu]: expected a playbook name", i);
			continue;
		}
		json_array_append_new(arr, json_string(x->text));
	}
	json_object_set_new(o, "requires", arr);
}

/* preflight: {ports_active: true, port_rate_gbps: 400, pcie_max: true, hcas: 8, gpus: 8}: what
 * a node's facts must show for its measurements to certify it (controller/campaign/preflight.h). */
static void parse_preflight(struct vctx *c, const struct pb_node *t, json_t *o)
{
	static const char *const bools[] = {"ports_active", "pcie_max", NULL};
	static const char *const ints[] = {"port_rate_gbps", "hcas", "gpus", NULL};
	json_t *pf;

	if (!t)
		return;
	if (t->kind != PBN_MAP) {
		verr(c, t,
		     "validation.preflight: expected a mapping (ports_active, port_rate_gbps, "
		     "pcie_max, hcas, gpus)");
		return;
	}
	for (size_t k = 0; k < t->n; k++)
		if (!in(t->keys[k]->text, bools) && !in(t->keys[k]->text, ints))
			verr(c, t->keys[k],
			     "validation.preflight: unknown key \"%s\" (expected ports_active, "
			     "port_rate_gbps, pcie_max, hcas or gpus)",
			     t->keys[k]->text);
	pf = json_object();
	for (size_t i = 0; bools[i]; i++) {
		const struct pb_node *n = scalar(c, t, bools[i], "validation.preflight");
		bool b;

		if (!n)
			continue;
		if (pb_scalar_bool(n, &b) < 0)
			verr(c, n, "validation.preflight.%s: expected true or false, got \"%s\"",
			     bools[i], n->text);
		else
			json_object_set_new(pf, bools[i], json_boolean(b));
	}
	for (size_t i = 0; ints[i]; i++) {
		const struct pb_node *n = scalar(c, t, ints[i], "validation.preflight");
		long long v;

		if (!n)
			continue;
		if (pb_scalar_int(n, &v) < 0 || v < 0 || v > 100000)
			verr(c, n,
			     "validation.preflight.%s: expected a whole number from 0 to 100000, "
			     "got \"%s\"",
			     ints[i], n->text);
		else
			json_object_set_new(pf, ints[i], json_integer(v));
	}
	json_object_set_new(o, "preflight", pf);
}

int pb_validation_parse(const char *file, const struct pb_node *n, json_t **ret, struct pb_diags *d)
{
	static const char *const keys[] = {"transport", "tests",	"acceptance",
					   "signoff",	"tolerance",	"requires",
					   "preflight", "max_excluded", NULL};
	struct vctx c = {file, d, 0};
	const struct pb_node *tests, *rules, *tr;
	json_t *o = json_object(), *tarr = json_array(), *rarr = json_array();

	if (n->kind != PBN_MAP) {
		verr(&c, n, "validation: expected a mapping, got %s",
		     n->kind == PBN_SEQ ? "a list" : "a scalar");
		goto out;
	}
	for (size_t k = 0; k < n->n; k++)
		if (!in(n->keys[k]->text, keys))
			verr(&c, n->keys[k], "validation: unknown key \"%s\"%s", n->keys[k]->text,
			     strcmp(n->keys[k]->text, "benchmarks") == 0 ? " (the tests are under "
									   "\"tests\")"
									 : "");
	tr = scalar(&c, n, "transport", "validation");
	if (tr && strcmp(tr->text, "verbs") != 0 && strcmp(tr->text, "tcp") != 0)
		verr(&c, tr, "validation.transport: expected verbs or tcp, got \"%s\"", tr->text);
	json_object_set_new(o, "transport", json_string(tr ? tr->text : "verbs"));
	tr = scalar(&c, n, "signoff", "validation");
	{
		bool b = false;

		if (tr && pb_scalar_bool(tr, &b) < 0)
			verr(&c, tr, "validation.signoff: expected true or false");
		json_object_set_new(o, "signoff", json_boolean(b));
	}
	parse_tolerance(&c, pb_node_get(n, "tolerance"), o);
	parse_requires(&c, pb_node_get(n, "requires"), o);
	parse_preflight(&c, pb_node_get(n, "preflight"), o);
	tr = scalar(&c, n, "max_excluded", "validation");
	if (tr) {
		long long v;

		if (pb_scalar_int(tr, &v) < 0 || v < 0 || v > 100000)
			verr(&c, tr,
			     "validation.max_excluded: expected a whole number from 0 to 100000, "
			     "got \"%s\"",
			     tr->text);
		else
			json_object_set_new(o, "max_excluded", json_integer(v));
	}
	tests = pb_node_get(n, "tests");
	if (!tests || tests->kind != PBN_SEQ || tests->n == 0)
		verr(&c, tests ? tests : n,
		     "validation.tests: expected a list of at least one test");
	for (size_t i = 0; tests && tests->kind == PBN_SEQ && i < tests->n; i++) {
		json_t *t;

		if (tests->items[i]->kind != PBN_MAP) {
			verr(&c, tests->items[i], "tests[%zu]: expected a mapping", i);
			continue;
		}
		t = parse_test(&c, tests->items[i], i);
		if (!t)
			continue;
		for (size_t k = 0; k < json_array_size(tarr); k++)
			if (strcmp(json_string_value(
					   json_object_get(json_array_get(tarr, k), "name")),
				   json_string_value(json_object_get(t, "name"))) == 0)
				verr(&c, tests->items[i], "tests[%zu]: duplicate test name \"%s\"",
				     i, json_string_value(json_object_get(t, "name")));
		json_array_append_new(tarr, t);
	}
	rules = pb_node_get(n, "acceptance");
	if (rules && rules->kind != PBN_SEQ)
		verr(&c, rules, "validation.acceptance: expected a list of rules");
	for (size_t i = 0; rules && rules->kind == PBN_SEQ && i < rules->n; i++) {
		json_t *r;

		if (rules->items[i]->kind != PBN_MAP) {
			verr(&c, rules->items[i], "acceptance[%zu]: expected a mapping", i);
			continue;
		}
		r = parse_rule(&c, rules->items[i], i, tarr);
		if (r)
			json_array_append_new(rarr, r);
	}
out:
	json_object_set_new(o, "tests", tarr);
	json_object_set_new(o, "acceptance", rarr);
	if (c.errors) {
		json_decref(o);
		return c.errors;
	}
	*ret = o;
	return 0;
}
