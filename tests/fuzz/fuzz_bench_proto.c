/* Fuzz target: the benchmark control protocol between two railyard-bench peers
 * (nodeagent/bench/engine.c: framing, HELLO/ACCEPT/REFUSE negotiation, READY barriers, DONE
 * counts, STEP/ENV/RESULT documents, ERROR) and the tcp transport's data connections (tagged
 * hellos, latency ping-pong, bandwidth streams), with the engine on one side and the input as
 * everything its peer says. The engine's sockets are replaced (ld --wrap of socket, bind,
 * listen, accept4, connect, getsockname) by AF_UNIX socket pairs: each connection the engine
 * accepts (server) or makes (client) gets the next segment of the input, written in advance and
 * followed by end-of-file, so that a run never waits for a peer that is not there; what the
 * engine writes is dropped.
 *
 * Input: u8 setup (bit 0: the engine is the client; bits 1-3: one of eight parameter sets,
 * below), then per connection, in order (control first, then data connections): u16 length and
 * that many bytes.
 *
 * FUZZ_BENCH_RECORD=DIR: instead of fuzzing, run every parameter set between a real server and
 * client in this process over the same fake sockets, relaying and recording what each side
 * sends, and write DIR/SET-server and DIR/SET-client: a complete, successful conversation from
 * the peer's side, the seeds of tests/fuzz/corpus/fuzz_bench_proto. */
#include "tests/fuzz/fuzz_util.h"

#include "nodeagent/bench/bench.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int __wrap_socket(int domain, int type, int protocol);
int __wrap_bind(int fd, const struct sockaddr *addr, socklen_t len);
int __wrap_listen(int fd, int backlog);
int __wrap_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);
int __wrap_connect(int fd, const struct sockaddr *addr, socklen_t len);
int __wrap_getsockname(int fd, struct sockaddr *addr, socklen_t *len);

#define MAX_FD	   1024
#define MAX_CONN   16
#define FAKE_PORT  40000
#define TIMEOUT_MS 5 /* connect and I/O timeouts of the engine: a missing peer costs this */

/* One of the engine's sockets: the other end of its pair, and whether it listens. */
static struct {
	int peer;
	int family;
	bool listener;
} fds[MAX_FD];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool recording;

/* Fuzzing: the segments of the input, handed to connections in order. */
static struct {
	const uint8_t *p[MAX_CONN];
	size_t len[MAX_CONN];
	size_t n, next;
	int listener;		       /* the engine's listener, -1 */
	int harness[2 * MAX_CONN + 2]; /* our ends, closed after the run */
	size_t n_harness;
} seg;

static void keep_harness(int fd)
{
	if (seg.n_harness < sizeof(seg.harness) / sizeof(seg.harness[0]))
		seg.harness[seg.n_harness++] = fd;
	else
		close(fd);
}

/* Our end of a new connection: the next segment of the input, then end-of-file. */
static void script(int ours)
{
	if (seg.next < seg.n) {
		const uint8_t *p = seg.p[seg.next];
		size_t left = seg.len[seg.next];

		while (left > 0) {
			ssize_t n = write(ours, p, left);

			if (n <= 0)
				break;
			p += n;
			left -= (size_t)n;
		}
	}
	seg.next++;
	(void)shutdown(ours, SHUT_WR);
}

int __wrap_socket(int domain, int type, int protocol)
{
	int sv[2];

	(void)protocol;
	if (socketpair(AF_UNIX, SOCK_STREAM | (type & (SOCK_NONBLOCK | SOCK_CLOEXEC)), 0, sv) < 0)
		return -1;
	if (sv[0] >= MAX_FD) {
		close(sv[0]);
		close(sv[1]);
		errno = EMFILE;
		return -1;
	}
	pthread_mutex_lock(&lock);
	fds[sv[0]].peer = sv[1];
	fds[sv[0]].family = domain;
	fds[sv[0]].listener = false;
	if (!recording)
		keep_harness(sv[1]);
	pthread_mutex_unlock(&lock);
	return sv[0];
}

