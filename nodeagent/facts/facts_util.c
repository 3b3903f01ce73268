/* Helpers for the fact collectors: reads under the sysroot that turn failures into warnings,
 * sorted directory listings, JSON setters that record allocation failure, value parsers. */
#include "nodeagent/facts/facts_int.h"

#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/fs.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void facts_warn(struct facts_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	char *msg;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r < 0) {
		ctx->oom = true;
		return;
	}
	log_debug("facts: %s", msg);
	if (json_array_append_new(ctx->warnings, json_string(msg)) < 0)
		ctx->oom = true;
	free(msg);
}

/* Format the sysroot-relative path; NULL (and ctx->oom) on allocation failure. */
static char *facts_vrel(struct facts_ctx *ctx, const char *fmt, va_list ap)
{
	char *rel;

	if (vasprintf(&rel, fmt, ap) < 0) {
		ctx->oom = true;
		return NULL;
	}
	return rel;
}

/* Record a failed read of rel (error r) as flags say. */
static void facts_read_failed(struct facts_ctx *ctx, unsigned flags, const char *rel, int r)
{
	if (r == -ENOMEM) {
		ctx->oom = true;
		return;
	}
	if (flags & FACTS_QUIET)
		return;
	if (r == -ENOENT && (flags & FACTS_OPTIONAL))
		return;
	facts_warn(ctx, "/%s: cannot read: %s", rel, ry_strerror(r));
}

static int facts_vread(struct facts_ctx *ctx, unsigned flags, bool whole, char **ret_value,
		       const char *fmt, va_list ap)
{
	char *rel, *path = NULL, *buf = NULL;
	int r;

	rel = facts_vrel(ctx, fmt, ap);
	if (!rel)
		return -ENOMEM;
	path = fs_path_join(ctx->sysroot, rel);
	if (!path) {
		r = -ENOMEM;
		ctx->oom = true;
		goto out;
	}
	if (whole)
		r = fs_read_file(path, FACTS_MAX_FILE_SIZE, &buf, NULL);
	else
		r = fs_read_attr(path, &buf);
	if (r < 0) {
		facts_read_failed(ctx, flags, rel, r);
		goto out;
	}
	if (!facts_text_ok(buf)) {
		if (!(flags & FACTS_QUIET))
			facts_warn(ctx, "/%s: malformed: not UTF-8 text", rel);
		r = -RY_E_INVALID;
		goto out;
	}
	*ret_value = buf;
	buf = NULL;
	r = 0;
out:
	free(buf);
	free(path);
	free(rel);
	return r;
}

int facts_read_attrf(struct facts_ctx *ctx, unsigned flags, char **ret_value, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = facts_vread(ctx, flags, false, ret_value, fmt, ap);
	va_end(ap);
	return r;
}

int facts_read_filef(struct facts_ctx *ctx, unsigned flags, char **ret_value, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = facts_vread(ctx, flags, true, ret_value, fmt, ap);
	va_end(ap);
	return r;
}

int facts_readlinkf(struct facts_ctx *ctx, unsigned flags, char **ret_target, const char *fmt, ...)
{
	char *rel, *path = NULL, *target = NULL;
	va_list ap;
	ssize_t n;
	int r;

	va_start(ap, fmt);
	rel = facts_vrel(ctx, fmt, ap);
	va_end(ap);
	if (!rel)
		return -ENOMEM;
	path = fs_path_join(ctx->sysroot, rel);
	target = malloc(PATH_MAX);
	if (!path || !target) {
		r = -ENOMEM;
		ctx->oom = true;
		goto out;
	}
	n = readlink(path, target, PATH_MAX - 1);
	if (n < 0) {
		r = -errno;
		facts_read_failed(ctx, flags, rel, r);
		goto out;
	}
	target[n] = '\0';
	*ret_target = target;
	target = NULL;
	r = 0;
out:
	free(target);
	free(path);
	free(rel);
	return r;
}

