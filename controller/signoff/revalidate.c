/* Revalidation: the service (validate, store, read back, cancel) and the engine pass that runs
 * each one through a deployment, a campaign and its sign-off. Each step of the pass is one
 * stored transition, so a controller restarted mid-way carries on where it was. */
#include "controller/signoff/revalidate.h"

#include "common/log/log.h"
#include "common/playbook/playbook.h"
#include "common/util/error.h"
#include "common/util/util.h"
#include "controller/campaign/campaign.h"
#include "controller/engine/engine.h"
#include "controller/events.h"
#include "controller/rollout/deploy.h"
#include "controller/events.h"
#include "controller/session.h"
#include "controller/state.h"
#include "controller/signoff/signoff.h"

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

/* The baseline's signed report and its campaign's playbook text (what the pass reruns). */
static int baseline_of(struct store *st, const char *cluster, const char *baseline,
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
	r = baseline_of(st, rq->cluster, rq->baseline, &report, &base_text, err);
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

/* ---- the engine pass ---------------------------------------------------------------------- */

/* Store a transition and tell the event stream. */
static void move(struct ctl_server *srv, const struct store_revalidation *v,
		 const struct store_revalidation *u)
{
	int r = store_revalidation_update(ctl_server_state(srv)->store, v->id, u,
					  util_now_unix_ms());

	if (r < 0) {
		log_error("revalidation %s: storing %s failed: %s", v->id, u->state,
			  ry_strerror(r));
		return;
	}
	if (r == 0)
		return;
	log_info("revalidation %s: %s%s%s", v->id, u->state, u->reason ? ": " : "",
		 u->reason ? u->reason : "");
	ctl_events_emit(ctl_server_events(srv), "revalidation.state", v->cluster,
			json_pack("{s:s, s:s, s:s?, s:s?, s:s?, s:s?, s:s?}", "id", v->id, "state",
				  u->state, "reason", u->reason, "deployment",
				  u->deployment_id ? u->deployment_id : v->deployment_id,
				  "campaign", u->campaign_id ? u->campaign_id : v->campaign_id,
				  "signoff", u->signoff_id, "verdict", u->verdict));
	ctl_engine_kick(ctl_server_engine(srv));
}

static void fail(struct ctl_server *srv, const struct store_revalidation *v, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail(struct ctl_server *srv, const struct store_revalidation *v, const char *fmt, ...)
{
	struct store_revalidation u = {.state = "failed"};
	char reason[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	u.reason = reason;
	move(srv, v, &u);
}

/* The plan and its progress: the stored checks, or for a revalidation stored before v13 one
 * check of the revalidation's playbook (or the baseline campaign's), with the deployment it has.
 * NULL when out of memory. */
static json_t *plan_of(const struct store_revalidation *v)
{
	json_t *plan = v->checks_json ? json_loads(v->checks_json, 0, NULL) : NULL;

	if (json_is_array(plan))
		return plan;
	json_decref(plan);
	return json_pack("[{s:n, s:s?}]", "playbook", "deployment", v->deployment_id);
}

/* The text of check e: the revalidation's own playbook, else the stored one by its SHA-256,
 * else (before v13) the baseline campaign's. Caller frees; NULL with err set. */
static char *check_text(struct store *st, const struct store_revalidation *v, const json_t *e,
			struct ctl_error *err)
{
	const char *sha = JSTR(json_object_get(e, "playbook"), "sha256");
	json_t *report = NULL;
	char *text = NULL;
	int r;

	if (v->playbook) {
		if (!(text = strdup(v->playbook)))
			ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
		return text;
	}
	if (sha) {
		r = store_playbook_text_by_sha(st, sha, &text);
		if (r < 0)
			ctl_error_set(err, r, CTL_ERR_CONFLICT, NULL,
				      "playbook %s is not stored: %s", sha, ry_strerror(r));
		return r < 0 ? NULL : text;
	}
	r = baseline_of(st, v->cluster, v->baseline_id, &report, &text, err);
	json_decref(report);
	return r < 0 ? NULL : text;
}

/* Start check i of plan: its playbook deployed in check mode (for real with apply); the
 * deployment's id stored in the plan with the move to configuring, one transition. */
static void start_check(struct ctl_server *srv, const struct store_revalidation *v, json_t *plan,
			size_t i)
{
	struct store *st = ctl_server_state(srv)->store;
	const json_t *e = json_array_get(plan, i);
	const json_t *pb = json_object_get(e, "playbook");
	struct ctl_deploy_created made = {0};
	struct ctl_error err;
	char file[300], *plan_s = NULL;
	char *text;
	int r = -ENOMEM;

	ctl_error_init(&err);
	snprintf(file, sizeof(file), "(%s %s)",
		 v->playbook	    ? "the revalidation's playbook"
		 : JSTR(pb, "name") ? JSTR(pb, "name")
				    : "the baseline's playbook",
		 JSTR(pb, "version") ? JSTR(pb, "version") : "");
	text = check_text(st, v, e, &err);
	if (text) {
		struct ctl_deploy_request rq = {.cluster = v->cluster,
						.playbook_text = text,
						.playbook_len = strlen(text),
						.playbook_file = file,
						.canary = -1,
						.pause_ms = -1,
						.check = !v->apply,
						.actor = v->actor};

		r = ctl_deploy_create(st, &rq, &made, &err);
	}
	if (r >= 0) {
		json_object_set_new((json_t *)e, "deployment", json_string(made.id));
		if (!(plan_s = json_dumps(plan, JSON_COMPACT)))
			r = ctl_error_set(&err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	}
	if (r < 0) {
		fail(srv, v, "the configuration check %zu of %zu %s: %s", i + 1,
		     json_array_size(plan), file, err.message);
	} else {
		struct store_revalidation u = {
			.state = "configuring", .deployment_id = made.id, .checks_json = plan_s};

		move(srv, v, &u);
	}
	free(plan_s);
	free(text);
	ctl_deploy_created_done(&made);
	ctl_error_done(&err);
}

/* configuring, every check ended (or none to make): the baseline's campaign again, the checks
 * recorded in its options (and so in its signed report). */
static void start_campaign(struct ctl_server *srv, const struct store_revalidation *v,
			   const json_t *plan)
{
	struct store *st = ctl_server_state(srv)->store;
	struct ctl_error err;
	json_t *report = NULL, *doc = NULL;
	char *text = NULL;
	int r;

	ctl_error_init(&err);
	r = baseline_of(st, v->cluster, v->baseline_id, &report, &text, &err);
	if (r >= 0) {
		const json_t *camp = json_object_get(report, "campaign");
		const json_t *opt = json_object_get(camp, "options");
		struct ctl_campaign_request rq = {
			.cluster = v->cluster,
			.playbook_text = text,
			.playbook_len = strlen(text),
			.playbook_file = "(the baseline's playbook)",
			.tests = JSTR(opt, "tests"),
			.nodes = JSTR(opt, "nodes"),
			.transport = JSTR(opt, "transport"),
			.quick = json_is_true(json_object_get(opt, "quick")),
			.allow_missing = json_is_true(json_object_get(opt, "allow_missing")),
			.seed = json_integer_value(json_object_get(camp, "seed")),
			.actor = v->actor,
			.signoff = true,
			.baseline = v->baseline_id,
			.tolerance_bw_pct = v->tolerance_bw_pct,
			.tolerance_lat_pct = v->tolerance_lat_pct,
			.checks = plan,
		};

		r = ctl_campaign_create(st, &rq, false, &doc, &err);
	}
	if (r < 0) {
		fail(srv, v, "the campaign: %s", err.message);
	} else {
		struct store_revalidation u = {.state = "validating",
					       .campaign_id = (char *)JSTR(doc, "id")};

		move(srv, v, &u);
	}
	json_decref(doc);
	json_decref(report);
	free(text);
	ctl_error_done(&err);
}

/* The next step: the first check not started, else the campaign. */
static void next_step(struct ctl_server *srv, const struct store_revalidation *v)
{
	json_t *plan = plan_of(v), *e;
	size_t i;

	if (!plan) {
		fail(srv, v, "out of memory");
		return;
	}
	json_array_foreach(plan, i, e) if (!JSTR(e, "deployment")) break;
	if (i < json_array_size(plan))
		start_check(srv, v, plan, i);
	else
		start_campaign(srv, v, plan);
	json_decref(plan);
}

static void on_configuring(struct ctl_server *srv, const struct store_revalidation *v)
{
	struct store_deployment *d = NULL;
	int r = store_deployment_get(ctl_server_state(srv)->store, v->deployment_id, &d);

	if (r < 0) {
		if (r == -RY_E_NOT_FOUND)
			fail(srv, v, "deployment %s is gone", v->deployment_id);
		return;
	}
	if (!ctl_deploy_state_final(d->state)) {
		store_deployment_free(d);
		return;
	}
	/* Applying must have worked before measuring; a check reports what differs, and a check
	 * that fails (an assert, a preflight) is a finding of the report, not the end of it. */
	if (v->apply && strcmp(d->state, "succeeded") != 0)
		fail(srv, v, "deployment %s %s%s%s; no campaign run", d->id, d->state,
		     d->reason ? ": " : "", d->reason ? d->reason : "");
	else if (strcmp(d->state, "cancelled") == 0)
		fail(srv, v, "deployment %s was cancelled; no campaign run", d->id);
	else
		next_step(srv, v);
	store_deployment_free(d);
}

static void on_validating(struct ctl_server *srv, const struct store_revalidation *v)
{
	struct store *st = ctl_server_state(srv)->store;
	struct store_campaign *m = NULL;
	struct store_signoff *so = NULL;
	struct ctl_error err;
	json_t *made = NULL;
	int r = store_campaign_get(st, v->campaign_id, &m);

	if (r < 0) {
		if (r == -RY_E_NOT_FOUND)
			fail(srv, v, "campaign %s is gone", v->campaign_id);
		return;
	}
	if (!store_campaign_state_final(m->state))
		goto out;
	if (strcmp(m->state, "passed") != 0 && strcmp(m->state, "failed") != 0) {
		fail(srv, v, "campaign %s %s%s%s; no report", m->id, m->state, m->error ? ": " : "",
		     m->error ? m->error : "");
		goto out;
	}
	/* The campaign pass signs it as it ends; sign it here if that failed. */
	ctl_error_init(&err);
	r = store_signoff_of_campaign(st, m->id, &so);
	if (r == -RY_E_NOT_FOUND &&
	    ctl_signoff_create(ctl_server_state(srv), m->id, v->actor, &made, &err) >= 0)
		r = store_signoff_of_campaign(st, m->id, &so);
	if (r >= 0) {
		struct store_revalidation u = {
			.state = "signed", .signoff_id = so->id, .verdict = so->verdict};

		move(srv, v, &u);
	} else if (err.code) {
		fail(srv, v, "signing campaign %s: %s", m->id, err.message);
	}
	ctl_error_done(&err);
	json_decref(made);
out:
	store_signoff_free(so);
	store_campaign_free(m);
}

/* A cancel stops the part running now; the revalidation ends at once. */
static void on_cancel(struct ctl_server *srv, const struct store_revalidation *v)
{
	struct store_revalidation u = {.state = "cancelled", .reason = "cancelled on request"};
	struct ctl_error err;

	ctl_error_init(&err);
	if (strcmp(v->state, "configuring") == 0 && v->deployment_id &&
	    ctl_deploy_cancel(ctl_server_state(srv)->store, v->deployment_id, v->actor, &err) < 0)
		log_warn("revalidation %s: cancelling %s: %s", v->id, v->deployment_id,
			 err.message);
	if (strcmp(v->state, "validating") == 0 && v->campaign_id &&
	    ctl_campaign_cancel(ctl_server_state(srv)->store, v->campaign_id, NULL, &err) < 0)
		log_warn("revalidation %s: cancelling %s: %s", v->id, v->campaign_id, err.message);
	ctl_error_done(&err);
	move(srv, v, &u);
}

static void pass(void *ud)
{
	struct ctl_server *srv = ud;
	struct store_revalidation **v = NULL;
	size_t n = 0;

	if (store_revalidations_list(ctl_server_state(srv)->store, true, 0, &v, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		if (v[i]->cancel_requested_ms)
			on_cancel(srv, v[i]);
		else if (strcmp(v[i]->state, "pending") == 0)
			next_step(srv, v[i]);
		else if (strcmp(v[i]->state, "configuring") == 0)
			on_configuring(srv, v[i]);
		else if (strcmp(v[i]->state, "validating") == 0)
			on_validating(srv, v[i]);
	}
	store_revalidations_free(v, n);
}

static const struct ctl_pass revalidate_pass = {
	.name = "revalidate",
	.run = pass,
};

int ctl_revalidate_register(struct ctl_server *srv, struct ctl_engine *e)
{
	return ctl_engine_add_pass(e, &revalidate_pass, srv);
}
