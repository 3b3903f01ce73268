/* Unit tests for common/playbook: the shipped playbooks against the fixture sysroots' facts, the
 * corpus of broken playbooks with their expected diagnostics, rendering and plan validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <unistd.h>

#include <libfyaml.h>

#include "common/playbook/playbook.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "nodeagent/facts/facts.h"

static char *src_path(const char *rel)
{
	const char *src = getenv("RAILYARD_SOURCE_DIR");
	char *p = NULL;

	assert_non_null(src);
	assert_true(asprintf(&p, "%s/%s", src, rel) > 0);
	return p;
}

static json_t *fixture_facts(const char *name)
{
	char rel[256];
	char *root;
	json_t *facts = NULL;

	snprintf(rel, sizeof(rel), "tests/fixtures/sysroots/%s", name);
	root = src_path(rel);
	assert_int_equal(facts_collect(root, &facts), 0);
	free(root);
	return facts;
}

static struct playbook *load_ok(const char *rel)
{
	struct playbook *pb = NULL;
	struct pb_diags d;
	char *path = src_path(rel);
	int r;

	pb_diags_init(&d);
	r = playbook_load(path, &pb, &d);
	if (r < 0)
		pb_diags_print(&d, stderr);
	assert_int_equal(r, 0);
	assert_int_equal(d.count, 0);
	pb_diags_done(&d);
	free(path);
	return pb;
}

static json_t *render_ok(const struct playbook *pb, const json_t *facts)
{
	struct pb_diags d;
	json_t *plan = NULL;
	char err[256] = "";
	int r;

	pb_diags_init(&d);
	r = playbook_render(pb, facts, &plan, &d);
	if (r < 0)
		pb_diags_print(&d, stderr);
	assert_int_equal(r, 0);
	pb_diags_done(&d);
	r = playbook_plan_validate(plan, err, sizeof(err));
	if (r < 0)
		fprintf(stderr, "plan_validate: %s\n", err);
	assert_int_equal(r, 0);
	return plan;
}

static json_t *plan_step(json_t *plan, const char *name)
{
	size_t i;
	json_t *st;

	json_array_foreach(json_object_get(plan, "steps"), i, st)
	{
		if (strcmp(json_string_value(json_object_get(st, "name")), name) == 0)
			return st;
	}
	fail_msg("no step %s", name);
	return NULL;
}

static const char *param_str(json_t *plan, const char *step, const char *key, const char *sub)
{
	json_t *v = json_object_get(json_object_get(plan_step(plan, step), "params"), key);

	if (sub)
		v = json_object_get(v, sub);
	assert_true(json_is_string(v));
	return json_string_value(v);
}

/* Evaluate every assert condition of plan on facts; return the failure messages, one a line. */
static char *failing_asserts(json_t *plan, const json_t *facts)
{
	char *buf = NULL;
	size_t len = 0, i, j;
	FILE *f = open_memstream(&buf, &len);
	json_t *st, *c;

	assert_non_null(f);
	json_array_foreach(json_object_get(plan, "steps"), i, st)
	{
		if (strcmp(json_string_value(json_object_get(st, "type")), "assert") != 0)
			continue;
		json_array_foreach(json_object_get(json_object_get(st, "params"), "that"), j, c)
		{
			char msg[512] = "";
			bool ok = false;

			assert_int_equal(playbook_cond_eval(c, facts, &ok, msg, sizeof(msg)), 0);
			if (!ok)
				fprintf(f, "%s\n", msg);
		}
	}
	fclose(f);
	return buf;
}

static void test_shipped_ib(void **state)
{
	struct playbook *pb = load_ok("playbooks/h200-ndr-ib.yaml");
	json_t *ib = fixture_facts("h200-ib"), *roce = fixture_facts("h200-roce");
	json_t *plan = render_ok(pb, ib);
	char *fails;

	(void)state;
	assert_string_equal(playbook_name(pb), "h200-ndr-ib");
	assert_true(playbook_target_matches(pb, "any", ib));
	assert_false(playbook_target_matches(pb, "any", roce));
	assert_string_equal(param_str(plan, "nccl settings", "settings", "NCCL_IB_HCA"),
			    "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7");
	assert_string_equal(
		param_str(plan, "ucx settings", "settings", "UCX_NET_DEVICES"),
		"mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1");
	assert_string_equal(param_str(plan, "open mpi settings", "settings", "pml"), "ucx");
	assert_string_equal(param_str(plan, "nvidia-peermem", "name", NULL), "nvidia_peermem");
	assert_true(json_is_true(json_object_get(
		json_object_get(plan_step(plan, "nvidia-peermem"), "params"), "persist")));
	assert_string_equal(json_string_value(json_object_get(plan, "sha256")),
			    playbook_sha256(pb));
	/* The vendors' keys are pinned by their published fingerprints, the stack by version. */
	assert_string_equal(param_str(plan, "cuda repository", "fingerprint", NULL),
			    "EB693B3035CD5710E231E123A4B469963BF863CC");
	assert_string_equal(param_str(plan, "cuda repository", "key_url", NULL),
			    "https://developer.download.nvidia.com/compute/cuda/repos/debian12/"
			    "x86_64/3bf863cc.pub");
	assert_string_equal(param_str(plan, "fabric manager package", "version", NULL),
			    param_str(plan, "nvidia driver", "version", NULL));
	assert_true(json_is_true(json_object_get(
		json_object_get(plan_step(plan, "nvidia driver"), "params"), "hold")));
	assert_string_equal(param_str(plan, "kernel headers", "name", NULL),
			    "linux-headers-6.1.0-28-amd64");
	assert_string_equal(
		json_string_value(json_object_get(
			json_object_get(plan_step(plan, "nvidia-peermem"), "when"), "fact")),
		"gpudirect.method");
	/* The healthy node passes every assert; the second healthy IB node too. */
	fails = failing_asserts(plan, ib);
	assert_string_equal(fails, "");
	free(fails);
	json_decref(plan);
	json_decref(roce);
	json_decref(ib);
	ib = fixture_facts("h200-ib-2");
	plan = render_ok(pb, ib);
	fails = failing_asserts(plan, ib);
	assert_string_equal(fails, "");
	free(fails);
	json_decref(plan);
	json_decref(ib);
	playbook_free(pb);
}