int facts_realpathf(struct facts_ctx *ctx, unsigned flags, char **ret_rel, const char *fmt, ...)
{
	char *rel, *path = NULL, *root = NULL, *full = NULL, *out;
	const char *inside = NULL;
	size_t len;
	va_list ap;
	int r;

	va_start(ap, fmt);
	rel = facts_vrel(ctx, fmt, ap);
	va_end(ap);
	if (!rel)
		return -ENOMEM;
	path = fs_path_join(ctx->sysroot, rel);
	if (!path) {
		r = -ENOMEM;
		ctx->oom = true;
		goto out;
	}
	root = realpath(ctx->sysroot, NULL);
	full = root ? realpath(path, NULL) : NULL;
	if (!full) {
		r = -errno;
		facts_read_failed(ctx, flags, rel, r);
		goto out;
	}
	len = strlen(root);
	if (strcmp(root, "/") == 0)
		inside = full + 1;
	else if (strncmp(full, root, len) == 0 && full[len] == '/')
		inside = full + len + 1;
	if (!inside) {
		r = -EXDEV;
		if (!(flags & FACTS_QUIET))
			facts_warn(ctx, "/%s: leads outside the sysroot", rel);
		goto out;
	}
	out = strdup(inside);
	if (!out) {
		r = -ENOMEM;
		ctx->oom = true;
		goto out;
	}
	*ret_rel = out;
	r = 0;
out:
	free(full);
	free(root);
	free(path);
	free(rel);
	return r;
}

static bool facts_name_ok(const char *name)
{
	if (name[0] == '.' || name[0] == '\0')
		return false;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			return false;
	return true;
}

