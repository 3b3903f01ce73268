/* Collective tests of a campaign (docs/campaigns.md, "Collectives"): the job a slot orders
 * (every selected node, the first one launching it), the plausibility checks of its one report,
 * its summary (the figures the rules name), and the node it is attributed to when it is slow.
 * Pure: no store, no clock. */
#include "controller/campaign/coll.h"
#include "controller/campaign/evidence.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

double cp_coll_busbw_factor(const char *op, size_t n)
{
	double f = n ? (double)(n - 1) / (double)n : 0;

	if (!op)
		return NAN;
	if (strcmp(op, "allreduce") == 0)
		return 2 * f;
	if (strcmp(op, "allgather") == 0 || strcmp(op, "reducescatter") == 0 ||
	    strcmp(op, "alltoall") == 0)
		return f;
	if (strcmp(op, "sendrecv") == 0)
		return 1;
	return NAN;
}

json_t *cp_coll_params(const json_t *test, const char *transport, const struct cp_coll_host *hosts,
		       size_t n)
{
	json_t *p, *h = json_array();

	for (size_t i = 0; h && i < n; i++)
		json_array_append_new(
			h, json_pack("{s:s, s:s}", "node", hosts[i].node, "host", hosts[i].host));
	if (!h)
		return NULL;
	p = cp_coll_params_hosts(test, transport, h);
	json_decref(h);
	return p;
}

json_t *cp_coll_params_hosts(const json_t *test, const char *transport, const json_t *hosts)
{
	int64_t pair_bytes = cp_ev_int(test, "pair_size"),
		pair_iters = cp_ev_int(test, "pair_iters");
	const json_t *nccl_tests = json_object_get(test, "nccl_tests");

	return json_pack(
		"{s:s, s:s, s:s, s:O, s:I, s:O, s:I, s:I, s:I, s:I, s:I, s:I, s:O, s:O}", "kind",
		"collective", "transport", transport, "backend", str(test, "backend"), "hosts",
		hosts, "ranks_per_node", (json_int_t)cp_ev_int(test, "ranks_per_node"), "ops",
		json_object_get(test, "ops"), "min_bytes", (json_int_t)cp_ev_int(test, "min_size"),
		"max_bytes", (json_int_t)cp_ev_int(test, "max_size"), "iters",
		(json_int_t)cp_ev_int(test, "iters"), "warmup",
		(json_int_t)cp_ev_int(test, "warmup"), "pair_bytes",
		(json_int_t)(pair_bytes ? pair_bytes : CP_COLL_PAIR_BYTES), "pair_iters",
		(json_int_t)(pair_iters ? pair_iters : CP_COLL_PAIR_ITERS), "settings",
		json_object_get(test, "settings"), "nccl_tests",
		nccl_tests ? nccl_tests : json_null());
}

/* ---- evidence -------------------------------------------------------------------------- */

struct ev {
	char *why;
	size_t len;
};

#define bad(v, ...) cp_ev_why((v)->why, (v)->len, __VA_ARGS__)

/* A figure: present, a finite number, at least lo. */
static int fig(struct ev *v, const json_t *o, const char *k, const char *where, double lo,
	       double *ret)
{
	const json_t *x = json_object_get(o, k);
	double d;

	if (!json_is_number(x))
		return bad(v, "%s%s is %s", where, k, x ? "not a number" : "missing");
	d = json_number_value(x);
	if (!isfinite(d) || d < lo)
		return bad(v, "%s%s %g is %s", where, k, d,
			   !isfinite(d) ? "not finite"
			   : lo > 0	? "not positive"
					: "negative");
	*ret = d;
	return 0;
}

static bool close_to(double x, double want)
{
	return fabs(x - want) <= CP_EV_CPU_REL_TOL * fabs(want) + 1e-9;
}

/* The fastest rail of a node in GB/s when its HCAs are hardware (a PCI function); 0: unknown
 * (tcp, soft RDMA), bounded by the transport's ceiling only. */
static double node_gbs(const json_t *node, bool sum)
{
	const json_t *x;
	double best = 0, total = 0;
	size_t i;

	json_array_foreach(json_object_get(node, "rails"), i, x)
	{
		double r = cp_ev_num(x, "rate_gbps");

		if (!json_string_value(json_object_get(x, "pci_address")) || !(r > 0))
			return 0;
		best = r > best ? r : best;
		total += r;
	}
	return (sum ? total : best) / 8;
}

