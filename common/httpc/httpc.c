/* The HTTP client (httpc.h): a libcurl easy handle reused for every call, so that one command
 * makes one connection (TLS, or the unix socket) however many pages or polls it needs. */
#include "common/httpc/httpc.h"

#include "common/util/buf.h"
#include "common/util/error.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct httpc {
	CURL *curl;
	char *url;	 /* as given, for messages */
	char *base;	 /* what request paths are appended to: the URL, or http://localhost */
	char *unix_path; /* the socket's path; NULL for HTTPS */
	char *ca;
	struct curl_slist *headers; /* Accept, and Authorization when there is a token */
};

/* The write callback: the body into a struct ry_buf whose max is HTTPC_REPLY_MAX. Returning
 * less than was given stops the transfer (CURLE_WRITE_ERROR). */
static size_t on_data(char *data, size_t size, size_t n, void *userdata)
{
	struct ry_buf *b = userdata;
	size_t add = size * n;

	if (ry_buf_addn(b, data, add) < 0)
		return 0;
	return add;
}

/* Did the body pass HTTPC_REPLY_MAX? */
static bool too_big(const struct ry_buf *b)
{
	return ry_buf_error(b) == -RY_E_TOO_BIG;
}

/* Free a header list, wiping it first (it holds the token). */
static void wipe_list(struct curl_slist *l)
{
	for (struct curl_slist *x = l; x; x = x->next)
		explicit_bzero(x->data, strlen(x->data));
	curl_slist_free_all(l);
}

/* The options every transfer has: the URL; https only, the certificate verified (against the
 * CA file when there is one), or http only over the unix socket; the headers, a connect
 * timeout, errors in errbuf. */
static void setup(const struct httpc *h, CURL *c, const char *full, const struct curl_slist *hdrs,
		  char *errbuf)
{
	curl_easy_setopt(c, CURLOPT_URL, full);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)HTTPC_CONNECT_TIMEOUT_MS);
	if (h->unix_path) {
		curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, h->unix_path);
	} else {
		curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
		if (h->ca)
			curl_easy_setopt(c, CURLOPT_CAINFO, h->ca);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "railyard/" RAILYARD_VERSION);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
}

/* Why a transfer failed, as a negative errno: the connect's own errno when it failed there
 * (ECONNREFUSED: nothing listens; ENOENT: no socket; EACCES: not ours to open; EAGAIN: a
 * socket's backlog full). */
static int failure(CURL *c, CURLcode cc)
{
	long os = 0;

	if (cc == CURLE_OUT_OF_MEMORY)
		return -ENOMEM;
	if (cc == CURLE_OPERATION_TIMEDOUT)
		return -ETIMEDOUT;
	if (cc == CURLE_COULDNT_CONNECT &&
	    curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os) == CURLE_OK && os > 0 && os < 4096)
		return -(int)os;
	return -EIO;
}

/* Why a transfer failed, for a person. */
static void explain(CURLcode cc, const char *errbuf, char *why, size_t why_len)
{
	snprintf(why, why_len, "%s%s", errbuf[0] ? errbuf : curl_easy_strerror(cc),
		 cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CACERT_BADFILE
			 ? " (is --ca the controller's ca.crt?)"
			 : "");
}

