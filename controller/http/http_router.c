/* The router: route patterns compiled into segments, request paths split and percent-decoded
 * with everything that could name another resource refused (".", "..", empty segments,
 * encoded '/' or NUL), the query string parsed, and the best route picked. */
#include "controller/http/http_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct {
	const char *name;
	unsigned bit;
} methods[] = {
	{"GET", HTTP_M_GET}, {"HEAD", HTTP_M_HEAD},	{"POST", HTTP_M_POST},
	{"PUT", HTTP_M_PUT}, {"DELETE", HTTP_M_DELETE},
};

unsigned http_method_bit(const char *method)
{
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (strcmp(method, methods[i].name) == 0)
			return methods[i].bit;
	return 0;
}

void http_allow_text(unsigned allow, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	if (allow & HTTP_M_GET)
		allow |= HTTP_M_HEAD;
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		if (!(allow & methods[i].bit))
			continue;
		int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", methods[i].name);
		if (w < 0 || (size_t)w >= len - used)
			return;
		used += (size_t)w;
	}
}

static bool is_pchar_literal(char c)
{
	/* Unreserved characters and a few sub-delims: enough for API paths, and nothing that
	 * needs percent-encoding to be compared with a request's decoded segment. */
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~' || c == ':' || c == '@';
}

static bool is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

void http_route_done(struct http_route_int *r)
{
	if (!r)
		return;
	free(r->method);
	free(r->pattern);
	for (size_t i = 0; i < r->nseg; i++)
		free(r->segs[i]);
	memset(r, 0, sizeof(*r));
}

