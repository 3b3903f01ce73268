/* Unit tests of common/httpc: the URLs it takes and refuses, and requests over a unix socket to
 * controller/http's server in a temporary directory (plain HTTP, no token sent, a JSON body
 * there and back), a stale socket (nobody listening) and an absent one told apart by errno. */
#include "common/httpc/httpc.h"
#include "controller/http/http.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

struct fixture {
	char dir[PATH_MAX];
	char url[PATH_MAX + 32]; /* "unix:DIR/api.sock" */
	struct http_server *srv;
};

/* Handler problems (cmocka's asserts work on the test's thread only). */
static atomic_int g_handler_errors;

static void h_hello(struct http_req *req)
{
	const struct http_peer *p = http_req_peer(req);

	/* Over the socket the peer is known, and no credential travels. */
	if (!p->local || http_req_header(req, "Authorization"))
		atomic_fetch_add(&g_handler_errors, 1);
	http_reply_json(req, 200, json_pack("{s:s}", "status", "ok"));
}

static void h_echo(struct http_req *req)
{
	json_t *j = http_req_json(req);

	if (j)
		http_reply_json(req, 201, json_incref(j));
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int setup(void **state)
{
	static const struct http_route routes[] = {
		{"GET", "/hello", h_hello, 0, 0, NULL},
		{"POST", "/echo", h_echo, 0, 0, NULL},
	};
	struct fixture *f = calloc(1, sizeof(*f));
	char sock[PATH_MAX + 16], err[256];
	struct http_config cfg = {.unix_path = sock};

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_httpc.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(sock, sizeof(sock), "%s/api.sock", f->dir);
	snprintf(f->url, sizeof(f->url), HTTPC_UNIX_PREFIX "%s", sock);
	assert_int_equal(http_server_start(&cfg, routes, 2, NULL, &f->srv, err, sizeof(err)), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	http_server_stop(f->srv);
	nftw(f->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static void test_urls(void **state)
{
	static const char *const bad[] = {
		"http://127.0.0.1:8443",  "ftp://x", "https://", "unix:",
		"unix:relative/api.sock", "unix:/",  "",
	};
	struct httpc *h = NULL;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(httpc_new(bad[i], NULL, NULL, &h), -EINVAL);
	/* A token never goes over the socket. */
	assert_int_equal(httpc_new("unix:/run/api.sock", "rya1.x.y", NULL, &h), -EINVAL);
	assert_int_equal(httpc_new("https://ctl.example:8443//", "rya1.x.y", NULL, &h), 0);
	assert_string_equal(httpc_url(h), "https://ctl.example:8443");
	httpc_free(h);
	assert_int_equal(httpc_new("unix:/run/api.sock", NULL, "/ignored/ca.crt", &h), 0);
	assert_string_equal(httpc_url(h), "unix:/run/api.sock");
	httpc_free(h);
	httpc_free(NULL);
}

static void test_unix_request(void **state)
{
	struct fixture *f = *state;
	struct httpc_reply rep = {0};
	struct httpc *h = NULL;
	char why[256] = "";

	assert_int_equal(httpc_new(f->url, NULL, NULL, &h), 0);
	assert_int_equal(httpc_request(h, "GET", "/hello", NULL, &rep, why, sizeof(why)), 0);
	assert_int_equal(rep.status, 200);
	assert_non_null(strstr(rep.body, "\"ok\""));
	httpc_reply_done(&rep);
	/* The same connection again, with a body. */
	assert_int_equal(httpc_request(h, "POST", "/echo", "{\"a\":[1,2]}", &rep, why, sizeof(why)),
			 0);
	assert_int_equal(rep.status, 201);
	assert_non_null(strstr(rep.body, "\"a\""));
	httpc_reply_done(&rep);
	/* Any status is a reply. */
	assert_int_equal(httpc_request(h, "GET", "/nothing", NULL, &rep, why, sizeof(why)), 0);
	assert_int_equal(rep.status, 404);
	httpc_reply_done(&rep);
	httpc_reply_done(NULL);
	httpc_free(h);
	assert_int_equal(atomic_load(&g_handler_errors), 0);
}

static void test_unix_refused(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct httpc_reply rep = {0};
	struct httpc *h = NULL;
	char path[PATH_MAX + 16], url[PATH_MAX + 32], why[256] = "";
	int fd;

	/* A socket nobody listens on: what a server killed with -9 leaves. */
	snprintf(path, sizeof(path), "%s/stale.sock", f->dir);
	snprintf(url, sizeof(url), HTTPC_UNIX_PREFIX "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_true(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	assert_int_equal(httpc_new(url, NULL, NULL, &h), 0);
	assert_int_equal(httpc_request(h, "GET", "/hello", NULL, &rep, why, sizeof(why)),
			 -ECONNREFUSED);
	assert_string_equal(why, strerror(ECONNREFUSED));
	httpc_free(h);
	/* No socket at all. */
	unlink(path);
	assert_int_equal(httpc_new(url, NULL, NULL, &h), 0);
	assert_int_equal(httpc_request(h, "GET", "/hello", NULL, &rep, why, sizeof(why)), -ENOENT);
	httpc_free(h);
}

static void test_escape(void **state)
{
	char *e = httpc_escape("gpu-01.a_b~ c/\xc3\xa7%");

	assert_non_null(e);
	assert_string_equal(e, "gpu-01.a_b~%20c%2F%C3%A7%25");
	free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_urls),
		cmocka_unit_test(test_unix_request),
		cmocka_unit_test(test_unix_refused),
		cmocka_unit_test(test_escape),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
