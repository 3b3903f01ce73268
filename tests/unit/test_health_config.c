/* Unit tests of a playbook's health section end to end: the section parsed and checked with
 * FILE:LINE:COL diagnostics (common/playbook/playbook_health.c), its JSON with the defaults
 * filled in (playbook_health_json), the shipped playbooks' sections, and the agent's side of it
 * (nodeagent/health_config.c): port rules over the defaults, Xid overrides, the GPU watcher's and
 * the readiness checks' parts, and its own errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/playbook/playbook.h"
#include "common/util/error.h"
#include "nodeagent/gpuwatch.h"
#include "nodeagent/health_config.h"
#include "nodeagent/readiness.h"

#define HEAD                                                                                       \
	"name: t\nversion: \"1\"\nsteps: [{name: s, type: sysctl, params: {settings: {x: 1}}}]\n"

/* The health JSON of HEAD + text (which must be valid). */
static json_t *health_of(const char *text)
{
	char buf[8192];
	struct playbook *pb = NULL;
	struct pb_diags d;
	json_t *h;

	snprintf(buf, sizeof(buf), HEAD "%s", text);
	pb_diags_init(&d);
	if (playbook_parse(buf, strlen(buf), "pb.yaml", &pb, &d) != 0) {
		pb_diags_print(&d, stderr);
		fail_msg("playbook rejected");
	}
	pb_diags_done(&d);
	h = json_incref((json_t *)playbook_health_json(pb));
	playbook_free(pb);
	return h;
}

static void assert_json(const json_t *got, const char *want_text)
{
	json_t *want = json_loads(want_text, 0, NULL);
	char *g;

	assert_non_null(want);
	if (!json_equal(got, want)) {
		g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
		fail_msg("got %s", g);
	}
	json_decref(want);
}

static void test_defaults(void **state)
{
	json_t *h = health_of("");
	struct health_config c;
	char err[256];
	size_t n = 0;

	(void)state;
	assert_json(h, "{\"version\": 1, \"interval_s\": 10, \"ports\": {}, "
		       "\"xid\": {\"critical\": [], \"warning\": [], \"ignore\": []}, "
		       "\"gpu\": {\"ecc_corrected_per_min\": {\"warning\": 100, \"critical\": 0}, "
		       "\"throttle\": {\"hw_slowdown\": \"warning\", \"hw_thermal_slowdown\": "
		       "\"critical\", \"hw_power_brake_slowdown\": \"warning\"}, "
		       "\"nvlink\": {\"expected\": -1, \"crc_per_min\": {\"warning\": 60, "
		       "\"critical\": 6000}, \"replay_per_min\": {\"warning\": 60, \"critical\": "
		       "0}, \"recovery_per_min\": {\"warning\": 1, \"critical\": 10}}}, "
		       "\"readiness\": {\"require\": [], \"gds\": {\"cufile\": "
		       "\"/etc/cufile.json\", \"gdscheck\": "
		       "\"/usr/local/cuda/gds/tools/gdscheck\", \"gdscheck_timeout_s\": 30, "
		       "\"expect\": {}, \"supported\": []}}}");
	/* the agent takes it: the port watcher's own rules, nothing overridden */
	assert_int_equal(health_config_parse(h, &c, err, sizeof(err)), 0);
	assert_int_equal(c.interval_ms, 10000);
	while (portwatch_default_rules[n].counter) {
		assert_string_equal(c.rules[n].counter, portwatch_default_rules[n].counter);
		assert_true(c.rules[n].warn_per_min == portwatch_default_rules[n].warn_per_min);
		n++;
	}
	assert_null(c.rules[n].counter);
	assert_int_equal(c.n_xid, 0);
	health_config_done(&c);
	/* the playbook's defaults and the GPU watcher's agree */
	{
		struct gpuwatch_config a, b;

		gpuwatch_config_init(&a);
		b = a;
		assert_int_equal(
			gpuwatch_config_parse(json_object_get(h, "gpu"), &b, err, sizeof(err)), 0);
		assert_memory_equal(&a, &b, sizeof(a));
	}
	json_decref(h);
	/* no section at all on the agent: the same */
	assert_int_equal(health_config_parse(NULL, &c, err, sizeof(err)), 0);
	assert_int_equal(c.interval_ms, 10000);
	assert_null(c.gpu);
	health_config_done(&c);
}

