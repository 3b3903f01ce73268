/* The sign-off service: create (build, sign, store), read, list, export, verify a stored one
 * (the offline verifier is common/signoff/verify.c), and staleness; the sign-off key of a state
 * directory. */
#include "controller/signoff/signoff_int.h"

#include "common/log/log.h"
#include "common/pki/pki.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"
#include "controller/signoff/html.h"
#include "controller/signoff/snapshot.h"
#include "controller/store/store.h"
#include "controller/store/store_campaign.h"
#include "controller/store/store_deploy.h"
#include "controller/store/store_health.h"
#include "controller/store/store_nodes.h"
#include "controller/store/store_signoff.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define SIGNER_DAYS	   3650
#define SIGNER_LOCK	   "signoff.lock"
#define STALE_CHANGES_MAX  5	/* drifted fields named per node */
#define STALE_SCAN_DEPLOYS 1000 /* deployments looked at for "applied after" */
#define STALE_HEALTH_MAX   1000 /* critical health events looked at since the sign-off */

/* ---- the sign-off key --------------------------------------------------------------------- */

static int signer_create(struct ctl_state *state, const char *crt, const char *key, char *errbuf,
			 size_t errlen)
{
	EVP_PKEY *k = NULL;
	X509 *c = NULL;
	char cn[PKI_NAME_MAX + 1];
	int r = pki_key_generate(&k);

	snprintf(cn, sizeof(cn), "Railyard sign-off");
	if (r >= 0)
		r = pki_cert_issue_signing(state->ca_cert, state->ca_key, k, cn, SIGNER_DAYS, &c);
	/* The key first: a certificate without its key is never left behind. */
	if (r >= 0)
		r = pki_key_write_pem(key, k);
	if (r >= 0)
		r = pki_cert_write(crt, c);
	if (r < 0)
		snprintf(errbuf, errlen, "creating the sign-off key: %s", ry_strerror(r));
	else
		log_info("created the sign-off key %s", crt);
	EVP_PKEY_free(k);
	X509_free(c);
	return r;
}

int ctl_signer_load(struct ctl_state *state, X509 **ret_cert, EVP_PKEY **ret_key, char *errbuf,
		    size_t errlen)
{
	char *crt = ctl_state_path(state, "signoff.crt"),
	     *key = ctl_state_path(state, "signoff.key");
	char *lock = ctl_state_path(state, SIGNER_LOCK);
	EVP_PKEY *k = NULL;
	X509 *c = NULL;
	int fd = -1, r = 0;

	if (!crt || !key || !lock) {
		r = -ENOMEM;
		goto out;
	}
	/* Serve and a command line may both find it missing: one creates it. */
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX) < 0) {
		r = -errno;
		snprintf(errbuf, errlen, "%s: %s", lock, strerror(errno));
		goto out;
	}
	if (access(crt, F_OK) < 0 && access(key, F_OK) < 0 &&
	    (r = signer_create(state, crt, key, errbuf, errlen)) < 0)
		goto out;
	r = pki_cert_load(crt, &c);
	if (r >= 0)
		r = pki_key_load(key, &k);
	if (r >= 0)
		r = pki_key_matches_cert(k, c);
	if (r >= 0)
		r = pki_cert_verify(state->ca_cert, c, NULL, NULL, errbuf, errlen);
	if (r < 0) {
		if (!errbuf[0] || r != -RY_E_CRYPTO)
			snprintf(errbuf, errlen, "the sign-off key %s: %s", crt, ry_strerror(r));
		goto out;
	}
	*ret_cert = c;
	*ret_key = k;
	c = NULL;
	k = NULL;
out:
	if (fd >= 0)
		close(fd);
	X509_free(c);
	EVP_PKEY_free(k);
	free(crt);
	free(key);
	free(lock);
	return r;
}

/* ---- staleness ------------------------------------------------------------------------------ */

