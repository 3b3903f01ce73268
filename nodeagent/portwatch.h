/* The fabric port watcher: every tick, the ports' error counters (nodeagent/counters) as rates
 * against thresholds, and each port's state and rate against the previous tick, into health
 * events ("mlx5_0/1: symbol_error 42/min, over 24/min"; "mlx5_0/1: ACTIVE -> DOWN"). Keeps the
 * previous snapshot only: its memory is one snapshot of the node's counters. Each port's netdev
 * (RoCE's, or IPoIB's) is watched for the kernel's transmit timeouts ("mlx5_0/1: tx_timeout +1
 * on ibp22s0"). Thresholds and their sources: docs/health.md. Not thread-safe: one watcher, one
 * thread. */
#ifndef RAILYARD_AGENT_PORTWATCH_H
#define RAILYARD_AGENT_PORTWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nodeagent/health_event.h"

/* A counter's rule: per minute, warn at >= warn, critical at >= crit (0: that level unused; a
 * rule with warn 1 fires on any movement). */
struct portwatch_rule {
	const char *counter;
	double warn_per_min, crit_per_min;
};

/* The default rules (docs/health.md), ended by a NULL counter. */
extern const struct portwatch_rule portwatch_default_rules[];

#define PORTWATCH_WHAT_MAX 128

/* The pseudo-counter of a port's netdev: the transmit watchdog's timeouts, summed over the
 * netdev's transmit queues (sys/class/net/NETDEV/queues/tx-N/tx_timeout), at most
 * PORTWATCH_TX_QUEUES of them. A rule of that name (the default, or the playbook's
 * health.ports.tx_timeout) judges its rate like any counter's. */
#define PORTWATCH_TX_TIMEOUT "tx_timeout"
#define PORTWATCH_TX_QUEUES  4096
#define PORTWATCH_NETDEV_MAX 15 /* IFNAMSIZ - 1 */

struct portwatch_event {
	enum health_severity severity;
	char device[64];
	uint32_t port;
	char counter[64]; /* the counter that crossed its rule, "" for a state or rate change */
	double per_min;	  /* its rate */
	char what[PORTWATCH_WHAT_MAX];
};

struct portwatch;

/* A watcher of the ports under sysroot (borrowed, must outlive it; NULL/"/" the real root) with
 * rules (borrowed; NULL: the defaults). The first tick only takes the baseline. */
__attribute__((warn_unused_result)) int
portwatch_new(const char *sysroot, const struct portwatch_rule *rules, struct portwatch **ret);
void portwatch_free(struct portwatch *w);

/* Sample at now_ms (monotonic) and compare with the previous sample: up to max events into ev,
 * their number in *ret_n (more than max are counted in *ret_n but not written). A port that
 * appears is the baseline of its next tick; a counter that went down (reset, wrap) is skipped
 * this tick. Ticks less than 1 s apart compare nothing (rates over tiny intervals mislead) and
 * keep the older baseline. -ENOMEM, or 0. */
__attribute__((warn_unused_result)) int portwatch_tick(struct portwatch *w, int64_t now_ms,
						       struct portwatch_event *ev, size_t max,
						       size_t *ret_n);

#endif
