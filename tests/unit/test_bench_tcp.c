/* End-to-end tests of the benchmark engine over the tcp transport on 127.0.0.1: server in a
 * thread on port 0, client in the test thread. Latency and bandwidth (uni, bidir, several
 * connections, duration, sweep), data-integrity mismatch, peers that disagree, are missing or
 * die mid-test, a clock that goes back, cancel. Counts and validity only, never speed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "nodeagent/bench/bench.h"

#include "common/util/error.h"
#include "common/util/util.h"
#include "tests/unit/test_bench_srv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A server that must be listening. */
static uint16_t srv_start(struct tsrv *s, const struct bench_params *p)
{
	uint16_t port = tsrv_start(s, p);

	assert_false(s->finished);
	return port;
}

static void base(struct bench_params *p, enum bench_kind kind, uint64_t size, uint64_t iters)
{
	bench_params_init(p);
	p->kind = kind;
	p->size = size;
	p->iters = iters;
	p->connect_timeout_ms = 10000;
	p->io_timeout_ms = 10000;
}

static double num(const json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

/* Run server and client with the same p; both must succeed and return the same results. */
static json_t *run_pair(const struct bench_params *p, const struct bench_run_opts *copts)
{
	struct bench_run_opts o = {0};
	struct bench_params c = *p;
	char err[BENCH_ERR_LEN] = "";
	json_t *res = NULL;
	struct tsrv s;
	int r;

	c.port = srv_start(&s, p);
	if (copts)
		o = *copts;
	o.err = err;
	o.errlen = sizeof(err);
	r = bench_run_client(&c, "127.0.0.1", &o, &res);
	tsrv_join(&s);
	if (r != 0 || s.r != 0)
		fail_msg("client %d (%s), server %d (%s)", r, err, s.r, s.err);
	assert_true(json_is_true(json_object_get(res, "ok")));
	assert_true(json_equal(json_object_get(res, "results"), json_object_get(s.res, "results")));
	assert_string_equal(json_string_value(json_object_get(s.res, "role")), "server");
	json_decref(s.res);
	return res;
}

static void check_lat(const json_t *lat, uint64_t count)
{
	assert_non_null(lat);
	assert_int_equal((uint64_t)num(lat, "count"), count);
	assert_true(num(lat, "min") > 0);
	assert_true(num(lat, "min") <= num(lat, "p50"));
	assert_true(num(lat, "p50") <= num(lat, "p90"));
	assert_true(num(lat, "p90") <= num(lat, "p99"));
	assert_true(num(lat, "p99") <= num(lat, "p99_9"));
	assert_true(num(lat, "p99_9") <= num(lat, "max"));
	assert_true(num(lat, "mean") >= num(lat, "min") && num(lat, "mean") <= num(lat, "max"));
	assert_true(num(lat, "stddev") >= 0);
}

static void test_lat(void **state)
{
	struct bench_params p;
	json_t *res, *r0;

	base(&p, BENCH_LAT, 32, 2000);
	p.check_data = true;
	p.ib_port = 2; /* verbs settings: tcp ignores them */
	p.traffic_class = 32;
	p.service_level = 1;
	res = run_pair(&p, NULL);
	assert_int_equal(json_array_size(json_object_get(res, "results")), 1);
	r0 = json_array_get(json_object_get(res, "results"), 0);
	assert_int_equal((int)num(r0, "size"), 32);
	check_lat(json_object_get(r0, "latency"), 2000);
	/* Both sides checked every iteration, warm-up included. */
	assert_int_equal((int)num(json_object_get(r0, "data_check"), "checked"), 2 * 2200);
	assert_string_equal(json_string_value(json_object_get(res, "latency_is")),
			    "one-way (RTT/2)");
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(json_object_get(res, "environment"), "server"),
				    "transport")),
			    "tcp");
	/* The parameters say what was asked; the environment what the transport did with it. */
	assert_int_equal((int)num(json_object_get(res, "params"), "ib_port"), 2);
	for (int side = 0; side < 2; side++) {
		const json_t *env = json_object_get(json_object_get(res, "environment"),
						    side ? "server" : "client");

		assert_true(json_is_integer(json_object_get(env, "traffic_class")));
		assert_int_equal((int)num(env, "traffic_class"), 0);
		assert_true(json_is_integer(json_object_get(env, "service_level")));
		assert_int_equal((int)num(env, "service_level"), 0);
		assert_int_equal((int)num(env, "port"), 0);
	}
	json_decref(res);
}

