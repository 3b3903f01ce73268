/* Unit tests of controller/portal: every file of the built-in table has a content type, "/" is
 * index.html with the versioned prefix filled in, every other file lives under that prefix; the
 * routes compile in the HTTP core and answer with the CSP and their caching headers, HEAD
 * without a body, and nothing else (an unknown name under the prefix is a 404). */
#include "controller/http/http.h"
#include "controller/portal/portal.h"
#include "controller/portal/portal_files.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>
#include <curl/curl.h>

static void test_table(void **state)
{
	size_t n_index = 0, base = strlen(ctl_portal_base);

	(void)state;
	assert_true(ctl_portal_files_count >= 3);
	assert_int_equal(strncmp(ctl_portal_base, "/portal/", 8), 0);
	assert_int_equal(strlen(ctl_portal_base), 8 + 16);
	for (size_t i = 0; i < ctl_portal_files_count; i++) {
		const struct ctl_portal_file *f = &ctl_portal_files[i];

		assert_string_not_equal(ctl_portal_content_type(f->name),
					"application/octet-stream");
		assert_non_null(f->data);
		assert_true(f->len > 0);
		assert_int_equal(f->data[f->len], 0); /* the generator ends each array with NUL */
		if (strcmp(f->path, "/") == 0) {
			n_index++;
			assert_string_equal(f->name, "index.html");
			assert_null(strstr((const char *)f->data, "@PORTAL_BASE@"));
			assert_non_null(strstr((const char *)f->data, ctl_portal_base));
		} else {
			assert_int_equal(strncmp(f->path, ctl_portal_base, base), 0);
			assert_int_equal(f->path[base], '/');
			assert_string_equal(f->path + base + 1, f->name);
		}
	}
	assert_int_equal(n_index, 1);
	assert_string_equal(ctl_portal_content_type("a/b.js"), "text/javascript; charset=utf-8");
	assert_string_equal(ctl_portal_content_type("x.woff2"), "application/octet-stream");
	assert_string_equal(ctl_portal_content_type("js"), "application/octet-stream");
}

struct reply {
	long status;
	char headers[8192];
	size_t hlen;
	size_t blen;
};

static size_t on_header(char *b, size_t size, size_t n, void *cls)
{
	struct reply *r = cls;
	size_t len = size * n;

	if (r->hlen + len < sizeof(r->headers)) {
		memcpy(r->headers + r->hlen, b, len);
		r->hlen += len;
		r->headers[r->hlen] = '\0';
	}
	return len;
}

static size_t on_body(char *b, size_t size, size_t n, void *cls)
{
	((struct reply *)cls)->blen += size * n;
	(void)b;
	return size * n;
}

static void fetch(uint16_t port, const char *path, bool head, struct reply *r)
{
	CURL *c = curl_easy_init();
	char url[512];

	memset(r, 0, sizeof(*r));
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	assert_non_null(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(c, CURLOPT_NOBODY, head ? 1L : 0L);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_cleanup(c);
}

static bool has_header(const struct reply *r, const char *line)
{
	char want[1024];

	snprintf(want, sizeof(want), "\n%s\r\n", line);
	return strcasestr(r->headers, want) != NULL;
}

static void test_served(void **state)
{
	size_t n = ctl_portal_routes_count();
	struct http_route *routes = calloc(n, sizeof(*routes));
	struct http_config cfg = {.listen = "127.0.0.1:0", .plain_http = true};
	struct http_server *srv = NULL;
	const struct ctl_portal_file *js = NULL;
	char err[256] = "", path[512];
	struct reply r;

	(void)state;
	assert_non_null(routes);
	ctl_portal_routes(routes);
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(routes[i].method, "GET");
		assert_ptr_equal(routes[i].data, &ctl_portal_files[i]);
		if (strstr(ctl_portal_files[i].name, ".js"))
			js = &ctl_portal_files[i];
	}
	assert_int_equal(http_server_start(&cfg, routes, n, NULL, &srv, err, sizeof(err)), 0);
	free(routes); /* the server keeps copies */

	fetch(http_server_port(srv), "/", false, &r);
	assert_int_equal(r.status, 200);
	assert_true(has_header(&r, "Content-Type: text/html; charset=utf-8"));
	assert_true(has_header(&r, "Content-Security-Policy: " CTL_PORTAL_CSP));
	assert_true(has_header(&r, "Cache-Control: no-cache"));
	assert_true(has_header(&r, "X-Content-Type-Options: nosniff"));
	assert_true(has_header(&r, "X-Frame-Options: DENY"));
	for (size_t i = 0; i < n; i++)
		if (strcmp(ctl_portal_files[i].path, "/") == 0)
			assert_int_equal(r.blen, ctl_portal_files[i].len);

	assert_non_null(js);
	fetch(http_server_port(srv), js->path, false, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.blen, js->len);
	assert_true(has_header(&r, "Content-Type: text/javascript; charset=utf-8"));
	assert_true(has_header(&r, "Cache-Control: public, max-age=31536000, immutable"));
	fetch(http_server_port(srv), js->path, true, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.blen, 0);

	snprintf(path, sizeof(path), "%s/js/none.js", ctl_portal_base);
	fetch(http_server_port(srv), path, false, &r);
	assert_int_equal(r.status, 404);
	snprintf(path, sizeof(path), "%s/../../etc/passwd", ctl_portal_base);
	fetch(http_server_port(srv), path, false, &r);
	assert_int_equal(r.status, 404);
	http_server_stop(srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_served),
	};
	int r;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	r = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return r;
}
