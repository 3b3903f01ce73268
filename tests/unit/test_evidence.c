/* Unit tests of controller/campaign/evidence: a run's reports checked before they count. Each
 * case starts from an honest pair of reports (as the engine makes them: the server reports the
 * results the client sent it) and changes one thing, as a node rewriting its report would:
 * 1e308, negative, NaN-as-null and missing figures, latency below the transport's floor, more
 * samples than iterations, bandwidth above the line rate or inconsistent with its bytes, counters
 * that went backwards, CPU costs that lie or do not add up, and the two sides' reports
 * differing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "controller/campaign/evidence.h"

static json_t *node(double rate, bool hw)
{
	json_t *n = json_pack("{s:[{s:s, s:i, s:f}], s:[]}", "rails", "device", "mlx5_0", "port", 1,
			      "rate_gbps", rate, "gpus");

	assert_non_null(n);
	if (hw)
		json_object_set_new(json_array_get(json_object_get(n, "rails"), 0), "pci_address",
				    json_string("0000:16:00.0"));
	return n;
}

static json_t *lat_doc(double min, double p50, double max, long count)
{
	json_t *d =
		json_pack("{s:b, s:{s:{s:s}, s:{s:s}}, s:[{s:i, s:{s:I, s:f, s:f, s:f, s:f, "
			  "s:f, s:f, s:f, s:f, s:b}}], s:{s:[{s:s, s:i, s:{s:i}}]}}",
			  "ok", 1, "environment", "client", "device", "mlx5_0", "server", "device",
			  "mlx5_0", "results", "size", 8, "latency", "count", (json_int_t)count,
			  "min", min, "p50", p50, "p90", p50, "p99", p50, "p99_9", p50, "max", max,
			  "mean", p50, "stddev", 0.1, "approximate", 0, "counters", "ports",
			  "device", "mlx5_0", "port", 1, "delta", "symbol_error", 0);

	assert_non_null(d);
	return d;
}

static json_t *bw_doc(double gbps, double bytes, double msgs, double secs)
{
	json_t *d =
		json_pack("{s:b, s:{s:{s:s}, s:{s:s}}, s:[{s:i, s:{s:f, s:f, s:f, s:f, s:f}}]}",
			  "ok", 1, "environment", "client", "device", "mlx5_0", "server", "device",
			  "mlx5_0", "results", "size", 65536, "bw", "gbps", gbps, "bytes", bytes,
			  "msgs", msgs, "seconds", secs, "msg_rate", msgs / secs);

	assert_non_null(d);
	return d;
}

/* Check client (and a copy as the server's report) of kind over transport. */
static int check(const char *kind, const char *transport, const char *params, json_t *client,
		 json_t *server, double rate, bool hw, enum cp_blame *blame, char *why)
{
	json_t *p = json_loads(params, 0, NULL), *a = node(rate, hw), *b = node(rate, hw);
	int r;

	assert_non_null(p);
	r = cp_evidence_check(&(struct cp_evidence){kind, transport, p, client, server, a, b, 0},
			      blame, why, 256);
	json_decref(p);
	json_decref(a);
	json_decref(b);
	return r;
}

static void assert_invalid(int r, const char *why, const char *needle)
{
	if (r != 1 || !strstr(why, needle))
		fail_msg("expected invalid with \"%s\", got %d \"%s\"", needle, r, why);
}

