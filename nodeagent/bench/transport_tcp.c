/* The "tcp" benchmark transport: one TCP connection per QP with TCP_NODELAY, accepted on the
 * engine's control port (tagged with the run's cookie), latency as a ping-pong of S bytes and
 * bandwidth as a stream of S-byte messages written and read straight from the engine's slots.
 * Device memory (a GPU's) is staged: each message is copied to a pinned host buffer of the same
 * layout before it is written and from it once it is read, inside what is measured. */
#include "nodeagent/bench/bench.h"

#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define TCP_HELLO_MAGIC 0x52594454u /* "RYDT" */
#define TCP_HELLO_LEN	16	    /* magic, qp, cookie (big-endian) */
#define TCP_WAIT_MS	100	    /* SO_RCVTIMEO/SO_SNDTIMEO: bound of one blocking call */

struct tcp_qp {
	int fd;
	uint64_t tx_queued, tx_done; /* messages posted / fully written */
	size_t tx_off;		     /* bytes of message tx_done already written */
	uint64_t rx_allowed, rx_done;
	size_t rx_off;
	size_t lat_off; /* lat: bytes of the current ping/pong received (server, across EAGAIN) */
	bool lat_sent;	/* lat server: pong of the current iteration sent */
};

struct tcp_state {
	const struct bench_ctx *ctx;
	struct bench_step step;
	uint32_t nqp;
	struct tcp_qp *qps;
	struct pollfd *pfds;
	struct bench_qp_buf *stage; /* device memory: pinned host mirrors of ctx->bufs; else NULL */
};

/* Where the socket reads and writes QP q's slots: the engine's buffers, or their staging. */
static uint8_t *tx_of(const struct tcp_state *st, uint32_t q)
{
	return st->stage ? st->stage[q].tx : st->ctx->bufs[q].tx;
}

static uint8_t *rx_of(const struct tcp_state *st, uint32_t q)
{
	return st->stage ? st->stage[q].rx : st->ctx->bufs[q].rx;
}

/* Staging: device tx slot -> host before a write; host rx slot -> device once it is read. */
static int stage_fail(const struct tcp_state *st, int r, const char *dir)
{
	if (st->ctx->err[0] == '\0')
		snprintf(st->ctx->err, BENCH_ERR_LEN, "tcp: staging copy %s %s memory failed: %s",
			 dir, st->ctx->mem->spec, ry_strerror(r));
	return r;
}

static int stage_out(const struct tcp_state *st, uint32_t q, size_t off, size_t len)
{
	const struct bench_mem *m = st->ctx->mem;
	int r;

	if (!st->stage)
		return 0;
	r = m->ops->to_host(m->st, (uint8_t *)st->stage[q].tx + off,
			    (const uint8_t *)st->ctx->bufs[q].tx + off, len);
	return r < 0 ? stage_fail(st, r, "from") : 0;
}

static int stage_in(const struct tcp_state *st, uint32_t q, size_t off, size_t len)
{
	const struct bench_mem *m = st->ctx->mem;
	int r;

	if (!st->stage)
		return 0;
	r = m->ops->from_host(m->st, (uint8_t *)st->ctx->bufs[q].rx + off,
			      (const uint8_t *)st->stage[q].rx + off, len);
	return r < 0 ? stage_fail(st, r, "to") : 0;
}

static int tcp_validate(struct bench_params *p, char *err)
{
	return 0;
}

static void tcp_close(void *arg)
{
	struct tcp_state *st = arg;
	uint32_t q;

	if (!st)
		return;
	for (q = 0; q < st->nqp; q++)
		if (st->qps[q].fd >= 0)
			close(st->qps[q].fd);
	for (q = 0; st->stage && q < st->nqp; q++) {
		const struct bench_mem *m = st->ctx->mem;

		m->ops->staging_free(m->st, st->stage[q].tx, st->stage[q].len);
		m->ops->staging_free(m->st, st->stage[q].rx, st->stage[q].len);
	}
	free(st->stage);
	free(st->qps);
	free(st->pfds);
	free(st);
}

