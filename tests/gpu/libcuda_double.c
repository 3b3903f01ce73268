/* TEST DOUBLE of libcuda.so.1 — built only in the tests, never installed. The engine and the GPU
 * check load it instead of the driver when RAILYARD_SEAM_LIBCUDA names it (nodeagent/bench/
 * cuda.h); nothing else changes. "Device memory" is host memory (so a verbs provider can even
 * register it as nvidia-peermem would let it), copies are memcpy, events read a clock. It
 * checks what the real driver checks and a careless caller gets wrong: a current context for
 * every memory call, copies inside live allocations, dma-buf ranges inside an allocation and
 * page-aligned, events recorded before they are compared; with RAILYARD_CUDA_DOUBLE_LEAKCHECK=1
 * the process fails at exit (status 99) if allocations or context references were left.
 *
 * Knobs (environment, read at cuInit):
 *   RAILYARD_CUDA_DOUBLE_GPUS=N      GPUs (default 1; 0: cuInit says CUDA_ERROR_NO_DEVICE)
 *   RAILYARD_CUDA_DOUBLE_DMABUF=0|1  CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED (default 1); the
 *                                    export is a memfd, not a real dma-buf
 *   RAILYARD_CUDA_DOUBLE_RATES=h2d=A[:B...],d2h=...,d2d=...  GB/s (1e9 bytes/s): each
 *                                    asynchronous copy advances its stream's virtual clock by
 *                                    bytes / rate, the next rate of the list each time (cycling),
 *                                    and events read that clock. Unset: events read
 *                                    CLOCK_MONOTONIC and copies take what memcpy takes.
 *   RAILYARD_CUDA_DOUBLE_FAIL=NAME[=CODE]  entry point NAME (e.g. cuMemAlloc_v2) returns CODE
 *                                    (default 999, CUDA_ERROR_UNKNOWN)
 *   RAILYARD_CUDA_DOUBLE_BUS=B0,B1,...   PCI bus ids of the GPUs (default 0000:18:00.0,
 *                                    0000:28:00.0, ...)
 *   RAILYARD_CUDA_DOUBLE_UUIDS=U0,...  their UUIDs as nvidia-smi prints them (GPU-xxxxxxxx-...)
 *   RAILYARD_CUDA_DOUBLE_LEAKCHECK=1 as above
 * A test in the same process changes DMABUF, RATES and FAIL later with railyard_cuda_double_set()
 * (found with dlsym on the loaded double). */
#include "nodeagent/bench/cuda.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define D_MAX_GPUS	     8
#define D_ALIGN		     (64u << 10)
#define D_RATES_MAX	     16
#define D_ERR_UNKNOWN	     999
#define D_ERR_INVALID_CTX    201
#define D_ERR_INVALID_HANDLE 400
#define D_ERR_NOT_READY	     600

/* Every exported entry point has a prototype here (the library is built with the project's
 * warnings, -Wmissing-prototypes included); their types are cuda.h's. */
#define API __attribute__((visibility("default")))

enum d_kind { D_H2D, D_D2H, D_D2D, D_KINDS };

struct d_alloc {
	uintptr_t base;
	size_t len;
	int dev;
	bool host; /* cuMemHostAlloc */
	struct d_alloc *next;
};

struct bcu_ctx {
	int dev;
	int refs;
};

struct bcu_stream {
	double vt_ns; /* virtual clock (rates mode) */
};

struct bcu_event {
	double t_ns;
	bool recorded;
};

static pthread_mutex_t d_lock = PTHREAD_MUTEX_INITIALIZER;
static int d_ngpus = 1, d_dmabuf = 1, d_inited;
static struct bcu_ctx d_ctx[D_MAX_GPUS];
static struct d_alloc *d_allocs;
static struct bcu_stream d_null_stream;
static __thread struct bcu_ctx *d_current;
static double d_rates[D_KINDS][D_RATES_MAX];
static size_t d_nrates[D_KINDS], d_next_rate[D_KINDS];
static bool d_virtual;
static char d_fail_name[64];
static int d_fail_code;
static int d_streams, d_events;
static char d_bus[D_MAX_GPUS][16];
static unsigned char d_uuid[D_MAX_GPUS][16];
static bool d_have_uuid[D_MAX_GPUS];

