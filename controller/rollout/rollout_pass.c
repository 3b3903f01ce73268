/* The rollout pass of the engine: drives every pending or running deployment from the database,
 * batch by batch, sending each node its rendered plan over its session and applying the
 * rollout policy to the results; and the handlers that store the nodes' reports on them. The
 * database is the only state that matters: a restarted controller picks up where the last one
 * stopped. Runs on the engine's tick thread; reports arrive on its ingest worker. */
#include "controller/rollout/rollout.h"
#include "controller/engine/engine.h"
#include "controller/rollout/policy.h"
#include "controller/events.h"
#include "controller/session.h"
#include "controller/state.h"
#include "controller/store/store.h"
#include "controller/store/store_deploy.h"
#include "controller/store/store_nodes.h"
#include "common/log/log.h"
#include "common/playbook/playbook.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* In-memory only: when the pause after a batch ends. Lost on restart, which just ends the
 * pause early. */
struct deploy_pause {
	struct deploy_pause *next;
	char id[64];
	int batch;
	int64_t until_mono_ms;
};

/* Parsed playbooks of the active deployments (a plan is rendered per node from it; parsing it
 * once per node would cost more than the render). Tick thread only. */
struct pb_cached {
	struct pb_cached *next;
	char id[64];
	struct playbook *pb;
};

/* Nodes dispatched per transaction: their 'sent' marks are one commit (one fsync), their plans
 * leave after it. */
#define DISPATCH_CHUNK 256
/* Threads a chunk's renders and sends are spread over, at most (one per CPU). */
#define DISPATCH_THREADS 4

struct ctl_rollout {
	struct ctl_server *srv;
	struct deploy_pause *pauses; /* tick thread only */
	struct pb_cached *pbs;	     /* tick thread only */
	int64_t apply_timeout_ms;
	/* Until then an offline node is waited for, not failed: after a controller restart the
	 * agents need a moment (their reconnect backoff) to come back. */
	int64_t grace_until_mono_ms;
};

/* The parsed playbook of a deployment, parsed on first use (borrowed: the cache owns it, until
 * pb_drop()). NULL with a reason in why. */
static struct playbook *pb_get(struct ctl_rollout *dp, const char *dep_id, char *why, size_t len)
{
	struct pb_cached *c;
	struct pb_diags d;
	char *text = NULL;
	int r;

	for (c = dp->pbs; c; c = c->next)
		if (strcmp(c->id, dep_id) == 0)
			return c->pb;
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(why, len, "out of memory");
		return NULL;
	}
	pb_diags_init(&d);
	r = store_deployment_playbook_text(ctl_server_state(dp->srv)->store, dep_id, &text);
	if (r < 0)
		snprintf(why, len, "playbook unavailable: %s", ry_strerror(r));
	else if ((r = playbook_parse(text, strlen(text), dep_id, &c->pb, &d)) < 0)
		snprintf(why, len, "stored playbook no longer parses: %s",
			 d.count ? d.items[0].message : ry_strerror(r));
	free(text);
	pb_diags_done(&d);
	if (r < 0) {
		free(c);
		return NULL;
	}
	snprintf(c->id, sizeof(c->id), "%s", dep_id);
	c->next = dp->pbs;
	dp->pbs = c;
	return c->pb;
}

static void pb_drop(struct ctl_rollout *dp, const char *dep_id)
{
	for (struct pb_cached **pp = &dp->pbs; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->id, dep_id) == 0) {
			struct pb_cached *c = *pp;

			*pp = c->next;
			playbook_free(c->pb);
			free(c);
			return;
		}
	}
}

/* Render pb (the deployment's playbook) for one node. *ret_plan_json (caller frees) on
 * success; otherwise a one-line reason in why. Thread-safe: the dispatch's helpers run it. */
