/* Controller.Connect: one session per node, keyed by the identity in the client certificate.
 * Enforces the message order (Hello first, seq strictly increasing), keeps the node's state in
 * the store, and ends sessions that fall silent. */
#include "controller/server_int.h"
#include "controller/deploy.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct ctl_session {
	struct ctl_session *next;
	struct rpc_stream *st;
	char node_id[64];
	char cluster[128];
	char hostname[CTL_HOSTNAME_MAX + 1];
	char boot_id[CTL_BOOT_ID_MAX + 1];
	int refs;	 /* under srv->lock: the stream's, and the reaper's while it acts */
	bool registered; /* under srv->lock */
	/* Written by the stream's message handler, read by the reaper and the sender. */
	_Atomic bool hello_done;
	_Atomic uint64_t last_seq; /* highest agent seq processed */
	_Atomic uint64_t out_seq;  /* last controller seq sent */
	_Atomic int64_t last_heard_ms;
	int64_t last_seen_saved_ms; /* message handler only: when last_seen was last written */
};

/* What a node's previous session had processed, so that an agent that reconnects within the
 * same boot learns which of its messages arrived. */
struct ctl_resume {
	struct ctl_resume *next;
	char node_id[64];
	char boot_id[CTL_BOOT_ID_MAX + 1];
	uint64_t last_seq;
};

static void session_unref(struct ctl_server *srv, struct ctl_session *s)
{
	int left;

	pthread_mutex_lock(&srv->lock);
	left = --s->refs;
	pthread_mutex_unlock(&srv->lock);
	if (left == 0) {
		rpc_stream_unref(s->st);
		free(s);
	}
}

static void session_finish(struct ctl_session *s, grpc_status_code code, const char *why)
{
	log_warn("session of node %s (%s) ended: %s", s->node_id, rpc_stream_peer(s->st)->address,
		 why);
	rpc_stream_finish(s->st, code, why);
}

static int session_send(struct ctl_session *s, Railyard__V1__ControllerMessage *m)
{
	int r;

	m->seq = ++s->out_seq;
	m->ack = s->last_seq;
	r = rpc_stream_send(s->st, &m->base);
	if (r < 0)
		log_warn("send to node %s failed: %s", s->node_id, ry_strerror(r));
	return r;
}

static int is_revoked_cb(void *userdata, const char *serial)
{
	return store_cert_is_revoked(userdata, serial);
}