/* ---- knobs -------------------------------------------------------------------------------- */

static void d_parse_rates(const char *s)
{
	static const char *const names[D_KINDS] = {"h2d", "d2h", "d2d"};
	char buf[512], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *save2 = NULL, *v;

		if (!eq)
			continue;
		*eq = '\0';
		for (int k = 0; k < D_KINDS; k++) {
			if (strcmp(tok, names[k]) != 0)
				continue;
			for (v = strtok_r(eq + 1, ":", &save2); v && d_nrates[k] < D_RATES_MAX;
			     v = strtok_r(NULL, ":", &save2))
				d_rates[k][d_nrates[k]++] = strtod(v, NULL);
			d_virtual = true;
		}
	}
}

static void d_set_fail(const char *fail)
{
	const char *eq = fail ? strchr(fail, '=') : NULL;

	d_fail_name[0] = '\0';
	if (!fail || !fail[0])
		return;
	snprintf(d_fail_name, sizeof(d_fail_name), "%.*s",
		 (int)(eq ? (size_t)(eq - fail) : strlen(fail)), fail);
	d_fail_code = eq ? atoi(eq + 1) : D_ERR_UNKNOWN;
}

static void d_set_rates(const char *rates)
{
	memset(d_nrates, 0, sizeof(d_nrates));
	memset(d_next_rate, 0, sizeof(d_next_rate));
	d_virtual = false;
	if (rates)
		d_parse_rates(rates);
}

/* "GPU-47077678-012a-d25f-0a23-6b66c4586766" into 16 bytes. */
static bool d_parse_uuid(const char *s, unsigned char out[16])
{
	int k = 0;

	if (strncmp(s, "GPU-", 4) != 0)
		return false;
	for (s += 4; *s && k < 32; s++) {
		unsigned int v;

		if (*s == '-')
			continue;
		if (sscanf(s, "%1x", &v) != 1)
			return false;
		out[k / 2] = (unsigned char)(k % 2 ? out[k / 2] | v : v << 4);
		k++;
	}
	return k == 32 && !*s;
}

static void d_read_list(const char *env, void (*one)(int i, const char *item))
{
	const char *v = getenv(env);
	char buf[1024], *save = NULL, *tok;
	int i = 0;

	if (!v)
		return;
	snprintf(buf, sizeof(buf), "%s", v);
	for (tok = strtok_r(buf, ",", &save); tok && i < D_MAX_GPUS;
	     tok = strtok_r(NULL, ",", &save))
		one(i++, tok);
}

static void d_one_bus(int i, const char *item)
{
	snprintf(d_bus[i], sizeof(d_bus[i]), "%s", item);
}

static void d_one_uuid(int i, const char *item)
{
	d_have_uuid[i] = d_parse_uuid(item, d_uuid[i]);
}

static void d_read_env(void)
{
	const char *g = getenv("RAILYARD_CUDA_DOUBLE_GPUS");
	const char *db = getenv("RAILYARD_CUDA_DOUBLE_DMABUF");

	d_read_list("RAILYARD_CUDA_DOUBLE_BUS", d_one_bus);
	d_read_list("RAILYARD_CUDA_DOUBLE_UUIDS", d_one_uuid);

	if (g)
		d_ngpus = atoi(g);
	if (d_ngpus < 0 || d_ngpus > D_MAX_GPUS)
		d_ngpus = D_MAX_GPUS;
	if (db)
		d_dmabuf = atoi(db) != 0;
	d_set_rates(getenv("RAILYARD_CUDA_DOUBLE_RATES"));
	d_set_fail(getenv("RAILYARD_CUDA_DOUBLE_FAIL"));
}

/* The tests' handle on the knobs after cuInit: "DMABUF", "RATES" or "FAIL" (value NULL or "":
 * back to the default). 0, or -1 for an unknown knob. Not thread-safe: call it while no
 * other thread is in the double. */
