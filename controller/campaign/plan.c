/* A stored campaign brought back to life: its nodes and rails, each test's rounds regenerated
 * from the spec and the seed (the same on every controller start), the benchmark of each slot,
 * the summary of a finished run, and the verdict's input built from the result rows. */
#include "controller/campaign/campaign_int.h"
#include "controller/campaign/coll.h"
#include "controller/store/store_bench.h"
#include "controller/store/store_campaign.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- loading ------------------------------------------------------------------------------- */

void cp_done(struct cp_campaign *c)
{
	if (!c)
		return;
	for (size_t i = 0; c->v && i < c->n; i++)
		free(c->v[i].rails);
	free(c->v);
	json_decref(c->spec);
	json_decref(c->nodes);
	memset(c, 0, sizeof(*c));
}

int cp_load(const char *spec_json, const char *nodes_json, int64_t seed, struct cp_campaign *ret)
{
	struct cp_campaign c = {0};
	const json_t *e;
	size_t i;

	c.spec = json_loads(spec_json, 0, NULL);
	c.nodes = json_loads(nodes_json, 0, NULL);
	if (!json_is_object(c.spec) || !json_is_array(json_object_get(c.spec, "tests")) ||
	    !json_is_array(c.nodes) || json_array_size(c.nodes) > SCHED_NODES_MAX)
		goto bad;
	c.transport = json_string_value(json_object_get(c.spec, "transport"));
	c.quick = json_is_true(json_object_get(c.spec, "quick"));
	c.seed = (uint64_t)seed;
	if (!c.transport)
		goto bad;
	c.n = json_array_size(c.nodes);
	c.v = calloc(c.n + 1, sizeof(*c.v));
	if (!c.v) {
		cp_done(&c);
		return -ENOMEM;
	}
	json_array_foreach(c.nodes, i, e)
	{
		const json_t *rails = json_object_get(e, "rails"), *r;
		struct cp_node *nd = &c.v[i];
		size_t k;

		nd->id = json_string_value(json_object_get(e, "id"));
		nd->hostname = json_string_value(json_object_get(e, "hostname"));
		nd->facts = e;
		if (!nd->id || !nd->hostname || !json_is_array(rails) ||
		    json_array_size(rails) > SCHED_RAILS_MAX ||
		    (i > 0 && strcmp(c.v[i - 1].id, nd->id) >= 0))
			goto bad;
		nd->rails = calloc(json_array_size(rails) + 1, sizeof(*nd->rails));
		if (!nd->rails) {
			cp_done(&c);
			return -ENOMEM;
		}
		json_array_foreach(rails, k, r)
		{
			nd->rails[k].device = json_string_value(json_object_get(r, "device"));
			nd->rails[k].port = (int)json_integer_value(json_object_get(r, "port"));
			if (!nd->rails[k].device || nd->rails[k].port < 1)
				goto bad;
		}
		nd->nrails = (uint32_t)json_array_size(rails);
	}
	*ret = c;
	return 0;
bad:
	cp_done(&c);
	return -RY_E_INVALID;
}

long cp_node_index(const struct cp_campaign *c, const char *id)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int d = strcmp(c->v[mid].id, id);

		if (d == 0)
			return (long)mid;
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

const json_t *cp_test(const struct cp_campaign *c, size_t t)
{
	return json_array_get(json_object_get(c->spec, "tests"), t);
}

