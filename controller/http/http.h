/* The controller's HTTP server core: HTTPS on a TCP port and plain HTTP on a unix socket for
 * host-local admin commands (peer credentials checked), over libmicrohttpd; a router from
 * method + path pattern to handlers; request accessors; JSON, byte and error replies with ETags;
 * streamed replies (Server-Sent Events) that hold no thread while idle; Prometheus counters per
 * route. It knows nothing of the controller's services: routes and handlers are given to it. */
#ifndef RAILYARD_CONTROLLER_HTTP_H
#define RAILYARD_CONTROLLER_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <jansson.h>

#define HTTP_BODY_MAX_DEFAULT	 (1024 * 1024) /* request body limit unless configured */
#define HTTP_TIMEOUT_S_DEFAULT	 15	       /* idle connection timeout (slowloris) */
#define HTTP_THREADS_DEFAULT	 4	       /* worker threads per listener */
#define HTTP_CONNECTIONS_DEFAULT 4096	       /* connections per listener */
#define HTTP_SEGMENTS_MAX	 32	       /* path segments of a pattern or a routed path */
#define HTTP_QUERY_MAX		 64	       /* query parameters of a request; more is a 400 */
/* Every HTTPS reply: a browser that has seen the API over HTTPS never tries it over plain HTTP
 * for a year (no includeSubDomains: the host's other names are not ours to decide). */
#define HTTP_HSTS "max-age=31536000"

#define HTTP_WUR __attribute__((warn_unused_result))

struct http_server;
struct http_req;
struct http_stream;

/* A handler answers one request: it reads what it needs through http_req_*() and sets a reply
 * with one of http_reply_*() before it returns (the last one set wins; none set is a 500 with
 * the error body). Handlers run on the listener's worker threads, several at once: a handler
 * that blocks holds up the other connections of its thread. req is valid until it returns. */
typedef void (*http_handler_fn)(struct http_req *req);

enum http_route_flags {
	HTTP_ROUTE_LOCAL_ONLY = 1u << 0, /* served on the unix socket only; 404 over TCP */
	HTTP_ROUTE_NO_ETAG = 1u << 1,	 /* no ETag / If-None-Match on this route's replies */
};

/* One route. method is "GET", "POST", "PUT" or "DELETE" (a GET route also answers HEAD).
 * pattern is an absolute path whose segments are literals or "{name}" captures, e.g.
 * "/api/v1/nodes/{id}"; "/" is the root. Where two patterns match a path, the one with a
 * literal at the first segment where they differ wins ("/nodes/stats" over "/nodes/{id}"). */
struct http_route {
	const char *method;
	const char *pattern;
	http_handler_fn handler;
	unsigned flags;	 /* enum http_route_flags */
	size_t body_max; /* request body limit of this route; 0: the server's */
	void *data;	 /* handed to the handler by http_req_route_data() */
};

struct http_config {
	/* TCP listener "HOST:PORT" or "[V6]:PORT" (port 0: pick a free one, see
	 * http_server_port()); NULL: none. It serves HTTPS with cert_pem/key_pem, or plain HTTP
	 * when both are NULL and plain_http is set (tests only). */
	const char *listen;
	const char *cert_pem; /* server certificate, optionally followed by its chain (PEM) */
	const char *key_pem;  /* its unencrypted private key: PKCS#8 or traditional PEM */
	bool plain_http;
	/* Unix socket listener (plain HTTP; NULL: none). Created mode 0600; a stale socket there
	 * (nobody listening) is replaced, a live one or a file that is not a socket is an error.
	 * Only peers with uid 0 or our effective uid are served; others get a 403. Removed by
	 * http_server_stop(). */
	const char *unix_path;
	size_t body_max;	  /* request body limit (0: HTTP_BODY_MAX_DEFAULT); larger: 413 */
	unsigned timeout_s;	  /* idle connection timeout (0: HTTP_TIMEOUT_S_DEFAULT) */
	unsigned threads;	  /* worker threads per listener (0: HTTP_THREADS_DEFAULT) */
	unsigned max_connections; /* per listener (0: HTTP_CONNECTIONS_DEFAULT) */
};

