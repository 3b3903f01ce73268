/* GPU facts: one entry per GPU, from NVML where it answers (facts_nvml.c) merged with what the
 * NVIDIA kernel driver says in proc/driver/nvidia/gpus/<bus>/information (the only source when
 * NVML is absent), and the driver version (proc/driver/nvidia/version). No driver loaded: no
 * GPUs and no warning. */
#include "nodeagent/facts/facts_int.h"

#include "common/util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NV_DIR "proc/driver/nvidia"

/* "Key: \t\t value" lines; fields we report, and whether the value is an integer. */
static const struct {
	const char *label, *key;
	bool integer;
} facts_gpu_fields[] = {
	{"Model", "model", false},	 {"IRQ", "irq", true},
	{"GPU UUID", "uuid", false},	 {"Video BIOS", "video_bios", false},
	{"Bus Type", "bus_type", false}, {"Bus Location", "bus", false},
	{"Device Minor", "minor", true},
};

static void facts_gpu_one(struct facts_ctx *ctx, json_t *list, const char *bus)
{
	char *buf = NULL, *line, *save = NULL;
	long long v;
	json_t *gpu;

	if (facts_read_filef(ctx, 0, &buf, NV_DIR "/gpus/%s/information", bus) < 0)
		return;
	gpu = json_object();
	if (!gpu) {
		ctx->oom = true;
		goto out;
	}
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(line, ':'), *val;

		if (!colon)
			continue;
		*colon = '\0';
		val = colon + 1 + strspn(colon + 1, " \t");
		for (size_t i = 0; i < sizeof(facts_gpu_fields) / sizeof(facts_gpu_fields[0]);
		     i++) {
			if (strcmp(line, facts_gpu_fields[i].label) != 0 || !*val)
				continue;
			if (!facts_gpu_fields[i].integer)
				facts_set_str(ctx, gpu, facts_gpu_fields[i].key, val);
			else if (facts_parse_int(val, 10, &v) == 0)
				facts_set_int(ctx, gpu, facts_gpu_fields[i].key, v);
			else
				facts_warn(ctx, "/" NV_DIR "/gpus/%s/information: malformed %s",
					   bus, facts_gpu_fields[i].label);
		}
		if (strcmp(line, "GPU Excluded") == 0)
			facts_set_bool(ctx, gpu, "excluded", strcmp(val, "Yes") == 0);
	}
	if (!json_object_get(gpu, "bus"))
		facts_set_str(ctx, gpu, "bus", bus);
	if (!json_object_get(gpu, "model"))
		facts_warn(ctx, "/" NV_DIR "/gpus/%s/information: malformed: no Model", bus);
	facts_append_new(ctx, list, gpu);
out:
	free(buf);
}

/* "NVRM version: NVIDIA UNIX ... Kernel Module [for x86_64]  550.127.05  ..." */
void facts_collect_nvidia_driver(struct facts_ctx *ctx, json_t *facts)
{
	char *buf, *line, *tok, *save = NULL;
	const char *ver = NULL;
	json_t *drv;
	bool open;

	if (facts_read_filef(ctx, FACTS_OPTIONAL, &buf, NV_DIR "/version") < 0)
		return;
	/* before strtok_r cuts the text up */
	open = strstr(buf, "Open Kernel Module") != NULL;
	line = strtok_r(buf, "\n", &save);
	if (line && strncmp(line, "NVRM version:", 13) == 0) {
		char *tsave = NULL;

		for (tok = strtok_r(line + 13, " \t", &tsave); tok;
		     tok = strtok_r(NULL, " \t", &tsave)) {
			if (tok[0] >= '0' && tok[0] <= '9' && strchr(tok, '.') &&
			    strspn(tok, "0123456789.") == strlen(tok)) {
				ver = tok;
				break;
			}
		}
	}
	if (!ver) {
		facts_warn(ctx, "/" NV_DIR "/version: malformed: no driver version");
		goto out;
	}
	drv = json_object();
	if (!drv) {
		ctx->oom = true;
		goto out;
	}
	facts_set_str(ctx, drv, "version", ver);
	facts_set_bool(ctx, drv, "open_kernel_module", open);
	facts_set_new(ctx, facts, "nvidia_driver", drv);
out:
	free(buf);
}

