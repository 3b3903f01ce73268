/* RDMA facts: every device under sys/class/infiniband with its identity, PCI function, netdevs
 * and ports (state, rate, link layer, LIDs, MTU, non-zero GIDs with type and netdev). */
#include "nodeagent/facts/facts_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FACTS_MAX_RDMA_DEVICES 256
#define FACTS_MAX_PORTS	       32
#define FACTS_MAX_GIDS	       1024

#define IB_DIR "sys/class/infiniband"

/* Copy an attribute into obj[key] verbatim. */
static void facts_rdma_attr(struct facts_ctx *ctx, json_t *obj, unsigned flags, const char *key,
			    const char *dev, const char *attr)
{
	char *s;

	if (facts_read_attrf(ctx, flags, &s, IB_DIR "/%s/%s", dev, attr) < 0)
		return;
	facts_set_str(ctx, obj, key, s);
	free(s);
}

/* "4: ACTIVE" style attribute into <key> and <key>_num. */
static void facts_rdma_num_name(struct facts_ctx *ctx, json_t *port, const char *dev,
				const char *pn, const char *key)
{
	const char *name;
	char numkey[32];
	long long num;
	char *s;

	if (facts_read_attrf(ctx, 0, &s, IB_DIR "/%s/ports/%s/%s", dev, pn, key) < 0)
		return;
	if (facts_parse_num_name(s, &num, &name) < 0) {
		facts_warn(ctx, "/" IB_DIR "/%s/ports/%s/%s: malformed value", dev, pn, key);
	} else {
		snprintf(numkey, sizeof(numkey), "%s_num", key);
		facts_set_str(ctx, port, key, name);
		facts_set_int(ctx, port, numkey, num);
	}
	free(s);
}

/* "400 Gb/sec (4X NDR)" into rate and rate_gbps (integer when whole, e.g. not SDR 1X 2.5). */
static void facts_rdma_rate(struct facts_ctx *ctx, json_t *port, const char *dev, const char *pn)
{
	char *s, *end;
	double g;

	if (facts_read_attrf(ctx, 0, &s, IB_DIR "/%s/ports/%s/rate", dev, pn) < 0)
		return;
	errno = 0;
	g = (s[0] >= '0' && s[0] <= '9') ? strtod(s, &end) : -1;
	if (g <= 0 || errno || strncmp(end, " Gb/sec", 7) != 0) {
		facts_warn(ctx, "/" IB_DIR "/%s/ports/%s/rate: malformed value", dev, pn);
	} else {
		facts_set_str(ctx, port, "rate", s);
		if (g == (double)(long long)g)
			facts_set_int(ctx, port, "rate_gbps", (long long)g);
		else
			facts_set_new(ctx, port, "rate_gbps", json_real(g));
	}
	free(s);
}

static void facts_rdma_lid(struct facts_ctx *ctx, json_t *port, const char *dev, const char *pn,
			   const char *key)
{
	long long lid;
	char *s;

	if (facts_read_attrf(ctx, FACTS_OPTIONAL, &s, IB_DIR "/%s/ports/%s/%s", dev, pn, key) < 0)
		return;
	if (strncmp(s, "0x", 2) != 0 || facts_parse_int(s, 16, &lid) < 0 || lid > 0xffff)
		facts_warn(ctx, "/" IB_DIR "/%s/ports/%s/%s: malformed value", dev, pn, key);
	else
		facts_set_int(ctx, port, key, lid);
	free(s);
}

/* A GID as sysfs prints it: eight groups of four hex digits. */
static bool facts_gid_ok(const char *g)
{
	if (strlen(g) != 39)
		return false;
	for (int i = 0; i < 39; i++) {
		if (i % 5 == 4) {
			if (g[i] != ':')
				return false;
		} else if (!strchr("0123456789abcdefABCDEF", g[i])) {
			return false;
		}
	}
	return true;
}

