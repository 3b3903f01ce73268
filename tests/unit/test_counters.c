/* Unit tests of the fabric port counters (nodeagent/counters): snapshots of a sysroot built in a
 * temporary directory (an mlx5-like device with counters/ and hw_counters/, an rxe-like one with
 * hw_counters/ only), deltas after counters moved, went down, turned to garbage, appeared and
 * vanished, the device and port filters, the empty sysroot, and the bounds. */
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

#include "common/util/fs.h"
#include "nodeagent/counters.h"

struct fx {
	char root[256];
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	if (!f)
		return -1;
	snprintf(f->root, sizeof(f->root), "%s/ry-counters-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(f->root)) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

/* root/rel, formatted. */
static void pathf(const struct fx *f, char *buf, size_t len, const char *fmt, va_list ap)
{
	int n = snprintf(buf, len, "%s/", f->root);

	assert_true(n > 0 && (size_t)n < len);
	assert_true((size_t)vsnprintf(buf + n, len - (size_t)n, fmt, ap) < len - (size_t)n);
}

/* Write content to root/rel (parents created). */
static void put(const struct fx *f, const char *content, const char *fmt, ...)
{
	char path[1024], *slash;
	va_list ap;
	FILE *fp;

	va_start(ap, fmt);
	pathf(f, path, sizeof(path), fmt, ap);
	va_end(ap);
	slash = strrchr(path, '/');
	*slash = '\0';
	assert_int_equal(fs_mkdir_p(path, 0755), 0);
	*slash = '/';
	fp = fopen(path, "w");
	assert_non_null(fp);
	assert_int_equal(fputs(content, fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
}

static void mkdirs(const struct fx *f, const char *fmt, ...)
{
	char path[1024];
	va_list ap;

	va_start(ap, fmt);
	pathf(f, path, sizeof(path), fmt, ap);
	va_end(ap);
	assert_int_equal(fs_mkdir_p(path, 0755), 0);
}

static void rm_rf(const struct fx *f, const char *rel)
{
	char cmd[1200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s/%s'", f->root, rel);
	assert_int_equal(system(cmd), 0);
}

/* The delta as compact JSON (order included: the array and each object's keys). */
static char *delta_text(const struct counters_snap *a, const struct counters_snap *b,
			const char *device, uint32_t port)
{
	json_t *j = counters_delta_json(a, b, device, port);
	char *text;

	assert_non_null(j);
	text = json_dumps(j, JSON_COMPACT);
	assert_non_null(text);
	json_decref(j);
	return text;
}

static void assert_delta(const struct counters_snap *a, const struct counters_snap *b,
			 const char *device, uint32_t port, const char *want)
{
	char *text = delta_text(a, b, device, port);

	if (strcmp(text, want) != 0)
		print_error("got  %s\nwant %s\n", text, want);
	assert_string_equal(text, want);
	free(text);
}

#define MLX  "sys/devices/pci0000:00/0000:00:02.0/infiniband/mlx5_0/ports"
#define RXE  "sys/class/infiniband/rxe0/ports"
#define U64M "18446744073709551615"

/* The tree before the run. mlx5_0 is a relative link into sys/devices, as the kernel lays it
 * out; next to real counters lie files that are not counters. */
static void build_tree(const struct fx *f)
{
	char link[1024];

	put(f, "0\n", MLX "/1/counters/symbol_error");
	put(f, "0\n", MLX "/1/counters/link_downed");
	put(f, "5\n", MLX "/1/counters/port_rcv_errors");
	put(f, "1000\n", MLX "/1/counters/port_xmit_data");
	put(f, "7\n", MLX "/1/counters/both");		     /* counters/'s wins... */
	put(f, "99\n", MLX "/1/hw_counters/both");	     /* ...over this one */
	put(f, "3\n", MLX "/1/hw_counters/out_of_sequence"); /* turns to garbage */
	put(f, "10\n", MLX "/1/hw_counters/np_cnp_sent");
	put(f, "1000\n", MLX "/1/hw_counters/lifespan"); /* a setting, not a counter */
	put(f, "abc\n", MLX "/1/hw_counters/garbage");
	put(f, "-1\n", MLX "/1/hw_counters/negative");
	put(f, " 5\n", MLX "/1/hw_counters/leading_space");
	put(f, "5\n\n", MLX "/1/hw_counters/two_newlines");
	put(f, "", MLX "/1/hw_counters/empty");
	put(f, "18446744073709551616\n", MLX "/1/hw_counters/overflow");
	put(f, "5\n", MLX "/1/hw_counters/bad-name");
	/* 64 bytes is still a counter, 65 is not. */
	put(f, "0000000000000000000000000000000000000000000000000000000000000001",
	    MLX "/1/hw_counters/wide64");
	put(f, "00000000000000000000000000000000000000000000000000000000000000001",
	    MLX "/1/hw_counters/wide65");
	mkdirs(f, MLX "/1/hw_counters/a_directory");
	snprintf(link, sizeof(link), "%s/" MLX "/1/hw_counters/a_fifo", f->root);
	assert_int_equal(mkfifo(link, 0644), 0);
	snprintf(link, sizeof(link), "%s/" MLX "/1/hw_counters/a_link", f->root);
	assert_int_equal(symlink("np_cnp_sent", link), 0);
	put(f, "4\n", MLX "/2/counters/symbol_error"); /* the port vanishes */
	put(f, "1\n", MLX "/not_a_port/counters/symbol_error");
	mkdirs(f, "sys/class/infiniband");
	snprintf(link, sizeof(link), "%s/sys/class/infiniband/mlx5_0", f->root);
	assert_int_equal(symlink("../../devices/pci0000:00/0000:00:02.0/infiniband/mlx5_0", link),
			 0);

	put(f, "100\n", RXE "/1/hw_counters/sent_pkts");
	put(f, "200\n", RXE "/1/hw_counters/rcvd_pkts");
	put(f, "0\n", RXE "/1/hw_counters/retry_exceeded_err");
	put(f, "1\n", RXE "/1/hw_counters/send_err");
	put(f, "0\n", RXE "/1/hw_counters/rdma_sends");
	put(f, "9\n", RXE "/1/hw_counters/link_downed");
}

/* What the run did to it. */
static void change_tree(const struct fx *f)
{
	put(f, "8\n", MLX "/1/counters/port_rcv_errors");     /* +3 */
	put(f, "10\n", MLX "/1/counters/port_xmit_data");     /* down: reset or wrap */
	put(f, "9\n", MLX "/1/counters/both");		      /* +2 */
	put(f, "1\n", MLX "/1/hw_counters/both");	      /* ignored */
	put(f, "3x\n", MLX "/1/hw_counters/out_of_sequence"); /* garbage now */
	put(f, "5000\n", MLX "/1/hw_counters/lifespan");
	rm_rf(f, MLX "/2");
	put(f, "150\n", RXE "/1/hw_counters/sent_pkts");    /* +50 */
	put(f, U64M "\n", RXE "/1/hw_counters/rdma_sends"); /* beyond 2^63 - 1 */
	put(f, "1\n", RXE "/1/hw_counters/rdma_recvs");	    /* new: only after */
	put(f, "1\n", RXE "/2/hw_counters/sent_pkts");	    /* new port: only after */
	rm_rf(f, RXE "/1/hw_counters/link_downed");	    /* gone: only before */
}

#define MLX_1_BEFORE                                                                               \
	"{\"device\":\"mlx5_0\",\"port\":1,\"delta\":{\"both\":0,\"link_downed\":0,"               \
	"\"np_cnp_sent\":0,\"out_of_sequence\":0,\"port_rcv_errors\":0,\"port_xmit_data\":0,"      \
	"\"symbol_error\":0,\"wide64\":0}}"

static void test_delta(void **state)
{
	struct fx *f = *state;
	struct counters_snap *a = NULL, *b = NULL, *only = NULL;
	size_t ports = 0, n = 0;

	build_tree(f);
	assert_int_equal(counters_snapshot(f->root, NULL, &a), 0);
	counters_snap_size(a, &ports, &n);
	assert_int_equal(ports, 3); /* mlx5_0/1, mlx5_0/2, rxe0/1 */
	assert_int_equal(n, 8 + 1 + 6);

	/* Nothing moved: every counter is there, at 0. */
	assert_delta(a, a, "mlx5_0", 1, "{\"ports\":[" MLX_1_BEFORE "],\"sampled\":true}");

	change_tree(f);
	assert_int_equal(counters_snapshot(f->root, NULL, &b), 0);
	assert_delta(
		a, b, NULL, 0,
		"{\"ports\":["
		"{\"device\":\"mlx5_0\",\"port\":1,\"delta\":{\"both\":2,\"link_downed\":0,"
		"\"np_cnp_sent\":0,\"port_rcv_errors\":3,\"port_xmit_data\":null,"
		"\"symbol_error\":0,\"wide64\":0}},"
		"{\"device\":\"rxe0\",\"port\":1,\"delta\":{\"rcvd_pkts\":0,\"rdma_sends\":null,"
		"\"retry_exceeded_err\":0,\"send_err\":0,\"sent_pkts\":50}}"
		"],\"sampled\":true}");

	/* The filters. */
	assert_delta(a, b, "rxe0", 0,
		     "{\"ports\":[{\"device\":\"rxe0\",\"port\":1,\"delta\":{\"rcvd_pkts\":0,"
		     "\"rdma_sends\":null,\"retry_exceeded_err\":0,\"send_err\":0,"
		     "\"sent_pkts\":50}}],\"sampled\":true}");
	assert_delta(a, b, "rxe0", 2, "{\"ports\":[],\"sampled\":true}");
	assert_delta(a, b, "mlx5_0", 2, "{\"ports\":[],\"sampled\":true}");
	assert_delta(a, b, "mlx5_1", 0, "{\"ports\":[],\"sampled\":true}");
	{
		char *text = delta_text(a, b, "mlx5_0", 1);

		assert_non_null(strstr(text, "\"port_rcv_errors\":3"));
		assert_null(strstr(text, "rxe0"));
		free(text);
	}

	/* A snapshot of one device reads only that device. */
	assert_int_equal(counters_snapshot(f->root, "rxe0", &only), 0);
	counters_snap_size(only, &ports, &n);
	assert_int_equal(ports, 2);
	assert_int_equal(n, 6 + 1);
	assert_delta(a, only, NULL, 0,
		     "{\"ports\":[{\"device\":\"rxe0\",\"port\":1,\"delta\":{\"rcvd_pkts\":0,"
		     "\"rdma_sends\":null,\"retry_exceeded_err\":0,\"send_err\":0,"
		     "\"sent_pkts\":50}}],\"sampled\":true}");
	counters_snap_free(only);
	only = NULL;
	assert_int_equal(counters_snapshot(f->root, "../rxe0", &only), 0);
	counters_snap_size(only, &ports, NULL);
	assert_int_equal(ports, 0);

	counters_snap_free(only);
	counters_snap_free(a);
	counters_snap_free(b);
	counters_snap_free(NULL);
}

/* No RDMA stack: nothing sampled, and that is a sample. */
static void test_empty(void **state)
{
	struct fx *f = *state;
	struct counters_snap *a = NULL;
	char missing[300];

	assert_int_equal(counters_snapshot(f->root, NULL, &a), 0);
	assert_delta(a, a, NULL, 0, "{\"ports\":[],\"sampled\":true}");
	counters_snap_free(a);

	snprintf(missing, sizeof(missing), "%s/no-such-dir", f->root);
	a = NULL;
	assert_int_equal(counters_snapshot(missing, NULL, &a), 0);
	assert_delta(a, a, NULL, 0, "{\"ports\":[],\"sampled\":true}");
	counters_snap_free(a);

	/* A device without ports/, a port without counter directories. */
	mkdirs(f, "sys/class/infiniband/bnxt_re0");
	mkdirs(f, "sys/class/infiniband/irdma0/ports/1");
	a = NULL;
	assert_int_equal(counters_snapshot(f->root, NULL, &a), 0);
	assert_delta(a, a, NULL, 0,
		     "{\"ports\":[{\"device\":\"irdma0\",\"port\":1,\"delta\":{}}],"
		     "\"sampled\":true}");
	counters_snap_free(a);
}

/* Devices in version order, ports numerically; beyond the bounds the rest is left out, the
 * same rest every time. */
static void test_order_and_bounds(void **state)
{
	struct fx *f = *state;
	struct counters_snap *a = NULL;
	size_t ports = 0, n = 0;
	char *text;
	json_t *j;

	for (int d = 0; d < COUNTERS_MAX_DEVICES + 20; d++)
		put(f, "1\n", "sys/class/infiniband/dev%d/ports/1/counters/c", d);
	for (int p = 2; p <= COUNTERS_MAX_PORTS + 8; p++)
		put(f, "1\n", "sys/class/infiniband/dev0/ports/%d/counters/c", p);
	for (int c = 0; c < COUNTERS_MAX_PER_PORT + 44; c++)
		put(f, "1\n", "sys/class/infiniband/dev1/ports/1/%s/a%03d",
		    c % 2 ? "counters" : "hw_counters", c);

	assert_int_equal(counters_snapshot(f->root, NULL, &a), 0);
	counters_snap_size(a, &ports, &n);
	assert_int_equal(ports, COUNTERS_MAX_DEVICES - 1 + COUNTERS_MAX_PORTS);
	assert_int_equal(n, ports - 1 + COUNTERS_MAX_PER_PORT);

	j = counters_delta_json(a, a, NULL, 0);
	assert_non_null(j);
	{
		json_t *pa = json_object_get(j, "ports");
		json_t *first = json_array_get(pa, 0), *last;

		assert_string_equal(json_string_value(json_object_get(first, "device")), "dev0");
		/* dev0's ports 1..32, then dev1 .. dev255 (dev2 after dev1, dev10 after dev9). */
		for (int p = 0; p < COUNTERS_MAX_PORTS; p++)
			assert_int_equal(json_integer_value(json_object_get(
						 json_array_get(pa, (size_t)p), "port")),
					 p + 1);
		assert_string_equal(json_string_value(json_object_get(
					    json_array_get(pa, COUNTERS_MAX_PORTS), "device")),
				    "dev1");
		assert_string_equal(json_string_value(json_object_get(
					    json_array_get(pa, COUNTERS_MAX_PORTS + 1), "device")),
				    "dev2");
		assert_string_equal(json_string_value(json_object_get(
					    json_array_get(pa, COUNTERS_MAX_PORTS + 8), "device")),
				    "dev9");
		assert_string_equal(json_string_value(json_object_get(
					    json_array_get(pa, COUNTERS_MAX_PORTS + 9), "device")),
				    "dev10");
		last = json_array_get(pa, json_array_size(pa) - 1);
		assert_string_equal(json_string_value(json_object_get(last, "device")), "dev255");
		/* dev1 keeps the first 256 names (a000..a255 of its 301), from both
		 * directories. */
		assert_int_equal(json_object_size(json_object_get(
					 json_array_get(pa, COUNTERS_MAX_PORTS), "delta")),
				 COUNTERS_MAX_PER_PORT);
	}
	json_decref(j);
	text = delta_text(a, a, "dev1", 1);
	assert_non_null(strstr(text, "\"a000\":0"));
	assert_non_null(strstr(text, "\"a255\":0"));
	assert_null(strstr(text, "\"a256\""));
	assert_null(strstr(text, "\"c\""));
	free(text);
	counters_snap_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_delta, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_empty, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_order_and_bounds, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