static void add_reason(json_t *nodes, json_t *all, const char *host, const char *why)
{
	json_t *v = json_object_get(nodes, host);
	char *line = NULL;

	if (!v) {
		v = json_array();
		json_object_set_new(nodes, host, v);
	}
	json_array_append_new(v, json_string(why));
	if (asprintf(&line, "%s: %s", host, why) > 0)
		json_array_append_new(all, json_string(line));
	free(line);
}

/* What drifted on a node since the report: its snapshot now against the report's. */
static void node_drift(json_t *nodes, json_t *all, const json_t *rnode, const struct store_node *nd)
{
	const char *host = json_string_value(json_object_get(rnode, "hostname"));
	/* Its snapshot as derived when the facts were written; else from the facts now. */
	json_t *facts = !nd->derived && nd->facts_json ? json_loads(nd->facts_json, 0, NULL) : NULL;
	json_t *now = nd->derived
			      ? (nd->snapshot_json ? json_loads(nd->snapshot_json, 0, NULL) : NULL)
		      : facts ? so_snapshot(facts)
			      : NULL;
	json_t *d, *c;
	size_t i;

	json_decref(facts);
	if (!now)
		return;
	d = so_snapshot_diff(json_object_get(rnode, "snapshot"), now);
	json_array_foreach(d, i, c)
	{
		json_t *g = json_pack(
			"{s:O, s:O, s:O, s:[s]}", "field", json_object_get(c, "field"), "from",
			json_object_get(c, "from"), "to", json_object_get(c, "to"), "nodes", host);
		char *line = g ? so_drift_line(g) : NULL, *why = NULL;

		if (i < STALE_CHANGES_MAX && line &&
		    asprintf(&why, "configuration drifted: %s", line) > 0)
			add_reason(nodes, all, host, why);
		free(why);
		free(line);
		json_decref(g);
	}
	json_decref(d);
	json_decref(now);
}

static bool has_node(const json_t *rnodes, const char *id)
{
	const json_t *n;
	size_t i;

	json_array_foreach(rnodes, i, n)
	{
		const char *x = json_string_value(json_object_get(n, "id"));

		if (x && strcmp(x, id) == 0)
			return true;
	}
	return false;
}

/* Why the sign-off so no longer describes the cluster: {stale, reasons, nodes: {host:
 * [reasons]}, covered: [host]}, from the nodes (and snapshots) it covers. */
static int staleness(struct store *st, const struct store_signoff *so, json_t **ret)
{
	json_t *rnodes = json_loads(so->nodes_json ? so->nodes_json : "", 0, NULL);
	json_t *nodes = json_object(), *all = json_array(), *covered = json_array();
	struct store_node **v = NULL;
	struct store_deployment **deps = NULL;
	struct store_health_event *hv = NULL;
	size_t n = 0, nd = 0, hn = 0, i;
	const json_t *rn;
	int r = store_nodes_brief(st, &v, &n);

	if (r >= 0)
		r = store_deployments_list(st, false, STALE_SCAN_DEPLOYS, &deps, &nd);
	if (r >= 0 && !json_is_array(rnodes))
		r = -RY_E_CORRUPT;
	if (r < 0 || !nodes || !all || !covered)
		goto out;
	json_array_foreach(rnodes, i, rn)
	{
		const char *id = json_string_value(json_object_get(rn, "id"));
		const char *host = json_string_value(json_object_get(rn, "hostname"));
		const struct store_node *cur = NULL;

		for (size_t k = 0; id && k < n; k++)
			if (strcmp(v[k]->id, id) == 0)
				cur = v[k];
		if (!host)
			continue;
		json_array_append_new(covered, json_string(host));
		if (!cur || strcmp(cur->state, "revoked") == 0)
			add_reason(nodes, all, host, "revoked after the sign-off");
		else
			node_drift(nodes, all, rn, cur);
	}
	/* A critical health event on a covered node since the sign-off (acknowledged or not: an
	 * acknowledgement says someone saw it, not that the node is as it was signed). */
	if (store_health_critical_since(st, so->cluster, so->created_at_ms, STALE_HEALTH_MAX, &hv,
					&hn) >= 0) {
		for (size_t k = hn; k-- > 0;) {
			char *why = NULL;

			if (!has_node(rnodes, hv[k].node_id) ||
			    asprintf(&why, "critical health event since the sign-off: %s (%s)",
				     hv[k].what, hv[k].source) < 0)
				continue;
			add_reason(nodes, all, hv[k].hostname, why);
			free(why);
		}
		store_health_events_free(hv, hn);
	}
	for (i = 0; i < n; i++)
		if (strcmp(v[i]->cluster, so->cluster) == 0 &&
		    strcmp(v[i]->state, "revoked") != 0 &&
		    v[i]->enrolled_at_ms > so->created_at_ms && !has_node(rnodes, v[i]->id))
			add_reason(nodes, all, v[i]->hostname, "joined after the sign-off");
	for (i = 0; i < nd; i++) {
		char *line = NULL;

		if (strcmp(deps[i]->cluster, so->cluster) != 0 || deps[i]->check_mode ||
		    deps[i]->created_at_ms <= so->created_at_ms)
			continue;
		if (asprintf(&line, "deployment %s applied %s %s after the sign-off", deps[i]->id,
			     deps[i]->playbook_name, deps[i]->playbook_version) > 0)
			json_array_append_new(all, json_string(line));
		free(line);
	}
	*ret = json_pack("{s:b, s:O, s:O, s:O}", "stale", json_array_size(all) > 0, "reasons", all,
			 "nodes", nodes, "covered", covered);
out:
	store_nodes_free(v, n);
	store_deployments_free(deps, nd);
	json_decref(nodes);
	json_decref(all);
	json_decref(covered);
	json_decref(rnodes);
	return r < 0 ? r : (*ret ? 0 : -ENOMEM);
}

