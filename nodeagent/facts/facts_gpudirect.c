/* GPUDirect RDMA method, derived from facts already collected (kernel, NVIDIA driver): dma-buf
 * where the kernel, the driver and its modules support it, else nvidia-peermem. Playbooks choose
 * their steps from it (`when: gpudirect.method`); the rule is here, once, and in docs/facts.md. */
#include "nodeagent/facts/facts.h"
#include "nodeagent/facts/facts_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* dma-buf export of GPU memory (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED) needs the open GPU kernel
 * modules, driver R515 or later and a kernel with dma-buf importers in RDMA (5.12). */
#define DMABUF_KERNEL_MAJOR 5
#define DMABUF_KERNEL_MINOR 12
#define DMABUF_DRIVER_MAJOR 515

int facts_collect_gpudirect(struct facts_ctx *ctx, json_t *facts)
{
	const json_t *drv = json_object_get(facts, "nvidia_driver");
	const char *kernel =
		json_string_value(json_object_get(json_object_get(facts, "kernel"), "release"));
	const char *version = json_string_value(json_object_get(drv, "version"));
	bool open = json_is_true(json_object_get(drv, "open_kernel_module"));
	int kmaj = -1, kmin = -1;
	long dmaj = version ? strtol(version, NULL, 10) : -1;
	char reason[256];
	bool dmabuf = false;
	json_t *o;

	if (!drv)
		return 0; /* no GPU driver: nothing to choose */
	if (!kernel || sscanf(kernel, "%d.%d", &kmaj, &kmin) != 2)
		snprintf(reason, sizeof(reason), "kernel release unknown");
	else if (kmaj < DMABUF_KERNEL_MAJOR ||
		 (kmaj == DMABUF_KERNEL_MAJOR && kmin < DMABUF_KERNEL_MINOR))
		snprintf(reason, sizeof(reason), "kernel %s < %d.%d", kernel, DMABUF_KERNEL_MAJOR,
			 DMABUF_KERNEL_MINOR);
	else if (!open)
		snprintf(reason, sizeof(reason),
			 "proprietary GPU kernel modules (dma-buf needs the "
			 "open ones)");
	else if (dmaj < DMABUF_DRIVER_MAJOR)
		snprintf(reason, sizeof(reason), "driver %s < %d", version ? version : "unknown",
			 DMABUF_DRIVER_MAJOR);
	else {
		dmabuf = true;
		snprintf(reason, sizeof(reason),
			 "kernel %s >= %d.%d, open kernel modules, driver %s >= %d", kernel,
			 DMABUF_KERNEL_MAJOR, DMABUF_KERNEL_MINOR, version, DMABUF_DRIVER_MAJOR);
	}
	o = json_object();
	if (!o || json_object_set_new(facts, "gpudirect", o) < 0) {
		ctx->oom = true;
		return -ENOMEM;
	}
	facts_set_str(ctx, o, "method", dmabuf ? "dma-buf" : "peermem");
	facts_set_bool(ctx, o, "dmabuf", dmabuf);
	facts_set_str(ctx, o, "reason", reason);
	return 0;
}

int facts_gpudirect_read(const char *sysroot, json_t **ret_gpudirect)
{
	struct facts_ctx ctx = {.sysroot = sysroot && *sysroot ? sysroot : "/"};
	json_t *facts = json_object(), *kernel = json_object(), *gd;
	char *release = NULL;
	int r = -ENOMEM;

	ctx.warnings = json_array();
	if (!facts || !kernel || !ctx.warnings)
		goto out;
	if (facts_read_attrf(&ctx, FACTS_OPTIONAL, &release, "proc/sys/kernel/osrelease") == 0)
		facts_set_str(&ctx, kernel, "release", release);
	facts_set_new(&ctx, facts, "kernel", kernel);
	kernel = NULL;
	facts_collect_nvidia_driver(&ctx, facts);
	if (ctx.oom || facts_collect_gpudirect(&ctx, facts) < 0)
		goto out;
	gd = json_object_get(facts, "gpudirect");
	*ret_gpudirect = gd ? json_incref(gd) : NULL;
	r = 0;
out:
	free(release);
	json_decref(kernel);
	json_decref(facts);
	json_decref(ctx.warnings);
	return r;
}
