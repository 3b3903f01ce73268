/* verbs-smoke: exercise nodeagent/bench/verbs on a real (soft-RoCE) device inside a test guest:
 * open, port query, GID choice by type and address, two RC QPs looped back through the device,
 * INIT->RTR->RTS, sends and RDMA writes whose data is checked; or the same between two nodes
 * (--server / --client) with the QP info exchanged over TCP. Exit 0 on success. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"
#include "nodeagent/bench/verbs.h"

#define SMOKE_TIMEOUT_MS 5000

struct smoke_opts {
	const char *dev;
	const char *peer;      /* --client: server's IPv4 address */
	unsigned int tcp_port; /* --server / --client */
	bool server;
	const char *ifname;
	const char *ipv4;
	unsigned int port;
	unsigned int iters;
	size_t size;
};

static void smoke_fill(unsigned char *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)((i * 31 + seed * 7 + 1) & 0xff);
}

static int smoke_check(const unsigned char *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != (unsigned char)((i * 31 + seed * 7 + 1) & 0xff))
			return -RY_E_CORRUPT;
	return 0;
}

/* Wait for one completion of the given op and wr_id. */
static int smoke_wait(struct verbs_ep *ep, enum verbs_op op, uint64_t wr_id, uint32_t *ret_len)
{
	struct verbs_completion c;
	int r = verbs_ep_poll(ep, SMOKE_TIMEOUT_MS, &c);

	if (r < 0)
		return r;
	if (c.op != op || c.wr_id != wr_id)
		return -RY_E_INVALID;
	if (ret_len)
		*ret_len = c.byte_len;
	return 0;
}

/* Open the device, check the port, choose the GID; on success the caller owns *ret_dev. */
static int smoke_open(const struct smoke_opts *o, struct verbs_dev **ret_dev, uint32_t *ret_gidx)
{
	struct verbs_dev *dev = NULL;
	struct verbs_port_info pi;
	uint8_t gid[VERBS_GID_LEN];
	char gs[VERBS_GID_STR_LEN];
	struct in_addr ip, mapped;
	uint32_t gidx;
	int r;

	r = verbs_dev_open(o->dev, o->port, &dev);
	if (r < 0) {
		log_error("open %s: %s", o->dev ? o->dev : "(first device)", ry_strerror(r));
		goto out;
	}
	r = verbs_dev_query_port(dev, &pi);
	if (r < 0) {
		log_error("query port: %s", ry_strerror(r));
		goto out;
	}
	printf("verbs-smoke: device %s port %u state %s mtu %d link %s lid %u gids %u\n",
	       verbs_dev_name(dev), verbs_dev_port(dev), ibv_port_state_str(pi.state),
	       verbs_mtu_bytes(pi.active_mtu),
	       pi.link_layer == VERBS_LINK_ETHERNET ? "ethernet" : "infiniband", pi.lid,
	       pi.gid_table_len);
	if (pi.state != IBV_PORT_ACTIVE) {
		log_error("port %u is not active", o->port);
		r = -ENETDOWN;
		goto out;
	}
	if (o->ifname) {
		r = verbs_ifaddr_ipv4(o->ifname, &ip);
		if (r < 0) {
			log_error("IPv4 address of %s: %s", o->ifname, ry_strerror(r));
			goto out;
		}
	} else if (o->ipv4) {
		if (inet_pton(AF_INET, o->ipv4, &ip) != 1) {
			log_error("bad IPv4 address '%s'", o->ipv4);
			r = -EINVAL;
			goto out;
		}
	}
	r = verbs_dev_pick_gid(dev, (o->ifname || o->ipv4) ? &ip : NULL, &gidx, gid);
	if (r < 0) {
		log_error("no RoCE v2 GID for %s: %s", o->ifname ? o->ifname : "the port",
			  ry_strerror(r));
		goto out;
	}
	verbs_gid_format(gid, gs);
	printf("verbs-smoke: gid index %u %s\n", gidx, gs);
	if (pi.link_layer == VERBS_LINK_ETHERNET &&
	    (!verbs_gid_is_ipv4_mapped(gid, &mapped) ||
	     ((o->ifname || o->ipv4) && mapped.s_addr != ip.s_addr))) {
		log_error("chosen GID %s is not the interface's IPv4-mapped address", gs);
		r = -RY_E_INVALID;
		goto out;
	}

	*ret_dev = dev;
	*ret_gidx = gidx;
	return 0;
out:
	verbs_dev_free(dev);
	return r;
}

