/* The server: listening sockets (TCP bound here, the unix socket created 0600 with a stale one
 * replaced), one libmicrohttpd daemon per listener sharing the routes, and the access handler
 * that walks a request through peer check, routing, body limit, handler and reply. */
#include "controller/http/http_int.h"

#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/crypto.h>

/* TLS 1.2 and 1.3 only. */
#define HTTP_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
#define HTTP_LISTEN_BACKLOG 512
/* A body over the limit is read and dropped, up to this many times the limit, before the 413
 * goes out: a server that closes a connection with unread input resets it, and the client may
 * lose the reply. Without Content-Length (chunked) past that size the connection is closed;
 * a larger Content-Length, or "Expect: 100-continue", gets its 413 at once, before any body. */
#define HTTP_DISCARD_FACTOR 4

/* MHD's messages: into the listener's error text while it starts, at debug level always. */
__attribute__((format(printf, 2, 0))) static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct http_listener *l = cls;
	char msg[256];
	size_t len;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	len = strlen(msg);
	while (len && (msg[len - 1] == '\n' || msg[len - 1] == '\r'))
		msg[--len] = '\0';
	log_debug("http%s: libmicrohttpd: %s", l->local ? " (unix)" : "", msg);
	if (atomic_load(&l->starting) && !l->err[0]) {
		snprintf(l->err, sizeof(l->err), "%s", msg);
		l->tls_err = strstr(msg, "TLS") || strstr(msg, "certificate") || strstr(msg, "key");
	}
}

/* Called by MHD with the request line: the request's state starts here (freed in
 * on_completed, which MHD then always calls). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct http_listener *l = cls;
	struct http_req *req = calloc(1, sizeof(*req));
	char *q;

	if (!req)
		return NULL;
	req->srv = l->srv;
	req->lst = l;
	req->conn = conn;
	req->start_us = http_now_us();
	req->uri = strdup(uri);
	if (!req->uri) {
		free(req);
		return NULL;
	}
	q = strchr(req->uri, '?');
	if (q) {
		*q = '\0';
		req->query_raw = q + 1;
	}
	return req;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	http_req_free(*req_cls);
	*req_cls = NULL;
}

static void peer_fill(struct http_req *req)
{
	struct http_peer *p = &req->peer;
	const union MHD_ConnectionInfo *ci;

	if (req->lst->local) {
		struct ucred cred;
		socklen_t len = sizeof(cred);

		p->local = true;
		p->uid = (uid_t)-1;
		p->gid = (gid_t)-1;
		snprintf(p->addr, sizeof(p->addr), "unix");
		ci = MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci && getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
			p->uid = cred.uid;
			p->gid = cred.gid;
			p->pid = cred.pid;
		}
		return;
	}
	ci = MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!ci || !ci->client_addr)
		return;
	if (ci->client_addr->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ci->client_addr)->sin_addr,
			  p->addr, sizeof(p->addr));
	else if (ci->client_addr->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ci->client_addr)->sin6_addr,
			  p->addr, sizeof(p->addr));
}

/* The first call, with the headers: refuse early what can be refused without the body. */
static enum MHD_Result begin(struct http_req *req)
{
	struct http_server *srv = req->srv;
	unsigned allow;
	const char *cl;
	int r;

	peer_fill(req);
	if (req->lst->local && req->peer.uid != 0 && req->peer.uid != geteuid()) {
		http_reply_error(req, 403, "forbidden",
				 "this socket serves root and its owner only", NULL);
		return http_req_finish(req);
	}
	req->method_bit = http_method_bit(req->method);
	r = http_path_parse(req);
	if (r == -ENOMEM)
		return MHD_NO;
	if (r < 0) {
		http_reply_error(req, 404, "not_found", "no such resource", NULL);
		return http_req_finish(req);
	}
	req->route = http_route_find(srv, req, &allow);
	if (!req->route) {
		if (!allow) {
			http_reply_error(req, 404, "not_found", "no such resource", NULL);
		} else {
			char text[64];

			http_reply_error(req, 405, "method_not_allowed",
					 "method not allowed on this resource", NULL);
			http_allow_text(allow, text, sizeof(text));
			if (http_reply_header_raw(req, MHD_HTTP_HEADER_ALLOW, text) < 0)
				req->reply.failed = true;
		}
		return http_req_finish(req);
	}
	r = http_query_parse(req);
	if (r == -ENOMEM)
		return MHD_NO;
	if (r < 0) {
		http_reply_error(req, 400, "bad_request", "malformed or too long query string",
				 "query");
		return http_req_finish(req);
	}
	req->body_limit = req->route->body_max ? req->route->body_max : srv->body_max;
	cl = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
					 MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl) {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(cl, &end, 10);
		if (errno || end == cl || *end || v / HTTP_DISCARD_FACTOR > req->body_limit ||
		    (v > req->body_limit && MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
									MHD_HTTP_HEADER_EXPECT))) {
			http_reply_error(req, 413, "payload_too_large",
					 "the request body is over its limit", NULL);
			return http_req_finish(req);
		}
		if (v > req->body_limit) {
			req->too_big = true; /* dropped as it comes, then a 413 */
		} else if (v) {
			req->body = malloc(v);
			if (!req->body)
				return MHD_NO;
			req->body_cap = v;
		}
	}
	return MHD_YES;
}

