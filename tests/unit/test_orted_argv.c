/* Unit tests of common/launch/orted.c, the one check of an orted command line that the launch
 * relay lets through: the real line Open MPI 4.1.4 passes to its rsh agent is accepted and
 * rebuilt without quotes or --daemonize; another binary, an extra argument, an unknown key,
 * tree spawn, another relay, another settings file and control characters are refused, each
 * naming the argument. */
#include "common/launch/orted.h"
#include "common/util/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define RELAY "/usr/sbin/railyard-agent rsh"
#define MCAF  "/etc/openmpi/openmpi-mca-params.conf"

/* What mpirun passed after the host name (seen with a stand-in agent, Open MPI 4.1.4). */
static const char *good[] = {" orted",
			     "--daemonize",
			     "-mca",
			     "ess",
			     "\"env\"",
			     "-mca",
			     "ess_base_jobid",
			     "\"1894121472\"",
			     "-mca",
			     "ess_base_vpid",
			     "1",
			     "-mca",
			     "ess_base_num_procs",
			     "\"3\"",
			     "-mca",
			     "orte_node_regex",
			     "\"vm,n-a,n-b@0(3)\"",
			     "-mca",
			     "orte_hnp_uri",
			     "\"1894121472.0;tcp://192.0.2.2:40571;tcp6://[fd00::2]:47277\"",
			     "--mca",
			     "plm_rsh_no_tree_spawn",
			     "\"1\"",
			     "--mca",
			     "pml",
			     "\"ob1\"",
			     "--mca",
			     "btl",
			     "\"tcp,self,vader\"",
			     "--mca",
			     "mca_base_param_files",
			     "\"" MCAF "\"",
			     "-mca",
			     "plm",
			     "\"rsh\"",
			     "-mca",
			     "plm_rsh_agent",
			     "\"" RELAY "\"",
			     "-mca",
			     "hwloc_base_binding_policy",
			     "\"none\"",
			     "-mca",
			     "pmix",
			     "\"^s1,s2,cray,isolated\""};
#define NGOOD (sizeof(good) / sizeof(good[0]))

/* good with argument i replaced by v (i == NGOOD: v appended). */
static int check_with(size_t i, const char *v, const char *relay, char *err, size_t errlen)
{
	const char *a[NGOOD + 1];
	char **out = NULL;
	size_t n = NGOOD;
	int r;

	memcpy(a, good, sizeof(good));
	a[i] = v;
	if (i == NGOOD)
		n++;
	err[0] = '\0';
	r = ry_orted_argv_check(a, n, relay, MCAF, &out, err, errlen);
	ry_orted_argv_free(out);
	return r;
}

static void test_good(void **state)
{
	char **out = NULL, err[256] = "";
	size_t n = 0;

	(void)state;
	assert_int_equal(ry_orted_argv_check(good, NGOOD, RELAY, MCAF, &out, err, sizeof(err)), 0);
	while (out[n])
		n++;
	/* orted, then 14 triples: --daemonize dropped. */
	assert_int_equal(n, 1 + 14 * 3);
	assert_string_equal(out[0], "orted");
	assert_string_equal(out[1], "-mca");
	assert_string_equal(out[2], "ess");
	assert_string_equal(out[3], "env");
	assert_string_equal(ry_orted_argv_get(out, "orte_hnp_uri"),
			    "1894121472.0;tcp://192.0.2.2:40571;tcp6://[fd00::2]:47277");
	assert_string_equal(ry_orted_argv_get(out, "plm_rsh_agent"), RELAY);
	assert_string_equal(ry_orted_argv_get(out, "ess_base_vpid"), "1");
	assert_null(ry_orted_argv_get(out, "osc"));
	ry_orted_argv_free(out);
	/* The controller does not know the launcher's path: any railyard-agent's relay. */
	assert_int_equal(ry_orted_argv_check(good, NGOOD, NULL, NULL, &out, err, sizeof(err)), 0);
	ry_orted_argv_free(out);
}

/* The same line wrapped for a Bourne remote shell (a launcher whose login shell is sh, as in
 * the soft-RoCE guests): the wrapper is taken off exactly; a wrapper that is not exactly it is
 * refused (nothing but orted is started either way). */
static void test_bourne_wrapper(void **state)
{
	static const char *wrap[] = {"(",	   "test", "!", "-r",
				     "./.profile", "||",   ".", "./.profile;"};
	const char *a[NGOOD + 10];
	char **out = NULL, err[256] = "";
	size_t n = 0;

	(void)state;
	memcpy(a, wrap, sizeof(wrap));
	memcpy(a + 8, good, sizeof(good));
	a[8] = "orted";
	a[8 + NGOOD] = ")";
	assert_int_equal(ry_orted_argv_check(a, NGOOD + 9, RELAY, MCAF, &out, err, sizeof(err)), 0);
	while (out[n])
		n++;
	assert_int_equal(n, 1 + 14 * 3);
	assert_string_equal(out[0], "orted");
	ry_orted_argv_free(out);
	out = NULL;
	/* Unbalanced: the closing word missing. */
	assert_int_equal(ry_orted_argv_check(a, NGOOD + 8, RELAY, MCAF, &out, err, sizeof(err)),
			 -RY_E_INVALID);
	assert_non_null(strstr(err, "only orted may be started"));
	/* Another command inside the wrapper. */
	a[8] = "/bin/sh";
	assert_int_equal(ry_orted_argv_check(a, NGOOD + 9, RELAY, MCAF, &out, err, sizeof(err)),
			 -RY_E_INVALID);
	assert_non_null(strstr(err, "only orted may be started"));
	/* A wrapper with a word of its own. */
	a[8] = "orted";
	a[5] = "&&";
	assert_int_equal(ry_orted_argv_check(a, NGOOD + 9, RELAY, MCAF, &out, err, sizeof(err)),
			 -RY_E_INVALID);
}

