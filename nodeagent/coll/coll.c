/* railyard-coll: collective bandwidth over MPI or NCCL as nccl-tests measures it, run by mpirun
 * (the agents launch it without SSH: docs/bench.md, "Collectives"). Every rank runs the same
 * sweep; rank 0 prints one JSON document. This file owns the options, the node grouping, the
 * timed sweep, the node-pair phase and the CPU accounting; the backends (coll.h) own the
 * buffers and the calls, coll_math.c the arithmetic.
 *
 * Timing and sizes follow NVIDIA/nccl-tests v2.19.6 src/common.cu: BenchTime() times `iters`
 * back-to-back calls after a barrier and divides by iters (deltaSec), then averages deltaSec
 * over all ranks (Allreduce(args, &deltaSec, average) with average=1: sum / ranks); GetBw()
 * turns it into algbw = size / time / 1e9 and busbw = algbw x the op's factor
 * (doc/PERFORMANCE.md). */
#include "nodeagent/bench/cpu.h"
#include "nodeagent/coll/coll.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define NODE_NAME_MAX 256
#define ERR_LEN	      512
#define ITERS_MAX     1000000L
#define PAIR_MAX      (1ull << 30)

struct config {
	const struct coll_backend_ops *backend;
	unsigned ops;
	uint64_t min_bytes, max_bytes, pair_bytes;
	long factor, iters, warmup, pair_iters;
	bool check;
	struct coll_options o;
};

/* The ranks grouped by node name, nodes in order of their first rank. */
struct grouping {
	int nnodes;
	int *node_of;		      /* rank -> node index */
	int *leader;		      /* node index -> its first rank */
	char (*names)[NODE_NAME_MAX]; /* rank -> name */
};

/* The figures accumulated over the timed loops. */
struct cpu_acc {
	double wall_s, self_s, bus_gb;
	uint64_t host_busy;
	bool host_ok;
};

static int world_rank;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: railyard-coll [--backend mpi|nccl] [--ops "
		"allreduce,allgather,reducescatter,"
		"alltoall,sendrecv]\n"
		"                     [--min-bytes N] [--max-bytes N] [--factor 2] [--iters N] "
		"[--warmup N]\n"
		"                     [--pair-bytes N] [--pair-iters N] [--no-check] [--nccl-lib "
		"PATH] [--cuda-lib PATH]\n"
		"Run under mpirun; rank 0 prints one JSON document (docs/bench.md, "
		"\"Collectives\"). Sizes take K, M, G.\n");
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "railyard-coll: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* A failure after the ranks have parted ways: this rank says why, the job ends with 1. */
static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "railyard-coll: rank %d: ", world_rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}

static bool parse_long(const char *s, long lo, long hi, long *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*ret = v;
	return true;
}