size_t cp_ntests(const struct cp_campaign *c)
{
	return json_array_size(json_object_get(c->spec, "tests"));
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

static int64_t num_of(const json_t *o, const char *key)
{
	return (int64_t)json_integer_value(json_object_get(o, key));
}

/* ---- rounds -------------------------------------------------------------------------------- */

void cp_rounds_done(struct cp_rounds *r)
{
	if (!r)
		return;
	free(r->slots);
	free(r->start);
	free(r->order);
	memset(r, 0, sizeof(*r));
}

/* Each test draws from its own seed, so removing a test (--tests) keeps the others' draws. */
static uint64_t test_seed(uint64_t seed, size_t t)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(t + 1);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int rounds_alloc(struct cp_rounds *r, size_t nrounds, size_t nslots)
{
	r->slots = calloc(nslots + 1, sizeof(*r->slots));
	r->start = calloc(nrounds + 1, sizeof(*r->start));
	r->nrounds = nrounds;
	r->nslots = nslots;
	return r->slots && r->start ? 0 : -ENOMEM;
}

static int congestion_rounds(const struct cp_campaign *c, const json_t *test, uint64_t seed,
			     struct cp_rounds *r, char *why, size_t whylen)
{
	const json_t *victims = json_object_get(test, "victims"), *v;
	bool all_to_all = strcmp(str(test, "congestors"), "all-to-all") == 0;
	struct sched_congestion cg = {0};
	size_t need = 0, nv = json_array_size(victims), k = 0, i, round = 0;
	int e = sched_congestion_build(c->n, json_real_value(json_object_get(test, "fraction")),
				       all_to_all, seed, &cg, &need);

	if (e == -EINVAL) {
		snprintf(why, whylen,
			 "%s: a congestion test with %s congestors needs at least %zu nodes; %zu "
			 "selected",
			 str(test, "name"), all_to_all ? "all-to-all" : "incast", need, c->n);
		return e;
	}
	if (e < 0)
		return e;
	/* Isolated rounds (victim pairs alone), then congested rounds (the same pairs while the
	 * congestors run), one of each per victim kind. */
	e = rounds_alloc(r, 2 * nv, 2 * nv * cg.npairs + nv * cg.nflows);
	if (e < 0)
		goto out;
	for (int congested = 0; congested < 2; congested++) {
		json_array_foreach(victims, i, v)
		{
			bool lat = strcmp(json_string_value(v), "lat") == 0;
			uint8_t phase = congested ? (lat ? VD_CON_LAT : VD_CON_BW)
						  : (lat ? VD_ISO_LAT : VD_ISO_BW);

			r->start[round++] = k;
			for (size_t p = 0; p < cg.npairs; p++)
				r->slots[k++] = (struct cp_slot){
					cg.pairs[p].a, cg.pairs[p].b, -1, 0, phase, CP_MEASURE};
			for (size_t f = 0; congested && f < cg.nflows; f++)
				r->slots[k++] =
					(struct cp_slot){cg.flows[f].a, cg.flows[f].b, -1, 0,
							 VD_CONGESTOR,	CP_CONGESTOR};
		}
	}
	r->start[round] = k;
	r->nslots = k;
	r->seed = seed;
out:
	sched_congestion_done(&cg);
	return e;
}

uint32_t cp_coll_launcher(const struct cp_campaign *c, int k)
{
	uint32_t best[2] = {0, 0};

	/* The two smallest (host name, id): a launcher an operator can tell from the names. */
	for (uint32_t i = 0; i < c->n; i++) {
		int d0 = i == 0 ? -1 : strcmp(c->v[i].hostname, c->v[best[0]].hostname);

		if (i == 0)
			continue;
		if (d0 < 0 || (d0 == 0 && strcmp(c->v[i].id, c->v[best[0]].id) < 0)) {
			best[1] = best[0];
			best[0] = i;
		} else if (best[1] == best[0] ||
			   strcmp(c->v[i].hostname, c->v[best[1]].hostname) < 0 ||
			   (strcmp(c->v[i].hostname, c->v[best[1]].hostname) == 0 &&
			    strcmp(c->v[i].id, c->v[best[1]].id) < 0)) {
			best[1] = i;
		}
	}
	return best[k ? 1 : 0];
}

int cp_test_rounds(const struct cp_campaign *c, size_t t, struct cp_rounds *ret, char *why,
		   size_t whylen)
{
	const json_t *test = cp_test(c, t);
	struct cp_rounds r = {0};
	struct sched s = {0};
	enum sched_pattern pat;
	uint32_t *nrails = NULL;
	uint64_t seed = test_seed(c->seed, t);
	bool per_rail, verbs = strcmp(c->transport, "verbs") == 0;
	int e;

	snprintf(why, whylen, "invalid test");
	if (!test)
		return -EINVAL;
	if (strcmp(str(test, "kind"), "congestion") == 0) {
		e = congestion_rounds(c, test, seed, &r, why, whylen);
		goto done;
	}
	if (strcmp(str(test, "kind"), "collective") == 0) {
		/* One job over every node, launched by the first by host name: one round, one
		 * slot. */
		if (c->n < 2) {
			snprintf(why, whylen,
				 "%s: a collective needs at least 2 nodes; %zu selected",
				 str(test, "name"), c->n);
			return -EINVAL;
		}
		e = rounds_alloc(&r, 1, 1);
		if (e >= 0) {
			uint32_t l = cp_coll_launcher(c, 0);

			r.slots[0] = (struct cp_slot){l, l, -1, 0, VD_RUN, CP_MEASURE};
			r.start[1] = 1;
		}
		r.seed = seed;
		goto done;
	}
	if (strcmp(str(test, "kind"), "gpu") == 0) {
		/* Each node checks its own GPUs, all at once: one round, slot (i, i). */
		if (c->n < 1)
			return -EINVAL;
		e = rounds_alloc(&r, 1, c->n);
		for (size_t i = 0; e >= 0 && i < c->n; i++)
			r.slots[i] = (struct cp_slot){(uint32_t)i, (uint32_t)i, -1,
						      0,	   VD_RUN,	CP_MEASURE};
		if (e >= 0)
			r.start[1] = c->n;
		r.seed = seed;
		goto done;
	}
	if (sched_pattern_parse(str(test, "pattern"), &pat) < 0)
		return -EINVAL;
	/* Rails only mean something over verbs; a loopback over verbs is per HCA by nature. */
	per_rail =
		verbs && (json_is_true(json_object_get(test, "per_rail")) || pat == SCHED_LOOPBACK);
	if (per_rail) {
		bool any = false;

		nrails = calloc(c->n + 1, sizeof(*nrails));
		if (!nrails)
			return -ENOMEM;
		for (size_t i = 0; i < c->n; i++) {
			nrails[i] = c->v[i].nrails;
			any |= nrails[i] > 0;
		}
		if (!any) {
			snprintf(why, whylen,
				 "%s: per rail over verbs, but no selected node has an active RDMA "
				 "port",
				 str(test, "name"));
			free(nrails);
			return -EINVAL;
		}
	}
	e = sched_build(pat, c->n, nrails, per_rail, seed, &s);
	free(nrails);
	if (e == -EINVAL) {
		snprintf(why, whylen, "%s: pattern %s needs at least %d nodes; %zu selected",
			 str(test, "name"), sched_pattern_name(pat), pat == SCHED_LOOPBACK ? 1 : 2,
			 c->n);
		return e;
	}
	if (e < 0)
		return e;
	e = rounds_alloc(&r, s.nrounds, s.nslots);
	for (size_t k = 0, j = 0; e >= 0 && k < s.nrounds; k++) {
		r.start[k] = j;
		for (size_t q = 0; q < s.rounds[k].n; q++) {
			const struct sched_slot *x = &s.rounds[k].slots[q];

			r.slots[j++] = (struct cp_slot){x->a,	    x->b,   x->rail,
							x->missing, VD_RUN, CP_MEASURE};
		}
		r.start[k + 1] = j;
	}
	if (e >= 0 && s.order) {
		r.order = malloc(s.norder * sizeof(*r.order));
		if (!r.order)
			e = -ENOMEM;
		else
			memcpy(r.order, s.order, s.norder * sizeof(*r.order));
		r.norder = s.norder;
	}
	r.seed = seed;
	sched_done(&s);
done:
	if (e < 0) {
		cp_rounds_done(&r);
		return e;
	}
	*ret = r;
	return 0;
}

/* ---- a slot's benchmark --------------------------------------------------------------------- */

static json_t *side(const struct cp_node *n, int32_t rail)
{
	if (rail < 0 || (uint32_t)rail >= n->nrails)
		return json_object();
	return json_pack("{s:s, s:i}", "device", n->rails[rail].device, "ib_port",
			 n->rails[rail].port);
}

/* The GPU a node's side of a mem: cuda test uses, as a memory spec ("cuda:GPU-..." or
 * "cuda:0000:18:00.0", else "cuda:I"): gpu nearest, the GPU whose nearest HCA (facts
 * gpus[].nearest_hca.device) is the rail's device, the lowest such; gpu index, GPU i for rail
 * i. Without a rail (tcp, or not per rail), GPU 0. 0, or -RY_E_NOT_FOUND with why. */
static int gpu_of(const struct cp_node *n, int32_t rail, const char *how, char *out, size_t outlen,
		  char *why, size_t whylen)
{
	const json_t *gpus = json_object_get(n->facts, "gpus"), *g = NULL, *x;
	const char *dev = rail >= 0 && (uint32_t)rail < n->nrails ? n->rails[rail].device : NULL;
	size_t i, idx = 0;

	if (json_array_size(gpus) == 0) {
		snprintf(why, whylen, "mem: cuda, but %s has no GPU", n->hostname);
		return -RY_E_NOT_FOUND;
	}
	if (!dev) {
		g = json_array_get(gpus, 0);
	} else if (strcmp(how, "index") == 0) {
		idx = (size_t)rail;
		g = json_array_get(gpus, idx);
		if (!g) {
			snprintf(why, whylen,
				 "gpu: index pairs rail %d (%s) of %s with GPU %d; it has %zu",
				 (int)rail, dev, n->hostname, (int)rail, json_array_size(gpus));
			return -RY_E_NOT_FOUND;
		}
	} else {
		json_array_foreach(gpus, i, x)
		{
			const char *near = str(json_object_get(x, "nearest_hca"), "device");

			if (strcmp(near, dev) == 0) {
				g = x;
				idx = i;
				break;
			}
		}
		if (!g) {
			snprintf(why, whylen,
				 "gpu: nearest: no GPU of %s has %s (rail %d) as its nearest HCA "
				 "(facts gpus[].nearest_hca)",
				 n->hostname, dev, (int)rail);
			return -RY_E_NOT_FOUND;
		}
	}
	if (str(g, "uuid")[0])
		snprintf(out, outlen, "cuda:%s", str(g, "uuid"));
	else if (str(g, "bus")[0])
		snprintf(out, outlen, "cuda:%s", str(g, "bus"));
	else
		snprintf(out, outlen, "cuda:%zu", idx);
	return 0;
}

int cp_slot_bench(const struct cp_campaign *c, size_t t, const struct cp_slot *s,
		  const char **ret_kind, json_t **ret_params, int64_t *ret_deadline_ms, char *why,
		  size_t whylen)
{
	const json_t *test = cp_test(c, t);
	const char *kind = str(test, "kind");
	bool verbs = strcmp(c->transport, "verbs") == 0;
	int64_t duration = num_of(test, "duration_s"), iters = num_of(test, "iters");
	int64_t size = num_of(test, "size"), qps = num_of(test, "qps");
	bool bidir = json_is_true(json_object_get(test, "bidir"));
	const char *op = verbs ? str(test, "op") : "send";
	json_t *p;

	if (!test || s->a >= c->n || s->b >= c->n)
		return -EINVAL;
	if (strcmp(kind, "collective") == 0) {
		/* The job over every node of the campaign, the slot's node launching it; its
		 * retest without the first job's launcher. */
		struct cp_coll_host *h = calloc(c->n + 1, sizeof(*h));
		size_t k = 1;

		if (!h)
			return -ENOMEM;
		h[0] = (struct cp_coll_host){c->v[s->a].id, c->v[s->a].hostname};
		for (size_t i = 0; i < c->n; i++)
			if (i != s->a && !(s->phase == VD_RETEST && i == cp_coll_launcher(c, 0)))
				h[k++] = (struct cp_coll_host){c->v[i].id, c->v[i].hostname};
		p = k >= 2 ? cp_coll_params(test, c->transport, h, k) : NULL;
		free(h);
		if (!p)
			return -ENOMEM;
		*ret_kind = "collective";
		*ret_params = p;
		*ret_deadline_ms = num_of(test, "timeout_s") * 1000 + CP_RUN_SLACK_MS;
		return 0;
	}
	if (strcmp(kind, "gpu") == 0) {
		/* The node's own GPUs: one side; the copies take seconds, the rest is slack. */
		p = json_pack("{s:s, s:I, s:I, s:f, s:f, s:f}", "kind", "gpu", "size",
			      (json_int_t)num_of(test, "size"), "repeats",
			      (json_int_t)num_of(test, "repeats"), "h2d_min_gb_s",
			      json_number_value(json_object_get(test, "h2d_min")), "d2h_min_gb_s",
			      json_number_value(json_object_get(test, "d2h_min")), "d2d_min_gb_s",
			      json_number_value(json_object_get(test, "d2d_min")));
		if (!p)
			return -ENOMEM;
		*ret_kind = "gpu";
		*ret_params = p;
		*ret_deadline_ms = CP_GPU_CHECK_MS + CP_RUN_SLACK_MS;
		return 0;
	}
	if (strcmp(kind, "congestion") == 0) {
		/* Victims measure for the test's duration; latency with small messages. A
		 * congestion test names no op: RDMA writes over verbs, the lat/bw default. */
		iters = 0;
		op = verbs ? "write" : "send";
		bidir = false;
		qps = 1;
		if (s->phase == VD_ISO_LAT || s->phase == VD_CON_LAT) {
			kind = "lat";
			size = 8;
		} else {
			kind = "bw";
		}
		if (s->role == CP_CONGESTOR) {
			duration += CP_CONGESTOR_EXTRA_S;
			qps = verbs ? 4 : 2;
		}
	}
	p = json_pack("{s:s, s:s, s:s, s:I}", "kind", kind, "transport", c->transport, "op", op,
		      "size", (json_int_t)size);
	if (!p)
		return -ENOMEM;
	if (iters > 0)
		json_object_set_new(p, "iters", json_integer(iters));
	else
		json_object_set_new(p, "duration_s", json_integer(duration > 0 ? duration : 1));
	if (strcmp(kind, "bw") == 0) {
		json_object_set_new(p, "qps", json_integer(qps > 0 ? qps : 1));
		if (bidir)
			json_object_set_new(p, "bidir", json_true());
	}
	if (verbs && json_is_integer(json_object_get(test, "traffic_class")))
		json_object_set(p, "traffic_class", json_object_get(test, "traffic_class"));
	if (verbs && s->rail >= 0)
		json_object_set_new(p, "sides",
				    json_pack("{s:o, s:o}", "client", side(&c->v[s->a], s->rail),
					      "server", side(&c->v[s->b], s->rail)));
	if (strcmp(str(test, "mem"), "cuda") == 0 && s->role == CP_MEASURE) {
		/* Each side in its own GPU's memory: the GPU of its rail. */
		char ma[BENCH_MEM_SPEC_MAX], mb[BENCH_MEM_SPEC_MAX];
		int32_t rail = verbs ? s->rail : -1;
		json_t *sides = json_object_get(p, "sides");

		if (gpu_of(&c->v[s->a], rail, str(test, "gpu"), ma, sizeof(ma), why, whylen) < 0 ||
		    gpu_of(&c->v[s->b], rail, str(test, "gpu"), mb, sizeof(mb), why, whylen) < 0) {
			json_decref(p);
			return -RY_E_NOT_FOUND;
		}
		if (!sides) {
			sides = json_pack("{s:{}, s:{}}", "client", "server");
			json_object_set_new(p, "sides", sides);
		}
		json_object_set_new(json_object_get(sides, "client"), "mem", json_string(ma));
		json_object_set_new(json_object_get(sides, "server"), "mem", json_string(mb));
	}
	*ret_kind = kind;
	*ret_params = p;
	*ret_deadline_ms =
		(iters > 0 ? iters : 0) + (iters > 0 ? 0 : duration * 1000) + CP_RUN_SLACK_MS;
	return 0;
}

/* ---- a run's summary ------------------------------------------------------------------------ */

/* The counters a port reports that mean trouble when they move. */
static const char *const error_counters[] = {
	"symbol_error",
	"link_error_recovery",
	"link_downed",
	"port_rcv_errors",
	"port_rcv_remote_physical_errors",
	"port_xmit_discards",
	"local_link_integrity_errors",
	"excessive_buffer_overrun_errors",
	"out_of_sequence",
	"packet_seq_err",
	"local_ack_timeout_err",
	"implied_nak_seq_err",
	"duplicate_request",
	"out_of_seq_request",
	"rcvd_seq_err",
	"retry_exceeded_err",
	"retry_rnr_exceeded_err",
	"completer_retry_err",
	"send_err",
};

static bool error_counter(const char *name)
{
	for (size_t i = 0; i < RY_ARRAY_SIZE(error_counters); i++)
		if (strcmp(name, error_counters[i]) == 0)
			return true;
	return false;
}

/* Sum one side's counter deltas into counters; unknown (null) deltas into unknown. */
static void add_counters(const json_t *doc, json_t *counters, json_t *unknown)
{
	const json_t *ports = json_object_get(json_object_get(doc, "counters"), "ports"), *p;
	size_t i;

	json_array_foreach(ports, i, p)
	{
		const char *name;
		json_t *d;

		json_object_foreach(json_object_get(p, "delta"), name, d)
		{
			if (json_is_integer(d) && !json_object_get(unknown, name)) {
				json_int_t prev =
					json_integer_value(json_object_get(counters, name));

				json_object_set_new(counters, name,
						    json_integer(prev + json_integer_value(d)));
			} else if (json_is_null(d)) {
				json_object_del(counters, name);
				json_object_set_new(unknown, name, json_true());
			}
		}
	}
}

static json_t *env_of(const json_t *e)
{
	if (!json_is_object(e))
		return json_null();
	return json_pack("{s:O?, s:O?, s:O?, s:O?}", "device", json_object_get(e, "device"), "port",
			 json_object_get(e, "port"), "mtu", json_object_get(e, "mtu"), "link_gbps",
			 json_object_get(e, "link_gbps"));
}

/* A GPU check's summary: its figures as metrics (the lowest of the node's GPUs), and what
 * failed or was not read, bounded, for the verdict's reasons. */
static json_t *gpu_summary(const json_t *doc)
{
	static const char *const keys[] = {"h2d_gb_s", "d2h_gb_s",	"d2d_gb_s",
					   "gpus",     "checks_failed", "not_read"};
	const json_t *sum = json_object_get(doc, "summary"), *x;
	json_t *m = json_object(), *fails = json_array(), *unread = json_array();
	size_t i;

	for (i = 0; i < RY_ARRAY_SIZE(keys); i++)
		if (json_is_number(json_object_get(sum, keys[i])))
			json_object_set(m, keys[i], json_object_get(sum, keys[i]));
	json_array_foreach(json_object_get(doc, "failures"), i, x)
	{
		if (i < CP_GPU_LISTED && json_is_string(x))
			json_array_append(fails, (json_t *)x);
	}
	json_array_foreach(json_object_get(doc, "not_read"), i, x)
	{
		if (i < CP_GPU_LISTED && json_is_string(x))
			json_array_append(unread, (json_t *)x);
	}
	return json_pack("{s:o, s:{}, s:{}, s:{s:o, s:o}}", "metrics", m, "counters",
			 "counters_unknown", "gpu", "failures", fails, "not_read", unread);
}

/* The figures every collective test's verdict shows (cp_coll_summary()'s metrics). */
static const char *const cp_coll_fields[] = {
	"busbw_gbs", "algbw_gbs",    "avg_busbw_gbs",	  "lat_us", "wrong", "pair_min_gbps",
	"cpu_cores", "cpu_s_per_gb", "host_cpu_s_per_gb",
};
/* The CPU fields every bw test's verdict shows (their stats: median over the pairs), which its
 * acceptance rules may name (common/playbook/playbook_validation.c's bw_fields). */
static const char *const cp_cpu_fields[CP_CPU_FIELDS] = {
	"cpu_cores_client",    "cpu_cores_server",	  "cpu_s_per_gb_client",
	"cpu_s_per_gb_server", "cpu_thread_cores_client", "cpu_thread_cores_server",
};

/* A step's CPU cost as metrics (docs/campaigns.md, "CPU cost"): per side, host-wide cores and
 * CPU-seconds per GB, and the benchmark thread's cores; unknown figures are left out. The
 * figures passed the evidence checks before a row is summarised. */
static void add_cpu(json_t *m, const json_t *cpu)
{
	static const char *const sides[] = {"client", "server"};
	static const char *const map[][2] = {
		{"host_cores", "cpu_cores"},
		{"host_s_per_gb", "cpu_s_per_gb"},
		{"thread_cores", "cpu_thread_cores"},
	};
	char key[64];

	for (size_t s = 0; s < RY_ARRAY_SIZE(sides); s++) {
		const json_t *c = json_object_get(cpu, sides[s]);

		for (size_t i = 0; i < RY_ARRAY_SIZE(map); i++) {
			const json_t *x = json_object_get(c, map[i][0]);

			if (!json_is_number(x))
				continue;
			snprintf(key, sizeof(key), "%s_%s", map[i][1], sides[s]);
			json_object_set(m, key, (json_t *)x);
		}
	}
}

json_t *cp_summary(const struct store_bench_run *b)
{
	json_t *res = b->result_json ? json_loads(b->result_json, 0, NULL) : NULL;
	json_t *srv, *m, *counters, *unknown, *out;
	const json_t *r0 = json_array_get(json_object_get(res, "results"), 0);
	const json_t *lat = json_object_get(r0, "latency"), *bw = json_object_get(r0, "bw");
	static const char *const lat_map[][2] = {
		{"min", "min_us"},   {"p50", "p50_us"},	      {"p90", "p90_us"},
		{"p99", "p99_us"},   {"p99_9", "p999_us"},    {"max", "max_us"},
		{"mean", "mean_us"}, {"stddev", "stddev_us"},
	};

	if (b->kind && strcmp(b->kind, "gpu") == 0) {
		out = gpu_summary(res);
		json_decref(res);
		return out;
	}
	if (b->kind && strcmp(b->kind, "collective") == 0) {
		json_t *params = json_loads(b->params_json ? b->params_json : "{}", 0, NULL);

		out = cp_coll_summary(res, params);
		json_decref(params);
		json_decref(res);
		return out;
	}
	srv = b->server_result_json ? json_loads(b->server_result_json, 0, NULL) : NULL;
	m = json_object();
	counters = json_object();
	unknown = json_object();
	for (size_t i = 0; lat && i < RY_ARRAY_SIZE(lat_map); i++)
		if (json_is_number(json_object_get(lat, lat_map[i][0])))
			json_object_set(m, lat_map[i][1], json_object_get(lat, lat_map[i][0]));
	if (json_is_number(json_object_get(bw, "gbps")))
		json_object_set(m, "gbps", json_object_get(bw, "gbps"));
	if (json_is_number(json_object_get(bw, "msg_rate")))
		json_object_set(m, "msg_rate", json_object_get(bw, "msg_rate"));
	if (json_is_number(json_object_get(json_object_get(r0, "bw_reverse"), "gbps")))
		json_object_set(m, "gbps_reverse",
				json_object_get(json_object_get(r0, "bw_reverse"), "gbps"));
	add_cpu(m, json_object_get(r0, "cpu"));
	add_counters(res, counters, unknown);
	add_counters(srv, counters, unknown);
	out = json_pack("{s:o, s:o, s:o, s:{s:o, s:o}}", "metrics", m, "counters", counters,
			"counters_unknown", unknown, "env", "a",
			env_of(json_object_get(json_object_get(res, "environment"), "client")), "b",
			env_of(json_object_get(json_object_get(res, "environment"), "server")));
	json_decref(res);
	json_decref(srv);
	return out;
}

/* ---- the verdict's input ------------------------------------------------------------------- */

struct cp_vin {
	struct vd_input in;
	struct vd_test *tests;
	struct vd_rule *rules;
	const char **fields; /* per test, slices */
	struct vd_node *nodes;
	struct vd_row *rows;
	double *values;
	char **notes;
	size_t nnotes;
	json_t *gates; /* per node: its gate reasons (configuration, preflight) */
};

static void vin_done(struct cp_vin *x)
{
	free(x->tests);
	free(x->rules);
	free(x->fields);
	free(x->nodes);
	free(x->rows);
	free(x->values);
	for (size_t i = 0; i < x->nnotes; i++)
		free(x->notes[i]);
	free(x->notes);
	json_decref(x->gates);
}

/* Index of field in the fields of a test, appending it (fields has room). */
static size_t field_index(const char **fields, size_t *n, const char *field)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(fields[i], field) == 0)
			return i;
	fields[*n] = field;
	return (*n)++;
}

