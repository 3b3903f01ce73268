/* PCI facts: the NVIDIA networking (0x15b3) and NVIDIA (0x10de) functions under
 * sys/bus/pci/devices, with their negotiated and maximum PCIe link speed and width. */
#include "nodeagent/facts/facts_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool facts_pci_vendor_wanted(const char *vendor)
{
	return strcmp(vendor, "0x15b3") == 0 || strcmp(vendor, "0x10de") == 0;
}

/* Copy a hex id attribute ("0x1021") into dev[key]; warns when unreadable or malformed. */
static void facts_pci_hex(struct facts_ctx *ctx, json_t *dev, const char *addr, const char *key)
{
	long long v;
	char *s;

	if (facts_read_attrf(ctx, 0, &s, "sys/bus/pci/devices/%s/%s", addr, key) < 0)
		return;
	if (strncmp(s, "0x", 2) != 0 || facts_parse_int(s, 16, &v) < 0)
		facts_warn(ctx, "/sys/bus/pci/devices/%s/%s: malformed value", addr, key);
	else
		facts_set_str(ctx, dev, key, s);
	free(s);
}

/* <which>_link_speed and <which>_link_width into dev, with the derived PCIe generation.
 * Devices without a PCIe capability lack these files: that is not a warning. */
static void facts_pci_link(struct facts_ctx *ctx, json_t *dev, const char *addr, const char *which)
{
	char key[32];
	long long width;
	char *s;
	int gen;

	if (facts_read_attrf(ctx, FACTS_OPTIONAL, &s, "sys/bus/pci/devices/%s/%s_link_speed", addr,
			     which) == 0) {
		snprintf(key, sizeof(key), "%s_link_speed", which);
		facts_set_str(ctx, dev, key, s);
		/* "Unknown" (link down, or a virtual function) has no generation */
		if (facts_parse_pcie_gen(s, &gen) == 0)
			facts_set_int(ctx, dev, strcmp(which, "max") == 0 ? "max_gen" : "gen", gen);
		else if (strcmp(s, "Unknown") != 0)
			facts_warn(ctx, "/sys/bus/pci/devices/%s/%s_link_speed: malformed value",
				   addr, which);
		free(s);
	}
	if (facts_read_attrf(ctx, FACTS_OPTIONAL, &s, "sys/bus/pci/devices/%s/%s_link_width", addr,
			     which) == 0) {
		snprintf(key, sizeof(key), "%s_link_width", which);
		if (facts_parse_int(s, 10, &width) == 0 && width >= 0 && width <= 32)
			facts_set_int(ctx, dev, key, width);
		else
			facts_warn(ctx, "/sys/bus/pci/devices/%s/%s_link_width: malformed value",
				   addr, which);
		free(s);
	}
}

static void facts_pci_device(struct facts_ctx *ctx, json_t *list, const char *addr)
{
	long long numa;
	json_t *dev;
	char *s;

	if (facts_read_attrf(ctx, 0, &s, "sys/bus/pci/devices/%s/vendor", addr) < 0)
		return;
	if (!facts_pci_vendor_wanted(s)) {
		free(s);
		return;
	}
	dev = json_object();
	if (!dev) {
		free(s);
		ctx->oom = true;
		return;
	}
	facts_set_str(ctx, dev, "address", addr);
	facts_set_str(ctx, dev, "vendor", s);
	free(s);
	facts_pci_hex(ctx, dev, addr, "device");
	facts_pci_hex(ctx, dev, addr, "class");
	facts_pci_link(ctx, dev, addr, "current");
	facts_pci_link(ctx, dev, addr, "max");
	/* numa_node is absent without CONFIG_NUMA; -1 means "no affinity" and is reported */
	if (facts_read_attrf(ctx, FACTS_OPTIONAL, &s, "sys/bus/pci/devices/%s/numa_node", addr) ==
	    0) {
		if (facts_parse_int(s, 10, &numa) == 0)
			facts_set_int(ctx, dev, "numa_node", numa);
		else
			facts_warn(ctx, "/sys/bus/pci/devices/%s/numa_node: malformed value", addr);
		free(s);
	}
	facts_append_new(ctx, list, dev);
}

int facts_collect_pci(struct facts_ctx *ctx, json_t *facts)
{
	struct facts_names names = {0};
	json_t *pci, *list;

	if (facts_list_dirf(ctx, FACTS_SORT_BYTES, &names, "sys/bus/pci/devices") < 0)
		return ctx->oom ? -ENOMEM : 0;
	pci = json_object();
	list = json_array();
	if (!pci || !list) {
		json_decref(pci);
		json_decref(list);
		facts_names_done(&names);
		return -ENOMEM;
	}
	for (size_t i = 0; i < names.n && !ctx->oom; i++)
		facts_pci_device(ctx, list, names.v[i]);
	facts_set_new(ctx, pci, "devices", list);
	facts_set_new(ctx, facts, "pci", pci);
	facts_names_done(&names);
	return ctx->oom ? -ENOMEM : 0;
}
