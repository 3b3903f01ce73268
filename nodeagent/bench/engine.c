/* The benchmark engine: control connection (listen/connect, negotiation, barriers, reports),
 * buffers from the memory backend, the latency and bandwidth loops over a transport's
 * primitives, data-integrity checks, and the result document. */
#include "nodeagent/bench/bench.h"
#include "nodeagent/bench/cpu.h"
#include "common/stats/stats.h"

#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MSG_MAX	      (1u << 20) /* control message payload bound */
#define CQE_BATCH     64
#define SLICE_MS      100	 /* cancel/deadline polling granularity while blocked */
#define CTRL_EVERY_NS 1000000ull /* look at the control socket at least every 1 ms mid-test */

enum msg_type {
	MSG_HELLO = 1, /* client: params + cookie */
	MSG_ACCEPT,    /* server: params */
	MSG_REFUSE,    /* server: params (they differ) */
	MSG_ERROR,     /* either: i32 code + text; the sender gives up */
	MSG_READY,     /* barrier before a step: u32 step */
	MSG_DONE,      /* sender finished a step: u32 qps + u64 messages per QP */
	MSG_STEP,      /* server -> client: JSON of its measurements for the step */
	MSG_ENV,       /* server -> client: JSON environment */
	MSG_RESULT,    /* client -> server: the result document */
};

struct run {
	struct bench_params p;
	enum bench_role role;
	const struct bench_run_opts *o;
	const struct bench_clock *clock;
	const struct bench_transport_ops *t;
	struct bench_mem mem; /* the run's memory backend, open from run_main() to the end */
	int ctrl_fd, listen_fd;
	struct bench_ctx ctx;
	struct bench_qp_buf *bufs;
	void *st;
	uint64_t last_ns; /* last clock reading, to detect a clock going back */
	uint64_t peer_done[BENCH_QPS_MAX];
	bool have_peer_done;
	char err[BENCH_ERR_LEN];
	bool peer_failed; /* the error came from the peer: do not echo it back */
	uint32_t step_no;
};

/* ---- errors -------------------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) static int fail(struct run *run, int r, const char *fmt, ...)
{
	va_list ap;

	if (run->err[0] == '\0') {
		va_start(ap, fmt);
		vsnprintf(run->err, sizeof(run->err), fmt, ap);
		va_end(ap);
	}
	return r;
}

/* ---- clock --------------------------------------------------------------------------------- */