static void test_shipped_roce(void **state)
{
	struct playbook *pb = load_ok("playbooks/h200-roce.yaml");
	json_t *roce = fixture_facts("h200-roce"), *ib = fixture_facts("h200-ib");
	json_t *plan = render_ok(pb, roce), *q;
	char *fails;

	(void)state;
	assert_true(playbook_target_matches(pb, NULL, roce));
	assert_false(playbook_target_matches(pb, NULL, ib));
	assert_string_equal(param_str(plan, "nccl settings", "settings", "NCCL_IB_GID_INDEX"), "3");
	assert_string_equal(param_str(plan, "nccl settings", "settings", "NCCL_IB_TC"), "106");
	q = json_object_get(plan_step(plan, "roce qos"), "params");
	assert_int_equal(json_array_size(json_object_get(q, "interfaces")), 8);
	assert_string_equal(json_string_value(json_array_get(json_object_get(q, "interfaces"), 0)),
			    "enp22s0np0");
	assert_int_equal(json_integer_value(json_array_get(json_object_get(q, "pfc"), 0)), 3);
	assert_int_equal(json_integer_value(json_object_get(q, "dscp")), 26);
	assert_string_equal(json_string_value(json_object_get(q, "trust")), "dscp");
	assert_string_equal(param_str(plan, "roce qos", "dscp2prio", "26"), "3");
	q = json_object_get(plan_step(plan, "roce mtu"), "params");
	assert_int_equal(json_integer_value(json_object_get(q, "mtu")), 9000);
	assert_int_equal(json_array_size(json_object_get(q, "interfaces")), 8);
	fails = failing_asserts(plan, roce);
	assert_string_equal(fails, "");
	free(fails);
	json_decref(plan);
	json_decref(ib);
	json_decref(roce);
	playbook_free(pb);
}

static void test_degraded(void **state)
{
	static const char *const books[] = {"playbooks/h200-ndr-ib.yaml",
					    "playbooks/revalidate.yaml"};
	json_t *deg = fixture_facts("h200-degraded");

	(void)state;
	for (size_t b = 0; b < 2; b++) {
		struct playbook *pb = load_ok(books[b]);
		json_t *plan = render_ok(pb, deg);
		char *fails = failing_asserts(plan, deg);

		assert_non_null(strstr(fails,
				       "must be ACTIVE (rdma.devices[*].ports[*].state == "
				       "ACTIVE: got rdma.devices[3].ports[0].state = DOWN)\n"));
		assert_non_null(strstr(fails,
				       " (rdma.devices[*].ports[*]."
				       "rate_gbps == 400: got rdma.devices[3].ports[0]."
				       "rate_gbps = 10, rdma.devices[5].ports[0].rate_gbps = "
				       "200)\n"));
		assert_non_null(strstr(fails, "every NVIDIA PCIe function must train at Gen5 "
					      "(pci.devices[*].gen >= 5: got pci.devices[12].gen = "
					      "4)\n"));
		assert_non_null(strstr(fails,
				       "must train at x16 (pci.devices[*].current_link_width "
				       ">= 16: got pci.devices[12].current_link_width = 8)\n"));
		/* Exactly those four. */
		{
			size_t lines = 0;

			for (const char *p = fails; *p; p++)
				lines += *p == '\n';
			assert_int_equal(lines, 4);
		}
		free(fails);
		json_decref(plan);
		playbook_free(pb);
	}
	json_decref(deg);
}

/* The NIC cabled to the wrong socket fails the topology assert of the IB and revalidation
 * playbooks, naming the GPU and the HCA, and nothing else. */
static void test_miscabled(void **state)
{
	static const char *const books[] = {"playbooks/h200-ndr-ib.yaml",
					    "playbooks/revalidate.yaml"};
	json_t *mis = fixture_facts("h200-miscabled");

	(void)state;
	for (size_t b = 0; b < 2; b++) {
		struct playbook *pb = load_ok(books[b]);
		json_t *plan = render_ok(pb, mis);
		char *fails = failing_asserts(plan, mis);

		assert_string_equal(
			fails,
			"every GPU needs an HCA of its own on its PCIe switch (gpus[*].nearest_hca."
			"relation matches ^(PIX|PXB)$: got gpus[3].nearest_hca.relation = SYS)\n"
			"GPU/HCA topology (topology.problems[*] matches .: got "
			"topology.problems[0] = "
			"GPU 0000:4a:00.0: nearest free HCA mlx5_7 (0000:d1:00.0) is SYS (across "
			"sockets: GPU on NUMA node 0, HCA on node 1); the closer mlx5_2 (PIX) "
			"serves "
			"GPU 0000:39:00.0)\n");
		free(fails);
		json_decref(plan);
		playbook_free(pb);
	}
	json_decref(mis);
}

static void test_revalidate_changes_nothing(void **state)
{
	struct playbook *pb = load_ok("playbooks/revalidate.yaml");
	const json_t *val = playbook_validation(pb);

	(void)state;
	for (size_t i = 0; i < playbook_step_count(pb); i++)
		assert_string_equal(playbook_step_type(pb, i), "assert");
	assert_int_equal(json_array_size(json_object_get(val, "tests")), 2);
	assert_int_equal(json_array_size(json_object_get(val, "acceptance")), 4);
	assert_int_equal(playbook_rollout(pb)->batch_percent, 10);
	assert_int_equal(playbook_rollout(pb)->batch_count, -1);
	assert_int_equal(playbook_rollout(pb)->max_fail_percent, 100);
	playbook_free(pb);
}

