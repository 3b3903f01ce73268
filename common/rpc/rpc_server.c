/* rpc layer, server half: method table dispatch on completion-queue threads, unary calls and
 * bidirectional streams with a per-stream send queue. Each batch in flight holds a reference on
 * its call object; the last reference frees it. */
#include "common/rpc/rpc_int.h"
#include "common/log/log.h"
#include "common/util/error.h"

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

struct rpc_server {
	grpc_server *server;
	grpc_completion_queue *cq;
	pthread_t *threads;
	int n_threads;
	const struct rpc_method *methods;
	size_t n_methods;
	void **handles;
	void *userdata;
	struct rpc_tag shutdown_tag;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool shutting_down;
	bool shutdown_done;
	/* Streams whose close batch has not finished (closed() not yet returned): the shutdown tag
	 * can complete on one queue thread while another still runs a stream's closed(). */
	int n_open_streams;
};

/* One outstanding grpc_server_request_registered_call. */
struct rpc_request {
	struct rpc_tag tag;
	struct rpc_server *srv;
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
	grpc_byte_buffer *queue[RPC_MAX_QUEUED];
	size_t q_head, q_len;
	grpc_byte_buffer *send_bb; /* in flight */
	bool send_in_flight;
	bool finishing, status_sent, ended;
	grpc_status_code fin_code;
	grpc_slice fin_details;

	pthread_mutex_t cb_lock; /* serialises handler callbacks */
	bool closed_called;
};

static void request_arm(struct rpc_server *srv, size_t idx);

static void *cq_thread(void *arg)
{
	struct rpc_server *srv = arg;

	for (;;) {
		grpc_event ev = grpc_completion_queue_next(
			srv->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type == GRPC_OP_COMPLETE) {
			struct rpc_tag *t = ev.tag;

			t->fn(t, ev.success != 0);
		}
	}
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
	for (size_t i = 0; i < st->q_len; i++)
		grpc_byte_buffer_destroy(st->queue[(st->q_head + i) % RPC_MAX_QUEUED]);
	if (st->send_bb)
		grpc_byte_buffer_destroy(st->send_bb);
	if (st->finishing)
		grpc_slice_unref(st->fin_details);
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
	if (st->q_len > 0) {
		st->send_bb = st->queue[st->q_head];
		st->q_head = (st->q_head + 1) % RPC_MAX_QUEUED;
		st->q_len--;
		op.op = GRPC_OP_SEND_MESSAGE;
		op.data.send_message.send_message = st->send_bb;
	} else if (st->finishing && !st->status_sent) {
		st->status_sent = true;
		op.op = GRPC_OP_SEND_STATUS_FROM_SERVER;
		op.data.send_status_from_server.status = st->fin_code;
		op.data.send_status_from_server.status_details = &st->fin_details;
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
	} else if (st->q_len == RPC_MAX_QUEUED) {
		r = -ENOBUFS;
	} else {
		st->queue[(st->q_head + st->q_len) % RPC_MAX_QUEUED] = bb;
		st->q_len++;
		bb = NULL;
		stream_send_next_locked(st);
	}
	pthread_mutex_unlock(&st->lock);
	if (bb)
		grpc_byte_buffer_destroy(bb);
	return r;
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
	bool held = false;

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
	grpc_byte_buffer_destroy(bb);
	pthread_mutex_lock(&st->cb_lock);
	if (!st->closed_called)
		held = ops->message(st->srv->userdata, st, msg) == RPC_MSG_HELD;
	pthread_mutex_unlock(&st->cb_lock);
	if (!held) {
		protobuf_c_message_free_unpacked(msg, NULL);
		stream_recv_arm(st);
	}
	rpc_stream_unref(st);
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
	while (st->q_len > 0) {
		grpc_byte_buffer_destroy(st->queue[st->q_head]);
		st->q_head = (st->q_head + 1) % RPC_MAX_QUEUED;
		st->q_len--;
	}
	pthread_mutex_unlock(&st->lock);

	pthread_mutex_lock(&st->cb_lock);
	was_open = !st->closed_called;
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
	st->refs = 1; /* held by the close batch */
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
		return;
	}

	if (m->require_client_cert && !st->peer.authenticated) {
		code = GRPC_STATUS_UNAUTHENTICATED;
		msg = strdup("client certificate required");
		if (ops->error)
			ops->error(srv->userdata, st, "no client certificate");
	} else {
		code = ops->open(srv->userdata, st, &st->peer, &msg);
	}
	if (code != GRPC_STATUS_OK) {
		/* Refused: closed() must not run for a stream that was never opened. */
		pthread_mutex_lock(&st->cb_lock);
		st->closed_called = true;
		pthread_mutex_unlock(&st->cb_lock);
		rpc_stream_finish(st, code, msg);
	} else {
		stream_recv_arm(st);
	}
	free(msg);
}

/* ---- requests ---- */

