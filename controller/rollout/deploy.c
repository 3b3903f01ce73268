/* The deployment service: a playbook and a cluster become a stored deployment (targets in
 * deterministic batches), and stored deployments become JSON. */
#include "controller/rollout/deploy.h"
#include "controller/rollout/policy.h"
#include "controller/store/store.h"
#include "controller/store/store_deploy.h"
#include "controller/store/store_nodes.h"
#include "common/playbook/playbook.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* "N" or "P%" into a count or a percentage; -EINVAL otherwise. */
static int count_or_percent(const char *s, bool allow_zero, int *ret_count, int *ret_percent)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || v < (allow_zero ? 0 : 1) || (*end && strcmp(end, "%") != 0) ||
	    (*end && v > 100) || v > 100000)
		return -EINVAL;
	*ret_count = *end ? 0 : (int)v;
	*ret_percent = *end ? (int)v : 0;
	return 0;
}

/* The playbook's policy with the request's overrides. */
static int policy_from(const struct pb_rollout *pr, const struct ctl_deploy_request *rq,
		       struct rollout_policy *ret, struct ctl_error *err)
{
	struct rollout_policy p = {0};

	p.batch_count = pr->batch_count > 0 ? pr->batch_count : 0;
	p.batch_percent = pr->batch_percent > 0 ? pr->batch_percent : 0;
	p.max_fail_count = pr->max_fail_count > 0 ? pr->max_fail_count : 0;
	p.max_fail_percent = pr->max_fail_percent > 0 ? pr->max_fail_percent : 0;
	p.canary = pr->canary;
	p.pause_ms = pr->pause_ms;
	if (rq->batch && count_or_percent(rq->batch, false, &p.batch_count, &p.batch_percent) < 0)
		return ctl_error_set(err, -EINVAL, CTL_ERR_INVALID, "batch",
				     "invalid batch '%s' (use N or P%%)", rq->batch);
	if (rq->max_fail &&
	    count_or_percent(rq->max_fail, true, &p.max_fail_count, &p.max_fail_percent) < 0)
		return ctl_error_set(err, -EINVAL, CTL_ERR_INVALID, "max_fail",
				     "invalid max_fail '%s' (use N or P%%)", rq->max_fail);
	if (rq->canary >= 0)
		p.canary = rq->canary;
	if (rq->pause_ms >= 0)
		p.pause_ms = rq->pause_ms;
	*ret = p;
	return 0;
}

/* The policy as stored, with the node limit when there is one (shown, not read back: the
 * targets were chosen with it). Caller frees; NULL when out of memory. */
static char *policy_with_limit(const struct rollout_policy *pol, const char *nodes)
{
	char *s = rollout_policy_to_json(pol), *out;
	json_t *o;

	if (!s || !nodes)
		return s;
	o = json_loads(s, 0, NULL);
	free(s);
	if (!o || json_object_set_new(o, "nodes", json_string(nodes)) < 0) {
		json_decref(o);
		return NULL;
	}
	out = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return out;
}

static int add_skip(struct ctl_deploy_created *c, const struct store_node *n, const char *reason)
{
	struct ctl_deploy_skip *v = realloc(c->skipped, (c->n_skipped + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	c->skipped = v;
	v[c->n_skipped].node_id = strdup(n->id);
	v[c->n_skipped].hostname = strdup(n->hostname);
	v[c->n_skipped].reason = strdup(reason);
	c->n_skipped++;
	if (!v[c->n_skipped - 1].node_id || !v[c->n_skipped - 1].hostname ||
	    !v[c->n_skipped - 1].reason)
		return -ENOMEM;
	return 0;
}

void ctl_deploy_created_done(struct ctl_deploy_created *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_skipped; i++) {
		free(c->skipped[i].node_id);
		free(c->skipped[i].hostname);
		free(c->skipped[i].reason);
	}
	free(c->skipped);
	free(c->playbook);
	free(c->version);
	memset(c, 0, sizeof(*c));
}

/* Picking a cluster's targets, one stored node at a time (store_nodes_scan()). */
struct pick {
	const struct playbook *pb;
	const char *nodes;	       /* the node limit; NULL: none */
	struct store_deploy_target *v; /* their strings are ours */
	size_t n, cap;
	struct ctl_deploy_created *c; /* the skipped ones, with the reason */
};

static int pick_one(void *ud, const struct store_node *node)
{
	struct pick *p = ud;
	struct playbook_facts *facts = NULL;
	bool match;

	if (!ctl_node_selected(p->nodes, node->hostname, node->id))
		return add_skip(p->c, node, "outside the node limit");
	if (!node->facts_json)
		return add_skip(p->c, node, "no facts yet (its agent has never connected)");
	/* Indexed, not parsed: the selector reads a few of the facts' values. */
	match = playbook_facts_index(node->facts_json, strlen(node->facts_json), &facts) == 0 &&
		playbook_target_matches_facts(p->pb, node->cluster, facts);
	playbook_facts_free(facts);
	if (!match)
		return add_skip(p->c, node, "selector does not match its facts");
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		struct store_deploy_target *v = realloc(p->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->v = v;
		p->cap = cap;
	}
	p->v[p->n].node_id = strdup(node->id);
	p->v[p->n].hostname = strdup(node->hostname);
	p->v[p->n].batch = 0;
	p->n++;
	return p->v[p->n - 1].node_id && p->v[p->n - 1].hostname ? 0 : -ENOMEM;
}

static void pick_done(struct pick *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free((char *)p->v[i].node_id);
		free((char *)p->v[i].hostname);
	}
	free(p->v);
}

