/* Unit tests of benchmark parameters: railyard-bench argument parsing, bounds, the wire form,
 * and negotiation (agree / disagree with a clear message). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "nodeagent/bench/bench.h"
#include "nodeagent/bench/cli.h"

#include "common/util/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PARSE(cli, err, ...)                                                                       \
	({                                                                                         \
		char *argv_[] = {"railyard-bench", __VA_ARGS__, NULL};                             \
		bench_cli_parse((int)(sizeof(argv_) / sizeof(argv_[0])) - 1, argv_, (cli), (err),  \
				BENCH_ERR_LEN);                                                    \
	})

static void test_parse_full(void **state)
{
	struct bench_cli cli;
	char err[BENCH_ERR_LEN] = "";

	assert_int_equal(PARSE(&cli, err, "bw", "--transport", "tcp", "-s", "64K", "-n", "5000",
			       "-q", "4", "--bidir", "-p", "20000", "--check-data", "--json", "-t",
			       "32", "10.0.0.2"),
			 0);
	assert_int_equal(cli.params.kind, BENCH_BW);
	assert_int_equal(cli.params.op, BENCH_OP_SEND); /* tcp's default */
	assert_string_equal(cli.params.transport, "tcp");
	assert_int_equal(cli.params.size, 65536);
	assert_int_equal(cli.params.iters, 5000);
	assert_int_equal(cli.params.duration_s, 0);
	assert_int_equal(cli.params.qps, 4);
	assert_int_equal(cli.params.depth, 32);
	assert_true(cli.params.bidir && cli.params.check_data && cli.json && !cli.metrics);
	assert_int_equal(cli.params.port, 20000);
	assert_int_equal(cli.params.warmup, 500); /* iters / 10 */
	assert_string_equal(cli.peer, "10.0.0.2");
}

static void test_parse_defaults_server(void **state)
{
	struct bench_cli cli;
	char err[BENCH_ERR_LEN] = "";

	assert_int_equal(PARSE(&cli, err, "lat"), 0);
	assert_null(cli.peer);
	assert_int_equal(cli.params.kind, BENCH_LAT);
	assert_int_equal(cli.params.size, 2);
	assert_int_equal(cli.params.iters, 1000);
	assert_int_equal(cli.params.warmup, 100);
	assert_int_equal(cli.params.port, BENCH_DEFAULT_PORT);
	assert_int_equal(cli.params.depth, 1);
	assert_int_equal(cli.params.connect_timeout_ms, 3600000); /* servers wait */
	assert_int_equal(PARSE(&cli, err, "bw", "-D", "10", "-a", "--metrics", "host"), 0);
	assert_true(cli.params.sweep && cli.metrics);
	assert_int_equal(cli.params.iters, 0);
	assert_int_equal(cli.params.duration_s, 10);
	assert_int_equal(cli.params.margin_ms, 1000);
	assert_int_equal(cli.params.warmup, 0);
	assert_int_equal(PARSE(&cli, err, "-h"), 0);
	assert_true(cli.help);
}

static void test_parse_errors(void **state)
{
	struct bench_cli cli;
	char err[BENCH_ERR_LEN] = "";

	assert_int_equal(PARSE(&cli, err, "lat", "-s", "4", "-a"), -RY_E_INVALID);
	assert_non_null(strstr(err, "-s and -a"));
	assert_int_equal(PARSE(&cli, err, "lat", "-n", "4", "-D", "3"), -RY_E_INVALID);
	assert_non_null(strstr(err, "-n and -D"));
	assert_int_equal(PARSE(&cli, err, "lat", "-s", "9M"), -ERANGE);
	assert_int_equal(PARSE(&cli, err, "lat", "-s", "0"), -ERANGE);
	assert_int_equal(PARSE(&cli, err, "lat", "-n", "100000001"), -ERANGE);
	assert_int_equal(PARSE(&cli, err, "lat", "-D", "3601"), -ERANGE);
	assert_int_equal(PARSE(&cli, err, "bw", "-q", "65"), -ERANGE);
	assert_int_equal(PARSE(&cli, err, "bw", "-q", "0"), -ERANGE);
	assert_int_equal(PARSE(&cli, err, "lat", "-q", "2"), -RY_E_INVALID);
	assert_int_equal(PARSE(&cli, err, "lat", "--bidir"), -RY_E_INVALID);
	assert_int_equal(PARSE(&cli, err, "lat", "-n", "-5"), -RY_E_INVALID);
	assert_int_equal(PARSE(&cli, err, "lat", "-n", "12abc"), -RY_E_INVALID);
	assert_int_equal(PARSE(&cli, err, "lat", "-p", "70000"), -ERANGE);
	assert_int_equal(PARSE(&cli, err, "ping"), -RY_E_INVALID);
	assert_non_null(strstr(err, "lat or bw"));
	assert_int_equal(PARSE(&cli, err, "lat", "a", "b"), -RY_E_INVALID);
	assert_int_equal(PARSE(&cli, err, "lat", "--frobnicate"), -RY_E_INVALID);
	assert_int_equal(PARSE(&cli, err, "lat", "-s"), -RY_E_INVALID);
	assert_int_equal(PARSE(&cli, err, "lat", "--op", "atomic"), -RY_E_INVALID);
	assert_int_equal(PARSE(&cli, err, "lat", "--op", "write"), -RY_E_INVALID);
	assert_non_null(strstr(err, "tcp transport does not do --op write"));
	assert_int_equal(PARSE(&cli, err, "lat", "--transport", "carrier-pigeon"), -RY_E_NOT_FOUND);
	assert_int_equal(PARSE(&cli, err, "lat", "--mem", "floppy"), -RY_E_NOT_FOUND);
	assert_non_null(strstr(err, "unknown memory 'floppy' (host, cuda)"));
	assert_int_equal(PARSE(&cli, err, "bw", "-D", "2", "--margin", "1000"), -RY_E_INVALID);
}

