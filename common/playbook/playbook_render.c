/* Rendering: ${facts.PATH | filter ...} and ${vars.NAME...} in strings, vars on demand with cycle
 * detection, and playbook_render() building the plan JSON. A dry run (no facts) checks syntax,
 * vars and cycles and yields null for anything that depends on facts. */
#include "common/playbook/playbook_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util/error.h"
#include "common/util/json.h"

enum var_state { VAR_NEW, VAR_BUSY, VAR_DONE, VAR_FAILED };

struct pb_render {
	const struct playbook *pb;
	const struct playbook_facts *facts; /* NULL: dry run */
	struct pb_diags *d;
	size_t nvars;
	enum var_state *state;
	json_t **val;
	size_t *stack; /* vars being rendered, for cycle messages */
	size_t depth;
};

bool pb_render_is_dry(const struct pb_render *r)
{
	return r->facts == NULL;
}

int pb_render_new(const struct playbook *pb, const struct playbook_facts *facts, struct pb_diags *d,
		  struct pb_render **ret)
{
	struct pb_render *r = calloc(1, sizeof(*r));
	size_t n = pb->vars ? pb->vars->n : 0;

	if (!r)
		return -ENOMEM;
	r->pb = pb;
	r->facts = facts;
	r->d = d;
	r->nvars = n;
	r->state = calloc(n + 1, sizeof(*r->state));
	r->val = calloc(n + 1, sizeof(*r->val));
	r->stack = calloc(n + 1, sizeof(*r->stack));
	if (!r->state || !r->val || !r->stack) {
		pb_render_free(r);
		return -ENOMEM;
	}
	*ret = r;
	return 0;
}

void pb_render_free(struct pb_render *r)
{
	if (!r)
		return;
	for (size_t i = 0; r->val && i < r->nvars; i++)
		json_decref(r->val[i]);
	free(r->val);
	free(r->state);
	free(r->stack);
	free(r);
}

/* ---- Expressions ------------------------------------------------------------------------- */

/* Result of an expression: a value, "undefined" (missing), or "unknown" (dry run). */
struct ev {
	json_t *v;
	bool undefined;
	bool unknown;
};

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && isspace((unsigned char)*p))
		p++;
	return p;
}

static int get_var(struct pb_render *r, const struct pb_node *at, const char *name, size_t nlen,
		   struct ev *out);

/* Parse a filter argument literal: "string" (with \" and \\), integer, true, false. */
static int parse_literal(const char **pp, const char *end, json_t **ret)
{
	const char *p = skip_ws(*pp, end);

	if (p < end && *p == '"') {
		char *buf = malloc((size_t)(end - p) + 1);
		size_t n = 0;

		if (!buf)
			return -ENOMEM;
		for (p++; p < end && *p != '"'; p++) {
			if (*p == '\\' && p + 1 < end)
				p++;
			buf[n++] = *p;
		}
		if (p >= end) {
			free(buf);
			return -EINVAL;
		}
		*ret = json_stringn(buf, n);
		free(buf);
		*pp = p + 1;
		return *ret ? 0 : -ENOMEM;
	}
	if (p < end && (isdigit((unsigned char)*p) || *p == '-')) {
		char *e;
		long long v = strtoll(p, &e, 10);

		if (e > end || e == p)
			return -EINVAL;
		*ret = json_integer(v);
		*pp = e;
		return 0;
	}
	if (end - p >= 4 && strncmp(p, "true", 4) == 0) {
		*ret = json_true();
		*pp = p + 4;
		return 0;
	}
	if (end - p >= 5 && strncmp(p, "false", 5) == 0) {
		*ret = json_false();
		*pp = p + 5;
		return 0;
	}
	return -EINVAL;
}

/* Text of a scalar for join and embedding ("" for null, reals as "%g"); NULL for
 * lists/objects. Caller frees. */
static char *scalar_text(const json_t *v)
{
	return json_is_null(v) ? strdup("") : ry_json_scalar_text(v, RY_JSON_REAL_SHORT);
}

