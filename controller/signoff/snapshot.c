/* Configuration snapshots from facts, flattened for comparison, and drift between two sets of
 * nodes. */
#include "controller/signoff/snapshot.h"

#include "common/playbook/playbook.h" /* playbook_version_compare */
#include "common/util/json.h"
#include "common/util/util.h"
#include "controller/signoff/canon.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SNAP_LIST_MAX 256 /* HCAs or GPUs taken from one facts document */

static const json_t *get(const json_t *o, const char *a, const char *b)
{
	const json_t *v = json_object_get(o, a);

	return b ? json_object_get(v, b) : v;
}

/* Set key to a copy of v when v is a string or a number. */
static void put_scalar(json_t *o, const char *key, const json_t *v)
{
	if (json_is_string(v) || json_is_number(v))
		json_object_set_new(o, key, json_deep_copy(v));
}

/* The facts' PCI device at address (NULL when unknown). */
static const json_t *pci_device(const json_t *facts, const char *address)
{
	const json_t *d;
	size_t i;

	if (!address)
		return NULL;
	json_array_foreach(get(facts, "pci", "devices"), i, d)
	{
		const char *a = json_string_value(json_object_get(d, "address"));

		if (a && strcasecmp(a, address) == 0)
			return d;
	}
	return NULL;
}

/* "Gen5 x16" from a PCI device's gen/width (current) or max_gen/max_width. */
static void put_pcie(json_t *o, const json_t *pci)
{
	const char *g[2] = {"gen", "max_gen"}, *w[2] = {"current_link_width", "max_link_width"};
	const char *key[2] = {"pcie", "pcie_max"};

	for (int k = 0; pci && k < 2; k++) {
		const json_t *gen = json_object_get(pci, g[k]), *width = json_object_get(pci, w[k]);
		char buf[64];

		if (!json_is_integer(gen) || !json_is_integer(width))
			continue;
		snprintf(buf, sizeof(buf), "Gen%lld x%lld", (long long)json_integer_value(gen),
			 (long long)json_integer_value(width));
		json_object_set_new(o, key[k], json_string(buf));
	}
}

static json_t *hca_entry(const json_t *facts, const json_t *dev)
{
	const json_t *port = json_array_get(json_object_get(dev, "ports"), 0);
	json_t *o = json_object();
	static const char *const dev_keys[] = {"fw_ver", "board_id", "pci_address", "numa_node"};

	if (!o)
		return NULL;
	put_scalar(o, "device", json_object_get(dev, "name"));
	for (size_t i = 0; i < RY_ARRAY_SIZE(dev_keys); i++)
		put_scalar(o, dev_keys[i], json_object_get(dev, dev_keys[i]));
	put_scalar(o, "link_layer", json_object_get(port, "link_layer"));
	put_scalar(o, "state", json_object_get(port, "state"));
	put_scalar(o, "rate_gbps", json_object_get(port, "rate_gbps"));
	put_scalar(o, "mtu", json_object_get(port, "active_mtu"));
	put_pcie(o, pci_device(facts, json_string_value(json_object_get(dev, "pci_address"))));
	return o;
}

static json_t *gpu_entry(const json_t *facts, const json_t *g)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	put_scalar(o, "bus", json_object_get(g, "bus"));
	put_scalar(o, "model", json_object_get(g, "model"));
	put_scalar(o, "numa_node", json_object_get(g, "numa_node"));
	put_pcie(o, pci_device(facts, json_string_value(json_object_get(g, "bus"))));
	return o;
}

static bool module_loaded(const json_t *facts, const char *name)
{
	const json_t *m;
	size_t i;

	json_array_foreach(get(facts, "modules", "loaded"), i,
			   m) if (json_is_string(m) &&
				  strcmp(json_string_value(m), name) == 0) return true;
	return false;
}

/* GPUDirect RDMA as the node does it. The method is the node's own (facts gpudirect.method,
 * derived by the agent's one rule, docs/facts.md "GPUDirect"): "dma-buf" is dmabuf, whether or
 * not nvidia_peermem is also loaded (the benchmarks' auto mode takes dma-buf first). Otherwise
 * (method peermem, or facts without it: no GPU driver, or an agent older than the fact) the
 * path is nvidia-peermem, which works only with its module loaded: peermem, else none. */
