/* railyard bench run|list|show|cancel: benchmark runs between two nodes (/api/v1/bench-runs).
 * run orders one and follows it until it ends; Ctrl-C while it waits cancels it. */
#include "client/rc.h"
#include "common/util/util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long cancel (and an interrupted run) waits for the controller to carry the cancel out: it
 * acts within one engine pass. */
#define CANCEL_WAIT_MS 15000
#define POLL_MS	       200

enum {
	OPT_FROM = 900,
	OPT_TO,
	OPT_KIND,
	OPT_TRANSPORT,
	OPT_OP,
	OPT_SIZE,
	OPT_ITERS,
	OPT_DURATION,
	OPT_QPS,
	OPT_GID,
	OPT_IB_PORT,
	OPT_TCLASS,
	OPT_SL,
	OPT_SWEEP,
	OPT_BIDIR,
	OPT_CHECK_DATA,
	OPT_RDMA_CM,
	OPT_DEVICE,
	OPT_SERVER_ADDR,
	OPT_TIMEOUT,
	OPT_NO_WAIT,
	OPT_NODES,
	OPT_RANKS,
	OPT_BACKEND,
	OPT_OPS,
	OPT_MIN_BYTES,
	OPT_MAX_BYTES,
	OPT_WARMUP,
};

static bool run_final(const json_t *b)
{
	const char *st = rc_str(b, "state", "");

	return strcmp(st, "succeeded") == 0 || strcmp(st, "failed") == 0 ||
	       strcmp(st, "cancelled") == 0;
}

/* One line per message size: latency percentiles or bandwidth. */
static void print_results(const json_t *res)
{
	const json_t *r;
	size_t i;

	json_array_foreach(json_object_get(res, "results"), i, r)
	{
		const json_t *lat = json_object_get(r, "latency"), *bw = json_object_get(r, "bw");
		long long size = JINT(r, "size");

		if (lat)
			printf("  %8lld B  lat us: min %.2f  p50 %.2f  p99 %.2f  p99.9 %.2f  max "
			       "%.2f  (%lld samples)\n",
			       size, json_number_value(json_object_get(lat, "min")),
			       json_number_value(json_object_get(lat, "p50")),
			       json_number_value(json_object_get(lat, "p99")),
			       json_number_value(json_object_get(lat, "p99_9")),
			       json_number_value(json_object_get(lat, "max")), JINT(lat, "count"));
		if (bw)
			printf("  %8lld B  bw: %.3f Gb/s  %.0f msg/s\n", size,
			       json_number_value(json_object_get(bw, "gbps")),
			       json_number_value(json_object_get(bw, "msg_rate")));
	}
}

/* A collective's figures: one line per operation and size, as nccl-tests prints them. */
static void print_coll(const json_t *res)
{
	const json_t *r;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(res, "coll"), "results"), i, r)
		util_fprintf_safe(stdout,
				  "  %-14s %10lld B  %10.2f us  algbw %8.3f GB/s  busbw %8.3f GB/s"
				  "  wrong %lld\n",
				  rc_str(r, "op", "?"), JINT(r, "bytes"),
				  json_number_value(json_object_get(r, "time_us")),
				  json_number_value(json_object_get(r, "algbw_gbs")),
				  json_number_value(json_object_get(r, "busbw_gbs")),
				  JINT(r, "wrong"));
}

static int print_run(const struct rc *rc, const json_t *b)
{
	const char *error = rc_str(b, "error", NULL);

	if (rc->json)
		return rc_print_json(stdout, b);
	util_fprintf_safe(stdout, "bench %s: %s %s, %s -> %s: %s%s%s\n", rc_str(b, "id", "?"),
			  rc_str(b, "kind", "?"), rc_str(b, "transport", "?"),
			  rc_str(b, "client_node", "?"), rc_str(b, "server_node", "?"),
			  rc_str(b, "state", "?"), error ? ": " : "", error ? error : "");
	if (strcmp(rc_str(b, "kind", ""), "collective") == 0)
		print_coll(json_object_get(b, "result"));
	else
		print_results(json_object_get(b, "result"));
	return 0;
}

static int get_run(struct rc *rc, const char *id, json_t **ret)
{
	char path[512];
	int r = rc_id_path(path, sizeof(path), "/api/v1/bench-runs/", id, "");

	return r ? r : rc_api(rc, "GET", path, NULL, ret);
}

/* Poll run id until it is final or deadline (monotonic ms) passes; a signal (when asked to
 * cancel on one) cancels it once and keeps following for CANCEL_WAIT_MS. 0 with *ret its last
 * document, or the exit code. */