API int railyard_cuda_double_set(const char *knob, const char *value);
int railyard_cuda_double_set(const char *knob, const char *value)
{
	pthread_mutex_lock(&d_lock);
	if (strcmp(knob, "DMABUF") == 0)
		d_dmabuf = !value || !value[0] || atoi(value) != 0;
	else if (strcmp(knob, "RATES") == 0)
		d_set_rates(value && value[0] ? value : NULL);
	else if (strcmp(knob, "FAIL") == 0)
		d_set_fail(value);
	else
		knob = NULL;
	pthread_mutex_unlock(&d_lock);
	return knob ? 0 : -1;
}

/* The injected failure of entry point name, or 0. */
static int d_fail(const char *name)
{
	return d_fail_name[0] && strcmp(d_fail_name, name) == 0 ? d_fail_code : 0;
}

#define FAIL_IF(name)                                                                              \
	do {                                                                                       \
		int _f = d_fail(name);                                                             \
		if (_f)                                                                            \
			return _f;                                                                 \
	} while (0)

static double d_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ---- allocations -------------------------------------------------------------------------- */

static struct d_alloc *d_find(uintptr_t p, size_t len, bool host)
{
	for (struct d_alloc *a = d_allocs; a; a = a->next)
		if (a->host == host && p >= a->base && len <= a->len && p - a->base <= a->len - len)
			return a;
	return NULL;
}

static bool d_in_device(uint64_t p, size_t len)
{
	bool ok;

	pthread_mutex_lock(&d_lock);
	ok = d_find((uintptr_t)p, len, false) != NULL;
	pthread_mutex_unlock(&d_lock);
	return ok;
}

static int d_need_ctx(void)
{
	if (!d_inited)
		return BCU_ERROR_NOT_INITIALIZED;
	return d_current ? 0 : D_ERR_INVALID_CTX;
}

#define NEED_CTX()                                                                                 \
	do {                                                                                       \
		int _c = d_need_ctx();                                                             \
		if (_c)                                                                            \
			return _c;                                                                 \
	} while (0)

/* ---- the entry points --------------------------------------------------------------------- */

API int cuInit(unsigned int flags);
API int cuDriverGetVersion(int *v);
API int cuDeviceGetCount(int *n);
API int cuDeviceGet(int *dev, int ordinal);
API int cuDeviceGetName(char *name, int len, int dev);
API int cuDeviceGetPCIBusId(char *bus, int len, int dev);
API int cuDeviceGetUuid_v2(unsigned char uuid[16], int dev);
API int cuDeviceGetAttribute(int *v, int attr, int dev);
API int cuDeviceTotalMem_v2(size_t *bytes, int dev);
API int cuDevicePrimaryCtxRetain(struct bcu_ctx **ctx, int dev);
API int cuDevicePrimaryCtxRelease_v2(int dev);
API int cuCtxSetCurrent(struct bcu_ctx *ctx);
API int cuMemAlloc_v2(uint64_t *p, size_t len);
API int cuMemFree_v2(uint64_t p);
API int cuMemsetD8_v2(uint64_t p, unsigned char v, size_t n);
API int cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t n);
API int cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t n);
API int cuMemcpyDtoD_v2(uint64_t dst, uint64_t src, size_t n);
API int cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t n, struct bcu_stream *s);
API int cuMemcpyDtoHAsync_v2(void *dst, uint64_t src, size_t n, struct bcu_stream *s);
API int cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t n, struct bcu_stream *s);
API int cuMemHostAlloc(void **p, size_t len, unsigned int flags);
API int cuMemFreeHost(void *p);
API int cuStreamCreate(struct bcu_stream **s, unsigned int flags);
API int cuStreamDestroy_v2(struct bcu_stream *s);
API int cuStreamSynchronize(struct bcu_stream *s);
API int cuEventCreate(struct bcu_event **e, unsigned int flags);
API int cuEventDestroy_v2(struct bcu_event *e);
API int cuEventRecord(struct bcu_event *e, struct bcu_stream *s);
API int cuEventSynchronize(struct bcu_event *e);
API int cuEventElapsedTime(float *ms, struct bcu_event *a, struct bcu_event *b);
API int cuPointerSetAttribute(const void *v, int attr, uint64_t p);
API int cuMemGetHandleForAddressRange(void *h, uint64_t p, size_t n, int type,
				      unsigned long long flags);
