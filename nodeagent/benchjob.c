/* Agent benchmark runs: parse the order, run the engine on a thread with the fabric port
 * counters sampled around it, report through the outbox. */
#include "nodeagent/benchjob.h"
#include "nodeagent/counters.h"
#include "nodeagent/gpucheck.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"
#include "proto/railyard/v1/limits.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Orders remembered against a re-sent RunBench: (bench id, role) pairs, a loopback run takes
 * two. Several times what can run at once, so an order is forgotten long after it finished. */
#define BENCH_IDS_KEPT (8 * AGENT_BENCH_MAX)

/* Bytes the "counters" member may add to a result: a tcp run reports every port of the node,
 * and the whole document must stay under RY_PROTO_BENCH_RESULT_MAX. */
#define COUNTERS_JSON_MAX (RY_PROTO_BENCH_RESULT_MAX / 4)

/* The key of an order beside its id; an invalid role is a key of its own (it is refused, once). */
enum bench_side { SIDE_SERVER, SIDE_CLIENT, SIDE_INVALID };

static enum bench_side side_parse(const char *role)
{
	if (strcmp(role, "server") == 0)
		return SIDE_SERVER;
	return strcmp(role, "client") == 0 ? SIDE_CLIENT : SIDE_INVALID;
}

struct bench_run {
	struct agent_bench *owner;
	pthread_t thread;
	bool used, finished;
	atomic_bool cancel; /* Cancel for this run, or the agent shutting down */
	uint16_t port;	    /* server: the leased control port (0: none / ephemeral) */
	bool ready;	    /* server: BenchReady sent (the port is in use by us) */
	char id[65];
	char peer[300];
	bool server;
	struct bench_params p;
	uint32_t deadline_ms;
	bool gpu;     /* "kind": "gpu": the GPU check (gpu_opts), not a benchmark */
	json_t *coll; /* "kind": "collective": its params (owned), run by agent_coll_run() */
	struct gpu_check_opts gpu_opts;
};

struct agent_bench {
	struct outbox *ob;
	char *sysroot;		     /* where the port counters are read */
	struct agent_coll_conf coll; /* strings owned */
	pthread_mutex_t lock;
	uint16_t port_lo, port_hi, port_next; /* lease range (0: ephemeral), next to try */
	struct bench_run runs[AGENT_BENCH_MAX];
	struct {
		char id[65];
		enum bench_side side;
	} seen[BENCH_IDS_KEPT]; /* ring of orders already started */
	size_t seen_next;
};

int agent_bench_params_from_json(const json_t *o, struct bench_params *p, char *err, size_t errlen)
{
	const char *key;
	json_t *v;

	if (!json_is_object(o)) {
		snprintf(err, errlen, "parameters must be a JSON object");
		return -RY_E_INVALID;
	}
	json_object_foreach((json_t *)o, key, v)
	{
		const char *s = json_string_value(v);
		json_int_t n = json_integer_value(v);
		bool is_int = json_is_integer(v) && n >= 0;
		int r = 0;

		if (strcmp(key, "kind") == 0)
			r = s ? bench_kind_parse(s, &p->kind) : -RY_E_INVALID;
		else if (strcmp(key, "op") == 0)
			r = s ? bench_op_parse(s, &p->op) : -RY_E_INVALID;
		else if (strcmp(key, "transport") == 0 && s && strlen(s) < sizeof(p->transport))
			snprintf(p->transport, sizeof(p->transport), "%s", s);
		else if (strcmp(key, "device") == 0 && s && strlen(s) < sizeof(p->device))
			snprintf(p->device, sizeof(p->device), "%s", s);
		else if (strcmp(key, "size") == 0 && is_int)
			p->size = (uint64_t)n;
		else if (strcmp(key, "iters") == 0 && is_int)
			p->iters = (uint64_t)n;
		else if (strcmp(key, "duration_s") == 0 && is_int && n <= UINT32_MAX)
			p->duration_s = (uint32_t)n;
		else if (strcmp(key, "qps") == 0 && is_int && n <= UINT32_MAX)
			p->qps = (uint32_t)n;
		else if (strcmp(key, "depth") == 0 && is_int && n <= UINT32_MAX)
			p->depth = (uint32_t)n;
		else if (strcmp(key, "gid_index") == 0 && json_is_integer(v) && n >= -1 &&
			 n <= INT32_MAX)
			p->gid_index = (int32_t)n;
		else if (strcmp(key, "ib_port") == 0 && is_int && n >= 1 && n <= 255)
			p->ib_port = (uint8_t)n;
		else if (strcmp(key, "traffic_class") == 0 && is_int && n <= 255)
			p->traffic_class = (uint8_t)n;
		else if (strcmp(key, "service_level") == 0 && is_int && n <= 15)
			p->service_level = (uint8_t)n;
		else if (strcmp(key, "sweep") == 0 && json_is_boolean(v))
			p->sweep = json_is_true(v);
		else if (strcmp(key, "bidir") == 0 && json_is_boolean(v))
			p->bidir = json_is_true(v);
		else if (strcmp(key, "rdma_cm") == 0 && json_is_boolean(v))
			p->rdma_cm = json_is_true(v);
		else if (strcmp(key, "check_data") == 0 && json_is_boolean(v))
			p->check_data = json_is_true(v);
		else if (strcmp(key, "mem") == 0 && s && strlen(s) < sizeof(p->mem))
			snprintf(p->mem, sizeof(p->mem), "%s", s);
		else if (strcmp(key, "gpudirect") == 0 && s) {
			enum bench_gpudirect g;

			r = bench_gpudirect_parse(s, &g);
			p->gpudirect = (uint8_t)g;
		} else
			r = -RY_E_INVALID;
		if (r < 0) {
			snprintf(err, errlen, "parameter '%.32s': unknown or of the wrong type",
				 key);
			return -RY_E_INVALID;
		}
	}
	/* -n and -D are exclusive: a duration given means no iteration count. */
	if (p->duration_s)
		p->iters = json_object_get(o, "iters") ? p->iters : 0;
	return 0;
}

