/* The benchmark engine's "verbs" transport: RC QPs over libibverbs on the engine's buffers,
 * connected through the engine's control connection (QP info exchange) or with rdma_cm
 * (--rdma-cm); latency ping-pongs and windowed bandwidth primitives with moderated completions.
 * Owns every verbs / rdma_cm object it creates and frees it in close() on every path. */
#include "nodeagent/bench/bench.h"
#include "nodeagent/bench/verbs.h"

#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TV_LAT_INLINE	 220 /* perftest's default inline size for latency tests */
#define TV_LAT_SIG	 16  /* latency: one signaled send work request in this many */
#define TV_LAT_SQ	 (2 * TV_LAT_SIG)
#define TV_LAT_RQ	 4
#define TV_LAT_WC	 1  /* completions per poll while a ping-pong waits (as perftest) */
#define TV_LAT_SLOTS	 2  /* the engine's latency slots (bench_step.slots) */
#define TV_BW_SIG_MAX	 64 /* bandwidth: at most this many WRs per completion */
#define TV_WC_BATCH	 64
#define TV_SPIN_CHECK	 256	     /* busy loops look at the clock / CQ this often */
#define TV_EXCH_MAGIC	 0x52595642u /* "RYVB" */
#define TV_EXCH_VERSION	 1u
#define TV_EXCH_HDR	 8
#define TV_CM_RESOLVE_MS 2000
#define TV_SEQ_MASK	 ((1ull << 56) - 1)

/* wr_id: kind in bits 62-63, QP in bits 56-61, a sequence or message number below. */
enum tv_wr_kind { TV_WR_SQ = 0, TV_WR_RECV = 1 };
#define TV_WRID(kind, qp, n) (((uint64_t)(kind) << 62) | ((uint64_t)(qp) << 56) | ((n)&TV_SEQ_MASK))
#define TV_WRID_KIND(id)     ((unsigned int)((id) >> 62))
#define TV_WRID_QP(id)	     ((uint32_t)(((id) >> 56) & 0x3f))
#define TV_WRID_N(id)	     ((uint64_t)((id)&TV_SEQ_MASK))

/* How a latency iteration detects the peer's message. */
enum tv_lat_mode {
	TV_LAT_SEND,	   /* send/recv: a receive completion */
	TV_LAT_WRITE_POLL, /* RDMA write: poll the last byte of the rx slot (as perftest) */
	TV_LAT_WRITE_IMM,  /* RDMA write with immediate: a receive completion (data checks:
			      the slot's bytes are the engine's pattern, no room for a marker) */
	TV_LAT_READ,	   /* RDMA read: the read's completion */
};

/* A signaled send work request still to complete: its sequence number and the message count
 * that its completion proves done. */
struct tv_sig {
	uint64_t seq;
	uint64_t msgs;
};

struct tv_qp {
	struct ibv_qp *qp;
	struct rdma_cm_id *id; /* rdma_cm mode: owns qp */
	struct ibv_mr *tx_mr, *rx_mr;
	struct verbs_conn peer; /* peer.qp.addr/rkey: its rx region; read_addr/rkey: its tx */
	/* send queue: work requests posted / known complete, signaled ones in flight */
	uint64_t wr_posted, wr_done;
	struct tv_sig *sig;
	uint32_t sig_cap, sig_head, sig_n;
	bool tail_unsignaled;
	/* bandwidth messages of the current step */
	uint64_t msgs_posted, msgs_done, msgs_reported;
	/* receive queue: posted / completed (a surplus at a step's end is reset away) */
	uint64_t recv_posted, recv_done;
};

struct tv {
	const struct bench_ctx *ctx;
	const struct bench_params *p;
	struct verbs_dev *dev;	   /* side-channel mode: owns ibctx and pd */
	struct ibv_context *ibctx; /* borrowed */
	struct ibv_pd *pd;	   /* owned in rdma_cm mode */
	struct ibv_cq *cq;
	struct rdma_event_channel *ec;
	struct rdma_cm_id *listen_id;
	struct tv_qp *q;
	uint32_t nq;
	struct bench_step step;
	enum tv_lat_mode lat_mode;
	uint64_t lat_total; /* iterations of a latency step; UINT64_MAX in duration mode */
	bool lat_have_ping; /* server: the ping of the current iteration arrived */
	bool lat_recv_got;  /* a receive completed that tv_lat_wait() has not taken yet */
	uint64_t lat_recv_n;
	struct ibv_send_wr lat_wr[TV_LAT_SLOTS]; /* per slot, built by prepare() */
	struct ibv_sge lat_sge[TV_LAT_SLOTS];
	unsigned int lat_flags;
	uint32_t sig_every;
	uint32_t inline_size, max_send_wr, max_recv_wr;
	uint8_t rd_init, rd_resp; /* our device's read depths as initiator / responder */
	uint8_t port;		  /* HCA port: -i (side channel) or the one rdma_cm bound to */
	/* for env() */
	char dev_name[BENCH_DEV_LEN];
	enum verbs_link_layer ll;
	int mtu; /* enum ibv_mtu of the connected path */
	int32_t gid_index;
	uint8_t gid[VERBS_GID_LEN];
	double gbps;
	uint8_t traffic_class, service_level; /* what the QPs were given */
	char mem_path[16];		      /* device memory: "dmabuf" or "peermem" */
	char mem_note[BENCH_ERR_LEN];	      /* why --gpudirect auto did not use dma-buf */
};

__attribute__((format(printf, 3, 4))) static int tv_err(char *err, int r, const char *fmt, ...)
{
	va_list ap;

	if (err && err[0] == '\0') {
		va_start(ap, fmt);
		vsnprintf(err, BENCH_ERR_LEN, fmt, ap);
		va_end(ap);
	}
	return r;
}

static bool tv_needs_recv(const struct bench_params *p)
{
	const struct bench_mem_ops *mem = bench_mem_find(p->mem, NULL);

	return p->op == BENCH_OP_SEND || (p->kind == BENCH_LAT && p->op == BENCH_OP_WRITE &&
					  (p->check_data || (mem && mem->device)));
}

/* The HCA port of the side-channel mode: -i, else port 1. */
static uint8_t tv_ib_port(const struct bench_params *p)
{
	return p->ib_port ? p->ib_port : BENCH_IB_PORT_DEF;
}

/* ---- validate ------------------------------------------------------------------------------ */

static const char *tv_gid_type_name(enum verbs_gid_type t)
{
	switch (t) {
	case VERBS_GID_TYPE_ROCE_V2:
		return "RoCE v2";
	case VERBS_GID_TYPE_ROCE_V1:
		return "RoCE v1";
	default:
		return "IB/RoCE v1";
	}
}

static int tv_validate_gid(struct verbs_dev *dev, const struct bench_params *p,
			   const struct ibv_port_attr *pa, char *err)
{
	struct verbs_gid_entry *table = NULL;
	enum verbs_gid_type type = VERBS_GID_TYPE_IB;
	bool eth = pa->link_layer == IBV_LINK_LAYER_ETHERNET;
	size_t n = 0;
	int r;

	if (p->gid_index >= pa->gid_tbl_len)
		return tv_err(err, -ERANGE, "GID index %d out of range: %s port %d has %d entries",
			      p->gid_index, verbs_dev_name(dev), tv_ib_port(p), pa->gid_tbl_len);
	r = verbs_dev_gid_table(dev, &table, &n);
	if (r < 0)
		return tv_err(err, r, "cannot read the GID table of %s: %s", verbs_dev_name(dev),
			      ry_strerror(r));
	r = verbs_gid_usable(table, n, eth ? VERBS_LINK_ETHERNET : VERBS_LINK_IB,
			     (uint32_t)p->gid_index, &type);
	free(table);
	if (r == -RY_E_NOT_FOUND)
		return tv_err(err, -RY_E_INVALID, "GID index %d of %s port %d is not in use",
			      p->gid_index, verbs_dev_name(dev), tv_ib_port(p));
	if (r == -EPROTOTYPE)
		return tv_err(err, -RY_E_INVALID, "GID index %d of %s is %s; %s port needs %s",
			      p->gid_index, verbs_dev_name(dev), tv_gid_type_name(type),
			      eth ? "an Ethernet" : "an InfiniBand", eth ? "RoCE v2" : "an IB GID");
	if (r < 0)
		return tv_err(err, r, "GID index %d: %s", p->gid_index, ry_strerror(r));
	return 0;
}

