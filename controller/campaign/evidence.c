/* Plausibility checks of a benchmark run's reports (evidence.h; docs/campaigns.md, "Evidence").
 * Every check names the field, the value and the bound it broke, so the finding reads on its
 * own in a verdict: "p50_us 0.001 is below the tcp floor of 1 µs". */
#include "controller/campaign/evidence.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

struct ev {
	const struct cp_evidence *e;
	char *why;
	size_t len;
};

int cp_ev_why(char *why, size_t len, const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	vsnprintf(why, len, f, ap);
	va_end(ap);
	return 1;
}

double cp_ev_num(const json_t *o, const char *k)
{
	const json_t *x = json_object_get(o, k);

	return json_is_number(x) ? json_number_value(x) : NAN;
}

int64_t cp_ev_int(const json_t *o, const char *k)
{
	const json_t *x = json_object_get(o, k);

	return json_is_integer(x) ? (int64_t)json_integer_value(x) : 0;
}

#define bad(v, ...) cp_ev_why((v)->why, (v)->len, __VA_ARGS__)

/* A measured figure: present, finite, not negative. 1 with why otherwise. */
static int figure(struct ev *v, const json_t *o, const char *k, const char *name, double *ret)
{
	const json_t *x = json_object_get(o, k);
	double d;

	if (!x || json_is_null(x))
		return bad(v, "%s is missing", name);
	if (!json_is_number(x))
		return bad(v, "%s is not a number", name);
	d = json_number_value(x);
	if (!isfinite(d))
		return bad(v, "%s is not finite", name);
	if (d < 0)
		return bad(v, "%s %g is negative", name, d);
	*ret = d;
	return 0;
}

/* The rate (Gb/s) that bounds a side's bandwidth: its rail's port rate from the node's facts
 * when the device is a hardware HCA (it has a PCI function); 0 when nothing bounds it but the
 * transport's ceiling (tcp, soft RDMA devices whose rate is the netdev's nominal speed). */
static double side_rate(const json_t *node, int32_t rail, const char *device)
{
	const json_t *rails = json_object_get(node, "rails"), *r = NULL, *x;
	size_t i;

	if (rail >= 0) {
		r = json_array_get(rails, (size_t)rail);
	} else {
		json_array_foreach(rails, i, x)
		{
			const char *d = json_string_value(json_object_get(x, "device"));

			if (device && d && strcmp(d, device) == 0) {
				r = x;
				break;
			}
		}
		if (!r) { /* the node's fastest rail: a bound the run cannot beat either */
			double best = 0;

			json_array_foreach(rails, i, x)
			{
				if (!json_string_value(json_object_get(x, "pci_address")))
					return 0;
				if (cp_ev_num(x, "rate_gbps") > best)
					best = cp_ev_num(x, "rate_gbps");
			}
			return best;
		}
	}
	if (!r || !json_string_value(json_object_get(r, "pci_address")))
		return 0;
	return isfinite(cp_ev_num(r, "rate_gbps")) && cp_ev_num(r, "rate_gbps") > 0
		       ? cp_ev_num(r, "rate_gbps")
		       : 0;
}

static double ceiling_gbps(const struct cp_evidence *e, const json_t *env)
{
	double ra, rb, lim;
	const char *da, *db;

	if (strcmp(e->transport, "verbs") != 0)
		return CP_EV_TCP_CEIL_GBPS;
	da = json_string_value(json_object_get(json_object_get(env, "client"), "device"));
	db = json_string_value(json_object_get(json_object_get(env, "server"), "device"));
	ra = side_rate(e->a, e->rail, da);
	rb = side_rate(e->b, e->rail, db);
	lim = ra > 0 && rb > 0 ? (ra < rb ? ra : rb) : ra > 0 ? ra : rb;
	return lim > 0 ? lim * CP_EV_LINE_MARGIN : CP_EV_TCP_CEIL_GBPS;
}

