/* rpc layer, server half: method table dispatch on completion-queue threads, unary calls and
 * bidirectional streams with a per-stream send queue. Each batch in flight holds a reference on
 * its call object; the last reference frees it. */
#include "common/rpc/rpc_int.h"
#include "common/log/log.h"
#include "common/util/error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

/* TLS record and first TCP read size on the server's connections (see gen_start()). */
#define RPC_TLS_FRAME 4096
/* Listeners the server replaces (rpc_server_check_listener()) before it gives up. */
#define RPC_GENS_MAX 16
/* Descriptors held open on /dev/null and let go when a listener must be replaced at the
 * open-file limit. */
#define RPC_FD_RESERVE 4

/* One grpc_server: the first, and each that replaced a listener gRPC had stopped. All share
 * the completion queue and its threads; an older one keeps serving the calls of the
 * connections it accepted. */
struct rpc_gen {
	struct rpc_server *srv;
	grpc_server *server;
	void **handles;
	struct rpc_tag shutdown_tag;
	bool shutdown_done; /* under srv->lock */
};

struct rpc_server {
	grpc_completion_queue *cq;
	pthread_t *threads;
	int n_threads;
	int n_arm; /* requests armed per method and generation */
	const struct rpc_method *methods;
	size_t n_methods;
	void *userdata;
	pthread_mutex_t lock; /* gens, n_gens, shutting_down, n_open_streams, shutdown_done */
	pthread_cond_t cond;
	struct rpc_gen *gens[RPC_GENS_MAX];
	int n_gens;
	bool shutting_down;
	/* Streams whose close batch has not finished (closed() not yet returned): the shutdown tag
	 * can complete on one queue thread while another still runs a stream's closed(). */
	int n_open_streams;
	/* What a replacement listener needs: the host part of the listen address, the bound
	 * port, the TLS material (copies). */
	char *host, *ca_pem, *cert_pem, *key_pem;
	int port;
	uint64_t accept_failures_seen; /* rpc_accept_failures() when last handled */
	int reserve[RPC_FD_RESERVE];
};

/* One outstanding grpc_server_request_registered_call. */
struct rpc_request {
	struct rpc_tag tag;
	struct rpc_gen *gen;
	size_t idx;
	grpc_call *call;
	gpr_timespec deadline;
	grpc_metadata_array md;
	grpc_byte_buffer *payload;
};

/* A unary call between decode and the completion of its reply batch. */
struct rpc_unary {
	struct rpc_tag tag;
	grpc_call *call;
	grpc_byte_buffer *resp;
	grpc_slice details;
	int cancelled;
};

struct rpc_stream {
	struct rpc_server *srv;
	const struct rpc_method *method;
	grpc_call *call;
	struct rpc_peer peer;
	void *data;

	struct rpc_tag close_tag, recv_tag, send_tag;
	int cancelled;
	grpc_byte_buffer *recv_bb;

	pthread_mutex_t lock; /* refs, queue and flags below */
	int refs;
	/* Messages waiting to be sent (grown on demand: 8 KB each for a fixed ring was most of a
	 * session's own memory). */
	struct rpc_sendq sendq;
	grpc_byte_buffer *send_bb; /* in flight */
	bool send_in_flight;
	bool finishing, status_sent, ended;
	grpc_status_code fin_code;
	grpc_slice fin_details;
	int retry_after_ms;  /* > 0: sent with the status as RPC_RETRY_AFTER_MD */
	grpc_metadata trail; /* its key and value while the status is sent */

	pthread_mutex_t cb_lock; /* serialises handler callbacks (open() included) */
	bool opened;		 /* open() accepted the stream */
	bool closed_called;
	size_t msg_size; /* the encoded size of the message message() is given */
};

static void request_arm(struct rpc_gen *gen, size_t idx);
static void server_release(struct rpc_server *srv);

static void *cq_thread(void *arg)
{
	struct rpc_server *srv = arg;

	rpc_cq_run(srv->cq);
	return NULL;
}

