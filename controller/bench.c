/* Benchmark runs between two nodes, driven by the serving controller from the database: send
 * the server side its RunBench, wait for BenchReady with the port, send the client side its
 * RunBench pointing at that port, store both results. A cancel request (`bench cancel`) or a
 * failed side sends Cancel to the sides still running. Runs on the engine thread (deploy.c);
 * the agents' reports arrive on completion-queue threads. */
#include "controller/deploy.h"
#include "controller/server_int.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Beyond the run's own deadline (which the agents enforce), how long the controller waits for
 * their reports before it gives up on them. */
#define BENCH_REPORT_GRACE_MS 5000

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

	rb.bench_id = b->id;
	rb.role = (char *)(server ? "server" : "client");
	rb.peer = (char *)(peer ? peer : "");
	rb.params_json = b->params_json;
	rb.deadline_ms = (uint32_t)(left > 1000 ? left : 1000);
	m.body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_RUN_BENCH;
	m.run_bench = &rb;
	return ctl_session_send(srv, server ? b->server_node : b->client_node, &m);
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
	if (strcmp(b->state, "pending") != 0)
		send_cancel(srv, b->server_node, b->id);
	if (strcmp(b->state, "client_sent") == 0)
		send_cancel(srv, b->client_node, b->id);
}

static void fail_run(struct ctl_server *srv, const struct store_bench_run *b, const char *why)
{
	if (store_bench_update(srv->state->store, b->id, "failed", NULL, 0, NULL, NULL, why,
			       util_now_unix_ms()) == 1) {
		log_warn("bench %s failed: %s", b->id, why);
		cancel_sides(srv, b);
	}
}

static void advance(struct ctl_server *srv, const struct store_bench_run *b)
{
	struct store *store = srv->state->store;
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
	if (now > b->created_at_ms + b->deadline_ms + BENCH_REPORT_GRACE_MS) {
		/* The client's measurement stands even if the server never reported. */
		if (b->result_json && result_ok(b->result_json)) {
			if (store_bench_update(srv->state->store, b->id, "succeeded", NULL, 0, NULL,
					       NULL, NULL, now) == 1)
				log_warn("bench %s: the server side never reported", b->id);
		} else {
			fail_run(srv, b, "no result before the deadline");
		}
		return;
	}
	if (strcmp(b->state, "pending") == 0) {
		/* Both ends must be online; until the deadline, wait for them. */
		if (ctl_session_peer_host(srv, b->client_node, host, sizeof(host)) < 0 ||
		    (!b->server_address &&
		     ctl_session_peer_host(srv, b->server_node, host, sizeof(host)) < 0))
			return;
		if (send_run(srv, b, true, NULL) < 0)
			return;
		if (store_bench_update(store, b->id, "server_sent", b->server_address ? NULL : host,
				       0, NULL, NULL, NULL, now) == 1)
			log_info("bench %s: server side sent to %s", b->id, b->server_node);
	} else if (strcmp(b->state, "server_ready") == 0) {
		snprintf(peer, sizeof(peer), "%s:%d", b->server_address, b->server_port);
		if (send_run(srv, b, false, peer) < 0)
			return;
		if (store_bench_update(store, b->id, "client_sent", NULL, 0, NULL, NULL, NULL,
				       now) == 1)
			log_info("bench %s: client side sent to %s for %s", b->id, b->client_node,
				 peer);
	}
}

void ctl_bench_pass(struct ctl_server *srv)
{
	struct store_bench_run **runs = NULL;
	size_t n = 0;

	if (store_bench_list(srv->state->store, true, 0, &runs, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		advance(srv, runs[i]);
	store_bench_runs_free(runs, n);
}

void ctl_bench_on_ready(struct ctl_server *srv, const char *node_id, const char *bench_id, int port)
{
	struct store_bench_run *b = NULL;

	if (store_bench_get(srv->state->store, bench_id, &b) < 0 ||
	    strcmp(b->server_node, node_id) != 0) {
		log_warn("node %s: BenchReady for unknown bench %.64s ignored", node_id, bench_id);
		store_bench_run_free(b);
		return;
	}
	if (strcmp(b->state, "server_sent") == 0 &&
	    store_bench_update(srv->state->store, bench_id, "server_ready", NULL, port, NULL, NULL,
			       NULL, util_now_unix_ms()) == 1) {
		log_info("bench %s: server %s listening on port %d", bench_id, node_id, port);
		ctl_deployer_kick(srv->deployer);
	}
	store_bench_run_free(b);
}

void ctl_bench_on_result(struct ctl_server *srv, const char *node_id, const char *bench_id, bool ok,
			 const char *result_json)
{
	struct store *store = srv->state->store;
	struct store_bench_run *b = NULL;
	json_t *doc = json_loads(result_json, 0, NULL);
	const char *msg = NULL;
	int64_t now = util_now_unix_ms();
	int r = 0;

	if (!json_is_object(doc)) {
		log_warn("node %s: bench %.64s result is not a JSON object", node_id, bench_id);
		goto out;
	}
	msg = json_string_value(json_object_get(json_object_get(doc, "error"), "message"));
	if (store_bench_get(store, bench_id, &b) < 0) {
		log_warn("node %s: result for unknown bench %.64s ignored", node_id, bench_id);
		goto out;
	}
	/* The run ends when both sides have reported (or either failed): the client measures,
	 * the server adds its receive-side checks. */
	if (strcmp(node_id, b->client_node) == 0) {
		bool both = b->server_result_json != NULL;

		r = store_bench_update(store, bench_id,
				       !ok    ? "failed"
				       : both ? "succeeded"
					      : b->state,
				       NULL, 0, result_json, NULL,
				       ok ? NULL : (msg ? msg : "client failed"), now);
	} else if (strcmp(node_id, b->server_node) == 0) {
		const char *state = b->state;

		if (!ok)
			state = "failed";
		else if (b->result_json)
			state = result_ok(b->result_json) ? "succeeded" : "failed";
		r = store_bench_update(store, bench_id, state, NULL, 0, NULL, result_json,
				       ok ? NULL : (msg ? msg : "server failed"), now);
	} else {
		log_warn("node %s: result for bench %.64s it is not part of", node_id, bench_id);
	}
	if (r == 1)
		log_info("bench %s: %s result from %s%s%s", bench_id, ok ? "ok" : "failed", node_id,
			 msg ? ": " : "", msg ? msg : "");
	/* One side failed: the other may still wait for it (a server for its client, a client
	 * for a dead server's data) until the deadline; stop it now. */
	if (r == 1 && !ok)
		send_cancel(srv,
			    strcmp(node_id, b->client_node) == 0 ? b->server_node : b->client_node,
			    bench_id);
	ctl_deployer_kick(srv->deployer);
out:
	store_bench_run_free(b);
	json_decref(doc);
}