/* Latency figures: present, finite, ordered, above the floor, as many samples as ordered. */
static int check_latency(struct ev *v, const json_t *lat)
{
	static const char *const keys[][2] = {
		{"min", "min_us"}, {"p50", "p50_us"},	 {"p90", "p90_us"},
		{"p99", "p99_us"}, {"p99_9", "p999_us"}, {"max", "max_us"},
	};
	const struct cp_evidence *e = v->e;
	double x[6], mean, sd, floor_us;
	int64_t iters = cp_ev_int(e->params, "iters"), dur = cp_ev_int(e->params, "duration_s");
	const json_t *cnt = json_object_get(lat, "count");
	/* HDR-style buckets above 4 Mi samples report a bucket's value: a percentile may sit a
	 * bucket above the maximum. */
	double slack = json_is_true(json_object_get(lat, "approximate")) ? 1.01 : 1.0 + 1e-9;
	json_int_t count;

	if (!json_is_object(lat))
		return bad(v, "no latency figures");
	for (size_t i = 0; i < 6; i++)
		if (figure(v, lat, keys[i][0], keys[i][1], &x[i]))
			return 1;
	if (figure(v, lat, "mean", "mean_us", &mean) || figure(v, lat, "stddev", "stddev_us", &sd))
		return 1;
	for (size_t i = 1; i < 6; i++)
		if (x[i - 1] > x[i] * slack)
			return bad(v, "%s %g is above %s %g", keys[i - 1][1], x[i - 1], keys[i][1],
				   x[i]);
	if (mean < x[0] / slack || mean > x[5] * slack)
		return bad(v, "mean_us %g is outside min_us %g .. max_us %g", mean, x[0], x[5]);
	floor_us = strcmp(e->transport, "verbs") == 0 ? CP_EV_VERBS_FLOOR_US : CP_EV_TCP_FLOOR_US;
	if (x[0] < floor_us)
		return bad(v, "min_us %g is below the %s floor of %g us", x[0], e->transport,
			   floor_us);
	if (!json_is_integer(cnt) || json_integer_value(cnt) < 1)
		return bad(v, "the latency sample count is missing or below 1");
	count = json_integer_value(cnt);
	if (iters > 0 && count > iters)
		return bad(v, "%lld latency samples from a run of %lld iterations",
			   (long long)count, (long long)iters);
	if (iters <= 0 && dur > 0 && (double)count * x[0] > (double)dur * 1e6 * CP_EV_LINE_MARGIN)
		return bad(v, "%lld samples of at least %g us do not fit in %lld s",
			   (long long)count, x[0], (long long)dur);
	return 0;
}

/* One direction's bandwidth figures: finite, within the ceiling, and consistent with the bytes,
 * messages and seconds they were computed from. */
static int check_bw(struct ev *v, const json_t *bw, const char *name, double ceil, uint64_t size)
{
	const struct cp_evidence *e = v->e;
	double gbps, bytes, msgs, secs, rate;
	int64_t iters = cp_ev_int(e->params, "iters"), dur = cp_ev_int(e->params, "duration_s");
	int64_t qps = cp_ev_int(e->params, "qps");
	char f[32];

	if (!json_is_object(bw))
		return bad(v, "no %s figures", name);
	snprintf(f, sizeof(f), "%s", name);
	if (figure(v, bw, "gbps", f, &gbps) || figure(v, bw, "bytes", "bytes", &bytes) ||
	    figure(v, bw, "msgs", "msgs", &msgs) || figure(v, bw, "seconds", "seconds", &secs))
		return 1;
	if (gbps > ceil)
		return bad(v, "%s %g is above %g Gb/s, the most the ports used can carry", name,
			   gbps, ceil);
	if (secs <= 0)
		return bad(v, "%s over %g seconds", name, secs);
	if (fabs(bytes * 8 / secs / 1e9 - gbps) > 0.01 * gbps + 1e-6)
		return bad(v, "%s %g does not match its %g bytes in %g s", name, gbps, bytes, secs);
	if (size > 0 && fabs(msgs * (double)size - bytes) > 0.001 * bytes + 1)
		return bad(v, "%g bytes are not %g messages of %llu bytes", bytes, msgs,
			   (unsigned long long)size);
	rate = cp_ev_num(bw, "msg_rate");
	if (isfinite(rate) && fabs(rate - msgs / secs) > 0.01 * rate + 1)
		return bad(v, "msg_rate %g does not match %g messages in %g s", rate, msgs, secs);
	if (iters > 0 && msgs > (double)iters * (double)(qps > 0 ? qps : 1))
		return bad(v, "%g messages from a run of %lld per QP on %lld QPs", msgs,
			   (long long)iters, (long long)(qps > 0 ? qps : 1));
	if (iters <= 0 && dur > 0 && secs > (double)dur * CP_EV_LINE_MARGIN + 1)
		return bad(v, "%g seconds measured in a run of %lld s", secs, (long long)dur);
	return 0;
}

/* An optional CPU figure: null (unknown) or finite and not negative; *ret NAN when null. */
static int cpu_figure(struct ev *v, const json_t *c, const char *side, const char *k, double *ret)
{
	const json_t *x = json_object_get(c, k);
	char name[64];

	*ret = NAN;
	if (!x || json_is_null(x))
		return 0;
	snprintf(name, sizeof(name), "cpu.%s.%s", side, k);
	return figure(v, c, k, name, ret);
}

/* b derived from a: |a - b| within the relative tolerance (and a floor for tiny values). */
static bool agrees(double a, double b)
{
	return fabs(a - b) <= CP_EV_CPU_REL_TOL * fabs(a) + 1e-6;
}