static int mono_now(void *ud, uint64_t *ret_ns)
{
	struct timespec ts;

	(void)ud;
	if (clock_gettime(CLOCK_MONOTONIC_RAW, &ts) < 0 && clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		return -errno;
	*ret_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return 0;
}

const struct bench_clock bench_clock_monotonic = {.now = mono_now, .ud = NULL};

/* Latency samples from the CPU's time-stamp counter, as perftest's get_cycles(), where the
 * kernel itself keeps time with it (clocksource "tsc": invariant and synchronised across CPUs).
 * Reading it is one instruction; clock_gettime() is a call into the vDSO and its data page, and
 * between the two readings of a round trip that cost is in the sample. It shows where the
 * round trip itself is short or makes the kernel switch tasks (a soft-RoCE RDMA read wakes
 * ksoftirqd; under emulation each switch flushes the TLB, so every page and block touched after
 * it costs): with clock_gettime our read latency was 4-5 % above ib_read_lat's. Ticks are
 * converted with a rate measured against CLOCK_MONOTONIC_RAW once per process (20 ms);
 * RAILYARD_BENCH_CLOCK=monotonic turns the counter off (both are named in the result). */
#define TICK_CAL_NS 20000000ull

static pthread_once_t tick_once = PTHREAD_ONCE_INIT;
static double tick_ns; /* ns per tick; 0: not available here */

#if defined(__x86_64__)
static inline uint64_t tick_read(void)
{
	uint32_t lo, hi;

	/* lfence: the reading is neither hoisted above what precedes it nor sunk below what
	 * follows it (rdtsc_ordered() in the kernel). */
	__asm__ __volatile__("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi)::"memory");
	return (uint64_t)hi << 32 | lo;
}

static bool tick_clocksource_is_tsc(void)
{
	char buf[32] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	bool tsc;

	if (!f)
		return false;
	tsc = fgets(buf, sizeof(buf), f) && strcmp(buf, "tsc\n") == 0;
	fclose(f);
	return tsc;
}

/* A (CLOCK_MONOTONIC_RAW, tick) pair read as close together as we can: of a few tries, the one
 * whose tick readings around the clock reading are nearest. */
static int tick_pair(uint64_t *ret_ns, uint64_t *ret_tick)
{
	uint64_t best = UINT64_MAX;

	for (int k = 0; k < 5; k++) {
		struct timespec ts;
		uint64_t a = tick_read(), b;

		if (clock_gettime(CLOCK_MONOTONIC_RAW, &ts) < 0)
			return -errno;
		b = tick_read();
		if (b > a && b - a < best) {
			best = b - a;
			*ret_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
			*ret_tick = a + (b - a) / 2;
		}
	}
	return best == UINT64_MAX ? -EIO : 0;
}

static void tick_calibrate(void)
{
	const char *want = getenv("RAILYARD_BENCH_CLOCK");
	struct timespec pause = {0, (long)TICK_CAL_NS};
	uint64_t n0, k0, n1, k1;

	if ((want && strcmp(want, "monotonic") == 0) || !tick_clocksource_is_tsc())
		return;
	if (tick_pair(&n0, &k0) < 0)
		return;
	while (nanosleep(&pause, &pause) < 0 && errno == EINTR)
		;
	if (tick_pair(&n1, &k1) < 0 || n1 <= n0 || k1 <= k0 || n1 - n0 < TICK_CAL_NS)
		return;
	tick_ns = (double)(n1 - n0) / (double)(k1 - k0);
	log_debug("bench: latency from the TSC, %.6f ns per tick", tick_ns);
}
#else
static inline uint64_t tick_read(void)
{
	return 0;
}

static void tick_calibrate(void)
{
}
#endif

/* Whether this run's latency samples come from ticks: the default clock only (an injected
 * clock is the test's), and the counter available. */
static bool ticks_on(const struct bench_run_opts *o)
{
	if (o->clock)
		return false;
	(void)pthread_once(&tick_once, tick_calibrate);
	return tick_ns > 0;
}

static inline uint64_t ticks_to_ns(uint64_t ticks)
{
	return (uint64_t)((double)ticks * tick_ns + 0.5);
}

static int now_ns(struct run *run, uint64_t *ret_ns)
{
	uint64_t ns;
	int r;

	r = run->clock->now(run->clock->ud, &ns);
	if (r < 0)
		return fail(run, r, "clock failed: %s", ry_strerror(r));
	if (ns < run->last_ns)
		return fail(run, -RY_E_CLOCK, "clock went back by %" PRIu64 " ns",
			    run->last_ns - ns);
	run->last_ns = ns;
	*ret_ns = ns;
	return 0;
}

static int check_cancel(struct run *run)
{
	if (run->o->cancel && atomic_load_explicit(run->o->cancel, memory_order_relaxed))
		return fail(run, -ECANCELED, "canceled");
	if (run->o->deadline_ms && util_now_mono_ms() >= (int64_t)run->o->deadline_ms)
		return fail(run, -ECANCELED, "deadline passed");
	return 0;
}

/* ---- control connection -------------------------------------------------------------------- */

static int wait_fd(int fd, short events, int timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = events};
	int r;

	do
		r = poll(&pfd, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	return r == 0 ? -ETIMEDOUT : 0;
}

int bench_ctrl_send(int fd, const void *buf, size_t len, int timeout_ms)
{
	const uint8_t *b = buf;
	int64_t end = util_now_mono_ms() + timeout_ms;
	ssize_t w;
	int r;

	while (len > 0) {
		w = send(fd, b, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			b += w;
			len -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return errno == EPIPE ? -ECONNRESET : -errno;
		if (util_now_mono_ms() >= end)
			return -ETIMEDOUT;
		r = wait_fd(fd, POLLOUT, (int)(end - util_now_mono_ms()));
		if (r < 0 && r != -ETIMEDOUT)
			return r;
	}
	return 0;
}

int bench_ctrl_recv(int fd, void *buf, size_t len, int timeout_ms)
{
	uint8_t *b = buf;
	int64_t end = util_now_mono_ms() + timeout_ms;
	ssize_t n;
	int r;

	while (len > 0) {
		n = recv(fd, b, len, MSG_DONTWAIT);
		if (n > 0) {
			b += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		if (util_now_mono_ms() >= end)
			return -ETIMEDOUT;
		r = wait_fd(fd, POLLIN, (int)(end - util_now_mono_ms()));
		if (r < 0 && r != -ETIMEDOUT)
			return r;
	}
	return 0;
}

static void put32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static void put64(uint8_t *b, uint64_t v)
{
	put32(b, (uint32_t)(v >> 32));
	put32(b + 4, (uint32_t)v);
}

static uint64_t get64(const uint8_t *b)
{
	return (uint64_t)get32(b) << 32 | get32(b + 4);
}

static const char *msg_name(uint32_t type)
{
	static const char *const names[] = {"?",     "HELLO", "ACCEPT", "REFUSE", "ERROR",
					    "READY", "DONE",  "STEP",	"ENV",	  "RESULT"};

	return type < RY_ARRAY_SIZE(names) ? names[type] : "?";
}

/* Frame: u32 type, u32 length, payload. */
static int msg_send(struct run *run, uint32_t type, const void *payload, size_t len)
{
	uint8_t hdr[8];
	int r;

	put32(hdr, type);
	put32(hdr + 4, (uint32_t)len);
	r = bench_ctrl_send(run->ctrl_fd, hdr, sizeof(hdr), (int)run->p.io_timeout_ms);
	if (r >= 0 && len)
		r = bench_ctrl_send(run->ctrl_fd, payload, len, (int)run->p.io_timeout_ms);
	if (r < 0)
		return fail(run, r, "control connection: sending %s: %s", msg_name(type),
			    r == -ECONNRESET ? "peer closed the connection" : ry_strerror(r));
	return 0;
}

static int msg_send_json(struct run *run, uint32_t type, json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);
	int r;

	if (!s)
		return fail(run, -ENOMEM, "out of memory");
	r = msg_send(run, type, s, strlen(s));
	free(s);
	return r;
}

/* Receive one message; *ret_buf is malloc()ed (NUL-terminated, caller frees). An ERROR message
 * from the peer becomes its code with "peer: <text>" as our reason. */
static int msg_recv(struct run *run, int timeout_ms, uint32_t *ret_type, char **ret_buf,
		    size_t *ret_len)
{
	uint8_t hdr[8];
	uint32_t type, len;
	char *buf;
	int r;

	r = bench_ctrl_recv(run->ctrl_fd, hdr, sizeof(hdr), timeout_ms);
	if (r == -ECONNRESET)
		return fail(run, r, "peer closed the control connection");
	if (r == -ETIMEDOUT)
		return fail(run, r, "no word from the peer for %d ms", timeout_ms);
	if (r < 0)
		return fail(run, r, "control connection: %s", ry_strerror(r));
	type = get32(hdr);
	len = get32(hdr + 4);
	if (len > MSG_MAX)
		return fail(run, -RY_E_INVALID, "peer sent a %u-byte control message", len);
	buf = malloc((size_t)len + 1);
	if (!buf)
		return fail(run, -ENOMEM, "out of memory");
	r = bench_ctrl_recv(run->ctrl_fd, buf, len, (int)run->p.io_timeout_ms);
	if (r < 0) {
		free(buf);
		return fail(run, r, "control connection: %s", ry_strerror(r));
	}
	buf[len] = '\0';
	if (type == MSG_ERROR) {
		/* The peer's code as a positive errno or RY_E_*; anything else (0, a negative or an
		 * out-of-range number: negating 0x80000000 would overflow) is EIO. */
		uint32_t raw = len >= 4 ? get32((uint8_t *)buf) : EIO;
		int code = raw >= 1 && raw <= (uint32_t)RY_E_MAX ? -(int)raw : -EIO;

		run->peer_failed = true;
		r = fail(run, code, "peer: %s", len > 4 ? buf + 4 : ry_strerror(code));
		free(buf);
		return r;
	}
	*ret_type = type;
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

static int msg_expect(struct run *run, uint32_t want, int timeout_ms, char **ret_buf,
		      size_t *ret_len)
{
	uint32_t type;
	char *buf;
	size_t len;
	int r;

	r = msg_recv(run, timeout_ms, &type, &buf, &len);
	if (r < 0)
		return r;
	if (type != want) {
		free(buf);
		return fail(run, -RY_E_INVALID, "peer sent %s where %s was due", msg_name(type),
			    msg_name(want));
	}
	*ret_buf = buf;
	if (ret_len)
		*ret_len = len;
	return 0;
}

static json_t *msg_json(struct run *run, const char *buf)
{
	json_t *j = json_loads(buf, 0, NULL);

	if (!j || !json_is_object(j)) {
		json_decref(j);
		(void)fail(run, -RY_E_INVALID, "peer sent malformed JSON");
		return NULL;
	}
	return j;
}

/* Best effort: tell the peer why we give up, unless the reason came from it. */
static void send_error(struct run *run, int r)
{
	uint8_t buf[4 + BENCH_ERR_LEN];
	uint8_t hdr[8];
	size_t n;

	if (run->ctrl_fd < 0 || run->peer_failed)
		return;
	n = strnlen(run->err, BENCH_ERR_LEN - 1);
	put32(buf, (uint32_t)-r);
	memcpy(buf + 4, run->err, n);
	put32(hdr, MSG_ERROR);
	put32(hdr + 4, (uint32_t)(4 + n));
	if (bench_ctrl_send(run->ctrl_fd, hdr, sizeof(hdr), 200) < 0 ||
	    bench_ctrl_send(run->ctrl_fd, buf, 4 + n, 200) < 0)
		log_debug("bench: could not tell the peer why we stop");
	(void)shutdown(run->ctrl_fd, SHUT_WR);
}

/* Before closing the control socket after a failure: read what the peer still sends until it
 * closes (bounded), so that our close is a FIN and not a RST that would destroy the ERROR
 * message in flight to it. */
static void ctrl_drain(struct run *run)
{
	int64_t end = util_now_mono_ms() + 500;
	char junk[4096];
	ssize_t n;

	while (util_now_mono_ms() < end) {
		n = recv(run->ctrl_fd, junk, sizeof(junk), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			return;
		if (n < 0 && wait_fd(run->ctrl_fd, POLLIN, 50) < 0)
			continue;
	}
}

static void sock_tune(int fd)
{
	int one = 1;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static int do_listen(struct run *run, uint16_t *ret_port)
{
	struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons(run->p.port)};
	struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons(run->p.port)};
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd, one = 1, zero = 0, r;

	a6.sin6_addr = in6addr_any;
	a4.sin_addr.s_addr = htonl(INADDR_ANY);
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&a6, sizeof(a6)) < 0) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return fail(run, -errno, "socket: %s", strerror(errno));
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&a4, sizeof(a4)) < 0) {
			r = -errno;
			close(fd);
			return fail(run, r, "cannot bind port %u: %s", run->p.port, ry_strerror(r));
		}
	}
	if (listen(fd, 64) < 0 || getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 ||
	    set_nonblock(fd) < 0) {
		r = -errno;
		close(fd);
		return fail(run, r, "listen: %s", ry_strerror(r));
	}
	*ret_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						   : ((struct sockaddr_in *)&ss)->sin_port);
	run->listen_fd = fd;
	return 0;
}

