/* The controller's subcommands over the state directory and the server. */
#include "controller/admin.h"
#include "controller/state.h"
#include "common/log/log.h"
#include "common/rpc/rpc.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"
#include "common/facts/facts_doc.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int ctl_open_state(const char *dir, bool server, struct ctl_state **ret)
{
	char err[512] = "";
	int r = ctl_state_open(dir, server, ret, err, sizeof(err));

	if (r < 0)
		log_error("%s", err[0] ? err : ry_strerror(r));
	return r;
}

bool ctl_valid_cluster_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 64 || !isalnum((unsigned char)name[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("._-", name[i]))
			return false;
	return true;
}

int ctl_cmd_init(const char *state_dir, const char *const *sans, size_t n_sans)
{
	struct ctl_state *st = NULL;
	char err[512] = "";
	int r;

	r = ctl_state_init(state_dir, sans, n_sans, err, sizeof(err));
	if (r < 0) {
		log_error("init: %s", err[0] ? err : ry_strerror(r));
		return 1;
	}
	if (ctl_open_state(state_dir, false, &st) < 0)
		return 1;
	printf("initialised %s\nca-fingerprint: %s\n", state_dir, st->ca_fingerprint);
	ctl_state_free(st);
	return 0;
}

static void format_time(int64_t unix_ms, char *buf, size_t len)
{
	time_t t = (time_t)(unix_ms / 1000);
	struct tm tm;

	if (unix_ms <= 0) {
		snprintf(buf, len, "-");
		return;
	}
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int ctl_cmd_token_create(const char *state_dir, const char *cluster, int64_t ttl_ms, int uses,
			 const char *controller_addr)
{
	struct ctl_state *st = NULL;
	char *token = NULL, when[64];
	int64_t now = util_now_unix_ms();
	int r;

	if (!ctl_valid_cluster_name(cluster)) {
		char *safe = util_escape(cluster, false);

		log_error("token create: invalid cluster name '%s': use 1-64 letters, digits, '.', "
			  "'_' or '-', starting with a letter or digit",
			  safe ? safe : "?");
		free(safe);
		return 2;
	}
	if (ctl_open_state(state_dir, false, &st) < 0)
		return 1;
	r = store_token_create(st->store, cluster, ttl_ms, uses, now, &token);
	if (r < 0) {
		log_error("token create: %s", ry_strerror(r));
		ctl_state_free(st);
		return 1;
	}
	format_time(now + ttl_ms, when, sizeof(when));
	printf("token: %s\nca-fingerprint: %s\ncluster: %s\nexpires: %s\nuses: %d\n", token,
	       st->ca_fingerprint, cluster, when, uses);
	printf("\nOn each node:\n  railyard-agent enroll --controller %s --token %s "
	       "--ca-fingerprint %s\n",
	       controller_addr ? controller_addr : "CONTROLLER:7443", token, st->ca_fingerprint);
	free(token);
	ctl_state_free(st);
	return 0;
}

int ctl_cmd_serve(const char *state_dir, const struct ctl_server_config *cfg)
{
	struct ctl_state *st = NULL;
	struct ctl_server *srv = NULL;
	char err[512] = "";
	long holder = 0;
	sigset_t set;
	int sig, rc = 1, lock_fd = -1, r;

	/* One serving controller per state directory: a second one would mark every node offline,
	 * overwrite controller.addr and race the first on the database. */
	r = fs_lock_dir(state_dir, CTL_SERVE_LOCK, &lock_fd, &holder);
	if (r == -RY_E_LOCKED) {
		log_error("serve: %s is already served by another railyard-controller (pid %ld); "
			  "stop it first",
			  state_dir, holder);
		return CTL_EXIT_LOCKED;
	}
	if (r < 0) {
		log_error("serve: cannot lock %s/%s: %s%s", state_dir, CTL_SERVE_LOCK,
			  ry_strerror(r),
			  r == -ENOENT ? " (run `railyard-controller init` first)" : "");
		return 1;
	}
	if (ctl_open_state(state_dir, true, &st) < 0)
		goto out;
	rpc_log_init();
	rpc_init();
	if (ctl_server_start(st, cfg, &srv, err, sizeof(err)) < 0) {
		log_error("serve: %s", err);
		goto out_rpc;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	for (;;) {
		if (sigwait(&set, &sig) != 0)
			continue;
		if (sig == SIGHUP) {
			log_info("SIGHUP: asked %d agents for fresh facts",
				 ctl_server_refresh_facts(srv));
			continue;
		}
		if (!ctl_server_failed(srv))
			log_info("received %s, shutting down",
				 sig == SIGINT ? "SIGINT" : "SIGTERM");
		break;
	}
	rc = ctl_server_failed(srv) ? 1 : 0;
out_rpc:
	ctl_server_free(srv);
	rpc_shutdown();
out:
	ctl_state_free(st);
	close(lock_fd);
	return rc;
}

static json_t *node_json(const struct store_node *n)
{
	json_t *o = json_object(), *facts = NULL;

	if (!o)
		return NULL;
	json_object_set_new(o, "id", json_string(n->id));
	json_object_set_new(o, "hostname", json_string(n->hostname));
	json_object_set_new(o, "cluster", json_string(n->cluster));
	json_object_set_new(o, "state", json_string(n->state));
	json_object_set_new(o, "cert_serial", json_string(n->cert_serial));
	json_object_set_new(o, "cert_fingerprint", json_string(n->cert_fingerprint));
	json_object_set_new(o, "enrolled_at_ms", json_integer(n->enrolled_at_ms));
	json_object_set_new(o, "last_seen_ms", json_integer(n->last_seen_ms));
	json_object_set_new(o, "agent_version",
			    n->agent_version ? json_string(n->agent_version) : json_null());
	if (n->facts_json)
		facts = json_loads(n->facts_json, 0, NULL);
	json_object_set_new(o, "facts", facts ? facts : json_null());
	return o;
}

int ctl_cmd_nodes(const char *state_dir, bool json, FILE *out)
{
	struct ctl_state *st = NULL;
	struct store_node **nodes = NULL;
	size_t n = 0;
	int r, rc = 1;

	if (ctl_open_state(state_dir, false, &st) < 0)
		return 1;
	r = store_nodes_list(st->store, &nodes, &n);
	if (r < 0) {
		log_error("nodes: %s", ry_strerror(r));
		goto out;
	}
	if (json) {
		json_t *arr = json_array();
		char *text;

		for (size_t i = 0; i < n; i++)
			json_array_append_new(arr, node_json(nodes[i]));
		text = json_dumps(arr, JSON_INDENT(2));
		json_decref(arr);
		if (!text)
			goto out;
		fprintf(out, "%s\n", text);
		free(text);
	} else {
		fprintf(out, "%-16s %-14s %-10s %-8s %-20s %-8s %s\n", "NODE", "HOSTNAME",
			"CLUSTER", "STATE", "LAST SEEN", "AGENT", "FACTS");
		/* Host names, versions and facts come from the nodes: printed escaped. */
		for (size_t i = 0; i < n; i++) {
			char when[64], *summary = NULL;
			json_t *facts = nodes[i]->facts_json
						? json_loads(nodes[i]->facts_json, 0, NULL)
						: NULL;

			if (facts)
				summary = facts_summary(facts);
			json_decref(facts);
			format_time(nodes[i]->last_seen_ms, when, sizeof(when));
			util_fprintf_safe(out, "%-16s %-14s %-10s %-8s %-20s %-8s %s\n",
					  nodes[i]->id, nodes[i]->hostname, nodes[i]->cluster,
					  nodes[i]->state, when,
					  nodes[i]->agent_version ? nodes[i]->agent_version : "-",
					  summary ? summary : "-");
			free(summary);
		}
	}
	rc = 0;
out:
	store_nodes_free(nodes, n);
	ctl_state_free(st);
	return rc;
}

int ctl_cmd_node_revoke(const char *state_dir, const char *node)
{
	struct ctl_state *st = NULL;
	char *id = NULL;
	int r;

	if (ctl_open_state(state_dir, false, &st) < 0)
		return 1;
	r = store_node_revoke(st->store, node, "admin", util_now_unix_ms(), &id);
	if (r < 0) {
		log_error("node revoke %s: %s", node, ry_strerror(r));
		ctl_state_free(st);
		return 1;
	}
	util_fprintf_safe(stdout, "revoked node %s\n", id);
	free(id);
	ctl_state_free(st);
	return 0;
}

int ctl_cmd_audit(const char *state_dir, size_t limit, FILE *out)
{
	struct ctl_state *st = NULL;
	struct store_audit_entry *e = NULL;
	size_t n = 0;
	int r;

	if (ctl_open_state(state_dir, false, &st) < 0)
		return 1;
	r = store_audit_list(st->store, limit, &e, &n);
	if (r < 0) {
		log_error("audit: %s", ry_strerror(r));
		ctl_state_free(st);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		char when[64];

		format_time(e[i].at_ms, when, sizeof(when));
		util_fprintf_safe(out, "%s %-8s %-14s %-16s %-8s %s\n", when, e[i].actor,
				  e[i].action, e[i].target ? e[i].target : "-", e[i].outcome,
				  e[i].detail ? e[i].detail : "");
	}
	store_audit_entries_free(e, n);
	ctl_state_free(st);
	return 0;
}
