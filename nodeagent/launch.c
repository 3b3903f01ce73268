/* The launch relay on the agent: the launcher's socket for `railyard-agent rsh`, the daemons the
 * controller orders, and the rsh client itself. One thread serves the socket and reaps the
 * daemons; the session thread hands it the controller's messages. */
#include "nodeagent/launch.h"
#include "common/launch/orted.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Requests one socket may hold at once (mpirun asks for every host together), the bytes of one
 * request, and the messages waiting for the session. */
#define WAITING_MAX  512
#define REQUEST_MAX  (64 * 1024)
#define QUEUE_MAX    1024
#define RUNS_KEPT    64
#define TICK_MS	     100
#define KILL_WAIT_MS 3000

struct waiting {
	int fd; /* the rsh's connection; -1: free */
	uint64_t request_id;
	int64_t deadline; /* monotonic ms */
	char bench_id[65];
};

struct daemon {
	pid_t pid; /* 0: free */
	char bench_id[65];
	int64_t deadline, killed_at; /* monotonic ms; killed_at 0: not yet */
};

struct queued {
	uint8_t *data;
	size_t len;
};

struct agent_launch {
	char *sock_path, *node_id, *orted;
	int listen_fd;
	pthread_t thread;
	atomic_bool stop;
	pthread_mutex_t lock; /* all below */
	struct waiting waiting[WAITING_MAX];
	struct daemon daemons[AGENT_LAUNCH_DAEMONS];
	struct queued queue[QUEUE_MAX];
	size_t nqueue;
	uint64_t next_request;
	/* Runs a daemon was ordered for here (refused a second time), and the launcher's counts. */
	char seen[RUNS_KEPT][65];
	size_t seen_next;
	struct {
		char bench_id[65];
		unsigned daemons;
		int64_t last_ms;
	} stats[RUNS_KEPT];
	size_t stats_next;
};

static char relay_text[4096 + 8];

static void relay_init(void)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return;
	exe[n] = '\0';
	snprintf(relay_text, sizeof(relay_text), "%s rsh", exe);
}

const char *agent_launch_relay(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, relay_init);
	return relay_text[0] ? relay_text : NULL;
}

int agent_spawn_group(const char *path, char *const argv[], char *const envp[], int out_fd,
		      int err_fd, pid_t *ret_pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	int r;

	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (out_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	if (err_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
	posix_spawnattr_setpgroup(&at, 0);
	/* The agent's threads block signals; the child starts with none blocked, defaults. */
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF);
	r = posix_spawn(ret_pid, path, &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	return -r;
}

/* ---- the queue of launch messages for the session ---- */

static void queue_locked(struct agent_launch *l, Railyard__V1__AgentMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(&m->base);
	uint8_t *data;

	if (l->nqueue == QUEUE_MAX || !(data = malloc(len ? len : 1))) {
		log_warn("launch: message dropped (queue full or out of memory)");
		return;
	}
	protobuf_c_message_pack(&m->base, data);
	l->queue[l->nqueue].data = data;
	l->queue[l->nqueue].len = len;
	l->nqueue++;
}

void agent_launch_flush(struct agent_launch *l,
			int (*send)(void *ud, Railyard__V1__AgentMessage *m), void *ud)
{
	struct queued q[QUEUE_MAX];
	size_t n;

	pthread_mutex_lock(&l->lock);
	n = l->nqueue;
	memcpy(q, l->queue, n * sizeof(q[0]));
	l->nqueue = 0;
	pthread_mutex_unlock(&l->lock);
	for (size_t i = 0; i < n; i++) {
		Railyard__V1__AgentMessage *m =
			railyard__v1__agent_message__unpack(NULL, q[i].len, q[i].data);

		if (m && send(ud, m) < 0)
			log_warn("launch: a message was not sent (the session failed)");
		if (m)
			railyard__v1__agent_message__free_unpacked(m, NULL);
		free(q[i].data);
	}
}

bool agent_launch_busy(struct agent_launch *l)
{
	bool busy;

	pthread_mutex_lock(&l->lock);
	busy = l->nqueue > 0;
	for (size_t i = 0; i < WAITING_MAX && !busy; i++)
		busy = l->waiting[i].fd >= 0;
	pthread_mutex_unlock(&l->lock);
	return busy;
}

/* Answer an rsh and close its connection. */
static void answer(int fd, bool ok, const char *message)
{
	json_t *o = json_pack("{s:b, s:s}", "ok", ok, "message", message ? message : "");
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

	/* MSG_NOSIGNAL: an rsh that left (mpirun killed it) must not take the agent with it. */
	if (text &&
	    send(fd, text, strlen(text), MSG_NOSIGNAL | MSG_DONTWAIT) < (ssize_t)strlen(text))
		log_debug("launch: the rsh left before its answer");
	free(text);
	json_decref(o);
	close(fd);
}

void agent_launch_disconnected(struct agent_launch *l)
{
	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < l->nqueue; i++)
		free(l->queue[i].data);
	l->nqueue = 0;
	for (size_t i = 0; i < WAITING_MAX; i++) {
		if (l->waiting[i].fd < 0)
			continue;
		answer(l->waiting[i].fd, false, "the agent's session with the controller ended");
		l->waiting[i].fd = -1;
	}
	pthread_mutex_unlock(&l->lock);
}

void agent_launch_on_reply(struct agent_launch *l, const Railyard__V1__LaunchReply *m)
{
	bool found = false;

	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < WAITING_MAX && !found; i++) {
		struct waiting *w = &l->waiting[i];

		if (w->fd < 0 || w->request_id != m->request_id)
			continue;
		found = true;
		if (m->ok) {
			size_t k = RUNS_KEPT;

			for (size_t j = 0; j < RUNS_KEPT && k == RUNS_KEPT; j++)
				if (strcmp(l->stats[j].bench_id, w->bench_id) == 0)
					k = j;
			if (k == RUNS_KEPT) {
				k = l->stats_next;
				l->stats_next = (l->stats_next + 1) % RUNS_KEPT;
				memcpy(l->stats[k].bench_id, w->bench_id,
				       sizeof(l->stats[k].bench_id));
				l->stats[k].daemons = 0;
			}
			l->stats[k].daemons++;
			l->stats[k].last_ms = util_now_mono_ms();
		}
		answer(w->fd, m->ok, m->message);
		w->fd = -1;
	}
	pthread_mutex_unlock(&l->lock);
	if (!found)
		log_info("launch: LaunchReply %llu answers nothing waiting (timed out)",
			 (unsigned long long)m->request_id);
}

