/* Verbs transport core: device/port queries, GID selection, PD/MR/CQ/RC QP lifetime, QP state
 * transitions and posting/polling. Owns every ibv object it creates and frees it on all paths. */
#include "nodeagent/bench/verbs.h"

#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#define VERBS_MAX_BUF	((size_t)1 << 30)
#define VERBS_MAX_GIDS	4096
#define VERBS_DEF_WR	64
#define VERBS_QP_INFO_V 1

struct verbs_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	unsigned int port;
	unsigned int nports; /* physical ports of the device (ports 1..nports) */
	char name[IBV_SYSFS_NAME_MAX];
};

struct verbs_ep {
	struct verbs_dev *dev;
	void *buf;
	size_t buf_size;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint32_t gid_index;
	uint32_t psn;
	struct verbs_port_info port;
	uint8_t gid[VERBS_GID_LEN];
};

/* ---- pure helpers -------------------------------------------------------------------------- */

static bool verbs_gid_is_zero(const uint8_t raw[VERBS_GID_LEN])
{
	for (size_t i = 0; i < VERBS_GID_LEN; i++)
		if (raw[i])
			return false;
	return true;
}

bool verbs_gid_is_ipv4_mapped(const uint8_t raw[VERBS_GID_LEN], struct in_addr *ret_addr)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (memcmp(raw, prefix, sizeof(prefix)) != 0)
		return false;
	if (ret_addr)
		memcpy(&ret_addr->s_addr, raw + 12, 4);
	return true;
}

int verbs_gid_select(const struct verbs_gid_entry *table, size_t n, enum verbs_link_layer ll,
		     const struct in_addr *ipv4, uint32_t *ret_index)
{
	const struct verbs_gid_entry *best = NULL;

	if ((!table && n > 0) || !ret_index)
		return -EINVAL;
	if (ll != VERBS_LINK_ETHERNET && ll != VERBS_LINK_IB)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		const struct verbs_gid_entry *e = &table[i];
		struct in_addr a;

		if (verbs_gid_is_zero(e->raw))
			continue;
		if (ll == VERBS_LINK_ETHERNET) {
			if (e->type != VERBS_GID_TYPE_ROCE_V2 ||
			    !verbs_gid_is_ipv4_mapped(e->raw, &a))
				continue;
			if (ipv4 && a.s_addr != ipv4->s_addr)
				continue;
		} else if (e->type != VERBS_GID_TYPE_IB && e->type != VERBS_GID_TYPE_ROCE_V1) {
			continue;
		}
		if (!best || e->index < best->index)
			best = e;
	}
	if (!best)
		return -RY_E_NOT_FOUND;
	*ret_index = best->index;
	return 0;
}

int verbs_gid_usable(const struct verbs_gid_entry *table, size_t n, enum verbs_link_layer ll,
		     uint32_t index, enum verbs_gid_type *ret_type)
{
	const struct verbs_gid_entry *e = NULL;
	bool ok;

	if ((!table && n > 0) || (ll != VERBS_LINK_ETHERNET && ll != VERBS_LINK_IB))
		return -EINVAL;
	for (size_t i = 0; i < n && !e; i++)
		if (table[i].index == index && !verbs_gid_is_zero(table[i].raw))
			e = &table[i];
	if (!e)
		return -RY_E_NOT_FOUND;
	ok = ll == VERBS_LINK_ETHERNET ? e->type == VERBS_GID_TYPE_ROCE_V2
				       : e->type == VERBS_GID_TYPE_IB;
	if (ok)
		return 0;
	if (ret_type)
		*ret_type = e->type;
	return -EPROTOTYPE;
}

void verbs_gid_format(const uint8_t raw[VERBS_GID_LEN], char out[VERBS_GID_STR_LEN])
{
	for (int i = 0; i < 8; i++)
		snprintf(out + i * 5, VERBS_GID_STR_LEN - (size_t)i * 5, "%02x%02x%s", raw[2 * i],
			 raw[2 * i + 1], i < 7 ? ":" : "");
}