static int apply_filter(struct pb_render *r, const struct pb_node *at, const char *name,
			size_t nlen, json_t *arg, struct ev *e)
{
	const char *file = r->pb->file;

#define IS(lit) (nlen == strlen(lit) && strncmp(name, lit, nlen) == 0)
	if (IS("default")) {
		if (!arg) {
			pb_diag_node(r->d, file, at, "default() needs an argument");
			return -RY_E_INVALID;
		}
		if (e->undefined) {
			e->undefined = false;
			e->v = json_incref(arg);
		}
		return 0;
	}
	if (e->undefined || e->unknown)
		return 0;
	if (IS("join")) {
		size_t i, total = 0;
		json_t *x;
		const char *sep;
		char *out, **parts;
		size_t n;

		if (!arg || !json_is_string(arg)) {
			pb_diag_node(r->d, file, at, "join() needs a string argument");
			return -RY_E_INVALID;
		}
		sep = json_string_value(arg);
		if (!json_is_array(e->v)) {
			char *t = scalar_text(e->v);

			if (!t)
				goto bad_input;
			json_decref(e->v);
			e->v = json_string(t);
			free(t);
			return 0;
		}
		n = json_array_size(e->v);
		parts = calloc(n + 1, sizeof(*parts));
		if (!parts)
			return -ENOMEM;
		json_array_foreach(e->v, i, x)
		{
			parts[i] = scalar_text(x);
			if (!parts[i]) {
				for (size_t j = 0; j < i; j++)
					free(parts[j]);
				free(parts);
				goto bad_input;
			}
			total += strlen(parts[i]) + strlen(sep);
		}
		out = calloc(1, total + 1);
		for (i = 0; i < n; i++) {
			if (out) {
				if (i)
					strcat(out, sep);
				strcat(out, parts[i]);
			}
			free(parts[i]);
		}
		free(parts);
		if (!out)
			return -ENOMEM;
		json_decref(e->v);
		e->v = json_string(out);
		free(out);
		return 0;
	}
	if (IS("first")) {
		json_t *x;

		if (!json_is_array(e->v))
			goto bad_input;
		x = json_array_get(e->v, 0);
		if (!x) {
			json_decref(e->v);
			e->v = NULL;
			e->undefined = true;
			return 0;
		}
		json_incref(x);
		json_decref(e->v);
		e->v = x;
		return 0;
	}
	if (IS("count")) {
		size_t n;

		if (json_is_array(e->v))
			n = json_array_size(e->v);
		else if (json_is_object(e->v))
			n = json_object_size(e->v);
		else
			goto bad_input;
		json_decref(e->v);
		e->v = json_integer((json_int_t)n);
		return 0;
	}
	pb_diag_node(r->d, file, at,
		     "unknown filter \"%.*s\" (expected join, first, count, default)", (int)nlen,
		     name);
	return -RY_E_INVALID;
bad_input:
	pb_diag_node(r->d, file, at, "filter %.*s cannot be applied to a %s", (int)nlen, name,
		     json_is_array(e->v)    ? "list"
		     : json_is_object(e->v) ? "mapping"
					    : "scalar");
	return -RY_E_INVALID;
#undef IS
}

/* Evaluate the text between "${" and "}". */
static int eval_expr(struct pb_render *r, const struct pb_node *at, const char *p, const char *end,
		     struct ev *out)
{
	const char *file = r->pb->file, *ps, *pe, *rest;
	struct ev e = {0};
	char *path = NULL;
	int rc;

