/* The agents' health watchers, on the controller (docs/health.md): HealthEvent messages
 * validated and stored (the ingest handler), the events that count now per node (for node
 * health, the listings and the portal), a node's events, acknowledging them, and their
 * figures for /metrics. Services return data; the API and the CLI present it. */
#ifndef RAILYARD_CONTROLLER_WATCH_H
#define RAILYARD_CONTROLLER_WATCH_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "controller/service.h"
#include "controller/store/store.h"

struct ctl_engine;

/* A warning counts for this long after it was received (a critical event counts until it is
 * acknowledged). */
#define CTL_WATCH_WARN_WINDOW_MS (60 * 60 * 1000)
/* Open events read per listing (the newest); past this the oldest open ones are not shown. */
#define CTL_WATCH_OPEN_MAX 20000
/* /metrics: nodes named one by one in railyard_node_unhealthy (the rest are counted). */
#define CTL_WATCH_METRIC_NODES_MAX 200

struct ctl_server;

/* Register the HealthEvent handler, and the pass that sends each node its health settings
 * (HealthConfig: the health section of the newest playbook applied to it with one, else the
 * defaults) when it comes online and when a deployment that succeeded on it ends. */
__attribute__((warn_unused_result)) int ctl_watch_register(struct ctl_server *srv,
							   struct ctl_engine *e);

/* The health settings for a node: *ret_json the health section as JSON text ("" for the
 * defaults; caller frees), *ret_from "NAME VERSION" of its playbook ("" for the defaults; caller
 * frees). Playbooks are parsed once (a small cache by content hash). */
__attribute__((warn_unused_result)) int ctl_watch_node_config(struct store *st, const char *node_id,
							      char **ret_json, char **ret_from);

/* The events that count now (unacknowledged critical ones; warnings of the last
 * CTL_WATCH_WARN_WINDOW_MS), by node id: {NODE_ID: [{severity: failing | degraded, source:
 * "watch", kind, device, text, at_ms}]}, newest first. cluster, node_id NULL: every cluster,
 * every node. */
__attribute__((warn_unused_result)) int ctl_watch_open(struct store *st, const char *cluster,
						       const char *node_id, int64_t now_ms,
						       json_t **ret, struct ctl_error *err);

/* A node's events (by id or unique host name), newest first, at most limit:
 * {node, hostname, events: [{id, at_ms, received_ms, kind, severity, source, what, detail,
 * repeats, boot_id, acked_ms?, acked_by?}]}. */
__attribute__((warn_unused_result)) int ctl_watch_node_events(struct store *st,
							      const char *id_or_host, size_t limit,
							      json_t **ret, struct ctl_error *err);

/* Acknowledge every open event of a node: {node, hostname, acknowledged: N}. */
__attribute__((warn_unused_result)) int ctl_watch_ack(struct store *st, const char *id_or_host,
						      const char *actor, json_t **ret,
						      struct ctl_error *err);

/* Prometheus text: railyard_health_events_total{cluster,kind,severity} (a counter),
 * railyard_nodes_health{cluster,state} (nodes with open critical/warning events) and
 * railyard_node_unhealthy{cluster,node} (1 for at most CTL_WATCH_METRIC_NODES_MAX nodes with open
 * critical events, the rest in railyard_node_unhealthy_unlisted{cluster}): series bounded by
 * clusters x kinds x severities plus 200, whatever the fleet's size. */
void ctl_watch_metrics(struct store *st, int64_t now_ms, FILE *f);

#endif
