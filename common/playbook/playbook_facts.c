/* Facts for lookups: a parsed JSON document, or its text indexed in one pass so that a lookup
 * builds only the values it reaches. The controller renders a plan (and matches a playbook's
 * target) from every node's stored facts, ~15-25 kB of JSON each; building the whole document
 * with jansson (~1,000 values, a hash table per object) was most of a deployment's rendering CPU,
 * and a playbook reads a few dozen of those values (docs/scaling.md).
 *
 * The index is a flat array of tokens in document order, one per value: its type, where its
 * text is, the token after its subtree, and, for an object member, where its key is. A lookup
 * walks it with the same path walker as a jansson tree (below: a cursor is either) and hands
 * over each value it reaches as jansson parses that value's own text (json_loadb(),
 * JSON_DECODE_ANY), so values,
 * duplicate keys (the last one counts) and string escapes come out exactly as a jansson parse of
 * the whole document would give them. The indexer checks the structure (brackets, strings,
 * separators, literal and number characters, depth) and refuses what is not a JSON object; a
 * value that jansson itself refuses (a number out of range, invalid UTF-8) is reported when a
 * lookup reaches it. Facts stored by the controller were parsed by jansson when they arrived. */
#include "common/playbook/playbook_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/util/error.h"

#define FACTS_DEPTH_MAX 512 /* deeper documents are refused (jansson's own limit is 2048) */
#define FACTS_SIZE_MAX	(64u * 1024 * 1024)

struct pb_tok {
	uint32_t start, end; /* the value's text: [start, end) */
	uint32_t next;	     /* the token after this value's subtree */
	uint32_t key;	     /* object members: offset of the key's opening quote */
	uint32_t key_len;    /* ... and the length of its text between the quotes */
	char type;	     /* '{', '[', '"', '0' (number), 't', 'f', 'n' */
	bool key_escaped;    /* the key has a backslash escape */
};

struct indexer {
	const char *s;
	size_t len, pos;
	struct pb_tok *tok;
	size_t ntok, cap;
};