static int render_for_node(struct ctl_rollout *dp, const struct playbook *pb, const char *node_id,
			   char **ret_plan_json, int *ret_steps, char *why, size_t len)
{
	struct playbook_facts *facts = NULL;
	struct pb_diags d;
	json_t *plan = NULL;
	char *text = NULL;
	int r;

	pb_diags_init(&d);
	r = store_node_facts(ctl_server_state(dp->srv)->store, node_id, &text);
	if (r < 0 || !text) {
		snprintf(why, len, "no facts for node %s", node_id);
		r = r < 0 ? r : -RY_E_NOT_FOUND;
		goto out;
	}
	/* Indexed, not parsed: the render reads a few dozen of its ~1,000 values. */
	r = playbook_facts_index(text, strlen(text), &facts);
	if (r >= 0)
		r = playbook_render_facts(pb, facts, &plan, &d);
	if (r < 0) {
		if (d.count)
			snprintf(why, len, "render failed: %s:%d:%d: %s", d.items[0].file,
				 d.items[0].line, d.items[0].col, d.items[0].message);
		else
			snprintf(why, len, "render failed: %s", ry_strerror(r));
		goto out;
	}
	*ret_plan_json = json_dumps(plan, JSON_COMPACT);
	*ret_steps = (int)json_array_size(json_object_get(plan, "steps"));
	r = *ret_plan_json ? 0 : -ENOMEM;
out:
	json_decref(plan);
	playbook_facts_free(facts);
	free(text);
	pb_diags_done(&d);
	return r;
}

/* Is a node at its turn online? An offline one is stored so (unreachable once the reconnect
 * grace is over; a node already sent its plan keeps waiting for its result, it gets the plan
 * again when it reconnects). */
static bool reachable(struct ctl_rollout *dp, const struct store_deployment *dep,
		      const struct store_deploy_node *n)
{
	if (ctl_session_online(dp->srv, n->node_id))
		return true;
	/* An offline node at its turn counts as failed (Ansible: unreachable). */
	if (strcmp(n->state, "waiting") != 0 || util_now_mono_ms() < dp->grace_until_mono_ms)
		return false;
	if (store_deploy_node_update(ctl_server_state(dp->srv)->store, dep->id, n->node_id,
				     "unreachable", "node offline at its batch", NULL,
				     util_now_unix_ms()) < 0)
		log_error("deployment %s: storing %s unreachable failed", dep->id, n->hostname);
	log_warn("deployment %s: node %s is offline", dep->id, n->hostname);
	return false;
}

/* A node whose plan could not be rendered (why) fails. */
static void render_failed(struct ctl_rollout *dp, const struct store_deployment *dep,
			  const struct store_deploy_node *n, const char *why)
{
	log_warn("deployment %s: node %s: %s", dep->id, n->hostname, why);
	if (store_deploy_node_update(ctl_server_state(dp->srv)->store, dep->id, n->node_id,
				     "failed", why, NULL, util_now_unix_ms()) < 0)
		log_error("deployment %s: storing the failure of %s failed", dep->id, n->hostname);
}

/* Send a node its plan (marked sent before). */
static void send_plan(struct ctl_rollout *dp, const struct store_deployment *dep,
		      const struct store_deploy_node *n, const char *plan, int steps, bool again)
{
	int r = ctl_session_send_plan(dp->srv, n->node_id, dep->id, plan, dep->check_mode);

	if (r == -ENOTCONN) {
		log_warn("deployment %s: %s went offline as its plan was sent; it gets the plan "
			 "when it reconnects",
			 dep->id, n->hostname);
		return;
	}
	if (r < 0) {
		/* A session that cannot take the plan is not a session to trust with it: end it,
		 * and the reconnect brings the plan again. */
		log_warn("deployment %s: sending the plan to %s failed: %s; ending its session",
			 dep->id, n->hostname, ry_strerror(r));
		ctl_session_end(dp->srv, n->node_id, GRPC_STATUS_UNAVAILABLE,
				"the plan could not be queued");
		return;
	}
	log_debug("deployment %s: plan sent to %s (%d steps)%s%s", dep->id, n->hostname, steps,
		  dep->check_mode ? ", check mode" : "", again ? ", again after a reconnect" : "");
}

/* One chunk of a dispatch: rendered, then sent, over a few threads (dispatch_each()). */
struct dispatch_chunk {
	struct ctl_rollout *dp;
	const struct store_deployment *dep;
	const struct playbook *pb;
	const struct store_deploy_node *who[DISPATCH_CHUNK];
	const char *ids[DISPATCH_CHUNK];
	char *plans[DISPATCH_CHUNK];
	int steps[DISPATCH_CHUNK];
	int rc[DISPATCH_CHUNK];
	bool moved[DISPATCH_CHUNK];
	char why[DISPATCH_CHUNK][256];
};