static int tv_validate(struct bench_params *p, char *err)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct verbs_dev *dev = NULL;
	char names[192], name[BENCH_DEV_LEN];
	unsigned int nports;
	uint8_t port = tv_ib_port(p);
	uint64_t need_wr, need_cqe;
	int n, r;

	if (p->rdma_cm && p->gid_index >= 0)
		return tv_err(
			err, -RY_E_INVALID,
			"-x does not apply with --rdma-cm (rdma_cm picks the GID of the address)");
	if (p->rdma_cm && p->ib_port)
		return tv_err(
			err, -RY_E_INVALID,
			"-i does not apply with --rdma-cm (rdma_cm takes the port of the address)");
	n = verbs_dev_names(names, sizeof(names));
	if (n < 0)
		return tv_err(err, n, "cannot list RDMA devices: %s", ry_strerror(n));
	if (n == 0)
		return tv_err(err, -ENODEV, "no RDMA device found");
	/* rdma_cm binds to the port of the address; -i does not apply there (refused above). */
	r = verbs_dev_open(p->device[0] ? p->device : NULL, p->rdma_cm ? 1 : port, &dev);
	if (r == -ENODEV)
		return tv_err(err, r, "RDMA device '%s' not found (devices: %s)", p->device, names);
	if (r == -ERANGE &&
	    verbs_dev_port_count(p->device[0] ? p->device : NULL, name, sizeof(name), &nports) == 0)
		return tv_err(err, r, "%s has %u port(s); -i %u is out of range", name, nports,
			      port);
	if (r < 0)
		return tv_err(err, r, "cannot open RDMA device %s port %u: %s",
			      p->device[0] ? p->device : names, port, ry_strerror(r));
	r = ibv_query_device(verbs_dev_context(dev), &da);
	if (r == 0)
		r = ibv_query_port(verbs_dev_context(dev), (uint8_t)verbs_dev_port(dev), &pa);
	if (r) {
		r = tv_err(err, -r, "cannot query %s: %s", verbs_dev_name(dev), strerror(r));
		goto out;
	}
	if (pa.state != IBV_PORT_ACTIVE) {
		r = tv_err(err, -ENETDOWN, "port %u of %s is %s", verbs_dev_port(dev),
			   verbs_dev_name(dev), ibv_port_state_str(pa.state));
		goto out;
	}
	if (!p->sweep && p->size > pa.max_msg_sz) {
		r = tv_err(err, -ERANGE, "size %" PRIu64 " B is over %s's largest message (%u B)",
			   p->size, verbs_dev_name(dev), pa.max_msg_sz);
		goto out;
	}
	/* -a stops at the largest power of two the port takes (the result's sweep_max). */
	if (p->sweep)
		p->sweep_max = bench_sweep_clamp(p->sweep_max, pa.max_msg_sz);
	need_wr = p->kind == BENCH_LAT ? TV_LAT_SQ : (uint64_t)p->depth + 2;
	need_cqe = (uint64_t)p->qps * (need_wr + (p->kind == BENCH_LAT ? TV_LAT_RQ : need_wr));
	if (p->qps > (uint32_t)da.max_qp || need_wr > (uint64_t)da.max_qp_wr ||
	    need_cqe > (uint64_t)da.max_cqe) {
		r = tv_err(err, -ERANGE,
			   "%u QPs with a window of %u exceed %s (%d QPs, %d WRs per QP, %d CQEs)",
			   p->qps, p->depth, verbs_dev_name(dev), da.max_qp, da.max_qp_wr,
			   da.max_cqe);
		goto out;
	}
	r = p->gid_index >= 0 && !p->rdma_cm ? tv_validate_gid(dev, p, &pa, err) : 0;
out:
	verbs_dev_free(dev);
	return r;
}

/* ---- setup --------------------------------------------------------------------------------- */

static uint8_t tv_clamp_rd(int v)
{
	return (uint8_t)(v < 1 ? 1 : v > 255 ? 255 : v);
}

/* One memory region of device memory, through dma-buf or nvidia-peermem. */
struct tv_gd {
	struct tv *tv;
	int access;
	struct ibv_mr *mr;
};

static int tv_gd_dmabuf(void *ud, int fd, uint64_t offset, size_t len, uint64_t iova)
{
	struct tv_gd *g = ud;

	errno = 0;
	g->mr = ibv_reg_dmabuf_mr(g->tv->pd, offset, len, iova, fd, g->access);
	return g->mr ? 0 : errno ? -errno : -EIO;
}

static int tv_gd_addr(void *ud, void *addr, size_t len)
{
	struct tv_gd *g = ud;

	errno = 0;
	g->mr = ibv_reg_mr(g->tv->pd, addr, len, g->access);
	return g->mr ? 0 : errno ? -errno : -EIO;
}

/* Register len bytes at buf: host memory with ibv_reg_mr, device memory for GPUDirect RDMA as
 * --gpudirect asks (the path used and any fallback go into the result). */
static int tv_reg(struct tv *tv, void *buf, size_t len, int access, struct ibv_mr **ret_mr)
{
	const struct bench_mem *mem = tv->ctx->mem;
	struct tv_gd g = {.tv = tv, .access = access};
	const struct bench_gd_reg reg = {tv_gd_dmabuf, tv_gd_addr, &g};
	enum bench_gpudirect used;
	char note[BENCH_ERR_LEN];
	int r;

	if (!mem->ops->device) {
		errno = 0;
		*ret_mr = ibv_reg_mr(tv->pd, buf, len, access);
		if (!*ret_mr)
			return tv_err(tv->ctx->err, errno ? -errno : -ENOMEM,
				      "cannot register %zu bytes: %s", len, strerror(errno));
		return 0;
	}
	r = bench_gpudirect_register((enum bench_gpudirect)tv->p->gpudirect, mem, buf, len, &reg,
				     &used, note, sizeof(note), tv->ctx->err);
	if (r < 0)
		return r;
	/* Every region takes the same path (the first decides what the result says). */
	if (!tv->mem_path[0]) {
		snprintf(tv->mem_path, sizeof(tv->mem_path), "%s", bench_gpudirect_name(used));
		snprintf(tv->mem_note, sizeof(tv->mem_note), "%s", note);
		log_debug("bench verbs: %s memory registered through %s%s%s", mem->spec,
			  tv->mem_path, note[0] ? "; " : "", note);
	}
	*ret_mr = g.mr;
	return 0;
}

/* CQ, memory regions and signal rings; the context and PD are known. */
static int tv_setup(struct tv *tv)
{
	struct ibv_device_attr da;
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	int r;

	r = ibv_query_device(tv->ibctx, &da);
	if (r)
		return tv_err(tv->ctx->err, -r, "cannot query the device: %s", strerror(r));
	tv->rd_init = tv_clamp_rd(da.max_qp_init_rd_atom);
	tv->rd_resp = tv_clamp_rd(da.max_qp_rd_atom);
	tv->cq = ibv_create_cq(tv->ibctx, (int)(tv->nq * (tv->max_send_wr + tv->max_recv_wr)), NULL,
			       NULL, 0);
	if (!tv->cq)
		return tv_err(tv->ctx->err, errno ? -errno : -ENOMEM, "cannot create a CQ: %s",
			      strerror(errno));
	for (uint32_t i = 0; i < tv->nq; i++) {
		struct tv_qp *q = &tv->q[i];
		const struct bench_qp_buf *b = &tv->ctx->bufs[i];

		r = tv_reg(tv, b->tx, b->len, access, &q->tx_mr);
		if (r == 0)
			r = tv_reg(tv, b->rx, b->len, access, &q->rx_mr);
		if (r < 0)
			return r;
		q->sig_cap = tv->max_send_wr;
		q->sig = calloc(q->sig_cap, sizeof(*q->sig));
		if (!q->sig)
			return tv_err(tv->ctx->err, -ENOMEM, "out of memory");
	}
	return 0;
}

/* Create QP i (on the rdma_cm id when there is one), lowering the inline size until the
 * device accepts it. */
static int tv_create_qp(struct tv *tv, uint32_t i, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a;
	uint32_t inl = tv->inline_size;
	int r;

	for (;;) {
		a = (struct ibv_qp_init_attr){
			.send_cq = tv->cq,
			.recv_cq = tv->cq,
			.cap = {.max_send_wr = tv->max_send_wr,
				.max_recv_wr = tv->max_recv_wr,
				.max_send_sge = 1,
				.max_recv_sge = 1,
				.max_inline_data = inl},
			.qp_type = IBV_QPT_RC,
			.sq_sig_all = 0,
		};
		if (id) {
			r = rdma_create_qp(id, tv->pd, &a) ? -errno : 0;
			if (r == 0)
				tv->q[i].qp = id->qp;
		} else {
			tv->q[i].qp = ibv_create_qp(tv->pd, &a);
			r = tv->q[i].qp ? 0 : -errno;
		}
		if (r == 0 || inl == 0)
			break;
		inl /= 2;
	}
	if (r < 0)
		return tv_err(tv->ctx->err, r, "cannot create an RC QP: %s", ry_strerror(r));
	/* Providers may round the inline size up; we use what we asked for (or less). */
	if (a.cap.max_inline_data < inl)
		inl = a.cap.max_inline_data;
	if (inl < tv->inline_size)
		tv->inline_size = inl;
	return 0;
}

