/* Unit tests for nodeagent/facts: exact values from the H200 fixture sysroots, the degraded
 * node's faults, broken and empty sysroots built at test time, the summary line, concurrency. */
#include "nodeagent/facts/facts.h"
#include "nodeagent/facts/facts_int.h"

#include "common/util/fs.h"

#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_json.h"

static char *fixture(const char *name)
{
	const char *src = getenv("RAILYARD_SOURCE_DIR");
	char *p;

	assert_non_null(src);
	assert_true(asprintf(&p, "%s/tests/fixtures/sysroots/%s", src, name) > 0);
	return p;
}

static json_t *collect(const char *sysroot)
{
	json_t *f = NULL;

	assert_int_equal(facts_collect(sysroot, &f), 0);
	assert_non_null(f);
	assert_true(json_is_object(f));
	return f;
}

static json_t *collect_fixture(const char *name)
{
	char *p = fixture(name);
	json_t *f = collect(p);

	free(p);
	return f;
}

/* Value at a dotted path; numeric segments index arrays ("rdma.devices.3.name"). */
/* Whether some warning contains needle. */
static bool has_warning(json_t *facts, const char *needle)
{
	json_t *w;
	size_t i;

	json_array_foreach(json_object_get(facts, "warnings"), i,
			   w) if (strstr(json_string_value(w), needle)) return true;
	return false;
}

static void dump_warnings(json_t *facts)
{
	json_t *w;
	size_t i;

	json_array_foreach(json_object_get(facts, "warnings"), i, w)
		print_message("warning: %s\n", json_string_value(w));
}

static bool has_string(json_t *arr, const char *s)
{
	json_t *v;
	size_t i;

	json_array_foreach(arr, i, v) if (json_is_string(v) &&
					  strcmp(json_string_value(v), s) == 0) return true;
	return false;
}

/* PCI bus numbers of the fixtures: NIC i on bus nic_bus[i], GPU i on nic_bus[i] + 1. */
static const unsigned nic_bus[8] = {0x16, 0x27, 0x38, 0x49, 0x98, 0xa9, 0xba, 0xcb};

static json_t *pci_dev(json_t *facts, const char *addr)
{
	json_t *d;
	size_t i;

	json_array_foreach(jget(facts, "pci.devices"), i,
			   d) if (strcmp(json_string_value(json_object_get(d, "address")), addr) ==
				  0) return d;
	return NULL;
}

static void check_system(json_t *f, const char *hostname)
{
	assert_jint(f, 1, "schema");
	assert_jstr(f, hostname, "hostname");
	assert_jstr(f, "debian", "os.id");
	assert_jstr(f, "12", "os.version_id");
	assert_jstr(f, "Debian GNU/Linux 12 (bookworm)", "os.pretty_name");
	assert_jstr(f, "6.1.0-28-amd64", "kernel.release");
	assert_jstr(f, "#1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 (2024-11-22)", "kernel.version");
	assert_jint(f, 8, "cpu.count");
	assert_jstr(f, "Intel(R) Xeon(R) Platinum 8480+", "cpu.model");
	assert_jint(f, 2, "cpu.numa_nodes");
	assert_jint(f, 2113270416, "memory.total_kib");
}

static void check_gpus(json_t *f, unsigned node)
{
	char bus[16], uuid[64];

	assert_int_equal(json_array_size(jget(f, "gpus")), 8);
	for (unsigned i = 0; i < 8; i++) {
		snprintf(bus, sizeof(bus), "0000:%02x:00.0", nic_bus[i] + 1);
		snprintf(uuid, sizeof(uuid), "GPU-5b7c%02x%02x-9e1f-4c8a-b3d2-7a61e0f4%02x%02x",
			 node, i, node, i);
		assert_jstr(f, "NVIDIA H200", "gpus.%u.model", i);
		assert_jstr(f, bus, "gpus.%u.bus", i);
		assert_jstr(f, uuid, "gpus.%u.uuid", i);
		assert_jint(f, 500 + i * 17, "gpus.%u.irq", i);
		assert_jint(f, i, "gpus.%u.minor", i);
		assert_jint(f, i < 4 ? 0 : 1, "gpus.%u.numa_node", i);
		assert_true(json_is_false(jget(f, "gpus.%u.excluded", i)));
		/* fixture trees are not this machine: NVML is not asked */
		assert_jstr(f, "proc", "gpus.%u.source", i);
		assert_jabsent(f, "gpus.%u.serial", i);
	}
	assert_jstr(f, "550.127.05", "nvidia_driver.version");
	assert_true(json_is_true(jget(f, "nvidia_driver.open_kernel_module")));
}

static void check_modules(json_t *f, bool ipoib)
{
	static const char *const want[] = {"mlx5_core", "mlx5_ib",	  "ib_uverbs", "ib_core",
					   "nvidia",	"nvidia_peermem", "nvidia_uvm"};
	json_t *loaded = jget(f, "modules.loaded");

	assert_int_equal(json_array_size(loaded), ipoib ? 20 : 19);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_true(has_string(loaded, want[i]));
	assert_true(has_string(loaded, "ib_ipoib") == ipoib);
	/* proc/modules order is kept */
	assert_jstr(f, "nvidia_peermem", "modules.loaded.0");
	assert_jstr(f, "24.10-1.1.4", "modules.versions.mlx5_core");
	assert_jstr(f, "550.127.05", "modules.versions.nvidia");
	assert_jabsent(f, "modules.versions.ib_core");
}

/* PCI: 8 NICs + 8 GPUs (the Intel host bridge is filtered out), Gen5 x16 unless listed. */
static void check_pci(json_t *f, const char *nic_class, int slow_nic)
{
	char addr[16];

	assert_int_equal(json_array_size(jget(f, "pci.devices")), 16);
	assert_null(pci_dev(f, "0000:00:00.0"));
	for (int i = 0; i < 8; i++) {
		for (int gpu = 0; gpu < 2; gpu++) {
			json_t *d;

			snprintf(addr, sizeof(addr), "0000:%02x:00.0", nic_bus[i] + gpu);
			d = pci_dev(f, addr);
			assert_non_null(d);
			assert_jstr(d, gpu ? "0x10de" : "0x15b3", "vendor");
			assert_jstr(d, gpu ? "0x2335" : "0x1021", "device");
			assert_jstr(d, gpu ? "0x030200" : nic_class, "class");
			assert_jstr(d, "32.0 GT/s PCIe", "max_link_speed");
			assert_jint(d, 16, "max_link_width");
			assert_jint(d, 5, "max_gen");
			assert_jint(d, i < 4 ? 0 : 1, "numa_node");
			if (!gpu && i == slow_nic) {
				assert_jstr(d, "16.0 GT/s PCIe", "current_link_speed");
				assert_jint(d, 8, "current_link_width");
				assert_jint(d, 4, "gen");
			} else {
				assert_jstr(d, "32.0 GT/s PCIe", "current_link_speed");
				assert_jint(d, 16, "current_link_width");
				assert_jint(d, 5, "gen");
			}
		}
	}
}

