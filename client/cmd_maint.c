/* railyard maintenance list|show|cancel, and the maintenance that `deploy --maintenance` and
 * `revalidate --maintenance` start (POST /api/v1/maintenances): followed until it ends, a line
 * whenever a batch or a node changes state. */
#include "client/rc.h"
#include "common/util/util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MT_POLL_MS 500

enum { OPT_FOLLOW = 900 };

static bool maint_final(const char *state)
{
	return strcmp(state, "succeeded") == 0 || strcmp(state, "failed") == 0 ||
	       strcmp(state, "cancelled") == 0;
}

/* Failures first (held out), then the nodes at work, then the rest: as the portal's pages. */
static int node_rank(const char *state)
{
	static const char *const order[] = {"held_out",	   "waiting_for_jobs", "draining",
					    "configuring", "rebooting",	       "validating",
					    "waiting",	   "resumed",	       "skipped"};

	for (size_t i = 0; i < RY_ARRAY_SIZE(order); i++)
		if (strcmp(state, order[i]) == 0)
			return (int)i;
	return (int)RY_ARRAY_SIZE(order);
}

static void print_node(FILE *out, const json_t *n)
{
	const json_t *jobs = json_object_get(n, "jobs"), *j;
	char buf[256] = "";
	size_t i, len = 0;

	json_array_foreach(jobs, i, j) if (len < sizeof(buf) - 1) len +=
		(size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? "," : "",
				 json_string_value(j) ? json_string_value(j) : "?");
	util_fprintf_safe(out, "  %-16s batch %-3lld %-17s%s%s%s%s\n", rc_str(n, "hostname", "?"),
			  (long long)json_integer_value(json_object_get(n, "batch")),
			  rc_str(n, "state", "?"), len ? "jobs " : "", buf,
			  json_string_value(json_object_get(n, "reason")) ? " " : "",
			  rc_str(n, "reason", ""));
}

static void print_maint(FILE *out, const json_t *m)
{
	const json_t *nodes = json_object_get(m, "nodes"), *b, *n;
	size_t i;

	util_fprintf_safe(out, "maintenance %s: %s of %s (%s %s), %s%s%s\n", rc_str(m, "id", "?"),
			  rc_str(m, "mode", "?"), rc_str(m, "cluster", "?"),
			  rc_str(json_object_get(m, "playbook"), "name", "?"),
			  rc_str(json_object_get(m, "playbook"), "version", ""),
			  rc_str(m, "state", "?"), JSTR(m, "reason") ? ": " : "",
			  rc_str(m, "reason", ""));
	util_fprintf_safe(out,
			  "  batches of %lld (asked %s; min_in_service %.2f), batch %lld of %lld, "
			  "%lld node(s) out of service, job timeout %llds\n",
			  JINT(m, "batch_size"), rc_str(m, "batch", "?"),
			  json_number_value(json_object_get(m, "min_in_service")),
			  JINT(m, "current_batch") + 1, JINT(m, "n_batches"),
			  JINT(m, "out_of_service"), JINT(m, "job_timeout_ms") / 1000);
	json_array_foreach(json_object_get(m, "batches"), i, b) util_fprintf_safe(
		out, "  batch %-3lld %-11s deployment %s, campaign %s%s%s\n", JINT(b, "batch"),
		rc_str(b, "state", "?"), rc_str(b, "deployment", "-"), rc_str(b, "campaign", "-"),
		JSTR(b, "signoff") ? ", sign-off " : "", rc_str(b, "signoff", ""));
	for (int rank = 0; rank <= 9; rank++)
		json_array_foreach(nodes, i, n) if (node_rank(rc_str(n, "state", "")) == rank)
			print_node(out, n);
}

/* Follow a maintenance until it ends: a line per batch and node change. 0 with *ret its last
 * view, or the exit code; Ctrl-C asks for its cancel once. */
static int follow(struct rc *rc, const char *path, FILE *out, json_t **ret)
{
	json_t *seen = json_object(), *v = NULL;
	bool asked = false;
	int r;

	if (!seen)
		return RC_FAILED;
	for (;;) {
		const json_t *e;
		size_t i;
		char key[300], val[600];

		if ((r = rc_api(rc, "GET", path, NULL, &v)) != 0)
			break;
		snprintf(val, sizeof(val), "%s %lld", rc_str(v, "state", "?"),
			 JINT(v, "current_batch"));
		if (strcmp(rc_str(seen, "", ""), val) != 0) {
			util_fprintf_safe(out, "maintenance %s: %s, batch %lld of %lld%s%s\n",
					  rc_str(v, "id", "?"), rc_str(v, "state", "?"),
					  JINT(v, "current_batch") + 1, JINT(v, "n_batches"),
					  JSTR(v, "reason") ? ": " : "", rc_str(v, "reason", ""));
			json_object_set_new(seen, "", json_string(val));
		}
		json_array_foreach(json_object_get(v, "batches"), i, e)
		{
			snprintf(key, sizeof(key), "batch %lld", JINT(e, "batch"));
			snprintf(val, sizeof(val), "%s", rc_str(e, "state", "?"));
			if (strcmp(rc_str(seen, key, ""), val) == 0 || strcmp(val, "waiting") == 0)
				continue;
			util_fprintf_safe(out, "  batch %lld: %s%s%s%s%s\n", JINT(e, "batch"), val,
					  JSTR(e, "deployment") ? ", deployment " : "",
					  rc_str(e, "deployment", ""),
					  JSTR(e, "campaign") ? ", campaign " : "",
					  rc_str(e, "campaign", ""));
			json_object_set_new(seen, key, json_string(val));
		}
		json_array_foreach(json_object_get(v, "nodes"), i, e)
		{
			char *jobs = json_dumps(json_object_get(e, "jobs"), JSON_COMPACT);

			snprintf(key, sizeof(key), "node %s", rc_str(e, "node_id", "?"));
			snprintf(val, sizeof(val), "%s %s %s", rc_str(e, "state", "?"),
				 jobs ? jobs : "", rc_str(e, "reason", ""));
			free(jobs);
			if (strcmp(rc_str(seen, key, "waiting [] "), val) == 0)
				continue;
			print_node(out, e);
			json_object_set_new(seen, key, json_string(val));
		}
		fflush(out);
		if (maint_final(rc_str(v, "state", "")))
			break;
		if (rc_interrupted && !asked) {
			char cancel[512];

			asked = true;
			util_fprintf_safe(stderr, "maintenance %s: interrupted; cancelling it\n",
					  rc_str(v, "id", "?"));
			snprintf(cancel, sizeof(cancel), "%s/cancel", path);
			r = rc_api(rc, "POST", cancel, NULL, NULL);
			if (r != 0 && r != RC_FAILED)
				break;
		}
		json_decref(v);
		v = NULL;
		usleep(MT_POLL_MS * 1000);
	}
	json_decref(seen);
	if (r != 0) {
		json_decref(v);
		return r;
	}
	*ret = v;
	return 0;
}

