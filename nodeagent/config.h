/* The agent's state directory: agent.conf (controller address, node id, cluster, and the
 * optional reboot_command), node.key,
 * node.crt and ca.crt, written by `enroll` and read by `run`. */
#ifndef RAILYARD_AGENT_CONFIG_H
#define RAILYARD_AGENT_CONFIG_H

#include <stddef.h>

#define AGENT_DEFAULT_STATE_DIR "/var/lib/railyard/agent"

struct agent_config {
	char *controller; /* HOST:PORT */
	char *node_id;
	char *cluster;
	/* reboot_command: the command a playbook's `reboot` step runs, words split on blanks (no
	 * shell, no quoting), at most AGENT_REBOOT_ARGS of them; NULL when absent (the agent's
	 * default, `systemctl reboot`). The seam tests use to simulate a reboot. */
	char *reboot_command;
	char **reboot_argv; /* NULL-terminated, or NULL */
	/* Collective runs (docs/bench.md, "Launching collectives without SSH"): absolute paths,
	 * NULL for the defaults: Open MPI's daemon (/usr/bin/orted) and launcher
	 * (/usr/bin/mpirun), and the benchmark program (railyard-coll beside the agent). */
	char *orted, *mpirun, *coll_program;
};

#define AGENT_REBOOT_ARGS 16

/* Parse agent.conf text ("key = value" lines, '#' comments). Unknown keys and malformed lines
 * are errors naming path:line in errbuf. Caller frees with agent_config_done(). */
__attribute__((warn_unused_result)) int agent_config_parse(const char *text, const char *path,
							   struct agent_config *ret, char *errbuf,
							   size_t errlen);
/* Read <state_dir>/agent.conf. */
__attribute__((warn_unused_result)) int
agent_config_load(const char *state_dir, struct agent_config *ret, char *errbuf, size_t errlen);
/* Write <state_dir>/agent.conf atomically (mode 0644). */
__attribute__((warn_unused_result)) int agent_config_save(const char *state_dir,
							  const struct agent_config *cfg);
void agent_config_done(struct agent_config *cfg);

#endif
