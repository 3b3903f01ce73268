/* Small helpers: clocks, random bytes, hex. */
#ifndef RAILYARD_UTIL_H
#define RAILYARD_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define RY_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Milliseconds of CLOCK_MONOTONIC / CLOCK_REALTIME. */
int64_t util_now_mono_ms(void);
int64_t util_now_unix_ms(void);

/* Fill buf with cryptographically random bytes (getrandom). 0 or -errno. */
__attribute__((warn_unused_result)) int util_random_bytes(void *buf, size_t len);

/* Lower-case hex of len bytes into out (2*len+1 bytes, NUL-terminated). */
void util_hex(const void *data, size_t len, char *out);

/* Parse a duration "250ms", "90s", "15m", "1h", "7d" or plain seconds into milliseconds.
 * -EINVAL if malformed, negative or overflowing. */
__attribute__((warn_unused_result)) int util_parse_duration_ms(const char *s, int64_t *ret_ms);

#endif
