/* railyard-controller bench run|list|show|cancel: the front end of the benchmark service. run
 * has the serving controller order a run between two nodes (its REST API over api.sock) and
 * follows it in the database as the controller drives it; cancel goes through the API too. */
#include "controller/bench/bench.h"
#include "controller/cli/cli.h"
#include "common/httpc/httpc.h"
#include "controller/state.h"
#include "controller/store/store.h"
#include "controller/store/store_nodes.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long `bench cancel` (and an interrupted `bench run`) waits for the serving controller to
 * carry the cancel out: it acts within one engine pass. */
#define CANCEL_WAIT_MS 15000

enum { OPT_STATE_DIR = 900, OPT_JSON };

#define JSTR(o, k) json_string_value(json_object_get((o), (k)))

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	interrupted = sig;
}

static bool run_final(const json_t *run)
{
	const char *st = JSTR(run, "state");

	return st && (strcmp(st, "succeeded") == 0 || strcmp(st, "failed") == 0 ||
		      strcmp(st, "cancelled") == 0);
}

/* Follow run id until it is final or until deadline (monotonic ms); *ret gets its last state.
 * A signal (when catch_signals) requests its cancel once and keeps following for
 * CANCEL_WAIT_MS. */
/* Ask the serving controller to cancel run id: 1 requested, 0 it had finished (said on stderr,
 * naming its state), -1 another error (said). */
static int cancel_run(struct httpc *api, struct store *st, const char *id)
{
	struct ctl_error err;
	json_t *b = NULL;
	char path[512];
	int r;

	if (cli_api_path(path, sizeof(path), "/api/v1/bench-runs/", id, "/cancel") < 0) {
		cli_bad("benchmark run id", id);
		return -1;
	}
	ctl_error_init(&err);
	r = cli_api_call(api, "POST", path, NULL, NULL, NULL, &err);
	if (r >= 0) {
		r = 1;
	} else if (err.code && strcmp(err.code, CTL_ERR_CONFLICT) == 0 &&
		   ctl_bench_get(st, id, &b, &err) == 0) {
		util_fprintf_safe(
			stderr, "railyard-controller: bench cancel: %s has already finished (%s)\n",
			id, JSTR(b, "state"));
		r = 0;
	} else {
		util_fprintf_safe(stderr, "railyard-controller: bench cancel: %s\n", err.message);
		r = -1;
	}
	json_decref(b);
	ctl_error_done(&err);
	return r;
}

static int follow(struct store *st, struct httpc *api, const char *id, int64_t deadline,
		  bool catch_signals, json_t **ret)
{
	struct ctl_error err;
	json_t *b = NULL;
	bool asked = false;
	int r;

	ctl_error_init(&err);
	for (;;) {
		r = ctl_bench_get(st, id, &b, &err);
		if (r < 0) {
			cli_error(&err);
			break;
		}
		if (run_final(b) || util_now_mono_ms() > deadline)
			break;
		if (catch_signals && interrupted && !asked) {
			asked = true;
			fprintf(stderr, "bench %s: interrupted; cancelling it\n", id);
			if (cancel_run(api, st, id) < 0)
				break;
			deadline = util_now_mono_ms() + CANCEL_WAIT_MS;
		}
		json_decref(b);
		b = NULL;
		usleep(200 * 1000);
	}
	ctl_error_done(&err);
	if (!b)
		return r < 0 ? r : -1;
	*ret = b;
	return 0;
}

/* One line per message size: latency percentiles or bandwidth. */
static void print_results(FILE *out, const json_t *doc)
{
	json_t *res = json_object_get(doc, "results"), *r;
	size_t i;

	json_array_foreach(res, i, r)
	{
		json_t *lat = json_object_get(r, "latency"), *bw = json_object_get(r, "bw");
		json_int_t size = json_integer_value(json_object_get(r, "size"));

		if (lat)
			fprintf(out,
				"  %8lld B  lat us: min %.2f  p50 %.2f  p99 %.2f  p99.9 %.2f  max "
				"%.2f"
				"  (%lld samples)\n",
				(long long)size, json_real_value(json_object_get(lat, "min")),
				json_real_value(json_object_get(lat, "p50")),
				json_real_value(json_object_get(lat, "p99")),
				json_real_value(json_object_get(lat, "p99_9")),
				json_real_value(json_object_get(lat, "max")),
				(long long)json_integer_value(json_object_get(lat, "count")));
		if (bw)
			fprintf(out, "  %8lld B  bw: %.3f Gb/s  %.0f msg/s\n", (long long)size,
				json_real_value(json_object_get(bw, "gbps")),
				json_real_value(json_object_get(bw, "msg_rate")));
	}
}

