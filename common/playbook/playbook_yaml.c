/* YAML to a small tree with 1-based positions, built from libfyaml parser events (the document
 * API of libfyaml 0.7 does not expose node positions). Rejects text that is not UTF-8 (at the
 * first bad byte: libfyaml would read it as null scalars), aliases, tags, duplicate keys,
 * non-scalar keys, several documents and excessive nesting. */
#include "common/playbook/playbook_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libfyaml.h>

#include "common/util/error.h"

void pb_node_free(struct pb_node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++) {
		pb_node_free(n->items[i]);
		if (n->keys)
			pb_node_free(n->keys[i]);
	}
	free(n->items);
	free(n->keys);
	free(n->text);
	free(n);
}

struct pb_node *pb_node_get(const struct pb_node *map, const char *key)
{
	if (!map || map->kind != PBN_MAP)
		return NULL;
	for (size_t i = 0; i < map->n; i++)
		if (strcmp(map->keys[i]->text, key) == 0)
			return map->items[i];
	return NULL;
}

static int node_append(struct pb_node *parent, struct pb_node *key, struct pb_node *child)
{
	if (parent->n == parent->cap) {
		size_t cap = parent->cap ? parent->cap * 2 : 8;
		struct pb_node **items = realloc(parent->items, cap * sizeof(*items));

		if (!items)
			return -ENOMEM;
		parent->items = items;
		if (parent->kind == PBN_MAP) {
			struct pb_node **keys = realloc(parent->keys, cap * sizeof(*keys));

			if (!keys)
				return -ENOMEM;
			parent->keys = keys;
		}
		parent->cap = cap;
	}
	if (parent->kind == PBN_MAP)
		parent->keys[parent->n] = key;
	parent->items[parent->n++] = child;
	return 0;
}

struct builder {
	const char *name;
	const char *text; /* what is parsed (scalar positions are offsets in it) */
	size_t len;
	struct pb_diags *d;
	struct pb_node *stack[PB_MAX_DEPTH + 1];
	struct pb_node *pending_key[PB_MAX_DEPTH + 1];
	int depth;
	struct pb_node *root;
	int docs;
	bool failed;
};

/* Attach a finished node to the collection on top of the stack (as key or value). */
static int attach(struct builder *b, struct pb_node *n)
{
	struct pb_node *top;
	int r;

	if (b->depth == 0) {
		b->root = n;
		return 0;
	}
	top = b->stack[b->depth - 1];
	if (top->kind == PBN_SEQ) {
		r = node_append(top, NULL, n);
		if (r < 0)
			pb_node_free(n);
		return r;
	}
	if (!b->pending_key[b->depth - 1]) {
		if (n->kind != PBN_SCALAR) {
			pb_diag_node(b->d, b->name, n, "mapping keys must be scalars");
			pb_node_free(n);
			return -RY_E_INVALID;
		}
		if (pb_node_get(top, n->text)) {
			pb_diag_node(b->d, b->name, n, "duplicate key \"%s\"", n->text);
			pb_node_free(n);
			return -RY_E_INVALID;
		}
		b->pending_key[b->depth - 1] = n;
		return 0;
	}
	r = node_append(top, b->pending_key[b->depth - 1], n);
	if (r < 0) {
		pb_node_free(b->pending_key[b->depth - 1]);
		pb_node_free(n);
	}
	b->pending_key[b->depth - 1] = NULL;
	return r;
}

static struct pb_node *node_new(enum pb_node_kind kind, struct fy_event *ev)
{
	struct pb_node *n = calloc(1, sizeof(*n));
	const struct fy_mark *m = fy_event_start_mark(ev);

	if (!n)
		return NULL;
	n->kind = kind;
	n->line = m ? m->line + 1 : 1;
	n->col = m ? m->column + 1 : 1;
	return n;
}

/* The end of the line that starts at p (its line break or end), and in *ret_next the start of
 * the next one (NULL after the last). Line breaks are YAML's: LF, CR LF, and a CR alone. */
