/* Benchmark parameters: defaults, validation against the bounds, the wire form exchanged at
 * negotiation, comparison with the peer's, and the registries of transports and memories. */
#include "nodeagent/bench/bench.h"

#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define TIMEOUT_DEFAULT_MS 10000u
#define TIMEOUT_MAX_MS	   3600000u

static const struct bench_transport_ops *const transports[] = {
	&bench_transport_tcp,
#ifdef RAILYARD_BENCH_HAVE_VERBS
	&bench_transport_verbs,
#endif
};

/* Transports this code base knows, whether built or not. */
static const char *const transport_names[] = {"tcp", "verbs"};

const struct bench_transport_ops *bench_transport_find(const char *name)
{
	size_t i;

	for (i = 0; name && i < RY_ARRAY_SIZE(transports); i++)
		if (strcmp(transports[i]->name, name) == 0)
			return transports[i];
	return NULL;
}

bool bench_transport_known(const char *name)
{
	size_t i;

	for (i = 0; name && i < RY_ARRAY_SIZE(transport_names); i++)
		if (strcmp(transport_names[i], name) == 0)
			return true;
	return false;
}

uint64_t bench_sweep_clamp(uint64_t sweep_max, uint64_t device_max)
{
	uint64_t limit = sweep_max < device_max ? sweep_max : device_max, s = BENCH_SWEEP_MIN;

	if (limit < BENCH_SWEEP_MIN)
		return 0;
	while (s <= limit / 2)
		s *= 2;
	return s;
}

const char *bench_kind_name(enum bench_kind k)
{
	return k == BENCH_LAT ? "lat" : k == BENCH_BW ? "bw" : "?";
}

const char *bench_op_name(enum bench_op op)
{
	switch (op) {
	case BENCH_OP_AUTO:
		return "auto";
	case BENCH_OP_SEND:
		return "send";
	case BENCH_OP_WRITE:
		return "write";
	case BENCH_OP_READ:
		return "read";
	}
	return "?";
}

int bench_kind_parse(const char *s, enum bench_kind *ret_kind)
{
	if (strcmp(s, "lat") == 0)
		*ret_kind = BENCH_LAT;
	else if (strcmp(s, "bw") == 0)
		*ret_kind = BENCH_BW;
	else
		return -RY_E_INVALID;
	return 0;
}

int bench_op_parse(const char *s, enum bench_op *ret_op)
{
	static const enum bench_op ops[] = {BENCH_OP_SEND, BENCH_OP_WRITE, BENCH_OP_READ};
	size_t i;

	for (i = 0; i < RY_ARRAY_SIZE(ops); i++)
		if (strcmp(s, bench_op_name(ops[i])) == 0) {
			*ret_op = ops[i];
			return 0;
		}
	return -RY_E_INVALID;
}

void bench_params_init(struct bench_params *p)
{
	memset(p, 0, sizeof(*p));
	p->kind = BENCH_LAT;
	p->op = BENCH_OP_AUTO;
	snprintf(p->transport, sizeof(p->transport), "tcp");
	p->size = 2;
	p->iters = 1000;
	p->qps = 1;
	p->warmup = BENCH_AUTO;
	p->margin_ms = BENCH_AUTO;
	p->port = BENCH_DEFAULT_PORT;
	p->gid_index = -1;
	snprintf(p->mem, sizeof(p->mem), "host");
}

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t errlen, int r,
						      const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return r;
}

static bool str_terminated(const char *s, size_t len)
{
	return memchr(s, '\0', len) != NULL;
}

