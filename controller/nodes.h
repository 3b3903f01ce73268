/* The nodes service: the enrolled nodes as JSON (facts, and each node against its cluster's
 * newest sign-off), one node, revoking one. Returns data, never prints; the command line and
 * the REST API format it. */
#ifndef RAILYARD_CONTROLLER_NODES_H
#define RAILYARD_CONTROLLER_NODES_H

#include <jansson.h>
#include <stdbool.h>

#include "controller/service.h"
#include "controller/store/store.h"
#include "controller/store/store_nodes.h"

/* What the store derives from a node's facts as they are written (store_set_facts_deriver()):
 * facts_summary() and the sign-off snapshot (so_snapshot()). Its version must change whenever
 * either changes what it makes of a document, so that stored rows are derived again
 * (store_nodes_rederive() at serve); test_nodes_derive pins both for a fixture. */
#define CTL_FACTS_DERIVED_VERSION 2
extern const struct store_facts_deriver ctl_facts_deriver;

/* Every node ordered as the store lists them (cluster, hostname): [{id, hostname, cluster,
 * state, cert_serial, cert_fingerprint, enrolled_at_ms, last_seen_ms, agent_version, facts
 * (only with_facts: ~11 KB a node), summary, signoff: {state: current | stale | uncovered |
 * none, signoff, reasons}}]. cluster and state (NULL: any) filter. New reference. */
__attribute__((warn_unused_result)) int ctl_nodes_list(struct store *st, const char *cluster,
						       const char *state, bool with_facts,
						       json_t **ret, struct ctl_error *err);
/* One node by id or unique host name, as ctl_nodes_list() shows it (CTL_ERR_NOT_FOUND). */
__attribute__((warn_unused_result)) int ctl_node_get(struct store *st, const char *id_or_host,
						     json_t **ret, struct ctl_error *err);
/* Revoke a node (store_node_revoke()); *ret {id, state}. CTL_ERR_NOT_FOUND, CTL_ERR_CONFLICT
 * (a host name several nodes share). */
__attribute__((warn_unused_result)) int ctl_node_revoke(struct store *st, const char *id_or_host,
							const char *actor, json_t **ret,
							struct ctl_error *err);

#endif
