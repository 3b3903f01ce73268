/* Unit tests for whole plans in the apply engine: every step type in one plan on a fixture copy
 * (check mode changes nothing; apply; a second apply changes nothing and says so), a failed step
 * rolled back and stopping the plan, continue_on_error, `when`, escaping paths refused, plan
 * validation, kept backups, step events, and `railyard-agent apply` (apply_cmd). */
#include "nodeagent/apply/apply.h"

#include "common/util/error.h"
#include "nodeagent/facts/facts.h"
#include "tests/unit/test_apply_util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static void prepare_roce(const char *root)
{
	char rel[256];

	tu_write(root, "proc/sys/net/core/rmem_max", "212992\n");
	tu_write(root, "lib/systemd/system/nvidia-persistenced.service", "[Service]\n");
	tu_write(root, "var/lib/dpkg/status", "");
	tu_write(root, "etc/railyard-test/apt-candidates", "rdma-core 44.0-2\n");
	for (int k = 0; k < 2; k++)
		for (int p = 0; p < 8; p++) {
			snprintf(rel, sizeof(rel), "sys/class/net/enp22s0np0/ecn/%s/enable/%d",
				 k ? "roce_rp" : "roce_np", p);
			tu_write(root, rel, "0\n");
		}
}

static json_t *full_plan(void)
{
	json_t *plan = tu_plan();

	tu_plan_add(plan, "hca count", "assert",
		    "{\"that\":[{\"fact\":\"rdma.devices\",\"op\":\"count==\",\"value\":8,"
		    "\"quantifier\":\"all\"}]}",
		    false);
	tu_plan_add(plan, "rdma-core", "package", "{\"name\":\"rdma-core\",\"version\":\">= 44\"}",
		    false);
	tu_plan_add(plan, "peermem", "kmod", "{\"name\":\"nvidia_peermem\",\"persist\":true}",
		    false);
	tu_plan_add(plan, "buffers", "sysctl",
		    "{\"settings\":{\"net.core.rmem_max\":\"268435456\"}}", false);
	tu_plan_add(plan, "topology", "file",
		    "{\"path\":\"/etc/railyard/topo.xml\",\"content\":\"<system/>\\n\"}", false);
	tu_plan_add(plan, "nccl", "nccl", "{\"settings\":{\"NCCL_IB_GID_INDEX\":\"3\"}}", false);
	tu_plan_add(plan, "ucx", "ucx", "{\"settings\":{\"UCX_TLS\":\"rc\"}}", false);
	tu_plan_add(plan, "mpi", "mpi", "{\"settings\":{\"pml\":\"ucx\"}}", false);
	tu_plan_add(
		plan, "persistenced", "service",
		"{\"name\":\"nvidia-persistenced.service\",\"enabled\":true,\"state\":\"started\"}",
		false);
	tu_plan_add(plan, "qos", "roce_qos",
		    "{\"interfaces\":[\"enp22s0np0\"],\"pfc\":[3],\"ecn\":[3]}", false);
	tu_plan_add(plan, "marker", "command",
		    "{\"argv\":[\"sh\",\"-c\",\"mkdir -p $RAILYARD_SYSROOT/var/lib/railyard && "
		    "touch $RAILYARD_SYSROOT/var/lib/railyard/done\"],"
		    "\"creates\":\"/var/lib/railyard/done\"}",
		    false);
	return plan;
}

struct events {
	size_t calls, last_index, total;
	enum apply_status last;
};

static void on_step(const struct apply_step_result *st, size_t index, size_t total, void *u)
{
	struct events *e = u;

	assert_int_equal(index, e->calls);
	e->calls++;
	e->last_index = index;
	e->total = total;
	e->last = st->status;
}

