/* Executor helpers: growable strings, step messages, sysroot file access with backups and
 * rollback, runner calls with the sysroot seam, parameter access. */
#include "nodeagent/apply/apply_int.h"

#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Longest text kept in one buffer (diffs and messages): an append beyond it fails. */
#define BUF_MAX (4 * 1024 * 1024 - 1)

/* A zeroed buffer gets its max on first use. */
static struct ry_buf *buf_of(struct apply_buf *b)
{
	if (b->rb.max == 0)
		ry_buf_init(&b->rb, BUF_MAX);
	return &b->rb;
}

void apply_buf_append(struct apply_buf *b, const char *s, size_t n)
{
	/* A failure sticks in the buffer; apply_buf_take() reports it. */
	ry_buf_addn(buf_of(b), s, n);
}

void apply_buf_puts(struct apply_buf *b, const char *s)
{
	apply_buf_append(b, s, strlen(s));
}

void apply_buf_putc(struct apply_buf *b, char c)
{
	apply_buf_append(b, &c, 1);
}

static void buf_vprintf(struct apply_buf *b, const char *fmt, va_list ap)
{
	ry_buf_vaddf(buf_of(b), fmt, ap);
}

void apply_buf_printf(struct apply_buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	buf_vprintf(b, fmt, ap);
	va_end(ap);
}

int apply_buf_take(struct apply_buf *b, char **ret)
{
	int r = ry_buf_take(buf_of(b), ret, NULL);

	/* Past the max or out of memory: either way the text is lost, as when out of memory. */
	*b = (struct apply_buf){0};
	return r < 0 ? -ENOMEM : 0;
}

void apply_buf_done(struct apply_buf *b)
{
	if (!b)
		return;
	ry_buf_done(&b->rb);
	*b = (struct apply_buf){0};
}

const char *apply_buf_str(const struct apply_buf *b)
{
	return ry_buf_str(&b->rb);
}

size_t apply_buf_len(const struct apply_buf *b)
{
	return ry_buf_len(&b->rb);
}

bool apply_buf_failed(const struct apply_buf *b)
{
	return ry_buf_error(&b->rb) != 0;
}

int apply_ctx_fail(struct apply_ctx *ctx, int err, const char *fmt, ...)
{
	va_list ap;

	if (apply_buf_len(&ctx->message) > 0)
		apply_buf_puts(&ctx->message, "; ");
	va_start(ap, fmt);
	buf_vprintf(&ctx->message, fmt, ap);
	va_end(ap);
	return err;
}

void apply_ctx_headline(struct apply_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	if (apply_buf_len(&ctx->headline) > 0)
		apply_buf_puts(&ctx->headline, "; ");
	va_start(ap, fmt);
	buf_vprintf(&ctx->headline, fmt, ap);
	va_end(ap);
}

void apply_ctx_note(struct apply_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	buf_vprintf(&ctx->message, fmt, ap);
	va_end(ap);
}

int apply_ctx_path(struct apply_ctx *ctx, const char *path, char **ret_host)
{
	int r = apply_path_resolve(ctx->sysroot, path, ret_host);

	if (r < 0)
		return apply_ctx_fail(ctx, r, "%s: %s", path, ry_strerror(r));
	return 0;
}

int apply_ctx_read(struct apply_ctx *ctx, const char *path, char **ret_buf, size_t *ret_len,
		   bool *ret_exists)
{
	char *host = NULL, *buf = NULL;
	size_t len = 0;
	int r;

	r = apply_ctx_path(ctx, path, &host);
	if (r < 0)
		return r;
	r = fs_read_file(host, APPLY_FILE_MAX, &buf, &len);
	free(host);
	if (r == -ENOENT) {
		buf = strdup("");
		if (!buf)
			return -ENOMEM;
		*ret_buf = buf;
		if (ret_len)
			*ret_len = 0;
		*ret_exists = false;
		return 0;
	}
	if (r < 0)
		return apply_ctx_fail(ctx, r, "%s: cannot read: %s", path, ry_strerror(r));
	*ret_buf = buf;
	if (ret_len)
		*ret_len = len;
	*ret_exists = true;
	return 0;
}

static struct apply_backup *find_backup(struct apply_ctx *ctx, const char *host)
{
	for (size_t i = 0; i < ctx->n_backups; i++)
		if (ctx->backups[i].host_path && strcmp(ctx->backups[i].host_path, host) == 0)
			return &ctx->backups[i];
	return NULL;
}

static int backups_grow(struct apply_ctx *ctx)
{
	if (ctx->n_backups == ctx->cap_backups) {
		size_t cap = ctx->cap_backups ? ctx->cap_backups * 2 : 8;
		struct apply_backup *nb = realloc(ctx->backups, cap * sizeof(*nb));

		if (!nb)
			return -ENOMEM;
		ctx->backups = nb;
		ctx->cap_backups = cap;
	}
	return 0;
}