int ctl_deploy_create(struct store *st, const struct ctl_deploy_request *rq,
		      struct ctl_deploy_created *ret, struct ctl_error *err)
{
	struct ctl_deploy_created c = {0};
	struct playbook *pb = NULL;
	struct pick pk = {.c = &c};
	struct store_deploy_target *targets;
	struct store_deployment_new dn = {0};
	struct rollout_policy pol;
	size_t n_targets = 0, *sizes = NULL, n_batches = 0;
	char hex[9], *policy_json = NULL;
	unsigned char rnd[4];
	int r;

	/* As campaigns check it: a name the store would refuse is the request's fault (it was a
	 * 500 "storing the deployment: Invalid argument" over 255 bytes; found by fuzz_rest). */
	if (!rq->cluster || !ctl_valid_cluster_name(rq->cluster)) {
		r = ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "cluster",
				  "bad cluster name");
		goto out;
	}
	if (rq->nodes && (r = ctl_node_selector_check(rq->nodes, "nodes", err)) < 0)
		goto out;
	if (rq->id && !ctl_valid_object_id(rq->id, "d-")) {
		r = ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "id", "not a deployment id");
		goto out;
	}
	r = ctl_playbook_for_cluster(rq->playbook_text, rq->playbook_len, rq->playbook_file,
				     rq->cluster, &pb, err);
	if (r < 0)
		goto out;
	r = policy_from(playbook_rollout(pb), rq, &pol, err);
	if (r < 0)
		goto out;
	/* The cluster's nodes the playbook targets, ordered by host name (batches are
	 * deterministic), and the others with the reason; facts read in place, not copied. */
	pk.pb = pb;
	pk.nodes = rq->nodes;
	r = store_nodes_scan(st, rq->cluster, pick_one, &pk);
	if (r < 0 && r != -ENOMEM) {
		ctl_error_store(err, r, "listing nodes");
		goto out;
	}
	targets = pk.v;
	n_targets = pk.n;
	if (r >= 0 && rq->nodes && n_targets == 0) {
		r = ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "nodes",
				  "the node limit '%s' takes none of the playbook's targets",
				  rq->nodes);
		goto out;
	}
	if (r >= 0)
		r = rollout_batches(&pol, n_targets, &sizes, &n_batches);
	if (r < 0) {
		ctl_error_set(err, r, CTL_ERR_INTERNAL, NULL, "choosing batches: %s",
			      ry_strerror(r));
		goto out;
	}
	for (size_t b = 0, k = 0; b < n_batches; b++)
		for (size_t j = 0; j < sizes[b]; j++)
			targets[k++].batch = (int)b;
	r = util_random_bytes(rnd, sizeof(rnd));
	policy_json = r >= 0 ? policy_with_limit(&pol, rq->nodes) : NULL;
	if (!policy_json) {
		r = ctl_error_set(err, r < 0 ? r : -ENOMEM, CTL_ERR_INTERNAL, NULL,
				  "cannot make a deployment id");
		goto out;
	}
	util_hex(rnd, sizeof(rnd), hex);
	snprintf(c.id, sizeof(c.id), "%s", rq->id ? rq->id : "");
	if (!rq->id)
		snprintf(c.id, sizeof(c.id), "d-%s", hex);
	dn.id = c.id;
	dn.cluster = rq->cluster;
	dn.actor = rq->actor ? rq->actor : "admin";
	dn.playbook_name = playbook_name(pb);
	dn.playbook_version = playbook_version(pb);
	dn.playbook_sha256 = playbook_sha256(pb);
	dn.playbook_text = rq->playbook_text;
	dn.policy_json = policy_json;
	dn.check_mode = rq->check;
	if (rq->id) {
		struct store_deployment *old = NULL;

		r = store_deployment_get(st, rq->id, &old);
		store_deployment_free(old);
		if (r != -RY_E_NOT_FOUND) {
			r = r < 0 ? ctl_error_store(err, r, "reading deployments")
				  : ctl_error_set(err, -RY_E_EXISTS, CTL_ERR_CONFLICT, "id",
						  "deployment %s exists", rq->id);
			goto out;
		}
	}
	r = store_deployment_create(st, &dn, targets, n_targets, util_now_unix_ms());
	if (r == -RY_E_NOT_FOUND) {
		ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "cluster", "unknown cluster %s",
			      rq->cluster);
		goto out;
	}
	if (r < 0) {
		ctl_error_store(err, r, "storing the deployment");
		goto out;
	}
	c.playbook = strdup(playbook_name(pb));
	c.version = strdup(playbook_version(pb));
	c.n_targets = n_targets;
	c.n_batches = n_batches;
	*ret = c;
	memset(&c, 0, sizeof(c));