/* ---- reading -------------------------------------------------------------------------------- */

static json_t *summary_json(const struct store_signoff *so)
{
	char head[160], label[96];

	so_headline(so->verdict, so->acceptance, so->excluded, head, sizeof(head));
	so_label(so->verdict, so->acceptance, so->excluded, label, sizeof(label));
	return json_pack(
		"{s:s, s:s, s:s, s:s, s:s?, s:s, s:s, s:s, s:I, s:o, s:I, s:b, s:i, s:s, s:s}",
		"id", so->id, "cluster", so->cluster, "campaign", so->campaign_id, "kind", so->kind,
		"baseline", so->baseline_id, "verdict", so->verdict, "sha256", so->sha256, "actor",
		so->actor, "created_at_ms", (json_int_t)so->created_at_ms, "created_at",
		so_time_json(so->created_at_ms), "size", (json_int_t)so->report_len, "acceptance",
		so->acceptance, "excluded", so->excluded, "headline", head, "label", label);
}

static int get_signoff(struct store *st, const char *id, bool bytes, struct store_signoff **ret,
		       struct ctl_error *err)
{
	int r = store_signoff_get(st, id, bytes, ret);

	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "id", "no sign-off %s", id);
	if (r < 0)
		return ctl_error_store(err, r, "reading the sign-off");
	return 0;
}

int ctl_signoff_files_get(struct store *st, const char *id, struct ctl_signoff_files *ret,
			  struct ctl_error *err)
{
	struct store_signoff *so = NULL;
	int r = get_signoff(st, id, true, &so, err);

	if (r < 0)
		return r;
	memset(ret, 0, sizeof(*ret));
	/* Taken from the store's struct, which then frees the rest. */
	ret->cluster = so->cluster;
	ret->report = so->report;
	ret->report_len = so->report_len;
	ret->signature = so->signature;
	so->cluster = so->report = so->signature = NULL;
	store_signoff_free(so);
	return 0;
}

void ctl_signoff_files_done(struct ctl_signoff_files *f)
{
	if (!f)
		return;
	free(f->cluster);
	free(f->report);
	free(f->signature);
	memset(f, 0, sizeof(*f));
}

