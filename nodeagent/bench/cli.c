/* railyard-bench's command line (perftest's flags where perftest has them) and its output: a
 * perftest-like table, RY-METRIC lines for scripts, or the JSON document. */
#include "nodeagent/bench/cli.h"

#include "common/util/error.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum {
	OPT_TRANSPORT = 256,
	OPT_OP,
	OPT_BIDIR,
	OPT_RDMA_CM,
	OPT_CHECK,
	OPT_JSON,
	OPT_METRICS,
	OPT_WARMUP,
	OPT_MARGIN,
	OPT_INTERVAL,
	OPT_TIMEOUT,
	OPT_MEM,
	OPT_TCLASS,
	OPT_SL,
	OPT_GPUDIRECT,
	OPT_USE_CUDA,
	OPT_USE_CUDA_DMABUF,
};

static const struct option options[] = {
	{"transport", required_argument, NULL, OPT_TRANSPORT},
	{"ib-dev", required_argument, NULL, 'd'},
	{"gid-index", required_argument, NULL, 'x'},
	{"ib-port", required_argument, NULL, 'i'},
	{"op", required_argument, NULL, OPT_OP},
	{"size", required_argument, NULL, 's'},
	{"all", no_argument, NULL, 'a'},
	{"iters", required_argument, NULL, 'n'},
	{"duration", required_argument, NULL, 'D'},
	{"qp", required_argument, NULL, 'q'},
	{"tx-depth", required_argument, NULL, 't'},
	{"inline_size", required_argument, NULL, 'I'},
	{"bidir", no_argument, NULL, OPT_BIDIR},
	{"bidirectional", no_argument, NULL, OPT_BIDIR},
	{"port", required_argument, NULL, 'p'},
	{"rdma-cm", no_argument, NULL, OPT_RDMA_CM},
	{"check-data", no_argument, NULL, OPT_CHECK},
	{"json", no_argument, NULL, OPT_JSON},
	{"metrics", no_argument, NULL, OPT_METRICS},
	{"warmup", required_argument, NULL, OPT_WARMUP},
	{"margin", required_argument, NULL, OPT_MARGIN},
	{"interval", required_argument, NULL, OPT_INTERVAL},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"mem", required_argument, NULL, OPT_MEM},
	{"tclass", required_argument, NULL, OPT_TCLASS},
	{"sl", required_argument, NULL, OPT_SL},
	{"gpudirect", required_argument, NULL, OPT_GPUDIRECT},
	{"use_cuda", required_argument, NULL, OPT_USE_CUDA},	     /* perftest's */
	{"use_cuda_dmabuf", no_argument, NULL, OPT_USE_CUDA_DMABUF}, /* perftest's */
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

void bench_cli_usage(FILE *f)
{
	fputs("usage: railyard-bench lat|bw [--transport verbs|tcp] [-d DEV] [-i PORT] [-x GID]\n"
	      "                      [--op write|send|read] [-s SIZE | -a] [-n ITERS | -D SECS] "
	      "[-q QPS]\n"
	      "                      [--bidir] [-p PORT] [--rdma-cm] [--check-data] [--json] "
	      "[PEER]\n"
	      "Without PEER: server (waits for one client); with PEER: client.\n"
	      "  --transport T   verbs or tcp (default tcp)\n"
	      "  -d, --ib-dev    RDMA device (verbs)          -x, --gid-index  GID index (verbs)\n"
	      "  -i, --ib-port   HCA port (verbs; default 1; not with --rdma-cm)\n"
	      "  --op OP         send, write or read (default: write for verbs, send for tcp)\n"
	      "  -s, --size      message bytes (K/M suffixes; default 2)\n"
	      "  -a, --all       every size from 2 B to 8 MiB (or the device's largest message)\n"
	      "  -n, --iters     iterations (default 1000)  -D, --duration  seconds instead\n"
	      "  -q, --qp        QPs / connections (bw)     -t, --tx-depth  window (bw, 128)\n"
	      "  --bidir         both directions (bw)       -p, --port      port (18515)\n"
	      "  --check-data    fill with a pattern and verify at the receiver\n"
	      "  --warmup N      iterations before the measured ones (default min(n/10, 1000))\n"
	      "  --margin MS     -D: excluded at both ends   --interval MS  bw samples (1000)\n"
	      "  --timeout MS    connect / wait for the client (server default: 1 hour)\n"
	      "  -I N, --tclass N, --sl N   verbs inline size, traffic class, service level\n"
	      "  --json          one JSON document       --metrics  RY-METRIC lines for scripts\n"
	      "  --mem M         host (default) or cuda[:GPU]: GPU memory (GPU: index, PCI bus id\n"
	      "                  or GPU- UUID; perftest's --use_cuda N); tcp stages it through\n"
	      "                  pinned host memory\n"
	      "  --gpudirect G   verbs with cuda: auto (dma-buf, else nvidia-peermem), dmabuf\n"
	      "                  (perftest's --use_cuda_dmabuf) or peermem\n",
	      f);
}

