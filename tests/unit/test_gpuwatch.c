/* Unit tests of the GPU watcher (nodeagent/gpuwatch) over the test double of libnvidia-ml.so.1
 * (tests/doubles/nvml_double.c, path in argv[1]) replaying series of readings of a two-GPU HGX
 * node (tests/fixtures/nvml/health/): an uncorrected ECC delta, a corrected ECC rate, a pending
 * row remap, a GPU fallen off the bus, an NVLink going down, a rising NVLink CRC rate, clocks
 * events (HW slowdown, HW thermal); a configured NVLink count the node falls short of; no NVML;
 * the configuration's errors; ticks closer than a second; more events than room. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "nodeagent/gpuwatch.h"

#define MIN 60000

static const char *double_path;
static char base_path[1024];

static void use_series(const char *name)
{
	char p[1024];

	snprintf(p, sizeof(p), "%s/tests/fixtures/nvml/health/%s.jsonl",
		 getenv("RAILYARD_SOURCE_DIR"), name);
	setenv("RAILYARD_NVML_LIBRARY", double_path, 1);
	setenv("RAILYARD_NVML_DOUBLE_DATA", base_path, 1);
	setenv("RAILYARD_NVML_DOUBLE_SERIES", p, 1);
}

static struct gpuwatch *watcher(const char *series, const char *cfg_text)
{
	struct gpuwatch *w = NULL;
	json_t *cfg = cfg_text ? json_loads(cfg_text, 0, NULL) : NULL;

	use_series(series);
	assert_int_equal(gpuwatch_new(cfg, &w), 0);
	json_decref(cfg);
	assert_true(gpuwatch_on(w));
	return w;
}

/* One tick at t; its events in ev. */
static size_t tick(struct gpuwatch *w, int64_t t, struct health_event *ev, size_t max)
{
	size_t n = 99;

	assert_int_equal(gpuwatch_tick(w, t, ev, max, &n), 0);
	for (size_t i = 0; i < n && i < max; i++)
		print_message("  t=%lld %s %s %s: %s [%s]\n", (long long)t, ev[i].kind,
			      health_severity_name(ev[i].severity), ev[i].source, ev[i].what,
			      ev[i].detail);
	return n;
}

static void test_healthy_baseline(void **state)
{
	struct health_event ev[8];
	struct gpuwatch *w = watcher("ecc-uncorrected", NULL);
	const char *note;

	(void)state;
	assert_int_equal(tick(w, 0, ev, 8), 0);
	note = gpuwatch_note(w);
	assert_non_null(note);
	assert_string_equal(note, "NVML: 2 GPUs watched");
	assert_null(gpuwatch_note(w));
	gpuwatch_free(w);
}

static void test_ecc_uncorrected(void **state)
{
	struct health_event ev[8];
	struct gpuwatch *w = watcher("ecc-uncorrected", NULL);

	(void)state;
	assert_int_equal(tick(w, 0, ev, 8), 0);
	assert_int_equal(tick(w, MIN, ev, 8), 1);
	assert_string_equal(ev[0].kind, "gpu");
	assert_string_equal(ev[0].source, "gpu1");
	assert_int_equal(ev[0].severity, HEALTH_CRITICAL);
	assert_string_equal(ev[0].what, "2 uncorrectable ECC errors");
	assert_non_null(strstr(ev[0].detail, "0 -> 2"));
	assert_int_equal(ev[0].at_ms, MIN);
	/* the count stays at 2: nothing new */
	assert_int_equal(tick(w, 2 * MIN, ev, 8), 0);
	gpuwatch_free(w);
}