int ctl_signoff_get(struct store *st, const char *id, bool with_report, json_t **ret,
		    struct ctl_error *err)
{
	struct store_signoff *so = NULL;
	json_t *o = NULL, *report = NULL, *stale = NULL;
	int r = get_signoff(st, id, true, &so, err);

	if (r < 0)
		return r;
	report = json_loadb(so->report, so->report_len, 0, NULL);
	o = summary_json(so);
	if (!report || !o) {
		r = ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INTERNAL, "id",
				  "sign-off %s: its stored report does not parse", id);
		goto out;
	}
	r = staleness(st, so, &stale);
	if (r < 0) {
		ctl_error_store(err, r, "checking for staleness");
		goto out;
	}
	json_object_update(o, stale);
	json_object_set(o, "summary", json_object_get(report, "summary"));
	json_object_set_new(o, "acceptance_reasons",
			    json_is_array(json_object_get(report, "acceptance_reasons"))
				    ? json_incref(json_object_get(report, "acceptance_reasons"))
				    : json_pack("[s]", "signed before acceptance rules"));
	json_object_set_new(o, "excluded_nodes",
			    json_is_array(json_object_get(report, "excluded"))
				    ? json_incref(json_object_get(report, "excluded"))
				    : json_array());
	if (with_report)
		json_object_set(o, "report", report);
	*ret = o;
	o = NULL;
out:
	json_decref(o);
	json_decref(report);
	json_decref(stale);
	store_signoff_free(so);
	return r;
}

int ctl_signoff_list(struct store *st, const char *cluster, size_t limit, json_t **ret,
		     struct ctl_error *err)
{
	struct store_signoff **v = NULL;
	size_t n = 0;
	json_t *arr = json_array();
	int r = arr ? store_signoffs_list(st, cluster, limit, &v, &n) : -ENOMEM;

	if (r < 0) {
		json_decref(arr);
		return ctl_error_store(err, r, "listing sign-offs");
	}
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, summary_json(v[i]));
	store_signoffs_free(v, n);
	*ret = arr;
	return 0;
}

int ctl_signoff_staleness(struct store *st, json_t **ret, struct ctl_error *err)
{
	struct store_signoff **v = NULL;
	size_t n = 0;
	json_t *out = json_object();
	int r = out ? store_signoffs_list(st, NULL, 10000, &v, &n) : -ENOMEM;

	for (size_t i = 0; r >= 0 && i < n; i++) {
		json_t *stale = NULL;

		if (json_object_get(out, v[i]->cluster))
			continue; /* an older one */
		r = staleness(st, v[i], &stale);
		if (r >= 0) {
			json_object_set_new(stale, "signoff", json_string(v[i]->id));
			json_object_set_new(out, v[i]->cluster, stale);
		}
	}
	store_signoffs_free(v, n);
	if (r < 0) {
		json_decref(out);
		return ctl_error_store(err, r, "checking sign-offs for staleness");
	}
	*ret = out;
	return 0;
}

/* ---- creating ------------------------------------------------------------------------------- */

static int campaign_signable(struct store *st, const char *campaign_id, struct store_campaign **ret,
			     struct ctl_error *err)
{
	struct store_signoff *so = NULL;
	int r = store_campaign_get(st, campaign_id, ret);

	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "campaign", "no campaign %s",
				     campaign_id);
	if (r < 0)
		return ctl_error_store(err, r, "reading the campaign");
	if (strcmp((*ret)->state, "passed") != 0 && strcmp((*ret)->state, "failed") != 0) {
		r = ctl_error_set(err, -RY_E_REFUSED, CTL_ERR_CONFLICT, "campaign",
				  "campaign %s is %s%s%s: only a campaign that finished (passed or "
				  "failed) can be signed off",
				  campaign_id, (*ret)->state, (*ret)->error ? ": " : "",
				  (*ret)->error ? (*ret)->error : "");
		goto fail;
	}
	r = store_signoff_of_campaign(st, campaign_id, &so);
	if (r >= 0) {
		r = ctl_error_set(err, -RY_E_EXISTS, CTL_ERR_CONFLICT, "campaign",
				  "campaign %s is signed off already: %s", campaign_id, so->id);
		store_signoff_free(so);
		goto fail;
	}
	if (r != -RY_E_NOT_FOUND) {
		ctl_error_store(err, r, "reading sign-offs");
		goto fail;
	}
	return 0;
