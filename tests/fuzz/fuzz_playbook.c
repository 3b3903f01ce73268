/* Fuzz target: the playbook parser and renderer (common/playbook). The input is a playbook's
 * text. It is parsed as `playbook check` and the controller's deploy do; one that parses is
 * rendered against a fixture node's facts and against none, and the plan is checked as the
 * agent checks what arrives. Invariants besides "no crash, no leak, no UB": a refused playbook
 * has at least one diagnostic, each inside the text (line, column); a plan the renderer made
 * passes playbook_plan_validate(), also after a trip through its JSON text. */
#include "tests/fuzz/fuzz_util.h"

#include "common/playbook/playbook.h"
#include "nodeagent/facts/facts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static json_t *facts_ib, *facts_empty;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char *root = fuzz_src_path("tests/fixtures/sysroots/h200-ib");

	(void)argc;
	(void)argv;
	fuzz_quiet_logs();
	if (facts_collect(root, &facts_ib) < 0)
		abort();
	free(root);
	facts_empty = json_object();
	return 0;
}

static void check_diags(const struct pb_diags *d, const uint8_t *data, size_t size)
{
	int lines = 1;

	/* YAML's line breaks (LF, CR LF, CR), and NEL, LS, PS that a %YAML 1.1 text may use. */
	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n' ||
			 (data[i] == '\r' && (i + 1 == size || data[i + 1] != '\n')) ||
			 (data[i] == 0xc2 && i + 1 < size && data[i + 1] == 0x85) ||
			 (data[i] == 0xe2 && i + 2 < size && data[i + 1] == 0x80 &&
			  (data[i + 2] == 0xa8 || data[i + 2] == 0xa9));
	FUZZ_CHECK(d->count >= 1 || d->dropped >= 1, "an error without a diagnostic");
	for (size_t i = 0; i < d->count; i++) {
		const struct pb_diag *g = &d->items[i];

		FUZZ_CHECK(g->file && g->message && g->message[0], "diagnostic %zu is empty", i);
		FUZZ_CHECK(g->line >= 1 && g->line <= lines && g->col >= 1,
			   "diagnostic %zu at %d:%d of a %d-line text: %s", i, g->line, g->col,
			   lines, g->message);
	}
}

static void render(const struct playbook *pb, const json_t *facts)
{
	struct pb_diags d;
	json_t *plan = NULL, *back;
	char err[512] = "", *text;
	int r;

	pb_diags_init(&d);
	r = playbook_render(pb, facts, &plan, &d);
	if (r < 0) {
		FUZZ_CHECK(plan == NULL, "a failed render returned a plan");
		FUZZ_CHECK(d.count >= 1 || d.dropped >= 1, "render failed without a diagnostic");
		pb_diags_done(&d);
		return;
	}
	FUZZ_CHECK(json_array_size(json_object_get(plan, "steps")) == playbook_step_count(pb),
		   "plan has %zu steps, playbook %zu",
		   json_array_size(json_object_get(plan, "steps")), playbook_step_count(pb));
	r = playbook_plan_validate(plan, err, sizeof(err));
	FUZZ_CHECK(r == 0, "a rendered plan does not validate: %s", err);
	/* What the agent receives: the plan's text, parsed again. */
	text = json_dumps(plan, JSON_COMPACT);
	FUZZ_CHECK(text != NULL, "plan not serialisable");
	back = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	FUZZ_CHECK(back != NULL, "plan text does not parse: %s", text);
	r = playbook_plan_validate(back, err, sizeof(err));
	FUZZ_CHECK(r == 0, "a rendered plan's text does not validate: %s", err);
	json_decref(back);
	free(text);
	json_decref(plan);
	pb_diags_done(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct playbook *pb = NULL;
	struct pb_diags d;
	int r;

	pb_diags_init(&d);
	r = playbook_parse((const char *)data, size, "fuzz.yaml", &pb, &d);
	if (r < 0) {
		FUZZ_CHECK(pb == NULL, "a refused playbook was returned");
		if (r != -ENOMEM)
			check_diags(&d, data, size);
		pb_diags_print(&d, fuzz_devnull());
		pb_diags_done(&d);
		return 0;
	}
	FUZZ_CHECK(d.count == 0, "a valid playbook with %zu diagnostics", d.count);
	FUZZ_CHECK(playbook_name(pb) && playbook_version(pb) && playbook_sha256(pb),
		   "accessor returned NULL");
	for (size_t i = 0; i < playbook_step_count(pb); i++)
		FUZZ_CHECK(playbook_step_name(pb, i) && playbook_step_type(pb, i), "step %zu", i);
	(void)playbook_target_matches(pb, "c", facts_ib);
	(void)playbook_target_matches(pb, NULL, facts_empty);
	render(pb, facts_ib);
	render(pb, facts_empty);
	playbook_free(pb);
	pb_diags_done(&d);
	return 0;
}
