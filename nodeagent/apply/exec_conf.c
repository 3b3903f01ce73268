/* Executors nccl, ucx and mpi: merge KEY=VALUE settings into a configuration file
 * (/etc/nccl.conf, /etc/ucx/ucx.conf, Open MPI's openmpi-mca-params.conf), keeping every other
 * line, comment and the order of the file; also the merge used by sysctl persistence. */
#include "nodeagent/apply/apply_int.h"

#include "common/playbook/playbook.h"
#include "common/util/error.h"
#include "common/util/json.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define P_PATH	   "path"
#define P_SETTINGS "settings"

static bool key_ok(const char *k)
{
	if (!*k)
		return false;
	for (; *k; k++)
		if (!isalnum((unsigned char)*k) && !strchr("_.-/", *k))
			return false;
	return true;
}

static bool value_ok(const char *v)
{
	return !strpbrk(v, "\n\r");
}

/* Does line (without newline) set key? Leading blanks and blanks around the separator '='
 * are allowed; comments (#) never match. On a match *ret_val points at the value. */
static bool line_sets(const char *line, size_t len, const char *key, const char **ret_val,
		      size_t *ret_vlen)
{
	size_t i = 0, kl = strlen(key);

	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (len - i < kl || strncmp(line + i, key, kl) != 0)
		return false;
	i += kl;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (i >= len || line[i] != '=')
		return false;
	i++;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	*ret_val = line + i;
	*ret_vlen = len - i;
	while (*ret_vlen > 0 && isspace((unsigned char)(*ret_val)[*ret_vlen - 1]))
		(*ret_vlen)--;
	return true;
}

int apply_conf_merge(struct apply_ctx *ctx, const char *cur, size_t curlen, const json_t *settings,
		     const char *sep, char **ret, struct apply_buf *values)
{
	struct apply_buf out = {0};
	size_t nkeys = json_object_size(settings), k = 0;
	const char *key;
	json_t *val;
	char **texts = NULL;
	bool *seen = NULL;
	int r = 0;

	if (!json_is_object(settings))
		return apply_ctx_fail(ctx, -RY_E_INVALID, P_SETTINGS ": expected an object");
	texts = calloc(nkeys + 1, sizeof(*texts));
	seen = calloc(nkeys + 1, sizeof(*seen));
	if (!texts || !seen) {
		r = -ENOMEM;
		goto out;
	}
	json_object_foreach((json_t *)settings, key, val)
	{
		texts[k] = ry_json_scalar_text(val, RY_JSON_REAL_EXACT);
		if (!key_ok(key) || !texts[k] || !value_ok(texts[k])) {
			r = apply_ctx_fail(ctx, -RY_E_INVALID,
					   "setting \"%s\": invalid key or value", key);
			goto out;
		}
		k++;
	}
	for (size_t pos = 0; pos < curlen;) {
		const char *line = cur + pos, *nl = memchr(line, '\n', curlen - pos);
		size_t len = nl ? (size_t)(nl - line) : curlen - pos;
		bool handled = false;

		k = 0;
		json_object_foreach((json_t *)settings, key, val)
		{
			const char *v;
			size_t vl;

			if (line[0] != '#' && line_sets(line, len, key, &v, &vl)) {
				handled = true;
				if (seen[k]) {
					if (values)
						apply_buf_printf(values,
								 "%s: drop duplicate line\n", key);
				} else if (vl == strlen(texts[k]) && !memcmp(v, texts[k], vl)) {
					apply_buf_append(&out, line, len);
					apply_buf_putc(&out, '\n');
				} else {
					apply_buf_printf(&out, "%.*s%s\n", (int)(v - line), line,
							 texts[k]);
					if (values)
						apply_buf_printf(values, "%s: %.*s -> %s\n", key,
								 (int)vl, v, texts[k]);
				}
				seen[k] = true;
				break;
			}
			k++;
		}
		if (!handled) {
			apply_buf_append(&out, line, len);
			if (nl)
				apply_buf_putc(&out, '\n');
			else
				apply_buf_putc(&out, '\n'); /* the file now ends with a newline */
		}
		pos += len + (nl ? 1 : 0);
	}
	k = 0;
	json_object_foreach((json_t *)settings, key, val)
	{
		if (!seen[k]) {
			apply_buf_printf(&out, "%s%s%s\n", key, sep, texts[k]);
			if (values)
				apply_buf_printf(values, "%s: (unset) -> %s\n", key, texts[k]);
		}
		k++;
	}
	r = apply_buf_take(&out, ret);
out:
	for (size_t i = 0; texts && i < nkeys; i++)
		free(texts[i]);
	free(texts);
	free(seen);
	apply_buf_done(&out);
	return r;
}

