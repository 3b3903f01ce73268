/* Unit tests of `railyard-agent health-check` (nodeagent/health_check_cmd.c) over the NVML double
 * (argv[1]): a healthy node says so and exits 0; an uncorrected ECC error between the two
 * readings is a critical event and exit 1 (JSON); without NVML the readiness checks still run;
 * a playbook's section is used; usage and configuration errors exit 2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "nodeagent/health_check_cmd.h"

static const char *double_path;
static char src[1024], root[256];

/* Run the command with argv (NULL-terminated); its output in *ret_out (caller frees). */
static int run(char **ret_out, const char *arg0, ...)
{
	char *argv[16], *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	va_list ap;
	int argc = 0, rc;

	assert_non_null(f);
	argv[argc++] = (char *)arg0;
	va_start(ap, arg0);
	while (argc < 15 && (argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	rc = health_check_cmd(argc, argv, f);
	fclose(f);
	print_message("%s", buf);
	*ret_out = buf;
	return rc;
}

static void nvml(const char *series)
{
	char p[1200];

	setenv("RAILYARD_NVML_LIBRARY", double_path, 1);
	snprintf(p, sizeof(p), "%s/tests/fixtures/nvml/health/hgx-2gpu.txt", src);
	setenv("RAILYARD_NVML_DOUBLE_DATA", p, 1);
	if (series) {
		snprintf(p, sizeof(p), "%s/tests/fixtures/nvml/health/%s.jsonl", src, series);
		setenv("RAILYARD_NVML_DOUBLE_SERIES", p, 1);
	} else {
		unsetenv("RAILYARD_NVML_DOUBLE_SERIES");
	}
}

static void test_healthy(void **state)
{
	char *out;

	(void)state;
	nvml(NULL);
	assert_int_equal(run(&out, "health-check", "--interval-ms", "1000", NULL), 0);
	assert_non_null(strstr(out, "NVML: 2 GPUs watched"));
	assert_non_null(strstr(out, "HEALTHY: 0 critical, 0 warning, 0 info"));
	free(out);
}

static void test_ecc_json(void **state)
{
	json_t *doc, *e;
	char *out;

	(void)state;
	nvml("ecc-uncorrected");
	assert_int_equal(run(&out, "health-check", "--interval-ms", "1000", "--json", NULL), 1);
	doc = json_loads(out, 0, NULL);
	free(out);
	assert_non_null(doc);
	assert_true(json_is_true(json_object_get(json_object_get(doc, "gpu_watcher"), "on")));
	assert_int_equal(json_array_size(json_object_get(doc, "events")), 1);
	e = json_array_get(json_object_get(doc, "events"), 0);
	assert_string_equal(json_string_value(json_object_get(e, "severity")), "critical");
	assert_string_equal(json_string_value(json_object_get(e, "source")), "gpu1");
	assert_string_equal(json_string_value(json_object_get(e, "what")),
			    "2 uncorrectable ECC errors");
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(doc, "summary"), "critical")),
		1);
	json_decref(doc);
}

static void test_no_nvml_readiness(void **state)
{
	char *out;

	(void)state;
	setenv("RAILYARD_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
	assert_int_equal(
		run(&out, "health-check", "--sysroot", root, "--require", "gpudirect_rdma", NULL),
		1);
	assert_non_null(strstr(out, "no NVML: GPU watcher off"));
	assert_non_null(strstr(out, "GPUDirect RDMA unavailable: no NVIDIA driver loaded"));
	assert_non_null(strstr(out, "NOT HEALTHY: 1 critical"));
	free(out);
}

static void test_playbook(void **state)
{
	char pb[1200], *out;
	json_t *doc;

	(void)state;
	nvml(NULL);
	snprintf(pb, sizeof(pb), "%s/playbooks/h200-ndr-ib.yaml", src);
	/* 18 NVLinks a GPU expected and there: nothing; fabric manager and GPUDirect RDMA
	 * required on a root that has neither */
	assert_int_equal(run(&out, "health-check", "--playbook", pb, "--sysroot", root,
			     "--interval-ms", "1000", "--json", NULL),
			 1);
	doc = json_loads(out, 0, NULL);
	free(out);
	assert_non_null(doc);
	assert_int_equal(json_array_size(json_object_get(doc, "events")), 2);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(doc, "events"), 0), "source")),
			    "fabric-manager");
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(doc, "events"), 1), "source")),
			    "gpudirect");
	json_decref(doc);
}

static void test_usage(void **state)
{
	char cfg[512], *out;
	FILE *f;

	(void)state;
	assert_int_equal(run(&out, "health-check", "--interval-ms", "5", NULL), 2);
	free(out);
	assert_int_equal(run(&out, "health-check", "extra", NULL), 2);
	free(out);
	assert_int_equal(run(&out, "health-check", "--require", "nccl", NULL), 2);
	free(out);
	snprintf(cfg, sizeof(cfg), "%s/health.json", root);
	f = fopen(cfg, "w");
	assert_non_null(f);
	fputs("{\"version\": 1, \"gpu\": {\"nvlink\": {\"expected\": 40}}}", f);
	fclose(f);
	assert_int_equal(run(&out, "health-check", "--config", cfg, NULL), 2);
	free(out);
	assert_int_equal(run(&out, "health-check", "--config", "/nonexistent.json", NULL), 2);
	free(out);
	unlink(cfg);
	assert_int_equal(run(&out, "health-check", "--help", NULL), 0);
	assert_non_null(strstr(out, "usage: railyard-agent health-check"));
	free(out);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_healthy),
		cmocka_unit_test(test_ecc_json),
		cmocka_unit_test(test_no_nvml_readiness),
		cmocka_unit_test(test_playbook),
		cmocka_unit_test(test_usage),
	};
	const char *tmp = getenv("TMPDIR");
	int rc;

	if (argc != 2 || !getenv("RAILYARD_SOURCE_DIR")) {
		fprintf(stderr, "usage: RAILYARD_SOURCE_DIR=... %s NVML_DOUBLE\n", argv[0]);
		return 2;
	}
	double_path = argv[1];
	snprintf(src, sizeof(src), "%s", getenv("RAILYARD_SOURCE_DIR"));
	snprintf(root, sizeof(root), "%s/ry-health-check-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(root))
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(root);
	return rc;
}