static const json_t *node_entry(const json_t *nodes, const char *id)
{
	const json_t *x;
	size_t i;

	json_array_foreach(nodes, i, x) if (strcmp(str(x, "id"), id) == 0) return x;
	return NULL;
}

static int host_index(const json_t *hosts, const char *node)
{
	const json_t *x;
	size_t i;

	json_array_foreach(hosts, i, x) if (strcmp(str(x, "node"), node) == 0) return (int)i;
	return -1;
}

static int check_nodes(struct ev *v, const json_t *coll, const json_t *hosts, int64_t ppn)
{
	const json_t *nodes = json_object_get(coll, "nodes"), *x, *r;
	size_t n = json_array_size(hosts), ranks = n * (size_t)ppn, i, k;
	unsigned char *seen = calloc(ranks + n + 1, 1);
	int rc = 0;

	if (!seen)
		return bad(v, "out of memory");
	if (!json_is_integer(json_object_get(coll, "ranks")) ||
	    json_integer_value(json_object_get(coll, "ranks")) != (json_int_t)ranks) {
		rc = bad(v, "ranks %lld, but the job ordered %zu nodes x %lld",
			 (long long)cp_ev_int(coll, "ranks"), n, (long long)ppn);
		goto out;
	}
	if (json_array_size(nodes) != n) {
		rc = bad(v, "%zu nodes ran ranks, the job ordered %zu", json_array_size(nodes), n);
		goto out;
	}
	json_array_foreach(nodes, i, x)
	{
		int h = host_index(hosts, str(x, "node"));
		const json_t *rl = json_object_get(x, "ranks");

		if (h < 0 || seen[ranks + (size_t)h]) {
			rc = bad(v, "node \"%.64s\" is %s", str(x, "node"),
				 h < 0 ? "not one of the job's" : "listed twice");
			goto out;
		}
		seen[ranks + (size_t)h] = 1;
		if (json_array_size(rl) != (size_t)ppn) {
			rc = bad(v, "node %.64s ran %zu ranks, the job ordered %lld",
				 str(x, "node"), json_array_size(rl), (long long)ppn);
			goto out;
		}
		json_array_foreach(rl, k, r)
		{
			json_int_t q = json_integer_value(r);

			if (!json_is_integer(r) || q < 0 || (size_t)q >= ranks || seen[q]) {
				rc = bad(v, "node %.64s lists rank %s", str(x, "node"),
					 json_is_integer(r) && q >= 0 && (size_t)q < ranks
						 ? "twice"
						 : "out of range");
				goto out;
			}
			seen[q] = 1;
		}
	}
out:
	free(seen);
	return rc;
}

static bool in_ops(const json_t *ops, const char *op)
{
	const json_t *x;
	size_t i;

	json_array_foreach(ops, i, x) if (strcmp(json_string_value(x), op) == 0) return true;
	return false;
}

static int check_results(struct ev *v, const json_t *coll, const json_t *params, size_t n,
			 double ceil_gbs, double *bus_gb)
{
	const json_t *ops = json_object_get(params, "ops"), *x, *o;
	int64_t iters = cp_ev_int(coll, "iters");
	size_t i, k;

	*bus_gb = 0;
	if (!json_is_array(json_object_get(coll, "results")))
		return bad(v, "no results");
	if (iters != cp_ev_int(params, "iters"))
		return bad(v, "iters %lld, the job ordered %lld", (long long)iters,
			   (long long)cp_ev_int(params, "iters"));
	json_array_foreach(ops, k, o)
	{
		bool any = false;

		json_array_foreach(json_object_get(coll, "results"), i, x) any |=
			strcmp(str(x, "op"), json_string_value(o)) == 0;
		if (!any)
			return bad(v, "no result of %s, which the job ordered",
				   json_string_value(o));
	}
	json_array_foreach(json_object_get(coll, "results"), i, x)
	{
		const char *op = str(x, "op");
		double bytes, count, t, alg, bus, f = cp_coll_busbw_factor(op, n);
		char where[64];
		const json_t *w = json_object_get(x, "wrong");

		if (!in_ops(ops, op))
			return bad(v, "results[%zu]: op \"%.32s\" was not ordered", i, op);
		snprintf(where, sizeof(where), "%s results[%zu].", op, i);
		if (fig(v, x, "bytes", where, 1, &bytes) || fig(v, x, "count", where, 1, &count) ||
		    fig(v, x, "time_us", where, 1e-9, &t) ||
		    fig(v, x, "algbw_gbs", where, 0, &alg) ||
		    fig(v, x, "busbw_gbs", where, 0, &bus))
			return 1;
		if (bytes > (double)cp_ev_int(params, "max_bytes") * 2 + 64)
			return bad(v, "%sbytes %g is beyond the job's max_bytes %lld", where, bytes,
				   (long long)cp_ev_int(params, "max_bytes"));
		if (!close_to(alg, bytes / t / 1e3))
			return bad(v, "%salgbw_gbs %g is not bytes / time (%g B in %g us)", where,
				   alg, bytes, t);
		if (!close_to(bus, alg * f))
			return bad(v,
				   "%sbusbw_gbs %g is not algbw x %g (nccl-tests' factor for %zu "
				   "ranks)",
				   where, bus, f, n);
		if (ceil_gbs > 0 && bus > ceil_gbs)
			return bad(v,
				   "%sbusbw_gbs %g is above what the nodes' links carry (%g GB/s)",
				   where, bus, ceil_gbs);
		if (!json_is_integer(w) || json_integer_value(w) < 0 ||
		    (double)json_integer_value(w) > count * (double)n)
			return bad(v, "%swrong is not a count of checked elements", where);
		*bus_gb += bytes * f * (double)iters / 1e9;
	}
	return 0;
}