/* Every tests/fixtures/playbooks/bad/X.yaml has its first diagnostic in expected.txt. */
static void test_bad_corpus(void **state)
{
	char *dir = src_path("tests/fixtures/playbooks/bad"), *exp_path, *exp = NULL, *line, *save;
	json_t *facts = fixture_facts("h200-ib");
	size_t len, n = 0;

	(void)state;
	assert_true(asprintf(&exp_path, "%s/expected.txt", dir) > 0);
	assert_int_equal(fs_read_file(exp_path, 1 << 20, &exp, &len), 0);
	for (line = strtok_r(exp, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[128], *path, *text = NULL;
		struct playbook *pb = NULL;
		struct pb_diags d;
		json_t *plan = NULL;
		char got[1024];
		int r;

		if (line[0] == '#' || !line[0])
			continue;
		assert_true(sscanf(line, "%127[^:]", name) == 1);
		assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
		assert_int_equal(fs_read_file(path, 1 << 20, &text, &len), 0);
		pb_diags_init(&d);
		r = playbook_parse(text, len, name, &pb, &d);
		if (r == 0) {
			r = playbook_render(pb, facts, &plan, &d);
			assert_null(plan);
		}
		assert_int_equal(r, -RY_E_INVALID);
		assert_null(r == 0 ? NULL : plan);
		assert_true(d.count >= 1);
		snprintf(got, sizeof(got), "%s:%d:%d: %s", d.items[0].file, d.items[0].line,
			 d.items[0].col, d.items[0].message);
		if (strcmp(got, line) != 0)
			fail_msg("%s:\n  expected %s\n  got      %s", name, line, got);
		n++;
		playbook_free(pb);
		pb_diags_done(&d);
		free(text);
		free(path);
	}
	/* Every file in the directory is covered. */
	{
		DIR *dd = opendir(dir);
		struct dirent *de;
		size_t files = 0;

		assert_non_null(dd);
		while ((de = readdir(dd)))
			files += strstr(de->d_name, ".yaml") != NULL;
		closedir(dd);
		assert_int_equal(files, n);
	}
	assert_true(n >= 20);
	free(exp);
	free(exp_path);
	free(dir);
	json_decref(facts);
}

/* The first diagnostic of text as "LINE:COL: message", into buf. */
static const char *first_diag(const char *text, size_t len, char *buf, size_t buflen)
{
	struct playbook *pb = NULL;
	struct pb_diags d;

	pb_diags_init(&d);
	assert_int_equal(playbook_parse(text, len, "t.yaml", &pb, &d), -RY_E_INVALID);
	assert_true(d.count >= 1);
	snprintf(buf, buflen, "%d:%d: %s", d.items[0].line, d.items[0].col, d.items[0].message);
	pb_diags_done(&d);
	return buf;
}

/* The command step's paths: "/" is an absolute path (it was read before its start: ASan), "/.."
 * at the end or inside is refused, a relative one too. */
static void test_command_paths(void **state)
{
	static const char *const good[] = {"/", "/a", "/a/b.c", "/.x"};
	static const char *const bad[] = {"/..", "/a/..", "/a/../b", "a", ""};
	char text[512], buf[256];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct playbook *pb = NULL;
		int n = snprintf(text, sizeof(text),
				 "name: t\nversion: \"1\"\nsteps:\n  - name: c\n    type: command\n"
				 "    params: {argv: [/bin/true], creates: \"%s\"}\n",
				 good[i]);
		assert_int_equal(playbook_parse(text, (size_t)n, "t.yaml", &pb, NULL), 0);
		playbook_free(pb);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int n = snprintf(text, sizeof(text),
				 "name: t\nversion: \"1\"\nsteps:\n  - name: c\n    type: command\n"
				 "    params: {argv: [/bin/true], creates: \"%s\"}\n",
				 bad[i]);
		assert_non_null(strstr(first_diag(text, (size_t)n, buf, sizeof(buf)), "creates"));
	}
}

/* Text that is not UTF-8 is refused at its first bad byte (libfyaml read it as null scalars or
 * ended the stream early); columns count characters. Syntax errors are where they are (libfyaml's
 * collected positions are 1-based), a tab in indentation at the tab. */
static void test_utf8_and_positions(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{"name: t\xc3", "1:8: invalid UTF-8 (byte 0xC3): a playbook must be UTF-8 text"},
		{"name: t\n# caf\xe9\nsteps: []\n", "2:6: invalid UTF-8 (byte 0xE9)"},
		{"name: \xc3\xa9\xff\n", "1:8: invalid UTF-8 (byte 0xFF)"},
		{"a: \xc0\xaf\n", "1:4: invalid UTF-8 (byte 0xC0)"},	     /* overlong */
		{"a: \xe0\x80\xaf\n", "1:4: invalid UTF-8 (byte 0xE0)"},     /* overlong */
		{"a: \xed\xa0\x80\n", "1:4: invalid UTF-8 (byte 0xED)"},     /* surrogate */
		{"a: \xf4\x90\x80\x80\n", "1:4: invalid UTF-8 (byte 0xF4)"}, /* > U+10FFFF */
		{"a: \xe2\x82\n", "1:4: invalid UTF-8 (byte 0xE2)"},	     /* cut short */
		{"name: t\nversion: \"1\"\nsteps: [abc, {a: 1]\n",
		 "3:19: YAML syntax error: mismatched flow sequence end"},
		{"name: t\nversion: \"1\"\nsteps:\n  - name: s\n\t  type: sysctl\n",
		 "5:1: YAML syntax error: a tab character may not be used as indentation"},
		/* A CR alone is a line break in YAML (old Mac files), CR LF one break. */
		{"name: t\rsteps: [a, {b: 1]\r",
		 "2:17: YAML syntax error: mismatched flow sequence"},
		{"name: t\r\nv: \xff\r\n", "2:4: invalid UTF-8 (byte 0xFF)"},
		{"name: t\rv: \xff\r", "2:4: invalid UTF-8 (byte 0xFF)"},
		/* No final newline: the end of the text, not a line after it. */
		{"name: t\nsteps: {a: 1\n_",
		 "3:2: YAML syntax error: missing comma in flow mapping"},
		{"s:\n  p:\n    a: 1\n  \t  b: 2\n",
		 "4:3: YAML syntax error: a tab character may not be used as indentation"},
	};
	static const char ok[] =
		"\xef\xbb\xbfname: t\nversion: \"1\"\n"
		"description: \"caf\xc3\xa9 \xf0\x9f\x9a\x80\"\n"
		"steps:\n  - {name: s, type: sysctl, params: {settings: {x: 1}}}\n";
	struct playbook *pb = NULL;
	struct pb_diags d;
	char got[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		first_diag(cases[i].text, strlen(cases[i].text), got, sizeof(got));
		if (strncmp(got, cases[i].want, strlen(cases[i].want)) != 0)
			fail_msg("case %zu: expected %s\n  got      %s", i, cases[i].want, got);
	}
	/* A BOM, a two-byte and a four-byte character are UTF-8. */
	pb_diags_init(&d);
	assert_int_equal(playbook_parse(ok, strlen(ok), "ok.yaml", &pb, &d), 0);
	assert_string_equal(playbook_description(pb), "caf\xc3\xa9 \xf0\x9f\x9a\x80");
	playbook_free(pb);
	pb_diags_done(&d);
}

/* libfyaml's own reading of the scalar of "d: <quoted>" (NUL-terminated, caller frees). */
static char *libfyaml_scalar(const char *quoted)
{
	struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET};
	struct fy_parser *fyp = fy_parser_create(&cfg);
	struct fy_event *ev;
	char *doc = NULL, *out = NULL;
	int i = 0;

	assert_non_null(fyp);
	assert_true(asprintf(&doc, "d: %s\n", quoted) > 0);
	assert_int_equal(fy_parser_set_string(fyp, doc, strlen(doc)), 0);
	while ((ev = fy_parser_parse(fyp)) != NULL) {
		if (ev->type == FYET_SCALAR && i++ == 1) {
			size_t len = 0;
			const char *t = fy_token_get_text(ev->scalar.value, &len);

			out = strndup(t ? t : "", len);
		}
		fy_parser_event_free(fyp, ev);
	}
	fy_parser_destroy(fyp);
	free(doc);
	assert_non_null(out);
	return out;
}

