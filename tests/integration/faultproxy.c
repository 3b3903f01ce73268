/* A TCP proxy that injects network faults between agents and the controller, for the
 * integration tests (this kernel may have no sch_netem, and a proxy can do what netem cannot:
 * a connection reset, or one connection frozen while new ones pass).
 *   faultproxy --upstream HOST:PORT --addr-file F --control-file C [--seed N]
 * Listens on 127.0.0.1 (an ephemeral port, written as "127.0.0.1:PORT" to F) and forwards each
 * connection to the upstream. A control port (written to C) takes one command per connection
 * and answers "ok ..." once it is in force:
 *   pass          forward everything (frozen connections go on where they stopped)
 *   delay MS      hold every chunk MS ms in both directions
 *   freeze        forward nothing, on every connection, old and new (a partition that heals:
 *                 nothing is lost, TCP-style; pass resumes)
 *   sever         the connections open now are frozen for good (half-open: no FIN, no RST,
 *                 silence), new ones pass
 *   reset         reset (RST) every connection open now
 *   refuse        reset every connection, and every new one at once, until pass
 *   flaky N       reset a connection with probability 1/N at each chunk it forwards
 *   stats         conns=accepted resets=R live=L up=BYTES down=BYTES
 * Single-threaded poll loop; at most MAX_CONNS connections. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS   256
#define CHUNK	    65536
#define PENDING_MAX (1024 * 1024) /* per direction: stop reading above it */

enum mode { M_PASS, M_DELAY, M_FREEZE, M_REFUSE, M_FLAKY };

struct chunk {
	struct chunk *next;
	int64_t due_ms;
	size_t len, off;
	char data[];
};

/* One direction: bytes read from `from`, to be written to `to`. */
struct dir {
	struct chunk *head, *tail;
	size_t pending;
	bool eof;	/* `from` said FIN */
	bool shut;	/* FIN passed on to `to` */
	uint64_t bytes; /* forwarded */
};

struct conn {
	bool used, connecting, severed;
	int fd[2];	 /* 0: the client (agent), 1: upstream (controller) */
	struct dir d[2]; /* d[0]: client -> upstream, d[1]: upstream -> client */
};

static struct conn conns[MAX_CONNS];
static enum mode mode = M_PASS;
static int delay_ms, flaky_n;
static uint64_t n_accepted, n_resets, bytes_up, bytes_down;
static struct sockaddr_storage upstream;
static socklen_t upstream_len;

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void dir_free(struct dir *d)
{
	while (d->head) {
		struct chunk *c = d->head;

		d->head = c->next;
		free(c);
	}
	*d = (struct dir){0};
}

/* Close a connection; rst: with an RST on both sides (SO_LINGER 0), else a plain close. */
static void conn_close(struct conn *c, bool rst)
{
	for (int i = 0; i < 2; i++) {
		if (c->fd[i] < 0)
			continue;
		if (rst) {
			struct linger l = {1, 0};

			(void)setsockopt(c->fd[i], SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		}
		close(c->fd[i]);
		c->fd[i] = -1;
	}
	dir_free(&c->d[0]);
	dir_free(&c->d[1]);
	c->used = false;
	if (rst)
		n_resets++;
}

static bool frozen(const struct conn *c)
{
	return c->severed || mode == M_FREEZE;
}

static int parse_hostport(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	char host[256];
	const char *colon = strrchr(s, ':');

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	if (getaddrinfo(host, colon + 1, &hints, &ai) != 0 || !ai)
		return -1;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static int listen_local(int *ret_port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		close(fd);
		return -1;
	}
	*ret_port = ntohs(a.sin_port);
	return fd;
}

static int write_addr_file(const char *path, int port)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	fprintf(f, "127.0.0.1:%d\n", port);
	if (fclose(f) != 0)
		return -1;
	return rename(tmp, path);
}

