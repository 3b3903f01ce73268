/* railyard-rest-load: a small HTTP(S) load generator for bench/rest-bench.sh (libcurl multi).
 *
 *   get --url URL [--token T] [--ca CA] [--path P] [--conns 8] [--seconds 10]
 *       keeps CONNS requests in flight over CONNS reused keep-alive connections for SECONDS;
 *   sse --url URL [--token T] [--ca CA] [--subscribers 1000] [--seconds 10] [--healthz 300]
 *       opens SUBSCRIBERS GET /api/v1/events streams, prints "ready ..." once they are connected
 *       (or after 60 s), listens for SECONDS while a thread times HEALTHZ sequential GET /healthz
 *       on a keep-alive connection of its own (spread over the first 80% of the window), then
 *       counts the events each subscriber received.
 *
 * Prints KEY=VALUE lines. An https URL needs --ca (the peer and its name are verified against
 * it); without --ca only a plain http URL is accepted. Exits 1 on a setup or curl error. */
#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

struct opts {
	const char *mode, *url, *token, *ca, *path;
	long conns, seconds, subscribers, healthz;
};

/* One request or stream: its easy handle, when it started, what came back. */
struct xfer {
	CURL *h;
	double t0;
	size_t bytes;
	bool connected, ended; /* sse: the 200 headers came; the stream ended early */
	long events;	       /* sse: "event:" lines */
	int col;	       /* sse: column in the current line (capped) */
	bool match;	       /* sse: the line so far matches "event:" */
};

/* Latencies in ms. */
struct lat {
	double *v;
	size_t n, cap;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "railyard-rest-load: %s%s%s\n", what, detail ? ": " : "",
		detail ? detail : "");
	exit(1);
}

static void lat_add(struct lat *l, double ms)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 4096;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			die("out of memory", NULL);
	}
	l->v[l->n++] = ms;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The p-th percentile (nearest rank) of l, sorted in place; 0 when empty. */
static double pct(struct lat *l, double p)
{
	size_t k;

	if (!l->n)
		return 0;
	qsort(l->v, l->n, sizeof(*l->v), cmp_double);
	k = (size_t)(p / 100.0 * (double)l->n + 0.999999);
	return l->v[k ? k - 1 : 0];
}

#define CHECK(call)                                                                                \
	do {                                                                                       \
		CURLcode rc_ = (call);                                                             \
		if (rc_ != CURLE_OK)                                                               \
			die(#call, curl_easy_strerror(rc_));                                       \
	} while (0)
#define MCHECK(call)                                                                               \
	do {                                                                                       \
		CURLMcode rc_ = (call);                                                            \
		if (rc_ != CURLM_OK)                                                               \
			die(#call, curl_multi_strerror(rc_));                                      \
	} while (0)

static size_t count_body(char *p, size_t size, size_t n, void *cls)
{
	((struct xfer *)cls)->bytes += size * n;
	return size * n;
}

/* An easy handle for GET url+path with the token, TLS verified against the CA file. */
static CURL *easy(const struct opts *o, const char *path, struct curl_slist *hdrs, void *cls)
{
	char url[4096];
	CURL *h = curl_easy_init();

	if (!h)
		die("curl_easy_init", NULL);
	if ((size_t)snprintf(url, sizeof(url), "%s%s", o->url, path) >= sizeof(url))
		die("URL too long", NULL);
	CHECK(curl_easy_setopt(h, CURLOPT_URL, url));
	CHECK(curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1));
	CHECK(curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, o->ca ? "https" : "http"));
	if (o->ca)
		CHECK(curl_easy_setopt(h, CURLOPT_CAINFO, o->ca));
	CHECK(curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L));
	CHECK(curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L));
	CHECK(curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L));
	CHECK(curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 60L));
	CHECK(curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs));
	CHECK(curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, count_body));
	CHECK(curl_easy_setopt(h, CURLOPT_WRITEDATA, cls));
	CHECK(curl_easy_setopt(h, CURLOPT_PRIVATE, cls));
	return h;
}

