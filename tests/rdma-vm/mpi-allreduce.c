/* mpi-allreduce: the soft-RoCE guests' Open MPI proof (tests/rdma-vm/cases/mpi-cluster.sh). One
 * MPI_Allreduce (float, sum) per size of a sweep, timed and checked: each rank's data are small
 * integers, so the sum is exact and every element is compared on the last iteration. Rank 0
 * prints one line per size, with nccl-tests' figures (time = the mean over ranks of each rank's
 * mean time per iteration, algbw = bytes / time, busbw = algbw * 2(n-1)/n), then one line
 * naming each rank's host. A test program, not the product's collective benchmark.
 * Usage: mpi-allreduce [--min-bytes N] [--max-bytes N] [--iters N] [--warmup N]
 * Exit: 0 every result correct, 1 a wrong element or an error, 2 usage. */
#include <mpi.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AR_MAX_BYTES (64UL << 20)

struct ar_opts {
	unsigned long min_bytes;
	unsigned long max_bytes;
	unsigned long iters;
	unsigned long warmup;
};

static int ar_parse_ulong(const char *name, const char *s, unsigned long lo, unsigned long hi,
			  unsigned long *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi) {
		fprintf(stderr, "mpi-allreduce: %s '%s': want an integer in %lu..%lu\n", name, s,
			lo, hi);
		return -1;
	}
	*ret = v;
	return 0;
}

static int ar_parse(int argc, char **argv, struct ar_opts *o)
{
	*o = (struct ar_opts){.min_bytes = 4, .max_bytes = 1UL << 20, .iters = 10, .warmup = 2};
	for (int i = 1; i < argc; i++) {
		unsigned long *dst = NULL, lo = 1, hi = 0;

		if (!strcmp(argv[i], "--min-bytes")) {
			dst = &o->min_bytes, lo = 4, hi = AR_MAX_BYTES;
		} else if (!strcmp(argv[i], "--max-bytes")) {
			dst = &o->max_bytes, lo = 4, hi = AR_MAX_BYTES;
		} else if (!strcmp(argv[i], "--iters")) {
			dst = &o->iters, hi = 100000;
		} else if (!strcmp(argv[i], "--warmup")) {
			dst = &o->warmup, lo = 0, hi = 100000;
		} else {
			fprintf(stderr, "mpi-allreduce: unknown argument '%s'\n", argv[i]);
			return -1;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "mpi-allreduce: %s needs a value\n", argv[i]);
			return -1;
		}
		if (ar_parse_ulong(argv[i], argv[i + 1], lo, hi, dst) < 0)
			return -1;
		i++;
	}
	if (o->min_bytes > o->max_bytes || o->min_bytes % sizeof(float) ||
	    o->max_bytes % sizeof(float)) {
		fprintf(stderr, "mpi-allreduce: sizes must be multiples of %zu and min <= max\n",
			sizeof(float));
		return -1;
	}
	return 0;
}

/* Rank r's element i: (r + 1) + (i % 7); the sum over n ranks is n(n+1)/2 + n(i % 7). */
static void ar_fill(float *p, size_t count, int rank)
{
	for (size_t i = 0; i < count; i++)
		p[i] = (float)(rank + 1 + (int)(i % 7));
}

static unsigned long ar_wrong(const float *p, size_t count, int n)
{
	unsigned long wrong = 0;

	for (size_t i = 0; i < count; i++)
		if (p[i] != (float)(n * (n + 1) / 2 + n * (int)(i % 7)))
			wrong++;
	return wrong;
}

/* One size: warm-up, timed iterations, check. Collective: every rank calls it. */
static int ar_size(const struct ar_opts *o, size_t bytes, int rank, int n, float *in, float *out,
		   unsigned long *ret_wrong)
{
	size_t count = bytes / sizeof(float);
	double t0, mine, sum = 0;
	unsigned long wrong, total = 0;

	for (unsigned long i = 0; i < o->warmup; i++)
		if (MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD))
			return -1;
	ar_fill(in, count, rank);
	memset(out, 0, bytes);
	if (MPI_Barrier(MPI_COMM_WORLD))
		return -1;
	t0 = MPI_Wtime();
	for (unsigned long i = 0; i < o->iters; i++)
		if (MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD))
			return -1;
	mine = (MPI_Wtime() - t0) / (double)o->iters;
	wrong = ar_wrong(out, count, n);
	if (MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD) ||
	    MPI_Reduce(&wrong, &total, 1, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD))
		return -1;
	if (rank == 0) {
		double t = sum / n, algbw = (double)bytes / t / 1e9;

		printf("RY-MPI allreduce ranks %d bytes %zu count %zu time_us %.1f algbw_gbs %.6f "
		       "busbw_gbs %.6f wrong %lu\n",
		       n, bytes, count, t * 1e6, algbw, algbw * 2.0 * (n - 1) / n, total);
		fflush(stdout);
	}
	*ret_wrong = total;
	return 0;
}

int main(int argc, char **argv)
{
	struct ar_opts o;
	int rank = 0, n = 0, len = 0, rc = 1;
	char host[MPI_MAX_PROCESSOR_NAME] = "", *hosts = NULL;
	float *in = NULL, *out = NULL;
	unsigned long wrong_all = 0;

	if (ar_parse(argc, argv, &o) < 0)
		return 2;
	if (MPI_Init(&argc, &argv)) {
		fprintf(stderr, "mpi-allreduce: MPI_Init failed\n");
		return 1;
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	MPI_Get_processor_name(host, &len);
	in = malloc(o.max_bytes);
	out = malloc(o.max_bytes);
	hosts = calloc((size_t)n, MPI_MAX_PROCESSOR_NAME);
	if (!in || !out || !hosts) {
		fprintf(stderr, "mpi-allreduce: out of memory (%lu bytes)\n", o.max_bytes);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	ar_fill(in, o.max_bytes / sizeof(float), rank);
	for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
		unsigned long wrong = 0;

		if (ar_size(&o, bytes, rank, n, in, out, &wrong) < 0) {
			fprintf(stderr, "mpi-allreduce: MPI call failed at %zu bytes\n", bytes);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		wrong_all += wrong;
		if (bytes > o.max_bytes / 2)
			break;
	}
	if (MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME,
		       MPI_CHAR, 0, MPI_COMM_WORLD))
		MPI_Abort(MPI_COMM_WORLD, 1);
	if (rank == 0) {
		char ver[MPI_MAX_LIBRARY_VERSION_STRING] = "";
		int vlen = 0;

		MPI_Get_library_version(ver, &vlen);
		ver[strcspn(ver, ",\n")] = '\0';
		printf("RY-MPI hosts");
		for (int r = 0; r < n; r++)
			printf(" %d=%s", r, hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME);
		printf(" library %s wrong %lu\n", ver, wrong_all);
	}
	rc = wrong_all ? 1 : 0;
	free(hosts);
	free(out);
	free(in);
	MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Finalize();
	return rc;
}
