/* Unit tests of controller/http over real sockets: an HTTPS listener on 127.0.0.1 with a
 * certificate from a test CA (common/pki) and a unix socket in a temporary directory, with
 * libcurl and raw sockets as clients. Routing, traversal, JSON bodies, limits, ETags, peer
 * credentials, slow clients, event streams (also idle ones parked without a thread), metrics,
 * configuration errors and stale sockets. Expected hashes are computed with OpenSSL here. */
#include "controller/http/http.h"

#include "common/pki/pki.h"
#include "common/util/error.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>
#include <curl/curl.h>

#include <openssl/pem.h>
#include <openssl/sha.h>

#define BODY_MAX (64 * 1024)
#ifndef N_IDLE_STREAMS
#define N_IDLE_STREAMS 16 /* -DN_IDLE_STREAMS=1000 for a manual scale check */
#endif
#define SSE_EVENTS 3

/* What the test server shares with its handlers. */
struct fixture {
	char dir[PATH_MAX];
	char sock[PATH_MAX + 16];
	char *ca_pem;
	char *cert_pem;
	char *key_pem;
	struct http_server *srv;
	uint16_t port;
	atomic_int echo_calls;
	atomic_int handler_errors; /* cmocka's asserts only work on the test's thread */
	/* The event stream of test_sse. */
	pthread_mutex_t sse_mu;
	struct http_stream *sse;
	int sse_produced, sse_sent, sse_parked;
	bool sse_done, sse_freed, sse_started;
	pthread_t sse_thread;
	/* Idle streams: they send only a heartbeat comment per generation. */
	atomic_int idle_open, idle_freed, idle_gen;
	int idle_fds[N_IDLE_STREAMS]; /* the clients left open for the server's stop */
	int n_idle_fds;
};

static struct fixture *g_fix;
static char g_self[PATH_MAX];
/* The server's idle timeout: 1 s, more under valgrind (TEST_HTTP_TIMEOUT_S), where a TLS
 * handshake can pause longer than that. */
static unsigned g_timeout_s = 1;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* Handlers. */

static void h_node_get(struct http_req *req)
{
	const char *verbose = http_req_query(req, "verbose");
	json_t *j = json_pack("{s:s, s:s, s:o}", "id", http_req_capture(req, "id"), "route",
			      http_req_route(req), "verbose",
			      verbose ? json_string(verbose) : json_null());

	http_reply_json(req, 200, j);
}

static void h_node_stats(struct http_req *req)
{
	http_reply_json(req, 200, json_pack("{s:b}", "stats", 1));
}

static void h_node_delete(struct http_req *req)
{
	http_reply_bytes(req, 204, NULL, NULL, 0);
}

static void h_echo(struct http_req *req)
{
	json_t *j;

	atomic_fetch_add(&g_fix->echo_calls, 1);
	j = http_req_json(req);
	if (!j)
		return;
	if (http_reply_header(req, "Location", "x") != -EINVAL) /* no reply yet */
		atomic_fetch_add(&g_fix->handler_errors, 1);
	http_reply_json(req, 201, json_incref(j));
	if (http_reply_header(req, "Location", "/api/v1/echo/1") != 0 ||
	    http_reply_header(req, "Bad Name", "x") != -EINVAL ||
	    http_reply_header(req, "X-Evil", "a\r\nSet-Cookie: x") != -EINVAL ||
	    http_reply_header(req, "Content-Type", "text/html") != -EINVAL)
		atomic_fetch_add(&g_fix->handler_errors, 1);
}

static void h_static(struct http_req *req)
{
	http_reply_bytes(req, 200, "text/plain", "hello", 5);
}

static void h_noreply(struct http_req *req)
{
}

static void h_whoami(struct http_req *req)
{
	const struct http_peer *p = http_req_peer(req);

	http_reply_json(req, 200,
			json_pack("{s:b, s:I, s:s, s:s}", "local", p->local, "uid",
				  (json_int_t)(p->local ? (long long)p->uid : -1), "addr", p->addr,
				  "ua", http_req_header(req, "user-AGENT") ?: ""));
}

static void h_metrics(struct http_req *req)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f || http_server_metrics(g_fix->srv, f) != 0)
		atomic_fetch_add(&g_fix->handler_errors, 1);
	if (f)
		fclose(f);
	http_reply_bytes(req, 200, "text/plain; version=0.0.4", text, len);
	free(text);
}

/* The event stream: a producer thread makes SSE_EVENTS events 50 ms apart, waking the stream
 * each time; the reader sends what was produced and parks in between. */
static ssize_t sse_read(void *cls, char *buf, size_t max)
{
	struct fixture *f = cls;
	ssize_t n = 0;

	pthread_mutex_lock(&f->sse_mu);
	if (f->sse_sent < f->sse_produced) {
		f->sse_sent++;
		n = snprintf(buf, max, "id: %d\nevent: tick\ndata: {\"n\":%d}\n\n", f->sse_sent,
			     f->sse_sent);
	} else if (f->sse_done) {
		n = HTTP_STREAM_END;
	} else {
		f->sse_parked++;
	}
	pthread_mutex_unlock(&f->sse_mu);
	return n;
}

static void sse_free(void *cls)
{
	struct fixture *f = cls;

	pthread_mutex_lock(&f->sse_mu);
	f->sse = NULL;
	f->sse_freed = true;
	pthread_mutex_unlock(&f->sse_mu);
}

static void *sse_producer(void *arg)
{
	struct fixture *f = arg;

	for (int i = 0; i < SSE_EVENTS; i++) {
		struct timespec ts = {0, 50 * 1000 * 1000};

		nanosleep(&ts, NULL);
		pthread_mutex_lock(&f->sse_mu);
		f->sse_produced++;
		if (i == SSE_EVENTS - 1)
			f->sse_done = true;
		http_stream_wake(f->sse); /* NULL-safe: the stream may be gone */
		pthread_mutex_unlock(&f->sse_mu);
	}
	return NULL;
}