static void peer_fill(grpc_call *call, struct rpc_peer *peer)
{
	grpc_auth_context *ctx;
	char *addr;

	memset(peer, 0, sizeof(*peer));
	addr = grpc_call_get_peer(call);
	if (addr) {
		snprintf(peer->address, sizeof(peer->address), "%s", addr);
		gpr_free(addr);
	}
	ctx = grpc_call_auth_context(call);
	if (!ctx)
		return;
	if (grpc_auth_context_peer_is_authenticated(ctx)) {
		grpc_auth_property_iterator it;
		const grpc_auth_property *p;

		it = grpc_auth_context_find_properties_by_name(ctx, GRPC_X509_CN_PROPERTY_NAME);
		p = grpc_auth_property_iterator_next(&it);
		if (p && p->value_length > 0 && p->value_length < sizeof(peer->common_name)) {
			/* Property values are not NUL-terminated. */
			memcpy(peer->common_name, p->value, p->value_length);
			peer->common_name[p->value_length] = '\0';
			peer->authenticated = true;
		}
		it = grpc_auth_context_find_properties_by_name(ctx,
							       GRPC_X509_PEM_CERT_PROPERTY_NAME);
		p = grpc_auth_property_iterator_next(&it);
		if (p && p->value_length > 0)
			peer->cert_pem = strndup(p->value, p->value_length);
	}
	grpc_auth_context_release(ctx);
}

/* ---- unary ---- */

static void unary_done(struct rpc_tag *tag, bool ok)
{
	struct rpc_unary *u = RPC_CONTAINER_OF(tag, struct rpc_unary, tag);

	if (u->resp)
		grpc_byte_buffer_destroy(u->resp);
	grpc_slice_unref(u->details);
	grpc_call_unref(u->call);
	free(u);
}

static void unary_handle(struct rpc_server *srv, const struct rpc_method *m, grpc_call *call,
			 grpc_byte_buffer *payload)
{
	grpc_status_code code = GRPC_STATUS_OK;
	ProtobufCMessage *req = NULL, *resp = NULL;
	struct rpc_unary *u;
	struct rpc_peer peer;
	char *msg = NULL;
	grpc_op ops[4];
	size_t n = 0;

	u = calloc(1, sizeof(*u));
	if (!u) {
		grpc_call_cancel_with_status(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory",
					     NULL);
		grpc_call_unref(call);
		return;
	}
	u->tag.fn = unary_done;
	u->call = call;
	peer_fill(call, &peer);

	if (m->require_client_cert && !peer.authenticated) {
		log_debug("rpc: %s from %s refused: no client certificate", m->path, peer.address);
		code = GRPC_STATUS_UNAUTHENTICATED;
		msg = strdup("client certificate required");
	} else if (!payload || rpc_buffer_to_message(payload, m->request, &req) < 0) {
		code = GRPC_STATUS_INVALID_ARGUMENT;
		msg = strdup("undecodable request");
	} else {
		code = m->unary(srv->userdata, &peer, req, &resp, &msg);
		if (code == GRPC_STATUS_OK &&
		    (!resp || rpc_buffer_from_message(resp, &u->resp) < 0)) {
			code = GRPC_STATUS_INTERNAL;
			free(msg);
			msg = strdup("response could not be encoded");
		}
	}
	if (req)
		protobuf_c_message_free_unpacked(req, NULL);
	if (resp)
		protobuf_c_message_free_unpacked(resp, NULL);
	free(peer.cert_pem);

	u->details = grpc_slice_from_copied_string(msg ? msg : "");
	free(msg);
	memset(ops, 0, sizeof(ops));
	ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
	if (u->resp) {
		ops[n].op = GRPC_OP_SEND_MESSAGE;
		ops[n++].data.send_message.send_message = u->resp;
	}
	ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	ops[n].data.send_status_from_server.status = code;
	ops[n++].data.send_status_from_server.status_details = &u->details;
	ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops[n++].data.recv_close_on_server.cancelled = &u->cancelled;
	if (grpc_call_start_batch(call, ops, n, &u->tag, NULL) != GRPC_CALL_OK)
		unary_done(&u->tag, false);
}

/* ---- streams ---- */

static void stream_free(struct rpc_stream *st)
{
	rpc_sendq_clear(&st->sendq, true);
	if (st->send_bb)
		grpc_byte_buffer_destroy(st->send_bb);
	if (st->finishing)
		grpc_slice_unref(st->fin_details);
	if (st->status_sent && st->retry_after_ms > 0) {
		grpc_slice_unref(st->trail.key);
		grpc_slice_unref(st->trail.value);
	}
	grpc_call_unref(st->call);
	free(st->peer.cert_pem);
	pthread_mutex_destroy(&st->lock);
	pthread_mutex_destroy(&st->cb_lock);
	free(st);
}

