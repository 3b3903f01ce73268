/* Clocks, random bytes, hex encoding and duration parsing. */
#include "common/util/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
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

struct timespec util_mono_timespec(int64_t mono_ms)
{
	struct timespec ts = {.tv_sec = mono_ms / 1000, .tv_nsec = (mono_ms % 1000) * 1000000L};

	return ts;
}

int64_t util_now_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
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

int util_parse_hostport(const char *s, bool allow_zero, char *host, size_t hostlen,
			uint16_t *ret_port)
{
	const char *colon, *h = s, *p;
	unsigned long port = 0;
	size_t n;

	if (!s || !(colon = strrchr(s, ':')))
		return -EINVAL;
	n = (size_t)(colon - s);
	if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
		h++;
		n -= 2;
	} else if (memchr(s, ':', n)) {
		return -EINVAL; /* an IPv6 address needs brackets */
	}
	if (n == 0 || n >= hostlen)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (h[i] <= ' ' || h[i] >= 0x7f || h[i] == '[' || h[i] == ']' || h[i] == '/')
			return -EINVAL;
	p = colon + 1;
	if (!*p || strlen(p) > 5)
		return -EINVAL;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		port = port * 10 + (unsigned long)(*p - '0');
	}
	if (port > 65535 || (port == 0 && !allow_zero))
		return -EINVAL;
	memcpy(host, h, n);
	host[n] = '\0';
	*ret_port = (uint16_t)port;
	return 0;
}

bool util_hostport_ok(const char *s, bool allow_zero)
{
	char host[256];
	uint16_t port;

	return util_parse_hostport(s, allow_zero, host, sizeof(host), &port) == 0;
}

/* Length of the valid UTF-8 sequence at p (2..4), or 0. C1 controls (U+0080..U+009F) count
 * as invalid here: terminals act on them. */
static size_t utf8_seq(const unsigned char *p)
{
	size_t n;
	uint32_t cp;

	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
		cp = p[0] & 0x1f;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		cp = p[0] & 0x0f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		cp = p[0] & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f))
		return 0;
	return n;
}

static bool needs_escape(const unsigned char *p, size_t *ret_len)
{
	if (*p < 0x80) {
		*ret_len = 1;
		return *p < 0x20 || *p == 0x7f;
	}
	*ret_len = utf8_seq(p);
	if (*ret_len == 0) {
		*ret_len = 1;
		return true;
	}
	return false;
}

bool util_has_control(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	for (; p && *p; p += n)
		if (needs_escape(p, &n))
			return true;
	return false;
}

char *util_escape(const char *s, bool keep_newlines)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t len = strlen((const char *)p), o = 0, n;
	char *out = malloc(4 * len + 1); /* every byte may become \xNN */

	if (!out)
		return NULL;
	for (; *p; p += n) {
		if (!needs_escape(p, &n) || (*p == '\n' && keep_newlines)) {
			memcpy(out + o, p, n);
			o += n;
		} else if (*p == '\n' || *p == '\r' || *p == '\t') {
			out[o++] = '\\';
			out[o++] = *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't';
		} else {
			o += (size_t)sprintf(out + o, "\\x%02x", *p);
		}
	}
	out[o] = '\0';
	return out;
}

int util_fprintf_safe(FILE *f, const char *fmt, ...)
{
	char *text = NULL, *safe;
	bool nl;
	va_list ap;
	int n, r;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	nl = n > 0 && text[n - 1] == '\n';
	if (nl)
		text[n - 1] = '\0';
	safe = util_escape(text, false);
	free(text);
	if (!safe)
		return -1;
	r = fputs(safe, f);
	if (r >= 0 && nl)
		r = fputc('\n', f);
	free(safe);
	return r < 0 ? -1 : 0;
}

uint32_t util_crc32(uint32_t crc, const void *data, size_t len)
{
	const unsigned char *p = data;

	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
	}
	return ~crc;
}

void util_print_options(FILE *f, const char *synopsis, const struct util_option_help *tab, size_t n)
{
	const char *p = synopsis;

	while ((p = strstr(p, "--"))) {
		size_t len = strspn(p + 2, "abcdefghijklmnopqrstuvwxyz-") + 2;
		const char *dup = NULL;

		for (const char *q = synopsis; q < p && !dup; q++)
			if (strncmp(q, p, len) == 0 && !(q[len] >= 'a' && q[len] <= 'z') &&
			    q[len] != '-')
				dup = q;
		for (size_t i = 0; !dup && i < n; i++)
			if (strlen(tab[i].flag) == len && strncmp(p, tab[i].flag, len) == 0)
				fprintf(f, "  %-18s %s\n", tab[i].flag, tab[i].help);
		p += len;
	}
}

int util_natcmp(const char *a, const char *b)
{
	if (!a || !b)
		return a ? 1 : b ? -1 : 0;
	while (*a && *b) {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			const char *x = a, *y = b;
			size_t nx, ny;
			int c;

			while (*x == '0' && isdigit((unsigned char)x[1]))
				x++;
			while (*y == '0' && isdigit((unsigned char)y[1]))
				y++;
			for (nx = 0; isdigit((unsigned char)x[nx]); nx++)
				;
			for (ny = 0; isdigit((unsigned char)y[ny]); ny++)
				;
			if (nx != ny)
				return nx < ny ? -1 : 1;
			if ((c = memcmp(x, y, nx)) != 0)
				return c;
			/* Equal numbers: the one spelled with fewer leading zeros first. */
			if (x - a != y - b)
				return x - a < y - b ? -1 : 1;
			a = x + nx;
			b = y + ny;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	return *a ? 1 : *b ? -1 : 0;
}