static const char *line_end(const char *p, const char *end, const char **ret_next)
{
	for (const char *q = p; q < end; q++) {
		if (*q == '\n' || *q == '\r') {
			*ret_next = *q == '\r' && q + 1 < end && q[1] == '\n' ? q + 2 : q + 1;
			return q;
		}
	}
	*ret_next = NULL;
	return end;
}

/* Whether c is YAML white space (s-white). */
static bool is_white(char c)
{
	return c == ' ' || c == '\t';
}

size_t pb_yaml_single_quoted(const char *raw, size_t len, char *out)
{
	const char *p = raw, *end = raw + len;
	size_t n = 0, breaks = 0;
	bool first = true;

	while (p) {
		const char *next, *eol = line_end(p, end, &next), *s = p, *e = eol;

		if (!first)
			while (s < e && is_white(*s))
				s++;
		if (next)
			while (e > s && is_white(e[-1]))
				e--;
		if (!first && next && s == e) {
			breaks++; /* an empty line inside: a newline */
			p = next;
			continue;
		}
		if (!first) {
			if (breaks == 0)
				out[n++] = ' ';
			for (; breaks > 0; breaks--)
				out[n++] = '\n';
		}
		for (const char *q = s; q < e; q++) {
			out[n++] = *q;
			if (*q == '\'' && q + 1 < e && q[1] == '\'')
				q++;
		}
		first = false;
		p = next;
	}
	out[n] = '\0';
	return n;
}

/* A scalar's text into n->text (NUL-terminated, n->len bytes) and whether it was plain.
 * libfyaml 0.7 leaks the buffer of its formatting of a single-quoted scalar with many ''
 * (found by tests/fuzz/fuzz_playbook; fixed upstream, pantoniou/libfyaml#233), reads two ''
 * in a row wrongly, and reads a CR LF before a closing quote on a line of its own as a
 * newline where an LF gives the space YAML says (also found by fuzz_playbook): such scalars
 * (with a '' or a CR) are decoded here, from the text between the quotes. 0 or -ENOMEM. */
static int scalar_text(struct builder *b, struct fy_token *tok, struct pb_node *n)
{
	const struct fy_mark *sm = tok ? fy_token_start_mark(tok) : NULL;
	const struct fy_mark *em = tok ? fy_token_end_mark(tok) : NULL;
	size_t len = 0;
	const char *t;

	n->plain = !tok || fy_token_scalar_style(tok) == FYSS_PLAIN;
	if (tok && fy_token_scalar_style(tok) == FYSS_SINGLE_QUOTED && sm && em &&
	    sm->input_pos <= em->input_pos && em->input_pos <= b->len &&
	    (memmem(b->text + sm->input_pos, em->input_pos - sm->input_pos, "''", 2) ||
	     memchr(b->text + sm->input_pos, '\r', em->input_pos - sm->input_pos))) {
		len = em->input_pos - sm->input_pos;
		n->text = malloc(len + 1);
		if (!n->text)
			return -ENOMEM;
		n->len = pb_yaml_single_quoted(b->text + sm->input_pos, len, n->text);
		return 0;
	}
	t = tok ? fy_token_get_text(tok, &len) : NULL;
	if (!t)
		len = 0;
	n->text = malloc(len + 1);
	if (!n->text)
		return -ENOMEM;
	if (len)
		memcpy(n->text, t, len);
	n->text[len] = '\0';
	n->len = len;
	return 0;
}

