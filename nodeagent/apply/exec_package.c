/* Executor package: a Debian package present (optionally with a version constraint, and held
 * with apt-mark so that an upgrade cannot move it) or absent. State comes from dpkg-query with
 * --admindir under the sysroot; changes go through apt-get and apt-mark run by the runner (on a
 * real node the sysroot is "/"; tests use the doubles). */
#include "nodeagent/apply/apply_int.h"

#include "common/util/error.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define P_NAME	  "name"
#define P_VERSION "version"
#define P_STATE	  "state"
#define P_HOLD	  "hold"

/* Installed version of name ("" when not installed) and whether it is held, via dpkg-query. */
static int installed_version(struct apply_ctx *ctx, const char *name, char *ver, size_t len,
			     bool *ret_held)
{
	char *admin = NULL, *opt = NULL;
	struct runner_result res;
	int r;

	r = apply_ctx_path(ctx, "/var/lib/dpkg", &admin);
	if (r < 0)
		return r;
	if (asprintf(&opt, "--admindir=%s", admin) < 0) {
		free(admin);
		return -ENOMEM;
	}
	{
		const char *argv[] = {"dpkg-query",
				      opt,
				      "-W",
				      "-f",
				      "${db:Status-Want} ${db:Status-Status} ${Version}\\n",
				      name,
				      NULL};

		r = apply_ctx_run(ctx, argv, 0, &res);
	}
	free(opt);
	free(admin);
	if (r < 0)
		return r;
	ver[0] = '\0';
	*ret_held = false;
	if (res.timed_out || res.term_signal) {
		r = apply_ctx_fail(ctx, -ETIMEDOUT, "dpkg-query %s: did not finish", name);
	} else if (res.exit_code == 0) {
		char want[16] = "", status[32] = "";
		int used = 0;

		if (sscanf(res.out, "%15s %31s %n", want, status, &used) == 2 &&
		    strcmp(status, "installed") == 0) {
			size_t n = strcspn(res.out + used, " \r\n");

			snprintf(ver, len, "%.*s", (int)n, res.out + used);
			*ret_held = strcmp(want, "hold") == 0;
		}
	} else if (res.exit_code != 1) {
		r = apply_ctx_fail(ctx, -RY_E_UNMET, "dpkg-query %s: exit %d: %.200s", name,
				   res.exit_code, res.err);
	}
	runner_result_done(&res);
	return r;
}

/* An exact pin ("1.2-3", "= 1.2-3", "== 1.2-3") gives its version, else NULL. */
static const char *exact_version(const char *c)
{
	while (isspace((unsigned char)*c))
		c++;
	if (c[0] == '=' && c[1] == '=')
		c += 2;
	else if (c[0] == '=')
		c++;
	else if (strchr("<>!", c[0]))
		return NULL;
	while (isspace((unsigned char)*c))
		c++;
	return c;
}

/* *ret_ok: installed as wanted (version); *ret_hold_ok: held or not as wanted (always true
 * when hold is not managed or the package is to be absent); *ret_held: held now. */
static int package_state(struct apply_ctx *ctx, const json_t *params, char *ver, size_t len,
			 bool *ret_ok, bool *ret_hold_ok, bool *ret_held)
{
	const char *name = apply_param_str(params, P_NAME),
		   *state = apply_param_str(params, P_STATE);
	const char *constraint = apply_param_str(params, P_VERSION);
	bool want = !state || strcmp(state, "absent") != 0;
	const json_t *hold = json_object_get(params, P_HOLD);
	int r;

	if (!name || !*name || name[0] == '-' || strpbrk(name, "= \t\n/"))
		return apply_ctx_fail(ctx, -RY_E_INVALID, "package: bad name");
	r = installed_version(ctx, name, ver, len, ret_held);
	if (r < 0)
		return r;
	*ret_hold_ok = !want || !json_is_boolean(hold) || json_is_true(hold) == *ret_held;
	if (!want) {
		*ret_ok = !ver[0];
		return 0;
	}
	if (!ver[0]) {
		*ret_ok = false;
		return 0;
	}
	if (!constraint) {
		*ret_ok = true;
		return 0;
	}
	r = apply_version_satisfies(ver, constraint);
	if (r < 0)
		return apply_ctx_fail(ctx, r, "version \"%s\": bad constraint", constraint);
	*ret_ok = r == 1;
	return 0;
}

