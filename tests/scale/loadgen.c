/* railyard-loadgen: N simulated agents in one process, for measuring a controller at fleet
 * scale. Each agent is enrolled for real (agent_enroll(): CA pinned by fingerprint, its own key,
 * the token flow), holds its own channel (its own TCP connection and mTLS session) and one
 * Connect stream, and speaks the agent's protocol: Hello with facts, heartbeats at the interval
 * the Welcome gives, seq/ack with an outbox (the agent's own, nodeagent/outbox.c, in memory:
 * results are kept until acknowledged and sent again on the next session), FactsUpdate on
 * RefreshFacts. Plans are validated like the agent does and then simulated, not applied: every
 * step is reported ok (or changed) after --step-delay, with a message saying so. Benchmark
 * orders are answered with a failed BenchResult saying that a simulated agent runs none.
 *
 * All streams share one completion queue (rpc_client_loop, a few threads); one timer thread
 * drives heartbeats, step delays and reconnects. Status goes to stdout once a second (text, or
 * one JSON object a line with --json), with events as they happen: all_online when every agent
 * is online (again), deployment when every agent has had a deployment's end acknowledged (and
 * the counts of each deployment in the status lines). Runs until SIGINT/SIGTERM. */
#include "nodeagent/config.h"
#include "nodeagent/enroll.h"
#include "nodeagent/facts/facts.h"
#include "nodeagent/outbox.h"
#include "common/log/log.h"
#include "common/playbook/playbook.h"
#include "common/rpc/rpc.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"
#include "railyard/v1/railyard.pb-c.h"

#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define LG_SERVER_NAME	"railyard-controller"
#define LG_CONNECT_PATH "/railyard.v1.Controller/Connect"
#define LG_AGENTS_MAX	100000
#define LG_DEPS_MAX	64 /* deployments tracked for the "deployment" event */
#define LG_SEEN_MAX	16 /* plans an agent remembers (a re-sent ApplyPlan is not run twice) */
#define LG_CONNECTORS	2  /* threads that open sessions */

struct lg_opts {
	const char *controller, *token, *fingerprint, *state_dir, *sysroot, *prefix;
	long agents, connect_rate, enroll_parallel, step_delay_ms, threads;
	int backoff_max_ms;
	bool json, enroll_only, changed;
};

enum lg_timer { T_CONNECT, T_HEARTBEAT, T_STEP, T_KINDS };

struct lg_plan {
	struct lg_plan *next;
	char dep[72];
	char **names;
	size_t n, next_step;
	bool check;
};

struct lg_agent {
	pthread_mutex_t lock;
	long idx;
	char name[64], dir[4096];
	char *ca_pem, *cert_pem, *key_pem;
	struct rpc_channel *ch;
	struct rpc_async_stream *st;
	struct outbox *ob;
	uint64_t seq, last_ctl_seq;
	bool welcomed, online, dead;
	int heartbeat_ms;
	struct rpc_backoff bo;
	unsigned gen[T_KINDS];	    /* a timer fires only if its generation is current */
	struct lg_plan *plans;	    /* the running one first */
	char seen[LG_SEEN_MAX][72]; /* the plans this agent was sent */
	unsigned n_seen;
	/* Per seen plan: its ApplyDone is in the outbox / was acknowledged (counted). */
	bool done_pushed[LG_SEEN_MAX], done_counted[LG_SEEN_MAX];
};

struct lg_timer_ent {
	int64_t due;
	long idx;
	int kind;
	unsigned gen;
};

struct lg_dep {
	char id[72];
	long received, acked;
	int64_t first_ms, received_ms, acked_ms; /* unix ms */
	bool reported;
};

static struct lg_opts opt;
static struct lg_agent *agents;
static struct rpc_client_loop *loop_;
static char *facts_head, *facts_tail; /* the facts document split at the host name */
static _Atomic bool stopping;

/* Counters for the status lines. */
static _Atomic long n_online, n_ever_online, n_sessions, n_ended, n_refused_full, n_refused_busy,
	n_refused_other, n_revoked, n_plans, n_steps, n_bench, n_streams, n_hb;
static _Atomic int64_t all_online_ms;
/* How late the timer thread ran its latest timer since the last status line: a load generator
 * that falls behind its own schedule says so. */
static _Atomic int64_t timer_lag_ms;

static pthread_mutex_t dep_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lg_dep deps[LG_DEPS_MAX];
static size_t n_deps;

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- timers ---------------------------------------------------------------------------- */

static pthread_mutex_t tm_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tm_cond;
static struct lg_timer_ent *heap;
static size_t heap_n, heap_cap;

static void heap_swap(size_t a, size_t b)
{
	struct lg_timer_ent t = heap[a];

	heap[a] = heap[b];
	heap[b] = t;
}

/* Arm timer kind of agent a at now + ms; any earlier one of that kind is void. Caller holds
 * a->lock. */
