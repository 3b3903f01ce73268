/* A small RPC layer over gRPC core and protobuf-c: a server that dispatches unary and
 * bidirectional-stream methods from a method table on completion-queue threads, with a per-stream
 * send queue; client channels with mTLS; unary calls; client streams driven by an event loop.
 * Owns the gRPC objects it creates; callers see only protobuf-c messages. */
#ifndef RAILYARD_RPC_H
#define RAILYARD_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <grpc/status.h>
#include <protobuf-c/protobuf-c.h>

#define RPC_WUR __attribute__((warn_unused_result))

/* Largest message either side accepts; larger ones fail the call with RESOURCE_EXHAUSTED. */
#define RPC_MAX_MESSAGE (4 * 1024 * 1024)
/* Messages queued on one stream before rpc_stream_send() refuses with -ENOBUFS. */
#define RPC_MAX_QUEUED 1024

/* PEM material for TLS. All borrowed; copied by the functions that take them. */
struct rpc_tls {
	const char *ca_pem;   /* trust anchor for the peer's certificate */
	const char *cert_pem; /* our certificate chain (leaf first); NULL for none */
	const char *key_pem;  /* our private key; NULL for none */
};

/* Who is on the other end of a server call, from the TLS auth context. */
struct rpc_peer {
	bool authenticated;    /* presented a client certificate that chains to our CA */
	char common_name[256]; /* the certificate's CN, "" when not authenticated */
	char *cert_pem;	       /* the client's leaf certificate (owned by the call), or NULL; for
				* a stream, only while open() runs */
	char address[128];     /* transport address, e.g. "ipv4:127.0.0.1:40312" */
};

/* Route gRPC's own log lines (gpr_log) into ours. Call once before rpc_init(). */
void rpc_log_init(void);
/* grpc_init()/grpc_shutdown() wrappers, reference counted by gRPC itself. */
void rpc_init(void);
void rpc_shutdown(void);

/* TLS servers of this process send no session tickets. OpenSSL sends two TLS 1.3 tickets after
 * every full handshake, serialising the session (client certificate included) for each; agents
 * keep no session cache and a restarted controller could not decrypt a ticket anyway, so they
 * cost a connect storm CPU for nothing (docs/scaling.md). gRPC 1.51 gives no handle on its
 * SSL_CTX: this loads an OpenSSL configuration into the process that keeps the system file's
 * system_default settings and adds NumTickets = 0 (the file is not changed; other processes are
 * not affected). Call before the first server starts; idempotent. -errno, a reason in err. */
RPC_WUR int rpc_tls_no_session_tickets(char *err, size_t errlen);

/* gRPC 1.51's TCP listener stops for good when accept4() fails with anything but EINTR, EAGAIN
 * or ECONNABORTED (EMFILE at the open-file limit): it logs "Failed accept4" once and never
 * accepts on that socket again. The rpc layer counts those lines (routed by rpc_log_init()),
 * and rpc_server_check_listener() replaces such a listener. Thread-safe. */
uint64_t rpc_accept_failures(void);
/* Descriptors this process has open now (counted in /proc/self/fd: O(open descriptors)) and
 * its soft RLIMIT_NOFILE (0: unlimited). -errno. */
RPC_WUR int rpc_fd_usage(long *ret_open, long *ret_limit);

/* Name of a gRPC status code ("UNAVAILABLE"); never NULL. */
const char *rpc_status_name(grpc_status_code code);

/* ---- Server ---------------------------------------------------------------------------- */

struct rpc_server;
struct rpc_stream;

/* Unary handler: set *ret_resp and return GRPC_STATUS_OK, or return another status with an
 * optional message in *ret_msg (malloc'd). The response must be freeable with
 * protobuf_c_message_free_unpacked(resp, NULL): the message itself malloc'd, string and bytes
 * fields malloc'd/strdup'd (or left at their defaults). The layer frees it after sending.
 * Runs on a completion-queue thread; may block briefly (database). */
typedef grpc_status_code (*rpc_unary_fn)(void *userdata, const struct rpc_peer *peer,
					 const ProtobufCMessage *req, ProtobufCMessage **ret_resp,
					 char **ret_msg);