/* One side's CPU cost of a step (docs/bench.md, "CPU cost"): each figure null or finite and not
 * negative, the derived ones agreeing with what they derive from, cores within the host, the
 * span and bytes at least what the bandwidth figures measured inside it, and the host-wide
 * figure not below the benchmark thread's own beyond the tick accounting's slack. */
static int check_cpu_side(struct ev *v, const json_t *c, const char *side, double min_bytes,
			  double min_secs)
{
	double secs, bytes, ncpu, ts, tc, tg, hs, hc, hg, gb;

	if (!json_is_object(c))
		return bad(v, "cpu.%s is not an object", side);
	if (figure(v, c, "seconds", "cpu seconds", &secs) ||
	    figure(v, c, "bytes", "cpu bytes", &bytes) || figure(v, c, "ncpu", "cpu ncpu", &ncpu))
		return 1;
	if (ncpu > CP_EV_CPU_NCPU_MAX || ncpu != floor(ncpu))
		return bad(v, "cpu.%s.ncpu %g is not a CPU count (0..%d)", side, ncpu,
			   CP_EV_CPU_NCPU_MAX);
	if (cpu_figure(v, c, side, "thread_s", &ts) ||
	    cpu_figure(v, c, side, "thread_cores", &tc) ||
	    cpu_figure(v, c, side, "thread_s_per_gb", &tg) ||
	    cpu_figure(v, c, side, "host_s", &hs) || cpu_figure(v, c, side, "host_cores", &hc) ||
	    cpu_figure(v, c, side, "host_s_per_gb", &hg))
		return 1;
	if (bytes < min_bytes * (1 - 1e-9))
		return bad(v, "cpu.%s.bytes %g is below the %g bytes measured in its span", side,
			   bytes, min_bytes);
	/* Loose: a sender's span may end while its last bytes still drain to the receiver,
	 * whose clock measured the bandwidth. */
	if (secs + 0.1 + 0.1 * min_secs < min_secs)
		return bad(v, "cpu.%s.seconds %g is shorter than the %g s measured in its span",
			   side, secs, min_secs);
	gb = bytes / 1e9;
	if (isfinite(tc) && (secs <= 0 || !isfinite(ts) || !agrees(ts / secs, tc)))
		return bad(v, "cpu.%s.thread_cores %g is not thread_s %g over %g s", side, tc, ts,
			   secs);
	if (isfinite(hs) && (!isfinite(hc) || !agrees(hc * secs, hs)))
		return bad(v, "cpu.%s.host_s %g is not host_cores %g x %g s", side, hs, hc, secs);
	if ((isfinite(tg) && (gb <= 0 || !isfinite(ts) || !agrees(ts / gb, tg))) ||
	    (isfinite(hg) && (gb <= 0 || !isfinite(hs) || !agrees(hs / gb, hg))))
		return bad(v,
			   "cpu.%s: CPU-seconds per GB do not match the CPU-seconds over %g bytes",
			   side, bytes);
	if (isfinite(hc) && (ncpu < 1 || hc > ncpu * (1 + CP_EV_CPU_REL_TOL)))
		return bad(v, "cpu.%s.host_cores %g is more than the host's %g CPUs", side, hc,
			   ncpu);
	if (isfinite(tc) && ncpu >= 1 && tc > ncpu * (1 + CP_EV_CPU_REL_TOL))
		return bad(v, "cpu.%s.thread_cores %g is more than the host's %g CPUs", side, tc,
			   ncpu);
	/* The thread is part of the host: a host-wide figure below it is impossible, beyond the
	 * ticks /proc/stat may miss at either end of the span on every CPU. */
	if (isfinite(hs) && isfinite(ts) &&
	    hs + CP_EV_CPU_TICK_SLACK * ncpu + CP_EV_CPU_REL_TOL * ts < ts)
		return bad(v,
			   "cpu.%s: the host spent %g CPU-s, less than the %g its own benchmark "
			   "thread spent",
			   side, hs, ts);
	return 0;
}

/* A step's CPU cost, when reported (agents before it report none): both sides. */
static int check_cpu(struct ev *v, const json_t *r0)
{
	const json_t *cpu = json_object_get(r0, "cpu"), *bw = json_object_get(r0, "bw");
	const json_t *rev = json_object_get(r0, "bw_reverse");
	double bytes = cp_ev_num(bw, "bytes"), secs = cp_ev_num(bw, "seconds");

	if (!cpu)
		return 0;
	if (!json_is_object(cpu))
		return bad(v, "cpu is not an object");
	if (!isfinite(bytes))
		bytes = 0;
	if (!isfinite(secs))
		secs = 0;
	if (json_is_object(rev) && isfinite(cp_ev_num(rev, "bytes")))
		bytes += cp_ev_num(rev, "bytes");
	if (check_cpu_side(v, json_object_get(cpu, "client"), "client", bytes, secs) ||
	    check_cpu_side(v, json_object_get(cpu, "server"), "server", bytes, secs))
		return 1;
	return 0;
}