static int check_pairs(struct ev *v, const json_t *coll, const json_t *hosts, const json_t *nodes,
		       const char *transport)
{
	const json_t *pairs = json_object_get(coll, "pairs"), *x;
	size_t n = json_array_size(hosts), i;
	unsigned char *seen = calloc(n * n + 1, 1);
	int rc = 0;

	if (!seen)
		return bad(v, "out of memory");
	if (!json_is_array(pairs) || json_array_size(pairs) != n * (n - 1) / 2) {
		rc = bad(v, "%zu node pairs probed, %zu nodes have %zu", json_array_size(pairs), n,
			 n * (n - 1) / 2);
		goto out;
	}
	json_array_foreach(pairs, i, x)
	{
		int a = host_index(hosts, str(x, "a")), b = host_index(hosts, str(x, "b"));
		double g, lim, la, lb;
		char where[32];

		snprintf(where, sizeof(where), "pairs[%zu].", i);
		if (a < 0 || b < 0 || a == b || seen[(size_t)a * n + (size_t)b]) {
			rc = bad(v,
				 "pairs[%zu] (%.64s, %.64s) is not a new pair of the job's nodes",
				 i, str(x, "a"), str(x, "b"));
			goto out;
		}
		seen[(size_t)a * n + (size_t)b] = seen[(size_t)b * n + (size_t)a] = 1;
		if ((rc = fig(v, x, "gbps", where, 0, &g)))
			goto out;
		la = strcmp(transport, "verbs") == 0
			     ? node_gbs(node_entry(nodes, str(x, "a")), false)
			     : 0;
		lb = strcmp(transport, "verbs") == 0
			     ? node_gbs(node_entry(nodes, str(x, "b")), false)
			     : 0;
		lim = la > 0 && lb > 0 ? 8 * (la < lb ? la : lb) * CP_EV_LINE_MARGIN
				       : CP_EV_TCP_CEIL_GBPS;
		if (g > lim) {
			rc = bad(v, "pairs[%zu] %.64s-%.64s: %g Gb/s is above the link's %g", i,
				 str(x, "a"), str(x, "b"), g, lim);
			goto out;
		}
	}
out:
	free(seen);
	return rc;
}

static int check_cpu(struct ev *v, const json_t *cpu, double bus_gb, size_t n)
{
	double wall, rc, hc, x;

	if (!json_is_object(cpu))
		return bad(v, "no cpu figures");
	if (fig(v, cpu, "wall_s", "cpu.", 1e-9, &wall) ||
	    fig(v, cpu, "ranks_cpu_s", "cpu.", 0, &rc) ||
	    fig(v, cpu, "host_cpu_s", "cpu.", 0, &hc) || fig(v, cpu, "bus_gb", "cpu.", 0, &x))
		return 1;
	if (!close_to(x, bus_gb))
		return bad(v, "cpu.bus_gb %g is not what the results moved (%g)", x, bus_gb);
	if (rc > wall * CP_EV_CPU_NCPU_MAX * (double)n ||
	    hc > wall * CP_EV_CPU_NCPU_MAX * (double)n)
		return bad(v, "cpu: %g CPU-seconds in %g s is more than the nodes have",
			   rc > hc ? rc : hc, wall);
	if (json_is_number(json_object_get(cpu, "cores")) &&
	    !close_to(cp_ev_num(cpu, "cores"), rc / wall))
		return bad(v, "cpu.cores %g is not ranks_cpu_s / wall_s", cp_ev_num(cpu, "cores"));
	if (bus_gb > 0 && json_is_number(json_object_get(cpu, "cpu_s_per_gb")) &&
	    !close_to(cp_ev_num(cpu, "cpu_s_per_gb"), rc / x))
		return bad(v, "cpu.cpu_s_per_gb %g is not ranks_cpu_s / bus_gb",
			   cp_ev_num(cpu, "cpu_s_per_gb"));
	if (bus_gb > 0 && json_is_number(json_object_get(cpu, "host_cpu_s_per_gb")) &&
	    !close_to(cp_ev_num(cpu, "host_cpu_s_per_gb"), hc / x))
		return bad(v, "cpu.host_cpu_s_per_gb %g is not host_cpu_s / bus_gb",
			   cp_ev_num(cpu, "host_cpu_s_per_gb"));
	return 0;
}

