/* Unit tests of nodeagent/bench/verbs' pure parts: GID selection on fake GID tables (rxe, mlx5
 * and IB shaped), GID/type parsing, the sysfs GID table reader on a fake sysroot, QP info wire
 * format. No RDMA device needed. */
#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"
#include "nodeagent/bench/verbs.h"

#define LINK_LOCAL "fe80:0000:0000:0000:c8d8:c1ff:fef5:a352"

static struct verbs_gid_entry gid_entry(uint32_t index, const char *gid, enum verbs_gid_type type)
{
	struct verbs_gid_entry e = {.index = index, .type = type};

	assert_int_equal(verbs_gid_parse(gid, e.raw), 0);
	return e;
}

/* ::ffff:a.b.c.d in sysfs form */
static struct verbs_gid_entry gid_v4(uint32_t index, const char *ipv4, enum verbs_gid_type type)
{
	struct verbs_gid_entry e = {.index = index, .type = type};
	struct in_addr a;

	assert_int_equal(inet_pton(AF_INET, ipv4, &a), 1);
	e.raw[10] = 0xff;
	e.raw[11] = 0xff;
	memcpy(e.raw + 12, &a.s_addr, 4);
	return e;
}

static struct in_addr ip(const char *s)
{
	struct in_addr a;

	assert_int_equal(inet_pton(AF_INET, s, &a), 1);
	return a;
}

/* rxe: index 0 link-local, index 1 the IPv4-mapped address; both RoCE v2. */
static void test_select_rxe(void **state)
{
	struct verbs_gid_entry t[] = {
		gid_entry(0, LINK_LOCAL, VERBS_GID_TYPE_ROCE_V2),
		gid_v4(1, "192.168.77.1", VERBS_GID_TYPE_ROCE_V2),
	};
	struct in_addr a = ip("192.168.77.1");
	uint32_t idx = 99;

	assert_int_equal(verbs_gid_select(t, 2, VERBS_LINK_ETHERNET, &a, &idx), 0);
	assert_int_equal(idx, 1);
	idx = 99;
	assert_int_equal(verbs_gid_select(t, 2, VERBS_LINK_ETHERNET, NULL, &idx), 0);
	assert_int_equal(idx, 1);
}

/* mlx5: a RoCE v1 and a v2 entry per address, two addresses; by type and address. */
static void test_select_mlx5_two_addresses(void **state)
{
	struct verbs_gid_entry t[] = {
		gid_entry(0, LINK_LOCAL, VERBS_GID_TYPE_ROCE_V1),
		gid_entry(1, LINK_LOCAL, VERBS_GID_TYPE_ROCE_V2),
		gid_v4(2, "10.0.0.5", VERBS_GID_TYPE_ROCE_V1),
		gid_v4(3, "10.0.0.5", VERBS_GID_TYPE_ROCE_V2),
		gid_v4(4, "10.0.1.5", VERBS_GID_TYPE_ROCE_V1),
		gid_v4(5, "10.0.1.5", VERBS_GID_TYPE_ROCE_V2),
	};
	struct in_addr a = ip("10.0.1.5"), b = ip("10.0.0.5");
	uint32_t idx;

	assert_int_equal(verbs_gid_select(t, RY_ARRAY_SIZE(t), VERBS_LINK_ETHERNET, &a, &idx), 0);
	assert_int_equal(idx, 5);
	assert_int_equal(verbs_gid_select(t, RY_ARRAY_SIZE(t), VERBS_LINK_ETHERNET, &b, &idx), 0);
	assert_int_equal(idx, 3);
	/* Without an address: the lowest-index IPv4-mapped RoCE v2 entry, never link-local. */
	assert_int_equal(verbs_gid_select(t, RY_ARRAY_SIZE(t), VERBS_LINK_ETHERNET, NULL, &idx), 0);
	assert_int_equal(idx, 3);
}