static void test_latency(void **state)
{
	const char *params = "{\"iters\": 1000}";
	enum cp_blame blame;
	char why[256];
	json_t *c, *s;

	(void)state;
	c = lat_doc(1.1, 1.3, 9.0, 1000);
	s = json_deep_copy(c);
	assert_int_equal(check("lat", "verbs", params, c, s, 400, true, &blame, why), 0);
	json_decref(s);
	json_decref(c);

	/* Over tcp, 0.5 us is below the floor; over verbs it is not. */
	c = lat_doc(0.5, 0.6, 2.0, 1000);
	assert_int_equal(check("lat", "verbs", params, c, NULL, 400, true, &blame, why), 0);
	assert_invalid(check("lat", "tcp", params, c, NULL, 0, false, &blame, why), why,
		       "min_us 0.5 is below the tcp floor of 1 us");
	assert_int_equal(blame, CP_BLAME_CLIENT);
	json_decref(c);

	c = lat_doc(0.001, 0.001, 0.001, 1000);
	assert_invalid(check("lat", "tcp", params, c, NULL, 0, false, &blame, why), why,
		       "below the tcp floor");
	json_decref(c);

	c = lat_doc(1.1, -5, 9.0, 1000);
	assert_invalid(check("lat", "verbs", params, c, NULL, 400, true, &blame, why), why,
		       "p50_us -5 is negative");
	json_decref(c);

	c = lat_doc(1.1, 1e308, 1e308, 1000);
	json_object_set_new(
		json_object_get(json_array_get(json_object_get(c, "results"), 0), "latency"), "p50",
		json_null());
	assert_invalid(check("lat", "verbs", params, c, NULL, 400, true, &blame, why), why,
		       "p50_us is missing");
	json_decref(c);

	/* More samples than iterations. */
	c = lat_doc(1.1, 1.3, 9.0, 5000);
	assert_invalid(check("lat", "verbs", params, c, NULL, 400, true, &blame, why), why,
		       "5000 latency samples from a run of 1000 iterations");
	json_decref(c);

	/* Percentiles out of order. */
	c = lat_doc(1.1, 9.5, 9.0, 1000);
	assert_invalid(check("lat", "verbs", params, c, NULL, 400, true, &blame, why), why,
		       "is above");
	json_decref(c);

	/* A duration run cannot hold more samples than its time allows. */
	c = lat_doc(10, 11, 20, 10000000);
	assert_invalid(check("lat", "tcp", "{\"duration_s\": 2}", c, NULL, 0, false, &blame, why),
		       why, "do not fit in 2 s");
	json_decref(c);
}

static void test_bandwidth(void **state)
{
	const char *params = "{\"duration_s\": 2}";
	enum cp_blame blame;
	char why[256];
	json_t *c;

	(void)state;
	/* 380 Gb/s over a 400 Gb/s HCA: fine. 1e308 is not. */
	c = bw_doc(380, 95e9, 95e9 / 65536, 2.0);
	assert_int_equal(check("bw", "verbs", params, c, NULL, 400, true, &blame, why), 0);
	json_decref(c);
	c = bw_doc(1e308, 95e9, 95e9 / 65536, 2.0);
	assert_invalid(check("bw", "verbs", params, c, NULL, 400, true, &blame, why), why,
		       "is above 420 Gb/s");
	json_decref(c);
	/* 500 Gb/s (consistent with its bytes) over a 400 Gb/s port. */
	c = bw_doc(500, 125e9, 125e9 / 65536, 2.0);
	assert_invalid(check("bw", "verbs", params, c, NULL, 400, true, &blame, why), why,
		       "the most the ports used can carry");
	/* A software device (no PCI function): its nominal rate is no bound. */
	assert_int_equal(check("bw", "verbs", params, c, NULL, 2.5, false, &blame, why), 0);
	json_decref(c);
	/* The figure does not follow from its bytes and seconds. */
	c = bw_doc(300, 95e9, 95e9 / 65536, 2.0);
	assert_invalid(check("bw", "verbs", params, c, NULL, 400, true, &blame, why), why,
		       "does not match its");
	json_decref(c);
	/* Measured for longer than the run lasted. */
	c = bw_doc(38, 95e9, 95e9 / 65536, 20.0);
	assert_invalid(check("bw", "tcp", params, c, NULL, 0, false, &blame, why), why,
		       "20 seconds measured in a run of 2 s");
	json_decref(c);
	/* More messages than ordered. */
	c = bw_doc(38, 9.5e9, 9.5e9 / 65536, 2.0);
	assert_invalid(
		check("bw", "tcp", "{\"iters\": 1000, \"qps\": 2}", c, NULL, 0, false, &blame, why),
		why, "from a run of 1000 per QP on 2 QPs");
	json_decref(c);
}

/* One side's CPU cost as the engine reports it: figures derived from each other. */
static json_t *cpu_side(double secs, double bytes, int ncpu, double ts, double hc)
{
	json_t *c = json_pack("{s:f, s:f, s:i, s:f, s:f, s:f, s:f, s:f, s:f}", "seconds", secs,
			      "bytes", bytes, "ncpu", ncpu, "thread_s", ts, "thread_cores",
			      ts / secs, "thread_s_per_gb", ts / (bytes / 1e9), "host_s", hc * secs,
			      "host_cores", hc, "host_s_per_gb", hc * secs / (bytes / 1e9));

	assert_non_null(c);
	return c;
}

/* A tcp bandwidth report with both sides' CPU cost. */
static json_t *cpu_doc(json_t *client_cpu, json_t *server_cpu)
{
	json_t *d = bw_doc(14, 3.5e9, 3.5e9 / 65536, 2.0);

	json_object_set_new(json_array_get(json_object_get(d, "results"), 0), "cpu",
			    json_pack("{s:o, s:o}", "client", client_cpu, "server", server_cpu));
	return d;
}