static void check_bw(const json_t *bw, uint64_t msgs, uint64_t size)
{
	assert_non_null(bw);
	assert_int_equal((uint64_t)num(bw, "msgs"), msgs);
	assert_int_equal((uint64_t)num(bw, "bytes"), msgs * size);
	assert_true(num(bw, "gbps") > 0 && num(bw, "seconds") > 0 && num(bw, "msg_rate") > 0);
	assert_true(json_is_array(json_object_get(bw, "intervals")));
}

/* One side's CPU cost of a step: present, bytes as moved, the arithmetic consistent (the sizes
 * depend on the machine and are not asserted). */
static void check_cpu_side(const json_t *c, uint64_t bytes)
{
	const json_t *hc = json_object_get(c, "host_cores");

	assert_non_null(c);
	assert_int_equal((uint64_t)num(c, "bytes"), bytes);
	assert_true(num(c, "seconds") > 0);
	assert_true(num(c, "thread_s") >= 0);
	assert_true(fabs(num(c, "thread_cores") - num(c, "thread_s") / num(c, "seconds")) < 1e-6);
	assert_true(fabs(num(c, "thread_s_per_gb") - num(c, "thread_s") / ((double)bytes / 1e9)) <
		    1e-6 * (1 + num(c, "thread_s_per_gb")));
	if (json_is_null(hc)) /* a host without /proc/stat, or ticks that did not move */
		return;
	assert_true(num(c, "ncpu") >= 1);
	assert_true(num(c, "host_cores") >= 0 && num(c, "host_cores") <= num(c, "ncpu") + 1e-9);
	assert_true(fabs(num(c, "host_s") - num(c, "host_cores") * num(c, "seconds")) < 1e-6);
}

static void check_cpu(const json_t *r0, uint64_t bytes)
{
	const json_t *cpu = json_object_get(r0, "cpu");

	assert_true(json_is_object(cpu));
	check_cpu_side(json_object_get(cpu, "client"), bytes);
	check_cpu_side(json_object_get(cpu, "server"), bytes);
}

static void test_bw_uni(void **state)
{
	struct bench_params p;
	json_t *res, *r0;

	base(&p, BENCH_BW, 65536, 3000);
	p.check_data = true;
	res = run_pair(&p, NULL);
	r0 = json_array_get(json_object_get(res, "results"), 0);
	check_bw(json_object_get(r0, "bw"), 3000, 65536);
	assert_null(json_object_get(r0, "bw_reverse"));
	assert_int_equal((int)num(json_object_get(r0, "data_check"), "checked"), 3300);
	check_cpu(r0, 3300ull * 65536); /* warm-up included: the CPU covers it too */
	json_decref(res);
}

static void test_bw_bidir_qps(void **state)
{
	struct bench_params p;
	json_t *res, *r0;

	base(&p, BENCH_BW, 4096, 2000);
	p.qps = 4;
	p.depth = 16;
	p.bidir = true;
	p.check_data = true;
	res = run_pair(&p, NULL);
	r0 = json_array_get(json_object_get(res, "results"), 0);
	check_bw(json_object_get(r0, "bw"), 4 * 2000, 4096);
	check_bw(json_object_get(r0, "bw_reverse"), 4 * 2000, 4096);
	assert_true(num(r0, "bw_total_gbps") > num(json_object_get(r0, "bw"), "gbps"));
	assert_int_equal((int)num(json_object_get(r0, "data_check"), "checked"), 2 * 4 * 2200);
	check_cpu(r0, 2ull * 4 * 2200 * 4096); /* each side sent and received */
	json_decref(res);
}

