/* The ingest worker: one thread that stores, in arrival order, the messages sessions hand it
 * (a dispatch table from message kind to handler), then acknowledges each or ends its session,
 * and marks ended sessions' nodes offline. A message that cannot be stored yet (the database
 * is locked by another process, the disk is full) stays at the head and is retried with
 * backoff; its stream waits meanwhile, so nothing is acknowledged that is not committed and
 * nothing is dropped. Between messages it runs the periodic session chores that need the
 * database (last_seen, revocations made by other processes). */
#include "controller/server_int.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define INGEST_CHORES_MS    1000 /* revocation watch and last_seen, at most this often */
#define INGEST_RETRY_MIN_MS 50
#define INGEST_RETRY_MAX_MS 2000

struct ingest_item {
	struct ingest_item *next;
	struct ctl_session *s;
	ProtobufCMessage *msg; /* NULL: the session ended; mark its node offline */
};

struct ctl_ingest {
	struct ctl_server *srv;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct ingest_item *head, *tail;
	bool stop, joined;
	int64_t next_chores_ms, data_version;
};

typedef void (*ingest_fn)(struct ctl_server *srv, struct ctl_session *s,
			  const Railyard__V1__AgentMessage *m, struct ctl_outcome *o);

static void on_hello(struct ctl_server *srv, struct ctl_session *s,
		     const Railyard__V1__AgentMessage *m, struct ctl_outcome *o)
{
	ctl_session_on_hello(srv, s, m->hello, o);
}

static void on_facts(struct ctl_server *srv, struct ctl_session *s,
		     const Railyard__V1__AgentMessage *m, struct ctl_outcome *o)
{
	ctl_session_on_facts(srv, s, m->facts_update, o);
}

static void on_step_event(struct ctl_server *srv, struct ctl_session *s,
			  const Railyard__V1__AgentMessage *m, struct ctl_outcome *o)
{
	ctl_deploy_on_step_event(srv, ctl_session_node_id(s), ctl_session_hostname(s),
				 m->step_event, o);
}

static void on_apply_done(struct ctl_server *srv, struct ctl_session *s,
			  const Railyard__V1__AgentMessage *m, struct ctl_outcome *o)
{
	ctl_deploy_on_apply_done(srv, ctl_session_node_id(s), ctl_session_hostname(s),
				 m->apply_done, o);
}

static void on_bench_ready(struct ctl_server *srv, struct ctl_session *s,
			   const Railyard__V1__AgentMessage *m, struct ctl_outcome *o)
{
	ctl_bench_on_ready(srv, ctl_session_node_id(s), m->bench_ready, o);
}

static void on_bench_result(struct ctl_server *srv, struct ctl_session *s,
			    const Railyard__V1__AgentMessage *m, struct ctl_outcome *o)
{
	ctl_bench_on_result(srv, ctl_session_node_id(s), m->bench_result, o);
}

/* Every kind a session hands over, and who stores it. */
static const struct {
	Railyard__V1__AgentMessage__BodyCase body;
	ingest_fn fn;
} handlers[] = {
	{RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO, on_hello},
	{RAILYARD__V1__AGENT_MESSAGE__BODY_FACTS_UPDATE, on_facts},
	{RAILYARD__V1__AGENT_MESSAGE__BODY_STEP_EVENT, on_step_event},
	{RAILYARD__V1__AGENT_MESSAGE__BODY_APPLY_DONE, on_apply_done},
	{RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_READY, on_bench_ready},
	{RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_RESULT, on_bench_result},
};

void ctl_outcome_store_error(struct ctl_server *srv, struct ctl_outcome *o, int r, const char *what)
{
	o->verdict = CTL_RETRY;
	snprintf(o->why, sizeof(o->why), "%s: %s (%s)", what, ry_strerror(r),
		 store_errmsg(srv->state->store));
	if (r == -RY_E_CORRUPT)
		ctl_server_fail(srv, "the database %s is corrupt (%s); stopping",
				store_path(srv->state->store), store_errmsg(srv->state->store));
}

static void handle(struct ctl_server *srv, struct ingest_item *it, struct ctl_outcome *o)
{
	const Railyard__V1__AgentMessage *m = (const Railyard__V1__AgentMessage *)it->msg;
	int r;

	memset(o, 0, sizeof(*o));
	if (!m) {
		r = ctl_session_store_offline(srv, it->s);
		if (r < 0)
			ctl_outcome_store_error(srv, o, r, "marking the node offline");
		else
			o->verdict = CTL_DONE;
		return;
	}
	for (size_t i = 0; i < RY_ARRAY_SIZE(handlers); i++) {
		if (handlers[i].body == m->body_case) {
			handlers[i].fn(srv, it->s, m, o);
			return;
		}
	}
	/* The session only hands over the kinds above. */
	o->verdict = CTL_END;
	o->code = GRPC_STATUS_INTERNAL;
	snprintf(o->why, sizeof(o->why), "no handler for message kind %d", (int)m->body_case);
}

static void item_free(struct ctl_server *srv, struct ingest_item *it)
{
	if (it->msg)
		protobuf_c_message_free_unpacked(it->msg, NULL);
	ctl_session_unref(srv, it->s);
	free(it);
}

static void chores(struct ctl_ingest *in)
{
	struct ctl_server *srv = in->srv;
	int64_t now = util_now_mono_ms(), v;

	if (now < in->next_chores_ms)
		return;
	in->next_chores_ms = now + INGEST_CHORES_MS;
	/* Revocations are written by `node revoke` (another process, for now): look only when
	 * the database changed. */
	if (store_data_version(srv->state->store, &v) == 0 && v != in->data_version) {
		in->data_version = v;
		ctl_sessions_end_revoked(srv);
	}
	ctl_sessions_save_last_seen(srv, now);
}

