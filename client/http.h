/* The CLI's HTTPS transport over libcurl: one connection (kept alive between calls) to one
 * controller, its certificate verified against a CA file or the system store, a bearer token
 * on every request, bounded replies and fixed timeouts. Knows nothing of JSON or of the API. */
#ifndef RAILYARD_CLIENT_HTTP_H
#define RAILYARD_CLIENT_HTTP_H

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

/* The URL of the connection (borrowed). */
const char *rc_http_url(const struct rc_http *h);

#endif
