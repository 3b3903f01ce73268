/* The workload-manager hand-off: a cluster bound to Slurm (scontrol, sinfo, squeue run from the
 * controller's host) or to command hooks (a site's own cordon/uncordon commands) has its bad
 * nodes drained with a reason that starts "railyard:", and resumed only when that reason is
 * still ours. This header is the contract (docs/operations.md, "Maintenance with Slurm"):
 *   - the binding: parsed and validated from its JSON document, stored per cluster, loaded;
 *   - a node's name in the WLM (short host name, or the binding's node_map);
 *   - the operations on one node: query, drain, resume-if-ours. They run commands by absolute
 *     path with an argv (never a shell), with the binding's timeout and output capped, and may
 *     block that long: call them from the WLM worker (or a thread of your own), never from the
 *     engine's tick thread or a request handler.
 * What the controller decides to drain or resume is not done here directly: it is written ahead
 * as a ledger row (store_wlm.h, store_wlm_enqueue()) in the transaction that stores the finding,
 * and the worker (ctl_wlm_*, below) carries the rows out. */
#ifndef RAILYARD_CONTROLLER_WLM_H
#define RAILYARD_CONTROLLER_WLM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ctl_error;
struct ctl_server;
struct store;

/* Every reason we set starts with this; a node whose reason does not is not ours. */
#define WLM_REASON_PREFIX "railyard:"
/* Longest reason we set, in bytes (docs/operations.md: sinfo -R and %50E show the start). */
#define WLM_REASON_MAX 100
/* Longest WLM node name (Slurm's are host-name-like). */
#define WLM_NAME_MAX 64
/* Bounds of the binding's command timeout, in seconds. */
#define WLM_TIMEOUT_MIN_S     1
#define WLM_TIMEOUT_MAX_S     300
#define WLM_TIMEOUT_DEFAULT_S 30
/* Entries of a node_map, arguments of a hook, bytes of a path. */
#define WLM_MAP_MAX  100000
#define WLM_ARGV_MAX 64
#define WLM_PATH_MAX 1024

enum wlm_kind {
	WLM_SLURM = 1, /* scontrol / sinfo / squeue from the controller's host */
	WLM_HOOKS = 2, /* the site's commands (kubectl cordon / uncordon ...) */
};

/* A cluster's binding. Owned strings; free with wlm_binding_free(). */
struct wlm_binding {
	char *cluster;
	enum wlm_kind kind;
	/* WLM_SLURM: the directory holding scontrol, sinfo and squeue (absolute; default
	 * /usr/bin) and the slurm.conf given to them as SLURM_CONF (NULL: their default). */
	char *slurm_bin_dir, *slurm_conf;
	/* WLM_HOOKS: NULL-terminated argv templates (argv[0] absolute); an argument that is
	 * exactly "{node}" or "{reason}" is replaced by the node's name or the reason. drain and
	 * resume are required; state (prints the node's current reason, "" when it is in service)
	 * and jobs (prints one running job per line) are optional. */
	char **hook_drain, **hook_resume, **hook_state, **hook_jobs;
	json_t *node_map; /* {host name: WLM name}; never NULL */
	int timeout_s;
	int64_t updated_at;
	char *updated_by;
};

/* Parse and validate a binding document for cluster (borrowed): {kind: "slurm"|"hooks",
 * slurm: {bin_dir, conf}, hooks: {drain: [argv], resume: [argv], state: [argv], jobs: [argv]},
 * node_map: {host: name}, timeout_s}. Every field checked (paths absolute without "..",
 * argv strings without NUL or control characters, names Slurm-legal, timeout bounded,
 * unknown keys refused); the first problem goes to err (CTL_ERR_INVALID, field like
 * "node_map.gpu-node-03"). *ret (free with wlm_binding_free()) on success. */
__attribute__((warn_unused_result)) int wlm_binding_parse(const json_t *doc, const char *cluster,
							  struct wlm_binding **ret,
							  struct ctl_error *err);
/* The binding as the document wlm_binding_parse() reads (plus cluster, updated_at/by); new
 * reference, NULL on ENOMEM. */
