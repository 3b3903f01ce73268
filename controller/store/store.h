/* The controller's persistent state in one SQLite database: clusters, nodes, enrollment tokens,
 * revoked certificates, the audit log, playbooks, deployments and their results, benchmark
 * runs, campaigns, sign-offs, API tokens. Two connections (a writer and a query-only reader), each
 * behind its own mutex; schema migrations by PRAGMA user_version. Times are unix milliseconds
 * supplied by the caller. */
#ifndef RAILYARD_CONTROLLER_STORE_H
#define RAILYARD_CONTROLLER_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_WUR __attribute__((warn_unused_result))

/* Schema version this program creates and understands. */
#define STORE_SCHEMA_VERSION 15

/* Largest facts document accepted, in bytes. */
#define STORE_FACTS_MAX (1024 * 1024)

/* Largest length of a name, hostname, id, serial, fingerprint or version string. */
#define STORE_TEXT_MAX 255

/* Largest audit detail, in bytes. */
#define STORE_AUDIT_DETAIL_MAX (64 * 1024)

/* Prefix of every enrollment token. */
#define STORE_TOKEN_PREFIX "ry1."

/* Opaque handle. All functions taking a struct store are safe to call from several threads at
 * once (they serialize on the store's mutex), except store_free(). */
struct store;

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

/* One audit row; strings owned, freed by store_audit_entries_free(). target and detail may be
 * NULL. */
struct store_audit_entry {
	int64_t at_ms;
	char *actor, *action, *target, *outcome, *detail;
};

/* Open (creating with mode 0600 if missing) the database at path and bring its schema up to
 * STORE_SCHEMA_VERSION, each missing migration in its own transaction. Sets WAL, foreign keys and
 * a 5 s busy timeout. On success *ret is a new store (free with store_free()).
 * Errors: -EINVAL (NULL argument), -errno from creating the file, -RY_E_CORRUPT (not a SQLite
 * database, or PRAGMA quick_check fails), -RY_E_SCHEMA (the database is newer than this
 * program), -RY_E_DB (any other SQLite failure), -ENOMEM. */
STORE_WUR int store_open(const char *path, struct store **ret);

/* Flags of store_open_flags(). */
#define STORE_OPEN_QUICK_CHECK 1u /* run PRAGMA quick_check (reads the whole file: O(size)) */

/* As store_open(), with flags: 0 for command-line tools that only need the data (no full-file
 * check; no write lock either when the schema is current). */
STORE_WUR int store_open_flags(const char *path, unsigned flags, struct store **ret);

/* The path the store was opened with (borrowed). */
const char *store_path(struct store *s);

/* Close the database and free the store. Accepts NULL. Not thread-safe: no other call on s may
 * be running or follow. */
void store_free(struct store *s);

/* Last SQLite error message recorded on s (any thread), copied into a thread-local buffer that
 * stays valid until this thread calls store_errmsg() again. "" if none; never NULL. */
const char *store_errmsg(struct store *s);

/* The database's PRAGMA user_version (>= 0), or -RY_E_DB. */
STORE_WUR int store_schema_version(struct store *s);

/* Create cluster name if it does not exist yet (created_at = now_ms). name: 1..STORE_TEXT_MAX
 * bytes, else -RY_E_INVALID. -RY_E_DB on failure. */
int store_cluster_ensure(struct store *s, const char *name, int64_t now_ms);

/* In one transaction: ensure cluster, create an enrollment token valid for ttl_ms (> 0) and
 * uses (>= 1) enrollments, and write the audit row 'token.create' (actor "admin"). The token is
 * STORE_TOKEN_PREFIX followed by 64 hex digits (256 random bits); only its SHA-256 (hex) is
 * stored. On success *ret_token is the token (caller frees with free()); it cannot be recovered
 * later. Errors: -EINVAL (bad ttl/uses/NULL), -RY_E_INVALID (bad cluster name), -RY_E_DB,
 * -RY_E_CRYPTO, -errno from the random source. */
STORE_WUR int store_token_create(struct store *s, const char *cluster, int64_t ttl_ms, int uses,
				 int64_t now_ms, char **ret_token);

/* As store_token_create() with the audit actor given (borrowed, 1..STORE_TEXT_MAX bytes). */
STORE_WUR int store_token_create_as(struct store *s, const char *actor, const char *cluster,
				    int64_t ttl_ms, int uses, int64_t now_ms, char **ret_token);

/* Read-only check of a token: on success *ret_cluster is the cluster it is bound to (caller
 * frees with free()); nothing is consumed. Errors: -RY_E_TOKEN_UNKNOWN, -RY_E_TOKEN_REVOKED
 * (v10), -RY_E_TOKEN_EXPIRED (now_ms >= expiry), -RY_E_TOKEN_USED (no uses left; checked after
 * expiry), -EINVAL, -RY_E_DB. */
STORE_WUR int store_token_check(struct store *s, const char *token, int64_t now_ms,
				char **ret_cluster);

/* An enrollment token as listed: never the token; its id is the first 16 hex digits of the
 * token's SHA-256 (what the audit rows name, 12 of them). */
