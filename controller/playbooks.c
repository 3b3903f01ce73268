/* The playbook service (playbooks.h). */
#include "controller/playbooks.h"
#include "controller/store/store.h"
#include "controller/store/store_nodes.h"
#include "controller/store/store_playbook.h"

#include "common/playbook/playbook.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int oom(struct ctl_error *err)
{
	return ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
}

static json_t *upload_json(const struct store_playbook_upload *u)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:I}", "cluster", u->cluster, "name",
			 u->name, "version", u->version, "sha256", u->sha256, "size",
			 (json_int_t)u->size, "actor", u->actor, "uploaded_at_ms",
			 (json_int_t)u->created_at_ms);
}

static json_t *summary_json(const struct playbook *pb)
{
	json_t *o = json_pack(
		"{s:b, s:s, s:s, s:s, s:s, s:I}", "valid", 1, "name", playbook_name(pb), "version",
		playbook_version(pb), "description", playbook_description(pb), "sha256",
		playbook_sha256(pb), "validation_tests",
		(json_int_t)json_array_size(json_object_get(playbook_validation(pb), "tests")));
	json_t *steps = json_array();

	if (!o || !steps) {
		json_decref(o);
		json_decref(steps);
		return NULL;
	}
	json_object_set_new(o, "target_cluster",
			    playbook_target_cluster(pb) ? json_string(playbook_target_cluster(pb))
							: json_null());
	for (size_t i = 0; i < playbook_step_count(pb); i++)
		json_array_append_new(steps,
				      json_pack("{s:s, s:s}", "name", playbook_step_name(pb, i),
						"type", playbook_step_type(pb, i)));
	json_object_set_new(o, "steps", steps);
	return o;
}

/* Render pb with node's facts into doc's "plan". */
static int render(struct store *st, struct playbook *pb, const char *node, json_t *doc,
		  char **ret_cluster, struct ctl_error *err)
{
	struct store_node *n = NULL;
	json_t *facts = NULL, *plan = NULL, *steps, *s, *out;
	size_t i;
	int r = store_node_get(st, node, &n);

	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "node", "no node %s", node);
	if (r < 0)
		return ctl_error_store(err, r, "reading the node");
	if (ret_cluster && !(*ret_cluster = strdup(n->cluster))) {
		r = oom(err);
		goto out;
	}
	if (!n->facts_json || !(facts = json_loads(n->facts_json, 0, NULL))) {
		r = ctl_error_set(err, -RY_E_NOT_FOUND, CTL_ERR_CONFLICT, "node",
				  "node %s has reported no facts yet", node);
		goto out;
	}
	r = playbook_render(pb, facts, &plan, &err->diags);
	if (r < 0) {
		r = r == -RY_E_INVALID
			    ? ctl_error_set(err, r, CTL_ERR_PLAYBOOK, NULL,
					    "the playbook does not render for %s", n->hostname)
			    : oom(err);
		goto out;
	}
	steps = json_array();
	out = json_pack("{s:s, s:s, s:o}", "node", n->id, "hostname", n->hostname, "steps", steps);
	json_array_foreach(json_object_get(plan, "steps"), i, s) json_array_append_new(
		steps, json_pack("{s:O, s:O, s:b}", "name", json_object_get(s, "name"), "type",
				 json_object_get(s, "type"), "continue_on_error",
				 json_is_true(json_object_get(s, "continue_on_error"))));
	if (!out) {
		r = oom(err);
		goto out;
	}
	json_object_set_new(doc, "plan", out);
	r = 0;
out:
	json_decref(plan);
	json_decref(facts);
	store_node_free(n);
	return r;
}

int ctl_playbook_check(struct store *st, const char *text, size_t len, const char *file,
		       const char *cluster, const char *node, json_t **ret, char **ret_node_cluster,
		       struct ctl_error *err)
{
	struct playbook *pb = NULL;
	json_t *doc;
	int r;

