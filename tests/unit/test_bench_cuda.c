/* The cuda memory backend, the GPUDirect registration choice and the GPU copy bandwidth, on the
 * test double of libcuda.so.1 (tests/gpu/libcuda_double.c, loaded through the
 * RAILYARD_SEAM_LIBCUDA seam by CTest): the engine over tcp on 127.0.0.1 with --mem cuda and
 * --check-data (staged through pinned memory, labelled so), failures of the driver reported,
 * dma-buf vs nvidia-peermem, the bandwidth arithmetic (the double's virtual clock makes the
 * figures exact). Run as "test_bench_cuda nolib" (the seam names no library) and "nogpu" (the
 * double has no GPU) for the refusals. Counts and validity only, never speed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "nodeagent/bench/bench.h"
#include "nodeagent/bench/cli.h"
#include "nodeagent/bench/cuda.h"
#include "nodeagent/bench/gpubw.h"
#include "tests/unit/test_bench_srv.h"

#include "common/util/error.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the double's knobs ------------------------------------------------------------------ */

static int knob(const char *name, const char *value)
{
	const char *lib = getenv(BENCH_CUDA_SEAM_ENV);
	void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
	int (*set)(const char *, const char *) = NULL;
	int r;

	assert_non_null(h); /* loaded by the backend already */
	*(void **)&set = dlsym(h, "railyard_cuda_double_set");
	assert_non_null(set);
	r = set(name, value);
	dlclose(h); /* drops only the reference NOLOAD took */
	return r;
}

static int setup_double(void **state)
{
	const struct bench_cuda *cu;
	char err[BENCH_ERR_LEN];

	(void)state;
	if (bench_cuda_get(&cu, err, sizeof(err)) < 0) {
		print_error("the double did not load: %s\n", err);
		return -1;
	}
	return 0;
}

static int reset_knobs(void **state)
{
	(void)state;
	assert_int_equal(knob("DMABUF", "1"), 0);
	assert_int_equal(knob("RATES", NULL), 0);
	assert_int_equal(knob("FAIL", NULL), 0);
	return 0;
}

/* ---- a run over tcp on 127.0.0.1 --------------------------------------------------------- */

/* Server with sp, client with cp (both port 0 / the server's); the client's result, r of both. */
static json_t *run(const struct bench_params *sp, const struct bench_params *cp, int *ret_cr,
		   int *ret_sr, char *cerr, char *serr)
{
	struct bench_run_opts o = {.err = cerr, .errlen = BENCH_ERR_LEN};
	struct bench_params c = *cp;
	json_t *res = NULL;
	struct tsrv s;

	c.port = tsrv_start(&s, sp);
	*ret_cr = bench_run_client(&c, "127.0.0.1", &o, &res);
	tsrv_join(&s);
	*ret_sr = s.r;
	snprintf(serr, BENCH_ERR_LEN, "%s", s.err);
	json_decref(s.res);
	return res;
}

static void base(struct bench_params *p, enum bench_kind kind, uint64_t size, uint64_t iters)
{
	bench_params_init(p);
	p->kind = kind;
	p->size = size;
	p->iters = iters;
	p->check_data = true;
	p->connect_timeout_ms = 10000;
	p->io_timeout_ms = 10000;
}

static const json_t *env_of(const json_t *res, const char *side)
{
	return json_object_get(json_object_get(res, "environment"), side);
}

/* Every step checked data, and the checks counted messages. */
static void checked(const json_t *res, size_t steps)
{
	const json_t *r;
	size_t i;

	assert_int_equal(json_array_size(json_object_get(res, "results")), steps);
	json_array_foreach(json_object_get(res, "results"), i, r)
	{
		const json_t *dc = json_object_get(r, "data_check");

		assert_true(json_is_true(json_object_get(dc, "enabled")));
		assert_true(json_integer_value(json_object_get(dc, "checked")) > 0);
	}
}

