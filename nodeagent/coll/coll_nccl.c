/* railyard-coll's NCCL backend: one rank per GPU (the node-local rank picks the CUDA ordinal),
 * libnccl.so.2 loaded with dlopen() at run time (or --nccl-lib: the tests' double,
 * tests/doubles/nccl_double.c), CUDA through the agent's dlopen()ed driver layer
 * (nodeagent/bench/cuda.h; --cuda-lib sets its seam). The communicator is made as nccl-tests
 * makes it: ncclGetUniqueId on rank 0, MPI_Bcast, ncclCommInitRank; all-to-all and sendrecv
 * are grouped ncclSend/ncclRecv as in nccl-tests' alltoall.cu and sendrecv.cu. Each run()
 * enqueues its calls on one stream and synchronizes it once at the end. The stream is a
 * blocking one (not CU_STREAM_NON_BLOCKING): the data copies and the NaN fill go through the
 * legacy default stream (cuMemcpyHtoD, cuMemsetD8), which then orders them before the calls. */
#include "nodeagent/bench/cuda.h"
#include "nodeagent/coll/coll.h"

#include <dlfcn.h>
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCCL_LIBRARY  "libnccl.so.2"
#define NCCL_ID_BYTES 128 /* NCCL_UNIQUE_ID_BYTES */
#define NCCL_FLOAT    7	  /* ncclFloat32 */
#define NCCL_SUM      0	  /* ncclSum */

struct nccl_id {
	char internal[NCCL_ID_BYTES];
};
struct nccl_comm;

/* NCCL's API as nccl.h declares it (ncclResult_t is an int enum, 0 ncclSuccess; cudaStream_t
 * is the driver's CUstream). */
struct nccl_api {
	int (*get_version)(int *version);
	int (*get_unique_id)(struct nccl_id *id);
	int (*comm_init_rank)(struct nccl_comm **comm, int nranks, struct nccl_id id, int rank);
	int (*comm_destroy)(struct nccl_comm *comm);
	int (*all_reduce)(const void *send, void *recv, size_t count, int type, int op,
			  struct nccl_comm *comm, struct bcu_stream *s);
	int (*all_gather)(const void *send, void *recv, size_t sendcount, int type,
			  struct nccl_comm *comm, struct bcu_stream *s);
	int (*reduce_scatter)(const void *send, void *recv, size_t recvcount, int type, int op,
			      struct nccl_comm *comm, struct bcu_stream *s);
	int (*send)(const void *buf, size_t count, int type, int peer, struct nccl_comm *comm,
		    struct bcu_stream *s);
	int (*recv)(void *buf, size_t count, int type, int peer, struct nccl_comm *comm,
		    struct bcu_stream *s);
	int (*group_start)(void);
	int (*group_end)(void);
	const char *(*get_error_string)(int r);
};

static const struct {
	size_t off;
	const char *name;
} nccl_syms[] = {
	{offsetof(struct nccl_api, get_version), "ncclGetVersion"},
	{offsetof(struct nccl_api, get_unique_id), "ncclGetUniqueId"},
	{offsetof(struct nccl_api, comm_init_rank), "ncclCommInitRank"},
	{offsetof(struct nccl_api, comm_destroy), "ncclCommDestroy"},
	{offsetof(struct nccl_api, all_reduce), "ncclAllReduce"},
	{offsetof(struct nccl_api, all_gather), "ncclAllGather"},
	{offsetof(struct nccl_api, reduce_scatter), "ncclReduceScatter"},
	{offsetof(struct nccl_api, send), "ncclSend"},
	{offsetof(struct nccl_api, recv), "ncclRecv"},
	{offsetof(struct nccl_api, group_start), "ncclGroupStart"},
	{offsetof(struct nccl_api, group_end), "ncclGroupEnd"},
	{offsetof(struct nccl_api, get_error_string), "ncclGetErrorString"},
};

struct nccl_state {
	int rank, size, dev;
	void *lib;
	struct nccl_api n;
	const struct bench_cuda *cu;
	bool ctx_held;
	struct bcu_stream *stream;
	struct nccl_comm *comm;
	uint64_t send, recv;
	size_t send_len, recv_len;
};

static int nccl_fail(const struct nccl_state *st, const char *what, int r, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: %s (%d)", what, st->n.get_error_string(r), r);
	return -EIO;
}

static int cuda_fail(const struct nccl_state *st, const char *what, int r, char *err, size_t errlen)
{
	char why[128];

	snprintf(err, errlen, "%s: %s", what, bench_cuda_strerror(st->cu, r, why, sizeof(why)));
	return bench_cuda_errno(r);
}

