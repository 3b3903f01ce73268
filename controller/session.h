/* The session interface: what the engine and its passes may ask of the server's sessions and
 * of the server that runs them (its state, engine and event stream), without its internals
 * (server_int.h). The server (server.c, session.c) implements it; the engine, the passes
 * (rollout, campaign, bench, revalidation) and their message handlers call it. */
#ifndef RAILYARD_CONTROLLER_SESSION_H
#define RAILYARD_CONTROLLER_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/rpc/rpc.h"
#include "controller/engine/engine.h"
#include "railyard/v1/railyard.pb-c.h"

#include "proto/railyard/v1/limits.h"

/* Limits on what an agent may send that passes check too (the protocol's are in
 * proto/railyard/v1/limits.h). */
#define CTL_ID_MAX	RY_PROTO_ID_MAX
#define CTL_NAME_MAX	RY_PROTO_STEP_NAME_MAX
#define CTL_STEPS_MAX	RY_PROTO_STEPS_MAX
#define CTL_DIFF_MAX	RY_PROTO_DIFF_MAX
#define CTL_MESSAGE_MAX RY_PROTO_MESSAGE_MAX

struct ctl_server;
struct ctl_session;
struct ctl_state;
struct ctl_events;

/* What the server runs on (borrowed, for the server's life). Thread-safe. */
struct ctl_state *ctl_server_state(struct ctl_server *srv);
struct ctl_engine *ctl_server_engine(struct ctl_server *srv);
struct ctl_events *ctl_server_events(struct ctl_server *srv);

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

/* The sessions' counters (messages received by kind) as Prometheus text. */
void ctl_sessions_metrics(struct ctl_server *srv, FILE *f);

/* True when s is a printable ASCII string of 1..max bytes. */
bool ctl_valid_text(const char *s, size_t max);
/* True when s is a host name: labels of [A-Za-z0-9-], not starting or ending with '-'. */
bool ctl_valid_hostname(const char *s);

#endif