static void render_k(struct dispatch_chunk *c, size_t k)
{
	c->plans[k] = NULL;
	c->rc[k] = render_for_node(c->dp, c->pb, c->ids[k], &c->plans[k], &c->steps[k], c->why[k],
				   sizeof(c->why[k]));
}

static void send_k(struct dispatch_chunk *c, size_t k)
{
	if (c->moved[k])
		send_plan(c->dp, c->dep, c->who[k], c->plans[k], c->steps[k], false);
}

struct dispatch_stripe {
	struct dispatch_chunk *c;
	void (*fn)(struct dispatch_chunk *c, size_t k);
	size_t n, first, step;
};

static void *stripe_main(void *arg)
{
	struct dispatch_stripe *s = arg;

	for (size_t k = s->first; k < s->n; k += s->step)
		s->fn(s->c, k);
	return NULL;
}

/* fn for k in [0, n), spread over up to DISPATCH_THREADS threads (this one included): a plan's
 * render and its send are CPU work of their own (~0.1 ms each), and a large deployment's
 * dispatch is what nodes wait for. A helper that cannot be started leaves its stripe here. */
static void dispatch_each(struct dispatch_chunk *c, size_t n,
			  void (*fn)(struct dispatch_chunk *c, size_t k))
{
	static long ncpu;
	struct dispatch_stripe s[DISPATCH_THREADS];
	pthread_t t[DISPATCH_THREADS];
	bool started[DISPATCH_THREADS] = {false};
	size_t nt;

	if (!ncpu)
		ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	nt = ncpu > 1 ? (size_t)ncpu : 1;
	if (nt > DISPATCH_THREADS)
		nt = DISPATCH_THREADS;
	if (nt > n / 16 + 1)
		nt = n / 16 + 1; /* a few nodes are not worth a thread */
	for (size_t j = 0; j < nt; j++)
		s[j] = (struct dispatch_stripe){c, fn, n, j, nt};
	for (size_t j = 1; j < nt; j++)
		started[j] = pthread_create(&t[j], NULL, stripe_main, &s[j]) == 0;
	stripe_main(&s[0]);
	for (size_t j = 1; j < nt; j++) {
		if (started[j])
			pthread_join(t[j], NULL);
		else
			stripe_main(&s[j]);
	}
}

/* Send waiting nodes their plans, DISPATCH_CHUNK at a time: render each, mark the chunk sent
 * (with each plan's step count) in one transaction, then send. Marked before the plan leaves:
 * a node's first report may arrive before this returns, and reports are accepted only from
 * nodes that were sent the plan. */
static void dispatch_waiting(struct ctl_rollout *dp, const struct store_deployment *dep,
			     const struct store_deploy_node *nodes, size_t n)
{
	struct dispatch_chunk *c = calloc(1, sizeof(*c));
	struct playbook *pb;
	size_t sent = 0;
	char why[512];

	if (!c) {
		log_error("deployment %s: out of memory dispatching; next pass", dep->id);
		return;
	}
	pb = pb_get(dp, dep->id, why, sizeof(why));
	c->dp = dp;
	c->dep = dep;
	c->pb = pb;
	for (size_t i = 0; i < n;) {
		size_t m = 0, ok = 0;
		int r;

		for (; i < n && m < DISPATCH_CHUNK; i++) {
			if (!reachable(dp, dep, &nodes[i]))
				continue;
			if (!pb) {
				render_failed(dp, dep, &nodes[i], why);
				continue;
			}
			c->who[m] = &nodes[i];
			c->ids[m] = nodes[i].node_id;
			m++;
		}
		dispatch_each(c, m, render_k);
		/* The failed ones out, the chunk kept in order. */
		for (size_t k = 0; k < m; k++) {
			if (c->rc[k] < 0) {
				render_failed(dp, dep, c->who[k], c->why[k]);
				continue;
			}
			c->who[ok] = c->who[k];
			c->ids[ok] = c->ids[k];
			c->plans[ok] = c->plans[k];
			c->steps[ok] = c->steps[k];
			ok++;
		}
		r = store_deploy_nodes_sent(ctl_server_state(dp->srv)->store, dep->id, c->ids,
					    c->steps, ok, util_now_unix_ms(), c->moved);
		if (r < 0) {
			log_error("deployment %s: storing 'sent' for %zu nodes failed: %s; next "
				  "pass",
				  dep->id, ok, ry_strerror(r));
			memset(c->moved, 0, sizeof(c->moved));
		}
		dispatch_each(c, ok, send_k);
		for (size_t k = 0; k < ok; k++) {
			sent += c->moved[k];
			free(c->plans[k]);
		}
	}
	free(c);
	if (sent)
		log_info("deployment %s: plan sent to %zu nodes%s", dep->id, sent,
			 dep->check_mode ? " (check mode)" : "");
}

