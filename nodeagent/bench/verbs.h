/* Verbs transport core of the benchmark engine: open an RDMA device, query its port, choose the
 * GID by type and address, set up PD/MR/CQ/RC QP, connect to a peer (INIT->RTR->RTS) and move
 * data (send/recv, RDMA write) with completions polled against a deadline. */
#ifndef RAILYARD_BENCH_VERBS_H
#define RAILYARD_BENCH_VERBS_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VERBS_WUR	   __attribute__((warn_unused_result))
#define VERBS_GID_LEN	   16
#define VERBS_GID_STR_LEN  40 /* "xxxx:xxxx:xxxx:xxxx:xxxx:xxxx:xxxx:xxxx" + NUL */
#define VERBS_QP_INFO_WIRE 40 /* bytes of a packed struct verbs_qp_info (version 1) */
#define VERBS_CONN_WIRE	   56 /* bytes of a packed struct verbs_conn (qp_info + 16) */

struct ibv_context;
struct ibv_pd;
struct ibv_qp;

enum verbs_link_layer {
	VERBS_LINK_UNKNOWN = 0,
	VERBS_LINK_IB,
	VERBS_LINK_ETHERNET,
};

enum verbs_gid_type {
	VERBS_GID_TYPE_IB = 0,	/* InfiniBand, or "IB/RoCE v1" as sysfs writes it */
	VERBS_GID_TYPE_ROCE_V1, /* RoCE v1 (Ethernet, no IP header) */
	VERBS_GID_TYPE_ROCE_V2, /* RoCE v2 (UDP/IP): the one to use on Ethernet */
};

/* One valid GID table entry. */
struct verbs_gid_entry {
	uint32_t index;
	uint8_t raw[VERBS_GID_LEN];
	enum verbs_gid_type type;
};

struct verbs_port_info {
	int state;	/* enum ibv_port_state */
	int active_mtu; /* enum ibv_mtu: 1 (256) .. 5 (4096) */
	enum verbs_link_layer link_layer;
	uint16_t lid;
	uint32_t gid_table_len;
};

/* What a peer needs to connect its QP to ours; exchanged out of band (TCP, files). */
struct verbs_qp_info {
	uint32_t qpn;
	uint32_t psn; /* 24 bits */
	uint16_t lid;
	uint8_t mtu; /* enum ibv_mtu */
	uint8_t gid[VERBS_GID_LEN];
	uint64_t addr; /* registered buffer, for RDMA write/read */
	uint32_t rkey;
};

/* Everything a peer needs about one of our QPs in the benchmark transport: the QP (qp.addr and
 * qp.rkey name the region the peer writes into), the region it reads from, and how many RDMA
 * reads we accept as responder. */
struct verbs_conn {
	struct verbs_qp_info qp;
	uint64_t read_addr;
	uint32_t read_rkey;
	uint8_t rd_atomic; /* responder resources (max_dest_rd_atomic), 1..255 */
};

/* How to move a QP to RTS towards a peer (see verbs_qp_connect()). */
struct verbs_path {
	unsigned int port;
	enum verbs_link_layer link_layer;
	int mtu;	    /* enum ibv_mtu of our port; the path uses min(ours, peer's) */
	uint32_t gid_index; /* source GID (Ethernet: always used; IB: unused here) */
	uint8_t traffic_class;
	uint8_t service_level;	/* 0..15 */
	uint8_t rd_atomic;	/* RDMA reads we keep outstanding as requester, >= 1 */
	uint8_t dest_rd_atomic; /* reads we accept as responder, >= 1 */
	uint32_t psn;		/* our send PSN (24 bits) */
};

/* A completion handed back by verbs_ep_poll(). */
enum verbs_op { VERBS_OP_SEND = 1, VERBS_OP_RECV, VERBS_OP_WRITE };
struct verbs_completion {
	uint64_t wr_id;
	enum verbs_op op;
	uint32_t byte_len; /* receives only */
};

/* ---- pure helpers (no device; reentrant) -------------------------------------------------- */

/* Choose the GID to use from table[0..n) for a port of link layer ll:
 * - Ethernet: RoCE v2 entries only; with ipv4 non-NULL the GID must be ::ffff:<ipv4>, with NULL
 *   any IPv4-mapped RoCE v2 GID does (IPv6 GIDs are never chosen).
 * - InfiniBand: the IB (or sysfs "IB/RoCE v1") entry; ipv4 is ignored.
 * All-zero GIDs are skipped; among several matches the lowest index wins (order of table does
 * not matter). Writes the entry's index to *ret_index. Borrows table and ipv4.
 * Errors: -EINVAL (NULL table with n > 0, NULL ret_index, unknown link layer), -RY_E_NOT_FOUND
 * (no entry matches). */
VERBS_WUR int verbs_gid_select(const struct verbs_gid_entry *table, size_t n,
			       enum verbs_link_layer ll, const struct in_addr *ipv4,
			       uint32_t *ret_index);

