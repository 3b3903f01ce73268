/* The health service: readiness and metrics reads of the store, and the backup and restore entry
 * points. */
#include "controller/health.h"
#include "controller/watch.h"

#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/hist.h"
#include "common/util/util.h"
#include "controller/nodes.h"
#include "controller/state.h"
#include "controller/store/store.h"
#include "controller/store/store_backup.h"
#include "controller/store/store_campaign.h"
#include "controller/store/store_deploy.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DB_NAME "controller.db"

int ctl_health_store(struct store *st, struct ctl_error *err)
{
	struct store_campaign **v = NULL;
	size_t n = 0;
	int r = store_campaigns_list(st, true, 0, &v, &n);

	store_campaigns_free(v, n);
	if (r < 0)
		return ctl_error_set(
			err, r, ctl_store_transient(r) ? CTL_ERR_UNAVAILABLE : CTL_ERR_INTERNAL,
			NULL, "%s", ry_strerror(r));
	return 0;
}

int ctl_metrics_nodes(struct store *st, FILE *f, struct ctl_error *err)
{
	static const char *const nstates[] = {"online", "offline", "revoked"};
	static const char *const sstates[] = {"current", "stale", "uncovered", "none"};
	json_t *nodes = NULL, *count, *e;
	size_t i;
	int r = ctl_nodes_list(st, NULL, NULL, false, &nodes, err);

	if (r < 0)
		return r;
	count = json_object();
	fprintf(f, "# HELP railyard_nodes Enrolled nodes by state.\n"
		   "# TYPE railyard_nodes gauge\n");
	json_array_foreach(nodes, i, e)
	{
		const char *s = json_string_value(json_object_get(e, "state"));

		json_object_set_new(
			count, s, json_integer(json_integer_value(json_object_get(count, s)) + 1));
	}
	for (i = 0; i < RY_ARRAY_SIZE(nstates); i++)
		fprintf(f, "railyard_nodes{state=\"%s\"} %lld\n", nstates[i],
			(long long)json_integer_value(json_object_get(count, nstates[i])));
	json_object_clear(count);
	/* Each node against its cluster's newest sign-off (stale: drifted, revoked, or a critical
	 * health event since; docs/health.md). */
	fprintf(f, "# HELP railyard_nodes_signoff Nodes by their standing against their cluster's "
		   "newest sign-off.\n# TYPE railyard_nodes_signoff gauge\n");
	json_array_foreach(nodes, i, e)
	{
		const char *s =
			json_string_value(json_object_get(json_object_get(e, "signoff"), "state"));

		if (s)
			json_object_set_new(
				count, s,
				json_integer(json_integer_value(json_object_get(count, s)) + 1));
	}
	for (i = 0; i < RY_ARRAY_SIZE(sstates); i++)
		fprintf(f, "railyard_nodes_signoff{state=\"%s\"} %lld\n", sstates[i],
			(long long)json_integer_value(json_object_get(count, sstates[i])));
	json_decref(count);
	json_decref(nodes);
	return 0;
}

/* A gauge per distinct state of n objects (pointers; state a char * at offset state_off). */
static void metrics_by_state(FILE *f, const char *name, const char *help, void *objs, size_t n,
			     size_t state_off)
{
	json_t *count = json_object(), *v;
	const char *k;

	fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
	for (size_t i = 0; i < n; i++) {
		const char *s = *(char **)((char *)((void **)objs)[i] + state_off);

		json_object_set_new(
			count, s, json_integer(json_integer_value(json_object_get(count, s)) + 1));
	}
	json_object_foreach(count, k, v)
		fprintf(f, "%s{state=\"%s\"} %lld\n", name, k, (long long)json_integer_value(v));
	json_decref(count);
}

int ctl_metrics_objects(struct store *st, FILE *f, struct ctl_error *err)
{
	struct store_deployment **deps = NULL;
	struct store_campaign **camps = NULL;
	size_t nd = 0, nc = 0;
	int r = store_deployments_list(st, false, 100000, &deps, &nd);

	if (r >= 0)
		r = store_campaigns_list(st, false, 100000, &camps, &nc);
	if (r < 0) {
		r = ctl_error_store(err, r, "metrics unavailable now");
		goto out;
	}
	metrics_by_state(f, "railyard_deployments", "Deployments by state.", deps, nd,
			 offsetof(struct store_deployment, state));
	metrics_by_state(f, "railyard_campaigns", "Validation campaigns by state.", camps, nc,
			 offsetof(struct store_campaign, state));
	fprintf(f, "# HELP railyard_store_transaction_duration_seconds The store's write "
		   "transactions, BEGIN to COMMIT (fsync and lock waits included).\n"
		   "# TYPE railyard_store_transaction_duration_seconds histogram\n");
	ry_hist_write(f, "railyard_store_transaction_duration_seconds", "", store_tx_latency(st));
	ctl_watch_metrics(st, util_now_unix_ms(), f);
out:
	store_deployments_free(deps, nd);
	store_campaigns_free(camps, nc);
	return r;
}

/* Is path the database db, or one of its side files (a backup written there would destroy
 * what it copies)? */
static bool is_live_file(const char *path, const char *db)
{
	static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
	char dbreal[PATH_MAX], dirreal[PATH_MAX], want[PATH_MAX + 16], *d, *b;
	bool same = false;

	if (!realpath(db, dbreal))
		return false;
	d = strdup(path);
	b = strdup(path);
	if (d && b && realpath(dirname(d), dirreal)) {
		char got[PATH_MAX * 2 + 2];

		snprintf(got, sizeof(got), "%s/%s", dirreal, basename(b));
		for (size_t i = 0; i < RY_ARRAY_SIZE(sfx) && !same; i++) {
			snprintf(want, sizeof(want), "%s%s", dbreal, sfx[i]);
			same = strcmp(got, want) == 0;
		}
	}
	free(d);
	free(b);
	return same;
}

