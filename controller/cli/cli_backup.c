/* railyard-controller backup and restore: a copy of the database through SQLite's backup API,
 * taken while a controller serves it (a read, never a write: the serving controller stays the
 * only writer), and the offline restore of such a copy into a state directory nobody serves. */
#include "controller/cli/cli.h"
#include "common/util/exitcode.h"
#include "controller/health.h"
#include "controller/state.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define DB_NAME "controller.db"

enum { OPT_STATE_DIR = 1000, OPT_TO, OPT_FROM, OPT_FORCE };

/* "WHAT: schema vN, N nodes, ..." (what: paths given by the operator, printed escaped). */
static void print_info(const char *what, const struct ctl_backup_info *i)
{
	util_fprintf_safe(stdout,
			  "%s: schema v%d, %lld nodes, %lld deployments, %lld step results, "
			  "%lld campaigns, %lld benchmark runs (integrity ok)\n",
			  what, i->schema_version, (long long)i->nodes, (long long)i->deployments,
			  (long long)i->step_results, (long long)i->campaigns,
			  (long long)i->bench_runs);
}

/* The service's reason, after "CMD: "; a file refused for being the database itself is named
 * by its option (--to, --from), as the operator typed it. */
static void log_failure(const char *cmd, const struct ctl_error *err, int r, const char *opt)
{
	if (r == -RY_E_INVALID && strcmp(err->field, opt) == 0)
		log_error("%s: --%s %s", cmd, opt, err->message);
	else
		log_error("%s: %s", cmd, err->message);
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
	struct ctl_backup_info info;
	struct ctl_error err;
	char *db = NULL;
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
	ctl_error_init(&err);
	r = ctl_backup(state_dir, to, &info, &err);
	if (r < 0) {
		log_failure("backup", &err, r, "to");
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
	ctl_error_done(&err);
	free(db);
	return rc;
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
	struct ctl_backup_info info = {0};
	struct ctl_error err;
	char *db = NULL;
	bool force = false;
	int c, r, rc = 1;

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
	db = fs_path_join(state_dir, DB_NAME);
	if (!db) {
		log_error("restore: out of memory");
		return 1;
	}
	ctl_error_init(&err);
	r = ctl_restore(state_dir, from, force, &info, &err);
	/* The copy made (info written), with or without the open that follows it. */
	if (r >= 0 || (err.code && strcmp(err.field, "restored") == 0)) {
		char what[PATH_MAX * 2 + 32];

		snprintf(what, sizeof(what), "restored %s from %s", db, from);
		print_info(what, &info);
	}
	if (r < 0 && err.code && strcmp(err.field, "restored") == 0) {
		log_error("%s", err.message);
		log_error("restore: the database is restored, but serve cannot open %s", state_dir);
		goto out;
	}
	if (r < 0) {
		log_failure("restore", &err, r, "from");
		rc = r == -RY_E_LOCKED ? RY_EXIT_LOCKED : 1;
		goto out;
	}
	rc = 0;
out:
	ctl_error_done(&err);
	free(db);
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
