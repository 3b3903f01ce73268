/* The engine's ingest worker: one thread that stores, in arrival order, the messages sessions
 * hand it (through the dispatch table of registered handlers), then acknowledges each or ends
 * its session, and marks ended sessions' nodes offline. Group commit: a run of messages whose
 * handlers may share a transaction (ctl_engine_handle_grouped(): Hello, FactsUpdate, StepEvent,
 * ApplyDone, offline marks) is stored in one transaction, each message in a savepoint of its own,
 * and only after the commit (one fsync for all) is any of them acknowledged. A message that
 * cannot be stored yet (the database is locked by another process, the disk is full) stays at
 * the head and is retried with backoff; its stream waits meanwhile, so nothing is acknowledged
 * that is not committed and nothing is dropped. Between batches it runs the periodic session
 * chores that need the database (last_seen, revocations made by other processes). */
#include "controller/engine/engine_int.h"
#include "controller/events.h"
#include "controller/session.h"
#include "controller/state.h"
#include "controller/store/store.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define INGEST_CHORES_MS    1000 /* revocation watch and last_seen, at most this often */
#define INGEST_RETRY_MIN_MS 50
#define INGEST_RETRY_MAX_MS 2000
/* A batch: at most this many messages, and no more added once its handlers took this long (the
 * writer connection is the batch's until it commits). */
#define INGEST_BATCH_MAX 512
#define INGEST_BATCH_US	 50000

struct engine_item {
	struct engine_item *next;
	struct ctl_session *s;
	ProtobufCMessage *msg; /* NULL: the session ended; mark its node offline */
	size_t bytes;	       /* msg's encoded size (the session's window counts it) */
	bool last;	       /* the session's last message in its commit */
};

void ctl_outcome_store_error(struct ctl_server *srv, struct ctl_outcome *o, int r, const char *what)
{
	o->verdict = CTL_RETRY;
	snprintf(o->why, sizeof(o->why), "%s: %s (%s)", what, ry_strerror(r),
		 store_errmsg(ctl_server_state(srv)->store));
	if (r == -RY_E_CORRUPT)
		ctl_engine_fail(ctl_server_engine(srv), "the database %s is corrupt (%s); stopping",
				store_path(ctl_server_state(srv)->store),
				store_errmsg(ctl_server_state(srv)->store));
}

static void handle(struct ctl_engine *e, struct engine_item *it, struct ctl_outcome *o)
{
	struct ctl_server *srv = e->srv;
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
	if (ctl_session_ended(it->s)) {
		/* Read ahead of the message that ended its session (or before a superseding
		 * session, the reaper or a revocation ended it): the node sends it again. */
		o->verdict = CTL_DROP;
		return;
	}
	if (ctl_engine_handles(e, m->body_case)) {
		int64_t t0 = util_now_mono_us();

		e->handlers[m->body_case](srv, it->s, m, o);
		ry_hist_add(&e->ingest_latency[m->body_case], util_now_mono_us() - t0);
		return;
	}
	/* The session only hands over the kinds that have a handler. */
	o->verdict = CTL_END;
	o->code = GRPC_STATUS_INTERNAL;
	snprintf(o->why, sizeof(o->why), "no handler for message kind %d", (int)m->body_case);
}

static void item_free(struct ctl_server *srv, struct engine_item *it)
{
	if (it->msg)
		protobuf_c_message_free_unpacked(it->msg, NULL);
	ctl_session_unref(srv, it->s);
	free(it);
}

static void chores(struct ctl_engine *in)
{
	struct ctl_server *srv = in->srv;
	int64_t now = util_now_mono_ms(), v;

	if (now < in->next_chores_ms)
		return;
	in->next_chores_ms = now + INGEST_CHORES_MS;
	/* Revocations are written by `node revoke` (another process, for now): look only when
	 * the database changed. */
	if (store_data_version(ctl_server_state(srv)->store, &v) == 0 && v != in->data_version) {
		in->data_version = v;
		ctl_sessions_end_revoked(srv);
	}
	ctl_sessions_save_last_seen(srv, now);
}