static double value_of(const json_t *summary, const char *field)
{
	const json_t *x;

	if (strncmp(field, "counters.", 9) == 0) {
		if (json_object_get(json_object_get(summary, "counters_unknown"), field + 9))
			return NAN;
		x = json_object_get(json_object_get(summary, "counters"), field + 9);
	} else {
		x = json_object_get(json_object_get(summary, "metrics"), field);
	}
	return json_is_number(x) ? json_number_value(x) : NAN;
}

/* What to say about a row besides its numbers: error counters that moved, unequal path MTUs. */
static char *note_of(const struct cp_campaign *c, const json_t *summary, uint32_t a, uint32_t b)
{
	const json_t *cn = json_object_get(summary, "counters"), *x;
	const json_t *env = json_object_get(summary, "env");
	json_int_t ma = json_integer_value(json_object_get(json_object_get(env, "a"), "mtu"));
	json_int_t mb = json_integer_value(json_object_get(json_object_get(env, "b"), "mtu"));
	const json_t *gpu = json_object_get(summary, "gpu");
	char buf[512] = "";
	size_t len = 0, i;
	const char *name;

	/* A GPU check: what failed on which GPU (the reasons of a failed row). */
	json_array_foreach(json_object_get(gpu, "failures"), i, x)
	{
		if (len < sizeof(buf) - 64)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s",
						len ? "; " : "", json_string_value(x));
	}
	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;

	json_object_foreach((json_t *)cn, name, x)
	{
		if (!error_counter(name) || json_integer_value(x) <= 0 || len >= sizeof(buf) - 64)
			continue;
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s +%lld",
					len ? ", " : "counters moved: ", name,
					(long long)json_integer_value(x));
	}
	if (ma > 0 && mb > 0 && ma != mb && len < sizeof(buf) - 128)
		snprintf(buf + len, sizeof(buf) - len, "%spath MTU %lld on %s, %lld on %s",
			 len ? "; " : "", (long long)ma, c->v[a].hostname, (long long)mb,
			 c->v[b].hostname);
	return buf[0] ? strdup(buf) : NULL;
}