struct store_enroll_token {
	char *id, *cluster;
	int64_t created_at_ms, expires_at_ms, revoked_at_ms; /* revoked 0: not revoked */
	int uses_left, uses_total;
};
/* The newest enrollment tokens (limit 0: 50), newest first (free with
 * store_enroll_tokens_free()). */
STORE_WUR int store_enroll_tokens_list(struct store *s, size_t limit,
				       struct store_enroll_token **ret, size_t *ret_n);
void store_enroll_tokens_free(struct store_enroll_token *v, size_t n);
/* The public id of an enrollment token (what lists show): 0 or -RY_E_CRYPTO. */
int store_enroll_token_id(const char *token, char out[17]);
/* The cluster of the enrollment token whose id is id (caller frees): -RY_E_NOT_FOUND. */
STORE_WUR int store_enroll_token_cluster(struct store *s, const char *id, char **ret_cluster);
/* Revoke the enrollment token whose id is id (16 hex digits), audited as actor; an agent that
 * presents it is refused "enrollment token revoked". 1 revoked, 0 it was revoked already,
 * -RY_E_NOT_FOUND. */
STORE_WUR int store_enroll_token_revoke(struct store *s, const char *id, const char *actor,
					int64_t now_ms);

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

/* Append an audit row. actor, action, outcome: required; target, detail: may be NULL (all
 * borrowed). -EINVAL if a required one is NULL, -RY_E_TOO_BIG if detail is over
 * STORE_AUDIT_DETAIL_MAX or another field over STORE_TEXT_MAX, -RY_E_DB. */
int store_audit(struct store *s, int64_t now_ms, const char *actor, const char *action,
		const char *target, const char *outcome, const char *detail);

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

/* SQLite's data_version of the reader connection: changes whenever any connection (this
 * process's writer or another process) committed since the last call. */
STORE_WUR int store_data_version(struct store *s, int64_t *ret);

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

/* The newest audit rows first (by time, then insertion order), at most limit of them. *ret is
 * a new array of *ret_n entries (NULL when none; free with store_audit_entries_free()).
 * -RY_E_DB, -ENOMEM. */
STORE_WUR int store_audit_list(struct store *s, size_t limit, struct store_audit_entry **ret,
			       size_t *ret_n);

/* Free an array from store_audit_list(). Accepts NULL. */
void store_audit_entries_free(struct store_audit_entry *e, size_t n);

/* ---- Deployments (schema v3) ---------------------------------------------------------------
 * A deployment applies one playbook to the nodes of one cluster in batches. Deployment states:
 * pending -> running -> succeeded | partial (finished with tolerated failures) | failed (stopped,
 * reason says why) | cancelled (v10: a cancel was requested; the nodes it had not sent to are
 * skipped, those running their plan finish it). Node states: waiting -> sent -> succeeded | failed
 * | unreachable, or skipped (never sent because the rollout stopped). */

/* What a new deployment records; all strings borrowed. */
struct store_deployment_new {
	const char *id, *cluster, *actor;
	const char *playbook_name, *playbook_version, *playbook_sha256, *playbook_text;
	const char *policy_json; /* the rollout policy as applied, for display and resume */
	bool check_mode;
};

/* One target node with its batch (0 = first). Strings borrowed. */
struct store_deploy_target {
	const char *node_id, *hostname;
	int batch;
};

struct store_deployment {
	char *id, *cluster, *playbook_name, *playbook_version, *playbook_sha256;
	char *policy_json, *state, *reason; /* reason NULL unless set */
	char *actor;			    /* who made it ("" before v10) */
	bool check_mode;
	int current_batch;
	int64_t created_at_ms, finished_at_ms; /* finished 0 while not finished */
	int64_t cancel_requested_ms;	       /* 0: no cancel requested */
};

struct store_deploy_node {
	char *node_id, *hostname, *state, *message; /* message may be NULL */
	int batch, ok, changed, failed, skipped;
	int64_t sent_at_ms, finished_at_ms;
};

struct store_step_result {
	char *node_id; /* set by store_step_results(); ignored by store_step_result_put() */
	char *name, *status, *diff, *message; /* status: ok, changed, failed, skipped */
	int idx;
	int64_t duration_ms;
};

/* Store the playbook (deduplicated by SHA-256), the deployment (pending) and its nodes
 * (waiting) in one transaction, with an audit row. -RY_E_NOT_FOUND for an unknown cluster,
 * -EINVAL for a missing or over-long field; nothing is stored on any error. */
STORE_WUR int store_deployment_create(struct store *s, const struct store_deployment_new *d,
				      const struct store_deploy_target *targets, size_t n,
				      int64_t now_ms);
STORE_WUR int store_deployment_get(struct store *s, const char *id, struct store_deployment **ret);
void store_deployment_free(struct store_deployment *d);
/* active_only: pending and running, oldest first; otherwise the newest `limit` (0: 50). */
STORE_WUR int store_deployments_list(struct store *s, bool active_only, size_t limit,
				     struct store_deployment ***ret, size_t *ret_n);
