/* Maintenance's engine pass: drives each running maintenance's current batch one stored
 * transition at a time (drain, wait for jobs, configure, validate, resume or hold out), so a
 * controller killed anywhere resumes from the database. Each transition stores the nodes' moves
 * and their drain/resume ledger rows in one transaction (store_maint_apply()): a move replayed
 * after a crash finds its node moved already and writes nothing twice. */
#include "controller/maint/maint.h"
#include "controller/maint/maint_wlm.h"

#include "common/log/log.h"
#include "common/playbook/playbook.h"
#include "common/util/error.h"
#include "common/util/util.h"
#include "controller/campaign/campaign.h"
#include "controller/engine/engine.h"
#include "controller/events.h"
#include "controller/rollout/deploy.h"
#include "controller/server.h"
#include "controller/session.h"
#include "controller/signoff/revalidate_int.h"
#include "controller/state.h"
#include "controller/store/store_campaign.h"
#include "controller/store/store_deploy.h"
#include "controller/store/store_maint.h"
#include "controller/store/store_nodes.h"
#include "controller/store/store_signoff.h"
#include "controller/store/store_wlm.h"
#include "controller/wlm/wlm.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSTR(o, k) json_string_value(json_object_get((o), (k)))
/* A Slurm reason is kept whole up to this many bytes (scontrol takes more, sinfo -R shows ~20
 * by default and everything with -o "%E"); ours say what matters first. */
#define REASON_MAX 200

/* One maintenance as the pass reads it each time. */
/* A node of a batch that is offline when its campaign is to be made is waited for this long
 * (from when it was configured, or from the controller's start: agents reconnecting to a
 * restarted controller need their backoff's worth of time), then validated without it. */
#define ONLINE_GRACE_MS (2 * 60 * 1000)

/* The pass's state: the server, and the thread that asks the WLM about jobs. */
struct ctl_maint {
	struct ctl_server *srv;
	struct maint_wlm *wlm;
	int64_t started_ms;
};

struct ctx {
	struct ctl_server *srv;
	struct maint_wlm *mw;
	int64_t started_ms; /* the pass's start */
	struct store *st;
	struct store_maint *m;
	struct store_maint_batch *b; /* all of them */
	size_t nb;
	struct store_maint_node *d; /* all of them */
	size_t nd;
	struct store_maint_batch *cur; /* the current batch */
};

static bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static void reason_fmt(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void reason_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	/* One line: a Slurm reason and an operator's table cell. */
	for (char *p = buf; *p; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
}

/* The finding of a reason "railyard: maintenance ID: FINDING": what the ledger is given (it
 * puts the prefix back, fitted to the WLM's reason length, store_wlm.h). */
static const char *finding(const struct ctx *x, const char *why)
{
	char prefix[128];
	size_t n = (size_t)snprintf(prefix, sizeof(prefix), "railyard: maintenance %s: ", x->m->id);

	return strncmp(why, prefix, n) == 0 ? why + n : why;
}

/* Store st and tell the event stream what moved. */
static int apply(struct ctx *x, struct store_maint_step *st)
{
	struct ctl_events *ev = ctl_server_events(x->srv);
	int r;

	st->id = x->m->id;
	st->cluster = x->m->cluster;
	if (!st->state && st->batch < 0 && st->n_moves == 0)
		return 0; /* nothing to store: no write transaction */
	r = store_maint_apply(x->st, st, util_now_unix_ms());
	if (r < 0) {
		log_error("maintenance %s: storing a transition failed: %s", x->m->id,
			  ry_strerror(r));
		return r;
	}
	if (r == 0)
		return 0;
	for (size_t i = 0; i < st->n_moves; i++) {
		const struct store_maint_move *mv = &st->moves[i];

		if (!mv->moved)
			continue;
		ctl_events_emit(ev, "maintenance.node", x->m->cluster,
				json_pack("{s:s, s:s, s:s, s:s?, s:s?}", "id", x->m->id, "node_id",
					  mv->node_id, "hostname", mv->hostname, "state", mv->to,
					  "reason", mv->reason, "jobs", mv->jobs));
	}
	if (st->state || st->batch_state) {
		if (st->state)
			log_info("maintenance %s: %s%s%s", x->m->id, st->state,
				 st->reason ? ": " : "", st->reason ? st->reason : "");
		ctl_events_emit(ev, "maintenance.state", x->m->cluster,
				json_pack("{s:s, s:s, s:s?, s:i, s:s?, s:s?, s:s?}", "id", x->m->id,
					  "state", st->state ? st->state : x->m->state, "reason",
					  st->reason, "batch", st->batch >= 0 ? st->batch : 0,
					  "batch_state", st->batch_state, "deployment",
					  st->deployment_id, "campaign", st->campaign_id));
	}
	ctl_wlm_kick(ctl_server_wlm(x->srv)); /* the ledger rows just stored */
	ctl_engine_kick(ctl_server_engine(x->srv));
	return 1;
}

/* The nodes of the current batch in state (NULL: any), as moves to `to` (caller frees). */
static struct store_maint_move *moves_of(struct ctx *x, const char *state, const char *to,
					 size_t *ret_n)
{
	struct store_maint_move *mv = calloc(x->nd ? x->nd : 1, sizeof(*mv));
	size_t n = 0;

	for (size_t i = 0; mv && i < x->nd; i++) {
		if (x->d[i].batch != x->cur->batch || (state && !streq(x->d[i].state, state)))
			continue;
		mv[n].node_id = x->d[i].node_id;
		mv[n].hostname = x->d[i].hostname;
		mv[n].from = x->d[i].state;
		mv[n].to = to;
		n++;
	}
	*ret_n = n;
	return mv;
}

/* What x read, updated with the moves just stored. */
static void sync_moves(struct ctx *x, const struct store_maint_move *mv, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; mv[i].moved && j < x->nd; j++)
			if (streq(x->d[j].node_id, mv[i].node_id)) {
				free(x->d[j].state);
				free(x->d[j].reason);
				x->d[j].state = strdup(mv[i].to);
				x->d[j].reason = mv[i].reason ? strdup(mv[i].reason) : NULL;
			}
}

