/* A test double of libnvidia-ml.so.1, built only for the tests: the NVML entry points the GPU
 * facts use, answering from a text file of readings named by $RAILYARD_NVML_DOUBLE_DATA (the
 * format of tests/fixtures/nvml/h200-vm.txt, real readings of an H200; see
 * tests/fixtures/nvml/README.md). A reading the file lacks is "Not Supported"; "ERR <text>" makes
 * the call fail with the NVML error whose message is <text>; a later line overrides an earlier;
 * "count_hang_ms <ms>" makes nvmlDeviceGetCount_v2 block that long (a wedged driver); "lost 1"
 * makes every call on that GPU fail with "GPU is lost". Readings that change over time (the GPU
 * watcher's ticks) come from $RAILYARD_NVML_DOUBLE_SERIES: one JSON object a line,
 * {"GPU index": {"key": value, ...}, ...}, whose readings override the file's; the Nth call of
 * nvmlDeviceGetCount_v2 takes the Nth line (the last one stays after the end). The agent loads
 * it through its seam, RAILYARD_NVML_LIBRARY. */
#include "nodeagent/facts/facts_nvml_abi.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DOUBLE_MAX_GPUS	 64
#define DOUBLE_MAX_LINES 256
#define DOUBLE_MAX_TICKS 1024

nvml_fn_void nvmlInit_v2, nvmlShutdown;
nvml_fn_error_string nvmlErrorString;
nvml_fn_sys_string nvmlSystemGetDriverVersion;
nvml_fn_sys_int nvmlSystemGetCudaDriverVersion_v2;
nvml_fn_count nvmlDeviceGetCount_v2;
nvml_fn_handle nvmlDeviceGetHandleByIndex_v2;
nvml_fn_pci_info nvmlDeviceGetPciInfo_v3;
nvml_fn_dev_string nvmlDeviceGetName, nvmlDeviceGetUUID, nvmlDeviceGetSerial,
	nvmlDeviceGetVbiosVersion;
nvml_fn_memory nvmlDeviceGetMemoryInfo;
nvml_fn_dev_states nvmlDeviceGetEccMode;
nvml_fn_ecc_errors nvmlDeviceGetTotalEccErrors;
nvml_fn_remapped_rows nvmlDeviceGetRemappedRows;
nvml_fn_dev_uint nvmlDeviceGetCurrPcieLinkGeneration, nvmlDeviceGetMaxPcieLinkGeneration,
	nvmlDeviceGetCurrPcieLinkWidth, nvmlDeviceGetMaxPcieLinkWidth,
	nvmlDeviceGetPowerManagementLimit;
nvml_fn_dev_state nvmlDeviceGetPersistenceMode;
nvml_fn_dev_ull nvmlDeviceGetCurrentClocksEventReasons;
nvml_fn_nvlink_state nvmlDeviceGetNvLinkState;
nvml_fn_dev_uints nvmlDeviceGetMigMode;
nvml_fn_dev_state nvmlDeviceGetRetiredPagesPendingStatus;
nvml_fn_nvlink_error nvmlDeviceGetNvLinkErrorCounter;
nvml_fn_fabric_info nvmlDeviceGetGpuFabricInfo;