void store_deployments_free(struct store_deployment **v, size_t n);
/* Ask the rollout to cancel a pending or running deployment (audited as actor). 1 requested (or
 * already), 0 it has ended, -RY_E_NOT_FOUND. */
STORE_WUR int store_deployment_request_cancel(struct store *s, const char *id, const char *actor,
					      int64_t now_ms);
/* The exact playbook text of a deployment (caller frees). */
STORE_WUR int store_deployment_playbook_text(struct store *s, const char *id, char **ret_text);
/* Set state, reason (NULL keeps it) and current batch; a final state stamps finished_at. */
STORE_WUR int store_deployment_update(struct store *s, const char *id, const char *state,
				      const char *reason, int current_batch, int64_t now_ms);
/* The deployment's nodes ordered by batch, hostname (caller frees with
 * store_deploy_nodes_free()). */
STORE_WUR int store_deploy_nodes(struct store *s, const char *id, struct store_deploy_node **ret,
				 size_t *ret_n);
void store_deploy_nodes_free(struct store_deploy_node *v, size_t n);
/* How a deployment's nodes stand, counted by the database (no row leaves it): all batches, and
 * the batch `batch`. */
struct store_deploy_counts {
	size_t total, failed_total, sent_total; /* failed: failed or unreachable */
	int last_batch;
	size_t waiting, sent, failed; /* in `batch` */
};
STORE_WUR int store_deploy_counts(struct store *s, const char *id, int batch,
				  struct store_deploy_counts *ret);
/* The deployment's nodes in state, of batch (-1: any), sent before sent_before_ms (0: any),
 * ordered by batch, hostname (caller frees with store_deploy_nodes_free()). */
STORE_WUR int store_deploy_nodes_in(struct store *s, const char *id, const char *state, int batch,
				    int64_t sent_before_ms, struct store_deploy_node **ret,
				    size_t *ret_n);
/* One node of a deployment (caller frees with store_deploy_nodes_free(*ret, 1));
 * -RY_E_NOT_FOUND when it is not part of it. */
STORE_WUR int store_deploy_node_get(struct store *s, const char *id, const char *node_id,
				    struct store_deploy_node **ret);
/* Every node still waiting becomes skipped with message; returns how many. */
STORE_WUR int store_deploy_nodes_skip_waiting(struct store *s, const char *id, const char *message,
					      int64_t now_ms);
/* store_deploy_node_sent() for n nodes in one transaction: ret_moved[i] says whether node i
 * was waiting (and is sent now). Nothing is stored on an error. */
STORE_WUR int store_deploy_nodes_sent(struct store *s, const char *id, const char *const *node_ids,
				      const int *plan_steps, size_t n, int64_t now_ms,
				      bool *ret_moved);
/* Move a node that has not finished to state with counts {ok, changed, failed, skipped} (NULL:
 * zeros) and message (NULL keeps it). Returns 1 when it moved, 0 when the node had already
 * finished (late or repeated reports change nothing). */
STORE_WUR int store_deploy_node_update(struct store *s, const char *id, const char *node_id,
				       const char *state, const char *message, const int counts[4],
				       int64_t now_ms);
/* What a report from a node did (store_report_step(), store_report_apply_done()). */
enum store_report {
	STORE_REPORT_STORED = 1,    /* new: stored */
	STORE_REPORT_DUPLICATE = 2, /* the same report again (a re-send after a reconnect): no-op */
};

/* The plan was sent to the node (state waiting -> sent, sent_at = now_ms), with plan_steps
 * steps: the step indexes it may report. 1 when it moved, 0 when the node was not waiting. */
STORE_WUR int store_deploy_node_sent(struct store *s, const char *id, const char *node_id,
				     int plan_steps, int64_t now_ms);

/* A node reports one step of deployment id, in one transaction. Accepted only when the node is
 * one the deployment was sent to (state 'sent') and res->idx is a step of that plan; a step is
 * stored once: the same report again is STORE_REPORT_DUPLICATE (also after the node finished),
 * a different one is refused. Beyond RY_PROTO_RESULT_BYTES_MAX of diffs and messages per node
 * the diff is replaced by a note. Refusals return -RY_E_REFUSED with the reason in why (nothing
 * stored). -RY_E_INVALID for an unknown status; database errors as usual (nothing stored). */
STORE_WUR int store_report_step(struct store *s, const char *id, const char *node_id,
				const struct store_step_result *res, char *why, size_t whylen);

/* A node reports the end of its plan (state succeeded or failed, counts {ok, changed, failed,
 * skipped}, message may be NULL), in one transaction. Accepted only from a node the plan was
 * sent to and still running there, when its step results are all stored and the counts and
 * status agree with them (a plan the agent refused outright: failed, no steps, zero counts).
 * The same end again after it was stored is STORE_REPORT_DUPLICATE; anything else is
 * -RY_E_REFUSED with the reason in why. */
STORE_WUR int store_report_apply_done(struct store *s, const char *id, const char *node_id,
				      const char *state, const char *message, const int counts[4],
				      int64_t now_ms, char *why, size_t whylen);