int httpc_new(const char *url, const char *token, const char *ca, struct httpc **ret)
{
	static const size_t ulen = sizeof(HTTPC_UNIX_PREFIX) - 1;
	struct httpc *h;
	size_t len = strlen(url);
	bool unix_socket = strncmp(url, HTTPC_UNIX_PREFIX, ulen) == 0;
	char *auth = NULL;

	/* The token is a credential: it travels over verified TLS only. Over the unix socket the
	 * kernel tells the server who calls. */
	if (unix_socket ? url[ulen] != '/' || url[ulen + 1] == '\0' || token
			: strncasecmp(url, "https://", 8) != 0 || len == 8)
		return -EINVAL;
	if (!(h = calloc(1, sizeof(*h))))
		return -ENOMEM;
	while (!unix_socket && len > 8 && url[len - 1] == '/')
		len--;
	if (!(h->url = strndup(url, len)) ||
	    !(h->base = unix_socket ? strdup("http://localhost") : strdup(h->url)) ||
	    (unix_socket && !(h->unix_path = strdup(url + ulen))) ||
	    (!unix_socket && ca && !(h->ca = strdup(ca))) || !(h->curl = curl_easy_init()) ||
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
	httpc_free(h);
	return -ENOMEM;
}

void httpc_free(struct httpc *h)
{
	if (!h)
		return;
	/* Wipe the copy of the token in the header list before it goes back to the heap. */
	wipe_list(h->headers);
	curl_easy_cleanup(h->curl);
	free(h->url);
	free(h->base);
	free(h->unix_path);
	free(h->ca);
	free(h);
}

const char *httpc_url(const struct httpc *h)
{
	return h->url;
}

int httpc_request(struct httpc *h, const char *method, const char *path, const char *body,
		  struct httpc_reply *ret, char *why, size_t why_len)
{
	char errbuf[CURL_ERROR_SIZE] = "", *full;
	struct curl_slist *hdrs = h->headers, *ct = NULL;
	struct ry_buf s;
	char *text;
	size_t len;
	size_t flen = strlen(h->base) + strlen(path) + 1;
	CURLcode cc;
	long status = 0;
	int r;

	ry_buf_init(&s, HTTPC_REPLY_MAX);
	if (!(full = malloc(flen))) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	snprintf(full, flen, "%s%s", h->base, path);
	if (body) {
		/* The extra header is added for this request only, then taken off the shared list.
		 */
		ct = curl_slist_append(NULL, "Content-Type: application/json");
		if (!ct) {
			free(full);
			snprintf(why, why_len, "out of memory");
			return -ENOMEM;
		}
		ct->next = h->headers;
		hdrs = ct;
	}
	curl_easy_reset(h->curl);
	setup(h, h->curl, full, hdrs, errbuf);
	curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, (long)HTTPC_TIMEOUT_MS);
	curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, method);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(h->curl, CURLOPT_NOBODY, 1L);
	if (body) {
		curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	}
	curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &s);
	cc = curl_easy_perform(h->curl);
	if (ct) {
		ct->next = NULL;
		curl_slist_free_all(ct);
	}
	free(full);
	if (cc != CURLE_OK) {
		if (too_big(&s)) {
			snprintf(why, why_len, "the reply is larger than %u MiB",
				 HTTPC_REPLY_MAX >> 20);
			r = -EFBIG;
		} else {
			r = failure(h->curl, cc);
			/* libcurl names "localhost port 80" for a socket: the errno says more. */
			if (h->unix_path && cc == CURLE_COULDNT_CONNECT && r != -EIO)
				snprintf(why, why_len, "%s", strerror(-r));
			else
				explain(cc, errbuf, why, why_len);
		}
		ry_buf_done(&s);
		return r;
	}
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
	if (ry_buf_take(&s, &text, &len) < 0) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	*ret = (struct httpc_reply){.status = status, .body = text, .len = len};
	return 0;
}

void httpc_reply_done(struct httpc_reply *r)
{
	if (!r)
		return;
	free(r->body);
	*r = (struct httpc_reply){0};
}

/* ---- a streamed reply -------------------------------------------------------------------- */

struct httpc_stream {
	CURLM *multi;
	CURL *curl;
	char *full;
	struct curl_slist *headers; /* its own list: Accept, the extra one, Authorization */
	httpc_data_fn on_data;
	void *cls;
	long status;	   /* 0 until the status line came */
	struct ry_buf err; /* the body of a reply that is not a 2xx (max HTTPC_REPLY_MAX) */
	bool stopped;	   /* on_data said stop */
	bool done;
	char errbuf[CURL_ERROR_SIZE];
};

static size_t on_stream_data(char *data, size_t size, size_t n, void *userdata)
{
	struct httpc_stream *s = userdata;
	size_t len = size * n;

	if (!s->status)
		curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->status);
	if (s->status < 200 || s->status >= 300)
		return on_data(data, size, n, &s->err);
	if (!s->on_data(s->cls, data, len)) {
		s->stopped = true;
		return 0;
	}
	return len;
}

