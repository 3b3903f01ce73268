/* Node facts: runs every registered collector over a sysroot into one JSON document and renders
 * the one-line summary. Collectors live one group per file (facts_<group>.c). */
#include "nodeagent/facts/facts.h"
#include "nodeagent/facts/facts_int.h"

#include "common/log/log.h"
#include "common/util/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Adding a collector is a file and a line here; order is the order of the document. */
static const struct facts_collector facts_collectors[] = {
	{.name = "system", .collect = facts_collect_system},
	{.name = "pci", .collect = facts_collect_pci},
	{.name = "rdma", .collect = facts_collect_rdma},
	{.name = "modules", .collect = facts_collect_modules},
	{.name = "ofed", .collect = facts_collect_ofed},
	{.name = "gpu", .collect = facts_collect_gpu},
	/* after gpu and rdma: it pairs their devices */
	{.name = "topology", .collect = facts_collect_topology},
	{.name = "software", .collect = facts_collect_software},
	{.name = "gpudirect", .collect = facts_collect_gpudirect},
};

int facts_collect(const char *sysroot, json_t **ret_facts)
{
	struct facts_ctx ctx = {.sysroot = sysroot && sysroot[0] ? sysroot : "/"};
	json_t *facts;
	int r;

	facts = json_object();
	ctx.warnings = json_array();
	if (!facts || !ctx.warnings) {
		json_decref(ctx.warnings);
		r = -ENOMEM;
		goto fail;
	}
	facts_set_int(&ctx, facts, "schema", FACTS_SCHEMA_VERSION);
	/* the document owns the warnings array; ctx keeps a borrowed pointer */
	facts_set_new(&ctx, facts, "warnings", ctx.warnings);
	if (ctx.oom) {
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < RY_ARRAY_SIZE(facts_collectors); i++) {
		r = facts_collectors[i].collect(&ctx, facts);
		if (r >= 0 && ctx.oom)
			r = -ENOMEM;
		if (r < 0) {
			log_debug("facts: collector %s failed: %d", facts_collectors[i].name, r);
			goto fail;
		}
	}
	*ret_facts = facts;
	return 0;
fail:
	json_decref(facts);
	return r;
}