/* A server waits connect_timeout_ms for its client; one ordered with a deadline (an agent's
 * run) waits until that deadline instead: its controller sends the client once it has the
 * server's port, which after a controller restart takes a reconnect of both sides, and cancels
 * a server whose run failed. */
static int do_accept(struct run *run)
{
	int64_t end = util_now_mono_ms() + run->p.connect_timeout_ms;
	socklen_t sl;
	int fd, r;

	if (run->o->deadline_ms && (int64_t)run->o->deadline_ms > end)
		end = (int64_t)run->o->deadline_ms;

	for (;;) {
		r = check_cancel(run);
		if (r < 0)
			return r;
		sl = sizeof(run->ctx.peer_addr);
		fd = accept4(run->listen_fd, (struct sockaddr *)&run->ctx.peer_addr, &sl,
			     SOCK_CLOEXEC);
		if (fd >= 0) {
			run->ctx.peer_addrlen = sl;
			break;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
		    errno != ECONNABORTED)
			return fail(run, -errno, "accept: %s", strerror(errno));
		if (util_now_mono_ms() >= end)
			return fail(run, -ETIMEDOUT, "no client within %u ms",
				    run->p.connect_timeout_ms);
		r = wait_fd(run->listen_fd, POLLIN, SLICE_MS);
		if (r < 0 && r != -ETIMEDOUT)
			return fail(run, r, "poll: %s", ry_strerror(r));
	}
	sock_tune(fd);
	run->ctrl_fd = fd;
	return 0;
}

/* Connect to one address with a bounded wait. */
static int connect_one(const struct addrinfo *ai, int timeout_ms, int *ret_fd)
{
	socklen_t sl = sizeof(int);
	int fd, r, soerr = 0;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
	if (fd < 0)
		return -errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		if (errno != EINPROGRESS) {
			r = -errno;
			goto out_close;
		}
		r = wait_fd(fd, POLLOUT, timeout_ms);
		if (r < 0)
			goto out_close;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
			soerr = errno;
		if (soerr) {
			r = -soerr;
			goto out_close;
		}
	}
	*ret_fd = fd;
	return 0;
out_close:
	close(fd);
	return r;
}

static int do_connect(struct run *run, const char *peer)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL,
			*ai;
	int64_t end = util_now_mono_ms() + run->p.connect_timeout_ms, left;
	char port[8];
	int r, fd = -1;

	snprintf(port, sizeof(port), "%u", run->p.port);
	r = getaddrinfo(peer, port, &hints, &res);
	if (r != 0)
		return fail(run, -RY_E_NOT_FOUND, "cannot resolve '%s': %s", peer, gai_strerror(r));
	for (;;) {
		for (ai = res; ai; ai = ai->ai_next) {
			left = end - util_now_mono_ms();
			r = connect_one(ai, left > SLICE_MS ? SLICE_MS : (int)(left > 0 ? left : 0),
					&fd);
			if (r == 0) {
				memcpy(&run->ctx.peer_addr, ai->ai_addr, ai->ai_addrlen);
				run->ctx.peer_addrlen = ai->ai_addrlen;
				goto connected;
			}
		}
		/* Refused (server not up yet) or no answer: try again until the timeout. */
		if (r != -ECONNREFUSED && r != -ETIMEDOUT && r != -ENETUNREACH &&
		    r != -EHOSTUNREACH)
			break;
		if (util_now_mono_ms() >= end)
			break;
		if (check_cancel(run) < 0)
			goto out;
		if (r == -ECONNREFUSED)
			(void)poll(NULL, 0, SLICE_MS);
	}
	if (r == -ECONNREFUSED)
		r = fail(run, r, "%s port %u is not listening (connection refused for %u ms)", peer,
			 run->p.port, run->p.connect_timeout_ms);
	else if (r == -ETIMEDOUT)
		r = fail(run, r, "no answer from %s port %u within %u ms", peer, run->p.port,
			 run->p.connect_timeout_ms);
	else
		r = fail(run, r, "cannot connect to %s port %u: %s", peer, run->p.port,
			 ry_strerror(r));
	goto out;
connected:
	sock_tune(fd);
	run->ctrl_fd = fd;
	r = 0;
out:
	freeaddrinfo(res);
	return r;
}

/* ---- negotiation --------------------------------------------------------------------------- */

/* -a runs up to the smaller of both sides' largest message (each side's device may take less
 * than BENCH_SIZE_MAX); both compute the same from the two limits exchanged. */
static void sweep_agree(struct bench_params *ours, const struct bench_params *peer)
{
	if (ours->sweep && peer->sweep_max && peer->sweep_max < ours->sweep_max)
		ours->sweep_max = peer->sweep_max;
}

static int negotiate_client(struct run *run)
{
	uint8_t hello[BENCH_PARAMS_WIRE + 8];
	struct bench_params peer;
	char *buf = NULL;
	uint32_t type;
	size_t len;
	int r;

	r = util_random_bytes(&run->ctx.cookie, sizeof(run->ctx.cookie));
	if (r < 0)
		return fail(run, r, "random: %s", ry_strerror(r));
	bench_params_pack(&run->p, hello);
	put64(hello + BENCH_PARAMS_WIRE, run->ctx.cookie);
	r = msg_send(run, MSG_HELLO, hello, sizeof(hello));
	if (r < 0)
		return r;
	r = msg_recv(run, (int)run->p.connect_timeout_ms, &type, &buf, &len);
	if (r < 0)
		return r;
	if ((type != MSG_ACCEPT && type != MSG_REFUSE) ||
	    bench_params_unpack((uint8_t *)buf, len, &peer) < 0) {
		r = fail(run, -RY_E_INVALID, "peer is not a railyard-bench %u server",
			 BENCH_PROTO_VERSION);
		goto out;
	}
	r = bench_params_compare(&run->p, &peer, run->err, sizeof(run->err));
	if (r == 0 && type == MSG_REFUSE)
		r = fail(run, -RY_E_PARAM_MISMATCH, "peer refused our parameters");
	if (r < 0)
		run->peer_failed = true; /* the server already knows */
	else
		sweep_agree(&run->p, &peer);
out:
	free(buf);
	return r;
}

static int negotiate_server(struct run *run)
{
	uint8_t reply[BENCH_PARAMS_WIRE];
	struct bench_params peer;
	char *buf = NULL;
	size_t len;
	int r;

	r = msg_expect(run, MSG_HELLO, (int)run->p.io_timeout_ms, &buf, &len);
	if (r < 0)
		return r;
	if (len != BENCH_PARAMS_WIRE + 8 ||
	    bench_params_unpack((uint8_t *)buf, BENCH_PARAMS_WIRE, &peer) < 0) {
		r = fail(run, -RY_E_INVALID, "client is not a railyard-bench %u client",
			 BENCH_PROTO_VERSION);
		goto out;
	}
	run->ctx.cookie = get64((uint8_t *)buf + BENCH_PARAMS_WIRE);
	r = bench_params_compare(&run->p, &peer, run->err, sizeof(run->err));
	/* Our reply carries our own limit; the client takes the smaller of the two too. */
	bench_params_pack(&run->p, reply);
	if (r == 0)
		sweep_agree(&run->p, &peer);
	if (msg_send(run, r < 0 ? MSG_REFUSE : MSG_ACCEPT, reply, sizeof(reply)) < 0 && r == 0)
		r = -ECONNRESET;
	if (r < 0)
		run->peer_failed = true; /* told it with REFUSE */
out:
	free(buf);
	return r;
}

/* ---- buffers and steps --------------------------------------------------------------------- */

