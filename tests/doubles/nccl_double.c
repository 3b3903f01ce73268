/* TEST DOUBLE of libnccl.so.2 — built only in the tests, never installed. railyard-coll loads it
 * instead of NCCL only when a test passes --nccl-lib (or puts it first on LD_LIBRARY_PATH under
 * the name libnccl.so.2); nothing else changes. It implements the NCCL calls railyard-coll makes
 * over MPI on host memory, synchronously (the stream argument is ignored: the work is done when
 * the call returns), so device buffers must be host-addressable: the libcuda double's are
 * (tests/gpu/libcuda_double.c). It proves railyard-coll's dlopen, symbols and arguments and
 * its correctness check, not NCCL's speed. It checks what the real library checks and a
 * careless caller gets wrong: a unique id that really came from rank 0 (ncclGetUniqueId +
 * broadcast), nranks and rank matching the job, float sums only, send/recv pairs matched
 * inside a group, communicators destroyed before exit (else the process exits 98).
 *
 * Knobs: RAILYARD_NCCL_DOUBLE_VERSION=code (ncclGetVersion; default 22105, "2.21.5");
 * RAILYARD_NCCL_DOUBLE_CORRUPT=allreduce: rank 0's ncclAllReduce output gets one wrong element
 * (its middle one, + 1), a faulty library as railyard-coll's check must see it end to end. */
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define API	     __attribute__((visibility("default")))
#define ID_BYTES     128
#define ID_MAGIC     "railyard-nccl-double"
#define GROUP_MAX    4096
#define NCCL_FLOAT32 7
#define NCCL_SUM     0

enum {
	ncclSuccess = 0,
	ncclSystemError = 2,
	ncclInternalError = 3,
	ncclInvalidArgument = 4,
	ncclInvalidUsage = 5,
};

typedef struct {
	char internal[ID_BYTES];
} ncclUniqueId;

struct ncclComm {
	MPI_Comm comm;
	int rank, size;
};
typedef struct ncclComm *ncclComm_t;
typedef void *cudaStream_t;

struct pending {
	bool send;
	void *buf;
	size_t count;
	int peer;
	ncclComm_t comm;
};

static int group_depth;
static struct pending group[GROUP_MAX];
static int group_n;
static int live_comms;

API int ncclGetVersion(int *version);
API int ncclGetUniqueId(ncclUniqueId *id);
API int ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
API int ncclCommDestroy(ncclComm_t comm);
API int ncclAllReduce(const void *send, void *recv, size_t count, int type, int op, ncclComm_t comm,
		      cudaStream_t s);
API int ncclAllGather(const void *send, void *recv, size_t sendcount, int type, ncclComm_t comm,
		      cudaStream_t s);
API int ncclReduceScatter(const void *send, void *recv, size_t recvcount, int type, int op,
			  ncclComm_t comm, cudaStream_t s);
API int ncclSend(const void *buf, size_t count, int type, int peer, ncclComm_t comm,
		 cudaStream_t s);
API int ncclRecv(void *buf, size_t count, int type, int peer, ncclComm_t comm, cudaStream_t s);
API int ncclGroupStart(void);
API int ncclGroupEnd(void);
API const char *ncclGetErrorString(int r);

int ncclGetVersion(int *version)
{
	const char *v = getenv("RAILYARD_NCCL_DOUBLE_VERSION");

	if (!version)
		return ncclInvalidArgument;
	*version = v && v[0] ? atoi(v) : 22105;
	return ncclSuccess;
}

int ncclGetUniqueId(ncclUniqueId *id)
{
	int rank = -1;

	if (!id)
		return ncclInvalidArgument;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	memset(id, 0, sizeof(*id));
	/* a value no other rank could make up: pid and clock of the maker */
	snprintf(id->internal, sizeof(id->internal), "%s %d %ld %.9f", ID_MAGIC, rank,
		 (long)getpid(), MPI_Wtime());
	return ncclSuccess;
}

int ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	ncclUniqueId root;
	int size, me, same, all_same;
	struct ncclComm *c;

	if (!comm)
		return ncclInvalidArgument;
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	if (nranks != size || rank != me) {
		fprintf(stderr,
			"nccl double: ncclCommInitRank(nranks %d, rank %d) in a job of %d "
			"(this is rank %d)\n",
			nranks, rank, size, me);
		return ncclInvalidArgument;
	}
	/* Real NCCL would hang or fail to connect with an id rank 0 did not broadcast. */
	memcpy(&root, &id, sizeof(root));
	MPI_Bcast(&root, sizeof(root), MPI_BYTE, 0, MPI_COMM_WORLD);
	same = memcmp(&root, &id, sizeof(id)) == 0 &&
	       strncmp(id.internal, ID_MAGIC, strlen(ID_MAGIC)) == 0;
	MPI_Allreduce(&same, &all_same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!all_same) {
		fprintf(stderr, "nccl double: rank %d: the unique id is not rank 0's\n", me);
		return ncclInvalidArgument;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return ncclSystemError;
	MPI_Comm_dup(MPI_COMM_WORLD, &c->comm);
	c->rank = me;
	c->size = size;
	*comm = c;
	live_comms++;
	return ncclSuccess;
}

