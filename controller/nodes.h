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

/* What a node's health is derived from (all borrowed; NULL: not known). */
struct ctl_health_in {
	const char *state;	/* the node's: online, offline, enrolled, revoked */
	const json_t *snapshot; /* so_snapshot() of its facts; NULL: none reported */
	const json_t *ports;	/* ctl_node_port_problems() of it, when derived already */
	const char *signoff_id; /* its cluster's newest sign-off */
	const json_t
		*verdict_node; /* that sign-off's verdict row for it: {result, reasons, rails} */
	const char *deployment_id;  /* its cluster's newest applied (not check-mode) deployment */
	const char *playbook;	    /* that deployment's playbook "NAME VERSION" */
	const char *deploy_state;   /* the node's state in it (NULL: it was not a target) */
	const char *deploy_message; /* the node's message in it */
	const char *failed_step;    /* the first failed step's name on the node, and its message */
	const char *failed_message;
	/* When that sign-off is a revalidation: its regressions that involve the node (one line
	 * each, so_regression_line()), and whether they count (its tolerance regressions: fail)
	 * rather than inform. */
	const json_t *regressions;
	bool regressed;
	/* The health events that count now (ctl_watch_open()'s problems of the node), as they
	 * are: failing for a critical one, degraded for a warning. */
	const json_t *watch;
};

/* A node's health, a pure function of in (docs/rest-api.md, "Node health"): {state: healthy |
 * failing | degraded | unknown, reasons: [text], problems: [{severity: failing | degraded |
 * unknown, source: signoff | regression | deployment | port | rate | pcie | node, device?,
 * text}]}. failing: the newest sign-off fails or excluded it, or regressed on a pair of it, the
 * newest deployment failed on it, or an HCA port is not ACTIVE; degraded: an active port slower
 * than its fastest rails, an HCA's PCIe link below what it is capable of, or a regression that only
 * informs (tolerance inform), and the health events that count (controller/watch.h: an
 * unacknowledged critical one fails the node, a warning of the last hour degrades it); unknown:
 * nothing wrong known, but offline, revoked, never connected or without facts. New reference, or
 * NULL on allocation failure. */
json_t *ctl_node_health(const struct ctl_health_in *in);
/* The problems of a snapshot's HCA ports and PCIe links alone (as ctl_node_health() finds them):
 * a pure function; the listings keep its result by snapshot, so as not to parse every node's
 * snapshot at every request. New reference, or NULL on allocation failure. */
json_t *ctl_node_port_problems(const json_t *snapshot);

/* Every node ordered as the store lists them (cluster, hostname): [{id, hostname, cluster,
 * state, cert_serial, cert_fingerprint, enrolled_at_ms, last_seen_ms, agent_version, facts
 * (only with_facts: ~11 KB a node), summary, signoff: {state: current | stale | uncovered |
 * none, signoff, reasons}, health (ctl_node_health())}]. cluster and state (NULL: any) filter. New
 * reference. */
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
