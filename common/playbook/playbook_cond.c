/* Fact paths ("rdma.devices[*].ports[*].state"), dpkg-style version comparison and evaluation of
 * conditions against a facts document: shared by target selectors and the agent's asserts. */
#include "common/playbook/playbook_int.h"

#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/util/error.h"
#include "common/util/json.h"

/* ---- Paths ------------------------------------------------------------------------------- */

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '-';
}

/* Skip a name of at most PB_PATH_NAME_MAX characters; false when there is none or it is
 * longer. */
static bool skip_name(const char **pp)
{
	const char *p = *pp;

	while (ident_char(*p))
		p++;
	if (p == *pp || p - *pp > PB_PATH_NAME_MAX)
		return false;
	*pp = p;
	return true;
}

int pb_path_check(const char *p, bool rel)
{
	if (!p || !*p)
		return -EINVAL;
	if (!(rel && *p == '[') && !skip_name(&p))
		return -EINVAL;
	while (*p) {
		if (*p == '.') {
			p++;
			if (!skip_name(&p))
				return -EINVAL;
		} else if (*p == '[') {
			p++;
			if (*p == '*') {
				p++;
			} else {
				if (!isdigit((unsigned char)*p))
					return -EINVAL;
				while (isdigit((unsigned char)*p))
					p++;
			}
			if (*p++ != ']')
				return -EINVAL;
		} else {
			return -EINVAL;
		}
	}
	return 0;
}

int pb_fact_path_check(const char *path)
{
	return pb_path_check(path, false);
}

int playbook_fact_lookup(const json_t *facts, const char *path, json_t **ret)
{
	if (pb_fact_path_check(path) < 0)
		return -EINVAL;
	return pb_lookup(facts, path, ret);
}

/* ---- Versions ---------------------------------------------------------------------------- */

static int order(int c)
{
	if (isdigit(c))
		return 0;
	if (isalpha(c))
		return c;
	if (c == '~')
		return -1;
	if (c)
		return c + 256;
	return 0;
}

/* dpkg's verrevcmp() on one part. */
static int verrevcmp(const char *a, const char *b)
{
	while (*a || *b) {
		int first_diff = 0;

		while ((*a && !isdigit((unsigned char)*a)) || (*b && !isdigit((unsigned char)*b))) {
			int ac = order((unsigned char)*a), bc = order((unsigned char)*b);

			if (ac != bc)
				return ac - bc;
			a++;
			b++;
		}
		while (*a == '0')
			a++;
		while (*b == '0')
			b++;
		while (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			if (!first_diff)
				first_diff = *a - *b;
			a++;
			b++;
		}
		if (isdigit((unsigned char)*a))
			return 1;
		if (isdigit((unsigned char)*b))
			return -1;
		if (first_diff)
			return first_diff;
	}
	return 0;
}

struct version {
	long epoch;
	char *upstream;
	const char *revision;
};

static void version_split(char *s, struct version *v)
{
	char *colon = strchr(s, ':'), *dash;

	v->epoch = 0;
	if (colon && colon > s && strspn(s, "0123456789") == (size_t)(colon - s)) {
		v->epoch = strtol(s, NULL, 10);
		s = colon + 1;
	}
	v->upstream = s;
	dash = strrchr(s, '-');
	if (dash) {
		*dash = '\0';
		v->revision = dash + 1;
	} else {
		v->revision = "";
	}
}

int playbook_version_compare(const char *a, const char *b)
{
	char *ca = strdup(a), *cb = strdup(b);
	struct version va, vb;
	int r;

	if (!ca || !cb) {
		free(ca);
		free(cb);
		return strcmp(a, b);
	}
	version_split(ca, &va);
	version_split(cb, &vb);
	if (va.epoch != vb.epoch)
		r = va.epoch < vb.epoch ? -1 : 1;
	else if ((r = verrevcmp(va.upstream, vb.upstream)) == 0)
		r = verrevcmp(va.revision, vb.revision);
	free(ca);
	free(cb);
	return r;
}

/* ---- Conditions -------------------------------------------------------------------------- */

static bool as_number(const json_t *v, double *ret)
{
	char *end;

	if (json_is_number(v)) {
		*ret = json_number_value(v);
		return true;
	}
	if (json_is_string(v) && *json_string_value(v)) {
		*ret = strtod(json_string_value(v), &end);
		return *end == '\0';
	}
	return false;
}

/* One comparison; -EINVAL when the values cannot be compared with op. */
static int test_one(const json_t *x, const char *op, const json_t *want, regex_t *re, bool *ok)
{
	double a, b;

	if (strcmp(op, "matches") == 0) {
		char *t = ry_json_value_text(x);

		if (!t)
			return -ENOMEM;
		*ok = regexec(re, t, 0, NULL, 0) == 0;
		free(t);
		return 0;
	}
	if (strncmp(op, "version", 7) == 0) {
		char *t = ry_json_value_text(x);
		int c;

		if (!t)
			return -ENOMEM;
		c = playbook_version_compare(t, json_string_value(want));
		free(t);
		op += 7;
		if (strcmp(op, "==") == 0)
			*ok = c == 0;
		else if (strcmp(op, "!=") == 0)
			*ok = c != 0;
		else if (strcmp(op, "<") == 0)
			*ok = c < 0;
		else if (strcmp(op, "<=") == 0)
			*ok = c <= 0;
		else if (strcmp(op, ">") == 0)
			*ok = c > 0;
		else
			*ok = c >= 0;
		return 0;
	}
	if (strcmp(op, "==") == 0 || strcmp(op, "!=") == 0) {
		bool eq = json_equal((json_t *)x, (json_t *)want);

		if (!eq && (json_is_number(x) || json_is_number(want)) && as_number(x, &a) &&
		    as_number(want, &b))
			eq = a == b;
		*ok = op[0] == '=' ? eq : !eq;
		return 0;
	}
	{
		int c;

		if ((json_is_number(x) || json_is_number(want)) && as_number(x, &a) &&
		    as_number(want, &b))
			c = a < b ? -1 : a > b ? 1 : 0;
		else if (json_is_string(x) && json_is_string(want))
			c = strcmp(json_string_value(x), json_string_value(want));
		else
			return -EINVAL;
		if (strcmp(op, "<") == 0)
			*ok = c < 0;
		else if (strcmp(op, "<=") == 0)
			*ok = c <= 0;
		else if (strcmp(op, ">") == 0)
			*ok = c > 0;
		else
			*ok = c >= 0;
	}
	return 0;
}