static int follow(struct rc *rc, const char *id, int64_t deadline, bool cancel_on_signal,
		  json_t **ret)
{
	bool asked = false;
	json_t *b = NULL;
	char path[512];
	int r;

	for (;;) {
		json_decref(b);
		b = NULL;
		if ((r = get_run(rc, id, &b)) != 0)
			return r;
		if (run_final(b) || util_now_mono_ms() > deadline)
			break;
		if (cancel_on_signal && rc_interrupted && !asked) {
			asked = true;
			util_fprintf_safe(stderr, "bench %s: interrupted; cancelling it\n", id);
			if ((r = rc_id_path(path, sizeof(path), "/api/v1/bench-runs/", id,
					    "/cancel")) != 0 ||
			    (r = rc_api(rc, "POST", path, NULL, NULL)) > 1) /* 1: it had ended */
				break;
			deadline = util_now_mono_ms() + CANCEL_WAIT_MS;
		}
		usleep(POLL_MS * 1000);
	}
	*ret = b;
	return 0;
}

struct num_opt {
	int opt;
	const char *key, *flag;
	long long lo, hi;
};

static const struct num_opt nums[] = {
	{OPT_SIZE, "size", "--size", 1, 100000000LL},
	{OPT_ITERS, "iters", "--iters", 1, 100000000LL},
	{OPT_QPS, "qps", "--qps", 1, 100000000LL},
	{OPT_GID, "gid_index", "--gid-index", -1, 65535},
	{OPT_IB_PORT, "ib_port", "--ib-port", 1, 255},
	{OPT_TCLASS, "tclass", "--tclass", 0, 255},
	{OPT_SL, "sl", "--sl", 0, 15},
	{OPT_RANKS, "ranks_per_node", "--ranks-per-node", 1, 64},
	{OPT_MIN_BYTES, "min_bytes", "--min-bytes", 1, 1LL << 34},
	{OPT_MAX_BYTES, "max_bytes", "--max-bytes", 1, 1LL << 34},
	{OPT_WARMUP, "warmup", "--warmup", 0, 100000},
};