/* Single-quoted scalars with '' are read by the parser itself (libfyaml 0.7 leaks on many of
 * them): it reads them as libfyaml does, folded lines and all, and many '' leak nothing (the
 * ASan suite's LeakSanitizer checks that). */
static void test_single_quoted(void **state)
{
	static const char *const cases[] = {
		"'a''b'",
		"'it''s\n  folded  \n\n  over '' lines'",
		"'  lead'' \n   '",
		"''''",
		"'a''\n\n  '",
		"'a''\n\n\n  b  c\n  '",
		"'x''\r\n  y\r\n\r\n  z'",
		"'tab''\t\n  end'",
	};
	static const char *const crlf[][2] = {
		{"'x\r\n  '", "x "},
		{"'im''null\r\n  '", "im'null "},
		{"'a\r\n\r\n  b'", "a\nb"},
		{"'a\r  b'", "a b"}, /* a CR alone is a line break too */
	};
	char text[512], many[200];
	struct playbook *pb = NULL;
	struct pb_diags d;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *want = libfyaml_scalar(cases[i]);

		snprintf(text, sizeof(text),
			 "name: t\nversion: '1'\ndescription: %s\nsteps:\n"
			 "  - {name: s, type: sysctl, params: {settings: {x: 1}}}\n",
			 cases[i]);
		pb_diags_init(&d);
		if (playbook_parse(text, strlen(text), "t.yaml", &pb, &d) != 0) {
			pb_diags_print(&d, stderr);
			fail_msg("case %zu does not parse", i);
		}
		if (strcmp(playbook_description(pb), want) != 0)
			fail_msg("case %zu: libfyaml reads <%s>, the parser <%s>", i, want,
				 playbook_description(pb));
		playbook_free(pb);
		pb_diags_done(&d);
		free(want);
	}
	/* Two '' in a row are two quotes (libfyaml 0.7.12 reads 'a''''b' as a''', one quote too
	 * many and the b lost). */
	snprintf(text, sizeof(text),
		 "name: t\nversion: '1'\ndescription: 'a''''b x'''' lines'\nsteps:\n"
		 "  - {name: s, type: sysctl, params: {settings: {x: 1}}}\n");
	pb_diags_init(&d);
	assert_int_equal(playbook_parse(text, strlen(text), "t.yaml", &pb, &d), 0);
	assert_string_equal(playbook_description(pb), "a''b x'' lines");
	playbook_free(pb);
	pb_diags_done(&d);
	/* A CR LF folds like an LF, also before a closing quote on a line of its own (libfyaml
	 * 0.7.12 reads 'x\r\n  ' as "x\n", 'x\n  ' as "x "; found by fuzz_playbook). */
	for (size_t i = 0; i < sizeof(crlf) / sizeof(crlf[0]); i++) {
		snprintf(text, sizeof(text),
			 "name: t\r\nversion: '1'\r\ndescription: %s\r\nsteps:\r\n"
			 "  - {name: s, type: sysctl, params: {settings: {x: 1}}}\r\n",
			 crlf[i][0]);
		pb_diags_init(&d);
		assert_int_equal(playbook_parse(text, strlen(text), "t.yaml", &pb, &d), 0);
		if (strcmp(playbook_description(pb), crlf[i][1]) != 0)
			fail_msg("CR case %zu: <%s>, want <%s>", i, playbook_description(pb),
				 crlf[i][1]);
		playbook_free(pb);
		pb_diags_done(&d);
	}
	/* Forty '' in a row: forty quotes. */
	memset(many, 0, sizeof(many));
	memset(many, '\'', 82);
	snprintf(text, sizeof(text),
		 "name: t\nversion: '1'\ndescription: %s\nsteps:\n"
		 "  - {name: s, type: sysctl, params: {settings: {x: 1}}}\n",
		 many);
	pb_diags_init(&d);
	assert_int_equal(playbook_parse(text, strlen(text), "t.yaml", &pb, &d), 0);
	assert_int_equal(strlen(playbook_description(pb)), 40);
	assert_int_equal(strspn(playbook_description(pb), "'"), 40);
	playbook_free(pb);
	pb_diags_done(&d);
}

static void test_size_limit_and_all_errors(void **state)
{
	size_t big = PB_MAX_SIZE + 1;
	char *text = malloc(big);
	struct playbook *pb = NULL;
	struct pb_diags d;
	static const char three[] = "name: t\nversion: 1\nbogus: 1\nsteps:\n"
				    "  - {name: a, type: sysctl, params: {settings: {x: 1}}}\n"
				    "  - {name: a, type: nope}\n"
				    "  - {name: c, type: service, params: {name: x, state: up}}\n";

	(void)state;
	assert_non_null(text);
	memset(text, '#', big);
	pb_diags_init(&d);
	assert_int_equal(playbook_parse(text, big, "big.yaml", &pb, &d), -RY_E_TOO_BIG);
	assert_null(pb);
	assert_int_equal(d.count, 1);
	assert_string_equal(d.items[0].file, "big.yaml");
	assert_int_equal(d.items[0].line, 1);
	assert_int_equal(d.items[0].col, 1);
	assert_string_equal(d.items[0].message,
			    "playbook is 1048577 bytes, over the limit of 1048576");
	pb_diags_done(&d);
	free(text);

	/* All errors are collected, in document order. */
	assert_int_equal(playbook_parse(three, strlen(three), "x.yaml", &pb, &d), -RY_E_INVALID);
	assert_int_equal(d.count, 4);
	assert_string_equal(d.items[0].message, "unknown top-level key \"bogus\"");
	assert_int_equal(d.items[0].line, 3);
	assert_string_equal(d.items[1].message, "duplicate step name \"a\" (first at line 5)");
	assert_string_equal(d.items[2].message, "unknown step type \"nope\"");
	assert_string_equal(d.items[3].message,
			    "state: expected started, stopped or restarted, got \"up\"");
	pb_diags_done(&d);
}

