/* Unit tests of the fabric port watcher (nodeagent/portwatch): a fixture sysroot with an
 * InfiniBand port and an rxe port; a rising symbol-error rate becomes a warning then a critical
 * event, a link that flapped (link_downed moved, state ACTIVE -> DOWN -> ACTIVE) is seen, a rate
 * drop is a warning, a counter that went down is ignored, quiet ticks say nothing, and ticks
 * closer than a second keep their baseline; each port's netdev (RoCE's by its GID, IPoIB's by
 * dev_port) is watched for transmit timeouts, summed over its queues. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nodeagent/portwatch.h"

static char root[256];

static void put(const char *text, const char *rel)
{
	char path[1024], dir[1024], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	for (slash = strchr(dir + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(dir, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

#define IB  "sys/class/infiniband/mlx5_0/ports/1/"
#define RXE "sys/class/infiniband/rxe0/ports/1/"

static int setup(void **state)
{
	const char *tmp = getenv("TMPDIR");

	(void)state;
	snprintf(root, sizeof(root), "%s/ry-portwatch-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(root))
		return -1;
	put("0\n", IB "counters/symbol_error");
	put("0\n", IB "counters/link_downed");
	put("0\n", IB "counters/port_rcv_errors");
	put("4: ACTIVE\n", IB "state");
	put("400 Gb/sec (4X NDR)\n", IB "rate");
	put("100\n", RXE "hw_counters/sent_pkts");
	put("0\n", RXE "hw_counters/link_downed");
	put("4: ACTIVE\n", RXE "state");
	put("10 Gb/sec (1X QDR)\n", RXE "rate");
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static const struct portwatch_event *find(const struct portwatch_event *ev, size_t n,
					  const char *needle)
{
	for (size_t i = 0; i < n; i++)
		if (strstr(ev[i].what, needle))
			return &ev[i];
	return NULL;
}

static void test_rates_and_states(void **state)
{
	struct portwatch *w;
	struct portwatch_event ev[16];
	const struct portwatch_event *e;
	size_t n;

	(void)state;
	assert_int_equal(portwatch_new(root, NULL, &w), 0);
	assert_int_equal(portwatch_tick(w, 1000, ev, 16, &n), 0);
	assert_int_equal(n, 0); /* the baseline */

	/* A quiet minute: nothing. */
	put("500\n", RXE "hw_counters/sent_pkts");
	assert_int_equal(portwatch_tick(w, 61000, ev, 16, &n), 0);
	assert_int_equal(n, 0);

	/* Symbol errors at 30 a minute: a warning (over 24/min, under 240/min). */
	put("30\n", IB "counters/symbol_error");
	assert_int_equal(portwatch_tick(w, 121000, ev, 16, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].severity, HEALTH_WARNING);
	assert_string_equal(ev[0].counter, "symbol_error");
	assert_string_equal(ev[0].device, "mlx5_0");
	assert_int_equal(ev[0].port, 1);
	assert_true(ev[0].per_min > 29.9 && ev[0].per_min < 30.1);

	/* Rising: 300 more in 30 s is 600/min, critical. */
	put("330\n", IB "counters/symbol_error");
	assert_int_equal(portwatch_tick(w, 151000, ev, 16, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].severity, HEALTH_CRITICAL);

	/* Ticks under a second apart compare nothing and keep the baseline. */
	put("340\n", IB "counters/symbol_error");
	assert_int_equal(portwatch_tick(w, 151500, ev, 16, &n), 0);
	assert_int_equal(n, 0);

	/* The rxe link went down (rxe counts link_downed too): critical, and its state. */
	put("1\n", RXE "hw_counters/link_downed");
	put("1: DOWN\n", RXE "state");
	assert_int_equal(portwatch_tick(w, 211000, ev, 16, &n), 0);
	e = find(ev, n, "rxe0/1: link_downed");
	assert_non_null(e);
	assert_int_equal(e->severity, HEALTH_CRITICAL);
	e = find(ev, n, "rxe0/1: ACTIVE -> DOWN");
	assert_non_null(e);
	assert_int_equal(e->severity, HEALTH_CRITICAL);
	/* mlx5_0's 10 symbol errors over a minute are under the warning rate. */
	assert_null(find(ev, n, "mlx5_0/1: symbol_error"));

	/* Back up, at a lower rate on the IB port. */
	put("4: ACTIVE\n", RXE "state");
	put("200 Gb/sec (4X HDR)\n", IB "rate");
	assert_int_equal(portwatch_tick(w, 271000, ev, 16, &n), 0);
	assert_int_equal(n, 2);
	e = find(ev, n, "rxe0/1: DOWN -> ACTIVE");
	assert_non_null(e);
	assert_int_equal(e->severity, HEALTH_INFO);
	e = find(ev, n, "mlx5_0/1: rate 400 -> 200 Gb/s");
	assert_non_null(e);
	assert_int_equal(e->severity, HEALTH_WARNING);

	/* A counter reset (went down) is no event; more events than room are counted. */
	put("0\n", IB "counters/symbol_error");
	put("50\n", IB "counters/port_rcv_errors");
	put("5\n", IB "counters/link_downed");
	assert_int_equal(portwatch_tick(w, 331000, ev, 1, &n), 0);
	assert_int_equal(n, 2);
	assert_null(find(ev, 1, "symbol_error"));
	portwatch_free(w);
}