static long status_of(CURL *h)
{
	long code = 0;

	CHECK(curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code));
	return code;
}

static long connects_of(CURL *h)
{
	long n = 0;

	CHECK(curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &n));
	return n;
}

/* ---- get ------------------------------------------------------------------------------------ */

static int run_get(const struct opts *o, struct curl_slist *hdrs)
{
	CURLM *m = curl_multi_init();
	struct xfer *x = calloc((size_t)o->conns, sizeof(*x));
	struct lat lat = {0};
	long requests = 0, errors = 0, connects = 0, running = 0;
	double t0, end, t1, bytes = 0;
	CURLMsg *msg;
	int left, still;

	if (!m || !x)
		die("out of memory", NULL);
	MCHECK(curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, o->conns));
	MCHECK(curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, o->conns));
	MCHECK(curl_multi_setopt(m, CURLMOPT_PIPELINING, (long)CURLPIPE_NOTHING));
	t0 = now_ms();
	end = t0 + 1e3 * (double)o->seconds;
	for (long i = 0; i < o->conns; i++) {
		x[i].h = easy(o, o->path, hdrs, &x[i]);
		x[i].t0 = now_ms();
		MCHECK(curl_multi_add_handle(m, x[i].h));
		running++;
	}
	while (running > 0) {
		MCHECK(curl_multi_perform(m, &still));
		while ((msg = curl_multi_info_read(m, &left))) {
			struct xfer *r;
			char *priv;

			if (msg->msg != CURLMSG_DONE)
				continue;
			CHECK(curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv));
			r = (struct xfer *)priv;
			requests++;
			connects += connects_of(r->h);
			if (msg->data.result != CURLE_OK || status_of(r->h) != 200) {
				if (errors++ < 3)
					fprintf(stderr, "request failed: %s, HTTP %ld\n",
						curl_easy_strerror(msg->data.result),
						status_of(r->h));
			} else {
				lat_add(&lat, now_ms() - r->t0);
				bytes += (double)r->bytes;
			}
			MCHECK(curl_multi_remove_handle(m, r->h));
			running--;
			if (now_ms() < end) {
				r->bytes = 0;
				r->t0 = now_ms();
				MCHECK(curl_multi_add_handle(m, r->h));
				running++;
			}
		}
		if (running > 0)
			MCHECK(curl_multi_poll(m, NULL, 0, 100, NULL));
	}
	t1 = now_ms();
	printf("requests=%ld\nerrors=%ld\nconnections=%ld\nseconds=%.2f\nrps=%.1f\n", requests,
	       errors, connects, (t1 - t0) / 1e3, (double)requests / ((t1 - t0) / 1e3));
	printf("p50_ms=%.2f\np90_ms=%.2f\np99_ms=%.2f\nmax_ms=%.2f\nbytes_per_reply=%.0f\n",
	       pct(&lat, 50), pct(&lat, 90), pct(&lat, 99), pct(&lat, 100),
	       lat.n ? bytes / (double)lat.n : 0);
	for (long i = 0; i < o->conns; i++)
		curl_easy_cleanup(x[i].h);
	curl_multi_cleanup(m);
	free(x);
	free(lat.v);
	return errors ? 1 : 0;
}

/* ---- sse ------------------------------------------------------------------------------------ */

/* Count "event:" at the start of a line, across chunk boundaries. */
static size_t count_events(char *p, size_t size, size_t n, void *cls)
{
	static const char key[] = "event:";
	struct xfer *x = cls;

	for (size_t i = 0; i < size * n; i++) {
		if (p[i] == '\n') {
			x->col = 0;
			x->match = true;
		} else if (x->col < (int)sizeof(key) - 1) {
			x->match = x->match && p[i] == key[x->col];
			if (++x->col == (int)sizeof(key) - 1 && x->match)
				x->events++;
		}
	}
	x->bytes += size * n;
	return size * n;
}

