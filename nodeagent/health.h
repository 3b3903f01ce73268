/* The agent's health watchers, on one thread of their own: the kernel log (nodeagent/kmsg),
 * the fabric ports (nodeagent/portwatch), every tick; each event goes into the outbox as a
 * HealthEvent, kept until the controller has committed it (docs/health.md, docs/protocol.md).
 * The kernel log's position is kept in <state_dir>/health.state per boot, so a restarted agent
 * reports a record once, and an agent started after a reboot reports what the kernel logged
 * before it started. */
#ifndef RAILYARD_AGENT_HEALTH_H
#define RAILYARD_AGENT_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nodeagent/health_event.h"
#include "nodeagent/outbox.h"

#define AGENT_HEALTH_INTERVAL_MS 10000 /* the default tick: ports' rates, GPUs */
#define AGENT_HEALTH_STATE_FILE	 "health.state"
/* The kernel log: the same event at most once in this window, and at most this many events a
 * minute in all (an Xid 13 storm of a misbehaving job must not flood the controller). */
#define AGENT_HEALTH_DEDUP_MS 60000
#define AGENT_HEALTH_BURST    60

#define AGENT_HEALTH_CONFIG_FILE "health.json"
#define AGENT_HEALTH_CONFIG_MAX	 (64 * 1024)

struct agent_health_opts {
	const char *sysroot;   /* borrowed; NULL or "/": the real root */
	const char *state_dir; /* borrowed; NULL: the kernel log's position and the settings are
				* not kept */
	struct outbox *ob;     /* borrowed: where events go */
	int64_t interval_ms;   /* 0: AGENT_HEALTH_INTERVAL_MS; a playbook's health.interval wins */
};

struct agent_health;

/* Start the watchers' thread. A watcher whose source is missing (no /dev/kmsg, no fabric) is
 * off and says so once in the log; that is not an error. -errno when the thread cannot start. */
__attribute__((warn_unused_result)) int agent_health_new(const struct agent_health_opts *o,
							 struct agent_health **ret);
/* The controller sent this node's health settings (HealthConfig.config_json: the playbook's
 * health section as JSON, "" for the defaults; from "NAME VERSION"). Checked first: a malformed
 * one is -EINVAL with the reason in err and changes nothing; a good one is kept in
 * <state_dir>/health.json and the watchers take it at their next wake-up. The same text as the
 * settings in force is 0 and nothing more. Thread-safe. */
__attribute__((warn_unused_result)) int agent_health_configure(struct agent_health *h,
							       const char *config_json,
							       const char *from, char *err,
							       size_t errlen);

/* Stop the thread (close the outbox first, so that a push waiting for room returns). NULL is
 * fine. */
void agent_health_free(struct agent_health *h);

/* One event into the outbox as a HealthEvent (boot_id: the node's, may be NULL). Returns what
 * outbox_push() returns. Thread-safe. */
__attribute__((warn_unused_result)) int agent_health_push(struct outbox *ob,
							  const struct health_event *ev,
							  uint64_t repeats, const char *boot_id);

#endif
