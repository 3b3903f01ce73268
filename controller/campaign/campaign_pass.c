/* The campaign pass of a serving controller: each running campaign's current round is turned
 * into benchmark runs (the bench pass drives them), their results into summaries; a round that
 * is complete moves the cursor; after a test's rounds its suspects get retest rounds; after the
 * last test the verdict is stored. Everything it knows is in the database, so a restarted
 * controller resumes at the first unfinished round, and a row holds its run's id from the
 * moment the run exists: nothing runs twice, nothing is lost. */
#include "controller/bench/bench.h"
#include "controller/campaign/campaign_int.h"
#include "controller/campaign/coll.h"
#include "controller/campaign/evidence.h"
#include "controller/engine/engine.h"
#include "controller/rollout/deploy.h"
#include "controller/events.h"
#include "controller/session.h"
#include "controller/state.h"
#include "controller/service.h"
#include "controller/signoff/signoff.h"
#include "controller/store/store.h"
#include "controller/store/store_bench.h"
#include "controller/store/store_campaign.h"
#include "controller/store/store_deploy.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Cursor moves one pass may make for a campaign (rounds that complete at once: every slot
 * missing, or everything already stored before a restart). */
#define PASS_STEPS_MAX 64

/* A running campaign as the pass keeps it between ticks: loaded once, and the rounds of the test
 * at the cursor regenerated once. */
struct entry {
	char id[64];
	struct cp_campaign c;
	struct cp_rounds r;
	long rounds_test; /* test whose rounds r holds; -1: none */
	uint64_t gen;
};

struct ctl_campaigns {
	struct ctl_server *srv;
	struct entry *v;
	size_t n;
	uint64_t gen;
};

static void entry_done(struct entry *e)
{
	cp_rounds_done(&e->r);
	cp_done(&e->c);
}

static struct store *store_of(struct ctl_campaigns *cs)
{
	return ctl_server_state(cs->srv)->store;
}

/* The campaign ends now (state, verdict and error may be NULL). */
static void finish(struct ctl_campaigns *cs, const char *id, const char *cluster, const char *state,
		   json_t *verdict, const char *error)
{
	char *text = verdict ? json_dumps(verdict, JSON_COMPACT) : NULL;
	int r = store_campaign_finish(store_of(cs), id, state, text, error, util_now_unix_ms());

	if (r == 1) {
		log_info("campaign %s: %s%s%s", id, state, error ? ": " : "", error ? error : "");
		ctl_events_emit(ctl_server_events(cs->srv), "campaign.state", cluster,
				json_pack("{s:s, s:s, s:s?, s:s?}", "id", id, "state", state,
					  "result",
					  json_string_value(json_object_get(verdict, "result")),
					  "error", error));
	} else if (r < 0)
		log_error("campaign %s: storing its end failed: %s", id, ry_strerror(r));
	free(text);
}

/* The campaign's cursor moved (a round ended). */
static void progress_event(struct ctl_campaigns *cs, const struct store_campaign *m)
{
	ctl_events_emit(ctl_server_events(cs->srv), "campaign.progress", m->cluster,
			json_pack("{s:s, s:i, s:i}", "id", m->id, "test_index", m->test_idx,
				  "round", m->round));
}

/* A campaign that asked for it (options.signoff) is signed off as it ends. */
static void sign_off(struct ctl_campaigns *cs, const struct store_campaign *m)
{
	json_t *options = json_loads(m->options_json, 0, NULL), *so = NULL;
	struct ctl_error err;

	ctl_error_init(&err);
	if (json_is_true(json_object_get(options, "signoff"))) {
		if (ctl_signoff_create(ctl_server_state(cs->srv), m->id, m->actor, &so, &err) < 0)
			log_error("campaign %s: no sign-off: %s", m->id, err.message);
		else {
			log_info("campaign %s: signed off as %s (%s)", m->id,
				 json_string_value(json_object_get(so, "id")),
				 json_string_value(json_object_get(so, "verdict")));
			ctl_events_emit(ctl_server_events(cs->srv), "signoff.created", m->cluster,
					json_pack("{s:O, s:s, s:O}", "id",
						  json_object_get(so, "id"), "campaign", m->id,
						  "verdict", json_object_get(so, "verdict")));
		}
	}
	json_decref(so);
	json_decref(options);
	ctl_error_done(&err);
}

