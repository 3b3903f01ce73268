/* Unit tests of the bench engine's verbs transport that need no RDMA device: the connection
 * data wire format, port rates, the ops table, and the checks that refuse parameters before any
 * device is touched (or, on a host without RDMA, the "no device" answer). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/util/error.h"
#include "nodeagent/bench/bench.h"
#include "nodeagent/bench/verbs.h"

static struct verbs_conn sample_conn(void)
{
	struct verbs_conn c = {
		.qp = {.qpn = 0x123456,
		       .psn = 0xabcdef,
		       .lid = 7,
		       .mtu = 3,
		       .addr = 0x7f0011223344ull,
		       .rkey = 0xdeadbeef},
		.read_addr = 0x7f00aabbccddull,
		.read_rkey = 0x01020304,
		.rd_atomic = 128,
	};

	c.qp.gid[10] = 0xff;
	c.qp.gid[11] = 0xff;
	c.qp.gid[12] = 192;
	c.qp.gid[13] = 168;
	c.qp.gid[14] = 77;
	c.qp.gid[15] = 1;
	return c;
}

static void test_conn_roundtrip(void **state)
{
	struct verbs_conn c = sample_conn(), d;
	uint8_t wire[VERBS_CONN_WIRE];

	(void)state;
	verbs_conn_pack(&c, wire);
	memset(&d, 0xa5, sizeof(d));
	assert_int_equal(verbs_conn_unpack(wire, sizeof(wire), &d), 0);
	assert_int_equal(d.qp.qpn, c.qp.qpn);
	assert_int_equal(d.qp.psn, c.qp.psn);
	assert_int_equal(d.qp.lid, c.qp.lid);
	assert_int_equal(d.qp.mtu, c.qp.mtu);
	assert_memory_equal(d.qp.gid, c.qp.gid, VERBS_GID_LEN);
	assert_true(d.qp.addr == c.qp.addr);
	assert_int_equal(d.qp.rkey, c.qp.rkey);
	assert_true(d.read_addr == c.read_addr);
	assert_int_equal(d.read_rkey, c.read_rkey);
	assert_int_equal(d.rd_atomic, 128);
	/* network byte order: the read address's top byte comes first after the QP info */
	assert_int_equal(wire[VERBS_QP_INFO_WIRE], 0x00);
	assert_int_equal(wire[VERBS_QP_INFO_WIRE + 2], 0x7f);
	assert_int_equal(wire[VERBS_QP_INFO_WIRE + 8], 0x01);
}

static void test_conn_rejects(void **state)
{
	struct verbs_conn c = sample_conn(), d = {0};
	uint8_t wire[VERBS_CONN_WIRE];

	(void)state;
	verbs_conn_pack(&c, wire);
	assert_int_equal(verbs_conn_unpack(wire, sizeof(wire) - 1, &d), -RY_E_INVALID);
	assert_int_equal(verbs_conn_unpack(NULL, sizeof(wire), &d), -RY_E_INVALID);
	wire[VERBS_QP_INFO_WIRE + 12] = 0; /* no responder resources */
	assert_int_equal(verbs_conn_unpack(wire, sizeof(wire), &d), -RY_E_INVALID);
	c.qp.mtu = 9; /* not an enum ibv_mtu */
	verbs_conn_pack(&c, wire);
	assert_int_equal(verbs_conn_unpack(wire, sizeof(wire), &d), -RY_E_INVALID);
	c = sample_conn();
	c.qp.psn = 0x1000000; /* over 24 bits */
	verbs_conn_pack(&c, wire);
	assert_int_equal(verbs_conn_unpack(wire, sizeof(wire), &d), -RY_E_INVALID);
	assert_int_equal(d.qp.qpn, 0); /* untouched on failure */
}

static void test_port_gbps(void **state)
{
	(void)state;
	assert_true(verbs_port_gbps(1, 0, 1) == 2.5);	  /* SDR 1x */
	assert_true(verbs_port_gbps(32, 0, 2) == 100.0);  /* EDR 4x */
	assert_true(verbs_port_gbps(64, 0, 2) == 200.0);  /* HDR 4x */
	assert_true(verbs_port_gbps(128, 0, 2) == 400.0); /* NDR 4x */
	assert_true(verbs_port_gbps(64, 0, 16) == 100.0); /* HDR 2x */
	assert_true(verbs_port_gbps(1, 128, 1) == 100.0); /* active_speed_ex wins */
	assert_true(verbs_port_gbps(3, 0, 2) == 0.0);	  /* unknown speed */
	assert_true(verbs_port_gbps(32, 0, 3) == 0.0);	  /* unknown width */
}