static void tv_local_conn(const struct tv *tv, uint32_t i, struct verbs_conn *ret_c)
{
	const struct tv_qp *q = &tv->q[i];

	memset(ret_c, 0, sizeof(*ret_c));
	ret_c->qp.qpn = q->qp ? q->qp->qp_num : 0;
	ret_c->qp.mtu = (uint8_t)(tv->mtu ? tv->mtu : IBV_MTU_1024);
	memcpy(ret_c->qp.gid, tv->gid, VERBS_GID_LEN);
	ret_c->qp.addr = (uint64_t)(uintptr_t)tv->ctx->bufs[i].rx;
	ret_c->qp.rkey = q->rx_mr->rkey;
	ret_c->read_addr = (uint64_t)(uintptr_t)tv->ctx->bufs[i].tx;
	ret_c->read_rkey = q->tx_mr->rkey;
	ret_c->rd_atomic = tv->rd_resp;
}

/* Send our connection data over the control connection. psn[] and lid go into the QP info
 * (side-channel mode); rdma_cm mode sends zeros there and its listening port in the header. */
static int tv_exch_send(struct tv *tv, const uint32_t *psn, uint16_t lid, uint16_t cm_port)
{
	size_t len = TV_EXCH_HDR + (size_t)tv->nq * VERBS_CONN_WIRE;
	uint8_t *out;
	int r;

	out = calloc(1, len);
	if (!out)
		return tv_err(tv->ctx->err, -ENOMEM, "out of memory");
	out[0] = (uint8_t)(TV_EXCH_MAGIC >> 24);
	out[1] = (uint8_t)(TV_EXCH_MAGIC >> 16);
	out[2] = (uint8_t)(TV_EXCH_MAGIC >> 8);
	out[3] = (uint8_t)TV_EXCH_MAGIC;
	out[4] = TV_EXCH_VERSION;
	out[5] = (uint8_t)tv->nq;
	out[6] = (uint8_t)(cm_port >> 8);
	out[7] = (uint8_t)cm_port;
	for (uint32_t i = 0; i < tv->nq; i++) {
		struct verbs_conn c;

		tv_local_conn(tv, i, &c);
		c.qp.psn = psn ? psn[i] : 0;
		c.qp.lid = lid;
		verbs_conn_pack(&c, out + TV_EXCH_HDR + (size_t)i * VERBS_CONN_WIRE);
	}
	/* A few KiB at most: the socket buffers hold it even when both sides send first. */
	r = bench_ctrl_send(tv->ctx->ctrl_fd, out, len, tv->ctx->timeout_ms);
	free(out);
	if (r < 0)
		return tv_err(tv->ctx->err, r, "sending QP data to the peer: %s", ry_strerror(r));
	return 0;
}

/* Receive the peer's connection data into tv->q[].peer (and its rdma_cm port). */
static int tv_exch_recv(struct tv *tv, uint16_t *ret_cm_port)
{
	size_t len = TV_EXCH_HDR + (size_t)tv->nq * VERBS_CONN_WIRE;
	uint8_t *in;
	int r;

	in = calloc(1, len);
	if (!in)
		return tv_err(tv->ctx->err, -ENOMEM, "out of memory");
	r = bench_ctrl_recv(tv->ctx->ctrl_fd, in, len, tv->ctx->timeout_ms);
	if (r < 0) {
		r = tv_err(tv->ctx->err, r, "receiving QP data from the peer: %s", ry_strerror(r));
		goto out;
	}
	if (((uint32_t)in[0] << 24 | (uint32_t)in[1] << 16 | (uint32_t)in[2] << 8 | in[3]) !=
		    TV_EXCH_MAGIC ||
	    in[4] != TV_EXCH_VERSION || in[5] != tv->nq) {
		r = tv_err(tv->ctx->err, -RY_E_INVALID, "the peer sent malformed QP data");
		goto out;
	}
	for (uint32_t i = 0; i < tv->nq; i++) {
		r = verbs_conn_unpack(in + TV_EXCH_HDR + (size_t)i * VERBS_CONN_WIRE,
				      VERBS_CONN_WIRE, &tv->q[i].peer);
		if (r < 0) {
			r = tv_err(tv->ctx->err, r, "the peer sent malformed data for QP %u", i);
			goto out;
		}
	}
	if (ret_cm_port)
		*ret_cm_port = (uint16_t)(in[6] << 8 | in[7]);
	r = 0;
out:
	free(in);
	return r;
}

/* The IPv4 address of a socket address (plain or v4-mapped IPv6). */
static bool tv_sockaddr_ipv4(const struct sockaddr_storage *ss, struct in_addr *ret)
{
	if (ss->ss_family == AF_INET) {
		*ret = ((const struct sockaddr_in *)(const void *)ss)->sin_addr;
		return true;
	}
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a6 =
			&((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a6)) {
			memcpy(&ret->s_addr, a6->s6_addr + 12, 4);
			return true;
		}
	}
	return false;
}

/* Device: -d, else the one holding a RoCE v2 GID of our control address, else the first. */
static int tv_open_dev(struct tv *tv, const struct in_addr *local)
{
	const char *want = tv->p->device[0] ? tv->p->device : NULL;
	struct ibv_device **list;
	uint32_t idx;
	uint8_t gid[VERBS_GID_LEN];
	int n = 0, r;

	if (!want && local) {
		list = ibv_get_device_list(&n);
		for (int i = 0; list && i < n && !tv->dev; i++) {
			if (verbs_dev_open(ibv_get_device_name(list[i]), tv->port, &tv->dev) < 0)
				continue;
			if (verbs_dev_pick_gid(tv->dev, local, &idx, gid) < 0) {
				verbs_dev_free(tv->dev);
				tv->dev = NULL;
			}
		}
		if (list)
			ibv_free_device_list(list);
		if (tv->dev)
			return 0;
	}
	r = verbs_dev_open(want, tv->port, &tv->dev);
	if (r < 0)
		return tv_err(tv->ctx->err, r, "cannot open RDMA device %s port %u: %s",
			      want ? want : "(first)", tv->port, ry_strerror(r));
	return 0;
}

static int tv_open_side_channel(struct tv *tv, const struct in_addr *local)
{
	struct verbs_port_info pi;
	struct ibv_port_attr pa;
	union ibv_gid g;
	uint32_t idx, *psn = NULL;
	int r;

	r = tv_open_dev(tv, local);
	if (r < 0)
		return r;
	tv->ibctx = verbs_dev_context(tv->dev);
	tv->pd = verbs_dev_pd(tv->dev);
	r = verbs_dev_query_port(tv->dev, &pi);
	if (r < 0)
		return tv_err(tv->ctx->err, r, "cannot query %s: %s", verbs_dev_name(tv->dev),
			      ry_strerror(r));
	tv->ll = pi.link_layer;
	tv->mtu = pi.active_mtu;
	if (tv->p->gid_index >= 0) {
		idx = (uint32_t)tv->p->gid_index;
		r = ibv_query_gid(tv->ibctx, tv->port, (int)idx, &g);
		if (r)
			return tv_err(tv->ctx->err, -EINVAL, "cannot read GID index %u of %s", idx,
				      verbs_dev_name(tv->dev));
		memcpy(tv->gid, g.raw, VERBS_GID_LEN);
	} else {
		/* By type and by the address our control connection uses; any IPv4 RoCE v2
		 * GID when that address is not on this device (e.g. the peer is 127.0.0.1). */
		r = verbs_dev_pick_gid(tv->dev, local, &idx, tv->gid);
		if (r == -RY_E_NOT_FOUND && local)
			r = verbs_dev_pick_gid(tv->dev, NULL, &idx, tv->gid);
		if (r < 0)
			return tv_err(tv->ctx->err, r, "no usable GID on %s port %d (%s)",
				      verbs_dev_name(tv->dev), tv->port,
				      tv->ll == VERBS_LINK_ETHERNET ? "RoCE v2 with an IPv4 address"
								    : "InfiniBand");
	}
	tv->gid_index = (int32_t)idx;
	/* verbs_qp_connect() gives the traffic class in the GRH, which only RoCE paths carry. */
	tv->traffic_class = tv->ll == VERBS_LINK_ETHERNET ? tv->p->traffic_class : 0;
	tv->service_level = tv->p->service_level;
	if (ibv_query_port(tv->ibctx, tv->port, &pa) == 0)
		tv->gbps = verbs_port_gbps(pa.active_speed, 0, pa.active_width);
	r = tv_setup(tv);
	if (r < 0)
		return r;
	psn = calloc(tv->nq, sizeof(*psn));
	if (!psn)
		return tv_err(tv->ctx->err, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < tv->nq && r == 0; i++) {
		r = tv_create_qp(tv, i, NULL);
		if (r == 0)
			r = util_random_bytes(&psn[i], sizeof(psn[i]));
		psn[i] &= 0xffffff;
	}
	if (r == 0)
		r = tv_exch_send(tv, psn, pi.lid, 0);
	if (r == 0)
		r = tv_exch_recv(tv, NULL);
	for (uint32_t i = 0; i < tv->nq && r == 0; i++) {
		struct tv_qp *q = &tv->q[i];
		struct verbs_path path = {
			.port = tv->port,
			.link_layer = tv->ll,
			.mtu = tv->mtu,
			.gid_index = idx,
			.traffic_class = tv->traffic_class,
			.service_level = tv->service_level,
			.rd_atomic =
				tv->rd_init < q->peer.rd_atomic ? tv->rd_init : q->peer.rd_atomic,
			.dest_rd_atomic = tv->rd_resp,
			.psn = psn[i],
		};

		r = verbs_qp_connect(q->qp, &path, &q->peer.qp);
		if (r < 0)
			r = tv_err(tv->ctx->err, r, "cannot connect QP %u to the peer: %s", i,
				   ry_strerror(r));
	}
	if (r == 0 && tv->q[0].peer.qp.mtu < tv->mtu)
		tv->mtu = tv->q[0].peer.qp.mtu;
	free(psn);
	return r;
}