static void test_full_plan_check_apply_idempotent(void **state)
{
	char *root = tu_sysroot("h200-roce");
	json_t *plan = full_plan(), *facts = NULL;
	struct apply_summary s;
	struct events ev = {0};
	uint64_t h0, h1;

	(void)state;
	prepare_roce(root);
	tu_plan_assert_valid(plan);
	assert_int_equal(facts_collect(root, &facts), 0);
	h0 = tu_tree_hash(root);
	/* check mode: every step type answers, nothing changes, no mutating program runs */
	assert_int_equal(apply_plan(plan,
				    &(struct apply_opts){.sysroot = root,
							 .check_mode = true,
							 .facts = facts,
							 .on_step = on_step,
							 .userdata = &ev},
				    &s),
			 0);
	for (size_t i = 0; i < s.n_steps; i++)
		if (s.steps[i].status == APPLY_STATUS_FAILED)
			fail_msg("check %s: %s", s.steps[i].name, s.steps[i].message);
	assert_int_equal(s.n_steps, 11);
	assert_int_equal(s.n_ok, 1); /* the assert */
	assert_int_equal(s.n_changed, 10);
	assert_true(s.check_mode);
	assert_int_equal(ev.calls, 11);
	assert_int_equal(ev.total, 11);
	assert_true(tu_tree_hash(root) == h0);
	assert_false(tu_exists(root, "var/log/railyard-doubles.log"));
	apply_summary_done(&s);

	/* apply */
	assert_int_equal(
		apply_plan(plan, &(struct apply_opts){.sysroot = root, .facts = facts}, &s), 0);
	for (size_t i = 0; i < s.n_steps; i++)
		if (s.steps[i].status == APPLY_STATUS_FAILED)
			fail_msg("apply %s: %s", s.steps[i].name, s.steps[i].message);
	assert_int_equal(s.n_changed, 10);
	assert_false(s.stopped);
	assert_true(tu_exists(root, "var/lib/railyard/done"));
	apply_summary_done(&s);
	h1 = tu_tree_hash(root);
	assert_true(h1 != h0);

	/* a second apply changes nothing, says so, and leaves the tree as it was */
	assert_int_equal(
		apply_plan(plan, &(struct apply_opts){.sysroot = root, .facts = facts}, &s), 0);
	assert_int_equal(s.n_changed, 0);
	assert_int_equal(s.n_ok, 11);
	for (size_t i = 0; i < s.n_steps; i++)
		assert_string_equal(s.steps[i].diff, "");
	assert_string_equal(s.steps[5].message, "already in the desired state");
	apply_summary_done(&s);
	assert_true(tu_tree_hash(root) == h1);
	json_decref(facts);
	json_decref(plan);
	tu_rm(root);
}

static void test_failure_rolls_back_and_stops(void **state)
{
	char *root = tu_sysroot("h200-roce");
	struct apply_summary s;
	json_t *plan;

	(void)state;
	tu_write(root, "etc/railyard-test/modprobe-fail", "nvidia_fs\n");
	tu_write(root, "etc/nccl.conf", "NCCL_DEBUG=WARN\n");
	for (int coe = 0; coe < 2; coe++) {
		plan = tu_plan();
		tu_plan_add(plan, "nccl", "nccl", "{\"settings\":{\"NCCL_IB_HCA\":\"mlx5\"}}",
			    false);
		tu_plan_add(plan, "gds", "kmod",
			    "{\"name\":\"nvidia_fs\",\"options\":{\"x\":\"1\"},\"persist\":true}",
			    coe == 1);
		tu_plan_add(plan, "after", "file", "{\"path\":\"/etc/after\",\"content\":\"x\\n\"}",
			    false);
		assert_int_equal(apply_plan(plan, &(struct apply_opts){.sysroot = root}, &s), 0);
		/* the earlier step's change stays; the failed step's files are restored */
		assert_int_equal(s.steps[0].status, coe ? APPLY_STATUS_OK : APPLY_STATUS_CHANGED);
		assert_int_equal(s.steps[1].status, APPLY_STATUS_FAILED);
		assert_true(s.steps[1].rolled_back);
		assert_false(tu_exists(root, "etc/modprobe.d/railyard-nvidia_fs.conf"));
		assert_false(tu_exists(root, "etc/modules-load.d/railyard-nvidia_fs.conf"));
		assert_int_equal(s.n_failed, 1);
		if (!coe) {
			assert_true(s.stopped);
			assert_int_equal(s.steps[2].status, APPLY_STATUS_SKIPPED);
			assert_string_equal(s.steps[2].message, "not run: step \"gds\" failed");
			assert_false(tu_exists(root, "etc/after"));
		} else {
			assert_false(s.stopped);
			assert_int_equal(s.steps[2].status, APPLY_STATUS_CHANGED);
			assert_true(tu_exists(root, "etc/after"));
		}
		apply_summary_done(&s);
		json_decref(plan);
	}
	{
		char *c = tu_read(root, "etc/nccl.conf");

		assert_string_equal(c, "NCCL_DEBUG=WARN\nNCCL_IB_HCA=mlx5\n");
		free(c);
	}
	tu_rm(root);
}