/* -x: an explicit index must be in use and of the port's routable type. */
static void test_gid_usable(void **state)
{
	struct verbs_gid_entry t[] = {
		gid_entry(0, LINK_LOCAL, VERBS_GID_TYPE_ROCE_V1),
		gid_entry(1, LINK_LOCAL, VERBS_GID_TYPE_ROCE_V2),
		gid_v4(2, "10.0.0.5", VERBS_GID_TYPE_ROCE_V1),
		gid_v4(3, "10.0.0.5", VERBS_GID_TYPE_ROCE_V2),
		{.index = 4, .type = VERBS_GID_TYPE_ROCE_V2}, /* all-zero: unused */
		gid_entry(9, LINK_LOCAL, VERBS_GID_TYPE_IB),
	};
	enum verbs_gid_type type = VERBS_GID_TYPE_ROCE_V2;
	size_t n = RY_ARRAY_SIZE(t);

	(void)state;
	assert_int_equal(verbs_gid_usable(t, n, VERBS_LINK_ETHERNET, 3, &type), 0);
	assert_int_equal(verbs_gid_usable(t, n, VERBS_LINK_ETHERNET, 1, NULL), 0);
	assert_int_equal(verbs_gid_usable(t, n, VERBS_LINK_ETHERNET, 2, &type), -EPROTOTYPE);
	assert_int_equal(type, VERBS_GID_TYPE_ROCE_V1);
	assert_int_equal(verbs_gid_usable(t, n, VERBS_LINK_ETHERNET, 4, &type), -RY_E_NOT_FOUND);
	assert_int_equal(verbs_gid_usable(t, n, VERBS_LINK_ETHERNET, 77, &type), -RY_E_NOT_FOUND);
	assert_int_equal(verbs_gid_usable(t, n, VERBS_LINK_IB, 9, &type), 0);
	assert_int_equal(verbs_gid_usable(t, n, VERBS_LINK_IB, 3, &type), -EPROTOTYPE);
	assert_int_equal(type, VERBS_GID_TYPE_ROCE_V2);
	assert_int_equal(verbs_gid_usable(NULL, 1, VERBS_LINK_IB, 0, NULL), -EINVAL);
	assert_int_equal(verbs_gid_usable(t, n, VERBS_LINK_UNKNOWN, 3, NULL), -EINVAL);
	assert_int_equal(verbs_gid_usable(NULL, 0, VERBS_LINK_ETHERNET, 0, NULL), -RY_E_NOT_FOUND);
}

/* The table order does not matter: among equal matches the lowest index wins. */
static void test_select_unordered(void **state)
{
	struct verbs_gid_entry t[] = {
		gid_v4(7, "10.0.0.5", VERBS_GID_TYPE_ROCE_V2),
		gid_v4(6, "10.0.0.9", VERBS_GID_TYPE_ROCE_V2),
		gid_v4(3, "10.0.0.5", VERBS_GID_TYPE_ROCE_V2),
		gid_v4(2, "10.0.0.5", VERBS_GID_TYPE_ROCE_V1),
	};
	struct in_addr a = ip("10.0.0.5");
	uint32_t idx;

	assert_int_equal(verbs_gid_select(t, 4, VERBS_LINK_ETHERNET, &a, &idx), 0);
	assert_int_equal(idx, 3);
}

static void test_select_not_found(void **state)
{
	struct verbs_gid_entry t[] = {
		gid_entry(0, LINK_LOCAL, VERBS_GID_TYPE_ROCE_V2),
		gid_v4(1, "192.168.77.1", VERBS_GID_TYPE_ROCE_V1), /* right address, wrong type */
		gid_v4(2, "192.168.77.2", VERBS_GID_TYPE_ROCE_V2), /* right type, wrong address */
		gid_entry(3, "2001:0db8:0000:0000:0000:0000:0000:0001", VERBS_GID_TYPE_ROCE_V2),
		gid_entry(4, "0000:0000:0000:0000:0000:0000:0000:0000", VERBS_GID_TYPE_ROCE_V2),
	};
	struct in_addr a = ip("192.168.77.1");
	uint32_t idx = 42;

	assert_int_equal(verbs_gid_select(t, 5, VERBS_LINK_ETHERNET, &a, &idx), -RY_E_NOT_FOUND);
	assert_int_equal(idx, 42); /* untouched on failure */
	/* Only IPv6 and link-local RoCE v2 entries left: still nothing for "any IPv4". */
	assert_int_equal(verbs_gid_select(t + 3, 2, VERBS_LINK_ETHERNET, NULL, &idx),
			 -RY_E_NOT_FOUND);
	assert_int_equal(verbs_gid_select(t, 0, VERBS_LINK_ETHERNET, NULL, &idx), -RY_E_NOT_FOUND);
	assert_int_equal(idx, 42);
}