struct idle {
	int gen;
};

static ssize_t idle_read(void *cls, char *buf, size_t max)
{
	struct idle *s = cls;
	int gen = atomic_load(&g_fix->idle_gen);

	if (s->gen == gen)
		return 0;
	s->gen = gen;
	return snprintf(buf, max, ": heartbeat\n\n");
}

static void idle_free(void *cls)
{
	free(cls);
	atomic_fetch_add(&g_fix->idle_freed, 1);
}

static void h_events(struct http_req *req)
{
	struct fixture *f = http_req_userdata(req);
	struct http_stream *s;

	if (http_req_query(req, "idle")) {
		struct idle *st = calloc(1, sizeof(*st));

		if (st)
			st->gen = atomic_load(&f->idle_gen);
		s = st ? http_reply_stream(req, NULL, idle_read, idle_free, st) : NULL;
		if (!s)
			atomic_fetch_add(&f->handler_errors, 1);
		else
			atomic_fetch_add(&f->idle_open, 1);
		return;
	}
	pthread_mutex_lock(&f->sse_mu);
	f->sse = http_reply_stream(req, "text/event-stream", sse_read, sse_free, f);
	if (!f->sse || pthread_create(&f->sse_thread, NULL, sse_producer, f) != 0)
		atomic_fetch_add(&f->handler_errors, 1);
	else
		f->sse_started = true;
	pthread_mutex_unlock(&f->sse_mu);
}

static const struct http_route routes[] = {
	{"GET", "/api/v1/nodes/{id}", h_node_get, 0, 0, NULL},
	{"GET", "/api/v1/nodes/stats", h_node_stats, 0, 0, NULL},
	{"DELETE", "/api/v1/nodes/{id}", h_node_delete, 0, 0, NULL},
	{"POST", "/api/v1/echo", h_echo, 0, 0, NULL},
	{"GET", "/api/v1/static", h_static, 0, 0, NULL},
	{"GET", "/api/v1/noreply", h_noreply, 0, 0, NULL},
	{"GET", "/api/v1/whoami", h_whoami, 0, 0, NULL},
	{"GET", "/api/v1/local", h_whoami, HTTP_ROUTE_LOCAL_ONLY, 0, NULL},
	{"GET", "/api/v1/events", h_events, 0, 0, NULL},
	{"GET", "/metrics", h_metrics, 0, 0, NULL},
	{"PUT", "/api/v1/never", h_noreply, 0, 0, NULL},
};

/* Clients. */

struct resp {
	long status;
	char *body;
	size_t len;
	char *hdrs;
	size_t hlen;
	double seconds;
};

static size_t grow(char **buf, size_t *len, const void *data, size_t n)
{
	char *nb = realloc(*buf, *len + n + 1);

	if (!nb)
		return 0;
	memcpy(nb + *len, data, n);
	*len += n;
	nb[*len] = '\0';
	*buf = nb;
	return n;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *cls)
{
	struct resp *r = cls;

	return grow(&r->body, &r->len, data, size * nmemb);
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *cls)
{
	struct resp *r = cls;

	return grow(&r->hdrs, &r->hlen, data, size * nmemb);
}

static void resp_done(struct resp *r)
{
	free(r->body);
	free(r->hdrs);
	memset(r, 0, sizeof(*r));
}

/* Value of header name in r (first one), into buf; NULL when absent. */
static const char *resp_header(const struct resp *r, const char *name, char *buf, size_t len)
{
	size_t nlen = strlen(name);

	for (const char *p = r->hdrs; p && *p;) {
		const char *eol = strstr(p, "\r\n");
		size_t l = eol ? (size_t)(eol - p) : strlen(p);

		if (l > nlen && !strncasecmp(p, name, nlen) && p[nlen] == ':') {
			const char *v = p + nlen + 1;

			while (*v == ' ')
				v++;
			snprintf(buf, len, "%.*s", (int)(l - (size_t)(v - p)), v);
			return buf;
		}
		p = eol ? eol + 2 : NULL;
	}
	return NULL;
}

struct reqopts {
	const char *method;
	const char *ctype;
	const void *body;
	size_t len;
	bool chunked;
	const char *header; /* one extra request header */
	bool via_unix;
};

struct chunked_src {
	const char *data;
	size_t len, pos;
};

static size_t on_read(char *buf, size_t size, size_t nitems, void *cls)
{
	struct chunked_src *s = cls;
	size_t n = size * nitems;

	if (n > s->len - s->pos)
		n = s->len - s->pos;
	memcpy(buf, s->data + s->pos, n);
	s->pos += n;
	return n;
}

static CURLcode do_req(const char *path, const struct reqopts *o, struct resp *out)
{
	struct fixture *f = g_fix;
	struct curl_slist *hl = NULL;
	struct curl_blob ca = {.data = f->ca_pem, .len = strlen(f->ca_pem)};
	struct chunked_src src = {0};
	char url[1024], ct[256];
	CURLcode rc;
	CURL *c = curl_easy_init();

	assert_non_null(c);
	memset(out, 0, sizeof(*out));
	if (o && o->via_unix) {
		snprintf(url, sizeof(url), "http://localhost%s", path);
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, f->sock);
	} else {
		snprintf(url, sizeof(url), "https://127.0.0.1:%u%s", f->port, path);
		curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &ca);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "test_http");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, out);
	if (o && o->method && !strcmp(o->method, "HEAD"))
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else if (o && o->method)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, o->method);
	if (o && o->ctype) {
		snprintf(ct, sizeof(ct), "Content-Type: %s", o->ctype);
		hl = curl_slist_append(hl, ct);
	}
	if (o && o->header)
		hl = curl_slist_append(hl, o->header);
	if (o && o->chunked) {
		src.data = o->body;
		src.len = o->len;
		hl = curl_slist_append(hl, "Transfer-Encoding: chunked");
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, &src);
	} else if (o && o->body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, o->body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)o->len);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
	curl_easy_getinfo(c, CURLINFO_TOTAL_TIME, &out->seconds);
	curl_slist_free_all(hl);
	curl_easy_cleanup(c);
	return rc;
}

