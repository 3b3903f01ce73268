/* railyard, the operator's command line over the REST API (docs/operations.md, "The railyard
 * CLI"): what its files share. A table of commands, each parsing its own options plus the
 * global ones, calling the API through rc_api_*() and formatting what comes back. It knows the
 * controller only by its API: no controller library is linked. */
#ifndef RAILYARD_CLIENT_RC_H
#define RAILYARD_CLIENT_RC_H

#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/httpc/httpc.h"
#include "common/util/exitcode.h"

#define RC_PROG "railyard"

/* Exit codes: the one table of common/util/exitcode.h. */
enum rc_exit {
	RC_HELP = -1, /* --help was asked and shown: 0 for the shell, but the command stops */
	RC_OK = RY_EXIT_OK,
	RC_FAILED = RY_EXIT_FAILED,
	RC_USAGE = RY_EXIT_USAGE,
	RC_AUTH = RY_EXIT_AUTH,
	RC_NOT_FOUND = RY_EXIT_NOT_FOUND,
	RC_UNREACHABLE = RY_EXIT_UNREACHABLE,
	RC_INTERRUPTED = RY_EXIT_INTERRUPTED,
};

/* One invocation: the global options as given, then the connection made from them. */
struct rc {
	const char *url, *token, *ca, *profile; /* --url, --token, --ca, --profile (NULL: unset) */
	bool json;				/* --json */
	bool no_profile;			/* connect with flags and environment only */
	bool local;	       /* --local / --state-dir: plain HTTP over STATE_DIR/api.sock */
	const char *state_dir; /* --state-dir (NULL: $RAILYARD_STATE_DIR, else the default) */
	const char *playbook;  /* the playbook file of this request, named in its problems */
	struct httpc *http;    /* made by the first API call */
	char *token_buf;       /* a token read from stdin (--token -) */
};

struct rc_command {
	const char *name;     /* "nodes", "signoff export" */
	const char *synopsis; /* its options, for usage and completion */
	const char *help;     /* one line */
	int (*run)(struct rc *rc, const struct rc_command *cmd, int argc, char **argv);
};

/* Each file's commands, NULL-name terminated. */
extern const struct rc_command rc_login_commands[];
extern const struct rc_command rc_nodes_commands[];
extern const struct rc_command rc_deploy_commands[];
extern const struct rc_command rc_campaign_commands[];
extern const struct rc_command rc_signoff_commands[];
extern const struct rc_command rc_tokens_commands[];
extern const struct rc_command rc_watch_commands[];
extern const struct rc_command rc_completion_commands[];
extern const struct rc_command rc_admin_commands[];
extern const struct rc_command rc_bench_commands[];
extern const struct rc_command rc_wlm_commands[];
extern const struct rc_command rc_maint_commands[];
/* Old spellings kept working, listed nowhere (last in rc_tables). */
extern const struct rc_command rc_alias_commands[];
/* Every table, for usage and completion: the first rc_tables_listed are listed, the rest are
 * aliases. */
extern const struct rc_command *const rc_tables[];
extern const size_t rc_tables_count, rc_tables_listed;
/* The state directory --local uses when none is named, and its socket's name. */
#define RC_DEFAULT_STATE_DIR "/var/lib/railyard/controller"
#define RC_API_SOCKET	     "api.sock"

/* The global options (--url, --token, --ca, --profile, --local, --state-dir, --json, --help). */
extern const struct option rc_global_options[];

/* ---- command line (cmdline.c) ---------------------------------------------------------- */

/* getopt_long over the command's own options (own, {0}-terminated) and the global ones, which
 * it stores in rc. Returns an own option's val, 'h' for --help, '?' for an error (getopt has
 * said which), -1 at the end. */
int rc_getopt(struct rc *rc, int argc, char **argv, const struct option *own);
/* The command's usage on stdout (c == 'h': returns RC_HELP) or stderr (returns RC_USAGE). */
int rc_usage(const struct rc_command *cmd, int c);
/* "railyard: invalid WHAT 'VALUE'" on stderr; returns RC_USAGE. */
int rc_bad(const char *what, const char *value);
/* Exactly n positionals after the options (at most n with up_to)? 0, or usage (RC_USAGE). */
int rc_positionals(const struct rc_command *cmd, int argc, char **argv, int n, bool up_to);
/* A decimal integer in [min, max]: 0, or RC_USAGE with the reason said. */
int rc_parse_int(const char *what, const char *s, int64_t min, int64_t max, int64_t *ret);
/* A duration with its unit ("500ms", "2s", "5m", "1h", "1d") in [min_ms, max_ms]: 0, or
 * RC_USAGE with the reason said. */
int rc_parse_duration(const char *what, const char *s, int64_t min_ms, int64_t max_ms,
		      int64_t *ret_ms);
/* prefix, the escaped id and suffix in buf ("/api/v1/nodes/" ID "/revoke"): 0 or RC_USAGE. */
int rc_id_path(char *buf, size_t len, const char *prefix, const char *id, const char *suffix);
/* A whole listing as --json prints it: {"items": [...], "next_cursor": null}. 0 or RC_FAILED. */
int rc_print_list(const json_t *items);
/* A command of one positional ID and no option of its own: POST prefix ID suffix, then "done
 * ID" (or the reply with --json). 0 or the exit code. */
int rc_post_id(struct rc *rc, const struct rc_command *cmd, int argc, char **argv,
	       const char *prefix, const char *suffix, const char *done);
/* Start a maintenance (body: POST /api/v1/maintenances's) and follow it until it ends, a line
 * per change (no_wait: print it as made). 0 when it succeeded, or the exit code (cmd_maint.c). */