int cp_coll_evidence(const json_t *doc, const json_t *params, const json_t *nodes, char *why,
		     size_t len)
{
	struct ev v = {why, len};
	const json_t *coll = json_object_get(doc, "coll"),
		     *hosts = json_object_get(params, "hosts");
	const char *transport = str(params, "transport");
	size_t n = json_array_size(hosts), i;
	double ceil = 0, bus_gb;
	const json_t *x;

	if (!why || !len)
		return -EINVAL;
	why[0] = '\0';
	if (!json_is_object(coll))
		return bad(&v, "the report has no collective results");
	if (strcmp(str(coll, "program"), "railyard-coll") != 0 ||
	    strcmp(str(coll, "backend"), str(params, "backend")) != 0)
		return bad(&v, "the report is not railyard-coll's %s run the job ordered",
			   str(params, "backend"));
	if (n < 2)
		return bad(&v, "the job has %zu nodes", n);
	if (check_nodes(&v, coll, hosts, cp_ev_int(params, "ranks_per_node")))
		return 1;
	/* Bus bandwidth is bounded by what a node's links carry together (NVLink SHARP and
	 * in-network reductions can lift it to twice that, no more); over tcp or soft RDMA, by
	 * the transport's ceiling. */
	json_array_foreach(hosts, i, x)
	{
		double g = strcmp(transport, "verbs") == 0
				   ? node_gbs(node_entry(nodes, str(x, "node")), true)
				   : 0;

		if (g <= 0) {
			ceil = CP_EV_TCP_CEIL_GBPS / 8.0 * 2;
			break;
		}
		ceil = ceil == 0 || 2 * g * CP_EV_LINE_MARGIN < ceil ? 2 * g * CP_EV_LINE_MARGIN
								     : ceil;
	}
	if (check_results(&v, coll, params, n * (size_t)cp_ev_int(params, "ranks_per_node"), ceil,
			  &bus_gb) ||
	    check_pairs(&v, coll, hosts, nodes, transport) ||
	    check_cpu(&v, json_object_get(coll, "cpu"), bus_gb, n))
		return 1;
	return 0;
}

/* ---- summary and attribution ---------------------------------------------------------- */

static int cmpd(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

static double median(double *v, size_t n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), cmpd);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int cp_coll_slowest(const json_t *coll, const json_t *hosts, int *ret, char *why, size_t len)
{
	const json_t *pairs = json_object_get(coll, "pairs"), *x;
	size_t n = json_array_size(hosts), np = json_array_size(pairs), i;
	double *own = malloc((np + 1) * sizeof(*own)), *rest = malloc((np + 1) * sizeof(*rest));
	double best = INFINITY, best_own = 0, best_rest = 0;
	int who = -1;

	*ret = -1;
	if (!own || !rest) {
		free(own);
		free(rest);
		return -ENOMEM;
	}
	for (size_t h = 0; n >= 3 && h < n; h++) {
		const char *id = str(json_array_get(hosts, h), "node");
		size_t no = 0, nr = 0;
		double mo, mr;

		json_array_foreach(pairs, i, x)
		{
			if (!json_is_number(json_object_get(x, "gbps")))
				continue;
			if (strcmp(str(x, "a"), id) == 0 || strcmp(str(x, "b"), id) == 0)
				own[no++] = cp_ev_num(x, "gbps");
			else
				rest[nr++] = cp_ev_num(x, "gbps");
		}
		mo = median(own, no);
		mr = median(rest, nr);
		if (!(mr > 0) || !isfinite(mo))
			continue;
		if (mo / mr < best) {
			best = mo / mr;
			best_own = mo;
			best_rest = mr;
			who = (int)h;
		}
	}
	free(own);
	free(rest);
	if (n < 3) {
		snprintf(why, len, "a collective of 2 nodes cannot tell which end is slow");
		return 0;
	}
	if (who < 0 || best >= CP_COLL_SLOW_RATIO) {
		snprintf(why, len, "the pairwise probe shows no node below %.0f%% of the others",
			 CP_COLL_SLOW_RATIO * 100);
		return 0;
	}
	*ret = who;
	snprintf(why, len,
		 "slowest in the job's pairwise probe: %.3g Gb/s (median to its peers) against "
		 "%.3g among the other nodes",
		 best_own, best_rest);
	return 0;
}