static void free_argv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

int apply_ctx_undo_cmd(struct apply_ctx *ctx, const char *const *argv)
{
	size_t n = 0;
	char **v;

	if (!ctx->backup_dir || !argv || !argv[0])
		return -EINVAL; /* programmer error: changing in check mode */
	while (argv[n])
		n++;
	if (backups_grow(ctx) < 0)
		return -ENOMEM;
	v = calloc(n + 1, sizeof(*v));
	for (size_t i = 0; v && i < n; i++) {
		v[i] = strdup(argv[i]);
		if (!v[i]) {
			free_argv(v);
			v = NULL;
		}
	}
	if (!v)
		return -ENOMEM;
	ctx->backups[ctx->n_backups++] = (struct apply_backup){.undo_argv = v};
	log_debug("apply: undo registered: %s ...", argv[0]);
	return 0;
}

/* Record (and copy) the original state of host before the first change in this step. */
static int backup(struct apply_ctx *ctx, const char *host, bool in_place)
{
	struct apply_backup b = {.in_place = in_place};
	struct stat st;
	char *data = NULL;
	size_t len = 0;
	int r;

	if (find_backup(ctx, host))
		return 0;
	if (!ctx->backup_dir)
		return -EINVAL; /* programmer error: writing in check mode */
	if (backups_grow(ctx) < 0)
		return -ENOMEM;
	if (lstat(host, &st) < 0) {
		if (errno != ENOENT)
			return -errno;
	} else {
		if (!S_ISREG(st.st_mode))
			return -EISDIR;
		b.existed = true;
		b.mode = st.st_mode & 07777;
		b.uid = st.st_uid;
		b.gid = st.st_gid;
		r = fs_read_file(host, APPLY_FILE_MAX, &data, &len);
		if (r < 0)
			return r;
		if (asprintf(&b.backup_path, "%s/%zu-%zu", ctx->backup_dir, ctx->step_index,
			     ctx->backup_seq++) < 0) {
			free(data);
			return -ENOMEM;
		}
		r = fs_write_file_atomic(b.backup_path, data, len, 0600);
		free(data);
		if (r < 0) {
			free(b.backup_path);
			return r;
		}
	}
	b.host_path = strdup(host);
	if (!b.host_path) {
		if (b.backup_path)
			(void)unlink(b.backup_path);
		free(b.backup_path);
		return -ENOMEM;
	}
	ctx->backups[ctx->n_backups++] = b;
	log_debug("apply: backed up %s%s", host, b.existed ? "" : " (absent)");
	return 0;
}

