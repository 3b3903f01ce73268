/* The sign-off report of an ended campaign, built from the store (docs/signoff.md, schema 1):
 * the campaign and its definition, the deployments and playbooks that configured its nodes,
 * each node's configuration snapshot, every result row, the verdict; for a revalidation, the
 * comparison with the baseline. */
#include "controller/signoff/signoff_int.h"

#include "common/util/error.h"
#include "common/util/util.h"
#include "controller/signoff/canon.h"
#include "controller/signoff/compare.h"
#include "controller/signoff/cpucost.h"
#include "controller/signoff/results.h"
#include "controller/signoff/snapshot.h"
#include "controller/store/store.h"
#include "controller/store/store_campaign.h"
#include "controller/store/store_deploy.h"
#include "controller/store/store_nodes.h"
#include "controller/store/store_signoff.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *playbook_ref(const char *name, const char *version, const char *sha256)
{
	return json_pack("{s:s, s:s, s:s}", "name", name, "version", version, "sha256", sha256);
}

static bool in_array(const json_t *arr, const char *s)
{
	const json_t *v;
	size_t i;

	json_array_foreach(arr, i, v) if (json_is_string(v) &&
					  strcmp(json_string_value(v), s) == 0) return true;
	return false;
}

/* The hostnames of the campaign's nodes that deployment d brought to succeeded. */
static int deployed_hosts(struct store *st, const struct store_deployment *d, const json_t *hosts,
			  json_t **ret)
{
	struct store_deploy_node *v = NULL;
	size_t n = 0;
	json_t *out = json_array();
	int r = out ? store_deploy_nodes(st, d->id, &v, &n) : -ENOMEM;

	for (size_t i = 0; r >= 0 && i < n; i++)
		if (strcmp(v[i].state, "succeeded") == 0 && in_array(hosts, v[i].hostname))
			json_array_append_new(out, json_string(v[i].hostname));
	store_deploy_nodes_free(v, n);
	if (r < 0) {
		json_decref(out);
		return r;
	}
	*ret = out;
	return 0;
}

/* The last deployment of each playbook that applied (not checked) it to some of the campaign's
 * nodes before the campaign ended, newest first; the playbooks, with the campaign's own. */
static int deployments_of(struct store *st, const struct store_campaign *m, const json_t *hosts,
			  json_t *deployments, json_t *playbooks)
{
	struct store_deployment **v = NULL;
	size_t n = 0;
	json_t *seen = json_object();
	int r = seen ? store_deployments_list(st, false, SO_DEPLOYMENTS_SCANNED, &v, &n) : -ENOMEM;

	for (size_t i = 0; r >= 0 && i < n; i++) {
		const struct store_deployment *d = v[i];
		json_t *nodes = NULL;

		if (strcmp(d->cluster, m->cluster) != 0 || d->check_mode ||
		    (strcmp(d->state, "succeeded") != 0 && strcmp(d->state, "partial") != 0) ||
		    d->created_at_ms > m->finished_at_ms ||
		    json_object_get(seen, d->playbook_sha256))
			continue;
		r = deployed_hosts(st, d, hosts, &nodes);
		if (r < 0)
			break;
		if (json_array_size(nodes) == 0) {
			json_decref(nodes);
			continue;
		}
		json_object_set_new(seen, d->playbook_sha256, json_true());
		json_array_append_new(playbooks, playbook_ref(d->playbook_name, d->playbook_version,
							      d->playbook_sha256));
		json_array_append_new(
			deployments,
			json_pack("{s:s, s:o, s:s, s:b, s:o, s:o, s:o}", "id", d->id, "playbook",
				  playbook_ref(d->playbook_name, d->playbook_version,
					       d->playbook_sha256),
				  "state", d->state, "check_mode", d->check_mode, "created_at",
				  so_time_json(d->created_at_ms), "finished_at",
				  so_time_json(d->finished_at_ms), "nodes", nodes));
	}
	if (r >= 0 && !json_object_get(seen, m->playbook_sha256))
		json_array_append_new(playbooks, playbook_ref(m->playbook_name, m->playbook_version,
							      m->playbook_sha256));
	store_deployments_free(v, n);
	json_decref(seen);
	return r < 0 ? r : 0;
}

