/* `railyard-controller deploy` and `deployments`: validate a playbook, choose the target nodes
 * and their batches, store the deployment for the serving controller to run, and follow it. */
#include "controller/admin.h"
#include "controller/rollout/policy.h"
#include "controller/state.h"
#include "common/log/log.h"
#include "common/playbook/playbook.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Override the playbook's policy with command-line values where given ("N" or "P%"). */
static int policy_from(const struct pb_rollout *pr, const struct ctl_deploy_opts *o,
		       struct rollout_policy *ret)
{
	struct rollout_policy p = {0};
	char *end;
	long v;

	p.batch_count = pr->batch_count > 0 ? pr->batch_count : 0;
	p.batch_percent = pr->batch_percent > 0 ? pr->batch_percent : 0;
	p.max_fail_count = pr->max_fail_count > 0 ? pr->max_fail_count : 0;
	p.max_fail_percent = pr->max_fail_percent > 0 ? pr->max_fail_percent : 0;
	p.canary = pr->canary;
	p.pause_ms = pr->pause_ms;
	if (o->batch) {
		v = strtol(o->batch, &end, 10);
		if (end == o->batch || v < 1 || (*end && strcmp(end, "%") != 0) ||
		    (*end && v > 100) || v > 100000)
			return -EINVAL;
		p.batch_count = *end ? 0 : (int)v;
		p.batch_percent = *end ? (int)v : 0;
	}
	if (o->max_fail) {
		v = strtol(o->max_fail, &end, 10);
		if (end == o->max_fail || v < 0 || (*end && strcmp(end, "%") != 0) ||
		    (*end && v > 100) || v > 100000)
			return -EINVAL;
		p.max_fail_count = *end ? 0 : (int)v;
		p.max_fail_percent = *end ? (int)v : 0;
	}
	if (o->canary >= 0)
		p.canary = o->canary;
	if (o->pause_ms >= 0)
		p.pause_ms = o->pause_ms;
	*ret = p;
	return 0;
}

static bool deployment_done(const char *state)
{
	return strcmp(state, "pending") != 0 && strcmp(state, "running") != 0;
}

/* Messages come from the nodes: printed escaped (one line, no terminal control). */
static void print_node_line(FILE *out, const struct store_deploy_node *n)
{
	util_fprintf_safe(out,
			  "  %-14s batch %-2d %-11s ok %d, changed %d, failed %d, skipped %d%s%s\n",
			  n->hostname, n->batch, n->state, n->ok, n->changed, n->failed, n->skipped,
			  n->message ? "  " : "", n->message ? n->message : "");
}

/* Follow a deployment until it ends or timeout_ms passes, printing each node as it finishes.
 * Returns the exit code: 0 succeeded, 1 otherwise. */
static int follow(struct store *store, const char *id, int64_t timeout_ms, FILE *out)
{
	int64_t deadline = util_now_mono_ms() + timeout_ms;
	char *seen = NULL;
	size_t seen_n = 0;
	int rc = 1;

	for (;;) {
		struct store_deployment *d = NULL;
		struct store_deploy_node *nodes = NULL;
		size_t n = 0;
		bool done;

		if (store_deployment_get(store, id, &d) < 0 ||
		    store_deploy_nodes(store, id, &nodes, &n) < 0) {
			store_deployment_free(d);
			log_error("deployment %s: cannot read its state", id);
			break;
		}
		if (!seen) {
			seen = calloc(n + 1, 1);
			seen_n = n;
		}
		for (size_t i = 0; seen && i < n && i < seen_n; i++) {
			if (!seen[i] && strcmp(nodes[i].state, "waiting") != 0 &&
			    strcmp(nodes[i].state, "sent") != 0) {
				seen[i] = 1;
				print_node_line(out, &nodes[i]);
			}
		}
		done = deployment_done(d->state);
		if (done) {
			util_fprintf_safe(out, "deployment %s %s%s%s\n", id, d->state,
					  d->reason ? ": " : "", d->reason ? d->reason : "");
			rc = strcmp(d->state, "succeeded") == 0 ? 0 : 1;
		}
		store_deploy_nodes_free(nodes, n);
		store_deployment_free(d);
		if (done)
			break;
		if (util_now_mono_ms() >= deadline) {
			fprintf(out,
				"deployment %s still running after %lld s (the controller "
				"carries on; follow it with `deployments %s`)\n",
				id, (long long)(timeout_ms / 1000), id);
			break;
		}
		fflush(out);
		usleep(200 * 1000);
	}
	free(seen);
	return rc;
}

