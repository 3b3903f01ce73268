/* Requests and replies: the accessors handlers read, the reply builders they call, ETags and
 * If-None-Match, streamed replies parked with MHD's suspend/resume, and the step that turns a
 * reply into a queued MHD response (and counts it). */
#include "controller/http/http_int.h"

#include "common/log/log.h"
#include "common/util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/sha.h>

#define STREAM_BLOCK_SIZE (16 * 1024)

int64_t http_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Accessors. */

const char *http_req_method(const struct http_req *req)
{
	return req->method;
}

const char *http_req_path(const struct http_req *req)
{
	return req->uri;
}

const char *http_req_route(const struct http_req *req)
{
	return req->route ? req->route->pattern : NULL;
}

const char *http_req_capture(const struct http_req *req, const char *name)
{
	const struct http_route_int *r = req->route;

	if (!r || !name)
		return NULL;
	for (size_t i = 0; i < r->nseg; i++)
		if ((r->capture_mask & (1u << i)) && !strcmp(r->segs[i], name))
			return req->segs[i];
	return NULL;
}

const char *http_req_query(const struct http_req *req, const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < req->n_query; i++)
		if (!strcmp(req->query[i].name, name))
			return req->query[i].value;
	return NULL;
}

const char *http_req_header(const struct http_req *req, const char *name)
{
	if (!name)
		return NULL;
	return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const void *http_req_body(const struct http_req *req, size_t *ret_len)
{
	*ret_len = req->body_len;
	return req->body_len ? req->body : NULL;
}

const struct http_peer *http_req_peer(const struct http_req *req)
{
	return &req->peer;
}

void *http_req_userdata(const struct http_req *req)
{
	return req->srv->userdata;
}

void *http_req_route_data(const struct http_req *req)
{
	return req->route ? req->route->data : NULL;
}

static bool content_type_is_json(const char *ct)
{
	static const char want[] = "application/json";

	if (!ct)
		return false;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (strncasecmp(ct, want, sizeof(want) - 1) != 0)
		return false;
	ct += sizeof(want) - 1;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	return *ct == '\0' || *ct == ';';
}

json_t *http_req_json(struct http_req *req)
{
	json_error_t err;
	json_t *j;
	char msg[sizeof(err.text) + 64];

	if (req->json)
		return req->json;
	if (!content_type_is_json(http_req_header(req, MHD_HTTP_HEADER_CONTENT_TYPE))) {
		http_reply_error(req, 415, "unsupported_media_type",
				 "Content-Type must be application/json", NULL);
		return NULL;
	}
	j = json_loadb(req->body ? req->body : "", req->body_len, JSON_REJECT_DUPLICATES, &err);
	if (!j) {
		snprintf(msg, sizeof(msg), "line %d column %d: %s", err.line, err.column, err.text);
		http_reply_error(req, 400, "invalid_json", msg, NULL);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		http_reply_error(req, 400, "invalid_json", "the body must be a JSON object", NULL);
		return NULL;
	}
	req->json = j;
	return j;
}

/* Replies. */

static void stream_release(struct http_stream *s);

void http_reply_clear(struct http_reply *reply)
{
	struct http_header *h = reply->headers;

	while (h) {
		struct http_header *next = h->next;

		free(h->name);
		free(h->value);
		free(h);
		h = next;
	}
	free(reply->content_type);
	free(reply->body);
	if (reply->stream)
		stream_release(reply->stream);
	memset(reply, 0, sizeof(*reply));
}

static bool text_ok(const char *s)
{
	for (; *s; s++)
		if (((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7f)
			return false;
	return true;
}

/* Start a new reply; false (and the reply marked failed) when it cannot be. */
static bool reply_begin(struct http_req *req, unsigned status, const char *content_type)
{
	struct http_reply *r = &req->reply;

	http_reply_clear(r);
	r->set = true;
	r->status = status;
	if (status < 100 || status > 599 || (content_type && !text_ok(content_type))) {
		log_debug("http: %s %s: bad reply (status %u)", req->method, req->uri, status);
		r->failed = true;
		return false;
	}
	if (content_type && !(r->content_type = strdup(content_type))) {
		r->failed = true;
		return false;
	}
	return true;
}

void http_reply_json(struct http_req *req, unsigned status, json_t *body)
{
	struct http_reply *r = &req->reply;

	if (!reply_begin(req, status, "application/json") || !body) {
		r->failed = true;
		json_decref(body);
		return;
	}
	r->body = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
	json_decref(body);
	if (!r->body) {
		r->failed = true;
		return;
	}
	r->len = strlen(r->body);
}

void http_reply_bytes(struct http_req *req, unsigned status, const char *content_type,
		      const void *data, size_t len)
{
	struct http_reply *r = &req->reply;

	if (!reply_begin(req, status, content_type))
		return;
	if (len) {
		r->body = malloc(len);
		if (!r->body) {
			r->failed = true;
			return;
		}
		memcpy(r->body, data, len);
		r->len = len;
	}
}

/* A JSON string of s; invalid UTF-8 is escaped. NULL when out of memory. */
static json_t *json_text(const char *s)
{
	json_t *j = json_string(s ? s : "");
	char *esc;

	if (j || !s)
		return j;
	esc = util_escape(s, false);
	if (!esc)
		return NULL;
	j = json_string(esc);
	free(esc);
	return j;
}

void http_reply_error(struct http_req *req, unsigned status, const char *code, const char *message,
		      const char *field)
{
	json_t *err = json_object();
	json_t *body = json_object();

	if (!err || !body || json_object_set_new(err, "code", json_text(code)) < 0 ||
	    json_object_set_new(err, "message", json_text(message)) < 0 ||
	    (field && json_object_set_new(err, "field", json_text(field)) < 0) ||
	    json_object_set(body, "error", err) < 0) {
		json_decref(err);
		json_decref(body);
		reply_begin(req, status, "application/json");
		req->reply.failed = true;
		return;
	}
	json_decref(err);
	http_reply_json(req, status, body);
}

static bool is_token(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++) {
		char c = *s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("!#$%&'*+-.^_`|~", c)))
			return false;
	}
	return true;
}