static uint32_t step_slots(const struct bench_params *p, uint64_t size)
{
	uint64_t slots;

	if (p->kind == BENCH_LAT)
		return 2;
	slots = BENCH_REGION_MAX / (2ull * p->qps * size);
	if (slots < 1)
		slots = 1;
	if (slots > p->depth)
		slots = p->depth;
	return (uint32_t)slots;
}

static uint64_t step_size(const struct bench_params *p, uint32_t i)
{
	return p->sweep ? (uint64_t)BENCH_SWEEP_MIN << i : p->size;
}

/* -a: every power of two from BENCH_SWEEP_MIN to sweep_max (what both devices take). */
static uint32_t step_count(const struct bench_params *p)
{
	uint64_t max = p->sweep_max ? p->sweep_max : BENCH_SIZE_MAX;
	uint32_t n = 0;

	if (!p->sweep)
		return 1;
	while (((uint64_t)BENCH_SWEEP_MIN << n) <= max)
		n++;
	return n;
}

static void bufs_free(struct run *run)
{
	uint32_t q;

	if (!run->bufs)
		return;
	for (q = 0; q < run->p.qps; q++) {
		run->mem.ops->free(run->mem.st, run->bufs[q].tx, run->bufs[q].len);
		run->mem.ops->free(run->mem.st, run->bufs[q].rx, run->bufs[q].len);
	}
	free(run->bufs);
	run->bufs = NULL;
}

static int bufs_alloc(struct run *run)
{
	uint64_t len = 0, l;
	uint32_t i, q;
	int r;

	for (i = 0; i < step_count(&run->p); i++) {
		l = step_size(&run->p, i) * step_slots(&run->p, step_size(&run->p, i));
		if (l > len)
			len = l;
	}
	run->bufs = calloc(run->p.qps, sizeof(*run->bufs));
	if (!run->bufs)
		return fail(run, -ENOMEM, "out of memory");
	for (q = 0; q < run->p.qps; q++) {
		run->bufs[q].len = len;
		r = run->mem.ops->alloc(run->mem.st, len, &run->bufs[q].tx);
		if (r >= 0)
			r = run->mem.ops->alloc(run->mem.st, len, &run->bufs[q].rx);
		if (r < 0)
			return fail(run, r,
				    "cannot allocate 2 x %" PRIu64 " bytes of %s memory: %s", len,
				    run->mem.spec, ry_strerror(r));
	}
	return 0;
}

/* Pattern seed of message msg on qp sent by role from (so the two directions differ). */
static uint64_t seed_of(const struct run *run, enum bench_role from, uint32_t qp, uint64_t msg)
{
	return (msg << 8) ^ ((uint64_t)qp << 1) ^ (from == BENCH_SERVER) ^
	       ((uint64_t)run->step_no << 56);
}

static enum bench_role peer_role(const struct run *run)
{
	return run->role == BENCH_SERVER ? BENCH_CLIENT : BENCH_SERVER;
}

static int fill_tx(struct run *run, const struct bench_step *s, uint32_t qp, uint64_t msg,
		   uint64_t seed_msg)
{
	uint8_t *slot = (uint8_t *)run->bufs[qp].tx + (msg % s->slots) * s->size;
	int r = run->mem.ops->fill(run->mem.st, slot, s->size,
				   seed_of(run, run->role, qp, seed_msg));

	if (r < 0)
		return fail(run, r, "writing the data pattern to %s memory: %s", run->mem.spec,
			    ry_strerror(r));
	/* A device buffer is not the CPU's to touch: the hook sees host memory only. */
	if (run->o->tx_hook && !run->mem.ops->device)
		run->o->tx_hook(run->o->ud, qp, msg, slot, s->size);
	return 0;
}

static int check_rx(struct run *run, const struct bench_step *s, uint32_t qp, uint64_t msg,
		    uint64_t seed_msg)
{
	const uint8_t *slot = (const uint8_t *)run->bufs[qp].rx + (msg % s->slots) * s->size;
	size_t off = 0;
	int r = run->mem.ops->check(run->mem.st, slot, s->size,
				    seed_of(run, peer_role(run), qp, seed_msg), &off);

	if (r < 0 && r != -RY_E_DATA_MISMATCH)
		return fail(run, r, "reading received data from %s memory: %s", run->mem.spec,
			    ry_strerror(r));
	if (r < 0)
		return fail(run, -RY_E_DATA_MISMATCH,
			    "data mismatch: message %" PRIu64 " of QP %u (size %" PRIu64
			    ") differs at byte %zu",
			    msg, qp, s->size, off);
	return 0;
}

/* Look at the control socket without blocking: DONE from the peer is recorded, ERROR ends the
 * run, anything else is a protocol error. */
static int ctrl_poll(struct run *run)
{
	struct pollfd pfd = {.fd = run->ctrl_fd, .events = POLLIN};
	uint32_t type, q, n;
	char *buf;
	size_t len;
	int r;

	if (run->have_peer_done || poll(&pfd, 1, 0) <= 0)
		return 0;
	r = msg_recv(run, (int)run->p.io_timeout_ms, &type, &buf, &len);
	if (r < 0)
		return r;
	if (type != MSG_DONE || len < 4 || (n = get32((uint8_t *)buf)) != run->p.qps ||
	    len != 4 + 8ull * n) {
		free(buf);
		return fail(run, -RY_E_INVALID, "peer sent %s mid-test", msg_name(type));
	}
	for (q = 0; q < n; q++)
		run->peer_done[q] = get64((uint8_t *)buf + 4 + 8 * q);
	run->have_peer_done = true;
	free(buf);
	return 0;
}

static int send_done(struct run *run, const uint64_t *counts)
{
	uint8_t buf[4 + 8 * BENCH_QPS_MAX];
	uint32_t q;

	put32(buf, run->p.qps);
	for (q = 0; q < run->p.qps; q++)
		put64(buf + 4 + 8 * q, counts[q]);
	return msg_send(run, MSG_DONE, buf, 4 + 8ull * run->p.qps);
}