static void get(const char *path, struct resp *out)
{
	assert_int_equal(do_req(path, NULL, out), CURLE_OK);
}

/* Raw sockets. */

static int connect_unix(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		close(fd);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

static int connect_tcp(uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Read from fd until EOF or deadline_ms; the bytes read go to buf (NUL-terminated). Returns
 * the milliseconds until EOF, or -1 at the deadline. */
static int64_t read_until_eof(int fd, int64_t deadline_ms, char *buf, size_t len)
{
	int64_t t0 = now_ms();
	size_t used = 0;

	buf[0] = '\0';
	for (;;) {
		int64_t left = t0 + deadline_ms - now_ms();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		char tmp[4096];
		ssize_t n;

		if (left <= 0)
			return -1;
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		n = read(fd, tmp, sizeof(tmp));
		if (n <= 0)
			return now_ms() - t0;
		if ((size_t)n > len - 1 - used)
			n = (ssize_t)(len - 1 - used);
		memcpy(buf + used, tmp, (size_t)n);
		used += (size_t)n;
		buf[used] = '\0';
	}
}

/* Read until buf holds needle or the deadline passes. */
static bool read_until(int fd, const char *needle, int64_t deadline_ms, char *buf, size_t len)
{
	int64_t t0 = now_ms();
	size_t used = 0;

	buf[0] = '\0';
	while (!strstr(buf, needle)) {
		int64_t left = t0 + deadline_ms - now_ms();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (left <= 0 || used == len - 1)
			return false;
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		n = read(fd, buf + used, len - 1 - used);
		if (n <= 0)
			return false;
		used += (size_t)n;
		buf[used] = '\0';
	}
	return true;
}

static void write_all(int fd, const char *s)
{
	assert_int_equal(send(fd, s, strlen(s), MSG_NOSIGNAL), (ssize_t)strlen(s));
}

/* Fixture. */

static char *key_pem_of(EVP_PKEY *key)
{
	BIO *bio = BIO_new(BIO_s_mem());
	char *data, *pem;
	long len;

	assert_non_null(bio);
	assert_int_equal(PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL), 1);
	len = BIO_get_mem_data(bio, &data);
	pem = strndup(data, (size_t)len);
	BIO_free(bio);
	assert_non_null(pem);
	return pem;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	X509 *ca = NULL, *cert = NULL;
	EVP_PKEY *ca_key = NULL, *key = NULL;
	const char *sans[] = {"127.0.0.1", "localhost"};
	struct http_config cfg = {0};
	char err[256];
	int r;

	if (!f)
		return -1;
	g_fix = f;
	pthread_mutex_init(&f->sse_mu, NULL);
	snprintf(f->dir, sizeof(f->dir), "%s/test_http.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->sock, sizeof(f->sock), "%s/api.sock", f->dir);
	if (pki_ca_create("Railyard HTTP Test CA", 2, &ca, &ca_key) < 0 ||
	    pki_key_generate(&key) < 0 ||
	    pki_cert_issue_server(ca, ca_key, key, "localhost", sans, 2, 2, &cert) < 0 ||
	    pki_cert_to_pem(ca, &f->ca_pem) < 0 || pki_cert_to_pem(cert, &f->cert_pem) < 0)
		return -1;
	f->key_pem = key_pem_of(key);
	/* Our keys are EC P-256 in PKCS#8: GnuTLS (MHD's TLS) must take them. */
	if (!strstr(f->key_pem, "-----BEGIN PRIVATE KEY-----"))
		return -1;
	X509_free(ca);
	X509_free(cert);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(key);

	cfg.listen = "127.0.0.1:0";
	cfg.cert_pem = f->cert_pem;
	cfg.key_pem = f->key_pem;
	cfg.unix_path = f->sock;
	cfg.body_max = BODY_MAX;
	cfg.timeout_s = g_timeout_s;
	cfg.threads = 2;
	r = http_server_start(&cfg, routes, sizeof(routes) / sizeof(routes[0]), f, &f->srv, err,
			      sizeof(err));
	if (r < 0) {
		fprintf(stderr, "http_server_start: %s (%s)\n", err, ry_strerror(r));
		return -1;
	}
	f->port = http_server_port(f->srv);
	if (!f->port)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	struct stat st;

	if (!f)
		return 0;
	/* Idle streams are parked: stopping must end them (MHD panics on suspended ones). */
	http_server_stop(f->srv);
	assert_int_equal(atomic_load(&f->idle_freed), atomic_load(&f->idle_open));
	for (int i = 0; i < f->n_idle_fds; i++) {
		char buf[4096];

		/* The server closed them: EOF (or a reset) after what was sent. */
		assert_true(read_until_eof(f->idle_fds[i], 5000, buf, sizeof(buf)) >= 0);
		close(f->idle_fds[i]);
	}
	/* The socket is gone with the server. */
	assert_int_equal(lstat(f->sock, &st), -1);
	if (f->sse_started)
		pthread_join(f->sse_thread, NULL);
	nftw(f->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	pthread_mutex_destroy(&f->sse_mu);
	free(f->ca_pem);
	free(f->cert_pem);
	free(f->key_pem);
	free(f);
	g_fix = NULL;
	return 0;
}

/* Tests. */

static void assert_error_body(const struct resp *r, const char *expected)
{
	assert_non_null(r->body);
	assert_string_equal(r->body, expected);
}

static void test_get_capture(void **state)
{
	struct resp r;
	char h[256];
	json_t *j;

	get("/api/v1/nodes/gpu%2D01?verbose=yes+please&x", &r);
	assert_int_equal(r.status, 200);
	j = json_loadb(r.body, r.len, 0, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "id")), "gpu-01");
	assert_string_equal(json_string_value(json_object_get(j, "route")), "/api/v1/nodes/{id}");
	assert_string_equal(json_string_value(json_object_get(j, "verbose")), "yes please");
	json_decref(j);
	assert_string_equal(resp_header(&r, "Content-Type", h, sizeof(h)), "application/json");
	assert_string_equal(resp_header(&r, "Cache-Control", h, sizeof(h)), "no-store");
	assert_string_equal(resp_header(&r, "X-Content-Type-Options", h, sizeof(h)), "nosniff");
	assert_null(resp_header(&r, "Server", h, sizeof(h)));
	resp_done(&r);

	/* A literal segment beats a capture. */
	get("/api/v1/nodes/stats", &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"stats\":true}");
	resp_done(&r);

	/* A GET route answers HEAD, without a body. */
	struct reqopts head = {.method = "HEAD"};
	assert_int_equal(do_req("/api/v1/static", &head, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.len, 0);
	assert_non_null(resp_header(&r, "ETag", h, sizeof(h)));
	assert_string_equal(resp_header(&r, "Content-Length", h, sizeof(h)), "5");
	resp_done(&r);
}

static void test_not_found(void **state)
{
	struct resp r;

	get("/api/v1/nope", &r);
	assert_int_equal(r.status, 404);
	assert_error_body(&r,
			  "{\"error\":{\"code\":\"not_found\",\"message\":\"no such resource\"}}");
	resp_done(&r);
	/* A capture never matches an empty segment; a trailing slash is another path. */
	get("/api/v1/nodes/", &r);
	assert_int_equal(r.status, 404);
	resp_done(&r);
	get("/api/v1/nodes/a/b", &r);
	assert_int_equal(r.status, 404);
	resp_done(&r);
	/* Local-only routes do not exist over TCP. */
	get("/api/v1/local", &r);
	assert_int_equal(r.status, 404);
	resp_done(&r);
}

static void test_method_not_allowed(void **state)
{
	struct reqopts post = {
		.method = "POST", .ctype = "application/json", .body = "{}", .len = 2};
	struct reqopts del = {.method = "DELETE"};
	struct resp r;
	char h[256];

	assert_int_equal(do_req("/api/v1/nodes/n1", &post, &r), CURLE_OK);
	assert_int_equal(r.status, 405);
	assert_string_equal(resp_header(&r, "Allow", h, sizeof(h)), "GET, HEAD, DELETE");
	assert_error_body(&r, "{\"error\":{\"code\":\"method_not_allowed\",\"message\":\"method "
			      "not allowed on this resource\"}}");
	resp_done(&r);

	assert_int_equal(do_req("/api/v1/nodes/n1", &del, &r), CURLE_OK);
	assert_int_equal(r.status, 204);
	assert_int_equal(r.len, 0);
	resp_done(&r);
}

static void test_traversal(void **state)
{
	static const char *const bad[] = {
		"/api/v1/../v1/static", "/api/v1/./static",	"/api/v1/nodes/a%2Fb",
		"/api/v1/nodes/a%2fb",	"/api/v1/nodes/%2e%2e", "/api/v1/nodes/%2E",
		"/api/v1//nodes/a",	"/api/v1/nodes/a%00",	"/api/v1/nodes/%zz",
		"/api/v1/nodes/%4",	"/api/v1/static/",	"/api/v1/nodes/..",
	};
	struct resp r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		get(bad[i], &r);
		if (r.status != 404)
			fail_msg("%s: %ld", bad[i], r.status);
		assert_error_body(&r, "{\"error\":{\"code\":\"not_found\",\"message\":\"no such "
				      "resource\"}}");
		resp_done(&r);
	}
	/* A malformed query is a 400 naming the query. */
	get("/api/v1/nodes/a?x=%zz", &r);
	assert_int_equal(r.status, 400);
	assert_error_body(&r, "{\"error\":{\"code\":\"bad_request\",\"message\":\"malformed or too "
			      "long query string\",\"field\":\"query\"}}");
	resp_done(&r);
}

static void test_json_body(void **state)
{
	struct fixture *f = *state;
	struct reqopts o = {.ctype = "application/json; charset=utf-8",
			    .body = "{\"a\":[1,2],\"b\":\"x\"}"};
	struct resp r;
	char h[256];

	o.len = strlen(o.body);
	assert_int_equal(do_req("/api/v1/echo", &o, &r), CURLE_OK);
	assert_int_equal(r.status, 201);
	assert_string_equal(r.body, "{\"a\":[1,2],\"b\":\"x\"}");
	assert_string_equal(resp_header(&r, "Location", h, sizeof(h)), "/api/v1/echo/1");
	/* No ETag on a POST. */
	assert_null(resp_header(&r, "ETag", h, sizeof(h)));
	resp_done(&r);

	/* The same over a chunked upload. */
	o.chunked = true;
	assert_int_equal(do_req("/api/v1/echo", &o, &r), CURLE_OK);
	assert_int_equal(r.status, 201);
	assert_string_equal(r.body, "{\"a\":[1,2],\"b\":\"x\"}");
	resp_done(&r);
	assert_int_equal(atomic_load(&f->echo_calls), 2);
}

static void test_json_malformed(void **state)
{
	struct reqopts o = {.ctype = "application/json", .body = "{\"a\": tru}"};
	struct resp r;
	json_t *j;
	const char *msg;

	o.len = strlen(o.body);
	assert_int_equal(do_req("/api/v1/echo", &o, &r), CURLE_OK);
	assert_int_equal(r.status, 400);
	j = json_loadb(r.body, r.len, 0, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "code")),
			    "invalid_json");
	msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
	assert_non_null(msg);
	assert_true(strncmp(msg, "line 1 column ", 14) == 0);
	assert_null(json_object_get(json_object_get(j, "error"), "field"));
	assert_int_equal(json_object_size(j), 1);
	json_decref(j);
	resp_done(&r);

	/* Not an object; duplicate keys; empty. */
	static const char *const bodies[] = {"[1,2]", "{\"a\":1,\"a\":2}", ""};
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		o.body = bodies[i];
		o.len = strlen(bodies[i]);
		assert_int_equal(do_req("/api/v1/echo", &o, &r), CURLE_OK);
		assert_int_equal(r.status, 400);
		assert_non_null(strstr(r.body, "\"invalid_json\""));
		resp_done(&r);
	}
}

