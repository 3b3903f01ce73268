/* Internals of the controller's server shared by its files (server.c, enroll.c, session.c). */
#ifndef RAILYARD_CONTROLLER_SERVER_INT_H
#define RAILYARD_CONTROLLER_SERVER_INT_H

#include <pthread.h>
#include <stdbool.h>

#include "common/rpc/rpc.h"
#include "controller/server.h"
#include "railyard/v1/railyard.pb-c.h"

/* Limits on what an agent may send. */
#define CTL_TOKEN_MAX	 256
#define CTL_HOSTNAME_MAX 253
#define CTL_VERSION_MAX	 64
#define CTL_FACTS_MAX	 (1024 * 1024)
/* Heartbeats check the node (a read) every time but write last_seen (a durable commit, one
 * fsync) at most this often per node; liveness itself is in memory (last_heard_ms), and the
 * session's end writes the time it was last heard. */
#define CTL_LAST_SEEN_SAVE_MS 30000
#define CTL_BOOT_ID_MAX	      64
#define CTL_ID_MAX	      64
#define CTL_NAME_MAX	      255
#define CTL_STEPS_MAX	      10000
#define CTL_DIFF_MAX	      (1024 * 1024)
#define CTL_MESSAGE_MAX	      (64 * 1024)

struct ctl_session;

struct ctl_server {
	struct ctl_state *state;
	struct ctl_server_config cfg;
	struct rpc_server *rpc;
	pthread_mutex_t lock; /* sessions list, resume table, stopping */
	pthread_cond_t cond;
	struct ctl_session *sessions;
	struct ctl_resume *resume;
	bool stopping;
	pthread_t reaper;
	bool reaper_started;
	struct ctl_deployer *deployer;
};

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

/* Benchmark runs (bench.c): a pass of the engine, and the agents' reports. */
void ctl_bench_pass(struct ctl_server *srv);
void ctl_bench_on_ready(struct ctl_server *srv, const char *node_id, const char *bench_id,
			int port);
void ctl_bench_on_result(struct ctl_server *srv, const char *node_id, const char *bench_id, bool ok,
			 const char *result_json);

/* Send a node its plan over its session; -ENOTCONN when it has none. Thread-safe. */
int ctl_session_send_plan(struct ctl_server *srv, const char *node_id, const char *deployment_id,
			  const char *plan_json, bool check_mode);

/* Heartbeat reaper pass: end sessions silent for longer than the timeout; periodic refresh. */
void ctl_sessions_reap(struct ctl_server *srv, int64_t now_mono_ms, bool refresh);
/* Drop the resume table (shutdown). */
void ctl_sessions_done(struct ctl_server *srv);

/* True when s is a printable ASCII string of 1..max bytes. */
bool ctl_valid_text(const char *s, size_t max);
/* True when s is a host name: labels of [A-Za-z0-9-], not starting or ending with '-'. */
bool ctl_valid_hostname(const char *s);

#endif
