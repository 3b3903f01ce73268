/* A serving controller in one process for the fuzz targets that talk to it: a real state
 * directory (CA, SQLite store) on tmpfs, the real server with its engine, sessions and handlers,
 * but no gRPC: rpc_server_start() and the server-side stream calls are replaced (ld --wrap) by
 * an in-memory stream that records what the controller sends. Two nodes are enrolled through
 * the real Enroll handler and connected; a deployment (plan sent to A), and three benchmark
 * runs in three states are set up through the real services and passes. Then the engine's
 * passes and ingest worker are stopped, so that every message is stored on the caller's thread
 * (engine.h: "later submissions are handled on the caller's thread"), and the database is kept
 * as a snapshot that fuzz_ctl_reset() restores before each input (through SQLite's backup
 * API), so that an input meets the same state whatever ran before it. */
#ifndef RAILYARD_FUZZ_CTL_H
#define RAILYARD_FUZZ_CTL_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "common/rpc/rpc.h"
#include "controller/server_int.h"
#include "railyard/v1/railyard.pb-c.h"

/* The fake server-side stream (common/rpc's struct rpc_stream is opaque; this one is ours). */
struct rpc_stream {
	int refs;
	void *data;
	struct rpc_peer peer;
	bool finished; /* rpc_stream_finish() was called */
	grpc_status_code code;
	unsigned resumed;  /* rpc_stream_resume() calls */
	uint64_t last_seq; /* of the controller messages sent on it */
	uint64_t last_ack;
	unsigned sent;	    /* messages sent on it */
	bool welcomed;	    /* a Welcome was sent on it (a HealthConfig may follow at once, from the
			     * engine's thread) */
	size_t msg_size;    /* the encoded size of the message being delivered */
	int retry_after_ms; /* what a refusal asked the agent to wait */
};

/* What was set up; ids are the controller's own. */
struct fuzz_ctl {
	char *dir;
	struct ctl_state *state;
	struct ctl_server *srv;
	char node[2][64];    /* node A (gpu-node-01, h200-ib facts), node B (gpu-node-02) */
	char *cert[2];	     /* their certificates (PEM) */
	char *facts[2];	     /* their facts (JSON text) */
	char deployment[32]; /* a deployment: node A was sent its plan, nothing reported */
	char bench[3][32];   /* B->A client_sent, A->B client_sent, B->A server_sent */
	char *token;	     /* a valid enrollment token (one use left) */
	char *csr;	     /* a valid certificate request */
	json_t *plan;	     /* the plan node A was sent */
};

/* Set up once (aborts on failure); with_api also starts the REST API on the state directory's
 * unix socket. */
struct fuzz_ctl *fuzz_ctl_setup(bool with_api);
/* Put the database back as it was after the setup, and forget per-input throttling. */
void fuzz_ctl_reset(struct fuzz_ctl *c);

/* A stream as gRPC would open it for node i (0 or 1); NULL when the controller refused it. */
struct rpc_stream *fuzz_ctl_open(struct fuzz_ctl *c, int i);
/* Hand one message (taken) to the session as gRPC would after decoding it. Returns false when
 * the stream has ended (the controller finished it): gRPC delivers nothing more then. */
bool fuzz_ctl_deliver(struct fuzz_ctl *c, struct rpc_stream *st, ProtobufCMessage *msg);
/* The client went away (or the stream ended): closed() as gRPC calls it, then release. */
void fuzz_ctl_close(struct fuzz_ctl *c, struct rpc_stream *st, bool cancelled);

/* Substitute a placeholder for what the setup made: "@N0"/"@N1" node ids, "@D" the deployment,
 * "@B0".."@B2" the benchmark runs, "@T" the token, "@C" the CSR, "@F0"/"@F1" the nodes'
 * facts, "@S0".."@S99" the names of the plan's steps. Anything else is returned as is. */
const char *fuzz_ctl_subst(const struct fuzz_ctl *c, const char *s);
/* len bytes of s with every "@N0", "@N1", "@D", "@B0".."@B2", "@T" in them replaced; a new
 * NUL-terminated string of *ret_len bytes (caller frees). */
char *fuzz_ctl_subst_all(const struct fuzz_ctl *c, const char *s, size_t len, size_t *ret_len);

#endif
