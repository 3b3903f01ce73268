/* Apply engine core: plan validation and the step loop (when, check, apply, verify, rollback,
 * stop or continue), the per-run backup directory, the summary and its JSON form. */
#include "nodeagent/apply/apply.h"
#include "nodeagent/apply/apply_int.h"

#include "common/log/log.h"
#include "common/playbook/playbook.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_COMMAND_TIMEOUT_MS 120000

const struct apply_step_ops *const apply_step_ops_table[] = {
	&apply_ops_assert,	 &apply_ops_package,  &apply_ops_kmod,	  &apply_ops_sysctl,
	&apply_ops_file,	 &apply_ops_nccl,     &apply_ops_ucx,	  &apply_ops_mpi,
	&apply_ops_service,	 &apply_ops_roce_qos, &apply_ops_command, &apply_ops_repo,
	&apply_ops_hca_firmware, &apply_ops_link,     &apply_ops_reboot,  NULL,
};

const struct apply_step_ops *apply_step_ops_find(const char *type)
{
	for (size_t i = 0; type && apply_step_ops_table[i]; i++)
		if (strcmp(apply_step_ops_table[i]->type, type) == 0)
			return apply_step_ops_table[i];
	return NULL;
}

const char *apply_status_name(enum apply_status s)
{
	switch (s) {
	case APPLY_STATUS_OK:
		return "ok";
	case APPLY_STATUS_CHANGED:
		return "changed";
	case APPLY_STATUS_FAILED:
		return "failed";
	case APPLY_STATUS_SKIPPED:
		return "skipped";
	}
	return "?";
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	(void)remove(p);
	return 0;
}

struct backup_run {
	char *name;
	long long ms;
};

static int cmp_backup_run(const void *a, const void *b)
{
	const struct backup_run *x = a, *y = b;

	return x->ms < y->ms ? -1 : x->ms > y->ms;
}

int apply_backups_prune(const char *state_dir, size_t keep)
{
	struct backup_run *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	char *dir = NULL;
	int removed = 0;
	DIR *d;

	if (asprintf(&dir, "%s/backups", state_dir) < 0)
		return 0;
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		long long ms;
		int pid, used = 0;

		/* Run directories are "<unix ms>-<pid>" (make_backup_dir()). */
		if (sscanf(e->d_name, "%lld-%d%n", &ms, &pid, &used) != 2 ||
		    (size_t)used != strlen(e->d_name))
			continue;
		if (n == cap) {
			struct backup_run *nv = realloc(v, (cap ? cap * 2 : 32) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
			cap = cap ? cap * 2 : 32;
		}
		v[n].name = strdup(e->d_name);
		v[n].ms = ms;
		if (v[n].name)
			n++;
	}
	if (d)
		closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_backup_run);
	/* Empty ones first (a run killed before it could remove its own): rmdir() only removes
	 * those. Then the oldest beyond `keep`. */
	for (size_t i = 0; i < n; i++) {
		char *p = NULL;

		if (asprintf(&p, "%s/%s", dir, v[i].name) >= 0 && rmdir(p) == 0) {
			removed++;
			free(v[i].name);
			v[i].name = NULL;
		}
		free(p);
	}
	for (size_t i = 0, left = n - (size_t)removed; i < n; i++) {
		char *p = NULL;

		if (!v[i].name)
			continue;
		if (left > keep && asprintf(&p, "%s/%s", dir, v[i].name) >= 0 &&
		    nftw(p, rm_entry, 16, FTW_DEPTH | FTW_PHYS) == 0) {
			removed++;
			left--;
		}
		free(p);
		free(v[i].name);
	}
	free(v);
	free(dir);
	return removed;
}

static int make_backup_dir(const struct apply_opts *o, char **ret)
{
	char *dir = NULL;
	int r;

	if (o->state_dir) {
		if (asprintf(&dir, "%s/backups/%lld-%d", o->state_dir,
			     (long long)util_now_unix_ms(), (int)getpid()) < 0)
			return -ENOMEM;
		r = fs_mkdir_p(dir, 0700);
		if (r < 0) {
			free(dir);
			return r;
		}
	} else {
		const char *tmp = getenv("TMPDIR");

		if (asprintf(&dir, "%s/railyard-apply-XXXXXX", tmp && tmp[0] ? tmp : "/tmp") < 0)
			return -ENOMEM;
		if (!mkdtemp(dir)) {
			r = -errno;
			free(dir);
			return r;
		}
	}
	*ret = dir;
	return 0;
}