/* A piece of the body. */
static enum MHD_Result take_body(struct http_req *req, const char *data, size_t len)
{
	if (req->too_big || len > req->body_limit - req->body_len) {
		if (!req->too_big) {
			req->too_big = true;
			req->discarded = req->body_len;
			free(req->body);
			req->body = NULL;
			req->body_len = req->body_cap = 0;
		}
		req->discarded += len;
		return req->discarded / HTTP_DISCARD_FACTOR > req->body_limit ? MHD_NO : MHD_YES;
	}
	if (len > req->body_cap - req->body_len) {
		size_t cap = req->body_cap ? req->body_cap : 4096;
		char *nb;

		while (cap - req->body_len < len)
			cap = cap > req->body_limit / 2 ? req->body_limit : cap * 2;
		nb = realloc(req->body, cap);
		if (!nb)
			return MHD_NO;
		req->body = nb;
		req->body_cap = cap;
	}
	memcpy(req->body + req->body_len, data, len);
	req->body_len += len;
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **req_cls)
{
	struct http_req *req = *req_cls;
	size_t len = *upload_data_size;

	if (!req)
		return MHD_NO; /* on_uri ran out of memory */
	if (!req->started) {
		req->started = true;
		req->conn = conn;
		req->method = method;
		return begin(req);
	}
	if (req->queued) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (len) {
		*upload_data_size = 0;
		return take_body(req, upload_data, len);
	}
	if (req->too_big) {
		http_reply_error(req, 413, "payload_too_large",
				 "the request body is over its limit", NULL);
		return http_req_finish(req);
	}
	req->route->handler(req);
	return http_req_finish(req);
}

static int bind_tcp(const char *listen_on, int *ret_fd, uint16_t *ret_port, char *errbuf,
		    size_t errlen)
{
	char host[256], port_text[8];
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
	struct addrinfo *res = NULL, *ai;
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof(ss);
	uint16_t port;
	int fd = -1, r, one = 1;

	if (util_parse_hostport(listen_on, true, host, sizeof(host), &port) < 0) {
		snprintf(errbuf, errlen, "bad listen address '%s' (HOST:PORT)", listen_on);
		return -EINVAL;
	}
	snprintf(port_text, sizeof(port_text), "%u", port);
	hints.ai_flags |= AI_NUMERICSERV;
	r = getaddrinfo(host, port_text, &hints, &res);
	if (r != 0) {
		snprintf(errbuf, errlen, "listen address %s: %s", listen_on, gai_strerror(r));
		return -EINVAL;
	}
	r = -EADDRNOTAVAIL;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			r = -errno;
			continue;
		}
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    listen(fd, HTTP_LISTEN_BACKLOG) == 0)
			break;
		r = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(errbuf, errlen, "listen on %s: %s", listen_on, ry_strerror(r));
		return r;
	}
	if (getsockname(fd, (struct sockaddr *)&ss, &sslen) < 0) {
		r = -errno;
		close(fd);
		snprintf(errbuf, errlen, "listen on %s: %s", listen_on, ry_strerror(r));
		return r;
	}
	*ret_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						   : ((struct sockaddr_in *)&ss)->sin_port);
	*ret_fd = fd;
	return 0;
}

/* Create the unix socket at path, mode 0600. A socket file nobody listens on is stale and
 * replaced; a live one is -EADDRINUSE, anything else there -EEXIST. */
