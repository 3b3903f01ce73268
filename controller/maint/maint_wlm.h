/* What the maintenance pass asks of the workload manager a cluster is bound to (controller/wlm/):
 * the jobs running on a node. The WLM's commands block (up to the binding's timeout), so they
 * run on a thread of this module's own, never on the engine's tick thread: the pass asks, and
 * reads the answer on a later run. Drains and resumes are not here: they are ledger rows written
 * with each node's move (store_maint_apply()) and carried out by the WLM worker. */
#ifndef RAILYARD_CONTROLLER_MAINT_WLM_H
#define RAILYARD_CONTROLLER_MAINT_WLM_H

#include <stddef.h>
#include <stdint.h>

struct ctl_server;
struct maint_wlm;

/* Start the asking thread (store and bindings read through srv). */
__attribute__((warn_unused_result)) int maint_wlm_new(struct ctl_server *srv,
						      struct maint_wlm **ret);
/* Stop it (waits for the command in flight) and free. NULL is fine. */
void maint_wlm_free(struct maint_wlm *w);

/* The jobs running on a node (its host name, mapped by the cluster's binding), as the WLM
 * answered a question asked at or after after_ms: their ids comma-separated into ids ("" when
 * none), their count into *ret_n; a cluster bound to no workload manager runs no job (0). The
 * next answer is asked for at once. -EAGAIN: no such answer yet (asked now; wait). Another
 * negative value: the WLM could not be asked (why says why): not known to be free. Thread-safe,
 * never blocks on the WLM. */
__attribute__((warn_unused_result)) int maint_wlm_jobs(struct maint_wlm *w, const char *cluster,
						       const char *hostname, int64_t after_ms,
						       char *ids, size_t len, size_t *ret_n,
						       char *why, size_t len_why);

#endif
