/* The campaign service: a playbook's validation section and a cluster's nodes become a planned
 * (and, unless a dry run, stored) campaign; stored campaigns become JSON with their progress
 * and verdict; a cancel is requested. */
#include "controller/campaign/campaign_int.h"
#include "controller/campaign/preflight.h"
#include "controller/signoff/compare.h"
#include "controller/signoff/snapshot.h"
#include "controller/store/store.h"
#include "controller/store/store_campaign.h"
#include "controller/store/store_nodes.h"
#include "controller/store/store_signoff.h"
#include "common/playbook/playbook.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Selector items and their length, at most. */

/* ---- the spec ---------------------------------------------------------------------------- */

/* Is name one of the comma-separated names in list? */
static bool listed(const char *list, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");

		if (n == len && strncmp(p, name, n) == 0)
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

/* The playbook's spec with the request applied: only the tests asked for (and the rules on
 * them), the transport, the quick shrink. New reference in *ret. */
static int spec_of(const struct playbook *pb, const struct ctl_campaign_request *rq, json_t **ret,
		   struct ctl_error *err)
{
	const json_t *val = playbook_validation(pb), *rules;
	json_t *t;
	json_t *spec, *tests, *acc;
	size_t i;

	if (json_array_size(json_object_get(val, "tests")) == 0) {
		pb_diags_add(&err->diags, rq->playbook_file, 1, 1,
			     "validation.tests: the playbook has no validation tests to run");
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_PLAYBOOK, "playbook",
				     "%s: nothing to validate", rq->playbook_file);
	}
	if (rq->transport && strcmp(rq->transport, "tcp") != 0 &&
	    strcmp(rq->transport, "verbs") != 0)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "transport",
				     "transport must be tcp or verbs, not %s", rq->transport);
	if (rq->tests) {
		for (const char *p = rq->tests; *p;) {
			size_t n = strcspn(p, ",");
			bool found = false;

			json_array_foreach(json_object_get(val, "tests"), i, t)
			{
				const char *name = json_string_value(json_object_get(t, "name"));

				found |= strlen(name) == n && strncmp(p, name, n) == 0;
			}
			if (!found || n == 0) {
				char names[512] = "";
				size_t len = 0;

				json_array_foreach(json_object_get(val, "tests"), i, t)
				{
					if (len < sizeof(names) - 64)
						len += (size_t)snprintf(
							names + len, sizeof(names) - len, "%s%s",
							len ? ", " : "",
							json_string_value(
								json_object_get(t, "name")));
				}
				return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "tests",
						     "no test named '%.*s' in %s (it has: %s)",
						     (int)(n > 64 ? 64 : n), p, rq->playbook_file,
						     names);
			}
			p += n + (p[n] == ',');
		}
	}
	spec = json_deep_copy(val);
	tests = json_array();
	acc = json_array();
	if (!spec || !tests || !acc) {
		json_decref(spec);
		json_decref(tests);
		json_decref(acc);
		return ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	}
	json_array_foreach(json_object_get(spec, "tests"), i, t)
	{
		json_t *c;

		if (rq->tests && !listed(rq->tests, json_string_value(json_object_get(t, "name"))))
			continue;
		c = json_deep_copy(t);
		if (rq->quick) {
			/* A smoke run: every test short, the same patterns and sizes. */
			if (json_integer_value(json_object_get(c, "iters")) > 100)
				json_object_set_new(c, "iters", json_integer(100));
			if (json_integer_value(json_object_get(c, "duration_s")) > 1)
				json_object_set_new(c, "duration_s", json_integer(1));
			if (json_integer_value(json_object_get(c, "repeats")) > 3)
				json_object_set_new(c, "repeats", json_integer(3));
		}
		json_array_append_new(tests, c);
	}
	rules = json_object_get(spec, "acceptance");
	json_array_foreach(rules, i, t)
	{
		if (!rq->tests || listed(rq->tests, json_string_value(json_object_get(t, "test"))))
			json_array_append(acc, t);
	}
	json_object_set_new(spec, "tests", tests);
	json_object_set_new(spec, "acceptance", acc);
	if (rq->transport)
		json_object_set_new(spec, "transport", json_string(rq->transport));
	json_object_set_new(spec, "quick", json_boolean(rq->quick));
	/* The configuration it certifies: the playbooks named, else the playbook itself when it
	 * configures something. */
	if (!json_is_array(json_object_get(spec, "requires")))
		json_object_set_new(spec, "requires",
				    playbook_step_count(pb) > 0
					    ? json_pack("[s]", playbook_name(pb))
					    : json_array());
	*ret = spec;
	return 0;
}