/* The report's nodes: each campaign node with its agent version and the configuration snapshot
 * the campaign took when it was planned (its current facts for campaigns planned before
 * snapshots were taken). */
static int nodes_of(struct store *st, const json_t *cnodes, json_t *out)
{
	const json_t *e;
	size_t i;

	json_array_foreach(cnodes, i, e)
	{
		const char *id = json_string_value(json_object_get(e, "id"));
		const json_t *snap = json_object_get(e, "snapshot");
		struct store_node *nd = NULL;
		json_t *o, *facts = NULL;
		int r = id ? store_node_get(st, id, &nd) : -RY_E_INVALID;

		if (r < 0 && r != -RY_E_NOT_FOUND)
			return r;
		if (!snap && nd && nd->facts_json)
			facts = json_loads(nd->facts_json, 0, NULL);
		o = json_pack("{s:O, s:O, s:s?, s:o}", "id", json_object_get(e, "id"), "hostname",
			      json_object_get(e, "hostname"), "agent_version",
			      nd ? nd->agent_version : NULL, "snapshot",
			      snap ? json_deep_copy(snap) : so_snapshot(facts));
		json_decref(facts);
		store_node_free(nd);
		if (!o)
			return -ENOMEM;
		json_array_append_new(out, o);
	}
	return 0;
}

/* Node id -> index in the campaign's nodes (sorted by id). */
static long node_index(const json_t *ids, const char *id)
{
	size_t lo = 0, hi = json_array_size(ids);

	while (id && lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(json_string_value(json_array_get(ids, mid)), id);

		if (c == 0)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static int results_of(struct store *st, const struct store_campaign *m, const json_t *spec,
		      const json_t *cnodes, const json_t *verdict, json_t *doc)
{
	struct store_campaign_row *rows = NULL;
	json_t *ids = json_array(), *hosts = json_array(), *e;
	struct so_results *acc = NULL;
	size_t n = 0, i;
	int r = ids && hosts ? store_campaign_rows(st, m->id, -1, -1, &rows, &n) : -ENOMEM;

	json_array_foreach(cnodes, i, e)
	{
		json_array_append(ids, json_object_get(e, "id"));
		json_array_append(hosts, json_object_get(e, "hostname"));
	}
	if (r >= 0 &&
	    !(acc = so_results_new(json_object_get(spec, "tests"), hosts, ids, verdict, n)))
		r = -ENOMEM;
	for (i = 0; r >= 0 && i < n; i++) {
		const struct store_campaign_row *w = &rows[i];
		json_t *sum = w->summary_json ? json_loads(w->summary_json, 0, NULL) : NULL;
		long a = node_index(ids, w->node_a), b = node_index(ids, w->node_b);
		struct so_row row = {
			.test = (size_t)w->test_idx,
			.a = (size_t)a,
			.b = (size_t)b,
			.rail = w->rail,
			.phase = w->phase,
			.role = w->role,
			.device = json_string_value(json_object_get(
				json_object_get(json_object_get(sum, "env"), "a"), "device")),
			.state = w->state,
			.error = w->error,
			.metrics = json_object_get(sum, "metrics"),
			.counters = json_object_get(sum, "counters"),
		};

		r = a < 0 || b < 0 ? -RY_E_CORRUPT : so_results_add(acc, &row);
		json_decref(sum);
	}
	store_campaign_rows_free(rows, n);
	if (r >= 0)
		r = so_results_finish(acc, doc);
	else
		so_results_free(acc);
	json_decref(ids);
	json_decref(hosts);
	return r < 0 ? r : 0;
}

static double tolerance(const json_t *options, const char *key, double dflt)
{
	const json_t *v = json_object_get(json_object_get(options, "tolerance"), key);

	return json_is_number(v) && json_number_value(v) >= 0 ? json_number_value(v) : dflt;
}

static const char *or_str(const json_t *v, const char *dflt)
{
	return json_is_string(v) ? json_string_value(v) : dflt;
}

/* The first failed step of node id among a deployment's step results: {name, message}, or
 * NULL. New reference. */
static json_t *failed_step(const struct store_step_result *v, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].node_id && strcmp(v[i].node_id, id) == 0 &&
		    strcmp(v[i].status, "failed") == 0)
			/* the message's headline: its first line (the detail beneath is the
			 * deployment's, GET /api/v1/deployments/ID) */
			return v[i].message ? json_pack("{s:s, s:s%}", "name", v[i].name, "message",
							v[i].message, strcspn(v[i].message, "\n"))
					    : json_pack("{s:s}", "name", v[i].name);
	return NULL;
}

