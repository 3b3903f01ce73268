/* The launch relay of collective runs (docs/bench.md, "Launching collectives without SSH"): the
 * launcher's agent asks for one Open MPI daemon on a node of its run (LaunchRequest); the
 * controller checks the request against the run it stored and passes it to that node's agent
 * (LaunchOrder), whose answer (LaunchStatus) goes back to the launcher (LaunchReply). Every
 * refusal is answered, refused (Error) and audited. Which hosts a run has launched is kept in
 * memory only: a controller restart drops the agents' sessions, and with them the run. */
#include "controller/bench/bench.h"
#include "controller/engine/engine.h"
#include "controller/session.h"
#include "controller/state.h"
#include "controller/store/store_bench.h"
#include "common/launch/orted.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <jansson.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Hosts launched, over all runs (a ring: the oldest is forgotten first; a run's entries are
 * dropped when it ends), and launches waiting for their target's answer. */
#define LAUNCHED_MAX 4096
#define PENDING_MAX  1024

struct launched {
	char bench_id[65];
	char node[64];
};

struct pending {
	uint64_t id; /* ours, in LaunchOrder; 0: free */
	char bench_id[65];
	char target[64], launcher[64];
	uint64_t launcher_request;
};

static struct {
	pthread_mutex_t lock;
	struct launched launched[LAUNCHED_MAX];
	size_t launched_next;
	struct pending pending[PENDING_MAX];
	size_t pending_next;
	uint64_t next_id;
} relay = {.lock = PTHREAD_MUTEX_INITIALIZER, .next_id = 1};

void ctl_launch_forget(const char *bench_id)
{
	pthread_mutex_lock(&relay.lock);
	for (size_t i = 0; i < LAUNCHED_MAX; i++)
		if (strcmp(relay.launched[i].bench_id, bench_id) == 0)
			relay.launched[i].bench_id[0] = '\0';
	pthread_mutex_unlock(&relay.lock);
}

unsigned ctl_launch_count(const char *bench_id)
{
	unsigned n = 0;

	if (!bench_id || !bench_id[0])
		return 0;
	pthread_mutex_lock(&relay.lock);
	for (size_t i = 0; i < LAUNCHED_MAX; i++)
		n += strcmp(relay.launched[i].bench_id, bench_id) == 0;
	pthread_mutex_unlock(&relay.lock);
	return n;
}

/* Mark (bench_id, node) launched: false when it already was (one daemon per node per run). */
static bool mark_launched(const char *bench_id, const char *node)
{
	bool fresh = true;

	pthread_mutex_lock(&relay.lock);
	for (size_t i = 0; i < LAUNCHED_MAX && fresh; i++)
		fresh = !(strcmp(relay.launched[i].bench_id, bench_id) == 0 &&
			  strcmp(relay.launched[i].node, node) == 0);
	if (fresh) {
		struct launched *l = &relay.launched[relay.launched_next];

		snprintf(l->bench_id, sizeof(l->bench_id), "%s", bench_id);
		snprintf(l->node, sizeof(l->node), "%s", node);
		relay.launched_next = (relay.launched_next + 1) % LAUNCHED_MAX;
	}
	pthread_mutex_unlock(&relay.lock);
	return fresh;
}

static void reply(struct ctl_server *srv, const char *node, uint64_t request_id, bool ok,
		  const char *message)
{
	Railyard__V1__ControllerMessage m = RAILYARD__V1__CONTROLLER_MESSAGE__INIT;
	Railyard__V1__LaunchReply lr = RAILYARD__V1__LAUNCH_REPLY__INIT;

	lr.request_id = request_id;
	lr.ok = ok;
	lr.message = (char *)message;
	m.body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_LAUNCH_REPLY;
	m.launch_reply = &lr;
	if (ctl_session_send(srv, node, &m) < 0)
		log_debug("LaunchReply %llu not sent to %s (offline)",
			  (unsigned long long)request_id, node);
}