/* Who sent a request. */
struct http_peer {
	bool local; /* came over the unix socket; uid/gid/pid are then the peer's credentials */
	uid_t uid;
	gid_t gid;
	pid_t pid;
	char addr[64]; /* "192.0.2.1", "2001:db8::1" (TCP) or "unix" */
};

/* Start the listeners and serve routes (n of them; copied, so routes and the strings in it
 * need not outlive the call) with userdata (borrowed; see http_req_userdata()).
 * *ret is the server; stop and free it with http_server_stop(). Errors, with the reason in
 * errbuf (may be NULL when errlen is 0): -EINVAL for a bad configuration or route table
 * (no listener, TLS half configured or missing without plain_http, bad HOST:PORT, a pattern
 * or method the router does not take, two routes with the same method and pattern),
 * -EADDRINUSE / -errno when binding fails, -EEXIST when unix_path is not a socket,
 * -RY_E_CRYPTO when the TLS library refuses the certificate or key, -ENOMEM. */
HTTP_WUR int http_server_start(const struct http_config *cfg, const struct http_route *routes,
			       size_t n, void *userdata, struct http_server **ret, char *errbuf,
			       size_t errlen);

/* Stop accepting, end every stream (their free callbacks run), wait for running handlers,
 * close all connections, remove the unix socket and free srv. NULL is a no-op. Not to be
 * called from a handler or a stream callback. */
void http_server_stop(struct http_server *srv);

/* The TCP listener's bound port (0 when there is none). Thread-safe. */
uint16_t http_server_port(const struct http_server *srv);

/* Write the request counters in Prometheus text format to out:
 *   railyard_http_requests_total{route,method,code="2xx"} (per status class),
 *   railyard_http_request_duration_seconds{route,method} histogram (buckets 1, 5, 10, 25, 50,
 *   100, 250, 500, 1000, 2500 ms; the time from the request line to its reply being queued),
 *   railyard_http_streams (open streamed replies).
 * Requests that match no route are counted as route="unmatched", method="ANY". Only series
 * that counted something are written. Thread-safe (counters are atomics; a scrape is not a
 * snapshot across series). -EIO when writing fails. */
HTTP_WUR int http_server_metrics(struct http_server *srv, FILE *out);

/* Request accessors. Every string returned is owned by req and valid until the handler
 * returns; NULL when absent. */
const char *http_req_method(const struct http_req *req); /* "GET", ... ("HEAD" on a GET route) */
const char *http_req_path(const struct http_req *req);	 /* as sent, percent-encoded, no query */
const char *http_req_route(const struct http_req *req);	 /* the matched pattern */
/* A "{name}" capture of the route, percent-decoded (never empty, never holds '/' or NUL). */
const char *http_req_capture(const struct http_req *req, const char *name);
/* The first query parameter called name (exact case), percent-decoded, '+' as a space; a
 * parameter without '=' has the value "". */
const char *http_req_query(const struct http_req *req, const char *name);
/* A request header by name, any case. */
const char *http_req_header(const struct http_req *req, const char *name);
/* The request body (not NUL-terminated; NULL with *ret_len 0 when there is none). */
const void *http_req_body(const struct http_req *req, size_t *ret_len);
/* The body parsed as a JSON object (borrowed: owned by req; the same object on each call).
 * NULL when it is not one, with the reply already set: 415 when Content-Type is not
 * application/json (parameters allowed), 400 "line L column C: ..." when it does not parse
 * (duplicate keys refused), 400 when it is not an object. The handler then just returns. */
json_t *http_req_json(struct http_req *req);
const struct http_peer *http_req_peer(const struct http_req *req);
void *http_req_userdata(const struct http_req *req);   /* the server's userdata */
void *http_req_route_data(const struct http_req *req); /* the route's data */

/* Replies. Each replaces the reply set before it, headers included. A reply that cannot be
 * built (out of memory, a status outside 100..599, a content type with control characters)
 * becomes a 500 with the error body. Every reply carries X-Content-Type-Options: nosniff, those
 * of the HTTPS listener Strict-Transport-Security: HTTP_HSTS, and every one
 * Cache-Control: no-store unless the handler sets its own Cache-Control. A 200 reply to a GET
 * or HEAD carries ETag: "<first 32 hex digits of SHA-256 of the body>"; when the request's
 * If-None-Match lists that tag (or is "*") the reply is a 304 without a body. */