static void skip_ws(struct indexer *ix)
{
	while (ix->pos < ix->len && (ix->s[ix->pos] == ' ' || ix->s[ix->pos] == '\t' ||
				     ix->s[ix->pos] == '\n' || ix->s[ix->pos] == '\r'))
		ix->pos++;
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A string from its opening quote at pos: pos ends after the closing quote. */
static int scan_string(struct indexer *ix, bool *escaped)
{
	size_t i = ix->pos + 1;

	*escaped = false;
	while (i < ix->len) {
		unsigned char c = (unsigned char)ix->s[i];

		if (c == '"') {
			ix->pos = i + 1;
			return 0;
		}
		if (c < 0x20)
			return -RY_E_INVALID;
		if (c != '\\') {
			i++;
			continue;
		}
		*escaped = true;
		if (i + 1 >= ix->len)
			return -RY_E_INVALID;
		switch (ix->s[i + 1]) {
		case 'u':
			if (ix->len - i < 6 || !is_hex(ix->s[i + 2]) || !is_hex(ix->s[i + 3]) ||
			    !is_hex(ix->s[i + 4]) || !is_hex(ix->s[i + 5]))
				return -RY_E_INVALID;
			i += 6;
			break;
		case '"':
		case '\\':
		case '/':
		case 'b':
		case 'f':
		case 'n':
		case 'r':
		case 't':
			i += 2;
			break;
		default:
			return -RY_E_INVALID;
		}
	}
	return -RY_E_INVALID;
}

static bool number_char(char c)
{
	return (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.' || c == 'e' || c == 'E';
}

static struct pb_tok *tok_new(struct indexer *ix)
{
	if (ix->ntok == ix->cap) {
		size_t cap = ix->cap ? ix->cap * 2 : 256;
		struct pb_tok *t = realloc(ix->tok, cap * sizeof(*t));

		if (!t)
			return NULL;
		ix->tok = t;
		ix->cap = cap;
	}
	memset(&ix->tok[ix->ntok], 0, sizeof(ix->tok[0]));
	return &ix->tok[ix->ntok++];
}

/* One value at pos (whitespace skipped before): its token, and its subtree's. */
static int scan_value(struct indexer *ix, int depth, uint32_t key, uint32_t key_len,
		      bool key_escaped)
{
	size_t me = ix->ntok;
	struct pb_tok *t = tok_new(ix);
	char c;
	int r;

	if (!t)
		return -ENOMEM;
	t->key = key;
	t->key_len = key_len;
	t->key_escaped = key_escaped;
	t->start = (uint32_t)ix->pos;
	if (ix->pos >= ix->len)
		return -RY_E_INVALID;
	c = ix->s[ix->pos];
	if (c == '{' || c == '[') {
		char close = c == '{' ? '}' : ']';
		bool first = true;

		if (depth >= FACTS_DEPTH_MAX)
			return -RY_E_INVALID;
		t->type = c;
		ix->pos++;
		for (;;) {
			uint32_t k = 0, klen = 0;
			bool kesc = false;

			skip_ws(ix);
			if (ix->pos >= ix->len)
				return -RY_E_INVALID;
			if (ix->s[ix->pos] == close && first) {
				ix->pos++;
				break;
			}
			if (!first) {
				if (ix->s[ix->pos] == close) {
					ix->pos++;
					break;
				}
				if (ix->s[ix->pos] != ',')
					return -RY_E_INVALID;
				ix->pos++;
				skip_ws(ix);
			}
			first = false;
			if (c == '{') {
				if (ix->pos >= ix->len || ix->s[ix->pos] != '"')
					return -RY_E_INVALID;
				k = (uint32_t)ix->pos;
				r = scan_string(ix, &kesc);
				if (r < 0)
					return r;
				klen = (uint32_t)(ix->pos - k - 2);
				skip_ws(ix);
				if (ix->pos >= ix->len || ix->s[ix->pos] != ':')
					return -RY_E_INVALID;
				ix->pos++;
				skip_ws(ix);
			}
			r = scan_value(ix, depth + 1, k, klen, kesc);
			if (r < 0)
				return r;
		}
	} else if (c == '"') {
		bool esc;

		ix->tok[me].type = '"';
		r = scan_string(ix, &esc);
		if (r < 0)
			return r;
	} else if (c == '-' || (c >= '0' && c <= '9')) {
		ix->tok[me].type = '0';
		while (ix->pos < ix->len && number_char(ix->s[ix->pos]))
			ix->pos++;
	} else {
		static const char *const lits[] = {"true", "false", "null"};
		size_t i;

		for (i = 0; i < 3; i++) {
			size_t n = strlen(lits[i]);

			if (ix->len - ix->pos >= n && memcmp(ix->s + ix->pos, lits[i], n) == 0) {
				ix->tok[me].type = lits[i][0];
				ix->pos += n;
				break;
			}
		}
		if (i == 3)
			return -RY_E_INVALID;
	}
	/* tok may have moved (realloc): index again. */
	ix->tok[me].end = (uint32_t)ix->pos;
	ix->tok[me].next = (uint32_t)ix->ntok;
	return 0;
}

int playbook_facts_index(const char *text, size_t len, struct playbook_facts **ret)
{
	struct indexer ix = {.s = text, .len = len};
	struct playbook_facts *f;
	int r;

	if (len > FACTS_SIZE_MAX)
		return -RY_E_TOO_BIG;
	skip_ws(&ix);
	if (ix.pos >= len || text[ix.pos] != '{')
		return -RY_E_INVALID;
	r = scan_value(&ix, 0, 0, 0, false);
	if (r == 0) {
		skip_ws(&ix);
		if (ix.pos != len)
			r = -RY_E_INVALID;
	}
	if (r < 0) {
		free(ix.tok);
		return r;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		free(ix.tok);
		return -ENOMEM;
	}
	f->text = text;
	f->tok = ix.tok;
	f->ntok = ix.ntok;
	*ret = f;
	return 0;
}

void playbook_facts_free(struct playbook_facts *f)
{
	if (!f)
		return;
	free(f->tok);
	free(f);
}

/* ---- Walking a path over either kind of document --------------------------------------------
 * A cursor is a value of a parsed document (j) or a token of an index (f, t); a path walk
 * (pb_facts_walk()) goes through cursors, so that the path grammar has one walker. */

struct cur {
	const struct playbook_facts *f; /* an index: tok t; NULL: a parsed value j */
	const json_t *j;
	uint32_t t;
	size_t i; /* an array element's index (iteration) */
};

static bool cur_is(const struct cur *c, char type)
{
	if (!c->f)
		return type == '[' ? json_is_array(c->j) : json_is_object(c->j);
	return c->f->tok[c->t].type == type;
}

/* The first element of array c (false: none). */
static bool cur_first(const struct cur *c, struct cur *e)
{
	*e = (struct cur){.f = c->f, .i = 0};
	if (!c->f) {
		e->j = json_array_get(c->j, 0);
		return e->j != NULL;
	}
	e->t = c->t + 1;
	return e->t < c->f->tok[c->t].next;
}

/* The element after e in array c (false: none). */
static bool cur_next(const struct cur *c, struct cur *e)
{
	e->i++;
	if (!c->f) {
		e->j = json_array_get(c->j, e->i);
		return e->j != NULL;
	}
	e->t = c->f->tok[e->t].next;
	return e->t < c->f->tok[c->t].next;
}

/* Does member t's key equal seg (n bytes, no escapes)? */
static bool key_is(const struct playbook_facts *f, const struct pb_tok *t, const char *seg,
		   size_t n)
{
	json_t *k;
	bool eq;

	if (!t->key_escaped)
		return t->key_len == n && memcmp(f->text + t->key + 1, seg, n) == 0;
	k = json_loadb(f->text + t->key, t->key_len + 2, JSON_DECODE_ANY, NULL);
	eq = k && json_string_length(k) == n && memcmp(json_string_value(k), seg, n) == 0;
	json_decref(k);
	return eq;
}

/* Member seg (n bytes) of object c: the last of that name, as a parse of the whole document
 * keeps it. */
static bool cur_member(const struct cur *c, const char *seg, size_t n, struct cur *m)
{
	*m = (struct cur){.f = c->f};
	if (!c->f) {
		char key[256];

		memcpy(key, seg, n);
		key[n] = '\0';
		m->j = json_object_get(c->j, key);
		return m->j != NULL;
	}
	m->t = UINT32_MAX;
	for (uint32_t k = c->t + 1; k < c->f->tok[c->t].next; k = c->f->tok[k].next)
		if (key_is(c->f, &c->f->tok[k], seg, n))
			m->t = k;
	return m->t != UINT32_MAX;
}

/* c's value, a new reference: a token's is what jansson reads of its text. */
static int cur_value(const struct cur *c, json_t **ret)
{
	const struct pb_tok *t;

	if (!c->f) {
		*ret = json_incref((json_t *)c->j);
		return 0;
	}
	t = &c->f->tok[c->t];
	*ret = json_loadb(c->f->text + t->start, t->end - t->start, JSON_DECODE_ANY, NULL);
	return *ret ? 0 : -RY_E_INVALID;
}

static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

/* Walk p from cur. acc != NULL once a wildcard was seen: matches are appended there (with their
 * concrete paths in paths, if given) and misses are skipped. */
static int walk(const struct cur *cur, const char *p, json_t *acc, json_t *paths, const char *done,
		json_t **ret)
{
	struct cur next;
	bool found = false;
	size_t n;
	int r;

	if (!*p) {
		json_t *v;

		r = cur_value(cur, &v);
		if (r < 0 || !acc) {
			if (r == 0)
				*ret = v;
			return r;
		}
		if (paths && json_array_append_new(paths, json_string(done)) < 0) {
			json_decref(v);
			return -ENOMEM;
		}
		return json_array_append_new(acc, v) < 0 ? -ENOMEM : 0;
	}
	if (*p == '[' && p[1] == '*') {
		json_t *mine = NULL;

		if (!cur_is(cur, '['))
			return acc ? 0 : -ENOENT;
		if (!acc) {
			mine = json_array();
			if (!mine)
				return -ENOMEM;
			acc = mine;
		}
		for (bool more = cur_first(cur, &next); more; more = cur_next(cur, &next)) {
			char sub[512];

			snprintf(sub, sizeof(sub), "%s[%zu]", done, next.i);
			r = walk(&next, p + 3, acc, paths, sub, ret);
			if (r < 0) {
				json_decref(mine);
				return r;
			}
		}
		if (mine)
			*ret = mine;
		return 0;
	}
	if (*p == '[') {
		char *end;
		unsigned long idx = strtoul(p + 1, &end, 10);

		n = (size_t)(end + 1 - p);
		if (cur_is(cur, '[')) {
			bool more = cur_first(cur, &next);

			while (more && next.i < idx)
				more = cur_next(cur, &next);
			found = more;
		}
	} else {
		if (*p == '.')
			p++;
		n = 0;
		while (ident_char(p[n]))
			n++;
		if (n > PB_PATH_NAME_MAX)
			return -EINVAL; /* pb_path_check() refuses it first */
		found = cur_is(cur, '{') && cur_member(cur, p, n, &next);
	}
	if (!found)
		return acc ? 0 : -ENOENT;
	{
		char sub[512];

		snprintf(sub, sizeof(sub), "%s%s%.*s", done, (*p == '[' || !*done) ? "" : ".",
			 (int)n, p);
		return walk(&next, p + n, acc, paths, sub, ret);
	}
}

int pb_facts_walk(const struct playbook_facts *f, const char *path, json_t *paths, json_t **ret)
{
	/* A parsed document is walked through its values, an index through its tokens. */
	struct cur c = {.f = f && !f->json ? f : NULL, .j = f ? f->json : NULL};

	if (!f)
		return -ENOENT;
	return walk(&c, path, NULL, paths, "", ret);
}

int pb_lookup(const json_t *root, const char *path, json_t **ret)
{
	struct playbook_facts f = {.json = root};

	return pb_facts_walk(root ? &f : NULL, path, NULL, ret);
}

int playbook_facts_lookup(const struct playbook_facts *f, const char *path, json_t **ret)
{
	if (pb_fact_path_check(path) < 0)
		return -EINVAL;
	return pb_facts_walk(f, path, NULL, ret);
}
