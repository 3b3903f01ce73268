/* Debian version comparison (dpkg's verrevcmp over epoch, upstream version and revision) and
 * version constraints ("OP VERSION") used by the package and assert executors. */
#include "nodeagent/apply/apply.h"

#include "common/util/error.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* dpkg's character order: '~' before everything (even the end), then the end and digits,
 * then letters, then the other characters. */
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

static int verrevcmp(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t i = 0, j = 0;

	while (i < alen || j < blen) {
		int first_diff = 0;

		while ((i < alen && !isdigit((unsigned char)a[i])) ||
		       (j < blen && !isdigit((unsigned char)b[j]))) {
			int ac = i < alen ? order((unsigned char)a[i]) : 0;
			int bc = j < blen ? order((unsigned char)b[j]) : 0;

			if (ac != bc)
				return ac - bc;
			i++;
			j++;
		}
		while (i < alen && a[i] == '0')
			i++;
		while (j < blen && b[j] == '0')
			j++;
		while (i < alen && isdigit((unsigned char)a[i]) && j < blen &&
		       isdigit((unsigned char)b[j])) {
			if (!first_diff)
				first_diff = a[i] - b[j];
			i++;
			j++;
		}
		if (i < alen && isdigit((unsigned char)a[i]))
			return 1;
		if (j < blen && isdigit((unsigned char)b[j]))
			return -1;
		if (first_diff)
			return first_diff;
	}
	return 0;
}

struct dver {
	unsigned long epoch;
	const char *up;
	size_t uplen;
	const char *rev;
	size_t revlen;
};

static void split(const char *s, struct dver *v)
{
	const char *colon = strchr(s, ':'), *dash;
	bool digits = colon && colon > s;

	for (const char *p = s; digits && p < colon; p++)
		if (!isdigit((unsigned char)*p))
			digits = false;
	v->epoch = 0;
	if (digits) {
		v->epoch = strtoul(s, NULL, 10);
		s = colon + 1;
	}
	dash = strrchr(s, '-');
	v->up = s;
	if (dash) {
		v->uplen = (size_t)(dash - s);
		v->rev = dash + 1;
		v->revlen = strlen(dash + 1);
	} else {
		v->uplen = strlen(s);
		v->rev = "";
		v->revlen = 0;
	}
}

int apply_dpkg_version_compare(const char *a, const char *b)
{
	struct dver va, vb;
	int r;

	while (isspace((unsigned char)*a))
		a++;
	while (isspace((unsigned char)*b))
		b++;
	split(a, &va);
	split(b, &vb);
	if (va.epoch != vb.epoch)
		return va.epoch < vb.epoch ? -1 : 1;
	r = verrevcmp(va.up, va.uplen, vb.up, vb.uplen);
	if (r)
		return r < 0 ? -1 : 1;
	r = verrevcmp(va.rev, va.revlen, vb.rev, vb.revlen);
	return r < 0 ? -1 : r > 0 ? 1 : 0;
}

int apply_version_satisfies(const char *version, const char *constraint)
{
	static const struct {
		const char *op;
		int lt, eq, gt; /* accepted outcomes */
	} ops[] = {
		{">=", 0, 1, 1}, {"<=", 1, 1, 0}, {">>", 0, 0, 1}, {"<<", 1, 0, 0}, {"==", 0, 1, 0},
		{"!=", 1, 0, 1}, {">", 0, 0, 1},  {"<", 1, 0, 0},  {"=", 0, 1, 0},
	};
	const char *p = constraint;
	int c;

	while (isspace((unsigned char)*p))
		p++;
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		size_t n = strlen(ops[k].op);

		if (strncmp(p, ops[k].op, n) != 0)
			continue;
		p += n;
		while (isspace((unsigned char)*p))
			p++;
		if (!*p || strchr(p, ' '))
			return -RY_E_INVALID;
		c = apply_dpkg_version_compare(version, p);
		return c < 0 ? ops[k].lt : c == 0 ? ops[k].eq : ops[k].gt;
	}
	if (!*p || strchr(p, ' ') || !isalnum((unsigned char)*p))
		return -RY_E_INVALID;
	return apply_dpkg_version_compare(version, p) == 0;
}
