/* The agent's side of a playbook's health section: the JSON object the controller sends
 * (playbook_health_json(), docs/health.md "The agent's configuration") checked and turned into
 * what each watcher takes: the interval, the port watcher's rules (its defaults with the
 * playbook's replaced or added), the Xid severities the playbook overrides, and the "gpu" and
 * "readiness" objects that gpuwatch_new() and readiness_check() read. Pure: no I/O. */
#ifndef RAILYARD_AGENT_HEALTH_CONFIG_H
#define RAILYARD_AGENT_HEALTH_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nodeagent/health_event.h"
#include "nodeagent/portwatch.h"

#define HEALTH_CONFIG_MAX_RULES	  64
#define HEALTH_CONFIG_MAX_XIDS	  192
#define HEALTH_CONFIG_INTERVAL_MS 10000 /* AGENT_HEALTH_INTERVAL_MS */
#define HEALTH_CONFIG_IGNORE	  (-1)

struct health_xid_override {
	int xid;
	int severity; /* enum health_severity, or HEALTH_CONFIG_IGNORE */
};

/* Caller-embedded: health_config_parse() fills it, health_config_done() releases it. */
struct health_config {
	int64_t interval_ms;
	/* portwatch_new()'s rules: ended by a NULL counter; counters point into names */
	struct portwatch_rule rules[HEALTH_CONFIG_MAX_RULES + 1];
	char names[HEALTH_CONFIG_MAX_RULES][64];
	struct health_xid_override xid[HEALTH_CONFIG_MAX_XIDS];
	size_t n_xid;
	json_t *gpu;	   /* a reference, or NULL (the watcher's defaults) */
	json_t *readiness; /* a reference, or NULL (nothing required) */
};

/* Check health (borrowed; NULL: every default) and fill *ret. A wrong version, an unknown key, a
 * wrong type or a value out of range is -EINVAL with the reason, naming the key ("health.gpu.
 * nvlink.expected: ..."), in err; *ret is written only on success. -ENOMEM. */
__attribute__((warn_unused_result)) int
health_config_parse(const json_t *health, struct health_config *ret, char *err, size_t errlen);
/* Drop the references; NULL and a done config are fine. */
void health_config_done(struct health_config *c);

/* The severity of an Xid after the playbook's overrides: false when it is ignored; else true and
 * *sev (the kernel log watcher's severity on entry) replaced when the playbook names it. */
bool health_config_xid(const struct health_config *c, int xid, enum health_severity *sev);

#endif