int http_reply_header_raw(struct http_req *req, const char *name, const char *value)
{
	struct http_header *h = calloc(1, sizeof(*h));
	struct http_header **tail = &req->reply.headers;

	if (!h)
		return -ENOMEM;
	h->name = strdup(name);
	h->value = strdup(value);
	if (!h->name || !h->value) {
		free(h->name);
		free(h->value);
		free(h);
		return -ENOMEM;
	}
	while (*tail)
		tail = &(*tail)->next;
	*tail = h;
	if (!strcasecmp(name, "Cache-Control"))
		req->reply.cache_control = true;
	return 0;
}

int http_reply_header(struct http_req *req, const char *name, const char *value)
{
	if (!req->reply.set || !name || !value || !is_token(name) || !text_ok(value) ||
	    !strcasecmp(name, "Content-Type") || !strcasecmp(name, "Content-Length") ||
	    !strcasecmp(name, "ETag") || !strcasecmp(name, "Transfer-Encoding"))
		return -EINVAL;
	return http_reply_header_raw(req, name, value);
}

/* Streams. */

/* The MHD content reader: see http_reply_stream() in http.h for the contract with read(). */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct http_stream *s = cls;

	for (;;) {
		ssize_t n;

		pthread_mutex_lock(&s->lock);
		if (s->stopping) {
			pthread_mutex_unlock(&s->lock);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		s->woken = false;
		pthread_mutex_unlock(&s->lock);

		n = s->read(s->cls, buf, max);
		if (n > 0)
			return (size_t)n <= max ? n : MHD_CONTENT_READER_END_WITH_ERROR;
		if (n == HTTP_STREAM_END)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (n < 0)
			return MHD_CONTENT_READER_END_WITH_ERROR;

		/* Nothing to send: park the connection, unless a wake came in meanwhile. The
		 * lock orders this against http_stream_wake(), so MHD_resume_connection() is
		 * only ever called on a suspended connection. */
		pthread_mutex_lock(&s->lock);
		if (s->woken && !s->stopping) {
			pthread_mutex_unlock(&s->lock);
			continue;
		}
		if (s->stopping) {
			pthread_mutex_unlock(&s->lock);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		s->parked = true;
		MHD_suspend_connection(s->conn);
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
}

static void stream_release(struct http_stream *s)
{
	struct http_server *srv = s->srv;

	/* The owner forgets the handle first: no wake can come after free_cb returns. */
	if (s->free_cb)
		s->free_cb(s->cls);
	pthread_mutex_lock(&srv->streams_lock);
	if (s->prev)
		s->prev->next = s->next;
	else
		srv->streams = s->next;
	if (s->next)
		s->next->prev = s->prev;
	pthread_mutex_unlock(&srv->streams_lock);
	atomic_fetch_sub(&srv->n_streams, 1);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static void stream_response_free(void *cls)
{
	stream_release(cls);
}

struct http_stream *http_reply_stream(struct http_req *req, const char *content_type,
				      http_stream_read_fn read, http_stream_free_fn free_cb,
				      void *cls)
{
	struct http_server *srv = req->srv;
	struct http_stream *s = NULL;

	if (!read || !reply_begin(req, 200, content_type ? content_type : "text/event-stream"))
		goto fail;
	s = calloc(1, sizeof(*s));
	if (!s || pthread_mutex_init(&s->lock, NULL) != 0) {
		free(s);
		goto fail;
	}
	s->srv = srv;
	s->conn = req->conn;
	s->read = read;
	s->free_cb = free_cb;
	s->cls = cls;
	pthread_mutex_lock(&srv->streams_lock);
	s->stopping = srv->stopping;
	s->next = srv->streams;
	if (srv->streams)
		srv->streams->prev = s;
	srv->streams = s;
	pthread_mutex_unlock(&srv->streams_lock);
	atomic_fetch_add(&srv->n_streams, 1);
	req->reply.stream = s;
	return s;
fail:
	req->reply.failed = true;
	if (free_cb)
		free_cb(cls);
	return NULL;
}

void http_stream_wake(struct http_stream *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->woken = true;
	if (s->parked) {
		s->parked = false;
		MHD_resume_connection(s->conn);
	}
	pthread_mutex_unlock(&s->lock);
}

void http_server_wake_streams(struct http_server *srv)
{
	pthread_mutex_lock(&srv->streams_lock);
	for (struct http_stream *s = srv->streams; s; s = s->next)
		http_stream_wake(s);
	pthread_mutex_unlock(&srv->streams_lock);
}

void http_streams_stop(struct http_server *srv)
{
	pthread_mutex_lock(&srv->streams_lock);
	srv->stopping = true;
	for (struct http_stream *s = srv->streams; s; s = s->next) {
		pthread_mutex_lock(&s->lock);
		s->stopping = true;
		if (s->parked) {
			s->parked = false;
			MHD_resume_connection(s->conn);
		}
		pthread_mutex_unlock(&s->lock);
	}
	pthread_mutex_unlock(&srv->streams_lock);
}

/* Finishing a request. */

/* Does the If-None-Match list name etag (a quoted tag), weakly compared, or is it "*"? */
static bool etag_listed(const char *inm, const char *etag)
{
	size_t elen = strlen(etag);

	while (inm && *inm) {
		while (*inm == ' ' || *inm == '\t' || *inm == ',')
			inm++;
		if (!*inm)
			break;
		const char *end = strchr(inm, ',');
		size_t len = end ? (size_t)(end - inm) : strlen(inm);

		while (len && (inm[len - 1] == ' ' || inm[len - 1] == '\t'))
			len--;
		if (len == 1 && inm[0] == '*')
			return true;
		if (len > 2 && !strncmp(inm, "W/", 2)) {
			inm += 2;
			len -= 2;
		}
		if (len == elen && !memcmp(inm, etag, len))
			return true;
		inm = end;
	}
	return false;
}

static void add_header(struct http_req *req, struct MHD_Response *resp, const char *name,
		       const char *value)
{
	if (MHD_add_response_header(resp, name, value) != MHD_YES)
		log_debug("http: %s %s: header %s refused", req->method, req->uri, name);
}

static void fail_reply(struct http_req *req, const char *message)
{
	http_reply_error(req, 500, "internal", message, NULL);
	if (req->reply.failed) {
		/* Out of memory: a static body. */
		static const char body[] =
			"{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}";
		http_reply_clear(&req->reply);
		req->reply.set = true;
		req->reply.status = 500;
		req->reply.content_type = strdup("application/json");
		req->reply.body = malloc(sizeof(body) - 1);
		if (req->reply.body) {
			memcpy(req->reply.body, body, sizeof(body) - 1);
			req->reply.len = sizeof(body) - 1;
		}
	}
}

enum MHD_Result http_req_finish(struct http_req *req)
{
	struct http_reply *r = &req->reply;
	struct http_counters *c = req->route ? &req->route->counters : &req->srv->unmatched;
	struct MHD_Response *resp = NULL;
	char etag[2 + 32 + 1] = "";
	enum MHD_Result ret;
	unsigned status;

	if (!r->set)
		fail_reply(req, "the handler set no reply");
	else if (r->failed)
		fail_reply(req, "the reply could not be built");
	if (r->stream) {
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK_SIZE,
							 stream_read, r->stream,
							 stream_response_free);
		if (resp)
			r->stream = NULL; /* MHD's now: freed by stream_response_free() */
		else
			fail_reply(req, "out of memory");
	}
	status = r->status;
	if (!resp) {
		if (status == 200 && req->route && !(req->route->flags & HTTP_ROUTE_NO_ETAG) &&
		    (req->method_bit == HTTP_M_GET || req->method_bit == HTTP_M_HEAD)) {
			unsigned char md[SHA256_DIGEST_LENGTH];
			char hex[2 * 16 + 1];

			SHA256((const unsigned char *)(r->body ? r->body : ""), r->len, md);
			util_hex(md, 16, hex);
			snprintf(etag, sizeof(etag), "\"%s\"", hex);
			if (etag_listed(http_req_header(req, MHD_HTTP_HEADER_IF_NONE_MATCH),
					etag)) {
				status = 304;
				free(r->body);
				r->body = NULL;
				r->len = 0;
			}
		}
		if (r->len) {
			resp = MHD_create_response_from_buffer(r->len, r->body,
							       MHD_RESPMEM_MUST_FREE);
			if (resp)
				r->body = NULL; /* MHD frees it */
		} else {
			resp = MHD_create_response_from_buffer(0, (void *)"",
							       MHD_RESPMEM_PERSISTENT);
		}
		if (!resp) {
			log_debug("http: %s %s: out of memory for the reply", req->method,
				  req->uri);
			return MHD_NO; /* closes the connection */
		}
	}
	if (r->content_type && status != 304)
		add_header(req, resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type);
	add_header(req, resp, "X-Content-Type-Options", "nosniff");
	if (req->lst->tls)
		add_header(req, resp, "Strict-Transport-Security", HTTP_HSTS);
	if (!r->cache_control)
		add_header(req, resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (etag[0])
		add_header(req, resp, MHD_HTTP_HEADER_ETAG, etag);
	for (const struct http_header *h = r->headers; h; h = h->next)
		add_header(req, resp, h->name, h->value);
	ret = MHD_queue_response(req->conn, status, resp);
	MHD_destroy_response(resp);
	req->queued = true;
	http_counters_add(c, status, http_now_us() - req->start_us);
	return ret;
}

void http_req_free(struct http_req *req)
{
	if (!req)
		return;
	http_reply_clear(&req->reply);
	json_decref(req->json);
	free(req->body);
	free(req->query);
	free(req->segbuf);
	free(req->uri);
	free(req);
}
