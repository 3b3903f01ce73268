/* Unit tests for the railyard command line's human output (client/print.c): a progress text
 * fitted to a terminal's width drops its least important fields first and never the ETA; a
 * node's steps say the failed one with its detail and collapse a run of skipped ones. */
#include "client/rc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define CAMPAIGN                                                                                   \
	"campaign c-1a2b3c4d: test pair-bw, round 6 of 13 | 140 done, 3 failed | rounds 20 of "    \
	"52 | ETA 35 s"

static void fit_is(size_t room, const char *want)
{
	char out[512];

	rc_fit_fields(CAMPAIGN, room, out, sizeof(out));
	if (strcmp(out, want) != 0)
		fail_msg("room %zu:\n got: %s\nwant: %s", room, out, want);
	/* it fits whenever the first field's start and the ETA can */
	if (room >= 30 && strlen(out) > room)
		fail_msg("room %zu: %zu bytes", room, strlen(out));
}

static void test_fit(void **state)
{
	(void)state;
	fit_is(200, CAMPAIGN);
	fit_is(98, CAMPAIGN);
	/* the last fields go first (the rounds, then the counts); the ETA stays */
	fit_is(97,
	       "campaign c-1a2b3c4d: test pair-bw, round 6 of 13 | 140 done, 3 failed | ETA 35 s");
	fit_is(79, "campaign c-1a2b3c4d: test pair-bw, round 6 of 13 | ETA 35 s");
	/* then the first field is cut short: 80 columns leave 51 for the text */
	fit_is(51, "campaign c-1a2b3c4d: test pair-bw, ro... | ETA 35 s");
	fit_is(30, "campaign c-1a2b3... | ETA 35 s");
	/* no ETA: the first field is cut like any text */
	{
		char out[64];

		rc_fit_fields("deployment d-1: h200 on it: running, 2 of 4 nodes done", 20, out,
			      sizeof(out));
		assert_string_equal(out, "deployment d-1: h...");
	}
}

static char *steps_text(const char *node_json, bool diffs)
{
	json_t *n = json_loads(node_json, 0, NULL);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(n);
	assert_non_null(f);
	rc_print_deploy_steps(f, n, diffs);
	fclose(f);
	json_decref(n);
	return text;
}

static void test_steps(void **state)
{
	char *t;

	(void)state;
	t = steps_text(
		"{\"steps\":["
		"{\"index\":0,\"name\":\"gpus\",\"status\":\"ok\",\"message\":\"1 condition(s) "
		"hold\","
		"\"detail\":\"\",\"diff\":\"\"},"
		"{\"index\":1,\"name\":\"hca ports\",\"status\":\"failed\",\"message\":\"mlx5_3 "
		"port 1 "
		"is DOWN (expected ACTIVE)\",\"detail\":\"raw one\\nraw two\",\"diff\":\"\"},"
		"{\"index\":2,\"name\":\"a\",\"status\":\"skipped\",\"message\":\"not run: step "
		"\\\"hca ports\\\" failed\",\"detail\":\"\",\"diff\":\"\"},"
		"{\"index\":3,\"name\":\"b\",\"status\":\"skipped\",\"message\":\"not run: step "
		"\\\"hca ports\\\" failed\",\"detail\":\"\",\"diff\":\"\"},"
		"{\"index\":4,\"name\":\"c\",\"status\":\"skipped\",\"message\":\"not run: step "
		"\\\"hca ports\\\" failed\",\"detail\":\"\",\"diff\":\"\"}]}",
		false);
	assert_string_equal(
		t, "      failed   step 2 \"hca ports\": mlx5_3 port 1 is DOWN (expected "
		   "ACTIVE)\n"
		   "          raw one\n"
		   "          raw two\n"
		   "      skipped  steps 3-5: 3 steps skipped: not run: step \"hca ports\" "
		   "failed\n");
	free(t);
	/* check mode: a changed step, its diff with --diff; a lone skipped step by name */
	t = steps_text(
		"{\"steps\":["
		"{\"index\":0,\"name\":\"nccl\",\"status\":\"changed\",\"message\":\"would "
		"change\",\"detail\":\"\",\"diff\":\"+NCCL_IB_HCA=mlx5\\n\"},"
		"{\"index\":1,\"name\":\"peermem\",\"status\":\"skipped\",\"message\":\"when: "
		"false\",\"detail\":\"\",\"diff\":\"\"}]}",
		true);
	assert_string_equal(t, "      changed  step 1 \"nccl\"\n"
			       "          +NCCL_IB_HCA=mlx5\n"
			       "      skipped  step 2 \"peermem\": when: false\n");
	free(t);
	/* what came from a node cannot forge a line */
	t = steps_text("{\"steps\":[{\"index\":0,\"name\":\"x\\u001b[2J\",\"status\":\"failed\","
		       "\"message\":\"m\",\"detail\":\"\",\"diff\":\"\"}]}",
		       false);
	assert_null(strchr(t, '\033'));
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fit),
		cmocka_unit_test(test_steps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