/* --mem cuda over tcp: both sides in GPU memory (the double's), staged, every message checked. */
static void test_tcp_lat_cuda(void **state)
{
	struct bench_params p;
	char ce[BENCH_ERR_LEN] = "", se[BENCH_ERR_LEN] = "";
	const json_t *ec, *gpu;
	json_t *res;
	int cr, sr;

	(void)state;
	base(&p, BENCH_LAT, 4096, 200);
	snprintf(p.mem, sizeof(p.mem), "cuda");
	res = run(&p, &p, &cr, &sr, ce, se);
	if (cr || sr)
		fail_msg("client %d (%s), server %d (%s)", cr, ce, sr, se);
	checked(res, 1);
	ec = env_of(res, "client");
	assert_string_equal(json_string_value(json_object_get(ec, "mem")), "cuda");
	assert_string_equal(json_string_value(json_object_get(ec, "mem_path")), "staged");
	gpu = json_object_get(ec, "gpu");
	assert_int_equal(json_integer_value(json_object_get(gpu, "index")), 0);
	assert_string_equal(json_string_value(json_object_get(gpu, "bus_id")), "0000:18:00.0");
	assert_non_null(strstr(json_string_value(json_object_get(gpu, "name")), "double"));
	assert_string_equal(json_string_value(json_object_get(env_of(res, "server"), "mem_path")),
			    "staged");
	json_decref(res);
}

/* bw, bidirectional, two connections, GPU memory on one side only (the other's is host):
 * memory is local, so both sides agree; GPU 1 by its PCI bus id; a sweep up to 64 KiB. */
static void test_tcp_bw_mixed(void **state)
{
	struct bench_params sp, cp;
	char ce[BENCH_ERR_LEN] = "", se[BENCH_ERR_LEN] = "";
	json_t *res;
	int cr, sr;

	(void)state;
	base(&sp, BENCH_BW, 0, 300);
	sp.sweep = true;
	sp.sweep_max = 64 << 10;
	sp.qps = 2;
	sp.bidir = true;
	cp = sp;
	snprintf(cp.mem, sizeof(cp.mem), "cuda:0000:28:00.0");
	res = run(&sp, &cp, &cr, &sr, ce, se);
	if (cr || sr)
		fail_msg("client %d (%s), server %d (%s)", cr, ce, sr, se);
	checked(res, 16); /* 2 B .. 64 KiB */
	assert_int_equal(json_integer_value(json_object_get(
				 json_object_get(env_of(res, "client"), "gpu"), "index")),
			 1);
	assert_null(json_object_get(env_of(res, "server"), "mem_path"));
	json_decref(res);
}

/* A copy to the GPU that fails mid-run fails the run on both sides with the driver's words. */
static void test_tcp_copy_fails(void **state)
{
	struct bench_params p, sp;
	char ce[BENCH_ERR_LEN] = "", se[BENCH_ERR_LEN] = "";
	json_t *res;
	int cr, sr;

	(void)state;
	base(&p, BENCH_BW, 1024, 100);
	sp = p;
	snprintf(sp.mem, sizeof(sp.mem), "cuda");
	/* The server receives into GPU memory: its staging copies (HtoD) fail. */
	assert_int_equal(knob("FAIL", "cuMemcpyHtoD_v2=2"), 0);
	res = run(&sp, &p, &cr, &sr, ce, se);
	assert_int_not_equal(sr, 0);
	assert_int_not_equal(cr, 0);
	assert_non_null(strstr(se, "cuda"));
	assert_non_null(strstr(ce, "peer"));
	json_decref(res);
}

/* A fresh argv for each parse: getopt permutes the one it is given. */
#define PARSE(cli, err, ...)                                                                       \
	({                                                                                         \
		char *argv_[] = {"railyard-bench", __VA_ARGS__, NULL};                             \
		bench_cli_parse((int)(sizeof(argv_) / sizeof(argv_[0])) - 1, argv_, (cli), (err),  \
				BENCH_ERR_LEN);                                                    \
	})

