/* Path safety for the apply engine: resolve a node path under the sysroot component by
 * component, following symlinks as a chroot would and refusing anything that leaves it. */
#include "nodeagent/apply/apply.h"

#include "common/util/error.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LINKS 40

static bool has_dotdot(const char *p)
{
	while (*p) {
		const char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n == 2 && p[0] == '.' && p[1] == '.')
			return true;
		p += n;
		while (*p == '/')
			p++;
	}
	return false;
}

int apply_path_resolve(const char *sysroot, const char *path, char **ret_path)
{
	char root[PATH_MAX], rel[PATH_MAX], cand[2 * PATH_MAX], target[PATH_MAX];
	char *rest = NULL, *out;
	size_t rootlen, rellen = 0, pos = 0;
	bool missing = false;
	int links = 0, r;

	if (!path || !path[0])
		return -EINVAL;
	if (has_dotdot(path))
		return -RY_E_UNSAFE_PATH;
	if (!sysroot || !sysroot[0])
		sysroot = "/";
	rootlen = strlen(sysroot);
	while (rootlen > 0 && sysroot[rootlen - 1] == '/')
		rootlen--;
	if (rootlen >= sizeof(root))
		return -ENAMETOOLONG;
	memcpy(root, sysroot, rootlen);
	root[rootlen] = '\0';
	rel[0] = '\0';
	rest = strdup(path);
	if (!rest)
		return -ENOMEM;

	while (rest[pos]) {
		const char *c = rest + pos;
		size_t n = strcspn(c, "/");
		struct stat st;

		pos += n;
		while (rest[pos] == '/')
			pos++;
		if (n == 0 || (n == 1 && c[0] == '.'))
			continue;
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			/* Only from a link target (the input was checked): climb, never past root.
			 */
			char *slash;

			if (rellen == 0) {
				r = -RY_E_UNSAFE_PATH;
				goto out;
			}
			slash = strrchr(rel, '/');
			rellen = (size_t)(slash - rel);
			rel[rellen] = '\0';
			missing = false;
			continue;
		}
		if (rellen + 1 + n >= sizeof(rel)) {
			r = -ENAMETOOLONG;
			goto out;
		}
		if (!missing) {
			if (snprintf(cand, sizeof(cand), "%s%s/%.*s", root, rel, (int)n, c) >=
			    (int)sizeof(cand)) {
				r = -ENAMETOOLONG;
				goto out;
			}
			if (lstat(cand, &st) < 0) {
				if (errno != ENOENT) {
					r = -errno;
					goto out;
				}
				missing = true;
			} else if (S_ISLNK(st.st_mode)) {
				ssize_t tl;
				char *nrest;

				if (++links > MAX_LINKS) {
					r = -ELOOP;
					goto out;
				}
				tl = readlink(cand, target, sizeof(target) - 1);
				if (tl < 0) {
					r = -errno;
					goto out;
				}
				target[tl] = '\0';
				if (target[0] == '/') { /* absolute: re-anchored at the sysroot */
					rellen = 0;
					rel[0] = '\0';
				}
				if (asprintf(&nrest, "%s/%s", target, rest + pos) < 0) {
					r = -ENOMEM;
					goto out;
				}
				free(rest);
				rest = nrest;
				pos = 0;
				continue;
			}
		}
		rel[rellen++] = '/';
		memcpy(rel + rellen, c, n);
		rellen += n;
		rel[rellen] = '\0';
	}
	if (asprintf(&out, "%s%s", root, rellen ? rel : (rootlen ? "" : "/")) < 0) {
		r = -ENOMEM;
		goto out;
	}
	*ret_path = out;
	r = 0;
out:
	free(rest);
	return r;
}