static void test_verify_failure_rolls_back(void **state)
{
	char *root = tu_sysroot("h200-ib");
	struct apply_summary s;
	json_t *plan = tu_plan();

	(void)state;
	/* modprobe exits 0 but the module does not appear (blacklisted): verify re-reads
	 * proc/modules, fails, and the options file written before is rolled back */
	tu_write(root, "etc/railyard-test/modprobe-noop", "nvidia_peermem2\n");
	tu_write(root, "etc/modprobe.d/railyard-nvidia_peermem2.conf", "options old\n");
	tu_plan_add(plan, "peermem", "kmod",
		    "{\"name\":\"nvidia_peermem2\",\"options\":{\"a\":\"1\"}}", false);
	assert_int_equal(apply_plan(plan, &(struct apply_opts){.sysroot = root}, &s), 0);
	assert_int_equal(s.steps[0].status, APPLY_STATUS_FAILED);
	assert_true(s.steps[0].rolled_back);
	assert_non_null(strstr(s.steps[0].message, "verify: still differs after apply"));
	assert_non_null(strstr(s.steps[0].message, "module nvidia_peermem2: not loaded -> loaded"));
	assert_int_equal(tu_calls(root, "modprobe nvidia_peermem2"), 1);
	{
		char *c = tu_read(root, "etc/modprobe.d/railyard-nvidia_peermem2.conf");

		assert_string_equal(c, "options old\n");
		free(c);
	}
	apply_summary_done(&s);
	json_decref(plan);
	tu_rm(root);
}

static void test_when_and_escape_and_invalid(void **state)
{
	char *root = tu_sysroot("h200-roce"), link[4096];
	json_t *plan = tu_plan(), *facts = NULL, *step;
	struct apply_summary s;
	uint64_t h;

	(void)state;
	assert_int_equal(facts_collect(root, &facts), 0);
	snprintf(link, sizeof(link), "%s/etc/escape", root);
	assert_int_equal(symlink("../../../../../../../../../tmp", link), 0);
	tu_plan_add(plan, "escape", "nccl",
		    "{\"settings\":{\"A\":\"1\"},\"path\":\"/etc/escape/railyard-escape.conf\"}",
		    true);
	tu_plan_add(plan, "ib only", "nccl", "{\"settings\":{\"B\":\"1\"}}", false);
	step = json_array_get(json_object_get(plan, "steps"), 1);
	json_object_set_new(step, "when",
			    json_pack("{s:s, s:s, s:s, s:s}", "fact",
				      "rdma.devices[*].ports[*].link_layer", "op", "==", "value",
				      "InfiniBand", "quantifier", "all"));
	tu_plan_assert_valid(plan);
	h = tu_tree_hash(root);
	assert_int_equal(
		apply_plan(plan, &(struct apply_opts){.sysroot = root, .facts = facts}, &s), 0);
	assert_int_equal(s.steps[0].status, APPLY_STATUS_FAILED);
	assert_non_null(strstr(s.steps[0].message, "path escapes the sysroot"));
	assert_int_equal(access("/tmp/railyard-escape.conf", F_OK), -1);
	assert_int_equal(s.steps[1].status, APPLY_STATUS_SKIPPED);
	assert_true(strncmp(s.steps[1].message, "when: ", 6) == 0);
	assert_int_equal(s.n_failed, 1);
	assert_false(s.stopped);
	apply_summary_done(&s);
	assert_true(tu_tree_hash(root) == h);

	/* plans are network input: validated before anything runs */
	json_object_set_new(plan, "schema", json_integer(99));
	assert_int_equal(apply_plan(plan, &(struct apply_opts){.sysroot = root}, &s),
			 -RY_E_INVALID);
	json_object_set_new(plan, "schema", json_integer(1));
	json_object_set_new(step, "type", json_string("rm-rf"));
	assert_int_equal(apply_plan(plan, &(struct apply_opts){.sysroot = root}, &s),
			 -RY_E_INVALID);
	json_decref(plan);
	json_decref(facts);
	tu_rm(root);
}