/* CLI: --mem cuda:N out of range, a malformed GPU, --gpudirect without GPU memory. */
static void test_cli_refusals(void **state)
{
	char err[BENCH_ERR_LEN] = "";
	struct bench_cli cli;

	(void)state;
	assert_int_equal(PARSE(&cli, err, "lat", "--mem", "cuda:7"), -ENODEV);
	assert_non_null(strstr(err, "no GPU 7: this host has 2"));
	assert_int_equal(PARSE(&cli, err, "lat", "--mem", "cuda:banana"), -RY_E_INVALID);
	assert_int_equal(
		PARSE(&cli, err, "lat", "--mem", "cuda:GPU-d0d1d2d3-d4d5-d6d7-d8d9-dadbdcdddedf"),
		0);
	assert_int_equal(PARSE(&cli, err, "lat", "--gpudirect", "dmabuf"), -RY_E_INVALID);
	assert_non_null(strstr(err, "is for GPU memory"));
	assert_int_equal(PARSE(&cli, err, "lat", "--gpudirect", "magic", "--mem", "cuda"),
			 -RY_E_INVALID);
	assert_int_equal(PARSE(&cli, err, "lat", "--use_cuda", "1", "--use_cuda_dmabuf"), 0);
	assert_string_equal(cli.params.mem, "cuda:1");
	assert_int_equal(cli.params.gpudirect, BENCH_GD_DMABUF);
}

/* ---- dma-buf or nvidia-peermem --------------------------------------------------------------- */

struct fake_reg {
	int dmabuf_r, addr_r; /* what the "verbs provider" answers */
	int dmabuf_calls, addr_calls;
	uint64_t offset, iova;
	bool fd_was_open;
	int fd;
};

static int fake_dmabuf(void *ud, int fd, uint64_t offset, size_t len, uint64_t iova)
{
	struct fake_reg *f = ud;
	struct stat st;

	f->dmabuf_calls++;
	f->fd = fd;
	f->fd_was_open = fstat(fd, &st) == 0 && (uint64_t)st.st_size >= offset + len;
	f->offset = offset;
	f->iova = iova;
	return f->dmabuf_r;
}

static int fake_addr(void *ud, void *addr, size_t len)
{
	struct fake_reg *f = ud;

	f->addr_calls++;
	f->iova = (uint64_t)(uintptr_t)addr;
	return f->addr_r;
}

struct gd_case {
	struct bench_mem mem;
	void *buf;
	size_t len;
};

static void gd_open(struct gd_case *c, const char *spec, size_t len)
{
	char err[BENCH_ERR_LEN] = "";

	memset(c, 0, sizeof(*c));
	if (bench_mem_open(spec, &c->mem, err) < 0)
		fail_msg("%s: %s", spec, err);
	c->len = len;
	assert_int_equal(c->mem.ops->alloc(c->mem.st, len, &c->buf), 0);
}

static void gd_close(struct gd_case *c)
{
	c->mem.ops->free(c->mem.st, c->buf, c->len);
	bench_mem_close(&c->mem);
}

static int gd(struct gd_case *c, enum bench_gpudirect want, struct fake_reg *f,
	      enum bench_gpudirect *used, char *note, char *err)
{
	const struct bench_gd_reg reg = {fake_dmabuf, fake_addr, f};

	f->fd = -1;
	return bench_gpudirect_register(want, &c->mem, c->buf, c->len, &reg, used, note,
					BENCH_ERR_LEN, err);
}