/* The end of the current batch: done (every node resumed) or failed (one held out: the
 * rollout stops, later batches skipped); the maintenance moves on or ends. Its nodes are
 * counted as they will be once st is stored: as read, or as st moves them. held (a node the
 * caller counts beyond them, with first as its reason) is added. */
static void end_batch(struct ctx *x, struct store_maint_step *st, size_t held, const char *first)
{
	static char reason[512];
	bool last = x->cur->batch + 1 >= x->m->n_batches;

	for (size_t i = 0; i < x->nd; i++) {
		const char *state = x->d[i].state, *why = x->d[i].reason;

		if (x->d[i].batch != x->cur->batch)
			continue;
		for (size_t k = 0; k < st->n_moves; k++)
			if (streq(st->moves[k].node_id, x->d[i].node_id)) {
				state = st->moves[k].to;
				why = st->moves[k].reason;
			}
		if (streq(state, "held_out")) {
			held++;
			if (!first)
				first = why;
		}
	}
	st->batch = x->cur->batch;
	st->batch_state = held ? "failed" : "done";
	if (held) {
		reason_fmt(reason, sizeof(reason), "batch %d: %zu node(s) held out (%s)",
			   x->cur->batch, held, first ? first : "?");
		st->state = "failed";
		st->reason = reason;
		st->skip_later = true;
	} else if (last) {
		st->state = "succeeded";
	} else {
		st->current_batch = x->cur->batch + 1;
	}
}

/* waiting: drain the batch's nodes (reason "railyard: maintenance M: batch B"). */
static void start_batch(struct ctx *x)
{
	struct store_maint_step st = {
		.current_batch = -1, .batch = x->cur->batch, .batch_state = "draining"};
	char why[REASON_MAX];
	size_t n;
	struct store_maint_move *mv = moves_of(x, "waiting", "draining", &n);

	if (!mv)
		return;
	reason_fmt(why, sizeof(why), "railyard: maintenance %s: batch %d", x->m->id, x->cur->batch);
	for (size_t i = 0; i < n; i++) {
		mv[i].wlm = STORE_MAINT_WLM_DRAIN;
		mv[i].wlm_reason = finding(x, why);
	}
	if (strcmp(x->m->state, "pending") == 0)
		st.state = "running";
	st.moves = mv;
	st.n_moves = n;
	(void)apply(x, &st);
	free(mv);
}

/* Comma-separated node ids of the current batch's nodes in state. */
static char *ids_in(struct ctx *x, const char *state, size_t *ret_n)
{
	size_t len = 1, n = 0;
	char *s;

	for (size_t i = 0; i < x->nd; i++)
		if (x->d[i].batch == x->cur->batch && streq(x->d[i].state, state))
			len += strlen(x->d[i].node_id) + 1;
	if (!(s = calloc(1, len)))
		return NULL;
	for (size_t i = 0; i < x->nd; i++)
		if (x->d[i].batch == x->cur->batch && streq(x->d[i].state, state)) {
			if (n++)
				strcat(s, ",");
			strcat(s, x->d[i].node_id);
		}
	*ret_n = n;
	return s;
}

