/* Refusals kept in check: per key (a source address, a node id) a leaky bucket of recent
 * refusals that blocks the key while full, and an audit window so that a flood of refusals is
 * written to the audit log as one row per key and window with a count, not one row each.
 * Fixed memory: a set-associative table that forgets the least recently used key of a set.
 * Thread-safe. */
#ifndef RAILYARD_CONTROLLER_THROTTLE_H
#define RAILYARD_CONTROLLER_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>

struct ctl_throttle_config {
	int burst;		 /* refusals in a row before the key is blocked (>= 1) */
	int64_t drain_ms;	 /* one refusal is forgotten every drain_ms (> 0) */
	int64_t audit_window_ms; /* at most one audited refusal per key and window (> 0) */
};

struct ctl_throttle;

__attribute__((warn_unused_result)) int ctl_throttle_new(const struct ctl_throttle_config *cfg,
							 struct ctl_throttle **ret);
void ctl_throttle_free(struct ctl_throttle *t);

/* Is key blocked at now_ms (burst refusals not yet drained)? Then *ret_retry_ms (may be NULL)
 * is how long until one more attempt is let through. */
bool ctl_throttle_blocked(struct ctl_throttle *t, const char *key, int64_t now_ms,
			  int64_t *ret_retry_ms);

/* Count one refusal of key. true: write it to the audit log now; *ret_suppressed is then the
 * number of refusals of key since the last audited one that were not written. false: counted,
 * not to be written. */
bool ctl_throttle_refusal(struct ctl_throttle *t, const char *key, int64_t now_ms,
			  unsigned *ret_suppressed);

#endif