	p = skip_ws(p, end);
	ps = p;
	while (p < end && *p != '|')
		p++;
	pe = p;
	while (pe > ps && isspace((unsigned char)pe[-1]))
		pe--;
	path = strndup(ps, (size_t)(pe - ps));
	if (!path)
		return -ENOMEM;
	if (strncmp(path, "facts.", 6) == 0) {
		if (pb_fact_path_check(path + 6) < 0)
			goto bad_syntax;
		if (!r->facts) {
			e.unknown = true;
		} else {
			rc = pb_facts_walk(r->facts, path + 6, NULL, &e.v);
			if (rc == -ENOENT)
				e.undefined = true;
			else if (rc < 0)
				goto fail_lookup;
		}
	} else if (strncmp(path, "vars.", 5) == 0) {
		const char *name = path + 5;
		size_t nlen = strcspn(name, ".[");
		struct ev base = {0};

		rest = name + nlen;
		if (nlen == 0 || (*rest && pb_path_check(*rest == '.' ? rest + 1 : rest, true) < 0))
			goto bad_syntax;
		rc = get_var(r, at, name, nlen, &base);
		if (rc < 0)
			goto fail_rc;
		if (base.unknown || base.undefined || !*rest) {
			e = base;
		} else {
			rc = pb_lookup(base.v, *rest == '.' ? rest + 1 : rest, &e.v);
			json_decref(base.v);
			if (rc == -ENOENT)
				e.undefined = true;
			else if (rc < 0)
				goto fail_lookup;
		}
		if (!r->facts && e.v && json_is_null(e.v)) {
			json_decref(e.v);
			e.v = NULL;
			e.unknown = true;
		}
	} else {
		pb_diag_node(r->d, file, at,
			     "bad reference \"%s\": must start with facts. or vars.", path);
		rc = -RY_E_INVALID;
		goto fail_rc;
	}
	/* Filters. */
	while (p < end) {
		const char *fn;
		size_t fl;
		json_t *arg = NULL;

		p = skip_ws(p, end);
		if (p >= end)
			break;
		if (*p != '|')
			goto bad_syntax;
		p = skip_ws(p + 1, end);
		fn = p;
		while (p < end && (isalnum((unsigned char)*p) || *p == '_'))
			p++;
		fl = (size_t)(p - fn);
		p = skip_ws(p, end);
		if (p < end && *p == '(') {
			p++;
			rc = parse_literal(&p, end, &arg);
			if (rc == -ENOMEM)
				goto fail_rc;
			p = skip_ws(p, end);
			if (rc < 0 || p >= end || *p != ')') {
				json_decref(arg);
				goto bad_syntax;
			}
			p++;
		}
		if (fl == 0) {
			json_decref(arg);
			goto bad_syntax;
		}
		rc = apply_filter(r, at, fn, fl, arg, &e);
		json_decref(arg);
		if (rc < 0)
			goto fail_rc;
	}
	if (e.undefined) {
		pb_diag_node(r->d, file, at, "undefined reference \"%s\"", path);
		rc = -RY_E_INVALID;
		goto fail_rc;
	}
	free(path);
	*out = e;
	return 0;
bad_syntax:
	pb_diag_node(r->d, file, at, "bad reference syntax \"${%.*s}\"", (int)(end - ps), ps);
	rc = -RY_E_INVALID;
	goto fail_rc;
fail_lookup:
	/* Every failure has its diagnostic: one the path check let through is still named. */
	if (rc != -ENOMEM) {
		pb_diag_node(r->d, file, at, "cannot look up \"%s\": %s", path, ry_strerror(rc));
		rc = -RY_E_INVALID;
	}
fail_rc:
	json_decref(e.v);
	free(path);
	return rc;
}

static int get_var(struct pb_render *r, const struct pb_node *at, const char *name, size_t nlen,
		   struct ev *out)
{
	const struct pb_node *vars = r->pb->vars;
	size_t i;
	json_t *v = NULL;
	int rc;

