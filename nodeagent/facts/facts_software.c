/* Software facts: the versions of the communication libraries installed on the node (NCCL, UCX,
 * Open MPI), from the files their packages install: the NCCL library's file name, pkg-config
 * files and version #defines in headers. Nothing is executed and package databases are not
 * read (docs/facts.md says why). Not installed: no member and no warning. */
#include "nodeagent/facts/facts_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A version is at most this long; numeric components (file names, #defines) have at most
 * SW_MAX_DIGITS digits, so they fit an unsigned long and three fit the version. */
#define SW_MAX_VERSION 32
#define SW_MAX_DIGITS  9

/* Where one library's version may be found; each list is NULL-terminated, NULL when unused.
 * Sources are tried in this order: library file names, pkg-config files, headers; the first
 * that yields a valid version wins, a malformed one is a warning and the next is tried. */
struct sw_library {
	const char *key;	/* member of "software" */
	const char *lib_prefix; /* "libnccl.so.": real library named <prefix>MAJOR.MINOR.PATCH */
	const char *const *lib_dirs; /* directories searched for it, first with one wins */
	const char *const *pc_files; /* pkg-config files: their Version */
	const char *const *headers;  /* headers with #define MAJOR/MINOR[/PATCH] */
	const char *def_major, *def_minor, *def_patch; /* def_patch NULL: major.minor only */
	/* the header path is shared with other implementations (mpi.h of MPICH, Intel MPI): one
	 * without def_major belongs to them and is skipped silently */
	bool shared_header;
};

static const char *const sw_nccl_dirs[] = {
	"usr/lib/x86_64-linux-gnu", "usr/lib64", "usr/lib", "usr/local/lib",
	"usr/local/nccl/lib",	    NULL,
};
static const char *const sw_nccl_headers[] = {"usr/include/nccl.h", NULL};

static const char *const sw_ucx_pc[] = {
	"usr/lib/pkgconfig/ucx.pc",
	"usr/lib/x86_64-linux-gnu/pkgconfig/ucx.pc",
	"usr/lib64/pkgconfig/ucx.pc",
	"opt/mellanox/hpcx/ucx/lib/pkgconfig/ucx.pc",
	NULL,
};
static const char *const sw_ucx_headers[] = {"usr/include/ucp/api/ucp_version.h", NULL};

static const char *const sw_ompi_pc[] = {
	"usr/lib/pkgconfig/ompi.pc",
	"usr/lib/pkgconfig/ompi-c.pc",
	"usr/lib/x86_64-linux-gnu/pkgconfig/ompi.pc",
	"usr/lib/x86_64-linux-gnu/pkgconfig/ompi-c.pc",
	"usr/lib64/pkgconfig/ompi.pc",
	"usr/lib64/pkgconfig/ompi-c.pc",
	"usr/lib/x86_64-linux-gnu/openmpi/lib/pkgconfig/ompi.pc",
	"usr/lib/x86_64-linux-gnu/openmpi/lib/pkgconfig/ompi-c.pc",
	"opt/mellanox/hpcx/ompi/lib/pkgconfig/ompi.pc",
	"opt/mellanox/hpcx/ompi/lib/pkgconfig/ompi-c.pc",
	NULL,
};
static const char *const sw_ompi_headers[] = {
	"usr/include/mpi.h",
	"usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h",
	NULL,
};

/* Adding a library is an entry here; order is the order of the members. */
static const struct sw_library sw_libraries[] = {
	{
		.key = "nccl",
		.lib_prefix = "libnccl.so.",
		.lib_dirs = sw_nccl_dirs,
		.headers = sw_nccl_headers,
		.def_major = "NCCL_MAJOR",
		.def_minor = "NCCL_MINOR",
		.def_patch = "NCCL_PATCH",
	},
	{
		.key = "ucx",
		.pc_files = sw_ucx_pc,
		.headers = sw_ucx_headers,
		.def_major = "UCP_API_MAJOR",
		.def_minor = "UCP_API_MINOR",
	},
	{
		.key = "openmpi",
		.pc_files = sw_ompi_pc,
		.headers = sw_ompi_headers,
		.def_major = "OMPI_MAJOR_VERSION",
		.def_minor = "OMPI_MINOR_VERSION",
		.def_patch = "OMPI_RELEASE_VERSION",
		.shared_header = true,
	},
};

