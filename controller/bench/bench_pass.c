/* Benchmark runs between two nodes, driven by the serving controller from the database: send
 * the server side its RunBench, wait for BenchReady with the port, send the client side its
 * RunBench pointing at that port, store both results. A GPU check (kind "gpu") has one side:
 * its node is sent the client order, and that side's result ends the run. A cancel request (`bench
 * cancel`) or a failed side sends Cancel to the sides still running. A pass of the engine's tick
 * thread; the agents' reports arrive on its ingest worker. */
#include "controller/bench/bench.h"
#include "controller/engine/engine.h"
#include "controller/events.h"
#include "controller/session.h"
#include "controller/state.h"
#include "controller/store/store.h"
#include "controller/store/store_bench.h"
#include "controller/store/store_nodes.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Beyond the run's own deadline (which the agents enforce), how long the controller waits for
 * their reports before it gives up on them. */
#define BENCH_REPORT_GRACE_MS 5000
/* A side whose agent has been disconnected this long fails the run (a reconnect within it
 * carries on: the agent keeps running its side and its outbox keeps the reports). Longer than
 * an agent's reconnect back-off (30 s by default), so a controller restart loses no run. */
#define BENCH_OFFLINE_GRACE_MS 45000

/* The parameters one side is sent: params_json with its "sides" entry (per-side device and
 * port, e.g. rail i of each node) merged in. New string (caller frees); NULL on failure. */
static char *side_params(const char *params_json, bool server)
{
	json_t *p = json_loads(params_json, 0, NULL), *sides, *mine;
	char *s = NULL;

	if (!json_is_object(p))
		goto out;
	sides = json_object_get(p, "sides");
	mine = json_object_get(sides, server ? "server" : "client");
	if (json_is_object(mine))
		json_object_update(p, mine);
	json_object_del(p, "sides");
	s = json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS);
out:
	json_decref(p);
	return s;
}

/* A GPU check (kind "gpu"): one side, the "client", on its node; no server, no port. */
static bool one_sided(const struct store_bench_run *b)
{
	return b->kind && (strcmp(b->kind, "gpu") == 0 || strcmp(b->kind, "collective") == 0);
}

/* Does a stored result document say ok? */
static bool result_ok(const char *result_json)
{
	json_t *doc = json_loads(result_json, 0, NULL);
	bool ok = json_is_true(json_object_get(doc, "ok"));

	json_decref(doc);
	return ok;
}

static int send_run(struct ctl_server *srv, const struct store_bench_run *b, bool server,
		    const char *peer)
{
	Railyard__V1__ControllerMessage m = RAILYARD__V1__CONTROLLER_MESSAGE__INIT;
	Railyard__V1__RunBench rb = RAILYARD__V1__RUN_BENCH__INIT;
	int64_t left = b->created_at_ms + b->deadline_ms - util_now_unix_ms();
	char *params = side_params(b->params_json, server);
	int r;

	if (!params)
		return -ENOMEM;
	rb.bench_id = b->id;
	rb.role = (char *)(server ? "server" : "client");
	rb.peer = (char *)(peer ? peer : "");
	rb.params_json = params;
	rb.deadline_ms = (uint32_t)(left > 1000 ? left : 1000);
	m.body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_RUN_BENCH;
	m.run_bench = &rb;
	r = ctl_session_send(srv, server ? b->server_node : b->client_node, &m);
	free(params);
	return r;
}

/* Tell a node to stop its side of a run. Best effort: a node that is offline has its own
 * deadline, and ignores a Cancel for a run it does not have. */
static void send_cancel(struct ctl_server *srv, const char *node, const char *bench_id)
{
	Railyard__V1__ControllerMessage m = RAILYARD__V1__CONTROLLER_MESSAGE__INIT;
	Railyard__V1__Cancel c = RAILYARD__V1__CANCEL__INIT;

	c.bench_id = (char *)bench_id;
	m.body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_CANCEL;
	m.cancel = &c;
	if (ctl_session_send(srv, node, &m) < 0)
		log_debug("bench %s: Cancel not sent to %s (offline)", bench_id, node);
}

/* Stop the sides that were told to run (by state): the server from server_sent on, the client
 * once client_sent. */
