/* Playbook parsing and validation: top-level keys, target, rollout, vars, validation section and
 * steps, all errors collected as FILE:LINE:COL diagnostics; accessors and the diagnostics list. */
#include "common/playbook/playbook_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"
#include "proto/railyard/v1/limits.h"

/* ---- Diagnostics ---------------------------------------------------------------------------- */

void pb_diags_init(struct pb_diags *d)
{
	memset(d, 0, sizeof(*d));
}

void pb_diags_done(struct pb_diags *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->count; i++) {
		free(d->items[i].file);
		free(d->items[i].message);
	}
	free(d->items);
	memset(d, 0, sizeof(*d));
}

static void diags_vadd(struct pb_diags *d, const char *file, int line, int col, const char *fmt,
		       va_list ap)
{
	struct pb_diag *items;
	char *msg = NULL, *f = NULL;

	if (!d)
		return;
	if (d->count >= PB_MAX_DIAGS)
		goto drop;
	if (vasprintf(&msg, fmt, ap) < 0) {
		msg = NULL;
		goto drop;
	}
	f = strdup(file ? file : "<playbook>");
	items = f ? realloc(d->items, (d->count + 1) * sizeof(*items)) : NULL;
	if (!items)
		goto drop;
	d->items = items;
	d->items[d->count++] =
		(struct pb_diag){.file = f, .line = line, .col = col, .message = msg};
	return;
drop:
	free(msg);
	free(f);
	d->dropped++;
}

void pb_diags_add(struct pb_diags *d, const char *file, int line, int col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diags_vadd(d, file, line, col, fmt, ap);
	va_end(ap);
}

void pb_diag_node(struct pb_diags *d, const char *file, const struct pb_node *n, const char *fmt,
		  ...)
{
	va_list ap;

	va_start(ap, fmt);
	diags_vadd(d, file, n ? n->line : 1, n ? n->col : 1, fmt, ap);
	va_end(ap);
}

void pb_diags_print(const struct pb_diags *d, FILE *f)
{
	if (!d || !f)
		return;
	for (size_t i = 0; i < d->count; i++)
		fprintf(f, "%s:%d:%d: %s\n", d->items[i].file, d->items[i].line, d->items[i].col,
			d->items[i].message);
	if (d->dropped)
		fprintf(f, "(%zu more errors)\n", d->dropped);
}

/* ---- Scalars -------------------------------------------------------------------------------- */

bool pb_scalar_is_null(const struct pb_node *n)
{
	return n && n->kind == PBN_SCALAR && n->plain &&
	       (n->len == 0 || strcmp(n->text, "~") == 0 || strcmp(n->text, "null") == 0 ||
		strcmp(n->text, "Null") == 0 || strcmp(n->text, "NULL") == 0);
}

int pb_scalar_bool(const struct pb_node *n, bool *ret)
{
	static const char *const t[] = {"true", "True", "TRUE"};
	static const char *const f[] = {"false", "False", "FALSE"};

	if (!n || n->kind != PBN_SCALAR || !n->plain)
		return -EINVAL;
	for (size_t i = 0; i < RY_ARRAY_SIZE(t); i++) {
		if (strcmp(n->text, t[i]) == 0) {
			*ret = true;
			return 0;
		}
		if (strcmp(n->text, f[i]) == 0) {
			*ret = false;
			return 0;
		}
	}
	return -EINVAL;
}