/* Check an explicitly chosen GID index (-x) against table[0..n) of a port of link layer ll:
 * 0 when the entry is in use and of a type that port can route with (Ethernet: RoCE v2;
 * InfiniBand: IB), -RY_E_NOT_FOUND when the index is not in use (absent or all-zero GID),
 * -EPROTOTYPE when it is of the wrong type (then *ret_type, if non-NULL, gets it), -EINVAL on
 * bad arguments. Borrows table. */
VERBS_WUR int verbs_gid_usable(const struct verbs_gid_entry *table, size_t n,
			       enum verbs_link_layer ll, uint32_t index,
			       enum verbs_gid_type *ret_type);

/* True when raw is an IPv4-mapped address ::ffff:a.b.c.d; then *ret_addr (if non-NULL) gets it. */
bool verbs_gid_is_ipv4_mapped(const uint8_t raw[VERBS_GID_LEN], struct in_addr *ret_addr);

/* Format raw as sysfs does ("0000:0000:0000:0000:0000:ffff:c0a8:4d01") into out. */
void verbs_gid_format(const uint8_t raw[VERBS_GID_LEN], char out[VERBS_GID_STR_LEN]);

/* Parse the sysfs form of a GID. -EINVAL if malformed. */
VERBS_WUR int verbs_gid_parse(const char *s, uint8_t ret_raw[VERBS_GID_LEN]);

/* Parse a sysfs gid_attrs/types value ("RoCE v2", "IB/RoCE v1"). -EINVAL if unknown. */
VERBS_WUR int verbs_gid_type_parse(const char *s, enum verbs_gid_type *ret_type);

/* Bytes of an enum ibv_mtu value (1..5 -> 256..4096); 0 if out of range. */
int verbs_mtu_bytes(int mtu);

/* Serialise info into VERBS_QP_INFO_WIRE bytes (network byte order). */
void verbs_qp_info_pack(const struct verbs_qp_info *info, uint8_t out[VERBS_QP_INFO_WIRE]);

/* Parse VERBS_QP_INFO_WIRE bytes of a peer. -RY_E_INVALID if len is wrong or fields are out of
 * range (psn over 24 bits, mtu not 1..5). */
VERBS_WUR int verbs_qp_info_unpack(const uint8_t *buf, size_t len, struct verbs_qp_info *ret_info);

/* Serialise / parse a struct verbs_conn (VERBS_CONN_WIRE bytes, network order). unpack returns
 * -RY_E_INVALID on a wrong length, a bad embedded QP info or rd_atomic 0. */
void verbs_conn_pack(const struct verbs_conn *c, uint8_t out[VERBS_CONN_WIRE]);
VERBS_WUR int verbs_conn_unpack(const uint8_t *buf, size_t len, struct verbs_conn *ret_c);

/* Port rate in Gb/s from ibv_port_attr's active_speed (1 SDR ... 128 NDR; active_speed_ex when
 * non-zero wins) and active_width (1 = 1x, 16 = 2x, 2 = 4x, 4 = 8x, 8 = 12x); 0 when unknown. */
double verbs_port_gbps(uint32_t speed, uint32_t speed_ex, uint8_t width);

/* ---- host queries -------------------------------------------------------------------------- */

/* First IPv4 address of interface ifname (getifaddrs). -RY_E_NOT_FOUND if it has none. */
VERBS_WUR int verbs_ifaddr_ipv4(const char *ifname, struct in_addr *ret_addr);

/* Read the GID table of dev/port from sysfs under sysroot (NULL or "/" for the real one):
 * <sysroot>/sys/class/infiniband/<dev>/ports/<port>/{gids,gid_attrs/types}/<i>. Zero GIDs and
 * entries without a type are left out. *ret_table is allocated (caller frees with free()), may
 * be NULL when *ret_n is 0. Errors: -errno from the directory, -ENOMEM. */
VERBS_WUR int verbs_sysfs_gid_table(const char *sysroot, const char *dev, unsigned int port,
				    struct verbs_gid_entry **ret_table, size_t *ret_n);

/* ---- device -------------------------------------------------------------------------------- */

struct verbs_dev;

/* Open device name (NULL: the first one) and check that port exists; allocates its PD.
 * Caller frees with verbs_dev_free(). Errors: -EINVAL (port outside 1..255), -ENODEV (no such
 * device / no devices), -ERANGE (the device has fewer ports, see verbs_dev_port_count()),
 * -errno from libibverbs. A device object is used by one thread at a time. */
VERBS_WUR int verbs_dev_open(const char *name, unsigned int port, struct verbs_dev **ret_dev);

/* Names of the RDMA devices on this host, ", "-separated, into out (outlen bytes, always
 * NUL-terminated, truncated if needed); returns their number (0: none) or -errno. */
VERBS_WUR int verbs_dev_names(char *out, size_t outlen);

/* Close the device. The endpoints created on it must be freed first. NULL is fine. */
void verbs_dev_free(struct verbs_dev *dev);

/* Device name (borrowed; valid until verbs_dev_free) and the port it was opened on. */
const char *verbs_dev_name(const struct verbs_dev *dev);
unsigned int verbs_dev_port(const struct verbs_dev *dev);

