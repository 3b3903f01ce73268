/* The controller's gRPC service: method table, start-up and shutdown, the reaper thread. */
#include "controller/server_int.h"
#include "controller/watch.h"
#include "controller/bench/bench.h"
#include "controller/campaign/campaign.h"
#include "controller/signoff/revalidate.h"
#include "controller/maint/maint.h"
#include "controller/engine/engine.h"
#include "controller/rollout/rollout.h"
#include "controller/throttle.h"
#include "controller/wlm/wlm.h"
#include "controller/store/store.h"
#include "controller/store/store_nodes.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Enrollment refusals per source address: 10 in a row block it; one is forgotten every 6 s. */
#define ENROLL_REFUSALS_BURST	10
#define ENROLL_REFUSAL_DRAIN_MS 6000
/* One audit row per source (enrollments) or node (reports) and minute, with a count. */
#define REFUSAL_AUDIT_WINDOW_MS 60000
/* How often the reaper looks at the database file and at the descriptors in use. */
#define DB_WATCH_MS 1000
/* How often the reaper returns freed memory to the system. */
#define TRIM_MS 30000
/* Descriptors kept for the REST API's connections when checking the limit. */
#define FD_API 64
/* Logging a stopped listener that cannot be replaced yet: at most once a minute. */
#define LISTENER_LOG_MS 60000
/* Descriptors are counted (a walk of /proc/self/fd: ~1 ms for 10,000) every FDS_COUNT_MS, and
 * every DB_WATCH_MS once fewer than FDS_NEAR_MARGINS times the sessions' margin are left. Between
 * two counts the guard adds every session opened since and subtracts none closed: a stale
 * count only refuses early, never lets a session past the limit. */
#define FDS_COUNT_MS	 10000
#define FDS_NEAR_MARGINS 4

static const struct rpc_method ctl_methods[] = {
	{
		.path = "/railyard.v1.Controller/Enroll",
		.kind = RPC_UNARY,
		.request = &railyard__v1__enroll_request__descriptor,
		.unary = ctl_enroll,
	},
	{
		.path = "/railyard.v1.Controller/Connect",
		.kind = RPC_BIDI,
		.request = &railyard__v1__agent_message__descriptor,
		.bidi = &ctl_session_ops,
		.require_client_cert = true,
	},
};

void ctl_server_fail(struct ctl_server *srv, const char *fmt, ...)
{
	char why[512];
	va_list ap;
	bool first;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	first = !atomic_exchange(&srv->failed, true);
	if (!first)
		return;
	log_error("%s", why);
	/* main() waits in sigwait(): this ends `serve`, which then exits 1. */
	kill(getpid(), SIGTERM);
}

/* The engine's failure callback: its database is gone or corrupt. */
static void engine_failed(void *ud, const char *why)
{
	ctl_server_fail(ud, "%s", why);
}

struct ctl_state *ctl_server_state(struct ctl_server *srv)
{
	return srv->state;
}

struct ctl_engine *ctl_server_engine(struct ctl_server *srv)
{
	return srv->engine;
}

struct ctl_events *ctl_server_events(struct ctl_server *srv)
{
	return srv->events;
}

struct ctl_wlm *ctl_server_wlm(struct ctl_server *srv)
{
	return srv ? srv->wlm : NULL;
}

/* The engine's passes run when something was stored or every tick: the WLM worker looks at its
 * ledger then (its commands block, so they run on its own thread). */
static void wlm_pass(void *ud)
{
	ctl_wlm_kick(ctl_server_wlm(ud));
}

bool ctl_server_failed(struct ctl_server *srv)
{
	return srv && srv->failed;
}

/* The database file must stay the one that was opened: deleted, replaced or truncated under
 * a running controller, its writes would go nowhere (an unlinked inode) or into garbage. Only
 * stat(): opening and closing the file here would drop SQLite's POSIX locks, which belong to
 * the process, and let another process think it is the last user and delete the WAL. */
