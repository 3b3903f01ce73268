/* Helpers shared by the apply engine's unit tests (see test_apply_util.h). */
#include "tests/unit/test_apply_util.h"

#include "common/playbook/playbook.h"
#include "common/util/fs.h"
#include "nodeagent/apply/runner.h"

#include <errno.h>
#include <ftw.h>
#include <libgen.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static void run_ok(const char *const *argv)
{
	struct runner_result res;

	assert_int_equal(runner_run(&(struct runner_cmd){.argv = argv}, &res), 0);
	if (res.exit_code != 0)
		fprintf(stderr, "%s: %s\n", argv[0], res.err);
	assert_int_equal(res.exit_code, 0);
	runner_result_done(&res);
}

char *tu_sysroot(const char *name)
{
	const char *src = getenv("RAILYARD_SOURCE_DIR");
	char tmpl[] = "/tmp/railyard-apply-test-XXXXXX", *dir, from[4096], bin[4096], sbin[4096];

	assert_non_null(src);
	assert_non_null(mkdtemp(tmpl));
	dir = strdup(tmpl);
	assert_non_null(dir);
	if (name && *name) {
		snprintf(from, sizeof(from), "%s/tests/fixtures/sysroots/%s/.", src, name);
		run_ok((const char *const[]){"cp", "-a", from, dir, NULL});
	}
	snprintf(bin, sizeof(bin), "%s/tests/fixtures/bin/.", src);
	snprintf(sbin, sizeof(sbin), "%s/usr/local/sbin", dir);
	assert_int_equal(fs_mkdir_p(sbin, 0755), 0);
	run_ok((const char *const[]){"cp", "-a", bin, sbin, NULL});
	return dir;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p) < 0 ? -1 : 0;
}

void tu_rm(char *dir)
{
	if (!dir)
		return;
	(void)nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

static uint64_t fnv(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 1099511628211ull;
	}
	return h;
}

static uint64_t hash_sum;
static size_t hash_root_len;

static int hash_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	uint64_t h = 1469598103934665603ull;
	char buf[4096];

	(void)flag;
	(void)ftw;
	h = fnv(h, p + hash_root_len, strlen(p + hash_root_len));
	h = fnv(h, &st->st_mode, sizeof(st->st_mode));
	h = fnv(h, &st->st_uid, sizeof(st->st_uid));
	h = fnv(h, &st->st_mtim, sizeof(st->st_mtim));
	h = fnv(h, &st->st_size, sizeof(st->st_size));
	if (S_ISLNK(st->st_mode)) {
		ssize_t n = readlink(p, buf, sizeof(buf));

		if (n > 0)
			h = fnv(h, buf, (size_t)n);
	} else if (S_ISREG(st->st_mode)) {
		FILE *f = fopen(p, "rb");
		size_t n;

		assert_non_null(f);
		while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
			h = fnv(h, buf, n);
		fclose(f);
	}
	hash_sum += h * 0x9e3779b97f4a7c15ull + (h >> 7);
	return 0;
}

uint64_t tu_tree_hash(const char *dir)
{
	hash_sum = 0;
	hash_root_len = strlen(dir);
	assert_int_equal(nftw(dir, hash_entry, 16, FTW_PHYS), 0);
	return hash_sum;
}

void tu_write(const char *root, const char *rel, const char *content)
{
	char *p = fs_path_join(root, rel), *d;

	assert_non_null(p);
	d = strdup(p);
	assert_int_equal(fs_mkdir_p(dirname(d), 0755), 0);
	assert_int_equal(fs_write_file_atomic(p, content, strlen(content), 0644), 0);
	free(d);
	free(p);
}

char *tu_read(const char *root, const char *rel)
{
	char *p = fs_path_join(root, rel), *buf = NULL;
	int r;

	assert_non_null(p);
	r = fs_read_file(p, 1 << 20, &buf, NULL);
	free(p);
	return r == 0 ? buf : NULL;
}

