/* Executor service: a systemd unit enabled or disabled at boot and started, stopped or
 * restarted, through `systemctl` run by the runner (is-enabled/is-active to read the state). */
#include "nodeagent/apply/apply_int.h"

#include "common/util/error.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define P_NAME	  "name"
#define P_ENABLED "enabled"
#define P_STATE	  "state"

/* Run `systemctl VERB NAME` and return its first stdout word ("enabled", "active", ...) and
 * whether it exited 0. */
static int query(struct apply_ctx *ctx, const char *verb, const char *name, char *word, size_t len,
		 bool *ret_ok)
{
	const char *argv[] = {"systemctl", verb, name, NULL};
	struct runner_result res;
	size_t n;
	int r;

	r = apply_ctx_run_tool(ctx, argv, &res);
	if (r < 0)
		return r;
	if (res.timed_out) {
		runner_result_done(&res);
		return apply_ctx_fail(ctx, -ETIMEDOUT, "`systemctl %s %s` timed out", verb, name);
	}
	n = strcspn(res.out, " \t\r\n");
	snprintf(word, len, "%.*s", (int)n, res.out);
	*ret_ok = res.exit_code == 0 && !res.term_signal;
	if (!word[0] && strcmp(verb, "is-enabled") == 0) {
		size_t e = res.err_len;

		while (e > 0 && isspace((unsigned char)res.err[e - 1]))
			e--;
		r = apply_ctx_fail(ctx, -RY_E_NOT_FOUND, "unit %s: %.*s", name,
				   (int)(e > 256 ? 256 : e), e ? res.err : "unknown unit");
		apply_ctx_headline(ctx, "service %s is not installed on this node", name);
	}
	runner_result_done(&res);
	return r;
}

static int service_run(struct apply_ctx *ctx, const json_t *params, struct apply_change *out,
		       bool doit)
{
	const char *name = apply_param_str(params, P_NAME),
		   *state = apply_param_str(params, P_STATE);
	const json_t *enabled = json_object_get(params, P_ENABLED);
	char word[64];
	bool ok;
	int r;

	if (!name || !*name || name[0] == '-')
		return apply_ctx_fail(ctx, -RY_E_INVALID, "service: bad unit name");
	if (json_is_boolean(enabled)) {
		bool want = json_is_true(enabled);

		r = query(ctx, "is-enabled", name, word, sizeof(word), &ok);
		if (r < 0)
			return r;
		if (ok != want) {
			const char *argv[] = {"systemctl", want ? "enable" : "disable", name, NULL};
			const char *undo[] = {"systemctl", want ? "disable" : "enable", name, NULL};

			out->changed = true;
			apply_buf_printf(&out->diff, "%s enabled: %s -> %s\n", name, word,
					 want ? "enabled" : "disabled");
			if (doit && (r = apply_ctx_run_undoable(ctx, argv, undo)) < 0) {
				apply_ctx_headline(ctx, "service %s could not be %s: %s", name,
						   want ? "enabled" : "disabled", ctx->tool_error);
				return r;
			}
		}
	}
	if (state) {
		bool restart = strcmp(state, "restarted") == 0;
		bool want = strcmp(state, "stopped") != 0;

		r = query(ctx, "is-active", name, word, sizeof(word), &ok);
		if (r < 0)
			return r;
		if (restart || ok != want) {
			const char *verb = restart ? "restart" : want ? "start" : "stop";
			const char *argv[] = {"systemctl", verb, name, NULL};
			/* A restart cannot be taken back; start and stop can. */
			const char *undo[] = {"systemctl", want ? "stop" : "start", name, NULL};

			out->changed = true;
			if (restart)
				apply_buf_printf(&out->diff, "%s: restart (was %s)\n", name,
						 word[0] ? word : "unknown");
			else
				apply_buf_printf(&out->diff, "%s state: %s -> %s\n", name,
						 word[0] ? word : "unknown",
						 want ? "active" : "inactive");
			if (doit &&
			    (r = apply_ctx_run_undoable(ctx, argv, restart ? NULL : undo)) < 0) {
				apply_ctx_headline(ctx, "service %s could not be %s: %s", name,
						   restart ? "restarted"
						   : want  ? "started"
							   : "stopped",
						   ctx->tool_error);
				return r;
			}
		}
	}
	return 0;
}

static int service_check(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	return service_run(ctx, params, out, false);
}

static int service_apply(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	return service_run(ctx, params, out, true);
}

/* Re-read the real state; "restarted" is verified as "active". */
static int service_verify(struct apply_ctx *ctx, const json_t *params)
{
	const char *name = apply_param_str(params, P_NAME),
		   *state = apply_param_str(params, P_STATE);
	const json_t *enabled = json_object_get(params, P_ENABLED);
	char word[64];
	bool ok;
	int r;

	if (json_is_boolean(enabled)) {
		r = query(ctx, "is-enabled", name, word, sizeof(word), &ok);
		if (r < 0)
			return r;
		if (ok != json_is_true(enabled)) {
			apply_ctx_headline(ctx, "service %s is %s (expected %s)", name,
					   word[0] ? word : "unknown",
					   json_is_true(enabled) ? "enabled" : "disabled");
			return apply_ctx_fail(ctx, -RY_E_UNMET, "verify: %s is %s", name, word);
		}
	}
	if (state) {
		bool want = strcmp(state, "stopped") != 0;

		r = query(ctx, "is-active", name, word, sizeof(word), &ok);
		if (r < 0)
			return r;
		if (ok != want)
			apply_ctx_headline(ctx, "service %s is %s after %s (expected %s)", name,
					   word[0] ? word : "unknown",
					   want ? "starting it" : "stopping it",
					   want ? "active" : "inactive");
		if (ok != want)
			return apply_ctx_fail(ctx, -RY_E_UNMET, "verify: %s is %s, expected %s",
					      name, word[0] ? word : "unknown",
					      want ? "active" : "inactive");
	}
	return 0;
}

const struct apply_step_ops apply_ops_service = {
	.type = "service",
	.check = service_check,
	.apply = service_apply,
	.verify = service_verify,
};
