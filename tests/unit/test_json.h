/* JSON lookups and assertions for unit tests that check documents (facts): jget() walks a
 * dotted path, printf-style ("gpus.%d.bus": array members by index), to NULL when absent; the
 * assertions fail naming the path's format when the member is missing or of another type.
 * Include after <cmocka.h>. */
#ifndef RAILYARD_TESTS_UNIT_TEST_JSON_H
#define RAILYARD_TESTS_UNIT_TEST_JSON_H

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline json_t *jget(json_t *root, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static inline json_t *jget(json_t *root, const char *fmt, ...)
{
	char path[256], *seg, *save = NULL;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	for (seg = strtok_r(path, ".", &save); seg && root; seg = strtok_r(NULL, ".", &save)) {
		if (json_is_array(root))
			root = json_array_get(root, strtoul(seg, NULL, 10));
		else
			root = json_object_get(root, seg);
	}
	return root;
}

#define assert_jstr(root, expected, ...)                                                           \
	do {                                                                                       \
		json_t *v_ = jget(root, __VA_ARGS__);                                              \
		if (!json_is_string(v_))                                                           \
			fail_msg("not a string: " __VA_ARGS__);                                    \
		assert_string_equal(json_string_value(v_), expected);                              \
	} while (0)

#define assert_jint(root, expected, ...)                                                           \
	do {                                                                                       \
		json_t *v_ = jget(root, __VA_ARGS__);                                              \
		if (!json_is_integer(v_))                                                          \
			fail_msg("not an integer: " __VA_ARGS__);                                  \
		assert_true(json_integer_value(v_) == (json_int_t)(expected));                     \
	} while (0)

#define assert_jbool(root, expected, ...)                                                          \
	do {                                                                                       \
		json_t *v_ = jget(root, __VA_ARGS__);                                              \
		if (!json_is_boolean(v_))                                                          \
			fail_msg("not a boolean: " __VA_ARGS__);                                   \
		assert_true(json_is_true(v_) == (expected));                                       \
	} while (0)

#define assert_jabsent(root, ...) assert_null(jget(root, __VA_ARGS__))

#endif
