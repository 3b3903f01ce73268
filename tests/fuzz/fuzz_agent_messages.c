/* Fuzz target: every message the controller can send an agent (Welcome, RefreshFacts,
 * ApplyPlan, Cancel, RunBench, Receipt, Error, and kinds it does not know), through the agent's
 * real session loop (nodeagent/session.c), plan jobs with their journals, benchmark orders and
 * outbox, in a state directory on tmpfs against a copy of a fixture sysroot. Seams (ld --wrap):
 * the gRPC client (the stream hands over the input's messages, then ends), facts collection
 * (the sysroot's facts are collected once: a Hello reads hundreds of files), the command runner
 * (no program is started: every command "exits 0"), and the benchmark engine's run calls (an
 * order that passes the agent's checks "runs" and reports at once: the engine's own protocol
 * has its target, fuzz_bench_proto). Every plan runs in check mode whatever the message says,
 * so nothing is written in the sysroot either.
 *
 * Input: records, one per message: u8 kind, u8 flags, fields; strings NUL-terminated.
 *   flags & 3: seq = last + 1 | the same | last + u16 | 0;  flags & 4: ack = u64 (else the
 *   agent's last seq: all acknowledged)
 *   kind % 9: 0 raw ControllerMessage bytes (u16 length), 1 Welcome (node_id, cluster, u32
 *   heartbeat, u64 last_agent_seq), 2 RefreshFacts, 3 ApplyPlan (deployment_id, plan_json:
 *   "@P" a valid plan of the shipped h200-ndr-ib playbook, "@Q" of all step types), 4 Cancel
 *   (deployment_id, bench_id), 5 RunBench (bench_id, role, peer, params_json, u32 deadline),
 *   6 Receipt, 7 Error (code, message, u64 in_reply_to), 8 the stream ends (u8 status).
 * Invariants: what the agent sends packs, decodes and has strictly increasing seqs; its first
 * message on a stream is a Hello. */
#include "tests/fuzz/fuzz_util.h"

#include "common/playbook/playbook.h"
#include "common/rpc/rpc.h"
#include "common/util/error.h"
#include "nodeagent/apply/runner.h"
#include "nodeagent/bench/bench.h"
#include "nodeagent/benchjob.h"
#include "nodeagent/facts/facts.h"
#include "nodeagent/jobs.h"
#include "nodeagent/session.h"
#include "railyard/v1/railyard.pb-c.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STR_MAX (2 * 1024 * 1024)

static char *state_dir, *sysroot, *plan_p, *plan_q;

/* The input being delivered, and what the agent did with its stream. */
static struct {
	struct fuzz_in in;
	struct agent_session *s;
	struct agent_jobs *jobs; /* seen through the busy wraps */
	struct agent_bench *bench;
	uint64_t ctl_seq;
	uint64_t agent_seq; /* the last seq the agent sent on this stream */
	unsigned sent;	    /* messages on this stream */
	bool ended;
	struct rpc_status status;
	int64_t drain_until_ms;
} cur;

/* ---- seams -------------------------------------------------------------------------------- */

int __wrap_rpc_channel_new(const struct rpc_channel_config *cfg, struct rpc_channel **ret);
void __wrap_rpc_channel_free(struct rpc_channel *ch);
int __wrap_rpc_channel_wait_ready(struct rpc_channel *ch, int64_t deadline_mono_ms);
int __wrap_rpc_client_stream_open(struct rpc_channel *ch, const char *path,
				  const ProtobufCMessageDescriptor *resp_desc,
				  struct rpc_client_stream **ret);
int __wrap_rpc_client_stream_send(struct rpc_client_stream *cs, const ProtobufCMessage *msg);
int __wrap_rpc_client_stream_next(struct rpc_client_stream *cs, int64_t deadline_mono_ms,
				  ProtobufCMessage **ret_msg);
const struct rpc_status *__wrap_rpc_client_stream_status(struct rpc_client_stream *cs);
void __wrap_rpc_client_stream_cancel(struct rpc_client_stream *cs);
void __wrap_rpc_client_stream_free(struct rpc_client_stream *cs);
int __wrap_runner_run(const struct runner_cmd *c, struct runner_result *ret);
int __wrap_bench_run_server(const struct bench_params *p, const struct bench_run_opts *opts,
			    json_t **ret_result);
int __wrap_bench_run_client(const struct bench_params *p, const char *peer,
			    const struct bench_run_opts *opts, json_t **ret_result);
int __wrap_facts_collect(const char *root, json_t **ret_facts);
int __real_facts_collect(const char *root, json_t **ret_facts);
bool __wrap_agent_jobs_busy(struct agent_jobs *j);
bool __real_agent_jobs_busy(struct agent_jobs *j);
bool __wrap_agent_bench_busy(struct agent_bench *b);
bool __real_agent_bench_busy(struct agent_bench *b);

