/* Preflight checks of a node's facts (preflight.h). */
#include "controller/campaign/preflight.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static void add(json_t *out, const char *f, ...) __attribute__((format(printf, 2, 3)));
static void add(json_t *out, const char *f, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, f);
	vsnprintf(buf, sizeof(buf), f, ap);
	va_end(ap);
	json_array_append_new(out, json_string(buf));
}

const json_t *cp_pci_of(const json_t *facts, const char *address)
{
	const json_t *d;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(facts, "pci"), "devices"), i, d)
	{
		const char *a = json_string_value(json_object_get(d, "address"));

		if (address && a && strcmp(a, address) == 0)
			return d;
	}
	return NULL;
}

static const char *str(const json_t *o, const char *k, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : dflt;
}

json_t *cp_preflight(const json_t *spec, const json_t *facts)
{
	const json_t *devs = json_object_get(json_object_get(facts, "rdma"), "devices"), *d, *p;
	bool active = json_is_true(json_object_get(spec, "ports_active"));
	bool pcie = json_is_true(json_object_get(spec, "pcie_max"));
	double rate = json_number_value(json_object_get(spec, "port_rate_gbps"));
	const json_t *hcas = json_object_get(spec, "hcas"), *gpus = json_object_get(spec, "gpus");
	json_t *out = json_array();
	size_t i, k;

	if (!out || !json_is_object(spec))
		return out;
	if (json_is_integer(hcas) && json_array_size(devs) != (size_t)json_integer_value(hcas))
		add(out, "%zu RDMA devices, the playbook expects %lld", json_array_size(devs),
		    (long long)json_integer_value(hcas));
	if (json_is_integer(gpus) &&
	    json_array_size(json_object_get(facts, "gpus")) != (size_t)json_integer_value(gpus))
		add(out, "%zu GPUs, the playbook expects %lld",
		    json_array_size(json_object_get(facts, "gpus")),
		    (long long)json_integer_value(gpus));
	json_array_foreach(devs, i, d)
	{
		const char *name = str(d, "name", "?");
		const json_t *pci =
			cp_pci_of(facts, json_string_value(json_object_get(d, "pci_address")));

		json_array_foreach(json_object_get(d, "ports"), k, p)
		{
			const char *state = str(p, "state", "unknown");
			double r = json_number_value(json_object_get(p, "rate_gbps"));
			bool up = strcmp(state, "ACTIVE") == 0;

			if (active && !up)
				add(out, "%s port %lld is %s (phys_state %s)", name,
				    (long long)json_integer_value(json_object_get(p, "port")),
				    state, str(p, "phys_state", "unknown"));
			if (rate > 0 && up && r < rate)
				add(out, "%s port %lld runs at %g Gb/s, not %g", name,
				    (long long)json_integer_value(json_object_get(p, "port")), r,
				    rate);
		}
		if (pcie && pci) {
			json_int_t g = json_integer_value(json_object_get(pci, "gen"));
			json_int_t mg = json_integer_value(json_object_get(pci, "max_gen"));
			json_int_t w =
				json_integer_value(json_object_get(pci, "current_link_width"));
			json_int_t mw = json_integer_value(json_object_get(pci, "max_link_width"));

			if ((mg > 0 && g < mg) || (mw > 0 && w < mw))
				add(out,
				    "%s PCIe link (%s) at Gen%lld x%lld, capable of Gen%lld x%lld",
				    name, str(pci, "address", "?"), (long long)g, (long long)w,
				    (long long)mg, (long long)mw);
		}
	}
	return out;
}
