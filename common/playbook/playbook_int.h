/* Internals shared by the playbook sources: the YAML tree with source positions (built from
 * libfyaml events), the parsed playbook, the renderer and the plan checks. */
#ifndef RAILYARD_PLAYBOOK_INT_H
#define RAILYARD_PLAYBOOK_INT_H

#include "common/playbook/playbook.h"

/* Maximum nesting of YAML collections. */
#define PB_MAX_DEPTH 64

enum pb_node_kind { PBN_SCALAR, PBN_SEQ, PBN_MAP };

/* A YAML node with its 1-based position. Scalars: text (NUL-terminated, len bytes) and whether
 * it was plain (unquoted, so typed by the core schema). Sequences: n items. Mappings: n
 * keys/values (keys are scalars; duplicates are rejected while building). */
struct pb_node {
	enum pb_node_kind kind;
	int line;
	int col;
	bool plain;
	char *text;
	size_t len;
	size_t n;
	size_t cap;
	struct pb_node **items; /* sequence items, or mapping values */
	struct pb_node **keys;	/* mapping keys */
};

/* Build the tree of one YAML document; syntax errors go to d with name. NULL root on error. */
int pb_yaml_build(const char *text, size_t len, const char *name, struct pb_node **ret_root,
		  struct pb_diags *d);
void pb_node_free(struct pb_node *n);
/* The value of a single-quoted scalar whose content (between the quotes) is raw[0, len), into
 * out (at least len + 1 bytes, NUL-terminated): '' is one quote, and lines fold as in every
 * flow scalar (white space around a line break goes; one break becomes a space, a break followed
 * by k empty lines k newlines). Returns the length. The builder uses it where libfyaml 0.7 leaks
 * (many ''); tests compare it with libfyaml elsewhere. */
size_t pb_yaml_single_quoted(const char *raw, size_t len, char *out);
/* Mapping value by key, NULL if absent. */
struct pb_node *pb_node_get(const struct pb_node *map, const char *key);

struct pb_step {
	struct pb_node *node; /* the step mapping */
	const char *name;     /* borrowed from the tree */
	const struct pb_step_schema *schema;
};

struct playbook {
	char *file;
	struct pb_node *root;
	const char *name, *version, *description, *cluster; /* borrowed from the tree */
	char sha256[65];
	struct pb_rollout rollout;
	json_t *selector;
	json_t *validation;
	json_t *health;	      /* the health section's JSON, defaults when absent */
	bool has_health;      /* the playbook has a health section */
	struct pb_node *vars; /* mapping or NULL */
	struct pb_step *steps;
	size_t nsteps;
};

/* Plain scalar typing (core schema). */
bool pb_scalar_is_null(const struct pb_node *n);
int pb_scalar_bool(const struct pb_node *n, bool *ret);
int pb_scalar_int(const struct pb_node *n, long long *ret);

/* Validate the params of one step type (object) / one condition; on error write a reason that
 * starts with the offending key ("settings: expected an object") and return -RY_E_INVALID. Set
 * *ret_key (borrowed, may be NULL) to the failing key when known. */
int pb_params_check(const struct pb_step_schema *s, const json_t *params, bool with_defaults,
		    const char **ret_key, char *buf, size_t len);
int pb_cond_check(const json_t *cond, bool plan, const char **ret_key, char *buf, size_t len);
/* The per-type rules of a `repo` step (playbook_repo.c), same contract as pb_step_schema.check. */
int pb_check_repo(const json_t *params, bool plan, const char **ret_key, char *buf, size_t len);
/* Whether s is a Debian version (deb-version(7) characters, a digit first). */
bool pb_debian_version_ok(const char *s);
/* Check a fact path's syntax; 0 or -EINVAL. pb_path_check(p, true) also accepts a path that
 * starts with an index ("[0].name"), as used after vars.NAME. Names are PB_PATH_NAME_MAX
 * characters at most (playbook.h). */
int pb_fact_path_check(const char *path);
int pb_path_check(const char *path, bool rel);
/* playbook_fact_lookup() for a path already checked, relative paths allowed. */
int pb_lookup(const json_t *root, const char *path, json_t **ret);

/* Facts for lookups (playbook_facts.c): a parsed document (json), or an indexed text. */
struct pb_tok;
struct playbook_facts {
	const json_t *json; /* borrowed; when set, the rest is unused */
	const char *text;   /* borrowed: the indexed text */
	struct pb_tok *tok;
	size_t ntok;
};
/* A path already checked, over facts of either kind (NULL: -ENOENT): the value at path (a new
 * reference), or with "[*]" a new array of the matches, and (paths != NULL) their concrete
 * paths appended to paths. pb_lookup() is this over a parsed value. */
int pb_facts_walk(const struct playbook_facts *f, const char *path, json_t *paths, json_t **ret);
/* playbook_cond_eval() and playbook_render() over facts of either kind. */
int pb_cond_eval(const json_t *cond, const struct playbook_facts *f, bool *ret_ok, char *msgbuf,
		 size_t len);

/* Renderer. facts NULL = dry run (syntax, vars, cycles; fact references yield placeholders). */
struct pb_render;
int pb_render_new(const struct playbook *pb, const struct playbook_facts *facts, struct pb_diags *d,
		  struct pb_render **ret);
void pb_render_free(struct pb_render *r);
/* Render every var (reports undefined references and cycles once each). */
int pb_render_vars(struct pb_render *r);
/* Render a scalar string node. Whole-string references keep their type; *ret_unknown is set
 * when the result stems from a fact in a dry run (type unknown). 0 or -RY_E_INVALID (diag
 * added), -ENOMEM. */
int pb_render_string(struct pb_render *r, const struct pb_node *n, json_t **ret, bool *ret_unknown);
/* Convert a node of any shape into JSON, rendering every string (ANY typing of plain scalars). */
int pb_render_any(struct pb_render *r, const struct pb_node *n, json_t **ret);

/* Record a diagnostic at node n (NULL = 1:1) of pb's file. */
void pb_diag_node(struct pb_diags *d, const char *file, const struct pb_node *n, const char *fmt,
		  ...) __attribute__((format(printf, 4, 5)));

/* Whether r is a dry run (no facts). */
bool pb_render_is_dry(const struct pb_render *r);
/* Convert a step node into its plan object {name, type, continue_on_error, when?, params},
 * rendering with r; every error goes to d. */
int pb_step_build(struct pb_render *r, const struct playbook *pb, const struct pb_step *st,
		  json_t **ret, struct pb_diags *d);
/* A condition node into its JSON form (value rendered with r; fact path checked). */
int pb_cond_convert(struct pb_render *r, const char *file, const struct pb_node *n, json_t **ret,
		    struct pb_diags *d);

/* The validation section into its normalized spec (docs/playbooks.md, "validation"); returns
 * the number of errors added to d (0: *ret set). */
int pb_validation_parse(const char *file, const struct pb_node *n, json_t **ret,
			struct pb_diags *d);

/* The health section (NULL: absent) into its JSON (playbook_health_json()); returns the number
 * of errors added to d (0: *ret set). */
int pb_health_parse(const char *file, const struct pb_node *n, json_t **ret, struct pb_diags *d);

#endif
