/* Unit tests of the NVML GPU facts through the test double of libnvidia-ml.so.1
 * (tests/doubles/nvml_double.c, path in argv[1]) loaded through the seam RAILYARD_NVML_LIBRARY:
 * the real readings of an H200 (tests/fixtures/nvml/h200-vm.txt) on that machine's sysroot,
 * NVML absent or failing (the /proc view remains), errors of single readings, a lost GPU, and an
 * HGX node whose NVML and driver views are merged. */
#include "nodeagent/facts/facts.h"
#include "nodeagent/facts/facts_int.h"

#include "common/util/fs.h"
#include "common/util/util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_json.h"

#define DATA_ENV "RAILYARD_NVML_DOUBLE_DATA"

static const char *double_path;

static char *src_path(const char *rel)
{
	char *p;

	assert_true(asprintf(&p, "%s/%s", getenv("RAILYARD_SOURCE_DIR"), rel) > 0);
	return p;
}

/* Facts of a fixture sysroot with the double reading data (NULL: the seam unset). */
static json_t *collect_with(const char *sysroot, const char *library, const char *data)
{
	char *root = src_path(sysroot);
	json_t *f = NULL;

	if (library)
		assert_int_equal(setenv(FACTS_NVML_LIBRARY_ENV, library, 1), 0);
	else
		assert_int_equal(unsetenv(FACTS_NVML_LIBRARY_ENV), 0);
	if (data)
		assert_int_equal(setenv(DATA_ENV, data, 1), 0);
	assert_int_equal(facts_collect(root, &f), 0);
	assert_non_null(f);
	unsetenv(FACTS_NVML_LIBRARY_ENV);
	unsetenv(DATA_ENV);
	free(root);
	return f;
}

static size_t count_warnings(json_t *facts, const char *needle)
{
	size_t i, n = 0;
	json_t *w;

	json_array_foreach(json_object_get(facts, "warnings"), i, w)
	{
		if (strstr(json_string_value(w), needle)) {
			print_message("warning: %s\n", json_string_value(w));
			n++;
		}
	}
	return n;
}

/* The fixture's readings with lines replaced or added ("key value"; "key" alone removes it),
 * as a temporary file (caller unlinks and frees). blocks > 1 repeats them per GPU, with
 * "%d" in an override's key standing for the GPU index (as "3:serial ERR Unknown Error"). */
static char *data_with(int blocks, const char *const *over)
{
	char *fixture = src_path("tests/fixtures/nvml/h200-vm.txt"), *text = NULL, *path;
	FILE *f;
	int fd;

	assert_int_equal(fs_read_file(fixture, 1 << 20, &text, NULL), 0);
	path = strdup("/tmp/railyard-nvml-XXXXXX");
	assert_non_null(path);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	for (int b = 0; b < blocks; b++) {
		char *copy = strdup(text), *line, *save = NULL;

		assert_non_null(copy);
		if (b)
			fputs("---\n", f);
		for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			size_t klen = strcspn(line, " ");
			bool replaced = false;

			for (size_t i = 0; over && over[i]; i++) {
				const char *o = over[i];
				int gpu = -1;

				if (sscanf(o, "%d:", &gpu) == 1)
					o = strchr(o, ':') + 1;
				if (gpu >= 0 && gpu != b)
					continue;
				if (strncmp(o, line, klen) == 0 && (o[klen] == ' ' || !o[klen])) {
					replaced = true;
					break;
				}
			}
			if (!replaced)
				fprintf(f, "%s\n", line);
		}
		for (size_t i = 0; over && over[i]; i++) {
			const char *o = over[i];
			int gpu = -1;

			if (sscanf(o, "%d:", &gpu) == 1)
				o = strchr(o, ':') + 1;
			if ((gpu < 0 || gpu == b) && strchr(o, ' '))
				fprintf(f, "%s\n", o);
		}
		free(copy);
	}
	assert_int_equal(fclose(f), 0);
	free(text);
	free(fixture);
	return path;
}

static void drop(char *path)
{
	unlink(path);
	free(path);
}

/* The members the driver's /proc view gives the VM's GPU (as railyard-agent printed there). */
static void check_vm_proc_members(json_t *g)
{
	assert_jstr(g, "0000:00:06.0", "bus");
	assert_jstr(g, "NVIDIA H200", "model");
	assert_jstr(g, "GPU-47077678-012a-d25f-0a23-6b66c4586766", "uuid");
	assert_jint(g, 41, "irq");
	assert_jint(g, 0, "minor");
	assert_jstr(g, "96.00.a5.00.1a", "video_bios");
	assert_jstr(g, "PCIe", "bus_type");
	assert_jbool(g, false, "excluded");
	assert_jint(g, -1, "numa_node");
}

