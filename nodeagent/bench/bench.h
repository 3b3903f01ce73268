/* Benchmark engine contract: parameters and their negotiation, the transport and memory-backend
 * ops tables, the control-connection helpers transports may use, and the run API that
 * railyard-bench and the agent call. The engine owns timing, iterations/duration, warm-up,
 * margins, statistics, interval samples and data-integrity checking; transports move bytes. */
#ifndef RAILYARD_BENCH_H
#define RAILYARD_BENCH_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define BENCH_WUR __attribute__((warn_unused_result))

/* ---- bounds (everything an outsider can set is bounded) ------------------------------------ */
#define BENCH_SIZE_MIN	    1u
#define BENCH_SIZE_MAX	    (8u << 20)	 /* 8 MiB per message */
#define BENCH_SWEEP_MIN	    2u		 /* -a: 2 B, 4 B, ... 8 MiB */
#define BENCH_ITERS_MAX	    100000000ull /* 1e8 */
#define BENCH_DURATION_MAX  3600u	 /* seconds */
#define BENCH_QPS_MAX	    64u
#define BENCH_DEPTH_MAX	    8192u	   /* bw window (outstanding messages per QP) */
#define BENCH_REGION_MAX    (256ull << 20) /* engine buffer bytes over all QPs (soft) */
#define BENCH_NAME_LEN	    16		   /* transport / memory names, NUL included */
#define BENCH_DEV_LEN	    64		   /* device name, NUL included */
#define BENCH_ERR_LEN	    256		   /* error messages, NUL included */
#define BENCH_DEFAULT_PORT  18515	   /* perftest's default */
#define BENCH_PROTO_MAGIC   0x5259424eu	   /* "RYBN" */
#define BENCH_PROTO_VERSION 1u
#define BENCH_PARAMS_WIRE   72	       /* bytes of packed negotiated parameters */
#define BENCH_AUTO	    UINT32_MAX /* warmup / margin_ms: engine default */
#define BENCH_IB_PORT_DEF   1	       /* HCA port when ib_port is 0 (perftest's -i default) */

enum bench_kind { BENCH_LAT = 1, BENCH_BW = 2 };

/* BENCH_OP_AUTO resolves to the transport's default_op before negotiation. Semantics per op
 * (slot i of a QP = bytes [i*size, (i+1)*size) of its tx or rx region, see struct bench_qp_buf):
 * - SEND:  the sender's tx slot travels to the receiver's rx slot of the same message number
 *          (messages arrive in order, so message m lands in rx slot m % slots).
 * - WRITE: RDMA write of the local tx slot into the peer's rx slot of the same index.
 * - READ:  RDMA read of the peer's tx slot into the local rx slot of the same index. */
enum bench_op { BENCH_OP_AUTO = 0, BENCH_OP_SEND = 1, BENCH_OP_WRITE = 2, BENCH_OP_READ = 3 };

enum bench_role { BENCH_SERVER = 1, BENCH_CLIENT = 2 };

/* Parameters of one test. "negotiated" fields travel to the peer and must be equal on both
 * sides (bench_params_compare()); "local" ones are this side's business. Zero means "default"
 * where noted; bench_params_init() writes the defaults, bench_params_validate() resolves the
 * rest and enforces the bounds above. */