/* All step results of a deployment ordered by node, index (caller frees). */
STORE_WUR int store_step_results(struct store *s, const char *id, struct store_step_result **ret,
				 size_t *ret_n);
void store_step_results_free(struct store_step_result *v, size_t n);

/* ---- Benchmark runs (schema v4, cancel v5) --------------------------------------------------
 * States: pending -> server_sent -> server_ready (port known) -> client_sent -> succeeded |
 * failed | cancelled (final). The controller drives them; results are the engine's JSON
 * documents. */
struct store_bench_run {
	char *id, *kind, *transport, *client_node, *server_node, *server_address, *params_json;
	char *campaign_id; /* NULL unless a campaign ordered it (v7) */
	char *actor;	   /* who ordered it; NULL for a campaign's runs and before v10 */
	char *cluster;	   /* the client node's cluster (NULL: the node is gone) */
	char *state, *result_json, *server_result_json, *error; /* NULL until set */
	int server_port;
	int64_t deadline_ms, created_at_ms, finished_at_ms;
	int64_t cancel_requested_ms; /* 0: no cancel requested */
};

/* Is this bench state final (succeeded, failed, cancelled)? */
bool store_bench_state_final(const char *state);

/* Store a pending run (strings borrowed). deadline_ms is the whole run's budget. */
STORE_WUR int store_bench_create(struct store *s, const char *id, const char *kind,
				 const char *transport, const char *client_node,
				 const char *server_node, const char *params_json,
				 int64_t deadline_ms, int64_t now_ms);
/* As store_bench_create(), with b's server_address (when not NULL) stored in the same write: a
 * serving controller never sees the run without the address it was ordered with. */
struct store_bench_new;
STORE_WUR int store_bench_create_new(struct store *s, const struct store_bench_new *b,
				     int64_t now_ms);
STORE_WUR int store_bench_get(struct store *s, const char *id, struct store_bench_run **ret);
void store_bench_run_free(struct store_bench_run *b);
/* active_only: not finished, oldest first; otherwise the newest `limit` (0: 50). */
STORE_WUR int store_bench_list(struct store *s, bool active_only, size_t limit,
			       struct store_bench_run ***ret, size_t *ret_n);
void store_bench_runs_free(struct store_bench_run **v, size_t n);
/* Move a run that has not finished: new state, and any of server_address, server_port (> 0),
 * result_json, server_result_json, error that are set (NULL/0 keep). A final state stamps
 * finished_at. Returns 1 when it moved, 0 when the run had already finished. */
STORE_WUR int store_bench_update(struct store *s, const char *id, const char *state,
				 const char *server_address, int server_port,
				 const char *result_json, const char *server_result_json,
				 const char *error, int64_t now_ms);
/* Ask for a run to be cancelled (the serving controller tells the agents and marks it
 * cancelled), audited as actor (NULL: the controller itself, not audited). 1: requested (or
 * already requested), 0: the run has already finished, -RY_E_NOT_FOUND: no such run. */
STORE_WUR int store_bench_request_cancel(struct store *s, const char *id, const char *actor,
					 int64_t now_ms);

/* ---- Validation campaigns (schema v7) --------------------------------------------------------
 * A campaign runs the tests of a playbook's validation section over a cluster's nodes. It stores
 * what its schedule is regenerated from (spec, nodes with rails, seed), a cursor (test, round),
 * and one result row per scheduled slot, inserted when the slot's round starts. States: running
 * -> passed | failed | cancelled | error (final). */
struct store_campaign_new {
	const char *id, *cluster, *actor;
	const char *playbook_name, *playbook_version, *playbook_sha256, *playbook_text;
	const char *spec_json;	   /* the normalized validation spec as run */
	const char *nodes_json;	   /* the nodes with their rails and facts excerpts */
	const char *left_out_json; /* nodes of the cluster left out, with the reason */
	const char *options_json;  /* the request (tests, selector, transport, quick, ...) */
	const char *progress_json; /* per test: rounds (and retest rounds once known) */
	int64_t seed;
};

struct store_campaign {
	char *id, *cluster, *actor, *playbook_name, *playbook_version, *playbook_sha256;
	char *spec_json, *nodes_json, *left_out_json, *options_json, *progress_json, *state;
	char *verdict_json, *error; /* NULL until set */
	int64_t seed;
	int test_idx, round;
	int64_t round_started_ms, cancel_requested_ms, created_at_ms, finished_at_ms; /* 0: not */
};

/* One scheduled slot's result. Strings owned (freed with the array). */
struct store_campaign_row {
	int test_idx, round, slot;
	char *phase;	    /* "run", "retest", "isolated-lat", "congested-bw", ... */
	char *role;	    /* "measure" or "congestor" */
	char *node_a;	    /* client */
	char *node_b;	    /* server (== node_a: loopback) */
	int rail;	    /* -1: not per rail */
	char *bench_id;	    /* NULL until started */
	char *state;	    /* pending, running, done, failed, missing, cancelled */
	char *summary_json; /* metrics, counters, environment (docs/campaigns.md) */
	char *error;
	int64_t started_at_ms, live_at_ms, finished_at_ms;
};

