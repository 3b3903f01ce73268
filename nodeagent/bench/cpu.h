/* CPU cost of a benchmark run: what the run's own thread spent (getrusage RUSAGE_THREAD: user +
 * system) and what the whole host spent (/proc/stat's aggregate "cpu" line: busy = user + nice +
 * system + irq + softirq + steal, idle = idle + iowait), as perftest's --cpu_util and iperf3's CPU
 * report do, turned into cores busy and CPU-seconds per GB moved (docs/bench.md, "CPU cost").
 * Pure apart from bench_cpu_sample_take(), which reads the clock, rusage and the stat file. */
#ifndef RAILYARD_BENCH_CPU_H
#define RAILYARD_BENCH_CPU_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* /proc/stat's aggregate line, in clock ticks, and the number of "cpuN" lines. */
struct bench_cpu_host {
	uint64_t busy, idle;
	uint32_t ncpu;
};

/* One sample: wall clock (CLOCK_MONOTONIC), the calling thread's CPU time, the host's ticks.
 * *_ok false when that part could not be read. */
struct bench_cpu_sample {
	uint64_t wall_ns;
	uint64_t thread_ns;
	bool thread_ok;
	struct bench_cpu_host host;
	bool host_ok;
};

/* What a run cost between two samples. Figures that cannot be known are NAN: the host's when a
 * sample lacks it, its counters went backwards (wrap, reset) or did not move; the per-GB ones
 * when no byte moved; the thread's when a sample lacks it or it went backwards. */
struct bench_cpu_usage {
	double seconds;		/* wall clock between the samples */
	uint64_t bytes;		/* moved by this side in that time (sent + received) */
	uint32_t ncpu;		/* CPUs of the host (0: unknown) */
	double thread_s;	/* the run's thread: CPU-seconds */
	double thread_cores;	/* thread_s / seconds */
	double thread_s_per_gb; /* thread_s / (bytes / 1e9) */
	double host_cores;	/* busy ticks / all ticks x ncpu: CPUs kept busy on average */
	double host_s;		/* host_cores x seconds */
	double host_s_per_gb;	/* host_s / (bytes / 1e9) */
};

/* Parse /proc/stat text (len bytes, need not be NUL-terminated): the "cpu " line's first eight
 * fields (user nice system idle iowait irq softirq steal; guest time is already in user and
 * nice) and the count of "cpuN" lines. -EINVAL when the "cpu " line is missing, has fewer than
 * four fields or a field that is not a decimal number; -ERANGE when the sums overflow. */
__attribute__((warn_unused_result)) int bench_cpu_stat_parse(const char *text, size_t len,
							     struct bench_cpu_host *ret);

/* Take a sample. path: the stat file (NULL: /proc/stat). Never fails: what it cannot read is
 * marked not ok. Reads at most 64 KiB of the file. Thread-safe (the thread is the caller's). */
void bench_cpu_sample_take(struct bench_cpu_sample *ret, const char *path);

/* The cost between samples a and b, for bytes moved. Pure. */
void bench_cpu_usage_compute(const struct bench_cpu_sample *a, const struct bench_cpu_sample *b,
			     uint64_t bytes, struct bench_cpu_usage *ret);

/* The result document's form: {"seconds", "bytes", "ncpu", "thread_s", "thread_cores",
 * "thread_s_per_gb", "host_s", "host_cores", "host_s_per_gb"}, unknown figures null. NULL on
 * ENOMEM. Caller frees with json_decref(). */
json_t *bench_cpu_usage_json(const struct bench_cpu_usage *u);

#endif
