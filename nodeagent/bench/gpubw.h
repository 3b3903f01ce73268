/* Copy bandwidth of one GPU, as nvbandwidth measures it: pinned host to device (H2D), device to
 * host (D2H) and device to device (D2D) copies timed with CUDA events on a stream, repeated, the
 * median reported. Runs through the dlopen()ed driver (nodeagent/bench/cuda.h). */
#ifndef RAILYARD_BENCH_GPUBW_H
#define RAILYARD_BENCH_GPUBW_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define GPUBW_SIZE_DEFAULT    (256ull << 20) /* bytes per copy: what the H200 figures used */
#define GPUBW_SIZE_MIN	      (64ull << 10)
#define GPUBW_SIZE_MAX	      (4ull << 30)
#define GPUBW_REPEATS_DEFAULT 10
#define GPUBW_REPEATS_MAX     1000

enum gpubw_dir { GPUBW_H2D, GPUBW_D2H, GPUBW_D2D, GPUBW_DIRS };

/* One direction: the median, lowest and highest of the repeats in GB/s (1e9 bytes per
 * second, each byte counted once: a D2D copy of N bytes reads N and writes N, and counts N). */
struct gpubw_dir_result {
	double median_gbs, min_gbs, max_gbs;
	uint32_t samples;
};

struct gpubw_result {
	struct gpubw_dir_result dir[GPUBW_DIRS];
	uint64_t size;
	uint32_t repeats;
};

/* "h2d", "d2h", "d2d". */
const char *gpubw_dir_name(enum gpubw_dir d);

/* GB/s of bytes copied in ms milliseconds (a CUDA event interval); NaN when ms is not a
 * positive finite number (an event pair that measured nothing is not a bandwidth). */
double gpubw_gbs(uint64_t bytes, double ms);

/* The median of v[0..n) (sorts v in place; the mean of the middle two when n is even); NaN
 * for n = 0. */
double gpubw_median(double *v, size_t n);

/* Measure GPU ordinal dev: for each direction one warm-up copy, then repeats copies of size
 * bytes, each timed alone between two events. size GPUBW_SIZE_MIN..GPUBW_SIZE_MAX, repeats
 * 1..GPUBW_REPEATS_MAX. cancel (may be NULL) is looked at between copies. Allocates 2 x size
 * of device memory and size of pinned host memory, all freed before it returns. Errors (reason
 * in err, errlen bytes): -EINVAL (bounds), -ECANCELED, -ENOMEM, -EIO (a CUDA call failed or an
 * event interval was not a positive number), bench_cuda_get()'s. Thread-safe (the GPU's
 * primary context is retained for the call and made current on the calling thread). */
__attribute__((warn_unused_result)) int gpubw_measure(int dev, uint64_t size, uint32_t repeats,
						      const atomic_bool *cancel,
						      struct gpubw_result *ret, char *err,
						      size_t errlen);

#endif
