/* The fabric port watcher (nodeagent/portwatch.h): counter rates from two snapshots' delta, and
 * each port's state/rate read next to its counters. */
#include "nodeagent/portwatch.h"

#include "common/util/fs.h"
#include "nodeagent/counters.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const struct portwatch_rule portwatch_default_rules[] = {
	/* InfiniBand (counters/): IBTA's BER of 1e-12 is 24 symbol errors a minute at 400 Gb/s;
	 * NVIDIA UFM and LBNL NHC treat link_downed and link integrity errors as faults on any
	 * movement. */
	{"symbol_error", 24, 240},
	{"link_downed", 0, 1},
	{"link_error_recovery", 1, 10},
	{"port_rcv_errors", 10, 100},
	{"port_rcv_remote_physical_errors", 10, 100},
	{"local_link_integrity_errors", 1, 10},
	{"excessive_buffer_overrun_errors", 1, 10},
	/* RoCE (mlx5 hw_counters/): retransmission timeouts and sequence errors mean lost
	 * packets on a fabric that should be lossless (PFC); rxe names its own. */
	{"local_ack_timeout_err", 1, 60},
	{"packet_seq_err", 60, 600},
	{"out_of_sequence", 60, 600},
	{"rnr_nak_retry_err", 1, 60},
	{"retry_exceeded_err", 1, 10},
	/* Soft-RoCE (rxe hw_counters/): the requester's retransmissions and the responder's
	 * sequence errors; what a lossy wire shows first. */
	{"completer_retry_err", 10, 600},
	{"rcvd_seq_err", 60, 600},
	{"out_of_seq_request", 60, 600},
	{"duplicate_request", 60, 600},
	/* The port's netdev (sys/class/net/NETDEV/queues/tx-N/tx_timeout, summed): the kernel's
	 * transmit watchdog fired, a queue sent nothing for the driver's whole watchdog period
	 * (5 s on most drivers). A job on that port stalled: any movement is a fault. */
	{PORTWATCH_TX_TIMEOUT, 0, 1},
	{NULL, 0, 0},
};

struct port_state {
	char device[64];
	uint32_t port;
	char state[32];			       /* "ACTIVE", "DOWN", ... ("" unknown) */
	long rate_gbps;			       /* 0 unknown */
	char netdev[PORTWATCH_NETDEV_MAX + 1]; /* "" none */
	uint64_t tx_timeouts;		       /* the netdev's, summed over its transmit queues */
	size_t tx_queues;		       /* how many queues that sum read */
	bool tx_known;			       /* tx_timeouts was read */
	bool seen;
};

struct portwatch {
	const char *sysroot;
	const struct portwatch_rule *rules;
	struct counters_snap *prev;
	int64_t prev_ms;
	struct port_state *ports;
	size_t n_ports, cap_ports;
};

int portwatch_new(const char *sysroot, const struct portwatch_rule *rules, struct portwatch **ret)
{
	struct portwatch *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->sysroot = sysroot;
	w->rules = rules ? rules : portwatch_default_rules;
	*ret = w;
	return 0;
}

void portwatch_free(struct portwatch *w)
{
	if (!w)
		return;
	counters_snap_free(w->prev);
	free(w->ports);
	free(w);
}

/* Read SYSROOT/sys/class/infiniband/DEV/ports/N/{state,rate}. */
static void read_port(const char *sysroot, const char *dev, uint32_t port, char *state, size_t cap,
		      long *ret_rate)
{
	bool root = !sysroot || !*sysroot || strcmp(sysroot, "/") == 0;
	char path[1024];
	char *s = NULL;

	state[0] = '\0';
	*ret_rate = 0;
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/ports/%u/state",
		 root ? "" : sysroot, dev, port);
	if (fs_read_attr(path, &s) == 0) {
		/* "4: ACTIVE" */
		const char *p = strchr(s, ':');
		p = p ? p + 1 : s;
		while (*p == ' ')
			p++;
		size_t n = strcspn(p, "\n");
		if (n >= cap)
			n = cap - 1;
		memcpy(state, p, n);
		state[n] = '\0';
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)state[i] < 0x20 || (unsigned char)state[i] > 0x7e)
				state[i] = '?';
	}
	free(s);
	s = NULL;
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/ports/%u/rate",
		 root ? "" : sysroot, dev, port);
	if (fs_read_attr(path, &s) == 0) {
		char *end;
		long r = strtol(s, &end, 10);
		if (end != s && r > 0 && r < 100000)
			*ret_rate = r;
	}
	free(s);
}

