/* Unit tests of controller/wlm: the reason we set (prefix and id first, at most 100 bytes, cut at
 * a character boundary with "...", no newline or quote), node names from host names and the
 * override map, the binding's validation (each bad field named), the sinfo and squeue parsers
 * fed good and bad output, and the hook commands run with {node} / {reason} as whole
 * arguments, without a shell (a recording script). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util/error.h"
#include "controller/service.h"
#include "controller/store/store.h"
#include "controller/store/store_wlm.h"
#include "controller/wlm/wlm.h"

static bool valid_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		int n = *p < 0x80	      ? 0
			: (*p & 0xe0) == 0xc0 ? 1
			: (*p & 0xf0) == 0xe0 ? 2
			: (*p & 0xf8) == 0xf0 ? 3
					      : -1;

		if (n < 0)
			return false;
		p++;
		for (int i = 0; i < n; i++, p++)
			if ((*p & 0xc0) != 0x80)
				return false;
	}
	return true;
}

static void test_reason_short(void **state)
{
	char r[WLM_REASON_MAX + 1];

	(void)state;
	wlm_reason_fit(r, sizeof(r), "campaign", "12", "gpu-node-03 bw rail 2 12.1 < 40 Gb/s");
	assert_string_equal(r, "railyard: campaign 12: gpu-node-03 bw rail 2 12.1 < 40 Gb/s");
	wlm_reason_fit(r, sizeof(r), "deployment", "d-1", NULL);
	assert_string_equal(r, "railyard: deployment d-1");
}

static void test_reason_cleaned(void **state)
{
	char r[WLM_REASON_MAX + 1];

	(void)state;
	wlm_reason_fit(r, sizeof(r), "campaign", "c-1", "step \"hca\"\nfailed:\t'DOWN'  `x`\r\n");
	assert_string_equal(r, "railyard: campaign c-1: step hca failed: DOWN x");
	assert_null(strpbrk(r, "\"'`\n\r\t"));
}

static void test_reason_cut(void **state)
{
	char r[WLM_REASON_MAX + 1], finding[400];
	const char *prefix = "railyard: campaign c-0123abcd: ";

	(void)state;
	memset(finding, 'x', sizeof(finding) - 1);
	finding[sizeof(finding) - 1] = '\0';
	wlm_reason_fit(r, sizeof(r), "campaign", "c-0123abcd", finding);
	assert_int_equal(strlen(r), WLM_REASON_MAX);
	assert_memory_equal(r, prefix, strlen(prefix));
	assert_string_equal(r + WLM_REASON_MAX - 3, "...");
	/* Multibyte characters: never cut inside one (é is 2 bytes, 💥 4). */
	for (int shift = 0; shift < 4; shift++) {
		char f[600] = "";

		for (int i = 0; i < shift; i++)
			strcat(f, "a");
		for (int i = 0; i < 60; i++)
			strcat(f, i % 2 ? "é" : "💥");
		wlm_reason_fit(r, sizeof(r), "campaign", "c-0123abcd", f);
		assert_true(strlen(r) <= WLM_REASON_MAX);
		assert_true(valid_utf8(r));
		assert_string_equal(r + strlen(r) - 3, "...");
	}
	/* Bytes that are not UTF-8 become '?'; an id of multibyte characters is cut whole. */
	wlm_reason_fit(r, sizeof(r), "deployment", "d-1", "bad \xff\xc3 byte");
	assert_string_equal(r, "railyard: deployment d-1: bad ?? byte");
	wlm_reason_fit(r, sizeof(r), "campaign", "ééééééééééééééééééééééééééééééééééééééééééééé",
		       "x");
	assert_true(valid_utf8(r));
	assert_true(strlen(r) <= WLM_REASON_MAX);
	/* A huge id is cut to 40 bytes; the prefix survives. */
	wlm_reason_fit(r, sizeof(r), "campaign", finding, "found");
	assert_true(strlen(r) <= WLM_REASON_MAX);
	assert_memory_equal(r, "railyard: campaign xxxx", 23);
	/* A small buffer: still terminated, still starts with the prefix. */
	{
		char small[20];

		wlm_reason_fit(small, sizeof(small), "campaign", "c-1", "long finding here");
		assert_true(strlen(small) < sizeof(small));
		assert_memory_equal(small, "railyard:", 9);
	}
}

