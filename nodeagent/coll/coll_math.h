/* The arithmetic of railyard-coll, pure and tested alone (tests/unit/test_coll_math.c): each
 * operation's element counts and byte count per sweep size, the bus-bandwidth factor, the test
 * data and the exact result every rank must hold, the checker, sizes and op lists as typed on
 * the command line, the circle-method schedule of node pairs, and the CPU figures of the result.
 *
 * Definitions are NVIDIA/nccl-tests' (v2.19.6, src/{all_reduce,all_gather,reduce_scatter,
 * alltoall,sendrecv}.cu *GetCollByteCount and *GetBw; doc/PERFORMANCE.md): see docs/bench.md,
 * "Collectives". */
#ifndef RAILYARD_COLL_MATH_H
#define RAILYARD_COLL_MATH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum coll_op {
	COLL_ALLREDUCE,
	COLL_ALLGATHER,
	COLL_REDUCESCATTER,
	COLL_ALLTOALL,
	COLL_SENDRECV,
	COLL_OPS
};

#define COLL_OPS_ALL	((1u << COLL_OPS) - 1)
#define COLL_ELEM	4u /* sizeof(float): the data type is float */
#define COLL_MAX_BYTES	(16ull << 30)
#define COLL_SUM_PERIOD 13 /* the test data repeat every 13 elements */

/* "allreduce", ... ; NULL for an unknown op. */
const char *coll_op_name(enum coll_op op);

/* A comma-separated list of op names ("allreduce,sendrecv") as a bit mask (1 << op). -EINVAL
 * on an unknown or empty name (the first bad one copied to bad, badlen bytes, may be 0). */
__attribute__((warn_unused_result)) int coll_ops_parse(const char *list, unsigned *ret_mask,
						       char *bad, size_t badlen);

/* A byte count: decimal digits with an optional K, M or G suffix (powers of 2). -EINVAL when
 * malformed, -ERANGE when 0 or over COLL_MAX_BYTES. */
__attribute__((warn_unused_result)) int coll_size_parse(const char *s, uint64_t *ret);

/* One op at one sweep size over nranks ranks, as nccl-tests' GetCollByteCount gives it for a
 * 4-byte type: count = size / 4 elements; allgather, reducescatter and alltoall split it per
 * rank rounded down to 16 bytes. */
struct coll_sizes {
	size_t count;	   /* nccl-tests' "count": the call's count parameter (elements) */
	size_t send_count; /* elements in each rank's send buffer */
	size_t recv_count; /* elements in each rank's receive buffer */
	uint64_t bytes;	   /* nccl-tests' "size": max(send, recv) x 4 */
};

/* The sizes of op at sweep size size_bytes. false when the call would move nothing (count 0:
 * the size is under 4 bytes, or under 16 x nranks bytes for a per-rank split); nccl-tests
 * prints such a line with 0 bytes, railyard-coll leaves it out. nranks >= 1. */
bool coll_sizes_for(enum coll_op op, uint64_t size_bytes, int nranks, struct coll_sizes *ret);

/* busbw / algbw for op over nranks: allreduce 2(n-1)/n; allgather, reducescatter, alltoall
 * (n-1)/n; sendrecv 1. */
double coll_busbw_factor(enum coll_op op, int nranks);

/* The test data: element index of rank's input is ((rank x 7 + index) mod 13) - 6, a small
 * integer, so every sum over ranks is exact in float (up to 2^24 / 6 ranks). */
float coll_input(int rank, size_t index);

/* Fill rank's send buffer (s->send_count elements) for op. */
void coll_fill(enum coll_op op, int rank, int nranks, const struct coll_sizes *s, float *buf);

/* The sums over nranks ranks of coll_input(r, i), which depend on i mod 13 only. */
struct coll_sums {
	float v[COLL_SUM_PERIOD];
};
void coll_sums_init(struct coll_sums *ret, int nranks);

/* What element i of rank's receive buffer must hold after op (sums from coll_sums_init() with
 * the same nranks). */
float coll_expected(enum coll_op op, int rank, int nranks, const struct coll_sums *sums,
		    const struct coll_sizes *s, size_t i);

/* Elements of rank's receive buffer (s->recv_count) that differ from coll_expected() (a NaN
 * differs from everything). */
uint64_t coll_check(enum coll_op op, int rank, int nranks, const struct coll_sums *sums,
		    const struct coll_sizes *s, const float *out);

/* The circle method over nnodes nodes: coll_pair_rounds() rounds in which every node meets at
 * most one other, every unordered pair exactly once over all rounds. coll_pair_peer(): node's
 * partner in round (0 <= round < rounds), -1 when it sits out (odd node count) or nnodes < 2. */
int coll_pair_rounds(int nnodes);
int coll_pair_peer(int nnodes, int round, int node);

/* The "cpu" object: {wall_s, ranks_cpu_s, host_cpu_s (null when host_ok is false), bus_gb,
 * cores, host_cores, cpu_s_per_gb, host_cpu_s_per_gb}, each ratio null when its divisor is 0
 * (or unknown). New reference, NULL on ENOMEM. */
json_t *coll_cpu_json(double wall_s, double ranks_cpu_s, double host_cpu_s, bool host_ok,
		      double bus_gb);

#endif