static void refuse(struct ctl_server *srv, struct ctl_outcome *o, const char *node,
		   uint64_t request_id, const char *bench_id, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* Refuse a LaunchRequest: LaunchReply ok=false to the launcher, Error and an audit entry (the
 * engine's, for CTL_REFUSE). */
static void refuse(struct ctl_server *srv, struct ctl_outcome *o, const char *node,
		   uint64_t request_id, const char *bench_id, const char *fmt, ...)
{
	va_list ap;

	o->verdict = CTL_REFUSE;
	o->err_code = "launch_refused";
	snprintf(o->target, sizeof(o->target), "%.64s",
		 bench_id && ctl_valid_text(bench_id, CTL_ID_MAX) ? bench_id : "");
	va_start(ap, fmt);
	vsnprintf(o->why, sizeof(o->why), fmt, ap);
	va_end(ap);
	log_warn("launch refused to %s: %s", node, o->why);
	reply(srv, node, request_id, false, o->why);
}

static bool hex64(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			return false;
	return n == 64;
}

static void on_request(struct ctl_server *srv, struct ctl_session *s,
		       const Railyard__V1__AgentMessage *msg, struct ctl_outcome *o)
{
	const Railyard__V1__LaunchRequest *m = msg->launch_request;
	const char *node = ctl_session_node_id(s), *target = NULL, *tok, *mpi;
	Railyard__V1__ControllerMessage cm = RAILYARD__V1__CONTROLLER_MESSAGE__INIT;
	Railyard__V1__LaunchOrder lo = RAILYARD__V1__LAUNCH_ORDER__INIT;
	struct store_bench_run *b = NULL;
	char err[256] = "", **argv = NULL;
	json_t *p = NULL, *h;
	int64_t left;
	size_t i;
	int r;

	if (!ctl_valid_text(m->bench_id, CTL_ID_MAX) || !ctl_valid_text(m->host, CTL_ID_MAX) ||
	    m->n_argv == 0 || m->n_argv > RY_ORTED_ARGS_MAX) {
		refuse(srv, o, node, m->request_id, NULL,
		       "LaunchRequest: bench_id, host or argv out of range");
		return;
	}
	r = store_bench_get(ctl_server_state(srv)->store, m->bench_id, &b);
	if (r < 0 && r != -RY_E_NOT_FOUND) {
		ctl_outcome_store_error(srv, o, r, "reading a bench run");
		return;
	}
	if (r < 0 || strcmp(b->kind, "collective") != 0) {
		refuse(srv, o, node, m->request_id, m->bench_id,
		       "launch for %s: no collective run of that id", m->bench_id);
		goto out;
	}
	if (strcmp(b->client_node, node) != 0) {
		refuse(srv, o, node, m->request_id, m->bench_id,
		       "launch for %s: node %s is not its launcher", m->bench_id, node);
		goto out;
	}
	if (store_bench_state_final(b->state) || strcmp(b->state, "client_sent") != 0) {
		refuse(srv, o, node, m->request_id, m->bench_id, "launch for %s: the run is %s",
		       m->bench_id, b->state);
		goto out;
	}
	p = json_loads(b->params_json, 0, NULL);
	tok = json_string_value(json_object_get(p, "job_token"));
	if (!tok || !hex64(m->token) || strlen(tok) != 64 ||
	    CRYPTO_memcmp(tok, m->token, 64) != 0) {
		refuse(srv, o, node, m->request_id, m->bench_id, "launch for %s: wrong job token",
		       m->bench_id);
		goto out;
	}
	json_array_foreach(json_object_get(p, "hosts"), i, h)
	{
		const char *id = json_string_value(json_object_get(h, "node"));
		const char *host = json_string_value(json_object_get(h, "host"));

		if (id && (strcmp(id, m->host) == 0 || (host && strcmp(host, m->host) == 0)))
			target = id;
	}
	if (!target) {
		refuse(srv, o, node, m->request_id, m->bench_id,
		       "launch for %s: host %s is not a node of the job", m->bench_id, m->host);
		goto out;
	}
	mpi = json_string_value(json_object_get(json_object_get(p, "settings"), "mpi"));
	if (ry_orted_argv_check((const char *const *)m->argv, m->n_argv, NULL, mpi, &argv, err,
				sizeof(err)) < 0) {
		refuse(srv, o, node, m->request_id, m->bench_id, "launch for %s on %s: %s",
		       m->bench_id, target, err);
		goto out;
	}
	if (!ctl_session_online(srv, target)) {
		refuse(srv, o, node, m->request_id, m->bench_id,
		       "launch for %s: node %s is not connected", m->bench_id, target);
		goto out;
	}
	if (!mark_launched(m->bench_id, target)) {
		refuse(srv, o, node, m->request_id, m->bench_id,
		       "launch for %s: node %s was launched already (one daemon per node)",
		       m->bench_id, target);
		goto out;
	}
	pthread_mutex_lock(&relay.lock);
	{
		struct pending *pd = &relay.pending[relay.pending_next];

		relay.pending_next = (relay.pending_next + 1) % PENDING_MAX;
		pd->id = relay.next_id++;
		snprintf(pd->bench_id, sizeof(pd->bench_id), "%s", m->bench_id);
		snprintf(pd->target, sizeof(pd->target), "%s", target);
		snprintf(pd->launcher, sizeof(pd->launcher), "%s", node);
		pd->launcher_request = m->request_id;
		lo.request_id = pd->id;
	}
	pthread_mutex_unlock(&relay.lock);
	left = b->created_at_ms + b->deadline_ms - util_now_unix_ms();
	lo.bench_id = m->bench_id;
	lo.token = m->token;
	for (lo.n_argv = 0; argv[lo.n_argv]; lo.n_argv++)
		;
	lo.argv = argv;
	lo.deadline_ms = (uint32_t)(left > 1000 ? left : 1000);
	cm.body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_LAUNCH_ORDER;
	cm.launch_order = &lo;
	o->verdict = CTL_DONE;
	if (ctl_session_send(srv, target, &cm) < 0) {
		refuse(srv, o, node, m->request_id, m->bench_id,
		       "launch for %s: node %s is not connected", m->bench_id, target);
		goto out;
	}
	log_info("bench %s: daemon of %s launched on %s", m->bench_id, node, target);
out:
	ry_orted_argv_free(argv);
	json_decref(p);
	store_bench_run_free(b);
}

static void on_status(struct ctl_server *srv, struct ctl_session *s,
		      const Railyard__V1__AgentMessage *msg, struct ctl_outcome *o)
{
	const Railyard__V1__LaunchStatus *m = msg->launch_status;
	const char *node = ctl_session_node_id(s);
	struct pending found = {0};

	pthread_mutex_lock(&relay.lock);
	for (size_t i = 0; i < PENDING_MAX && !found.id; i++) {
		struct pending *pd = &relay.pending[i];

		if (pd->id && pd->id == m->request_id && strcmp(pd->target, node) == 0 &&
		    strcmp(pd->bench_id, m->bench_id) == 0) {
			found = *pd;
			pd->id = 0;
		}
	}
	pthread_mutex_unlock(&relay.lock);
	if (!found.id) {
		o->verdict = CTL_REFUSE;
		o->err_code = "report_refused";
		snprintf(o->target, sizeof(o->target), "%.64s",
			 ctl_valid_text(m->bench_id, CTL_ID_MAX) ? m->bench_id : "");
		snprintf(o->why, sizeof(o->why), "LaunchStatus %llu: no launch of this node waits",
			 (unsigned long long)m->request_id);
		return;
	}
	o->verdict = CTL_DONE;
	if (!m->started)
		log_warn("bench %s: the daemon did not start on %s: %.256s", found.bench_id, node,
			 m->message);
	reply(srv, found.launcher, found.launcher_request, m->started,
	      ctl_valid_text(m->message, 1024) ? m->message : "");
}

int ctl_launch_register(struct ctl_engine *e)
{
	int r = ctl_engine_handle(e, RAILYARD__V1__AGENT_MESSAGE__BODY_LAUNCH_REQUEST, on_request);

	if (r >= 0)
		r = ctl_engine_handle(e, RAILYARD__V1__AGENT_MESSAGE__BODY_LAUNCH_STATUS,
				      on_status);
	return r;
}
