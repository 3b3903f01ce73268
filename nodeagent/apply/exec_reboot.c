/* Executor reboot: hands the node over to a reboot (the run's before_reboot hook records it,
 * then the reboot command, `systemctl reboot` by default, through the runner) and, after the
 * boot, judges it (apply_reboot_judge(): the boot id changed, in time, the expected kernel and
 * module). With if_changed it reboots only when a step since the plan started (or since the
 * previous reboot step) changed something. */
#include "nodeagent/apply/apply_int.h"

#include "common/playbook/playbook.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BOOT_ID_PATH   "/proc/sys/kernel/random/boot_id"
#define OSRELEASE_PATH "/proc/sys/kernel/osrelease"

static const char *const default_argv[] = {"systemctl", "reboot", NULL}; /* APPLY_REBOOT_COMMAND */

/* A small node file, trailing whitespace removed; -ENOENT when absent. Caller frees. */
static int read_node_attr(const char *sysroot, const char *path, char **ret)
{
	char *host = NULL, *text = NULL;
	size_t len = 0;
	int r;

	r = apply_path_resolve(sysroot, path, &host);
	if (r < 0)
		return r;
	r = fs_read_file(host, 4096, &text, &len);
	free(host);
	if (r < 0)
		return r;
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' ' || text[len - 1] == '\t'))
		text[--len] = '\0';
	*ret = text;
	return 0;
}

int apply_boot_id(const char *sysroot, char *buf, size_t len)
{
	char *id = NULL;
	size_t n;
	int r = read_node_attr(sysroot && *sysroot ? sysroot : "/", BOOT_ID_PATH, &id);

	if (r < 0)
		return r;
	n = strlen(id);
	/* A UUID: 36 characters of hex and dashes; anything else is not a boot id. */
	if (n != 36 || strspn(id, "0123456789abcdef-") != n || n >= len) {
		free(id);
		return -RY_E_INVALID;
	}
	memcpy(buf, id, n + 1);
	free(id);
	return 0;
}

/* Did a step of this run change something since the plan started or the last reboot (a reboot
 * step that rebooted)? (check mode: would it) */
static bool changed_since_last_reboot(const struct apply_ctx *ctx)
{
	for (size_t k = ctx->step_index; k-- > 0;) {
		const struct apply_step_result *r = &ctx->results[k];

		if (r->type && strcmp(r->type, "reboot") == 0) {
			if (r->status == APPLY_STATUS_CHANGED)
				return false;
			continue; /* one that did not reboot changed nothing */
		}
		if (r->status == APPLY_STATUS_CHANGED)
			return true;
	}
	return false;
}

static bool kernel_matches(const char *want, const char *have)
{
	return strcmp(want, have) == 0 || fnmatch(want, have, 0) == 0;
}

/* Does the node run what the step expects (expect_kernel, expect_module)? 1 yes (or nothing is
 * expected), 0 no with what differs in m, -ENOMEM. What it runs is appended to have (", kernel
 * K, module M V"). */
static int expect_holds(const char *sysroot, const json_t *params, struct apply_buf *m,
			struct apply_buf *have)
{
	const char *want_kernel = apply_param_str(params, "expect_kernel");
	const json_t *mod = json_object_get(params, "expect_module");
	char *kernel = NULL, *modver = NULL;
	int ok = 1;

	if (read_node_attr(sysroot, OSRELEASE_PATH, &kernel) < 0)
		kernel = NULL;
	if (kernel)
		apply_buf_printf(have, ", kernel %s", kernel);
	if (want_kernel && (!kernel || !kernel_matches(want_kernel, kernel))) {
		apply_buf_printf(m, "kernel %s, expected %s", kernel ? kernel : "(unknown)",
				 want_kernel);
		ok = 0;
		goto out;
	}
	if (mod) {
		const char *name = json_string_value(json_object_get(mod, "name")),
			   *want = json_string_value(json_object_get(mod, "version"));
		char path[128];
		int r;

		snprintf(path, sizeof(path), "/sys/module/%s/version", name ? name : "");
		r = name && want ? read_node_attr(sysroot, path, &modver) : -RY_E_INVALID;
		if (r < 0) {
			apply_buf_printf(m, "module %s: %s: %s, expected version %s",
					 name ? name : "?", path,
					 r == -ENOENT ? "not loaded (no version)" : ry_strerror(r),
					 want ? want : "?");
			ok = 0;
			goto out;
		}
		apply_buf_printf(have, ", module %s %s", name, modver);
		r = apply_version_satisfies(modver, want);
		if (r < 0) {
			apply_buf_printf(m, "expect_module.version: bad constraint \"%s\"", want);
			ok = 0;
		} else if (r == 0) {
			apply_buf_printf(m, "module %s is version %s, expected %s", name, modver,
					 want);
			ok = 0;
		}
	}
out:
	free(kernel);
	free(modver);
	return apply_buf_failed(m) || apply_buf_failed(have) ? -ENOMEM : ok;
}

