/* GPU facts from NVML: libnvidia-ml.so.1 opened with dlopen() for the length of one collection
 * (no link-time dependency), every GPU it enumerates read into a gpus[] entry with source
 * "nvml". A reading NVML calls "Not Supported" is left out; any other error is a warning. The
 * library path is the test seam $RAILYARD_NVML_LIBRARY, else the driver's library on the running
 * system (sysroot "/"), else none: a fixture sysroot is not this machine. */
#include "nodeagent/facts/facts_int.h"
#include "nodeagent/facts/facts_nvml_abi.h"
#include "common/util/util.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NVML_DEFAULT_LIBRARY "libnvidia-ml.so.1"

/* Entry points; the table below gives each its symbol (and an older one to fall back on). */
enum {
	NV_INIT,
	NV_SHUTDOWN,
	NV_ERROR_STRING,
	NV_DRIVER_VERSION,
	NV_CUDA_VERSION,
	NV_COUNT,
	NV_HANDLE,
	NV_PCI_INFO,
	NV_NAME,
	NV_UUID,
	NV_SERIAL,
	NV_VBIOS,
	NV_MEMORY,
	NV_ECC_MODE,
	NV_ECC_ERRORS,
	NV_REMAPPED_ROWS,
	NV_PCIE_GEN,
	NV_PCIE_GEN_MAX,
	NV_PCIE_WIDTH,
	NV_PCIE_WIDTH_MAX,
	NV_PERSISTENCE,
	NV_CLOCKS_EVENT,
	NV_POWER_LIMIT,
	NV_NVLINK_STATE,
	NV_MIG_MODE,
	NV__COUNT,
};

static const struct {
	const char *name, *alt;
	bool required;
} nvml_syms[NV__COUNT] = {
	[NV_INIT] = {"nvmlInit_v2", NULL, true},
	[NV_SHUTDOWN] = {"nvmlShutdown", NULL, true},
	[NV_ERROR_STRING] = {"nvmlErrorString", NULL, false},
	[NV_DRIVER_VERSION] = {"nvmlSystemGetDriverVersion", NULL, false},
	[NV_CUDA_VERSION] = {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion",
			     false},
	[NV_COUNT] = {"nvmlDeviceGetCount_v2", NULL, true},
	[NV_HANDLE] = {"nvmlDeviceGetHandleByIndex_v2", NULL, true},
	[NV_PCI_INFO] = {"nvmlDeviceGetPciInfo_v3", NULL, true},
	[NV_NAME] = {"nvmlDeviceGetName", NULL, false},
	[NV_UUID] = {"nvmlDeviceGetUUID", NULL, false},
	[NV_SERIAL] = {"nvmlDeviceGetSerial", NULL, false},
	[NV_VBIOS] = {"nvmlDeviceGetVbiosVersion", NULL, false},
	[NV_MEMORY] = {"nvmlDeviceGetMemoryInfo", NULL, false},
	[NV_ECC_MODE] = {"nvmlDeviceGetEccMode", NULL, false},
	[NV_ECC_ERRORS] = {"nvmlDeviceGetTotalEccErrors", NULL, false},
	[NV_REMAPPED_ROWS] = {"nvmlDeviceGetRemappedRows", NULL, false},
	[NV_PCIE_GEN] = {"nvmlDeviceGetCurrPcieLinkGeneration", NULL, false},
	[NV_PCIE_GEN_MAX] = {"nvmlDeviceGetMaxPcieLinkGeneration", NULL, false},
	[NV_PCIE_WIDTH] = {"nvmlDeviceGetCurrPcieLinkWidth", NULL, false},
	[NV_PCIE_WIDTH_MAX] = {"nvmlDeviceGetMaxPcieLinkWidth", NULL, false},
	[NV_PERSISTENCE] = {"nvmlDeviceGetPersistenceMode", NULL, false},
	/* renamed in R535; the same bits */
	[NV_CLOCKS_EVENT] = {"nvmlDeviceGetCurrentClocksEventReasons",
			     "nvmlDeviceGetCurrentClocksThrottleReasons", false},
	[NV_POWER_LIMIT] = {"nvmlDeviceGetPowerManagementLimit", NULL, false},
	[NV_NVLINK_STATE] = {"nvmlDeviceGetNvLinkState", NULL, false},
	[NV_MIG_MODE] = {"nvmlDeviceGetMigMode", NULL, false},
};

