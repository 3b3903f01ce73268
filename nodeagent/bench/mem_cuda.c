/* The "cuda" memory backend of the benchmark engine: device memory of one GPU (cuMemAlloc in its
 * primary context), the data pattern written and verified through a pinned host buffer,
 * synchronous copies for transports that stage through the host, and the preparation of a buffer
 * for GPUDirect RDMA (dma-buf export, or nvidia-peermem). Owns its context reference, staging
 * buffer and allocations until close. */
#include "nodeagent/bench/bench.h"
#include "nodeagent/bench/cuda.h"

#include "common/util/error.h"

#include <jansson.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Device allocations are rounded up to this (the GPU's page size, perftest's alignment), so a
 * dma-buf export of the aligned range covers exactly the buffer. */
#define CUDA_MEM_ALIGN (64u << 10)

struct cuda_mem {
	const struct bench_cuda *cu;
	int dev;
	struct bcu_ctx *ctx;
	struct bench_cuda_devinfo info;
	void *stage; /* pinned: the pattern goes through it */
	size_t stage_len;
};

static int cm_fail(const struct cuda_mem *m, char *err, const char *what, int cr)
{
	char buf[160];

	if (err)
		snprintf(err, BENCH_ERR_LEN, "GPU %d: %s: %s", m->info.ordinal, what,
			 bench_cuda_strerror(m->cu, cr, buf, sizeof(buf)));
	return bench_cuda_errno(cr);
}

/* The calling thread works in this GPU's context (cheap: a thread-local pointer). */
static int cm_current(const struct cuda_mem *m)
{
	return m->cu->ctx_set_current(m->ctx) == BCU_SUCCESS ? 0 : -EIO;
}

static int cuda_validate(const char *arg, char *err)
{
	int ord;

	return bench_cuda_device_find(arg, &ord, err, BENCH_ERR_LEN);
}

static void cuda_close(void *st)
{
	struct cuda_mem *m = st;

	if (!m)
		return;
	if (m->stage && cm_current(m) == 0)
		(void)m->cu->mem_free_host(m->stage);
	if (m->ctx)
		(void)m->cu->primary_ctx_release(m->dev);
	free(m);
}

static int cuda_open(const char *arg, void **ret_st, char *err)
{
	struct cuda_mem *m;
	int ord, r, cr;

	r = bench_cuda_device_find(arg, &ord, err, BENCH_ERR_LEN);
	if (r < 0)
		return r;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	r = bench_cuda_get(&m->cu, err, BENCH_ERR_LEN);
	if (r < 0)
		goto fail;
	m->info.ordinal = ord;
	cr = m->cu->device_get(&m->dev, ord);
	if (cr == BCU_SUCCESS)
		cr = m->cu->primary_ctx_retain(&m->ctx, m->dev);
	if (cr != BCU_SUCCESS) {
		m->ctx = NULL;
		r = cm_fail(m, err, "cannot open its context", cr);
		goto fail;
	}
	if (!m->ctx) {
		/* Success without a context: the library is not what it claims to be. */
		(void)m->cu->primary_ctx_release(m->dev);
		snprintf(err, BENCH_ERR_LEN, "GPU %d: the driver gave no context", ord);
		r = -EIO;
		goto fail;
	}
	if (cm_current(m) < 0) {
		r = -EIO;
		snprintf(err, BENCH_ERR_LEN, "GPU %d: cannot make its context current", ord);
		goto fail;
	}
	r = bench_cuda_devinfo(m->cu, ord, &m->info);
	if (r < 0) {
		snprintf(err, BENCH_ERR_LEN, "GPU %d: cannot read its attributes", ord);
		goto fail;
	}
	*ret_st = m;
	return 0;
fail:
	cuda_close(m);
	return r;
}

static size_t cm_round(size_t len)
{
	return (len + CUDA_MEM_ALIGN - 1) / CUDA_MEM_ALIGN * CUDA_MEM_ALIGN;
}

