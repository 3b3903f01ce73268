/* Fabric port counters: snapshots of SYSROOT/sys/class/infiniband/DEV/ports/N/{counters,
 * hw_counters}/ and their per-port difference as JSON. Owns the snapshots it returns and nothing
 * else; directories are walked with openat() from the class directory's descriptor, so every path
 * stays under the sysroot as the kernel lays it out (the device links are relative). */
#include "nodeagent/counters.h"
#include "common/util/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Entries looked at per directory listing: bounds what a huge directory can cost. */
#define LIST_SCAN_MAX 4096

struct counters_val {
	char name[COUNTERS_NAME_MAX + 1];
	uint64_t value;
};

struct counters_port {
	char device[COUNTERS_DEVICE_MAX + 1];
	uint32_t port;
	size_t n;
	struct counters_val *v; /* sorted by name (strcmp) */
};

struct counters_snap {
	size_t n, cap;
	size_t reads;		     /* counter files opened, bounded by COUNTERS_MAX_TOTAL */
	struct counters_port *ports; /* devices in version order, then ports numerically */
};

/* One name of a directory listing: a device, a port (num) or a counter (src: 0 counters/, 1
 * hw_counters/). Every kind of name fits COUNTERS_NAME_MAX. */
struct entry {
	char name[COUNTERS_NAME_MAX + 1];
	uint32_t num;
	int src;
};

struct list {
	size_t n, cap;
	struct entry *v;
};

static bool device_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > COUNTERS_DEVICE_MAX || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] <= 0x20 || s[i] >= 0x7f || s[i] == '/')
			return false;
	return true;
}

/* A port directory: a decimal number that fits 32 bits, without leading zeros. */
static bool port_name_ok(const char *s)
{
	size_t n = strlen(s);
	uint64_t v = 0;

	if (n == 0 || n > 10 || (s[0] == '0' && n > 1))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	return v <= UINT32_MAX;
}

static bool counter_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > COUNTERS_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

static int list_add(struct list *l, const char *name, int src)
{
	struct entry *e;

	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 16;
		struct entry *nv = realloc(l->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->cap = ncap;
	}
	e = &l->v[l->n++];
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->num = (uint32_t)strtoul(name, NULL, 10); /* only read for ports */
	e->src = src;
	return 0;
}

/* Append the names of directory fd (borrowed; < 0: nothing) that ok() accepts, looking at no
 * more than LIST_SCAN_MAX entries. A directory that cannot be read adds nothing. */
static int list_fd(int fd, bool (*ok)(const char *), int src, struct list *l)
{
	struct dirent *de;
	size_t seen = 0;
	int dfd, r = 0;
	DIR *d;

	if (fd < 0)
		return 0;
	/* fdopendir() takes the descriptor; the caller keeps its own for openat(). */
	dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0)
		return errno == ENOMEM ? -ENOMEM : 0;
	d = fdopendir(dfd);
	if (!d) {
		r = errno == ENOMEM ? -ENOMEM : 0;
		close(dfd);
		return r;
	}
	while (r >= 0 && seen < LIST_SCAN_MAX && (de = readdir(d))) {
		seen++;
		if (ok(de->d_name))
			r = list_add(l, de->d_name, src);
	}
	closedir(d);
	return r;
}