static void on_accept(int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), up, one = 1;
		struct conn *c = NULL;

		if (fd < 0)
			return;
		n_accepted++;
		for (int i = 0; i < MAX_CONNS && !c; i++)
			if (!conns[i].used)
				c = &conns[i];
		if (!c || mode == M_REFUSE) {
			struct linger l = {1, 0};

			(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
			close(fd);
			n_resets++;
			continue;
		}
		up = socket(upstream.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (up < 0) {
			close(fd);
			continue;
		}
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		(void)setsockopt(up, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		*c = (struct conn){.used = true, .fd = {fd, up}};
		if (connect(up, (struct sockaddr *)&upstream, upstream_len) < 0) {
			if (errno != EINPROGRESS) {
				conn_close(c, true);
				continue;
			}
			c->connecting = true;
		}
	}
}

/* Read what `from` has into direction d. false: the connection is to be reset. */
static bool conn_read(struct conn *c, int i)
{
	struct dir *d = &c->d[i];
	struct chunk *ch = malloc(sizeof(*ch) + CHUNK);
	ssize_t n;

	if (!ch)
		return false;
	n = read(c->fd[i], ch->data, CHUNK);
	if (n <= 0) {
		free(ch);
		if (n == 0) {
			d->eof = true;
			return true;
		}
		return errno == EAGAIN || errno == EINTR;
	}
	if (mode == M_FLAKY && flaky_n > 0 && random() % flaky_n == 0) {
		free(ch);
		return false;
	}
	ch->next = NULL;
	ch->len = (size_t)n;
	ch->off = 0;
	ch->due_ms = now_ms() + (mode == M_DELAY ? delay_ms : 0);
	if (d->tail)
		d->tail->next = ch;
	else
		d->head = ch;
	d->tail = ch;
	d->pending += (size_t)n;
	return true;
}

/* Write the chunks of direction i that are due to its other side. false: reset. */
static bool conn_write(struct conn *c, int i, int64_t now)
{
	struct dir *d = &c->d[i];
	int to = c->fd[1 - i];

	while (d->head && d->head->due_ms <= now) {
		struct chunk *ch = d->head;
		ssize_t n = write(to, ch->data + ch->off, ch->len - ch->off);

		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		ch->off += (size_t)n;
		d->pending -= (size_t)n;
		d->bytes += (size_t)n;
		if (i == 0)
			bytes_up += (size_t)n;
		else
			bytes_down += (size_t)n;
		if (ch->off < ch->len)
			return true;
		d->head = ch->next;
		if (!d->head)
			d->tail = NULL;
		free(ch);
	}
	if (!d->head && d->eof && !d->shut) {
		(void)shutdown(to, SHUT_WR);
		d->shut = true;
	}
	return true;
}

static void control(int cfd)
{
	char line[256], reply[320];
	struct timeval tv = {2, 0};
	int fd = accept4(cfd, NULL, NULL, SOCK_CLOEXEC), live = 0;
	ssize_t n;

	if (fd < 0)
		return;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = read(fd, line, sizeof(line) - 1);
	if (n <= 0) {
		close(fd);
		return;
	}
	line[n] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
	snprintf(reply, sizeof(reply), "ok %s\n", line);
	if (strcmp(line, "pass") == 0) {
		mode = M_PASS;
	} else if (sscanf(line, "delay %d", &delay_ms) == 1 && delay_ms >= 0) {
		mode = M_DELAY;
	} else if (strcmp(line, "freeze") == 0) {
		mode = M_FREEZE;
	} else if (strcmp(line, "sever") == 0) {
		mode = M_PASS;
		for (int i = 0; i < MAX_CONNS; i++)
			if (conns[i].used)
				conns[i].severed = true;
	} else if (strcmp(line, "reset") == 0 || strcmp(line, "refuse") == 0) {
		mode = strcmp(line, "refuse") == 0 ? M_REFUSE : M_PASS;
		for (int i = 0; i < MAX_CONNS; i++)
			if (conns[i].used && !conns[i].severed)
				conn_close(&conns[i], true);
	} else if (sscanf(line, "flaky %d", &flaky_n) == 1 && flaky_n > 0) {
		mode = M_FLAKY;
	} else if (strcmp(line, "stats") == 0) {
		for (int i = 0; i < MAX_CONNS; i++)
			live += conns[i].used && !conns[i].severed;
		snprintf(reply, sizeof(reply),
			 "ok conns=%llu resets=%llu live=%d up=%llu down=%llu\n",
			 (unsigned long long)n_accepted, (unsigned long long)n_resets, live,
			 (unsigned long long)bytes_up, (unsigned long long)bytes_down);
	} else {
		snprintf(reply, sizeof(reply), "error unknown command '%.64s'\n", line);
	}
	if (write(fd, reply, strlen(reply)) < 0)
		perror("faultproxy: control reply");
	close(fd);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"upstream", required_argument, NULL, 'u'},
		{"addr-file", required_argument, NULL, 'a'},
		{"control-file", required_argument, NULL, 'c'},
		{"seed", required_argument, NULL, 's'},
		{0},
	};
	const char *up = NULL, *addr_file = NULL, *control_file = NULL;
	struct pollfd pfd[2 + 2 * MAX_CONNS];
	int lfd, cfd, port, cport, o;
	unsigned seed = (unsigned)getpid();

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'u':
			up = optarg;
			break;
		case 'a':
			addr_file = optarg;
			break;
		case 'c':
			control_file = optarg;
			break;
		case 's':
			seed = (unsigned)strtoul(optarg, NULL, 10);
			break;
		default:
			return 2;
		}
	}
	if (!up || !addr_file || !control_file || parse_hostport(up, &upstream, &upstream_len)) {
		fprintf(stderr, "usage: faultproxy --upstream HOST:PORT --addr-file F "
				"--control-file C [--seed N]\n");
		return 2;
	}
	srandom(seed);
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < MAX_CONNS; i++)
		conns[i].fd[0] = conns[i].fd[1] = -1;
	lfd = listen_local(&port);
	cfd = listen_local(&cport);
	if (lfd < 0 || cfd < 0 || write_addr_file(control_file, cport) < 0 ||
	    write_addr_file(addr_file, port) < 0) {
		perror("faultproxy: listen");
		return 1;
	}
	for (;;) {
		int64_t now = now_ms(), next = -1;
		int n = 0, map[2 + 2 * MAX_CONNS];

		pfd[n] = (struct pollfd){.fd = lfd, .events = POLLIN};
		map[n++] = -1;
		pfd[n] = (struct pollfd){.fd = cfd, .events = POLLIN};
		map[n++] = -1;
		for (int i = 0; i < MAX_CONNS; i++) {
			struct conn *c = &conns[i];

			if (!c->used)
				continue;
			if (c->connecting) {
				pfd[n] = (struct pollfd){.fd = c->fd[1], .events = POLLOUT};
				map[n++] = i * 2 + 1;
				continue;
			}
			if (frozen(c))
				continue;
			for (int k = 0; k < 2; k++) {
				struct dir *in = &c->d[k], *out = &c->d[1 - k];
				short ev = 0;

				if (!in->eof && in->pending < PENDING_MAX)
					ev |= POLLIN;
				/* fd[k] receives direction 1-k. */
				if (out->head && out->head->due_ms <= now)
					ev |= POLLOUT;
				if (out->head && out->head->due_ms > now &&
				    (next < 0 || out->head->due_ms < next))
					next = out->head->due_ms;
				if (!ev)
					continue; /* errors show on the next read or write */
				pfd[n] = (struct pollfd){.fd = c->fd[k], .events = ev};
				map[n++] = i * 2 + k;
			}
		}
		if (poll(pfd, (nfds_t)n, next < 0 ? 1000 : (int)(next - now) + 1) < 0 &&
		    errno != EINTR) {
			perror("faultproxy: poll");
			return 1;
		}
		if (pfd[0].revents & POLLIN)
			on_accept(lfd);
		if (pfd[1].revents & POLLIN)
			control(cfd);
		now = now_ms();
		for (int p = 2; p < n; p++) {
			struct conn *c = &conns[map[p] / 2];
			int k = map[p] % 2;
			bool ok = true;

			if (!c->used || !pfd[p].revents)
				continue;
			if (c->connecting) {
				int err = 0;
				socklen_t len = sizeof(err);

				(void)getsockopt(c->fd[1], SOL_SOCKET, SO_ERROR, &err, &len);
				c->connecting = false;
				if (err)
					conn_close(c, true);
				continue;
			}
			if (frozen(c))
				continue;
			if (pfd[p].revents & (POLLIN | POLLERR | POLLHUP))
				ok = conn_read(c, k);
			if (ok && (pfd[p].revents & POLLOUT))
				ok = conn_write(c, 1 - k, now);
			if (!ok)
				conn_close(c, true);
		}
		/* Flush what became due, pass FINs on, and retire connections done both ways. */
		for (int i = 0; i < MAX_CONNS; i++) {
			struct conn *c = &conns[i];
			bool ok = true;

			if (!c->used || c->connecting || frozen(c))
				continue;
			for (int k = 0; k < 2 && ok; k++)
				ok = conn_write(c, k, now);
			if (!ok)
				conn_close(c, true);
			else if (c->d[0].shut && c->d[1].shut)
				conn_close(c, false);
		}
	}
}
