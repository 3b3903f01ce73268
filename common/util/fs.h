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

/* Write data to path atomically (temporary file in the same directory, fsync, rename) with the
 * given mode; the file never exists with a wider mode than requested. */
RY_WUR int fs_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);

/* mkdir -p with mode for every created component; existing directories are fine. */
RY_WUR int fs_mkdir_p(const char *path, mode_t mode);

/* Check that dir is a writable directory: -ENOTDIR, -EACCES, ... */
RY_WUR int fs_check_writable_dir(const char *dir);

#endif
