/* The one check of an Open MPI daemon's command line that the launch relay lets through
 * (docs/bench.md, "Launching collectives without SSH"): the controller runs it on a
 * LaunchRequest, the target node's agent again on the LaunchOrder, before anything starts. */
#ifndef RAILYARD_COMMON_LAUNCH_ORTED_H
#define RAILYARD_COMMON_LAUNCH_ORTED_H

#include <stddef.h>

/* Arguments an orted command line may have (its "orted" and every -mca KEY VALUE counted). */
#define RY_ORTED_ARGS_MAX 96
/* One value, once its quotes are stripped. */
#define RY_ORTED_VALUE_MAX 1024

/* Check argv (argc words, borrowed: what Open MPI's rsh launcher passes after the host name:
 * " orted", then "--daemonize" and "-mca"|"--mca" KEY VALUE triples, each VALUE in the double
 * quotes meant for a remote shell) and build the command line to exec without a shell:
 * "orted", then "-mca KEY VALUE" with the quotes stripped and --daemonize dropped (the agent
 * reaps the daemon itself). KEY must be in a fixed allow-list, each value must match its key's
 * pattern, plm_rsh_no_tree_spawn must be 1 (an orted never starts another), plm_rsh_agent must
 * be exactly relay (NULL: any "/ABSOLUTE/PATH/railyard-agent rsh", for the controller, which does
 * not know the launcher's path), and mca_base_param_files, when present, exactly param_file
 * (NULL: any absolute path without "..": the controller checks the run's own file). Returns 0
 * and *ret_argv (NULL-terminated; the caller frees it with ry_orted_argv_free()), or
 * -RY_E_INVALID with the reason naming the argument in err, or -ENOMEM. */
__attribute__((warn_unused_result)) int
ry_orted_argv_check(const char *const *argv, size_t argc, const char *relay, const char *param_file,
		    char ***ret_argv, char *err, size_t errlen);
/* Free what ry_orted_argv_check() built. NULL is fine. */
void ry_orted_argv_free(char **argv);

/* The value of -mca KEY in a checked command line (borrowed), or NULL. */
const char *ry_orted_argv_get(char *const *argv, const char *key);

#endif