static void sock_setup(int fd)
{
	struct timeval tv = {.tv_sec = 0, .tv_usec = TCP_WAIT_MS * 1000};
	int one = 1;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
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

static int connect_data(struct tcp_state *st, uint32_t q, int64_t end)
{
	const struct bench_ctx *ctx = st->ctx;
	uint8_t hello[TCP_HELLO_LEN];
	struct pollfd pfd;
	socklen_t sl = sizeof(int);
	int fd, r, soerr = 0;

	fd = socket(ctx->peer_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)&ctx->peer_addr, ctx->peer_addrlen) < 0) {
		if (errno != EINPROGRESS) {
			r = -errno;
			goto fail;
		}
		pfd.fd = fd;
		pfd.events = POLLOUT;
		r = poll(&pfd, 1, (int)(end > util_now_mono_ms() ? end - util_now_mono_ms() : 0));
		if (r <= 0) {
			r = r == 0 ? -ETIMEDOUT : -errno;
			goto fail;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
			r = -(soerr ? soerr : errno);
			goto fail;
		}
	}
	/* Blocking from here on; every call is bounded by TCP_WAIT_MS. */
	if (fcntl(fd, F_SETFL, 0) < 0) {
		r = -errno;
		goto fail;
	}
	sock_setup(fd);
	put32(hello, TCP_HELLO_MAGIC);
	put32(hello + 4, q);
	put32(hello + 8, (uint32_t)(ctx->cookie >> 32));
	put32(hello + 12, (uint32_t)ctx->cookie);
	r = bench_ctrl_send(fd, hello, sizeof(hello), ctx->timeout_ms);
	if (r < 0)
		goto fail;
	st->qps[q].fd = fd;
	return 0;
fail:
	close(fd);
	return r;
}

/* Accept the client's data connections; strays (wrong magic or cookie) are dropped. */
static int accept_data(struct tcp_state *st, int64_t end)
{
	const struct bench_ctx *ctx = st->ctx;
	uint8_t hello[TCP_HELLO_LEN];
	uint32_t got = 0, q;
	struct pollfd pfd = {.fd = ctx->listen_fd, .events = POLLIN};
	int fd, r;

	while (got < st->nqp) {
		int64_t left = end - util_now_mono_ms();

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)left);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0)
			continue;
		fd = accept4(ctx->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
				continue;
			return -errno;
		}
		sock_setup(fd);
		r = bench_ctrl_recv(fd, hello, sizeof(hello), (int)(left < 1000 ? left : 1000));
		q = get32(hello + 4);
		if (r < 0 || get32(hello) != TCP_HELLO_MAGIC || q >= st->nqp ||
		    ((uint64_t)get32(hello + 8) << 32 | get32(hello + 12)) != ctx->cookie ||
		    st->qps[q].fd >= 0) {
			log_debug("bench tcp: dropping a stray data connection");
			close(fd);
			continue;
		}
		st->qps[q].fd = fd;
		got++;
	}
	return 0;
}

static int tcp_open(const struct bench_ctx *ctx, void **ret_st)
{
	int64_t end = util_now_mono_ms() + ctx->timeout_ms;
	struct tcp_state *st;
	uint32_t q;
	int r;

	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->ctx = ctx;
	st->nqp = ctx->params->qps;
	st->qps = calloc(st->nqp, sizeof(*st->qps));
	st->pfds = calloc(st->nqp, sizeof(*st->pfds));
	if (!st->qps || !st->pfds) {
		r = -ENOMEM;
		goto fail;
	}
	for (q = 0; q < st->nqp; q++)
		st->qps[q].fd = -1;
	if (ctx->mem->ops->device) {
		const struct bench_mem *m = ctx->mem;

		st->stage = calloc(st->nqp, sizeof(*st->stage));
		if (!st->stage) {
			r = -ENOMEM;
			goto fail;
		}
		for (q = 0; q < st->nqp; q++) {
			st->stage[q].len = ctx->bufs[q].len;
			r = m->ops->staging_alloc(m->st, st->stage[q].len, &st->stage[q].tx);
			if (r == 0)
				r = m->ops->staging_alloc(m->st, st->stage[q].len,
							  &st->stage[q].rx);
			if (r < 0) {
				snprintf(ctx->err, BENCH_ERR_LEN,
					 "tcp: cannot allocate 2 x %zu bytes of pinned host memory "
					 "to stage %s memory: %s",
					 st->stage[q].len, m->spec, ry_strerror(r));
				goto fail;
			}
		}
	}
	if (ctx->role == BENCH_SERVER) {
		r = accept_data(st, end);
		if (r < 0)
			snprintf(ctx->err, BENCH_ERR_LEN, "tcp: client's data connections: %s",
				 ry_strerror(r));
	} else {
		for (q = 0, r = 0; q < st->nqp && r == 0; q++)
			r = connect_data(st, q, end);
		if (r < 0)
			snprintf(ctx->err, BENCH_ERR_LEN, "tcp: data connection to the server: %s",
				 ry_strerror(r));
	}
	if (r < 0)
		goto fail;
	*ret_st = st;
	return 0;
fail:
	tcp_close(st);
	return r;
}

