/* Command runner: posix_spawn of an argv in its own process group, output captured through
 * pipes up to a bound, timeout enforced by killing the group (SIGTERM, then SIGKILL). */
#include "nodeagent/apply/runner.h"

#include "common/log/log.h"
#include "common/util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct capture {
	int fd;
	char *buf;
	size_t len, max;
	bool truncated;
};

static bool is_real_root(const char *sysroot)
{
	return !sysroot || !sysroot[0] || strcmp(sysroot, "/") == 0;
}

static char *build_path(const char *sysroot)
{
	char *p;

	if (is_real_root(sysroot))
		return strdup(RUNNER_SYSTEM_PATH);
	if (asprintf(&p, "%s/usr/local/sbin:%s/usr/local/bin:%s", sysroot, sysroot,
		     RUNNER_SYSTEM_PATH) < 0)
		return NULL;
	return p;
}

/* Look argv0 up in the colon-separated path (the child's PATH, not ours). */
static int find_program(const char *argv0, const char *path, char **ret)
{
	const char *p = path;

	if (strchr(argv0, '/')) {
		char *s = strdup(argv0);

		if (!s)
			return -ENOMEM;
		*ret = s;
		return 0;
	}
	while (*p) {
		const char *end = strchr(p, ':');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		struct stat st;
		char *cand;

		if (n > 0) {
			if (asprintf(&cand, "%.*s/%s", (int)n, p, argv0) < 0)
				return -ENOMEM;
			if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) &&
			    access(cand, X_OK) == 0) {
				*ret = cand;
				return 0;
			}
			free(cand);
		}
		p += n;
		if (*p == ':')
			p++;
	}
	return -ENOENT;
}

/* Read what is available; 1 at EOF, 0 when it would block, -errno on error. */
static int capture_read(struct capture *c)
{
	char scratch[4096];

	for (;;) {
		size_t room = c->max - c->len;
		ssize_t n;

		if (room > 0)
			n = read(c->fd, c->buf + c->len, room);
		else
			n = read(c->fd, scratch, sizeof(scratch));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno;
		}
		if (n == 0)
			return 1;
		if (room > 0)
			c->len += (size_t)n;
		else
			c->truncated = true;
	}
}