API int cuGetErrorString(int r, const char **s);
API int cuGetErrorName(int r, const char **s);

int cuInit(unsigned int flags)
{
	FAIL_IF("cuInit");
	if (flags != 0)
		return BCU_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&d_lock);
	if (!d_inited)
		d_read_env();
	d_inited = 1;
	pthread_mutex_unlock(&d_lock);
	return d_ngpus == 0 ? BCU_ERROR_NO_DEVICE : 0;
}

int cuDriverGetVersion(int *v)
{
	*v = 13000;
	return 0;
}

int cuDeviceGetCount(int *n)
{
	FAIL_IF("cuDeviceGetCount");
	if (!d_inited)
		return BCU_ERROR_NOT_INITIALIZED;
	*n = d_ngpus;
	return 0;
}

int cuDeviceGet(int *dev, int ordinal)
{
	if (!d_inited)
		return BCU_ERROR_NOT_INITIALIZED;
	if (ordinal < 0 || ordinal >= d_ngpus)
		return BCU_ERROR_INVALID_DEVICE;
	*dev = ordinal;
	return 0;
}

static bool d_dev_ok(int dev)
{
	return d_inited && dev >= 0 && dev < d_ngpus;
}

int cuDeviceGetName(char *name, int len, int dev)
{
	if (!d_dev_ok(dev))
		return BCU_ERROR_INVALID_DEVICE;
	if (len < 1)
		return BCU_ERROR_INVALID_VALUE;
	snprintf(name, (size_t)len, "Railyard CUDA double %d", dev);
	return 0;
}

int cuDeviceGetPCIBusId(char *bus, int len, int dev)
{
	if (!d_dev_ok(dev))
		return BCU_ERROR_INVALID_DEVICE;
	if (len < 13)
		return BCU_ERROR_INVALID_VALUE;
	/* Upper case, as the driver prints them. */
	if (d_bus[dev][0]) {
		snprintf(bus, (size_t)len, "%s", d_bus[dev]);
		for (char *c = bus; *c; c++)
			if (*c >= 'a' && *c <= 'f')
				*c = (char)(*c - 'a' + 'A');
	} else {
		snprintf(bus, (size_t)len, "0000:%02X:00.0", 0x18 + 0x10 * dev);
	}
	return 0;
}

int cuDeviceGetUuid_v2(unsigned char uuid[16], int dev)
{
	if (!d_dev_ok(dev))
		return BCU_ERROR_INVALID_DEVICE;
	for (int i = 0; i < 16; i++)
		uuid[i] =
			d_have_uuid[dev] ? d_uuid[dev][i] : (unsigned char)(0xd0 + i + dev * 0x11);
	return 0;
}

int cuDeviceGetAttribute(int *v, int attr, int dev)
{
	FAIL_IF("cuDeviceGetAttribute");
	if (!d_dev_ok(dev))
		return BCU_ERROR_INVALID_DEVICE;
	switch (attr) {
	case BCU_ATTR_DMA_BUF_SUPPORTED:
		*v = d_dmabuf;
		return 0;
	case BCU_ATTR_GPU_DIRECT_RDMA_SUPPORTED:
		*v = 1;
		return 0;
	case BCU_ATTR_PCI_BUS_ID:
		*v = 0x18 + 0x10 * dev;
		return 0;
	default:
		return BCU_ERROR_INVALID_VALUE;
	}
}

int cuDeviceTotalMem_v2(size_t *bytes, int dev)
{
	if (!d_dev_ok(dev))
		return BCU_ERROR_INVALID_DEVICE;
	*bytes = 150754820096ull; /* an H200's, as NVML reported it */
	return 0;
}