/* The end of the headers of a 200: connected. */
static size_t on_header(char *p, size_t size, size_t n, void *cls)
{
	struct xfer *x = cls;

	if (size * n <= 2 && (p[0] == '\r' || p[0] == '\n') && status_of(x->h) == 200)
		x->connected = true;
	return size * n;
}

struct healthz {
	const struct opts *o;
	double every_ms; /* one request started every every_ms */
	struct lat lat;
	long errors;
};

/* Sequential GET /healthz on one keep-alive connection of its own, spread over the window. */
static void *healthz_thread(void *cls)
{
	struct healthz *hz = cls;
	struct xfer x = {0};
	CURL *h = easy(hz->o, "/healthz", NULL, &x);
	double start = now_ms();

	for (long i = 0; i < hz->o->healthz; i++) {
		double t0 = now_ms(), wait = start + (double)i * hz->every_ms - t0;
		CURLcode rc;

		if (wait > 0) {
			struct timespec ts = {(time_t)(wait / 1e3), (long)(fmod(wait, 1e3) * 1e6)};

			nanosleep(&ts, NULL);
			t0 = now_ms();
		}
		rc = curl_easy_perform(h);

		if (rc != CURLE_OK || status_of(h) != 200)
			hz->errors++;
		else
			lat_add(&hz->lat, now_ms() - t0);
	}
	curl_easy_cleanup(h);
	return NULL;
}

static int run_sse(const struct opts *o, struct curl_slist *hdrs)
{
	CURLM *m = curl_multi_init();
	long n = o->subscribers, connected = 0, ended = 0, evmin = -1, evmax = 0, evsum = 0;
	struct xfer *x = calloc((size_t)n, sizeof(*x));
	struct healthz hz = {.o = o, .every_ms = 0.8e3 * (double)o->seconds / (double)o->healthz};
	struct rlimit rl;
	pthread_t th;
	double t0, connect_ms, end;
	CURLMsg *msg;
	int left, still;

	if (!m || !x)
		die("out of memory", NULL);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			perror("setrlimit");
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)n + 64)
		fprintf(stderr, "warning: RLIMIT_NOFILE %llu is short of %ld streams\n",
			(unsigned long long)rl.rlim_cur, n);
	MCHECK(curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, n + 16));
	t0 = now_ms();
	for (long i = 0; i < n; i++) {
		x[i].h = easy(o, "/api/v1/events", hdrs, &x[i]);
		x[i].match = true;
		CHECK(curl_easy_setopt(x[i].h, CURLOPT_WRITEFUNCTION, count_events));
		CHECK(curl_easy_setopt(x[i].h, CURLOPT_HEADERFUNCTION, on_header));
		CHECK(curl_easy_setopt(x[i].h, CURLOPT_HEADERDATA, &x[i]));
		MCHECK(curl_multi_add_handle(m, x[i].h));
	}
	/* Connect them all (60 s at most), then listen for o->seconds. */
	end = t0 + 60e3;
	connect_ms = -1;
	for (;;) {
		double t = now_ms();

		MCHECK(curl_multi_perform(m, &still));
		while ((msg = curl_multi_info_read(m, &left))) {
			struct xfer *r;
			char *priv;

			if (msg->msg != CURLMSG_DONE)
				continue;
			CHECK(curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv));
			r = (struct xfer *)priv;
			if (!r->ended && ended++ < 3)
				fprintf(stderr, "stream ended: %s, HTTP %ld\n",
					curl_easy_strerror(msg->data.result), status_of(r->h));
			r->ended = true;
		}
		if (connect_ms < 0) {
			connected = 0;
			for (long i = 0; i < n; i++)
				connected += x[i].connected;
			if (connected + ended == n || t >= end) {
				connect_ms = t - t0;
				printf("ready subscribers_connected=%ld connect_ms=%.0f\n",
				       connected, connect_ms);
				fflush(stdout);
				end = t + 1e3 * (double)o->seconds;
				if (o->healthz > 0 &&
				    pthread_create(&th, NULL, healthz_thread, &hz))
					die("pthread_create", NULL);
			}
		} else if (t >= end || ended == n) {
			break;
		}
		MCHECK(curl_multi_poll(m, NULL, 0, 100, NULL));
	}
	if (o->healthz > 0)
		pthread_join(th, NULL);
	for (long i = 0; i < n; i++) {
		if (!x[i].connected)
			continue;
		evmin = evmin < 0 || x[i].events < evmin ? x[i].events : evmin;
		evmax = x[i].events > evmax ? x[i].events : evmax;
		evsum += x[i].events;
	}
	printf("subscribers=%ld\nsubscribers_connected=%ld\nsubscribers_ended_early=%ld\n", n,
	       connected, ended);
	printf("connect_ms=%.0f\nevents_per_subscriber_min=%ld\nevents_per_subscriber_max=%ld\n",
	       connect_ms, evmin < 0 ? 0 : evmin, evmax);
	printf("events_total=%ld\nhealthz_requests=%zu\nhealthz_errors=%ld\n", evsum, hz.lat.n,
	       hz.errors);
	printf("healthz_p50_ms=%.2f\nhealthz_p99_ms=%.2f\nhealthz_max_ms=%.2f\n", pct(&hz.lat, 50),
	       pct(&hz.lat, 99), pct(&hz.lat, 100));
	for (long i = 0; i < n; i++) {
		MCHECK(curl_multi_remove_handle(m, x[i].h));
		curl_easy_cleanup(x[i].h);
	}
	curl_multi_cleanup(m);
	free(x);
	free(hz.lat.v);
	return connected == n && !hz.errors ? 0 : 1;
}

