/* A cluster's workload-manager binding: the document a front end sends, validated field by
 * field (every problem named with its field), turned back into JSON, and loaded from the
 * store. */
#include "controller/wlm/wlm.h"
#include "controller/service.h"
#include "controller/store/store_wlm.h"

#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BAD(field, ...) ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, field, __VA_ARGS__)

/* An absolute path of printable bytes, no "..", no "//". */
static bool path_ok(const char *p)
{
	size_t n = p ? strlen(p) : 0;

	if (n < 1 || n > WLM_PATH_MAX || p[0] != '/' || strstr(p, "/../") || strstr(p, "//"))
		return false;
	if (n >= 3 && strcmp(p + n - 3, "/..") == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return false;
	return true;
}

static int str_field(const json_t *o, const char *key, const char *field, char **ret,
		     struct ctl_error *err)
{
	const json_t *v = json_object_get(o, key);

	*ret = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return BAD(field, "%s: must be a string", field);
	if (!path_ok(json_string_value(v)) || strlen(json_string_value(v)) != json_string_length(v))
		return BAD(field,
			   "%s: must be an absolute path without \"..\" or control characters",
			   field);
	*ret = strdup(json_string_value(v));
	return *ret ? 0 : -ENOMEM;
}

static int only_keys(const json_t *o, const char *const *keys, const char *where,
		     struct ctl_error *err)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)o, k, v)
	{
		bool known = false;

		for (const char *const *p = keys; *p; p++)
			known = known || strcmp(k, *p) == 0;
		if (!known)
			return BAD(where, "%s: unknown key \"%.64s\"", where, k);
	}
	return 0;
}

/* An argv template: 1..WLM_ARGV_MAX strings, argv[0] an absolute path, none with NUL or
 * control characters. */
static int argv_field(const json_t *hooks, const char *key, bool required, char ***ret,
		      struct ctl_error *err)
{
	const json_t *a = json_object_get(hooks, key), *v;
	char field[32], **out;
	size_t i;