int bench_params_validate(struct bench_params *p, char *err, size_t errlen)
{
	const struct bench_transport_ops *t;
	const struct bench_mem_ops *mem;
	const char *mem_arg = NULL;
	char terr[BENCH_ERR_LEN] = "";
	int r;

	if (p->kind != BENCH_LAT && p->kind != BENCH_BW)
		return fail(err, errlen, -RY_E_INVALID, "test must be lat or bw");
	if (!str_terminated(p->transport, sizeof(p->transport)) ||
	    !str_terminated(p->device, sizeof(p->device)) ||
	    !str_terminated(p->mem, sizeof(p->mem)))
		return fail(err, errlen, -RY_E_INVALID, "unterminated name");
	t = bench_transport_find(p->transport);
	if (!t && bench_transport_known(p->transport))
		return fail(err, errlen, -ENOTSUP, "%s transport not built", p->transport);
	if (!t)
		return fail(err, errlen, -RY_E_NOT_FOUND, "unknown transport '%s' (tcp, verbs)",
			    p->transport);
	mem = bench_mem_find(p->mem, &mem_arg);
	if (!mem && bench_mem_known(p->mem))
		return fail(err, errlen, -ENOTSUP, "%.*s memory not built",
			    (int)strcspn(p->mem, ":"), p->mem);
	if (!mem)
		return fail(err, errlen, -RY_E_NOT_FOUND, "unknown memory '%s' (host, cuda)",
			    p->mem);
	if (p->gpudirect > BENCH_GD_PEERMEM)
		return fail(err, errlen, -RY_E_INVALID, "--gpudirect is auto, dmabuf or peermem");
	if (p->gpudirect != BENCH_GD_AUTO && !mem->device)
		return fail(err, errlen, -RY_E_INVALID,
			    "--gpudirect %s is for GPU memory (--mem cuda)",
			    bench_gpudirect_name(p->gpudirect));
	if (p->op == BENCH_OP_AUTO)
		p->op = t->default_op;
	if (p->op < BENCH_OP_SEND || p->op > BENCH_OP_READ)
		return fail(err, errlen, -RY_E_INVALID, "op must be send, write or read");
	if (!(t->op_mask & (1u << p->op)))
		return fail(err, errlen, -RY_E_INVALID, "the %s transport does not do --op %s",
			    t->name, bench_op_name(p->op));
	if (p->sweep) {
		p->size = 0;
		if (p->sweep_max == 0)
			p->sweep_max = BENCH_SIZE_MAX;
		if (p->sweep_max < BENCH_SWEEP_MIN || p->sweep_max > BENCH_SIZE_MAX)
			return fail(err, errlen, -ERANGE, "-a up to %" PRIu64 " B: outside %u..%u",
				    p->sweep_max, BENCH_SWEEP_MIN, BENCH_SIZE_MAX);
	} else if (p->size < BENCH_SIZE_MIN || p->size > BENCH_SIZE_MAX) {
		return fail(err, errlen, -ERANGE, "size %" PRIu64 " outside %u..%u", p->size,
			    BENCH_SIZE_MIN, BENCH_SIZE_MAX);
	}
	if ((p->iters == 0) == (p->duration_s == 0))
		return fail(err, errlen, -RY_E_INVALID, "give iterations or a duration, not both");
	if (p->iters > BENCH_ITERS_MAX)
		return fail(err, errlen, -ERANGE, "iterations %" PRIu64 " over %llu", p->iters,
			    BENCH_ITERS_MAX);
	if (p->duration_s > BENCH_DURATION_MAX)
		return fail(err, errlen, -ERANGE, "duration %u s over %u s", p->duration_s,
			    BENCH_DURATION_MAX);
	if (p->kind == BENCH_LAT) {
		if (p->qps != 1)
			return fail(err, errlen, -RY_E_INVALID,
				    "latency runs on one QP (-q is for bw)");
		if (p->bidir)
			return fail(err, errlen, -RY_E_INVALID, "--bidir is for bw");
		p->depth = 1;
	} else {
		if (p->qps < 1 || p->qps > BENCH_QPS_MAX)
			return fail(err, errlen, -ERANGE, "QPs %u outside 1..%u", p->qps,
				    BENCH_QPS_MAX);
		if (p->depth == 0)
			p->depth = 128;
		if (p->depth > BENCH_DEPTH_MAX)
			return fail(err, errlen, -ERANGE, "window depth %u over %u", p->depth,
				    BENCH_DEPTH_MAX);
	}
	if (p->iters) {
		if (p->warmup == BENCH_AUTO)
			p->warmup = (uint32_t)(p->iters / 10 < 1000 ? p->iters / 10 : 1000);
		if (p->warmup > BENCH_ITERS_MAX)
			return fail(err, errlen, -ERANGE, "warm-up %u over %llu", p->warmup,
				    BENCH_ITERS_MAX);
		p->margin_ms = 0;
	} else {
		if (p->margin_ms == BENCH_AUTO)
			p->margin_ms = p->duration_s * 100 < 2000 ? p->duration_s * 100 : 2000;
		if ((uint64_t)p->margin_ms * 2 >= (uint64_t)p->duration_s * 1000)
			return fail(err, errlen, -RY_E_INVALID,
				    "margins of %u ms leave nothing of %u s", p->margin_ms,
				    p->duration_s);
		p->warmup = 0;
	}
	if (p->interval_ms == 0)
		p->interval_ms = 1000;
	if (p->interval_ms < 10 || p->interval_ms > 60000)
		return fail(err, errlen, -ERANGE, "interval %u ms outside 10..60000",
			    p->interval_ms);
	if (p->connect_timeout_ms == 0)
		p->connect_timeout_ms = TIMEOUT_DEFAULT_MS;
	if (p->io_timeout_ms == 0)
		p->io_timeout_ms = TIMEOUT_DEFAULT_MS;
	if (p->connect_timeout_ms > TIMEOUT_MAX_MS || p->io_timeout_ms > TIMEOUT_MAX_MS)
		return fail(err, errlen, -ERANGE, "timeouts are bounded to %u ms", TIMEOUT_MAX_MS);
	if (p->gid_index < -1)
		return fail(err, errlen, -RY_E_INVALID, "GID index %d is negative", p->gid_index);
	if (!p->sweep)
		p->sweep_max = 0;
	if (mem->validate) {
		r = mem->validate(mem_arg, terr);
		if (r < 0)
			return fail(err, errlen, r, "%s memory: %s", mem->name,
				    terr[0] ? terr : ry_strerror(r));
	}
	if (t->validate) {
		r = t->validate(p, terr);
		if (r < 0)
			return fail(err, errlen, r, "%s", terr[0] ? terr : ry_strerror(r));
		if (p->sweep && p->sweep_max < BENCH_SWEEP_MIN)
			return fail(err, errlen, -ERANGE, "the device takes no message of %u B",
				    BENCH_SWEEP_MIN);
	}
	return 0;
}

