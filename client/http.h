/* The CLI's HTTPS transport over libcurl: one connection (kept alive between calls) to one
 * controller, its certificate verified against a CA file or the system store, a bearer token
 * on every request, bounded replies and fixed timeouts. Knows nothing of JSON or of the API. */
#ifndef RAILYARD_CLIENT_HTTP_H
#define RAILYARD_CLIENT_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#define RC_HTTP_CONNECT_TIMEOUT_MS 10000
#define RC_HTTP_TIMEOUT_MS	   60000
/* The largest reply taken: above the biggest sign-off report or results listing expected. */
#define RC_HTTP_REPLY_MAX (256u * 1024 * 1024)

struct rc_http;

struct rc_reply {
	long status;
	char *body; /* NUL-terminated; owned */
	size_t len;
};

/* A connection to url ("https://host:port", no path), sending token (NULL: none) and trusting
 * ca (a PEM file; NULL: the system store). Strings are copied. 0, -EINVAL for a URL that is not
 * https://, or -ENOMEM. Caller frees with rc_http_free(). */
__attribute__((warn_unused_result)) int rc_http_new(const char *url, const char *token,
						    const char *ca, struct rc_http **ret);
void rc_http_free(struct rc_http *h);

/* One request: method, path (with its query), an optional JSON body. 0 with *ret filled for any
 * HTTP status (free with rc_reply_done()); -1 when no reply came (refused, TLS, timeout, too
 * big), the reason in why. */
__attribute__((warn_unused_result)) int rc_http_request(struct rc_http *h, const char *method,
							const char *path, const char *body,
							struct rc_reply *ret, char *why,
							size_t why_len);
void rc_reply_done(struct rc_reply *r);

/* ---- a streamed reply (Server-Sent Events) ---------------------------------------------- */

/* A stream has no overall timeout: a connection that delivers nothing at all (not even the
 * server's keepalives) for this long is taken as dead. */
#define RC_HTTP_STREAM_SILENCE_S 45

struct rc_http_stream;

/* The bytes of a 2xx reply as they come; false stops the transfer. */
typedef bool (*rc_http_data_fn)(void *cls, const char *data, size_t len);

/* Start a GET of path on its own connection (the calls of rc_http_request() go on meanwhile),
 * with the Accept header accept and the extra header line extra ("Name: value"; NULL: none).
 * 0 or -ENOMEM. The transfer moves only within rc_http_stream_run(). */
__attribute__((warn_unused_result)) int rc_http_stream_open(struct rc_http *h, const char *path,
							    const char *accept, const char *extra,
							    rc_http_data_fn on_data, void *cls,
							    struct rc_http_stream **ret);
/* Move the stream on, waiting at most wait_ms for bytes (a signal ends the wait early).
 * *status is the HTTP status once it came (0 before). 0 while the transfer runs; 1 when it
 * ended with a reply: a 2xx that the server closed, or another status with its body in *body
 * (free with rc_reply_done()); -1 when it ended otherwise (refused, TLS, silent too long, cut
 * off, on_data said stop), the reason in why. */
__attribute__((warn_unused_result)) int rc_http_stream_run(struct rc_http_stream *s, int wait_ms,
							   long *status, struct rc_reply *body,
							   char *why, size_t why_len);
void rc_http_stream_free(struct rc_http_stream *s);

/* The URL of the connection (borrowed). */
const char *rc_http_url(const struct rc_http *h);

#endif
