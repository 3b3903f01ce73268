/* Unit tests of the agent's benchmark job layer (nodeagent/benchjob) over tcp on 127.0.0.1:
 * a loopback run (one bench id, this agent both server and client) reports two results, one per
 * role, each with its port counter deltas; a re-sent order is ignored per (id, role); a Cancel
 * stops both sides; AGENT_BENCH_MAX sides run at once; GPU checks and GPU memory orders on the
 * libcuda double (when CTest gives its seam). Messages are read back from an in-memory
 * outbox the way the session reads them (outbox_flush), waiting with deadlines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/util/fs.h"
#include "common/util/util.h"
#include "nodeagent/benchjob.h"
#include "nodeagent/outbox.h"
#include "railyard/v1/railyard.pb-c.h"

#define WAIT_MS 20000 /* generous: sanitizers and valgrind slow the runs down */

/* A message read back from the outbox. */
struct msg {
	bool result; /* BenchResult, else BenchReady */
	char id[65], role[16];
	bool ok;
	uint32_t port;
	json_t *doc; /* BenchResult's result_json */
};

struct fx {
	char root[256];
	struct outbox *ob;
	struct agent_bench *b;
	int64_t seq;
	struct msg msgs[64];
	size_t n;
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");
	char err[256], path[400];
	FILE *fp;