	for (i = 0; vars && i < vars->n; i++)
		if (strlen(vars->keys[i]->text) == nlen &&
		    strncmp(vars->keys[i]->text, name, nlen) == 0)
			break;
	if (!vars || i == vars->n) {
		pb_diag_node(r->d, r->pb->file, at, "undefined reference \"vars.%.*s\"", (int)nlen,
			     name);
		return -RY_E_INVALID;
	}
	switch (r->state[i]) {
	case VAR_DONE:
		break;
	case VAR_FAILED:
		return -RY_E_INVALID; /* already reported */
	case VAR_BUSY: {
		char chain[512] = "";
		size_t k = 0, off = 0;

		while (k < r->depth && r->stack[k] != i)
			k++;
		for (; k < r->depth && off < sizeof(chain); k++)
			off += (size_t)snprintf(chain + off, sizeof(chain) - off, "vars.%s -> ",
						vars->keys[r->stack[k]]->text);
		if (off < sizeof(chain))
			snprintf(chain + off, sizeof(chain) - off, "vars.%s", vars->keys[i]->text);
		pb_diag_node(r->d, r->pb->file, at, "reference cycle: %s", chain);
		return -RY_E_INVALID;
	}
	case VAR_NEW:
		r->state[i] = VAR_BUSY;
		r->stack[r->depth++] = i;
		rc = pb_render_any(r, vars->items[i], &v);
		r->depth--;
		if (rc < 0) {
			r->state[i] = VAR_FAILED;
			return rc;
		}
		r->val[i] = v;
		r->state[i] = VAR_DONE;
		break;
	}
	if (!r->facts && json_is_null(r->val[i])) {
		*out = (struct ev){.unknown = true};
		return 0;
	}
	*out = (struct ev){.v = json_incref(r->val[i])};
	return 0;
}

int pb_render_vars(struct pb_render *r)
{
	const struct pb_node *vars = r->pb->vars;
	int rc = 0;

	for (size_t i = 0; vars && i < vars->n; i++) {
		struct ev v = {0};
		const char *name = vars->keys[i]->text;

		if (get_var(r, vars->items[i], name, strlen(name), &v) < 0)
			rc = -RY_E_INVALID;
		json_decref(v.v);
	}
	return rc;
}

/* Find the "}" closing a reference that starts at p (after "${"), skipping quoted strings. */
static const char *ref_end(const char *p, const char *end)
{
	bool q = false;

	for (; p < end; p++) {
		if (q && *p == '\\' && p + 1 < end)
			p++;
		else if (*p == '"')
			q = !q;
		else if (!q && *p == '}')
			return p;
	}
	return NULL;
}

int pb_render_string(struct pb_render *r, const struct pb_node *n, json_t **ret, bool *ret_unknown)
{
	const char *s = n->text, *end = n->text + n->len, *p;
	char *buf = NULL;
	size_t blen = 0;
	FILE *f;
	bool unknown = false;
	int rc = 0;

	if (ret_unknown)
		*ret_unknown = false;
	if (!strchr(s, '$')) {
		*ret = json_stringn(n->text, n->len);
		return *ret ? 0 : -ENOMEM;
	}
	/* A whole-string reference keeps the value's JSON type. */
	if (n->len > 3 && strncmp(s, "${", 2) == 0) {
		const char *e = ref_end(s + 2, end);

		if (e == end - 1) {
			struct ev v = {0};

			rc = eval_expr(r, n, s + 2, e, &v);
			if (rc < 0)
				return rc;
			if (v.unknown) {
				if (ret_unknown)
					*ret_unknown = true;
				*ret = json_null();
				return 0;
			}
			*ret = v.v;
			return 0;
		}
	}
	f = open_memstream(&buf, &blen);
	if (!f)
		return -ENOMEM;
	for (p = s; p < end;) {
		const char *e;
		struct ev v = {0};
		char *t;

		if (strncmp(p, "$${", 3) == 0) {
			fputs("${", f);
			p += 3;
			continue;
		}
		if (strncmp(p, "${", 2) != 0) {
			fputc(*p++, f);
			continue;
		}
		e = ref_end(p + 2, end);
		if (!e) {
			pb_diag_node(r->d, r->pb->file, n, "unterminated reference \"%s\"", p);
			rc = -RY_E_INVALID;
			break;
		}
		rc = eval_expr(r, n, p + 2, e, &v);
		if (rc < 0)
			break;
		p = e + 1;
		if (v.unknown) {
			unknown = true;
			continue;
		}
		t = scalar_text(v.v);
		if (!t) {
			pb_diag_node(r->d, r->pb->file, n,
				     "cannot embed a %s in a string (use | join(\",\") or a whole-"
				     "string reference)",
				     json_is_array(v.v) ? "list" : "mapping");
			json_decref(v.v);
			rc = -RY_E_INVALID;
			break;
		}
		fputs(t, f);
		free(t);
		json_decref(v.v);
	}
	if (fclose(f) != 0 && rc == 0)
		rc = -ENOMEM;
	if (rc == 0) {
		if (unknown && ret_unknown)
			*ret_unknown = true;
		*ret = unknown ? json_null() : json_stringn(buf, blen);
		if (!*ret)
			rc = -ENOMEM;
	}
	free(buf);
	return rc;
}