static void timer_arm(struct lg_agent *a, int kind, int64_t ms)
{
	struct lg_timer_ent e = {util_now_mono_ms() + ms, a->idx, kind, ++a->gen[kind]};
	size_t i;

	pthread_mutex_lock(&tm_lock);
	if (heap_n == heap_cap) {
		size_t cap = heap_cap ? heap_cap * 2 : 1024;
		struct lg_timer_ent *v = realloc(heap, cap * sizeof(*v));

		if (!v) {
			pthread_mutex_unlock(&tm_lock);
			log_error("loadgen: out of memory arming a timer of %s", a->name);
			return;
		}
		heap = v;
		heap_cap = cap;
	}
	i = heap_n++;
	heap[i] = e;
	while (i > 0 && heap[(i - 1) / 2].due > heap[i].due) {
		heap_swap(i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	if (i == 0)
		pthread_cond_signal(&tm_cond);
	pthread_mutex_unlock(&tm_lock);
}

static void timer_disarm(struct lg_agent *a, int kind)
{
	a->gen[kind]++;
}

/* Pop the earliest entry if due. Caller holds tm_lock. */
static bool heap_pop_due(int64_t now, struct lg_timer_ent *ret)
{
	size_t i = 0;

	if (heap_n == 0 || heap[0].due > now)
		return false;
	*ret = heap[0];
	heap[0] = heap[--heap_n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < heap_n && heap[l].due < heap[m].due)
			m = l;
		if (r < heap_n && heap[r].due < heap[m].due)
			m = r;
		if (m == i)
			break;
		heap_swap(i, m);
		i = m;
	}
	return true;
}

/* ---- messages up ------------------------------------------------------------------------ */

/* Number and send one message on the current stream. Caller holds a->lock. */
static int send_msg(struct lg_agent *a, Railyard__V1__AgentMessage *m)
{
	if (!a->st)
		return -EPIPE;
	m->seq = ++a->seq;
	m->ack = a->last_ctl_seq;
	return rpc_async_stream_send(a->st, &m->base);
}

static int64_t outbox_send_cb(void *ud, Railyard__V1__AgentMessage *m)
{
	struct lg_agent *a = ud;
	int r = send_msg(a, m);

	return r < 0 ? r : (int64_t)a->seq;
}

static void flush(struct lg_agent *a)
{
	if (a->st && a->welcomed)
		outbox_flush(a->ob, outbox_send_cb, a);
}

static char *facts_for(const struct lg_agent *a)
{
	size_t h = strlen(facts_head), n = strlen(a->name), t = strlen(facts_tail);
	char *s = malloc(h + n + t + 1);

	if (s) {
		memcpy(s, facts_head, h);
		memcpy(s + h, a->name, n);
		memcpy(s + h + n, facts_tail, t + 1);
	}
	return s;
}

static void send_hello(struct lg_agent *a)
{
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__Hello h = RAILYARD__V1__HELLO__INIT;
	char boot[32];
	char *facts = facts_for(a);

	if (!facts)
		return;
	/* One boot id per agent and run of the load generator, as one agent process. */
	snprintf(boot, sizeof(boot), "lg%ld-%ld", (long)getpid(), a->idx);
	h.agent_version = (char *)RAILYARD_VERSION;
	h.facts_json = facts;
	h.resume_ack = a->last_ctl_seq;
	h.boot_id = boot;
	m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO;
	m.hello = &h;
	(void)send_msg(a, &m);
	free(facts);
}

static void push(struct lg_agent *a, Railyard__V1__AgentMessage *m)
{
	if (outbox_push(a->ob, m) < 0)
		log_warn("loadgen: %s: outbox closed, message dropped", a->name);
	flush(a);
}

/* ---- plans ------------------------------------------------------------------------------ */

static void plan_free(struct lg_plan *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		free(p->names[i]);
	free(p->names);
	free(p);
}

static void dep_count(const char *id, bool received)
{
	struct lg_dep *d = NULL;
	int64_t now = util_now_unix_ms();

	pthread_mutex_lock(&dep_lock);
	for (size_t i = 0; i < n_deps; i++)
		if (strcmp(deps[i].id, id) == 0)
			d = &deps[i];
	if (!d && n_deps < LG_DEPS_MAX) {
		d = &deps[n_deps++];
		snprintf(d->id, sizeof(d->id), "%s", id);
		d->first_ms = now;
	}
	if (d && received) {
		d->received++;
		d->received_ms = now;
	} else if (d) {
		d->acked++;
		d->acked_ms = now;
	}
	pthread_mutex_unlock(&dep_lock);
}

static void apply_done(struct lg_agent *a, const char *dep, const char *status, unsigned ok,
		       unsigned changed, const char *msg)
{
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__ApplyDone d = RAILYARD__V1__APPLY_DONE__INIT;

	d.deployment_id = (char *)dep;
	d.status = (char *)status;
	d.ok = ok;
	d.changed = changed;
	d.message = (char *)msg;
	m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_APPLY_DONE;
	m.apply_done = &d;
	for (unsigned i = 0; i < a->n_seen && i < LG_SEEN_MAX; i++)
		if (strcmp(a->seen[i], dep) == 0)
			a->done_pushed[i] = true;
	push(a, &m);
}

/* One step of the running plan, then the next after the delay; the plan's end after the last.
 * Caller holds a->lock. */
static void step(struct lg_agent *a)
{
	struct lg_plan *p = a->plans;
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__StepEvent ev = RAILYARD__V1__STEP_EVENT__INIT;

	if (!p)
		return;
	if (p->next_step < p->n) {
		ev.deployment_id = p->dep;
		ev.index = (uint32_t)p->next_step;
		ev.name = p->names[p->next_step];
		ev.status = (char *)(opt.changed ? "changed" : "ok");
		ev.diff =
			(char *)(opt.changed ? "(simulated by railyard-loadgen: nothing changed)\n"
					     : "");
		ev.message = (char *)"simulated by railyard-loadgen: not run";
		ev.duration_ms = opt.step_delay_ms;
		m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_STEP_EVENT;
		m.step_event = &ev;
		push(a, &m);
		n_steps++;
		p->next_step++;
	}
	if (p->next_step < p->n) {
		timer_arm(a, T_STEP, opt.step_delay_ms);
		return;
	}
	apply_done(a, p->dep, "succeeded", opt.changed ? 0 : (unsigned)p->n,
		   opt.changed ? (unsigned)p->n : 0, "");
	a->plans = p->next;
	plan_free(p);
	if (a->plans)
		timer_arm(a, T_STEP, opt.step_delay_ms);
}

static void on_plan(struct lg_agent *a, const Railyard__V1__ApplyPlan *ap)
{
	char err[512] = "";
	struct lg_plan *p;
	json_t *plan, *steps, *s;
	size_t i;
	unsigned slot;

	for (unsigned k = 0; k < a->n_seen && k < LG_SEEN_MAX; k++)
		if (strcmp(a->seen[k], ap->deployment_id) == 0)
			return; /* a re-send: its results are in the outbox or were stored */
	slot = a->n_seen++ % LG_SEEN_MAX;
	snprintf(a->seen[slot], sizeof(a->seen[slot]), "%.64s", ap->deployment_id);
	a->done_pushed[slot] = false;
	a->done_counted[slot] = false;
	n_plans++;
	dep_count(ap->deployment_id, true);
	/* Network input, validated as the agent does before anything runs. */
	plan = json_loads(ap->plan_json, 0, NULL);
	if (!plan || playbook_plan_validate(plan, err, sizeof(err)) < 0) {
		json_decref(plan);
		apply_done(a, ap->deployment_id, "failed", 0, 0, "plan refused by the agent");
		return;
	}
	p = calloc(1, sizeof(*p));
	steps = json_object_get(plan, "steps");
	if (p)
		p->names = calloc(json_array_size(steps) + 1, sizeof(char *));
	if (!p || !p->names) {
		free(p);
		json_decref(plan);
		return;
	}
	snprintf(p->dep, sizeof(p->dep), "%.64s", ap->deployment_id);
	p->check = ap->check_mode;
	json_array_foreach(steps, i, s)
	{
		p->names[i] = strdup(json_string_value(json_object_get(s, "name")));
		if (p->names[i])
			p->n++;
	}
	json_decref(plan);
	if (!a->plans) {
		a->plans = p;
		timer_arm(a, T_STEP, opt.step_delay_ms);
	} else {
		struct lg_plan *q = a->plans;

		while (q->next)
			q = q->next;
		q->next = p;
	}
}

static void on_bench(struct lg_agent *a, const Railyard__V1__RunBench *rb)
{
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__BenchResult br = RAILYARD__V1__BENCH_RESULT__INIT;

	br.bench_id = rb->bench_id;
	br.ok = false;
	br.role = rb->role;
	br.result_json = (char *)"{\"ok\":false,\"error\":\"railyard-loadgen simulates agents: "
				 "no benchmark was run\"}";
	m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_RESULT;
	m.bench_result = &br;
	n_bench++;
	push(a, &m);
}

/* Count the plan ends the controller has committed: acknowledgements drop outbox messages in
 * order, so once the outbox is empty every end pushed before is stored. Caller holds a->lock. */
static void count_acked(struct lg_agent *a)
{
	size_t n = 0, bytes = 0;

	outbox_stats(a->ob, &n, &bytes);
	if (n > 0)
		return;
	for (unsigned i = 0; i < a->n_seen && i < LG_SEEN_MAX; i++) {
		if (a->done_pushed[i] && !a->done_counted[i]) {
			a->done_counted[i] = true;
			dep_count(a->seen[i], false);
		}
	}
}

/* ---- messages down ---------------------------------------------------------------------- */

static void on_message(void *ud, ProtobufCMessage *msg)
{
	struct lg_agent *a = ud;
	const Railyard__V1__ControllerMessage *m = (const Railyard__V1__ControllerMessage *)msg;
	Railyard__V1__AgentMessage up = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__FactsUpdate fu = RAILYARD__V1__FACTS_UPDATE__INIT;

	pthread_mutex_lock(&a->lock);
	if (m->seq <= a->last_ctl_seq &&
	    m->body_case != RAILYARD__V1__CONTROLLER_MESSAGE__BODY_WELCOME) {
		log_warn("loadgen: %s: controller seq %llu out of order; reconnecting", a->name,
			 (unsigned long long)m->seq);
		rpc_async_stream_cancel(a->st);
		goto out;
	}
	a->last_ctl_seq = m->seq;
	if (m->body_case == RAILYARD__V1__CONTROLLER_MESSAGE__BODY_WELCOME) {
		outbox_resume(a->ob, m->welcome->last_agent_seq);
		a->welcomed = true;
		if (m->welcome->heartbeat_interval_ms >= 100 &&
		    m->welcome->heartbeat_interval_ms <= 600000)
			a->heartbeat_ms = (int)m->welcome->heartbeat_interval_ms;
		rpc_backoff_reset(&a->bo);
		if (!a->online) {
			long n = ++n_online;

			a->online = true;
			if (n == opt.agents) {
				all_online_ms = util_now_unix_ms();
				pthread_mutex_lock(&out_lock);
				if (opt.json)
					printf("{\"event\":\"all_online\",\"unix_ms\":%lld,"
					       "\"agents\":%ld}\n",
					       (long long)all_online_ms, opt.agents);
				else
					printf("all %ld agents online\n", opt.agents);
				fflush(stdout);
				pthread_mutex_unlock(&out_lock);
			}
		}
		n_ever_online++;
		count_acked(a);
		flush(a);
	} else {
		outbox_acked(a->ob, m->ack);
		count_acked(a);
	}
	switch (m->body_case) {
	case RAILYARD__V1__CONTROLLER_MESSAGE__BODY_REFRESH_FACTS:
		fu.facts_json = facts_for(a);
		fu.in_reply_to = m->seq;
		if (fu.facts_json) {
			up.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_FACTS_UPDATE;
			up.facts_update = &fu;
			push(a, &up);
			free(fu.facts_json);
		}
		break;
	case RAILYARD__V1__CONTROLLER_MESSAGE__BODY_APPLY_PLAN:
		on_plan(a, m->apply_plan);
		break;
	case RAILYARD__V1__CONTROLLER_MESSAGE__BODY_RUN_BENCH:
		on_bench(a, m->run_bench);
		break;
	default:
		break; /* Receipt, Error, Cancel (a step is never abandoned), unknown kinds */
	}
out:
	pthread_mutex_unlock(&a->lock);
	protobuf_c_message_free_unpacked(msg, NULL);
}

static void on_ended(void *ud, const struct rpc_status *status)
{
	struct lg_agent *a = ud;
	/* status lives in the stream, freed here first */
	const struct rpc_status copy = *status, *st = &copy;
	int delay;

	pthread_mutex_lock(&a->lock);
	rpc_async_stream_free(a->st);
	a->st = NULL;
	a->welcomed = false;
	n_ended++;
	n_streams--;
	if (a->online) {
		a->online = false;
		n_online--;
	}
	timer_disarm(a, T_HEARTBEAT);
	if (st->code == GRPC_STATUS_RESOURCE_EXHAUSTED)
		n_refused_full++;
	else if (st->code == GRPC_STATUS_UNAVAILABLE && st->retry_after_ms > 0)
		n_refused_busy++;
	else if (st->code != GRPC_STATUS_OK && st->code != GRPC_STATUS_UNAVAILABLE &&
		 st->code != GRPC_STATUS_CANCELLED)
		n_refused_other++;
	if (stopping) {
		pthread_mutex_unlock(&a->lock);
		return;
	}
	if (st->code == GRPC_STATUS_PERMISSION_DENIED || st->code == GRPC_STATUS_UNAUTHENTICATED) {
		/* Revoked or forgotten: the agent exits 3; this one stops. */
		log_warn("loadgen: %s: %s: %s; this agent stops", a->name,
			 rpc_status_name(st->code), st->details);
		a->dead = true;
		n_revoked++;
		pthread_mutex_unlock(&a->lock);
		return;
	}
	delay = rpc_backoff_next_ms(&a->bo);
	if (st->retry_after_ms > delay)
		delay = st->retry_after_ms;
	if (st->retry_after_ms > 0 && st->code == GRPC_STATUS_RESOURCE_EXHAUSTED) {
		/* The controller is short of descriptors: let go of the connection meanwhile, as
		 * the agent does. */
		rpc_channel_free(a->ch);
		a->ch = NULL;
	}
	timer_arm(a, T_CONNECT, delay);
	pthread_mutex_unlock(&a->lock);
}

static const struct rpc_async_ops lg_ops = {.message = on_message, .ended = on_ended};

/* ---- connecting ------------------------------------------------------------------------- */

/* The agent's channel, as an agent makes it at start (it connects only when a call starts).
 * Caller holds a->lock, or is alone with a. */
static int channel_make(struct lg_agent *a)
{
	struct rpc_channel_config cc = {0};

	if (a->ch)
		return 0;
	cc.target = opt.controller;
	cc.tls.ca_pem = a->ca_pem;
	cc.tls.cert_pem = a->cert_pem;
	cc.tls.key_pem = a->key_pem;
	cc.server_name = LG_SERVER_NAME;
	cc.reconnect_max_ms = opt.backoff_max_ms;
	return rpc_channel_new(&cc, &a->ch);
}

static void connect_agent(struct lg_agent *a)
{
	int r;

	if (a->st || a->dead || stopping)
		return;
	if (channel_make(a) < 0) {
		log_error("loadgen: %s: cannot create a channel", a->name);
		a->dead = true;
		return;
	}
	/* Under a->lock: ended() takes it and so sees a->st set. */
	r = rpc_async_stream_open(a->ch, loop_, LG_CONNECT_PATH,
				  &railyard__v1__controller_message__descriptor, &lg_ops, a,
				  &a->st);
	if (r < 0) {
		log_warn("loadgen: %s: opening the session failed: %s", a->name, ry_strerror(r));
		timer_arm(a, T_CONNECT, rpc_backoff_next_ms(&a->bo));
		return;
	}
	n_sessions++;
	n_streams++;
	a->welcomed = false;
	send_hello(a);
	timer_arm(a, T_HEARTBEAT, a->heartbeat_ms);
}

static void connect_post(long idx);

static void fire(const struct lg_timer_ent *e)
{
	struct lg_agent *a = &agents[e->idx];
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__Heartbeat hb = RAILYARD__V1__HEARTBEAT__INIT;

	pthread_mutex_lock(&a->lock);
	if (e->gen != a->gen[e->kind]) {
		pthread_mutex_unlock(&a->lock);
		return;
	}
	switch (e->kind) {
	case T_CONNECT:
		/* Starting a call on a channel is slow work (milliseconds on a busy machine):
		 * the connectors do it, so that heartbeats and steps keep their times. */
		connect_post(a->idx);
		break;
	case T_HEARTBEAT:
		if (a->st) {
			hb.sent_unix_ms = util_now_unix_ms();
			m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_HEARTBEAT;
			m.heartbeat = &hb;
			if (send_msg(a, &m) == 0)
				n_hb++;
			timer_arm(a, T_HEARTBEAT, a->heartbeat_ms);
		}
		break;
	case T_STEP:
		step(a);
		break;
	}
	pthread_mutex_unlock(&a->lock);
}

/* ---- connectors: threads that open sessions, off the timer thread ---------------------- */

static pthread_mutex_t cn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cn_cond = PTHREAD_COND_INITIALIZER;
static long *cn_queue; /* ring of agent indexes; an agent is in it at most once */
static size_t cn_head, cn_len;

static void connect_post(long idx)
{
	pthread_mutex_lock(&cn_lock);
	if (cn_len < (size_t)opt.agents) {
		cn_queue[(cn_head + cn_len) % (size_t)opt.agents] = idx;
		cn_len++;
		pthread_cond_signal(&cn_cond);
	}
	pthread_mutex_unlock(&cn_lock);
}

static void *connector_main(void *arg)
{
	pthread_mutex_lock(&cn_lock);
	for (;;) {
		long idx;

		while (!stopping && cn_len == 0)
			pthread_cond_wait(&cn_cond, &cn_lock);
		if (stopping)
			break;
		idx = cn_queue[cn_head];
		cn_head = (cn_head + 1) % (size_t)opt.agents;
		cn_len--;
		pthread_mutex_unlock(&cn_lock);
		pthread_mutex_lock(&agents[idx].lock);
		connect_agent(&agents[idx]);
		pthread_mutex_unlock(&agents[idx].lock);
		pthread_mutex_lock(&cn_lock);
	}
	pthread_mutex_unlock(&cn_lock);
	return NULL;
}

static void *timer_main(void *arg)
{
	pthread_mutex_lock(&tm_lock);
	while (!stopping) {
		struct lg_timer_ent e;
		int64_t now = util_now_mono_ms();

		if (heap_pop_due(now, &e)) {
			if (now - e.due > timer_lag_ms)
				timer_lag_ms = now - e.due;
			pthread_mutex_unlock(&tm_lock);
			fire(&e);
			pthread_mutex_lock(&tm_lock);
			continue;
		}
		{
			struct timespec ts;
			int64_t wait = heap_n ? heap[0].due - now : 1000;

			if (wait > 1000)
				wait = 1000;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += wait / 1000;
			ts.tv_nsec += (wait % 1000) * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&tm_cond, &tm_lock, &ts);
		}
	}
	pthread_mutex_unlock(&tm_lock);
	return NULL;
}