/* Deployments scanned for the configuration a campaign certifies (newest first). */
#define CP_DEPLOYMENTS_SCANNED 1000

/* Per node of the campaign, why its configuration fails what the validation requires
 * (spec.requires; docs/campaigns.md, "Verdict", 0): the last deployment (not a check) of each
 * required playbook that reached the node must have succeeded on it, and at least one must have
 * reached it. *ret: {node id: ["configuration: ..."]}. */
static int config_gate(struct store *st, const struct store_campaign *m, const struct entry *e,
		       json_t **ret)
{
	const json_t *req = json_object_get(e->c.spec, "requires"), *x;
	struct store_deployment **v = NULL;
	size_t n = 0, i;
	json_t *out = json_object(), *any = json_object(), *seen = NULL;
	char names[256] = "";
	size_t len = 0;
	int r = 0;

	if (!out || !any) {
		r = -ENOMEM;
		goto done;
	}
	if (json_array_size(req) == 0)
		goto done;
	r = store_deployments_list(st, false, CP_DEPLOYMENTS_SCANNED, &v, &n);
	json_array_foreach(req, i, x)
	{
		const char *name = json_string_value(x);

		if (len < sizeof(names) - 64)
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s",
						len ? ", " : "", name);
		json_decref(seen);
		seen = json_object();
		for (size_t k = 0; r >= 0 && seen && k < n; k++) {
			const struct store_deployment *d = v[k];
			struct store_deploy_node *dn = NULL;
			size_t nn = 0;

			if (strcmp(d->cluster, m->cluster) != 0 || d->check_mode ||
			    strcmp(d->playbook_name, name) != 0)
				continue;
			json_t *failed = NULL;

			r = store_deploy_nodes(st, d->id, &dn, &nn);
			for (size_t j = 0; r >= 0 && j < nn; j++) {
				const struct store_deploy_node *w = &dn[j];
				const json_t *fs;
				char *line = NULL;
				json_t *arr;

				if (cp_node_index(&e->c, w->node_id) < 0 ||
				    json_object_get(seen, w->node_id))
					continue;
				json_object_set_new(seen, w->node_id, json_true());
				json_object_set_new(any, w->node_id, json_true());
				if (strcmp(w->state, "succeeded") == 0)
					continue;
				/* Which step, in words: the step results say it better than the
				 * node's one-line summary ("stopped at a failed step"). */
				if (!failed &&
				    (r = ctl_deploy_failed_steps(st, d->id, &failed)) < 0)
					break;
				fs = json_object_get(failed, w->node_id);
				if (fs &&
				    asprintf(&line,
					     "configuration: %s %s (deployment %s) failed on this "
					     "node at step %lld (%s): %s",
					     name, d->playbook_version, d->id,
					     (long long)json_integer_value(
						     json_object_get(fs, "index")) +
						     1,
					     json_string_value(json_object_get(fs, "name")),
					     json_string_value(json_object_get(fs, "message"))) < 0)
					continue;
				if (!fs && asprintf(&line,
						    "configuration: %s %s (deployment %s) did not "
						    "succeed on this node: %s%s%s",
						    name, d->playbook_version, d->id, w->state,
						    w->message ? ": " : "",
						    w->message ? w->message : "") < 0)
					continue;
				arr = json_object_get(out, w->node_id);
				if (!arr) {
					arr = json_array();
					json_object_set_new(out, w->node_id, arr);
				}
				json_array_append_new(arr, json_string(line));
				free(line);
			}
			store_deploy_nodes_free(dn, nn);
			json_decref(failed);
		}
	}
	for (i = 0; r >= 0 && i < e->c.n; i++) {
		char *line = NULL;

		if (json_object_get(any, e->c.v[i].id))
			continue;
		if (asprintf(&line,
			     "configuration: never configured by the playbooks this validation "
			     "certifies (%s)",
			     names) > 0)
			json_object_set_new(out, e->c.v[i].id, json_pack("[s]", line));
		free(line);
	}
