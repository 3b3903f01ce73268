/* Unit tests for the apply engine's building blocks: dpkg version comparison and constraints,
 * the unified diff (golden outputs and random round trips through a patcher), and sysroot path
 * resolution (.., symlinks escaping or re-anchored, loops). */
#include "common/playbook/playbook.h"
#include "nodeagent/apply/apply.h"

#include "common/util/error.h"
#include "tests/unit/test_apply_util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static int sign(int v)
{
	return (v > 0) - (v < 0);
}

static void test_dpkg_version_table(void **state)
{
	static const struct {
		const char *a, *b;
		int cmp;
	} t[] = {
		{"1.0", "1.0", 0},
		{"1.0", "1.0-1", -1},
		{"1.0-1", "1.0a", -1},
		{"1.0", "1.0a", -1},
		{"1:0.9", "2.0", 1},
		{"0:2.0", "2.0", 0},
		{"1.0~rc1", "1.0", -1},
		{"1.0~", "1.0", -1},
		{"1.0~~", "1.0~", -1},
		{"1.0~rc1", "1.0~rc2", -1},
		{"1.0", "1.0+b1", -1},
		{"1.10", "1.9", 1},
		{"1.010", "1.10", 0},
		{"2.0-1", "2.0-10", -1},
		{"2.0-1ubuntu1", "2.0-1", 1},
		{"24.10-1.1.4.0", "24.10-1.1.3.0", 1},
		{"24.10.OFED.24.10.1.1.4.1-1", "24.10.OFED.24.10.1.1.4.1-1", 0},
		{"1.2.3", "1.2.3.0", -1},
		{"a", "B", 1},
		{"1.0-a", "1.0-+", -1},
		{"10:1", "9:99", 1},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		/* Only the sign is the contract. */
		int c = sign(playbook_version_compare(t[i].a, t[i].b));
		int back = sign(playbook_version_compare(t[i].b, t[i].a));

		if (c != t[i].cmp)
			fail_msg("%s vs %s: got %d, expected %d", t[i].a, t[i].b, c, t[i].cmp);
		assert_int_equal(back, -t[i].cmp);
	}
}

static void test_version_constraints(void **state)
{
	(void)state;
	assert_int_equal(apply_version_satisfies("24.10-1.1.4.0", ">= 24.10"), 1);
	assert_int_equal(apply_version_satisfies("24.04-0.7.0.0", ">= 24.10"), 0);
	assert_int_equal(apply_version_satisfies("1.2-3", "1.2-3"), 1);
	assert_int_equal(apply_version_satisfies("1.2-3", "= 1.2-3"), 1);
	assert_int_equal(apply_version_satisfies("1.2-3", "==1.2-4"), 0);
	assert_int_equal(apply_version_satisfies("1.2-3", "!= 1.2-4"), 1);
	assert_int_equal(apply_version_satisfies("1.2~rc1", "< 1.2"), 1);
	assert_int_equal(apply_version_satisfies("1.2", "<< 1.2"), 0);
	assert_int_equal(apply_version_satisfies("1.2", "<= 1.2"), 1);
	assert_int_equal(apply_version_satisfies("1:0.1", "> 5.0"), 1);
	assert_int_equal(apply_version_satisfies("1.0", ">"), -RY_E_INVALID);
	assert_int_equal(apply_version_satisfies("1.0", ""), -RY_E_INVALID);
	assert_int_equal(apply_version_satisfies("1.0", ">= 1.0 junk"), -RY_E_INVALID);
}

static void check_diff(const char *a, const char *b, const char *expected)
{
	char *d = NULL;

	assert_int_equal(apply_diff_unified(a, strlen(a), b, strlen(b), "a/f", "b/f", &d), 0);
	assert_string_equal(d, expected);
	free(d);
}