static void test_wrong_content_type(void **state)
{
	static const char *const types[] = {"text/plain", "application/jsonx",
					    "application/x-www-form-urlencoded"};
	struct reqopts o = {.body = "{}", .len = 2};
	struct resp r;

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		o.ctype = types[i];
		assert_int_equal(do_req("/api/v1/echo", &o, &r), CURLE_OK);
		assert_int_equal(r.status, 415);
		assert_error_body(&r, "{\"error\":{\"code\":\"unsupported_media_type\",\"message\":"
				      "\"Content-Type must be application/json\"}}");
		resp_done(&r);
	}
}

static void test_too_big(void **state)
{
	struct fixture *f = *state;
	static char big[8 * BODY_MAX];
	struct reqopts o = {.ctype = "application/json", .body = big, .len = BODY_MAX + 1};
	struct resp r;
	int calls = atomic_load(&f->echo_calls);
	static const char expected[] = "{\"error\":{\"code\":\"payload_too_large\",\"message\":"
				       "\"the request body is over its limit\"}}";

	memset(big, ' ', sizeof(big));
	big[0] = '{';
	/* With Content-Length: the body is dropped as it comes, then the 413. */
	assert_int_equal(do_req("/api/v1/echo", &o, &r), CURLE_OK);
	assert_int_equal(r.status, 413);
	assert_error_body(&r, expected);
	resp_done(&r);
	/* With Expect: 100-continue, or far too large: refused before any body is sent. */
	o.header = "Expect: 100-continue";
	assert_int_equal(do_req("/api/v1/echo", &o, &r), CURLE_OK);
	assert_int_equal(r.status, 413);
	assert_error_body(&r, expected);
	resp_done(&r);
	o.len = sizeof(big);
	assert_int_equal(do_req("/api/v1/echo", &o, &r), CURLE_OK);
	assert_int_equal(r.status, 413);
	resp_done(&r);
	o.header = NULL;
	/* Chunked: read, dropped, refused. */
	o.chunked = true;
	o.len = 2 * BODY_MAX;
	assert_int_equal(do_req("/api/v1/echo", &o, &r), CURLE_OK);
	assert_int_equal(r.status, 413);
	assert_error_body(&r, expected);
	resp_done(&r);
	/* None reached the handler. Exactly the limit does. */
	assert_int_equal(atomic_load(&f->echo_calls), calls);
	o.chunked = false;
	o.len = BODY_MAX;
	big[BODY_MAX - 1] = '}';
	assert_int_equal(do_req("/api/v1/echo", &o, &r), CURLE_OK);
	assert_int_equal(r.status, 201);
	resp_done(&r);
	assert_int_equal(atomic_load(&f->echo_calls), calls + 1);
}