done:
	store_deployments_free(v, n);
	json_decref(seen);
	json_decref(any);
	if (r < 0) {
		json_decref(out);
		return r;
	}
	*ret = out;
	return 0;
}

/* The verdict over every row, with the nodes left out; then the end. */
static void conclude(struct ctl_campaigns *cs, struct entry *e, const struct store_campaign *m,
		     bool cancelled)
{
	struct store_campaign_row *rows = NULL;
	json_t *verdict = NULL, *left = json_loads(m->left_out_json, 0, NULL), *l, *config = NULL;
	size_t n = 0, i;
	int r = store_campaign_rows(store_of(cs), m->id, -1, -1, &rows, &n);

	if (r >= 0)
		r = config_gate(store_of(cs), m, e, &config);
	if (r >= 0)
		r = cp_verdict(&e->c, rows, n, cancelled, config, &verdict);
	json_decref(config);
	store_campaign_rows_free(rows, n);
	if (ctl_store_transient(r)) {
		json_decref(left);
		return; /* next pass */
	}
	if (r < 0) {
		char why[128];

		snprintf(why, sizeof(why), "the verdict could not be computed: %s", ry_strerror(r));
		finish(cs, m->id, m->cluster, "error", NULL, why);
		json_decref(left);
		return;
	}
	json_object_set(verdict, "left_out", json_is_array(left) ? left : json_array());
	json_array_foreach(left, i, l)
	{
		char *line = NULL;

		if (asprintf(&line, "left out: %s (%s)",
			     json_string_value(json_object_get(l, "hostname")),
			     json_string_value(json_object_get(l, "reason"))) > 0)
			json_array_append_new(json_object_get(verdict, "findings"),
					      json_string(line));
		free(line);
	}
	finish(cs, m->id, m->cluster,
	       cancelled ? "cancelled"
	       : strcmp(json_string_value(json_object_get(verdict, "result")), "pass") == 0
		       ? "passed"
		       : "failed",
	       verdict, cancelled ? "cancelled by operator" : NULL);
	if (!cancelled)
		sign_off(cs, m);
	json_decref(verdict);
	json_decref(left);
}

/* ---- one round ----------------------------------------------------------------------------- */

/* Move a row (store_campaign_row_update); a failure is logged and retried on the next pass,
 * which finds the row as it was. */
static void row_set(struct store *st, const char *id, const struct store_campaign_row *w,
		    const char *state, const char *summary, const char *error, bool live)
{
	int r = store_campaign_row_update(st, id, w->test_idx, w->round, w->slot, state, summary,
					  error, live, util_now_unix_ms());

	if (r < 0)
		log_warn("campaign %s: storing slot %d of round %d failed: %s (next pass)", id,
			 w->slot, w->round + 1, ry_strerror(r));
}

/* The slot a row stands for. */
static int slot_of_row(const struct entry *e, const struct store_campaign_row *w,
		       struct cp_slot *ret)
{
	long a = cp_node_index(&e->c, w->node_a), b = cp_node_index(&e->c, w->node_b);
	enum vd_phase ph;

	if (a < 0 || b < 0 || vd_phase_parse(w->phase, &ph) < 0)
		return -RY_E_INVALID;
	*ret = (struct cp_slot){
		(uint32_t)a, (uint32_t)b,
		w->rail,     0,
		(uint8_t)ph, strcmp(w->role, "congestor") == 0 ? CP_CONGESTOR : CP_MEASURE};
	return 0;
}

/* The rows of round k of test t as scheduled: from the regenerated rounds, or (beyond the
 * test's own rounds) from its retest plan in progress. */
static int round_rows(struct entry *e, const json_t *progress, size_t t, size_t k,
		      struct store_campaign_row **ret, size_t *ret_n)
{
	const json_t *pe = json_array_get(json_object_get(progress, "tests"), t);
	size_t base = (size_t)json_integer_value(json_object_get(pe, "rounds")), n = 0;
	struct cp_slot *slots = NULL;
	struct store_campaign_row *rows;
	char why[256];

