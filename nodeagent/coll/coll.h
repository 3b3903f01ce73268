/* railyard-coll's backends (MPI, NCCL) as one ops table: the sweep in coll.c drives either
 * through these calls, so the timing, the check, the grouping and the JSON are written once.
 * Call order: open, buffers, then any number of (load, run, fetch), then close (also after a
 * failed open or buffers). Every call is collective: all ranks make it, in the same order. */
#ifndef RAILYARD_COLL_H
#define RAILYARD_COLL_H

#include "nodeagent/coll/coll_math.h"

#include <stddef.h>

struct coll_options {
	const char *nccl_lib; /* --nccl-lib (NULL: libnccl.so.2) */
	const char *cuda_lib; /* --cuda-lib (NULL: libcuda.so.1) */
};

struct coll_world {
	int rank, size;
	int local_rank; /* OMPI_COMM_WORLD_LOCAL_RANK, else the rank among its node's ranks */
};

struct coll_backend_ops {
	const char *name;
	/* Set up; the library's name and version in library (len bytes). The reason of a
	 * failure in err. */
	int (*open)(void **ret_state, const struct coll_world *w, const struct coll_options *o,
		    char *library, size_t len, char *err, size_t errlen);
	/* Send and receive buffers of at least send_bytes and recv_bytes. */
	int (*buffers)(void *state, size_t send_bytes, size_t recv_bytes, char *err, size_t errlen);
	/* Copy n floats of host data into the send buffer / the receive buffer out to host. */
	int (*load)(void *state, const float *host, size_t n, char *err, size_t errlen);
	int (*fetch)(void *state, float *host, size_t n, char *err, size_t errlen);
	/* Fill the first n floats of the receive buffer with NaNs (all bits set), so that only
	 * what the timed calls wrote can pass the check. */
	int (*poison)(void *state, size_t n, char *err, size_t errlen);
	/* op at sizes s, iters times back to back, returning once the last has completed. */
	int (*run)(void *state, enum coll_op op, const struct coll_sizes *s, int iters, char *err,
		   size_t errlen);
	/* Free everything; state may be NULL. */
	void (*close)(void *state);
};

extern const struct coll_backend_ops coll_backend_mpi;
extern const struct coll_backend_ops coll_backend_nccl;

#endif