static void cancel_sides(struct ctl_server *srv, const struct store_bench_run *b)
{
	/* A collective: every node of the job may run one of its daemons. */
	if (b->kind && strcmp(b->kind, "collective") == 0) {
		json_t *p = json_loads(b->params_json, 0, NULL), *h;
		size_t i;

		json_array_foreach(json_object_get(p, "hosts"), i, h)
		{
			const char *node = json_string_value(json_object_get(h, "node"));

			if (node && strcmp(node, b->client_node) != 0)
				send_cancel(srv, node, b->id);
		}
		json_decref(p);
		ctl_launch_forget(b->id);
	}
	if (strcmp(b->state, "pending") != 0)
		send_cancel(srv, b->server_node, b->id);
	if (strcmp(b->state, "client_sent") == 0)
		send_cancel(srv, b->client_node, b->id);
}

static void fail_run(struct ctl_server *srv, const struct store_bench_run *b, const char *why)
{
	if (store_bench_update(ctl_server_state(srv)->store, b->id, "failed", NULL, 0, NULL, NULL,
			       why, util_now_unix_ms()) == 1) {
		log_warn("bench %s failed: %s", b->id, why);
		cancel_sides(srv, b);
	}
}

/* A side that was told to run and whose agent has been gone for BENCH_OFFLINE_GRACE_MS: its
 * host name, for the failure. */
static bool side_lost(struct ctl_server *srv, const struct store_bench_run *b, int64_t now,
		      char *who, size_t len)
{
	const char *sides[2] = {b->server_node, b->client_node};
	int told = strcmp(b->state, "client_sent") == 0 ? 2 : 1;

	for (int i = 0; i < told; i++) {
		struct store_node *n = NULL;

		if (ctl_node_offline_ms(srv, sides[i], now) <= BENCH_OFFLINE_GRACE_MS)
			continue;
		snprintf(who, len, "%s", sides[i]);
		if (store_node_get(ctl_server_state(srv)->store, sides[i], &n) == 0)
			snprintf(who, len, "%s", n->hostname);
		store_node_free(n);
		return true;
	}
	return false;
}

static void advance(struct ctl_server *srv, const struct store_bench_run *b)
{
	struct store *store = ctl_server_state(srv)->store;
	int64_t now = util_now_unix_ms();
	char host[256], peer[300];

	if (b->cancel_requested_ms) {
		if (store_bench_update(store, b->id, "cancelled", NULL, 0, NULL, NULL,
				       "cancelled by operator", now) == 1) {
			log_info("bench %s: cancelled by operator (was %s)", b->id, b->state);
			cancel_sides(srv, b);
		}
		return;
	}
	/* Reports held for the database (a full disk) are not late: wait for them first. */
	if (now > b->created_at_ms + b->deadline_ms + BENCH_REPORT_GRACE_MS &&
	    ctl_engine_store_settled(ctl_server_engine(srv), CTL_STORE_SETTLE_MS)) {
		/* The client's measurement stands even if the server never reported. */
		if (b->result_json && result_ok(b->result_json)) {
			if (store_bench_update(ctl_server_state(srv)->store, b->id, "succeeded",
					       NULL, 0, NULL, NULL, NULL, now) == 1)
				log_warn("bench %s: the server side never reported", b->id);
		} else {
			fail_run(srv, b, "no result before the deadline");
		}
		return;
	}
	if (strcmp(b->state, "pending") != 0 && side_lost(srv, b, now, host, sizeof(host))) {
		char why[320];

		snprintf(why, sizeof(why), "offline: %s disconnected during the run", host);
		fail_run(srv, b, why);
		return;
	}
	if (strcmp(b->state, "pending") == 0 && one_sided(b)) {
		if (ctl_session_peer_host(srv, b->client_node, host, sizeof(host)) < 0)
			return;
		if (store_bench_update(store, b->id, "client_sent", NULL, 0, NULL, NULL, NULL,
				       now) != 1)
			return;
		if (send_run(srv, b, false, NULL) < 0) {
			if (store_bench_update(store, b->id, "pending", NULL, 0, NULL, NULL, NULL,
					       now) < 0)
				log_error("bench %s: storing it pending again failed", b->id);
			return;
		}
		log_info("bench %s: GPU check sent to %s", b->id, b->client_node);
	} else if (strcmp(b->state, "pending") == 0) {
		/* Both ends must be online; until the deadline, wait for them. */
		if (ctl_session_peer_host(srv, b->client_node, host, sizeof(host)) < 0 ||
		    (!b->server_address &&
		     ctl_session_peer_host(srv, b->server_node, host, sizeof(host)) < 0))
			return;
		/* Stored before it is sent: a side's report (a refusal comes back at once) is
		 * accepted only once that side was sent its order. */
		if (store_bench_update(store, b->id, "server_sent", b->server_address ? NULL : host,
				       0, NULL, NULL, NULL, now) != 1)
			return;
		if (send_run(srv, b, true, NULL) < 0) {
			if (store_bench_update(store, b->id, "pending", NULL, 0, NULL, NULL, NULL,
					       now) < 0)
				log_error("bench %s: storing it pending again failed", b->id);
			return;
		}
		log_info("bench %s: server side sent to %s", b->id, b->server_node);
	} else if (strcmp(b->state, "server_ready") == 0) {
		snprintf(peer, sizeof(peer), "%s:%d", b->server_address, b->server_port);
		if (store_bench_update(store, b->id, "client_sent", NULL, 0, NULL, NULL, NULL,
				       now) != 1)
			return;
		if (send_run(srv, b, false, peer) < 0) {
			if (store_bench_update(store, b->id, "server_ready", NULL, 0, NULL, NULL,
					       NULL, now) < 0)
				log_error("bench %s: storing it server_ready again failed", b->id);
			return;
		}
		log_info("bench %s: client side sent to %s for %s", b->id, b->client_node, peer);
	}
}

