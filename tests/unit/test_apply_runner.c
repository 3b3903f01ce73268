/* Unit tests for the apply engine's command runner: exit status and captured output, bounded
 * output, timeouts that kill the whole process group (SIGTERM, then SIGKILL), missing programs
 * and the sysroot PATH seam that lets test doubles shadow the real programs. */
#include "nodeagent/apply/runner.h"

#include "common/util/util.h"
#include "tests/unit/test_apply_util.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static int run(const char *const *argv, int64_t timeout_ms, size_t max, const char *sysroot,
	       struct runner_result *res)
{
	struct runner_cmd c = {.argv = argv,
			       .timeout_ms = timeout_ms,
			       .output_max = max,
			       .sysroot = sysroot,
			       .grace_ms = 300};

	return runner_run(&c, res);
}

static void test_exit_and_output(void **state)
{
	struct runner_result res;
	char desc[64];

	(void)state;
	assert_int_equal(
		run((const char *const[]){"sh", "-c", "echo out; echo err >&2; exit 3", NULL}, 0, 0,
		    NULL, &res),
		0);
	assert_int_equal(res.exit_code, 3);
	assert_int_equal(res.term_signal, 0);
	assert_false(res.timed_out);
	assert_string_equal(res.out, "out\n");
	assert_string_equal(res.err, "err\n");
	assert_string_equal(runner_result_describe(&res, desc, sizeof(desc)), "exit 3");
	runner_result_done(&res);
	runner_result_done(&res); /* idempotent */

	/* argv is never given to a shell: metacharacters arrive verbatim */
	assert_int_equal(
		run((const char *const[]){"echo", "$(id)", ";", "*", NULL}, 0, 0, NULL, &res), 0);
	assert_string_equal(res.out, "$(id) ; *\n");
	runner_result_done(&res);

	/* stdin is /dev/null: cat ends at once */
	assert_int_equal(run((const char *const[]){"cat", NULL}, 2000, 0, NULL, &res), 0);
	assert_int_equal(res.exit_code, 0);
	assert_false(res.timed_out);
	assert_int_equal(res.out_len, 0);
	runner_result_done(&res);
}

static void test_output_bounded(void **state)
{
	struct runner_result res;

	(void)state;
	assert_int_equal(run((const char *const[]){"head", "-c", "300000", "/dev/zero", NULL}, 0,
			     1000, NULL, &res),
			 0);
	assert_int_equal(res.exit_code, 0); /* drained to the end, not blocked or killed */
	assert_int_equal(res.out_len, 1000);
	assert_true(res.out_truncated);
	assert_false(res.err_truncated);
	runner_result_done(&res);
	/* default bound: 64 KiB */
	assert_int_equal(run((const char *const[]){"head", "-c", "100000", "/dev/zero", NULL}, 0, 0,
			     NULL, &res),
			 0);
	assert_int_equal(res.out_len, RUNNER_DEFAULT_OUTPUT_MAX);
	assert_true(res.out_truncated);
	runner_result_done(&res);
}

static bool process_gone(pid_t pid)
{
	char path[64], *stat = NULL, *p;
	bool gone;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	stat = tu_read("/", path);
	if (!stat)
		return true;
	p = strrchr(stat, ')'); /* state follows the command name */
	gone = p && (p[2] == 'Z' || p[2] == 'X');
	free(stat);
	return gone;
}

static void test_timeout_kills_group(void **state)
{
	struct runner_result res;
	char *dir = tu_sysroot(""), script[512], *pidtxt;
	int64_t t0 = util_now_mono_ms();
	pid_t grandchild;

	(void)state;
	/* a background grandchild holding the pipes and a TERM-ignoring parent: the whole group
	 * must die, the parent by SIGKILL after the grace period */
	snprintf(script, sizeof(script),
		 "trap '' TERM; sleep 60 & echo $! > %s/pid; echo started; wait", dir);
	assert_int_equal(run((const char *const[]){"sh", "-c", script, NULL}, 300, 0, NULL, &res),
			 0);
	assert_true(res.timed_out);
	assert_int_equal(res.term_signal, SIGKILL);
	assert_int_equal(res.exit_code, -1);
	assert_string_equal(res.out, "started\n");
	assert_true(res.duration_ms >= 300);
	assert_true(util_now_mono_ms() - t0 < 10000);
	runner_result_done(&res);
	pidtxt = tu_read(dir, "pid");
	assert_non_null(pidtxt);
	grandchild = (pid_t)atoi(pidtxt);
	assert_true(grandchild > 0);
	{
		/* SIGKILL delivery is asynchronous: wait on the condition with a deadline */
		int64_t deadline = util_now_mono_ms() + 5000;

		while (!process_gone(grandchild) && util_now_mono_ms() < deadline)
			(void)usleep(1000);
	}
	assert_true(process_gone(grandchild));
	free(pidtxt);

	/* a plain program that honours SIGTERM ends by it */
	assert_int_equal(run((const char *const[]){"sleep", "60", NULL}, 100, 0, NULL, &res), 0);
	assert_true(res.timed_out);
	assert_int_equal(res.term_signal, SIGTERM);
	runner_result_done(&res);
	tu_rm(dir);
}