/* The values of tests/fixtures/nvml/h200-vm.txt (and nvidia-smi -q -x of the same GPU). */
static void test_h200_readings(void **state)
{
	char *data = src_path("tests/fixtures/nvml/h200-vm.txt");
	json_t *f = collect_with("tests/fixtures/sysroots/h200-vm", double_path, data);
	json_t *g = jget(f, "gpus.0");

	(void)state;
	assert_int_equal(count_warnings(f, double_path), 0);
	assert_int_equal(json_array_size(jget(f, "gpus")), 1);
	assert_jstr(g, "nvml", "source");
	check_vm_proc_members(g);
	assert_jstr(g, "NVIDIA H200", "name");
	assert_jstr(g, "1654024199045", "serial");
	assert_jint(g, 150754820096LL, "memory_total_bytes");
	/* 143771 MiB in nvidia-smi */
	assert_int_equal(json_integer_value(jget(g, "memory_total_bytes")) / (1024 * 1024), 143771);
	assert_jstr(g, "580.159.04", "driver_version");
	assert_jstr(g, "13.0", "cuda_driver_version");
	assert_jstr(g, "96.00.A5.00.1A", "vbios");
	assert_jbool(g, true, "ecc.enabled");
	assert_jbool(g, true, "ecc.pending_enabled");
	assert_jint(g, 0, "ecc.volatile_uncorrected");
	assert_jint(g, 0, "ecc.aggregate_uncorrected");
	assert_jint(g, 0, "remapped_rows.correctable");
	assert_jint(g, 0, "remapped_rows.uncorrectable");
	assert_jbool(g, false, "remapped_rows.pending");
	assert_jbool(g, false, "remapped_rows.failure");
	assert_jint(g, 5, "pcie.gen");
	assert_jint(g, 5, "pcie.gen_max");
	assert_jint(g, 16, "pcie.width");
	assert_jint(g, 16, "pcie.width_max");
	assert_jbool(g, true, "persistence_mode");
	assert_jint(g, 0, "clocks_event_reasons.mask");
	assert_int_equal(json_array_size(jget(g, "clocks_event_reasons.active")), 0);
	assert_jbool(g, false, "clocks_event_reasons.hw_slowdown");
	assert_jbool(g, false, "clocks_event_reasons.thermal");
	assert_jint(g, 700, "power_limit_w");
	/* "nvlink0 ERR Not Supported": absent, not an error */
	assert_jabsent(g, "nvlink");
	assert_jbool(g, false, "mig.current");
	assert_jbool(g, false, "mig.pending");
	/* the driver's view is unchanged beside it */
	assert_jstr(f, "580.159.04", "nvidia_driver.version");
	/* no HCA on that machine: a topology without pairs, and no nearest HCA */
	assert_jstr(f, "sysfs", "topology.source");
	assert_int_equal(json_array_size(jget(f, "topology.pairs")), 0);
	assert_jabsent(f, "topology.nccl_ib_hca");
	assert_jabsent(g, "nearest_hca");
	json_decref(f);
	free(data);
}

/* NVML absent: the /proc view, saying so. A library named by the seam that does not load is a
 * warning; the default library is never tried on another machine's sysroot. */
static void test_absent(void **state)
{
	char *data = src_path("tests/fixtures/nvml/h200-vm.txt");
	json_t *f;

	(void)state;
	f = collect_with("tests/fixtures/sysroots/h200-vm", "/nonexistent/libnvidia-ml.so.1", data);
	assert_jstr(f, "proc", "gpus.0.source");
	check_vm_proc_members(jget(f, "gpus.0"));
	assert_jabsent(f, "gpus.0.name");
	assert_jabsent(f, "gpus.0.serial");
	assert_jabsent(f, "gpus.0.ecc");
	assert_int_equal(count_warnings(f, "/nonexistent/libnvidia-ml.so.1: cannot load "
					   "(RAILYARD_NVML_LIBRARY)"),
			 1);
	json_decref(f);

	f = collect_with("tests/fixtures/sysroots/h200-vm", NULL, data);
	assert_jstr(f, "proc", "gpus.0.source");
	assert_jabsent(f, "gpus.0.serial");
	assert_int_equal(count_warnings(f, "nvml"), 0);
	json_decref(f);

	/* a library that is not NVML */
	f = collect_with("tests/fixtures/sysroots/h200-vm", "libc.so.6", data);
	assert_jstr(f, "proc", "gpus.0.source");
	assert_int_equal(count_warnings(f, "libc.so.6: not NVML: no symbol nvmlInit_v2"), 1);
	json_decref(f);
	free(data);
}

