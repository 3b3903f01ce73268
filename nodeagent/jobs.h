/* Plans the controller sent this agent (ApplyPlan), run one at a time on a worker thread off
 * the session thread. Each plan is journaled in the state directory (nodeagent/journal.h)
 * before it is acknowledged as accepted and around every step, so that a plan is never run
 * twice and a restarted agent resumes a plan it was stopped in between steps, or reports the
 * step it was killed in as failed (never running it again). Step results and the plan's end go
 * into the outbox, which keeps them until the controller has committed them. */
#ifndef RAILYARD_AGENT_JOBS_H
#define RAILYARD_AGENT_JOBS_H

#include <stdbool.h>
#include <stddef.h>

#include "nodeagent/outbox.h"

/* Finished plan journals kept (the newest); older ones are deleted. */
#define AGENT_JOBS_KEPT 256
/* Backup directories of plan runs kept (the newest). */
#define AGENT_BACKUPS_KEPT 32

struct agent_jobs;

/* Load the journals of state_dir and queue what they left unfinished (a plan the node rebooted
 * in: its reboot step is judged, then it goes on); start the worker. reboot_argv is the command
 * a `reboot` step runs (NULL: `systemctl reboot`); after it the worker starts nothing more and
 * waits to be stopped. sysroot, state_dir, ob and reboot_argv are borrowed and must outlive the
 * jobs. Errors in err. */
__attribute__((warn_unused_result)) int
agent_jobs_new(const char *sysroot, const char *state_dir, struct outbox *ob,
	       const char *const *reboot_argv, struct agent_jobs **ret, char *err, size_t errlen);
/* Stop: the running plan stops before its next step (it resumes when the agent starts again;
 * a step is never abandoned half-way), queued ones stay journaled. Close the outbox first, so
 * that a worker waiting for room in it returns. NULL is fine. */
void agent_jobs_free(struct agent_jobs *j);

/* A plan arrived. A deployment id seen before (journaled) is not run again (returns 1): its
 * results are in the outbox or were committed. A new one is journaled and queued (returns
 * 0); one that is not a JSON object ends at once as failed. -RY_E_INVALID for an id that is
 * not 1-64 of [A-Za-z0-9._-]; -errno when the journal cannot be written (nothing recorded:
 * the controller's next send is a new chance). Thread-safe. */
__attribute__((warn_unused_result)) int agent_jobs_submit(struct agent_jobs *j,
							  const char *deployment_id,
							  const char *plan_json, bool check_mode);
/* Is a plan queued or running? (the session polls its outbox briskly then) */
bool agent_jobs_busy(struct agent_jobs *j);

/* Cut text longer than max bytes at a line boundary and say so ("[... N of M bytes shown]");
 * shorter text is copied. Caller frees; NULL when out of memory. */
char *agent_clip(const char *text, size_t max);

#endif
