/* Internals of the controller's server shared by its files (server.c, enroll.c, session.c). */
#ifndef RAILYARD_CONTROLLER_SERVER_INT_H
#define RAILYARD_CONTROLLER_SERVER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "common/rpc/rpc.h"
#include "controller/events.h"
#include "controller/server.h"
#include "railyard/v1/railyard.pb-c.h"

#include "proto/railyard/v1/limits.h"

/* Limits on what an agent may send (the protocol's are in proto/railyard/v1/limits.h). */
#define CTL_TOKEN_MAX	 256
#define CTL_HOSTNAME_MAX 253
#define CTL_VERSION_MAX	 64
#define CTL_FACTS_MAX	 (1024 * 1024)
/* Liveness is kept in memory (last_heard_ms); the controller writes when each connected node
 * was last heard at most this often, for all of them in one transaction. */
#define CTL_LAST_SEEN_SAVE_MS 30000
#define CTL_BOOT_ID_MAX	      64
#define CTL_ID_MAX	      RY_PROTO_ID_MAX
#define CTL_NAME_MAX	      RY_PROTO_STEP_NAME_MAX
#define CTL_STEPS_MAX	      RY_PROTO_STEPS_MAX
#define CTL_DIFF_MAX	      RY_PROTO_DIFF_MAX
#define CTL_MESSAGE_MAX	      RY_PROTO_MESSAGE_MAX
/* Refused reports after which a session is ended (RESOURCE_EXHAUSTED): a node that keeps
 * sending what it may not costs a database read each. */
#define CTL_SESSION_REFUSALS_MAX 1000
/* Messages waiting for the ingest worker beyond which new sessions are refused (UNAVAILABLE
 * with a retry hint of 1 s plus 1 ms per 2 waiting, spread): the queue, and the facts its
 * Hellos hold, stay bounded in a connect storm. */
#define CTL_OPEN_BACKLOG_MAX 2048
/* AgentMessage body cases are small numbers: counters per case. */
#define CTL_RPC_KINDS 32

struct ctl_session;
struct ctl_engine;
struct ctl_rollout;
struct ctl_campaigns;
struct ctl_throttle;

struct ctl_server {
	struct ctl_state *state;
	struct ctl_server_config cfg;
	struct rpc_server *rpc;
	pthread_mutex_t lock; /* the session registry, the resume table, stopping */
	pthread_cond_t cond;
	/* Sessions by node id and what away nodes' last sessions committed (session.c): chained
	 * hash tables of a power-of-two number of buckets. */
	struct ctl_session **sessions;
	size_t sessions_cap, n_sessions, n_online;
	struct ctl_resume **resume;
	size_t resume_cap, n_resume;
	int64_t resume_pruned_ms;	/* reaper only */
	int64_t mass_silence_logged_ms; /* reaper only */
	bool stopping;
	pthread_t reaper;
	bool reaper_started;
	struct ctl_engine *engine;	      /* tick thread with the passes, ingest worker */
	struct ctl_rollout *rollout;	      /* the rollout pass's state */
	struct ctl_campaigns *campaigns;      /* the campaign pass's state */
	struct ctl_events *events;	      /* what changed, for the REST event stream */
	struct ctl_api *api;		      /* the REST API, while it serves */
	struct ctl_throttle *enroll_throttle; /* refused enrollments per source address */
	struct ctl_throttle *report_throttle; /* refused reports per node (audit rows) */
	_Atomic int enroll_active;	      /* Enroll calls working on the database now */
	/* The database file as opened, watched by the reaper (deleted, replaced, truncated). */
	unsigned long long db_dev, db_ino;
	_Atomic bool failed; /* a fatal condition: serve stops and exits 1 */
	/* Agent messages received, by AgentMessage body case (/metrics). */
	atomic_uint_fast64_t rpc_received[CTL_RPC_KINDS];
	int64_t started_ms; /* unix ms when this process started serving */
	int port;	    /* the bound gRPC port */
	/* Descriptors: open and the soft limit as the reaper counted them (every second), and
	 * sessions opened since (the guard in session_open()). */
	_Atomic long fds_open, fds_limit, fds_opened;
	int64_t listener_logged_ms; /* reaper only */
	int64_t fds_counted_ms;	    /* reaper only: when fds_open was last counted */
};

/* Descriptors kept free at the open-file limit: sessions beyond it are refused (with a hint
 * to retry later and let go of the connection) so that gRPC's accept() never fails (1.51 stops
 * listening when it does). limit/32, between 16 and 1024. */
int ctl_fd_margin(long limit);

/* Write the sessions' counters (messages received by kind) and the engine's (ingest latency by
 * kind) as Prometheus text (session.c, ingest.c). */
void ctl_sessions_metrics(struct ctl_server *srv, FILE *f);
void ctl_engine_metrics(struct ctl_engine *e, FILE *f);

/* What handling an agent's message came to (the engine's ingest worker acts on it). */
enum ctl_verdict {
	CTL_DONE,   /* committed (or nothing to commit): acknowledge, read on */
	CTL_REFUSE, /* refused for good: acknowledge with an Error, audit, read on */
	CTL_RETRY,  /* not stored for now (database busy, disk full): keep it, try again */
	CTL_END,    /* a protocol violation: end the session with code */
	CTL_DROP,   /* its session was ended before it was stored: not stored, not acknowledged
		     * (the node sends it again on its next session) */
};

