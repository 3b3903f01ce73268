/* Readiness checks a playbook can require of a node between campaigns (its health section's
 * `require:`): the NVSwitch fabric manager running, GPUDirect RDMA usable (nvidia-peermem or
 * dma-buf), GPUDirect Storage usable (nvidia-fs loaded, cufile.json present, valid and as the
 * playbook expects, `gdscheck -p` content). Each failure is a health event of kind
 * "readiness"; a check that passes says nothing. Reads files under an injectable sysroot and
 * runs gdscheck through the apply runner (no shell, a timeout, output capped). Reference:
 * docs/health.md, "Readiness checks". */
#ifndef RAILYARD_AGENT_READINESS_H
#define RAILYARD_AGENT_READINESS_H

#include <jansson.h>
#include <stddef.h>

#include "common/playbook/playbook.h"
#include "nodeagent/health_event.h"

/* The playbook's defaults (docs/playbooks.md, "health"). */
#define READINESS_DEFAULT_CUFILE      PB_HEALTH_CUFILE
#define READINESS_DEFAULT_GDSCHECK    PB_HEALTH_GDSCHECK
#define READINESS_GDSCHECK_TIMEOUT_S  PB_HEALTH_GDSCHECK_TIMEOUT_S
#define READINESS_GDSCHECK_OUTPUT_MAX (64 * 1024)
#define READINESS_CUFILE_MAX	      (1024 * 1024)

/* Whether cfg is a readiness configuration readiness_check() accepts (the health config's
 * "readiness" object, docs/health.md): {require: ["fabric_manager" | "gpudirect_rdma" | "gds",
 * ...], gds?: {cufile?: absolute path, expect?: {"dotted.key": JSON value, ...}, gdscheck?:
 * absolute path, gdscheck_timeout_s?: 1-600, supported?: ["NVMe", ...]}}. NULL is the empty
 * configuration (nothing required). 0, or -EINVAL with the reason, naming the key, in err. */
__attribute__((warn_unused_result)) int readiness_config_check(const json_t *cfg, char *err,
							       size_t errlen);

/* Run the checks cfg requires (borrowed; NULL: none) on the node under sysroot (borrowed; NULL,
 * "" or "/": the running system): up to max failures into ev (at_ms: the clock's unix ms), their
 * number in *ret_n (more than max are counted, not written). A check that fails gives one event
 * or more, critical: what was required is not there. gdscheck is run only when gds is required
 * and the program exists (SYSROOT + its path); not installed, it is skipped. -EINVAL (cfg
 * malformed: readiness_config_check() says why), -ENOMEM, or 0. Blocks up to gdscheck's
 * timeout. Thread-safe (no global state). */
__attribute__((warn_unused_result)) int readiness_check(const char *sysroot, const json_t *cfg,
							struct health_event *ev, size_t max,
							size_t *ret_n);

/* cufile.json's text with its // comments removed (those outside strings), in place. For the
 * tests and the gds check. */
void readiness_strip_comments(char *text);

#endif