int ctl_cmd_deploy(const char *state_dir, const struct ctl_deploy_opts *o, FILE *out)
{
	struct ctl_state *st = NULL;
	struct playbook *pb = NULL;
	struct store_node **nodes = NULL;
	struct store_deploy_target *targets = NULL;
	struct store_deployment_new dn = {0};
	struct rollout_policy pol;
	struct pb_diags d;
	size_t n_nodes = 0, n_targets = 0, *sizes = NULL, n_batches = 0;
	char id[20], hex[9], *policy_json = NULL, *text = NULL;
	size_t text_len = 0;
	unsigned char rnd[4];
	int r, rc = 1;

	pb_diags_init(&d);
	/* One read: the text parsed is the text stored (and hashed). */
	r = fs_read_file(o->playbook, PB_MAX_SIZE, &text, &text_len);
	if (r < 0) {
		log_error("deploy: %s: %s", o->playbook, ry_strerror(r));
		goto out;
	}
	r = playbook_parse(text, text_len, o->playbook, &pb, &d);
	if (r < 0) {
		pb_diags_print(&d, stderr);
		goto out;
	}
	if (playbook_target_cluster(pb) && strcmp(playbook_target_cluster(pb), o->cluster) != 0) {
		log_error("deploy: playbook %s targets cluster %s, not %s", o->playbook,
			  playbook_target_cluster(pb), o->cluster);
		goto out;
	}
	if (policy_from(playbook_rollout(pb), o, &pol) < 0) {
		log_error("deploy: invalid --batch or --max-fail (use N or P%%)");
		rc = 2;
		goto out;
	}
	if (ctl_open_state(state_dir, false, &st) < 0) {
		goto out;
	}
	r = store_nodes_list(st->store, &nodes, &n_nodes);
	if (r < 0)
		goto out;
	targets = calloc(n_nodes + 1, sizeof(*targets));
	if (!targets)
		goto out;
	/* Nodes come ordered by cluster, hostname: batches are deterministic. */
	for (size_t i = 0; i < n_nodes; i++) {
		json_t *facts;
		bool match;

		if (strcmp(nodes[i]->cluster, o->cluster) != 0 ||
		    strcmp(nodes[i]->state, "revoked") == 0)
			continue;
		if (!nodes[i]->facts_json) {
			util_fprintf_safe(out,
					  "  %-14s not targeted: no facts yet (its agent has never "
					  "connected)\n",
					  nodes[i]->hostname);
			continue;
		}
		facts = json_loads(nodes[i]->facts_json, 0, NULL);
		match = facts && playbook_target_matches(pb, nodes[i]->cluster, facts);
		json_decref(facts);
		if (!match) {
			util_fprintf_safe(
				out, "  %-14s not targeted (selector does not match its facts)\n",
				nodes[i]->hostname);
			continue;
		}
		targets[n_targets].node_id = nodes[i]->id;
		targets[n_targets].hostname = nodes[i]->hostname;
		n_targets++;
	}
	r = rollout_batches(&pol, n_targets, &sizes, &n_batches);
	if (r < 0) {
		log_error("deploy: invalid rollout policy");
		goto out;
	}
	for (size_t b = 0, k = 0; b < n_batches; b++)
		for (size_t j = 0; j < sizes[b]; j++)
			targets[k++].batch = (int)b;

	if (util_random_bytes(rnd, sizeof(rnd)) < 0)
		goto out;
	util_hex(rnd, sizeof(rnd), hex);
	snprintf(id, sizeof(id), "d-%s", hex);
	policy_json = rollout_policy_to_json(&pol);
	if (!policy_json)
		goto out;
	dn.id = id;
	dn.cluster = o->cluster;
	dn.actor = "admin";
	dn.playbook_name = playbook_name(pb);
	dn.playbook_version = playbook_version(pb);
	dn.playbook_sha256 = playbook_sha256(pb);
	dn.playbook_text = text;
	dn.policy_json = policy_json;
	dn.check_mode = o->check;
	r = store_deployment_create(st->store, &dn, targets, n_targets, util_now_unix_ms());
	if (r < 0) {
		log_error("deploy: storing the deployment failed: %s%s", ry_strerror(r),
			  r == -RY_E_NOT_FOUND ? " (unknown cluster)" : "");
		goto out;
	}
	fprintf(out, "deployment %s: %s %s on %zu nodes of %s in %zu batches%s\n", id,
		playbook_name(pb), playbook_version(pb), n_targets, o->cluster, n_batches,
		o->check ? " (check mode: nothing will change)" : "");
	if (o->no_wait) {
		rc = 0;
		goto out;
	}
	rc = follow(st->store, id, o->timeout_ms, out);
	if (o->show_diffs) {
		struct store_step_result *res = NULL;
		size_t n = 0;

		if (store_step_results(st->store, id, &res, &n) == 0) {
			for (size_t i = 0; i < n; i++) {
				char *diff;

				if (!res[i].diff || !res[i].diff[0])
					continue;
				diff = util_escape(res[i].diff, true);
				util_fprintf_safe(out, "--- %s: %s (%s)\n", res[i].node_id,
						  res[i].name, res[i].status);
				fputs(diff ? diff : "(out of memory)\n", out);
				free(diff);
			}
			store_step_results_free(res, n);
		}
	}
out:
	pb_diags_done(&d);
	playbook_free(pb);
	store_nodes_free(nodes, n_nodes);
	free(targets);
	free(sizes);
	free(policy_json);
	free(text);
	ctl_state_free(st);
	return rc;
}