struct bench_params {
	/* negotiated */
	enum bench_kind kind;
	enum bench_op op;
	char transport[BENCH_NAME_LEN]; /* "tcp", "verbs" */
	uint64_t size;			/* message bytes, BENCH_SIZE_MIN..BENCH_SIZE_MAX */
	bool sweep;			/* -a: every power of two BENCH_SWEEP_MIN..sweep_max */
	uint64_t sweep_max;   /* -a's largest size; 0: BENCH_SIZE_MAX. The transport's validate()
				 lowers it to the largest message its device takes; at negotiation
				 both sides take the smaller of the two (it is not compared) */
	uint64_t iters;	      /* per QP; 0 when duration_s is set */
	uint32_t duration_s;  /* -D; 0 when iters is set */
	uint32_t qps;	      /* bw: 1..BENCH_QPS_MAX; lat: 1 */
	uint32_t depth;	      /* bw window per QP; 0: 128 (bw), 1 (lat) */
	bool bidir;	      /* bw only: both sides send */
	bool rdma_cm;	      /* verbs: connect with rdma_cm instead of the TCP side channel */
	bool check_data;      /* fill with a pattern, verify at the receiver */
	uint32_t warmup;      /* iters mode: iterations (lat) or messages per QP (bw) run
				 before the iters measured ones; BENCH_AUTO:
				 min(iters/10, 1000); duration mode: 0 */
	uint32_t margin_ms;   /* duration mode: excluded at start and at end of the run;
				 BENCH_AUTO: min(duration/10, 2 s); iters mode: 0 */
	uint32_t interval_ms; /* bw interval samples; 0: 1000; 10..60000 */
	/* local */
	uint16_t port;		     /* control port; server: 0 = any (reported via on_ready) */
	char device[BENCH_DEV_LEN];  /* -d; "" = first/auto */
	int32_t gid_index;	     /* -x; -1 = choose by type and address */
	uint8_t ib_port;	     /* -i; verbs HCA port, 0 = default (port 1); with
					rdma_cm the address binding decides (must be 0) */
	uint32_t inline_size;	     /* verbs inline threshold; 0 = transport default */
	uint8_t traffic_class;	     /* verbs tclass */
	uint8_t service_level;	     /* verbs SL */
	char mem[BENCH_DEV_LEN];     /* memory backend: "host" (default), "cuda[:GPU]" */
	uint8_t gpudirect;	     /* enum bench_gpudirect: how verbs registers device memory */
	uint32_t connect_timeout_ms; /* client: connect + negotiation; server: wait for the
					client after listening. 0: 10000 */
	uint32_t io_timeout_ms;	     /* longest silence from the peer mid-test. 0: 10000 */
};

/* Fill p with the defaults: lat, op auto, transport "tcp", size 2, iters 1000, qps 1,
 * port BENCH_DEFAULT_PORT, gid_index -1, ib_port 0 (port 1), mem "host". Never fails. */
void bench_params_init(struct bench_params *p);

/* Check bounds and combinations and resolve defaults in place (depth, warmup, margin,
 * interval, timeouts, op AUTO via the named transport). On failure writes a one-line reason to
 * err (errlen bytes, may be 0) and returns -RY_E_INVALID (bad value/combination), -ERANGE (over
 * a bound) or -RY_E_NOT_FOUND (unknown transport or memory backend), -ENOTSUP (a known transport
 * this build lacks: "verbs transport not built") or the transport's validate() error. Not
 * thread-safe on p. */
BENCH_WUR int bench_params_validate(struct bench_params *p, char *err, size_t errlen);

/* Pack the negotiated fields of a validated p into BENCH_PARAMS_WIRE bytes (big-endian,
 * version BENCH_PROTO_VERSION), and back. unpack fills only negotiated fields of *ret_p (local
 * fields are zeroed) and returns -RY_E_INVALID on a bad magic, version or field. */
void bench_params_pack(const struct bench_params *p, uint8_t out[BENCH_PARAMS_WIRE]);
BENCH_WUR int bench_params_unpack(const uint8_t *buf, size_t len, struct bench_params *ret_p);

/* Compare the negotiated fields. 0 when equal; otherwise -RY_E_PARAM_MISMATCH and err gets a
 * message naming what differs, e.g. "peer runs bw with size 65536, we run lat with size 2". */
BENCH_WUR int bench_params_compare(const struct bench_params *ours, const struct bench_params *peer,
				   char *err, size_t errlen);

/* -a's largest size on a device whose largest message is device_max bytes: the largest power
 * of two (from BENCH_SWEEP_MIN) that is at most both sweep_max and device_max; 0 when even
 * BENCH_SWEEP_MIN is too large. */
uint64_t bench_sweep_clamp(uint64_t sweep_max, uint64_t device_max);

/* Short names: "lat"/"bw", "send"/"write"/"read"/"auto"; parse returns -RY_E_INVALID. */
const char *bench_kind_name(enum bench_kind k);
const char *bench_op_name(enum bench_op op);
BENCH_WUR int bench_kind_parse(const char *s, enum bench_kind *ret_kind);
BENCH_WUR int bench_op_parse(const char *s, enum bench_op *ret_op);

/* ---- memory backends ----------------------------------------------------------------------- */