static int facts_name_cmp(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

static int facts_name_cmp_bytes(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void facts_names_done(struct facts_names *names)
{
	if (!names)
		return;
	for (size_t i = 0; i < names->n; i++)
		free(names->v[i]);
	free(names->v);
	names->v = NULL;
	names->n = 0;
}

/* Listing of the directory at the formatted path; with a prefix, only the names that start with
 * it are kept (and counted against the bound). */
static int facts_vlist_dir(struct facts_ctx *ctx, unsigned flags, const char *prefix,
			   struct facts_names *ret_names, const char *fmt, va_list ap)
{
	struct facts_names names = {0};
	char *rel, *path = NULL;
	struct dirent *de;
	size_t cap = 0;
	DIR *d = NULL;
	int r;

	rel = facts_vrel(ctx, fmt, ap);
	if (!rel)
		return -ENOMEM;
	path = fs_path_join(ctx->sysroot, rel);
	if (!path) {
		r = -ENOMEM;
		ctx->oom = true;
		goto out;
	}
	d = opendir(path);
	if (!d) {
		r = -errno;
		facts_read_failed(ctx, flags, rel, r);
		goto out;
	}
	while ((de = readdir(d))) {
		if (!facts_name_ok(de->d_name)) {
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				log_debug("facts: /%s: skipping entry with unusual name", rel);
			continue;
		}
		if (prefix && strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		if (names.n == FACTS_MAX_DIR_ENTRIES) {
			facts_warn(ctx, "/%s: more than %d entries, rest ignored", rel,
				   FACTS_MAX_DIR_ENTRIES);
			break;
		}
		if (names.n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			char **nv = realloc(names.v, ncap * sizeof(*nv));

			if (!nv) {
				r = -ENOMEM;
				ctx->oom = true;
				goto out;
			}
			names.v = nv;
			cap = ncap;
		}
		names.v[names.n] = strdup(de->d_name);
		if (!names.v[names.n]) {
			r = -ENOMEM;
			ctx->oom = true;
			goto out;
		}
		names.n++;
	}
	if (names.n > 1)
		qsort(names.v, names.n, sizeof(*names.v),
		      (flags & FACTS_SORT_BYTES) ? facts_name_cmp_bytes : facts_name_cmp);
	*ret_names = names;
	names = (struct facts_names){0};
	r = 0;
out:
	if (d)
		closedir(d);
	facts_names_done(&names);
	free(path);
	free(rel);
	return r;
}

int facts_list_dirf(struct facts_ctx *ctx, unsigned flags, struct facts_names *ret_names,
		    const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = facts_vlist_dir(ctx, flags, NULL, ret_names, fmt, ap);
	va_end(ap);
	return r;
}

int facts_list_dir_prefixf(struct facts_ctx *ctx, unsigned flags, const char *prefix,
			   struct facts_names *ret_names, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = facts_vlist_dir(ctx, flags, prefix, ret_names, fmt, ap);
	va_end(ap);
	return r;
}

void facts_set_new(struct facts_ctx *ctx, json_t *obj, const char *key, json_t *value)
{
	if (!value || json_object_set_new(obj, key, value) < 0)
		ctx->oom = true;
}

void facts_set_str(struct facts_ctx *ctx, json_t *obj, const char *key, const char *value)
{
	facts_set_new(ctx, obj, key, json_string(value));
}

void facts_set_int(struct facts_ctx *ctx, json_t *obj, const char *key, long long value)
{
	facts_set_new(ctx, obj, key, json_integer(value));
}

void facts_set_bool(struct facts_ctx *ctx, json_t *obj, const char *key, bool value)
{
	facts_set_new(ctx, obj, key, json_boolean(value));
}

void facts_append_new(struct facts_ctx *ctx, json_t *arr, json_t *value)
{
	if (!value || json_array_append_new(arr, value) < 0)
		ctx->oom = true;
}

void facts_append_str(struct facts_ctx *ctx, json_t *arr, const char *value)
{
	facts_append_new(ctx, arr, json_string(value));
}

int facts_parse_int(const char *s, int base, long long *ret_value)
{
	char *end;
	long long v;

	while (*s == ' ' || *s == '\t')
		s++;
	if (*s == '\0')
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, base);
	if (errno || end == s)
		return -EINVAL;
	while (*end == ' ' || *end == '\t')
		end++;
	if (*end != '\0')
		return -EINVAL;
	*ret_value = v;
	return 0;
}

int facts_parse_num_name(const char *s, long long *ret_num, const char **ret_name)
{
	char *end;
	long long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end[0] != ':' || end[1] != ' ' || end[2] == '\0')
		return -EINVAL;
	*ret_num = v;
	*ret_name = end + 2;
	return 0;
}

int facts_parse_pcie_gen(const char *s, int *ret_gen)
{
	/* Per-lane transfer rate of each generation, in tenths of GT/s. */
	static const int rates[] = {25, 50, 80, 160, 320, 640};
	char *end;
	double gts;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	gts = strtod(s, &end);
	if (errno || strncmp(end, " GT/s", 5) != 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		if ((int)(gts * 10 + 0.5) == rates[i]) {
			*ret_gen = (int)i + 1;
			return 0;
		}
	}
	return -EINVAL;
}

bool facts_text_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t extra;
		unsigned cp;

		if (*p < 0x80) {
			if (*p < 0x20 && *p != '\t' && *p != '\n')
				return false;
			if (*p == 0x7f)
				return false;
			p++;
			continue;
		}
		if ((*p & 0xe0) == 0xc0) {
			extra = 1;
			cp = *p & 0x1f;
		} else if ((*p & 0xf0) == 0xe0) {
			extra = 2;
			cp = *p & 0x0f;
		} else if ((*p & 0xf8) == 0xf0) {
			extra = 3;
			cp = *p & 0x07;
		} else {
			return false;
		}
		p++;
		for (size_t i = 0; i < extra; i++, p++) {
			if ((*p & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (*p & 0x3f);
		}
		/* overlong forms, surrogates, beyond U+10FFFF */
		if ((extra == 1 && cp < 0x80) || (extra == 2 && cp < 0x800) ||
		    (extra == 3 && cp < 0x10000) || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return false;
	}
	return true;
}