/* ---- enrollment ------------------------------------------------------------------------- */

static _Atomic long enroll_next, n_enrolled, n_enroll_failed;

static int load_agent(struct lg_agent *a)
{
	struct agent_config cfg = {0};
	char err[512];
	char *p;
	int r;

	r = agent_config_load(a->dir, &cfg, err, sizeof(err));
	if (r < 0)
		return r;
	agent_config_done(&cfg);
	if (!(p = fs_path_join(a->dir, "ca.crt")) || fs_read_file(p, 65536, &a->ca_pem, NULL) < 0)
		r = -RY_E_INVALID;
	free(p);
	if (r >= 0 && (!(p = fs_path_join(a->dir, "node.crt")) ||
		       fs_read_file(p, 65536, &a->cert_pem, NULL) < 0))
		r = -RY_E_INVALID;
	free(r >= 0 ? p : NULL);
	if (r >= 0 && (!(p = fs_path_join(a->dir, "node.key")) ||
		       fs_read_file(p, 65536, &a->key_pem, NULL) < 0))
		r = -RY_E_INVALID;
	free(r >= 0 ? p : NULL);
	return r;
}

static int channel_make(struct lg_agent *a);

static void *enroll_main(void *arg)
{
	for (;;) {
		long i = enroll_next++;
		struct lg_agent *a;
		struct agent_enroll_opts eo = {0};
		char err[512] = "", *crt;
		int r = 0;

		if (i >= opt.agents || stopping)
			break;
		a = &agents[i];
		crt = fs_path_join(a->dir, "node.crt");
		if (crt && access(crt, F_OK) != 0) {
			eo.controller = opt.controller;
			eo.token = opt.token;
			eo.ca_fingerprint = opt.fingerprint;
			eo.state_dir = a->dir;
			eo.hostname = a->name;
			eo.sysroot = opt.sysroot;
			eo.timeout_ms = 120000;
			eo.quiet = true;
			r = agent_enroll(&eo, err, sizeof(err));
		}
		free(crt);
		if (r >= 0)
			r = load_agent(a);
		/* Channels are made here, not in the connect storm (creating one parses the key
		 * and certificates: milliseconds each on a busy machine). */
		if (r >= 0 && !opt.enroll_only && channel_make(a) < 0)
			r = -ENOMEM;
		if (r < 0) {
			if (n_enroll_failed++ < 10)
				log_error("loadgen: %s: enrollment failed: %s", a->name,
					  err[0] ? err : ry_strerror(r));
			a->dead = true;
			continue;
		}
		n_enrolled++;
	}
	return NULL;
}