static void test_render_types_and_filters(void **state)
{
	struct playbook *pb = load_ok("tests/fixtures/playbooks/good/all-steps.yaml");
	json_t *facts = fixture_facts("h200-ib"), *plan = render_ok(pb, facts), *a, *n;
	const struct pb_rollout *ro = playbook_rollout(pb);

	(void)state;
	assert_string_equal(playbook_version(pb), "2");
	assert_string_equal(playbook_target_cluster(pb), "lab");
	assert_true(playbook_target_matches(pb, "lab", facts));
	assert_false(playbook_target_matches(pb, "prod", facts));
	assert_int_equal(ro->batch_count, 2);
	assert_int_equal(ro->batch_percent, -1);
	assert_int_equal(ro->max_fail_percent, 10);
	assert_int_equal(ro->max_fail_count, -1);
	assert_int_equal(ro->canary, 1);
	assert_int_equal(ro->pause_ms, 30000);
	/* Whole-string reference keeps the type: count -> integer in an ANY value. */
	a = json_object_get(json_object_get(plan_step(plan, "a"), "params"), "that");
	assert_true(json_is_integer(json_object_get(json_array_get(a, 2), "value")));
	assert_int_equal(json_integer_value(json_object_get(json_array_get(a, 2), "value")), 8);
	/* 24.10 stays the string "24.10" for a version comparison. */
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 1), "value")),
			    "24.10");
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "quantifier")),
			    "all");
	/* Embedded references are stringified; first, count, default; $${ escapes. */
	assert_string_equal(param_str(plan, "f", "content", NULL),
			    "hca=mlx5_0 n=8 site=lab-1 cost=${HOME}\n");
	assert_null(json_object_get(json_object_get(plan_step(plan, "f"), "params"), "template"));
	/* content is verbatim. */
	assert_string_equal(param_str(plan, "f2", "content", NULL), "echo ${HOME}\n");
	assert_string_equal(param_str(plan, "f2", "mode", NULL), "0755");
	/* Settings values are strings; a whole-reference integer is stringified. */
	assert_string_equal(param_str(plan, "n", "settings", "NCCL_MTU"), "4096");
	assert_string_equal(param_str(plan, "k", "options", "debug"), "0");
	/* Defaults filled in. */
	assert_string_equal(param_str(plan, "u", "path", NULL), PB_UCX_DEFAULT_PATH);
	assert_string_equal(param_str(plan, "s", "file", NULL), PB_SYSCTL_DEFAULT_FILE);
	assert_string_equal(param_str(plan, "c", "timeout", NULL), "30s");
	assert_string_equal(param_str(plan, "p", "state", NULL), "present");
	/* A list from a wildcard reference, the when condition and continue_on_error. */
	n = plan_step(plan, "n");
	assert_true(json_is_true(json_object_get(n, "continue_on_error")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(n, "when"), "fact")),
			    "nvidia_driver.open_kernel_module");
	assert_false(json_is_true(json_object_get(plan_step(plan, "u"), "continue_on_error")));
	assert_null(json_object_get(plan_step(plan, "u"), "when"));
	assert_string_equal(json_string_value(json_array_get(
				    json_object_get(json_object_get(plan_step(plan, "q"), "params"),
						    "interfaces"),
				    7)),
			    "ibp203s0");
	assert_string_equal(
		json_string_value(json_array_get(
			json_object_get(json_object_get(plan_step(plan, "c"), "params"), "argv"),
			2)),
		"mlx5_0");
	json_decref(plan);
	json_decref(facts);
	playbook_free(pb);
}

/* The first diagnostic of text, "LINE:COL: " and its message's first 40 bytes: the parse's, or
 * when it parses, that of rendering it against facts (which must fail). */
static const char *first_diag_rendered(const char *text, const json_t *facts, char *buf,
				       size_t buflen)
{
	struct playbook *pb = NULL;
	struct pb_diags d;
	json_t *plan = NULL;

	pb_diags_init(&d);
	if (playbook_parse(text, strlen(text), "t.yaml", &pb, &d) == 0) {
		assert_int_equal(playbook_render(pb, facts, &plan, &d), -RY_E_INVALID);
		assert_null(plan);
	}
	assert_true(d.count >= 1);
	snprintf(buf, buflen, "%d:%d: %.40s", d.items[0].line, d.items[0].col, d.items[0].message);
	pb_diags_done(&d);
	playbook_free(pb);
	return buf;
}

/* A name in a fact path is 255 characters at most: a longer one is a bad path wherever a path is
 * written (a reference, a condition, a lookup), never a failed render without a diagnostic (the
 * walker refused it, and the fuzzer found the render silent). */
static void test_fact_path_name_limit(void **state)
{
	json_t *facts = fixture_facts("h200-ib"), *v = NULL;
	char name[PB_PATH_NAME_MAX + 2], *text, *path, buf[256];
	struct playbook *pb = NULL;
	struct pb_diags d;

	(void)state;
	for (size_t len = PB_PATH_NAME_MAX; len <= PB_PATH_NAME_MAX + 1; len++) {
		bool ok = len <= PB_PATH_NAME_MAX;

		memset(name, 'a', len);
		name[len] = '\0';
		/* In a reference, as a fact and after vars.NAME. */
		assert_true(
			asprintf(&text,
				 "name: t\nversion: \"1\"\nsteps:\n  - name: s\n    type: nccl\n"
				 "    params: {settings: {NCCL_IB_HCA: \"${facts.rdma.%s}\"}}\n",
				 name) > 0);
		assert_string_equal(first_diag_rendered(text, facts, buf, sizeof(buf)),
				    ok ? "6:39: undefined reference \"facts.rdma.aaaaaaaa"
				       : "6:39: bad reference syntax \"${facts.rdma.aaaaa");
		free(text);
		assert_true(asprintf(&text,
				     "name: t\nversion: \"1\"\nvars: {v: {a: 1}}\nsteps:\n"
				     "  - name: s\n    type: nccl\n"
				     "    params: {settings: {NCCL_IB_HCA: \"${vars.v.%s}\"}}\n",
				     name) > 0);
		assert_string_equal(first_diag_rendered(text, facts, buf, sizeof(buf)),
				    ok ? "7:39: undefined reference \"vars.v.aaaaaaaaaaaa"
				       : "7:39: bad reference syntax \"${vars.v.aaaaaaaaa");
		free(text);
		/* In a step's condition, which the agent evaluates. */
		assert_true(
			asprintf(&text,
				 "name: t\nversion: \"1\"\nsteps:\n  - name: s\n    type: nccl\n"
				 "    when: {fact: %s, op: \"==\", value: 1}\n"
				 "    params: {settings: {NCCL_IB_HCA: x}}\n",
				 name) > 0);
		if (ok) {
			pb_diags_init(&d);
			assert_int_equal(playbook_parse(text, strlen(text), "t.yaml", &pb, &d), 0);
			playbook_free(pb);
			pb = NULL;
			pb_diags_done(&d);
		} else {
			assert_string_equal(first_diag_rendered(text, facts, buf, sizeof(buf)),
					    "6:18: fact: bad fact path \"aaaaaaaaaaaaaaaaaaa");
		}
		free(text);
		/* A lookup. */
		assert_true(asprintf(&path, "rdma.%s", name) > 0);
		assert_int_equal(playbook_fact_lookup(facts, path, &v), ok ? -ENOENT : -EINVAL);
		assert_null(v);
		free(path);
	}
	json_decref(facts);
}