static void test_ecc_corrected_rate(void **state)
{
	struct health_event ev[8];
	struct gpuwatch *w = watcher("ecc-corrected-rate", NULL);

	(void)state;
	assert_int_equal(tick(w, 0, ev, 8), 0);
	assert_int_equal(tick(w, MIN, ev, 8), 0); /* 50/min: under 100/min */
	assert_int_equal(tick(w, 2 * MIN, ev, 8), 1);
	assert_int_equal(ev[0].severity, HEALTH_WARNING);
	assert_string_equal(ev[0].what, "corrected ECC errors 200/min, over 100/min");
	assert_int_equal(tick(w, 3 * MIN, ev, 8), 0); /* went down (reset): new baseline */
	assert_int_equal(tick(w, 4 * MIN, ev, 8), 0); /* 50/min */
	gpuwatch_free(w);
}

static void test_row_remap_pending(void **state)
{
	struct health_event ev[8];
	struct gpuwatch *w = watcher("row-remap-pending", NULL);

	(void)state;
	assert_int_equal(tick(w, 0, ev, 8), 0);
	assert_int_equal(tick(w, MIN, ev, 8), 1);
	assert_string_equal(ev[0].source, "gpu0");
	assert_int_equal(ev[0].severity, HEALTH_WARNING);
	assert_string_equal(ev[0].what, "row remap pending: GPU reset needed");
	assert_int_equal(tick(w, 2 * MIN, ev, 8), 0); /* still pending: said once */
	assert_int_equal(tick(w, 3 * MIN, ev, 8), 1);
	assert_int_equal(ev[0].severity, HEALTH_INFO);
	gpuwatch_free(w);
}

static void test_gpu_lost(void **state)
{
	struct health_event ev[8];
	struct gpuwatch *w = watcher("gpu-lost", NULL);

	(void)state;
	assert_int_equal(tick(w, 0, ev, 8), 0);
	assert_int_equal(tick(w, MIN, ev, 8), 1);
	assert_string_equal(ev[0].kind, "gpu");
	assert_string_equal(ev[0].source, "gpu0");
	assert_int_equal(ev[0].severity, HEALTH_CRITICAL);
	assert_string_equal(ev[0].what, "GPU has fallen off the bus");
	assert_non_null(strstr(ev[0].detail, "00000000:18:00.0"));
	assert_int_equal(tick(w, 2 * MIN, ev, 8), 0);
	assert_int_equal(tick(w, 3 * MIN, ev, 8), 1);
	assert_string_equal(ev[0].what, "GPU is back");
	assert_int_equal(ev[0].severity, HEALTH_INFO);
	gpuwatch_free(w);
}

static void test_nvlink_down(void **state)
{
	struct health_event ev[8];
	struct gpuwatch *w = watcher("nvlink-down", NULL);

	(void)state;
	assert_int_equal(tick(w, 0, ev, 8), 0);
	assert_int_equal(tick(w, MIN, ev, 8), 1);
	assert_string_equal(ev[0].kind, "nvlink");
	assert_string_equal(ev[0].source, "gpu0/link7");
	assert_int_equal(ev[0].severity, HEALTH_CRITICAL);
	assert_string_equal(ev[0].what, "NVLink link 7 down");
	assert_non_null(strstr(ev[0].detail, "17 of 18 links up"));
	assert_int_equal(tick(w, 2 * MIN, ev, 8), 0);
	assert_int_equal(tick(w, 3 * MIN, ev, 8), 1);
	assert_string_equal(ev[0].what, "NVLink link 7 up");
	assert_int_equal(ev[0].severity, HEALTH_INFO);
	gpuwatch_free(w);
}