/* ---- output ----------------------------------------------------------------------------- */

static void status_line(int64_t t0)
{
	int64_t now = util_now_unix_ms();

	pthread_mutex_lock(&out_lock);
	if (opt.json)
		printf("{\"unix_ms\":%lld,\"t_ms\":%lld,\"agents\":%ld,\"enrolled\":%ld,"
		       "\"online\":%ld,\"sessions\":%ld,\"ended\":%ld,\"welcomes\":%ld,"
		       "\"refused_full\":%ld,\"refused_busy\":%ld,\"refused_other\":%ld,"
		       "\"revoked\":%ld,\"plans\":%ld,\"steps\":%ld,\"bench_refused\":%ld,"
		       "\"deployments\":%zu,\"heartbeats\":%ld,\"timer_lag_ms\":%lld}\n",
		       (long long)now, (long long)(now - t0), opt.agents, (long)n_enrolled,
		       (long)n_online, (long)n_sessions, (long)n_ended, (long)n_ever_online,
		       (long)n_refused_full, (long)n_refused_busy, (long)n_refused_other,
		       (long)n_revoked, (long)n_plans, (long)n_steps, (long)n_bench, n_deps,
		       (long)n_hb, (long long)atomic_exchange(&timer_lag_ms, 0));
	else
		printf("%6.1f s: %ld/%ld online, %ld sessions opened, %ld ended (refused: %ld at "
		       "the fd limit, %ld busy, %ld other), %ld plans, %ld steps, %ld benchmarks "
		       "refused\n",
		       (now - t0) / 1000.0, (long)n_online, opt.agents, (long)n_sessions,
		       (long)n_ended, (long)n_refused_full, (long)n_refused_busy,
		       (long)n_refused_other, (long)n_plans, (long)n_steps, (long)n_bench);
	pthread_mutex_lock(&dep_lock);
	for (size_t i = 0; i < n_deps; i++) {
		struct lg_dep *d = &deps[i];

		if (d->reported || d->acked < opt.agents)
			continue;
		/* Every agent has had the plan's end stored. */
		d->reported = true;
		if (opt.json)
			printf("{\"event\":\"deployment\",\"id\":\"%s\",\"nodes\":%ld,"
			       "\"first_plan_unix_ms\":%lld,\"last_plan_unix_ms\":%lld,"
			       "\"last_ack_unix_ms\":%lld}\n",
			       d->id, d->received, (long long)d->first_ms,
			       (long long)d->received_ms, (long long)d->acked_ms);
		else
			printf("deployment %s: %ld plans received over %lld ms, all ends "
			       "acknowledged %lld ms after the first plan\n",
			       d->id, d->received, (long long)(d->received_ms - d->first_ms),
			       (long long)(d->acked_ms - d->first_ms));
	}
	pthread_mutex_unlock(&dep_lock);
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
}

