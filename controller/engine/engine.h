/* The serving controller's engine. One tick thread runs the registered passes (the rollout,
 * benchmark runs; campaigns next) when kicked or every CTL_ENGINE_TICK_MS and tells them when a
 * node comes online; one ingest worker stores what sessions hand it, in order, through a
 * dispatch table of message handlers that the modules register. Modules know the engine and the
 * session registry; sessions know only the engine. */
#ifndef RAILYARD_CONTROLLER_ENGINE_H
#define RAILYARD_CONTROLLER_ENGINE_H

#include "common/rpc/rpc.h"
#include "railyard/v1/railyard.pb-c.h"

#include <protobuf-c/protobuf-c.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>

/* Passes run at least this often. */
#define CTL_ENGINE_TICK_MS 250
/* Runs start at most this often when kicked: during a large deployment every stored end of a
 * plan kicks, and back-to-back runs (each reads every active deployment's counts) took a
 * fifth of a core at 10,000 nodes (docs/scaling.md). */
#define CTL_ENGINE_KICK_GAP_MS 100

struct ctl_server;
struct ctl_session;
struct ctl_engine;

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

/* The engine cannot go on (its database gone or corrupt): fn(ud, why) is told once per call of
 * ctl_engine_fail(), on the thread that met it (the server stops serving). Set by the owner of
 * the engine before ctl_engine_start(); fn NULL: failures are only logged. */
typedef void (*ctl_engine_fail_fn)(void *ud, const char *why);
void ctl_engine_on_failure(struct ctl_engine *e, ctl_engine_fail_fn fn, void *ud);
/* Report a failure the engine cannot recover from through the callback (none set: logged).
 * Thread-safe; NULL e: logged. */
void ctl_engine_fail(struct ctl_engine *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A pass: run() goes over its work once; node_online() (optional) hears that a node completed
 * its Hello. Both on the tick thread, never concurrently. */
struct ctl_pass {
	const char *name;
	void (*run)(void *ud);
	void (*node_online)(void *ud, const char *node_id);
};

/* Store one message of a session (borrowed) and say what it came to in o (zeroed). On the
 * ingest worker. What it emits to the event stream is published only once it is committed;
 * o->kick asks for the passes to run after the commit. */
typedef void (*ctl_msg_handler)(struct ctl_server *srv, struct ctl_session *s,
				const Railyard__V1__AgentMessage *m, struct ctl_outcome *o);

__attribute__((warn_unused_result)) int ctl_engine_new(struct ctl_server *srv,
						       struct ctl_engine **ret);
/* Register, before ctl_engine_start(): a pass (ud borrowed; up to 8), and the handler of one
 * kind of agent message (each kind once). -ENOSPC, -EEXIST, -EINVAL. */
__attribute__((warn_unused_result)) int ctl_engine_add_pass(struct ctl_engine *e,
							    const struct ctl_pass *p, void *ud);
__attribute__((warn_unused_result)) int ctl_engine_handle(struct ctl_engine *e,
							  Railyard__V1__AgentMessage__BodyCase body,
							  ctl_msg_handler fn);
/* As ctl_engine_handle(), for a handler that reads and writes only through the store's writer
 * connection (what it stores goes through the store's functions that take the writer): the
 * ingest worker may then store a run of such messages in one transaction (group commit, one
 * fsync), each in a savepoint, and acknowledge them after the commit. Other handlers run
 * alone, in their own transactions. */
__attribute__((warn_unused_result)) int
ctl_engine_handle_grouped(struct ctl_engine *e, Railyard__V1__AgentMessage__BodyCase body,
			  ctl_msg_handler fn);
/* Start the tick thread and the ingest worker; the passes run at once (resuming what the
 * database says was in progress). */
__attribute__((warn_unused_result)) int ctl_engine_start(struct ctl_engine *e);

/* Run the passes now (a result arrived, something was created). Thread-safe; NULL is fine. */
void ctl_engine_kick(struct ctl_engine *e);
/* A node completed its Hello: the passes hear it on the tick thread (not after
 * ctl_engine_stop_passes(): dropped). Thread-safe; NULL is fine. */
void ctl_engine_node_online(struct ctl_engine *e, const char *node_id);

/* How long the database must have taken every message before a pass gives up on a node's
 * report: long enough for what waited to be stored, in order. */
#define CTL_STORE_SETTLE_MS 5000
/* Has every message since settle_ms ago been stored as it came (none waits for the database
 * now, none did within settle_ms)? A pass's deadline for a node's report (a benchmark's result,
 * a plan's end) counts only then: a report held while the disk is full, the file system
 * read-only or another process holds the write lock has arrived, it is not missing.
 * Thread-safe; NULL: true. */
bool ctl_engine_store_settled(struct ctl_engine *e, int64_t settle_ms);

/* Does the engine store messages of this kind (a handler is registered)? */
int ctl_engine_handles(struct ctl_engine *e, Railyard__V1__AgentMessage__BodyCase body);
/* Queue a message of s for its handler (takes msg and a reference on s); bytes: its encoded
 * size, handed back to ctl_session_processed(). */
void ctl_engine_submit(struct ctl_engine *e, struct ctl_session *s, ProtobufCMessage *msg,
		       size_t bytes);
/* Messages waiting for the ingest worker now (thread-safe). */
size_t ctl_engine_backlog(struct ctl_engine *e);
/* Queue "s ended: mark its node offline" (takes a reference on s). */
void ctl_engine_offline(struct ctl_engine *e, struct ctl_session *s);

/* Outcome from a store error that is not the message's fault: retry, or (corrupt database)
 * retry while the engine reports the failure (ctl_engine_on_failure(): the server stops). */
void ctl_outcome_store_error(struct ctl_server *srv, struct ctl_outcome *o, int r,
			     const char *what);

/* The ingest latency by kind of message as Prometheus text (ingest.c). */
void ctl_engine_metrics(struct ctl_engine *e, FILE *f);

/* Shutdown, in this order around the RPC server's: stop the tick thread (before the sessions
 * end); store what the ingest worker holds and stop it (after every session ended; later
 * submissions are handled on the caller's thread); free. NULL is fine. */
void ctl_engine_stop_passes(struct ctl_engine *e);
void ctl_engine_stop_ingest(struct ctl_engine *e);
void ctl_engine_free(struct ctl_engine *e);

#endif