static void msg_set(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void msg_set(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!buf || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

int playbook_cond_eval(const json_t *cond, const json_t *facts, bool *ret_ok, char *msgbuf,
		       size_t len)
{
	struct playbook_facts f = {.json = facts};

	return pb_cond_eval(cond, facts ? &f : NULL, ret_ok, msgbuf, len);
}

int pb_cond_eval(const json_t *cond, const struct playbook_facts *facts, bool *ret_ok, char *msgbuf,
		 size_t len)
{
	const char *fact, *op, *quant, *custom;
	const json_t *want;
	json_t *sel = NULL, *paths = NULL, *e;
	char *wtext = NULL, details[512] = "";
	regex_t re;
	bool wildcard, have_re = false, ok = false;
	size_t i, nbad = 0, ngood = 0;
	int r = 0;

	if (pb_cond_check(cond, false, NULL, NULL, 0) < 0)
		return -EINVAL;
	fact = json_string_value(json_object_get(cond, "fact"));
	op = json_string_value(json_object_get(cond, "op"));
	want = json_object_get(cond, "value");
	quant = json_string_value(json_object_get(cond, "quantifier"));
	custom = json_string_value(json_object_get(cond, "message"));
	if (!quant)
		quant = "all";
	wildcard = strstr(fact, "[*]") != NULL;
	if (wildcard) {
		paths = json_array();
		if (!paths) {
			r = -ENOMEM;
			goto out;
		}
	}
	r = pb_facts_walk(facts, fact, paths, &sel);
	if (r == -ENOENT) {
		msg_set(msgbuf, len, "%s%sfact %s is missing", custom ? custom : "",
			custom ? ": " : "", fact);
		goto out;
	}
	if (r < 0)
		goto out;
	wtext = ry_json_value_text(want);
	if (!wtext) {
		r = -ENOMEM;
		goto out;
	}
	if (strncmp(op, "count", 5) == 0) {
		size_t n = json_is_array(sel)	 ? json_array_size(sel)
			   : json_is_object(sel) ? json_object_size(sel)
						 : (size_t)-1;
		json_int_t w = json_integer_value(want);

		if (n == (size_t)-1) {
			msg_set(msgbuf, len, "%s is not a list", fact);
			r = -EINVAL;
			goto out;
		}
		ok = op[5] == '='   ? (json_int_t)n == w
		     : op[5] == '>' ? (json_int_t)n >= w
				    : (json_int_t)n <= w;
		snprintf(details, sizeof(details), "got %zu", n);
	} else if (strcmp(op, "contains") == 0) {
		if (json_is_array(sel)) {
			json_array_foreach(sel, i, e)
			{
				bool eq = false;

				if (test_one(e, "==", want, NULL, &eq) == 0 && eq)
					ok = true;
			}
		} else if (json_is_string(sel) && json_is_string(want)) {
			ok = strstr(json_string_value(sel), json_string_value(want)) != NULL;
		}
		snprintf(details, sizeof(details), "not found");
	} else {
		size_t n = wildcard ? json_array_size(sel) : 1;
		size_t off = 0;

		if (strcmp(op, "matches") == 0) {
			if (regcomp(&re, json_string_value(want), REG_EXTENDED | REG_NOSUB) != 0) {
				r = -EINVAL;
				goto out;
			}
			have_re = true;
		}
		for (i = 0; i < n; i++) {
			const json_t *x = wildcard ? json_array_get(sel, i) : sel;
			bool one = false;

			r = test_one(x, op, want, have_re ? &re : NULL, &one);
			if (r == -ENOMEM)
				goto out;
			r = 0;
			if (one)
				ngood++;
			else
				nbad++;
			/* Name the values that make the condition fail. */
			if (one == (strcmp(quant, "none") == 0) && off < sizeof(details) - 1 &&
			    strcmp(quant, "any") != 0) {
				char *t = ry_json_value_text(x);

				off += (size_t)snprintf(
					details + off, sizeof(details) - off, "%s%s%s = %s",
					off ? ", " : "got ",
					wildcard ? json_string_value(json_array_get(paths, i))
						 : fact,
					"", t ? t : "?");
				free(t);
			}
		}
		if (strcmp(quant, "all") == 0)
			ok = nbad == 0;
		else if (strcmp(quant, "any") == 0)
			ok = ngood > 0;
		else
			ok = ngood == 0;
		if (strcmp(quant, "any") == 0)
			snprintf(details, sizeof(details), "no value matched out of %zu", n);
	}
	if (!ok) {
		if (custom)
			msg_set(msgbuf, len, "%s (%s %s %s: %s)", custom, fact, op, wtext, details);
		else
			msg_set(msgbuf, len, "%s%s%s %s %s failed: %s",
				strcmp(quant, "all") == 0 ? "" : quant,
				strcmp(quant, "all") == 0 ? "" : " ", fact, op, wtext, details);
	}
	*ret_ok = ok;
out:
	if (have_re)
		regfree(&re);
	free(wtext);
	json_decref(sel);
	json_decref(paths);
	return r;
}