int pb_scalar_int(const struct pb_node *n, long long *ret)
{
	const char *s;
	char *end;
	long long v;

	if (!n || n->kind != PBN_SCALAR || !n->plain || n->len == 0)
		return -EINVAL;
	s = n->text;
	if (!isdigit((unsigned char)s[s[0] == '-' || s[0] == '+' ? 1 : 0]))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* ---- Parsing -------------------------------------------------------------------------------- */

struct parse_ctx {
	struct playbook *pb;
	struct pb_diags *d;
	int errors;
};

static void perr(struct parse_ctx *c, const struct pb_node *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void perr(struct parse_ctx *c, const struct pb_node *n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diags_vadd(c->d, c->pb->file, n ? n->line : 1, n ? n->col : 1, fmt, ap);
	va_end(ap);
	c->errors++;
}

static const char *kind_name(const struct pb_node *n)
{
	if (n->kind == PBN_MAP)
		return "a mapping";
	if (n->kind == PBN_SEQ)
		return "a list";
	return pb_scalar_is_null(n) ? "null" : "a scalar";
}

/* A required-or-optional string scalar (any non-null scalar, kept as text). */
static const char *get_string(struct parse_ctx *c, const struct pb_node *map, const char *key,
			      bool required, const struct pb_node **ret_node)
{
	const struct pb_node *n = pb_node_get(map, key);

	if (ret_node)
		*ret_node = n;
	if (!n) {
		if (required)
			perr(c, map, "missing required key \"%s\"", key);
		return NULL;
	}
	if (n->kind != PBN_SCALAR || pb_scalar_is_null(n)) {
		perr(c, n, "%s: expected a string, got %s", key, kind_name(n));
		return NULL;
	}
	return n->text;
}

static void check_keys(struct parse_ctx *c, const struct pb_node *map, const char *const *keys,
		       const char *what)
{
	for (size_t i = 0; i < map->n; i++) {
		bool ok = false;

		for (size_t k = 0; keys[k]; k++)
			if (strcmp(map->keys[i]->text, keys[k]) == 0)
				ok = true;
		if (!ok)
			perr(c, map->keys[i], "unknown %s key \"%s\"", what, map->keys[i]->text);
	}
}

/* batch / max_fail: an integer count or "N%". */
static void parse_amount(struct parse_ctx *c, const struct pb_node *n, const char *key, int min,
			 int *ret_count, int *ret_percent)
{
	long long v;

	if (n->kind != PBN_SCALAR) {
		perr(c, n, "%s: expected a count or a percentage, got %s", key, kind_name(n));
		return;
	}
	if (n->len > 1 && n->text[n->len - 1] == '%') {
		char *end;
		long p;

		errno = 0;
		p = strtol(n->text, &end, 10);
		if (errno || end != n->text + n->len - 1 || !isdigit((unsigned char)n->text[0]) ||
		    p < (min > 0 ? 1 : 0) || p > 100) {
			perr(c, n, "%s: bad percentage \"%s\" (expected %d%%..100%%)", key, n->text,
			     min > 0 ? 1 : 0);
			return;
		}
		*ret_percent = (int)p;
		*ret_count = -1;
		return;
	}
	if (pb_scalar_int(n, &v) < 0 || v < min || v > INT_MAX) {
		perr(c, n, "%s: expected a count >= %d or a percentage like \"25%%\", got \"%s\"",
		     key, min, n->text);
		return;
	}
	*ret_count = (int)v;
	*ret_percent = -1;
}

static void parse_rollout(struct parse_ctx *c, const struct pb_node *n)
{
	static const char *const keys[] = {"batch", "max_fail", "canary", "pause", NULL};
	struct pb_rollout *ro = &c->pb->rollout;
	const struct pb_node *v;
	long long i;

	if (n->kind != PBN_MAP) {
		perr(c, n, "rollout: expected a mapping, got %s", kind_name(n));
		return;
	}
	check_keys(c, n, keys, "rollout");
	if ((v = pb_node_get(n, "batch")))
		parse_amount(c, v, "batch", 1, &ro->batch_count, &ro->batch_percent);
	if ((v = pb_node_get(n, "max_fail")))
		parse_amount(c, v, "max_fail", 0, &ro->max_fail_count, &ro->max_fail_percent);
	if ((v = pb_node_get(n, "canary"))) {
		if (pb_scalar_int(v, &i) < 0 || i < 0 || i > INT_MAX)
			perr(c, v, "canary: expected a count >= 0");
		else
			ro->canary = (int)i;
	}
	if ((v = pb_node_get(n, "pause"))) {
		int64_t ms;

		if (v->kind != PBN_SCALAR || pb_scalar_is_null(v) ||
		    util_parse_duration_ms(v->text, &ms) < 0)
			perr(c, v, "pause: bad duration \"%s\" (expected e.g. \"30s\", \"5m\")",
			     v->kind == PBN_SCALAR ? v->text : "");
		else
			ro->pause_ms = ms;
	}
}

static bool name_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("._-", *s))
			return false;
	return true;
}