/* A backend allocates the engine's buffers and fills/checks the data pattern (a device backend
 * copies through the host for that). The pattern of (seed, len) is deterministic: 8-byte word
 * w holds a 64-bit mix of (seed, w), so different seeds differ in (almost) every word.
 * A backend is named in bench_params.mem as NAME or NAME:ARG ("host", "cuda", "cuda:1",
 * "cuda:0000:18:00.0", "cuda:GPU-<uuid>"); each run opens its own instance (the void *st below)
 * on the engine's thread and closes it there; every function of an instance is called from
 * that thread only. */
struct bench_mem_env {
	char name[128];	 /* the device: "NVIDIA H200"; "" for host memory */
	char bus_id[32]; /* its PCI address */
	char uuid[48];
	int32_t index; /* CUDA ordinal; -1 for host memory */
};

struct bench_mem_ops {
	const char *name; /* "host", "cuda" */
	bool device;	  /* not CPU-addressable: transports copy through to_host/from_host or
			     register it for GPUDirect RDMA */
	/* Local checks of ARG (NULL when the name came alone) before any connection: the device
	 * exists. Reason to err (BENCH_ERR_LEN). NULL: accept anything. */
	int (*validate)(const char *arg, char *err);
	int (*open)(const char *arg, void **ret_st, char *err); /* NULL: st is NULL */
	void (*close)(void *st);				/* NULL st is fine */
	/* Allocate len bytes, page-aligned, zeroed. -ENOMEM, -errno. */
	int (*alloc)(void *st, size_t len, void **ret_buf);
	void (*free)(void *st, void *buf, size_t len); /* NULL buf is fine */
	/* Write the pattern of seed to buf. Host memory cannot fail; a device copy can (-EIO). */
	int (*fill)(void *st, void *buf, size_t len, uint64_t seed);
	/* 0 if buf holds the pattern of seed; -RY_E_DATA_MISMATCH otherwise, with the offset of
	 * the first differing byte in *ret_off (may be NULL); -EIO when it cannot be read. */
	int (*check)(void *st, const void *buf, size_t len, uint64_t seed, size_t *ret_off);
	/* Device backends only (NULL for host memory). */
	int (*to_host)(void *st, void *dst, const void *src, size_t len);   /* device -> host */
	int (*from_host)(void *st, void *dst, const void *src, size_t len); /* host -> device */
	/* Pinned host memory for staging copies (page-aligned, zeroed), and its release. */
	int (*staging_alloc)(void *st, size_t len, void **ret_buf);
	void (*staging_free)(void *st, void *buf, size_t len);
	/* Prepare buf (from alloc) for GPUDirect RDMA and export it as a dma-buf: *ret_fd (caller
	 * closes) and the offset of buf in it. -ENOTSUP when the device or driver cannot export
	 * (reason in err). NULL: no dma-buf. */
	int (*dmabuf)(void *st, void *buf, size_t len, int *ret_fd, uint64_t *ret_offset,
		      char *err);
	/* Prepare buf for registration through nvidia-peermem (ibv_reg_mr on the device
	 * address). NULL: nothing to do. */
	int (*peermem)(void *st, void *buf, size_t len, char *err);
	void (*env)(void *st, struct bench_mem_env *ret_env); /* NULL: host */
};

/* An open memory backend (the engine's; transports borrow it through bench_ctx). */
struct bench_mem {
	const struct bench_mem_ops *ops;
	void *st;
	char spec[BENCH_DEV_LEN]; /* what bench_params.mem said */
};

extern const struct bench_mem_ops bench_mem_host;
#ifdef RAILYARD_BENCH_HAVE_CUDA
extern const struct bench_mem_ops bench_mem_cuda; /* mem_cuda.c */
#endif

/* Backend of a memory spec ("cuda:1" -> cuda; *ret_arg, if non-NULL, gets "1", or NULL when
 * there is no ':'); NULL when unknown or not built (then bench_mem_known() tells whether the
 * name is a backend this build merely lacks, e.g. "cuda"). */
const struct bench_mem_ops *bench_mem_find(const char *spec, const char **ret_arg);
bool bench_mem_known(const char *spec);

/* Open the backend spec names into *ret (validated before: bench_params_validate()). Errors
 * (reason in err, BENCH_ERR_LEN): -RY_E_NOT_FOUND, or the backend's (-ENODEV, -ENOMEM...).
 * Close with bench_mem_close(), which accepts a zeroed or failed *m. */
BENCH_WUR int bench_mem_open(const char *spec, struct bench_mem *ret, char *err);
void bench_mem_close(struct bench_mem *m);