static struct deploy_pause *pause_find(struct ctl_rollout *dp, const char *id)
{
	for (struct deploy_pause *p = dp->pauses; p; p = p->next)
		if (strcmp(p->id, id) == 0)
			return p;
	return NULL;
}

static void pause_drop(struct ctl_rollout *dp, const char *id)
{
	for (struct deploy_pause **pp = &dp->pauses; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->id, id) == 0) {
			struct deploy_pause *p = *pp;

			*pp = p->next;
			free(p);
			return;
		}
	}
}

static void finish(struct ctl_rollout *dp, const struct store_deployment *dep, const char *state,
		   const char *reason, int batch)
{
	int r = store_deployment_update(ctl_server_state(dp->srv)->store, dep->id, state, reason,
					batch, util_now_unix_ms());

	if (r < 0)
		log_error("deployment %s: storing its end failed: %s", dep->id, ry_strerror(r));
	else
		ctl_events_emit(ctl_server_events(dp->srv), "deployment.state", dep->cluster,
				json_pack("{s:s, s:s, s:s?}", "id", dep->id, "state", state,
					  "reason", reason));
	pause_drop(dp, dep->id);
	pb_drop(dp, dep->id);
	log_info("deployment %s %s%s%s", dep->id, state, reason ? ": " : "", reason ? reason : "");
}

/* The time a deployment's plan may spend in reboots: the sum of its reboot steps' timeouts
 * (0 without any, or when the playbook cannot be read). */
static int64_t reboot_allowance_ms(struct ctl_rollout *dp, const char *dep_id)
{
	const struct playbook *pb;
	int64_t sum = 0;
	char why[256];

	pb = pb_get(dp, dep_id, why, sizeof(why));
	for (size_t i = 0; pb && i < playbook_step_count(pb); i++) {
		int64_t t = playbook_step_reboot_timeout_ms(pb, i);

		if (t > 0)
			sum += t;
	}
	return sum;
}

/* Nodes rebooting in a plan: failed when the step they reboot at is not a reboot step of the
 * playbook or the run is a check (a node's word is checked), or when they are not back with its
 * result within the step's timeout (the controller's clock, from their "rebooting"). */
static void reboots_overdue(struct ctl_rollout *dp, const struct store_deployment *dep, int64_t now)
{
	struct store *store = ctl_server_state(dp->srv)->store;
	struct store_deploy_node *nodes = NULL;
	const struct playbook *pb;
	size_t n = 0;
	char why[256];

	if (store_deploy_nodes_rebooting(store, dep->id, &nodes, &n) < 0 || n == 0) {
		store_deploy_nodes_free(nodes, n);
		return;
	}
	pb = pb_get(dp, dep->id, why, sizeof(why));
	for (size_t i = 0; pb && i < n; i++) {
		int64_t limit = playbook_step_reboot_timeout_ms(pb, (size_t)nodes[i].reboot_step);
		const char *name = playbook_step_name(pb, (size_t)nodes[i].reboot_step);

		if (limit < 0)
			snprintf(why, sizeof(why),
				 "the node said it reboots at step %d, which is not a reboot step "
				 "of the playbook",
				 nodes[i].reboot_step + 1);
		else if (dep->check_mode)
			snprintf(why, sizeof(why),
				 "the node said it reboots at step %d of a check-mode run, which "
				 "changes nothing",
				 nodes[i].reboot_step + 1);
		else if (now - nodes[i].reboot_since_ms > limit)
			snprintf(
				why, sizeof(why),
				"step %d \"%s\": the node did not come back from its reboot within "
				"%lld s",
				nodes[i].reboot_step + 1, name ? name : "?",
				(long long)(limit / 1000));
		else
			continue;
		if (store_deploy_node_update(store, dep->id, nodes[i].node_id, "failed", why, NULL,
					     now) == 1) {
			log_warn("deployment %s: node %s: %s", dep->id, nodes[i].hostname, why);
			ctl_events_emit(ctl_server_events(dp->srv), "deployment.node", dep->cluster,
					json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", dep->id,
						  "node", nodes[i].node_id, "hostname",
						  nodes[i].hostname, "state", "failed", "message",
						  why));
		}
	}
	store_deploy_nodes_free(nodes, n);
}

