/* Benchmark, not a test: the verdict of a synthetic campaign at scale (default 1024 nodes x 8
 * rails, pairs per rail, a latency and a bandwidth test: 8,380,416 result rows) with injected
 * faults, vd_evaluate() timed alone. Prints the figures as key=value lines for
 * bench/campaign-verdict.sh, and exits 1 when the verdict misses an injected fault or names a
 * node, rail or link that is healthy: the figures of a wrong verdict are worth nothing. */
#include "controller/campaign/schedule.h"
#include "controller/campaign/verdict.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* Nodes whose last rail is missing (no active port), counted from the end. */
#define MISSING_NODES 3

struct faults {
	uint32_t node;		/* every pair of it slow, every rail */
	uint32_t rail_node;	/* one rail of it slow */
	int32_t rail;		/* that rail */
	uint32_t link[2][2];	/* two pairs slow on one rail each */
	int32_t link_rail[2];	/* their rails */
	uint32_t missing_first; /* nodes missing_first.. have rail R-1 missing */
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Resident set now, in MiB (/proc/self/statm); -1 when unknown. */
static double rss_now_mib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long size, res;
	double mib = -1;

	if (f && fscanf(f, "%lu %lu", &size, &res) == 2)
		mib = (double)res * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
	if (f)
		fclose(f);
	return mib;
}

static double rss_peak_mib(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss / 1024.0 : -1;
}

/* splitmix64: the same figures on every platform for one seed. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double uniform(uint64_t *s, double lo, double hi)
{
	return lo + (hi - lo) * (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

/* Facts excerpt of a node of nrails rails; rate_gbps of rail slow_rail (if >= 0) is 200. */
static json_t *facts_of(uint32_t nrails, int32_t slow_rail)
{
	json_t *f = json_pack("{s:[], s:[], s:{s:b, s:b}}", "rails", "gpus", "gpudirect", "peermem",
			      1, "dmabuf", 1);

	for (uint32_t k = 0; f && k < nrails; k++) {
		char dev[16];

		snprintf(dev, sizeof(dev), "mlx5_%u", k);
		if (json_array_append_new(
			    json_object_get(f, "rails"),
			    json_pack("{s:s, s:i, s:i, s:i, s:i, s:{s:i, s:i, s:s, s:s}}", "device",
				      dev, "port", 1, "rate_gbps", (int)k == slow_rail ? 200 : 400,
				      "mtu", 4096, "numa_node", k < nrails / 2 ? 0 : 1, "pcie",
				      "width", 16, "max_width", 16, "speed", "32.0 GT/s PCIe",
				      "max_speed", "32.0 GT/s PCIe")) < 0 ||
		    json_array_append_new(json_object_get(f, "gpus"),
					  json_pack("{s:i}", "numa_node", k < nrails / 2 ? 0 : 1)) <
			    0) {
			json_decref(f);
			return NULL;
		}
	}
	return f;
}

static bool is_pair(uint32_t a, uint32_t b, const uint32_t p[2])
{
	return (a == p[0] && b == p[1]) || (a == p[1] && b == p[0]);
}

/* Is slot (a, b, rail) slowed by an injected fault? */
static bool slowed(const struct faults *F, uint32_t a, uint32_t b, int32_t rail)
{
	return a == F->node || b == F->node ||
	       ((a == F->rail_node || b == F->rail_node) && rail == F->rail) ||
	       (is_pair(a, b, F->link[0]) && rail == F->link_rail[0]) ||
	       (is_pair(a, b, F->link[1]) && rail == F->link_rail[1]);
}

static const json_t *node_entry(const json_t *doc, uint32_t i)
{
	return json_array_get(json_object_get(doc, "nodes"), i);
}

/* Node i's rails[] entry for rail k, or NULL. */
static const json_t *rail_entry(const json_t *doc, uint32_t i, int32_t k)
{
	const json_t *rails = json_object_get(node_entry(doc, i), "rails"), *o;
	size_t j;

	json_array_foreach(rails, j,
			   o) if (json_integer_value(json_object_get(o, "rail")) == k) return o;
	return NULL;
}

static bool node_failed(const json_t *doc, uint32_t i)
{
	return strcmp(json_string_value(json_object_get(node_entry(doc, i), "result")), "fail") ==
	       0;
}

static bool reasons_have(const json_t *reasons, const char *needle)
{
	const json_t *x;
	size_t j;

	json_array_foreach(reasons, j, x) if (strstr(json_string_value(x), needle)) return true;
	return false;
}

/* Links of doc on (a, b, rail), over both tests. */
static size_t links_named(const json_t *doc, const struct vd_node *nodes, const uint32_t p[2],
			  int32_t rail)
{
	const json_t *lk;
	size_t j, n = 0;

	json_array_foreach(json_object_get(doc, "links"), j, lk)
	{
		const char *a = json_string_value(json_object_get(lk, "a"));
		const char *b = json_string_value(json_object_get(lk, "b"));

		if (json_integer_value(json_object_get(lk, "rail")) != rail)
			continue;
		if ((strcmp(a, nodes[p[0]].id) == 0 && strcmp(b, nodes[p[1]].id) == 0) ||
		    (strcmp(a, nodes[p[1]].id) == 0 && strcmp(b, nodes[p[0]].id) == 0))
			n++;
	}
	return n;
}

