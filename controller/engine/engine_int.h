/* Internals of the engine shared by engine.c (the tick thread and its passes) and ingest.c
 * (the ingest worker and its dispatch table). */
#ifndef RAILYARD_CONTROLLER_ENGINE_INT_H
#define RAILYARD_CONTROLLER_ENGINE_INT_H

#include "controller/engine/engine.h"

#include "common/util/hist.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define ENGINE_PASSES_MAX   16
#define ENGINE_HANDLERS_MAX 32 /* AgentMessage body cases are small numbers */

struct engine_item;
struct engine_online;

struct ctl_engine {
	struct ctl_server *srv;
	ctl_engine_fail_fn fail; /* told what the engine cannot recover from (may be NULL) */
	void *fail_ud;

	/* The tick thread (engine.c). */
	pthread_t tick;
	bool tick_started;
	pthread_mutex_t lock; /* stop, kicked, online */
	pthread_cond_t cond;
	bool stop, kicked;
	struct {
		const struct ctl_pass *p;
		void *ud;
	} passes[ENGINE_PASSES_MAX];
	size_t n_passes;
	struct engine_online *online;

	/* The ingest worker (ingest.c). */
	ctl_msg_handler handlers[ENGINE_HANDLERS_MAX];
	bool grouped[ENGINE_HANDLERS_MAX]; /* may share a transaction (ctl_engine_handle_grouped) */
	pthread_t ingest;
	bool ingest_started;
	pthread_mutex_t ilock; /* head, tail, istop, joined */
	pthread_cond_t icond;
	struct engine_item *head, *tail;
	_Atomic size_t queued; /* items between head and tail */
	bool istop, joined;
	/* How long storing each kind of message took, arrival at the worker to its outcome. */
	struct ry_hist ingest_latency[ENGINE_HANDLERS_MAX];
	int64_t next_chores_ms, data_version;
	/* Monotonic ms: since when messages wait for the database (0: none waits), and when the
	 * last such wait ended; read by ctl_engine_store_settled() on other threads. */
	_Atomic int64_t held_since_ms, held_until_ms;
};

/* ingest.c */
int engine_ingest_start(struct ctl_engine *e);
void engine_ingest_init(struct ctl_engine *e);
void engine_ingest_done(struct ctl_engine *e);

#endif