/* ---- nodes ------------------------------------------------------------------------------- */

/* A port's state is ACTIVE. */
static bool port_active(const json_t *port)
{
	const char *s = json_string_value(json_object_get(port, "state"));

	return s && strcmp(s, "ACTIVE") == 0;
}

static int cmp_dev(const void *x, const void *y)
{
	const json_t *a = *(const json_t *const *)x, *b = *(const json_t *const *)y;
	const char *na = json_string_value(json_object_get(a, "name"));
	const char *nb = json_string_value(json_object_get(b, "name"));

	return strcmp(na ? na : "", nb ? nb : "");
}

/* A node's entry in the campaign: its rails (RDMA devices with an active port, by name: rail i is
 * the i-th) and what the verdict's explanations need from its facts. New reference. */
static json_t *node_entry(const struct store_node *nd, const json_t *facts, const json_t *preflight)
{
	const json_t *devs = json_object_get(json_object_get(facts, "rdma"), "devices"), *g;
	const json_t *loaded = json_object_get(json_object_get(facts, "modules"), "loaded"), *m;
	size_t nd_ = json_array_size(devs) < 256 ? json_array_size(devs) : 256, i;
	const json_t **sorted = calloc(nd_ + 1, sizeof(*sorted));
	json_t *rails = json_array(), *gpus = json_array(), *o;
	bool peermem = false;

	for (i = 0; sorted && i < nd_; i++)
		sorted[i] = json_array_get(devs, i);
	if (sorted)
		qsort(sorted, nd_, sizeof(*sorted), cmp_dev);
	for (i = 0; sorted && i < nd_ && json_array_size(rails) < SCHED_RAILS_MAX; i++) {
		const json_t *d = sorted[i], *p, *pci;
		size_t k;

		json_array_foreach(json_object_get(d, "ports"), k, p)
		{
			json_t *rail;

			if (!port_active(p) || !json_string_value(json_object_get(d, "name")))
				continue;
			rail = json_pack("{s:O, s:O, s:O?, s:O?, s:O?, s:O?, s:O?}", "device",
					 json_object_get(d, "name"), "port",
					 json_object_get(p, "port"), "rate_gbps",
					 json_object_get(p, "rate_gbps"), "link_layer",
					 json_object_get(p, "link_layer"), "mtu",
					 json_object_get(p, "active_mtu"), "numa_node",
					 json_object_get(d, "numa_node"), "pci_address",
					 json_object_get(d, "pci_address"));
			pci = cp_pci_of(facts,
					json_string_value(json_object_get(d, "pci_address")));
			if (rail && pci)
				json_object_set_new(
					rail, "pcie",
					json_pack("{s:O?, s:O?, s:O?, s:O?}", "width",
						  json_object_get(pci, "current_link_width"),
						  "max_width",
						  json_object_get(pci, "max_link_width"), "speed",
						  json_object_get(pci, "current_link_speed"),
						  "max_speed",
						  json_object_get(pci, "max_link_speed")));
			json_array_append_new(rails, rail);
			break; /* one rail per device: its first active port */
		}
	}
	free(sorted);
	/* GPUs in facts order (NVML's index): NUMA for the explanations; UUID, bus and nearest HCA
	 * to give each rail its GPU (mem: cuda). */
	json_array_foreach(json_object_get(facts, "gpus"), i, g) json_array_append_new(
		gpus,
		json_pack("{s:O?, s:O?, s:O?, s:O?}", "numa_node", json_object_get(g, "numa_node"),
			  "uuid", json_object_get(g, "uuid"), "bus", json_object_get(g, "bus"),
			  "nearest_hca", json_object_get(g, "nearest_hca")));
	json_array_foreach(loaded, i, m) peermem |=
		json_is_string(m) && strcmp(json_string_value(m), "nvidia_peermem") == 0;
	/* The snapshot is what a sign-off of this campaign reports as the node's configuration. */
	o = json_pack("{s:s, s:s, s:o, s:o, s:{s:b, s:b}, s:o}", "id", nd->id, "hostname",
		      nd->hostname, "rails", rails, "gpus", gpus, "gpudirect", "peermem", peermem,
		      "dmabuf",
		      json_is_true(json_object_get(json_object_get(facts, "nvidia_driver"),
						   "open_kernel_module")),
		      "snapshot", so_snapshot(facts));
	/* The playbook's preflight on the facts as they are now: the verdict's, the report's. */
	if (o)
		json_object_set_new(o, "preflight", cp_preflight(preflight, facts));
	return o;
}