static void test_names(void **state)
{
	struct wlm_binding b = {0};
	char out[WLM_NAME_MAX + 1];

	(void)state;
	b.node_map = json_pack("{s:s}", "gpu-node-03.ib.example", "gpu03");
	assert_int_equal(wlm_node_name(&b, "gpu-node-01.example.com", out, sizeof(out)), 0);
	assert_string_equal(out, "gpu-node-01");
	assert_int_equal(wlm_node_name(&b, "gpu-node-03.ib.example", out, sizeof(out)), 0);
	assert_string_equal(out, "gpu03");
	assert_int_equal(wlm_node_name(&b, "plain", out, sizeof(out)), 0);
	assert_string_equal(out, "plain");
	assert_int_equal(wlm_node_name(&b, ".leading-dot", out, sizeof(out)), -RY_E_INVALID);
	assert_int_equal(wlm_node_name(&b, "bad name", out, sizeof(out)), -RY_E_INVALID);
	assert_string_equal(out, "");
	assert_int_equal(wlm_node_name(&b, "-dash", out, sizeof(out)), -RY_E_INVALID);
	assert_int_equal(wlm_node_name(&b, "ok", out, 2), -RY_E_INVALID); /* does not fit */
	assert_int_equal(wlm_node_name(NULL, "n1.x", out, sizeof(out)), 0);
	assert_string_equal(out, "n1");
	assert_true(wlm_name_valid("a"));
	assert_false(wlm_name_valid(""));
	assert_false(wlm_name_valid("a;b"));
	json_decref(b.node_map);
}

/* Parse doc; expect failure naming field, or success. */
static void bind_case(const char *doc, const char *field, const char *msg_part)
{
	json_error_t je;
	json_t *d = json_loads(doc, JSON_ALLOW_NUL, &je);
	struct wlm_binding *b = NULL;
	struct ctl_error err;
	int r;

	assert_non_null(d);
	ctl_error_init(&err);
	r = wlm_binding_parse(d, "it", &b, &err);
	if (!field) {
		assert_int_equal(r, 0);
		assert_non_null(b);
	} else {
		if (r >= 0)
			fail_msg("accepted: %s", doc);
		assert_int_equal(r, -RY_E_INVALID);
		assert_string_equal(err.code, CTL_ERR_INVALID);
		assert_string_equal(err.field, field);
		if (!strstr(err.message, msg_part))
			fail_msg("message \"%s\" lacks \"%s\"", err.message, msg_part);
		assert_null(b);
	}
	wlm_binding_free(b);
	ctl_error_done(&err);
	json_decref(d);
}