json_t *wlm_binding_json(const struct wlm_binding *b);
void wlm_binding_free(struct wlm_binding *b);

/* The stored binding of cluster: 0 and *ret (free with wlm_binding_free()); -RY_E_NOT_FOUND
 * when the cluster is not bound; store errors. Reads on the store's reader connection. */
__attribute__((warn_unused_result)) int wlm_binding_load(struct store *st, const char *cluster,
							 struct wlm_binding **ret);

/* The WLM's name of a node from its host name: node_map's entry, else the short host name
 * (up to the first dot). 0, or -RY_E_INVALID when the name is not a legal WLM name (then out
 * holds "") or does not fit outlen. Pure. */
__attribute__((warn_unused_result)) int
wlm_node_name(const struct wlm_binding *b, const char *hostname, char *out, size_t outlen);

/* Is name a legal WLM node name: 1..WLM_NAME_MAX of [A-Za-z0-9._-], starting with a letter or
 * digit (what Slurm host lists and Kubernetes node names have in common)? */
bool wlm_name_valid(const char *name);

/* The reason we set: "railyard: SOURCE SOURCE_ID: FINDING" fitted into WLM_REASON_MAX bytes:
 * control characters and quotes become spaces, runs of spaces one, a byte that is not UTF-8
 * '?'; when it is too long the
 * finding is cut at a UTF-8 character boundary and ends "...". The prefix and the id always
 * survive (an id longer than 40 bytes is itself cut). out: at least WLM_REASON_MAX + 1
 * bytes. Pure. */
void wlm_reason_fit(char *out, size_t outlen, const char *source, const char *source_id,
		    const char *finding);

/* A job running on a node. */
struct wlm_job {
	char id[32];
	char user[64];
};

/* What the WLM says about one node now. */
struct wlm_node_state {
	char name[WLM_NAME_MAX + 1];
	char state[32];	  /* the WLM's word, lower case: idle, allocated, mixed, drained,
			     draining, down, ... ("cordoned" / "ready" from hooks) */
	bool drained;	  /* the drain flag is set (drained or draining) */
	char reason[512]; /* "" when none; Slurm's [user@time] suffix removed */
	bool ours;	  /* reason starts with WLM_REASON_PREFIX */
	struct wlm_job
		*jobs; /* running jobs (only when asked for); free with wlm_node_state_done */
	size_t njobs;
};
void wlm_node_state_done(struct wlm_node_state *s);

/* Query one node (and, with jobs, the jobs running on it). Blocks up to the binding's timeout
 * per command. 0 and *ret filled; -RY_E_NOT_FOUND (the WLM does not know the node),
 * -ETIMEDOUT, -RY_E_REFUSED (the command failed: why says how), -RY_E_INVALID (output that
 * does not parse). why (may be NULL) gets one line on failure. Thread-safe. */
__attribute__((warn_unused_result)) int wlm_query(const struct wlm_binding *b, const char *name,
						  bool jobs, struct wlm_node_state *ret, char *why,
						  size_t whylen);

/* Drain a node with reason (already fitted: wlm_reason_fit()). Idempotent (draining a drained
 * node sets the reason again). Errors as wlm_query(). */
__attribute__((warn_unused_result)) int wlm_drain(const struct wlm_binding *b, const char *name,
						  const char *reason, char *why, size_t whylen);

/* What wlm_resume_if_ours() did. */
enum wlm_resume {
	WLM_RESUMED = 1,     /* the reason was ours: resumed */
	WLM_NOT_OURS = 2,    /* drained for another reason (why: that reason): left alone */
	WLM_NOT_DRAINED = 3, /* nothing to resume (already in service) */
};
/* Resume a node only if it is drained with a reason that starts WLM_REASON_PREFIX: it reads
 * the node's current reason first (hooks without a state command: -ENOTSUP, the caller
 * decides from its ledger). *ret says what it did; why gets the admin's reason for
 * WLM_NOT_OURS, the error otherwise. */