static int bind_unix(struct http_server *srv, const char *path, int *ret_fd, char *errbuf,
		     size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int fd = -1, r;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(errbuf, errlen, "unix socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(errbuf, errlen, "%s exists and is not a socket", path);
			return -EEXIST;
		}
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			goto fail_errno;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			close(fd);
			snprintf(errbuf, errlen, "%s: another server is listening there", path);
			return -EADDRINUSE;
		}
		r = -errno;
		close(fd);
		fd = -1;
		if (r != -ECONNREFUSED) {
			snprintf(errbuf, errlen, "%s: probing the existing socket: %s", path,
				 ry_strerror(r));
			return r;
		}
		if (unlink(path) < 0 && errno != ENOENT)
			goto fail_errno;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto fail_errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto fail_errno;
	/* Nobody can connect before listen(): the mode is right before anyone can. */
	if (chmod(path, 0600) < 0 || stat(path, &st) < 0)
		goto fail_unlink;
	srv->unix_dev = st.st_dev;
	srv->unix_ino = st.st_ino;
	if (listen(fd, HTTP_LISTEN_BACKLOG) < 0)
		goto fail_unlink;
	*ret_fd = fd;
	return 0;
fail_unlink:
	r = -errno;
	unlink(path);
	goto fail;
fail_errno:
	r = -errno;
fail:
	if (fd >= 0)
		close(fd);
	snprintf(errbuf, errlen, "unix socket %s: %s", path, ry_strerror(r));
	return r;
}

static bool same_socket(int fd, const struct stat *before)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == before->st_ino &&
	       st.st_dev == before->st_dev;
}

/* Start l's daemon on fd. MHD owns fd from here: it closes it when it stops, and on most of
 * its failure paths; on the others we close it (the socket's inode tells whether the number
 * still names our socket). */
static int listener_start(struct http_server *srv, struct http_listener *l, int fd,
			  const struct http_config *cfg, bool tls, char *errbuf, size_t errlen)
{
	unsigned threads = cfg->threads ? cfg->threads : HTTP_THREADS_DEFAULT;
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
			 MHD_USE_ERROR_LOG | (tls ? MHD_USE_TLS : 0);
	struct MHD_OptionItem opts[12];
	size_t k = 0;
	struct stat before;

	if (fstat(fd, &before) < 0) {
		close(fd);
		return -errno;
	}
	opts[k++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, fd, NULL};
	opts[k++] = (struct MHD_OptionItem){
		MHD_OPTION_CONNECTION_TIMEOUT,
		cfg->timeout_s ? cfg->timeout_s : HTTP_TIMEOUT_S_DEFAULT, NULL};
	opts[k++] = (struct MHD_OptionItem){
		MHD_OPTION_CONNECTION_LIMIT,
		cfg->max_connections ? cfg->max_connections : HTTP_CONNECTIONS_DEFAULT, NULL};
	opts[k++] = (struct MHD_OptionItem){MHD_OPTION_STRICT_FOR_CLIENT, 1, NULL};
	if (threads > 1)
		opts[k++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, threads, NULL};
	if (tls) {
		opts[k++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, srv->cert_pem};
		opts[k++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, srv->key_pem};
		opts[k++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
						    HTTP_TLS_PRIORITIES};
	}
	opts[k] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};

	l->srv = srv;
	l->tls = tls;
	l->err[0] = '\0';
	atomic_store(&l->starting, true);
	l->daemon = MHD_start_daemon(
		flags, 0, NULL, NULL, on_request, l, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, l,
		MHD_OPTION_URI_LOG_CALLBACK, on_uri, l, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
		l, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
	atomic_store(&l->starting, false);
	if (!l->daemon) {
		if (same_socket(fd, &before))
			close(fd);
		snprintf(errbuf, errlen, "%s listener: %s", l->local ? "unix socket" : "HTTPS",
			 l->err[0] ? l->err : "libmicrohttpd could not start");
		return tls && l->tls_err ? -RY_E_CRYPTO : -EIO;
	}
	return 0;
}

static void server_free(struct http_server *srv)
{
	if (!srv)
		return;
	for (size_t i = 0; i < srv->n_routes; i++)
		http_route_done(&srv->routes[i]);
	free(srv->routes);
	free(srv->unix_path);
	free(srv->cert_pem);
	if (srv->key_pem) {
		OPENSSL_cleanse(srv->key_pem, strlen(srv->key_pem));
		free(srv->key_pem);
	}
	pthread_mutex_destroy(&srv->streams_lock);
	free(srv);
}

static int check_config(const struct http_config *cfg, char *errbuf, size_t errlen)
{
	if (!cfg->listen && !cfg->unix_path) {
		snprintf(errbuf, errlen, "no listener: neither a listen address nor a unix socket");
		return -EINVAL;
	}
	if (!cfg->cert_pem != !cfg->key_pem) {
		snprintf(errbuf, errlen, "TLS needs both a certificate and a key");
		return -EINVAL;
	}
	if (cfg->listen && !cfg->cert_pem && !cfg->plain_http) {
		snprintf(errbuf, errlen, "%s: no TLS certificate and key (plain HTTP not allowed)",
			 cfg->listen);
		return -EINVAL;
	}
	return 0;
}