static void test_missing_program(void **state)
{
	struct runner_result res = {0};

	(void)state;
	assert_int_equal(
		run((const char *const[]){"railyard-no-such-program", NULL}, 0, 0, NULL, &res),
		-ENOENT);
	assert_int_equal(run((const char *const[]){"/nonexistent/prog", NULL}, 0, 0, NULL, &res),
			 -ENOENT);
	assert_int_equal(run((const char *const[]){NULL}, 0, 0, NULL, &res), -EINVAL);
	assert_null(res.out);
}

static void test_sysroot_path_seam(void **state)
{
	char *root = tu_sysroot("h200-roce"), want[4200];
	struct runner_result res;

	(void)state;
	/* with a sysroot, doubles in <sysroot>/usr/local/sbin come first and see
	 * RAILYARD_SYSROOT */
	assert_int_equal(
		run((const char *const[]){"modprobe", "railyard_test_mod", NULL}, 0, 0, root, &res),
		0);
	assert_int_equal(res.exit_code, 0);
	runner_result_done(&res);
	assert_int_equal(tu_calls(root, "modprobe railyard_test_mod"), 1);
	{
		char *mods = tu_read(root, "proc/modules");

		assert_non_null(strstr(mods, "\nrailyard_test_mod 16384"));
		free(mods);
	}
	assert_int_equal(
		run((const char *const[]){"sh", "-c", "echo \"$PATH|$RAILYARD_SYSROOT\"", NULL}, 0,
		    0, root, &res),
		0);
	snprintf(want, sizeof(want), "%s/usr/local/sbin:%s/usr/local/bin:%s|%s\n", root, root,
		 RUNNER_SYSTEM_PATH, root);
	assert_string_equal(res.out, want);
	runner_result_done(&res);
	/* the real root: the system PATH only */
	assert_int_equal(
		run((const char *const[]){"sh", "-c", "echo \"$PATH|$RAILYARD_SYSROOT\"", NULL}, 0,
		    0, "/", &res),
		0);
	assert_string_equal(res.out, RUNNER_SYSTEM_PATH "|/\n");
	runner_result_done(&res);
	tu_rm(root);
}

/* System tools under a fixture sysroot come from the sysroot or not at all. */
static void test_sysroot_only(void **state)
{
	char *root = tu_sysroot("h200-roce");
	struct runner_result res;
	struct runner_cmd c = {.grace_ms = 300, .sysroot = root, .sysroot_only = true};

	(void)state;
	c.argv = (const char *const[]){"modprobe", "railyard_only_mod", NULL};
	assert_int_equal(runner_run(&c, &res), 0); /* the double */
	assert_int_equal(res.exit_code, 0);
	runner_result_done(&res);
	assert_int_equal(tu_calls(root, "modprobe railyard_only_mod"), 1);
	/* sh is on the host, not in the sysroot: never taken from the host */
	c.argv = (const char *const[]){"sh", "-c", "true", NULL};
	assert_int_equal(runner_run(&c, &res), -ENOENT);
	/* an explicit path is the caller's choice */
	c.argv = (const char *const[]){"/bin/sh", "-c", "exit 3", NULL};
	assert_int_equal(runner_run(&c, &res), 0);
	assert_int_equal(res.exit_code, 3);
	runner_result_done(&res);
	/* on the real root the flag changes nothing */
	c.sysroot = "/";
	c.argv = (const char *const[]){"sh", "-c", "exit 4", NULL};
	assert_int_equal(runner_run(&c, &res), 0);
	assert_int_equal(res.exit_code, 4);
	runner_result_done(&res);
	tu_rm(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_and_output),	    cmocka_unit_test(test_output_bounded),
		cmocka_unit_test(test_timeout_kills_group), cmocka_unit_test(test_missing_program),
		cmocka_unit_test(test_sysroot_path_seam),   cmocka_unit_test(test_sysroot_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