static void test_binding_validation(void **state)
{
	(void)state;
	bind_case("{\"kind\": \"slurm\"}", NULL, NULL);
	bind_case("{\"kind\": \"slurm\", \"slurm\": {\"conf\": \"/etc/slurm/slurm.conf\"}, "
		  "\"node_map\": {\"h1.x\": \"n1\"}, \"timeout_s\": 5}",
		  NULL, NULL);
	bind_case("{}", "kind", "required");
	bind_case("{\"kind\": \"pbs\"}", "kind", "\"pbs\" is not");
	bind_case("{\"kind\": \"slurm\", \"extra\": 1}", "binding", "unknown key \"extra\"");
	bind_case("{\"kind\": \"slurm\", \"slurm\": {\"conf\": \"etc/slurm.conf\"}}", "slurm.conf",
		  "absolute path");
	bind_case("{\"kind\": \"slurm\", \"slurm\": {\"bin_dir\": \"/usr/../tmp\"}}",
		  "slurm.bin_dir", "absolute path");
	bind_case("{\"kind\": \"slurm\", \"slurm\": {\"conf\": \"/a\\nb\"}}", "slurm.conf",
		  "control characters");
	bind_case("{\"kind\": \"slurm\", \"slurm\": {\"nope\": 1}}", "slurm", "unknown key");
	bind_case("{\"kind\": \"slurm\", \"timeout_s\": 0}", "timeout_s", "from 1 to 300");
	bind_case("{\"kind\": \"slurm\", \"timeout_s\": 301}", "timeout_s", "from 1 to 300");
	bind_case("{\"kind\": \"slurm\", \"timeout_s\": \"30\"}", "timeout_s", "from 1 to 300");
	bind_case("{\"kind\": \"slurm\", \"node_map\": {\"h1\": \"bad name\"}}", "node_map.h1",
		  "not a legal node name");
	bind_case("{\"kind\": \"slurm\", \"node_map\": {\"h1\": 3}}", "node_map.h1",
		  "not a legal node name");
	bind_case("{\"kind\": \"slurm\", \"node_map\": []}", "node_map", "an object");
	bind_case("{\"kind\": \"slurm\", \"hooks\": {}}", "hooks", "with kind \"hooks\" only");
	bind_case("{\"kind\": \"hooks\"}", "hooks", "required");
	bind_case("{\"kind\": \"hooks\", \"hooks\": {\"drain\": [\"/bin/true\"]}}", "hooks.resume",
		  "required");
	bind_case("{\"kind\": \"hooks\", \"hooks\": {\"drain\": [\"kubectl\", \"cordon\"], "
		  "\"resume\": [\"/bin/true\"]}}",
		  "hooks.drain", "absolute path");
	bind_case("{\"kind\": \"hooks\", \"hooks\": {\"drain\": [], \"resume\": [\"/bin/true\"]}}",
		  "hooks.drain", "1 to 64 strings");
	bind_case("{\"kind\": \"hooks\", \"hooks\": {\"drain\": [\"/bin/x\", 1], "
		  "\"resume\": [\"/bin/true\"]}}",
		  "hooks.drain", "[1]: must be a string");
	bind_case("{\"kind\": \"hooks\", \"hooks\": {\"drain\": [\"/bin/x\", \"a\\u0000b\"], "
		  "\"resume\": [\"/bin/true\"]}}",
		  "hooks.drain", "without NUL");
	bind_case("{\"kind\": \"hooks\", \"hooks\": {\"drain\": [\"/bin/x\", \"{node}\"], "
		  "\"resume\": [\"/bin/true\"], \"state\": [\"/bin/cat\"]}}",
		  NULL, NULL);
}

static void test_binding_roundtrip(void **state)
{
	json_t *d =
		json_loads("{\"kind\": \"hooks\", \"hooks\": {\"drain\": [\"/bin/x\", \"{node}\", "
			   "\"{reason}\"], \"resume\": [\"/bin/y\", \"{node}\"]}, "
			   "\"node_map\": {\"a.b\": \"c\"}}",
			   0, NULL);
	struct wlm_binding *b = NULL, *b2 = NULL;
	struct ctl_error err;
	json_t *j;

	(void)state;
	ctl_error_init(&err);
	assert_int_equal(wlm_binding_parse(d, "it", &b, &err), 0);
	assert_int_equal(b->timeout_s, WLM_TIMEOUT_DEFAULT_S);
	j = wlm_binding_json(b);
	assert_int_equal(wlm_binding_parse(j, "it", &b2, &err), 0);
	assert_string_equal(b2->hook_drain[2], "{reason}");
	assert_null(b2->hook_drain[3]);
	assert_string_equal(json_string_value(json_object_get(b2->node_map, "a.b")), "c");
	json_decref(j);
	json_decref(d);
	wlm_binding_free(b);
	wlm_binding_free(b2);
	ctl_error_done(&err);
}

