/* Plans the controller sent this agent (ApplyPlan), run one at a time on a worker thread off
 * the session thread. Each job keeps its step results and its end until the controller has
 * acknowledged them, so a session lost mid-plan loses nothing: the plan runs on, and the results
 * are sent again on the next session. */
#ifndef RAILYARD_AGENT_JOBS_H
#define RAILYARD_AGENT_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Jobs remembered (running, queued or finished) before the oldest acknowledged one is
 * forgotten. */
#define AGENT_JOBS_MAX 32

struct agent_jobs;

/* What the session sends for a job. Strings borrowed for the duration of the callback. */
struct agent_job_step {
	const char *deployment_id, *name, *status, *diff, *message;
	uint32_t index;
	int64_t duration_ms;
};
struct agent_job_done {
	const char *deployment_id, *status, *message;
	uint32_t ok, changed, failed, skipped;
};

/* Callbacks return the seq of the message they queued (> 0), or a negative error, which stops
 * the flush (the rest is tried on the next one). */
struct agent_jobs_sink {
	int64_t (*step)(void *userdata, const struct agent_job_step *ev);
	int64_t (*done)(void *userdata, const struct agent_job_done *ev);
	void *userdata;
};

/* sysroot and state_dir are borrowed and must outlive the jobs. */
__attribute__((warn_unused_result)) int agent_jobs_new(const char *sysroot, const char *state_dir,
						       struct agent_jobs **ret);
/* Finishes the running step's plan, then stops the worker and frees. NULL is fine. */
void agent_jobs_free(struct agent_jobs *j);

/* A plan arrived. A deployment id seen before is not run again: its results are queued for
 * sending again instead (returns 1). A new one is queued to run (returns 0). A plan that is not
 * a JSON object or over the size limit finishes at once as failed. Thread-safe. */
__attribute__((warn_unused_result)) int agent_jobs_submit(struct agent_jobs *j,
							  const char *deployment_id,
							  const char *plan_json, bool check_mode);
/* Is anything queued, running, or waiting to be sent? (the session polls faster then) */
bool agent_jobs_pending(struct agent_jobs *j);
/* Send what has not been sent, in order, through sink. Called on the session thread. */
void agent_jobs_flush(struct agent_jobs *j, const struct agent_jobs_sink *sink);
/* The controller has processed our messages up to seq: results sent at or below it are done. */
void agent_jobs_acked(struct agent_jobs *j, uint64_t seq);
/* A new session starts: everything not acknowledged is sent again. */
void agent_jobs_session_reset(struct agent_jobs *j);

#endif
