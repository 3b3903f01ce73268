/* Revalidation's service: validate, store, read back, cancel; it returns data and never runs
 * anything (the engine pass, revalidate_pass.c, does). */
#include "controller/signoff/revalidate.h"
#include "controller/signoff/revalidate_int.h"

#include "common/log/log.h"
#include "common/playbook/playbook.h"
#include "common/util/error.h"
#include "common/util/util.h"
#include "controller/campaign/campaign.h"
#include "controller/rollout/deploy.h"
#include "controller/signoff/signoff.h"
#include "controller/store/store.h"
#include "controller/store/store_campaign.h"
#include "controller/store/store_deploy.h"
#include "controller/store/store_playbook.h"
#include "controller/store/store_revalidate.h"
#include "controller/store/store_signoff.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSTR(o, k) json_string_value(json_object_get((o), (k)))

bool ctl_revalidate_state_final(const char *state)
{
	return store_revalidation_state_final(state);
}

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* The configuration checks as stored, each with its deployment's state (and reason) now. */
static json_t *checks_json(struct store *st, const struct store_revalidation *v)
{
	json_t *checks = v->checks_json ? json_loads(v->checks_json, 0, NULL) : NULL, *e;
	size_t i;

	if (!json_is_array(checks)) {
		json_decref(checks);
		return json_array();
	}
	json_array_foreach(checks, i, e)
	{
		const char *id = JSTR(e, "deployment");
		struct store_deployment *d = NULL;

		if (id && store_deployment_get(st, id, &d) == 0) {
			json_object_set_new(e, "check_mode", json_boolean(d->check_mode));
			json_object_set_new(e, "state", json_string(d->state));
			json_object_set_new(e, "reason", str_or_null(d->reason));
		}
		store_deployment_free(d);
	}
	return checks;
}

static json_t *revalidation_json(struct store *st, const struct store_revalidation *v)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:b, s:b, s:f, s:f, s:s, s:s, s:I, s:I, s:I}", "id",
			      v->id, "cluster", v->cluster, "baseline", v->baseline_id, "apply",
			      v->apply, "custom_playbook", v->playbook != NULL, "tolerance_bw_pct",
			      v->tolerance_bw_pct, "tolerance_lat_pct", v->tolerance_lat_pct,
			      "state", v->state, "actor", v->actor, "created_at_ms",
			      (json_int_t)v->created_at_ms, "finished_at_ms",
			      (json_int_t)v->finished_at_ms, "cancel_requested_at_ms",
			      (json_int_t)v->cancel_requested_ms);

	if (!o)
		return NULL;
	json_object_set_new(o, "reason", str_or_null(v->reason));
	json_object_set_new(o, "deployment", str_or_null(v->deployment_id));
	json_object_set_new(o, "campaign", str_or_null(v->campaign_id));
	json_object_set_new(o, "signoff", str_or_null(v->signoff_id));
	json_object_set_new(o, "verdict", str_or_null(v->verdict));
	json_object_set_new(o, "checks", checks_json(st, v));
	return o;
}

/* The regressions read first: the sign-off's verdict, the summary lines its report leads with
 * (regressions, failed checks, drift) and its regressions, into o. A sign-off gone or
 * unreadable leaves o as it is. */
static void signoff_findings(struct store *st, const char *signoff_id, json_t *o)
{
	struct ctl_error err;
	json_t *so = NULL;
	const json_t *cmp;

	ctl_error_init(&err);
	if (ctl_signoff_get(st, signoff_id, true, &so, &err) == 0) {
		cmp = json_object_get(json_object_get(so, "report"), "comparison");
		json_object_set(o, "summary", json_object_get(so, "summary"));
		json_object_set(o, "regressions", json_object_get(cmp, "regressions"));
		json_object_set_new(
			o, "metrics_compared",
			json_integer((json_int_t)json_array_size(json_object_get(cmp, "metrics"))));
		json_object_set(o, "tolerance", json_object_get(cmp, "tolerance"));
	}
	json_decref(so);
	ctl_error_done(&err);
}

int ctl_revalidate_get(struct store *st, const char *id, json_t **ret, struct ctl_error *err)
{
	struct store_revalidation *v = NULL;
	int r = store_revalidation_get(st, id, &v);

	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "id", "no revalidation %s", id);
	if (r < 0)
		return ctl_error_store(err, r, "reading the revalidation");
	*ret = revalidation_json(st, v);
	if (*ret && v->signoff_id)
		signoff_findings(st, v->signoff_id, *ret);
	store_revalidation_free(v);
	return *ret ? 0 : ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
}

