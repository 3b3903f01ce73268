/* railyard-controller's command line: a table of subcommands, each parsing only its own options
 * and calling the controller's services, then formatting what they return. Exit codes: 0 done,
 * 1 failed (a deployment or run that did not succeed, a refusal), 2 usage, 4 state directory in
 * use. */
#ifndef RAILYARD_CONTROLLER_CLI_H
#define RAILYARD_CONTROLLER_CLI_H

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "controller/store/store.h"

struct ctl_state;
struct ctl_error;
struct store;
struct httpc;

struct cli_command {
	const char *name;     /* "deploy", "bench run" */
	const char *synopsis; /* its options, for usage lines */
	const char *help;     /* what it does, one line */
	int (*run)(const struct cli_command *cmd, int argc, char **argv); /* argv[0]: the name */
};

/* The commands of each file, NULL-name terminated. */
extern const struct cli_command cli_admin_commands[];
extern const struct cli_command cli_deploy_commands[];
extern const struct cli_command cli_bench_commands[];
extern const struct cli_command cli_campaign_commands[];
extern const struct cli_command cli_signoff_commands[];
extern const struct cli_command cli_apitoken_commands[];
extern const struct cli_command cli_backup_commands[];

/* Parse argv (global options, then a command), run it, return the exit code. */
int cli_main(int argc, char **argv);

/* "usage: railyard-controller NAME SYNOPSIS" and the help line on f; returns the exit code
 * for it (0 on stdout for --help, 2 otherwise). */
int cli_usage(const struct cli_command *cmd, FILE *f);
/* "railyard-controller: invalid WHAT 'VALUE'" on stderr; returns 2. */
int cli_bad(const char *what, const char *value);
/* A duration option (ms, s, m, h, d) that must be positive and fit in an int. 0 or 2. */
int cli_parse_ms(const char *what, const char *s, int64_t *ret);
/* Exactly n positional arguments left after the options? Otherwise usage, 2. */
int cli_positionals(const struct cli_command *cmd, int argc, char **argv, int n);
/* The options of the small commands: --state-dir, and each of --json, --results, --no-wait
 * whose flag is not NULL; then exactly n positionals. 0, or the exit code (usage, --help). */
int cli_simple_opts(const struct cli_command *cmd, int argc, char **argv, const char **state_dir,
		    bool *json, bool *results, bool *no_wait, int n);
/* Read a playbook file once (the text parsed is the text stored and hashed): 0, or 1 with the
 * reason logged as "WHAT: PATH: error". Caller frees *ret_text. */
int cli_read_playbook(const char *what, const char *path, char **ret_text, size_t *ret_len);
/* ctl_state_open() for a command: the reason of a failure is logged. */
__attribute__((warn_unused_result)) int cli_open_state(const char *dir, bool server,
						       struct ctl_state **ret);
/* ---- the serving controller's API over STATE_DIR/api.sock (cli_api.c) ----------------------
 * One writer: while a controller serves a state directory, the commands that change it are
 * clients of its REST API over the unix socket (plain HTTP; root or the controller's user act
 * as an unscoped admin, audited as "local:uid N"). Reads may go to the database directly. */

/* Connect to the controller serving state_dir: 1 with *ret (free with httpc_free()) when its
 * api.sock answers GET /healthz; 0 when no controller serves (no socket, or one nobody listens
 * on: a controller killed with -9); negative for anything else (the socket may not be opened,
 * it answers but not as a controller), the reason logged. */
__attribute__((warn_unused_result)) int cli_api_open(const char *state_dir, struct httpc **ret);
/* cli_api_open() for a command that needs the serving controller: 0 with *ret, or the exit code
 * 1 with the reason on stderr, when none serves "railyard-controller WHAT: no controller is
 * serving STATE_DIR (its api.sock): changes go through the serving controller; start it ...". */
__attribute__((warn_unused_result)) int cli_api_need(const char *what, const char *state_dir,
						     struct httpc **ret);
/* One call: method, path (escape ids with cli_api_path()), body (borrowed; NULL: none).
 * Returns the HTTP status of a 2xx with *ret the parsed reply (a new reference; NULL for an
 * empty body; ret NULL: dropped). Otherwise negative with err filled: from the API's error body
 * (code, message, field; "details" become err->diags, the API's file name "playbook" shown as
 * playbook_file when not NULL, so that cli_error() prints the user's FILE:LINE:COL), or
 * CTL_ERR_UNAVAILABLE when no reply came. */
__attribute__((warn_unused_result)) int cli_api_call(struct httpc *h, const char *method,
						     const char *path, const json_t *body,
						     const char *playbook_file, json_t **ret,
						     struct ctl_error *err);
/* prefix, id percent-encoded, suffix (NULL: none) into buf: 0, -ENAMETOOLONG or -ENOMEM. */
__attribute__((warn_unused_result)) int cli_api_path(char *buf, size_t len, const char *prefix,
						     const char *id, const char *suffix);

/* A service's error on stderr. */
void cli_error(const struct ctl_error *e);
/* "2026-12-01T00:28:54Z", or "-" for 0. */
void cli_format_time(int64_t unix_ms, char *buf, size_t len);
/* Follow a deployment until it ends or timeout_ms passes, a line per node as it finishes: 0
 * succeeded, 1 otherwise (cli_deploy.c). */
int cli_deploy_follow(struct store *store, const char *id, int64_t timeout_ms, FILE *out);
/* Follow a campaign with a progress line per round until it ends (SIGINT/SIGTERM, caught with
 * cli_on_interrupt, cancel it: through the serving controller's API when api is not NULL, else
 * in the store); *ret the last view. 0 or -1 (cli_campaign.c). */
int cli_campaign_follow(struct store *st, const char *id, FILE *out, struct httpc *api,
			json_t **ret);
/* The verdict of an ended campaign (ctl_campaign_get()'s document) for a person. */
void cli_campaign_print_verdict(FILE *out, const json_t *c);
/* Wait for the sign-off the serving controller makes as campaign ends; *ret its summary
 * (ctl_signoff_get()). 0 or -1, the reason logged (cli_signoff.c). */
int cli_signoff_wait(struct store *st, const char *campaign, json_t **ret);
/* A sign-off's summary line; with reasons, its hash, summary lines and why it is stale. */
void cli_signoff_print(FILE *out, const json_t *s, bool reasons);
/* Set by cli_on_interrupt() (the signal's number). */
extern volatile sig_atomic_t cli_interrupted;
void cli_on_interrupt(int sig);
/* Print a JSON document, indented, on f; 0 or 1. */
int cli_print_json(FILE *f, const void *json);

#endif
