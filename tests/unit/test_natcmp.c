/* Unit tests of util_natcmp(): digit runs compare as numbers (gpu-node-2 < gpu-node-10), leading
 * zeros do not change a number's place (02 beside 2, the shorter spelling first), text compares
 * bytewise, prefixes first, NULL first; and a list sorted with it is in the order people count. */
#include "common/util/util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static int sign(int x)
{
	return x < 0 ? -1 : x > 0;
}

static void test_pairs(void **state)
{
	static const struct {
		const char *a, *b;
		int want;
	} t[] = {
		{"gpu-node-2", "gpu-node-10", -1},
		{"gpu-node-10", "gpu-node-2", 1},
		{"gpu-node-02", "gpu-node-2", 1},
		{"gpu-node-02", "gpu-node-03", -1},
		{"a", "a", 0},
		{"a", "ab", -1},
		{"ab", "a", 1},
		{"node9", "node09x", -1},
		{"mlx5_10", "mlx5_9", 1},
		{"x100y2", "x100y10", -1},
		{"", "a", -1},
		{"0", "00", -1},
		{"b1", "a2", 1},
		{"99999999999999999999", "100000000000000000000", -1},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int got = sign(util_natcmp(t[i].a, t[i].b));

		if (got != t[i].want)
			fail_msg("util_natcmp(\"%s\", \"%s\") = %d, want %d", t[i].a, t[i].b, got,
				 t[i].want);
	}
	assert_int_equal(util_natcmp(NULL, NULL), 0);
	assert_true(util_natcmp(NULL, "a") < 0);
	assert_true(util_natcmp("a", NULL) > 0);
}

static int cmp(const void *x, const void *y)
{
	return util_natcmp(*(const char *const *)x, *(const char *const *)y);
}

static void test_sort(void **state)
{
	const char *v[] = {"gpu-node-10", "gpu-node-02", "gpu-node-1", "gpu-node-04", "gpu-node-3"};
	const char *want[] = {"gpu-node-1", "gpu-node-02", "gpu-node-3", "gpu-node-04",
			      "gpu-node-10"};

	(void)state;
	qsort(v, 5, sizeof(v[0]), cmp);
	for (size_t i = 0; i < 5; i++)
		assert_string_equal(v[i], want[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pairs),
		cmocka_unit_test(test_sort),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