static int verbs_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int verbs_gid_parse(const char *s, uint8_t ret_raw[VERBS_GID_LEN])
{
	uint8_t raw[VERBS_GID_LEN];

	if (!s || strlen(s) != VERBS_GID_STR_LEN - 1)
		return -EINVAL;
	for (int g = 0; g < 8; g++) {
		const char *p = s + g * 5;
		int v[4];

		for (int k = 0; k < 4; k++) {
			v[k] = verbs_hexval(p[k]);
			if (v[k] < 0)
				return -EINVAL;
		}
		if (g < 7 && p[4] != ':')
			return -EINVAL;
		raw[2 * g] = (uint8_t)(v[0] << 4 | v[1]);
		raw[2 * g + 1] = (uint8_t)(v[2] << 4 | v[3]);
	}
	memcpy(ret_raw, raw, sizeof(raw));
	return 0;
}

int verbs_gid_type_parse(const char *s, enum verbs_gid_type *ret_type)
{
	if (!s)
		return -EINVAL;
	if (strcmp(s, "RoCE v2") == 0)
		*ret_type = VERBS_GID_TYPE_ROCE_V2;
	else if (strcmp(s, "IB/RoCE v1") == 0)
		*ret_type = VERBS_GID_TYPE_IB;
	else if (strcmp(s, "RoCE v1") == 0)
		*ret_type = VERBS_GID_TYPE_ROCE_V1;
	else if (strcmp(s, "IB") == 0)
		*ret_type = VERBS_GID_TYPE_IB;
	else
		return -EINVAL;
	return 0;
}

int verbs_mtu_bytes(int mtu)
{
	return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128 << mtu : 0;
}

static void verbs_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t verbs_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void verbs_qp_info_pack(const struct verbs_qp_info *info, uint8_t out[VERBS_QP_INFO_WIRE])
{
	out[0] = VERBS_QP_INFO_V;
	out[1] = info->mtu;
	out[2] = (uint8_t)(info->lid >> 8);
	out[3] = (uint8_t)info->lid;
	verbs_put32(out + 4, info->qpn);
	verbs_put32(out + 8, info->psn);
	memcpy(out + 12, info->gid, VERBS_GID_LEN);
	verbs_put32(out + 28, (uint32_t)(info->addr >> 32));
	verbs_put32(out + 32, (uint32_t)info->addr);
	verbs_put32(out + 36, info->rkey);
}

int verbs_qp_info_unpack(const uint8_t *buf, size_t len, struct verbs_qp_info *ret_info)
{
	struct verbs_qp_info info;

	if (!buf || len != VERBS_QP_INFO_WIRE || buf[0] != VERBS_QP_INFO_V)
		return -RY_E_INVALID;
	info.mtu = buf[1];
	info.lid = (uint16_t)(buf[2] << 8 | buf[3]);
	info.qpn = verbs_get32(buf + 4);
	info.psn = verbs_get32(buf + 8);
	memcpy(info.gid, buf + 12, VERBS_GID_LEN);
	info.addr = (uint64_t)verbs_get32(buf + 28) << 32 | verbs_get32(buf + 32);
	info.rkey = verbs_get32(buf + 36);
	if (info.psn > 0xffffff || info.qpn > 0xffffff || verbs_mtu_bytes(info.mtu) == 0)
		return -RY_E_INVALID;
	*ret_info = info;
	return 0;
}

void verbs_conn_pack(const struct verbs_conn *c, uint8_t out[VERBS_CONN_WIRE])
{
	verbs_qp_info_pack(&c->qp, out);
	verbs_put32(out + VERBS_QP_INFO_WIRE, (uint32_t)(c->read_addr >> 32));
	verbs_put32(out + VERBS_QP_INFO_WIRE + 4, (uint32_t)c->read_addr);
	verbs_put32(out + VERBS_QP_INFO_WIRE + 8, c->read_rkey);
	out[VERBS_QP_INFO_WIRE + 12] = c->rd_atomic;
	memset(out + VERBS_QP_INFO_WIRE + 13, 0, 3);
}