int __wrap_bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	(void)fd;
	(void)addr;
	(void)len;
	return 0;
}

int __wrap_getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons(FAKE_PORT)};
	struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons(FAKE_PORT)};
	bool v6 = fd >= 0 && fd < MAX_FD && fds[fd].family == AF_INET6;
	socklen_t n = v6 ? sizeof(a6) : sizeof(a4);

	memcpy(addr, v6 ? (void *)&a6 : (void *)&a4, n < *len ? n : *len);
	*len = n;
	return 0;
}

/* Record mode: the server's listener, connections waiting for its accept4(). */
static struct {
	int listener;
	int pending[MAX_CONN];
	size_t n_pending;
	pthread_t relays[MAX_CONN];
	size_t n_relays;
	struct conv {
		uint8_t *buf[2]; /* [0] client -> server, [1] server -> client */
		size_t len[2];
	} conv[MAX_CONN];
	size_t n_conv;
} rec = {.listener = -1};

int __wrap_listen(int fd, int backlog)
{
	(void)backlog;
	if (fd < 0 || fd >= MAX_FD) {
		errno = EBADF;
		return -1;
	}
	pthread_mutex_lock(&lock);
	fds[fd].listener = true;
	if (recording)
		rec.listener = fd;
	else
		seg.listener = fd;
	pthread_mutex_unlock(&lock);
	/* The listener is readable while a connection waits: a byte on its pair per connection. */
	if (!recording)
		for (size_t i = 1; i < MAX_CONN && i < seg.n + 1; i++)
			(void)!write(fds[fd].peer, "c", 1);
	return 0;
}

static void fill_peer_addr(struct sockaddr *addr, socklen_t *len)
{
	struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons(50000)};

	if (!addr || !len)
		return;
	a4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memcpy(addr, &a4, sizeof(a4) < *len ? sizeof(a4) : *len);
	*len = sizeof(a4);
}

int __wrap_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	char c;
	int sv[2], mine = -1;

	if (fd < 0 || fd >= MAX_FD || !fds[fd].listener) {
		errno = EINVAL;
		return -1;
	}
	if (recv(fd, &c, 1, MSG_DONTWAIT) != 1) {
		errno = EAGAIN;
		return -1;
	}
	if (recording) {
		pthread_mutex_lock(&lock);
		if (rec.n_pending > 0) {
			mine = rec.pending[0];
			memmove(rec.pending, rec.pending + 1, --rec.n_pending * sizeof(int));
		}
		pthread_mutex_unlock(&lock);
		if (mine < 0) {
			errno = EAGAIN;
			return -1;
		}
	} else {
		if (socketpair(AF_UNIX, SOCK_STREAM | (flags & (SOCK_NONBLOCK | SOCK_CLOEXEC)), 0,
			       sv) < 0)
			return -1;
		mine = sv[0];
		keep_harness(sv[1]);
		script(sv[1]);
	}
	if (mine < MAX_FD)
		fds[mine].listener = false;
	fill_peer_addr(addr, len);
	return mine;
}

static void *relay_main(void *arg);

int __wrap_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	(void)addr;
	(void)len;
	if (fd < 0 || fd >= MAX_FD) {
		errno = EBADF;
		return -1;
	}
	if (!recording) {
		script(fds[fd].peer);
		return 0;
	}
	{
		int sv[2];
		size_t k;

		pthread_mutex_lock(&lock);
		if (rec.listener < 0 || rec.n_conv >= MAX_CONN) {
			pthread_mutex_unlock(&lock);
			errno = ECONNREFUSED;
			return -1;
		}
		pthread_mutex_unlock(&lock);
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
			return -1;
		pthread_mutex_lock(&lock);
		k = rec.n_conv++;
		rec.pending[rec.n_pending++] = sv[0];
		{
			intptr_t *ends = malloc(3 * sizeof(*ends));

			if (!ends)
				abort();
			ends[0] = fds[fd].peer; /* the client's side */
			ends[1] = sv[1];	/* the server's side */
			ends[2] = (intptr_t)k;
			if (pthread_create(&rec.relays[rec.n_relays++], NULL, relay_main, ends) !=
			    0)
				abort();
		}
		(void)!write(fds[rec.listener].peer, "c", 1);
		pthread_mutex_unlock(&lock);
		return 0;
	}
}

