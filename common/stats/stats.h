/* Benchmark statistics: latency samples (kept exactly up to a bound, then an HDR-style
 * log-linear histogram), percentiles, mean/stddev in double, bandwidth and interval series.
 * Percentiles use the nearest-rank definition: p-th percentile of n sorted samples is the
 * sample of rank ceil(p/100 * n) (1-based; rank 1 for p = 0). */
#ifndef RAILYARD_STATS_H
#define RAILYARD_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STATS_WUR __attribute__((warn_unused_result))

/* Histogram precision: values below 2^STATS_HIST_BITS ns are exact; above, each power of two
 * is split into 2^(STATS_HIST_BITS-1) equal buckets and a bucket reports its midpoint, so the
 * relative error of a reported percentile is at most 2^-STATS_HIST_BITS (0.098 %). */
#define STATS_HIST_BITS	      10
#define STATS_SAMPLES_DEFAULT (1u << 22) /* 4 Mi samples (32 MiB) kept exactly by default */
#define STATS_INTERVALS_MAX   4096	 /* interval samples kept per series */

struct stats_lat;

struct stats_lat_summary {
	uint64_t count;
	double min, p50, p90, p99, p999, max; /* in the sample unit times scale */
	double mean, stddev;		      /* population stddev (divide by n) */
	bool approximate;		      /* percentiles came from the histogram */
};

/* New latency accumulator keeping up to max_samples exactly (0: STATS_SAMPLES_DEFAULT);
 * beyond that every sample goes to the histogram only. Caller frees with stats_lat_free().
 * -ENOMEM. Not thread-safe (one writer). */
STATS_WUR int stats_lat_new(size_t max_samples, struct stats_lat **ret_s);
void stats_lat_free(struct stats_lat *s);

/* Add one sample (ns). A zero sample means the clock did not advance: -RY_E_CLOCK, not added. */
STATS_WUR int stats_lat_add(struct stats_lat *s, uint64_t ns);

uint64_t stats_lat_count(const struct stats_lat *s);

/* Summarise; every value is multiplied by scale (e.g. 0.5e-3 for one-way microseconds from
 * round-trip ns). Sorts the kept samples (O(n log n)). -ENODATA when empty. */
STATS_WUR int stats_lat_summary(struct stats_lat *s, double scale,
				struct stats_lat_summary *ret_sum);

/* Nearest-rank percentile of sorted[0..n) (n > 0, pct 0..100). */
uint64_t stats_percentile_sorted(const uint64_t *sorted, size_t n, double pct);

/* Histogram bucket of v and the value a bucket reports (its midpoint; exact below
 * 2^STATS_HIST_BITS). Exposed for tests. */
size_t stats_hist_index(uint64_t v);
uint64_t stats_hist_value(size_t idx);
size_t stats_hist_buckets(void);

/* Bandwidth of bytes/msgs moved in ns nanoseconds. ns == 0: -RY_E_CLOCK. */
struct stats_bw {
	uint64_t bytes, msgs;
	double seconds;
	double gbps;	 /* 1e9 bits per second */
	double mbps;	 /* MB/sec with MB = 2^20 bytes, as perftest prints */
	double msg_rate; /* messages per second */
};
STATS_WUR int stats_bw_compute(uint64_t bytes, uint64_t msgs, uint64_t ns, struct stats_bw *ret_bw);

/* Interval series: one sample per interval of bytes/messages completed. */
struct stats_interval {
	double t_s; /* end of the interval, seconds from the start of the measurement */
	double gbps;
	double msg_rate;
};
struct stats_series {
	struct stats_interval v[STATS_INTERVALS_MAX];
	size_t n;
	bool truncated; /* more intervals than STATS_INTERVALS_MAX */
};
/* Append an interval ending at t_ns (from start) covering dt_ns. dt_ns == 0: -RY_E_CLOCK. */
STATS_WUR int stats_series_add(struct stats_series *s, uint64_t t_ns, uint64_t dt_ns,
			       uint64_t bytes, uint64_t msgs);

#endif
