/* Executor repo: an apt source (/etc/apt/sources.list.d/NAME.sources, deb822) and its signed-by
 * key file. The key comes inline, from key_url (fetched with curl through the runner, then
 * checked against the pinned fingerprint before anything is written), or is already on the node
 * (then only checked). `apt-get update` runs only when this step changed something. */
#include "nodeagent/apply/apply_int.h"

#include "common/playbook/pgp.h"
#include "common/util/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SOURCES_DIR "/etc/apt/sources.list.d"

struct repo_key {
	unsigned char *data; /* the bytes the key file should hold (inline key), else NULL */
	size_t len;
	char fpr[65]; /* normalized pinned fingerprint, "" when none */
};

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int source_path(const json_t *params, char **ret)
{
	return asprintf(ret, SOURCES_DIR "/%s.sources", apply_param_str(params, "name")) < 0
		       ? -ENOMEM
		       : 0;
}

/* The deb822 stanza: one field per line, so that a diff shows exactly what moved. */
static int source_content(const json_t *params, char **ret)
{
	struct apply_buf b = {0};
	const json_t *l;
	json_t *e;
	size_t i;

	apply_buf_printf(&b,
			 "# Managed by railyard (repo step)\nTypes: deb\nURIs: %s\nSuites: %s\n",
			 apply_param_str(params, "uri"), apply_param_str(params, "suite"));
	if (json_array_size(l = json_object_get(params, "components")) > 0) {
		apply_buf_puts(&b, "Components:");
		json_array_foreach(l, i, e) apply_buf_printf(&b, " %s", json_string_value(e));
		apply_buf_putc(&b, '\n');
	}
	if (json_array_size(l = json_object_get(params, "architectures")) > 0) {
		apply_buf_puts(&b, "Architectures:");
		json_array_foreach(l, i, e) apply_buf_printf(&b, " %s", json_string_value(e));
		apply_buf_putc(&b, '\n');
	}
	apply_buf_printf(&b, "Signed-By: %s\n", apply_param_str(params, "key_path"));
	return apply_buf_take(&b, ret);
}

/* Convert key material (armored or binary) into what key_path holds: the binary packets for
 * .gpg, the same packets armored afresh for .asc (so the file never carries text from around
 * the armor). *ret is new (caller frees). */
static int key_bytes(struct apply_ctx *ctx, const char *key_path, const void *data, size_t len,
		     unsigned char **ret, size_t *ret_len)
{
	unsigned char *bin = NULL;
	size_t blen = 0;
	char why[160], *a = NULL;
	int r;

	if (pb_pgp_is_armored(data, len)) {
		r = pb_pgp_dearmor(data, len, &bin, &blen, why, sizeof(why));
		if (r < 0)
			return r == -RY_E_INVALID ? apply_ctx_fail(ctx, r, "key: %s", why) : r;
	} else {
		bin = malloc(len ? len : 1);
		if (!bin)
			return -ENOMEM;
		memcpy(bin, data, len);
		blen = len;
	}
	if (!ends_with(key_path, ".asc")) {
		*ret = bin;
		*ret_len = blen;
		return 0;
	}
	r = pb_pgp_armor(bin, blen, &a);
	free(bin);
	if (r < 0)
		return r;
	*ret = (unsigned char *)a;
	*ret_len = strlen(a);
	return 0;
}

static int repo_key_init(struct apply_ctx *ctx, const json_t *params, struct repo_key *k)
{
	const char *key = apply_param_str(params, "key"),
		   *fpr = apply_param_str(params, "fingerprint");

	memset(k, 0, sizeof(*k));
	if (fpr && pb_pgp_fpr_normalize(fpr, k->fpr) < 0)
		return apply_ctx_fail(ctx, -RY_E_INVALID, "fingerprint: bad fingerprint");
	if (key)
		return key_bytes(ctx, apply_param_str(params, "key_path"), key, strlen(key),
				 &k->data, &k->len);
	return 0;
}

/* Describe a key file for the diff: "(absent)", "fingerprint X", "unreadable (...)". */
static void describe_keys(const char *data, size_t len, bool exists, char *out, size_t outlen)
{
	struct pb_pgp_keys keys;
	char why[120];

	if (!exists)
		snprintf(out, outlen, "(absent)");
	else if (pb_pgp_keys_read(data, len, &keys, why, sizeof(why)) < 0)
		snprintf(out, outlen, "unreadable (%s)", why);
	else
		snprintf(out, outlen, "fingerprint %s%s", keys.fpr[0],
			 keys.n > 1 ? " and more keys" : "");
}

/* Whether the key file is right. With inline key material, byte for byte; otherwise it must
 * hold exactly the pinned key (what a fetch would give is not known without fetching). A key
 * that is neither there nor obtainable is a failure. */
static int key_check(struct apply_ctx *ctx, const json_t *params, const struct repo_key *k,
		     struct apply_change *out)
{
	const char *path = apply_param_str(params, "key_path"),
		   *url = apply_param_str(params, "key_url");
	struct pb_pgp_keys keys;
	char *cur = NULL, was[200];
	size_t curlen = 0;
	bool exists, ok;
	int r;