static void test_nvlink_expected(void **state)
{
	struct health_event ev[8];
	struct gpuwatch *w = NULL;
	json_t *cfg = json_loads("{\"nvlink\": {\"expected\": 18}}", 0, NULL);
	char p[1024];
	FILE *f;

	(void)state;
	/* a node that starts with links 3 and 4 of GPU 0 down, 18 configured */
	snprintf(p, sizeof(p), "%s/ry-gpuwatch-series-%d.jsonl",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	f = fopen(p, "w");
	assert_non_null(f);
	fputs("{\"0\":{\"nvlink3\":0,\"nvlink4\":0}}\n", f);
	assert_int_equal(fclose(f), 0);
	use_series("nvlink-down");
	setenv("RAILYARD_NVML_DOUBLE_SERIES", p, 1);
	assert_int_equal(gpuwatch_new(cfg, &w), 0);
	json_decref(cfg);
	assert_int_equal(tick(w, 0, ev, 8), 1);
	assert_string_equal(ev[0].kind, "nvlink");
	assert_string_equal(ev[0].source, "gpu0");
	assert_int_equal(ev[0].severity, HEALTH_CRITICAL);
	assert_string_equal(ev[0].what, "NVLink: 16 of 18 links up");
	assert_string_equal(ev[0].detail, "links down: 3,4");
	gpuwatch_free(w);
	/* by default the first tick's links are the expected ones: nothing to say */
	assert_int_equal(gpuwatch_new(NULL, &w), 0);
	assert_int_equal(tick(w, 0, ev, 8), 0);
	gpuwatch_free(w);
	unlink(p);
}

static void test_nvlink_crc_rising(void **state)
{
	struct health_event ev[8];
	struct gpuwatch *w = watcher("nvlink-crc-rising", NULL);

	(void)state;
	assert_int_equal(tick(w, 0, ev, 8), 0);
	assert_int_equal(tick(w, MIN, ev, 8), 0); /* 30/min: under 60/min */
	assert_int_equal(tick(w, 2 * MIN, ev, 8), 1);
	assert_string_equal(ev[0].kind, "nvlink");
	assert_string_equal(ev[0].source, "gpu1/link5");
	assert_int_equal(ev[0].severity, HEALTH_WARNING);
	assert_string_equal(ev[0].what, "NVLink CRC errors 100/min, over 60/min");
	assert_int_equal(tick(w, 3 * MIN, ev, 8), 1);
	assert_int_equal(ev[0].severity, HEALTH_CRITICAL);
	assert_string_equal(ev[0].what, "NVLink CRC errors 10000/min, over 6000/min");
	gpuwatch_free(w);
}

static void test_hw_slowdown(void **state)
{
	struct health_event ev[8];
	struct gpuwatch *w = watcher("hw-slowdown", NULL);

	(void)state;
	assert_int_equal(tick(w, 0, ev, 8), 0);
	assert_int_equal(tick(w, MIN, ev, 8), 1);
	assert_int_equal(ev[0].severity, HEALTH_WARNING);
	assert_string_equal(ev[0].what, "clocks event: HW slowdown");
	/* SW power cap is normal: only the end of the slowdown is said */
	assert_int_equal(tick(w, 2 * MIN, ev, 8), 1);
	assert_int_equal(ev[0].severity, HEALTH_INFO);
	assert_string_equal(ev[0].what, "clocks event ended: HW slowdown");
	assert_int_equal(tick(w, 3 * MIN, ev, 8), 1);
	assert_int_equal(ev[0].severity, HEALTH_CRITICAL);
	assert_string_equal(ev[0].what, "clocks event: HW thermal slowdown");
	gpuwatch_free(w);
	/* configured: HW slowdown ignored */
	w = watcher("hw-slowdown", "{\"throttle\": {\"hw_slowdown\": \"ignore\"}}");
	assert_int_equal(tick(w, 0, ev, 8), 0);
	assert_int_equal(tick(w, MIN, ev, 8), 0);
	gpuwatch_free(w);
}

static void test_fabric(void **state)
{
	struct health_event ev[8];
	struct gpuwatch *w = watcher("fabric", NULL);

	(void)state;
	assert_int_equal(tick(w, 0, ev, 8), 0);
	assert_int_equal(tick(w, MIN, ev, 8), 1);
	assert_int_equal(ev[0].severity, HEALTH_CRITICAL);
	assert_string_equal(ev[0].what,
			    "NVSwitch fabric registration not started (fabric manager down?)");
	assert_int_equal(tick(w, 2 * MIN, ev, 8), 1);
	assert_int_equal(ev[0].severity, HEALTH_WARNING);
	assert_int_equal(tick(w, 3 * MIN, ev, 8), 1);
	assert_int_equal(ev[0].severity, HEALTH_CRITICAL);
	assert_string_equal(ev[0].what, "NVSwitch fabric registration failed");
	assert_non_null(strstr(ev[0].detail, "state 3, status Unknown Error"));
	assert_int_equal(tick(w, 4 * MIN, ev, 8), 1);
	assert_int_equal(ev[0].severity, HEALTH_INFO);
	assert_string_equal(ev[0].what, "NVSwitch fabric registration complete");
	gpuwatch_free(w);
}

static void test_enumeration_fails(void **state)
{
	struct health_event ev[8];
	struct gpuwatch *w = watcher("enumeration-fails", NULL);

	(void)state;
	assert_int_equal(tick(w, 0, ev, 8), 0);
	assert_int_equal(tick(w, MIN, ev, 8), 1);
	assert_string_equal(ev[0].source, "nvml");
	assert_int_equal(ev[0].severity, HEALTH_CRITICAL);
	assert_string_equal(ev[0].what, "NVML cannot enumerate the GPUs");
	assert_non_null(strstr(ev[0].detail, "nvmlDeviceGetCount_v2: Unknown Error"));
	assert_int_equal(tick(w, 2 * MIN, ev, 8), 0); /* said once */
	assert_int_equal(tick(w, 3 * MIN, ev, 8), 0); /* back, nothing changed */
	gpuwatch_free(w);
}

static void test_close_ticks_and_room(void **state)
{
	struct health_event ev[1];
	struct gpuwatch *w = watcher("hw-slowdown", NULL);

	(void)state;
	assert_int_equal(tick(w, 0, ev, 1), 0);
	/* under a second after the baseline: nothing compared, nothing read */
	assert_int_equal(tick(w, 500, ev, 1), 0);
	assert_int_equal(tick(w, MIN, ev, 1), 1);
	gpuwatch_free(w);
	/* a lost GPU and a pending remap in one tick, room for one: both counted */
	w = watcher("gpu-lost", NULL);
	assert_int_equal(tick(w, 0, ev, 1), 0);
	assert_int_equal(tick(w, MIN, ev, 0), 1);
	gpuwatch_free(w);
}

static void test_no_nvml(void **state)
{
	struct health_event ev[4];
	struct gpuwatch *w = NULL;
	const char *note;
	size_t n = 9;

	(void)state;
	setenv("RAILYARD_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
	assert_int_equal(gpuwatch_new(NULL, &w), 0);
	assert_false(gpuwatch_on(w));
	note = gpuwatch_note(w);
	assert_non_null(note);
	assert_non_null(strstr(note, "no NVML: GPU watcher off"));
	assert_null(gpuwatch_note(w));
	assert_int_equal(gpuwatch_tick(w, 0, ev, 4, &n), 0);
	assert_int_equal(n, 0);
	gpuwatch_free(w);
	/* a library without NVML's symbols */
	setenv("RAILYARD_NVML_LIBRARY", "libc.so.6", 1);
	assert_int_equal(gpuwatch_new(NULL, &w), 0);
	assert_false(gpuwatch_on(w));
	assert_non_null(strstr(gpuwatch_note(w), "no symbol nvmlInit_v2"));
	gpuwatch_free(w);
	/* the driver not loaded */
	use_series("ecc-uncorrected");
	setenv("RAILYARD_NVML_DOUBLE_DATA", "/nonexistent", 1);
	assert_int_equal(gpuwatch_new(NULL, &w), 0);
	assert_false(gpuwatch_on(w));
	assert_non_null(strstr(gpuwatch_note(w), "Driver Not Loaded"));
	gpuwatch_free(w);
}

static void test_config(void **state)
{
	static const struct {
		const char *json, *err;
	} bad[] = {
		{"[]", "gpu: expected an object"},
		{"{\"ecc\": 1}", "gpu.ecc: unknown key"},
		{"{\"ecc_corrected_per_min\": 5}", "gpu.ecc_corrected_per_min: expected an object"},
		{"{\"ecc_corrected_per_min\": {\"warning\": -1}}",
		 "gpu.ecc_corrected_per_min.warning: expected a number"},
		{"{\"ecc_corrected_per_min\": {\"warn\": 1}}",
		 "gpu.ecc_corrected_per_min.warn: unknown key"},
		{"{\"throttle\": {\"hw_slowdown\": \"fatal\"}}",
		 "gpu.throttle.hw_slowdown: expected \"warning\""},
		{"{\"throttle\": {\"sw_power_cap\": \"warning\"}}",
		 "gpu.throttle.sw_power_cap: unknown key"},
		{"{\"throttle\": 1}", "gpu.throttle: expected an object"},
		{"{\"nvlink\": {\"expected\": 19}}", "gpu.nvlink.expected: expected an integer"},
		{"{\"nvlink\": {\"expected\": \"18\"}}",
		 "gpu.nvlink.expected: expected an integer"},
		{"{\"nvlink\": {\"crc\": {}}}", "gpu.nvlink.crc: unknown key"},
	};
	struct gpuwatch_config c, d;
	struct gpuwatch *w = NULL;
	char err[256];
	json_t *j;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		gpuwatch_config_init(&c);
		d = c;
		j = json_loads(bad[i].json, JSON_DECODE_ANY, NULL);
		assert_non_null(j);
		err[0] = '\0';
		assert_int_equal(gpuwatch_config_parse(j, &c, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].err))
			fail_msg("%s: got \"%s\", want \"%s\"", bad[i].json, err, bad[i].err);
		assert_memory_equal(&c, &d, sizeof(c)); /* unchanged */
		assert_int_equal(gpuwatch_new(j, &w), -EINVAL);
		json_decref(j);
	}
	gpuwatch_config_init(&c);
	j = json_loads("{\"ecc_corrected_per_min\": {\"warning\": 5, \"critical\": 50}, "
		       "\"throttle\": {\"hw_power_brake_slowdown\": \"critical\"}, "
		       "\"nvlink\": {\"expected\": 18, \"recovery_per_min\": {\"critical\": 0}}}",
		       0, NULL);
	assert_int_equal(gpuwatch_config_parse(j, &c, err, sizeof(err)), 0);
	json_decref(j);
	assert_true(c.ecc_corrected.warn == 5 && c.ecc_corrected.crit == 50);
	assert_int_equal(c.hw_power, HEALTH_CRITICAL);
	assert_int_equal(c.hw_slowdown, HEALTH_WARNING);
	assert_int_equal(c.nvlink_expected, 18);
	assert_true(c.nvlink_recovery.warn == 1 && c.nvlink_recovery.crit == 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_healthy_baseline),
		cmocka_unit_test(test_ecc_uncorrected),
		cmocka_unit_test(test_ecc_corrected_rate),
		cmocka_unit_test(test_row_remap_pending),
		cmocka_unit_test(test_gpu_lost),
		cmocka_unit_test(test_nvlink_down),
		cmocka_unit_test(test_nvlink_expected),
		cmocka_unit_test(test_nvlink_crc_rising),
		cmocka_unit_test(test_hw_slowdown),
		cmocka_unit_test(test_enumeration_fails),
		cmocka_unit_test(test_fabric),
		cmocka_unit_test(test_close_ticks_and_room),
		cmocka_unit_test(test_no_nvml),
		cmocka_unit_test(test_config),
	};

	if (argc != 2 || !getenv("RAILYARD_SOURCE_DIR")) {
		fprintf(stderr, "usage: RAILYARD_SOURCE_DIR=... %s NVML_DOUBLE\n", argv[0]);
		return 2;
	}
	double_path = argv[1];
	snprintf(base_path, sizeof(base_path), "%s/tests/fixtures/nvml/health/hgx-2gpu.txt",
		 getenv("RAILYARD_SOURCE_DIR"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
