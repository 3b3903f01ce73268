/* The controller's rollout engine (deploy.c) and the rollout policy's storage form. */
#ifndef RAILYARD_CONTROLLER_DEPLOY_H
#define RAILYARD_CONTROLLER_DEPLOY_H

#include <stdbool.h>
#include <stdint.h>

#include "controller/rollout/policy.h"

struct ctl_server;
struct ctl_deployer;

/* Start the engine thread for a serving controller. apply_timeout_ms: how long a node may
 * take to report a plan's end (0: 30 min). grace_ms: for this long after start an offline node
 * is waited for rather than failed as unreachable (agents reconnecting to a restarted
 * controller need their backoff's worth of time). */
__attribute__((warn_unused_result)) int ctl_deployer_start(struct ctl_server *srv,
							   int64_t apply_timeout_ms,
							   int64_t grace_ms,
							   struct ctl_deployer **ret);
/* Wake the engine now (a result arrived, a deployment was created). Thread-safe; NULL is fine. */
void ctl_deployer_kick(struct ctl_deployer *dp);
/* A node came online (its Welcome is sent): the engine thread re-sends the plans it was sent
 * but has not finished. Thread-safe; NULL is fine. */
void ctl_deployer_node_online(struct ctl_deployer *dp, const char *node_id);
void ctl_deployer_free(struct ctl_deployer *dp);

/* The policy as stored with a deployment (JSON object of its fields; caller frees) and back. */
char *ctl_policy_to_json(const struct rollout_policy *p);
__attribute__((warn_unused_result)) int ctl_policy_from_json(const char *policy_json,
							     struct rollout_policy *ret);

#endif