static void test_etag(void **state)
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	char expected[40], hdr[128], h[256];
	struct reqopts o = {.header = hdr};
	struct resp r;

	SHA256((const unsigned char *)"hello", 5, md);
	expected[0] = '"';
	for (int i = 0; i < 16; i++)
		snprintf(expected + 1 + 2 * i, 3, "%02x", md[i]);
	strcat(expected, "\"");

	get("/api/v1/static", &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "hello");
	assert_string_equal(resp_header(&r, "ETag", h, sizeof(h)), expected);
	assert_string_equal(resp_header(&r, "Content-Type", h, sizeof(h)), "text/plain");
	resp_done(&r);

	snprintf(hdr, sizeof(hdr), "If-None-Match: %s", expected);
	assert_int_equal(do_req("/api/v1/static", &o, &r), CURLE_OK);
	assert_int_equal(r.status, 304);
	assert_int_equal(r.len, 0);
	assert_string_equal(resp_header(&r, "ETag", h, sizeof(h)), expected);
	resp_done(&r);

	snprintf(hdr, sizeof(hdr), "If-None-Match: \"other\", W/%s", expected);
	assert_int_equal(do_req("/api/v1/static", &o, &r), CURLE_OK);
	assert_int_equal(r.status, 304);
	resp_done(&r);

	snprintf(hdr, sizeof(hdr), "If-None-Match: \"0123\"");
	assert_int_equal(do_req("/api/v1/static", &o, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "hello");
	resp_done(&r);
}

static void test_noreply(void **state)
{
	struct resp r;

	get("/api/v1/noreply", &r);
	assert_int_equal(r.status, 500);
	assert_error_body(&r, "{\"error\":{\"code\":\"internal\",\"message\":\"the handler set "
			      "no reply\"}}");
	resp_done(&r);
}