/* A new id with prefix ("d-", "c-") into buf (at least 20 bytes): stored with the transition
 * before the object is made, so that a controller stopped in between makes the same one. */
static int new_id(const char *prefix, char *buf, size_t len)
{
	unsigned char rnd[8];
	char hex[17];
	int r = util_random_bytes(rnd, sizeof(rnd));

	if (r < 0)
		return r;
	util_hex(rnd, sizeof(rnd), hex);
	snprintf(buf, len, "%s%s", prefix, hex);
	return 0;
}

/* Every node of the batch in state from held out with why (its finding given to the WLM), and
 * the batch ended: what cannot go on stays drained. */
static void hold_all(struct ctx *x, const char *from, const char *why)
{
	struct store_maint_step st = {.current_batch = -1, .batch = x->cur->batch};
	size_t n = 0;
	struct store_maint_move *mv = moves_of(x, from, "held_out", &n);

	if (!mv)
		return;
	for (size_t i = 0; i < n; i++) {
		mv[i].reason = why;
		mv[i].wlm = STORE_MAINT_WLM_DRAIN;
		mv[i].wlm_reason = finding(x, why);
	}
	st.moves = mv;
	st.n_moves = n;
	end_batch(x, &st, 0, NULL);
	(void)apply(x, &st);
	free(mv);
}

/* Make the batch's deployment (id as stored): the playbook limited to its nodes in
 * configuring, each failing alone. When it cannot be made they are held out. */
static void make_deployment(struct ctx *x, const char *id)
{
	struct ctl_deploy_created made = {0};
	struct ctl_error err;
	size_t n = 0;
	char *limit = ids_in(x, "configuring", &n), file[64], why[REASON_MAX];

	if (!limit)
		return;
	ctl_error_init(&err);
	snprintf(file, sizeof(file), "(maintenance %s)", x->m->id);
	{
		struct ctl_deploy_request rq = {.cluster = x->m->cluster,
						.playbook_text = x->m->playbook,
						.playbook_len = strlen(x->m->playbook),
						.playbook_file = file,
						.max_fail = "100%",
						.canary = 0,
						.pause_ms = 0,
						.nodes = limit,
						.actor = x->m->actor,
						.id = id};

		if (n && ctl_deploy_create(x->st, &rq, &made, &err) >= 0) {
			ctl_engine_kick(ctl_server_engine(x->srv));
			goto out;
		}
	}
	if (streq(err.code, CTL_ERR_UNAVAILABLE))
		goto out; /* the database, for now: the next run makes it */
	reason_fmt(why, sizeof(why), "railyard: maintenance %s: deployment: %s", x->m->id,
		   n ? err.message : "no node to configure");
	hold_all(x, "configuring", why);
out:
	free(limit);
	ctl_deploy_created_done(&made);
	ctl_error_done(&err);
}

/* draining, every node free of jobs: the batch moves to configuring with its deployment's id,
 * then the deployment is made. */
static void start_configure(struct ctx *x)
{
	struct store_maint_step st = {.current_batch = -1, .batch = x->cur->batch};
	size_t nm = 0;
	struct store_maint_move *mv = moves_of(x, "draining", "configuring", &nm);
	char id[24];

	if (!mv)
		return;
	if (nm == 0) {
		end_batch(x, &st, 0, NULL); /* every node held out waiting for its jobs */
		(void)apply(x, &st);
	} else if (new_id("d-", id, sizeof(id)) >= 0) {
		st.batch_state = "configuring";
		st.deployment_id = id;
		st.moves = mv;
		st.n_moves = nm;
		if (apply(x, &st) > 0) {
			sync_moves(x, mv, nm);
			make_deployment(x, id);
		}
	}
	free(mv);
}

