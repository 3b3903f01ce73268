/* The GPU check (nodeagent/gpucheck.c): its judgement of measured bandwidth and of the facts'
 * NVML readings against the limits, on fixture facts documents (tests/fixtures/gpu: the real
 * H200 VM, healthy; an HGX node with one fault per GPU and one GPU without NVML readings), the
 * RunBench options, and the whole check on the libcuda test double (its virtual clock gives
 * exact figures). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "nodeagent/gpucheck.h"

#include "common/util/error.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H200_BUS  "0000:00:06.0"
#define H200_UUID "GPU-47077678-012a-d25f-0a23-6b66c4586766"

static json_t *fixture(const char *name)
{
	char path[1024];
	json_error_t je;
	json_t *j;

	snprintf(path, sizeof(path), "%s/tests/fixtures/gpu/%s", getenv("RAILYARD_SOURCE_DIR"),
		 name);
	j = json_load_file(path, 0, &je);
	if (!j)
		fail_msg("%s: %s", path, je.text);
	return j;
}

static void measured(struct gpu_check_measured *m, int ordinal, const char *bus, const char *uuid,
		     double h2d, double d2h, double d2d)
{
	memset(m, 0, sizeof(*m));
	m->info.ordinal = ordinal;
	snprintf(m->info.name, sizeof(m->info.name), "NVIDIA H200");
	snprintf(m->info.bus_id, sizeof(m->info.bus_id), "%s", bus);
	snprintf(m->info.uuid, sizeof(m->info.uuid), "%s", uuid);
	m->bw.size = 1 << 20;
	m->bw.repeats = 10;
	m->bw.dir[GPUBW_H2D] = (struct gpubw_dir_result){h2d, h2d - 1, h2d + 1, 10};
	m->bw.dir[GPUBW_D2H] = (struct gpubw_dir_result){d2h, d2h - 1, d2h + 1, 10};
	m->bw.dir[GPUBW_D2D] = (struct gpubw_dir_result){d2d, d2d - 1, d2d + 1, 10};
}

static const json_t *check_of(const json_t *gpu, const char *name)
{
	const json_t *c;
	size_t i;

	json_array_foreach(json_object_get(gpu, "checks"), i, c)
	{
		if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
			return c;
	}
	fail_msg("no check %s", name);
	return NULL;
}

static void status_is(const json_t *doc, size_t gpu, const char *name, const char *status,
		      const char *detail_has)
{
	const json_t *c = check_of(json_array_get(json_object_get(doc, "gpus"), gpu), name);
	const char *st = json_string_value(json_object_get(c, "status"));
	const char *detail = json_string_value(json_object_get(c, "detail"));

	if (strcmp(st, status) != 0 || (detail_has && !strstr(detail, detail_has)))
		fail_msg("GPU %zu %s: %s '%s', wanted %s '%s'", gpu, name, st, detail, status,
			 detail_has ? detail_has : "");
}

static json_int_t summary_int(const json_t *doc, const char *key)
{
	return json_integer_value(json_object_get(json_object_get(doc, "summary"), key));
}

static bool has_failure(const json_t *doc, const char *text)
{
	const json_t *f;
	size_t i;

	json_array_foreach(json_object_get(doc, "failures"), i, f)
	{
		if (strstr(json_string_value(f), text))
			return true;
	}
	return false;
}

/* The real H200, measured as it was there: every check passes, nothing is "not read". */
static void test_healthy_h200(void **state)
{
	struct gpu_check_opts o;
	struct gpu_check_measured m;
	json_t *facts = fixture("h200-vm-facts.json"), *doc;
	const json_t *g;

	(void)state;
	gpu_check_opts_init(&o);
	measured(&m, 0, H200_BUS, H200_UUID, 55.5, 55.3, 1959);
	doc = gpu_check_evaluate(facts, &m, 1, &o);
	assert_non_null(doc);
	assert_true(json_is_true(json_object_get(doc, "passed")));
	assert_int_equal(summary_int(doc, "checks_failed"), 0);
	assert_int_equal(summary_int(doc, "not_read"), 0);
	assert_true(
		fabs(json_real_value(json_object_get(json_object_get(doc, "summary"), "h2d_gb_s")) -
		     55.5) < 1e-9);
	g = json_array_get(json_object_get(doc, "gpus"), 0);
	assert_string_equal(json_string_value(json_object_get(g, "serial")), "1654024199045");
	assert_string_equal(json_string_value(json_object_get(g, "source")), "nvml");
	status_is(doc, 0, "ecc", "pass", "uncorrectable 0");
	status_is(doc, 0, "pcie", "pass", "Gen5 x16");
	status_is(doc, 0, "persistence", "pass", NULL);
	assert_int_equal(json_array_size(json_object_get(g, "checks")), 8);
	json_decref(doc);
	json_decref(facts);
}

/* One fault per GPU, each named with its GPU; the GPU without NVML readings is "not read" on
 * each health item, never a pass; a slow H2D on GPU 0. */
