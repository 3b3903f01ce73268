/* railyard-controller backup and restore: a copy of the database through SQLite's backup API,
 * taken while a controller serves it (a read, never a write: the serving controller stays the
 * only writer), and the offline restore of such a copy into a state directory nobody serves. */
#include "controller/cli/cli.h"
#include "common/util/exitcode.h"
#include "controller/state.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DB_NAME "controller.db"

enum { OPT_STATE_DIR = 1000, OPT_TO, OPT_FROM, OPT_FORCE };

/* "WHAT: schema vN, N nodes, ..." (what: paths given by the operator, printed escaped). */
static void print_info(const char *what, const struct store_backup_info *i)
{
	util_fprintf_safe(stdout,
			  "%s: schema v%d, %lld nodes, %lld deployments, %lld step results, "
			  "%lld campaigns, %lld benchmark runs (integrity ok)\n",
			  what, i->schema_version, (long long)i->nodes, (long long)i->deployments,
			  (long long)i->step_results, (long long)i->campaigns,
			  (long long)i->bench_runs);
}

/* Is path (which may not exist yet) the database file db, or its -wal, -shm or -journal? */
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

static int cmd_backup(const struct cli_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"state-dir", required_argument, NULL, OPT_STATE_DIR},
		{"to", required_argument, NULL, OPT_TO},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	const char *state_dir = CTL_DEFAULT_STATE_DIR, *to = NULL;
	struct store_backup_info info;
	char err[512] = "", *db = NULL;
	int c, r, rc = 1;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_STATE_DIR:
			state_dir = optarg;
			break;
		case OPT_TO:
			to = optarg;
			break;
		case 'h':
			return cli_usage(cmd, stdout);
		default:
			return cli_usage(cmd, stderr);
		}
	}
	if ((r = cli_positionals(cmd, argc, argv, 0)) != 0)
		return r;
	if (!to || !to[0])
		return cli_bad("--to", "(missing)");
	db = fs_path_join(state_dir, DB_NAME);
	if (!db) {
		log_error("backup: out of memory");
		return 1;
	}
	if (access(db, F_OK) < 0) {
		r = -errno;
		log_error("backup: %s: %s%s", db, ry_strerror(r),
			  r == -EACCES ? " (run as root or as the controller's user)" : "");
		goto out;
	}
	if (is_live_file(to, db)) {
		log_error("backup: --to %s is the database itself", to);
		goto out;
	}
	r = store_backup(db, to, &info, err, sizeof(err));
	if (r < 0) {
		log_error("backup: %s", err[0] ? err : ry_strerror(r));
		goto out;
	}
	{
		char what[PATH_MAX * 2 + 32];

		snprintf(what, sizeof(what), "backup of %s written to %s", db, to);
		print_info(what, &info);
	}
	printf("(the database only: keep ca.key, server.key and signoff.key of %s with it)\n",
	       state_dir);
	rc = 0;
out:
	free(db);
	return rc;
}

static bool exists(const char *dir, const char *name)
{
	char *p = fs_path_join(dir, name);
	bool v = p && access(p, F_OK) == 0;

	free(p);
	return v;
}

static int cmd_restore(const struct cli_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"state-dir", required_argument, NULL, OPT_STATE_DIR},
		{"from", required_argument, NULL, OPT_FROM},
		{"force", no_argument, NULL, OPT_FORCE},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	const char *state_dir = CTL_DEFAULT_STATE_DIR, *from = NULL;
	struct store_backup_info info;
	struct ctl_state *st = NULL;
	char err[512] = "", *db = NULL;
	bool force = false;
	long holder = 0;
	struct stat sb;
	int c, r, rc = 1, lock_fd = -1;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_STATE_DIR:
			state_dir = optarg;
			break;
		case OPT_FROM:
			from = optarg;
			break;
		case OPT_FORCE:
			force = true;
			break;
		case 'h':
			return cli_usage(cmd, stdout);
		default:
			return cli_usage(cmd, stderr);
		}
	}
	if ((r = cli_positionals(cmd, argc, argv, 0)) != 0)
		return r;
	if (!from || !from[0])
		return cli_bad("--from", "(missing)");
	/* The nodes' certificates chain to the CA that issued them: a database without it
	 * serves nobody. */
	if (!exists(state_dir, "ca.crt") || !exists(state_dir, "ca.key")) {
		log_error("restore: %s holds no CA (ca.crt, ca.key): restore into the backed-up "
			  "controller's state directory, or a directory holding copies of its "
			  "ca.crt, ca.key, server.crt and server.key",
			  state_dir);
		return 1;
	}
	/* Held for the whole restore: no serve starts on a half-restored directory. */
	r = fs_lock_dir(state_dir, CTL_SERVE_LOCK, &lock_fd, &holder);
	if (r == -RY_E_LOCKED) {
		log_error("restore: %s is served by railyard-controller (pid %ld); stop it first",
			  state_dir, holder);
		return RY_EXIT_LOCKED;
	}
	if (r < 0) {
		log_error("restore: cannot lock %s/%s: %s", state_dir, CTL_SERVE_LOCK,
			  ry_strerror(r));
		return 1;
	}
	db = fs_path_join(state_dir, DB_NAME);
	if (!db) {
		log_error("restore: out of memory");
		goto out;
	}
	r = store_backup_check(from, &info, err, sizeof(err));
	if (r < 0) {
		log_error("restore: %s", err[0] ? err : ry_strerror(r));
		goto out;
	}
	if (is_live_file(from, db)) {
		log_error("restore: --from %s is the database itself", from);
		goto out;
	}
	if (!force && stat(db, &sb) == 0 && sb.st_size > 0) {
		log_error("restore: %s exists; --force replaces it with %s", db, from);
		goto out;
	}
	r = store_restore(from, db, &info, err, sizeof(err));
	if (r < 0) {
		log_error("restore: %s", err[0] ? err : ry_strerror(r));
		goto out;
	}
	{
		char what[PATH_MAX * 2 + 32];

		snprintf(what, sizeof(what), "restored %s from %s", db, from);
		print_info(what, &info);
	}
	/* What serve will do with it: migrate, check, load the CA and the server key. */
	if (cli_open_state(state_dir, true, &st) < 0) {
		log_error("restore: the database is restored, but serve cannot open %s", state_dir);
		goto out;
	}
	rc = 0;
out:
	ctl_state_free(st);
	free(db);
	close(lock_fd);
	return rc;
}

const struct cli_command cli_backup_commands[] = {
	{"backup", "--to FILE [--state-dir D]",
	 "copy the database to FILE, also while a controller serves it (SQLite's backup API "
	 "on a read-only connection)",
	 cmd_backup},
	{"restore", "--from FILE [--force] [--state-dir D]",
	 "replace the database of a state directory nobody serves with a backup (checked "
	 "first; --force when it holds one)",
	 cmd_restore},
	{0},
};