/* One pass over one deployment. Cost: one aggregate query over its nodes inside SQLite, rows
 * read only for the nodes that move (dispatch, timeouts); writes only on transitions. */
static void advance(struct ctl_rollout *dp, const struct store_deployment *dep)
{
	struct store *store = ctl_server_state(dp->srv)->store;
	struct store_deploy_node *nodes = NULL;
	struct store_deploy_counts k;
	struct rollout_policy pol;
	size_t n = 0;
	int cur = dep->current_batch, r;
	int64_t now = util_now_unix_ms();
	char reason[256];

	if (rollout_policy_from_json(dep->policy_json, &pol) < 0) {
		finish(dp, dep, "failed", "stored rollout policy is unreadable", cur);
		return;
	}
	if (store_deploy_counts(store, dep->id, cur, &k) < 0)
		return;
	if (strcmp(dep->state, "pending") == 0) {
		if (store_deployment_update(store, dep->id, "running", NULL, cur, now) < 0)
			return;
		log_info("deployment %s started: %s %s on %zu nodes%s", dep->id, dep->playbook_name,
			 dep->playbook_version, k.total, dep->check_mode ? " (check mode)" : "");
	}
	if (k.total == 0) {
		finish(dp, dep, "succeeded", "no node matched the playbook's target", 0);
		return;
	}
	/* A plan that never reports back fails its node (not one whose reports wait for the
	 * database); a plan with reboot steps has their timeouts on top. */
	if (k.sent > 0 &&
	    ctl_engine_store_settled(ctl_server_engine(dp->srv), CTL_STORE_SETTLE_MS) &&
	    store_deploy_nodes_in(store, dep->id, "sent", cur,
				  now - dp->apply_timeout_ms - reboot_allowance_ms(dp, dep->id),
				  &nodes, &n) == 0) {
		char why[96];

		snprintf(why, sizeof(why), "no result within %lld s",
			 (long long)((dp->apply_timeout_ms + reboot_allowance_ms(dp, dep->id)) /
				     1000));
		for (size_t i = 0; i < n; i++)
			if (store_deploy_node_update(store, dep->id, nodes[i].node_id, "failed",
						     why, NULL, now) == 1)
				log_warn("deployment %s: node %s: %s", dep->id, nodes[i].hostname,
					 why);
		store_deploy_nodes_free(nodes, n);
		nodes = NULL;
		n = 0;
	}

	if (k.sent_total > 0)
		reboots_overdue(dp, dep, now);

	/* Cancelled: nothing more is sent; the plans running finish (a step is not cut off
	 * halfway), then the deployment ends. */
	if (dep->cancel_requested_ms) {
		r = store_deploy_nodes_skip_waiting(store, dep->id, "deployment cancelled", now);
		if (r > 0)
			log_info("deployment %s: cancelled; %d nodes will not be sent the plan",
				 dep->id, r);
		if (k.sent_total == 0)
			finish(dp, dep, "cancelled", "cancelled on request", cur);
		return;
	}
	if (k.waiting > 0) {
		struct deploy_pause *p = pause_find(dp, dep->id);

		if (p && p->batch == cur && util_now_mono_ms() < p->until_mono_ms)
			return;
		r = store_deploy_nodes_in(store, dep->id, "waiting", cur, 0, &nodes, &n);
		if (r < 0) {
			log_error("deployment %s: listing its waiting nodes failed: %s", dep->id,
				  ry_strerror(r));
			return;
		}
		dispatch_waiting(dp, dep, nodes, n);
		store_deploy_nodes_free(nodes, n);
		return;
	}
	if (k.sent > 0)
		return;

	/* The batch is over: apply the policy. */
	if (rollout_should_stop(&pol, k.total, k.failed_total, pol.canary > 0 && cur == 0, k.failed,
				reason, sizeof(reason))) {
		if (store_deploy_nodes_skip_waiting(store, dep->id, "rollout stopped", now) < 0)
			log_error("deployment %s: marking the waiting nodes skipped failed",
				  dep->id);
		finish(dp, dep, "failed", reason, cur);
		return;
	}
	if (cur < k.last_batch) {
		struct deploy_pause *p = pause_find(dp, dep->id);

		if (pol.pause_ms > 0) {
			if (!p) {
				p = calloc(1, sizeof(*p));
				if (p) {
					snprintf(p->id, sizeof(p->id), "%s", dep->id);
					p->next = dp->pauses;
					dp->pauses = p;
				}
			}
			if (p) {
				p->batch = cur + 1;
				p->until_mono_ms = util_now_mono_ms() + pol.pause_ms;
			}
		}
		if (store_deployment_update(store, dep->id, "running", NULL, cur + 1, now) < 0)
			log_error("deployment %s: advancing to batch %d failed", dep->id, cur + 1);
		else {
			log_info("deployment %s: batch %d done, %zu failed so far; next batch %d",
				 dep->id, cur, k.failed_total, cur + 1);
			ctl_events_emit(
				ctl_server_events(dp->srv), "deployment.batch", dep->cluster,
				json_pack("{s:s, s:i, s:i, s:I, s:I}", "id", dep->id, "batch", cur,
					  "batches", k.last_batch + 1, "failed",
					  (json_int_t)k.failed_total, "pause_ms",
					  (json_int_t)(pol.pause_ms > 0 ? pol.pause_ms : 0)));
		}
		ctl_engine_kick(ctl_server_engine(dp->srv));
		return;
	}
	if (k.failed_total > 0) {
		snprintf(reason, sizeof(reason), "%zu of %zu nodes failed (tolerated)",
			 k.failed_total, k.total);
		finish(dp, dep, "partial", reason, cur);
	} else {
		finish(dp, dep, "succeeded", NULL, cur);
	}
}

