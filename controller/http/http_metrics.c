/* Request counters per route: replies by status class and a latency histogram, as relaxed
 * atomics bumped on the worker threads, written out in Prometheus text format. */
#include "controller/http/http_int.h"

#include <errno.h>
#include <inttypes.h>

static const unsigned bucket_ms[HTTP_BUCKETS] = {1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500};
static const char *const bucket_le[HTTP_BUCKETS + 1] = {
	"0.001", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "+Inf"};

void http_counters_add(struct http_counters *c, unsigned status, int64_t dur_us)
{
	size_t b = 0;

	if (dur_us < 0)
		dur_us = 0;
	if (status >= 100 && status <= 599)
		atomic_fetch_add_explicit(&c->by_class[status / 100 - 1], 1, memory_order_relaxed);
	while (b < HTTP_BUCKETS && dur_us > (int64_t)bucket_ms[b] * 1000)
		b++;
	atomic_fetch_add_explicit(&c->by_bucket[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&c->sum_us, (uint_fast64_t)dur_us, memory_order_relaxed);
}

/* A label value with '\\', '"' and newlines escaped, as the text format wants. */
static void put_label(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(out, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", out);
		else
			fputc(*s, out);
	}
}

static void put_labels(FILE *out, const char *route, const char *method)
{
	fputs("route=\"", out);
	put_label(out, route);
	fputs("\",method=\"", out);
	put_label(out, method);
	fputc('"', out);
}

static void put_requests(FILE *out, const struct http_counters *c, const char *route,
			 const char *method)
{
	for (int k = 0; k < 5; k++) {
		uint_fast64_t v = atomic_load_explicit(&c->by_class[k], memory_order_relaxed);

		if (!v)
			continue;
		fputs("railyard_http_requests_total{", out);
		put_labels(out, route, method);
		fprintf(out, ",code=\"%dxx\"} %" PRIuFAST64 "\n", k + 1, v);
	}
}

static void put_duration(FILE *out, const struct http_counters *c, const char *route,
			 const char *method)
{
	uint_fast64_t counts[HTTP_BUCKETS + 1], total = 0, sum_us;

	for (size_t b = 0; b <= HTTP_BUCKETS; b++) {
		counts[b] = atomic_load_explicit(&c->by_bucket[b], memory_order_relaxed);
		total += counts[b];
	}
	if (!total)
		return;
	sum_us = atomic_load_explicit(&c->sum_us, memory_order_relaxed);
	/* _count is the +Inf bucket, both from the same reads. */
	uint_fast64_t cum = 0;
	for (size_t b = 0; b <= HTTP_BUCKETS; b++) {
		cum += counts[b];
		fputs("railyard_http_request_duration_seconds_bucket{", out);
		put_labels(out, route, method);
		fprintf(out, ",le=\"%s\"} %" PRIuFAST64 "\n", bucket_le[b], cum);
	}
	fputs("railyard_http_request_duration_seconds_sum{", out);
	put_labels(out, route, method);
	fprintf(out, "} %" PRIuFAST64 ".%06" PRIuFAST64 "\n", sum_us / 1000000, sum_us % 1000000);
	fputs("railyard_http_request_duration_seconds_count{", out);
	put_labels(out, route, method);
	fprintf(out, "} %" PRIuFAST64 "\n", total);
}

int http_server_metrics(struct http_server *srv, FILE *out)
{
	fputs("# HELP railyard_http_requests_total HTTP requests answered, by route, method and "
	      "status class.\n"
	      "# TYPE railyard_http_requests_total counter\n",
	      out);
	for (size_t i = 0; i < srv->n_routes; i++)
		put_requests(out, &srv->routes[i].counters, srv->routes[i].pattern,
			     srv->routes[i].method);
	put_requests(out, &srv->unmatched, "unmatched", "ANY");
	fputs("# HELP railyard_http_request_duration_seconds Time from a request line to its "
	      "reply being queued.\n"
	      "# TYPE railyard_http_request_duration_seconds histogram\n",
	      out);
	for (size_t i = 0; i < srv->n_routes; i++)
		put_duration(out, &srv->routes[i].counters, srv->routes[i].pattern,
			     srv->routes[i].method);
	put_duration(out, &srv->unmatched, "unmatched", "ANY");
	fprintf(out,
		"# HELP railyard_http_streams Streamed replies (event streams) open.\n"
		"# TYPE railyard_http_streams gauge\n"
		"railyard_http_streams %ld\n",
		atomic_load(&srv->n_streams));
	return ferror(out) ? -EIO : 0;
}