static void test_full(void **state)
{
	json_t *h =
		health_of("health:\n"
			  "  interval: 1m\n"
			  "  ports:\n"
			  "    symbol_error: {warning: 10}\n"
			  "    port_xmit_discards: {warning: 100, critical: 1000}\n"
			  "  xid:\n"
			  "    critical: [13]\n"
			  "    ignore: [43, 45]\n"
			  "  gpu:\n"
			  "    ecc_corrected_per_min: {warning: 5, critical: 50.5}\n"
			  "    throttle: {hw_slowdown: ignore}\n"
			  "  nvlink:\n"
			  "    expected: 18\n"
			  "    crc_per_min: {critical: 100}\n"
			  "  require: [gds, fabric_manager]\n"
			  "  gds:\n"
			  "    cufile: /opt/gds/cufile.json\n"
			  "    gdscheck_timeout: 10s\n"
			  "    expect:\n"
			  "      properties.rdma_dev_addr_list: [172.16.8.11, \"172.16.9.11\"]\n"
			  "      properties.allow_compat_mode: false\n"
			  "      properties.max_direct_io_size_kb: 16384\n"
			  "    supported: [NVMe, Userspace RDMA]\n");
	struct health_config c;
	enum health_severity sev;
	char err[256];
	size_t i;

	(void)state;
	assert_json(json_object_get(h, "ports"),
		    "{\"symbol_error\": {\"warning\": 10, \"critical\": 0}, "
		    "\"port_xmit_discards\": {\"warning\": 100, \"critical\": 1000}}");
	assert_json(json_object_get(h, "xid"),
		    "{\"critical\": [13], \"warning\": [], \"ignore\": [43, 45]}");
	assert_json(json_object_get(h, "gpu"),
		    "{\"ecc_corrected_per_min\": {\"warning\": 5, \"critical\": 50.5}, "
		    "\"throttle\": {\"hw_slowdown\": \"ignore\", \"hw_thermal_slowdown\": "
		    "\"critical\", \"hw_power_brake_slowdown\": \"warning\"}, "
		    "\"nvlink\": {\"expected\": 18, \"crc_per_min\": {\"warning\": 60, "
		    "\"critical\": 100}, \"replay_per_min\": {\"warning\": 60, \"critical\": 0}, "
		    "\"recovery_per_min\": {\"warning\": 1, \"critical\": 10}}}");
	assert_json(
		json_object_get(h, "readiness"),
		"{\"require\": [\"gds\", \"fabric_manager\"], \"gds\": {\"cufile\": "
		"\"/opt/gds/cufile.json\", \"gdscheck\": \"/usr/local/cuda/gds/tools/gdscheck\", "
		"\"gdscheck_timeout_s\": 10, \"expect\": {\"properties.rdma_dev_addr_list\": "
		"[\"172.16.8.11\", \"172.16.9.11\"], \"properties.allow_compat_mode\": false, "
		"\"properties.max_direct_io_size_kb\": 16384}, \"supported\": [\"NVMe\", "
		"\"Userspace RDMA\"]}}");
	assert_int_equal(json_integer_value(json_object_get(h, "interval_s")), 60);
	/* the agent's side */
	assert_int_equal(health_config_parse(h, &c, err, sizeof(err)), 0);
	assert_int_equal(c.interval_ms, 60000);
	for (i = 0; c.rules[i].counter && strcmp(c.rules[i].counter, "symbol_error"); i++)
		;
	assert_non_null(c.rules[i].counter);
	/* replaced whole: the default critical rate is gone */
	assert_true(c.rules[i].warn_per_min == 10 && c.rules[i].crit_per_min == 0);
	for (i = 0; c.rules[i].counter && strcmp(c.rules[i].counter, "port_xmit_discards"); i++)
		;
	assert_non_null(c.rules[i].counter); /* added */
	assert_true(c.rules[i].warn_per_min == 100 && c.rules[i].crit_per_min == 1000);
	sev = HEALTH_WARNING;
	assert_true(health_config_xid(&c, 13, &sev));
	assert_int_equal(sev, HEALTH_CRITICAL);
	assert_false(health_config_xid(&c, 43, &sev));
	sev = HEALTH_CRITICAL;
	assert_true(health_config_xid(&c, 79, &sev));
	assert_int_equal(sev, HEALTH_CRITICAL);
	assert_int_equal(readiness_config_check(c.readiness, err, sizeof(err)), 0);
	health_config_done(&c);
	health_config_done(&c);
	json_decref(h);
}