static int cmp_node(const void *x, const void *y)
{
	const json_t *a = *(const json_t *const *)x, *b = *(const json_t *const *)y;

	return strcmp(json_string_value(json_object_get(a, "id")),
		      json_string_value(json_object_get(b, "id")));
}

/* The nodes of the campaign (sorted by id) and those left out, with the reason. */
static int pick_nodes(struct store *st, const struct ctl_campaign_request *rq,
		      const struct playbook *pb, json_t **ret_nodes, json_t **ret_left,
		      struct ctl_error *err)
{
	struct store_node **nodes = NULL;
	size_t n = 0, in_cluster = 0, matched = 0;
	json_t *picked = json_array(), *left = json_array(), *offline = json_array();
	const json_t **sorted = NULL;
	int r;

	r = store_nodes_list(st, &nodes, &n);
	if (r < 0) {
		ctl_error_store(err, r, "listing nodes");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct store_node *nd = nodes[i];
		json_t *facts;

		if (strcmp(nd->cluster, rq->cluster) != 0 || strcmp(nd->state, "revoked") == 0)
			continue;
		in_cluster++;
		if (!ctl_node_selected(rq->nodes, nd->hostname, nd->id))
			continue;
		matched++;
		facts = nd->facts_json ? json_loads(nd->facts_json, 0, NULL) : NULL;
		if (facts && !playbook_target_matches(pb, nd->cluster, facts)) {
			json_array_append_new(left, json_pack("{s:s, s:s, s:s}", "id", nd->id,
							      "hostname", nd->hostname, "reason",
							      "the playbook's selector does not "
							      "match its facts"));
		} else if (!facts || strcmp(nd->state, "online") != 0) {
			json_array_append_new(
				offline,
				json_pack("{s:s, s:s, s:s}", "id", nd->id, "hostname", nd->hostname,
					  "reason",
					  !facts ? "no facts yet (its agent has never connected)"
						 : "offline"));
		} else {
			json_array_append_new(
				picked,
				node_entry(nd, facts,
					   json_object_get(playbook_validation(pb), "preflight")));
		}
		json_decref(facts);
	}
	if (in_cluster == 0) {
		r = ctl_error_set(err, -RY_E_NOT_FOUND, CTL_ERR_NOT_FOUND, "cluster",
				  "cluster %s has no nodes", rq->cluster);
		goto out;
	}
	if (matched == 0) {
		r = ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "nodes",
				  "the selector '%s' matches none of the %zu nodes of cluster %s",
				  rq->nodes, in_cluster, rq->cluster);
		goto out;
	}
	if (json_array_size(offline) && !rq->allow_missing) {
		char names[512] = "";
		size_t len = 0, i;
		const json_t *o;

		json_array_foreach(offline, i, o)
		{
			if (len < sizeof(names) - 64)
				len += (size_t)snprintf(
					names + len, sizeof(names) - len, "%s%s", len ? ", " : "",
					json_string_value(json_object_get(o, "hostname")));
		}
		r = ctl_error_set(err, -RY_E_INVALID, CTL_ERR_CONFLICT, "nodes",
				  "%zu selected node(s) of cluster %s are not online: %s (use "
				  "--allow-missing to leave them out)",
				  json_array_size(offline), rq->cluster, names);
		goto out;
	}
	json_array_extend(left, offline);
	if (json_array_size(picked) == 0) {
		r = ctl_error_set(err, -RY_E_INVALID, CTL_ERR_CONFLICT, "nodes",
				  "no selected node of cluster %s can take part (%zu left out)",
				  rq->cluster, json_array_size(left));
		goto out;
	}
	/* Sorted by id: the stored order is the schedule's node numbering. */
	sorted = calloc(json_array_size(picked), sizeof(*sorted));
	if (!sorted) {
		r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < json_array_size(picked); i++)
		sorted[i] = json_array_get(picked, i);
	qsort(sorted, json_array_size(picked), sizeof(*sorted), cmp_node);
	*ret_nodes = json_array();
	for (size_t i = 0; i < json_array_size(picked); i++)
		json_array_append(*ret_nodes, (json_t *)sorted[i]);
	*ret_left = left;
	left = NULL;
	r = 0;
out:
	free(sorted);
	store_nodes_free(nodes, n);
	json_decref(picked);
	json_decref(left);
	json_decref(offline);
	return r;
}

/* ---- plan -------------------------------------------------------------------------------- */