/* draining: each node's running jobs; a node whose jobs outlast job_timeout is held out. */
static void on_draining(struct ctx *x)
{
	int64_t now = util_now_unix_ms();
	bool late = x->cur->started_at_ms && now - x->cur->started_at_ms > x->m->job_timeout_ms;
	struct store_maint_step st = {.current_batch = -1, .batch = -1};
	struct store_maint_move *mv = calloc(x->nd ? x->nd : 1, sizeof(*mv));
	char(*ids)[256] = calloc(x->nd ? x->nd : 1, sizeof(*ids));
	char(*why)[REASON_MAX] = calloc(x->nd ? x->nd : 1, sizeof(*why));
	size_t n = 0, busy = 0, nrows = 0;
	struct store_wlm_action *rows = NULL;

	if (!mv || !ids || !why)
		goto out;
	/* How far our drains got: a job may still land on a node whose drain is not carried
	 * out yet, so its jobs count only from then on. */
	if (store_wlm_actions_by_source(x->st, "maintenance", x->m->id, &rows, &nrows) < 0)
		goto out;
	for (size_t i = 0; i < x->nd; i++) {
		struct store_maint_node *d = &x->d[i];
		const struct store_wlm_action *drain = NULL;
		char err[256] = "";
		size_t jobs = 0;
		int r;

		if (d->batch != x->cur->batch ||
		    !(streq(d->state, "draining") || streq(d->state, "waiting_for_jobs")))
			continue;
		for (size_t k = 0; k < nrows; k++) /* oldest first: the last is the newest */
			if (streq(rows[k].hostname, d->hostname) && streq(rows[k].action, "drain"))
				drain = &rows[k];
		if (drain && streq(drain->state, "pending")) {
			busy++; /* not drained yet in the workload manager */
			continue;
		}
		if (drain && !streq(drain->state, "done")) {
			/* Not drained (the WLM refused or could not be reached): jobs may land on
			 * it, so it is not changed. */
			reason_fmt(why[n], sizeof(why[n]),
				   "railyard: maintenance %s: the drain %s: %s", x->m->id,
				   drain->state, drain->result ? drain->result : "no reason given");
			mv[n].node_id = d->node_id;
			mv[n].hostname = d->hostname;
			mv[n].from = d->state;
			mv[n].to = "held_out";
			mv[n].reason = why[n];
			n++;
			continue;
		}
		r = maint_wlm_jobs(x->mw, x->m->cluster, d->hostname,
				   drain && drain->done_at > d->since_ms ? drain->done_at
									 : d->since_ms,
				   ids[n], sizeof(ids[n]), &jobs, err, sizeof(err));
		if (r == -EAGAIN) {
			/* Not answered since it was drained: as it was, for now. */
			busy++;
			continue;
		}
		if (r < 0) {
			/* Not known to be free: waited for as a busy node, the reason kept. */
			log_warn("maintenance %s: %s: cannot ask the workload manager: %s",
				 x->m->id, d->hostname, err);
			snprintf(ids[n], sizeof(ids[n]), "?");
			jobs = 1;
		}
		if (jobs && !late && streq(d->state, "waiting_for_jobs") &&
		    streq(d->jobs, ids[n])) {
			busy++; /* as it was: nothing to store */
			continue;
		}
		if (!jobs && streq(d->state, "draining"))
			continue;
		mv[n].node_id = d->node_id;
		mv[n].hostname = d->hostname;
		mv[n].from = d->state;
		if (jobs && late) {
			reason_fmt(why[n], sizeof(why[n]),
				   "railyard: maintenance %s: job(s) %s still running after %llds",
				   x->m->id, ids[n], (long long)(x->m->job_timeout_ms / 1000));
			mv[n].to = "held_out";
			mv[n].reason = why[n];
			mv[n].wlm = STORE_MAINT_WLM_DRAIN;
			mv[n].wlm_reason = finding(x, why[n]);
		} else if (jobs) {
			mv[n].to = "waiting_for_jobs";
			mv[n].jobs = ids[n];
			busy++;
		} else {
			mv[n].to = "draining";
		}
		n++;
	}
	st.moves = mv;
	st.n_moves = n;
	if (apply(x, &st) < 0 || busy)
		goto out;
	/* Every node free (or held out): read the moves back and configure. */
	sync_moves(x, mv, n);
	start_configure(x);
out:
	store_wlm_actions_free(rows, nrows);
	free(mv);
	free(ids);
	free(why);
}

/* Make the batch's campaign (id as stored) over its nodes in validating and as many nodes
 * validated in earlier batches (at least two: a test over three nodes runs with a batch of
 * one), so that pairs cross the batch boundary; in a revalidating maintenance the baseline's
 * tests, transport and seed, compared with it (as revalidate_pass.c reruns a baseline's
 * campaign). When it cannot be made they are held out. */