/* nvmlErrorString() texts, which is also how the readings file names errors. */
static const struct {
	nvmlReturn_t rc;
	const char *text;
} double_errors[] = {
	{NVML_ERROR_UNINITIALIZED, "Uninitialized"},
	{NVML_ERROR_INVALID_ARGUMENT, "Invalid Argument"},
	{NVML_ERROR_NOT_SUPPORTED, "Not Supported"},
	{NVML_ERROR_NO_PERMISSION, "Insufficient Permissions"},
	{NVML_ERROR_NOT_FOUND, "Not Found"},
	{NVML_ERROR_INSUFFICIENT_SIZE, "Insufficient Size"},
	{NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded"},
	{NVML_ERROR_TIMEOUT, "Timeout"},
	{NVML_ERROR_CORRUPTED_INFOROM, "Corrupted infoROM"},
	{NVML_ERROR_GPU_IS_LOST, "GPU is lost"},
	{NVML_ERROR_RESET_REQUIRED, "GPU requires restart"},
	{NVML_ERROR_LIB_RM_VERSION_MISMATCH, "RM has detected an NVML/RM version mismatch."},
	{NVML_ERROR_UNKNOWN, "Unknown Error"},
};

/* One GPU's lines ("key value"); GPU 0 also holds the system keys (driver, cuda, init, count). */
struct double_gpu {
	char *key[DOUBLE_MAX_LINES], *val[DOUBLE_MAX_LINES];
	int n;
};

static pthread_mutex_t double_lock = PTHREAD_MUTEX_INITIALIZER;
static struct double_gpu double_gpus[DOUBLE_MAX_GPUS];
static int double_ngpus, double_refs;
/* The series: its lines, how many calls of nvmlDeviceGetCount_v2 were made, and the readings of
 * the current line (overriding double_gpus). */
static char *double_ticks[DOUBLE_MAX_TICKS];
static int double_nticks, double_calls;
static struct double_gpu double_over[DOUBLE_MAX_GPUS];

static void double_gpu_clear(struct double_gpu *g)
{
	for (int i = 0; i < g->n; i++) {
		free(g->key[i]);
		free(g->val[i]);
	}
	g->n = 0;
}

static void double_free(void)
{
	for (int g = 0; g < DOUBLE_MAX_GPUS; g++) {
		double_gpu_clear(&double_gpus[g]);
		double_gpu_clear(&double_over[g]);
	}
	double_ngpus = 0;
	for (int i = 0; i < double_nticks; i++)
		free(double_ticks[i]);
	double_nticks = double_calls = 0;
}

/* The series file's lines, kept as text until their tick comes. */
static void double_load_series(void)
{
	const char *path = getenv("RAILYARD_NVML_DOUBLE_SERIES");
	char line[8192];
	FILE *f;

	if (!path || !(f = fopen(path, "r")))
		return;
	while (double_nticks < DOUBLE_MAX_TICKS && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '{')
			double_ticks[double_nticks++] = strdup(line);
	}
	fclose(f);
}

/* Take the series line of this call of nvmlDeviceGetCount_v2 as the overriding readings. */
static void double_advance(void)
{
	json_t *tick, *gpu, *v;
	const char *idx, *key;
	int line;

	if (double_nticks == 0)
		return;
	line = double_calls < double_nticks ? double_calls : double_nticks - 1;
	double_calls++;
	for (int g = 0; g < DOUBLE_MAX_GPUS; g++)
		double_gpu_clear(&double_over[g]);
	tick = json_loads(double_ticks[line], 0, NULL);
	json_object_foreach(tick, idx, gpu)
	{
		int g = atoi(idx);

		if (g < 0 || g >= DOUBLE_MAX_GPUS)
			continue;
		json_object_foreach(gpu, key, v)
		{
			struct double_gpu *o = &double_over[g];
			char buf[64];

			if (o->n == DOUBLE_MAX_LINES)
				break;
			if (json_is_integer(v))
				snprintf(buf, sizeof(buf), "%lld",
					 (long long)json_integer_value(v));
			else
				snprintf(buf, sizeof(buf), "%s",
					 json_string_value(v) ? json_string_value(v) : "");
			o->key[o->n] = strdup(key);
			o->val[o->n] = strdup(buf);
			o->n++;
		}
	}
	json_decref(tick);
}

/* Read the file: "---" starts the next GPU, other lines are "key value". */
static int double_load(void)
{
	const char *path = getenv("RAILYARD_NVML_DOUBLE_DATA");
	char line[1024];
	FILE *f;

	if (!path || !(f = fopen(path, "r")))
		return -1;
	double_ngpus = 1;
	while (fgets(line, sizeof(line), f)) {
		struct double_gpu *g = &double_gpus[double_ngpus - 1];
		char *sp;

		line[strcspn(line, "\n")] = '\0';
		if (strcmp(line, "---") == 0) {
			if (double_ngpus < DOUBLE_MAX_GPUS)
				double_ngpus++;
			continue;
		}
		sp = strchr(line, ' ');
		if (!sp || g->n == DOUBLE_MAX_LINES)
			continue;
		*sp = '\0';
		g->key[g->n] = strdup(line);
		g->val[g->n] = strdup(sp + 1);
		g->n++;
	}
	fclose(f);
	double_load_series();
	return 0;
}

/* The last line of gpu with key: the series' current line first, then a later line of the file
 * overrides an earlier one. */