/* ---- rdma_cm ------------------------------------------------------------------------------- */

/* Wait for the next rdma_cm event until deadline; copies what callers need and acks it. */
static int tv_cm_wait(struct tv *tv, int64_t deadline, enum rdma_cm_event_type *ret_type,
		      struct rdma_cm_id **ret_id, uint32_t *ret_qp, int *ret_status)
{
	struct pollfd pfd = {.fd = tv->ec->fd, .events = POLLIN};
	struct rdma_cm_event *ev;
	int64_t left;
	int r;

	do {
		left = deadline - util_now_mono_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)left);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -ETIMEDOUT;
	if (rdma_get_cm_event(tv->ec, &ev) < 0)
		return -errno;
	*ret_type = ev->event;
	*ret_id = ev->id;
	*ret_status = ev->status;
	*ret_qp = UINT32_MAX;
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && ev->param.conn.private_data &&
	    ev->param.conn.private_data_len >= 4) {
		const uint8_t *d = ev->param.conn.private_data;

		*ret_qp = (uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 | (uint32_t)d[2] << 8 | d[3];
	}
	(void)rdma_ack_cm_event(ev);
	return 0;
}

static int tv_cm_expect(struct tv *tv, int64_t deadline, enum rdma_cm_event_type want,
			const char *what)
{
	enum rdma_cm_event_type type;
	struct rdma_cm_id *id;
	uint32_t qp;
	int status, r;

	r = tv_cm_wait(tv, deadline, &type, &id, &qp, &status);
	if (r < 0)
		return tv_err(tv->ctx->err, r, "rdma_cm: %s: %s", what, ry_strerror(r));
	if (type == want)
		return 0;
	r = type == RDMA_CM_EVENT_REJECTED ? -ECONNREFUSED
	    : type == RDMA_CM_EVENT_UNREACHABLE || type == RDMA_CM_EVENT_ADDR_ERROR ||
			    type == RDMA_CM_EVENT_ROUTE_ERROR
		    ? -EHOSTUNREACH
		    : -EIO;
	return tv_err(tv->ctx->err, r, "rdma_cm: %s: got %s (status %d)", what,
		      rdma_event_str(type), status);
}

static void tv_conn_param(const struct tv *tv, struct rdma_conn_param *cp, const uint8_t *pd,
			  uint8_t pd_len)
{
	*cp = (struct rdma_conn_param){
		.private_data = pd,
		.private_data_len = pd_len,
		.responder_resources = tv->rd_resp,
		.initiator_depth = tv->rd_init,
		.retry_count = 7,
		.rnr_retry_count = 7,
	};
}

/* The device and port rdma_cm found for the address (id bound or resolved): check the device
 * against -d, then PD and the rest. */
static int tv_cm_context(struct tv *tv, const struct rdma_cm_id *id)
{
	struct ibv_context *ibctx = id->verbs;
	const char *name;
	struct ibv_port_attr pa;

	if (!ibctx)
		return tv_err(tv->ctx->err, -ENODEV,
			      "rdma_cm: the control address is not on an RDMA device");
	name = ibv_get_device_name(ibctx->device);
	if (tv->p->device[0] && strcmp(tv->p->device, name) != 0)
		return tv_err(tv->ctx->err, -ENODEV,
			      "rdma_cm: the peer's address is reached through %s, not -d %s", name,
			      tv->p->device);
	snprintf(tv->dev_name, sizeof(tv->dev_name), "%s", name);
	tv->ibctx = ibctx;
	tv->port = id->port_num ? id->port_num : BENCH_IB_PORT_DEF;
	if (ibv_query_port(ibctx, tv->port, &pa) == 0) {
		tv->gbps = verbs_port_gbps(pa.active_speed, 0, pa.active_width);
		tv->mtu = pa.active_mtu;
		tv->ll = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? VERBS_LINK_ETHERNET
								  : VERBS_LINK_IB;
	}
	tv->pd = ibv_alloc_pd(ibctx);
	if (!tv->pd)
		return tv_err(tv->ctx->err, errno ? -errno : -ENOMEM, "cannot allocate a PD");
	return tv_setup(tv);
}

static void tv_sockaddr_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)(void *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)(void *)ss)->sin6_port = htons(port);
}

/* Plain IPv4 for v4-mapped addresses (rdma_cm binds to the device owning the address). */
static void tv_sockaddr_normalise(struct sockaddr_storage *ss)
{
	struct in_addr a;

	if (ss->ss_family == AF_INET6 && tv_sockaddr_ipv4(ss, &a)) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)(void *)ss;
		uint16_t port = ((struct sockaddr_in6 *)(void *)ss)->sin6_port;

		memset(ss, 0, sizeof(*ss));
		s4->sin_family = AF_INET;
		s4->sin_addr = a;
		s4->sin_port = port;
	}
}

static int tv_open_cm_server(struct tv *tv, struct sockaddr_storage *local, int64_t deadline)
{
	uint32_t requests = 0, established = 0;
	uint8_t tos = tv->p->traffic_class;
	int r;

	tv_sockaddr_set_port(local, 0);
	if (rdma_create_id(tv->ec, &tv->listen_id, NULL, RDMA_PS_TCP) < 0 ||
	    rdma_bind_addr(tv->listen_id, (struct sockaddr *)local) < 0 ||
	    rdma_listen(tv->listen_id, (int)tv->nq) < 0)
		return tv_err(tv->ctx->err, -errno, "rdma_cm: cannot listen: %s", strerror(errno));
	if (tos)
		(void)rdma_set_option(tv->listen_id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos,
				      sizeof(tos));
	r = tv_cm_context(tv, tv->listen_id);
	if (r < 0)
		return r;
	r = tv_exch_send(tv, NULL, 0, ntohs(rdma_get_src_port(tv->listen_id)));
	if (r == 0)
		r = tv_exch_recv(tv, NULL);
	if (r < 0)
		return r;
	while (established < tv->nq) {
		enum rdma_cm_event_type type;
		struct rdma_cm_id *id;
		struct rdma_conn_param cp;
		uint32_t qi;
		int status;

		r = tv_cm_wait(tv, deadline, &type, &id, &qi, &status);
		if (r < 0)
			return tv_err(tv->ctx->err, r, "rdma_cm: waiting for the client: %s",
				      ry_strerror(r));
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			if (qi >= tv->nq || tv->q[qi].id || id->verbs != tv->ibctx) {
				(void)rdma_reject(id, NULL, 0);
				(void)rdma_destroy_id(id);
				return tv_err(tv->ctx->err, -RY_E_INVALID,
					      "rdma_cm: unexpected connection request");
			}
			tv->q[qi].id = id;
			requests++;
			r = tv_create_qp(tv, qi, id);
			if (r < 0)
				return r;
			tv_conn_param(tv, &cp, NULL, 0);
			if (rdma_accept(id, &cp) < 0)
				return tv_err(tv->ctx->err, -errno, "rdma_cm: accept: %s",
					      strerror(errno));
		} else if (type == RDMA_CM_EVENT_ESTABLISHED) {
			established++;
		} else {
			return tv_err(tv->ctx->err, -EIO, "rdma_cm: unexpected %s (status %d)",
				      rdma_event_str(type), status);
		}
	}
	(void)requests;
	return 0;
}

static int tv_open_cm_client(struct tv *tv, struct sockaddr_storage *local,
			     struct sockaddr_storage *peer, int64_t deadline)
{
	uint8_t tos = tv->p->traffic_class;
	uint16_t port = 0;
	int r;