static void test_shipped(void **state)
{
	static const char *const files[] = {"playbooks/h200-ndr-ib.yaml",
					    "playbooks/h200-roce.yaml"};
	char path[1024], err[256];

	(void)state;
	for (size_t f = 0; f < 2; f++) {
		struct playbook *pb = NULL;
		struct health_config c;
		struct gpuwatch_config g;
		struct pb_diags d;
		const json_t *h;

		snprintf(path, sizeof(path), "%s/%s", getenv("RAILYARD_SOURCE_DIR"), files[f]);
		pb_diags_init(&d);
		if (playbook_load(path, &pb, &d) != 0) {
			pb_diags_print(&d, stderr);
			fail_msg("%s rejected", files[f]);
		}
		pb_diags_done(&d);
		h = playbook_health_json(pb);
		/* HGX H200: 18 NVLinks a GPU, the fabric manager and GPUDirect RDMA required,
		 * GDS not */
		assert_int_equal(
			json_integer_value(json_object_get(
				json_object_get(json_object_get(h, "gpu"), "nvlink"), "expected")),
			18);
		assert_json(json_object_get(json_object_get(h, "readiness"), "require"),
			    "[\"fabric_manager\", \"gpudirect_rdma\"]");
		assert_int_equal(health_config_parse(h, &c, err, sizeof(err)), 0);
		gpuwatch_config_init(&g);
		assert_int_equal(gpuwatch_config_parse(c.gpu, &g, err, sizeof(err)), 0);
		assert_int_equal(g.nvlink_expected, 18);
		assert_int_equal(g.hw_power, HEALTH_CRITICAL);
		health_config_done(&c);
		playbook_free(pb);
	}
}