struct rpc_stream *rpc_stream_ref(struct rpc_stream *st)
{
	pthread_mutex_lock(&st->lock);
	st->refs++;
	pthread_mutex_unlock(&st->lock);
	return st;
}

void rpc_stream_unref(struct rpc_stream *st)
{
	int left;

	if (!st)
		return;
	pthread_mutex_lock(&st->lock);
	left = --st->refs;
	pthread_mutex_unlock(&st->lock);
	if (left == 0)
		stream_free(st);
}

void rpc_stream_set_data(struct rpc_stream *st, void *data)
{
	st->data = data;
}

void *rpc_stream_get_data(struct rpc_stream *st)
{
	return st->data;
}

/* Start the next send (message, or the final status). Called with st->lock held. */
static void stream_send_next_locked(struct rpc_stream *st)
{
	grpc_op op;

	if (st->send_in_flight || st->ended)
		return;
	memset(&op, 0, sizeof(op));
	if ((st->send_bb = rpc_sendq_pop(&st->sendq))) {
		op.op = GRPC_OP_SEND_MESSAGE;
		op.data.send_message.send_message = st->send_bb;
	} else if (st->finishing && !st->status_sent) {
		st->status_sent = true;
		op.op = GRPC_OP_SEND_STATUS_FROM_SERVER;
		op.data.send_status_from_server.status = st->fin_code;
		op.data.send_status_from_server.status_details = &st->fin_details;
		if (st->retry_after_ms > 0) {
			char v[16];

			snprintf(v, sizeof(v), "%d", st->retry_after_ms);
			st->trail.key = grpc_slice_from_static_string(RPC_RETRY_AFTER_MD);
			st->trail.value = grpc_slice_from_copied_string(v);
			op.data.send_status_from_server.trailing_metadata_count = 1;
			op.data.send_status_from_server.trailing_metadata = &st->trail;
		}
	} else {
		return;
	}
	st->send_in_flight = true;
	st->refs++;
	if (grpc_call_start_batch(st->call, &op, 1, &st->send_tag, NULL) != GRPC_CALL_OK) {
		log_debug("rpc: start_batch(send) failed on %s", st->peer.address);
		st->send_in_flight = false;
		st->refs--;
	}
}

static void stream_send_done(struct rpc_tag *tag, bool ok)
{
	struct rpc_stream *st = RPC_CONTAINER_OF(tag, struct rpc_stream, send_tag);

	pthread_mutex_lock(&st->lock);
	if (st->send_bb) {
		grpc_byte_buffer_destroy(st->send_bb);
		st->send_bb = NULL;
	}
	st->send_in_flight = false;
	if (ok)
		stream_send_next_locked(st);
	pthread_mutex_unlock(&st->lock);
	rpc_stream_unref(st);
}

int rpc_stream_send(struct rpc_stream *st, const ProtobufCMessage *msg)
{
	grpc_byte_buffer *bb;
	int r;

	r = rpc_buffer_from_message(msg, &bb);
	if (r < 0)
		return r;
	pthread_mutex_lock(&st->lock);
	if (st->ended || st->finishing) {
		r = -EPIPE;
	} else if ((r = rpc_sendq_push(&st->sendq, bb)) == 0) {
		bb = NULL;
		stream_send_next_locked(st);
	}
	pthread_mutex_unlock(&st->lock);
	if (bb)
		grpc_byte_buffer_destroy(bb);
	return r;
}

void rpc_stream_set_retry_after(struct rpc_stream *st, int ms)
{
	pthread_mutex_lock(&st->lock);
	if (!st->status_sent)
		st->retry_after_ms = ms > 0 ? ms : 0;
	pthread_mutex_unlock(&st->lock);
}

void rpc_stream_finish(struct rpc_stream *st, grpc_status_code code, const char *msg)
{
	pthread_mutex_lock(&st->lock);
	if (!st->finishing && !st->ended) {
		st->finishing = true;
		st->fin_code = code;
		st->fin_details = grpc_slice_from_copied_string(msg ? msg : "");
		stream_send_next_locked(st);
	}
	pthread_mutex_unlock(&st->lock);
}

static void stream_recv_arm(struct rpc_stream *st);

