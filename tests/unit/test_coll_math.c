/* Unit tests of railyard-coll's arithmetic (nodeagent/coll/coll_math.h): nccl-tests' sizes and
 * bus-bandwidth factors, the test data and expected results of every op simulated over n ranks
 * in memory, the checker catching one corrupted element (and a NaN), size and op parsing, the
 * circle-method pair schedule, and the CPU object's ratios. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "nodeagent/coll/coll_math.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_sizes(void **state)
{
	struct coll_sizes s;

	(void)state;
	/* allreduce, sendrecv: the buffer */
	assert_true(coll_sizes_for(COLL_ALLREDUCE, 1024, 4, &s));
	assert_int_equal(s.count, 256);
	assert_int_equal(s.bytes, 1024);
	assert_true(coll_sizes_for(COLL_SENDRECV, 8, 4, &s));
	assert_int_equal(s.count, 2);
	assert_int_equal(s.bytes, 8);
	assert_false(coll_sizes_for(COLL_ALLREDUCE, 2, 4, &s));
	/* allgather over 3 ranks at 1000 B: 250 elements, 83 per rank rounded down to 80 (16 B) */
	assert_true(coll_sizes_for(COLL_ALLGATHER, 1000, 3, &s));
	assert_int_equal(s.count, 80);
	assert_int_equal(s.send_count, 80);
	assert_int_equal(s.recv_count, 240);
	assert_int_equal(s.bytes, 960);
	/* reducescatter: the whole input */
	assert_true(coll_sizes_for(COLL_REDUCESCATTER, 1000, 3, &s));
	assert_int_equal(s.count, 80);
	assert_int_equal(s.send_count, 240);
	assert_int_equal(s.recv_count, 80);
	assert_int_equal(s.bytes, 960);
	/* alltoall: each rank's whole send buffer */
	assert_true(coll_sizes_for(COLL_ALLTOALL, 64 << 20, 8, &s));
	assert_int_equal(s.count, (64 << 20) / 4 / 8);
	assert_int_equal(s.send_count, (64 << 20) / 4);
	assert_int_equal(s.bytes, 64 << 20);
	/* a per-rank split under 16 bytes moves nothing: left out */
	assert_false(coll_sizes_for(COLL_ALLGATHER, 32, 4, &s));
	assert_true(coll_sizes_for(COLL_ALLGATHER, 64, 4, &s));
	assert_int_equal(s.count, 4);
}

static void test_factors(void **state)
{
	(void)state;
	assert_true(fabs(coll_busbw_factor(COLL_ALLREDUCE, 4) - 1.5) < 1e-12);
	assert_true(fabs(coll_busbw_factor(COLL_ALLREDUCE, 16) - 30.0 / 16) < 1e-12);
	assert_true(fabs(coll_busbw_factor(COLL_ALLGATHER, 4) - 0.75) < 1e-12);
	assert_true(fabs(coll_busbw_factor(COLL_REDUCESCATTER, 8) - 0.875) < 1e-12);
	assert_true(fabs(coll_busbw_factor(COLL_ALLTOALL, 2) - 0.5) < 1e-12);
	assert_true(fabs(coll_busbw_factor(COLL_SENDRECV, 64) - 1.0) < 1e-12);
	assert_true(coll_busbw_factor(COLL_ALLREDUCE, 1) == 0);
}

/* Every op carried out in memory over n ranks, as the MPI library would: outs[k] receives. */
static void simulate(enum coll_op op, int n, const struct coll_sizes *s, float **ins, float **outs)
{
	for (int k = 0; k < n; k++) {
		for (size_t i = 0; i < s->recv_count; i++) {
			float v = 0;
			size_t p = i / s->count, e = i % s->count;

			switch (op) {
			case COLL_ALLREDUCE:
				for (int r = 0; r < n; r++)
					v += ins[r][i];
				break;
			case COLL_REDUCESCATTER:
				for (int r = 0; r < n; r++)
					v += ins[r][(size_t)k * s->count + i];
				break;
			case COLL_ALLGATHER:
				v = ins[p][e];
				break;
			case COLL_ALLTOALL:
				v = ins[p][(size_t)k * s->count + e];
				break;
			case COLL_SENDRECV:
				v = ins[(k - 1 + n) % n][i];
				break;
			default:
				break;
			}
			outs[k][i] = v;
		}
	}
}

static void test_check_every_op(void **state)
{
	const int nr[] = {1, 2, 3, 5, 8};

	(void)state;
	for (size_t t = 0; t < sizeof(nr) / sizeof(nr[0]); t++) {
		int n = nr[t];
		struct coll_sums sums;

		coll_sums_init(&sums, n);
		for (int op = 0; op < COLL_OPS; op++) {
			struct coll_sizes s;
			float *ins[8], *outs[8];

			assert_true(coll_sizes_for(op, 4096 + 52, n, &s));
			for (int r = 0; r < n; r++) {
				ins[r] = calloc(s.send_count, sizeof(float));
				outs[r] = calloc(s.recv_count, sizeof(float));
				assert_non_null(ins[r]);
				assert_non_null(outs[r]);
				coll_fill(op, r, n, &s, ins[r]);
			}
			simulate(op, n, &s, ins, outs);
			for (int k = 0; k < n; k++)
				assert_int_equal(coll_check(op, k, n, &sums, &s, outs[k]), 0);
			/* one corrupted element on the last rank is caught, and only it */
			outs[n - 1][s.recv_count / 2] += 1;
			assert_int_equal(coll_check(op, n - 1, n, &sums, &s, outs[n - 1]), 1);
			outs[n - 1][0] = NAN;
			assert_int_equal(coll_check(op, n - 1, n, &sums, &s, outs[n - 1]), 2);
			/* an untouched receive buffer (zeros) is mostly wrong */
			memset(outs[0], 0, s.recv_count * sizeof(float));
			assert_true(coll_check(op, 0, n, &sums, &s, outs[0]) > s.recv_count / 2);
			for (int r = 0; r < n; r++) {
				free(ins[r]);
				free(outs[r]);
			}
		}
	}
}