static void watch_database(struct ctl_server *srv)
{
	const char *path = store_path(srv->state->store);
	struct stat st;

	if (stat(path, &st) < 0) {
		ctl_server_fail(srv,
				"the database %s disappeared (%s) while serving; stopping "
				"(restore it from a backup, or run init for a new controller)",
				path, ry_strerror(-errno));
		return;
	}
	if ((unsigned long long)st.st_dev != srv->db_dev ||
	    (unsigned long long)st.st_ino != srv->db_ino) {
		ctl_server_fail(srv,
				"the database %s was replaced while serving; stopping (start "
				"again to use the new file)",
				path);
		return;
	}
	/* Shorter than SQLite's own header: it was truncated (a cut elsewhere shows up as a
	 * corrupt page at the next read, which stops the server too). */
	if (st.st_size < 100)
		ctl_server_fail(srv,
				"the database %s was truncated while serving (%lld bytes); "
				"stopping (restore it from a backup)",
				path, (long long)st.st_size);
}

int ctl_heartbeat_interval(int base_ms, int max_rate, long fleet)
{
	int64_t need;

	if (max_rate <= 0 || fleet <= 0)
		return base_ms;
	/* fleet / rate seconds between two heartbeats of each node, rounded up to a second. */
	need = ((int64_t)fleet * 1000 + max_rate - 1) / max_rate;
	if (need <= base_ms)
		return base_ms;
	need = (need + 999) / 1000 * 1000;
	if (need > CTL_HEARTBEAT_STRETCH_MAX_MS)
		need = CTL_HEARTBEAT_STRETCH_MAX_MS;
	return need > base_ms ? (int)need : base_ms;
}

int ctl_fd_margin(long limit)
{
	long m = limit / 32;

	return (int)(m < 16 ? 16 : m > 1024 ? 1024 : m);
}

/* Descriptors in use (for the sessions' guard) and the listener that gRPC 1.51 stops for good
 * when accept4() fails at the open-file limit (rpc_server_check_listener()). */
static void watch_descriptors(struct ctl_server *srv, int64_t now)
{
	long open_fds = atomic_load(&srv->fds_open) + atomic_load(&srv->fds_opened);
	long limit = atomic_load(&srv->fds_limit);
	bool recent = srv->fds_counted_ms && now - srv->fds_counted_ms < FDS_COUNT_MS;
	bool near = limit > 0 && open_fds + FDS_NEAR_MARGINS * (long)ctl_fd_margin(limit) >= limit;
	int r;

	if (!recent || near) {
		srv->fds_counted_ms = now;
		if (rpc_fd_usage(&open_fds, &limit) == 0) {
			atomic_store(&srv->fds_opened, 0);
			atomic_store(&srv->fds_open, open_fds);
			atomic_store(&srv->fds_limit, limit);
		} else {
			/* Not even a descriptor to count them with: the limit is reached. */
			open_fds = limit = atomic_load(&srv->fds_limit);
			atomic_store(&srv->fds_open, limit);
		}
	}
	r = rpc_server_check_listener(srv->rpc);
	if (r == 1) {
		log_warn("the gRPC listener had stopped accepting connections (the open-file limit "
			 "was reached); listening again on port %d (%ld of %ld descriptors in use)",
			 srv->port, open_fds, limit);
		srv->listener_logged_ms = 0;
	} else if (r == -ENOSPC) {
		ctl_server_fail(srv, "the gRPC listener stopped accepting connections again after "
				     "being replaced 15 times; stopping (exit 1) for the service "
				     "manager to restart the controller");
	} else if (r < 0 && now - srv->listener_logged_ms >= LISTENER_LOG_MS) {
		srv->listener_logged_ms = now;
		log_error("the gRPC listener stopped accepting connections: %s; %ld of %ld "
			  "descriptors in use, new agents wait until connections close (raise "
			  "LimitNOFILE, docs/operations.md)",
			  r == -EMFILE ? "the open-file limit is reached" : ry_strerror(r),
			  open_fds, limit);
	}
}

