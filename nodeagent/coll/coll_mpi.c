/* railyard-coll's MPI backend: host buffers and the MPI library's own collectives
 * (MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block, MPI_Alltoall) and, for sendrecv, what
 * nccl-tests' sendrecv_perf does: each rank sends to rank+1 and receives from rank-1. */
#include "nodeagent/coll/coll.h"

#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mpi_state {
	int rank, size;
	float *send, *recv;
};

static int mpi_open(void **ret_state, const struct coll_world *w, const struct coll_options *o,
		    char *library, size_t len, char *err, size_t errlen)
{
	char v[MPI_MAX_LIBRARY_VERSION_STRING];
	struct mpi_state *st;
	int vlen = 0;

	(void)o;
	st = calloc(1, sizeof(*st));
	if (!st) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	st->rank = w->rank;
	st->size = w->size;
	MPI_Get_library_version(v, &vlen);
	v[vlen > 0 && vlen < (int)sizeof(v) ? vlen : 0] = '\0';
	v[strcspn(v, "\n")] = '\0'; /* the first line: "Open MPI v4.1.4, package: ..." */
	snprintf(library, len, "%s", v);
	*ret_state = st;
	return 0;
}

static int mpi_buffers(void *state, size_t send_bytes, size_t recv_bytes, char *err, size_t errlen)
{
	struct mpi_state *st = state;

	st->send = malloc(send_bytes ? send_bytes : 1);
	st->recv = malloc(recv_bytes ? recv_bytes : 1);
	if (!st->send || !st->recv) {
		snprintf(err, errlen, "cannot allocate %zu + %zu bytes of buffers", send_bytes,
			 recv_bytes);
		return -ENOMEM;
	}
	return 0;
}

static int mpi_load(void *state, const float *host, size_t n, char *err, size_t errlen)
{
	struct mpi_state *st = state;

	(void)err;
	(void)errlen;
	memcpy(st->send, host, n * sizeof(float));
	return 0;
}

static int mpi_fetch(void *state, float *host, size_t n, char *err, size_t errlen)
{
	struct mpi_state *st = state;

	(void)err;
	(void)errlen;
	memcpy(host, st->recv, n * sizeof(float));
	return 0;
}

static int mpi_poison(void *state, size_t n, char *err, size_t errlen)
{
	struct mpi_state *st = state;

	(void)err;
	(void)errlen;
	memset(st->recv, 0xff, n * sizeof(float));
	return 0;
}

static int mpi_run(void *state, enum coll_op op, const struct coll_sizes *s, int iters, char *err,
		   size_t errlen)
{
	struct mpi_state *st = state;
	int c = (int)s->count, r = MPI_SUCCESS;

	if (s->count > (size_t)0x7fffffff) {
		snprintf(err, errlen, "%zu elements exceed an MPI count", s->count);
		return -ERANGE;
	}
	for (int it = 0; it < iters && r == MPI_SUCCESS; it++) {
		switch (op) {
		case COLL_ALLREDUCE:
			r = MPI_Allreduce(st->send, st->recv, c, MPI_FLOAT, MPI_SUM,
					  MPI_COMM_WORLD);
			break;
		case COLL_ALLGATHER:
			r = MPI_Allgather(st->send, c, MPI_FLOAT, st->recv, c, MPI_FLOAT,
					  MPI_COMM_WORLD);
			break;
		case COLL_REDUCESCATTER:
			r = MPI_Reduce_scatter_block(st->send, st->recv, c, MPI_FLOAT, MPI_SUM,
						     MPI_COMM_WORLD);
			break;
		case COLL_ALLTOALL:
			r = MPI_Alltoall(st->send, c, MPI_FLOAT, st->recv, c, MPI_FLOAT,
					 MPI_COMM_WORLD);
			break;
		case COLL_SENDRECV:
			r = MPI_Sendrecv(st->send, c, MPI_FLOAT, (st->rank + 1) % st->size, 0,
					 st->recv, c, MPI_FLOAT,
					 (st->rank - 1 + st->size) % st->size, 0, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
			break;
		default:
			snprintf(err, errlen, "unknown op %d", (int)op);
			return -EINVAL;
		}
	}
	if (r != MPI_SUCCESS) {
		char msg[MPI_MAX_ERROR_STRING];
		int mlen = 0;

		MPI_Error_string(r, msg, &mlen);
		snprintf(err, errlen, "%s: %.*s", coll_op_name(op), mlen, msg);
		return -EIO;
	}
	return 0;
}

static void mpi_close(void *state)
{
	struct mpi_state *st = state;

	if (!st)
		return;
	free(st->send);
	free(st->recv);
	free(st);
}

const struct coll_backend_ops coll_backend_mpi = {
	.name = "mpi",
	.open = mpi_open,
	.buffers = mpi_buffers,
	.load = mpi_load,
	.fetch = mpi_fetch,
	.poison = mpi_poison,
	.run = mpi_run,
	.close = mpi_close,
};