/* Wait up to ms or until stopped. Caller holds in->lock. */
static void wait_locked(struct ctl_engine *in, int64_t ms)
{
	struct timespec ts = util_mono_timespec(util_now_mono_ms() + ms);

	pthread_cond_timedwait(&in->icond, &in->ilock, &ts);
}

/* May the item share a transaction with others? Offline marks and grouped handlers may. */
static bool groupable(struct ctl_engine *e, const struct engine_item *it)
{
	const Railyard__V1__AgentMessage *m = (const Railyard__V1__AgentMessage *)it->msg;

	return !m || (ctl_engine_handles(e, m->body_case) && e->grouped[m->body_case]);
}

/* Up to max items from the head, in order (not dequeued). */
static size_t peek(struct ctl_engine *in, struct engine_item **v, size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&in->ilock);
	for (struct engine_item *it = in->head; it && n < max; it = it->next)
		v[n++] = it;
	pthread_mutex_unlock(&in->ilock);
	return n;
}

/* Did a message before v[k] in this batch end v[k]'s session (its outcome CTL_END)? */
static bool ended_earlier(struct engine_item **v, const struct ctl_outcome *outs, size_t k)
{
	for (size_t j = 0; j < k; j++)
		if (v[j]->s == v[k]->s && v[j]->msg && outs[j].verdict == CTL_END)
			return true;
	return false;
}

/* Store a run of grouped items from the head in one transaction. Returns how many were stored
 * (their outcomes in outs), 0 when the first could not be (its outcome in outs[0], CTL_RETRY).
 * What the handlers emit is published only after the commit. */
static size_t store_batch(struct ctl_engine *in, struct engine_item **v, size_t n,
			  struct ctl_outcome *outs)
{
	struct ctl_server *srv = in->srv;
	struct store *st = ctl_server_state(srv)->store;
	int64_t t0 = util_now_mono_us();
	size_t k = 0;
	bool ends = false; /* a message of this batch ends its session */
	int r;

	r = store_batch_begin(st);
	if (r < 0) {
		memset(&outs[0], 0, sizeof(outs[0]));
		ctl_outcome_store_error(srv, &outs[0], r, "starting a transaction");
		return 0;
	}
	ctl_events_hold();
	for (; k < n && groupable(in, v[k]); k++) {
		size_t mark = ctl_events_held();

		if (k > 0 && util_now_mono_us() - t0 > INGEST_BATCH_US)
			break;
		r = store_batch_item_begin(st);
		if (r < 0) {
			memset(&outs[k], 0, sizeof(outs[k]));
			ctl_outcome_store_error(srv, &outs[k], r, "starting a savepoint");
			break;
		}
		if (ends && v[k]->msg && ended_earlier(v, outs, k)) {
			/* Read ahead of a message of this batch that ends its session: as
			 * handle() does once that session is ended. */
			memset(&outs[k], 0, sizeof(outs[k]));
			outs[k].verdict = CTL_DROP;
		} else {
			handle(in, v[k], &outs[k]);
			ends = ends || outs[k].verdict == CTL_END;
		}
		if (outs[k].verdict == CTL_RETRY || store_batch_broken(st)) {
			/* Not this one, nor any after it: the batch ends before it. */
			store_batch_item_end(st, false);
			ctl_events_drop(mark);
			break;
		}
		store_batch_item_end(st, true);
	}
	if (k == 0 || store_batch_broken(st)) {
		/* Nothing stored: outs[0] says why the first could not be (its handler, or the
		 * transaction that SQLite rolled back). */
		store_batch_rollback(st);
		ctl_events_release(ctl_server_events(srv), false);
		if (k > 0) {
			memset(&outs[0], 0, sizeof(outs[0]));
			ctl_outcome_store_error(srv, &outs[0], -RY_E_DB, "storing a batch");
		}
		return 0;
	}
	r = store_batch_commit(st);
	if (r < 0) {
		/* None of them is stored: all stay queued, the first is retried. */
		ctl_events_release(ctl_server_events(srv), false);
		memset(&outs[0], 0, sizeof(outs[0]));
		ctl_outcome_store_error(srv, &outs[0], r, "committing a batch");
		return 0;
	}
	ctl_events_release(ctl_server_events(srv), true);
	return k;
}