static int vin_build(const struct cp_campaign *c, const struct store_campaign_row *rows, size_t n,
		     const json_t *config, struct cp_vin *x)
{
	const json_t *rules = json_object_get(c->spec, "acceptance"), *rj;
	size_t nt = cp_ntests(c), nrules = json_array_size(rules), nf = 0, stride = 0, i;
	size_t *rule_test = NULL;
	int r = -ENOMEM;

	memset(x, 0, sizeof(*x));
	/* Room for one implicit rule per test (a gpu test's checks_failed == 0) and its fields. */
	x->tests = calloc(nt + 1, sizeof(*x->tests));
	x->rules = calloc(nrules + nt + 1, sizeof(*x->rules));
	x->fields = calloc(nrules + nt * (VD_RAW_N + CP_GPU_FIELDS + CP_CPU_FIELDS + 2) + 1,
			   sizeof(*x->fields));
	x->nodes = calloc(c->n + 1, sizeof(*x->nodes));
	x->rows = calloc(n + 1, sizeof(*x->rows));
	x->notes = calloc(n + nt + 1, sizeof(*x->notes));
	rule_test = calloc(nrules + nt + 1, sizeof(*rule_test));
	if (!x->tests || !x->rules || !x->fields || !x->nodes || !x->rows || !x->notes ||
	    !rule_test)
		goto out;
	x->gates = json_array();
	if (!x->gates)
		goto out;
	/* A node's gate: its configuration's deployments (config: id -> reasons), then its
	 * preflight as the campaign recorded it. */
	for (i = 0; i < c->n; i++) {
		json_t *g = json_array(), *y;
		size_t k;

		json_array_extend(g, json_object_get(config, c->v[i].id));
		json_array_foreach(json_object_get(c->v[i].facts, "preflight"), k, y)
		{
			char *line = NULL;

			if (asprintf(&line, "preflight: %s", json_string_value(y)) > 0)
				json_array_append_new(g, json_string(line));
			free(line);
		}
		json_array_append_new(x->gates, g);
		x->nodes[i] = (struct vd_node){c->v[i].id, c->v[i].hostname, c->v[i].facts, g};
	}
	/* Tests, and each rule with its test and field. Rules are grouped per test (the verdict
	 * reads a test's rules as one slice). */
	for (size_t t = 0, k = 0; t < nt; t++) {
		const json_t *test = cp_test(c, t);
		struct vd_test *T = &x->tests[t];
		bool cong = strcmp(str(test, "kind"), "congestion") == 0;
		const char **fields = x->fields + nf;
		size_t nfields = 0;

		T->name = str(test, "name");
		T->kind = str(test, "kind");
		T->pattern = cong || strcmp(str(test, "kind"), "gpu") == 0 ||
					     strcmp(str(test, "kind"), "collective") == 0
				     ? NULL
				     : str(test, "pattern");
		T->per_rail = strcmp(c->transport, "verbs") == 0 &&
			      (json_is_true(json_object_get(test, "per_rail")) ||
			       strcmp(str(test, "pattern"), "loopback") == 0);
		T->rules = x->rules + k;
		if (cong) {
			fields[0] = "mean_us";
			fields[1] = "p99_us";
			fields[2] = "gbps";
			nfields = VD_RAW_N;
		} else if (strcmp(T->kind, "lat") == 0) {
			/* Every test's verdict shows its main figures, ruled on or not. */
			fields[nfields++] = "p50_us";
			fields[nfields++] = "p99_us";
		} else if (strcmp(T->kind, "collective") == 0) {
			for (size_t f = 0; f < RY_ARRAY_SIZE(cp_coll_fields); f++)
				fields[nfields++] = cp_coll_fields[f];
		} else if (strcmp(T->kind, "gpu") == 0) {
			fields[nfields++] = "h2d_gb_s";
			fields[nfields++] = "d2h_gb_s";
			fields[nfields++] = "d2d_gb_s";
			fields[nfields++] = "checks_failed";
			fields[nfields++] = "not_read";
		} else {
			fields[nfields++] = "gbps";
			if (strcmp(T->kind, "bw") == 0)
				for (size_t f = 0; f < RY_ARRAY_SIZE(cp_cpu_fields); f++)
					fields[nfields++] = cp_cpu_fields[f];
		}
		json_array_foreach(rules, i, rj)
		{
			static const char *const cong_fields[] = VD_CONGESTION_FIELDS;
			struct vd_rule *R = &x->rules[k];

			if (strcmp(str(rj, "test"), T->name) != 0)
				continue;
			R->metric = str(rj, "metric");
			R->message = json_string_value(json_object_get(rj, "message"));
			R->value = json_number_value(json_object_get(rj, "value"));
			R->line = (int)num_of(rj, "line");
			if (vd_op_parse(str(rj, "op"), &R->op) < 0 ||
			    vd_rel_parse(json_string_value(json_object_get(rj, "relative")),
					 &R->rel) < 0) {
				r = -RY_E_INVALID;
				goto out;
			}
			if (cong) {
				for (R->field = 0; R->field < VD_CONGESTION_NFIELDS &&
						   strcmp(cong_fields[R->field], str(rj, "field"));
				     R->field++)
					;
				if (R->field == VD_CONGESTION_NFIELDS) {
					r = -RY_E_INVALID;
					goto out;
				}
			} else {
				R->field = field_index(fields, &nfields, str(rj, "field"));
			}
			rule_test[k] = t;
			T->nrules++;
			k++;
		}
		if (strcmp(T->kind, "collective") == 0) {
			/* Wrong data is no measurement: the job's own check must find none. */
			struct vd_rule *R = &x->rules[k];
			char *metric = NULL;

			if (asprintf(&metric, "%s.wrong", T->name) < 0) {
				r = -ENOMEM;
				goto out;
			}
			x->notes[x->nnotes++] = metric;
			*R = (struct vd_rule){.metric = metric,
					      .message = "the reduced data must be exact",
					      .op = VD_EQ,
					      .rel = VD_ABS,
					      .value = 0,
					      .field = field_index(fields, &nfields, "wrong"),
					      .line = (int)num_of(test, "line")};
			rule_test[k] = t;
			T->nrules++;
			k++;
		}
		if (strcmp(T->kind, "gpu") == 0) {
			/* The check's own limits (the test's minimums, the health readings): a node
			 * whose check failed fails, its failures are the row's note. */
			struct vd_rule *R = &x->rules[k];
			char *metric = NULL;

			if (asprintf(&metric, "%s.checks_failed", T->name) < 0) {
				r = -ENOMEM;
				goto out;
			}
			x->notes[x->nnotes++] = metric;
			*R = (struct vd_rule){
				.metric = metric,
				.message = "the GPU check's own limits",
				.op = VD_EQ,
				.rel = VD_ABS,
				.value = 0,
				.field = field_index(fields, &nfields, "checks_failed"),
				.line = (int)num_of(test, "line")};
			rule_test[k] = t;
			T->nrules++;
			k++;
		}
		T->fields = fields;
		T->nfields = nfields;
		nf += nfields;
		stride = nfields > stride ? nfields : stride;
	}
	x->values = calloc(n * (stride ? stride : 1) + 1, sizeof(*x->values));
	if (!x->values)
		goto out;
	for (i = 0; i < n; i++) {
		const struct store_campaign_row *w = &rows[i];
		struct vd_row *v = &x->rows[i];
		long a = cp_node_index(c, w->node_a), b = cp_node_index(c, w->node_b);
		enum vd_phase ph;
		json_t *sum;

		if (a < 0 || b < 0 || w->test_idx < 0 || (size_t)w->test_idx >= nt ||
		    vd_phase_parse(w->phase, &ph) < 0) {
			r = -RY_E_INVALID;
			goto out;
		}
		v->test = (uint32_t)w->test_idx;
		v->a = (uint32_t)a;
		v->b = (uint32_t)b;
		v->rail = w->rail;
		v->phase = (uint8_t)ph;
		v->error = w->error;
		if (strcmp(w->state, "done") == 0) {
			const struct vd_test *T = &x->tests[w->test_idx];
			double *val = x->values + i * stride;

			sum = w->summary_json ? json_loads(w->summary_json, 0, NULL) : NULL;
			if (!sum) {
				v->state = VD_ERROR;
				v->error = "no result summary";
				continue;
			}
			for (size_t f = 0; f < T->nfields; f++)
				val[f] = value_of(sum, T->fields[f]);
			v->v = val;
			v->state = VD_OK;
			if (strcmp(T->kind, "collective") == 0) {
				/* Named after the node the job's probe found slow, else none. */
				const json_t *cj = json_object_get(sum, "coll");
				const char *slow =
					json_string_value(json_object_get(cj, "slowest"));
				long si = slow ? cp_node_index(c, slow) : -1;
				const char *why = json_string_value(json_object_get(cj, "why"));

				/* a: the node named, b: the job's launcher. */
				if (si >= 0)
					v->a = (uint32_t)si;
				else
					v->flags |= VD_ROW_WHOLE;
				x->notes[x->nnotes] = why ? strdup(why) : NULL;
			} else {
				x->notes[x->nnotes] = note_of(c, sum, v->a, v->b);
			}
			if (x->notes[x->nnotes])
				v->note = x->notes[x->nnotes++];
			json_decref(sum);
		} else if (strcmp(w->state, "invalid") == 0) {
			const char *side;

			sum = w->summary_json ? json_loads(w->summary_json, 0, NULL) : NULL;
			side = json_string_value(
				json_object_get(json_object_get(sum, "invalid"), "side"));
			v->state = VD_INVALID;
			v->blame = side && strcmp(side, "b") == 0      ? VD_BLAME_B
				   : side && strcmp(side, "both") == 0 ? VD_BLAME_BOTH
								       : VD_BLAME_A;
			json_decref(sum);
		} else if (strcmp(w->state, "failed") == 0) {
			v->state = VD_ERROR;
			if (strcmp(x->tests[w->test_idx].kind, "collective") == 0)
				v->flags |= VD_ROW_WHOLE;
		} else if (strcmp(w->state, "missing") == 0) {
			v->state = VD_MISSING;
			v->missing = (uint8_t)((w->rail >= 0 && (uint32_t)w->rail >= c->v[a].nrails
							? 1
							: 0) |
					       (w->rail >= 0 && (uint32_t)w->rail >= c->v[b].nrails
							? 2
							: 0));
		} else {
			v->state = VD_CANCELLED;
		}
	}
	x->in = (struct vd_input){.tests = x->tests,
				  .ntests = nt,
				  .nodes = x->nodes,
				  .nnodes = c->n,
				  .rows = x->rows,
				  .nrows = n,
				  .quick = c->quick,
				  .transport = c->transport,
				  .max_excluded = (size_t)json_integer_value(
					  json_object_get(c->spec, "max_excluded")),
				  .not_acceptance = json_object_get(c->spec, "not_acceptance")};
	r = 0;
out:
	free(rule_test);
	if (r < 0)
		vin_done(x);
	return r;
}