static int dummy_channel, dummy_stream;
static json_t *facts;

int __wrap_facts_collect(const char *root, json_t **ret_facts)
{
	(void)root;
	*ret_facts = json_deep_copy(facts);
	return *ret_facts ? 0 : -ENOMEM;
}

int __wrap_rpc_channel_new(const struct rpc_channel_config *cfg, struct rpc_channel **ret)
{
	(void)cfg;
	*ret = (struct rpc_channel *)&dummy_channel;
	return 0;
}

void __wrap_rpc_channel_free(struct rpc_channel *ch)
{
	(void)ch;
}

int __wrap_rpc_channel_wait_ready(struct rpc_channel *ch, int64_t deadline_mono_ms)
{
	(void)ch;
	(void)deadline_mono_ms;
	return 0;
}

int __wrap_rpc_client_stream_open(struct rpc_channel *ch, const char *path,
				  const ProtobufCMessageDescriptor *resp_desc,
				  struct rpc_client_stream **ret)
{
	(void)ch;
	(void)path;
	(void)resp_desc;
	cur.sent = 0;
	cur.ended = false;
	cur.ctl_seq = 0;
	*ret = (struct rpc_client_stream *)&dummy_stream;
	return 0;
}

int __wrap_rpc_client_stream_send(struct rpc_client_stream *cs, const ProtobufCMessage *msg)
{
	Railyard__V1__AgentMessage *m;
	ProtobufCMessage *back = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;

	(void)cs;
	if (cur.ended)
		return -EPIPE;
	FUZZ_CHECK(rpc_pack(msg, &buf, &len) == 0, "the agent sent a message that does not pack");
	FUZZ_CHECK(rpc_unpack(&railyard__v1__agent_message__descriptor, buf, len, &back) == 0,
		   "the agent sent a message that does not decode");
	m = (Railyard__V1__AgentMessage *)back;
	FUZZ_CHECK(m->seq > cur.agent_seq, "agent seq %llu after %llu", (unsigned long long)m->seq,
		   (unsigned long long)cur.agent_seq);
	FUZZ_CHECK(cur.sent > 0 || m->body_case == RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO,
		   "the first message on a stream is kind %d, not a Hello", (int)m->body_case);
	cur.agent_seq = m->seq;
	cur.sent++;
	protobuf_c_message_free_unpacked(back, NULL);
	free(buf);
	return 0;
}

static char *field(struct fuzz_in *in)
{
	char *s = fuzz_str(in, STR_MAX);
	const char *v = strcmp(s, "@P") == 0 ? plan_p : strcmp(s, "@Q") == 0 ? plan_q : NULL;

	if (v) {
		free(s);
		s = strdup(v);
		if (!s)
			abort();
	}
	return s;
}

static void *zalloc(size_t n)
{
	void *p = calloc(1, n);

	if (!p)
		abort();
	return p;
}

/* The next message of the input, as protobuf-c decodes one; NULL when the record ends the
 * stream (status set) or is undecodable (-RY_E_INVALID in *ret). */