/* Is this campaign state final? Is this row state final (done, failed, missing, cancelled)? */
bool store_campaign_state_final(const char *state);
bool store_campaign_row_final(const char *state);

/* Create a running campaign (and its playbook, once per hash) with an audit row, in one
 * transaction. -RY_E_NOT_FOUND: unknown cluster; nothing stored on any error. */
STORE_WUR int store_campaign_create(struct store *s, const struct store_campaign_new *c,
				    int64_t now_ms);
STORE_WUR int store_campaign_get(struct store *s, const char *id, struct store_campaign **ret);
void store_campaign_free(struct store_campaign *c);
/* active_only: running, oldest first; otherwise the newest `limit` (0: 50). */
STORE_WUR int store_campaigns_list(struct store *s, bool active_only, size_t limit,
				   struct store_campaign ***ret, size_t *ret_n);
void store_campaigns_free(struct store_campaign **v, size_t n);
/* Move the cursor of a running campaign to (test_idx, round) with progress_json (NULL keeps);
 * round_started_at is cleared. 1 moved, 0 not running. */
STORE_WUR int store_campaign_advance(struct store *s, const char *id, int test_idx, int round,
				     const char *progress_json, int64_t now_ms);
/* End a running campaign: state (final), verdict_json and error (either may be NULL). An audit
 * row records it. 1 when it ended now, 0 when it had already ended. */
STORE_WUR int store_campaign_finish(struct store *s, const char *id, const char *state,
				    const char *verdict_json, const char *error, int64_t now_ms);
/* Ask for a cancel, audited as actor (NULL: not audited): 1 requested (or already), 0 already
 * finished, -RY_E_NOT_FOUND. */
STORE_WUR int store_campaign_request_cancel(struct store *s, const char *id, const char *actor,
					    int64_t now_ms);

/* Insert the rows of a round (state pending or missing, as given; other fields as given) and
 * stamp the campaign's round_started_at, in one transaction; rows that exist already are kept
 * (a resumed round). Only while the campaign runs with its cursor at that (test, round):
 * otherwise 0 and nothing is written; 1 when stored. */
STORE_WUR int store_campaign_round_insert(struct store *s, const char *id, int test_idx, int round,
					  const struct store_campaign_row *rows, size_t n,
					  int64_t now_ms);
/* Rows of a campaign: test_idx/round -1 mean all; ordered by test, round, slot. */
STORE_WUR int store_campaign_rows(struct store *s, const char *id, int test_idx, int round,
				  struct store_campaign_row **ret, size_t *ret_n);
void store_campaign_rows_free(struct store_campaign_row *v, size_t n);
/* Rows of a campaign counted per test and state: *ret_v[i] = {test_idx, state, n} (caller frees
 * with free(); state is a fixed-size copy). */
struct store_campaign_count {
	int test_idx;
	char state[16];
	int64_t n;
};
STORE_WUR int store_campaign_counts(struct store *s, const char *id,
				    struct store_campaign_count **ret_v, size_t *ret_n);

/* A pending row starts: in one transaction, the benchmark run that measures it (as
 * store_bench_create(), with campaign_id = id and server_address when not NULL) is stored and the
 * row becomes running with bench_id. 1 started, 0 the row was not pending (nothing stored). */
struct store_bench_new {
	const char *id, *kind, *transport, *client_node, *server_node, *params_json;
	const char *server_address; /* NULL: the server node's address when it is sent */
	int64_t deadline_ms;
	const char *actor; /* who ordered it (audited by store_bench_create_new()); NULL: none */
};
STORE_WUR int store_campaign_row_start(struct store *s, const char *id, int test_idx, int round,
				       int slot, const struct store_bench_new *b, int64_t now_ms);
/* Move a row that is not final: state, and summary_json / error when not NULL; live (a
 * congestor confirmed running) stamps live_at once. A final state stamps finished_at. 1 moved,
 * 0 it was final already. */
STORE_WUR int store_campaign_row_update(struct store *s, const char *id, int test_idx, int round,
					int slot, const char *state, const char *summary_json,
					const char *error, bool live, int64_t now_ms);

/* ---- Sign-off reports (schema v8) ------------------------------------------------------------
 * A sign-off is the exact JSON bytes that were signed (docs/signoff.md) and the detached CMS
 * signature over them (PEM); at most one per campaign. */
struct store_signoff_new {
	const char *id, *cluster, *campaign_id, *kind, *baseline_id; /* baseline_id may be NULL */
	const char *verdict, *sha256, *report, *signature, *actor;
	size_t report_len;	/* report's bytes (it holds no NUL) */
	const char *nodes_json; /* the report's nodes: [{id, hostname, snapshot}] */
	bool acceptance;	/* an acceptance sign-off, not a smoke / baseline report (v14) */
	int excluded;		/* nodes its verdict excluded (v14) */
};

struct store_signoff {
	char *id, *cluster, *campaign_id, *kind, *baseline_id, *verdict, *sha256, *actor;
	char *nodes_json;
	char *report, *signature; /* NULL unless asked for (store_signoff_get(..., true, ...)) */
	size_t report_len;
	int64_t created_at_ms;
	bool acceptance; /* v14; false for reports signed before */
	int excluded;
};

