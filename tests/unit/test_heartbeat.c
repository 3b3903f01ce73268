/* Unit tests of ctl_heartbeat_interval(): the interval a Welcome tells is the configured one
 * until the fleet's heartbeats would pass the rate cap, then stretched in whole seconds so that
 * they stay under it, up to the cap on the interval; no cap and bad input leave it alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "controller/server.h"

static void test_under_the_cap(void **state)
{
	(void)state;
	/* 1,000 nodes at 5 s: 200 a second, under 500. */
	assert_int_equal(ctl_heartbeat_interval(5000, 500, 1000), 5000);
	/* 2,500 at 5 s: exactly 500 a second. */
	assert_int_equal(ctl_heartbeat_interval(5000, 500, 2500), 5000);
	assert_int_equal(ctl_heartbeat_interval(300, 500, 3), 300);
}

static void test_stretched(void **state)
{
	(void)state;
	/* 10,000 nodes under 500 a second: 20 s each. */
	assert_int_equal(ctl_heartbeat_interval(5000, 500, 10000), 20000);
	/* 2,501 need 5.002 s: rounded up to a whole second, never under the cap's rate. */
	assert_int_equal(ctl_heartbeat_interval(5000, 500, 2501), 6000);
	for (long n = 1; n <= 30000; n += 997) {
		int iv = ctl_heartbeat_interval(5000, 500, n);

		assert_true(iv >= 5000);
		assert_true(iv <= CTL_HEARTBEAT_STRETCH_MAX_MS);
		if (iv < CTL_HEARTBEAT_STRETCH_MAX_MS)
			assert_true((double)n * 1000.0 / iv <= 500.0);
	}
	/* A sub-second base stretched: 6 nodes under 2 a second, 3 s. */
	assert_int_equal(ctl_heartbeat_interval(300, 2, 6), 3000);
}

static void test_limits(void **state)
{
	(void)state;
	/* The interval has a ceiling (a dead node is noticed within a few of them)... */
	assert_int_equal(ctl_heartbeat_interval(5000, 10, 1000000), CTL_HEARTBEAT_STRETCH_MAX_MS);
	/* ...unless the configured interval is longer already. */
	assert_int_equal(ctl_heartbeat_interval(90000, 10, 1000000), 90000);
	/* No cap, no fleet: as configured. */
	assert_int_equal(ctl_heartbeat_interval(5000, 0, 10000000), 5000);
	assert_int_equal(ctl_heartbeat_interval(5000, -1, 10000), 5000);
	assert_int_equal(ctl_heartbeat_interval(5000, 500, 0), 5000);
	/* The largest fleet and rate the command line takes do not overflow. */
	assert_int_equal(ctl_heartbeat_interval(5000, 1, 10000000), CTL_HEARTBEAT_STRETCH_MAX_MS);
	assert_int_equal(ctl_heartbeat_interval(100, 1000000, 10000000), 10000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_under_the_cap),
		cmocka_unit_test(test_stretched),
		cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
