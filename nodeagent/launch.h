/* The agent's side of the launch relay of collective runs (docs/bench.md, "Launching collectives
 * without SSH"). On the launcher node: a unix socket (<state dir>/launch.sock, 0600, same uid
 * only) where `railyard-agent rsh` asks for one Open MPI daemon on a host; the request goes to the
 * controller as LaunchRequest and the rsh waits for the LaunchReply. On every node: a LaunchOrder
 * starts the run's orted (checked again, once per run) without a shell, in its own process
 * group, and answers LaunchStatus; the group is killed at the order's deadline, on Cancel of the
 * run and when the agent stops. Launch messages are never kept in the outbox: a session that
 * drops fails what waits. */
#ifndef RAILYARD_AGENT_LAUNCH_H
#define RAILYARD_AGENT_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "railyard/v1/railyard.pb-c.h"

/* The environment variables `railyard-agent rsh` reads (set by the collective job for mpirun). */
#define AGENT_LAUNCH_ENV_JOB   "RAILYARD_JOB"
#define AGENT_LAUNCH_ENV_TOKEN "RAILYARD_JOB_TOKEN"
#define AGENT_LAUNCH_ENV_SOCK  "RAILYARD_LAUNCH_SOCK"
#define AGENT_LAUNCH_SOCK      "launch.sock"
/* How long rsh waits for the controller's answer. */
#define AGENT_LAUNCH_WAIT_MS 30000
/* Daemons one agent runs at once (one per collective run). */
#define AGENT_LAUNCH_DAEMONS 16

struct agent_launch_opts {
	const char *state_dir; /* where launch.sock is made */
	const char *node_id;   /* RAILYARD_NODE of the daemons */
	const char *orted;     /* NULL: /usr/bin/orted */
};

struct agent_launch;

/* Make the socket and start its thread (all strings copied). Errors in err. */
__attribute__((warn_unused_result)) int agent_launch_new(const struct agent_launch_opts *o,
							 struct agent_launch **ret, char *err,
							 size_t errlen);
/* Kill every daemon's group, answer the waiting rsh, stop, free. NULL is fine. */
void agent_launch_free(struct agent_launch *l);

/* "<this program's absolute path> rsh": plm_rsh_agent, as the collective job passes it to mpirun
 * and as a daemon's command line must name it. Static storage; NULL when /proc/self/exe cannot
 * be read. */
const char *agent_launch_relay(void);

/* Session thread, once welcomed: send what waits (send: < 0 when the stream failed; what was
 * not sent is dropped by agent_launch_disconnected() when the session ends). */
void agent_launch_flush(struct agent_launch *l,
			int (*send)(void *ud, Railyard__V1__AgentMessage *m), void *ud);
/* Is something waiting to be sent or answered? (the session polls briskly then) */
bool agent_launch_busy(struct agent_launch *l);
/* The session ended: what waits to be sent is dropped and every waiting rsh is told so. */
void agent_launch_disconnected(struct agent_launch *l);
/* The controller's messages (borrowed). */
void agent_launch_on_order(struct agent_launch *l, const Railyard__V1__LaunchOrder *m);
void agent_launch_on_reply(struct agent_launch *l, const Railyard__V1__LaunchReply *m);
/* Cancel of a bench run: kill its daemon's group here. 1 one ran, 0 none. */
int agent_launch_cancel(struct agent_launch *l, const char *bench_id);
/* How many daemons of run bench_id the controller started for this launcher so far, and when
 * the last one was (monotonic ms; 0: none). Thread-safe. */
void agent_launch_stats(struct agent_launch *l, const char *bench_id, unsigned *ret_daemons,
			int64_t *ret_last_ms);

/* Start path with argv and envp (borrowed, NULL-terminated) without a shell, in a process group
 * of its own, stdin from /dev/null, stdout and stderr to out_fd/err_fd (-1: inherited). */
__attribute__((warn_unused_result)) int agent_spawn_group(const char *path, char *const argv[],
							  char *const envp[], int out_fd,
							  int err_fd, pid_t *ret_pid);

/* `railyard-agent rsh HOST ARGS...` (argv[0] "rsh"): ask the launcher's agent for the daemon.
 * Exit status 0 started, 1 refused or failed (the reason on stderr), 2 usage. */
int agent_rsh_main(int argc, char **argv);

#endif