/* InfiniBand: the IB GID (sysfs calls it "IB/RoCE v1"); an address is irrelevant. */
static void test_select_ib(void **state)
{
	struct verbs_gid_entry t[] = {
		gid_entry(0, "0000:0000:0000:0000:0000:0000:0000:0000", VERBS_GID_TYPE_IB),
		gid_entry(1, "fe80:0000:0000:0000:0002:c903:00a0:b1c1", VERBS_GID_TYPE_IB),
		gid_v4(2, "10.0.0.5", VERBS_GID_TYPE_ROCE_V2),
	};
	struct in_addr a = ip("10.0.0.5");
	uint32_t idx;

	assert_int_equal(verbs_gid_select(t, 3, VERBS_LINK_IB, &a, &idx), 0);
	assert_int_equal(idx, 1);
	assert_int_equal(verbs_gid_select(t + 2, 1, VERBS_LINK_IB, NULL, &idx), -RY_E_NOT_FOUND);
}

static void test_select_bad_args(void **state)
{
	struct verbs_gid_entry t[] = {gid_v4(1, "10.0.0.5", VERBS_GID_TYPE_ROCE_V2)};
	uint32_t idx = 7;

	assert_int_equal(verbs_gid_select(NULL, 1, VERBS_LINK_ETHERNET, NULL, &idx), -EINVAL);
	assert_int_equal(verbs_gid_select(t, 1, VERBS_LINK_ETHERNET, NULL, NULL), -EINVAL);
	assert_int_equal(verbs_gid_select(t, 1, VERBS_LINK_UNKNOWN, NULL, &idx), -EINVAL);
	assert_int_equal(idx, 7);
}

static void test_gid_parse_format(void **state)
{
	const char *s = "0000:0000:0000:0000:0000:ffff:c0a8:4d01";
	uint8_t raw[VERBS_GID_LEN], raw2[VERBS_GID_LEN];
	char out[VERBS_GID_STR_LEN];
	struct in_addr a;

	assert_int_equal(verbs_gid_parse(s, raw), 0);
	assert_true(verbs_gid_is_ipv4_mapped(raw, &a));
	assert_int_equal(a.s_addr, ip("192.168.77.1").s_addr);
	verbs_gid_format(raw, out);
	assert_string_equal(out, s);
	assert_int_equal(verbs_gid_parse("FE80:0000:0000:0000:C8D8:C1FF:FEF5:A352", raw2), 0);
	assert_false(verbs_gid_is_ipv4_mapped(raw2, NULL));
	verbs_gid_format(raw2, out);
	assert_string_equal(out, LINK_LOCAL);

	memset(raw2, 0xaa, sizeof(raw2));
	assert_int_equal(verbs_gid_parse("0000:0000:0000:0000:0000:ffff:c0a8:4d0", raw2), -EINVAL);
	assert_int_equal(verbs_gid_parse("0000:0000:0000:0000:0000:ffff:c0a8:4d0g", raw2), -EINVAL);
	assert_int_equal(verbs_gid_parse("0000-0000:0000:0000:0000:ffff:c0a8:4d01", raw2), -EINVAL);
	assert_int_equal(verbs_gid_parse("0000:0000:0000:0000:0000:ffff:c0a8:4d01:", raw2),
			 -EINVAL);
	assert_int_equal(verbs_gid_parse(NULL, raw2), -EINVAL);
	assert_int_equal(raw2[0], 0xaa); /* untouched on failure */
}

static void test_gid_type_parse(void **state)
{
	enum verbs_gid_type t = VERBS_GID_TYPE_ROCE_V1;

	assert_int_equal(verbs_gid_type_parse("RoCE v2", &t), 0);
	assert_int_equal(t, VERBS_GID_TYPE_ROCE_V2);
	assert_int_equal(verbs_gid_type_parse("IB/RoCE v1", &t), 0);
	assert_int_equal(t, VERBS_GID_TYPE_IB);
	assert_int_equal(verbs_gid_type_parse("RoCE v3", &t), -EINVAL);
	assert_int_equal(verbs_gid_type_parse("", &t), -EINVAL);
	assert_int_equal(t, VERBS_GID_TYPE_IB);
}

static void test_mtu_bytes(void **state)
{
	assert_int_equal(verbs_mtu_bytes(1), 256);
	assert_int_equal(verbs_mtu_bytes(3), 1024);
	assert_int_equal(verbs_mtu_bytes(5), 4096);
	assert_int_equal(verbs_mtu_bytes(0), 0);
	assert_int_equal(verbs_mtu_bytes(6), 0);
}

