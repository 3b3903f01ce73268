/* The "host" memory backend of the benchmark engine: page-aligned heap buffers, and the data
 * pattern (a 64-bit mix of seed and word index) written and verified on the CPU. */
#include "nodeagent/bench/bench.h"

#include "common/util/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int host_alloc(void *st, size_t len, void **ret_buf)
{
	long page = sysconf(_SC_PAGESIZE);
	void *buf = NULL;
	int r;

	if (len == 0)
		return -EINVAL;
	r = posix_memalign(&buf, page > 0 ? (size_t)page : 4096, len);
	if (r != 0)
		return -r;
	memset(buf, 0, len);
	*ret_buf = buf;
	return 0;
}

static void host_free(void *st, void *buf, size_t len)
{
	(void)st;
	(void)len;
	free(buf);
}

/* splitmix64's finaliser: cheap and every input bit affects every output bit. */
static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static inline uint64_t word_of(uint64_t seed, uint64_t w)
{
	return mix(seed * 0x9e3779b97f4a7c15ull + w + 1);
}

void bench_pattern_fill(void *buf, size_t len, uint64_t seed)
{
	uint8_t *b = buf;
	size_t w, nw = len / 8;
	uint64_t x;

	for (w = 0; w < nw; w++) {
		x = word_of(seed, w);
		memcpy(b + w * 8, &x, 8);
	}
	if (len % 8) {
		x = word_of(seed, nw);
		memcpy(b + nw * 8, &x, len % 8);
	}
}

int bench_pattern_check(const void *buf, size_t len, uint64_t seed, size_t *ret_off)
{
	const uint8_t *b = buf;
	size_t w, i, nw = (len + 7) / 8, n;
	uint8_t want[8];
	uint64_t x;

	for (w = 0; w < nw; w++) {
		x = word_of(seed, w);
		memcpy(want, &x, 8);
		n = len - w * 8 < 8 ? len - w * 8 : 8;
		if (memcmp(b + w * 8, want, n) == 0)
			continue;
		for (i = 0; i < n && b[w * 8 + i] == want[i]; i++)
			;
		if (ret_off)
			*ret_off = w * 8 + i;
		return -RY_E_DATA_MISMATCH;
	}
	return 0;
}

static int host_fill(void *st, void *buf, size_t len, uint64_t seed)
{
	(void)st;
	bench_pattern_fill(buf, len, seed);
	return 0;
}

static int host_check(void *st, const void *buf, size_t len, uint64_t seed, size_t *ret_off)
{
	(void)st;
	return bench_pattern_check(buf, len, seed, ret_off);
}

static int host_validate(const char *arg, char *err)
{
	if (arg) {
		snprintf(err, BENCH_ERR_LEN, "host memory takes no argument (':%s')", arg);
		return -RY_E_INVALID;
	}
	return 0;
}

const struct bench_mem_ops bench_mem_host = {
	.name = "host",
	.device = false,
	.validate = host_validate,
	.alloc = host_alloc,
	.free = host_free,
	.fill = host_fill,
	.check = host_check,
};
