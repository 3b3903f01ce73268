/* Unit tests of nodeagent/colljob.c's reading of nccl-tests' all_reduce_perf table (the NCCL
 * backend of a collective run with the playbook's nccl-tests): the out-of-place figures of each
 * size line, "N/A" wrong counts, the ranks from the device lines, and a run that printed no
 * size line refused. */
#include "nodeagent/colljob.h"
#include "common/util/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

/* all_reduce_perf -b 8 -e 128M -f 2 -g 1 under mpirun, two ranks (nccl-tests 2.13 layout). */
static const char table[] =
	"# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 "
	"iters: 20 agg iters: 1 validation: 1 graph: 0\n"
	"#\n"
	"# Using devices\n"
	"#  Rank  0 Group  0 Pid  41 on gpu-node-01 device  0 [0x19] NVIDIA H200\n"
	"#  Rank  1 Group  0 Pid  42 on gpu-node-02 device  0 [0x19] NVIDIA H200\n"
	"#\n"
	"#                                                              out-of-place          "
	"             in-place          \n"
	"#       size         count      type   redop    root     time   algbw   busbw #wrong "
	"    time   algbw   busbw #wrong\n"
	"#        (B)    (elements)                               (us)  (GB/s)  (GB/s)        "
	"    (us)  (GB/s)  (GB/s)       \n"
	"           8             2     float     sum      -1    20.05    0.00    0.00      0 "
	"   19.86    0.00    0.00      0\n"
	"   134217728      33554432     float     sum      -1   1452.3   92.42   92.42    N/A "
	"  1450.1   92.56   92.56    N/A\n"
	"# Out of bounds values : 0 OK\n"
	"# Avg bus bandwidth    : 46.21 \n";

static void test_table(void **state)
{
	json_t *doc = NULL, *r;

	(void)state;
	assert_int_equal(agent_nccl_tests_parse(table, &doc), 0);
	assert_int_equal(json_integer_value(json_object_get(doc, "ranks")), 2);
	assert_string_equal(json_string_value(json_object_get(doc, "dtype")), "float");
	assert_int_equal(json_array_size(json_object_get(doc, "results")), 2);
	r = json_array_get(json_object_get(doc, "results"), 0);
	assert_string_equal(json_string_value(json_object_get(r, "op")), "allreduce");
	assert_int_equal(json_integer_value(json_object_get(r, "bytes")), 8);
	assert_int_equal(json_integer_value(json_object_get(r, "count")), 2);
	assert_true(json_real_value(json_object_get(r, "time_us")) == 20.05);
	assert_int_equal(json_integer_value(json_object_get(r, "wrong")), 0);
	r = json_array_get(json_object_get(doc, "results"), 1);
	assert_int_equal(json_integer_value(json_object_get(r, "bytes")), 134217728);
	/* The out-of-place figures, not the in-place ones. */
	assert_true(json_real_value(json_object_get(r, "busbw_gbs")) == 92.42);
	assert_true(json_real_value(json_object_get(r, "algbw_gbs")) == 92.42);
	assert_int_equal(json_integer_value(json_object_get(r, "wrong")), -1);
	json_decref(doc);
}

static void test_nothing(void **state)
{
	json_t *doc = NULL;

	(void)state;
	assert_int_equal(agent_nccl_tests_parse("", &doc), -RY_E_INVALID);
	assert_int_equal(
		agent_nccl_tests_parse("# only comments\n#  Rank  0\nNCCL failure\n", &doc),
		-RY_E_INVALID);
	/* A negative time is no measurement. */
	assert_int_equal(agent_nccl_tests_parse("8 2 float sum -1 -3.0 0.00 0.00 0\n", &doc),
			 -RY_E_INVALID);
	assert_null(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