	/* The server listens before it sends its port and regions; ours follow once the
	 * address resolved to a device and our memory is registered there. */
	r = tv_exch_recv(tv, &port);
	if (r < 0)
		return r;
	if (port == 0)
		return tv_err(tv->ctx->err, -RY_E_INVALID, "rdma_cm: the server sent no port");
	tv_sockaddr_set_port(local, 0);
	tv_sockaddr_set_port(peer, port);
	for (uint32_t i = 0; i < tv->nq; i++) {
		struct tv_qp *q = &tv->q[i];

		if (rdma_create_id(tv->ec, &q->id, NULL, RDMA_PS_TCP) < 0) {
			q->id = NULL;
			return tv_err(tv->ctx->err, -errno, "rdma_cm: %s", strerror(errno));
		}
		if (rdma_resolve_addr(q->id, (struct sockaddr *)local, (struct sockaddr *)peer,
				      TV_CM_RESOLVE_MS) < 0)
			return tv_err(tv->ctx->err, -errno, "rdma_cm: resolving the address: %s",
				      strerror(errno));
		r = tv_cm_expect(tv, deadline, RDMA_CM_EVENT_ADDR_RESOLVED,
				 "resolving the address");
		if (r < 0)
			return r;
		if (tos)
			(void)rdma_set_option(q->id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos,
					      sizeof(tos));
		if (rdma_resolve_route(q->id, TV_CM_RESOLVE_MS) < 0)
			return tv_err(tv->ctx->err, -errno, "rdma_cm: resolving the route: %s",
				      strerror(errno));
		r = tv_cm_expect(tv, deadline, RDMA_CM_EVENT_ROUTE_RESOLVED, "resolving the route");
		if (r < 0)
			return r;
		if (i == 0) {
			r = tv_cm_context(tv, q->id);
			if (r < 0)
				return r;
		} else if (q->id->verbs != tv->ibctx) {
			return tv_err(tv->ctx->err, -EIO,
				      "rdma_cm: QP %u resolved to another device", i);
		}
		r = tv_create_qp(tv, i, q->id);
		if (r < 0)
			return r;
	}
	r = tv_exch_send(tv, NULL, 0, 0);
	for (uint32_t i = 0; i < tv->nq && r == 0; i++) {
		struct rdma_conn_param cp;
		uint8_t pd[4] = {(uint8_t)(i >> 24), (uint8_t)(i >> 16), (uint8_t)(i >> 8),
				 (uint8_t)i};

		tv_conn_param(tv, &cp, pd, sizeof(pd));
		if (rdma_connect(tv->q[i].id, &cp) < 0)
			return tv_err(tv->ctx->err, -errno, "rdma_cm: connect: %s",
				      strerror(errno));
		r = tv_cm_expect(tv, deadline, RDMA_CM_EVENT_ESTABLISHED, "connecting");
	}
	return r;
}

static int tv_open_cm(struct tv *tv)
{
	struct sockaddr_storage local, peer;
	socklen_t sl = sizeof(local);
	int64_t deadline = util_now_mono_ms() + tv->ctx->timeout_ms;

	tv->ec = rdma_create_event_channel();
	if (!tv->ec)
		return tv_err(tv->ctx->err, errno ? -errno : -ENODEV,
			      "rdma_cm: no event channel: %s", strerror(errno));
	if (getsockname(tv->ctx->ctrl_fd, (struct sockaddr *)&local, &sl) < 0)
		return tv_err(tv->ctx->err, -errno, "getsockname: %s", strerror(errno));
	tv_sockaddr_normalise(&local);
	peer = tv->ctx->peer_addr;
	tv_sockaddr_normalise(&peer);
	if (tv->ctx->role == BENCH_SERVER)
		return tv_open_cm_server(tv, &local, deadline);
	return tv_open_cm_client(tv, &local, &peer, deadline);
}

/* rdma_cm chose port, path MTU, GID, traffic class (from the ToS) and SL: read them back from
 * QP 0 for the result's environment. */
static void tv_cm_env(struct tv *tv)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	union ibv_gid g;

	tv->gid_index = -1;
	if (!tv->q[0].qp ||
	    ibv_query_qp(tv->q[0].qp, &a, IBV_QP_PATH_MTU | IBV_QP_AV | IBV_QP_PORT, &ia))
		return;
	tv->mtu = a.path_mtu;
	if (a.port_num)
		tv->port = a.port_num;
	tv->service_level = a.ah_attr.sl;
	if (a.ah_attr.is_global) {
		tv->traffic_class = a.ah_attr.grh.traffic_class;
		if (ibv_query_gid(tv->ibctx, tv->port, a.ah_attr.grh.sgid_index, &g) == 0) {
			tv->gid_index = a.ah_attr.grh.sgid_index;
			memcpy(tv->gid, g.raw, VERBS_GID_LEN);
		}
	}
}

static void tv_close(void *st)
{
	struct tv *tv = st;

	if (!tv)
		return;
	for (uint32_t i = 0; tv->q && i < tv->nq; i++) {
		struct tv_qp *q = &tv->q[i];

		if (q->id) {
			if (q->id->qp)
				rdma_destroy_qp(q->id);
			(void)rdma_destroy_id(q->id);
		} else if (q->qp) {
			(void)ibv_destroy_qp(q->qp);
		}
		if (q->tx_mr)
			(void)ibv_dereg_mr(q->tx_mr);
		if (q->rx_mr)
			(void)ibv_dereg_mr(q->rx_mr);
		free(q->sig);
	}
	if (tv->cq)
		(void)ibv_destroy_cq(tv->cq);
	if (!tv->dev && tv->pd)
		(void)ibv_dealloc_pd(tv->pd);
	if (tv->listen_id)
		(void)rdma_destroy_id(tv->listen_id);
	if (tv->ec)
		rdma_destroy_event_channel(tv->ec);
	verbs_dev_free(tv->dev);
	free(tv->q);
	free(tv);
}

static int tv_open(const struct bench_ctx *ctx, void **ret_st)
{
	const struct bench_params *p = ctx->params;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct in_addr local;
	bool have_local = false;
	struct tv *tv;
	int r;

	tv = calloc(1, sizeof(*tv));
	if (!tv)
		return -ENOMEM;
	tv->ctx = ctx;
	tv->p = p;
	tv->nq = p->qps;
	tv->gid_index = -1;
	tv->port = tv_ib_port(p); /* rdma_cm: replaced by the port of the address */
	tv->q = calloc(tv->nq, sizeof(*tv->q));
	if (!tv->q) {
		r = -ENOMEM;
		goto fail;
	}
	if (p->op == BENCH_OP_READ)
		tv->lat_mode = TV_LAT_READ;
	else if (p->op == BENCH_OP_SEND)
		tv->lat_mode = TV_LAT_SEND;
	else
		tv->lat_mode = tv_needs_recv(p) ? TV_LAT_WRITE_IMM : TV_LAT_WRITE_POLL;
	if (p->inline_size)
		tv->inline_size = p->inline_size;
	else
		tv->inline_size =
			p->kind == BENCH_LAT && p->op != BENCH_OP_READ ? TV_LAT_INLINE : 0;
	/* Inline data is copied by the CPU from the buffer: not from a GPU's memory. */
	if (p->op == BENCH_OP_READ || ctx->mem->ops->device)
		tv->inline_size = 0;
	tv->max_send_wr = p->kind == BENCH_LAT ? TV_LAT_SQ : p->depth + 2;
	tv->max_recv_wr = p->kind == BENCH_LAT ? TV_LAT_RQ : tv_needs_recv(p) ? p->depth + 2 : 1;
	if (getsockname(ctx->ctrl_fd, (struct sockaddr *)&ss, &sl) == 0)
		have_local = tv_sockaddr_ipv4(&ss, &local);
	if (p->rdma_cm) {
		r = tv_open_cm(tv);
		if (r == 0)
			tv_cm_env(tv);
	} else {
		r = tv_open_side_channel(tv, have_local ? &local : NULL);
		if (r == 0)
			snprintf(tv->dev_name, sizeof(tv->dev_name), "%s", verbs_dev_name(tv->dev));
	}
	if (r < 0)
		goto fail;
	log_debug("bench verbs: %u QP(s) on %s, mtu %d, gid index %d, inline %u", tv->nq,
		  tv->dev_name, verbs_mtu_bytes(tv->mtu), tv->gid_index, tv->inline_size);
	*ret_st = tv;
	return 0;
fail:
	tv_close(tv);
	return r;
}

static void tv_env(void *st, struct bench_env *ret_env)
{
	const struct tv *tv = st;
	char gid[VERBS_GID_STR_LEN];

	snprintf(ret_env->device, sizeof(ret_env->device), "%s", tv->dev_name);
	ret_env->port = tv->port;
	ret_env->mtu = (uint32_t)verbs_mtu_bytes(tv->mtu);
	verbs_gid_format(tv->gid, gid);
	snprintf(ret_env->gid, sizeof(ret_env->gid), "%s", tv->gid_index >= 0 ? gid : "");
	ret_env->gid_index = tv->gid_index;
	snprintf(ret_env->link_layer, sizeof(ret_env->link_layer), "%s",
		 tv->ll == VERBS_LINK_ETHERNET ? "Ethernet" : "InfiniBand");
	ret_env->link_gbps = tv->gbps;
	ret_env->inline_size = tv->inline_size;
	ret_env->traffic_class = tv->traffic_class;
	ret_env->service_level = tv->service_level;
	snprintf(ret_env->mem_path, sizeof(ret_env->mem_path), "%s", tv->mem_path);
	snprintf(ret_env->mem_note, sizeof(ret_env->mem_note), "%s", tv->mem_note);
}

/* ---- completions --------------------------------------------------------------------------- */

static const char *tv_wc_op(const struct ibv_wc *wc)
{
	if (TV_WRID_KIND(wc->wr_id) == TV_WR_RECV)
		return "receive";
	return "send/write/read";
}