static void test_ops_table(void **state)
{
	const struct bench_transport_ops *t = bench_transport_find("verbs");

	(void)state;
	assert_non_null(t);
	assert_ptr_equal(t, &bench_transport_verbs);
	assert_string_equal(t->name, "verbs");
	assert_int_equal(t->default_op, BENCH_OP_WRITE);
	assert_true(t->op_mask & (1u << BENCH_OP_SEND));
	assert_true(t->op_mask & (1u << BENCH_OP_WRITE));
	assert_true(t->op_mask & (1u << BENCH_OP_READ));
	assert_non_null(t->validate);
	assert_non_null(t->open);
	assert_non_null(t->prepare);
	assert_non_null(t->lat_iter);
	assert_non_null(t->bw_post_send);
	assert_non_null(t->bw_post_recv);
	assert_non_null(t->bw_poll);
	assert_non_null(t->close);
	t->close(NULL); /* NULL is fine */
}

static void verbs_params(struct bench_params *p)
{
	bench_params_init(p);
	snprintf(p->transport, sizeof(p->transport), "verbs");
}

/* Refused before any device is opened, so the same on every host. */
static void test_validate_before_device(void **state)
{
	struct bench_params p;
	char err[BENCH_ERR_LEN] = "";

	(void)state;
	verbs_params(&p);
	p.rdma_cm = true;
	p.gid_index = 1;
	assert_int_equal(bench_params_validate(&p, err, sizeof(err)), -RY_E_INVALID);
	assert_non_null(strstr(err, "-x does not apply with --rdma-cm"));

	/* -i likewise: rdma_cm takes the port of the address. */
	verbs_params(&p);
	p.rdma_cm = true;
	p.ib_port = 1;
	err[0] = '\0';
	assert_int_equal(bench_params_validate(&p, err, sizeof(err)), -RY_E_INVALID);
	assert_string_equal(err, "-i does not apply with --rdma-cm (rdma_cm takes the port of the "
				 "address)");
}

/* Without RDMA devices (the build host) the transport says so; with some, a made-up name is
 * refused with the list of those that exist. */
static void test_validate_devices(void **state)
{
	struct bench_params p;
	char names[256], err[BENCH_ERR_LEN] = "";
	int n;

	(void)state;
	n = verbs_dev_names(names, sizeof(names));
	assert_true(n >= 0);
	verbs_params(&p);
	if (n == 0) {
		assert_string_equal(names, "");
		assert_int_equal(bench_params_validate(&p, err, sizeof(err)), -ENODEV);
		assert_string_equal(err, "no RDMA device found");
		return;
	}
	snprintf(p.device, sizeof(p.device), "no-such-device-0");
	assert_int_equal(bench_params_validate(&p, err, sizeof(err)), -ENODEV);
	assert_non_null(strstr(err, "RDMA device 'no-such-device-0' not found (devices: "));
	assert_non_null(strstr(err, names));
}

static void test_dev_names_bounds(void **state)
{
	char tiny[1] = {'x'};

	(void)state;
	assert_int_equal(verbs_dev_names(NULL, 10), -EINVAL);
	assert_true(verbs_dev_names(tiny, sizeof(tiny)) >= 0);
	assert_int_equal(tiny[0], '\0');
}

/* Port count of a device: arguments checked; no device: an error; else at least port 1. */
static void test_dev_port_count(void **state)
{
	char names[256], name[64] = "";
	unsigned int n = 0;
	struct verbs_dev *dev = NULL;
	int devs, r;

	(void)state;
	assert_int_equal(verbs_dev_port_count(NULL, name, sizeof(name), NULL), -EINVAL);
	assert_int_equal(verbs_dev_port_count(NULL, NULL, 8, &n), -EINVAL);
	assert_int_equal(verbs_dev_open(NULL, 0, &dev), -EINVAL);
	assert_int_equal(verbs_dev_open(NULL, 256, &dev), -EINVAL);
	assert_null(dev);
	devs = verbs_dev_names(names, sizeof(names));
	assert_true(devs >= 0);
	if (devs == 0) {
		/* libibverbs says ENOSYS when the kernel has no RDMA subsystem at all. */
		r = verbs_dev_port_count(NULL, name, sizeof(name), &n);
		assert_true(r == -ENODEV || r == -ENOSYS);
		assert_int_equal(n, 0); /* untouched */
		return;
	}
	assert_int_equal(verbs_dev_port_count(NULL, name, sizeof(name), &n), 0);
	assert_true(n >= 1 && n <= 255);
	assert_non_null(strstr(names, name));
	if (n < 255) {
		assert_int_equal(verbs_dev_open(name, n + 1, &dev), -ERANGE);
		assert_null(dev);
	}
}

static void test_qp_connect_args(void **state)
{
	struct verbs_qp_info peer = {.qpn = 1, .psn = 1, .mtu = 3};
	struct verbs_path path = {.port = 1, .mtu = 3, .rd_atomic = 1, .dest_rd_atomic = 1};

	(void)state;
	assert_int_equal(verbs_qp_connect(NULL, &path, &peer), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conn_roundtrip),
		cmocka_unit_test(test_conn_rejects),
		cmocka_unit_test(test_port_gbps),
		cmocka_unit_test(test_dev_port_count),
		cmocka_unit_test(test_ops_table),
		cmocka_unit_test(test_validate_before_device),
		cmocka_unit_test(test_validate_devices),
		cmocka_unit_test(test_dev_names_bounds),
		cmocka_unit_test(test_qp_connect_args),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