static char *xstrdup(const char *s)
{
	return strdup(s ? s : "");
}

/* Check, then (not in check mode, and only when something differs) apply and verify, rolling
 * back on failure. Fills res (status, diff, message, rolled_back). */
static int run_step(struct apply_ctx *ctx, const char *type, const json_t *params,
		    struct apply_step_result *res)
{
	const struct apply_step_ops *ops = apply_step_ops_find(type);
	struct apply_change change = {0}, applied = {0};
	char *diff = NULL, *msg = NULL;
	int r;

	if (!ops) {
		(void)apply_ctx_fail(ctx, -RY_E_INVALID, "unknown step type \"%s\"", type);
		res->status = APPLY_STATUS_FAILED;
		goto done;
	}
	r = ops->check(ctx, params, &change);
	if (r < 0) {
		if (apply_buf_len(&ctx->message) == 0)
			apply_ctx_note(ctx, "check failed: %s", ry_strerror(r));
		res->status = APPLY_STATUS_FAILED;
	} else if (ctx->check_mode) {
		res->status = change.changed ? APPLY_STATUS_CHANGED : APPLY_STATUS_OK;
		if (apply_buf_len(&ctx->message) == 0)
			apply_ctx_note(ctx, change.changed ? "would change" : "no change needed");
	} else if (!change.changed) {
		res->status = APPLY_STATUS_OK;
		if (apply_buf_len(&ctx->message) == 0)
			apply_ctx_note(ctx, "already in the desired state");
	} else {
		r = ops->apply(ctx, params, &applied);
		if (r >= 0 && ctx->rebooting) {
			res->status = APPLY_STATUS_CHANGED; /* for now: judged after the boot */
		} else if (r >= 0) {
			r = ops->verify(ctx, params);
			if (r < 0 && apply_buf_len(&ctx->message) == 0)
				apply_ctx_note(ctx, "verify failed: %s", ry_strerror(r));
		} else if (apply_buf_len(&ctx->message) == 0) {
			apply_ctx_note(ctx, "apply failed: %s", ry_strerror(r));
		}
		if (r < 0) {
			size_t n = ctx->n_backups, cmds = 0;
			int rb;

			for (size_t i = 0; i < n; i++)
				cmds += ctx->backups[i].undo_argv ? 1 : 0;
			rb = apply_ctx_rollback(ctx);
			res->status = APPLY_STATUS_FAILED;
			if (n > 0 && rb == 0) {
				res->rolled_back = true;
				if (n > cmds)
					apply_ctx_note(ctx, "; rolled back %zu file(s) from backup",
						       n - cmds);
				if (cmds > 0)
					apply_ctx_note(ctx, "; undid %zu command(s)", cmds);
			} else if (n > 0) {
				apply_ctx_note(ctx, "; ROLLBACK FAILED: %s", ry_strerror(rb));
				/* the headline too: it is what people read */
				if (apply_buf_len(&ctx->headline))
					apply_buf_printf(&ctx->headline, "; ROLLBACK FAILED: %s",
							 ry_strerror(rb));
			}
		} else {
			res->status = APPLY_STATUS_CHANGED;
			if (apply_buf_len(&ctx->message) == 0)
				apply_ctx_note(ctx, "changed");
		}
	}
done:
	/* The headline, when an executor said one, is the first line; what it wrote as it went
	 * is the detail below. */
	if (apply_buf_len(&ctx->headline)) {
		apply_buf_putc(&ctx->headline, '\n');
		apply_buf_puts(&ctx->headline, apply_buf_str(&ctx->message));
		apply_buf_done(&ctx->message);
		ctx->message = ctx->headline;
		ctx->headline = (struct apply_buf){0};
	}
	r = apply_buf_take(&change.diff, &diff);
	if (r == 0)
		r = apply_buf_take(&ctx->message, &msg);
	if (r == 0) {
		res->diff = diff;
		res->message = msg;
		diff = msg = NULL;
	}
	free(diff);
	free(msg);
	apply_buf_done(&change.diff);
	apply_buf_done(&applied.diff);
	apply_buf_done(&ctx->message);
	apply_ctx_step_reset(ctx);
	return r;
}

