/* The CUDA driver library loaded at run time: dlopen() of libcuda.so.1 (or the test seam's
 * library) once per process, the entry points by their versioned names, cuInit, error strings,
 * and finding a GPU by ordinal, PCI bus id or UUID. Owns the library handle for the process. */
#include "nodeagent/bench/cuda.h"

#include "common/util/error.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUDA_ERR_LEN 256

static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;
static struct bench_cuda cuda_api;
static int cuda_status;
static char cuda_err[CUDA_ERR_LEN];

/* Entry points: the field, then the names to try in order (the newest version first). */
struct sym {
	size_t off;
	const char *names[3];
	bool optional;
};

#define SYM(field, ...)                                                                            \
	{                                                                                          \
		offsetof(struct bench_cuda, field), {__VA_ARGS__}, false                           \
	}
#define SYM_OPT(field, ...)                                                                        \
	{                                                                                          \
		offsetof(struct bench_cuda, field), {__VA_ARGS__}, true                            \
	}

static const struct sym syms[] = {
	SYM(init, "cuInit"),
	SYM(driver_get_version, "cuDriverGetVersion"),
	SYM(device_get_count, "cuDeviceGetCount"),
	SYM(device_get, "cuDeviceGet"),
	SYM(device_get_name, "cuDeviceGetName"),
	SYM(device_get_pci_bus_id, "cuDeviceGetPCIBusId"),
	SYM(device_get_uuid, "cuDeviceGetUuid_v2", "cuDeviceGetUuid"),
	SYM(device_get_attribute, "cuDeviceGetAttribute"),
	SYM(device_total_mem, "cuDeviceTotalMem_v2"),
	SYM(primary_ctx_retain, "cuDevicePrimaryCtxRetain"),
	SYM(primary_ctx_release, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"),
	SYM(ctx_set_current, "cuCtxSetCurrent"),
	SYM(mem_alloc, "cuMemAlloc_v2"),
	SYM(mem_free, "cuMemFree_v2"),
	SYM(memset_d8, "cuMemsetD8_v2"),
	SYM(memcpy_htod, "cuMemcpyHtoD_v2"),
	SYM(memcpy_dtoh, "cuMemcpyDtoH_v2"),
	SYM(memcpy_dtod, "cuMemcpyDtoD_v2"),
	SYM(memcpy_htod_async, "cuMemcpyHtoDAsync_v2"),
	SYM(memcpy_dtoh_async, "cuMemcpyDtoHAsync_v2"),
	SYM(memcpy_dtod_async, "cuMemcpyDtoDAsync_v2"),
	SYM(mem_host_alloc, "cuMemHostAlloc"),
	SYM(mem_free_host, "cuMemFreeHost"),
	SYM(stream_create, "cuStreamCreate"),
	SYM(stream_destroy, "cuStreamDestroy_v2"),
	SYM(stream_synchronize, "cuStreamSynchronize"),
	SYM(event_create, "cuEventCreate"),
	SYM(event_destroy, "cuEventDestroy_v2"),
	SYM(event_record, "cuEventRecord"),
	SYM(event_synchronize, "cuEventSynchronize"),
	SYM(event_elapsed_time, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
	SYM(pointer_set_attribute, "cuPointerSetAttribute"),
	SYM_OPT(mem_get_handle_for_address_range, "cuMemGetHandleForAddressRange"),
	SYM(get_error_string, "cuGetErrorString"),
	SYM(get_error_name, "cuGetErrorName"),
};

static void cuda_load(void)
{
	const char *seam = getenv(BENCH_CUDA_SEAM_ENV);
	const char *lib = seam && seam[0] ? seam : BENCH_CUDA_LIBRARY;
	struct bench_cuda api;
	char why[CUDA_ERR_LEN];
	void *h;
	int r;

	memset(&api, 0, sizeof(api));
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();

		cuda_status = -ENOENT;
		snprintf(cuda_err, sizeof(cuda_err), "cannot load %s (no NVIDIA driver here?): %s",
			 lib, e ? e : "not found");
		return;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *fn = NULL;

		for (size_t k = 0; k < 3 && syms[i].names[k] && !fn; k++)
			fn = dlsym(h, syms[i].names[k]);
		if (!fn && !syms[i].optional) {
			cuda_status = -ENOSYS;
			snprintf(cuda_err, sizeof(cuda_err), "%s lacks %s (driver too old?)", lib,
				 syms[i].names[0]);
			return; /* the handle stays: a later dlopen would find it loaded anyway */
		}
		memcpy((char *)&api + syms[i].off, &fn, sizeof(fn));
	}
	r = api.init(0);
	if (r != BCU_SUCCESS) {
		cuda_status = -ENODEV;
		snprintf(cuda_err, sizeof(cuda_err), "cuInit failed: %s",
			 bench_cuda_strerror(&api, r, why, sizeof(why)));
		return;
	}
	cuda_api = api;
	cuda_status = 0;
}

int bench_cuda_get(const struct bench_cuda **ret_api, char *err, size_t errlen)
{
	(void)pthread_once(&cuda_once, cuda_load);
	if (cuda_status < 0) {
		if (err && errlen)
			snprintf(err, errlen, "%s", cuda_err);
		return cuda_status;
	}
	*ret_api = &cuda_api;
	return 0;
}

const char *bench_cuda_strerror(const struct bench_cuda *cu, int r, char *buf, size_t len)
{
	const char *name = NULL, *str = NULL;

	if (cu && cu->get_error_name && cu->get_error_name(r, &name) != BCU_SUCCESS)
		name = NULL;
	if (cu && cu->get_error_string && cu->get_error_string(r, &str) != BCU_SUCCESS)
		str = NULL;
	if (name && str)
		snprintf(buf, len, "%s (%s)", name, str);
	else if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "CUDA error %d", r);
	return buf;
}