/* Did the verdict find exactly the injected faults? Says what it missed on stderr. */
static bool check(const json_t *doc, const struct vd_node *nodes, size_t n, size_t R,
		  const struct faults *F)
{
	const json_t *node = node_entry(doc, F->node), *rail;
	size_t failing = 0, expect_failing = 2 + MISSING_NODES;
	bool ok = true;

	if (strcmp(json_string_value(json_object_get(doc, "result")), "fail") != 0) {
		fprintf(stderr, "verdict: result %s, expected fail\n",
			json_string_value(json_object_get(doc, "result")));
		ok = false;
	}
	if (!node_failed(doc, F->node) ||
	    !reasons_have(json_object_get(node, "reasons"), "every rail fails")) {
		fprintf(stderr, "verdict: bad node %s not named as a node\n", nodes[F->node].id);
		ok = false;
	}
	rail = rail_entry(doc, F->rail_node, F->rail);
	if (!node_failed(doc, F->rail_node) || !rail ||
	    !reasons_have(json_object_get(rail, "reasons"), "runs at 200 Gb/s") ||
	    json_array_size(json_object_get(node_entry(doc, F->rail_node), "reasons")) != 0) {
		fprintf(stderr, "verdict: bad rail %d of %s not named (with its facts) as a rail\n",
			(int)F->rail, nodes[F->rail_node].id);
		ok = false;
	}
	for (uint32_t i = F->missing_first; i < n; i++) {
		rail = rail_entry(doc, i, (int32_t)R - 1);
		if (!node_failed(doc, i) || !rail ||
		    !reasons_have(json_object_get(rail, "reasons"), "missing")) {
			fprintf(stderr, "verdict: missing rail %zu of %s not named\n", R - 1,
				nodes[i].id);
			ok = false;
		}
	}
	for (int l = 0; l < 2; l++) {
		/* Named by both tests. */
		if (links_named(doc, nodes, F->link[l], F->link_rail[l]) != 2) {
			fprintf(stderr, "verdict: link %s <-> %s rail %d not named by both tests\n",
				nodes[F->link[l][0]].id, nodes[F->link[l][1]].id,
				(int)F->link_rail[l]);
			ok = false;
		}
	}
	if (json_integer_value(json_object_get(doc, "links_total")) != 4) {
		fprintf(stderr, "verdict: %lld links, expected 4\n",
			(long long)json_integer_value(json_object_get(doc, "links_total")));
		ok = false;
	}
	for (uint32_t i = 0; i < n; i++)
		failing += node_failed(doc, i);
	if (failing != expect_failing) {
		fprintf(stderr, "verdict: %zu nodes fail, expected %zu\n", failing, expect_failing);
		ok = false;
	}
	return ok;
}

