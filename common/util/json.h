/* JSON values as text, for the places that show, compare or embed one (playbook renders and
 * conditions, executors' parameters, the sign-off page and snapshot): one rule for numbers. */
#ifndef RAILYARD_UTIL_JSON_H
#define RAILYARD_UTIL_JSON_H

#include <jansson.h>
#include <stddef.h>

/* Significant digits of a real: as printf's "%g" (6), and enough to read the same double
 * back (17). */
#define RY_JSON_REAL_SHORT 6
#define RY_JSON_REAL_EXACT 17

/* The text of a JSON scalar without allocating: a string's own text (borrowed from v), an
 * integer in decimal, a real as "%.*g" with real_digits (1..17) significant digits, "true" or
 * "false"; numbers are written into buf (len >= 32 holds any of them). NULL for null, arrays,
 * objects and an absent v. Thread-safe. */
const char *ry_json_scalar_str(const json_t *v, int real_digits, char *buf, size_t len);

/* As ry_json_scalar_str(), as a new string (caller frees with free()); NULL for what is not
 * such a scalar, or when out of memory. */
char *ry_json_scalar_text(const json_t *v, int real_digits);

/* Any value as text (caller frees): a string's own text, anything else as compact JSON
 * (numbers as jansson writes them: 1.0 for an integral real). NULL for an absent v or when out
 * of memory. */
char *ry_json_value_text(const json_t *v);

#endif