static int smoke_loop(const struct smoke_opts *o)
{
	struct verbs_dev *dev = NULL;
	struct verbs_ep *a = NULL, *b = NULL;
	struct verbs_qp_info ia, ib, pa, pb;
	uint8_t wire[VERBS_QP_INFO_WIRE];
	uint32_t gidx, len;
	unsigned char *ba, *bb;
	size_t half;
	int64_t t0;
	int r;

	r = smoke_open(o, &dev, &gidx);
	if (r < 0)
		return r;
	struct verbs_ep_attr attr = {.gid_index = gidx, .buf_size = 2 * o->size};
	r = verbs_ep_new(dev, &attr, &a);
	if (r >= 0)
		r = verbs_ep_new(dev, &attr, &b);
	if (r < 0) {
		log_error("endpoint: %s", ry_strerror(r));
		goto out;
	}
	/* Round-trip the QP info through its wire format, as two nodes would. */
	verbs_ep_local_info(a, &ia);
	verbs_ep_local_info(b, &ib);
	verbs_qp_info_pack(&ia, wire);
	r = verbs_qp_info_unpack(wire, sizeof(wire), &pa);
	if (r >= 0) {
		verbs_qp_info_pack(&ib, wire);
		r = verbs_qp_info_unpack(wire, sizeof(wire), &pb);
	}
	if (r >= 0)
		r = verbs_ep_connect(a, &pb);
	if (r >= 0)
		r = verbs_ep_connect(b, &pa);
	if (r < 0) {
		log_error("connect: %s", ry_strerror(r));
		goto out;
	}
	printf("verbs-smoke: qp %u <-> qp %u RTS\n", ia.qpn, ib.qpn);

	ba = verbs_ep_buf(a);
	bb = verbs_ep_buf(b);
	half = o->size;
	t0 = util_now_mono_ms();
	for (unsigned int i = 0; i < o->iters; i++) {
		/* send/recv into the first half of b */
		memset(bb, 0, half);
		smoke_fill(ba, half, i);
		r = verbs_ep_post_recv(b, 0, half, 1000 + i);
		if (r >= 0)
			r = verbs_ep_post_send(a, 0, half, 2000 + i);
		if (r >= 0)
			r = smoke_wait(a, VERBS_OP_SEND, 2000 + i, NULL);
		if (r >= 0)
			r = smoke_wait(b, VERBS_OP_RECV, 1000 + i, &len);
		if (r >= 0 && len != half)
			r = -RY_E_CORRUPT;
		if (r >= 0)
			r = smoke_check(bb, half, i);
		if (r < 0) {
			log_error("send %u: %s", i, ry_strerror(r));
			goto out;
		}
		/* RDMA write from b's second half into a's second half (other direction) */
		memset(ba + half, 0, half);
		smoke_fill(bb + half, half, i + 100);
		r = verbs_ep_post_write(b, half, half, ia.addr + half, ia.rkey, 3000 + i);
		if (r >= 0)
			r = smoke_wait(b, VERBS_OP_WRITE, 3000 + i, NULL);
		if (r >= 0)
			r = smoke_check(ba + half, half, i + 100);
		if (r < 0) {
			log_error("write %u: %s", i, ry_strerror(r));
			goto out;
		}
	}
	printf("verbs-smoke: %u sends and %u RDMA writes of %zu B verified in %lld ms\n", o->iters,
	       o->iters, half, (long long)(util_now_mono_ms() - t0));
	printf("verbs-smoke: PASS\n");
	r = 0;
out:
	verbs_ep_free(b);
	verbs_ep_free(a);
	verbs_dev_free(dev);
	return r;
}

/* ---- two nodes: QP info over TCP, one endpoint each ----------------------------------------- */