static void *ingest_main(void *arg)
{
	struct ctl_engine *in = arg;
	struct ctl_server *srv = in->srv;
	struct engine_item **v = calloc(INGEST_BATCH_MAX, sizeof(*v));
	struct ctl_outcome *outs = calloc(INGEST_BATCH_MAX, sizeof(*outs));
	size_t batch_max = v && outs ? INGEST_BATCH_MAX : 1;
	struct engine_item *v1[1];
	struct ctl_outcome out1[1];
	int64_t backoff = 0, held_since = 0;
	unsigned batch = 0;

	if (batch_max == 1) {
		log_error("ingest: out of memory for batches; storing one message at a time");
		free(v);
		free(outs);
		v = v1;
		outs = out1;
	}
	pthread_mutex_lock(&in->ilock);
	for (;;) {
		bool stopping = in->istop, kick = false;
		size_t n, done;

		if (!in->head) {
			if (stopping)
				break;
			wait_locked(in, INGEST_CHORES_MS);
			pthread_mutex_unlock(&in->ilock);
			chores(in);
			pthread_mutex_lock(&in->ilock);
			continue;
		}
		pthread_mutex_unlock(&in->ilock);
		n = peek(in, v, batch_max);
		if (groupable(in, v[0])) {
			done = store_batch(in, v, n, outs);
		} else {
			/* A handler that reads through the reader connection: alone, in its own
			 * transaction(s). */
			handle(in, v[0], &outs[0]);
			done = outs[0].verdict == CTL_RETRY ? 0 : 1;
		}
		if (done == 0 && !stopping) {
			if (!held_since) {
				held_since = util_now_mono_ms();
				atomic_store(&in->held_since_ms, held_since);
				log_error("node %s: not stored yet: %s; holding its messages and "
					  "retrying",
					  ctl_session_node_id(v[0]->s), outs[0].why);
			}
			backoff = backoff ? backoff * 2 : INGEST_RETRY_MIN_MS;
			if (backoff > INGEST_RETRY_MAX_MS)
				backoff = INGEST_RETRY_MAX_MS;
			chores(in);
			pthread_mutex_lock(&in->ilock);
			if (!in->istop)
				wait_locked(in, backoff);
			continue;
		}
		if (held_since) {
			log_info("database writable again after %lld ms; storing the held messages",
				 (long long)(util_now_mono_ms() - held_since));
			held_since = 0;
			atomic_store(&in->held_until_ms, util_now_mono_ms());
			atomic_store(&in->held_since_ms, 0);
		}
		backoff = 0;
		if (done == 0) {
			/* Shutting down with the database unwritable: the node sends it again. */
			if (v[0]->msg)
				log_warn("node %s: a message not stored before shutdown (%s); the "
					 "node sends it again",
					 ctl_session_node_id(v[0]->s), outs[0].why);
			done = 1;
		} else {
			/* Committed: now, and only now, acknowledge; one Receipt per session. */
			if (++batch == 0)
				batch = 1;
			for (size_t i = done; i-- > 0;)
				v[i]->last = v[i]->msg && ctl_session_last_in_batch(v[i]->s, batch);
			for (size_t i = 0; i < done; i++) {
				kick = kick || outs[i].kick;
				if (v[i]->msg)
					ctl_session_processed(
						srv, v[i]->s,
						(const Railyard__V1__AgentMessage *)v[i]->msg,
						&outs[i], v[i]->bytes, v[i]->last);
			}
		}
		if (kick)
			ctl_engine_kick(ctl_server_engine(srv));
		pthread_mutex_lock(&in->ilock);
		for (size_t i = 0; i < done; i++) {
			in->head = v[i]->next;
			if (!in->head)
				in->tail = NULL;
			in->queued--;
		}
		pthread_mutex_unlock(&in->ilock);
		for (size_t i = 0; i < done; i++)
			item_free(srv, v[i]);
		chores(in);
		pthread_mutex_lock(&in->ilock);
	}
	pthread_mutex_unlock(&in->ilock);
	if (v != v1) {
		free(v);
		free(outs);
	}
	return NULL;
}