static int on_event(struct builder *b, struct fy_event *ev)
{
	struct pb_node *n = NULL;
	struct fy_token *tag = NULL, *anchor = NULL;
	(void)anchor;

	switch (ev->type) {
	case FYET_DOCUMENT_START:
		if (++b->docs > 1) {
			n = node_new(PBN_SCALAR, ev);
			pb_diag_node(b->d, b->name, n, "only one YAML document is allowed");
			pb_node_free(n);
			return -RY_E_INVALID;
		}
		return 0;
	case FYET_ALIAS:
		n = node_new(PBN_SCALAR, ev);
		pb_diag_node(b->d, b->name, n, "YAML aliases are not supported");
		pb_node_free(n);
		return -RY_E_INVALID;
	case FYET_SCALAR:
		tag = ev->scalar.tag;
		n = node_new(PBN_SCALAR, ev);
		if (!n)
			return -ENOMEM;
		if (scalar_text(b, ev->scalar.value, n) < 0) {
			free(n);
			return -ENOMEM;
		}
		break;
	case FYET_SEQUENCE_START:
	case FYET_MAPPING_START:
		tag = ev->type == FYET_SEQUENCE_START ? ev->sequence_start.tag
						      : ev->mapping_start.tag;
		n = node_new(ev->type == FYET_SEQUENCE_START ? PBN_SEQ : PBN_MAP, ev);
		if (!n)
			return -ENOMEM;
		break;
	case FYET_SEQUENCE_END:
	case FYET_MAPPING_END:
		if (b->depth == 0)
			return -RY_E_INVALID;
		n = b->stack[--b->depth];
		b->stack[b->depth] = NULL;
		return attach(b, n);
	default:
		return 0;
	}

	if (tag) {
		pb_diag_node(b->d, b->name, n, "YAML tags are not supported");
		pb_node_free(n);
		return -RY_E_INVALID;
	}
	if (n->kind == PBN_SCALAR)
		return attach(b, n);
	if (b->depth == PB_MAX_DEPTH) {
		pb_diag_node(b->d, b->name, n, "nesting deeper than %d levels", PB_MAX_DEPTH);
		pb_node_free(n);
		return -RY_E_INVALID;
	}
	b->pending_key[b->depth] = NULL;
	b->stack[b->depth++] = n;
	return 0;
}

/* Bytes of the UTF-8 sequence that c starts, 0 when c cannot start one. */
static size_t utf8_seq_len(unsigned char c)
{
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return 2;
	if (c >= 0xe0 && c <= 0xef)
		return 3;
	return c >= 0xf0 && c <= 0xf4 ? 4 : 0;
}

/* The first byte of text that is not part of a valid UTF-8 sequence (overlong forms, surrogates
 * and code points past U+10FFFF are invalid), with its 1-based line and column (columns count
 * characters, as libfyaml's do). False when the whole text is valid. */
static bool utf8_first_invalid(const char *text, size_t len, int *ret_line, int *ret_col,
			       unsigned char *ret_byte)
{
	const unsigned char *s = (const unsigned char *)text;
	int line = 1, col = 1;
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		size_t n = utf8_seq_len(c);
		bool ok = n > 0 && n <= len - i;

		for (size_t k = 1; ok && k < n; k++)
			ok = (s[i + k] & 0xc0) == 0x80;
		/* The second byte's range rules out overlong forms, surrogates, > U+10FFFF. */
		if (ok && n >= 3) {
			unsigned char c1 = s[i + 1];

			ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 > 0x9f) &&
			     !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 > 0x8f);
		}
		if (!ok) {
			*ret_line = line;
			*ret_col = col;
			*ret_byte = c;
			return true;
		}
		if (c == '\n' || (c == '\r' && (i + 1 == len || s[i + 1] != '\n'))) {
			line++;
			col = 1;
		} else if (c != '\r') {
			col++;
		}
		i += n;
	}
	return false;
}

/* Column (1-based) of a tab in the indentation of the line [p, end), 0 when it has none. */
static int indent_tab(const char *p, const char *end)
{
	for (const char *q = p; q < end && (*q == ' ' || *q == '\t'); q++)
		if (*q == '\t')
			return (int)(q - p) + 1;
	return 0;
}

/* libfyaml places a tab in indentation just after the tab, or at the token it was scanning:
 * point at the tab itself, on the reported line or the first line after it with a tab in its
 * indentation (failing that, the last one before). One pass over the text. */
static void tab_position(const char *text, size_t len, int *ret_line, int *ret_col)
{
	const char *p = text, *end = text + len;
	int line = 1, before_line = 0, before_col = 0;

	while (p) {
		const char *next, *eol = line_end(p, end, &next);
		int c = indent_tab(p, eol);

		if (c > 0 && line >= *ret_line) {
			*ret_line = line;
			*ret_col = c;
			return;
		}
		if (c > 0) {
			before_line = line;
			before_col = c;
		}
		p = next;
		line++;
	}
	if (before_line) {
		*ret_line = before_line;
		*ret_col = before_col;
	}
}

