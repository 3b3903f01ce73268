/* Unit tests of the kernel log watcher's parser (nodeagent/kmsg): NVRM Xid records (known,
 * unknown, the PCI: prefix or not, garbled), mlx5_core link/module/firmware records, PCIe AER
 * records, records of no interest, malformed headers; the limiter's deduplication window,
 * repeat counts and burst; the reader of a sysroot's dev/kmsg file with continuation lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nodeagent/kmsg.h"

static int parse(const char *rec, struct kmsg_event *ev)
{
	return kmsg_parse(rec, strlen(rec), ev);
}

static void test_xid(void **state)
{
	struct kmsg_event ev;

	(void)state;
	assert_int_equal(
		parse("3,1057,8123456789,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', "
		      "name=<unknown>, GPU has fallen off the bus.",
		      &ev),
		1);
	assert_int_equal(ev.kind, KMSG_XID);
	assert_int_equal(ev.xid, 79);
	assert_int_equal(ev.severity, HEALTH_CRITICAL);
	assert_int_equal(ev.seq, 1057);
	assert_int_equal(ev.usec, 8123456789ULL);
	assert_string_equal(ev.source, "0000:18:00");
	assert_string_equal(ev.what, "Xid 79: GPU has fallen off the bus");
	assert_non_null(strstr(ev.text, "fallen off the bus."));

	/* Older drivers: no "PCI:" and a function number. */
	assert_int_equal(
		parse("4,2,3,-;NVRM: Xid (0000:3b:00.0): 13, Graphics SM Warp Exception", &ev), 1);
	assert_int_equal(ev.xid, 13);
	assert_int_equal(ev.severity, HEALTH_WARNING);
	assert_string_equal(ev.source, "0000:3b:00.0");

	/* A number not in the table: named by its number, a warning. */
	assert_int_equal(parse("4,2,3,-;NVRM: Xid (PCI:0000:3b:00): 999, something new", &ev), 1);
	assert_string_equal(ev.what, "Xid 999");
	assert_int_equal(ev.severity, HEALTH_WARNING);
	for (int x = 48; x <= 95; x++) {
		enum health_severity s;
		const char *m = kmsg_xid_meaning(x, &s);
		if (x == 48 || x == 64 || x == 74 || x == 79 || x == 95) {
			assert_non_null(m);
			assert_int_equal(s, HEALTH_CRITICAL);
		}
	}

	/* Garbled: no address, no number, a zero. */
	assert_int_equal(parse("4,2,3,-;NVRM: Xid (PCI:zz): 79, x", &ev), 0);
	assert_int_equal(parse("4,2,3,-;NVRM: Xid (PCI:0000:18:00): , x", &ev), 0);
	assert_int_equal(parse("4,2,3,-;NVRM: Xid (PCI:0000:18:00): 0, x", &ev), 0);
	assert_int_equal(parse("4,2,3,-;NVRM: Xid (PCI:0000:18:00", &ev), 0);
}

static void test_mlx5(void **state)
{
	struct kmsg_event ev;

	(void)state;
	assert_int_equal(parse("6,10,20,-;mlx5_core 0000:17:00.0 ens1f0np0: Link down", &ev), 1);
	assert_int_equal(ev.kind, KMSG_MLX5);
	assert_string_equal(ev.what, "link down");
	assert_string_equal(ev.source, "0000:17:00.0 ens1f0np0");
	assert_int_equal(ev.severity, HEALTH_WARNING);

	assert_int_equal(parse("6,11,21,-;mlx5_core 0000:17:00.0 ens1f0np0: Link up", &ev), 1);
	assert_string_equal(ev.what, "link up");
	assert_int_equal(ev.severity, HEALTH_INFO);

	assert_int_equal(parse("4,12,22,-;mlx5_core 0000:17:00.0: Port module event: module 0, "
			       "Cable unplugged",
			       &ev),
			 1);
	assert_string_equal(ev.what, "cable or module error");
	assert_string_equal(ev.source, "0000:17:00.0");

	assert_int_equal(parse("2,13,23,-;mlx5_core 0000:17:00.0: print_health_info:415:(pid 0): "
			       "assert_var[0] 0x00000001",
			       &ev),
			 1);
	assert_string_equal(ev.what, "firmware health error");
	assert_int_equal(ev.severity, HEALTH_CRITICAL);

	/* mlx5e_tx_timeout(): a transmit queue the driver had to recover. */
	assert_int_equal(
		parse("4,15,25,-;mlx5_core 0000:17:00.0 ens1f0np0: TX timeout on queue: 3, "
		      "SQ: 0x10e, CQ: 0x48c, SQ Cons: 0x0 SQ Prod: 0x5, usecs since last "
		      "trans: 15392000",
		      &ev),
		1);
	assert_string_equal(ev.what, "transmit timeout");
	assert_string_equal(ev.source, "0000:17:00.0 ens1f0np0");
	assert_int_equal(ev.severity, HEALTH_CRITICAL);

	/* mlx5 chatter that is not a health event. */
	assert_int_equal(
		parse("6,14,24,-;mlx5_core 0000:17:00.0: firmware version: 28.39.1002", &ev), 0);
	assert_int_equal(parse("6,14,24,-;mlx5_core zz: Link down", &ev), 0);
}