static void pass(void *ud)
{
	struct ctl_server *srv = ud;
	struct store_bench_run **runs = NULL;
	size_t n = 0;

	if (store_bench_list(ctl_server_state(srv)->store, true, 0, &runs, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		advance(srv, runs[i]);
	store_bench_runs_free(runs, n);
}

/* A node that (re)connects is sent again the orders it was told and has not answered: the
 * first may never have left a controller that was killed after storing the state and before
 * the message was written, or a session that broke. The agent keeps the orders it started (by
 * id and role) and ignores a repeat; the results of one it finished are in its outbox. A server
 * is re-sent only until it reported its port, a client until it reported its result. */
static void node_online(void *ud, const char *node_id)
{
	struct ctl_server *srv = ud;
	struct store_bench_run **runs = NULL;
	size_t n = 0;

	if (store_bench_list(ctl_server_state(srv)->store, true, 0, &runs, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct store_bench_run *b = runs[i];
		char peer[300];

		if (b->cancel_requested_ms)
			continue;
		if (strcmp(b->server_node, node_id) == 0 && strcmp(b->state, "server_sent") == 0 &&
		    send_run(srv, b, true, NULL) == 0)
			log_info("bench %s: server side sent again to %s", b->id, node_id);
		if (strcmp(b->client_node, node_id) == 0 && strcmp(b->state, "client_sent") == 0 &&
		    !b->result_json) {
			snprintf(peer, sizeof(peer), "%s:%d",
				 b->server_address ? b->server_address : "", b->server_port);
			if (send_run(srv, b, false, one_sided(b) ? NULL : peer) == 0)
				log_info("bench %s: client side sent again to %s for %s", b->id,
					 node_id, peer);
		}
	}
	store_bench_runs_free(runs, n);
}

static void refuse(struct ctl_outcome *o, const char *bench_id, const char *code, const char *fmt,
		   ...) __attribute__((format(printf, 4, 5)));

static void refuse(struct ctl_outcome *o, const char *bench_id, const char *code, const char *fmt,
		   ...)
{
	va_list ap;

	o->verdict = CTL_REFUSE;
	o->err_code = code;
	snprintf(o->target, sizeof(o->target), "%.64s",
		 bench_id && ctl_valid_text(bench_id, CTL_ID_MAX) ? bench_id : "");
	va_start(ap, fmt);
	vsnprintf(o->why, sizeof(o->why), fmt, ap);
	va_end(ap);
}

/* The run a report is about, when the node takes part in it: 0 with *ret, or a verdict set in o
 * (refused: unknown run, not a participant; retry: database). */
static int participant(struct ctl_server *srv, const char *node_id, const char *bench_id,
		       const char *kind, struct store_bench_run **ret, struct ctl_outcome *o)
{
	struct store_bench_run *b = NULL;
	int r = store_bench_get(ctl_server_state(srv)->store, bench_id, &b);

	if (r == -RY_E_NOT_FOUND) {
		refuse(o, bench_id, "report_refused", "%s for unknown bench %s", kind, bench_id);
		return -1;
	}
	if (r < 0) {
		ctl_outcome_store_error(srv, o, r, "reading a bench run");
		return -1;
	}
	if (strcmp(b->server_node, node_id) != 0 && strcmp(b->client_node, node_id) != 0) {
		refuse(o, bench_id, "report_refused", "node %s is not part of bench %s", node_id,
		       bench_id);
		store_bench_run_free(b);
		return -1;
	}
	*ret = b;
	return 0;
}

static void on_ready(struct ctl_server *srv, struct ctl_session *s,
		     const Railyard__V1__AgentMessage *msg, struct ctl_outcome *o)
{
	const Railyard__V1__BenchReady *m = msg->bench_ready;
	const char *node_id = ctl_session_node_id(s);
	struct store_bench_run *b = NULL;
	int r;

	if (!ctl_valid_text(m->bench_id, CTL_ID_MAX) || m->port == 0 || m->port > 65535) {
		refuse(o, NULL, "invalid_field", "BenchReady: bench_id or port out of range");
		return;
	}
	if (participant(srv, node_id, m->bench_id, "BenchReady", &b, o) < 0)
		return;
	o->verdict = CTL_DONE;
	if (strcmp(b->server_node, node_id) != 0) {
		refuse(o, m->bench_id, "report_refused",
		       "node %s is the client of bench %s, not its server", node_id, m->bench_id);
	} else if (strcmp(b->state, "server_sent") == 0) {
		r = store_bench_update(ctl_server_state(srv)->store, m->bench_id, "server_ready",
				       NULL, (int)m->port, NULL, NULL, NULL, util_now_unix_ms());
		if (r < 0) {
			ctl_outcome_store_error(srv, o, r, "storing BenchReady");
		} else if (r == 1) {
			log_info("bench %s: server %s listening on port %u", m->bench_id, node_id,
				 m->port);
			ctl_engine_kick(ctl_server_engine(srv));
		}
	} else if (strcmp(b->state, "pending") == 0) {
		refuse(o, m->bench_id, "report_refused",
		       "bench %s has not been sent to node %s yet", m->bench_id, node_id);
	} else if (store_bench_state_final(b->state)) {
		log_info("bench %s: BenchReady from %s after the run ended (%s): ignored",
			 m->bench_id, node_id, b->state);
	} else if (b->server_port != (int)m->port) {
		refuse(o, m->bench_id, "report_refused",
		       "bench %s: server already reported port %d, not %u", m->bench_id,
		       b->server_port, m->port);
	} /* else: the same BenchReady again after a reconnect */
	store_bench_run_free(b);
}

static void on_result(struct ctl_server *srv, struct ctl_session *s,
		      const Railyard__V1__AgentMessage *am, struct ctl_outcome *o)
{
	const Railyard__V1__BenchResult *m = am->bench_result;
	const char *node_id = ctl_session_node_id(s);
	struct store *store = ctl_server_state(srv)->store;
	struct store_bench_run *b = NULL;
	const char *bench_id = m->bench_id, *result_json = m->result_json, *stored;
	json_t *doc = NULL;
	const char *msg = NULL;
	int64_t now = util_now_unix_ms();
	bool ok = m->ok, client;
	int r = 0;

	if (!ctl_valid_text(bench_id, CTL_ID_MAX) ||
	    strlen(result_json) > RY_PROTO_BENCH_RESULT_MAX) {
		refuse(o, NULL, "invalid_field",
		       "BenchResult: bench_id or result size out of range");
		return;
	}
	doc = json_loads(result_json, 0, NULL);
	if (!json_is_object(doc)) {
		refuse(o, bench_id, "invalid_field", "BenchResult: result is not a JSON object");
		goto out;
	}
	if (participant(srv, node_id, bench_id, "BenchResult", &b, o) < 0)
		goto out;
	o->verdict = CTL_DONE;
	msg = json_string_value(json_object_get(json_object_get(doc, "error"), "message"));
	if (!msg) /* a collective's error is its message */
		msg = json_string_value(json_object_get(doc, "error"));
	/* A node that is both sides (a loopback) says which one reports; otherwise its node
	 * does, and a role that contradicts it is refused. */
	client = strcmp(node_id, b->client_node) == 0;
	if (m->role && m->role[0]) {
		bool says_client = strcmp(m->role, "client") == 0;

		if ((!says_client && strcmp(m->role, "server") != 0) ||
		    (says_client ? strcmp(node_id, b->client_node) != 0
				 : strcmp(node_id, b->server_node) != 0)) {
			refuse(o, bench_id, "report_refused",
			       "bench %s: node %s is not its %.16s side", bench_id, node_id,
			       m->role);
			goto out;
		}
		client = says_client;
	}
	stored = client ? b->result_json : b->server_result_json;
	if (stored) {
		/* Each side reports once; the same report again is a re-send. */
		if (strcmp(stored, result_json) != 0)
			refuse(o, bench_id, "report_refused",
			       "bench %s: the %s side already reported its result", bench_id,
			       client ? "client" : "server");
		goto out;
	}
	if (store_bench_state_final(b->state)) {
		log_info("bench %s: result from %s after the run ended (%s): ignored", bench_id,
			 node_id, b->state);
		goto out;
	}
	if (client ? strcmp(b->state, "client_sent") != 0 : strcmp(b->state, "pending") == 0) {
		refuse(o, bench_id, "report_refused",
		       "bench %s: its %s side was not started on node %s (%s)", bench_id,
		       client ? "client" : "server", node_id, b->state);
		goto out;
	}
	/* A collective's daemons went through this controller: the launcher's count is checked
	 * against it (every host once), not taken from the node. */
	char claim[200];

	if (client && ok && strcmp(b->kind, "collective") == 0) {
		json_t *p = json_loads(b->params_json, 0, NULL);
		json_t *d = json_object_get(json_object_get(doc, "launch"), "daemons");
		size_t hosts = json_array_size(json_object_get(p, "hosts"));
		unsigned launched = ctl_launch_count(bench_id);

		if (!json_is_integer(d) || json_integer_value(d) != (json_int_t)launched ||
		    launched != hosts) {
			snprintf(claim, sizeof(claim),
				 "the launcher reports %lld daemons; the controller launched %u of "
				 "the job's %zu hosts",
				 json_is_integer(d) ? (long long)json_integer_value(d) : -1LL,
				 launched, hosts);
			ok = false;
			msg = claim;
		}
		json_decref(p);
	}
	/* The run ends when both sides have reported (or either failed): the client measures,
	 * the server adds its receive-side checks. */
	if (client) {
		bool both = b->server_result_json != NULL || one_sided(b);

		r = store_bench_update(store, bench_id,
				       !ok    ? "failed"
				       : both ? "succeeded"
					      : b->state,
				       NULL, 0, result_json, NULL,
				       ok ? NULL : (msg ? msg : "client failed"), now);
	} else {
		const char *state = b->state;

		if (!ok)
			state = "failed";
		else if (b->result_json)
			state = result_ok(b->result_json) ? "succeeded" : "failed";
		r = store_bench_update(store, bench_id, state, NULL, 0, NULL, result_json,
				       ok ? NULL : (msg ? msg : "server failed"), now);
	}
	if (r < 0) {
		ctl_outcome_store_error(srv, o, r, "storing a bench result");
		goto out;
	}
	if (r == 1)
		log_info("bench %s: %s result from %s%s%s", bench_id, ok ? "ok" : "failed", node_id,
			 msg ? ": " : "", msg ? msg : "");
	/* One side failed: the other may still wait for it (a server for its client, a client
	 * for a dead server's data) until the deadline; stop it now. */
	if (r == 1 && !ok)
		send_cancel(srv, client ? b->server_node : b->client_node, bench_id);
	ctl_engine_kick(ctl_server_engine(srv));
out:
	store_bench_run_free(b);
	json_decref(doc);
}

static const struct ctl_pass bench_pass = {
	.name = "bench",
	.run = pass,
	.node_online = node_online,
};

int ctl_bench_register(struct ctl_server *srv, struct ctl_engine *e)
{
	int r = ctl_engine_add_pass(e, &bench_pass, srv);

	if (r >= 0)
		r = ctl_engine_handle(e, RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_READY, on_ready);
	if (r >= 0)
		r = ctl_engine_handle(e, RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_RESULT, on_result);
	if (r >= 0)
		r = ctl_launch_register(e);
	return r;
}