__attribute__((format(printf, 3, 4))) static int usage_err(char *err, size_t errlen,
							   const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -RY_E_INVALID;
}

/* Unsigned number with an optional K/M/G suffix (powers of 1024); no sign, no junk. */
static int parse_u64(const char *s, uint64_t max, uint64_t *ret)
{
	unsigned long long v;
	uint64_t mul = 1;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -RY_E_INVALID;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -RY_E_INVALID;
	if (*end == 'K' || *end == 'k')
		mul = 1024, end++;
	else if (*end == 'M' || *end == 'm')
		mul = 1024 * 1024, end++;
	else if (*end == 'G' || *end == 'g')
		mul = 1024 * 1024 * 1024, end++;
	if (*end)
		return -RY_E_INVALID;
	if (v > max / mul)
		return -ERANGE;
	*ret = v * mul;
	return 0;
}

static int num(const char *opt, const char *s, uint64_t max, uint64_t *ret, char *err,
	       size_t errlen)
{
	int r = parse_u64(s, max, ret);

	if (r == -ERANGE) {
		if (err && errlen)
			snprintf(err, errlen, "%s %s is over %" PRIu64, opt, s, max);
		return r;
	}
	if (r < 0)
		return usage_err(err, errlen, "%s wants a number, not '%s'", opt, s);
	return 0;
}

