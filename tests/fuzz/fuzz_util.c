/* Helpers shared by the fuzz targets: byte reader, tmpfs scratch directories, fixture paths,
 * quiet logs. */
#include "tests/fuzz/fuzz_util.h"

#include "common/log/log.h"

#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: invariant broken: %s: ", file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

uint8_t fuzz_u8(struct fuzz_in *in)
{
	uint8_t v = 0;

	if (in->left) {
		v = *in->p++;
		in->left--;
	}
	return v;
}

uint16_t fuzz_u16(struct fuzz_in *in)
{
	uint16_t lo = fuzz_u8(in);

	return (uint16_t)(lo | (uint16_t)fuzz_u8(in) << 8);
}

uint32_t fuzz_u32(struct fuzz_in *in)
{
	uint32_t lo = fuzz_u16(in);

	return lo | (uint32_t)fuzz_u16(in) << 16;
}

uint64_t fuzz_u64(struct fuzz_in *in)
{
	uint64_t lo = fuzz_u32(in);

	return lo | (uint64_t)fuzz_u32(in) << 32;
}

const uint8_t *fuzz_bytes(struct fuzz_in *in, size_t n, size_t *ret_n)
{
	const uint8_t *p = in->p;

	if (n > in->left)
		n = in->left;
	in->p += n;
	in->left -= n;
	*ret_n = n;
	return p;
}

char *fuzz_str(struct fuzz_in *in, size_t max)
{
	const uint8_t *nul = memchr(in->p, '\0', in->left);
	size_t n = nul ? (size_t)(nul - in->p) : in->left;
	char *s;

	s = malloc((n < max ? n : max) + 1);
	if (!s)
		abort();
	memcpy(s, in->p, n < max ? n : max);
	s[n < max ? n : max] = '\0';
	in->p += n + (nul ? 1 : 0);
	in->left -= n + (nul ? 1 : 0);
	return s;
}

/* Scratch directories, removed at a normal exit (a crash leaves them for a look). */
static char *made[16];
static size_t n_made;

static void remove_made(void)
{
	for (size_t i = 0; i < n_made; i++)
		fuzz_rmtree(made[i]);
}

char *fuzz_mkdtemp(const char *what)
{
	const char *base = getenv("FUZZ_TMPDIR");
	struct stat st;
	char *p;

	if (!base || !base[0])
		base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
	if (asprintf(&p, "%s/railyard-fuzz-%s-XXXXXX", base, what) < 0)
		abort();
	if (!mkdtemp(p)) {
		fprintf(stderr, "fuzz: mkdtemp %s: %s\n", p, strerror(errno));
		abort();
	}
	if (n_made == 0)
		atexit(remove_made);
	if (n_made < sizeof(made) / sizeof(made[0]))
		made[n_made++] = p;
	return p;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	(void)remove(path);
	return 0;
}

void fuzz_rmtree(const char *path)
{
	if (path)
		(void)nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char *fuzz_src_path(const char *rel)
{
	char *p;

	if (asprintf(&p, "%s/%s", RAILYARD_SOURCE_DIR, rel) < 0)
		abort();
	return p;
}

char *fuzz_read_file(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f) {
		fprintf(stderr, "fuzz: cannot read %s: %s\n", path, strerror(errno));
		abort();
	}
	do {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	fclose(f);
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	return buf;
}

FILE *fuzz_devnull(void)
{
	static FILE *f;

	if (!f) {
		f = fopen("/dev/null", "w");
		if (!f)
			abort();
	}
	return f;
}

void fuzz_quiet_logs(void)
{
	const char *v = getenv("FUZZ_LOG");

	if (v && strcmp(v, "1") == 0) {
		log_set_level(LOG_LEVEL_DEBUG);
		return;
	}
	log_set_level(LOG_LEVEL_ERROR);
	log_set_stream(fuzz_devnull());
}