static void stream_recv_done(struct rpc_tag *tag, bool ok)
{
	struct rpc_stream *st = RPC_CONTAINER_OF(tag, struct rpc_stream, recv_tag);
	const struct rpc_stream_ops *ops = st->method->bidi;
	ProtobufCMessage *msg = NULL;
	grpc_byte_buffer *bb = st->recv_bb;
	int rv = RPC_MSG_DONE;
	size_t size;

	st->recv_bb = NULL;
	if (!ok || !bb) {
		/* The client half-closed (bb NULL) or the call is gone: end our side too. */
		if (ok)
			rpc_stream_finish(st, GRPC_STATUS_OK, "");
		rpc_stream_unref(st);
		return;
	}
	if (rpc_buffer_to_message(bb, st->method->request, &msg) < 0) {
		grpc_byte_buffer_destroy(bb);
		pthread_mutex_lock(&st->cb_lock);
		if (!st->closed_called && ops->error)
			ops->error(st->srv->userdata, st, "undecodable message");
		pthread_mutex_unlock(&st->cb_lock);
		rpc_stream_finish(st, GRPC_STATUS_INVALID_ARGUMENT, "undecodable message");
		rpc_stream_unref(st);
		return;
	}
	size = grpc_byte_buffer_length(bb);
	grpc_byte_buffer_destroy(bb);
	pthread_mutex_lock(&st->cb_lock);
	if (!st->closed_called) {
		st->msg_size = size;
		rv = ops->message(st->srv->userdata, st, msg);
	}
	pthread_mutex_unlock(&st->cb_lock);
	if (rv == RPC_MSG_DONE)
		protobuf_c_message_free_unpacked(msg, NULL);
	if (rv != RPC_MSG_HELD)
		stream_recv_arm(st);
	rpc_stream_unref(st);
}

size_t rpc_stream_msg_size(const struct rpc_stream *st)
{
	return st->msg_size;
}

void rpc_stream_resume(struct rpc_stream *st)
{
	stream_recv_arm(st);
}

static void stream_recv_arm(struct rpc_stream *st)
{
	grpc_op op;

	pthread_mutex_lock(&st->lock);
	if (st->ended || st->finishing) {
		pthread_mutex_unlock(&st->lock);
		return;
	}
	st->refs++;
	pthread_mutex_unlock(&st->lock);
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_MESSAGE;
	op.data.recv_message.recv_message = &st->recv_bb;
	if (grpc_call_start_batch(st->call, &op, 1, &st->recv_tag, NULL) != GRPC_CALL_OK) {
		log_debug("rpc: start_batch(recv) failed on %s", st->peer.address);
		rpc_stream_unref(st);
	}
}

static void stream_count_done(struct rpc_server *srv)
{
	pthread_mutex_lock(&srv->lock);
	if (--srv->n_open_streams == 0)
		pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
}

static void stream_close_done(struct rpc_tag *tag, bool ok)
{
	struct rpc_stream *st = RPC_CONTAINER_OF(tag, struct rpc_stream, close_tag);
	const struct rpc_stream_ops *ops = st->method->bidi;
	bool was_open;

	pthread_mutex_lock(&st->lock);
	st->ended = true;
	rpc_sendq_clear(&st->sendq, false);
	pthread_mutex_unlock(&st->lock);

	pthread_mutex_lock(&st->cb_lock);
	was_open = st->opened && !st->closed_called;
	st->closed_called = true;
	pthread_mutex_unlock(&st->cb_lock);
	/* closed() runs outside cb_lock so that it may take the handler's own locks freely; no
	 * message() can start after closed_called is set. */
	if (was_open)
		ops->closed(st->srv->userdata, st, st->cancelled != 0);
	stream_count_done(st->srv);
	rpc_stream_unref(st);
}