int rc_maint_run(struct rc *rc, const json_t *body, bool no_wait)
{
	json_t *made = NULL, *last = NULL;
	FILE *out = rc->json ? stderr : stdout;
	char path[256];
	int r;

	rc_catch_interrupts();
	if ((r = rc_api(rc, "POST", "/api/v1/maintenances", body, &made)) != 0)
		return r;
	if (no_wait) {
		if (rc->json)
			rc_print_json(stdout, made);
		else
			print_maint(out, made);
		json_decref(made);
		return RC_OK;
	}
	util_fprintf_safe(
		out, "maintenance %s: %lld node(s) of %s in %lld batch(es) of %lld\n",
		rc_str(made, "id", "?"), (long long)json_array_size(json_object_get(made, "nodes")),
		rc_str(made, "cluster", "?"), JINT(made, "n_batches"), JINT(made, "batch_size"));
	if ((r = rc_id_path(path, sizeof(path), "/api/v1/maintenances/", rc_str(made, "id", ""),
			    "")) != 0)
		goto out;
	if ((r = follow(rc, path, out, &last)) != 0)
		goto out;
	if (rc->json)
		rc_print_json(stdout, last);
	else
		print_maint(out, last);
	r = strcmp(rc_str(last, "state", ""), "succeeded") == 0 ? RC_OK : RC_FAILED;
out:
	json_decref(made);
	json_decref(last);
	return r;
}

static int cmd_list(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	json_t *items = NULL, *m;
	size_t i;
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, (const struct option[]){{0}})) != -1)
		return rc_usage(cmd, c);
	if ((r = rc_positionals(cmd, argc, argv, 0, false)) != 0)
		return r;
	if ((r = rc_api_list(rc, "/api/v1/maintenances", &items)) != 0)
		return r;
	if (rc->json) {
		r = rc_print_list(items);
		json_decref(items);
		return r;
	}
	printf("%-20s %-10s %-12s %-10s %-8s %s\n", "ID", "CLUSTER", "MODE", "STATE", "BATCH",
	       "REASON");
	json_array_foreach(items, i, m)
	{
		char batch[32];

		snprintf(batch, sizeof(batch), "%lld/%lld", JINT(m, "current_batch") + 1,
			 JINT(m, "n_batches"));
		util_fprintf_safe(stdout, "%-20s %-10s %-12s %-10s %-8s %s\n", rc_str(m, "id", "?"),
				  rc_str(m, "cluster", "?"), rc_str(m, "mode", "?"),
				  rc_str(m, "state", "?"), batch, rc_str(m, "reason", ""));
	}
	json_decref(items);
	return RC_OK;
}

static int cmd_show(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {{"follow", no_argument, NULL, OPT_FOLLOW}, {0}};
	bool follow_it = false;
	json_t *m = NULL;
	char path[256];
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, opts)) != -1) {
		if (c != OPT_FOLLOW)
			return rc_usage(cmd, c);
		follow_it = true;
	}
	if ((r = rc_positionals(cmd, argc, argv, 1, false)) != 0)
		return r;
	if ((r = rc_id_path(path, sizeof(path), "/api/v1/maintenances/", argv[optind], "")) != 0)
		return r;
	if (follow_it) {
		rc_catch_interrupts();
		r = follow(rc, path, rc->json ? stderr : stdout, &m);
	} else {
		r = rc_api(rc, "GET", path, NULL, &m);
	}
	if (r != 0)
		return r;
	if (rc->json)
		rc_print_json(stdout, m);
	else
		print_maint(stdout, m);
	json_decref(m);
	return RC_OK;
}

static int cmd_cancel(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	return rc_post_id(rc, cmd, argc, argv, "/api/v1/maintenances/", "/cancel",
			  "cancel requested: maintenance");
}

const struct rc_command rc_maint_commands[] = {
	{"maintenance list", "", "list maintenances, newest first", cmd_list},
	{"maintenance show", "ID [--follow]",
	 "show a maintenance: its batches and each node's state, failures first (--follow: until "
	 "it ends, a line per change)",
	 cmd_show},
	{"maintenance cancel", "ID",
	 "cancel a maintenance (nodes not changed yet are handed back; changed ones stay out)",
	 cmd_cancel},
	{0},
};