static void test_refused(void **state)
{
	char err[256];

	(void)state;
	/* Another binary, with or without the path or the space. */
	assert_int_equal(check_with(0, "/bin/sh", RELAY, err, sizeof(err)), -RY_E_INVALID);
	assert_non_null(strstr(err, "argument 0 (/bin/sh): only orted"));
	assert_int_equal(check_with(0, "/usr/bin/orted", RELAY, err, sizeof(err)), -RY_E_INVALID);
	assert_int_equal(check_with(0, " orted; id", RELAY, err, sizeof(err)), -RY_E_INVALID);
	/* An extra argument, at the end or in place of a -mca. */
	assert_int_equal(check_with(NGOOD, "--debug", RELAY, err, sizeof(err)), -RY_E_INVALID);
	assert_non_null(strstr(err, "argument 44 (--debug): not -mca KEY VALUE"));
	assert_int_equal(check_with(1, "/tmp/x", RELAY, err, sizeof(err)), -RY_E_INVALID);
	assert_non_null(strstr(err, "argument 1 (/tmp/x)"));
	/* -mca without its pair. */
	assert_int_equal(check_with(NGOOD, "-mca", RELAY, err, sizeof(err)), -RY_E_INVALID);
	assert_non_null(strstr(err, "without KEY VALUE"));
	/* An unknown key: one that would start another program. */
	assert_int_equal(check_with(6, "orte_fork_agent", RELAY, err, sizeof(err)), -RY_E_INVALID);
	assert_non_null(strstr(err, "argument 6: MCA key 'orte_fork_agent' is not allowed"));
	/* Tree spawn on: an orted would launch the others itself. */
	assert_int_equal(check_with(22, "\"0\"", RELAY, err, sizeof(err)), -RY_E_INVALID);
	assert_non_null(strstr(err, "plm_rsh_no_tree_spawn"));
	assert_non_null(strstr(err, "tree spawn on"));
	/* Another relay, and with the controller's shape check. */
	assert_int_equal(check_with(37, "\"/usr/bin/ssh\"", RELAY, err, sizeof(err)),
			 -RY_E_INVALID);
	assert_non_null(strstr(err, "plm_rsh_agent = /usr/bin/ssh): a command other than"));
	assert_int_equal(check_with(37, "\"/tmp/railyard-agent rsh x\"", NULL, err, sizeof(err)),
			 -RY_E_INVALID);
	assert_int_equal(check_with(37, "\"railyard-agent rsh\"", NULL, err, sizeof(err)),
			 -RY_E_INVALID);
	/* Another settings file. */
	assert_int_equal(check_with(31, "\"/tmp/evil.conf\"", RELAY, err, sizeof(err)),
			 -RY_E_INVALID);
	assert_non_null(strstr(err, "mca_base_param_files"));
	/* Control characters, in a value and in a word. */
	assert_int_equal(check_with(16, "\"vm,n-a\n,n-b@0(3)\"", RELAY, err, sizeof(err)),
			 -RY_E_INVALID);
	assert_non_null(strstr(err, "control character"));
	assert_int_equal(check_with(1, "--daemonize\t", RELAY, err, sizeof(err)), -RY_E_INVALID);
	assert_non_null(strstr(err, "argument 1: a control character"));
	/* A shell's metacharacters in a value, a non-numeric id. */
	assert_int_equal(check_with(19, "\"1.0;tcp://x:1;$(id)\"", RELAY, err, sizeof(err)),
			 -RY_E_INVALID);
	assert_int_equal(check_with(7, "\"12a\"", RELAY, err, sizeof(err)), -RY_E_INVALID);
	assert_non_null(strstr(err, "ess_base_jobid"));
	/* A key twice (the second would win in orted). */
	assert_int_equal(check_with(39, "pml", RELAY, err, sizeof(err)), -RY_E_INVALID);
	assert_non_null(strstr(err, "given twice"));
}

static void test_missing(void **state)
{
	const char *a[] = {" orted", "-mca", "ess", "\"env\""};
	char **out = NULL, err[256] = "";

	(void)state;
	assert_int_equal(ry_orted_argv_check(a, 4, RELAY, NULL, &out, err, sizeof(err)),
			 -RY_E_INVALID);
	assert_null(out);
	assert_non_null(strstr(err, "is missing"));
	assert_int_equal(ry_orted_argv_check(a, 0, RELAY, NULL, &out, err, sizeof(err)),
			 -RY_E_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bourne_wrapper),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_missing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