int verbs_conn_unpack(const uint8_t *buf, size_t len, struct verbs_conn *ret_c)
{
	const uint8_t *x = buf + VERBS_QP_INFO_WIRE;
	struct verbs_conn c;
	int r;

	if (!buf || len != VERBS_CONN_WIRE)
		return -RY_E_INVALID;
	r = verbs_qp_info_unpack(buf, VERBS_QP_INFO_WIRE, &c.qp);
	if (r < 0)
		return r;
	c.read_addr = (uint64_t)verbs_get32(x) << 32 | verbs_get32(x + 4);
	c.read_rkey = verbs_get32(x + 8);
	c.rd_atomic = x[12];
	if (c.rd_atomic == 0)
		return -RY_E_INVALID;
	*ret_c = c;
	return 0;
}

double verbs_port_gbps(uint32_t speed, uint32_t speed_ex, uint8_t width)
{
	double lane, lanes;

	switch (speed_ex ? speed_ex : speed) {
	case 1:
		lane = 2.5;
		break;
	case 2:
		lane = 5.0;
		break;
	case 4:
	case 8:
		lane = 10.0;
		break;
	case 16:
		lane = 14.0;
		break;
	case 32:
		lane = 25.0;
		break;
	case 64:
		lane = 50.0;
		break;
	case 128:
		lane = 100.0;
		break;
	case 256:
		lane = 200.0;
		break;
	default:
		return 0;
	}
	switch (width) {
	case 1:
		lanes = 1;
		break;
	case 16:
		lanes = 2;
		break;
	case 2:
		lanes = 4;
		break;
	case 4:
		lanes = 8;
		break;
	case 8:
		lanes = 12;
		break;
	default:
		return 0;
	}
	return lane * lanes;
}

/* ---- host queries -------------------------------------------------------------------------- */

int verbs_ifaddr_ipv4(const char *ifname, struct in_addr *ret_addr)
{
	struct ifaddrs *list, *ifa;
	int r = -RY_E_NOT_FOUND;

	if (!ifname || !ret_addr)
		return -EINVAL;
	if (getifaddrs(&list) < 0)
		return -errno;
	for (ifa = list; ifa; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != AF_INET ||
		    strcmp(ifa->ifa_name, ifname) != 0)
			continue;
		*ret_addr = ((const struct sockaddr_in *)(const void *)ifa->ifa_addr)->sin_addr;
		r = 0;
		break;
	}
	freeifaddrs(list);
	return r;
}

/* Read <dir>/gids/<i> and <dir>/gid_attrs/types/<i>; 1 when it is a usable entry, 0 to skip. */
static int verbs_sysfs_gid_entry(const char *dir, unsigned long i, struct verbs_gid_entry *ret_e)
{
	char path[512], *val = NULL;
	struct verbs_gid_entry e = {.index = (uint32_t)i};
	int r;

	snprintf(path, sizeof(path), "%s/gids/%lu", dir, i);
	r = fs_read_attr(path, &val);
	if (r < 0)
		return 0;
	r = verbs_gid_parse(val, e.raw);
	free(val);
	val = NULL;
	if (r < 0 || verbs_gid_is_zero(e.raw))
		return 0;
	snprintf(path, sizeof(path), "%s/gid_attrs/types/%lu", dir, i);
	/* An unused entry has no type (reading it fails with EINVAL): skip it. */
	if (fs_read_attr(path, &val) < 0)
		return 0;
	r = verbs_gid_type_parse(val, &e.type);
	free(val);
	if (r < 0)
		return 0;
	*ret_e = e;
	return 1;
}

int verbs_sysfs_gid_table(const char *sysroot, const char *dev, unsigned int port,
			  struct verbs_gid_entry **ret_table, size_t *ret_n)
{
	char rel[256];
	char *dir = NULL, *gids = NULL;
	struct verbs_gid_entry *table = NULL;
	size_t n = 0, cap = 0;
	DIR *d = NULL;
	struct dirent *de;
	int r;

