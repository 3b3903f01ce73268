/* A latency histogram for Prometheus: fixed buckets from 100 us to 2.5 s, relaxed atomics, so
 * that any thread may add while another writes it out. */
#ifndef RAILYARD_UTIL_HIST_H
#define RAILYARD_UTIL_HIST_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#define RY_HIST_BUCKETS 13

struct ry_hist {
	atomic_uint_fast64_t bucket[RY_HIST_BUCKETS + 1]; /* the last one: above every bound */
	atomic_uint_fast64_t sum_us;
};

/* Count one duration (negative counts as 0). Thread-safe. */
void ry_hist_add(struct ry_hist *h, int64_t dur_us);
/* NAME_bucket{LABELS,le="…"}, NAME_sum and NAME_count lines (labels: "" or `k="v",…`, already
 * escaped); nothing when nothing was counted. */
void ry_hist_write(FILE *f, const char *name, const char *labels, const struct ry_hist *h);

#endif