bool ctl_engine_store_settled(struct ctl_engine *e, int64_t settle_ms)
{
	int64_t until;

	if (!e)
		return true;
	if (atomic_load(&e->held_since_ms))
		return false;
	until = atomic_load(&e->held_until_ms);
	return !until || util_now_mono_ms() - until >= settle_ms;
}

void engine_ingest_init(struct ctl_engine *e)
{
	pthread_condattr_t ca;

	e->data_version = -1;
	pthread_mutex_init(&e->ilock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->icond, &ca);
	pthread_condattr_destroy(&ca);
}

int engine_ingest_start(struct ctl_engine *e)
{
	if (pthread_create(&e->ingest, NULL, ingest_main, e) != 0)
		return -EAGAIN;
	e->ingest_started = true;
	return 0;
}

void ctl_engine_stop_ingest(struct ctl_engine *e)
{
	bool joined;

	if (!e || !e->ingest_started)
		return;
	pthread_mutex_lock(&e->ilock);
	joined = e->joined;
	e->istop = true;
	pthread_cond_signal(&e->icond);
	pthread_mutex_unlock(&e->ilock);
	if (joined)
		return;
	pthread_join(e->ingest, NULL);
	pthread_mutex_lock(&e->ilock);
	e->joined = true;
	pthread_mutex_unlock(&e->ilock);
}

void engine_ingest_done(struct ctl_engine *e)
{
	while (e->head) {
		struct engine_item *it = e->head;

		e->head = it->next;
		item_free(e->srv, it);
	}
	pthread_mutex_destroy(&e->ilock);
	pthread_cond_destroy(&e->icond);
}

static void enqueue(struct ctl_engine *in, struct ctl_session *s, ProtobufCMessage *msg,
		    size_t bytes)
{
	struct engine_item *it = calloc(1, sizeof(*it));

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
	it->bytes = bytes;
	pthread_mutex_lock(&in->ilock);
	if (in->joined) {
		/* Shutting down, the worker is gone: a session that ends late is handled here. */
		struct ctl_outcome o;

		pthread_mutex_unlock(&in->ilock);
		handle(in, it, &o);
		if (msg && o.verdict != CTL_RETRY)
			ctl_session_processed(in->srv, s, (const Railyard__V1__AgentMessage *)msg,
					      &o, bytes, true);
		if (o.kick)
			ctl_engine_kick(ctl_server_engine(in->srv));
		item_free(in->srv, it);
		return;
	}
	if (in->tail)
		in->tail->next = it;
	else
		in->head = it;
	in->tail = it;
	in->queued++;
	pthread_cond_signal(&in->icond);
	pthread_mutex_unlock(&in->ilock);
}

size_t ctl_engine_backlog(struct ctl_engine *e)
{
	return e ? atomic_load(&e->queued) : 0;
}

void ctl_engine_submit(struct ctl_engine *e, struct ctl_session *s, ProtobufCMessage *msg,
		       size_t bytes)
{
	enqueue(e, s, msg, bytes);
}

void ctl_engine_offline(struct ctl_engine *e, struct ctl_session *s)
{
	enqueue(e, s, NULL, 0);
}

void ctl_engine_metrics(struct ctl_engine *e, FILE *f)
{
	static const struct {
		int kind;
		const char *name;
	} kinds[] = {
		{RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO, "Hello"},
		{RAILYARD__V1__AGENT_MESSAGE__BODY_FACTS_UPDATE, "FactsUpdate"},
		{RAILYARD__V1__AGENT_MESSAGE__BODY_STEP_EVENT, "StepEvent"},
		{RAILYARD__V1__AGENT_MESSAGE__BODY_APPLY_DONE, "ApplyDone"},
		{RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_READY, "BenchReady"},
		{RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_RESULT, "BenchResult"},
	};

	if (!e)
		return;
	fprintf(f, "# HELP railyard_rpc_store_duration_seconds Storing an agent's message, by "
		   "kind (the ack waits for it).\n"
		   "# TYPE railyard_rpc_store_duration_seconds histogram\n");
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		char labels[64];

		snprintf(labels, sizeof(labels), "kind=\"%s\"", kinds[i].name);
		ry_hist_write(f, "railyard_rpc_store_duration_seconds", labels,
			      &e->ingest_latency[kinds[i].kind]);
	}
}
