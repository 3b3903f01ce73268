/* The agent's journal of the plans it was sent: <state_dir>/jobs/<deployment>.log, one JSON
 * record per line, each appended and synced before the agent goes on:
 *   {"plan": ID, "check_mode": B, "received_ms": T, "body": PLAN}  the plan, as received
 *   {"run": K}                                                     step K is about to run
 *   {"reboot": K, "boot_id": B, "at_ms": T}                        step K reboots the node now,
 *                                                                  from boot id B (unix ms T)
 *   {"step": K, "name", "status", "diff", "message", "duration_ms"} its outcome
 *   {"done": "succeeded"|"failed", "message": M}                   the plan's end
 * A journal's existence means "seen": a plan is never run twice. After a restart the journal
 * says where each plan stood: not started (run it), between steps (resume after the last
 * outcome), inside step K (K may have half-run: it is reported failed, never run again), or
 * done; inside a reboot step K that rebooted (a "reboot" record after its "run"): judged after
 * the boot (the boot id changed, in time), then the plan goes on at K+1. A torn last line (a crash
 * mid-append) is ignored and cut off. */
#ifndef RAILYARD_AGENT_JOURNAL_H
#define RAILYARD_AGENT_JOURNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JOURNAL_DIR "jobs"

/* One recorded step outcome; strings owned. */
struct journal_step {
	bool recorded;
	char *name, *status, *diff, *message;
	int64_t duration_ms;
};

/* What a journal says (journal_load()); release with journal_state_done(). */
struct journal_state {
	char id[65];
	bool check_mode;
	int64_t received_ms;
	json_t *plan;		    /* the plan as received (NULL if it was not a JSON object) */
	struct journal_step *steps; /* n_steps entries: one per step of the plan */
	size_t n_steps;
	size_t next;  /* the first step without a recorded outcome */
	long running; /* a step with a "run" record and no outcome, or -1 */
	bool done;    /* the plan's end is recorded */
	/* The last "reboot" record: the step that rebooted (-1: none), the boot id it rebooted
	 * from and when (unix ms). A reboot under way when reboot_step == running. */
	long reboot_step;
	char reboot_boot_id[40];
	int64_t reboot_at_ms;
	char *done_status;
};

/* An open journal, appended to by one thread. */
struct journal;

/* Is id usable as a deployment id and file name (1-64 of [A-Za-z0-9._-], not starting with
 * '.')? */
bool journal_id_ok(const char *id);

/* Create <state_dir>/jobs (0700) if needed. */
__attribute__((warn_unused_result)) int journal_dir_init(const char *state_dir);

/* Does a journal for id exist (1), not (0), or -errno. */
int journal_exists(const char *state_dir, const char *id);

/* Start the journal of a plan that just arrived with its header record (plan_json may be
 * anything the controller sent; it is stored as a string when it is not a JSON object). The
 * file is created exclusively: -EEXIST when id has one. */
__attribute__((warn_unused_result)) int journal_create(const char *state_dir, const char *id,
						       bool check_mode, const char *plan_json,
						       struct journal **ret);
/* Open an existing journal for appending (after journal_load()). */
__attribute__((warn_unused_result)) int journal_open(const char *state_dir, const char *id,
						     struct journal **ret);
void journal_close(struct journal *j);

/* Append and sync: step index is about to run / its outcome / the plan's end. */
__attribute__((warn_unused_result)) int journal_run(struct journal *j, size_t index);
__attribute__((warn_unused_result)) int journal_step(struct journal *j, size_t index,
						     const char *name, const char *status,
						     const char *diff, const char *message,
						     int64_t duration_ms);
/* Step index is about to reboot the node from boot_id (a UUID), at_ms (unix ms): appended and
 * synced BEFORE the reboot command runs. */
__attribute__((warn_unused_result)) int journal_reboot(struct journal *j, size_t index,
						       const char *boot_id, int64_t at_ms);
__attribute__((warn_unused_result)) int journal_done(struct journal *j, const char *status,
						     const char *message);

/* Read the journal of id; a torn or malformed last line is cut off the file. -ENOENT,
 * -RY_E_CORRUPT (a malformed header or a record in the middle), -errno. */
__attribute__((warn_unused_result)) int journal_load(const char *state_dir, const char *id,
						     struct journal_state *ret);
void journal_state_done(struct journal_state *st);

/* Ids of every journal, oldest first (by the time each plan was received); caller frees
 * each and the array. */
__attribute__((warn_unused_result)) int journal_list(const char *state_dir, char ***ret_ids,
						     size_t *ret_n);

/* Keep the newest `keep` finished journals, delete older finished ones (unfinished ones are
 * always kept). Returns how many were deleted. */
int journal_prune(const char *state_dir, size_t keep);

#endif