static void stream_start(struct rpc_server *srv, const struct rpc_method *m, grpc_call *call)
{
	const struct rpc_stream_ops *ops = m->bidi;
	grpc_status_code code = GRPC_STATUS_OK;
	struct rpc_stream *st;
	char *msg = NULL;
	grpc_op ops_close[2];

	st = calloc(1, sizeof(*st));
	if (!st) {
		grpc_call_cancel_with_status(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory",
					     NULL);
		grpc_call_unref(call);
		return;
	}
	st->srv = srv;
	st->method = m;
	st->call = call;
	/* One reference for the close batch, one for this function: the close may complete on
	 * another queue thread (and closed() drop the handler's references) while open() and the
	 * first receive are set up here. */
	st->refs = 2;
	st->close_tag.fn = stream_close_done;
	st->recv_tag.fn = stream_recv_done;
	st->send_tag.fn = stream_send_done;
	pthread_mutex_init(&st->lock, NULL);
	pthread_mutex_init(&st->cb_lock, NULL);
	peer_fill(call, &st->peer);
	pthread_mutex_lock(&srv->lock);
	srv->n_open_streams++;
	pthread_mutex_unlock(&srv->lock);

	/* Initial metadata goes first: a refusal's status must follow it, not precede it. */
	memset(ops_close, 0, sizeof(ops_close));
	ops_close[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops_close[1].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops_close[1].data.recv_close_on_server.cancelled = &st->cancelled;
	if (grpc_call_start_batch(call, ops_close, 2, &st->close_tag, NULL) != GRPC_CALL_OK) {
		log_debug("rpc: start_batch(close) failed on %s", st->peer.address);
		grpc_call_cancel(call, NULL);
		stream_count_done(srv);
		rpc_stream_unref(st);
		rpc_stream_unref(st);
		return;
	}

	/* The close batch may complete on another queue thread before or while open() runs (a
	 * client that gives up at once): under cb_lock, closed() waits for open() and runs only
	 * for a stream that open() accepted; a stream already gone is not opened at all. */
	pthread_mutex_lock(&st->cb_lock);
	if (st->closed_called) {
		code = GRPC_STATUS_CANCELLED;
	} else if (m->require_client_cert && !st->peer.authenticated) {
		code = GRPC_STATUS_UNAUTHENTICATED;
		msg = strdup("client certificate required");
		if (ops->error)
			ops->error(srv->userdata, st, "no client certificate");
	} else {
		code = ops->open(srv->userdata, st, &st->peer, &msg);
	}
	if (code == GRPC_STATUS_OK)
		st->opened = true;
	else
		st->closed_called = true; /* closed() must not run for a stream never opened */
	/* The certificate was for open() to judge; a session lives long. */
	free(st->peer.cert_pem);
	st->peer.cert_pem = NULL;
	pthread_mutex_unlock(&st->cb_lock);
	if (code != GRPC_STATUS_OK)
		rpc_stream_finish(st, code, msg);
	else
		stream_recv_arm(st);
	free(msg);
	rpc_stream_unref(st);
}

/* ---- requests ---- */

static void request_done(struct rpc_tag *tag, bool ok)
{
	struct rpc_request *rq = RPC_CONTAINER_OF(tag, struct rpc_request, tag);
	struct rpc_gen *gen = rq->gen;
	struct rpc_server *srv = gen->srv;
	const struct rpc_method *m = &srv->methods[rq->idx];
	bool stopping;

	pthread_mutex_lock(&srv->lock);
	stopping = srv->shutting_down;
	pthread_mutex_unlock(&srv->lock);
	if (ok && !stopping)
		request_arm(gen, rq->idx);
	if (ok) {
		if (m->kind == RPC_UNARY)
			unary_handle(srv, m, rq->call, rq->payload);
		else
			stream_start(srv, m, rq->call);
	}
	if (rq->payload)
		grpc_byte_buffer_destroy(rq->payload);
	grpc_metadata_array_destroy(&rq->md);
	free(rq);
}

static void request_arm(struct rpc_gen *gen, size_t idx)
{
	struct rpc_server *srv = gen->srv;
	struct rpc_request *rq = calloc(1, sizeof(*rq));
	grpc_call_error e;

	if (!rq) {
		log_error("rpc: out of memory re-arming %s", srv->methods[idx].path);
		return;
	}
	rq->tag.fn = request_done;
	rq->gen = gen;
	rq->idx = idx;
	grpc_metadata_array_init(&rq->md);
	e = grpc_server_request_registered_call(
		gen->server, gen->handles[idx], &rq->call, &rq->deadline, &rq->md,
		srv->methods[idx].kind == RPC_UNARY ? &rq->payload : NULL, srv->cq, srv->cq,
		&rq->tag);
	if (e != GRPC_CALL_OK) {
		log_debug("rpc: request_registered_call(%s) failed: %d", srv->methods[idx].path, e);
		grpc_metadata_array_destroy(&rq->md);
		free(rq);
	}
}

static void shutdown_done(struct rpc_tag *tag, bool ok)
{
	struct rpc_gen *gen = RPC_CONTAINER_OF(tag, struct rpc_gen, shutdown_tag);
	struct rpc_server *srv = gen->srv;

	pthread_mutex_lock(&srv->lock);
	gen->shutdown_done = true;
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
}

/* gRPC only says "0" when it cannot bind; find out why with a plain bind. */
static int diagnose_bind(const char *listen)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
	struct addrinfo *ai = NULL;
	char host[256];
	const char *colon = strrchr(listen, ':');
	int fd, r = -EINVAL;

	if (!colon || (size_t)(colon - listen) >= sizeof(host))
		return -EINVAL;
	memcpy(host, listen, (size_t)(colon - listen));
	host[colon - listen] = '\0';
	if (host[0] == '[') {
		memmove(host, host + 1, strlen(host));
		host[strcspn(host, "]")] = '\0';
	}
	if (getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &ai) != 0)
		return -EINVAL;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		r = bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 ? -errno : -EINVAL;
		close(fd);
	}
	freeaddrinfo(ai);
	return r;
}