static void test_backups_kept_in_state_dir(void **state)
{
	char *root = tu_sysroot("h200-ib"), *statedir = tu_sysroot(""), *bak, path[4200];
	struct apply_summary s;
	json_t *plan = tu_plan(), *js;

	(void)state;
	tu_write(root, "etc/nccl.conf", "NCCL_DEBUG=WARN\n");
	tu_plan_add(plan, "nccl", "nccl", "{\"settings\":{\"NCCL_DEBUG\":\"INFO\"}}", false);
	assert_int_equal(
		apply_plan(plan, &(struct apply_opts){.sysroot = root, .state_dir = statedir}, &s),
		0);
	assert_non_null(s.backup_dir);
	assert_true(strncmp(s.backup_dir, statedir, strlen(statedir)) == 0);
	snprintf(path, sizeof(path), "%s/0-0", s.backup_dir + strlen(statedir));
	bak = tu_read(statedir, path);
	assert_non_null(bak);
	assert_string_equal(bak, "NCCL_DEBUG=WARN\n");
	free(bak);
	js = apply_summary_to_json(&s);
	assert_non_null(js);
	assert_int_equal(json_integer_value(json_object_get(js, "changed")), 1);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(js, "steps"), 0), "status")),
			    "changed");
	json_decref(js);
	apply_summary_done(&s);
	apply_summary_done(&s);
	apply_summary_done(NULL);
	json_decref(plan);
	tu_rm(statedir);
	tu_rm(root);
}

struct stop_at {
	size_t at, calls, events;
	size_t first_event;
};

static bool stop_before(size_t index, void *ud)
{
	struct stop_at *c = ud;

	c->calls++;
	return index != c->at;
}

static void count_event(const struct apply_step_result *r, size_t index, size_t total, void *ud)
{
	struct stop_at *c = ud;

	if (c->events++ == 0)
		c->first_event = index;
}

/* A plan stopped before a step (the agent stopping) and resumed there later: every step runs
 * once, the summary counts the earlier outcomes, events come only for the steps run now. */
static void test_stop_and_resume(void **state)
{
	char *root = tu_sysroot("h200-ib");
	struct stop_at c = {.at = 2};
	struct apply_summary s, s2;
	struct apply_step_result prior[2];
	json_t *plan = tu_plan();

	(void)state;
	for (int i = 0; i < 4; i++) {
		char name[16], params[128];

		snprintf(name, sizeof(name), "f%d", i);
		snprintf(params, sizeof(params),
			 "{\"path\":\"/etc/ry-resume/f%d\",\"content\":\"%d\\n\"}", i, i);
		tu_plan_add(plan, name, "file", params, false);
	}
	assert_int_equal(apply_plan(plan,
				    &(struct apply_opts){.sysroot = root,
							 .before_step = stop_before,
							 .on_step = count_event,
							 .userdata = &c},
				    &s),
			 0);
	assert_true(s.interrupted);
	assert_int_equal(s.n_done, 2);
	assert_int_equal(s.n_changed, 2);
	assert_int_equal(c.events, 2);
	assert_true(tu_exists(root, "etc/ry-resume/f1"));
	assert_false(tu_exists(root, "etc/ry-resume/f2"));

	/* Resume at step 2 with the outcomes of steps 0 and 1. */
	for (int i = 0; i < 2; i++)
		prior[i] = (struct apply_step_result){
			.status = s.steps[i].status, .diff = s.steps[i].diff, .message = "earlier"};
	c = (struct stop_at){.at = 99};
	assert_int_equal(apply_plan(plan,
				    &(struct apply_opts){.sysroot = root,
							 .before_step = stop_before,
							 .on_step = count_event,
							 .userdata = &c,
							 .resume_from = 2,
							 .prior = prior},
				    &s2),
			 0);
	assert_false(s2.interrupted);
	assert_int_equal(s2.n_done, 4);
	assert_int_equal(s2.n_changed, 4);
	assert_int_equal(c.calls, 2);	    /* only the steps run now */
	assert_int_equal(c.first_event, 2); /* events for those only */
	assert_string_equal(s2.steps[0].message, "earlier");
	assert_string_equal(s2.steps[0].name, "f0");
	assert_true(tu_exists(root, "etc/ry-resume/f3"));
	apply_summary_done(&s);
	apply_summary_done(&s2);
	json_decref(plan);
	tu_rm(root);
}