/* Wait for the peer's DONE (blocking, cancel-aware). */
static int wait_peer_done(struct run *run)
{
	int64_t end = util_now_mono_ms() + run->p.io_timeout_ms;
	int r;

	while (!run->have_peer_done) {
		r = check_cancel(run);
		if (r < 0)
			return r;
		if (util_now_mono_ms() >= end)
			return fail(run, -ETIMEDOUT, "peer silent for %u ms", run->p.io_timeout_ms);
		r = wait_fd(run->ctrl_fd, POLLIN, SLICE_MS);
		if (r < 0 && r != -ETIMEDOUT)
			return fail(run, r, "poll: %s", ry_strerror(r));
		r = ctrl_poll(run);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The data path failed with r: the peer may have said why on the control connection (data
 * mismatch, cancel...) before it closed; that reason wins over ours. */
static int peer_reason(struct run *run, int r)
{
	uint32_t type;
	char *buf;
	size_t len;
	int r2;

	if (run->err[0] || wait_fd(run->ctrl_fd, POLLIN, 1000) < 0)
		return r;
	r2 = msg_recv(run, 1000, &type, &buf, &len);
	if (r2 < 0 && run->peer_failed)
		return r2;
	if (r2 == 0)
		free(buf);
	run->err[0] = '\0';
	return r;
}

static int barrier(struct run *run)
{
	uint8_t b[4];
	char *buf;
	size_t len;
	int r;

	put32(b, run->step_no);
	r = msg_send(run, MSG_READY, b, sizeof(b));
	if (r < 0)
		return r;
	r = msg_expect(run, MSG_READY, (int)run->p.io_timeout_ms, &buf, &len);
	if (r < 0)
		return r;
	if (len != 4 || get32((uint8_t *)buf) != run->step_no)
		r = fail(run, -RY_E_INVALID, "peer is at another step");
	free(buf);
	return r;
}

/* ---- latency ------------------------------------------------------------------------------- */

static json_t *lat_json(const struct stats_lat_summary *s)
{
	return json_pack("{sI sf sf sf sf sf sf sf sf sb}", "count", (json_int_t)s->count, "min",
			 s->min, "p50", s->p50, "p90", s->p90, "p99", s->p99, "p99_9", s->p999,
			 "max", s->max, "mean", s->mean, "stddev", s->stddev, "approximate",
			 s->approximate);
}

static int run_lat(struct run *run, const struct bench_step *s, json_t **ret_local)
{
	bool client = run->role == BENCH_CLIENT;
	bool passive = !client && run->p.op == BENCH_OP_READ;
	bool ticks = ticks_on(run->o);
	uint64_t total = run->p.iters ? run->p.warmup + run->p.iters : UINT64_MAX;
	uint64_t i = 0, t0 = 0, t1, start, end_ns = 0, last_io, checked = 0, k0 = 0, k1 = 0,
		 k_start;
	struct stats_lat *lat = NULL;
	struct stats_lat_summary sum;
	int r;

	if (run->p.duration_s)
		end_ns = (uint64_t)run->p.duration_s * 1000000000ull;
	r = stats_lat_new(0, &lat);
	if (r < 0)
		return fail(run, r, "out of memory");
	r = now_ns(run, &start);
	if (r < 0)
		goto out;
	k_start = ticks ? tick_read() : 0;
	last_io = start;
	if (passive) {
		r = wait_peer_done(run);
		goto report;
	}
	while (i < total) {
		if (client && end_ns &&
		    (ticks ? ticks_to_ns(tick_read() - k_start) : run->last_ns - start) >= end_ns)
			break;
		if (!client && run->have_peer_done && i >= run->peer_done[0])
			break;
		if ((i & 1023) == 0 && (r = check_cancel(run)) < 0)
			goto out;
		if (run->p.check_data && run->p.op != BENCH_OP_READ &&
		    (r = fill_tx(run, s, 0, i, i)) < 0)
			goto out;
		/* Only the client measures; nothing but the round trip between the readings. */
		if (ticks)
			k0 = tick_read();
		else if (client && (r = now_ns(run, &t0)) < 0)
			goto out;
		r = run->t->lat_iter(run->st, i, client ? (int)run->p.io_timeout_ms : SLICE_MS);
		if (ticks)
			k1 = tick_read();
		if (r == -EAGAIN && !client) {
			/* No ping yet: is the client done (duration mode), gone or silent? */
			r = ctrl_poll(run);
			if (r < 0)
				goto out;
			if ((r = check_cancel(run)) < 0)
				goto out;
			if ((r = now_ns(run, &t1)) < 0)
				goto out;
			if (t1 - last_io > (uint64_t)run->p.io_timeout_ms * 1000000ull) {
				r = fail(run, -ETIMEDOUT, "client silent for %u ms",
					 run->p.io_timeout_ms);
				goto out;
			}
			continue;
		}
		if (r < 0) {
			r = peer_reason(run, r);
			r = fail(run, r, "latency iteration %" PRIu64 ": %s", i,
				 r == -ECONNRESET || r == -EPIPE ? "peer lost" : ry_strerror(r));
			goto out;
		}
		if (ticks) {
			if (k1 < k0 || k1 < k_start) {
				r = fail(run, -RY_E_CLOCK, "the time-stamp counter went back");
				goto out;
			}
			t1 = start + ticks_to_ns(k1 - k_start);
			t0 = t1 - ticks_to_ns(k1 - k0);
		} else if ((r = now_ns(run, &t1)) < 0) {
			goto out;
		}
		last_io = t1;
		if (run->p.check_data) {
			/* READ: the peer's slot holds its static pattern (seeded by slot). */
			r = check_rx(run, s, 0, i, run->p.op == BENCH_OP_READ ? i % s->slots : i);
			if (r < 0)
				goto out;
			checked++;
		}
		if (client && i >= run->p.warmup) {
			r = stats_lat_add(lat, t1 - t0);
			if (r == -RY_E_CLOCK) {
				r = fail(run, r, "clock did not advance over a round trip");
				goto out;
			}
			if (r < 0)
				goto out;
		}
		i++;
	}
	if (client) {
		uint64_t done = i;

		r = send_done(run, &done);
	} else {
		r = wait_peer_done(run);
		if (r == 0 && run->peer_done[0] != i)
			r = fail(run, -RY_E_INVALID,
				 "client ran %" PRIu64 " iterations, we %" PRIu64,
				 run->peer_done[0], i);
	}
report:
	if (r < 0)
		goto out;
	*ret_local = json_pack("{sI}", "checked", (json_int_t)checked);
	if (client && stats_lat_count(lat) > 0) {
		/* Ping-pong: one-way = RTT/2 (as perftest and sockperf); read: full round trip. */
		r = stats_lat_summary(lat, run->p.op == BENCH_OP_READ ? 1e-3 : 0.5e-3, &sum);
		if (r < 0)
			goto out;
		json_object_set_new(*ret_local, "latency", lat_json(&sum));
	} else if (client) {
		r = fail(run, -ENODATA, "no latency sample measured");
	}
out:
	stats_lat_free(lat);
	return r;
}

/* ---- bandwidth ----------------------------------------------------------------------------- */

/* One measured direction's accounting. */
struct meter {
	bool on;
	uint64_t warm_total;  /* completions before the measurement starts (iters mode) */
	uint64_t seen;	      /* completions so far */
	uint64_t t0, t_last;  /* measurement start, last completion in it */
	uint64_t bytes, msgs; /* inside the measurement */
	bool started;
	uint64_t next_mark, mark_bytes, mark_msgs, mark_t;
	struct stats_series *series;
};

static void meter_count(struct run *run, struct meter *m, uint64_t now, uint64_t n, uint64_t size,
			uint64_t win_start, uint64_t win_end)
{
	uint64_t iv = (uint64_t)run->p.interval_ms * 1000000ull;

	m->seen += n;
	if (run->p.iters) {
		if (!m->started && m->seen >= m->warm_total) {
			/* The completion that ends the warm-up starts the clock; its own
			 * messages are part of the warm-up. */
			uint64_t extra = m->seen - m->warm_total;

			m->started = true;
			m->t0 = now;
			m->next_mark = now + iv;
			m->mark_t = now;
			m->bytes = extra * size;
			m->msgs = extra;
			m->t_last = now;
			return;
		}
		if (!m->started)
			return;
	} else {
		if (now < win_start || now > win_end)
			return;
		if (!m->started) {
			m->started = true;
			m->t0 = win_start;
			m->next_mark = win_start + iv;
			m->mark_t = win_start;
		}
	}
	m->bytes += n * size;
	m->msgs += n;
	m->t_last = now;
	while (now >= m->next_mark) {
		if (stats_series_add(m->series, m->next_mark - m->t0, m->next_mark - m->mark_t,
				     m->bytes - m->mark_bytes, m->msgs - m->mark_msgs) < 0)
			break; /* cannot happen: marks are interval_ms apart */
		m->mark_bytes = m->bytes;
		m->mark_msgs = m->msgs;
		m->mark_t = m->next_mark;
		m->next_mark += iv;
	}
}

static int meter_json(struct run *run, const struct meter *m, uint64_t win_end, json_t **ret)
{
	struct stats_bw bw;
	uint64_t ns;
	json_t *j, *iv;
	size_t i;
	int r;

	ns = run->p.iters ? m->t_last - m->t0 : win_end - m->t0;
	if (!m->started)
		return fail(run, -ENODATA, "no message completed in the measurement window");
	r = stats_bw_compute(m->bytes, m->msgs, ns, &bw);
	if (r < 0)
		return fail(run, r, "clock did not advance over the measurement");
	iv = json_array();
	for (i = 0; i < m->series->n; i++)
		json_array_append_new(iv, json_pack("{sf sf sf}", "t_s", m->series->v[i].t_s,
						    "gbps", m->series->v[i].gbps, "msg_rate",
						    m->series->v[i].msg_rate));
	j = json_pack("{sf sf sf sI sI sf so sb}", "gbps", bw.gbps, "mbps", bw.mbps, "msg_rate",
		      bw.msg_rate, "bytes", (json_int_t)bw.bytes, "msgs", (json_int_t)bw.msgs,
		      "seconds", bw.seconds, "intervals", iv, "intervals_truncated",
		      m->series->truncated);
	if (!j)
		return fail(run, -ENOMEM, "out of memory");
	*ret = j;
	return 0;
}

static int run_bw(struct run *run, const struct bench_step *s, json_t **ret_local)
{
	bool client = run->role == BENCH_CLIENT;
	bool sender = client || run->p.bidir; /* initiator of send/write/read */
	bool receiver = run->p.op == BENCH_OP_SEND && (!client || run->p.bidir);
	bool write_target = run->p.op == BENCH_OP_WRITE && (!client || run->p.bidir);
	uint64_t total = run->p.iters ? run->p.warmup + run->p.iters : UINT64_MAX;
	uint64_t posted[BENCH_QPS_MAX] = {0}, done[BENCH_QPS_MAX] = {0};
	uint64_t rposted[BENCH_QPS_MAX] = {0}, rdone[BENCH_QPS_MAX] = {0};
	uint64_t target[BENCH_QPS_MAX];
	uint64_t start, now, win_start = 0, win_end = 0, last_io, last_ctrl, checked = 0;
	struct meter tx = {0}, rx = {0};
	struct bench_cpu_sample cpu0, cpu1;
	struct bench_cpu_usage cpu;
	uint64_t moved = 0;
	struct bench_cqe cqes[CQE_BATCH];
	bool done_sent = !sender, stop = false, idle = false;
	uint32_t q, qps = run->p.qps;
	json_t *local = NULL, *mj;
	int r, n, k;

	tx.series = calloc(1, sizeof(*tx.series));
	rx.series = calloc(1, sizeof(*rx.series));
	if (!tx.series || !rx.series) {
		r = fail(run, -ENOMEM, "out of memory");
		goto out;
	}
	/* The initiator measures write/read (its completions mean the peer has the data);
	 * the receiver measures send (its completions are the truth; a sender's only say the
	 * data left). */
	tx.on = sender && run->p.op != BENCH_OP_SEND;
	rx.on = receiver;
	tx.warm_total = rx.warm_total = (uint64_t)run->p.warmup * qps;
	for (q = 0; q < qps; q++)
		target[q] = total;
	r = now_ns(run, &start);
	if (r < 0)
		goto out;
	/* The CPU cost covers the whole data phase, warm-up and margins included, against every
	 * byte moved in it (not only the measured ones): the same span on both counts. */
	bench_cpu_sample_take(&cpu0, NULL);
	last_io = last_ctrl = start;
	if (run->p.iters && run->p.warmup == 0) {
		/* No warm-up: the measurement starts with the data phase. */
		tx.started = rx.started = true;
		tx.t0 = rx.t0 = tx.mark_t = rx.mark_t = tx.t_last = rx.t_last = start;
		tx.next_mark = rx.next_mark = start + (uint64_t)run->p.interval_ms * 1000000ull;
	}
	if (run->p.duration_s) {
		win_start = start + (uint64_t)run->p.margin_ms * 1000000ull;
		win_end = start + (uint64_t)run->p.duration_s * 1000000000ull -
			  (uint64_t)run->p.margin_ms * 1000000ull;
	}
	for (;;) {
		bool progress = false, recv_left;

		if ((r = now_ns(run, &now)) < 0)
			goto out;
		if (sender && !stop && run->p.duration_s &&
		    now - start >= (uint64_t)run->p.duration_s * 1000000000ull) {
			stop = true;
			for (q = 0; q < qps; q++)
				target[q] = posted[q];
		}
		for (q = 0; sender && q < qps; q++)
			while (posted[q] < target[q] && posted[q] - done[q] < s->window) {
				if (run->p.check_data && run->p.op != BENCH_OP_READ &&
				    (r = fill_tx(run, s, q, posted[q], posted[q])) < 0)
					goto out;
				r = run->t->bw_post_send(run->st, q, posted[q]);
				if (r < 0)
					goto io_fail;
				posted[q]++;
			}
		for (q = 0; receiver && q < qps; q++) {
			uint64_t want = run->have_peer_done ? run->peer_done[q]
					: run->p.iters	    ? total
							    : UINT64_MAX;

			while (rposted[q] < want && rposted[q] - rdone[q] < s->window) {
				r = run->t->bw_post_recv(run->st, q, rposted[q]);
				if (r < 0)
					goto io_fail;
				rposted[q]++;
			}
		}
		n = run->t->bw_poll(run->st, cqes, CQE_BATCH, idle ? 1 : 0);
		if (n < 0) {
			r = n;
			goto io_fail;
		}
		if (n > 0) {
			if ((r = now_ns(run, &now)) < 0)
				goto out;
			last_io = now;
			progress = true;
		}
		for (k = 0; k < n; k++) {
			const struct bench_cqe *c = &cqes[k];

			q = c->qp;
			if (q >= qps) {
				r = fail(run, -EIO, "transport reported QP %u of %u", q, qps);
				goto out;
			}
			if (c->kind == BENCH_CQE_SEND) {
				if (c->msg != done[q]) {
					r = fail(run, -EIO, "completion out of order on QP %u", q);
					goto out;
				}
				if (run->p.check_data && run->p.op == BENCH_OP_READ) {
					if ((r = check_rx(run, s, q, c->msg, c->msg % s->slots)) <
					    0)
						goto out;
					checked++;
				}
				done[q]++;
				if (tx.on)
					meter_count(run, &tx, now, 1, s->size, win_start, win_end);
			} else {
				if (!receiver || c->msg != rdone[q]) {
					r = fail(run, -EIO, "unexpected receive on QP %u", q);
					goto out;
				}
				if (run->p.check_data) {
					if ((r = check_rx(run, s, q, c->msg, c->msg)) < 0)
						goto out;
					checked++;
				}
				rdone[q]++;
				meter_count(run, &rx, now, 1, s->size, win_start, win_end);
			}
		}
		recv_left = false;
		for (q = 0; receiver && q < qps; q++)
			if (rdone[q] < (run->have_peer_done ? run->peer_done[q]
					: run->p.iters	    ? total
							    : UINT64_MAX))
				recv_left = true;
		if (!done_sent) {
			bool all = true;

			for (q = 0; q < qps && all; q++)
				all = posted[q] == target[q] && done[q] == posted[q];
			if (all) {
				if ((r = send_done(run, done)) < 0)
					goto out;
				done_sent = true;
			}
		}
		/* Before looking at the control socket: once we are done, the next message may
		 * already be the peer's report of this step. */
		if (done_sent && !recv_left)
			break;
		if (!progress || now - last_ctrl >= CTRL_EVERY_NS) {
			last_ctrl = now;
			if ((r = ctrl_poll(run)) < 0)
				goto out;
			if ((r = check_cancel(run)) < 0)
				goto out;
		}
		if (!progress && now - last_io > (uint64_t)run->p.io_timeout_ms * 1000000ull) {
			r = fail(run, -ETIMEDOUT, "no completion for %u ms (peer stalled or lost)",
				 run->p.io_timeout_ms);
			goto out;
		}
		idle = !progress;
	}
	/* A sending peer ends with DONE: wait for it, so the control channel stays in step. */
	if ((!client || run->p.bidir) && (r = wait_peer_done(run)) < 0)
		goto out;
	bench_cpu_sample_take(&cpu1, NULL);
	for (q = 0; q < qps; q++) /* what this side initiated, and what the peer did */
		moved += done[q] + (run->have_peer_done ? run->peer_done[q] : 0);
	bench_cpu_usage_compute(&cpu0, &cpu1, moved * s->size, &cpu);
	if (write_target && run->p.check_data) {
		/* Writes leave no completion here: check the last message of every slot. */
		for (q = 0; q < qps; q++) {
			uint64_t cnt = run->peer_done[q], m;
			uint32_t sl;

			for (sl = 0; sl < s->slots && sl < cnt; sl++) {
				m = cnt - 1 - ((cnt - 1 - sl) % s->slots);
				if ((r = check_rx(run, s, q, m, m)) < 0)
					goto out;
				checked++;
			}
		}
	}
	local = json_pack("{sI}", "checked", (json_int_t)checked);
	if (!local || json_object_set_new(local, "cpu", bench_cpu_usage_json(&cpu)) < 0) {
		r = fail(run, -ENOMEM, "out of memory");
		goto out;
	}
	if (tx.on) {
		if ((r = meter_json(run, &tx, win_end, &mj)) < 0)
			goto out;
		json_object_set_new(local, "tx", mj);
	}
	if (rx.on) {
		if ((r = meter_json(run, &rx, win_end, &mj)) < 0)
			goto out;
		json_object_set_new(local, "rx", mj);
	}
	*ret_local = local;
	local = NULL;
	r = 0;
	goto out;
io_fail:
	r = peer_reason(run, r);
	r = fail(run, r, "data transfer: %s",
		 r == -ECONNRESET || r == -EPIPE || r == -EIO ? "peer lost" : ry_strerror(r));
out:
	json_decref(local);
	free(tx.series);
	free(rx.series);
	return r;
}

/* ---- one run ------------------------------------------------------------------------------- */

static json_t *params_json(const struct bench_params *p)
{
	json_t *j = json_pack("{ss ss ss sb sI sI si si sb sb sb si si si ss ss si}", "kind",
			      bench_kind_name(p->kind), "op", bench_op_name(p->op), "transport",
			      p->transport, "sweep", p->sweep, "size", (json_int_t)p->size, "iters",
			      (json_int_t)p->iters, "duration_s", (int)p->duration_s, "qps",
			      (int)p->qps, "bidir", p->bidir, "rdma_cm", p->rdma_cm, "check_data",
			      p->check_data, "depth", (int)p->depth, "warmup", (int)p->warmup,
			      "margin_ms", (int)p->margin_ms, "mem", p->mem, "device", p->device,
			      "gid_index", (int)p->gid_index);

	if (j) {
		json_object_set_new(j, "interval_ms", json_integer(p->interval_ms));
		json_object_set_new(j, "ib_port", json_integer(p->ib_port));
		if (p->sweep)
			json_object_set_new(j, "sweep_max", json_integer((json_int_t)p->sweep_max));
		if (strcmp(p->mem, "host") != 0)
			json_object_set_new(j, "gpudirect",
					    json_string(bench_gpudirect_name(p->gpudirect)));
	}
	return j;
}

static json_t *env_json(struct run *run)
{
	struct bench_env env;
	char host[256] = "";
	json_t *j;

	memset(&env, 0, sizeof(env));
	env.gid_index = -1;
	if (run->t->env && run->st)
		run->t->env(run->st, &env);
	(void)gethostname(host, sizeof(host) - 1);
	j = json_pack("{ss ss ss si si ss si ss sf si}", "host", host, "transport", run->t->name,
		      "device", env.device, "port", (int)env.port, "mtu", (int)env.mtu, "gid",
		      env.gid, "gid_index", (int)env.gid_index, "link_layer", env.link_layer,
		      "link_gbps", env.link_gbps, "inline_size", (int)env.inline_size);
	if (j) {
		json_object_set_new(j, "mem", json_string(run->mem.spec));
		json_object_set_new(j, "traffic_class", json_integer(env.traffic_class));
		json_object_set_new(j, "service_level", json_integer(env.service_level));
	}
	if (j && run->mem.ops && run->mem.ops->device) {
		struct bench_mem_env me = {.index = -1};

		if (run->mem.ops->env)
			run->mem.ops->env(run->mem.st, &me);
		/* What moved the data to and from the GPU: perftest's "using dma-buf" line. */
		json_object_set_new(j, "mem_path",
				    json_string(env.mem_path[0] ? env.mem_path : "?"));
		if (env.mem_note[0])
			json_object_set_new(j, "mem_note", json_string(env.mem_note));
		json_object_set_new(j, "gpu",
				    json_pack("{si ss ss ss}", "index", (int)me.index, "name",
					      me.name, "bus_id", me.bus_id, "uuid", me.uuid));
	}
	return j;
}

/* Merge both sides' step measurements into the step result (client). */
static json_t *step_result(struct run *run, uint64_t size, json_t *mine, json_t *peer)
{
	json_t *res = json_pack("{sI}", "size", (json_int_t)size);
	json_int_t checked = json_integer_value(json_object_get(mine, "checked")) +
			     json_integer_value(json_object_get(peer, "checked"));
	json_t *fwd = NULL, *rev = NULL;

	if (!res)
		return NULL;
	if (run->p.kind == BENCH_LAT) {
		json_object_set(res, "latency", json_object_get(mine, "latency"));
	} else {
		/* Forward = client's data towards the server (read: the server's data the
		 * client pulls); measured where the completions mean delivery. */
		if (run->p.op == BENCH_OP_SEND) {
			fwd = json_object_get(peer, "rx");
			rev = json_object_get(mine, "rx");
		} else {
			fwd = json_object_get(mine, "tx");
			rev = json_object_get(peer, "tx");
		}
		if (fwd) {
			json_object_set(res, "bw", fwd);
			json_object_set_new(res, "bw_measured_by",
					    json_string(run->p.op == BENCH_OP_SEND
								? "server (receiver)"
								: "client (initiator)"));
		}
		if (run->p.bidir && rev) {
			json_object_set(res, "bw_reverse", rev);
			json_object_set_new(
				res, "bw_total_gbps",
				json_real(json_real_value(json_object_get(fwd, "gbps")) +
					  json_real_value(json_object_get(rev, "gbps"))));
		}
	}
	json_object_set_new(res, "data_check",
			    json_pack("{sb sI}", "enabled", run->p.check_data, "checked", checked));
	/* What each side's step cost it (bw only): docs/bench.md, "CPU cost". */
	if (json_object_get(mine, "cpu") || json_object_get(peer, "cpu"))
		json_object_set_new(res, "cpu",
				    json_pack("{s:O? s:O?}", "client", json_object_get(mine, "cpu"),
					      "server", json_object_get(peer, "cpu")));
	return res;
}

static int run_steps(struct run *run, json_t *results)
{
	uint32_t i, n = step_count(&run->p);
	json_t *mine = NULL, *peer = NULL, *res;
	struct bench_step s;
	char *buf;
	int r = 0;

	for (i = 0; i < n; i++) {
		run->step_no = i;
		run->have_peer_done = false;
		s.size = step_size(&run->p, i);
		s.slots = step_slots(&run->p, s.size);
		s.window = run->p.check_data && s.slots < run->p.depth ? s.slots : run->p.depth;
		if (run->p.kind == BENCH_LAT)
			s.window = 1;
		/* Read targets hold a static pattern (seeded by slot) for the initiator. */
		if (run->p.check_data && run->p.op == BENCH_OP_READ &&
		    (run->role == BENCH_SERVER || run->p.bidir)) {
			uint32_t q, sl;

			for (q = 0; q < run->p.qps && r == 0; q++)
				for (sl = 0; sl < s.slots && r == 0; sl++)
					r = fill_tx(run, &s, q, sl, sl);
			if (r < 0)
				break;
		}
		if (run->t->prepare && (r = run->t->prepare(run->st, &s)) < 0) {
			r = fail(run, r, "preparing size %" PRIu64 ": %s", s.size, ry_strerror(r));
			break;
		}
		if ((r = barrier(run)) < 0)
			break;
		r = run->p.kind == BENCH_LAT ? run_lat(run, &s, &mine) : run_bw(run, &s, &mine);
		if (r < 0)
			break;
		if (run->role == BENCH_SERVER) {
			r = msg_send_json(run, MSG_STEP, mine);
		} else {
			r = msg_expect(run, MSG_STEP, (int)run->p.io_timeout_ms, &buf, NULL);
			if (r < 0)
				break;
			peer = msg_json(run, buf);
			free(buf);
			if (!peer) {
				r = -RY_E_INVALID;
				break;
			}
			res = step_result(run, s.size, mine, peer);
			if (!res) {
				r = fail(run, -ENOMEM, "out of memory");
				break;
			}
			json_array_append_new(results, res);
		}
		json_decref(mine);
		json_decref(peer);
		mine = peer = NULL;
		if (r < 0)
			break;
	}
	json_decref(mine);
	json_decref(peer);
	return r;
}

static int run_main(struct run *run, const char *peer, json_t **ret_result)
{
	json_t *doc = NULL, *results = NULL, *env_peer = NULL, *env = NULL;
	char *buf = NULL;
	uint16_t port = 0;
	int r;

	if (run->role == BENCH_SERVER) {
		if ((r = do_listen(run, &port)) < 0)
			return r;
		if (run->o->on_ready)
			run->o->on_ready(run->o->ud, port);
		if ((r = do_accept(run)) < 0)
			return r;
		if ((r = negotiate_server(run)) < 0)
			return r;
	} else {
		if ((r = do_connect(run, peer)) < 0)
			return r;
		if ((r = negotiate_client(run)) < 0)
			return r;
	}
	/* After negotiation: the peer hears why we give up (no GPU, ...). */
	if ((r = bench_mem_open(run->p.mem, &run->mem, run->err)) < 0)
		return fail(run, r, "%s", ry_strerror(r));
	if ((r = bufs_alloc(run)) < 0)
		return r;
	run->ctx.params = &run->p;
	run->ctx.role = run->role;
	run->ctx.ctrl_fd = run->ctrl_fd;
	run->ctx.listen_fd = run->role == BENCH_SERVER ? run->listen_fd : -1;
	run->ctx.mem = &run->mem;
	run->ctx.bufs = run->bufs;
	run->ctx.timeout_ms = (int)run->p.connect_timeout_ms;
	run->ctx.err = run->err;
	r = run->t->open(&run->ctx, &run->st);
	if (r < 0) {
		run->st = NULL;
		return fail(run, r, "%s transport: %s", run->t->name, ry_strerror(r));
	}
	results = json_array();
	if (!results)
		return fail(run, -ENOMEM, "out of memory");
	if ((r = run_steps(run, results)) < 0)
		goto out;
	env = env_json(run);
	if (run->role == BENCH_SERVER) {
		if ((r = msg_send_json(run, MSG_ENV, env)) < 0)
			goto out;
		if ((r = msg_expect(run, MSG_RESULT, (int)run->p.io_timeout_ms, &buf, NULL)) < 0)
			goto out;
		doc = msg_json(run, buf);
		if (!doc) {
			r = -RY_E_INVALID;
			goto out;
		}
	} else {
		if ((r = msg_expect(run, MSG_ENV, (int)run->p.io_timeout_ms, &buf, NULL)) < 0)
			goto out;
		env_peer = msg_json(run, buf);
		if (!env_peer) {
			r = -RY_E_INVALID;
			goto out;
		}
		doc = json_pack("{si sb ss sO s{sOsO} sO}", "version", 1, "ok", true, "tool",
				"railyard-bench", "params", json_null(), "environment", "client",
				env, "server", env_peer, "results", results);
		if (!doc) {
			r = fail(run, -ENOMEM, "out of memory");
			goto out;
		}
		json_object_set_new(doc, "params", params_json(&run->p));
		if (run->p.kind == BENCH_LAT) {
			json_object_set_new(doc, "latency_is",
					    json_string(run->p.op == BENCH_OP_READ
								? "round-trip"
								: "one-way (RTT/2)"));
			json_object_set_new(doc, "latency_unit", json_string("us"));
			json_object_set_new(doc, "latency_clock",
					    json_string(run->o->clock ? "injected"
							: ticks_on(run->o)
								? "tsc"
								: "CLOCK_MONOTONIC_RAW"));
		}
		if ((r = msg_send_json(run, MSG_RESULT, doc)) < 0)
			goto out;
	}
	json_object_set_new(doc, "role",
			    json_string(run->role == BENCH_SERVER ? "server" : "client"));
	*ret_result = doc;
	doc = NULL;
	r = 0;
out:
	free(buf);
	json_decref(doc);
	json_decref(env);
	json_decref(env_peer);
	json_decref(results);
	return r;
}

static int run_any(const struct bench_params *p, enum bench_role role, const char *peer,
		   const struct bench_run_opts *opts, json_t **ret_result)
{
	static const struct bench_run_opts no_opts;
	struct run *run;
	int r;

	run = calloc(1, sizeof(*run));
	if (!run)
		return -ENOMEM;
	run->p = *p;
	run->role = role;
	run->o = opts ? opts : &no_opts;
	run->clock = run->o->clock ? run->o->clock : &bench_clock_monotonic;
	run->ctrl_fd = run->listen_fd = -1;
	r = bench_params_validate(&run->p, run->err, sizeof(run->err));
	if (r < 0)
		goto out;
	if (role == BENCH_CLIENT && (!peer || !peer[0])) {
		r = fail(run, -RY_E_INVALID, "no peer to connect to");
		goto out;
	}
	run->t = bench_transport_find(run->p.transport);
	r = run_main(run, peer, ret_result);
	if (r < 0)
		send_error(run, r);
out:
	if (r < 0)
		log_debug("bench: %s failed: %s", role == BENCH_SERVER ? "server" : "client",
			  run->err);
	if (r < 0 && run->o->err && run->o->errlen)
		snprintf(run->o->err, run->o->errlen, "%s",
			 run->err[0] ? run->err : ry_strerror(r));
	if (run->t && run->st)
		run->t->close(run->st);
	bufs_free(run);
	bench_mem_close(&run->mem);
	if (r < 0 && run->ctrl_fd >= 0)
		ctrl_drain(run);
	if (run->ctrl_fd >= 0)
		close(run->ctrl_fd);
	if (run->listen_fd >= 0)
		close(run->listen_fd);
	free(run);
	return r;
}

int bench_run_server(const struct bench_params *p, const struct bench_run_opts *opts,
		     json_t **ret_result)
{
	return run_any(p, BENCH_SERVER, NULL, opts, ret_result);
}

int bench_run_client(const struct bench_params *p, const char *peer,
		     const struct bench_run_opts *opts, json_t **ret_result)
{
	return run_any(p, BENCH_CLIENT, peer, opts, ret_result);
}

json_t *bench_result_error(const struct bench_params *p, enum bench_role role, int r,
			   const char *msg)
{
	json_t *j = json_pack("{si sb ss ss s{si ss}}", "version", 1, "ok", false, "tool",
			      "railyard-bench", "role", role == BENCH_SERVER ? "server" : "client",
			      "error", "code", r, "message", msg ? msg : ry_strerror(r));

	if (j && p)
		json_object_set_new(j, "params", params_json(p));
	return j;
}
