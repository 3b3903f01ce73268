/* A small MPI program for the launch tests (until railyard-coll stands in): every rank says on
 * stderr which node it runs on; the ranks allreduce their numbers; rank 0 prints one JSON line
 * with each rank's node (RAILYARD_NODE), its parent (the orted) and that one's parent (the agent
 * that started it). With --hold FILE rank 0 waits (up to 60 s) while FILE exists, so that a test
 * can act while the job runs. Other options (railyard-coll's) are ignored. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct who {
	char node[64];
	char parent_comm[32];
	int parent, grandparent;
};

/* The parent pid and command name of pid from /proc/PID/stat. */
static int proc_parent(int pid, char *comm, size_t len)
{
	char path[64], buf[512], *open, *close;
	FILE *f;
	int ppid = -1;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f) && (open = strchr(buf, '(')) &&
	    (close = strrchr(buf, ')'))) {
		if (comm)
			snprintf(comm, len, "%.*s", (int)(close - open - 1), open + 1);
		if (sscanf(close + 2, "%*c %d", &ppid) != 1)
			ppid = -1;
	}
	fclose(f);
	return ppid;
}

int main(int argc, char **argv)
{
	const char *hold = NULL, *node = getenv("RAILYARD_NODE");
	struct who me = {0}, *all = NULL;
	int rank, size, sum = 0;

	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], "--hold") == 0)
			hold = argv[i + 1];
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	snprintf(me.node, sizeof(me.node), "%s", node ? node : "?");
	me.parent = (int)getppid();
	me.grandparent = proc_parent(me.parent, me.parent_comm, sizeof(me.parent_comm));
	fprintf(stderr, "mpi_hello: rank %d of %d on %s\n", rank, size, me.node);
	double t0 = MPI_Wtime(), us;

	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	us = (MPI_Wtime() - t0) * 1e6;
	if (rank == 0)
		all = calloc((size_t)size, sizeof(*all));
	MPI_Gather(&me, sizeof(me), MPI_BYTE, all, sizeof(me), MPI_BYTE, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		for (int waited = 0; hold && access(hold, F_OK) == 0 && waited < 600; waited++) {
			struct timespec ts = {0, 100 * 1000 * 1000};

			nanosleep(&ts, NULL);
		}
		printf("{\"program\": \"mpi_hello\", \"ranks\": %d, \"sum\": %d, \"expect\": %d, "
		       "\"procs\": [",
		       size, sum, size * (size - 1) / 2);
		for (int i = 0; i < size; i++)
			printf("%s{\"rank\": %d, \"node\": \"%s\", \"parent\": %d, "
			       "\"parent_comm\": "
			       "\"%s\", \"grandparent\": %d}",
			       i ? ", " : "", i, all[i].node, all[i].parent, all[i].parent_comm,
			       all[i].grandparent);
		/* One row shaped like railyard-coll's (nccl-tests' definitions: algbw = bytes /
		 * time, busbw = algbw x 2(n-1)/n). */
		printf("], \"results\": [{\"op\": \"allreduce\", \"bytes\": 4, \"count\": 1, "
		       "\"time_us\": %.3f, \"algbw_gbs\": %.6f, \"busbw_gbs\": %.6f, \"wrong\": "
		       "%d}]}\n",
		       us, 4 / us / 1e3, 4 / us / 1e3 * 2 * (size - 1) / size,
		       sum == size * (size - 1) / 2 ? 0 : 1);
		fflush(stdout);
		free(all);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
