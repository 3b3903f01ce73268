/* The controller's subcommands (init, token create, serve, nodes, node revoke, audit), called by
 * main.c after option parsing. Each returns a process exit code and prints its own errors. */
#ifndef RAILYARD_CONTROLLER_ADMIN_H
#define RAILYARD_CONTROLLER_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "controller/server.h"

struct ctl_state;

/* Exit status of a command refused because its state directory is in use (serve). */
#define CTL_EXIT_LOCKED 4
/* The lock file of a serving controller, in its state directory. */
#define CTL_SERVE_LOCK "serve.lock"

/* ctl_state_open() for a command: the reason of a failure is logged. */
__attribute__((warn_unused_result)) int ctl_open_state(const char *dir, bool server,
						       struct ctl_state **ret);
/* A cluster name: 1-64 of [A-Za-z0-9._-], starting with a letter or digit. */
bool ctl_valid_cluster_name(const char *name);

int ctl_cmd_init(const char *state_dir, const char *const *sans, size_t n_sans);
int ctl_cmd_token_create(const char *state_dir, const char *cluster, int64_t ttl_ms, int uses,
			 const char *controller_addr);
/* Runs until SIGINT or SIGTERM; SIGHUP asks all agents for fresh facts. The caller must have
 * blocked those signals (before any thread started). */
int ctl_cmd_serve(const char *state_dir, const struct ctl_server_config *cfg);
int ctl_cmd_nodes(const char *state_dir, bool json, FILE *out);
int ctl_cmd_node_revoke(const char *state_dir, const char *node);
int ctl_cmd_audit(const char *state_dir, size_t limit, FILE *out);

struct ctl_deploy_opts {
	const char *cluster, *playbook;
	const char *batch;    /* "N" or "P%", NULL: the playbook's */
	const char *max_fail; /* "N" or "P%", NULL: the playbook's */
	int canary;	      /* -1: the playbook's */
	int64_t pause_ms;     /* -1: the playbook's */
	bool check, no_wait, show_diffs;
	int64_t timeout_ms; /* how long to follow */
};

/* Store a deployment for the serving controller and follow it (unless no_wait). Exit code: 0
 * when it succeeded (or was stored, with no_wait), 1 otherwise, 2 for bad options. */
int ctl_cmd_deploy(const char *state_dir, const struct ctl_deploy_opts *o, FILE *out);
struct ctl_bench_opts {
	const char *from, *to;	      /* client and server node (id or host name) */
	const char *kind, *transport; /* "lat"|"bw", "tcp"|"verbs" */
	const char *op, *device;      /* NULL: the engine's defaults */
	const char *server_address; /* NULL: the server node's address as the controller sees it */
	int64_t size, iters, duration_s, qps;
	int64_t gid_index;	     /* -2: not given (-1: choose by type and address) */
	int64_t ib_port, tclass, sl; /* -1: not given */
	bool sweep, bidir, check_data, rdma_cm, json;
	bool no_wait;	    /* store the run, print its id, return */
	int64_t timeout_ms; /* the whole run */
};

/* Order a benchmark between two nodes, follow it until it ends (SIGINT/SIGTERM while
 * following: request its cancel, wait for that, exit 130), print the result. Exit code 0 when
 * it succeeded (or, with no_wait, was stored). */
int ctl_cmd_bench_run(const char *state_dir, const struct ctl_bench_opts *o, FILE *out);
/* Ask the serving controller to cancel a run; with wait, follow it until it ends (bounded).
 * Exit code 0 when it is cancelled (or, without wait, the request is stored), 1 when it had
 * already finished, is unknown, or ended otherwise. */
int ctl_cmd_bench_cancel(const char *state_dir, const char *id, bool wait, FILE *out);
/* Show one run (id) or list recent ones. */
int ctl_cmd_bench_show(const char *state_dir, const char *id, bool json, FILE *out);

/* List deployments, or show one (id) with its nodes; json adds steps and diffs. */
int ctl_cmd_deployments(const char *state_dir, const char *id, bool json, FILE *out);

#endif
