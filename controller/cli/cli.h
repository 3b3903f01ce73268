/* railyard-controller's command line: what a daemon's binary needs (init, serve, backup,
 * restore, version, the first API token, the static route table), each command parsing only its
 * own options and calling the controller's services; the old operations spellings run
 * `railyard --local` (cli_alias.c). Exit codes: common/util/exitcode.h. */
#ifndef RAILYARD_CONTROLLER_CLI_H
#define RAILYARD_CONTROLLER_CLI_H

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ctl_state;
struct ctl_error;
struct store;

struct cli_command {
	const char *name;     /* "deploy", "bench run" */
	const char *synopsis; /* its options, for usage lines */
	const char *help;     /* what it does, one line */
	int (*run)(const struct cli_command *cmd, int argc, char **argv); /* argv[0]: the name */
};

/* The commands of each file, NULL-name terminated. */
extern const struct cli_command cli_admin_commands[];
extern const struct cli_command cli_apitoken_commands[];
extern const struct cli_command cli_backup_commands[];

/* An old spelling of an operations command (argv[0], and argv[1] for two words: "bench run"):
 * exec `railyard --local NEW ARGS`, said on stderr. Returns only when argv names none (-1) or
 * railyard could not be run (the exit code, said). (cli_alias.c) */
int cli_alias_run(int argc, char **argv);
/* Run `railyard --local [--state-dir state_dir] NEW ARGS` (NEW: "token create"; argv: the
 * arguments after it): only returns when railyard could not be run (the exit code, said). */
int cli_run_railyard(const char *state_dir, const char *new, int argc, char **argv);
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
/* ctl_state_open() for a command: the reason of a failure is logged. */
__attribute__((warn_unused_result)) int cli_open_state(const char *dir, bool server,
						       struct ctl_state **ret);
/* A service's error on stderr. */
void cli_error(const struct ctl_error *e);
/* "2026-12-01T00:28:54Z", or "-" for 0. */
void cli_format_time(int64_t unix_ms, char *buf, size_t len);
/* Print a JSON document, indented, on f; 0 or 1. */
int cli_print_json(FILE *f, const void *json);

#endif