void agent_launch_stats(struct agent_launch *l, const char *bench_id, unsigned *ret_daemons,
			int64_t *ret_last_ms)
{
	*ret_daemons = 0;
	*ret_last_ms = 0;
	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	for (size_t j = 0; j < RUNS_KEPT; j++) {
		if (strcmp(l->stats[j].bench_id, bench_id) == 0) {
			*ret_daemons = l->stats[j].daemons;
			*ret_last_ms = l->stats[j].last_ms;
		}
	}
	pthread_mutex_unlock(&l->lock);
}

/* ---- daemons ordered by the controller ---- */

static void status_locked(struct agent_launch *l, const char *bench_id, uint64_t request_id,
			  bool started, const char *message)
{
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__LaunchStatus st = RAILYARD__V1__LAUNCH_STATUS__INIT;

	st.bench_id = (char *)bench_id;
	st.request_id = request_id;
	st.started = started;
	st.message = (char *)message;
	m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_LAUNCH_STATUS;
	m.launch_status = &st;
	queue_locked(l, &m);
}

void agent_launch_on_order(struct agent_launch *l, const Railyard__V1__LaunchOrder *m)
{
	const char *relay = agent_launch_relay();
	char err[300] = "", **argv = NULL, env_node[128], env_path[1024], env_tmp[1024];
	char *envp[] = {env_path, (char *)"LANG=C", env_node, NULL, NULL};
	const char *path = getenv("PATH"), *tmp = getenv("TMPDIR");
	struct daemon *d = NULL;
	bool seen = false;
	pid_t pid = 0;
	int r;

	pthread_mutex_lock(&l->lock);
	if (!m->bench_id[0] || strlen(m->bench_id) > 64) {
		snprintf(err, sizeof(err), "bench id out of range");
		goto refuse;
	}
	for (size_t i = 0; i < RUNS_KEPT && !seen; i++)
		seen = strcmp(l->seen[i], m->bench_id) == 0;
	if (seen) {
		snprintf(err, sizeof(err), "a daemon of %s was started here already", m->bench_id);
		goto refuse;
	}
	snprintf(l->seen[l->seen_next], sizeof(l->seen[0]), "%s", m->bench_id);
	l->seen_next = (l->seen_next + 1) % RUNS_KEPT;
	if (m->deadline_ms == 0 || m->deadline_ms > 3 * 3600 * 1000u) {
		snprintf(err, sizeof(err), "deadline out of range");
		goto refuse;
	}
	if (!relay) {
		snprintf(err, sizeof(err), "this agent's own path is unknown");
		goto refuse;
	}
	/* Again here: the node runs only what it checked itself. */
	r = ry_orted_argv_check((const char *const *)m->argv, m->n_argv, relay, NULL, &argv, err,
				sizeof(err));
	if (r < 0)
		goto refuse;
	for (size_t i = 0; i < AGENT_LAUNCH_DAEMONS && !d; i++)
		if (!l->daemons[i].pid)
			d = &l->daemons[i];
	if (!d) {
		snprintf(err, sizeof(err), "%d daemons run here already", AGENT_LAUNCH_DAEMONS);
		goto refuse;
	}
	snprintf(env_path, sizeof(env_path), "PATH=%s",
		 path && !util_has_control(path) ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
	snprintf(env_node, sizeof(env_node), "RAILYARD_NODE=%s", l->node_id);
	/* The agent's TMPDIR, when it has one: where Open MPI makes its session directory (and
	 * the shared-memory segments in it). */
	if (tmp && tmp[0] == '/' && !util_has_control(tmp) && strlen(tmp) < 1000) {
		snprintf(env_tmp, sizeof(env_tmp), "TMPDIR=%s", tmp);
		envp[3] = env_tmp;
	}
	r = agent_spawn_group(l->orted, argv, envp, -1, -1, &pid);
	if (r < 0) {
		snprintf(err, sizeof(err), "%s: %s", l->orted, ry_strerror(r));
		goto refuse;
	}
	d->pid = pid;
	d->killed_at = 0;
	d->deadline = util_now_mono_ms() + m->deadline_ms;
	snprintf(d->bench_id, sizeof(d->bench_id), "%s", m->bench_id);
	snprintf(err, sizeof(err), "orted pid %d", (int)pid);
	log_info("bench %s: orted started (pid %d)", m->bench_id, (int)pid);
	status_locked(l, m->bench_id, m->request_id, true, err);
	pthread_mutex_unlock(&l->lock);
	ry_orted_argv_free(argv);
	return;
refuse:
	log_warn("bench %.64s: daemon refused: %s", m->bench_id, err);
	status_locked(l, m->bench_id, m->request_id, false, err);
	pthread_mutex_unlock(&l->lock);
	ry_orted_argv_free(argv);
}

static void kill_locked(struct daemon *d, const char *why)
{
	if (d->killed_at)
		return;
	log_info("bench %s: stopping its orted (pid %d): %s", d->bench_id, (int)d->pid, why);
	(void)kill(-d->pid, SIGTERM);
	d->killed_at = util_now_mono_ms();
}

int agent_launch_cancel(struct agent_launch *l, const char *bench_id)
{
	int found = 0;

	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < AGENT_LAUNCH_DAEMONS; i++) {
		if (l->daemons[i].pid && strcmp(l->daemons[i].bench_id, bench_id) == 0) {
			kill_locked(&l->daemons[i], "the run was cancelled");
			found = 1;
		}
	}
	pthread_mutex_unlock(&l->lock);
	return found;
}