/* A revalidation's configuration checks (options.checks: [{playbook, deployment}]) as they
 * ended: each deployment's state, the nodes that failed it (with the message) and those that
 * differ from it; *ret_failed the checks that failed somewhere (failed, partial, or not ended or
 * gone: a check that cannot say the configuration holds). Summary lines into lines. */
static int checks_of(struct store *st, const json_t *options, json_t *lines, json_t **ret,
		     size_t *ret_failed)
{
	const json_t *plan = json_object_get(options, "checks"), *e;
	json_t *out = json_array();
	size_t i, failed = 0;
	char *line;

	if (!out)
		return -ENOMEM;
	json_array_foreach(plan, i, e)
	{
		const char *id = json_string_value(json_object_get(e, "deployment"));
		const json_t *pb = json_object_get(e, "playbook");
		struct store_deployment *d = NULL;
		struct store_deploy_node *nv = NULL;
		json_t *bad = json_array(), *differ = json_array(), *o;
		const char *name = or_str(json_object_get(pb, "name"), "the baseline's playbook");
		const char *version = or_str(json_object_get(pb, "version"), "");
		const char *host, *msg;
		struct store_step_result *sv = NULL;
		char stepbuf[600];
		size_t nn = 0, sn = 0;
		bool ok;
		int r = id ? store_deployment_get(st, id, &d) : -RY_E_NOT_FOUND;

		if (r >= 0)
			r = store_deploy_nodes(st, d->id, &nv, &nn);
		if (r >= 0)
			r = store_step_results(st, d->id, &sv, &sn);
		for (size_t k = 0; r >= 0 && k < nn; k++) {
			if (strcmp(nv[k].state, "succeeded") != 0)
				json_array_append_new(
					bad,
					json_pack("{s:s, s:s, s:s?, s:o?}", "host", nv[k].hostname,
						  "state", nv[k].state, "message", nv[k].message,
						  "step", failed_step(sv, sn, nv[k].node_id)));
			else if (nv[k].changed > 0)
				json_array_append_new(differ, json_string(nv[k].hostname));
		}
		ok = r >= 0 && strcmp(d->state, "succeeded") == 0 && json_array_size(bad) == 0;
		host = json_string_value(json_object_get(json_array_get(bad, 0), "host"));
		msg = json_string_value(json_object_get(json_array_get(bad, 0), "message"));
		if (json_object_get(json_array_get(bad, 0), "step")) {
			const json_t *fs = json_object_get(json_array_get(bad, 0), "step");
			const char *sm = json_string_value(json_object_get(fs, "message"));

			snprintf(stepbuf, sizeof(stepbuf), "step \"%s\"%s%s",
				 or_str(json_object_get(fs, "name"), "?"), sm ? ": " : "",
				 sm ? sm : "");
			msg = stepbuf;
		}
		failed += !ok;
		o = json_pack("{s:s?, s:O?, s:s, s:s?, s:b, s:o, s:o}", "deployment", id,
			      "playbook", pb, "state", r >= 0 ? d->state : "missing", "reason",
			      r >= 0 ? d->reason : NULL, "check_mode", r >= 0 && d->check_mode,
			      "failed", bad, "differ", differ);
		if (o)
			json_array_append_new(out, o);
		if (!ok &&
		    asprintf(&line, "check: %s %s (%s) %s%s%s%s%s%s", name, version,
			     id ? id : "no deployment", r >= 0 ? d->state : "missing",
			     host ? " on " : "", host ? host : "", msg ? ": " : "", msg ? msg : "",
			     json_array_size(bad) > 1 ? " (and more nodes)" : "") > 0) {
			json_array_append_new(lines, json_string(line));
			free(line);
		} else if (ok && json_array_size(differ) &&
			   asprintf(&line, "check: %s %s (%s): %zu nodes differ from it", name,
				    version, id, json_array_size(differ)) > 0) {
			json_array_append_new(lines, json_string(line));
			free(line);
		}
		store_step_results_free(sv, sn);
		store_deploy_nodes_free(nv, nn);
		store_deployment_free(d);
	}
	*ret = out;
	*ret_failed = failed;
	return 0;
}

