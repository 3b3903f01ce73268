/* railyard-coll's arithmetic (coll_math.h): sizes, bus-bandwidth factors, test data, the
 * checker, the pair schedule and the CPU figures. No I/O, no MPI. */
#include "nodeagent/coll/coll_math.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const op_names[COLL_OPS] = {
	[COLL_ALLREDUCE] = "allreduce",		[COLL_ALLGATHER] = "allgather",
	[COLL_REDUCESCATTER] = "reducescatter", [COLL_ALLTOALL] = "alltoall",
	[COLL_SENDRECV] = "sendrecv",
};

const char *coll_op_name(enum coll_op op)
{
	return (unsigned)op < COLL_OPS ? op_names[op] : NULL;
}

int coll_ops_parse(const char *list, unsigned *ret_mask, char *bad, size_t badlen)
{
	unsigned mask = 0;
	const char *p = list;

	if (!list)
		return -EINVAL;
	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		int op;

		for (op = 0; op < COLL_OPS; op++)
			if (strlen(op_names[op]) == len && memcmp(op_names[op], p, len) == 0)
				break;
		if (op == COLL_OPS) {
			if (badlen)
				snprintf(bad, badlen, "%.*s", (int)len, p);
			return -EINVAL;
		}
		mask |= 1u << op;
		if (!end)
			break;
		p = end + 1;
	}
	*ret_mask = mask;
	return 0;
}

int coll_size_parse(const char *s, uint64_t *ret)
{
	uint64_t v = 0;
	unsigned shift = 0;
	const char *p = s;

	if (!s || *p < '0' || *p > '9')
		return -EINVAL;
	while (*p >= '0' && *p <= '9') {
		if (v > (COLL_MAX_BYTES - 9) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*p - '0');
		p++;
	}
	switch (*p) {
	case 'K':
	case 'k':
		shift = 10;
		p++;
		break;
	case 'M':
	case 'm':
		shift = 20;
		p++;
		break;
	case 'G':
	case 'g':
		shift = 30;
		p++;
		break;
	default:
		break;
	}
	if (*p)
		return -EINVAL;
	if (v == 0 || v > (COLL_MAX_BYTES >> shift))
		return -ERANGE;
	*ret = v << shift;
	return 0;
}

bool coll_sizes_for(enum coll_op op, uint64_t size_bytes, int nranks, struct coll_sizes *ret)
{
	size_t count = (size_t)(size_bytes / COLL_ELEM), n = (size_t)(nranks > 0 ? nranks : 1);
	/* nccl-tests: (count / nranks) & ~(16 / eltSize - 1), a 16-byte multiple per rank */
	size_t per = (count / n) & ~(size_t)(16 / COLL_ELEM - 1);
	struct coll_sizes s = {0};

	switch (op) {
	case COLL_ALLREDUCE:
	case COLL_SENDRECV:
		s.count = s.send_count = s.recv_count = count;
		break;
	case COLL_ALLGATHER:
		s.count = s.send_count = per;
		s.recv_count = per * n;
		break;
	case COLL_REDUCESCATTER:
		s.count = s.recv_count = per;
		s.send_count = per * n;
		break;
	case COLL_ALLTOALL:
		s.count = per;
		s.send_count = s.recv_count = per * n;
		break;
	default:
		return false;
	}
	if (s.count == 0)
		return false;
	s.bytes = (uint64_t)(s.send_count > s.recv_count ? s.send_count : s.recv_count) * COLL_ELEM;
	*ret = s;
	return true;
}

double coll_busbw_factor(enum coll_op op, int nranks)
{
	double n = nranks > 0 ? nranks : 1;

	switch (op) {
	case COLL_ALLREDUCE:
		return 2.0 * (n - 1) / n;
	case COLL_ALLGATHER:
	case COLL_REDUCESCATTER:
	case COLL_ALLTOALL:
		return (n - 1) / n;
	case COLL_SENDRECV:
		return 1.0;
	default:
		return 0;
	}
}