struct nvml {
	struct facts_ctx *ctx;
	const char *lib; /* borrowed: the environment or the default name */
	void *dl;
	void *fn[NV__COUNT];
};

/* Call entry point id (resolved, non-NULL) as a function of type T. POSIX guarantees that a
 * dlsym() result converts to a function pointer. */
#define NVCALL(n, id, T, ...) (((T *)(n)->fn[id])(__VA_ARGS__))

/* One GPU being read. */
struct nvml_gpu {
	struct nvml *n;
	json_t *obj;
	char who[48]; /* "GPU 3" until its bus id is known, then "GPU 0000:17:00.0" */
	bool lost;    /* NVML_ERROR_GPU_IS_LOST: named once, nothing more is asked */
};

/* clocks-event reason bits, named as nvidia-smi -q -x names them (clocks_event_reason_*) */
static const struct {
	unsigned long long bit;
	const char *name;
} nvml_reasons[] = {
	{NVML_CLOCKS_EVENT_GPU_IDLE, "gpu_idle"},
	{NVML_CLOCKS_EVENT_APPLICATIONS_CLOCKS, "applications_clocks_setting"},
	{NVML_CLOCKS_EVENT_SW_POWER_CAP, "sw_power_cap"},
	{NVML_CLOCKS_EVENT_HW_SLOWDOWN, "hw_slowdown"},
	{NVML_CLOCKS_EVENT_SYNC_BOOST, "sync_boost"},
	{NVML_CLOCKS_EVENT_SW_THERMAL, "sw_thermal_slowdown"},
	{NVML_CLOCKS_EVENT_HW_THERMAL, "hw_thermal_slowdown"},
	{NVML_CLOCKS_EVENT_HW_POWER_BRAKE, "hw_power_brake_slowdown"},
	{NVML_CLOCKS_EVENT_DISPLAY_CLOCKS, "display_clocks_setting"},
};

/* NVML's text for rc, when the library has one that is short printable text. */
static const char *nvml_strerror(struct nvml *n, nvmlReturn_t rc, char *buf, size_t len)
{
	const char *s = NULL;

	if (n->fn[NV_ERROR_STRING])
		s = NVCALL(n, NV_ERROR_STRING, nvml_fn_error_string, rc);
	if (s && strnlen(s, 128) < 128 && s[0] && facts_text_ok(s))
		return s;
	snprintf(buf, len, "NVML error %d", rc);
	return buf;
}

/* Whether a call on g succeeded. "Not Supported" is an absent reading; any other failure is a
 * warning naming the call and the GPU. */
static bool nvml_ok(struct nvml_gpu *g, nvmlReturn_t rc, const char *call)
{
	char buf[32];

	if (rc == NVML_SUCCESS)
		return true;
	if (rc == NVML_ERROR_NOT_SUPPORTED || g->lost)
		return false;
	facts_warn(g->n->ctx, "%s: %s (%s): %s", g->n->lib, call, g->who,
		   nvml_strerror(g->n, rc, buf, sizeof(buf)));
	if (rc == NVML_ERROR_GPU_IS_LOST)
		g->lost = true;
	return false;
}

/* Whether entry point id may be called for g: resolved (an older driver lacks some), and g not
 * lost. */
static bool nvml_can(struct nvml_gpu *g, int id)
{
	return g->n->fn[id] && !g->lost;
}

/* A string reading into obj[key]: NUL-terminated within the buffer, non-empty UTF-8 text. */
static void nvml_string(struct nvml_gpu *g, nvmlDevice_t dev, int id, const char *key,
			unsigned int size)
{
	char buf[128] = "";

	if (!nvml_can(g, id) ||
	    !nvml_ok(g, NVCALL(g->n, id, nvml_fn_dev_string, dev, buf, size), nvml_syms[id].name))
		return;
	if (strnlen(buf, size) == size || !buf[0] || !facts_text_ok(buf)) {
		facts_warn(g->n->ctx, "%s: %s (%s): malformed value", g->n->lib, nvml_syms[id].name,
			   g->who);
		return;
	}
	facts_set_str(g->n->ctx, g->obj, key, buf);
}