static const char *gpudirect_mode(const json_t *facts)
{
	const char *method = json_string_value(get(facts, "gpudirect", "method"));

	if (method && strcmp(method, "dma-buf") == 0)
		return "dmabuf";
	return module_loaded(facts, "nvidia_peermem") ? "peermem" : "none";
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A scalar as text; absent (NULL or null) as none. */
static char *scalar_text_or(const json_t *v, const char *none)
{
	if (json_is_null(v) || !v)
		return strdup(none);
	return ry_json_value_text(v);
}

static char *scalar_text(const json_t *v)
{
	return scalar_text_or(v, "?");
}

/* sha256 over the sorted lines "hca DEVICE PCI NUMA" and "gpu BUS NUMA". */
static json_t *topology_digest(const json_t *hcas, const json_t *gpus)
{
	size_t n = json_array_size(hcas) + json_array_size(gpus), k = 0, total = 0, i;
	char **lines = calloc(n + 1, sizeof(*lines)), *all = NULL, hex[SO_SHA256_TEXT_LEN];
	json_t *ret = NULL, *e;

	if (!lines)
		return NULL;
	json_array_foreach(hcas, i, e)
	{
		char *a = scalar_text(json_object_get(e, "device"));
		char *p = scalar_text(json_object_get(e, "pci_address"));
		char *m = scalar_text(json_object_get(e, "numa_node"));

		if (a && p && m && asprintf(&lines[k], "hca %s %s %s\n", a, p, m) >= 0)
			total += strlen(lines[k++]);
		free(a);
		free(p);
		free(m);
	}
	json_array_foreach(gpus, i, e)
	{
		char *b = scalar_text(json_object_get(e, "bus"));
		char *m = scalar_text(json_object_get(e, "numa_node"));

		if (b && m && asprintf(&lines[k], "gpu %s %s\n", b, m) >= 0)
			total += strlen(lines[k++]);
		free(b);
		free(m);
	}
	if (k == n && (all = malloc(total + 1))) {
		qsort(lines, k, sizeof(*lines), cmp_line);
		all[0] = '\0';
		for (i = 0, total = 0; i < k; i++) {
			memcpy(all + total, lines[i], strlen(lines[i]) + 1);
			total += strlen(lines[i]);
		}
		so_sha256_text(all, total, hex);
		ret = json_string(hex);
	}
	for (i = 0; i < k; i++)
		free(lines[i]);
	free(lines);
	free(all);
	return ret;
}

static json_t *software(const json_t *facts)
{
	static const char *const keys[] = {"nccl", "ucx", "openmpi"};
	json_t *o = json_object();

	for (size_t i = 0; o && i < RY_ARRAY_SIZE(keys); i++)
		put_scalar(o, keys[i], get(facts, "software", keys[i]));
	return o;
}

json_t *so_snapshot(const json_t *facts)
{
	json_t *s = json_object(), *hcas = json_array(), *gpus = json_array(),
	       *ofed = json_object();
	const json_t *e;
	size_t i;

	if (!s || !hcas || !gpus || !ofed)
		goto fail;
	put_scalar(s, "os", get(facts, "os", "pretty_name"));
	put_scalar(s, "kernel", get(facts, "kernel", "release"));
	put_scalar(ofed, "version", get(facts, "ofed", "version"));
	put_scalar(ofed, "package", get(facts, "ofed", "package"));
	put_scalar(ofed, "mlx5_core_version", get(facts, "ofed", "mlx5_core_version"));
	if (json_object_size(ofed))
		json_object_set(s, "ofed", ofed);
	put_scalar(s, "nvidia_driver", get(facts, "nvidia_driver", "version"));
	json_object_set_new(s, "gpudirect", json_string(gpudirect_mode(facts)));
	json_object_set_new(s, "software", software(facts));
	json_array_foreach(get(facts, "rdma", "devices"), i, e)
	{
		if (i >= SNAP_LIST_MAX)
			break;
		json_array_append_new(hcas, hca_entry(facts, e));
	}
	json_array_foreach(json_object_get(facts, "gpus"), i, e)
	{
		if (i >= SNAP_LIST_MAX)
			break;
		json_array_append_new(gpus, gpu_entry(facts, e));
	}
	json_object_set_new(s, "topology_digest", topology_digest(hcas, gpus));
	json_object_set(s, "hcas", hcas);
	json_object_set(s, "gpus", gpus);
	json_decref(hcas);
	json_decref(gpus);
	json_decref(ofed);
	return s;
fail:
	json_decref(s);
	json_decref(hcas);
	json_decref(gpus);
	json_decref(ofed);
	return NULL;
}

/* Copy every scalar member of o as PREFIX.KEY. */
static void flat_members(json_t *out, const char *prefix, const json_t *o, const char *skip)
{
	const char *k;
	json_t *v;
	char key[512];

	json_object_foreach((json_t *)o, k, v)
	{
		if (skip && strcmp(k, skip) == 0)
			continue;
		if (!json_is_string(v) && !json_is_number(v))
			continue;
		snprintf(key, sizeof(key), "%s%s%s", prefix, prefix[0] ? "." : "", k);
		json_object_set_new(out, key, json_deep_copy(v));
	}
}

static void flat_list(json_t *out, const char *kind, const json_t *list, const char *idkey)
{
	const json_t *e;
	size_t i;
	char prefix[300];

	json_array_foreach(list, i, e)
	{
		const char *id = json_string_value(json_object_get(e, idkey));

		if (!id)
			continue;
		snprintf(prefix, sizeof(prefix), "%s.%s", kind, id);
		json_object_set_new(out, prefix, json_string("present"));
		flat_members(out, prefix, e, idkey);
	}
}

json_t *so_snapshot_flat(const json_t *snapshot)
{
	json_t *out = json_object();

	if (!out)
		return NULL;
	flat_members(out, "", snapshot, NULL);
	flat_members(out, "ofed", json_object_get(snapshot, "ofed"), NULL);
	flat_members(out, "software", json_object_get(snapshot, "software"), NULL);
	flat_list(out, "hca", json_object_get(snapshot, "hcas"), "device");
	flat_list(out, "gpu", json_object_get(snapshot, "gpus"), "bus");
	return out;
}

static int cmp_field(const void *a, const void *b)
{
	const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;

	return strcmp(json_string_value(json_object_get(x, "field")),
		      json_string_value(json_object_get(y, "field")));
}

/* Sort an array of objects by their "field". */
static void sort_by_field(json_t *arr)
{
	size_t n = json_array_size(arr);
	json_t **v = calloc(n + 1, sizeof(*v));

	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(arr, i));
	qsort(v, n, sizeof(*v), cmp_field);
	json_array_clear(arr);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, v[i]);
	free(v);
}

