/* The GPU watcher: every tick, each GPU's health as NVML reports it, against the previous tick,
 * into health events: volatile ECC error deltas, row remapping (pending, failed), retired pages
 * pending, clocks-event reasons that mean trouble (HW slowdown, HW thermal slowdown, HW power
 * brake), a GPU fallen off the bus, its NVSwitch fabric registration (not started, in progress,
 * failed), and NVLink: links up against the links expected, and the data-link error counters
 * (CRC, replay, recovery) as rates. NVML is the driver's
 * libnvidia-ml.so.1 (or the tests' double named by RAILYARD_NVML_LIBRARY), opened with dlopen()
 * by gpuwatch_new() and kept open until gpuwatch_free(). Keeps one reading per GPU. Thresholds
 * and their sources: docs/health.md, "GPUs" and "NVLink". Not thread-safe: one watcher, one
 * thread; an NVML call into a wedged driver can block that thread (the caller's watcher thread,
 * never the session's). */
#ifndef RAILYARD_AGENT_GPUWATCH_H
#define RAILYARD_AGENT_GPUWATCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nodeagent/health_event.h"

#define GPUWATCH_MAX_GPUS  64
#define GPUWATCH_MAX_LINKS 18 /* NVML_NVLINK_MAX_LINKS; an H200 has 18 */

/* A rate rule, per minute: warning at >= warn, critical at >= crit (0: that level unused). */
struct gpuwatch_rate {
	double warn, crit;
};

/* A severity a clocks-event reason gets; GPUWATCH_IGNORE: none. */
#define GPUWATCH_IGNORE (-1)

/* The watcher's settings: the health config's "gpu" object (docs/health.md, "The agent's
 * configuration"). */
struct gpuwatch_config {
	struct gpuwatch_rate ecc_corrected;    /* volatile corrected ECC errors a minute */
	int hw_slowdown, hw_thermal, hw_power; /* enum health_severity or GPUWATCH_IGNORE */
	int nvlink_expected;		       /* links up per GPU; -1: what the first tick saw */
	struct gpuwatch_rate nvlink_crc;       /* CRC flit + data errors a minute, per link */
	struct gpuwatch_rate nvlink_replay, nvlink_recovery;
};

/* The defaults (docs/health.md): corrected ECC 100/min warning; HW slowdown and HW power brake
 * warning, HW thermal slowdown critical; NVLink expected -1; CRC 60/min warning, 6000/min
 * critical; replay 60/min warning; recovery 1/min warning, 10/min critical. */
void gpuwatch_config_init(struct gpuwatch_config *c);

/* Read cfg (the "gpu" object, borrowed; NULL: c unchanged) over c (which holds defaults or an
 * earlier reading): keys ecc_corrected_per_min, throttle {hw_slowdown, hw_thermal_slowdown,
 * hw_power_brake_slowdown: "warning"|"critical"|"ignore"}, nvlink {expected, crc_per_min,
 * replay_per_min, recovery_per_min}; a rate is {warning, critical} (numbers >= 0). An unknown
 * key, a wrong type or a value out of range is -EINVAL with the reason, naming the key, in err;
 * c is then unchanged. */
__attribute__((warn_unused_result)) int
gpuwatch_config_parse(const json_t *cfg, struct gpuwatch_config *c, char *err, size_t errlen);

struct gpuwatch;

/* A watcher with cfg (the "gpu" object, borrowed, read here; NULL: the defaults). NVML that
 * cannot be loaded or initialised is no error: the watcher is off (its ticks report nothing) and
 * gpuwatch_note() says why. -EINVAL (cfg malformed: gpuwatch_config_parse() says why), -ENOMEM,
 * or 0 and *ret (gpuwatch_free()). */
__attribute__((warn_unused_result)) int gpuwatch_new(const json_t *cfg, struct gpuwatch **ret);
/* Shuts NVML down and closes it; NULL is fine. */
void gpuwatch_free(struct gpuwatch *w);

/* A one-time line for the caller's log ("no NVML: GPU watcher off (libnvidia-ml.so.1: cannot
 * open shared object file)"; "NVML: 8 GPUs watched"): returned once, then NULL until the next
 * thing worth saying. Borrowed, valid until the next call on w. */
const char *gpuwatch_note(struct gpuwatch *w);

/* Whether NVML is in use (false: the watcher is off). */
bool gpuwatch_on(const struct gpuwatch *w);

/* Read every GPU at now_ms (unix ms, also the events' at_ms) and compare with the previous tick:
 * up to max events into ev, their number in *ret_n (more than max are counted in *ret_n but not
 * written). The first tick takes the baseline of the counters (ECC, NVLink errors) and of the
 * links expected when nvlink_expected is -1; conditions already there (a lost GPU, a pending or
 * failed remap, a clocks event, links short of a configured nvlink_expected) are reported by it.
 * A tick less than 1 s after the previous one reads nothing and keeps the baseline. A counter
 * that went down (GPU reset) is the new baseline. A condition is reported when it starts (and,
 * at info, when it ends), not every tick while it lasts; an error counter every tick its rate is
 * over a rule. Kinds "gpu" (source "gpuN") and "nvlink" (source
 * "gpuN/linkL", or "gpuN" for the link count). 0 always (nothing here allocates). */
__attribute__((warn_unused_result)) int gpuwatch_tick(struct gpuwatch *w, int64_t now_ms,
						      struct health_event *ev, size_t max,
						      size_t *ret_n);

#endif