static void print_run(FILE *out, const json_t *b, bool json)
{
	const char *error = JSTR(b, "error");

	if (json) {
		cli_print_json(out, b);
		return;
	}
	util_fprintf_safe(out, "bench %s: %s %s, %s -> %s: %s%s%s\n", JSTR(b, "id"),
			  JSTR(b, "kind"), JSTR(b, "transport"), JSTR(b, "client_node"),
			  JSTR(b, "server_node"), JSTR(b, "state"), error ? ": " : "",
			  error ? error : "");
	print_results(out, json_object_get(b, "result"));
}

/* The body of POST /api/v1/bench-runs for rq (NULL: out of memory, or text not UTF-8). */
static json_t *bench_body(const struct ctl_bench_request *rq, const char *cluster)
{
	json_t *b = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "cluster", cluster, "from",
			      rq->from, "to", rq->to, "kind", rq->kind, "transport", rq->transport,
			      "timeout_ms", (json_int_t)rq->timeout_ms);
	const struct {
		const char *key, *v;
	} strs[] = {{"op", rq->op}, {"device", rq->device}, {"server_address", rq->server_address}};
	const struct {
		const char *key;
		int64_t v, unset;
	} nums[] = {{"size", rq->size, 0},
		    {"iters", rq->iters, 0},
		    {"duration_s", rq->duration_s, 0},
		    {"qps", rq->qps, 0},
		    {"gid_index", rq->gid_index, -2},
		    {"ib_port", rq->ib_port, -1},
		    {"tclass", rq->tclass, -1},
		    {"sl", rq->sl, -1}};
	const struct {
		const char *key;
		bool v;
	} flags[] = {{"sweep", rq->sweep},
		     {"bidir", rq->bidir},
		     {"check_data", rq->check_data},
		     {"rdma_cm", rq->rdma_cm}};
	bool ok = b != NULL;

	for (size_t i = 0; ok && i < RY_ARRAY_SIZE(strs); i++)
		if (strs[i].v)
			ok = json_object_set_new(b, strs[i].key, json_string(strs[i].v)) == 0;
	for (size_t i = 0; ok && i < RY_ARRAY_SIZE(nums); i++)
		if (nums[i].v != nums[i].unset)
			ok = json_object_set_new(b, nums[i].key, json_integer(nums[i].v)) == 0;
	for (size_t i = 0; ok && i < RY_ARRAY_SIZE(flags); i++)
		if (flags[i].v)
			ok = json_object_set_new(b, flags[i].key, json_true()) == 0;
	if (!ok) {
		json_decref(b);
		return NULL;
	}
	return b;
}

