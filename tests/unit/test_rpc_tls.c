/* Unit tests: rpc_tls_no_session_tickets() turns OpenSSL's TLS 1.3 session tickets off for the
 * SSL_CTXs this process makes afterwards, keeps the system configuration's own system_default
 * settings, and leaves SSL_CTXs made before it alone. Each case runs in a child process with its
 * own OPENSSL_CONF: OpenSSL reads its configuration once per process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/ssl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/rpc/rpc.h"

/* Write conf_text to a file, point OPENSSL_CONF at it and run fn in a child: its exit status. */
static int in_child(const char *conf_text, int (*fn)(void))
{
	char path[] = "/tmp/ry-openssl-XXXXXX";
	int fd = mkstemp(path), status = -1;
	pid_t pid;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, conf_text, strlen(conf_text)), (ssize_t)strlen(conf_text));
	close(fd);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("OPENSSL_CONF", path, 1);
		_exit(fn());
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	unlink(path);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static size_t tickets_of_new_ctx(void)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	size_t n;

	if (!ctx)
		return (size_t)-1;
	n = SSL_CTX_get_num_tickets(ctx);
	SSL_CTX_free(ctx);
	return n;
}

static int min_proto_of_new_ctx(void)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	int v = ctx ? (int)SSL_CTX_get_min_proto_version(ctx) : -1;

	SSL_CTX_free(ctx);
	return v;
}

/* A system file with settings of its own, NumTickets among them. */
static const char conf_with_ssl[] = "openssl_conf = init\n"
				    "[init]\n"
				    "ssl_conf = ssl\n"
				    "[ssl]\n"
				    "system_default = sys\n"
				    "[sys]\n"
				    "MinProtocol = TLSv1.3\n"
				    "NumTickets = 5\n";

static int child_keeps_system_settings(void)
{
	char err[256] = "";
	SSL_CTX *before = SSL_CTX_new(TLS_server_method());

	/* The system file is in force before: its five tickets, its minimum protocol. */
	if (!before || SSL_CTX_get_num_tickets(before) != 5 ||
	    min_proto_of_new_ctx() != TLS1_3_VERSION)
		return 10;
	if (rpc_tls_no_session_tickets(err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		return 11;
	}
	if (tickets_of_new_ctx() != 0)
		return 12;
	/* Kept from the system file. */
	if (min_proto_of_new_ctx() != TLS1_3_VERSION)
		return 13;
	/* A context made before is not changed. */
	if (SSL_CTX_get_num_tickets(before) != 5)
		return 14;
	SSL_CTX_free(before);
	/* Again: nothing changes, no error. */
	if (rpc_tls_no_session_tickets(err, sizeof(err)) != 0 || tickets_of_new_ctx() != 0)
		return 15;
	return 0;
}

static void test_system_settings_kept(void **state)
{
	(void)state;
	assert_int_equal(in_child(conf_with_ssl, child_keeps_system_settings), 0);
}

static int child_no_ssl_section(void)
{
	char err[256] = "";

	/* OpenSSL's default: two tickets after a full handshake. */
	if (tickets_of_new_ctx() != 2)
		return 20;
	if (rpc_tls_no_session_tickets(err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		return 21;
	}
	if (tickets_of_new_ctx() != 0)
		return 22;
	/* Nothing else set: OpenSSL's own minimum (0: any it supports). */
	if (min_proto_of_new_ctx() != 0)
		return 23;
	return 0;
}

static void test_without_ssl_section(void **state)
{
	(void)state;
	/* Debian 12's file has no ssl_conf; an unreadable one is the same to OpenSSL. */
	assert_int_equal(in_child("openssl_conf = init\n[init]\n", child_no_ssl_section), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_system_settings_kept),
		cmocka_unit_test(test_without_ssl_section),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
