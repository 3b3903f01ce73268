/* GPU facts: one entry per GPU the NVIDIA kernel driver knows
 * (proc/driver/nvidia/gpus/<bus>/information) and the driver version
 * (proc/driver/nvidia/version). No driver loaded: no GPUs and no warning. */
#include "nodeagent/facts/facts_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
	char *buf = NULL, *line, *save = NULL, *s;
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
	if (facts_read_attrf(ctx, FACTS_OPTIONAL, &s, "sys/bus/pci/devices/%s/numa_node", bus) ==
	    0) {
		if (facts_parse_int(s, 10, &v) == 0)
			facts_set_int(ctx, gpu, "numa_node", v);
		free(s);
	}
	facts_append_new(ctx, list, gpu);
out:
	free(buf);
}

/* "NVRM version: NVIDIA UNIX ... Kernel Module [for x86_64]  550.127.05  ..." */
static void facts_nvidia_driver(struct facts_ctx *ctx, json_t *facts)
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

int facts_collect_gpu(struct facts_ctx *ctx, json_t *facts)
{
	struct facts_names names = {0};
	json_t *list;

	list = json_array();
	if (!list)
		return -ENOMEM;
	if (facts_list_dirf(ctx, FACTS_OPTIONAL | FACTS_SORT_BYTES, &names, NV_DIR "/gpus") == 0)
		for (size_t i = 0; i < names.n && i < FACTS_MAX_GPUS && !ctx->oom; i++)
			facts_gpu_one(ctx, list, names.v[i]);
	facts_set_new(ctx, facts, "gpus", list);
	facts_names_done(&names);
	facts_nvidia_driver(ctx, facts);
	return ctx->oom ? -ENOMEM : 0;
}