/* An unsigned reading into obj[key] when it lies in [lo, hi]; else a warning. */
static void nvml_uint(struct nvml_gpu *g, json_t *obj, nvmlDevice_t dev, int id, const char *key,
		      unsigned int lo, unsigned int hi)
{
	unsigned int v = 0;

	if (!nvml_can(g, id) ||
	    !nvml_ok(g, NVCALL(g->n, id, nvml_fn_dev_uint, dev, &v), nvml_syms[id].name))
		return;
	if (v < lo || v > hi) {
		facts_warn(g->n->ctx, "%s: %s (%s): malformed value %u", g->n->lib,
			   nvml_syms[id].name, g->who, v);
		return;
	}
	facts_set_int(g->n->ctx, obj, key, v);
}

/* An nvmlEnableState_t (or a 0/1 flag) into obj[key] as a boolean. */
static void nvml_flag(struct nvml_gpu *g, json_t *obj, const char *call, long long v,
		      const char *key)
{
	if (v != 0 && v != 1) {
		facts_warn(g->n->ctx, "%s: %s (%s): malformed value %lld", g->n->lib, call, g->who,
			   v);
		return;
	}
	facts_set_bool(g->n->ctx, obj, key, v == 1);
}

/* obj into g->obj[key] when it has members; dropped otherwise. */
static void nvml_set_object(struct nvml_gpu *g, const char *key, json_t *obj)
{
	if (!obj) {
		g->n->ctx->oom = true;
		return;
	}
	if (json_object_size(obj) == 0) {
		json_decref(obj);
		return;
	}
	facts_set_new(g->n->ctx, g->obj, key, obj);
}

/* "00000000:17:00.0" (NVML's 32-bit domain, upper-case hex) -> "0000:17:00.0" as sysfs and
 * /proc/driver/nvidia name it. */
static int nvml_bus_id(const char *s, size_t size, char *out, size_t outlen)
{
	unsigned int dom, bus, dev, fn;
	int used = 0;

	if (strnlen(s, size) == size || strspn(s, "0123456789abcdefABCDEF:.") != strlen(s))
		return -EINVAL;
	if (sscanf(s, "%8x:%2x:%2x.%1x%n", &dom, &bus, &dev, &fn, &used) != 4 ||
	    (size_t)used != strlen(s) || dev > 0x1f || fn > 7 || dom > 0xffff)
		return -EINVAL;
	snprintf(out, outlen, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return 0;
}

static void nvml_ecc(struct nvml_gpu *g, nvmlDevice_t dev)
{
	static const struct {
		int counter;
		const char *key;
	} counts[] = {{NVML_VOLATILE_ECC, "volatile_uncorrected"},
		      {NVML_AGGREGATE_ECC, "aggregate_uncorrected"}};
	nvmlEnableState_t cur = 0, pend = 0;
	json_t *ecc = json_object();

	if (!ecc) {
		g->n->ctx->oom = true;
		return;
	}
	if (nvml_can(g, NV_ECC_MODE) &&
	    nvml_ok(g, NVCALL(g->n, NV_ECC_MODE, nvml_fn_dev_states, dev, &cur, &pend),
		    "nvmlDeviceGetEccMode")) {
		nvml_flag(g, ecc, "nvmlDeviceGetEccMode", cur, "enabled");
		nvml_flag(g, ecc, "nvmlDeviceGetEccMode", pend, "pending_enabled");
	}
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		unsigned long long v = 0;

		if (!nvml_can(g, NV_ECC_ERRORS) ||
		    !nvml_ok(g,
			     NVCALL(g->n, NV_ECC_ERRORS, nvml_fn_ecc_errors, dev,
				    NVML_MEMORY_ERROR_TYPE_UNCORRECTED, counts[i].counter, &v),
			     "nvmlDeviceGetTotalEccErrors"))
			continue;
		if (v > LLONG_MAX)
			facts_warn(g->n->ctx,
				   "%s: nvmlDeviceGetTotalEccErrors (%s): malformed value",
				   g->n->lib, g->who);
		else
			facts_set_int(g->n->ctx, ecc, counts[i].key, (long long)v);
	}
	nvml_set_object(g, "ecc", ecc);
}

static void nvml_remapped_rows(struct nvml_gpu *g, nvmlDevice_t dev)
{
	unsigned int corr = 0, unc = 0, pending = 0, failure = 0;
	json_t *rows;

	if (!nvml_can(g, NV_REMAPPED_ROWS) ||
	    !nvml_ok(g,
		     NVCALL(g->n, NV_REMAPPED_ROWS, nvml_fn_remapped_rows, dev, &corr, &unc,
			    &pending, &failure),
		     "nvmlDeviceGetRemappedRows"))
		return;
	rows = json_object();
	if (!rows) {
		g->n->ctx->oom = true;
		return;
	}
	facts_set_int(g->n->ctx, rows, "correctable", corr);
	facts_set_int(g->n->ctx, rows, "uncorrectable", unc);
	nvml_flag(g, rows, "nvmlDeviceGetRemappedRows", pending, "pending");
	nvml_flag(g, rows, "nvmlDeviceGetRemappedRows", failure, "failure");
	nvml_set_object(g, "remapped_rows", rows);
}