static void test_diff_golden(void **state)
{
	(void)state;
	check_diff("x\n", "x\n", "");
	check_diff("a\nb\nc\n", "a\nB\nc\n", "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
	check_diff("", "new\n", "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+new\n");
	check_diff("old\n", "", "--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-old\n");
	check_diff("a\n", "a",
		   "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n");
	/* two changes 10 lines apart: two hunks with 3 lines of context each */
	check_diff("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n",
		   "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n",
		   "--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n 1\n-2\n+X\n 3\n 4\n 5\n"
		   "@@ -8,5 +8,5 @@\n 8\n 9\n 10\n-11\n+Y\n 12\n");
	/* changes 6 lines apart share one hunk */
	check_diff(
		"1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\nX\n3\n4\n5\n6\n7\nY\n9\n",
		"--- a/f\n+++ b/f\n@@ -1,9 +1,9 @@\n 1\n-2\n+X\n 3\n 4\n 5\n 6\n 7\n-8\n+Y\n 9\n");
	check_diff("a\nb\n", "a\nb\nc\n", "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n b\n+c\n");
}

/* Apply a unified diff produced by apply_diff_unified() to a; texts end with newlines. */
static char *patch(const char *a, const char *diff)
{
	size_t cap = strlen(a) + strlen(diff) + 1, len = 0, apos = 0;
	char *out = calloc(1, cap);
	const char *p = strstr(diff, "@@");

	assert_non_null(out);
	while (p && *p) {
		unsigned long as, al = 1, bs, bl = 1;
		const char *nl;

		assert_true(sscanf(p, "@@ -%lu,%lu +%lu,%lu @@", &as, &al, &bs, &bl) >= 2 ||
			    sscanf(p, "@@ -%lu +%lu", &as, &bs) == 2);
		if (sscanf(p, "@@ -%lu,%lu", &as, &al) < 2)
			al = 1;
		/* copy unchanged lines before the hunk */
		{
			unsigned long target = al ? as - 1 : as, lineno = 0;
			size_t q = 0;

			while (a[q] && lineno < target) {
				if (a[q] == '\n')
					lineno++;
				q++;
			}
			assert_true(q >= apos);
			memcpy(out + len, a + apos, q - apos);
			len += q - apos;
			apos = q;
		}
		p = strchr(p, '\n') + 1;
		while (*p && strncmp(p, "@@", 2) != 0) {
			size_t n;

			nl = strchr(p, '\n');
			n = (size_t)(nl - p);
			if (p[0] == ' ' || p[0] == '-') {
				assert_memory_equal(a + apos, p + 1, n - 1);
				assert_int_equal(a[apos + n - 1], '\n');
				if (p[0] == ' ') {
					memcpy(out + len, p + 1, n);
					len += n;
				}
				apos += n;
			} else if (p[0] == '+') {
				memcpy(out + len, p + 1, n);
				len += n;
			} else {
				fail_msg("unexpected diff line %.*s", (int)n, p);
			}
			p = nl + 1;
		}
	}
	memcpy(out + len, a + apos, strlen(a + apos));
	len += strlen(a + apos);
	out[len] = '\0';
	return out;
}

static char *random_text(unsigned *seed, int lines)
{
	char *t = calloc(1, (size_t)lines * 3 + 1);

	assert_non_null(t);
	for (int i = 0; i < lines; i++) {
		t[3 * i] = (char)('a' + rand_r(seed) % 4);
		t[3 * i + 1] = (char)('0' + rand_r(seed) % 2);
		t[3 * i + 2] = '\n';
	}
	return t;
}

static void test_diff_random_roundtrip(void **state)
{
	unsigned seed = 12345;

	(void)state;
	for (int round = 0; round < 300; round++) {
		char *a = random_text(&seed, rand_r(&seed) % 40);
		char *b = random_text(&seed, rand_r(&seed) % 40), *d = NULL, *back;

		assert_int_equal(apply_diff_unified(a, strlen(a), b, strlen(b), "a", "b", &d), 0);
		if (strcmp(a, b) == 0) {
			assert_string_equal(d, "");
		} else {
			assert_true(strncmp(d, "--- a\n+++ b\n@@ -", 16) == 0);
			back = patch(a, d);
			assert_string_equal(back, b);
			free(back);
		}
		free(a);
		free(b);
		free(d);
	}
}

static void test_diff_bounds(void **state)
{
	size_t n = APPLY_FILE_MAX + 1;
	char *big = malloc(n), *d = NULL;

	(void)state;
	assert_non_null(big);
	memset(big, 'x', n);
	assert_int_equal(apply_diff_unified(big, n, "a\n", 2, "a", "b", &d), -RY_E_TOO_BIG);
	/* a large middle (beyond the LCS table) still gives a correct, coarser diff */
	{
		unsigned seed = 7;
		char *a = random_text(&seed, 3000), *b = random_text(&seed, 3000), *back;

		assert_int_equal(apply_diff_unified(a, strlen(a), b, strlen(b), "a", "b", &d), 0);
		back = patch(a, d);
		assert_string_equal(back, b);
		free(back);
		free(a);
		free(b);
		free(d);
	}
	free(big);
}

static void expect_path(const char *root, const char *path, const char *rel_expected)
{
	char *got = NULL, want[4096];

	assert_int_equal(apply_path_resolve(root, path, &got), 0);
	snprintf(want, sizeof(want), "%s%s", root, rel_expected);
	assert_string_equal(got, want);
	free(got);
}

static void test_path_resolve(void **state)
{
	char *root = tu_sysroot("h200-roce"), link[4096], *got = NULL;

	(void)state;
	expect_path(root, "/etc/hostname", "/etc/hostname");
	expect_path(root, "etc//./hostname", "/etc/hostname");
	expect_path(root, "/etc/new/dir/file", "/etc/new/dir/file");
	/* relative links of sysfs are followed inside the sysroot */
	{
		char *t = NULL;

		assert_int_equal(apply_path_resolve(root, "/sys/class/net/enp22s0np0/mtu", &t), 0);
		assert_true(strncmp(t, root, strlen(root)) == 0);
		assert_non_null(strstr(t, "/sys/devices/pci0000:10/"));
		assert_null(strstr(t, "/class/"));
		free(t);
	}
	/* `..` in the request is refused even when it would stay inside */
	assert_int_equal(apply_path_resolve(root, "/etc/../etc/hostname", &got), -RY_E_UNSAFE_PATH);
	assert_int_equal(apply_path_resolve(root, "../../etc/passwd", &got), -RY_E_UNSAFE_PATH);
	/* a relative symlink that climbs out of the sysroot to the host's /etc is refused */
	snprintf(link, sizeof(link), "%s/etc/escape", root);
	assert_int_equal(symlink("../../../../../../../../etc", link), 0);
	assert_int_equal(apply_path_resolve(root, "/etc/escape/passwd", &got), -RY_E_UNSAFE_PATH);
	/* an absolute symlink to /etc is re-anchored: it names <sysroot>/etc, never the host's */
	snprintf(link, sizeof(link), "%s/etc/abs", root);
	assert_int_equal(symlink("/etc", link), 0);
	expect_path(root, "/etc/abs/hostname", "/etc/hostname");
	expect_path(root, "/etc/abs/shadow", "/etc/shadow");
	/* a final-component link to an absolute host path lands inside too */
	snprintf(link, sizeof(link), "%s/etc/nccl.conf", root);
	assert_int_equal(symlink("/etc/passwd", link), 0);
	expect_path(root, "/etc/nccl.conf", "/etc/passwd");
	/* loops */
	snprintf(link, sizeof(link), "%s/etc/loop", root);
	assert_int_equal(symlink("loop", link), 0);
	assert_int_equal(apply_path_resolve(root, "/etc/loop/x", &got), -ELOOP);
	/* a symlink whose target climbs exactly to the root stays inside */
	snprintf(link, sizeof(link), "%s/etc/up", root);
	assert_int_equal(symlink("..", link), 0);
	expect_path(root, "/etc/up/etc/hostname", "/etc/hostname");
	/* the real root: nothing to escape, `..` still refused */
	assert_int_equal(apply_path_resolve("/", "/etc/../etc", &got), -RY_E_UNSAFE_PATH);
	assert_int_equal(apply_path_resolve(NULL, "/", &got), 0);
	assert_string_equal(got, "/");
	free(got);
	tu_rm(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dpkg_version_table),
		cmocka_unit_test(test_version_constraints),
		cmocka_unit_test(test_diff_golden),
		cmocka_unit_test(test_diff_random_roundtrip),
		cmocka_unit_test(test_diff_bounds),
		cmocka_unit_test(test_path_resolve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
