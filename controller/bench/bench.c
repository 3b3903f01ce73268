/* The benchmark service: a run ordered between two nodes is stored pending for the serving
 * controller's bench pass; runs are read back as JSON; a cancel is requested. */
#include "controller/bench/bench.h"
#include "controller/store/store.h"
#include "controller/store/store_bench.h"
#include "controller/store/store_nodes.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The engine parameters of a request (docs/bench.md, "Parameters as JSON"). */
static json_t *params_of(const struct ctl_bench_request *rq)
{
	json_t *p = json_pack("{s:s, s:s}", "kind", rq->kind, "transport", rq->transport);

	if (!p)
		return NULL;
	if (rq->op)
		json_object_set_new(p, "op", json_string(rq->op));
	if (rq->size)
		json_object_set_new(p, "size", json_integer(rq->size));
	if (rq->iters)
		json_object_set_new(p, "iters", json_integer(rq->iters));
	if (rq->duration_s)
		json_object_set_new(p, "duration_s", json_integer(rq->duration_s));
	if (rq->qps)
		json_object_set_new(p, "qps", json_integer(rq->qps));
	if (rq->device)
		json_object_set_new(p, "device", json_string(rq->device));
	if (rq->gid_index >= -1)
		json_object_set_new(p, "gid_index", json_integer(rq->gid_index));
	if (rq->ib_port >= 0)
		json_object_set_new(p, "ib_port", json_integer(rq->ib_port));
	if (rq->tclass >= 0)
		json_object_set_new(p, "traffic_class", json_integer(rq->tclass));
	if (rq->sl >= 0)
		json_object_set_new(p, "service_level", json_integer(rq->sl));
	if (rq->sweep)
		json_object_set_new(p, "sweep", json_true());
	if (rq->bidir)
		json_object_set_new(p, "bidir", json_true());
	if (rq->check_data)
		json_object_set_new(p, "check_data", json_true());
	if (rq->rdma_cm)
		json_object_set_new(p, "rdma_cm", json_true());
	return p;
}

static int node_of(struct store *st, const char *key, const char *field, struct store_node **ret,
		   struct ctl_error *err)
{
	int r = store_node_get(st, key, ret);

	if (r == -RY_E_NOT_FOUND || r == -ENOTUNIQ)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, field, "%s node %s",
				     r == -ENOTUNIQ ? "ambiguous" : "unknown", key);
	if (r < 0)
		return ctl_error_store(err, r, "reading a node");
	return 0;
}

int ctl_bench_create(struct store *st, const struct ctl_bench_request *rq,
		     struct ctl_bench_created *ret, struct ctl_error *err)
{
	struct store_node *from = NULL, *to = NULL;
	struct ctl_bench_created c = {0};
	unsigned char rnd[4];
	char hex[9], *params = NULL;
	json_t *p = NULL;
	int r;

	if (strcmp(rq->kind, "lat") != 0 && strcmp(rq->kind, "bw") != 0)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "kind",
				     "kind must be lat or bw, not %s", rq->kind);
	if (!rq->transport ||
	    (strcmp(rq->transport, "tcp") != 0 && strcmp(rq->transport, "verbs") != 0))
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "transport",
				     "transport must be tcp or verbs");
	if (rq->timeout_ms <= 0)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "timeout",
				     "the timeout must be positive");
	r = node_of(st, rq->from, "from", &from, err);
	if (r >= 0)
		r = node_of(st, rq->to, "to", &to, err);
	if (r < 0)
		goto out;
	if (rq->cluster && strcmp(from->cluster, rq->cluster) != 0) {
		r = ctl_error_set(err, -RY_E_NOT_FOUND, CTL_ERR_NOT_FOUND, "from",
				  "unknown node %s in cluster %s", rq->from, rq->cluster);
		goto out;
	}
	if (strcmp(from->cluster, to->cluster) != 0) {
		r = ctl_error_set(err, -RY_E_NOT_FOUND, CTL_ERR_NOT_FOUND, "to",
				  "unknown node %s in cluster %s", rq->to, from->cluster);
		goto out;
	}
	if (strcmp(from->id, to->id) == 0) {
		r = ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "to",
				  "from and to name the same node (%s): a benchmark between nodes "
				  "needs two",
				  from->hostname);
		goto out;
	}
	p = params_of(rq);
	params = p ? json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	r = params ? util_random_bytes(rnd, sizeof(rnd)) : -ENOMEM;
	if (r < 0) {
		ctl_error_set(err, r, CTL_ERR_INTERNAL, NULL, "%s", ry_strerror(r));
		goto out;
	}
	util_hex(rnd, sizeof(rnd), hex);
	snprintf(c.id, sizeof(c.id), "b-%s", hex);
	{
		/* The address in the same write: a serving controller that saw the run without
		 * it would send the server's session address (127.0.0.1 behind qemu's NAT). */
		struct store_bench_new b = {c.id,
					    rq->kind,
					    rq->transport,
					    from->id,
					    to->id,
					    params,
					    rq->server_address,
					    rq->timeout_ms,
					    rq->actor ? rq->actor : "admin"};

		r = store_bench_create_new(st, &b, util_now_unix_ms());
	}
	if (r < 0) {
		ctl_error_store(err, r, "storing the run");
		goto out;
	}
	snprintf(c.client_id, sizeof(c.client_id), "%s", from->id);
	snprintf(c.server_id, sizeof(c.server_id), "%s", to->id);
	snprintf(c.client_host, sizeof(c.client_host), "%s", from->hostname);
	snprintf(c.server_host, sizeof(c.server_host), "%s", to->hostname);
	*ret = c;
	r = 0;
