/* The CUDA driver API as the benchmark engine and the GPU check use it: libcuda.so.1 loaded with
 * dlopen() at run time (no link-time dependency, so one binary runs on nodes with and without
 * GPUs), the few entry points we call, and what their errors mean. The types and constants are
 * declared here (the toolkit's cuda.h is not needed to build; cuda_abi.c checks them against it
 * when it is found). */
#ifndef RAILYARD_BENCH_CUDA_H
#define RAILYARD_BENCH_CUDA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Test seam: the path of a library to load instead of libcuda.so.1 (the tests' double,
 * tests/gpu/libcuda_double.c). Unset: the real driver library. */
#define BENCH_CUDA_SEAM_ENV "RAILYARD_SEAM_LIBCUDA"
#define BENCH_CUDA_LIBRARY  "libcuda.so.1"

/* CUDA driver API types as this file spells them: CUresult and CUdevice are int, CUdeviceptr
 * (v2) is a 64-bit unsigned integer, CUcontext/CUstream/CUevent are opaque pointers. */
struct bcu_ctx;
struct bcu_stream;
struct bcu_event;

enum {
	BCU_SUCCESS = 0,
	BCU_ERROR_INVALID_VALUE = 1,
	BCU_ERROR_OUT_OF_MEMORY = 2,
	BCU_ERROR_NOT_INITIALIZED = 3,
	BCU_ERROR_NO_DEVICE = 100,
	BCU_ERROR_INVALID_DEVICE = 101,
	BCU_ERROR_NOT_SUPPORTED = 801,
	/* device attributes (CUdevice_attribute) */
	BCU_ATTR_PCI_BUS_ID = 33,
	BCU_ATTR_GPU_DIRECT_RDMA_SUPPORTED = 116,
	BCU_ATTR_DMA_BUF_SUPPORTED = 124,
	/* cuPointerSetAttribute */
	BCU_POINTER_ATTRIBUTE_SYNC_MEMOPS = 6,
	/* cuMemGetHandleForAddressRange */
	BCU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1,
	/* cuMemHostAlloc flags */
	BCU_MEMHOSTALLOC_PORTABLE = 1,
	/* cuStreamCreate flags */
	BCU_STREAM_NON_BLOCKING = 1,
	/* cuEventCreate flags */
	BCU_EVENT_DEFAULT = 0,
	BCU_EVENT_BLOCKING_SYNC = 1,
};

/* The entry points, resolved by versioned name (cuMemAlloc_v2 ...), as the toolkit's macros
 * map them. Every function returns a CUresult (0: CUDA_SUCCESS). */
struct bench_cuda {
	int (*init)(unsigned int flags);
	int (*driver_get_version)(int *ret_version);
	int (*device_get_count)(int *ret_count);
	int (*device_get)(int *ret_dev, int ordinal);
	int (*device_get_name)(char *name, int len, int dev);
	int (*device_get_pci_bus_id)(char *bus_id, int len, int dev);
	int (*device_get_uuid)(unsigned char ret_uuid[16], int dev);
	int (*device_get_attribute)(int *ret_value, int attr, int dev);
	int (*device_total_mem)(size_t *ret_bytes, int dev);
	int (*primary_ctx_retain)(struct bcu_ctx **ret_ctx, int dev);
	int (*primary_ctx_release)(int dev);
	int (*ctx_set_current)(struct bcu_ctx *ctx);
	int (*mem_alloc)(uint64_t *ret_ptr, size_t bytes);
	int (*mem_free)(uint64_t ptr);
	int (*memset_d8)(uint64_t dst, unsigned char value, size_t n);
	int (*memcpy_htod)(uint64_t dst, const void *src, size_t n);
	int (*memcpy_dtoh)(void *dst, uint64_t src, size_t n);
	int (*memcpy_dtod)(uint64_t dst, uint64_t src, size_t n);
	int (*memcpy_htod_async)(uint64_t dst, const void *src, size_t n, struct bcu_stream *s);
	int (*memcpy_dtoh_async)(void *dst, uint64_t src, size_t n, struct bcu_stream *s);
	int (*memcpy_dtod_async)(uint64_t dst, uint64_t src, size_t n, struct bcu_stream *s);
	int (*mem_host_alloc)(void **ret_ptr, size_t bytes, unsigned int flags);
	int (*mem_free_host)(void *ptr);
	int (*stream_create)(struct bcu_stream **ret_stream, unsigned int flags);
	int (*stream_destroy)(struct bcu_stream *s);
	int (*stream_synchronize)(struct bcu_stream *s);
	int (*event_create)(struct bcu_event **ret_event, unsigned int flags);
	int (*event_destroy)(struct bcu_event *e);
	int (*event_record)(struct bcu_event *e, struct bcu_stream *s);
	int (*event_synchronize)(struct bcu_event *e);
	int (*event_elapsed_time)(float *ret_ms, struct bcu_event *start, struct bcu_event *end);
	int (*pointer_set_attribute)(const void *value, int attr, uint64_t ptr);
	/* Optional (NULL when the driver lacks it: older than CUDA 11.7): dma-buf export. */
	int (*mem_get_handle_for_address_range)(void *ret_handle, uint64_t ptr, size_t n, int type,
						unsigned long long flags);
	int (*get_error_string)(int r, const char **ret_str);
	int (*get_error_name)(int r, const char **ret_str);
};

