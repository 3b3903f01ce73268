/* The web portal (docs/portal.md): the static files of portal/ (HTML, CSS, JavaScript modules),
 * built into the program and served by the controller's HTTP server beside the REST API, which
 * the portal's scripts call. "/" is index.html; every other file is at /portal/VERSION/NAME.
 * These are public routes (no token: nothing in the files is secret) that answer GET and HEAD,
 * registered with the HTTP core directly: they are not API routes and not in its table. Only
 * the files of the table are served, by literal routes, so no request path can name another. */
#ifndef RAILYARD_CONTROLLER_PORTAL_H
#define RAILYARD_CONTROLLER_PORTAL_H

#include <stddef.h>

struct http_route;

/* The Content-Security-Policy of every portal reply: scripts, styles, images and connections
 * from the controller itself only, no inline script or style, no plugins, no framing, no
 * <base>, no form submission, and Trusted Types enforced (no HTML sink can take a string). */
#define CTL_PORTAL_CSP                                                                             \
	"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "                \
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "                \
	"form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'; "         \
	"trusted-types 'none'"

/* How many routes the portal has (one per file). */
size_t ctl_portal_routes_count(void);

/* Write the portal's routes into routes[0 .. ctl_portal_routes_count()); their strings and data
 * are static. Thread-safe. */
void ctl_portal_routes(struct http_route *routes);

/* The Content-Type a portal file is served with, by its name's extension (static);
 * "application/octet-stream" for an extension it does not know. */
const char *ctl_portal_content_type(const char *name);

#endif