static json_t *slot_json(const struct cp_campaign *c, const struct cp_slot *s)
{
	const struct cp_node *a = &c->v[s->a], *b = &c->v[s->b];
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "a", a->id, "b", b->id, "a_host",
			      a->hostname, "b_host", b->hostname, "phase",
			      vd_phase_name((enum vd_phase)s->phase), "role",
			      s->role == CP_CONGESTOR ? "congestor" : "measure");

	json_object_set_new(o, "rail", s->rail < 0 ? json_null() : json_integer(s->rail));
	if (s->rail >= 0 && (uint32_t)s->rail < a->nrails)
		json_object_set_new(o, "a_device", json_string(a->rails[s->rail].device));
	if (s->rail >= 0 && (uint32_t)s->rail < b->nrails)
		json_object_set_new(o, "b_device", json_string(b->rails[s->rail].device));
	if (s->missing)
		json_object_set_new(o, "missing",
				    json_string(s->missing == 3	  ? "both"
						: s->missing == 1 ? "a"
								  : "b"));
	return o;
}

/* Diagnostic at test t's position in the playbook (its line and column in the spec). */
static void diag_test(struct ctl_error *err, const char *file, const json_t *test, const char *why)
{
	pb_diags_add(&err->diags, file, (int)json_integer_value(json_object_get(test, "line")),
		     (int)json_integer_value(json_object_get(test, "col")), "%s", why);
}

/* Every test's rounds: the schedule document's tests, and the progress record. */
static int plan_tests(const struct cp_campaign *c, bool with_rounds, const char *file,
		      json_t *tests, json_t *progress, struct ctl_error *err)
{
	int bad = 0;

	for (size_t t = 0; t < cp_ntests(c); t++) {
		const json_t *test = cp_test(c, t);
		struct cp_rounds r;
		char why[256];
		json_t *o, *rounds;
		int e = cp_test_rounds(c, t, &r, why, sizeof(why));

		if (e == -EINVAL) {
			diag_test(err, file, test, why);
			bad++;
			continue;
		}
		if (e < 0)
			return ctl_error_set(err, e, CTL_ERR_INTERNAL, NULL, "planning: %s",
					     ry_strerror(e));
		o = json_pack("{s:O, s:O, s:O?, s:b, s:I, s:I, s:I}", "name",
			      json_object_get(test, "name"), "kind", json_object_get(test, "kind"),
			      "pattern", json_object_get(test, "pattern"), "per_rail",
			      r.nslots && r.slots[0].rail >= 0, "round_count",
			      (json_int_t)r.nrounds, "slots", (json_int_t)r.nslots, "seed",
			      (json_int_t)(r.seed >> 11));
		if (strcmp(json_string_value(json_object_get(test, "kind")), "congestion") == 0)
			json_object_set(o, "congestors", json_object_get(test, "congestors"));
		if (r.order) {
			json_t *ord = json_array();

			for (size_t i = 0; i < r.norder; i++)
				json_array_append_new(ord, json_string(c->v[r.order[i]].id));
			json_object_set_new(o, "order", ord);
		}
		if (with_rounds) {
			rounds = json_array();
			for (size_t k = 0; k < r.nrounds; k++) {
				json_t *round = json_array();

				for (size_t j = r.start[k]; j < r.start[k + 1]; j++)
					json_array_append_new(round, slot_json(c, &r.slots[j]));
				json_array_append_new(rounds, round);
			}
			json_object_set_new(o, "rounds", rounds);
		}
		json_array_append_new(tests, o);
		json_array_append_new(progress, json_pack("{s:O, s:I, s:n}", "name",
							  json_object_get(test, "name"), "rounds",
							  (json_int_t)r.nrounds, "retest"));
		cp_rounds_done(&r);
	}
	if (bad)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "nodes",
				     "%d test(s) need more nodes than the %zu selected", bad, c->n);
	return 0;
}

/* A tolerance: the request's, else the playbook's, else the default. */
static double pct_or(double asked, const json_t *playbook, double dflt)
{
	if (asked > 0)
		return asked;
	return json_is_number(playbook) ? json_number_value(playbook) : dflt;
}

/* A revalidation's baseline is a sign-off of the same cluster. */
static int baseline_check(struct store *st, const struct ctl_campaign_request *rq,
			  struct ctl_error *err)
{
	struct store_signoff *so = NULL;
	int r = store_signoff_get(st, rq->baseline, false, &so);

	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "baseline", "no sign-off %s",
				     rq->baseline);
	if (r < 0)
		return ctl_error_store(err, r, "reading the baseline");
	if (strcmp(so->cluster, rq->cluster) != 0)
		r = ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "baseline",
				  "sign-off %s is of cluster %s, not %s", so->id, so->cluster,
				  rq->cluster);
	store_signoff_free(so);
	return r;
}