int cuDevicePrimaryCtxRetain(struct bcu_ctx **ctx, int dev)
{
	FAIL_IF("cuDevicePrimaryCtxRetain");
	if (!d_dev_ok(dev))
		return BCU_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&d_lock);
	d_ctx[dev].dev = dev;
	d_ctx[dev].refs++;
	pthread_mutex_unlock(&d_lock);
	*ctx = &d_ctx[dev];
	return 0;
}

int cuDevicePrimaryCtxRelease_v2(int dev)
{
	int r = 0;

	if (!d_dev_ok(dev))
		return BCU_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&d_lock);
	if (d_ctx[dev].refs <= 0)
		r = D_ERR_INVALID_CTX; /* released more often than retained */
	else
		d_ctx[dev].refs--;
	pthread_mutex_unlock(&d_lock);
	return r;
}

int cuCtxSetCurrent(struct bcu_ctx *ctx)
{
	if (ctx && (ctx < d_ctx || ctx >= d_ctx + D_MAX_GPUS || ctx->refs <= 0))
		return D_ERR_INVALID_CTX;
	d_current = ctx;
	return 0;
}

static int d_alloc_add(uintptr_t base, size_t len, bool host)
{
	struct d_alloc *a = calloc(1, sizeof(*a));

	if (!a)
		return BCU_ERROR_OUT_OF_MEMORY;
	*a = (struct d_alloc){base, len, d_current ? d_current->dev : -1, host, NULL};
	pthread_mutex_lock(&d_lock);
	a->next = d_allocs;
	d_allocs = a;
	pthread_mutex_unlock(&d_lock);
	return 0;
}

/* Remove the allocation starting at base; 0 or INVALID_VALUE (not an allocation's start). */
static int d_alloc_del(uintptr_t base, bool host)
{
	struct d_alloc **pp, *a = NULL;

	pthread_mutex_lock(&d_lock);
	for (pp = &d_allocs; *pp; pp = &(*pp)->next)
		if ((*pp)->base == base && (*pp)->host == host) {
			a = *pp;
			*pp = a->next;
			break;
		}
	pthread_mutex_unlock(&d_lock);
	if (!a)
		return BCU_ERROR_INVALID_VALUE;
	free(a);
	return 0;
}

int cuMemAlloc_v2(uint64_t *p, size_t len)
{
	void *m;
	int r;

	FAIL_IF("cuMemAlloc_v2");
	NEED_CTX();
	if (len == 0)
		return BCU_ERROR_INVALID_VALUE;
	m = aligned_alloc(D_ALIGN, (len + D_ALIGN - 1) / D_ALIGN * D_ALIGN);
	if (!m)
		return BCU_ERROR_OUT_OF_MEMORY;
	/* Device memory is not zeroed by the driver either. */
	memset(m, 0xa5, len);
	r = d_alloc_add((uintptr_t)m, len, false);
	if (r) {
		free(m);
		return r;
	}
	*p = (uint64_t)(uintptr_t)m;
	return 0;
}

int cuMemFree_v2(uint64_t p)
{
	int r;

	NEED_CTX();
	r = d_alloc_del((uintptr_t)p, false);
	if (r == 0)
		free((void *)(uintptr_t)p);
	return r;
}

int cuMemsetD8_v2(uint64_t p, unsigned char v, size_t n)
{
	NEED_CTX();
	if (!d_in_device(p, n))
		return BCU_ERROR_INVALID_VALUE;
	memset((void *)(uintptr_t)p, v, n);
	return 0;
}

int cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t n)
{
	FAIL_IF("cuMemcpyHtoD_v2");
	NEED_CTX();
	if (!d_in_device(dst, n) || !src)
		return BCU_ERROR_INVALID_VALUE;
	memcpy((void *)(uintptr_t)dst, src, n);
	return 0;
}

int cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t n)
{
	FAIL_IF("cuMemcpyDtoH_v2");
	NEED_CTX();
	if (!d_in_device(src, n) || !dst)
		return BCU_ERROR_INVALID_VALUE;
	memcpy(dst, (const void *)(uintptr_t)src, n);
	return 0;
}