bool tu_exists(const char *root, const char *rel)
{
	char *p = fs_path_join(root, rel);
	struct stat st;
	bool e = lstat(p, &st) == 0;

	free(p);
	return e;
}

json_t *tu_plan(void)
{
	json_t *p = json_pack("{s:i, s:s, s:s, s:s, s:[]}", "schema", PB_PLAN_SCHEMA, "name",
			      "test", "version", "1", "sha256",
			      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			      "steps");

	assert_non_null(p);
	return p;
}

void tu_plan_add(json_t *plan, const char *name, const char *type, const char *params_json,
		 bool continue_on_error)
{
	const struct pb_step_schema *s = pb_step_schema_find(type);
	json_error_t err;
	json_t *params = json_loads(params_json, 0, &err), *step;

	if (!params)
		fprintf(stderr, "bad params %s: %s\n", params_json, err.text);
	assert_non_null(params);
	assert_non_null(s);
	for (const struct pb_field *f = s->fields; f->key; f++)
		if (f->def && !json_object_get(params, f->key))
			json_object_set_new(params, f->key,
					    json_loads(f->def, JSON_DECODE_ANY, NULL));
	step = json_pack("{s:s, s:s, s:b, s:o}", "name", name, "type", type, "continue_on_error",
			 continue_on_error, "params", params);
	assert_non_null(step);
	assert_int_equal(json_array_append_new(json_object_get(plan, "steps"), step), 0);
}

int tu_calls(const char *root, const char *needle)
{
	char *log = tu_read(root, "var/log/railyard-doubles.log"), *save = NULL;
	int n = 0;

	if (!log)
		return 0;
	for (char *l = strtok_r(log, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		n += strstr(l, needle) != NULL;
	free(log);
	return n;
}

void tu_plan_assert_valid(const json_t *plan)
{
	char err[512] = "";

	if (playbook_plan_validate(plan, err, sizeof(err)) != 0)
		fail_msg("invalid plan: %s", err);
}

char *tu_test_key(const char *root, const char *rel)
{
	const char *src = getenv("RAILYARD_SOURCE_DIR");
	char script[4096], out[4096], *fpr;
	struct runner_result res;

	snprintf(script, sizeof(script), "%s/tests/fixtures/gen-test-key.sh", src);
	snprintf(out, sizeof(out), "%s/%s", root, rel);
	tu_write(root, rel, "");
	if (access("/usr/bin/gpg", X_OK) != 0) {
		fprintf(stderr, "SKIP: gpg is not installed (apt-get install gpg gpg-agent)\n");
		exit(77);
	}
	assert_int_equal(runner_run(&(struct runner_cmd){.argv = (const char *const[]){"sh", script,
										       out, NULL},
							 .timeout_ms = 60000},
				    &res),
			 0);
	if (res.exit_code != 0)
		fprintf(stderr, "gen-test-key.sh: %s\n", res.err);
	assert_int_equal(res.exit_code, 0);
	res.out[strcspn(res.out, "\n")] = '\0';
	assert_int_equal(strlen(res.out), 40);
	fpr = strdup(res.out);
	assert_non_null(fpr);
	runner_result_done(&res);
	return fpr;
}

struct tu_outcome tu_run1(const char *root, const char *type, const char *params, bool check,
			  const json_t *facts)
{
	struct apply_summary s;
	struct tu_outcome o = {0};
	json_t *plan = tu_plan();

	tu_plan_add(plan, "step", type, params, false);
	tu_plan_assert_valid(plan);
	assert_int_equal(apply_plan(plan,
				    &(struct apply_opts){
					    .sysroot = root, .check_mode = check, .facts = facts},
				    &s),
			 0);
	assert_int_equal(s.n_steps, 1);
	o.status = s.steps[0].status;
	snprintf(o.diff, sizeof(o.diff), "%s", s.steps[0].diff);
	snprintf(o.message, sizeof(o.message), "%s", s.steps[0].message);
	o.rolled_back = s.steps[0].rolled_back;
	apply_summary_done(&s);
	json_decref(plan);
	return o;
}