static int tv_wc_fail(struct tv *tv, const struct ibv_wc *wc)
{
	bool gone = wc->status == IBV_WC_RETRY_EXC_ERR || wc->status == IBV_WC_RNR_RETRY_EXC_ERR;

	return tv_err(tv->ctx->err, -EIO, "verbs: QP %u: %s failed: %s%s", TV_WRID_QP(wc->wr_id),
		      tv_wc_op(wc), ibv_wc_status_str(wc->status), gone ? " (peer lost)" : "");
}

/* A signaled send-queue completion: retire the work requests up to it. */
static int tv_sq_done(struct tv *tv, const struct ibv_wc *wc)
{
	uint32_t qi = TV_WRID_QP(wc->wr_id);
	struct tv_qp *q;
	struct tv_sig *s;

	if (qi >= tv->nq || tv->q[qi].sig_n == 0)
		return tv_err(tv->ctx->err, -EIO, "verbs: stray completion on QP %u", qi);
	q = &tv->q[qi];
	s = &q->sig[q->sig_head];
	if (s->seq != TV_WRID_N(wc->wr_id))
		return tv_err(tv->ctx->err, -EIO, "verbs: completion out of order on QP %u", qi);
	q->wr_done = s->seq + 1;
	if (s->msgs > q->msgs_done)
		q->msgs_done = s->msgs;
	q->sig_head = (q->sig_head + 1) % q->sig_cap;
	q->sig_n--;
	return 0;
}

/* Post one send-queue work request. Signaled when asked, every sig_every-th, or when it is the
 * last that fits: so a completion always comes for what is in flight. msgs: the message count
 * of this QP once it completes. */
static int tv_post_sq(struct tv *tv, uint32_t qi, struct ibv_send_wr *wr, bool sig, uint64_t msgs)
{
	struct tv_qp *q = &tv->q[qi];
	struct ibv_send_wr *bad = NULL;
	int r;

	if (q->wr_posted - q->wr_done >= tv->max_send_wr)
		return tv_err(tv->ctx->err, -ENOBUFS, "verbs: send queue of QP %u full", qi);
	if (q->wr_posted % tv->sig_every == tv->sig_every - 1 ||
	    q->wr_posted + 1 - q->wr_done >= tv->max_send_wr)
		sig = true;
	wr->wr_id = TV_WRID(TV_WR_SQ, qi, q->wr_posted);
	if (sig)
		wr->send_flags |= IBV_SEND_SIGNALED;
	r = ibv_post_send(q->qp, wr, &bad);
	if (r)
		return tv_err(tv->ctx->err, r > 0 ? -r : -EIO, "verbs: posting on QP %u: %s", qi,
			      strerror(r > 0 ? r : EIO));
	if (sig) {
		q->sig[(q->sig_head + q->sig_n) % q->sig_cap] =
			(struct tv_sig){.seq = q->wr_posted, .msgs = msgs};
		q->sig_n++;
	}
	q->tail_unsignaled = !sig;
	q->wr_posted++;
	return 0;
}

/* A signaled zero-byte RDMA write after unsignaled work requests: its completion proves them
 * done (send-queue completions come in order) without consuming a receive at the peer. */
static int tv_post_flush(struct tv *tv, uint32_t qi)
{
	struct tv_qp *q = &tv->q[qi];
	struct ibv_send_wr wr = {
		.opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = {.remote_addr = q->peer.qp.addr, .rkey = q->peer.qp.rkey},
	};

	return tv_post_sq(tv, qi, &wr, true, q->msgs_posted);
}

static int tv_post_recv(struct tv *tv, uint32_t qi, uint64_t n, void *addr, uint32_t len)
{
	struct tv_qp *q = &tv->q[qi];
	struct ibv_sge sge = {.addr = (uintptr_t)addr, .length = len, .lkey = q->rx_mr->lkey};
	struct ibv_recv_wr wr = {
		.wr_id = TV_WRID(TV_WR_RECV, qi, n), .sg_list = &sge, .num_sge = len ? 1 : 0};
	struct ibv_recv_wr *bad = NULL;
	int r;

	r = ibv_post_recv(q->qp, &wr, &bad);
	if (r)
		return tv_err(tv->ctx->err, r > 0 ? -r : -EIO, "verbs: posting a receive: %s",
			      strerror(r > 0 ? r : EIO));
	q->recv_posted++;
	return 0;
}

/* ---- latency ------------------------------------------------------------------------------- */

static inline uint8_t tv_mark(uint64_t iter)
{
	return (uint8_t)(iter % 255 + 1); /* never 0; differs from iter - 2's */
}

static inline uint8_t *tv_slot(const struct tv *tv, void *region, uint64_t n)
{
	return (uint8_t *)region + (n % tv->step.slots) * tv->step.size;
}

/* Poll the CQ once (latency): retire send completions and note a receive in
 * tv->lat_recv_got / lat_recv_n, where it waits for tv_lat_wait() (one at a time: a ping-pong
 * has at most one message in flight towards us). */
static int tv_lat_poll(struct tv *tv)
{
	struct ibv_wc wc[TV_LAT_WC];
	int k, r;

	k = ibv_poll_cq(tv->cq, TV_LAT_WC, wc);
	if (k < 0)
		return tv_err(tv->ctx->err, -EIO, "verbs: polling the CQ failed");
	for (int j = 0; j < k; j++) {
		if (wc[j].status != IBV_WC_SUCCESS)
			return tv_wc_fail(tv, &wc[j]);
		if (TV_WRID_KIND(wc[j].wr_id) != TV_WR_RECV) {
			if ((r = tv_sq_done(tv, &wc[j])) < 0)
				return r;
			continue;
		}
		tv->q[0].recv_done++;
		if (wc[j].opcode == IBV_WC_RECV && wc[j].byte_len != tv->step.size)
			return tv_err(tv->ctx->err, -EIO,
				      "verbs: received %u bytes, expected %" PRIu64, wc[j].byte_len,
				      tv->step.size);
		if (tv->lat_recv_got)
			return tv_err(tv->ctx->err, -EIO,
				      "verbs: message %" PRIu64 " arrived before %" PRIu64
				      " was taken",
				      TV_WRID_N(wc[j].wr_id), tv->lat_recv_n);
		tv->lat_recv_got = true;
		tv->lat_recv_n = TV_WRID_N(wc[j].wr_id);
	}
	return 0;
}

/* Wait for the receive of message n (recv), or the rx slot's marker (mark), or the send queue
 * to complete work request seq (seq != UINT64_MAX). -ETIMEDOUT after timeout_ms. */
static int tv_lat_wait(struct tv *tv, bool recv, const volatile uint8_t *mark, uint8_t want,
		       uint64_t seq, uint64_t n, int timeout_ms)
{
	struct tv_qp *q = &tv->q[0];
	int64_t deadline = 0;
	int r;

	/* The clock is read only once the answer is late: a clock read per round trip is a
	 * measurable share of a soft-RoCE read latency. */
	for (uint32_t spin = 1;; spin++) {
		if (mark) {
			if (*mark == want)
				return 0;
			if (spin % TV_SPIN_CHECK != 0)
				continue;
		}
		r = tv_lat_poll(tv);
		if (r < 0)
			return r;
		if (recv && tv->lat_recv_got) {
			tv->lat_recv_got = false;
			if (tv->lat_recv_n != n)
				return tv_err(tv->ctx->err, -EIO,
					      "verbs: message %" PRIu64 " arrived, %" PRIu64
					      " expected",
					      tv->lat_recv_n, n);
			return 0;
		}
		if (seq != UINT64_MAX && q->wr_done > seq)
			return 0;
		if (spin % TV_SPIN_CHECK == 0) {
			int64_t now = util_now_mono_ms();

			if (deadline == 0)
				deadline = now + timeout_ms;
			else if (now >= deadline)
				return -ETIMEDOUT;
		}
	}
}

/* Make room for one more work request on QP 0's send queue. */
static int tv_lat_sq_room(struct tv *tv, int timeout_ms)
{
	struct tv_qp *q = &tv->q[0];

	if (q->wr_posted - q->wr_done < tv->max_send_wr)
		return 0;
	return tv_lat_wait(tv, false, NULL, 0, q->wr_done, 0, timeout_ms);
}

