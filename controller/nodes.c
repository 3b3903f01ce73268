/* The nodes service. */
#include "controller/nodes.h"

#include "common/facts/facts_doc.h"
#include "common/util/error.h"
#include "common/util/util.h"
#include "controller/signoff/signoff.h"
#include "controller/signoff/snapshot.h"
#include "controller/store/store.h"
#include "controller/store/store_nodes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int derive(const struct json_t *facts, char **ret_summary, char **ret_snapshot)
{
	json_t *snap = so_snapshot((const json_t *)facts);
	char *summary = facts_summary((const json_t *)facts);
	char *text = snap ? json_dumps(snap, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	json_decref(snap);
	if (!summary || !text) {
		free(summary);
		free(text);
		return -ENOMEM;
	}
	*ret_summary = summary;
	*ret_snapshot = text;
	return 0;
}

const struct store_facts_deriver ctl_facts_deriver = {CTL_FACTS_DERIVED_VERSION, derive};

/* A node against its cluster's newest sign-off: {state: current | stale | uncovered | none,
 * signoff, reasons}. */
static json_t *node_signoff(const json_t *stale, const struct store_node *nd)
{
	const json_t *c = json_object_get(stale, nd->cluster), *h;
	const json_t *why = json_object_get(json_object_get(c, "nodes"), nd->hostname);
	bool covered = false;
	size_t i;

	if (!c || strcmp(nd->state, "revoked") == 0)
		return json_pack("{s:s}", "state", "none");
	json_array_foreach(json_object_get(c, "covered"), i, h) covered |=
		strcmp(json_string_value(h), nd->hostname) == 0;
	return json_pack("{s:s, s:O, s:o}", "state",
			 json_array_size(why) ? "stale"
			 : covered	      ? "current"
					      : "uncovered",
			 "signoff", json_object_get(c, "signoff"), "reasons",
			 why ? json_incref((json_t *)why) : json_array());
}

/* A node as the listings show it: its summary as derived when its facts were written, or
 * (written before, or by another deriver) from the facts now; the facts only with_facts. */
static json_t *node_json(const struct store_node *n, const json_t *stale, bool with_facts)
{
	bool parse = n->facts_json && (with_facts || !n->derived);
	json_t *facts = parse ? json_loads(n->facts_json, 0, NULL) : NULL;
	char *summary = n->derived ? (n->summary ? strdup(n->summary) : NULL)
			: facts	   ? facts_summary(facts)
				   : NULL;
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:s?, s:o, s:s?, s:o}",
			      "id", n->id, "hostname", n->hostname, "cluster", n->cluster, "state",
			      n->state, "cert_serial", n->cert_serial, "cert_fingerprint",
			      n->cert_fingerprint, "enrolled_at_ms", (json_int_t)n->enrolled_at_ms,
			      "last_seen_ms", (json_int_t)n->last_seen_ms, "agent_version",
			      n->agent_version, "facts", facts ? facts : json_null(), "summary",
			      summary, "signoff", node_signoff(stale, n));

	free(summary);
	if (o && !with_facts)
		json_object_del(o, "facts");
	return o;
}

static int listing(struct store *st, const char *cluster, const char *state, bool with_facts,
		   json_t **ret, struct ctl_error *err)
{
	struct store_node **nodes = NULL;
	json_t *stale = NULL, *arr = json_array();
	size_t n = 0;
	int r = !arr	     ? -ENOMEM
		: with_facts ? store_nodes_list(st, &nodes, &n)
			     : store_nodes_brief(st, &nodes, &n);

	if (r < 0) {
		json_decref(arr);
		return ctl_error_store(err, r, "listing nodes");
	}
	r = ctl_signoff_staleness(st, &stale, err);
	for (size_t i = 0; r >= 0 && i < n; i++) {
		const struct store_node *nd = nodes[i];
		json_t *o;

		if ((cluster && strcmp(nd->cluster, cluster) != 0) ||
		    (state && strcmp(nd->state, state) != 0))
			continue;
		o = node_json(nd, stale, with_facts);
		if (!o || json_array_append_new(arr, o) < 0)
			r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	}
	store_nodes_free(nodes, n);
	json_decref(stale);
	if (r < 0) {
		json_decref(arr);
		return r;
	}
	*ret = arr;
	return 0;
}

int ctl_nodes_list(struct store *st, const char *cluster, const char *state, bool with_facts,
		   json_t **ret, struct ctl_error *err)
{
	return listing(st, cluster, state, with_facts, ret, err);
}

int ctl_node_get(struct store *st, const char *id_or_host, json_t **ret, struct ctl_error *err)
{
	struct store_node *nd = NULL;
	json_t *stale = NULL, *o = NULL;
	int r = store_node_get(st, id_or_host, &nd);

	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "node", "no node %s", id_or_host);
	if (r == -ENOTUNIQ)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_CONFLICT, "node",
				     "host name %s is ambiguous: use the id", id_or_host);
	if (r < 0)
		return ctl_error_store(err, r, "reading the node");
	r = ctl_signoff_staleness(st, &stale, err);
	if (r >= 0) {
		o = node_json(nd, stale, true);
		if (!o)
			r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	}
	store_node_free(nd);
	json_decref(stale);
	if (r < 0)
		return r;
	*ret = o;
	return 0;
}

int ctl_node_revoke(struct store *st, const char *id_or_host, const char *actor, json_t **ret,
		    struct ctl_error *err)
{
	char *id = NULL;
	int r = store_node_revoke(st, id_or_host, actor ? actor : "admin", util_now_unix_ms(), &id);

	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "node", "no node %s", id_or_host);
	if (r == -ENOTUNIQ)
		return ctl_error_set(err, r, CTL_ERR_CONFLICT, "node",
				     "host name %s is ambiguous: use the id", id_or_host);
	if (r < 0)
		return ctl_error_store(err, r, "revoking the node");
	*ret = json_pack("{s:s, s:s}", "id", id, "state", "revoked");
	free(id);
	return 0;
}