static void test_errors(void **state)
{
	static const struct {
		const char *yaml, *diag;
	} bad[] = {
		{"health: []\n", "pb.yaml:4:9: health: expected a mapping, got a list"},
		{"health:\n  intervall: 30s\n", "pb.yaml:5:3: health: unknown key \"intervall\""},
		{"health:\n  interval: 0s\n",
		 "pb.yaml:5:13: health.interval: expected whole seconds from 1s to 3600s"},
		{"health:\n  interval: 1500ms\n", "pb.yaml:5:13: health.interval: expected whole"},
		{"health:\n  ports:\n    Symbol-Error: {warning: 1}\n",
		 "pb.yaml:6:5: health.ports.Symbol-Error: expected a counter name"},
		{"health:\n  ports:\n    symbol_error: {warning: -1}\n",
		 "pb.yaml:6:29: health.ports.symbol_error.warning: expected a number >= 0, got "
		 "\"-1\""},
		{"health:\n  ports:\n    symbol_error: {warn: 1}\n",
		 "pb.yaml:6:20: health.ports.symbol_error: unknown key \"warn\""},
		{"health:\n  ports:\n    symbol_error: {warning: 100, critical: 10}\n",
		 "pb.yaml:6:19: health.ports.symbol_error: critical (10) below warning (100)"},
		{"health:\n  xid:\n    critical: [79, 0]\n",
		 "pb.yaml:6:20: health.xid.critical[1]: expected an integer from 1 to 100000"},
		{"health:\n  xid:\n    critical: [79]\n    ignore: [79]\n",
		 "pb.yaml:7:14: health.xid.ignore[0]: Xid 79 is listed twice"},
		{"health:\n  xid:\n    fatal: [79]\n",
		 "pb.yaml:6:5: health.xid: unknown key \"fatal\""},
		{"health:\n  gpu:\n    throttle: {hw_slowdown: fatal}\n",
		 "pb.yaml:6:29: health.gpu.throttle.hw_slowdown: expected warning, critical or "
		 "ignore"},
		{"health:\n  gpu:\n    throttle: {sw_power_cap: warning}\n",
		 "pb.yaml:6:16: health.gpu.throttle: unknown key \"sw_power_cap\""},
		{"health:\n  nvlink:\n    expected: 19\n",
		 "pb.yaml:6:15: health.nvlink.expected: expected an integer from 0 to 18"},
		{"health:\n  nvlink:\n    crc_per_min: 5\n",
		 "pb.yaml:6:18: health.nvlink.crc_per_min: expected a mapping, got a scalar"},
		{"health:\n  require: [fabric_manager, nccl]\n",
		 "pb.yaml:5:29: health.require[1]: unknown check (fabric_manager, gpudirect_rdma, "
		 "gds)"},
		{"health:\n  require: [gds, gds]\n",
		 "pb.yaml:5:18: health.require[1]: \"gds\" is listed twice"},
		{"health:\n  gds:\n    cufile: etc/cufile.json\n",
		 "pb.yaml:6:13: health.gds.cufile: expected an absolute path"},
		{"health:\n  gds:\n    gdscheck_timeout: 20m\n",
		 "pb.yaml:6:23: health.gds.gdscheck_timeout: expected whole seconds from 1s to "
		 "600s"},
		{"health:\n  gds:\n    expect:\n      properties..x: 1\n",
		 "pb.yaml:7:7: health.gds.expect.properties..x: expected a dotted key"},
		{"health:\n  gds:\n    supported: [\"NVMe : Supported\"]\n",
		 "pb.yaml:6:18: health.gds.supported[0]: expected a name gdscheck -p prints"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char buf[4096], line[512];
		struct playbook *pb = NULL;
		struct pb_diags d;

		snprintf(buf, sizeof(buf), HEAD "%s", bad[i].yaml);
		pb_diags_init(&d);
		assert_int_equal(playbook_parse(buf, strlen(buf), "pb.yaml", &pb, &d),
				 -RY_E_INVALID);
		assert_true(d.count >= 1);
		snprintf(line, sizeof(line), "%s:%d:%d: %s", d.items[0].file, d.items[0].line,
			 d.items[0].col, d.items[0].message);
		if (strncmp(line, bad[i].diag, strlen(bad[i].diag)) != 0)
			fail_msg("%s: got \"%s\", want \"%s\"", bad[i].yaml, line, bad[i].diag);
		pb_diags_done(&d);
	}
}

static void test_agent_errors(void **state)
{
	static const struct {
		const char *json, *err;
	} bad[] = {
		{"[]", "health: expected an object"},
		{"{\"version\": 2}", "health.version: expected 1"},
		{"{\"version\": 1, \"nvlink\": {}}", "health.nvlink: unknown key"},
		{"{\"version\": 1, \"interval_s\": 0}", "health.interval_s: expected an integer"},
		{"{\"version\": 1, \"ports\": {\"symbol_error\": 5}}",
		 "health.ports.symbol_error: expected {warning, critical}"},
		{"{\"version\": 1, \"ports\": {\"symbol_error\": {\"warning\": \"5\"}}}",
		 "health.ports.symbol_error.warning: expected a number"},
		{"{\"version\": 1, \"xid\": {\"warning\": [13], \"critical\": [13]}}",
		 "listed twice"},
		{"{\"version\": 1, \"xid\": {\"warning\": [0]}}",
		 "health.xid.warning[0]: expected an Xid number"},
		{"{\"version\": 1, \"gpu\": {\"nvlink\": {\"expected\": 40}}}",
		 "gpu.nvlink.expected: expected an integer"},
		{"{\"version\": 1, \"readiness\": {\"require\": [\"nccl\"]}}",
		 "readiness.require[0]: expected fabric_manager"},
	};
	struct health_config c;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *j = json_loads(bad[i].json, JSON_DECODE_ANY, NULL);

		assert_non_null(j);
		err[0] = '\0';
		assert_int_equal(health_config_parse(j, &c, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].err))
			fail_msg("%s: got \"%s\", want \"%s\"", bad[i].json, err, bad[i].err);
		json_decref(j);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),     cmocka_unit_test(test_full),
		cmocka_unit_test(test_shipped),	     cmocka_unit_test(test_errors),
		cmocka_unit_test(test_agent_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