	if (!dev || !ret_table || !ret_n || strchr(dev, '/'))
		return -EINVAL;
	snprintf(rel, sizeof(rel), "/sys/class/infiniband/%s/ports/%u", dev, port);
	dir = fs_path_join(sysroot, rel);
	if (!dir || asprintf(&gids, "%s/gids", dir) < 0) {
		gids = NULL;
		r = -ENOMEM;
		goto out;
	}
	d = opendir(gids);
	if (!d) {
		r = -errno;
		goto out;
	}
	while ((de = readdir(d))) {
		char *end;
		unsigned long i = strtoul(de->d_name, &end, 10);
		struct verbs_gid_entry e;

		if (de->d_name[0] < '0' || de->d_name[0] > '9' || *end || i >= VERBS_MAX_GIDS)
			continue;
		if (verbs_sysfs_gid_entry(dir, i, &e) <= 0)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct verbs_gid_entry *t = realloc(table, ncap * sizeof(*t));
			if (!t) {
				r = -ENOMEM;
				goto out;
			}
			table = t;
			cap = ncap;
		}
		table[n++] = e;
	}
	*ret_table = table;
	*ret_n = n;
	table = NULL;
	r = 0;
out:
	if (d)
		closedir(d);
	free(table);
	free(gids);
	free(dir);
	return r;
}

/* ---- device -------------------------------------------------------------------------------- */

int verbs_dev_open(const char *name, unsigned int port, struct verbs_dev **ret_dev)
{
	struct ibv_device **list = NULL;
	struct ibv_device *ib = NULL;
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct verbs_dev *dev = NULL;
	int n = 0, r;

	if (!ret_dev || port < 1 || port > 255)
		return -EINVAL;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	list = ibv_get_device_list(&n);
	if (!list) {
		r = errno ? -errno : -ENODEV;
		goto fail;
	}
	for (int i = 0; i < n && !ib; i++)
		if (!name || strcmp(ibv_get_device_name(list[i]), name) == 0)
			ib = list[i];
	if (!ib) {
		r = -ENODEV;
		goto fail;
	}
	snprintf(dev->name, sizeof(dev->name), "%s", ibv_get_device_name(ib));
	dev->port = port;
	dev->ctx = ibv_open_device(ib);
	if (!dev->ctx) {
		r = errno ? -errno : -ENODEV;
		goto fail;
	}
	r = ibv_query_device(dev->ctx, &da);
	if (r) {
		r = -r;
		goto fail;
	}
	dev->nports = da.phys_port_cnt;
	/* Providers answer a missing port with -EINVAL or worse; say what it is. */
	if (port > dev->nports) {
		r = -ERANGE;
		goto fail;
	}
	r = ibv_query_port(dev->ctx, (uint8_t)port, &pa);
	if (r) {
		r = -r;
		goto fail;
	}
	dev->pd = ibv_alloc_pd(dev->ctx);
	if (!dev->pd) {
		r = errno ? -errno : -ENOMEM;
		goto fail;
	}
	ibv_free_device_list(list);
	log_debug("verbs: opened %s port %u", dev->name, port);
	*ret_dev = dev;
	return 0;
fail:
	if (list)
		ibv_free_device_list(list);
	verbs_dev_free(dev);
	return r;
}

int verbs_dev_names(char *out, size_t outlen)
{
	struct ibv_device **list;
	size_t used = 0;
	int n = 0;

	if (!out || outlen == 0)
		return -EINVAL;
	out[0] = '\0';
	list = ibv_get_device_list(&n);
	if (!list)
		return errno == ENOSYS || errno == 0 ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		int w = snprintf(out + used, outlen - used, "%s%s", i ? ", " : "",
				 ibv_get_device_name(list[i]));

		if (w < 0 || (size_t)w >= outlen - used)
			break;
		used += (size_t)w;
	}
	ibv_free_device_list(list);
	return n;
}

