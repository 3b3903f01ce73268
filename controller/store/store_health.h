/* The store's health events (store_health.c): what the agents' watchers saw (docs/health.md),
 * kept per node with a bound, and acknowledged by operators. */
#ifndef RAILYARD_CONTROLLER_STORE_HEALTH_H
#define RAILYARD_CONTROLLER_STORE_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/store/store.h"

/* Events kept per node: past this the oldest that no longer count (info, warnings, acknowledged
 * ones) are deleted as new ones come; open critical events are never deleted. */
#define STORE_HEALTH_KEEP_PER_NODE 1000
#define STORE_HEALTH_DETAIL_MAX	   1024

/* One event. Strings owned in listings (store_health_events_free()), borrowed when adding. */
struct store_health_event {
	int64_t id;
	char *node_id, *hostname, *cluster; /* listings fill hostname and cluster */
	int64_t at_ms, received_ms;
	char *kind, *severity, *source, *what, *detail, *boot_id;
	int64_t repeats;
	int64_t acked_ms; /* 0: not acknowledged */
	char *acked_by;
};

/* Store ev for node_id (borrowed) in the writer's transaction (a batch of the ingest worker, or
 * its own), and trim the node's events to STORE_HEALTH_KEEP_PER_NODE. A critical event of a node
 * with no other open one also writes a drain ahead into the WLM ledger (source "health"; nothing
 * when its cluster is not bound): the caller kicks the WLM worker after the commit. -EINVAL (a
 * field the schema refuses), -RY_E_DB, ... */
STORE_WUR int store_health_add(struct store *s, const struct store_health_event *ev);

/* The events that count now, for listings at any scale: every unacknowledged critical event and
 * the unacknowledged warnings received since warn_since_ms, of cluster and node_id (NULL: every
 * cluster, every node),
 * newest first, at most limit. Reader connection. */
STORE_WUR int store_health_open(struct store *s, const char *cluster, const char *node_id,
				int64_t warn_since_ms, size_t limit,
				struct store_health_event **ret, size_t *ret_n);

/* The critical events of cluster received after since_ms, acknowledged or not (what makes a
 * sign-off stale), newest first, at most limit. Reader connection. */
STORE_WUR int store_health_critical_since(struct store *s, const char *cluster, int64_t since_ms,
					  size_t limit, struct store_health_event **ret,
					  size_t *ret_n);

/* A node's events, newest first, at most limit (since_ms: received at or after). */
STORE_WUR int store_health_node(struct store *s, const char *node_id, int64_t since_ms,
				size_t limit, struct store_health_event **ret, size_t *ret_n);

/* Acknowledge every open event of node_id (actor, borrowed) with an audit row in the same
 * transaction; *ret_n: how many. */
STORE_WUR int store_health_ack(struct store *s, const char *node_id, const char *actor,
			       int64_t now_ms, int *ret_n);

/* Events per (cluster, kind, severity) received in total, for /metrics: rows of {cluster, kind,
 * severity, count} in *ret (a listing: cluster in .cluster, kind, severity, count in .repeats). */
STORE_WUR int store_health_counts(struct store *s, struct store_health_event **ret, size_t *ret_n);

/* The playbooks applied to node_id with success (not check mode), newest first, at most limit:
 * in each entry .what = "NAME VERSION", .source = its sha256, .detail = its text (an events
 * array, freed with store_health_events_free()). */
STORE_WUR int store_health_node_playbooks(struct store *s, const char *node_id, size_t limit,
					  struct store_health_event **ret, size_t *ret_n);

void store_health_events_free(struct store_health_event *e, size_t n);

#endif