float coll_input(int rank, size_t index)
{
	return (float)((int)(((size_t)rank * 7 + index) % COLL_SUM_PERIOD) - 6);
}

void coll_fill(enum coll_op op, int rank, int nranks, const struct coll_sizes *s, float *buf)
{
	(void)op;
	(void)nranks;
	/* Every op sends element j of the rank's input: for the split ops, block p of the send
	 * buffer is elements p x count .. of one long input. */
	for (size_t j = 0; j < s->send_count; j++)
		buf[j] = coll_input(rank, j);
}

void coll_sums_init(struct coll_sums *ret, int nranks)
{
	for (int k = 0; k < COLL_SUM_PERIOD; k++) {
		float sum = 0;

		for (int r = 0; r < nranks; r++)
			sum += coll_input(r, (size_t)k);
		ret->v[k] = sum;
	}
}

float coll_expected(enum coll_op op, int rank, int nranks, const struct coll_sums *sums,
		    const struct coll_sizes *s, size_t i)
{
	switch (op) {
	case COLL_ALLREDUCE:
		return sums->v[i % COLL_SUM_PERIOD];
	case COLL_REDUCESCATTER:
		return sums->v[((size_t)rank * s->count + i) % COLL_SUM_PERIOD];
	case COLL_ALLGATHER:
		/* block p came from rank p, its element i % count */
		return coll_input((int)(i / s->count), i % s->count);
	case COLL_ALLTOALL:
		/* block p came from rank p: that rank's block for us */
		return coll_input((int)(i / s->count), (size_t)rank * s->count + i % s->count);
	case COLL_SENDRECV:
		return coll_input((rank - 1 + nranks) % nranks, i);
	default:
		return NAN;
	}
}

uint64_t coll_check(enum coll_op op, int rank, int nranks, const struct coll_sums *sums,
		    const struct coll_sizes *s, const float *out)
{
	uint64_t wrong = 0;

	for (size_t i = 0; i < s->recv_count; i++)
		if (!(out[i] == coll_expected(op, rank, nranks, sums, s, i)))
			wrong++;
	return wrong;
}

int coll_pair_rounds(int nnodes)
{
	if (nnodes < 2)
		return 0;
	return nnodes % 2 ? nnodes : nnodes - 1;
}

int coll_pair_peer(int nnodes, int round, int node)
{
	int m = nnodes + (nnodes % 2), mod = m - 1, peer = -1;

	if (nnodes < 2 || round < 0 || round >= mod || node < 0 || node >= nnodes)
		return -1;
	/* Node m-1 (a dummy when nnodes is odd) stays put and meets node `round`; the others sit
	 * on a circle where a meets b when a + b = 2 x round (mod m-1). */
	if (node == m - 1)
		peer = round;
	else if (node == round)
		peer = m - 1;
	else
		peer = ((2 * round - node) % mod + mod) % mod;
	return peer < nnodes ? peer : -1;
}

static json_t *ratio(double num, double den, bool known)
{
	return known && den > 0 && isfinite(num) ? json_real(num / den) : json_null();
}

json_t *coll_cpu_json(double wall_s, double ranks_cpu_s, double host_cpu_s, bool host_ok,
		      double bus_gb)
{
	return json_pack("{s:f, s:f, s:o, s:f, s:o, s:o, s:o, s:o}", "wall_s", wall_s,
			 "ranks_cpu_s", ranks_cpu_s, "host_cpu_s",
			 host_ok ? json_real(host_cpu_s) : json_null(), "bus_gb", bus_gb, "cores",
			 ratio(ranks_cpu_s, wall_s, true), "host_cores",
			 ratio(host_cpu_s, wall_s, host_ok), "cpu_s_per_gb",
			 ratio(ranks_cpu_s, bus_gb, true), "host_cpu_s_per_gb",
			 ratio(host_cpu_s, bus_gb, host_ok));
}