/* Wait up to ms or until stopped. Caller holds in->lock. */
static void wait_locked(struct ctl_ingest *in, int64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&in->cond, &in->lock, &ts);
}

static void *ingest_main(void *arg)
{
	struct ctl_ingest *in = arg;
	struct ctl_server *srv = in->srv;
	int64_t backoff = 0, held_since = 0;

	pthread_mutex_lock(&in->lock);
	for (;;) {
		struct ingest_item *it = in->head;
		struct ctl_outcome o;
		bool stopping = in->stop;

		if (!it) {
			if (stopping)
				break;
			wait_locked(in, INGEST_CHORES_MS);
			pthread_mutex_unlock(&in->lock);
			chores(in);
			pthread_mutex_lock(&in->lock);
			continue;
		}
		pthread_mutex_unlock(&in->lock);
		handle(srv, it, &o);
		if (o.verdict == CTL_RETRY && !stopping) {
			if (!held_since) {
				held_since = util_now_mono_ms();
				log_error("node %s: not stored yet: %s; holding its messages and "
					  "retrying",
					  ctl_session_node_id(it->s), o.why);
			}
			backoff = backoff ? backoff * 2 : INGEST_RETRY_MIN_MS;
			if (backoff > INGEST_RETRY_MAX_MS)
				backoff = INGEST_RETRY_MAX_MS;
			chores(in);
			pthread_mutex_lock(&in->lock);
			if (!in->stop)
				wait_locked(in, backoff);
			continue;
		}
		if (held_since) {
			log_info("database writable again after %lld ms; storing the held messages",
				 (long long)(util_now_mono_ms() - held_since));
			held_since = 0;
		}
		backoff = 0;
		if (it->msg) {
			if (o.verdict == CTL_RETRY)
				log_warn("node %s: a message not stored before shutdown (%s); the "
					 "node sends it again",
					 ctl_session_node_id(it->s), o.why);
			else
				ctl_session_processed(srv, it->s,
						      (const Railyard__V1__AgentMessage *)it->msg,
						      &o);
		}
		pthread_mutex_lock(&in->lock);
		in->head = it->next;
		if (!in->head)
			in->tail = NULL;
		pthread_mutex_unlock(&in->lock);
		item_free(srv, it);
		chores(in);
		pthread_mutex_lock(&in->lock);
	}
	pthread_mutex_unlock(&in->lock);
	return NULL;
}

int ctl_ingest_start(struct ctl_server *srv, struct ctl_ingest **ret)
{
	struct ctl_ingest *in = calloc(1, sizeof(*in));
	pthread_condattr_t ca;

	if (!in)
		return -ENOMEM;
	in->srv = srv;
	in->data_version = -1;
	pthread_mutex_init(&in->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&in->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&in->thread, NULL, ingest_main, in) != 0) {
		pthread_mutex_destroy(&in->lock);
		pthread_cond_destroy(&in->cond);
		free(in);
		return -EAGAIN;
	}
	*ret = in;
	return 0;
}

void ctl_ingest_stop(struct ctl_ingest *in)
{
	bool joined;

	if (!in)
		return;
	pthread_mutex_lock(&in->lock);
	joined = in->joined;
	in->stop = true;
	pthread_cond_signal(&in->cond);
	pthread_mutex_unlock(&in->lock);
	if (joined)
		return;
	pthread_join(in->thread, NULL);
	pthread_mutex_lock(&in->lock);
	in->joined = true;
	pthread_mutex_unlock(&in->lock);
}

void ctl_ingest_free(struct ctl_ingest *in)
{
	if (!in)
		return;
	ctl_ingest_stop(in);
	pthread_mutex_destroy(&in->lock);
	pthread_cond_destroy(&in->cond);
	free(in);
}

static void enqueue(struct ctl_ingest *in, struct ctl_session *s, ProtobufCMessage *msg)
{
	struct ingest_item *it = calloc(1, sizeof(*it));

	if (!it) {
		/* Not acknowledged: the node sends it again on its next session. */
		log_error("node %s: out of memory queueing a message; ending its session",
			  ctl_session_node_id(s));
		if (msg) {
			protobuf_c_message_free_unpacked(msg, NULL);
			ctl_session_end(in->srv, ctl_session_node_id(s), GRPC_STATUS_UNAVAILABLE,
					"controller out of memory");
		}
		ctl_session_unref(in->srv, s);
		return;
	}
	it->s = s;
	it->msg = msg;
	pthread_mutex_lock(&in->lock);
	if (in->joined) {
		/* Shutting down, the worker is gone: a session that ends late is handled here. */
		struct ctl_outcome o;

		pthread_mutex_unlock(&in->lock);
		handle(in->srv, it, &o);
		if (msg && o.verdict != CTL_RETRY)
			ctl_session_processed(in->srv, s, (const Railyard__V1__AgentMessage *)msg,
					      &o);
		item_free(in->srv, it);
		return;
	}
	if (in->tail)
		in->tail->next = it;
	else
		in->head = it;
	in->tail = it;
	pthread_cond_signal(&in->cond);
	pthread_mutex_unlock(&in->lock);
}

void ctl_ingest_submit(struct ctl_ingest *in, struct ctl_session *s, ProtobufCMessage *msg)
{
	enqueue(in, s, msg);
}

void ctl_ingest_offline(struct ctl_ingest *in, struct ctl_session *s)
{
	enqueue(in, s, NULL);
}