static void make_campaign(struct ctx *x, const char *id)
{
	struct ctl_error err;
	json_t *doc = NULL, *report = NULL;
	char *text = NULL, *sel = NULL, file[64], why[REASON_MAX];
	size_t ok = 0, len = 1, earlier = 0;
	int r = -ENOMEM;

	ctl_error_init(&err);
	/* A node of the batch offline now (its agent reconnecting after a reboot or to a
	 * restarted controller) is waited for a while before it is left out. */
	for (size_t i = 0; i < x->nd; i++) {
		struct store_node *node = NULL;
		int64_t from = x->d[i].since_ms > x->started_ms ? x->d[i].since_ms : x->started_ms;
		bool away;

		if (x->d[i].batch != x->cur->batch || !streq(x->d[i].state, "validating") ||
		    util_now_unix_ms() - from > ONLINE_GRACE_MS)
			continue;
		away = store_node_get(x->st, x->d[i].node_id, &node) >= 0 &&
		       !streq(node->state, "online");
		store_node_free(node);
		if (away)
			goto out; /* the next run looks again */
	}
	for (size_t i = 0; i < x->nd; i++)
		if ((x->d[i].batch == x->cur->batch && streq(x->d[i].state, "validating")) ||
		    streq(x->d[i].state, "resumed"))
			len += strlen(x->d[i].node_id) + 1;
	if (!(sel = calloc(1, len)))
		goto out;
	for (size_t i = 0; i < x->nd; i++)
		if (x->d[i].batch == x->cur->batch && streq(x->d[i].state, "validating")) {
			if (ok++)
				strcat(sel, ",");
			strcat(sel, x->d[i].node_id);
		}
	for (size_t i = 0; ok && i < x->nd && earlier < (ok > 2 ? ok : 2); i++)
		if (streq(x->d[i].state, "resumed")) {
			strcat(sel, ",");
			strcat(sel, x->d[i].node_id);
			earlier++;
		}
	snprintf(file, sizeof(file), "(maintenance %s)", x->m->id);
	{
		struct ctl_campaign_request rq = {.cluster = x->m->cluster,
						  .playbook_text = x->m->playbook,
						  .playbook_len = strlen(x->m->playbook),
						  .playbook_file = file,
						  .nodes = sel,
						  .seed = -1,
						  .allow_missing = true,
						  .actor = x->m->actor,
						  .signoff = x->m->sign,
						  .id = id};

		r = ok ? 0 : ctl_error_set(&err, -EINVAL, CTL_ERR_INVALID, NULL, "no node");
		if (r >= 0 && x->m->baseline_id) {
			const json_t *camp, *opt;

			r = ctl_revalidate_baseline(x->st, x->m->cluster, x->m->baseline_id,
						    &report, &text, &err);
			if (r >= 0) {
				camp = json_object_get(report, "campaign");
				opt = json_object_get(camp, "options");
				rq.playbook_text = text;
				rq.playbook_len = strlen(text);
				rq.tests = JSTR(opt, "tests");
				rq.transport = JSTR(opt, "transport");
				rq.quick = json_is_true(json_object_get(opt, "quick"));
				rq.seed = json_integer_value(json_object_get(camp, "seed"));
				rq.baseline = x->m->baseline_id;
				rq.signoff = true;
			}
		}
		if (r >= 0)
			r = ctl_campaign_create(x->st, &rq, false, &doc, &err);
	}
	if (r >= 0) {
		ctl_engine_kick(ctl_server_engine(x->srv));
		goto out;
	}
	if (streq(err.code, CTL_ERR_UNAVAILABLE))
		goto out; /* the database, for now: the next run makes it */
	/* The configured nodes cannot be validated: they are not handed back. */
	reason_fmt(why, sizeof(why), "railyard: maintenance %s: validation: %s", x->m->id,
		   err.message);
	hold_all(x, "validating", why);
out:
	json_decref(doc);
	json_decref(report);
	free(text);
	free(sel);
	ctl_error_done(&err);
}

/* configuring, the deployment ended (st: its failed nodes held out, the others validating):
 * stored with the campaign's id, then the campaign is made; or, with nothing to validate (no
 * node left, no test), the configured nodes resumed at once. */