int http_server_start(const struct http_config *cfg, const struct http_route *routes, size_t n,
		      void *userdata, struct http_server **ret, char *errbuf, size_t errlen)
{
	struct http_server *srv = NULL;
	int tcp_fd = -1, unix_fd = -1, r;

	if (!errlen)
		errbuf = NULL;
	if (!cfg || !ret || (n && !routes)) {
		snprintf(errbuf, errlen, "no configuration or routes");
		return -EINVAL;
	}
	r = check_config(cfg, errbuf, errlen);
	if (r < 0)
		return r;
	srv = calloc(1, sizeof(*srv));
	if (!srv || pthread_mutex_init(&srv->streams_lock, NULL) != 0) {
		free(srv);
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	srv->userdata = userdata;
	srv->body_max = cfg->body_max ? cfg->body_max : HTTP_BODY_MAX_DEFAULT;
	srv->routes = calloc(n ? n : 1, sizeof(*srv->routes));
	if (!srv->routes)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		r = http_route_compile(&routes[i], &srv->routes[i], errbuf, errlen);
		if (r < 0)
			goto fail;
		srv->n_routes++;
		for (size_t j = 0; j < i; j++) {
			if (!strcmp(srv->routes[j].pattern, srv->routes[i].pattern) &&
			    srv->routes[j].method_bit == srv->routes[i].method_bit) {
				snprintf(errbuf, errlen, "route %s %s given twice",
					 srv->routes[i].method, srv->routes[i].pattern);
				r = -EINVAL;
				goto fail;
			}
		}
	}
	if ((cfg->cert_pem && !(srv->cert_pem = strdup(cfg->cert_pem))) ||
	    (cfg->key_pem && !(srv->key_pem = strdup(cfg->key_pem))) ||
	    (cfg->unix_path && !(srv->unix_path = strdup(cfg->unix_path))))
		goto oom;

	if (cfg->listen) {
		r = bind_tcp(cfg->listen, &tcp_fd, &srv->port, errbuf, errlen);
		if (r < 0)
			goto fail;
	}
	if (cfg->unix_path) {
		r = bind_unix(srv, cfg->unix_path, &unix_fd, errbuf, errlen);
		if (r < 0)
			goto fail_tcp_fd;
	}
	srv->unx.local = true;
	if (tcp_fd >= 0) {
		r = listener_start(srv, &srv->tcp, tcp_fd, cfg, cfg->cert_pem != NULL, errbuf,
				   errlen);
		tcp_fd = -1; /* taken */
		if (r < 0)
			goto fail_unix_fd;
	}
	if (unix_fd >= 0) {
		r = listener_start(srv, &srv->unx, unix_fd, cfg, false, errbuf, errlen);
		unix_fd = -1;
		if (r < 0)
			goto fail_daemons;
	}
	*ret = srv;
	return 0;

fail_daemons:
	if (srv->tcp.daemon)
		MHD_stop_daemon(srv->tcp.daemon);
fail_unix_fd:
	if (unix_fd >= 0)
		close(unix_fd);
	if (srv->unix_path)
		unlink(srv->unix_path);
fail_tcp_fd:
	if (tcp_fd >= 0)
		close(tcp_fd);
	goto fail;
oom:
	r = -ENOMEM;
	snprintf(errbuf, errlen, "out of memory");
fail:
	server_free(srv);
	return r;
}

void http_server_stop(struct http_server *srv)
{
	struct stat st;

	if (!srv)
		return;
	/* MHD refuses to stop with suspended connections: resume the parked streams first;
	 * their next read sees the server stopping and ends them. */
	http_streams_stop(srv);
	if (srv->tcp.daemon)
		MHD_stop_daemon(srv->tcp.daemon);
	if (srv->unx.daemon)
		MHD_stop_daemon(srv->unx.daemon);
	/* Remove the socket only if it is still ours (not replaced by another server). */
	if (srv->unix_path && stat(srv->unix_path, &st) == 0 && st.st_dev == srv->unix_dev &&
	    st.st_ino == srv->unix_ino)
		unlink(srv->unix_path);
	server_free(srv);
}

uint16_t http_server_port(const struct http_server *srv)
{
	return srv ? srv->port : 0;
}
