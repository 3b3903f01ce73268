/* Revalidation's engine pass: runs each stored revalidation through a deployment (its
 * checks, in check mode or applied), a campaign and its sign-off. Each step is one stored
 * transition, so a controller restarted mid-way carries on where it was. It sees the server
 * through the engine and the session interface only. */
#include "controller/signoff/revalidate.h"
#include "controller/signoff/revalidate_int.h"
#include "controller/store/store.h"
#include "controller/store/store_campaign.h"
#include "controller/store/store_deploy.h"
#include "controller/store/store_playbook.h"
#include "controller/store/store_revalidate.h"
#include "controller/store/store_signoff.h"

#include "common/log/log.h"
#include "common/playbook/playbook.h"
#include "common/util/error.h"
#include "common/util/util.h"
#include "controller/campaign/campaign.h"
#include "controller/engine/engine.h"
#include "controller/events.h"
#include "controller/rollout/deploy.h"
#include "controller/session.h"
#include "controller/signoff/signoff.h"
#include "controller/state.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSTR(o, k) json_string_value(json_object_get((o), (k)))

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
	r = ctl_revalidate_baseline(st, v->cluster, v->baseline_id, &report, &text, err);
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
	r = ctl_revalidate_baseline(st, v->cluster, v->baseline_id, &report, &text, &err);
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