static json_t *deployment_json(struct store *store, const struct store_deployment *d, bool full)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:b, s:s, s:I, s:I, s:i}", "id", d->id,
			      "cluster", d->cluster, "playbook", d->playbook_name, "version",
			      d->playbook_version, "check_mode", d->check_mode, "state", d->state,
			      "created_at_ms", (json_int_t)d->created_at_ms, "finished_at_ms",
			      (json_int_t)d->finished_at_ms, "current_batch", d->current_batch);
	struct store_deploy_node *nodes = NULL;
	struct store_step_result *res = NULL;
	size_t n = 0, m = 0;
	json_t *arr;

	if (!o)
		return NULL;
	json_object_set_new(o, "reason", d->reason ? json_string(d->reason) : json_null());
	json_object_set_new(o, "policy", json_loads(d->policy_json, 0, NULL));
	if (!full || store_deploy_nodes(store, d->id, &nodes, &n) < 0)
		return o;
	if (store_step_results(store, d->id, &res, &m) < 0)
		m = 0;
	arr = json_array();
	for (size_t i = 0; i < n; i++) {
		json_t *steps = json_array();
		json_t *no = json_pack("{s:s, s:s, s:i, s:s, s:i, s:i, s:i, s:i}", "node_id",
				       nodes[i].node_id, "hostname", nodes[i].hostname, "batch",
				       nodes[i].batch, "state", nodes[i].state, "ok", nodes[i].ok,
				       "changed", nodes[i].changed, "failed", nodes[i].failed,
				       "skipped", nodes[i].skipped);

		json_object_set_new(no, "message",
				    nodes[i].message ? json_string(nodes[i].message) : json_null());
		for (size_t k = 0; k < m; k++) {
			if (strcmp(res[k].node_id, nodes[i].node_id) != 0)
				continue;
			json_array_append_new(
				steps,
				json_pack("{s:i, s:s, s:s, s:s, s:s, s:I}", "index", res[k].idx,
					  "name", res[k].name, "status", res[k].status, "diff",
					  res[k].diff ? res[k].diff : "", "message",
					  res[k].message ? res[k].message : "", "duration_ms",
					  (json_int_t)res[k].duration_ms));
		}
		json_object_set_new(no, "steps", steps);
		json_array_append_new(arr, no);
	}
	json_object_set_new(o, "nodes", arr);
	store_step_results_free(res, m);
	store_deploy_nodes_free(nodes, n);
	return o;
}

int ctl_cmd_deployments(const char *state_dir, const char *id, bool json, FILE *out)
{
	struct ctl_state *st = NULL;
	struct store_deployment **deps = NULL, *one = NULL;
	size_t n = 0;
	int rc = 1;

	if (ctl_open_state(state_dir, false, &st) < 0) {
		return 1;
	}
	if (id) {
		if (store_deployment_get(st->store, id, &one) < 0) {
			log_error("deployments: %s not found", id);
			goto out;
		}
		if (json) {
			json_t *o = deployment_json(st->store, one, true);
			char *s = o ? json_dumps(o, JSON_INDENT(2)) : NULL;

			if (s)
				fprintf(out, "%s\n", s);
			free(s);
			json_decref(o);
		} else {
			struct store_deploy_node *nodes = NULL;
			size_t m = 0;

			util_fprintf_safe(out, "%s  %s %s on %s  %s%s%s%s\n", one->id,
					  one->playbook_name, one->playbook_version, one->cluster,
					  one->state, one->check_mode ? " (check)" : "",
					  one->reason ? ": " : "", one->reason ? one->reason : "");
			if (store_deploy_nodes(st->store, id, &nodes, &m) == 0) {
				for (size_t i = 0; i < m; i++)
					print_node_line(out, &nodes[i]);
				store_deploy_nodes_free(nodes, m);
			}
		}
		rc = 0;
		goto out;
	}
	if (store_deployments_list(st->store, false, 50, &deps, &n) < 0)
		goto out;
	if (json) {
		json_t *arr = json_array();
		char *s;

		for (size_t i = 0; i < n; i++)
			json_array_append_new(arr, deployment_json(st->store, deps[i], false));
		s = json_dumps(arr, JSON_INDENT(2));
		if (s)
			fprintf(out, "%s\n", s);
		free(s);
		json_decref(arr);
	} else {
		fprintf(out, "%-11s %-16s %-10s %-10s %-6s %s\n", "ID", "PLAYBOOK", "CLUSTER",
			"STATE", "MODE", "REASON");
		for (size_t i = 0; i < n; i++)
			util_fprintf_safe(out, "%-11s %-16s %-10s %-10s %-6s %s\n", deps[i]->id,
					  deps[i]->playbook_name, deps[i]->cluster, deps[i]->state,
					  deps[i]->check_mode ? "check" : "apply",
					  deps[i]->reason ? deps[i]->reason : "");
	}
	rc = 0;
out:
	store_deployment_free(one);
	store_deployments_free(deps, n);
	ctl_state_free(st);
	return rc;
}