int cp_verdict(const struct cp_campaign *c, const struct store_campaign_row *rows, size_t n,
	       bool cancelled, const json_t *config, json_t **ret)
{
	struct cp_vin x;
	int r = vin_build(c, rows, n, config, &x);

	if (r < 0)
		return r;
	x.in.cancelled = cancelled;
	r = vd_evaluate(&x.in, ret);
	vin_done(&x);
	return r;
}

/* ---- retests ------------------------------------------------------------------------------- */

/* Put slot (a, b, rail) into the first retest round where neither node is busy. */
static int place(json_t *rounds, uint8_t *busy, size_t nnodes, uint32_t a, uint32_t b, int32_t rail)
{
	size_t k;

	for (k = 0; k < CP_RETEST_ROUNDS_MAX; k++)
		if (!busy[k * nnodes + a] && !busy[k * nnodes + b])
			break;
	if (k == CP_RETEST_ROUNDS_MAX)
		return 0; /* no room: the majority rule still judges it */
	while (json_array_size(rounds) <= k)
		json_array_append_new(rounds, json_array());
	busy[k * nnodes + a] = busy[k * nnodes + b] = 1;
	json_array_append_new(json_array_get(rounds, k), json_pack("{s:i, s:i, s:i}", "a", (int)a,
								   "b", (int)b, "rail", (int)rail));
	return 1;
}

