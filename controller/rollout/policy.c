/* Rollout policy arithmetic (see policy.h and docs/rollout.md). */
#include "controller/rollout/policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static bool policy_valid(const struct rollout_policy *p)
{
	if (p->batch_count < 0 || p->batch_percent < 0 || p->batch_percent > 100)
		return false;
	if (p->batch_count && p->batch_percent)
		return false;
	if (p->max_fail_count < 0 || p->max_fail_percent < 0 || p->max_fail_percent > 100)
		return false;
	if (p->max_fail_count && p->max_fail_percent)
		return false;
	return p->canary >= 0 && p->pause_ms >= 0;
}

int rollout_batches(const struct rollout_policy *p, size_t n, size_t **ret_sizes, size_t *ret_count)
{
	size_t per, left = n, count = 0, *sizes;

	if (!policy_valid(p))
		return -EINVAL;
	if (p->batch_count)
		per = (size_t)p->batch_count;
	else if (p->batch_percent)
		per = n * (size_t)p->batch_percent / 100;
	else
		per = n;
	if (per == 0)
		per = 1;
	/* At most one batch per node plus the canary. */
	sizes = calloc(n + 1, sizeof(*sizes));
	if (!sizes)
		return -ENOMEM;
	if (p->canary > 0 && left > 0) {
		size_t c = (size_t)p->canary < left ? (size_t)p->canary : left;

		sizes[count++] = c;
		left -= c;
	}
	while (left > 0) {
		size_t b = per < left ? per : left;

		sizes[count++] = b;
		left -= b;
	}
	*ret_sizes = sizes;
	*ret_count = count;
	return 0;
}

size_t rollout_max_failures(const struct rollout_policy *p, size_t n)
{
	if (p->max_fail_percent)
		return n * (size_t)p->max_fail_percent / 100;
	return (size_t)p->max_fail_count;
}

bool rollout_should_stop(const struct rollout_policy *p, size_t n, size_t failed_total,
			 bool canary_batch, size_t failed_in_batch, char *reason, size_t len)
{
	size_t tolerated = rollout_max_failures(p, n);

	if (canary_batch && failed_in_batch > 0) {
		if (reason)
			snprintf(reason, len, "canary failed: %zu of its nodes failed",
				 failed_in_batch);
		return true;
	}
	if (failed_total > tolerated) {
		if (reason)
			snprintf(reason, len,
				 "max_fail exceeded: %zu of %zu nodes failed, %zu tolerated",
				 failed_total, n, tolerated);
		return true;
	}
	return false;
}
