/* railyard-controller's command line: a table of subcommands, each parsing only its own options
 * and calling the controller's services, then formatting what they return. Exit codes: 0 done,
 * 1 failed (a deployment or run that did not succeed, a refusal), 2 usage, 4 state directory in
 * use. */
#ifndef RAILYARD_CONTROLLER_CLI_H
#define RAILYARD_CONTROLLER_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ctl_state;
struct ctl_error;

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