/* This rank's part of open(): the libraries, the GPU, the stream. No collective call. */
static int open_local(struct nccl_state *st, const struct coll_world *w,
		      const struct coll_options *o, char *err, size_t errlen)
{
	const char *lib = o->nccl_lib ? o->nccl_lib : NCCL_LIBRARY;
	struct bcu_ctx *ctx;
	int r, ngpus = 0;

	if (o->cuda_lib && setenv(BENCH_CUDA_SEAM_ENV, o->cuda_lib, 1) < 0)
		return -errno;
	if ((r = bench_cuda_get(&st->cu, err, errlen)) < 0)
		return r;
	if ((r = st->cu->device_get_count(&ngpus)) != BCU_SUCCESS)
		return cuda_fail(st, "cuDeviceGetCount", r, err, errlen);
	if (w->local_rank >= ngpus) {
		snprintf(err, errlen,
			 "node-local rank %d has no GPU (%d here): one rank per GPU, no more",
			 w->local_rank, ngpus);
		return -ENODEV;
	}
	if ((r = st->cu->device_get(&st->dev, w->local_rank)) != BCU_SUCCESS)
		return cuda_fail(st, "cuDeviceGet", r, err, errlen);
	if ((r = st->cu->primary_ctx_retain(&ctx, st->dev)) != BCU_SUCCESS)
		return cuda_fail(st, "cuDevicePrimaryCtxRetain", r, err, errlen);
	st->ctx_held = true;
	if ((r = st->cu->ctx_set_current(ctx)) != BCU_SUCCESS)
		return cuda_fail(st, "cuCtxSetCurrent", r, err, errlen);
	if ((r = st->cu->stream_create(&st->stream, 0)) != BCU_SUCCESS)
		return cuda_fail(st, "cuStreamCreate", r, err, errlen);

	st->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!st->lib) {
		const char *e = dlerror();

		snprintf(err, errlen, "cannot load %s: %s", lib, e ? e : "not found");
		return -ENOENT;
	}
	for (size_t i = 0; i < sizeof(nccl_syms) / sizeof(nccl_syms[0]); i++) {
		void *fn = dlsym(st->lib, nccl_syms[i].name);

		if (!fn) {
			snprintf(err, errlen, "%s lacks %s", lib, nccl_syms[i].name);
			return -ENOSYS;
		}
		memcpy((char *)&st->n + nccl_syms[i].off, &fn, sizeof(fn));
	}
	return 0;
}

static void nccl_close(void *state);

static int nccl_open(void **ret_state, const struct coll_world *w, const struct coll_options *o,
		     char *library, size_t len, char *err, size_t errlen)
{
	struct nccl_state *st = calloc(1, sizeof(*st));
	struct nccl_id id;
	int ok, all_ok = 0, r = 0, v = 0;

	if (!st) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	*ret_state = st;
	st->rank = w->rank;
	st->size = w->size;
	ok = (r = open_local(st, w, o, err, errlen)) == 0;
	if (ok && st->rank == 0 && (r = st->n.get_unique_id(&id)) != 0) {
		nccl_fail(st, "ncclGetUniqueId", r, err, errlen);
		ok = 0;
	}
	/* Everyone loaded, or nobody enters the broadcast. */
	MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!all_ok) {
		if (ok)
			snprintf(err, errlen, "another rank could not set up NCCL");
		return r < 0 ? r : -EIO;
	}
	MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
	if ((r = st->n.comm_init_rank(&st->comm, st->size, id, st->rank)) != 0)
		return nccl_fail(st, "ncclCommInitRank", r, err, errlen);
	if ((r = st->n.get_version(&v)) != 0)
		return nccl_fail(st, "ncclGetVersion", r, err, errlen);
	/* NCCL_VERSION(X,Y,Z): X*10000 + Y*100 + Z since 2.9, X*1000 + Y*100 + Z before */
	if (v >= 20900)
		snprintf(library, len, "NCCL %d.%d.%d", v / 10000, v / 100 % 100, v % 100);
	else
		snprintf(library, len, "NCCL %d.%d.%d", v / 1000, v / 100 % 10, v % 100);
	return 0;
}

static int nccl_buffers(void *state, size_t send_bytes, size_t recv_bytes, char *err, size_t errlen)
{
	struct nccl_state *st = state;
	int r;

	if ((r = st->cu->mem_alloc(&st->send, send_bytes ? send_bytes : 4)) != BCU_SUCCESS) {
		st->send = 0;
		return cuda_fail(st, "cuMemAlloc (send buffer)", r, err, errlen);
	}
	if ((r = st->cu->mem_alloc(&st->recv, recv_bytes ? recv_bytes : 4)) != BCU_SUCCESS) {
		st->recv = 0;
		return cuda_fail(st, "cuMemAlloc (receive buffer)", r, err, errlen);
	}
	st->send_len = send_bytes;
	st->recv_len = recv_bytes;
	return 0;
}

