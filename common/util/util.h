/* Small helpers: clocks, random bytes, hex. */
#ifndef RAILYARD_UTIL_H
#define RAILYARD_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define RY_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Milliseconds of CLOCK_MONOTONIC / CLOCK_REALTIME. */
int64_t util_now_mono_ms(void);
int64_t util_now_mono_us(void);
int64_t util_now_unix_ms(void);
/* The CLOCK_MONOTONIC time mono_ms as a timespec: the deadline of a pthread_cond_timedwait() on
 * a condition variable whose clock is CLOCK_MONOTONIC. */
struct timespec util_mono_timespec(int64_t mono_ms);

/* Fill buf with cryptographically random bytes (getrandom). 0 or -errno. */
__attribute__((warn_unused_result)) int util_random_bytes(void *buf, size_t len);

/* Lower-case hex of len bytes into out (2*len+1 bytes, NUL-terminated). */
void util_hex(const void *data, size_t len, char *out);

/* Parse a duration "250ms", "90s", "15m", "1h", "7d" or plain seconds into milliseconds.
 * -EINVAL if malformed, negative or overflowing. */
__attribute__((warn_unused_result)) int util_parse_duration_ms(const char *s, int64_t *ret_ms);

/* Split "HOST:PORT" or "[V6]:PORT" into host (NUL-terminated, brackets removed, at most
 * hostlen - 1 bytes) and port. The port is decimal, 1-65535 (0 too when allow_zero: "pick a
 * free one"); the host is non-empty and printable without spaces. -EINVAL otherwise; nothing
 * is written then. */
__attribute__((warn_unused_result)) int
util_parse_hostport(const char *s, bool allow_zero, char *host, size_t hostlen, uint16_t *ret_port);

/* Is s "HOST:PORT" as util_parse_hostport() takes it? */
bool util_hostport_ok(const char *s, bool allow_zero);

/* A copy of s that is safe to print on a terminal or in a line-oriented log: control characters
 * (C0, DEL, C1) and bytes that are not valid UTF-8 become escapes (\n, \r, \t, \xNN); with
 * keep_newlines, '\n' stays (multi-line text such as diffs). Caller frees; NULL when out of
 * memory. Thread-safe. */
char *util_escape(const char *s, bool keep_newlines);

/* Does s hold a byte that util_escape() would escape (with keep_newlines false)? */
bool util_has_control(const char *s);

/* printf to f with the formatted text passed through util_escape() (a final '\n' is kept):
 * human output that shows values from outside (host names, facts, messages from nodes) can
 * neither move the cursor nor forge a line. Returns what fputs() returns, or -1. */
int util_fprintf_safe(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A flag and what it means, for a command's --help. */
struct util_option_help {
	const char *flag; /* "--state-dir" */
	const char *help; /* one line */
};

/* A line "  --flag   help" on f for each option a command's synopsis names, once, in the
 * synopsis's order, from tab (n entries): the command lines' one vocabulary. */
void util_print_options(FILE *f, const char *synopsis, const struct util_option_help *tab,
			size_t n);

/* Natural order of two strings (strcmp's sign): runs of digits compare as numbers, so that
 * gpu-node-2 sorts before gpu-node-10 and 02 beside 2 (the shorter run first when equal);
 * everything else bytewise. NULL sorts first. */
int util_natcmp(const char *a, const char *b);

/* CRC-32 (IEEE 802.3, as zlib's crc32()) of len bytes, continuing from crc (0 to start). */
uint32_t util_crc32(uint32_t crc, const void *data, size_t len);

#endif