/* IB fixture ports; down_port/hdr_port are device indexes with faults, -1 for none. */
static void check_ib_rdma(json_t *f, unsigned node, int down_port, int hdr_port)
{
	char name[16], guid[32], gid[64], netdev[16], addr[16];

	assert_int_equal(json_array_size(jget(f, "rdma.devices")), 8);
	for (int i = 0; i < 8; i++) {
		json_t *d = jget(f, "rdma.devices.%d", i);

		snprintf(name, sizeof(name), "mlx5_%d", i);
		snprintf(guid, sizeof(guid), "a088:c203:00%02x:%02x%02x", node, 0x10 + i, node);
		snprintf(gid, sizeof(gid), "fe80:0000:0000:0000:%s", guid);
		snprintf(netdev, sizeof(netdev), "ibp%us0", nic_bus[i]);
		snprintf(addr, sizeof(addr), "0000:%02x:00.0", nic_bus[i]);
		assert_jstr(d, name, "name");
		assert_jstr(d, "28.42.1000", "fw_ver");
		assert_jstr(d, guid, "node_guid");
		assert_jstr(d, guid, "sys_image_guid");
		assert_jstr(d, "MT_0000000838", "board_id");
		assert_jstr(d, "MT4129", "hca_type");
		assert_jstr(d, "CA", "node_type");
		assert_jstr(d, addr, "pci_address");
		assert_jint(d, i < 4 ? 0 : 1, "numa_node");
		assert_int_equal(json_array_size(jget(d, "netdevs")), 1);
		assert_jstr(d, netdev, "netdevs.0");
		assert_int_equal(json_array_size(jget(d, "ports")), 1);
		assert_jint(d, 1, "ports.0.port");
		assert_jstr(d, "InfiniBand", "ports.0.link_layer");
		assert_jstr(d, netdev, "ports.0.netdev");
		assert_jabsent(d, "ports.0.active_mtu");
		if (i == down_port) {
			assert_jstr(d, "DOWN", "ports.0.state");
			assert_jint(d, 1, "ports.0.state_num");
			assert_jstr(d, "Polling", "ports.0.phys_state");
			assert_jint(d, 2, "ports.0.phys_state_num");
			assert_jint(d, 0xffff, "ports.0.lid");
			assert_jint(d, 0, "ports.0.sm_lid");
		} else {
			assert_jstr(d, "ACTIVE", "ports.0.state");
			assert_jint(d, 4, "ports.0.state_num");
			assert_jstr(d, "LinkUp", "ports.0.phys_state");
			assert_jint(d, 5, "ports.0.phys_state_num");
			assert_jint(d, node * 16 + i + 1, "ports.0.lid");
			assert_jint(d, 1, "ports.0.sm_lid");
		}
		if (i == hdr_port) {
			assert_jstr(d, "200 Gb/sec (4X HDR)", "ports.0.rate");
			assert_jint(d, 200, "ports.0.rate_gbps");
		} else if (i == down_port) {
			assert_jint(d, 10, "ports.0.rate_gbps");
		} else {
			assert_jstr(d, "400 Gb/sec (4X NDR)", "ports.0.rate");
			assert_jint(d, 400, "ports.0.rate_gbps");
		}
		/* gids 1..3 are all-zero and skipped */
		assert_int_equal(json_array_size(jget(d, "ports.0.gids")), 1);
		assert_jint(d, 0, "ports.0.gids.0.index");
		assert_jstr(d, gid, "ports.0.gids.0.gid");
		assert_jstr(d, "IB/RoCE v1", "ports.0.gids.0.type");
		assert_jabsent(d, "ports.0.gids.0.netdev");
	}
}

/* The HGX layout of the fixtures: switch s (0, 1 on NUMA node 0; 2, 3 on node 1) holds NICs 2s,
 * 2s+1 and GPUs 2s, 2s+1. GPU i's rail is mlx5_i on its switch (PIX); the other HCA of its
 * switch is PIX too, those of the other switch of its socket NODE, the rest SYS. */
static void check_hgx_topology(json_t *f)
{
	char bus[16], name[16];

	assert_jstr(f, "sysfs", "topology.source");
	assert_int_equal(json_array_size(jget(f, "topology.pairs")), 64);
	for (unsigned g = 0; g < 8; g++) {
		snprintf(bus, sizeof(bus), "0000:%02x:00.0", nic_bus[g] + 1);
		snprintf(name, sizeof(name), "mlx5_%u", g);
		assert_jstr(f, name, "gpus.%u.nearest_hca.device", g);
		assert_jint(f, 1, "gpus.%u.nearest_hca.port", g);
		assert_jstr(f, "PIX", "gpus.%u.nearest_hca.relation", g);
		for (unsigned h = 0; h < 8; h++) {
			json_t *p = jget(f, "topology.pairs.%u", g * 8 + h);
			const char *want = g / 2 == h / 2 ? "PIX" : g / 4 == h / 4 ? "NODE" : "SYS";

			snprintf(name, sizeof(name), "mlx5_%u", h);
			assert_jstr(p, bus, "gpu");
			assert_jstr(p, name, "hca");
			assert_jstr(p, want, "relation");
		}
	}
	assert_jstr(f, "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1",
		    "topology.nccl_ib_hca");
	assert_int_equal(json_array_size(jget(f, "topology.problems")), 0);
}

static void test_h200_ib(void **state)
{
	json_t *f = collect_fixture("h200-ib");

	dump_warnings(f);
	assert_int_equal(json_array_size(jget(f, "warnings")), 0);
	check_system(f, "gpu-node-01");
	check_ib_rdma(f, 1, -1, -1);
	check_pci(f, "0x020700", -1);
	check_modules(f, true);
	assert_jstr(f, "24.10-1.1.4.0", "ofed.version");
	assert_jstr(f, "MLNX_OFED_LINUX-24.10-1.1.4.0", "ofed.package");
	assert_jstr(f, "/usr/bin/ofed_info", "ofed.source");
	assert_jstr(f, "24.10-1.1.4", "ofed.mlx5_core_version");
	check_gpus(f, 1);
	check_hgx_topology(f);
	/* libnccl.so.2.23.4 (+ soname link), ucx.pc, ompi.pc linked from the openmpi tree */
	assert_jstr(f, "2.23.4", "software.nccl");
	assert_jstr(f, "1.17.0", "software.ucx");
	assert_jstr(f, "4.1.7", "software.openmpi");
	json_decref(f);
}

static void test_h200_roce(void **state)
{
	json_t *f = collect_fixture("h200-roce");
	char netdev[16], ll[64], v4[64], ip[16], mac[32];

	dump_warnings(f);
	assert_int_equal(json_array_size(jget(f, "warnings")), 0);
	check_system(f, "gpu-node-02");
	check_pci(f, "0x020000", -1);
	check_modules(f, false);
	assert_jstr(f, "24.10-1.1.4", "ofed.version");
	assert_jstr(f, "OFED-internal-24.10-1.1.4", "ofed.package");
	assert_jstr(f, "/usr/bin/ofed_info", "ofed.source");
	check_gpus(f, 2);
	check_hgx_topology(f);
	/* nccl.h defines, HPC-X's ucx.pc, no MPI */
	assert_jstr(f, "2.21.5", "software.nccl");
	assert_jstr(f, "1.16.0", "software.ucx");
	assert_jabsent(f, "software.openmpi");
	assert_int_equal(json_array_size(jget(f, "rdma.devices")), 8);
	for (unsigned i = 0; i < 8; i++) {
		json_t *p = jget(f, "rdma.devices.%u.ports.0", i);

		snprintf(netdev, sizeof(netdev), "enp%us0np0", nic_bus[i]);
		snprintf(mac, sizeof(mac), "a288:c2ff:fe12:02%02x", i);
		snprintf(ll, sizeof(ll), "fe80:0000:0000:0000:%s", mac);
		snprintf(v4, sizeof(v4), "0000:0000:0000:0000:0000:ffff:0a0a:%02x02", i);
		snprintf(ip, sizeof(ip), "10.10.%u.2", i);
		assert_jstr(f, mac, "rdma.devices.%u.node_guid", i);
		assert_jstr(f, netdev, "rdma.devices.%u.netdevs.0", i);
		assert_jstr(p, "Ethernet", "link_layer");
		assert_jstr(p, "ACTIVE", "state");
		assert_jint(p, 4, "state_num");
		assert_jstr(p, "LinkUp", "phys_state");
		assert_jint(p, 400, "rate_gbps");
		/* LIDs mean nothing on Ethernet */
		assert_jabsent(p, "lid");
		assert_jabsent(p, "sm_lid");
		assert_jstr(p, netdev, "netdev");
		/* netdev MTU 9000 - 96 bytes of RoCE headers -> IB MTU 4096 */
		assert_jint(p, 4096, "active_mtu");
		/* 4 valid GIDs, the 4 all-zero entries skipped */
		assert_int_equal(json_array_size(jget(p, "gids")), 4);
		for (unsigned g = 0; g < 4; g++) {
			assert_jint(p, g, "gids.%u.index", g);
			assert_jstr(p, g < 2 ? ll : v4, "gids.%u.gid", g);
			assert_jstr(p, g % 2 ? "RoCE v2" : "IB/RoCE v1", "gids.%u.type", g);
			assert_jstr(p, netdev, "gids.%u.netdev", g);
			if (g < 2)
				assert_jabsent(p, "gids.%u.ipv4", g);
			else
				assert_jstr(p, ip, "gids.%u.ipv4", g);
		}
	}
	/* the RoCE v2 IPv4-mapped GID of the first rail */
	assert_jstr(f, "0000:0000:0000:0000:0000:ffff:0a0a:0002",
		    "rdma.devices.0.ports.0.gids.3.gid");
	assert_jstr(f, "RoCE v2", "rdma.devices.0.ports.0.gids.3.type");
	assert_jstr(f, "10.10.0.2", "rdma.devices.0.ports.0.gids.3.ipv4");
	json_decref(f);
}