/* Why a report of this campaign could not be an acceptance sign-off (docs/signoff.md,
 * "Acceptance"): a smoke run, not over RDMA, not every test or node in scope, nothing certified.
 * New array; [] when it could be. */
static json_t *not_acceptance(const struct ctl_campaign_request *rq, const json_t *spec,
			      const json_t *left)
{
	json_t *out = json_array();
	const json_t *l;
	size_t i, offline = 0;
	char buf[256];

	if (!out)
		return NULL;
	if (rq->quick)
		json_array_append_new(out, json_string("quick: a smoke run (every test shrunk)"));
	if (strcmp(json_string_value(json_object_get(spec, "transport")), "verbs") != 0)
		json_array_append_new(out, json_string("transport tcp: a baseline over the hosts' "
						       "TCP stacks, not the RDMA fabric"));
	if (rq->tests) {
		snprintf(buf, sizeof(buf), "only some of the playbook's tests (--tests %.128s)",
			 rq->tests);
		json_array_append_new(out, json_string(buf));
	}
	if (rq->nodes) {
		snprintf(buf, sizeof(buf), "only some of the nodes in scope (--nodes %.128s)",
			 rq->nodes);
		json_array_append_new(out, json_string(buf));
	}
	json_array_foreach(left, i, l)
	{
		const char *why = json_string_value(json_object_get(l, "reason"));

		offline += why && strstr(why, "selector does not match") == NULL;
	}
	if (offline) {
		snprintf(buf, sizeof(buf), "%zu node(s) in scope not measured (offline)", offline);
		json_array_append_new(out, json_string(buf));
	}
	if (json_array_size(json_object_get(spec, "requires")) == 0)
		json_array_append_new(out, json_string("it certifies no configuration "
						       "(validation.requires is empty)"));
	return out;
}