static void parse_target(struct parse_ctx *c, struct pb_render *r, const struct pb_node *n)
{
	static const char *const keys[] = {"cluster", "selector", NULL};
	const struct pb_node *sel;

	if (n->kind != PBN_MAP) {
		perr(c, n, "target: expected a mapping, got %s", kind_name(n));
		return;
	}
	check_keys(c, n, keys, "target");
	c->pb->cluster = get_string(c, n, "cluster", false, NULL);
	sel = pb_node_get(n, "selector");
	if (!sel)
		return;
	if (sel->kind != PBN_SEQ) {
		perr(c, sel, "selector: expected a list of conditions, got %s", kind_name(sel));
		return;
	}
	for (size_t i = 0; i < sel->n; i++) {
		json_t *cond = NULL;
		int e = pb_cond_convert(r, c->pb->file, sel->items[i], &cond, c->d);

		if (e < 0) {
			c->errors++;
			continue;
		}
		if (json_array_append_new(c->pb->selector, cond) < 0)
			c->errors++;
	}
}

/* validation: the campaign's tests and acceptance rules (playbook_validation.c). */
static void parse_validation(struct parse_ctx *c, const struct pb_node *n)
{
	json_t *v = NULL;
	int e = pb_validation_parse(c->pb->file, n, &v, c->d);

	if (e) {
		c->errors += e;
		return;
	}
	json_decref(c->pb->validation);
	c->pb->validation = v;
}

/* health: what the agents' watchers watch between campaigns (playbook_health.c); defaults when
 * absent. */
static void parse_health(struct parse_ctx *c, const struct pb_node *n)
{
	json_t *h = NULL;
	int e = pb_health_parse(c->pb->file, n, &h, c->d);

	if (e) {
		c->errors += e;
		return;
	}
	c->pb->health = h;
}

/* A step name as the protocol carries it (StepEvent.name, which the controller checks the same
 * way): 1 to RY_PROTO_STEP_NAME_MAX printable ASCII bytes. */
static bool step_name_ok(const struct pb_node *n)
{
	if (n->len == 0 || n->len > RY_PROTO_STEP_NAME_MAX || strlen(n->text) != n->len)
		return false;
	for (size_t i = 0; i < n->len; i++)
		if (!isprint((unsigned char)n->text[i]))
			return false;
	return true;
}

static void parse_steps(struct parse_ctx *c, struct pb_render *r, const struct pb_node *n)
{
	struct playbook *pb = c->pb;

	if (n->kind != PBN_SEQ) {
		perr(c, n, "steps: expected a list, got %s", kind_name(n));
		return;
	}
	if (n->n == 0) {
		perr(c, n, "steps: at least one step is required");
		return;
	}
	pb->steps = calloc(n->n, sizeof(*pb->steps));
	if (!pb->steps) {
		c->errors++;
		return;
	}
	for (size_t i = 0; i < n->n; i++) {
		const struct pb_node *st = n->items[i], *tn = NULL, *nn = NULL;
		const char *type, *name;
		struct pb_step *s;
		json_t *params = NULL;

		if (st->kind != PBN_MAP) {
			perr(c, st, "steps[%zu]: expected a mapping, got %s", i, kind_name(st));
			continue;
		}
		name = get_string(c, st, "name", true, &nn);
		if (name && !step_name_ok(nn))
			perr(c, nn, "name: a step name is 1 to %d printable ASCII characters",
			     RY_PROTO_STEP_NAME_MAX);
		type = get_string(c, st, "type", true, &tn);
		for (size_t j = 0; name && j < i; j++) {
			const struct pb_node *prev = pb_node_get(n->items[j], "name");

			if (prev && prev->kind == PBN_SCALAR && strcmp(prev->text, name) == 0) {
				perr(c, nn, "duplicate step name \"%s\" (first at line %d)", name,
				     prev->line);
				break;
			}
		}
		if (!type)
			continue;
		s = &pb->steps[pb->nsteps];
		s->schema = pb_step_schema_find(type);
		if (!s->schema) {
			perr(c, tn, "unknown step type \"%s\"", type);
			continue;
		}
		s->node = (struct pb_node *)st;
		s->name = name ? name : "";
		if (pb_step_build(r, pb, s, &params, c->d) < 0)
			c->errors++;
		json_decref(params);
		if (name)
			pb->nsteps++;
	}
}

