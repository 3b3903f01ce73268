/* A growable text buffer with a size limit (as curl's dynbuf): appends of bytes, strings and
 * printf-style text, always NUL-terminated, never past the max its owner chose. The first
 * failed append is remembered: later appends do nothing and return the same error, so a
 * writer of many pieces may check once, at ry_buf_take(). */
#ifndef RAILYARD_UTIL_BUF_H
#define RAILYARD_UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>

#define RY_BUF_WUR __attribute__((warn_unused_result))

/* Embedded by its user; the members are the buffer's own (read them through the functions).
 * A zeroed struct ry_buf is not ready: call ry_buf_init(). Not thread-safe. */
struct ry_buf {
	char *s;    /* NULL until the first append that adds a byte */
	size_t len; /* bytes held, without the NUL */
	size_t cap; /* bytes allocated */
	size_t max; /* most bytes len may reach */
	int err;    /* the first failure (sticky); 0 while none */
};

/* An empty buffer that will hold at most max bytes (> 0; the NUL is not counted). Allocates
 * nothing. */
void ry_buf_init(struct ry_buf *b, size_t max);

/* Append n bytes (which may hold NULs; p may be NULL when n is 0). 0, or (nothing appended,
 * and the buffer keeps what it held) -RY_E_TOO_BIG when len would pass max, -ENOMEM; after a
 * failure every append returns that first error without appending. A caller that checks
 * ry_buf_take() or ry_buf_error() at the end may ignore what each append returns. */
int ry_buf_addn(struct ry_buf *b, const void *p, size_t n);

/* Append the string s; as ry_buf_addn(). */
int ry_buf_add(struct ry_buf *b, const char *s);

/* Append printf-style text; as ry_buf_addn(), and -EINVAL when the format fails. */
int ry_buf_addf(struct ry_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int ry_buf_vaddf(struct ry_buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/* The text held (borrowed, valid until the next call that changes b): "" when empty. */
const char *ry_buf_str(const struct ry_buf *b);
size_t ry_buf_len(const struct ry_buf *b);

/* The first failure of an append, or 0. */
int ry_buf_error(const struct ry_buf *b);

/* Record a failure of the writer's own (a piece it could not make, err < 0) as if an append had
 * failed with err: the first failure wins. */
void ry_buf_fail(struct ry_buf *b, int err);

/* Forget the text and any failure; keeps the memory and the max. */
void ry_buf_reset(struct ry_buf *b);

/* Hand the text over: *ret is a NUL-terminated string (caller frees with free(); "" when
 * empty) and *ret_len (may be NULL) its length; b is empty again, with its max. When an append
 * had failed, that error is returned, the text is freed and *ret is not written. -ENOMEM. */
RY_BUF_WUR int ry_buf_take(struct ry_buf *b, char **ret, size_t *ret_len);

/* Free the text; b is empty again, with its max. Accepts NULL. */
void ry_buf_done(struct ry_buf *b);

#endif
