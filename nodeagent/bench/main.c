/* railyard-bench: perftest-style latency and bandwidth tests on Railyard's benchmark engine.
 * Thin: parse the command line, run the server or client, print the result. */
#include "nodeagent/bench/bench.h"
#include "nodeagent/bench/cli.h"

#include "common/log/log.h"
#include "common/util/error.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_bool stop;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&stop, true);
}

static void on_ready(void *ud, uint16_t port)
{
	const struct bench_cli *cli = ud;

	if (!cli->json)
		fprintf(stderr, "railyard-bench: waiting for a client on port %u\n", port);
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	char err[BENCH_ERR_LEN] = "";
	struct bench_run_opts opts = {0};
	struct bench_cli cli;
	json_t *doc = NULL;
	int r;

	log_set_ident("railyard-bench");
	if (argc > 1 && strcmp(argv[1], "gpu-info") == 0)
		return bench_cli_gpu_info(argc - 1, argv + 1, stdout);
	r = bench_cli_parse(argc, argv, &cli, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "railyard-bench: %s\n", err);
		if (r == -RY_E_INVALID)
			fprintf(stderr, "try 'railyard-bench --help'\n");
		return 2;
	}
	if (cli.help) {
		bench_cli_usage(stdout);
		return 0;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	opts.cancel = &stop;
	opts.on_ready = on_ready;
	opts.ud = &cli;
	opts.err = err;
	opts.errlen = sizeof(err);
	r = cli.peer ? bench_run_client(&cli.params, cli.peer, &opts, &doc)
		     : bench_run_server(&cli.params, &opts, &doc);
	if (r < 0) {
		fprintf(stderr, "railyard-bench: %s\n", err[0] ? err : ry_strerror(r));
		if (cli.json) {
			doc = bench_result_error(&cli.params,
						 cli.peer ? BENCH_CLIENT : BENCH_SERVER, r, err);
			if (doc)
				json_dumpf(doc, stdout, JSON_INDENT(2));
			fputc('\n', stdout);
			json_decref(doc);
		}
		return 1;
	}
	if (cli.json) {
		json_dumpf(doc, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
	} else {
		bench_cli_print(stdout, doc);
	}
	if (cli.metrics)
		bench_cli_print_metrics(stdout, doc);
	json_decref(doc);
	return 0;
}
