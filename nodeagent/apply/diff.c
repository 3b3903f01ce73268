/* Line-based unified diff for check mode: common prefix/suffix trimmed, LCS on the middle
 * (bounded table), hunks with 3 lines of context in GNU diff format. */
#include "nodeagent/apply/apply.h"
#include "nodeagent/apply/apply_int.h"

#include "common/util/error.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CONTEXT	      3
#define LCS_MAX_CELLS (2u * 1024 * 1024)

struct line {
	const char *s;
	size_t len; /* including the newline, if any */
};

struct edit {
	char op;     /* ' ', '-', '+' */
	size_t a, b; /* line index in a (for ' ', '-') and b (for ' ', '+') */
};

static int split_lines(const char *s, size_t len, struct line **ret, size_t *ret_n)
{
	size_t n = 0, k = 0;
	struct line *v;

	for (size_t i = 0; i < len; i++)
		if (s[i] == '\n')
			n++;
	if (len > 0 && s[len - 1] != '\n')
		n++;
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0, start = 0; i < len; i++) {
		if (s[i] == '\n' || i == len - 1) {
			v[k].s = s + start;
			v[k].len = i + 1 - start;
			k++;
			start = i + 1;
		}
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static bool line_eq(const struct line *x, const struct line *y)
{
	return x->len == y->len && memcmp(x->s, y->s, x->len) == 0;
}

/* Edit script of a[lo_a..hi_a) -> b[lo_b..hi_b): LCS when the table fits, else all '-' then
 * all '+'. Appends to e (room for (hi_a-lo_a)+(hi_b-lo_b) entries). */
static int middle_edits(const struct line *a, size_t lo_a, size_t hi_a, const struct line *b,
			size_t lo_b, size_t hi_b, struct edit *e, size_t *ne)
{
	size_t n = hi_a - lo_a, m = hi_b - lo_b, i = 0, j = 0;
	uint32_t *t;

	if (n == 0 || m == 0 || (n + 1) > LCS_MAX_CELLS / (m + 1)) {
		for (size_t k = lo_a; k < hi_a; k++)
			e[(*ne)++] = (struct edit){'-', k, lo_b};
		for (size_t k = lo_b; k < hi_b; k++)
			e[(*ne)++] = (struct edit){'+', hi_a, k};
		return 0;
	}
	/* t[i][j] = LCS length of a[lo_a+i..) and b[lo_b+j..) */
	t = calloc((n + 1) * (m + 1), sizeof(*t));
	if (!t)
		return -ENOMEM;
#define T(i, j) t[(i) * (m + 1) + (j)]
	for (size_t ii = n; ii-- > 0;)
		for (size_t jj = m; jj-- > 0;)
			T(ii, jj) = line_eq(&a[lo_a + ii], &b[lo_b + jj])
					    ? T(ii + 1, jj + 1) + 1
					    : (T(ii + 1, jj) >= T(ii, jj + 1) ? T(ii + 1, jj)
									      : T(ii, jj + 1));
	while (i < n || j < m) {
		if (i < n && j < m && line_eq(&a[lo_a + i], &b[lo_b + j])) {
			e[(*ne)++] = (struct edit){' ', lo_a + i, lo_b + j};
			i++;
			j++;
		} else if (j == m || (i < n && T(i + 1, j) >= T(i, j + 1))) {
			e[(*ne)++] = (struct edit){'-', lo_a + i, lo_b + j};
			i++;
		} else {
			e[(*ne)++] = (struct edit){'+', lo_a + i, lo_b + j};
			j++;
		}
	}
#undef T
	free(t);
	return 0;
}

static void emit_line(struct apply_buf *o, char op, const struct line *l)
{
	apply_buf_putc(o, op);
	apply_buf_append(o, l->s, l->len);
	if (l->len == 0 || l->s[l->len - 1] != '\n')
		apply_buf_puts(o, "\n\\ No newline at end of file\n");
}

static void emit_range(struct apply_buf *o, char sign, size_t before, size_t len)
{
	size_t start = len ? before + 1 : before;

	if (len == 1)
		apply_buf_printf(o, "%c%zu", sign, start);
	else
		apply_buf_printf(o, "%c%zu,%zu", sign, start, len);
}

int apply_diff_unified(const char *a, size_t alen, const char *b, size_t blen, const char *label_a,
		       const char *label_b, char **ret_diff)
{
	struct line *la = NULL, *lb = NULL;
	struct edit *e = NULL;
	struct apply_buf o = {0};
	size_t na, nb, pre = 0, suf = 0, ne = 0, seen = 0, a_seen = 0, b_seen = 0;
	int r;

	if (alen > APPLY_FILE_MAX || blen > APPLY_FILE_MAX)
		return -RY_E_TOO_BIG;
	if (alen == blen && memcmp(a, b, alen) == 0) {
		char *s = strdup("");

		if (!s)
			return -ENOMEM;
		*ret_diff = s;
		return 0;
	}
	r = split_lines(a, alen, &la, &na);
	if (r < 0)
		goto out;
	r = split_lines(b, blen, &lb, &nb);
	if (r < 0)
		goto out;
	while (pre < na && pre < nb && line_eq(&la[pre], &lb[pre]))
		pre++;
	while (suf < na - pre && suf < nb - pre && line_eq(&la[na - 1 - suf], &lb[nb - 1 - suf]))
		suf++;
	e = calloc(na + nb + 1, sizeof(*e));
	if (!e) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < pre; k++)
		e[ne++] = (struct edit){' ', k, k};
	r = middle_edits(la, pre, na - suf, lb, pre, nb - suf, e, &ne);
	if (r < 0)
		goto out;
	for (size_t k = 0; k < suf; k++)
		e[ne++] = (struct edit){' ', na - suf + k, nb - suf + k};

	apply_buf_printf(&o, "--- %s\n+++ %s\n", label_a, label_b);
	for (size_t k = 0; k < ne;) {
		size_t first, last, a_before = 0, b_before = 0, a_len = 0, b_len = 0;

		if (e[k].op == ' ') {
			k++;
			continue;
		}
		/* Hunk: from this change, extend while the next change is within 2*CONTEXT. */
		first = k > CONTEXT ? k - CONTEXT : 0;
		last = k;
		for (size_t q = k + 1; q < ne; q++) {
			if (e[q].op == ' ')
				continue;
			if (q - last > 2 * CONTEXT)
				break;
			last = q;
		}
		last = last + CONTEXT < ne - 1 ? last + CONTEXT : ne - 1;
		for (; seen < first; seen++) { /* hunks only move forward: O(ne) overall */
			a_seen += e[seen].op != '+';
			b_seen += e[seen].op != '-';
		}
		a_before = a_seen;
		b_before = b_seen;
		for (size_t q = first; q <= last; q++) {
			a_len += e[q].op != '+';
			b_len += e[q].op != '-';
		}
		apply_buf_puts(&o, "@@ ");
		emit_range(&o, '-', a_before, a_len);
		apply_buf_putc(&o, ' ');
		emit_range(&o, '+', b_before, b_len);
		apply_buf_puts(&o, " @@\n");
		for (size_t q = first; q <= last; q++)
			emit_line(&o, e[q].op, e[q].op == '+' ? &lb[e[q].b] : &la[e[q].a]);
		k = last + 1;
	}
	r = apply_buf_take(&o, ret_diff);
out:
	apply_buf_done(&o);
	free(e);
	free(la);
	free(lb);
	return r;
}
