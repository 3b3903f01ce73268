/* Rollout policy arithmetic (see policy.h and docs/rollout.md). */
#include "controller/rollout/policy.h"
#include "common/util/error.h"

#include <jansson.h>

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

int rollout_policy_from_json(const char *policy_json, struct rollout_policy *ret)
{
	struct rollout_policy p = {0};
	json_error_t err;
	json_t *o = json_loads(policy_json, 0, &err);
	int r = 0;

	if (!json_is_object(o)) {
		json_decref(o);
		return -RY_E_INVALID;
	}
	p.batch_count = (int)json_integer_value(json_object_get(o, "batch_count"));
	p.batch_percent = (int)json_integer_value(json_object_get(o, "batch_percent"));
	p.max_fail_count = (int)json_integer_value(json_object_get(o, "max_fail_count"));
	p.max_fail_percent = (int)json_integer_value(json_object_get(o, "max_fail_percent"));
	p.canary = (int)json_integer_value(json_object_get(o, "canary"));
	p.pause_ms = json_integer_value(json_object_get(o, "pause_ms"));
	json_decref(o);
	if (p.batch_count < 0 || p.batch_percent < 0 || p.max_fail_count < 0 ||
	    p.max_fail_percent < 0 || p.canary < 0 || p.pause_ms < 0)
		r = -RY_E_INVALID;
	if (r == 0)
		*ret = p;
	return r;
}

char *rollout_policy_to_json(const struct rollout_policy *p)
{
	json_t *o = json_pack("{s:i, s:i, s:i, s:i, s:i, s:I}", "batch_count", p->batch_count,
			      "batch_percent", p->batch_percent, "max_fail_count",
			      p->max_fail_count, "max_fail_percent", p->max_fail_percent, "canary",
			      p->canary, "pause_ms", (json_int_t)p->pause_ms);
	char *s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	json_decref(o);
	return s;
}
