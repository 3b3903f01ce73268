/* The growable text buffer of buf.h: doubling growth from 64 bytes, bounded by the owner's
 * max, with a sticky first error. */
#include "common/util/buf.h"

#include "common/util/error.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_MIN 64

void ry_buf_init(struct ry_buf *b, size_t max)
{
	*b = (struct ry_buf){.max = max};
}

/* Room for n more bytes and the NUL. */
static int reserve(struct ry_buf *b, size_t n)
{
	size_t need, cap;
	char *p;

	/* len <= max always; need overflows only when max is SIZE_MAX. */
	if (n > b->max - b->len || b->len + n == SIZE_MAX)
		return -RY_E_TOO_BIG;
	need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : BUF_MIN;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	/* Never more than the most the buffer may hold. */
	if (b->max < SIZE_MAX && cap > b->max + 1)
		cap = b->max + 1;
	p = realloc(b->s, cap);
	if (!p)
		return -ENOMEM;
	b->s = p;
	b->cap = cap;
	return 0;
}

int ry_buf_addn(struct ry_buf *b, const void *p, size_t n)
{
	int r;

	if (b->err)
		return b->err;
	if (n == 0)
		return 0;
	r = reserve(b, n);
	if (r < 0) {
		b->err = r;
		return r;
	}
	memcpy(b->s + b->len, p, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

int ry_buf_add(struct ry_buf *b, const char *s)
{
	return ry_buf_addn(b, s, strlen(s));
}

int ry_buf_vaddf(struct ry_buf *b, const char *fmt, va_list ap)
{
	va_list aq;
	int n, r;

	if (b->err)
		return b->err;
	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0) {
		b->err = -EINVAL;
		return b->err;
	}
	if (n == 0)
		return 0;
	r = reserve(b, (size_t)n);
	if (r < 0) {
		b->err = r;
		return r;
	}
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int ry_buf_addf(struct ry_buf *b, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = ry_buf_vaddf(b, fmt, ap);
	va_end(ap);
	return r;
}

const char *ry_buf_str(const struct ry_buf *b)
{
	return b->s ? b->s : "";
}

size_t ry_buf_len(const struct ry_buf *b)
{
	return b->len;
}

int ry_buf_error(const struct ry_buf *b)
{
	return b->err;
}

void ry_buf_fail(struct ry_buf *b, int err)
{
	if (!b->err && err < 0)
		b->err = err;
}

void ry_buf_reset(struct ry_buf *b)
{
	b->len = 0;
	b->err = 0;
	if (b->s)
		b->s[0] = '\0';
}

int ry_buf_take(struct ry_buf *b, char **ret, size_t *ret_len)
{
	size_t len = b->len;
	char *s;
	int r = b->err;

	if (r < 0) {
		ry_buf_done(b);
		return r;
	}
	s = b->s ? b->s : strdup("");
	if (!s)
		return -ENOMEM;
	*b = (struct ry_buf){.max = b->max};
	*ret = s;
	if (ret_len)
		*ret_len = len;
	return 0;
}

void ry_buf_done(struct ry_buf *b)
{
	if (!b)
		return;
	free(b->s);
	*b = (struct ry_buf){.max = b->max};
}