static void test_parse_verbs(void **state)
{
	struct bench_cli cli;
	char err[BENCH_ERR_LEN] = "";
	int r = PARSE(&cli, err, "lat", "--transport", "verbs", "-d", "rxe0", "-x", "1");

	if (bench_transport_find("verbs")) {
		if (r == 0) {
			assert_string_equal(cli.params.device, "rxe0");
			assert_int_equal(cli.params.gid_index, 1);
		}
	} else {
		assert_int_equal(r, -ENOTSUP);
		assert_string_equal(err, "verbs transport not built");
	}
}

/* -i / --ib-port: the HCA port, 1..255 (0 in the parameters means the default, port 1). The
 * tcp transport ignores it, as it ignores -d and -x. */
static void test_parse_ib_port(void **state)
{
	struct bench_cli cli;
	char err[BENCH_ERR_LEN] = "";

	(void)state;
	assert_int_equal(PARSE(&cli, err, "lat"), 0);
	assert_int_equal(cli.params.ib_port, 0);
	assert_int_equal(PARSE(&cli, err, "lat", "-i", "2", "host"), 0);
	assert_int_equal(cli.params.ib_port, 2);
	assert_string_equal(cli.peer, "host");
	assert_int_equal(PARSE(&cli, err, "bw", "--ib-port", "255"), 0);
	assert_int_equal(cli.params.ib_port, 255);
	assert_int_equal(PARSE(&cli, err, "lat", "--ib-port=1"), 0);
	assert_int_equal(cli.params.ib_port, 1);

	cli.params.ib_port = 77; /* untouched on failure */
	assert_int_equal(PARSE(&cli, err, "lat", "-i", "0"), -RY_E_INVALID);
	assert_string_equal(err, "-i wants a port from 1 to 255, not 0");
	assert_int_equal(PARSE(&cli, err, "lat", "-i", "256"), -ERANGE);
	assert_string_equal(err, "-i 256 is over 255");
	assert_int_equal(PARSE(&cli, err, "lat", "--ib-port", "1K"), -ERANGE);
	assert_string_equal(err, "-i 1K is over 255");
	assert_int_equal(PARSE(&cli, err, "lat", "-i", "one"), -RY_E_INVALID);
	assert_string_equal(err, "-i wants a number, not 'one'");
	assert_int_equal(PARSE(&cli, err, "lat", "-i", "-1"), -RY_E_INVALID);
	assert_string_equal(err, "-i wants a number, not '-1'");
	assert_int_equal(PARSE(&cli, err, "lat", "-i", ""), -RY_E_INVALID);
	assert_string_equal(err, "-i wants a number, not ''");
	assert_int_equal(PARSE(&cli, err, "lat", "--ib-port"), -RY_E_INVALID);
	assert_string_equal(err, "--ib-port wants a value");
	assert_int_equal(cli.params.ib_port, 77);
}

