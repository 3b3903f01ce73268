/* `railyard-agent health-check` (health_check_cmd.c): the GPU watcher and the readiness checks
 * run once, on demand. */
#ifndef RAILYARD_AGENT_HEALTH_CHECK_CMD_H
#define RAILYARD_AGENT_HEALTH_CHECK_CMD_H

#include <stdio.h>

/* The subcommand over argv (argv[0] is its name; getopt from argv[1]): output to out, errors and
 * usage to stderr. Returns the exit code: 0 nothing wrong, 1 a warning or critical event (or a
 * watcher that failed), 2 usage or configuration error. Blocks for the interval (default 2 s)
 * and for gdscheck. Not thread-safe (getopt). */
int health_check_cmd(int argc, char **argv, FILE *out);

/* health_check_cmd() on stdout: the entry main.c's subcommand table calls. */
int agent_health_check_main(int argc, char **argv);

#endif
