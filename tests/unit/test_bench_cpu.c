/* Unit tests of the benchmark's CPU accounting (nodeagent/bench/cpu.h): /proc/stat parsed from
 * fixtures, the per-GB and cores arithmetic on known samples, zero-byte runs, counters that go
 * backwards, and a sample of this very process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "nodeagent/bench/cpu.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char stat_2cpu[] = "cpu  100 5 50 800 20 3 2 1 40 0\n"
				"cpu0 50 2 25 400 10 1 1 0 20 0\n"
				"cpu1 50 3 25 400 10 2 1 1 20 0\n"
				"intr 12345 0 0\n"
				"ctxt 999\n"
				"btime 1700000000\n"
				"processes 42\n";

static int parse(const char *s, struct bench_cpu_host *h)
{
	return bench_cpu_stat_parse(s, strlen(s), h);
}

static void test_parse_fixture(void **state)
{
	struct bench_cpu_host h;

	(void)state;
	assert_int_equal(parse(stat_2cpu, &h), 0);
	/* busy = user + nice + system + irq + softirq + steal; guest is inside user already */
	assert_int_equal(h.busy, 100 + 5 + 50 + 3 + 2 + 1);
	assert_int_equal(h.idle, 800 + 20);
	assert_int_equal(h.ncpu, 2);
}

/* Old kernels have four fields (no iowait, irq...); the text need not end with a newline. */
static void test_parse_short_and_unterminated(void **state)
{
	struct bench_cpu_host h;
	const char *s = "cpu 1 2 3 4\ncpu0 1 2 3 4";

	(void)state;
	assert_int_equal(bench_cpu_stat_parse(s, strlen(s), &h), 0);
	assert_int_equal(h.busy, 6);
	assert_int_equal(h.idle, 4);
	assert_int_equal(h.ncpu, 1);
	/* len cuts the text: the cpu0 line is not seen */
	assert_int_equal(bench_cpu_stat_parse(s, 12, &h), 0);
	assert_int_equal(h.ncpu, 0);
}

static void test_parse_garbage(void **state)
{
	struct bench_cpu_host h = {.busy = 7, .idle = 7, .ncpu = 7};

	(void)state;
	assert_int_equal(parse("", &h), -EINVAL);
	assert_int_equal(parse("cpu0 1 2 3 4\n", &h), -EINVAL);	  /* no aggregate line */
	assert_int_equal(parse("cpu 1 2 3\n", &h), -EINVAL);	  /* too few fields */
	assert_int_equal(parse("cpu 1 2 x 4\n", &h), -EINVAL);	  /* not a number */
	assert_int_equal(parse("cpu 1 2 -3 4\n", &h), -EINVAL);	  /* negative */
	assert_int_equal(parse("cpu 1 2 3 4z 5\n", &h), -EINVAL); /* trailing junk */
	assert_int_equal(parse("cpu 99999999999999999999 1 1 1\n", &h), -ERANGE);
	assert_int_equal(parse("cpu 18446744073709551615 1 1 1\n", &h), -ERANGE); /* sum */
	/* a failed parse leaves *ret alone */
	assert_int_equal(h.busy, 7);
	assert_int_equal(h.ncpu, 7);
}

static void sample(struct bench_cpu_sample *s, double t, double thread_s, uint64_t busy,
		   uint64_t idle, uint32_t ncpu)
{
	memset(s, 0, sizeof(*s));
	s->wall_ns = (uint64_t)(t * 1e9);
	s->thread_ns = (uint64_t)(thread_s * 1e9);
	s->thread_ok = true;
	s->host = (struct bench_cpu_host){busy, idle, ncpu};
	s->host_ok = true;
}

/* 2 s on 4 CPUs, 800 ticks of which 300 busy: 1.5 cores, 3 CPU-s; the thread 1.2 s of CPU;
 * 4 GB moved. */
static void test_arithmetic(void **state)
{
	struct bench_cpu_sample a, b;
	struct bench_cpu_usage u;

	(void)state;
	sample(&a, 10, 5, 1000, 9000, 4);
	sample(&b, 12, 6.2, 1300, 9500, 4);
	bench_cpu_usage_compute(&a, &b, 4000000000ull, &u);
	assert_true(fabs(u.seconds - 2) < 1e-9);
	assert_int_equal(u.ncpu, 4);
	assert_int_equal(u.bytes, 4000000000ull);
	assert_true(fabs(u.thread_s - 1.2) < 1e-6);
	assert_true(fabs(u.thread_cores - 0.6) < 1e-6);
	assert_true(fabs(u.thread_s_per_gb - 0.3) < 1e-6);
	assert_true(fabs(u.host_cores - 1.5) < 1e-9);
	assert_true(fabs(u.host_s - 3.0) < 1e-9);
	assert_true(fabs(u.host_s_per_gb - 0.75) < 1e-9);
}