struct ctl_outcome {
	enum ctl_verdict verdict;
	grpc_status_code code; /* CTL_END */
	const char *err_code;  /* CTL_REFUSE: Error.code, e.g. "not_member" */
	char target[96];       /* CTL_REFUSE: what the report was about, for the audit row */
	char why[512];	       /* the reason, for every verdict but CTL_DONE */
	bool kick;	       /* run the engine's passes once this is committed */
};

/* Outcome from a store error that is not the message's fault: retry, or (corrupt database)
 * retry while the server stops. */
void ctl_outcome_store_error(struct ctl_server *srv, struct ctl_outcome *o, int r,
			     const char *what);

/* The server cannot go on (database gone or corrupt): log why once and stop `serve`, which
 * exits 1. Thread-safe. */
void ctl_server_fail(struct ctl_server *srv, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

grpc_status_code ctl_enroll(void *userdata, const struct rpc_peer *peer,
			    const ProtobufCMessage *req, ProtobufCMessage **ret_resp,
			    char **ret_msg);

extern const struct rpc_stream_ops ctl_session_ops;

/* Send a message to a node over its session (seq and ack are set); -ENOTCONN when it has
 * none. Thread-safe. */
int ctl_session_send(struct ctl_server *srv, const char *node_id,
		     Railyard__V1__ControllerMessage *m);
/* The host part of a node's session address (as the controller sees it). -ENOTCONN. */
int ctl_session_peer_host(struct ctl_server *srv, const char *node_id, char *buf, size_t len);

/* Send a node its plan over its session; -ENOTCONN when it has none. Thread-safe. */
int ctl_session_send_plan(struct ctl_server *srv, const char *node_id, const char *deployment_id,
			  const char *plan_json, bool check_mode);
/* Is the node connected (its Hello done)? Thread-safe. */
bool ctl_session_online(struct ctl_server *srv, const char *node_id);
/* How long the node has been without a session, in ms at now_ms: 0 when connected; otherwise
 * since it was last heard, but never before this process started serving (agents reconnect
 * after a controller restart within their reconnect back-off). A node the store does not know
 * counts as gone since the start. Thread-safe. */
int64_t ctl_node_offline_ms(struct ctl_server *srv, const char *node_id, int64_t now_ms);
/* End a node's session, if it has one (thread-safe). */
void ctl_session_end(struct ctl_server *srv, const char *node_id, grpc_status_code code,
		     const char *why);

/* ---- Sessions and the engine's ingest worker (session.c). A session hands every message of a
 * kind the engine has a handler for to the ingest worker, in order, and reads ahead of them only
 * up to a small window (none past a Hello); then it reads nothing more from its stream until one
 * is committed (or refused, or ends the session): acknowledgements cover only what is stored,
 * completion-queue threads never wait for the database, and a node whose messages cannot be
 * stored yet is held back through gRPC's flow control rather than dropped. */
void ctl_session_ref(struct ctl_server *srv, struct ctl_session *s);
void ctl_session_unref(struct ctl_server *srv, struct ctl_session *s);
const char *ctl_session_node_id(const struct ctl_session *s);
const char *ctl_session_hostname(const struct ctl_session *s);
const char *ctl_session_cluster(const struct ctl_session *s);
/* Register the Hello and FactsUpdate handlers with the engine, before it starts. */
__attribute__((warn_unused_result)) int ctl_sessions_register(struct ctl_engine *e);
/* The message seq of s (bytes: its size, as submitted) was handled with outcome o (not
 * CTL_RETRY): acknowledge it (Welcome after Hello, Error for a refusal, a Receipt when it is
 * the session's last message in the commit: last), or end the session, or (CTL_DROP) nothing;
 * then it leaves the session's window. */
void ctl_session_processed(struct ctl_server *srv, struct ctl_session *s,
			   const Railyard__V1__AgentMessage *m, const struct ctl_outcome *o,
			   size_t bytes, bool last);
/* Ingest worker: walking a commit's messages from its last, true at a session's first
 * (i.e. its last message in the commit); batch: a number of that commit's own, never 0. */
bool ctl_session_last_in_batch(struct ctl_session *s, unsigned batch);
/* Has the controller ended s (its queued messages are then dropped)? */
bool ctl_session_ended(const struct ctl_session *s);
/* Store that the node of a session that ended is offline (when it was the node's current
 * session); a negative store error to retry. */
int ctl_session_store_offline(struct ctl_server *srv, struct ctl_session *s);
/* Write last_seen of connected nodes heard since their last write (every
 * CTL_LAST_SEEN_SAVE_MS), in one transaction. */
void ctl_sessions_save_last_seen(struct ctl_server *srv, int64_t now_mono_ms);
/* End the sessions of nodes revoked meanwhile (by `node revoke` in another process). */
void ctl_sessions_end_revoked(struct ctl_server *srv);

/* Heartbeat reaper pass: end sessions silent for longer than the timeout; periodic refresh. */
void ctl_sessions_reap(struct ctl_server *srv, int64_t now_mono_ms, bool refresh);
/* Drop the session registry and the resume table (shutdown; the fuzz harness between inputs,
 * with the reaper running). */
void ctl_sessions_done(struct ctl_server *srv);

/* True when s is a printable ASCII string of 1..max bytes. */
bool ctl_valid_text(const char *s, size_t max);
/* True when s is a host name: labels of [A-Za-z0-9-], not starting or ending with '-'. */
bool ctl_valid_hostname(const char *s);

#endif
