/* Fuzz target: a facts document as a node reports it (docs/facts.md), read by the controller.
 * The input is the document's text. It is checked as the store checks facts before it keeps
 * them (bounded, JSON, no duplicate keys, an object); a document it keeps then goes through
 * everything that reads stored facts: the one-line summary of node tables (printed escaped),
 * the sign-off configuration snapshot, its flat form, diff and drift against a fixture node,
 * the shipped playbooks' targeting and rendering (a plan rendered from any facts still
 * validates), and fact lookups; and the same on the document indexed instead of parsed
 * (playbook_facts_index(): what the controller renders plans from), which must agree. */
#include "tests/fuzz/fuzz_util.h"

#include "common/facts/facts_doc.h"
#include "common/playbook/playbook.h"
#include "common/util/util.h"
#include "controller/signoff/snapshot.h"

#include <stdlib.h>
#include <string.h>

/* What the store accepts (controller/store: STORE_FACTS_MAX). */
#define FACTS_MAX (1024 * 1024)

static const char *const playbook_files[] = {
	"playbooks/h200-ndr-ib.yaml",
	"playbooks/h200-roce.yaml",
	"playbooks/revalidate.yaml",
	"playbooks/tcp-baseline.yaml",
};
static struct playbook *playbooks[sizeof(playbook_files) / sizeof(playbook_files[0])];
static json_t *fixture_nodes; /* [{hostname, snapshot}] of the h200-ib fixture */

static const char *const paths[] = {
	"rdma.devices[*].ports[*].state",
	"rdma.devices[0].name",
	"pci.devices[*].address",
	"gpus[*].pci_address",
	"nvidia_driver.open_kernel_module",
	"modules.loaded",
	"ofed.version",
	"os.version_id",
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char *p = fuzz_src_path("tests/fuzz/corpus/fuzz_facts/h200-ib.json");
	json_t *facts = json_load_file(p, 0, NULL);

	(void)argc;
	(void)argv;
	fuzz_quiet_logs();
	if (!facts)
		abort();
	fixture_nodes = json_pack("[{s:s, s:o}]", "hostname", "gpu-node-01", "snapshot",
				  so_snapshot(facts));
	json_decref(facts);
	free(p);
	for (size_t i = 0; i < sizeof(playbook_files) / sizeof(playbook_files[0]); i++) {
		struct pb_diags d;

		p = fuzz_src_path(playbook_files[i]);
		pb_diags_init(&d);
		if (playbook_load(p, &playbooks[i], &d) < 0) {
			pb_diags_print(&d, stderr);
			abort();
		}
		pb_diags_done(&d);
		free(p);
	}
	return 0;
}

static void snapshots(const json_t *facts)
{
	json_t *snap = so_snapshot(facts), *flat, *diff, *nodes, *drift, *g;
	size_t i;

	FUZZ_CHECK(snap != NULL, "no snapshot");
	flat = so_snapshot_flat(snap);
	FUZZ_CHECK(flat != NULL, "no flat snapshot");
	diff = so_snapshot_diff(json_object_get(json_array_get(fixture_nodes, 0), "snapshot"),
				snap);
	FUZZ_CHECK(json_is_array(diff), "no diff");
	json_decref(diff);
	diff = so_snapshot_diff(snap, snap);
	FUZZ_CHECK(json_array_size(diff) == 0, "a snapshot differs from itself");
	json_decref(diff);
	nodes = json_pack("[{s:s, s:O}, {s:s, s:O}]", "hostname", "gpu-node-01", "snapshot", snap,
			  "hostname", "gpu-node-02", "snapshot", snap);
	drift = so_drift(fixture_nodes, nodes);
	FUZZ_CHECK(drift != NULL, "no drift");
	json_array_foreach(json_object_get(drift, "drift"), i, g)
	{
		char *line = so_drift_line(g);

		FUZZ_CHECK(line != NULL, "no drift line");
		free(line);
	}
	json_decref(drift);
	json_decref(nodes);
	json_decref(flat);
	json_decref(snap);
}