/* Store a sign-off with an audit row, in one transaction. -RY_E_EXISTS when the campaign has one
 * already (nothing stored), -RY_E_NOT_FOUND for an unknown cluster or campaign, -EINVAL for a
 * missing or over-long field. */
STORE_WUR int store_signoff_create(struct store *s, const struct store_signoff_new *n,
				   int64_t now_ms);
/* One sign-off by id, with the report and signature when with_bytes. -RY_E_NOT_FOUND. */
STORE_WUR int store_signoff_get(struct store *s, const char *id, bool with_bytes,
				struct store_signoff **ret);
/* The sign-off of a campaign (without bytes). -RY_E_NOT_FOUND when it has none. */
STORE_WUR int store_signoff_of_campaign(struct store *s, const char *campaign_id,
					struct store_signoff **ret);
/* The newest sign-offs (cluster NULL: of every cluster; limit 0: 50), newest first, without
 * bytes. */
STORE_WUR int store_signoffs_list(struct store *s, const char *cluster, size_t limit,
				  struct store_signoff ***ret, size_t *ret_n);
void store_signoff_free(struct store_signoff *so);
void store_signoffs_free(struct store_signoff **v, size_t n);
/* The text of a stored playbook by its SHA-256 (caller frees). -RY_E_NOT_FOUND. */
STORE_WUR int store_playbook_text_by_sha(struct store *s, const char *sha256, char **ret_text);

/* The latency of the store's write transactions (BEGIN IMMEDIATE to COMMIT, the fsync and any
 * wait for another process's lock included), for /metrics. */
struct ry_hist;
const struct ry_hist *store_tx_latency(const struct store *s);

/* ---- Revalidations (schema v10) ---------------------------------------------------------------
 * A revalidation runs in the serving controller: pending -> configuring (a deployment of the
 * playbook, check mode unless apply) -> validating (the baseline's campaign again, signed and
 * compared with the baseline) -> signed (signoff_id, verdict) | failed (reason) | cancelled. */
struct store_revalidation_new {
	const char *id, *cluster, *baseline_id, *actor;
	const char *playbook;	 /* the playbook to check or apply; NULL: the baseline's */
	const char *checks_json; /* v13: the configuration plan, [{playbook, deployment: null}] */
	bool apply;
	double tolerance_bw_pct, tolerance_lat_pct; /* >= 0; 0: the playbook's or default */
};

struct store_revalidation {
	char *id, *cluster, *baseline_id, *playbook, *state, *actor;
	char *reason, *deployment_id, *campaign_id, *signoff_id, *verdict; /* NULL until set */
	char *checks_json; /* v13: [{playbook, deployment}]; NULL for one from before v13 */
	bool apply;
	double tolerance_bw_pct, tolerance_lat_pct;
	int64_t cancel_requested_ms, created_at_ms, finished_at_ms; /* 0: not (yet) */
};

/* Is this revalidation state final (signed, failed, cancelled)? */
bool store_revalidation_state_final(const char *state);
/* Store a pending revalidation with an audit row, in one transaction. -RY_E_NOT_FOUND for an
 * unknown cluster or a baseline that is not a sign-off of that cluster; -EINVAL for a missing or
 * over-long field; nothing is stored on any error. */
STORE_WUR int store_revalidation_create(struct store *s, const struct store_revalidation_new *n,
					int64_t now_ms);
STORE_WUR int store_revalidation_get(struct store *s, const char *id,
				     struct store_revalidation **ret);
/* active_only: those not ended, oldest first; otherwise the newest `limit` (0: 50). */
STORE_WUR int store_revalidations_list(struct store *s, bool active_only, size_t limit,
				       struct store_revalidation ***ret, size_t *ret_n);
void store_revalidation_free(struct store_revalidation *v);
void store_revalidations_free(struct store_revalidation **v, size_t n);
/* Move a revalidation that has not ended to u->state; u's reason, deployment_id, campaign_id,
 * signoff_id, verdict and checks_json are set when not NULL. A final state stamps finished_at. 1
 * moved, 0 it had ended. */
STORE_WUR int store_revalidation_update(struct store *s, const char *id,
					const struct store_revalidation *u, int64_t now_ms);
/* Ask for a cancel (audited as actor): 1 requested (or already), 0 it has ended,
 * -RY_E_NOT_FOUND. */
STORE_WUR int store_revalidation_request_cancel(struct store *s, const char *id, const char *actor,
						int64_t now_ms);

/* ---- Playbooks uploaded for a cluster (schema v10) --------------------------------------------
 * The text is stored once by its SHA-256 (with deployments' and campaigns' playbooks); an upload
 * records the cluster, who uploaded it and when (again: the newest). */
struct store_playbook_upload {
	char *cluster, *name, *version, *sha256, *actor;
	size_t size; /* bytes of the text */
	int64_t created_at_ms;
};

/* Store text (name, version, sha256 its own) as uploaded for cluster by actor, with an audit
 * row, in one transaction. -RY_E_NOT_FOUND for an unknown cluster, -EINVAL for a bad field. */
