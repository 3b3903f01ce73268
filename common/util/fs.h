/* File helpers shared by the controller and the agent: paths under a sysroot, bounded reads,
 * atomic writes with an explicit mode, directory creation. */
#ifndef RAILYARD_UTIL_FS_H
#define RAILYARD_UTIL_FS_H

#include <stddef.h>
#include <sys/types.h>

#define RY_WUR __attribute__((warn_unused_result))

/* Join sysroot and an absolute or relative path into a new string (caller frees with free()).
 * A NULL or "/" sysroot returns a copy of path made absolute. NULL on allocation failure. */
char *fs_path_join(const char *sysroot, const char *path);

/* Read a whole file of at most max_size bytes into a NUL-terminated buffer (caller frees).
 * -ENOENT etc. from open/read, -RY_E_TOO_BIG when larger than max_size. */
RY_WUR int fs_read_file(const char *path, size_t max_size, char **ret_buf, size_t *ret_len);

/* Read a small text file (sysfs/procfs attribute) with trailing whitespace removed; as
 * fs_read_file with a 64 KiB limit. */
RY_WUR int fs_read_attr(const char *path, char **ret_buf);

/* Write data to path atomically (temporary file in the same directory, fsync, rename, fsync of
 * the directory) with the given mode; the file never exists with a wider mode than requested.
 * The temporary file is ".NAME.ry-tmpXXXXXX" beside it; ones left by an earlier write of the
 * same path that was killed half-way are removed first (a state directory or sysroot has one
 * writer: the process that holds its lock). */
RY_WUR int fs_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);

/* Remove temporary files that interrupted fs_write_file_atomic() calls left for path. Returns
 * how many were removed. */
int fs_remove_stale_temps(const char *path);

/* fsync the directory that holds path (after a rename or unlink in it). 0 or -errno. */
int fs_sync_parent(const char *path);

/* Take the exclusive lock of a state directory: <dir>/<name> (created 0600) locked with flock(),
 * our pid written into it. The lock lasts as long as *ret_fd is open and dies with the process
 * (kill -9 included). -RY_E_LOCKED when another process holds it: *ret_holder (if not NULL)
 * is the pid written there (0 if unknown). Other failures -errno. */
RY_WUR int fs_lock_dir(const char *dir, const char *name, int *ret_fd, long *ret_holder);

/* write() all of data to fd, retrying short writes and EINTR. 0 or -errno. */
RY_WUR int fs_write_all(int fd, const void *data, size_t len);

/* mkdir -p with mode for every created component; existing directories are fine. */
RY_WUR int fs_mkdir_p(const char *path, mode_t mode);

/* Check that dir is a writable directory: -ENOTDIR, -EACCES, ... */
RY_WUR int fs_check_writable_dir(const char *dir);

/* Can path's filesystem take new data now: len bytes written to path (created 0600, truncated),
 * fsynced, and the file removed. 0, or -errno of the step that failed: -ENOSPC for a full
 * filesystem, -EROFS for a read-only one, -EIO. Costs an fsync: callers bound how often. */
RY_WUR int fs_probe_write(const char *path, size_t len);

#endif
