/* rpc layer, client half for many streams in one process: bidirectional streams on a shared
 * completion queue driven by a few threads, with callbacks instead of an event loop per stream
 * (rpc_client_stream_next() needs a thread each). Used by the load generator that plays
 * thousands of agents; the agent itself keeps its one stream and loop. */
#include "common/rpc/rpc_int.h"
#include "common/util/error.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/support/time.h>

struct rpc_client_loop {
	grpc_completion_queue *cq;
	pthread_t *threads;
	int n_threads;
};

enum { AS_STATUS, AS_MD, AS_RECV, AS_SEND, AS_N };

struct rpc_async_stream {
	struct rpc_client_loop *loop;
	const ProtobufCMessageDescriptor *desc;
	const struct rpc_async_ops *ops;
	void *ud;
	grpc_call *call;
	struct rpc_tag tags[AS_N];

	pthread_mutex_t lock; /* everything below */
	int outstanding;      /* batches started and not completed */
	grpc_metadata_array init_md, trail_md;
	grpc_status_code code;
	grpc_slice details;
	grpc_byte_buffer *recv_bb, *send_bb;
	struct rpc_sendq sendq;
	bool send_in_flight, done, ended_called;
	struct rpc_status status;
};

static void *loop_thread(void *arg)
{
	struct rpc_client_loop *l = arg;

	rpc_cq_run(l->cq);
	return NULL;
}

int rpc_client_loop_new(int threads, struct rpc_client_loop **ret)
{
	struct rpc_client_loop *l;

	if (threads < 1)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->threads = calloc((size_t)threads, sizeof(pthread_t));
	if (!l->threads) {
		free(l);
		return -ENOMEM;
	}
	l->cq = grpc_completion_queue_create_for_next(NULL);
	for (int i = 0; i < threads; i++) {
		if (pthread_create(&l->threads[i], NULL, loop_thread, l) != 0)
			break;
		l->n_threads++;
	}
	if (l->n_threads == 0) {
		rpc_client_loop_free(l);
		return -EAGAIN;
	}
	*ret = l;
	return 0;
}

void rpc_client_loop_free(struct rpc_client_loop *l)
{
	if (!l)
		return;
	grpc_completion_queue_shutdown(l->cq);
	if (l->n_threads == 0)
		while (grpc_completion_queue_next(l->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL)
			       .type != GRPC_QUEUE_SHUTDOWN)
			;
	for (int i = 0; i < l->n_threads; i++)
		pthread_join(l->threads[i], NULL);
	grpc_completion_queue_destroy(l->cq);
	free(l->threads);
	free(l);
}

/* Called with as->lock held; returns with it released. When the stream has ended and nothing
 * is in flight any more, ended() runs (once), outside the lock. */
static void unlock_maybe_end(struct rpc_async_stream *as)
{
	bool call_end = as->done && as->outstanding == 0 && !as->ended_called;

	if (call_end)
		as->ended_called = true;
	pthread_mutex_unlock(&as->lock);
	if (call_end)
		as->ops->ended(as->ud, &as->status);
}

/* Start the next queued send. Caller holds the lock. */
static void send_next_locked(struct rpc_async_stream *as)
{
	grpc_op op;

	if (as->send_in_flight || as->done || !(as->send_bb = rpc_sendq_pop(&as->sendq)))
		return;
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_SEND_MESSAGE;
	op.data.send_message.send_message = as->send_bb;
	if (grpc_call_start_batch(as->call, &op, 1, &as->tags[AS_SEND], NULL) != GRPC_CALL_OK) {
		grpc_byte_buffer_destroy(as->send_bb);
		as->send_bb = NULL;
		return;
	}
	as->send_in_flight = true;
	as->outstanding++;
}

/* Arm the next receive. Caller holds the lock. */
static void recv_arm_locked(struct rpc_async_stream *as)
{
	grpc_op op;

	if (as->done)
		return;
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_MESSAGE;
	op.data.recv_message.recv_message = &as->recv_bb;
	if (grpc_call_start_batch(as->call, &op, 1, &as->tags[AS_RECV], NULL) == GRPC_CALL_OK)
		as->outstanding++;
}

static void on_status(struct rpc_tag *tag, bool ok)
{
	struct rpc_async_stream *as =
		RPC_CONTAINER_OF(tag, struct rpc_async_stream, tags[AS_STATUS]);

	pthread_mutex_lock(&as->lock);
	as->outstanding--;
	as->done = true;
	as->status.code = as->code;
	rpc_slice_copy(as->details, as->status.details, sizeof(as->status.details));
	as->status.retry_after_ms = rpc_retry_after(&as->trail_md);
	unlock_maybe_end(as);
}

static void on_md(struct rpc_tag *tag, bool ok)
{
	struct rpc_async_stream *as = RPC_CONTAINER_OF(tag, struct rpc_async_stream, tags[AS_MD]);

	pthread_mutex_lock(&as->lock);
	as->outstanding--;
	unlock_maybe_end(as);
}

static void on_send(struct rpc_tag *tag, bool ok)
{
	struct rpc_async_stream *as = RPC_CONTAINER_OF(tag, struct rpc_async_stream, tags[AS_SEND]);

	pthread_mutex_lock(&as->lock);
	as->outstanding--;
	grpc_byte_buffer_destroy(as->send_bb);
	as->send_bb = NULL;
	as->send_in_flight = false;
	if (ok)
		send_next_locked(as);
	unlock_maybe_end(as);
}

