/* `railyard-controller serve`: the gRPC server for agents (Enroll, Connect), the session
 * registry keyed by node id, and the heartbeat reaper. */
#ifndef RAILYARD_CONTROLLER_SERVER_H
#define RAILYARD_CONTROLLER_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "controller/state.h"

struct ctl_server_config {
	const char *listen;	    /* HOST:PORT, default 0.0.0.0:7443 */
	int heartbeat_interval_ms;  /* told to agents in Welcome (the shortest) */
	int heartbeat_timeout_ms;   /* silence after which a node is offline (at that interval) */
	int max_heartbeat_rate;	    /* heartbeats a second across the fleet (0: no cap) */
	int facts_refresh_ms;	    /* periodic RefreshFacts, 0 = never */
	int threads;		    /* completion-queue threads */
	int cert_days;		    /* validity of node certificates */
	int64_t apply_timeout_ms;   /* a node's time to report a plan's end (0: 30 min) */
	int64_t reconnect_grace_ms; /* after start, offline nodes are waited for this long */
	long expected_agents;	    /* checked against the open-file limit at start (0: none) */
};

struct ctl_server;

/* Heartbeats a second one controller takes from its fleet by default (`--max-heartbeat-rate`):
 * ~160 us of CPU each (a TLS record read, HTTP/2 and the completion queue, and the WINDOW_UPDATE
 * that gRPC 1.51 writes back for it), 300 a second ~5 % of a core; 10,000 agents then heartbeat
 * every 34 s (docs/scaling.md). */
#define CTL_MAX_HEARTBEAT_RATE_DEFAULT 300

/* The longest heartbeat interval a Welcome tells (a dead node is noticed within 3 of them). */
#define CTL_HEARTBEAT_STRETCH_MAX_MS 60000

/* The heartbeat interval to tell a node joining a fleet of `fleet` nodes: base_ms, stretched
 * (up to CTL_HEARTBEAT_STRETCH_MAX_MS, in whole seconds) so that the fleet's heartbeats stay
 * under max_rate a second; max_rate 0: base_ms. A node's silence timeout stretches with it. */
int ctl_heartbeat_interval(int base_ms, int max_rate, long fleet);

/* Start serving with an opened state (borrowed; must outlive the server). Raises the soft
 * open-file limit to the hard one and warns when it is short of cfg->expected_agents. Writes
 * the bound address to <state-dir>/controller.addr. Errors name the cause in errbuf. */
__attribute__((warn_unused_result)) int ctl_server_start(struct ctl_state *state,
							 const struct ctl_server_config *cfg,
							 struct ctl_server **ret, char *errbuf,
							 size_t errlen);
/* Ask every connected agent for fresh facts (thread-safe). Returns how many were asked. */
int ctl_server_refresh_facts(struct ctl_server *srv);
/* Number of sessions that completed Hello (thread-safe). */
int ctl_server_online_count(struct ctl_server *srv);
/* Did the server stop because it could not go on (its database deleted, replaced, truncated
 * or corrupt)? `serve` then exits 1. */
bool ctl_server_failed(struct ctl_server *srv);
/* The WLM worker (controller/wlm/wlm.h); NULL before it started. */
struct ctl_wlm;
struct ctl_wlm *ctl_server_wlm(struct ctl_server *srv);
/* Stop: end all sessions (nodes go offline), stop threads, free. */
void ctl_server_free(struct ctl_server *srv);

#endif
