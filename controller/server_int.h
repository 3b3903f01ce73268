/* Internals of the controller's server shared by its files (server.c, enroll.c, session.c) and
 * the REST API it runs: the server's struct, enrollment, the RPC stream ops, the reaper. The
 * engine and its passes never include this: they see the server through controller/session.h. */
#ifndef RAILYARD_CONTROLLER_SERVER_INT_H
#define RAILYARD_CONTROLLER_SERVER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "common/rpc/rpc.h"
#include "controller/engine/engine.h"
#include "controller/events.h"
#include "controller/server.h"
#include "controller/session.h"
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
struct ctl_maint;
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
	struct ctl_maint *maint;	      /* the maintenance pass's state */
	struct ctl_events *events;	      /* what changed, for the REST event stream */
	struct ctl_wlm *_Atomic wlm;	      /* the WLM worker (wlm.h), once started */
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

/* The server cannot go on (database gone or corrupt): log why once and stop `serve`, which
 * exits 1. Thread-safe. */
void ctl_server_fail(struct ctl_server *srv, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

grpc_status_code ctl_enroll(void *userdata, const struct rpc_peer *peer,
			    const ProtobufCMessage *req, ProtobufCMessage **ret_resp,
			    char **ret_msg);

extern const struct rpc_stream_ops ctl_session_ops;

/* Heartbeat reaper pass: end sessions silent for longer than the timeout; periodic refresh. */
void ctl_sessions_reap(struct ctl_server *srv, int64_t now_mono_ms, bool refresh);
/* Drop the session registry and the resume table (shutdown; the fuzz harness between inputs,
 * with the reaper running). */
void ctl_sessions_done(struct ctl_server *srv);

#endif