static void test_faults_hgx(void **state)
{
	static const char *const bus[] = {"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0",
					  "0000:5d:00.0", "0000:9a:00.0", "0000:ab:00.0",
					  "0000:ba:00.0", "0000:db:00.0"};
	struct gpu_check_measured m[8];
	struct gpu_check_opts o;
	json_t *facts = fixture("hgx-faults-facts.json"), *doc;
	char uuid[48];

	(void)state;
	gpu_check_opts_init(&o);
	for (int i = 0; i < 8; i++) {
		snprintf(uuid, sizeof(uuid), "GPU-%08x-0000-4000-8000-%012x", 0x11110000 + i,
			 0x200 + i);
		/* matched by UUID for 0..5, by bus id (upper case, 8-digit domain as NVML writes
		 * it) for 6 and 7 */
		if (i < 6)
			measured(&m[i], i, "bus-not-used", uuid, i ? 55 : 40.2, 54, 1900);
		else
			measured(&m[i], i, i == 6 ? "00000000:BA:00.0" : bus[i], "", 55, 54, 1900);
	}
	doc = gpu_check_evaluate(facts, m, 8, &o);
	assert_non_null(doc);
	assert_false(json_is_true(json_object_get(doc, "passed")));
	status_is(doc, 0, "h2d", "fail", "40.2 GB/s, below 48.0");
	status_is(doc, 0, "ecc", "pass", NULL);
	status_is(doc, 1, "ecc", "fail", "2 since the driver loaded, 3 over its lifetime");
	status_is(doc, 2, "row_remap", "fail", "pending");
	status_is(doc, 3, "pcie", "fail", "Gen4 x16, the GPU can do Gen5 x16");
	status_is(doc, 4, "pcie", "fail", "Gen5 x8");
	status_is(doc, 5, "clocks", "fail", "hardware slowdown and a thermal event");
	status_is(doc, 5, "clocks", "fail", "hw_thermal_slowdown");
	status_is(doc, 6, "persistence", "fail", "off");
	status_is(doc, 6, "ecc", "pass", NULL); /* found by bus id */
	status_is(doc, 7, "ecc", "not_read", NULL);
	status_is(doc, 7, "row_remap", "not_read", NULL);
	status_is(doc, 7, "pcie", "not_read", NULL);
	status_is(doc, 7, "clocks", "not_read", NULL);
	status_is(doc, 7, "persistence", "not_read", NULL);
	status_is(doc, 7, "h2d", "pass", NULL);
	assert_int_equal(summary_int(doc, "checks_failed"), 7);
	assert_int_equal(summary_int(doc, "not_read"), 5);
	assert_true(has_failure(doc, "GPU 1 (bus-not-used, SN 1654024199051): ECC"));
	assert_true(json_is_object(
		json_object_get(json_array_get(json_object_get(doc, "gpus"), 3), "nearest_hca")));
	json_decref(doc);
	json_decref(facts);
}

/* Limits from the options: at the minimum passes, below fails, 0 turns a check off. */
static void test_limits(void **state)
{
	struct gpu_check_measured m;
	struct gpu_check_opts o;
	json_t *facts = fixture("h200-vm-facts.json"), *doc;

	(void)state;
	gpu_check_opts_init(&o);
	o.h2d_min = 55.5;
	o.d2h_min = 55.31;
	o.d2d_min = 0;
	measured(&m, 0, H200_BUS, H200_UUID, 55.5, 55.3, 10);
	doc = gpu_check_evaluate(facts, &m, 1, &o);
	status_is(doc, 0, "h2d", "pass", "at least 55.5");
	status_is(doc, 0, "d2h", "fail", "below 55.3");
	status_is(doc, 0, "d2d", "pass", "not checked");
	assert_int_equal(summary_int(doc, "checks_failed"), 1);
	json_decref(doc);
	/* a GPU whose measurement failed fails each bandwidth check with the reason */
	m.r = -EIO;
	snprintf(m.err, sizeof(m.err), "GPU 0: h2d: CUDA_ERROR_LAUNCH_FAILED");
	doc = gpu_check_evaluate(facts, &m, 1, &o);
	status_is(doc, 0, "h2d", "fail", "not measured: GPU 0: h2d: CUDA_ERROR_LAUNCH_FAILED");
	assert_null(json_object_get(json_object_get(doc, "summary"), "h2d_gb_s"));
	json_decref(doc);
	json_decref(facts);
}

/* A GPU in the facts that CUDA does not see fails the node (when every GPU was measured);
 * without facts every health reading is "not read". */
static void test_unseen_and_no_facts(void **state)
{
	struct gpu_check_measured m;
	struct gpu_check_opts o;
	json_t *facts = fixture("h200-vm-facts.json"), *doc;

	(void)state;
	gpu_check_opts_init(&o);
	measured(&m, 0, "0000:18:00.0", "GPU-d0d1d2d3-d4d5-d6d7-d8d9-dadbdcdddedf", 55, 55, 1900);
	doc = gpu_check_evaluate(facts, &m, 1, &o);
	assert_true(has_failure(doc, H200_BUS " / " H200_UUID " is in the facts but CUDA does "
					      "not see it"));
	status_is(doc, 0, "facts", "not_read", "the facts have no GPU 0000:18:00.0");
	assert_false(json_is_true(json_object_get(doc, "passed")));
	json_decref(doc);
	o.gpu = 0; /* one GPU asked for: the others are not its business */
	doc = gpu_check_evaluate(facts, &m, 1, &o);
	assert_false(has_failure(doc, "CUDA does not see"));
	assert_true(json_is_true(json_object_get(doc, "passed")));
	json_decref(doc);
	doc = gpu_check_evaluate(NULL, &m, 1, &o);
	status_is(doc, 0, "facts", "not_read", NULL);
	assert_int_equal(summary_int(doc, "not_read"), 1);
	json_decref(doc);
	json_decref(facts);
}