static void request_done(struct rpc_tag *tag, bool ok)
{
	struct rpc_request *rq = RPC_CONTAINER_OF(tag, struct rpc_request, tag);
	struct rpc_server *srv = rq->srv;
	const struct rpc_method *m = &srv->methods[rq->idx];
	bool stopping;

	pthread_mutex_lock(&srv->lock);
	stopping = srv->shutting_down;
	pthread_mutex_unlock(&srv->lock);
	if (ok && !stopping)
		request_arm(srv, rq->idx);
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

static void request_arm(struct rpc_server *srv, size_t idx)
{
	struct rpc_request *rq = calloc(1, sizeof(*rq));
	grpc_call_error e;

	if (!rq) {
		log_error("rpc: out of memory re-arming %s", srv->methods[idx].path);
		return;
	}
	rq->tag.fn = request_done;
	rq->srv = srv;
	rq->idx = idx;
	grpc_metadata_array_init(&rq->md);
	e = grpc_server_request_registered_call(
		srv->server, srv->handles[idx], &rq->call, &rq->deadline, &rq->md,
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
	struct rpc_server *srv = RPC_CONTAINER_OF(tag, struct rpc_server, shutdown_tag);

	pthread_mutex_lock(&srv->lock);
	srv->shutdown_done = true;
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

int rpc_server_start(const struct rpc_server_config *cfg, struct rpc_server **ret_server,
		     int *ret_port)
{
	grpc_ssl_pem_key_cert_pair pair = {cfg->tls.key_pem, cfg->tls.cert_pem};
	grpc_ssl_server_certificate_config *certcfg;
	grpc_ssl_server_credentials_options *opts;
	grpc_server_credentials *creds;
	grpc_arg args[3];
	grpc_channel_args chargs = {sizeof(args) / sizeof(args[0]), args};
	struct rpc_server *srv;
	int port, r;

	if (!cfg->listen || !cfg->tls.cert_pem || !cfg->tls.key_pem || !cfg->tls.ca_pem ||
	    cfg->threads < 1)
		return -EINVAL;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	pthread_mutex_init(&srv->lock, NULL);
	pthread_cond_init(&srv->cond, NULL);
	srv->methods = cfg->methods;
	srv->n_methods = cfg->n_methods;
	srv->userdata = cfg->userdata;
	srv->shutdown_tag.fn = shutdown_done;
	srv->handles = calloc(cfg->n_methods, sizeof(void *));
	srv->threads = calloc((size_t)cfg->threads, sizeof(pthread_t));
	if (!srv->handles || !srv->threads) {
		r = -ENOMEM;
		goto fail;
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

	srv->cq = grpc_completion_queue_create_for_next(NULL);
	srv->server = grpc_server_create(&chargs, NULL);
	grpc_server_register_completion_queue(srv->server, srv->cq, NULL);
	for (size_t i = 0; i < cfg->n_methods; i++) {
		srv->handles[i] = grpc_server_register_method(
			srv->server, cfg->methods[i].path, NULL,
			cfg->methods[i].kind == RPC_UNARY
				? GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER
				: GRPC_SRM_PAYLOAD_NONE,
			0);
		if (!srv->handles[i]) {
			r = -EINVAL;
			goto fail_server;
		}
	}

	/* Client certificates are optional at the TLS layer (Enroll has none) but verified when
	 * presented; methods that need one check it per call. */
	certcfg = grpc_ssl_server_certificate_config_create(cfg->tls.ca_pem, &pair, 1);
	opts = grpc_ssl_server_credentials_create_options_using_config(
		GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY, certcfg);
	creds = grpc_ssl_server_credentials_create_with_options(opts);
	if (!creds) {
		r = -EINVAL;
		goto fail_server;
	}
	port = grpc_server_add_http2_port(srv->server, cfg->listen, creds);
	grpc_server_credentials_release(creds);
	if (port <= 0) {
		r = diagnose_bind(cfg->listen);
		goto fail_server;
	}
	grpc_server_start(srv->server);
	for (size_t i = 0; i < cfg->n_methods; i++)
		for (int k = 0; k < cfg->threads; k++)
			request_arm(srv, i);
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

fail_server:
	/* Never started: no shutdown needed before destroy. */
	grpc_server_destroy(srv->server);
	grpc_completion_queue_shutdown(srv->cq);
	while (grpc_completion_queue_next(srv->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
	       GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(srv->cq);
fail:
	free(srv->handles);
	free(srv->threads);
	pthread_mutex_destroy(&srv->lock);
	pthread_cond_destroy(&srv->cond);
	free(srv);
	return r;
}

void rpc_server_stop(struct rpc_server *srv)
{
	bool first;

	if (!srv)
		return;
	pthread_mutex_lock(&srv->lock);
	first = !srv->shutting_down;
	srv->shutting_down = true;
	pthread_mutex_unlock(&srv->lock);
	if (first) {
		grpc_server_shutdown_and_notify(srv->server, srv->cq, &srv->shutdown_tag);
		grpc_server_cancel_all_calls(srv->server);
	}
	pthread_mutex_lock(&srv->lock);
	/* Every stream's closed() has returned once this ends: callers rely on it to have seen
	 * each session's end before they tear down what closed() hands work to. */
	while (!srv->shutdown_done || srv->n_open_streams > 0)
		pthread_cond_wait(&srv->cond, &srv->lock);
	pthread_mutex_unlock(&srv->lock);
}

void rpc_server_free(struct rpc_server *srv)
{
	if (!srv)
		return;
	rpc_server_stop(srv);
	grpc_completion_queue_shutdown(srv->cq);
	for (int i = 0; i < srv->n_threads; i++)
		pthread_join(srv->threads[i], NULL);
	grpc_server_destroy(srv->server);
	grpc_completion_queue_destroy(srv->cq);
	free(srv->handles);
	free(srv->threads);
	pthread_mutex_destroy(&srv->lock);
	pthread_cond_destroy(&srv->cond);
	free(srv);
}

const struct rpc_peer *rpc_stream_peer(struct rpc_stream *st)
{
	return &st->peer;
}