/* The kernel's transmit watchdog, as Linux 6.1 (Debian 12; WARN_ONCE, the netdev first) and 6.9+
 * (netdev_crit: the driver's prefix, then the netdev) print it. */
static void test_netdev_watchdog(void **state)
{
	struct kmsg_event ev;

	(void)state;
	assert_int_equal(
		parse("6,30,53000000,-;NETDEV WATCHDOG: eth0 (virtio_net): transmit queue 0 "
		      "timed out",
		      &ev),
		1);
	assert_int_equal(ev.kind, KMSG_NETDEV);
	assert_int_equal(ev.severity, HEALTH_CRITICAL);
	assert_string_equal(ev.what, "transmit queue timed out");
	assert_string_equal(ev.source, "eth0");

	assert_int_equal(
		parse("2,31,54,-;mlx5_core 0000:17:00.0 ens1f0np0: NETDEV WATCHDOG: CPU: 3: "
		      "transmit queue 5 timed out 15360 ms",
		      &ev),
		1);
	assert_int_equal(ev.kind, KMSG_NETDEV);
	assert_string_equal(ev.source, "ens1f0np0");

	/* A shape not known: still the event, no source made up. */
	assert_int_equal(
		parse("2,32,55,-;NETDEV WATCHDOG: CPU: 1: transmit queue 0 timed out", &ev), 1);
	assert_string_equal(ev.source, "");
	assert_int_equal(parse("2,33,56,-;NETDEV WATCHDOG: averyveryverylongname (x): transmit "
			       "queue 0 timed out",
			       &ev),
			 1);
	assert_string_equal(ev.source, "");
	/* The tag alone, with no timeout, is nothing. */
	assert_int_equal(parse("6,34,57,-;NETDEV WATCHDOG: eth0 (virtio_net): enabled", &ev), 0);
}

static void test_aer(void **state)
{
	struct kmsg_event ev;

	(void)state;
	assert_int_equal(parse("4,30,40,-;pcieport 0000:00:01.0: AER: Corrected error received: "
			       "0000:01:00.0",
			       &ev),
			 1);
	assert_int_equal(ev.kind, KMSG_AER);
	assert_string_equal(ev.what, "AER corrected error");
	assert_string_equal(ev.source, "0000:01:00.0");
	assert_int_equal(ev.severity, HEALTH_WARNING);

	assert_int_equal(
		parse("3,31,41,-;pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: "
		      "0000:01:00.0",
		      &ev),
		1);
	assert_string_equal(ev.what, "AER uncorrected (fatal) error");
	assert_int_equal(ev.severity, HEALTH_CRITICAL);

	/* No device after "received": the reporting port. */
	assert_int_equal(parse("3,32,42,-;pcieport 0000:00:03.1: AER: Multiple Uncorrected "
			       "(Non-Fatal) error received",
			       &ev),
			 1);
	assert_string_equal(ev.what, "AER uncorrected (non-fatal) error");
	assert_string_equal(ev.source, "0000:00:03.1");
}

static void test_not_of_interest_and_malformed(void **state)
{
	struct kmsg_event ev;

	(void)state;
	assert_int_equal(parse("6,1,2,-;eth0: renamed from veth12", &ev), 0);
	assert_int_equal(parse("6,1,2,-,caller=T1;systemd[1]: Started", &ev), 0);
	/* Continuation lines are not part of the text. */
	assert_int_equal(parse("6,1,2,-;usb 1-1: new device\n SUBSYSTEM=usb\n DEVICE=c189:1", &ev),
			 0);
	assert_int_equal(parse("", &ev), -EINVAL);
	assert_int_equal(parse("NVRM: Xid (PCI:0000:18:00): 79, x", &ev), -EINVAL);
	assert_int_equal(parse("6,1,2;no flags", &ev), -EINVAL);
	assert_int_equal(parse("6,1,2,-no semicolon", &ev), -EINVAL);
	assert_int_equal(parse("6,99999999999999999999,2,-;x", &ev), -EINVAL);
	assert_int_equal(kmsg_parse(NULL, 0, &ev), -EINVAL);
	/* Control bytes in the text are not passed on. */
	assert_int_equal(parse("3,1,2,-;NVRM: Xid (PCI:0000:18:00): 48, \x1b[31mDBE", &ev), 1);
	assert_null(strchr(ev.text, '\x1b'));
}