static void facts_rdma_gid(struct facts_ctx *ctx, json_t *gids, const char *dev, const char *pn,
			   const char *idx, json_t *port)
{
	static const char v4_prefix[] = "0000:0000:0000:0000:0000:ffff:";
	long long index;
	json_t *gid;
	char *s, *t;

	if (facts_parse_int(idx, 10, &index) < 0)
		return;
	if (facts_read_attrf(ctx, 0, &s, IB_DIR "/%s/ports/%s/gids/%s", dev, pn, idx) < 0)
		return;
	if (!facts_gid_ok(s)) {
		facts_warn(ctx, "/" IB_DIR "/%s/ports/%s/gids/%s: malformed GID", dev, pn, idx);
		goto out;
	}
	if (strcmp(s, "0000:0000:0000:0000:0000:0000:0000:0000") == 0)
		goto out;
	gid = json_object();
	if (!gid) {
		ctx->oom = true;
		goto out;
	}
	facts_set_int(ctx, gid, "index", index);
	facts_set_str(ctx, gid, "gid", s);
	if (strncmp(s, v4_prefix, sizeof(v4_prefix) - 1) == 0) {
		unsigned a, b;
		char ip[32];

		if (sscanf(s + sizeof(v4_prefix) - 1, "%4x:%4x", &a, &b) == 2) {
			snprintf(ip, sizeof(ip), "%u.%u.%u.%u", (a >> 8) & 0xff, a & 0xff,
				 (b >> 8) & 0xff, b & 0xff);
			facts_set_str(ctx, gid, "ipv4", ip);
		}
	}
	if (facts_read_attrf(ctx, FACTS_OPTIONAL, &t, IB_DIR "/%s/ports/%s/gid_attrs/types/%s", dev,
			     pn, idx) == 0) {
		facts_set_str(ctx, gid, "type", t);
		free(t);
	}
	/* IB ports have no netdev per GID: reading fails by design */
	if (facts_read_attrf(ctx, FACTS_QUIET, &t, IB_DIR "/%s/ports/%s/gid_attrs/ndevs/%s", dev,
			     pn, idx) == 0) {
		if (t[0]) {
			facts_set_str(ctx, gid, "netdev", t);
			if (!json_object_get(port, "netdev"))
				facts_set_str(ctx, port, "netdev", t);
		}
		free(t);
	}
	facts_append_new(ctx, gids, gid);
out:
	free(s);
}

/* Effective RoCE MTU as the kernel reports active_mtu (iboe_get_mtu): the netdev MTU less the
 * RoCE v2 headers (GRH 40, UDP 8, BTH 12, XRC 4, AtomicETH 28, ICRC 4 = 96 bytes), rounded down
 * to an IB MTU. 0 when too small. */
static int facts_roce_mtu(long long netdev_mtu)
{
	static const int mtus[] = {4096, 2048, 1024, 512, 256};
	long long eff = netdev_mtu - 96;

	for (size_t i = 0; i < sizeof(mtus) / sizeof(mtus[0]); i++)
		if (eff >= mtus[i])
			return mtus[i];
	return 0;
}

/* Port netdev when no GID named one: the device netdev whose dev_port is port-1, or the only
 * netdev of a single-port device. */
static void facts_rdma_port_netdev(struct facts_ctx *ctx, json_t *port, const char *dev,
				   long long pnum, size_t nports, const json_t *netdevs)
{
	const json_t *nd;
	long long dp;
	size_t i;
	char *s;

	if (json_object_get(port, "netdev"))
		return;
	json_array_foreach(netdevs, i, nd)
	{
		if (facts_read_attrf(ctx, FACTS_QUIET, &s, IB_DIR "/%s/device/net/%s/dev_port", dev,
				     json_string_value(nd)) < 0)
			continue;
		if (facts_parse_int(s, 10, &dp) == 0 && dp == pnum - 1) {
			free(s);
			facts_set_new(ctx, port, "netdev", json_copy((json_t *)nd));
			return;
		}
		free(s);
	}
	if (nports == 1 && json_array_size(netdevs) == 1)
		facts_set_new(ctx, port, "netdev", json_copy(json_array_get(netdevs, 0)));
}

static void facts_rdma_port(struct facts_ctx *ctx, json_t *ports, const char *dev, const char *pn,
			    size_t nports, const json_t *netdevs)
{
	struct facts_names gidn = {0};
	const char *ll, *netdev;
	long long pnum, mtu;
	json_t *port, *gids;
	char *s;

	if (facts_parse_int(pn, 10, &pnum) < 0 || pnum < 1 || pnum > 255)
		return;
	port = json_object();
	if (!port) {
		ctx->oom = true;
		return;
	}
	facts_set_int(ctx, port, "port", pnum);
	facts_rdma_num_name(ctx, port, dev, pn, "state");
	facts_rdma_num_name(ctx, port, dev, pn, "phys_state");
	facts_rdma_rate(ctx, port, dev, pn);
	if (facts_read_attrf(ctx, 0, &s, IB_DIR "/%s/ports/%s/link_layer", dev, pn) == 0) {
		facts_set_str(ctx, port, "link_layer", s);
		free(s);
	}
	ll = json_string_value(json_object_get(port, "link_layer"));
	/* LIDs only mean something on InfiniBand; Ethernet ports show 0x0 */
	if (ll && strcmp(ll, "InfiniBand") == 0) {
		facts_rdma_lid(ctx, port, dev, pn, "lid");
		facts_rdma_lid(ctx, port, dev, pn, "sm_lid");
	}

	gids = json_array();
	if (!gids) {
		ctx->oom = true;
		goto out;
	}
	if (facts_list_dirf(ctx, FACTS_OPTIONAL, &gidn, IB_DIR "/%s/ports/%s/gids", dev, pn) == 0) {
		for (size_t i = 0; i < gidn.n && i < FACTS_MAX_GIDS && !ctx->oom; i++)
			facts_rdma_gid(ctx, gids, dev, pn, gidn.v[i], port);
	}
	facts_rdma_port_netdev(ctx, port, dev, pnum, nports, netdevs);

	netdev = json_string_value(json_object_get(port, "netdev"));
	if (ll && strcmp(ll, "Ethernet") == 0 && netdev &&
	    facts_read_attrf(ctx, FACTS_OPTIONAL, &s, "sys/class/net/%s/mtu", netdev) == 0) {
		if (facts_parse_int(s, 10, &mtu) < 0)
			facts_warn(ctx, "/sys/class/net/%s/mtu: malformed value", netdev);
		else if (facts_roce_mtu(mtu))
			facts_set_int(ctx, port, "active_mtu", facts_roce_mtu(mtu));
		free(s);
	}
	facts_set_new(ctx, port, "gids", gids);
out:
	facts_names_done(&gidn);
	facts_append_new(ctx, ports, port);
}