static grpc_status_code session_open(void *userdata, struct rpc_stream *st,
				     const struct rpc_peer *peer, char **ret_msg)
{
	struct ctl_server *srv = userdata;
	struct store_node *node = NULL;
	struct ctl_session *s, *old = NULL;
	char fp[PKI_FINGERPRINT_LEN], err[256] = "";
	grpc_status_code code = GRPC_STATUS_OK;
	X509 *cert = NULL;
	int r;

	/* TLS verified the chain; revocation and the node's current certificate are ours. */
	if (!peer->cert_pem ||
	    pki_cert_from_pem(peer->cert_pem, strlen(peer->cert_pem), &cert) < 0) {
		code = GRPC_STATUS_UNAUTHENTICATED;
		snprintf(err, sizeof(err), "client certificate unreadable");
		goto out;
	}
	r = pki_cert_verify(srv->state->ca_cert, cert, is_revoked_cb, srv->state->store, err,
			    sizeof(err));
	if (r == -RY_E_REVOKED) {
		code = GRPC_STATUS_PERMISSION_DENIED;
		snprintf(err, sizeof(err), "certificate of %.64s is revoked", peer->common_name);
		goto out;
	}
	if (r < 0) {
		code = GRPC_STATUS_UNAUTHENTICATED;
		goto out;
	}
	r = store_node_get(srv->state->store, peer->common_name, &node);
	if (r < 0 || strcmp(node->id, peer->common_name) != 0) {
		code = GRPC_STATUS_PERMISSION_DENIED;
		snprintf(err, sizeof(err), "node %.64s is not enrolled", peer->common_name);
		goto out;
	}
	if (strcmp(node->state, "revoked") == 0) {
		code = GRPC_STATUS_PERMISSION_DENIED;
		snprintf(err, sizeof(err), "node %s is revoked", node->id);
		goto out;
	}
	if (pki_cert_fingerprint(cert, fp) < 0 ||
	    !pki_fingerprint_equal(fp, node->cert_fingerprint)) {
		code = GRPC_STATUS_PERMISSION_DENIED;
		snprintf(err, sizeof(err), "certificate is not the one issued to node %s",
			 node->id);
		goto out;
	}

	s = calloc(1, sizeof(*s));
	if (!s) {
		code = GRPC_STATUS_RESOURCE_EXHAUSTED;
		snprintf(err, sizeof(err), "out of memory");
		goto out;
	}
	s->st = rpc_stream_ref(st);
	s->refs = 1;
	snprintf(s->node_id, sizeof(s->node_id), "%s", node->id);
	snprintf(s->cluster, sizeof(s->cluster), "%s", node->cluster);
	snprintf(s->hostname, sizeof(s->hostname), "%s", node->hostname);
	s->last_heard_ms = util_now_mono_ms();
	rpc_stream_set_data(st, s);

	/* One session per node: a reconnect replaces a session the old stream has not noticed
	 * ending yet. */
	pthread_mutex_lock(&srv->lock);
	for (struct ctl_session **pp = &srv->sessions; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->node_id, s->node_id) == 0) {
			old = *pp;
			*pp = old->next;
			old->registered = false;
			old->refs++;
			break;
		}
	}
	s->registered = true;
	s->next = srv->sessions;
	srv->sessions = s;
	pthread_mutex_unlock(&srv->lock);
	if (old) {
		session_finish(old, GRPC_STATUS_ABORTED, "superseded by a new session");
		session_unref(srv, old);
	}
	log_debug("session opened for node %s from %s", s->node_id, peer->address);
out:
	if (code != GRPC_STATUS_OK) {
		log_warn("refused connection from %s (%s): %s", peer->address,
			 peer->common_name[0] ? peer->common_name : "no certificate", err);
		*ret_msg = strdup(err);
	}
	store_node_free(node);
	X509_free(cert);
	return code;
}

static void resume_remember(struct ctl_server *srv, const struct ctl_session *s)
{
	struct ctl_resume *r;

	if (!s->boot_id[0])
		return;
	pthread_mutex_lock(&srv->lock);
	for (r = srv->resume; r; r = r->next)
		if (strcmp(r->node_id, s->node_id) == 0)
			break;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (r) {
			snprintf(r->node_id, sizeof(r->node_id), "%s", s->node_id);
			r->next = srv->resume;
			srv->resume = r;
		}
	}
	if (r) {
		snprintf(r->boot_id, sizeof(r->boot_id), "%s", s->boot_id);
		r->last_seq = s->last_seq;
	}
	pthread_mutex_unlock(&srv->lock);
}

static uint64_t resume_lookup(struct ctl_server *srv, const char *node_id, const char *boot_id)
{
	uint64_t seq = 0;

	pthread_mutex_lock(&srv->lock);
	for (struct ctl_resume *r = srv->resume; r; r = r->next)
		if (strcmp(r->node_id, node_id) == 0 && strcmp(r->boot_id, boot_id) == 0)
			seq = r->last_seq;
	pthread_mutex_unlock(&srv->lock);
	return seq;
}

void ctl_sessions_done(struct ctl_server *srv)
{
	while (srv->resume) {
		struct ctl_resume *r = srv->resume;

		srv->resume = r->next;
		free(r);
	}
}

