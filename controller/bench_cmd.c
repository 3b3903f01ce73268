/* `railyard-controller bench run|list|show|cancel`: order a benchmark between two nodes (stored
 * for the serving controller to drive), follow it, print its result, or cancel it. */
#include "controller/admin.h"
#include "controller/state.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long `bench cancel` (and an interrupted `bench run`) waits for the serving controller to
 * carry the cancel out: it acts within one engine pass. */
#define CANCEL_WAIT_MS 15000

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	interrupted = sig;
}

/* Follow run id until it is final or until deadline (monotonic ms); *ret gets its last state
 * (caller frees). A signal (when catch_signals) requests its cancel once and keeps following
 * for CANCEL_WAIT_MS. */
static int follow(struct ctl_state *st, const char *id, int64_t deadline, bool catch_signals,
		  struct store_bench_run **ret)
{
	struct store_bench_run *b = NULL;
	bool asked = false;
	int r;

	for (;;) {
		r = store_bench_get(st->store, id, &b);
		if (r < 0)
			return r;
		if (store_bench_state_final(b->state) || util_now_mono_ms() > deadline)
			break;
		if (catch_signals && interrupted && !asked) {
			asked = true;
			fprintf(stderr, "bench %s: interrupted; cancelling it\n", id);
			if (store_bench_request_cancel(st->store, id, util_now_unix_ms()) < 0)
				break;
			deadline = util_now_mono_ms() + CANCEL_WAIT_MS;
		}
		store_bench_run_free(b);
		b = NULL;
		usleep(200 * 1000);
	}
	*ret = b;
	return 0;
}

/* One line per message size: latency percentiles or bandwidth. */
static void print_results(FILE *out, const char *result_json)
{
	json_t *doc = result_json ? json_loads(result_json, 0, NULL) : NULL;
	json_t *res = json_object_get(doc, "results"), *r;
	size_t i;

	json_array_foreach(res, i, r)
	{
		json_t *lat = json_object_get(r, "latency"), *bw = json_object_get(r, "bw");
		json_int_t size = json_integer_value(json_object_get(r, "size"));

		if (lat)
			fprintf(out,
				"  %8lld B  lat us: min %.2f  p50 %.2f  p99 %.2f  p99.9 %.2f  max "
				"%.2f"
				"  (%lld samples)\n",
				(long long)size, json_real_value(json_object_get(lat, "min")),
				json_real_value(json_object_get(lat, "p50")),
				json_real_value(json_object_get(lat, "p99")),
				json_real_value(json_object_get(lat, "p99_9")),
				json_real_value(json_object_get(lat, "max")),
				(long long)json_integer_value(json_object_get(lat, "count")));
		if (bw)
			fprintf(out, "  %8lld B  bw: %.3f Gb/s  %.0f msg/s\n", (long long)size,
				json_real_value(json_object_get(bw, "gbps")),
				json_real_value(json_object_get(bw, "msg_rate")));
	}
	json_decref(doc);
}

static void print_run(FILE *out, const struct store_bench_run *b, bool json)
{
	if (json) {
		json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I}", "id", b->id,
				      "kind", b->kind, "transport", b->transport, "client_node",
				      b->client_node, "server_node", b->server_node, "state",
				      b->state, "created_at_ms", (json_int_t)b->created_at_ms,
				      "finished_at_ms", (json_int_t)b->finished_at_ms);
		char *s;

		json_object_set_new(o, "error", b->error ? json_string(b->error) : json_null());
		json_object_set_new(o, "server_address",
				    b->server_address ? json_string(b->server_address)
						      : json_null());
		json_object_set_new(o, "server_port",
				    b->server_port ? json_integer(b->server_port) : json_null());
		json_object_set_new(o, "cancel_requested_at_ms",
				    b->cancel_requested_ms ? json_integer(b->cancel_requested_ms)
							   : json_null());
		json_object_set_new(o, "params", json_loads(b->params_json, 0, NULL));
		json_object_set_new(o, "result",
				    b->result_json ? json_loads(b->result_json, 0, NULL)
						   : json_null());
		json_object_set_new(o, "server_result",
				    b->server_result_json
					    ? json_loads(b->server_result_json, 0, NULL)
					    : json_null());
		s = json_dumps(o, JSON_INDENT(2));
		if (s)
			fprintf(out, "%s\n", s);
		free(s);
		json_decref(o);
		return;
	}
	util_fprintf_safe(out, "bench %s: %s %s, %s -> %s: %s%s%s\n", b->id, b->kind, b->transport,
			  b->client_node, b->server_node, b->state, b->error ? ": " : "",
			  b->error ? b->error : "");
	print_results(out, b->result_json);
}