static int cmd_run(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"from", required_argument, NULL, OPT_FROM},
		{"to", required_argument, NULL, OPT_TO},
		{"kind", required_argument, NULL, OPT_KIND},
		{"transport", required_argument, NULL, OPT_TRANSPORT},
		{"op", required_argument, NULL, OPT_OP},
		{"size", required_argument, NULL, OPT_SIZE},
		{"iters", required_argument, NULL, OPT_ITERS},
		{"duration", required_argument, NULL, OPT_DURATION},
		{"qps", required_argument, NULL, OPT_QPS},
		{"gid-index", required_argument, NULL, OPT_GID},
		{"ib-port", required_argument, NULL, OPT_IB_PORT},
		{"tclass", required_argument, NULL, OPT_TCLASS},
		{"sl", required_argument, NULL, OPT_SL},
		{"sweep", no_argument, NULL, OPT_SWEEP},
		{"bidir", no_argument, NULL, OPT_BIDIR},
		{"check-data", no_argument, NULL, OPT_CHECK_DATA},
		{"rdma-cm", no_argument, NULL, OPT_RDMA_CM},
		{"device", required_argument, NULL, OPT_DEVICE},
		{"server-address", required_argument, NULL, OPT_SERVER_ADDR},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"no-wait", no_argument, NULL, OPT_NO_WAIT},
		{"nodes", required_argument, NULL, OPT_NODES},
		{"ranks-per-node", required_argument, NULL, OPT_RANKS},
		{"backend", required_argument, NULL, OPT_BACKEND},
		{"ops", required_argument, NULL, OPT_OPS},
		{"min-bytes", required_argument, NULL, OPT_MIN_BYTES},
		{"max-bytes", required_argument, NULL, OPT_MAX_BYTES},
		{"warmup", required_argument, NULL, OPT_WARMUP},
		{0},
	};
	const char *from = NULL, *to = NULL, *kind = "lat", *transport = "tcp", *nodes = NULL;
	json_t *body = json_object(), *node = NULL, *made = NULL, *b = NULL;
	int64_t timeout = 60000, v;
	bool no_wait = false;
	char path[512];
	int c, r = RC_USAGE;

	if (!body)
		return RC_FAILED;
	while ((c = rc_getopt(rc, argc, argv, opts)) != -1) {
		const char *key = NULL;

		switch (c) {
		case OPT_FROM:
			from = optarg;
			break;
		case OPT_TO:
			to = optarg;
			break;
		case OPT_KIND:
			kind = optarg;
			break;
		case OPT_TRANSPORT:
			transport = optarg;
			break;
		case OPT_OP:
			key = "op";
			break;
		case OPT_NODES:
			nodes = optarg;
			key = "nodes";
			break;
		case OPT_BACKEND:
			key = "backend";
			break;
		case OPT_OPS:
			key = "ops";
			break;
		case OPT_DEVICE:
			key = "device";
			break;
		case OPT_SERVER_ADDR:
			key = "server_address";
			break;
		case OPT_SWEEP:
		case OPT_BIDIR:
		case OPT_CHECK_DATA:
		case OPT_RDMA_CM:
			json_object_set_new(body,
					    c == OPT_SWEEP	  ? "sweep"
					    : c == OPT_BIDIR	  ? "bidir"
					    : c == OPT_CHECK_DATA ? "check_data"
								  : "rdma_cm",
					    json_true());
			break;
		case OPT_DURATION:
			if ((r = rc_parse_duration("--duration", optarg, 1000, 86400000, &v)) != 0)
				goto out;
			json_object_set_new(body, "duration_s", json_integer(v / 1000));
			break;
		case OPT_TIMEOUT:
			if ((r = rc_parse_duration("--timeout", optarg, 1, INT32_MAX, &timeout)) !=
			    0)
				goto out;
			break;
		case OPT_NO_WAIT:
			no_wait = true;
			break;
		default:
			for (size_t i = 0; i < RY_ARRAY_SIZE(nums); i++) {
				if (nums[i].opt != c)
					continue;
				if ((r = rc_parse_int(nums[i].flag, optarg, nums[i].lo, nums[i].hi,
						      &v)) != 0)
					goto out;
				json_object_set_new(body, nums[i].key, json_integer(v));
				key = "";
			}
			if (!key) {
				r = rc_usage(cmd, c);
				goto out;
			}
			key = NULL;
		}
		if (key && json_object_set_new(body, key, json_string(optarg)) < 0) {
			r = rc_bad("argument (not UTF-8)", optarg);
			goto out;
		}
	}
	if ((r = rc_positionals(cmd, argc, argv, 0, false)) != 0)
		goto out;
	if (strcmp(kind, "collective") == 0) {
		/* Over --nodes, the first of which launches; the cluster is its. */
		if (!nodes || from || to) {
			r = rc_bad("bench run --kind collective", "(--nodes, not --from/--to)");
			goto out;
		}
		from = to = rc_str(body, "nodes", "");
		{
			char first[256];

			snprintf(first, sizeof(first), "%.*s", (int)strcspn(nodes, ","), nodes);
			if ((r = rc_id_path(path, sizeof(path), "/api/v1/nodes/", first, "")) !=
				    0 ||
			    (r = rc_api(rc, "GET", path, NULL, &node)) != 0)
				goto out;
		}
	} else {
		if (!from || !to) {
			r = rc_bad("bench run", "(--from and --to are required)");
			goto out;
		}
		if (strcmp(kind, "lat") != 0 && strcmp(kind, "bw") != 0) {
			r = rc_bad("--kind (lat, bw or collective)", kind);
			goto out;
		}
		/* The API takes the cluster of the two nodes: the client node's. */
		if ((r = rc_id_path(path, sizeof(path), "/api/v1/nodes/", from, "")) != 0 ||
		    (r = rc_api(rc, "GET", path, NULL, &node)) != 0)
			goto out;
		if (json_object_set_new(body, "from", json_string(from)) < 0 ||
		    json_object_set_new(body, "to", json_string(to)) < 0) {
			r = rc_bad("argument (not UTF-8)", "");
			goto out;
		}
	}
	if (json_object_set_new(body, "cluster", json_string(rc_str(node, "cluster", ""))) < 0 ||
	    json_object_set_new(body, "kind", json_string(kind)) < 0 ||
	    json_object_set_new(body, "transport", json_string(transport)) < 0 ||
	    json_object_set_new(body, "timeout_ms", json_integer(timeout)) < 0) {
		r = rc_bad("argument (not UTF-8)", "");
		goto out;
	}
	if ((r = rc_api(rc, "POST", "/api/v1/bench-runs", body, &made)) != 0)
		goto out;
	/* With --json stdout carries the document alone. */
	if (nodes)
		util_fprintf_safe(rc->json ? stderr : stdout, "bench %s: %s over %s on %s\n",
				  rc_str(made, "id", "?"), kind, transport, nodes);
	else
		util_fprintf_safe(rc->json ? stderr : stdout,
				  "bench %s: %s over %s, client %s, server %s\n",
				  rc_str(made, "id", "?"), kind, transport, from, to);
	fflush(rc->json ? stderr : stdout); /* the id, before a long wait, even into a pipe */
	if (no_wait) {
		r = rc->json ? rc_print_json(stdout, made) : 0;
		goto out;
	}
	/* The run ends by itself at its deadline; follow it a little longer for the reports. */
	rc_catch_interrupts();
	if ((r = follow(rc, rc_str(made, "id", ""), util_now_mono_ms() + timeout + 20000, true,
			&b)) != 0 ||
	    (r = print_run(rc, b)) != 0)
		goto out;
	r = rc_interrupted				       ? RC_INTERRUPTED
	    : strcmp(rc_str(b, "state", ""), "succeeded") == 0 ? RC_OK
							       : RC_FAILED;