/* The data pattern on CPU-addressable memory (what the host backend does, and what a device
 * backend copies). check: as bench_mem_ops.check. */
void bench_pattern_fill(void *buf, size_t len, uint64_t seed);
BENCH_WUR int bench_pattern_check(const void *buf, size_t len, uint64_t seed, size_t *ret_off);

/* How a transport moves device memory, for the result ("mem_path"). */
enum bench_gpudirect {
	BENCH_GD_AUTO = 0, /* dma-buf when it works, else nvidia-peermem */
	BENCH_GD_DMABUF,   /* ibv_reg_dmabuf_mr on an exported dma-buf (perftest's
			      --use_cuda_dmabuf) */
	BENCH_GD_PEERMEM,  /* ibv_reg_mr on the device address (nvidia-peermem) */
};
const char *bench_gpudirect_name(enum bench_gpudirect g); /* "auto", "dmabuf", "peermem" */
BENCH_WUR int bench_gpudirect_parse(const char *s, enum bench_gpudirect *ret);

/* Registering device memory for RDMA, the choice between dma-buf and nvidia-peermem: a
 * transport gives the two ways it can register (reg_dmabuf: fd, offset, len, iova = the buffer's
 * address; reg_addr: the address itself), and this tries them in the order want asks for.
 * AUTO: dma-buf, then peermem when the dma-buf export or registration failed; DMABUF/PEERMEM:
 * that one only. *ret_used gets what worked; on AUTO's fallback note (notelen bytes, may be 0)
 * says why dma-buf was not used. Errors: the failure of the last way tried, with both reasons
 * in err (BENCH_ERR_LEN). The fd of an export is closed here once registered (the MR keeps its
 * reference). Pure apart from the callbacks and the memory backend. */
struct bench_gd_reg {
	int (*reg_dmabuf)(void *ud, int fd, uint64_t offset, size_t len, uint64_t iova);
	int (*reg_addr)(void *ud, void *addr, size_t len);
	void *ud;
};
BENCH_WUR int bench_gpudirect_register(enum bench_gpudirect want, const struct bench_mem *mem,
				       void *buf, size_t len, const struct bench_gd_reg *reg,
				       enum bench_gpudirect *ret_used, char *note, size_t notelen,
				       char *err);

/* ---- what the engine hands to a transport ------------------------------------------------- */

/* Per-QP buffers, allocated by the engine with the memory backend, owned by the engine,
 * valid from open() to close(). tx and rx are len bytes each (len >= max size * slots). */
struct bench_qp_buf {
	void *tx;
	void *rx;
	size_t len;
};

/* Slot layout of the current step (one message size). Slot i of a QP is [i*size, (i+1)*size)
 * of tx (outgoing) or rx (incoming); bw message m uses slot m % slots, lat iteration i uses slot
 * i % slots (lat has 2 slots, so a ping never lands on the slot the peer is still checking). */
struct bench_step {
	uint64_t size;
	uint32_t slots;
	uint32_t window; /* outstanding messages per QP the engine will keep (<= depth) */
};

struct bench_ctx {
	const struct bench_params *params; /* validated and agreed with the peer */
	enum bench_role role;
	int ctrl_fd;   /* connected control socket (blocking); the transport may exchange its own
			  setup data with bench_ctrl_send()/bench_ctrl_recv() in open() only */
	int listen_fd; /* server: the listening control socket, to accept data connections
			  (the tcp transport does); client: -1 */
	struct sockaddr_storage peer_addr; /* the peer's control address (client: incl. port) */
	socklen_t peer_addrlen;
	uint64_t cookie;	     /* random per run, agreed: tag data connections with it */
	const struct bench_mem *mem; /* the open memory backend of the buffers */
	struct bench_qp_buf *bufs;   /* params->qps entries */
	int timeout_ms;		     /* budget for open() (connect, exchange) */
	char *err;		     /* on failure write a one-line reason here (BENCH_ERR_LEN) */
};

/* A completion from bw_poll(): message number msg of qp finished (sent, or received). */
enum bench_cqe_kind { BENCH_CQE_SEND = 1, BENCH_CQE_RECV = 2 };
struct bench_cqe {
	uint64_t msg;
	uint32_t qp;
	enum bench_cqe_kind kind;
};

