/* JSON values as text (json.h). */
#include "common/util/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ry_json_scalar_str(const json_t *v, int real_digits, char *buf, size_t len)
{
	switch (v ? json_typeof(v) : JSON_NULL) {
	case JSON_STRING:
		return json_string_value(v);
	case JSON_INTEGER:
		snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return buf;
	case JSON_REAL:
		snprintf(buf, len, "%.*g", real_digits, json_real_value(v));
		return buf;
	case JSON_TRUE:
		return "true";
	case JSON_FALSE:
		return "false";
	default:
		return NULL;
	}
}

char *ry_json_scalar_text(const json_t *v, int real_digits)
{
	char buf[64];
	const char *s = ry_json_scalar_str(v, real_digits, buf, sizeof(buf));

	return s ? strdup(s) : NULL;
}

char *ry_json_value_text(const json_t *v)
{
	if (json_is_string(v))
		return strdup(json_string_value(v));
	return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
}
