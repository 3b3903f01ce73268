/* The GPU watcher: NVML opened once, each GPU read every tick and compared with its previous
 * reading (gpuwatch.h). Owns the NVML handle and one reading per GPU. */
#include "nodeagent/gpuwatch.h"
#include "nodeagent/facts/facts_int.h"
#include "nodeagent/facts/facts_nvml_abi.h"

#include "common/playbook/playbook.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPUWATCH_DEFAULT_LIBRARY "libnvidia-ml.so.1"
#define GPUWATCH_MIN_INTERVAL_MS 1000

enum {
	GW_INIT,
	GW_SHUTDOWN,
	GW_ERROR_STRING,
	GW_COUNT,
	GW_HANDLE,
	GW_PCI_INFO,
	GW_ECC_ERRORS,
	GW_REMAPPED_ROWS,
	GW_RETIRED_PENDING,
	GW_CLOCKS_EVENT,
	GW_NVLINK_STATE,
	GW_NVLINK_ERROR,
	GW_FABRIC_INFO,
	GW__COUNT,
};

static const struct {
	const char *name, *alt;
	bool required;
} gw_syms[GW__COUNT] = {
	[GW_INIT] = {"nvmlInit_v2", NULL, true},
	[GW_SHUTDOWN] = {"nvmlShutdown", NULL, true},
	[GW_ERROR_STRING] = {"nvmlErrorString", NULL, false},
	[GW_COUNT] = {"nvmlDeviceGetCount_v2", NULL, true},
	[GW_HANDLE] = {"nvmlDeviceGetHandleByIndex_v2", NULL, true},
	[GW_PCI_INFO] = {"nvmlDeviceGetPciInfo_v3", NULL, false},
	[GW_ECC_ERRORS] = {"nvmlDeviceGetTotalEccErrors", NULL, false},
	[GW_REMAPPED_ROWS] = {"nvmlDeviceGetRemappedRows", NULL, false},
	[GW_RETIRED_PENDING] = {"nvmlDeviceGetRetiredPagesPendingStatus", NULL, false},
	/* renamed in R535; the same bits */
	[GW_CLOCKS_EVENT] = {"nvmlDeviceGetCurrentClocksEventReasons",
			     "nvmlDeviceGetCurrentClocksThrottleReasons", false},
	[GW_NVLINK_STATE] = {"nvmlDeviceGetNvLinkState", NULL, false},
	[GW_NVLINK_ERROR] = {"nvmlDeviceGetNvLinkErrorCounter", NULL, false},
	[GW_FABRIC_INFO] = {"nvmlDeviceGetGpuFabricInfo", NULL, false},
};

#define GWCALL(w, id, T, ...) (((T *)(w)->fn[id])(__VA_ARGS__))

/* NVLink counters kept per link: CRC (flit + data), replay, recovery. */
enum { NV_CRC, NV_REPLAY, NV_RECOVERY, NV__N };
static const char *const nv_names[NV__N] = {"CRC", "replay", "recovery"};

/* One GPU's reading. have_* say which readings NVML gave. */
struct gw_gpu {
	bool lost;
	char bus[32];
	bool have_corr, have_unc, have_remap, have_retired, have_reasons, have_fabric;
	unsigned char fabric_state;
	nvmlReturn_t fabric_status;
	unsigned long long corr, unc;
	unsigned int remap_pending, remap_failure;
	bool retired_pending;
	unsigned long long reasons;
	uint32_t links_present, links_up;
	uint32_t nv_have[NV__N]; /* per link, a bit */
	unsigned long long nv[GPUWATCH_MAX_LINKS][NV__N];
};

struct gpuwatch {
	struct gpuwatch_config cfg;
	const char *lib;
	void *dl;
	void *fn[GW__COUNT];
	bool on, inited;
	char note[256];
	bool note_pending;
	bool ticked;	  /* a baseline was taken */
	int64_t last_ms;  /* the baseline's time */
	unsigned int n0;  /* GPUs at the baseline */
	bool count_short; /* fewer GPUs than at the baseline, reported */
	bool count_failed;
	int expected[GPUWATCH_MAX_GPUS]; /* links expected up per GPU */
	bool have[GPUWATCH_MAX_GPUS];
	struct gw_gpu gpus[GPUWATCH_MAX_GPUS];
};