static bool sw_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* 1..SW_MAX_VERSION characters starting with a digit, then digits and dots; pkg-config versions
 * may also carry letters, '-', '+' and '~' ("5.0.0rc12", "1.17.0-1"). */
static bool sw_version_ok(const char *s, bool pc)
{
	size_t n = strlen(s);

	if (n == 0 || n > SW_MAX_VERSION || !sw_is_digit(s[0]))
		return false;
	for (const char *p = s; *p; p++) {
		bool letter = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z');

		if (sw_is_digit(*p) || *p == '.')
			continue;
		if (!pc || !(letter || *p == '-' || *p == '+' || *p == '~'))
			return false;
	}
	return true;
}

static char *sw_strdup(struct facts_ctx *ctx, const char *s)
{
	char *d = strdup(s);

	if (!d)
		ctx->oom = true;
	return d;
}

/* "2.23.4" -> {2, 23, 4}: exactly three components of 1..SW_MAX_DIGITS digits. */
static bool sw_parse_triple(const char *s, unsigned long v[3])
{
	for (int i = 0; i < 3; i++) {
		size_t n = strspn(s, "0123456789");

		if (n == 0 || n > SW_MAX_DIGITS)
			return false;
		v[i] = strtoul(s, NULL, 10);
		s += n;
		if (i < 2 && *s++ != '.')
			return false;
	}
	return *s == '\0';
}