	*ret = NULL;
	snprintf(field, sizeof(field), "hooks.%s", key);
	if (!a || json_is_null(a))
		return required ? BAD(field, "%s: required with kind \"hooks\"", field) : 0;
	if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > WLM_ARGV_MAX)
		return BAD(field, "%s: must be an array of 1 to %d strings (argv)", field,
			   WLM_ARGV_MAX);
	json_array_foreach(a, i, v)
	{
		const char *s = json_string_value(v);

		if (!s || strlen(s) != json_string_length(v))
			return BAD(field, "%s[%zu]: must be a string without NUL", field, i);
		if (strlen(s) > 4096)
			return BAD(field, "%s[%zu]: longer than 4096 bytes", field, i);
		for (const char *p = s; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return BAD(field, "%s[%zu]: control character", field, i);
		if (i == 0 && !path_ok(s))
			return BAD(field, "%s[0]: the program must be an absolute path (%.64s)",
				   field, s);
	}
	out = calloc(json_array_size(a) + 1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	json_array_foreach(a, i, v)
	{
		out[i] = strdup(json_string_value(v));
		if (!out[i]) {
			for (size_t j = 0; j < i; j++)
				free(out[j]);
			free(out);
			return -ENOMEM;
		}
	}
	*ret = out;
	return 0;
}

int wlm_binding_parse(const json_t *doc, const char *cluster, struct wlm_binding **ret,
		      struct ctl_error *err)
{
	static const char *const top[] = {"kind", "slurm", "hooks", "node_map", "timeout_s",
					  /* read back from wlm_binding_json(): ignored */
					  "cluster", "updated_at", "updated_by", NULL};
	static const char *const slurm_keys[] = {"bin_dir", "conf", NULL};
	static const char *const hook_keys[] = {"drain", "resume", "state", "jobs", NULL};
	struct wlm_binding *b = NULL;
	const json_t *v, *map;
	const char *kind;
	int r;

	if (!doc || !cluster || !ret)
		return -EINVAL;
	if (!json_is_object(doc))
		return BAD(NULL, "the binding must be a JSON object");
	r = only_keys(doc, top, "binding", err);
	if (r < 0)
		return r;
	b = calloc(1, sizeof(*b));
	if (!b || !(b->cluster = strdup(cluster)))
		goto enomem;
	kind = json_string_value(json_object_get(doc, "kind"));
	if (!kind) {
		r = BAD("kind", "kind: required, \"slurm\" or \"hooks\"");
		goto fail;
	}
	if (strcmp(kind, "slurm") == 0)
		b->kind = WLM_SLURM;
	else if (strcmp(kind, "hooks") == 0)
		b->kind = WLM_HOOKS;
	else {
		r = BAD("kind", "kind: \"%.32s\" is not \"slurm\" or \"hooks\"", kind);
		goto fail;
	}
	v = json_object_get(doc, "slurm");
	if (v && !json_is_null(v)) {
		if (b->kind != WLM_SLURM || !json_is_object(v)) {
			r = BAD("slurm", "slurm: an object, with kind \"slurm\" only");
			goto fail;
		}
		if ((r = only_keys(v, slurm_keys, "slurm", err)) < 0 ||
		    (r = str_field(v, "bin_dir", "slurm.bin_dir", &b->slurm_bin_dir, err)) < 0 ||
		    (r = str_field(v, "conf", "slurm.conf", &b->slurm_conf, err)) < 0)
			goto fail;
	}
	if (b->kind == WLM_SLURM && !b->slurm_bin_dir && !(b->slurm_bin_dir = strdup("/usr/bin")))
		goto enomem;
	v = json_object_get(doc, "hooks");
	if (b->kind == WLM_HOOKS) {
		if (!json_is_object(v)) {
			r = BAD("hooks",
				"hooks: required with kind \"hooks\" (drain and resume argv)");
			goto fail;
		}
		if ((r = only_keys(v, hook_keys, "hooks", err)) < 0 ||
		    (r = argv_field(v, "drain", true, &b->hook_drain, err)) < 0 ||
		    (r = argv_field(v, "resume", true, &b->hook_resume, err)) < 0 ||
		    (r = argv_field(v, "state", false, &b->hook_state, err)) < 0 ||
		    (r = argv_field(v, "jobs", false, &b->hook_jobs, err)) < 0)
			goto fail;
	} else if (v && !json_is_null(v)) {
		r = BAD("hooks", "hooks: with kind \"hooks\" only");
		goto fail;
	}
	v = json_object_get(doc, "timeout_s");
	b->timeout_s = WLM_TIMEOUT_DEFAULT_S;
	if (v && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < WLM_TIMEOUT_MIN_S ||
		    json_integer_value(v) > WLM_TIMEOUT_MAX_S) {
			r = BAD("timeout_s", "timeout_s: an integer from %d to %d (seconds)",
				WLM_TIMEOUT_MIN_S, WLM_TIMEOUT_MAX_S);
			goto fail;
		}
		b->timeout_s = (int)json_integer_value(v);
	}
	map = json_object_get(doc, "node_map");
	b->node_map = json_object();
	if (!b->node_map)
		goto enomem;
	if (map && !json_is_null(map)) {
		const char *host;
		json_t *name;

		if (!json_is_object(map) || json_object_size(map) > WLM_MAP_MAX) {
			r = BAD("node_map",
				"node_map: an object {host name: WLM node name} of at "
				"most %d entries",
				WLM_MAP_MAX);
			goto fail;
		}
		json_object_foreach((json_t *)map, host, name)
		{
			char field[300];

			snprintf(field, sizeof(field), "node_map.%.255s", host);
			if (strlen(host) < 1 || strlen(host) > 255 || strchr(host, ' ')) {
				r = BAD("node_map",
					"node_map: a host name of 1 to 255 bytes without "
					"spaces, not \"%.64s\"",
					host);
				goto fail;
			}
			if (!wlm_name_valid(json_string_value(name))) {
				r = BAD(field,
					"%s: \"%.64s\" is not a legal node name (1 to %d of "
					"[A-Za-z0-9._-], starting with a letter or digit)",
					field, json_is_string(name) ? json_string_value(name) : "",
					WLM_NAME_MAX);
				goto fail;
			}
			if (json_object_set(b->node_map, host, name) < 0)
				goto enomem;
		}
	}
	*ret = b;
	return 0;
enomem:
	r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
fail:
	wlm_binding_free(b);
	return r;
}

static json_t *argv_json(char *const *a)
{
	json_t *v;

	if (!a)
		return NULL;
	v = json_array();
	for (; v && *a; a++)
		json_array_append_new(v, json_string(*a));
	return v;
}

json_t *wlm_binding_json(const struct wlm_binding *b)
{
	json_t *o;

	if (!b)
		return NULL;
	o = json_pack("{s:s, s:s, s:O, s:i}", "cluster", b->cluster, "kind",
		      b->kind == WLM_SLURM ? "slurm" : "hooks", "node_map", b->node_map,
		      "timeout_s", b->timeout_s);
	if (!o)
		return NULL;
	if (b->kind == WLM_SLURM)
		json_object_set_new(o, "slurm",
				    json_pack("{s:s, s:s?}", "bin_dir", b->slurm_bin_dir, "conf",
					      b->slurm_conf));
	else {
		json_t *h = json_object();

		json_object_set_new(h, "drain", argv_json(b->hook_drain));
		json_object_set_new(h, "resume", argv_json(b->hook_resume));
		if (b->hook_state)
			json_object_set_new(h, "state", argv_json(b->hook_state));
		if (b->hook_jobs)
			json_object_set_new(h, "jobs", argv_json(b->hook_jobs));
		json_object_set_new(o, "hooks", h);
	}
	if (b->updated_by) {
		json_object_set_new(o, "updated_by", json_string(b->updated_by));
		json_object_set_new(o, "updated_at", json_integer(b->updated_at));
	}
	return o;
}

