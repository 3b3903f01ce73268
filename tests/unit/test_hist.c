/* Unit tests of common/util/hist: which bucket a duration lands in (bounds are inclusive), the
 * cumulative bucket lines, sum and count in Prometheus text, labels, and nothing for an empty
 * histogram. */
#include "common/util/hist.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* h written out, into a NUL-terminated buffer the caller frees. */
static char *text_of(const char *labels, const struct ry_hist *h)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	ry_hist_write(f, "x_seconds", labels, h);
	fclose(f);
	return buf;
}

static void test_empty_writes_nothing(void **state)
{
	struct ry_hist h = {0};
	char *t = text_of("", &h);

	(void)state;
	assert_string_equal(t, "");
	free(t);
}

static void test_buckets_and_sum(void **state)
{
	struct ry_hist h = {0};
	char *t;

	(void)state;
	ry_hist_add(&h, 100);	  /* on the first bound: in it */
	ry_hist_add(&h, 101);	  /* just above: the next */
	ry_hist_add(&h, -5);	  /* a clock step back counts as 0 */
	ry_hist_add(&h, 3000000); /* above every bound */
	t = text_of("", &h);
	assert_non_null(strstr(t, "x_seconds_bucket{le=\"0.0001\"} 2\n"));
	assert_non_null(strstr(t, "x_seconds_bucket{le=\"0.00025\"} 3\n"));
	assert_non_null(strstr(t, "x_seconds_bucket{le=\"2.5\"} 3\n"));
	assert_non_null(strstr(t, "x_seconds_bucket{le=\"+Inf\"} 4\n"));
	assert_non_null(strstr(t, "x_seconds_sum 3.000201\n"));
	assert_non_null(strstr(t, "x_seconds_count 4\n"));
	free(t);
}

static void test_labels(void **state)
{
	struct ry_hist h = {0};
	char *t;

	(void)state;
	ry_hist_add(&h, 1500);
	t = text_of("kind=\"Hello\"", &h);
	assert_non_null(strstr(t, "x_seconds_bucket{kind=\"Hello\",le=\"0.001\"} 0\n"));
	assert_non_null(strstr(t, "x_seconds_bucket{kind=\"Hello\",le=\"0.0025\"} 1\n"));
	assert_non_null(strstr(t, "x_seconds_sum{kind=\"Hello\"} 0.001500\n"));
	assert_non_null(strstr(t, "x_seconds_count{kind=\"Hello\"} 1\n"));
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_writes_nothing),
		cmocka_unit_test(test_buckets_and_sum),
		cmocka_unit_test(test_labels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