/* s without the trailing all-zero components of each dash-separated part ("24.10-1.1.4.0" ->
 * "24.10-1.1.4", "1.0.0" -> "1"); a part is never emptied. Caller frees; NULL when out of
 * memory. */
static char *version_trim(const char *s)
{
	size_t n = strlen(s), k = 0;
	char *out = malloc(n + 1);

	if (!out)
		return NULL;
	for (size_t i = 0; i <= n; i++) {
		if (s[i] != '-' && s[i] != '\0') {
			out[k++] = s[i];
			continue;
		}
		/* The part ends: drop ".0", ".00", ... while a component remains before it. */
		for (;;) {
			size_t j = k;

			while (j > 0 && out[j - 1] == '0')
				j--;
			if (j == k || j == 0 || out[j - 1] != '.' || j < 2 || out[j - 2] == '-')
				break;
			k = j - 1;
		}
		out[k++] = s[i];
	}
	return out;
}

bool so_version_same(const char *a, const char *b)
{
	char *x, *y;
	bool same;

	if (!a || !b)
		return a == b;
	if (strcmp(a, b) == 0)
		return true;
	/* Versions begin with a digit; anything else (a name, "unknown") is compared as text. */
	if (!isdigit((unsigned char)a[0]) || !isdigit((unsigned char)b[0]))
		return false;
	x = version_trim(a);
	y = version_trim(b);
	same = x && y && playbook_version_compare(x, y) == 0;
	free(x);
	free(y);
	return same;
}

bool so_version_field(const char *field)
{
	size_t n;

	if (!field)
		return false;
	n = strlen(field);
	return strcmp(field, "ofed.version") == 0 || strcmp(field, "ofed.mlx5_core_version") == 0 ||
	       strcmp(field, "nvidia_driver") == 0 || strncmp(field, "software.", 9) == 0 ||
	       (strncmp(field, "hca.", 4) == 0 && n > 7 && strcmp(field + n - 7, ".fw_ver") == 0);
}

json_t *so_snapshot_diff(const json_t *from, const json_t *to)
{
	return so_snapshot_diff_same(from, to, NULL);
}