/* The defaults are the playbook's (common/playbook/playbook.h), so that a node without a health
 * section and a playbook without one watch the same way. */
void gpuwatch_config_init(struct gpuwatch_config *c)
{
	memset(c, 0, sizeof(*c));
	c->ecc_corrected = (struct gpuwatch_rate){PB_HEALTH_ECC_CORRECTED_WARN, 0};
	c->hw_slowdown = HEALTH_WARNING;
	c->hw_thermal = HEALTH_CRITICAL;
	c->hw_power = HEALTH_WARNING;
	c->nvlink_expected = -1;
	c->nvlink_crc =
		(struct gpuwatch_rate){PB_HEALTH_NVLINK_CRC_WARN, PB_HEALTH_NVLINK_CRC_CRIT};
	c->nvlink_replay = (struct gpuwatch_rate){PB_HEALTH_NVLINK_REPLAY_WARN, 0};
	c->nvlink_recovery = (struct gpuwatch_rate){PB_HEALTH_NVLINK_RECOVERY_WARN,
						    PB_HEALTH_NVLINK_RECOVERY_CRIT};
}

static int cfg_rate(const json_t *v, const char *where, struct gpuwatch_rate *r, char *err,
		    size_t len)
{
	const char *key;
	json_t *x;

	if (!json_is_object(v)) {
		snprintf(err, len, "%s: expected an object {warning, critical}", where);
		return -EINVAL;
	}
	json_object_foreach((json_t *)v, key, x)
	{
		double d = json_number_value(x);

		if (strcmp(key, "warning") != 0 && strcmp(key, "critical") != 0) {
			snprintf(err, len, "%s.%s: unknown key (warning, critical)", where, key);
			return -EINVAL;
		}
		if (!json_is_number(x) || !(d >= 0 && d <= 1e12)) {
			snprintf(err, len, "%s.%s: expected a number of errors a minute >= 0",
				 where, key);
			return -EINVAL;
		}
		if (key[0] == 'w')
			r->warn = d;
		else
			r->crit = d;
	}
	return 0;
}

static int cfg_severity(const json_t *v, const char *where, int *ret, char *err, size_t len)
{
	const char *s = json_string_value(v);

	if (s && strcmp(s, "warning") == 0)
		*ret = HEALTH_WARNING;
	else if (s && strcmp(s, "critical") == 0)
		*ret = HEALTH_CRITICAL;
	else if (s && strcmp(s, "ignore") == 0)
		*ret = GPUWATCH_IGNORE;
	else {
		snprintf(err, len, "%s: expected \"warning\", \"critical\" or \"ignore\"", where);
		return -EINVAL;
	}
	return 0;
}