int bench_cli_parse(int argc, char **argv, struct bench_cli *ret_cli, char *err, size_t errlen)
{
	struct bench_cli cli = {0};
	struct bench_params *p = &cli.params;
	bool have_s = false, have_n = false;
	uint64_t v;
	int c, r;

	bench_params_init(p);
	p->duration_s = 0;
	optind = 0; /* GNU: full re-initialisation, so that the parser can run again */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:x:i:s:an:D:q:t:I:p:h", options, NULL)) != -1) {
		r = 0;
		switch (c) {
		case OPT_TRANSPORT:
			if (strlen(optarg) >= sizeof(p->transport))
				return usage_err(err, errlen, "unknown transport '%s'", optarg);
			snprintf(p->transport, sizeof(p->transport), "%s", optarg);
			break;
		case 'd':
			if (strlen(optarg) >= sizeof(p->device))
				return usage_err(err, errlen, "device name too long");
			snprintf(p->device, sizeof(p->device), "%s", optarg);
			break;
		case 'x':
			r = num("-x", optarg, INT32_MAX, &v, err, errlen);
			p->gid_index = (int32_t)v;
			break;
		case 'i':
			r = num("-i", optarg, 255, &v, err, errlen);
			if (r == 0 && v == 0)
				return usage_err(err, errlen,
						 "-i wants a port from 1 to 255, not 0");
			p->ib_port = (uint8_t)v;
			break;
		case OPT_OP:
			if (bench_op_parse(optarg, &p->op) < 0)
				return usage_err(err, errlen,
						 "--op is write, send or read, not '%s'", optarg);
			break;
		case 's':
			r = num("-s", optarg, BENCH_SIZE_MAX, &v, err, errlen);
			p->size = v;
			have_s = true;
			break;
		case 'a':
			p->sweep = true;
			break;
		case 'n':
			r = num("-n", optarg, BENCH_ITERS_MAX, &v, err, errlen);
			p->iters = v;
			have_n = true;
			break;
		case 'D':
			r = num("-D", optarg, BENCH_DURATION_MAX, &v, err, errlen);
			p->duration_s = (uint32_t)v;
			if (r == 0 && v == 0)
				return usage_err(err, errlen, "-D wants at least 1 second");
			break;
		case 'q':
			r = num("-q", optarg, BENCH_QPS_MAX, &v, err, errlen);
			p->qps = (uint32_t)v;
			break;
		case 't':
			r = num("-t", optarg, BENCH_DEPTH_MAX, &v, err, errlen);
			p->depth = (uint32_t)v;
			if (r == 0 && v == 0)
				return usage_err(err, errlen, "-t wants at least 1");
			break;
		case 'I':
			r = num("-I", optarg, 1u << 20, &v, err, errlen);
			p->inline_size = (uint32_t)v;
			break;
		case 'p':
			r = num("-p", optarg, 65535, &v, err, errlen);
			p->port = (uint16_t)v;
			break;
		case OPT_BIDIR:
			p->bidir = true;
			break;
		case OPT_RDMA_CM:
			p->rdma_cm = true;
			break;
		case OPT_CHECK:
			p->check_data = true;
			break;
		case OPT_JSON:
			cli.json = true;
			break;
		case OPT_METRICS:
			cli.metrics = true;
			break;
		case OPT_WARMUP:
			r = num("--warmup", optarg, BENCH_ITERS_MAX, &v, err, errlen);
			p->warmup = (uint32_t)v;
			break;
		case OPT_MARGIN:
			r = num("--margin", optarg, (uint64_t)BENCH_DURATION_MAX * 1000, &v, err,
				errlen);
			p->margin_ms = (uint32_t)v;
			break;
		case OPT_INTERVAL:
			r = num("--interval", optarg, 60000, &v, err, errlen);
			p->interval_ms = (uint32_t)v;
			break;
		case OPT_TIMEOUT:
			r = num("--timeout", optarg, 3600000, &v, err, errlen);
			p->connect_timeout_ms = (uint32_t)v;
			if (r == 0 && v == 0)
				return usage_err(err, errlen, "--timeout wants at least 1 ms");
			break;
		case OPT_MEM:
			if (strlen(optarg) >= sizeof(p->mem))
				return usage_err(err, errlen, "unknown memory '%.64s'", optarg);
			snprintf(p->mem, sizeof(p->mem), "%s", optarg);
			break;
		case OPT_USE_CUDA:
			if (strlen(optarg) + 5 >= sizeof(p->mem) ||
			    strspn(optarg, "0123456789") != strlen(optarg) || !optarg[0])
				return usage_err(err, errlen,
						 "--use_cuda wants a GPU index, not '%s'", optarg);
			snprintf(p->mem, sizeof(p->mem), "cuda:%s", optarg);
			break;
		case OPT_GPUDIRECT: {
			enum bench_gpudirect g;

			if (bench_gpudirect_parse(optarg, &g) < 0)
				return usage_err(err, errlen,
						 "--gpudirect is auto, dmabuf or peermem, not '%s'",
						 optarg);
			p->gpudirect = (uint8_t)g;
			break;
		}
		case OPT_USE_CUDA_DMABUF:
			p->gpudirect = BENCH_GD_DMABUF;
			break;
		case OPT_TCLASS:
			r = num("--tclass", optarg, 255, &v, err, errlen);
			p->traffic_class = (uint8_t)v;
			break;
		case OPT_SL:
			r = num("--sl", optarg, 15, &v, err, errlen);
			p->service_level = (uint8_t)v;
			break;
		case 'h':
			cli.help = true;
			*ret_cli = cli;
			return 0;
		case ':':
			return usage_err(err, errlen, "%s wants a value", argv[optind - 1]);
		default:
			return usage_err(err, errlen, "unknown option '%s'", argv[optind - 1]);
		}
		if (r < 0)
			return r;
	}
	/* Positional (getopt moved them to the end): the test, then maybe the peer. */
	if (optind >= argc)
		return usage_err(err, errlen, "which test: lat or bw?");
	if (bench_kind_parse(argv[optind], &p->kind) < 0)
		return usage_err(err, errlen, "the test is lat or bw, not '%s'", argv[optind]);
	if (argc - optind > 2)
		return usage_err(err, errlen, "one peer only ('%s', '%s')", argv[optind + 1],
				 argv[optind + 2]);
	if (argc - optind == 2)
		cli.peer = argv[optind + 1];
	if (have_s && p->sweep)
		return usage_err(err, errlen, "-s and -a exclude each other");
	if (have_n && p->duration_s)
		return usage_err(err, errlen, "-n and -D exclude each other");
	if (p->duration_s)
		p->iters = 0;
	if (!cli.peer && p->connect_timeout_ms == 0)
		p->connect_timeout_ms = 3600000; /* a server waits for its client */
	r = bench_params_validate(p, err, errlen);
	if (r < 0)
		return r;
	*ret_cli = cli;
	return 0;
}

