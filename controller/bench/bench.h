/* Benchmark runs between two nodes in a serving controller: the engine pass that drives them
 * from the database and the handlers of the agents' BenchReady/BenchResult. */
#ifndef RAILYARD_CONTROLLER_BENCH_H
#define RAILYARD_CONTROLLER_BENCH_H

struct ctl_server;
struct ctl_engine;

/* Register the pass and the handlers with the engine, before it starts. */
__attribute__((warn_unused_result)) int ctl_bench_register(struct ctl_server *srv,
							   struct ctl_engine *e);

#endif