static void info_from_store(struct ctl_backup_info *to, const struct store_backup_info *from)
{
	to->schema_version = from->schema_version;
	to->nodes = from->nodes;
	to->deployments = from->deployments;
	to->step_results = from->step_results;
	to->campaigns = from->campaigns;
	to->bench_runs = from->bench_runs;
}

/* A store_backup()/store_restore() failure: busy or disk full pass, the rest is internal. */
static int backup_error(struct ctl_error *err, int r, const char *why)
{
	return ctl_error_set(err, r,
			     r == -RY_E_BUSY || r == -RY_E_DISK_FULL ? CTL_ERR_UNAVAILABLE
								     : CTL_ERR_INTERNAL,
			     NULL, "%s", why[0] ? why : ry_strerror(r));
}

int ctl_backup(const char *state_dir, const char *dest, struct ctl_backup_info *ret_info,
	       struct ctl_error *err)
{
	struct store_backup_info info;
	char why[512] = "", *db = NULL;
	int r;

	if (!dest || !dest[0])
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "to",
				     "no backup file named");
	if (!state_dir || !(db = fs_path_join(state_dir, DB_NAME)))
		return ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	if (access(db, F_OK) < 0) {
		r = -errno;
		r = ctl_error_set(err, r, r == -ENOENT ? CTL_ERR_NOT_FOUND : CTL_ERR_INTERNAL,
				  "state_dir", "%s: %s%s", db, ry_strerror(r),
				  r == -EACCES ? " (run as root or as the controller's user)" : "");
		goto out;
	}
	if (is_live_file(dest, db)) {
		r = ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "to",
				  "%s is the database itself", dest);
		goto out;
	}
	r = store_backup(db, dest, &info, why, sizeof(why));
	if (r < 0) {
		r = backup_error(err, r, why);
		goto out;
	}
	if (ret_info)
		info_from_store(ret_info, &info);
out:
	free(db);
	return r;
}

static bool exists(const char *dir, const char *name)
{
	char *p = fs_path_join(dir, name);
	bool v = p && access(p, F_OK) == 0;

	free(p);
	return v;
}

int ctl_restore(const char *state_dir, const char *from, bool force,
		struct ctl_backup_info *ret_info, struct ctl_error *err)
{
	struct store_backup_info info;
	struct ctl_state *st = NULL;
	char why[512] = "", *db = NULL;
	long holder = 0;
	struct stat sb;
	int r, lock_fd = -1;

	if (!from || !from[0])
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "from",
				     "no backup file named");
	if (!state_dir)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "state_dir",
				     "no state directory named");
	/* The nodes' certificates chain to the CA that issued them: a database without it
	 * serves nobody. */
	if (!exists(state_dir, "ca.crt") || !exists(state_dir, "ca.key"))
		return ctl_error_set(
			err, -ENOENT, CTL_ERR_NOT_FOUND, "state_dir",
			"%s holds no CA (ca.crt, ca.key): restore into the backed-up "
			"controller's state directory, or a directory holding copies of its "
			"ca.crt, ca.key, server.crt and server.key",
			state_dir);
	/* Held for the whole restore: no serve starts on a half-restored directory. */
	r = fs_lock_dir(state_dir, CTL_SERVE_LOCK, &lock_fd, &holder);
	if (r == -RY_E_LOCKED)
		return ctl_error_set(err, r, CTL_ERR_CONFLICT, "state_dir",
				     "%s is served by railyard-controller (pid %ld); stop it first",
				     state_dir, holder);
	if (r < 0)
		return ctl_error_set(err, r, CTL_ERR_INTERNAL, "state_dir", "cannot lock %s/%s: %s",
				     state_dir, CTL_SERVE_LOCK, ry_strerror(r));
	db = fs_path_join(state_dir, DB_NAME);
	if (!db) {
		r = ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
		goto out;
	}
	r = store_backup_check(from, NULL, why, sizeof(why));
	if (r < 0) {
		r = ctl_error_set(err, r,
				  r == -RY_E_CORRUPT || r == -RY_E_SCHEMA || r == -ENOENT
					  ? CTL_ERR_INVALID
					  : CTL_ERR_INTERNAL,
				  "from", "%s", why[0] ? why : ry_strerror(r));
		goto out;
	}
	if (is_live_file(from, db)) {
		r = ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "from",
				  "%s is the database itself", from);
		goto out;
	}
	if (!force && stat(db, &sb) == 0 && sb.st_size > 0) {
		r = ctl_error_set(err, -RY_E_EXISTS, CTL_ERR_CONFLICT, "force",
				  "%s exists; --force replaces it with %s", db, from);
		goto out;
	}
	r = store_restore(from, db, &info, why, sizeof(why));
	if (r < 0) {
		r = backup_error(err, r, why);
		goto out;
	}
	if (ret_info)
		info_from_store(ret_info, &info);
	/* What serve will do with it: migrate, check, load the CA and the server key. */
	why[0] = '\0';
	r = ctl_state_open(state_dir, true, &st, why, sizeof(why));
	if (r < 0)
		r = ctl_error_set(err, r, CTL_ERR_INTERNAL, "restored", "%s",
				  why[0] ? why : ry_strerror(r));
out:
	ctl_state_free(st);
	free(db);
	close(lock_fd);
	return r;
}
