/* CPU accounting of benchmark runs (cpu.h): the thread's rusage and the host's /proc/stat
 * between two samples, as cores busy and CPU-seconds per GB. */
#include "nodeagent/bench/cpu.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define STAT_READ_MAX (64u << 10)
#define STAT_FIELDS   8 /* user nice system idle iowait irq softirq steal */

/* One decimal field at *p (spaces before it skipped); false at the end of the line. */
static int field(const char **p, const char *end, uint64_t *ret, bool *ret_have)
{
	const char *s = *p;
	uint64_t v = 0;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	*ret_have = false;
	if (s >= end || *s == '\n') {
		*p = s;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return -EINVAL;
	while (s < end && *s >= '0' && *s <= '9') {
		if (v > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*s - '0');
		s++;
	}
	if (s < end && *s != ' ' && *s != '\t' && *s != '\n')
		return -EINVAL;
	*p = s;
	*ret = v;
	*ret_have = true;
	return 0;
}

static int add(uint64_t *sum, uint64_t v)
{
	if (*sum > UINT64_MAX - v)
		return -ERANGE;
	*sum += v;
	return 0;
}

int bench_cpu_stat_parse(const char *text, size_t len, struct bench_cpu_host *ret)
{
	const char *p = text, *end = text + len, *nl;
	struct bench_cpu_host h = {0};
	bool found = false;
	int r;

	if (!text || !ret)
		return -EINVAL;
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		if (nl - p > 4 && memcmp(p, "cpu ", 4) == 0 && !found) {
			const char *q = p + 4;
			uint64_t v;
			bool have;
			int i;

			for (i = 0; i < STAT_FIELDS; i++) {
				if ((r = field(&q, nl, &v, &have)) < 0)
					return r;
				if (!have)
					break;
				/* 3: idle, 4: iowait; the rest is busy. */
				if ((r = add(i == 3 || i == 4 ? &h.idle : &h.busy, v)) < 0)
					return r;
			}
			if (i < 4)
				return -EINVAL;
			found = true;
		} else if (nl - p > 3 && memcmp(p, "cpu", 3) == 0 && p[3] >= '0' && p[3] <= '9') {
			h.ncpu++;
		}
		p = nl + 1;
	}
	if (!found)
		return -EINVAL;
	*ret = h;
	return 0;
}

static bool host_read(const char *path, struct bench_cpu_host *ret)
{
	char *buf;
	size_t have = 0;
	ssize_t n;
	int fd;
	bool ok = false;

	fd = open(path ? path : "/proc/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	buf = malloc(STAT_READ_MAX);
	if (buf) {
		while (have < STAT_READ_MAX && (n = read(fd, buf + have, STAT_READ_MAX - have)) > 0)
			have += (size_t)n;
		ok = bench_cpu_stat_parse(buf, have, ret) == 0;
		free(buf);
	}
	close(fd);
	return ok;
}

void bench_cpu_sample_take(struct bench_cpu_sample *ret, const char *path)
{
	struct timespec ts;
	struct rusage ru;

	memset(ret, 0, sizeof(*ret));
	if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0)
		ret->wall_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (getrusage(RUSAGE_THREAD, &ru) == 0) {
		ret->thread_ns =
			((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) *
				1000000000ull +
			((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
		ret->thread_ok = true;
	}
	ret->host_ok = host_read(path, &ret->host);
}

static double per_gb(double s, uint64_t bytes)
{
	return bytes > 0 && isfinite(s) ? s / ((double)bytes / 1e9) : NAN;
}

void bench_cpu_usage_compute(const struct bench_cpu_sample *a, const struct bench_cpu_sample *b,
			     uint64_t bytes, struct bench_cpu_usage *ret)
{
	struct bench_cpu_usage u = {.bytes = bytes,
				    .thread_s = NAN,
				    .thread_cores = NAN,
				    .thread_s_per_gb = NAN,
				    .host_cores = NAN,
				    .host_s = NAN,
				    .host_s_per_gb = NAN};

	u.seconds = b->wall_ns > a->wall_ns ? (double)(b->wall_ns - a->wall_ns) / 1e9 : 0;
	if (a->thread_ok && b->thread_ok && b->thread_ns >= a->thread_ns) {
		u.thread_s = (double)(b->thread_ns - a->thread_ns) / 1e9;
		if (u.seconds > 0)
			u.thread_cores = u.thread_s / u.seconds;
		u.thread_s_per_gb = per_gb(u.thread_s, bytes);
	}
	if (a->host_ok && b->host_ok) {
		u.ncpu = b->host.ncpu;
		/* Counters that went back (a reset, a wrap, a CPU unplugged) or did not move
		 * tell nothing: unknown rather than a huge or a divided-by-zero figure. */
		if (b->host.busy >= a->host.busy && b->host.idle >= a->host.idle &&
		    a->host.ncpu == b->host.ncpu && b->host.ncpu > 0) {
			uint64_t busy = b->host.busy - a->host.busy;
			uint64_t all = busy + (b->host.idle - a->host.idle);

			if (all > 0) {
				u.host_cores = (double)busy / (double)all * (double)b->host.ncpu;
				u.host_s = u.host_cores * u.seconds;
				u.host_s_per_gb = per_gb(u.host_s, bytes);
			}
		}
	}
	*ret = u;
}

static json_t *real_or_null(double d)
{
	return isfinite(d) ? json_real(d) : json_null();
}

json_t *bench_cpu_usage_json(const struct bench_cpu_usage *u)
{
	return json_pack("{s:f, s:I, s:i, s:o, s:o, s:o, s:o, s:o, s:o}", "seconds", u->seconds,
			 "bytes", (json_int_t)u->bytes, "ncpu", (int)u->ncpu, "thread_s",
			 real_or_null(u->thread_s), "thread_cores", real_or_null(u->thread_cores),
			 "thread_s_per_gb", real_or_null(u->thread_s_per_gb), "host_s",
			 real_or_null(u->host_s), "host_cores", real_or_null(u->host_cores),
			 "host_s_per_gb", real_or_null(u->host_s_per_gb));
}
