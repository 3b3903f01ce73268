/* Latency histograms in Prometheus text format (hist.h). */
#include "common/util/hist.h"

#include <inttypes.h>

static const int64_t bound_us[RY_HIST_BUCKETS] = {
	100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 1000000, 2500000};
static const char *const bound_le[RY_HIST_BUCKETS + 1] = {
	"0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01",
	"0.025",  "0.05",    "0.1",    "0.25",	"1",	  "2.5",   "+Inf"};

void ry_hist_add(struct ry_hist *h, int64_t dur_us)
{
	size_t b = 0;

	if (dur_us < 0)
		dur_us = 0;
	while (b < RY_HIST_BUCKETS && dur_us > bound_us[b])
		b++;
	atomic_fetch_add_explicit(&h->bucket[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_us, (uint_fast64_t)dur_us, memory_order_relaxed);
}

void ry_hist_write(FILE *f, const char *name, const char *labels, const struct ry_hist *h)
{
	uint_fast64_t counts[RY_HIST_BUCKETS + 1], total = 0, cum = 0, sum_us;
	const char *sep = labels[0] ? "," : "";

	for (size_t b = 0; b <= RY_HIST_BUCKETS; b++) {
		counts[b] = atomic_load_explicit(&h->bucket[b], memory_order_relaxed);
		total += counts[b];
	}
	if (!total)
		return;
	sum_us = atomic_load_explicit(&h->sum_us, memory_order_relaxed);
	/* _count is the +Inf bucket, both from the same reads. */
	for (size_t b = 0; b <= RY_HIST_BUCKETS; b++) {
		cum += counts[b];
		fprintf(f, "%s_bucket{%s%sle=\"%s\"} %" PRIuFAST64 "\n", name, labels, sep,
			bound_le[b], cum);
	}
	fprintf(f, "%s_sum%s%s%s %.6f\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
		(double)sum_us / 1e6);
	fprintf(f, "%s_count%s%s%s %" PRIuFAST64 "\n", name, labels[0] ? "{" : "", labels,
		labels[0] ? "}" : "", cum);
}