/* Duration mode: the receiver learns the count from the sender; intervals are sampled. */
static void test_bw_duration(void **state)
{
	struct bench_params p;
	json_t *res, *r0, *bw;

	base(&p, BENCH_BW, 8192, 0);
	p.duration_s = 1;
	p.margin_ms = 100;
	p.interval_ms = 100;
	res = run_pair(&p, NULL);
	r0 = json_array_get(json_object_get(res, "results"), 0);
	bw = json_object_get(r0, "bw");
	assert_true(num(bw, "msgs") > 0);
	assert_true(num(bw, "seconds") > 0.7 && num(bw, "seconds") < 0.9); /* 1 s - 2 margins */
	assert_true(json_array_size(json_object_get(bw, "intervals")) >= 6);
	json_decref(res);
}

/* -a over a range: check the number of steps and that each is sized right (lat, few iters). */
static void test_lat_sweep(void **state)
{
	struct bench_params p;
	json_t *res, *results, *r;
	size_t i;

	base(&p, BENCH_LAT, 0, 20);
	p.sweep = true;
	p.warmup = 0;
	p.check_data = true;
	res = run_pair(&p, NULL);
	results = json_object_get(res, "results");
	assert_int_equal(json_array_size(results), 23); /* 2 B .. 8 MiB */
	json_array_foreach(results, i, r)
	{
		assert_int_equal((uint64_t)num(r, "size"), 2ull << i);
		check_lat(json_object_get(r, "latency"), 20);
	}
	json_decref(res);
}

/* -a stops at the largest message both sides' devices take: the server's "device" takes up to
 * 5000 B (what its transport's validate() would set), the client's everything; both run
 * 2 B .. 4 KiB and say so, instead of refusing the sweep. */
static void test_sweep_device_limit(void **state)
{
	struct bench_params sp, cp;
	struct bench_run_opts o = {0};
	char err[BENCH_ERR_LEN] = "";
	json_t *res = NULL, *results, *r;
	struct tsrv s;
	size_t i;

	base(&sp, BENCH_LAT, 0, 20);
	sp.sweep = true;
	sp.warmup = 0;
	cp = sp;
	sp.sweep_max = bench_sweep_clamp(BENCH_SIZE_MAX, 5000);
	assert_int_equal(sp.sweep_max, 4096);
	cp.port = srv_start(&s, &sp);
	o.err = err;
	o.errlen = sizeof(err);
	assert_int_equal(bench_run_client(&cp, "127.0.0.1", &o, &res), 0);
	tsrv_join(&s);
	assert_int_equal(s.r, 0);
	results = json_object_get(res, "results");
	assert_int_equal(json_array_size(results), 12); /* 2 B .. 4 KiB */
	json_array_foreach(results, i, r)
	{
		assert_int_equal((uint64_t)num(r, "size"), 2ull << i);
		check_lat(json_object_get(r, "latency"), 20);
	}
	assert_int_equal(num(json_object_get(res, "params"), "sweep_max"), 4096);
	assert_true(json_equal(results, json_object_get(s.res, "results")));
	json_decref(s.res);
	json_decref(res);
	/* The limit itself: powers of two, never over either bound. */
	assert_int_equal(bench_sweep_clamp(BENCH_SIZE_MAX, 1u << 31), BENCH_SIZE_MAX);
	assert_int_equal(bench_sweep_clamp(BENCH_SIZE_MAX, 4096), 4096);
	assert_int_equal(bench_sweep_clamp(1000, 1u << 20), 512);
	assert_int_equal(bench_sweep_clamp(BENCH_SIZE_MAX, 2), 2);
	assert_int_equal(bench_sweep_clamp(BENCH_SIZE_MAX, 1), 0);
}

static void corrupt_msg7(void *ud, uint32_t qp, uint64_t msg, void *slot, size_t len)
{
	if (msg == 7 && qp == 0)
		((uint8_t *)slot)[len / 2] ^= 0x40;
}