/* Index of the proc entry of the GPU at bus in procs; -1 when the driver's view lacks it. */
static long facts_gpu_find(const json_t *procs, const char *bus)
{
	const json_t *p;
	size_t i;

	json_array_foreach(procs, i, p)
	{
		const char *b = json_string_value(json_object_get(p, "bus"));

		if (b && bus && strcasecmp(b, bus) == 0)
			return (long)i;
	}
	return -1;
}

static int facts_gpu_cmp(const void *a, const void *b)
{
	const char *x = json_string_value(json_object_get(*(json_t *const *)a, "bus"));
	const char *y = json_string_value(json_object_get(*(json_t *const *)b, "bus"));

	return strcmp(x ? x : "", y ? y : "");
}

/* NVML's entries completed with the driver's members NVML has no reading for (irq, minor,
 * excluded, bus_type, video_bios, model), then the GPUs only the driver lists (source "proc"),
 * sorted by bus id, each with its sysfs numa_node. Consumes nvml (may be NULL) and procs. */
static json_t *facts_gpu_merge(struct facts_ctx *ctx, json_t *nvml, json_t *procs)
{
	json_t *list = json_array(), *g, *p, *v, *sorted[2 * FACTS_MAX_GPUS];
	bool merged[FACTS_MAX_GPUS] = {false};
	const char *key;
	size_t i, n = 0;
	long long numa;
	long k;
	char *s;

	if (!list) {
		ctx->oom = true;
		goto out;
	}
	json_array_foreach(nvml, i, g)
	{
		k = facts_gpu_find(procs, json_string_value(json_object_get(g, "bus")));
		if (k >= 0 && k < FACTS_MAX_GPUS) {
			merged[k] = true;
			json_object_foreach(json_array_get(procs, (size_t)k), key, v)
			{
				if (!json_object_get(g, key))
					facts_set_new(ctx, g, key, json_incref(v));
			}
		}
		/* consumers of the driver's view read model */
		v = json_object_get(g, "name");
		if (!json_object_get(g, "model") && v)
			facts_set_new(ctx, g, "model", json_incref(v));
		if (n < RY_ARRAY_SIZE(sorted))
			sorted[n++] = g;
	}
	json_array_foreach(procs, i, p)
	{
		if (i < FACTS_MAX_GPUS && merged[i])
			continue;
		facts_set_str(ctx, p, "source", "proc");
		if (n < RY_ARRAY_SIZE(sorted))
			sorted[n++] = p;
	}
	if (n > 1)
		qsort(sorted, n, sizeof(*sorted), facts_gpu_cmp);
	for (i = 0; i < n && !ctx->oom; i++) {
		const char *bus = json_string_value(json_object_get(sorted[i], "bus"));

		if (bus && facts_read_attrf(ctx, FACTS_OPTIONAL, &s,
					    "sys/bus/pci/devices/%s/numa_node", bus) == 0) {
			if (facts_parse_int(s, 10, &numa) == 0)
				facts_set_int(ctx, sorted[i], "numa_node", numa);
			free(s);
		}
		facts_append_new(ctx, list, json_incref(sorted[i]));
	}
out:
	json_decref(nvml);
	json_decref(procs);
	return list;
}

int facts_collect_gpu(struct facts_ctx *ctx, json_t *facts)
{
	struct facts_names names = {0};
	json_t *procs, *nvml = NULL;
	bool driver;
	int r;

	procs = json_array();
	if (!procs)
		return -ENOMEM;
	driver = facts_list_dirf(ctx, FACTS_OPTIONAL | FACTS_SORT_BYTES, &names, NV_DIR "/gpus") ==
		 0;
	for (size_t i = 0; driver && i < names.n && i < FACTS_MAX_GPUS && !ctx->oom; i++)
		facts_gpu_one(ctx, procs, names.v[i]);
	facts_names_done(&names);
	r = facts_nvml_gpus(ctx, driver, &nvml);
	if (r < 0) {
		json_decref(procs);
		return r;
	}
	facts_set_new(ctx, facts, "gpus", facts_gpu_merge(ctx, nvml, procs));
	facts_collect_nvidia_driver(ctx, facts);
	return ctx->oom ? -ENOMEM : 0;
}