static void test_h200_degraded(void **state)
{
	json_t *f = collect_fixture("h200-degraded");

	dump_warnings(f);
	assert_int_equal(json_array_size(jget(f, "warnings")), 0);
	check_system(f, "gpu-node-03");
	/* mlx5_3 down/polling, mlx5_5 trained at HDR 200, NIC of mlx5_6 at Gen4 x8 */
	check_ib_rdma(f, 3, 3, 5);
	check_pci(f, "0x020700", 6);
	assert_jstr(f, "0000:ba:00.0", "rdma.devices.6.pci_address");
	check_modules(f, true);
	check_gpus(f, 3);
	check_hgx_topology(f);
	assert_jabsent(f, "software");
	json_decref(f);
}

static void test_h200_ib_2(void **state)
{
	json_t *f = collect_fixture("h200-ib-2");

	dump_warnings(f);
	assert_int_equal(json_array_size(jget(f, "warnings")), 0);
	check_system(f, "gpu-node-04");
	check_ib_rdma(f, 4, -1, -1);
	check_pci(f, "0x020700", -1);
	check_modules(f, true);
	/* no ofed_info: the version the loaded MOFED mlx5_core declares */
	assert_jstr(f, "24.10-1.1.4", "ofed.version");
	assert_jstr(f, "/sys/module/mlx5_core/version", "ofed.source");
	assert_jabsent(f, "ofed.package");
	check_gpus(f, 4);
	check_hgx_topology(f);
	assert_jabsent(f, "software");
	json_decref(f);
}

/* gpu-node-05: the ConnectX-7 of GPUs 0000:39/0000:4a's switch is cabled to a socket-1 root port
 * (0000:d1:00.0, NUMA node 1); in PCI order it is mlx5_7 and the later ones move up a name. */
static void test_h200_miscabled(void **state)
{
	static const char *const near[8][2] = {
		{"mlx5_0", "PIX"}, {"mlx5_1", "PIX"}, {"mlx5_2", "PIX"}, {"mlx5_7", "SYS"},
		{"mlx5_3", "PIX"}, {"mlx5_4", "PIX"}, {"mlx5_5", "PIX"}, {"mlx5_6", "PIX"},
	};
	json_t *f = collect_fixture("h200-miscabled");

	dump_warnings(f);
	assert_int_equal(json_array_size(jget(f, "warnings")), 0);
	check_system(f, "gpu-node-05");
	assert_jstr(f, "0000:d1:00.0", "rdma.devices.7.pci_address");
	assert_jint(f, 1, "rdma.devices.7.numa_node");
	assert_jstr(f, "ibp209s0", "rdma.devices.7.netdevs.0");
	assert_jstr(f, "0000:49:00.0", "rdma.devices.2.pci_address");
	for (unsigned g = 0; g < 8; g++) {
		assert_jstr(f, near[g][0], "gpus.%u.nearest_hca.device", g);
		assert_jstr(f, near[g][1], "gpus.%u.nearest_hca.relation", g);
	}
	/* GPU 0000:4a:00.0 against the moved NIC, and against its switch's remaining one */
	assert_jstr(f, "0000:4a:00.0", "topology.pairs.%d.gpu", 3 * 8 + 7);
	assert_jstr(f, "SYS", "topology.pairs.%d.relation", 3 * 8 + 7);
	assert_jstr(f, "PIX", "topology.pairs.%d.relation", 3 * 8 + 2);
	/* the socket-1 GPUs see it through the CPU */
	assert_jstr(f, "NODE", "topology.pairs.%d.relation", 4 * 8 + 7);
	assert_jstr(f, "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_7:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1",
		    "topology.nccl_ib_hca");
	assert_int_equal(json_array_size(jget(f, "topology.problems")), 1);
	assert_jstr(f,
		    "GPU 0000:4a:00.0: nearest free HCA mlx5_7 (0000:d1:00.0) is SYS (across "
		    "sockets: GPU on NUMA node 0, HCA on node 1); the closer mlx5_2 (PIX) serves "
		    "GPU 0000:39:00.0",
		    "topology.problems.0");
	json_decref(f);
}