int gpuwatch_config_parse(const json_t *cfg, struct gpuwatch_config *c, char *err, size_t errlen)
{
	struct gpuwatch_config t = *c;
	const char *key, *k2;
	json_t *v, *v2;
	char where[96];

	if (!cfg)
		return 0;
	if (!json_is_object(cfg)) {
		snprintf(err, errlen, "gpu: expected an object");
		return -EINVAL;
	}
	json_object_foreach((json_t *)cfg, key, v)
	{
		snprintf(where, sizeof(where), "gpu.%.60s", key);
		if (strcmp(key, "ecc_corrected_per_min") == 0) {
			if (cfg_rate(v, where, &t.ecc_corrected, err, errlen) < 0)
				return -EINVAL;
		} else if (strcmp(key, "throttle") == 0 && json_is_object(v)) {
			json_object_foreach(v, k2, v2)
			{
				int *sev = strcmp(k2, "hw_slowdown") == 0	    ? &t.hw_slowdown
					   : strcmp(k2, "hw_thermal_slowdown") == 0 ? &t.hw_thermal
					   : strcmp(k2, "hw_power_brake_slowdown") == 0
						   ? &t.hw_power
						   : NULL;

				snprintf(where, sizeof(where), "gpu.throttle.%.60s", k2);
				if (!sev) {
					snprintf(err, errlen,
						 "%s: unknown key (hw_slowdown, "
						 "hw_thermal_slowdown, "
						 "hw_power_brake_slowdown)",
						 where);
					return -EINVAL;
				}
				if (cfg_severity(v2, where, sev, err, errlen) < 0)
					return -EINVAL;
			}
		} else if (strcmp(key, "nvlink") == 0 && json_is_object(v)) {
			json_object_foreach(v, k2, v2)
			{
				struct gpuwatch_rate *r =
					strcmp(k2, "crc_per_min") == 0	      ? &t.nvlink_crc
					: strcmp(k2, "replay_per_min") == 0   ? &t.nvlink_replay
					: strcmp(k2, "recovery_per_min") == 0 ? &t.nvlink_recovery
									      : NULL;

				snprintf(where, sizeof(where), "gpu.nvlink.%.60s", k2);
				if (strcmp(k2, "expected") == 0) {
					json_int_t n = json_integer_value(v2);

					if (!json_is_integer(v2) || n < -1 ||
					    n > GPUWATCH_MAX_LINKS) {
						snprintf(err, errlen,
							 "%s: expected an integer from -1 to %d",
							 where, GPUWATCH_MAX_LINKS);
						return -EINVAL;
					}
					t.nvlink_expected = (int)n;
				} else if (!r) {
					snprintf(err, errlen,
						 "%s: unknown key (expected, crc_per_min, "
						 "replay_per_min, recovery_per_min)",
						 where);
					return -EINVAL;
				} else if (cfg_rate(v2, where, r, err, errlen) < 0) {
					return -EINVAL;
				}
			}
		} else if (strcmp(key, "throttle") == 0 || strcmp(key, "nvlink") == 0) {
			snprintf(err, errlen, "%s: expected an object", where);
			return -EINVAL;
		} else {
			snprintf(err, errlen,
				 "%s: unknown key (ecc_corrected_per_min, throttle, nvlink)",
				 where);
			return -EINVAL;
		}
	}
	*c = t;
	return 0;
}

static void gw_note(struct gpuwatch *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void gw_note(struct gpuwatch *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->note, sizeof(w->note), fmt, ap);
	va_end(ap);
	w->note_pending = true;
}

static const char *gw_strerror(struct gpuwatch *w, nvmlReturn_t rc, char *buf, size_t len)
{
	const char *s = NULL;

	if (w->fn[GW_ERROR_STRING])
		s = GWCALL(w, GW_ERROR_STRING, nvml_fn_error_string, rc);
	if (s && strnlen(s, 100) < 100 && s[0])
		snprintf(buf, len, "%s", s);
	else
		snprintf(buf, len, "NVML error %d", rc);
	return buf;
}

/* Load and initialise NVML; on failure the watcher is off and the note says why. */
static void gw_open(struct gpuwatch *w)
{
	const char *env = getenv(FACTS_NVML_LIBRARY_ENV);
	nvmlReturn_t rc;
	char buf[128];

	w->lib = env && *env ? env : GPUWATCH_DEFAULT_LIBRARY;
	w->dl = dlopen(w->lib, RTLD_NOW | RTLD_LOCAL);
	if (!w->dl) {
		const char *e = dlerror();

		gw_note(w, "no NVML: GPU watcher off (%.200s)", e ? e : w->lib);
		return;
	}
	for (int i = 0; i < GW__COUNT; i++) {
		w->fn[i] = dlsym(w->dl, gw_syms[i].name);
		if (!w->fn[i] && gw_syms[i].alt)
			w->fn[i] = dlsym(w->dl, gw_syms[i].alt);
		if (!w->fn[i] && gw_syms[i].required) {
			gw_note(w, "no NVML: GPU watcher off (%s: no symbol %s)", w->lib,
				gw_syms[i].name);
			return;
		}
	}
	rc = GWCALL(w, GW_INIT, nvml_fn_void);
	if (rc != NVML_SUCCESS) {
		gw_note(w, "no NVML: GPU watcher off (%s: nvmlInit_v2: %s)", w->lib,
			gw_strerror(w, rc, buf, sizeof(buf)));
		return;
	}
	w->inited = w->on = true;
}

