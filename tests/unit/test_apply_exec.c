/* Unit tests for each step executor of the apply engine on copies of the fixture sysroots (with
 * the test doubles installed): check mode (diff, nothing changed: tree hash and no mutating
 * calls), apply, a second apply reporting no change, and failures with rollback. */
#include "nodeagent/apply/apply.h"

#include "common/util/error.h"
#include "nodeagent/facts/facts.h"
#include "tests/unit/test_apply_util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* The message's first line is want, and something lies beneath it. */
static void headline_is(const char *message, const char *want)
{
	size_t head = strcspn(message, "\n");

	if (strlen(want) != head || strncmp(message, want, head) != 0)
		fail_msg("headline:\n got: %s\nwant: %s", message, want);
	if (!message[head] || !message[head + 1])
		fail_msg("no detail under \"%s\"", message);
}

/* check (changed, tree untouched), apply (changed), apply again (ok); returns the check diff. */
static struct tu_outcome cycle(const char *root, const char *type, const char *params,
			       const json_t *facts)
{
	uint64_t before = tu_tree_hash(root);
	struct tu_outcome chk = tu_run1(root, type, params, true, facts), o;

	if (chk.status != APPLY_STATUS_CHANGED)
		fail_msg("check: %s: %s", apply_status_name(chk.status), chk.message);
	assert_true(chk.diff[0] != '\0');
	assert_true(tu_tree_hash(root) == before);
	o = tu_run1(root, type, params, false, facts);
	if (o.status != APPLY_STATUS_CHANGED)
		fail_msg("apply: %s: %s", apply_status_name(o.status), o.message);
	assert_true(tu_tree_hash(root) != before);
	before = tu_tree_hash(root);
	o = tu_run1(root, type, params, false, facts);
	if (o.status != APPLY_STATUS_OK)
		fail_msg("second apply: %s: %s / %s", apply_status_name(o.status), o.message,
			 o.diff);
	assert_string_equal(o.diff, "");
	assert_true(tu_tree_hash(root) == before);
	o = tu_run1(root, type, params, true, facts);
	assert_int_equal(o.status, APPLY_STATUS_OK);
	return chk;
}

static void assert_file(const char *root, const char *rel, const char *content)
{
	char *got = tu_read(root, rel);

	if (!got)
		fail_msg("%s: missing", rel);
	assert_string_equal(got, content);
	free(got);
}

static void test_nccl_ucx_mpi(void **state)
{
	char *root = tu_sysroot("h200-roce");
	struct tu_outcome o;

	(void)state;
	o = cycle(root, "nccl",
		  "{\"settings\":{\"NCCL_IB_HCA\":\"mlx5\",\"NCCL_IB_GID_INDEX\":\"3\"}}", NULL);
	assert_non_null(strstr(o.diff, "--- /dev/null\n+++ /etc/nccl.conf\n@@ -0,0 +1,2 @@\n"
				       "+NCCL_IB_HCA=mlx5\n+NCCL_IB_GID_INDEX=3\n"));
	assert_file(root, "etc/nccl.conf", "NCCL_IB_HCA=mlx5\nNCCL_IB_GID_INDEX=3\n");
	/* merge into an existing file: comments and other keys kept, duplicates dropped */
	tu_write(root, "etc/nccl.conf",
		 "# site settings\nNCCL_IB_HCA = mlx5_0\nNCCL_DEBUG=WARN\nNCCL_IB_HCA=dup\n");
	o = cycle(root, "nccl",
		  "{\"settings\":{\"NCCL_IB_HCA\":\"mlx5\",\"NCCL_IB_GID_INDEX\":\"3\"}}", NULL);
	assert_non_null(strstr(o.diff, "-NCCL_IB_HCA = mlx5_0\n+NCCL_IB_HCA = mlx5\n"));
	assert_file(root, "etc/nccl.conf",
		    "# site settings\nNCCL_IB_HCA = mlx5\nNCCL_DEBUG=WARN\nNCCL_IB_GID_INDEX=3\n");
	cycle(root, "ucx",
	      "{\"settings\":{\"UCX_TLS\":\"rc,cuda_copy\",\"UCX_IB_GID_INDEX\":\"3\"}}", NULL);
	assert_file(root, "etc/ucx/ucx.conf", "UCX_TLS=rc,cuda_copy\nUCX_IB_GID_INDEX=3\n");
	cycle(root, "mpi", "{\"settings\":{\"btl\":\"^openib\",\"pml\":\"ucx\"}}", NULL);
	assert_file(root, "etc/openmpi/openmpi-mca-params.conf", "btl = ^openib\npml = ucx\n");
	cycle(root, "nccl",
	      "{\"settings\":{\"NCCL_NET_GDR_LEVEL\":\"PHB\"},\"path\":\"/opt/nccl.conf\"}", NULL);
	assert_file(root, "opt/nccl.conf", "NCCL_NET_GDR_LEVEL=PHB\n");
	tu_rm(root);
}