static void test_unix_socket(void **state)
{
	struct fixture *f = *state;
	struct reqopts o = {.via_unix = true};
	struct resp r;
	struct stat st;
	json_t *j;

	assert_int_equal(lstat(f->sock, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);

	assert_int_equal(do_req("/api/v1/local", &o, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	j = json_loadb(r.body, r.len, 0, NULL);
	assert_non_null(j);
	assert_true(json_is_true(json_object_get(j, "local")));
	assert_int_equal(json_integer_value(json_object_get(j, "uid")), (json_int_t)geteuid());
	assert_string_equal(json_string_value(json_object_get(j, "addr")), "unix");
	assert_string_equal(json_string_value(json_object_get(j, "ua")), "test_http");
	json_decref(j);
	resp_done(&r);

	/* Over TCP the peer is an address. */
	get("/api/v1/whoami", &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\"addr\":\"127.0.0.1\""));
	assert_non_null(strstr(r.body, "\"local\":false"));
	resp_done(&r);
}

/* The client of test_unix_other_uid, in a process of its own (exec'd: not under valgrind,
 * nothing of the test's threads): as uid/gid 65534, GET over the socket. Exit 2 when the
 * socket refuses the connection (EACCES), 3 on a 403 with the error body, >= 10 otherwise. */
static int nobody_client(const char *sock)
{
	static const char rq[] = "GET /api/v1/whoami HTTP/1.1\r\nHost: x\r\n"
				 "Connection: close\r\n\r\n";
	char buf[1024];
	size_t used = 0;
	ssize_t n;
	int fd;

	if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
		return 10;
	fd = connect_unix(sock);
	if (fd == -EACCES)
		return 2;
	if (fd < 0)
		return 11;
	if (write(fd, rq, sizeof(rq) - 1) != (ssize_t)sizeof(rq) - 1)
		return 12;
	while (used < sizeof(buf) - 1 && (n = read(fd, buf + used, sizeof(buf) - 1 - used)) > 0)
		used += (size_t)n;
	buf[used] = '\0';
	close(fd);
	return strncmp(buf, "HTTP/1.1 403", 12) == 0 && strstr(buf, "\"forbidden\"") ? 3 : 13;
}

/* A peer of another uid: the mode keeps it out; with the mode opened, the credentials check
 * answers 403. Needs root to change uid. */
static void test_unix_other_uid(void **state)
{
	struct fixture *f = *state;
	pid_t pid;
	int status;

	if (geteuid() != 0) {
		fprintf(stderr, "[  SKIPPED ] not root: cannot connect as another uid\n");
		skip();
	}
	assert_int_equal(chmod(f->dir, 0711), 0);
	for (int open_mode = 0; open_mode < 2; open_mode++) {
		if (open_mode)
			assert_int_equal(chmod(f->sock, 0666), 0);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			execl(g_self, g_self, "--nobody-client", f->sock, (char *)NULL);
			_exit(20);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), open_mode ? 3 : 2);
	}
	assert_int_equal(chmod(f->sock, 0600), 0);
	assert_int_equal(chmod(f->dir, 0700), 0);
}

/* Half a request, then silence: the server drops the connection after timeout_s (1 s). */
static void test_slow_client(void **state)
{
	struct fixture *f = *state;
	char buf[4096];
	int64_t ms;
	int fd;

	fd = connect_unix(f->sock);
	assert_true(fd >= 0);
	write_all(fd, "GET /api/v1/nodes/a HTTP/1.1\r\nHost: x\r\nX-Slow: ");
	ms = read_until_eof(fd, g_timeout_s * 1000 + 9000, buf, sizeof(buf));
	close(fd);
	if (ms < 0)
		fail_msg("unix: the slow client was not dropped in time");
	assert_true(ms >= (int64_t)g_timeout_s * 1000 - 500);

	/* Over TCP: a TLS handshake never finished. */
	fd = connect_tcp(f->port);
	write_all(fd, "\x16\x03\x01");
	ms = read_until_eof(fd, g_timeout_s * 1000 + 9000, buf, sizeof(buf));
	close(fd);
	if (ms < 0)
		fail_msg("tcp: the slow client was not dropped in time");
	assert_true(ms >= (int64_t)g_timeout_s * 1000 - 500);
}

/* Two requests on one connection; then a request whose headers are over MHD's memory limit:
 * MHD answers it itself (431), and the request's state is freed all the same (valgrind). */
