/* The campaign scheduler: which nodes measure against which, in which round, on which rail.
 * Pure (no I/O, no clock, no global state): the same inputs give the same schedule, so a
 * serving controller regenerates a campaign's rounds from what it stored (nodes, rails, seed)
 * instead of storing millions of slots. Reference: docs/campaigns.md, "Patterns". */
#ifndef RAILYARD_CONTROLLER_SCHEDULE_H
#define RAILYARD_CONTROLLER_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest campaign, in nodes. */
#define SCHED_NODES_MAX 8192
/* Rails per node at most. */
#define SCHED_RAILS_MAX 32
/* Congestion: benchmark sides one node takes part in at once, at most (the agent runs
 * AGENT_BENCH_MAX = 16; one is the victim's). */
#define SCHED_FANOUT_MAX 8

enum sched_pattern {
	SCHED_LOOPBACK,	   /* each node against itself (a == b), per rail */
	SCHED_PAIRS,	   /* every unordered pair once: circle method */
	SCHED_RING,	   /* i -> i+1 (mod n), all at once */
	SCHED_RANDOM_RING, /* the ring over a seeded random permutation (GPCNeT) */
};

/* "loopback", "pairs", "ring", "random-ring". 0 or -EINVAL. */
__attribute__((warn_unused_result)) int sched_pattern_parse(const char *s, enum sched_pattern *ret);
const char *sched_pattern_name(enum sched_pattern p);

/* Bits of sched_slot.missing: the rail does not exist (is not active) on that side. */
#define SCHED_MISSING_A 1u
#define SCHED_MISSING_B 2u

/* One measurement: a is the client, b the server (indexes into the caller's node list; a == b
 * for loopback); rail -1 when not per rail. A slot with missing != 0 is scheduled (so the
 * verdict can name the missing rail) but not run. */
struct sched_slot {
	uint32_t a, b;
	int32_t rail;
	uint8_t missing;
};

/* Slots that run at the same time. */
struct sched_round {
	struct sched_slot *slots;
	size_t n;
};

/* A test's rounds. order: for ring and random-ring the node order of the cycle (n entries;
 * order[i] sends to order[i+1 mod n]); NULL otherwise. seed: the seed used (random-ring). */
struct sched {
	struct sched_round *rounds;
	size_t nrounds;
	uint32_t *order;
	size_t norder;
	uint64_t seed;
	size_t nslots; /* over all rounds */
};

/* Build the schedule of one pattern over n nodes (indexes 0..n-1).
 * - per_rail: every pair/loopback slot is expanded into one slot per rail 0..R-1, R the largest
 *   of nrails[] (nrails may be NULL when !per_rail); a rail at or beyond a node's nrails[i] is
 *   marked missing on that side. The rails of one pair are in the same round (they run at once
 *   on different HCAs). Without per_rail, rail is -1 and nrails is not read.
 * - pairs: n even: n-1 rounds of n/2 disjoint pairs; n odd: n rounds of (n-1)/2 pairs, each node
 *   sitting out (bye) exactly once. Every unordered pair {i, j} appears exactly once; no node is
 *   in two slots of one round (per rail: no node in two pairs of one round). a/b alternate so
 *   that no node is always the client.
 * - loopback: one round, slot (i, i) for every node.
 * - ring, random-ring: one round of n slots order[i] -> order[i+1 mod n] (per rail: times R).
 *   random-ring draws order from seed (splitmix64 + Fisher-Yates; the same seed gives the same
 *   order on every platform).
 * Errors: -EINVAL (n < 2 for pairs/ring/random-ring, n < 1 for loopback, n > SCHED_NODES_MAX,
 * a rail count > SCHED_RAILS_MAX, per_rail with every node at 0 rails), -ENOMEM. *ret is
 * written only on success; free with sched_done(). */
__attribute__((warn_unused_result)) int sched_build(enum sched_pattern p, size_t n,
						    const uint32_t *nrails, bool per_rail,
						    uint64_t seed, struct sched *ret);
/* Free what sched_build() allocated; s may be zeroed or NULL. */
void sched_done(struct sched *s);

/* A congestion test's roles (GPCNeT's method, docs/campaigns.md "Congestion"): nodes drawn from
 * seed into victims and congestors. congestor share = round(fraction * n), clamped so that at
 * least 2 victims remain and at least 1 (incast) or 2 (all-to-all) nodes congest; an odd victim
 * left over joins the congestors. Victim pairs are (victims[0], victims[1]), (victims[2],
 * victims[3]), ...: a is the client, b the server.
 * - incast: congestor j sends to the server of victim pair j mod npairs (the hot spot is the
 *   victim's last hop), at most SCHED_FANOUT_MAX - 1 congestors per target; the rest idle.
 * - all-to-all: each congestor sends to the next k congestors of the drawn order, k =
 *   min(ncongestors - 1, SCHED_FANOUT_MAX / 2), so no node takes part in more than
 *   SCHED_FANOUT_MAX sides.
 * Congestor slots have rail -1 and missing 0; victim pairs likewise.
 * Errors: -EINVAL with *ret_need set to the nodes the test needs (incast 3, all-to-all 4) when
 * n is smaller, or fraction is not in (0, 1); -ENOMEM. Free with sched_congestion_done(). */
struct sched_congestion {
	uint32_t *victims, *congestors; /* node indexes */
	size_t nvictims, ncongestors;
	struct sched_slot *pairs; /* victim pairs */
	size_t npairs;
	struct sched_slot *flows; /* congestor flows (a sends to b) */
	size_t nflows;
	uint64_t seed;
};
__attribute__((warn_unused_result)) int sched_congestion_build(size_t n, double fraction,
							       bool all_to_all, uint64_t seed,
							       struct sched_congestion *ret,
							       size_t *ret_need);
void sched_congestion_done(struct sched_congestion *c);

#endif