static const char *double_get(int gpu, const char *key)
{
	const struct double_gpu *o = &double_over[gpu], *g = &double_gpus[gpu];

	for (int i = o->n - 1; i >= 0; i--)
		if (strcmp(o->key[i], key) == 0)
			return o->val[i];
	for (int i = g->n - 1; i >= 0; i--)
		if (strcmp(g->key[i], key) == 0)
			return g->val[i];
	return NULL;
}

/* Keys of the system (GPU 0's lines) that "lost 1" does not fail. */
static bool double_system_key(const char *key)
{
	static const char *const keys[] = {"init",   "count", "count_hang_ms",
					   "driver", "cuda",  NULL};

	for (int i = 0; keys[i]; i++)
		if (strcmp(key, keys[i]) == 0)
			return true;
	return false;
}

/* The result of a call whose reading is key of gpu: absent -> Not Supported, "ERR <text>" -> that
 * error; *ret_val is the reading on success. */
static nvmlReturn_t double_reading(int gpu, const char *key, const char **ret_val)
{
	const char *v;

	if (!double_refs)
		return NVML_ERROR_UNINITIALIZED;
	if (gpu < 0 || gpu >= double_ngpus)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!double_system_key(key) && (v = double_get(gpu, "lost")) && strcmp(v, "1") == 0)
		return NVML_ERROR_GPU_IS_LOST;
	v = double_get(gpu, key);
	if (!v)
		return NVML_ERROR_NOT_SUPPORTED;
	if (strncmp(v, "ERR ", 4) == 0) {
		for (size_t i = 0; i < sizeof(double_errors) / sizeof(double_errors[0]); i++)
			if (strcmp(v + 4, double_errors[i].text) == 0)
				return double_errors[i].rc;
		return NVML_ERROR_UNKNOWN;
	}
	*ret_val = v;
	return NVML_SUCCESS;
}

/* Handles are the GPU index + 1. */
static int double_index(nvmlDevice_t dev)
{
	return (int)((unsigned long)dev - 1);
}

nvmlReturn_t nvmlInit_v2(void)
{
	nvmlReturn_t rc = NVML_SUCCESS;
	const char *v;

	pthread_mutex_lock(&double_lock);
	if (double_refs == 0 && double_load() < 0) {
		rc = NVML_ERROR_DRIVER_NOT_LOADED;
		goto out;
	}
	double_refs++;
	/* "init ERR <text>": initialisation fails, as on a node whose driver is wedged */
	rc = double_reading(0, "init", &v);
	if (rc == NVML_ERROR_NOT_SUPPORTED) {
		rc = NVML_SUCCESS;
	} else if (rc != NVML_SUCCESS) {
		if (--double_refs == 0)
			double_free();
	}
out:
	pthread_mutex_unlock(&double_lock);
	return rc;
}

nvmlReturn_t nvmlShutdown(void)
{
	nvmlReturn_t rc = NVML_SUCCESS;

	pthread_mutex_lock(&double_lock);
	if (double_refs == 0)
		rc = NVML_ERROR_UNINITIALIZED;
	else if (--double_refs == 0)
		double_free();
	pthread_mutex_unlock(&double_lock);
	return rc;
}

const char *nvmlErrorString(nvmlReturn_t rc)
{
	for (size_t i = 0; i < sizeof(double_errors) / sizeof(double_errors[0]); i++)
		if (double_errors[i].rc == rc)
			return double_errors[i].text;
	return "Unknown Error";
}

static nvmlReturn_t double_string(int gpu, const char *key, char *buf, unsigned int length)
{
	const char *v = NULL;
	nvmlReturn_t rc = double_reading(gpu, key, &v);

	if (rc != NVML_SUCCESS)
		return rc;
	if (strlen(v) + 1 > length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buf, v, strlen(v) + 1);
	return NVML_SUCCESS;
}

/* "13000", or the first of "[1, 1]" / "(0, 0, 0, 0)"; then the following ones. */
static nvmlReturn_t double_uints(int gpu, const char *key, unsigned long long *out, int n)
{
	const char *v = NULL;
	nvmlReturn_t rc = double_reading(gpu, key, &v);
	char *end;

	if (rc != NVML_SUCCESS)
		return rc;
	for (int i = 0; i < n; i++) {
		v += strspn(v, "[(, ");
		out[i] = strtoull(v, &end, 0);
		if (end == v)
			return NVML_ERROR_UNKNOWN;
		v = end;
	}
	return NVML_SUCCESS;
}

