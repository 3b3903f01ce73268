/* Playbooks: the YAML language that describes how to bring a node to a wanted state (parse,
 * validate with FILE:LINE:COL diagnostics, render ${facts...}/${vars...} into a plan JSON) and the
 * step schema table shared by the controller and the agent. Reference: docs/playbooks.md. */
#ifndef RAILYARD_PLAYBOOK_H
#define RAILYARD_PLAYBOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#define PB_WUR __attribute__((warn_unused_result))

/* Largest playbook accepted by playbook_load()/playbook_parse(), in bytes. */
#define PB_MAX_SIZE (1024 * 1024)
/* Diagnostics kept per pb_diags; later ones are counted in pb_diags.dropped. */
#define PB_MAX_DIAGS 100
/* Version of the plan JSON document ("schema" member). */
#define PB_PLAN_SCHEMA 1

/* ---- Diagnostics ---------------------------------------------------------------------------- */

/* One error: file is the display name given to the parser, line and col are 1-based. */
struct pb_diag {
	char *file;
	int line;
	int col;
	char *message;
};

/* A list of diagnostics, embedded by the caller: pb_diags_init() then pb_diags_done().
 * Functions that take a struct pb_diags * append to it (they never clear it); NULL is allowed
 * where documented and then diagnostics are dropped. Not thread-safe (one list per caller). */
struct pb_diags {
	struct pb_diag *items; /* in the order found; within a pass, in document order */
	size_t count;
	size_t dropped; /* errors past PB_MAX_DIAGS (or lost to allocation failure) */
};