int cuMemcpyDtoD_v2(uint64_t dst, uint64_t src, size_t n)
{
	NEED_CTX();
	if (!d_in_device(dst, n) || !d_in_device(src, n))
		return BCU_ERROR_INVALID_VALUE;
	memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
	return 0;
}

/* Rates mode: the copy takes bytes / rate on its stream's clock. */
static void d_advance(struct bcu_stream *s, enum d_kind k, size_t n)
{
	double rate;

	if (!d_virtual || d_nrates[k] == 0)
		return;
	pthread_mutex_lock(&d_lock);
	rate = d_rates[k][d_next_rate[k]++ % d_nrates[k]];
	pthread_mutex_unlock(&d_lock);
	if (rate > 0)
		(s ? s : &d_null_stream)->vt_ns += (double)n / rate; /* GB/s = bytes per ns */
}

int cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t n, struct bcu_stream *s)
{
	int r = cuMemcpyHtoD_v2(dst, src, n);

	if (r == 0)
		d_advance(s, D_H2D, n);
	return r;
}

int cuMemcpyDtoHAsync_v2(void *dst, uint64_t src, size_t n, struct bcu_stream *s)
{
	int r = cuMemcpyDtoH_v2(dst, src, n);

	if (r == 0)
		d_advance(s, D_D2H, n);
	return r;
}

int cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t n, struct bcu_stream *s)
{
	int r;

	FAIL_IF("cuMemcpyDtoDAsync_v2");
	r = cuMemcpyDtoD_v2(dst, src, n);
	if (r == 0)
		d_advance(s, D_D2D, n);
	return r;
}

int cuMemHostAlloc(void **p, size_t len, unsigned int flags)
{
	void *m;
	int r;

	FAIL_IF("cuMemHostAlloc");
	NEED_CTX();
	if (len == 0)
		return BCU_ERROR_INVALID_VALUE;
	m = aligned_alloc(4096, (len + 4095) / 4096 * 4096);
	if (!m)
		return BCU_ERROR_OUT_OF_MEMORY;
	r = d_alloc_add((uintptr_t)m, len, true);
	if (r) {
		free(m);
		return r;
	}
	*p = m;
	return 0;
}

int cuMemFreeHost(void *p)
{
	int r;

	NEED_CTX();
	r = d_alloc_del((uintptr_t)p, true);
	if (r == 0)
		free(p);
	return r;
}

int cuStreamCreate(struct bcu_stream **s, unsigned int flags)
{
	NEED_CTX();
	*s = calloc(1, sizeof(**s));
	if (!*s)
		return BCU_ERROR_OUT_OF_MEMORY;
	__atomic_add_fetch(&d_streams, 1, __ATOMIC_RELAXED);
	return 0;
}

int cuStreamDestroy_v2(struct bcu_stream *s)
{
	if (!s)
		return D_ERR_INVALID_HANDLE;
	free(s);
	__atomic_sub_fetch(&d_streams, 1, __ATOMIC_RELAXED);
	return 0;
}

int cuStreamSynchronize(struct bcu_stream *s)
{
	NEED_CTX();
	return 0; /* every copy already happened */
}

int cuEventCreate(struct bcu_event **e, unsigned int flags)
{
	NEED_CTX();
	*e = calloc(1, sizeof(**e));
	if (!*e)
		return BCU_ERROR_OUT_OF_MEMORY;
	__atomic_add_fetch(&d_events, 1, __ATOMIC_RELAXED);
	return 0;
}

int cuEventDestroy_v2(struct bcu_event *e)
{
	if (!e)
		return D_ERR_INVALID_HANDLE;
	free(e);
	__atomic_sub_fetch(&d_events, 1, __ATOMIC_RELAXED);
	return 0;
}

int cuEventRecord(struct bcu_event *e, struct bcu_stream *s)
{
	NEED_CTX();
	if (!e)
		return D_ERR_INVALID_HANDLE;
	e->t_ns = d_virtual ? (s ? s : &d_null_stream)->vt_ns : d_now_ns();
	e->recorded = true;
	return 0;
}

