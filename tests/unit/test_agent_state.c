/* Unit tests of the agent's durable state: the outbox (persisted, bounded by bytes, waits for
 * room, drops only what was acknowledged, survives a torn last record) and the plan journals
 * (what a restarted agent reads back: not started, between steps, inside a step, done). Each
 * test works in its own temporary directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util/error.h"
#include "common/util/util.h"
#include "nodeagent/journal.h"
#include "nodeagent/outbox.h"
#include "railyard/v1/railyard.pb-c.h"

struct fx {
	char dir[256];
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	snprintf(f->dir, sizeof(f->dir), "%s/ry-agent-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(f->dir))
		return -1;
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

/* A StepEvent with index i and a diff of diff_len bytes. */
static int push_step(struct outbox *ob, uint32_t i, size_t diff_len)
{
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__StepEvent se = RAILYARD__V1__STEP_EVENT__INIT;
	char *diff = malloc(diff_len + 1);
	int r;

	memset(diff, 'x', diff_len);
	diff[diff_len] = '\0';
	se.deployment_id = "d-1";
	se.index = i;
	se.name = "s";
	se.status = "ok";
	se.diff = diff;
	se.message = "";
	m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_STEP_EVENT;
	m.step_event = &se;
	r = outbox_push(ob, &m);
	free(diff);
	return r;
}

struct sent {
	int64_t next_seq;
	uint32_t idx[64];
	size_t n;
};

static int64_t record_send(void *ud, Railyard__V1__AgentMessage *m)
{
	struct sent *s = ud;

	s->idx[s->n++] = m->step_event->index;
	return ++s->next_seq;
}

static size_t outbox_count(struct outbox *ob)
{
	size_t n = 0;

	outbox_stats(ob, &n, NULL);
	return n;
}

/* Pushed messages survive a restart; acknowledged ones do not come back. */
static void test_outbox_persists(void **state)
{
	struct fx *f = *state;
	struct outbox *ob = NULL;
	struct sent s = {0};
	size_t torn = 99;
	char err[256];
	struct stat st;
	char path[300];

	assert_int_equal(outbox_open(f->dir, 0, &ob, &torn, err, sizeof(err)), 0);
	assert_int_equal(torn, 0);
	for (uint32_t i = 0; i < 5; i++)
		assert_int_equal(push_step(ob, i, 100), 0);
	outbox_flush(ob, record_send, &s);
	assert_int_equal(s.n, 5);
	outbox_acked(ob, 2); /* the first two were committed */
	assert_int_equal(outbox_count(ob), 3);
	outbox_free(ob); /* the agent dies here */

	assert_int_equal(outbox_open(f->dir, 0, &ob, &torn, err, sizeof(err)), 0);
	/* Acknowledgements are not journaled: all five come back, in order, and the controller
	 * takes the two it has as re-sends. What matters: nothing unacknowledged is lost. */
	assert_true(outbox_count(ob) >= 3);
	memset(&s, 0, sizeof(s));
	outbox_flush(ob, record_send, &s);
	assert_int_equal(s.idx[s.n - 1], 4);
	assert_int_equal(s.idx[s.n - 3], 2);
	outbox_acked(ob, (uint64_t)s.next_seq);
	assert_int_equal(outbox_count(ob), 0);
	/* Everything acknowledged: the file is emptied. */
	snprintf(path, sizeof(path), "%s/%s", f->dir, OUTBOX_FILE);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 0);
	outbox_free(ob);
}

/* A record cut short by a crash is dropped, the ones before it kept. */
static void test_outbox_torn_tail(void **state)
{
	struct fx *f = *state;
	struct outbox *ob = NULL;
	size_t torn = 0;
	char err[256], path[300];
	struct stat st;
	int fd;

	assert_int_equal(outbox_open(f->dir, 0, &ob, &torn, err, sizeof(err)), 0);
	assert_int_equal(push_step(ob, 0, 50), 0);
	assert_int_equal(push_step(ob, 1, 50), 0);
	outbox_free(ob);
	snprintf(path, sizeof(path), "%s/%s", f->dir, OUTBOX_FILE);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(truncate(path, st.st_size - 7), 0); /* half of the last record */
	fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "\xff\xff", 2), 2); /* and garbage after it */
	close(fd);

	assert_int_equal(outbox_open(f->dir, 0, &ob, &torn, err, sizeof(err)), 0);
	assert_true(torn > 0);
	assert_int_equal(outbox_count(ob), 1);
	/* The next push appends after the good part. */
	assert_int_equal(push_step(ob, 2, 50), 0);
	outbox_free(ob);
	assert_int_equal(outbox_open(f->dir, 0, &ob, &torn, err, sizeof(err)), 0);
	assert_int_equal(torn, 0);
	assert_int_equal(outbox_count(ob), 2);
	outbox_free(ob);
}