/* The regressions a summary lists one by one; the rest are counted (all are in comparison). */
#define SO_SUMMARY_REGRESSIONS 10

/* The regressions' lines, worst first, after the count (lines: the summary being made). */
static void regression_lines(json_t *lines, const json_t *regressions)
{
	const json_t *m;
	size_t i, n = json_array_size(regressions);
	char *line;

	json_array_foreach(regressions, i, m)
	{
		char *one;

		if (i == SO_SUMMARY_REGRESSIONS)
			break;
		one = so_regression_line(m);
		if (one && asprintf(&line, "regression: %s", one) > 0) {
			json_array_append_new(lines, json_string(line));
			free(line);
		}
		free(one);
	}
	if (n > SO_SUMMARY_REGRESSIONS &&
	    asprintf(&line, "regression: and %zu more (comparison.regressions)",
		     n - SO_SUMMARY_REGRESSIONS) > 0) {
		json_array_append_new(lines, json_string(line));
		free(line);
	}
}

/* The comparison with the baseline report and the revalidation's verdict (the campaign's,
 * outranked by "regressed"); the regressions, then the drift, lead the summary. */
static int compare_with(struct store *st, json_t *doc, const json_t *options,
			const struct store_signoff *b, struct ctl_error *err)
{
	json_t *base = json_loadb(b->report, b->report_len, 0, NULL), *cmp, *drift, *g;
	json_t *lines = json_array(), *check_lines = json_array(), *checks = NULL;
	const char *mode, *verdict;
	size_t i, nreg, nfailed = 0;
	char *line = NULL;
	bool inform;

	if (!base || !lines || !check_lines) {
		json_decref(base);
		json_decref(lines);
		json_decref(check_lines);
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INTERNAL, "baseline",
				     "the baseline %s does not parse", b->id);
	}
	cmp = so_compare(base, doc, tolerance(options, "bw_pct", SO_TOLERANCE_BW_PCT),
			 tolerance(options, "lat_pct", SO_TOLERANCE_LAT_PCT));
	drift = so_drift(json_object_get(base, "nodes"), json_object_get(doc, "nodes"));
	i = checks_of(st, options, check_lines, &checks, &nfailed);
	if (!cmp || !drift || i != 0) {
		json_decref(cmp);
		json_decref(drift);
		json_decref(base);
		json_decref(lines);
		json_decref(check_lines);
		return ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	}
	json_object_set_new(cmp, "checks", checks);
	json_object_update(cmp, drift);
	json_decref(drift);
	mode = so_regressions_mode(
		json_object_get(json_object_get(options, "tolerance"), "regressions"));
	inform = strcmp(mode, "inform") == 0;
	json_object_set_new(json_object_get(cmp, "tolerance"), "regressions", json_string(mode));
	nreg = json_array_size(json_object_get(cmp, "regressions"));
	verdict = so_revalidation_verdict(json_string_value(json_object_get(doc, "verdict")), nreg,
					  inform, nfailed);
	if (asprintf(&line,
		     "revalidation against %s: %zu of %zu metrics regressed beyond tolerance%s",
		     b->id, nreg, json_array_size(json_object_get(cmp, "metrics")),
		     !nreg    ? ""
		     : inform ? " (they inform only: validation.tolerance.regressions is inform)"
		     : strcmp(verdict, "regressed") == 0 ? ": the verdict is regressed"
							 : "") > 0)
		json_array_append_new(lines, json_string(line));
	free(line);
	regression_lines(lines, json_object_get(cmp, "regressions"));
	json_array_extend(lines, check_lines);
	json_decref(check_lines);
	json_array_foreach(json_object_get(cmp, "drift"), i, g)
	{
		char *dl = so_drift_line(g);

		if (dl && asprintf(&line, "drift: %s", dl) > 0) {
			json_array_append_new(lines, json_string(line));
			free(line);
		}
		free(dl);
	}
	json_array_extend(lines, json_object_get(doc, "summary"));
	json_object_set_new(doc, "summary", lines);
	json_object_set_new(doc, "verdict", json_string(verdict));
	json_object_set_new(doc, "comparison", cmp);
	json_object_set_new(doc, "baseline",
			    json_pack("{s:s, s:s, s:O, s:s}", "id", b->id, "sha256", b->sha256,
				      "created_at", json_object_get(base, "created_at"), "verdict",
				      b->verdict));
	json_decref(base);
	return 0;
}