static void pass(void *ud)
{
	struct ctl_rollout *dp = ud;
	struct store_deployment **deps = NULL;
	size_t n = 0;

	if (store_deployments_list(ctl_server_state(dp->srv)->store, true, 0, &deps, &n) < 0) {
		log_error("rollout: listing deployments failed: %s",
			  store_errmsg(ctl_server_state(dp->srv)->store));
		return;
	}
	for (size_t i = 0; i < n; i++)
		advance(dp, deps[i]);
	store_deployments_free(deps, n);
}

/* A node that reconnects may have lost its plan (agent restart) or its results (session lost
 * mid-plan): send the plan again; the agent runs it once and re-reports. */
static void node_online(void *ud, const char *node_id)
{
	struct ctl_rollout *dp = ud;
	struct store *store = ctl_server_state(dp->srv)->store;
	struct store_deployment **deps = NULL;
	size_t n = 0;

	if (store_deployments_list(store, true, 0, &deps, &n) < 0)
		return;
	/* One row per active deployment (its primary key), not every node of each. */
	for (size_t i = 0; i < n; i++) {
		struct store_deploy_node *node = NULL;
		char *plan = NULL, why[512];
		int steps = 0;

		if (store_deploy_node_get(store, deps[i]->id, node_id, &node) < 0)
			continue;
		if (strcmp(node->state, "sent") == 0 && reachable(dp, deps[i], node)) {
			const struct playbook *pb = pb_get(dp, deps[i]->id, why, sizeof(why));

			if (!pb ||
			    render_for_node(dp, pb, node_id, &plan, &steps, why, sizeof(why)) < 0)
				render_failed(dp, deps[i], node, why);
			else
				send_plan(dp, deps[i], node, plan, steps, true);
		}
		free(plan);
		store_deploy_nodes_free(node, 1);
	}
	store_deployments_free(deps, n);
}

int ctl_rollout_new(struct ctl_server *srv, int64_t apply_timeout_ms, int64_t grace_ms,
		    struct ctl_rollout **ret)
{
	struct ctl_rollout *dp = calloc(1, sizeof(*dp));

