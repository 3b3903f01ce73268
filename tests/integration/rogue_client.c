/* A misbehaving (or scripted) node for the integration tests, speaking the protocol with the
 * certificate it is given.
 *   rogue_client --target H:P --ca CA.pem [--cert C --key K] --mode M [options]
 * Stream modes, checked by the status the controller ends the stream with (--expect):
 *   hello (a well-formed Hello, with --facts FILE if given), garbage, no-hello, bad-seq,
 *   no-body, huge-facts, bad-facts.
 * Scripted modes (exit 0 when the script ran; output lines for the test to read):
 *   agent   an honest member: Hello, then every ApplyPlan is answered with a StepEvent "ok" per
 *           step and ApplyDone "succeeded" (--done-message M). After --plans N plans (default 1)
 *           it goes on with --forge, if given, or exits. Prints "PLAN <deployment> <steps>".
 *           --gate FILE: prints "WAITING <deployment>" and answers only once FILE exists;
 *           --heartbeats: a Heartbeat after each StepEvent. Then it prints "SENT <seq of the
 *           first StepEvent> <seq of the last message>", every controller message after it as
 *           "MSG <kind> <ack>", and "RECEIPTS <n>" once the plan's end is acknowledged.
 *   forge   Hello, then --forge right away.
 *   liar    a campaign member that lies: Hello with --facts, then every RunBench (lat/bw, one
 *           side at a time) is run for real with the benchmark engine, and the result it
 *           reports is rewritten by --lie SPEC first (the node's own report only: its peer's
 *           copy of the run stays honest). SPEC: KEY=JSON sets member KEY of its first
 *           result's latency (else bw) figures ("p50=-5", "gbps=1e308", "count=100000"),
 *           *=JSON sets every figure ("*=null", "*=0.001"), *xF multiplies every number
 *           ("*x0.5": a plausible rewrite). A collective job it launches is not run: its
 *           report is made up, "coll:impossible" or "coll:blame=HOST" (fake_collective()).
 *           Prints "LIED <bench> <role>" per report.
 *   flood   --count N Enroll calls with a token that does not exist; prints how each ended:
 *           "<STATUS> <count>" lines.
 * --forge KIND about --deployment D (default: the last plan answered):
 *   step-failed      StepEvent index 0 (the plan's first step name) status "failed"
 *   rebooting:K      StepEvent index K status "rebooting" (the node says it reboots there)
 *   done-succeeded   ApplyDone "succeeded", zero counts
 *   done-failed      ApplyDone "failed", zero counts
 *   big-steps:N      N StepEvents, indexes 0..N-1, each with a 1 MiB diff
 *   huge-facts-step  a FactsUpdate of 2 MiB (it ends the session) and at once a StepEvent
 *                    index 0 "failed": read ahead of the end, it must not be handled
 *   bench-ready      BenchReady for bench D (port 18515)
 *   bench-result     BenchResult "ok" for bench D
 *   bench-result:R   the same, saying it is side R ("client" or "server") of the run
 * Each forged message gets one answer, printed as "RECEIPT" or "ERROR <code>: <message>". */
#include "nodeagent/bench/bench.h"
#include "nodeagent/benchjob.h"
#include "common/rpc/rpc.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"
#include "railyard/v1/railyard.pb-c.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *slurp(const char *path)
{
	char *buf = NULL;

	if (path && fs_read_file(path, 1024 * 1024, &buf, NULL) < 0) {
		fprintf(stderr, "rogue_client: cannot read %s\n", path);
		exit(2);
	}
	return buf;
}

struct rogue {
	struct rpc_client_stream *cs;
	uint64_t seq, ack;
	char last_plan[65];
	char first_step[256];
	const char *done_message;
	const char *gate;	 /* --gate FILE */
	bool heartbeats;	 /* --heartbeats */
	uint64_t first_step_seq; /* with --gate: the plan's first StepEvent */
	unsigned receipts;	 /* with --gate: Receipts since the plan was answered */
	const char *lie;	 /* --lie SPEC (mode liar) */
};

static int send_msg(struct rogue *g, Railyard__V1__AgentMessage *m)
{
	m->seq = ++g->seq;
	m->ack = g->ack;
	return rpc_client_stream_send(g->cs, &m->base);
}