static int cuda_alloc(void *st, size_t len, void **ret_buf)
{
	struct cuda_mem *m = st;
	uint64_t p = 0;
	int cr;

	if (len == 0 || len > SIZE_MAX - CUDA_MEM_ALIGN || cm_current(m) < 0)
		return -EINVAL;
	cr = m->cu->mem_alloc(&p, cm_round(len));
	if (cr != BCU_SUCCESS)
		return bench_cuda_errno(cr);
	if (p == 0)
		return -EIO; /* a driver (or double) that says success and gives nothing */
	cr = m->cu->memset_d8(p, 0, cm_round(len));
	if (cr != BCU_SUCCESS) {
		(void)m->cu->mem_free(p);
		return bench_cuda_errno(cr);
	}
	*ret_buf = (void *)(uintptr_t)p;
	return 0;
}

static void cuda_free(void *st, void *buf, size_t len)
{
	struct cuda_mem *m = st;

	(void)len;
	if (buf && cm_current(m) == 0)
		(void)m->cu->mem_free((uint64_t)(uintptr_t)buf);
}

static int cuda_staging_alloc(void *st, size_t len, void **ret_buf)
{
	struct cuda_mem *m = st;
	void *p = NULL;
	int cr;

	if (len == 0 || cm_current(m) < 0)
		return -EINVAL;
	cr = m->cu->mem_host_alloc(&p, len, BCU_MEMHOSTALLOC_PORTABLE);
	if (cr != BCU_SUCCESS)
		return bench_cuda_errno(cr);
	if (!p)
		return -ENOMEM;
	memset(p, 0, len);
	*ret_buf = p;
	return 0;
}

static void cuda_staging_free(void *st, void *buf, size_t len)
{
	struct cuda_mem *m = st;

	(void)len;
	if (buf && cm_current(m) == 0)
		(void)m->cu->mem_free_host(buf);
}

/* The pinned buffer the pattern goes through, at least len bytes. */
static int cm_stage(struct cuda_mem *m, size_t len)
{
	void *p;
	int r;

	if (m->stage_len >= len)
		return 0;
	r = cuda_staging_alloc(m, len, &p);
	if (r < 0)
		return r;
	if (m->stage)
		(void)m->cu->mem_free_host(m->stage);
	m->stage = p;
	m->stage_len = len;
	return 0;
}

static int cuda_from_host(void *st, void *dst, const void *src, size_t len)
{
	struct cuda_mem *m = st;

	if (cm_current(m) < 0)
		return -EIO;
	return bench_cuda_errno(m->cu->memcpy_htod((uint64_t)(uintptr_t)dst, src, len));
}

static int cuda_to_host(void *st, void *dst, const void *src, size_t len)
{
	struct cuda_mem *m = st;

	if (cm_current(m) < 0)
		return -EIO;
	return bench_cuda_errno(m->cu->memcpy_dtoh(dst, (uint64_t)(uintptr_t)src, len));
}

static int cuda_fill(void *st, void *buf, size_t len, uint64_t seed)
{
	struct cuda_mem *m = st;
	int r = cm_stage(m, len);

	if (r < 0)
		return r;
	bench_pattern_fill(m->stage, len, seed);
	return cuda_from_host(m, buf, m->stage, len);
}

static int cuda_check(void *st, const void *buf, size_t len, uint64_t seed, size_t *ret_off)
{
	struct cuda_mem *m = st;
	int r = cm_stage(m, len);

	if (r == 0)
		r = cuda_to_host(m, m->stage, buf, len);
	if (r < 0)
		return r;
	return bench_pattern_check(m->stage, len, seed, ret_off);
}

/* GPUDirect RDMA wants every synchronous copy to this range ordered with the NIC's accesses
 * (perftest sets it too). */
static int cm_sync_memops(struct cuda_mem *m, void *buf, char *err)
{
	unsigned int one = 1;
	int cr;

	if (cm_current(m) < 0)
		return -EIO;
	cr = m->cu->pointer_set_attribute(&one, BCU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
					  (uint64_t)(uintptr_t)buf);
	return cr == BCU_SUCCESS ? 0 : cm_fail(m, err, "cuPointerSetAttribute(SYNC_MEMOPS)", cr);
}