struct rpc_stream_ops {
	/* A stream opened. Return GRPC_STATUS_OK to accept (the stream may be kept with
	 * rpc_stream_ref()), or a status and message (malloc'd, optional) to refuse it. */
	grpc_status_code (*open)(void *userdata, struct rpc_stream *st, const struct rpc_peer *peer,
				 char **ret_msg);
	/* One decoded message. Calls for one stream never overlap. Return RPC_MSG_DONE: the layer
	 * frees msg and reads the next message. Return RPC_MSG_HELD: the handler owns msg (free it
	 * with protobuf_c_message_free_unpacked(msg, NULL)) and the stream reads nothing more
	 * until the handler calls rpc_stream_resume() (from any thread, exactly once). While a
	 * message is held the client's further messages wait in gRPC's flow control: this is how
	 * a handler that must commit a message before it acknowledges it applies back-pressure
	 * without blocking a completion-queue thread. Return RPC_MSG_TAKEN: the handler owns msg
	 * and the stream reads the next message at once (a handler that lets a bounded number of
	 * messages wait with it, and returns RPC_MSG_HELD when that bound is reached). */
	int (*message)(void *userdata, struct rpc_stream *st, ProtobufCMessage *msg);
	/* The stream ended (client gone, cancelled, or finished). Called once, after the last
	 * message() and never concurrently with it. */
	void (*closed)(void *userdata, struct rpc_stream *st, bool cancelled);
	/* Optional: the layer refused input on this stream (undecodable message, no client
	 * certificate) and is ending it with a status; for the handler's log. */
	void (*error)(void *userdata, struct rpc_stream *st, const char *what);
};

/* Return values of rpc_stream_ops.message. */
enum { RPC_MSG_DONE = 0, RPC_MSG_HELD = 1, RPC_MSG_TAKEN = 2 };

enum rpc_kind { RPC_UNARY, RPC_BIDI };

/* One entry of the server's method table. */
struct rpc_method {
	const char *path; /* "/railyard.v1.Controller/Enroll" */
	enum rpc_kind kind;
	const ProtobufCMessageDescriptor *request;
	rpc_unary_fn unary;		   /* RPC_UNARY */
	const struct rpc_stream_ops *bidi; /* RPC_BIDI */
	bool require_client_cert;	   /* refuse with UNAUTHENTICATED (and log) when absent */
};

struct rpc_server_config {
	const char *listen;		  /* "HOST:PORT"; port 0 picks a free one */
	struct rpc_tls tls;		  /* server chain and key; ca_pem verifies client certs */
	const struct rpc_method *methods; /* borrowed; must outlive the server */
	size_t n_methods;
	void *userdata; /* passed to every handler */
	int threads;	/* completion-queue threads, >= 1 */
};

/* Create, bind and start a server. -EADDRINUSE when the port is taken, -EINVAL for a bad
 * address or TLS material. *ret_port receives the bound port (may be NULL). */
RPC_WUR int rpc_server_start(const struct rpc_server_config *cfg, struct rpc_server **ret_server,
			     int *ret_port);
/* Stop accepting, cancel every call and wait until all have ended (each stream's closed() has
 * run); the completion-queue threads keep running, so streams that handlers still reference
 * can be released. Idempotent. */
void rpc_server_stop(struct rpc_server *srv);
/* Replace the listener when gRPC has stopped accepting since the last call (see
 * rpc_accept_failures()): the stopped sockets on the server's port are shut down and a new
 * grpc_server listens on the same address (the older ones keep serving their connections).
 * Returns 1 when replaced, 0 when nothing had stopped, -EMFILE while the process is still at
 * its open-file limit (try again once connections closed), -ENOSPC after RPC_GENS_MAX
 * replacements (the caller should exit for its service manager to restart it), another
 * negative error otherwise. Call periodically from one thread; safe against the
 * completion-queue threads. */
RPC_WUR int rpc_server_check_listener(struct rpc_server *srv);
/* rpc_server_stop() if not done, then stop the threads and free. Handlers are not called after
 * this returns; release every stream reference before. */
void rpc_server_free(struct rpc_server *srv);

/* Queue a message on a stream (thread-safe). The message is packed at once; the caller keeps
 * ownership of msg. -EPIPE if the stream has ended or is finishing, -ENOBUFS if the queue is
 * full, -RY_E_TOO_BIG if the packed message is over RPC_MAX_MESSAGE. */
RPC_WUR int rpc_stream_send(struct rpc_stream *st, const ProtobufCMessage *msg);
/* Read the next message after the handler returned RPC_MSG_HELD (thread-safe). A stream that
 * ended meanwhile is left alone. */
