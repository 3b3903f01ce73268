/* Executor assert: conditions on this node's facts (versions, counts, port state and rate, PCIe
 * generation and width, loaded modules), evaluated with the playbook module's condition
 * evaluator. Changes nothing. A failing condition is said in an operator's words ("mlx5_3 port 1
 * is DOWN (expected ACTIVE)", after the condition's own `message` when it has one) as the step's
 * headline; the evaluator's text, which names the values by fact path, is kept below it. */
#include "nodeagent/apply/apply_int.h"

#include "common/playbook/playbook.h"
#include "common/util/error.h"
#include "common/util/json.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define P_THAT "that"

/* Concrete paths looked at per condition, and offending values named in a headline. */
#define PATHS_MAX 4096
#define NAMED_MAX 4

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
static void name_indices(struct apply_buf *out, const json_t *facts, const char *msg)
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
			if (playbook_fact_lookup(facts, path, &v) == 0)
				describe_element(v, &who);
			json_decref(v);
		}
		if (apply_buf_len(&who) && !apply_buf_failed(&who)) {
			snprintf(path, sizeof(path), "%.*s", (int)(end - start), start);
			apply_buf_printf(out, " (%s is %s)", path, apply_buf_str(&who));
			n++;
		}
		apply_buf_done(&who);
	}
}

/* Every concrete path ("a[0].b[2].c") that path ("a[*].b[*].c") stands for in facts, appended
 * to out (a JSON array of strings), at most PATHS_MAX. -ENOMEM. */
static int expand(const json_t *facts, const char *path, json_t *out)
{
	const char *star = strstr(path, "[*]");
	json_t *arr = NULL;
	char *prefix;
	int r = 0;

	if (!star)
		return json_array_size(out) < PATHS_MAX
			       ? json_array_append_new(out, json_string(path))
			       : 0;
	prefix = strndup(path, (size_t)(star - path));
	if (!prefix)
		return -ENOMEM;
	if (playbook_fact_lookup(facts, prefix, &arr) == 0 && json_is_array(arr)) {
		for (size_t i = 0; r == 0 && i < json_array_size(arr); i++) {
			char *sub;

			if (asprintf(&sub, "%s[%zu]%s", prefix, i, star + 3) < 0) {
				r = -ENOMEM;
				break;
			}
			r = expand(facts, sub, out);
			free(sub);
		}
	}
	json_decref(arr);
	free(prefix);
	return r;
}

/* What an attribute of an element is called, and how its values are written. */
static const struct {
	const char *key, *label, *prefix, *suffix;
} attrs[] = {
	{"state", NULL, "", ""},
	{"phys_state", "physical state", "", ""},
	{"rate_gbps", "rate", "", " Gb/s"},
	{"current_link_width", "PCIe link width", "x", ""},
	{"max_link_width", "maximum PCIe link width", "x", ""},
	{"gen", "PCIe generation", "Gen", ""},
	{"link_layer", "link layer", "", ""},
};

/* A value as an operator reads it (a string's own text, numbers without exponents where they
 * fit), with the attribute's unit. */
static void put_value(struct apply_buf *b, const json_t *v, const char *prefix, const char *suffix)
{
	char num[64];
	const char *s = ry_json_scalar_str(v, 10, num, sizeof(num));
	char *t = s ? NULL : ry_json_value_text(v);

	apply_buf_printf(b, "%s%s%s", prefix, s ? s : t ? t : "(nothing)", suffix);
	free(t);
}

/* "mlx5_3 port 1" (and attribute "state") for "rdma.devices[3].ports[0].state": the elements
 * along the path by their names, then what is left of the path after the last index. */