static void facts_rdma_device(struct facts_ctx *ctx, json_t *list, const char *name)
{
	struct facts_names ports = {0}, nets = {0};
	json_t *dev, *netdevs = NULL, *portlist = NULL;
	long long numa;
	char *s;

	dev = json_object();
	if (!dev) {
		ctx->oom = true;
		return;
	}
	facts_set_str(ctx, dev, "name", name);
	facts_rdma_attr(ctx, dev, 0, "fw_ver", name, "fw_ver");
	facts_rdma_attr(ctx, dev, 0, "node_guid", name, "node_guid");
	facts_rdma_attr(ctx, dev, 0, "sys_image_guid", name, "sys_image_guid");
	facts_rdma_attr(ctx, dev, FACTS_OPTIONAL, "board_id", name, "board_id");
	facts_rdma_attr(ctx, dev, FACTS_OPTIONAL, "hca_type", name, "hca_type");
	if (facts_read_attrf(ctx, 0, &s, IB_DIR "/%s/node_type", name) == 0) {
		const char *t;

		if (facts_parse_num_name(s, &numa, &t) == 0)
			facts_set_str(ctx, dev, "node_type", t);
		else
			facts_warn(ctx, "/" IB_DIR "/%s/node_type: malformed value", name);
		free(s);
	}
	/* software devices (rxe, siw) have no PCI function */
	if (facts_readlinkf(ctx, FACTS_OPTIONAL, &s, IB_DIR "/%s/device", name) == 0) {
		const char *base = strrchr(s, '/');

		facts_set_str(ctx, dev, "pci_address", base ? base + 1 : s);
		free(s);
	}
	if (facts_read_attrf(ctx, FACTS_OPTIONAL, &s, IB_DIR "/%s/device/numa_node", name) == 0) {
		if (facts_parse_int(s, 10, &numa) == 0)
			facts_set_int(ctx, dev, "numa_node", numa);
		else
			facts_warn(ctx, "/" IB_DIR "/%s/device/numa_node: malformed value", name);
		free(s);
	}
	netdevs = json_array();
	portlist = json_array();
	if (!netdevs || !portlist) {
		ctx->oom = true;
		goto out;
	}
	if (facts_list_dirf(ctx, FACTS_OPTIONAL, &nets, IB_DIR "/%s/device/net", name) == 0)
		for (size_t i = 0; i < nets.n; i++)
			facts_append_str(ctx, netdevs, nets.v[i]);
	if (facts_list_dirf(ctx, 0, &ports, IB_DIR "/%s/ports", name) == 0)
		for (size_t i = 0; i < ports.n && i < FACTS_MAX_PORTS && !ctx->oom; i++)
			facts_rdma_port(ctx, portlist, name, ports.v[i], ports.n, netdevs);
	facts_set_new(ctx, dev, "netdevs", netdevs);
	facts_set_new(ctx, dev, "ports", portlist);
	netdevs = portlist = NULL;
out:
	json_decref(netdevs);
	json_decref(portlist);
	facts_names_done(&nets);
	facts_names_done(&ports);
	facts_append_new(ctx, list, dev);
}

int facts_collect_rdma(struct facts_ctx *ctx, json_t *facts)
{
	struct facts_names names = {0};
	json_t *rdma, *list;

	rdma = json_object();
	list = json_array();
	if (!rdma || !list) {
		json_decref(rdma);
		json_decref(list);
		return -ENOMEM;
	}
	/* no class directory: ib_core is not loaded, so there are no devices */
	if (facts_list_dirf(ctx, FACTS_OPTIONAL, &names, IB_DIR) == 0) {
		for (size_t i = 0; i < names.n && i < FACTS_MAX_RDMA_DEVICES && !ctx->oom; i++)
			facts_rdma_device(ctx, list, names.v[i]);
	}
	facts_set_new(ctx, rdma, "devices", list);
	facts_set_new(ctx, facts, "rdma", rdma);
	facts_names_done(&names);
	return ctx->oom ? -ENOMEM : 0;
}