/* ---- wire form ----------------------------------------------------------------------------- */

enum { FLAG_SWEEP = 1, FLAG_BIDIR = 2, FLAG_RDMA_CM = 4, FLAG_CHECK = 8 };

static void put16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}

static void put32(uint8_t *b, uint32_t v)
{
	put16(b, (uint16_t)(v >> 16));
	put16(b + 2, (uint16_t)v);
}

static void put64(uint8_t *b, uint64_t v)
{
	put32(b, (uint32_t)(v >> 32));
	put32(b + 4, (uint32_t)v);
}

static uint16_t get16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

static uint32_t get32(const uint8_t *b)
{
	return (uint32_t)get16(b) << 16 | get16(b + 2);
}

static uint64_t get64(const uint8_t *b)
{
	return (uint64_t)get32(b) << 32 | get32(b + 4);
}

/* Layout (big-endian): 0 magic, 4 version u16, 6 kind u8, 7 op u8, 8 flags u8, 9..11 zero,
 * 12 qps, 16 size u64, 24 iters u64, 32 duration_s, 36 depth, 40 warmup, 44 margin_ms,
 * 48 interval_ms, 52 transport[16], 68 sweep_max (0 from a peer that predates it: 8 MiB). */
void bench_params_pack(const struct bench_params *p, uint8_t out[BENCH_PARAMS_WIRE])
{
	memset(out, 0, BENCH_PARAMS_WIRE);
	put32(out, BENCH_PROTO_MAGIC);
	put16(out + 4, BENCH_PROTO_VERSION);
	out[6] = (uint8_t)p->kind;
	out[7] = (uint8_t)p->op;
	out[8] = (uint8_t)((p->sweep ? FLAG_SWEEP : 0) | (p->bidir ? FLAG_BIDIR : 0) |
			   (p->rdma_cm ? FLAG_RDMA_CM : 0) | (p->check_data ? FLAG_CHECK : 0));
	put32(out + 12, p->qps);
	put64(out + 16, p->size);
	put64(out + 24, p->iters);
	put32(out + 32, p->duration_s);
	put32(out + 36, p->depth);
	put32(out + 40, p->warmup);
	put32(out + 44, p->margin_ms);
	put32(out + 48, p->interval_ms);
	memcpy(out + 52, p->transport, BENCH_NAME_LEN);
	out[52 + BENCH_NAME_LEN - 1] = '\0';
	put32(out + 68, (uint32_t)p->sweep_max);
}

int bench_params_unpack(const uint8_t *buf, size_t len, struct bench_params *ret_p)
{
	struct bench_params p;

	if (!buf || len != BENCH_PARAMS_WIRE || get32(buf) != BENCH_PROTO_MAGIC ||
	    get16(buf + 4) != BENCH_PROTO_VERSION)
		return -RY_E_INVALID;
	memset(&p, 0, sizeof(p));
	p.kind = (enum bench_kind)buf[6];
	p.op = (enum bench_op)buf[7];
	if ((p.kind != BENCH_LAT && p.kind != BENCH_BW) || buf[7] < BENCH_OP_SEND ||
	    buf[7] > BENCH_OP_READ || (buf[8] & ~0x0f))
		return -RY_E_INVALID;
	p.sweep = buf[8] & FLAG_SWEEP;
	p.bidir = buf[8] & FLAG_BIDIR;
	p.rdma_cm = buf[8] & FLAG_RDMA_CM;
	p.check_data = buf[8] & FLAG_CHECK;
	p.qps = get32(buf + 12);
	p.size = get64(buf + 16);
	p.iters = get64(buf + 24);
	p.duration_s = get32(buf + 32);
	p.depth = get32(buf + 36);
	p.warmup = get32(buf + 40);
	p.margin_ms = get32(buf + 44);
	p.interval_ms = get32(buf + 48);
	memcpy(p.transport, buf + 52, BENCH_NAME_LEN);
	if (p.transport[BENCH_NAME_LEN - 1] != '\0')
		return -RY_E_INVALID;
	p.sweep_max = get32(buf + 68);
	if (p.sweep && p.sweep_max == 0)
		p.sweep_max = BENCH_SIZE_MAX;
	if (p.sweep_max > BENCH_SIZE_MAX || (p.sweep && p.sweep_max < BENCH_SWEEP_MIN))
		return -RY_E_INVALID;
	if (p.size > BENCH_SIZE_MAX || p.iters > BENCH_ITERS_MAX ||
	    p.duration_s > BENCH_DURATION_MAX || p.qps < 1 || p.qps > BENCH_QPS_MAX ||
	    p.depth > BENCH_DEPTH_MAX)
		return -RY_E_INVALID;
	*ret_p = p;
	return 0;
}