	if (cluster)
		r = ctl_playbook_for_cluster(text, len, file, cluster, &pb, err);
	else if ((r = playbook_parse(text, len, file, &pb, &err->diags)) < 0)
		r = ctl_error_set(err, r, CTL_ERR_PLAYBOOK, "playbook", "%s: invalid playbook",
				  file);
	if (r < 0)
		return r;
	doc = summary_json(pb);
	if (!doc)
		r = oom(err);
	else if (node)
		r = render(st, pb, node, doc, ret_node_cluster, err);
	playbook_free(pb);
	if (r < 0) {
		json_decref(doc);
		return r;
	}
	*ret = doc;
	return 0;
}

int ctl_playbook_upload(struct store *st, const char *cluster, const char *text, size_t len,
			const char *actor, json_t **ret, struct ctl_error *err)
{
	struct store_playbook_upload *u = NULL;
	struct playbook *pb = NULL;
	char *copy = NULL;
	size_t n = 0;
	int r;

	if (!ctl_valid_cluster_name(cluster))
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "cluster",
				     "not a cluster name");
	r = ctl_playbook_for_cluster(text, len, "playbook", cluster, &pb, err);
	if (r < 0)
		return r;
	/* The text is stored as parsed: a NUL inside was refused by the parser. */
	if (!(copy = strndup(text, len))) {
		r = oom(err);
		goto out;
	}
	r = store_playbook_upload(st, cluster, playbook_name(pb), playbook_version(pb),
				  playbook_sha256(pb), copy, actor, util_now_unix_ms());
	if (r == -RY_E_NOT_FOUND) {
		r = ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "cluster", "unknown cluster %s",
				  cluster);
		goto out;
	}
	if (r < 0) {
		r = ctl_error_store(err, r, "storing the playbook");
		goto out;
	}
	r = store_playbook_uploads(st, playbook_sha256(pb), 0, &u, &n);
	if (r < 0) {
		r = ctl_error_store(err, r, "reading the upload back");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (strcmp(u[i].cluster, cluster) == 0)
			*ret = upload_json(&u[i]);
	r = *ret ? 0 : ctl_error_set(err, -RY_E_DB, CTL_ERR_INTERNAL, NULL, "upload not found");
out:
	store_playbook_uploads_free(u, n);
	playbook_free(pb);
	free(copy);
	return r;
}

int ctl_playbook_list(struct store *st, size_t limit, json_t **ret, struct ctl_error *err)
{
	struct store_playbook_upload *u = NULL;
	size_t n = 0;
	json_t *arr;
	int r = store_playbook_uploads(st, NULL, limit, &u, &n);

	if (r < 0)
		return ctl_error_store(err, r, "listing playbooks");
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		if (json_array_append_new(arr, upload_json(&u[i])) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	store_playbook_uploads_free(u, n);
	if (!arr)
		return oom(err);
	*ret = arr;
	return 0;
}

int ctl_playbook_get(struct store *st, const char *sha256, json_t **ret, struct ctl_error *err)
{
	struct store_playbook_upload *u = NULL;
	json_t *doc = NULL, *ups;
	char *text = NULL;
	size_t n = 0;
	int r = store_playbook_uploads(st, sha256, 0, &u, &n);

	if (r < 0)
		return ctl_error_store(err, r, "reading the playbook");
	if (n == 0) {
		r = ctl_error_set(err, -RY_E_NOT_FOUND, CTL_ERR_NOT_FOUND, "sha256",
				  "no playbook %s", sha256);
		goto out;
	}
	r = store_playbook_text_by_sha(st, sha256, &text);
	if (r < 0) {
		r = ctl_error_store(err, r, "reading the playbook");
		goto out;
	}
	ups = json_array();
	doc = json_pack("{s:s, s:s, s:s, s:I, s:s, s:o}", "name", u[0].name, "version",
			u[0].version, "sha256", u[0].sha256, "size", (json_int_t)u[0].size, "text",
			text, "uploads", ups);
	for (size_t i = 0; doc && i < n; i++)
		json_array_append_new(ups, json_pack("{s:s, s:s, s:I}", "cluster", u[i].cluster,
						     "actor", u[i].actor, "uploaded_at_ms",
						     (json_int_t)u[i].created_at_ms));
	if (!doc) {
		r = oom(err);
		goto out;
	}
	*ret = doc;
	r = 0;
out:
	store_playbook_uploads_free(u, n);
	free(text);
	return r;
}