	r = apply_ctx_read(ctx, path, &cur, &curlen, &exists);
	if (r < 0)
		return r;
	if (k->data)
		ok = exists && curlen == k->len && memcmp(cur, k->data, k->len) == 0;
	else
		ok = exists && pb_pgp_keys_read(cur, curlen, &keys, NULL, 0) == 0 && keys.n == 1 &&
		     pb_pgp_keys_have(&keys, k->fpr);
	describe_keys(cur, curlen, exists, was, sizeof(was));
	free(cur);
	if (ok)
		return 0;
	if (!k->data && !url)
		return apply_ctx_fail(ctx, -RY_E_UNMET,
				      "key %s is %s, expected the key %s (nothing to install it "
				      "from: give key or key_url)",
				      path, was, k->fpr);
	out->changed = true;
	if (k->data) {
		char now[200];

		describe_keys((const char *)k->data, k->len, true, now, sizeof(now));
		apply_buf_printf(&out->diff, "key %s: %s -> %s (inline)\n", path, was, now);
	} else {
		apply_buf_printf(&out->diff, "key %s: %s -> fingerprint %s (from %s)\n", path, was,
				 k->fpr, url);
	}
	return 0;
}

static int repo_check(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	char *path = NULL, *content = NULL;
	struct repo_key k;
	int r;

	r = repo_key_init(ctx, params, &k);
	if (r < 0)
		return r;
	r = key_check(ctx, params, &k, out);
	if (r == 0 && (r = source_path(params, &path)) == 0 &&
	    (r = source_content(params, &content)) == 0)
		r = apply_file_diff(ctx, path, content, strlen(content), out);
	free(k.data);
	free(path);
	free(content);
	return r;
}

/* Fetch key_url with curl (https only, redirects too; bounded) and accept it only when it is
 * exactly the pinned key. */
static int key_fetch(struct apply_ctx *ctx, const json_t *params, const struct repo_key *k,
		     unsigned char **ret, size_t *ret_len)
{
	const char *url = apply_param_str(params, "key_url");
	const char *argv[] = {"curl",	    "--fail",	  "--silent", "--show-error",
			      "--location", "--proto",	  "=https",   "--proto-redir",
			      "=https",	    "--max-time", "60",	      "--max-filesize",
			      "262144",	    url,	  NULL};
	struct runner_result res;
	struct pb_pgp_keys keys;
	char why[160];
	int r;

	r = apply_ctx_run_ok(ctx, argv, &res);
	if (r < 0)
		return r;
	if (res.out_truncated) {
		r = apply_ctx_fail(ctx, -RY_E_TOO_BIG, "key from %s: over %d bytes", url,
				   RUNNER_DEFAULT_OUTPUT_MAX);
	} else if (pb_pgp_keys_read(res.out, res.out_len, &keys, why, sizeof(why)) < 0) {
		r = apply_ctx_fail(ctx, -RY_E_INVALID, "key from %s: %s", url, why);
	} else if (keys.n != 1 || !pb_pgp_keys_have(&keys, k->fpr)) {
		r = apply_ctx_fail(ctx, -RY_E_FINGERPRINT,
				   "key from %s has fingerprint %s%s, not the %s pinned: nothing "
				   "written",
				   url, keys.fpr[0], keys.n > 1 ? " (and more keys)" : "", k->fpr);
	} else {
		r = key_bytes(ctx, apply_param_str(params, "key_path"), res.out, res.out_len, ret,
			      ret_len);
	}
	runner_result_done(&res);
	return r;
}

static int repo_apply(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	const char *key_path = apply_param_str(params, "key_path");
	struct apply_change key = {0};
	char *path = NULL, *content = NULL;
	unsigned char *bytes = NULL;
	struct repo_key k;
	size_t len = 0;
	int r;

	r = repo_key_init(ctx, params, &k);
	if (r < 0)
		return r;
	/* Everything that can fail before a write is done first: the fetch and its pin check. */
	r = key_check(ctx, params, &k, &key);
	if (r == 0 && key.changed) {
		if (k.data) {
			bytes = k.data;
			len = k.len;
			k.data = NULL;
		} else {
			r = key_fetch(ctx, params, &k, &bytes, &len);
		}
	}
	if (r == 0 && (r = source_path(params, &path)) == 0)
		r = source_content(params, &content);
	if (r == 0 && bytes)
		r = apply_ctx_write_file(ctx, key_path, bytes, len, 0644);
	if (r == 0) {
		struct apply_change src = {0};

		r = apply_file_diff(ctx, path, content, strlen(content), &src);
		if (r == 0 && src.changed)
			r = apply_ctx_write_file(ctx, path, content, strlen(content), 0644);
		apply_buf_done(&src.diff);
	}
	if (r == 0 && apply_param_bool(params, "update", true)) {
		const char *argv[] = {"apt-get", "update", "-q", NULL};

		r = apply_ctx_run_ok(ctx, argv, NULL);
	}
	out->changed = r == 0;
	apply_buf_done(&key.diff);
	free(k.data);
	free(bytes);
	free(path);
	free(content);
	return r;
}

static int repo_verify(struct apply_ctx *ctx, const json_t *params)
{
	return apply_verify_by_check(ctx, params, repo_check);
}

const struct apply_step_ops apply_ops_repo = {
	.type = "repo",
	.check = repo_check,
	.apply = repo_apply,
	.verify = repo_verify,
};