/* The results of op: its largest and smallest size, and the mean busbw over its sizes. */
static void op_figures(const json_t *coll, const char *op, json_t *m)
{
	const json_t *x, *big = NULL, *small = NULL;
	double sum = 0;
	size_t i, k = 0;
	char key[64];

	json_array_foreach(json_object_get(coll, "results"), i, x)
	{
		if (strcmp(str(x, "op"), op) != 0)
			continue;
		if (!big || cp_ev_num(x, "bytes") > cp_ev_num(big, "bytes"))
			big = x;
		if (!small || cp_ev_num(x, "bytes") < cp_ev_num(small, "bytes"))
			small = x;
		sum += cp_ev_num(x, "busbw_gbs");
		k++;
	}
	if (!big)
		return;
	snprintf(key, sizeof(key), "%s_busbw_gbs", op);
	json_object_set_new(m, key, json_real(cp_ev_num(big, "busbw_gbs")));
	snprintf(key, sizeof(key), "%s_lat_us", op);
	json_object_set_new(m, key, json_real(cp_ev_num(small, "time_us")));
	if (!json_object_get(m, "busbw_gbs")) { /* the test's first op */
		json_object_set_new(m, "busbw_gbs", json_real(cp_ev_num(big, "busbw_gbs")));
		json_object_set_new(m, "algbw_gbs", json_real(cp_ev_num(big, "algbw_gbs")));
		json_object_set_new(m, "avg_busbw_gbs", json_real(sum / (double)k));
		json_object_set_new(m, "lat_us", json_real(cp_ev_num(small, "time_us")));
	}
}

json_t *cp_coll_summary(const json_t *doc, const json_t *params)
{
	const json_t *coll = json_object_get(doc, "coll"), *x;
	const json_t *cpu = json_object_get(coll, "cpu");
	json_t *m = json_object(), *out;
	json_int_t wrong = 0;
	double pmin = INFINITY;
	char why[256];
	int who = -1;
	size_t i;

	if (!m)
		return NULL;
	json_array_foreach(json_object_get(params, "ops"), i, x)
		op_figures(coll, json_string_value(x), m);
	json_array_foreach(json_object_get(coll, "results"), i, x) wrong +=
		json_integer_value(json_object_get(x, "wrong"));
	json_object_set_new(m, "wrong", json_integer(wrong));
	json_array_foreach(json_object_get(coll, "pairs"), i, x) if (cp_ev_num(x, "gbps") < pmin)
		pmin = cp_ev_num(x, "gbps");
	if (isfinite(pmin))
		json_object_set_new(m, "pair_min_gbps", json_real(pmin));
	if (json_is_number(json_object_get(cpu, "cores")))
		json_object_set(m, "cpu_cores", json_object_get(cpu, "cores"));
	if (json_is_number(json_object_get(cpu, "cpu_s_per_gb")))
		json_object_set(m, "cpu_s_per_gb", json_object_get(cpu, "cpu_s_per_gb"));
	if (json_is_number(json_object_get(cpu, "host_cpu_s_per_gb")))
		json_object_set(m, "host_cpu_s_per_gb", json_object_get(cpu, "host_cpu_s_per_gb"));
	if (cp_coll_slowest(coll, json_object_get(params, "hosts"), &who, why, sizeof(why)) < 0) {
		json_decref(m);
		return NULL;
	}
	out = json_pack(
		"{s:o, s:{}, s:{}, s:{s:s?, s:s, s:s?, s:I}}", "metrics", m, "counters",
		"counters_unknown", "coll", "slowest",
		who >= 0
			? str(json_array_get(json_object_get(params, "hosts"), (size_t)who), "node")
			: NULL,
		"why", why, "library", json_string_value(json_object_get(coll, "library")), "ranks",
		(json_int_t)cp_ev_int(coll, "ranks"));
	return out;
}
