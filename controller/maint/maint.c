/* Maintenance's service: validate, store, read back, cancel; it returns data and never runs
 * anything (the engine pass, maint_pass.c, does). */
#include "controller/maint/maint.h"

#include "common/playbook/playbook.h"
#include "common/util/error.h"
#include "common/util/util.h"
#include "controller/signoff/revalidate_int.h"
#include "controller/store/store_maint.h"
#include "controller/store/store_nodes.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool ctl_maint_state_final(const char *state)
{
	return store_maint_state_final(state);
}

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* "12,15" into ["12", "15"]. */
static json_t *jobs_json(const char *jobs)
{
	json_t *a = json_array();

	for (const char *p = jobs; a && p && *p;) {
		size_t n = strcspn(p, ",");

		if (n)
			json_array_append_new(a, json_stringn(p, n));
		p += n + (p[n] == ',');
	}
	return a;
}

/* Nodes out of service because of the maintenance now: drained by it and not handed back. */
static bool out_of_service(const char *state)
{
	return strcmp(state, "waiting") != 0 && strcmp(state, "resumed") != 0 &&
	       strcmp(state, "skipped") != 0;
}

static json_t *maint_json(const struct store_maint *m)
{
	json_t *o = json_pack(
		"{s:s, s:s, s:s, s:s, s:i, s:f, s:I, s:b, s:s, s:i, s:i, s:s, s:I, "
		"s:I, s:I, s:I}",
		"id", m->id, "cluster", m->cluster, "mode", m->mode, "batch", m->batch,
		"batch_size", m->batch_size, "min_in_service", m->min_in_service, "job_timeout_ms",
		(json_int_t)m->job_timeout_ms, "sign", m->sign, "state", m->state, "current_batch",
		m->current_batch, "n_batches", m->n_batches, "actor", m->actor, "created_at_ms",
		(json_int_t)m->created_at_ms, "started_at_ms", (json_int_t)m->started_at_ms,
		"finished_at_ms", (json_int_t)m->finished_at_ms, "cancel_requested_at_ms",
		(json_int_t)m->cancel_requested_ms);
	struct playbook *pb = NULL;
	struct pb_diags diags;

	pb_diags_init(&diags);
	if (!o)
		return NULL;
	json_object_set_new(o, "scope", str_or_null(m->scope));
	json_object_set_new(o, "baseline", str_or_null(m->baseline_id));
	json_object_set_new(o, "reason", str_or_null(m->reason));
	/* The playbook was checked when the maintenance was made: only its name is read here. */
	if (playbook_parse(m->playbook, strlen(m->playbook), "playbook", &pb, &diags) == 0)
		json_object_set_new(o, "playbook",
				    json_pack("{s:s, s:s}", "name", playbook_name(pb), "version",
					      playbook_version(pb)));
	else
		json_object_set_new(o, "playbook", json_null());
	playbook_free(pb);
	pb_diags_done(&diags);
	return o;
}

/* Its batches and nodes, and how many nodes it holds out of service now, into o. */
static int detail_json(struct store *st, const char *id, json_t *o)
{
	struct store_maint_batch *b = NULL;
	struct store_maint_node *d = NULL;
	size_t nb = 0, nd = 0, out = 0;
	json_t *batches = json_array(), *nodes = json_array();
	int r = store_maint_batches(st, id, &b, &nb);

	if (r >= 0)
		r = store_maint_nodes(st, id, &d, &nd);
	for (size_t i = 0; r >= 0 && i < nb; i++)
		json_array_append_new(batches,
				      json_pack("{s:i, s:s, s:o, s:o, s:o, s:I, s:I}", "batch",
						b[i].batch, "state", b[i].state, "deployment",
						str_or_null(b[i].deployment_id), "campaign",
						str_or_null(b[i].campaign_id), "signoff",
						str_or_null(b[i].signoff_id), "started_at_ms",
						(json_int_t)b[i].started_at_ms, "finished_at_ms",
						(json_int_t)b[i].finished_at_ms));
	for (size_t i = 0; r >= 0 && i < nd; i++) {
		out += out_of_service(d[i].state);
		json_array_append_new(
			nodes,
			json_pack("{s:s, s:s, s:i, s:s, s:o, s:o, s:I}", "node_id", d[i].node_id,
				  "hostname", d[i].hostname, "batch", d[i].batch, "state",
				  d[i].state, "reason", str_or_null(d[i].reason), "jobs",
				  jobs_json(d[i].jobs), "since_ms", (json_int_t)d[i].since_ms));
	}
	if (r >= 0) {
		json_object_set_new(o, "out_of_service", json_integer((json_int_t)out));
		json_object_set(o, "batches", batches);
		json_object_set(o, "nodes", nodes);
	}
	json_decref(batches);
	json_decref(nodes);
	store_maint_batches_free(b, nb);
	store_maint_nodes_free(d, nd);
	return r;
}