static void gen_free(struct rpc_gen *gen)
{
	if (!gen)
		return;
	if (gen->server)
		grpc_server_destroy(gen->server);
	free(gen->handles);
	free(gen);
}

/* A grpc_server listening on listen, with the method table, on the server's completion queue;
 * started and with its requests armed. *ret_port gets the bound port. */
static int gen_start(struct rpc_server *srv, const char *listen, struct rpc_gen **ret,
		     int *ret_port)
{
	grpc_ssl_pem_key_cert_pair pair = {srv->key_pem, srv->cert_pem};
	grpc_ssl_server_certificate_config *certcfg;
	grpc_ssl_server_credentials_options *opts;
	grpc_server_credentials *creds;
	grpc_arg args[6];
	grpc_channel_args chargs = {sizeof(args) / sizeof(args[0]), args};
	struct rpc_gen *gen;
	int port;

	gen = calloc(1, sizeof(*gen));
	if (!gen)
		return -ENOMEM;
	gen->srv = srv;
	gen->shutdown_tag.fn = shutdown_done;
	gen->handles = calloc(srv->n_methods, sizeof(void *));
	if (!gen->handles) {
		free(gen);
		return -ENOMEM;
	}
	args[0].type = GRPC_ARG_INTEGER;
	args[0].key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
	args[0].value.integer = RPC_MAX_MESSAGE;
	/* Without this a second server silently shares the port (SO_REUSEPORT). */
	args[1].type = GRPC_ARG_INTEGER;
	args[1].key = GRPC_ARG_ALLOW_REUSEPORT;
	args[1].value.integer = 0;
	args[2].type = GRPC_ARG_INTEGER;
	args[2].key = GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS;
	args[2].value.integer = 10000;
	/* Memory per connection, which is most of what an agent costs the controller: TLS records
	 * of 4 KiB (not 16: the frame protector's buffer is that size, per connection), and TCP
	 * reads that start small (sessions carry heartbeats; a 20 KiB Hello takes a few reads). */
	args[3].type = GRPC_ARG_INTEGER;
	args[3].key = GRPC_ARG_TSI_MAX_FRAME_SIZE;
	args[3].value.integer = RPC_TLS_FRAME;
	args[4].type = GRPC_ARG_INTEGER;
	args[4].key = GRPC_ARG_TCP_READ_CHUNK_SIZE;
	args[4].value.integer = RPC_TLS_FRAME;
	/* No bandwidth-delay probing: for every few data frames received (a heartbeat is one) the
	 * estimator sends a PING and times its ACK, to grow the flow-control window for bulk
	 * transfers. Agents send small messages (the largest, a step's diff, is <= 256 KiB); at
	 * 2,000 idle sessions the probes were 30 % of the controller's CPU (docs/scaling.md). */
	args[5].type = GRPC_ARG_INTEGER;
	args[5].key = GRPC_ARG_HTTP2_BDP_PROBE;
	args[5].value.integer = 0;

	gen->server = grpc_server_create(&chargs, NULL);
	grpc_server_register_completion_queue(gen->server, srv->cq, NULL);
	for (size_t i = 0; i < srv->n_methods; i++) {
		gen->handles[i] = grpc_server_register_method(
			gen->server, srv->methods[i].path, NULL,
			srv->methods[i].kind == RPC_UNARY
				? GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER
				: GRPC_SRM_PAYLOAD_NONE,
			0);
		if (!gen->handles[i]) {
			gen_free(gen);
			return -EINVAL;
		}
	}
	/* Client certificates are optional at the TLS layer (Enroll has none) but verified when
	 * presented; methods that need one check it per call. */
	certcfg = grpc_ssl_server_certificate_config_create(srv->ca_pem, &pair, 1);
	opts = grpc_ssl_server_credentials_create_options_using_config(
		GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY, certcfg);
	creds = grpc_ssl_server_credentials_create_with_options(opts);
	if (!creds) {
		gen_free(gen);
		return -EINVAL;
	}
	port = grpc_server_add_http2_port(gen->server, listen, creds);
	grpc_server_credentials_release(creds);
	if (port <= 0) {
		/* Never started: destroying it needs no shutdown. */
		gen_free(gen);
		return diagnose_bind(listen);
	}
	grpc_server_start(gen->server);
	for (size_t i = 0; i < srv->n_methods; i++)
		for (int k = 0; k < srv->n_arm; k++)
			request_arm(gen, i);
	*ret = gen;
	*ret_port = port;
	return 0;
}

