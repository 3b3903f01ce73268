/* Internals shared by the apply engine's files: the step-executor ops table, the per-run
 * context handed to executors (sysroot, facts, backups of the current step) and small helpers
 * (growable string, sysroot file access with backup, runner calls, JSON parameter access). */
#ifndef RAILYARD_APPLY_INT_H
#define RAILYARD_APPLY_INT_H

#include "nodeagent/apply/apply.h"
#include "nodeagent/apply/runner.h"
#include "common/util/buf.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Growable string over struct ry_buf, bounded (4 MiB): the first failed append is sticky and
 * reported by apply_buf_take(). A zeroed apply_buf is an empty one (executors zero them). */
struct apply_buf {
	struct ry_buf rb; /* its max is set by the first append */
};
void apply_buf_append(struct apply_buf *b, const char *s, size_t n);
void apply_buf_puts(struct apply_buf *b, const char *s);
void apply_buf_putc(struct apply_buf *b, char c);
void apply_buf_printf(struct apply_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Hand the string over (caller frees; "" when empty) and reset b. -ENOMEM if any append failed. */
APPLY_WUR int apply_buf_take(struct apply_buf *b, char **ret);
void apply_buf_done(struct apply_buf *b);
/* The text so far (borrowed; "" when empty) and its length. */
const char *apply_buf_str(const struct apply_buf *b);
size_t apply_buf_len(const struct apply_buf *b);
/* Has an append failed (the text is cut short)? */
bool apply_buf_failed(const struct apply_buf *b);

/* One thing a step touched, restorable by apply_ctx_rollback(): a file (host_path), or a system
 * tool's change undone by running undo_argv (apply_ctx_undo_cmd). */
struct apply_backup {
	char **undo_argv;  /* NULL-terminated, owned; NULL for a file */
	char *host_path;   /* resolved path (NULL for an undo command) */
	char *backup_path; /* copy of the original content (NULL when it did not exist) */
	bool existed;
	bool in_place; /* procfs/sysfs value: restored by writing into the file, not by rename */
	mode_t mode;
	uid_t uid;
	gid_t gid;
};

struct apply_ctx {
	const char *sysroot; /* never NULL: "/" on a real node */
	const json_t *facts; /* may be NULL */
	bool check_mode;
	int64_t command_timeout_ms;
	char *backup_dir; /* this run's backups */
	size_t step_index;
	size_t backup_seq;
	struct apply_backup *backups; /* of the current step */
	size_t n_backups, cap_backups;
	struct apply_buf message; /* the step's message (executors append) */
	/* What went wrong in an operator's words ("mlx5_3 port 1 is DOWN (expected ACTIVE)"),
	 * when the executor can say it better than message does: it becomes the step message's
	 * first line, and message its detail below (apply_ctx_headline()). */
	struct apply_buf headline;
	/* The last system tool that failed in apply_ctx_run_ok(): the first line of its stderr,
	 * else its outcome ("exit 1"); "" when none failed in this step. For headlines. */
	char tool_error[256];
	/* This run's results so far (steps 0..step_index-1, resumed ones included): what a
	 * `reboot` step with if_changed looks back on. */
	const struct apply_step_result *results;
	/* The run's reboot hand-over (apply_opts): the hook, its argument, the command. */
	int (*before_reboot)(size_t index, const char *boot_id, void *userdata, char *err,
			     size_t errlen);
	void *userdata;
	const char *const *reboot_argv;
	/* Set by a step whose apply handed the node over to a reboot: no verify, no result; the
	 * plan stops there and goes on after the boot. */
	bool rebooting;
};

/* What check (or apply) found: whether anything differs and the diff text. */
struct apply_change {
	bool changed;
	struct apply_buf diff;
};

/* A step executor. Each returns 0 or a negative error with a precise reason appended to
 * ctx->message via apply_ctx_fail(). check never changes anything; apply brings the node to the
 * desired state (it is called only after check reported a change; it writes files through
 * apply_ctx_write_* so that they are backed up); verify re-reads the real state and fails
 * unless it is now the desired one. */
struct apply_step_ops {
	const char *type;
	int (*check)(struct apply_ctx *ctx, const json_t *params, struct apply_change *out);
	int (*apply)(struct apply_ctx *ctx, const json_t *params, struct apply_change *out);
	int (*verify)(struct apply_ctx *ctx, const json_t *params);
};

/* The registered executors (one per step type), NULL-terminated; lookup by type. */
extern const struct apply_step_ops *const apply_step_ops_table[];
const struct apply_step_ops *apply_step_ops_find(const char *type);

extern const struct apply_step_ops apply_ops_assert, apply_ops_package, apply_ops_kmod,
	apply_ops_sysctl, apply_ops_file, apply_ops_nccl, apply_ops_ucx, apply_ops_mpi,
	apply_ops_service, apply_ops_roce_qos, apply_ops_command, apply_ops_repo,
	apply_ops_hca_firmware, apply_ops_link, apply_ops_reboot;

/* Append a formatted reason to the step message and return err (for `return apply_ctx_fail()`). */
int apply_ctx_fail(struct apply_ctx *ctx, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void apply_ctx_note(struct apply_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Say what went wrong in an operator's words (appended to the headline after "; "): the step's
 * message then starts with it, on a line of its own, and what apply_ctx_fail() and
 * apply_ctx_note() wrote follows as the detail. Without a headline the message is as written. */
void apply_ctx_headline(struct apply_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Resolve a node path under the sysroot (apply_path_resolve(); failures noted in message). */
APPLY_WUR int apply_ctx_path(struct apply_ctx *ctx, const char *path, char **ret_host);

/* Read a node file (bounded by APPLY_FILE_MAX). A missing file is not an error: *ret_exists is
 * false and *ret_buf an empty string. Caller frees *ret_buf. */
APPLY_WUR int apply_ctx_read(struct apply_ctx *ctx, const char *path, char **ret_buf,
			     size_t *ret_len, bool *ret_exists);

/* Write a node file atomically (temporary file, fsync, rename) with mode, creating parent
 * directories; the original is backed up first. Owner is kept when the file existed. */
APPLY_WUR int apply_ctx_write_file(struct apply_ctx *ctx, const char *path, const void *data,
				   size_t len, mode_t mode);

/* Write a value into an existing procfs/sysfs-like file in place (open, truncate, write), after
 * backing up its content; -ENOENT if it does not exist. */
APPLY_WUR int apply_ctx_write_value(struct apply_ctx *ctx, const char *path, const char *value);

/* Change mode and/or owner of a node file (-1 leaves a field as it is), after backing it up. */
APPLY_WUR int apply_ctx_chmod_chown(struct apply_ctx *ctx, const char *path, mode_t mode, uid_t uid,
				    gid_t gid, bool set_mode);

/* Restore everything the current step touched, newest first. Returns 0 or the first error. */
int apply_ctx_rollback(struct apply_ctx *ctx);
/* Forget the current step's backups (after success). */
void apply_ctx_step_reset(struct apply_ctx *ctx);

/* Run a program through the runner with the context's sysroot seam and timeout (timeout_ms 0:
 * ctx default). For the `command` step and read-only probes that take the sysroot as an
 * argument (dpkg-query --admindir): the host's program is used when the sysroot has none. */
APPLY_WUR int apply_ctx_run(struct apply_ctx *ctx, const char *const *argv, int64_t timeout_ms,
			    struct runner_result *ret);
/* Run a system tool (modprobe, systemctl, apt-get, mlnx_qos) with the ctx default timeout: with
 * a sysroot other than "/" only the sysroot's own copy (a test double) is ever run; missing, it
 * fails naming where it looked (runner_cmd.sysroot_only). */
APPLY_WUR int apply_ctx_run_tool(struct apply_ctx *ctx, const char *const *argv,
				 struct runner_result *ret);
/* Run a system tool (as apply_ctx_run_tool) and require exit 0; on failure the message names
 * the program, outcome and stderr. */
APPLY_WUR int apply_ctx_run_ok(struct apply_ctx *ctx, const char *const *argv,
			       struct runner_result *ret_opt);

/* Parameter helpers: a string member or NULL; a bool member or dflt; integer or dflt. */
const char *apply_param_str(const json_t *params, const char *key);
bool apply_param_bool(const json_t *params, const char *key, bool dflt);
json_int_t apply_param_int(const json_t *params, const char *key, json_int_t dflt);

/* Shared by the file-like executors: compare the node file at path with content, record a
 * unified diff in out. */
APPLY_WUR int apply_file_diff(struct apply_ctx *ctx, const char *path, const char *content,
			      size_t len, struct apply_change *out);

/* Merge settings (object of scalars) into the config text cur: the first line that sets a key
 * (KEY=VALUE, blanks allowed around '=') gets the new value (untouched when equal), later lines
 * setting the same key are dropped, missing keys are appended in settings order as
 * KEY<sep>VALUE; the result ends with a newline. "key: old -> new" lines go to values (may be
 * NULL). *ret is the new content (caller frees). -RY_E_INVALID for keys outside
 * [A-Za-z0-9_./-] or values with line breaks. */
APPLY_WUR int apply_conf_merge(struct apply_ctx *ctx, const char *cur, size_t curlen,
			       const json_t *settings, const char *sep, char **ret,
			       struct apply_buf *values);

/* Register the command that puts back what a system tool changed (mlnx_qos, modprobe,
 * systemctl); a rollback runs it (as apply_ctx_run_ok, in reverse order with the file
 * restores). argv is copied. -ENOMEM, -EINVAL in check mode. */
APPLY_WUR int apply_ctx_undo_cmd(struct apply_ctx *ctx, const char *const *argv);
/* apply_ctx_run_ok(argv); once it succeeded, register undo (NULL: nothing to undo). */
APPLY_WUR int apply_ctx_run_undoable(struct apply_ctx *ctx, const char *const *argv,
				     const char *const *undo);

/* Remove a node file after backing it up (rollback re-creates it); absent is fine. */
APPLY_WUR int apply_ctx_remove_file(struct apply_ctx *ctx, const char *path);

/* Verify helper: run check again and fail unless it reports no change. */
int apply_verify_by_check(struct apply_ctx *ctx, const json_t *params,
			  int (*check)(struct apply_ctx *, const json_t *, struct apply_change *));

#endif