/* Build the latency work request of each slot once per step (ping/pong or read). */
static int tv_lat_build(struct tv *tv)
{
	struct tv_qp *q = &tv->q[0];

	if (tv->step.slots > TV_LAT_SLOTS)
		return tv_err(tv->ctx->err, -EINVAL, "verbs: %u latency slots", tv->step.slots);
	tv->lat_flags = 0;
	if (tv->lat_mode != TV_LAT_READ && tv->step.size <= tv->inline_size)
		tv->lat_flags = IBV_SEND_INLINE;
	for (uint32_t sl = 0; sl < tv->step.slots; sl++) {
		uint64_t off = (uint64_t)sl * tv->step.size;
		struct ibv_sge *sge = &tv->lat_sge[sl];
		struct ibv_send_wr *wr = &tv->lat_wr[sl];

		*sge = (struct ibv_sge){.addr = (uintptr_t)tv->ctx->bufs[0].tx + off,
					.length = (uint32_t)tv->step.size,
					.lkey = q->tx_mr->lkey};
		*wr = (struct ibv_send_wr){.sg_list = sge, .num_sge = 1};
		wr->wr.rdma.remote_addr = q->peer.qp.addr + off;
		wr->wr.rdma.rkey = q->peer.qp.rkey;
		switch (tv->lat_mode) {
		case TV_LAT_SEND:
			wr->opcode = IBV_WR_SEND;
			break;
		case TV_LAT_WRITE_IMM:
			wr->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
			break;
		case TV_LAT_WRITE_POLL:
			wr->opcode = IBV_WR_RDMA_WRITE;
			break;
		case TV_LAT_READ:
			sge->addr = (uintptr_t)tv->ctx->bufs[0].rx + off;
			sge->lkey = q->rx_mr->lkey;
			wr->opcode = IBV_WR_RDMA_READ;
			wr->wr.rdma.remote_addr = q->peer.read_addr + off;
			wr->wr.rdma.rkey = q->peer.read_rkey;
			break;
		}
	}
	return 0;
}

/* Ping (client) or pong (server) of iteration iter from tx slot to the peer's rx slot, or
 * (READ) the read of the peer's tx slot into our rx slot. */
static int tv_lat_send(struct tv *tv, uint64_t iter, int timeout_ms)
{
	struct ibv_send_wr *wr = &tv->lat_wr[iter % tv->step.slots];
	int r;

	r = tv_lat_sq_room(tv, timeout_ms);
	if (r < 0)
		return r;
	wr->send_flags = tv->lat_flags;
	if (tv->lat_mode == TV_LAT_WRITE_IMM)
		wr->imm_data = htonl((uint32_t)iter);
	else if (tv->lat_mode == TV_LAT_WRITE_POLL)
		tv_slot(tv, tv->ctx->bufs[0].tx, iter)[tv->step.size - 1] = tv_mark(iter);
	return tv_post_sq(tv, 0, wr, tv->lat_mode == TV_LAT_READ, 0);
}

/* The receive for message iter of this side (SEND: into the rx slot; WRITE_IMM: no data). */
static int tv_lat_post_recv(struct tv *tv, uint64_t iter)
{
	bool imm = tv->lat_mode == TV_LAT_WRITE_IMM;

	return tv_post_recv(tv, 0, iter, imm ? NULL : tv_slot(tv, tv->ctx->bufs[0].rx, iter),
			    imm ? 0 : (uint32_t)tv->step.size);
}

/* An RDMA read round trip (client): post the slot's prebuilt read and poll for its completion,
 * and nothing else between the two: ib_read_lat's loop. Under emulation the code and data
 * touched after the doorbell show in the sample (the read's responder runs as a tasklet, so
 * the kernel switches tasks and the TLB starts cold), so this path keeps them few: no send
 * queue bookkeeping (every read is signaled and waited for, so none is ever outstanding here),
 * one completion per poll, the clock looked at only when the answer is late. */
static int tv_lat_read(struct tv *tv, uint64_t iter, int timeout_ms)
{
	struct tv_qp *q = &tv->q[0];
	struct ibv_send_wr *wr = &tv->lat_wr[iter % tv->step.slots], *bad = NULL;
	uint64_t id = TV_WRID(TV_WR_SQ, 0, q->wr_posted);
	int64_t deadline = 0;
	struct ibv_wc wc;
	int k, r;

	wr->wr_id = id;
	wr->send_flags = IBV_SEND_SIGNALED;
	r = ibv_post_send(q->qp, wr, &bad);
	if (r)
		return tv_err(tv->ctx->err, r > 0 ? -r : -EIO, "verbs: posting a read: %s",
			      strerror(r > 0 ? r : EIO));
	for (uint32_t spin = 1;; spin++) {
		k = ibv_poll_cq(tv->cq, 1, &wc);
		if (k > 0)
			break;
		if (k < 0)
			return tv_err(tv->ctx->err, -EIO, "verbs: polling the CQ failed");
		if (spin % TV_SPIN_CHECK == 0) {
			int64_t now = util_now_mono_ms();

			if (deadline == 0)
				deadline = now + timeout_ms;
			else if (now >= deadline)
				return -ETIMEDOUT;
		}
	}
	if (wc.status != IBV_WC_SUCCESS)
		return tv_wc_fail(tv, &wc);
	if (wc.wr_id != id)
		return tv_err(tv->ctx->err, -EIO, "verbs: a completion of another read arrived");
	q->wr_posted++;
	q->wr_done = q->wr_posted;
	return 0;
}

static int tv_lat_iter(void *st, uint64_t iter, int timeout_ms)
{
	struct tv *tv = st;
	bool client = tv->ctx->role == BENCH_CLIENT;
	const volatile uint8_t *mark = NULL;
	int r;

	if (tv->lat_mode == TV_LAT_WRITE_POLL)
		mark = tv_slot(tv, tv->ctx->bufs[0].rx, iter) + tv->step.size - 1;
	if (client) {
		if (tv->lat_mode == TV_LAT_READ)
			return tv_lat_read(tv, iter, timeout_ms);
		if (!mark) {
			r = tv_lat_post_recv(tv, iter);
			if (r < 0)
				return r;
		}
		r = tv_lat_send(tv, iter, timeout_ms);
		if (r == 0)
			r = tv_lat_wait(tv, !mark, mark, tv_mark(iter), UINT64_MAX, iter,
					timeout_ms);
		return r;
	}
	/* Server: wait for the ping (keeping it across -EAGAIN), then answer. */
	if (tv->lat_mode == TV_LAT_READ)
		return tv_err(tv->ctx->err, -EINVAL, "verbs: a read target does not iterate");
	if (!tv->lat_have_ping) {
		r = tv_lat_wait(tv, !mark, mark, tv_mark(iter), UINT64_MAX, iter, timeout_ms);
		if (r == -ETIMEDOUT)
			return -EAGAIN;
		if (r < 0)
			return r;
		tv->lat_have_ping = true;
	}
	if (!mark && iter + 1 < tv->lat_total) {
		r = tv_lat_post_recv(tv, iter + 1);
		if (r < 0)
			return r;
	}
	tv->lat_have_ping = false;
	return tv_lat_send(tv, iter, (int)tv->p->io_timeout_ms);
}

/* ---- bandwidth ----------------------------------------------------------------------------- */

static int tv_bw_post_send(void *st, uint32_t qi, uint64_t msg)
{
	struct tv *tv = st;
	struct tv_qp *q;
	uint64_t off;

	if (qi >= tv->nq || msg != tv->q[qi].msgs_posted)
		return tv_err(tv->ctx->err, -EINVAL, "verbs: message %" PRIu64 " out of order",
			      msg);
	q = &tv->q[qi];
	off = (msg % tv->step.slots) * tv->step.size;
	struct ibv_sge sge = {.length = (uint32_t)tv->step.size};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1};

	if (tv->p->op == BENCH_OP_READ) {
		sge.addr = (uintptr_t)tv->ctx->bufs[qi].rx + off;
		sge.lkey = q->rx_mr->lkey;
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = q->peer.read_addr + off;
		wr.wr.rdma.rkey = q->peer.read_rkey;
	} else {
		sge.addr = (uintptr_t)tv->ctx->bufs[qi].tx + off;
		sge.lkey = q->tx_mr->lkey;
		if (tv->step.size <= tv->inline_size)
			wr.send_flags = IBV_SEND_INLINE;
		if (tv->p->op == BENCH_OP_SEND) {
			wr.opcode = IBV_WR_SEND;
		} else {
			wr.opcode = IBV_WR_RDMA_WRITE;
			wr.wr.rdma.remote_addr = q->peer.qp.addr + off;
			wr.wr.rdma.rkey = q->peer.qp.rkey;
		}
	}
	q->msgs_posted = msg + 1;
	/* The engine stops posting when its window is full: that one must be signaled. */
	return tv_post_sq(tv, qi, &wr, msg + 1 - q->msgs_reported >= tv->step.window, msg + 1);
}

static int tv_bw_post_recv(void *st, uint32_t qi, uint64_t msg)
{
	struct tv *tv = st;

	if (qi >= tv->nq)
		return -EINVAL;
	return tv_post_recv(tv, qi, msg, tv_slot(tv, tv->ctx->bufs[qi].rx, msg),
			    (uint32_t)tv->step.size);
}

/* Hand out the send completions known but not yet reported, in message order. */
static uint32_t tv_bw_emit(struct tv *tv, struct bench_cqe *cqes, uint32_t n, uint32_t max)
{
	for (uint32_t i = 0; i < tv->nq && n < max; i++) {
		struct tv_qp *q = &tv->q[i];

		while (n < max && q->msgs_reported < q->msgs_done)
			cqes[n++] = (struct bench_cqe){
				.msg = q->msgs_reported++, .qp = i, .kind = BENCH_CQE_SEND};
	}
	return n;
}