static int cmp_device(const void *a, const void *b)
{
	return strverscmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

static int cmp_port(const void *a, const void *b)
{
	uint32_t x = ((const struct entry *)a)->num, y = ((const struct entry *)b)->num;

	return x < y ? -1 : x > y;
}

/* By name, counters/ before hw_counters/ (the first of a name wins). */
static int cmp_counter(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : x->src - y->src;
}

static bool parse_u64(const char *s, size_t len, uint64_t *ret)
{
	uint64_t v = 0;

	if (len && s[len - 1] == '\n')
		len--;
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*ret = v;
	return true;
}

/* One counter file of directory dirfd. false: not a counter (unreadable, not a regular file, a
 * link, longer than COUNTERS_FILE_MAX, not a number). O_NONBLOCK: a FIFO in a test tree must
 * not hang the run. */
static bool read_counter(int dirfd, const char *name, uint64_t *ret)
{
	char buf[COUNTERS_FILE_MAX + 1];
	size_t len = 0;
	struct stat st;
	bool ok = false;
	int fd;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		goto out;
	while (len < sizeof(buf)) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto out;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	ok = len <= COUNTERS_FILE_MAX && parse_u64(buf, len, ret);
out:
	close(fd);
	return ok;
}

static int open_dir_at(int dirfd, const char *name)
{
	return dirfd < 0 ? -1 : openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* A new port entry at the end of s (device and number set, no counters yet). */
static struct counters_port *snap_port_add(struct counters_snap *s, const char *device,
					   uint32_t port)
{
	struct counters_port *p;

	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 8;
		struct counters_port *nv = realloc(s->ports, ncap * sizeof(*nv));

		if (!nv)
			return NULL;
		s->ports = nv;
		s->cap = ncap;
	}
	p = &s->ports[s->n++];
	memset(p, 0, sizeof(*p));
	snprintf(p->device, sizeof(p->device), "%s", device);
	p->port = port;
	return p;
}

/* The counters of port pe of device into s. A port directory that cannot be opened is left out;
 * one without counter directories is kept with no counters (the port exists, exposes nothing). */
static int snap_port(struct counters_snap *s, int portsfd, const char *device,
		     const struct entry *pe)
{
	int pfd, fds[2], r = 0;
	struct list names = {0};
	struct counters_port *p;
	size_t want = 0;

	if (s->reads >= COUNTERS_MAX_TOTAL)
		return 0;
	pfd = open_dir_at(portsfd, pe->name);
	if (pfd < 0)
		return errno == ENOMEM ? -ENOMEM : 0;
	fds[0] = open_dir_at(pfd, "counters");
	fds[1] = open_dir_at(pfd, "hw_counters");
	if ((r = list_fd(fds[0], counter_name_ok, 0, &names)) < 0 ||
	    (r = list_fd(fds[1], counter_name_ok, 1, &names)) < 0)
		goto out;
	if (names.n > 1)
		qsort(names.v, names.n, sizeof(*names.v), cmp_counter);
	/* Unique names, counters/'s first; hw_counters/lifespan is how long the kernel caches the
	 * hardware counters (ms), a setting rather than a counter. */
	for (size_t i = 0; i < names.n; i++) {
		/* v[i - 1] is still the original: compaction only wrote below want <= i. */
		bool dup = i > 0 && strcmp(names.v[i].name, names.v[i - 1].name) == 0;

		if (dup || (names.v[i].src == 1 && strcmp(names.v[i].name, "lifespan") == 0))
			continue;
		names.v[want++] = names.v[i];
	}
	if (want > COUNTERS_MAX_PER_PORT)
		want = COUNTERS_MAX_PER_PORT;
	if (want > COUNTERS_MAX_TOTAL - s->reads)
		want = COUNTERS_MAX_TOTAL - s->reads;
	p = snap_port_add(s, device, pe->num);
	if (!p) {
		r = -ENOMEM;
		goto out;
	}
	if (want) {
		p->v = calloc(want, sizeof(*p->v));
		if (!p->v) {
			r = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < want; i++) {
		struct counters_val *v = &p->v[p->n];

		s->reads++;
		if (!read_counter(fds[names.v[i].src], names.v[i].name, &v->value))
			continue;
		memcpy(v->name, names.v[i].name, sizeof(v->name));
		p->n++;
	}
out:
	free(names.v);
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	close(pfd);
	return r;
}

static int snap_device(struct counters_snap *s, int ibfd, const char *device)
{
	struct list ports = {0};
	char rel[COUNTERS_DEVICE_MAX + 8];
	int portsfd, r;

	snprintf(rel, sizeof(rel), "%s/ports", device);
	portsfd = open_dir_at(ibfd, rel);
	if (portsfd < 0)
		return errno == ENOMEM ? -ENOMEM : 0;
	r = list_fd(portsfd, port_name_ok, 0, &ports);
	if (r >= 0 && ports.n > 1)
		qsort(ports.v, ports.n, sizeof(*ports.v), cmp_port);
	for (size_t i = 0; r >= 0 && i < ports.n && i < COUNTERS_MAX_PORTS; i++)
		r = snap_port(s, portsfd, device, &ports.v[i]);
	free(ports.v);
	close(portsfd);
	return r;
}

int counters_snapshot(const char *sysroot, const char *device, struct counters_snap **ret)
{
	struct counters_snap *s = calloc(1, sizeof(*s));
	struct list devs = {0};
	char *path = NULL;
	int ibfd = -1, r = 0;

	if (!s)
		return -ENOMEM;
	path = fs_path_join(sysroot, "sys/class/infiniband");
	if (!path) {
		r = -ENOMEM;
		goto out;
	}
	/* No RDMA stack loaded (or a class directory we cannot read): nothing to sample. */
	ibfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ibfd < 0)
		goto done;
	if (device)
		r = device_name_ok(device) ? list_add(&devs, device, 0) : 0;
	else
		r = list_fd(ibfd, device_name_ok, 0, &devs);
	if (r < 0)
		goto out;
	if (devs.n > 1)
		qsort(devs.v, devs.n, sizeof(*devs.v), cmp_device);
	for (size_t i = 0; r >= 0 && i < devs.n && i < COUNTERS_MAX_DEVICES; i++)
		r = snap_device(s, ibfd, devs.v[i].name);
	if (r < 0)
		goto out;
done:
	*ret = s;
	s = NULL;
	r = 0;
out:
	if (ibfd >= 0)
		close(ibfd);
	free(devs.v);
	free(path);
	counters_snap_free(s);
	return r;
}

void counters_snap_free(struct counters_snap *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->ports[i].v);
	free(s->ports);
	free(s);
}

