/* The benchmark service: a run ordered between two nodes is stored pending for the serving
 * controller's bench pass; runs are read back as JSON; a cancel is requested. */
#include "controller/bench/bench.h"
#include "controller/campaign/coll.h"
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

/* ---- collective runs ---- */

static const char *const coll_ops[] = {"allreduce", "allgather", "reducescatter", "alltoall",
				       "sendrecv"};

/* rq's ops as a JSON array (NULL: all five), each known and given once. */
static int coll_ops_json(const char *ops, json_t **ret, struct ctl_error *err)
{
	json_t *arr = json_array();
	const char *p = ops ? ops : "allreduce,allgather,reducescatter,alltoall,sendrecv";

	if (!arr)
		return ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	while (*p) {
		size_t n = strcspn(p, ","), i;
		bool known = false, twice = false;
		size_t j;
		json_t *v;

		for (i = 0; i < sizeof(coll_ops) / sizeof(coll_ops[0]) && !known; i++)
			known = strlen(coll_ops[i]) == n && strncmp(coll_ops[i], p, n) == 0;
		json_array_foreach(arr, j, v) twice |= strlen(json_string_value(v)) == n &&
						       strncmp(json_string_value(v), p, n) == 0;
		if (!known || twice) {
			json_decref(arr);
			return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "ops",
					     "%s operation '%.*s' (allreduce, allgather, "
					     "reducescatter, alltoall, sendrecv)",
					     twice ? "repeated" : "unknown", (int)(n > 32 ? 32 : n),
					     p);
		}
		json_array_append_new(arr, json_stringn(p, n));
		p += n;
		if (*p == ',' && *++p == '\0') {
			json_decref(arr);
			return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "ops",
					     "ops ends with a comma");
		}
	}
	if (json_array_size(arr) == 0) {
		json_decref(arr);
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "ops",
				     "ops names no operation");
	}
	*ret = arr;
	return 0;
}

/* A number of the request: 0 takes def; otherwise lo..hi, else an error naming field. */
static int coll_num(int64_t v, int64_t def, int64_t lo, int64_t hi, const char *field, int64_t *ret,
		    struct ctl_error *err)
{
	if (v == 0)
		v = def;
	if (v < lo || v > hi)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, field,
				     "%s must be within %lld..%lld, not %lld", field, (long long)lo,
				     (long long)hi, (long long)v);
	*ret = v;
	return 0;
}

int ctl_bench_add_job_token(json_t *params)
{
	unsigned char tok[32];
	char hex[65];
	int r = util_random_bytes(tok, sizeof(tok));

	if (r < 0)
		return r;
	util_hex(tok, sizeof(tok), hex);
	explicit_bzero(tok, sizeof(tok));
	r = json_object_set_new(params, "job_token", json_string(hex)) < 0 ? -ENOMEM : 0;
	explicit_bzero(hex, sizeof(hex));
	return r;
}