struct ibv_context *verbs_dev_context(const struct verbs_dev *dev)
{
	return dev->ctx;
}

struct ibv_pd *verbs_dev_pd(const struct verbs_dev *dev)
{
	return dev->pd;
}

void verbs_dev_free(struct verbs_dev *dev)
{
	if (!dev)
		return;
	if (dev->pd)
		(void)ibv_dealloc_pd(dev->pd);
	if (dev->ctx)
		(void)ibv_close_device(dev->ctx);
	free(dev);
}

const char *verbs_dev_name(const struct verbs_dev *dev)
{
	return dev->name;
}

unsigned int verbs_dev_port(const struct verbs_dev *dev)
{
	return dev->port;
}

int verbs_dev_port_count(const char *name, char *ret_name, size_t namelen, unsigned int *ret_n)
{
	struct verbs_dev *dev = NULL;
	int r;

	if (!ret_n || (!ret_name && namelen))
		return -EINVAL;
	/* Port 1 exists on every device. */
	r = verbs_dev_open(name, 1, &dev);
	if (r < 0)
		return r;
	if (namelen)
		snprintf(ret_name, namelen, "%s", dev->name);
	*ret_n = dev->nports;
	verbs_dev_free(dev);
	return 0;
}

static enum verbs_link_layer verbs_link_layer_from_ibv(uint8_t ll)
{
	switch (ll) {
	case IBV_LINK_LAYER_ETHERNET:
		return VERBS_LINK_ETHERNET;
	case IBV_LINK_LAYER_INFINIBAND:
	case IBV_LINK_LAYER_UNSPECIFIED: /* old drivers: InfiniBand */
		return VERBS_LINK_IB;
	default:
		return VERBS_LINK_UNKNOWN;
	}
}

int verbs_dev_query_port(struct verbs_dev *dev, struct verbs_port_info *ret_info)
{
	struct ibv_port_attr pa;
	int r;

	if (!dev || !ret_info)
		return -EINVAL;
	r = ibv_query_port(dev->ctx, (uint8_t)dev->port, &pa);
	if (r)
		return -r;
	*ret_info = (struct verbs_port_info){
		.state = pa.state,
		.active_mtu = pa.active_mtu,
		.link_layer = verbs_link_layer_from_ibv(pa.link_layer),
		.lid = pa.lid,
		.gid_table_len = (uint32_t)(pa.gid_tbl_len > 0 ? pa.gid_tbl_len : 0),
	};
	return 0;
}

static enum verbs_gid_type verbs_gid_type_from_ibv(uint32_t t)
{
	switch (t) {
	case IBV_GID_TYPE_ROCE_V2:
		return VERBS_GID_TYPE_ROCE_V2;
	case IBV_GID_TYPE_ROCE_V1:
		return VERBS_GID_TYPE_ROCE_V1;
	default:
		return VERBS_GID_TYPE_IB;
	}
}

int verbs_dev_gid_table(struct verbs_dev *dev, struct verbs_gid_entry **ret_table, size_t *ret_n)
{
	struct verbs_port_info pi;
	struct ibv_gid_entry *ibt = NULL;
	struct verbs_gid_entry *table = NULL;
	size_t n = 0;
	ssize_t k;
	int r;

	if (!dev || !ret_table || !ret_n)
		return -EINVAL;
	r = verbs_dev_query_port(dev, &pi);
	if (r < 0)
		return r;
	if (pi.gid_table_len == 0 || pi.gid_table_len > VERBS_MAX_GIDS)
		return -RY_E_INVALID;
	ibt = calloc(pi.gid_table_len, sizeof(*ibt));
	table = calloc(pi.gid_table_len, sizeof(*table));
	if (!ibt || !table) {
		r = -ENOMEM;
		goto out;
	}
	k = ibv_query_gid_table(dev->ctx, ibt, pi.gid_table_len, 0);
	if (k < 0) {
		/* Old kernels without the GID table ioctl: read sysfs instead. */
		log_debug("verbs: ibv_query_gid_table on %s: %s; using sysfs", dev->name,
			  strerror((int)-k));
		free(table);
		table = NULL;
		r = verbs_sysfs_gid_table(NULL, dev->name, dev->port, &table, &n);
		if (r < 0)
			goto out;
	} else {
		for (ssize_t i = 0; i < k; i++) {
			if (ibt[i].port_num != dev->port)
				continue;
			table[n].index = ibt[i].gid_index;
			memcpy(table[n].raw, ibt[i].gid.raw, VERBS_GID_LEN);
			table[n].type = verbs_gid_type_from_ibv(ibt[i].gid_type);
			n++;
		}
	}
	*ret_table = table;
	*ret_n = n;
	table = NULL;
	r = 0;
out:
	free(ibt);
	free(table);
	return r;
}

