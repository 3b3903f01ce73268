/* A campaign's GPU parts (controller/campaign/plan.c, verdict.c): a gpu test's rounds (each
 * node alone) and orders, the summary of a GPU check's result, its verdict (a failed check
 * names the node with what failed), and mem: cuda tests pairing each rail with a GPU from the
 * facts (gpu: nearest by gpus[].nearest_hca, gpu: index), a side without one failing the slot
 * with the reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "controller/campaign/campaign_int.h"
#include "controller/store/store_bench.h"
#include "controller/store/store_campaign.h"

#include "common/util/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const nodes_json =
	"[{\"id\": \"id-a\", \"hostname\": \"hgx-a\","
	"  \"rails\": [{\"device\": \"mlx5_0\", \"port\": 1}, {\"device\": \"mlx5_1\", \"port\": "
	"1}],"
	"  \"gpus\": [{\"uuid\": \"GPU-aaaa0000\", \"bus\": \"0000:18:00.0\","
	"              \"nearest_hca\": {\"device\": \"mlx5_1\", \"port\": 1, \"relation\": "
	"\"PIX\"}},"
	"             {\"uuid\": null, \"bus\": \"0000:2a:00.0\","
	"              \"nearest_hca\": {\"device\": \"mlx5_0\", \"port\": 1, \"relation\": "
	"\"PXB\"}}]},"
	" {\"id\": \"id-b\", \"hostname\": \"hgx-b\","
	"  \"rails\": [{\"device\": \"mlx5_0\", \"port\": 1}, {\"device\": \"mlx5_1\", \"port\": "
	"1}],"
	"  \"gpus\": [{\"uuid\": \"GPU-bbbb0000\","
	"              \"nearest_hca\": {\"device\": \"mlx5_0\", \"port\": 1, \"relation\": "
	"\"PIX\"}}]}]";

static const char *const spec_json =
	"{\"transport\": \"verbs\", \"quick\": false, \"tests\": ["
	" {\"name\": \"gpu-health\", \"kind\": \"gpu\", \"size\": 268435456, \"repeats\": 10,"
	"  \"h2d_min\": 48.0, \"d2h_min\": 48.0, \"d2d_min\": 1500.0, \"line\": 7},"
	" {\"name\": \"gd-bw\", \"kind\": \"bw\", \"pattern\": \"pairs\", \"per_rail\": true,"
	"  \"op\": \"write\", \"size\": 1048576, \"duration_s\": 5, \"iters\": 0, \"qps\": 1,"
	"  \"bidir\": false, \"mem\": \"cuda\", \"gpu\": \"nearest\", \"line\": 8},"
	" {\"name\": \"gi-bw\", \"kind\": \"bw\", \"pattern\": \"pairs\", \"per_rail\": true,"
	"  \"op\": \"write\", \"size\": 1048576, \"duration_s\": 5, \"iters\": 0, \"qps\": 1,"
	"  \"bidir\": false, \"mem\": \"cuda\", \"gpu\": \"index\", \"line\": 9}],"
	" \"acceptance\": [{\"metric\": \"gpu-health.h2d_gb_s\", \"test\": \"gpu-health\","
	"  \"field\": \"h2d_gb_s\", \"op\": \">=\", \"value\": 50, \"line\": 11}]}";

static void load(struct cp_campaign *c)
{
	assert_int_equal(cp_load(spec_json, nodes_json, 7, c), 0);
}

static void test_gpu_rounds_and_order(void **state)
{
	struct cp_campaign c;
	struct cp_rounds r;
	const char *kind = NULL;
	json_t *p = NULL;
	int64_t deadline = 0;
	char why[256] = "";

	(void)state;
	load(&c);
	assert_int_equal(cp_test_rounds(&c, 0, &r, why, sizeof(why)), 0);
	assert_int_equal(r.nrounds, 1);
	assert_int_equal(r.nslots, 2);
	for (uint32_t i = 0; i < 2; i++) {
		assert_int_equal(r.slots[i].a, i);
		assert_int_equal(r.slots[i].b, i);
		assert_int_equal(r.slots[i].rail, -1);
	}
	assert_int_equal(cp_slot_bench(&c, 0, &r.slots[1], &kind, &p, &deadline, why, sizeof(why)),
			 0);
	assert_string_equal(kind, "gpu");
	assert_string_equal(json_string_value(json_object_get(p, "kind")), "gpu");
	assert_int_equal(json_integer_value(json_object_get(p, "repeats")), 10);
	assert_true(json_real_value(json_object_get(p, "d2d_min_gb_s")) == 1500.0);
	assert_null(json_object_get(p, "sides"));
	assert_true(deadline > CP_RUN_SLACK_MS);
	json_decref(p);
	cp_rounds_done(&r);
	cp_done(&c);
}

/* The memory each side of slot (a, b, rail) of test t is given, or the refusal. */
static int mem_of(struct cp_campaign *c, size_t t, int32_t rail, char *ma, char *mb, char *why)
{
	struct cp_slot s = {0, 1, rail, 0, VD_RUN, CP_MEASURE};
	const char *kind;
	json_t *p = NULL;
	int64_t deadline;
	int r = cp_slot_bench(c, t, &s, &kind, &p, &deadline, why, 256);
	const json_t *sides = json_object_get(p, "sides");

	if (r == 0) {
		snprintf(ma, 64, "%s",
			 json_string_value(
				 json_object_get(json_object_get(sides, "client"), "mem")));
		snprintf(mb, 64, "%s",
			 json_string_value(
				 json_object_get(json_object_get(sides, "server"), "mem")));
		/* the rail's device stays beside it */
		assert_string_equal(json_string_value(json_object_get(
					    json_object_get(sides, "client"), "device")),
				    rail ? "mlx5_1" : "mlx5_0");
	}
	json_decref(p);
	return r;
}

