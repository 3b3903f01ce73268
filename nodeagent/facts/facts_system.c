/* System facts: hostname, OS (os-release), kernel, CPU count/model and NUMA nodes, memory.
 * Sources: proc/sys/kernel/{hostname,osrelease,version}, etc/hostname, etc/os-release (or
 * usr/lib/os-release), proc/cpuinfo, sys/devices/system/node/node*, proc/meminfo. */
#include "nodeagent/facts/facts_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void facts_hostname(struct facts_ctx *ctx, json_t *facts)
{
	const char *src = "proc/sys/kernel/hostname";
	char *v = NULL;
	int r;

	/* the running kernel's name first; the configured one only when procfs lacks it */
	r = facts_read_attrf(ctx, FACTS_OPTIONAL, &v, "%s", src);
	if (r < 0 && r != -ENOENT)
		return;
	if (r < 0) {
		src = "etc/hostname";
		if (facts_read_attrf(ctx, 0, &v, "%s", src) < 0)
			return;
	}
	if (v[0] == '\0' || strpbrk(v, " \t\n"))
		facts_warn(ctx, "/%s: malformed value", src);
	else
		facts_set_str(ctx, facts, "hostname", v);
	free(v);
}

/* os-release value: unquote "..." (with \ escapes) or '...'; in place. */
static void facts_os_unquote(char *v)
{
	size_t len = strlen(v), o = 0;

	if (len >= 2 && v[0] == '\'' && v[len - 1] == '\'') {
		memmove(v, v + 1, len - 2);
		v[len - 2] = '\0';
		return;
	}
	if (len < 2 || v[0] != '"' || v[len - 1] != '"')
		return;
	for (size_t i = 1; i < len - 1; i++) {
		if (v[i] == '\\' && i + 1 < len - 1)
			i++;
		v[o++] = v[i];
	}
	v[o] = '\0';
}

static void facts_os(struct facts_ctx *ctx, json_t *facts)
{
	static const struct {
		const char *var, *key;
	} keys[] = {
		{"ID", "id"},
		{"VERSION_ID", "version_id"},
		{"PRETTY_NAME", "pretty_name"},
		{"NAME", "name"},
		{"VERSION_CODENAME", "version_codename"},
	};
	const char *src = "etc/os-release";
	char *buf = NULL, *line, *save = NULL;
	json_t *os;

	/* os-release(5): /etc/os-release, falling back to /usr/lib/os-release */
	if (facts_read_filef(ctx, FACTS_OPTIONAL, &buf, "%s", src) < 0) {
		src = "usr/lib/os-release";
		if (facts_read_filef(ctx, 0, &buf, "%s", src) < 0)
			return;
	}
	os = json_object();
	if (!os) {
		ctx->oom = true;
		goto out;
	}
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');

		if (line[0] == '#' || !eq)
			continue;
		*eq = '\0';
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			if (strcmp(line, keys[i].var) == 0) {
				facts_os_unquote(eq + 1);
				facts_set_str(ctx, os, keys[i].key, eq + 1);
			}
		}
	}
	if (!json_object_get(os, "id"))
		facts_warn(ctx, "/%s: malformed: no ID", src);
	facts_set_new(ctx, facts, "os", os);
out:
	free(buf);
}

static void facts_kernel(struct facts_ctx *ctx, json_t *facts)
{
	json_t *k = json_object();
	char *v;

	if (!k) {
		ctx->oom = true;
		return;
	}
	if (facts_read_attrf(ctx, 0, &v, "proc/sys/kernel/osrelease") == 0) {
		facts_set_str(ctx, k, "release", v);
		free(v);
	}
	if (facts_read_attrf(ctx, 0, &v, "proc/sys/kernel/version") == 0) {
		facts_set_str(ctx, k, "version", v);
		free(v);
	}
	if (json_object_size(k) > 0)
		facts_set_new(ctx, facts, "kernel", k);
	else
		json_decref(k);
}

/* "key\t: value" line of /proc/cpuinfo: the value if the key matches, else NULL. */
static const char *facts_cpuinfo_value(const char *line, const char *key)
{
	size_t kl = strlen(key);

	if (strncmp(line, key, kl) != 0)
		return NULL;
	line += kl;
	while (*line == ' ' || *line == '\t')
		line++;
	if (*line != ':')
		return NULL;
	line++;
	while (*line == ' ' || *line == '\t')
		line++;
	return line;
}

static void facts_cpu(struct facts_ctx *ctx, json_t *facts)
{
	struct facts_names nodes = {0};
	char *buf = NULL, *line, *save = NULL;
	long long count = 0, numa = 0;
	json_t *cpu = json_object();

	if (!cpu) {
		ctx->oom = true;
		return;
	}
	if (facts_read_filef(ctx, 0, &buf, "proc/cpuinfo") == 0) {
		for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			const char *v;

			if (facts_cpuinfo_value(line, "processor"))
				count++;
			else if (!json_object_get(cpu, "model") &&
				 (v = facts_cpuinfo_value(line, "model name")) && *v)
				facts_set_str(ctx, cpu, "model", v);
		}
		if (count > 0)
			facts_set_int(ctx, cpu, "count", count);
		else
			facts_warn(ctx, "/proc/cpuinfo: malformed: no processor entries");
	}
	if (facts_list_dirf(ctx, 0, &nodes, "sys/devices/system/node") == 0) {
		for (size_t i = 0; i < nodes.n; i++) {
			const char *n = nodes.v[i];

			if (strncmp(n, "node", 4) == 0 && n[4] >= '0' && n[4] <= '9' &&
			    strspn(n + 4, "0123456789") == strlen(n + 4))
				numa++;
		}
		facts_set_int(ctx, cpu, "numa_nodes", numa);
	}
	facts_names_done(&nodes);
	free(buf);
	if (json_object_size(cpu) > 0)
		facts_set_new(ctx, facts, "cpu", cpu);
	else
		json_decref(cpu);
}

static void facts_memory(struct facts_ctx *ctx, json_t *facts)
{
	char *buf = NULL, *line, *save = NULL;
	bool found = false;

	if (facts_read_filef(ctx, 0, &buf, "proc/meminfo") < 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *end;
		long long kib;

		if (strncmp(line, "MemTotal:", 9) != 0)
			continue;
		errno = 0;
		kib = strtoll(line + 9, &end, 10);
		if (errno || end == line + 9 || kib < 0 || strcmp(end, " kB") != 0)
			break;
		json_t *mem = json_object();

		if (!mem) {
			ctx->oom = true;
			break;
		}
		facts_set_int(ctx, mem, "total_kib", kib);
		facts_set_new(ctx, facts, "memory", mem);
		found = true;
		break;
	}
	if (!found && !ctx->oom)
		facts_warn(ctx, "/proc/meminfo: malformed: no valid MemTotal line");
	free(buf);
}

int facts_collect_system(struct facts_ctx *ctx, json_t *facts)
{
	facts_hostname(ctx, facts);
	facts_os(ctx, facts);
	facts_kernel(ctx, facts);
	facts_cpu(ctx, facts);
	facts_memory(ctx, facts);
	return ctx->oom ? -ENOMEM : 0;
}