static int cmd_run(const struct cli_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"state-dir", required_argument, NULL, OPT_STATE_DIR},
		{"json", no_argument, NULL, OPT_JSON},
		{"from", required_argument, NULL, 1001},
		{"to", required_argument, NULL, 1002},
		{"kind", required_argument, NULL, 1003},
		{"transport", required_argument, NULL, 1004},
		{"op", required_argument, NULL, 1005},
		{"size", required_argument, NULL, 1006},
		{"iters", required_argument, NULL, 1007},
		{"duration", required_argument, NULL, 1008},
		{"qps", required_argument, NULL, 1009},
		{"sweep", no_argument, NULL, 1010},
		{"bidir", no_argument, NULL, 1011},
		{"check-data", no_argument, NULL, 1012},
		{"rdma-cm", no_argument, NULL, 1013},
		{"device", required_argument, NULL, 1014},
		{"server-address", required_argument, NULL, 1015},
		{"gid-index", required_argument, NULL, 1016},
		{"ib-port", required_argument, NULL, 1017},
		{"tclass", required_argument, NULL, 1018},
		{"sl", required_argument, NULL, 1019},
		{"timeout", required_argument, NULL, 'o'},
		{"no-wait", no_argument, NULL, 'W'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	struct ctl_bench_request rq = {.kind = "lat",
				       .transport = "tcp",
				       .timeout_ms = 60000,
				       .gid_index = -2,
				       .ib_port = -1,
				       .tclass = -1,
				       .sl = -1};
	const char *state_dir = CTL_DEFAULT_STATE_DIR;
	struct store_node *from = NULL;
	struct ctl_state *st = NULL;
	struct httpc *api = NULL;
	struct ctl_error err;
	bool json = false, no_wait = false;
	json_t *b = NULL, *body = NULL, *made = NULL;
	const char *id;
	char *end;
	int c, r, rc = 1;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_STATE_DIR:
			state_dir = optarg;
			break;
		case OPT_JSON:
			json = true;
			break;
		case 1001:
			rq.from = optarg;
			break;
		case 1002:
			rq.to = optarg;
			break;
		case 1003:
			rq.kind = optarg;
			break;
		case 1004:
			rq.transport = optarg;
			break;
		case 1005:
			rq.op = optarg;
			break;
		case 1006:
		case 1007:
		case 1008:
		case 1009: {
			long long v = strtoll(optarg, &end, 10);
			int64_t *dst = c == 1006   ? &rq.size
				       : c == 1007 ? &rq.iters
				       : c == 1008 ? &rq.duration_s
						   : &rq.qps;

			/* Bounds are the engine's (the agent validates); this only refuses junk. */
			if (*end || v < 1 || v > 100000000LL)
				return cli_bad("benchmark number", optarg);
			*dst = v;
			break;
		}
		case 1010:
			rq.sweep = true;
			break;
		case 1011:
			rq.bidir = true;
			break;
		case 1012:
			rq.check_data = true;
			break;
		case 1013:
			rq.rdma_cm = true;
			break;
		case 1014:
			rq.device = optarg;
			break;
		case 1015:
			rq.server_address = optarg;
			break;
		case 1016:
		case 1017:
		case 1018:
		case 1019: {
			/* The same value goes to both sides; the agents validate it against their
			 * device (e.g. a GID index not in use). */
			static const long long lo[] = {-1, 1, 0, 0}, hi[] = {65535, 255, 255, 15};
			static const char *const flag[] = {"--gid-index", "--ib-port", "--tclass",
							   "--sl"};
			long long v = strtoll(optarg, &end, 10);
			int k = c - 1016;
			int64_t *dst = k == 0	? &rq.gid_index
				       : k == 1 ? &rq.ib_port
				       : k == 2 ? &rq.tclass
						: &rq.sl;

			if (!optarg[0] || *end || v < lo[k] || v > hi[k])
				return cli_bad(flag[k], optarg);
			*dst = v;
			break;
		}
		case 'o':
			if (cli_parse_ms("--timeout", optarg, &rq.timeout_ms))
				return 2;
			break;
		case 'W':
			no_wait = true;
			break;
		case 'h':
			return cli_usage(cmd, stdout);
		default:
			return cli_usage(cmd, stderr);
		}
	}
	if ((r = cli_positionals(cmd, argc, argv, 0)) != 0)
		return r;
	if (!rq.from || !rq.to)
		return cli_bad("bench run", "(--from and --to are required)");
	if (strcmp(rq.kind, "lat") != 0 && strcmp(rq.kind, "bw") != 0)
		return cli_bad("--kind", rq.kind);
	ctl_error_init(&err);
	/* The serving controller orders it (one writer); following it reads the database. */
	if (cli_api_need("bench run", state_dir, &api) != 0 ||
	    cli_open_state(state_dir, false, &st) < 0)
		goto out;
	/* The API takes the cluster the two nodes are of: the client node's. */
	r = store_node_get(st->store, rq.from, &from);
	if (r < 0) {
		util_fprintf_safe(stderr, "railyard-controller: bench run: %s node %s\n",
				  r == -ENOTUNIQ ? "ambiguous" : "unknown", rq.from);
		goto out;
	}
	body = bench_body(&rq, from->cluster);
	if (!body) {
		log_error("bench run: out of memory (or an argument that is not UTF-8)");
		goto out;
	}
	r = cli_api_call(api, "POST", "/api/v1/bench-runs", body, NULL, &made, &err);
	if (r < 0) {
		cli_error(&err);
		rc = strcmp(err.code, CTL_ERR_INVALID) == 0 ? 2 : 1;
		goto out;
	}
	id = JSTR(made, "id");
	r = ctl_bench_get(st->store, id, &b, &err);
	/* With --json stdout carries the document alone. */
	util_fprintf_safe(json ? stderr : stdout, "bench %s: %s over %s, client %s, server %s\n",
			  id, rq.kind, rq.transport, rq.from, rq.to);
	json_decref(b);
	b = NULL;
	fflush(json ? stderr : stdout); /* the id, before a long wait, even into a pipe */
	if (no_wait) {
		rc = 0;
		goto out;
	}
	/* The run ends by itself at its deadline; follow it a little longer for the reports.
	 * Ctrl-C cancels it rather than leaving it behind. */
	sigaction(SIGINT, &(struct sigaction){.sa_handler = on_interrupt}, NULL);
	sigaction(SIGTERM, &(struct sigaction){.sa_handler = on_interrupt}, NULL);
	if (follow(st->store, api, id, util_now_mono_ms() + rq.timeout_ms + 20000, true, &b) < 0)
		goto out;
	print_run(stdout, b, json);
	rc = interrupted ? 130 : strcmp(JSTR(b, "state"), "succeeded") == 0 ? 0 : 1;