int ctl_maint_get(struct store *st, const char *id, json_t **ret, struct ctl_error *err)
{
	struct store_maint *m = NULL;
	json_t *o;
	int r = store_maint_get(st, id, &m);

	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "id", "no maintenance %s", id);
	if (r < 0)
		return ctl_error_store(err, r, "reading the maintenance");
	o = maint_json(m);
	store_maint_free(m);
	if (!o)
		return ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	r = detail_json(st, id, o);
	if (r < 0) {
		json_decref(o);
		return ctl_error_store(err, r, "reading the maintenance's nodes");
	}
	*ret = o;
	return 0;
}

int ctl_maint_list(struct store *st, size_t limit, json_t **ret, struct ctl_error *err)
{
	struct store_maint **v = NULL;
	size_t n = 0;
	json_t *arr;
	int r = store_maints_list(st, false, limit, &v, &n);

	if (r < 0)
		return ctl_error_store(err, r, "listing maintenances");
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		if (json_array_append_new(arr, maint_json(v[i])) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	store_maints_free(v, n);
	if (!arr)
		return ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	*ret = arr;
	return 0;
}

int ctl_maint_cancel(struct store *st, const char *id, const char *actor, struct ctl_error *err)
{
	int r = store_maint_request_cancel(st, id, actor, util_now_unix_ms());

	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "id", "no maintenance %s", id);
	if (r < 0)
		return ctl_error_store(err, r, "requesting the cancel");
	if (r == 0)
		ctl_error_set(err, 0, CTL_ERR_CONFLICT, "id", "maintenance %s has ended", id);
	return r;
}

/* ---- creating one --------------------------------------------------------------------------- */

/* The scope's nodes the playbook targets, in host-name order (store_nodes_scan()'s). */
struct scope_pick {
	const struct playbook *pb;
	const char *scope;
	struct store_maint_target *v; /* strings ours */
	size_t n, cap;
	size_t no_facts; /* in scope, left out: no facts yet */
};

static int pick_one(void *ud, const struct store_node *node)
{
	struct scope_pick *p = ud;
	struct playbook_facts *facts = NULL;
	bool match;

	if (!ctl_node_selected(p->scope, node->hostname, node->id))
		return 0;
	if (!node->facts_json) {
		p->no_facts++;
		return 0;
	}
	match = playbook_facts_index(node->facts_json, strlen(node->facts_json), &facts) == 0 &&
		playbook_target_matches_facts(p->pb, node->cluster, facts);
	playbook_facts_free(facts);
	if (!match)
		return 0;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		struct store_maint_target *v = realloc(p->v, cap * sizeof(*v));

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

static void pick_done(struct scope_pick *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free((char *)p->v[i].node_id);
		free((char *)p->v[i].hostname);
	}
	free(p->v);
}

/* "N" or "P%" of n nodes, at least 1; -1 when malformed. */
static long batch_nodes(const char *s, size_t n)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || v < 1 || v > 100000 || (*end && strcmp(end, "%") != 0) || (*end && v > 100))
		return -1;
	if (*end)
		v = (long)((double)n * (double)v / 100.0);
	return v < 1 ? 1 : v;
}

int ctl_maint_create(struct store *st, const struct ctl_maint_request *rq, json_t **ret,
		     struct ctl_error *err)
{
	struct store_maint_new n = {0};
	struct scope_pick pk = {0};
	struct playbook *pb = NULL;
	json_t *report = NULL;
	char *base_text = NULL, *text = NULL, id[24], hex[17];
	const char *mode = rq->mode ? rq->mode : "deploy";
	const char *batch = rq->batch ? rq->batch : CTL_MAINT_BATCH_DEFAULT;
	double mis = rq->min_in_service < 0 ? CTL_MAINT_MIN_IN_SERVICE_DEFAULT : rq->min_in_service;
	int64_t jt = rq->job_timeout_ms > 0 ? rq->job_timeout_ms : CTL_MAINT_JOB_TIMEOUT_DEFAULT_MS;
	bool revalidate = strcmp(mode, "revalidate") == 0;
	unsigned char rnd[8];
	long per, max_out;
	int n_batches, r;