/* Count a step's outcome; the first failure without continue_on_error stops the plan. */
static void count(struct apply_summary *s, const struct apply_step_result *res, const json_t *step,
		  const char **failed_name)
{
	switch (res->status) {
	case APPLY_STATUS_OK:
		s->n_ok++;
		break;
	case APPLY_STATUS_CHANGED:
		s->n_changed++;
		break;
	case APPLY_STATUS_FAILED:
		s->n_failed++;
		if (!json_is_true(json_object_get(step, "continue_on_error")) && !*failed_name) {
			*failed_name = res->name;
			s->stopped = true;
		}
		break;
	case APPLY_STATUS_SKIPPED:
		s->n_skipped++;
		break;
	}
}

int apply_plan(const json_t *plan, const struct apply_opts *o, struct apply_summary *ret)
{
	struct apply_summary s = {.check_mode = o->check_mode};
	struct apply_ctx ctx = {0};
	const json_t *steps;
	const char *failed_name = NULL;
	char errbuf[512];
	int r;

	r = playbook_plan_validate(plan, errbuf, sizeof(errbuf));
	if (r < 0) {
		log_debug("apply: invalid plan: %s", errbuf);
		return r;
	}
	steps = json_object_get(plan, "steps");
	s.n_steps = json_array_size(steps);
	s.steps = calloc(s.n_steps ? s.n_steps : 1, sizeof(*s.steps));
	if (!s.steps)
		return -ENOMEM;
	ctx.sysroot = o->sysroot && o->sysroot[0] ? o->sysroot : "/";
	ctx.facts = o->facts;
	ctx.check_mode = o->check_mode;
	ctx.command_timeout_ms =
		o->command_timeout_ms > 0 ? o->command_timeout_ms : DEFAULT_COMMAND_TIMEOUT_MS;
	ctx.results = s.steps;
	ctx.before_reboot = o->before_reboot;
	ctx.userdata = o->userdata;
	ctx.reboot_argv = o->reboot_argv;
	if (!o->check_mode) {
		r = make_backup_dir(o, &ctx.backup_dir);
		if (r < 0)
			goto fail;
	}

	if (o->resume_from > s.n_steps) {
		r = -EINVAL;
		goto fail;
	}
	for (size_t i = 0; i < o->resume_from; i++) {
		const json_t *step = json_array_get(steps, i);
		const struct apply_step_result *pr = &o->prior[i];
		struct apply_step_result *res = &s.steps[i];

		*res = (struct apply_step_result){
			.name = xstrdup(json_string_value(json_object_get(step, "name"))),
			.type = xstrdup(json_string_value(json_object_get(step, "type"))),
			.status = pr->status,
			.diff = xstrdup(pr->diff),
			.message = xstrdup(pr->message),
			.duration_ms = pr->duration_ms,
			.rolled_back = pr->rolled_back,
		};
		if (!res->name || !res->type || !res->diff || !res->message) {
			r = -ENOMEM;
			goto fail;
		}
		count(&s, res, step, &failed_name);
	}
	s.n_done = o->resume_from;
	for (size_t i = o->resume_from; i < s.n_steps; i++) {
		const json_t *step = json_array_get(steps, i);
		const json_t *when = json_object_get(step, "when");
		struct apply_step_result *res = &s.steps[i];
		int64_t t0 = util_now_mono_ms();
		bool skip = false;

		ctx.step_index = i;
		if (failed_name) {
			skip = true;
			apply_ctx_note(&ctx, "not run: step \"%s\" failed", failed_name);
		} else if (when) {
			char msg[512] = "";
			bool ok = false;
			int w = playbook_cond_eval(when, o->facts, &ok, msg, sizeof(msg));

			if (w == -ENOENT || (w == 0 && !ok)) {
				skip = true;
				apply_ctx_note(&ctx, "when: %s",
					       msg[0] ? msg : "condition is false");
			} else if (w < 0) {
				res->status = APPLY_STATUS_FAILED;
				(void)apply_ctx_fail(&ctx, w, "when: %s",
						     msg[0] ? msg : ry_strerror(w));
			}
		}
		if (!skip && res->status != APPLY_STATUS_FAILED && o->before_step &&
		    !o->before_step(i, o->userdata)) {
			apply_buf_done(&ctx.message);
			s.interrupted = true;
			break;
		}
		res->name = xstrdup(json_string_value(json_object_get(step, "name")));
		res->type = xstrdup(json_string_value(json_object_get(step, "type")));
		if (!res->name || !res->type) {
			r = -ENOMEM;
			goto fail;
		}
		if (skip || res->status == APPLY_STATUS_FAILED) {
			if (skip)
				res->status = APPLY_STATUS_SKIPPED;
			r = apply_buf_take(&ctx.message, &res->message);
			if (r < 0)
				goto fail;
			res->diff = strdup("");
			if (!res->diff) {
				r = -ENOMEM;
				goto fail;
			}
		} else {
			r = run_step(&ctx, res->type, json_object_get(step, "params"), res);
			if (r < 0)
				goto fail;
			if (ctx.rebooting) {
				/* Handed over to a reboot: no result for this step until the boot,
				 * no step after it now. */
				s.rebooting = true;
				break;
			}
		}
		res->duration_ms = util_now_mono_ms() - t0;
		count(&s, res, step, &failed_name);
		s.n_done = i + 1;
		log_debug("apply: step %zu \"%s\" (%s): %s", i, res->name, res->type,
			  apply_status_name(res->status));
		if (o->on_step)
			o->on_step(res, i, s.n_steps, o->userdata);
	}
	if (ctx.backup_dir && o->state_dir) {
		/* A run that backed nothing up leaves no directory behind. */
		if (rmdir(ctx.backup_dir) < 0) {
			s.backup_dir = ctx.backup_dir;
			ctx.backup_dir = NULL;
		}
	}
	r = 0;
	*ret = s;
	s = (struct apply_summary){0};
fail:
	if (ctx.backup_dir && !o->state_dir)
		(void)nftw(ctx.backup_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(ctx.backup_dir);
	apply_buf_done(&ctx.message);
	apply_buf_done(&ctx.headline);
	apply_ctx_step_reset(&ctx);
	apply_summary_done(&s);
	return r;
}

void apply_summary_done(struct apply_summary *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->steps && i < s->n_steps; i++) {
		free(s->steps[i].name);
		free(s->steps[i].type);
		free(s->steps[i].diff);
		free(s->steps[i].message);
	}
	free(s->steps);
	free(s->backup_dir);
	*s = (struct apply_summary){0};
}

json_t *apply_summary_to_json(const struct apply_summary *s)
{
	json_t *steps = json_array(), *o;

	if (!steps)
		return NULL;
	for (size_t i = 0; i < s->n_steps; i++) {
		const struct apply_step_result *st = &s->steps[i];

		if (json_array_append_new(steps,
					  json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:b}", "name",
						    st->name ? st->name : "", "type",
						    st->type ? st->type : "", "status",
						    apply_status_name(st->status), "diff",
						    st->diff ? st->diff : "", "message",
						    st->message ? st->message : "", "duration_ms",
						    (json_int_t)st->duration_ms, "rolled_back",
						    st->rolled_back)) < 0) {
			json_decref(steps);
			return NULL;
		}
	}
	o = json_pack("{s:b, s:b, s:I, s:I, s:I, s:I, s:o}", "check_mode", s->check_mode, "stopped",
		      s->stopped, "ok", (json_int_t)s->n_ok, "changed", (json_int_t)s->n_changed,
		      "failed", (json_int_t)s->n_failed, "skipped", (json_int_t)s->n_skipped,
		      "steps", steps);
	return o;
}