static void test_qp_info_wire(void **state)
{
	struct verbs_qp_info in = {.qpn = 0x123456,
				   .psn = 0xabcdef,
				   .lid = 0x1234,
				   .mtu = 3,
				   .addr = 0x00007f1234567000ull,
				   .rkey = 0xdeadbeef};
	struct verbs_qp_info out;
	uint8_t buf[VERBS_QP_INFO_WIRE];

	assert_int_equal(verbs_gid_parse(LINK_LOCAL, in.gid), 0);
	verbs_qp_info_pack(&in, buf);
	assert_int_equal(verbs_qp_info_unpack(buf, sizeof(buf), &out), 0);
	assert_int_equal(out.qpn, in.qpn);
	assert_int_equal(out.psn, in.psn);
	assert_int_equal(out.lid, in.lid);
	assert_int_equal(out.mtu, in.mtu);
	assert_true(out.addr == in.addr);
	assert_int_equal(out.rkey, in.rkey);
	assert_memory_equal(out.gid, in.gid, VERBS_GID_LEN);

	assert_int_equal(verbs_qp_info_unpack(buf, sizeof(buf) - 1, &out), -RY_E_INVALID);
	buf[0] = 2; /* unknown version */
	assert_int_equal(verbs_qp_info_unpack(buf, sizeof(buf), &out), -RY_E_INVALID);
	in.psn = 0x1000000; /* over 24 bits */
	verbs_qp_info_pack(&in, buf);
	assert_int_equal(verbs_qp_info_unpack(buf, sizeof(buf), &out), -RY_E_INVALID);
	in.psn = 1;
	in.mtu = 9;
	verbs_qp_info_pack(&in, buf);
	assert_int_equal(verbs_qp_info_unpack(buf, sizeof(buf), &out), -RY_E_INVALID);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void put(const char *root, const char *rel, const char *content)
{
	char path[512], dir[512];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	assert_int_equal(fs_mkdir_p(dir, 0755), 0);
	assert_int_equal(fs_write_file_atomic(path, content, strlen(content), 0644), 0);
}

/* sysfs as rxe shows it: 0 link-local, 1 IPv4-mapped, 2.. unused (zero, no type). */
static void test_sysfs_gid_table(void **state)
{
	char root[] = "/tmp/ry-verbs-gid-XXXXXX";
	const char *p = "sys/class/infiniband/rxe0/ports/1";
	char rel[256];
	struct verbs_gid_entry *t = NULL;
	size_t n = 99;
	uint32_t idx;
	struct in_addr a = ip("192.168.77.1");

	assert_non_null(mkdtemp(root));
	snprintf(rel, sizeof(rel), "%s/gids/0", p);
	put(root, rel, LINK_LOCAL "\n");
	snprintf(rel, sizeof(rel), "%s/gid_attrs/types/0", p);
	put(root, rel, "RoCE v2\n");
	snprintf(rel, sizeof(rel), "%s/gids/1", p);
	put(root, rel, "0000:0000:0000:0000:0000:ffff:c0a8:4d01\n");
	snprintf(rel, sizeof(rel), "%s/gid_attrs/types/1", p);
	put(root, rel, "RoCE v2\n");
	snprintf(rel, sizeof(rel), "%s/gids/2", p);
	put(root, rel, "0000:0000:0000:0000:0000:0000:0000:0000\n");
	snprintf(rel, sizeof(rel), "%s/gids/3", p);
	put(root, rel, "0000:0000:0000:0000:0000:ffff:0a00:0005\n"); /* no type file: unused */

	assert_int_equal(verbs_sysfs_gid_table(root, "rxe0", 1, &t, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(verbs_gid_select(t, n, VERBS_LINK_ETHERNET, &a, &idx), 0);
	assert_int_equal(idx, 1);
	free(t);
	t = NULL;

	assert_int_equal(verbs_sysfs_gid_table(root, "mlx5_0", 1, &t, &n), -ENOENT);
	assert_int_equal(verbs_sysfs_gid_table(root, "../x", 1, &t, &n), -EINVAL);
	assert_null(t);
	assert_int_equal(nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_select_rxe),
		cmocka_unit_test(test_select_mlx5_two_addresses),
		cmocka_unit_test(test_select_unordered),
		cmocka_unit_test(test_select_not_found),
		cmocka_unit_test(test_select_ib),
		cmocka_unit_test(test_select_bad_args),
		cmocka_unit_test(test_gid_parse_format),
		cmocka_unit_test(test_gid_type_parse),
		cmocka_unit_test(test_mtu_bytes),
		cmocka_unit_test(test_qp_info_wire),
		cmocka_unit_test(test_sysfs_gid_table),
		cmocka_unit_test(test_gid_usable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
