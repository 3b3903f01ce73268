/* Internals shared by the fact collectors: the per-call context, the collector ops table, and
 * helpers that read files under the sysroot (recording warnings) and build JSON (recording
 * allocation failure). Not part of the module's contract. */
#ifndef RAILYARD_FACTS_INT_H
#define RAILYARD_FACTS_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Per facts_collect() call; collectors share it, it is never shared between threads. */
struct facts_ctx {
	const char *sysroot; /* borrowed, never NULL */
	json_t *warnings;    /* array of strings, owned by the facts document */
	bool oom;	     /* an allocation failed: facts_collect() returns -ENOMEM */
};

/* A collector adds its members to facts. Returns 0, or -ENOMEM (allocation failure); missing or
 * malformed input is a warning, never an error. */
struct facts_collector {
	const char *name;
	int (*collect)(struct facts_ctx *ctx, json_t *facts);
};

int facts_collect_system(struct facts_ctx *ctx, json_t *facts);
int facts_collect_pci(struct facts_ctx *ctx, json_t *facts);
int facts_collect_rdma(struct facts_ctx *ctx, json_t *facts);
int facts_collect_modules(struct facts_ctx *ctx, json_t *facts);
int facts_collect_ofed(struct facts_ctx *ctx, json_t *facts);
int facts_collect_gpu(struct facts_ctx *ctx, json_t *facts);
int facts_collect_topology(struct facts_ctx *ctx, json_t *facts);
int facts_collect_software(struct facts_ctx *ctx, json_t *facts);
int facts_collect_gpudirect(struct facts_ctx *ctx, json_t *facts);
/* facts.nvidia_driver {version, open_kernel_module} from proc/driver/nvidia/version (absent
 * without a driver); part of facts_collect_gpu(), also read alone by facts_gpudirect_read(). */
void facts_collect_nvidia_driver(struct facts_ctx *ctx, json_t *facts);

/* Bounds on what a sysroot can make us read or hold. */
#define FACTS_MAX_DIR_ENTRIES 4096
#define FACTS_MAX_FILE_SIZE   (1024 * 1024)
#define FACTS_MAX_GPUS	      64

/* The test seam of the GPU facts: the NVML library to dlopen() instead of the driver's
 * libnvidia-ml.so.1 (which is only used when the sysroot is "/"). */
#define FACTS_NVML_LIBRARY_ENV "RAILYARD_NVML_LIBRARY"
/* How long a collection waits for NVML (ms, 1-600000; default 10 s): for the tests. */
#define FACTS_NVML_TIMEOUT_ENV "RAILYARD_NVML_TIMEOUT_MS"

/* GPUs as NVML enumerates them (facts_nvml.c): *ret_gpus is a new array of gpus[] entries with
 * source "nvml", or NULL when NVML is not used (no library, another machine's sysroot) or does
 * not initialise; the caller then relies on /proc/driver/nvidia. driver_loaded: the kernel
 * driver is there (/proc/driver/nvidia exists), so an NVML that finds no driver is a warning.
 * 0 or -ENOMEM; every other failure is a warning. */
__attribute__((warn_unused_result)) int facts_nvml_gpus(struct facts_ctx *ctx, bool driver_loaded,
							json_t **ret_gpus);
/* An earlier collection gave up waiting for NVML and its worker is still inside NVML: until it
 * returns, collections take the GPUs from /proc (with a warning) without calling NVML. */
bool facts_nvml_busy(void);

/* Read flags: FACTS_OPTIONAL means a missing file/dir (ENOENT) is silently absent; any other
 * failure, and ENOENT without the flag, appends a warning naming the path. FACTS_QUIET never
 * warns (attributes whose read fails by design, e.g. unused GID attributes). FACTS_SORT_BYTES
 * sorts a listing bytewise instead of naturally (fixed-width hex names: PCI addresses). */
enum {
	FACTS_OPTIONAL = 1u << 0,
	FACTS_QUIET = 1u << 1,
	FACTS_SORT_BYTES = 1u << 2,
};

/* Append "<fmt>" to the warnings (and log it at debug). */
void facts_warn(struct facts_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Read the attribute file at sysroot + the formatted path, trailing whitespace removed; the value
 * must be valid UTF-8. 0 and *ret_value (caller frees) or negative errno (warned as flags say;
 * -ENOMEM also sets ctx->oom). */
__attribute__((warn_unused_result)) int facts_read_attrf(struct facts_ctx *ctx, unsigned flags,
							 char **ret_value, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* As facts_read_attrf() for a whole file of up to FACTS_MAX_FILE_SIZE bytes, not trimmed. */
__attribute__((warn_unused_result)) int facts_read_filef(struct facts_ctx *ctx, unsigned flags,
							 char **ret_value, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Target of the symbolic link at sysroot + path (caller frees). Errors as facts_read_attrf(). */
__attribute__((warn_unused_result)) int facts_readlinkf(struct facts_ctx *ctx, unsigned flags,
							char **ret_target, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Where the link at sysroot + path finally leads (every link followed, as realpath(3)), as a
 * path relative to the sysroot without a leading slash ("sys/devices/pci0000:10/..."; caller
 * frees). A target outside the sysroot is -EXDEV, warned as "/<path>: leads outside the
 * sysroot". Other errors as facts_read_attrf(). */
__attribute__((warn_unused_result)) int facts_realpathf(struct facts_ctx *ctx, unsigned flags,
							char **ret_rel, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Entries of a directory, sorted in natural order (mlx5_2 before mlx5_10; bytewise with
 * FACTS_SORT_BYTES), without dot files
 * and without names that are not plain printable ASCII; at most FACTS_MAX_DIR_ENTRIES. */
struct facts_names {
	char **v;
	size_t n;
};
__attribute__((warn_unused_result)) int facts_list_dirf(struct facts_ctx *ctx, unsigned flags,
							struct facts_names *ret_names,
							const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* As facts_list_dirf() keeping only the names that start with prefix (borrowed); the bound
 * counts kept names, so a large directory (usr/lib/x86_64-linux-gnu) is searched whole. */
__attribute__((warn_unused_result)) int
facts_list_dir_prefixf(struct facts_ctx *ctx, unsigned flags, const char *prefix,
		       struct facts_names *ret_names, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void facts_names_done(struct facts_names *names);

/* JSON builders: on allocation failure they set ctx->oom and drop the value. The *_new variants
 * steal the reference to value (NULL counts as allocation failure). */
void facts_set_new(struct facts_ctx *ctx, json_t *obj, const char *key, json_t *value);
void facts_set_str(struct facts_ctx *ctx, json_t *obj, const char *key, const char *value);
void facts_set_int(struct facts_ctx *ctx, json_t *obj, const char *key, long long value);
void facts_set_bool(struct facts_ctx *ctx, json_t *obj, const char *key, bool value);
void facts_append_new(struct facts_ctx *ctx, json_t *arr, json_t *value);
void facts_append_str(struct facts_ctx *ctx, json_t *arr, const char *value);

/* Parsers for sysfs value shapes; 0 or -EINVAL. */
int facts_parse_int(const char *s, int base, long long *ret_value);
/* "4: ACTIVE" -> 4, "ACTIVE" (points into s). */
int facts_parse_num_name(const char *s, long long *ret_num, const char **ret_name);
/* "32.0 GT/s PCIe" (or older "8 GT/s") -> PCIe generation 1..6. */
int facts_parse_pcie_gen(const char *s, int *ret_gen);

/* Valid UTF-8 without control characters other than tab. */
bool facts_text_ok(const char *s);

#endif