/* A run that changes nothing leaves no backup directory; old ones are pruned. */
static void test_backups_pruned(void **state)
{
	char *root = tu_sysroot("h200-ib"), *statedir = tu_sysroot("");
	struct apply_summary s;
	json_t *plan = tu_plan();
	char content[64], path[4200], params[128];

	(void)state;
	tu_plan_add(plan, "nccl", "file", "{\"path\":\"/etc/ry-prune\",\"content\":\"x\\n\"}",
		    false);
	for (int i = 0; i < 2; i++) { /* the second run has nothing to do */
		assert_int_equal(
			apply_plan(plan,
				   &(struct apply_opts){.sysroot = root, .state_dir = statedir},
				   &s),
			0);
		apply_summary_done(&s);
	}
	snprintf(path, sizeof(path), "%s/backups", statedir);
	/* A new file backs nothing up either: no run directory at all. */
	assert_int_equal(rmdir(path), 0);
	json_decref(plan);
	for (int i = 0; i < 6; i++) {
		plan = tu_plan();
		snprintf(content, sizeof(content), "v%d\\n", i);
		snprintf(params, sizeof(params), "{\"path\":\"/etc/ry-prune\",\"content\":\"%s\"}",
			 content);
		tu_plan_add(plan, "f", "file", params, false);
		assert_int_equal(
			apply_plan(plan,
				   &(struct apply_opts){.sysroot = root, .state_dir = statedir},
				   &s),
			0);
		assert_non_null(s.backup_dir);
		apply_summary_done(&s);
		json_decref(plan);
		usleep(2000); /* run directories are named by the millisecond */
	}
	assert_int_equal(apply_backups_prune(statedir, 4), 2);
	assert_int_equal(apply_backups_prune(statedir, 4), 0);
	tu_rm(statedir);
	tu_rm(root);
}

static char *run_cmd(const char *pb, const char *root, bool check, bool json, int *ret_code)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	*ret_code = apply_cmd(pb, root, check, json, f);
	fclose(f);
	return buf;
}

static void test_apply_cmd(void **state)
{
	char *root = tu_sysroot("h200-ib"), pb[4200], *out;
	json_error_t err;
	json_t *doc;
	int code;

	(void)state;
	snprintf(pb, sizeof(pb), "%s/pb.yaml", root);
	tu_write(root, "pb.yaml",
		 "name: test\nversion: 1\nsteps:\n"
		 "  - name: hcas\n    type: assert\n    params:\n      that:\n"
		 "        - fact: rdma.devices\n          op: count==\n          value: 8\n"
		 "  - name: nccl\n    type: nccl\n    params:\n      settings:\n"
		 "        NCCL_IB_HCA: ${facts.rdma.devices[0].name}\n");
	out = run_cmd(pb, root, true, false, &code);
	if (code != 0)
		fail_msg("%s", out);
	assert_non_null(strstr(out, "(check mode: nothing is changed)"));
	assert_non_null(strstr(out, "[changed] nccl (nccl, "));
	assert_non_null(strstr(out, "    +NCCL_IB_HCA=mlx5_0\n"));
	assert_non_null(strstr(out, "ok=1 changed=1 failed=0 skipped=0\n"));
	assert_false(tu_exists(root, "etc/nccl.conf"));
	free(out);
	out = run_cmd(pb, root, false, false, &code);
	assert_int_equal(code, 0);
	free(out);
	out = run_cmd(pb, root, false, true, &code);
	assert_int_equal(code, 0);
	doc = json_loads(out, 0, &err);
	if (!doc)
		fail_msg("%s: %s", err.text, out);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(doc, "playbook"), "name")),
		"test");
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(doc, "summary"), "changed")), 0);
	json_decref(doc);
	free(out);
	/* a failing assert: exit 1; a broken playbook: exit 2 with FILE:LINE:COL */
	tu_write(root, "pb.yaml",
		 "name: test\nversion: 1\nsteps:\n"
		 "  - name: hcas\n    type: assert\n    params:\n      that:\n"
		 "        - fact: rdma.devices\n          op: count==\n          value: 9\n");
	out = run_cmd(pb, root, true, false, &code);
	assert_int_equal(code, 1);
	assert_non_null(strstr(out, "[failed ] hcas"));
	free(out);
	tu_write(root, "pb.yaml", "name: test\nsteps: [\n");
	out = run_cmd(pb, root, true, false, &code);
	assert_int_equal(code, 2);
	assert_non_null(strstr(out, "pb.yaml:"));
	free(out);
	tu_rm(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_plan_check_apply_idempotent),
		cmocka_unit_test(test_failure_rolls_back_and_stops),
		cmocka_unit_test(test_verify_failure_rolls_back),
		cmocka_unit_test(test_when_and_escape_and_invalid),
		cmocka_unit_test(test_backups_kept_in_state_dir),
		cmocka_unit_test(test_stop_and_resume),
		cmocka_unit_test(test_backups_pruned),
		cmocka_unit_test(test_apply_cmd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