static void append(struct conv *cv, int dir, const char *p, size_t n)
{
	cv->buf[dir] = realloc(cv->buf[dir], cv->len[dir] + n);
	if (!cv->buf[dir])
		abort();
	memcpy(cv->buf[dir] + cv->len[dir], p, n);
	cv->len[dir] += n;
}

/* Copy both ways between a client's and a server's connection, recording each direction. */
static void *relay_main(void *arg)
{
	intptr_t *ends = arg;
	int c = (int)ends[0], s = (int)ends[1];
	struct conv *cv = &rec.conv[ends[2]];
	bool open[2] = {true, true};
	char buf[65536];

	free(ends);
	while (open[0] || open[1]) {
		struct pollfd p[2] = {{.fd = open[0] ? c : -1, .events = POLLIN},
				      {.fd = open[1] ? s : -1, .events = POLLIN}};

		if (poll(p, 2, 5000) <= 0)
			break;
		for (int d = 0; d < 2; d++) {
			ssize_t n;

			if (!open[d] || !(p[d].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(d == 0 ? c : s, buf, sizeof(buf));
			if (n <= 0) {
				open[d] = false;
				(void)shutdown(d == 0 ? s : c, SHUT_WR);
				continue;
			}
			pthread_mutex_lock(&lock);
			append(cv, d, buf, (size_t)n);
			pthread_mutex_unlock(&lock);
			for (ssize_t off = 0; off < n;) {
				ssize_t w = write(d == 0 ? s : c, buf + off, (size_t)(n - off));

				if (w <= 0)
					break;
				off += w;
			}
		}
	}
	close(c);
	close(s);
	return NULL;
}

/* ---- parameter sets ------------------------------------------------------------------------ */

static void params_of(unsigned set, struct bench_params *p)
{
	bench_params_init(p);
	p->connect_timeout_ms = TIMEOUT_MS;
	p->io_timeout_ms = TIMEOUT_MS;
	p->port = 0;
	switch (set) {
	case 0: /* the default: lat, 2 bytes */
		p->iters = 4;
		break;
	case 1:
		p->size = 64;
		p->iters = 3;
		p->check_data = true;
		break;
	case 2:
		p->kind = BENCH_BW;
		p->size = 1024;
		p->iters = 4;
		p->depth = 2;
		break;
	case 3:
		p->kind = BENCH_BW;
		p->size = 512;
		p->iters = 3;
		p->qps = 2;
		p->bidir = true;
		break;
	case 4:
		p->kind = BENCH_BW;
		p->size = 4096;
		p->iters = 2;
		p->check_data = true;
		break;
	case 5:
		p->size = 1;
		p->iters = 1;
		break;
	case 6:
		p->kind = BENCH_BW;
		p->size = 8;
		p->iters = 5;
		p->qps = 3;
		p->check_data = true;
		p->bidir = true;
		break;
	default:
		p->size = 4096;
		p->iters = 2;
		p->check_data = true;
		break;
	}
}

/* ---- record mode --------------------------------------------------------------------------- */

struct side {
	struct bench_params p;
	json_t *result;
	int r;
	char err[BENCH_ERR_LEN];
};

static void *server_main(void *arg)
{
	struct side *sv = arg;
	struct bench_run_opts o = {.err = sv->err, .errlen = sizeof(sv->err)};

	sv->r = bench_run_server(&sv->p, &o, &sv->result);
	return NULL;
}

static void write_seed(const char *dir, unsigned set, bool client)
{
	char path[4096];
	FILE *f;
	uint8_t setup = (uint8_t)(set << 1 | (client ? 1 : 0));

	snprintf(path, sizeof(path), "%s/set%u-%s", dir, set, client ? "client" : "server");
	f = fopen(path, "wb");
	if (!f)
		abort();
	fputc(setup, f);
	for (size_t k = 0; k < rec.n_conv; k++) {
		/* The engine as client hears the server; as server, the client. */
		size_t n = rec.conv[k].len[client ? 1 : 0];
		uint8_t len[2] = {(uint8_t)n, (uint8_t)(n >> 8)};

		if (n > 0xffff)
			abort();
		fwrite(len, 1, 2, f);
		fwrite(rec.conv[k].buf[client ? 1 : 0], 1, n, f);
	}
	fclose(f);
}

static void record(const char *dir)
{
	recording = true;
	for (unsigned set = 0; set < 8; set++) {
		struct side srv = {0}, cli = {0};
		struct bench_run_opts o = {.err = cli.err, .errlen = sizeof(cli.err)};
		pthread_t t;

		memset(&rec, 0, sizeof(rec));
		rec.listener = -1;
		params_of(set, &srv.p);
		params_of(set, &cli.p);
		srv.p.connect_timeout_ms = srv.p.io_timeout_ms = 5000;
		cli.p.connect_timeout_ms = cli.p.io_timeout_ms = 5000;
		cli.p.port = FAKE_PORT;
		if (pthread_create(&t, NULL, server_main, &srv) != 0)
			abort();
		cli.r = bench_run_client(&cli.p, "127.0.0.1", &o, &cli.result);
		pthread_join(t, NULL);
		for (size_t i = 0; i < rec.n_relays; i++)
			pthread_join(rec.relays[i], NULL);
		fprintf(stderr, "set %u: server %d (%s), client %d (%s), %zu connections\n", set,
			srv.r, srv.err, cli.r, cli.err, rec.n_conv);
		write_seed(dir, set, false);
		write_seed(dir, set, true);
		for (size_t k = 0; k < rec.n_conv; k++) {
			free(rec.conv[k].buf[0]);
			free(rec.conv[k].buf[1]);
		}
		json_decref(srv.result);
		json_decref(cli.result);
	}
	recording = false;
}

/* ---- the target ---------------------------------------------------------------------------- */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("FUZZ_BENCH_RECORD");

	(void)argc;
	(void)argv;
	fuzz_quiet_logs();
	/* railyard-bench and the agent ignore SIGPIPE; a peer gone mid-write is an error result. */
	signal(SIGPIPE, SIG_IGN);
	if (dir) {
		record(dir);
		exit(0);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {data, size};
	unsigned setup = fuzz_u8(&in);
	struct bench_params p;
	struct bench_run_opts o = {0};
	char err[BENCH_ERR_LEN] = "";
	json_t *result = NULL;
	int r;

	memset(&seg, 0, sizeof(seg));
	seg.listener = -1;
	while (in.left > 0 && seg.n < MAX_CONN) {
		size_t n = fuzz_u16(&in);

		seg.p[seg.n] = fuzz_bytes(&in, n, &seg.len[seg.n]);
		seg.n++;
	}
	params_of(setup >> 1 & 7, &p);
	o.err = err;
	o.errlen = sizeof(err);
	if (setup & 1) {
		p.port = FAKE_PORT;
		r = bench_run_client(&p, "127.0.0.1", &o, &result);
	} else {
		r = bench_run_server(&p, &o, &result);
	}
	/* A server's result is the document its client sent (engine.c: both sides return the
	 * same results), whatever it holds; a client builds its own. */
	if (r == 0)
		FUZZ_CHECK(json_is_object(result) && (!(setup & 1) || json_is_array(json_object_get(
									      result, "results"))),
			   "a run that succeeded without a result document");
	else
		FUZZ_CHECK(result == NULL && err[0], "a failed run (%d) without a reason", r);
	json_decref(result);
	for (size_t i = 0; i < seg.n_harness; i++)
		close(seg.harness[i]);
	return 0;
}
