/* The in-process controller of the fuzz targets (fuzz_ctl.h): set-up through the real
 * services, the fake gRPC server stream, the database snapshot. */
#include "tests/fuzz/fuzz_ctl.h"
#include "tests/fuzz/fuzz_util.h"

#include "common/pki/pki.h"
#include "common/util/util.h"
#include "controller/api/api.h"
#include "controller/bench/bench.h"
#include "controller/engine/engine.h"
#include "controller/rollout/deploy.h"
#include "controller/state.h"
#include "controller/throttle.h"
#include "controller/store/store.h"
#include "controller/store/store_apitoken.h"
#include "nodeagent/facts/facts.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the fake gRPC layer (ld --wrap) ------------------------------------------------------ */

int __wrap_rpc_server_start(const struct rpc_server_config *cfg, struct rpc_server **ret,
			    int *ret_port);
void __wrap_rpc_server_stop(struct rpc_server *srv);
void __wrap_rpc_server_free(struct rpc_server *srv);
int __wrap_rpc_stream_send(struct rpc_stream *st, const ProtobufCMessage *msg);
void __wrap_rpc_stream_resume(struct rpc_stream *st);
void __wrap_rpc_stream_finish(struct rpc_stream *st, grpc_status_code code, const char *msg);
void __wrap_rpc_stream_set_retry_after(struct rpc_stream *st, int ms);
struct rpc_stream *__wrap_rpc_stream_ref(struct rpc_stream *st);
void __wrap_rpc_stream_unref(struct rpc_stream *st);
const struct rpc_peer *__wrap_rpc_stream_peer(struct rpc_stream *st);
void __wrap_rpc_stream_set_data(struct rpc_stream *st, void *data);
void *__wrap_rpc_stream_get_data(struct rpc_stream *st);
size_t __wrap_rpc_stream_msg_size(const struct rpc_stream *st);

/* The set-up runs with the engine's threads; afterwards everything is on the fuzzer's thread. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
/* During the set-up: what the controller sent, by node. */
static struct {
	struct rpc_stream *st;
	char plan_id[32];
	char *plan_json;
	char run_bench[8][40]; /* "BENCHID role" */
	unsigned n_run_bench;
} seen[2];
static bool setting_up;

int __wrap_rpc_server_start(const struct rpc_server_config *cfg, struct rpc_server **ret,
			    int *ret_port)
{
	static int dummy;

	(void)cfg;
	*ret = (struct rpc_server *)&dummy;
	if (ret_port)
		*ret_port = 7443;
	return 0;
}

void __wrap_rpc_server_stop(struct rpc_server *srv)
{
	(void)srv;
}

void __wrap_rpc_server_free(struct rpc_server *srv)
{
	(void)srv;
}

/* What the controller sends must pack, decode, and keep its seq/ack order. */
int __wrap_rpc_stream_send(struct rpc_stream *st, const ProtobufCMessage *msg)
{
	Railyard__V1__ControllerMessage *m;
	ProtobufCMessage *back = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	int r;

	pthread_mutex_lock(&lock);
	if (st->finished) {
		pthread_mutex_unlock(&lock);
		return -EPIPE;
	}
	r = rpc_pack(msg, &buf, &len);
	FUZZ_CHECK(r == 0, "the controller sent a message that does not pack: %d", r);
	r = rpc_unpack(&railyard__v1__controller_message__descriptor, buf, len, &back);
	FUZZ_CHECK(r == 0, "the controller sent a message that does not decode");
	m = (Railyard__V1__ControllerMessage *)back;
	FUZZ_CHECK(m->seq > st->last_seq, "controller seq %llu after %llu",
		   (unsigned long long)m->seq, (unsigned long long)st->last_seq);
	FUZZ_CHECK(m->ack >= st->last_ack, "ack went back from %llu to %llu",
		   (unsigned long long)st->last_ack, (unsigned long long)m->ack);
	st->last_seq = m->seq;
	st->last_ack = m->ack;
	st->sent++;
	st->welcomed |= m->body_case == RAILYARD__V1__CONTROLLER_MESSAGE__BODY_WELCOME;
	for (int i = 0; setting_up && i < 2; i++) {
		if (seen[i].st != st)
			continue;
		if (m->body_case == RAILYARD__V1__CONTROLLER_MESSAGE__BODY_APPLY_PLAN &&
		    !seen[i].plan_json) {
			snprintf(seen[i].plan_id, sizeof(seen[i].plan_id), "%s",
				 m->apply_plan->deployment_id);
			seen[i].plan_json = strdup(m->apply_plan->plan_json);
		}
		if (m->body_case == RAILYARD__V1__CONTROLLER_MESSAGE__BODY_RUN_BENCH &&
		    seen[i].n_run_bench < 8)
			snprintf(seen[i].run_bench[seen[i].n_run_bench++],
				 sizeof(seen[i].run_bench[0]), "%s %s", m->run_bench->bench_id,
				 m->run_bench->role);
	}
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	protobuf_c_message_free_unpacked(back, NULL);
	free(buf);
	return 0;
}