static void *reaper_main(void *arg)
{
	struct ctl_server *srv = arg;
	int64_t period = srv->cfg.heartbeat_interval_ms / 2, next_watch = 0;
	int64_t next_trim = util_now_mono_ms() + TRIM_MS;
	int64_t next_refresh = srv->cfg.facts_refresh_ms > 0
				       ? util_now_mono_ms() + srv->cfg.facts_refresh_ms
				       : INT64_MAX;

	if (period < 50)
		period = 50;
	if (period > DB_WATCH_MS)
		period = DB_WATCH_MS;
	pthread_mutex_lock(&srv->lock);
	while (!srv->stopping) {
		struct timespec ts;
		int64_t now;
		bool refresh;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += period / 1000;
		ts.tv_nsec += (period % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&srv->cond, &srv->lock, &ts);
		if (srv->stopping)
			break;
		pthread_mutex_unlock(&srv->lock);
		now = util_now_mono_ms();
		refresh = now >= next_refresh;
		if (refresh)
			next_refresh = now + srv->cfg.facts_refresh_ms;
		ctl_sessions_reap(srv, now, refresh);
		if (now >= next_watch) {
			next_watch = now + DB_WATCH_MS;
			watch_database(srv);
			watch_descriptors(srv, now);
		}
		if (now >= next_trim) {
			/* glibc keeps what a connect storm freed (each Hello's facts, each
			 * handshake's buffers) in its arenas: give it back, or RSS stays at the
			 * storm's peak. O(heap), a few ms. */
			next_trim = now + TRIM_MS;
			malloc_trim(0);
		}
		pthread_mutex_lock(&srv->lock);
	}
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}

int ctl_server_refresh_facts(struct ctl_server *srv)
{
	int n = ctl_server_online_count(srv);

	ctl_sessions_reap(srv, util_now_mono_ms(), true);
	return n;
}

static int write_addr_file(struct ctl_state *state, const char *listen, int port)
{
	char addr[300], *p;
	const char *colon = strrchr(listen, ':');
	int host_len = colon ? (int)(colon - listen) : 0;
	int r;

	/* A wildcard listen address is reached over loopback locally. */
	if (host_len == 0 || strncmp(listen, "0.0.0.0", (size_t)host_len) == 0)
		snprintf(addr, sizeof(addr), "127.0.0.1:%d\n", port);
	else if (strncmp(listen, "[::]", (size_t)host_len) == 0)
		snprintf(addr, sizeof(addr), "[::1]:%d\n", port);
	else
		snprintf(addr, sizeof(addr), "%.*s:%d\n", host_len, listen, port);
	p = ctl_state_path(state, "controller.addr");
	if (!p)
		return -ENOMEM;
	r = fs_write_file_atomic(p, addr, strlen(addr), 0644);
	free(p);
	return r;
}

/* The soft open-file limit raised to the hard one (an agent connection is a descriptor). */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != rl.rlim_max) {
		rlim_t was = rl.rlim_cur;

		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
			log_debug("open-file limit raised from %llu to %llu",
				  (unsigned long long)was, (unsigned long long)rl.rlim_max);
	}
}

/* Once listening: the open-file limit against the fleet the operator expects, one descriptor
 * per agent connection besides those open now, FD_API for the REST API's connections and
 * the guard's margin. Too low a limit is logged, not fatal (a smaller fleet may be all there
 * is). */
static void check_fd_limit(const struct ctl_server_config *cfg)
{
	long open_fds = 0, limit = 0, room, need;

	if (rpc_fd_usage(&open_fds, &limit) < 0)
		return;
	if (limit == 0) {
		log_info("open-file limit: unlimited");
		return;
	}
	room = limit - open_fds - FD_API - ctl_fd_margin(limit);
	if (room < 0)
		room = 0;
	need = open_fds + FD_API + cfg->expected_agents;
	need += ctl_fd_margin(need);
	if (cfg->expected_agents > room)
		log_warn("open-file limit %ld is short of the %ld descriptors %ld agents need: "
			 "about %ld agents can connect, the others are refused until some leave; "
			 "raise it (LimitNOFILE= in the systemd unit, which ships 1048576; ulimit "
			 "-n)",
			 limit, need, cfg->expected_agents, room);
	else
		log_info("open-file limit %ld: room for about %ld agents%s", limit, room,
			 cfg->expected_agents > 0 ? "" : " (--expected-agents checks your fleet)");
}

