/* An HTTP client over libcurl for Railyard's own programs: one connection (kept alive between
 * calls) to one controller, either HTTPS (its certificate verified against a CA file or the
 * system store, a bearer token on every request) or plain HTTP over the controller's unix
 * socket (where the peer's uid, not a token, says who calls); bounded replies and fixed
 * timeouts. Knows nothing of JSON or of the API. Not thread-safe: one thread per connection. */
#ifndef RAILYARD_COMMON_HTTPC_H
#define RAILYARD_COMMON_HTTPC_H

#include <stdbool.h>
#include <stddef.h>

#define HTTPC_CONNECT_TIMEOUT_MS 10000
#define HTTPC_TIMEOUT_MS	 60000
/* The largest reply taken: above the biggest sign-off report or results listing expected. */
#define HTTPC_REPLY_MAX (256u * 1024 * 1024)
/* The scheme of a unix socket: "unix:/abs/path/api.sock". */
#define HTTPC_UNIX_PREFIX "unix:"

struct httpc;

struct httpc_reply {
	long status;
	char *body; /* NUL-terminated; owned */
	size_t len;
};

/* A connection to url, strings copied:
 *  - "https://host:port" (no path): HTTPS only, sending token (NULL: none) and trusting ca (a
 *    PEM file; NULL: the system store);
 *  - "unix:/abs/path.sock": plain HTTP over that unix socket (requests go to http://localhost
 *    and the path); ca is unused, and token must be NULL: a credential never travels there.
 * 0, -EINVAL for any other URL (http://, a relative socket path, a token with a socket), or
 * -ENOMEM. Caller frees with httpc_free(). */
__attribute__((warn_unused_result)) int httpc_new(const char *url, const char *token,
						  const char *ca, struct httpc **ret);
void httpc_free(struct httpc *h);

/* One request: method, path (with its query), an optional JSON body. 0 with *ret filled for any
 * HTTP status (free with httpc_reply_done()). When no reply came, a negative errno with the
 * reason in why: connect()'s own when connecting failed (-ECONNREFUSED nobody listens, -ENOENT
 * no socket, -EACCES not the caller's to open, ...); -ETIMEDOUT; -EFBIG for a reply above
 * HTTPC_REPLY_MAX; -ENOMEM; -EIO for anything else (TLS, a reset, a malformed reply). */
__attribute__((warn_unused_result)) int httpc_request(struct httpc *h, const char *method,
						      const char *path, const char *body,
						      struct httpc_reply *ret, char *why,
						      size_t why_len);
void httpc_reply_done(struct httpc_reply *r);

/* ---- a streamed reply (Server-Sent Events) ---------------------------------------------- */

/* A stream has no overall timeout: a connection that delivers nothing at all (not even the
 * server's keepalives) for this long is taken as dead. */
#define HTTPC_STREAM_SILENCE_S 45

struct httpc_stream;

/* The bytes of a 2xx reply as they come; false stops the transfer. */
typedef bool (*httpc_data_fn)(void *cls, const char *data, size_t len);

/* Start a GET of path on its own connection (the calls of httpc_request() go on meanwhile),
 * with the Accept header accept and the extra header line extra ("Name: value"; NULL: none).
 * 0 or -ENOMEM. The transfer moves only within httpc_stream_run(). */
__attribute__((warn_unused_result)) int httpc_stream_open(struct httpc *h, const char *path,
							  const char *accept, const char *extra,
							  httpc_data_fn on_data, void *cls,
							  struct httpc_stream **ret);
/* Move the stream on, waiting at most wait_ms for bytes (a signal ends the wait early).
 * *status is the HTTP status once it came (0 before). 0 while the transfer runs; 1 when it
 * ended with a reply: a 2xx that the server closed, or another status with its body in *body
 * (free with httpc_reply_done()); -1 when it ended otherwise (refused, TLS, silent too long, cut
 * off, on_data said stop), the reason in why. */
__attribute__((warn_unused_result)) int httpc_stream_run(struct httpc_stream *s, int wait_ms,
							 long *status, struct httpc_reply *body,
							 char *why, size_t why_len);
void httpc_stream_free(struct httpc_stream *s);

/* A path segment or query value, percent-encoded (all but A-Z a-z 0-9 - . _ ~). Caller frees;
 * NULL: out of memory. */
char *httpc_escape(const char *s);

/* The URL of the connection as given (trailing slashes off; borrowed). */
const char *httpc_url(const struct httpc *h);

#endif