static json_t *cpu_of(json_t *doc, const char *side)
{
	return json_object_get(
		json_object_get(json_array_get(json_object_get(doc, "results"), 0), "cpu"), side);
}

static void expect_cpu(json_t *d, const char *needle)
{
	enum cp_blame blame;
	char why[256];
	int r = check("bw", "tcp", "{\"duration_s\": 2}", d, NULL, 0, false, &blame, why);

	if (needle)
		assert_invalid(r, why, needle);
	else if (r != 0)
		fail_msg("expected valid, got %d \"%s\"", r, why);
	json_decref(d);
}

/* CPU figures: honest ones pass, unknown (null) ones too; a node that lies with negative,
 * non-numeric, absurd or inconsistent figures, or a host that spent less than its own thread,
 * is refused with the figure named. */
static void test_cpu_cost(void **state)
{
	json_t *d;

	(void)state;
	/* 2.2 s span, 3.8 GB moved (warm-up included), 8 CPUs: 0.8 s thread, 1.9 cores host. */
	expect_cpu(cpu_doc(cpu_side(2.2, 3.8e9, 8, 0.8, 1.9), cpu_side(2.2, 3.8e9, 8, 1.0, 1.7)),
		   NULL);
	/* A host whose /proc/stat was unreadable: host figures unknown. */
	d = cpu_doc(cpu_side(2.2, 3.8e9, 8, 0.8, 1.9), cpu_side(2.2, 3.8e9, 0, 1.0, 1.7));
	json_object_set_new(cpu_of(d, "server"), "host_s", json_null());
	json_object_set_new(cpu_of(d, "server"), "host_cores", json_null());
	json_object_set_new(cpu_of(d, "server"), "host_s_per_gb", json_null());
	expect_cpu(d, NULL);
	/* A run that moved no byte: no per-GB figure, and one claiming one is refused. */
	d = cpu_doc(cpu_side(2.2, 3.8e9, 8, 0.8, 1.9), cpu_side(2.2, 3.8e9, 8, 1.0, 1.7));
	json_object_set_new(cpu_of(d, "client"), "bytes", json_integer(0));
	expect_cpu(d, "cpu.client.bytes 0 is below the 3.5e+09 bytes measured");
	/* Negative. */
	d = cpu_doc(cpu_side(2.2, 3.8e9, 8, 0.8, 1.9), cpu_side(2.2, 3.8e9, 8, 1.0, 1.7));
	json_object_set_new(cpu_of(d, "server"), "host_cores", json_real(-1.9));
	expect_cpu(d, "cpu.server.host_cores -1.9 is negative");
	/* Not a number (JSON has no NaN: a string, as a node would have to send it). */
	d = cpu_doc(cpu_side(2.2, 3.8e9, 8, 0.8, 1.9), cpu_side(2.2, 3.8e9, 8, 1.0, 1.7));
	json_object_set_new(cpu_of(d, "client"), "thread_s", json_string("NaN"));
	expect_cpu(d, "cpu.client.thread_s is not a number");
	/* Absurd: more cores than the host has, and a host of a billion CPUs. */
	expect_cpu(cpu_doc(cpu_side(2.2, 3.8e9, 8, 0.8, 1e6), cpu_side(2.2, 3.8e9, 8, 1.0, 1.7)),
		   "cpu.client.host_cores 1e+06 is more than the host's 8 CPUs");
	expect_cpu(cpu_doc(cpu_side(2.2, 3.8e9, 1000000000, 0.8, 1.9),
			   cpu_side(2.2, 3.8e9, 8, 1.0, 1.7)),
		   "cpu.client.ncpu 1e+09 is not a CPU count");
	d = cpu_doc(cpu_side(2.2, 3.8e9, 8, 0.8, 1.9), cpu_side(2.2, 3.8e9, 8, 1.0, 1.7));
	json_object_set_new(cpu_of(d, "client"), "seconds", json_real(1e308));
	expect_cpu(d, "cpu.client.thread_cores");
	/* Inconsistent: cores not the CPU-seconds over the span, per GB not over the bytes. */
	d = cpu_doc(cpu_side(2.2, 3.8e9, 8, 0.8, 1.9), cpu_side(2.2, 3.8e9, 8, 1.0, 1.7));
	json_object_set_new(cpu_of(d, "server"), "thread_cores", json_real(0.01));
	expect_cpu(d, "cpu.server.thread_cores 0.01 is not thread_s 1 over 2.2 s");
	d = cpu_doc(cpu_side(2.2, 3.8e9, 8, 0.8, 1.9), cpu_side(2.2, 3.8e9, 8, 1.0, 1.7));
	json_object_set_new(cpu_of(d, "server"), "host_s_per_gb", json_real(0.001));
	expect_cpu(d, "cpu.server: CPU-seconds per GB do not match");
	/* The host spent less than its own benchmark thread: 4 s of thread in 2.2 s on a host
	 * busy 0.5 cores (1.1 CPU-s). */
	expect_cpu(cpu_doc(cpu_side(2.2, 3.8e9, 8, 4.0, 0.5), cpu_side(2.2, 3.8e9, 8, 1.0, 1.7)),
		   "cpu.client: the host spent 1.1 CPU-s, less than the 4 its own benchmark");
	/* ... but within the ticks /proc/stat may miss (2 per CPU), it is not refused. */
	expect_cpu(cpu_doc(cpu_side(2.2, 3.8e9, 8, 1.2, 0.5), cpu_side(2.2, 3.8e9, 8, 1.0, 1.7)),
		   NULL);
	/* Not an object. */
	d = cpu_doc(cpu_side(2.2, 3.8e9, 8, 0.8, 1.9), cpu_side(2.2, 3.8e9, 8, 1.0, 1.7));
	json_object_set_new(
		json_object_get(json_array_get(json_object_get(d, "results"), 0), "cpu"), "server",
		json_integer(3));
	expect_cpu(d, "cpu.server is not an object");
}

