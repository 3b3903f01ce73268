/* What every health watcher of the agent reports (the kernel log, the fabric ports, the GPUs and
 * NVLink, the readiness checks): one event, its severity and where it was seen. The agent sends
 * them to the controller as HealthEvent messages (docs/protocol.md); reference: docs/health.md. */
#ifndef RAILYARD_AGENT_HEALTH_EVENT_H
#define RAILYARD_AGENT_HEALTH_EVENT_H

#include <stdint.h>

enum health_severity {
	HEALTH_INFO = 0, /* worth recording (a link came back) */
	HEALTH_WARNING,	 /* degrades the node; a person should look */
	HEALTH_CRITICAL, /* the node cannot be trusted with a job */
};

/* "info", "warning", "critical". */
const char *health_severity_name(enum health_severity s);

#define HEALTH_KIND_MAX	  16
#define HEALTH_SOURCE_MAX 64
#define HEALTH_WHAT_MAX	  160
#define HEALTH_DETAIL_MAX 256

/* One event. kind: "xid", "kmsg", "port", "gpu", "nvlink", "readiness". source: where (a PCI
 * address, "mlx5_0/1", "gpu3", "nvidia-fs"). what: one line an operator reads ("Xid 79: GPU
 * has fallen off the bus"); detail: the evidence (the kernel's line, the counter values). */
struct health_event {
	char kind[HEALTH_KIND_MAX];
	enum health_severity severity;
	char source[HEALTH_SOURCE_MAX];
	char what[HEALTH_WHAT_MAX];
	char detail[HEALTH_DETAIL_MAX];
	int64_t at_ms; /* unix ms, when it was seen */
};

#endif
