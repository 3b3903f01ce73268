/* File helpers: sysroot path joins, bounded reads, atomic writes, mkdir -p. */
#include "common/util/fs.h"
#include "common/util/error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define TEMP_MARK ".ry-tmp"

char *fs_path_join(const char *sysroot, const char *path)
{
	char *out;
	size_t rl;

	while (path[0] == '/')
		path++;
	if (!sysroot || !sysroot[0])
		sysroot = "/";
	rl = strlen(sysroot);
	while (rl > 1 && sysroot[rl - 1] == '/')
		rl--;
	if (rl == 1 && sysroot[0] == '/')
		rl = 0;
	if (asprintf(&out, "%.*s/%s", (int)rl, sysroot, path) < 0)
		return NULL;
	return out;
}

int fs_read_file(const char *path, size_t max_size, char **ret_buf, size_t *ret_len)
{
	size_t len = 0, cap = 4096;
	char *buf = NULL;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap + 1);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb;

			if (cap >= max_size) {
				r = -RY_E_TOO_BIG;
				goto out;
			}
			cap = cap * 2 > max_size ? max_size : cap * 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				r = -ENOMEM;
				goto out;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max_size) {
			r = -RY_E_TOO_BIG;
			goto out;
		}
	}
	buf[len] = '\0';
	*ret_buf = buf;
	if (ret_len)
		*ret_len = len;
	buf = NULL;
	r = 0;
out:
	free(buf);
	close(fd);
	return r;
}

int fs_read_attr(const char *path, char **ret_buf)
{
	char *buf;
	size_t len;
	int r;

	r = fs_read_file(path, 64 * 1024, &buf, &len);
	if (r < 0)
		return r;
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ' || buf[len - 1] == '\t' ||
			   buf[len - 1] == '\r'))
		buf[--len] = '\0';
	*ret_buf = buf;
	return 0;
}

/* Directory and base name of path, as new strings. */
static int split_path(const char *path, char **ret_dir, char **ret_base)
{
	char *a = strdup(path), *b = strdup(path), *d = NULL, *n = NULL;

	if (a && b) {
		d = strdup(dirname(a));
		n = strdup(basename(b));
	}
	free(a);
	free(b);
	if (!d || !n) {
		free(d);
		free(n);
		return -ENOMEM;
	}
	*ret_dir = d;
	*ret_base = n;
	return 0;
}

int fs_remove_stale_temps(const char *path)
{
	char *dir = NULL, *base = NULL, *prefix = NULL;
	struct dirent *e;
	size_t plen;
	DIR *d;
	int n = 0;

	if (split_path(path, &dir, &base) < 0 || asprintf(&prefix, ".%s" TEMP_MARK, base) < 0) {
		prefix = NULL;
		goto out;
	}
	plen = strlen(prefix);
	d = opendir(dir);
	if (!d)
		goto out;
	while ((e = readdir(d))) {
		/* mkostemp() appends exactly six characters. */
		if (strncmp(e->d_name, prefix, plen) == 0 && strlen(e->d_name) == plen + 6 &&
		    unlinkat(dirfd(d), e->d_name, 0) == 0)
			n++;
	}
	closedir(d);
out:
	free(dir);
	free(base);
	free(prefix);
	return n;
}

int fs_sync_parent(const char *path)
{
	char *dir = NULL, *base = NULL;
	int fd, r = 0;

	r = split_path(path, &dir, &base);
	if (r < 0)
		return r;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		r = -errno;
	if (fd >= 0)
		close(fd);
	free(dir);
	free(base);
	return r;
}

int fs_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	const char *p = data;
	char *tmp = NULL, *dir = NULL, *base = NULL;
	int fd = -1, r;

	r = split_path(path, &dir, &base);
	if (r < 0)
		return r;
	if (asprintf(&tmp, "%s/.%s" TEMP_MARK "XXXXXX", dir, base) < 0) {
		free(dir);
		free(base);
		return -ENOMEM;
	}
	free(dir);
	free(base);
	(void)fs_remove_stale_temps(path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		free(tmp);
		return r;
	}
	if (fchmod(fd, mode) < 0) {
		r = -errno;
		goto fail;
	}
	r = fs_write_all(fd, p, len);
	if (r < 0)
		goto fail;
	if (fsync(fd) < 0 || close(fd) < 0) {
		fd = -1;
		r = -errno;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		r = -errno;
		goto fail;
	}
	free(tmp);
	/* The rename itself is durable only once the directory is. */
	return fs_sync_parent(path);
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(tmp);
	return r;
}

int fs_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int fs_mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;

			*p = '\0';
			if (mkdir(buf, mode) < 0 && errno != EEXIST)
				return -errno;
			*p = c;
			if (c == '\0')
				break;
		}
	}
	struct stat st;
	if (stat(path, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int fs_check_writable_dir(const char *dir)
{
	struct stat st;

	if (stat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (access(dir, W_OK | X_OK) < 0)
		return -errno;
	return 0;
}

int fs_probe_write(const char *path, size_t len)
{
	static const char zeros[4096];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0600), r = 0;

	if (fd < 0)
		return -errno;
	for (size_t n; len > 0 && r == 0; len -= n) {
		n = len < sizeof(zeros) ? len : sizeof(zeros);
		r = fs_write_all(fd, zeros, n);
	}
	/* Delayed allocation: a full disk may only say so here. */
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (unlink(path) < 0 && r == 0)
		r = -errno;
	return r;
}

int fs_lock_dir(const char *dir, const char *name, int *ret_fd, long *ret_holder)
{
	char *path = fs_path_join(dir, name), buf[32];
	int fd, r;

	if (!path)
		return -ENOMEM;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
	free(path);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		r = errno == EWOULDBLOCK ? -RY_E_LOCKED : -errno;
		if (ret_holder) {
			ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

			buf[n > 0 ? n : 0] = '\0';
			*ret_holder = strtol(buf, NULL, 10);
		}
		close(fd);
		return r;
	}
	r = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)r, 0) != r) {
		r = -errno;
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}