static int nccl_load(void *state, const float *host, size_t n, char *err, size_t errlen)
{
	struct nccl_state *st = state;
	int r = st->cu->memcpy_htod(st->send, host, n * sizeof(float));

	return r == BCU_SUCCESS ? 0 : cuda_fail(st, "cuMemcpyHtoD", r, err, errlen);
}

static int nccl_fetch(void *state, float *host, size_t n, char *err, size_t errlen)
{
	struct nccl_state *st = state;
	int r;

	/* the receive buffer starts undefined: a call that wrote nothing is then caught */
	r = st->cu->memcpy_dtoh(host, st->recv, n * sizeof(float));
	return r == BCU_SUCCESS ? 0 : cuda_fail(st, "cuMemcpyDtoH", r, err, errlen);
}

static int nccl_poison(void *state, size_t n, char *err, size_t errlen)
{
	struct nccl_state *st = state;
	int r = st->cu->memset_d8(st->recv, 0xff, n * sizeof(float));

	return r == BCU_SUCCESS ? 0 : cuda_fail(st, "cuMemsetD8", r, err, errlen);
}

static int grouped(struct nccl_state *st, enum coll_op op, const struct coll_sizes *s)
{
	void *sb = (void *)(uintptr_t)st->send, *rb = (void *)(uintptr_t)st->recv;
	int r, r2;

	if ((r = st->n.group_start()) != 0)
		return r;
	if (op == COLL_SENDRECV) {
		r = st->n.send(sb, s->count, NCCL_FLOAT, (st->rank + 1) % st->size, st->comm,
			       st->stream);
		if (r == 0)
			r = st->n.recv(rb, s->count, NCCL_FLOAT,
				       (st->rank - 1 + st->size) % st->size, st->comm, st->stream);
	} else {
		size_t block = s->count * sizeof(float);

		for (int p = 0; p < st->size && r == 0; p++) {
			r = st->n.send((char *)sb + (size_t)p * block, s->count, NCCL_FLOAT, p,
				       st->comm, st->stream);
			if (r == 0)
				r = st->n.recv((char *)rb + (size_t)p * block, s->count, NCCL_FLOAT,
					       p, st->comm, st->stream);
		}
	}
	r2 = st->n.group_end();
	return r ? r : r2;
}

static int nccl_run(void *state, enum coll_op op, const struct coll_sizes *s, int iters, char *err,
		    size_t errlen)
{
	struct nccl_state *st = state;
	void *sb = (void *)(uintptr_t)st->send, *rb = (void *)(uintptr_t)st->recv;
	int r = 0;

	for (int it = 0; it < iters && r == 0; it++) {
		switch (op) {
		case COLL_ALLREDUCE:
			r = st->n.all_reduce(sb, rb, s->count, NCCL_FLOAT, NCCL_SUM, st->comm,
					     st->stream);
			break;
		case COLL_ALLGATHER:
			r = st->n.all_gather(sb, rb, s->count, NCCL_FLOAT, st->comm, st->stream);
			break;
		case COLL_REDUCESCATTER:
			r = st->n.reduce_scatter(sb, rb, s->count, NCCL_FLOAT, NCCL_SUM, st->comm,
						 st->stream);
			break;
		case COLL_ALLTOALL:
		case COLL_SENDRECV:
			r = grouped(st, op, s);
			break;
		default:
			snprintf(err, errlen, "unknown op %d", (int)op);
			return -EINVAL;
		}
	}
	if (r != 0)
		return nccl_fail(st, coll_op_name(op), r, err, errlen);
	if ((r = st->cu->stream_synchronize(st->stream)) != BCU_SUCCESS)
		return cuda_fail(st, "cuStreamSynchronize", r, err, errlen);
	return 0;
}

static void nccl_close(void *state)
{
	struct nccl_state *st = state;

	if (!st)
		return;
	if (st->comm)
		(void)st->n.comm_destroy(st->comm);
	if (st->send)
		(void)st->cu->mem_free(st->send);
	if (st->recv)
		(void)st->cu->mem_free(st->recv);
	if (st->stream)
		(void)st->cu->stream_destroy(st->stream);
	if (st->ctx_held) {
		(void)st->cu->ctx_set_current(NULL);
		(void)st->cu->primary_ctx_release(st->dev);
	}
	/* the library stays loaded: NCCL keeps threads that must not lose their code */
	free(st);
}

const struct coll_backend_ops coll_backend_nccl = {
	.name = "nccl",
	.open = nccl_open,
	.buffers = nccl_buffers,
	.load = nccl_load,
	.fetch = nccl_fetch,
	.poison = nccl_poison,
	.run = nccl_run,
	.close = nccl_close,
};
