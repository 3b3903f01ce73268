/* The engine's tick thread: runs every registered pass when kicked or every CTL_ENGINE_TICK_MS,
 * and hands the passes the nodes that came online since the last run. */
#include "controller/engine/engine_int.h"
#include "common/log/log.h"
#include "common/util/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct engine_online {
	struct engine_online *next;
	char node_id[64];
};

int ctl_engine_new(struct ctl_server *srv, struct ctl_engine **ret)
{
	struct ctl_engine *e = calloc(1, sizeof(*e));
	pthread_condattr_t ca;

	if (!e)
		return -ENOMEM;
	e->srv = srv;
	e->kicked = true; /* resume what a previous run left at once */
	pthread_mutex_init(&e->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->cond, &ca);
	pthread_condattr_destroy(&ca);
	engine_ingest_init(e);
	*ret = e;
	return 0;
}

void ctl_engine_on_failure(struct ctl_engine *e, ctl_engine_fail_fn fn, void *ud)
{
	e->fail = fn;
	e->fail_ud = ud;
}

void ctl_engine_fail(struct ctl_engine *e, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (e && e->fail)
		e->fail(e->fail_ud, why);
	else
		log_error("%s", why);
}

int ctl_engine_add_pass(struct ctl_engine *e, const struct ctl_pass *p, void *ud)
{
	if (!p || !p->run)
		return -EINVAL;
	if (e->n_passes == ENGINE_PASSES_MAX)
		return -ENOSPC;
	e->passes[e->n_passes].p = p;
	e->passes[e->n_passes].ud = ud;
	e->n_passes++;
	return 0;
}

int ctl_engine_handle(struct ctl_engine *e, Railyard__V1__AgentMessage__BodyCase body,
		      ctl_msg_handler fn)
{
	if (!fn || (int)body <= 0 || (int)body >= ENGINE_HANDLERS_MAX)
		return -EINVAL;
	if (e->handlers[body])
		return -EEXIST;
	e->handlers[body] = fn;
	return 0;
}

int ctl_engine_handle_grouped(struct ctl_engine *e, Railyard__V1__AgentMessage__BodyCase body,
			      ctl_msg_handler fn)
{
	int r = ctl_engine_handle(e, body, fn);

	if (r >= 0)
		e->grouped[body] = true;
	return r;
}

int ctl_engine_handles(struct ctl_engine *e, Railyard__V1__AgentMessage__BodyCase body)
{
	return (int)body > 0 && (int)body < ENGINE_HANDLERS_MAX && e->handlers[body] != NULL;
}

static void run_passes(struct ctl_engine *e)
{
	/* Nodes that came online first: their plans follow their Welcome without delay. */
	for (;;) {
		struct engine_online *o;

		pthread_mutex_lock(&e->lock);
		o = e->online;
		if (o)
			e->online = o->next;
		pthread_mutex_unlock(&e->lock);
		if (!o)
			break;
		for (size_t i = 0; i < e->n_passes; i++)
			if (e->passes[i].p->node_online)
				e->passes[i].p->node_online(e->passes[i].ud, o->node_id);
		free(o);
	}
	for (size_t i = 0; i < e->n_passes; i++)
		e->passes[i].p->run(e->passes[i].ud);
}

/* Wait on e->cond until the monotonic time at_ms (or a signal). Caller holds e->lock. */
static void wait_until(struct ctl_engine *e, int64_t at_ms)
{
	struct timespec ts = util_mono_timespec(at_ms);

	pthread_cond_timedwait(&e->cond, &e->lock, &ts);
}

static void *tick_main(void *arg)
{
	struct ctl_engine *e = arg;
	int64_t last = 0;

	pthread_mutex_lock(&e->lock);
	while (!e->stop) {
		int64_t now = util_now_mono_ms();

		if (!e->kicked) {
			wait_until(e, now + CTL_ENGINE_TICK_MS);
		} else if (now < last + CTL_ENGINE_KICK_GAP_MS) {
			/* Kicked again right after a run (every stored end of a plan kicks): the
			 * runs' own cost must not take the CPU from what they wait for. */
			wait_until(e, last + CTL_ENGINE_KICK_GAP_MS);
			continue;
		}
		if (e->stop)
			break;
		e->kicked = false;
		last = util_now_mono_ms();
		pthread_mutex_unlock(&e->lock);
		run_passes(e);
		pthread_mutex_lock(&e->lock);
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

int ctl_engine_start(struct ctl_engine *e)
{
	int r = engine_ingest_start(e);

	if (r < 0)
		return r;
	if (pthread_create(&e->tick, NULL, tick_main, e) != 0)
		return -EAGAIN;
	e->tick_started = true;
	return 0;
}

void ctl_engine_kick(struct ctl_engine *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	e->kicked = true;
	pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

void ctl_engine_node_online(struct ctl_engine *e, const char *node_id)
{
	struct engine_online *o;

	if (!e)
		return;
	o = calloc(1, sizeof(*o));
	if (!o) {
		log_error("engine: out of memory; %s's pending work waits for its next reconnect",
			  node_id);
		return;
	}
	snprintf(o->node_id, sizeof(o->node_id), "%s", node_id);
	pthread_mutex_lock(&e->lock);
	if (e->stop) {
		/* The passes are stopped: nobody would read it before ctl_engine_free(). */
		pthread_mutex_unlock(&e->lock);
		free(o);
		return;
	}
	o->next = e->online;
	e->online = o;
	e->kicked = true;
	pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

void ctl_engine_stop_passes(struct ctl_engine *e)
{
	if (!e || !e->tick_started)
		return;
	pthread_mutex_lock(&e->lock);
	e->stop = true;
	pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->lock);
	pthread_join(e->tick, NULL);
	e->tick_started = false;
}

void ctl_engine_free(struct ctl_engine *e)
{
	if (!e)
		return;
	ctl_engine_stop_passes(e);
	ctl_engine_stop_ingest(e);
	engine_ingest_done(e);
	while (e->online) {
		struct engine_online *o = e->online;

		e->online = o->next;
		free(o);
	}
	pthread_mutex_destroy(&e->lock);
	pthread_cond_destroy(&e->cond);
	free(e);
}