static void reserve_fill(struct rpc_server *srv)
{
	for (int i = 0; i < RPC_FD_RESERVE; i++)
		if (srv->reserve[i] < 0)
			srv->reserve[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void reserve_release(struct rpc_server *srv)
{
	for (int i = 0; i < RPC_FD_RESERVE; i++) {
		if (srv->reserve[i] >= 0)
			close(srv->reserve[i]);
		srv->reserve[i] = -1;
	}
}

int rpc_server_start(const struct rpc_server_config *cfg, struct rpc_server **ret_server,
		     int *ret_port)
{
	struct rpc_server *srv;
	struct rpc_gen *gen = NULL;
	const char *colon;
	int port, r;

	if (!cfg->listen || !cfg->tls.cert_pem || !cfg->tls.key_pem || !cfg->tls.ca_pem ||
	    cfg->threads < 1 || !(colon = strrchr(cfg->listen, ':')))
		return -EINVAL;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	pthread_mutex_init(&srv->lock, NULL);
	pthread_cond_init(&srv->cond, NULL);
	for (int i = 0; i < RPC_FD_RESERVE; i++)
		srv->reserve[i] = -1;
	srv->methods = cfg->methods;
	srv->n_methods = cfg->n_methods;
	srv->userdata = cfg->userdata;
	srv->n_arm = cfg->threads;
	srv->accept_failures_seen = rpc_accept_failures();
	srv->threads = calloc((size_t)cfg->threads, sizeof(pthread_t));
	srv->host = strndup(cfg->listen, (size_t)(colon - cfg->listen));
	srv->ca_pem = strdup(cfg->tls.ca_pem);
	srv->cert_pem = strdup(cfg->tls.cert_pem);
	srv->key_pem = strdup(cfg->tls.key_pem);
	if (!srv->threads || !srv->host || !srv->ca_pem || !srv->cert_pem || !srv->key_pem) {
		r = -ENOMEM;
		goto fail;
	}
	srv->cq = grpc_completion_queue_create_for_next(NULL);
	r = gen_start(srv, cfg->listen, &gen, &port);
	if (r < 0) {
		grpc_completion_queue_shutdown(srv->cq);
		while (grpc_completion_queue_next(srv->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL)
			       .type != GRPC_QUEUE_SHUTDOWN)
			;
		grpc_completion_queue_destroy(srv->cq);
		srv->cq = NULL;
		goto fail;
	}
	srv->gens[srv->n_gens++] = gen;
	srv->port = port;
	reserve_fill(srv);
	for (int i = 0; i < cfg->threads; i++) {
		if (pthread_create(&srv->threads[i], NULL, cq_thread, srv) != 0)
			break;
		srv->n_threads++;
	}
	if (srv->n_threads == 0) {
		rpc_server_free(srv);
		return -EAGAIN;
	}
	if (ret_port)
		*ret_port = port;
	*ret_server = srv;
	return 0;
fail:
	server_release(srv);
	return r;
}

/* The listening sockets of this process on port: shut down (they stop listening and free the
 * port; gRPC keeps and later closes the descriptors). -errno when /proc/self/fd is unreadable. */
static int listeners_shut(int port)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int fd, on = 0, lport;
		socklen_t olen = sizeof(on);
		struct stat stt;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		fd = atoi(e->d_name);
		if (fd == dirfd(d) || fstat(fd, &stt) < 0 || !S_ISSOCK(stt.st_mode))
			continue;
		if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &olen) < 0 || !on)
			continue;
		if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
			continue;
		if (ss.ss_family == AF_INET)
			lport = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		else if (ss.ss_family == AF_INET6)
			lport = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		else
			continue;
		if (lport == port && shutdown(fd, SHUT_RDWR) == 0)
			n++;
	}
	closedir(d);
	return n;
}

