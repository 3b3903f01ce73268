/* The store's nodes (store_nodes.c): enrollment of a node, its facts and what is derived from
 * them, its state (online, offline, revoked), the revocation list of certificates. */
#ifndef RAILYARD_CONTROLLER_STORE_NODES_H
#define RAILYARD_CONTROLLER_STORE_NODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/store/store.h"

/* Largest facts document accepted, in bytes. */
#define STORE_FACTS_MAX (1024 * 1024)

/* A node as stored; every string is owned by the struct and freed by store_node_free(). */
struct store_node {
	char *id, *cluster, *hostname, *state, *cert_serial, *cert_fingerprint;
	char *agent_version;		      /* NULL until first Hello */
	char *facts_json;		      /* NULL until first Hello; see store_nodes_brief() */
	int64_t enrolled_at_ms, last_seen_ms; /* last_seen 0 if never */
	/* Derived from the facts when they were written (v11, store_set_facts_deriver()): valid
	 * only when `derived` (the store's deriver has the version that derived them). */
	bool derived;
	int64_t derived_version; /* of the deriver that wrote them; 0: none */
	char *summary, *snapshot_json;
};

/* What the store keeps beside a node's facts, derived from them as they are written, so that
 * listings neither read nor parse the facts (11 KB a node): a one-line summary and a snapshot
 * (JSON text). The store does not know their shapes: its user sets the deriver. `version`
 * names the code that derives them; rows derived by another version (or before v11) count as
 * not derived, and store_nodes_rederive() derives them again. */
struct json_t;
struct store_facts_deriver {
	int version; /* >= 1 */
	/* New strings into *ret_summary and *ret_snapshot (caller frees); <0 on failure. */
	int (*derive)(const struct json_t *facts, char **ret_summary, char **ret_snapshot);
};

/* What an enrollment records; all strings borrowed. peer (the remote address, only written to
 * the audit detail, cut at 255 bytes) may be NULL or ""; the others are required. */
struct store_enroll {
	const char *token, *node_id, *hostname, *cert_serial, *cert_fingerprint, *peer;
};

/* Enroll a node, in ONE transaction: re-check the token (errors as store_token_check()),
 * decrement its uses, insert the node in state 'enrolled' and write the audit row 'node.enroll'
 * (actor "agent", target the node id, detail with cluster, hostname, serial and peer). A
 * non-revoked node with the same hostname in the token's cluster, or a node with the same id, gives
 * -RY_E_EXISTS and nothing changes (the token keeps its use); a revoked node of that hostname is
 * replaced (its row is deleted, its serial stays in the revocation list). On success *ret_cluster,
 * if ret_cluster is not NULL, is the cluster name (caller frees with free()). Other errors: -EINVAL
 * (NULL e or required field), -RY_E_INVALID (empty or over-long field), -RY_E_DB. */
STORE_WUR int store_enroll_node(struct store *s, const struct store_enroll *e, int64_t now_ms,
				char **ret_cluster);

/* Look a node up by id, or else by hostname when that hostname is unique across clusters.
 * On success *ret is a new node (free with store_node_free()). -RY_E_NOT_FOUND, -ENOTUNIQ (no
 * such id and the hostname exists in several clusters), -EINVAL, -RY_E_DB, -ENOMEM. */
STORE_WUR int store_node_get(struct store *s, const char *id_or_hostname, struct store_node **ret);

/* Free a node and its strings. Accepts NULL. */
void store_node_free(struct store_node *n);

/* Only the stored facts of node id (exactly; a JSON object's text, caller frees): one narrow
 * read through the reader connection, for the rollout's render of every node's plan.
 * -RY_E_NOT_FOUND (no such node, or no facts yet), -EINVAL, -RY_E_DB, -ENOMEM. */
STORE_WUR int store_node_facts(struct store *s, const char *id, char **ret_facts);

/* All nodes ordered by cluster name, then hostname. *ret_nodes is a new array of *ret_n nodes
 * (NULL when there are none; free with store_nodes_free()). -RY_E_DB, -ENOMEM. */
STORE_WUR int store_nodes_list(struct store *s, struct store_node ***ret_nodes, size_t *ret_n);

/* Free an array from store_nodes_list(). Accepts NULL. */
void store_nodes_free(struct store_node **nodes, size_t n);

/* The nodes of cluster that are not revoked, ordered by hostname, handed to fn one at a time,
 * facts included, without copying them: n and its strings are the row's own, valid only during
 * the call (never free them). fn returns >= 0 to go on, < 0 to stop (that is returned). Holds
 * the reader connection meanwhile. 0, -EINVAL, -RY_E_DB, -ENOMEM, or fn's error. */