static void start_validate(struct ctx *x, struct store_maint_step *st, struct store_maint_move *mv,
			   size_t n)
{
	struct ctl_error err;
	struct playbook *pb = NULL;
	char file[64], id[24];
	size_t ok = 0;
	bool tests;
	int r;

	ctl_error_init(&err);
	for (size_t i = 0; i < n; i++)
		ok += streq(mv[i].to, "validating");
	snprintf(file, sizeof(file), "(maintenance %s)", x->m->id);
	r = ctl_playbook_for_cluster(x->m->playbook, strlen(x->m->playbook), file, x->m->cluster,
				     &pb, &err);
	tests = r >= 0 && json_array_size(json_object_get(playbook_validation(pb), "tests")) > 0;
	playbook_free(pb);
	ctl_error_done(&err);
	if (ok == 0 || (!tests && !x->m->baseline_id)) {
		for (size_t i = 0; i < n; i++)
			if (streq(mv[i].to, "validating")) {
				mv[i].to = "resumed";
				mv[i].wlm = STORE_MAINT_WLM_RESUME;
			}
		end_batch(x, st, 0, NULL);
		(void)apply(x, st);
		return;
	}
	if (new_id("c-", id, sizeof(id)) < 0)
		return;
	st->batch_state = "validating";
	st->campaign_id = id;
	if (apply(x, st) > 0) {
		sync_moves(x, mv, n);
		make_campaign(x, id);
	}
}

/* configuring, its deployment running: a node whose plan reboots it now (its deployment node's
 * reboot {state: "rebooting"}, where the rollout reports reboots) shows rebooting, and
 * configuring again once it is back. */
static void mark_reboots(struct ctx *x, const char *dep_id)
{
	struct store_maint_step st = {.current_batch = -1, .batch = -1};
	struct ctl_error err;
	json_t *d = NULL;
	size_t n = 0;
	struct store_maint_move *mv = NULL;

	ctl_error_init(&err);
	if (ctl_deploy_get(x->st, dep_id, CTL_DEPLOY_NODES, &d, &err) < 0 ||
	    !(mv = calloc(x->nd ? x->nd : 1, sizeof(*mv))))
		goto out;
	for (size_t i = 0; i < x->nd; i++) {
		const json_t *e, *node = NULL;
		size_t k;
		const char *want;

		if (x->d[i].batch != x->cur->batch ||
		    !(streq(x->d[i].state, "configuring") || streq(x->d[i].state, "rebooting")))
			continue;
		json_array_foreach(json_object_get(d, "nodes"), k,
				   e) if (streq(JSTR(e, "node_id"), x->d[i].node_id)) node = e;
		want = streq(JSTR(json_object_get(node, "reboot"), "state"), "rebooting")
			       ? "rebooting"
			       : "configuring";
		if (streq(want, x->d[i].state))
			continue;
		mv[n].node_id = x->d[i].node_id;
		mv[n].hostname = x->d[i].hostname;
		mv[n].from = x->d[i].state;
		mv[n].to = want;
		n++;
	}
	if (n) {
		st.moves = mv;
		st.n_moves = n;
		(void)apply(x, &st);
	}
out:
	free(mv);
	json_decref(d);
	ctl_error_done(&err);
}

static void on_configuring(struct ctx *x)
{
	struct store_maint_step st = {.current_batch = -1, .batch = x->cur->batch};
	struct store_deployment *dep = NULL;
	struct store_deploy_node *dn = NULL;
	json_t *failed = NULL;
	size_t ndn = 0, n = 0;
	struct store_maint_move *mv = NULL;
	char(*why)[REASON_MAX] = NULL;
	int r = store_deployment_get(x->st, x->cur->deployment_id, &dep);

	if (r == -RY_E_NOT_FOUND) {
		/* Stored, not made yet (the controller stopped in between): made now. */
		make_deployment(x, x->cur->deployment_id);
		return;
	}
	if (r < 0)
		return;
	if (!ctl_deploy_state_final(dep->state)) {
		mark_reboots(x, dep->id);
		goto out;
	}
	if (store_deploy_nodes(x->st, dep->id, &dn, &ndn) < 0 ||
	    ctl_deploy_failed_steps(x->st, dep->id, &failed) < 0)
		goto out;
	mv = moves_of(x, NULL, "validating", &n);
	/* The batch's nodes configured (or rebooting when it ended), not those held out before. */
	{
		size_t k = 0;

		for (size_t i = 0; mv && i < n; i++)
			if (streq(mv[i].from, "configuring") || streq(mv[i].from, "rebooting"))
				mv[k++] = mv[i];
		n = k;
	}
	why = calloc(n ? n : 1, sizeof(*why));
	if (!mv || !why)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct store_deploy_node *node = NULL;

		for (size_t j = 0; j < ndn; j++)
			if (streq(dn[j].node_id, mv[i].node_id))
				node = &dn[j];
		if (node && streq(node->state, "succeeded"))
			continue;
		{
			const json_t *fs = json_object_get(failed, mv[i].node_id);

			if (JSTR(fs, "message"))
				reason_fmt(why[i], sizeof(why[i]),
					   "railyard: maintenance %s: deployment %s step %d: %s",
					   x->m->id, dep->id,
					   (int)json_integer_value(json_object_get(fs, "index")) +
						   1,
					   JSTR(fs, "message"));
			else
				reason_fmt(why[i], sizeof(why[i]),
					   "railyard: maintenance %s: deployment %s: %s", x->m->id,
					   dep->id,
					   node ? (node->message ? node->message : node->state)
						: "not targeted");
		}
		mv[i].to = "held_out";
		mv[i].reason = why[i];
		mv[i].wlm = STORE_MAINT_WLM_DRAIN;
		mv[i].wlm_reason = finding(x, why[i]);
	}
	st.moves = mv;
	st.n_moves = n;
	start_validate(x, &st, mv, n);