int rpc_server_check_listener(struct rpc_server *srv)
{
	uint64_t failures = rpc_accept_failures();
	struct rpc_gen *gen = NULL;
	char listen[300];
	long open_fds = 0, limit = 0;
	int port = 0, r;

	if (!srv || failures == srv->accept_failures_seen)
		return 0;
	pthread_mutex_lock(&srv->lock);
	r = srv->shutting_down ? -ECANCELED : srv->n_gens == RPC_GENS_MAX ? -ENOSPC : 0;
	pthread_mutex_unlock(&srv->lock);
	if (r < 0)
		return r;
	/* A new listener at the limit would fail at its first accept again: wait until
	 * connections have closed (the reserve gives the count its directory descriptor). */
	reserve_release(srv);
	r = rpc_fd_usage(&open_fds, &limit);
	if (r < 0 || (limit > 0 && open_fds + RPC_FD_RESERVE + 8 >= limit)) {
		reserve_fill(srv);
		return -EMFILE;
	}
	r = listeners_shut(srv->port);
	if (r >= 0) {
		snprintf(listen, sizeof(listen), "%s:%d", srv->host, srv->port);
		r = gen_start(srv, listen, &gen, &port);
	}
	reserve_fill(srv);
	if (r < 0)
		return r;
	srv->accept_failures_seen = failures;
	pthread_mutex_lock(&srv->lock);
	if (srv->shutting_down) {
		/* Stopped meanwhile: this one never served; shut it down with the rest. */
		grpc_server_shutdown_and_notify(gen->server, srv->cq, &gen->shutdown_tag);
		grpc_server_cancel_all_calls(gen->server);
	}
	srv->gens[srv->n_gens++] = gen;
	pthread_mutex_unlock(&srv->lock);
	return 1;
}

void rpc_server_stop(struct rpc_server *srv)
{
	bool first, done;

	if (!srv)
		return;
	pthread_mutex_lock(&srv->lock);
	first = !srv->shutting_down;
	srv->shutting_down = true;
	if (first) {
		for (int i = 0; i < srv->n_gens; i++)
			grpc_server_shutdown_and_notify(srv->gens[i]->server, srv->cq,
							&srv->gens[i]->shutdown_tag);
		for (int i = 0; i < srv->n_gens; i++)
			grpc_server_cancel_all_calls(srv->gens[i]->server);
	}
	/* Every stream's closed() has returned once this ends: callers rely on it to have seen
	 * each session's end before they tear down what closed() hands work to. */
	for (;;) {
		done = srv->n_open_streams == 0;
		for (int i = 0; i < srv->n_gens; i++)
			done = done && srv->gens[i]->shutdown_done;
		if (done)
			break;
		pthread_cond_wait(&srv->cond, &srv->lock);
	}
	pthread_mutex_unlock(&srv->lock);
}

/* Free what rpc_server_start() allocated besides the threads and the queue. */
static void server_release(struct rpc_server *srv)
{
	for (int i = 0; i < srv->n_gens; i++)
		gen_free(srv->gens[i]);
	reserve_release(srv);
	free(srv->threads);
	free(srv->host);
	free(srv->ca_pem);
	free(srv->cert_pem);
	if (srv->key_pem) {
		explicit_bzero(srv->key_pem, strlen(srv->key_pem));
		free(srv->key_pem);
	}
	pthread_mutex_destroy(&srv->lock);
	pthread_cond_destroy(&srv->cond);
	free(srv);
}

void rpc_server_free(struct rpc_server *srv)
{
	if (!srv)
		return;
	rpc_server_stop(srv);
	grpc_completion_queue_shutdown(srv->cq);
	for (int i = 0; i < srv->n_threads; i++)
		pthread_join(srv->threads[i], NULL);
	for (int i = 0; i < srv->n_gens; i++) {
		grpc_server_destroy(srv->gens[i]->server);
		srv->gens[i]->server = NULL;
	}
	grpc_completion_queue_destroy(srv->cq);
	server_release(srv);
}

const struct rpc_peer *rpc_stream_peer(struct rpc_stream *st)
{
	return &st->peer;
}