/* Indexed facts (playbook_facts_index()) of the same text, or NULL when it holds a NUL byte:
 * jansson drops one that follows a number ("{\"a\":1\0}" parses), the index refuses it; facts
 * never hold one (they arrive and are stored as C strings, cut at the first NUL). Every other
 * document jansson parses as an object is indexed. */
static struct playbook_facts *indexed(const uint8_t *data, size_t size)
{
	struct playbook_facts *f = NULL;
	int r;

	if (memchr(data, 0, size))
		return NULL;
	r = playbook_facts_index((const char *)data, size, &f);
	FUZZ_CHECK(r == 0, "a document jansson parses as an object is not indexed: %d", r);
	return f;
}

/* One shipped playbook per input (chosen by its size), targeted and rendered against it, and
 * fact lookups; with f, the same on the indexed facts, which must give exactly the same. */
static void playbooks_against(const json_t *facts, const struct playbook_facts *f, size_t size)
{
	size_t i = size % (sizeof(playbooks) / sizeof(playbooks[0]));
	json_t *plan = NULL, *plan_i = NULL;
	struct pb_diags d, di;
	char err[512] = "";
	bool match = playbook_target_matches(playbooks[i], "c", facts);
	int r, ri;

	FUZZ_CHECK(!f || match == playbook_target_matches_facts(playbooks[i], "c", f),
		   "%s: targeting differs on indexed facts", playbook_files[i]);
	pb_diags_init(&d);
	pb_diags_init(&di);
	r = playbook_render(playbooks[i], facts, &plan, &d);
	if (r == 0)
		FUZZ_CHECK(playbook_plan_validate(plan, err, sizeof(err)) == 0,
			   "%s: a rendered plan does not validate: %s", playbook_files[i], err);
	else
		FUZZ_CHECK(plan == NULL && (d.count > 0 || d.dropped > 0),
			   "%s: render failed without a diagnostic", playbook_files[i]);
	if (f) {
		ri = playbook_render_facts(playbooks[i], f, &plan_i, &di);
		FUZZ_CHECK(r == ri && d.count == di.count, "%s: rendering differs on indexed facts",
			   playbook_files[i]);
		FUZZ_CHECK(r < 0 || json_equal(plan, plan_i),
			   "%s: the plan differs on indexed facts", playbook_files[i]);
		for (size_t k = 0; k < d.count && k < di.count; k++)
			FUZZ_CHECK(strcmp(d.items[k].message, di.items[k].message) == 0,
				   "%s: a diagnostic differs on indexed facts: %s | %s",
				   playbook_files[i], d.items[k].message, di.items[k].message);
	}
	json_decref(plan);
	json_decref(plan_i);
	pb_diags_done(&d);
	pb_diags_done(&di);
	for (size_t k = 0; k < sizeof(paths) / sizeof(paths[0]); k++) {
		json_t *v = NULL, *vi = NULL;

		r = playbook_fact_lookup(facts, paths[k], &v);
		if (f) {
			ri = playbook_facts_lookup(f, paths[k], &vi);
			FUZZ_CHECK(r == ri && (r < 0 || json_equal(v, vi)),
				   "lookup %s differs on indexed facts (%d, %d)", paths[k], r, ri);
		}
		json_decref(v);
		json_decref(vi);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *facts;
	char *line, *safe;

	if (size > FACTS_MAX)
		return 0;
	facts = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (!facts)
		return 0;
	/* The summary takes any value (a row whose facts are not an object shows "?"). */
	line = facts_summary(facts);
	FUZZ_CHECK(line != NULL, "no summary");
	safe = util_escape(line, false);
	FUZZ_CHECK(safe != NULL && !strchr(safe, '\n') && !strchr(safe, '\x1b'),
		   "an escaped summary holds a control character");
	free(safe);
	free(line);
	if (json_is_object(facts)) {
		struct playbook_facts *f = indexed(data, size);

		snapshots(facts);
		playbooks_against(facts, f, size);
		playbook_facts_free(f);
	}
	json_decref(facts);
	return 0;
}
