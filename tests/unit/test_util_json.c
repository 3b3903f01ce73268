/* Unit tests of common/util/json: each kind of scalar as text, the digits of a real, what is
 * not a scalar, and any value as text (strings bare, the rest compact JSON). */
#include "common/util/json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ry_json_scalar_text() of the JSON text doc (parsed with JSON_DECODE_ANY), checked against
 * want (NULL: no text). */
static void check_text(const char *doc, int digits, const char *want)
{
	json_t *v = json_loads(doc, JSON_DECODE_ANY, NULL);
	char *t;

	assert_non_null(v);
	t = ry_json_scalar_text(v, digits);
	if (want)
		assert_string_equal(t, want);
	else
		assert_null(t);
	free(t);
	json_decref(v);
}

static void test_scalars(void **state)
{
	(void)state;
	check_text("\"mlx5_0\"", RY_JSON_REAL_SHORT, "mlx5_0");
	check_text("\"\"", RY_JSON_REAL_SHORT, "");
	check_text("-9007199254740993", RY_JSON_REAL_SHORT, "-9007199254740993");
	check_text("true", RY_JSON_REAL_SHORT, "true");
	check_text("false", RY_JSON_REAL_EXACT, "false");
	check_text("null", RY_JSON_REAL_SHORT, NULL);
	check_text("[1]", RY_JSON_REAL_SHORT, NULL);
	check_text("{\"a\": 1}", RY_JSON_REAL_EXACT, NULL);
	assert_null(ry_json_scalar_text(NULL, RY_JSON_REAL_SHORT));
}

static void test_reals(void **state)
{
	(void)state;
	check_text("0.1", RY_JSON_REAL_SHORT, "0.1");
	check_text("0.1", RY_JSON_REAL_EXACT, "0.10000000000000001");
	check_text("3.14159265358979", RY_JSON_REAL_SHORT, "3.14159");
	check_text("1.0", RY_JSON_REAL_SHORT, "1"); /* as printf, not as JSON */
	check_text("1e300", RY_JSON_REAL_EXACT, "1.0000000000000001e+300");
	check_text("2.5e-7", RY_JSON_REAL_SHORT, "2.5e-07");
}

static void test_borrowed(void **state)
{
	json_t *s = json_string("kept"), *n = json_integer(42);
	char buf[32] = "";
	const char *t;

	(void)state;
	/* A string is not copied; a number is written into buf. */
	t = ry_json_scalar_str(s, RY_JSON_REAL_SHORT, buf, sizeof(buf));
	assert_ptr_equal(t, json_string_value(s));
	assert_string_equal(buf, "");
	t = ry_json_scalar_str(n, RY_JSON_REAL_SHORT, buf, sizeof(buf));
	assert_ptr_equal(t, buf);
	assert_string_equal(buf, "42");
	json_decref(s);
	json_decref(n);
}

static void test_value_text(void **state)
{
	json_t *v = json_pack("{s:s, s:f, s:[i, n], s:b}", "s", "a b", "r", 1.0, "l", 2, "t", 1);
	char *t;

	(void)state;
	assert_non_null(v);
	t = ry_json_value_text(json_object_get(v, "s"));
	assert_string_equal(t, "a b"); /* bare, not quoted */
	free(t);
	t = ry_json_value_text(json_object_get(v, "r"));
	assert_string_equal(t, "1.0"); /* as JSON */
	free(t);
	t = ry_json_value_text(json_object_get(v, "l"));
	assert_string_equal(t, "[2,null]");
	free(t);
	t = ry_json_value_text(json_object_get(v, "t"));
	assert_string_equal(t, "true");
	free(t);
	assert_null(ry_json_value_text(json_object_get(v, "absent")));
	json_decref(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scalars),
		cmocka_unit_test(test_reals),
		cmocka_unit_test(test_borrowed),
		cmocka_unit_test(test_value_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