out:
	free(mv);
	free(why);
	json_decref(failed);
	store_deploy_nodes_free(dn, ndn);
	store_deployment_free(dep);
}

/* What the verdict says first about a node that did not pass. */
static const char *first_reason(const json_t *vn)
{
	const char *s = json_string_value(json_array_get(json_object_get(vn, "reasons"), 0));

	if (s)
		return s;
	return vn && JSTR(vn, "result") ? JSTR(vn, "result") : "not judged by the campaign";
}

/* validating, the campaign ended: by its verdict, each node resumed or held out. */
static void on_validating(struct ctx *x)
{
	struct store_maint_step st = {.current_batch = -1, .batch = x->cur->batch};
	struct store_signoff *so = NULL;
	struct ctl_error err;
	json_t *c = NULL;
	const json_t *vnodes;
	size_t n = 0;
	struct store_maint_move *mv = NULL;
	char(*why)[REASON_MAX] = NULL;
	bool judged;
	int r;

	ctl_error_init(&err);
	r = ctl_campaign_get(x->st, x->cur->campaign_id, false, &c, &err);
	if (r < 0) {
		if (streq(err.code, CTL_ERR_NOT_FOUND))
			make_campaign(x, x->cur->campaign_id); /* stored, not made yet */
		goto out;
	}
	if (!store_campaign_state_final(JSTR(c, "state")))
		goto out;
	judged = streq(JSTR(c, "state"), "passed") || streq(JSTR(c, "state"), "failed");
	vnodes = json_object_get(json_object_get(c, "verdict"), "nodes");
	mv = moves_of(x, "validating", "resumed", &n);
	why = calloc(n ? n : 1, sizeof(*why));
	if (!mv || !why)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const json_t *vn = NULL, *e;
		size_t k;

		json_array_foreach(vnodes, k, e) if (streq(JSTR(e, "id"), mv[i].node_id)) vn = e;
		if (judged && vn && streq(JSTR(vn, "result"), "pass")) {
			mv[i].wlm = STORE_MAINT_WLM_RESUME;
			continue;
		}
		if (!judged)
			reason_fmt(why[i], sizeof(why[i]),
				   "railyard: maintenance %s: campaign %s %s", x->m->id,
				   JSTR(c, "id"), JSTR(c, "state"));
		else
			reason_fmt(why[i], sizeof(why[i]),
				   "railyard: maintenance %s: campaign %s: %s", x->m->id,
				   JSTR(c, "id"), first_reason(vn));
		mv[i].to = "held_out";
		mv[i].reason = why[i];
		mv[i].wlm = STORE_MAINT_WLM_DRAIN;
		mv[i].wlm_reason = finding(x, why[i]);
	}
	if (x->m->sign && store_signoff_of_campaign(x->st, JSTR(c, "id"), &so) >= 0)
		st.signoff_id = so->id;
	st.moves = mv;
	st.n_moves = n;
	end_batch(x, &st, 0, NULL); /* the nodes held out before validation count too */
	(void)apply(x, &st);
out:
	free(mv);
	free(why);
	store_signoff_free(so);
	json_decref(c);
	ctl_error_done(&err);
}

/* A cancel stops the part running now. Nodes not changed yet (draining, waiting for jobs) are
 * handed back; nodes configured or being validated stay out (held_out): what they run now is
 * not known to be good. */