static void capture_close(struct capture *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static int pidfd_open_compat(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

static char **build_env(const char *path, const char *sysroot, const char *const *extra)
{
	size_t n = 0, i = 0;
	char **env;

	while (extra && extra[n])
		n++;
	env = calloc(n + 5, sizeof(*env));
	if (!env)
		return NULL;
	if (asprintf(&env[i++], "PATH=%s", path) < 0)
		goto fail;
	if (asprintf(&env[i++], "RAILYARD_SYSROOT=%s", is_real_root(sysroot) ? "/" : sysroot) < 0)
		goto fail;
	if (!(env[i++] = strdup("LC_ALL=C")) || !(env[i++] = strdup("LANG=C")))
		goto fail;
	for (size_t k = 0; k < n; k++)
		if (!(env[i++] = strdup(extra[k])))
			goto fail;
	return env;
fail:
	for (size_t k = 0; k < n + 4; k++)
		free(env[k]);
	free(env);
	return NULL;
}

static void free_env(char **env)
{
	for (size_t k = 0; env && env[k]; k++)
		free(env[k]);
	free(env);
}

int runner_run(const struct runner_cmd *c, struct runner_result *ret)
{
	struct capture cap[2] = {{.fd = -1}, {.fd = -1}};
	int outp[2] = {-1, -1}, errp[2] = {-1, -1};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	bool fa_init = false, attr_init = false, reaped = false, timed_out = false;
	char *path = NULL, *prog = NULL, **env = NULL;
	int64_t start, deadline, kill_at = INT64_MAX, timeout, grace;
	size_t max = c->output_max ? c->output_max : RUNNER_DEFAULT_OUTPUT_MAX;
	int pidfd = -1, status = 0, r;
	pid_t pid = -1;
	sigset_t sigs;

	if (!c->argv || !c->argv[0] || !c->argv[0][0])
		return -EINVAL;
	timeout = c->timeout_ms > 0 ? c->timeout_ms : RUNNER_DEFAULT_TIMEOUT_MS;
	grace = c->grace_ms > 0 ? c->grace_ms : RUNNER_DEFAULT_GRACE_MS;
	path = build_path(c->sysroot);
	if (!path) {
		r = -ENOMEM;
		goto out;
	}
	if (c->sysroot_only && !is_real_root(c->sysroot) && !strchr(c->argv[0], '/')) {
		char *own = NULL;

		if (asprintf(&own, "%s/usr/local/sbin:%s/usr/local/bin", c->sysroot, c->sysroot) <
		    0) {
			r = -ENOMEM;
			goto out;
		}
		r = find_program(c->argv[0], own, &prog);
		free(own);
	} else {
		r = find_program(c->argv[0], path, &prog);
	}
	if (r < 0)
		goto out;
	env = build_env(path, c->sysroot, c->env_extra);
	for (int k = 0; k < 2; k++) {
		cap[k].max = max;
		cap[k].buf = malloc(max + 1);
	}
	if (!env || !cap[0].buf || !cap[1].buf) {
		r = -ENOMEM;
		goto out;
	}
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		r = -errno;
		goto out;
	}
	if ((r = posix_spawn_file_actions_init(&fa)) != 0) {
		r = -r;
		goto out;
	}
	fa_init = true;
	if ((r = posix_spawnattr_init(&attr)) != 0) {
		r = -r;
		goto out;
	}
	attr_init = true;
	r = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (!r)
		r = posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
	if (!r)
		r = posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
	if (!r)
		r = posix_spawnattr_setpgroup(&attr, 0);
	sigemptyset(&sigs);
	if (!r)
		r = posix_spawnattr_setsigmask(&attr, &sigs);
	sigfillset(&sigs);
	if (!r)
		r = posix_spawnattr_setsigdefault(&attr, &sigs);
	if (!r)
		r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
							    POSIX_SPAWN_SETSIGDEF);
	if (r) {
		r = -r;
		goto out;
	}
	start = util_now_mono_ms();
	r = posix_spawn(&pid, prog, &fa, &attr, (char *const *)c->argv, env);
	if (r) {
		r = -r;
		pid = -1;
		goto out;
	}
	close(outp[1]);
	close(errp[1]);
	outp[1] = errp[1] = -1;
	cap[0].fd = outp[0];
	cap[1].fd = errp[0];
	outp[0] = errp[0] = -1;
	for (int k = 0; k < 2; k++)
		(void)fcntl(cap[k].fd, F_SETFL, fcntl(cap[k].fd, F_GETFL) | O_NONBLOCK);
	pidfd = pidfd_open_compat(pid);
	deadline = start + timeout;

	while (!reaped) {
		struct pollfd pfd[3];
		int n = 0, wait_ms;
		int64_t now = util_now_mono_ms(), next;

		if (!timed_out && now >= deadline) {
			log_debug("runner: %s timed out after %lld ms, SIGTERM", c->argv[0],
				  (long long)timeout);
			(void)kill(-pid, SIGTERM);
			timed_out = true;
			kill_at = now + grace;
		}
		if (timed_out && now >= kill_at) {
			(void)kill(-pid, SIGKILL);
			kill_at = INT64_MAX;
		}
		next = timed_out ? kill_at : deadline;
		wait_ms = next == INT64_MAX ? 1000 : (int)(next - now > 1000 ? 1000 : next - now);
		if (pidfd < 0 && wait_ms > 10)
			wait_ms = 10; /* no pidfd: poll waitpid() */
		for (int k = 0; k < 2; k++)
			if (cap[k].fd >= 0)
				pfd[n++] = (struct pollfd){.fd = cap[k].fd, .events = POLLIN};
		if (pidfd >= 0)
			pfd[n++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
		if (poll(pfd, (nfds_t)n, wait_ms < 0 ? 0 : wait_ms) < 0 && errno != EINTR) {
			r = -errno;
			goto out;
		}
		for (int k = 0; k < 2; k++) {
			if (cap[k].fd < 0)
				continue;
			r = capture_read(&cap[k]);
			if (r != 0)
				capture_close(&cap[k]); /* EOF or read error: stop reading */
		}
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			reaped = true;
		else if (w < 0 && errno != EINTR) {
			r = -errno;
			goto out;
		}
	}
	if (timed_out)
		(void)kill(-pid, SIGKILL); /* descendants that outlived the leader */
	pid = -1;
	/* The program is gone; take what its descendants already wrote, without waiting for
	 * them (a daemonised grandchild may hold the pipe open forever). */
	for (int k = 0; k < 2; k++)
		if (cap[k].fd >= 0)
			(void)capture_read(&cap[k]);

	*ret = (struct runner_result){0};
	ret->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	ret->term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	ret->timed_out = timed_out;
	ret->duration_ms = util_now_mono_ms() - start;
	for (int k = 0; k < 2; k++)
		cap[k].buf[cap[k].len] = '\0';
	ret->out = cap[0].buf;
	ret->out_len = cap[0].len;
	ret->out_truncated = cap[0].truncated;
	ret->err = cap[1].buf;
	ret->err_len = cap[1].len;
	ret->err_truncated = cap[1].truncated;
	cap[0].buf = cap[1].buf = NULL;
	r = 0;
out:
	if (pid > 0) {
		/* Failure after the spawn: do not leave the group running or a zombie. */
		(void)kill(-pid, SIGKILL);
		(void)waitpid(pid, NULL, 0);
	}
	if (pidfd >= 0)
		close(pidfd);
	for (int k = 0; k < 2; k++) {
		capture_close(&cap[k]);
		free(cap[k].buf);
	}
	for (int k = 0; k < 2; k++) {
		if (outp[k] >= 0)
			close(outp[k]);
		if (errp[k] >= 0)
			close(errp[k]);
	}
	if (fa_init)
		posix_spawn_file_actions_destroy(&fa);
	if (attr_init)
		posix_spawnattr_destroy(&attr);
	free_env(env);
	free(prog);
	free(path);
	return r;
}

void runner_result_done(struct runner_result *r)
{
	if (!r)
		return;
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
	r->out_len = r->err_len = 0;
}

const char *runner_result_describe(const struct runner_result *r, char *buf, size_t len)
{
	if (r->timed_out)
		snprintf(buf, len, "timed out after %lld ms (killed)", (long long)r->duration_ms);
	else if (r->term_signal)
		snprintf(buf, len, "killed by signal %d", r->term_signal);
	else
		snprintf(buf, len, "exit %d", r->exit_code);
	return buf;
}