/* A corrupted message is detected by the receiver; both sides fail with a clear reason. */
static void test_data_mismatch(void **state)
{
	static const enum bench_kind kinds[] = {BENCH_LAT, BENCH_BW};
	struct bench_run_opts o = {.tx_hook = corrupt_msg7};
	char err[BENCH_ERR_LEN] = "";
	struct bench_params p;
	json_t *res = NULL;
	struct tsrv s;
	size_t k;

	for (k = 0; k < 2; k++) {
		base(&p, kinds[k], 1000, 100);
		p.check_data = true;
		p.port = srv_start(&s, &p);
		o.err = err;
		o.errlen = sizeof(err);
		assert_int_equal(bench_run_client(&p, "127.0.0.1", &o, &res), -RY_E_DATA_MISMATCH);
		tsrv_join(&s);
		assert_int_equal(s.r, -RY_E_DATA_MISMATCH);
		assert_null(s.res);
		assert_non_null(strstr(s.err, "message 7 of QP 0"));
		assert_non_null(strstr(s.err, "byte 500"));
		assert_non_null(strstr(err, "peer: data mismatch"));
	}
}

static void test_disagree(void **state)
{
	struct bench_params p, c;
	char err[BENCH_ERR_LEN] = "";
	struct bench_run_opts o = {.err = err, .errlen = sizeof(err)};
	json_t *res = NULL;
	struct tsrv s;

	base(&p, BENCH_BW, 65536, 100);
	base(&c, BENCH_LAT, 2, 100);
	c.port = srv_start(&s, &p);
	assert_int_equal(bench_run_client(&c, "127.0.0.1", &o, &res), -RY_E_PARAM_MISMATCH);
	tsrv_join(&s);
	assert_int_equal(s.r, -RY_E_PARAM_MISMATCH);
	assert_null(res);
	assert_non_null(strstr(err, "peer runs bw with size 65536, we run lat with size 2"));
	assert_non_null(strstr(s.err, "peer runs lat with size 2, we run bw with size 65536"));
}

/* A free port nobody listens on: bind, read the port, close. */
static uint16_t dead_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t sl = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	uint16_t port;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &sl), 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static void test_not_listening(void **state)
{
	char err[BENCH_ERR_LEN] = "";
	struct bench_run_opts o = {.err = err, .errlen = sizeof(err)};
	struct bench_params p;
	json_t *res = NULL;
	int64_t t0 = util_now_mono_ms();

	base(&p, BENCH_LAT, 2, 10);
	p.port = dead_port();
	p.connect_timeout_ms = 300;
	assert_int_equal(bench_run_client(&p, "127.0.0.1", &o, &res), -ECONNREFUSED);
	assert_null(res);
	assert_non_null(strstr(err, "is not listening"));
	/* Bounded: retried for the connect timeout, not forever (generous upper bound). */
	assert_true(util_now_mono_ms() - t0 < 10000);
}

/* A fake client that negotiates, opens its data connection, then vanishes mid-test. */
static int fake_client(uint16_t port, const struct bench_params *p, size_t send_bytes)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	uint8_t hello[8 + BENCH_PARAMS_WIRE + 8], reply[8 + BENCH_PARAMS_WIRE], dh[16] = {0};
	uint8_t junk[4096] = {0};
	const uint8_t cookie[8] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88}; /* BE */
	int c, d;
	size_t left;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c = socket(AF_INET, SOCK_STREAM, 0);
	d = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	/* HELLO: u32 type 1, u32 length, packed params, u64 cookie. */
	memset(hello, 0, sizeof(hello));
	hello[3] = 1;
	hello[7] = BENCH_PARAMS_WIRE + 8;
	bench_params_pack(p, hello + 8);
	memcpy(hello + 8 + BENCH_PARAMS_WIRE, cookie, 8);
	assert_int_equal(bench_ctrl_send(c, hello, sizeof(hello), 5000), 0);
	assert_int_equal(bench_ctrl_recv(c, reply, sizeof(reply), 5000), 0);
	assert_int_equal(reply[3], 2); /* ACCEPT */
	/* Data connection: "RYDT", qp 0, cookie. */
	assert_int_equal(connect(d, (struct sockaddr *)&a, sizeof(a)), 0);
	memcpy(dh, "RYDT", 4);
	memcpy(dh + 8, cookie, 8);
	assert_int_equal(bench_ctrl_send(d, dh, sizeof(dh), 5000), 0);
	for (left = send_bytes; left > 0;) {
		size_t n = left < sizeof(junk) ? left : sizeof(junk);

		assert_int_equal(bench_ctrl_send(d, junk, n, 5000), 0);
		left -= n;
	}
	close(d);
	close(c);
	return 0;
}