fail:
	store_campaign_free(*ret);
	*ret = NULL;
	return r;
}

/* The baseline a campaign's options name (NULL when none), with its bytes. */
static int baseline_of(struct store *st, const struct store_campaign *m, struct store_signoff **ret,
		       struct ctl_error *err)
{
	json_t *options = json_loads(m->options_json, 0, NULL);
	const char *id = json_string_value(json_object_get(options, "baseline"));
	int r = 0;

	*ret = NULL;
	if (id) {
		r = store_signoff_get(st, id, true, ret);
		if (r == -RY_E_NOT_FOUND)
			r = ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "baseline",
					  "the baseline %s of campaign %s does not exist", id,
					  m->id);
		else if (r < 0)
			r = ctl_error_store(err, r, "reading the baseline");
	}
	json_decref(options);
	return r;
}

static int sign_bytes(struct ctl_state *state, const char *bytes, size_t len, char **ret_p7s,
		      struct ctl_error *err)
{
	X509 *cert = NULL;
	EVP_PKEY *key = NULL;
	char why[256] = "";
	int r = ctl_signer_load(state, &cert, &key, why, sizeof(why));

	if (r < 0)
		return ctl_error_set(err, r, CTL_ERR_INTERNAL, NULL, "%s", why);
	r = pki_cms_sign(cert, key, state->ca_cert, bytes, len, ret_p7s);
	X509_free(cert);
	EVP_PKEY_free(key);
	if (r < 0)
		return ctl_error_set(err, r, CTL_ERR_INTERNAL, NULL, "signing: %s", ry_strerror(r));
	return 0;
}

int ctl_signoff_create(struct ctl_state *state, const char *campaign_id, const char *actor,
		       json_t **ret, struct ctl_error *err)
{
	struct store *st = state->store;
	struct store_campaign *m = NULL;
	struct store_signoff *base = NULL;
	json_t *report = NULL;
	char *bytes = NULL, *p7s = NULL, *nodes = NULL, sha[SO_SHA256_TEXT_LEN], id[20], hex[9];
	unsigned char rnd[4];
	size_t len = 0;
	int64_t now = util_now_unix_ms();
	int r;

	if (!campaign_id || !campaign_id[0])
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "campaign",
				     "a campaign id is required");
	r = campaign_signable(st, campaign_id, &m, err);
	if (r >= 0)
		r = baseline_of(st, m, &base, err);
	if (r < 0)
		goto out;
	r = util_random_bytes(rnd, sizeof(rnd));
	if (r < 0) {
		ctl_error_set(err, r, CTL_ERR_INTERNAL, NULL, "no random id");
		goto out;
	}
	util_hex(rnd, sizeof(rnd), hex);
	snprintf(id, sizeof(id), "so-%s", hex);
	r = so_report_build(st, m, state->ca_fingerprint, base, id, now, &report, err);
	if (r < 0)
		goto out;
	bytes = so_report_bytes(report, &len);
	if (!bytes) {
		r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
		goto out;
	}
	so_sha256_text(bytes, len, sha);
	nodes = json_dumps(json_object_get(report, "nodes"), JSON_COMPACT);
	if (!nodes) {
		r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
		goto out;
	}
	r = sign_bytes(state, bytes, len, &p7s, err);
	if (r < 0)
		goto out;
	{
		struct store_signoff_new n = {
			.id = id,
			.cluster = m->cluster,
			.campaign_id = m->id,
			.kind = base ? "revalidation" : "signoff",
			.baseline_id = base ? base->id : NULL,
			.verdict = json_string_value(json_object_get(report, "verdict")),
			.sha256 = sha,
			.report = bytes,
			.report_len = len,
			.signature = p7s,
			.nodes_json = nodes,
			.actor = actor ? actor : "admin",
			.acceptance = json_is_true(json_object_get(report, "acceptance")),
			.excluded = (int)json_array_size(json_object_get(report, "excluded")),
		};

		if (!n.verdict)
			n.verdict = "incomplete";
		r = store_signoff_create(st, &n, now);
	}
	if (r == -RY_E_EXISTS) {
		ctl_error_set(err, r, CTL_ERR_CONFLICT, "campaign",
			      "campaign %s was signed off meanwhile", campaign_id);
		goto out;
	}
	if (r < 0) {
		ctl_error_store(err, r, "storing the sign-off");
		goto out;
	}
	r = ctl_signoff_get(st, id, false, ret, err);