int ctl_server_start(struct ctl_state *state, const struct ctl_server_config *cfg,
		     struct ctl_server **ret, char *errbuf, size_t errlen)
{
	struct rpc_server_config rc = {0};
	struct ctl_server *srv;
	int port = 0, r;

	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->state = state;
	srv->cfg = *cfg;
	srv->started_ms = util_now_unix_ms();
	pthread_mutex_init(&srv->lock, NULL);
	raise_fd_limit();
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&srv->cond, &ca);
		pthread_condattr_destroy(&ca);
	}

	srv->events = ctl_events_new();
	if (!srv->events) {
		snprintf(errbuf, errlen, "out of memory");
		r = -ENOMEM;
		goto fail;
	}
	/* Nodes marked online by a previous run have no session now. */
	r = store_nodes_all_offline(state->store, util_now_unix_ms());
	if (r < 0) {
		snprintf(errbuf, errlen, "database: %s", ry_strerror(r));
		goto fail;
	}
	/* Rows from before schema v11 or from another deriver get their summaries now (once). */
	{
		size_t n = 0;

		r = store_nodes_rederive(state->store, &n);
		if (r < 0) {
			snprintf(errbuf, errlen, "database: deriving node summaries: %s",
				 ry_strerror(r));
			goto fail;
		}
		if (n)
			log_info("derived the summaries and snapshots of %zu node(s)", n);
	}
	{
		struct stat dbst;
		struct ctl_throttle_config et = {ENROLL_REFUSALS_BURST, ENROLL_REFUSAL_DRAIN_MS,
						 REFUSAL_AUDIT_WINDOW_MS};
		/* Reports are never blocked (only their audit rows are thinned out). */
		struct ctl_throttle_config rt = {1000000, 1, REFUSAL_AUDIT_WINDOW_MS};

		if (stat(store_path(state->store), &dbst) < 0) {
			r = -errno;
			snprintf(errbuf, errlen, "database: %s", ry_strerror(r));
			goto fail;
		}
		srv->db_dev = (unsigned long long)dbst.st_dev;
		srv->db_ino = (unsigned long long)dbst.st_ino;
		r = ctl_throttle_new(&et, &srv->enroll_throttle);
		if (r >= 0)
			r = ctl_throttle_new(&rt, &srv->report_throttle);
		/* The engine with its passes and message handlers; it runs before the first
		 * session opens (sessions hand it their messages). */
		if (r >= 0)
			r = ctl_engine_new(srv, &srv->engine);
		if (r >= 0)
			ctl_engine_on_failure(srv->engine, engine_failed, srv);
		if (r >= 0)
			r = ctl_rollout_new(srv, cfg->apply_timeout_ms, cfg->reconnect_grace_ms,
					    &srv->rollout);
		if (r >= 0)
			r = ctl_sessions_register(srv->engine);
		if (r >= 0)
			r = ctl_rollout_register(srv->rollout, srv->engine);
		if (r >= 0)
			r = ctl_bench_register(srv, srv->engine);
		if (r >= 0)
			r = ctl_campaigns_new(srv, &srv->campaigns);
		if (r >= 0)
			r = ctl_campaigns_register(srv->campaigns, srv->engine);
		/* After the campaign pass: a campaign signed as it ended is seen in the same run.
		 */
		if (r >= 0)
			r = ctl_revalidate_register(srv, srv->engine);
		if (r >= 0) {
			static const struct ctl_pass wp = {.name = "wlm", .run = wlm_pass};

			r = ctl_engine_add_pass(srv->engine, &wp, srv);
		}
		if (r >= 0) {
			struct ctl_wlm *w = NULL;

			r = ctl_wlm_start(srv, &w);
			srv->wlm = w;
		}
		/* After the rollout and campaign passes: a deployment or campaign that ended is
		 * seen in the same run. */
		if (r >= 0)
			r = ctl_maint_new(srv, &srv->maint);
		if (r >= 0)
			r = ctl_maint_register(srv->maint, srv->engine);
		if (r >= 0)
			r = ctl_watch_register(srv, srv->engine);
		if (r >= 0)
			r = ctl_engine_start(srv->engine);
		if (r < 0) {
			snprintf(errbuf, errlen, "cannot start the engine: %s", ry_strerror(r));
			goto fail;
		}
	}

	/* Agents never resume a TLS session: the tickets OpenSSL would send after each handshake
	 * are work for nothing in a connect storm. */
	r = rpc_tls_no_session_tickets(errbuf, errlen);
	if (r < 0)
		goto fail;
	rc.listen = cfg->listen;
	rc.tls.ca_pem = state->ca_pem;
	rc.tls.cert_pem = state->server_chain_pem;
	rc.tls.key_pem = state->server_key_pem;
	rc.methods = ctl_methods;
	rc.n_methods = RY_ARRAY_SIZE(ctl_methods);
	rc.userdata = srv;
	rc.threads = cfg->threads;
	r = rpc_server_start(&rc, &srv->rpc, &port);
	if (r < 0) {
		snprintf(errbuf, errlen, "cannot listen on %s: %s", cfg->listen, ry_strerror(r));
		goto fail;
	}
	srv->port = port;
	r = write_addr_file(state, cfg->listen, port);
	if (r < 0) {
		snprintf(errbuf, errlen, "writing controller.addr: %s", ry_strerror(r));
		goto fail;
	}
	if (pthread_create(&srv->reaper, NULL, reaper_main, srv) != 0) {
		r = -EAGAIN;
		snprintf(errbuf, errlen, "cannot start the reaper thread");
		goto fail;
	}
	srv->reaper_started = true;
	log_info("listening on %s (port %d), CA %s", cfg->listen, port, state->ca_fingerprint);
	if (cfg->max_heartbeat_rate > 0) {
		long fleet = cfg->expected_agents > 0 ? cfg->expected_agents : 10000;

		log_info("heartbeat every %d ms, stretched to keep under %d a second (%d ms at %ld "
			 "agents)",
			 cfg->heartbeat_interval_ms, cfg->max_heartbeat_rate,
			 ctl_heartbeat_interval(cfg->heartbeat_interval_ms, cfg->max_heartbeat_rate,
						fleet),
			 fleet);
	}
	/* An agent's keepalive wait restarts at each read, and it reads once a heartbeat. */
	if (cfg->heartbeat_interval_ms >= RPC_KEEPALIVE_MS)
		log_warn("--heartbeat-interval %d ms is not shorter than the agents' default "
			 "keepalive (%d ms): each heartbeat comes with a PING too; run the agents "
			 "with a longer --keepalive",
			 cfg->heartbeat_interval_ms, RPC_KEEPALIVE_MS);
	check_fd_limit(cfg);
	*ret = srv;
	return 0;
fail:
	ctl_server_free(srv);
	return r;
}

void ctl_server_free(struct ctl_server *srv)
{
	if (!srv)
		return;
	pthread_mutex_lock(&srv->lock);
	srv->stopping = true;
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
	if (srv->reaper_started)
		pthread_join(srv->reaper, NULL);
	/* The passes first: they send over sessions that the server is about to end. */
	ctl_engine_stop_passes(srv->engine);
	ctl_wlm_stop(srv->wlm);
	srv->wlm = NULL;
	/* Cancel every call (each session's closed() queues its node's offline mark), store what
	 * the ingest worker holds, then release the streams before the server goes. */
	rpc_server_stop(srv->rpc);
	ctl_engine_stop_ingest(srv->engine);
	rpc_server_free(srv->rpc);
	ctl_engine_free(srv->engine);
	ctl_rollout_free(srv->rollout);
	ctl_campaigns_free(srv->campaigns);
	ctl_maint_free(srv->maint);
	ctl_throttle_free(srv->enroll_throttle);
	ctl_throttle_free(srv->report_throttle);
	ctl_sessions_done(srv);
	ctl_events_free(srv->events);
	pthread_mutex_destroy(&srv->lock);
	pthread_cond_destroy(&srv->cond);
	free(srv);
}