	if (!dp)
		return -ENOMEM;
	dp->srv = srv;
	dp->apply_timeout_ms = apply_timeout_ms > 0 ? apply_timeout_ms : 30 * 60 * 1000;
	dp->grace_until_mono_ms = util_now_mono_ms() + grace_ms;
	*ret = dp;
	return 0;
}

void ctl_rollout_free(struct ctl_rollout *dp)
{
	if (!dp)
		return;
	while (dp->pauses) {
		struct deploy_pause *p = dp->pauses;

		dp->pauses = p->next;
		free(p);
	}
	while (dp->pbs)
		pb_drop(dp, dp->pbs->id);
	free(dp);
}

static bool one_of(const char *v, const char *const *set)
{
	for (; *set; set++)
		if (strcmp(v, *set) == 0)
			return true;
	return false;
}

/* A field a node sent that breaks the protocol's limits: refused (acknowledged, not stored,
 * answered with an Error); the session goes on. */
static void refuse_field(struct ctl_outcome *o, const char *id, const char *what)
{
	o->verdict = CTL_REFUSE;
	o->err_code = "invalid_field";
	snprintf(o->target, sizeof(o->target), "%.64s", ctl_valid_text(id, CTL_ID_MAX) ? id : "");
	snprintf(o->why, sizeof(o->why), "%s", what);
}

static void report_outcome(struct ctl_server *srv, struct ctl_outcome *o, int r, const char *id,
			   const char *why, const char *what)
{
	if (r == STORE_REPORT_STORED || r == STORE_REPORT_DUPLICATE) {
		o->verdict = CTL_DONE;
	} else if (r == -RY_E_REFUSED) {
		o->verdict = CTL_REFUSE;
		o->err_code = "report_refused";
		snprintf(o->target, sizeof(o->target), "%s", id);
		snprintf(o->why, sizeof(o->why), "%s", why);
	} else {
		ctl_outcome_store_error(srv, o, r, what);
	}
}

static void on_step_event(struct ctl_server *srv, struct ctl_session *s,
			  const Railyard__V1__AgentMessage *m, struct ctl_outcome *o)
{
	const Railyard__V1__StepEvent *ev = m->step_event;
	const char *node_id = ctl_session_node_id(s), *hostname = ctl_session_hostname(s);
	static const char *const statuses[] = {"ok",	  "changed",   "failed",
					       "skipped", "rebooting", NULL};
	struct store_step_result res = {0};
	char why[512] = "";
	int r;

	if (!ctl_valid_text(ev->deployment_id, CTL_ID_MAX)) {
		refuse_field(o, NULL,
			     "StepEvent: deployment_id must be 1-64 printable "
			     "bytes");
		return;
	}
	if (ev->index >= CTL_STEPS_MAX || !ctl_valid_text(ev->name, CTL_NAME_MAX) ||
	    !one_of(ev->status, statuses) || ev->duration_ms < 0) {
		refuse_field(o, ev->deployment_id,
			     "StepEvent: index, name, status or duration out of range");
		return;
	}
	if (strlen(ev->diff) > CTL_DIFF_MAX || strlen(ev->message) > CTL_MESSAGE_MAX) {
		refuse_field(o, ev->deployment_id,
			     "StepEvent: diff over 256 KiB or message over 64 KiB");
		return;
	}
	if (strcmp(ev->status, "rebooting") == 0) {
		/* Not a result: the node says it goes down at this step. Whether that step is a
		 * reboot, and how long it may take, the rollout pass judges from the playbook. */
		r = store_report_rebooting(ctl_server_state(srv)->store, ev->deployment_id, node_id,
					   (int)ev->index, ev->name, util_now_unix_ms(), why,
					   sizeof(why));
		if (r == STORE_REPORT_STORED) {
			log_info("deployment %s: node %s reboots at step %u (\"%s\")",
				 ev->deployment_id, hostname, ev->index + 1, ev->name);
			ctl_events_emit(
				ctl_server_events(srv), "deployment.step", ctl_session_cluster(s),
				json_pack("{s:s, s:s, s:s, s:i, s:s, s:s}", "id", ev->deployment_id,
					  "node", node_id, "hostname", hostname, "index",
					  (int)ev->index, "name", ev->name, "status", ev->status));
		}
		report_outcome(srv, o, r, ev->deployment_id, why, "storing a node's reboot");
		return;
	}
	res.name = ev->name;
	res.status = ev->status;
	res.diff = ev->diff;
	res.message = ev->message;
	res.idx = (int)ev->index;
	res.duration_ms = ev->duration_ms;
	r = store_report_step(ctl_server_state(srv)->store, ev->deployment_id, node_id, &res, why,
			      sizeof(why));
	if (r == STORE_REPORT_STORED)
		ctl_events_emit(ctl_server_events(srv), "deployment.step", ctl_session_cluster(s),
				json_pack("{s:s, s:s, s:s, s:i, s:s, s:s}", "id", ev->deployment_id,
					  "node", node_id, "hostname", hostname, "index",
					  (int)ev->index, "name", ev->name, "status", ev->status));
	if (r == STORE_REPORT_DUPLICATE)
		log_debug("node %s: step %u of %s again (a re-send): already stored", hostname,
			  ev->index, ev->deployment_id);
	report_outcome(srv, o, r, ev->deployment_id, why, "storing a step result");
}