out:
	json_decref(body);
	json_decref(node);
	json_decref(made);
	json_decref(b);
	return r;
}

static int cmd_list(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	json_t *items = NULL, *b;
	size_t i;
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, (const struct option[]){{0}})) != -1)
		return rc_usage(cmd, c);
	if ((r = rc_positionals(cmd, argc, argv, 0, false)) != 0 ||
	    (r = rc_api_list(rc, "/api/v1/bench-runs", &items)) != 0)
		return r;
	if (rc->json) {
		r = rc_print_list(items);
	} else {
		printf("%-11s %-4s %-6s %-16s %-16s %-12s %s\n", "RUN", "KIND", "OVER", "CLIENT",
		       "SERVER", "STATE", "ERROR");
		json_array_foreach(items, i, b) util_fprintf_safe(
			stdout, "%-11s %-4s %-6s %-16s %-16s %-12s %s\n", rc_str(b, "id", "?"),
			rc_str(b, "kind", "?"), rc_str(b, "transport", "?"),
			rc_str(b, "client_node", "?"), rc_str(b, "server_node", "?"),
			rc_str(b, "state", "?"), rc_str(b, "error", ""));
	}
	json_decref(items);
	return r;
}

static int cmd_show(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	json_t *b = NULL;
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, (const struct option[]){{0}})) != -1)
		return rc_usage(cmd, c);
	if ((r = rc_positionals(cmd, argc, argv, 1, false)) != 0 ||
	    (r = get_run(rc, argv[optind], &b)) != 0)
		return r;
	r = print_run(rc, b);
	json_decref(b);
	return r;
}

static int cmd_cancel(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {{"no-wait", no_argument, NULL, OPT_NO_WAIT}, {0}};
	const char *id;
	bool no_wait = false;
	json_t *b = NULL;
	char path[512];
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, opts)) != -1) {
		if (c != OPT_NO_WAIT)
			return rc_usage(cmd, c);
		no_wait = true;
	}
	if ((r = rc_positionals(cmd, argc, argv, 1, false)) != 0)
		return r;
	id = argv[optind];
	if ((r = rc_id_path(path, sizeof(path), "/api/v1/bench-runs/", id, "/cancel")) != 0 ||
	    (r = rc_api(rc, "POST", path, NULL, NULL)) != 0)
		return r;
	if (no_wait) {
		util_fprintf_safe(stdout, "bench %s: cancel requested\n", id);
		return 0;
	}
	if ((r = follow(rc, id, util_now_mono_ms() + CANCEL_WAIT_MS, false, &b)) != 0)
		return r;
	r = RC_FAILED;
	if (strcmp(rc_str(b, "state", ""), "cancelled") == 0) {
		util_fprintf_safe(stdout, "bench %s: cancelled\n", id);
		r = RC_OK;
	} else if (run_final(b)) {
		util_fprintf_safe(stdout, "bench %s: ended %s before the cancel took effect\n", id,
				  rc_str(b, "state", "?"));
	} else {
		util_fprintf_safe(stdout,
				  "bench %s: cancel requested; not carried out within %d s\n", id,
				  CANCEL_WAIT_MS / 1000);
	}
	json_decref(b);
	return r;
}

const struct rc_command rc_bench_commands[] = {
	{"bench run",
	 "--from NODE --to NODE [--kind lat|bw] [--transport tcp|verbs]\n"
	 "        | --kind collective --nodes A,B,... [--ranks-per-node N]\n"
	 "        [--backend mpi|nccl] [--ops allreduce,...] [--min-bytes N] [--max-bytes N]\n"
	 "        [--warmup N]\n"
	 "        [--op send|write|read] [--size N] [--iters N] [--duration 10s] [--qps N]\n"
	 "        [--sweep] [--bidir] [--check-data] [--rdma-cm] [--device DEV]\n"
	 "        [--gid-index N] [--ib-port N] [--tclass N] [--sl N]\n"
	 "        [--server-address HOST] [--timeout 60s] [--no-wait]",
	 "run a benchmark between two nodes, or a collective over several, and follow it "
	 "(Ctrl-C cancels it); exit 0 "
	 "succeeded, 1 failed",
	 cmd_run},
	{"bench list", "", "list benchmark runs, newest first", cmd_list},
	{"bench show", "ID", "show one benchmark run and its result", cmd_show},
	{"bench cancel", "ID [--no-wait]", "cancel a benchmark run and wait until it stops",
	 cmd_cancel},
	{0},
};
