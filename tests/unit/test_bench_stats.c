/* Unit tests of the benchmark statistics: exact nearest-rank percentiles on known sets, mean
 * and stddev against a two-pass reference, the histogram's error bound, clock errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/stats/stats.h"

#include "common/util/error.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct stats_lat *new_with(const uint64_t *v, size_t n, size_t max_samples)
{
	struct stats_lat *s = NULL;
	size_t i;

	assert_int_equal(stats_lat_new(max_samples, &s), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(stats_lat_add(s, v[i]), 0);
	return s;
}

/* 1..100 shuffled: nearest rank gives exactly the rank's value. */
static void test_percentiles_1_to_100(void **state)
{
	uint64_t v[100];
	struct stats_lat_summary sum;
	struct stats_lat *s;
	size_t i;

	for (i = 0; i < 100; i++)
		v[i] = (i * 37) % 100 + 1; /* a permutation of 1..100 */
	s = new_with(v, 100, 0);
	assert_int_equal(stats_lat_summary(s, 1.0, &sum), 0);
	assert_int_equal(sum.count, 100);
	assert_true(sum.min == 1 && sum.max == 100);
	assert_true(sum.p50 == 50);
	assert_true(sum.p90 == 90);
	assert_true(sum.p99 == 99);
	assert_true(sum.p999 == 100); /* ceil(99.9) = rank 100 */
	assert_true(fabs(sum.mean - 50.5) < 1e-12);
	assert_false(sum.approximate);
	stats_lat_free(s);
}

/* Small sets where nearest rank and interpolation differ. */
static void test_percentiles_small(void **state)
{
	const uint64_t a[] = {15, 20, 35, 40, 50};
	const uint64_t b[] = {3, 6, 7, 8, 8, 10, 13, 15, 16, 20};
	const uint64_t one[] = {42};
	uint64_t sorted[10];

	assert_int_equal(stats_percentile_sorted(a, 5, 30), 20);  /* rank ceil(1.5) = 2 */
	assert_int_equal(stats_percentile_sorted(a, 5, 40), 20);  /* rank 2 exactly */
	assert_int_equal(stats_percentile_sorted(a, 5, 50), 35);  /* rank ceil(2.5) = 3 */
	assert_int_equal(stats_percentile_sorted(a, 5, 100), 50); /* rank 5 */
	assert_int_equal(stats_percentile_sorted(a, 5, 0), 15);	  /* rank 1 */
	memcpy(sorted, b, sizeof(b));
	assert_int_equal(stats_percentile_sorted(sorted, 10, 25), 7);  /* rank 3 */
	assert_int_equal(stats_percentile_sorted(sorted, 10, 50), 8);  /* rank 5 */
	assert_int_equal(stats_percentile_sorted(sorted, 10, 75), 15); /* rank 8 */
	assert_int_equal(stats_percentile_sorted(sorted, 10, 90), 16); /* rank 9 */
	assert_int_equal(stats_percentile_sorted(one, 1, 99.9), 42);
}

/* Mean and population stddev against a two-pass computation on awkward data (large offset,
 * where a naive sum of squares loses digits). */
static void test_mean_stddev_reference(void **state)
{
	enum { N = 10007 };
	static uint64_t v[N];
	struct stats_lat_summary sum;
	struct stats_lat *s;
	double mean = 0, var = 0;
	uint64_t x = 88172645463325252ull;
	size_t i;

	for (i = 0; i < N; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		v[i] = 1000000000ull + x % 5000; /* 1 s + up to 5 us */
	}
	for (i = 0; i < N; i++)
		mean += (double)v[i];
	mean /= N;
	for (i = 0; i < N; i++)
		var += ((double)v[i] - mean) * ((double)v[i] - mean);
	var /= N;
	s = new_with(v, N, 0);
	assert_int_equal(stats_lat_summary(s, 1.0, &sum), 0);
	assert_true(fabs(sum.mean - mean) <= 1e-6 * 1);
	assert_true(fabs(sum.stddev - sqrt(var)) <= 1e-6 * sqrt(var));
	assert_true(sum.stddev > 1000 && sum.stddev < 2000); /* uniform over 5000: ~1443 */
	stats_lat_free(s);
}

/* Scale applies to every figure: RTT ns -> one-way us. */
static void test_scale(void **state)
{
	const uint64_t v[] = {2000, 4000, 6000};
	struct stats_lat_summary sum;
	struct stats_lat *s = new_with(v, 3, 0);

	assert_int_equal(stats_lat_summary(s, 0.5e-3, &sum), 0);
	assert_true(sum.min == 1.0 && sum.p50 == 2.0 && sum.max == 3.0 && sum.mean == 2.0);
	stats_lat_free(s);
}