/* A netdev name as sysfs gives it: IFNAMSIZ - 1 bytes of [A-Za-z0-9._@-] (no '/', not a dot
 * name). */
static bool netdev_name_ok(const char *n)
{
	size_t len = strlen(n);

	if (len == 0 || len > PORTWATCH_NETDEV_MAX || strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)n[i]) && !strchr("._@-", n[i]))
			return false;
	return true;
}

/* The netdev of DEV's port: its GID 0's (RoCE: ports/N/gid_attrs/ndevs/0), else the device's
 * netdev whose dev_port is port - 1, else its only netdev (IPoIB on a one-port HCA). As the
 * facts name it (nodeagent/facts/facts_rdma.c). "" when none. */
static void port_netdev(const char *sysroot, const char *dev, uint32_t port, char *out, size_t cap)
{
	bool root = !sysroot || !*sysroot || strcmp(sysroot, "/") == 0;
	char path[1024], only[PORTWATCH_NETDEV_MAX + 1] = "";
	char *s = NULL;
	size_t n_net = 0;
	struct dirent *de;
	DIR *d;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/ports/%u/gid_attrs/ndevs/0",
		 root ? "" : sysroot, dev, port);
	if (fs_read_attr(path, &s) == 0 && netdev_name_ok(s)) {
		snprintf(out, cap, "%s", s);
		free(s);
		return;
	}
	free(s);
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/device/net", root ? "" : sysroot,
		 dev);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d)) && n_net < 64) {
		char name[PORTWATCH_NETDEV_MAX + 1], *end;
		long dp;

		if (!netdev_name_ok(de->d_name) || de->d_name[0] == '.')
			continue;
		memcpy(name, de->d_name, strlen(de->d_name) + 1); /* checked: 15 bytes at most */
		n_net++;
		memcpy(only, name, strlen(name) + 1);
		snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/device/net/%s/dev_port",
			 root ? "" : sysroot, dev, name);
		if (fs_read_attr(path, &s) == 0) {
			dp = strtol(s, &end, 10);
			if (end != s && !*end && dp >= 0 && (uint64_t)dp + 1 == port) {
				snprintf(out, cap, "%s", name);
				free(s);
				break;
			}
		}
		free(s);
		s = NULL;
	}
	closedir(d);
	if (!out[0] && n_net == 1)
		snprintf(out, cap, "%s", only);
}

/* The sum of SYSROOT/sys/class/net/NETDEV/queues/tx-N/tx_timeout over its transmit queues
 * (at most PORTWATCH_TX_QUEUES of them), and how many were read. false when none could be. A
 * node has hundreds of these files: each is opened relative to the queues directory and read
 * once into the stack. */
