/* The agent's session loop over rpc client streams. One thread runs it; another may stop it. */
#include "nodeagent/session.h"
#include "nodeagent/health.h"
#include "nodeagent/config.h"
#include "nodeagent/benchjob.h"
#include "nodeagent/jobs.h"
#include "nodeagent/launch.h"
#include "nodeagent/outbox.h"
#include "nodeagent/facts/facts.h"
#include "common/log/log.h"
#include "common/rpc/rpc.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"
#include "railyard/v1/railyard.pb-c.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define AGENT_SERVER_NAME "railyard-controller"
#define CONNECT_PATH	  "/railyard.v1.Controller/Connect"

struct agent_session {
	struct agent_session_opts o;
	struct agent_config cfg;
	struct rpc_channel_config cc; /* borrows from cfg, o and the PEMs below */
	struct rpc_channel *ch;
	/* What the controller's last refusal asked for (RPC_RETRY_AFTER_MD): wait at least this
	 * long; with RESOURCE_EXHAUSTED also let go of the connection meanwhile (the controller
	 * is short of descriptors). */
	int retry_after_ms;
	bool drop_channel;
	char *ca_pem, *cert_pem, *key_pem;
	char boot_id[33];
	uint64_t seq; /* our messages, across reconnects of this process */
	uint64_t last_ctl_seq;
	int heartbeat_ms;

	struct agent_jobs *jobs;
	struct outbox *outbox;
	struct agent_bench *bench;
	struct agent_launch *launch;
	struct agent_health *health;
	struct rpc_client_stream *cur; /* the stream the job sink sends on (session thread) */

	pthread_mutex_t lock; /* stop, cs, cond */
	pthread_cond_t cond;
	bool stop;
	struct rpc_client_stream *cs;
};

static int read_pem(const char *dir, const char *name, char **ret, char *errbuf, size_t errlen)
{
	char *p = fs_path_join(dir, name);
	int r;

	if (!p)
		return -ENOMEM;
	r = fs_read_file(p, 256 * 1024, ret, NULL);
	if (r < 0)
		snprintf(errbuf, errlen, "%s: %s", p, ry_strerror(r));
	free(p);
	return r;
}