static void nvml_pcie(struct nvml_gpu *g, nvmlDevice_t dev)
{
	json_t *pcie = json_object();

	if (!pcie) {
		g->n->ctx->oom = true;
		return;
	}
	/* generations 1..7, widths x1..x32 (as the PCI collector bounds them) */
	nvml_uint(g, pcie, dev, NV_PCIE_GEN, "gen", 1, 7);
	nvml_uint(g, pcie, dev, NV_PCIE_GEN_MAX, "gen_max", 1, 7);
	nvml_uint(g, pcie, dev, NV_PCIE_WIDTH, "width", 1, 32);
	nvml_uint(g, pcie, dev, NV_PCIE_WIDTH_MAX, "width_max", 1, 32);
	nvml_set_object(g, "pcie", pcie);
}

static void nvml_clocks_event(struct nvml_gpu *g, nvmlDevice_t dev)
{
	unsigned long long mask = 0, known = 0;
	json_t *ev, *active;

	if (!nvml_can(g, NV_CLOCKS_EVENT) ||
	    !nvml_ok(g, NVCALL(g->n, NV_CLOCKS_EVENT, nvml_fn_dev_ull, dev, &mask),
		     nvml_syms[NV_CLOCKS_EVENT].name))
		return;
	ev = json_object();
	active = json_array();
	if (!ev || !active) {
		json_decref(ev);
		json_decref(active);
		g->n->ctx->oom = true;
		return;
	}
	for (size_t i = 0; i < sizeof(nvml_reasons) / sizeof(nvml_reasons[0]); i++) {
		known |= nvml_reasons[i].bit;
		if (mask & nvml_reasons[i].bit)
			facts_append_str(g->n->ctx, active, nvml_reasons[i].name);
	}
	/* bits a newer driver defines: named by number rather than dropped */
	for (int b = 0; b < 64; b++) {
		char name[16];

		if (!(mask & ~known & (1ULL << b)))
			continue;
		snprintf(name, sizeof(name), "bit_%d", b);
		facts_append_str(g->n->ctx, active, name);
	}
	if (mask > LLONG_MAX)
		facts_warn(g->n->ctx, "%s: %s (%s): malformed value", g->n->lib,
			   nvml_syms[NV_CLOCKS_EVENT].name, g->who);
	else
		facts_set_int(g->n->ctx, ev, "mask", (long long)mask);
	facts_set_new(g->n->ctx, ev, "active", active);
	facts_set_bool(g->n->ctx, ev, "hw_slowdown",
		       (mask & (NVML_CLOCKS_EVENT_HW_SLOWDOWN | NVML_CLOCKS_EVENT_HW_THERMAL |
				NVML_CLOCKS_EVENT_HW_POWER_BRAKE)) != 0);
	facts_set_bool(g->n->ctx, ev, "thermal",
		       (mask & (NVML_CLOCKS_EVENT_SW_THERMAL | NVML_CLOCKS_EVENT_HW_THERMAL)) != 0);
	facts_set_new(g->n->ctx, g->obj, "clocks_event_reasons", ev);
}

static void nvml_power_limit(struct nvml_gpu *g, nvmlDevice_t dev)
{
	unsigned int mw = 0;

	if (!nvml_can(g, NV_POWER_LIMIT) ||
	    !nvml_ok(g, NVCALL(g->n, NV_POWER_LIMIT, nvml_fn_dev_uint, dev, &mw),
		     "nvmlDeviceGetPowerManagementLimit"))
		return;
	/* milliwatts; a GPU board draws well under 10 kW */
	if (mw == 0 || mw > 10000000) {
		facts_warn(g->n->ctx,
			   "%s: nvmlDeviceGetPowerManagementLimit (%s): malformed value %u",
			   g->n->lib, g->who, mw);
		return;
	}
	if (mw % 1000 == 0)
		facts_set_int(g->n->ctx, g->obj, "power_limit_w", mw / 1000);
	else
		facts_set_new(g->n->ctx, g->obj, "power_limit_w", json_real(mw / 1000.0));
}