static int write_in_place(const char *host, const void *data, size_t len)
{
	const char *p = data;
	int fd, r = 0;

	fd = open(host, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		p += n;
		len -= (size_t)n;
	}
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

int apply_ctx_write_file(struct apply_ctx *ctx, const char *path, const void *data, size_t len,
			 mode_t mode)
{
	struct apply_backup *b;
	char *host = NULL, *dir = NULL;
	int r;

	r = apply_ctx_path(ctx, path, &host);
	if (r < 0)
		return r;
	r = backup(ctx, host, false);
	if (r < 0) {
		(void)apply_ctx_fail(ctx, r, "%s: cannot back up: %s", path, ry_strerror(r));
		goto out;
	}
	dir = strdup(host);
	if (!dir) {
		r = -ENOMEM;
		goto out;
	}
	r = fs_mkdir_p(dirname(dir), 0755);
	if (r == 0)
		r = fs_write_file_atomic(host, data, len, mode);
	if (r < 0) {
		(void)apply_ctx_fail(ctx, r, "%s: cannot write: %s", path, ry_strerror(r));
		goto out;
	}
	b = find_backup(ctx, host);
	if (b && b->existed && geteuid() == 0)
		(void)lchown(host, b->uid, b->gid); /* keep the owner of the file replaced */
out:
	free(dir);
	free(host);
	return r;
}

int apply_ctx_write_value(struct apply_ctx *ctx, const char *path, const char *value)
{
	char *host = NULL, *line = NULL;
	struct stat st;
	int r;

	r = apply_ctx_path(ctx, path, &host);
	if (r < 0)
		return r;
	if (lstat(host, &st) < 0) {
		r = apply_ctx_fail(ctx, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	r = backup(ctx, host, true);
	if (r < 0) {
		(void)apply_ctx_fail(ctx, r, "%s: cannot back up: %s", path, ry_strerror(r));
		goto out;
	}
	if (asprintf(&line, "%s\n", value) < 0) {
		r = -ENOMEM;
		goto out;
	}
	r = write_in_place(host, line, strlen(line));
	if (r < 0)
		(void)apply_ctx_fail(ctx, r, "%s: cannot write: %s", path, ry_strerror(r));
out:
	free(line);
	free(host);
	return r;
}

int apply_ctx_remove_file(struct apply_ctx *ctx, const char *path)
{
	char *host = NULL;
	int r;

	r = apply_ctx_path(ctx, path, &host);
	if (r < 0)
		return r;
	r = backup(ctx, host, false);
	if (r < 0)
		(void)apply_ctx_fail(ctx, r, "%s: cannot back up: %s", path, ry_strerror(r));
	else if (unlink(host) < 0 && errno != ENOENT)
		r = apply_ctx_fail(ctx, -errno, "%s: cannot remove: %s", path, strerror(errno));
	free(host);
	return r;
}

int apply_ctx_chmod_chown(struct apply_ctx *ctx, const char *path, mode_t mode, uid_t uid,
			  gid_t gid, bool set_mode)
{
	char *host = NULL;
	int r;

	r = apply_ctx_path(ctx, path, &host);
	if (r < 0)
		return r;
	r = backup(ctx, host, false);
	if (r < 0) {
		(void)apply_ctx_fail(ctx, r, "%s: cannot back up: %s", path, ry_strerror(r));
		goto out;
	}
	if (set_mode && chmod(host, mode) < 0) {
		r = apply_ctx_fail(ctx, -errno, "%s: chmod: %s", path, strerror(errno));
		goto out;
	}
	if ((uid != (uid_t)-1 || gid != (gid_t)-1) && lchown(host, uid, gid) < 0) {
		r = apply_ctx_fail(ctx, -errno, "%s: chown: %s", path, strerror(errno));
		goto out;
	}
	r = 0;
out:
	free(host);
	return r;
}

int apply_ctx_rollback(struct apply_ctx *ctx)
{
	int first = 0;

	for (size_t i = ctx->n_backups; i-- > 0;) {
		struct apply_backup *b = &ctx->backups[i];
		char *data = NULL;
		size_t len = 0;
		int r;

		if (b->undo_argv) {
			r = apply_ctx_run_ok(ctx, (const char *const *)b->undo_argv, NULL);
			log_debug("apply: undo %s: %s", b->undo_argv[0],
				  r < 0 ? ry_strerror(r) : "ok");
			if (r < 0 && first == 0)
				first = r;
			continue;
		}
		if (!b->existed) {
			r = unlink(b->host_path) < 0 && errno != ENOENT ? -errno : 0;
		} else {
			r = fs_read_file(b->backup_path, APPLY_FILE_MAX, &data, &len);
			if (r == 0 && b->in_place)
				r = write_in_place(b->host_path, data, len);
			else if (r == 0) {
				r = fs_write_file_atomic(b->host_path, data, len, b->mode);
				if (r == 0 && geteuid() == 0)
					(void)lchown(b->host_path, b->uid, b->gid);
			}
			free(data);
		}
		log_debug("apply: restored %s: %s", b->host_path, r < 0 ? ry_strerror(r) : "ok");
		if (r < 0 && first == 0)
			first = r;
	}
	return first;
}

void apply_ctx_step_reset(struct apply_ctx *ctx)
{
	for (size_t i = 0; i < ctx->n_backups; i++) {
		free_argv(ctx->backups[i].undo_argv);
		free(ctx->backups[i].host_path);
		free(ctx->backups[i].backup_path);
	}
	free(ctx->backups);
	ctx->backups = NULL;
	ctx->n_backups = ctx->cap_backups = 0;
	ctx->tool_error[0] = '\0';
}

static int ctx_run(struct apply_ctx *ctx, const char *const *argv, int64_t timeout_ms, bool tool,
		   struct runner_result *ret)
{
	static const char *const env[] = {"DEBIAN_FRONTEND=noninteractive", NULL};
	struct runner_cmd c = {
		.argv = argv,
		.sysroot = ctx->sysroot,
		.timeout_ms = timeout_ms > 0 ? timeout_ms : ctx->command_timeout_ms,
		.env_extra = env,
		.sysroot_only = tool,
	};
	bool fixture = ctx->sysroot && ctx->sysroot[0] && strcmp(ctx->sysroot, "/") != 0;
	int r = runner_run(&c, ret);

	if (r == -ENOENT && tool && fixture)
		return apply_ctx_fail(ctx, r,
				      "cannot run %s: not in %s/usr/local/{sbin,bin} (with a "
				      "sysroot other than /, system tools come from the sysroot, "
				      "never from the host)",
				      argv[0], ctx->sysroot);
	if (r < 0)
		return apply_ctx_fail(ctx, r, "cannot run %s: %s", argv[0], ry_strerror(r));
	return 0;
}

int apply_ctx_run(struct apply_ctx *ctx, const char *const *argv, int64_t timeout_ms,
		  struct runner_result *ret)
{
	return ctx_run(ctx, argv, timeout_ms, false, ret);
}

int apply_ctx_run_tool(struct apply_ctx *ctx, const char *const *argv, struct runner_result *ret)
{
	return ctx_run(ctx, argv, 0, true, ret);
}

int apply_ctx_run_undoable(struct apply_ctx *ctx, const char *const *argv, const char *const *undo)
{
	int r = apply_ctx_run_ok(ctx, argv, NULL);

	if (r < 0 || !undo)
		return r;
	r = apply_ctx_undo_cmd(ctx, undo);
	return r < 0 ? apply_ctx_fail(ctx, r, "cannot record how to undo %s", argv[0]) : 0;
}

int apply_ctx_run_ok(struct apply_ctx *ctx, const char *const *argv, struct runner_result *ret_opt)
{
	struct runner_result res;
	char desc[128];
	int r;

	r = apply_ctx_run_tool(ctx, argv, &res);
	if (r < 0)
		return r;
	if (res.timed_out || res.term_signal || res.exit_code != 0) {
		struct apply_buf cmd = {0};
		size_t n = res.err_len;

		while (n > 0 && (res.err[n - 1] == '\n' || res.err[n - 1] == ' '))
			n--;
		for (size_t i = 0; argv[i]; i++)
			apply_buf_printf(&cmd, "%s%s", i ? " " : "", argv[i]);
		{
			size_t skip = 0, line;

			while (skip < n && (res.err[skip] == '\n' || res.err[skip] == ' '))
				skip++;
			line = strcspn(res.err + skip, "\n");
			if (line > n - skip)
				line = n - skip;
			if (line)
				snprintf(ctx->tool_error, sizeof(ctx->tool_error), "%.*s",
					 (int)line, res.err + skip);
			else
				runner_result_describe(&res, ctx->tool_error,
						       sizeof(ctx->tool_error));
		}
		r = apply_ctx_fail(ctx, res.timed_out ? -ETIMEDOUT : -RY_E_UNMET, "`%s` %s%s%.*s",
				   apply_buf_len(&cmd) ? apply_buf_str(&cmd) : argv[0],
				   runner_result_describe(&res, desc, sizeof(desc)), n ? ": " : "",
				   (int)(n > 512 ? 512 : n), res.err);
		apply_buf_done(&cmd);
		runner_result_done(&res);
		return r;
	}
	if (ret_opt)
		*ret_opt = res;
	else
		runner_result_done(&res);
	return 0;
}

const char *apply_param_str(const json_t *params, const char *key)
{
	return json_string_value(json_object_get(params, key));
}

bool apply_param_bool(const json_t *params, const char *key, bool dflt)
{
	const json_t *v = json_object_get(params, key);

	return json_is_boolean(v) ? json_is_true(v) : dflt;
}

json_int_t apply_param_int(const json_t *params, const char *key, json_int_t dflt)
{
	const json_t *v = json_object_get(params, key);

	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

int apply_file_diff(struct apply_ctx *ctx, const char *path, const char *content, size_t len,
		    struct apply_change *out)
{
	char *cur = NULL, *diff = NULL, *la = NULL;
	size_t curlen = 0;
	bool exists;
	int r;

	r = apply_ctx_read(ctx, path, &cur, &curlen, &exists);
	if (r < 0)
		return r;
	if (exists && curlen == len && memcmp(cur, content, len) == 0)
		goto out;
	if (asprintf(&la, "%s", exists ? path : "/dev/null") < 0) {
		r = -ENOMEM;
		goto out;
	}
	r = apply_diff_unified(cur, curlen, content, len, la, path, &diff);
	if (r < 0) {
		(void)apply_ctx_fail(ctx, r, "%s: cannot diff: %s", path, ry_strerror(r));
		goto out;
	}
	out->changed = true;
	apply_buf_puts(&out->diff, diff);
	if (!exists && len == 0)
		apply_buf_printf(&out->diff, "create empty file %s\n", path);
out:
	free(la);
	free(diff);
	free(cur);
	return r;
}

int apply_verify_by_check(struct apply_ctx *ctx, const json_t *params,
			  int (*check)(struct apply_ctx *, const json_t *, struct apply_change *))
{
	struct apply_change c = {0};
	int r = check(ctx, params, &c);

	if (r == 0 && c.changed)
		r = apply_ctx_fail(ctx, -RY_E_UNMET, "verify: still differs after apply:\n%s",
				   apply_buf_str(&c.diff));
	apply_buf_done(&c.diff);
	return r;
}
