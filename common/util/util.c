/* Clocks, random bytes, hex encoding and duration parsing. */
#include "common/util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

int64_t util_now_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t util_now_unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int util_random_bytes(void *buf, size_t len)
{
	unsigned char *p = buf;

	while (len > 0) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

void util_hex(const void *data, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 0xf];
	}
	out[2 * len] = '\0';
}

int util_parse_duration_ms(const char *s, int64_t *ret_ms)
{
	char *end;
	long long v;
	int64_t mult;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	if (strcmp(end, "ms") == 0)
		mult = 1;
	else if (*end == '\0' || strcmp(end, "s") == 0)
		mult = 1000;
	else if (strcmp(end, "m") == 0)
		mult = 60 * 1000;
	else if (strcmp(end, "h") == 0)
		mult = 3600 * 1000;
	else if (strcmp(end, "d") == 0)
		mult = 86400 * 1000;
	else
		return -EINVAL;
	if (v < 0 || v > INT64_MAX / mult)
		return -EINVAL;
	*ret_ms = (int64_t)v * mult;
	return 0;
}