static int check_gpu(struct ev *v, const json_t *doc)
{
	static const char *const keys[] = {"h2d_gb_s", "d2h_gb_s", "d2d_gb_s"};
	const json_t *sum = json_object_get(doc, "summary");
	size_t have = json_array_size(json_object_get(v->e->a, "gpus"));
	bool any = false;
	double x;

	if (!json_is_object(sum))
		return bad(v, "no summary");
	for (size_t i = 0; i < 3; i++) {
		double ceil = i == 2 ? CP_EV_GPU_D2D_CEIL_GB_S : CP_EV_GPU_CEIL_GB_S;

		if (json_is_null(json_object_get(sum, keys[i])) || !json_object_get(sum, keys[i]))
			continue;
		if (figure(v, sum, keys[i], keys[i], &x))
			return 1;
		if (x > ceil)
			return bad(v, "%s %g is above %g GB/s", keys[i], x, ceil);
		any = true;
	}
	if (figure(v, sum, "gpus", "gpus", &x))
		return 1;
	if (have > 0 && x > (double)have)
		return bad(v, "%g GPUs measured on a node whose facts list %zu", x, have);
	if (!any && x > 0)
		return bad(v, "no copy bandwidth from %g GPUs", x);
	if (figure(v, sum, "checks_failed", "checks_failed", &x))
		return 1;
	return 0;
}

/* Counter deltas: integers, not negative (null: unknown, reset or wrapped). */
static int check_counters(struct ev *v, const json_t *doc)
{
	const json_t *ports = json_object_get(json_object_get(doc, "counters"), "ports"), *p, *d;
	const char *name;
	size_t i;

	json_array_foreach(ports, i, p)
	{
		json_object_foreach((json_t *)json_object_get(p, "delta"), name, d)
		{
			if (json_is_null(d))
				continue;
			if (!json_is_integer(d) || json_integer_value(d) < 0)
				return bad(v, "counter %s moved by an impossible amount", name);
		}
	}
	return 0;
}

/* The client's report: the run's results. */
static int check_report(struct ev *v, const json_t *doc)
{
	const struct cp_evidence *e = v->e;
	const json_t *results = json_object_get(doc, "results"), *r0;
	double ceil;
	size_t i;

	if (!json_is_object(doc) || !json_is_true(json_object_get(doc, "ok")))
		return bad(v, "the report is not a successful result");
	if (check_counters(v, doc))
		return 1;
	if (strcmp(e->kind, "gpu") == 0)
		return check_gpu(v, doc);
	if (!json_is_array(results) || json_array_size(results) == 0)
		return bad(v, "the report has no results");
	ceil = ceiling_gbps(e, json_object_get(doc, "environment"));
	json_array_foreach(results, i, r0)
	{
		const json_t *sz = json_object_get(r0, "size");
		uint64_t size = json_is_integer(sz) && json_integer_value(sz) > 0
					? (uint64_t)json_integer_value(sz)
					: 0;

		if (strcmp(e->kind, "lat") == 0) {
			if (check_latency(v, json_object_get(r0, "latency")))
				return 1;
			continue;
		}
		if (check_bw(v, json_object_get(r0, "bw"), "gbps", ceil, size))
			return 1;
		if (json_is_true(json_object_get(e->params, "bidir")) &&
		    check_bw(v, json_object_get(r0, "bw_reverse"), "gbps_reverse", ceil, size))
			return 1;
		if (check_cpu(v, r0))
			return 1;
	}
	return 0;
}

int cp_evidence_check(const struct cp_evidence *e, enum cp_blame *blame, char *why, size_t len)
{
	struct ev v = {e, why, len};

	if (!e || !blame || !why || !len || !e->kind || !e->transport)
		return -EINVAL;
	why[0] = '\0';
	*blame = CP_BLAME_CLIENT;
	if (check_report(&v, e->client))
		return 1;
	if (!e->server)
		return 0;
	*blame = CP_BLAME_SERVER;
	if (check_report(&v, e->server))
		return 1;
	/* The server reports the results the client's engine sent it over the run's own
	 * connection: a report that differs from the client's was rewritten by one of the two. */
	if (!json_equal(json_object_get(e->client, "results"),
			json_object_get(e->server, "results"))) {
		*blame = CP_BLAME_BOTH;
		return bad(&v, "the client's and the server's reports of the run differ");
	}
	return 0;
}
