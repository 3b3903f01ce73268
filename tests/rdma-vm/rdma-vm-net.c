/* rdma-vm-net: loopback-only plumbing for the soft-RoCE guests. `hub` relays Ethernet frames
 * between the UDP socket netdevs of N qemu guests (one virtual wire); `listen` is the TCP
 * listener on 127.0.0.1 that guests reach as 10.0.2.2 through their user-mode NIC. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util/fs.h"
#include "common/util/util.h"

#define NET_MAX_GUESTS 8
#define NET_FRAME_MAX  65536
#define NET_LINE_MAX   128

static int net_bind_loopback(int type, uint16_t *ret_port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	*ret_port = ntohs(a.sin_port);
	return fd;
}

static int net_write_portfile(const char *path, const uint16_t *ports, int n)
{
	char buf[NET_MAX_GUESTS * 8 + 2];
	size_t off = 0;

	for (int i = 0; i < n; i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%u", i ? " " : "",
					ports[i]);
	off += (size_t)snprintf(buf + off, sizeof(buf) - off, "\n");
	return fs_write_file_atomic(path, buf, off, 0644);
}

static bool net_is_loopback(const struct sockaddr_in *a)
{
	return a->sin_family == AF_INET && a->sin_addr.s_addr == htonl(INADDR_LOOPBACK);
}

/* Each guest sends to its own hub socket; the hub learns the guest's address from the first
 * frame and relays every frame to all other guests it has heard from (a dumb hub, not a switch:
 * broadcasts and unicasts alike). */
static int net_hub(int n, const char *portfile, int64_t deadline_ms)
{
	int fds[NET_MAX_GUESTS];
	uint16_t ports[NET_MAX_GUESTS] = {0};
	struct sockaddr_in peer[NET_MAX_GUESTS];
	bool known[NET_MAX_GUESTS] = {false};
	struct pollfd pfd[NET_MAX_GUESTS];
	static unsigned char frame[NET_FRAME_MAX];
	int r = 0, opened = 0;

	for (; opened < n; opened++) {
		fds[opened] = net_bind_loopback(SOCK_DGRAM, &ports[opened]);
		if (fds[opened] < 0) {
			r = fds[opened];
			goto out;
		}
		pfd[opened] = (struct pollfd){.fd = fds[opened], .events = POLLIN};
	}
	r = net_write_portfile(portfile, ports, n);
	if (r < 0)
		goto out;
	for (;;) {
		int64_t left = deadline_ms - util_now_mono_ms();
		if (left <= 0)
			break;
		int k = poll(pfd, (nfds_t)n, (int)(left > 1000 ? 1000 : left));
		if (k < 0 && errno != EINTR) {
			r = -errno;
			goto out;
		}
		for (int i = 0; k > 0 && i < n; i++) {
			if (!(pfd[i].revents & POLLIN))
				continue;
			struct sockaddr_in src;
			socklen_t sl = sizeof(src);
			ssize_t len = recvfrom(fds[i], frame, sizeof(frame), MSG_DONTWAIT,
					       (struct sockaddr *)&src, &sl);
			if (len <= 0 || !net_is_loopback(&src))
				continue;
			peer[i] = src;
			known[i] = true;
			for (int j = 0; j < n; j++) {
				if (j == i || !known[j])
					continue;
				/* A full socket buffer drops the frame, like a congested wire. */
				(void)sendto(fds[j], frame, (size_t)len, MSG_DONTWAIT,
					     (struct sockaddr *)&peer[j], sizeof(peer[j]));
			}
		}
	}
out:
	for (int i = 0; i < opened; i++)
		close(fds[i]);
	return r;
}

/* Accept up to `expect` connections; read one line from each (bounded), record it, answer
 * "railyard-host-ok <line>". Exit 0 once `expect` lines were recorded. */
static int net_listen(const char *portfile, const char *record, int expect, int64_t deadline_ms)
{
	uint16_t port;
	int got = 0, r;
	int fd = net_bind_loopback(SOCK_STREAM, &port);
	FILE *rec = NULL;

	if (fd < 0)
		return fd;
	if (listen(fd, 16) < 0) {
		r = -errno;
		goto out;
	}
	rec = fopen(record, "we");
	if (!rec) {
		r = -errno;
		goto out;
	}
	r = net_write_portfile(portfile, &port, 1);
	if (r < 0)
		goto out;
	r = -ETIMEDOUT;
	while (got < expect) {
		int64_t left = deadline_ms - util_now_mono_ms();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (left <= 0)
			break;
		if (poll(&p, 1, (int)(left > 1000 ? 1000 : left)) <= 0)
			continue;
		int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		char line[NET_LINE_MAX];
		size_t len = 0;
		struct timeval tv = {.tv_sec = 5};
		(void)setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		while (len < sizeof(line) - 1) {
			ssize_t k = read(c, line + len, 1);
			if (k <= 0 || line[len] == '\n')
				break;
			len++;
		}
		line[len] = '\0';
		if (len > 0) {
			char reply[NET_LINE_MAX + 32];
			int rl = snprintf(reply, sizeof(reply), "railyard-host-ok %s\n", line);
			(void)!write(c, reply, (size_t)rl);
			fprintf(rec, "%s\n", line);
			fflush(rec);
			got++;
		}
		close(c);
	}
	if (got >= expect)
		r = 0;
out:
	if (rec)
		fclose(rec);
	close(fd);
	return r;
}

static int net_usage(void)
{
	fprintf(stderr, "usage: rdma-vm-net hub N PORTFILE LIFETIME_S\n"
			"       rdma-vm-net listen PORTFILE RECORDFILE EXPECT LIFETIME_S\n");
	return 2;
}

int main(int argc, char **argv)
{
	pid_t parent = getppid();
	int r;

	/* Never outlive the runner, whatever kills it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		return 1;
	if (argc == 5 && strcmp(argv[1], "hub") == 0) {
		int n = atoi(argv[2]);
		int life = atoi(argv[4]);
		if (n < 2 || n > NET_MAX_GUESTS || life <= 0)
			return net_usage();
		r = net_hub(n, argv[3], util_now_mono_ms() + (int64_t)life * 1000);
	} else if (argc == 6 && strcmp(argv[1], "listen") == 0) {
		int expect = atoi(argv[4]);
		int life = atoi(argv[5]);
		if (expect <= 0 || life <= 0)
			return net_usage();
		r = net_listen(argv[2], argv[3], expect, util_now_mono_ms() + (int64_t)life * 1000);
	} else {
		return net_usage();
	}
	if (r < 0) {
		fprintf(stderr, "rdma-vm-net %s: %s\n", argv[1], strerror(-r));
		return 1;
	}
	return 0;
}