/* "bw", "bw write", "bw write over verbs": the parts of what runs that differ. */
static void describe_run(const struct bench_params *p, bool op, bool transport, char *out,
			 size_t len)
{
	snprintf(out, len, "%s%s%s%s%s", bench_kind_name(p->kind), op ? " " : "",
		 op ? bench_op_name(p->op) : "", transport ? " over " : "",
		 transport ? p->transport : "");
}

int bench_params_compare(const struct bench_params *ours, const struct bench_params *peer,
			 char *err, size_t errlen)
{
	char od[256] = "", pd[256] = "", orun[64], prun[64];
	size_t ol = 0, pl = 0;
	bool op = ours->op != peer->op;
	bool tr = strcmp(ours->transport, peer->transport) != 0;
	bool any = op || tr || ours->kind != peer->kind;

#define DIFF(cond, fmt, a, b)                                                                      \
	do {                                                                                       \
		if (cond) {                                                                        \
			any = true;                                                                \
			ol += (size_t)snprintf(od + ol, ol < sizeof(od) ? sizeof(od) - ol : 0,     \
					       "%s" fmt, ol ? ", " : "", a);                       \
			pl += (size_t)snprintf(pd + pl, pl < sizeof(pd) ? sizeof(pd) - pl : 0,     \
					       "%s" fmt, pl ? ", " : "", b);                       \
		}                                                                                  \
	} while (0)
	DIFF(ours->sweep != peer->sweep, "%s", ours->sweep ? "all sizes (-a)" : "one size",
	     peer->sweep ? "all sizes (-a)" : "one size");
	DIFF(ours->size != peer->size, "size %" PRIu64, ours->size, peer->size);
	DIFF(ours->iters != peer->iters, "%" PRIu64 " iterations", ours->iters, peer->iters);
	DIFF(ours->duration_s != peer->duration_s, "duration %u s", ours->duration_s,
	     peer->duration_s);
	DIFF(ours->qps != peer->qps, "%u QPs", ours->qps, peer->qps);
	DIFF(ours->depth != peer->depth, "window %u", ours->depth, peer->depth);
	DIFF(ours->bidir != peer->bidir, "%s", ours->bidir ? "--bidir" : "one direction",
	     peer->bidir ? "--bidir" : "one direction");
	DIFF(ours->rdma_cm != peer->rdma_cm, "%s", ours->rdma_cm ? "--rdma-cm" : "no --rdma-cm",
	     peer->rdma_cm ? "--rdma-cm" : "no --rdma-cm");
	DIFF(ours->check_data != peer->check_data, "%s",
	     ours->check_data ? "--check-data" : "no --check-data",
	     peer->check_data ? "--check-data" : "no --check-data");
	DIFF(ours->warmup != peer->warmup, "warm-up %u", ours->warmup, peer->warmup);
	DIFF(ours->margin_ms != peer->margin_ms, "margins %u ms", ours->margin_ms, peer->margin_ms);
	DIFF(ours->interval_ms != peer->interval_ms, "interval %u ms", ours->interval_ms,
	     peer->interval_ms);
#undef DIFF
	if (!any)
		return 0;
	if (ol == 0 || ours->kind != peer->kind) {
		/* Only the kind, op or transport differ, or the kind does (then window and warm-up
		 * differ as a consequence): show the size for context. */
		snprintf(od, sizeof(od), "size %" PRIu64, ours->size);
		snprintf(pd, sizeof(pd), "size %" PRIu64, peer->size);
	}
	describe_run(ours, op, tr, orun, sizeof(orun));
	describe_run(peer, op, tr, prun, sizeof(prun));
	return fail(err, errlen, -RY_E_PARAM_MISMATCH, "peer runs %s with %s, we run %s with %s",
		    prun, pd, orun, od);
}