/* Reap ended daemons, stop those past their deadline, and SIGKILL the group of one that
 * outlived its SIGTERM. */
static void reap_locked(struct agent_launch *l, int64_t now)
{
	for (size_t i = 0; i < AGENT_LAUNCH_DAEMONS; i++) {
		struct daemon *d = &l->daemons[i];
		int status;

		if (!d->pid)
			continue;
		if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
			log_info("bench %s: orted (pid %d) ended: %s %d", d->bench_id, (int)d->pid,
				 WIFEXITED(status) ? "exit" : "signal",
				 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
			/* What it started in its group goes with it. */
			(void)kill(-d->pid, SIGKILL);
			d->pid = 0;
			continue;
		}
		if (now >= d->deadline)
			kill_locked(d, "its deadline passed");
		if (d->killed_at && now >= d->killed_at + KILL_WAIT_MS)
			(void)kill(-d->pid, SIGKILL);
	}
}

/* ---- the launcher's socket ---- */

/* Read one request from a new connection (bounded in time and size) and queue it for the
 * controller; answer at once what cannot go. */
static void take_request(struct agent_launch *l, int fd)
{
	struct ucred cred = {.uid = (uid_t)-1};
	socklen_t clen = sizeof(cred);
	char *buf = NULL, *key;
	size_t len = 0;
	int64_t deadline = util_now_mono_ms() + 2000;
	json_t *o = NULL, *argv;
	const char *bench, *token, *host;
	struct waiting *w = NULL;
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__LaunchRequest lr = RAILYARD__V1__LAUNCH_REQUEST__INIT;
	char *args[RY_ORTED_ARGS_MAX];
	size_t n;
	(void)key;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.uid != geteuid()) {
		log_warn("launch: a connection from uid %d refused (not the agent's)",
			 (int)cred.uid);
		answer(fd, false, "only the agent's own user may ask for a launch");
		return;
	}
	buf = malloc(REQUEST_MAX + 1);
	if (!buf) {
		answer(fd, false, "out of memory");
		return;
	}
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		int64_t left = deadline - util_now_mono_ms();
		ssize_t k;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		k = read(fd, buf + len, REQUEST_MAX - len);
		if (k <= 0)
			break;
		len += (size_t)k;
		if (len == REQUEST_MAX || memchr(buf + len - (size_t)k, '\n', (size_t)k))
			break;
	}
	buf[len] = '\0';
	o = json_loads(buf, JSON_DISABLE_EOF_CHECK, NULL);
	free(buf);
	bench = json_string_value(json_object_get(o, "bench"));
	token = json_string_value(json_object_get(o, "token"));
	host = json_string_value(json_object_get(o, "host"));
	argv = json_object_get(o, "argv");
	n = json_array_size(argv);
	if (!bench || !token || !host || !json_is_array(argv) || n == 0 || n > RY_ORTED_ARGS_MAX ||
	    strlen(bench) > 64 || strlen(token) > 64 || strlen(host) > 255) {
		answer(fd, false, "a malformed launch request");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		args[i] = (char *)json_string_value(json_array_get(argv, i));
		if (!args[i]) {
			answer(fd, false, "a malformed launch request");
			goto out;
		}
	}
	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < WAITING_MAX && !w; i++)
		if (l->waiting[i].fd < 0)
			w = &l->waiting[i];
	if (!w) {
		pthread_mutex_unlock(&l->lock);
		answer(fd, false, "too many launches waiting");
		goto out;
	}
	w->fd = fd;
	w->request_id = ++l->next_request;
	w->deadline = util_now_mono_ms() + AGENT_LAUNCH_WAIT_MS;
	snprintf(w->bench_id, sizeof(w->bench_id), "%s", bench);
	lr.request_id = w->request_id;
	lr.bench_id = (char *)bench;
	lr.token = (char *)token;
	lr.host = (char *)host;
	lr.n_argv = n;
	lr.argv = args;
	m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_LAUNCH_REQUEST;
	m.launch_request = &lr;
	queue_locked(l, &m);
	pthread_mutex_unlock(&l->lock);
	log_info("bench %.64s: launch on %.64s asked of the controller", bench, host);