/* Reply with body serialised compactly (application/json). Takes ownership of body (steals
 * the reference, as json_object_set_new() does); NULL body is a 500. */
void http_reply_json(struct http_req *req, unsigned status, json_t *body);
/* Reply with a copy of len bytes of data (may be NULL when len is 0) as content_type. */
void http_reply_bytes(struct http_req *req, unsigned status, const char *content_type,
		      const void *data, size_t len);
/* Reply {"error":{"code":code,"message":message,"field":field}}; field omitted when NULL,
 * message "" when NULL. Text that is not valid UTF-8 is escaped (util_escape()). */
void http_reply_error(struct http_req *req, unsigned status, const char *code, const char *message,
		      const char *field);
/* Add a header to the reply set last (call it after http_reply_*()). -EINVAL when no reply
 * is set, for a name that is not an HTTP token, a value with control characters other than
 * tab, or for Content-Type / Content-Length / ETag (set by the reply), -ENOMEM. */
HTTP_WUR int http_reply_header(struct http_req *req, const char *name, const char *value);

/* Streamed replies (Server-Sent Events). The body is produced by read(cls, buf, max), called
 * on a worker thread whenever the connection can take more:
 *   > 0 (at most max)  that many bytes of buf are sent;
 *   0                  nothing to send now: the connection is parked until
 *                      http_stream_wake();
 *   HTTP_STREAM_END    the body is complete;
 *   HTTP_STREAM_ABORT  close the connection at once.
 * read() must not block: it copies what is ready (from the producer's queue) and returns.
 * The reply is a 200 with content_type (NULL: text/event-stream), chunked, no ETag.
 * free_cb(cls) is called exactly once (free_cb may be NULL): on a worker thread, or within
 * http_server_stop(), when the stream is over (completed, client gone, replaced by another
 * reply, server stopping), or before this call returns when it fails. The returned handle
 * (NULL when the call failed and the reply became a 500) is for http_stream_wake() and is
 * valid until free_cb has returned: a producer that keeps it must forget it in free_cb, under
 * the lock it holds when it wakes the stream.
 *
 * Design: parking is MHD_suspend_connection() from within MHD's content reader, waking is
 * MHD_resume_connection() (MHD_ALLOW_SUSPEND_RESUME, epoll worker threads). A parked stream
 * holds no thread and costs no polling: its socket, MHD's per-connection buffer (32 KiB) and
 * a small struct. Limits:
 * - each stream is a connection: max_connections and the process's RLIMIT_NOFILE bound how
 *   many (the daemon should raise its soft limit), and the caller bounds them well below
 *   max_connections (the REST API: controller/api/api_streams.h), or streams take every
 *   connection and no other request is served;
 * - a parked connection has no idle timeout and does not notice that its client went away
 *   until something is written: producers send a heartbeat (an SSE comment) every ~15 s,
 *   e.g. on http_server_wake_streams(); a running one has the idle timeout, so a client that
 *   stops reading is dropped after timeout_s;
 * - read() runs on the worker thread of its connection: a slow read() delays that worker's
 *   other connections. */
#define HTTP_STREAM_END	  ((ssize_t)-1)
#define HTTP_STREAM_ABORT ((ssize_t)-2)
typedef ssize_t (*http_stream_read_fn)(void *cls, char *buf, size_t max);
typedef void (*http_stream_free_fn)(void *cls);
struct http_stream *http_reply_stream(struct http_req *req, const char *content_type,
				      http_stream_read_fn read, http_stream_free_fn free_cb,
				      void *cls);

/* There may be more to read: resume a parked stream, or make its next read() that returns 0
 * try once more. Thread-safe; cheap when the stream is not parked. */
void http_stream_wake(struct http_stream *s);

/* Wake every stream of srv (e.g. each 15 s so that producers write a heartbeat comment: a
 * parked connection does not notice that its client went away until it writes). Thread-safe;
 * O(open streams). */
void http_server_wake_streams(struct http_server *srv);

#endif
