/* Executor file: a node file with the wanted content (the plan carries a rendered template as
 * content), mode and owner/group; written atomically after a backup. */
#include "nodeagent/apply/apply_int.h"

#include "common/util/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define P_PATH	  "path"
#define P_CONTENT "content"
#define P_MODE	  "mode"
#define P_OWNER	  "owner"
#define P_GROUP	  "group"

struct file_want {
	const char *path;
	const char *content; /* NULL: content not managed */
	bool has_mode;
	mode_t mode;
	long uid, gid; /* -1: not managed */
};

/* Look a user or group name up in the sysroot's etc/passwd or etc/group (numeric ids are taken
 * as they are); the node's own database, not the agent's. */
static int lookup_id(struct apply_ctx *ctx, const char *db, const char *name, long *ret)
{
	char *buf = NULL, *save = NULL, *end;
	bool exists;
	long id;
	int r;

	id = strtol(name, &end, 10);
	if (*name && !*end && id >= 0) {
		*ret = id;
		return 0;
	}
	r = apply_ctx_read(ctx, db, &buf, NULL, &exists);
	if (r < 0)
		return r;
	r = -RY_E_NOT_FOUND;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f1 = strchr(line, ':'), *f2 = f1 ? strchr(f1 + 1, ':') : NULL;

		if (!f1 || !f2 || (size_t)(f1 - line) != strlen(name) ||
		    strncmp(line, name, strlen(name)) != 0)
			continue;
		id = strtol(f2 + 1, &end, 10);
		if (*end == ':' && id >= 0) {
			*ret = id;
			r = 0;
		}
		break;
	}
	free(buf);
	if (r < 0)
		return apply_ctx_fail(ctx, r, "\"%s\" not found in %s", name, db);
	return 0;
}

static int file_want(struct apply_ctx *ctx, const json_t *params, struct file_want *w)
{
	const char *mode = apply_param_str(params, P_MODE);
	const char *owner = apply_param_str(params, P_OWNER),
		   *group = apply_param_str(params, P_GROUP);
	int r;

	*w = (struct file_want){.uid = -1, .gid = -1};
	w->path = apply_param_str(params, P_PATH);
	w->content = apply_param_str(params, P_CONTENT);
	if (!w->path)
		return apply_ctx_fail(ctx, -RY_E_INVALID, "missing " P_PATH);
	if (mode && *mode) {
		char *end;
		unsigned long m = strtoul(mode, &end, 8);

		if (*end || m > 07777)
			return apply_ctx_fail(ctx, -RY_E_INVALID, "mode \"%s\" is not octal", mode);
		w->has_mode = true;
		w->mode = (mode_t)m;
	}
	if (owner && *owner && (r = lookup_id(ctx, "/etc/passwd", owner, &w->uid)) < 0)
		return r;
	if (group && *group && (r = lookup_id(ctx, "/etc/group", group, &w->gid)) < 0)
		return r;
	return 0;
}

static int file_stat(struct apply_ctx *ctx, const char *path, struct stat *st, bool *ret_exists)
{
	char *host = NULL;
	int r = apply_ctx_path(ctx, path, &host);

	if (r < 0)
		return r;
	*ret_exists = true;
	if (stat(host, st) < 0) {
		r = errno == ENOENT ? 0
				    : apply_ctx_fail(ctx, -errno, "%s: %s", path, strerror(errno));
		*ret_exists = false;
	} else if (!S_ISREG(st->st_mode)) {
		r = apply_ctx_fail(ctx, -EISDIR, "%s: not a regular file", path);
	}
	free(host);
	return r;
}

/* Shared by check and apply: compute the differences and, when doit, make them. */
static int file_run(struct apply_ctx *ctx, const json_t *params, struct apply_change *out,
		    bool doit)
{
	struct file_want w;
	struct stat st;
	bool exists;
	int r;

	r = file_want(ctx, params, &w);
	if (r < 0)
		return r;
	r = file_stat(ctx, w.path, &st, &exists);
	if (r < 0)
		return r;
	if (!exists && !w.content)
		return apply_ctx_fail(ctx, -ENOENT, "%s does not exist and the step gives no %s",
				      w.path, P_CONTENT);
	if (w.content) {
		size_t before = apply_buf_len(&out->diff);

		r = apply_file_diff(ctx, w.path, w.content, strlen(w.content), out);
		if (r < 0)
			return r;
		if (apply_buf_len(&out->diff) != before && doit) {
			mode_t m = w.has_mode ? w.mode : exists ? (st.st_mode & 07777) : 0644;

			r = apply_ctx_write_file(ctx, w.path, w.content, strlen(w.content), m);
			if (r < 0)
				return r;
			r = file_stat(ctx, w.path, &st, &exists);
			if (r < 0)
				return r;
		}
	}
	if (w.has_mode && (!exists || (st.st_mode & 07777) != w.mode)) {
		out->changed = true;
		if (exists)
			apply_buf_printf(&out->diff, "%s mode: %04o -> %04o\n", w.path,
					 (unsigned)(st.st_mode & 07777), (unsigned)w.mode);
		else
			apply_buf_printf(&out->diff, "%s mode: (new) -> %04o\n", w.path,
					 (unsigned)w.mode);
		if (doit && exists &&
		    (r = apply_ctx_chmod_chown(ctx, w.path, w.mode, (uid_t)-1, (gid_t)-1, true)) <
			    0)
			return r;
	}
	if ((w.uid >= 0 && (!exists || st.st_uid != (uid_t)w.uid)) ||
	    (w.gid >= 0 && (!exists || st.st_gid != (gid_t)w.gid))) {
		out->changed = true;
		if (w.uid >= 0 && (!exists || st.st_uid != (uid_t)w.uid))
			apply_buf_printf(&out->diff, "%s owner: %ld -> %ld\n", w.path,
					 exists ? (long)st.st_uid : -1L, w.uid);
		if (w.gid >= 0 && (!exists || st.st_gid != (gid_t)w.gid))
			apply_buf_printf(&out->diff, "%s group: %ld -> %ld\n", w.path,
					 exists ? (long)st.st_gid : -1L, w.gid);
		if (doit && (r = apply_ctx_chmod_chown(ctx, w.path, 0, (uid_t)w.uid, (gid_t)w.gid,
						       false)) < 0)
			return r;
	}
	return 0;
}

static int file_check(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	return file_run(ctx, params, out, false);
}

static int file_apply(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	return file_run(ctx, params, out, true);
}

static int file_verify(struct apply_ctx *ctx, const json_t *params)
{
	return apply_verify_by_check(ctx, params, file_check);
}

const struct apply_step_ops apply_ops_file = {
	.type = "file",
	.check = file_check,
	.apply = file_apply,
	.verify = file_verify,
};