int ctl_cmd_bench_run(const char *state_dir, const struct ctl_bench_opts *o, FILE *out)
{
	struct store_node *from = NULL, *to = NULL;
	struct store_bench_run *b = NULL;
	struct ctl_state *st = NULL;
	char id[20], hex[9], *params = NULL;
	unsigned char rnd[4];
	int64_t deadline;
	json_t *p;
	int rc = 1;

	if (ctl_open_state(state_dir, false, &st) < 0) {
		return 1;
	}
	if (store_node_get(st->store, o->from, &from) < 0 ||
	    store_node_get(st->store, o->to, &to) < 0) {
		log_error("bench: unknown node %s", from ? o->to : o->from);
		goto out;
	}
	if (strcmp(from->id, to->id) == 0) {
		log_error("bench: --from and --to name the same node (%s): a benchmark between "
			  "nodes needs two",
			  from->hostname);
		rc = 2;
		goto out;
	}
	p = json_pack("{s:s, s:s}", "kind", o->kind, "transport", o->transport);
	if (o->op)
		json_object_set_new(p, "op", json_string(o->op));
	if (o->size)
		json_object_set_new(p, "size", json_integer(o->size));
	if (o->iters)
		json_object_set_new(p, "iters", json_integer(o->iters));
	if (o->duration_s)
		json_object_set_new(p, "duration_s", json_integer(o->duration_s));
	if (o->qps)
		json_object_set_new(p, "qps", json_integer(o->qps));
	if (o->device)
		json_object_set_new(p, "device", json_string(o->device));
	if (o->gid_index >= -1)
		json_object_set_new(p, "gid_index", json_integer(o->gid_index));
	if (o->ib_port >= 0)
		json_object_set_new(p, "ib_port", json_integer(o->ib_port));
	if (o->tclass >= 0)
		json_object_set_new(p, "traffic_class", json_integer(o->tclass));
	if (o->sl >= 0)
		json_object_set_new(p, "service_level", json_integer(o->sl));
	if (o->sweep)
		json_object_set_new(p, "sweep", json_true());
	if (o->bidir)
		json_object_set_new(p, "bidir", json_true());
	if (o->check_data)
		json_object_set_new(p, "check_data", json_true());
	if (o->rdma_cm)
		json_object_set_new(p, "rdma_cm", json_true());
	params = json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(p);
	if (!params || util_random_bytes(rnd, sizeof(rnd)) < 0)
		goto out;
	util_hex(rnd, sizeof(rnd), hex);
	snprintf(id, sizeof(id), "b-%s", hex);
	if (store_bench_create(st->store, id, o->kind, o->transport, from->id, to->id, params,
			       o->timeout_ms, util_now_unix_ms()) < 0 ||
	    (o->server_address && store_bench_update(st->store, id, "pending", o->server_address, 0,
						     NULL, NULL, NULL, util_now_unix_ms()) < 0)) {
		log_error("bench: storing the run failed: %s", store_errmsg(st->store));
		goto out;
	}
	/* With --json stdout carries the document alone. */
	fprintf(o->json ? stderr : out, "bench %s: %s over %s, client %s, server %s\n", id, o->kind,
		o->transport, from->hostname, to->hostname);
	fflush(o->json ? stderr : out); /* the id, before a long wait, even into a pipe */
	if (o->no_wait) {
		rc = 0;
		goto out;
	}
	/* The run ends by itself at its deadline; follow it a little longer for the reports.
	 * Ctrl-C cancels it rather than leaving it behind. */
	sigaction(SIGINT, &(struct sigaction){.sa_handler = on_interrupt}, NULL);
	sigaction(SIGTERM, &(struct sigaction){.sa_handler = on_interrupt}, NULL);
	deadline = util_now_mono_ms() + o->timeout_ms + 20000;
	if (follow(st, id, deadline, true, &b) < 0)
		goto out;
	print_run(out, b, o->json);
	rc = interrupted ? 130 : strcmp(b->state, "succeeded") == 0 ? 0 : 1;
out:
	store_bench_run_free(b);
	store_node_free(from);
	store_node_free(to);
	free(params);
	ctl_state_free(st);
	return rc;
}