json_t *so_snapshot_diff_same(const json_t *from, const json_t *to, json_t *same)
{
	json_t *a = so_snapshot_flat(from), *b = so_snapshot_flat(to), *out = json_array(), *v;
	const char *k;

	if (!a || !b || !out) {
		json_decref(out);
		out = NULL;
		goto done;
	}
	json_object_foreach(a, k, v)
	{
		json_t *w = json_object_get(b, k);

		if (w && !json_equal(v, w) && so_version_field(k) &&
		    so_version_same(json_string_value(v), json_string_value(w))) {
			if (same)
				json_array_append_new(same, json_pack("{s:s, s:O, s:O}", "field", k,
								      "from", v, "to", w));
			continue;
		}
		if (!w || !json_equal(v, w))
			json_array_append_new(out, json_pack("{s:s, s:O, s:O}", "field", k, "from",
							     v, "to", w ? w : json_null()));
	}
	json_object_foreach(b, k, v) if (!json_object_get(a, k)) json_array_append_new(
		out, json_pack("{s:s, s:n, s:O}", "field", k, "from", "to", v));
	sort_by_field(out);
done:
	json_decref(a);
	json_decref(b);
	return out;
}

static const json_t *node_by_host(const json_t *nodes, const char *host)
{
	const json_t *n;
	size_t i;

	json_array_foreach(nodes, i, n)
	{
		const char *h = json_string_value(json_object_get(n, "hostname"));

		if (h && host && strcmp(h, host) == 0)
			return n;
	}
	return NULL;
}

/* Add host to the group of (field, from, to) in groups (keyed by the three's text). */
static void group_add(json_t *groups, const json_t *change, const char *host)
{
	char *key = json_dumps(change, JSON_COMPACT | JSON_SORT_KEYS);
	json_t *g;

	if (!key)
		return;
	g = json_object_get(groups, key);
	if (!g) {
		g = json_deep_copy(change);
		json_object_set_new(g, "nodes", json_array());
		json_object_set_new(groups, key, g);
	}
	json_array_append_new(json_object_get(g, "nodes"), json_string(host));
	free(key);
}

json_t *so_drift(const json_t *baseline_nodes, const json_t *current_nodes)
{
	json_t *groups = json_object(), *drift = json_array(), *added = json_array();
	json_t *removed = json_array(), *g, *sgroups = json_object(), *same = json_array();
	const json_t *n;
	const char *k;
	size_t i;

	if (!groups || !drift || !added || !removed || !sgroups || !same)
		goto fail;
	json_array_foreach(current_nodes, i, n)
	{
		const char *host = json_string_value(json_object_get(n, "hostname"));
		const json_t *b = node_by_host(baseline_nodes, host), *c;
		json_t *d, *sv;
		size_t j;

		if (!host)
			continue;
		if (!b) {
			json_array_append_new(added, json_string(host));
			continue;
		}
		sv = json_array();
		d = so_snapshot_diff_same(json_object_get(b, "snapshot"),
					  json_object_get(n, "snapshot"), sv);
		json_array_foreach(d, j, c) group_add(groups, c, host);
		json_array_foreach(sv, j, c) group_add(sgroups, c, host);
		json_decref(d);
		json_decref(sv);
	}
	json_array_foreach(baseline_nodes, i, n)
	{
		const char *host = json_string_value(json_object_get(n, "hostname"));

		if (host && !node_by_host(current_nodes, host))
			json_array_append_new(removed, json_string(host));
	}
	json_object_foreach(groups, k, g) json_array_append(drift, g);
	sort_by_field(drift);
	json_decref(groups);
	json_object_foreach(sgroups, k, g) json_array_append(same, g);
	sort_by_field(same);
	json_decref(sgroups);
	return json_pack("{s:o, s:o, s:o, s:o}", "drift", drift, "same_version", same,
			 "nodes_added", added, "nodes_removed", removed);
fail:
	json_decref(sgroups);
	json_decref(same);
	json_decref(groups);
	json_decref(drift);
	json_decref(added);
	json_decref(removed);
	return NULL;
}

char *so_drift_line(const json_t *group)
{
	const json_t *nodes = json_object_get(group, "nodes");
	char *from = scalar_text_or(json_object_get(group, "from"), "(absent)");
	char *to = scalar_text_or(json_object_get(group, "to"), "(absent)");
	const char *field = json_string_value(json_object_get(group, "field"));
	char *line = NULL;
	int r;

	if (!from || !to) {
		free(from);
		free(to);
		return NULL;
	}
	if (json_array_size(nodes) == 1)
		r = asprintf(&line, "%s %s -> %s on %s", field ? field : "?", from, to,
			     json_string_value(json_array_get(nodes, 0)));
	else
		r = asprintf(&line, "%s %s -> %s on %zu nodes", field ? field : "?", from, to,
			     json_array_size(nodes));
	free(from);
	free(to);
	return r < 0 ? NULL : line;
}