int httpc_stream_open(struct httpc *h, const char *path, const char *accept, const char *extra,
		      httpc_data_fn on_data_fn, void *cls, struct httpc_stream **ret)
{
	struct httpc_stream *s = calloc(1, sizeof(*s));
	size_t flen = strlen(h->base) + strlen(path) + 1;
	char acc[128];

	if (!s)
		return -ENOMEM;
	ry_buf_init(&s->err, HTTPC_REPLY_MAX);
	s->on_data = on_data_fn;
	s->cls = cls;
	snprintf(acc, sizeof(acc), "Accept: %s", accept);
	if (!(s->full = malloc(flen)) || !(s->headers = curl_slist_append(NULL, acc)) ||
	    (extra && !curl_slist_append(s->headers, extra)))
		goto fail;
	snprintf(s->full, flen, "%s%s", h->base, path);
	/* The shared list's other lines (the token): copied, as the shared list is not ours. */
	for (const struct curl_slist *l = h->headers; l; l = l->next)
		if (strncasecmp(l->data, "Accept:", 7) != 0 &&
		    !curl_slist_append(s->headers, l->data))
			goto fail;
	if (!(s->curl = curl_easy_init()) || !(s->multi = curl_multi_init()))
		goto fail;
	setup(h, s->curl, s->full, s->headers, s->errbuf);
	/* No overall timeout: the stream runs as long as the user watches. A dead connection
	 * (the server's keepalive comments stopped) is noticed by the low-speed check instead:
	 * libcurl aborts below LIMIT bytes/s for TIME s, so a limit of 1 means nothing at all. */
	curl_easy_setopt(s->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(s->curl, CURLOPT_LOW_SPEED_TIME, (long)HTTPC_STREAM_SILENCE_S);
	curl_easy_setopt(s->curl, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(s->curl, CURLOPT_WRITEFUNCTION, on_stream_data);
	curl_easy_setopt(s->curl, CURLOPT_WRITEDATA, s);
	if (curl_multi_add_handle(s->multi, s->curl) != CURLM_OK)
		goto fail;
	*ret = s;
	return 0;
fail:
	httpc_stream_free(s);
	return -ENOMEM;
}

int httpc_stream_run(struct httpc_stream *s, int wait_ms, long *status, struct httpc_reply *body,
		     char *why, size_t why_len)
{
	CURLcode cc = CURLE_OK;
	CURLMsg *m;
	int running, left;
	char *text;
	size_t len;

	if (!s->done) {
		/* poll() interrupted by a signal is no error for libcurl: it returns early. */
		if (curl_multi_poll(s->multi, NULL, 0, wait_ms, NULL) != CURLM_OK ||
		    curl_multi_perform(s->multi, &running) != CURLM_OK) {
			snprintf(why, why_len, "libcurl failed (out of memory?)");
			s->done = true;
			return -1;
		}
		if (!s->status)
			curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->status);
		*status = s->status;
		while ((m = curl_multi_info_read(s->multi, &left)))
			if (m->msg == CURLMSG_DONE) {
				s->done = true;
				cc = m->data.result;
			}
		if (!s->done)
			return 0;
	} else {
		*status = s->status;
		snprintf(why, why_len, "the stream has ended");
		return -1;
	}
	if (cc != CURLE_OK || !s->status) {
		if (s->stopped)
			snprintf(why, why_len, "stopped");
		else if (too_big(&s->err))
			snprintf(why, why_len, "the reply is larger than %u MiB",
				 HTTPC_REPLY_MAX >> 20);
		else
			explain(cc, s->errbuf, why, why_len);
		return -1;
	}
	if (ry_buf_take(&s->err, &text, &len) < 0) {
		snprintf(why, why_len, "out of memory");
		return -1;
	}
	*body = (struct httpc_reply){.status = s->status, .body = text, .len = len};
	return 1;
}

void httpc_stream_free(struct httpc_stream *s)
{
	if (!s)
		return;
	if (s->multi && s->curl)
		curl_multi_remove_handle(s->multi, s->curl);
	curl_easy_cleanup(s->curl);
	curl_multi_cleanup(s->multi);
	wipe_list(s->headers);
	free(s->full);
	ry_buf_done(&s->err);
	free(s);
}

char *httpc_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = malloc(strlen(s) * 3 + 1), *p = out;

	if (!out)
		return NULL;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~') {
			*p++ = (char)c;
		} else {
			*p++ = '%';
			*p++ = hex[c >> 4];
			*p++ = hex[c & 15];
		}
	}
	*p = '\0';
	return out;
}