static double num_of(const json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

static const char *str_of(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s && *s ? s : "-";
}

/* The CPU cost of a bandwidth step, both sides (docs/bench.md, "CPU cost"); unknown figures
 * read "?". */
static void print_cpu_side(FILE *f, const char *who, const json_t *c)
{
	char th[64] = "?", ho[64] = "?";
	const json_t *x = json_object_get(c, "thread_cores"), *y = json_object_get(c, "host_cores");

	if (json_is_number(x))
		snprintf(th, sizeof(th), "%.2f cores", json_number_value(x));
	if (json_is_number(json_object_get(c, "thread_s_per_gb")))
		snprintf(th + strlen(th), sizeof(th) - strlen(th), ", %.3f CPU-s/GB",
			 num_of(c, "thread_s_per_gb"));
	if (json_is_number(y))
		snprintf(ho, sizeof(ho), "%.2f of %.0f cores", json_number_value(y),
			 num_of(c, "ncpu"));
	if (json_is_number(json_object_get(c, "host_s_per_gb")))
		snprintf(ho + strlen(ho), sizeof(ho) - strlen(ho), ", %.3f CPU-s/GB",
			 num_of(c, "host_s_per_gb"));
	fprintf(f, " CPU %s: benchmark thread %s; host-wide %s\n", who, th, ho);
}

static void print_cpu(FILE *f, const json_t *r)
{
	const json_t *cpu = json_object_get(r, "cpu");

	if (!json_is_object(cpu))
		return;
	fprintf(f, " CPU cost at %.0f B (warm-up included):\n", num_of(r, "size"));
	if (json_object_get(cpu, "client"))
		print_cpu_side(f, "client", json_object_get(cpu, "client"));
	if (json_object_get(cpu, "server"))
		print_cpu_side(f, "server", json_object_get(cpu, "server"));
}

void bench_cli_print(FILE *f, const json_t *doc)
{
	const json_t *par = json_object_get(doc, "params"),
		     *results = json_object_get(doc, "results");
	const json_t *envc = json_object_get(json_object_get(doc, "environment"), "client");
	const json_t *envs = json_object_get(json_object_get(doc, "environment"), "server");
	const char *kind = str_of(par, "kind");
	bool lat = strcmp(kind, "lat") == 0;
	const char *line = "-------------------------------------------------------------------"
			   "--------------------";
	const json_t *r;
	size_t i;

	fprintf(f, "%s\n", line);
	fprintf(f, "                    railyard-bench %s %s over %s\n", str_of(par, "op"),
		lat ? "latency" : "bandwidth", str_of(par, "transport"));
	fprintf(f, " QPs: %d  Window: %d  Bidirectional: %s  Check data: %s  Memory: %s\n",
		(int)num_of(par, "qps"), (int)num_of(par, "depth"),
		json_is_true(json_object_get(par, "bidir")) ? "yes" : "no",
		json_is_true(json_object_get(par, "check_data")) ? "on" : "off",
		str_of(par, "mem"));
	fprintf(f, " Client: %s device %s MTU %d GID %s   Server: %s device %s MTU %d GID %s\n",
		str_of(envc, "host"), str_of(envc, "device"), (int)num_of(envc, "mtu"),
		str_of(envc, "gid"), str_of(envs, "host"), str_of(envs, "device"),
		(int)num_of(envs, "mtu"), str_of(envs, "gid"));
	/* Only when set: the usual header keeps its perftest-like shape. */
	if (num_of(envc, "traffic_class") != 0 || num_of(envc, "service_level") != 0 ||
	    num_of(envs, "traffic_class") != 0 || num_of(envs, "service_level") != 0)
		fprintf(f, " Client: traffic class %d SL %d   Server: traffic class %d SL %d\n",
			(int)num_of(envc, "traffic_class"), (int)num_of(envc, "service_level"),
			(int)num_of(envs, "traffic_class"), (int)num_of(envs, "service_level"));
	if (lat)
		fprintf(f, " Latency: %s, microseconds; percentiles by nearest rank\n",
			str_of(doc, "latency_is"));
	else
		fprintf(f, " Bandwidth measured by the %s; Gb/sec = 1e9 bits per second\n",
			strcmp(str_of(par, "op"), "send") == 0 ? "receiver" : "initiator");
	fprintf(f, "%s\n", line);
	if (lat)
		fprintf(f,
			" #bytes #iterations t_min[usec] t_max[usec] t_typical[usec] "
			"t_avg[usec] t_stdev[usec] 99%% percentile[usec] 99.9%% percentile[usec] "
			"p90[usec]\n");
	else
		fprintf(f,
			" #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps] "
			"BW average[MB/sec]%s\n",
			json_is_true(json_object_get(par, "bidir"))
				? " reverse[Gb/sec] total[Gb/sec]"
				: "");
	json_array_foreach(results, i, r)
	{
		const json_t *l = json_object_get(r, "latency"), *bw = json_object_get(r, "bw");
		const json_t *iv = json_object_get(bw, "intervals"), *x;
		double peak;
		size_t k;

		if (lat) {
			fprintf(f,
				" %-6.0f %-11.0f %-11.2f %-11.2f %-15.2f %-11.2f %-13.2f %-20.2f "
				"%-22.2f %.2f%s\n",
				num_of(r, "size"), num_of(l, "count"), num_of(l, "min"),
				num_of(l, "max"), num_of(l, "p50"), num_of(l, "mean"),
				num_of(l, "stddev"), num_of(l, "p99"), num_of(l, "p99_9"),
				num_of(l, "p90"),
				json_is_true(json_object_get(l, "approximate")) ? " (histogram)"
										: "");
			continue;
		}
		peak = num_of(bw, "gbps");
		json_array_foreach(iv, k, x)
		{
			if (num_of(x, "gbps") > peak)
				peak = num_of(x, "gbps");
		}
		fprintf(f, " %-6.0f %-11.0f %-15.2f %-18.2f %-13.6f %.2f", num_of(r, "size"),
			num_of(bw, "msgs"), peak, num_of(bw, "gbps"), num_of(bw, "msg_rate") / 1e6,
			num_of(bw, "mbps"));
		if (json_object_get(r, "bw_reverse"))
			fprintf(f, " %.2f %.2f", num_of(json_object_get(r, "bw_reverse"), "gbps"),
				num_of(r, "bw_total_gbps"));
		fputc('\n', f);
	}
	fprintf(f, "%s\n", line);
	if (!lat)
		print_cpu(f, json_array_get(json_object_get(doc, "results"),
					    json_array_size(json_object_get(doc, "results")) - 1));
}

void bench_cli_print_metrics(FILE *f, const json_t *doc)
{
	const json_t *par = json_object_get(doc, "params"), *r;
	bool lat = strcmp(str_of(par, "kind"), "lat") == 0;
	bool sweep = json_is_true(json_object_get(par, "sweep"));
	char name[64];
	size_t i;

	json_array_foreach(json_object_get(doc, "results"), i, r)
	{
		snprintf(name, sizeof(name), "%s_%s", str_of(par, "op"), str_of(par, "kind"));
		if (sweep)
			snprintf(name + strlen(name), sizeof(name) - strlen(name), "_%.0f",
				 num_of(r, "size"));
		if (lat)
			fprintf(f, "RY-METRIC %s %.2f usec\n", name,
				num_of(json_object_get(r, "latency"), "p50"));
		else
			fprintf(f, "RY-METRIC %s %.2f MB/sec\n", name,
				num_of(json_object_get(r, "bw"), "mbps"));
	}
}

#ifdef RAILYARD_BENCH_HAVE_CUDA
#include "nodeagent/bench/cuda.h"

int bench_cli_gpu_info(int argc, char **argv, FILE *out)
{
	const char *mem = NULL;
	char err[BENCH_ERR_LEN] = "", spec[BENCH_DEV_LEN];
	const struct bench_cuda *cu;
	json_t *all = NULL, *g;
	bool json = false;
	int n = 0, rc = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "--mem") == 0 && i + 1 < argc &&
			   strncmp(argv[i + 1], "cuda", 4) == 0 &&
			   strlen(argv[i + 1]) < sizeof(spec)) {
			mem = argv[++i];
		} else {
			fprintf(stderr,
				"usage: railyard-bench gpu-info [--mem cuda[:GPU]] [--json]\n");
			return 2;
		}
	}
	if (bench_cuda_get(&cu, err, sizeof(err)) < 0) {
		fprintf(stderr, "railyard-bench gpu-info: %s\n", err);
		return 1;
	}
	if (cu->device_get_count(&n) != 0 || n <= 0) {
		fprintf(stderr, "railyard-bench gpu-info: no CUDA GPU on this host\n");
		return 1;
	}
	all = json_array();
	for (int d = 0; d < (mem ? 1 : n); d++) {
		if (!mem)
			snprintf(spec, sizeof(spec), "cuda:%d", d);
		if (bench_cuda_probe(mem ? mem : spec, &g, err, sizeof(err)) < 0) {
			fprintf(stderr, "railyard-bench gpu-info: %s\n", err);
			rc = 1;
			continue;
		}
		if (strcmp(json_string_value(json_object_get(g, "dmabuf_export")), "ok") != 0)
			rc = 1;
		json_array_append_new(all, g);
	}
	if (json) {
		json_dumpf(all, out, JSON_INDENT(2));
		fputc('\n', out);
	} else {
		size_t i;

		json_array_foreach(all, i, g) fprintf(
			out,
			"GPU %d  %s  %s  %s  %.0f MiB  driver %d  dma-buf %s  GPUDirect RDMA "
			"%s  dma-buf export: %s\n",
			(int)json_integer_value(json_object_get(g, "index")), str_of(g, "name"),
			str_of(g, "bus_id"), str_of(g, "uuid"),
			num_of(g, "total_mem_bytes") / 1048576.0, (int)num_of(g, "driver_version"),
			num_of(g, "dmabuf_supported") > 0 ? "yes" : "no",
			num_of(g, "gpudirect_rdma_supported") > 0 ? "yes" : "no",
			str_of(g, "dmabuf_export"));
	}
	json_decref(all);
	return rc;
}
#else
int bench_cli_gpu_info(int argc, char **argv, FILE *out)
{
	(void)argc;
	(void)argv;
	(void)out;
	fprintf(stderr, "railyard-bench gpu-info: cuda memory not built\n");
	return 1;
}
#endif