void pb_diags_init(struct pb_diags *d);
/* Free every entry; d may be NULL. The list is empty (re-usable) afterwards. */
void pb_diags_done(struct pb_diags *d);
/* Append "file:line:col: message" (printf format). Allocation failure counts as dropped. */
void pb_diags_add(struct pb_diags *d, const char *file, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* Print one "FILE:LINE:COL: message" line per diagnostic to f (plus "N more errors" if any were
 * dropped). d and f are borrowed. */
void pb_diags_print(const struct pb_diags *d, FILE *f);

/* ---- Step schema ---------------------------------------------------------------------------- */

/* Value types of step parameters, as they appear in a RENDERED PLAN (JSON):
 * STRING          JSON string. In YAML any scalar is accepted and kept as its text
 *                 (mode: 0644 -> "0644", version: 24.10 -> "24.10").
 * INT             JSON integer (YAML plain integer).
 * BOOL            JSON true/false (YAML plain true/false).
 * LIST_OF_STRING  JSON array of strings (YAML sequence of scalars).
 * LIST_OF_INT     JSON array of integers.
 * MAP_OF_SCALAR   JSON object whose values are strings; YAML scalars are kept as their text, a
 *                 whole-string reference that yields a number/boolean is stringified
 *                 (integers in decimal, booleans as "1"/"0").
 * LIST_OF_MAP     JSON array of objects.
 * MAP             JSON object (any content).
 * ANY             any JSON value; YAML plain scalars are typed: null/~ -> null, true/false ->
 *                 bool, integers -> integer, everything else -> string (24.10 stays "24.10").
 * In YAML, a string that is exactly one reference ("${facts.x}") is accepted for any type and
 * checked after rendering. */
enum pb_type {
	PB_STRING,
	PB_INT,
	PB_BOOL,
	PB_LIST_OF_STRING,
	PB_LIST_OF_INT,
	PB_MAP_OF_SCALAR,
	PB_LIST_OF_MAP,
	PB_MAP,
	PB_ANY,
};

/* One parameter of a step type. A field with def != NULL is optional in the playbook but ALWAYS
 * present in a plan made by playbook_render() (def is its JSON text, e.g. "\"present\"", "false")
 * and required by playbook_plan_validate(). */
struct pb_field {
	const char *key;
	enum pb_type type;
	bool required;
	const char *def;
	const char *help;
};

/* One step type: fields ends with an entry whose key is NULL. check: the type's own rules on
 * its params once their types are right (enums, formats, names passed to tools), with (plan)
 * or without defaults filled in; -RY_E_INVALID with the offending key in *ret_key (may be
 * NULL) and the reason in buf. */
struct pb_step_schema {
	const char *type;
	const struct pb_field *fields;
	const char *help;
	int (*check)(const json_t *params, bool plan, const char **ret_key, char *buf, size_t len);
};

/* The table of step types ("assert", "package", "kmod", "sysctl", "file", "nccl", "ucx", "mpi",
 * "service", "roce_qos", "command", "repo", "hca_firmware", "link", "reboot"), in that order,
 * ending with an entry whose type is NULL. Static, read-only, thread-safe. */
extern const struct pb_step_schema pb_step_schemas[];

/* The schema of a step type, NULL if unknown. */
const struct pb_step_schema *pb_step_schema_find(const char *type);
/* The field of a schema, NULL if unknown. */
const struct pb_field *pb_step_field_find(const struct pb_step_schema *s, const char *key);

/* Default paths filled in by playbook_render() (also in the table). */
#define PB_SYSCTL_DEFAULT_FILE	   "/etc/sysctl.d/90-railyard.conf"
#define PB_NCCL_DEFAULT_PATH	   "/etc/nccl.conf"
#define PB_UCX_DEFAULT_PATH	   "/etc/ucx/ucx.conf"
#define PB_MPI_DEFAULT_PATH	   "/etc/openmpi/openmpi-mca-params.conf"
#define PB_COMMAND_DEFAULT_TIMEOUT "5m"
/* The `reboot` step: how long a node has to come back (default, and the most a playbook may
 * say). */
#define PB_REBOOT_DEFAULT_TIMEOUT "15m"
#define PB_REBOOT_MAX_TIMEOUT_MS  (24LL * 3600 * 1000)

/* ---- Playbooks --------------------------------------------------------------------------------
 */

struct playbook;

/* Rollout policy. For batch and for max_fail exactly one of count/percent is >= 0, the other is
 * -1. Defaults (Ansible-like): batch 100% (all targeted nodes at once), max_fail 0 (the first
 * failed node stops the rollout), canary 0 (no canary batch), pause 0. */
struct pb_rollout {
	int batch_count;      /* >= 1 nodes per batch, or -1 */
	int batch_percent;    /* 1..100 percent of the targeted nodes (rounded down, >= 1), or -1 */
	int max_fail_count;   /* >= 0 failed nodes tolerated over the rollout, or -1 */
	int max_fail_percent; /* 0..100 percent of the targeted nodes, or -1 */
	int canary;	      /* size of a first batch that must fully succeed; 0 = none */
	int64_t pause_ms;     /* pause between batches */
};

/* Parse and validate a playbook from memory. text need not be NUL-terminated (len bytes,
 * borrowed); display_name (borrowed) is the FILE in diagnostics. Everything that can be checked
 * without facts is checked: YAML syntax, one document, no aliases/tags, duplicate keys, unknown
 * top-level/step/condition keys, unknown step types, wrong value types, missing required fields,
 * duplicate step names, per-type rules, reference syntax, references to undefined vars, cycles
 * between vars, rollout percentages/durations. ALL errors are appended to d (may be NULL).
 * On success *ret_pb is a new playbook (playbook_free()).
 * Errors: -RY_E_TOO_BIG (over PB_MAX_SIZE, diagnostic at 1:1), -RY_E_INVALID (see d), -ENOMEM.
 * Thread-safe (no global state). */
PB_WUR int playbook_parse(const char *text, size_t len, const char *display_name,
			  struct playbook **ret_pb, struct pb_diags *d);

/* playbook_parse() on the contents of path, which is also the display name. Read errors give
 * -errno and a diagnostic "path:1:1: cannot read: ..."; -RY_E_TOO_BIG over PB_MAX_SIZE. */
PB_WUR int playbook_load(const char *path, struct playbook **ret_pb, struct pb_diags *d);

/* Free a playbook; NULL is fine. */
void playbook_free(struct playbook *pb);

/* Accessors: borrowed, valid until playbook_free(). description is "" when absent. version is
 * the text of the version scalar. sha256 is the lower-case hex SHA-256 of the exact text parsed.
 * Thread-safe on a playbook nobody frees concurrently. */
const char *playbook_name(const struct playbook *pb);
const char *playbook_version(const struct playbook *pb);
const char *playbook_description(const struct playbook *pb);
const char *playbook_sha256(const struct playbook *pb);
/* target.cluster, NULL when the playbook applies to any cluster. */
const char *playbook_target_cluster(const struct playbook *pb);
/* target.selector as a JSON array of conditions (see playbook_cond_eval); borrowed; an empty
 * array when absent. */
const json_t *playbook_target_selector(const struct playbook *pb);
const struct pb_rollout *playbook_rollout(const struct playbook *pb);
/* The validation section, normalized, as JSON, borrowed; an empty object when absent:
 * {transport, tests: [{name, kind, pattern, per_rail, op, size, duration_s, iters, qps, bidir,
 * mem, gpu? | congestors, victims, fraction | (kind gpu) size, repeats, h2d_min, d2h_min,
 * d2d_min; line}], acceptance: [{metric, test, field, op, value, relative?, message?, line}]}.
 * Shape in docs/playbooks.md; not rendered. */
const json_t *playbook_validation(const struct playbook *pb);
/* The health section (docs/playbooks.md, "health"; docs/health.md), as the JSON object the
 * controller sends to the agents' health watchers; borrowed, never NULL (a playbook without the
 * section gives the defaults). Every default is filled in except the port rules and Xid
 * severities, which are overrides of the agent's own tables (docs/health.md):
 *   {version: 1, interval_s: 10,
 *    ports: {COUNTER: {warning, critical}},                 errors a minute; 0: level unused
 *    xid: {critical: [N], warning: [N], ignore: [N]},
 *    gpu: {ecc_corrected_per_min: {warning, critical},
 *          throttle: {hw_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown:
 *                     "warning" | "critical" | "ignore"},
 *          nvlink: {expected: -1 (the links up at the watcher's start) | 0-18,
 *                   crc_per_min, replay_per_min, recovery_per_min: {warning, critical}}},
 *    readiness: {require: ["fabric_manager" | "gpudirect_rdma" | "gds"],
 *                gds: {cufile, gdscheck, gdscheck_timeout_s, expect: {"dotted.key": value},
 *                      supported: ["NVMe", ...]}}}
 * "gpu" is what railyard-agent's GPU watcher reads (gpuwatch_config_parse), "readiness" what its
 * readiness checks read (readiness_config_check). At most PB_HEALTH_JSON_MAX bytes as JSON. */
#define PB_HEALTH_SCHEMA	       1
#define PB_HEALTH_JSON_MAX	       16384
#define PB_HEALTH_INTERVAL_S	       10
#define PB_HEALTH_MAX_PORT_RULES       32
#define PB_HEALTH_MAX_XIDS	       64
#define PB_HEALTH_MAX_EXPECT	       32
#define PB_HEALTH_MAX_SUPPORTED	       16
#define PB_HEALTH_MAX_VALUE	       1024
#define PB_HEALTH_ECC_CORRECTED_WARN   100
#define PB_HEALTH_NVLINK_CRC_WARN      60
#define PB_HEALTH_NVLINK_CRC_CRIT      6000
#define PB_HEALTH_NVLINK_REPLAY_WARN   60
#define PB_HEALTH_NVLINK_RECOVERY_WARN 1
#define PB_HEALTH_NVLINK_RECOVERY_CRIT 10
#define PB_HEALTH_CUFILE	       "/etc/cufile.json"
#define PB_HEALTH_GDSCHECK	       "/usr/local/cuda/gds/tools/gdscheck"
#define PB_HEALTH_GDSCHECK_TIMEOUT_S   30
const json_t *playbook_health_json(const struct playbook *pb);
/* Whether the playbook has a health section (playbook_health_json() is the defaults otherwise). */
bool playbook_has_health(const struct playbook *pb);
/* Whether FIELD is a metric a test of KIND (lat, bw, congestion, gpu) measures; counters.NAME is
 * one for every kind. */
bool pb_metric_ok(const char *kind, const char *field);
/* Number of steps, and the name/type of step i (borrowed; NULL when i is out of range). */
size_t playbook_step_count(const struct playbook *pb);
const char *playbook_step_name(const struct playbook *pb, size_t i);
const char *playbook_step_type(const struct playbook *pb, size_t i);
/* The timeout of step i when it is a `reboot` step (its params.timeout, the default when it has
 * none, PB_REBOOT_MAX_TIMEOUT_MS when it is a reference only a node's render resolves), else -1.
 * What the controller allows a rebooting node. */
int64_t playbook_step_reboot_timeout_ms(const struct playbook *pb, size_t i);

/* Whether a node is targeted: cluster (borrowed, may be NULL = unknown) equals target.cluster
 * (or the playbook names none), and every selector condition holds on facts (borrowed; node
 * labels, if the caller has them, are looked up as facts.labels.KEY). A condition that cannot
 * be evaluated (missing fact, bad regex) counts as false. */
bool playbook_target_matches(const struct playbook *pb, const char *cluster, const json_t *facts);

/* Render the playbook against one node's facts (borrowed JSON object) into a new plan
 * (*ret_plan, json_decref()). Every string in vars and in the step parameters is substituted;
 * vars are rendered first, on demand (a var may use facts and other vars). The plan is then
 * checked with the same rules as playbook_plan_validate() so that a reference that yields the
 * wrong type is reported at its place. ALL errors are appended to d (may be NULL) as
 * FILE:LINE:COL of the string that holds the reference, e.g.
 *   "pb.yaml:12:20: undefined reference \"facts.ofed.version\"".
 * Errors: -RY_E_INVALID (see d), -ENOMEM. Thread-safe (the playbook is only read).
 *
 * PLAN JSON (what the agent receives; schema version PB_PLAN_SCHEMA):
 *   {
 *     "schema": 1,
 *     "name": "h200-ndr-ib", "version": "1.0", "sha256": "<hex of the playbook text>",
 *     "steps": [
 *       { "name": "step name (unique)",
 *         "type": "nccl",                      // a pb_step_schemas type
 *         "continue_on_error": false,          // always present
 *         "when": { condition },               // only when the playbook has one
 *         "params": { ... }                    // exactly the schema's keys, rendered and typed
 *       }, ...
 *     ]
 *   }
 * params hold every key of the step's schema that the playbook sets, plus every key that has a
 * default (filled in). Exceptions: for "file", a "template" is rendered and delivered as
 * "content" (the plan never has "template"); "content" is delivered verbatim.
 * A condition (assert "that" entries, "when", target selector) is
 *   { "fact": "rdma.devices[*].ports[*].state",  // fact path, NOT rendered (agent-side facts)
 *     "op": "==", "value": <rendered JSON value>,
 *     "quantifier": "all" | "any" | "none",       // always present in a plan
 *     "message": "..." }                          // optional
 * Version ops (version==, ...) always carry a string value. */
PB_WUR int playbook_render(const struct playbook *pb, const json_t *facts, json_t **ret_plan,
			   struct pb_diags *d);

/* A node's facts indexed for lookups (playbook_facts.c): only the values a lookup reaches are
 * built, so that rendering a plan or matching a target from a stored facts document costs a
 * few dozen small parses instead of building its ~1,000 values. text (a JSON object, borrowed:
 * it must outlive the index) is checked for structure here; a value jansson refuses is
 * reported when a lookup reaches it. Results are exactly those of the same call on the
 * document parsed with jansson. -RY_E_INVALID (not a JSON object), -RY_E_TOO_BIG, -ENOMEM. */
struct playbook_facts;
PB_WUR int playbook_facts_index(const char *text, size_t len, struct playbook_facts **ret);
void playbook_facts_free(struct playbook_facts *f);
/* playbook_fact_lookup(), playbook_target_matches() and playbook_render() on indexed facts. */
PB_WUR int playbook_facts_lookup(const struct playbook_facts *f, const char *path, json_t **ret);
bool playbook_target_matches_facts(const struct playbook *pb, const char *cluster,
				   const struct playbook_facts *facts);
PB_WUR int playbook_render_facts(const struct playbook *pb, const struct playbook_facts *facts,
				 json_t **ret_plan, struct pb_diags *d);

/* Check a plan JSON that arrived from outside (e.g. over the network) against the schema:
 * document shape, "schema" == PB_PLAN_SCHEMA, known step types, unique step names, exactly the
 * allowed params keys with their types, required and defaulted keys present, per-type rules
 * (octal mode, enum values, durations, priorities 0-7, conditions). Returns 0, or -RY_E_INVALID
 * with a one-line reason in errbuf (e.g. "steps[3] (\"nccl env\"): params.settings: expected an
 * object"; errbuf may be NULL when len is 0). Thread-safe. */
PB_WUR int playbook_plan_validate(const json_t *plan, char *errbuf, size_t len);

/* ---- Facts paths and conditions (shared with the agent's assert executor) ---------------------
 */

/* The longest name in a fact path: a longer one is a bad path (-EINVAL), not a lookup that
 * fails. */
#define PB_PATH_NAME_MAX 255

/* Look up a fact path ("a.b[2].c", "rdma.devices[*].ports[*].state") in facts (borrowed).
 * Without "[*]" the result is the value at the path; with "[*]" it is a new array of every match
 * (nested wildcards flatten; elements lacking the rest of the path are skipped). *ret is a new
 * reference (json_decref()). Errors: -EINVAL bad path syntax, -ENOENT no value (a wildcard
 * path never gives -ENOENT once its arrays exist: it gives []), -ENOMEM. Thread-safe. */
PB_WUR int playbook_fact_lookup(const json_t *facts, const char *path, json_t **ret);

/* Compare two version strings like dpkg (epoch:upstream-revision, '~' sorts first). Returns <0,
 * 0 or >0. Both borrowed, non-NULL. Thread-safe. */
int playbook_version_compare(const char *a, const char *b);

/* Evaluate one condition (JSON object shaped as in the plan; "quantifier" defaults to "all")
 * against facts (borrowed). ops:
 *   == != < <= > >=          on each selected value (numbers numerically, strings bytewise;
 *                            a numeric string compared with a number is read as a number)
 *   version== version!= version< version<= version> version>=   dpkg-style on strings
 *   count== count>= count<=  the number of selected values (an array's length, or for a
 *                            wildcard path the number of matches) against an integer
 *   contains                 the selected array (or string) contains value
 *   matches                  each selected string matches the POSIX extended regex value
 * For a wildcard path the quantifier applies over the matches ("all" of [] is true, "any" of []
 * false); for count* and contains it is ignored. On success *ret_ok tells whether it holds and,
 * when it does not, a message is written to msgbuf (the condition's "message", else e.g.
 * "rdma.devices[*].ports[*].state == \"ACTIVE\" failed: got \"DOWN\" (mlx5_3...)" -- the
 * offending values); msgbuf may be NULL when len is 0.
 * Errors: -EINVAL malformed condition or regex, -ENOENT the fact is missing (message in msgbuf),
 * -ENOMEM. Thread-safe. */
PB_WUR int playbook_cond_eval(const json_t *cond, const json_t *facts, bool *ret_ok, char *msgbuf,
			      size_t len);

/* ---- Command -----------------------------------------------------------------------------------
 */

/* "railyard-controller playbook check FILE [--facts FACTS.json]": validate file (and, with
 * facts_json_file, render it and print a plan summary: one line per step and its rendered
 * params to out). Diagnostics go to err as FILE:LINE:COL lines. Returns the exit code: 0 valid,
 * 1 invalid, 2 usage or I/O error (unreadable/invalid facts file). facts_json_file may be NULL.
 * Thread-safe. */
int playbook_cmd_check(const char *file, const char *facts_json_file, FILE *out, FILE *err);

#endif