static void tcp_env(void *arg, struct bench_env *ret_env)
{
	struct tcp_state *st = arg;
	int mss = 0;
	socklen_t sl = sizeof(mss);

	snprintf(ret_env->link_layer, sizeof(ret_env->link_layer), "tcp");
	if (st->stage)
		snprintf(ret_env->mem_path, sizeof(ret_env->mem_path), "staged");
	if (st->nqp && getsockopt(st->qps[0].fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &sl) == 0)
		ret_env->mtu = (uint32_t)mss; /* what TCP segments carry */
}

static int tcp_prepare(void *arg, const struct bench_step *step)
{
	struct tcp_state *st = arg;
	uint32_t q;

	st->step = *step;
	for (q = 0; q < st->nqp; q++) {
		struct tcp_qp *c = &st->qps[q];

		c->tx_queued = c->tx_done = c->rx_allowed = c->rx_done = 0;
		c->tx_off = c->rx_off = c->lat_off = 0;
		c->lat_sent = false;
	}
	return 0;
}

static int io_errno(void)
{
	return errno == EPIPE ? -ECONNRESET : -errno;
}

/* Write or read exactly len bytes with blocking calls bounded by timeout_ms overall. For a
 * read, *off carries progress across an -EAGAIN return when may_yield and nothing arrived. */