static void on_hello(struct ctl_server *srv, struct ctl_session *s, const Railyard__V1__Hello *h)
{
	Railyard__V1__ControllerMessage m = RAILYARD__V1__CONTROLLER_MESSAGE__INIT;
	Railyard__V1__Welcome w = RAILYARD__V1__WELCOME__INIT;
	int r;

	if (!ctl_valid_text(h->agent_version, CTL_VERSION_MAX) ||
	    (h->boot_id[0] && !ctl_valid_text(h->boot_id, CTL_BOOT_ID_MAX))) {
		session_finish(s, GRPC_STATUS_INVALID_ARGUMENT,
			       "Hello: invalid agent_version or boot_id");
		return;
	}
	if (strlen(h->facts_json) > CTL_FACTS_MAX) {
		session_finish(s, GRPC_STATUS_INVALID_ARGUMENT, "Hello: facts over 1 MiB");
		return;
	}
	r = store_node_online(srv->state->store, s->node_id, h->agent_version, h->facts_json,
			      util_now_unix_ms());
	if (r == -RY_E_INVALID) {
		session_finish(s, GRPC_STATUS_INVALID_ARGUMENT,
			       "Hello: facts are not a JSON object");
		return;
	}
	if (r == -RY_E_REVOKED || r == -RY_E_NOT_FOUND) {
		session_finish(s, GRPC_STATUS_PERMISSION_DENIED, ry_strerror(r));
		return;
	}
	if (r < 0) {
		log_error("storing Hello of node %s: %s (%s)", s->node_id, ry_strerror(r),
			  store_errmsg(srv->state->store));
		session_finish(s, GRPC_STATUS_INTERNAL, "database error");
		return;
	}
	s->last_seen_saved_ms = s->last_heard_ms; /* Hello wrote last_seen */
	snprintf(s->boot_id, sizeof(s->boot_id), "%s", h->boot_id);
	s->hello_done = true;
	w.node_id = s->node_id;
	w.cluster = s->cluster;
	w.heartbeat_interval_ms = (uint32_t)srv->cfg.heartbeat_interval_ms;
	w.last_agent_seq = h->boot_id[0] ? resume_lookup(srv, s->node_id, h->boot_id) : 0;
	m.body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_WELCOME;
	m.welcome = &w;
	(void)session_send(s, &m);
	log_info("node %s (%s) online, agent %s, from %s", s->node_id, s->hostname,
		 h->agent_version, rpc_stream_peer(s->st)->address);
	ctl_deployer_resend(srv->deployer, s->node_id);
}

static bool one_of(const char *v, const char *const *set)
{
	for (; *set; set++)
		if (strcmp(v, *set) == 0)
			return true;
	return false;
}

static void on_step_event(struct ctl_server *srv, struct ctl_session *s,
			  const Railyard__V1__StepEvent *ev)
{
	static const char *const statuses[] = {"ok", "changed", "failed", "skipped", NULL};
	struct store_step_result res = {0};
	int r;

	if (!ctl_valid_text(ev->deployment_id, CTL_ID_MAX) || ev->index > CTL_STEPS_MAX ||
	    !ctl_valid_text(ev->name, CTL_NAME_MAX) || !one_of(ev->status, statuses) ||
	    strlen(ev->diff) > CTL_DIFF_MAX || strlen(ev->message) > CTL_MESSAGE_MAX ||
	    ev->duration_ms < 0) {
		session_finish(s, GRPC_STATUS_INVALID_ARGUMENT, "StepEvent: invalid field");
		return;
	}
	res.name = ev->name;
	res.status = ev->status;
	res.diff = ev->diff;
	res.message = ev->message;
	res.idx = (int)ev->index;
	res.duration_ms = ev->duration_ms;
	r = store_step_result_put(srv->state->store, ev->deployment_id, s->node_id, &res);
	if (r < 0)
		log_warn("node %s: step result for deployment %.64s not stored: %s", s->node_id,
			 ev->deployment_id, ry_strerror(r));
}