/* ---- main ----------------------------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr, "usage: railyard-rest-load get --url URL [--token T] [--ca CA] [--path P] "
			"[--conns 8] [--seconds 10]\n"
			"       railyard-rest-load sse --url URL [--token T] [--ca CA] "
			"[--subscribers 1000] [--seconds 10] [--healthz 300]\n");
	exit(2);
}

static long num(const char *s, long lo, long hi)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (!*s || *end || v < lo || v > hi)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	struct opts o = {.path = "/api/v1/nodes?limit=1000",
			 .conns = 8,
			 .seconds = 10,
			 .subscribers = 1000,
			 .healthz = 300};
	struct curl_slist *hdrs = NULL;
	static char auth[1024];
	int r;

	if (argc < 2)
		usage();
	o.mode = argv[1];
	for (int i = 2; i < argc; i += 2) {
		const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			usage();
		if (!strcmp(k, "--url"))
			o.url = v;
		else if (!strcmp(k, "--token"))
			o.token = v;
		else if (!strcmp(k, "--ca"))
			o.ca = v;
		else if (!strcmp(k, "--path"))
			o.path = v;
		else if (!strcmp(k, "--conns"))
			o.conns = num(v, 1, 4096);
		else if (!strcmp(k, "--seconds"))
			o.seconds = num(v, 1, 3600);
		else if (!strcmp(k, "--subscribers"))
			o.subscribers = num(v, 1, 100000);
		else if (!strcmp(k, "--healthz"))
			o.healthz = num(v, 0, 1000000);
		else
			usage();
	}
	if (!o.url || (strcmp(o.mode, "get") && strcmp(o.mode, "sse")))
		usage();
	if (strncmp(o.url, o.ca ? "https://" : "http://", o.ca ? 8 : 7))
		die(o.ca ? "with --ca the URL must be https://" : "an https URL needs --ca", o.url);
	if (curl_global_init(CURL_GLOBAL_ALL) != CURLE_OK)
		die("curl_global_init", NULL);
	if (o.token) {
		if ((size_t)snprintf(auth, sizeof(auth), "Authorization: Bearer %s", o.token) >=
		    sizeof(auth))
			die("token too long", NULL);
		if (!(hdrs = curl_slist_append(NULL, auth)))
			die("out of memory", NULL);
	}
	r = strcmp(o.mode, "get") ? run_sse(&o, hdrs) : run_get(&o, hdrs);
	curl_slist_free_all(hdrs);
	curl_global_cleanup();
	return r;
}
