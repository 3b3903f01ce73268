/* Plans the controller sent this agent (ApplyPlan), run one at a time on a worker thread off
 * the session thread. Step results and the plan's end go into the outbox, which keeps them until
 * the controller acknowledges them: a session lost mid-plan loses nothing, the plan runs on and
 * its results are sent on the next session. */
#ifndef RAILYARD_AGENT_JOBS_H
#define RAILYARD_AGENT_JOBS_H

#include <stdbool.h>

#include "nodeagent/outbox.h"

/* Deployment ids remembered, so that a plan is never run twice. */
#define AGENT_JOBS_MAX 32

struct agent_jobs;

/* sysroot, state_dir and ob are borrowed and must outlive the jobs. */
__attribute__((warn_unused_result)) int agent_jobs_new(const char *sysroot, const char *state_dir,
						       struct outbox *ob, struct agent_jobs **ret);
/* Lets the running plan finish (a step is never abandoned half-way), drops queued ones, stops
 * the worker and frees. NULL is fine. */
void agent_jobs_free(struct agent_jobs *j);

/* A plan arrived. A deployment id seen before is not run again (returns 1): its results are in
 * the outbox until acknowledged. A new one is queued (returns 0). A plan that is not a JSON
 * object, or over the size limit, ends at once as failed. Thread-safe. */
__attribute__((warn_unused_result)) int agent_jobs_submit(struct agent_jobs *j,
							  const char *deployment_id,
							  const char *plan_json, bool check_mode);
/* Is a plan queued or running? (the session polls its outbox briskly then) */
bool agent_jobs_busy(struct agent_jobs *j);

#endif