/* Additional facts for the result's "environment" (strings "" / numbers 0 when unknown). */
struct bench_env {
	char device[BENCH_DEV_LEN];
	uint32_t port;	       /* HCA port really used (verbs) */
	uint32_t mtu;	       /* active path MTU, bytes */
	char gid[48];	       /* "fe80:...:" form */
	int32_t gid_index;     /* -1 when not applicable */
	char link_layer[16];   /* "InfiniBand", "Ethernet", "tcp" */
	double link_gbps;      /* port rate */
	uint32_t inline_size;  /* effective inline threshold */
	uint8_t traffic_class; /* what the QPs were given (GRH traffic class; 0 without a GRH) */
	uint8_t service_level; /* what the QPs were given (address vector SL) */
	/* How the data reached device memory ("" for host memory): "staged" (copied through
	 * pinned host memory), "dmabuf", "peermem"; mem_note: why AUTO fell back ("" if not). */
	char mem_path[16];
	char mem_note[BENCH_ERR_LEN];
};

/* A transport. All functions are called from one engine thread per run; a transport instance
 * (the void *st from open) is never shared between runs. Timeouts are in milliseconds. Errors:
 * negative -errno / -RY_E_*; -ECONNRESET, -EPIPE or -EIO when the peer is gone, -ETIMEDOUT when
 * it stays silent. Ordering on both sides: validate, open, (env), per step: prepare, then data
 * functions, then close. close() must free everything even after an error.
 *
 * Latency: lat_iter() is one iteration on QP 0 (lat always has qps = 1).
 *   s = iter % step->slots below.
 *   SEND/WRITE, client: send tx slot s, wait until rx slot s holds the reply.
 *   SEND/WRITE, server: wait for the ping in rx slot s, reply with tx slot s.
 *   READ,  client: read the peer's tx slot s into rx slot s and wait for it. The server is
 *          passive: lat_iter is never called there.
 *   The server may return -EAGAIN when no ping arrived within timeout_ms; it keeps any partial
 *   progress and the engine calls again with the same iter. The client returns -ETIMEDOUT.
 * Bandwidth: the engine keeps up to step->window messages outstanding per QP.
 *   bw_post_send(qp, m): start message m (SEND: send tx slot; WRITE: write tx slot to the
 *     peer's rx slot; READ: read the peer's tx slot into the local rx slot). May only queue.
 *   bw_post_recv(qp, m) (SEND only, receiving side): allow message m into rx slot m % slots;
 *     the transport must not overwrite an rx slot before the engine re-posted it.
 *   bw_poll(): report up to max completions over all QPs, waiting at most timeout_ms (0: do
 *     not block) when there are none; returns their number (0 on timeout). A SEND/WRITE/READ
 *     initiator completion means the tx slot may be reused (READ: rx slot holds the data); a
 *     RECV completion means rx slot holds message msg. WRITE/READ targets get no completions.
 *   Completions of one QP and kind come in message order. */
struct bench_transport_ops {
	const char *name;
	uint32_t op_mask;	  /* (1u << BENCH_OP_SEND) | ... : ops it implements */
	enum bench_op default_op; /* what BENCH_OP_AUTO means here */
	/* Local checks before any connection (device exists, sizes allowed, op supported); NULL
	 * to accept. Write the reason to err (BENCH_ERR_LEN). May lower p->sweep_max to the
	 * device's largest message (and nothing else). */
	int (*validate)(struct bench_params *p, char *err);
	/* Build the data path for ctx->params->qps QPs over ctx->bufs, connect to the peer. The
	 * ctx and what it points to stay valid until close(). */
	int (*open)(const struct bench_ctx *ctx, void **ret_st);
	/* Optional: facts for the result. */
	void (*env)(void *st, struct bench_env *ret_env);
	/* Called on both sides before each step (one message size; warm-up included), then the
	 * engine runs a control-channel barrier, so receives posted here are in place before the
	 * peer starts. No messages are outstanding; message numbers restart at 0 each step; the
	 * transport drops what it still holds from the previous step (e.g. receives posted beyond
	 * the peer's last message in duration mode). NULL if nothing to do. */
	int (*prepare)(void *st, const struct bench_step *step);
	int (*lat_iter)(void *st, uint64_t iter, int timeout_ms);
	int (*bw_post_send)(void *st, uint32_t qp, uint64_t msg);
	int (*bw_post_recv)(void *st, uint32_t qp, uint64_t msg);
	int (*bw_poll)(void *st, struct bench_cqe *cqes, uint32_t max, int timeout_ms);
	void (*close)(void *st); /* NULL st is fine */
};

