/* Unit tests of the readiness checks (nodeagent/readiness) on fixture sysroots built in a temp
 * dir: the fabric manager running or not beside NVSwitches (the nvswitch driver's view or PCI
 * class 0x0680), no NVSwitch at all; GPUDirect RDMA through nvidia-peermem, dma-buf, neither,
 * no driver; GPUDirect Storage: nvidia-fs, a cufile.json with comments as expected, different,
 * malformed or missing, gdscheck -p parsed from a fixture script (supported, unsupported,
 * failing, hanging past its timeout, not installed); the configuration's errors. */
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

#include "nodeagent/readiness.h"

static char root[256];

static void put_mode(const char *text, const char *rel, mode_t mode)
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
	assert_int_equal(chmod(path, mode), 0);
}

static void put(const char *text, const char *rel)
{
	put_mode(text, rel, 0644);
}

static void del(const char *rel)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(unlink(path), 0);
}

static void mkdirs(const char *rel)
{
	put("", rel); /* makes the parents */
	del(rel);
}

static int setup(void **state)
{
	const char *tmp = getenv("TMPDIR");

	(void)state;
	snprintf(root, sizeof(root), "%s/ry-readiness-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[512];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

/* The checks of cfg_text on the sysroot; their events in ev. */
static size_t check(const char *cfg_text, struct health_event *ev, size_t max)
{
	json_t *cfg = json_loads(cfg_text, 0, NULL);
	size_t n = 99;

	assert_non_null(cfg);
	assert_int_equal(readiness_check(root, cfg, ev, max, &n), 0);
	json_decref(cfg);
	for (size_t i = 0; i < n && i < max; i++) {
		print_message("  %s %s %s: %s [%s]\n", ev[i].kind,
			      health_severity_name(ev[i].severity), ev[i].source, ev[i].what,
			      ev[i].detail);
		assert_string_equal(ev[i].kind, "readiness");
		assert_true(ev[i].at_ms > 0);
	}
	return n;
}

static void test_fabric_manager(void **state)
{
	const char *cfg = "{\"require\": [\"fabric_manager\"]}";
	struct health_event ev[4];

	(void)state;
	/* no NVSwitch: required, but nothing to manage */
	assert_int_equal(check(cfg, ev, 4), 1);
	assert_int_equal(ev[0].severity, HEALTH_WARNING);
	assert_string_equal(ev[0].source, "fabric-manager");
	/* NVSwitches the driver sees, the fabric manager running */
	put("", "proc/driver/nvidia-nvswitch/devices/0000:05:00.0");
	put("", "proc/driver/nvidia-nvswitch/devices/0000:06:00.0");
	put("bash\n", "proc/1/comm");
	put("nv-fabricmanage\n", "proc/4242/comm");
	assert_int_equal(check(cfg, ev, 4), 0);
	/* not running */
	del("proc/4242/comm");
	assert_int_equal(check(cfg, ev, 4), 1);
	assert_int_equal(ev[0].severity, HEALTH_CRITICAL);
	assert_string_equal(ev[0].what, "NVIDIA fabric manager not running");
	assert_non_null(strstr(ev[0].detail, "2 NVSwitches"));
	/* an NVSwitch only on the PCI bus (the nvswitch driver not loaded) */
	del("proc/driver/nvidia-nvswitch/devices/0000:05:00.0");
	del("proc/driver/nvidia-nvswitch/devices/0000:06:00.0");
	put("0x10de\n", "sys/bus/pci/devices/0000:05:00.0/vendor");
	put("0x068000\n", "sys/bus/pci/devices/0000:05:00.0/class");
	put("0x10de\n", "sys/bus/pci/devices/0000:18:00.0/vendor");
	put("0x030200\n", "sys/bus/pci/devices/0000:18:00.0/class");
	assert_int_equal(check(cfg, ev, 4), 1);
	assert_int_equal(ev[0].severity, HEALTH_CRITICAL);
	assert_non_null(strstr(ev[0].detail, "1 NVSwitch,"));
	/* nothing required: nothing checked */
	assert_int_equal(check("{\"require\": []}", ev, 4), 0);
}

static void test_gpudirect(void **state)
{
	const char *cfg = "{\"require\": [\"gpudirect_rdma\"]}";
	struct health_event ev[4];

	(void)state;
	/* no driver */
	assert_int_equal(check(cfg, ev, 4), 1);
	assert_string_equal(ev[0].what, "GPUDirect RDMA unavailable: no NVIDIA driver loaded");
	/* an old kernel, no peermem */
	put("5.4.0-216-generic\n", "proc/sys/kernel/osrelease");
	put("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
	    "(dvs-builder@U22-I3-AE18-23-3)  Wed Jun  4 23:39:58 UTC 2025\n"
	    "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n",
	    "proc/driver/nvidia/version");
	assert_int_equal(check(cfg, ev, 4), 1);
	assert_int_equal(ev[0].severity, HEALTH_CRITICAL);
	assert_string_equal(ev[0].source, "gpudirect");
	assert_string_equal(
		ev[0].what,
		"GPUDirect RDMA unavailable: nvidia-peermem not loaded, dma-buf not usable");
	assert_non_null(strstr(ev[0].detail, "kernel 5.4.0-216-generic < 5.12"));
	/* nvidia-peermem loaded */
	mkdirs("sys/module/nvidia_peermem/x");
	assert_int_equal(check(cfg, ev, 4), 0);
	/* a kernel with dma-buf, the open modules: no peermem needed */
	put("6.8.0-60-generic\n", "proc/sys/kernel/osrelease");
	{
		char p[1024];

		snprintf(p, sizeof(p), "%s/sys/module/nvidia_peermem", root);
		assert_int_equal(rmdir(p), 0);
	}
	assert_int_equal(check(cfg, ev, 4), 0);
}

/* A sysroot where GDS is installed and as expected: nvidia-fs, the fixture cufile.json, a
 * gdscheck that prints the fixture output. */
static void gds_node(const char *gdscheck_body)
{
	char src[1024], *text;
	FILE *f;
	long len;

	mkdirs("sys/module/nvidia_fs/x");
	snprintf(src, sizeof(src), "%s/tests/fixtures/gds/cufile.json",
		 getenv("RAILYARD_SOURCE_DIR"));
	f = fopen(src, "r");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)len + 1);
	assert_non_null(text);
	assert_int_equal(fread(text, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	put(text, "etc/cufile.json");
	free(text);
	if (gdscheck_body) {
		char script[2048];

		snprintf(script, sizeof(script), "#!/bin/sh\n%s\n", gdscheck_body);
		put_mode(script, "usr/local/cuda/gds/tools/gdscheck", 0755);
	}
}

#define GDS_CFG(extra)                                                                             \
	"{\"require\": [\"gds\"], \"gds\": {\"expect\": {\"properties.rdma_dev_addr_list\": "      \
	"[\"172.16.8.11\", \"172.16.9.11\"], \"properties.allow_compat_mode\": false}" extra "}}"

static void test_gds_ok(void **state)
{
	struct health_event ev[8];
	char body[1024];

	(void)state;
	snprintf(body, sizeof(body),
		 "[ \"$1\" = -p ] || exit 2\ncat '%s/tests/fixtures/gds/gdscheck-p.txt'",
		 getenv("RAILYARD_SOURCE_DIR"));
	gds_node(body);
	assert_int_equal(check(GDS_CFG(", \"supported\": [\"NVMe\", \"Userspace RDMA\"]"), ev, 8),
			 0);
	/* gdscheck says NVMeOF is unsupported */
	assert_int_equal(
		check(GDS_CFG(", \"supported\": [\"NVMe\", \"NVMeOF\", \"Lustre\"]"), ev, 8), 2);
	assert_string_equal(ev[0].source, "gdscheck");
	assert_string_equal(ev[0].what, "GDS: NVMeOF not supported");
	assert_non_null(strstr(ev[0].detail, "NVMeOF : Unsupported"));
	assert_non_null(strstr(ev[1].detail, "Lustre : (absent)"));
	/* nvidia-fs unloaded */
	{
		char p[1024];

		snprintf(p, sizeof(p), "%s/sys/module/nvidia_fs", root);
		assert_int_equal(rmdir(p), 0);
	}
	assert_int_equal(check(GDS_CFG(""), ev, 8), 1);
	assert_string_equal(ev[0].source, "nvidia-fs");
	assert_string_equal(ev[0].what, "GDS: nvidia-fs not loaded");
}

static void test_gds_cufile(void **state)
{
	struct health_event ev[8];

	(void)state;
	gds_node(NULL); /* gdscheck not installed: skipped */
	/* the playbook expects other addresses and a key the file lacks */
	assert_int_equal(
		check("{\"require\": [\"gds\"], \"gds\": {\"expect\": "
		      "{\"properties.rdma_dev_addr_list\": [\"172.16.8.11\"], "
		      "\"properties.use_pci_p2pdma\": true, \"logging.level\": \"ERROR\"}}}",
		      ev, 8),
		2);
	assert_string_equal(ev[0].source, "cufile.json");
	assert_string_equal(
		ev[0].what,
		"GDS: cufile.json properties.rdma_dev_addr_list differs from the playbook");
	assert_non_null(strstr(ev[0].detail,
			       "is [\"172.16.8.11\",\"172.16.9.11\"], expected [\"172.16.8.11\"]"));
	assert_string_equal(ev[1].what, "GDS: cufile.json lacks properties.use_pci_p2pdma");
	/* malformed: the error names the line and column */
	put("{\n  // a comment\n  \"properties\": {\"x\": 1,}\n}\n", "etc/cufile.json");
	assert_int_equal(check(GDS_CFG(""), ev, 8), 1);
	assert_string_equal(ev[0].what, "GDS: cufile.json is not valid JSON");
	assert_non_null(strstr(ev[0].detail, "/etc/cufile.json:3:"));
	/* a path of the playbook's, absent */
	assert_int_equal(
		check("{\"require\": [\"gds\"], \"gds\": {\"cufile\": \"/opt/gds/cufile.json\"}}",
		      ev, 8),
		1);
	assert_string_equal(ev[0].what, "GDS: cufile.json unreadable");
	assert_non_null(strstr(ev[0].detail, "/opt/gds/cufile.json: No such file"));
}

static void test_gdscheck_fails(void **state)
{
	struct health_event ev[8];

	(void)state;
	gds_node("echo 'cuFile initialization failed' >&2\nexit 3");
	assert_int_equal(check(GDS_CFG(""), ev, 8), 1);
	assert_string_equal(ev[0].what, "GDS: gdscheck -p failed");
	assert_non_null(strstr(ev[0].detail, "exit 3; cuFile initialization failed"));
	gds_node("echo ' Platform verification error :'");
	assert_int_equal(check(GDS_CFG(""), ev, 8), 1);
	assert_string_equal(ev[0].what, "GDS: gdscheck platform verification failed");
	/* hangs past its timeout: killed, reported */
	gds_node("exec sleep 30");
	assert_int_equal(check(GDS_CFG(", \"gdscheck_timeout_s\": 1"), ev, 8), 1);
	assert_string_equal(ev[0].what, "GDS: gdscheck -p failed");
	assert_non_null(strstr(ev[0].detail, "timed out"));
}

static void test_strip_comments(void **state)
{
	char t[] = "{\"a\": \"x//y\", // gone\n\"b\": \"\\\"//\" // gone too\n}";

	(void)state;
	readiness_strip_comments(t);
	assert_string_equal(t, "{\"a\": \"x//y\",        \n\"b\": \"\\\"//\"            \n}");
}

static void test_config(void **state)
{
	static const struct {
		const char *json, *err;
	} bad[] = {
		{"[]", "readiness: expected an object"},
		{"{\"require\": \"gds\"}", "readiness.require: expected a list"},
		{"{\"require\": [\"nccl\"]}", "readiness.require[0]: expected fabric_manager"},
		{"{\"checks\": []}", "readiness.checks: unknown key"},
		{"{\"gds\": {\"cufile\": \"etc/cufile.json\"}}",
		 "readiness.gds.cufile: expected an absolute path"},
		{"{\"gds\": {\"gdscheck_timeout_s\": 0}}",
		 "readiness.gds.gdscheck_timeout_s: expected an integer"},
		{"{\"gds\": {\"expect\": {\"a..b\": 1}}}",
		 "readiness.gds.expect.a..b: expected a dotted"},
		{"{\"gds\": {\"supported\": [\"NVMe : x\"]}}", "readiness.gds.supported[0]"},
		{"{\"gds\": {\"cufiles\": 1}}", "readiness.gds.cufiles: unknown key"},
	};
	struct health_event ev[1];
	char err[256];
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *j = json_loads(bad[i].json, JSON_DECODE_ANY, NULL);

		assert_non_null(j);
		err[0] = '\0';
		assert_int_equal(readiness_config_check(j, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].err))
			fail_msg("%s: got \"%s\", want \"%s\"", bad[i].json, err, bad[i].err);
		assert_int_equal(readiness_check(root, j, ev, 1, &n), -EINVAL);
		json_decref(j);
	}
	assert_int_equal(readiness_config_check(NULL, err, sizeof(err)), 0);
	assert_int_equal(readiness_check(root, NULL, ev, 1, &n), 0);
	assert_int_equal(n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fabric_manager, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gpudirect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gds_ok, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gds_cufile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gdscheck_fails, setup, teardown),
		cmocka_unit_test(test_strip_comments),
		cmocka_unit_test_setup_teardown(test_config, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
