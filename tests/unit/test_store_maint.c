/* Unit tests of the store's maintenances (controller/store/store_maint.c): a maintenance stored
 * whole or not at all, one per cluster at a time, and its transitions: a node moves only from
 * the state the pass saw, so a transition replayed after a crash moves nothing and writes no
 * second drain or resume row to the workload manager's ledger; an ended maintenance takes
 * nothing; a stop skips the later batches and their waiting nodes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util/error.h"
#include "controller/store/store.h"
#include "controller/store/store_maint.h"
#include "controller/store/store_wlm.h"

#define T0 1700000000000LL

struct fx {
	char dir[64], path[96];
	struct store *s;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "/tmp/ry-maint-XXXXXX");
	if (!f || !mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/c.db", f->dir);
	if (store_open(f->path, &f->s) < 0 || store_cluster_ensure(f->s, "c1", T0) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char p[128];

	store_free(f->s);
	snprintf(p, sizeof(p), "%s-wal", f->path);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", f->path);
	unlink(p);
	unlink(f->path);
	rmdir(f->dir);
	free(f);
	return 0;
}

static const struct store_maint_target NODES[] = {
	{"n1", "node1", 0}, {"n2", "node2", 0}, {"n3", "node3", 1}, {"n4", "node4", 1}};

static void create(struct store *s, const char *id, int expect)
{
	struct store_maint_new n = {.id = id,
				    .cluster = "c1",
				    .actor = "admin",
				    .mode = "deploy",
				    .playbook = "name: x\n",
				    .batch = "2",
				    .batch_size = 2,
				    .min_in_service = 0.5,
				    .job_timeout_ms = 60000};

	assert_int_equal(store_maint_create(s, &n, NODES, 4, 2, T0), expect);
}

static size_t ledger_rows(struct store *s, const char *action)
{
	struct store_wlm_action *v = NULL;
	size_t n = 0, k = 0;

	assert_int_equal(store_wlm_actions(s, "c1", NULL, 0, &v, &n), 0);
	for (size_t i = 0; i < n; i++)
		k += strcmp(v[i].action, action) == 0 && strcmp(v[i].source, "maintenance") == 0;
	store_wlm_actions_free(v, n);
	return k;
}

static const char *node_state(struct store *s, const char *id, const char *node)
{
	static char buf[32];
	struct store_maint_node *d = NULL;
	size_t n = 0;

	buf[0] = '\0';
	assert_int_equal(store_maint_nodes(s, id, &d, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (strcmp(d[i].node_id, node) == 0)
			snprintf(buf, sizeof(buf), "%s", d[i].state);
	store_maint_nodes_free(d, n);
	return buf;
}

static void test_create_whole_or_nothing(void **state)
{
	struct fx *f = *state;
	struct store_maint_new bad = {.id = "m0",
				      .cluster = "c1",
				      .actor = "a",
				      .mode = "deploy",
				      .playbook = "x",
				      .batch = "2",
				      .batch_size = 0};
	struct store_maint_new unknown = bad;
	struct store_maint **v = NULL;
	struct store_maint_batch *b = NULL;
	size_t n = 0;

	assert_int_equal(store_maint_create(f->s, &bad, NODES, 4, 2, T0), -EINVAL);
	unknown.batch_size = 2;
	unknown.cluster = "nope";
	assert_int_equal(store_maint_create(f->s, &unknown, NODES, 4, 2, T0), -RY_E_NOT_FOUND);
	assert_int_equal(store_maints_list(f->s, false, 0, &v, &n), 0);
	assert_int_equal(n, 0);
	store_maints_free(v, n);
	create(f->s, "m1", 0);
	/* One maintenance of a cluster at a time. */
	create(f->s, "m2", -RY_E_EXISTS);
	assert_int_equal(store_maint_batches(f->s, "m1", &b, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(b[1].state, "waiting");
	store_maint_batches_free(b, n);
	assert_string_equal(node_state(f->s, "m1", "n3"), "waiting");
}

static void test_moves_once_with_ledger(void **state)
{
	struct fx *f = *state;
	struct store_maint_move mv[2] = {
		{.node_id = "n1",
		 .hostname = "node1",
		 .from = "waiting",
		 .to = "draining",
		 .wlm = STORE_MAINT_WLM_DRAIN,
		 .wlm_reason = "batch 0"},
		{.node_id = "n2",
		 .hostname = "node2",
		 .from = "waiting",
		 .to = "draining",
		 .wlm = STORE_MAINT_WLM_DRAIN,
		 .wlm_reason = "batch 0"},
	};
	struct store_maint_step st = {.id = "m1",
				      .cluster = "c1",
				      .state = "running",
				      .current_batch = -1,
				      .batch = 0,
				      .batch_state = "draining",
				      .moves = mv,
				      .n_moves = 2};
	struct store_maint *m = NULL;

	assert_int_equal(
		store_wlm_binding_put(f->s, "c1",
				      "{\"kind\":\"slurm\",\"node_map\":{},\"timeout_s\":30}",
				      "admin", T0),
		0);
	create(f->s, "m1", 0);
	assert_int_equal(store_maint_apply(f->s, &st, T0 + 1), 1);
	assert_true(mv[0].moved && mv[1].moved);
	assert_int_equal(ledger_rows(f->s, "drain"), 2);
	assert_string_equal(node_state(f->s, "m1", "n1"), "draining");
	assert_int_equal(store_maint_get(f->s, "m1", &m), 0);
	assert_string_equal(m->state, "running");
	assert_int_equal(m->started_at_ms, T0 + 1);
	store_maint_free(m);

	/* Replayed (a controller killed after the commit, before it knew): nothing moves, no
	 * second drain. */
	assert_int_equal(store_maint_apply(f->s, &st, T0 + 2), 1);
	assert_false(mv[0].moved || mv[1].moved);
	assert_int_equal(ledger_rows(f->s, "drain"), 2);

	/* Jobs seen: the node waits, no ledger row (wlm none). */
	{
		struct store_maint_move w = {.node_id = "n2",
					     .hostname = "node2",
					     .from = "draining",
					     .to = "waiting_for_jobs",
					     .jobs = "17"};
		struct store_maint_step s2 = {.id = "m1",
					      .cluster = "c1",
					      .current_batch = -1,
					      .batch = -1,
					      .moves = &w,
					      .n_moves = 1};

		assert_int_equal(store_maint_apply(f->s, &s2, T0 + 3), 1);
		assert_true(w.moved);
		assert_string_equal(node_state(f->s, "m1", "n2"), "waiting_for_jobs");
		assert_int_equal(ledger_rows(f->s, "drain"), 2);
	}

	/* Resumed once. */
	{
		struct store_maint_move r = {.node_id = "n1",
					     .hostname = "node1",
					     .from = "draining",
					     .to = "resumed",
					     .wlm = STORE_MAINT_WLM_RESUME};
		struct store_maint_step s3 = {.id = "m1",
					      .cluster = "c1",
					      .current_batch = -1,
					      .batch = -1,
					      .moves = &r,
					      .n_moves = 1};

		assert_int_equal(store_maint_apply(f->s, &s3, T0 + 4), 1);
		assert_true(r.moved);
		assert_int_equal(store_maint_apply(f->s, &s3, T0 + 5), 1);
		assert_false(r.moved);
		assert_int_equal(ledger_rows(f->s, "resume"), 1);
	}
}

static void test_stop_skips_and_ends(void **state)
{
	struct fx *f = *state;
	struct store_maint_move h = {.node_id = "n1",
				     .hostname = "node1",
				     .to = "held_out",
				     .reason = "railyard: maintenance m1: deployment d-1 failed",
				     .wlm = STORE_MAINT_WLM_DRAIN,
				     .wlm_reason = "deployment d-1 failed"};
	struct store_maint_step st = {.id = "m1",
				      .cluster = "c1",
				      .state = "failed",
				      .reason = "batch 0: 1 node(s) held out",
				      .current_batch = -1,
				      .batch = 0,
				      .batch_state = "failed",
				      .skip_later = true,
				      .moves = &h,
				      .n_moves = 1};
	struct store_maint_batch *b = NULL;
	struct store_maint *m = NULL;
	size_t n = 0;

	create(f->s, "m1", 0);
	assert_int_equal(store_maint_apply(f->s, &st, T0 + 9), 1);
	assert_true(h.moved);
	assert_string_equal(node_state(f->s, "m1", "n1"), "held_out");
	assert_string_equal(node_state(f->s, "m1", "n2"), "waiting"); /* its own batch: as it was */
	assert_string_equal(node_state(f->s, "m1", "n3"), "skipped");
	assert_int_equal(store_maint_batches(f->s, "m1", &b, &n), 0);
	assert_string_equal(b[0].state, "failed");
	assert_string_equal(b[1].state, "skipped");
	store_maint_batches_free(b, n);
	assert_int_equal(store_maint_get(f->s, "m1", &m), 0);
	assert_string_equal(m->state, "failed");
	assert_int_equal(m->finished_at_ms, T0 + 9);
	store_maint_free(m);
	/* Ended: takes nothing more, and a new one of the cluster may start. */
	h.to = "resumed";
	h.wlm = STORE_MAINT_WLM_RESUME;
	st.state = NULL;
	st.skip_later = false;
	assert_int_equal(store_maint_apply(f->s, &st, T0 + 10), 0);
	assert_false(h.moved);
	assert_string_equal(node_state(f->s, "m1", "n1"), "held_out");
	create(f->s, "m2", 0);
	assert_int_equal(store_maint_request_cancel(f->s, "m1", "admin", T0 + 11), 0);
	assert_int_equal(store_maint_request_cancel(f->s, "m2", "admin", T0 + 11), 1);
	assert_int_equal(store_maint_request_cancel(f->s, "m9", "admin", T0 + 11), -RY_E_NOT_FOUND);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_whole_or_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_moves_once_with_ledger, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_skips_and_ends, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