static void test_plan_validate_tampered(void **state)
{
	struct playbook *pb = load_ok("tests/fixtures/playbooks/good/all-steps.yaml");
	json_t *facts = fixture_facts("h200-ib"), *plan = render_ok(pb, facts);
	static const struct {
		const char *step, *key, *json, *want;
	} cases[] = {
		{"f", "mode", "\"rwx\"", "params.mode: expected an octal string"},
		{"f", "template", "\"x\"", "params.template: not allowed"},
		{"n", "settings", "[1]",
		 "params.settings: expected a mapping of scalars, got a list"},
		{"n", "settings", "{\"A\":\"1\\nB=2\"}", "has a line break"},
		{"u", "path", NULL, "params.missing required key \"path\""},
		{"u", "evil", "1", "unknown key \"evil\" for step type \"ucx\""},
		{"c", "argv", "[]", "argv: expected a non-empty list"},
		{"c", "timeout", "\"forever\"", "timeout: bad duration"},
		{"q", "pfc", "[9]", "pfc: priorities must be distinct values 0-7"},
		{"svc", "state", "\"on\"", "state: expected started"},
		{"p", "state", "\"latest\"", "state: expected present or absent"},
		{"r", "uri", "\"http://developer.download.nvidia.com/\"", "is not an https:// URL"},
		{"r", "key_url", "\"file:///tmp/k.pub\"", "key_url: \"file:///tmp/k.pub\" is not"},
		{"r", "key_path", "\"/etc/apt/trusted.gpg.d/k.gpg\"", "key_path: "},
		{"r", "fingerprint", "\"nope\"", "fingerprint: \"nope\" is not a key fingerprint"},
		{"r", "architectures", "[\"amd64\\nX: y\"]", "bad architecture"},
		{"ph", "version", "\"1.0\\nPin: x\"", "version: bad constraint"},
		/* A kmod option: the value that is refused is named, not only its key. */
		{"k", "options", "{\"prof_sel\":\"1\\nblacklist nvme\"}",
		 "options: prof_sel: bad value \"1\\nblacklist nvme\" (one word"},
		{"k", "options", "{\"prof_sel\":\"1 debug=1\"}",
		 "options: prof_sel: bad value \"1 debug=1\""},
		{"k", "options", "{\"prof sel\":\"1\"}", "options: bad option name \"prof sel\""},
		{"fw", "minimum", "[{\"model\":\"x\",\"device_id\":\"0x1021\"}]",
		 "needs model, device_id and version"},
		{"l", "mtu", "1", "mtu: expected 68-65535"},
		{"q2", "dscp2prio", "{\"64\":\"3\"}", "bad DSCP \"64\""},
		{"a", "that",
		 "[{\"fact\":\"x\",\"op\":\"eval\",\"value\":1,\"quantifier\":\"all\"}]",
		 "unknown operator \"eval\""},
		{"a", "that", "[{\"fact\":\"x\",\"op\":\"==\",\"value\":1}]",
		 "missing required key \"quantifier\""},
	};
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *copy = json_deep_copy(plan);
		json_t *params = json_object_get(plan_step(copy, cases[i].step), "params");

		if (cases[i].json)
			json_object_set_new(params, cases[i].key,
					    json_loads(cases[i].json, JSON_DECODE_ANY, NULL));
		else
			json_object_del(params, cases[i].key);
		err[0] = '\0';
		assert_int_equal(playbook_plan_validate(copy, err, sizeof(err)), -RY_E_INVALID);
		if (!strstr(err, cases[i].want))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, cases[i].want);
		json_decref(copy);
	}
	/* Whole-document tampering. */
	{
		json_t *copy = json_deep_copy(plan);

		json_object_set_new(plan_step(copy, "u"), "type", json_string("shell"));
		assert_int_equal(playbook_plan_validate(copy, err, sizeof(err)), -RY_E_INVALID);
		assert_non_null(strstr(err, "unknown type"));
		json_object_set_new(plan_step(copy, "u"), "type", json_string("ucx"));
		json_object_set_new(plan_step(copy, "u"), "name", json_string("a"));
		assert_int_equal(playbook_plan_validate(copy, err, sizeof(err)), -RY_E_INVALID);
		assert_non_null(strstr(err, "duplicate step name"));
		json_object_set_new(plan_step(copy, "a"), "name", json_string("u"));
		assert_int_equal(playbook_plan_validate(copy, NULL, 0), 0);
		json_object_set_new(copy, "schema", json_integer(2));
		assert_int_equal(playbook_plan_validate(copy, err, sizeof(err)), -RY_E_INVALID);
		json_object_set_new(copy, "schema", json_integer(1));
		json_object_set_new(copy, "sha256", json_string("abc"));
		assert_int_equal(playbook_plan_validate(copy, err, sizeof(err)), -RY_E_INVALID);
		json_decref(copy);
		assert_int_equal(
			playbook_plan_validate(json_object_get(plan, "steps"), err, sizeof(err)),
			-RY_E_INVALID);
	}
	json_decref(plan);
	json_decref(facts);
	playbook_free(pb);
}