int verbs_dev_pick_gid(struct verbs_dev *dev, const struct in_addr *ipv4, uint32_t *ret_index,
		       uint8_t ret_gid[VERBS_GID_LEN])
{
	struct verbs_port_info pi;
	struct verbs_gid_entry *table = NULL;
	size_t n = 0;
	uint32_t idx;
	int r;

	if (!dev || !ret_index || !ret_gid)
		return -EINVAL;
	r = verbs_dev_query_port(dev, &pi);
	if (r < 0)
		return r;
	r = verbs_dev_gid_table(dev, &table, &n);
	if (r < 0)
		return r;
	r = verbs_gid_select(table, n, pi.link_layer, ipv4, &idx);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		if (table[i].index == idx)
			memcpy(ret_gid, table[i].raw, VERBS_GID_LEN);
	*ret_index = idx;
out:
	free(table);
	return r;
}

/* ---- endpoint ------------------------------------------------------------------------------ */

int verbs_ep_new(struct verbs_dev *dev, const struct verbs_ep_attr *attr, struct verbs_ep **ret_ep)
{
	struct verbs_ep *ep = NULL;
	uint32_t max_send, max_recv, rnd;
	union ibv_gid gid;
	int r;

	if (!dev || !attr || !ret_ep || attr->buf_size == 0 || attr->buf_size > VERBS_MAX_BUF)
		return -EINVAL;
	max_send = attr->max_send_wr ? attr->max_send_wr : VERBS_DEF_WR;
	max_recv = attr->max_recv_wr ? attr->max_recv_wr : VERBS_DEF_WR;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	ep->dev = dev;
	ep->gid_index = attr->gid_index;
	r = verbs_dev_query_port(dev, &ep->port);
	if (r < 0)
		goto fail;
	r = ibv_query_gid(dev->ctx, (uint8_t)dev->port, (int)attr->gid_index, &gid);
	if (r) {
		r = r > 0 ? -r : -EINVAL;
		goto fail;
	}
	memcpy(ep->gid, gid.raw, VERBS_GID_LEN);
	/* ibv_query_gid() reports an unused entry as success with a zero GID. */
	if (verbs_gid_is_zero(ep->gid)) {
		r = -EINVAL;
		goto fail;
	}
	r = util_random_bytes(&rnd, sizeof(rnd));
	if (r < 0)
		goto fail;
	ep->psn = rnd & 0xffffff;
	ep->buf_size = attr->buf_size;
	ep->buf = aligned_alloc(4096, (attr->buf_size + 4095) & ~(size_t)4095);
	if (!ep->buf) {
		r = -ENOMEM;
		goto fail;
	}
	memset(ep->buf, 0, ep->buf_size);
	ep->mr = ibv_reg_mr(dev->pd, ep->buf, ep->buf_size,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ);
	if (!ep->mr) {
		r = errno ? -errno : -ENOMEM;
		goto fail;
	}
	ep->cq = ibv_create_cq(dev->ctx, (int)(max_send + max_recv), NULL, NULL, 0);
	if (!ep->cq) {
		r = errno ? -errno : -ENOMEM;
		goto fail;
	}
	struct ibv_qp_init_attr qa = {
		.send_cq = ep->cq,
		.recv_cq = ep->cq,
		.cap = {.max_send_wr = max_send,
			.max_recv_wr = max_recv,
			.max_send_sge = 1,
			.max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 0,
	};
	ep->qp = ibv_create_qp(dev->pd, &qa);
	if (!ep->qp) {
		r = errno ? -errno : -ENOMEM;
		goto fail;
	}
	log_debug("verbs: %s qp %u psn %u gid index %u", dev->name, ep->qp->qp_num, ep->psn,
		  ep->gid_index);
	*ret_ep = ep;
	return 0;
fail:
	verbs_ep_free(ep);
	return r;
}

void verbs_ep_free(struct verbs_ep *ep)
{
	if (!ep)
		return;
	if (ep->qp)
		(void)ibv_destroy_qp(ep->qp);
	if (ep->cq)
		(void)ibv_destroy_cq(ep->cq);
	if (ep->mr)
		(void)ibv_dereg_mr(ep->mr);
	free(ep->buf);
	free(ep);
}

void *verbs_ep_buf(const struct verbs_ep *ep)
{
	return ep->buf;
}

size_t verbs_ep_buf_size(const struct verbs_ep *ep)
{
	return ep->buf_size;
}

void verbs_ep_local_info(const struct verbs_ep *ep, struct verbs_qp_info *ret_info)
{
	*ret_info = (struct verbs_qp_info){
		.qpn = ep->qp->qp_num,
		.psn = ep->psn,
		.lid = ep->port.lid,
		.mtu = (uint8_t)ep->port.active_mtu,
		.addr = (uint64_t)(uintptr_t)ep->buf,
		.rkey = ep->mr->rkey,
	};
	memcpy(ret_info->gid, ep->gid, VERBS_GID_LEN);
}

int verbs_qp_connect(struct ibv_qp *qp, const struct verbs_path *path,
		     const struct verbs_qp_info *peer)
{
	struct ibv_qp_attr a;
	int mtu, r;

	if (!qp || !path || !peer || verbs_mtu_bytes(peer->mtu) == 0 || peer->psn > 0xffffff ||
	    verbs_mtu_bytes(path->mtu) == 0 || path->psn > 0xffffff || path->rd_atomic == 0 ||
	    path->dest_rd_atomic == 0 || path->service_level > 15 || path->port < 1 ||
	    path->port > 255)
		return -EINVAL;
	mtu = peer->mtu < path->mtu ? peer->mtu : path->mtu;

	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = (uint8_t)path->port,
		.qp_access_flags =
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	r = ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (r)
		goto fail;

	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTR,
		.path_mtu = (enum ibv_mtu)mtu,
		.dest_qp_num = peer->qpn,
		.rq_psn = peer->psn,
		.max_dest_rd_atomic = path->dest_rd_atomic,
		.min_rnr_timer = 12,
		.ah_attr = {.dlid = peer->lid,
			    .sl = path->service_level,
			    .port_num = (uint8_t)path->port},
	};
	/* RoCE always routes by GID; on IB a GRH is only needed across subnets (not here). */
	if (path->link_layer == VERBS_LINK_ETHERNET) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, peer->gid, VERBS_GID_LEN);
		a.ah_attr.grh.sgid_index = (uint8_t)path->gid_index;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.grh.traffic_class = path->traffic_class;
	}
	r = ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (r)
		goto fail;

	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTS,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.sq_psn = path->psn,
		.max_rd_atomic = path->rd_atomic,
	};
	r = ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (r)
		goto fail;
	log_debug("verbs: qp %u -> peer qp %u RTS, mtu %d", qp->qp_num, peer->qpn,
		  verbs_mtu_bytes(mtu));
	return 0;