int rc_maint_run(struct rc *rc, const json_t *body, bool no_wait);
/* A maintenance's body from the options deploy and revalidate share (cmd_deploy.c);
 * min_in_service already checked with rc_parse_fraction(). New reference, NULL out of memory. */
json_t *rc_maint_body(const char *cluster, const char *mode, const char *scope, const char *batch,
		      const char *min_in_service, int64_t job_timeout_ms, bool sign);
/* "0.75" or "75%" into a fraction in [0, 1); -1 when malformed. */
double rc_parse_fraction(const char *s);
/* The largest playbook sent: the API's body limit. */
#define RC_PLAYBOOK_MAX (1024 * 1024)
/* Read a playbook file (bounded); 0, or RC_FAILED with the reason said. Caller frees. */
int rc_read_file(const char *what, const char *path, size_t max, char **ret_text);

/* ---- the API (api.c) ------------------------------------------------------------------- */

/* Set by rc_on_interrupt(), the SIGINT/SIGTERM handler of the commands that cancel. */
extern volatile sig_atomic_t rc_interrupted;
void rc_on_interrupt(int sig);
/* Catch SIGINT and SIGTERM with rc_on_interrupt (once: a second one kills). */
void rc_catch_interrupts(void);

/* One API call: method, path under the URL ("/api/v1/nodes?limit=1"), a JSON body (borrowed,
 * NULL for none). 0 with *ret the reply's document (caller decrefs; ret may be NULL) for a 2xx;
 * otherwise the exit code (enum rc_exit), the reason printed on stderr. */
int rc_api(struct rc *rc, const char *method, const char *path, const json_t *body, json_t **ret);
/* GET the raw bytes of path (a file of a sign-off): 0 with *ret (caller frees) and *ret_len, or
 * the exit code. */
int rc_api_bytes(struct rc *rc, const char *path, char **ret, size_t *ret_len);
/* GET a paged listing, following next_cursor to its end: 0 with *ret the items of every page
 * (one array, caller decrefs), or the exit code. path may hold a query already. */
int rc_api_list(struct rc *rc, const char *path, json_t **ret);
/* A streamed GET of path (Server-Sent Events: Accept: text/event-stream) on a connection of
 * its own, with the extra header line extra ("Last-Event-ID: 7"; NULL: none); the bytes of a
 * 2xx reply go to on_data as they come (false stops it). 0 with *ret (close it with
 * rc_api_stream_close()), or the exit code with the reason said. */
int rc_api_stream_open(struct rc *rc, const char *path, const char *extra,
		       bool (*on_data)(void *cls, const char *data, size_t len), void *cls,
		       struct httpc_stream **ret);
/* Move the stream on, waiting at most wait_ms for bytes (a signal ends the wait early). 0 while
 * it runs, *connected true once a 2xx status came; else how it ended: RC_UNREACHABLE when no
 * reply came, or the stream broke or was closed by the server (the reason in why, "" for a
 * close; not said), or the exit code of another status (its error said). */
int rc_api_stream_run(struct rc *rc, struct httpc_stream *s, int wait_ms, bool *connected,
		      char *why, size_t why_len);
void rc_api_stream_close(struct httpc_stream *s);
/* The connection's URL, once made (for messages); "" before. */
const char *rc_api_url(const struct rc *rc);
/* Drop the connection and what rc owns. */
void rc_done(struct rc *rc);

/* ---- output (print.c) ------------------------------------------------------------------ */

#define JSTR(o, k) json_string_value(json_object_get((o), (k)))
#define JINT(o, k) ((long long)json_integer_value(json_object_get((o), (k))))

/* A JSON document, indented, on f; 0 or RC_FAILED. */
int rc_print_json(FILE *f, const json_t *doc);
/* "2026-12-01T00:28:54Z", or "-" for 0. */
void rc_format_time(int64_t unix_ms, char *buf, size_t len);
/* A string field, or dflt when absent or null. */
const char *rc_str(const json_t *o, const char *key, const char *dflt);
/* Is a deployment's / campaign's state final? */
bool rc_deploy_final(const char *state);
bool rc_campaign_final(const char *state);
/* A deployment's node as `deploy` shows it as the node finishes. */
void rc_print_deploy_node(FILE *out, const json_t *n);
/* Below a node's line, its steps that did not end ok (GET /api/v1/deployments/ID gives them):
 * a failed one with its message and, indented, its detail; a changed one (with diffs, its diff
 * indented); a run of steps skipped for the same reason as one line ("steps 5-28: 24 steps
 * skipped: ..."). Nothing when the node has no steps. */
void rc_print_deploy_steps(FILE *out, const json_t *n, bool diffs);
/* "test pair-lat, round 2 of 3 | 10 done, 1 failed | rounds 4 of 12 | ETA 35 s" */
void rc_campaign_progress(const json_t *c, char *buf, size_t len);
/* text, fields separated by " | " and most important first ("campaign c-1: test X, round 2 of 3
 * | 10 done, 1 failed | rounds 4 of 12 | ETA 35 s"), fitted into room bytes, written to out
 * (len bytes): the fields are dropped from the last until it fits, never the first nor the ETA
 * ("ETA ..."); then the first is cut short, ending in "...". */
void rc_fit_fields(const char *text, size_t room, char *out, size_t len);
/* An ended campaign's verdict for a person, failures first: the verdict and acceptance, the
 * failing nodes (natural order), links and pairs, then a line per test and the findings. */
void rc_print_verdict(FILE *out, const json_t *c);
/* A sign-off's summary line; with detail, why it is stale, what failed (from report, its
 * signed report when given: the verdict, failing nodes, links and pairs), its summary lines
 * and hash. */
void rc_print_signoff(FILE *out, const json_t *s, bool detail, const json_t *report);

#endif