int ncclCommDestroy(ncclComm_t comm)
{
	if (!comm)
		return ncclInvalidArgument;
	MPI_Comm_free(&comm->comm);
	free(comm);
	live_comms--;
	return ncclSuccess;
}

static int args_ok(int type, int op, ncclComm_t comm)
{
	if (!comm || type != NCCL_FLOAT32 || op != NCCL_SUM) {
		fprintf(stderr, "nccl double: unsupported call (type %d, op %d, comm %p)\n", type,
			op, (void *)comm);
		return 0;
	}
	return 1;
}

int ncclAllReduce(const void *send, void *recv, size_t count, int type, int op, ncclComm_t comm,
		  cudaStream_t s)
{
	(void)s;
	if (!args_ok(type, op, comm) || !send || !recv || group_depth)
		return ncclInvalidArgument;
	if (MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, comm->comm) != MPI_SUCCESS)
		return ncclSystemError;
	{
		const char *bad = getenv("RAILYARD_NCCL_DOUBLE_CORRUPT");

		if (bad && strcmp(bad, "allreduce") == 0 && comm->rank == 0 && count > 0)
			((float *)recv)[count / 2] += 1;
	}
	return ncclSuccess;
}

int ncclAllGather(const void *send, void *recv, size_t sendcount, int type, ncclComm_t comm,
		  cudaStream_t s)
{
	(void)s;
	if (!args_ok(type, NCCL_SUM, comm) || !send || !recv || group_depth)
		return ncclInvalidArgument;
	return MPI_Allgather(send, (int)sendcount, MPI_FLOAT, recv, (int)sendcount, MPI_FLOAT,
			     comm->comm) == MPI_SUCCESS
		       ? ncclSuccess
		       : ncclSystemError;
}

int ncclReduceScatter(const void *send, void *recv, size_t recvcount, int type, int op,
		      ncclComm_t comm, cudaStream_t s)
{
	(void)s;
	if (!args_ok(type, op, comm) || !send || !recv || group_depth)
		return ncclInvalidArgument;
	return MPI_Reduce_scatter_block(send, recv, (int)recvcount, MPI_FLOAT, MPI_SUM,
					comm->comm) == MPI_SUCCESS
		       ? ncclSuccess
		       : ncclSystemError;
}

static int p2p(bool send, void *buf, size_t count, int type, int peer, ncclComm_t comm)
{
	if (!args_ok(type, NCCL_SUM, comm) || !buf || peer < 0 || peer >= comm->size)
		return ncclInvalidArgument;
	if (!group_depth) {
		fprintf(stderr, "nccl double: ncclSend/ncclRecv outside a group\n");
		return ncclInvalidUsage;
	}
	if (group_n == GROUP_MAX)
		return ncclInternalError;
	group[group_n++] = (struct pending){send, buf, count, peer, comm};
	return ncclSuccess;
}

int ncclSend(const void *buf, size_t count, int type, int peer, ncclComm_t comm, cudaStream_t s)
{
	(void)s;
	return p2p(true, (void *)buf, count, type, peer, comm);
}

int ncclRecv(void *buf, size_t count, int type, int peer, ncclComm_t comm, cudaStream_t s)
{
	(void)s;
	return p2p(false, buf, count, type, peer, comm);
}

int ncclGroupStart(void)
{
	group_depth++;
	return ncclSuccess;
}

int ncclGroupEnd(void)
{
	MPI_Request req[GROUP_MAX];
	int r = MPI_SUCCESS;

	if (group_depth == 0)
		return ncclInvalidUsage;
	if (--group_depth > 0)
		return ncclSuccess;
	for (int i = 0; i < group_n; i++) {
		struct pending *p = &group[i];

		r = p->send ? MPI_Isend(p->buf, (int)p->count, MPI_FLOAT, p->peer, 7, p->comm->comm,
					&req[i])
			    : MPI_Irecv(p->buf, (int)p->count, MPI_FLOAT, p->peer, 7, p->comm->comm,
					&req[i]);
		if (r != MPI_SUCCESS) {
			group_n = i;
			break;
		}
	}
	if (group_n > 0)
		MPI_Waitall(group_n, req, MPI_STATUSES_IGNORE);
	group_n = 0;
	return r == MPI_SUCCESS ? ncclSuccess : ncclSystemError;
}

const char *ncclGetErrorString(int r)
{
	switch (r) {
	case ncclSuccess:
		return "no error";
	case ncclSystemError:
		return "unhandled system error";
	case ncclInternalError:
		return "internal error";
	case ncclInvalidArgument:
		return "invalid argument";
	case ncclInvalidUsage:
		return "invalid usage";
	default:
		return "unknown result code";
	}
}

/* Communicators left at exit: the caller forgot ncclCommDestroy. */
__attribute__((destructor)) static void d_leakcheck(void)
{
	if (live_comms > 0) {
		fprintf(stderr, "nccl double: %d communicators not destroyed at exit\n",
			live_comms);
		_exit(98);
	}
}
