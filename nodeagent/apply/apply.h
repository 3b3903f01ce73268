/* Apply engine of the agent: runs a rendered playbook plan (see common/playbook/playbook.h)
 * against the node's sysroot, step by step, with one executor per step type (check, apply,
 * verify), backups and rollback of every file a step touches, and a check mode that only diffs. */
#ifndef RAILYARD_APPLY_H
#define RAILYARD_APPLY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define APPLY_WUR __attribute__((warn_unused_result))

/* Largest file the engine reads, writes, backs up or diffs (bytes). */
#define APPLY_FILE_MAX (1024 * 1024)

enum apply_status {
	APPLY_STATUS_OK = 0,  /* already in the desired state (nothing to do) */
	APPLY_STATUS_CHANGED, /* changed (or, in check mode, would change) */
	APPLY_STATUS_FAILED,  /* check, apply or verify failed; see message */
	APPLY_STATUS_SKIPPED, /* not run: `when` was false, or an earlier step stopped the plan */
};

/* "ok", "changed", "failed", "skipped" (never NULL). */
const char *apply_status_name(enum apply_status s);

/* Outcome of one step. Strings are owned by the summary; never NULL ("" when empty). */
struct apply_step_result {
	char *name;
	char *type;
	enum apply_status status;
	char *diff; /* unified diff for files, "key: old -> new" lines for values */
	/* Human explanation, precise on failure. Its first line is the headline, what went wrong
	 * in an operator's words ("mlx5_3 port 1 is DOWN (expected ACTIVE)"); the lines after it,
	 * when there are any, are the detail (the condition evaluator's text, a tool's stderr). */
	char *message;
	int64_t duration_ms; /* check + apply + verify (+ rollback) */
	bool rolled_back;    /* a failed step whose files were restored from their backups */
};

/* Outcome of a plan (caller-embedded; release with apply_summary_done()). */
struct apply_summary {
	struct apply_step_result *steps; /* one per plan step, in plan order */
	size_t n_steps;
	size_t n_ok, n_changed, n_failed, n_skipped;
	bool check_mode;
	bool stopped;	  /* a failed step without continue_on_error stopped the plan */
	bool interrupted; /* before_step said stop: steps from n_done on have no result */
	size_t n_done;	  /* steps with a result (all of them unless interrupted) */
	/* Step n_done handed the node over to a reboot (its reboot command ran): it has no
	 * result yet; the plan goes on at n_done + 1 after the boot (apply_reboot_judge()). */
	bool rebooting;
	char *backup_dir; /* where this run's backups are kept (NULL if none were kept) */
};

/* Called after every step (including skipped ones) with its final result; index counts from 0.
 * step is borrowed for the duration of the call. Called on the apply_plan() thread. */
typedef void (*apply_event_fn)(const struct apply_step_result *step, size_t index, size_t total,
			       void *userdata);

struct apply_opts {
	const char *sysroot;	    /* root of every path; NULL or "/" for the real node */
	bool check_mode;	    /* compute statuses and diffs, change nothing */
	const json_t *facts;	    /* this node's facts (facts_collect()), for `assert`; may be
				       NULL (asserts on facts then fail) */
	const char *state_dir;	    /* backups go to <state_dir>/backups/<run> and are kept; NULL:
				       a temporary directory removed when apply_plan() returns */
	int64_t command_timeout_ms; /* default timeout of programs the executors run; 0: 120 s */
	apply_event_fn on_step;	    /* may be NULL */
	void *userdata;
	/* Resume a plan that already ran its first resume_from steps (their outcomes in prior,
	 * borrowed; counted in the summary, not run, no on_step for them). */
	size_t resume_from;
	const struct apply_step_result *prior;
	/* Called on the apply thread right before a step is checked and applied (not for steps
	 * that are skipped); false stops the plan there: the summary says interrupted. May be
	 * NULL. */
	bool (*before_step)(size_t index, void *userdata);
	/* A `reboot` step that is to reboot the node calls this first, on the apply thread, with
	 * the boot id it reboots from: record durably that step index reboots, tell the
	 * controller. 0 goes on to the reboot command; a negative error (the reason in err) fails
	 * the step, nothing rebooted. NULL: reboot steps fail ("this run cannot reboot the node":
	 * `railyard-agent apply` has no one to resume the plan after the boot). */
	int (*before_reboot)(size_t index, const char *boot_id, void *userdata, char *err,
			     size_t errlen);
	/* THE REBOOT SEAM: the command a `reboot` step runs (NULL-terminated argv, no shell,
	 * borrowed), through the runner like any system tool; NULL: APPLY_REBOOT_ARGV. Tests put
	 * a script here that simulates a reboot (agent.conf reboot_command). */
	const char *const *reboot_argv;
};

/* The default reboot command: through the host's init. */
#define APPLY_REBOOT_COMMAND "systemctl reboot"

/* Keep the newest `keep` run directories under <state_dir>/backups (each run that changed a
 * file keeps its originals there), removing older ones and every empty one (a run that was
 * killed). Not while a run on this state directory is in progress. Returns how many were
 * removed. */
