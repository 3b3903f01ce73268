/* The benchmark engine's server side in a thread, for the engine's unit tests over tcp on
 * 127.0.0.1: tsrv_start() runs bench_run_server() with the given parameters on port 0 and waits
 * (up to 20 s) until it listens or has ended; tsrv_join() waits for its end. Its result (res,
 * freed by the caller), return value r and error text stay in the struct. Include after
 * <cmocka.h>. */
#ifndef RAILYARD_TESTS_UNIT_TEST_BENCH_SRV_H
#define RAILYARD_TESTS_UNIT_TEST_BENCH_SRV_H

#include "nodeagent/bench/bench.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

struct tsrv {
	pthread_t th;
	struct bench_params p;
	struct bench_run_opts o;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool ready, finished;
	uint16_t port;
	int r;
	json_t *res;
	char err[BENCH_ERR_LEN];
};

static inline void tsrv_ready(void *ud, uint16_t port)
{
	struct tsrv *s = ud;

	pthread_mutex_lock(&s->mu);
	s->port = port;
	s->ready = true;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static inline void *tsrv_main(void *arg)
{
	struct tsrv *s = arg;

	s->r = bench_run_server(&s->p, &s->o, &s->res);
	pthread_mutex_lock(&s->mu);
	s->finished = true;
	s->ready = true;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* The port it listens on; 0 when it ended first (s->finished, s->r and s->err say why). */
static inline uint16_t tsrv_start(struct tsrv *s, const struct bench_params *p)
{
	struct timespec ts;

	memset(s, 0, sizeof(*s));
	s->p = *p;
	s->p.port = 0;
	s->o.on_ready = tsrv_ready;
	s->o.ud = s;
	s->o.err = s->err;
	s->o.errlen = sizeof(s->err);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	assert_int_equal(pthread_create(&s->th, NULL, tsrv_main, s), 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 20;
	pthread_mutex_lock(&s->mu);
	while (!s->ready)
		assert_int_equal(pthread_cond_timedwait(&s->cv, &s->mu, &ts), 0);
	pthread_mutex_unlock(&s->mu);
	return s->finished ? 0 : s->port;
}

static inline void tsrv_join(struct tsrv *s)
{
	assert_int_equal(pthread_join(s->th, NULL), 0);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
}

#endif