STORE_WUR int store_playbook_upload(struct store *s, const char *cluster, const char *name,
				    const char *version, const char *sha256, const char *text,
				    const char *actor, int64_t now_ms);
/* The uploads of one playbook (sha256; every cluster it was uploaded for, by name), or the
 * newest uploads (sha256 NULL; limit 0: 50). An array of *ret_n (free with
 * store_playbook_uploads_free()). */
STORE_WUR int store_playbook_uploads(struct store *s, const char *sha256, size_t limit,
				     struct store_playbook_upload **ret, size_t *ret_n);
void store_playbook_uploads_free(struct store_playbook_upload *v, size_t n);

/* ---- API tokens (schema v9) ------------------------------------------------------------------
 * Bearer tokens of the REST API: "rya1.<id>.<secret>", id 16 hex digits (64 random bits, the
 * token's public name in lists and audit rows), secret 64 hex digits (256 random bits). Only the
 * SHA-256 of the secret is stored (as enrollment tokens), so a token is shown once, when it is
 * made. Each token has a role (admin, integrator, operator, viewer: what it may do is
 * controller/api/authz.h's business, not the store's) and an optional scope: a JSON array of
 * cluster names (NULL: every cluster). */
#define STORE_API_TOKEN_PREFIX "rya1."
/* Longest token name; most clusters in a scope. */
#define STORE_API_NAME_MAX     64
#define STORE_API_CLUSTERS_MAX 64
/* store_api_token_touch() writes last_used_at at most once per this many ms per token. */
#define STORE_API_TOUCH_MS 60000

/* A token as stored (never its secret); strings owned, freed by store_api_token_free(). */
struct store_api_token {
	char *id, *name, *role, *created_by;
	char *clusters_json; /* compact JSON array of names; NULL: every cluster */
	int64_t created_at_ms;
	int64_t expires_at_ms;	 /* 0: never */
	int64_t revoked_at_ms;	 /* 0: not revoked */
	int64_t last_used_at_ms; /* 0: never used (as far as store_api_token_touch() knows) */
};

/* Is name a valid API token name: 1..STORE_API_NAME_MAX of [A-Za-z0-9._-], and not 16 hex
 * digits (an id's form: revoke and get take either)? For callers that check before opening. */
bool store_api_name_ok(const char *name);

/* Make an API token, in one transaction with the audit row 'api_token.create' by actor (target
 * the token id, detail its name, role, scope and expiry). name: as store_api_name_ok(), and
 * unique among the tokens not revoked. role: "admin", "integrator", "operator" or "viewer".
 * clusters_json: NULL (every cluster) or a JSON array of 1..STORE_API_CLUSTERS_MAX distinct cluster
 * names, each checked by the store itself with the rule of ctl_valid_cluster_name() (1-64 of
 * [A-Za-z0-9._-], starting with a letter or digit); the clusters need not exist yet; stored in
 * compact form. ttl_ms: > 0, or 0 for a token that never expires. On success *ret_token is the
 * token and *ret_id (if ret_id is not NULL) its id (caller frees both with free()); the token
 * cannot be recovered later. Errors (nothing stored): -EINVAL (NULL s/ret_token, ttl < 0 or now +
 * ttl overflowing), -RY_E_INVALID (name, role, clusters or actor), -RY_E_EXISTS (a token of that
 * name that is not revoked), -RY_E_DB, -RY_E_CRYPTO, -ENOMEM, -errno of the random source. */
STORE_WUR int store_api_token_create(struct store *s, const char *name, const char *role,
				     const char *clusters_json, int64_t ttl_ms, const char *actor,
				     int64_t now_ms, char **ret_token, char **ret_id);

/* Check a bearer token, read only (the reader connection: no write, no fsync, never waits for a
 * writer). The secret is compared in constant time, and before anything else about the token is
 * told. On success *ret is the token (free with store_api_token_free()); the caller checks its
 * role and scope. Errors, in the order they are tested:
 *   -EINVAL              NULL argument
 *   -RY_E_INVALID        malformed: not "rya1." + 16 + "." + 64 lower-case hex digits
 *   -RY_E_TOKEN_UNKNOWN  no token has that id
 *   -RY_E_TOKEN_SECRET   the id is known, the secret is not its secret
 *   -RY_E_REVOKED        revoked (at any time, before or after now_ms)
 *   -RY_E_TOKEN_EXPIRED  now_ms >= its expiry
 *   -RY_E_DB, -RY_E_CRYPTO, -ENOMEM
 * All of them are 401 to a client; the distinct codes are for logs and tests. */
STORE_WUR int store_api_token_check(struct store *s, const char *token, int64_t now_ms,
				    struct store_api_token **ret);

/* Record that token id was used at now_ms: last_used_at is written only when it is unset or at
 * least STORE_API_TOUCH_MS older than now_ms, and never for a revoked token, so calling this on
 * every request costs one guarded UPDATE on the writer; a caller can skip the call when
 * now_ms - t->last_used_at_ms < STORE_API_TOUCH_MS from store_api_token_check(). Returns 1 when
 * it wrote, 0 when there was nothing to write (recent use, revoked or unknown id), -EINVAL,
 * -RY_E_DB. */
