/* OFED facts: the MLNX_OFED / DOCA-OFED version installed, from the files those stacks leave:
 * the ofed_info script (usr/bin/ofed_info, which embeds its `-s`/`-n` answers) and the version
 * the out-of-tree mlx5_core module declares (sys/module/mlx5_core/version; the inbox driver
 * has none). See docs/facts.md for why other sources are not used. */
#include "nodeagent/facts/facts_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OFED_INFO "usr/bin/ofed_info"

/* In ofed_info, find the line `if [ "X$1" == "X<opt>" ]; then echo <answer>; exit 0; fi` and
 * return a copy of <answer> with a trailing ':' removed; NULL when absent (or on OOM). */
static char *facts_ofed_answer(struct facts_ctx *ctx, const char *script, const char *opt)
{
	char needle[32];
	const char *p, *end;
	char *ans;
	size_t n;

	snprintf(needle, sizeof(needle), "\"X%s\" ]; then echo ", opt);
	p = strstr(script, needle);
	if (!p)
		return NULL;
	p += strlen(needle);
	end = p + strcspn(p, ";\n");
	if (*end != ';')
		return NULL;
	n = (size_t)(end - p);
	while (n > 0 && (p[n - 1] == ':' || p[n - 1] == ' '))
		n--;
	if (n == 0)
		return NULL;
	ans = strndup(p, n);
	if (!ans)
		ctx->oom = true;
	return ans;
}

/* "MLNX_OFED_LINUX-24.10-1.1.4.0" -> "24.10-1.1.4.0": from the first '-' followed by a digit. */
static const char *facts_ofed_numeric(const char *package)
{
	for (const char *p = strchr(package, '-'); p; p = strchr(p + 1, '-'))
		if (p[1] >= '0' && p[1] <= '9')
			return p + 1;
	return NULL;
}

int facts_collect_ofed(struct facts_ctx *ctx, json_t *facts)
{
	char *script = NULL, *pkg = NULL, *num = NULL, *modver = NULL;
	json_t *ofed;

	ofed = json_object();
	if (!ofed)
		return -ENOMEM;
	if (facts_read_attrf(ctx, FACTS_OPTIONAL, &modver, "sys/module/mlx5_core/version") < 0)
		modver = NULL;
	if (facts_read_filef(ctx, FACTS_OPTIONAL, &script, OFED_INFO) == 0) {
		pkg = facts_ofed_answer(ctx, script, "-s");
		num = facts_ofed_answer(ctx, script, "-n");
		if (!num && pkg && facts_ofed_numeric(pkg)) {
			num = strdup(facts_ofed_numeric(pkg));
			if (!num)
				ctx->oom = true;
		}
		if (!num && !ctx->oom)
			facts_warn(ctx, "/" OFED_INFO ": malformed: no version answer found");
	}
	if (num) {
		facts_set_str(ctx, ofed, "version", num);
		if (pkg)
			facts_set_str(ctx, ofed, "package", pkg);
		facts_set_str(ctx, ofed, "source", "/" OFED_INFO);
	} else if (modver) {
		facts_set_str(ctx, ofed, "version", modver);
		facts_set_str(ctx, ofed, "source", "/sys/module/mlx5_core/version");
	}
	if (modver)
		facts_set_str(ctx, ofed, "mlx5_core_version", modver);
	if (json_object_get(ofed, "version"))
		facts_set_new(ctx, facts, "ofed", json_incref(ofed));
	json_decref(ofed);
	free(script);
	free(pkg);
	free(num);
	free(modver);
	return ctx->oom ? -ENOMEM : 0;
}