static void test_limiter(void **state)
{
	struct kmsg_limiter l;
	struct kmsg_event a, b;
	uint64_t rep;

	(void)state;
	assert_int_equal(parse("6,10,20,-;mlx5_core 0000:17:00.0 ib0: Link down", &a), 1);
	assert_int_equal(parse("6,11,21,-;mlx5_core 0000:17:00.0 ib0: Link up", &b), 1);
	kmsg_limiter_init(&l, 10000, 5);
	assert_true(kmsg_limiter_pass(&l, &a, 1000, &rep));
	assert_int_equal(rep, 0);
	/* A flapping link: the downs within the window are repeats, the ups are their own key. */
	assert_true(kmsg_limiter_pass(&l, &b, 1100, &rep));
	assert_false(kmsg_limiter_pass(&l, &a, 1200, &rep));
	assert_false(kmsg_limiter_pass(&l, &b, 1300, &rep));
	assert_false(kmsg_limiter_pass(&l, &a, 1400, &rep));
	/* After the window, the next one passes and says how many were suppressed. */
	assert_true(kmsg_limiter_pass(&l, &a, 11000, &rep));
	assert_int_equal(rep, 2);
	/* The burst: at most 5 a minute, whatever they are. */
	kmsg_limiter_init(&l, 10, 5);
	for (int i = 0; i < 5; i++)
		assert_true(kmsg_limiter_pass(&l, &a, 100 + i * 20, NULL));
	assert_false(kmsg_limiter_pass(&l, &b, 300, NULL));
	assert_int_equal(l.dropped, 1);
	assert_true(kmsg_limiter_pass(&l, &b, 100 + 60000, NULL));
	/* More distinct keys than kept: the oldest is forgotten, nothing overflows. */
	kmsg_limiter_init(&l, 100000, 1000);
	for (int i = 0; i < KMSG_LIMIT_KEYS + 10; i++) {
		struct kmsg_event e = a;
		snprintf(e.source, sizeof(e.source), "dev%d", i);
		assert_true(kmsg_limiter_pass(&l, &e, i, NULL));
	}
	assert_int_equal(l.n_keys, KMSG_LIMIT_KEYS);
}

static void test_reader_file(void **state)
{
	char root[256], path[300], rec[KMSG_RECORD_MAX];
	const char *tmp = getenv("TMPDIR");
	struct kmsg_reader *r;
	FILE *f;
	ssize_t n;
	struct kmsg_event ev;
	int events = 0, records = 0;

	(void)state;
	snprintf(root, sizeof(root), "%s/ry-kmsg-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/dev", root);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(kmsg_reader_open(root, true, &r), -ENOENT);
	snprintf(path, sizeof(path), "%s/dev/kmsg", root);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("6,1,100,-;Linux version 6.1.0-28-amd64\n"
	      "3,2,200,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', GPU has fallen off the "
	      "bus.\n"
	      " SUBSYSTEM=pci\n"
	      " DEVICE=+pci:0000:18:00.0\n"
	      "4,3,300,-;pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0\n"
	      "6,4,400,-;mlx5_core 0000:17:00.0 ib0: Link down\n",
	      f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(kmsg_reader_open(root, true, &r), 0);
	while ((n = kmsg_reader_next(r, rec, sizeof(rec))) > 0) {
		records++;
		assert_null(strchr(rec, '\n'));
		if (kmsg_parse(rec, (size_t)n, &ev) == 1)
			events++;
	}
	assert_int_equal(n, 0);
	assert_int_equal(records, 4);
	assert_int_equal(events, 3);
	/* The file grows: the new record is read. */
	f = fopen(path, "a");
	assert_non_null(f);
	fputs("\n3,5,500,-;NVRM: Xid (PCI:0000:18:00): 74, NVLink\n", f);
	assert_int_equal(fclose(f), 0);
	n = kmsg_reader_next(r, rec, sizeof(rec));
	assert_true(n > 0);
	assert_int_equal(kmsg_parse(rec, (size_t)n, &ev), 1);
	assert_int_equal(ev.xid, 74);
	kmsg_reader_free(r);
	snprintf(path, sizeof(path), "rm -rf '%s'", root);
	assert_int_equal(system(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xid),
		cmocka_unit_test(test_mlx5),
		cmocka_unit_test(test_netdev_watchdog),
		cmocka_unit_test(test_aer),
		cmocka_unit_test(test_not_of_interest_and_malformed),
		cmocka_unit_test(test_limiter),
		cmocka_unit_test(test_reader_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