int wlm_binding_load(struct store *st, const char *cluster, struct wlm_binding **ret)
{
	struct store_wlm_binding *row = NULL;
	struct ctl_error err;
	json_t *doc;
	int r;

	if (!st || !cluster || !ret)
		return -EINVAL;
	r = store_wlm_binding_get(st, cluster, &row);
	if (r < 0)
		return r;
	doc = json_loads(row->doc_json, 0, NULL);
	ctl_error_init(&err);
	r = doc ? wlm_binding_parse(doc, cluster, ret, &err) : -RY_E_CORRUPT;
	if (r == -RY_E_INVALID)
		r = -RY_E_CORRUPT; /* it was validated when stored */
	if (r >= 0) {
		(*ret)->updated_at = row->updated_at;
		(*ret)->updated_by = strdup(row->updated_by ? row->updated_by : "");
	}
	ctl_error_done(&err);
	json_decref(doc);
	store_wlm_binding_free(row);
	return r;
}

/* ---- the services the front ends call ------------------------------------------------------ */

static int cluster_ok(const char *cluster, struct ctl_error *err)
{
	if (!ctl_valid_cluster_name(cluster))
		return ctl_error_set(
			err, -RY_E_INVALID, CTL_ERR_INVALID, "cluster",
			"cluster: 1 to 64 of [A-Za-z0-9._-], starting with a letter or "
			"digit");
	return 0;
}

int ctl_wlm_binding_set(struct store *st, const char *cluster, const json_t *doc, const char *actor,
			json_t **ret, struct ctl_error *err)
{
	struct wlm_binding *b = NULL;
	json_t *out;
	char *text;
	int r = cluster_ok(cluster, err);

	if (r < 0)
		return r;
	r = wlm_binding_parse(doc, cluster, &b, err);
	if (r < 0)
		return r;
	out = wlm_binding_json(b);
	wlm_binding_free(b);
	/* What is stored is the document as validated (defaults filled in), not the request. */
	json_object_del(out, "cluster");
	text = out ? json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(out);
	if (!text)
		return ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	r = store_wlm_binding_put(st, cluster, text, actor, util_now_unix_ms());
	free(text);
	if (r < 0)
		return ctl_error_store(err, r, "storing the binding");
	return ctl_wlm_binding_get(st, cluster, ret, err);
}

int ctl_wlm_binding_get(struct store *st, const char *cluster, json_t **ret, struct ctl_error *err)
{
	struct wlm_binding *b = NULL;
	int r = cluster_ok(cluster, err);

	if (r < 0)
		return r;
	r = wlm_binding_load(st, cluster, &b);
	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "cluster",
				     "cluster %s is not bound to a workload manager", cluster);
	if (r < 0)
		return ctl_error_store(err, r, "reading the binding");
	*ret = wlm_binding_json(b);
	wlm_binding_free(b);
	return *ret ? 0 : ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
}

int ctl_wlm_binding_unset(struct store *st, const char *cluster, const char *actor,
			  struct ctl_error *err)
{
	int r = cluster_ok(cluster, err);

	if (r < 0)
		return r;
	r = store_wlm_binding_delete(st, cluster, actor, util_now_unix_ms());
	if (r < 0)
		return ctl_error_store(err, r, "removing the binding");
	if (r == 0)
		return ctl_error_set(err, -RY_E_NOT_FOUND, CTL_ERR_NOT_FOUND, "cluster",
				     "cluster %s is not bound to a workload manager", cluster);
	return 0;
}

int ctl_wlm_actions_list(struct store *st, const char *cluster, const char *state, json_t **ret,
			 struct ctl_error *err)
{
	static const char *const states[] = {"pending", "done", "failed", "not_ours", NULL};
	struct store_wlm_action *v = NULL;
	size_t n = 0;
	json_t *out;
	bool ok = !state;
	int r;

	for (const char *const *s = states; state && *s; s++)
		ok = ok || strcmp(state, *s) == 0;
	if (!ok)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "state",
				     "state: pending, done, failed or not_ours");
	r = store_wlm_actions(st, cluster, state, 0, &v, &n);
	if (r < 0)
		return ctl_error_store(err, r, "reading the ledger");
	out = json_array();
	for (size_t i = 0; out && i < n; i++) {
		const struct store_wlm_action *a = &v[i];

		json_array_append_new(
			out,
			json_pack("{s:I, s:s, s:s?, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s?, "
				  "s:i, s:I, s:I, s:o}",
				  "id", (json_int_t)a->id, "cluster", a->cluster, "node_id",
				  a->node_id, "hostname", a->hostname, "node", a->wlm_name,
				  "action", a->action, "reason", a->reason, "source", a->source,
				  "source_id", a->source_id, "state", a->state, "result", a->result,
				  "attempts", a->attempts, "created_at", (json_int_t)a->created_at,
				  "next_at", (json_int_t)a->next_at, "done_at",
				  a->done_at ? json_integer(a->done_at) : json_null()));
	}
	store_wlm_actions_free(v, n);
	if (!out)
		return ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	*ret = out;
	return 0;
}