int pb_render_any(struct pb_render *r, const struct pb_node *n, json_t **ret)
{
	json_t *out = NULL, *v;
	long long iv;
	bool bv;
	int rc = 0;

	switch (n->kind) {
	case PBN_SCALAR:
		if (pb_scalar_is_null(n))
			out = json_null();
		else if (pb_scalar_bool(n, &bv) == 0)
			out = json_boolean(bv);
		else if (pb_scalar_int(n, &iv) == 0)
			out = json_integer(iv);
		else
			return pb_render_string(r, n, ret, NULL);
		break;
	case PBN_SEQ:
		out = json_array();
		for (size_t i = 0; out && i < n->n; i++) {
			v = NULL;
			if (pb_render_any(r, n->items[i], &v) < 0)
				rc = -RY_E_INVALID;
			else
				json_array_append_new(out, v);
		}
		break;
	case PBN_MAP:
		out = json_object();
		for (size_t i = 0; out && i < n->n; i++) {
			v = NULL;
			if (pb_render_any(r, n->items[i], &v) < 0)
				rc = -RY_E_INVALID;
			else
				json_object_set_new(out, n->keys[i]->text, v);
		}
		break;
	}
	if (!out)
		return -ENOMEM;
	if (rc < 0) {
		json_decref(out);
		return rc;
	}
	*ret = out;
	return 0;
}

int playbook_render(const struct playbook *pb, const json_t *facts, json_t **ret_plan,
		    struct pb_diags *d)
{
	struct playbook_facts f = {.json = facts};

	if (!json_is_object(facts)) {
		pb_diags_add(d, pb->file, 1, 1, "facts must be a JSON object");
		return -RY_E_INVALID;
	}
	return playbook_render_facts(pb, &f, ret_plan, d);
}

int playbook_render_facts(const struct playbook *pb, const struct playbook_facts *facts,
			  json_t **ret_plan, struct pb_diags *d)
{
	struct pb_render *r = NULL;
	json_t *plan = NULL, *steps;
	int rc, bad = 0;

	if (!facts) {
		pb_diags_add(d, pb->file, 1, 1, "facts must be a JSON object");
		return -RY_E_INVALID;
	}
	rc = pb_render_new(pb, facts, d, &r);
	if (rc < 0)
		return rc;
	plan = json_pack("{s:i, s:s, s:s, s:s, s:[]}", "schema", PB_PLAN_SCHEMA, "name", pb->name,
			 "version", pb->version, "sha256", pb->sha256, "steps");
	if (!plan) {
		rc = -ENOMEM;
		goto out;
	}
	steps = json_object_get(plan, "steps");
	for (size_t i = 0; i < pb->nsteps; i++) {
		json_t *st = NULL;

		rc = pb_step_build(r, pb, &pb->steps[i], &st, d);
		if (rc == -ENOMEM)
			goto out;
		if (rc < 0) {
			bad++;
			continue;
		}
		json_array_append_new(steps, st);
	}
	if (bad) {
		rc = -RY_E_INVALID;
		goto out;
	}
	*ret_plan = plan;
	plan = NULL;
	rc = 0;
out:
	json_decref(plan);
	pb_render_free(r);
	return rc;
}