static void describe_path(const json_t *facts, const char *path, struct apply_buf *who,
			  const char **ret_label, const char **ret_prefix, const char **ret_suffix)
{
	const char *last = strrchr(path, ']'), *attr;

	*ret_label = NULL;
	*ret_prefix = *ret_suffix = "";
	if (!last) {
		apply_buf_puts(who, path);
		return;
	}
	for (const char *q = strchr(path, ']'); q && q <= last; q = strchr(q + 1, ']')) {
		struct apply_buf one = {0};
		char sub[512];
		json_t *e = NULL;

		snprintf(sub, sizeof(sub), "%.*s", (int)(q + 1 - path), path);
		if (playbook_fact_lookup(facts, sub, &e) == 0)
			describe_element(e, &one);
		json_decref(e);
		if (apply_buf_len(&one) == 0) {
			/* no name: its path component ("gids[3]") */
			const char *c = q;

			while (c > path && c[-1] != '.' && c[-1] != ']')
				c--;
			apply_buf_printf(&one, "%.*s", (int)(q + 1 - c), c);
		}
		apply_buf_printf(who, "%s%s", q == strchr(path, ']') ? "" : " ",
				 apply_buf_str(&one));
		apply_buf_done(&one);
	}
	attr = last[1] == '.' ? last + 2 : last + 1;
	if (!*attr)
		return;
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		if (strcmp(attr, attrs[i].key) == 0) {
			*ret_label = attrs[i].label;
			*ret_prefix = attrs[i].prefix;
			*ret_suffix = attrs[i].suffix;
			return;
		}
	}
	*ret_label = attr;
}

/* "ACTIVE", ">= 400 Gb/s", "not DOWN", "matching ^mlx5": what op and value ask for. */
static void put_expected(struct apply_buf *b, const char *op, const json_t *want, bool negate,
			 const char *prefix, const char *suffix)
{
	if (strncmp(op, "version", 7) == 0)
		op += 7;
	if (strcmp(op, "matches") == 0)
		apply_buf_puts(b, negate ? "not matching " : "matching ");
	else if (strcmp(op, "==") == 0)
		apply_buf_puts(b, negate ? "not " : "");
	else if (strcmp(op, "!=") == 0)
		apply_buf_puts(b, negate ? "" : "not ");
	else
		apply_buf_printf(b, "%s%s ", negate ? "not " : "", op);
	put_value(b, want, strcmp(op, "matches") == 0 ? "" : prefix,
		  strcmp(op, "matches") == 0 ? "" : suffix);
}

/* The headline of one failed condition, appended to b: the condition's own message, then what
 * is wrong element by element ("mlx5_3 port 1 is DOWN"), then, without a message, what was
 * expected. -ENOMEM. */