/* Load the driver library once per process (BENCH_CUDA_SEAM_ENV, else libcuda.so.1), resolve
 * the entry points and call cuInit(0). The library stays loaded until the process exits (the
 * driver does not support being unloaded). *ret_api is borrowed, process-wide, and safe to use
 * from any thread. On failure the reason is written to err (errlen bytes, may be 0), the same on
 * every later call: -ENOENT (no such library: no NVIDIA driver here), -ENOSYS (an entry point is
 * missing), -ENODEV (cuInit failed: no usable GPU; the CUDA error is named). Thread-safe. */
__attribute__((warn_unused_result)) int bench_cuda_get(const struct bench_cuda **ret_api, char *err,
						       size_t errlen);

/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for r, from the driver when it can say; else the
 * number. Writes into buf (len bytes) and returns it. */
const char *bench_cuda_strerror(const struct bench_cuda *cu, int r, char *buf, size_t len);

/* A CUDA result as a negative errno-style code: -ENOMEM (out of memory), -ENODEV (no device,
 * invalid device), -ENOTSUP (not supported), -EINVAL (invalid value), -EIO otherwise. */
int bench_cuda_errno(int r);

/* The GPU a "cuda" memory argument names ("" or NULL: GPU 0; "N": CUDA ordinal N; a PCI bus id
 * "0000:18:00.0" or a UUID "GPU-xxxxxxxx-..." as nvidia-smi prints them), as a CUDA ordinal.
 * Errors (reason in err): -RY_E_INVALID (malformed), -ENODEV (no such GPU; the GPUs are listed),
 * or bench_cuda_get()'s. Thread-safe. */
__attribute__((warn_unused_result)) int bench_cuda_device_find(const char *arg, int *ret_ordinal,
							       char *err, size_t errlen);

/* Facts of CUDA ordinal dev (strings "" when unknown). */
struct bench_cuda_devinfo {
	int ordinal;
	char name[128];
	char bus_id[32];  /* "0000:18:00.0", lower case */
	char uuid[48];	  /* "GPU-47077678-012a-d25f-0a23-6b66c4586766" */
	int dmabuf;	  /* CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: 1, 0, -1 unknown */
	int gpudirect;	  /* CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED: 1, 0, -1 */
	size_t total_mem; /* bytes; 0 when unknown */
};

/* `railyard-bench gpu-info`: the GPU arg names ("cuda[:GPU]"; NULL: GPU 0) as JSON {driver_version,
 * index, name, bus_id, uuid, total_mem_bytes, dmabuf_supported, gpudirect_rdma_supported (1, 0,
 * -1 unknown), dmabuf_export: "ok" or why a 2 MiB allocation could not be exported}. *ret: new
 * reference. Errors (reason in err): the GPU cannot be opened (bench_mem_open()'s). */
__attribute__((warn_unused_result)) int bench_cuda_probe(const char *arg, json_t **ret, char *err,
							 size_t errlen);

__attribute__((warn_unused_result)) int bench_cuda_devinfo(const struct bench_cuda *cu, int dev,
							   struct bench_cuda_devinfo *ret);

#endif