struct conf_kind {
	const char *dflt_path;
	const char *sep;
};

static const struct conf_kind nccl_kind = {PB_NCCL_DEFAULT_PATH, "="};
static const struct conf_kind ucx_kind = {PB_UCX_DEFAULT_PATH, "="};
static const struct conf_kind mpi_kind = {PB_MPI_DEFAULT_PATH, " = "};

/* The desired content of the file: the current one with settings merged in. */
static int conf_desired(struct apply_ctx *ctx, const struct conf_kind *kind, const json_t *params,
			const char **ret_path, char **ret_new, bool *ret_same)
{
	const char *path = apply_param_str(params, P_PATH);
	char *cur = NULL, *merged = NULL;
	size_t curlen;
	bool exists;
	int r;

	if (!path)
		path = kind->dflt_path;
	r = apply_ctx_read(ctx, path, &cur, &curlen, &exists);
	if (r < 0)
		return r;
	r = apply_conf_merge(ctx, cur, curlen, json_object_get(params, P_SETTINGS), kind->sep,
			     &merged, NULL);
	if (r == 0) {
		*ret_path = path;
		*ret_same = exists && strlen(merged) == curlen && memcmp(merged, cur, curlen) == 0;
		*ret_new = merged;
	}
	free(cur);
	return r;
}

static int conf_check(struct apply_ctx *ctx, const struct conf_kind *kind, const json_t *params,
		      struct apply_change *out)
{
	const char *path;
	char *merged = NULL;
	bool same;
	int r;

	r = conf_desired(ctx, kind, params, &path, &merged, &same);
	if (r < 0)
		return r;
	if (!same)
		r = apply_file_diff(ctx, path, merged, strlen(merged), out);
	free(merged);
	return r;
}

static int conf_apply(struct apply_ctx *ctx, const struct conf_kind *kind, const json_t *params,
		      struct apply_change *out)
{
	const char *path;
	char *merged = NULL;
	bool same;
	int r;

	r = conf_desired(ctx, kind, params, &path, &merged, &same);
	if (r < 0)
		return r;
	if (!same) {
		r = apply_ctx_write_file(ctx, path, merged, strlen(merged), 0644);
		out->changed = r == 0;
	}
	free(merged);
	return r;
}

#define CONF_OPS(name, kind)                                                                       \
	static int name##_check(struct apply_ctx *ctx, const json_t *p, struct apply_change *out)  \
	{                                                                                          \
		return conf_check(ctx, &kind, p, out);                                             \
	}                                                                                          \
	static int name##_apply(struct apply_ctx *ctx, const json_t *p, struct apply_change *out)  \
	{                                                                                          \
		return conf_apply(ctx, &kind, p, out);                                             \
	}                                                                                          \
	static int name##_verify(struct apply_ctx *ctx, const json_t *p)                           \
	{                                                                                          \
		return apply_verify_by_check(ctx, p, name##_check);                                \
	}                                                                                          \
	const struct apply_step_ops apply_ops_##name = {                                           \
		.type = #name,                                                                     \
		.check = name##_check,                                                             \
		.apply = name##_apply,                                                             \
		.verify = name##_verify,                                                           \
	};

CONF_OPS(nccl, nccl_kind)
CONF_OPS(ucx, ucx_kind)
CONF_OPS(mpi, mpi_kind)
