/* Unit tests: rollout batches, canary and max_fail edges (the cases Ansible users get bitten
 * by: rounding of percentages, "exceeds" versus "reaches", a canary bigger than the fleet). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "controller/rollout/policy.h"

static void expect_batches(const struct rollout_policy *p, size_t n, const size_t *want,
			   size_t want_n)
{
	size_t *sizes = NULL, count = 0;

	assert_int_equal(rollout_batches(p, n, &sizes, &count), 0);
	assert_int_equal(count, want_n);
	for (size_t i = 0; i < want_n; i++)
		assert_int_equal(sizes[i], want[i]);
	free(sizes);
}

static void test_default_one_batch(void **state)
{
	struct rollout_policy p = {0};

	expect_batches(&p, 5, (size_t[]){5}, 1);
	expect_batches(&p, 0, NULL, 0);
	assert_int_equal(rollout_max_failures(&p, 5), 0);
}

static void test_batch_count(void **state)
{
	struct rollout_policy p = {.batch_count = 2};

	expect_batches(&p, 5, (size_t[]){2, 2, 1}, 3);
	p.batch_count = 10;
	expect_batches(&p, 3, (size_t[]){3}, 1);
}

static void test_batch_percent_rounds_down_min_one(void **state)
{
	struct rollout_policy p = {.batch_percent = 30};

	/* floor(5 * 30 / 100) = 1 */
	expect_batches(&p, 5, (size_t[]){1, 1, 1, 1, 1}, 5);
	p.batch_percent = 50;
	expect_batches(&p, 5, (size_t[]){2, 2, 1}, 3);
	p.batch_percent = 100;
	expect_batches(&p, 5, (size_t[]){5}, 1);
	/* 10% of 4 is 0.4: still one node per batch, never zero. */
	p.batch_percent = 10;
	expect_batches(&p, 4, (size_t[]){1, 1, 1, 1}, 4);
}

static void test_canary(void **state)
{
	struct rollout_policy p = {.canary = 1, .batch_count = 2};

	expect_batches(&p, 5, (size_t[]){1, 2, 2}, 3);
	/* A canary bigger than the fleet is the whole fleet. */
	p.canary = 9;
	expect_batches(&p, 3, (size_t[]){3}, 1);
	/* Percentages are of the whole fleet, canary included. */
	p.canary = 1;
	p.batch_count = 0;
	p.batch_percent = 50;
	expect_batches(&p, 4, (size_t[]){1, 2, 1}, 3);
}

static void test_invalid(void **state)
{
	size_t *sizes = NULL, count;
	struct rollout_policy bad[] = {
		{.batch_count = 2, .batch_percent = 50},
		{.batch_percent = 101},
		{.max_fail_count = 1, .max_fail_percent = 10},
		{.max_fail_percent = -1},
		{.canary = -1},
		{.pause_ms = -5},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(rollout_batches(&bad[i], 5, &sizes, &count), -EINVAL);
}

static void test_max_fail_count_is_exceeds_not_reaches(void **state)
{
	struct rollout_policy p = {.max_fail_count = 1};
	char why[128];

	assert_false(rollout_should_stop(&p, 5, 1, false, 1, why, sizeof(why)));
	assert_true(rollout_should_stop(&p, 5, 2, false, 1, why, sizeof(why)));
	assert_string_equal(why, "max_fail exceeded: 2 of 5 nodes failed, 1 tolerated");
	/* Default: nothing tolerated. */
	p.max_fail_count = 0;
	assert_false(rollout_should_stop(&p, 5, 0, false, 0, why, sizeof(why)));
	assert_true(rollout_should_stop(&p, 5, 1, false, 1, why, sizeof(why)));
}

static void test_max_fail_percent(void **state)
{
	struct rollout_policy p = {.max_fail_percent = 20};

	/* 20% of 5 = 1 tolerated. */
	assert_int_equal(rollout_max_failures(&p, 5), 1);
	assert_false(rollout_should_stop(&p, 5, 1, false, 1, NULL, 0));
	assert_true(rollout_should_stop(&p, 5, 2, false, 1, NULL, 0));
	/* 20% of 4 = 0.8: rounds down, so none tolerated. */
	assert_int_equal(rollout_max_failures(&p, 4), 0);
	assert_true(rollout_should_stop(&p, 4, 1, false, 1, NULL, 0));
	/* 100%: never stops for failures. */
	p.max_fail_percent = 100;
	assert_false(rollout_should_stop(&p, 4, 4, false, 4, NULL, 0));
	/* Failures accumulate over batches: 1 + 1 > 1 stops in the second batch. */
	p.max_fail_percent = 0;
	p.max_fail_count = 1;
	assert_false(rollout_should_stop(&p, 6, 1, false, 1, NULL, 0));
	assert_true(rollout_should_stop(&p, 6, 2, false, 1, NULL, 0));
}

static void test_canary_must_fully_succeed(void **state)
{
	struct rollout_policy p = {.canary = 2, .max_fail_count = 3};
	char why[128];

	assert_true(rollout_should_stop(&p, 10, 1, true, 1, why, sizeof(why)));
	assert_string_equal(why, "canary failed: 1 of its nodes failed");
	assert_false(rollout_should_stop(&p, 10, 1, false, 1, why, sizeof(why)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_one_batch),
		cmocka_unit_test(test_batch_count),
		cmocka_unit_test(test_batch_percent_rounds_down_min_one),
		cmocka_unit_test(test_canary),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_max_fail_count_is_exceeds_not_reaches),
		cmocka_unit_test(test_max_fail_percent),
		cmocka_unit_test(test_canary_must_fully_succeed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