int gpuwatch_new(const json_t *cfg, struct gpuwatch **ret)
{
	struct gpuwatch *w;
	char err[256];

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	gpuwatch_config_init(&w->cfg);
	if (gpuwatch_config_parse(cfg, &w->cfg, err, sizeof(err)) < 0) {
		free(w);
		return -EINVAL;
	}
	gw_open(w);
	*ret = w;
	return 0;
}

void gpuwatch_free(struct gpuwatch *w)
{
	if (!w)
		return;
	if (w->inited)
		(void)GWCALL(w, GW_SHUTDOWN, nvml_fn_void);
	if (w->dl)
		dlclose(w->dl);
	free(w);
}

const char *gpuwatch_note(struct gpuwatch *w)
{
	if (!w->note_pending)
		return NULL;
	w->note_pending = false;
	return w->note;
}

bool gpuwatch_on(const struct gpuwatch *w)
{
	return w->on;
}

/* The events being written by one tick. */
struct gw_out {
	struct health_event *ev;
	size_t max, n;
	int64_t at_ms;
};

static void gw_event(struct gw_out *o, const char *kind, enum health_severity sev,
		     const char *source, const char *detail, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
static void gw_event(struct gw_out *o, const char *kind, enum health_severity sev,
		     const char *source, const char *detail, const char *fmt, ...)
{
	struct health_event *e;
	va_list ap;

	if (o->n++ >= o->max)
		return;
	e = &o->ev[o->n - 1];
	memset(e, 0, sizeof(*e));
	snprintf(e->kind, sizeof(e->kind), "%s", kind);
	e->severity = sev;
	snprintf(e->source, sizeof(e->source), "%s", source);
	va_start(ap, fmt);
	vsnprintf(e->what, sizeof(e->what), fmt, ap);
	va_end(ap);
	snprintf(e->detail, sizeof(e->detail), "%s", detail);
	e->at_ms = o->at_ms;
}

/* Whether rc says the GPU is lost; it is then marked so. */
static bool gw_ok(struct gw_gpu *g, nvmlReturn_t rc)
{
	if (rc == NVML_ERROR_GPU_IS_LOST)
		g->lost = true;
	return rc == NVML_SUCCESS;
}

/* Read GPU i into g (zeroed by the caller). */
static void gw_read(struct gpuwatch *w, unsigned int i, struct gw_gpu *g)
{
	nvmlDevice_t dev = NULL;
	nvmlPciInfo_t pci;
	nvmlEnableState_t st = 0;

	if (!gw_ok(g, GWCALL(w, GW_HANDLE, nvml_fn_handle, i, &dev)))
		return;
	memset(&pci, 0, sizeof(pci));
	if (w->fn[GW_PCI_INFO] && gw_ok(g, GWCALL(w, GW_PCI_INFO, nvml_fn_pci_info, dev, &pci)))
		snprintf(g->bus, sizeof(g->bus), "%.*s", (int)sizeof(pci.busId), pci.busId);
	if (w->fn[GW_ECC_ERRORS] && !g->lost) {
		g->have_unc = gw_ok(g, GWCALL(w, GW_ECC_ERRORS, nvml_fn_ecc_errors, dev,
					      NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC,
					      &g->unc));
		g->have_corr = !g->lost && gw_ok(g, GWCALL(w, GW_ECC_ERRORS, nvml_fn_ecc_errors,
							   dev, NVML_MEMORY_ERROR_TYPE_CORRECTED,
							   NVML_VOLATILE_ECC, &g->corr));
	}
	if (w->fn[GW_REMAPPED_ROWS] && !g->lost) {
		unsigned int corr = 0, unc = 0;

		g->have_remap = gw_ok(g, GWCALL(w, GW_REMAPPED_ROWS, nvml_fn_remapped_rows, dev,
						&corr, &unc, &g->remap_pending, &g->remap_failure));
	}
	if (w->fn[GW_RETIRED_PENDING] && !g->lost &&
	    (g->have_retired =
		     gw_ok(g, GWCALL(w, GW_RETIRED_PENDING, nvml_fn_dev_state, dev, &st))))
		g->retired_pending = st == NVML_FEATURE_ENABLED;
	if (w->fn[GW_CLOCKS_EVENT] && !g->lost)
		g->have_reasons =
			gw_ok(g, GWCALL(w, GW_CLOCKS_EVENT, nvml_fn_dev_ull, dev, &g->reasons));
	if (w->fn[GW_FABRIC_INFO] && !g->lost) {
		nvmlGpuFabricInfo_t fi;

		memset(&fi, 0, sizeof(fi));
		if ((g->have_fabric =
			     gw_ok(g, GWCALL(w, GW_FABRIC_INFO, nvml_fn_fabric_info, dev, &fi)))) {
			g->fabric_state = fi.state;
			g->fabric_status = fi.status;
		}
	}
	for (unsigned int l = 0; w->fn[GW_NVLINK_STATE] && !g->lost && l < GPUWATCH_MAX_LINKS;
	     l++) {
		nvmlEnableState_t up = 0;

		if (!gw_ok(g, GWCALL(w, GW_NVLINK_STATE, nvml_fn_nvlink_state, dev, l, &up)))
			continue;
		g->links_present |= 1u << l;
		if (up == NVML_FEATURE_ENABLED)
			g->links_up |= 1u << l;
		for (int c = 0; w->fn[GW_NVLINK_ERROR] && c < NV__N && !g->lost; c++) {
			unsigned long long v = 0, v2 = 0;
			int id = c == NV_CRC	  ? NVML_NVLINK_ERROR_DL_CRC_FLIT
				 : c == NV_REPLAY ? NVML_NVLINK_ERROR_DL_REPLAY
						  : NVML_NVLINK_ERROR_DL_RECOVERY;

			if (!gw_ok(g, GWCALL(w, GW_NVLINK_ERROR, nvml_fn_nvlink_error, dev, l, id,
					     &v)))
				continue;
			/* CRC: flit and data errors together */
			if (c == NV_CRC &&
			    gw_ok(g, GWCALL(w, GW_NVLINK_ERROR, nvml_fn_nvlink_error, dev, l,
					    NVML_NVLINK_ERROR_DL_CRC_DATA, &v2)))
				v += v2;
			g->nv[l][c] = v;
			g->nv_have[c] |= 1u << l;
		}
	}
}

/* The severity of a rate under r, or -1 below it. */
static int gw_rate_severity(const struct gpuwatch_rate *r, double per_min)
{
	if (r->crit > 0 && per_min >= r->crit)
		return HEALTH_CRITICAL;
	if (r->warn > 0 && per_min >= r->warn)
		return HEALTH_WARNING;
	return -1;
}

static void gw_links_list(uint32_t mask, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int l = 0; l < GPUWATCH_MAX_LINKS && off < len; l++)
		if (mask & (1u << l))
			off += (size_t)snprintf(buf + off, len - off, "%s%d", off ? "," : "", l);
}