/* "host:port" or "[v6]:port" into its parts. */
static int split_peer(const char *peer, char *host, size_t hostlen, uint16_t *ret_port, char *err,
		      size_t errlen)
{
	const char *colon = strrchr(peer, ':');
	size_t n = colon ? (size_t)(colon - peer) : 0;
	char *end;
	long port;

	if (n > 1 && peer[0] == '[' && peer[n - 1] == ']') {
		peer++;
		n -= 2;
	}
	port = colon ? strtol(colon + 1, &end, 10) : 0;
	if (!colon || n == 0 || n >= hostlen || *end || port < 1 || port > 65535) {
		snprintf(err, errlen, "peer must be HOST:PORT");
		return -RY_E_INVALID;
	}
	memcpy(host, peer, n);
	host[n] = '\0';
	*ret_port = (uint16_t)port;
	return 0;
}

static void push_result(struct agent_bench *b, const char *id, bool server, json_t *result, bool ok)
{
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__BenchResult br = RAILYARD__V1__BENCH_RESULT__INIT;
	char *text = result ? json_dumps(result, JSON_COMPACT) : NULL;
	int r;

	br.bench_id = (char *)id;
	br.role = (char *)(server ? "server" : "client");
	br.ok = ok && text;
	br.result_json = text ? text : (char *)"{\"ok\":false}";
	m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_RESULT;
	m.bench_result = &br;
	r = outbox_push(b->ob, &m);
	if (r < 0)
		log_error("bench %s: result not queued: %s", id,
			  r == -ECANCELED ? "the agent is stopping" : ry_strerror(r));
	free(text);
}

static void on_ready(void *ud, uint16_t port)
{
	struct bench_run *run = ud;
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__BenchReady br = RAILYARD__V1__BENCH_READY__INIT;
	int r;

	run->ready = true;
	br.bench_id = run->id;
	br.port = port;
	m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_READY;
	m.bench_ready = &br;
	r = outbox_push(run->owner->ob, &m);
	if (r < 0)
		log_error("bench %s: BenchReady not queued: %s", run->id,
			  r == -ECANCELED ? "the agent is stopping" : ry_strerror(r));
	log_info("bench %s: server listening on port %u", run->id, port);
}

/* Lease a control port for run: the next one in the range that no running server of ours
 * holds and that was not tried yet (tried counts attempts). 0 when the range is exhausted. */