/* Links that answer; "Not Supported" (and links past the device's count) are left out, so a
 * GPU without NVLink has no nvlink member. */
static void nvml_nvlink(struct nvml_gpu *g, nvmlDevice_t dev)
{
	json_t *links;

	if (!nvml_can(g, NV_NVLINK_STATE))
		return;
	links = json_array();
	if (!links) {
		g->n->ctx->oom = true;
		return;
	}
	for (unsigned int l = 0; l < NVML_NVLINK_MAX_LINKS && !g->lost; l++) {
		nvmlEnableState_t active = 0;
		nvmlReturn_t rc =
			NVCALL(g->n, NV_NVLINK_STATE, nvml_fn_nvlink_state, dev, l, &active);
		json_t *link;

		if (rc == NVML_ERROR_INVALID_ARGUMENT)
			continue;
		if (!nvml_ok(g, rc, "nvmlDeviceGetNvLinkState")) {
			if (rc != NVML_ERROR_NOT_SUPPORTED)
				break; /* named once, not once a link */
			continue;
		}
		link = json_object();
		if (!link) {
			g->n->ctx->oom = true;
			break;
		}
		facts_set_int(g->n->ctx, link, "link", l);
		nvml_flag(g, link, "nvmlDeviceGetNvLinkState", active, "active");
		facts_append_new(g->n->ctx, links, link);
	}
	if (json_array_size(links) == 0) {
		json_decref(links);
		return;
	}
	facts_set_new(g->n->ctx, g->obj, "nvlink", links);
}

static void nvml_mig(struct nvml_gpu *g, nvmlDevice_t dev)
{
	unsigned int cur = 0, pend = 0;
	json_t *mig;

	if (!nvml_can(g, NV_MIG_MODE) ||
	    !nvml_ok(g, NVCALL(g->n, NV_MIG_MODE, nvml_fn_dev_uints, dev, &cur, &pend),
		     "nvmlDeviceGetMigMode"))
		return;
	mig = json_object();
	if (!mig) {
		g->n->ctx->oom = true;
		return;
	}
	nvml_flag(g, mig, "nvmlDeviceGetMigMode", cur, "current");
	nvml_flag(g, mig, "nvmlDeviceGetMigMode", pend, "pending");
	nvml_set_object(g, "mig", mig);
}

/* The system-wide readings every GPU entry repeats: driver version and CUDA driver version. */
struct nvml_system {
	char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
	char cuda[24];
};

static void nvml_read_system(struct nvml *n, struct nvml_system *sys)
{
	struct nvml_gpu g = {.n = n};
	int cuda = 0;

	snprintf(g.who, sizeof(g.who), "system");
	if (n->fn[NV_DRIVER_VERSION] && nvml_ok(&g,
						NVCALL(n, NV_DRIVER_VERSION, nvml_fn_sys_string,
						       sys->driver, sizeof(sys->driver)),
						"nvmlSystemGetDriverVersion")) {
		if (strnlen(sys->driver, sizeof(sys->driver)) == sizeof(sys->driver) ||
		    !sys->driver[0] || !facts_text_ok(sys->driver)) {
			facts_warn(n->ctx, "%s: nvmlSystemGetDriverVersion: malformed value",
				   n->lib);
			sys->driver[0] = '\0';
		}
	} else {
		sys->driver[0] = '\0';
	}
	sys->cuda[0] = '\0';
	/* 13000 -> "13.0", 12040 -> "12.4" (nvml.h's NVML_CUDA_DRIVER_VERSION_MAJOR/MINOR) */
	if (n->fn[NV_CUDA_VERSION] &&
	    nvml_ok(&g, NVCALL(n, NV_CUDA_VERSION, nvml_fn_sys_int, &cuda),
		    nvml_syms[NV_CUDA_VERSION].name)) {
		if (cuda <= 0 || cuda >= 1000000)
			facts_warn(n->ctx, "%s: %s: malformed value %d", n->lib,
				   nvml_syms[NV_CUDA_VERSION].name, cuda);
		else
			snprintf(sys->cuda, sizeof(sys->cuda), "%d.%d", cuda / 1000,
				 (cuda % 1000) / 10);
	}
}