int ctl_bench_collective_params(struct store *st, const struct ctl_coll_request *rq,
				json_t **ret_params, char ret_launcher[64], struct ctl_error *err)
{
	int64_t rpn = 0, minb = 0, maxb = 0, iters = 0, warmup = 0, pairb = 0, pairi = 0;
	const char *backend = rq->backend ? rq->backend : "mpi";
	json_t *p = NULL, *hosts = NULL, *ops = NULL;
	char launcher[64] = "", cluster[256] = "";
	int r;

	if (!rq->transport ||
	    (strcmp(rq->transport, "tcp") != 0 && strcmp(rq->transport, "verbs") != 0))
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "transport",
				     "transport must be tcp or verbs");
	if (strcmp(backend, "mpi") != 0 && strcmp(backend, "nccl") != 0)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "backend",
				     "backend must be mpi or nccl, not %.32s", backend);
	if (rq->n_nodes < 2 || rq->n_nodes > CTL_COLL_NODES_MAX)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "nodes",
				     "a collective runs on 2..%d nodes, not %zu",
				     CTL_COLL_NODES_MAX, rq->n_nodes);
	if ((r = coll_num(rq->ranks_per_node, 1, 1, CTL_COLL_RANKS_MAX, "ranks_per_node", &rpn,
			  err)) < 0 ||
	    (r = coll_num(rq->min_bytes, 8, 1, 1LL << 34, "min_bytes", &minb, err)) < 0 ||
	    (r = coll_num(rq->max_bytes, 64LL << 20, 1, 1LL << 34, "max_bytes", &maxb, err)) < 0 ||
	    (r = coll_num(rq->iters, 20, 1, 100000, "iters", &iters, err)) < 0 ||
	    (r = coll_num(rq->warmup < 0 ? 0 : rq->warmup, 5, 0, 100000, "warmup", &warmup, err)) <
		    0 ||
	    (r = coll_num(rq->pair_bytes, 4LL << 20, 1, 1LL << 32, "pair_bytes", &pairb, err)) <
		    0 ||
	    (r = coll_num(rq->pair_iters, 10, 1, 100000, "pair_iters", &pairi, err)) < 0)
		return r;
	if (rq->warmup < 0)
		warmup = 0;
	if (minb > maxb)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "min_bytes",
				     "min_bytes (%lld) is above max_bytes (%lld)", (long long)minb,
				     (long long)maxb);
	if (rq->timeout_ms <= 0)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "timeout",
				     "the timeout must be positive");
	if (rq->nccl_tests && (rq->nccl_tests[0] != '/' || util_has_control(rq->nccl_tests) ||
			       strlen(rq->nccl_tests) > 1024))
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "nccl_tests",
				     "nccl_tests must be an absolute path");
	if ((r = coll_ops_json(rq->ops, &ops, err)) < 0)
		return r;
	if (rq->cluster)
		snprintf(cluster, sizeof(cluster), "%s", rq->cluster);
	hosts = json_array();
	if (!hosts) {
		r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < rq->n_nodes; i++) {
		struct store_node *n = NULL;
		size_t j;
		json_t *h;

		if (!rq->nodes[i] || !rq->nodes[i][0]) {
			r = ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "nodes",
					  "node %zu is empty", i + 1);
			goto out;
		}
		if ((r = node_of(st, rq->nodes[i], "nodes", &n, err)) < 0)
			goto out;
		if (!cluster[0])
			snprintf(cluster, sizeof(cluster), "%s", n->cluster);
		if (strcmp(n->cluster, cluster) != 0) {
			r = ctl_error_set(err, -RY_E_NOT_FOUND, CTL_ERR_NOT_FOUND, "nodes",
					  "unknown node %s in cluster %s", rq->nodes[i], cluster);
			store_node_free(n);
			goto out;
		}
		json_array_foreach(hosts, j, h)
		{
			if (strcmp(json_string_value(json_object_get(h, "node")), n->id) == 0) {
				r = ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "nodes",
						  "node %s (%s) is named twice", rq->nodes[i],
						  n->hostname);
				store_node_free(n);
				goto out;
			}
		}
		if (i == 0)
			snprintf(launcher, sizeof(launcher), "%s", n->id);
		json_array_append_new(hosts,
				      json_pack("{s:s, s:s}", "node", n->id, "host", n->hostname));
		store_node_free(n);
	}
	{
		/* The document's one builder is the campaign's (controller/campaign/coll.c), from
		 * a test as the playbook normalizes it. */
		json_t *test = json_pack(
			"{s:s, s:O, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:{s:s, s:s, s:s}, s:s?}",
			"backend", backend, "ops", ops, "ranks_per_node", (json_int_t)rpn,
			"min_size", (json_int_t)minb, "max_size", (json_int_t)maxb, "iters",
			(json_int_t)iters, "warmup", (json_int_t)warmup, "pair_size",
			(json_int_t)pairb, "pair_iters", (json_int_t)pairi, "settings", "mpi",
			CTL_COLL_MPI_SETTINGS, "ucx", CTL_COLL_UCX_SETTINGS, "nccl",
			CTL_COLL_NCCL_SETTINGS, "nccl_tests", rq->nccl_tests);

		json_decref(p);
		p = test ? cp_coll_params_hosts(test, rq->transport, hosts) : NULL;
		json_decref(test);
	}
	if (!p) {
		r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
		goto out;
	}
	if ((r = ctl_bench_add_job_token(p)) < 0) {
		ctl_error_set(err, r, CTL_ERR_INTERNAL, NULL, "%s", ry_strerror(r));
		goto out;
	}
	*ret_params = p;
	p = NULL;
	snprintf(ret_launcher, 64, "%s", launcher);
	r = 0;
out:
	json_decref(p);
	json_decref(hosts);
	json_decref(ops);
	return r;
}

int ctl_bench_create_collective(struct store *st, const struct ctl_coll_request *rq,
				struct ctl_bench_created *ret, struct ctl_error *err)
{
	struct ctl_bench_created c = {0};
	struct store_node *l = NULL;
	char launcher[64], hex[9], *text = NULL;
	unsigned char rnd[4];
	json_t *p = NULL;
	int r = ctl_bench_collective_params(st, rq, &p, launcher, err);

	if (r < 0)
		return r;
	text = json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS);
	r = text ? util_random_bytes(rnd, sizeof(rnd)) : -ENOMEM;
	if (r < 0) {
		ctl_error_set(err, r, CTL_ERR_INTERNAL, NULL, "%s", ry_strerror(r));
		goto out;
	}
	util_hex(rnd, sizeof(rnd), hex);
	snprintf(c.id, sizeof(c.id), "b-%s", hex);
	{
		/* One side: the launcher is both client and server (as a GPU check's node). */
		struct store_bench_new b = {
			c.id,	  "collective",	  rq->transport,
			launcher, launcher,	  text,
			NULL,	  rq->timeout_ms, rq->actor ? rq->actor : "admin"};

		r = store_bench_create_new(st, &b, util_now_unix_ms());
	}
	if (r < 0) {
		ctl_error_store(err, r, "storing the run");
		goto out;
	}
	r = node_of(st, launcher, "nodes", &l, err);
	if (r < 0)
		goto out;
	snprintf(c.client_id, sizeof(c.client_id), "%s", l->id);
	snprintf(c.server_id, sizeof(c.server_id), "%s", l->id);
	snprintf(c.client_host, sizeof(c.client_host), "%s", l->hostname);
	snprintf(c.server_host, sizeof(c.server_host), "%s", l->hostname);
	*ret = c;
out:
	store_node_free(l);
	if (text) {
		explicit_bzero(text, strlen(text));
		free(text);
	}
	json_decref(p);
	return r;
}

void ctl_bench_params_redact(json_t *params)
{
	if (json_is_object(params))
		json_object_del(params, "job_token");
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
	/* The job token authorises the launch of the run's daemons: never shown. */
	ctl_bench_params_redact(json_object_get(o, "params"));
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