static const struct {
	unsigned long long bit;
	const char *name;
	size_t cfg; /* offset of its severity in the config */
} gw_reasons[] = {
	{NVML_CLOCKS_EVENT_HW_SLOWDOWN, "HW slowdown",
	 offsetof(struct gpuwatch_config, hw_slowdown)},
	{NVML_CLOCKS_EVENT_HW_THERMAL, "HW thermal slowdown",
	 offsetof(struct gpuwatch_config, hw_thermal)},
	{NVML_CLOCKS_EVENT_HW_POWER_BRAKE, "HW power brake slowdown",
	 offsetof(struct gpuwatch_config, hw_power)},
};

/* The NVSwitch fabric registration's trouble, 0 when none (or not an NVSwitch system): the
 * fabric manager has not started the GPU's registration (critical: CUDA will not run), is still
 * at it (warning: normal for a moment after boot), or it failed (critical). */
static int gw_fabric_trouble(const struct gw_gpu *g)
{
	if (!g || !g->have_fabric)
		return 0;
	switch (g->fabric_state) {
	case NVML_GPU_FABRIC_STATE_NOT_STARTED:
		return 1;
	case NVML_GPU_FABRIC_STATE_IN_PROGRESS:
		return 2;
	case NVML_GPU_FABRIC_STATE_COMPLETED:
		return g->fabric_status != NVML_SUCCESS ? 3 : 0;
	default:
		return 0;
	}
}

