/* Kill a process with SIGKILL at a chosen point of an atomic file write in a directory, for the
 * integration tests: the moment is seen with inotify, not guessed with a sleep.
 *   kill_on_write --dir D --pid P --at create|write|close|rename --nth K [--timeout S]
 *                 [--ready FILE]
 * Counts the events of one kind in D (create, write and close: the writer's temporary
 * ".NAME.ry-tmpXXXXXX"; rename: a temporary renamed onto NAME) and kills P at the K-th.
 * Prints "killed PID at EVENT of NAME" and exits 0, or exits 1 when S seconds (default 60)
 * pass first. --ready FILE is created once the watch is in place. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#define TEMP_MARK ".ry-tmp"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"dir", required_argument, NULL, 'd'},
		{"pid", required_argument, NULL, 'p'},
		{"at", required_argument, NULL, 'a'},
		{"nth", required_argument, NULL, 'n'},
		{"timeout", required_argument, NULL, 't'},
		{"ready", required_argument, NULL, 'r'},
		{0},
	};
	const char *dir = NULL, *at = NULL, *ready = NULL;
	long pid = 0, nth = 1, timeout_s = 60, seen = 0;
	uint32_t mask;
	int64_t deadline;
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	int fd, o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'd':
			dir = optarg;
			break;
		case 'p':
			pid = strtol(optarg, NULL, 10);
			break;
		case 'a':
			at = optarg;
			break;
		case 'n':
			nth = strtol(optarg, NULL, 10);
			break;
		case 't':
			timeout_s = strtol(optarg, NULL, 10);
			break;
		case 'r':
			ready = optarg;
			break;
		default:
			return 2;
		}
	}
	if (!dir || !at || pid <= 0 || nth < 1)
		goto usage;
	if (strcmp(at, "create") == 0)
		mask = IN_CREATE;
	else if (strcmp(at, "write") == 0)
		mask = IN_MODIFY;
	else if (strcmp(at, "close") == 0)
		mask = IN_CLOSE_WRITE;
	else if (strcmp(at, "rename") == 0)
		mask = IN_MOVED_TO;
	else
		goto usage;
	fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (fd < 0 || inotify_add_watch(fd, dir, mask) < 0) {
		perror("kill_on_write: inotify");
		return 1;
	}
	if (ready) {
		FILE *f = fopen(ready, "w");

		if (!f || fclose(f) != 0) {
			perror("kill_on_write: ready file");
			return 1;
		}
	}
	deadline = now_ms() + timeout_s * 1000;
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int64_t left = deadline - now_ms();
		ssize_t n;

		if (left <= 0) {
			fprintf(stderr,
				"kill_on_write: no %s event %ld in %s within %ld s (%ld seen)\n",
				at, nth, dir, timeout_s, seen);
			return 1;
		}
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			perror("kill_on_write: read");
			return 1;
		}
		for (char *e = buf; e < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)e;
			const char *name = ev->len ? ev->name : "";
			int temp = name[0] == '.' && strstr(name, TEMP_MARK) != NULL;

			e += sizeof(*ev) + ev->len;
			if (!(ev->mask & mask) || (mask == IN_MOVED_TO ? temp : !temp))
				continue;
			if (++seen < nth)
				continue;
			if (kill((pid_t)pid, SIGKILL) < 0) {
				perror("kill_on_write: kill");
				return 1;
			}
			printf("killed %ld at %s of %s\n", pid, at, name);
			return 0;
		}
	}
usage:
	fprintf(stderr, "usage: kill_on_write --dir D --pid P --at create|write|close|rename "
			"--nth K [--timeout S] [--ready FILE]\n");
	return 2;
}