static int sw_triple_cmp(const unsigned long a[3], const unsigned long b[3])
{
	for (int i = 0; i < 3; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

/* The highest <prefix>MAJOR.MINOR.PATCH in dir (compared numerically), or NULL. Names whose
 * tail after the prefix is not digits and dots with at least two dots are not the real library
 * (the soname link libnccl.so.2, libnccl.so.2.23.4.dpkg-new) and are skipped; such a tail that
 * is not a valid MAJOR.MINOR.PATCH (2..4, 2.23.4.1, a 10-digit component) is malformed. */
static char *sw_from_lib_dir(struct facts_ctx *ctx, const struct sw_library *lib, const char *dir)
{
	size_t plen = strlen(lib->lib_prefix);
	struct facts_names names = {0};
	unsigned long best[3], v[3];
	const char *found = NULL;
	char *ret = NULL;

	if (facts_list_dir_prefixf(ctx, FACTS_OPTIONAL, lib->lib_prefix, &names, "%s", dir) < 0)
		return NULL;
	for (size_t i = 0; i < names.n; i++) {
		const char *ver = names.v[i] + plen, *dot = strchr(ver, '.');

		if (strspn(ver, "0123456789.") != strlen(ver) || !dot || !strchr(dot + 1, '.'))
			continue;
		if (strlen(ver) > SW_MAX_VERSION || !sw_parse_triple(ver, v)) {
			facts_warn(ctx, "/%s/%s: malformed version", dir, names.v[i]);
			continue;
		}
		if (!found || sw_triple_cmp(v, best) > 0) {
			memcpy(best, v, sizeof(best));
			found = ver;
		}
	}
	if (found)
		ret = sw_strdup(ctx, found);
	facts_names_done(&names);
	return ret;
}

/* The Version of a pkg-config file, or NULL (absent, unreadable or malformed: warned). */
static char *sw_from_pc(struct facts_ctx *ctx, const char *path)
{
	char *buf, *line, *save = NULL, *ret = NULL;
	const char *ver = NULL;

	if (facts_read_filef(ctx, FACTS_OPTIONAL, &buf, "%s", path) < 0)
		return NULL;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *end;

		line += strspn(line, " \t");
		if (strncmp(line, "Version:", 8) != 0)
			continue;
		line += 8;
		line += strspn(line, " \t");
		end = line + strlen(line);
		while (end > line && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
			end--;
		*end = '\0';
		ver = line;
		break;
	}
	if (!ver)
		facts_warn(ctx, "/%s: malformed: no Version", path);
	else if (!sw_version_ok(ver, true))
		facts_warn(ctx, "/%s: malformed version", path);
	else
		ret = sw_strdup(ctx, ver);
	free(buf);
	return ret;
}

/* Value of the first `#define <name> <digits>` in text: 1 and *ret_value; 0 when there is no
 * such #define; -EINVAL when its value is not 1..SW_MAX_DIGITS decimal digits (a trailing
 * comment is allowed). */
static int sw_define(const char *text, const char *name, unsigned long *ret_value)
{
	size_t len = strlen(name);

	for (const char *p = text, *next; p; p = next) {
		const char *q = p + strspn(p, " \t");
		unsigned long value;
		size_t n;

		next = strchr(p, '\n');
		if (next)
			next++;
		if (*q++ != '#')
			continue;
		q += strspn(q, " \t");
		if (strncmp(q, "define", 6) != 0 || (q[6] != ' ' && q[6] != '\t'))
			continue;
		q += 6;
		q += strspn(q, " \t");
		if (strncmp(q, name, len) != 0 || (q[len] != ' ' && q[len] != '\t'))
			continue;
		q += len;
		q += strspn(q, " \t");
		n = strspn(q, "0123456789");
		if (n == 0 || n > SW_MAX_DIGITS)
			return -EINVAL;
		value = strtoul(q, NULL, 10);
		q += n;
		q += strspn(q, " \t\r");
		if (*q != '\0' && *q != '\n' && strncmp(q, "/*", 2) != 0 &&
		    strncmp(q, "//", 2) != 0)
			return -EINVAL;
		*ret_value = value;
		return 1;
	}
	return 0;
}

/* MAJOR.MINOR[.PATCH] from a header's #defines, or NULL (absent, unreadable, malformed: warned;
 * a shared header without the major #define is another implementation's: silent). */
static char *sw_from_header(struct facts_ctx *ctx, const struct sw_library *lib, const char *path)
{
	const char *defs[3] = {lib->def_major, lib->def_minor, lib->def_patch};
	unsigned long v[3] = {0};
	char ver[SW_MAX_VERSION + 1];
	char *buf, *ret = NULL;
	int n = lib->def_patch ? 3 : 2;

	if (facts_read_filef(ctx, FACTS_OPTIONAL, &buf, "%s", path) < 0)
		return NULL;
	for (int i = 0; i < n; i++) {
		int r = sw_define(buf, defs[i], &v[i]);

		if (r == 0 && i == 0 && lib->shared_header)
			goto out;
		if (r <= 0) {
			facts_warn(ctx, r == 0 ? "/%s: malformed: no %s" : "/%s: malformed %s",
				   path, defs[i]);
			goto out;
		}
	}
	if (n == 3)
		snprintf(ver, sizeof(ver), "%lu.%lu.%lu", v[0], v[1], v[2]);
	else
		snprintf(ver, sizeof(ver), "%lu.%lu", v[0], v[1]);
	ret = sw_strdup(ctx, ver);
out:
	free(buf);
	return ret;
}

static char *sw_find(struct facts_ctx *ctx, const struct sw_library *lib)
{
	char *ver = NULL;

	for (size_t i = 0; lib->lib_dirs && lib->lib_dirs[i] && !ver && !ctx->oom; i++)
		ver = sw_from_lib_dir(ctx, lib, lib->lib_dirs[i]);
	for (size_t i = 0; lib->pc_files && lib->pc_files[i] && !ver && !ctx->oom; i++)
		ver = sw_from_pc(ctx, lib->pc_files[i]);
	for (size_t i = 0; lib->headers && lib->headers[i] && !ver && !ctx->oom; i++)
		ver = sw_from_header(ctx, lib, lib->headers[i]);
	return ver;
}

int facts_collect_software(struct facts_ctx *ctx, json_t *facts)
{
	json_t *sw;

	sw = json_object();
	if (!sw)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(sw_libraries) / sizeof(sw_libraries[0]) && !ctx->oom; i++) {
		char *ver = sw_find(ctx, &sw_libraries[i]);

		if (ver)
			facts_set_str(ctx, sw, sw_libraries[i].key, ver);
		free(ver);
	}
	if (json_object_size(sw) > 0)
		facts_set_new(ctx, facts, "software", json_incref(sw));
	json_decref(sw);
	return ctx->oom ? -ENOMEM : 0;
}