static void gw_fabric(struct gpuwatch *w, struct gw_out *o, const char *src,
		      const struct gw_gpu *prev, const struct gw_gpu *cur)
{
	int now = gw_fabric_trouble(cur), was = gw_fabric_trouble(prev);
	char det[HEALTH_DETAIL_MAX], buf[96];

	if (now == was || (!cur->have_fabric && prev))
		return;
	snprintf(det, sizeof(det), "nvmlDeviceGetGpuFabricInfo: state %u, status %s",
		 cur->fabric_state,
		 cur->fabric_state == NVML_GPU_FABRIC_STATE_COMPLETED
			 ? gw_strerror(w, cur->fabric_status, buf, sizeof(buf))
			 : "-");
	if (now == 1)
		gw_event(o, "gpu", HEALTH_CRITICAL, src, det,
			 "NVSwitch fabric registration not started (fabric manager down?)");
	else if (now == 2)
		gw_event(o, "gpu", HEALTH_WARNING, src, det,
			 "NVSwitch fabric registration in progress");
	else if (now == 3)
		gw_event(o, "gpu", HEALTH_CRITICAL, src, det,
			 "NVSwitch fabric registration failed");
	else
		gw_event(o, "gpu", HEALTH_INFO, src, det, "NVSwitch fabric registration complete");
}