static void test_gpudirect_choice(void **state)
{
	char note[BENCH_ERR_LEN], err[BENCH_ERR_LEN];
	enum bench_gpudirect used = BENCH_GD_AUTO;
	struct fake_reg f;
	struct gd_case c;

	(void)state;
	gd_open(&c, "cuda", 100000);
	/* auto, all works: dma-buf, on an open descriptor covering the buffer, closed after. */
	memset(&f, 0, sizeof(f));
	assert_int_equal(gd(&c, BENCH_GD_AUTO, &f, &used, note, err), 0);
	assert_int_equal(used, BENCH_GD_DMABUF);
	assert_int_equal(f.dmabuf_calls, 1);
	assert_int_equal(f.addr_calls, 0);
	assert_true(f.fd_was_open);
	assert_int_equal(f.iova, (uint64_t)(uintptr_t)c.buf);
	assert_int_equal(fcntl(f.fd, F_GETFD), -1); /* closed once registered */
	assert_string_equal(note, "");
	/* auto, the provider refuses dma-buf (rxe does): peermem, and the note says why. */
	memset(&f, 0, sizeof(f));
	f.dmabuf_r = -EOPNOTSUPP;
	assert_int_equal(gd(&c, BENCH_GD_AUTO, &f, &used, note, err), 0);
	assert_int_equal(used, BENCH_GD_PEERMEM);
	assert_int_equal(f.addr_calls, 1);
	assert_non_null(strstr(note, "ibv_reg_dmabuf_mr"));
	/* forced dma-buf: the provider's refusal is the error; peermem is not tried. */
	memset(&f, 0, sizeof(f));
	f.dmabuf_r = -EOPNOTSUPP;
	assert_int_equal(gd(&c, BENCH_GD_DMABUF, &f, &used, note, err), -EOPNOTSUPP);
	assert_int_equal(f.addr_calls, 0);
	assert_non_null(strstr(err, "dma-buf registration"));
	/* forced peermem: dma-buf is never exported. */
	memset(&f, 0, sizeof(f));
	assert_int_equal(gd(&c, BENCH_GD_PEERMEM, &f, &used, note, err), 0);
	assert_int_equal(used, BENCH_GD_PEERMEM);
	assert_int_equal(f.dmabuf_calls, 0);
	/* the GPU cannot export (the attribute says so): auto falls back without asking the
	 * provider; both failing is one error naming both. */
	gd_close(&c);
	assert_int_equal(knob("DMABUF", "0"), 0);
	gd_open(&c, "cuda:1", 4096);
	memset(&f, 0, sizeof(f));
	assert_int_equal(gd(&c, BENCH_GD_AUTO, &f, &used, note, err), 0);
	assert_int_equal(f.dmabuf_calls, 0);
	assert_non_null(strstr(note, "does not support dma-buf"));
	memset(&f, 0, sizeof(f));
	f.addr_r = -EFAULT;
	assert_int_equal(gd(&c, BENCH_GD_AUTO, &f, &used, note, err), -EFAULT);
	assert_non_null(strstr(err, "does not support dma-buf"));
	assert_non_null(strstr(err, "nvidia_peermem"));
	gd_close(&c);
	/* the driver's export fails: auto falls back too. */
	assert_int_equal(knob("DMABUF", "1"), 0);
	assert_int_equal(knob("FAIL", "cuMemGetHandleForAddressRange=801"), 0);
	gd_open(&c, "cuda", 4096);
	memset(&f, 0, sizeof(f));
	assert_int_equal(gd(&c, BENCH_GD_AUTO, &f, &used, note, err), 0);
	assert_int_equal(used, BENCH_GD_PEERMEM);
	assert_non_null(strstr(note, "CUDA_ERROR_NOT_SUPPORTED"));
	gd_close(&c);
	/* host memory has no dma-buf. */
	gd_open(&c, "host", 4096);
	memset(&f, 0, sizeof(f));
	assert_int_equal(gd(&c, BENCH_GD_DMABUF, &f, &used, note, err), -ENOTSUP);
	gd_close(&c);
}

/* ---- copy bandwidth -------------------------------------------------------------------------- */

static void test_gpubw_arithmetic(void **state)
{
	double v[] = {3, 1, 2}, w[] = {4, 1, 3, 2};

	(void)state;
	assert_true(fabs(gpubw_gbs(268435456, 268435456 / 55.5e6) - 55.5) < 1e-9);
	assert_true(isnan(gpubw_gbs(100, 0)));
	assert_true(isnan(gpubw_gbs(100, -1)));
	assert_true(isnan(gpubw_gbs(100, NAN)));
	assert_true(isnan(gpubw_gbs(100, INFINITY)));
	assert_true(gpubw_median(v, 3) == 2);
	assert_true(gpubw_median(w, 4) == 2.5);
	assert_true(isnan(gpubw_median(v, 0)));
}