out:
	json_decref(o);
}

static void *serve(void *arg)
{
	struct agent_launch *l = arg;

	while (!atomic_load(&l->stop)) {
		struct pollfd p = {l->listen_fd, POLLIN, 0};
		int64_t now;

		if (poll(&p, 1, TICK_MS) > 0) {
			int fd = accept4(l->listen_fd, NULL, NULL, SOCK_CLOEXEC);

			if (fd >= 0)
				take_request(l, fd);
		}
		now = util_now_mono_ms();
		pthread_mutex_lock(&l->lock);
		for (size_t i = 0; i < WAITING_MAX; i++) {
			if (l->waiting[i].fd >= 0 && now >= l->waiting[i].deadline) {
				answer(l->waiting[i].fd, false, "no answer from the controller");
				l->waiting[i].fd = -1;
			}
		}
		reap_locked(l, now);
		pthread_mutex_unlock(&l->lock);
	}
	return NULL;
}

int agent_launch_new(const struct agent_launch_opts *o, struct agent_launch **ret, char *err,
		     size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct agent_launch *l = calloc(1, sizeof(*l));
	mode_t old;
	int r;

	if (!l)
		return -ENOMEM;
	l->listen_fd = -1;
	pthread_mutex_init(&l->lock, NULL);
	for (size_t i = 0; i < WAITING_MAX; i++)
		l->waiting[i].fd = -1;
	l->sock_path = fs_path_join(o->state_dir, AGENT_LAUNCH_SOCK);
	l->node_id = strdup(o->node_id ? o->node_id : "");
	l->orted = strdup(o->orted ? o->orted : "/usr/bin/orted");
	if (!l->sock_path || !l->node_id || !l->orted) {
		r = -ENOMEM;
		goto fail;
	}
	if (strlen(l->sock_path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "%s: the path is too long for a unix socket", l->sock_path);
		r = -ENAMETOOLONG;
		goto fail;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", l->sock_path);
	l->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l->listen_fd < 0) {
		r = -errno;
		snprintf(err, errlen, "launch socket: %s", ry_strerror(r));
		goto fail;
	}
	(void)unlink(l->sock_path); /* a previous agent's (the state directory is locked) */
	old = umask(0177);
	r = bind(l->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
	umask(old);
	if (r == 0 && chmod(l->sock_path, 0600) < 0)
		r = -errno;
	if (r == 0 && listen(l->listen_fd, 128) < 0)
		r = -errno;
	if (r < 0) {
		snprintf(err, errlen, "%s: %s", l->sock_path, ry_strerror(r));
		goto fail;
	}
	atomic_init(&l->stop, false);
	if (pthread_create(&l->thread, NULL, serve, l) != 0) {
		r = -EAGAIN;
		snprintf(err, errlen, "cannot start the launch thread");
		goto fail;
	}
	*ret = l;
	return 0;
fail:
	if (l->listen_fd >= 0) {
		close(l->listen_fd);
		l->listen_fd = -1;
	}
	agent_launch_free(l);
	return r;
}

void agent_launch_free(struct agent_launch *l)
{
	if (!l)
		return;
	if (l->listen_fd >= 0) {
		atomic_store(&l->stop, true);
		pthread_join(l->thread, NULL);
		close(l->listen_fd);
		(void)unlink(l->sock_path);
	}
	agent_launch_disconnected(l);
	/* Daemons do not outlive their agent. */
	for (size_t i = 0; i < AGENT_LAUNCH_DAEMONS; i++) {
		struct daemon *d = &l->daemons[i];

		if (!d->pid)
			continue;
		log_info("bench %s: stopping its orted (pid %d): the agent stops", d->bench_id,
			 (int)d->pid);
		(void)kill(-d->pid, SIGKILL);
		(void)waitpid(d->pid, NULL, 0);
	}
	pthread_mutex_destroy(&l->lock);
	free(l->sock_path);
	free(l->node_id);
	free(l->orted);
	free(l);
}

/* ---- `railyard-agent rsh` ---- */

int agent_rsh_main(int argc, char **argv)
{
	const char *job = getenv(AGENT_LAUNCH_ENV_JOB), *token = getenv(AGENT_LAUNCH_ENV_TOKEN);
	const char *sock = getenv(AGENT_LAUNCH_ENV_SOCK);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	json_t *req = NULL, *args, *ans = NULL;
	char *text = NULL, buf[4096];
	size_t len = 0;
	int fd = -1, rc = 1;

	if (argc < 3) {
		fprintf(stderr,
			"usage: railyard-agent rsh HOST COMMAND [ARGS...]\n"
			"(Open MPI's plm_rsh_agent within a collective run of the agent)\n");
		return 2;
	}
	if (!job || !token || !sock || strlen(sock) >= sizeof(sa.sun_path)) {
		fprintf(stderr,
			"railyard-agent rsh: %s, %s and %s must be set (it runs under a "
			"collective run's mpirun)\n",
			AGENT_LAUNCH_ENV_JOB, AGENT_LAUNCH_ENV_TOKEN, AGENT_LAUNCH_ENV_SOCK);
		return 1;
	}
	args = json_array();
	for (int i = 2; args && i < argc; i++)
		json_array_append_new(args, json_string(argv[i]));
	req = json_pack("{s:s, s:s, s:s, s:o}", "bench", job, "token", token, "host", argv[1],
			"argv", args);
	text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	if (!text) {
		fprintf(stderr, "railyard-agent rsh: out of memory (or an argument not UTF-8)\n");
		goto out;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "railyard-agent rsh: %s: %s\n", sock, strerror(errno));
		goto out;
	}
	if (fs_write_all(fd, text, strlen(text)) < 0 || fs_write_all(fd, "\n", 1) < 0) {
		fprintf(stderr, "railyard-agent rsh: %s: the agent closed the connection\n", sock);
		goto out;
	}
	(void)shutdown(fd, SHUT_WR);
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		ssize_t k;

		if (poll(&p, 1, AGENT_LAUNCH_WAIT_MS + 5000) <= 0)
			break;
		k = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (k <= 0)
			break;
		len += (size_t)k;
		if (len == sizeof(buf) - 1)
			break;
	}
	buf[len] = '\0';
	ans = json_loads(buf, 0, NULL);
	if (!json_is_object(ans)) {
		fprintf(stderr, "railyard-agent rsh: no answer from the agent\n");
		goto out;
	}
	if (json_is_true(json_object_get(ans, "ok"))) {
		rc = 0;
	} else {
		char *safe = util_escape(
			json_string_value(json_object_get(ans, "message")) ?: "refused", false);

		fprintf(stderr, "railyard-agent rsh: launch on %s refused: %s\n", argv[1],
			safe ? safe : "refused");
		free(safe);
	}
out:
	if (fd >= 0)
		close(fd);
	free(text);
	json_decref(req);
	json_decref(ans);
	return rc;
}