static int reboot_check(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	if (apply_param_bool(params, "if_changed", false)) {
		struct apply_buf m = {0}, have = {0};
		int r;

		if (!ctx->results || !changed_since_last_reboot(ctx)) {
			out->changed = false;
			apply_ctx_note(ctx, ctx->check_mode ? "nothing would change: no reboot"
							    : "nothing changed: no reboot");
			return 0;
		}
		/* A change is pending only while the node does not run yet what the boot is to
		 * bring: a node that already runs the expected kernel and module has nothing to
		 * reboot for. */
		if (json_object_get(params, "expect_kernel") ||
		    json_object_get(params, "expect_module")) {
			r = expect_holds(ctx->sysroot, params, &m, &have);
			if (r == 1)
				apply_ctx_note(ctx,
					       "already running what a reboot is to bring (%s): "
					       "no reboot",
					       apply_buf_len(&have) > 2 ? apply_buf_str(&have) + 2
									: "");
			apply_buf_done(&m);
			apply_buf_done(&have);
			if (r < 0)
				return r;
			if (r == 1) {
				out->changed = false;
				return 0;
			}
		}
	}
	out->changed = true;
	if (ctx->check_mode)
		apply_ctx_note(ctx, "would reboot");
	return 0;
}

static int reboot_apply(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	const char *const *argv = ctx->reboot_argv ? ctx->reboot_argv : default_argv;
	char boot_id[40], err[256] = "";
	int r;

	(void)params;
	(void)out;
	if (!ctx->before_reboot)
		return apply_ctx_fail(
			ctx, -ENOTSUP,
			"this run cannot reboot the node (a reboot step runs in a "
			"deployment, where the agent resumes the plan after the boot)");
	r = apply_boot_id(ctx->sysroot, boot_id, sizeof(boot_id));
	if (r < 0)
		return apply_ctx_fail(ctx, r, "%s: cannot read the boot id: %s", BOOT_ID_PATH,
				      ry_strerror(r));
	r = ctx->before_reboot(ctx->step_index, boot_id, ctx->userdata, err, sizeof(err));
	if (r < 0)
		return apply_ctx_fail(ctx, r, "not rebooted: %s", err[0] ? err : ry_strerror(r));
	r = apply_ctx_run_ok(ctx, argv, NULL);
	if (r < 0) {
		apply_ctx_headline(ctx, "the reboot command failed: %s", ctx->tool_error);
		return r;
	}
	ctx->rebooting = true;
	apply_ctx_note(ctx, "rebooting (boot id %s)", boot_id);
	return 0;
}

static int reboot_verify(struct apply_ctx *ctx, const json_t *params)
{
	(void)ctx;
	(void)params;
	return 0; /* judged after the boot: apply_reboot_judge() */
}

const struct apply_step_ops apply_ops_reboot = {
	.type = "reboot",
	.check = reboot_check,
	.apply = reboot_apply,
	.verify = reboot_verify,
};

int apply_reboot_judge(const char *sysroot, const json_t *params, const char *boot_id_before,
		       int64_t started_ms, int64_t now_ms, enum apply_status *ret_status,
		       char **ret_message)
{
	const char *timeout = apply_param_str(params, "timeout");
	struct apply_buf m = {0}, have = {0}, why = {0};
	enum apply_status st = APPLY_STATUS_FAILED;
	char boot_id[40] = "";
	int64_t took = now_ms - started_ms, limit = 0;
	int r;

	sysroot = sysroot && *sysroot ? sysroot : "/";
	if (!timeout || util_parse_duration_ms(timeout, &limit) < 0 || limit <= 0)
		limit = 15 * 60 * 1000; /* PB_REBOOT_DEFAULT_TIMEOUT */
	r = apply_boot_id(sysroot, boot_id, sizeof(boot_id));
	if (r < 0) {
		apply_buf_printf(&m, "%s: cannot read the boot id after the reboot: %s",
				 BOOT_ID_PATH, ry_strerror(r));
		goto out;
	}
	if (strcmp(boot_id, boot_id_before) == 0) {
		apply_buf_printf(&m,
				 "the host did not reboot: the agent started again with the same "
				 "boot id %s",
				 boot_id);
		goto out;
	}
	if (took > limit) {
		apply_buf_printf(&m,
				 "the node came back %.1f s after the reboot, over the step's "
				 "timeout of %s",
				 (double)took / 1000,
				 timeout ? timeout : PB_REBOOT_DEFAULT_TIMEOUT);
		goto out;
	}
	r = expect_holds(sysroot, params, &why, &have);
	if (r < 0) {
		apply_buf_done(&why);
		apply_buf_done(&have);
		return r;
	}
	if (r == 0) {
		apply_buf_printf(&m, "after the boot: %s", apply_buf_str(&why));
		goto out;
	}
	st = APPLY_STATUS_CHANGED;
	apply_buf_printf(&m, "rebooted in %.1f s: boot id %s -> %s%s", (double)took / 1000,
			 boot_id_before, boot_id, apply_buf_str(&have));
out:
	apply_buf_done(&why);
	apply_buf_done(&have);
	r = apply_buf_take(&m, ret_message);
	apply_buf_done(&m);
	if (r < 0)
		return r;
	*ret_status = st;
	return 0;
}