out:
	json_decref(b);
	json_decref(body);
	json_decref(made);
	store_node_free(from);
	ctl_error_done(&err);
	ctl_state_free(st);
	httpc_free(api);
	return rc;
}

static int cmd_show(const struct cli_command *cmd, int argc, char **argv)
{
	const char *state_dir = CTL_DEFAULT_STATE_DIR;
	struct ctl_state *st = NULL;
	struct ctl_error err;
	bool json = false, list = strcmp(cmd->name, "bench list") == 0;
	json_t *doc = NULL, *b;
	size_t i;
	int r, rc = 1;

	if ((r = cli_simple_opts(cmd, argc, argv, &state_dir, &json, NULL, NULL, list ? 0 : 1)) !=
	    0)
		return r;
	ctl_error_init(&err);
	if (cli_open_state(state_dir, false, &st) < 0)
		return 1;
	r = list ? ctl_bench_list(st->store, 50, &doc, &err)
		 : ctl_bench_get(st->store, argv[optind], &doc, &err);
	if (r < 0) {
		cli_error(&err);
		goto out;
	}
	if (!list) {
		print_run(stdout, doc, json);
	} else if (json) {
		cli_print_json(stdout, doc);
	} else {
		json_array_foreach(doc, i, b)
		{
			const char *error = JSTR(b, "error");

			util_fprintf_safe(stdout, "%-11s %-4s %-6s %-16s %-16s %-12s %s\n",
					  JSTR(b, "id"), JSTR(b, "kind"), JSTR(b, "transport"),
					  JSTR(b, "client_node"), JSTR(b, "server_node"),
					  JSTR(b, "state"), error ? error : "");
		}
	}
	rc = 0;
out:
	json_decref(doc);
	ctl_error_done(&err);
	ctl_state_free(st);
	return rc;
}

static int cmd_cancel(const struct cli_command *cmd, int argc, char **argv)
{
	const char *state_dir = CTL_DEFAULT_STATE_DIR, *id;
	struct ctl_state *st = NULL;
	struct httpc *api = NULL;
	struct ctl_error err;
	bool no_wait = false;
	json_t *b = NULL;
	int r, rc = 1;

	if ((r = cli_simple_opts(cmd, argc, argv, &state_dir, NULL, NULL, &no_wait, 1)) != 0)
		return r;
	id = argv[optind];
	ctl_error_init(&err);
	if (cli_api_need("bench cancel", state_dir, &api) != 0 ||
	    cli_open_state(state_dir, false, &st) < 0)
		goto out;
	if (cancel_run(api, st->store, id) <= 0)
		goto out;
	if (no_wait) {
		util_fprintf_safe(stdout, "bench %s: cancel requested\n", id);
		rc = 0;
		goto out;
	}
	if (follow(st->store, api, id, util_now_mono_ms() + CANCEL_WAIT_MS, false, &b) < 0)
		goto out;
	if (strcmp(JSTR(b, "state"), "cancelled") == 0) {
		util_fprintf_safe(stdout, "bench %s: cancelled\n", id);
		rc = 0;
	} else if (run_final(b)) {
		util_fprintf_safe(stdout, "bench %s: ended %s before the cancel took effect\n", id,
				  JSTR(b, "state"));
	} else {
		util_fprintf_safe(
			stdout,
			"bench %s: cancel requested; no serving controller carried it out "
			"within %d s (it will when one serves)\n",
			id, CANCEL_WAIT_MS / 1000);
	}
out:
	json_decref(b);
	ctl_error_done(&err);
	ctl_state_free(st);
	httpc_free(api);
	return rc;
}

const struct cli_command cli_bench_commands[] = {
	{"bench run",
	 "--from NODE --to NODE --kind lat|bw [--transport tcp|verbs]\n"
	 "        [--op send|write|read] [--size N] [--iters N] [--duration S] [--qps N]\n"
	 "        [--sweep] [--bidir] [--check-data] [--rdma-cm] [--device DEV]\n"
	 "        [--gid-index N] [--ib-port N] [--tclass N] [--sl N]\n"
	 "        [--server-address HOST] [--timeout 60s] [--no-wait] [--json] [--state-dir D]",
	 "run a benchmark between two nodes (Ctrl-C while it waits cancels it)", cmd_run},
	{"bench list", "[--json] [--state-dir D]", "list recent benchmark runs", cmd_show},
	{"bench show", "ID [--json] [--state-dir D]", "show one benchmark run and its result",
	 cmd_show},
	{"bench cancel", "ID [--no-wait] [--state-dir D]", "cancel a benchmark run", cmd_cancel},
	{0},
};