/* A peer whose ERROR carries a code out of range (here 0x80000000, which negated overflows an
 * int: found by tests/fuzz/fuzz_bench_proto) makes the run fail with EIO and its text. */
static void test_peer_error_code(void **state)
{
	static const uint8_t error[] = {0,    0, 0, 4, 0,   0,	 0,   8, /* ERROR, 8 bytes */
					0x80, 0, 0, 0, 'b', 'a', 'd', '!'};
	struct sockaddr_in a = {.sin_family = AF_INET};
	struct bench_params p;
	struct tsrv s;
	int c;

	(void)state;
	base(&p, BENCH_LAT, 2, 10);
	a.sin_port = htons(srv_start(&s, &p));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(bench_ctrl_send(c, error, sizeof(error), 5000), 0);
	tsrv_join(&s);
	close(c);
	assert_int_equal(s.r, -EIO);
	assert_null(s.res);
	assert_string_equal(s.err, "peer: bad!");
}

static void test_peer_dies(void **state)
{
	static const enum bench_kind kinds[] = {BENCH_LAT, BENCH_BW};
	struct bench_params p, v;
	struct tsrv s;
	char err[BENCH_ERR_LEN];
	size_t k;

	for (k = 0; k < 2; k++) {
		base(&p, kinds[k], 1024, 100000);
		p.io_timeout_ms = 5000;
		v = p;
		assert_int_equal(bench_params_validate(&v, err, sizeof(err)), 0);
		srv_start(&s, &p);
		/* lat: one ping and a half, then gone; bw: 10.5 messages, then gone. */
		assert_int_equal(fake_client(s.port, &v, kinds[k] == BENCH_LAT ? 1536 : 10752), 0);
		tsrv_join(&s);
		assert_true(s.r == -ECONNRESET || s.r == -EPIPE);
		assert_null(s.res);
		assert_true(s.err[0] != '\0');
	}
}

/* A fake server that negotiates, passes the first barrier, takes a little data and dies. */
struct fake_srv {
	int lfd;
	struct bench_params p;
};

static void *fake_server_main(void *arg)
{
	struct fake_srv *f = arg;
	uint8_t hello[8 + BENCH_PARAMS_WIRE + 8], reply[8 + BENCH_PARAMS_WIRE], dh[16];
	uint8_t ready[12] = {0, 0, 0, 5, 0, 0, 0, 4, 0, 0, 0, 0}, junk[4096];
	int c, d;

	c = accept(f->lfd, NULL, NULL);
	if (c < 0 || bench_ctrl_recv(c, hello, sizeof(hello), 5000) < 0)
		return NULL;
	memset(reply, 0, 8);
	reply[3] = 2; /* ACCEPT */
	reply[7] = BENCH_PARAMS_WIRE;
	bench_params_pack(&f->p, reply + 8);
	d = -1;
	if (bench_ctrl_send(c, reply, sizeof(reply), 5000) == 0 &&
	    (d = accept(f->lfd, NULL, NULL)) >= 0 &&
	    bench_ctrl_recv(d, dh, sizeof(dh), 5000) == 0 &&
	    bench_ctrl_recv(c, junk, 12, 5000) == 0 && /* the client's READY */
	    bench_ctrl_send(c, ready, sizeof(ready), 5000) == 0)
		(void)!bench_ctrl_recv(d, junk, sizeof(junk), 5000);
	if (d >= 0)
		close(d);
	close(c);
	return NULL;
}

