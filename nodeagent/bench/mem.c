/* Memory backends of the benchmark engine: the registry (host, cuda), opening the one a run's
 * parameters name ("cuda:1"), and the choice between dma-buf and nvidia-peermem when a
 * transport registers device memory for RDMA. */
#include "nodeagent/bench/bench.h"

#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const struct bench_mem_ops *const mems[] = {
	&bench_mem_host,
#ifdef RAILYARD_BENCH_HAVE_CUDA
	&bench_mem_cuda,
#endif
};

/* Backends this code base knows, whether built or not. */
static const char *const mem_names[] = {"host", "cuda"};

/* Length of the name part of spec ("cuda:1" -> 4). */
static size_t name_len(const char *spec)
{
	const char *colon = strchr(spec, ':');

	return colon ? (size_t)(colon - spec) : strlen(spec);
}

const struct bench_mem_ops *bench_mem_find(const char *spec, const char **ret_arg)
{
	size_t n;

	if (!spec)
		return NULL;
	n = name_len(spec);
	for (size_t i = 0; i < RY_ARRAY_SIZE(mems); i++)
		if (strlen(mems[i]->name) == n && strncmp(mems[i]->name, spec, n) == 0) {
			if (ret_arg)
				*ret_arg = spec[n] == ':' ? spec + n + 1 : NULL;
			return mems[i];
		}
	return NULL;
}

bool bench_mem_known(const char *spec)
{
	size_t n = spec ? name_len(spec) : 0;

	for (size_t i = 0; spec && i < RY_ARRAY_SIZE(mem_names); i++)
		if (strlen(mem_names[i]) == n && strncmp(mem_names[i], spec, n) == 0)
			return true;
	return false;
}

int bench_mem_open(const char *spec, struct bench_mem *ret, char *err)
{
	struct bench_mem m = {0};
	const char *arg = NULL;
	int r;

	m.ops = bench_mem_find(spec, &arg);
	if (!m.ops) {
		snprintf(err, BENCH_ERR_LEN, "unknown memory '%s'", spec ? spec : "");
		return -RY_E_NOT_FOUND;
	}
	snprintf(m.spec, sizeof(m.spec), "%s", spec);
	if (m.ops->open) {
		r = m.ops->open(arg, &m.st, err);
		if (r < 0)
			return r;
	}
	*ret = m;
	return 0;
}

void bench_mem_close(struct bench_mem *m)
{
	if (!m || !m->ops)
		return;
	if (m->ops->close)
		m->ops->close(m->st);
	m->st = NULL;
	m->ops = NULL;
}

const char *bench_gpudirect_name(enum bench_gpudirect g)
{
	switch (g) {
	case BENCH_GD_AUTO:
		return "auto";
	case BENCH_GD_DMABUF:
		return "dmabuf";
	case BENCH_GD_PEERMEM:
		return "peermem";
	}
	return "?";
}

int bench_gpudirect_parse(const char *s, enum bench_gpudirect *ret)
{
	static const enum bench_gpudirect all[] = {BENCH_GD_AUTO, BENCH_GD_DMABUF,
						   BENCH_GD_PEERMEM};

	for (size_t i = 0; s && i < RY_ARRAY_SIZE(all); i++)
		if (strcmp(s, bench_gpudirect_name(all[i])) == 0) {
			*ret = all[i];
			return 0;
		}
	return -RY_E_INVALID;
}

/* dma-buf: export, register, close our descriptor (the MR holds its own reference). */
static int try_dmabuf(const struct bench_mem *mem, void *buf, size_t len,
		      const struct bench_gd_reg *reg, char *why)
{
	uint64_t off = 0;
	int fd = -1, r;

	if (!mem->ops->dmabuf) {
		snprintf(why, BENCH_ERR_LEN, "%s memory cannot be exported as a dma-buf",
			 mem->ops->name);
		return -ENOTSUP;
	}
	r = mem->ops->dmabuf(mem->st, buf, len, &fd, &off, why);
	if (r < 0)
		return r;
	r = reg->reg_dmabuf(reg->ud, fd, off, len, (uint64_t)(uintptr_t)buf);
	if (r < 0)
		snprintf(why, BENCH_ERR_LEN, "ibv_reg_dmabuf_mr: %s", ry_strerror(r));
	close(fd);
	return r;
}

static int try_peermem(const struct bench_mem *mem, void *buf, size_t len,
		       const struct bench_gd_reg *reg, char *why)
{
	int r = mem->ops->peermem ? mem->ops->peermem(mem->st, buf, len, why) : 0;

	if (r < 0)
		return r;
	r = reg->reg_addr(reg->ud, buf, len);
	if (r < 0)
		snprintf(why, BENCH_ERR_LEN,
			 "ibv_reg_mr on device memory: %s (is nvidia_peermem loaded?)",
			 ry_strerror(r));
	return r;
}

int bench_gpudirect_register(enum bench_gpudirect want, const struct bench_mem *mem, void *buf,
			     size_t len, const struct bench_gd_reg *reg,
			     enum bench_gpudirect *ret_used, char *note, size_t notelen, char *err)
{
	char why_dmabuf[BENCH_ERR_LEN] = "", why_peermem[BENCH_ERR_LEN] = "";
	int r;

	if (note && notelen)
		note[0] = '\0';
	if (want != BENCH_GD_PEERMEM) {
		r = try_dmabuf(mem, buf, len, reg, why_dmabuf);
		if (r == 0) {
			*ret_used = BENCH_GD_DMABUF;
			return 0;
		}
		if (want == BENCH_GD_DMABUF) {
			snprintf(err, BENCH_ERR_LEN, "dma-buf registration: %s", why_dmabuf);
			return r;
		}
	}
	r = try_peermem(mem, buf, len, reg, why_peermem);
	if (r == 0) {
		*ret_used = BENCH_GD_PEERMEM;
		if (want == BENCH_GD_AUTO && note && notelen)
			snprintf(note, notelen, "dma-buf not used: %s", why_dmabuf);
		return 0;
	}
	if (want == BENCH_GD_AUTO)
		snprintf(err, BENCH_ERR_LEN,
			 "GPU memory cannot be registered: dma-buf: %.80s; nvidia-peermem: %.80s",
			 why_dmabuf, why_peermem);
	else
		snprintf(err, BENCH_ERR_LEN, "nvidia-peermem registration: %s", why_peermem);
	return r;
}