/* Compare GPU i's reading cur with its previous one (prev NULL: the first reading). */
static void gw_compare(struct gpuwatch *w, struct gw_out *o, unsigned int i,
		       const struct gw_gpu *prev, const struct gw_gpu *cur, double dt_min)
{
	char src[HEALTH_SOURCE_MAX], lsrc[HEALTH_SOURCE_MAX], det[HEALTH_DETAIL_MAX], list[64];
	const char *bus = cur->bus[0] ? cur->bus : prev && prev->bus[0] ? prev->bus : "?";
	int up = __builtin_popcount(cur->links_up);

	snprintf(src, sizeof(src), "gpu%u", i);
	if (cur->lost) {
		if (!prev || !prev->lost) {
			snprintf(det, sizeof(det), "NVML: GPU is lost (GPU %u, bus %s)", i, bus);
			gw_event(o, "gpu", HEALTH_CRITICAL, src, det, "GPU has fallen off the bus");
		}
		return;
	}
	if (prev && prev->lost) {
		snprintf(det, sizeof(det), "NVML answers for GPU %u (bus %s) again", i, bus);
		gw_event(o, "gpu", HEALTH_INFO, src, det, "GPU is back");
		prev = NULL; /* its counters start again */
	}
	/* ECC: volatile counts since the driver loaded */
	if (prev && prev->have_unc && cur->have_unc && cur->unc > prev->unc) {
		snprintf(det, sizeof(det), "volatile uncorrected ECC errors %llu -> %llu",
			 prev->unc, cur->unc);
		gw_event(o, "gpu", HEALTH_CRITICAL, src, det, "%llu uncorrectable ECC error%s",
			 cur->unc - prev->unc, cur->unc - prev->unc == 1 ? "" : "s");
	}
	if (prev && prev->have_corr && cur->have_corr && cur->corr > prev->corr && dt_min > 0) {
		double rate = (double)(cur->corr - prev->corr) / dt_min;
		int sev = gw_rate_severity(&w->cfg.ecc_corrected, rate);

		if (sev >= 0) {
			snprintf(det, sizeof(det),
				 "volatile corrected ECC errors %llu -> %llu in %.0f s", prev->corr,
				 cur->corr, dt_min * 60);
			gw_event(o, "gpu", (enum health_severity)sev, src, det,
				 "corrected ECC errors %.0f/min, over %.0f/min", rate,
				 sev == HEALTH_CRITICAL ? w->cfg.ecc_corrected.crit
							: w->cfg.ecc_corrected.warn);
		}
	}
	/* Row remapping: a pending remap takes effect at the next GPU reset; a failed one means
	 * the bank is out of spare rows */
	if (cur->have_remap) {
		bool was_p = prev && prev->have_remap && prev->remap_pending;
		bool was_f = prev && prev->have_remap && prev->remap_failure;

		snprintf(det, sizeof(det), "remapped rows: pending %u, failure %u",
			 cur->remap_pending, cur->remap_failure);
		if (cur->remap_failure && !was_f)
			gw_event(o, "gpu", HEALTH_CRITICAL, src, det, "row remapping failed");
		if (cur->remap_pending && !was_p)
			gw_event(o, "gpu", HEALTH_WARNING, src, det,
				 "row remap pending: GPU reset needed");
		else if (!cur->remap_pending && was_p)
			gw_event(o, "gpu", HEALTH_INFO, src, det, "row remap no longer pending");
	}
	if (cur->have_retired && cur->retired_pending &&
	    !(prev && prev->have_retired && prev->retired_pending))
		gw_event(o, "gpu", HEALTH_WARNING, src, "retired pages pending: true",
			 "page retirement pending: GPU reset needed");
	/* clocks-event reasons; SW power cap, idle, sync boost, application clocks are normal */
	for (size_t r = 0; cur->have_reasons && r < sizeof(gw_reasons) / sizeof(gw_reasons[0]);
	     r++) {
		int sev = *(const int *)((const char *)&w->cfg + gw_reasons[r].cfg);
		bool now = cur->reasons & gw_reasons[r].bit;
		bool was = prev && prev->have_reasons && (prev->reasons & gw_reasons[r].bit);

		if (sev == GPUWATCH_IGNORE || now == was)
			continue;
		snprintf(det, sizeof(det), "clocks event reasons 0x%llx", cur->reasons);
		if (now)
			gw_event(o, "gpu", (enum health_severity)sev, src, det, "clocks event: %s",
				 gw_reasons[r].name);
		else if (prev)
			gw_event(o, "gpu", HEALTH_INFO, src, det, "clocks event ended: %s",
				 gw_reasons[r].name);
	}
	gw_fabric(w, o, src, prev, cur);
	/* NVLink: the links up against the expected count, then each link's changes */
	if (!prev) {
		if (w->expected[i] > 0 && up < w->expected[i]) {
			gw_links_list(cur->links_present & ~cur->links_up, list, sizeof(list));
			snprintf(det, sizeof(det), "links down: %s",
				 list[0] ? list : "none present");
			gw_event(o, "nvlink", HEALTH_CRITICAL, src, det,
				 "NVLink: %d of %d links up", up, w->expected[i]);
		}
	} else {
		for (int l = 0; l < GPUWATCH_MAX_LINKS; l++) {
			uint32_t b = 1u << l;

			if (!((cur->links_present | prev->links_present) & b) ||
			    !(cur->links_up & b) == !(prev->links_up & b))
				continue;
			snprintf(lsrc, sizeof(lsrc), "gpu%u/link%d", i, l);
			snprintf(det, sizeof(det), "GPU %u (bus %s): %d of %d links up", i, bus, up,
				 w->expected[i]);
			if (cur->links_up & b)
				gw_event(o, "nvlink", HEALTH_INFO, lsrc, det, "NVLink link %d up",
					 l);
			else
				gw_event(o, "nvlink",
					 up < w->expected[i] ? HEALTH_CRITICAL : HEALTH_WARNING,
					 lsrc, det, "NVLink link %d down", l);
		}
	}
	for (int l = 0; prev && dt_min > 0 && l < GPUWATCH_MAX_LINKS; l++) {
		for (int c = 0; c < NV__N; c++) {
			const struct gpuwatch_rate *rule = c == NV_CRC ? &w->cfg.nvlink_crc
							   : c == NV_REPLAY
								   ? &w->cfg.nvlink_replay
								   : &w->cfg.nvlink_recovery;
			unsigned long long a = prev->nv[l][c], b = cur->nv[l][c];
			double rate;
			int sev;

			if (!(prev->nv_have[c] & cur->nv_have[c] & (1u << l)) || b <= a)
				continue;
			rate = (double)(b - a) / dt_min;
			sev = gw_rate_severity(rule, rate);
			if (sev < 0)
				continue;
			snprintf(lsrc, sizeof(lsrc), "gpu%u/link%d", i, l);
			snprintf(det, sizeof(det), "%s errors %llu -> %llu in %.0f s", nv_names[c],
				 a, b, dt_min * 60);
			gw_event(o, "nvlink", (enum health_severity)sev, lsrc, det,
				 "NVLink %s errors %.0f/min, over %.0f/min", nv_names[c], rate,
				 sev == HEALTH_CRITICAL ? rule->crit : rule->warn);
		}
	}
}