static void test_server_dies(void **state)
{
	static const enum bench_kind kinds[] = {BENCH_LAT, BENCH_BW};
	struct sockaddr_in a = {.sin_family = AF_INET};
	char err[BENCH_ERR_LEN];
	struct bench_run_opts o = {.err = err, .errlen = sizeof(err)};
	socklen_t sl = sizeof(a);
	struct fake_srv f;
	json_t *res = NULL;
	pthread_t th;
	size_t k;
	int r;

	for (k = 0; k < 2; k++) {
		base(&f.p, kinds[k], 2048, 100000);
		f.p.io_timeout_ms = 5000;
		assert_int_equal(bench_params_validate(&f.p, err, sizeof(err)), 0);
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		a.sin_port = 0;
		f.lfd = socket(AF_INET, SOCK_STREAM, 0);
		assert_int_equal(bind(f.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
		assert_int_equal(listen(f.lfd, 8), 0);
		assert_int_equal(getsockname(f.lfd, (struct sockaddr *)&a, &sl), 0);
		assert_int_equal(pthread_create(&th, NULL, fake_server_main, &f), 0);
		f.p.port = ntohs(a.sin_port);
		err[0] = '\0';
		r = bench_run_client(&f.p, "127.0.0.1", &o, &res);
		assert_int_equal(pthread_join(th, NULL), 0);
		close(f.lfd);
		assert_true(r == -ECONNRESET || r == -EPIPE);
		assert_null(res);
		assert_true(err[0] != '\0');
	}
}

/* A clock that goes back mid-run is an error, never a negative or infinite figure. */
struct bad_clock {
	uint64_t t;
	int calls;
};

static int bad_now(void *ud, uint64_t *ret_ns)
{
	struct bad_clock *c = ud;

	c->calls++;
	c->t = c->calls == 200 ? c->t - 5000 : c->t + 1000;
	*ret_ns = c->t;
	return 0;
}

static int stuck_now(void *ud, uint64_t *ret_ns)
{
	*ret_ns = 42;
	return 0;
}

static void test_bad_clock(void **state)
{
	struct bad_clock bc = {.t = 1000000};
	struct bench_clock back = {.now = bad_now, .ud = &bc}, stuck = {.now = stuck_now};
	char err[BENCH_ERR_LEN] = "";
	struct bench_run_opts o = {.err = err, .errlen = sizeof(err)};
	struct bench_params p;
	json_t *res = NULL;
	struct tsrv s;

	base(&p, BENCH_LAT, 2, 1000);
	o.clock = &back;
	p.port = srv_start(&s, &p);
	assert_int_equal(bench_run_client(&p, "127.0.0.1", &o, &res), -RY_E_CLOCK);
	tsrv_join(&s);
	assert_non_null(strstr(err, "clock went back"));
	assert_int_equal(s.r, -RY_E_CLOCK);

	o.clock = &stuck;
	err[0] = '\0';
	p.port = srv_start(&s, &p);
	assert_int_equal(bench_run_client(&p, "127.0.0.1", &o, &res), -RY_E_CLOCK);
	tsrv_join(&s);
	assert_non_null(strstr(err, "did not advance"));
	assert_null(res);
}

static void test_cancel_server(void **state)
{
	atomic_bool cancel = true;
	struct bench_params p;
	struct tsrv s;

	/* A server canceled while waiting for its client returns promptly. */
	base(&p, BENCH_LAT, 2, 10);
	memset(&s, 0, sizeof(s));
	s.p = p;
	s.p.port = 0;
	s.o.cancel = &cancel;
	s.o.err = s.err;
	s.o.errlen = sizeof(s.err);
	assert_int_equal(bench_run_server(&s.p, &s.o, &s.res), -ECANCELED);
	assert_null(s.res);
}

static void test_error_result(void **state)
{
	struct bench_params p;
	json_t *j;

	bench_params_init(&p);
	j = bench_result_error(&p, BENCH_CLIENT, -ETIMEDOUT, "no answer");
	assert_non_null(j);
	assert_true(json_is_false(json_object_get(j, "ok")));
	assert_int_equal((int)num(json_object_get(j, "error"), "code"), -ETIMEDOUT);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(j, "error"), "message")),
		"no answer");
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lat),	      cmocka_unit_test(test_bw_uni),
		cmocka_unit_test(test_bw_bidir_qps),  cmocka_unit_test(test_bw_duration),
		cmocka_unit_test(test_lat_sweep),     cmocka_unit_test(test_sweep_device_limit),
		cmocka_unit_test(test_data_mismatch), cmocka_unit_test(test_disagree),
		cmocka_unit_test(test_not_listening), cmocka_unit_test(test_peer_error_code),
		cmocka_unit_test(test_peer_dies),     cmocka_unit_test(test_server_dies),
		cmocka_unit_test(test_bad_clock),     cmocka_unit_test(test_cancel_server),
		cmocka_unit_test(test_error_result),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