static int send_agent(struct rpc_client_stream *cs, uint64_t seq, int body, const char *facts)
{
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__Hello h = RAILYARD__V1__HELLO__INIT;
	Railyard__V1__Heartbeat hb = RAILYARD__V1__HEARTBEAT__INIT;

	m.seq = seq;
	if (body == RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO) {
		h.agent_version = (char *)"rogue-1";
		h.facts_json = (char *)facts;
		m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO;
		m.hello = &h;
	} else if (body == RAILYARD__V1__AGENT_MESSAGE__BODY_HEARTBEAT) {
		m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_HEARTBEAT;
		m.heartbeat = &hb;
	}
	return rpc_client_stream_send(cs, &m.base);
}

static int send_step(struct rogue *g, const char *dep, uint32_t idx, const char *name,
		     const char *status, const char *diff)
{
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__StepEvent se = RAILYARD__V1__STEP_EVENT__INIT;

	se.deployment_id = (char *)dep;
	se.index = idx;
	se.name = (char *)name;
	se.status = (char *)status;
	se.diff = (char *)diff;
	se.message = (char *)"";
	m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_STEP_EVENT;
	m.step_event = &se;
	return send_msg(g, &m);
}

static int send_done(struct rogue *g, const char *dep, const char *status, const uint32_t c[4],
		     const char *message)
{
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__ApplyDone ad = RAILYARD__V1__APPLY_DONE__INIT;

	ad.deployment_id = (char *)dep;
	ad.status = (char *)status;
	ad.ok = c[0];
	ad.changed = c[1];
	ad.failed = c[2];
	ad.skipped = c[3];
	ad.message = (char *)(message ? message : "");
	m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_APPLY_DONE;
	m.apply_done = &ad;
	return send_msg(g, &m);
}

/* Next controller message (owned by the caller), or NULL at the end of the stream. */
static Railyard__V1__ControllerMessage *next_msg(struct rogue *g, int timeout_ms)
{
	ProtobufCMessage *msg = NULL;
	int r = rpc_client_stream_next(g->cs, util_now_mono_ms() + timeout_ms, &msg);

	if (r != 1)
		return NULL;
	g->ack = ((Railyard__V1__ControllerMessage *)msg)->seq;
	return (Railyard__V1__ControllerMessage *)msg;
}

/* Answer one ApplyPlan honestly: every step ok, then succeeded. */
static int answer_plan(struct rogue *g, const Railyard__V1__ApplyPlan *ap)
{
	json_t *plan = json_loads(ap->plan_json, 0, NULL);
	json_t *steps = json_object_get(plan, "steps"), *st;
	uint32_t counts[4] = {0};
	size_t i;
	int r = 0;

	snprintf(g->last_plan, sizeof(g->last_plan), "%s", ap->deployment_id);
	if (g->gate) {
		int64_t until = util_now_mono_ms() + 60000;

		printf("WAITING %s\n", ap->deployment_id);
		fflush(stdout);
		while (access(g->gate, F_OK) != 0 && util_now_mono_ms() < until)
			usleep(20000);
		g->first_step_seq = g->seq + 1;
		g->receipts = 0;
	}
	json_array_foreach(steps, i, st)
	{
		const char *name = json_string_value(json_object_get(st, "name"));

		if (i == 0)
			snprintf(g->first_step, sizeof(g->first_step), "%s", name);
		r = send_step(g, ap->deployment_id, (uint32_t)i, name, "ok", "");
		if (r >= 0 && g->heartbeats) {
			Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
			Railyard__V1__Heartbeat hb = RAILYARD__V1__HEARTBEAT__INIT;

			m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_HEARTBEAT;
			m.heartbeat = &hb;
			r = send_msg(g, &m);
		}
		if (r < 0)
			break;
		counts[0]++;
	}
	if (r >= 0)
		r = send_done(g, ap->deployment_id, "succeeded", counts, g->done_message);
	if (g->gate) {
		printf("SENT %llu %llu\n", (unsigned long long)g->first_step_seq,
		       (unsigned long long)g->seq);
		fflush(stdout);
	}
	printf("PLAN %s %zu\n", ap->deployment_id, json_array_size(steps));
	fflush(stdout);
	json_decref(plan);
	return r;
}