static int headline(struct apply_buf *b, const json_t *cond, const json_t *facts, int eval_r)
{
	const char *fact = json_string_value(json_object_get(cond, "fact"));
	const char *op = json_string_value(json_object_get(cond, "op"));
	const char *quant = json_string_value(json_object_get(cond, "quantifier"));
	const char *custom = json_string_value(json_object_get(cond, "message"));
	const json_t *want = json_object_get(cond, "value");
	const char *label = NULL, *prefix = "", *suffix = "";
	json_t *paths = NULL, *sel = NULL;
	struct apply_buf what = {0};
	size_t named = 0, more = 0, checked = 0;
	int r = 0;

	if (!fact || !op)
		return 0;
	if (!quant)
		quant = "all";
	if (eval_r == -ENOENT || playbook_fact_lookup(facts, fact, &sel) == -ENOENT) {
		apply_buf_printf(&what, "%s is not reported by this node", fact);
		goto said;
	}
	if (strncmp(op, "count", 5) == 0) {
		size_t n = json_is_array(sel)	 ? json_array_size(sel)
			   : json_is_object(sel) ? json_object_size(sel)
						 : 0;

		apply_buf_printf(&what, "%zu %s found", n, fact);
		if (!custom) {
			apply_buf_printf(&what, " (expected %s", op[5] == '=' ? "" : op + 5);
			put_value(&what, want, op[5] == '=' ? "" : " ", "");
			apply_buf_puts(&what, ")");
		}
		goto said;
	}
	if (strcmp(op, "contains") == 0) {
		char *w = ry_json_value_text(want);

		if (strcmp(fact, "modules.loaded") == 0)
			apply_buf_printf(&what, "module %s is not loaded", w ? w : "?");
		else
			apply_buf_printf(&what, "%s does not include %s", fact, w ? w : "?");
		free(w);
		goto said;
	}
	if (!(paths = json_array()) || (r = expand(facts, fact, paths)) < 0) {
		r = r < 0 ? r : -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < json_array_size(paths); i++) {
		const char *p = json_string_value(json_array_get(paths, i));
		json_t *one = json_pack("{s:s, s:s, s:O}", "fact", p, "op", op, "value", want),
		       *v = NULL;
		bool ok = false;
		int e;

		if (!one) {
			r = -ENOMEM;
			goto out;
		}
		e = playbook_cond_eval(one, facts, &ok, NULL, 0);
		json_decref(one);
		if (e == -ENOMEM) {
			r = e;
			goto out;
		}
		if (e < 0) /* the element lacks the rest of the path, as the evaluator skips it */
			continue;
		checked++;
		if (ok == (strcmp(quant, "none") != 0) || strcmp(quant, "any") == 0)
			continue;
		if (named == NAMED_MAX) {
			more++;
			continue;
		}
		if (named++)
			apply_buf_puts(&what, ", ");
		describe_path(facts, p, &what, &label, &prefix, &suffix);
		if (label)
			apply_buf_printf(&what, " %s", label);
		apply_buf_puts(&what, " is ");
		if (playbook_fact_lookup(facts, p, &v) == 0)
			put_value(&what, v, prefix, suffix);
		json_decref(v);
	}
	if (more)
		apply_buf_printf(&what, " and %zu more", more);
	if (strcmp(quant, "any") == 0) {
		apply_buf_printf(&what, "none of %zu %s is ", checked, fact);
		put_expected(&what, op, want, false, prefix, suffix);
		goto said;
	}
	if (!named) /* nothing to name: the evaluator's text is the best there is */
		goto said;
	if (!custom) {
		apply_buf_puts(&what, " (expected ");
		put_expected(&what, op, want, strcmp(quant, "none") == 0, prefix, suffix);
		apply_buf_puts(&what, ")");
	}
	goto said;
said:
	if (apply_buf_len(b))
		apply_buf_puts(b, "; ");
	if (custom)
		apply_buf_printf(b, "%s%s", custom, apply_buf_len(&what) ? ": " : "");
	apply_buf_puts(b, apply_buf_str(&what));
out:
	apply_buf_done(&what);
	json_decref(paths);
	json_decref(sel);
	return r;
}

static int assert_check(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	const json_t *that = json_object_get(params, P_THAT);
	struct apply_buf head = {0};
	size_t i, failed = 0;
	json_t *cond;
	int r = 0;

	(void)out;
	if (!ctx->facts) {
		apply_ctx_headline(ctx, "this node reported no facts to check");
		return apply_ctx_fail(ctx, -RY_E_UNMET, "no facts to assert on");
	}
	json_array_foreach(that, i, cond)
	{
		char msg[1024] = "";
		bool ok = false;
		int e = playbook_cond_eval(cond, ctx->facts, &ok, msg, sizeof(msg));

		if (e == -ENOMEM) {
			r = e;
			goto out;
		}
		if (e < 0 || !ok) {
			size_t before = apply_buf_len(&head);

			failed++;
			(void)apply_ctx_fail(ctx, -RY_E_UNMET, "%s",
					     msg[0]  ? msg
					     : e < 0 ? ry_strerror(e)
						     : "failed");
			name_indices(&ctx->message, ctx->facts, msg);
			if ((r = headline(&head, cond, ctx->facts, e)) < 0)
				goto out;
			if (apply_buf_len(&head) == before) /* no better words than these */
				apply_buf_printf(&head, "%s%s", before ? "; " : "",
						 msg[0] ? msg : "condition failed");
		}
	}
	if (failed) {
		apply_ctx_headline(ctx, "%s", apply_buf_str(&head));
		r = -RY_E_UNMET;
	} else {
		apply_ctx_note(ctx, "%zu condition(s) hold", json_array_size(that));
	}
out:
	apply_buf_done(&head);
	return r;
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
