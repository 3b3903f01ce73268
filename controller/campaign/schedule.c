/* The campaign scheduler: builds the rounds of a pattern (loopback, pairs, ring, random-ring) and
 * the roles of a congestion test from the node count, rail counts and a seed. Pure: it owns only
 * the arrays it hands back (one block of rounds and slots, one of order). */
#include "controller/campaign/schedule.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const sched_pattern_names[] = {
	[SCHED_LOOPBACK] = "loopback",
	[SCHED_PAIRS] = "pairs",
	[SCHED_RING] = "ring",
	[SCHED_RANDOM_RING] = "random-ring",
};

#define SCHED_NPATTERNS (sizeof(sched_pattern_names) / sizeof(sched_pattern_names[0]))

int sched_pattern_parse(const char *s, enum sched_pattern *ret)
{
	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < SCHED_NPATTERNS; i++) {
		if (strcmp(s, sched_pattern_names[i]) == 0) {
			*ret = (enum sched_pattern)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *sched_pattern_name(enum sched_pattern p)
{
	if ((unsigned)p >= SCHED_NPATTERNS)
		return "unknown";
	return sched_pattern_names[p];
}

/* splitmix64 (Steele, Lea, Flood 2014): fixed-width integer arithmetic only, so a seed gives the
 * same stream on every platform and compiler. */
static uint64_t sched_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Uniform in [0, range), range >= 1, without modulo bias: Lemire's multiply-and-reject on the
 * high 32 bits of a draw (range <= SCHED_NODES_MAX fits in 32 bits; 64x64->128 multiplication
 * is not in C11). Rejects fewer than range / 2^32 of the draws. */
static uint32_t sched_bounded(uint64_t *state, uint32_t range)
{
	uint64_t m = (sched_splitmix64(state) >> 32) * range;
	uint32_t low = (uint32_t)m;

	if (low < range) {
		uint32_t threshold = (uint32_t)-range % range;

		while (low < threshold) {
			m = (sched_splitmix64(state) >> 32) * range;
			low = (uint32_t)m;
		}
	}
	return (uint32_t)(m >> 32);
}

/* Fisher-Yates over 0..n-1, drawn from seed; random-ring and congestion share it, so one seed
 * gives one node order for both. */
static void sched_shuffle(uint32_t *perm, size_t n, uint64_t seed)
{
	uint64_t state = seed;

	for (size_t i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	for (size_t i = n; i > 1; i--) {
		uint32_t j = sched_bounded(&state, (uint32_t)i);
		uint32_t t = perm[i - 1];

		perm[i - 1] = perm[j];
		perm[j] = t;
	}
}

/* Appends the slots of one measurement a -> b: one slot, or one per rail 0..nr-1 (nr > 0). */
static struct sched_slot *sched_emit(struct sched_slot *out, uint32_t a, uint32_t b,
				     const uint32_t *nrails, uint32_t nr)
{
	if (nr == 0) {
		*out++ = (struct sched_slot){.a = a, .b = b, .rail = -1};
		return out;
	}
	for (uint32_t r = 0; r < nr; r++) {
		uint8_t missing = 0;

		if (r >= nrails[a])
			missing |= SCHED_MISSING_A;
		if (r >= nrails[b])
			missing |= SCHED_MISSING_B;
		*out++ =
			(struct sched_slot){.a = a, .b = b, .rail = (int32_t)r, .missing = missing};
	}
	return out;
}

/* Circle method over m = n rounded up to even: node m-1 stays put, the others turn; in round r
 * node r meets m-1 and (r+k) meets (r-k) mod (m-1) for k = 1..m/2-1. With n odd, m-1 is the
 * dummy and meeting it is node r's bye. Direction: (r+k) is the client, so every rotating node
 * is client and server once per k; the fixed node is the client on even rounds. A node's client
 * and server counts thus differ by 0 (n odd) or 1 (n even, n-1 games). */
static void sched_fill_pairs(struct sched_round *rounds, struct sched_slot *slots, size_t n,
			     const uint32_t *nrails, uint32_t nr, size_t per_round)
{
	size_t m = n + (n & 1), rot = m - 1;
	struct sched_slot *out = slots;

	for (size_t r = 0; r < rot; r++) {
		rounds[r].slots = out;
		if (m == n) {
			uint32_t fixed = (uint32_t)(m - 1);

			if (r % 2 == 0)
				out = sched_emit(out, fixed, (uint32_t)r, nrails, nr);
			else
				out = sched_emit(out, (uint32_t)r, fixed, nrails, nr);
		}
		for (size_t k = 1; k < m / 2; k++) {
			size_t x = r + k, y = r + rot - k;

			if (x >= rot)
				x -= rot;
			if (y >= rot)
				y -= rot;
			out = sched_emit(out, (uint32_t)x, (uint32_t)y, nrails, nr);
		}
		rounds[r].n = per_round;
	}
}

int sched_build(enum sched_pattern p, size_t n, const uint32_t *nrails, bool per_rail,
		uint64_t seed, struct sched *ret)
{
	struct sched s = {0};
	size_t min_n = p == SCHED_LOOPBACK ? 1 : 2, pairs_per_round, offset, bytes;
	uint32_t nr = 0; /* rails per measurement; 0: not per rail */
	struct sched_slot *slots, *out;
	void *block;

	if ((unsigned)p >= SCHED_NPATTERNS || n < min_n || n > SCHED_NODES_MAX)
		return -EINVAL;
	if (per_rail) {
		if (!nrails)
			return -EINVAL;
		for (size_t i = 0; i < n; i++) {
			if (nrails[i] > SCHED_RAILS_MAX)
				return -EINVAL;
			if (nrails[i] > nr)
				nr = nrails[i];
		}
		if (nr == 0)
			return -EINVAL;
	}

	switch (p) {
	case SCHED_PAIRS:
		s.nrounds = n % 2 == 0 ? n - 1 : n;
		pairs_per_round = n / 2;
		break;
	case SCHED_LOOPBACK:
	case SCHED_RING:
	case SCHED_RANDOM_RING:
	default:
		s.nrounds = 1;
		pairs_per_round = n;
		break;
	}
	/* Bounded by SCHED_NODES_MAX^2 / 2 * SCHED_RAILS_MAX * 16 bytes (16 GiB), so no overflow
	 * on 64-bit size_t; the allocation may well fail then, hence -ENOMEM. */
	s.nslots = s.nrounds * pairs_per_round * (nr ? nr : 1);

	/* Rounds and slots in one block: millions of slots cost one allocation and one free. */
	offset = s.nrounds * sizeof(struct sched_round);
	offset = (offset + _Alignof(struct sched_slot) - 1) / _Alignof(struct sched_slot) *
		 _Alignof(struct sched_slot);
	bytes = offset + s.nslots * sizeof(struct sched_slot);
	block = malloc(bytes);
	if (!block)
		return -ENOMEM;
	s.rounds = block;
	slots = (struct sched_slot *)((char *)block + offset);

	if (p == SCHED_RING || p == SCHED_RANDOM_RING) {
		s.order = malloc(n * sizeof(*s.order));
		if (!s.order) {
			free(block);
			return -ENOMEM;
		}
		s.norder = n;
		if (p == SCHED_RANDOM_RING) {
			sched_shuffle(s.order, n, seed);
			s.seed = seed;
		} else {
			for (size_t i = 0; i < n; i++)
				s.order[i] = (uint32_t)i;
		}
	}

	switch (p) {
	case SCHED_PAIRS:
		sched_fill_pairs(s.rounds, slots, n, nrails, nr, s.nslots / s.nrounds);
		break;
	case SCHED_LOOPBACK:
		out = slots;
		for (size_t i = 0; i < n; i++)
			out = sched_emit(out, (uint32_t)i, (uint32_t)i, nrails, nr);
		s.rounds[0] = (struct sched_round){.slots = slots, .n = s.nslots};
		break;
	case SCHED_RING:
	case SCHED_RANDOM_RING:
	default:
		out = slots;
		for (size_t i = 0; i < n; i++)
			out = sched_emit(out, s.order[i], s.order[i + 1 < n ? i + 1 : 0], nrails,
					 nr);
		s.rounds[0] = (struct sched_round){.slots = slots, .n = s.nslots};
		break;
	}

	*ret = s;
	return 0;
}

void sched_done(struct sched *s)
{
	if (!s)
		return;
	free(s->rounds); /* the slots live in the same block */
	free(s->order);
	*s = (struct sched){0};
}

int sched_congestion_build(size_t n, double fraction, bool all_to_all, uint64_t seed,
			   struct sched_congestion *ret, size_t *ret_need)
{
	struct sched_congestion c = {0};
	size_t need = all_to_all ? 4 : 3, min_congestors = all_to_all ? 2 : 1, nc, k = 0;
	long share;
	uint32_t *nodes;
	struct sched_slot *slots;

	if (n < need) {
		if (ret_need)
			*ret_need = need;
		return -EINVAL;
	}
	/* Written so that NaN fails too. */
	if (!(fraction > 0.0 && fraction < 1.0) || n > SCHED_NODES_MAX)
		return -EINVAL;

	share = lround(fraction * (double)n);
	nc = share < (long)min_congestors ? min_congestors : (size_t)share;
	if (nc > n - 2)
		nc = n - 2;
	c.nvictims = n - nc;
	if (c.nvictims % 2) {
		c.nvictims--;
		nc++;
	}
	c.ncongestors = nc;
	c.npairs = c.nvictims / 2;
	if (all_to_all) {
		k = nc - 1 < SCHED_FANOUT_MAX / 2 ? nc - 1 : SCHED_FANOUT_MAX / 2;
		c.nflows = nc * k;
	} else {
		/* Congestor j is the (j / npairs)-th on its target; past FANOUT_MAX - 1 it idles.
		 */
		size_t cap = c.npairs * (SCHED_FANOUT_MAX - 1);

		c.nflows = nc < cap ? nc : cap;
	}

	/* Victims and congestors are the two ends of the drawn order, in one block; pairs and
	 * flows share another. sched_congestion_done() frees the two. */
	nodes = malloc(n * sizeof(*nodes));
	if (!nodes)
		return -ENOMEM;
	slots = malloc((c.npairs + c.nflows) * sizeof(*slots));
	if (!slots) {
		free(nodes);
		return -ENOMEM;
	}
	sched_shuffle(nodes, n, seed);
	c.victims = nodes;
	c.congestors = nodes + c.nvictims;
	c.pairs = slots;
	c.flows = slots + c.npairs;
	c.seed = seed;

	for (size_t i = 0; i < c.npairs; i++)
		c.pairs[i] = (struct sched_slot){
			.a = c.victims[2 * i], .b = c.victims[2 * i + 1], .rail = -1};
	if (all_to_all) {
		for (size_t i = 0; i < nc; i++)
			for (size_t d = 1; d <= k; d++)
				c.flows[i * k + d - 1] = (struct sched_slot){
					.a = c.congestors[i],
					.b = c.congestors[(i + d) % nc],
					.rail = -1,
				};
	} else {
		/* j < nflows <= npairs * (FANOUT_MAX - 1): each target gets at most that many. */
		for (size_t j = 0; j < c.nflows; j++)
			c.flows[j] = (struct sched_slot){
				.a = c.congestors[j], .b = c.pairs[j % c.npairs].b, .rail = -1};
	}

	*ret = c;
	return 0;
}

void sched_congestion_done(struct sched_congestion *c)
{
	if (!c)
		return;
	free(c->victims); /* congestors point into the same block */
	free(c->pairs);	  /* and flows into this one */
	*c = (struct sched_congestion){0};
}