static int tv_bw_poll(void *st, struct bench_cqe *cqes, uint32_t max, int timeout_ms)
{
	struct tv *tv = st;
	struct ibv_wc wc[TV_WC_BATCH];
	int64_t deadline = timeout_ms > 0 ? util_now_mono_ms() + timeout_ms : 0;
	uint32_t n = 0;
	int k, r;

	/* Stopped below a full window (last messages of a run): flush the unsignaled tail. */
	for (uint32_t i = 0; i < tv->nq; i++)
		if (tv->q[i].tail_unsignaled && tv->q[i].sig_n == 0 &&
		    (r = tv_post_flush(tv, i)) < 0)
			return r;
	for (;;) {
		n = tv_bw_emit(tv, cqes, n, max);
		if (n >= max)
			return (int)n;
		k = ibv_poll_cq(tv->cq, (int)(max - n < TV_WC_BATCH ? max - n : TV_WC_BATCH), wc);
		if (k < 0)
			return tv_err(tv->ctx->err, -EIO, "verbs: polling the CQ failed");
		for (int j = 0; j < k; j++) {
			if (wc[j].status != IBV_WC_SUCCESS)
				return tv_wc_fail(tv, &wc[j]);
			if (TV_WRID_KIND(wc[j].wr_id) != TV_WR_RECV) {
				if ((r = tv_sq_done(tv, &wc[j])) < 0)
					return r;
				continue;
			}
			if (wc[j].byte_len != tv->step.size)
				return tv_err(tv->ctx->err, -EIO,
					      "verbs: QP %u received %u bytes, expected %" PRIu64,
					      TV_WRID_QP(wc[j].wr_id), wc[j].byte_len,
					      tv->step.size);
			if (TV_WRID_QP(wc[j].wr_id) >= tv->nq)
				return tv_err(tv->ctx->err, -EIO,
					      "verbs: stray receive completion");
			tv->q[TV_WRID_QP(wc[j].wr_id)].recv_done++;
			cqes[n++] = (struct bench_cqe){.msg = TV_WRID_N(wc[j].wr_id),
						       .qp = TV_WRID_QP(wc[j].wr_id),
						       .kind = BENCH_CQE_RECV};
		}
		n = tv_bw_emit(tv, cqes, n, max);
		if (n > 0)
			return (int)n;
		if (k == 0 && (deadline == 0 || util_now_mono_ms() >= deadline))
			return 0;
	}
}

/* Drop the receives still posted on QP qi (a duration-mode step posts beyond the peer's last
 * message): ERR flushes them, then RESET and back to RTS with the same path and the PSNs where
 * they stand. The peer's QP is idle and its PSNs match ours, so it needs no reset itself. */
static int tv_qp_reset(struct tv *tv, uint32_t qi)
{
	const int mask = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS | IBV_QP_AV |
			 IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER | IBV_QP_TIMEOUT |
			 IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			 IBV_QP_MAX_QP_RD_ATOMIC;
	struct tv_qp *q = &tv->q[qi];
	int64_t deadline = util_now_mono_ms() + tv->p->io_timeout_ms;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr s, a;
	struct ibv_wc wc;
	int k, r;

	r = ibv_query_qp(q->qp, &s, mask, &ia);
	if (r)
		goto fail;
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_ERR};
	r = ibv_modify_qp(q->qp, &a, IBV_QP_STATE);
	if (r)
		goto fail;
	while (q->recv_done < q->recv_posted) {
		k = ibv_poll_cq(tv->cq, 1, &wc);
		if (k < 0)
			return tv_err(tv->ctx->err, -EIO, "verbs: polling the CQ failed");
		if (k == 1 && TV_WRID_KIND(wc.wr_id) == TV_WR_RECV && TV_WRID_QP(wc.wr_id) < tv->nq)
			tv->q[TV_WRID_QP(wc.wr_id)].recv_done++;
		if (k == 0 && util_now_mono_ms() >= deadline)
			return tv_err(tv->ctx->err, -ETIMEDOUT,
				      "verbs: receives of QP %u were not flushed", qi);
	}
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RESET};
	r = ibv_modify_qp(q->qp, &a, IBV_QP_STATE);
	if (r)
		goto fail;
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_INIT,
				 .pkey_index = s.pkey_index,
				 .port_num = s.port_num ? s.port_num : tv->port,
				 .qp_access_flags = s.qp_access_flags};
	r = ibv_modify_qp(q->qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (r)
		goto fail;
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTR,
				 .ah_attr = s.ah_attr,
				 .path_mtu = s.path_mtu,
				 .dest_qp_num = s.dest_qp_num,
				 .rq_psn = s.rq_psn,
				 .max_dest_rd_atomic = s.max_dest_rd_atomic,
				 .min_rnr_timer = s.min_rnr_timer};
	r = ibv_modify_qp(q->qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (r)
		goto fail;
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS,
				 .timeout = s.timeout,
				 .retry_cnt = s.retry_cnt,
				 .rnr_retry = s.rnr_retry,
				 .sq_psn = s.sq_psn,
				 .max_rd_atomic = s.max_rd_atomic};
	r = ibv_modify_qp(q->qp, &a,
			  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (r)
		goto fail;
	log_debug("bench verbs: QP %u reset to drop its surplus receives", qi);
	return 0;
fail:
	return tv_err(tv->ctx->err, r > 0 ? -r : -EIO, "verbs: resetting QP %u: %s", qi,
		      strerror(r > 0 ? r : EIO));
}

/* ---- steps --------------------------------------------------------------------------------- */

static int tv_prepare(void *st, const struct bench_step *step)
{
	struct tv *tv = st;
	bool client = tv->ctx->role == BENCH_CLIENT;
	int r;

	if (step->size == 0 || step->slots == 0 || step->window == 0 ||
	    step->size * step->slots > tv->ctx->bufs[0].len)
		return tv_err(tv->ctx->err, -EINVAL, "verbs: bad step layout");
	/* Retire what the previous step left unsignaled, so every count starts clean. */
	for (uint32_t i = 0; i < tv->nq; i++) {
		struct tv_qp *q = &tv->q[i];
		int64_t deadline = util_now_mono_ms() + tv->p->io_timeout_ms;

		if (q->tail_unsignaled && q->sig_n == 0 && (r = tv_post_flush(tv, i)) < 0)
			return r;
		while (q->sig_n > 0) {
			struct ibv_wc wc;
			int k = ibv_poll_cq(tv->cq, 1, &wc);

			if (k < 0)
				return tv_err(tv->ctx->err, -EIO, "verbs: polling the CQ failed");
			if (k == 1 && wc.status != IBV_WC_SUCCESS)
				return tv_wc_fail(tv, &wc);
			if (k == 1 && TV_WRID_KIND(wc.wr_id) == TV_WR_RECV &&
			    TV_WRID_QP(wc.wr_id) < tv->nq)
				tv->q[TV_WRID_QP(wc.wr_id)].recv_done++;
			else if (k == 1 && (r = tv_sq_done(tv, &wc)) < 0)
				return r;
			if (k == 0 && util_now_mono_ms() >= deadline)
				return tv_err(tv->ctx->err, -ETIMEDOUT,
					      "verbs: QP %u did not drain", i);
		}
		if (q->recv_done < q->recv_posted && (r = tv_qp_reset(tv, i)) < 0)
			return r;
		q->msgs_posted = q->msgs_done = q->msgs_reported = 0;
	}
	tv->step = *step;
	if (tv->p->kind == BENCH_LAT) {
		tv->sig_every = TV_LAT_SIG;
		tv->lat_have_ping = false;
		tv->lat_recv_got = false;
		tv->lat_total = tv->p->iters ? tv->p->iters + tv->p->warmup : UINT64_MAX;
		if ((r = tv_lat_build(tv)) < 0)
			return r;
		if (tv->lat_mode == TV_LAT_WRITE_POLL)
			for (uint32_t s = 0; s < step->slots; s++)
				tv_slot(tv, tv->ctx->bufs[0].rx, s)[step->size - 1] = 0;
		/* The server's first ping must find its receive (the barrier follows). */
		if (!client && (tv->lat_mode == TV_LAT_SEND || tv->lat_mode == TV_LAT_WRITE_IMM))
			return tv_lat_post_recv(tv, 0);
		return 0;
	}
	tv->sig_every = step->window / 2;
	if (tv->sig_every > TV_BW_SIG_MAX)
		tv->sig_every = TV_BW_SIG_MAX;
	if (tv->sig_every < 1)
		tv->sig_every = 1;
	return 0;
}

const struct bench_transport_ops bench_transport_verbs = {
	.name = "verbs",
	.op_mask = (1u << BENCH_OP_SEND) | (1u << BENCH_OP_WRITE) | (1u << BENCH_OP_READ),
	.default_op = BENCH_OP_WRITE,
	.validate = tv_validate,
	.open = tv_open,
	.env = tv_env,
	.prepare = tv_prepare,
	.lat_iter = tv_lat_iter,
	.bw_post_send = tv_bw_post_send,
	.bw_post_recv = tv_bw_post_recv,
	.bw_poll = tv_bw_poll,
	.close = tv_close,
};