/* The human header names traffic class and SL only when a side has them. */
static void test_print_tclass(void **state)
{
	json_t *doc = json_pack("{s{ss ss ss} s{s{si si} s{si si}} s[]}", "params", "kind", "lat",
				"op", "write", "transport", "verbs", "environment", "client",
				"traffic_class", 0, "service_level", 0, "server", "traffic_class",
				0, "service_level", 0, "results");
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_non_null(doc);
	f = open_memstream(&out, &len);
	assert_non_null(f);
	bench_cli_print(f, doc);
	assert_int_equal(fclose(f), 0);
	assert_null(strstr(out, "traffic class"));
	free(out);

	json_object_set_new(json_object_get(json_object_get(doc, "environment"), "client"),
			    "traffic_class", json_integer(32));
	json_object_set_new(json_object_get(json_object_get(doc, "environment"), "server"),
			    "service_level", json_integer(3));
	f = open_memstream(&out, &len);
	assert_non_null(f);
	bench_cli_print(f, doc);
	assert_int_equal(fclose(f), 0);
	assert_non_null(
		strstr(out, " Client: traffic class 32 SL 0   Server: traffic class 0 SL 3\n"));
	free(out);
	json_decref(doc);
}

static void test_wire_roundtrip(void **state)
{
	struct bench_params p, q;
	uint8_t buf[BENCH_PARAMS_WIRE];
	char err[BENCH_ERR_LEN];

	bench_params_init(&p);
	p.kind = BENCH_BW;
	p.size = 1 << 20;
	p.qps = 8;
	p.bidir = p.check_data = true;
	snprintf(p.device, sizeof(p.device), "mlx5_0"); /* local: not on the wire */
	p.ib_port = 2;					/* local */
	assert_int_equal(bench_params_validate(&p, err, sizeof(err)), 0);
	bench_params_pack(&p, buf);
	assert_int_equal(bench_params_unpack(buf, sizeof(buf), &q), 0);
	assert_int_equal(bench_params_compare(&p, &q, err, sizeof(err)), 0);
	assert_string_equal(q.device, "");
	assert_int_equal(q.ib_port, 0);
	assert_int_equal(bench_params_unpack(buf, sizeof(buf) - 1, &q), -RY_E_INVALID);
	buf[0] ^= 1; /* magic */
	assert_int_equal(bench_params_unpack(buf, sizeof(buf), &q), -RY_E_INVALID);
	buf[0] ^= 1;
	buf[5] = 2; /* version */
	assert_int_equal(bench_params_unpack(buf, sizeof(buf), &q), -RY_E_INVALID);
	buf[5] = 1;
	buf[7] = 9; /* op */
	assert_int_equal(bench_params_unpack(buf, sizeof(buf), &q), -RY_E_INVALID);
	buf[7] = BENCH_OP_SEND;
	buf[16] = 0xff; /* size far over 8 MiB */
	assert_int_equal(bench_params_unpack(buf, sizeof(buf), &q), -RY_E_INVALID);
}

static void test_compare(void **state)
{
	struct bench_params a, b;
	char err[BENCH_ERR_LEN];

	bench_params_init(&a);
	assert_int_equal(bench_params_validate(&a, err, sizeof(err)), 0);
	bench_params_init(&b);
	b.kind = BENCH_BW;
	b.size = 65536;
	b.depth = 128;
	assert_int_equal(bench_params_validate(&b, err, sizeof(err)), 0);
	assert_int_equal(bench_params_compare(&a, &b, err, sizeof(err)), -RY_E_PARAM_MISMATCH);
	assert_non_null(strstr(err, "peer runs bw with size 65536"));
	assert_non_null(strstr(err, "we run lat with size 2"));

	bench_params_init(&b);
	b.iters = 5000;
	assert_int_equal(bench_params_validate(&b, err, sizeof(err)), 0);
	assert_int_equal(bench_params_compare(&a, &b, err, sizeof(err)), -RY_E_PARAM_MISMATCH);
	assert_string_equal(err, "peer runs lat with 5000 iterations, warm-up 500, we run lat "
				 "with 1000 iterations, warm-up 100");

	bench_params_init(&b);
	b.check_data = true;
	assert_int_equal(bench_params_validate(&b, err, sizeof(err)), 0);
	assert_int_equal(bench_params_compare(&a, &b, err, sizeof(err)), -RY_E_PARAM_MISMATCH);
	assert_non_null(strstr(err, "--check-data"));

	/* Local settings do not matter. */
	bench_params_init(&b);
	b.port = 1;
	b.gid_index = 3;
	b.ib_port = 2;
	assert_int_equal(bench_params_validate(&b, err, sizeof(err)), 0);
	assert_int_equal(bench_params_compare(&a, &b, err, sizeof(err)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_full),     cmocka_unit_test(test_parse_defaults_server),
		cmocka_unit_test(test_parse_errors),   cmocka_unit_test(test_parse_verbs),
		cmocka_unit_test(test_parse_ib_port),  cmocka_unit_test(test_print_tclass),
		cmocka_unit_test(test_wire_roundtrip), cmocka_unit_test(test_compare),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