int ctl_campaign_create(struct store *st, const struct ctl_campaign_request *rq, bool dry_run,
			json_t **ret, struct ctl_error *err)
{
	struct playbook *pb = NULL;
	struct cp_campaign c = {0};
	json_t *spec = NULL, *nodes = NULL, *left = NULL, *tests = json_array();
	json_t *progress = json_array(), *doc = NULL, *options = NULL;
	char *spec_s = NULL, *nodes_s = NULL, *left_s = NULL, *prog_s = NULL, *opt_s = NULL;
	int64_t seed = rq->seed;
	char id[20] = "";
	int r;

	/* Every failure goes out through out: (tests and progress are made above). */
	if (!ctl_valid_cluster_name(rq->cluster)) {
		r = ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "cluster",
				  "bad cluster name");
		goto out;
	}
	if (rq->id && !ctl_valid_object_id(rq->id, "c-")) {
		r = ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "id", "not a campaign id");
		goto out;
	}
	if (rq->nodes && (r = ctl_node_selector_check(rq->nodes, "nodes", err)) < 0)
		goto out;
	if (rq->baseline && (r = baseline_check(st, rq, err)) < 0)
		goto out;
	if (!tests || !progress) {
		r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
		goto out;
	}
	r = ctl_playbook_for_cluster(rq->playbook_text, rq->playbook_len, rq->playbook_file,
				     rq->cluster, &pb, err);
	if (r < 0)
		goto out;
	r = spec_of(pb, rq, &spec, err);
	if (r >= 0)
		r = pick_nodes(st, rq, pb, &nodes, &left, err);
	if (r < 0)
		goto out;
	json_object_set_new(spec, "not_acceptance", not_acceptance(rq, spec, left));
	if (seed < 0) {
		unsigned char rnd[6];

		r = util_random_bytes(rnd, sizeof(rnd));
		if (r < 0) {
			ctl_error_set(err, r, CTL_ERR_INTERNAL, NULL, "no random seed");
			goto out;
		}
		seed = 0;
		for (size_t i = 0; i < sizeof(rnd); i++)
			seed = seed << 8 | rnd[i];
	}
	spec_s = json_dumps(spec, JSON_COMPACT);
	nodes_s = json_dumps(nodes, JSON_COMPACT);
	if (!spec_s || !nodes_s) {
		r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
		goto out;
	}
	/* What the pass will load, loaded the same way here: the plan shown is the plan run. */
	r = cp_load(spec_s, nodes_s, seed, &c);
	if (r < 0) {
		ctl_error_set(err, r, CTL_ERR_INTERNAL, NULL, "planning: %s", ry_strerror(r));
		goto out;
	}
	r = plan_tests(&c, dry_run, rq->playbook_file, tests, progress, err);
	if (r < 0)
		goto out;
	doc = json_pack("{s:s, s:s, s:s, s:s, s:b, s:b, s:I, s:O, s:O, s:O, s:O, s:O}", "cluster",
			rq->cluster, "playbook", playbook_name(pb), "version", playbook_version(pb),
			"transport", c.transport, "baseline", strcmp(c.transport, "tcp") == 0,
			"quick", rq->quick, "seed", (json_int_t)seed, "nodes", nodes, "left_out",
			left, "tests", tests, "requires", json_object_get(spec, "requires"),
			"not_acceptance", json_object_get(spec, "not_acceptance"));
	options = json_pack("{s:s?, s:s?, s:s?, s:b, s:b, s:b}", "tests", rq->tests, "nodes",
			    rq->nodes, "transport", rq->transport, "quick", rq->quick,
			    "allow_missing", rq->allow_missing, "signoff",
			    rq->signoff || rq->baseline ||
				    json_is_true(json_object_get(spec, "signoff")));
	if (options && rq->baseline) {
		const json_t *tol = json_object_get(spec, "tolerance");

		json_object_set_new(options, "baseline", json_string(rq->baseline));
		if (rq->checks)
			json_object_set_new(options, "checks", json_deep_copy(rq->checks));
		json_object_set_new(
			options, "tolerance",
			json_pack("{s:f, s:f, s:s}", "bw_pct",
				  pct_or(rq->tolerance_bw_pct, json_object_get(tol, "bw_pct"),
					 SO_TOLERANCE_BW_PCT),
				  "lat_pct",
				  pct_or(rq->tolerance_lat_pct, json_object_get(tol, "lat_pct"),
					 SO_TOLERANCE_LAT_PCT),
				  "regressions",
				  so_regressions_mode(json_object_get(tol, "regressions"))));
	}
	if (!doc || !options) {
		r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
		goto out;
	}
	if (!dry_run) {
		struct store_campaign_new cn = {0};
		json_t *pr = json_pack("{s:O}", "tests", progress);
		unsigned char rnd[4];
		char hex[9];

		left_s = json_dumps(left, JSON_COMPACT);
		prog_s = pr ? json_dumps(pr, JSON_COMPACT) : NULL;
		opt_s = json_dumps(options, JSON_COMPACT);
		json_decref(pr);
		r = util_random_bytes(rnd, sizeof(rnd));
		if (r < 0 || !left_s || !prog_s || !opt_s) {
			r = ctl_error_set(err, r < 0 ? r : -ENOMEM, CTL_ERR_INTERNAL, NULL,
					  "cannot make a campaign id");
			goto out;
		}
		util_hex(rnd, sizeof(rnd), hex);
		snprintf(id, sizeof(id), "c-%s", hex);
		if (rq->id) {
			struct store_campaign *old = NULL;

			r = store_campaign_get(st, rq->id, &old);
			store_campaign_free(old);
			if (r != -RY_E_NOT_FOUND) {
				r = r < 0 ? ctl_error_store(err, r, "reading campaigns")
					  : ctl_error_set(err, -RY_E_EXISTS, CTL_ERR_CONFLICT, "id",
							  "campaign %s exists", rq->id);
				goto out;
			}
			snprintf(id, sizeof(id), "%s", rq->id);
		}
		cn = (struct store_campaign_new){
			.id = id,
			.cluster = rq->cluster,
			.actor = rq->actor ? rq->actor : "admin",
			.playbook_name = playbook_name(pb),
			.playbook_version = playbook_version(pb),
			.playbook_sha256 = playbook_sha256(pb),
			.playbook_text = rq->playbook_text,
			.spec_json = spec_s,
			.nodes_json = nodes_s,
			.left_out_json = left_s,
			.options_json = opt_s,
			.progress_json = prog_s,
			.seed = seed,
		};
		r = store_campaign_create(st, &cn, util_now_unix_ms());
		if (r == -RY_E_NOT_FOUND) {
			ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "cluster", "unknown cluster %s",
				      rq->cluster);
			goto out;
		}
		if (r < 0) {
			ctl_error_store(err, r, "storing the campaign");
			goto out;
		}
		json_object_set_new(doc, "id", json_string(id));
	}
	*ret = doc;
	doc = NULL;
	r = 0;
out:
	cp_done(&c);
	playbook_free(pb);
	json_decref(spec);
	json_decref(nodes);
	json_decref(left);
	json_decref(tests);
	json_decref(progress);
	json_decref(doc);
	json_decref(options);
	free(spec_s);
	free(nodes_s);
	free(left_s);
	free(prog_s);
	free(opt_s);
	return r;
}