/* Read GPU index i into a new entry appended to list. */
static void nvml_read_gpu(struct nvml *n, const struct nvml_system *sys, unsigned int i,
			  json_t *list)
{
	struct nvml_gpu g = {.n = n};
	nvmlPciInfo_t pci;
	nvmlMemory_t mem;
	nvmlDevice_t dev = NULL;
	nvmlEnableState_t pm = 0;
	char bus[32];

	snprintf(g.who, sizeof(g.who), "GPU %u", i);
	if (!nvml_ok(&g, NVCALL(n, NV_HANDLE, nvml_fn_handle, i, &dev),
		     "nvmlDeviceGetHandleByIndex_v2"))
		return;
	memset(&pci, 0, sizeof(pci));
	if (!nvml_ok(&g, NVCALL(n, NV_PCI_INFO, nvml_fn_pci_info, dev, &pci),
		     "nvmlDeviceGetPciInfo_v3"))
		return;
	/* without its bus id a GPU cannot be placed or matched with the driver's view */
	if (nvml_bus_id(pci.busId, sizeof(pci.busId), bus, sizeof(bus)) < 0) {
		facts_warn(n->ctx, "%s: nvmlDeviceGetPciInfo_v3 (%s): malformed bus id", n->lib,
			   g.who);
		return;
	}
	snprintf(g.who, sizeof(g.who), "GPU %s", bus);
	g.obj = json_object();
	if (!g.obj) {
		n->ctx->oom = true;
		return;
	}
	facts_set_str(n->ctx, g.obj, "bus", bus);
	facts_set_str(n->ctx, g.obj, "source", "nvml");
	nvml_string(&g, dev, NV_NAME, "name", NVML_DEVICE_NAME_V2_BUFFER_SIZE);
	nvml_string(&g, dev, NV_UUID, "uuid", NVML_DEVICE_UUID_V2_BUFFER_SIZE);
	nvml_string(&g, dev, NV_SERIAL, "serial", NVML_DEVICE_SERIAL_BUFFER_SIZE);
	memset(&mem, 0, sizeof(mem));
	if (nvml_can(&g, NV_MEMORY) && nvml_ok(&g, NVCALL(n, NV_MEMORY, nvml_fn_memory, dev, &mem),
					       "nvmlDeviceGetMemoryInfo")) {
		/* at most 1 PiB */
		if (mem.total == 0 || mem.total > (1ULL << 50))
			facts_warn(n->ctx, "%s: nvmlDeviceGetMemoryInfo (%s): malformed value",
				   n->lib, g.who);
		else
			facts_set_int(n->ctx, g.obj, "memory_total_bytes", (long long)mem.total);
	}
	if (sys->driver[0])
		facts_set_str(n->ctx, g.obj, "driver_version", sys->driver);
	if (sys->cuda[0])
		facts_set_str(n->ctx, g.obj, "cuda_driver_version", sys->cuda);
	nvml_string(&g, dev, NV_VBIOS, "vbios", NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE);
	nvml_ecc(&g, dev);
	nvml_remapped_rows(&g, dev);
	nvml_pcie(&g, dev);
	if (nvml_can(&g, NV_PERSISTENCE) &&
	    nvml_ok(&g, NVCALL(n, NV_PERSISTENCE, nvml_fn_dev_state, dev, &pm),
		    "nvmlDeviceGetPersistenceMode"))
		nvml_flag(&g, g.obj, "nvmlDeviceGetPersistenceMode", pm, "persistence_mode");
	nvml_clocks_event(&g, dev);
	nvml_power_limit(&g, dev);
	nvml_nvlink(&g, dev);
	nvml_mig(&g, dev);
	facts_append_new(n->ctx, list, g.obj);
}

/* Resolve the entry points; false (and a warning) when a required one is missing. */
static bool nvml_resolve(struct nvml *n)
{
	for (int i = 0; i < NV__COUNT; i++) {
		n->fn[i] = dlsym(n->dl, nvml_syms[i].name);
		if (!n->fn[i] && nvml_syms[i].alt)
			n->fn[i] = dlsym(n->dl, nvml_syms[i].alt);
		if (!n->fn[i] && nvml_syms[i].required) {
			facts_warn(n->ctx, "%s: not NVML: no symbol %s", n->lib, nvml_syms[i].name);
			return false;
		}
	}
	return true;
}

