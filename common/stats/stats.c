/* Benchmark statistics: exact samples up to a bound, an HDR-style log-linear histogram beyond,
 * Welford mean/variance in double, nearest-rank percentiles, bandwidth and interval series. */
#include "common/stats/stats.h"

#include "common/util/error.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HIST_SUB   (1u << (STATS_HIST_BITS - 1)) /* buckets per power of two above 2^BITS */
#define HIST_EXACT (1u << STATS_HIST_BITS)
#define HIST_N	   (HIST_EXACT + (64 - STATS_HIST_BITS) * HIST_SUB)

struct stats_lat {
	uint64_t *samples;
	size_t n_samples, cap_samples, max_samples;
	uint64_t *hist; /* HIST_N counts, allocated when the sample bound is first exceeded */
	uint64_t count;
	uint64_t min, max;
	double mean, m2; /* Welford */
};

size_t stats_hist_buckets(void)
{
	return HIST_N;
}

size_t stats_hist_index(uint64_t v)
{
	int msb, shift;

	if (v < HIST_EXACT)
		return (size_t)v;
	msb = 63 - __builtin_clzll(v);
	shift = msb - (STATS_HIST_BITS - 1); /* >= 1; v >> shift is in [HIST_SUB, 2*HIST_SUB) */
	return HIST_EXACT + (size_t)(shift - 1) * HIST_SUB + (size_t)((v >> shift) - HIST_SUB);
}

uint64_t stats_hist_value(size_t idx)
{
	size_t shift, m;

	if (idx < HIST_EXACT)
		return idx;
	if (idx >= HIST_N)
		return UINT64_MAX;
	shift = (idx - HIST_EXACT) / HIST_SUB + 1;
	m = (idx - HIST_EXACT) % HIST_SUB + HIST_SUB;
	/* Midpoint of [m << shift, (m + 1) << shift). */
	return ((uint64_t)m << shift) + ((uint64_t)1 << (shift - 1));
}

int stats_lat_new(size_t max_samples, struct stats_lat **ret_s)
{
	struct stats_lat *s;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->max_samples = max_samples ? max_samples : STATS_SAMPLES_DEFAULT;
	s->min = UINT64_MAX;
	*ret_s = s;
	return 0;
}

void stats_lat_free(struct stats_lat *s)
{
	if (!s)
		return;
	free(s->samples);
	free(s->hist);
	free(s);
}

uint64_t stats_lat_count(const struct stats_lat *s)
{
	return s->count;
}

static int hist_start(struct stats_lat *s)
{
	size_t i;

	s->hist = calloc(HIST_N, sizeof(*s->hist));
	if (!s->hist)
		return -ENOMEM;
	for (i = 0; i < s->n_samples; i++)
		s->hist[stats_hist_index(s->samples[i])]++;
	free(s->samples);
	s->samples = NULL;
	s->n_samples = 0;
	s->cap_samples = 0;
	return 0;
}

int stats_lat_add(struct stats_lat *s, uint64_t ns)
{
	double delta;
	int r;

	if (ns == 0)
		return -RY_E_CLOCK;
	if (!s->hist && s->n_samples == s->max_samples) {
		r = hist_start(s);
		if (r < 0)
			return r;
	}
	if (s->hist) {
		s->hist[stats_hist_index(ns)]++;
	} else {
		/* Grow geometrically, never beyond the bound. */
		if (s->n_samples == s->cap_samples) {
			size_t cap = s->cap_samples ? s->cap_samples * 2 : 1024;
			uint64_t *n;

			if (cap > s->max_samples)
				cap = s->max_samples;
			n = realloc(s->samples, cap * sizeof(*n));
			if (!n)
				return -ENOMEM;
			s->samples = n;
			s->cap_samples = cap;
		}
		s->samples[s->n_samples++] = ns;
	}
	s->count++;
	if (ns < s->min)
		s->min = ns;
	if (ns > s->max)
		s->max = ns;
	delta = (double)ns - s->mean;
	s->mean += delta / (double)s->count;
	s->m2 += delta * ((double)ns - s->mean);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* 1-based nearest rank of pct over n samples. */
static uint64_t rank_of(uint64_t n, double pct)
{
	double r = ceil(pct / 100.0 * (double)n);

	if (r < 1)
		return 1;
	if (r > (double)n)
		return n;
	return (uint64_t)r;
}

uint64_t stats_percentile_sorted(const uint64_t *sorted, size_t n, double pct)
{
	return sorted[rank_of(n, pct) - 1];
}

static uint64_t hist_percentile(const struct stats_lat *s, double pct)
{
	uint64_t rank = rank_of(s->count, pct), cum = 0, v;
	size_t i;

	for (i = 0; i < HIST_N; i++) {
		cum += s->hist[i];
		if (cum >= rank)
			break;
	}
	v = stats_hist_value(i);
	/* The extremes are known exactly; a midpoint never lies outside them. */
	if (v < s->min)
		v = s->min;
	if (v > s->max)
		v = s->max;
	return v;
}

int stats_lat_summary(struct stats_lat *s, double scale, struct stats_lat_summary *ret_sum)
{
	static const double pcts[] = {50, 90, 99, 99.9};
	struct stats_lat_summary sum = {0};
	double pv[4];
	size_t i;

	if (s->count == 0)
		return -ENODATA;
	if (!s->hist)
		qsort(s->samples, s->n_samples, sizeof(*s->samples), cmp_u64);
	for (i = 0; i < 4; i++)
		pv[i] = (double)(s->hist ? hist_percentile(s, pcts[i])
					 : stats_percentile_sorted(s->samples, s->n_samples,
								   pcts[i]));
	sum.count = s->count;
	sum.min = (double)s->min * scale;
	sum.max = (double)s->max * scale;
	sum.p50 = pv[0] * scale;
	sum.p90 = pv[1] * scale;
	sum.p99 = pv[2] * scale;
	sum.p999 = pv[3] * scale;
	sum.mean = s->mean * scale;
	sum.stddev = sqrt(s->m2 / (double)s->count) * scale;
	sum.approximate = s->hist != NULL;
	*ret_sum = sum;
	return 0;
}

int stats_bw_compute(uint64_t bytes, uint64_t msgs, uint64_t ns, struct stats_bw *ret_bw)
{
	struct stats_bw bw = {.bytes = bytes, .msgs = msgs};

	if (ns == 0)
		return -RY_E_CLOCK;
	bw.seconds = (double)ns / 1e9;
	bw.gbps = (double)bytes * 8.0 / (double)ns; /* bits per ns = Gb/s */
	bw.mbps = (double)bytes / 1048576.0 / bw.seconds;
	bw.msg_rate = (double)msgs / bw.seconds;
	*ret_bw = bw;
	return 0;
}

int stats_series_add(struct stats_series *s, uint64_t t_ns, uint64_t dt_ns, uint64_t bytes,
		     uint64_t msgs)
{
	if (dt_ns == 0)
		return -RY_E_CLOCK;
	if (s->n == STATS_INTERVALS_MAX) {
		s->truncated = true;
		return 0;
	}
	s->v[s->n].t_s = (double)t_ns / 1e9;
	s->v[s->n].gbps = (double)bytes * 8.0 / (double)dt_ns;
	s->v[s->n].msg_rate = (double)msgs * 1e9 / (double)dt_ns;
	s->n++;
	return 0;
}