/* Rewrite the figures of a result document as SPEC says (the header comment). */
static void lie_about(json_t *doc, const char *spec)
{
	json_t *r0 = json_array_get(json_object_get(doc, "results"), 0);
	json_t *fig = json_object_get(r0, "latency") ? json_object_get(r0, "latency")
						     : json_object_get(r0, "bw");
	const char *eq = strchr(spec, '='), *key;
	json_t *x, *v;
	char k[64];

	if (!json_is_object(fig))
		return;
	/* KEY=: a figure of the kind of run that has it (gbps is a bw run's, p50 a lat run's). */
	snprintf(k, sizeof(k), "%.*s", eq ? (int)(eq - spec) : 0, spec);
	if (eq && k[0] != '*' && !json_object_get(fig, k))
		return;
	if (strncmp(spec, "*x", 2) == 0) {
		double f = atof(spec + 2);

		json_object_foreach(fig, key, x)
		{
			if (json_is_real(x))
				json_real_set(x, json_real_value(x) * f);
		}
		return;
	}
	if (!eq)
		return;
	v = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
	if (!v)
		return;
	if (strncmp(spec, "*=", 2) == 0) {
		void *tmp;

		json_object_foreach_safe(fig, tmp, key, x)
		{
			if (json_is_number(x))
				json_object_set_new(fig, key, json_deep_copy(v));
		}
		json_decref(v);
		return;
	}
	json_object_set_new(fig, k, v);
}

struct ready_ctx {
	struct rogue *g;
	const char *bench_id;
};

static void liar_ready(void *ud, uint16_t port)
{
	struct ready_ctx *rc = ud;
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__BenchReady br = RAILYARD__V1__BENCH_READY__INIT;

	br.bench_id = (char *)rc->bench_id;
	br.port = port;
	m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_READY;
	m.bench_ready = &br;
	send_msg(rc->g, &m);
}

/* A collective job's report made up without running anything (docs/campaigns.md,
 * "Collectives"): every op and size of the job, consistent figures (algbw = bytes / time,
 * busbw = algbw x nccl-tests' factor), the job's nodes and ranks, every pair probed, CPU that
 * adds up. spec "coll:impossible": 1 MiB in a nanosecond (busbw far above any link);
 * "coll:blame=HOST": a slow job whose pairwise probe puts HOST's pairs at 1 Gb/s and the others
 * at 50 (a plausible lie that blames an honest node). */