static uint16_t port_lease(struct agent_bench *b, struct bench_run *run, uint32_t *tried)
{
	uint32_t span = (uint32_t)b->port_hi - b->port_lo + 1;
	uint16_t port = 0;

	pthread_mutex_lock(&b->lock);
	while (!port && *tried < span) {
		uint16_t cand = b->port_next;
		bool held = false;

		b->port_next = cand >= b->port_hi ? b->port_lo : (uint16_t)(cand + 1);
		(*tried)++;
		for (size_t i = 0; i < AGENT_BENCH_MAX && !held; i++)
			held = &b->runs[i] != run && b->runs[i].used && b->runs[i].port == cand;
		if (!held)
			port = cand;
	}
	run->port = port;
	pthread_mutex_unlock(&b->lock);
	return port;
}

/* The server side on a leased port: a port another process holds (bind fails before anything
 * was announced) is skipped for the next one. */
static int serve(struct bench_run *run, struct bench_run_opts *o, json_t **ret_result)
{
	struct agent_bench *b = run->owner;
	uint32_t tried = 0;
	int r;

	if (!b->port_lo)
		return bench_run_server(&run->p, o, ret_result);
	for (;;) {
		json_t *result = NULL;

		run->p.port = port_lease(b, run, &tried);
		if (!run->p.port) {
			snprintf(o->err, o->errlen,
				 "no free benchmark port in %u-%u (all %u in use)", b->port_lo,
				 b->port_hi, (unsigned)b->port_hi - b->port_lo + 1);
			return -EADDRINUSE;
		}
		o->err[0] = '\0';
		r = bench_run_server(&run->p, o, &result);
		if (r != -EADDRINUSE || run->ready) {
			*ret_result = result;
			return r;
		}
		log_info("bench %s: port %u is taken, trying the next", run->id, run->p.port);
		json_decref(result);
	}
}

/* The device whose counters a run samples: the one a verbs run names; NULL (every device) for
 * tcp, and for verbs on the first device, which only the transport resolves. */
static const char *counters_device(const struct bench_run *run)
{
	return strcmp(run->p.transport, "verbs") == 0 && run->p.device[0] ? run->p.device : NULL;
}

/* Which ports a run's deltas cover: the device and HCA port it really used when its result says
 * (environment.<its role>: on both sides once the run got that far, since the server's document
 * is the client's); else the device its parameters name, on the port they name (with rdma_cm
 * every port of it: the address chooses the port); else, for tcp and for a verbs run on the
 * first device that failed before saying which, every port (NULL, 0). */
static void counters_scope(const struct bench_run *run, const json_t *result,
			   const char **ret_device, uint32_t *ret_port)
{
	const json_t *env = json_object_get(json_object_get(result, "environment"),
					    run->server ? "server" : "client");
	const char *dev = json_string_value(json_object_get(env, "device"));
	json_int_t port = json_integer_value(json_object_get(env, "port"));

	*ret_device = NULL;
	*ret_port = 0;
	if (dev && dev[0] && port > 0 && port <= UINT32_MAX) {
		*ret_device = dev;
		*ret_port = (uint32_t)port;
	} else if (counters_device(run)) {
		*ret_device = run->p.device;
		if (!run->p.rdma_cm)
			*ret_port = run->p.ib_port ? run->p.ib_port : BENCH_IB_PORT_DEF;
	}
}

/* Set result's "counters": the deltas from before to after over the ports the run used, or,
 * when a snapshot is missing (out of memory) or the deltas are too large to send, no ports and
 * "sampled": false with the reason. */
static void add_counters(const struct bench_run *run, json_t *result,
			 const struct counters_snap *before, const struct counters_snap *after)
{
	char why[128] = "";
	json_t *delta = NULL;
	const char *device;
	char *text = NULL;
	uint32_t port;

	if (!result)
		return;
	counters_scope(run, result, &device, &port);
	if (before && after)
		delta = counters_delta_json(before, after, device, port);
	if (delta)
		text = json_dumps(delta, JSON_COMPACT);
	if (!text)
		snprintf(why, sizeof(why), "out of memory");
	else if (strlen(text) > COUNTERS_JSON_MAX)
		snprintf(why, sizeof(why), "the deltas of %zu ports take more than %d bytes",
			 json_array_size(json_object_get(delta, "ports")), COUNTERS_JSON_MAX);
	if (why[0]) {
		log_warn("bench %s: port counters not reported: %s", run->id, why);
		json_decref(delta);
		delta = json_pack("{s[] sb ss}", "ports", "sampled", false, "error", why);
	}
	(void)json_object_set_new(result, "counters", delta);
	free(text);
}

/* A snapshot of the counters the run may touch; NULL when out of memory (said in the log and,
 * as "sampled": false, in the result). */