	if (k < base) {
		if (e->rounds_test != (long)t) {
			cp_rounds_done(&e->r);
			e->rounds_test = -1;
			if (cp_test_rounds(&e->c, t, &e->r, why, sizeof(why)) < 0 ||
			    e->r.nrounds != base)
				return -RY_E_INVALID;
			e->rounds_test = (long)t;
		}
		slots = e->r.slots + e->r.start[k];
		n = e->r.start[k + 1] - e->r.start[k];
	}
	rows = calloc(n ? n : 64, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	if (k >= base) {
		const json_t *round = json_array_get(json_object_get(pe, "retest"), k - base), *s;
		size_t i;

		json_array_foreach(round, i, s)
		{
			json_int_t a = json_integer_value(json_object_get(s, "a"));
			json_int_t b = json_integer_value(json_object_get(s, "b"));
			json_int_t rail = json_integer_value(json_object_get(s, "rail"));
			struct store_campaign_row *x;

			if (a < 0 || b < 0 || (size_t)a >= e->c.n || (size_t)b >= e->c.n ||
			    rail < -1 || rail >= SCHED_RAILS_MAX || i >= 64) {
				free(rows);
				return -RY_E_INVALID;
			}
			x = &rows[n++];
			x->node_a = (char *)e->c.v[a].id;
			x->node_b = (char *)e->c.v[b].id;
			x->rail = (int)rail;
			x->phase = (char *)"retest";
			x->role = (char *)"measure";
			x->state = (char *)"pending";
			x->slot = (int)i;
		}
		*ret = rows;
		*ret_n = n;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		const struct cp_slot *s = &slots[i];
		struct store_campaign_row *x = &rows[i];

		x->slot = (int)i;
		x->node_a = (char *)e->c.v[s->a].id;
		x->node_b = (char *)e->c.v[s->b].id;
		x->rail = s->rail;
		x->phase = (char *)vd_phase_name((enum vd_phase)s->phase);
		x->role = (char *)(s->role == CP_CONGESTOR ? "congestor" : "measure");
		x->state = (char *)(s->missing ? "missing" : "pending");
		if (s->missing) {
			const struct cp_node *o = &e->c.v[(s->missing & 1) ? s->a : s->b];

			x->error = NULL;
			if (asprintf(&x->error, "rail %d missing on %s (no active port)",
				     (int)s->rail, o->hostname) < 0)
				x->error = NULL;
		}
	}
	*ret = rows;
	*ret_n = n;
	return 0;
}

static void round_rows_free(struct store_campaign_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(rows[i].error);
	free(rows);
}

/* Start a pending row: both ends connected, then its benchmark run stored with it. */
static void start_row(struct ctl_campaigns *cs, struct entry *e, const struct store_campaign *m,
		      const struct store_campaign_row *w)
{
	struct store *st = store_of(cs);
	struct cp_slot s;
	const char *kind;
	json_t *params = NULL;
	char *params_s = NULL, id[16], hex[9], slot_why[256] = "";
	unsigned char rnd[4];
	int64_t deadline, now = util_now_unix_ms();
	struct store_bench_new b;
	bool coll;
	int r;

	if (slot_of_row(e, w, &s) < 0) {
		row_set(st, m->id, w, "failed", NULL, "the row names an unknown node", false);
		return;
	}
	coll = cp_test(&e->c, (size_t)w->test_idx) &&
	       json_string_value(json_object_get(cp_test(&e->c, (size_t)w->test_idx), "kind")) &&
	       strcmp(json_string_value(
			      json_object_get(cp_test(&e->c, (size_t)w->test_idx), "kind")),
		      "collective") == 0;
	/* Both ends of a pair; every node of a collective's job. */
	for (size_t end = 0; end < (coll ? e->c.n : 2); end++) {
		const struct cp_node *nd = coll ? &e->c.v[end] : &e->c.v[end ? s.b : s.a];
		int64_t gone = ctl_node_offline_ms(cs->srv, nd->id, now);
		char why[320];

		if (gone == 0 ||
		    (coll && s.phase == VD_RETEST && end == cp_coll_launcher(&e->c, 0)))
			continue; /* a collective's retest runs without the first launcher */
		if (gone <= CP_OFFLINE_GRACE_MS)
			return; /* it may be reconnecting: next pass */
		snprintf(why, sizeof(why), "offline: %s is not connected", nd->hostname);
		log_warn("campaign %s: %s", m->id, why);
		row_set(st, m->id, w, "failed", NULL, why, false);
		return;
	}
	r = cp_slot_bench(&e->c, (size_t)w->test_idx, &s, &kind, &params, &deadline, slot_why,
			  sizeof(slot_why));
	if (r == -RY_E_NOT_FOUND) {
		/* The slot cannot run as the test asks (no GPU for the rail): a finding. */
		log_warn("campaign %s: %s", m->id, slot_why);
		row_set(st, m->id, w, "failed", NULL, slot_why, false);
		goto out;
	}
	if (r >= 0 && coll) /* the job's one-time token (docs/campaigns.md, "Collectives") */
		r = ctl_bench_add_job_token(params);
	params_s = r >= 0 ? json_dumps(params, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if (params_s)
		r = util_random_bytes(rnd, sizeof(rnd));
	if (!params_s || r < 0) {
		log_error("campaign %s: cannot order a run: %s", m->id, ry_strerror(r));
		goto out;
	}
	util_hex(rnd, sizeof(rnd), hex);
	snprintf(id, sizeof(id), "b-%s", hex);
	b = (struct store_bench_new){id,       kind, e->c.transport, w->node_a, w->node_b,
				     params_s, NULL, deadline,	     NULL};
	r = store_campaign_row_start(st, m->id, w->test_idx, w->round, w->slot, &b, now);
	if (r == 1) {
		ctl_engine_kick(ctl_server_engine(cs->srv));
	} else if (ctl_store_transient(r)) {
		log_warn("campaign %s: storing a run failed: %s (next pass)", m->id,
			 ry_strerror(r));
	} else if (r < 0) {
		char why[128];

		snprintf(why, sizeof(why), "its benchmark run could not be stored: %s",
			 ry_strerror(r));
		row_set(st, m->id, w, "failed", NULL, why, false);
	}
out:
	json_decref(params);
	free(params_s);
}

/* A measured run's reports checked as evidence (evidence.h): NULL when plausible, else the
 * row's invalid summary {"invalid": {side, node, reason}} with *why its error text. */
static json_t *invalid_of(const struct entry *e, const struct store_campaign_row *w,
			  const struct store_bench_run *b, char *why, size_t len)
{
	long a = cp_node_index(&e->c, w->node_a), bi = cp_node_index(&e->c, w->node_b);
	json_t *params = json_loads(b->params_json ? b->params_json : "{}", 0, NULL);
	json_t *client = b->result_json ? json_loads(b->result_json, 0, NULL) : NULL;
	json_t *server = b->server_result_json ? json_loads(b->server_result_json, 0, NULL) : NULL;
	json_t *out = NULL;
	enum cp_blame blame = CP_BLAME_CLIENT;
	char reason[256];
	int r;

	if (a < 0 || bi < 0)
		goto done;
	if (strcmp(b->kind, "collective") == 0) {
		/* One report, the launcher's: a finding is about it. */
		r = cp_coll_evidence(client, params, e->c.nodes, reason, sizeof(reason));
		if (r == 1) {
			snprintf(why, len, "invalid result from %s (the job's launcher): %s",
				 e->c.v[a].hostname, reason);
			out = json_pack("{s:{s:s, s:s, s:s}}", "invalid", "side", "a", "node",
					e->c.v[a].id, "reason", reason);
		}
		goto done;
	}
	r = cp_evidence_check(
		&(struct cp_evidence){.kind = b->kind,
				      .transport = b->transport,
				      .params = params,
				      .client = client,
				      .server = strcmp(b->kind, "gpu") == 0 ? NULL : server,
				      .a = e->c.v[a].facts,
				      .b = e->c.v[bi].facts,
				      .rail = w->rail},
		&blame, reason, sizeof(reason));
	if (r == 1) {
		const struct cp_node *na = &e->c.v[a], *nb = &e->c.v[bi];

		if (blame == CP_BLAME_BOTH)
			snprintf(why, len, "invalid result: %s and %s: %s", na->hostname,
				 nb->hostname, reason);
		else
			snprintf(why, len, "invalid result from %s (%s side): %s",
				 (blame == CP_BLAME_CLIENT ? na : nb)->hostname,
				 blame == CP_BLAME_CLIENT ? "client" : "server", reason);
		out = json_pack("{s:{s:s, s:s, s:s}}", "invalid", "side",
				blame == CP_BLAME_BOTH	   ? "both"
				: blame == CP_BLAME_CLIENT ? "a"
							   : "b",
				"node", (blame == CP_BLAME_SERVER ? nb : na)->id, "reason", reason);
	}
done:
	json_decref(params);
	json_decref(client);
	json_decref(server);
	return out;
}

/* A running row: its run ended (summary or error), or a congestor is confirmed running. */
static void follow_row(struct ctl_campaigns *cs, const struct entry *e,
		       const struct store_campaign *m, const struct store_campaign_row *w,
		       bool stop_congestor)
{
	struct store *st = store_of(cs);
	struct store_bench_run *b = NULL;
	bool congestor = strcmp(w->role, "congestor") == 0;
	int64_t now = util_now_unix_ms();
	json_t *sum = NULL;
	char *text = NULL;
	int r = w->bench_id ? store_bench_get(st, w->bench_id, &b) : -RY_E_NOT_FOUND;

	if (r == -RY_E_NOT_FOUND) {
		row_set(st, m->id, w, "failed", NULL, "its benchmark run vanished", false);
		return;
	}
	if (r < 0)
		return;
	if (strcmp(b->state, "succeeded") == 0 ||
	    (congestor && stop_congestor && store_bench_state_final(b->state))) {
		/* A congestor stopped by us is done: its run ends cancelled, with nothing to
		 * measure (the victims measured); one that ended by itself keeps its figures. A
		 * measured run counts only when its reports are plausible. */
		char why[512];

		sum = congestor ? NULL : invalid_of(e, w, b, why, sizeof(why));
		if (sum) {
			text = json_dumps(sum, JSON_COMPACT);
			log_warn("campaign %s: slot %d of round %d: %s", m->id, w->slot,
				 w->round + 1, why);
			row_set(st, m->id, w, "invalid", text, why, false);
		} else {
			sum = cp_summary(b);
			text = sum ? json_dumps(sum, JSON_COMPACT) : NULL;
			row_set(st, m->id, w, "done", text, NULL, false);
		}
	} else if (store_bench_state_final(b->state)) {
		row_set(st, m->id, w, "failed", NULL, b->error ? b->error : b->state, false);
	} else if (congestor && stop_congestor) {
		if (store_bench_request_cancel(st, b->id, NULL, now) == 1)
			ctl_engine_kick(ctl_server_engine(cs->srv));
	} else if (congestor && !w->live_at_ms && strcmp(b->state, "client_sent") == 0) {
		row_set(st, m->id, w, "running", NULL, NULL, true);
	}
	json_decref(sum);
	free(text);
	store_bench_run_free(b);
}

/* Drive round k of test t: 1 when every row of it is final, 0 while it runs, <0 on error. */
static int drive_round(struct ctl_campaigns *cs, struct entry *e, const struct store_campaign *m,
		       const json_t *progress, size_t t, size_t k)
{
	struct store *st = store_of(cs);
	struct store_campaign_row *rows = NULL;
	size_t n = 0, nfinal = 0;
	bool congested = false, congestors_live = true, measures_final = true;
	int64_t ready_at = 0, now = util_now_unix_ms();
	int r = store_campaign_rows(st, m->id, (int)t, (int)k, &rows, &n);

	if (r < 0)
		return r;
	if (n == 0) {
		struct store_campaign_row *plan = NULL;
		size_t np = 0;

		r = round_rows(e, progress, t, k, &plan, &np);
		if (r < 0)
			return r;
		r = store_campaign_round_insert(st, m->id, (int)t, (int)k, plan, np, now);
		round_rows_free(plan, np);
		if (r < 0)
			return r;
		if (np == 0)
			return 1;
		log_info("campaign %s: test %s round %zu: %zu slot(s)", m->id,
			 json_string_value(json_object_get(cp_test(&e->c, t), "name")), k + 1, np);
		r = store_campaign_rows(st, m->id, (int)t, (int)k, &rows, &n);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < n; i++) {
		const struct store_campaign_row *w = &rows[i];
		bool final = store_campaign_row_final(w->state);

		if (strcmp(w->role, "congestor") == 0) {
			congested = true;
			if (!final && !w->live_at_ms)
				congestors_live = false;
			if (w->live_at_ms + CP_CONGESTOR_WARMUP_MS > ready_at)
				ready_at = w->live_at_ms + CP_CONGESTOR_WARMUP_MS;
		} else if (!final) {
			measures_final = false;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const struct store_campaign_row *w = &rows[i];
		bool congestor = strcmp(w->role, "congestor") == 0;

		if (store_campaign_row_final(w->state)) {
			nfinal++;
			continue;
		}
		if (strcmp(w->state, "pending") == 0) {
			/* Victims of a congested round wait for every congestor to run. */
			if (!congestor && congested && (!congestors_live || now < ready_at))
				continue;
			if (congestor && measures_final)
				row_set(st, m->id, w, "cancelled", NULL,
					"not started: the victims were done", false);
			else
				start_row(cs, e, m, w);
		} else {
			follow_row(cs, e, m, w, congestor && measures_final);
		}
	}
	store_campaign_rows_free(rows, n);
	return nfinal == n ? 1 : 0;
}

/* ---- a campaign ---------------------------------------------------------------------------- */

/* Stop everything and conclude as cancelled. */
static void cancel(struct ctl_campaigns *cs, struct entry *e, const struct store_campaign *m)
{
	struct store *st = store_of(cs);
	struct store_campaign_row *rows = NULL;
	size_t n = 0;
	int64_t now = util_now_unix_ms();

	if (store_campaign_rows(st, m->id, m->test_idx, m->round, &rows, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct store_campaign_row *w = &rows[i];

		if (store_campaign_row_final(w->state))
			continue;
		if (w->bench_id && store_bench_request_cancel(st, w->bench_id, NULL, now) == 1)
			ctl_engine_kick(ctl_server_engine(cs->srv));
		row_set(st, m->id, w, "cancelled", NULL, "campaign cancelled", false);
	}
	store_campaign_rows_free(rows, n);
	conclude(cs, e, m, true);
}

static void drive(struct ctl_campaigns *cs, struct entry *e, struct store_campaign *m)
{
	struct store *st = store_of(cs);

	if (m->cancel_requested_ms) {
		cancel(cs, e, m);
		return;
	}
	for (int step = 0; step < PASS_STEPS_MAX; step++) {
		size_t t = (size_t)m->test_idx, k = (size_t)m->round, total;
		json_t *progress;
		bool known;
		int r;

		if (t >= cp_ntests(&e->c)) {
			conclude(cs, e, m, false);
			return;
		}
		progress = json_loads(m->progress_json, 0, NULL);
		total = cp_progress_rounds(progress, t, &known);
		if (k < total) {
			r = drive_round(cs, e, m, progress, t, k);
			json_decref(progress);
			/* A full disk or a lock for a moment is no reason to end it. */
			if (r < 0 && !ctl_store_transient(r)) {
				char why[128];

				snprintf(why, sizeof(why), "round %zu of test %zu: %s", k + 1,
					 t + 1, ry_strerror(r));
				finish(cs, m->id, m->cluster, "error", NULL, why);
			}
			if (r != 1)
				return;
			if (store_campaign_advance(st, m->id, (int)t, (int)k + 1, NULL,
						   util_now_unix_ms()) != 1)
				return;
			m->round++;
			progress_event(cs, m);
		} else if (!known) {
			struct store_campaign_row *rows = NULL;
			size_t n = 0;
			json_t *retest = NULL;
			char *text = NULL;
			size_t n_retest = 0;

			r = store_campaign_rows(st, m->id, (int)t, -1, &rows, &n);
			if (r >= 0)
				r = cp_retests(&e->c, t, rows, n, &retest);
			store_campaign_rows_free(rows, n);
			if (r >= 0) {
				/* Counted now: progress owns retest from here, and is freed below.
				 */
				n_retest = json_array_size(retest);
				json_object_set_new(
					json_array_get(json_object_get(progress, "tests"), t),
					"retest", retest);
				text = json_dumps(progress, JSON_COMPACT);
			}
			json_decref(progress);
			if (!text || store_campaign_advance(st, m->id, (int)t, (int)k, text,
							    util_now_unix_ms()) != 1) {
				free(text);
				return;
			}
			if (n_retest)
				log_info("campaign %s: test %zu: %zu retest round(s) for suspects",
					 m->id, t + 1, n_retest);
			free(m->progress_json);
			m->progress_json = text;
		} else {
			json_decref(progress);
			if (store_campaign_advance(st, m->id, (int)t + 1, 0, NULL,
						   util_now_unix_ms()) != 1)
				return;
			m->test_idx++;
			m->round = 0;
			/* Past the last test there is no progress to tell: campaign.state follows.
			 */
			if ((size_t)m->test_idx < cp_ntests(&e->c))
				progress_event(cs, m);
		}
	}
}

static struct entry *entry_for(struct ctl_campaigns *cs, const struct store_campaign *m)
{
	struct entry *v;

	for (size_t i = 0; i < cs->n; i++)
		if (strcmp(cs->v[i].id, m->id) == 0)
			return &cs->v[i];
	v = realloc(cs->v, (cs->n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	cs->v = v;
	v = &cs->v[cs->n];
	memset(v, 0, sizeof(*v));
	v->rounds_test = -1;
	snprintf(v->id, sizeof(v->id), "%s", m->id);
	if (cp_load(m->spec_json, m->nodes_json, m->seed, &v->c) < 0) {
		finish(cs, m->id, m->cluster, "error", NULL,
		       "its stored spec or nodes do not load");
		return NULL;
	}
	cs->n++;
	return v;
}

static void pass(void *ud)
{
	struct ctl_campaigns *cs = ud;
	struct store_campaign **v = NULL;
	size_t n = 0, keep = 0;

	if (store_campaigns_list(store_of(cs), true, 0, &v, &n) < 0)
		return;
	cs->gen++;
	for (size_t i = 0; i < n; i++) {
		struct entry *e = entry_for(cs, v[i]);

		if (!e)
			continue;
		e->gen = cs->gen;
		drive(cs, e, v[i]);
	}
	store_campaigns_free(v, n);
	/* Forget campaigns that are no longer running. */
	for (size_t i = 0; i < cs->n; i++) {
		if (cs->v[i].gen == cs->gen)
			cs->v[keep++] = cs->v[i];
		else
			entry_done(&cs->v[i]);
	}
	cs->n = keep;
}

static const struct ctl_pass campaign_pass = {
	.name = "campaign",
	.run = pass,
};

int ctl_campaigns_new(struct ctl_server *srv, struct ctl_campaigns **ret)
{
	struct ctl_campaigns *cs = calloc(1, sizeof(*cs));

	if (!cs)
		return -ENOMEM;
	cs->srv = srv;
	*ret = cs;
	return 0;
}

int ctl_campaigns_register(struct ctl_campaigns *cs, struct ctl_engine *e)
{
	return ctl_engine_add_pass(e, &campaign_pass, cs);
}

void ctl_campaigns_free(struct ctl_campaigns *cs)
{
	if (!cs)
		return;
	for (size_t i = 0; i < cs->n; i++)
		entry_done(&cs->v[i]);
	free(cs->v);
	free(cs);
}