static json_t *fake_collective(const json_t *params, const char *spec)
{
	const json_t *hosts = json_object_get(params, "hosts"), *o, *h;
	json_int_t ppn = json_integer_value(json_object_get(params, "ranks_per_node"));
	json_int_t iters = json_integer_value(json_object_get(params, "iters"));
	size_t n = json_array_size(hosts), ranks = n * (size_t)ppn, i, k;
	const char *blame = strncmp(spec, "coll:blame=", 11) == 0 ? spec + 11 : "";
	bool impossible = strcmp(spec, "coll:impossible") == 0;
	json_t *nodes = json_array(), *res = json_array(), *pairs = json_array();
	double bus = 0, f;

	json_array_foreach(hosts, i, h)
	{
		json_t *rl = json_array();

		for (json_int_t q = 0; q < ppn; q++)
			json_array_append_new(rl, json_integer((json_int_t)i * ppn + q));
		json_array_append_new(nodes, json_pack("{s:O, s:o}", "node",
						       json_object_get(h, "node"), "ranks", rl));
	}
	json_array_foreach(json_object_get(params, "ops"), k, o)
	{
		const char *op = json_string_value(o);

		f = strcmp(op, "allreduce") == 0  ? 2.0 * (double)(ranks - 1) / (double)ranks
		    : strcmp(op, "sendrecv") == 0 ? 1.0
						  : (double)(ranks - 1) / (double)ranks;
		for (double b = (double)json_integer_value(json_object_get(params, "min_bytes"));
		     b <= (double)json_integer_value(json_object_get(params, "max_bytes"));
		     b *= 2) {
			double t = impossible ? 0.001 : 50 + b / 10; /* 0.1 GB/s: slow */

			json_array_append_new(res,
					      json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:i}", "op",
							op, "bytes", b, "count", b / 4, "time_us",
							t, "algbw_gbs", b / t / 1e3, "busbw_gbs",
							b / t / 1e3 * f, "wrong", 0));
			bus += b * f * (double)iters / 1e9;
		}
	}
	for (size_t a = 0; a < n; a++)
		for (size_t b = a + 1; b < n; b++) {
			const json_t *ha = json_array_get(hosts, a), *hb = json_array_get(hosts, b);
			bool slow =
				strcmp(json_string_value(json_object_get(ha, "host")), blame) ==
					0 ||
				strcmp(json_string_value(json_object_get(hb, "host")), blame) == 0;

			json_array_append_new(pairs, json_pack("{s:O, s:O, s:i, s:f, s:f}", "a",
							       json_object_get(ha, "node"), "b",
							       json_object_get(hb, "node"), "bytes",
							       4194304, "time_us", 1000.0, "gbps",
							       slow ? 1.0 : 50.0));
		}
	return json_pack(
		"{s:s, s:O, s:O, s:{s:s, s:i, s:O, s:s, s:I, s:o, s:s, s:s, s:I, s:I, "
		"s:o, s:o, s:{s:f, s:f, s:f, s:f, s:f, s:f, s:f}}, s:{}, s:{}}",
		"kind", "collective", "transport", json_object_get(params, "transport"), "backend",
		json_object_get(params, "backend"), "coll", "program", "railyard-coll", "version",
		1, "backend", json_object_get(params, "backend"), "library", "Open MPI v4.1.4",
		"ranks", (json_int_t)ranks, "nodes", nodes, "dtype", "float", "redop", "sum",
		"iters", iters, "warmup", json_integer_value(json_object_get(params, "warmup")),
		"results", res, "pairs", pairs, "cpu", "wall_s", 2.0, "ranks_cpu_s", 1.0,
		"host_cpu_s", 2.0, "bus_gb", bus, "cores", 0.5, "cpu_s_per_gb",
		bus > 0 ? 1.0 / bus : 0.0, "host_cpu_s_per_gb", bus > 0 ? 2.0 / bus : 0.0, "launch",
		"settings");
}

/* Run one side of a RunBench for real, then report it rewritten (a collective: made up). */
static int run_and_lie(struct rogue *g, const Railyard__V1__RunBench *rb)
{
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__BenchResult br = RAILYARD__V1__BENCH_RESULT__INIT;
	json_t *params = json_loads(rb->params_json, 0, NULL), *result = NULL;
	bool server = strcmp(rb->role, "server") == 0;
	struct ready_ctx rc = {g, rb->bench_id};
	struct bench_params p;
	struct bench_run_opts o = {0};
	char err[256] = "", host[256] = "", *text;
	const char *colon;
	int r;

	if (json_is_string(json_object_get(params, "kind")) &&
	    strcmp(json_string_value(json_object_get(params, "kind")), "collective") == 0) {
		result = fake_collective(params, g->lie ? g->lie : "");
		json_decref(params);
		r = result ? 0 : -ENOMEM;
		goto report;
	}
	bench_params_init(&p);
	json_object_del(params, "sides");
	r = agent_bench_params_from_json(params, &p, err, sizeof(err));
	json_decref(params);
	if (r >= 0 && !server) {
		colon = strrchr(rb->peer, ':');
		if (!colon || (size_t)(colon - rb->peer) >= sizeof(host))
			return -EINVAL;
		memcpy(host, rb->peer, (size_t)(colon - rb->peer));
		p.port = (uint16_t)atoi(colon + 1);
	} else if (r >= 0) {
		/* An ephemeral port, announced in BenchReady: perftest's default 18515 is a fixed
		 * port another test (or a second side of ours) may hold. */
		p.port = 0;
	}
	if (r >= 0)
		r = bench_params_validate(&p, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "rogue_client: RunBench %s: %s\n", rb->bench_id, err);
		return r;
	}
	o.deadline_ms = (uint64_t)util_now_mono_ms() + rb->deadline_ms;
	o.on_ready = liar_ready;
	o.ud = &rc;
	o.err = err;
	o.errlen = sizeof(err);
	r = server ? bench_run_server(&p, &o, &result) : bench_run_client(&p, host, &o, &result);
	if (r < 0) {
		fprintf(stderr, "rogue_client: bench %s: %s\n", rb->bench_id, err);
		result = bench_result_error(&p, server ? BENCH_SERVER : BENCH_CLIENT, r, err);
	} else {
		lie_about(result, g->lie);
	}