int apply_backups_prune(const char *state_dir, size_t keep);

/* Validate plan (network input: the playbook module's plan validator) and run its steps in
 * order. For each step: evaluate `when`; check (desired vs actual, diff); in check mode stop
 * there. Otherwise apply only when check found a difference, then verify by re-reading the real
 * state; a failure in apply or verify restores every file the step touched from its backups and
 * stops the plan unless the step has continue_on_error (later steps are then "skipped").
 * Returns 0 when the plan was run (whatever the step statuses: look at *ret, written only on
 * success), -RY_E_INVALID when the plan is malformed, -ENOMEM, or -errno when the backup
 * directory cannot be created. Not thread-safe for two runs on the same sysroot; different
 * sysroots are independent. plan and o are borrowed. */
APPLY_WUR int apply_plan(const json_t *plan, const struct apply_opts *o, struct apply_summary *ret);

/* The boot id of the node (<sysroot>/proc/sys/kernel/random/boot_id, a UUID) into buf.
 * -ENOENT and other read errors, -RY_E_INVALID when it is not a UUID or buf is too small. */
APPLY_WUR int apply_boot_id(const char *sysroot, char *buf, size_t len);

/* After the boot: the outcome of a `reboot` step (params: its plan params, borrowed) whose
 * reboot started at started_ms (unix ms) from boot id boot_id_before, judged at now_ms on the
 * node as it is now (sysroot): changed, "rebooted in 41.2 s: boot id A -> B, kernel K"; or
 * failed: the boot id is the same ("the host did not reboot"), the node came back after the
 * step's timeout, the kernel (uname -r: proc/sys/kernel/osrelease) or the module version
 * (sys/module/NAME/version) is not the expected one (naming both). *ret_message: caller
 * frees. -ENOMEM. Thread-safe. */
APPLY_WUR int apply_reboot_judge(const char *sysroot, const json_t *params,
				 const char *boot_id_before, int64_t started_ms, int64_t now_ms,
				 enum apply_status *ret_status, char **ret_message);

/* Release everything a summary owns; NULL and zeroed summaries are fine. */
void apply_summary_done(struct apply_summary *s);

/* The summary as JSON: {"check_mode","stopped","ok","changed","failed","skipped","steps":[{"name",
 * "type","status","diff","message","duration_ms","rolled_back"}]}. New reference (caller
 * json_decref()s), NULL on allocation failure. */
json_t *apply_summary_to_json(const struct apply_summary *s);

/* `railyard-agent apply`: load playbook_file, render it with facts_collect(sysroot), run
 * apply_plan() (check mode when check), and print to out one line per step with its diff
 * indented below, or (json) one JSON document {"playbook":..., "summary":...}. Errors loading,
 * rendering or validating are printed to out too. Returns the process exit code: 0 when every
 * step ended ok or changed (skipped `when` steps allowed), 1 when a step failed or was not
 * run, 2 when the playbook could not be loaded or rendered. Borrowed arguments; not
 * thread-safe (see apply_plan()). */
int apply_cmd(const char *playbook_file, const char *sysroot, bool check, bool json, FILE *out);

/* --- building blocks, public for the executors and the tests --- */

/* Resolve path (absolute or relative, as seen on the node) under sysroot, component by
 * component, like a chroot would: an absolute symlink target is re-anchored at sysroot, a
 * relative one is followed from its directory. Refused with -RY_E_UNSAFE_PATH: a `..`
 * component in path, a symlink whose target climbs above the sysroot, more than 40 links
 * (-ELOOP). Components that do not exist yet are appended as they are (the path may be about to
 * be created). On success *ret_path is the host path (caller frees). Read-only; thread-safe. The
 * check is not atomic against a concurrent writer inside the sysroot (the agent is the only
 * writer it expects). */
APPLY_WUR int apply_path_resolve(const char *sysroot, const char *path, char **ret_path);

/* Unified diff (3 lines of context, GNU diff format, "\ No newline at end of file" markers)
 * turning a into b, with "--- label_a" / "+++ label_b" headers; "" when they are equal.
 * Minimal (LCS) when the differing middle part is small enough (about 2M line pairs), otherwise
 * still correct but coarser. Inputs are bounded by APPLY_FILE_MAX. *ret_diff is a new string
 * (caller frees). -ENOMEM, -RY_E_TOO_BIG. Thread-safe. */
APPLY_WUR int apply_diff_unified(const char *a, size_t alen, const char *b, size_t blen,
				 const char *label_a, const char *label_b, char **ret_diff);

/* Does `version` satisfy (by playbook_version_compare(), dpkg's ordering) a constraint "OP VERSION"
 * with OP one of "=", "==", ">=", "<=", ">",
 * "<", ">>", "<<", "!=" (">>"/"<<" are dpkg's strict forms), or a bare VERSION (meaning =)?
 * 1 yes, 0 no, -RY_E_INVALID for a malformed constraint. Thread-safe. */
APPLY_WUR int apply_version_satisfies(const char *version, const char *constraint);

#endif
