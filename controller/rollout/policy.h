/* Rollout policy arithmetic: how a deployment's nodes are cut into batches (canary first), and
 * when failures stop the rollout. Pure functions; the rules are documented in docs/rollout.md
 * and each edge case has a unit test. */
#ifndef RAILYARD_ROLLOUT_POLICY_H
#define RAILYARD_ROLLOUT_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* At most one of each count/percent pair is non-zero; all zero means the defaults: one batch
 * with every node, no failure tolerated, no canary, no pause. */
struct rollout_policy {
	int batch_count;      /* nodes per batch */
	int batch_percent;    /* 1..100: floor(n * p / 100) nodes per batch, at least 1 */
	int max_fail_count;   /* failures tolerated over the whole rollout */
	int max_fail_percent; /* 0..100: failures tolerated = floor(n * p / 100) */
	int canary;	      /* size of a first batch that must fully succeed (0: none) */
	int64_t pause_ms;     /* between batches */
};

/* Cut n nodes into batches; *ret_sizes (caller frees) gets the size of each batch in order.
 * -EINVAL for a policy out of range. n == 0 gives no batches. */
__attribute__((warn_unused_result)) int rollout_batches(const struct rollout_policy *p, size_t n,
							size_t **ret_sizes, size_t *ret_count);

/* Failures tolerated for n nodes. */
size_t rollout_max_failures(const struct rollout_policy *p, size_t n);

/* After a batch has finished: should the rollout stop? failed_total counts every failed or
 * unreachable node so far; canary_batch says whether the batch just finished was the canary.
 * When it stops, reason (if not NULL) says why, e.g. "max_fail exceeded: 2 of 5 nodes failed,
 * 1 tolerated". */
bool rollout_should_stop(const struct rollout_policy *p, size_t n, size_t failed_total,
			 bool canary_batch, size_t failed_in_batch, char *reason, size_t len);

/* The policy as stored with a deployment (a JSON object of its fields; caller frees; NULL when
 * out of memory) and back (-RY_E_INVALID for anything else). */
char *rollout_policy_to_json(const struct rollout_policy *p);
__attribute__((warn_unused_result)) int rollout_policy_from_json(const char *policy_json,
								 struct rollout_policy *ret);

#endif