static int smoke_io(int fd, void *buf, size_t len, bool wr)
{
	size_t done = 0;

	while (done < len) {
		ssize_t k = wr ? send(fd, (char *)buf + done, len - done, MSG_NOSIGNAL)
			       : recv(fd, (char *)buf + done, len - done, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -ECONNRESET;
		done += (size_t)k;
	}
	return 0;
}

static int smoke_tcp_timeouts(int fd)
{
	struct timeval tv = {.tv_sec = SMOKE_TIMEOUT_MS / 1000};

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		return -errno;
	return 0;
}

/* Server: accept one client within 60 s. Client: connect, retrying for 60 s while refused. */
static int smoke_tcp(const struct smoke_opts *o, int *ret_fd)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->tcp_port)};
	int64_t deadline = util_now_mono_ms() + 60000;
	int fd = -1, lfd = -1, one = 1, r;

	if (o->server) {
		a.sin_addr.s_addr = htonl(INADDR_ANY);
		lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (lfd < 0)
			return -errno;
		if (setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
		    bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 1) < 0) {
			r = -errno;
			goto out;
		}
		struct pollfd p = {.fd = lfd, .events = POLLIN};
		r = poll(&p, 1, 60000);
		if (r <= 0) {
			r = r < 0 ? -errno : -ETIMEDOUT;
			goto out;
		}
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			r = -errno;
			goto out;
		}
	} else {
		if (inet_pton(AF_INET, o->peer, &a.sin_addr) != 1)
			return -EINVAL;
		for (;;) {
			fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (fd < 0)
				return -errno;
			if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
				break;
			r = -errno;
			close(fd);
			fd = -1;
			if ((r != -ECONNREFUSED && r != -EHOSTUNREACH && r != -ENETUNREACH) ||
			    util_now_mono_ms() >= deadline)
				goto out;
			/* The server is not listening yet: try again shortly. */
			nanosleep(&(struct timespec){.tv_nsec = 200 * 1000 * 1000}, NULL);
		}
	}
	r = smoke_tcp_timeouts(fd);
	if (r < 0)
		goto out;
	*ret_fd = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	if (lfd >= 0)
		close(lfd);
	return r;
}

/* Each round: the client RDMA-writes the second half of the server's buffer, then sends the
 * first half; the server checks both (RC ordering: the write lands before the send completes)
 * and acknowledges over TCP before the next round overwrites them. */