int bench_cuda_errno(int r)
{
	switch (r) {
	case BCU_SUCCESS:
		return 0;
	case BCU_ERROR_OUT_OF_MEMORY:
		return -ENOMEM;
	case BCU_ERROR_NO_DEVICE:
	case BCU_ERROR_INVALID_DEVICE:
		return -ENODEV;
	case BCU_ERROR_NOT_SUPPORTED:
		return -ENOTSUP;
	case BCU_ERROR_INVALID_VALUE:
		return -EINVAL;
	default:
		return -EIO;
	}
}

static void lower(char *s)
{
	for (; *s; s++)
		*s = (char)tolower((unsigned char)*s);
}

int bench_cuda_devinfo(const struct bench_cuda *cu, int dev, struct bench_cuda_devinfo *ret)
{
	struct bench_cuda_devinfo d;
	unsigned char u[16];
	int h, v;

	memset(&d, 0, sizeof(d));
	d.ordinal = dev;
	d.dmabuf = d.gpudirect = -1;
	if (cu->device_get(&h, dev) != BCU_SUCCESS)
		return -ENODEV;
	if (cu->device_get_name(d.name, (int)sizeof(d.name) - 1, h) != BCU_SUCCESS)
		d.name[0] = '\0';
	d.name[sizeof(d.name) - 1] = '\0';
	if (cu->device_get_pci_bus_id(d.bus_id, (int)sizeof(d.bus_id) - 1, h) != BCU_SUCCESS)
		d.bus_id[0] = '\0';
	d.bus_id[sizeof(d.bus_id) - 1] = '\0';
	lower(d.bus_id);
	if (cu->device_get_uuid(u, h) == BCU_SUCCESS)
		snprintf(d.uuid, sizeof(d.uuid),
			 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
			 u[12], u[13], u[14], u[15]);
	if (cu->device_get_attribute(&v, BCU_ATTR_DMA_BUF_SUPPORTED, h) == BCU_SUCCESS)
		d.dmabuf = v != 0;
	if (cu->device_get_attribute(&v, BCU_ATTR_GPU_DIRECT_RDMA_SUPPORTED, h) == BCU_SUCCESS)
		d.gpudirect = v != 0;
	if (cu->device_total_mem(&d.total_mem, h) != BCU_SUCCESS)
		d.total_mem = 0;
	*ret = d;
	return 0;
}

/* "0000:18:00.0" and "00000000:18:00.0" (NVML's 8-digit domain) are the same bus. */
static bool bus_equal(const char *a, const char *b)
{
	while (*a == '0' && a[1] && a[1] != ':')
		a++;
	while (*b == '0' && b[1] && b[1] != ':')
		b++;
	return strcasecmp(a, b) == 0;
}

int bench_cuda_device_find(const char *arg, int *ret_ordinal, char *err, size_t errlen)
{
	const struct bench_cuda *cu;
	struct bench_cuda_devinfo d;
	char list[192] = "";
	size_t len = 0;
	int n = 0, r;

	r = bench_cuda_get(&cu, err, errlen);
	if (r < 0)
		return r;
	if (cu->device_get_count(&n) != BCU_SUCCESS || n <= 0) {
		snprintf(err, errlen, "no CUDA GPU on this host");
		return -ENODEV;
	}
	if (!arg || !arg[0]) {
		*ret_ordinal = 0;
		return 0;
	}
	if (strspn(arg, "0123456789") == strlen(arg)) {
		long idx = strlen(arg) <= 4 ? strtol(arg, NULL, 10) : -1;

		if (idx >= 0 && idx < n) {
			*ret_ordinal = (int)idx;
			return 0;
		}
		snprintf(err, errlen, "no GPU %s: this host has %d (0..%d)", arg, n, n - 1);
		return -ENODEV;
	}
	if (strncmp(arg, "GPU-", 4) != 0 && !strchr(arg, ':')) {
		snprintf(err, errlen, "GPU '%s': expected an index, a PCI bus id or a GPU- UUID",
			 arg);
		return -RY_E_INVALID;
	}
	for (int i = 0; i < n; i++) {
		if (bench_cuda_devinfo(cu, i, &d) < 0)
			continue;
		if ((strncmp(arg, "GPU-", 4) == 0 && strcasecmp(arg, d.uuid) == 0) ||
		    (strchr(arg, ':') && bus_equal(arg, d.bus_id))) {
			*ret_ordinal = i;
			return 0;
		}
		if (len < sizeof(list) - 40)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d %s",
						len ? ", " : "", i, d.bus_id);
	}
	snprintf(err, errlen, "no GPU %s on this host (GPUs: %s)", arg, list);
	return -ENODEV;
}