static void test_conditions_and_versions(void **state)
{
	json_t *facts = json_pack("{s:[{s:s,s:[{s:s},{s:s}]},{s:s,s:[{s:s}]}], s:s, s:[s,s]}",
				  "devs", "name", "a", "ports", "state", "UP", "state", "DOWN",
				  "name", "b", "ports", "state", "UP", "ver", "24.10-1.1.4.0",
				  "mods", "mlx5_core", "nvidia");
	static const struct {
		const char *cond;
		int rc;
		bool ok;
	} cases[] = {
		{"{\"fact\":\"devs[*].ports[*].state\",\"op\":\"==\",\"value\":\"UP\"}", 0, false},
		{"{\"fact\":\"devs[*].ports[*].state\",\"op\":\"==\",\"value\":\"UP\","
		 "\"quantifier\":\"any\"}",
		 0, true},
		{"{\"fact\":\"devs[*].ports[*].state\",\"op\":\"==\",\"value\":\"GONE\","
		 "\"quantifier\":\"none\"}",
		 0, true},
		{"{\"fact\":\"devs[*].ports[*].state\",\"op\":\"count==\",\"value\":3}", 0, true},
		{"{\"fact\":\"devs\",\"op\":\"count>=\",\"value\":3}", 0, false},
		{"{\"fact\":\"devs[1].name\",\"op\":\"matches\",\"value\":\"^[a-c]$\"}", 0, true},
		{"{\"fact\":\"ver\",\"op\":\"version>=\",\"value\":\"24.10\"}", 0, true},
		{"{\"fact\":\"ver\",\"op\":\"version<\",\"value\":\"24.10-1.1.4.1\"}", 0, true},
		{"{\"fact\":\"mods\",\"op\":\"contains\",\"value\":\"nvidia\"}", 0, true},
		{"{\"fact\":\"mods\",\"op\":\"contains\",\"value\":\"nvidia_peermem\"}", 0, false},
		{"{\"fact\":\"ofed.version\",\"op\":\"==\",\"value\":\"x\"}", -ENOENT, false},
		{"{\"fact\":\"ver\",\"op\":\"matches\",\"value\":\"(\"}", -EINVAL, false},
	};
	char msg[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *c = json_loads(cases[i].cond, 0, NULL);
		bool ok = !cases[i].ok;

		assert_non_null(c);
		msg[0] = '\0';
		assert_int_equal(playbook_cond_eval(c, facts, &ok, msg, sizeof(msg)), cases[i].rc);
		if (cases[i].rc == 0 && ok != cases[i].ok)
			fail_msg("case %zu: got %d (%s)", i, ok, msg);
		json_decref(c);
	}
	{
		json_t *c = json_loads(cases[0].cond, 0, NULL);
		bool ok = true;

		assert_int_equal(playbook_cond_eval(c, facts, &ok, msg, sizeof(msg)), 0);
		assert_string_equal(msg, "devs[*].ports[*].state == UP failed: got "
					 "devs[0].ports[1].state = DOWN");
		json_decref(c);
	}
	assert_true(playbook_version_compare("24.10-1.1.4.0", "24.10") > 0);
	assert_true(playbook_version_compare("1.0~rc1", "1.0") < 0);
	assert_true(playbook_version_compare("2:1.0", "10.0") > 0);
	assert_true(playbook_version_compare("550.127.05", "550.54") > 0);
	assert_int_equal(playbook_version_compare("1.02", "1.2"), 0);
	json_decref(facts);
}

static void test_cmd_check(void **state)
{
	char *good = src_path("playbooks/h200-ndr-ib.yaml");
	char *bad = src_path("tests/fixtures/playbooks/bad/unknown-step-type.yaml");
	char *facts_path = NULL, *out_buf = NULL, *err_buf = NULL;
	size_t out_len = 0, err_len = 0;
	json_t *facts = fixture_facts("h200-ib");
	FILE *out, *err;
	char tmpl[] = "/tmp/test_playbook_facts_XXXXXX";
	int fd = mkstemp(tmpl);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(json_dumpfd(facts, fd, 0), 0);
	close(fd);
	facts_path = tmpl;
	out = open_memstream(&out_buf, &out_len);
	err = open_memstream(&err_buf, &err_len);
	assert_int_equal(playbook_cmd_check(good, NULL, out, err), 0);
	assert_int_equal(playbook_cmd_check(good, facts_path, out, err), 0);
	assert_int_equal(playbook_cmd_check(bad, NULL, out, err), 1);
	assert_int_equal(playbook_cmd_check(good, "/nonexistent/facts.json", out, err), 2);
	assert_int_equal(playbook_cmd_check("/nonexistent/pb.yaml", NULL, out, err), 2);
	fclose(out);
	fclose(err);
	assert_non_null(strstr(out_buf, "NCCL_IB_HCA = \"mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,"
					"mlx5_5,mlx5_6,mlx5_7\""));
	assert_non_null(
		strstr(err_buf, "unknown-step-type.yaml:5:11: unknown step type \"shell\"\n"));
	unlink(tmpl);
	free(out_buf);
	free(err_buf);
	json_decref(facts);
	free(good);
	free(bad);
}

/* ---- Indexed facts: the same answers as the parsed document ------------------------------- */

/* Every path of v (prefix p), and with each array index also as "[*]" once and all at once:
 * appended to out. */
static void all_paths(const json_t *v, const char *p, const char *p_star, json_t *out)
{
	const char *k;
	json_t *e;
	size_t i;
	char sub[1024], sub_star[1024];

	if (*p)
		json_array_append_new(out, json_string(p));
	if (*p_star && strcmp(p, p_star) != 0)
		json_array_append_new(out, json_string(p_star));
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, e)
		{
			snprintf(sub, sizeof(sub), "%s%s%s", p, *p ? "." : "", k);
			snprintf(sub_star, sizeof(sub_star), "%s%s%s", p_star, *p_star ? "." : "",
				 k);
			all_paths(e, sub, sub_star, out);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, e)
		{
			snprintf(sub, sizeof(sub), "%s[%zu]", p, i);
			snprintf(sub_star, sizeof(sub_star), "%s[*]", p_star);
			all_paths(e, sub, sub_star, out);
			/* The wildcard at this level only. */
			snprintf(sub_star, sizeof(sub_star), "%s[*]", p);
			all_paths(e, sub_star, sub_star, out);
		}
		snprintf(sub, sizeof(sub), "%s[%zu]", p, json_array_size(v) + 3);
		json_array_append_new(out, json_string(sub)); /* past the end */
	}
}

/* Lookups of every path (and a few that miss), targeting and rendering of every playbook:
 * indexed text against the parsed document. */
