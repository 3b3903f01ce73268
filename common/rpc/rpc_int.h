/* Internals shared by the rpc layer's server and client halves: completion tags and
 * byte-buffer conversion. */
#ifndef RAILYARD_RPC_INT_H
#define RAILYARD_RPC_INT_H

#include "common/rpc/rpc.h"

#include <grpc/grpc.h>

#define RPC_CONTAINER_OF(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* Every batch we start carries one of these as its tag; the CQ loop calls fn(tag, ok). */
struct rpc_tag {
	void (*fn)(struct rpc_tag *tag, bool ok);
};

/* A client channel (rpc_client.c; streams on a shared queue in rpc_async.c use it too). */
struct rpc_channel {
	grpc_channel *ch;
};

/* Messages waiting to be sent on a stream: a ring grown by doubling from 4 up to RPC_MAX_QUEUED
 * (most streams never hold more than a few). Not locked: its stream's lock guards it. */
struct rpc_sendq {
	grpc_byte_buffer **v;
	size_t head, len, cap;
};

/* Append bb (taken on success). -ENOBUFS when RPC_MAX_QUEUED wait, -ENOMEM. */
int rpc_sendq_push(struct rpc_sendq *q, grpc_byte_buffer *bb);
/* The oldest message (the caller's now), or NULL when none waits. */
grpc_byte_buffer *rpc_sendq_pop(struct rpc_sendq *q);
/* Destroy the messages waiting; with release, the ring's storage too. */
void rpc_sendq_clear(struct rpc_sendq *q, bool release);

/* Pack a message into a new byte buffer (caller destroys). */
int rpc_buffer_from_message(const ProtobufCMessage *msg, grpc_byte_buffer **ret);
/* Raw bytes into a new byte buffer (caller destroys). */
int rpc_buffer_from_bytes(const void *data, size_t len, grpc_byte_buffer **ret);
/* Decode a received byte buffer (borrowed). -RY_E_INVALID when undecodable. */
int rpc_buffer_to_message(grpc_byte_buffer *bb, const ProtobufCMessageDescriptor *desc,
			  ProtobufCMessage **ret);

/* A completion-queue thread's loop: each completed batch's tag called with its outcome, until
 * the queue shuts down. */
void rpc_cq_run(grpc_completion_queue *cq);

/* Turn Abseil's mutex deadlock detection off (rpc_absl.cc); before grpc_init(). */
void rpc_absl_quiet(void);

/* Least time a client's connection attempt is given (see rpc_channel_new()). */
#define RPC_CONNECT_TIMEOUT_MS 60000
/* Longest wait a server's RPC_RETRY_AFTER_MD may ask for. */
#define RPC_RETRY_AFTER_MAX_MS 600000
/* The server's RPC_RETRY_AFTER_MD in trailing metadata, in ms (0: none or malformed). */
int rpc_retry_after(const grpc_metadata_array *md);

/* Copy a grpc_slice of status details into a fixed buffer. */
void rpc_slice_copy(grpc_slice s, char *out, size_t outlen);

#endif
