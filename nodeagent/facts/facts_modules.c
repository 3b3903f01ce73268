/* Kernel module facts: every loaded module (proc/modules, in its order) and the version each
 * declares (sys/module/<name>/version, only present for modules with MODULE_VERSION). */
#include "nodeagent/facts/facts_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FACTS_MAX_MODULES 4096

static bool facts_module_name_ok(const char *n)
{
	if (!n[0] || strlen(n) > 64)
		return false;
	return strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
	       strlen(n);
}

int facts_collect_modules(struct facts_ctx *ctx, json_t *facts)
{
	char *buf = NULL, *line, *save = NULL;
	json_t *mods, *loaded, *versions;
	size_t count = 0;
	bool bad = false;

	if (facts_read_filef(ctx, 0, &buf, "proc/modules") < 0)
		return ctx->oom ? -ENOMEM : 0;
	mods = json_object();
	loaded = json_array();
	versions = json_object();
	if (!mods || !loaded || !versions) {
		json_decref(mods);
		json_decref(loaded);
		json_decref(versions);
		free(buf);
		return -ENOMEM;
	}
	/* "mlx5_core 2502656 1 mlx5_ib, Live 0xffffffffc1b5e000 (OE)" */
	for (line = strtok_r(buf, "\n", &save); line && !ctx->oom;
	     line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' ');
		char *v;

		if (sp)
			*sp = '\0';
		if (!sp || !facts_module_name_ok(line)) {
			bad = true;
			continue;
		}
		if (count++ == FACTS_MAX_MODULES) {
			facts_warn(ctx, "/proc/modules: more than %d modules, rest ignored",
				   FACTS_MAX_MODULES);
			break;
		}
		facts_append_str(ctx, loaded, line);
		if (facts_read_attrf(ctx, FACTS_OPTIONAL, &v, "sys/module/%s/version", line) == 0) {
			facts_set_str(ctx, versions, line, v);
			free(v);
		}
	}
	if (bad)
		facts_warn(ctx, "/proc/modules: malformed lines ignored");
	facts_set_new(ctx, mods, "loaded", loaded);
	facts_set_new(ctx, mods, "versions", versions);
	facts_set_new(ctx, facts, "modules", mods);
	free(buf);
	return ctx->oom ? -ENOMEM : 0;
}