static nvmlReturn_t double_uint(int gpu, const char *key, unsigned int *out)
{
	unsigned long long v = 0;
	nvmlReturn_t rc = double_uints(gpu, key, &v, 1);

	if (rc == NVML_SUCCESS)
		*out = (unsigned int)v;
	return rc;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned int length)
{
	return double_string(0, "driver", buf, length);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *value)
{
	unsigned int v = 0;
	nvmlReturn_t rc = double_uint(0, "cuda", &v);

	if (rc == NVML_SUCCESS)
		*value = (int)v;
	return rc;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
	const char *v;
	nvmlReturn_t rc;

	/* "count_hang_ms <ms>": the call blocks that long first, as it does on a node whose driver
	 * is wedged (a GPU fallen off the bus) */
	if (double_reading(0, "count_hang_ms", &v) == NVML_SUCCESS) {
		long ms = strtol(v, NULL, 10);
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	if (double_refs)
		double_advance();
	rc = double_reading(0, "count", &v);

	if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_SUPPORTED)
		return rc;
	if (!double_refs)
		return NVML_ERROR_UNINITIALIZED;
	*count = (unsigned int)double_ngpus;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	const char *v;
	nvmlReturn_t rc;

	if (index >= (unsigned int)double_ngpus)
		return NVML_ERROR_INVALID_ARGUMENT;
	rc = double_reading((int)index, "handle", &v);
	if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_SUPPORTED)
		return rc;
	*device = (nvmlDevice_t)(unsigned long)(index + 1);
	return NVML_SUCCESS;
}

/* "nvmlPciInfo_t(busIdLegacy: 0000:00:06.0, domain: 0x00000000, ..., busId: 00000000:00:06.0)" */
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	const char *v = NULL, *p;
	nvmlReturn_t rc = double_reading(double_index(device), "pci", &v);

	if (rc != NVML_SUCCESS)
		return rc;
	memset(pci, 0, sizeof(*pci));
	p = strstr(v, "busId: ");
	if (!p)
		return NVML_ERROR_UNKNOWN;
	snprintf(pci->busId, sizeof(pci->busId), "%.*s", (int)strcspn(p + 7, ",)"), p + 7);
	p = strstr(v, "busIdLegacy: ");
	if (p)
		snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%.*s",
			 (int)strcspn(p + 13, ",)"), p + 13);
	if ((p = strstr(v, "pciDeviceId: ")))
		pci->pciDeviceId = (unsigned int)strtoul(p + 13, NULL, 16);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *buf, unsigned int length)
{
	return double_string(double_index(device), "name", buf, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *buf, unsigned int length)
{
	return double_string(double_index(device), "uuid", buf, length);
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char *buf, unsigned int length)
{
	return double_string(double_index(device), "serial", buf, length);
}

nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t device, char *buf, unsigned int length)
{
	return double_string(double_index(device), "vbios", buf, length);
}

