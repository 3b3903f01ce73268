/* `railyard-agent run`: the agent's one long-lived session with the controller. Dials out over
 * mTLS, sends Hello with facts, heartbeats, answers RefreshFacts, and reconnects with jittered
 * exponential backoff after any failure until stopped. */
#ifndef RAILYARD_AGENT_SESSION_H
#define RAILYARD_AGENT_SESSION_H

#include <stddef.h>
#include <stdint.h>

struct agent_session_opts {
	const char *state_dir;
	const char *sysroot;
	const char *controller; /* NULL: from agent.conf */
	int backoff_base_ms;	/* first reconnect delay (default 500) */
	int backoff_max_ms;	/* cap (default 30000) */
	int connect_timeout_ms; /* wait for the channel per attempt (default 10000) */
	int keepalive_ms;	/* silence before a PING to the controller (0: RPC_KEEPALIVE_MS) */
	/* Benchmark control ports the agent serves on, leased one per running server side:
	 * bench_port_lo..bench_port_hi; both 0: an ephemeral port each time. */
	uint16_t bench_port_lo, bench_port_hi;
	/* Bytes of unacknowledged results the outbox keeps before plans and benchmarks wait
	 * (0: OUTBOX_MAX_BYTES). */
	size_t outbox_max;
	/* The health watchers' tick (nodeagent/health.h); 0: AGENT_HEALTH_INTERVAL_MS, < 0: the
	 * watchers are off. */
	int64_t health_interval_ms;
};

struct agent_session;

/* Load the state directory and create the channel. Errors in errbuf. */
__attribute__((warn_unused_result)) int agent_session_new(const struct agent_session_opts *o,
							  struct agent_session **ret, char *errbuf,
							  size_t errlen);
/* Run until agent_session_stop(). Returns 0 after a stop, or a negative error when the
 * controller refused this node for good (revoked, unknown): reconnecting cannot help then. */
int agent_session_run(struct agent_session *s);
/* Ask run() to return (thread-safe, async with respect to run()). */
void agent_session_stop(struct agent_session *s);
void agent_session_free(struct agent_session *s);

#endif
