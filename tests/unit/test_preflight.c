/* Unit tests of controller/campaign/preflight: a playbook's preflight on a node's facts. The
 * healthy H200 fixture (tests/fixtures/facts/h200-ib.json) passes; each change below is one of
 * the degraded demo node's faults (a DOWN port, a 200 Gb/s port among 400 Gb/s rails, an HCA
 * trained at Gen4 x8, GPUs missing) and is named with the device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/campaign/preflight.h"

static json_t *fixture(void)
{
	const char *src = getenv("RAILYARD_SOURCE_DIR");
	char path[4096];
	json_t *f;

	snprintf(path, sizeof(path), "%s/tests/fixtures/facts/h200-ib.json", src ? src : ".");
	f = json_load_file(path, 0, NULL);
	assert_non_null(f);
	return f;
}

static json_t *spec(void)
{
	json_t *s = json_pack("{s:b, s:i, s:b, s:i, s:i}", "ports_active", 1, "port_rate_gbps", 400,
			      "pcie_max", 1, "hcas", 8, "gpus", 8);

	assert_non_null(s);
	return s;
}

static void assert_has(const json_t *arr, const char *needle)
{
	const json_t *x;
	size_t i;

	json_array_foreach(arr, i, x) if (strstr(json_string_value(x), needle)) return;
	fail_msg("no reason with \"%s\"", needle);
}

static json_t *dev(json_t *facts, size_t i)
{
	return json_array_get(json_object_get(json_object_get(facts, "rdma"), "devices"), i);
}

static void test_healthy(void **state)
{
	json_t *f = fixture(), *s = spec(), *r = cp_preflight(s, f);

	(void)state;
	assert_non_null(r);
	assert_int_equal(json_array_size(r), 0);
	json_decref(r);
	/* Nothing required: nothing to fail. */
	r = cp_preflight(NULL, f);
	assert_int_equal(json_array_size(r), 0);
	json_decref(r);
	json_decref(f);
	json_decref(s);
}

static void test_degraded(void **state)
{
	json_t *f = fixture(), *s = spec(), *r, *p;
	const char *addr;
	json_t *pci, *x;
	size_t i;

	(void)state;
	p = json_array_get(json_object_get(dev(f, 3), "ports"), 0);
	json_object_set_new(p, "state", json_string("DOWN"));
	json_object_set_new(p, "phys_state", json_string("Polling"));
	p = json_array_get(json_object_get(dev(f, 5), "ports"), 0);
	json_object_set_new(p, "rate_gbps", json_integer(200));
	addr = json_string_value(json_object_get(dev(f, 7), "pci_address"));
	json_array_foreach(json_object_get(json_object_get(f, "pci"), "devices"), i, x)
	{
		if (strcmp(json_string_value(json_object_get(x, "address")), addr) == 0) {
			pci = x;
			json_object_set_new(pci, "gen", json_integer(4));
			json_object_set_new(pci, "current_link_width", json_integer(8));
		}
	}
	json_array_remove(json_object_get(f, "gpus"), 0);
	r = cp_preflight(s, f);
	assert_int_equal(json_array_size(r), 4);
	assert_has(r, "mlx5_3 port 1 is DOWN (phys_state Polling)");
	assert_has(r, "mlx5_5 port 1 runs at 200 Gb/s, not 400");
	assert_has(r, "mlx5_7 PCIe link");
	assert_has(r, "at Gen4 x8, capable of Gen5 x16");
	assert_has(r, "7 GPUs, the playbook expects 8");
	json_decref(r);
	json_decref(f);
	json_decref(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_healthy),
		cmocka_unit_test(test_degraded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