static int lat_send(int fd, const uint8_t *b, size_t len, int timeout_ms)
{
	int64_t end = 0;
	ssize_t w;

	while (len > 0) {
		w = send(fd, b, len, MSG_NOSIGNAL);
		if (w > 0) {
			b += w;
			len -= (size_t)w;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return io_errno();
		if (!end)
			end = util_now_mono_ms() + timeout_ms;
		else if (util_now_mono_ms() >= end)
			return -ETIMEDOUT;
	}
	return 0;
}

static int lat_recv(int fd, uint8_t *b, size_t len, size_t *off, int timeout_ms, bool may_yield)
{
	int64_t end = 0;
	ssize_t n;

	while (*off < len) {
		n = recv(fd, b + *off, len - *off, 0);
		if (n > 0) {
			*off += (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return io_errno();
		if (!end)
			end = util_now_mono_ms() + timeout_ms;
		if (util_now_mono_ms() >= end)
			return may_yield && *off == 0 ? -EAGAIN : -ETIMEDOUT;
	}
	return 0;
}

static int tcp_lat_iter(void *arg, uint64_t iter, int timeout_ms)
{
	struct tcp_state *st = arg;
	struct tcp_qp *c = &st->qps[0];
	size_t size = st->step.size, slot = (size_t)(iter % st->step.slots) * size;
	uint8_t *tx = tx_of(st, 0) + slot;
	uint8_t *rx = rx_of(st, 0) + slot;
	size_t off = 0;
	int r;

	if (st->ctx->role == BENCH_CLIENT) {
		r = stage_out(st, 0, slot, size);
		if (r == 0)
			r = lat_send(c->fd, tx, size, timeout_ms);
		if (r == 0)
			r = lat_recv(c->fd, rx, size, &off, timeout_ms, false);
		if (r == 0)
			r = stage_in(st, 0, slot, size);
		return r;
	}
	r = lat_recv(c->fd, rx, size, &c->lat_off, timeout_ms, true);
	if (r < 0)
		return r;
	c->lat_off = 0;
	r = stage_in(st, 0, slot, size);
	if (r == 0)
		r = stage_out(st, 0, slot, size);
	return r < 0 ? r : lat_send(c->fd, tx, size, timeout_ms);
}

static int tcp_post_send(void *arg, uint32_t qp, uint64_t msg)
{
	struct tcp_state *st = arg;
	int r;

	if (qp >= st->nqp || msg != st->qps[qp].tx_queued)
		return -EINVAL;
	r = stage_out(st, qp, (size_t)(msg % st->step.slots) * st->step.size, st->step.size);
	if (r < 0)
		return r;
	st->qps[qp].tx_queued++;
	return 0;
}

static int tcp_post_recv(void *arg, uint32_t qp, uint64_t msg)
{
	struct tcp_state *st = arg;

	if (qp >= st->nqp || msg != st->qps[qp].rx_allowed)
		return -EINVAL;
	st->qps[qp].rx_allowed++;
	return 0;
}

/* Move bytes on one connection without blocking; append completions up to max. The ring of
 * slots is written/read in contiguous runs, so one system call covers many messages. */
static int progress(struct tcp_state *st, uint32_t q, struct bench_cqe *cqes, uint32_t max,
		    uint32_t *n)
{
	struct tcp_qp *c = &st->qps[q];
	uint64_t size = st->step.size, slots = st->step.slots, k;
	ssize_t w;

	while (c->tx_done < c->tx_queued && *n < max) {
		uint64_t slot = c->tx_done % slots;

		k = c->tx_queued - c->tx_done;
		if (k > slots - slot)
			k = slots - slot;
		if (k > max - *n)
			k = max - *n;
		w = send(c->fd, tx_of(st, q) + slot * size + c->tx_off, k * size - c->tx_off,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				break;
			return io_errno();
		}
		c->tx_off += (size_t)w;
		while (c->tx_off >= size) {
			cqes[(*n)++] = (struct bench_cqe){
				.msg = c->tx_done++, .qp = q, .kind = BENCH_CQE_SEND};
			c->tx_off -= size;
		}
	}
	while (c->rx_done < c->rx_allowed && *n < max) {
		uint64_t slot = c->rx_done % slots;

		k = c->rx_allowed - c->rx_done;
		if (k > slots - slot)
			k = slots - slot;
		if (k > max - *n)
			k = max - *n;
		w = recv(c->fd, rx_of(st, q) + slot * size + c->rx_off, k * size - c->rx_off,
			 MSG_DONTWAIT);
		if (w == 0)
			return -ECONNRESET;
		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				break;
			return io_errno();
		}
		c->rx_off += (size_t)w;
		while (c->rx_off >= size) {
			int r = stage_in(st, q, (size_t)(c->rx_done % slots * size), size);

			if (r < 0)
				return r;
			cqes[(*n)++] = (struct bench_cqe){
				.msg = c->rx_done++, .qp = q, .kind = BENCH_CQE_RECV};
			c->rx_off -= size;
		}
	}
	return 0;
}

static int tcp_bw_poll(void *arg, struct bench_cqe *cqes, uint32_t max, int timeout_ms)
{
	struct tcp_state *st = arg;
	uint32_t n = 0, q, np = 0;
	int r;

	for (q = 0; q < st->nqp; q++)
		if ((r = progress(st, q, cqes, max, &n)) < 0)
			return r;
	if (n > 0 || timeout_ms <= 0)
		return (int)n;
	/* Nothing moved: sleep in poll() until a connection can, instead of spinning. */
	for (q = 0; q < st->nqp; q++) {
		struct tcp_qp *c = &st->qps[q];
		short ev = (short)((c->tx_done < c->tx_queued ? POLLOUT : 0) |
				   (c->rx_done < c->rx_allowed ? POLLIN : 0));

		if (ev) {
			st->pfds[np].fd = c->fd;
			st->pfds[np].events = ev;
			st->pfds[np].revents = 0;
			np++;
		}
	}
	if (np == 0)
		return 0;
	r = poll(st->pfds, np, timeout_ms);
	if (r < 0 && errno != EINTR)
		return -errno;
	for (q = 0; q < st->nqp; q++)
		if ((r = progress(st, q, cqes, max, &n)) < 0)
			return r;
	return (int)n;
}

const struct bench_transport_ops bench_transport_tcp = {
	.name = "tcp",
	.op_mask = 1u << BENCH_OP_SEND,
	.default_op = BENCH_OP_SEND,
	.validate = tcp_validate,
	.open = tcp_open,
	.env = tcp_env,
	.prepare = tcp_prepare,
	.lat_iter = tcp_lat_iter,
	.bw_post_send = tcp_post_send,
	.bw_post_recv = tcp_post_recv,
	.bw_poll = tcp_bw_poll,
	.close = tcp_close,
};