static void test_data_exact(void **state)
{
	struct coll_sums sums;

	(void)state;
	/* small integers in -6..6, sums exact */
	for (size_t i = 0; i < 100; i++) {
		float v = coll_input(3, i);

		assert_true(v >= -6 && v <= 6 && v == floorf(v));
	}
	coll_sums_init(&sums, 1024);
	for (int k = 0; k < COLL_SUM_PERIOD; k++) {
		double d = 0;

		for (int r = 0; r < 1024; r++)
			d += coll_input(r, (size_t)k);
		assert_true(sums.v[k] == (float)d);
	}
}

static void test_parse(void **state)
{
	uint64_t v;
	unsigned m;
	char bad[32];

	(void)state;
	assert_int_equal(coll_size_parse("8", &v), 0);
	assert_int_equal(v, 8);
	assert_int_equal(coll_size_parse("64M", &v), 0);
	assert_int_equal(v, 64ull << 20);
	assert_int_equal(coll_size_parse("4K", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(coll_size_parse("1G", &v), 0);
	assert_int_equal(v, 1ull << 30);
	assert_int_equal(coll_size_parse("", &v), -EINVAL);
	assert_int_equal(coll_size_parse("4X", &v), -EINVAL);
	assert_int_equal(coll_size_parse("-4", &v), -EINVAL);
	assert_int_equal(coll_size_parse("4 K", &v), -EINVAL);
	assert_int_equal(coll_size_parse("0", &v), -ERANGE);
	assert_int_equal(coll_size_parse("17G", &v), -ERANGE);
	assert_int_equal(coll_size_parse("99999999999999999999999", &v), -ERANGE);

	assert_int_equal(coll_ops_parse("allreduce,sendrecv", &m, bad, sizeof(bad)), 0);
	assert_int_equal(m, (1u << COLL_ALLREDUCE) | (1u << COLL_SENDRECV));
	assert_int_equal(coll_ops_parse("allreduce,broadcast", &m, bad, sizeof(bad)), -EINVAL);
	assert_string_equal(bad, "broadcast");
	assert_int_equal(coll_ops_parse("allreduce,", &m, bad, sizeof(bad)), -EINVAL);
	assert_string_equal(bad, "");
	assert_string_equal(coll_op_name(COLL_REDUCESCATTER), "reducescatter");
	assert_null(coll_op_name(COLL_OPS));
}

static void test_pairs(void **state)
{
	(void)state;
	assert_int_equal(coll_pair_rounds(1), 0);
	assert_int_equal(coll_pair_peer(1, 0, 0), -1);
	for (int m = 2; m <= 9; m++) {
		int met[9][9] = {{0}};
		int rounds = coll_pair_rounds(m);

		assert_int_equal(rounds, m % 2 ? m : m - 1);
		for (int r = 0; r < rounds; r++) {
			int idle = 0;

			for (int a = 0; a < m; a++) {
				int b = coll_pair_peer(m, r, a);

				if (b < 0) {
					idle++;
					continue;
				}
				assert_true(b != a && b < m);
				assert_int_equal(coll_pair_peer(m, r, b), a);
				met[a][b]++;
			}
			assert_int_equal(idle, m % 2);
		}
		for (int a = 0; a < m; a++)
			for (int b = 0; b < m; b++)
				assert_int_equal(met[a][b], a == b ? 0 : 1);
	}
}

static void test_cpu_json(void **state)
{
	json_t *j;

	(void)state;
	j = coll_cpu_json(2.0, 6.0, 10.0, true, 3.0);
	assert_non_null(j);
	assert_true(fabs(json_real_value(json_object_get(j, "cores")) - 3.0) < 1e-12);
	assert_true(fabs(json_real_value(json_object_get(j, "host_cores")) - 5.0) < 1e-12);
	assert_true(fabs(json_real_value(json_object_get(j, "cpu_s_per_gb")) - 2.0) < 1e-12);
	assert_true(fabs(json_real_value(json_object_get(j, "host_cpu_s_per_gb")) - 10.0 / 3) <
		    1e-12);
	json_decref(j);
	j = coll_cpu_json(0, 0, 0, false, 0);
	assert_non_null(j);
	assert_true(json_is_null(json_object_get(j, "cores")));
	assert_true(json_is_null(json_object_get(j, "host_cpu_s")));
	assert_true(json_is_null(json_object_get(j, "host_cores")));
	assert_true(json_is_null(json_object_get(j, "cpu_s_per_gb")));
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),	       cmocka_unit_test(test_factors),
		cmocka_unit_test(test_check_every_op), cmocka_unit_test(test_data_exact),
		cmocka_unit_test(test_parse),	       cmocka_unit_test(test_pairs),
		cmocka_unit_test(test_cpu_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