int cp_retests(const struct cp_campaign *c, size_t t, const struct store_campaign_row *rows,
	       size_t n, json_t **ret)
{
	struct cp_vin x;
	struct vd_suspect *sv = NULL;
	size_t ns = 0, taken = 0, next_good = 0, ngood = 0;
	bool *good = calloc(c->n + 1, sizeof(*good));
	uint32_t *tot = calloc(c->n + 1, sizeof(*tot)), *bad = calloc(c->n + 1, sizeof(*bad));
	uint32_t *goods = calloc(c->n + 1, sizeof(*goods));
	uint8_t *busy = calloc(CP_RETEST_ROUNDS_MAX * c->n + 1, 1);
	json_t *rounds = json_array();
	int r = -ENOMEM;

	memset(&x, 0, sizeof(x));
	if (!good || !tot || !bad || !goods || !busy || !rounds)
		goto out;
	r = vin_build(c, rows, n, NULL, &x);
	if (r < 0)
		goto out;
	r = strcmp(x.tests[t].kind, "congestion") == 0
		    ? 0
		    : vd_suspects(&x.in, (uint32_t)t, &sv, &ns, good);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct vd_row *w = &x.rows[i];

		if (w->test != t || w->phase != VD_RUN || w->state == VD_MISSING ||
		    w->state == VD_CANCELLED)
			continue;
		tot[w->a]++;
		if (w->b != w->a)
			tot[w->b]++;
	}
	for (size_t i = 0; i < ns; i++) {
		bad[sv[i].a]++;
		if (sv[i].b != sv[i].a)
			bad[sv[i].b]++;
	}
	for (uint32_t i = 0; i < c->n; i++)
		if (good[i])
			goods[ngood++] = i;
	if (strcmp(x.tests[t].kind, "collective") == 0) {
		/* A failed collective is re-run once without its launcher, launched by the next
		 * node: a second reporter for the same fabric (docs/campaigns.md, "Collectives").
		 * Two nodes are left at least; with fewer the first job stands alone. */
		if (ns && c->n >= 3)
			place(rounds, busy, c->n, cp_coll_launcher(c, 1), cp_coll_launcher(c, 1),
			      -1);
		ns = 0;
	}
	for (size_t i = 0; i < ns && taken < CP_RETEST_SUSPECTS_MAX; i++) {
		uint32_t a = sv[i].a, b = sv[i].b, ends[2] = {a, b};

		/* An end that fails with most of its peers is already named, and a loopback has no
		 * peer: no retest needed. */
		if (a == b || (bad[a] >= 2 && 2 * bad[a] > tot[a]) ||
		    (bad[b] >= 2 && 2 * bad[b] > tot[b]))
			continue;
		taken++;
		place(rounds, busy, c->n, a, b, sv[i].rail);
		for (int e = 0; e < (a == b ? 1 : 2) && ngood; e++) {
			/* A good peer for this end, round-robin so no peer takes every retest. */
			for (size_t tries = 0; tries < ngood; tries++) {
				uint32_t g = goods[next_good++ % ngood];

				if (g != a && g != b) {
					place(rounds, busy, c->n, ends[e], g, sv[i].rail);
					break;
				}
			}
		}
	}
	*ret = rounds;
	rounds = NULL;
	r = 0;
out:
	if (x.tests)
		vin_done(&x);
	free(sv);
	free(good);
	free(tot);
	free(bad);
	free(goods);
	free(busy);
	json_decref(rounds);
	return r;
}

size_t cp_progress_rounds(const json_t *progress, size_t t, bool *ret_retest_known)
{
	const json_t *e = json_array_get(json_object_get(progress, "tests"), t);
	const json_t *rt = json_object_get(e, "retest");

	if (ret_retest_known)
		*ret_retest_known = json_is_array(rt);
	return (size_t)json_integer_value(json_object_get(e, "rounds")) +
	       (json_is_array(rt) ? json_array_size(rt) : 0);
}