	if (!rq->cluster || !ctl_valid_cluster_name(rq->cluster))
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "cluster",
				     "not a cluster name");
	if (!revalidate && strcmp(mode, "deploy") != 0)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "mode",
				     "mode is deploy or revalidate, not '%.32s'", mode);
	if (revalidate && (!rq->baseline || !rq->baseline[0]))
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "baseline",
				     "a revalidating maintenance needs a baseline sign-off");
	if (!revalidate && rq->baseline)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "baseline",
				     "a baseline is for a revalidating maintenance only");
	if (!revalidate && !rq->playbook_text)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "playbook",
				     "a playbook to apply is required");
	if (!(mis >= 0 && mis < 1))
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "min_in_service",
				     "min_in_service is a fraction in [0, 1)");
	if (jt > CTL_MAINT_JOB_TIMEOUT_MAX_MS)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "job_timeout_ms",
				     "job_timeout is at most 7 days");
	if (batch_nodes(batch, 1) < 0)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "batch",
				     "invalid batch '%.32s' (use N or P%%)", batch);
	if (rq->scope && (r = ctl_node_selector_check(rq->scope, "scope", err)) < 0)
		return r;
	if (revalidate) {
		r = ctl_revalidate_baseline(st, rq->cluster, rq->baseline, &report, &base_text,
					    err);
		if (r < 0)
			return r;
	}
	text = rq->playbook_text ? strndup(rq->playbook_text, rq->playbook_len) : base_text;
	if (!text) {
		r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
		goto out;
	}
	r = ctl_playbook_for_cluster(text, strlen(text),
				     rq->playbook_text ? rq->playbook_file
						       : "(the baseline's playbook)",
				     rq->cluster, &pb, err);
	if (r < 0)
		goto out;
	pk.pb = pb;
	pk.scope = rq->scope;
	r = store_nodes_scan(st, rq->cluster, pick_one, &pk);
	if (r < 0) {
		r = ctl_error_store(err, r, "listing nodes");
		goto out;
	}
	if (pk.n == 0) {
		r = ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID,
				  rq->scope ? "scope" : "cluster",
				  "no node of cluster %s is in scope and targeted by the playbook "
				  "(%zu in scope have no facts yet)",
				  rq->cluster, pk.no_facts);
		goto out;
	}
	/* At most n - ceil(min_in_service x n) nodes out at once. */
	max_out = (long)pk.n - (long)ceil(mis * (double)pk.n - 1e-9);
	per = batch_nodes(batch, pk.n);
	if (max_out < 1) {
		r = ctl_error_set(err, -RY_E_INVALID, CTL_ERR_CONFLICT, "min_in_service",
				  "min_in_service %.2f of %zu nodes lets no node out of service",
				  mis, pk.n);
		goto out;
	}
	if (per > max_out)
		per = max_out;
	for (size_t i = 0; i < pk.n; i++)
		pk.v[i].batch = (int)(i / (size_t)per);
	n_batches = (int)((pk.n + (size_t)per - 1) / (size_t)per);
	r = util_random_bytes(rnd, sizeof(rnd));
	if (r < 0) {
		r = ctl_error_set(err, r, CTL_ERR_INTERNAL, NULL, "cannot make an id");
		goto out;
	}
	util_hex(rnd, sizeof(rnd), hex);
	snprintf(id, sizeof(id), "mt-%s", hex);
	n.id = id;
	n.cluster = rq->cluster;
	n.actor = rq->actor ? rq->actor : "admin";
	n.mode = mode;
	n.scope = rq->scope;
	n.playbook = text;
	n.baseline_id = revalidate ? rq->baseline : NULL;
	n.batch = batch;
	n.batch_size = (int)per;
	n.min_in_service = mis;
	n.job_timeout_ms = jt;
	n.sign = rq->sign || revalidate;
	r = store_maint_create(st, &n, pk.v, pk.n, n_batches, util_now_unix_ms());
	if (r == -RY_E_NOT_FOUND)
		r = ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "cluster", "unknown cluster %s",
				  rq->cluster);
	else if (r == -RY_E_EXISTS)
		r = ctl_error_set(err, r, CTL_ERR_CONFLICT, "cluster",
				  "a maintenance of cluster %s is still running", rq->cluster);
	else if (r < 0)
		r = ctl_error_store(err, r, "storing the maintenance");
	if (r >= 0)
		r = ctl_maint_get(st, id, ret, err);
out:
	if (text != base_text)
		free(text);
	free(base_text);
	json_decref(report);
	playbook_free(pb);
	pick_done(&pk);
	return r;
}