/* Initialisation or enumeration fails: a warning, and the /proc view. */
static void test_init_fails(void **state)
{
	static const struct {
		const char *line, *sysroot, *warning;
		size_t gpus;
	} cases[] = {
		{"init ERR Unknown Error", "tests/fixtures/sysroots/h200-vm",
		 "nvmlInit_v2: Unknown Error", 1},
		{"init ERR RM has detected an NVML/RM version mismatch.",
		 "tests/fixtures/sysroots/h200-vm",
		 "nvmlInit_v2: RM has detected an NVML/RM version mismatch.", 1},
		/* /proc says the driver is loaded, NVML finds none: inconsistent, named */
		{"init ERR Driver Not Loaded", "tests/fixtures/sysroots/h200-vm",
		 "nvmlInit_v2: Driver Not Loaded", 1},
		{"count ERR Unknown Error", "tests/fixtures/sysroots/h200-vm",
		 "nvmlDeviceGetCount_v2: Unknown Error", 1},
		/* libnvidia-ml installed on a node without the driver (a tree without
		 * proc/driver/nvidia): no GPUs, nothing to say */
		{"init ERR Driver Not Loaded", "tests/fixtures/sysroots/h200-ib/etc", NULL, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *over[] = {cases[i].line, NULL};
		char *data = data_with(1, over);
		json_t *f = collect_with(cases[i].sysroot, double_path, data);

		print_message("case: %s\n", cases[i].line);
		assert_int_equal(json_array_size(jget(f, "gpus")), cases[i].gpus);
		if (cases[i].gpus)
			assert_jstr(f, "proc", "gpus.0.source");
		assert_int_equal(count_warnings(f, double_path), cases[i].warning ? 1 : 0);
		if (cases[i].warning)
			assert_int_equal(count_warnings(f, cases[i].warning), 1);
		json_decref(f);
		drop(data);
	}
}

/* One reading failing leaves that member out with a warning; the others are read. A value out
 * of bounds or not text is malformed. A GPU lost mid-way is named once. */
static void test_reading_errors(void **state)
{
	static const char *const over[] = {
		"serial ERR Unknown Error",
		"ecc_vol_uncorr ERR Insufficient Permissions",
		"pcie_gen_cur 99",
		"power_limit 0",
		"mig [2, 0]",
		"vbios \xff\xfe",
		NULL,
	};
	static const char *const lost[] = {"remapped_rows ERR GPU is lost", NULL};
	char *data = data_with(1, over);
	json_t *f = collect_with("tests/fixtures/sysroots/h200-vm", double_path, data), *g;

	(void)state;
	g = jget(f, "gpus.0");
	assert_jstr(g, "nvml", "source");
	assert_jabsent(g, "serial");
	assert_int_equal(count_warnings(f, "nvmlDeviceGetSerial (GPU 0000:00:06.0): Unknown Error"),
			 1);
	assert_jabsent(g, "ecc.volatile_uncorrected");
	assert_jint(g, 0, "ecc.aggregate_uncorrected");
	assert_jbool(g, true, "ecc.enabled");
	assert_int_equal(count_warnings(f, "nvmlDeviceGetTotalEccErrors (GPU 0000:00:06.0): "
					   "Insufficient Permissions"),
			 1);
	assert_jabsent(g, "pcie.gen");
	assert_jint(g, 5, "pcie.gen_max");
	assert_int_equal(count_warnings(f, "nvmlDeviceGetCurrPcieLinkGeneration (GPU "
					   "0000:00:06.0): malformed value 99"),
			 1);
	assert_jabsent(g, "power_limit_w");
	assert_int_equal(count_warnings(f, "nvmlDeviceGetPowerManagementLimit (GPU 0000:00:06.0): "
					   "malformed value 0"),
			 1);
	assert_jabsent(g, "mig.current");
	assert_jbool(g, false, "mig.pending");
	assert_int_equal(count_warnings(f, "nvmlDeviceGetMigMode (GPU 0000:00:06.0): malformed "
					   "value 2"),
			 1);
	assert_jabsent(g, "vbios");
	assert_int_equal(
		count_warnings(f, "nvmlDeviceGetVbiosVersion (GPU 0000:00:06.0): malformed value"),
		1);
	/* the rest is there */
	assert_jstr(g, "NVIDIA H200", "name");
	assert_jbool(g, true, "persistence_mode");
	assert_int_equal(count_warnings(f, double_path), 6);
	json_decref(f);
	drop(data);

	/* lost while reading: named once, what was read before stays, nothing after is asked */
	data = data_with(1, lost);
	f = collect_with("tests/fixtures/sysroots/h200-vm", double_path, data);
	g = jget(f, "gpus.0");
	assert_int_equal(count_warnings(f, double_path), 1);
	assert_int_equal(
		count_warnings(f, "nvmlDeviceGetRemappedRows (GPU 0000:00:06.0): GPU is lost"), 1);
	assert_jbool(g, true, "ecc.enabled");
	assert_jabsent(g, "remapped_rows");
	assert_jabsent(g, "pcie");
	assert_jabsent(g, "persistence_mode");
	assert_jabsent(g, "mig");
	json_decref(f);
	drop(data);
}

/* Eight GPUs of an HGX node (the h200-ib fixture's bus ids, as NVML writes them: upper case,
 * 32-bit domain), with NVLink, clocks events, a pending remap and a pending MIG change; GPU 3
 * cannot be opened, so the driver's view alone describes it. */
static void test_hgx(void **state)
{
	static const char *const over[] = {
		"0:pci nvmlPciInfo_t(busIdLegacy: 0000:17:00.0, busId: 00000000:17:00.0)",
		"1:pci nvmlPciInfo_t(busIdLegacy: 0000:28:00.0, busId: 00000000:28:00.0)",
		"2:pci nvmlPciInfo_t(busIdLegacy: 0000:39:00.0, busId: 00000000:39:00.0)",
		"3:pci nvmlPciInfo_t(busIdLegacy: 0000:4A:00.0, busId: 00000000:4A:00.0)",
		"4:pci nvmlPciInfo_t(busIdLegacy: 0000:99:00.0, busId: 00000000:99:00.0)",
		"5:pci nvmlPciInfo_t(busIdLegacy: 0000:AA:00.0, busId: 00000000:AA:00.0)",
		"6:pci nvmlPciInfo_t(busIdLegacy: 0000:BB:00.0, busId: 00000000:BB:00.0)",
		"7:pci nvmlPciInfo_t(busIdLegacy: 0000:CC:00.0, busId: 00000000:CC:00.0)",
		"3:handle ERR GPU is lost",
		"nvlink0",
		"nvlink0 1",
		"nvlink1 1",
		"nvlink2 1",
		"5:nvlink2 0",
		"2:throttle 0x448",
		"4:remapped_rows (1, 2, 1, 0)",
		"7:mig [0, 1]",
		NULL,
	};
	char *data = data_with(8, over);
	json_t *f = collect_with("tests/fixtures/sysroots/h200-ib", double_path, data), *g;
	static const char *const bus[8] = {"0000:17:00.0", "0000:28:00.0", "0000:39:00.0",
					   "0000:4a:00.0", "0000:99:00.0", "0000:aa:00.0",
					   "0000:bb:00.0", "0000:cc:00.0"};

	(void)state;
	assert_int_equal(json_array_size(jget(f, "gpus")), 8);
	assert_int_equal(count_warnings(f, double_path), 1);
	assert_int_equal(count_warnings(f, "nvmlDeviceGetHandleByIndex_v2 (GPU 3): GPU is lost"),
			 1);
	for (int i = 0; i < 8; i++) {
		g = jget(f, "gpus.%d", i);
		assert_jstr(g, bus[i], "bus");
		/* the fixture driver's members, merged in */
		assert_jint(g, 500 + i * 17, "irq");
		assert_jint(g, i < 4 ? 0 : 1, "numa_node");
		assert_jstr(g, i == 3 ? "proc" : "nvml", "source");
		/* the topology pairs NVML's GPUs as it does the driver's */
		assert_jstr(g, "PIX", "nearest_hca.relation");
	}
	assert_jabsent(f, "gpus.3.serial");
	assert_jstr(f, "GPU-5b7c0103-9e1f-4c8a-b3d2-7a61e0f40103", "gpus.3.uuid");
	/* NVML's UUID wins over the fixture driver's */
	assert_jstr(f, "GPU-47077678-012a-d25f-0a23-6b66c4586766", "gpus.0.uuid");
	g = jget(f, "gpus.0");
	assert_int_equal(json_array_size(jget(g, "nvlink")), 3);
	assert_jint(g, 2, "nvlink.2.link");
	assert_jbool(g, true, "nvlink.2.active");
	assert_jbool(f, false, "gpus.5.nvlink.2.active");
	g = jget(f, "gpus.2.clocks_event_reasons");
	assert_jint(g, 0x448, "mask");
	assert_int_equal(json_array_size(jget(g, "active")), 3);
	assert_jstr(g, "hw_slowdown", "active.0");
	assert_jstr(g, "hw_thermal_slowdown", "active.1");
	assert_jstr(g, "bit_10", "active.2");
	assert_jbool(g, true, "hw_slowdown");
	assert_jbool(g, true, "thermal");
	assert_jbool(f, false, "gpus.1.clocks_event_reasons.hw_slowdown");
	assert_jint(f, 2, "gpus.4.remapped_rows.uncorrectable");
	assert_jbool(f, true, "gpus.4.remapped_rows.pending");
	assert_jbool(f, false, "gpus.7.mig.current");
	assert_jbool(f, true, "gpus.7.mig.pending");
	assert_jstr(f, "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1",
		    "topology.nccl_ib_hca");
	json_decref(f);
	drop(data);
}

/* A wedged driver: NVML blocks (the double's count_hang_ms). The collection gives up after
 * $RAILYARD_NVML_TIMEOUT_MS with a warning and the /proc view; while the call still hangs, the
 * next collection does not call NVML again; once it has returned, NVML is read as before. */
static void test_hang(void **state)
{
	static const char *const hang[] = {"count_hang_ms 1500", NULL};
	char *slow = data_with(1, hang), *ok = data_with(1, NULL);
	json_t *f;
	int64_t deadline;
	bool recovered = false;

	(void)state;
	assert_int_equal(setenv(FACTS_NVML_TIMEOUT_ENV, "200", 1), 0);
	f = collect_with("tests/fixtures/sysroots/h200-vm", double_path, slow);
	assert_int_equal(count_warnings(f, "NVML did not answer within 200 ms"), 1);
	assert_int_equal(count_warnings(f, double_path), 1);
	assert_int_equal(json_array_size(jget(f, "gpus")), 1);
	assert_jstr(f, "proc", "gpus.0.source");
	json_decref(f);
	assert_true(facts_nvml_busy());

	/* Still hanging: not called again (no second timeout), said so. */
	f = collect_with("tests/fixtures/sysroots/h200-vm", double_path, ok);
	if (facts_nvml_busy()) {
		assert_int_equal(count_warnings(f, "NVML has not answered for"), 1);
		assert_int_equal(count_warnings(f, "did not answer within"), 0);
		assert_jstr(f, "proc", "gpus.0.source");
	}
	json_decref(f);

	/* Once the hung call has returned (its worker frees what it read), NVML answers again. */
	deadline = util_now_mono_ms() + 20000;
	while (!recovered) {
		struct timespec nap = {0, 50 * 1000000L};

		f = collect_with("tests/fixtures/sysroots/h200-vm", double_path, ok);
		recovered = strcmp(json_string_value(jget(f, "gpus.0.source")), "nvml") == 0;
		if (recovered) {
			assert_int_equal(count_warnings(f, double_path), 0);
			assert_false(facts_nvml_busy());
		}
		json_decref(f);
		if (!recovered && util_now_mono_ms() > deadline)
			fail_msg("NVML not read again within 20 s of the hang");
		if (!recovered)
			nanosleep(&nap, NULL);
	}
	unsetenv(FACTS_NVML_TIMEOUT_ENV);
	drop(slow);
	drop(ok);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_h200_readings), cmocka_unit_test(test_absent),
		cmocka_unit_test(test_init_fails),    cmocka_unit_test(test_reading_errors),
		cmocka_unit_test(test_hgx),	      cmocka_unit_test(test_hang),
	};

	if (!getenv("RAILYARD_SOURCE_DIR") || argc < 2) {
		fprintf(stderr,
			"usage: test_facts_nvml LIBNVML_DOUBLE (run under ctest); skipping\n");
		return 77;
	}
	double_path = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