/* libfyaml ends a text without a final newline with one: an error at its end is on a line
 * that is not there. Put such a position at the end of the last line. */
static void clamp_to_text(const char *text, size_t len, int *line, int *col)
{
	const char *end = text + len, *last = text, *next;
	int lines = 1, chars = 1;

	for (const char *p = text;; p = next) {
		(void)line_end(p, end, &next);
		if (!next)
			break;
		lines++;
		last = next;
	}
	if (*line <= lines)
		return;
	for (const char *p = last; p < end; p++)
		chars += ((unsigned char)*p & 0xc0) != 0x80;
	*line = lines;
	*col = chars;
}

static void report_syntax(struct builder *b, struct fy_diag *diag, const char *text, size_t len)
{
	void *it = NULL;
	struct fy_diag_error *e;
	bool any = false;

	while (diag && (e = fy_diag_errors_iterate(diag, &it)) != NULL) {
		/* Collected errors are 1-based already (marks and events are 0-based). */
		int line = e->line > 0 ? e->line : 1, col = e->column > 0 ? e->column : 1;
		const char *msg = e->msg ? e->msg : "invalid YAML";

		clamp_to_text(text, len, &line, &col);

		if (strstr(msg, "tab")) {
			tab_position(text, len, &line, &col);
			msg = "a tab character may not be used as indentation (indent with spaces)";
		}
		pb_diags_add(b->d, b->name, line, col, "YAML syntax error: %s", msg);
		any = true;
		break; /* later errors are consequences of the first */
	}
	if (!any)
		pb_diags_add(b->d, b->name, 1, 1, "YAML syntax error");
}

int pb_yaml_build(const char *text, size_t len, const char *name, struct pb_node **ret_root,
		  struct pb_diags *d)
{
	struct fy_diag_cfg dcfg;
	struct fy_diag *diag = NULL;
	struct fy_parser *fyp = NULL;
	struct fy_parse_cfg cfg;
	struct fy_event *ev;
	struct builder b = {.name = name, .text = text, .len = len, .d = d};
	unsigned char bad;
	int r = 0, line, col;

	if (utf8_first_invalid(text, len, &line, &col, &bad)) {
		pb_diags_add(d, name, line, col,
			     "invalid UTF-8 (byte 0x%02X): a playbook must be UTF-8 text", bad);
		return -RY_E_INVALID;
	}
	fy_diag_cfg_default(&dcfg);
	dcfg.fp = NULL;
	dcfg.colorize = false;
	diag = fy_diag_create(&dcfg);
	if (!diag)
		return -ENOMEM;
	fy_diag_set_collect_errors(diag, true);
	memset(&cfg, 0, sizeof(cfg));
	cfg.flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG | FYPCF_DEFAULT_VERSION_1_2;
	cfg.diag = diag;
	fyp = fy_parser_create(&cfg);
	if (!fyp) {
		r = -ENOMEM;
		goto out;
	}
	if (fy_parser_set_string(fyp, text, len) != 0) {
		r = -ENOMEM;
		goto out;
	}
	while ((ev = fy_parser_parse(fyp)) != NULL) {
		if (r == 0)
			r = on_event(&b, ev);
		fy_parser_event_free(fyp, ev);
		if (r < 0)
			break;
	}
	if (r == 0 && fy_parser_get_stream_error(fyp)) {
		report_syntax(&b, diag, text, len);
		r = -RY_E_INVALID;
	}
	if (r == 0 && !b.root) {
		pb_diags_add(d, name, 1, 1, "empty playbook");
		r = -RY_E_INVALID;
	}
	if (r == 0)
		*ret_root = b.root;
	else
		pb_node_free(b.root);
	for (int i = 0; i < b.depth; i++) {
		pb_node_free(b.pending_key[i]);
		pb_node_free(b.stack[i]);
	}
out:
	fy_parser_destroy(fyp);
	fy_diag_destroy(diag);
	return r;
}