static int cuda_dmabuf(void *st, void *buf, size_t len, int *ret_fd, uint64_t *ret_offset,
		       char *err)
{
	struct cuda_mem *m = st;
	uint64_t p = (uint64_t)(uintptr_t)buf, base = p & ~(uint64_t)(CUDA_MEM_ALIGN - 1);
	int fd = -1, r, cr;

	if (!m->cu->mem_get_handle_for_address_range) {
		snprintf(err, BENCH_ERR_LEN,
			 "the driver has no cuMemGetHandleForAddressRange (CUDA 11.7 or later)");
		return -ENOTSUP;
	}
	if (m->info.dmabuf == 0) {
		snprintf(err, BENCH_ERR_LEN, "GPU %d (%s) does not support dma-buf",
			 m->info.ordinal, m->info.bus_id);
		return -ENOTSUP;
	}
	r = cm_sync_memops(m, buf, err);
	if (r < 0)
		return r;
	cr = m->cu->mem_get_handle_for_address_range(&fd, base, cm_round((size_t)(p - base) + len),
						     BCU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	if (cr != BCU_SUCCESS) {
		r = cm_fail(m, err, "dma-buf export (cuMemGetHandleForAddressRange)", cr);
		return r == -EIO ? -ENOTSUP : r;
	}
	if (fd < 0) {
		snprintf(err, BENCH_ERR_LEN, "GPU %d: dma-buf export returned no descriptor",
			 m->info.ordinal);
		return -EIO;
	}
	*ret_fd = fd;
	*ret_offset = p - base;
	return 0;
}

static int cuda_peermem(void *st, void *buf, size_t len, char *err)
{
	(void)len;
	return cm_sync_memops(st, buf, err);
}

static void cuda_env(void *st, struct bench_mem_env *ret_env)
{
	const struct cuda_mem *m = st;

	snprintf(ret_env->name, sizeof(ret_env->name), "%s", m->info.name);
	snprintf(ret_env->bus_id, sizeof(ret_env->bus_id), "%s", m->info.bus_id);
	snprintf(ret_env->uuid, sizeof(ret_env->uuid), "%s", m->info.uuid);
	ret_env->index = m->info.ordinal;
}

int bench_cuda_probe(const char *arg, json_t **ret, char *err, size_t errlen)
{
	char e[BENCH_ERR_LEN] = "";
	struct bench_mem m = {0};
	const size_t len = 2u << 20;
	void *buf = NULL;
	uint64_t off = 0;
	int fd = -1, r, version = 0;
	struct cuda_mem *cm;
	json_t *o;

	r = bench_mem_open(arg && arg[0] ? arg : "cuda", &m, e);
	if (r == 0 && strcmp(m.ops->name, "cuda") != 0) {
		snprintf(e, sizeof(e), "'%s' is not GPU memory", arg);
		r = -RY_E_INVALID;
	}
	if (r < 0) {
		bench_mem_close(&m);
		snprintf(err, errlen, "%s", e);
		return r;
	}
	cm = m.st;
	(void)cm->cu->driver_get_version(&version);
	o = json_pack("{si si ss ss ss sI si si}", "driver_version", version, "index",
		      cm->info.ordinal, "name", cm->info.name, "bus_id", cm->info.bus_id, "uuid",
		      cm->info.uuid, "total_mem_bytes", (json_int_t)cm->info.total_mem,
		      "dmabuf_supported", cm->info.dmabuf, "gpudirect_rdma_supported",
		      cm->info.gpudirect);
	r = cuda_alloc(cm, len, &buf);
	if (r < 0)
		snprintf(e, sizeof(e), "cannot allocate 2 MiB: %s", ry_strerror(r));
	else
		r = cuda_dmabuf(cm, buf, len, &fd, &off, e);
	json_object_set_new(o, "dmabuf_export", json_string(r == 0 ? "ok" : e));
	if (fd >= 0)
		close(fd);
	if (buf)
		cuda_free(cm, buf, len);
	bench_mem_close(&m);
	*ret = o;
	return 0;
}

const struct bench_mem_ops bench_mem_cuda = {
	.name = "cuda",
	.device = true,
	.validate = cuda_validate,
	.open = cuda_open,
	.close = cuda_close,
	.alloc = cuda_alloc,
	.free = cuda_free,
	.fill = cuda_fill,
	.check = cuda_check,
	.to_host = cuda_to_host,
	.from_host = cuda_from_host,
	.staging_alloc = cuda_staging_alloc,
	.staging_free = cuda_staging_free,
	.dmabuf = cuda_dmabuf,
	.peermem = cuda_peermem,
	.env = cuda_env,
};