static void test_custom_rules_and_empty(void **state)
{
	static const struct portwatch_rule rules[] = {{"sent_pkts", 100, 0}, {NULL, 0, 0}};
	struct portwatch *w;
	struct portwatch_event ev[4];
	size_t n;
	char empty[300];

	(void)state;
	assert_int_equal(portwatch_new(root, rules, &w), 0);
	assert_int_equal(portwatch_tick(w, 0, ev, 4, &n), 0);
	put("100000\n", RXE "hw_counters/sent_pkts");
	assert_int_equal(portwatch_tick(w, 60000, ev, 4, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(ev[0].counter, "sent_pkts");
	portwatch_free(w);

	/* No fabric at all: no events, no error. */
	snprintf(empty, sizeof(empty), "%s/none", root);
	assert_int_equal(mkdir(empty, 0700), 0);
	assert_int_equal(portwatch_new(empty, NULL, &w), 0);
	assert_int_equal(portwatch_tick(w, 0, ev, 4, &n), 0);
	assert_int_equal(portwatch_tick(w, 60000, ev, 4, &n), 0);
	assert_int_equal(n, 0);
	portwatch_free(w);
}

/* One tick of w at now_ms into ev (room for 8): how many events. */
static size_t tick(struct portwatch *w, int64_t now_ms, struct portwatch_event *ev)
{
	size_t n;

	assert_int_equal(portwatch_tick(w, now_ms, ev, 8, &n), 0);
	return n;
}

static void test_tx_timeouts(void **state)
{
	static const struct portwatch_rule lenient[] = {{"tx_timeout", 1, 0}, {NULL, 0, 0}};
	struct portwatch *w;
	struct portwatch_event ev[8];
	const struct portwatch_event *e;
	size_t n;

	(void)state;
	/* rxe0/1 is eth1's (its GID 0); mlx5_0 has two IPoIB netdevs, port 1 is ib0's. */
	put("eth1\n", RXE "gid_attrs/ndevs/0");
	put("0\n", "sys/class/net/eth1/queues/tx-0/tx_timeout");
	put("0\n", "sys/class/net/eth1/queues/tx-1/tx_timeout");
	put("7\n", "sys/class/net/eth1/queues/rx-0/rps_cpus"); /* not a transmit queue */
	put("0\n", "sys/class/infiniband/mlx5_0/device/net/ib0/dev_port");
	put("1\n", "sys/class/infiniband/mlx5_0/device/net/ib1/dev_port");
	put("0\n", "sys/class/net/ib0/queues/tx-0/tx_timeout");
	put("0\n", "sys/class/net/ib1/queues/tx-0/tx_timeout");
	assert_int_equal(portwatch_new(root, NULL, &w), 0);
	assert_int_equal(portwatch_tick(w, 0, ev, 8, &n), 0);
	assert_int_equal(n = tick(w, 60000, ev), 0);

	/* eth1's second queue timed out twice: any movement is critical by default. ib1 is port
	 * 2's: its timeouts blame nobody here. */
	put("2\n", "sys/class/net/eth1/queues/tx-1/tx_timeout");
	put("9\n", "sys/class/net/ib1/queues/tx-0/tx_timeout");
	assert_int_equal(n = tick(w, 120000, ev), 1);
	assert_int_equal(ev[0].severity, HEALTH_CRITICAL);
	assert_string_equal(ev[0].counter, "tx_timeout");
	assert_string_equal(ev[0].device, "rxe0");
	assert_non_null(strstr(ev[0].what, "rxe0/1: tx_timeout +2 on eth1"));
	assert_true(ev[0].per_min > 1.9 && ev[0].per_min < 2.1);

	/* ib0 once. */
	put("1\n", "sys/class/net/ib0/queues/tx-0/tx_timeout");
	assert_int_equal(n = tick(w, 180000, ev), 1);
	e = find(ev, n, "mlx5_0/1: tx_timeout +1 on ib0");
	assert_non_null(e);
	assert_int_equal(e->severity, HEALTH_CRITICAL);

	/* A queue that cannot be read (garbled here; gone with ethtool -L on a node) changes the
	 * count of queues read: a new baseline, and its old count coming back is no event. */
	put("x\n", "sys/class/net/eth1/queues/tx-1/tx_timeout");
	assert_int_equal(n = tick(w, 210000, ev), 0);
	put("2\n", "sys/class/net/eth1/queues/tx-1/tx_timeout");
	assert_int_equal(n = tick(w, 220000, ev), 0);

	/* The port's netdev changed (a rename, a new device): a new baseline, not an event. */
	put("eth9\n", RXE "gid_attrs/ndevs/0");
	put("50\n", "sys/class/net/eth9/queues/tx-0/tx_timeout");
	assert_int_equal(n = tick(w, 240000, ev), 0);
	put("51\n", "sys/class/net/eth9/queues/tx-0/tx_timeout");
	assert_int_equal(n = tick(w, 300000, ev), 1);
	assert_non_null(find(ev, n, "rxe0/1: tx_timeout +1 on eth9"));
	portwatch_free(w);

	/* A playbook's rule of that name replaces the default: here a warning only. */
	assert_int_equal(portwatch_new(root, lenient, &w), 0);
	assert_int_equal(portwatch_tick(w, 0, ev, 8, &n), 0);
	put("53\n", "sys/class/net/eth9/queues/tx-0/tx_timeout");
	assert_int_equal(n = tick(w, 60000, ev), 1);
	assert_int_equal(ev[0].severity, HEALTH_WARNING);
	assert_non_null(strstr(ev[0].what, "warning at 1/min"));
	portwatch_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rates_and_states, setup, teardown),
		cmocka_unit_test_setup_teardown(test_custom_rules_and_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tx_timeouts, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