static void on_cancel(struct ctx *x)
{
	struct store_maint_step st = {.current_batch = -1,
				      .batch = -1,
				      .state = "cancelled",
				      .reason = "cancelled on request"};
	char why[REASON_MAX];
	struct ctl_error err;
	size_t n = 0;
	struct store_maint_move *mv = NULL;

	reason_fmt(why, sizeof(why),
		   "railyard: maintenance %s: cancelled while it changed this node", x->m->id);
	ctl_error_init(&err);
	if (x->cur && streq(x->cur->state, "configuring") && x->cur->deployment_id &&
	    ctl_deploy_cancel(x->st, x->cur->deployment_id, x->m->actor, &err) < 0)
		log_warn("maintenance %s: cancelling %s: %s", x->m->id, x->cur->deployment_id,
			 err.message);
	if (x->cur && streq(x->cur->state, "validating") && x->cur->campaign_id &&
	    ctl_campaign_cancel(x->st, x->cur->campaign_id, NULL, &err) < 0)
		log_warn("maintenance %s: cancelling %s: %s", x->m->id, x->cur->campaign_id,
			 err.message);
	ctl_error_done(&err);
	if (x->cur) {
		mv = moves_of(x, NULL, "skipped", &n);
		if (!mv)
			return;
		size_t k = 0;

		/* Nodes that ended their part (resumed, held out, skipped) keep it. */
		for (size_t i = 0; i < n; i++) {
			if (streq(mv[i].from, "resumed") || streq(mv[i].from, "held_out") ||
			    streq(mv[i].from, "skipped"))
				continue;
			mv[k] = mv[i];
			if (streq(mv[k].from, "draining") ||
			    streq(mv[k].from, "waiting_for_jobs")) {
				mv[k].reason = "cancelled before it was changed";
				mv[k].wlm = STORE_MAINT_WLM_RESUME;
			} else if (!streq(mv[k].from, "waiting")) {
				mv[k].to = "held_out";
				mv[k].reason = why;
				mv[k].wlm = STORE_MAINT_WLM_DRAIN;
				mv[k].wlm_reason = finding(x, why);
			} else {
				mv[k].reason = "cancelled";
			}
			k++;
		}
		n = k;
		st.batch = x->cur->batch;
		st.batch_state = streq(x->cur->state, "waiting") ? "skipped" : "failed";
		st.skip_later = true;
		st.moves = mv;
		st.n_moves = n;
	}
	(void)apply(x, &st);
	free(mv);
}

static void run_one(struct ctl_maint *cm, struct store_maint *m)
{
	struct ctl_server *srv = cm->srv;
	struct ctx x = {.srv = srv,
			.mw = cm->wlm,
			.started_ms = cm->started_ms,
			.st = ctl_server_state(srv)->store,
			.m = m};

	if (store_maint_batches(x.st, m->id, &x.b, &x.nb) < 0 ||
	    store_maint_nodes(x.st, m->id, &x.d, &x.nd) < 0)
		goto out;
	for (size_t i = 0; i < x.nb; i++)
		if (x.b[i].batch == m->current_batch)
			x.cur = &x.b[i];
	if (m->cancel_requested_ms) {
		on_cancel(&x);
		goto out;
	}
	if (!x.cur) {
		struct store_maint_step st = {
			.current_batch = -1, .batch = -1, .state = "succeeded"};

		(void)apply(&x, &st); /* no batch (no node): nothing to do */
		goto out;
	}
	if (streq(x.cur->state, "waiting"))
		start_batch(&x);
	else if (streq(x.cur->state, "draining"))
		on_draining(&x);
	else if (streq(x.cur->state, "configuring"))
		on_configuring(&x);
	else if (streq(x.cur->state, "validating"))
		on_validating(&x);
out:
	store_maint_batches_free(x.b, x.nb);
	store_maint_nodes_free(x.d, x.nd);
}

static void pass(void *ud)
{
	struct ctl_maint *cm = ud;
	struct store_maint **v = NULL;
	size_t n = 0;

	if (store_maints_list(ctl_server_state(cm->srv)->store, true, 0, &v, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		run_one(cm, v[i]);
	store_maints_free(v, n);
}

static const struct ctl_pass maint_pass = {
	.name = "maintenance",
	.run = pass,
};

int ctl_maint_new(struct ctl_server *srv, struct ctl_maint **ret)
{
	struct ctl_maint *cm = calloc(1, sizeof(*cm));
	int r;

	if (!cm)
		return -ENOMEM;
	cm->srv = srv;
	cm->started_ms = util_now_unix_ms();
	r = maint_wlm_new(srv, &cm->wlm);
	if (r < 0) {
		free(cm);
		return r;
	}
	*ret = cm;
	return 0;
}

int ctl_maint_register(struct ctl_maint *cm, struct ctl_engine *e)
{
	return ctl_engine_add_pass(e, &maint_pass, cm);
}

void ctl_maint_free(struct ctl_maint *cm)
{
	if (!cm)
		return;
	maint_wlm_free(cm->wlm);
	free(cm);
}
