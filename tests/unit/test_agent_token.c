/* Unit tests of agent_token_read() (`railyard-agent enroll --token-file`): the first line of a
 * 0600 file or of a pipe; a file others may read, an empty one, a huge one, a directory and a
 * token with a blank refused, each naming why. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nodeagent/enroll.h"

static char dir[] = "/tmp/railyard-token-XXXXXX";

static const char *put(const char *name, const char *text, mode_t mode)
{
	static char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

static void refused(const char *path, int want, const char *why)
{
	char err[512] = "", *tok = (char *)"untouched";

	assert_int_equal(agent_token_read(path, &tok, err, sizeof(err)), want);
	if (!strstr(err, why))
		fail_msg("\"%s\" lacks \"%s\"", err, why);
	assert_string_equal(tok, "untouched");
}

static void test_file(void **state)
{
	char err[512] = "", *tok = NULL;

	(void)state;
	assert_int_equal(agent_token_read(put("t", "ry1.abc.def\n", 0600), &tok, err, sizeof(err)),
			 0);
	assert_string_equal(tok, "ry1.abc.def");
	free(tok);
	/* No line end, CRLF, a second line ignored; 0400 is fine too. */
	assert_int_equal(agent_token_read(put("t", "ry1.x", 0400), &tok, err, sizeof(err)), 0);
	assert_string_equal(tok, "ry1.x");
	free(tok);
	assert_int_equal(
		agent_token_read(put("t", "ry1.y\r\nmore\n", 0600), &tok, err, sizeof(err)), 0);
	assert_string_equal(tok, "ry1.y");
	free(tok);
}

static void test_refusals(void **state)
{
	char big[AGENT_TOKEN_FILE_MAX + 2];
	char path[256];

	(void)state;
	refused(put("t", "ry1.x\n", 0640), -EPERM, "mode 0640 lets others at the token; chmod 600");
	refused(put("t", "ry1.x\n", 0604), -EPERM, "mode 0604");
	refused(put("t", "ry1.x\n", 0620), -EPERM, "mode 0620");
	refused(put("t", "", 0600), -EINVAL, "empty: no token on its first line");
	refused(put("t", "\nry1.x\n", 0600), -EINVAL, "empty");
	refused(put("t", "ry1.x y\n", 0600), -EINVAL, "a blank or control character");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	refused(put("t", big, 0600), -EINVAL, "over 4096 bytes");
	refused(dir, -EINVAL, "not a regular file or a pipe");
	snprintf(path, sizeof(path), "%s/none", dir);
	refused(path, -ENOENT, "none: No such file");
}

/* "-": standard input, here a pipe. */
static void test_stdin(void **state)
{
	char err[512] = "", *tok = NULL;
	int p[2], saved = dup(STDIN_FILENO);

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "ry1.pipe\n", 9), 9);
	close(p[1]);
	assert_int_equal(dup2(p[0], STDIN_FILENO), STDIN_FILENO);
	close(p[0]);
	assert_int_equal(agent_token_read("-", &tok, err, sizeof(err)), 0);
	assert_string_equal(tok, "ry1.pipe");
	free(tok);
	assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
	close(saved);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_stdin),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
