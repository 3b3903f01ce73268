/* GPU copy bandwidth (H2D, D2H, D2D) with CUDA events, repeated, the median kept (nvbandwidth's
 * method). Owns, for the duration of one call, the GPU's primary context reference, a stream,
 * two events, two device buffers and one pinned host buffer. */
#include "nodeagent/bench/gpubw.h"
#include "nodeagent/bench/cuda.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gpubw_dir_name(enum gpubw_dir d)
{
	static const char *const names[GPUBW_DIRS] = {"h2d", "d2h", "d2d"};

	return (unsigned)d < GPUBW_DIRS ? names[d] : "?";
}

double gpubw_gbs(uint64_t bytes, double ms)
{
	if (!isfinite(ms) || ms <= 0)
		return NAN;
	return (double)bytes / (ms * 1e6);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double gpubw_median(double *v, size_t n)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct gpubw_run {
	const struct bench_cuda *cu;
	struct bcu_stream *stream;
	struct bcu_event *start, *end;
	uint64_t dst, src;
	void *host;
	uint64_t size;
	char *err;
	size_t errlen;
	int dev;
};

static int gb_fail(struct gpubw_run *g, const char *what, int cr)
{
	char buf[160];

	snprintf(g->err, g->errlen, "GPU %d: %s: %s", g->dev, what,
		 bench_cuda_strerror(g->cu, cr, buf, sizeof(buf)));
	return cr == BCU_ERROR_OUT_OF_MEMORY ? -ENOMEM : -EIO;
}

static int gb_copy(struct gpubw_run *g, enum gpubw_dir d)
{
	switch (d) {
	case GPUBW_H2D:
		return g->cu->memcpy_htod_async(g->dst, g->host, g->size, g->stream);
	case GPUBW_D2H:
		return g->cu->memcpy_dtoh_async(g->host, g->src, g->size, g->stream);
	default:
		return g->cu->memcpy_dtod_async(g->dst, g->src, g->size, g->stream);
	}
}

/* One timed copy: its GB/s into *ret. */
static int gb_sample(struct gpubw_run *g, enum gpubw_dir d, double *ret)
{
	float ms = 0;
	int cr;

	cr = g->cu->event_record(g->start, g->stream);
	if (cr == BCU_SUCCESS)
		cr = gb_copy(g, d);
	if (cr == BCU_SUCCESS)
		cr = g->cu->event_record(g->end, g->stream);
	if (cr == BCU_SUCCESS)
		cr = g->cu->event_synchronize(g->end);
	if (cr == BCU_SUCCESS)
		cr = g->cu->event_elapsed_time(&ms, g->start, g->end);
	if (cr != BCU_SUCCESS)
		return gb_fail(g, gpubw_dir_name(d), cr);
	*ret = gpubw_gbs(g->size, ms);
	if (isnan(*ret)) {
		snprintf(g->err, g->errlen,
			 "GPU %d: %s: the events measured %g ms for %" PRIu64 " bytes", g->dev,
			 gpubw_dir_name(d), (double)ms, g->size);
		return -EIO;
	}
	return 0;
}

static int gb_dir(struct gpubw_run *g, enum gpubw_dir d, uint32_t repeats,
		  const atomic_bool *cancel, double *samples, struct gpubw_dir_result *ret)
{
	double warm;
	int r;

	r = gb_sample(g, d, &warm); /* first touch, clocks up: not counted */
	for (uint32_t i = 0; r == 0 && i < repeats; i++) {
		if (cancel && atomic_load(cancel)) {
			snprintf(g->err, g->errlen, "canceled");
			return -ECANCELED;
		}
		r = gb_sample(g, d, &samples[i]);
	}
	if (r < 0)
		return r;
	ret->samples = repeats;
	ret->median_gbs = gpubw_median(samples, repeats); /* sorts: min and max at the ends */
	ret->min_gbs = samples[0];
	ret->max_gbs = samples[repeats - 1];
	return 0;
}

int gpubw_measure(int dev, uint64_t size, uint32_t repeats, const atomic_bool *cancel,
		  struct gpubw_result *ret, char *err, size_t errlen)
{
	struct gpubw_run g = {.size = size, .err = err, .errlen = errlen, .dev = dev};
	struct gpubw_result res = {.size = size, .repeats = repeats};
	struct bcu_ctx *ctx = NULL;
	double *samples = NULL;
	int h = -1, r, cr;

	if (size < GPUBW_SIZE_MIN || size > GPUBW_SIZE_MAX || repeats < 1 ||
	    repeats > GPUBW_REPEATS_MAX) {
		snprintf(err, errlen, "copy size %" PRIu64 " or repeats %u out of bounds", size,
			 repeats);
		return -EINVAL;
	}
	r = bench_cuda_get(&g.cu, err, errlen);
	if (r < 0)
		return r;
	samples = calloc(repeats, sizeof(*samples));
	if (!samples)
		return -ENOMEM;
	cr = g.cu->device_get(&h, dev);
	if (cr == BCU_SUCCESS)
		cr = g.cu->primary_ctx_retain(&ctx, h);
	if (cr != BCU_SUCCESS) {
		ctx = NULL;
		r = gb_fail(&g, "cannot open its context", cr);
		goto out;
	}
	cr = g.cu->ctx_set_current(ctx);
	if (cr == BCU_SUCCESS)
		cr = g.cu->stream_create(&g.stream, BCU_STREAM_NON_BLOCKING);
	if (cr != BCU_SUCCESS) {
		g.stream = NULL;
		r = gb_fail(&g, "cannot create a stream", cr);
		goto out;
	}
	cr = g.cu->event_create(&g.start, BCU_EVENT_DEFAULT);
	if (cr != BCU_SUCCESS)
		g.start = NULL;
	if (cr == BCU_SUCCESS && (cr = g.cu->event_create(&g.end, BCU_EVENT_DEFAULT)) != 0)
		g.end = NULL;
	if (cr != BCU_SUCCESS) {
		r = gb_fail(&g, "cannot create events", cr);
		goto out;
	}
	if ((cr = g.cu->mem_alloc(&g.src, size)) != BCU_SUCCESS ||
	    (cr = g.cu->mem_alloc(&g.dst, size)) != BCU_SUCCESS) {
		r = gb_fail(&g, "cannot allocate 2 x its copy size of device memory", cr);
		goto out;
	}
	if ((cr = g.cu->mem_host_alloc(&g.host, size, BCU_MEMHOSTALLOC_PORTABLE)) != BCU_SUCCESS) {
		g.host = NULL;
		r = gb_fail(&g, "cannot allocate pinned host memory", cr);
		goto out;
	}
	memset(g.host, 0x5a, size);
	if ((cr = g.cu->memset_d8(g.src, 0xa5, size)) != BCU_SUCCESS) {
		r = gb_fail(&g, "cuMemsetD8", cr);
		goto out;
	}
	for (int d = 0; d < GPUBW_DIRS; d++) {
		r = gb_dir(&g, (enum gpubw_dir)d, repeats, cancel, samples, &res.dir[d]);
		if (r < 0)
			goto out;
	}
	*ret = res;
	r = 0;
out:
	/* In reverse order; the context is current on this thread from above. */
	if (g.host)
		(void)g.cu->mem_free_host(g.host);
	if (g.dst)
		(void)g.cu->mem_free(g.dst);
	if (g.src)
		(void)g.cu->mem_free(g.src);
	if (g.end)
		(void)g.cu->event_destroy(g.end);
	if (g.start)
		(void)g.cu->event_destroy(g.start);
	if (g.stream)
		(void)g.cu->stream_destroy(g.stream);
	if (ctx) {
		(void)g.cu->ctx_set_current(NULL);
		(void)g.cu->primary_ctx_release(h);
	}
	free(samples);
	return r;
}