static void on_apply_done(struct ctl_server *srv, struct ctl_session *s,
			  const Railyard__V1__ApplyDone *d)
{
	static const char *const statuses[] = {"succeeded", "failed", NULL};
	int counts[4];
	int r;

	if (!ctl_valid_text(d->deployment_id, CTL_ID_MAX) || !one_of(d->status, statuses) ||
	    strlen(d->message) > CTL_MESSAGE_MAX || d->ok > CTL_STEPS_MAX ||
	    d->changed > CTL_STEPS_MAX || d->failed > CTL_STEPS_MAX || d->skipped > CTL_STEPS_MAX) {
		session_finish(s, GRPC_STATUS_INVALID_ARGUMENT, "ApplyDone: invalid field");
		return;
	}
	counts[0] = (int)d->ok;
	counts[1] = (int)d->changed;
	counts[2] = (int)d->failed;
	counts[3] = (int)d->skipped;
	r = store_deploy_node_update(srv->state->store, d->deployment_id, s->node_id, d->status,
				     d->message[0] ? d->message : NULL, counts, util_now_unix_ms());
	if (r < 0) {
		log_error("node %s: result of deployment %.64s not stored: %s", s->node_id,
			  d->deployment_id, ry_strerror(r));
		return;
	}
	if (r == 0) {
		log_debug("node %s: late or repeated result for deployment %.64s ignored",
			  s->node_id, d->deployment_id);
		return;
	}
	log_info("deployment %s: node %s %s (ok %u, changed %u, failed %u, skipped %u)%s%s",
		 d->deployment_id, s->hostname, d->status, d->ok, d->changed, d->failed, d->skipped,
		 d->message[0] ? ": " : "", d->message);
	ctl_deployer_kick(srv->deployer);
}

/* The online session of a node, referenced (session_unref()), or NULL. */
static struct ctl_session *session_find(struct ctl_server *srv, const char *node_id)
{
	struct ctl_session *s = NULL;

	pthread_mutex_lock(&srv->lock);
	for (struct ctl_session *it = srv->sessions; it; it = it->next) {
		if (strcmp(it->node_id, node_id) == 0 && it->hello_done) {
			s = it;
			s->refs++;
			break;
		}
	}
	pthread_mutex_unlock(&srv->lock);
	return s;
}

int ctl_session_send(struct ctl_server *srv, const char *node_id,
		     Railyard__V1__ControllerMessage *m)
{
	struct ctl_session *s = session_find(srv, node_id);
	int r;

	if (!s)
		return -ENOTCONN;
	r = session_send(s, m);
	session_unref(srv, s);
	return r;
}

int ctl_session_peer_host(struct ctl_server *srv, const char *node_id, char *buf, size_t len)
{
	struct ctl_session *s = session_find(srv, node_id);
	const char *addr, *host, *end;

	if (!s)
		return -ENOTCONN;
	/* "ipv4:10.0.0.5:40312" or "ipv6:[fd00::5]:40312" */
	addr = rpc_stream_peer(s->st)->address;
	host = strchr(addr, ':');
	host = host ? host + 1 : addr;
	end = strrchr(host, ':');
	if (*host == '[') {
		host++;
		end = strchr(host, ']');
	}
	snprintf(buf, len, "%.*s", end ? (int)(end - host) : (int)strlen(host), host);
	session_unref(srv, s);
	return 0;
}

int ctl_session_send_plan(struct ctl_server *srv, const char *node_id, const char *deployment_id,
			  const char *plan_json, bool check_mode)
{
	Railyard__V1__ControllerMessage m = RAILYARD__V1__CONTROLLER_MESSAGE__INIT;
	Railyard__V1__ApplyPlan ap = RAILYARD__V1__APPLY_PLAN__INIT;

	ap.deployment_id = (char *)deployment_id;
	ap.plan_json = (char *)plan_json;
	ap.check_mode = check_mode;
	m.body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_APPLY_PLAN;
	m.apply_plan = &ap;
	return ctl_session_send(srv, node_id, &m);
}