static void check_indexed(const char *text, const char *const *playbooks, size_t n_pb)
{
	json_t *facts = json_loads(text, 0, NULL), *paths = json_array(), *p;
	struct playbook_facts *f = NULL;
	size_t i;

	assert_non_null(facts);
	assert_int_equal(playbook_facts_index(text, strlen(text), &f), 0);
	all_paths(facts, "", "", paths);
	json_array_append_new(paths, json_string("no_such_fact"));
	json_array_append_new(paths, json_string("no_such_fact[*].x"));
	assert_true(json_array_size(paths) > 3);
	json_array_foreach(paths, i, p)
	{
		json_t *a = NULL, *b = NULL;
		const char *path = json_string_value(p);
		int ra = playbook_fact_lookup(facts, path, &a);
		int rb = playbook_facts_lookup(f, path, &b);

		if (ra != rb || (ra == 0 && !json_equal(a, b)))
			fail_msg("lookup %s: parsed %d, indexed %d", path, ra, rb);
		json_decref(a);
		json_decref(b);
	}
	for (i = 0; i < n_pb; i++) {
		struct playbook *pb = load_ok(playbooks[i]);
		struct pb_diags d, di;
		json_t *plan = NULL, *plan_i = NULL;
		int r, ri;

		assert_int_equal(playbook_target_matches(pb, "c", facts),
				 playbook_target_matches_facts(pb, "c", f));
		pb_diags_init(&d);
		pb_diags_init(&di);
		r = playbook_render(pb, facts, &plan, &d);
		ri = playbook_render_facts(pb, f, &plan_i, &di);
		assert_int_equal(r, ri);
		assert_int_equal(d.count, di.count);
		for (size_t k = 0; k < d.count; k++)
			assert_string_equal(d.items[k].message, di.items[k].message);
		if (r == 0 && !json_equal(plan, plan_i))
			fail_msg("%s: the plan differs on indexed facts", playbooks[i]);
		json_decref(plan);
		json_decref(plan_i);
		pb_diags_done(&d);
		pb_diags_done(&di);
		playbook_free(pb);
	}
	playbook_facts_free(f);
	json_decref(paths);
	json_decref(facts);
}

static void test_indexed_facts(void **state)
{
	static const char *const pbs[] = {
		"playbooks/h200-ndr-ib.yaml",
		"playbooks/h200-roce.yaml",
		"playbooks/revalidate.yaml",
		"playbooks/tcp-baseline.yaml",
		"tests/fixtures/playbooks/good/all-steps.yaml",
	};
	static const char *const roots[] = {"h200-ib", "h200-roce", "h200-degraded",
					    "h200-miscabled", "h200-vm"};
	/* What a parse of the whole document decides: the last of duplicate keys, escapes in
	 * keys and values, numbers of every form, nesting, odd whitespace. */
	static const char tricky[] =
		" {\"a\": {\"b\": [1, 2.5, -3e2, true, false, null, \"x\"], \"b\": [[{\"c\": 1}]]},"
		"\r\n\t\"k\\u0065y\": \"v\\\"\\\\\\u00e9\", \"gpus\": [{\"model\": \"H200\"}, {}, "
		"7],"
		" \"e\": {}, \"l\": [], \"n\": {\"m\": {\"o\": {\"p\": [0, [1, [2]]]}}},"
		" \"rdma\": {\"devices\": [{\"name\": \"mlx5_0\", \"ports\": [{\"state\": "
		"\"ACTIVE\"}]},"
		" {\"ports\": 3}]}, \"big\": 9007199254740993, \"s\": \"}]\\\"[{\"} ";
	(void)state;
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		json_t *facts = fixture_facts(roots[i]);
		char *text = json_dumps(facts, JSON_COMPACT);

		assert_non_null(text);
		check_indexed(text, pbs, sizeof(pbs) / sizeof(pbs[0]));
		free(text);
		/* Indented, as an agent may send it. */
		text = json_dumps(facts, JSON_INDENT(2));
		check_indexed(text, pbs, 1);
		free(text);
		json_decref(facts);
	}
	check_indexed(tricky, pbs, sizeof(pbs) / sizeof(pbs[0]));
}

static void test_indexed_facts_refused(void **state)
{
	static const char *const bad[] = {
		"",
		"[]",
		"\"s\"",
		"{",
		"{\"a\":}",
		"{\"a\" 1}",
		"{\"a\":1,}",
		"{\"a\":tru}",
		"{\"a\":1} x",
		"{a:1}",
		"{\"a\":\"\x01\"}",
		"{\"a\":\"\\q\"}",
		"{\"a\":\"\\u12\"}",
		"{\"a\":[1 2]}",
		"{\"a\":\"open}",
		"{\"a\":1}}",
		"{,}",
		"{\"a\":[}",
		"{\"a\":1,,\"b\":2}",
	};
	static const char big[] = "{\"a\": 1e999, \"b\": 2}";
	struct playbook_facts *f = NULL;
	json_t *v = NULL;
	char *deep;
	size_t n = 600;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (playbook_facts_index(bad[i], strlen(bad[i]), &f) != -RY_E_INVALID)
			fail_msg("indexed: %s", bad[i]);
	/* A NUL byte is not JSON: refused, also after a number, where jansson drops it (facts
	 * never hold one: they arrive and are stored as C strings). */
	assert_int_equal(playbook_facts_index("{\"a\":1\0}", 8, &f), -RY_E_INVALID);
	/* Nested deeper than the indexer goes. */
	deep = calloc(1, 2 * n + 16);
	assert_non_null(deep);
	strcpy(deep, "{\"a\":");
	for (size_t i = 0; i < n; i++)
		strcat(deep, "[");
	for (size_t i = 0; i < n; i++)
		strcat(deep, "]");
	strcat(deep, "}");
	assert_int_equal(playbook_facts_index(deep, strlen(deep), &f), -RY_E_INVALID);
	free(deep);
	/* A value jansson refuses is reported when a lookup reaches it, not before. */
	assert_int_equal(playbook_facts_index(big, strlen(big), &f), 0);
	assert_int_equal(playbook_facts_lookup(f, "a", &v), -RY_E_INVALID);
	assert_int_equal(playbook_facts_lookup(f, "b", &v), 0);
	assert_int_equal(json_integer_value(v), 2);
	json_decref(v);
	assert_int_equal(playbook_facts_lookup(f, "c", &v), -ENOENT);
	assert_int_equal(playbook_facts_lookup(f, "b..", &v), -EINVAL);
	playbook_facts_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shipped_ib),
		cmocka_unit_test(test_shipped_roce),
		cmocka_unit_test(test_miscabled),
		cmocka_unit_test(test_degraded),
		cmocka_unit_test(test_revalidate_changes_nothing),
		cmocka_unit_test(test_bad_corpus),
		cmocka_unit_test(test_utf8_and_positions),
		cmocka_unit_test(test_command_paths),
		cmocka_unit_test(test_single_quoted),
		cmocka_unit_test(test_size_limit_and_all_errors),
		cmocka_unit_test(test_render_types_and_filters),
		cmocka_unit_test(test_fact_path_name_limit),
		cmocka_unit_test(test_plan_validate_tampered),
		cmocka_unit_test(test_conditions_and_versions),
		cmocka_unit_test(test_cmd_check),
		cmocka_unit_test(test_indexed_facts),
		cmocka_unit_test(test_indexed_facts_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
