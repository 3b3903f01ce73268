/* The CLI's HTTPS transport (http.h): a libcurl easy handle reused for every call, so that one
 * command makes one TLS connection however many pages or polls it needs. */
#include "client/http.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct rc_http {
	CURL *curl;
	char *url;
	char *ca;
	struct curl_slist *headers; /* Accept, and Authorization when there is a token */
};

/* What the write callback collects, bounded by RC_HTTP_REPLY_MAX. */
struct sink {
	char *buf;
	size_t len, cap;
	bool too_big;
};

static size_t on_data(char *data, size_t size, size_t n, void *userdata)
{
	struct sink *s = userdata;
	size_t add = size * n;

	if (add > RC_HTTP_REPLY_MAX - s->len) {
		s->too_big = true;
		return 0; /* curl stops with CURLE_WRITE_ERROR */
	}
	if (s->len + add + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 16384;
		char *p;

		while (cap < s->len + add + 1)
			cap *= 2;
		if (!(p = realloc(s->buf, cap)))
			return 0;
		s->buf = p;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, data, add);
	s->len += add;
	s->buf[s->len] = '\0';
	return add;
}

int rc_http_new(const char *url, const char *token, const char *ca, struct rc_http **ret)
{
	struct rc_http *h;
	size_t len = strlen(url);
	char *auth = NULL;

	/* The token is a credential: it travels over verified TLS only. */
	if (strncasecmp(url, "https://", 8) != 0 || len == 8)
		return -EINVAL;
	if (!(h = calloc(1, sizeof(*h))))
		return -ENOMEM;
	while (len > 8 && url[len - 1] == '/')
		len--;
	if (!(h->url = strndup(url, len)) || (ca && !(h->ca = strdup(ca))) ||
	    !(h->curl = curl_easy_init()) ||
	    !(h->headers = curl_slist_append(NULL, "Accept: application/json")))
		goto fail;
	if (token) {
		struct curl_slist *l;
		size_t alen = strlen(token) + sizeof("Authorization: Bearer ");

		if (!(auth = malloc(alen)))
			goto fail;
		snprintf(auth, alen, "Authorization: Bearer %s", token);
		l = curl_slist_append(h->headers, auth);
		explicit_bzero(auth, alen);
		free(auth);
		if (!l)
			goto fail;
		h->headers = l;
	}
	*ret = h;
	return 0;
fail:
	rc_http_free(h);
	return -ENOMEM;
}

void rc_http_free(struct rc_http *h)
{
	if (!h)
		return;
	/* Wipe the copy of the token in the header list before it goes back to the heap. */
	for (struct curl_slist *l = h->headers; l; l = l->next)
		explicit_bzero(l->data, strlen(l->data));
	curl_slist_free_all(h->headers);
	curl_easy_cleanup(h->curl);
	free(h->url);
	free(h->ca);
	free(h);
}

const char *rc_http_url(const struct rc_http *h)
{
	return h->url;
}

int rc_http_request(struct rc_http *h, const char *method, const char *path, const char *body,
		    struct rc_reply *ret, char *why, size_t why_len)
{
	char errbuf[CURL_ERROR_SIZE] = "", *full;
	struct curl_slist *hdrs = h->headers, *ct = NULL;
	struct sink s = {0};
	size_t flen = strlen(h->url) + strlen(path) + 1;
	CURLcode cc;
	long status = 0;

	if (!(full = malloc(flen))) {
		snprintf(why, why_len, "out of memory");
		return -1;
	}
	snprintf(full, flen, "%s%s", h->url, path);
	if (body) {
		/* The extra header is added for this request only, then taken off the shared list.
		 */
		ct = curl_slist_append(NULL, "Content-Type: application/json");
		if (!ct) {
			free(full);
			snprintf(why, why_len, "out of memory");
			return -1;
		}
		ct->next = h->headers;
		hdrs = ct;
	}
	curl_easy_reset(h->curl);
	curl_easy_setopt(h->curl, CURLOPT_URL, full);
	curl_easy_setopt(h->curl, CURLOPT_PROTOCOLS_STR, "https");
	curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)RC_HTTP_CONNECT_TIMEOUT_MS);
	curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, (long)RC_HTTP_TIMEOUT_MS);
	curl_easy_setopt(h->curl, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(h->curl, CURLOPT_SSL_VERIFYHOST, 2L);
	if (h->ca)
		curl_easy_setopt(h->curl, CURLOPT_CAINFO, h->ca);
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h->curl, CURLOPT_USERAGENT, "railyard/" RAILYARD_VERSION);
	curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, method);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(h->curl, CURLOPT_NOBODY, 1L);
	if (body) {
		curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	}
	curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, errbuf);
	cc = curl_easy_perform(h->curl);
	if (ct) {
		ct->next = NULL;
		curl_slist_free_all(ct);
	}
	free(full);
	if (cc != CURLE_OK) {
		if (s.too_big)
			snprintf(why, why_len, "the reply is larger than %u MiB",
				 RC_HTTP_REPLY_MAX >> 20);
		else
			snprintf(why, why_len, "%s%s", errbuf[0] ? errbuf : curl_easy_strerror(cc),
				 cc == CURLE_PEER_FAILED_VERIFICATION ||
						 cc == CURLE_SSL_CACERT_BADFILE
					 ? " (is --ca the controller's ca.crt?)"
					 : "");
		free(s.buf);
		return -1;
	}
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
	if (!s.buf && !(s.buf = calloc(1, 1))) {
		snprintf(why, why_len, "out of memory");
		return -1;
	}
	*ret = (struct rc_reply){.status = status, .body = s.buf, .len = s.len};
	return 0;
}

void rc_reply_done(struct rc_reply *r)
{
	if (!r)
		return;
	free(r->body);
	*r = (struct rc_reply){0};
}
