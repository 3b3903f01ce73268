/* Per-key refusal buckets in a set-associative table (sets of THROTTLE_WAYS, LRU within a set).
 * A key that falls out of the table starts again from an empty bucket: the table bounds
 * memory, not the number of sources an attacker controls. */
#include "controller/throttle.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define THROTTLE_SETS 1024
#define THROTTLE_WAYS 4
#define THROTTLE_KEY  64

struct throttle_entry {
	char key[THROTTLE_KEY];
	int64_t level_ms; /* the bucket, in drain_ms units times drain_ms: level * drain_ms */
	int64_t last_ms;  /* last touched (LRU, drain) */
	int64_t audited_ms;
	unsigned suppressed;
	bool used;
};

struct ctl_throttle {
	struct ctl_throttle_config cfg;
	pthread_mutex_t lock;
	struct throttle_entry e[THROTTLE_SETS][THROTTLE_WAYS];
};

int ctl_throttle_new(const struct ctl_throttle_config *cfg, struct ctl_throttle **ret)
{
	struct ctl_throttle *t;

	if (!cfg || cfg->burst < 1 || cfg->drain_ms <= 0 || cfg->audit_window_ms <= 0)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->cfg = *cfg;
	pthread_mutex_init(&t->lock, NULL);
	*ret = t;
	return 0;
}

void ctl_throttle_free(struct ctl_throttle *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static uint32_t hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* The entry of key (created when create), drained to now. Caller holds the lock. */
static struct throttle_entry *lookup(struct ctl_throttle *t, const char *key, int64_t now_ms,
				     bool create)
{
	struct throttle_entry *set = t->e[hash(key) % THROTTLE_SETS], *victim = NULL, *e = NULL;

	for (int i = 0; i < THROTTLE_WAYS && !e; i++) {
		if (set[i].used && strncmp(set[i].key, key, THROTTLE_KEY - 1) == 0)
			e = &set[i];
		/* The victim: a free way, else the least recently used one. */
		else if (!victim ||
			 (victim->used && (!set[i].used || set[i].last_ms < victim->last_ms)))
			victim = &set[i];
	}
	if (!e) {
		if (!create)
			return NULL;
		e = victim;
		memset(e, 0, sizeof(*e));
		e->used = true;
		e->last_ms = now_ms;
		e->audited_ms = INT64_MIN;
		strncpy(e->key, key, THROTTLE_KEY - 1);
	}
	if (now_ms > e->last_ms) {
		e->level_ms -= now_ms - e->last_ms;
		if (e->level_ms < 0)
			e->level_ms = 0;
		e->last_ms = now_ms;
	}
	return e;
}

bool ctl_throttle_blocked(struct ctl_throttle *t, const char *key, int64_t now_ms,
			  int64_t *ret_retry_ms)
{
	struct throttle_entry *e;
	int64_t full = (int64_t)t->cfg.burst * t->cfg.drain_ms;
	bool blocked = false;

	pthread_mutex_lock(&t->lock);
	e = lookup(t, key, now_ms, false);
	if (e && e->level_ms > full - t->cfg.drain_ms) {
		blocked = true;
		if (ret_retry_ms)
			*ret_retry_ms = e->level_ms - (full - t->cfg.drain_ms);
	}
	pthread_mutex_unlock(&t->lock);
	return blocked;
}

bool ctl_throttle_refusal(struct ctl_throttle *t, const char *key, int64_t now_ms,
			  unsigned *ret_suppressed)
{
	struct throttle_entry *e;
	int64_t full = (int64_t)t->cfg.burst * t->cfg.drain_ms;
	bool audit = false;

	pthread_mutex_lock(&t->lock);
	e = lookup(t, key, now_ms, true);
	e->level_ms += t->cfg.drain_ms;
	if (e->level_ms > full)
		e->level_ms = full;
	if (e->audited_ms == INT64_MIN || now_ms - e->audited_ms >= t->cfg.audit_window_ms) {
		audit = true;
		if (ret_suppressed)
			*ret_suppressed = e->suppressed;
		e->suppressed = 0;
		e->audited_ms = now_ms;
	} else {
		e->suppressed++;
	}
	pthread_mutex_unlock(&t->lock);
	return audit;
}
