/* Maintenance in a cluster that runs jobs (docs/operations.md, "Maintenance with Slurm"): the
 * service (validate and store a maintenance, read it back as JSON, ask for a cancel; returns
 * data, never prints) and, in a serving controller, the engine pass that drives each one batch
 * by batch from the database: drain the batch in the workload manager, wait for its jobs,
 * configure it (a deployment limited to its nodes), validate it (a campaign over its nodes and
 * nodes validated before), resume the nodes that passed and hold out the others. Every part is
 * an ordinary deployment, campaign and sign-off. */
#ifndef RAILYARD_CONTROLLER_MAINT_H
#define RAILYARD_CONTROLLER_MAINT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/service.h"
#include "controller/store/store.h"

struct ctl_server;
struct ctl_engine;

/* Defaults of a request's unset fields. */
#define CTL_MAINT_BATCH_DEFAULT		 "10%"
#define CTL_MAINT_MIN_IN_SERVICE_DEFAULT 0.5
#define CTL_MAINT_JOB_TIMEOUT_DEFAULT_MS (60 * 60 * 1000)
#define CTL_MAINT_JOB_TIMEOUT_MAX_MS	 (7LL * 24 * 60 * 60 * 1000)

/* A maintenance to create; every pointer borrowed. */
struct ctl_maint_request {
	const char *cluster;
	const char *mode;	   /* "deploy" (NULL) or "revalidate" */
	const char *scope;	   /* a node selector (docs/campaigns.md); NULL: the cluster */
	const char *playbook_text; /* deploy: required; revalidate: NULL applies the baseline's */
	size_t playbook_len;
	const char *playbook_file; /* its name in diagnostics */
	const char *baseline;	   /* revalidate: the sign-off compared with */
	const char *batch;	   /* "N" or "P%"; NULL: CTL_MAINT_BATCH_DEFAULT */
	double min_in_service;	   /* [0, 1); < 0: CTL_MAINT_MIN_IN_SERVICE_DEFAULT */
	int64_t job_timeout_ms;	   /* (0, max]; <= 0: the default */
	bool sign;		   /* sign each batch's campaign (revalidate: always) */
	const char *actor;
};

/* Validate and store a maintenance for the serving controller; nothing is stored on error.
 * The scope's nodes (those the playbook targets, ordered by host name) are cut into batches
 * of `batch` nodes, at most as many as min_in_service lets out of service at once. Errors (err
 * filled, field set): a bad field (CTL_ERR_INVALID), a playbook that does not parse
 * (CTL_ERR_PLAYBOOK), an unknown cluster or baseline (CTL_ERR_NOT_FOUND), a scope that takes
 * no node, a min_in_service that lets no node out, another maintenance of the cluster running
 * (CTL_ERR_CONFLICT), the store. *ret: the maintenance as ctl_maint_get() gives it. */
__attribute__((warn_unused_result)) int ctl_maint_create(struct store *st,
							 const struct ctl_maint_request *rq,
							 json_t **ret, struct ctl_error *err);
/* One maintenance: {id, cluster, mode, scope, playbook {name, version}, baseline, batch,
 * batch_size, min_in_service, job_timeout_ms, sign, state, reason, current_batch, n_batches,
 * out_of_service, actor, times, batches [{batch, state, deployment, campaign, signoff, times}],
 * nodes [{node_id, hostname, batch, state, reason, jobs [ids], since_ms}]}. New reference. */
__attribute__((warn_unused_result)) int ctl_maint_get(struct store *st, const char *id,
						      json_t **ret, struct ctl_error *err);
/* The newest maintenances (limit 0: 50), newest first, without batches and nodes. */
__attribute__((warn_unused_result)) int ctl_maint_list(struct store *st, size_t limit, json_t **ret,
						       struct ctl_error *err);
/* Ask the serving controller to cancel a maintenance: 1 requested, 0 it has ended
 * (CTL_ERR_CONFLICT in err), or an error. */
__attribute__((warn_unused_result)) int ctl_maint_cancel(struct store *st, const char *id,
							 const char *actor, struct ctl_error *err);
bool ctl_maint_state_final(const char *state);

/* The engine pass of a serving controller (maint_pass.c): its state with the thread that asks
 * the workload manager about jobs, registration (before the engine starts), release (after the
 * engine's tick thread stopped). */
struct ctl_maint;
__attribute__((warn_unused_result)) int ctl_maint_new(struct ctl_server *srv,
						      struct ctl_maint **ret);
__attribute__((warn_unused_result)) int ctl_maint_register(struct ctl_maint *m,
							   struct ctl_engine *e);
void ctl_maint_free(struct ctl_maint *m);

#endif
