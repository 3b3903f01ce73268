/* Internals shared by the files of controller/http: the server, its listeners, compiled
 * routes with their counters, the request and its reply, and the router's helpers. */
#ifndef RAILYARD_CONTROLLER_HTTP_INT_H
#define RAILYARD_CONTROLLER_HTTP_INT_H

#include "controller/http/http.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include <microhttpd.h>

#define HTTP_BUCKETS 10 /* latency buckets, plus one for +Inf */

/* Methods a route may have, as bits (the Allow header lists them in this order). */
enum http_method_bit {
	HTTP_M_GET = 1u << 0,
	HTTP_M_HEAD = 1u << 1,
	HTTP_M_POST = 1u << 2,
	HTTP_M_PUT = 1u << 3,
	HTTP_M_DELETE = 1u << 4,
};

struct http_counters {
	atomic_uint_fast64_t by_class[5];		  /* 1xx .. 5xx */
	atomic_uint_fast64_t by_bucket[HTTP_BUCKETS + 1]; /* not cumulative; last: +Inf */
	atomic_uint_fast64_t sum_us;
};

struct http_route_int {
	char *method;
	char *pattern;
	unsigned method_bit;
	size_t nseg;
	char *segs[HTTP_SEGMENTS_MAX]; /* literal text, or the capture's name */
	uint32_t capture_mask;	       /* bit i: segs[i] is a capture */
	uint64_t score;		       /* literal segments, first segment most significant */
	http_handler_fn handler;
	unsigned flags;
	size_t body_max;
	void *data;
	struct http_counters counters;
};

struct http_listener {
	struct http_server *srv;
	struct MHD_Daemon *daemon;
	bool local;	      /* the unix socket */
	bool tls;	      /* serves HTTPS: its replies carry Strict-Transport-Security */
	atomic_bool starting; /* MHD's messages go to err while MHD_start_daemon() runs */
	bool tls_err;	      /* one of them was about TLS */
	char err[256];
};

struct http_server {
	struct http_route_int *routes;
	size_t n_routes;
	struct http_counters unmatched;
	void *userdata;
	size_t body_max;
	uint16_t port;
	struct http_listener tcp;
	struct http_listener unx;
	char *unix_path;
	dev_t unix_dev;
	ino_t unix_ino;
	char *cert_pem;
	char *key_pem;
	pthread_mutex_t streams_lock; /* guards streams and stopping */
	struct http_stream *streams;
	bool stopping;
	atomic_long n_streams;
};

struct http_stream {
	struct http_server *srv;
	struct MHD_Connection *conn;
	http_stream_read_fn read;
	http_stream_free_fn free_cb;
	void *cls;
	pthread_mutex_t lock; /* guards parked, woken, stopping */
	bool parked;	      /* MHD_suspend_connection() called, not yet resumed */
	bool woken;
	bool stopping;
	struct http_stream *prev, *next; /* in srv->streams */
};

struct http_header {
	struct http_header *next;
	char *name;
	char *value;
};

struct http_reply {
	bool set;
	bool failed; /* could not be built: answer 500 */
	unsigned status;
	char *content_type;
	char *body;
	size_t len;
	struct http_header *headers;
	struct http_stream *stream; /* not yet handed to MHD */
	bool cache_control;	    /* the handler set its own Cache-Control */
};

struct http_query_param {
	char *name;
	char *value;
};

struct http_req {
	struct http_server *srv;
	struct http_listener *lst;
	struct MHD_Connection *conn;
	int64_t start_us;
	bool started; /* the access handler has seen the headers */
	bool queued;  /* a reply went to MHD */
	char *uri;    /* raw request target, cut at '?' */
	char *query_raw;
	const char *method; /* MHD's, valid for the request */
	unsigned method_bit;
	char *segbuf;
	const char *segs[HTTP_SEGMENTS_MAX];
	size_t nseg;
	struct http_query_param *query;
	size_t n_query;
	struct http_route_int *route;
	struct http_peer peer;
	char *body;
	size_t body_len;
	size_t body_cap;
	size_t body_limit;
	bool too_big;
	uint64_t discarded;
	json_t *json;
	struct http_reply reply;
};

/* http_router.c */
unsigned http_method_bit(const char *method);
/* Compile a route; errors name the route in errbuf. -EINVAL, -ENOMEM. */
int http_route_compile(const struct http_route *in, struct http_route_int *out, char *errbuf,
		       size_t errlen);
void http_route_done(struct http_route_int *r);
/* Split and percent-decode a raw path into req->segbuf/segs/nseg. -EINVAL for a path the
 * router refuses (see http.h), -ENOMEM. */
int http_path_parse(struct http_req *req);
/* Parse req->query_raw into req->query. -EINVAL when malformed or too many, -ENOMEM. */
int http_query_parse(struct http_req *req);
/* The best route for req's path and method; NULL with *ret_allow the methods the path has
 * (0: unknown path). */
struct http_route_int *http_route_find(struct http_server *srv, const struct http_req *req,
				       unsigned *ret_allow);
/* "GET, HEAD, POST" for a set of method bits, into buf. */
void http_allow_text(unsigned allow, char *buf, size_t len);

/* http_req.c */
void http_req_free(struct http_req *req);
void http_reply_clear(struct http_reply *reply);
/* Add a header without the checks of http_reply_header(). */
int http_reply_header_raw(struct http_req *req, const char *name, const char *value);
/* Build the MHD response for req's reply and queue it. */
enum MHD_Result http_req_finish(struct http_req *req);
/* Mark every stream as ending and resume the parked ones (server stopping). */
void http_streams_stop(struct http_server *srv);

/* http_metrics.c */
void http_counters_add(struct http_counters *c, unsigned status, int64_t dur_us);

int64_t http_now_us(void);

#endif