/* No byte moved: cores are known, CPU-s per GB is not (never inf). */
static void test_zero_bytes(void **state)
{
	struct bench_cpu_sample a, b;
	struct bench_cpu_usage u;
	json_t *j;

	(void)state;
	sample(&a, 1, 0, 100, 100, 2);
	sample(&b, 2, 0.5, 150, 250, 2);
	bench_cpu_usage_compute(&a, &b, 0, &u);
	assert_true(fabs(u.thread_cores - 0.5) < 1e-9);
	assert_true(fabs(u.host_cores - 0.5) < 1e-9);
	assert_true(isnan(u.thread_s_per_gb));
	assert_true(isnan(u.host_s_per_gb));
	j = bench_cpu_usage_json(&u);
	assert_non_null(j);
	assert_true(json_is_null(json_object_get(j, "host_s_per_gb")));
	assert_true(json_is_null(json_object_get(j, "thread_s_per_gb")));
	assert_true(json_is_real(json_object_get(j, "host_cores")));
	assert_int_equal(json_integer_value(json_object_get(j, "bytes")), 0);
	json_decref(j);
}

/* Host counters that go backwards (a wrap, a reset), CPUs that come or go, or ticks that did
 * not move make the host figures unknown; a thread clock that goes back, the thread's. */
static void test_backwards(void **state)
{
	struct bench_cpu_sample a, b;
	struct bench_cpu_usage u;

	(void)state;
	sample(&a, 1, 2, 1000, 1000, 2);
	sample(&b, 2, 1, 900, 1100, 2); /* busy went back; thread too */
	bench_cpu_usage_compute(&a, &b, 1000, &u);
	assert_true(isnan(u.host_cores) && isnan(u.host_s) && isnan(u.host_s_per_gb));
	assert_true(isnan(u.thread_s) && isnan(u.thread_cores) && isnan(u.thread_s_per_gb));

	sample(&b, 2, 3, 1100, 900, 2); /* idle went back */
	bench_cpu_usage_compute(&a, &b, 1000, &u);
	assert_true(isnan(u.host_cores));
	assert_true(fabs(u.thread_s - 1) < 1e-9);

	sample(&b, 2, 3, 1100, 1100, 3); /* a CPU came online */
	bench_cpu_usage_compute(&a, &b, 1000, &u);
	assert_true(isnan(u.host_cores));

	sample(&b, 2, 3, 1000, 1000, 2); /* no tick at all */
	bench_cpu_usage_compute(&a, &b, 1000, &u);
	assert_true(isnan(u.host_cores));

	/* the wall clock going back: zero seconds, no cores, but CPU-seconds still known */
	sample(&b, 0.5, 3, 1100, 1100, 2);
	bench_cpu_usage_compute(&a, &b, 1000000000ull, &u);
	assert_true(u.seconds == 0);
	assert_true(isnan(u.thread_cores));
	assert_true(fabs(u.thread_s_per_gb - 1) < 1e-9);
}

/* A sample the host could not give (no /proc/stat): host unknown, thread known. */
static void test_missing_file(void **state)
{
	struct bench_cpu_sample a, b;
	struct bench_cpu_usage u;

	(void)state;
	bench_cpu_sample_take(&a, "/nonexistent/proc/stat");
	bench_cpu_sample_take(&b, "/nonexistent/proc/stat");
	assert_false(a.host_ok);
	assert_true(a.thread_ok);
	bench_cpu_usage_compute(&a, &b, 1, &u);
	assert_true(isnan(u.host_cores));
	assert_int_equal(u.ncpu, 0);
	assert_false(isnan(u.thread_s));
}

/* This process, busy for a moment: figures present and consistent with each other (their size
 * depends on the machine, so it is not asserted). A fixture file stands in for /proc/stat. */
static void test_sample_self(void **state)
{
	char path[] = "/tmp/test_bench_cpu.XXXXXX";
	struct bench_cpu_sample a, b;
	struct bench_cpu_usage u;
	volatile uint64_t x = 0;
	FILE *f;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(stat_2cpu, f);
	fclose(f);
	bench_cpu_sample_take(&a, path);
	for (uint64_t i = 0; i < 20000000; i++)
		x += i;
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("cpu  200 5 50 900 20 3 2 1 40 0\ncpu0 1 1 1 1\ncpu1 1 1 1 1\n", f);
	fclose(f);
	bench_cpu_sample_take(&b, path);
	unlink(path);
	assert_true(a.thread_ok && b.thread_ok && a.host_ok && b.host_ok);
	bench_cpu_usage_compute(&a, &b, 2000000000ull, &u);
	assert_true(u.seconds > 0);
	assert_true(u.thread_s >= 0 && isfinite(u.thread_s));
	assert_true(fabs(u.thread_s_per_gb - u.thread_s / 2) < 1e-9);
	assert_true(fabs(u.host_cores - 100.0 / 200.0 * 2) < 1e-9); /* 100 busy of 200 ticks */
	assert_true(fabs(u.host_s - u.host_cores * u.seconds) < 1e-9);
	/* and the real /proc/stat, when there is one */
	if (access("/proc/stat", R_OK) == 0) {
		bench_cpu_sample_take(&a, NULL);
		assert_true(a.host_ok);
		assert_true(a.host.ncpu >= 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_fixture),
		cmocka_unit_test(test_parse_short_and_unterminated),
		cmocka_unit_test(test_parse_garbage),
		cmocka_unit_test(test_arithmetic),
		cmocka_unit_test(test_zero_bytes),
		cmocka_unit_test(test_backwards),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_sample_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