int ctl_revalidate_list(struct store *st, size_t limit, json_t **ret, struct ctl_error *err)
{
	struct store_revalidation **v = NULL;
	size_t n = 0;
	json_t *arr;
	int r = store_revalidations_list(st, false, limit, &v, &n);

	if (r < 0)
		return ctl_error_store(err, r, "listing revalidations");
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		if (json_array_append_new(arr, revalidation_json(st, v[i])) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	store_revalidations_free(v, n);
	if (!arr)
		return ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	*ret = arr;
	return 0;
}

int ctl_revalidate_baseline(struct store *st, const char *cluster, const char *baseline,
			    json_t **ret_report, char **ret_text, struct ctl_error *err)
{
	json_t *so = NULL;
	const char *sha;
	int r = ctl_signoff_get(st, baseline, true, &so, err);

	if (r < 0) {
		if (err->code && strcmp(err->code, CTL_ERR_NOT_FOUND) == 0)
			snprintf(err->field, sizeof(err->field), "baseline");
		return r;
	}
	if (strcmp(JSTR(so, "cluster"), cluster) != 0) {
		/* Another cluster's sign-off is as unknown as a missing one. */
		json_decref(so);
		return ctl_error_set(err, -RY_E_NOT_FOUND, CTL_ERR_NOT_FOUND, "baseline",
				     "no sign-off %s of cluster %s", baseline, cluster);
	}
	*ret_report = json_incref(json_object_get(so, "report"));
	json_decref(so);
	sha = json_string_value(json_object_get(
		json_object_get(json_object_get(*ret_report, "campaign"), "playbook"), "sha256"));
	r = sha ? store_playbook_text_by_sha(st, sha, ret_text) : -RY_E_NOT_FOUND;
	if (r < 0) {
		json_decref(*ret_report);
		*ret_report = NULL;
		if (r == -RY_E_NOT_FOUND)
			return ctl_error_set(err, r, CTL_ERR_CONFLICT, "baseline",
					     "the playbook of %s's campaign is not stored",
					     baseline);
		return ctl_error_store(err, r, "reading the baseline's playbook");
	}
	return 0;
}

static bool has_sha(const json_t *plan, const char *sha)
{
	const json_t *e;
	size_t i;

	json_array_foreach(plan, i, e)
	{
		const char *s = JSTR(json_object_get(e, "playbook"), "sha256");

		if (s && strcmp(s, sha) == 0)
			return true;
	}
	return false;
}

static json_t *check_entry(const json_t *playbook)
{
	return json_pack("{s:O, s:n}", "playbook", playbook, "deployment");
}

/* The configuration a revalidation checks (docs/signoff.md, "Revalidation"): the playbook given
 * (custom), else every configuration playbook the baseline's report lists as deployed, oldest
 * first (the order they were applied in), then the campaign's own when it has steps and is not
 * among them. Each must still be stored and parse for the cluster (CTL_ERR_CONFLICT /
 * CTL_ERR_PLAYBOOK otherwise). *ret: [{playbook: {name, version, sha256 (null: the custom
 * one)}, deployment: null}]. */
static int checks_plan(struct store *st, const char *cluster, const json_t *report,
		       const struct playbook *custom, const struct playbook *base_pb, json_t **ret,
		       struct ctl_error *err)
{
	const json_t *deps = json_object_get(report, "deployments");
	const json_t *camp_pb = json_object_get(json_object_get(report, "campaign"), "playbook");
	json_t *plan = json_array();
	int r = 0;

	if (!plan)
		return ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	if (custom) {
		json_array_append_new(plan,
				      json_pack("{s:{s:s, s:s, s:n}, s:n}", "playbook", "name",
						playbook_name(custom), "version",
						playbook_version(custom), "sha256", "deployment"));
		goto done;
	}
	for (size_t i = json_array_size(deps); r >= 0 && i-- > 0;) {
		const json_t *pb = json_object_get(json_array_get(deps, i), "playbook");
		const char *sha = JSTR(pb, "sha256");
		struct playbook *parsed = NULL;
		char *text = NULL, file[300];

		if (!sha || has_sha(plan, sha))
			continue;
		snprintf(file, sizeof(file), "(%s %s, deployed before the baseline)",
			 JSTR(pb, "name") ? JSTR(pb, "name") : "?",
			 JSTR(pb, "version") ? JSTR(pb, "version") : "?");
		r = store_playbook_text_by_sha(st, sha, &text);
		if (r == -RY_E_NOT_FOUND)
			r = ctl_error_set(err, r, CTL_ERR_CONFLICT, "baseline",
					  "the playbook %s is not stored", file);
		else if (r < 0)
			r = ctl_error_store(err, r, "reading a baseline's playbook");
		else
			r = ctl_playbook_for_cluster(text, strlen(text), file, cluster, &parsed,
						     err);
		if (r >= 0)
			json_array_append_new(plan, check_entry(pb));
		playbook_free(parsed);
		free(text);
	}
	if (r >= 0 && JSTR(camp_pb, "sha256") && !has_sha(plan, JSTR(camp_pb, "sha256")) &&
	    playbook_step_count(base_pb) > 0)
		json_array_append_new(plan, check_entry(camp_pb));
done:
	if (r < 0) {
		json_decref(plan);
		return r;
	}
	*ret = plan;
	return 0;
}

static bool pct_ok(double v)
{
	return v == 0 || (v > 0 && v <= 1000);
}

int ctl_revalidate_create(struct store *st, const struct ctl_revalidate_request *rq, json_t **ret,
			  struct ctl_error *err)
{
	struct store_revalidation_new n = {0};
	struct playbook *pb = NULL, *base_pb = NULL;
	json_t *report = NULL, *plan = NULL;
	char *base_text = NULL, *plan_s = NULL, id[24], hex[17];
	unsigned char rnd[8];
	int r;

	if (!rq->cluster || !ctl_valid_cluster_name(rq->cluster))
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "cluster",
				     "not a cluster name");
	if (!rq->baseline || !rq->baseline[0] || strlen(rq->baseline) > STORE_TEXT_MAX)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "baseline",
				     "a baseline sign-off is required");
	if (!pct_ok(rq->tolerance_bw_pct))
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "tolerance_bw_pct",
				     "a tolerance is a percentage in (0, 1000]");
	if (!pct_ok(rq->tolerance_lat_pct))
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "tolerance_lat_pct",
				     "a tolerance is a percentage in (0, 1000]");
	r = ctl_revalidate_baseline(st, rq->cluster, rq->baseline, &report, &base_text, err);
	if (r < 0)
		return r;
	/* The playbook to check or apply must parse for this cluster now, not in the pass. */
	r = ctl_playbook_for_cluster(rq->playbook_text ? rq->playbook_text : base_text,
				     rq->playbook_text ? rq->playbook_len : strlen(base_text),
				     rq->playbook_text ? rq->playbook_file
						       : "(the baseline's playbook)",
				     rq->cluster, &pb, err);
	if (r < 0)
		goto out;
	/* The campaign rerun is the baseline's: its steps decide whether it is checked too. */
	if (rq->playbook_text)
		r = ctl_playbook_for_cluster(base_text, strlen(base_text),
					     "(the baseline's playbook)", rq->cluster, &base_pb,
					     err);
	if (r >= 0)
		r = checks_plan(st, rq->cluster, report, rq->playbook_text ? pb : NULL,
				base_pb ? base_pb : pb, &plan, err);
	if (r < 0)
		goto out;
	if (!(plan_s = json_dumps(plan, JSON_COMPACT))) {
		r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
		goto out;
	}
	n.checks_json = plan_s;
	r = util_random_bytes(rnd, sizeof(rnd));
	if (r < 0) {
		r = ctl_error_set(err, r, CTL_ERR_INTERNAL, NULL, "cannot make an id");
		goto out;
	}
	util_hex(rnd, sizeof(rnd), hex);
	snprintf(id, sizeof(id), "rv-%s", hex);
	n.id = id;
	n.cluster = rq->cluster;
	n.baseline_id = rq->baseline;
	n.actor = rq->actor ? rq->actor : "admin";
	n.apply = rq->apply;
	n.tolerance_bw_pct = rq->tolerance_bw_pct;
	n.tolerance_lat_pct = rq->tolerance_lat_pct;
	/* A playbook given is kept as its exact text (NUL-free: playbook_parse refused NULs). */
	if (rq->playbook_text) {
		char *text = strndup(rq->playbook_text, rq->playbook_len);

		if (!text) {
			r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
			goto out;
		}
		n.playbook = text;
	}
	r = store_revalidation_create(st, &n, util_now_unix_ms());
	free((char *)n.playbook);
	if (r == -RY_E_NOT_FOUND)
		r = ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "cluster", "unknown cluster %s",
				  rq->cluster);
	else if (r < 0)
		r = ctl_error_store(err, r, "storing the revalidation");
	if (r >= 0)
		r = ctl_revalidate_get(st, id, ret, err);
out:
	playbook_free(pb);
	playbook_free(base_pb);
	json_decref(report);
	json_decref(plan);
	free(plan_s);
	free(base_text);
	return r;
}

int ctl_revalidate_cancel(struct store *st, const char *id, const char *actor,
			  struct ctl_error *err)
{
	int r = store_revalidation_request_cancel(st, id, actor, util_now_unix_ms());

	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "id", "no revalidation %s", id);
	if (r < 0)
		return ctl_error_store(err, r, "requesting the cancel");
	if (r == 0)
		ctl_error_set(err, 0, CTL_ERR_CONFLICT, "id", "revalidation %s has ended", id);
	return r;
}