/* One collection through NVML: lib (from_env: named by the seam) opened, read, closed. */
static int nvml_collect(struct facts_ctx *ctx, const char *lib, bool from_env, bool driver_loaded,
			json_t **ret_gpus)
{
	struct nvml n = {.ctx = ctx, .lib = lib};
	struct nvml_system sys;
	unsigned int count = 0;
	json_t *list = NULL;
	nvmlReturn_t rc;
	char buf[32];

	*ret_gpus = NULL;
	n.dl = dlopen(n.lib, RTLD_NOW | RTLD_LOCAL);
	if (!n.dl) {
		const char *e = dlerror();

		/* no NVIDIA userspace driver: the /proc view is all there is. A library named in
		 * the environment must be there. */
		if (from_env)
			facts_warn(ctx, "%s: cannot load (" FACTS_NVML_LIBRARY_ENV "): %.200s",
				   n.lib, e && facts_text_ok(e) ? e : "dlopen failed");
		return 0;
	}
	if (!nvml_resolve(&n))
		goto out;
	rc = NVCALL(&n, NV_INIT, nvml_fn_void);
	if (rc != NVML_SUCCESS) {
		/* libnvidia-ml installed but no kernel driver loaded, as /proc says: no GPUs */
		if (rc != NVML_ERROR_DRIVER_NOT_LOADED || driver_loaded)
			facts_warn(ctx, "%s: nvmlInit_v2: %s", n.lib,
				   nvml_strerror(&n, rc, buf, sizeof(buf)));
		goto out;
	}
	list = json_array();
	if (!list) {
		ctx->oom = true;
		goto shutdown;
	}
	nvml_read_system(&n, &sys);
	rc = NVCALL(&n, NV_COUNT, nvml_fn_count, &count);
	if (rc != NVML_SUCCESS) {
		facts_warn(ctx, "%s: nvmlDeviceGetCount_v2: %s", n.lib,
			   nvml_strerror(&n, rc, buf, sizeof(buf)));
		/* initialised but cannot enumerate: fall back to /proc */
		json_decref(list);
		list = NULL;
		goto shutdown;
	}
	if (count > FACTS_MAX_GPUS) {
		facts_warn(ctx, "%s: %u GPUs, only the first %d reported", n.lib, count,
			   FACTS_MAX_GPUS);
		count = FACTS_MAX_GPUS;
	}
	for (unsigned int i = 0; i < count && !ctx->oom; i++)
		nvml_read_gpu(&n, &sys, i, list);
shutdown:
	rc = NVCALL(&n, NV_SHUTDOWN, nvml_fn_void);
	if (rc != NVML_SUCCESS)
		facts_warn(ctx, "%s: nvmlShutdown: %s", n.lib,
			   nvml_strerror(&n, rc, buf, sizeof(buf)));
out:
	dlclose(n.dl);
	if (ctx->oom) {
		json_decref(list);
		return -ENOMEM;
	}
	*ret_gpus = list;
	return 0;
}

/* A wedged driver (a GPU fallen off the bus, Xid 79; a hung GSP) can keep an NVML call from
 * returning for minutes, and a collection that waits for it holds up the agent's session
 * (heartbeats, plans). So NVML is read on a worker thread that a collection waits for up to
 * FACTS_NVML_TIMEOUT_MS; past that the GPUs come from /proc with a warning, the worker is left to
 * finish on its own (it then frees what it read), and until it has, collections do not call
 * NVML again: they would hang behind it. */
#define FACTS_NVML_TIMEOUT_MS 10000

struct nvml_job {
	char *lib;
	bool from_env, driver_loaded;
	struct facts_ctx ctx; /* its own: warnings here, moved over when it answers in time */
	json_t *gpus;
	int r;
	bool done, abandoned; /* under nvml_lock */
	int64_t started_ms;
};

static pthread_mutex_t nvml_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t nvml_cond;
static pthread_once_t nvml_once = PTHREAD_ONCE_INIT;
static struct nvml_job *nvml_stuck; /* under nvml_lock: an abandoned job still inside NVML */

static void nvml_cond_init(void)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&nvml_cond, &a);
	pthread_condattr_destroy(&a);
}

static void nvml_job_free(struct nvml_job *j)
{
	if (!j)
		return;
	json_decref(j->gpus);
	json_decref(j->ctx.warnings);
	free(j->lib);
	free((char *)j->ctx.sysroot);
	free(j);
}

