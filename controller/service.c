/* The services' error: set, print, release. */
#include "controller/service.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <string.h>

void ctl_error_init(struct ctl_error *e)
{
	memset(e, 0, sizeof(*e));
	pb_diags_init(&e->diags);
}

void ctl_error_done(struct ctl_error *e)
{
	if (!e)
		return;
	pb_diags_done(&e->diags);
	e->code = NULL;
}

int ctl_error_set(struct ctl_error *e, int r, const char *code, const char *field, const char *fmt,
		  ...)
{
	va_list ap;

	e->code = code;
	snprintf(e->field, sizeof(e->field), "%s", field ? field : "");
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	return r;
}

bool ctl_store_transient(int r)
{
	return r == -RY_E_DB || r == -RY_E_BUSY || r == -RY_E_DISK_FULL || r == -EROFS || r == -EIO;
}

int ctl_error_store(struct ctl_error *e, int r, const char *what)
{
	bool again = r == -RY_E_BUSY || r == -RY_E_DISK_FULL || r == -EROFS || r == -EIO;

	return ctl_error_set(e, r, again ? CTL_ERR_UNAVAILABLE : CTL_ERR_INTERNAL, NULL, "%s: %s",
			     what, ry_strerror(r));
}

void ctl_error_print(const struct ctl_error *e, const char *prog, FILE *f)
{
	for (size_t i = 0; i < e->diags.count; i++)
		util_fprintf_safe(f, "%s:%d:%d: %s\n", e->diags.items[i].file,
				  e->diags.items[i].line, e->diags.items[i].col,
				  e->diags.items[i].message);
	if (e->diags.dropped)
		fprintf(f, "(%zu more errors)\n", e->diags.dropped);
	if (!e->diags.count)
		util_fprintf_safe(f, "%s: %s\n", prog, e->message);
}

bool ctl_valid_cluster_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 64 || !isalnum((unsigned char)name[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("._-", name[i]))
			return false;
	return true;
}

int ctl_playbook_for_cluster(const char *text, size_t len, const char *file, const char *cluster,
			     struct playbook **ret, struct ctl_error *err)
{
	struct playbook *pb = NULL;
	int r = playbook_parse(text, len, file, &pb, &err->diags);

	if (r < 0)
		return ctl_error_set(err, r, CTL_ERR_PLAYBOOK, "playbook", "%s: invalid playbook",
				     file);
	if (playbook_target_cluster(pb) && strcmp(playbook_target_cluster(pb), cluster) != 0) {
		r = ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, "cluster",
				  "playbook %s targets cluster %s, not %s", file,
				  playbook_target_cluster(pb), cluster);
		playbook_free(pb);
		return r;
	}
	*ret = pb;
	return 0;
}

/* ---- node selectors ---------------------------------------------------------------------- */

#define SELECTOR_ITEMS_MAX 64
#define SELECTOR_ITEM_MAX  255

int ctl_node_selector_check(const char *sel, const char *field, struct ctl_error *err)
{
	size_t items = 0;

	if (!*sel)
		return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, field,
				     "the node selector is empty");
	for (const char *p = sel; *p;) {
		size_t n = strcspn(p, ",");
		const char *q = p + (*p == '!');
		size_t qn = n - (size_t)(q - p);

		if (qn == 0 || qn > SELECTOR_ITEM_MAX || ++items > SELECTOR_ITEMS_MAX ||
		    strspn(q, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-*?["
			      "]") < qn)
			return ctl_error_set(err, -RY_E_INVALID, CTL_ERR_INVALID, field,
					     "bad node selector item '%.*s' (host names or ids, "
					     "globs * ? [..], ! to exclude, comma-separated)",
					     (int)(n > 64 ? 64 : n), p);
		p += n + (p[n] == ',');
	}
	return 0;
}

static bool item_matches(const char *p, size_t n, const char *hostname, const char *id)
{
	char pat[SELECTOR_ITEM_MAX + 1];

	snprintf(pat, sizeof(pat), "%.*s", (int)n, p);
	return fnmatch(pat, hostname, 0) == 0 || fnmatch(pat, id, 0) == 0;
}

bool ctl_node_selected(const char *sel, const char *hostname, const char *id)
{
	bool any_include = false, in = false;

	if (!sel)
		return true;
	for (const char *p = sel; *p;) {
		size_t n = strcspn(p, ",");

		if (*p == '!') {
			if (item_matches(p + 1, n - 1, hostname, id))
				return false;
		} else {
			any_include = true;
			in |= item_matches(p, n, hostname, id);
		}
		p += n + (p[n] == ',');
	}
	return in || !any_include;
}

bool ctl_valid_object_id(const char *id, const char *prefix)
{
	size_t p = strlen(prefix), n;

	if (!id || strncmp(id, prefix, p) != 0)
		return false;
	n = strlen(id + p);
	return n >= 1 && n <= 16 && strspn(id + p, "0123456789abcdef") == n;
}