static void session_message(void *userdata, struct rpc_stream *st, const ProtobufCMessage *msg)
{
	struct ctl_server *srv = userdata;
	struct ctl_session *s = rpc_stream_get_data(st);
	const Railyard__V1__AgentMessage *m = (const Railyard__V1__AgentMessage *)msg;
	int r;

	if (m->seq <= s->last_seq) {
		char why[128];

		snprintf(why, sizeof(why), "message seq %llu not above %llu",
			 (unsigned long long)m->seq, (unsigned long long)s->last_seq);
		session_finish(s, GRPC_STATUS_INVALID_ARGUMENT, why);
		return;
	}
	if (!s->hello_done && m->body_case != RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO) {
		session_finish(s, GRPC_STATUS_INVALID_ARGUMENT, "expected Hello as first message");
		return;
	}
	s->last_seq = m->seq;
	s->last_heard_ms = util_now_mono_ms();

	switch (m->body_case) {
	case RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO:
		if (s->hello_done) {
			session_finish(s, GRPC_STATUS_INVALID_ARGUMENT, "duplicate Hello");
			return;
		}
		on_hello(srv, s, m->hello);
		break;
	case RAILYARD__V1__AGENT_MESSAGE__BODY_HEARTBEAT:
		/* A revocation (another process writes it) is seen at the next heartbeat either
		 * way; last_seen is written every CTL_LAST_SEEN_SAVE_MS. */
		if (s->last_heard_ms - s->last_seen_saved_ms >= CTL_LAST_SEEN_SAVE_MS) {
			r = store_node_touch(srv->state->store, s->node_id, util_now_unix_ms());
			if (r == 0)
				s->last_seen_saved_ms = s->last_heard_ms;
		} else {
			r = store_node_check(srv->state->store, s->node_id);
		}
		if (r == -RY_E_REVOKED || r == -RY_E_NOT_FOUND)
			session_finish(s, GRPC_STATUS_PERMISSION_DENIED, "node revoked");
		else if (r < 0)
			log_error("heartbeat of node %s: %s", s->node_id, ry_strerror(r));
		break;
	case RAILYARD__V1__AGENT_MESSAGE__BODY_FACTS_UPDATE:
		if (strlen(m->facts_update->facts_json) > CTL_FACTS_MAX) {
			session_finish(s, GRPC_STATUS_INVALID_ARGUMENT, "FactsUpdate over 1 MiB");
			return;
		}
		r = store_node_set_facts(srv->state->store, s->node_id, m->facts_update->facts_json,
					 util_now_unix_ms());
		if (r == -RY_E_INVALID)
			session_finish(s, GRPC_STATUS_INVALID_ARGUMENT,
				       "FactsUpdate: facts are not a JSON object");
		else if (r < 0)
			log_error("facts of node %s: %s", s->node_id, ry_strerror(r));
		else
			log_info("node %s (%s) sent fresh facts", s->node_id, s->hostname);
		break;
	case RAILYARD__V1__AGENT_MESSAGE__BODY_STEP_EVENT:
		on_step_event(srv, s, m->step_event);
		break;
	case RAILYARD__V1__AGENT_MESSAGE__BODY_APPLY_DONE:
		on_apply_done(srv, s, m->apply_done);
		break;
	case RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_READY:
		if (!ctl_valid_text(m->bench_ready->bench_id, CTL_ID_MAX) ||
		    m->bench_ready->port == 0 || m->bench_ready->port > 65535) {
			session_finish(s, GRPC_STATUS_INVALID_ARGUMENT,
				       "BenchReady: invalid field");
			return;
		}
		ctl_bench_on_ready(srv, s->node_id, m->bench_ready->bench_id,
				   (int)m->bench_ready->port);
		break;
	case RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_RESULT:
		if (!ctl_valid_text(m->bench_result->bench_id, CTL_ID_MAX) ||
		    strlen(m->bench_result->result_json) > CTL_DIFF_MAX) {
			session_finish(s, GRPC_STATUS_INVALID_ARGUMENT,
				       "BenchResult: invalid field");
			return;
		}
		ctl_bench_on_result(srv, s->node_id, m->bench_result->bench_id, m->bench_result->ok,
				    m->bench_result->result_json);
		break;
	case RAILYARD__V1__AGENT_MESSAGE__BODY_ERROR:
		log_warn("node %s (%s) reports error %.64s: %.512s", s->node_id, s->hostname,
			 m->error->code, m->error->message);
		break;
	default:
		session_finish(s, GRPC_STATUS_INVALID_ARGUMENT, "message without a known body");
		break;
	}
}

