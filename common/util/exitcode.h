/* The exit codes of every command of railyard and railyard-controller: one table, documented in
 * docs/operations.md ("Exit codes") and printed by `railyard --help`. Append only. */
#ifndef RAILYARD_COMMON_UTIL_EXITCODE_H
#define RAILYARD_COMMON_UTIL_EXITCODE_H

enum ry_exit {
	RY_EXIT_OK = 0,
	RY_EXIT_FAILED = 1,	 /* a failed verdict or deployment, a refused request (other 4xx) */
	RY_EXIT_USAGE = 2,	 /* bad command line, no controller named */
	RY_EXIT_AUTH = 3,	 /* not authenticated or not allowed (HTTP 401, 403) */
	RY_EXIT_NOT_FOUND = 4,	 /* HTTP 404 */
	RY_EXIT_UNREACHABLE = 5, /* connection refused, TLS failure, timeout, HTTP 5xx */
	RY_EXIT_LOCKED = 6,	 /* the state directory is busy: served or being restored */
	RY_EXIT_INTERRUPTED = 130,
};

/* The table as `--help` prints it. */
#define RY_EXIT_HELP                                                                               \
	"Exit codes (every command of railyard and railyard-controller):\n"                        \
	"  0    done\n"                                                                            \
	"  1    a failed verdict or deployment, or a request refused (HTTP 4xx not below)\n"       \
	"  2    usage\n"                                                                           \
	"  3    not authenticated or not allowed (HTTP 401, 403)\n"                                \
	"  4    not found (HTTP 404)\n"                                                            \
	"  5    unreachable: no controller serving, connection refused, TLS failure, timeout,\n"   \
	"       HTTP 5xx\n"                                                                        \
	"  6    the state directory is busy: a controller serves it or a restore holds it\n"       \
	"  130  interrupted\n"

#endif