/* Every bucket reports a value within 2^-BITS of any value it holds; buckets are monotonic. */
static void test_hist_error_bound(void **state)
{
	const double bound = 1.0 / (1 << STATS_HIST_BITS);
	uint64_t v, rep;
	size_t idx, prev = 0;
	int shift;

	for (v = 0; v < (1u << STATS_HIST_BITS); v++)
		assert_int_equal(stats_hist_value(stats_hist_index(v)), v);
	for (shift = 0; shift < 54; shift++) {
		uint64_t base = 1ull << (STATS_HIST_BITS + shift);
		const uint64_t probes[] = {base, base + 1, base + base / 3, base * 2 - 1};
		size_t k;

		for (k = 0; k < 4; k++) {
			v = probes[k];
			idx = stats_hist_index(v);
			assert_true(idx < stats_hist_buckets());
			assert_true(idx >= prev);
			prev = idx;
			rep = stats_hist_value(idx);
			assert_true(fabs((double)rep - (double)v) <= bound * (double)v);
		}
	}
	assert_true(stats_hist_index(UINT64_MAX) < stats_hist_buckets());
}

/* Beyond the sample bound the histogram takes over: percentiles within the bound, count,
 * min, max, mean exact. */
static void test_hist_mode(void **state)
{
	enum { N = 100000 };
	static uint64_t v[N];
	struct stats_lat_summary sum, exact;
	struct stats_lat *s, *e;
	size_t i;

	for (i = 0; i < N; i++)
		v[i] = 1000 + (i * 7919) % 1000000; /* 1 us .. 1 ms */
	s = new_with(v, N, 1000);
	e = new_with(v, N, N);
	assert_int_equal(stats_lat_summary(s, 1.0, &sum), 0);
	assert_int_equal(stats_lat_summary(e, 1.0, &exact), 0);
	assert_true(sum.approximate);
	assert_false(exact.approximate);
	assert_int_equal(sum.count, N);
	assert_true(sum.min == exact.min && sum.max == exact.max);
	assert_true(fabs(sum.mean - exact.mean) < 1e-6 * exact.mean);
	assert_true(fabs(sum.stddev - exact.stddev) < 1e-6 * exact.stddev);
	assert_true(fabs(sum.p50 - exact.p50) <= exact.p50 / (1 << STATS_HIST_BITS));
	assert_true(fabs(sum.p90 - exact.p90) <= exact.p90 / (1 << STATS_HIST_BITS));
	assert_true(fabs(sum.p99 - exact.p99) <= exact.p99 / (1 << STATS_HIST_BITS));
	assert_true(fabs(sum.p999 - exact.p999) <= exact.p999 / (1 << STATS_HIST_BITS));
	stats_lat_free(s);
	stats_lat_free(e);
}

static void test_clock_errors(void **state)
{
	struct stats_lat_summary sum;
	struct stats_lat *s = NULL;
	struct stats_series *ser = calloc(1, sizeof(*ser));
	struct stats_bw bw;

	assert_non_null(ser);
	assert_int_equal(stats_lat_new(0, &s), 0);
	assert_int_equal(stats_lat_summary(s, 1.0, &sum), -ENODATA);
	assert_int_equal(stats_lat_add(s, 0), -RY_E_CLOCK);
	assert_int_equal(stats_lat_count(s), 0);
	assert_int_equal(stats_bw_compute(1000, 1, 0, &bw), -RY_E_CLOCK);
	assert_int_equal(stats_series_add(ser, 10, 0, 1, 1), -RY_E_CLOCK);
	assert_int_equal(ser->n, 0);
	stats_lat_free(s);
	stats_lat_free(NULL);
	free(ser);
}

static void test_bw(void **state)
{
	struct stats_series *ser = calloc(1, sizeof(*ser));
	struct stats_bw bw;
	size_t i;

	assert_non_null(ser);
	/* 1.25e9 bytes in 1 s = 10 Gb/s; 1 MiB in 1 s = 1 MB/sec (perftest's MB). */
	assert_int_equal(stats_bw_compute(1250000000ull, 1000, 1000000000ull, &bw), 0);
	assert_true(bw.gbps == 10.0 && bw.msg_rate == 1000.0 && bw.seconds == 1.0);
	assert_int_equal(stats_bw_compute(1048576, 1, 1000000000ull, &bw), 0);
	assert_true(bw.mbps == 1.0);
	assert_int_equal(stats_series_add(ser, 500000000ull, 500000000ull, 125000000ull, 10), 0);
	assert_int_equal(ser->n, 1);
	assert_true(ser->v[0].t_s == 0.5 && ser->v[0].gbps == 2.0 && ser->v[0].msg_rate == 20.0);
	for (i = 1; i < STATS_INTERVALS_MAX + 5; i++)
		assert_int_equal(stats_series_add(ser, i, 1, 0, 0), 0);
	assert_int_equal(ser->n, STATS_INTERVALS_MAX);
	assert_true(ser->truncated);
	free(ser);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_percentiles_1_to_100),
		cmocka_unit_test(test_percentiles_small),
		cmocka_unit_test(test_mean_stddev_reference),
		cmocka_unit_test(test_scale),
		cmocka_unit_test(test_hist_error_bound),
		cmocka_unit_test(test_hist_mode),
		cmocka_unit_test(test_clock_errors),
		cmocka_unit_test(test_bw),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