static void test_reports_differ(void **state)
{
	enum cp_blame blame;
	char why[256];
	json_t *c = lat_doc(1.1, 1.3, 9.0, 1000), *s = json_deep_copy(c);

	(void)state;
	/* The client rewrote its p50 after the run (still plausible): the server's copy of the
	 * results says otherwise. */
	json_object_set_new(
		json_object_get(json_array_get(json_object_get(c, "results"), 0), "latency"), "p50",
		json_real(1.2));
	assert_invalid(check("lat", "verbs", "{\"iters\": 1000}", c, s, 400, true, &blame, why),
		       why, "reports of the run differ");
	assert_int_equal(blame, CP_BLAME_BOTH);
	json_decref(c);
	json_decref(s);

	/* A server that rewrote its copy into something impossible: its report is the finding. */
	c = lat_doc(1.1, 1.3, 9.0, 1000);
	s = json_deep_copy(c);
	json_object_set_new(
		json_object_get(json_array_get(json_object_get(s, "results"), 0), "latency"), "p50",
		json_real(-5));
	assert_invalid(check("lat", "verbs", "{\"iters\": 1000}", c, s, 400, true, &blame, why),
		       why, "p50_us -5 is negative");
	assert_int_equal(blame, CP_BLAME_SERVER);
	json_decref(c);
	json_decref(s);

	/* A server whose counters went backwards. */
	c = lat_doc(1.1, 1.3, 9.0, 1000);
	s = json_deep_copy(c);
	json_object_set_new(
		json_object_get(
			json_array_get(json_object_get(json_object_get(s, "counters"), "ports"), 0),
			"delta"),
		"symbol_error", json_integer(-3));
	assert_invalid(check("lat", "verbs", "{\"iters\": 1000}", c, s, 400, true, &blame, why),
		       why, "counter symbol_error");
	assert_int_equal(blame, CP_BLAME_SERVER);
	json_decref(c);
	json_decref(s);
}

static void test_not_a_result(void **state)
{
	enum cp_blame blame;
	char why[256];
	json_t *c = json_pack("{s:b, s:[]}", "ok", 1, "results");

	(void)state;
	assert_invalid(check("lat", "tcp", "{}", c, NULL, 0, false, &blame, why), why,
		       "no results");
	json_decref(c);
	c = json_pack("{s:b}", "ok", 0);
	assert_invalid(check("lat", "tcp", "{}", c, NULL, 0, false, &blame, why), why,
		       "not a successful result");
	json_decref(c);
	assert_int_equal(check("lat", "tcp", "{}", NULL, NULL, 0, false, &blame, why), 1);
	assert_int_equal(cp_evidence_check(NULL, &blame, why, sizeof(why)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_latency),	     cmocka_unit_test(test_bandwidth),
		cmocka_unit_test(test_cpu_cost),     cmocka_unit_test(test_reports_differ),
		cmocka_unit_test(test_not_a_result),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