int agent_session_new(const struct agent_session_opts *o, struct agent_session **ret, char *errbuf,
		      size_t errlen)
{
	struct rpc_channel_config *cc;
	struct agent_session *s;
	unsigned char rnd[16];
	int r;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *o;
	if (!s->o.backoff_base_ms)
		s->o.backoff_base_ms = 500;
	if (!s->o.backoff_max_ms)
		s->o.backoff_max_ms = 30000;
	if (!s->o.connect_timeout_ms)
		s->o.connect_timeout_ms = 10000;
	s->heartbeat_ms = 5000;
	pthread_mutex_init(&s->lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&s->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	r = agent_config_load(o->state_dir, &s->cfg, errbuf, errlen);
	if (r < 0)
		goto fail;
	if ((r = read_pem(o->state_dir, "ca.crt", &s->ca_pem, errbuf, errlen)) < 0 ||
	    (r = read_pem(o->state_dir, "node.crt", &s->cert_pem, errbuf, errlen)) < 0 ||
	    (r = read_pem(o->state_dir, "node.key", &s->key_pem, errbuf, errlen)) < 0)
		goto fail;
	r = util_random_bytes(rnd, sizeof(rnd));
	if (r < 0)
		goto fail;
	{
		size_t torn = 0, n = 0, bytes = 0;

		r = outbox_open(s->o.state_dir, s->o.outbox_max, &s->outbox, &torn, errbuf, errlen);
		if (r < 0)
			goto fail;
		if (torn)
			log_warn("outbox: cut a torn record of %zu bytes (a crash mid-write)",
				 torn);
		outbox_stats(s->outbox, &n, &bytes);
		if (n)
			log_info(
				"outbox: %zu messages (%zu bytes) from before the restart are sent "
				"again",
				n, bytes);
	}
	r = agent_jobs_new(s->o.sysroot, s->o.state_dir, s->outbox,
			   (const char *const *)s->cfg.reboot_argv, &s->jobs, errbuf, errlen);
	if (r < 0)
		goto fail;
	r = agent_bench_new(s->outbox, s->o.sysroot, s->o.bench_port_lo, s->o.bench_port_hi,
			    &s->bench);
	if (r < 0) {
		snprintf(errbuf, errlen, "cannot start the benchmark workers: %s", ry_strerror(r));
		goto fail;
	}
	{
		struct agent_launch_opts lo = {.state_dir = s->o.state_dir,
					       .node_id = s->cfg.node_id,
					       .orted = s->cfg.orted};
		struct agent_coll_conf coll = {.mpirun = s->cfg.mpirun,
					       .coll_program = s->cfg.coll_program};

		r = agent_launch_new(&lo, &s->launch, errbuf, errlen);
		if (r < 0)
			goto fail;
		coll.launch = s->launch;
		coll.sock_path = fs_path_join(s->o.state_dir, AGENT_LAUNCH_SOCK);
		r = coll.sock_path ? agent_bench_set_coll(s->bench, &coll) : -ENOMEM;
		free((char *)coll.sock_path);
		if (r < 0)
			goto fail;
	}
	if (s->o.health_interval_ms >= 0) {
		struct agent_health_opts ho = {.sysroot = s->o.sysroot,
					       .state_dir = s->o.state_dir,
					       .ob = s->outbox,
					       .interval_ms = s->o.health_interval_ms};
		r = agent_health_new(&ho, &s->health);
		if (r < 0) {
			snprintf(errbuf, errlen, "cannot start the health watchers: %s",
				 ry_strerror(r));
			goto fail;
		}
	}
	util_hex(rnd, sizeof(rnd), s->boot_id);

	cc = &s->cc;
	cc->target = o->controller ? o->controller : s->cfg.controller;
	cc->tls.ca_pem = s->ca_pem;
	cc->tls.cert_pem = s->cert_pem;
	cc->tls.key_pem = s->key_pem;
	cc->server_name = AGENT_SERVER_NAME;
	cc->reconnect_max_ms = s->o.backoff_max_ms;
	cc->keepalive_ms = s->o.keepalive_ms;
	r = rpc_channel_new(cc, &s->ch);
	if (r < 0) {
		snprintf(errbuf, errlen, "cannot create a channel to %s", cc->target);
		goto fail;
	}
	*ret = s;
	return 0;
fail:
	agent_session_free(s);
	return r;
}

void agent_session_free(struct agent_session *s)
{
	if (!s)
		return;
	/* Workers waiting for room in the outbox return first. */
	if (s->outbox)
		outbox_close(s->outbox);
	agent_health_free(s->health);
	agent_jobs_free(s->jobs);
	agent_bench_free(s->bench);
	agent_launch_free(s->launch);
	outbox_free(s->outbox);
	rpc_channel_free(s->ch);
	agent_config_done(&s->cfg);
	free(s->ca_pem);
	free(s->cert_pem);
	if (s->key_pem) {
		explicit_bzero(s->key_pem, strlen(s->key_pem));
		free(s->key_pem);
	}
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

void agent_session_stop(struct agent_session *s)
{
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	if (s->cs)
		rpc_client_stream_cancel(s->cs);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static bool stopping(struct agent_session *s)
{
	bool v;

	pthread_mutex_lock(&s->lock);
	v = s->stop;
	pthread_mutex_unlock(&s->lock);
	return v;
}

/* Sleep up to ms, returning early when stopped. */
static void pause_ms(struct agent_session *s, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&s->lock);
	while (!s->stop && pthread_cond_timedwait(&s->cond, &s->lock, &ts) == 0)
		;
	pthread_mutex_unlock(&s->lock);
}

static char *facts_text(struct agent_session *s)
{
	json_t *facts = NULL, *w;
	char *text;
	size_t i;

	if (facts_collect(s->o.sysroot, &facts) < 0)
		return NULL;
	/* A missing or malformed sysfs file leaves that fact out; say which. */
	json_array_foreach(json_object_get(facts, "warnings"), i, w)
		log_warn("facts: %s", json_string_value(w));
	text = json_dumps(facts, JSON_COMPACT);
	json_decref(facts);
	return text;
}

static int send_msg(struct agent_session *s, struct rpc_client_stream *cs,
		    Railyard__V1__AgentMessage *m)
{
	m->seq = ++s->seq;
	m->ack = s->last_ctl_seq;
	return rpc_client_stream_send(cs, &m->base);
}

static int send_hello(struct agent_session *s, struct rpc_client_stream *cs)
{
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__Hello h = RAILYARD__V1__HELLO__INIT;
	char *facts = facts_text(s);
	int r;

	if (!facts)
		return -ENOMEM;
	h.agent_version = (char *)RAILYARD_VERSION;
	h.facts_json = facts;
	h.resume_ack = s->last_ctl_seq;
	h.boot_id = s->boot_id;
	m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO;
	m.hello = &h;
	r = send_msg(s, cs, &m);
	free(facts);
	return r;
}

static int send_heartbeat(struct agent_session *s, struct rpc_client_stream *cs)
{
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__Heartbeat hb = RAILYARD__V1__HEARTBEAT__INIT;

	hb.sent_unix_ms = util_now_unix_ms();
	m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_HEARTBEAT;
	m.heartbeat = &hb;
	return send_msg(s, cs, &m);
}

static int send_facts(struct agent_session *s, struct rpc_client_stream *cs, uint64_t reply_to)
{
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__FactsUpdate fu = RAILYARD__V1__FACTS_UPDATE__INIT;
	Railyard__V1__Error e = RAILYARD__V1__ERROR__INIT;
	char *facts = facts_text(s);
	int r;

	if (facts) {
		fu.facts_json = facts;
		fu.in_reply_to = reply_to;
		m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_FACTS_UPDATE;
		m.facts_update = &fu;
	} else {
		e.code = (char *)"facts_failed";
		e.message = (char *)"collecting facts failed";
		e.in_reply_to = reply_to;
		m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_ERROR;
		m.error = &e;
	}
	r = send_msg(s, cs, &m);
	free(facts);
	return r;
}

static int launch_send(void *userdata, Railyard__V1__AgentMessage *m)
{
	struct agent_session *s = userdata;

	return send_msg(s, s->cur, m);
}

static int64_t outbox_send(void *userdata, Railyard__V1__AgentMessage *m)
{
	struct agent_session *s = userdata;
	int r = send_msg(s, s->cur, m);

	return r < 0 ? r : (int64_t)s->seq;
}

/* Handle one controller message; false ends the session. */
static bool on_message(struct agent_session *s, struct rpc_client_stream *cs,
		       const Railyard__V1__ControllerMessage *m, struct rpc_backoff *bo,
		       bool *welcomed)
{
	if (m->seq <= s->last_ctl_seq &&
	    m->body_case != RAILYARD__V1__CONTROLLER_MESSAGE__BODY_WELCOME) {
		log_warn("controller message seq %llu out of order; reconnecting",
			 (unsigned long long)m->seq);
		return false;
	}
	s->last_ctl_seq = m->seq;
	if (m->body_case == RAILYARD__V1__CONTROLLER_MESSAGE__BODY_WELCOME) {
		/* What the previous session sent and the controller committed is done; the rest
		 * goes again, in order, now. */
		outbox_resume(s->outbox, m->welcome->last_agent_seq);
		*welcomed = true;
	} else {
		outbox_acked(s->outbox, m->ack);
	}
	switch (m->body_case) {
	case RAILYARD__V1__CONTROLLER_MESSAGE__BODY_WELCOME:
		if (m->welcome->heartbeat_interval_ms >= 100 &&
		    m->welcome->heartbeat_interval_ms <= 600000)
			s->heartbeat_ms = (int)m->welcome->heartbeat_interval_ms;
		rpc_backoff_reset(bo);
		log_info("connected to %s as node %s (cluster %s), heartbeat %d ms",
			 s->o.controller ? s->o.controller : s->cfg.controller, m->welcome->node_id,
			 m->welcome->cluster, s->heartbeat_ms);
		return true;
	case RAILYARD__V1__CONTROLLER_MESSAGE__BODY_RECEIPT:
		return true; /* its ack is all it says */
	case RAILYARD__V1__CONTROLLER_MESSAGE__BODY_ERROR:
		log_warn("the controller refused message %llu: %.64s: %.512s",
			 (unsigned long long)m->error->in_reply_to, m->error->code,
			 m->error->message);
		return true;
	case RAILYARD__V1__CONTROLLER_MESSAGE__BODY_REFRESH_FACTS:
		log_info("controller asked for fresh facts");
		return send_facts(s, cs, m->seq) >= 0;
	case RAILYARD__V1__CONTROLLER_MESSAGE__BODY_APPLY_PLAN: {
		int r = agent_jobs_submit(s->jobs, m->apply_plan->deployment_id,
					  m->apply_plan->plan_json, m->apply_plan->check_mode);

		if (r == 1)
			log_info("plan %s seen before: not run again (its results are in the "
				 "outbox or were stored)",
				 m->apply_plan->deployment_id);
		else if (r < 0)
			log_warn("plan %.64s not accepted: %s", m->apply_plan->deployment_id,
				 ry_strerror(r));
		return true;
	}
	case RAILYARD__V1__CONTROLLER_MESSAGE__BODY_RUN_BENCH: {
		int r = agent_bench_submit(s->bench, m->run_bench);

		if (r == 1)
			log_info("bench %s (%.16s) seen before: its results follow",
				 m->run_bench->bench_id, m->run_bench->role);
		else if (r < 0)
			log_warn("bench %.64s not started: %s", m->run_bench->bench_id,
				 ry_strerror(r));
		return true;
	}
	case RAILYARD__V1__CONTROLLER_MESSAGE__BODY_HEALTH_CONFIG: {
		char err[256] = "";

		if (s->health &&
		    agent_health_configure(s->health, m->health_config->config_json,
					   m->health_config->playbook, err, sizeof(err)) < 0)
			log_warn("health settings of %.128s refused: %s",
				 m->health_config->playbook[0] ? m->health_config->playbook
							       : "the defaults",
				 err);
		return true;
	}
	case RAILYARD__V1__CONTROLLER_MESSAGE__BODY_LAUNCH_ORDER:
		agent_launch_on_order(s->launch, m->launch_order);
		return true;
	case RAILYARD__V1__CONTROLLER_MESSAGE__BODY_LAUNCH_REPLY:
		agent_launch_on_reply(s->launch, m->launch_reply);
		return true;
	case RAILYARD__V1__CONTROLLER_MESSAGE__BODY_CANCEL:
		if (m->cancel->bench_id[0] && agent_launch_cancel(s->launch, m->cancel->bench_id))
			log_info("bench %.64s: its daemon here stops (cancelled)",
				 m->cancel->bench_id);
		if (m->cancel->bench_id[0]) {
			if (agent_bench_cancel(s->bench, m->cancel->bench_id) == 1)
				log_info("bench %.64s: cancelled by the controller",
					 m->cancel->bench_id);
			else
				log_info("Cancel of bench %.64s: not running here",
					 m->cancel->bench_id);
		} else {
			log_warn("Cancel of %.64s: a running step is never abandoned; the plan "
				 "runs to its end",
				 m->cancel->deployment_id);
		}
		return true;
	default:
		/* Newer controllers may send kinds this agent does not know: say so, carry on. */
		log_warn("ignoring controller message of unknown kind %d", (int)m->body_case);
		return true;
	}
}

/* Wait for the channel to the controller, up to the connect timeout, but not past a stop: a
 * SIGTERM while the controller is unreachable used to wait out the whole timeout (10 s). */
static int wait_ready(struct agent_session *s)
{
	int64_t deadline = util_now_mono_ms() + s->o.connect_timeout_ms;

	for (;;) {
		int64_t now = util_now_mono_ms(), until = now + 250;

		if (stopping(s))
			return -ECANCELED;
		if (until > deadline)
			until = deadline;
		if (rpc_channel_wait_ready(s->ch, until) == 0)
			return 0;
		if (util_now_mono_ms() >= deadline)
			return -ETIMEDOUT;
	}
}

/* One session from open to end. Returns 0 to reconnect, or -RY_E_REVOKED when the controller
 * refuses this node. */
static int session_once(struct agent_session *s, struct rpc_backoff *bo)
{
	struct rpc_client_stream *cs = NULL;
	const struct rpc_status *st;
	bool welcomed = false;
	int64_t next_hb;
	int r;

	if (wait_ready(s) < 0) {
		if (!stopping(s))
			log_warn("controller %s not reachable within %d ms",
				 s->o.controller ? s->o.controller : s->cfg.controller,
				 s->o.connect_timeout_ms);
		return 0;
	}
	r = rpc_client_stream_open(s->ch, CONNECT_PATH,
				   &railyard__v1__controller_message__descriptor, &cs);
	if (r < 0) {
		log_warn("opening the session failed: %s", ry_strerror(r));
		return 0;
	}
	pthread_mutex_lock(&s->lock);
	s->cs = cs;
	if (s->stop)
		rpc_client_stream_cancel(cs);
	pthread_mutex_unlock(&s->lock);

	r = send_hello(s, cs);
	next_hb = util_now_mono_ms() + s->heartbeat_ms;
	s->cur = cs;
	while (r >= 0) {
		ProtobufCMessage *msg = NULL;
		int64_t deadline = next_hb;

		/* Plan results go out as they come, once the controller has said which of the
		 * last session's it has; poll briskly while something is in flight. */
		if (welcomed) {
			outbox_flush(s->outbox, outbox_send, s);
			agent_launch_flush(s->launch, launch_send, s);
		}
		if ((agent_jobs_busy(s->jobs) || outbox_pending(s->outbox) ||
		     agent_bench_busy(s->bench) || agent_launch_busy(s->launch)) &&
		    deadline > util_now_mono_ms() + 100)
			deadline = util_now_mono_ms() + 100;
		r = rpc_client_stream_next(cs, deadline, &msg);
		if (r == 1) {
			bool keep = on_message(s, cs, (Railyard__V1__ControllerMessage *)msg, bo,
					       &welcomed);

			protobuf_c_message_free_unpacked(msg, NULL);
			if (!keep) {
				rpc_client_stream_cancel(cs);
				continue;
			}
			/* Welcome may have shortened the interval. */
			if (next_hb > util_now_mono_ms() + s->heartbeat_ms)
				next_hb = util_now_mono_ms() + s->heartbeat_ms;
		} else if (r == 0 && util_now_mono_ms() >= next_hb) {
			r = send_heartbeat(s, cs);
			next_hb = util_now_mono_ms() + s->heartbeat_ms;
		}
	}
	/* The loop ends on a send failure, an undecodable message or the end of the stream. */
	st = rpc_client_stream_status(cs);
	if (r == -RY_E_INVALID) {
		log_warn("undecodable message from the controller; reconnecting");
		r = 0;
	} else if (r != -EPIPE) {
		log_warn("session failed: %s; reconnecting", ry_strerror(r));
		r = 0;
	} else if (stopping(s)) {
		r = 0;
	} else {
		log_warn("session ended: %s: %s", rpc_status_name(st->code), st->details);
		s->retry_after_ms = st->retry_after_ms;
		s->drop_channel =
			st->retry_after_ms > 0 && st->code == GRPC_STATUS_RESOURCE_EXHAUSTED;
		r = st->code == GRPC_STATUS_PERMISSION_DENIED ||
				    st->code == GRPC_STATUS_UNAUTHENTICATED
			    ? -RY_E_REVOKED
			    : 0;
	}
	s->cur = NULL;
	/* Launch messages live and die with their session. */
	agent_launch_disconnected(s->launch);
	pthread_mutex_lock(&s->lock);
	s->cs = NULL;
	pthread_mutex_unlock(&s->lock);
	rpc_client_stream_free(cs);
	return r;
}

int agent_session_run(struct agent_session *s)
{
	struct rpc_backoff bo = {s->o.backoff_base_ms, s->o.backoff_max_ms, 0};

	while (!stopping(s)) {
		int r = session_once(s, &bo), delay;

		if (r < 0)
			return r;
		if (stopping(s))
			break;
		delay = rpc_backoff_next_ms(&bo);
		if (s->retry_after_ms > delay)
			delay = s->retry_after_ms;
		s->retry_after_ms = 0;
		if (s->drop_channel) {
			struct rpc_channel *ch = NULL;

			/* The controller is out of descriptors: our idle connection holds one of
			 * them. A new channel connects afresh after the pause. */
			s->drop_channel = false;
			if (rpc_channel_new(&s->cc, &ch) == 0) {
				rpc_channel_free(s->ch);
				s->ch = ch;
			}
		}
		log_info("reconnecting in %d ms", delay);
		pause_ms(s, delay);
	}
	return 0;
}