int cuEventSynchronize(struct bcu_event *e)
{
	if (!e)
		return D_ERR_INVALID_HANDLE;
	return e->recorded ? 0 : D_ERR_INVALID_HANDLE;
}

int cuEventElapsedTime(float *ms, struct bcu_event *a, struct bcu_event *b)
{
	FAIL_IF("cuEventElapsedTime");
	if (!a || !b)
		return D_ERR_INVALID_HANDLE;
	if (!a->recorded || !b->recorded)
		return D_ERR_NOT_READY;
	*ms = (float)((b->t_ns - a->t_ns) / 1e6);
	return 0;
}

int cuPointerSetAttribute(const void *v, int attr, uint64_t p)
{
	NEED_CTX();
	if (attr != BCU_POINTER_ATTRIBUTE_SYNC_MEMOPS || !v || !d_in_device(p, 1))
		return BCU_ERROR_INVALID_VALUE;
	return 0;
}

int cuMemGetHandleForAddressRange(void *h, uint64_t p, size_t n, int type, unsigned long long flags)
{
	long page = sysconf(_SC_PAGESIZE);
	bool inside;
	int fd;

	FAIL_IF("cuMemGetHandleForAddressRange");
	NEED_CTX();
	if (!d_dmabuf)
		return BCU_ERROR_NOT_SUPPORTED;
	if (type != BCU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || flags || !h || n == 0 ||
	    p % (uint64_t)page || n % (size_t)page)
		return BCU_ERROR_INVALID_VALUE;
	/* The range must lie in one allocation (rounded up to the double's alignment). */
	pthread_mutex_lock(&d_lock);
	inside = false;
	for (struct d_alloc *a = d_allocs; a && !inside; a = a->next)
		inside = !a->host && p >= a->base &&
			 p + n <= a->base + (a->len + D_ALIGN - 1) / D_ALIGN * D_ALIGN;
	pthread_mutex_unlock(&d_lock);
	if (!inside)
		return BCU_ERROR_INVALID_VALUE;
	fd = memfd_create("cuda-double-dmabuf", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)n) < 0) {
		if (fd >= 0)
			close(fd);
		return BCU_ERROR_OUT_OF_MEMORY;
	}
	*(int *)h = fd;
	return 0;
}

static const struct {
	int code;
	const char *name, *text;
} d_errors[] = {
	{0, "CUDA_SUCCESS", "no error"},
	{BCU_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{BCU_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{BCU_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	{BCU_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	{BCU_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	{D_ERR_INVALID_CTX, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	{D_ERR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	{D_ERR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
	{BCU_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
	{D_ERR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static int d_error(int r, const char **s, bool name)
{
	for (size_t i = 0; i < sizeof(d_errors) / sizeof(d_errors[0]); i++)
		if (d_errors[i].code == r) {
			*s = name ? d_errors[i].name : d_errors[i].text;
			return 0;
		}
	*s = NULL;
	return BCU_ERROR_INVALID_VALUE;
}

int cuGetErrorString(int r, const char **s)
{
	return d_error(r, s, false);
}

int cuGetErrorName(int r, const char **s)
{
	return d_error(r, s, true);
}

/* Leak check at exit: what the process took and never gave back. */
__attribute__((destructor)) static void d_leakcheck(void)
{
	const char *on = getenv("RAILYARD_CUDA_DOUBLE_LEAKCHECK");
	size_t dev = 0, host = 0;
	int refs = 0;

	if (!on || strcmp(on, "1") != 0)
		return;
	for (struct d_alloc *a = d_allocs; a; a = a->next)
		*(a->host ? &host : &dev) += 1;
	for (int i = 0; i < D_MAX_GPUS; i++)
		refs += d_ctx[i].refs;
	if (dev || host || refs || d_streams || d_events) {
		fprintf(stderr,
			"libcuda double: left at exit: %zu device and %zu pinned host allocations, "
			"%d context references, %d streams, %d events\n",
			dev, host, refs, d_streams, d_events);
		_exit(99);
	}
}