STORE_WUR int store_api_token_touch(struct store *s, const char *id, int64_t now_ms);

/* Look a token up by id, or else by name (the one not revoked, or else the newest revoked one
 * of that name). On success *ret is a new token (free with store_api_token_free()).
 * -RY_E_NOT_FOUND, -EINVAL, -RY_E_DB, -ENOMEM. Read only. */
STORE_WUR int store_api_token_get(struct store *s, const char *id_or_name,
				  struct store_api_token **ret);

/* Every token, revoked and expired ones included, oldest first (then by name). *ret is a new
 * array of *ret_n tokens (NULL when none; free with store_api_tokens_free()). -EINVAL, -RY_E_DB,
 * -ENOMEM. Read only. */
STORE_WUR int store_api_tokens_list(struct store *s, struct store_api_token ***ret, size_t *ret_n);

/* Revoke a token (by id or name, as store_api_token_get()), in one transaction with the audit
 * row 'api_token.revoke' by actor (borrowed, required; target the id, detail the name). Returns
 * 1 when it was revoked now, 0 when it was revoked already (nothing written); in both cases
 * *ret_id, if ret_id is not NULL, is its id (caller frees with free()). -RY_E_NOT_FOUND,
 * -EINVAL, -RY_E_INVALID (actor), -RY_E_DB, -ENOMEM. */
STORE_WUR int store_api_token_revoke(struct store *s, const char *id_or_name, const char *actor,
				     int64_t now_ms, char **ret_id);

/* Free a token, or an array from store_api_tokens_list(). Accept NULL. */
void store_api_token_free(struct store_api_token *t);
void store_api_tokens_free(struct store_api_token **v, size_t n);

/* ---- backup and restore (store_backup.c) ---------------------------------------------------
 * Through SQLite's backup API, on connections of their own (no struct store). */

/* What a database file holds: its schema version and a few row counts. */
struct store_backup_info {
	int schema_version;
	int64_t nodes, deployments, step_results, campaigns, bench_runs;
};

/* Copy the database at db_path into dest, safe while a controller serves it: one read
 * transaction on a read-only connection (a consistent snapshot; under WAL the writer never
 * waits for it, and nothing is written to db_path). dest is written as a temporary beside it,
 * integrity-checked, synced and renamed over dest (an existing file is replaced whole; a failed
 * backup leaves dest as it was); it is a self-contained database (no -wal), mode 0600.
 * *ret_info (may be NULL) describes the copy. Errors (reason in errbuf): -errno, -RY_E_CORRUPT,
 * -RY_E_SCHEMA, -RY_E_DISK_FULL, -RY_E_BUSY, -RY_E_DB. Thread-safe; takes no store lock. */
STORE_WUR int store_backup(const char *db_path, const char *dest,
			   struct store_backup_info *ret_info, char *errbuf, size_t errlen);

/* Check a backup file without changing it: PRAGMA integrity_check, and a schema version this
 * program knows. 0 with *ret_info (may be NULL); -RY_E_CORRUPT (not a database, not ours, or
 * damaged), -RY_E_SCHEMA (newer), -errno; the reason in errbuf. */
STORE_WUR int store_backup_check(const char *path, struct store_backup_info *ret_info, char *errbuf,
				 size_t errlen);

/* Replace the database at db_path (created 0600 when missing) with the backup at src_path,
 * checked first as store_backup_check(). The copy is one write transaction into db_path
 * through its own journal, so a restore that fails or is killed leaves the old database whole.
 * The caller makes sure nobody serves db_path (the serve lock). *ret_info (may be NULL)
 * describes the restored database. Errors as store_backup(). */
STORE_WUR int store_restore(const char *src_path, const char *db_path,
			    struct store_backup_info *ret_info, char *errbuf, size_t errlen);

/* ---- Group commit -----------------------------------------------------------------------
 * Several state changes in one write transaction, so one fsync: the serving controller's
 * ingest worker stores a run of agents' messages so, each in a savepoint of its own, and
 * acknowledges none of them before the commit. Between store_batch_begin() and
 * store_batch_commit()/_rollback() the calling thread holds the writer connection (other
 * threads' writes wait for the end of the batch); the store functions it calls meanwhile run
 * inside the batch (their transactions become savepoints). Reads on the reader connection do
 * not see the batch before it commits: only handlers that read through the writer belong in
 * one. */
STORE_WUR int store_batch_begin(struct store *s);
/* One item: a savepoint, ended with keep (released) or not (rolled back to). */
STORE_WUR int store_batch_item_begin(struct store *s);
void store_batch_item_end(struct store *s, bool keep);
/* Did something fail so that the batch cannot commit (SQLite rolled the transaction back, or
 * a savepoint failed)? */
bool store_batch_broken(struct store *s);
/* Commit (a broken batch is rolled back and fails) and let go of the writer. */
STORE_WUR int store_batch_commit(struct store *s);
void store_batch_rollback(struct store *s);

#endif
