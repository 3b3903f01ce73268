/* Unit tests of controller/throttle: a source is blocked after a burst of refusals and let
 * through again as they drain; one audit row per key and window, carrying the count of the
 * refusals it stands for; keys do not disturb each other, and the table forgets old keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>

#include "controller/throttle.h"

static void test_burst_and_drain(void **state)
{
	struct ctl_throttle_config cfg = {.burst = 3, .drain_ms = 1000, .audit_window_ms = 60000};
	struct ctl_throttle *t = NULL;
	int64_t retry = 0;

	(void)state;
	assert_int_equal(ctl_throttle_new(&cfg, &t), 0);
	assert_false(ctl_throttle_blocked(t, "10.0.0.1", 0, NULL));
	for (int i = 0; i < 3; i++)
		(void)ctl_throttle_refusal(t, "10.0.0.1", 0, NULL);
	assert_true(ctl_throttle_blocked(t, "10.0.0.1", 0, &retry));
	assert_int_equal(retry, 1000);
	assert_true(ctl_throttle_blocked(t, "10.0.0.1", 999, &retry));
	assert_int_equal(retry, 1);
	/* One refusal drained: one more attempt is let through. */
	assert_false(ctl_throttle_blocked(t, "10.0.0.1", 1000, NULL));
	(void)ctl_throttle_refusal(t, "10.0.0.1", 1000, NULL);
	assert_true(ctl_throttle_blocked(t, "10.0.0.1", 1000, NULL));
	/* Another source is not affected. */
	assert_false(ctl_throttle_blocked(t, "10.0.0.2", 1000, NULL));
	/* All drained after burst * drain_ms. */
	assert_false(ctl_throttle_blocked(t, "10.0.0.1", 4000, NULL));
	ctl_throttle_free(t);
	assert_int_equal(ctl_throttle_new(&(struct ctl_throttle_config){0, 1, 1}, &t), -EINVAL);
}

static void test_audit_window(void **state)
{
	struct ctl_throttle_config cfg = {.burst = 1000, .drain_ms = 1, .audit_window_ms = 60000};
	struct ctl_throttle *t = NULL;
	unsigned suppressed = 99;
	int audited = 0;

	(void)state;
	assert_int_equal(ctl_throttle_new(&cfg, &t), 0);
	assert_true(ctl_throttle_refusal(t, "n-1", 0, &suppressed));
	assert_int_equal(suppressed, 0);
	for (int i = 1; i <= 500; i++)
		audited += ctl_throttle_refusal(t, "n-1", i, &suppressed);
	assert_int_equal(audited, 0);
	/* The next window's first refusal is audited and says how many were not. */
	assert_true(ctl_throttle_refusal(t, "n-1", 60000, &suppressed));
	assert_int_equal(suppressed, 500);
	assert_true(ctl_throttle_refusal(t, "n-2", 60001, &suppressed));
	assert_int_equal(suppressed, 0);
	ctl_throttle_free(t);
}

static void test_many_keys(void **state)
{
	struct ctl_throttle_config cfg = {.burst = 2, .drain_ms = 1000000, .audit_window_ms = 1};
	struct ctl_throttle *t = NULL;
	char key[32];
	int blocked = 0;

	(void)state;
	assert_int_equal(ctl_throttle_new(&cfg, &t), 0);
	/* Far more keys than the table holds: memory stays bounded, recent keys are kept. */
	for (int i = 0; i < 100000; i++) {
		snprintf(key, sizeof(key), "10.%d.%d.%d", i >> 16, (i >> 8) & 255, i & 255);
		(void)ctl_throttle_refusal(t, key, i, NULL);
		(void)ctl_throttle_refusal(t, key, i, NULL);
	}
	for (int i = 100000 - 100; i < 100000; i++) {
		snprintf(key, sizeof(key), "10.%d.%d.%d", i >> 16, (i >> 8) & 255, i & 255);
		blocked += ctl_throttle_blocked(t, key, 100000, NULL);
	}
	assert_int_equal(blocked, 100);
	ctl_throttle_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_and_drain),
		cmocka_unit_test(test_audit_window),
		cmocka_unit_test(test_many_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
