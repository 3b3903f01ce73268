/* rpc layer, client half: mTLS channels, blocking unary calls, and bidirectional streams driven
 * by the caller's event loop (rpc_client_stream_next) on a completion queue of their own. */
#include "common/rpc/rpc_int.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

enum cs_tag { CS_STATUS, CS_MD, CS_RECV, CS_SEND, CS_N };

struct rpc_client_stream {
	grpc_call *call;
	grpc_completion_queue *cq;
	const ProtobufCMessageDescriptor *desc;
	char tags[CS_N]; /* addresses only: identify which batch completed */
	int outstanding;
	grpc_metadata_array init_md, trail_md;
	grpc_status_code code;
	grpc_slice details;
	grpc_byte_buffer *recv_bb;
	grpc_byte_buffer *send_bb;
	struct rpc_sendq sendq;
	bool recv_armed, send_in_flight, done, server_closed;
	struct rpc_status status;
};

static gpr_timespec deadline_from_mono(int64_t deadline_mono_ms)
{
	int64_t left = deadline_mono_ms - util_now_mono_ms();

	if (left < 0)
		left = 0;
	return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(left, GPR_TIMESPAN));
}

int rpc_channel_new(const struct rpc_channel_config *cfg, struct rpc_channel **ret)
{
	grpc_ssl_pem_key_cert_pair pair = {cfg->tls.key_pem, cfg->tls.cert_pem};
	grpc_channel_credentials *creds;
	grpc_arg args[8];
	grpc_channel_args chargs = {0, args};
	struct rpc_channel *c;
	int backoff_max = cfg->reconnect_max_ms > 0 ? cfg->reconnect_max_ms : 30000;

	if (!cfg->target || !cfg->tls.ca_pem)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	creds = grpc_ssl_credentials_create_ex(
		cfg->tls.ca_pem, cfg->tls.cert_pem && cfg->tls.key_pem ? &pair : NULL, NULL, NULL);
	if (!creds) {
		free(c);
		return -EINVAL;
	}
#define ARG_INT(k, v)                                                                              \
	do {                                                                                       \
		args[chargs.num_args].type = GRPC_ARG_INTEGER;                                     \
		args[chargs.num_args].key = (char *)(k);                                           \
		args[chargs.num_args++].value.integer = (v);                                       \
	} while (0)
	ARG_INT(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, RPC_MAX_MESSAGE);
	ARG_INT(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, backoff_max);
	ARG_INT(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, backoff_max < 1000 ? backoff_max : 1000);
	/* Despite its name, gRPC 1.51 takes this as the least time a connection attempt (TCP, TLS
	 * handshake, HTTP/2 settings) is given before it is abandoned (subchannel.cc,
	 * min_connect_timeout; default 20 s). At 1 s, a controller busy with a connect storm could
	 * not finish handshakes in time: every client gave up and tried again, and the storm fed
	 * itself (5,000 agents: 407 sessions in 10 minutes). The server gives a handshake 120 s. */
	ARG_INT(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, RPC_CONNECT_TIMEOUT_MS);
	/* Detect a controller that vanished without a FIN (partition, power loss). */
	ARG_INT(GRPC_ARG_KEEPALIVE_TIME_MS,
		cfg->keepalive_ms > 0 ? cfg->keepalive_ms : RPC_KEEPALIVE_MS);
	ARG_INT(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, RPC_KEEPALIVE_TIMEOUT_MS);
	/* Each channel its own connection, also when a process holds several (tests, tools). */
	ARG_INT(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
#undef ARG_INT
	if (cfg->server_name) {
		args[chargs.num_args].type = GRPC_ARG_STRING;
		args[chargs.num_args].key = (char *)GRPC_SSL_TARGET_NAME_OVERRIDE_ARG;
		args[chargs.num_args++].value.string = (char *)cfg->server_name;
	}
	c->ch = grpc_channel_create(cfg->target, creds, &chargs);
	grpc_channel_credentials_release(creds);
	if (!c->ch) {
		free(c);
		return -EINVAL;
	}
	*ret = c;
	return 0;
}

void rpc_channel_free(struct rpc_channel *ch)
{
	if (!ch)
		return;
	grpc_channel_destroy(ch->ch);
	free(ch);
}

static void cq_drain_destroy(grpc_completion_queue *cq)
{
	grpc_completion_queue_shutdown(cq);
	while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
	       GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(cq);
}

int rpc_channel_wait_ready(struct rpc_channel *ch, int64_t deadline_mono_ms)
{
	grpc_completion_queue *cq = grpc_completion_queue_create_for_next(NULL);
	int r = -ETIMEDOUT;
	char tag;

	for (;;) {
		grpc_connectivity_state st = grpc_channel_check_connectivity_state(ch->ch, 1);
		grpc_event ev;

		if (st == GRPC_CHANNEL_READY) {
			r = 0;
			break;
		}
		if (st == GRPC_CHANNEL_SHUTDOWN || util_now_mono_ms() >= deadline_mono_ms)
			break;
		grpc_channel_watch_connectivity_state(
			ch->ch, st, deadline_from_mono(deadline_mono_ms), cq, &tag);
		ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		if (ev.type != GRPC_OP_COMPLETE)
			break;
	}
	cq_drain_destroy(cq);
	return r;
}

int rpc_retry_after(const grpc_metadata_array *md)
{
	for (size_t i = 0; i < md->count; i++) {
		char v[16];
		char *end;
		long ms;

		if (grpc_slice_str_cmp(md->metadata[i].key, RPC_RETRY_AFTER_MD) != 0)
			continue;
		rpc_slice_copy(md->metadata[i].value, v, sizeof(v));
		ms = strtol(v, &end, 10);
		/* Network input: digits only, bounded. */
		if (end == v || *end || ms <= 0)
			return 0;
		return ms > RPC_RETRY_AFTER_MAX_MS ? RPC_RETRY_AFTER_MAX_MS : (int)ms;
	}
	return 0;
}

static void status_fill(struct rpc_status *st, grpc_status_code code, grpc_slice details,
			const char *error_string)
{
	st->code = code;
	rpc_slice_copy(details, st->details, sizeof(st->details));
	if (!st->details[0] && error_string)
		snprintf(st->details, sizeof(st->details), "%s", error_string);
}

int rpc_unary_call(struct rpc_channel *ch, const char *path, const ProtobufCMessage *req,
		   const ProtobufCMessageDescriptor *resp_desc, int64_t timeout_ms,
		   ProtobufCMessage **ret_resp, struct rpc_status *status)
{
	grpc_completion_queue *cq;
	grpc_metadata_array init_md, trail_md;
	grpc_byte_buffer *send_bb = NULL, *recv_bb = NULL;
	grpc_status_code code = GRPC_STATUS_UNKNOWN;
	grpc_slice details = grpc_empty_slice();
	const char *error_string = NULL;
	ProtobufCMessage *resp = NULL;
	grpc_slice method;
	grpc_call *call;
	grpc_op ops[6];
	grpc_event ev;
	char tag;
	int r;

	r = rpc_buffer_from_message(req, &send_bb);
	if (r < 0)
		return r;
	cq = grpc_completion_queue_create_for_next(NULL);
	method = grpc_slice_from_copied_string(path);
	call = grpc_channel_create_call(ch->ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq, method, NULL,
					deadline_from_mono(util_now_mono_ms() + timeout_ms), NULL);
	grpc_slice_unref(method);
	grpc_metadata_array_init(&init_md);
	grpc_metadata_array_init(&trail_md);
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[0].flags = GRPC_INITIAL_METADATA_WAIT_FOR_READY;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = send_bb;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &init_md;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &recv_bb;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &trail_md;
	ops[5].data.recv_status_on_client.status = &code;
	ops[5].data.recv_status_on_client.status_details = &details;
	ops[5].data.recv_status_on_client.error_string = &error_string;
	if (grpc_call_start_batch(call, ops, 6, &tag, NULL) != GRPC_CALL_OK) {
		r = -RY_E_RPC;
		goto out;
	}
	ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	if (ev.type != GRPC_OP_COMPLETE) {
		r = -RY_E_RPC;
		goto out;
	}
	status_fill(status, code, details, error_string);
	if (code == GRPC_STATUS_OK) {
		if (!recv_bb || rpc_buffer_to_message(recv_bb, resp_desc, &resp) < 0) {
			status->code = GRPC_STATUS_INTERNAL;
			snprintf(status->details, sizeof(status->details),
				 "undecodable response from server");
		} else {
			*ret_resp = resp;
		}
	}
	r = 0;
out:
	if (recv_bb)
		grpc_byte_buffer_destroy(recv_bb);
	grpc_byte_buffer_destroy(send_bb);
	grpc_metadata_array_destroy(&init_md);
	grpc_metadata_array_destroy(&trail_md);
	grpc_slice_unref(details);
	gpr_free((void *)error_string);
	grpc_call_unref(call);
	cq_drain_destroy(cq);
	return r;
}

/* ---- client streams ---- */

static void cs_send_next(struct rpc_client_stream *cs)
{
	grpc_op op;

	if (cs->send_in_flight || cs->done || !(cs->send_bb = rpc_sendq_pop(&cs->sendq)))
		return;
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_SEND_MESSAGE;
	op.data.send_message.send_message = cs->send_bb;
	if (grpc_call_start_batch(cs->call, &op, 1, &cs->tags[CS_SEND], NULL) != GRPC_CALL_OK) {
		grpc_byte_buffer_destroy(cs->send_bb);
		cs->send_bb = NULL;
		return;
	}
	cs->send_in_flight = true;
	cs->outstanding++;
}

static void cs_recv_arm(struct rpc_client_stream *cs)
{
	grpc_op op;

	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_MESSAGE;
	op.data.recv_message.recv_message = &cs->recv_bb;
	if (grpc_call_start_batch(cs->call, &op, 1, &cs->tags[CS_RECV], NULL) == GRPC_CALL_OK) {
		cs->recv_armed = true;
		cs->outstanding++;
	}
}

int rpc_client_stream_open(struct rpc_channel *ch, const char *path,
			   const ProtobufCMessageDescriptor *resp_desc,
			   struct rpc_client_stream **ret)
{
	struct rpc_client_stream *cs;
	grpc_slice method;
	grpc_op ops[2];

	cs = calloc(1, sizeof(*cs));
	if (!cs)
		return -ENOMEM;
	cs->desc = resp_desc;
	cs->details = grpc_empty_slice();
	grpc_metadata_array_init(&cs->init_md);
	grpc_metadata_array_init(&cs->trail_md);
	cs->cq = grpc_completion_queue_create_for_next(NULL);
	method = grpc_slice_from_copied_string(path);
	cs->call = grpc_channel_create_call(ch->ch, NULL, GRPC_PROPAGATE_DEFAULTS, cs->cq, method,
					    NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	grpc_slice_unref(method);

	/* Status first: it completes whenever the stream ends, for any reason. */
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[0].data.recv_status_on_client.trailing_metadata = &cs->trail_md;
	ops[0].data.recv_status_on_client.status = &cs->code;
	ops[0].data.recv_status_on_client.status_details = &cs->details;
	if (grpc_call_start_batch(cs->call, ops, 1, &cs->tags[CS_STATUS], NULL) != GRPC_CALL_OK)
		goto fail;
	cs->outstanding++;
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[0].flags = GRPC_INITIAL_METADATA_WAIT_FOR_READY;
	ops[1].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[1].data.recv_initial_metadata.recv_initial_metadata = &cs->init_md;
	if (grpc_call_start_batch(cs->call, ops, 2, &cs->tags[CS_MD], NULL) != GRPC_CALL_OK)
		goto fail;
	cs->outstanding++;
	cs_recv_arm(cs);
	*ret = cs;
	return 0;
fail:
	rpc_client_stream_free(cs);
	return -RY_E_RPC;
}

static int cs_enqueue(struct rpc_client_stream *cs, grpc_byte_buffer *bb)
{
	int r;

	if (cs->done || cs->server_closed) {
		grpc_byte_buffer_destroy(bb);
		return -EPIPE;
	}
	r = rpc_sendq_push(&cs->sendq, bb);
	if (r < 0) {
		grpc_byte_buffer_destroy(bb);
		return r;
	}
	cs_send_next(cs);
	return 0;
}

int rpc_client_stream_send(struct rpc_client_stream *cs, const ProtobufCMessage *msg)
{
	grpc_byte_buffer *bb;
	int r;

	r = rpc_buffer_from_message(msg, &bb);
	if (r < 0)
		return r;
	return cs_enqueue(cs, bb);
}

int rpc_client_stream_send_raw(struct rpc_client_stream *cs, const void *data, size_t len)
{
	grpc_byte_buffer *bb;
	int r;

	r = rpc_buffer_from_bytes(data, len, &bb);
	if (r < 0)
		return r;
	return cs_enqueue(cs, bb);
}

int rpc_client_stream_next(struct rpc_client_stream *cs, int64_t deadline_mono_ms,
			   ProtobufCMessage **ret_msg)
{
	for (;;) {
		grpc_event ev;
		char *tag;

		if (cs->done)
			return -EPIPE;
		ev = grpc_completion_queue_next(cs->cq, deadline_from_mono(deadline_mono_ms), NULL);
		if (ev.type == GRPC_QUEUE_TIMEOUT)
			return 0;
		if (ev.type != GRPC_OP_COMPLETE)
			return -EPIPE;
		cs->outstanding--;
		tag = ev.tag;
		if (tag == &cs->tags[CS_STATUS]) {
			cs->done = true;
			status_fill(&cs->status, cs->code, cs->details, NULL);
			cs->status.retry_after_ms = rpc_retry_after(&cs->trail_md);
			return -EPIPE;
		} else if (tag == &cs->tags[CS_SEND]) {
			grpc_byte_buffer_destroy(cs->send_bb);
			cs->send_bb = NULL;
			cs->send_in_flight = false;
			if (ev.success)
				cs_send_next(cs);
		} else if (tag == &cs->tags[CS_RECV]) {
			grpc_byte_buffer *bb = cs->recv_bb;
			ProtobufCMessage *msg = NULL;

			cs->recv_bb = NULL;
			cs->recv_armed = false;
			if (!ev.success || !bb) {
				/* Server finished sending; the status follows. */
				cs->server_closed = true;
				continue;
			}
			if (rpc_buffer_to_message(bb, cs->desc, &msg) < 0) {
				grpc_byte_buffer_destroy(bb);
				grpc_call_cancel_with_status(cs->call, GRPC_STATUS_INTERNAL,
							     "undecodable message from server",
							     NULL);
				return -RY_E_INVALID;
			}
			grpc_byte_buffer_destroy(bb);
			cs_recv_arm(cs);
			*ret_msg = msg;
			return 1;
		}
		/* CS_MD: initial metadata exchanged; nothing to do. */
	}
}

const struct rpc_status *rpc_client_stream_status(struct rpc_client_stream *cs)
{
	return &cs->status;
}

void rpc_client_stream_cancel(struct rpc_client_stream *cs)
{
	grpc_call_cancel(cs->call, NULL);
}

void rpc_client_stream_free(struct rpc_client_stream *cs)
{
	if (!cs)
		return;
	if (cs->call) {
		grpc_call_cancel(cs->call, NULL);
		/* Every accepted batch completes exactly once, also after a cancel. */
		while (cs->outstanding > 0) {
			grpc_event ev = grpc_completion_queue_next(
				cs->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

			if (ev.type != GRPC_OP_COMPLETE)
				break;
			cs->outstanding--;
		}
		grpc_call_unref(cs->call);
	}
	if (cs->recv_bb)
		grpc_byte_buffer_destroy(cs->recv_bb);
	if (cs->send_bb)
		grpc_byte_buffer_destroy(cs->send_bb);
	rpc_sendq_clear(&cs->sendq, true);
	grpc_metadata_array_destroy(&cs->init_md);
	grpc_metadata_array_destroy(&cs->trail_md);
	grpc_slice_unref(cs->details);
	cq_drain_destroy(cs->cq);
	free(cs);
}