static struct counters_snap *snapshot(const struct bench_run *run, const char *when)
{
	struct counters_snap *snap = NULL;
	int64_t t0 = util_now_mono_ms();
	size_t ports = 0, n = 0;
	int r;

	r = counters_snapshot(run->owner->sysroot, counters_device(run), &snap);
	if (r < 0) {
		log_warn("bench %s: port counters %s the run not read: %s", run->id, when,
			 ry_strerror(r));
		return NULL;
	}
	counters_snap_size(snap, &ports, &n);
	log_debug("bench %s: %zu counters of %zu ports read %s the run in %lld ms", run->id, n,
		  ports, when, (long long)(util_now_mono_ms() - t0));
	return snap;
}

/* A GPU check ordered like a benchmark (one side, the "client"): its document is the result;
 * a check that ran is ok (its "passed" says whether the GPUs are healthy). */
static void gpu_main(struct bench_run *run)
{
	char err[256] = "";
	json_t *doc = NULL;
	int r;

	run->gpu_opts.cancel = &run->cancel;
	log_info("bench %s: GPU check", run->id);
	r = gpu_check_run(run->owner->sysroot, NULL, &run->gpu_opts, &doc, err, sizeof(err));
	if (r < 0) {
		log_warn("bench %s: GPU check: %s", run->id, err);
		doc = json_pack("{si sb ss ss sb s{si ss}}", "version", 1, "ok", false, "tool",
				"railyard gpu-check", "role", "client", "passed", false, "error",
				"code", r, "message", err);
	} else {
		log_info("bench %s: GPU check %s", run->id,
			 json_is_true(json_object_get(doc, "passed")) ? "passed" : "failed");
		json_object_set_new(doc, "role", json_string("client"));
	}
	push_result(run->owner, run->id, false, doc, r >= 0);
	json_decref(doc);
}

static void *run_main(void *arg)
{
	struct bench_run *run = arg;
	struct counters_snap *before, *after;
	struct bench_run_opts o = {0};
	char err[BENCH_ERR_LEN] = "";
	json_t *result = NULL;
	int r;

	if (run->gpu) {
		gpu_main(run);
		goto done;
	}
	if (run->coll) {
		bool ok = agent_coll_run(&run->owner->coll, run->id, run->coll, run->deadline_ms,
					 &run->cancel, &result);

		push_result(run->owner, run->id, false, result, ok);
		json_decref(result);
		goto done;
	}
	o.cancel = &run->cancel;
	o.deadline_ms = (uint64_t)util_now_mono_ms() + run->deadline_ms;
	o.on_ready = on_ready;
	o.ud = run;
	o.err = err;
	o.errlen = sizeof(err);
	log_info("bench %s: %s %s over %s%s%s", run->id, run->server ? "serving" : "running",
		 bench_kind_name(run->p.kind), run->p.transport, run->server ? "" : " against ",
		 run->server ? "" : run->peer);
	/* On this thread, not the session's: a snapshot is a few hundred file reads, each a
	 * firmware query or a MAD on mlx5. */
	before = snapshot(run, "before");
	if (run->server)
		r = serve(run, &o, &result);
	else
		r = bench_run_client(&run->p, run->peer, &o, &result);
	after = before ? snapshot(run, "after") : NULL;
	if (r < 0) {
		log_warn("bench %s: %s", run->id, err[0] ? err : ry_strerror(r));
		result = bench_result_error(&run->p, run->server ? BENCH_SERVER : BENCH_CLIENT, r,
					    err[0] ? err : ry_strerror(r));
	} else {
		log_info("bench %s: done", run->id);
	}
	add_counters(run, result, before, after);
	counters_snap_free(before);
	counters_snap_free(after);
	push_result(run->owner, run->id, run->server, result, r >= 0);
	json_decref(result);
done:
	pthread_mutex_lock(&run->owner->lock);
	run->finished = true;
	pthread_mutex_unlock(&run->owner->lock);
	return NULL;
}

int agent_bench_new(struct outbox *ob, const char *sysroot, uint16_t port_lo, uint16_t port_hi,
		    struct agent_bench **ret)
{
	struct agent_bench *b;

	if (port_lo > port_hi || (port_lo == 0) != (port_hi == 0))
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->sysroot = strdup(sysroot && sysroot[0] ? sysroot : "/");
	if (!b->sysroot) {
		free(b);
		return -ENOMEM;
	}
	b->ob = ob;
	b->port_lo = b->port_next = port_lo;
	b->port_hi = port_hi;
	pthread_mutex_init(&b->lock, NULL);
	*ret = b;
	return 0;
}

