/* The rollout of deployments in a serving controller: the engine pass that drives them batch by
 * batch from the database, and the handlers of the nodes' step and plan reports. */
#ifndef RAILYARD_CONTROLLER_ROLLOUT_H
#define RAILYARD_CONTROLLER_ROLLOUT_H

#include <stdint.h>

#include "controller/rollout/policy.h"

struct ctl_server;
struct ctl_engine;
struct ctl_rollout;

/* apply_timeout_ms: how long a node may take to report a plan's end (0: 30 min). grace_ms: for
 * this long after start an offline node is waited for rather than failed as unreachable
 * (agents reconnecting to a restarted controller need their backoff's worth of time). */
__attribute__((warn_unused_result)) int ctl_rollout_new(struct ctl_server *srv,
							int64_t apply_timeout_ms, int64_t grace_ms,
							struct ctl_rollout **ret);
/* Register the pass (a node coming online gets the plans it was sent but has not finished) and
 * the StepEvent/ApplyDone handlers with the engine, before it starts. */
__attribute__((warn_unused_result)) int ctl_rollout_register(struct ctl_rollout *r,
							     struct ctl_engine *e);
/* After the engine's tick thread stopped. NULL is fine. */
void ctl_rollout_free(struct ctl_rollout *r);

#endif