fail:
	log_debug("verbs: ibv_modify_qp on qp %u: %s", qp->qp_num, strerror(r));
	return r > 0 ? -r : -EINVAL;
}

int verbs_ep_connect(struct verbs_ep *ep, const struct verbs_qp_info *peer)
{
	struct verbs_path path;

	if (!ep)
		return -EINVAL;
	path = (struct verbs_path){
		.port = ep->dev->port,
		.link_layer = ep->port.link_layer,
		.mtu = ep->port.active_mtu,
		.gid_index = ep->gid_index,
		.rd_atomic = 1,
		.dest_rd_atomic = 1,
		.psn = ep->psn,
	};
	return verbs_qp_connect(ep->qp, &path, peer);
}

static int verbs_ep_range(const struct verbs_ep *ep, size_t off, size_t len)
{
	if (len == 0 || len > UINT32_MAX || off > ep->buf_size || len > ep->buf_size - off)
		return -ERANGE;
	return 0;
}

int verbs_ep_post_recv(struct verbs_ep *ep, size_t off, size_t len, uint64_t wr_id)
{
	struct ibv_recv_wr *bad = NULL;
	int r;

	if (!ep)
		return -EINVAL;
	r = verbs_ep_range(ep, off, len);
	if (r < 0)
		return r;
	struct ibv_sge sge = {
		.addr = (uintptr_t)ep->buf + off, .length = (uint32_t)len, .lkey = ep->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1};
	r = ibv_post_recv(ep->qp, &wr, &bad);
	return r > 0 ? -r : r;
}

