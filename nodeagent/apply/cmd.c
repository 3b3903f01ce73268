/* `railyard-agent apply`: render a playbook with this node's own facts and apply it locally,
 * printing per-step status and diffs (or one JSON document). */
#include "nodeagent/apply/apply.h"

#include "common/playbook/playbook.h"
#include "common/util/error.h"
#include "nodeagent/facts/facts.h"

#include <string.h>

static void print_indented(FILE *out, const char *text)
{
	while (text && *text) {
		size_t n = strcspn(text, "\n");

		fprintf(out, "    %.*s\n", (int)n, text);
		text += n;
		if (*text == '\n')
			text++;
	}
}

int apply_cmd(const char *playbook_file, const char *sysroot, bool check, bool json, FILE *out)
{
	struct apply_summary s = {0};
	struct playbook *pb = NULL;
	struct pb_diags d;
	json_t *facts = NULL, *plan = NULL;
	int r, code = 2;

	pb_diags_init(&d);
	r = facts_collect(sysroot, &facts);
	if (r < 0) {
		fprintf(out, "apply: cannot collect facts: %s\n", ry_strerror(r));
		goto out;
	}
	r = playbook_load(playbook_file, &pb, &d);
	if (r == 0)
		r = playbook_render(pb, facts, &plan, &d);
	if (r < 0) {
		pb_diags_print(&d, out);
		if (d.count == 0)
			fprintf(out, "%s: %s\n", playbook_file, ry_strerror(r));
		goto out;
	}
	r = apply_plan(
		plan, &(struct apply_opts){.sysroot = sysroot, .check_mode = check, .facts = facts},
		&s);
	if (r < 0) {
		fprintf(out, "apply: %s\n", ry_strerror(r));
		goto out;
	}
	code = s.n_failed == 0 ? 0 : 1;
	if (json) {
		json_t *doc =
			json_pack("{s:{s:s, s:s, s:s}, s:o}", "playbook", "name", playbook_name(pb),
				  "version", playbook_version(pb), "sha256", playbook_sha256(pb),
				  "summary", apply_summary_to_json(&s));

		if (!doc || json_dumpf(doc, out, JSON_INDENT(2)) < 0) {
			fprintf(out, "apply: out of memory\n");
			code = 2;
		}
		fputc('\n', out);
		json_decref(doc);
		goto out;
	}
	fprintf(out, "playbook %s %s%s on %s\n", playbook_name(pb), playbook_version(pb),
		check ? " (check mode: nothing is changed)" : "", sysroot ? sysroot : "/");
	for (size_t i = 0; i < s.n_steps; i++) {
		const struct apply_step_result *st = &s.steps[i];

		/* The message's first line is its headline, the rest the detail below it. */
		int head = (int)strcspn(st->message, "\n");

		fprintf(out, "[%-7s] %s (%s, %lld ms)%s%.*s%s\n", apply_status_name(st->status),
			st->name, st->type, (long long)st->duration_ms, st->message[0] ? ": " : "",
			head, st->message, st->rolled_back ? " [rolled back]" : "");
		if (st->message[head])
			print_indented(out, st->message + head + 1);
		print_indented(out, st->diff);
	}
	fprintf(out, "ok=%zu changed=%zu failed=%zu skipped=%zu%s\n", s.n_ok, s.n_changed,
		s.n_failed, s.n_skipped, s.stopped ? " (stopped at the failed step)" : "");
out:
	apply_summary_done(&s);
	json_decref(plan);
	json_decref(facts);
	playbook_free(pb);
	pb_diags_done(&d);
	return code;
}