void rpc_stream_resume(struct rpc_stream *st);
/* The encoded size of the message message() was given (valid during that call). */
size_t rpc_stream_msg_size(const struct rpc_stream *st);
/* Trailing metadata of a refusal that tells the client when to try again ("5000": ms); the
 * agents' backoff waits at least that long (rpc_status.retry_after_ms). */
#define RPC_RETRY_AFTER_MD "railyard-retry-after-ms"
/* Send RPC_RETRY_AFTER_MD with the stream's status (set before rpc_stream_finish(), or in
 * open() before refusing). Thread-safe. */
void rpc_stream_set_retry_after(struct rpc_stream *st, int ms);
/* End the stream with a status after the queued messages (thread-safe, idempotent). */
void rpc_stream_finish(struct rpc_stream *st, grpc_status_code code, const char *msg);
/* Keep a stream beyond its handlers (thread-safe). */
struct rpc_stream *rpc_stream_ref(struct rpc_stream *st);
void rpc_stream_unref(struct rpc_stream *st);
/* The peer of a stream (borrowed, valid while the stream is referenced). */
const struct rpc_peer *rpc_stream_peer(struct rpc_stream *st);
/* Per-stream pointer for the handler's use (set in open()). */
void rpc_stream_set_data(struct rpc_stream *st, void *data);
void *rpc_stream_get_data(struct rpc_stream *st);

/* ---- Client ---------------------------------------------------------------------------- */

struct rpc_channel;
struct rpc_client_stream;

struct rpc_channel_config {
	const char *target;	 /* "HOST:PORT" */
	struct rpc_tls tls;	 /* ca_pem required; cert/key for mTLS (optional) */
	const char *server_name; /* name checked in the server's certificate (NULL: host) */
	int reconnect_max_ms;	 /* gRPC's own subchannel backoff cap (0: default 30 s) */
	int keepalive_ms;	 /* silence before a PING to the server (0: RPC_KEEPALIVE_MS) */
};

/* A client PINGs its server after RPC_KEEPALIVE_MS without reading anything and closes the
 * connection when no answer came within RPC_KEEPALIVE_TIMEOUT_MS. gRPC restarts the wait on
 * every read, and an agent reads only the controller's answer to each heartbeat, so the wait
 * outlasts the longest heartbeat interval a controller tells (CTL_HEARTBEAT_STRETCH_MAX_MS,
 * 60 s): at 10,000 agents and a 34 s interval a 30 s wait had every agent PING once a cycle,
 * doubling what an idle controller reads. The timeout outlasts a controller that is slow to
 * read in a connect storm (at 10 s, sessions it had welcomed were closed by their agents and
 * came back as more handshakes). gRPC also makes the timeout the socket's TCP_USER_TIMEOUT: a
 * heartbeat that the network does not acknowledge ends the connection after it. */
#define RPC_KEEPALIVE_MS	 120000
#define RPC_KEEPALIVE_TIMEOUT_MS 30000

RPC_WUR int rpc_channel_new(const struct rpc_channel_config *cfg, struct rpc_channel **ret);
void rpc_channel_free(struct rpc_channel *ch);

/* Wait until the channel is connected, up to deadline (CLOCK_MONOTONIC ms). 0 when ready,
 * -ETIMEDOUT otherwise. This is the "wait for ready" step before a session starts. */
RPC_WUR int rpc_channel_wait_ready(struct rpc_channel *ch, int64_t deadline_mono_ms);

/* Result of a finished call. */
struct rpc_status {
	grpc_status_code code;
	char details[512];
	int retry_after_ms; /* the server's RPC_RETRY_AFTER_MD (0: none), at most 10 minutes */
};

/* Blocking unary call. On GRPC_STATUS_OK *ret_resp holds the decoded reply (free with
 * protobuf_c_message_free_unpacked(resp, NULL)). Returns 0 when the call completed (look at
 * status->code), or a negative error for local failures. */
RPC_WUR int rpc_unary_call(struct rpc_channel *ch, const char *path, const ProtobufCMessage *req,
			   const ProtobufCMessageDescriptor *resp_desc, int64_t timeout_ms,
			   ProtobufCMessage **ret_resp, struct rpc_status *status);

/* Open a bidirectional stream (wait-for-ready). Messages from the server are decoded with
 * resp_desc. Not thread-safe except rpc_client_stream_cancel(). */
RPC_WUR int rpc_client_stream_open(struct rpc_channel *ch, const char *path,
				   const ProtobufCMessageDescriptor *resp_desc,
				   struct rpc_client_stream **ret);