static void on_recv(struct rpc_tag *tag, bool ok)
{
	struct rpc_async_stream *as = RPC_CONTAINER_OF(tag, struct rpc_async_stream, tags[AS_RECV]);
	grpc_byte_buffer *bb;
	ProtobufCMessage *msg = NULL;

	pthread_mutex_lock(&as->lock);
	bb = as->recv_bb;
	as->recv_bb = NULL;
	if (!ok || !bb) {
		/* The server finished sending; the status follows. */
		if (bb)
			grpc_byte_buffer_destroy(bb);
		as->outstanding--;
		unlock_maybe_end(as);
		return;
	}
	pthread_mutex_unlock(&as->lock);
	if (rpc_buffer_to_message(bb, as->desc, &msg) < 0) {
		grpc_byte_buffer_destroy(bb);
		grpc_call_cancel_with_status(as->call, GRPC_STATUS_INTERNAL,
					     "undecodable message from server", NULL);
		pthread_mutex_lock(&as->lock);
		as->outstanding--;
		unlock_maybe_end(as);
		return;
	}
	grpc_byte_buffer_destroy(bb);
	/* Messages of one stream are delivered one at a time: the next receive is armed only
	 * after this one was handled. */
	as->ops->message(as->ud, msg);
	pthread_mutex_lock(&as->lock);
	as->outstanding--;
	recv_arm_locked(as);
	unlock_maybe_end(as);
}

int rpc_async_stream_open(struct rpc_channel *ch, struct rpc_client_loop *l, const char *path,
			  const ProtobufCMessageDescriptor *resp_desc,
			  const struct rpc_async_ops *ops, void *ud, struct rpc_async_stream **ret)
{
	struct rpc_async_stream *as;
	grpc_slice method;
	grpc_op o[2];
	bool ok;

	if (!ch || !l || !path || !resp_desc || !ops || !ops->message || !ops->ended)
		return -EINVAL;
	as = calloc(1, sizeof(*as));
	if (!as)
		return -ENOMEM;
	as->loop = l;
	as->desc = resp_desc;
	as->ops = ops;
	as->ud = ud;
	as->details = grpc_empty_slice();
	as->tags[AS_STATUS].fn = on_status;
	as->tags[AS_MD].fn = on_md;
	as->tags[AS_RECV].fn = on_recv;
	as->tags[AS_SEND].fn = on_send;
	pthread_mutex_init(&as->lock, NULL);
	grpc_metadata_array_init(&as->init_md);
	grpc_metadata_array_init(&as->trail_md);
	method = grpc_slice_from_copied_string(path);
	as->call = grpc_channel_create_call(ch->ch, NULL, GRPC_PROPAGATE_DEFAULTS, l->cq, method,
					    NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	grpc_slice_unref(method);
	if (!as->call) {
		rpc_async_stream_free(as);
		return -RY_E_RPC;
	}
	pthread_mutex_lock(&as->lock);
	/* Status first: it completes whenever the stream ends, for any reason. */
	memset(o, 0, sizeof(o));
	o[0].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	o[0].data.recv_status_on_client.trailing_metadata = &as->trail_md;
	o[0].data.recv_status_on_client.status = &as->code;
	o[0].data.recv_status_on_client.status_details = &as->details;
	ok = grpc_call_start_batch(as->call, o, 1, &as->tags[AS_STATUS], NULL) == GRPC_CALL_OK;
	if (ok) {
		as->outstanding++;
		memset(o, 0, sizeof(o));
		o[0].op = GRPC_OP_SEND_INITIAL_METADATA;
		o[0].flags = GRPC_INITIAL_METADATA_WAIT_FOR_READY;
		o[1].op = GRPC_OP_RECV_INITIAL_METADATA;
		o[1].data.recv_initial_metadata.recv_initial_metadata = &as->init_md;
		ok = grpc_call_start_batch(as->call, o, 2, &as->tags[AS_MD], NULL) == GRPC_CALL_OK;
		if (ok)
			as->outstanding++;
	}
	if (ok)
		recv_arm_locked(as);
	pthread_mutex_unlock(&as->lock);
	if (!ok) {
		/* The status batch, if it started, completes after the cancel; ended() then
		 * runs and the caller frees the stream as after any end. */
		grpc_call_cancel(as->call, NULL);
		if (as->outstanding == 0) {
			rpc_async_stream_free(as);
			return -RY_E_RPC;
		}
	}
	*ret = as;
	return 0;
}

int rpc_async_stream_send(struct rpc_async_stream *as, const ProtobufCMessage *msg)
{
	grpc_byte_buffer *bb;
	int r;

	r = rpc_buffer_from_message(msg, &bb);
	if (r < 0)
		return r;
	pthread_mutex_lock(&as->lock);
	if (as->done) {
		r = -EPIPE;
	} else if ((r = rpc_sendq_push(&as->sendq, bb)) == 0) {
		bb = NULL;
		send_next_locked(as);
	}
	pthread_mutex_unlock(&as->lock);
	if (bb)
		grpc_byte_buffer_destroy(bb);
	return r;
}

void rpc_async_stream_cancel(struct rpc_async_stream *as)
{
	if (as && as->call)
		grpc_call_cancel(as->call, NULL);
}

void rpc_async_stream_free(struct rpc_async_stream *as)
{
	if (!as)
		return;
	if (as->call)
		grpc_call_unref(as->call);
	if (as->recv_bb)
		grpc_byte_buffer_destroy(as->recv_bb);
	if (as->send_bb)
		grpc_byte_buffer_destroy(as->send_bb);
	rpc_sendq_clear(&as->sendq, true);
	grpc_metadata_array_destroy(&as->init_md);
	grpc_metadata_array_destroy(&as->trail_md);
	grpc_slice_unref(as->details);
	pthread_mutex_destroy(&as->lock);
	free(as);
}