static void test_summary(void **state)
{
	static const struct {
		const char *fixture, *line;
	} cases[] = {
		{"h200-ib", "Debian 12 | 6.1.0-28-amd64 | 8 cpu/2 numa | 2015 GiB | "
			    "8 HCA 8/8 active IB 400G | 8 GPU H200"},
		{"h200-roce", "Debian 12 | 6.1.0-28-amd64 | 8 cpu/2 numa | 2015 GiB | "
			      "8 HCA 8/8 active RoCE 400G | 8 GPU H200"},
		{"h200-degraded", "Debian 12 | 6.1.0-28-amd64 | 8 cpu/2 numa | 2015 GiB | "
				  "8 HCA 7/8 active IB 200-400G | 8 GPU H200"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *f = collect_fixture(cases[i].fixture);
		char *s = facts_summary(f);

		assert_non_null(s);
		assert_string_equal(s, cases[i].line);
		free(s);
		json_decref(f);
	}
}

/* --- sysroots built at test time --- */

static void put(const char *root, const char *rel, const char *content)
{
	char *path, *dir, *slash;

	assert_true(asprintf(&path, "%s/%s", root, rel) > 0);
	dir = strdup(path);
	assert_non_null(dir);
	slash = strrchr(dir, '/');
	*slash = '\0';
	assert_int_equal(fs_mkdir_p(dir, 0755), 0);
	assert_int_equal(fs_write_file_atomic(path, content, strlen(content), 0644), 0);
	free(dir);
	free(path);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void rm_tree(const char *root)
{
	assert_int_equal(nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

static char *make_tmp(void)
{
	char *d = strdup("/tmp/railyard-facts-XXXXXX");

	assert_non_null(d);
	assert_non_null(mkdtemp(d));
	return d;
}

#define IBP "sys/class/infiniband/mlx5_0/ports/1/"

static void test_broken_sysroot(void **state)
{
	char *root = make_tmp();
	json_t *f;

	put(root, "proc/sys/kernel/hostname", "bad\xff\xfehost\n");
	put(root, "etc/hostname", "unused\n");
	put(root, "proc/sys/kernel/osrelease", "6.1.0-28-amd64\n");
	put(root, "proc/cpuinfo", "garbage without processors\n");
	/* no proc/meminfo, no proc/sys/kernel/version, no os-release */
	put(root, "proc/modules", "mlx5_core 2502656 1 mlx5_ib, Live 0x0 (OE)\n!!bad line\n");
	put(root, "usr/bin/ofed_info", "#!/bin/sh\necho nothing useful\n");
	put(root, "proc/driver/nvidia/version", "NVRM: something else\n");
	put(root, "proc/driver/nvidia/gpus/0000:17:00.0/information", "IRQ: 12x\n");
	/* an RDMA device as a plain directory; node_guid missing */
	put(root, "sys/class/infiniband/mlx5_0/fw_ver", "28.42.1000\n");
	put(root, "sys/class/infiniband/mlx5_0/sys_image_guid", "a088:c203:0001:1001\n");
	put(root, "sys/class/infiniband/mlx5_0/node_type", "CA\n");
	put(root, IBP "state", "4: ACTIVE\n");
	put(root, IBP "phys_state", "5: LinkUp\n");
	put(root, IBP "rate", "garbage\n");
	put(root, IBP "link_layer", "Ethernet\n");
	put(root, IBP "gids/0", "fe80:0000:00\n");
	put(root, IBP "gids/1", "0000:0000:0000:0000:0000:ffff:c0a8:0001\n");
	put(root, IBP "gid_attrs/types/1", "RoCE v2\n");
	put(root, IBP "gid_attrs/ndevs/1", "eth9\n");
	put(root, "sys/class/net/eth9/mtu", "1500\n");
	put(root, IBP "../2/state", "9\n");
	put(root, "sys/bus/pci/devices/0000:16:00.0/vendor", "0x15b3\n");
	put(root, "sys/bus/pci/devices/0000:16:00.0/device", "0x1021\n");
	put(root, "sys/bus/pci/devices/0000:16:00.0/class", "zz\n");
	put(root, "sys/bus/pci/devices/0000:16:00.0/current_link_speed", "fast\n");
	put(root, "sys/bus/pci/devices/0000:16:00.0/current_link_width", "sixteen\n");
	put(root, "sys/bus/pci/devices/0000:16:00.0/max_link_speed", "Unknown\n");
	put(root, "sys/bus/pci/devices/0000:16:00.0/max_link_width", "16\n");

	f = collect(root);
	dump_warnings(f);

	/* not UTF-8: absent, and no fallback to etc/hostname */
	assert_jabsent(f, "hostname");
	assert_true(has_warning(f, "/proc/sys/kernel/hostname: malformed"));
	assert_jabsent(f, "os");
	assert_true(has_warning(f, "/usr/lib/os-release: cannot read"));
	assert_jstr(f, "6.1.0-28-amd64", "kernel.release");
	assert_jabsent(f, "kernel.version");
	assert_true(has_warning(f, "/proc/sys/kernel/version"));
	assert_jabsent(f, "cpu.count");
	assert_true(has_warning(f, "/proc/cpuinfo: malformed"));
	assert_jabsent(f, "memory");
	assert_true(has_warning(f, "/proc/meminfo: cannot read"));
	assert_int_equal(json_array_size(jget(f, "modules.loaded")), 1);
	assert_jstr(f, "mlx5_core", "modules.loaded.0");
	assert_true(has_warning(f, "/proc/modules: malformed"));
	assert_jabsent(f, "ofed");
	assert_true(has_warning(f, "/usr/bin/ofed_info: malformed"));
	assert_jabsent(f, "nvidia_driver");
	assert_true(has_warning(f, "/proc/driver/nvidia/version: malformed"));
	/* a GPU but no HCA with a PCI function: nothing to pair, and the GPU is not looked up */
	assert_int_equal(json_array_size(jget(f, "topology.pairs")), 0);
	assert_false(has_warning(f, "0000:17:00.0: cannot read"));
	assert_int_equal(json_array_size(jget(f, "gpus")), 1);
	assert_jabsent(f, "gpus.0.irq");
	assert_jstr(f, "0000:17:00.0", "gpus.0.bus");
	assert_true(has_warning(f, "/proc/driver/nvidia/gpus/0000:17:00.0/information: malformed"));

	/* RDMA device: what is readable is there, the rest named in warnings */
	assert_jstr(f, "28.42.1000", "rdma.devices.0.fw_ver");
	assert_jabsent(f, "rdma.devices.0.node_guid");
	assert_true(has_warning(f, "/sys/class/infiniband/mlx5_0/node_guid: cannot read"));
	assert_jabsent(f, "rdma.devices.0.node_type");
	assert_true(has_warning(f, "/sys/class/infiniband/mlx5_0/node_type: malformed"));
	assert_jabsent(f, "rdma.devices.0.pci_address");
	assert_jstr(f, "ACTIVE", "rdma.devices.0.ports.0.state");
	assert_jabsent(f, "rdma.devices.0.ports.0.rate");
	assert_jabsent(f, "rdma.devices.0.ports.0.rate_gbps");
	assert_true(has_warning(f, "/" IBP "rate: malformed"));
	/* truncated GID 0 dropped and named, GID 1 kept */
	assert_true(has_warning(f, "/" IBP "gids/0: malformed"));
	assert_int_equal(json_array_size(jget(f, "rdma.devices.0.ports.0.gids")), 1);
	assert_jint(f, 1, "rdma.devices.0.ports.0.gids.0.index");
	assert_jstr(f, "192.168.0.1", "rdma.devices.0.ports.0.gids.0.ipv4");
	assert_jstr(f, "eth9", "rdma.devices.0.ports.0.netdev");
	/* MTU 1500 - 96 -> 1024 */
	assert_jint(f, 1024, "rdma.devices.0.ports.0.active_mtu");
	/* port 2: malformed state, other attributes missing */
	assert_jint(f, 2, "rdma.devices.0.ports.1.port");
	assert_jabsent(f, "rdma.devices.0.ports.1.state");
	assert_true(has_warning(f, "/sys/class/infiniband/mlx5_0/ports/2/state: malformed"));
	assert_true(has_warning(f, "/sys/class/infiniband/mlx5_0/ports/2/rate: cannot read"));

	/* PCI */
	assert_int_equal(json_array_size(jget(f, "pci.devices")), 1);
	assert_jstr(f, "0x1021", "pci.devices.0.device");
	assert_jabsent(f, "pci.devices.0.class");
	assert_true(has_warning(f, "/sys/bus/pci/devices/0000:16:00.0/class: malformed"));
	assert_jabsent(f, "pci.devices.0.gen");
	assert_jabsent(f, "pci.devices.0.current_link_width");
	assert_true(
		has_warning(f, "/sys/bus/pci/devices/0000:16:00.0/current_link_speed: malformed"));
	assert_true(
		has_warning(f, "/sys/bus/pci/devices/0000:16:00.0/current_link_width: malformed"));
	/* "Unknown" is a legitimate value without a generation, not a warning */
	assert_jstr(f, "Unknown", "pci.devices.0.max_link_speed");
	assert_jabsent(f, "pci.devices.0.max_gen");
	assert_false(has_warning(f, "max_link_speed"));
	assert_jint(f, 16, "pci.devices.0.max_link_width");

	json_decref(f);
	rm_tree(root);
	free(root);
}

static void put_or_link(const char *root, const char *rel, const char *content);

/* A PCI function at sys/devices/<path> (the last component its address) on NUMA node numa,
 * listed in sys/bus/pci/devices. */
static void topo_pci(const char *root, const char *path, int numa)
{
	const char *addr = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char rel[512], val[600];

	snprintf(rel, sizeof(rel), "sys/devices/%s/numa_node", path);
	snprintf(val, sizeof(val), "%d\n", numa);
	put_or_link(root, rel, val);
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", addr);
	snprintf(val, sizeof(val), "-> ../../../devices/%s", path);
	put_or_link(root, rel, val);
}

static void topo_gpu(const char *root, const char *path, int numa, bool excluded)
{
	const char *addr = strrchr(path, '/') + 1;
	char rel[256], val[256];

	topo_pci(root, path, numa);
	snprintf(rel, sizeof(rel), "proc/driver/nvidia/gpus/%s/information", addr);
	snprintf(val, sizeof(val),
		 "Model: \t\t NVIDIA H200\nBus Location: \t %s\nGPU Excluded:\t %s\n", addr,
		 excluded ? "Yes" : "No");
	put_or_link(root, rel, val);
}

/* An HCA name at PCI function path with ports 1..nports, those in the active mask ACTIVE. */
static void topo_hca(const char *root, const char *path, int numa, const char *name, int nports,
		     unsigned active)
{
	const char *addr = strrchr(path, '/') + 1;
	char rel[512], val[600];

	topo_pci(root, path, numa);
	snprintf(rel, sizeof(rel), "sys/class/infiniband/%s", name);
	snprintf(val, sizeof(val), "-> ../../devices/%s/infiniband/%s", path, name);
	put_or_link(root, rel, val);
	snprintf(rel, sizeof(rel), "sys/devices/%s/infiniband/%s/device", path, name);
	snprintf(val, sizeof(val), "-> ../../../%s", addr);
	put_or_link(root, rel, val);
	for (int p = 1; p <= nports; p++) {
		snprintf(rel, sizeof(rel), "sys/devices/%s/infiniband/%s/ports/%d/state", path,
			 name, p);
		put_or_link(root, rel, active & (1u << p) ? "4: ACTIVE\n" : "1: DOWN\n");
	}
}

static const char *pair_rel(json_t *f, const char *gpu, const char *hca)
{
	json_t *p;
	size_t i;

	json_array_foreach(jget(f, "topology.pairs"), i, p)
	{
		if (strcmp(json_string_value(json_object_get(p, "gpu")), gpu) == 0 &&
		    strcmp(json_string_value(json_object_get(p, "hca")), hca) == 0)
			return json_string_value(json_object_get(p, "relation"));
	}
	return "none";
}

#define SW0 "pci0000:00/0000:00:01.0/0000:01:00.0"

/* Every relation nvidia-smi topo names, on a tree built here: one switch with a GPU, an HCA and
 * a second-level switch with another HCA; root ports of the same host bridge; another host
 * bridge on the same and on the other NUMA node. Software devices and virtual functions take no
 * rail; the port is the first ACTIVE one. */
static void test_topology_relations(void **state)
{
	char *root = make_tmp();
	json_t *f;

	topo_gpu(root, SW0 "/0000:02:00.0/0000:03:00.0", 0, false);
	topo_hca(root, SW0 "/0000:02:01.0/0000:04:00.0", 0, "mlx5_0", 2, 1u << 2);
	topo_hca(root, SW0 "/0000:02:02.0/0000:05:00.0/0000:06:00.0/0000:07:00.0", 0, "mlx5_1", 1,
		 1u << 1);
	topo_gpu(root, "pci0000:00/0000:00:02.0/0000:08:00.0", 0, false);
	topo_hca(root, "pci0000:00/0000:00:03.0/0000:09:00.0", 0, "mlx5_2", 1, 1u << 1);
	topo_hca(root, "pci0000:40/0000:40:01.0/0000:41:00.0", 0, "mlx5_3", 1, 1u << 1);
	topo_hca(root, "pci0000:80/0000:80:01.0/0000:81:00.0", 1, "mlx5_4", 1, 1u << 1);
	/* a VF of mlx5_4 and a soft-RoCE device */
	topo_hca(root, "pci0000:80/0000:80:01.0/0000:81:00.1", 1, "mlx5_5", 1, 1u << 1);
	put_or_link(root, "sys/devices/pci0000:80/0000:80:01.0/0000:81:00.1/physfn",
		    "-> ../0000:81:00.0");
	put_or_link(root, "sys/class/infiniband/rxe0/ports/1/state", "4: ACTIVE\n");
	/* an excluded GPU takes no rail */
	topo_gpu(root, "pci0000:40/0000:40:02.0/0000:42:00.0", 0, true);

	f = collect(root);
	assert_jstr(f, "PIX", "gpus.0.nearest_hca.relation");
	assert_string_equal(pair_rel(f, "0000:03:00.0", "mlx5_0"), "PIX");
	assert_string_equal(pair_rel(f, "0000:03:00.0", "mlx5_1"), "PXB");
	assert_string_equal(pair_rel(f, "0000:03:00.0", "mlx5_2"), "PHB");
	assert_string_equal(pair_rel(f, "0000:03:00.0", "mlx5_3"), "NODE");
	assert_string_equal(pair_rel(f, "0000:03:00.0", "mlx5_4"), "SYS");
	assert_string_equal(pair_rel(f, "0000:08:00.0", "mlx5_0"), "PHB");
	assert_string_equal(pair_rel(f, "0000:08:00.0", "mlx5_2"), "PHB");
	assert_string_equal(pair_rel(f, "0000:08:00.0", "mlx5_4"), "SYS");
	assert_string_equal(pair_rel(f, "0000:03:00.0", "mlx5_5"), "none");
	assert_string_equal(pair_rel(f, "0000:03:00.0", "rxe0"), "none");
	assert_string_equal(pair_rel(f, "0000:42:00.0", "mlx5_3"), "none");
	assert_int_equal(json_array_size(jget(f, "topology.pairs")), 2 * 5);
	assert_jstr(f, "mlx5_0", "gpus.0.nearest_hca.device");
	assert_jint(f, 2, "gpus.0.nearest_hca.port");
	/* the second GPU has no switch in common with any HCA: the first free PHB one */
	assert_jstr(f, "mlx5_1", "gpus.1.nearest_hca.device");
	assert_jstr(f, "PHB", "gpus.1.nearest_hca.relation");
	assert_jabsent(f, "gpus.2.nearest_hca");
	assert_jstr(f, "mlx5_0:2,mlx5_1:1", "topology.nccl_ib_hca");
	assert_int_equal(json_array_size(jget(f, "topology.problems")), 1);
	assert_jstr(f,
		    "GPU 0000:08:00.0: nearest HCA mlx5_1 (0000:07:00.0) is PHB (through the host "
		    "bridge: no PCIe switch in common)",
		    "topology.problems.0");
	assert_false(has_warning(f, "not a PCI device"));
	json_decref(f);
	rm_tree(root);
	free(root);
}

/* More GPUs than HCAs share the nearest; NUMA nodes that are not reported count as one; a GPU
 * that is not below a host bridge or whose link leaves the sysroot is named and left out. */
static void test_topology_cases(void **state)
{
	char *root = make_tmp(), deep[1024] = "pci0000:c0";
	json_t *f;

	topo_gpu(root, SW0 "/0000:02:00.0/0000:03:00.0", 0, false);
	topo_gpu(root, SW0 "/0000:02:01.0/0000:04:00.0", 0, false);
	topo_hca(root, SW0 "/0000:02:02.0/0000:05:00.0", 0, "mlx5_0", 1, 1u << 1);
	topo_gpu(root, "pci0000:20/0000:20:01.0/0000:21:00.0", -1, false);
	topo_hca(root, "pci0000:30/0000:30:01.0/0000:31:00.0", -1, "mlx5_1", 1, 0);
	/* no host bridge above it */
	topo_gpu(root, "platform/vpci/0000:50:00.0", 0, false);
	/* 17 bridges deep: past the bound */
	for (int i = 0; i < 17; i++)
		snprintf(deep + strlen(deep), sizeof(deep) - strlen(deep), "/0000:%02x:00.0",
			 0xc1 + i);
	strcat(deep, "/0000:d2:00.0");
	topo_gpu(root, deep, 1, false);
	/* a sub-function of mlx5_0 (auxiliary device, no PCI function of its own): no rail, no
	 * warning */
	put_or_link(root, "sys/class/infiniband/mlx5_9",
		    "-> ../../devices/" SW0
		    "/0000:02:02.0/0000:05:00.0/mlx5_core.sf.2/infiniband/mlx5_9");
	put_or_link(root,
		    "sys/devices/" SW0
		    "/0000:02:02.0/0000:05:00.0/mlx5_core.sf.2/infiniband/mlx5_9/"
		    "device",
		    "-> ../../../mlx5_core.sf.2");
	put_or_link(root,
		    "sys/devices/" SW0
		    "/0000:02:02.0/0000:05:00.0/mlx5_core.sf.2/infiniband/mlx5_9/"
		    "ports/1/state",
		    "4: ACTIVE\n");
	/* a link that climbs out of the sysroot */
	put_or_link(root, "proc/driver/nvidia/gpus/0000:60:00.0/information",
		    "Model: NVIDIA H200\nBus Location: 0000:60:00.0\n");
	put_or_link(root, "sys/bus/pci/devices/0000:60:00.0",
		    "-> ../../../../../../../../../../../../../../../tmp");

	f = collect(root);
	assert_jstr(f, "mlx5_0", "gpus.0.nearest_hca.device");
	assert_jstr(f, "PIX", "gpus.0.nearest_hca.relation");
	assert_jstr(f, "mlx5_0", "gpus.1.nearest_hca.device");
	assert_jstr(f, "PIX", "gpus.1.nearest_hca.relation");
	/* mlx5_1 has no ACTIVE port: its first */
	assert_jstr(f, "mlx5_1", "gpus.2.nearest_hca.device");
	assert_jint(f, 1, "gpus.2.nearest_hca.port");
	assert_jstr(f, "NODE", "gpus.2.nearest_hca.relation");
	assert_jabsent(f, "gpus.3.nearest_hca");
	assert_jabsent(f, "gpus.4.nearest_hca");
	assert_jabsent(f, "gpus.5.nearest_hca");
	assert_jstr(f, "mlx5_0:1,mlx5_1:1", "topology.nccl_ib_hca");
	assert_jstr(f, "mlx5_core.sf.2", "rdma.devices.2.pci_address");
	assert_string_equal(pair_rel(f, "0000:03:00.0", "mlx5_9"), "none");
	assert_false(has_warning(f, "mlx5_9/device: not a PCI device"));
	assert_true(has_warning(f, "/sys/bus/pci/devices/0000:50:00.0: not a PCI device below a "
				   "host bridge"));
	assert_true(has_warning(f, "/sys/bus/pci/devices/0000:d2:00.0: not a PCI device below a "
				   "host bridge"));
	assert_true(has_warning(f, "/sys/bus/pci/devices/0000:60:00.0: leads outside the sysroot"));
	assert_int_equal(json_array_size(jget(f, "topology.problems")), 1);
	assert_non_null(strstr(json_string_value(jget(f, "topology.problems.0")),
			       "GPU 0000:21:00.0: nearest HCA mlx5_1 (0000:31:00.0) is NODE"));
	json_decref(f);
	rm_tree(root);
	free(root);
}

/* At most 64 HCAs are paired (64 x 64 pairs stay far below the controller's 1 MiB of facts). */
static void test_topology_bound(void **state)
{
	char *root = make_tmp(), path[256], name[16];
	json_t *f;

	topo_gpu(root, SW0 "/0000:02:00.0/0000:03:00.0", 0, false);
	for (int i = 0; i < 65; i++) {
		snprintf(path, sizeof(path), SW0 "/0000:02:%02x.0/0000:%02x:00.0", i + 1, 0x10 + i);
		snprintf(name, sizeof(name), "mlx5_%d", i);
		topo_hca(root, path, 0, name, 1, 1u << 1);
	}
	f = collect(root);
	assert_int_equal(json_array_size(jget(f, "rdma.devices")), 65);
	assert_int_equal(json_array_size(jget(f, "topology.pairs")), 64);
	assert_string_equal(pair_rel(f, "0000:03:00.0", "mlx5_63"), "PIX");
	assert_string_equal(pair_rel(f, "0000:03:00.0", "mlx5_64"), "none");
	assert_true(has_warning(f, "/sys/class/infiniband: more than 64 HCAs, the topology pairs "
				   "the first 64"));
	json_decref(f);
	rm_tree(root);
	free(root);
}

static void test_empty_sysroot(void **state)
{
	char *root = make_tmp();
	json_t *f = collect(root);
	char *s;

	assert_jint(f, 1, "schema");
	assert_jabsent(f, "hostname");
	assert_jabsent(f, "os");
	assert_jabsent(f, "kernel");
	assert_jabsent(f, "cpu");
	assert_jabsent(f, "memory");
	assert_jabsent(f, "pci");
	assert_jabsent(f, "modules");
	assert_jabsent(f, "ofed");
	assert_jabsent(f, "nvidia_driver");
	/* no GPU, nothing to pair */
	assert_jabsent(f, "topology");
	assert_jabsent(f, "software");
	/* no RDMA stack and no NVIDIA driver: empty lists, no warnings about them */
	assert_int_equal(json_array_size(jget(f, "rdma.devices")), 0);
	assert_int_equal(json_array_size(jget(f, "gpus")), 0);
	assert_false(has_warning(f, "infiniband"));
	assert_false(has_warning(f, "nvidia"));
	assert_false(has_warning(f, "ofed"));
	assert_false(has_warning(f, "nccl"));
	assert_false(has_warning(f, "pkgconfig"));
	assert_false(has_warning(f, "/usr/include"));
	assert_true(has_warning(f, "/etc/hostname: cannot read"));
	assert_true(has_warning(f, "/proc/meminfo: cannot read"));
	assert_true(has_warning(f, "/proc/cpuinfo: cannot read"));
	assert_true(has_warning(f, "/sys/bus/pci/devices: cannot read"));
	assert_true(has_warning(f, "/proc/modules: cannot read"));
	s = facts_summary(f);
	assert_string_equal(s, "? | ? | ? cpu/? numa | ? GiB | no HCA | no GPU");
	free(s);
	json_decref(f);
	rm_tree(root);
	free(root);

	/* a sysroot that does not exist at all behaves the same */
	f = collect("/nonexistent/railyard-facts");
	assert_int_equal(json_array_size(jget(f, "rdma.devices")), 0);
	assert_true(has_warning(f, "/proc/meminfo: cannot read"));
	json_decref(f);

	s = facts_summary(NULL);
	assert_string_equal(s, "? | ? | ? cpu/? numa | ? GiB | ? HCA | ? GPU");
	free(s);
}

/* --- software: NCCL, UCX, Open MPI versions --- */

/* Whether a warning is about the software sources; prints those (the sysroots built below
 * also draw warnings for every missing proc and sys file). */
static bool has_software_warning(json_t *facts)
{
	static const char *const needles[] = {"nccl", "ucx", "ucp", "mpi", "pkgconfig"};
	bool found = false;
	json_t *w;
	size_t i;

	json_array_foreach(json_object_get(facts, "warnings"), i, w)
	{
		for (size_t k = 0; k < sizeof(needles) / sizeof(needles[0]); k++) {
			if (strstr(json_string_value(w), needles[k])) {
				print_message("warning: %s\n", json_string_value(w));
				found = true;
				break;
			}
		}
	}
	return found;
}

/* A file, or with content "-> TARGET" a symbolic link; without put()'s fsyncs, which cost
 * seconds over the dozens of sysroots below. */
static void put_or_link(const char *root, const char *rel, const char *content)
{
	char *path, *dir;
	FILE *fp;

	assert_true(asprintf(&path, "%s/%s", root, rel) > 0);
	dir = strdup(path);
	assert_non_null(dir);
	*strrchr(dir, '/') = '\0';
	assert_int_equal(fs_mkdir_p(dir, 0755), 0);
	if (strncmp(content, "-> ", 3) == 0) {
		assert_int_equal(symlink(content + 3, path), 0);
	} else {
		fp = fopen(path, "w");
		assert_non_null(fp);
		assert_true(fputs(content, fp) != EOF);
		assert_int_equal(fclose(fp), 0);
	}
	free(dir);
	free(path);
}

#define NCCL_H(maj, min, pat)                                                                      \
	"#ifndef NCCL_H_\n#define NCCL_H_\n#define NCCL_MAJOR " maj "\n#define NCCL_MINOR " min    \
	"\n#define NCCL_PATCH " pat "\n#define NCCL_SUFFIX \"\"\n#endif\n"
#define UCP_H(maj, min)                                                                            \
	"#define UCP_VERSION_MAJOR_SHIFT    24\n#define UCP_API_MAJOR    " maj                     \
	"\n#define UCP_API_MINOR    " min "\n#define UCP_API_VERSION  UCP_VERSION(" maj ", " min   \
	")\n"
#define MPI_H(maj, min, rel)                                                                       \
	"#define OMPI_MAJOR_VERSION " maj "\n#define OMPI_MINOR_VERSION " min                      \
	"\n#define OMPI_RELEASE_VERSION " rel "\n"
#define PC(ver) "prefix=/usr\n\nName: x\nDescription: x\nVersion: " ver "\nLibs: -L${libdir}\n"

/* Every source on its own, one sysroot each. */
static void test_software_sources(void **state)
{
	static const struct {
		const char *path, *content, *key, *version;
	} cases[] = {
		{"usr/lib/x86_64-linux-gnu/libnccl.so.2.23.4", "", "nccl", "2.23.4"},
		{"usr/lib64/libnccl.so.2.22.3", "", "nccl", "2.22.3"},
		{"usr/lib/libnccl.so.2.21.5", "", "nccl", "2.21.5"},
		{"usr/local/lib/libnccl.so.2.20.5", "", "nccl", "2.20.5"},
		{"usr/local/nccl/lib/libnccl.so.2.19.3", "", "nccl", "2.19.3"},
		{"usr/include/nccl.h", NCCL_H("2", "18", "1"), "nccl", "2.18.1"},
		{"usr/lib/pkgconfig/ucx.pc", PC("1.17.0"), "ucx", "1.17.0"},
		{"usr/lib/x86_64-linux-gnu/pkgconfig/ucx.pc", PC("1.16.0"), "ucx", "1.16.0"},
		{"usr/lib64/pkgconfig/ucx.pc", PC("1.15.0"), "ucx", "1.15.0"},
		{"opt/mellanox/hpcx/ucx/lib/pkgconfig/ucx.pc", PC("1.18.0-rc1"), "ucx",
		 "1.18.0-rc1"},
		/* the header knows only major.minor */
		{"usr/include/ucp/api/ucp_version.h", UCP_H("1", "17"), "ucx", "1.17"},
		{"usr/lib/pkgconfig/ompi.pc", PC("4.1.7"), "openmpi", "4.1.7"},
		{"usr/lib/pkgconfig/ompi-c.pc", PC("4.1.6"), "openmpi", "4.1.6"},
		{"usr/lib/x86_64-linux-gnu/pkgconfig/ompi.pc", PC("4.1.5"), "openmpi", "4.1.5"},
		{"usr/lib/x86_64-linux-gnu/pkgconfig/ompi-c.pc", PC("4.1.4"), "openmpi", "4.1.4"},
		{"usr/lib64/pkgconfig/ompi.pc", PC("4.1.3"), "openmpi", "4.1.3"},
		/* 32 characters, the longest accepted */
		{"usr/lib64/pkgconfig/ompi.pc", PC("1.2.3.4.5.6.7.8.9.10.11.12.13.14"), "openmpi",
		 "1.2.3.4.5.6.7.8.9.10.11.12.13.14"},
		{"usr/lib64/pkgconfig/ompi-c.pc", PC("4.1.2"), "openmpi", "4.1.2"},
		{"usr/lib/x86_64-linux-gnu/openmpi/lib/pkgconfig/ompi.pc", PC("4.1.1"), "openmpi",
		 "4.1.1"},
		{"usr/lib/x86_64-linux-gnu/openmpi/lib/pkgconfig/ompi-c.pc", PC("4.1.0"), "openmpi",
		 "4.1.0"},
		{"opt/mellanox/hpcx/ompi/lib/pkgconfig/ompi.pc", PC("4.1.7a1"), "openmpi",
		 "4.1.7a1"},
		{"opt/mellanox/hpcx/ompi/lib/pkgconfig/ompi-c.pc", PC("5.0.0rc12"), "openmpi",
		 "5.0.0rc12"},
		{"usr/include/mpi.h", MPI_H("4", "1", "6"), "openmpi", "4.1.6"},
		{"usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h", MPI_H("4", "1", "5"), "openmpi",
		 "4.1.5"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *root = make_tmp();
		json_t *f;

		put_or_link(root, cases[i].path, cases[i].content);
		f = collect(root);
		print_message("%s\n", cases[i].path);
		assert_int_equal(json_object_size(jget(f, "software")), 1);
		assert_jstr(f, cases[i].version, "software.%s", cases[i].key);
		assert_false(has_software_warning(f));
		json_decref(f);
		rm_tree(root);
		free(root);
	}
}

/* Precedence, the highest library version, malformed values and foreign headers. */
static void test_software_cases(void **state)
{
	static const struct {
		const char *what;
		const char *files[8][2];	  /* path, content ("-> target": a link) */
		const char *nccl, *ucx, *openmpi; /* NULL: absent */
		const char *warning;		  /* NULL: no software warning */
	} cases[] = {
		{"highest numerically (2.23.4 > 2.9.9), links and non-versions skipped, "
		 "first directory wins, library before header",
		 {{"usr/lib/x86_64-linux-gnu/libnccl.so.2.9.9", ""},
		  {"usr/lib/x86_64-linux-gnu/libnccl.so.2.23.4", ""},
		  {"usr/lib/x86_64-linux-gnu/libnccl.so.2.18.10", ""},
		  {"usr/lib/x86_64-linux-gnu/libnccl.so.2", "-> libnccl.so.2.23.4"},
		  {"usr/lib/x86_64-linux-gnu/libnccl.so", "-> libnccl.so.2"},
		  {"usr/lib/x86_64-linux-gnu/libnccl.so.2.24.1.dpkg-new", ""},
		  {"usr/lib64/libnccl.so.3.0.0", ""},
		  {"usr/include/nccl.h", NCCL_H("1", "0", "0")}},
		 "2.23.4",
		 NULL,
		 NULL,
		 NULL},
		{"an earlier directory wins over a higher version in a later one",
		 {{"usr/lib/libnccl.so.2.20.3", ""}, {"usr/local/lib/libnccl.so.2.23.4", ""}},
		 "2.20.3",
		 NULL,
		 NULL,
		 NULL},
		{"a directory with only links falls through to the header",
		 {{"usr/lib/libnccl.so.2", "-> libnccl.so.2.23.4"},
		  {"usr/include/nccl.h", "/* c */\n#  define  NCCL_MAJOR\t2 /* major */\n"
					 "#define NCCL_MINOR 21 // minor\n#define NCCL_PATCH 5\n"}},
		 "2.21.5",
		 NULL,
		 NULL,
		 NULL},
		{"malformed library name",
		 {{"usr/lib/x86_64-linux-gnu/libnccl.so.2..4", ""}},
		 NULL,
		 NULL,
		 NULL,
		 "/usr/lib/x86_64-linux-gnu/libnccl.so.2..4: malformed version"},
		{"10-digit component",
		 {{"usr/lib/libnccl.so.2.1234567890.1", ""}},
		 NULL,
		 NULL,
		 NULL,
		 "/usr/lib/libnccl.so.2.1234567890.1: malformed version"},
		{"malformed #define",
		 {{"usr/include/nccl.h", NCCL_H("2", "2x", "1")}},
		 NULL,
		 NULL,
		 NULL,
		 "/usr/include/nccl.h: malformed NCCL_MINOR"},
		{"missing #define",
		 {{"usr/include/nccl.h", "#define NCCL_MAJOR 2\n#define NCCL_MINOR 21\n"}},
		 NULL,
		 NULL,
		 NULL,
		 "/usr/include/nccl.h: malformed: no NCCL_PATCH"},
		{"pkg-config directories in order, pc before header",
		 {{"usr/lib/pkgconfig/ucx.pc", PC("1.17.0")},
		  {"usr/lib64/pkgconfig/ucx.pc", PC("1.18.0")},
		  {"opt/mellanox/hpcx/ucx/lib/pkgconfig/ucx.pc", PC("1.16.0")},
		  {"usr/include/ucp/api/ucp_version.h", UCP_H("1", "15")},
		  {"usr/lib/pkgconfig/ompi-c.pc", PC("4.1.5")},
		  {"usr/lib/x86_64-linux-gnu/pkgconfig/ompi.pc", PC("4.1.7")},
		  {"usr/include/mpi.h", MPI_H("4", "0", "1")}},
		 NULL,
		 "1.17.0",
		 "4.1.5",
		 NULL},
		{"ompi.pc before ompi-c.pc; pc through a relative link",
		 {{"usr/lib/x86_64-linux-gnu/pkgconfig/ompi-c.pc", PC("4.1.6")},
		  {"usr/lib/x86_64-linux-gnu/pkgconfig/ompi.pc",
		   "-> ../openmpi/lib/pkgconfig/ompi.pc"},
		  {"usr/lib/x86_64-linux-gnu/openmpi/lib/pkgconfig/ompi.pc", PC("4.1.7")}},
		 NULL,
		 NULL,
		 "4.1.7",
		 NULL},
		{"malformed pc version: warned, the header is used",
		 {{"usr/lib/pkgconfig/ucx.pc", PC("1.17.0 (beta)")},
		  {"usr/include/ucp/api/ucp_version.h", UCP_H("1", "15")}},
		 NULL,
		 "1.15",
		 NULL,
		 "/usr/lib/pkgconfig/ucx.pc: malformed version"},
		{"pc version with a variable",
		 {{"usr/lib/pkgconfig/ucx.pc", PC("${version}")}},
		 NULL,
		 NULL,
		 NULL,
		 "/usr/lib/pkgconfig/ucx.pc: malformed version"},
		{"pc version of 33 characters",
		 {{"usr/lib64/pkgconfig/ompi.pc", PC("1.2.3.4.5.6.7.8.9.10.11.12.13.145")}},
		 NULL,
		 NULL,
		 NULL,
		 "/usr/lib64/pkgconfig/ompi.pc: malformed version"},
		{"pc version not starting with a digit",
		 {{"usr/lib64/pkgconfig/ompi.pc", PC("v4.1.7")}},
		 NULL,
		 NULL,
		 NULL,
		 "/usr/lib64/pkgconfig/ompi.pc: malformed version"},
		{"pc without Version",
		 {{"usr/lib/pkgconfig/ucx.pc", "Name: ucx\nLibs: -lucp\n"}},
		 NULL,
		 NULL,
		 NULL,
		 "/usr/lib/pkgconfig/ucx.pc: malformed: no Version"},
		{"pc not UTF-8",
		 {{"usr/lib/pkgconfig/ucx.pc", "Version: 1.17\xff\n"}},
		 NULL,
		 NULL,
		 NULL,
		 "/usr/lib/pkgconfig/ucx.pc: malformed: not UTF-8"},
		{"another MPI's mpi.h is not Open MPI and not malformed",
		 {{"usr/include/mpi.h", "#define MPI_VERSION 4\n#define MPICH_VERSION \"4.1\"\n"}},
		 NULL,
		 NULL,
		 NULL,
		 NULL},
		{"another MPI's mpi.h, then Open MPI's",
		 {{"usr/include/mpi.h", "#define MPI_VERSION 4\n"},
		  {"usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h", MPI_H("4", "1", "4")}},
		 NULL,
		 NULL,
		 "4.1.4",
		 NULL},
		{"Open MPI's mpi.h without its release",
		 {{"usr/include/mpi.h",
		   "#define OMPI_MAJOR_VERSION 4\n#define OMPI_MINOR_VERSION 1\n"}},
		 NULL,
		 NULL,
		 NULL,
		 "/usr/include/mpi.h: malformed: no OMPI_RELEASE_VERSION"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *want[3] = {cases[i].nccl, cases[i].ucx, cases[i].openmpi};
		static const char *const keys[3] = {"nccl", "ucx", "openmpi"};
		char *root = make_tmp();
		json_t *f;

		for (size_t k = 0; k < 8 && cases[i].files[k][0]; k++)
			put_or_link(root, cases[i].files[k][0], cases[i].files[k][1]);
		f = collect(root);
		print_message("case: %s\n", cases[i].what);
		for (int k = 0; k < 3; k++) {
			if (want[k])
				assert_jstr(f, want[k], "software.%s", keys[k]);
			else
				assert_jabsent(f, "software.%s", keys[k]);
		}
		if (!want[0] && !want[1] && !want[2])
			assert_jabsent(f, "software");
		if (cases[i].warning) {
			assert_true(has_software_warning(f));
			assert_true(has_warning(f, cases[i].warning));
		} else {
			assert_false(has_software_warning(f));
		}
		json_decref(f);
		rm_tree(root);
		free(root);
	}
}

/* usr/lib/x86_64-linux-gnu holds thousands of files on a real node: the NCCL search keeps only
 * libnccl names, so the directory bound does not hide the library. */
static void test_software_large_libdir(void **state)
{
	char *root = make_tmp(), *lib, rel[256];
	json_t *f;

	put_or_link(root, "usr/lib/x86_64-linux-gnu/libnccl.so.2.23.4", "");
	assert_true(asprintf(&lib, "%s/usr/lib/x86_64-linux-gnu/libnccl.so.2.23.4", root) > 0);
	/* hard links: cheaper to make than thousands of files */
	for (int i = 0; i < FACTS_MAX_DIR_ENTRIES + 100; i++) {
		snprintf(rel, sizeof(rel), "%s/usr/lib/x86_64-linux-gnu/liba%05d.so.1", root, i);
		assert_int_equal(link(lib, rel), 0);
	}
	free(lib);
	f = collect(root);
	assert_jstr(f, "2.23.4", "software.nccl");
	assert_false(has_warning(f, "entries, rest ignored"));
	json_decref(f);
	rm_tree(root);
	free(root);
}

static void test_parsers(void **state)
{
	long long n;
	const char *name;
	int gen;

	assert_int_equal(facts_parse_pcie_gen("2.5 GT/s PCIe", &gen), 0);
	assert_int_equal(gen, 1);
	assert_int_equal(facts_parse_pcie_gen("8 GT/s", &gen), 0);
	assert_int_equal(gen, 3);
	assert_int_equal(facts_parse_pcie_gen("64.0 GT/s PCIe", &gen), 0);
	assert_int_equal(gen, 6);
	assert_int_equal(facts_parse_pcie_gen("Unknown", &gen), -EINVAL);
	assert_int_equal(facts_parse_pcie_gen("12.0 GT/s PCIe", &gen), -EINVAL);
	assert_int_equal(facts_parse_num_name("5: LinkUp", &n, &name), 0);
	assert_int_equal(n, 5);
	assert_string_equal(name, "LinkUp");
	assert_int_equal(facts_parse_num_name("ACTIVE", &n, &name), -EINVAL);
	assert_int_equal(facts_parse_num_name("4:", &n, &name), -EINVAL);
	assert_int_equal(facts_parse_int("0x1a", 16, &n), 0);
	assert_int_equal(n, 26);
	assert_int_equal(facts_parse_int("12x", 10, &n), -EINVAL);
	assert_int_equal(facts_parse_int("", 10, &n), -EINVAL);
	assert_true(facts_text_ok("Debian GNU/Linux 12 \xc3\xa9"));
	assert_false(facts_text_ok("bad\xff"));
	assert_false(facts_text_ok("\xc0\xaf"));
	assert_false(facts_text_ok("ctl\x01"));
}

struct thread_arg {
	const char *sysroot;
	json_t *facts;
	int r;
};

static void *collect_thread(void *p)
{
	struct thread_arg *a = p;

	a->r = facts_collect(a->sysroot, &a->facts);
	return NULL;
}

/* gpudirect.method: dma-buf only with kernel >= 5.12, the open modules and driver >= 515; the
 * first case is the H200 machine's (../shared/fixtures/h200-vm: kernel 6.18, open 580.159.04,
 * where exporting GPU memory as a dma-buf worked). */
static void test_gpudirect(void **state)
{
	static const struct {
		const char *kernel, *modules, *driver, *method, *reason;
	} cases[] = {
		{"6.18.44-fc-v657-gpu", "Open Kernel Module", "580.159.04", "dma-buf",
		 "kernel 6.18.44-fc-v657-gpu >= 5.12, open kernel modules, driver 580.159.04 >= "
		 "515"},
		{"5.12.0", "Open Kernel Module", "515.43.04", "dma-buf", ">= 5.12"},
		{"5.11.22", "Open Kernel Module", "550.127.05", "peermem", "kernel 5.11.22 < 5.12"},
		{"5.4.0-150-generic", "Open Kernel Module", "550.127.05", "peermem", "< 5.12"},
		{"6.1.0-28-amd64", "Kernel Module", "550.127.05", "peermem", "proprietary"},
		{"6.1.0-28-amd64", "Open Kernel Module", "510.108.03", "peermem",
		 "driver 510.108.03 < 515"},
		{NULL, "Open Kernel Module", "550.127.05", "peermem", "kernel release unknown"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *root = make_tmp(), *ver = NULL;
		json_t *f;

		if (cases[i].kernel)
			put(root, "proc/sys/kernel/osrelease", cases[i].kernel);
		assert_true(asprintf(&ver,
				     "NVRM version: NVIDIA UNIX %s for x86_64  %s  Release Build  "
				     "(dvs-builder@U16)  Tue Oct  8 03:27:50 UTC 2024\n",
				     cases[i].modules, cases[i].driver) > 0);
		put(root, "proc/driver/nvidia/version", ver);
		f = collect(root);
		assert_string_equal(json_string_value(jget(f, "gpudirect.method")),
				    cases[i].method);
		assert_int_equal(json_is_true(jget(f, "gpudirect.dmabuf")),
				 strcmp(cases[i].method, "dma-buf") == 0);
		if (!strstr(json_string_value(jget(f, "gpudirect.reason")), cases[i].reason))
			fail_msg("case %zu: reason \"%s\"", i,
				 json_string_value(jget(f, "gpudirect.reason")));
		json_decref(f);
		free(ver);
		rm_tree(root);
		free(root);
	}
	/* no NVIDIA driver: nothing to choose */
	{
		char *root = make_tmp();
		json_t *f = collect(root);

		assert_jabsent(f, "gpudirect");
		json_decref(f);
		rm_tree(root);
		free(root);
	}
}

static void test_concurrent(void **state)
{
	static const char *const names[] = {"h200-ib", "h200-roce", "h200-degraded", "h200-ib-2"};
	struct thread_arg args[8];
	pthread_t th[8];
	json_t *ref[4];
	char *roots[4];

	for (int i = 0; i < 4; i++) {
		roots[i] = fixture(names[i]);
		ref[i] = collect(roots[i]);
	}
	for (int i = 0; i < 8; i++) {
		args[i] = (struct thread_arg){.sysroot = roots[i % 4]};
		assert_int_equal(pthread_create(&th[i], NULL, collect_thread, &args[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(args[i].r, 0);
		assert_true(json_equal(args[i].facts, ref[i % 4]));
		json_decref(args[i].facts);
	}
	/* the fixtures really differ */
	assert_false(json_equal(ref[0], ref[2]));
	for (int i = 0; i < 4; i++) {
		json_decref(ref[i]);
		free(roots[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_h200_ib),
		cmocka_unit_test(test_h200_roce),
		cmocka_unit_test(test_h200_degraded),
		cmocka_unit_test(test_h200_ib_2),
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_broken_sysroot),
		cmocka_unit_test(test_empty_sysroot),
		cmocka_unit_test(test_software_sources),
		cmocka_unit_test(test_software_cases),
		cmocka_unit_test(test_software_large_libdir),
		cmocka_unit_test(test_parsers),
		cmocka_unit_test(test_concurrent),
		cmocka_unit_test(test_gpudirect),
		cmocka_unit_test(test_h200_miscabled),
		cmocka_unit_test(test_topology_relations),
		cmocka_unit_test(test_topology_cases),
		cmocka_unit_test(test_topology_bound),
	};

	if (!getenv("RAILYARD_SOURCE_DIR")) {
		fprintf(stderr, "RAILYARD_SOURCE_DIR not set (run under ctest); skipping\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
