/* Reading a facts document (docs/facts.md) as the agent reports it: what the controller and
 * other readers need without the collectors (a one-line summary for tables). */
#include "common/facts/facts_doc.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Summary pieces. Each appends to buf (bounded; truncation is harmless for a display line). */
struct facts_line {
	char buf[512];
	size_t len;
};

static void facts_line_add(struct facts_line *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void facts_line_add(struct facts_line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (l->len >= sizeof(l->buf) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->buf + l->len, sizeof(l->buf) - l->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	l->len += (size_t)n;
	if (l->len > sizeof(l->buf) - 1)
		l->len = sizeof(l->buf) - 1;
}

static const char *facts_get_str(const json_t *obj, const char *a, const char *b)
{
	const json_t *v = json_object_get(obj, a);

	if (b)
		v = json_object_get(v, b);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static json_int_t facts_get_int(const json_t *obj, const char *a, const char *b, json_int_t dflt)
{
	const json_t *v = json_object_get(obj, a);

	if (b)
		v = json_object_get(v, b);
	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

static void facts_summary_os(struct facts_line *l, const json_t *facts)
{
	const char *name = facts_get_str(facts, "os", "name");
	const char *ver = facts_get_str(facts, "os", "version_id");
	const char *id = facts_get_str(facts, "os", "id");
	size_t nl;

	if (!name && !id) {
		facts_line_add(l, "?");
		return;
	}
	if (name) {
		/* "Debian GNU/Linux" -> "Debian" */
		nl = strlen(name);
		if (nl > 10 && strcmp(name + nl - 10, " GNU/Linux") == 0)
			nl -= 10;
		facts_line_add(l, "%.*s", (int)nl, name);
	} else {
		facts_line_add(l, "%s", id);
	}
	if (ver)
		facts_line_add(l, " %s", ver);
}

static void facts_summary_rdma(struct facts_line *l, const json_t *facts)
{
	const json_t *devs = json_object_get(json_object_get(facts, "rdma"), "devices");
	size_t ports = 0, active = 0, ib = 0, eth = 0, i, j;
	double rmin = 0, rmax = 0;
	const json_t *dev, *port;

	if (!json_is_array(devs)) {
		facts_line_add(l, "? HCA");
		return;
	}
	if (json_array_size(devs) == 0) {
		facts_line_add(l, "no HCA");
		return;
	}
	json_array_foreach(devs, i, dev)
	{
		json_array_foreach(json_object_get(dev, "ports"), j, port)
		{
			const char *ll = facts_get_str(port, "link_layer", NULL);
			const json_t *rate = json_object_get(port, "rate_gbps");

			ports++;
			if (ll && strcmp(ll, "InfiniBand") == 0)
				ib++;
			else if (ll && strcmp(ll, "Ethernet") == 0)
				eth++;
			if (facts_get_int(port, "state_num", NULL, 0) != 4)
				continue;
			active++;
			if (json_is_number(rate)) {
				double g = json_number_value(rate);

				if (active == 1 || g < rmin)
					rmin = g;
				if (active == 1 || g > rmax)
					rmax = g;
			}
		}
	}
	facts_line_add(l, "%zu HCA %zu/%zu active", json_array_size(devs), active, ports);
	if (ib && !eth)
		facts_line_add(l, " IB");
	else if (eth && !ib)
		facts_line_add(l, " RoCE");
	else if (ib && eth)
		facts_line_add(l, " IB+RoCE");
	if (rmax > 0) {
		if (rmin != rmax)
			facts_line_add(l, " %g-%gG", rmin, rmax);
		else
			facts_line_add(l, " %gG", rmax);
	}
}

static void facts_summary_gpu(struct facts_line *l, const json_t *facts)
{
	const json_t *gpus = json_object_get(facts, "gpus");
	const char *model = NULL;
	bool mixed = false;
	const json_t *gpu;
	size_t i;

	if (!json_is_array(gpus)) {
		facts_line_add(l, "? GPU");
		return;
	}
	if (json_array_size(gpus) == 0) {
		facts_line_add(l, "no GPU");
		return;
	}
	json_array_foreach(gpus, i, gpu)
	{
		const char *m = facts_get_str(gpu, "model", NULL);

		if (!m)
			continue;
		if (strncmp(m, "NVIDIA ", 7) == 0)
			m += 7;
		if (!model)
			model = m;
		else if (strcmp(model, m) != 0)
			mixed = true;
	}
	facts_line_add(l, "%zu GPU", json_array_size(gpus));
	if (mixed)
		facts_line_add(l, " mixed");
	else if (model)
		facts_line_add(l, " %s", model);
}

char *facts_summary(const json_t *facts)
{
	struct facts_line l = {.len = 0};
	const char *s;
	json_int_t n;

	l.buf[0] = '\0';
	facts_summary_os(&l, facts);

	s = facts_get_str(facts, "kernel", "release");
	facts_line_add(&l, " | %s", s ? s : "?");

	n = facts_get_int(facts, "cpu", "count", -1);
	if (n >= 0)
		facts_line_add(&l, " | %lld cpu", (long long)n);
	else
		facts_line_add(&l, " | ? cpu");
	n = facts_get_int(facts, "cpu", "numa_nodes", -1);
	if (n >= 0)
		facts_line_add(&l, "/%lld numa", (long long)n);
	else
		facts_line_add(&l, "/? numa");

	n = facts_get_int(facts, "memory", "total_kib", -1);
	if (n >= 0)
		facts_line_add(&l, " | %lld GiB", (long long)(n / (1024 * 1024)));
	else
		facts_line_add(&l, " | ? GiB");

	facts_line_add(&l, " | ");
	facts_summary_rdma(&l, facts);
	facts_line_add(&l, " | ");
	facts_summary_gpu(&l, facts);
	return strdup(l.buf);
}