/* "c_nvmlMemory_t(total: 150754820096 B, free: ..., used: ... B)" */
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	const char *v = NULL, *p;
	nvmlReturn_t rc = double_reading(double_index(device), "mem", &v);

	if (rc != NVML_SUCCESS)
		return rc;
	p = strstr(v, "total: ");
	if (!p)
		return NVML_ERROR_UNKNOWN;
	memset(memory, 0, sizeof(*memory));
	memory->total = strtoull(p + 7, NULL, 10);
	if ((p = strstr(v, "free: ")))
		memory->free = strtoull(p + 6, NULL, 10);
	if ((p = strstr(v, "used: ")))
		memory->used = strtoull(p + 6, NULL, 10);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t *current,
				  nvmlEnableState_t *pending)
{
	unsigned long long v[2] = {0, 0};
	nvmlReturn_t rc = double_uints(double_index(device), "ecc_mode", v, 2);

	if (rc == NVML_SUCCESS) {
		*current = (nvmlEnableState_t)v[0];
		*pending = (nvmlEnableState_t)v[1];
	}
	return rc;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int error_type, int counter_type,
					 unsigned long long *count)
{
	static const char *const keys[2][2] = {{"ecc_vol_corr", "ecc_agg_corr"},
					       {"ecc_vol_uncorr", "ecc_agg_uncorr"}};

	if (error_type != NVML_MEMORY_ERROR_TYPE_UNCORRECTED &&
	    error_type != NVML_MEMORY_ERROR_TYPE_CORRECTED)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (counter_type != NVML_VOLATILE_ECC && counter_type != NVML_AGGREGATE_ECC)
		return NVML_ERROR_INVALID_ARGUMENT;
	return double_uints(double_index(device), keys[error_type][counter_type], count, 1);
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corr, unsigned int *unc,
				       unsigned int *pending, unsigned int *failure)
{
	unsigned long long v[4] = {0, 0, 0, 0};
	nvmlReturn_t rc = double_uints(double_index(device), "remapped_rows", v, 4);

	if (rc == NVML_SUCCESS) {
		*corr = (unsigned int)v[0];
		*unc = (unsigned int)v[1];
		*pending = (unsigned int)v[2];
		*failure = (unsigned int)v[3];
	}
	return rc;
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int *value)
{
	return double_uint(double_index(device), "pcie_gen_cur", value);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int *value)
{
	return double_uint(double_index(device), "pcie_gen_max", value);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int *value)
{
	return double_uint(double_index(device), "pcie_w_cur", value);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int *value)
{
	return double_uint(double_index(device), "pcie_w_max", value);
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int *value)
{
	return double_uint(double_index(device), "power_limit", value);
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t *state)
{
	unsigned int v = 0;
	nvmlReturn_t rc = double_uint(double_index(device), "persistence", &v);

	if (rc == NVML_SUCCESS)
		*state = (nvmlEnableState_t)v;
	return rc;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned long long *value)
{
	return double_uints(double_index(device), "throttle", value, 1);
}

/* "nvlink<N> <0|1>"; a link past the last one the file names is past the device's links. */
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
				      nvmlEnableState_t *active)
{
	char key[32];
	unsigned int v = 0;
	nvmlReturn_t rc;

	if (link >= NVML_NVLINK_MAX_LINKS)
		return NVML_ERROR_INVALID_ARGUMENT;
	snprintf(key, sizeof(key), "nvlink%u", link);
	rc = double_uint(double_index(device), key, &v);
	if (rc == NVML_SUCCESS)
		*active = (nvmlEnableState_t)v;
	return rc;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *current, unsigned int *pending)
{
	unsigned long long v[2] = {0, 0};
	nvmlReturn_t rc = double_uints(double_index(device), "mig", v, 2);

	if (rc == NVML_SUCCESS) {
		*current = (unsigned int)v[0];
		*pending = (unsigned int)v[1];
	}
	return rc;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, nvmlEnableState_t *pending)
{
	unsigned int v = 0;
	nvmlReturn_t rc = double_uint(double_index(device), "retired_pending", &v);

	if (rc == NVML_SUCCESS)
		*pending = (nvmlEnableState_t)v;
	return rc;
}

/* "nvlink<N>_replay", "nvlink<N>_recovery", "nvlink<N>_crc_flit", "nvlink<N>_crc_data". */
nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned int link, int counter,
					     unsigned long long *value)
{
	static const char *const names[] = {"replay", "recovery", "crc_flit", "crc_data"};
	char key[48];

	if (link >= NVML_NVLINK_MAX_LINKS || counter < 0 || counter > NVML_NVLINK_ERROR_DL_CRC_DATA)
		return NVML_ERROR_INVALID_ARGUMENT;
	snprintf(key, sizeof(key), "nvlink%u_%s", link, names[counter]);
	return double_uints(double_index(device), key, value, 1);
}

/* "fabric_state (state, status)": the GPU's NVSwitch fabric registration. */
nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, nvmlGpuFabricInfo_t *info)
{
	unsigned long long v[2] = {0, 0};
	nvmlReturn_t rc = double_uints(double_index(device), "fabric_state", v, 2);

	if (rc == NVML_SUCCESS) {
		memset(info, 0, sizeof(*info));
		info->state = (nvmlGpuFabricState_t)v[0];
		info->status = (nvmlReturn_t)v[1];
	}
	return rc;
}