static ProtobufCMessage *next_message(int *ret)
{
	struct fuzz_in *in = &cur.in;
	unsigned kind = fuzz_u8(in) % 9, flags = fuzz_u8(in);
	Railyard__V1__ControllerMessage *m;
	ProtobufCMessage *raw = NULL;

	switch (flags & 3) {
	case 0:
		cur.ctl_seq++;
		break;
	case 2:
		cur.ctl_seq += fuzz_u16(in);
		break;
	case 3:
		cur.ctl_seq = 0;
		break;
	}
	if (kind == 8) {
		static const grpc_status_code codes[] = {
			GRPC_STATUS_UNAVAILABLE, GRPC_STATUS_PERMISSION_DENIED,
			GRPC_STATUS_UNAUTHENTICATED, GRPC_STATUS_INVALID_ARGUMENT};

		cur.status.code = codes[fuzz_u8(in) % 4];
		snprintf(cur.status.details, sizeof(cur.status.details), "ended by the input");
		*ret = -EPIPE;
		return NULL;
	}
	if (kind == 0) {
		size_t n;
		const uint8_t *p = fuzz_bytes(in, fuzz_u16(in), &n);

		if (rpc_unpack(&railyard__v1__controller_message__descriptor, p, n, &raw) < 0) {
			*ret = -RY_E_INVALID;
			return NULL;
		}
		m = (Railyard__V1__ControllerMessage *)raw;
		if (m->body_case == RAILYARD__V1__CONTROLLER_MESSAGE__BODY_APPLY_PLAN)
			m->apply_plan->check_mode = true;
		*ret = 1;
		return raw;
	}
	m = zalloc(sizeof(*m));
	railyard__v1__controller_message__init(m);
	m->seq = cur.ctl_seq;
	m->ack = flags & 4 ? fuzz_u64(in) : cur.agent_seq;
	switch (kind) {
	case 1: {
		Railyard__V1__Welcome *w = zalloc(sizeof(*w));

		railyard__v1__welcome__init(w);
		w->node_id = field(in);
		w->cluster = field(in);
		w->heartbeat_interval_ms = fuzz_u32(in);
		w->last_agent_seq = fuzz_u64(in);
		m->body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_WELCOME;
		m->welcome = w;
		break;
	}
	case 2: {
		Railyard__V1__RefreshFacts *r = zalloc(sizeof(*r));

		railyard__v1__refresh_facts__init(r);
		m->body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_REFRESH_FACTS;
		m->refresh_facts = r;
		break;
	}
	case 3: {
		Railyard__V1__ApplyPlan *a = zalloc(sizeof(*a));

		railyard__v1__apply_plan__init(a);
		a->deployment_id = field(in);
		a->plan_json = field(in);
		a->check_mode = true; /* never apply: see the top */
		m->body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_APPLY_PLAN;
		m->apply_plan = a;
		break;
	}
	case 4: {
		Railyard__V1__Cancel *c = zalloc(sizeof(*c));

		railyard__v1__cancel__init(c);
		c->deployment_id = field(in);
		c->bench_id = field(in);
		m->body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_CANCEL;
		m->cancel = c;
		break;
	}
	case 5: {
		Railyard__V1__RunBench *b = zalloc(sizeof(*b));

		railyard__v1__run_bench__init(b);
		b->bench_id = field(in);
		b->role = field(in);
		b->peer = field(in);
		b->params_json = field(in);
		b->deadline_ms = fuzz_u32(in);
		m->body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_RUN_BENCH;
		m->run_bench = b;
		break;
	}
	case 6: {
		Railyard__V1__Receipt *r = zalloc(sizeof(*r));

		railyard__v1__receipt__init(r);
		m->body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_RECEIPT;
		m->receipt = r;
		break;
	}
	default: {
		Railyard__V1__Error *e = zalloc(sizeof(*e));

		railyard__v1__error__init(e);
		e->code = field(in);
		e->message = field(in);
		e->in_reply_to = fuzz_u64(in);
		m->body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_ERROR;
		m->error = e;
		break;
	}
	}
	*ret = 1;
	return &m->base;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Messages while the input lasts; then, once the plans and benchmarks it started are done (or
 * after 10 s), the stream ends and the session is stopped. */
int __wrap_rpc_client_stream_next(struct rpc_client_stream *cs, int64_t deadline_mono_ms,
				  ProtobufCMessage **ret_msg)
{
	int r;

	(void)cs;
	(void)deadline_mono_ms;
	if (cur.ended)
		return -EPIPE;
	if (cur.in.left > 0) {
		ProtobufCMessage *m = next_message(&r);

		if (m) {
			*ret_msg = m;
			return 1;
		}
		if (r == -EPIPE)
			cur.ended = true;
		return r;
	}
	if (!cur.drain_until_ms)
		cur.drain_until_ms = mono_ms() + 10000;
	if (mono_ms() < cur.drain_until_ms && ((cur.jobs && __real_agent_jobs_busy(cur.jobs)) ||
					       (cur.bench && __real_agent_bench_busy(cur.bench)))) {
		usleep(200);
		return 0;
	}
	cur.status.code = GRPC_STATUS_UNAVAILABLE;
	snprintf(cur.status.details, sizeof(cur.status.details), "input consumed");
	cur.ended = true;
	agent_session_stop(cur.s);
	return -EPIPE;
}

const struct rpc_status *__wrap_rpc_client_stream_status(struct rpc_client_stream *cs)
{
	(void)cs;
	return &cur.status;
}

void __wrap_rpc_client_stream_cancel(struct rpc_client_stream *cs)
{
	(void)cs;
	if (!cur.ended) {
		cur.ended = true;
		cur.status.code = GRPC_STATUS_CANCELLED;
		snprintf(cur.status.details, sizeof(cur.status.details), "cancelled");
	}
}

void __wrap_rpc_client_stream_free(struct rpc_client_stream *cs)
{
	(void)cs;
}

int __wrap_runner_run(const struct runner_cmd *c, struct runner_result *ret)
{
	if (!c->argv || !c->argv[0] || !c->argv[0][0])
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	ret->out = strdup("");
	ret->err = strdup("");
	if (!ret->out || !ret->err)
		abort();
	return 0;
}

static json_t *bench_ok(const struct bench_params *p, const char *role)
{
	return json_pack("{s:i, s:b, s:s, s:s, s:{s:s, s:I}, s:[]}", "version", 1, "ok", 1, "tool",
			 "railyard-bench", "role", role, "params", "kind", bench_kind_name(p->kind),
			 "size", (json_int_t)p->size, "results");
}

int __wrap_bench_run_server(const struct bench_params *p, const struct bench_run_opts *opts,
			    json_t **ret_result)
{
	if (opts && opts->on_ready)
		opts->on_ready(opts->ud, p->port ? p->port : 40000);
	*ret_result = bench_ok(p, "server");
	return 0;
}

int __wrap_bench_run_client(const struct bench_params *p, const char *peer,
			    const struct bench_run_opts *opts, json_t **ret_result)
{
	(void)peer;
	(void)opts;
	*ret_result = bench_ok(p, "client");
	return 0;
}

bool __wrap_agent_jobs_busy(struct agent_jobs *j)
{
	cur.jobs = j;
	return __real_agent_jobs_busy(j);
}

bool __wrap_agent_bench_busy(struct agent_bench *b)
{
	cur.bench = b;
	return __real_agent_bench_busy(b);
}

/* ---- the target --------------------------------------------------------------------------- */

static char *render(const char *rel, const char *fixture)
{
	char *path = fuzz_src_path(rel), *root, buf[256], *text;
	struct playbook *pb = NULL;
	struct pb_diags d;
	json_t *node_facts = NULL, *plan = NULL;

	snprintf(buf, sizeof(buf), "tests/fixtures/sysroots/%s", fixture);
	root = fuzz_src_path(buf);
	pb_diags_init(&d);
	if (__real_facts_collect(root, &node_facts) < 0 || playbook_load(path, &pb, &d) < 0 ||
	    playbook_render(pb, node_facts, &plan, &d) < 0) {
		pb_diags_print(&d, stderr);
		abort();
	}
	text = json_dumps(plan, JSON_COMPACT);
	json_decref(plan);
	json_decref(node_facts);
	playbook_free(pb);
	pb_diags_done(&d);
	free(root);
	free(path);
	return text;
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char cmd[8192], *fixture;
	const char *dump = getenv("FUZZ_DUMP_PLANS");

	(void)argc;
	(void)argv;
	fuzz_quiet_logs();
	state_dir = fuzz_mkdtemp("agent-state");
	sysroot = fuzz_mkdtemp("agent-sysroot");
	fixture = fuzz_src_path("tests/fixtures/sysroots/h200-ib");
	snprintf(cmd, sizeof(cmd), "cp -a '%s/.' '%s/'", fixture, sysroot);
	if (system(cmd) != 0)
		abort();
	free(fixture);
	if (__real_facts_collect(sysroot, &facts) < 0)
		abort();
	write_file(state_dir, "agent.conf",
		   "controller = 127.0.0.1:7443\nnode_id = n-fuzz00000001\ncluster = fuzz\n");
	write_file(state_dir, "ca.crt", "-----BEGIN CERTIFICATE-----\n");
	write_file(state_dir, "node.crt", "-----BEGIN CERTIFICATE-----\n");
	write_file(state_dir, "node.key", "-----BEGIN PRIVATE KEY-----\n");
	plan_p = render("playbooks/h200-ndr-ib.yaml", "h200-ib");
	plan_q = render("tests/fixtures/playbooks/good/all-steps.yaml", "h200-ib");
	if (dump) {
		write_file(dump, "plan-p.json", plan_p);
		write_file(dump, "plan-q.json", plan_q);
	}
	return 0;
}

/* What an input leaves in the state directory goes: the next one starts from none. */
static void wipe_state(void)
{
	static const char *const made[] = {"jobs", "backups", "outbox.log"};
	char path[4096];

	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", state_dir, made[i]);
		fuzz_rmtree(path);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agent_session_opts o = {
		.state_dir = state_dir,
		.sysroot = sysroot,
		.backoff_base_ms = 1,
		.backoff_max_ms = 1,
		.connect_timeout_ms = 1,
	};
	char err[512];
	int r;

	memset(&cur, 0, sizeof(cur));
	cur.in = (struct fuzz_in){data, size};
	r = agent_session_new(&o, &cur.s, err, sizeof(err));
	FUZZ_CHECK(r == 0, "agent_session_new: %s", err);
	/* Reconnects (a stream the input ended) until the input is consumed. */
	r = agent_session_run(cur.s);
	FUZZ_CHECK(r == 0 || r == -RY_E_REVOKED, "agent_session_run: %d", r);
	agent_session_free(cur.s);
	wipe_state();
	return 0;
}