static void test_keepalive_and_huge_headers(void **state)
{
	struct fixture *f = *state;
	static char huge[64 * 1024];
	char buf[8192];
	int fd = connect_unix(f->sock);

	assert_true(fd >= 0);
	write_all(fd, "GET /api/v1/nodes/one HTTP/1.1\r\nHost: x\r\n\r\n"
		      "GET /api/v1/nodes/two HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_true(read_until_eof(fd, 10000, buf, sizeof(buf)) >= 0);
	close(fd);
	assert_non_null(strstr(buf, "\"id\":\"one\""));
	assert_non_null(strstr(buf, "\"id\":\"two\""));

	fd = connect_unix(f->sock);
	assert_true(fd >= 0);
	memset(huge, 'a', sizeof(huge) - 1);
	write_all(fd, "GET /api/v1/nodes/big HTTP/1.1\r\nHost: x\r\nX-Huge: ");
	/* The server may stop reading and answer before all of it is written. */
	(void)!send(fd, huge, strlen(huge), MSG_NOSIGNAL);
	(void)!send(fd, "\r\n\r\n", 4, MSG_NOSIGNAL);
	assert_true(read_until_eof(fd, 10000, buf, sizeof(buf)) >= 0);
	close(fd);
	if (getenv("TEST_HTTP_VERBOSE"))
		fprintf(stderr, "huge headers: %.40s\n", buf);
	assert_true(strncmp(buf, "HTTP/1.1 431", 12) == 0 || buf[0] == '\0');
}

static void test_sse(void **state)
{
	struct fixture *f = *state;
	struct resp r;
	char h[256];
	bool freed = false;

	get("/api/v1/events", &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(resp_header(&r, "Content-Type", h, sizeof(h)), "text/event-stream");
	assert_null(resp_header(&r, "ETag", h, sizeof(h)));
	assert_string_equal(r.body, "id: 1\nevent: tick\ndata: {\"n\":1}\n\n"
				    "id: 2\nevent: tick\ndata: {\"n\":2}\n\n"
				    "id: 3\nevent: tick\ndata: {\"n\":3}\n\n");
	resp_done(&r);
	pthread_join(f->sse_thread, NULL);
	f->sse_started = false;
	/* The stream parked between events rather than spinning, and was freed once. */
	pthread_mutex_lock(&f->sse_mu);
	assert_true(f->sse_parked >= 1 && f->sse_parked <= 2 * SSE_EVENTS + 2);
	pthread_mutex_unlock(&f->sse_mu);
	for (int64_t t0 = now_ms(); !freed && now_ms() - t0 < 5000;) {
		pthread_mutex_lock(&f->sse_mu);
		freed = f->sse_freed;
		pthread_mutex_unlock(&f->sse_mu);
		if (!freed)
			usleep(10000);
	}
	assert_true(freed);
}

/* More idle event streams than worker threads (2 per listener): parked, they hold none, so
 * the API still answers on both listeners. http_server_stop() ends them (see teardown). */
static void test_idle_streams(void **state)
{
	struct fixture *f = *state;
	int *fds = f->idle_fds;
	char buf[4096];
	struct resp r;
	struct reqopts ux = {.via_unix = true};

	for (int i = 0; i < N_IDLE_STREAMS; i++) {
		fds[i] = connect_unix(f->sock);
		assert_true(fds[i] >= 0);
		write_all(fds[i], "GET /api/v1/events?idle=1 HTTP/1.1\r\nHost: x\r\n\r\n");
		if (!read_until(fds[i], "\r\n\r\n", 5000, buf, sizeof(buf)))
			fail_msg("idle stream %d: no headers", i);
		assert_true(strncmp(buf, "HTTP/1.1 200", 12) == 0);
	}
	/* Idle past the timeout: a parked stream does not time out. */
	usleep(g_timeout_s * 1000 * 1000 + 500 * 1000);
	assert_int_equal(do_req("/api/v1/nodes/x", &ux, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_true(r.seconds < 2.0 * g_timeout_s);
	resp_done(&r);
	get("/api/v1/nodes/y", &r);
	assert_int_equal(r.status, 200);
	resp_done(&r);
	for (int i = 0; i < N_IDLE_STREAMS; i++) {
		struct pollfd p = {.fd = fds[i], .events = POLLIN};

		/* Still open: nothing to read, no EOF. */
		assert_int_equal(poll(&p, 1, 0), 0);
	}
	/* Wake them all with nothing to send: each read() returns 0 and parks again. */
	http_server_wake_streams(f->srv);
	usleep(100 * 1000);
	assert_int_equal(atomic_load(&f->idle_freed), 0);
	for (int i = 0; i < N_IDLE_STREAMS; i++) {
		struct pollfd p = {.fd = fds[i], .events = POLLIN};

		assert_int_equal(poll(&p, 1, 0), 0);
	}
	/* Half are closed by their clients; a heartbeat finds them gone (a parked connection
	 * cannot notice by itself); the other half get it and stay for the server's stop. */
	for (int i = 0; i < N_IDLE_STREAMS / 2; i++)
		close(fds[i]);
	atomic_fetch_add(&f->idle_gen, 1);
	http_server_wake_streams(f->srv);
	for (int i = N_IDLE_STREAMS / 2; i < N_IDLE_STREAMS; i++) {
		if (!read_until(fds[i], ": heartbeat\n\n", 5000, buf, sizeof(buf)))
			fail_msg("idle stream %d: no heartbeat", i);
	}
	for (int64_t t0 = now_ms();
	     atomic_load(&f->idle_freed) < N_IDLE_STREAMS / 2 && now_ms() - t0 < 5000;) {
		atomic_fetch_add(&f->idle_gen, 1); /* a second write may be needed to see EPIPE */
		http_server_wake_streams(f->srv);
		usleep(20000);
	}
	assert_int_equal(atomic_load(&f->idle_freed), N_IDLE_STREAMS / 2);
	assert_int_equal(atomic_load(&f->handler_errors), 0);
	/* The open half are ended by the server's stop in teardown. */
	for (int i = 0; i < N_IDLE_STREAMS / 2; i++)
		fds[i] = fds[N_IDLE_STREAMS / 2 + i];
	f->n_idle_fds = N_IDLE_STREAMS - N_IDLE_STREAMS / 2;
}

static void test_metrics(void **state)
{
	struct resp r;

	get("/metrics", &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "# TYPE railyard_http_requests_total counter\n"));
	assert_non_null(strstr(r.body, "railyard_http_requests_total{route=\"/api/v1/nodes/{id}\","
				       "method=\"GET\",code=\"2xx\"} "));
	assert_non_null(strstr(r.body, "railyard_http_requests_total{route=\"/api/v1/echo\","
				       "method=\"POST\",code=\"4xx\"} "));
	assert_non_null(strstr(r.body, "railyard_http_requests_total{route=\"/api/v1/noreply\","
				       "method=\"GET\",code=\"5xx\"} 1\n"));
	assert_non_null(strstr(r.body, "railyard_http_requests_total{route=\"unmatched\","
				       "method=\"ANY\",code=\"4xx\"} "));
	assert_non_null(
		strstr(r.body, "# TYPE railyard_http_request_duration_seconds histogram\n"));
	assert_non_null(strstr(r.body, "railyard_http_request_duration_seconds_bucket{route=\"/api/"
				       "v1/static\",method=\"GET\",le=\"0.001\"} "));
	assert_non_null(strstr(r.body, "railyard_http_request_duration_seconds_bucket{route=\"/api/"
				       "v1/static\",method=\"GET\",le=\"+Inf\"} "));
	assert_non_null(strstr(r.body, "railyard_http_request_duration_seconds_count{route=\"/api/"
				       "v1/static\",method=\"GET\"} "));
	assert_non_null(strstr(r.body, "railyard_http_request_duration_seconds_sum{route=\"/api/v1/"
				       "static\",method=\"GET\"} "));
	/* The idle streams of test_idle_streams still open. */
	char open_streams[64];
	snprintf(open_streams, sizeof(open_streams), "railyard_http_streams %d\n",
		 N_IDLE_STREAMS - N_IDLE_STREAMS / 2);
	assert_non_null(strstr(r.body, open_streams));
	/* No series for a route never hit. */
	assert_null(strstr(r.body, "route=\"/api/v1/never\""));
	resp_done(&r);
}

/* Servers of their own: configuration errors and the unix socket's life cycle. */

static void noop(struct http_req *req)
{
	http_reply_bytes(req, 200, "text/plain", "ok", 2);
}

static void test_config_errors(void **state)
{
	struct fixture *f = *state;
	struct http_server *srv = NULL;
	struct http_route ok = {"GET", "/x", noop, 0, 0, NULL};
	struct http_config cfg = {.listen = "127.0.0.1:0"};
	char err[256];
	static const char *const bad_patterns[] = {"x",	       "/a//b", "/a/",	 "/{}",
						   "/{a}/{a}", "/a b",	"/a/..", "/{a-b}"};

	/* Plain HTTP over TCP only when asked. */
	assert_int_equal(http_server_start(&cfg, &ok, 1, NULL, &srv, err, sizeof(err)), -EINVAL);
	cfg.plain_http = true;
	assert_int_equal(http_server_start(&cfg, &ok, 1, NULL, &srv, err, sizeof(err)), 0);
	assert_true(http_server_port(srv) > 0);
	http_server_stop(srv);
	/* No listener; half the TLS pair; a bad address. */
	struct http_config none = {0};
	assert_int_equal(http_server_start(&none, &ok, 1, NULL, &srv, err, sizeof(err)), -EINVAL);
	struct http_config half = {.listen = "127.0.0.1:0", .cert_pem = f->cert_pem};
	assert_int_equal(http_server_start(&half, &ok, 1, NULL, &srv, err, sizeof(err)), -EINVAL);
	struct http_config addr = {.listen = "127.0.0.1", .plain_http = true};
	assert_int_equal(http_server_start(&addr, &ok, 1, NULL, &srv, err, sizeof(err)), -EINVAL);
	/* A key the TLS library refuses. */
	struct http_config badkey = {.listen = "127.0.0.1:0",
				     .cert_pem = f->cert_pem,
				     .key_pem =
					     "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE "
					     "KEY-----\n"};
	assert_int_equal(http_server_start(&badkey, &ok, 1, NULL, &srv, err, sizeof(err)),
			 -RY_E_CRYPTO);
	/* Route tables. */
	for (size_t i = 0; i < sizeof(bad_patterns) / sizeof(bad_patterns[0]); i++) {
		struct http_route r = {"GET", bad_patterns[i], noop, 0, 0, NULL};

		if (http_server_start(&cfg, &r, 1, NULL, &srv, err, sizeof(err)) != -EINVAL)
			fail_msg("pattern %s accepted", bad_patterns[i]);
	}
	struct http_route badm = {"PATCH", "/x", noop, 0, 0, NULL};
	assert_int_equal(http_server_start(&cfg, &badm, 1, NULL, &srv, err, sizeof(err)), -EINVAL);
	struct http_route twice[] = {ok, ok};
	assert_int_equal(http_server_start(&cfg, twice, 2, NULL, &srv, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "twice"));
	/* The port is taken. */
	struct http_server *a = NULL;
	char listen[64];
	assert_int_equal(http_server_start(&cfg, &ok, 1, NULL, &a, err, sizeof(err)), 0);
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", http_server_port(a));
	struct http_config taken = {.listen = listen, .plain_http = true};
	assert_int_equal(http_server_start(&taken, &ok, 1, NULL, &srv, err, sizeof(err)),
			 -EADDRINUSE);
	http_server_stop(a);
}

static void test_unix_lifecycle(void **state)
{
	struct fixture *f = *state;
	struct http_route ok = {"GET", "/x", noop, 0, 0, NULL};
	struct http_server *a = NULL, *b = NULL;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char path[PATH_MAX + 16], err[256];
	struct http_config cfg = {.unix_path = path};
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/life.sock", f->dir);
	/* A stale socket (bound, nobody listening) is replaced. */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_true(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	assert_int_equal(http_server_start(&cfg, &ok, 1, NULL, &a, err, sizeof(err)), 0);
	assert_int_equal(http_server_port(a), 0);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	/* A live one is not. */
	assert_int_equal(http_server_start(&cfg, &ok, 1, NULL, &b, err, sizeof(err)), -EADDRINUSE);
	http_server_stop(a);
	assert_int_equal(lstat(path, &st), -1);
	/* Nor is a file that is not a socket. */
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(http_server_start(&cfg, &ok, 1, NULL, &b, err, sizeof(err)), -EEXIST);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	unlink(path);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_capture),
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_method_not_allowed),
		cmocka_unit_test(test_traversal),
		cmocka_unit_test(test_json_body),
		cmocka_unit_test(test_json_malformed),
		cmocka_unit_test(test_wrong_content_type),
		cmocka_unit_test(test_too_big),
		cmocka_unit_test(test_etag),
		cmocka_unit_test(test_noreply),
		cmocka_unit_test(test_unix_socket),
		cmocka_unit_test(test_unix_other_uid),
		cmocka_unit_test(test_slow_client),
		cmocka_unit_test(test_keepalive_and_huge_headers),
		cmocka_unit_test(test_sse),
		cmocka_unit_test(test_idle_streams),
		cmocka_unit_test(test_metrics),
		cmocka_unit_test(test_config_errors),
		cmocka_unit_test(test_unix_lifecycle),
	};
	const char *t = getenv("TEST_HTTP_TIMEOUT_S");
	int rc;

	if (argc == 3 && !strcmp(argv[1], "--nobody-client"))
		return nobody_client(argv[2]);
	if (!realpath(argv[0], g_self))
		return 1;
	if (t && atoi(t) > 0)
		g_timeout_s = (unsigned)atoi(t);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, setup, teardown);
	curl_global_cleanup();
	return rc;
}