__attribute__((warn_unused_result)) int wlm_resume_if_ours(const struct wlm_binding *b,
							   const char *name, enum wlm_resume *ret,
							   char *why, size_t whylen);
/* Resume unconditionally (the hook, or scontrol State=RESUME). Errors as wlm_query(). */
__attribute__((warn_unused_result)) int wlm_resume(const struct wlm_binding *b, const char *name,
						   char *why, size_t whylen);

/* Every node the WLM knows, as {name: {state, drained, reason, ours}} (new reference in *ret):
 * one sinfo call for Slurm; -ENOTSUP for hooks (their state command is per node). */
__attribute__((warn_unused_result)) int wlm_query_all(const struct wlm_binding *b, json_t **ret,
						      char *why, size_t whylen);

/* ---- Parsers (pure; exposed for the unit tests) ---------------------------------------------
 * One line of `sinfo -h -N -o '%N|%T|%E'` into s (name, state, drained, reason, ours);
 * -RY_E_INVALID on anything else. */
__attribute__((warn_unused_result)) int wlm_parse_sinfo_line(const char *line,
							     struct wlm_node_state *s);
/* `squeue -h -o '%i|%u'` output (n bytes) into s->jobs; lines that do not parse are refused
 * (-RY_E_INVALID); at most 4096 jobs. */
__attribute__((warn_unused_result)) int wlm_parse_squeue(const char *out, size_t n,
							 struct wlm_node_state *s);

/* ---- Services (front ends call these; they validate, store, and return data) -------------
 * The binding of cluster as a document (wlm_binding_json()) after storing it (set), reading it
 * (get: CTL_ERR_NOT_FOUND when unbound), removing it (unset); the ledger of cluster (NULL:
 * all) as an array, newest first, state NULL or one of pending, done, failed, not_ours. *ret:
 * new reference. Errors in err. */
__attribute__((warn_unused_result)) int ctl_wlm_binding_set(struct store *st, const char *cluster,
							    const json_t *doc, const char *actor,
							    json_t **ret, struct ctl_error *err);
__attribute__((warn_unused_result)) int ctl_wlm_binding_get(struct store *st, const char *cluster,
							    json_t **ret, struct ctl_error *err);
__attribute__((warn_unused_result)) int ctl_wlm_binding_unset(struct store *st, const char *cluster,
							      const char *actor,
							      struct ctl_error *err);
__attribute__((warn_unused_result)) int ctl_wlm_actions_list(struct store *st, const char *cluster,
							     const char *state, json_t **ret,
							     struct ctl_error *err);

/* ---- The worker (the serving controller) ---------------------------------------------------
 * One thread carries the ledger's pending rows out in order (per node, by id), records each
 * result (done, failed after retries with backoff, not_ours), and refreshes what the WLM says
 * of each bound cluster's nodes (ctl_wlm_nodes()). Kicked by the engine's passes; a
 * controller restarted carries on with the rows still pending. */
struct ctl_wlm;
__attribute__((warn_unused_result)) int ctl_wlm_start(struct ctl_server *srv, struct ctl_wlm **ret);
/* Look at the ledger now (thread-safe; NULL is fine). */
void ctl_wlm_kick(struct ctl_wlm *w);
/* Stop the thread (waits for the command in flight, at most its timeout) and free. NULL ok. */
void ctl_wlm_stop(struct ctl_wlm *w);
/* What the worker last saw of cluster's nodes: {WLM name: {state, drained, reason, ours,
 * seen_at}} (new reference; {} when unbound or not seen yet). Thread-safe. */
json_t *ctl_wlm_nodes(struct ctl_wlm *w, const char *cluster);
/* Add to a node document ({cluster, hostname, ...}, borrowed) what the worker last saw of it in
 * its cluster's WLM: "wlm": {name, state, drained, reason, ours, seen_at} (state "unknown"
 * when the WLM did not list it); nothing when the cluster is not bound or not read yet.
 * O(1) per node; thread-safe. */
void ctl_wlm_annotate(struct ctl_wlm *w, json_t *node);

#endif
