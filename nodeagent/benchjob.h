/* Benchmarks the controller orders (RunBench), each on a thread of its own off the session
 * thread, reporting BenchReady (server listening) and BenchResult through the outbox. Errors are
 * results, never silence. */
#ifndef RAILYARD_AGENT_BENCHJOB_H
#define RAILYARD_AGENT_BENCHJOB_H

#include <jansson.h>

#include "nodeagent/bench/bench.h"
#include "nodeagent/colljob.h"
#include "nodeagent/outbox.h"
#include "railyard/v1/railyard.pb-c.h"

/* Benchmark sides running at once on one agent (a campaign's congestion test runs up to 9 on
 * one node; a loopback run is two). Each running server holds one control port, so the port
 * range must be at least this wide (the default's 32 is). */
#define AGENT_BENCH_MAX 16

struct agent_bench;

/* Default range of benchmark control ports (perftest's default port first). */
#define AGENT_BENCH_PORT_LO 18515
#define AGENT_BENCH_PORT_HI 18546

/* ob is borrowed and must outlive the benchmarks. sysroot (copied; NULL, "" or "/": the real
 * root) is where the fabric port counters are read around every run (nodeagent/counters.h). A
 * server side leases a control port from port_lo..port_hi (one per running server; a port another
 * process holds is skipped; none free: a failed result naming the range); port_lo = port_hi = 0:
 * ephemeral ports. -EINVAL when port_lo > port_hi, -ENOMEM. */
__attribute__((warn_unused_result)) int agent_bench_new(struct outbox *ob, const char *sysroot,
							uint16_t port_lo, uint16_t port_hi,
							struct agent_bench **ret);
/* How this agent runs collectives (kind "collective", one side, the launcher's): conf's strings
 * are copied, its launch borrowed (it must outlive b). Before the first submit. -ENOMEM. */
__attribute__((warn_unused_result)) int agent_bench_set_coll(struct agent_bench *b,
							     const struct agent_coll_conf *conf);
/* Cancel what runs (the engine polls every 100 ms), wait for it, free. NULL is fine. */
void agent_bench_free(struct agent_bench *b);

/* Start a RunBench (borrowed). An order is known by its bench id and role: a node may be both
 * sides of one run (loopback), but a (bench id, role) seen before is ignored (returns 1): its
 * messages are in the outbox until acknowledged. An invalid order is answered at once with a
 * failed BenchResult. -EBUSY when AGENT_BENCH_MAX run already. The result document gets a
 * "counters" member: the fabric port counter deltas over the run (docs/bench.md). */
__attribute__((warn_unused_result)) int agent_bench_submit(struct agent_bench *b,
							   const Railyard__V1__RunBench *rb);

/* Cancel the running benchmark sides with this id (Cancel from the controller; both of a
 * loopback run): their engines stop within ~100 ms and report failed results saying so. 1: at
 * least one was running, 0: none runs here (unknown, or already finished). Thread-safe. */
int agent_bench_cancel(struct agent_bench *b, const char *bench_id);

/* Is a benchmark running? (the session polls its outbox briskly then) */
bool agent_bench_busy(struct agent_bench *b);

/* Parameters as JSON (docs/bench.md) into p, which must hold bench_params_init() defaults.
 * Unknown keys and wrong types are errors (-RY_E_INVALID, reason in err). The result still needs
 * bench_params_validate(). */
__attribute__((warn_unused_result)) int
agent_bench_params_from_json(const json_t *o, struct bench_params *p, char *err, size_t errlen);

#endif