static int sha256_hex(const char *text, size_t len, char out[65])
{
	unsigned char md[32];
	unsigned int mdlen = 0;

	if (!EVP_Digest(text, len, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32)
		return -RY_E_CRYPTO;
	util_hex(md, 32, out);
	return 0;
}

int playbook_parse(const char *text, size_t len, const char *display_name, struct playbook **ret_pb,
		   struct pb_diags *d)
{
	static const char *const keys[] = {"name",    "version", "description", "target", "vars",
					   "rollout", "steps",	 "validation",	"health", NULL};
	struct parse_ctx c = {.d = d};
	struct playbook *pb;
	struct pb_render *r = NULL;
	const struct pb_node *root, *n;
	int e;

	if (!display_name)
		display_name = "<playbook>";
	if (len > PB_MAX_SIZE) {
		pb_diags_add(d, display_name, 1, 1, "playbook is %zu bytes, over the limit of %d",
			     len, PB_MAX_SIZE);
		return -RY_E_TOO_BIG;
	}
	pb = calloc(1, sizeof(*pb));
	if (!pb)
		return -ENOMEM;
	c.pb = pb;
	pb->rollout = (struct pb_rollout){.batch_count = -1,
					  .batch_percent = 100,
					  .max_fail_count = 0,
					  .max_fail_percent = -1};
	pb->file = strdup(display_name);
	pb->selector = json_array();
	pb->validation = json_object();
	if (!pb->file || !pb->selector || !pb->validation) {
		e = -ENOMEM;
		goto fail;
	}
	e = sha256_hex(text, len, pb->sha256);
	if (e < 0)
		goto fail;
	if (memchr(text, '\0', len)) {
		pb_diags_add(d, display_name, 1, 1, "playbook contains a NUL byte");
		e = -RY_E_INVALID;
		goto fail;
	}
	e = pb_yaml_build(text, len, pb->file, &pb->root, d);
	if (e < 0)
		goto fail;
	root = pb->root;
	if (root->kind != PBN_MAP) {
		perr(&c, root, "a playbook must be a mapping, got %s", kind_name(root));
		e = -RY_E_INVALID;
		goto fail;
	}
	check_keys(&c, root, keys, "top-level");
	pb->name = get_string(&c, root, "name", true, &n);
	if (pb->name && !name_ok(pb->name))
		perr(&c, n, "name: \"%s\" may only use letters, digits, '.', '_' and '-'",
		     pb->name);
	pb->version = get_string(&c, root, "version", true, NULL);
	pb->description = get_string(&c, root, "description", false, NULL);
	if ((n = pb_node_get(root, "vars"))) {
		if (n->kind != PBN_MAP)
			perr(&c, n, "vars: expected a mapping, got %s", kind_name(n));
		else
			pb->vars = (struct pb_node *)n;
	}
	/* A dry-run renderer (no facts) checks reference syntax, vars and cycles now. */
	e = pb_render_new(pb, NULL, d, &r);
	if (e < 0)
		goto fail;
	if (pb_render_vars(r) < 0)
		c.errors++;
	if ((n = pb_node_get(root, "target")))
		parse_target(&c, r, n);
	if ((n = pb_node_get(root, "rollout")))
		parse_rollout(&c, n);
	if ((n = pb_node_get(root, "validation")))
		parse_validation(&c, n);
	parse_health(&c, pb_node_get(root, "health"));
	pb->has_health = pb_node_get(root, "health") != NULL;
	if ((n = pb_node_get(root, "steps")))
		parse_steps(&c, r, n);
	else
		perr(&c, root, "missing required key \"steps\"");
	pb_render_free(r);
	if (c.errors) {
		e = -RY_E_INVALID;
		goto fail;
	}
	*ret_pb = pb;
	return 0;
fail:
	if (e == -RY_E_INVALID && d && d->count == 0)
		pb_diags_add(d, display_name, 1, 1, "invalid playbook");
	playbook_free(pb);
	return e;
}

int playbook_load(const char *path, struct playbook **ret_pb, struct pb_diags *d)
{
	char *buf = NULL;
	size_t len = 0;
	int r;

	r = fs_read_file(path, PB_MAX_SIZE, &buf, &len);
	if (r == -RY_E_TOO_BIG) {
		pb_diags_add(d, path, 1, 1, "playbook is over the size limit of %d bytes",
			     PB_MAX_SIZE);
		return r;
	}
	if (r < 0) {
		pb_diags_add(d, path, 1, 1, "cannot read: %s", ry_strerror(r));
		return r;
	}
	r = playbook_parse(buf, len, path, ret_pb, d);
	free(buf);
	return r;
}

void playbook_free(struct playbook *pb)
{
	if (!pb)
		return;
	pb_node_free(pb->root);
	json_decref(pb->selector);
	json_decref(pb->validation);
	json_decref(pb->health);
	free(pb->steps);
	free(pb->file);
	free(pb);
}

const char *playbook_name(const struct playbook *pb)
{
	return pb->name;
}

const char *playbook_version(const struct playbook *pb)
{
	return pb->version;
}

const char *playbook_description(const struct playbook *pb)
{
	return pb->description ? pb->description : "";
}

const char *playbook_sha256(const struct playbook *pb)
{
	return pb->sha256;
}

const char *playbook_target_cluster(const struct playbook *pb)
{
	return pb->cluster;
}

const json_t *playbook_target_selector(const struct playbook *pb)
{
	return pb->selector;
}

const struct pb_rollout *playbook_rollout(const struct playbook *pb)
{
	return &pb->rollout;
}

const json_t *playbook_health_json(const struct playbook *pb)
{
	return pb->health;
}

bool playbook_has_health(const struct playbook *pb)
{
	return pb->has_health;
}

const json_t *playbook_validation(const struct playbook *pb)
{
	return pb->validation;
}

size_t playbook_step_count(const struct playbook *pb)
{
	return pb->nsteps;
}

const char *playbook_step_name(const struct playbook *pb, size_t i)
{
	return i < pb->nsteps ? pb->steps[i].name : NULL;
}

const char *playbook_step_type(const struct playbook *pb, size_t i)
{
	return i < pb->nsteps ? pb->steps[i].schema->type : NULL;
}

int64_t playbook_step_reboot_timeout_ms(const struct playbook *pb, size_t i)
{
	const struct pb_node *t;
	int64_t ms;

	if (i >= pb->nsteps || strcmp(pb->steps[i].schema->type, "reboot") != 0)
		return -1;
	t = pb_node_get(pb_node_get(pb->steps[i].node, "params"), "timeout");
	if (!t)
		return util_parse_duration_ms(PB_REBOOT_DEFAULT_TIMEOUT, &ms) < 0 ? -1 : ms;
	/* A reference is known only once rendered for a node: the most a plan may say. */
	if (t->kind != PBN_SCALAR || !t->text || strstr(t->text, "${") ||
	    util_parse_duration_ms(t->text, &ms) < 0)
		return PB_REBOOT_MAX_TIMEOUT_MS;
	return ms;
}

bool playbook_target_matches(const struct playbook *pb, const char *cluster, const json_t *facts)
{
	struct playbook_facts f = {.json = facts};

	return playbook_target_matches_facts(pb, cluster, facts ? &f : NULL);
}

bool playbook_target_matches_facts(const struct playbook *pb, const char *cluster,
				   const struct playbook_facts *facts)
{
	size_t i;
	json_t *cond;

	if (pb->cluster && (!cluster || strcmp(pb->cluster, cluster) != 0))
		return false;
	json_array_foreach(pb->selector, i, cond)
	{
		bool ok = false;

		if (pb_cond_eval(cond, facts, &ok, NULL, 0) < 0 || !ok)
			return false;
	}
	return true;
}