/* Join finished runs; with all, wait for every run. Called without the lock. */
static void reap(struct agent_bench *b, bool all)
{
	for (size_t i = 0; i < AGENT_BENCH_MAX; i++) {
		bool join;

		pthread_mutex_lock(&b->lock);
		join = b->runs[i].used && (all || b->runs[i].finished);
		pthread_mutex_unlock(&b->lock);
		if (!join)
			continue;
		pthread_join(b->runs[i].thread, NULL);
		pthread_mutex_lock(&b->lock);
		json_decref(b->runs[i].coll);
		b->runs[i].coll = NULL;
		b->runs[i].used = false;
		pthread_mutex_unlock(&b->lock);
	}
}

int agent_bench_set_coll(struct agent_bench *b, const struct agent_coll_conf *conf)
{
	b->coll.launch = conf->launch;
	if ((conf->mpirun && !(b->coll.mpirun = strdup(conf->mpirun))) ||
	    (conf->coll_program && !(b->coll.coll_program = strdup(conf->coll_program))) ||
	    (conf->sock_path && !(b->coll.sock_path = strdup(conf->sock_path))))
		return -ENOMEM;
	return 0;
}

void agent_bench_free(struct agent_bench *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&b->lock);
	for (size_t i = 0; i < AGENT_BENCH_MAX; i++)
		if (b->runs[i].used)
			atomic_store(&b->runs[i].cancel, true);
	pthread_mutex_unlock(&b->lock);
	reap(b, true);
	pthread_mutex_destroy(&b->lock);
	free(b->sysroot);
	free((char *)b->coll.mpirun);
	free((char *)b->coll.coll_program);
	free((char *)b->coll.sock_path);
	free(b);
}