/* 0: parsed; 2: usage error (said on rank 0). */
static int parse_options(int argc, char **argv, struct config *c)
{
	static const struct option opts[] = {
		{"backend", required_argument, NULL, 'b'},
		{"ops", required_argument, NULL, 'o'},
		{"min-bytes", required_argument, NULL, 'm'},
		{"max-bytes", required_argument, NULL, 'M'},
		{"factor", required_argument, NULL, 'f'},
		{"iters", required_argument, NULL, 'i'},
		{"warmup", required_argument, NULL, 'w'},
		{"pair-bytes", required_argument, NULL, 'p'},
		{"pair-iters", required_argument, NULL, 'P'},
		{"no-check", no_argument, NULL, 'n'},
		{"nccl-lib", required_argument, NULL, 'N'},
		{"cuda-lib", required_argument, NULL, 'C'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const bool loud = world_rank == 0;
	char bad[64];
	int ch, r;

	*c = (struct config){.backend = &coll_backend_mpi,
			     .ops = COLL_OPS_ALL,
			     .min_bytes = 8,
			     .max_bytes = 64ull << 20,
			     .pair_bytes = 4ull << 20,
			     .factor = 2,
			     .iters = 20,
			     .warmup = 5,
			     .pair_iters = 10,
			     .check = true};
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		const char *bad_opt = NULL, *range = "";

		switch (ch) {
		case 'b':
			if (strcmp(optarg, "mpi") == 0)
				c->backend = &coll_backend_mpi;
			else if (strcmp(optarg, "nccl") == 0)
				c->backend = &coll_backend_nccl;
			else
				bad_opt = "--backend", range = " (mpi or nccl)";
			break;
		case 'o':
			if (coll_ops_parse(optarg, &c->ops, bad, sizeof(bad)) < 0) {
				if (loud)
					say("--ops: unknown op '%s' (allreduce, allgather, "
					    "reducescatter, alltoall, sendrecv)",
					    bad);
				return 2;
			}
			break;
		case 'm':
		case 'M':
		case 'p':
			r = coll_size_parse(optarg, ch == 'm'	? &c->min_bytes
						    : ch == 'M' ? &c->max_bytes
								: &c->pair_bytes);
			if (r < 0)
				bad_opt = ch == 'm'   ? "--min-bytes"
					  : ch == 'M' ? "--max-bytes"
						      : "--pair-bytes",
				range = " (1 to 16G, K/M/G suffixes)";
			break;
		case 'f':
			if (!parse_long(optarg, 2, 1024, &c->factor))
				bad_opt = "--factor", range = " (2 to 1024)";
			break;
		case 'i':
			if (!parse_long(optarg, 1, ITERS_MAX, &c->iters))
				bad_opt = "--iters", range = " (1 to 1000000)";
			break;
		case 'w':
			if (!parse_long(optarg, 0, ITERS_MAX, &c->warmup))
				bad_opt = "--warmup", range = " (0 to 1000000)";
			break;
		case 'P':
			if (!parse_long(optarg, 1, ITERS_MAX, &c->pair_iters))
				bad_opt = "--pair-iters", range = " (1 to 1000000)";
			break;
		case 'n':
			c->check = false;
			break;
		case 'N':
			c->o.nccl_lib = optarg;
			break;
		case 'C':
			c->o.cuda_lib = optarg;
			break;
		case 'h':
			if (loud)
				usage(stdout);
			return 3;
		default:
			if (loud) {
				say("unknown option or missing value: %s", argv[optind - 1]);
				usage(stderr);
			}
			return 2;
		}
		if (bad_opt) {
			if (loud)
				say("invalid %s '%s'%s", bad_opt, optarg, range);
			return 2;
		}
	}
	if (optind < argc) {
		if (loud)
			say("unexpected argument '%s'", argv[optind]);
		return 2;
	}
	if (c->min_bytes > c->max_bytes) {
		if (loud)
			say("--min-bytes %llu is over --max-bytes %llu",
			    (unsigned long long)c->min_bytes, (unsigned long long)c->max_bytes);
		return 2;
	}
	if (c->backend == &coll_backend_mpi && c->max_bytes / COLL_ELEM > INT_MAX) {
		if (loud)
			say("--max-bytes %llu: over an MPI count of floats (at most %llu)",
			    (unsigned long long)c->max_bytes,
			    (unsigned long long)INT_MAX * COLL_ELEM);
		return 2;
	}
	if (c->pair_bytes > PAIR_MAX) {
		if (loud)
			say("invalid --pair-bytes %llu (1 to 1G)",
			    (unsigned long long)c->pair_bytes);
		return 2;
	}
	return 0;
}

static void grouping_done(struct grouping *g)
{
	free(g->node_of);
	free(g->leader);
	free(g->names);
}

/* Every rank's node name, gathered to all (so every rank knows the leaders), grouped. */
static int grouping_make(int size, struct grouping *g)
{
	char me[NODE_NAME_MAX] = {0};
	const char *env = getenv("RAILYARD_NODE");

	memset(g, 0, sizeof(*g));
	if (env && env[0])
		snprintf(me, sizeof(me), "%s", env);
	else if (gethostname(me, sizeof(me) - 1) < 0)
		snprintf(me, sizeof(me), "rank-%d", world_rank);
	g->names = calloc((size_t)size, NODE_NAME_MAX);
	g->node_of = calloc((size_t)size, sizeof(int));
	g->leader = calloc((size_t)size, sizeof(int));
	if (!g->names || !g->node_of || !g->leader)
		return -ENOMEM;
	if (MPI_Allgather(me, NODE_NAME_MAX, MPI_CHAR, g->names, NODE_NAME_MAX, MPI_CHAR,
			  MPI_COMM_WORLD) != MPI_SUCCESS)
		return -EIO;
	for (int r = 0; r < size; r++) {
		int n;

		g->names[r][NODE_NAME_MAX - 1] = '\0';
		for (n = 0; n < g->nnodes; n++)
			if (strcmp(g->names[g->leader[n]], g->names[r]) == 0)
				break;
		if (n == g->nnodes)
			g->leader[g->nnodes++] = r;
		g->node_of[r] = n;
	}
	return 0;
}

static double self_cpu_s(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
	       ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

/* Largest send and receive buffers of the sweep (elements). */
static void sweep_extent(const struct config *c, int n, size_t *ret_send, size_t *ret_recv)
{
	size_t send = 0, recv = 0;

	for (int op = 0; op < COLL_OPS; op++) {
		if (!(c->ops & (1u << op)))
			continue;
		for (uint64_t size = c->min_bytes; size <= c->max_bytes;
		     size *= (uint64_t)c->factor) {
			struct coll_sizes s;

			if (!coll_sizes_for(op, size, n, &s))
				continue;
			if (s.send_count > send)
				send = s.send_count;
			if (s.recv_count > recv)
				recv = s.recv_count;
		}
	}
	*ret_send = send;
	*ret_recv = recv;
}

/* One op at one size: warmup, the timed loop, the check; rank 0 appends the result. */
static void measure(const struct config *c, void *be, const struct coll_world *w, bool leader,
		    enum coll_op op, const struct coll_sizes *s, const struct coll_sums *sums,
		    float *in, float *out, struct cpu_acc *acc, json_t *results)
{
	char err[ERR_LEN] = "";
	struct bench_cpu_sample h0, h1;
	double c0, c1, t0, t1, dt, sum_dt = 0;
	long long wrong = -1, my_wrong = 0;

	coll_fill(op, w->rank, w->size, s, in);
	if (c->backend->load(be, in, s->send_count, err, sizeof(err)) < 0)
		die("%s", err);
	if (c->warmup > 0 && c->backend->run(be, op, s, (int)c->warmup, err, sizeof(err)) < 0)
		die("%s", err);

	if (c->check && c->backend->poison(be, s->recv_count, err, sizeof(err)) < 0)
		die("%s", err);
	c0 = self_cpu_s();
	if (leader)
		bench_cpu_sample_take(&h0, NULL);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	if (c->backend->run(be, op, s, (int)c->iters, err, sizeof(err)) < 0)
		die("%s", err);
	t1 = MPI_Wtime();
	c1 = self_cpu_s();
	if (leader) {
		bench_cpu_sample_take(&h1, NULL);
		if (h0.host_ok && h1.host_ok && h1.host.busy >= h0.host.busy)
			acc->host_busy += h1.host.busy - h0.host.busy;
		else
			acc->host_ok = false;
	}
	acc->self_s += c1 - c0;
	if (w->rank == 0)
		acc->wall_s += t1 - t0;
	acc->bus_gb += (double)s->bytes * coll_busbw_factor(op, w->size) * (double)c->iters / 1e9;

	dt = (t1 - t0) / (double)c->iters;
	MPI_Reduce(&dt, &sum_dt, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	if (c->check) {
		if (c->backend->fetch(be, out, s->recv_count, err, sizeof(err)) < 0)
			die("%s", err);
		my_wrong = (long long)coll_check(op, w->rank, w->size, sums, s, out);
		MPI_Reduce(&my_wrong, &wrong, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	}
	if (w->rank == 0) {
		double sec = sum_dt / w->size; /* nccl-tests: the mean over ranks */
		double algbw = sec > 0 ? (double)s->bytes / 1e9 / sec : 0;
		json_t *e = json_pack("{s:s, s:I, s:I, s:f, s:f, s:f, s:I}", "op", coll_op_name(op),
				      "bytes", (json_int_t)s->bytes, "count", (json_int_t)s->count,
				      "time_us", sec * 1e6, "algbw_gbs", algbw, "busbw_gbs",
				      algbw * coll_busbw_factor(op, w->size), "wrong",
				      (json_int_t)(c->check ? wrong : -1));

		if (!e || json_array_append_new(results, e) < 0)
			die("out of memory");
	}
}

/* The node pairs: each round of the circle method at once, the first rank of each node of a
 * pair exchanging pair_bytes both ways pair_iters times. The time of a pair is the longer of
 * its two sides'. Returns the array on rank 0 (NULL elsewhere). */
static json_t *pairs_run(const struct config *c, const struct coll_world *w,
			 const struct grouping *g)
{
	int rounds = coll_pair_rounds(g->nnodes), me = g->node_of[w->rank];
	bool leader = g->leader[me] == w->rank;
	double *times = NULL, *all = NULL;
	char *sbuf = NULL, *rbuf = NULL;
	json_t *arr = NULL;

	if (w->rank == 0 && !(arr = json_array()))
		die("out of memory");
	if (rounds == 0)
		return arr;
	times = calloc((size_t)rounds, sizeof(double));
	if (w->rank == 0)
		all = calloc((size_t)rounds * (size_t)w->size, sizeof(double));
	if (leader) {
		sbuf = malloc(c->pair_bytes);
		rbuf = malloc(c->pair_bytes);
	}
	if (!times || (w->rank == 0 && !all) || (leader && (!sbuf || !rbuf)))
		die("cannot allocate the pair buffers (%llu bytes)",
		    (unsigned long long)c->pair_bytes);
	if (sbuf)
		memset(sbuf, 0x5a, c->pair_bytes);
	for (int r = 0; r < rounds; r++) {
		int peer = leader ? coll_pair_peer(g->nnodes, r, me) : -1;

		MPI_Barrier(MPI_COMM_WORLD);
		if (peer >= 0) {
			int pr = g->leader[peer];
			double t0 = MPI_Wtime(), mine, theirs = 0;

			for (long i = 0; i < c->pair_iters; i++)
				if (MPI_Sendrecv(sbuf, (int)c->pair_bytes, MPI_BYTE, pr, 1, rbuf,
						 (int)c->pair_bytes, MPI_BYTE, pr, 1,
						 MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
					die("the exchange with %s failed",
					    g->names[g->leader[peer]]);
			mine = MPI_Wtime() - t0;
			MPI_Sendrecv(&mine, 1, MPI_DOUBLE, pr, 2, &theirs, 1, MPI_DOUBLE, pr, 2,
				     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			times[r] = mine > theirs ? mine : theirs;
		}
	}
	MPI_Gather(times, rounds, MPI_DOUBLE, all, rounds, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	if (w->rank == 0) {
		for (int r = 0; r < rounds; r++) {
			for (int a = 0; a < g->nnodes; a++) {
				int b = coll_pair_peer(g->nnodes, r, a);
				double t = all[(size_t)g->leader[a] * (size_t)rounds + (size_t)r];
				json_t *e;

				if (b <= a)
					continue;
				e = json_pack("{s:s, s:s, s:I, s:f, s:f}", "a",
					      g->names[g->leader[a]], "b", g->names[g->leader[b]],
					      "bytes", (json_int_t)c->pair_bytes, "time_us",
					      t / (double)c->pair_iters * 1e6, "gbps",
					      t > 0 ? (double)c->pair_bytes * 8 *
							      (double)c->pair_iters / t / 1e9
						    : 0.0);
				if (!e || json_array_append_new(arr, e) < 0)
					die("out of memory");
			}
		}
	}
	free(times);
	free(all);
	free(sbuf);
	free(rbuf);
	return arr;
}

static json_t *nodes_json(const struct grouping *g, int size)
{
	json_t *arr = json_array();

	for (int n = 0; arr && n < g->nnodes; n++) {
		json_t *ranks = json_array(), *e;

		for (int r = 0; ranks && r < size; r++)
			if (g->node_of[r] == n && json_array_append_new(ranks, json_integer(r)) < 0)
				die("out of memory");
		e = json_pack("{s:s, s:o}", "node", g->names[g->leader[n]], "ranks", ranks);
		if (!e || json_array_append_new(arr, e) < 0)
			die("out of memory");
	}
	return arr;
}

int main(int argc, char **argv)
{
	struct config c;
	struct coll_world w = {0};
	struct grouping g;
	struct coll_sums sums;
	struct cpu_acc acc = {.host_ok = true};
	char library[256] = "", err[ERR_LEN] = "";
	void *be = NULL;
	float *in = NULL, *out = NULL;
	json_t *results = NULL, *pairs, *doc;
	size_t max_send, max_recv;
	const char *lr;
	int r, ok, all_ok;
	bool leader;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &w.size);
	/* An MPI error comes back to us (die(): this rank names it, the job ends with 1) rather
	 * than aborting the job with Open MPI's message only. */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	world_rank = w.rank;
	r = parse_options(argc, argv, &c);
	if (r) {
		MPI_Finalize();
		return r == 3 ? 0 : 2;
	}
	if (grouping_make(w.size, &g) < 0)
		die("cannot gather the node names");
	leader = g.leader[g.node_of[w.rank]] == w.rank;
	lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
	w.local_rank = 0;
	if (lr && lr[0]) {
		w.local_rank = atoi(lr);
	} else {
		for (int q = 0; q < w.rank; q++)
			w.local_rank += g.node_of[q] == g.node_of[w.rank];
	}

	/* Setting up may fail on one rank only (no GPU for its local rank, no library): all
	 * ranks agree before anyone enters a collective of the sweep. */
	sweep_extent(&c, w.size, &max_send, &max_recv);
	ok = c.backend->open(&be, &w, &c.o, library, sizeof(library), err, sizeof(err)) == 0 &&
	     c.backend->buffers(be, max_send * COLL_ELEM, max_recv * COLL_ELEM, err, sizeof(err)) ==
		     0;
	if (ok) {
		in = malloc(max_send * COLL_ELEM + 1);
		out = malloc(max_recv * COLL_ELEM + 1);
		if (!in || !out) {
			snprintf(err, sizeof(err),
				 "cannot allocate %zu + %zu bytes of host buffers",
				 max_send * COLL_ELEM, max_recv * COLL_ELEM);
			ok = 0;
		}
	}
	if (!ok)
		fprintf(stderr, "railyard-coll: rank %d (%s): %s\n", w.rank, g.names[w.rank], err);
	MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!all_ok) {
		c.backend->close(be);
		free(in);
		free(out);
		grouping_done(&g);
		MPI_Finalize();
		return 1;
	}

	coll_sums_init(&sums, w.size);
	if (w.rank == 0 && !(results = json_array()))
		die("out of memory");
	for (int op = 0; op < COLL_OPS; op++) {
		if (!(c.ops & (1u << op)))
			continue;
		for (uint64_t size = c.min_bytes; size <= c.max_bytes; size *= (uint64_t)c.factor) {
			struct coll_sizes s;

			if (coll_sizes_for(op, size, w.size, &s))
				measure(&c, be, &w, leader, op, &s, &sums, in, out, &acc, results);
		}
	}
	pairs = pairs_run(&c, &w, &g);

	{
		double sums_in[2] = {acc.self_s, leader ? (double)acc.host_busy : 0}, tot[2] = {0};
		int host_ok = !leader || acc.host_ok, host_all = 1;
		long tck = sysconf(_SC_CLK_TCK);

		MPI_Reduce(sums_in, tot, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
		MPI_Reduce(&host_ok, &host_all, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
		if (w.rank == 0) {
			json_t *cpu =
				coll_cpu_json(acc.wall_s, tot[0], tot[1] / (tck > 0 ? tck : 100),
					      host_all && tck > 0, acc.bus_gb);

			doc = json_pack("{s:s, s:i, s:s, s:s, s:i, s:o, s:s, s:s, s:i, s:i, s:o, "
					"s:o, s:o}",
					"program", "railyard-coll", "version", 1, "backend",
					c.backend->name, "library", library, "ranks", w.size,
					"nodes", nodes_json(&g, w.size), "dtype", "float", "redop",
					"sum", "iters", (int)c.iters, "warmup", (int)c.warmup,
					"results", results, "pairs", pairs, "cpu", cpu);
			if (!doc || json_dumpf(doc, stdout, JSON_COMPACT) < 0)
				die("cannot write the result");
			fputc('\n', stdout);
			fflush(stdout);
			json_decref(doc);
		}
	}
	c.backend->close(be);
	free(in);
	free(out);
	grouping_done(&g);
	MPI_Finalize();
	return 0;
}