out:
	json_decref(p);
	free(params);
	store_node_free(from);
	store_node_free(to);
	return r;
}

static json_t *run_json(const struct store_bench_run *b)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I}", "id", b->id, "kind",
			      b->kind, "transport", b->transport, "client_node", b->client_node,
			      "server_node", b->server_node, "state", b->state, "created_at_ms",
			      (json_int_t)b->created_at_ms, "finished_at_ms",
			      (json_int_t)b->finished_at_ms);

	if (!o)
		return NULL;
	json_object_set_new(o, "error", b->error ? json_string(b->error) : json_null());
	json_object_set_new(o, "cluster", b->cluster ? json_string(b->cluster) : json_null());
	json_object_set_new(o, "actor", b->actor ? json_string(b->actor) : json_null());
	json_object_set_new(o, "campaign",
			    b->campaign_id ? json_string(b->campaign_id) : json_null());
	json_object_set_new(o, "server_address",
			    b->server_address ? json_string(b->server_address) : json_null());
	json_object_set_new(o, "server_port",
			    b->server_port ? json_integer(b->server_port) : json_null());
	json_object_set_new(o, "cancel_requested_at_ms",
			    b->cancel_requested_ms ? json_integer(b->cancel_requested_ms)
						   : json_null());
	json_object_set_new(o, "params", json_loads(b->params_json, 0, NULL));
	json_object_set_new(o, "result",
			    b->result_json ? json_loads(b->result_json, 0, NULL) : json_null());
	json_object_set_new(o, "server_result",
			    b->server_result_json ? json_loads(b->server_result_json, 0, NULL)
						  : json_null());
	return o;
}

int ctl_bench_get(struct store *st, const char *id, json_t **ret, struct ctl_error *err)
{
	struct store_bench_run *b = NULL;
	json_t *o;
	int r = store_bench_get(st, id, &b);

	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "id", "no benchmark run %s", id);
	if (r < 0)
		return ctl_error_store(err, r, "reading the run");
	o = run_json(b);
	store_bench_run_free(b);
	if (!o)
		return ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	*ret = o;
	return 0;
}

int ctl_bench_list(struct store *st, size_t limit, json_t **ret, struct ctl_error *err)
{
	struct store_bench_run **v = NULL;
	size_t n = 0;
	json_t *arr;
	int r = store_bench_list(st, false, limit ? limit : 50, &v, &n);

	if (r < 0)
		return ctl_error_store(err, r, "listing runs");
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		json_array_append_new(arr, run_json(v[i]));
	store_bench_runs_free(v, n);
	if (!arr)
		return ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	*ret = arr;
	return 0;
}

int ctl_bench_cancel(struct store *st, const char *id, const char *actor, struct ctl_error *err)
{
	struct store_bench_run *b = NULL;
	int r = store_bench_request_cancel(st, id, actor, util_now_unix_ms());

	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "id", "no benchmark run %s", id);
	if (r < 0)
		return ctl_error_store(err, r, "requesting the cancel");
	if (r == 0 && store_bench_get(st, id, &b) == 0) {
		ctl_error_set(err, 0, CTL_ERR_CONFLICT, "id", "%s has already finished (%s)", id,
			      b->state);
		store_bench_run_free(b);
	}
	return r;
}

bool ctl_bench_state_final(const char *state)
{
	return store_bench_state_final(state);
}