void __wrap_rpc_stream_resume(struct rpc_stream *st)
{
	pthread_mutex_lock(&lock);
	st->resumed++;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

void __wrap_rpc_stream_finish(struct rpc_stream *st, grpc_status_code code, const char *msg)
{
	(void)msg;
	pthread_mutex_lock(&lock);
	if (!st->finished) {
		st->finished = true;
		st->code = code;
	}
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

/* A refusal's retry-after (session_open at the open-file limit or overloaded): recorded on the
 * fake stream; the real one's would write past it. */
void __wrap_rpc_stream_set_retry_after(struct rpc_stream *st, int ms)
{
	pthread_mutex_lock(&lock);
	if (!st->finished)
		st->retry_after_ms = ms > 0 ? ms : 0;
	pthread_mutex_unlock(&lock);
}

struct rpc_stream *__wrap_rpc_stream_ref(struct rpc_stream *st)
{
	pthread_mutex_lock(&lock);
	st->refs++;
	pthread_mutex_unlock(&lock);
	return st;
}

void __wrap_rpc_stream_unref(struct rpc_stream *st)
{
	int left;

	if (!st)
		return;
	pthread_mutex_lock(&lock);
	left = --st->refs;
	pthread_mutex_unlock(&lock);
	FUZZ_CHECK(left >= 0, "stream released more often than referenced");
	if (left == 0) {
		free(st->peer.cert_pem);
		free(st);
	}
}

const struct rpc_peer *__wrap_rpc_stream_peer(struct rpc_stream *st)
{
	return &st->peer;
}

void __wrap_rpc_stream_set_data(struct rpc_stream *st, void *data)
{
	st->data = data;
}

void *__wrap_rpc_stream_get_data(struct rpc_stream *st)
{
	return st->data;
}

size_t __wrap_rpc_stream_msg_size(const struct rpc_stream *st)
{
	return st->msg_size;
}

/* ---- streams ------------------------------------------------------------------------------ */

struct rpc_stream *fuzz_ctl_open(struct fuzz_ctl *c, int i)
{
	struct rpc_stream *st = calloc(1, sizeof(*st));
	char *msg = NULL;
	grpc_status_code code;

	if (!st)
		abort();
	st->refs = 1; /* the layer's own */
	st->peer.authenticated = true;
	snprintf(st->peer.common_name, sizeof(st->peer.common_name), "%s", c->node[i]);
	st->peer.cert_pem = strdup(c->cert[i]);
	snprintf(st->peer.address, sizeof(st->peer.address), "ipv4:127.0.0.1:%d", 40000 + i);
	/* The server's periodic recount (watch_descriptors) would find these fake streams hold
	 * no descriptor: without it, each open counts one more until the guard refuses. */
	atomic_store(&c->srv->fds_opened, 0);
	code = ctl_session_ops.open(c->srv, st, &st->peer, &msg);
	free(msg);
	if (code != GRPC_STATUS_OK) {
		__wrap_rpc_stream_unref(st);
		return NULL;
	}
	return st;
}

/* In the set-up (the engine's threads at work), wait up to 30 s while *counter is still was and
 * the stream has not ended. Caller holds lock. */
static void wait_setup(const struct rpc_stream *st, const unsigned *counter, unsigned was)
{
	struct timespec ts;

	if (!setting_up)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 30;
	while (*counter == was && !st->finished)
		if (pthread_cond_timedwait(&cond, &lock, &ts) != 0)
			break;
}

bool fuzz_ctl_deliver(struct fuzz_ctl *c, struct rpc_stream *st, ProtobufCMessage *msg)
{
	unsigned resumed = st->resumed, sent = st->sent;
	int r;

	st->msg_size = protobuf_c_message_get_packed_size(msg);
	r = ctl_session_ops.message(c->srv, st, msg);
	if (r == RPC_MSG_DONE) {
		protobuf_c_message_free_unpacked(msg, NULL);
		return !st->finished;
	}
	if (r == RPC_MSG_TAKEN) {
		/* Read ahead: stored later, without stopping the stream (so never resumed). In
		 * the set-up, wait until it is answered (a Receipt or an Error) or ends the
		 * stream; afterwards the worker is stopped and it was stored on this thread. */
		pthread_mutex_lock(&lock);
		wait_setup(st, &st->sent, sent);
		FUZZ_CHECK(st->resumed == resumed, "a message read ahead resumed the stream");
		/* Stored on this thread: acknowledged (Receipt or Error) or its stream ended. */
		FUZZ_CHECK(setting_up || st->sent > sent || st->finished,
			   "a message read ahead was neither answered nor ended its stream");
		pthread_mutex_unlock(&lock);
		return !st->finished;
	}
	FUZZ_CHECK(r == RPC_MSG_HELD, "message() returned %d", r);
	pthread_mutex_lock(&lock);
	wait_setup(st, &st->resumed, resumed);
	/* A held message is answered (resume) or ends the stream, exactly once. */
	FUZZ_CHECK(st->resumed == resumed + 1 || (st->resumed == resumed && st->finished),
		   "held message: resumed %u times, finished %d", st->resumed - resumed,
		   st->finished);
	pthread_mutex_unlock(&lock);
	return !st->finished;
}

void fuzz_ctl_close(struct fuzz_ctl *c, struct rpc_stream *st, bool cancelled)
{
	if (!st)
		return;
	ctl_session_ops.closed(c->srv, st, cancelled);
	__wrap_rpc_stream_unref(st);
}

/* ---- set-up ------------------------------------------------------------------------------- */

static void die(const char *what, const char *why)
{
	fprintf(stderr, "fuzz_ctl: %s: %s\n", what, why);
	abort();
}

static void enroll(struct fuzz_ctl *c, int i)
{
	Railyard__V1__EnrollRequest rq = RAILYARD__V1__ENROLL_REQUEST__INIT;
	Railyard__V1__EnrollResponse *resp;
	ProtobufCMessage *out = NULL;
	struct rpc_peer peer = {0};
	EVP_PKEY *key = NULL;
	char *csr = NULL, *msg = NULL, host[32];

	snprintf(host, sizeof(host), "gpu-node-%02d", i + 1);
	snprintf(peer.address, sizeof(peer.address), "ipv4:127.0.0.1:%d", 30000 + i);
	if (pki_key_generate(&key) < 0 || pki_csr_create(key, host, &csr) < 0)
		die("enroll", "no key or CSR");
	rq.token = c->token;
	rq.csr_pem = csr;
	rq.hostname = host;
	rq.agent_version = (char *)"0.1.0";
	if (ctl_enroll(c->srv, &peer, &rq.base, &out, &msg) != GRPC_STATUS_OK)
		die("enroll", msg ? msg : "refused");
	resp = (Railyard__V1__EnrollResponse *)out;
	snprintf(c->node[i], sizeof(c->node[i]), "%s", resp->node_id);
	c->cert[i] = strdup(resp->cert_pem);
	protobuf_c_message_free_unpacked(out, NULL);
	EVP_PKEY_free(key);
	free(csr);
}

static void hello(struct fuzz_ctl *c, struct rpc_stream *st, int i, uint64_t seq)
{
	Railyard__V1__AgentMessage *m = calloc(1, sizeof(*m));
	Railyard__V1__Hello *h = calloc(1, sizeof(*h));

	if (!m || !h)
		abort();
	railyard__v1__agent_message__init(m);
	railyard__v1__hello__init(h);
	h->agent_version = strdup("0.1.0");
	h->facts_json = strdup(c->facts[i]);
	h->boot_id = strdup(i ? "boot-b" : "boot-a");
	m->seq = seq;
	m->body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO;
	m->hello = h;
	if (!fuzz_ctl_deliver(c, st, &m->base) || !st->welcomed)
		die("hello", "no Welcome");
}

static void bench_ready(struct fuzz_ctl *c, struct rpc_stream *st, const char *id, uint64_t seq)
{
	Railyard__V1__AgentMessage *m = calloc(1, sizeof(*m));
	Railyard__V1__BenchReady *b = calloc(1, sizeof(*b));

	if (!m || !b)
		abort();
	railyard__v1__agent_message__init(m);
	railyard__v1__bench_ready__init(b);
	b->bench_id = strdup(id);
	b->port = 18515;
	m->seq = seq;
	m->body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_READY;
	m->bench_ready = b;
	if (!fuzz_ctl_deliver(c, st, &m->base))
		die("bench", "BenchReady ended the session");
}

/* Wait until node i was sent "ID role" (or a plan, when want is NULL). */
static void wait_sent(int i, const char *want)
{
	struct timespec ts;
	bool ok = false;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 30;
	pthread_mutex_lock(&lock);
	for (;;) {
		if (!want)
			ok = seen[i].plan_json != NULL;
		for (unsigned k = 0; want && k < seen[i].n_run_bench; k++)
			ok |= strcmp(seen[i].run_bench[k], want) == 0;
		if (ok || pthread_cond_timedwait(&cond, &lock, &ts) != 0)
			break;
	}
	pthread_mutex_unlock(&lock);
	if (!ok)
		die("waiting for the controller to send", want ? want : "a plan");
}

static void bench(struct fuzz_ctl *c, int k, int client, int server)
{
	struct ctl_bench_request rq = {0};
	struct ctl_bench_created out;
	struct ctl_error err;

	ctl_error_init(&err);
	rq.from = c->node[client];
	rq.to = c->node[server];
	rq.kind = "lat";
	rq.transport = "tcp";
	rq.gid_index = -2;
	rq.ib_port = rq.tclass = rq.sl = -1;
	rq.timeout_ms = 3600 * 1000;
	rq.cluster = "fuzz";
	rq.actor = "fuzz";
	if (ctl_bench_create(c->state->store, &rq, &out, &err) < 0)
		die("bench create", err.message);
	snprintf(c->bench[k], sizeof(c->bench[k]), "%s", out.id);
	ctl_error_done(&err);
	ctl_engine_kick(c->srv->engine);
}

/* The database as the set-up left it, in an in-memory database attached to a connection of our
 * own: a reset copies every table back by SQL, not through the backup API, which would bump the
 * schema cookie and make every connection of the store parse the schema again. */
static sqlite3 *live;
static sqlite3_stmt **restore;
static size_t n_restore;
static int64_t data_version = -1;

static void sql(const char *q)
{
	char *err = NULL;

	if (sqlite3_exec(live, q, NULL, NULL, &err) != SQLITE_OK)
		die(q, err ? err : sqlite3_errmsg(live));
}

static void add_restore(const char *q)
{
	restore = realloc(restore, (n_restore + 1) * sizeof(*restore));
	if (!restore || sqlite3_prepare_v2(live, q, -1, &restore[n_restore], NULL) != SQLITE_OK)
		die(q, sqlite3_errmsg(live));
	n_restore++;
}

static int64_t version_now(void)
{
	sqlite3_stmt *q;
	int64_t v = -1;

	if (sqlite3_prepare_v2(live, "PRAGMA data_version", -1, &q, NULL) == SQLITE_OK &&
	    sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return v;
}

/* ", a, b, c": the columns of table t (a static buffer). */
static const char *columns(const char *t)
{
	static char buf[4096];
	size_t off = 0;
	sqlite3_stmt *q;
	char *sel = sqlite3_mprintf("SELECT name FROM pragma_table_info(%Q)", t);

	if (sqlite3_prepare_v2(live, sel, -1, &q, NULL) != SQLITE_OK)
		die(sel, sqlite3_errmsg(live));
	buf[0] = '\0';
	while (sqlite3_step(q) == SQLITE_ROW) {
		char *one = sqlite3_mprintf(", \"%w\"", (const char *)sqlite3_column_text(q, 0));

		if (off + strlen(one) + 1 > sizeof(buf))
			die("columns of", t);
		memcpy(buf + off, one, strlen(one) + 1);
		off += strlen(one);
		sqlite3_free(one);
	}
	sqlite3_finalize(q);
	sqlite3_free(sel);
	return buf;
}

static void snapshot_take(const char *path)
{
	sqlite3_stmt *tables;

	if (sqlite3_open_v2(path, &live, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
		die("database snapshot", "cannot open");
	sqlite3_busy_timeout(live, 5000);
	sql("ATTACH DATABASE ':memory:' AS snap");
	if (sqlite3_prepare_v2(
		    live, "SELECT name FROM main.sqlite_master WHERE type = 'table' ORDER BY name",
		    -1, &tables, NULL) != SQLITE_OK)
		die("database snapshot", sqlite3_errmsg(live));
	add_restore("BEGIN IMMEDIATE");
	while (sqlite3_step(tables) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(tables, 0);
		char *q;

		/* Every table keeps its rowids (sqlite_sequence has none to keep, and its name is
		 * reserved in every schema: its copy is snap.fuzz_sqlite_sequence). */
		if (strcmp(t, "sqlite_sequence") == 0) {
			sql("CREATE TABLE snap.fuzz_sqlite_sequence AS SELECT * FROM "
			    "main.sqlite_sequence");
			q = sqlite3_mprintf("INSERT INTO main.sqlite_sequence SELECT * FROM "
					    "snap.fuzz_sqlite_sequence");
		} else {
			q = sqlite3_mprintf(
				"CREATE TABLE snap.\"%w\" AS SELECT rowid AS fuzz_rowid, * "
				"FROM main.\"%w\"",
				t, t);
			sql(q);
			sqlite3_free(q);
			q = sqlite3_mprintf(
				"INSERT INTO main.\"%w\"(rowid%s) SELECT * FROM snap.\"%w\"", t,
				columns(t), t);
		}
		{
			char *del = sqlite3_mprintf("DELETE FROM main.\"%w\"", t);

			add_restore(del);
			sqlite3_free(del);
		}
		add_restore(q);
		sqlite3_free(q);
	}
	sqlite3_finalize(tables);
	add_restore("COMMIT");
	data_version = -1;
}

static void snapshot_restore(void)
{
	int64_t v = version_now();

	/* Nothing was committed since the last restore: nothing to undo. */
	if (v == data_version)
		return;
	for (size_t i = 0; i < n_restore; i++) {
		int r = sqlite3_step(restore[i]);

		sqlite3_reset(restore[i]);
		if (r != SQLITE_DONE)
			die("database restore", sqlite3_errmsg(live));
	}
	data_version = version_now();
}

static char *facts_of(const char *sysroot)
{
	char *root, rel[128], *text;
	json_t *facts = NULL;

	snprintf(rel, sizeof(rel), "tests/fixtures/sysroots/%s", sysroot);
	root = fuzz_src_path(rel);
	if (facts_collect(root, &facts) < 0)
		die("facts", root);
	text = json_dumps(facts, JSON_COMPACT);
	json_decref(facts);
	free(root);
	return text;
}

static struct ctl_server *the_server;

/* At exit, before the state directory goes: the reaper would take its removal for a database
 * deleted under a serving controller and stop the process with SIGTERM. */
static void stop_reaper(void)
{
	struct ctl_server *srv = the_server;

	pthread_mutex_lock(&srv->lock);
	srv->stopping = true;
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
	if (srv->reaper_started)
		pthread_join(srv->reaper, NULL);
	srv->reaper_started = false;
}

struct fuzz_ctl *fuzz_ctl_setup(bool with_api)
{
	struct fuzz_ctl *c = calloc(1, sizeof(*c));
	struct ctl_server_config cfg = {
		.listen = "127.0.0.1:0",
		.heartbeat_interval_ms = 5000,
		.heartbeat_timeout_ms = 24 * 3600 * 1000,
		.threads = 4,
		.cert_days = 30,
	};
	struct rpc_stream *st[2];
	struct ctl_deploy_request dr = {0};
	struct ctl_deploy_created created = {0};
	struct ctl_error err;
	char errbuf[512], want[64], *pb_path;
	EVP_PKEY *key = NULL;
	size_t pb_len;

	if (!c)
		abort();
	setting_up = true;
	c->dir = fuzz_mkdtemp("ctl");
	if (ctl_state_init(c->dir, NULL, 0, errbuf, sizeof(errbuf)) < 0 ||
	    ctl_state_open(c->dir, true, &c->state, errbuf, sizeof(errbuf)) < 0)
		die("state", errbuf);
	if (store_token_create(c->state->store, "fuzz", 24 * 3600 * 1000LL, 3, util_now_unix_ms(),
			       &c->token) < 0)
		die("token", "not created");
	if (ctl_server_start(c->state, &cfg, &c->srv, errbuf, sizeof(errbuf)) < 0)
		die("server", errbuf);
	the_server = c->srv;
	atexit(stop_reaper);
	if (with_api) {
		struct ctl_api_config ac = {0};
		struct ctl_api *api;

		if (ctl_api_start(c->srv, &ac, &api, errbuf, sizeof(errbuf)) < 0)
			die("api", errbuf);
	}
	c->facts[0] = facts_of("h200-ib");
	c->facts[1] = facts_of("h200-ib-2");
	for (int i = 0; i < 2; i++) {
		enroll(c, i);
		st[i] = fuzz_ctl_open(c, i);
		if (!st[i])
			die("session", "refused");
		pthread_mutex_lock(&lock);
		seen[i].st = st[i];
		pthread_mutex_unlock(&lock);
		hello(c, st[i], i, 1);
	}
	if (pki_key_generate(&key) < 0 || pki_csr_create(key, "gpu-node-03", &c->csr) < 0)
		die("csr", "not made");
	EVP_PKEY_free(key);

	/* A deployment: node A is sent its plan and reports nothing. */
	pb_path = fuzz_src_path("playbooks/h200-ndr-ib.yaml");
	dr.playbook_text = fuzz_read_file(pb_path, &pb_len);
	dr.playbook_len = pb_len;
	dr.playbook_file = "h200-ndr-ib.yaml";
	dr.cluster = "fuzz";
	dr.canary = -1;
	dr.pause_ms = -1;
	dr.actor = "fuzz";
	ctl_error_init(&err);
	if (ctl_deploy_create(c->state->store, &dr, &created, &err) < 0)
		die("deploy", err.message);
	ctl_error_done(&err);
	snprintf(c->deployment, sizeof(c->deployment), "%s", created.id);
	ctl_deploy_created_done(&created);
	free((char *)dr.playbook_text);
	free(pb_path);
	ctl_engine_kick(c->srv->engine);
	wait_sent(0, NULL); /* node B waits: the playbook's canary batch is one node */
	c->plan = json_loads(seen[0].plan_json, 0, NULL);
	if (!c->plan || strcmp(seen[0].plan_id, c->deployment) != 0)
		die("deploy", "node A was sent another plan");

	/* Benchmark runs: B->A and A->B with their clients started, B->A waiting for its server. */
	bench(c, 0, 1, 0);
	snprintf(want, sizeof(want), "%s server", c->bench[0]);
	wait_sent(0, want);
	bench_ready(c, st[0], c->bench[0], 2);
	snprintf(want, sizeof(want), "%s client", c->bench[0]);
	wait_sent(1, want);
	bench(c, 1, 0, 1);
	snprintf(want, sizeof(want), "%s server", c->bench[1]);
	wait_sent(1, want);
	bench_ready(c, st[1], c->bench[1], 2);
	snprintf(want, sizeof(want), "%s client", c->bench[1]);
	wait_sent(0, want);
	bench(c, 2, 1, 0);
	snprintf(want, sizeof(want), "%s server", c->bench[2]);
	wait_sent(0, want);

	/* From here on, every message is stored on the fuzzer's thread. */
	ctl_engine_stop_passes(c->srv->engine);
	ctl_engine_stop_ingest(c->srv->engine);
	for (int i = 0; i < 2; i++) {
		fuzz_ctl_close(c, st[i], true);
		free(seen[i].plan_json);
	}
	memset(seen, 0, sizeof(seen));
	setting_up = false;
	snapshot_take(store_path(c->state->store));
	fuzz_ctl_reset(c);
	return c;
}

void fuzz_ctl_reset(struct fuzz_ctl *c)
{
	struct ctl_throttle_config et = {5, 60000, 60000}, rt = {1000000, 1, 60000};

	snapshot_restore();
	ctl_throttle_free(c->srv->enroll_throttle);
	ctl_throttle_free(c->srv->report_throttle);
	if (ctl_throttle_new(&et, &c->srv->enroll_throttle) < 0 ||
	    ctl_throttle_new(&rt, &c->srv->report_throttle) < 0)
		abort();
	ctl_sessions_done(c->srv);
}

const char *fuzz_ctl_subst(const struct fuzz_ctl *c, const char *s)
{
	if (s[0] != '@' || !s[1])
		return s;
	if (strcmp(s, "@N0") == 0 || strcmp(s, "@N1") == 0)
		return c->node[s[2] - '0'];
	if (strcmp(s, "@D") == 0)
		return c->deployment;
	if (strcmp(s, "@B0") == 0 || strcmp(s, "@B1") == 0 || strcmp(s, "@B2") == 0)
		return c->bench[s[2] - '0'];
	if (strcmp(s, "@T") == 0)
		return c->token;
	if (strcmp(s, "@C") == 0)
		return c->csr;
	if (strcmp(s, "@F0") == 0 || strcmp(s, "@F1") == 0)
		return c->facts[s[2] - '0'];
	if (s[1] == 'S' && s[2] >= '0' && s[2] <= '9' &&
	    (!s[3] || (s[3] >= '0' && s[3] <= '9' && !s[4]))) {
		size_t i = (size_t)atoi(s + 2);
		const char *name = json_string_value(json_object_get(
			json_array_get(json_object_get(c->plan, "steps"), i), "name"));

		return name ? name : s;
	}
	return s;
}

char *fuzz_ctl_subst_all(const struct fuzz_ctl *c, const char *s, size_t len, size_t *ret_len)
{
	static const char *const tokens[] = {"@N0", "@N1", "@D", "@B0", "@B1", "@B2", "@T"};
	size_t cap = len * 2 + 64, n = 0;
	char *out = malloc(cap);

	if (!out)
		abort();
	for (size_t i = 0; i < len;) {
		const char *v = NULL;
		size_t tl = 0;

		for (size_t k = 0; s[i] == '@' && !v && k < sizeof(tokens) / sizeof(tokens[0]);
		     k++) {
			tl = strlen(tokens[k]);
			if (len - i >= tl && memcmp(s + i, tokens[k], tl) == 0)
				v = fuzz_ctl_subst(c, tokens[k]);
		}
		if (!v) {
			v = s + i;
			tl = 1;
		}
		{
			size_t vl = v == s + i ? 1 : strlen(v);

			if (n + vl + 1 > cap) {
				cap = (n + vl + 1) * 2;
				out = realloc(out, cap);
				if (!out)
					abort();
			}
			memcpy(out + n, v, vl);
			n += vl;
		}
		i += tl;
	}
	out[n] = '\0';
	*ret_len = n;
	return out;
}