/* ---- reading back ------------------------------------------------------------------------ */

static json_t *row_json(const struct store_campaign_row *w)
{
	json_t *o = json_pack("{s:i, s:i, s:i, s:s, s:s, s:s, s:s, s:s, s:s?, s:s?, s:I, s:I}",
			      "test_index", w->test_idx, "round", w->round, "slot", w->slot,
			      "phase", w->phase, "role", w->role, "a", w->node_a, "b", w->node_b,
			      "state", w->state, "bench_id", w->bench_id, "error", w->error,
			      "started_at_ms", (json_int_t)w->started_at_ms, "finished_at_ms",
			      (json_int_t)w->finished_at_ms);

	json_object_set_new(o, "rail", w->rail < 0 ? json_null() : json_integer(w->rail));
	json_object_set_new(o, "summary",
			    w->summary_json ? json_loads(w->summary_json, 0, NULL) : json_null());
	return o;
}

/* Progress: where the cursor is, rounds done of those known, rows done and failed, an ETA from
 * the pace so far. */
static json_t *progress_json(const struct store_campaign *m, const json_t *spec,
			     const json_t *progress, const struct store_campaign_count *k,
			     size_t nk, json_t *tests)
{
	size_t nt = json_array_size(json_object_get(spec, "tests"));
	size_t done_rounds = 0, total_rounds = 0;
	int64_t rows_done = 0, rows_failed = 0, now = util_now_unix_ms();
	bool final = store_campaign_state_final(m->state), all_known = true;
	json_t *o;

	for (size_t t = 0; t < nt; t++) {
		const json_t *test = json_array_get(json_object_get(spec, "tests"), t);
		const json_t *pe = json_array_get(json_object_get(progress, "tests"), t);
		bool known;
		size_t rounds = cp_progress_rounds(progress, t, &known);
		int64_t done = 0, failed = 0, all = 0;

		for (size_t i = 0; i < nk; i++) {
			if (k[i].test_idx != (int)t)
				continue;
			all += k[i].n;
			if (strcmp(k[i].state, "done") == 0)
				done += k[i].n;
			else if (strcmp(k[i].state, "failed") == 0 ||
				 strcmp(k[i].state, "missing") == 0)
				failed += k[i].n;
		}
		rows_done += done;
		rows_failed += failed;
		total_rounds += rounds;
		all_known &= known;
		if ((int)t < m->test_idx || final)
			done_rounds += rounds;
		else if ((int)t == m->test_idx)
			done_rounds += (size_t)m->round < rounds ? (size_t)m->round : rounds;
		json_array_append_new(tests,
				      json_pack("{s:O, s:O, s:O?, s:I, s:o?, s:I, s:I, s:I}",
						"name", json_object_get(test, "name"), "kind",
						json_object_get(test, "kind"), "pattern",
						json_object_get(test, "pattern"), "rounds",
						json_integer_value(json_object_get(pe, "rounds")),
						"retest_rounds",
						known ? json_integer((json_int_t)json_array_size(
								json_object_get(pe, "retest")))
						      : NULL,
						"rows", (json_int_t)all, "done", (json_int_t)done,
						"failed", (json_int_t)failed));
	}
	o = json_pack("{s:i, s:i, s:I, s:I, s:b, s:I, s:I}", "test_index", m->test_idx, "round",
		      m->round, "rounds_done", (json_int_t)done_rounds, "rounds_total",
		      (json_int_t)total_rounds, "rounds_total_final", all_known, "rows_done",
		      (json_int_t)rows_done, "rows_failed", (json_int_t)rows_failed);
	json_object_set_new(o, "test",
			    !final && (size_t)m->test_idx < nt
				    ? json_deep_copy(json_object_get(
					      json_array_get(json_object_get(spec, "tests"),
							     (size_t)m->test_idx),
					      "name"))
				    : json_null());
	json_object_set_new(
		o, "eta_s",
		!final && done_rounds > 0 && total_rounds > done_rounds
			? json_integer((json_int_t)((now - m->created_at_ms) *
						    (int64_t)(total_rounds - done_rounds) /
						    (int64_t)done_rounds / 1000))
			: json_null());
	return o;
}

static json_t *campaign_json(struct store *st, const struct store_campaign *m, bool detail,
			     struct ctl_error *err)
{
	json_t *spec = json_loads(m->spec_json, 0, NULL),
	       *prog = json_loads(m->progress_json, 0, NULL);
	json_t *o = NULL, *tests = json_array(), *verdict = NULL;
	struct store_campaign_count *k = NULL;
	size_t nk = 0;
	int r = store_campaign_counts(st, m->id, &k, &nk);