/* The report's acceptance (docs/signoff.md, "Acceptance"): whether it is an acceptance sign-off
 * or a smoke / baseline report and why, the nodes its verdict excluded, and the headline that
 * leads its summary. A campaign judged before acceptance rules is never an acceptance. */
static int acceptance_of(json_t *doc, const json_t *verdict)
{
	const json_t *acc = json_object_get(verdict, "acceptance");
	const json_t *why = json_object_get(verdict, "acceptance_reasons");
	const json_t *ex = json_object_get(verdict, "excluded"), *x;
	json_t *summary = json_object_get(doc, "summary");
	bool a = json_is_true(acc);
	char head[160], line[1024];
	size_t i, len;

	json_object_set_new(doc, "acceptance", json_boolean(a));
	json_object_set_new(doc, "acceptance_reasons",
			    json_is_array(why) ? json_deep_copy(why)
			    : json_is_boolean(acc)
				    ? json_array()
				    : json_pack("[s]", "the campaign was judged before acceptance "
						       "rules existed"));
	json_object_set_new(doc, "excluded", json_is_array(ex) ? json_deep_copy(ex) : json_array());
	so_headline(json_string_value(json_object_get(doc, "verdict")), a,
		    (long)json_array_size(ex), head, sizeof(head));
	json_object_set_new(doc, "headline", json_string(head));
	if (!json_is_array(summary) || !json_object_get(doc, "headline"))
		return -ENOMEM;
	if (!a) {
		len = (size_t)snprintf(line, sizeof(line), "not an acceptance sign-off: ");
		json_array_foreach(json_object_get(doc, "acceptance_reasons"), i, x)
		{
			if (len < sizeof(line) - 2)
				len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s",
							i ? "; " : "", json_string_value(x));
		}
		json_array_insert_new(summary, 0, json_string(line));
	}
	json_array_insert_new(summary, 0, json_string(head));
	return 0;
}