int agent_bench_submit(struct agent_bench *b, const Railyard__V1__RunBench *rb)
{
	enum bench_side side = side_parse(rb->role);
	struct bench_run *run = NULL;
	char err[BENCH_ERR_LEN] = "", host[256] = "";
	struct gpu_check_opts gopts;
	struct bench_params p;
	json_t *params, *coll = NULL;
	bool gpu;
	int r;

	if (!rb->bench_id[0] || strlen(rb->bench_id) > 64)
		return -RY_E_INVALID;
	reap(b, false);
	/* Keyed by id and role: a loopback run sends this node both sides of one id. */
	pthread_mutex_lock(&b->lock);
	for (size_t i = 0; i < BENCH_IDS_KEPT; i++) {
		if (b->seen[i].side == side && strcmp(b->seen[i].id, rb->bench_id) == 0) {
			pthread_mutex_unlock(&b->lock);
			return 1;
		}
	}
	snprintf(b->seen[b->seen_next].id, sizeof(b->seen[0].id), "%s", rb->bench_id);
	b->seen[b->seen_next].side = side;
	b->seen_next = (b->seen_next + 1) % BENCH_IDS_KEPT;
	pthread_mutex_unlock(&b->lock);

	bench_params_init(&p);
	gpu_check_opts_init(&gopts);
	params = json_loads(rb->params_json, JSON_REJECT_DUPLICATES, NULL);
	gpu = json_is_string(json_object_get(params, "kind")) &&
	      strcmp(json_string_value(json_object_get(params, "kind")), "gpu") == 0;
	if (json_is_string(json_object_get(params, "kind")) &&
	    strcmp(json_string_value(json_object_get(params, "kind")), "collective") == 0) {
		/* One side, the launcher's: agent_coll_run() checks the rest. */
		r = 0;
		if (side != SIDE_CLIENT) {
			snprintf(err, sizeof(err), "a collective runs as the client side");
			r = -RY_E_INVALID;
		} else if (rb->deadline_ms == 0 || rb->deadline_ms > 3 * 3600 * 1000u) {
			snprintf(err, sizeof(err), "deadline out of range");
			r = -RY_E_INVALID;
		} else if (!b->coll.sock_path) {
			snprintf(err, sizeof(err), "this agent does not run collectives");
			r = -RY_E_INVALID;
		} else {
			coll = json_incref(params);
		}
		gpu = true; /* not the engine's parameters */
		if (r < 0) {
			json_t *res = json_pack("{s:s, s:b, s:s}", "kind", "collective", "ok",
						false, "error", err);

			json_decref(params);
			log_warn("bench %s refused: %s", rb->bench_id, err);
			push_result(b, rb->bench_id, false, res, false);
			json_decref(res);
			return 0;
		}
	} else if (gpu) {
		/* One side: the node checks its own GPUs; no peer, no port. */
		r = gpu_check_opts_from_json(params, &gopts, err, sizeof(err));
		if (r >= 0 && side != SIDE_CLIENT) {
			snprintf(err, sizeof(err), "a GPU check runs as the client side");
			r = -RY_E_INVALID;
		} else if (r >= 0 && (rb->deadline_ms == 0 || rb->deadline_ms > 3 * 3600 * 1000u)) {
			snprintf(err, sizeof(err), "deadline out of range");
			r = -RY_E_INVALID;
		}
	} else {
		r = agent_bench_params_from_json(params, &p, err, sizeof(err));
	}
	json_decref(params);
	if (r >= 0 && !gpu) {
		bool server = side == SIDE_SERVER;

		if (side == SIDE_INVALID) {
			snprintf(err, sizeof(err), "role must be server or client");
			r = -RY_E_INVALID;
		} else if (!server && (!rb->peer[0] || strlen(rb->peer) >= sizeof(run->peer))) {
			snprintf(err, sizeof(err), "client without a peer address");
			r = -RY_E_INVALID;
		} else if (rb->deadline_ms == 0 || rb->deadline_ms > 3 * 3600 * 1000u) {
			snprintf(err, sizeof(err), "deadline out of range");
			r = -RY_E_INVALID;
		} else {
			/* The server takes an ephemeral port and reports it; the client is told
			 * HOST:PORT. */
			if (server)
				p.port = 0;
			else
				r = split_peer(rb->peer, host, sizeof(host), &p.port, err,
					       sizeof(err));
			if (r >= 0)
				r = bench_params_validate(&p, err, sizeof(err));
		}
	}
	if (r < 0) {
		json_t *res = bench_result_error(
			&p, side == SIDE_SERVER ? BENCH_SERVER : BENCH_CLIENT, r, err);

		log_warn("bench %s refused: %s", rb->bench_id, err);
		push_result(b, rb->bench_id, side == SIDE_SERVER, res, false);
		json_decref(res);
		return 0;
	}
	pthread_mutex_lock(&b->lock);
	for (size_t i = 0; i < AGENT_BENCH_MAX && !run; i++)
		if (!b->runs[i].used)
			run = &b->runs[i];
	if (!run) {
		pthread_mutex_unlock(&b->lock);
		json_decref(coll);
		return -EBUSY;
	}
	memset(run, 0, sizeof(*run));
	atomic_init(&run->cancel, false);
	run->owner = b;
	run->used = true;
	snprintf(run->id, sizeof(run->id), "%s", rb->bench_id);
	snprintf(run->peer, sizeof(run->peer), "%s", host);
	run->server = side == SIDE_SERVER;
	run->p = p;
	run->deadline_ms = rb->deadline_ms;
	run->gpu = gpu && !coll;
	run->gpu_opts = gopts;
	run->coll = coll;
	if (pthread_create(&run->thread, NULL, run_main, run) != 0) {
		run->coll = NULL;
		json_decref(coll);
		run->used = false;
		pthread_mutex_unlock(&b->lock);
		return -EAGAIN;
	}
	pthread_mutex_unlock(&b->lock);
	return 0;
}

int agent_bench_cancel(struct agent_bench *b, const char *bench_id)
{
	int found = 0;

	/* Every side with the id: a loopback run is both on this node. */
	pthread_mutex_lock(&b->lock);
	for (size_t i = 0; i < AGENT_BENCH_MAX; i++) {
		struct bench_run *run = &b->runs[i];

		if (run->used && !run->finished && strcmp(run->id, bench_id) == 0) {
			atomic_store(&run->cancel, true);
			found = 1;
		}
	}
	pthread_mutex_unlock(&b->lock);
	return found;
}

bool agent_bench_busy(struct agent_bench *b)
{
	bool busy = false;

	pthread_mutex_lock(&b->lock);
	for (size_t i = 0; i < AGENT_BENCH_MAX && !busy; i++)
		busy = b->runs[i].used && !b->runs[i].finished;
	pthread_mutex_unlock(&b->lock);
	return busy;
}