	if (r < 0) {
		ctl_error_store(err, r, "counting results");
		goto out;
	}
	verdict = m->verdict_json ? json_loads(m->verdict_json, 0, NULL) : NULL;
	o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s?, s:I, s:I, s:I, s:O?, s:b, s:I}",
		      "id", m->id, "cluster", m->cluster, "playbook", m->playbook_name, "version",
		      m->playbook_version, "sha256", m->playbook_sha256, "actor", m->actor, "state",
		      m->state, "error", m->error, "created_at_ms", (json_int_t)m->created_at_ms,
		      "finished_at_ms", (json_int_t)m->finished_at_ms, "cancel_requested_at_ms",
		      (json_int_t)m->cancel_requested_ms, "transport",
		      json_object_get(spec, "transport"), "quick",
		      json_is_true(json_object_get(spec, "quick")), "seed", (json_int_t)m->seed);
	if (!o) {
		ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
		goto out;
	}
	json_object_set_new(o, "result",
			    verdict ? json_deep_copy(json_object_get(verdict, "result"))
				    : json_null());
	json_object_set_new(o, "progress", progress_json(m, spec, prog, k, nk, tests));
	json_object_set(o, "tests", tests);
	if (detail) {
		json_object_set_new(o, "nodes", json_loads(m->nodes_json, 0, NULL));
		json_object_set_new(o, "left_out", json_loads(m->left_out_json, 0, NULL));
		json_object_set_new(o, "options", json_loads(m->options_json, 0, NULL));
		json_object_set(o, "spec", spec);
		json_object_set_new(o, "verdict", verdict ? json_incref(verdict) : json_null());
	} else {
		json_t *nodes = json_loads(m->nodes_json, 0, NULL);

		json_object_set_new(o, "nodes_count",
				    json_integer((json_int_t)json_array_size(nodes)));
		json_decref(nodes);
	}
out:
	free(k);
	json_decref(spec);
	json_decref(prog);
	json_decref(tests);
	json_decref(verdict);
	return o;
}

int ctl_campaign_get(struct store *st, const char *id, bool rows, json_t **ret,
		     struct ctl_error *err)
{
	struct store_campaign *m = NULL;
	struct store_campaign_row *v = NULL;
	size_t n = 0;
	json_t *o;
	int r = store_campaign_get(st, id, &m);

	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "id", "no campaign %s", id);
	if (r < 0)
		return ctl_error_store(err, r, "reading the campaign");
	o = campaign_json(st, m, true, err);
	if (o && rows) {
		json_t *arr = json_array();

		r = store_campaign_rows(st, id, -1, -1, &v, &n);
		if (r < 0) {
			ctl_error_store(err, r, "reading the results");
			json_decref(o);
			json_decref(arr);
			o = NULL;
		} else {
			for (size_t i = 0; i < n; i++)
				json_array_append_new(arr, row_json(&v[i]));
			json_object_set_new(o, "results", arr);
		}
	}
	store_campaign_rows_free(v, n);
	store_campaign_free(m);
	if (!o)
		return err->code ? -RY_E_INVALID : -ENOMEM;
	*ret = o;
	return 0;
}

int ctl_campaign_list(struct store *st, size_t limit, json_t **ret, struct ctl_error *err)
{
	struct store_campaign **v = NULL;
	size_t n = 0;
	json_t *arr;
	int r = store_campaigns_list(st, false, limit ? limit : 50, &v, &n);

	if (r < 0)
		return ctl_error_store(err, r, "listing campaigns");
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++) {
		json_t *o = campaign_json(st, v[i], false, err);

		if (!o) {
			json_decref(arr);
			arr = NULL;
			break;
		}
		json_array_append_new(arr, o);
	}
	store_campaigns_free(v, n);
	if (!arr)
		return err->code ? -RY_E_INVALID : -ENOMEM;
	*ret = arr;
	return 0;
}

int ctl_campaign_cancel(struct store *st, const char *id, const char *actor, struct ctl_error *err)
{
	struct store_campaign *m = NULL;
	int r = store_campaign_request_cancel(st, id, actor, util_now_unix_ms());

	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "id", "no campaign %s", id);
	if (r < 0)
		return ctl_error_store(err, r, "requesting the cancel");
	if (r == 0 && store_campaign_get(st, id, &m) == 0) {
		ctl_error_set(err, 0, CTL_ERR_CONFLICT, "id", "%s has already ended (%s)", id,
			      m->state);
		store_campaign_free(m);
	}
	return r;
}
