/* Executor kmod: a kernel module loaded (proc/modules, modprobe through the runner) or absent
 * (modprobe -r), its options in etc/modprobe.d/railyard-NAME.conf and, with persist, loading at
 * boot from etc/modules-load.d/railyard-NAME.conf. */
#include "nodeagent/apply/apply_int.h"

#include "common/util/error.h"
#include "common/util/json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define P_NAME	  "name"
#define P_STATE	  "state"
#define P_OPTIONS "options"
#define P_PERSIST "persist"

/* Module names in proc/modules use '_' where modprobe also accepts '-'. */
static void normalize(char *s)
{
	for (; *s; s++)
		if (*s == '-')
			*s = '_';
}

static int kmod_loaded(struct apply_ctx *ctx, const char *name, bool *ret)
{
	char *buf = NULL, *save = NULL, *want = strdup(name);
	bool exists, found = false;
	int r;

	if (!want)
		return -ENOMEM;
	normalize(want);
	r = apply_ctx_read(ctx, "/proc/modules", &buf, NULL, &exists);
	if (r == 0 && !exists)
		r = apply_ctx_fail(ctx, -ENOENT, "/proc/modules: missing");
	if (r < 0)
		goto out;
	for (char *line = strtok_r(buf, "\n", &save); line && !found;
	     line = strtok_r(NULL, "\n", &save)) {
		size_t n = strcspn(line, " \t");

		line[n] = '\0';
		normalize(line);
		found = strcmp(line, want) == 0;
	}
	*ret = found;
out:
	free(buf);
	free(want);
	return r;
}

/* Desired text of the options file ("" when the step has no options). */
static int options_text(struct apply_ctx *ctx, const char *name, const json_t *opts, char **ret)
{
	struct apply_buf b = {0};
	const char *k;
	json_t *v;

	if (json_object_size(opts) == 0)
		return apply_buf_take(&b, ret);
	apply_buf_printf(&b, "# Managed by railyard (kmod step)\noptions %s", name);
	json_object_foreach((json_t *)opts, k, v)
	{
		char *t = ry_json_scalar_text(v, RY_JSON_REAL_EXACT);

		if (!t || strpbrk(t, " \t\r\n") || strpbrk(k, " \t\r\n=")) {
			free(t);
			apply_buf_done(&b);
			return apply_ctx_fail(ctx, -RY_E_INVALID, "option \"%s\": invalid", k);
		}
		apply_buf_printf(&b, " %s=%s", k, t);
		free(t);
	}
	apply_buf_putc(&b, '\n');
	return apply_buf_take(&b, ret);
}

static int kmod_run(struct apply_ctx *ctx, const json_t *params, struct apply_change *out,
		    bool doit)
{
	const char *name = apply_param_str(params, P_NAME),
		   *state = apply_param_str(params, P_STATE);
	bool want_loaded = !state || strcmp(state, "absent") != 0, loaded;
	char *opts = NULL, *optpath = NULL, *loadpath = NULL, *load = NULL;
	int r;

	if (!name || !*name || strpbrk(name, "/ \t\n"))
		return apply_ctx_fail(ctx, -RY_E_INVALID, "kmod: bad module name");
	if (asprintf(&optpath, "/etc/modprobe.d/railyard-%s.conf", name) < 0 ||
	    asprintf(&loadpath, "/etc/modules-load.d/railyard-%s.conf", name) < 0 ||
	    asprintf(&load, "# Managed by railyard (kmod step)\n%s\n", name) < 0) {
		r = -ENOMEM;
		goto out;
	}
	r = options_text(ctx, name, json_object_get(params, P_OPTIONS), &opts);
	if (r < 0)
		goto out;
	/* Options first: they must be in place when modprobe loads the module. */
	if (*opts) {
		size_t before = apply_buf_len(&out->diff);

		r = apply_file_diff(ctx, optpath, opts, strlen(opts), out);
		if (r < 0)
			goto out;
		if (doit && apply_buf_len(&out->diff) != before &&
		    (r = apply_ctx_write_file(ctx, optpath, opts, strlen(opts), 0644)) < 0)
			goto out;
	}
	if (want_loaded && apply_param_bool(params, P_PERSIST, false)) {
		size_t before = apply_buf_len(&out->diff);

		r = apply_file_diff(ctx, loadpath, load, strlen(load), out);
		if (r < 0)
			goto out;
		if (doit && apply_buf_len(&out->diff) != before &&
		    (r = apply_ctx_write_file(ctx, loadpath, load, strlen(load), 0644)) < 0)
			goto out;
	}
	r = kmod_loaded(ctx, name, &loaded);
	if (r < 0)
		goto out;
	if (loaded != want_loaded) {
		const char *load_argv[] = {"modprobe", name, NULL};
		const char *unload_argv[] = {"modprobe", "-r", name, NULL};

		out->changed = true;
		apply_buf_printf(&out->diff, "module %s: %s -> %s\n", name,
				 loaded ? "loaded" : "not loaded",
				 want_loaded ? "loaded" : "absent");
		if (doit) {
			r = apply_ctx_run_undoable(ctx, want_loaded ? load_argv : unload_argv,
						   want_loaded ? unload_argv : load_argv);
			if (r < 0)
				apply_ctx_headline(ctx, "module %s could not be %s%s%s", name,
						   want_loaded ? "loaded" : "unloaded",
						   ctx->tool_error[0] ? ": " : "", ctx->tool_error);
		}
	} else if (loaded && *opts && out->changed) {
		apply_ctx_note(ctx, "module %s is loaded: new options apply at its next load",
			       name);
	}
out:
	free(opts);
	free(optpath);
	free(loadpath);
	free(load);
	return r;
}

static int kmod_check(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	return kmod_run(ctx, params, out, false);
}

static int kmod_apply(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	return kmod_run(ctx, params, out, true);
}

static int kmod_verify(struct apply_ctx *ctx, const json_t *params)
{
	return apply_verify_by_check(ctx, params, kmod_check);
}

const struct apply_step_ops apply_ops_kmod = {
	.type = "kmod",
	.check = kmod_check,
	.apply = kmod_apply,
	.verify = kmod_verify,
};