int ctl_cmd_bench_show(const char *state_dir, const char *id, bool json, FILE *out)
{
	struct ctl_state *st = NULL;
	struct store_bench_run *b = NULL, **v = NULL;
	size_t n = 0;
	int rc = 1;

	if (ctl_open_state(state_dir, false, &st) < 0) {
		return 1;
	}
	if (id) {
		if (store_bench_get(st->store, id, &b) < 0) {
			log_error("bench: %s not found", id);
			goto out;
		}
		print_run(out, b, json);
	} else {
		if (store_bench_list(st->store, false, 50, &v, &n) < 0)
			goto out;
		for (size_t i = 0; i < n; i++)
			util_fprintf_safe(out, "%-11s %-4s %-6s %-16s %-16s %-12s %s\n", v[i]->id,
					  v[i]->kind, v[i]->transport, v[i]->client_node,
					  v[i]->server_node, v[i]->state,
					  v[i]->error ? v[i]->error : "");
	}
	rc = 0;
out:
	store_bench_run_free(b);
	store_bench_runs_free(v, n);
	ctl_state_free(st);
	return rc;
}

int ctl_cmd_bench_cancel(const char *state_dir, const char *id, bool wait, FILE *out)
{
	struct ctl_state *st = NULL;
	struct store_bench_run *b = NULL;
	int rc = 1, r;

	if (ctl_open_state(state_dir, false, &st) < 0) {
		return 1;
	}
	r = store_bench_request_cancel(st->store, id, util_now_unix_ms());
	if (r == -RY_E_NOT_FOUND) {
		log_error("bench cancel: no benchmark run %s", id);
		goto out;
	}
	if (r < 0) {
		log_error("bench cancel: %s: %s", id, store_errmsg(st->store));
		goto out;
	}
	if (r == 0 && store_bench_get(st->store, id, &b) == 0) {
		log_error("bench cancel: %s has already finished (%s)", id, b->state);
		goto out;
	}
	if (!wait) {
		fprintf(out, "bench %s: cancel requested\n", id);
		rc = 0;
		goto out;
	}
	if (follow(st, id, util_now_mono_ms() + CANCEL_WAIT_MS, false, &b) < 0)
		goto out;
	if (strcmp(b->state, "cancelled") == 0) {
		fprintf(out, "bench %s: cancelled\n", id);
		rc = 0;
	} else if (store_bench_state_final(b->state)) {
		fprintf(out, "bench %s: ended %s before the cancel took effect\n", id, b->state);
	} else {
		fprintf(out,
			"bench %s: cancel requested; no serving controller carried it out within "
			"%d s (it will when one serves)\n",
			id, CANCEL_WAIT_MS / 1000);
	}
out:
	store_bench_run_free(b);
	ctl_state_free(st);
	return rc;
}
