/* "playbook check": offline validation of a playbook file and, with a facts document, rendering
 * and a summary of the plan. Exit codes: 0 valid, 1 invalid, 2 usage or I/O error. */
#include "common/playbook/playbook_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util/error.h"
#include "common/util/fs.h"

/* Print one rendered parameter value on a line, compactly. */
static void print_params(const json_t *params, FILE *out)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)params, k, v)
	{
		char *t;

		if (json_is_string(v)) {
			const char *s = json_string_value(v);

			/* Multi-line content is summarised. */
			if (strchr(s, '\n')) {
				fprintf(out, "    %s: <%zu bytes>\n", k, strlen(s));
				continue;
			}
			fprintf(out, "    %s: %s\n", k, s);
			continue;
		}
		if (json_is_object(v) && strcmp(k, "settings") == 0) {
			const char *sk;
			json_t *sv;

			fprintf(out, "    %s:\n", k);
			json_object_foreach(v, sk, sv)
			{
				t = json_dumps(sv, JSON_ENCODE_ANY | JSON_COMPACT);
				fprintf(out, "      %s = %s\n", sk, t ? t : "?");
				free(t);
			}
			continue;
		}
		t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		fprintf(out, "    %s: %s\n", k, t ? t : "?");
		free(t);
	}
}

int playbook_cmd_check(const char *file, const char *facts_json_file, FILE *out, FILE *err)
{
	struct pb_diags d;
	struct playbook *pb = NULL;
	json_t *facts = NULL, *plan = NULL, *st;
	json_error_t jerr;
	char *buf = NULL;
	size_t len = 0, i;
	int r, code = 1;

	pb_diags_init(&d);
	if (!file) {
		fprintf(err, "usage: playbook check FILE [--facts FACTS.json]\n");
		return 2;
	}
	r = playbook_load(file, &pb, &d);
	if (r < 0) {
		pb_diags_print(&d, err);
		/* An unreadable file is an I/O error; anything the parser said is "invalid". */
		code = (r == -RY_E_INVALID || r == -RY_E_TOO_BIG) ? 1 : 2;
		goto out;
	}
	if (!facts_json_file) {
		fprintf(out, "%s: valid (%s %s, %zu steps, sha256 %s)\n", file, playbook_name(pb),
			playbook_version(pb), playbook_step_count(pb), playbook_sha256(pb));
		code = 0;
		goto out;
	}
	r = fs_read_file(facts_json_file, 64 * 1024 * 1024, &buf, &len);
	if (r < 0) {
		fprintf(err, "%s: cannot read: %s\n", facts_json_file, ry_strerror(r));
		code = 2;
		goto out;
	}
	facts = json_loadb(buf, len, 0, &jerr);
	if (!json_is_object(facts)) {
		fprintf(err, "%s:%d:%d: invalid facts JSON: %s\n", facts_json_file, jerr.line,
			jerr.column, facts ? "not an object" : jerr.text);
		code = 2;
		goto out;
	}
	r = playbook_render(pb, facts, &plan, &d);
	if (r < 0) {
		pb_diags_print(&d, err);
		if (r != -RY_E_INVALID)
			fprintf(err, "%s: %s\n", file, ry_strerror(r));
		goto out;
	}
	fprintf(out, "%s: valid; plan for %s (%s %s):\n", file,
		json_string_value(json_object_get(facts, "hostname"))
			? json_string_value(json_object_get(facts, "hostname"))
			: "node",
		playbook_name(pb), playbook_version(pb));
	json_array_foreach(json_object_get(plan, "steps"), i, st)
	{
		fprintf(out, "  %zu. %s [%s]%s\n", i + 1,
			json_string_value(json_object_get(st, "name")),
			json_string_value(json_object_get(st, "type")),
			json_is_true(json_object_get(st, "continue_on_error"))
				? " (continue on error)"
				: "");
		if (json_object_get(st, "when")) {
			char *w = json_dumps(json_object_get(st, "when"), JSON_COMPACT);

			fprintf(out, "    when: %s\n", w ? w : "?");
			free(w);
		}
		print_params(json_object_get(st, "params"), out);
	}
	code = 0;
out:
	json_decref(plan);
	json_decref(facts);
	free(buf);
	playbook_free(pb);
	pb_diags_done(&d);
	return code;
}