static int smoke_pair(const struct smoke_opts *o)
{
	struct verbs_dev *dev = NULL;
	struct verbs_ep *ep = NULL;
	struct verbs_qp_info mine, peer;
	uint8_t wire[VERBS_QP_INFO_WIRE], ack = 1;
	uint32_t gidx, len;
	unsigned char *buf;
	size_t half = o->size;
	int64_t t0;
	int fd = -1, r;

	r = smoke_open(o, &dev, &gidx);
	if (r < 0)
		return r;
	struct verbs_ep_attr attr = {.gid_index = gidx, .buf_size = 2 * half};
	r = verbs_ep_new(dev, &attr, &ep);
	if (r < 0) {
		log_error("endpoint: %s", ry_strerror(r));
		goto out;
	}
	r = smoke_tcp(o, &fd);
	if (r < 0) {
		log_error("TCP %s: %s", o->server ? "accept" : "connect", ry_strerror(r));
		goto out;
	}
	verbs_ep_local_info(ep, &mine);
	verbs_qp_info_pack(&mine, wire);
	r = smoke_io(fd, wire, sizeof(wire), true);
	if (r >= 0)
		r = smoke_io(fd, wire, sizeof(wire), false);
	if (r >= 0)
		r = verbs_qp_info_unpack(wire, sizeof(wire), &peer);
	if (r >= 0)
		r = verbs_ep_connect(ep, &peer);
	if (r < 0) {
		log_error("QP exchange/connect: %s", ry_strerror(r));
		goto out;
	}
	printf("verbs-smoke: %s qp %u <-> peer qp %u RTS\n", o->server ? "server" : "client",
	       mine.qpn, peer.qpn);
	buf = verbs_ep_buf(ep);
	t0 = util_now_mono_ms();
	for (unsigned int i = 0; i < o->iters; i++) {
		if (o->server) {
			r = verbs_ep_post_recv(ep, 0, half, 1000 + i);
			/* Tell the client the receive is posted (no RNR waits). */
			if (r >= 0)
				r = smoke_io(fd, &ack, 1, true);
			if (r >= 0)
				r = smoke_wait(ep, VERBS_OP_RECV, 1000 + i, &len);
			if (r >= 0 && len != half)
				r = -RY_E_CORRUPT;
			if (r >= 0)
				r = smoke_check(buf, half, i);
			if (r >= 0)
				r = smoke_check(buf + half, half, i + 100);
		} else {
			r = smoke_io(fd, &ack, 1, false);
			smoke_fill(buf + half, half, i + 100);
			smoke_fill(buf, half, i);
			if (r >= 0)
				r = verbs_ep_post_write(ep, half, half, peer.addr + half, peer.rkey,
							3000 + i);
			if (r >= 0)
				r = smoke_wait(ep, VERBS_OP_WRITE, 3000 + i, NULL);
			if (r >= 0)
				r = verbs_ep_post_send(ep, 0, half, 2000 + i);
			if (r >= 0)
				r = smoke_wait(ep, VERBS_OP_SEND, 2000 + i, NULL);
		}
		if (r < 0) {
			log_error("round %u: %s", i, ry_strerror(r));
			goto out;
		}
	}
	printf("verbs-smoke: %u rounds (RDMA write + send of %zu B) %s in %lld ms\n", o->iters,
	       half, o->server ? "verified" : "sent", (long long)(util_now_mono_ms() - t0));
	printf("verbs-smoke: PASS\n");
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	verbs_ep_free(ep);
	verbs_dev_free(dev);
	return r;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"dev", required_argument, NULL, 'd'},
		{"ifname", required_argument, NULL, 'i'},
		{"ipv4", required_argument, NULL, 'a'},
		{"port", required_argument, NULL, 'p'},
		{"iters", required_argument, NULL, 'n'},
		{"size", required_argument, NULL, 's'},
		{"server", required_argument, NULL, 'S'},
		{"client", required_argument, NULL, 'C'},
		{NULL, 0, NULL, 0},
	};
	struct smoke_opts o = {.port = 1, .iters = 100, .size = 4096};
	int c;

	log_set_ident("verbs-smoke");
	while ((c = getopt_long(argc, argv, "d:i:a:p:n:s:S:C:", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			o.dev = optarg;
			break;
		case 'i':
			o.ifname = optarg;
			break;
		case 'a':
			o.ipv4 = optarg;
			break;
		case 'p':
			o.port = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'n':
			o.iters = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 's':
			o.size = strtoul(optarg, NULL, 10);
			break;
		case 'S':
			o.server = true;
			o.tcp_port = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'C': {
			/* A.B.C.D:PORT */
			char *colon = strrchr(optarg, ':');
			if (!colon)
				goto usage;
			*colon = '\0';
			o.peer = optarg;
			o.tcp_port = (unsigned int)strtoul(colon + 1, NULL, 10);
			break;
		}
		default:
			fprintf(stderr,
				"usage: verbs-smoke [--dev NAME] [--port N] "
				"[--ifname IF | --ipv4 A.B.C.D] [--iters N] [--size BYTES]\n");
			return 2;
		}
	}
	if (o.size == 0 || o.size > (64u << 20) || o.iters == 0 || o.port == 0) {
		fprintf(stderr, "verbs-smoke: bad --size, --iters or --port\n");
		return 2;
	}
	if (o.server || o.peer)
		return smoke_pair(&o) < 0 ? 1 : 0;
	return smoke_loop(&o) < 0 ? 1 : 0;
usage:
	fprintf(stderr,
		"usage: verbs-smoke [--dev NAME] [--port N] [--ifname IF | --ipv4 A.B.C.D]\n"
		"                   [--iters N] [--size BYTES] [--server TCPPORT | "
		"--client A.B.C.D:TCPPORT]\n");
	return 2;
}