int gpuwatch_tick(struct gpuwatch *w, int64_t now_ms, struct health_event *ev, size_t max,
		  size_t *ret_n)
{
	struct gw_out o = {.ev = ev, .max = max, .at_ms = now_ms};
	unsigned int count = 0;
	double dt_min = 0;
	nvmlReturn_t rc;
	char buf[96], det[HEALTH_DETAIL_MAX];

	*ret_n = 0;
	if (!w->on)
		return 0;
	if (w->ticked) {
		if (now_ms - w->last_ms < GPUWATCH_MIN_INTERVAL_MS)
			return 0;
		dt_min = (double)(now_ms - w->last_ms) / 60000.0;
	}
	rc = GWCALL(w, GW_COUNT, nvml_fn_count, &count);
	if (rc != NVML_SUCCESS) {
		if (!w->count_failed) {
			snprintf(det, sizeof(det), "%s: nvmlDeviceGetCount_v2: %s", w->lib,
				 gw_strerror(w, rc, buf, sizeof(buf)));
			gw_event(&o, "gpu", HEALTH_CRITICAL, "nvml", det,
				 "NVML cannot enumerate the GPUs");
		}
		w->count_failed = true;
		*ret_n = o.n;
		return 0;
	}
	w->count_failed = false;
	if (count > GPUWATCH_MAX_GPUS)
		count = GPUWATCH_MAX_GPUS;
	if (!w->ticked) {
		w->n0 = count;
		gw_note(w, "NVML: %u GPU%s watched", count, count == 1 ? "" : "s");
	} else if (count < w->n0 && !w->count_short) {
		snprintf(det, sizeof(det), "nvmlDeviceGetCount_v2: %u, %u at the agent's start",
			 count, w->n0);
		gw_event(&o, "gpu", HEALTH_CRITICAL, "nvml", det,
			 "%u GPU%s no longer visible to NVML", w->n0 - count,
			 w->n0 - count == 1 ? "" : "s");
	}
	w->count_short = w->ticked && count < w->n0;
	for (unsigned int i = 0; i < count; i++) {
		struct gw_gpu cur;

		memset(&cur, 0, sizeof(cur));
		gw_read(w, i, &cur);
		if (!w->have[i])
			w->expected[i] = w->cfg.nvlink_expected >= 0
						 ? w->cfg.nvlink_expected
						 : __builtin_popcount(cur.links_up);
		gw_compare(w, &o, i, w->have[i] ? &w->gpus[i] : NULL, &cur, dt_min);
		if (cur.lost) {
			/* keep the last counters: they are the baseline if it comes back */
			w->gpus[i].lost = true;
		} else {
			w->gpus[i] = cur;
		}
		w->have[i] = true;
	}
	w->ticked = true;
	w->last_ms = now_ms;
	*ret_n = o.n;
	return 0;
}
