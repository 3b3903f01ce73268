/* Helpers shared by the libFuzzer targets (tests/fuzz, docs/fuzzing.md): a reader over the
 * fuzzer's bytes, scratch directories on tmpfs, the source tree's fixtures, quiet logs. Test
 * code: a failed set-up aborts (the target cannot run without it). */
#ifndef RAILYARD_FUZZ_UTIL_H
#define RAILYARD_FUZZ_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* libFuzzer's entry points. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Abort with a message when cond is false: a broken invariant is a finding, as a crash is. */
#define FUZZ_CHECK(cond, ...)                                                                      \
	do {                                                                                       \
		if (!(cond))                                                                       \
			fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                         \
	} while (0)
__attribute__((noreturn, format(printf, 4, 5))) void
fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...);

/* Consume the fuzzer's bytes front to back. Reads past the end give zeros / empty strings. */
struct fuzz_in {
	const uint8_t *p;
	size_t left;
};

uint8_t fuzz_u8(struct fuzz_in *in);
uint16_t fuzz_u16(struct fuzz_in *in);
uint32_t fuzz_u32(struct fuzz_in *in);
uint64_t fuzz_u64(struct fuzz_in *in);
/* The next n bytes (fewer at the end), borrowed; *ret_n says how many. */
const uint8_t *fuzz_bytes(struct fuzz_in *in, size_t n, size_t *ret_n);
/* A NUL-terminated copy of the bytes up to the next NUL (consumed) or the end, at most max
 * bytes; caller frees. */
char *fuzz_str(struct fuzz_in *in, size_t max);

/* A new empty directory under $FUZZ_TMPDIR, /dev/shm or /tmp (tmpfs keeps fsync cheap), removed
 * with its contents at a normal exit. The path is the caller's (never freed). */
char *fuzz_mkdtemp(const char *what);
/* rm -rf path (a tree the target made); errors are ignored. */
void fuzz_rmtree(const char *path);
/* RAILYARD_SOURCE_DIR/rel, as compiled in (caller frees). */
char *fuzz_src_path(const char *rel);
/* A file's contents (NUL-terminated; caller frees), aborting when unreadable. */
char *fuzz_read_file(const char *path, size_t *ret_len);

/* Logs off (errors only to /dev/null unless FUZZ_LOG=1), for speed and a readable run. */
void fuzz_quiet_logs(void);
/* /dev/null for output a target produces and drops. */
FILE *fuzz_devnull(void);

#endif