static int package_check(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	const char *state = apply_param_str(params, P_STATE);
	const char *constraint = apply_param_str(params, P_VERSION);
	char ver[256];
	bool ok, hold_ok, held;
	int r;

	r = package_state(ctx, params, ver, sizeof(ver), &ok, &hold_ok, &held);
	if (r < 0 || (ok && hold_ok))
		return r;
	out->changed = true;
	if (!ok)
		apply_buf_printf(&out->diff, "package %s: %s -> %s\n",
				 apply_param_str(params, P_NAME), ver[0] ? ver : "(not installed)",
				 state && strcmp(state, "absent") == 0 ? "(removed)"
				 : constraint			       ? constraint
								       : "(installed)");
	if (!hold_ok)
		apply_buf_printf(&out->diff, "package %s hold: %s -> %s\n",
				 apply_param_str(params, P_NAME), held ? "held" : "not held",
				 held ? "not held" : "held");
	return 0;
}

static int package_apply(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	const char *name = apply_param_str(params, P_NAME),
		   *state = apply_param_str(params, P_STATE);
	const char *constraint = apply_param_str(params, P_VERSION), *pin = NULL;
	const json_t *hold = json_object_get(params, P_HOLD);
	bool ok, hold_ok, held;
	char *spec = NULL, ver[256];
	int r;

	r = package_state(ctx, params, ver, sizeof(ver), &ok, &hold_ok, &held);
	if (r < 0)
		return r;
	if (state && strcmp(state, "absent") == 0) {
		const char *argv[] = {"apt-get",
				      "remove",
				      "-y",
				      "-q",
				      held ? "--allow-change-held-packages" : name,
				      held ? name : NULL,
				      NULL};

		r = apply_ctx_run_ok(ctx, argv, NULL);
		if (r < 0)
			apply_ctx_headline(ctx, "package %s could not be removed: %s", name,
					   ctx->tool_error);
	} else if (!ok) {
		if (constraint)
			pin = exact_version(constraint);
		if (pin ? asprintf(&spec, "%s=%s", name, pin) < 0 : !(spec = strdup(name)))
			return -ENOMEM;
		{
			/* A pin may be a downgrade, and a held package only moves when told:
			 * this step owns both decisions. */
			const char *argv[8] = {"apt-get", "install", "-y", "-q"};
			int n = 4;

			if (pin)
				argv[n++] = "--allow-downgrades";
			if (held)
				argv[n++] = "--allow-change-held-packages";
			argv[n++] = spec;
			argv[n] = NULL;
			r = apply_ctx_run_ok(ctx, argv, NULL);
			if (r < 0)
				apply_ctx_headline(ctx, "package %s could not be installed: %s",
						   spec, ctx->tool_error);
		}
		free(spec);
	}
	if (r == 0 && json_is_boolean(hold) && (state == NULL || strcmp(state, "absent") != 0)) {
		r = package_state(ctx, params, ver, sizeof(ver), &ok, &hold_ok, &held);
		if (r == 0 && !hold_ok) {
			const char *argv[] = {"apt-mark", json_is_true(hold) ? "hold" : "unhold",
					      name, NULL};

			r = apply_ctx_run_ok(ctx, argv, NULL);
		}
	}
	out->changed = r == 0;
	return r;
}

static int package_verify(struct apply_ctx *ctx, const json_t *params)
{
	char ver[256];
	bool ok, hold_ok, held;
	int r = package_state(ctx, params, ver, sizeof(ver), &ok, &hold_ok, &held);

	if (r < 0)
		return r;
	if (!ok) {
		const char *c = apply_param_str(params, P_VERSION),
			   *state = apply_param_str(params, P_STATE);

		if (state && strcmp(state, "absent") == 0)
			apply_ctx_headline(ctx, "package %s is still installed (%s)",
					   apply_param_str(params, P_NAME), ver);
		else if (ver[0])
			apply_ctx_headline(ctx, "package %s is %s after installing (expected %s)",
					   apply_param_str(params, P_NAME), ver, c ? c : "any");
		else
			apply_ctx_headline(ctx, "package %s is not installed after installing",
					   apply_param_str(params, P_NAME));
	}
	if (!ok)
		return apply_ctx_fail(ctx, -RY_E_UNMET, "verify: package %s is %s",
				      apply_param_str(params, P_NAME),
				      ver[0] ? ver : "not installed");
	if (!hold_ok)
		return apply_ctx_fail(ctx, -RY_E_UNMET, "verify: package %s is %s",
				      apply_param_str(params, P_NAME), held ? "held" : "not held");
	return 0;
}

const struct apply_step_ops apply_ops_package = {
	.type = "package",
	.check = package_check,
	.apply = package_apply,
	.verify = package_verify,
};