out:
	ctl_deploy_created_done(&c);
	playbook_free(pb);
	pick_done(&pk);
	free(sizes);
	free(policy_json);
	return r;
}

bool ctl_deploy_state_final(const char *state)
{
	return strcmp(state, "pending") != 0 && strcmp(state, "running") != 0;
}

static json_t *node_json(const struct store_deploy_node *n)
{
	json_t *o = json_pack("{s:s, s:s, s:i, s:s, s:i, s:i, s:i, s:i, s:I, s:I}", "node_id",
			      n->node_id, "hostname", n->hostname, "batch", n->batch, "state",
			      n->state, "ok", n->ok, "changed", n->changed, "failed", n->failed,
			      "skipped", n->skipped, "sent_at_ms", (json_int_t)n->sent_at_ms,
			      "finished_at_ms", (json_int_t)n->finished_at_ms);

	json_object_set_new(o, "message", n->message ? json_string(n->message) : json_null());
	/* A reboot in its plan: the one under way (the node is expected offline), or how long
	 * the last one took, as the controller saw it. */
	if (n->reboot_step >= 0 && strcmp(n->state, "sent") == 0)
		json_object_set_new(o, "reboot",
				    json_pack("{s:i, s:s, s:I}", "step", n->reboot_step, "state",
					      "rebooting", "since_ms",
					      (json_int_t)n->reboot_since_ms));
	else if (n->reboot_ms >= 0)
		json_object_set_new(o, "reboot",
				    json_pack("{s:s, s:I}", "state", "rebooted", "duration_ms",
					      (json_int_t)n->reboot_ms));
	else
		json_object_set_new(o, "reboot", json_null());
	return o;
}

/* The step a node reboots at, while it does: status "rebooting", no result yet. */
static json_t *rebooting_step_json(const struct store_deploy_node *n)
{
	return json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:I}", "index", n->reboot_step, "name",
			 n->reboot_name ? n->reboot_name : "", "status", "rebooting", "diff", "",
			 "message", "rebooting: waiting for the node to come back", "detail", "",
			 "duration_ms", (json_int_t)0);
}

/* A step's message is its headline (first line) and detail (the lines after it: the raw
 * evaluator text, a tool's stderr); they are given apart, the detail "" when there is none. */
static json_t *step_json(const struct store_step_result *s)
{
	const char *msg = s->message ? s->message : "";
	size_t head = strcspn(msg, "\n");

	return json_pack("{s:i, s:s, s:s, s:s, s:s%, s:s, s:I}", "index", s->idx, "name", s->name,
			 "status", s->status, "diff", s->diff ? s->diff : "", "message", msg, head,
			 "detail", msg[head] ? msg + head + 1 : "", "duration_ms",
			 (json_int_t)s->duration_ms);
}