static int verbs_ep_post(struct verbs_ep *ep, enum ibv_wr_opcode op, size_t off, size_t len,
			 uint64_t remote_addr, uint32_t rkey, uint64_t wr_id)
{
	struct ibv_send_wr *bad = NULL;
	int r;

	if (!ep)
		return -EINVAL;
	r = verbs_ep_range(ep, off, len);
	if (r < 0)
		return r;
	struct ibv_sge sge = {
		.addr = (uintptr_t)ep->buf + off, .length = (uint32_t)len, .lkey = ep->mr->lkey};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	};
	if (op == IBV_WR_RDMA_WRITE) {
		wr.wr.rdma.remote_addr = remote_addr;
		wr.wr.rdma.rkey = rkey;
	}
	r = ibv_post_send(ep->qp, &wr, &bad);
	return r > 0 ? -r : r;
}

int verbs_ep_post_send(struct verbs_ep *ep, size_t off, size_t len, uint64_t wr_id)
{
	return verbs_ep_post(ep, IBV_WR_SEND, off, len, 0, 0, wr_id);
}

int verbs_ep_post_write(struct verbs_ep *ep, size_t off, size_t len, uint64_t remote_addr,
			uint32_t rkey, uint64_t wr_id)
{
	return verbs_ep_post(ep, IBV_WR_RDMA_WRITE, off, len, remote_addr, rkey, wr_id);
}

int verbs_ep_poll(struct verbs_ep *ep, int timeout_ms, struct verbs_completion *ret_c)
{
	struct ibv_wc wc;
	int64_t deadline;
	int k;

	if (!ep || !ret_c || timeout_ms < 0)
		return -EINVAL;
	deadline = util_now_mono_ms() + timeout_ms;
	/* Busy poll: the cost of a benchmark transport; the deadline bounds it. */
	while ((k = ibv_poll_cq(ep->cq, 1, &wc)) == 0)
		if (util_now_mono_ms() >= deadline)
			return -ETIMEDOUT;
	if (k < 0)
		return -EIO;
	if (wc.status != IBV_WC_SUCCESS) {
		log_debug("verbs: qp %u wr %llu completed with %s", ep->qp->qp_num,
			  (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
		return -EIO;
	}
	*ret_c = (struct verbs_completion){
		.wr_id = wc.wr_id,
		.op = wc.opcode == IBV_WC_RECV	       ? VERBS_OP_RECV
		      : wc.opcode == IBV_WC_RDMA_WRITE ? VERBS_OP_WRITE
						       : VERBS_OP_SEND,
		.byte_len = wc.byte_len,
	};
	return 0;
}