static void test_gpu_for_rail(void **state)
{
	struct cp_campaign c;
	char ma[64], mb[64], why[256];

	(void)state;
	load(&c);
	/* nearest: rail 0 (mlx5_0) is GPU 1 of hgx-a (no UUID: its bus) and GPU 0 of hgx-b */
	assert_int_equal(mem_of(&c, 1, 0, ma, mb, why), 0);
	assert_string_equal(ma, "cuda:0000:2a:00.0");
	assert_string_equal(mb, "cuda:GPU-bbbb0000");
	/* rail 1 (mlx5_1): hgx-a's GPU 0; hgx-b has no GPU near mlx5_1: the slot fails, saying so
	 */
	assert_int_equal(mem_of(&c, 1, 1, ma, mb, why), -RY_E_NOT_FOUND);
	assert_non_null(strstr(why, "no GPU of hgx-b has mlx5_1 (rail 1) as its nearest HCA"));
	/* index: GPU i for rail i */
	assert_int_equal(mem_of(&c, 2, 0, ma, mb, why), 0);
	assert_string_equal(ma, "cuda:GPU-aaaa0000");
	assert_string_equal(mb, "cuda:GPU-bbbb0000");
	assert_int_equal(mem_of(&c, 2, 1, ma, mb, why), -RY_E_NOT_FOUND);
	assert_non_null(strstr(why, "with GPU 1; it has 1"));
	cp_done(&c);
}

static const char *const gpu_doc_bad =
	"{\"version\": 1, \"ok\": true, \"passed\": false, \"role\": \"client\","
	" \"failures\": [\"GPU 1 (0000:2a:00.0, SN 77): ECC uncorrectable errors: 2\","
	"                \"GPU 1 (0000:2a:00.0, SN 77): h2d 40.0 GB/s, below 48.0\"],"
	" \"not_read\": [],"
	" \"summary\": {\"gpus\": 2, \"h2d_gb_s\": 40.0, \"d2h_gb_s\": 55.0, \"d2d_gb_s\": 1900.0,"
	"             \"checks_failed\": 2, \"not_read\": 0}}";
static const char *const gpu_doc_good =
	"{\"version\": 1, \"ok\": true, \"passed\": true, \"role\": \"client\", \"failures\": [],"
	" \"not_read\": [], \"summary\": {\"gpus\": 1, \"h2d_gb_s\": 55.5, \"d2h_gb_s\": 55.3,"
	" \"d2d_gb_s\": 1959.0, \"checks_failed\": 0, \"not_read\": 0}}";

static char *summary_of(const char *doc)
{
	struct store_bench_run b = {.kind = (char *)"gpu", .result_json = (char *)doc};
	json_t *s = cp_summary(&b);
	char *text;

	assert_non_null(s);
	text = json_dumps(s, JSON_COMPACT);
	json_decref(s);
	return text;
}

static bool line_has(const json_t *arr, const char *text)
{
	const json_t *x;
	size_t i;

	json_array_foreach(arr, i, x)
	{
		if (strstr(json_string_value(x), text))
			return true;
	}
	return false;
}

static void test_gpu_verdict(void **state)
{
	struct cp_campaign c;
	char *good = summary_of(gpu_doc_good), *bad = summary_of(gpu_doc_bad);
	json_t *sum = json_loads(bad, 0, NULL), *v = NULL;
	struct store_campaign_row rows[2] = {
		{0, 0, 0, "run", "measure", "id-a", "id-a", -1, "b-1", "done", good, NULL, 0, 0, 0},
		{0, 0, 1, "run", "measure", "id-b", "id-b", -1, "b-2", "done", bad, NULL, 0, 0, 0},
	};
	const json_t *n, *t;
	size_t i;

	(void)state;
	assert_true(json_real_value(json_object_get(json_object_get(sum, "metrics"), "h2d_gb_s")) ==
		    40.0);
	assert_int_equal(json_array_size(json_object_get(json_object_get(sum, "gpu"), "failures")),
			 2);
	json_decref(sum);
	load(&c);
	/* only the gpu test: the others have no rows */
	json_array_remove(json_object_get(c.spec, "tests"), 2);
	json_array_remove(json_object_get(c.spec, "tests"), 1);
	assert_int_equal(cp_verdict(&c, rows, 2, false, NULL, &v), 0);
	assert_string_equal(json_string_value(json_object_get(v, "result")), "fail");
	json_array_foreach(json_object_get(v, "nodes"), i, n)
	{
		bool is_b = strcmp(json_string_value(json_object_get(n, "id")), "id-b") == 0;

		assert_string_equal(json_string_value(json_object_get(n, "result")),
				    is_b ? "fail" : "pass");
		if (is_b)
			assert_true(line_has(json_object_get(n, "reasons"), "ECC uncorrectable"));
	}
	assert_true(line_has(json_object_get(v, "findings"),
			     "gpu-health: node hgx-b is bad: GPU 1 (0000:2a:00.0, SN 77): ECC"));
	t = json_array_get(json_object_get(v, "tests"), 0);
	/* the playbook's rule and the check's own: both evaluated on both nodes */
	assert_int_equal(json_array_size(json_object_get(t, "rules")), 2);
	json_array_foreach(json_object_get(t, "rules"), i, n)
		assert_int_equal(json_integer_value(json_object_get(n, "evaluated")), 2);
	assert_int_equal(json_array_size(json_object_get(v, "links")), 0);
	json_decref(v);
	cp_done(&c);
	free(good);
	free(bad);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpu_rounds_and_order),
		cmocka_unit_test(test_gpu_for_rail),
		cmocka_unit_test(test_gpu_verdict),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
