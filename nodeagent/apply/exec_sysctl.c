/* Executor sysctl: kernel parameters read and written under proc/sys of the sysroot (in place,
 * as procfs requires), and persisted by merging "key = value" lines into a sysctl.d file. */
#include "nodeagent/apply/apply_int.h"

#include "common/playbook/playbook.h"
#include "common/util/error.h"
#include "common/util/json.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define P_SETTINGS "settings"
#define P_PERSIST  "persist"
#define P_FILE	   "file"

/* "net.ipv4.tcp_rmem" -> "/proc/sys/net/ipv4/tcp_rmem"; keys in slash form are kept. */
static char *key_path(const char *key)
{
	char *p;

	if (asprintf(&p, "/proc/sys/%s", key) < 0)
		return NULL;
	if (!strchr(key, '/'))
		for (char *c = p + strlen("/proc/sys/"); *c; c++)
			if (*c == '.')
				*c = '/';
	return p;
}

/* Compare ignoring how blanks are laid out: procfs separates fields of multi-value entries
 * (tcp_rmem) with tabs, playbooks with spaces. */
static bool same_value(const char *a, const char *b)
{
	for (;;) {
		while (isspace((unsigned char)*a))
			a++;
		while (isspace((unsigned char)*b))
			b++;
		if (!*a || !*b)
			return !*a && !*b;
		while (*a && *b && !isspace((unsigned char)*a) && *a == *b) {
			a++;
			b++;
		}
		if ((*a && !isspace((unsigned char)*a)) || (*b && !isspace((unsigned char)*b)))
			return false;
	}
}

static char *trimmed(const char *s)
{
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	return strndup(s, n);
}

static int sysctl_run(struct apply_ctx *ctx, const json_t *params, struct apply_change *out,
		      bool doit)
{
	const json_t *settings = json_object_get(params, P_SETTINGS);
	const char *file = apply_param_str(params, P_FILE), *key;
	char *cur = NULL, *merged = NULL, *path = NULL, *val = NULL, *now = NULL;
	size_t curlen = 0;
	bool exists;
	json_t *v;
	int r = 0;

	if (!json_is_object(settings))
		return apply_ctx_fail(ctx, -RY_E_INVALID, P_SETTINGS ": expected an object");
	json_object_foreach((json_t *)settings, key, v)
	{
		path = key_path(key);
		val = ry_json_scalar_text(v, RY_JSON_REAL_EXACT);
		if (!path || !val) {
			r = -ENOMEM;
			goto out;
		}
		r = apply_ctx_read(ctx, path, &cur, NULL, &exists);
		if (r < 0)
			goto out;
		if (!exists) {
			apply_ctx_headline(ctx, "sysctl %s does not exist on this node's kernel",
					   key);
			r = apply_ctx_fail(ctx, -ENOENT, "sysctl %s: no such key (%s)", key, path);
			goto out;
		}
		if (!same_value(cur, val)) {
			now = trimmed(cur);
			if (!now) {
				r = -ENOMEM;
				goto out;
			}
			out->changed = true;
			apply_buf_printf(&out->diff, "%s: %s -> %s\n", key, now, val);
			if (doit && (r = apply_ctx_write_value(ctx, path, val)) < 0)
				goto out;
		}
		free(cur);
		free(path);
		free(val);
		free(now);
		cur = path = val = now = NULL;
	}
	if (!apply_param_bool(params, P_PERSIST, true))
		goto out;
	if (!file)
		file = PB_SYSCTL_DEFAULT_FILE;
	r = apply_ctx_read(ctx, file, &cur, &curlen, &exists);
	if (r < 0)
		goto out;
	r = apply_conf_merge(ctx, cur, curlen, settings, " = ", &merged, NULL);
	if (r < 0)
		goto out;
	if (!exists || strlen(merged) != curlen || memcmp(merged, cur, curlen) != 0) {
		r = apply_file_diff(ctx, file, merged, strlen(merged), out);
		if (r == 0 && doit)
			r = apply_ctx_write_file(ctx, file, merged, strlen(merged), 0644);
	}
out:
	free(merged);
	free(cur);
	free(path);
	free(val);
	free(now);
	return r;
}

static int sysctl_check(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	return sysctl_run(ctx, params, out, false);
}

static int sysctl_apply(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	return sysctl_run(ctx, params, out, true);
}

static int sysctl_verify(struct apply_ctx *ctx, const json_t *params)
{
	return apply_verify_by_check(ctx, params, sysctl_check);
}

const struct apply_step_ops apply_ops_sysctl = {
	.type = "sysctl",
	.check = sysctl_check,
	.apply = sysctl_apply,
	.verify = sysctl_verify,
};