static void usage(FILE *f, const char *argv0)
{
	fprintf(f, "usage: %s [--nodes N (1024)] [--rails R (8)] [--seed S (1)]\n", argv0);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"nodes", required_argument, NULL, 'n'},
		{"rails", required_argument, NULL, 'r'},
		{"seed", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	static const char *const lat_fields[] = {"p99_us"}, *const bw_fields[] = {"gbps"};
	static const struct vd_rule lat_rules[] = {
		{"pair-lat.p99_us", NULL, VD_LE, VD_ABS, 3.0, 0, 1},
		{"pair-lat.p99_us", NULL, VD_LE, VD_MIN, 2.1, 0, 2},
	};
	static const struct vd_rule bw_rules[] = {
		{"pair-bw.gbps", NULL, VD_GE, VD_ABS, 370, 0, 3},
		{"pair-bw.gbps", NULL, VD_GE, VD_MEDIAN, 0.93, 0, 4},
	};
	const struct vd_test tests[2] = {
		{"pair-lat", "lat", "pairs", true, lat_fields, 1, lat_rules, 2},
		{"pair-bw", "bw", "pairs", true, bw_fields, 1, bw_rules, 2},
	};
	double t_start = now_ms(), t0, t1, rss_before, rss_after, peak_before;
	size_t n = 1024, R = 8, nrows = 0, nslots, nfindings;
	uint64_t seed = 1, rng;
	uint32_t *nrails = NULL;
	struct sched s = {0};
	struct vd_node *nodes = NULL;
	struct vd_row *rows = NULL;
	double *vals = NULL;
	char(*ids)[16] = NULL;
	json_t *doc = NULL;
	struct vd_input in;
	struct faults F;
	int c, r, rc = 1;

	while ((c = getopt_long(argc, argv, "n:r:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			n = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			R = strtoul(optarg, NULL, 10);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 10);
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	/* The faults need distinct nodes: a bad node, a bad rail, two links, the missing rails. */
	if (n < 16 || n > SCHED_NODES_MAX || R < 2 || R > SCHED_RAILS_MAX) {
		fprintf(stderr, "%s: --nodes 16..%d, --rails 2..%d\n", argv[0], SCHED_NODES_MAX,
			SCHED_RAILS_MAX);
		return 2;
	}
	F = (struct faults){.node = 0,
			    .rail_node = 1,
			    .rail = (int32_t)R / 2,
			    .link = {{2, (uint32_t)n / 2},
				     {(uint32_t)n / 2 + 1, (uint32_t)(n - MISSING_NODES - 1)}},
			    .link_rail = {1, (int32_t)R - 2},
			    .missing_first = (uint32_t)(n - MISSING_NODES)};

	nrails = calloc(n, sizeof(*nrails));
	nodes = calloc(n, sizeof(*nodes));
	ids = calloc(n, sizeof(*ids));
	if (!nrails || !nodes || !ids)
		goto oom;
	for (uint32_t i = 0; i < n; i++) {
		nrails[i] = (uint32_t)(i >= F.missing_first ? R - 1 : R);
		snprintf(ids[i], sizeof(ids[i]), "gpu-%04u", i);
		nodes[i].id = ids[i];
		nodes[i].hostname = ids[i];
		nodes[i].facts = facts_of(nrails[i], i == F.rail_node ? F.rail : -1);
		if (!nodes[i].facts)
			goto oom;
	}
	r = sched_build(SCHED_PAIRS, n, nrails, true, seed, &s);
	if (r < 0) {
		fprintf(stderr, "%s: sched_build: %s\n", argv[0], strerror(-r));
		goto out;
	}
	nslots = s.nslots;
	rows = malloc(2 * nslots * sizeof(*rows));
	vals = malloc(2 * nslots * sizeof(*vals));
	if (!rows || !vals)
		goto oom;
	/* Rows test by test, each in schedule order, as the campaign stores them. */
	rng = seed;
	for (uint32_t t = 0; t < 2; t++) {
		for (size_t k = 0; k < s.nrounds; k++) {
			for (size_t j = 0; j < s.rounds[k].n; j++) {
				const struct sched_slot *sl = &s.rounds[k].slots[j];
				struct vd_row *w = &rows[nrows];
				double *v = &vals[nrows++];
				bool slow = slowed(&F, sl->a, sl->b, sl->rail);

				*w = (struct vd_row){.test = t,
						     .a = sl->a,
						     .b = sl->b,
						     .rail = sl->rail,
						     .state = VD_OK,
						     .phase = VD_RUN,
						     .v = v};
				if (sl->missing) {
					w->state = VD_MISSING;
					w->missing = sl->missing;
					w->v = NULL;
					continue;
				}
				if (t == 0)
					*v = slow ? uniform(&rng, 4.0, 6.0)
						  : uniform(&rng, 1.1, 1.4);
				else
					*v = slow ? uniform(&rng, 150, 250)
						  : uniform(&rng, 385, 392);
			}
		}
	}
	/* The verdict reads rows only: the schedule is not part of its input. */
	sched_done(&s);
	in = (struct vd_input){.tests = tests,
			       .ntests = 2,
			       .nodes = nodes,
			       .nnodes = n,
			       .rows = rows,
			       .nrows = nrows,
			       .transport = "verbs"};

	rss_before = rss_now_mib();
	peak_before = rss_peak_mib();
	t0 = now_ms();
	r = vd_evaluate(&in, &doc);
	t1 = now_ms();
	if (r < 0) {
		fprintf(stderr, "%s: vd_evaluate: %s\n", argv[0], strerror(-r));
		goto out;
	}
	rss_after = rss_now_mib();
	nfindings = json_array_size(json_object_get(doc, "findings"));
	printf("nodes=%zu\nrails=%zu\nrows=%zu\nevaluate_ms=%.1f\nrss_before_mib=%.1f\n"
	       "rss_after_mib=%.1f\npeak_before_mib=%.1f\npeak_rss_mib=%.1f\nfindings=%zu\n"
	       "links=%lld\n",
	       n, R, nrows, t1 - t0, rss_before, rss_after, peak_before, rss_peak_mib(), nfindings,
	       (long long)json_integer_value(json_object_get(doc, "links_total")));
	rc = check(doc, nodes, n, R, &F) ? 0 : 1;
	printf("faults_found=%s\n", rc == 0 ? "yes" : "no");
	printf("total_ms=%.1f\n", now_ms() - t_start);
	goto out;
oom:
	fprintf(stderr, "%s: %s\n", argv[0], strerror(ENOMEM));
out:
	json_decref(doc);
	for (size_t i = 0; nodes && i < n; i++)
		json_decref((json_t *)nodes[i].facts);
	sched_done(&s);
	free(rows);
	free(vals);
	free(ids);
	free(nodes);
	free(nrails);
	return rc;
}
