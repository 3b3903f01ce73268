/* What the maintenance pass asks of the workload manager a cluster is bound to (controller/wlm/):
 * the one seam between the maintenance loop and it. Drains and resumes are not here: they are
 * ledger rows written with each node's move (store_maint_apply()). */
#ifndef RAILYARD_CONTROLLER_MAINT_WLM_H
#define RAILYARD_CONTROLLER_MAINT_WLM_H

#include <stddef.h>

struct ctl_server;

/* The jobs running on a node now (its host name, mapped to the workload manager's node name by
 * the cluster's binding): their ids, comma-separated, into ids (len bytes; "" when none), their
 * count into *ret_n. A cluster bound to no workload manager runs no job: 0. Negative when the
 * workload manager could not be asked (why in why[len_why]): the pass waits, as for a job. On
 * the engine's tick thread; may run a command (scontrol, squeue) for a few milliseconds. */
__attribute__((warn_unused_result)) int maint_wlm_jobs(struct ctl_server *srv, const char *cluster,
						       const char *hostname, char *ids, size_t len,
						       size_t *ret_n, char *why, size_t len_why);

#endif