out:
	store_campaign_free(m);
	store_signoff_free(base);
	json_decref(report);
	free(bytes);
	free(p7s);
	free(nodes);
	return r;
}

/* ---- export -----------------------------------------------------------------------------------
 */

static int write_one(const char *dir, const char *name, const void *data, size_t len, json_t *files,
		     struct ctl_error *err)
{
	char *path = NULL;
	int r;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	r = fs_write_file_atomic(path, data, len, 0644);
	if (r < 0)
		ctl_error_set(err, r, CTL_ERR_INVALID, "dir", "%s: %s", path, ry_strerror(r));
	else
		json_array_append_new(files, json_string(path));
	free(path);
	return r;
}

int ctl_signoff_export(struct ctl_state *state, const char *id, const char *dir, json_t **ret,
		       struct ctl_error *err)
{
	struct store_signoff *so = NULL;
	json_t *files = json_array();
	char *html = NULL, why[256] = "";
	size_t hlen = 0;
	int r;

	if (!dir || !dir[0])
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "dir",
				     "a directory is required");
	r = get_signoff(state->store, id, true, &so, err);
	if (r < 0)
		goto out;
	r = so_html_render(so->report, so->report_len, &html, &hlen, why, sizeof(why));
	if (r < 0) {
		ctl_error_set(err, r, CTL_ERR_INTERNAL, NULL, "rendering %s: %s", id, why);
		goto out;
	}
	r = fs_mkdir_p(dir, 0755);
	if (r < 0) {
		ctl_error_set(err, r, CTL_ERR_INVALID, "dir", "%s: %s", dir, ry_strerror(r));
		goto out;
	}
	if ((r = write_one(dir, "signoff.json", so->report, so->report_len, files, err)) < 0 ||
	    (r = write_one(dir, "signoff.p7s", so->signature, strlen(so->signature), files, err)) <
		    0 ||
	    (r = write_one(dir, "signoff.html", html, hlen, files, err)) < 0 ||
	    (r = write_one(dir, "ca.pem", state->ca_pem, strlen(state->ca_pem), files, err)) < 0)
		goto out;
	*ret = json_pack("{s:s, s:s, s:s, s:O}", "id", so->id, "dir", dir, "sha256", so->sha256,
			 "files", files);
out:
	json_decref(files);
	free(html);
	store_signoff_free(so);
	return r;
}

/* ---- verification -------------------------------------------------------------------------- */

int ctl_signoff_verify_stored(struct ctl_state *state, const char *id, json_t **ret,
			      struct ctl_error *err)
{
	struct store_signoff *so = NULL;
	json_t *o;
	int r = store_signoff_get(state->store, id, true, &so);

	if (r == -RY_E_NOT_FOUND)
		return ctl_error_set(err, r, CTL_ERR_NOT_FOUND, "id", "no sign-off %s", id);
	if (r < 0)
		return ctl_error_store(err, r, "reading the sign-off");
	o = json_pack("{s:s, s:s}", "id", so->id, "cluster", so->cluster);
	if (!o) {
		store_signoff_free(so);
		return ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	}
	so_verify_bytes(o, so->report, so->report_len, so->signature, strlen(so->signature),
			state->ca_pem, strlen(state->ca_pem), "the controller's CA");
	store_signoff_free(so);
	*ret = o;
	return 0;
}