int so_report_build(struct store *st, const struct store_campaign *m, const char *ca_fingerprint,
		    const struct store_signoff *baseline, const char *id, int64_t now_ms,
		    json_t **ret, struct ctl_error *err)
{
	json_t *spec = json_loads(m->spec_json, 0, NULL);
	json_t *cnodes = json_loads(m->nodes_json, 0, NULL);
	json_t *options = json_loads(m->options_json, 0, NULL);
	json_t *left = json_loads(m->left_out_json, 0, NULL);
	json_t *verdict = m->verdict_json ? json_loads(m->verdict_json, 0, NULL) : NULL;
	json_t *hosts = json_array(), *deployments = json_array(), *playbooks = json_array();
	json_t *nodes = json_array(), *doc = NULL, *e;
	size_t i;
	int r = -ENOMEM;

	if (!spec || !cnodes || !options || !left || !verdict) {
		r = ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INTERNAL, "campaign",
				  "campaign %s: its stored record does not parse", m->id);
		goto out;
	}
	if (!hosts || !deployments || !playbooks || !nodes)
		goto nomem;
	json_array_foreach(cnodes, i, e) json_array_append(hosts, json_object_get(e, "hostname"));
	r = deployments_of(st, m, hosts, deployments, playbooks);
	if (r >= 0)
		r = nodes_of(st, cnodes, nodes);
	if (r < 0) {
		ctl_error_store(err, r, "reading the campaign's records");
		goto out;
	}
	doc = json_pack(
		"{s:s, s:s, s:s, s:o, s:{s:s, s:s}, s:s, s:O?, s:O?, s:{s:s, s:s, s:o, s:o, s:O, "
		"s:O, s:I, s:s, s:O, s:o, s:O, s:O}, s:O, s:O, s:O, s:O, s:n, s:n}",
		"schema", SO_SCHEMA, "id", id, "kind", baseline ? "revalidation" : "signoff",
		"created_at", so_time_json(now_ms), "controller", "version", RAILYARD_VERSION,
		"ca_fingerprint", ca_fingerprint, "cluster", m->cluster, "verdict",
		json_object_get(verdict, "result"), "summary", json_object_get(verdict, "findings"),
		"campaign", "id", m->id, "state", m->state, "created_at",
		so_time_json(m->created_at_ms), "finished_at", so_time_json(m->finished_at_ms),
		"transport", json_object_get(spec, "transport"), "quick",
		json_object_get(spec, "quick") ? json_object_get(spec, "quick") : json_false(),
		"seed", (json_int_t)m->seed, "actor", m->actor, "options", options, "playbook",
		playbook_ref(m->playbook_name, m->playbook_version, m->playbook_sha256),
		"definition", spec, "left_out", left, "playbooks", playbooks, "deployments",
		deployments, "nodes", nodes, "evaluation", verdict, "baseline", "comparison");
	if (!doc)
		goto nomem;
	r = results_of(st, m, spec, cnodes, verdict, doc);
	if (r < 0) {
		ctl_error_store(err, r, "reading the campaign's results");
		goto out;
	}
	/* json_pack took the findings by reference: give the report its own array. */
	json_object_set_new(doc, "summary",
			    json_is_array(json_object_get(doc, "summary"))
				    ? json_deep_copy(json_object_get(doc, "summary"))
				    : json_array());
	if (baseline && (r = compare_with(st, doc, options, baseline, err)) < 0)
		goto out;
	/* What the bandwidth cost in CPU, next to it (docs/signoff.md, "CPU cost"). */
	if (json_object_set_new(doc, "cpu_cost",
				so_cpu_cost(verdict, json_string_value(json_object_get(
							     spec, "transport")))) < 0)
		goto nomem;
	/* After the comparison: the headline says the report's final verdict (regressed). */
	if ((r = acceptance_of(doc, verdict)) < 0)
		goto nomem;
	*ret = doc;
	doc = NULL;
	r = 0;
	goto out;
nomem:
	r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
out:
	json_decref(doc);
	json_decref(spec);
	json_decref(cnodes);
	json_decref(options);
	json_decref(left);
	json_decref(verdict);
	json_decref(hosts);
	json_decref(deployments);
	json_decref(playbooks);
	json_decref(nodes);
	return r;
}