static bool netdev_tx_timeouts(const char *sysroot, const char *netdev, uint64_t *ret,
			       size_t *ret_read)
{
	bool root = !sysroot || !*sysroot || strcmp(sysroot, "/") == 0;
	char dir[512], rel[300], text[32];
	struct dirent *de;
	size_t queues = 0, read_ok = 0;
	uint64_t sum = 0;
	bool any = false;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/sys/class/net/%s/queues", root ? "" : sysroot, netdev);
	d = opendir(dir);
	if (!d)
		return false;
	while ((de = readdir(d)) && queues < PORTWATCH_TX_QUEUES) {
		unsigned long long v;
		ssize_t n;
		char *end;
		int fd;

		if (strncmp(de->d_name, "tx-", 3) != 0 || !isdigit((unsigned char)de->d_name[3]))
			continue;
		queues++;
		snprintf(rel, sizeof(rel), "%s/tx_timeout", de->d_name);
		fd = openat(dirfd(d), rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		n = read(fd, text, sizeof(text) - 1);
		close(fd);
		if (n <= 0 || !isdigit((unsigned char)text[0]))
			continue;
		text[n] = '\0';
		errno = 0;
		v = strtoull(text, &end, 10);
		if (errno || (*end && strcmp(end, "\n") != 0) || sum + v < sum)
			continue;
		sum += v;
		read_ok++;
		any = true;
	}
	closedir(d);
	*ret = sum;
	*ret_read = read_ok;
	return any;
}

static struct port_state *port_find(struct portwatch *w, const char *dev, uint32_t port)
{
	for (size_t i = 0; i < w->n_ports; i++)
		if (w->ports[i].port == port && strcmp(w->ports[i].device, dev) == 0)
			return &w->ports[i];
	if (w->n_ports == w->cap_ports) {
		size_t cap = w->cap_ports ? w->cap_ports * 2 : 8;
		struct port_state *p = realloc(w->ports, cap * sizeof(*p));
		if (!p)
			return NULL;
		w->ports = p;
		w->cap_ports = cap;
	}
	struct port_state *p = &w->ports[w->n_ports++];
	memset(p, 0, sizeof(*p));
	snprintf(p->device, sizeof(p->device), "%s", dev);
	p->port = port;
	return p;
}

static void emit(struct portwatch_event *ev, size_t max, size_t *n, const struct portwatch_event *e)
{
	if (*n < max)
		ev[*n] = *e;
	(*n)++;
}

/* The event of rule for a counter that rose by delta in minutes, into *e: false when it is
 * under both of the rule's levels. on: " on NETDEV" or "". */
static bool rule_event(const struct portwatch_rule *rule, const char *dev, uint32_t port,
		       uint64_t delta, double minutes, const char *on, struct portwatch_event *e)
{
	double rate = (double)delta / minutes;

	memset(e, 0, sizeof(*e));
	if (rule->crit_per_min > 0 && rate >= rule->crit_per_min)
		e->severity = HEALTH_CRITICAL;
	else if (rule->warn_per_min > 0 && rate >= rule->warn_per_min)
		e->severity = HEALTH_WARNING;
	else
		return false;
	snprintf(e->device, sizeof(e->device), "%s", dev);
	e->port = port;
	snprintf(e->counter, sizeof(e->counter), "%s", rule->counter);
	e->per_min = rate;
	snprintf(e->what, sizeof(e->what), "%s/%u: %s +%llu%s (%.1f/min, %s at %g/min)", dev, port,
		 rule->counter, (unsigned long long)delta, on, rate,
		 e->severity == HEALTH_CRITICAL ? "critical" : "warning",
		 e->severity == HEALTH_CRITICAL ? rule->crit_per_min : rule->warn_per_min);
	return true;
}

static const struct portwatch_rule *rule_find(const struct portwatch *w, const char *counter)
{
	for (const struct portwatch_rule *rule = w->rules; rule->counter; rule++)
		if (strcmp(rule->counter, counter) == 0)
			return rule;
	return NULL;
}

/* The port's state, rate and netdev transmit timeouts against the previous tick's, minutes
 * ago (0: the baseline, nothing compared). */
static void check_port(struct portwatch *w, const char *dev, uint32_t port, double minutes,
		       struct portwatch_event *ev, size_t max, size_t *n)
{
	struct port_state *p = port_find(w, dev, port);
	char state[32], netdev[PORTWATCH_NETDEV_MAX + 1];
	const struct portwatch_rule *rule;
	uint64_t tx = 0;
	size_t tx_queues = 0;
	bool tx_known;
	long rate;
	struct portwatch_event e;

	if (!p)
		return;
	read_port(w->sysroot, dev, port, state, sizeof(state), &rate);
	port_netdev(w->sysroot, dev, port, netdev, sizeof(netdev));
	tx_known = netdev[0] && netdev_tx_timeouts(w->sysroot, netdev, &tx, &tx_queues);
	memset(&e, 0, sizeof(e));
	snprintf(e.device, sizeof(e.device), "%s", dev);
	e.port = port;
	if (p->seen && state[0] && p->state[0] && strcmp(state, p->state) != 0) {
		bool now_active = strcmp(state, "ACTIVE") == 0;
		e.severity = now_active ? HEALTH_INFO : HEALTH_CRITICAL;
		snprintf(e.what, sizeof(e.what), "%s/%u: %s -> %s", dev, port, p->state, state);
		emit(ev, max, n, &e);
	}
	if (p->seen && rate && p->rate_gbps && rate != p->rate_gbps) {
		e.severity = rate < p->rate_gbps ? HEALTH_WARNING : HEALTH_INFO;
		snprintf(e.what, sizeof(e.what), "%s/%u: rate %ld -> %ld Gb/s", dev, port,
			 p->rate_gbps, rate);
		emit(ev, max, n, &e);
	}
	/* The same netdev's sum over the same number of queues rose. A netdev renamed or
	 * re-created, or a queue count that changed (ethtool -L: a queue that comes back brings
	 * its old count), starts a new baseline; a sum that went down is skipped, as a reset. */
	if (p->seen && minutes > 0 && tx_known && p->tx_known && tx > p->tx_timeouts &&
	    tx_queues == p->tx_queues && strcmp(netdev, p->netdev) == 0 &&
	    (rule = rule_find(w, PORTWATCH_TX_TIMEOUT))) {
		char on[PORTWATCH_NETDEV_MAX + 5];

		snprintf(on, sizeof(on), " on %s", netdev);
		if (rule_event(rule, dev, port, tx - p->tx_timeouts, minutes, on, &e))
			emit(ev, max, n, &e);
	}
	snprintf(p->state, sizeof(p->state), "%s", state);
	p->rate_gbps = rate;
	snprintf(p->netdev, sizeof(p->netdev), "%s", netdev);
	p->tx_timeouts = tx;
	p->tx_queues = tx_queues;
	p->tx_known = tx_known;
	p->seen = true;
}

int portwatch_tick(struct portwatch *w, int64_t now_ms, struct portwatch_event *ev, size_t max,
		   size_t *ret_n)
{
	struct counters_snap *cur = NULL;
	json_t *delta, *ports, *pj;
	size_t n = 0, i;
	double minutes;
	int r;

	*ret_n = 0;
	if (w->prev && now_ms - w->prev_ms < 1000)
		return 0;
	r = counters_snapshot(w->sysroot, NULL, &cur);
	if (r < 0)
		return r;
	if (!w->prev) {
		/* The baseline: remember each port's state too. */
		delta = counters_delta_json(cur, cur, NULL, 0);
		if (!delta) {
			counters_snap_free(cur);
			return -ENOMEM;
		}
		json_array_foreach(json_object_get(delta, "ports"), i, pj) check_port(
			w, json_string_value(json_object_get(pj, "device")),
			(uint32_t)json_integer_value(json_object_get(pj, "port")), 0, ev, 0, &n);
		json_decref(delta);
		w->prev = cur;
		w->prev_ms = now_ms;
		return 0;
	}
	delta = counters_delta_json(w->prev, cur, NULL, 0);
	if (!delta) {
		counters_snap_free(cur);
		return -ENOMEM;
	}
	minutes = (double)(now_ms - w->prev_ms) / 60000.0;
	ports = json_object_get(delta, "ports");
	json_array_foreach(ports, i, pj)
	{
		const char *dev = json_string_value(json_object_get(pj, "device"));
		uint32_t port = (uint32_t)json_integer_value(json_object_get(pj, "port"));
		json_t *d = json_object_get(pj, "delta");

		if (!dev)
			continue;
		check_port(w, dev, port, minutes, ev, max, &n);
		for (const struct portwatch_rule *rule = w->rules; rule->counter; rule++) {
			json_t *v = json_object_get(d, rule->counter);
			struct portwatch_event e;

			if (strcmp(rule->counter, PORTWATCH_TX_TIMEOUT) == 0)
				continue; /* the netdev's, in check_port() */
			if (!json_is_integer(v) || json_integer_value(v) <= 0)
				continue; /* not exposed, not moved, or went down */
			if (rule_event(rule, dev, port, (uint64_t)json_integer_value(v), minutes,
				       "", &e))
				emit(ev, max, &n, &e);
		}
	}
	json_decref(delta);
	counters_snap_free(w->prev);
	w->prev = cur;
	w->prev_ms = now_ms;
	*ret_n = n;
	return 0;
}
