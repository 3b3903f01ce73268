/* Controller.Connect: one session per node, keyed by the identity in the client certificate.
 * Enforces the message order (Hello first, seq strictly increasing) on the completion-queue
 * thread and hands every message that needs the database to the ingest worker, in order, up to
 * a window of messages (and bytes) waiting to be stored; then the stream reads nothing more
 * until one is stored. Acknowledgements ("ack") cover only committed messages: one Receipt per
 * session and commit carries them. Liveness is in memory; sessions that fall silent are ended by
 * the reaper. */
#include "controller/server_int.h"
#include "controller/engine/engine.h"
#include "controller/throttle.h"
#include "controller/store/store.h"
#include "controller/store/store_audit.h"
#include "controller/store/store_nodes.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct ctl_session {
	struct ctl_session *next; /* in its registry bucket */
	struct rpc_stream *st;
	char node_id[64];
	char cluster[128];
	char hostname[CTL_HOSTNAME_MAX + 1];
	char boot_id[CTL_BOOT_ID_MAX + 1];
	int refs;	 /* under srv->lock: the stream's, the ingest worker's, the reaper's */
	bool registered; /* under srv->lock */
	bool closed;	 /* under srv->lock: the stream ended (closed() ran) */
	bool owned_node; /* under srv->lock: it was the node's session when it ended */
	_Atomic bool hello_done;
	/* Messages with the ingest worker, and WINDOW_PAUSED while the stream waits for them (set
	 * by the completion-queue thread that stops reading, cleared by the worker that resumes
	 * it: one atomic word, so that a stop and a resume can never miss each other). */
	_Atomic unsigned inflight;
	_Atomic size_t inflight_bytes;
	_Atomic bool ended;	   /* session_finish() ran: what it still has queued is dropped */
	unsigned batch_mark;	   /* ingest worker only: ctl_session_last_in_batch() */
	_Atomic uint64_t last_seq; /* highest agent seq received (order check) */
	_Atomic uint64_t ack_seq;  /* highest agent seq committed: what acks say */
	_Atomic uint64_t sent_ack; /* the ack_seq of the last message not a Hello (resume) */
	_Atomic uint64_t out_seq;  /* last controller seq sent */
	_Atomic int64_t last_heard_ms;
	_Atomic int64_t hb_timeout_ms; /* silence that ends it: stretched with its interval */
	_Atomic int64_t seen_saved_ms; /* last_heard_ms when last_seen was last written */
	_Atomic unsigned refused;      /* reports refused in this session */
};

/* What a node's previous session had committed, so that an agent that reconnects within the
 * same boot learns which of its messages were stored. */
struct ctl_resume {
	struct ctl_resume *next; /* in its bucket */
	char node_id[64];
	char boot_id[CTL_BOOT_ID_MAX + 1];
	uint64_t last_seq;
	int64_t at_ms; /* monotonic: when the session it comes from ended */
};

/* The read-ahead window: a session may have this many messages (and, past the first, this many
 * encoded bytes) with the ingest worker before its stream stops reading. A check-mode plan's
 * step events and its end (27 for the H200 playbooks) then go into one commit, acknowledged by
 * one Receipt, instead of a commit and a Receipt each; the bytes bound what one node can make
 * the controller hold (its messages may be 4 MiB each). A Hello is never read ahead of: nothing
 * else may come before its Welcome. */
#define CTL_SESSION_WINDOW	 32
#define CTL_SESSION_WINDOW_BYTES (256 * 1024)
#define WINDOW_PAUSED		 (1u << 31)

/* Resume entries of nodes that have not come back for this long are dropped (an agent that
 * reconnects later within the same boot sends its whole outbox again; the controller takes
 * what it has as re-sends). */
#define CTL_RESUME_KEEP_MS (24 * 3600 * 1000LL)

/* ---- the registry: sessions and resume entries by node id -------------------------------
 * Two chained hash tables under srv->lock, doubled at a load factor of 1: opening, closing,
 * finding and sending are O(1) in the number of sessions; only the reaper's and the chores'
 * passes walk them all. */

static size_t id_hash(const char *id)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (; *id; id++)
		h = (h ^ (unsigned char)*id) * 1099511628211ULL;
	return (size_t)(h ^ (h >> 32));
}

/* Double a table of cap buckets (next pointer at offset next_off, key at key_off) when n
 * reaches cap; out of memory keeps the old one (longer chains, still correct). */
static void table_grow(void ***tab, size_t *cap, size_t n, size_t next_off, size_t key_off)
{
	size_t ncap = *cap ? *cap * 2 : 1024;
	void **nt;

	if (n < *cap)
		return;
	nt = calloc(ncap, sizeof(*nt));
	if (!nt)
		return;
	for (size_t i = 0; i < *cap; i++) {
		void *e = (*tab)[i];

		while (e) {
			void **enext = (void **)((char *)e + next_off);
			void *following = *enext;
			size_t b = id_hash((const char *)e + key_off) & (ncap - 1);

			*enext = nt[b];
			nt[b] = e;
			e = following;
		}
	}
	free(*tab);
	*tab = nt;
	*cap = ncap;
}

static struct ctl_session **reg_bucket(struct ctl_server *srv, const char *id)
{
	return &srv->sessions[id_hash(id) & (srv->sessions_cap - 1)];
}

/* The registered session of node id, or NULL. Caller holds srv->lock. */
static struct ctl_session *reg_find_locked(struct ctl_server *srv, const char *id)
{
	if (!srv->sessions_cap)
		return NULL;
	for (struct ctl_session *s = *reg_bucket(srv, id); s; s = s->next)
		if (strcmp(s->node_id, id) == 0)
			return s;
	return NULL;
}

