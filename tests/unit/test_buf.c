/* Unit tests of common/util/buf: growth past the first allocation, the max (an append that
 * would pass it fails and leaves the text as it was, and the failure sticks until a reset),
 * printf-style appends, failures of the writer's own, and taking the text. */
#include "common/util/buf.h"
#include "common/util/error.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_growth(void **state)
{
	struct ry_buf b;
	char chunk[100];
	char *s = NULL;
	size_t len = 0;

	(void)state;
	memset(chunk, 'x', sizeof(chunk));
	ry_buf_init(&b, 1 << 20);
	assert_string_equal(ry_buf_str(&b), "");
	for (int i = 0; i < 100; i++)
		assert_int_equal(ry_buf_addn(&b, chunk, sizeof(chunk)), 0);
	assert_int_equal(ry_buf_len(&b), 10000);
	assert_int_equal(strlen(ry_buf_str(&b)), 10000);
	assert_int_equal(ry_buf_add(&b, "end"), 0);
	assert_int_equal(ry_buf_take(&b, &s, &len), 0);
	assert_int_equal(len, 10003);
	assert_string_equal(s + 10000, "end");
	assert_int_equal(s[9999], 'x');
	free(s);
	/* Taken: empty again, and usable. */
	assert_int_equal(ry_buf_len(&b), 0);
	assert_int_equal(ry_buf_add(&b, "again"), 0);
	assert_string_equal(ry_buf_str(&b), "again");
	ry_buf_done(&b);
}

static void test_max(void **state)
{
	struct ry_buf b;
	char *s = NULL;

	(void)state;
	ry_buf_init(&b, 8);
	assert_int_equal(ry_buf_add(&b, "12345"), 0);
	assert_int_equal(ry_buf_add(&b, "6789"), -RY_E_TOO_BIG);
	assert_string_equal(ry_buf_str(&b), "12345"); /* nothing of the failed append */
	/* Sticky: even what would fit now fails, with the first error. */
	assert_int_equal(ry_buf_add(&b, "6"), -RY_E_TOO_BIG);
	assert_int_equal(ry_buf_addf(&b, "%d", 6), -RY_E_TOO_BIG);
	assert_int_equal(ry_buf_error(&b), -RY_E_TOO_BIG);
	assert_int_equal(ry_buf_take(&b, &s, NULL), -RY_E_TOO_BIG);
	assert_null(s);
	/* After the failed take the buffer is empty, with its max; up to max exactly fits. */
	assert_int_equal(ry_buf_add(&b, "12345678"), 0);
	assert_int_equal(ry_buf_add(&b, ""), 0);
	assert_int_equal(ry_buf_addn(&b, "9", 1), -RY_E_TOO_BIG);
	ry_buf_reset(&b);
	assert_int_equal(ry_buf_error(&b), 0);
	assert_int_equal(ry_buf_len(&b), 0);
	assert_int_equal(ry_buf_add(&b, "abc"), 0);
	assert_string_equal(ry_buf_str(&b), "abc");
	/* A failure of the writer's own sticks as well; the first one wins. */
	ry_buf_fail(&b, -ENOMEM);
	ry_buf_fail(&b, -EINVAL);
	assert_int_equal(ry_buf_add(&b, "d"), -ENOMEM);
	assert_int_equal(ry_buf_take(&b, &s, NULL), -ENOMEM);
	ry_buf_done(&b);
	ry_buf_done(NULL);
}

static void test_printf(void **state)
{
	struct ry_buf b;
	char *s = NULL;
	size_t len = 0;

	(void)state;
	ry_buf_init(&b, 4096);
	assert_int_equal(ry_buf_addf(&b, "%s=%d", "uses", 3), 0);
	assert_int_equal(ry_buf_addf(&b, "%s", ""), 0);
	assert_int_equal(ry_buf_addf(&b, " %05.1f|%-4s|", 2.25, "ab"), 0);
	assert_string_equal(ry_buf_str(&b), "uses=3 002.2|ab  |");
	/* Longer than the buffer's first allocation. */
	assert_int_equal(ry_buf_addf(&b, "%200s", "r"), 0);
	assert_int_equal(ry_buf_take(&b, &s, &len), 0);
	assert_int_equal(len, 18 + 200);
	assert_int_equal(s[len - 1], 'r');
	assert_int_equal(s[len - 2], ' ');
	free(s);
	/* A printf that would pass the max fails whole. */
	ry_buf_init(&b, 10);
	assert_int_equal(ry_buf_addf(&b, "%d", 123456), 0);
	assert_int_equal(ry_buf_addf(&b, "%d", 12345), -RY_E_TOO_BIG);
	assert_string_equal(ry_buf_str(&b), "123456");
	ry_buf_done(&b);
}

static void test_take_empty(void **state)
{
	struct ry_buf b;
	char *s = NULL;
	size_t len = 7;

	(void)state;
	ry_buf_init(&b, 16);
	assert_int_equal(ry_buf_take(&b, &s, &len), 0);
	assert_non_null(s);
	assert_string_equal(s, "");
	assert_int_equal(len, 0);
	free(s);
	/* Bytes with a NUL inside are kept whole. */
	assert_int_equal(ry_buf_addn(&b, "a\0b", 3), 0);
	assert_int_equal(ry_buf_len(&b), 3);
	assert_int_equal(ry_buf_take(&b, &s, &len), 0);
	assert_int_equal(len, 3);
	assert_memory_equal(s, "a\0b", 4);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_max),
		cmocka_unit_test(test_printf),
		cmocka_unit_test(test_take_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