/* The double's virtual clock: each copy takes size / rate, so the medians are exact. */
static void test_gpubw_measure(void **state)
{
	struct gpubw_result r;
	char err[BENCH_ERR_LEN] = "";

	(void)state;
	assert_int_equal(knob("RATES", "h2d=55.5,d2h=40:60:55.3,d2d=1959"), 0);
	assert_int_equal(gpubw_measure(0, 1 << 20, 3, NULL, &r, err, sizeof(err)), 0);
	assert_true(fabs(r.dir[GPUBW_H2D].median_gbs - 55.5) < 1e-3);
	/* d2h: warm-up 40 (not counted), then 60, 55.3, 40: median 55.3, min 40, max 60 */
	assert_true(fabs(r.dir[GPUBW_D2H].median_gbs - 55.3) < 1e-3);
	assert_true(fabs(r.dir[GPUBW_D2H].min_gbs - 40) < 1e-3);
	assert_true(fabs(r.dir[GPUBW_D2H].max_gbs - 60) < 1e-3);
	assert_true(fabs(r.dir[GPUBW_D2D].median_gbs - 1959) < 0.5);
	assert_int_equal(r.dir[GPUBW_D2D].samples, 3);
	/* A copy the events time as 0 ms is a failure, not an infinite bandwidth. */
	assert_int_equal(knob("RATES", "h2d=0"), 0);
	assert_int_equal(gpubw_measure(0, 1 << 20, 3, NULL, &r, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "measured 0 ms"));
	/* Driver failures name the call; bounds are checked. */
	assert_int_equal(knob("RATES", NULL), 0);
	assert_int_equal(knob("FAIL", "cuMemAlloc_v2=2"), 0);
	assert_int_equal(gpubw_measure(1, 1 << 20, 2, NULL, &r, err, sizeof(err)), -ENOMEM);
	assert_non_null(strstr(err, "CUDA_ERROR_OUT_OF_MEMORY"));
	assert_int_equal(gpubw_measure(0, 1024, 2, NULL, &r, err, sizeof(err)), -EINVAL);
	assert_int_equal(gpubw_measure(7, 1 << 20, 2, NULL, &r, err, sizeof(err)), -EIO);
}

/* ---- without a GPU --------------------------------------------------------------------------- */

static void refused(const char *want)
{
	char err[BENCH_ERR_LEN] = "";
	struct bench_cli cli;

	assert_true(PARSE(&cli, err, "lat", "--mem", "cuda") < 0);
	assert_non_null(strstr(err, "cuda memory: "));
	if (!strstr(err, want))
		fail_msg("'%s' does not say '%s'", err, want);
	assert_int_equal(PARSE(&cli, err, "lat", "--mem", "host"), 0);
}

static void test_nolib(void **state)
{
	(void)state;
	refused("cannot load");
}

static void test_nogpu(void **state)
{
	(void)state;
	refused("CUDA_ERROR_NO_DEVICE");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest with_double[] = {
		cmocka_unit_test_teardown(test_tcp_lat_cuda, reset_knobs),
		cmocka_unit_test_teardown(test_tcp_bw_mixed, reset_knobs),
		cmocka_unit_test_teardown(test_tcp_copy_fails, reset_knobs),
		cmocka_unit_test_teardown(test_cli_refusals, reset_knobs),
		cmocka_unit_test_teardown(test_gpudirect_choice, reset_knobs),
		cmocka_unit_test(test_gpubw_arithmetic),
		cmocka_unit_test_teardown(test_gpubw_measure, reset_knobs),
	};
	const struct CMUnitTest nolib[] = {cmocka_unit_test(test_nolib)};
	const struct CMUnitTest nogpu[] = {cmocka_unit_test(test_nogpu)};

	if (argc > 1 && strcmp(argv[1], "nolib") == 0)
		return cmocka_run_group_tests(nolib, NULL, NULL);
	if (argc > 1 && strcmp(argv[1], "nogpu") == 0)
		return cmocka_run_group_tests(nogpu, NULL, NULL);
	setenv("RAILYARD_CUDA_DOUBLE_GPUS", "2", 0);
	return cmocka_run_group_tests(with_double, setup_double, NULL);
}