/* How many physical ports device name (NULL: the first one) has (ports are numbered from 1),
 * and its name into ret_name (namelen bytes, may be 0). Opens and closes the device. Errors as
 * verbs_dev_open(). Thread-safe. */
VERBS_WUR int verbs_dev_port_count(const char *name, char *ret_name, size_t namelen,
				   unsigned int *ret_n);

/* The device's context and protection domain, borrowed (valid until verbs_dev_free()). */
struct ibv_context *verbs_dev_context(const struct verbs_dev *dev);
struct ibv_pd *verbs_dev_pd(const struct verbs_dev *dev);

/* Query the port now (state, active MTU, link layer, LID, GID table length). */
VERBS_WUR int verbs_dev_query_port(struct verbs_dev *dev, struct verbs_port_info *ret_info);

/* Read the valid entries of the port's GID table with their types (ibv_query_gid_table, sysfs
 * when the kernel lacks it). *ret_table: caller frees with free(). */
VERBS_WUR int verbs_dev_gid_table(struct verbs_dev *dev, struct verbs_gid_entry **ret_table,
				  size_t *ret_n);

/* Choose the port's GID with verbs_gid_select() (ipv4: see there) and return its index and
 * value. -RY_E_NOT_FOUND when none matches. */
VERBS_WUR int verbs_dev_pick_gid(struct verbs_dev *dev, const struct in_addr *ipv4,
				 uint32_t *ret_index, uint8_t ret_gid[VERBS_GID_LEN]);

/* Move an RC QP in RESET to RTS towards peer (borrowed): INIT (local write, remote write and
 * read), RTR (path MTU min(path->mtu, peer->mtu), GRH with path->gid_index, traffic class and
 * hop limit 64 on Ethernet, SL), RTS (timeout 14, 7 retries, infinite RNR retries). Errors:
 * -EINVAL (bad peer info or path), -errno from ibv_modify_qp. */
VERBS_WUR int verbs_qp_connect(struct ibv_qp *qp, const struct verbs_path *path,
			       const struct verbs_qp_info *peer);

/* ---- endpoint: MR + CQ + RC QP ------------------------------------------------------------- */

struct verbs_ep_attr {
	uint32_t gid_index;   /* from verbs_dev_pick_gid() */
	size_t buf_size;      /* registered buffer, 1 B .. 1 GiB */
	uint32_t max_send_wr; /* 0: 64 */
	uint32_t max_recv_wr; /* 0: 64 */
};

struct verbs_ep;

/* Create an endpoint on dev (borrowed; must outlive the endpoint): a zeroed page-aligned buffer
 * registered for local write and remote read/write, one CQ for both directions and an RC QP in
 * RESET. Caller frees with verbs_ep_free(). Errors: -EINVAL (attr, or gid_index names an unused
 * entry), -ENOMEM, -errno. An endpoint is used by one thread at a time. */
VERBS_WUR int verbs_ep_new(struct verbs_dev *dev, const struct verbs_ep_attr *attr,
			   struct verbs_ep **ret_ep);

/* Destroy QP, CQ, MR and buffer in reverse order. NULL is fine. */
void verbs_ep_free(struct verbs_ep *ep);

/* The registered buffer (owned by ep) and its size. */
void *verbs_ep_buf(const struct verbs_ep *ep);
size_t verbs_ep_buf_size(const struct verbs_ep *ep);

/* What the peer needs to connect to this endpoint. */
void verbs_ep_local_info(const struct verbs_ep *ep, struct verbs_qp_info *ret_info);

/* Move the QP RESET->INIT->RTR->RTS towards peer (borrowed). The path MTU is the smaller of
 * both ports' active MTUs. Errors: -EINVAL (bad peer info), -errno from ibv_modify_qp. */
VERBS_WUR int verbs_ep_connect(struct verbs_ep *ep, const struct verbs_qp_info *peer);

/* Post a receive of buf[off, off+len). -ERANGE outside the buffer, -errno from the post. */
VERBS_WUR int verbs_ep_post_recv(struct verbs_ep *ep, size_t off, size_t len, uint64_t wr_id);

/* Post a signaled send of buf[off, off+len). Errors as verbs_ep_post_recv(). */
VERBS_WUR int verbs_ep_post_send(struct verbs_ep *ep, size_t off, size_t len, uint64_t wr_id);

/* Post a signaled RDMA write of buf[off, off+len) to remote_addr/rkey of the peer. */
VERBS_WUR int verbs_ep_post_write(struct verbs_ep *ep, size_t off, size_t len, uint64_t remote_addr,
				  uint32_t rkey, uint64_t wr_id);

/* Busy-poll the CQ for one completion for at most timeout_ms. Errors: -ETIMEDOUT, -EIO (the
 * work request completed with an error status; logged at debug), -errno from ibv_poll_cq. */
VERBS_WUR int verbs_ep_poll(struct verbs_ep *ep, int timeout_ms, struct verbs_completion *ret_c);

#endif