report:
	text = json_dumps(result, JSON_COMPACT);
	json_decref(result);
	if (!text)
		return -ENOMEM;
	br.bench_id = rb->bench_id;
	br.ok = r >= 0;
	br.result_json = text;
	br.role = (char *)rb->role;
	m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_RESULT;
	m.bench_result = &br;
	r = send_msg(g, &m);
	free(text);
	printf("LIED %s %s\n", rb->bench_id, rb->role);
	fflush(stdout);
	return r;
}

/* A facts document of 2 MiB (over the controller's 1 MiB): "{", spaces, "}". Caller frees. */
static char *huge_facts(void)
{
	size_t n = 2 * 1024 * 1024;
	char *huge = malloc(n + 1);

	if (!huge) {
		fprintf(stderr, "rogue_client: out of memory\n");
		exit(2);
	}
	memset(huge, ' ', n);
	huge[0] = '{';
	huge[n - 1] = '}';
	huge[n] = '\0';
	return huge;
}

/* Send the forged messages; return how many answers to expect. */
static int forge(struct rogue *g, const char *kind, const char *dep)
{
	static const uint32_t zero[4] = {0};

	if (strcmp(kind, "step-failed") == 0)
		return send_step(g, dep, 0, g->first_step[0] ? g->first_step : "s0", "failed", "") <
				       0
			       ? -1
			       : 1;
	if (strncmp(kind, "rebooting:", 10) == 0)
		return send_step(g, dep, (uint32_t)strtoul(kind + 10, NULL, 10), "reboot",
				 "rebooting", "") < 0
			       ? -1
			       : 1;
	if (strcmp(kind, "done-succeeded") == 0 || strcmp(kind, "done-failed") == 0)
		return send_done(g, dep, kind + 5, zero, "forged") < 0 ? -1 : 1;
	if (strcmp(kind, "bench-ready") == 0 || strncmp(kind, "bench-result", 12) == 0) {
		Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
		Railyard__V1__BenchReady br = RAILYARD__V1__BENCH_READY__INIT;
		Railyard__V1__BenchResult res = RAILYARD__V1__BENCH_RESULT__INIT;

		if (strcmp(kind, "bench-ready") == 0) {
			br.bench_id = (char *)dep;
			br.port = 18515;
			m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_READY;
			m.bench_ready = &br;
		} else {
			res.bench_id = (char *)dep;
			res.ok = true;
			res.result_json = (char *)"{\"ok\":true,\"results\":[]}";
			if (kind[12] == ':')
				res.role = (char *)kind + 13;
			m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_RESULT;
			m.bench_result = &res;
		}
		return send_msg(g, &m) < 0 ? -1 : 1;
	}
	if (strncmp(kind, "health:", 7) == 0) {
		/* A HealthEvent, honest ("health:ok") or with one field out of the protocol's
		 * limits. */
		Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
		Railyard__V1__HealthEvent he = RAILYARD__V1__HEALTH_EVENT__INIT;
		const char *v = kind + 7;
		static char big[4096];

		he.kind = (char *)(strcmp(v, "bad-kind") == 0 ? "rumour" : "xid");
		he.severity = (char *)(strcmp(v, "bad-severity") == 0 ? "apocalyptic" : "critical");
		he.source = (char *)"0000:18:00";
		he.what = (char *)(strcmp(v, "control") == 0 ? "Xid 79\e[2J forged"
							     : "Xid 79: forged");
		he.detail = (char *)"";
		if (strcmp(v, "huge-detail") == 0) {
			memset(big, 'x', sizeof(big) - 1);
			he.detail = big;
		}
		he.at_ms = strcmp(v, "future") == 0 ? util_now_unix_ms() + 86400000LL
						    : util_now_unix_ms();
		if (strcmp(v, "empty-source") == 0)
			he.source = (char *)"";
		m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_HEALTH_EVENT;
		m.health_event = &he;
		return send_msg(g, &m) < 0 ? -1 : 1;
	}
	if (strcmp(kind, "huge-facts-step") == 0) {
		Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
		Railyard__V1__FactsUpdate fu = RAILYARD__V1__FACTS_UPDATE__INIT;
		char *huge = huge_facts();
		int r;

		fu.facts_json = huge;
		m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_FACTS_UPDATE;
		m.facts_update = &fu;
		r = send_msg(g, &m);
		free(huge);
		if (r >= 0)
			r = send_step(g, dep, 0, "s0", "failed", "");
		return r < 0 ? -1 : 1;
	}
	if (strncmp(kind, "big-steps:", 10) == 0) {
		int n = atoi(kind + 10);
		size_t size = 1024 * 1024;
		char *diff = malloc(size + 1), name[32];

		if (!diff)
			return -1;
		memset(diff, '+', size);
		diff[size] = '\0';
		for (int i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "big %d", i);
			if (send_step(g, dep, (uint32_t)i, name, "changed", diff) < 0) {
				free(diff);
				return -1;
			}
		}
		free(diff);
		return n;
	}
	fprintf(stderr, "rogue_client: unknown --forge %s\n", kind);
	return -1;
}

