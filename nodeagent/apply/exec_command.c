/* Executor command: the explicit escape hatch. Runs an argv (no shell) through the runner with
 * a timeout, guarded by `creates` (skip when a path exists) and `unless` (skip when a probe
 * command exits 0). The probe runs in check mode too: it must only look, never change. */
#include "nodeagent/apply/apply_int.h"

#include "common/playbook/playbook.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define P_ARGV	  "argv"
#define P_TIMEOUT "timeout"
#define P_CREATES "creates"
#define P_UNLESS  "unless"
#define MAX_ARGS  256

/* argv list of the plan as a NULL-terminated array of borrowed strings (caller frees the array). */
static int get_argv(struct apply_ctx *ctx, const json_t *list, const char *what, const char ***ret)
{
	size_t n = json_array_size(list);
	const char **v;

	if (n == 0 || n > MAX_ARGS)
		return apply_ctx_fail(ctx, -RY_E_INVALID, "%s: expected 1-%d strings", what,
				      MAX_ARGS);
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		v[i] = json_string_value(json_array_get(list, i));
		if (!v[i]) {
			free(v);
			return apply_ctx_fail(ctx, -RY_E_INVALID, "%s[%zu]: not a string", what, i);
		}
	}
	*ret = v;
	return 0;
}

static void describe_argv(struct apply_buf *b, const char *const *argv)
{
	for (size_t i = 0; argv[i]; i++)
		apply_buf_printf(b, "%s%s", i ? " " : "", argv[i]);
}

static int timeout_ms(struct apply_ctx *ctx, const json_t *params, int64_t *ret)
{
	const char *t = apply_param_str(params, P_TIMEOUT);

	if (!t)
		t = PB_COMMAND_DEFAULT_TIMEOUT;
	if (util_parse_duration_ms(t, ret) < 0 || *ret <= 0)
		return apply_ctx_fail(ctx, -RY_E_INVALID, "timeout \"%s\": bad duration", t);
	return 0;
}

static int creates_exists(struct apply_ctx *ctx, const json_t *params, bool *ret)
{
	const char *creates = apply_param_str(params, P_CREATES);
	struct stat st;
	char *host = NULL;
	int r;

	*ret = false;
	if (!creates)
		return 0;
	r = apply_ctx_path(ctx, creates, &host);
	if (r < 0)
		return r;
	*ret = stat(host, &st) == 0;
	free(host);
	return 0;
}

static int command_check(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	const json_t *unless = json_object_get(params, P_UNLESS);
	const char **argv = NULL, **probe = NULL;
	struct runner_result res;
	int64_t tmo;
	bool exists;
	int r;

	r = get_argv(ctx, json_object_get(params, P_ARGV), P_ARGV, &argv);
	if (r < 0)
		return r;
	r = timeout_ms(ctx, params, &tmo);
	if (r < 0)
		goto out;
	r = creates_exists(ctx, params, &exists);
	if (r < 0)
		goto out;
	if (exists) {
		apply_ctx_note(ctx, "not run: %s exists", apply_param_str(params, P_CREATES));
		goto out;
	}
	if (unless) {
		r = get_argv(ctx, unless, P_UNLESS, &probe);
		if (r < 0)
			goto out;
		r = apply_ctx_run(ctx, probe, tmo, &res);
		if (r < 0)
			goto out;
		exists = !res.timed_out && !res.term_signal && res.exit_code == 0;
		runner_result_done(&res);
		if (exists) {
			apply_ctx_note(ctx, "not run: unless command exited 0");
			goto out;
		}
	}
	out->changed = true;
	apply_buf_puts(&out->diff, "run: ");
	describe_argv(&out->diff, argv);
	apply_buf_putc(&out->diff, '\n');
out:
	free(argv);
	free(probe);
	return r;
}

static int command_apply(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	const char **argv = NULL;
	struct runner_result res;
	char desc[128];
	int64_t tmo;
	int r;

	r = get_argv(ctx, json_object_get(params, P_ARGV), P_ARGV, &argv);
	if (r < 0)
		return r;
	r = timeout_ms(ctx, params, &tmo);
	if (r < 0)
		goto out;
	r = apply_ctx_run(ctx, argv, tmo, &res);
	if (r < 0)
		goto out;
	runner_result_describe(&res, desc, sizeof(desc));
	if (res.timed_out) {
		r = apply_ctx_fail(ctx, -ETIMEDOUT, "`%s` timed out after %lld ms and was killed",
				   argv[0], (long long)tmo);
	} else if (res.term_signal || res.exit_code != 0) {
		size_t n = res.err_len;

		while (n > 0 && (res.err[n - 1] == '\n' || res.err[n - 1] == ' '))
			n--;
		r = apply_ctx_fail(ctx, -RY_E_UNMET, "`%s` %s%s%.*s", argv[0], desc, n ? ": " : "",
				   (int)(n > 512 ? 512 : n), res.err);
	} else {
		out->changed = true;
		apply_ctx_note(ctx, "ran `%s`: %s", argv[0], desc);
	}
	runner_result_done(&res);
out:
	free(argv);
	return r;
}

static int command_verify(struct apply_ctx *ctx, const json_t *params)
{
	const char *creates = apply_param_str(params, P_CREATES);
	bool exists;
	int r;

	if (!creates)
		return 0;
	r = creates_exists(ctx, params, &exists);
	if (r < 0)
		return r;
	if (!exists)
		return apply_ctx_fail(ctx, -RY_E_UNMET, "verify: %s was not created", creates);
	return 0;
}

const struct apply_step_ops apply_ops_command = {
	.type = "command",
	.check = command_check,
	.apply = command_apply,
	.verify = command_verify,
};