static void test_file(void **state)
{
	char *root = tu_sysroot("h200-ib"), *host;
	struct tu_outcome o;
	struct stat st;

	(void)state;
	tu_write(root, "etc/passwd", "root:x:0:0::/root:/bin/sh\nnccl:x:1234:1235::/:/bin/false\n");
	tu_write(root, "etc/group", "root:x:0:\nnccl:x:1235:\n");
	o = cycle(root, "file",
		  "{\"path\":\"/etc/railyard/topo.xml\",\"content\":\"<system/>\\n\","
		  "\"mode\":\"0600\",\"owner\":\"nccl\",\"group\":\"nccl\"}",
		  NULL);
	assert_non_null(strstr(o.diff, "+<system/>\n"));
	assert_non_null(strstr(o.diff, "mode: (new) -> 0600"));
	assert_file(root, "etc/railyard/topo.xml", "<system/>\n");
	host = NULL;
	assert_true(asprintf(&host, "%s/etc/railyard/topo.xml", root) > 0);
	assert_int_equal(stat(host, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, 1234);
	assert_int_equal(st.st_gid, 1235);
	/* mode only */
	assert_int_equal(chmod(host, 0644), 0);
	o = cycle(root, "file",
		  "{\"path\":\"/etc/railyard/topo.xml\",\"content\":\"<system/>\\n\","
		  "\"mode\":\"0600\",\"owner\":\"nccl\",\"group\":\"nccl\"}",
		  NULL);
	assert_string_equal(o.diff, "/etc/railyard/topo.xml mode: 0644 -> 0600\n");
	free(host);
	/* unknown owner: failed, precise */
	o = tu_run1(root, "file", "{\"path\":\"/etc/x\",\"content\":\"x\",\"owner\":\"nobody2\"}",
		    false, NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	assert_non_null(strstr(o.message, "\"nobody2\" not found in /etc/passwd"));
	assert_false(tu_exists(root, "etc/x"));
	tu_rm(root);
}

static void test_sysctl(void **state)
{
	char *root = tu_sysroot("h200-ib");
	struct tu_outcome o;

	(void)state;
	tu_write(root, "proc/sys/net/core/rmem_max", "212992\n");
	tu_write(root, "proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456\n");
	o = cycle(root, "sysctl",
		  "{\"settings\":{\"net.core.rmem_max\":\"268435456\","
		  "\"net.ipv4.tcp_rmem\":\"4096 131072 6291456\"}}",
		  NULL);
	assert_non_null(strstr(o.diff, "net.core.rmem_max: 212992 -> 268435456\n"));
	assert_null(strstr(o.diff, "tcp_rmem:")); /* same value, different blanks */
	assert_non_null(strstr(o.diff, "+++ /etc/sysctl.d/90-railyard.conf\n"));
	assert_file(root, "proc/sys/net/core/rmem_max", "268435456\n");
	assert_file(root, "proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456\n");
	assert_file(root, "etc/sysctl.d/90-railyard.conf",
		    "net.core.rmem_max = 268435456\nnet.ipv4.tcp_rmem = 4096 131072 6291456\n");
	/* without persistence only the running value changes */
	o = cycle(root, "sysctl", "{\"settings\":{\"net.core.rmem_max\":\"1\"},\"persist\":false}",
		  NULL);
	assert_string_equal(o.diff, "net.core.rmem_max: 268435456 -> 1\n");
	/* a key the kernel does not have */
	o = tu_run1(root, "sysctl", "{\"settings\":{\"net.core.nope\":\"1\"}}", true, NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	assert_non_null(
		strstr(o.message, "sysctl net.core.nope: no such key (/proc/sys/net/core/nope)"));
	tu_rm(root);
}

static void test_kmod(void **state)
{
	char *root = tu_sysroot("h200-roce");
	struct tu_outcome o;
	char *mods;

	(void)state;
	o = cycle(root, "kmod",
		  "{\"name\":\"rdma_ucm\",\"options\":{\"debug\":\"0\"},\"persist\":true}", NULL);
	assert_non_null(strstr(o.diff, "module rdma_ucm: not loaded -> loaded\n"));
	assert_non_null(strstr(o.diff, "+options rdma_ucm debug=0\n"));
	assert_int_equal(tu_calls(root, "modprobe rdma_ucm"), 1); /* check and re-apply: none */
	mods = tu_read(root, "proc/modules");
	assert_non_null(strstr(mods, "\nrdma_ucm "));
	free(mods);
	assert_file(root, "etc/modprobe.d/railyard-rdma_ucm.conf",
		    "# Managed by railyard (kmod step)\noptions rdma_ucm debug=0\n");
	assert_file(root, "etc/modules-load.d/railyard-rdma_ucm.conf",
		    "# Managed by railyard (kmod step)\nrdma_ucm\n");
	/* unload */
	o = cycle(root, "kmod", "{\"name\":\"rdma-ucm\",\"state\":\"absent\"}", NULL);
	assert_string_equal(o.diff, "module rdma-ucm: loaded -> absent\n");
	assert_int_equal(tu_calls(root, "modprobe -r rdma-ucm"), 1);
	/* a module this kernel lacks: failed, its files rolled back (one created, one restored) */
	tu_write(root, "etc/railyard-test/modprobe-fail", "nvidia_fs\n");
	tu_write(root, "etc/modprobe.d/railyard-nvidia_fs.conf", "old\n");
	o = tu_run1(root, "kmod",
		    "{\"name\":\"nvidia_fs\",\"options\":{\"x\":\"1\"},\"persist\":true}", false,
		    NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	assert_true(o.rolled_back);
	assert_non_null(strstr(o.message, "`modprobe nvidia_fs` exit 1: modprobe: FATAL: Module "
					  "nvidia_fs not found"));
	assert_non_null(strstr(o.message, "rolled back 2 file(s)"));
	headline_is(o.message,
		    "module nvidia_fs could not be loaded: modprobe: FATAL: Module nvidia_fs not "
		    "found in directory /lib/modules/6.1.0-28-amd64");
	assert_file(root, "etc/modprobe.d/railyard-nvidia_fs.conf", "old\n");
	assert_false(tu_exists(root, "etc/modules-load.d/railyard-nvidia_fs.conf"));
	/* no modprobe in the sysroot: the host's is never run in its place */
	{
		char dbl[4200];

		snprintf(dbl, sizeof(dbl), "%s/usr/local/sbin/modprobe", root);
		assert_int_equal(unlink(dbl), 0);
	}
	o = tu_run1(root, "kmod", "{\"name\":\"ib_ipoib\"}", false, NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	assert_non_null(strstr(o.message, "cannot run modprobe: not in "));
	assert_non_null(strstr(o.message, "never from the host"));
	tu_rm(root);
}

static void test_command(void **state)
{
	char *root = tu_sysroot("h200-ib");
	struct tu_outcome o;
	int64_t t0;

	(void)state;
	tu_write(root, "tmp/.keep", "");
	o = cycle(root, "command",
		  "{\"argv\":[\"sh\",\"-c\",\"echo hi > $RAILYARD_SYSROOT/tmp/made\"],"
		  "\"creates\":\"/tmp/made\"}",
		  NULL);
	assert_string_equal(o.diff, "run: sh -c echo hi > $RAILYARD_SYSROOT/tmp/made\n");
	assert_file(root, "tmp/made", "hi\n");
	/* unless guard */
	o = tu_run1(root, "command", "{\"argv\":[\"false\"],\"unless\":[\"true\"]}", false, NULL);
	assert_int_equal(o.status, APPLY_STATUS_OK);
	assert_non_null(strstr(o.message, "unless"));
	o = tu_run1(root, "command", "{\"argv\":[\"true\"],\"unless\":[\"false\"]}", false, NULL);
	assert_int_equal(o.status, APPLY_STATUS_CHANGED);
	/* failure names the exit status and stderr */
	o = tu_run1(root, "command", "{\"argv\":[\"sh\",\"-c\",\"echo boom >&2; exit 7\"]}", false,
		    NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	assert_non_null(strstr(o.message, "exit 7: boom"));
	/* timeout: killed and reported */
	t0 = time(NULL);
	o = tu_run1(root, "command", "{\"argv\":[\"sleep\",\"60\"],\"timeout\":\"200ms\"}", false,
		    NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	assert_non_null(strstr(o.message, "`sleep` timed out after 200 ms and was killed"));
	assert_true(time(NULL) - t0 < 20);
	/* creates is verified */
	o = tu_run1(root, "command", "{\"argv\":[\"true\"],\"creates\":\"/tmp/never\"}", false,
		    NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	assert_non_null(strstr(o.message, "/tmp/never was not created"));
	tu_rm(root);
}

static void test_assert(void **state)
{
	char *deg = tu_sysroot("h200-degraded"), *ok = tu_sysroot("h200-ib");
	const char *params =
		"{\"that\":[{\"fact\":\"rdma.devices[*].ports[*].state\",\"op\":\"==\","
		"\"value\":\"ACTIVE\",\"quantifier\":\"all\"},"
		"{\"fact\":\"rdma.devices\",\"op\":\"count==\",\"value\":8,\"quantifier\":\"all\"}]"
		"}";
	json_t *facts = NULL;
	struct tu_outcome o;

	(void)state;
	assert_int_equal(facts_collect(deg, &facts), 0);
	o = tu_run1(deg, "assert", params, true, facts);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	assert_non_null(strstr(o.message, "DOWN"));
	if (!strstr(o.message, "state = DOWN (rdma.devices[3].ports[0] is mlx5_3 port 1)"))
		fail_msg("%s", o.message);
	json_decref(facts);
	assert_int_equal(facts_collect(ok, &facts), 0);
	o = tu_run1(ok, "assert", params, false, facts);
	assert_int_equal(o.status, APPLY_STATUS_OK);
	assert_string_equal(o.message, "2 condition(s) hold");
	o = tu_run1(ok, "assert", params, false, NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	json_decref(facts);
	tu_rm(deg);
	tu_rm(ok);
}

/* The headline (the message's first line) of an assert, on facts. */
static void assert_says(const json_t *facts, const char *that, const char *want)
{
	char params[2048];
	struct tu_outcome o;
	size_t head;

	snprintf(params, sizeof(params), "{\"that\":[%s]}", that);
	o = tu_run1("/nonexistent-sysroot", "assert", params, true, facts);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	head = strcspn(o.message, "\n");
	if (strlen(want) != head || strncmp(o.message, want, head) != 0)
		fail_msg("headline of %s:\n got: %s\nwant: %s", that, o.message, want);
	/* the evaluator's text is kept beneath */
	if (!o.message[head] || !o.message[head + 1])
		fail_msg("no detail under \"%s\"", o.message);
}

/* A failed assert says what is wrong in an operator's words, the evaluator's text beneath. */
static void test_assert_words(void **state)
{
	char *deg = tu_sysroot("h200-degraded");
	json_t *facts = NULL;

	(void)state;
	assert_int_equal(facts_collect(deg, &facts), 0);
	assert_says(facts,
		    "{\"fact\":\"rdma.devices[*].ports[*].state\",\"op\":\"==\",\"value\":"
		    "\"ACTIVE\",\"quantifier\":\"all\"}",
		    "mlx5_3 port 1 is DOWN (expected ACTIVE)");
	assert_says(
		facts,
		"{\"fact\":\"rdma.devices[*].ports[*].state\",\"op\":\"==\",\"value\":\"ACTIVE\","
		"\"quantifier\":\"all\",\"message\":\"every HCA port must be ACTIVE\"}",
		"every HCA port must be ACTIVE: mlx5_3 port 1 is DOWN");
	assert_says(facts,
		    "{\"fact\":\"rdma.devices[*].ports[*].rate_gbps\",\"op\":\">=\",\"value\":400,"
		    "\"quantifier\":\"all\"}",
		    "mlx5_3 port 1 rate is 10 Gb/s, mlx5_5 port 1 rate is 200 Gb/s (expected >= "
		    "400 Gb/s)");
	assert_says(facts,
		    "{\"fact\":\"pci.devices[*].current_link_width\",\"op\":\">=\",\"value\":16,"
		    "\"quantifier\":\"all\"}",
		    "0000:ba:00.0 PCIe link width is x8 (expected >= x16)");
	assert_says(facts,
		    "{\"fact\":\"modules.loaded\",\"op\":\"contains\",\"value\":\"nvidia_fs\","
		    "\"quantifier\":\"all\"}",
		    "module nvidia_fs is not loaded");
	assert_says(facts,
		    "{\"fact\":\"ofed.version\",\"op\":\"version>=\",\"value\":\"99.0\","
		    "\"quantifier\":\"all\"}",
		    "ofed.version is 24.10-1.1.4.0 (expected >= 99.0)");
	assert_says(
		facts,
		"{\"fact\":\"rdma.devices\",\"op\":\"count==\",\"value\":9,\"quantifier\":\"all\"}",
		"8 rdma.devices found (expected 9)");
	assert_says(facts, "{\"fact\":\"nope.x\",\"op\":\"==\",\"value\":1,\"quantifier\":\"all\"}",
		    "nope.x is not reported by this node");
	assert_says(facts,
		    "{\"fact\":\"rdma.devices[*].ports[*].state\",\"op\":\"==\",\"value\":"
		    "\"POLLING\",\"quantifier\":\"any\"}",
		    "none of 8 rdma.devices[*].ports[*].state is POLLING");
	json_decref(facts);
	tu_rm(deg);
}

static void test_service(void **state)
{
	char *root = tu_sysroot("h200-ib");
	struct tu_outcome o;

	(void)state;
	tu_write(root, "lib/systemd/system/nvidia-persistenced.service", "[Service]\n");
	o = cycle(
		root, "service",
		"{\"name\":\"nvidia-persistenced.service\",\"enabled\":true,\"state\":\"started\"}",
		NULL);
	assert_string_equal(o.diff, "nvidia-persistenced.service enabled: disabled -> enabled\n"
				    "nvidia-persistenced.service state: inactive -> active\n");
	assert_int_equal(tu_calls(root, "systemctl enable nvidia-persistenced.service"), 1);
	assert_int_equal(tu_calls(root, "systemctl start nvidia-persistenced.service"), 1);
	cycle(root, "service", "{\"name\":\"nvidia-persistenced.service\",\"state\":\"stopped\"}",
	      NULL);
	/* restarted always restarts */
	o = tu_run1(root, "service",
		    "{\"name\":\"nvidia-persistenced.service\",\"state\":\"restarted\"}", false,
		    NULL);
	assert_int_equal(o.status, APPLY_STATUS_CHANGED);
	assert_int_equal(tu_calls(root, "systemctl restart"), 1);
	/* unknown unit */
	o = tu_run1(root, "service", "{\"name\":\"nope.service\",\"enabled\":true}", true, NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	assert_non_null(strstr(o.message, "unit nope.service: Failed to get unit file state"));
	headline_is(o.message, "service nope.service is not installed on this node");
	/* a unit that fails to start */
	tu_write(root, "lib/systemd/system/bad.service", "[Service]\n");
	tu_write(root, "etc/railyard-test/systemctl-fail", "bad.service\n");
	o = tu_run1(root, "service", "{\"name\":\"bad.service\",\"state\":\"started\"}", false,
		    NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	assert_non_null(strstr(o.message, "`systemctl start bad.service` exit 1: Job for"));
	{
		/* the headline first, then the command line and stderr */
		const char *head = "service bad.service could not be started: Job for";

		assert_true(strncmp(o.message, head, strlen(head)) == 0);
	}
	/* enabled, then the start fails: the enable is undone by the rollback */
	o = tu_run1(root, "service",
		    "{\"name\":\"bad.service\",\"enabled\":true,\"state\":\"started\"}", false,
		    NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	assert_true(o.rolled_back);
	assert_non_null(strstr(o.message, "undid 1 command(s)"));
	assert_int_equal(tu_calls(root, "systemctl enable bad.service"), 1);
	assert_int_equal(tu_calls(root, "systemctl disable bad.service"), 1);
	assert_false(tu_exists(root, "etc/systemd/system/multi-user.target.wants/bad.service"));
	tu_rm(root);
}

static void test_package(void **state)
{
	char *root = tu_sysroot("h200-ib");
	struct tu_outcome o;

	(void)state;
	tu_write(root, "var/lib/dpkg/status",
		 "Package: foo\nStatus: install ok installed\nMaintainer: t <t@e.org>\n"
		 "Architecture: amd64\nVersion: 1.0-1\nDescription: foo\n\n");
	tu_write(root, "etc/railyard-test/apt-candidates", "foo 2.0-1\nfoo 1.0-1\nbar 3.0\n");
	o = cycle(root, "package", "{\"name\":\"foo\",\"version\":\">= 2.0\"}", NULL);
	assert_string_equal(o.diff, "package foo: 1.0-1 -> >= 2.0\n");
	assert_int_equal(tu_calls(root, "apt-get install -y -q foo"), 1);
	o = cycle(root, "package", "{\"name\":\"bar\",\"version\":\"3.0\"}", NULL);
	assert_string_equal(o.diff, "package bar: (not installed) -> 3.0\n");
	assert_int_equal(tu_calls(root, "apt-get install -y -q --allow-downgrades bar=3.0"), 1);
	o = cycle(root, "package", "{\"name\":\"foo\",\"state\":\"absent\"}", NULL);
	assert_string_equal(o.diff, "package foo: 2.0-1 -> (removed)\n");
	o = tu_run1(root, "package", "{\"name\":\"baz\"}", false, NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	assert_non_null(strstr(o.message, "E: Unable to locate package baz"));
	/* installed but the wanted version is not available */
	o = tu_run1(root, "package", "{\"name\":\"bar\",\"version\":\"= 9.9\"}", false, NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	assert_non_null(strstr(o.message, "Version '9.9' for 'bar' was not found"));
	headline_is(o.message, "package bar=9.9 could not be installed: E: Version '9.9' for 'bar' "
			       "was not found");
	/* installed, and still below the constraint */
	o = tu_run1(root, "package", "{\"name\":\"bar\",\"version\":\">= 10.0\"}", false, NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	headline_is(o.message, "package bar is 3.0 after installing (expected >= 10.0)");
	tu_rm(root);
}

/* The hand-over of the reboot step: what the hook is told. */
struct reboot_hook {
	int calls;
	size_t index;
	char boot_id[40];
	int fail; /* returned when set */
};

static int reboot_hook(size_t index, const char *boot_id, void *ud, char *err, size_t errlen)
{
	struct reboot_hook *h = ud;

	h->calls++;
	h->index = index;
	snprintf(h->boot_id, sizeof(h->boot_id), "%s", boot_id);
	if (h->fail)
		snprintf(err, errlen, "journal full");
	return h->fail;
}

static const char boot_a[] = "11111111-2222-3333-4444-555555555555";
static const char boot_b[] = "66666666-7777-8888-9999-000000000000";

/* [command, reboot(params), command] on root: the summary. */
static void run_reboot_plan(const char *root, const char *params, bool check, struct reboot_hook *h,
			    const char *const *argv, struct apply_summary *s)
{
	json_t *plan = tu_plan();
	struct apply_opts o = {.sysroot = root,
			       .check_mode = check,
			       .userdata = h,
			       .before_reboot = h ? reboot_hook : NULL,
			       .reboot_argv = argv};

	tu_plan_add(plan, "before", "command",
		    "{\"argv\":[\"sh\",\"-c\",\"echo x >> $RAILYARD_SYSROOT/tmp/before\"]}", false);
	tu_plan_add(plan, "reboot", "reboot", params, false);
	tu_plan_add(plan, "after", "command",
		    "{\"argv\":[\"sh\",\"-c\",\"echo x >> $RAILYARD_SYSROOT/tmp/after\"]}", false);
	tu_plan_assert_valid(plan);
	assert_int_equal(apply_plan(plan, &o, s), 0);
	json_decref(plan);
}

/* The reboot step: check mode says "would reboot"; a run hands over to the hook, then the
 * reboot command, and stops there without a result; if_changed looks at the steps before it
 * and at what the node already runs; after the boot apply_reboot_judge() decides. */
static void test_reboot(void **state)
{
	static const char *const fake[] = {"/bin/sh", "-c",
					   "echo rebooted > $RAILYARD_SYSROOT/tmp/rb", NULL};
	static const char *const broken[] = {"/bin/sh", "-c", "echo no way >&2; exit 3", NULL};
	char *root = tu_sysroot("h200-ib"), *msg = NULL;
	struct reboot_hook h = {0};
	struct apply_summary s;
	enum apply_status st;
	json_t *p;

	(void)state;
	tu_write(root, "tmp/.keep", "");
	tu_write(root, "proc/sys/kernel/random/boot_id", "11111111-2222-3333-4444-555555555555\n");

	/* Check mode: would reboot, nothing run. */
	run_reboot_plan(root, "{}", true, &h, fake, &s);
	assert_int_equal(s.steps[1].status, APPLY_STATUS_CHANGED);
	assert_string_equal(s.steps[1].message, "would reboot");
	assert_false(s.rebooting);
	assert_int_equal(h.calls, 0);
	assert_false(tu_exists(root, "tmp/rb"));
	apply_summary_done(&s);

	/* Check mode with if_changed: would reboot only because the step before would change
	 * (and the node does not run the expected module yet). */
	run_reboot_plan(root,
			"{\"if_changed\":true,\"expect_module\":{\"name\":\"nvidia\","
			"\"version\":\">= 560\"}}",
			true, &h, fake, &s);
	assert_int_equal(s.steps[0].status, APPLY_STATUS_CHANGED);
	assert_string_equal(s.steps[1].message, "would reboot");
	assert_int_equal(h.calls, 0);
	apply_summary_done(&s);

	/* A run: the hook (with the boot id), the command, and the plan stops without step 1's
	 * result; the step after it does not run. */
	run_reboot_plan(root, "{}", false, &h, fake, &s);
	assert_true(s.rebooting);
	assert_int_equal(s.n_done, 1);
	assert_int_equal(h.calls, 1);
	assert_int_equal(h.index, 1);
	assert_string_equal(h.boot_id, boot_a);
	assert_file(root, "tmp/rb", "rebooted\n");
	assert_false(tu_exists(root, "tmp/after"));
	apply_summary_done(&s);

	/* The hook refuses (the reboot cannot be recorded): failed, nothing rebooted. */
	{
		char rb[4096];

		snprintf(rb, sizeof(rb), "%s/tmp/rb", root);
		unlink(rb);
	}
	h.fail = -ENOSPC;
	run_reboot_plan(root, "{}", false, &h, fake, &s);
	assert_false(s.rebooting);
	assert_int_equal(s.steps[1].status, APPLY_STATUS_FAILED);
	assert_non_null(strstr(s.steps[1].message, "not rebooted: journal full"));
	assert_false(tu_exists(root, "tmp/rb"));
	apply_summary_done(&s);
	h.fail = 0;

	/* The reboot command fails: the step fails, saying so. */
	run_reboot_plan(root, "{}", false, &h, broken, &s);
	assert_false(s.rebooting);
	assert_int_equal(s.steps[1].status, APPLY_STATUS_FAILED);
	headline_is(s.steps[1].message, "the reboot command failed: no way");
	apply_summary_done(&s);

	/* No hook (railyard-agent apply): refused, said why. */
	run_reboot_plan(root, "{}", false, NULL, fake, &s);
	assert_int_equal(s.steps[1].status, APPLY_STATUS_FAILED);
	assert_non_null(strstr(s.steps[1].message, "this run cannot reboot the node"));
	apply_summary_done(&s);

	/* if_changed: the node already runs the expected module: no reboot although a step
	 * changed; expecting another version: reboot. */
	h.calls = 0;
	run_reboot_plan(root,
			"{\"if_changed\":true,\"expect_module\":{\"name\":\"nvidia\","
			"\"version\":\"550.127.05\"}}",
			false, &h, fake, &s);
	assert_int_equal(s.steps[1].status, APPLY_STATUS_OK);
	assert_non_null(strstr(s.steps[1].message, "module nvidia 550.127.05): no reboot"));
	assert_int_equal(h.calls, 0);
	apply_summary_done(&s);
	run_reboot_plan(root,
			"{\"if_changed\":true,\"expect_module\":{\"name\":\"nvidia\","
			"\"version\":\">= 560\"}}",
			false, &h, fake, &s);
	assert_true(s.rebooting);
	assert_int_equal(h.calls, 1);
	apply_summary_done(&s);

	/* After the boot. */
	p = json_pack("{s:s, s:{s:s, s:s}}", "timeout", "10m", "expect_module", "name", "nvidia",
		      "version", ">= 550");
	tu_write(root, "proc/sys/kernel/random/boot_id", "66666666-7777-8888-9999-000000000000\n");
	assert_int_equal(apply_reboot_judge(root, p, boot_a, 1000, 42300, &st, &msg), 0);
	assert_int_equal(st, APPLY_STATUS_CHANGED);
	assert_string_equal(msg, "rebooted in 41.3 s: boot id 11111111-2222-3333-4444-555555555555 "
				 "-> 66666666-7777-8888-9999-000000000000, kernel 6.1.0-28-amd64, "
				 "module nvidia 550.127.05");
	free(msg);
	/* Back too late (the node's own view; the controller enforces it too). */
	assert_int_equal(apply_reboot_judge(root, p, boot_a, 1000, 1000 + 11 * 60000, &st, &msg),
			 0);
	assert_int_equal(st, APPLY_STATUS_FAILED);
	assert_non_null(strstr(msg, "over the step's timeout of 10m"));
	free(msg);
	/* The same boot: the host did not reboot. */
	assert_int_equal(apply_reboot_judge(root, p, boot_b, 1000, 2000, &st, &msg), 0);
	assert_int_equal(st, APPLY_STATUS_FAILED);
	assert_non_null(strstr(msg, "the host did not reboot"));
	free(msg);
	json_decref(p);
	/* The wrong kernel or module after the boot: both values named. */
	p = json_pack("{s:s}", "expect_kernel", "6.12.*");
	assert_int_equal(apply_reboot_judge(root, p, boot_a, 1000, 2000, &st, &msg), 0);
	assert_int_equal(st, APPLY_STATUS_FAILED);
	assert_string_equal(msg, "after the boot: kernel 6.1.0-28-amd64, expected 6.12.*");
	free(msg);
	json_decref(p);
	p = json_pack("{s:{s:s, s:s}}", "expect_module", "name", "nvidia", "version", "560.35.03");
	assert_int_equal(apply_reboot_judge(root, p, boot_a, 1000, 2000, &st, &msg), 0);
	assert_int_equal(st, APPLY_STATUS_FAILED);
	assert_string_equal(
		msg, "after the boot: module nvidia is version 550.127.05, expected 560.35.03");
	free(msg);
	json_decref(p);
	tu_rm(root);
}

static void test_roce_qos(void **state)
{
	char *root = tu_sysroot("h200-roce");
	const char *ifs[] = {"enp22s0np0", "enp39s0np0"};
	char rel[256];
	struct tu_outcome o;

	(void)state;
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 2; k++)
			for (int p = 0; p < 8; p++) {
				snprintf(rel, sizeof(rel), "sys/class/net/%s/ecn/%s/enable/%d",
					 ifs[i], k ? "roce_rp" : "roce_np", p);
				tu_write(root, rel, "0\n");
			}
	o = cycle(root, "roce_qos",
		  "{\"interfaces\":[\"enp22s0np0\",\"enp39s0np0\"],\"trust\":\"dscp\","
		  "\"pfc\":[3],\"ecn\":[3]}",
		  NULL);
	assert_non_null(strstr(o.diff, "enp22s0np0 trust: pcp -> dscp\n"
				       "enp22s0np0 pfc: 0,0,0,0,0,0,0,0 -> 0,0,0,1,0,0,0,0\n"
				       "enp22s0np0 ecn roce_np/3: 0 -> 1\n"
				       "enp22s0np0 ecn roce_rp/3: 0 -> 1\n"));
	assert_non_null(strstr(o.diff, "enp39s0np0 ecn roce_rp/3: 0 -> 1\n"));
	assert_int_equal(
		tu_calls(root, "mlnx_qos -i enp22s0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0"), 1);
	assert_file(root, "sys/class/net/enp39s0np0/ecn/roce_np/enable/3", "1\n");
	assert_file(root, "sys/class/net/enp39s0np0/ecn/roce_np/enable/2", "0\n");
	/* missing interface and missing ECN controls are named */
	o = tu_run1(root, "roce_qos", "{\"interfaces\":[\"eth9\"]}", true, NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	assert_non_null(strstr(o.message, "eth9: no such interface (/sys/class/net/eth9)"));
	{
		char *ecn = NULL;

		assert_true(asprintf(&ecn, "%s/sys/class/net/enp56s0np0/ecn", root) > 0);
		tu_rm(ecn); /* a port whose driver exposes no ECN controls */
	}
	o = tu_run1(root, "roce_qos", "{\"interfaces\":[\"enp56s0np0\"],\"ecn\":[3]}", true, NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	assert_non_null(strstr(o.message, "enp56s0np0: no ECN control"));
	/* The first port is set (mlnx_qos, ECN files), then the second refuses: the rollback puts
	 * the first back, files from their backups and mlnx_qos from the state read before. */
	tu_write(root, "etc/railyard-test/mlnx_qos-fail", "enp152s0np0\n");
	o = tu_run1(root, "roce_qos",
		    "{\"interfaces\":[\"enp73s0np0\",\"enp152s0np0\"],\"trust\":\"dscp\","
		    "\"pfc\":[3],\"ecn\":[3]}",
		    false, NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	assert_true(o.rolled_back);
	assert_non_null(strstr(o.message, "Operation not permitted (enp152s0np0)"));
	assert_non_null(strstr(o.message, "rolled back 2 file(s) from backup; undid 1 command(s)"));
	assert_int_equal(
		tu_calls(root, "mlnx_qos -i enp73s0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0"), 1);
	assert_int_equal(tu_calls(root, "mlnx_qos -i enp73s0np0 --trust pcp --pfc 0,0,0,0,0,0,0,0"),
			 1);
	{
		char *st = tu_read(root, "var/lib/railyard-test/mlnx_qos/enp73s0np0");

		assert_non_null(st);
		assert_non_null(strstr(st, "cur_trust=pcp\ncur_pfc=0,0,0,0,0,0,0,0\n"));
		free(st);
	}
	assert_file(root, "sys/class/net/enp73s0np0/ecn/roce_np/enable/3", "0\n");
	assert_file(root, "sys/class/net/enp73s0np0/ecn/roce_rp/enable/3", "0\n");
	tu_rm(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nccl_ucx_mpi), cmocka_unit_test(test_file),
		cmocka_unit_test(test_sysctl),	     cmocka_unit_test(test_kmod),
		cmocka_unit_test(test_command),	     cmocka_unit_test(test_assert),
		cmocka_unit_test(test_assert_words), cmocka_unit_test(test_service),
		cmocka_unit_test(test_package),	     cmocka_unit_test(test_roce_qos),
		cmocka_unit_test(test_reboot),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