static int flood(struct rpc_channel *ch, int count)
{
	static const char *const names[] = {"OK", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
					    "UNAVAILABLE", "OTHER"};
	int tally[5] = {0};

	for (int i = 0; i < count; i++) {
		Railyard__V1__EnrollRequest rq = RAILYARD__V1__ENROLL_REQUEST__INIT;
		struct rpc_status st = {0};
		ProtobufCMessage *resp = NULL;
		char host[32];
		int k;

		snprintf(host, sizeof(host), "flood-%d", i);
		rq.token =
			(char *)"ry1."
				"0000000000000000000000000000000000000000000000000000000000000bad";
		rq.hostname = host;
		rq.csr_pem = (char *)"";
		if (rpc_unary_call(ch, "/railyard.v1.Controller/Enroll", &rq.base,
				   &railyard__v1__enroll_response__descriptor, 10000, &resp,
				   &st) < 0)
			return 2;
		if (resp)
			protobuf_c_message_free_unpacked(resp, NULL);
		k = st.code == GRPC_STATUS_OK			? 0
		    : st.code == GRPC_STATUS_PERMISSION_DENIED	? 1
		    : st.code == GRPC_STATUS_RESOURCE_EXHAUSTED ? 2
		    : st.code == GRPC_STATUS_UNAVAILABLE	? 3
								: 4;
		tally[k]++;
		if (k == 2 && tally[2] == 1)
			printf("first RESOURCE_EXHAUSTED after %d calls: %s\n", i, st.details);
	}
	for (int k = 0; k < 5; k++)
		printf("%s %d\n", names[k], tally[k]);
	return 0;
}