extern const struct bench_transport_ops bench_transport_tcp;
#ifdef RAILYARD_BENCH_HAVE_VERBS
extern const struct bench_transport_ops bench_transport_verbs; /* transport_verbs.c */
#endif

/* Transport by name; NULL when unknown or not built (then bench_transport_known() tells
 * whether the name is a transport this build merely lacks, e.g. "verbs"). */
const struct bench_transport_ops *bench_transport_find(const char *name);
bool bench_transport_known(const char *name);

/* Control-connection helpers (blocking, bounded by timeout_ms overall): send or receive
 * exactly len bytes. -ETIMEDOUT, -ECONNRESET (peer closed), -errno. Thread-safe per fd. */
BENCH_WUR int bench_ctrl_send(int fd, const void *buf, size_t len, int timeout_ms);
BENCH_WUR int bench_ctrl_recv(int fd, void *buf, size_t len, int timeout_ms);

/* ---- clock --------------------------------------------------------------------------------- */

/* Injectable monotonic clock in nanoseconds. now() returns 0 or -errno. The engine treats a
 * clock that goes back, or a measured interval of zero, as -RY_E_CLOCK (never inf/nan). */
struct bench_clock {
	int (*now)(void *ud, uint64_t *ret_ns);
	void *ud;
};

/* CLOCK_MONOTONIC_RAW (falls back to CLOCK_MONOTONIC). With the default clock (opts->clock
 * NULL) latency samples are read from the CPU's time-stamp counter where the kernel keeps time
 * with it, converted at a rate measured against this clock (docs/bench.md, "What is measured";
 * RAILYARD_BENCH_CLOCK=monotonic turns that off); an injected clock is used for everything. */
extern const struct bench_clock bench_clock_monotonic;

/* ---- running a test ------------------------------------------------------------------------ */

struct bench_run_opts {
	const struct bench_clock *clock; /* NULL: bench_clock_monotonic */
	const atomic_bool *cancel;	 /* NULL: never; looked at between iterations and
					    every 100 ms while waiting (a transport call itself
					    blocks at most io_timeout_ms) */
	uint64_t deadline_ms;		 /* absolute util_now_mono_ms() deadline; 0: none */
	/* Server: called once the control socket listens, with the bound port (useful with port
	 * 0), before waiting for the client. Runs on the calling thread. */
	void (*on_ready)(void *ud, uint16_t port);
	void *ud;
	/* Test hook: called on the sending side after the pattern was written to a tx slot and
	 * before it is posted (lat and bw, check_data only), e.g. to corrupt it. */
	void (*tx_hook)(void *ud, uint32_t qp, uint64_t msg, void *slot, size_t len);
	/* On failure a one-line reason is written here (may be NULL). */
	char *err;
	size_t errlen;
};

/* Run one test as server (listen on p->port, accept one client, negotiate, run every step)
 * or client (connect to peer:p->port). p is borrowed and validated in a copy. On success
 * *ret_result is the result document (caller frees with json_decref()); both sides return the
 * same results (the client measures; the server adds its receive-side checks). Blocks the
 * calling thread; run it off any event loop. Errors: -RY_E_INVALID/-ERANGE (params),
 * -RY_E_PARAM_MISMATCH (peer disagrees), -ECONNREFUSED/-ETIMEDOUT (peer not there),
 * -ECONNRESET/-EPIPE (peer lost mid-test), -RY_E_DATA_MISMATCH, -RY_E_CLOCK, -ECANCELED
 * (cancel flag or deadline), -ENODEV (device), -ENOMEM. All resources are freed on every
 * path. Thread-safe: independent runs may proceed in parallel. */
BENCH_WUR int bench_run_server(const struct bench_params *p, const struct bench_run_opts *opts,
			       json_t **ret_result);
BENCH_WUR int bench_run_client(const struct bench_params *p, const char *peer,
			       const struct bench_run_opts *opts, json_t **ret_result);

/* An error result document of the same schema ({"ok": false, "error": {"code", "message"}},
 * with the parameters), for callers that report failures as results. NULL on ENOMEM.
 * Caller frees with json_decref(). */
json_t *bench_result_error(const struct bench_params *p, enum bench_role role, int r,
			   const char *msg);

#endif
