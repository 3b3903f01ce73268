/* Fuzz target: REST request bodies and queries (docs/rest.md), through the real HTTP server
 * (libmicrohttpd), router, authorization, route handlers and services of a serving controller
 * (fuzz_ctl.h) into its SQLite store, over the state directory's unix socket (plain HTTP; its
 * peer acts as admin, so no TLS and no token are needed). The database is the same at the start
 * of every input.
 *
 * Input: u8 route (below; "{id}" in a path is the next string of the input, a placeholder of
 * fuzz_ctl_subst() such as "@D" naming what the set-up made), u8 flags (bit 0: no JSON
 * content type, bit 1: "Content-Type: text/plain"), the query string (NUL-terminated), then the
 * body: the rest, with the placeholders of fuzz_ctl_subst_all() replaced (node ids are random;
 * their host names gpu-node-01 and gpu-node-02 are not). The last route takes the method (u8)
 * and the whole path (a string, placeholders replaced) from the input.
 * Invariants: every request gets one well-formed HTTP reply within 10 s; no reply is a 500; a
 * JSON reply parses; an error reply is {"error": {"code", "message"}}. */
#include "tests/fuzz/fuzz_ctl.h"
#include "tests/fuzz/fuzz_util.h"

#include "controller/api/api.h"
#include "controller/state.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static struct fuzz_ctl *ctl;
static struct sockaddr_un sock;

static const struct {
	const char *method, *path;
} routes[] = {
	{"POST", "/api/v1/playbooks"},
	{"POST", "/api/v1/playbooks/check"},
	{"POST", "/api/v1/deployments"},
	{"POST", "/api/v1/deployments/{id}/cancel"},
	{"POST", "/api/v1/campaigns"},
	{"POST", "/api/v1/campaigns/{id}/cancel"},
	{"POST", "/api/v1/signoffs"},
	{"POST", "/api/v1/bench-runs"},
	{"POST", "/api/v1/bench-runs/{id}/cancel"},
	{"POST", "/api/v1/revalidations"},
	{"POST", "/api/v1/revalidations/{id}/cancel"},
	{"POST", "/api/v1/enrollment-tokens"},
	{"DELETE", "/api/v1/enrollment-tokens/{id}"},
	{"POST", "/api/v1/api-tokens"},
	{"DELETE", "/api/v1/api-tokens/{id}"},
	{"POST", "/api/v1/nodes/{id}/revoke"},
	{"GET", "/api/v1/nodes"},
	{"GET", "/api/v1/nodes/{id}"},
	{"GET", "/api/v1/deployments"},
	{"GET", "/api/v1/deployments/{id}"},
	{"GET", "/api/v1/bench-runs"},
	{"GET", "/api/v1/bench-runs/{id}"},
	{"GET", "/api/v1/campaigns"},
	{"GET", "/api/v1/signoffs"},
	{"GET", "/api/v1/revalidations"},
	{"GET", "/api/v1/audit"},
	{"GET", "/api/v1/playbooks"},
	{"GET", "/api/v1/playbooks/{id}"},
	{"GET", "/api/v1/enrollment-tokens"},
	{"GET", "/api/v1/api-tokens"},
	{"GET", "/api/v1/clusters"},
};
#define N_ROUTES (sizeof(routes) / sizeof(routes[0]))

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char *p;

	(void)argc;
	(void)argv;
	fuzz_quiet_logs();
	ctl = fuzz_ctl_setup(true);
	p = ctl_state_path(ctl->state, CTL_API_SOCKET);
	sock.sun_family = AF_UNIX;
	if (!p || strlen(p) >= sizeof(sock.sun_path))
		abort();
	memcpy(sock.sun_path, p, strlen(p) + 1);
	free(p);
	return 0;
}

struct buf {
	char *p;
	size_t len, cap;
};

static void put(struct buf *b, const void *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Send the request, read the reply until the server closes (Connection: close). */
static void exchange(const struct buf *req, struct buf *reply)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int64_t end = mono_ms() + 10000;
	size_t off = 0;

	FUZZ_CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&sock, sizeof(sock)) == 0,
		   "cannot connect to the API socket: %s", strerror(errno));
	while (off < req->len) {
		ssize_t n = send(fd, req->p + off, req->len - off, MSG_NOSIGNAL);

		if (n <= 0)
			break; /* the server may answer (413, 400) before reading it all */
		off += (size_t)n;
	}
	(void)shutdown(fd, SHUT_WR);
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		char chunk[16384];
		int64_t left = end - mono_ms();
		ssize_t n;

		FUZZ_CHECK(left > 0, "no reply within 10 s to: %.200s", req->p);
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		n = recv(fd, chunk, sizeof(chunk), 0);
		if (n <= 0)
			break;
		put(reply, chunk, (size_t)n);
	}
	close(fd);
}