static void on_apply_done(struct ctl_server *srv, struct ctl_session *s,
			  const Railyard__V1__AgentMessage *m, struct ctl_outcome *o)
{
	const Railyard__V1__ApplyDone *d = m->apply_done;
	const char *node_id = ctl_session_node_id(s), *hostname = ctl_session_hostname(s);
	static const char *const statuses[] = {"succeeded", "failed", NULL};
	char why[512] = "";
	int counts[4];
	int r;

	if (!ctl_valid_text(d->deployment_id, CTL_ID_MAX)) {
		refuse_field(o, NULL,
			     "ApplyDone: deployment_id must be 1-64 printable "
			     "bytes");
		return;
	}
	if (!one_of(d->status, statuses) || strlen(d->message) > CTL_MESSAGE_MAX ||
	    d->ok > CTL_STEPS_MAX || d->changed > CTL_STEPS_MAX || d->failed > CTL_STEPS_MAX ||
	    d->skipped > CTL_STEPS_MAX) {
		refuse_field(o, d->deployment_id,
			     "ApplyDone: status, message or counts out of range");
		return;
	}
	counts[0] = (int)d->ok;
	counts[1] = (int)d->changed;
	counts[2] = (int)d->failed;
	counts[3] = (int)d->skipped;
	r = store_report_apply_done(ctl_server_state(srv)->store, d->deployment_id, node_id,
				    d->status, d->message[0] ? d->message : NULL, counts,
				    util_now_unix_ms(), why, sizeof(why));
	if (r == STORE_REPORT_STORED) {
		log_info("deployment %s: node %s %s (ok %u, changed %u, failed %u, skipped "
			 "%u)%s%s",
			 d->deployment_id, hostname, d->status, d->ok, d->changed, d->failed,
			 d->skipped, d->message[0] ? ": " : "", d->message);
		ctl_events_emit(ctl_server_events(srv), "deployment.node", ctl_session_cluster(s),
				json_pack("{s:s, s:s, s:s, s:s, s:s?}", "id", d->deployment_id,
					  "node", node_id, "hostname", hostname, "state", d->status,
					  "message", d->message[0] ? d->message : NULL));
		o->kick = true;
	} else if (r == STORE_REPORT_DUPLICATE) {
		log_debug("node %s: the end of %s again (a re-send): already stored", hostname,
			  d->deployment_id);
	}
	report_outcome(srv, o, r, d->deployment_id, why, "storing the end of a plan");
}

static const struct ctl_pass rollout_pass = {
	.name = "rollout",
	.run = pass,
	.node_online = node_online,
};

int ctl_rollout_register(struct ctl_rollout *dp, struct ctl_engine *e)
{
	int r = ctl_engine_add_pass(e, &rollout_pass, dp);

	if (r >= 0)
		r = ctl_engine_handle_grouped(e, RAILYARD__V1__AGENT_MESSAGE__BODY_STEP_EVENT,
					      on_step_event);
	if (r >= 0)
		r = ctl_engine_handle_grouped(e, RAILYARD__V1__AGENT_MESSAGE__BODY_APPLY_DONE,
					      on_apply_done);
	return r;
}