/* Caller holds srv->lock; no session of s's node is registered. -ENOMEM. */
static int reg_insert_locked(struct ctl_server *srv, struct ctl_session *s)
{
	struct ctl_session **b;

	table_grow((void ***)&srv->sessions, &srv->sessions_cap, srv->n_sessions,
		   offsetof(struct ctl_session, next), offsetof(struct ctl_session, node_id));
	if (!srv->sessions_cap)
		return -ENOMEM;
	b = reg_bucket(srv, s->node_id);
	s->next = *b;
	*b = s;
	s->registered = true;
	srv->n_sessions++;
	return 0;
}

/* Unregister s if it is registered. Caller holds srv->lock. */
static void reg_remove_locked(struct ctl_server *srv, struct ctl_session *s)
{
	if (!s->registered)
		return;
	for (struct ctl_session **pp = reg_bucket(srv, s->node_id); *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	s->registered = false;
	s->next = NULL;
	srv->n_sessions--;
	if (s->hello_done)
		srv->n_online--;
}

static struct ctl_resume **resume_bucket(struct ctl_server *srv, const char *id)
{
	return &srv->resume[id_hash(id) & (srv->resume_cap - 1)];
}

void ctl_session_ref(struct ctl_server *srv, struct ctl_session *s)
{
	pthread_mutex_lock(&srv->lock);
	s->refs++;
	pthread_mutex_unlock(&srv->lock);
}

void ctl_session_unref(struct ctl_server *srv, struct ctl_session *s)
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

const char *ctl_session_node_id(const struct ctl_session *s)
{
	return s->node_id;
}

const char *ctl_session_hostname(const struct ctl_session *s)
{
	return s->hostname;
}

const char *ctl_session_cluster(const struct ctl_session *s)
{
	return s->cluster;
}

static void session_finish(struct ctl_session *s, grpc_status_code code, const char *why)
{
	s->ended = true;
	log_warn("session of node %s (%s) ended: %s", s->node_id, rpc_stream_peer(s->st)->address,
		 why);
	rpc_stream_finish(s->st, code, why);
}

static int session_send(struct ctl_session *s, Railyard__V1__ControllerMessage *m)
{
	int r;

	m->seq = ++s->out_seq;
	m->ack = s->ack_seq;
	r = rpc_stream_send(s->st, &m->base);
	if (r < 0 && r != -EPIPE)
		log_warn("send to node %s failed: %s", s->node_id, ry_strerror(r));
	return r;
}

/* A wait between lo and hi ms, spread so that refused agents do not come back together. */
static int retry_after_ms(int lo, int hi)
{
	static _Atomic unsigned next;
	unsigned x = atomic_fetch_add(&next, 2654435761u) ^ (unsigned)util_now_mono_ms();

	return lo + (int)(x % (unsigned)(hi - lo + 1));
}

static grpc_status_code session_open(void *userdata, struct rpc_stream *st,
				     const struct rpc_peer *peer, char **ret_msg)
{
	struct ctl_server *srv = userdata;
	struct store_node *node = NULL;
	struct ctl_session *s, *old = NULL;
	char fp[PKI_FINGERPRINT_LEN], err[256] = "";
	grpc_status_code code = GRPC_STATUS_OK;
	long limit = atomic_load(&srv->fds_limit);
	int r;

	/* Near the open-file limit a new session is refused and its agent told to let go of the
	 * connection for a while: gRPC 1.51 stops listening when accept() fails. */
	if (limit > 0) {
		long in_use = atomic_load(&srv->fds_open) + atomic_fetch_add(&srv->fds_opened, 1);

		if (in_use + ctl_fd_margin(limit) > limit) {
			code = GRPC_STATUS_RESOURCE_EXHAUSTED;
			snprintf(err, sizeof(err),
				 "the controller is at its open-file limit (%ld of %ld descriptors "
				 "in use); retry later",
				 in_use, limit);
			rpc_stream_set_retry_after(st, retry_after_ms(5000, 15000));
			goto out;
		}
	}

	/* Overloaded: a session opened now would wait behind the messages being stored (its Hello
	 * after them, holding its facts in memory meanwhile); the agent is told when to come back
	 * instead, and keeps its connection. */
	if (ctl_engine_backlog(srv->engine) > CTL_OPEN_BACKLOG_MAX) {
		size_t backlog = ctl_engine_backlog(srv->engine);

		code = GRPC_STATUS_UNAVAILABLE;
		snprintf(err, sizeof(err),
			 "the controller is busy storing %zu messages; retry later", backlog);
		rpc_stream_set_retry_after(st, retry_after_ms(1000, 1000 + (int)(backlog / 2)));
		goto out;
	}

	/* TLS verified the chain (client certificates are verified against our CA alone) and the
	 * validity period; the node's current certificate and revocation are ours. The
	 * certificate must be the one issued to the node, compared by fingerprint, so its serial
	 * is the one recorded at enrollment: it is not parsed again (~160 us of a storm's ~2 ms a
	 * session). These are reads on the store's reader connection: they never wait for a
	 * write. */
	if (!peer->cert_pem ||
	    pki_pem_fingerprint(peer->cert_pem, strlen(peer->cert_pem), fp) < 0) {
		code = GRPC_STATUS_UNAUTHENTICATED;
		snprintf(err, sizeof(err), "client certificate unreadable");
		goto out;
	}
	r = store_node_get(srv->state->store, peer->common_name, &node);
	if (r < 0 && r != -RY_E_NOT_FOUND && r != -ENOTUNIQ) {
		/* Not the node's fault: it reconnects after its backoff. */
		code = GRPC_STATUS_UNAVAILABLE;
		snprintf(err, sizeof(err), "database unavailable: %s", ry_strerror(r));
		goto out;
	}
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
	if (!pki_fingerprint_equal(fp, node->cert_fingerprint)) {
		code = GRPC_STATUS_PERMISSION_DENIED;
		snprintf(err, sizeof(err), "certificate is not the one issued to node %s",
			 node->id);
		goto out;
	}
	/* A node without a recorded serial is not one this controller enrolled: refused. */
	r = node->cert_serial ? store_cert_is_revoked(srv->state->store, node->cert_serial) : 1;
	if (r < 0) {
		code = GRPC_STATUS_UNAVAILABLE;
		snprintf(err, sizeof(err), "database unavailable: %s", ry_strerror(r));
		goto out;
	}
	if (r > 0) {
		code = GRPC_STATUS_PERMISSION_DENIED;
		snprintf(err, sizeof(err), "certificate of %s is revoked", node->id);
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
	s->seen_saved_ms = s->last_heard_ms;
	s->hb_timeout_ms = srv->cfg.heartbeat_timeout_ms;
	rpc_stream_set_data(st, s);

	/* One session per node: a reconnect replaces a session the old stream has not noticed
	 * ending yet. */
	pthread_mutex_lock(&srv->lock);
	old = reg_find_locked(srv, s->node_id);
	if (old) {
		reg_remove_locked(srv, old);
		old->refs++;
	}
	r = reg_insert_locked(srv, s);
	pthread_mutex_unlock(&srv->lock);
	if (r < 0) {
		/* Not registered: the stream's close finds it so and frees it. */
		code = GRPC_STATUS_RESOURCE_EXHAUSTED;
		snprintf(err, sizeof(err), "out of memory");
		rpc_stream_set_data(st, NULL);
		ctl_session_unref(srv, s);
		if (old) {
			session_finish(old, GRPC_STATUS_ABORTED, "superseded by a new session");
			ctl_session_unref(srv, old);
		}
		goto out;
	}
	if (old) {
		session_finish(old, GRPC_STATUS_ABORTED, "superseded by a new session");
		ctl_session_unref(srv, old);
	}
	log_debug("session opened for node %s from %s", s->node_id, peer->address);
out:
	if (code == GRPC_STATUS_RESOURCE_EXHAUSTED ||
	    (code == GRPC_STATUS_UNAVAILABLE && strstr(err, "busy storing"))) {
		/* At the limit (or in a storm) refused agents come back every few seconds. */
		static _Atomic unsigned long n_full;
		unsigned long n = atomic_fetch_add(&n_full, 1) + 1;

		if (n <= 10 || n % 1000 == 0)
			log_warn("refused connection from %s (%s): %s (%lu refused so)",
				 peer->address, peer->common_name, err, n);
		*ret_msg = strdup(err);
	} else if (code != GRPC_STATUS_OK) {
		log_warn("refused connection from %s (%s): %s", peer->address,
			 peer->common_name[0] ? peer->common_name : "no certificate", err);
		*ret_msg = strdup(err);
	}
	store_node_free(node);
	return code;
}

/* What Welcome.last_agent_seq tells the node's next session: the agent drops the outbox
 * messages it sent at or below it. Only a session that committed something besides its Hello
 * moves it: the agent sends its outbox only after a Welcome, so a session that stored just a
 * Hello (its Welcome may never have arrived) says nothing about the messages sent before it,
 * whose seqs are lower than that Hello's. */
static void resume_remember(struct ctl_server *srv, const struct ctl_session *s)
{
	struct ctl_resume *r = NULL;

	pthread_mutex_lock(&srv->lock);
	if (!s->boot_id[0]) {
		pthread_mutex_unlock(&srv->lock);
		return;
	}
	if (srv->resume_cap)
		for (r = *resume_bucket(srv, s->node_id); r; r = r->next)
			if (strcmp(r->node_id, s->node_id) == 0)
				break;
	if (!r) {
		table_grow((void ***)&srv->resume, &srv->resume_cap, srv->n_resume,
			   offsetof(struct ctl_resume, next), offsetof(struct ctl_resume, node_id));
		r = srv->resume_cap ? calloc(1, sizeof(*r)) : NULL;
		if (r) {
			struct ctl_resume **b;

			snprintf(r->node_id, sizeof(r->node_id), "%s", s->node_id);
			b = resume_bucket(srv, r->node_id);
			r->next = *b;
			*b = r;
			srv->n_resume++;
		}
	}
	if (r && strcmp(r->boot_id, s->boot_id) != 0) {
		snprintf(r->boot_id, sizeof(r->boot_id), "%s", s->boot_id);
		r->last_seq = 0;
	}
	if (r && s->sent_ack > r->last_seq)
		r->last_seq = s->sent_ack;
	if (r)
		r->at_ms = util_now_mono_ms();
	pthread_mutex_unlock(&srv->lock);
}

/* What the node's previous session committed, for the Welcome of its next one within the same
 * boot; the entry is taken (the new session carries the value on: sent_ack), so the table holds
 * only nodes that are away. */
static uint64_t resume_take(struct ctl_server *srv, const char *node_id, const char *boot_id)
{
	uint64_t seq = 0;

	pthread_mutex_lock(&srv->lock);
	for (struct ctl_resume **pp = srv->resume_cap ? resume_bucket(srv, node_id) : NULL;
	     pp && *pp; pp = &(*pp)->next) {
		struct ctl_resume *r = *pp;

		if (strcmp(r->node_id, node_id) != 0)
			continue;
		if (strcmp(r->boot_id, boot_id) == 0)
			seq = r->last_seq;
		*pp = r->next;
		free(r);
		srv->n_resume--;
		break;
	}
	pthread_mutex_unlock(&srv->lock);
	return seq;
}

/* Drop resume entries older than CTL_RESUME_KEEP_MS (the reaper, now and then). */
static void resume_prune(struct ctl_server *srv, int64_t now_mono_ms)
{
	pthread_mutex_lock(&srv->lock);
	for (size_t i = 0; i < srv->resume_cap; i++) {
		for (struct ctl_resume **pp = &srv->resume[i]; *pp;) {
			struct ctl_resume *r = *pp;

			if (now_mono_ms - r->at_ms > CTL_RESUME_KEEP_MS) {
				*pp = r->next;
				free(r);
				srv->n_resume--;
			} else {
				pp = &r->next;
			}
		}
	}
	pthread_mutex_unlock(&srv->lock);
}

void ctl_sessions_done(struct ctl_server *srv)
{
	/* Under the lock: the fuzz harness drops the tables between inputs while the reaper still
	 * walks them (fuzz_ctl_reset()); at shutdown the reaper has stopped. */
	pthread_mutex_lock(&srv->lock);
	for (size_t i = 0; i < srv->resume_cap; i++) {
		while (srv->resume[i]) {
			struct ctl_resume *r = srv->resume[i];

			srv->resume[i] = r->next;
			free(r);
		}
	}
	free(srv->resume);
	srv->resume = NULL;
	srv->resume_cap = srv->n_resume = 0;
	free(srv->sessions);
	srv->sessions = NULL;
	srv->sessions_cap = 0;
	pthread_mutex_unlock(&srv->lock);
}

static void on_hello(struct ctl_server *srv, struct ctl_session *s,
		     const Railyard__V1__AgentMessage *m, struct ctl_outcome *o)
{
	const Railyard__V1__Hello *h = m->hello;
	int r;

	if (!ctl_valid_text(h->agent_version, CTL_VERSION_MAX) ||
	    (h->boot_id[0] && !ctl_valid_text(h->boot_id, CTL_BOOT_ID_MAX))) {
		o->verdict = CTL_END;
		o->code = GRPC_STATUS_INVALID_ARGUMENT;
		snprintf(o->why, sizeof(o->why), "Hello: invalid agent_version or boot_id");
		return;
	}
	if (strlen(h->facts_json) > CTL_FACTS_MAX) {
		o->verdict = CTL_END;
		o->code = GRPC_STATUS_INVALID_ARGUMENT;
		snprintf(o->why, sizeof(o->why), "Hello: facts over 1 MiB");
		return;
	}
	r = store_node_online(srv->state->store, s->node_id, h->agent_version, h->facts_json,
			      util_now_unix_ms());
	if (r == -RY_E_INVALID) {
		o->verdict = CTL_END;
		o->code = GRPC_STATUS_INVALID_ARGUMENT;
		snprintf(o->why, sizeof(o->why), "Hello: facts are not a JSON object");
		return;
	}
	if (r == -RY_E_REVOKED || r == -RY_E_NOT_FOUND) {
		o->verdict = CTL_END;
		o->code = GRPC_STATUS_PERMISSION_DENIED;
		snprintf(o->why, sizeof(o->why), "%s", ry_strerror(r));
		return;
	}
	if (r < 0) {
		ctl_outcome_store_error(srv, o, r, "storing Hello");
		return;
	}
	pthread_mutex_lock(&srv->lock); /* resume_remember() reads it on another thread */
	snprintf(s->boot_id, sizeof(s->boot_id), "%s", h->boot_id);
	pthread_mutex_unlock(&srv->lock);
	ctl_events_emit(srv->events, "node.online", s->cluster,
			json_pack("{s:s, s:s, s:s}", "id", s->node_id, "hostname", s->hostname,
				  "agent_version", h->agent_version));
	o->verdict = CTL_DONE;
	log_info("node %s (%s) online, agent %s, from %s", s->node_id, s->hostname,
		 h->agent_version, rpc_stream_peer(s->st)->address);
}

static void on_facts(struct ctl_server *srv, struct ctl_session *s,
		     const Railyard__V1__AgentMessage *m, struct ctl_outcome *o)
{
	const Railyard__V1__FactsUpdate *fu = m->facts_update;
	int r;

	if (strlen(fu->facts_json) > CTL_FACTS_MAX) {
		o->verdict = CTL_END;
		o->code = GRPC_STATUS_INVALID_ARGUMENT;
		snprintf(o->why, sizeof(o->why), "FactsUpdate over 1 MiB");
		return;
	}
	r = store_node_set_facts(srv->state->store, s->node_id, fu->facts_json, util_now_unix_ms());
	if (r == -RY_E_INVALID) {
		o->verdict = CTL_END;
		o->code = GRPC_STATUS_INVALID_ARGUMENT;
		snprintf(o->why, sizeof(o->why), "FactsUpdate: facts are not a JSON object");
	} else if (r == -RY_E_REVOKED || r == -RY_E_NOT_FOUND) {
		o->verdict = CTL_END;
		o->code = GRPC_STATUS_PERMISSION_DENIED;
		snprintf(o->why, sizeof(o->why), "node revoked");
	} else if (r < 0) {
		ctl_outcome_store_error(srv, o, r, "storing facts");
	} else {
		o->verdict = CTL_DONE;
		log_info("node %s (%s) sent fresh facts", s->node_id, s->hostname);
	}
}

/* The heartbeat interval a Welcome tells now: the fleet is the expected agents or the sessions
 * open, whichever is more. */
static int heartbeat_now(struct ctl_server *srv)
{
	long fleet = srv->cfg.expected_agents;

	pthread_mutex_lock(&srv->lock);
	if ((long)srv->n_sessions > fleet)
		fleet = (long)srv->n_sessions;
	pthread_mutex_unlock(&srv->lock);
	return ctl_heartbeat_interval(srv->cfg.heartbeat_interval_ms, srv->cfg.max_heartbeat_rate,
				      fleet);
}

/* The interval for a session being welcomed, and its silence timeout, stretched alike. */
static int heartbeat_for(struct ctl_server *srv, struct ctl_session *s)
{
	const struct ctl_server_config *cfg = &srv->cfg;
	int iv = heartbeat_now(srv);

	s->hb_timeout_ms =
		cfg->heartbeat_interval_ms > 0 && iv > cfg->heartbeat_interval_ms
			? (int64_t)cfg->heartbeat_timeout_ms * iv / cfg->heartbeat_interval_ms
			: cfg->heartbeat_timeout_ms;
	return iv;
}

static void send_welcome(struct ctl_server *srv, struct ctl_session *s)
{
	Railyard__V1__ControllerMessage m = RAILYARD__V1__CONTROLLER_MESSAGE__INIT;
	Railyard__V1__Welcome w = RAILYARD__V1__WELCOME__INIT;

	w.node_id = s->node_id;
	w.cluster = s->cluster;
	w.heartbeat_interval_ms = (uint32_t)heartbeat_for(srv, s);
	w.last_agent_seq = s->boot_id[0] ? resume_take(srv, s->node_id, s->boot_id) : 0;
	/* Should this session store nothing more, its end remembers the same. */
	if (w.last_agent_seq > s->sent_ack)
		s->sent_ack = w.last_agent_seq;
	m.body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_WELCOME;
	m.welcome = &w;
	(void)session_send(s, &m);
}

static void send_receipt(struct ctl_session *s)
{
	Railyard__V1__ControllerMessage m = RAILYARD__V1__CONTROLLER_MESSAGE__INIT;
	Railyard__V1__Receipt rc = RAILYARD__V1__RECEIPT__INIT;

	m.body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_RECEIPT;
	m.receipt = &rc;
	(void)session_send(s, &m);
}

static const char *body_name(int body)
{
	switch (body) {
	case RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO:
		return "Hello";
	case RAILYARD__V1__AGENT_MESSAGE__BODY_FACTS_UPDATE:
		return "FactsUpdate";
	case RAILYARD__V1__AGENT_MESSAGE__BODY_STEP_EVENT:
		return "StepEvent";
	case RAILYARD__V1__AGENT_MESSAGE__BODY_APPLY_DONE:
		return "ApplyDone";
	case RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_READY:
		return "BenchReady";
	case RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_RESULT:
		return "BenchResult";
	case RAILYARD__V1__AGENT_MESSAGE__BODY_HEARTBEAT:
		return "Heartbeat";
	case RAILYARD__V1__AGENT_MESSAGE__BODY_ERROR:
		return "Error";
	case RAILYARD__V1__AGENT_MESSAGE__BODY_LAUNCH_REQUEST:
		return "LaunchRequest";
	case RAILYARD__V1__AGENT_MESSAGE__BODY_LAUNCH_STATUS:
		return "LaunchStatus";
	default:
		return "message";
	}
}

void ctl_sessions_metrics(struct ctl_server *srv, FILE *f)
{
	fprintf(f, "# HELP railyard_rpc_messages_total Agent messages received, by kind.\n"
		   "# TYPE railyard_rpc_messages_total counter\n");
	unsigned long long other = 0;

	for (int k = 0; k < CTL_RPC_KINDS; k++) {
		uint_fast64_t v = atomic_load_explicit(&srv->rpc_received[k], memory_order_relaxed);

		if (strcmp(body_name(k), "message") == 0)
			other += v;
		else
			fprintf(f, "railyard_rpc_messages_total{kind=\"%s\"} %llu\n", body_name(k),
				(unsigned long long)v);
	}
	fprintf(f, "railyard_rpc_messages_total{kind=\"other\"} %llu\n", other);
	fprintf(f,
		"# HELP railyard_heartbeat_interval_seconds The heartbeat interval a Welcome tells "
		"now (stretched with the fleet by --max-heartbeat-rate).\n"
		"# TYPE railyard_heartbeat_interval_seconds gauge\n"
		"railyard_heartbeat_interval_seconds %.3f\n",
		heartbeat_now(srv) / 1000.0);
}

/* A refused report: answered with an Error, logged (the first ten of a session, then every
 * hundredth, with the running count), audited once per node and window with the number of
 * refusals it stands for. */
static void refuse(struct ctl_server *srv, struct ctl_session *s,
		   const Railyard__V1__AgentMessage *m, const struct ctl_outcome *o)
{
	Railyard__V1__ControllerMessage cm = RAILYARD__V1__CONTROLLER_MESSAGE__INIT;
	Railyard__V1__Error e = RAILYARD__V1__ERROR__INIT;
	unsigned n = ++s->refused, suppressed = 0;
	int64_t now = util_now_unix_ms();

	e.code = (char *)(o->err_code ? o->err_code : "refused");
	e.message = (char *)o->why;
	e.in_reply_to = m->seq;
	cm.body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_ERROR;
	cm.error = &e;
	(void)session_send(s, &cm);
	if (n <= 10 || n % 100 == 0)
		log_warn("node %s (%s): %s refused: %s (%u refused in this session)", s->node_id,
			 s->hostname, body_name(m->body_case), o->why, n);
	if (ctl_throttle_refusal(srv->report_throttle, s->node_id, now, &suppressed)) {
		char detail[700];

		if (suppressed)
			snprintf(detail, sizeof(detail),
				 "%s: %.512s (and %u more refused since the "
				 "last entry)",
				 body_name(m->body_case), o->why, suppressed);
		else
			snprintf(detail, sizeof(detail), "%s: %.512s", body_name(m->body_case),
				 o->why);
		if (store_audit(srv->state->store, now, s->node_id, "report.refuse",
				o->target[0] ? o->target : NULL, "refused", detail) < 0)
			log_warn("audit of a refused report of node %s not written: %s", s->node_id,
				 store_errmsg(srv->state->store));
	}
	if (n >= CTL_SESSION_REFUSALS_MAX)
		session_finish(s, GRPC_STATUS_RESOURCE_EXHAUSTED,
			       "too many refused reports in this session");
}

static bool window_busy(const struct ctl_session *s)
{
	return (atomic_load(&s->inflight) & ~WINDOW_PAUSED) != 0;
}

/* Completion-queue thread, before the message goes to the worker: count it in the window.
 * True when the stream is to stop reading (the message is a Hello, or the window is full). */
static bool window_take(struct ctl_session *s, size_t bytes, bool hold)
{
	size_t before = atomic_fetch_add(&s->inflight_bytes, bytes);
	unsigned old = atomic_load(&s->inflight), nw;

	do {
		nw = old + 1;
		if (hold || (nw & ~WINDOW_PAUSED) >= CTL_SESSION_WINDOW ||
		    (before > 0 && before + bytes > CTL_SESSION_WINDOW_BYTES))
			nw |= WINDOW_PAUSED;
	} while (!atomic_compare_exchange_weak(&s->inflight, &old, nw));
	return (nw & WINDOW_PAUSED) != 0;
}

/* Ingest worker, once a message is done with: out of the window; the stream reads on if it had
 * stopped for the window. */
static void window_release(struct ctl_session *s, size_t bytes)
{
	unsigned old = atomic_load(&s->inflight), nw;

	atomic_fetch_sub(&s->inflight_bytes, bytes);
	do
		nw = (old - 1) & ~WINDOW_PAUSED;
	while (!atomic_compare_exchange_weak(&s->inflight, &old, nw));
	if (old & WINDOW_PAUSED)
		rpc_stream_resume(s->st);
}

bool ctl_session_last_in_batch(struct ctl_session *s, unsigned batch)
{
	if (s->batch_mark == batch)
		return false;
	s->batch_mark = batch;
	return true;
}

bool ctl_session_ended(const struct ctl_session *s)
{
	return s->ended;
}

void ctl_session_processed(struct ctl_server *srv, struct ctl_session *s,
			   const Railyard__V1__AgentMessage *m, const struct ctl_outcome *o,
			   size_t bytes, bool last)
{
	bool hello = m->body_case == RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO;

	if (o->verdict == CTL_DROP) {
		window_release(s, bytes);
		return;
	}
	if (o->verdict == CTL_END) {
		session_finish(s, o->code, o->why);
		window_release(s, bytes);
		return;
	}
	s->ack_seq = m->seq;
	if (!hello)
		s->sent_ack = m->seq;
	/* A Receipt only for the session's last message of the commit: it acknowledges them all. */
	if (o->verdict == CTL_REFUSE)
		refuse(srv, s, m, o);
	else if (hello)
		send_welcome(srv, s);
	else if (last)
		send_receipt(s);
	/* We were the slow side: the node's silence while it waited is not its fault. */
	s->last_heard_ms = util_now_mono_ms();
	if (hello && o->verdict == CTL_DONE) {
		bool ended;

		pthread_mutex_lock(&srv->lock);
		s->hello_done = true;
		if (s->registered)
			srv->n_online++;
		ended = s->closed && s->owned_node;
		pthread_mutex_unlock(&srv->lock);
		if (ended) {
			/* The stream ended while its Hello was being stored: closed() saw no
			 * Hello, so the node that Hello just marked online goes offline here. */
			ctl_session_ref(srv, s);
			ctl_engine_offline(srv->engine, s);
		} else {
			/* After the Welcome: plans it was sent but has not finished follow it. */
			ctl_engine_node_online(srv->engine, s->node_id);
		}
	}
	window_release(s, bytes);
}

/* The online session of a node, referenced (ctl_session_unref()), or NULL. */
static struct ctl_session *session_find(struct ctl_server *srv, const char *node_id)
{
	struct ctl_session *s = NULL;

	pthread_mutex_lock(&srv->lock);
	s = reg_find_locked(srv, node_id);
	if (s && s->hello_done)
		s->refs++;
	else
		s = NULL;
	pthread_mutex_unlock(&srv->lock);
	return s;
}

bool ctl_session_online(struct ctl_server *srv, const char *node_id)
{
	struct ctl_session *s = session_find(srv, node_id);

	if (s)
		ctl_session_unref(srv, s);
	return s != NULL;
}

int64_t ctl_node_offline_ms(struct ctl_server *srv, const char *node_id, int64_t now_ms)
{
	struct store_node *n = NULL;
	int64_t since = srv->started_ms;

	if (ctl_session_online(srv, node_id))
		return 0;
	if (store_node_get(srv->state->store, node_id, &n) == 0 && n->last_seen_ms > since)
		since = n->last_seen_ms;
	store_node_free(n);
	return now_ms > since ? now_ms - since : 1;
}

void ctl_session_end(struct ctl_server *srv, const char *node_id, grpc_status_code code,
		     const char *why)
{
	struct ctl_session *s = session_find(srv, node_id);

	if (s) {
		session_finish(s, code, why);
		ctl_session_unref(srv, s);
	}
}

int ctl_session_send(struct ctl_server *srv, const char *node_id,
		     Railyard__V1__ControllerMessage *m)
{
	struct ctl_session *s = session_find(srv, node_id);
	int r;

	if (!s)
		return -ENOTCONN;
	r = session_send(s, m);
	ctl_session_unref(srv, s);
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
	ctl_session_unref(srv, s);
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

/* Completion-queue thread: order checks and heartbeats here, everything that needs the
 * database to the ingest worker (the stream then waits for it). */
static int session_message(void *userdata, struct rpc_stream *st, ProtobufCMessage *msg)
{
	struct ctl_server *srv = userdata;
	struct ctl_session *s = rpc_stream_get_data(st);
	const Railyard__V1__AgentMessage *m = (const Railyard__V1__AgentMessage *)msg;
	size_t bytes;
	bool held;

	if (m->seq <= s->last_seq) {
		char why[128];

		snprintf(why, sizeof(why), "message seq %llu not above %llu",
			 (unsigned long long)m->seq, (unsigned long long)s->last_seq);
		session_finish(s, GRPC_STATUS_INVALID_ARGUMENT, why);
		return RPC_MSG_DONE;
	}
	if (!s->hello_done && m->body_case != RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO) {
		session_finish(s, GRPC_STATUS_INVALID_ARGUMENT, "expected Hello as first message");
		return RPC_MSG_DONE;
	}
	s->last_seq = m->seq;
	s->last_heard_ms = util_now_mono_ms();
	if ((unsigned)m->body_case < CTL_RPC_KINDS)
		atomic_fetch_add_explicit(&srv->rpc_received[m->body_case], 1,
					  memory_order_relaxed);

	switch (m->body_case) {
	case RAILYARD__V1__AGENT_MESSAGE__BODY_HEARTBEAT:
		/* Nothing to store: liveness is last_heard_ms. A revocation is noticed by the
		 * ingest worker's watch. The ack may move past it only when nothing before it
		 * waits to be stored (the worker's own acks cover what it stores). */
		if (!window_busy(s))
			s->ack_seq = m->seq;
		return RPC_MSG_DONE;
	case RAILYARD__V1__AGENT_MESSAGE__BODY_ERROR:
		log_warn("node %s (%s) reports error %.64s: %.512s", s->node_id, s->hostname,
			 m->error->code, m->error->message);
		if (!window_busy(s))
			s->ack_seq = m->seq;
		return RPC_MSG_DONE;
	case RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO:
		if (s->hello_done) {
			session_finish(s, GRPC_STATUS_INVALID_ARGUMENT, "duplicate Hello");
			return RPC_MSG_DONE;
		}
		break;
	default:
		break;
	}
	if (!ctl_engine_handles(srv->engine, m->body_case)) {
		session_finish(s, GRPC_STATUS_INVALID_ARGUMENT, "message without a known body");
		return RPC_MSG_DONE;
	}
	ctl_session_ref(srv, s);
	bytes = rpc_stream_msg_size(st);
	held = window_take(s, bytes, m->body_case == RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO);
	ctl_engine_submit(srv->engine, s, msg, bytes);
	return held ? RPC_MSG_HELD : RPC_MSG_TAKEN;
}

static void session_closed(void *userdata, struct rpc_stream *st, bool cancelled)
{
	struct ctl_server *srv = userdata;
	struct ctl_session *s = rpc_stream_get_data(st);
	bool was_registered, hello;

	pthread_mutex_lock(&srv->lock);
	was_registered = s->registered;
	reg_remove_locked(srv, s);
	s->closed = true;
	s->owned_node = was_registered;
	hello = s->hello_done;
	pthread_mutex_unlock(&srv->lock);

	resume_remember(srv, s);
	/* A superseded session must not mark the node offline under its successor; the ingest
	 * worker's queue keeps this after anything the session handed over and before a
	 * successor's Hello. */
	if (was_registered && hello) {
		log_info("node %s (%s) offline (%s)", s->node_id, s->hostname,
			 cancelled ? "connection lost" : "session ended");
		ctl_session_ref(srv, s);
		ctl_engine_offline(srv->engine, s);
	}
	rpc_stream_set_data(st, NULL);
	ctl_session_unref(srv, s);
}

int ctl_session_store_offline(struct ctl_server *srv, struct ctl_session *s)
{
	/* last_seen: when it was last heard (the periodic write may be older). */
	int64_t heard = util_now_unix_ms() - (util_now_mono_ms() - s->last_heard_ms);
	int r = store_node_offline(srv->state->store, s->node_id, heard);

	if (r >= 0)
		ctl_events_emit(srv->events, "node.offline", s->cluster,
				json_pack("{s:s, s:s}", "id", s->node_id, "hostname", s->hostname));
	return r == -RY_E_NOT_FOUND ? 0 : r;
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

/* Registered sessions matching pick(), referenced, in a new array (NULL when none or out of
 * memory: *ret_n says which). Collected under the lock, acted on outside it. */
static struct ctl_session **sessions_pick(struct ctl_server *srv,
					  bool (*pick)(const struct ctl_session *s, void *ud),
					  void *ud, size_t *ret_n)
{
	struct ctl_session **v = NULL;
	size_t n = 0, cap = 0;

	pthread_mutex_lock(&srv->lock);
	cap = srv->n_sessions;
	v = cap ? calloc(cap, sizeof(*v)) : NULL;
	for (size_t i = 0; v && i < srv->sessions_cap; i++) {
		for (struct ctl_session *s = srv->sessions[i]; s; s = s->next) {
			if (n < cap && pick(s, ud)) {
				s->refs++;
				v[n++] = s;
			}
		}
	}
	pthread_mutex_unlock(&srv->lock);
	if (cap && !v)
		log_error("sessions: out of memory; pass skipped");
	*ret_n = n;
	return v;
}

static void sessions_release(struct ctl_server *srv, struct ctl_session **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ctl_session_unref(srv, v[i]);
	free(v);
}

struct reap_ctx {
	struct ctl_server *srv;
	int64_t now;
	bool refresh;
	int64_t factor; /* of each session's own timeout */
};

/* Silent sessions beyond which the reaper suspects the controller itself (CPU starved, its
 * completion-queue threads behind a handshake storm, its network): max(16, 5 % of those
 * online). Those are then given CTL_MASS_SILENCE_GRACE timeouts more before they end, so that a
 * controller that is behind does not end healthy sessions and make the storm worse; a real
 * outage still ends them then (and TCP keepalive on its own). */
#define CTL_MASS_SILENCE_MIN   16
#define CTL_MASS_SILENCE_GRACE 2

static bool silent(const struct ctl_session *s, const struct reap_ctx *c)
{
	/* A session whose messages wait for the database is not silent: we are the slow side. */
	return !window_busy(s) && c->now - s->last_heard_ms > c->factor * s->hb_timeout_ms;
}

/* A session ended already is closing: it is neither silent again (its stream's end, under load,
 * can outlast a reaper tick, and it was ended and logged once) nor asked for facts. */
static bool pick_silent(const struct ctl_session *s, void *ud)
{
	return !s->ended && s->hello_done && silent(s, ud);
}

static bool pick_reap(const struct ctl_session *s, void *ud)
{
	struct reap_ctx *c = ud;

	return !s->ended && (silent(s, c) || (c->refresh && s->hello_done));
}

/* How many sessions that completed their Hello are silent now (the reaper's count). */
static size_t count_silent(struct ctl_server *srv, const struct reap_ctx *c, size_t *ret_online)
{
	size_t n = 0;

	pthread_mutex_lock(&srv->lock);
	for (size_t i = 0; i < srv->sessions_cap; i++)
		for (struct ctl_session *s = srv->sessions[i]; s; s = s->next)
			n += pick_silent(s, (void *)c) ? 1 : 0;
	*ret_online = srv->n_online;
	pthread_mutex_unlock(&srv->lock);
	return n;
}

void ctl_sessions_reap(struct ctl_server *srv, int64_t now_mono_ms, bool refresh)
{
	struct reap_ctx c = {srv, now_mono_ms, refresh, 1};
	struct ctl_session **v;
	size_t n, n_silent, online, mass;

	if (now_mono_ms - srv->resume_pruned_ms > 60000) {
		srv->resume_pruned_ms = now_mono_ms;
		resume_prune(srv, now_mono_ms);
	}
	n_silent = count_silent(srv, &c, &online);
	mass = online / 20 > CTL_MASS_SILENCE_MIN ? online / 20 : CTL_MASS_SILENCE_MIN;
	if (n_silent > mass) {
		c.factor = 1 + CTL_MASS_SILENCE_GRACE;
		if (now_mono_ms - srv->mass_silence_logged_ms > 60000) {
			srv->mass_silence_logged_ms = now_mono_ms;
			log_warn("%zu of %zu sessions are silent at once: this controller (or its "
				 "network) is behind, not its nodes; they get up to %lld times "
				 "their heartbeat timeout before they are ended",
				 n_silent, online, (long long)c.factor);
		}
	}
	v = sessions_pick(srv, pick_reap, &c, &n);
	for (size_t i = 0; i < n; i++) {
		struct ctl_session *s = v[i];

		if (silent(s, &c)) {
			char why[96];

			snprintf(why, sizeof(why),
				 "no message for over %lld ms (heartbeat timeout)",
				 (long long)(c.factor * s->hb_timeout_ms));
			session_finish(s, GRPC_STATUS_DEADLINE_EXCEEDED, why);
		} else {
			Railyard__V1__ControllerMessage m = RAILYARD__V1__CONTROLLER_MESSAGE__INIT;
			Railyard__V1__RefreshFacts rf = RAILYARD__V1__REFRESH_FACTS__INIT;

			m.body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_REFRESH_FACTS;
			m.refresh_facts = &rf;
			(void)session_send(s, &m);
		}
	}
	sessions_release(srv, v, n);
}

static bool pick_unsaved(const struct ctl_session *s, void *ud)
{
	return s->hello_done && s->last_heard_ms - s->seen_saved_ms >= CTL_LAST_SEEN_SAVE_MS;
}

void ctl_sessions_save_last_seen(struct ctl_server *srv, int64_t now_mono_ms)
{
	int64_t now_unix = util_now_unix_ms();
	struct ctl_session **v;
	const char **ids = NULL;
	int64_t *times = NULL, *heard = NULL;
	size_t n;
	int r;

	v = sessions_pick(srv, pick_unsaved, NULL, &n);
	if (n == 0)
		goto out;
	ids = calloc(n, sizeof(*ids));
	times = calloc(n, sizeof(*times));
	heard = calloc(n, sizeof(*heard));
	if (!ids || !times || !heard)
		goto out;
	for (size_t i = 0; i < n; i++) {
		heard[i] = v[i]->last_heard_ms;
		ids[i] = v[i]->node_id;
		times[i] = now_unix - (now_mono_ms - heard[i]);
	}
	r = store_nodes_seen(srv->state->store, ids, times, n);
	if (r < 0) {
		log_warn("last_seen of %zu nodes not written: %s (%s); next pass", n,
			 ry_strerror(r), store_errmsg(srv->state->store));
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		v[i]->seen_saved_ms = heard[i];
out:
	free(ids);
	free(times);
	free(heard);
	sessions_release(srv, v, n);
}

static bool pick_all(const struct ctl_session *s, void *ud)
{
	return true;
}

void ctl_sessions_end_revoked(struct ctl_server *srv)
{
	struct ctl_session **v;
	char **ids = NULL;
	size_t n, m = 0;

	if (store_nodes_revoked(srv->state->store, &ids, &m) < 0)
		return;
	v = m ? sessions_pick(srv, pick_all, NULL, &n) : NULL;
	for (size_t i = 0; v && i < n; i++)
		for (size_t k = 0; k < m; k++)
			if (strcmp(v[i]->node_id, ids[k]) == 0)
				session_finish(v[i], GRPC_STATUS_PERMISSION_DENIED, "node revoked");
	if (v)
		sessions_release(srv, v, n);
	store_ids_free(ids, m);
}

int ctl_server_online_count(struct ctl_server *srv)
{
	int n;

	pthread_mutex_lock(&srv->lock);
	n = (int)srv->n_online;
	pthread_mutex_unlock(&srv->lock);
	return n;
}

int ctl_sessions_register(struct ctl_engine *e)
{
	int r = ctl_engine_handle_grouped(e, RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO, on_hello);

	if (r >= 0)
		r = ctl_engine_handle_grouped(e, RAILYARD__V1__AGENT_MESSAGE__BODY_FACTS_UPDATE,
					      on_facts);
	return r;
}