static void check_reply(const struct buf *reply, const struct buf *req, bool head)
{
	const char *body = reply->p ? strstr(reply->p, "\r\n\r\n") : NULL, *ct;
	unsigned status = 0;

	/* A request MHD cannot parse may be closed without a reply. */
	if (!reply->p || reply->len == 0)
		return;
	FUZZ_CHECK(sscanf(reply->p, "HTTP/1.%*[01] %u ", &status) == 1 && status >= 100 &&
			   status < 600,
		   "not an HTTP reply: %.200s", reply->p);
	FUZZ_CHECK(status != 500, "a 500 reply to: %.300s\n-> %.500s", req->p, reply->p);
	ct = strcasestr(reply->p, "\r\nContent-Type: application/json");
	/* A reply to HEAD has the headers of the GET, not its body. */
	if (body && ct && ct < body && status != 304 && !head) {
		json_error_t je;
		json_t *doc = json_loads(body + 4, 0, &je);

		FUZZ_CHECK(doc != NULL, "a JSON reply that does not parse (%s): %.300s", je.text,
			   body + 4);
		if (status >= 400)
			FUZZ_CHECK(json_is_string(
					   json_object_get(json_object_get(doc, "error"), "code")),
				   "an error reply without error.code: %.300s", body + 4);
		json_decref(doc);
	}
}

/* A path with its "{id}" replaced by the input's next string (or a placeholder's value). */
static char *make_path(struct fuzz_in *in, const char *pattern)
{
	const char *at = strstr(pattern, "{id}");
	char *id, *out;

	if (!at)
		return strdup(pattern);
	id = fuzz_str(in, 4096);
	if (asprintf(&out, "%.*s%s%s", (int)(at - pattern), pattern, fuzz_ctl_subst(ctl, id),
		     at + 4) < 0)
		abort();
	free(id);
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const methods[] = {"GET", "POST", "PUT", "DELETE", "HEAD", "PATCH"};
	struct fuzz_in in = {data, size};
	unsigned route = fuzz_u8(&in) % (N_ROUTES + 1), flags = fuzz_u8(&in);
	const char *method;
	char *path, *query, len[32];
	struct buf req = {0}, reply = {0};
	size_t body_len, raw_len;
	const uint8_t *raw;
	char *body;

	fuzz_ctl_reset(ctl);
	if (route == N_ROUTES) {
		char *p;
		size_t n;

		method = methods[fuzz_u8(&in) % 6];
		p = fuzz_str(&in, 8192);
		path = fuzz_ctl_subst_all(ctl, p, strlen(p), &n);
		free(p);
	} else {
		method = routes[route].method;
		path = make_path(&in, routes[route].path);
	}
	query = fuzz_str(&in, 8192);
	raw = fuzz_bytes(&in, in.left, &raw_len);
	body = fuzz_ctl_subst_all(ctl, (const char *)raw, raw_len, &body_len);
	puts_(&req, method);
	puts_(&req, " ");
	puts_(&req, path);
	if (query[0]) {
		puts_(&req, "?");
		puts_(&req, query);
	}
	puts_(&req, " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
	if (!(flags & 1))
		puts_(&req, flags & 2 ? "Content-Type: text/plain\r\n"
				      : "Content-Type: application/json\r\n");
	snprintf(len, sizeof(len), "Content-Length: %zu\r\n\r\n", body_len);
	puts_(&req, len);
	put(&req, body, body_len);
	exchange(&req, &reply);
	if (getenv("FUZZ_LOG")) {
		const char *b = reply.p ? strstr(reply.p, "\r\n\r\n") : NULL;

		/* FUZZ_LOG=1: the request line and the reply's body, to check seeds. */
		fprintf(stderr, "fuzz_rest: %.*s -> %.300s\n", (int)strcspn(req.p, "\r"), req.p,
			b ? b + 4 : "(no reply)");
	}
	check_reply(&reply, &req, strcmp(method, "HEAD") == 0);
	free(reply.p);
	free(req.p);
	free(body);
	free(query);
	free(path);
	return 0;
}
