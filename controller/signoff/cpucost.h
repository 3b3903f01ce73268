/* The CPU cost of a campaign's bandwidth tests, next to their bandwidth, for a sign-off report's
 * "cpu_cost" (docs/signoff.md): from the verdict's per-test statistics (medians over the pairs
 * the test measured), one entry per bw test that reported CPU figures. Pure. */
#ifndef RAILYARD_SIGNOFF_CPUCOST_H
#define RAILYARD_SIGNOFF_CPUCOST_H

#include <jansson.h>
#include <stddef.h>

/* [{test, transport, pairs, gbps, client: {cores, s_per_gb, thread_cores}, server: {...},
 * text}] from evaluation (a verdict; borrowed) of a campaign over transport ("tcp", "verbs";
 * may be NULL). Unknown figures are null; a test without any CPU figure is left out. Caller
 * frees with json_decref(); NULL on ENOMEM. */
json_t *so_cpu_cost(const json_t *evaluation, const char *transport);

/* The one-line form of an entry (an unknown figure reads "unknown"): "tcp pair-bw: 14 Gb/s for 1.9
 * cores on the client (0.13 CPU-s/GB) and 1.7 on the server (0.12 CPU-s/GB), host-wide; benchmark
 * threads 0.31 + 0.42 cores (medians over 6 pairs)". Always NUL-terminates buf (len > 0). */
void so_cpu_cost_line(const json_t *entry, char *buf, size_t len);

#endif