static void *nvml_worker(void *arg)
{
	struct nvml_job *j = arg;
	bool abandoned;

	j->r = nvml_collect(&j->ctx, j->lib, j->from_env, j->driver_loaded, &j->gpus);
	pthread_mutex_lock(&nvml_lock);
	j->done = true;
	abandoned = j->abandoned;
	if (abandoned && nvml_stuck == j)
		nvml_stuck = NULL;
	pthread_cond_broadcast(&nvml_cond);
	pthread_mutex_unlock(&nvml_lock);
	if (abandoned)
		nvml_job_free(j);
	return NULL;
}

/* The wait for NVML: $RAILYARD_NVML_TIMEOUT_MS (1-600000, for tests) or the default. */
static int nvml_timeout_ms(void)
{
	const char *v = getenv(FACTS_NVML_TIMEOUT_ENV);
	char *end;
	long ms;

	if (!v || !*v)
		return FACTS_NVML_TIMEOUT_MS;
	ms = strtol(v, &end, 10);
	return *end || ms < 1 || ms > 600000 ? FACTS_NVML_TIMEOUT_MS : (int)ms;
}

bool facts_nvml_busy(void)
{
	bool busy;

	pthread_mutex_lock(&nvml_lock);
	busy = nvml_stuck != NULL;
	pthread_mutex_unlock(&nvml_lock);
	return busy;
}

int facts_nvml_gpus(struct facts_ctx *ctx, bool driver_loaded, json_t **ret_gpus)
{
	const char *env = getenv(FACTS_NVML_LIBRARY_ENV), *lib;
	int timeout = nvml_timeout_ms();
	struct nvml_job *j;
	pthread_attr_t attr;
	pthread_t t;
	struct timespec until;
	int64_t deadline;
	bool done;
	int r;

	*ret_gpus = NULL;
	if (env && *env)
		lib = env;
	else if (strcmp(ctx->sysroot, "/") == 0)
		lib = NVML_DEFAULT_LIBRARY;
	else
		return 0; /* a fixture tree: NVML would describe this machine instead */
	pthread_once(&nvml_once, nvml_cond_init);
	pthread_mutex_lock(&nvml_lock);
	if (nvml_stuck) {
		long long secs = (long long)((util_now_mono_ms() - nvml_stuck->started_ms) / 1000);

		pthread_mutex_unlock(&nvml_lock);
		facts_warn(ctx,
			   "%s: NVML has not answered for %lld s (an earlier collection is still "
			   "waiting for it); GPUs from /proc only",
			   lib, secs);
		return ctx->oom ? -ENOMEM : 0;
	}
	pthread_mutex_unlock(&nvml_lock);

	j = calloc(1, sizeof(*j));
	if (!j || !(j->lib = strdup(lib)) || !(j->ctx.sysroot = strdup(ctx->sysroot)) ||
	    !(j->ctx.warnings = json_array())) {
		nvml_job_free(j);
		return -ENOMEM;
	}
	j->from_env = lib == env;
	j->driver_loaded = driver_loaded;
	j->started_ms = util_now_mono_ms();
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&t, &attr, nvml_worker, j);
	pthread_attr_destroy(&attr);
	if (r != 0) {
		/* No thread to spare: read it here, without the guard. */
		nvml_job_free(j);
		return nvml_collect(ctx, lib, lib == env, driver_loaded, ret_gpus);
	}

	deadline = j->started_ms + timeout;
	pthread_mutex_lock(&nvml_lock);
	while (!j->done && util_now_mono_ms() < deadline) {
		until.tv_sec = deadline / 1000;
		until.tv_nsec = (deadline % 1000) * 1000000;
		pthread_cond_timedwait(&nvml_cond, &nvml_lock, &until);
	}
	done = j->done;
	if (!done) {
		j->abandoned = true;
		nvml_stuck = j;
	}
	pthread_mutex_unlock(&nvml_lock);
	if (!done) {
		facts_warn(ctx,
			   "%s: NVML did not answer within %d ms (a GPU fallen off the bus or a "
			   "wedged driver?); GPUs from /proc only",
			   lib, timeout);
		return ctx->oom ? -ENOMEM : 0;
	}
	/* Answered in time: its warnings and GPUs are this collection's. */
	if (json_array_extend(ctx->warnings, j->ctx.warnings) < 0)
		ctx->oom = true;
	r = j->ctx.oom ? -ENOMEM : j->r;
	if (r >= 0) {
		*ret_gpus = j->gpus;
		j->gpus = NULL;
	}
	nvml_job_free(j);
	return r;
}