struct pusher {
	struct outbox *ob;
	int pushed, result;
};

static void *push_ten(void *arg)
{
	struct pusher *p = arg;

	for (uint32_t i = 0; i < 10; i++) {
		p->result = push_step(p->ob, i, 1000);
		if (p->result < 0)
			break;
		__atomic_add_fetch(&p->pushed, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static int pushed(struct pusher *p)
{
	return __atomic_load_n(&p->pushed, __ATOMIC_SEQ_CST);
}

/* Wait (with a deadline) until cond(p) holds. */
static bool wait_until(bool (*cond)(struct pusher *p), struct pusher *p)
{
	int64_t deadline = util_now_mono_ms() + 10000;

	while (!cond(p)) {
		if (util_now_mono_ms() > deadline)
			return false;
		usleep(1000);
	}
	return true;
}

static bool three_pushed(struct pusher *p)
{
	return pushed(p) >= 3;
}

static bool ten_pushed(struct pusher *p)
{
	return pushed(p) == 10;
}

static bool stuck_at_three(struct pusher *p)
{
	/* The pusher blocks on the fourth push: the count stays at three for a while. */
	for (int i = 0; i < 50; i++) {
		if (pushed(p) != 3)
			return false;
		usleep(1000);
	}
	return true;
}

/* Full: a push waits for acknowledgements instead of dropping; close() releases it. */
static void test_outbox_back_pressure(void **state)
{
	struct outbox *ob = NULL;
	struct pusher p = {0};
	struct sent s = {0};
	pthread_t t;
	char err[64];

	(void)state;
	/* Room for three 1000-byte messages, not four. */
	assert_int_equal(outbox_open(NULL, 3500, &ob, NULL, err, sizeof(err)), 0);
	p.ob = ob;
	assert_int_equal(pthread_create(&t, NULL, push_ten, &p), 0);
	assert_true(wait_until(three_pushed, &p));
	assert_true(stuck_at_three(&p));
	/* Acknowledge as messages arrive: the pusher gets room each time and finishes. */
	for (int64_t deadline = util_now_mono_ms() + 10000;
	     pushed(&p) < 10 && util_now_mono_ms() < deadline;) {
		outbox_flush(ob, record_send, &s);
		outbox_acked(ob, (uint64_t)s.next_seq);
		usleep(1000);
	}
	assert_true(ten_pushed(&p));
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(p.result, 0);
	outbox_flush(ob, record_send, &s);
	outbox_acked(ob, (uint64_t)s.next_seq);
	assert_int_equal(outbox_count(ob), 0);

	/* Full again, then the agent stops: the waiting push gives up, nothing is half-kept. */
	memset(&p, 0, sizeof(p));
	p.ob = ob;
	assert_int_equal(pthread_create(&t, NULL, push_ten, &p), 0);
	assert_true(wait_until(three_pushed, &p));
	outbox_close(ob);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(p.result, -ECANCELED);
	assert_int_equal(pushed(&p), 3);
	/* A message larger than the whole bound goes in alone once the outbox is empty. */
	outbox_free(ob);
	assert_int_equal(outbox_open(NULL, 3500, &ob, NULL, err, sizeof(err)), 0);
	assert_int_equal(push_step(ob, 0, 8000), 0);
	assert_int_equal(outbox_count(ob), 1);
	outbox_free(ob);
}

/* Welcome.last_agent_seq: what the previous session got committed is dropped, the rest resent. */
static void test_outbox_resume(void **state)
{
	struct outbox *ob = NULL;
	struct sent s = {.next_seq = 100};
	char err[64];

	(void)state;
	assert_int_equal(outbox_open(NULL, 0, &ob, NULL, err, sizeof(err)), 0);
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(push_step(ob, i, 10), 0);
	outbox_flush(ob, record_send, &s); /* seqs 101..104; the session drops */
	outbox_resume(ob, 102);		   /* the controller had committed 101 and 102 */
	assert_int_equal(outbox_count(ob), 2);
	assert_true(outbox_pending(ob));
	memset(&s, 0, sizeof(s));
	outbox_flush(ob, record_send, &s);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.idx[0], 2);
	assert_int_equal(s.idx[1], 3);
	outbox_free(ob);
}

static const char plan3[] = "{\"schema\":1,\"steps\":[{\"name\":\"a\"},{\"name\":\"b\"},{"
			    "\"name\":\"c\"}]}";

/* What each point of a plan's life reads back as after a restart. */
static void test_journal_states(void **state)
{
	struct fx *f = *state;
	struct journal_state st;
	struct journal *j = NULL;

	assert_int_equal(journal_dir_init(f->dir), 0);
	assert_int_equal(journal_exists(f->dir, "d-1"), 0);
	assert_int_equal(journal_create(f->dir, "d-1", true, plan3, &j), 0);
	assert_int_equal(journal_create(f->dir, "d-1", true, plan3, &j), -EEXIST);
	assert_int_equal(journal_exists(f->dir, "d-1"), 1);

	/* Accepted, not started. */
	assert_int_equal(journal_load(f->dir, "d-1", &st), 0);
	assert_true(st.check_mode);
	assert_int_equal(st.n_steps, 3);
	assert_int_equal(st.next, 0);
	assert_int_equal(st.running, -1);
	assert_false(st.done);
	journal_state_done(&st);

	/* Inside step 0: it may have half-run. */
	assert_int_equal(journal_run(j, 0), 0);
	assert_int_equal(journal_load(f->dir, "d-1", &st), 0);
	assert_int_equal(st.running, 0);
	journal_state_done(&st);

	/* Between steps: resume at step 1 with step 0's outcome. */
	assert_int_equal(journal_step(j, 0, "a", "changed", "-x\n+y\n", "done", 12), 0);
	assert_int_equal(journal_load(f->dir, "d-1", &st), 0);
	assert_int_equal(st.running, -1);
	assert_int_equal(st.next, 1);
	assert_true(st.steps[0].recorded);
	assert_string_equal(st.steps[0].status, "changed");
	assert_string_equal(st.steps[0].diff, "-x\n+y\n");
	assert_int_equal(st.steps[0].duration_ms, 12);
	journal_state_done(&st);

	assert_int_equal(journal_run(j, 1), 0);
	assert_int_equal(journal_step(j, 1, "b", "ok", "", "", 1), 0);
	assert_int_equal(journal_step(j, 2, "c", "skipped", "", "when: false", 0), 0);
	assert_int_equal(journal_done(j, "succeeded", ""), 0);
	journal_close(j);
	assert_int_equal(journal_load(f->dir, "d-1", &st), 0);
	assert_true(st.done);
	assert_string_equal(st.done_status, "succeeded");
	assert_int_equal(st.next, 3);
	journal_state_done(&st);

	/* Ids that are no file name. */
	assert_false(journal_id_ok("../x"));
	assert_false(journal_id_ok(".hidden"));
	assert_false(journal_id_ok(""));
	assert_false(journal_id_ok("d 1"));
	assert_true(journal_id_ok("d-0123abcd"));
	assert_int_equal(journal_create(f->dir, "../evil", false, plan3, &j), -RY_E_INVALID);
}

/* A line cut by a crash is ignored and cut off; the file stays appendable. */
static void test_journal_torn(void **state)
{
	struct fx *f = *state;
	struct journal_state st;
	struct journal *j = NULL;
	char path[300];
	int fd;

	assert_int_equal(journal_dir_init(f->dir), 0);
	assert_int_equal(journal_create(f->dir, "d-2", false, plan3, &j), 0);
	assert_int_equal(journal_step(j, 0, "a", "ok", "", "", 1), 0);
	journal_close(j);
	snprintf(path, sizeof(path), "%s/jobs/d-2.log", f->dir);
	fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"run\":1", 8), 8); /* no newline: torn */
	close(fd);
	assert_int_equal(journal_load(f->dir, "d-2", &st), 0);
	assert_int_equal(st.running, -1); /* the torn "run" never happened */
	assert_int_equal(st.next, 1);
	journal_state_done(&st);
	assert_int_equal(journal_open(f->dir, "d-2", &j), 0);
	assert_int_equal(journal_run(j, 1), 0);
	journal_close(j);
	assert_int_equal(journal_load(f->dir, "d-2", &st), 0);
	assert_int_equal(st.running, 1);
	journal_state_done(&st);

	/* A header that never made it: not a plan that was accepted. */
	snprintf(path, sizeof(path), "%s/jobs/d-3.log", f->dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_int_equal(write(fd, "{\"received_ms\":1,\"pl", 20), 20);
	close(fd);
	assert_int_equal(journal_load(f->dir, "d-3", &st), -RY_E_CORRUPT);
}

/* A reboot step: its record is read back as the reboot under way (inside the step that wrote
 * it), it survives a torn tail after it, and the step's outcome after the boot ends it; a
 * record outside the step it names is corrupt. */
static void test_journal_reboot(void **state)
{
	static const char boot[] = "0f8fad5b-d9cb-469f-a165-70867728950e";
	struct fx *f = *state;
	struct journal_state st;
	struct journal *j = NULL;
	char path[300];
	int fd;

	assert_int_equal(journal_dir_init(f->dir), 0);
	assert_int_equal(journal_create(f->dir, "d-r", false, plan3, &j), 0);
	assert_int_equal(journal_load(f->dir, "d-r", &st), 0);
	assert_int_equal(st.reboot_step, -1);
	journal_state_done(&st);
	assert_int_equal(journal_run(j, 0), 0);
	assert_int_equal(journal_step(j, 0, "a", "changed", "", "", 5), 0);
	assert_int_equal(journal_run(j, 1), 0);
	assert_int_equal(journal_reboot(j, 1, boot, 1700000000123), 0);
	journal_close(j);
	/* The host went down with a line half-written after the record: still the reboot. */
	snprintf(path, sizeof(path), "%s/jobs/d-r.log", f->dir);
	fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"step\":1,\"na", 13), 13);
	close(fd);
	assert_int_equal(journal_load(f->dir, "d-r", &st), 0);
	assert_int_equal(st.running, 1);
	assert_int_equal(st.reboot_step, 1);
	assert_string_equal(st.reboot_boot_id, boot);
	assert_int_equal(st.reboot_at_ms, 1700000000123);
	assert_int_equal(st.next, 1);
	journal_state_done(&st);
	/* After the boot: the step's outcome ends the reboot; the plan goes on at step 2. */
	assert_int_equal(journal_open(f->dir, "d-r", &j), 0);
	assert_int_equal(journal_step(j, 1, "b", "changed", "", "rebooted in 40.0 s", 40000), 0);
	journal_close(j);
	assert_int_equal(journal_load(f->dir, "d-r", &st), 0);
	assert_int_equal(st.running, -1);
	assert_int_equal(st.next, 2);
	assert_int_equal(st.steps[1].duration_ms, 40000);
	journal_state_done(&st);

	/* A reboot record for a step that is not running is not one the agent writes. */
	assert_int_equal(journal_create(f->dir, "d-s", false, plan3, &j), 0);
	assert_int_equal(journal_run(j, 0), 0);
	assert_int_equal(journal_reboot(j, 2, boot, 1), 0);
	assert_int_equal(journal_step(j, 0, "a", "ok", "", "", 1), 0);
	journal_close(j);
	assert_int_equal(journal_load(f->dir, "d-s", &st), -RY_E_CORRUPT);
}