/* Queue a message; it is sent while rpc_client_stream_next() runs. -EPIPE after the stream
 * ended, -ENOBUFS when RPC_MAX_QUEUED are waiting. */
RPC_WUR int rpc_client_stream_send(struct rpc_client_stream *cs, const ProtobufCMessage *msg);
/* Queue raw bytes as one message (tests of the server's input validation). */
RPC_WUR int rpc_client_stream_send_raw(struct rpc_client_stream *cs, const void *data, size_t len);
/* Run the stream until a message arrives (returns 1, *ret_msg owned by the caller: free with
 * protobuf_c_message_free_unpacked), the deadline passes (returns 0), or the stream ends
 * (returns -EPIPE; rpc_client_stream_status() then says why). An undecodable message from the
 * server cancels the stream and returns -RY_E_INVALID. */
RPC_WUR int rpc_client_stream_next(struct rpc_client_stream *cs, int64_t deadline_mono_ms,
				   ProtobufCMessage **ret_msg);
/* The final status, valid after rpc_client_stream_next() returned -EPIPE. */
const struct rpc_status *rpc_client_stream_status(struct rpc_client_stream *cs);
/* Cancel from any thread; rpc_client_stream_next() then returns -EPIPE. */
void rpc_client_stream_cancel(struct rpc_client_stream *cs);
/* Cancel if still open, drain and free. */
void rpc_client_stream_free(struct rpc_client_stream *cs);

/* ---- Many client streams in one process ------------------------------------------------
 * rpc_client_stream_next() needs a thread per stream; a process that plays thousands of
 * clients (the load generator) runs them on one shared completion queue instead, driven by a
 * few threads, with callbacks. */
struct rpc_client_loop;
struct rpc_async_stream;

/* A completion queue and `threads` threads that run the callbacks of the streams on it. */
RPC_WUR int rpc_client_loop_new(int threads, struct rpc_client_loop **ret);
/* Stop the threads and free; every stream on it must have ended and been freed. */
void rpc_client_loop_free(struct rpc_client_loop *l);

struct rpc_async_ops {
	/* One message from the server (owned by the callee: protobuf_c_message_free_unpacked).
	 * Calls for one stream never overlap; the next message is read after this returns. */
	void (*message)(void *ud, ProtobufCMessage *msg);
	/* The stream ended; once, after the last message() and after every batch of the stream
	 * completed: the callee may free the stream now. st is the stream's own: read it before
	 * rpc_async_stream_free(). */
	void (*ended)(void *ud, const struct rpc_status *st);
};

/* Open a bidirectional stream on ch (wait-for-ready: it waits for the channel to connect)
 * whose callbacks run on l's threads. Callbacks may run before this returns: a caller that
 * keeps *ret for them must publish it under a lock that its callbacks take. */
RPC_WUR int rpc_async_stream_open(struct rpc_channel *ch, struct rpc_client_loop *l,
				  const char *path, const ProtobufCMessageDescriptor *resp_desc,
				  const struct rpc_async_ops *ops, void *ud,
				  struct rpc_async_stream **ret);
/* Queue a message (thread-safe). -EPIPE after the stream ended, -ENOBUFS when RPC_MAX_QUEUED
 * are waiting. */
RPC_WUR int rpc_async_stream_send(struct rpc_async_stream *as, const ProtobufCMessage *msg);
/* End the stream from any thread; ended() follows. */
void rpc_async_stream_cancel(struct rpc_async_stream *as);
/* Free a stream whose ended() has run (or from within ended()). NULL is fine. */
void rpc_async_stream_free(struct rpc_async_stream *as);

/* Jittered exponential backoff for reconnect loops. */
struct rpc_backoff {
	int base_ms, max_ms, attempt;
};
/* Next delay: min(max, base * 2^attempt) scaled by a random factor in [0.5, 1.0). */
int rpc_backoff_next_ms(struct rpc_backoff *b);
void rpc_backoff_reset(struct rpc_backoff *b);

/* ---- Codec ----------------------------------------------------------------------------- */

/* Pack msg into a freshly allocated buffer (caller frees). -RY_E_TOO_BIG over RPC_MAX_MESSAGE. */
RPC_WUR int rpc_pack(const ProtobufCMessage *msg, uint8_t **ret_buf, size_t *ret_len);
/* Decode len bytes with desc; -RY_E_INVALID when undecodable. Free with
 * protobuf_c_message_free_unpacked(msg, NULL). */
RPC_WUR int rpc_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *buf, size_t len,
		       ProtobufCMessage **ret_msg);

#endif