static void session_closed(void *userdata, struct rpc_stream *st, bool cancelled)
{
	struct ctl_server *srv = userdata;
	struct ctl_session *s = rpc_stream_get_data(st);
	bool was_registered;

	pthread_mutex_lock(&srv->lock);
	was_registered = s->registered;
	for (struct ctl_session **pp = &srv->sessions; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	s->registered = false;
	pthread_mutex_unlock(&srv->lock);

	resume_remember(srv, s);
	/* A superseded session must not mark the node offline under its successor. */
	if (was_registered && s->hello_done) {
		/* last_seen: when it was last heard (heartbeats write it only now and then). */
		int64_t heard = util_now_unix_ms() - (util_now_mono_ms() - s->last_heard_ms);
		int r = store_node_offline(srv->state->store, s->node_id, heard);

		if (r < 0 && r != -RY_E_NOT_FOUND)
			log_error("marking node %s offline: %s", s->node_id, ry_strerror(r));
		log_info("node %s (%s) offline (%s)", s->node_id, s->hostname,
			 cancelled ? "connection lost" : "session ended");
	}
	rpc_stream_set_data(st, NULL);
	session_unref(srv, s);
}

static void session_error(void *userdata, struct rpc_stream *st, const char *what)
{
	struct ctl_session *s = rpc_stream_get_data(st);
	const struct rpc_peer *peer = rpc_stream_peer(st);

	log_warn("stream from %s (%s): %s", peer->address,
		 s ? s->node_id : (peer->common_name[0] ? peer->common_name : "no certificate"),
		 what);
}

const struct rpc_stream_ops ctl_session_ops = {
	.open = session_open,
	.message = session_message,
	.closed = session_closed,
	.error = session_error,
};

void ctl_sessions_reap(struct ctl_server *srv, int64_t now_mono_ms, bool refresh)
{
	struct ctl_session **picked = NULL;
	size_t n = 0, cap = 0;

	/* Collect under the lock, act outside it: finishing or sending takes stream locks. */
	pthread_mutex_lock(&srv->lock);
	for (struct ctl_session *s = srv->sessions; s; s = s->next)
		cap++;
	picked = cap ? calloc(cap, sizeof(*picked)) : NULL;
	for (struct ctl_session *s = srv->sessions; picked && s; s = s->next) {
		bool late = now_mono_ms - s->last_heard_ms > srv->cfg.heartbeat_timeout_ms;

		if (late || (refresh && s->hello_done)) {
			s->refs++;
			picked[n++] = s;
		}
	}
	pthread_mutex_unlock(&srv->lock);
	if (cap && !picked)
		log_error("reaper: out of memory; sessions not checked this pass");

	for (size_t i = 0; i < n; i++) {
		struct ctl_session *s = picked[i];

		if (now_mono_ms - s->last_heard_ms > srv->cfg.heartbeat_timeout_ms) {
			char why[96];

			snprintf(why, sizeof(why), "no message for over %d ms (heartbeat timeout)",
				 srv->cfg.heartbeat_timeout_ms);
			session_finish(s, GRPC_STATUS_DEADLINE_EXCEEDED, why);
		} else {
			Railyard__V1__ControllerMessage m = RAILYARD__V1__CONTROLLER_MESSAGE__INIT;
			Railyard__V1__RefreshFacts rf = RAILYARD__V1__REFRESH_FACTS__INIT;

			m.body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_REFRESH_FACTS;
			m.refresh_facts = &rf;
			(void)session_send(s, &m);
		}
		session_unref(srv, s);
	}
	free(picked);
}

int ctl_server_online_count(struct ctl_server *srv)
{
	int n = 0;

	pthread_mutex_lock(&srv->lock);
	for (struct ctl_session *s = srv->sessions; s; s = s->next)
		n += s->hello_done ? 1 : 0;
	pthread_mutex_unlock(&srv->lock);
	return n;
}