STORE_WUR int store_nodes_scan(struct store *s, const char *cluster,
			       int (*fn)(void *ud, const struct store_node *n), void *ud);

/* Set the deriver (borrowed; it must outlive s) before the first write of facts. */
void store_set_facts_deriver(struct store *s, const struct store_facts_deriver *d);

/* As store_nodes_list(), but a node's facts_json is read only where its derived members are not
 * valid (derived false): a listing of 1,000 nodes reads ~200 KB instead of ~11 MB. */
STORE_WUR int store_nodes_brief(struct store *s, struct store_node ***ret_nodes, size_t *ret_n);

/* Derive again every node whose derived members are missing or from another deriver version
 * (after the upgrade to v11 or to a new deriver), in transactions of a few hundred rows.
 * *ret_n (may be NULL): how many. 0 without a deriver; -RY_E_DB, -ENOMEM. */
STORE_WUR int store_nodes_rederive(struct store *s, size_t *ret_n);

/* The agent said Hello: state 'online', last_seen = now_ms (never moved backwards), and
 * agent_version / facts_json stored when not NULL (NULL keeps the stored value). facts_json must
 * be a JSON object of at most STORE_FACTS_MAX bytes ("" is not); agent_version at most
 * STORE_TEXT_MAX bytes. Nothing is written on error: -RY_E_NOT_FOUND, -RY_E_REVOKED,
 * -RY_E_INVALID (bad facts or version), -EINVAL, -RY_E_DB. */
STORE_WUR int store_node_online(struct store *s, const char *id, const char *agent_version,
				const char *facts_json, int64_t now_ms);

/* Heartbeat: last_seen = now_ms (never moved backwards); a node marked 'offline' (e.g. by
 * store_nodes_expire()) comes back 'online'; 'enrolled' and 'online' keep their state. Errors as
 * store_node_online(). */
STORE_WUR int store_node_touch(struct store *s, const char *id, int64_t now_ms);

/* Replace the node's facts (JSON object, <= STORE_FACTS_MAX bytes) and update last_seen.
 * Errors as store_node_online(). */
int store_node_set_facts(struct store *s, const char *id, const char *facts_json, int64_t now_ms);

/* last_seen of n nodes (ids[i] heard at times_ms[i]) in one transaction: the controller's
 * periodic write of when each connected node was last heard. Revoked nodes are skipped. */
STORE_WUR int store_nodes_seen(struct store *s, const char *const *ids, const int64_t *times_ms,
			       size_t n);

/* Ids of every revoked node (caller frees with store_ids_free()). Read only. */
STORE_WUR int store_nodes_revoked(struct store *s, char ***ret_ids, size_t *ret_n);
void store_ids_free(char **ids, size_t n);

/* Read only (no write, no fsync): 0 when the node exists and is not revoked, -RY_E_REVOKED,
 * -RY_E_NOT_FOUND, -EINVAL, -RY_E_DB. For heartbeats between two store_node_touch() calls. */
STORE_WUR int store_node_check(struct store *s, const char *id);

/* The node's session ended: state 'offline', last_seen = now_ms (the time it was last heard;
 * never moved backwards). A revoked node stays 'revoked' and this returns 0 without writing.
 * -RY_E_NOT_FOUND, -EINVAL, -RY_E_DB. */
int store_node_offline(struct store *s, const char *id, int64_t now_ms);

/* Heartbeat reaper: every 'online' node whose last_seen < older_than_ms becomes 'offline'; on
 * success *ret_count (if not NULL) is how many. -RY_E_DB. */
STORE_WUR int store_nodes_expire(struct store *s, int64_t older_than_ms, int64_t now_ms,
				 int *ret_count);

/* At controller start: every 'online' node becomes 'offline' (no session survives a restart).
 * -RY_E_DB. */
int store_nodes_all_offline(struct store *s, int64_t now_ms);

/* Revoke a node (by id, or unique hostname as store_node_get()), in one transaction: state
 * 'revoked', revoked_at = now_ms, its certificate serial into the revocation list, audit row
 * 'node.revoke' by actor (borrowed, required). Revoking a revoked node succeeds and writes
 * nothing. On success *ret_node_id, if not NULL, is the node id (caller frees with free()).
 * -RY_E_NOT_FOUND, -ENOTUNIQ, -EINVAL, -RY_E_DB, -ENOMEM. */
STORE_WUR int store_node_revoke(struct store *s, const char *id_or_hostname, const char *actor,
				int64_t now_ms, char **ret_node_id);

/* 1 if the certificate serial (hex as the CA prints it; compared case-insensitively) is
 * revoked, 0 if not, -EINVAL or -RY_E_DB. */
STORE_WUR int store_cert_is_revoked(struct store *s, const char *serial_hex);

#endif