static void test_opts_json(void **state)
{
	struct gpu_check_opts o;
	char err[256];
	json_t *p;

	(void)state;
	gpu_check_opts_init(&o);
	p = json_pack("{ss si sI si sf si sf}", "kind", "gpu", "gpu", 3, "size",
		      (json_int_t)(64 << 20), "repeats", 5, "h2d_min_gb_s", 50.5, "d2h_min_gb_s",
		      49, "d2d_min_gb_s", 0.0);
	assert_int_equal(gpu_check_opts_from_json(p, &o, err, sizeof(err)), 0);
	assert_int_equal(o.gpu, 3);
	assert_int_equal(o.size, 64 << 20);
	assert_int_equal(o.repeats, 5);
	assert_true(o.h2d_min == 50.5 && o.d2h_min == 49 && o.d2d_min == 0);
	json_decref(p);
	static const char *const bad[] = {
		"{\"colour\": 1}",  "{\"kind\": \"lat\"}",	"{\"size\": 1024}",
		"{\"repeats\": 0}", "{\"h2d_min_gb_s\": -1}",	"{\"gpu\": \"0\"}",
		"{\"gpu\": 64}",    "{\"d2h_min_gb_s\": true}", "[]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		gpu_check_opts_init(&o);
		p = json_loads(bad[i], 0, NULL);
		if (gpu_check_opts_from_json(p, &o, err, sizeof(err)) != -RY_E_INVALID)
			fail_msg("%s accepted", bad[i]);
		json_decref(p);
	}
}

/* The whole check on the double, given the H200's facts (the double is that GPU): the exact
 * figures its clock gives, the limits applied. */
static int knob(const char *name, const char *value)
{
	void *h = dlopen(getenv("RAILYARD_SEAM_LIBCUDA"), RTLD_NOW | RTLD_NOLOAD);
	int (*set)(const char *, const char *) = NULL;
	int r;

	assert_non_null(h);
	*(void **)&set = dlsym(h, "railyard_cuda_double_set");
	assert_non_null(set);
	r = set(name, value);
	dlclose(h);
	return r;
}

static void test_run_on_double(void **state)
{
	struct gpu_check_opts o;
	json_t *facts = fixture("h200-vm-facts.json"), *doc = NULL;
	const json_t *bw;
	char err[256] = "";

	(void)state;
	gpu_check_opts_init(&o);
	o.size = 1 << 20;
	o.repeats = 3;
	assert_int_equal(gpu_check_run("/", facts, &o, &doc, err, sizeof(err)), 0);
	bw = json_object_get(json_array_get(json_object_get(doc, "gpus"), 0), "bandwidth");
	assert_true(fabs(json_real_value(json_object_get(json_object_get(bw, "h2d"), "gb_s")) -
			 55.5) < 1e-3);
	assert_true(fabs(json_real_value(json_object_get(json_object_get(bw, "d2d"), "gb_s")) -
			 1959) < 0.5);
	assert_true(json_is_true(json_object_get(doc, "passed")));
	assert_string_equal(json_string_value(json_object_get(doc, "facts")), "given");
	json_decref(doc);
	/* slower H2D: the GPU fails with the figure */
	assert_int_equal(knob("RATES", "h2d=40,d2h=55.3,d2d=1959"), 0);
	assert_int_equal(gpu_check_run("/", facts, &o, &doc, err, sizeof(err)), 0);
	assert_false(json_is_true(json_object_get(doc, "passed")));
	status_is(doc, 0, "h2d", "fail", "h2d 40.0 GB/s");
	json_decref(doc);
	/* a GPU that is not there */
	o.gpu = 1;
	assert_int_equal(gpu_check_run("/", facts, &o, &doc, err, sizeof(err)), -ENODEV);
	assert_non_null(strstr(err, "no GPU 1: this host has 1"));
	json_decref(facts);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_healthy_h200), cmocka_unit_test(test_faults_hgx),
		cmocka_unit_test(test_limits),	     cmocka_unit_test(test_unseen_and_no_facts),
		cmocka_unit_test(test_opts_json),    cmocka_unit_test(test_run_on_double),
	};

	/* The double is the H200 of the fixture, copying at its measured rates. */
	setenv("RAILYARD_CUDA_DOUBLE_BUS", H200_BUS, 1);
	setenv("RAILYARD_CUDA_DOUBLE_UUIDS", H200_UUID, 1);
	setenv("RAILYARD_CUDA_DOUBLE_RATES", "h2d=55.5,d2h=55.3,d2d=1959", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
