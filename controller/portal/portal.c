/* Serving the web portal's built-in files: one literal route per file, the content type by
 * extension, and the headers that keep the pages to themselves (CSP, no framing, no referrer)
 * and cache them: index.html is revalidated on every load (ETag, Cache-Control: no-cache);
 * the files under /portal/VERSION/ never change at their URL, so they are cached for a year. */
#include "controller/portal/portal.h"

#include "controller/http/http.h"
#include "controller/portal/portal_files.h"

#include <string.h>

static const struct {
	const char *ext, *type;
} types[] = {
	{".html", "text/html; charset=utf-8"},
	{".js", "text/javascript; charset=utf-8"},
	{".css", "text/css; charset=utf-8"},
	{".svg", "image/svg+xml"},
	{".json", "application/json"},
	{".txt", "text/plain; charset=utf-8"},
	{".png", "image/png"},
};

const char *ctl_portal_content_type(const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		size_t e = strlen(types[i].ext);

		if (n > e && strcmp(name + n - e, types[i].ext) == 0)
			return types[i].type;
	}
	return "application/octet-stream";
}

static void serve(struct http_req *req)
{
	const struct ctl_portal_file *f = http_req_route_data(req);
	bool index = strcmp(f->path, "/") == 0;

	http_reply_bytes(req, 200, ctl_portal_content_type(f->name), f->data, f->len);
	/* A page without its policy is not served: out of memory here is a 500. */
	if (http_reply_header(req, "Content-Security-Policy", CTL_PORTAL_CSP) < 0 ||
	    http_reply_header(req, "Cache-Control",
			      index ? "no-cache" : "public, max-age=31536000, immutable") < 0 ||
	    http_reply_header(req, "X-Frame-Options", "DENY") < 0 ||
	    http_reply_header(req, "Referrer-Policy", "no-referrer") < 0 ||
	    http_reply_header(req, "Cross-Origin-Opener-Policy", "same-origin") < 0 ||
	    http_reply_header(req, "Cross-Origin-Resource-Policy", "same-origin") < 0)
		http_reply_error(req, 500, "internal", "out of memory", NULL);
}

size_t ctl_portal_routes_count(void)
{
	return ctl_portal_files_count;
}

void ctl_portal_routes(struct http_route *routes)
{
	for (size_t i = 0; i < ctl_portal_files_count; i++)
		routes[i] = (struct http_route){.method = "GET",
						.pattern = ctl_portal_files[i].path,
						.handler = serve,
						.data = (void *)&ctl_portal_files[i]};
}