int http_route_compile(const struct http_route *in, struct http_route_int *out, char *errbuf,
		       size_t errlen)
{
	struct http_route_int r = {0};
	const char *p;
	int ret = -EINVAL;

	if (!in->method || !in->pattern || !in->handler) {
		snprintf(errbuf, errlen, "route without method, pattern or handler");
		return -EINVAL;
	}
	r.method_bit = http_method_bit(in->method);
	if (!r.method_bit || r.method_bit == HTTP_M_HEAD) {
		snprintf(errbuf, errlen, "route %s: method %s not supported", in->pattern,
			 in->method);
		return -EINVAL;
	}
	if (in->pattern[0] != '/') {
		snprintf(errbuf, errlen, "route %s: pattern must start with '/'", in->pattern);
		return -EINVAL;
	}
	r.method = strdup(in->method);
	r.pattern = strdup(in->pattern);
	if (!r.method || !r.pattern) {
		ret = -ENOMEM;
		goto fail;
	}
	p = in->pattern + 1;
	while (*p) {
		const char *end = strchr(p, '/');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		bool capture = len >= 2 && p[0] == '{' && p[len - 1] == '}';

		if (r.nseg == HTTP_SEGMENTS_MAX) {
			snprintf(errbuf, errlen, "route %s: more than %d segments", in->pattern,
				 HTTP_SEGMENTS_MAX);
			goto fail;
		}
		if (len == 0 || (capture && len == 2)) {
			snprintf(errbuf, errlen, "route %s: empty segment", in->pattern);
			goto fail;
		}
		for (size_t i = capture ? 1 : 0; i < (capture ? len - 1 : len); i++) {
			if (capture ? !is_name_char(p[i]) : !is_pchar_literal(p[i])) {
				snprintf(errbuf, errlen, "route %s: bad character in segment %zu",
					 in->pattern, r.nseg + 1);
				goto fail;
			}
		}
		if (!capture && ((len == 1 && p[0] == '.') || (len == 2 && !strncmp(p, "..", 2)))) {
			snprintf(errbuf, errlen, "route %s: '.' or '..' segment", in->pattern);
			goto fail;
		}
		r.segs[r.nseg] = capture ? strndup(p + 1, len - 2) : strndup(p, len);
		if (!r.segs[r.nseg]) {
			ret = -ENOMEM;
			goto fail;
		}
		if (capture) {
			for (size_t i = 0; i < r.nseg; i++) {
				if ((r.capture_mask & (1u << i)) &&
				    !strcmp(r.segs[i], r.segs[r.nseg])) {
					snprintf(errbuf, errlen, "route %s: capture {%s} twice",
						 in->pattern, r.segs[i]);
					r.nseg++;
					goto fail;
				}
			}
			r.capture_mask |= 1u << r.nseg;
		} else {
			r.score |= 1ull << (63 - r.nseg);
		}
		r.nseg++;
		if (!end)
			break;
		p = end + 1;
		if (!*p) {
			snprintf(errbuf, errlen, "route %s: trailing '/'", in->pattern);
			goto fail;
		}
	}
	r.handler = in->handler;
	r.flags = in->flags;
	r.body_max = in->body_max;
	r.data = in->data;
	*out = r;
	return 0;
fail:
	http_route_done(&r);
	return ret;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decode s in place (plus_space: '+' is a space, as in a query). -EINVAL for a bad
 * escape or an encoded NUL; *ret_slash tells whether a '/' was decoded. */
static int pct_decode(char *s, bool plus_space, bool *ret_slash)
{
	char *w = s;

	*ret_slash = false;
	for (const char *r = s; *r; r++) {
		if (*r == '%') {
			int hi = hexval(r[1]), lo = hi < 0 ? -1 : hexval(r[2]);

			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				return -EINVAL;
			*w = (char)(hi * 16 + lo);
			if (*w == '/')
				*ret_slash = true;
			w++;
			r += 2;
		} else {
			*w++ = (plus_space && *r == '+') ? ' ' : *r;
		}
	}
	*w = '\0';
	return 0;
}

int http_path_parse(struct http_req *req)
{
	const char *path = req->uri;
	char *p;
	size_t n = 0;

	if (path[0] != '/')
		return -EINVAL;
	req->segbuf = strdup(path + 1);
	if (!req->segbuf)
		return -ENOMEM;
	p = req->segbuf;
	if (!*p) {
		req->nseg = 0;
		return 0;
	}
	for (;;) {
		char *end = strchr(p, '/');
		bool slash;

		if (n == HTTP_SEGMENTS_MAX)
			return -EINVAL;
		if (end)
			*end = '\0';
		/* "//", a trailing '/', '.', '..' (also encoded), %2F, %00: refused. */
		if (!*p || pct_decode(p, false, &slash) < 0 || slash || !*p || !strcmp(p, ".") ||
		    !strcmp(p, ".."))
			return -EINVAL;
		req->segs[n++] = p;
		if (!end)
			break;
		p = end + 1;
	}
	req->nseg = n;
	return 0;
}

int http_query_parse(struct http_req *req)
{
	char *p = req->query_raw;
	size_t n = 0;

	if (!p || !*p)
		return 0;
	req->query = calloc(HTTP_QUERY_MAX, sizeof(*req->query));
	if (!req->query)
		return -ENOMEM;
	while (p) {
		char *amp = strchr(p, '&');
		char *eq;
		bool slash;

		if (amp)
			*amp = '\0';
		if (*p) {
			if (n == HTTP_QUERY_MAX)
				return -EINVAL;
			eq = strchr(p, '=');
			if (eq)
				*eq = '\0';
			if (!*p || pct_decode(p, true, &slash) < 0 ||
			    (eq && pct_decode(eq + 1, true, &slash) < 0))
				return -EINVAL;
			req->query[n].name = p;
			req->query[n].value = eq ? eq + 1 : p + strlen(p);
			n++;
		}
		p = amp ? amp + 1 : NULL;
	}
	req->n_query = n;
	return 0;
}

static bool route_matches(const struct http_route_int *r, const struct http_req *req)
{
	if (r->nseg != req->nseg)
		return false;
	for (size_t i = 0; i < r->nseg; i++)
		if (!(r->capture_mask & (1u << i)) && strcmp(r->segs[i], req->segs[i]) != 0)
			return false;
	return true;
}

struct http_route_int *http_route_find(struct http_server *srv, const struct http_req *req,
				       unsigned *ret_allow)
{
	struct http_route_int *best = NULL;
	unsigned want = req->method_bit == HTTP_M_HEAD ? HTTP_M_GET : req->method_bit;
	unsigned allow = 0;

	/* O(routes x segments); the table is a few dozen routes. */
	for (size_t i = 0; i < srv->n_routes; i++) {
		struct http_route_int *r = &srv->routes[i];

		if ((r->flags & HTTP_ROUTE_LOCAL_ONLY) && !req->lst->local)
			continue;
		if (!route_matches(r, req))
			continue;
		allow |= r->method_bit;
		if (want && r->method_bit == want && (!best || r->score > best->score))
			best = r;
	}
	*ret_allow = allow;
	return best;
}
