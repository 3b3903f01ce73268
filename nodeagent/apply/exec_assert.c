/* Executor assert: conditions on this node's facts (versions, counts, port state and rate, PCIe
 * generation and width, loaded modules), evaluated with the playbook module's condition
 * evaluator. Changes nothing; every failing condition is named with the values it saw. */
#include "nodeagent/apply/apply_int.h"

#include "common/playbook/playbook.h"
#include "common/util/error.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define P_THAT "that"

/* The human name of one element of a facts list: RDMA devices and GPUs by name/bus, ports by
 * number, PCI functions by address. Appends nothing when the element has none of these. */
static void describe_element(const json_t *e, struct apply_buf *b)
{
	static const char *const keys[] = {"name", "address", "bus"};
	const json_t *port = json_object_get(e, "port");

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *v = json_string_value(json_object_get(e, keys[i]));

		if (v) {
			apply_buf_printf(b, "%s%s", apply_buf_len(b) ? " " : "", v);
			return;
		}
	}
	if (json_is_integer(port))
		apply_buf_printf(b, "%sport %" JSON_INTEGER_FORMAT, apply_buf_len(b) ? " " : "",
				 json_integer_value(port));
}

/* The evaluator names offending values by index ("rdma.devices[3].ports[0].state = DOWN"); add
 * what an operator calls them ("rdma.devices[3].ports[0] is mlx5_3 port 1"). At most 8. */
static void name_indices(struct apply_ctx *ctx, const char *msg)
{
	const char *p = msg;
	int n = 0;

	while ((p = strstr(p, "]")) && n < 8) {
		const char *start = p, *end = p + 1;
		struct apply_buf who = {0};
		char path[256];

		/* the whole a.b[1].c[2] token that ends at this bracket */
		while (start > msg &&
		       (isalnum((unsigned char)start[-1]) || strchr("._[]", start[-1])))
			start--;
		p = end;
		{
			const char *after = end; /* only the token's last index */

			while (*after && (isalnum((unsigned char)*after) || strchr("._", *after)))
				after++;
			if (*after == '[' || (size_t)(end - start) >= sizeof(path))
				continue;
		}
		for (const char *q = start; q < end; q++) {
			json_t *v = NULL;

			if (*q != ']')
				continue;
			snprintf(path, sizeof(path), "%.*s", (int)(q + 1 - start), start);
			if (playbook_fact_lookup(ctx->facts, path, &v) == 0)
				describe_element(v, &who);
			json_decref(v);
		}
		if (apply_buf_len(&who) && !apply_buf_failed(&who)) {
			snprintf(path, sizeof(path), "%.*s", (int)(end - start), start);
			apply_ctx_note(ctx, " (%s is %s)", path, apply_buf_str(&who));
			n++;
		}
		apply_buf_done(&who);
	}
}

static int assert_check(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	const json_t *that = json_object_get(params, P_THAT);
	size_t i, failed = 0;
	json_t *cond;

	(void)out;
	if (!ctx->facts)
		return apply_ctx_fail(ctx, -RY_E_UNMET, "no facts to assert on");
	json_array_foreach(that, i, cond)
	{
		char msg[1024] = "";
		bool ok = false;
		int r = playbook_cond_eval(cond, ctx->facts, &ok, msg, sizeof(msg));

		if (r == -ENOMEM)
			return r;
		if (r < 0 || !ok) {
			failed++;
			(void)apply_ctx_fail(ctx, -RY_E_UNMET, "%s",
					     msg[0]  ? msg
					     : r < 0 ? ry_strerror(r)
						     : "failed");
			name_indices(ctx, msg);
		}
	}
	if (failed)
		return -RY_E_UNMET;
	apply_ctx_note(ctx, "%zu condition(s) hold", json_array_size(that));
	return 0;
}

static int assert_apply(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	return assert_check(ctx, params, out);
}

static int assert_verify(struct apply_ctx *ctx, const json_t *params)
{
	struct apply_change c = {0};
	int r = assert_check(ctx, params, &c);

	apply_buf_done(&c.diff);
	return r;
}

const struct apply_step_ops apply_ops_assert = {
	.type = "assert",
	.check = assert_check,
	.apply = assert_apply,
	.verify = assert_verify,
};