/* ---- main ------------------------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path) < 0 ? -1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: railyard-loadgen --controller HOST:PORT --token T --ca-fingerprint F\n"
		"         --agents N [--connect-rate R] [--state-dir D] [--json]\n"
		"         [--sysroot DIR] [--name-prefix P] [--step-delay 10ms] [--changed]\n"
		"         [--threads 2] [--enroll-parallel 4] [--reconnect-max 30s] "
		"[--enroll-only]\n"
		"\n"
		"N simulated agents, each enrolled with the token (kept in D/<name>/ and reused\n"
		"by the next run), each on its own mTLS connection; plans are simulated (steps\n"
		"reported ok after --step-delay), benchmarks answered failed. Until "
		"SIGINT/SIGTERM.\n");
}

static int bad(const char *what, const char *v)
{
	fprintf(stderr, "railyard-loadgen: invalid %s '%s'\n", what, v ? v : "");
	return 2;
}

static int parse_long(const char *v, long lo, long hi, long *ret)
{
	char *end;
	long x = strtol(v, &end, 10);

	if (end == v || *end || x < lo || x > hi)
		return -1;
	*ret = x;
	return 0;
}

static int parse_ms(const char *v, long *ret)
{
	int64_t ms;

	if (util_parse_duration_ms(v, &ms) < 0 || ms < 0 || ms > 3600000)
		return -1;
	*ret = (long)ms;
	return 0;
}

/* Facts of sysroot as text, split at the host name so that each agent sends its own. */
static int facts_template(void)
{
	json_t *facts = NULL;
	char *text, *at;
	static const char mark[] = "\"hostname\":\"@LOADGEN@\"";

	if (facts_collect(opt.sysroot, &facts) < 0)
		return -ENOMEM;
	json_object_del(facts, "warnings");
	json_object_set_new(facts, "hostname", json_string("@LOADGEN@"));
	text = json_dumps(facts, JSON_COMPACT);
	json_decref(facts);
	if (!text || !(at = strstr(text, mark))) {
		free(text);
		return -ENOMEM;
	}
	at += strlen("\"hostname\":\"");
	*at = '\0';
	facts_head = text;
	facts_tail = strdup(at + strlen("@LOADGEN@"));
	return facts_tail ? 0 : -ENOMEM;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"controller", required_argument, NULL, 'c'},
		{"token", required_argument, NULL, 't'},
		{"ca-fingerprint", required_argument, NULL, 'f'},
		{"agents", required_argument, NULL, 'n'},
		{"connect-rate", required_argument, NULL, 'r'},
		{"state-dir", required_argument, NULL, 'd'},
		{"json", no_argument, NULL, 'j'},
		{"sysroot", required_argument, NULL, 's'},
		{"name-prefix", required_argument, NULL, 'p'},
		{"step-delay", required_argument, NULL, 'D'},
		{"changed", no_argument, NULL, 'C'},
		{"threads", required_argument, NULL, 'T'},
		{"enroll-parallel", required_argument, NULL, 'E'},
		{"reconnect-max", required_argument, NULL, 'R'},
		{"enroll-only", no_argument, NULL, 'O'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	char tmpdir[] = "/tmp/railyard-loadgen.XXXXXX";
	pthread_t timer, connectors[LG_CONNECTORS] = {0}, *enrollers = NULL;
	pthread_condattr_t ca;
	sigset_t set;
	struct rlimit rl;
	long reconnect_max = 30000;
	bool own_dir = false;
	int64_t t0, t_connect;
	int c, rc = 1;

	opt.agents = 0;
	opt.connect_rate = 500;
	opt.enroll_parallel = 4;
	opt.step_delay_ms = 10;
	opt.threads = 2;
	opt.sysroot = "/";
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (!util_hostport_ok(optarg, false))
				return bad("--controller", optarg);
			opt.controller = optarg;
			break;
		case 't':
			opt.token = optarg;
			break;
		case 'f':
			opt.fingerprint = optarg;
			break;
		case 'n':
			if (parse_long(optarg, 1, LG_AGENTS_MAX, &opt.agents) < 0)
				return bad("--agents", optarg);
			break;
		case 'r':
			if (parse_long(optarg, 1, 1000000, &opt.connect_rate) < 0)
				return bad("--connect-rate", optarg);
			break;
		case 'd':
			opt.state_dir = optarg;
			break;
		case 'j':
			opt.json = true;
			break;
		case 's':
			opt.sysroot = optarg;
			break;
		case 'p':
			opt.prefix = optarg;
			break;
		case 'D':
			if (parse_ms(optarg, &opt.step_delay_ms) < 0)
				return bad("--step-delay", optarg);
			break;
		case 'C':
			opt.changed = true;
			break;
		case 'T':
			if (parse_long(optarg, 1, 64, &opt.threads) < 0)
				return bad("--threads", optarg);
			break;
		case 'E':
			if (parse_long(optarg, 1, 64, &opt.enroll_parallel) < 0)
				return bad("--enroll-parallel", optarg);
			break;
		case 'R':
			if (parse_ms(optarg, &reconnect_max) < 0 || reconnect_max < 100)
				return bad("--reconnect-max", optarg);
			break;
		case 'O':
			opt.enroll_only = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !opt.controller || !opt.token || !opt.fingerprint || !opt.agents) {
		usage(stderr);
		return 2;
	}
	if (opt.prefix &&
	    (!opt.prefix[0] || strlen(opt.prefix) > 40 ||
	     strspn(opt.prefix, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(opt.prefix) ||
	     opt.prefix[0] == '-'))
		return bad("--name-prefix (1-40 of [a-z0-9-])", opt.prefix);
	opt.backoff_max_ms = (int)reconnect_max;
	log_set_ident("railyard-loadgen");

	/* Two descriptors per agent at most (its connection, an enrollment's) and room. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)opt.agents + 64)
		log_warn("loadgen: open-file limit %llu is short of %ld agents: raise ulimit -n",
			 (unsigned long long)rl.rlim_cur, opt.agents);

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	rpc_log_init();
	rpc_init();

	if (!opt.state_dir) {
		/* Nothing to reuse: fresh names, so that a second run on the same controller does
		 * not meet its first run's host names. */
		unsigned char rnd[2];
		static char prefix[8];

		if (!mkdtemp(tmpdir)) {
			log_error("loadgen: mkdtemp: %s", strerror(errno));
			goto out_rpc;
		}
		own_dir = true;
		opt.state_dir = tmpdir;
		if (!opt.prefix) {
			if (util_random_bytes(rnd, sizeof(rnd)) < 0)
				goto out_rpc;
			snprintf(prefix, sizeof(prefix), "lg%02x%02x", rnd[0], rnd[1]);
			opt.prefix = prefix;
		}
	}
	if (!opt.prefix)
		opt.prefix = "lg";
	if (fs_mkdir_p(opt.state_dir, 0700) < 0) {
		log_error("loadgen: cannot create %s", opt.state_dir);
		goto out_rpc;
	}
	if (facts_template() < 0) {
		log_error("loadgen: cannot collect facts under %s", opt.sysroot);
		goto out_rpc;
	}
	agents = calloc((size_t)opt.agents, sizeof(*agents));
	enrollers = calloc((size_t)opt.enroll_parallel, sizeof(*enrollers));
	if (!agents || !enrollers)
		goto out_rpc;
	for (long i = 0; i < opt.agents; i++) {
		struct lg_agent *a = &agents[i];
		char err[256];

		pthread_mutex_init(&a->lock, NULL);
		a->idx = i;
		a->heartbeat_ms = 5000;
		a->bo.base_ms = 500;
		a->bo.max_ms = opt.backoff_max_ms;
		snprintf(a->name, sizeof(a->name), "%s-%05ld", opt.prefix, i);
		snprintf(a->dir, sizeof(a->dir), "%s/%s", opt.state_dir, a->name);
		if (outbox_open(NULL, 0, &a->ob, NULL, err, sizeof(err)) < 0) {
			log_error("loadgen: outbox: %s", err);
			goto out_rpc;
		}
	}

	t0 = util_now_unix_ms();
	for (long i = 0; i < opt.enroll_parallel; i++)
		if (pthread_create(&enrollers[i], NULL, enroll_main, NULL) != 0)
			enrollers[i] = 0;
	for (long i = 0; i < opt.enroll_parallel; i++)
		if (enrollers[i])
			pthread_join(enrollers[i], NULL);
	pthread_mutex_lock(&out_lock);
	if (opt.json)
		printf("{\"event\":\"enrolled\",\"unix_ms\":%lld,\"enrolled\":%ld,\"failed\":%ld,"
		       "\"ms\":%lld}\n",
		       (long long)util_now_unix_ms(), (long)n_enrolled, (long)n_enroll_failed,
		       (long long)(util_now_unix_ms() - t0));
	else
		printf("enrolled %ld agents (%ld failed) in %.1f s (%s)\n", (long)n_enrolled,
		       (long)n_enroll_failed, (util_now_unix_ms() - t0) / 1000.0, opt.state_dir);
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
	if (n_enroll_failed) {
		log_error("loadgen: %ld agents could not be enrolled", (long)n_enroll_failed);
		goto out_rpc;
	}
	if (opt.enroll_only) {
		rc = 0;
		goto out_rpc;
	}

	if (rpc_client_loop_new((int)opt.threads, &loop_) < 0)
		goto out_rpc;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&tm_cond, &ca);
	pthread_condattr_destroy(&ca);
	cn_queue = calloc((size_t)opt.agents, sizeof(*cn_queue));
	if (!cn_queue || pthread_create(&timer, NULL, timer_main, NULL) != 0)
		goto out_loop;
	for (int i = 0; i < LG_CONNECTORS; i++)
		if (pthread_create(&connectors[i], NULL, connector_main, NULL) != 0)
			connectors[i] = 0;
	/* The connect storm, paced at --connect-rate. */
	t_connect = util_now_unix_ms();
	for (long i = 0; i < opt.agents; i++) {
		struct lg_agent *a = &agents[i];

		pthread_mutex_lock(&a->lock);
		timer_arm(a, T_CONNECT, i * 1000 / opt.connect_rate);
		pthread_mutex_unlock(&a->lock);
	}
	pthread_mutex_lock(&out_lock);
	if (opt.json)
		printf("{\"event\":\"connecting\",\"unix_ms\":%lld}\n", (long long)t_connect);
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
	for (;;) {
		struct timespec ts = {1, 0};
		int sig = sigtimedwait(&set, NULL, &ts);

		if (sig == SIGINT || sig == SIGTERM)
			break;
		status_line(t_connect);
	}
	rc = 0;
	stopping = true;
	pthread_mutex_lock(&tm_lock);
	pthread_cond_signal(&tm_cond);
	pthread_mutex_unlock(&tm_lock);
	pthread_join(timer, NULL);
	pthread_mutex_lock(&cn_lock);
	pthread_cond_broadcast(&cn_cond);
	pthread_mutex_unlock(&cn_lock);
	for (int i = 0; i < LG_CONNECTORS; i++)
		if (connectors[i])
			pthread_join(connectors[i], NULL);
	for (long i = 0; i < opt.agents; i++) {
		pthread_mutex_lock(&agents[i].lock);
		rpc_async_stream_cancel(agents[i].st);
		pthread_mutex_unlock(&agents[i].lock);
	}
	/* Every stream's ended() runs on the loop's threads once its batches completed. */
	for (int64_t deadline = util_now_mono_ms() + 30000;
	     n_streams > 0 && util_now_mono_ms() < deadline;)
		usleep(10000);
	status_line(t_connect);
out_loop:
	for (long i = 0; i < opt.agents; i++) {
		rpc_channel_free(agents[i].ch);
		agents[i].ch = NULL;
	}
	if (n_streams == 0)
		rpc_client_loop_free(loop_);
out_rpc:
	for (long i = 0; agents && i < opt.agents; i++) {
		struct lg_agent *a = &agents[i];

		while (a->plans) {
			struct lg_plan *p = a->plans;

			a->plans = p->next;
			plan_free(p);
		}
		outbox_free(a->ob);
		free(a->ca_pem);
		free(a->cert_pem);
		free(a->key_pem);
		pthread_mutex_destroy(&a->lock);
	}
	free(agents);
	free(enrollers);
	free(heap);
	free(cn_queue);
	free(facts_head);
	free(facts_tail);
	if (own_dir)
		(void)nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	rpc_shutdown();
	return rc;
}