static void test_parse_sinfo(void **state)
{
	struct wlm_node_state s;

	(void)state;
	memset(&s, 0, sizeof(s));
	assert_int_equal(wlm_parse_sinfo_line("gpu-node-02|drained|admin: bad fan; x", &s), 0);
	assert_string_equal(s.name, "gpu-node-02");
	assert_string_equal(s.state, "drained");
	assert_true(s.drained);
	assert_string_equal(s.reason, "admin: bad fan; x");
	assert_false(s.ours);
	memset(&s, 0, sizeof(s));
	assert_int_equal(wlm_parse_sinfo_line("n1|draining|railyard: campaign c-1: a|b", &s), 0);
	assert_true(s.drained);
	assert_true(s.ours);
	assert_string_equal(s.reason, "railyard: campaign c-1: a|b"); /* a | in the reason */
	memset(&s, 0, sizeof(s));
	assert_int_equal(wlm_parse_sinfo_line("n1|idle|none\n", &s), 0);
	assert_false(s.drained);
	assert_string_equal(s.reason, "");
	memset(&s, 0, sizeof(s));
	assert_int_equal(
		wlm_parse_sinfo_line("n1|down*|Not responding [slurm@2026-12-03T17:06:31]", &s), 0);
	assert_string_equal(s.state, "down*");
	assert_string_equal(s.reason, "Not responding");
	/* Bad output. */
	assert_int_equal(wlm_parse_sinfo_line("", &s), -RY_E_INVALID);
	assert_int_equal(wlm_parse_sinfo_line("garbage", &s), -RY_E_INVALID);
	assert_int_equal(wlm_parse_sinfo_line("n1|idle", &s), -RY_E_INVALID);
	assert_int_equal(wlm_parse_sinfo_line("|idle|x", &s), -RY_E_INVALID);
	assert_int_equal(wlm_parse_sinfo_line("bad name|idle|x", &s), -RY_E_INVALID);
	assert_int_equal(wlm_parse_sinfo_line("n1||x", &s), -RY_E_INVALID);
	assert_int_equal(wlm_parse_sinfo_line("n1|id\x01le|x", &s), -RY_E_INVALID);
	assert_int_equal(wlm_parse_sinfo_line(
				 "n1|aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa|x", &s),
			 -RY_E_INVALID);
	{
		char big[2000];

		memset(big, 'r', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		memcpy(big, "n1|drained|", 11);
		memset(&s, 0, sizeof(s));
		assert_int_equal(wlm_parse_sinfo_line(big, &s), 0); /* a long reason is cut */
		assert_int_equal(strlen(s.reason), sizeof(s.reason) - 1);
	}
}

static void test_parse_squeue(void **state)
{
	struct wlm_node_state s = {0};
	const char *ok = "12|alice\n13_4|bob\r\n\n14|\n";

	(void)state;
	assert_int_equal(wlm_parse_squeue(ok, strlen(ok), &s), 0);
	assert_int_equal(s.njobs, 3);
	assert_string_equal(s.jobs[0].id, "12");
	assert_string_equal(s.jobs[0].user, "alice");
	assert_string_equal(s.jobs[1].id, "13_4");
	assert_string_equal(s.jobs[1].user, "bob");
	assert_string_equal(s.jobs[2].user, "");
	wlm_node_state_done(&s);
	assert_int_equal(wlm_parse_squeue("", 0, &s), 0);
	assert_int_equal(s.njobs, 0);
	assert_int_equal(wlm_parse_squeue("12 alice\n", 9, &s), -RY_E_INVALID);
	assert_int_equal(wlm_parse_squeue("x1|alice\n", 9, &s), -RY_E_INVALID);
	assert_int_equal(wlm_parse_squeue("|alice\n", 7, &s), -RY_E_INVALID);
	assert_int_equal(wlm_parse_squeue("1|a\x01b\n", 6, &s), -RY_E_INVALID);
	assert_int_equal(s.njobs, 0);
	wlm_node_state_done(&s);
}

/* Hooks: a recording script gets {node} and {reason} as whole arguments, verbatim. */
static void test_hooks_argv(void **state)
{
	char dir[] = "/tmp/ry-wlm-XXXXXX", script[128], log[128], text[1024] = "", why[256];
	const char *reason = "railyard: campaign c-1: a b; rm -rf / $(touch x) \"q\"";
	struct wlm_binding b = {0};
	char *drain[] = {script, "drain", "{node}", "{reason}", NULL};
	char *resume[] = {script, "resume", "{node}", NULL};
	char *st[] = {script, "state", "{node}", NULL};
	struct wlm_node_state s = {0};
	enum wlm_resume how;
	FILE *f;
	size_t n;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(script, sizeof(script), "%s/hook", dir);
	snprintf(log, sizeof(log), "%s/log", dir);
	f = fopen(script, "w");
	assert_non_null(f);
	/* Each argument on its own line between brackets; "state" prints the saved reason. */
	fprintf(f,
		"#!/bin/sh\n"
		"for a in \"$@\"; do printf '[%%s]\\n' \"$a\" >>%s; done\n"
		"case $1 in drain) printf '%%s' \"$3\" >%s/reason;; resume) : >%s/reason;;\n"
		"state) cat %s/reason 2>/dev/null;; esac\n",
		log, dir, dir, dir);
	fclose(f);
	assert_int_equal(chmod(script, 0755), 0);
	b.kind = WLM_HOOKS;
	b.timeout_s = 10;
	b.hook_drain = drain;
	b.hook_resume = resume;
	b.hook_state = st;
	assert_int_equal(wlm_drain(&b, "gpu-node-03", reason, why, sizeof(why)), 0);
	f = fopen(log, "r");
	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	{
		char want[512];

		snprintf(want, sizeof(want), "[drain]\n[gpu-node-03]\n[%s]\n", reason);
		assert_string_equal(text, want);
	}
	assert_int_equal(access("x", F_OK), -1); /* no shell ran $(touch x) */
	assert_int_equal(wlm_query(&b, "gpu-node-03", false, &s, why, sizeof(why)), 0);
	assert_true(s.drained);
	assert_true(s.ours);
	wlm_node_state_done(&s);
	assert_int_equal(wlm_resume_if_ours(&b, "gpu-node-03", &how, why, sizeof(why)), 0);
	assert_int_equal(how, WLM_RESUMED);
	assert_int_equal(wlm_resume_if_ours(&b, "gpu-node-03", &how, why, sizeof(why)), 0);
	assert_int_equal(how, WLM_NOT_DRAINED);
	/* Someone else's reason: left alone, their reason said. */
	assert_int_equal(wlm_drain(&b, "gpu-node-03", "admin: fan", why, sizeof(why)), 0);
	assert_int_equal(wlm_resume_if_ours(&b, "gpu-node-03", &how, why, sizeof(why)), 0);
	assert_int_equal(how, WLM_NOT_OURS);
	assert_string_equal(why, "admin: fan");
	/* A hook that fails: its status and stderr said. */
	{
		char *bad[] = {"/bin/sh", "-c", "echo nope >&2; exit 3", NULL};

		b.hook_drain = bad;
		assert_int_equal(wlm_drain(&b, "n1", "r", why, sizeof(why)), -RY_E_REFUSED);
		assert_non_null(strstr(why, "exit 3"));
		assert_non_null(strstr(why, "nope"));
	}
	/* No state hook: the caller decides from its ledger. */
	b.hook_state = NULL;
	assert_int_equal(wlm_resume_if_ours(&b, "n1", &how, why, sizeof(why)), -ENOTSUP);
	{
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		assert_int_equal(system(cmd), 0);
	}
}

/* The ledger: nothing stored for an unbound cluster or a host with no legal WLM name; the reason
 * fitted when stored; a row moves once (a done row is never redone); per node, the last done
 * drain says "drained by us". */
static void test_ledger(void **state)
{
	char dir[] = "/tmp/ry-wlm-store-XXXXXX", path[128];
	struct store *st = NULL;
	struct store_wlm_action *v = NULL;
	size_t n = 0;
	struct store_wlm_intent a = {
		.cluster = "it",
		.node_id = "n-1",
		.hostname = "gpu-node-03.example",
		.action = "drain",
		.source = "campaign",
		.source_id = "c-1",
		.finding = "gpu-node-03 bw \"rail\" 2\n12.1 < 40 Gb/s",
	};

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/c.db", dir);
	assert_int_equal(store_open(path, &st), 0);
	assert_int_equal(store_wlm_enqueue(st, &a, 1000), 0); /* no such cluster */
	assert_int_equal(store_cluster_ensure(st, "it", 1000), 0);
	assert_int_equal(store_wlm_enqueue(st, &a, 1000), 0); /* not bound */
	assert_int_equal(store_wlm_binding_put(st, "it",
					       "{\"kind\":\"slurm\",\"node_map\":"
					       "{\"odd host\":\"n9\"}}",
					       "tester", 1000),
			 0);
	assert_int_equal(store_wlm_enqueue(st, &a, 2000), 1);
	a.hostname = ".bad";
	assert_int_equal(store_wlm_enqueue(st, &a, 2000), -RY_E_INVALID);
	a.hostname = "odd host"; /* the map names it */
	a.action = "resume";
	assert_int_equal(store_wlm_enqueue(st, &a, 2000), 1);
	a.action = "reboot";
	assert_int_equal(store_wlm_enqueue(st, &a, 2000), -RY_E_INVALID);
	assert_int_equal(store_wlm_pending(st, 0, &v, &n), 0);
	assert_int_equal(n, 2); /* the refused ones stored nothing */
	assert_string_equal(v[0].wlm_name, "gpu-node-03");
	assert_string_equal(v[0].reason,
			    "railyard: campaign c-1: gpu-node-03 bw rail 2 12.1 < 40 Gb/s");
	assert_string_equal(v[1].wlm_name, "n9");
	assert_int_equal(store_wlm_drained_by_us(st, "it", "gpu-node-03"), 0);
	/* A retry stays pending; done is final, once. */
	assert_int_equal(store_wlm_action_result(st, v[0].id, "pending", "unreachable", 5000, 3000),
			 1);
	assert_int_equal(store_wlm_action_result(st, v[0].id, "done", "drained", 0, 6000), 1);
	assert_int_equal(store_wlm_action_result(st, v[0].id, "done", "drained", 0, 7000), 0);
	assert_int_equal(store_wlm_action_result(st, v[0].id, "failed", "x", 0, 7000), 0);
	assert_int_equal(store_wlm_drained_by_us(st, "it", "gpu-node-03"), 1);
	store_wlm_actions_free(v, n);
	assert_int_equal(store_wlm_actions(st, "it", "done", 0, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].attempts, 2);
	assert_int_equal(v[0].done_at, 6000);
	store_wlm_actions_free(v, n);
	assert_int_equal(store_wlm_actions_by_source(st, "campaign", "c-1", &v, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].state, "done");
	assert_string_equal(v[1].state, "pending");
	store_wlm_actions_free(v, n);
	assert_int_equal(store_wlm_actions_by_source(st, "maintenance", "c-1", &v, &n), 0);
	assert_int_equal(n, 0);
	store_wlm_actions_free(v, n);
	assert_int_equal(store_wlm_binding_delete(st, "it", "tester", 8000), 1);
	assert_int_equal(store_wlm_binding_delete(st, "it", "tester", 8000), 0);
	store_free(st);
	{
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		assert_int_equal(system(cmd), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reason_short),	   cmocka_unit_test(test_reason_cleaned),
		cmocka_unit_test(test_reason_cut),	   cmocka_unit_test(test_names),
		cmocka_unit_test(test_binding_validation), cmocka_unit_test(test_binding_roundtrip),
		cmocka_unit_test(test_parse_sinfo),	   cmocka_unit_test(test_parse_squeue),
		cmocka_unit_test(test_hooks_argv),	   cmocka_unit_test(test_ledger),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