/* Listing is by arrival; pruning keeps unfinished journals and the newest finished ones. */
static void test_journal_list_prune(void **state)
{
	struct fx *f = *state;
	char id[16], **ids = NULL;
	size_t n = 0;

	assert_int_equal(journal_dir_init(f->dir), 0);
	for (int i = 0; i < 6; i++) {
		struct journal *j = NULL;

		snprintf(id, sizeof(id), "d-%d", 9 - i); /* names sort the other way round */
		assert_int_equal(journal_create(f->dir, id, false, plan3, &j), 0);
		if (i != 2)
			assert_int_equal(journal_done(j, "succeeded", ""), 0);
		journal_close(j);
		usleep(2000); /* distinct arrival times */
	}
	assert_int_equal(journal_list(f->dir, &ids, &n), 0);
	assert_int_equal(n, 6);
	assert_string_equal(ids[0], "d-9");
	assert_string_equal(ids[5], "d-4");
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
	/* Keep two finished: d-5 and d-4; d-7 is unfinished and stays. */
	assert_int_equal(journal_prune(f->dir, 2), 3);
	assert_int_equal(journal_exists(f->dir, "d-9"), 0);
	assert_int_equal(journal_exists(f->dir, "d-8"), 0);
	assert_int_equal(journal_exists(f->dir, "d-6"), 0);
	assert_int_equal(journal_exists(f->dir, "d-7"), 1);
	assert_int_equal(journal_exists(f->dir, "d-5"), 1);
	assert_int_equal(journal_exists(f->dir, "d-4"), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_outbox_persists, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_outbox_torn_tail, fx_setup, fx_teardown),
		cmocka_unit_test(test_outbox_back_pressure),
		cmocka_unit_test(test_outbox_resume),
		cmocka_unit_test_setup_teardown(test_journal_states, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_journal_torn, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_journal_reboot, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_journal_list_prune, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