	if (!f)
		return -1;
	snprintf(f->root, sizeof(f->root), "%s/ry-benchjob-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(f->root))
		return -1;
	/* A sysroot with one port, so that every result has a port to report. */
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/rxe0/ports/1/hw_counters", f->root);
	if (fs_mkdir_p(path, 0755) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/rxe0/ports/1/hw_counters/rdma_sends",
		 f->root);
	fp = fopen(path, "w");
	if (!fp || fputs("42\n", fp) < 0 || fclose(fp) != 0)
		return -1;
	if (outbox_open(NULL, 0, &f->ob, NULL, err, sizeof(err)) < 0)
		return -1;
	if (agent_bench_new(f->ob, f->root, 0, 0, &f->b) < 0)
		return -1;
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	char cmd[300];

	agent_bench_free(f->b);
	outbox_free(f->ob);
	for (size_t i = 0; i < f->n; i++)
		json_decref(f->msgs[i].doc);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

static int64_t record(void *ud, Railyard__V1__AgentMessage *m)
{
	struct fx *f = ud;
	struct msg *c;

	assert_true(f->n < sizeof(f->msgs) / sizeof(f->msgs[0]));
	c = &f->msgs[f->n++];
	memset(c, 0, sizeof(*c));
	if (m->body_case == RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_READY) {
		snprintf(c->id, sizeof(c->id), "%s", m->bench_ready->bench_id);
		c->port = m->bench_ready->port;
	} else {
		assert_int_equal(m->body_case, RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_RESULT);
		c->result = true;
		snprintf(c->id, sizeof(c->id), "%s", m->bench_result->bench_id);
		snprintf(c->role, sizeof(c->role), "%s", m->bench_result->role);
		c->ok = m->bench_result->ok;
		c->doc = json_loads(m->bench_result->result_json, 0, NULL);
		assert_non_null(c->doc);
	}
	return ++f->seq;
}

static size_t count(const struct fx *f, bool result, const char *id)
{
	size_t n = 0;

	for (size_t i = 0; i < f->n; i++)
		n += f->msgs[i].result == result && strcmp(f->msgs[i].id, id) == 0;
	return n;
}

/* Read the outbox until it holds want messages of the kind for id, or fail at the deadline. */
static void wait_for(struct fx *f, bool result, const char *id, size_t want)
{
	int64_t deadline = util_now_mono_ms() + WAIT_MS;

	for (;;) {
		outbox_flush(f->ob, record, f);
		outbox_acked(f->ob, (uint64_t)f->seq);
		if (count(f, result, id) >= want)
			return;
		if (util_now_mono_ms() >= deadline)
			fail_msg("bench %s: %zu of %zu %s within %d ms", id, count(f, result, id),
				 want, result ? "results" : "BenchReady", WAIT_MS);
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
}

static const struct msg *find(const struct fx *f, bool result, const char *id, const char *role)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->msgs[i].result == result && strcmp(f->msgs[i].id, id) == 0 &&
		    (!role || strcmp(f->msgs[i].role, role) == 0))
			return &f->msgs[i];
	return NULL;
}

static int submit(struct fx *f, const char *id, const char *role, const char *peer)
{
	Railyard__V1__RunBench rb = RAILYARD__V1__RUN_BENCH__INIT;

	rb.bench_id = (char *)id;
	rb.role = (char *)role;
	rb.peer = (char *)peer;
	rb.params_json = (char *)"{\"kind\":\"lat\",\"transport\":\"tcp\",\"iters\":100}";
	rb.deadline_ms = 60000;
	return agent_bench_submit(f->b, &rb);
}

/* The result of role: the document agrees with the message, and its counters cover the
 * sysroot's one port (tcp: every port), which did not move. */
static void check_result(const struct fx *f, const char *id, const char *role, bool ok)
{
	const struct msg *m = find(f, true, id, role);
	json_t *counters, *want;

	assert_non_null(m);
	if (m->ok != ok) {
		char *text = json_dumps(m->doc, JSON_COMPACT);

		print_error("%s result: %s\n", role, text ? text : "?");
		free(text);
	}
	assert_int_equal(m->ok, ok);
	assert_int_equal(json_is_true(json_object_get(m->doc, "ok")), ok);
	assert_string_equal(json_string_value(json_object_get(m->doc, "role")), role);
	counters = json_object_get(m->doc, "counters");
	assert_non_null(counters);
	want = json_loads(
		"{\"ports\":[{\"device\":\"rxe0\",\"port\":1,\"delta\":{\"rdma_sends\":0}}],"
		"\"sampled\":true}",
		0, NULL);
	assert_true(json_equal(counters, want));
	json_decref(want);
}

/* One bench id, both sides on this agent: two results, one per role. */
static void test_loopback(void **state)
{
	struct fx *f = *state;
	const struct msg *ready;
	char peer[64];

	assert_int_equal(submit(f, "b-loop", "server", ""), 0);
	wait_for(f, false, "b-loop", 1);
	ready = find(f, false, "b-loop", NULL);
	assert_true(ready->port > 0 && ready->port <= 65535);
	snprintf(peer, sizeof(peer), "127.0.0.1:%u", ready->port);
	/* The same id again, other role: a side of its own. */
	assert_int_equal(submit(f, "b-loop", "client", peer), 0);
	/* The same (id, role) again: ignored, whether it runs or ran. */
	assert_int_equal(submit(f, "b-loop", "server", ""), 1);
	assert_int_equal(submit(f, "b-loop", "client", peer), 1);

	wait_for(f, true, "b-loop", 2);
	check_result(f, "b-loop", "server", true);
	check_result(f, "b-loop", "client", true);
	/* Finished: nothing to cancel, and still nothing runs again. */
	assert_int_equal(agent_bench_cancel(f->b, "b-loop"), 0);
	assert_int_equal(submit(f, "b-loop", "client", peer), 1);
	assert_int_equal(count(f, false, "b-loop"), 1);
	assert_int_equal(count(f, true, "b-loop"), 2);
}

/* A Cancel of a loopback run stops both sides: the server waiting for its client, and the
 * client knocking at a port that refuses (bound, not listening) until its 10 s timeout. */
static void test_cancel_both(void **state)
{
	struct fx *f = *state;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	char peer[64];
	int fd;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	snprintf(peer, sizeof(peer), "127.0.0.1:%u", ntohs(sa.sin_port));

	assert_int_equal(submit(f, "b-cancel", "server", ""), 0);
	wait_for(f, false, "b-cancel", 1);
	assert_int_equal(submit(f, "b-cancel", "client", peer), 0);
	assert_true(agent_bench_busy(f->b));
	assert_int_equal(agent_bench_cancel(f->b, "b-cancel"), 1);
	wait_for(f, true, "b-cancel", 2);
	check_result(f, "b-cancel", "server", false);
	check_result(f, "b-cancel", "client", false);
	assert_non_null(
		strstr(json_string_value(json_object_get(
			       json_object_get(find(f, true, "b-cancel", "client")->doc, "error"),
			       "message")),
		       "cancel"));
	close(fd);
}

/* AGENT_BENCH_MAX sides at once (servers, each on a port of its own), one more is refused. */
static void test_capacity(void **state)
{
	struct fx *f = *state;
	char id[32];

	for (int i = 0; i < AGENT_BENCH_MAX; i++) {
		snprintf(id, sizeof(id), "b-cap-%d", i);
		assert_int_equal(submit(f, id, "server", ""), 0);
	}
	for (int i = 0; i < AGENT_BENCH_MAX; i++) {
		snprintf(id, sizeof(id), "b-cap-%d", i);
		wait_for(f, false, id, 1);
		for (int j = 0; j < i; j++) {
			char other[32];

			snprintf(other, sizeof(other), "b-cap-%d", j);
			assert_int_not_equal(find(f, false, id, NULL)->port,
					     find(f, false, other, NULL)->port);
		}
	}
	assert_int_equal(submit(f, "b-cap-more", "server", ""), -EBUSY);
	/* Teardown cancels them: agent_bench_free() waits for every side. */
}

static int submit_params(struct fx *f, const char *id, const char *role, const char *params)
{
	Railyard__V1__RunBench rb = RAILYARD__V1__RUN_BENCH__INIT;

	rb.bench_id = (char *)id;
	rb.role = (char *)role;
	rb.peer = (char *)"";
	rb.params_json = (char *)params;
	rb.deadline_ms = 60000;
	return agent_bench_submit(f->b, &rb);
}

static const char *error_of(const struct msg *m)
{
	return json_string_value(json_object_get(json_object_get(m->doc, "error"), "message"));
}

/* GPU orders (CTest runs this with the libcuda double, one GPU): a GPU check is one side, its
 * document the result; GPU memory that is not there is refused with the reason. */
static void test_gpu_orders(void **state)
{
	struct fx *f = *state;
	const struct msg *m;
	const json_t *g;

	if (!getenv("RAILYARD_SEAM_LIBCUDA"))
		skip();
	assert_int_equal(submit_params(f, "b-gpu", "client",
				       "{\"kind\":\"gpu\",\"size\":65536,\"repeats\":2,"
				       "\"h2d_min_gb_s\":0,\"d2h_min_gb_s\":0,\"d2d_min_gb_s\":0}"),
			 0);
	wait_for(f, true, "b-gpu", 1);
	m = find(f, true, "b-gpu", "client");
	assert_true(m->ok);
	assert_string_equal(json_string_value(json_object_get(m->doc, "role")), "client");
	g = json_array_get(json_object_get(m->doc, "gpus"), 0);
	assert_int_equal(
		json_integer_value(json_object_get(
			json_object_get(json_object_get(g, "bandwidth"), "h2d"), "samples")),
		2);
	/* the fixture sysroot has no GPU facts: no check failed, and the health is said to be not
	 * read (a playbook rule `not_read == 0` makes that fail) */
	assert_true(json_is_true(json_object_get(m->doc, "passed")));
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(m->doc, "summary"), "not_read")),
		1);
	assert_int_equal(submit_params(f, "b-gpu-srv", "server", "{\"kind\":\"gpu\"}"), 0);
	wait_for(f, true, "b-gpu-srv", 1);
	m = find(f, true, "b-gpu-srv", NULL);
	assert_false(m->ok);
	assert_non_null(strstr(error_of(m), "runs as the client side"));
	assert_int_equal(submit_params(f, "b-gpu-bad", "client", "{\"kind\":\"gpu\",\"size\":1}"),
			 0);
	wait_for(f, true, "b-gpu-bad", 1);
	assert_false(find(f, true, "b-gpu-bad", NULL)->ok);
	assert_int_equal(
		submit_params(f, "b-nogpu", "server",
			      "{\"kind\":\"lat\",\"transport\":\"tcp\",\"mem\":\"cuda:5\"}"),
		0);
	wait_for(f, true, "b-nogpu", 1);
	m = find(f, true, "b-nogpu", NULL);
	assert_false(m->ok);
	assert_non_null(strstr(error_of(m), "cuda memory: no GPU 5: this host has 1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_loopback, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_cancel_both, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_capacity, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_gpu_orders, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