void counters_snap_size(const struct counters_snap *s, size_t *ret_ports, size_t *ret_counters)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n; i++)
		n += s->ports[i].n;
	if (ret_ports)
		*ret_ports = s->n;
	if (ret_counters)
		*ret_counters = n;
}

/* A strict order for looking ports up (strverscmp, the snapshot's order, is for people). */
static int cmp_port_key(const void *a, const void *b)
{
	const struct counters_port *x = *(const struct counters_port *const *)a;
	const struct counters_port *y = *(const struct counters_port *const *)b;
	int c = strcmp(x->device, y->device);

	return c ? c : (x->port < y->port ? -1 : x->port > y->port);
}

/* {"name": delta, ...} over the counters in both a and b (both sorted by name). */
static json_t *port_delta(const struct counters_port *a, const struct counters_port *b)
{
	json_t *o = json_object();
	size_t i = 0, j = 0;

	while (o && i < a->n && j < b->n) {
		int c = strcmp(a->v[i].name, b->v[j].name);
		uint64_t x, y;
		json_t *d;

		if (c < 0) {
			i++;
			continue;
		}
		if (c > 0) {
			j++;
			continue;
		}
		x = a->v[i].value;
		y = b->v[j].value;
		/* Down means reset or wrapped: how far it moved is unknown. */
		if (y < x || y - x > (uint64_t)INT64_MAX)
			d = json_null();
		else
			d = json_integer((json_int_t)(y - x));
		if (json_object_set_new(o, b->v[j].name, d) < 0) {
			json_decref(o);
			o = NULL;
		}
		i++;
		j++;
	}
	return o;
}

json_t *counters_delta_json(const struct counters_snap *before, const struct counters_snap *after,
			    const char *device, uint32_t port)
{
	const struct counters_port **index = NULL;
	json_t *doc = NULL, *ports = json_array();

	if (!ports)
		return NULL;
	if (before->n) {
		index = malloc(before->n * sizeof(*index));
		if (!index)
			goto out;
		for (size_t i = 0; i < before->n; i++)
			index[i] = &before->ports[i];
		qsort(index, before->n, sizeof(*index), cmp_port_key);
	}
	for (size_t i = 0; i < after->n; i++) {
		const struct counters_port *b = &after->ports[i], *key = b, **a = NULL;
		json_t *delta, *pj;

		if ((device && strcmp(b->device, device) != 0) || (port && b->port != port))
			continue;
		if (index)
			a = bsearch(&key, index, before->n, sizeof(*index), cmp_port_key);
		if (!a)
			continue;
		pj = json_pack("{ss sI}", "device", b->device, "port", (json_int_t)b->port);
		delta = port_delta(*a, b);
		if (!pj || !delta) {
			json_decref(pj);
			json_decref(delta);
			goto out;
		}
		/* The _new calls take their value, also when they fail. */
		if (json_object_set_new(pj, "delta", delta) < 0) {
			json_decref(pj);
			goto out;
		}
		if (json_array_append_new(ports, pj) < 0)
			goto out;
	}
	doc = json_pack("{sO sb}", "ports", ports, "sampled", true);
out:
	free(index);
	json_decref(ports);
	return doc;
}
