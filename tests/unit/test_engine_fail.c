/* controller/engine: a failure the engine cannot recover from goes to the callback its owner
 * set (the server stops), not to the server directly; without one it is only logged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "controller/engine/engine.h"

#include <stdio.h>
#include <string.h>

struct heard {
	int calls;
	char why[512];
};

static void on_fail(void *ud, const char *why)
{
	struct heard *h = ud;

	h->calls++;
	snprintf(h->why, sizeof(h->why), "%s", why);
}

static void test_callback(void **state)
{
	struct ctl_engine *e = NULL;
	struct heard h = {0};

	(void)state;
	assert_int_equal(ctl_engine_new(NULL, &e), 0);
	ctl_engine_fail(e, "before a callback: %d", 1); /* logged only */
	assert_int_equal(h.calls, 0);
	ctl_engine_on_failure(e, on_fail, &h);
	ctl_engine_fail(e, "the database %s is corrupt", "x.db");
	assert_int_equal(h.calls, 1);
	assert_string_equal(h.why, "the database x.db is corrupt");
	ctl_engine_fail(e, "again");
	assert_int_equal(h.calls, 2); /* the owner decides what a second report means */
	ctl_engine_on_failure(e, NULL, NULL);
	ctl_engine_fail(e, "after");
	assert_int_equal(h.calls, 2);
	ctl_engine_fail(NULL, "no engine: logged"); /* NULL is fine */
	ctl_engine_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_callback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