/* The first of res[0..m) (sorted by node id) that belongs to node_id, or m. O(log m). */
static size_t first_result(const struct store_step_result *res, size_t m, const char *node_id)
{
	size_t lo = 0, hi = m;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(res[mid].node_id, node_id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first failed step of res[k..] while it is node_id's, or NULL. */
static const struct store_step_result *failed_of(const struct store_step_result *res, size_t m,
						 size_t k, const char *node_id)
{
	for (; k < m && strcmp(res[k].node_id, node_id) == 0; k++)
		if (strcmp(res[k].status, "failed") == 0)
			return &res[k];
	return NULL;
}

/* A failed step as the node's failed_step: its headline as message, its detail apart. */
static json_t *failed_step_json(const struct store_step_result *f)
{
	const char *msg = f->message ? f->message : "";
	size_t head = strcspn(msg, "\n");

	return json_pack("{s:i, s:s, s:s%, s:s}", "index", f->idx, "name", f->name, "message", msg,
			 head, "detail", msg[head] ? msg + head + 1 : "");
}

int ctl_deploy_failed_steps(struct store *st, const char *id, json_t **ret)
{
	struct store_step_result *res = NULL;
	json_t *o = json_object();
	size_t m = 0;
	int r = o ? store_step_results(st, id, &res, &m) : -ENOMEM;

	for (size_t k = 0; r >= 0 && k < m; k++) {
		if (strcmp(res[k].status, "failed") != 0 || json_object_get(o, res[k].node_id))
			continue;
		if (json_object_set_new(o, res[k].node_id, failed_step_json(&res[k])) < 0)
			r = -ENOMEM;
	}
	store_step_results_free(res, m);
	if (r < 0) {
		json_decref(o);
		return r;
	}
	*ret = o;
	return 0;
}

static json_t *summary_json(const struct store_deployment *d)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:s, s:I, s:I, s:i}", "id", d->id,
			      "cluster", d->cluster, "playbook", d->playbook_name, "version",
			      d->playbook_version, "sha256", d->playbook_sha256, "check_mode",
			      d->check_mode, "state", d->state, "created_at_ms",
			      (json_int_t)d->created_at_ms, "finished_at_ms",
			      (json_int_t)d->finished_at_ms, "current_batch", d->current_batch);

	if (!o)
		return NULL;
	json_object_set_new(o, "reason", d->reason ? json_string(d->reason) : json_null());
	json_object_set_new(o, "policy", json_loads(d->policy_json, 0, NULL));
	json_object_set_new(o, "actor", json_string(d->actor ? d->actor : ""));
	json_object_set_new(o, "cancel_requested_at_ms", json_integer(d->cancel_requested_ms));
	return o;
}

int ctl_deploy_cancel(struct store *st, const char *id, const char *actor, struct ctl_error *err)
{
	int r = store_deployment_request_cancel(st, id, actor, util_now_unix_ms());

	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "id", "no deployment %s", id);
	if (r < 0)
		return ctl_error_store(err, r, "requesting the cancel");
	if (r == 0)
		ctl_error_set(err, 0, CTL_ERR_CONFLICT, "id", "deployment %s has ended", id);
	return r;
}

int ctl_deploy_get(struct store *st, const char *id, enum ctl_deploy_detail detail, json_t **ret,
		   struct ctl_error *err)
{
	struct store_deployment *d = NULL;
	struct store_deploy_node *nodes = NULL;
	struct store_step_result *res = NULL;
	size_t n = 0, m = 0;
	json_t *o = NULL, *arr;
	int r;

	r = store_deployment_get(st, id, &d);
	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "id", "no deployment %s", id);
	if (r < 0)
		return ctl_error_store(err, r, "reading the deployment");
	o = summary_json(d);
	if (o && detail >= CTL_DEPLOY_NODES) {
		r = store_deploy_nodes(st, id, &nodes, &n);
		if (r >= 0)
			r = store_step_results(st, id, &res, &m);
		if (r < 0) {
			ctl_error_store(err, r, "reading the deployment's nodes");
			goto out;
		}
		arr = json_array();
		for (size_t i = 0; i < n; i++) {
			json_t *no = node_json(&nodes[i]), *steps = json_array();
			/* Results come ordered by node id, then index: find the node's run. */
			size_t k0 = first_result(res, m, nodes[i].node_id);
			const struct store_step_result *f = failed_of(res, m, k0, nodes[i].node_id);

			json_object_set_new(no, "failed_step",
					    f ? failed_step_json(f) : json_null());
			for (size_t k = k0; k < m && strcmp(res[k].node_id, nodes[i].node_id) == 0;
			     k++)
				json_array_append_new(steps, step_json(&res[k]));
			if (nodes[i].reboot_step >= 0 && strcmp(nodes[i].state, "sent") == 0)
				json_array_append_new(steps, rebooting_step_json(&nodes[i]));
			if (detail >= CTL_DEPLOY_STEPS)
				json_object_set_new(no, "steps", steps);
			else
				json_decref(steps);
			json_array_append_new(arr, no);
		}
		json_object_set_new(o, "nodes", arr);
	}
	if (!o) {
		r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
		goto out;
	}
	*ret = o;
	o = NULL;
	r = 0;
out:
	json_decref(o);
	store_step_results_free(res, m);
	store_deploy_nodes_free(nodes, n);
	store_deployment_free(d);
	return r;
}

int ctl_deploy_list(struct store *st, size_t limit, json_t **ret, struct ctl_error *err)
{
	struct store_deployment **deps = NULL;
	size_t n = 0;
	json_t *arr;
	int r;

	r = store_deployments_list(st, false, limit ? limit : 50, &deps, &n);
	if (r < 0)
		return ctl_error_store(err, r, "listing deployments");
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		json_array_append_new(arr, summary_json(deps[i]));
	store_deployments_free(deps, n);
	if (!arr)
		return ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	*ret = arr;
	return 0;
}