/* The scripted modes after the stream is open. */
static int script(struct rogue *g, const char *mode, const char *facts, const char *forge_kind,
		  const char *dep, int plans)
{
	Railyard__V1__ControllerMessage *m;
	int answered = 0, expect = 0;
	Railyard__V1__AgentMessage hm = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__Hello h = RAILYARD__V1__HELLO__INIT;

	h.agent_version = (char *)"rogue-1";
	h.facts_json = (char *)(facts ? facts : "{}");
	hm.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO;
	hm.hello = &h;
	if (send_msg(g, &hm) < 0)
		return 2;
	while ((m = next_msg(g, strcmp(mode, "liar") == 0 ? 600000 : 30000))) {
		int body = m->body_case;

		if (g->first_step_seq) {
			g->receipts += body == RAILYARD__V1__CONTROLLER_MESSAGE__BODY_RECEIPT;
			const ProtobufCFieldDescriptor *fd =
				protobuf_c_message_descriptor_get_field(m->base.descriptor, body);

			printf("MSG %s %llu\n", fd ? fd->name : "?", (unsigned long long)m->ack);
			if (m->ack == g->seq)
				printf("RECEIPTS %u\n", g->receipts);
			fflush(stdout);
		}
		if (body == RAILYARD__V1__CONTROLLER_MESSAGE__BODY_WELCOME &&
		    strcmp(mode, "forge") == 0) {
			expect = forge(g, forge_kind, dep);
		} else if (body == RAILYARD__V1__CONTROLLER_MESSAGE__BODY_RUN_BENCH &&
			   strcmp(mode, "liar") == 0) {
			if (run_and_lie(g, m->run_bench) < 0)
				break;
		} else if (body == RAILYARD__V1__CONTROLLER_MESSAGE__BODY_APPLY_PLAN &&
			   answered < plans) {
			if (answer_plan(g, m->apply_plan) < 0)
				break;
			answered++;
		} else if (body == RAILYARD__V1__CONTROLLER_MESSAGE__BODY_RECEIPT ||
			   body == RAILYARD__V1__CONTROLLER_MESSAGE__BODY_ERROR) {
			bool forged = expect > 0;

			if (forged && body == RAILYARD__V1__CONTROLLER_MESSAGE__BODY_ERROR)
				printf("ERROR %s: %s\n", m->error->code, m->error->message);
			else if (forged)
				printf("RECEIPT\n");
			fflush(stdout);
			if (forged && --expect == 0) {
				protobuf_c_message_free_unpacked(&m->base, NULL);
				return 0;
			}
			/* The honest part is over once the last plan's end is acknowledged. */
			if (!forged && answered == plans && m->ack == g->seq) {
				if (!forge_kind) {
					protobuf_c_message_free_unpacked(&m->base, NULL);
					return 0;
				}
				expect = forge(g, forge_kind, dep ? dep : g->last_plan);
			}
		}
		protobuf_c_message_free_unpacked(&m->base, NULL);
		if (expect < 0)
			return 2;
	}
	printf("STREAM ENDED %s: %s\n", rpc_status_name(rpc_client_stream_status(g->cs)->code),
	       rpc_client_stream_status(g->cs)->details);
	return 1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"target", required_argument, NULL, 't'},
		{"ca", required_argument, NULL, 'a'},
		{"cert", required_argument, NULL, 'c'},
		{"key", required_argument, NULL, 'k'},
		{"mode", required_argument, NULL, 'm'},
		{"expect", required_argument, NULL, 'e'},
		{"facts", required_argument, NULL, 'f'},
		{"forge", required_argument, NULL, 'F'},
		{"deployment", required_argument, NULL, 'd'},
		{"plans", required_argument, NULL, 'p'},
		{"count", required_argument, NULL, 'n'},
		{"done-message", required_argument, NULL, 'D'},
		{"gate", required_argument, NULL, 'G'},
		{"heartbeats", no_argument, NULL, 'H'},
		{"lie", required_argument, NULL, 'L'},
		{NULL, 0, NULL, 0},
	};
	const char *target = NULL, *ca = NULL, *cert = NULL, *key = NULL, *mode = "hello";
	const char *expect = NULL, *got, *facts_file = NULL, *forge_kind = NULL, *dep = NULL;
	struct rpc_channel_config cc = {0};
	struct rpc_channel *ch = NULL;
	struct rpc_client_stream *cs = NULL;
	struct rogue g = {0};
	char *huge = NULL, *facts = NULL;
	int c, r = 0, welcomed = 0, plans = 1, count = 100, rc;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			target = optarg;
			break;
		case 'a':
			ca = optarg;
			break;
		case 'c':
			cert = optarg;
			break;
		case 'k':
			key = optarg;
			break;
		case 'm':
			mode = optarg;
			break;
		case 'e':
			expect = optarg;
			break;
		case 'f':
			facts_file = optarg;
			break;
		case 'F':
			forge_kind = optarg;
			break;
		case 'd':
			dep = optarg;
			break;
		case 'p':
			plans = atoi(optarg);
			break;
		case 'n':
			count = atoi(optarg);
			break;
		case 'D':
			g.done_message = optarg;
			break;
		case 'G':
			g.gate = optarg;
			break;
		case 'H':
			g.heartbeats = true;
			break;
		case 'L':
			g.lie = optarg;
			break;
		default:
			return 2;
		}
	}
	if (!target || !ca)
		return 2;
	rpc_init();
	cc.target = target;
	cc.tls.ca_pem = slurp(ca);
	cc.tls.cert_pem = slurp(cert);
	cc.tls.key_pem = slurp(key);
	cc.server_name = "railyard-controller";
	facts = slurp(facts_file);
	if (rpc_channel_new(&cc, &ch) < 0) {
		fprintf(stderr, "rogue_client: cannot create the channel\n");
		return 2;
	}
	if (strcmp(mode, "flood") == 0) {
		rc = flood(ch, count);
		goto done;
	}
	/* A refused TLS handshake leaves the channel failing to connect: what a fail-fast
	 * client sees then is UNAVAILABLE. */
	if (rpc_channel_wait_ready(ch, util_now_mono_ms() + 5000) < 0) {
		printf("rogue_client: mode %s -> UNAVAILABLE (channel never became ready)\n", mode);
		got = "UNAVAILABLE";
		goto out;
	}
	if (rpc_client_stream_open(ch, "/railyard.v1.Controller/Connect",
				   &railyard__v1__controller_message__descriptor, &cs) < 0) {
		fprintf(stderr, "rogue_client: cannot open the stream\n");
		return 2;
	}
	if (strcmp(mode, "agent") == 0 || strcmp(mode, "forge") == 0 ||
	    (strcmp(mode, "liar") == 0 && g.lie)) {
		g.cs = cs;
		rc = script(&g, mode, facts, forge_kind, dep, plans);
		goto done;
	}

	if (strcmp(mode, "hello") == 0) {
		r = send_agent(cs, 1, RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO,
			       facts ? facts : "{}");
	} else if (strcmp(mode, "garbage") == 0) {
		static const unsigned char junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x08, 0x96};

		r = rpc_client_stream_send_raw(cs, junk, sizeof(junk));
	} else if (strcmp(mode, "no-hello") == 0) {
		r = send_agent(cs, 1, RAILYARD__V1__AGENT_MESSAGE__BODY_HEARTBEAT, NULL);
	} else if (strcmp(mode, "bad-seq") == 0) {
		r = send_agent(cs, 5, RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO, "{}");
		if (r >= 0)
			r = send_agent(cs, 5, RAILYARD__V1__AGENT_MESSAGE__BODY_HEARTBEAT, NULL);
	} else if (strcmp(mode, "no-body") == 0) {
		r = send_agent(cs, 1, 0, NULL);
	} else if (strcmp(mode, "bad-facts") == 0) {
		r = send_agent(cs, 1, RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO, "[1, 2");
	} else if (strcmp(mode, "huge-facts") == 0) {
		huge = huge_facts();
		r = send_agent(cs, 1, RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO, huge);
	} else {
		fprintf(stderr, "rogue_client: unknown mode %s\n", mode);
		return 2;
	}
	if (r < 0) {
		fprintf(stderr, "rogue_client: send failed: %s\n", ry_strerror(r));
		return 2;
	}

	/* Read until the controller ends the stream; a Welcome in "hello" mode means accepted,
	 * and the client then half-closes by cancelling. */
	for (;;) {
		ProtobufCMessage *msg = NULL;

		r = rpc_client_stream_next(cs, util_now_mono_ms() + 10000, &msg);
		if (r == 1) {
			Railyard__V1__ControllerMessage *m = (Railyard__V1__ControllerMessage *)msg;

			if (m->body_case == RAILYARD__V1__CONTROLLER_MESSAGE__BODY_WELCOME)
				welcomed = 1;
			protobuf_c_message_free_unpacked(msg, NULL);
			if (welcomed && strcmp(mode, "hello") == 0)
				break;
			continue;
		}
		break;
	}
	got = welcomed && r == 1 ? "WELCOME"
	      : r == 0		 ? "TIMEOUT"
				 : rpc_status_name(rpc_client_stream_status(cs)->code);
	printf("rogue_client: mode %s -> %s (%s)\n", mode, got,
	       r == 1 || r == 0 ? "" : rpc_client_stream_status(cs)->details);
out:
	rc = expect && strcmp(got, expect) == 0 ? 0 : 1;
done:
	rpc_client_stream_free(cs);
	rpc_channel_free(ch);
	free(huge);
	free(facts);
	free((char *)cc.tls.ca_pem);
	free((char *)cc.tls.cert_pem);
	free((char *)cc.tls.key_pem);
	rpc_shutdown();
	return rc;
}
