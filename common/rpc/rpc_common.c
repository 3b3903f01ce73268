/* rpc layer: gRPC set-up, log routing, codec, byte buffers, backoff. */
#include "common/rpc/rpc_int.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>
#include <grpc/support/log.h>

/* "Failed accept4" lines gRPC logged: in 1.51 each one is a listener that stopped for good. */
static _Atomic uint64_t accept_failures;

uint64_t rpc_accept_failures(void)
{
	return atomic_load(&accept_failures);
}

int rpc_fd_usage(long *ret_open, long *ret_limit)
{
	struct rlimit rl;
	DIR *d;
	long n = 0;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	d = opendir("/proc/self/fd");
	if (!d)
		return -errno;
	while (readdir(d))
		n++;
	closedir(d);
	/* ".", ".." and the directory's own descriptor */
	*ret_open = n > 3 ? n - 3 : 0;
	*ret_limit = rl.rlim_cur == RLIM_INFINITY ? 0 : (long)rl.rlim_cur;
	return 0;
}

static void rpc_gpr_log(gpr_log_func_args *args)
{
	enum log_level level;

	/* gRPC 1.51's TCP listener (tcp_server_posix.cc) logs this once when accept4() fails for
	 * any reason but EINTR/EAGAIN/ECONNABORTED (EMFILE: the open-file limit) and never
	 * accepts on that socket again; rpc_server_check_listener() replaces it. */
	if (args->severity == GPR_LOG_SEVERITY_ERROR &&
	    strncmp(args->message, "Failed accept4", 14) == 0)
		atomic_fetch_add(&accept_failures, 1);

	switch (args->severity) {
	case GPR_LOG_SEVERITY_ERROR:
		level = LOG_LEVEL_ERROR;
		break;
	case GPR_LOG_SEVERITY_INFO:
		level = LOG_LEVEL_INFO;
		break;
	default:
		level = LOG_LEVEL_DEBUG;
		break;
	}
	log_msg(level, "grpc: %s (%s:%d)", args->message, args->file, args->line);
}

void rpc_log_init(void)
{
	gpr_set_log_function(rpc_gpr_log);
	gpr_set_log_verbosity(log_get_level() >= LOG_LEVEL_DEBUG ? GPR_LOG_SEVERITY_INFO
								 : GPR_LOG_SEVERITY_ERROR);
}

void rpc_cq_run(grpc_completion_queue *cq)
{
	for (;;) {
		grpc_event ev =
			grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type == GRPC_OP_COMPLETE) {
			struct rpc_tag *t = ev.tag;

			t->fn(t, ev.success != 0);
		}
	}
}

int rpc_sendq_push(struct rpc_sendq *q, grpc_byte_buffer *bb)
{
	if (q->len == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 4;
		grpc_byte_buffer **v;

		if (cap > RPC_MAX_QUEUED)
			return -ENOBUFS;
		v = malloc(cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (size_t i = 0; i < q->len; i++)
			v[i] = q->v[(q->head + i) % q->cap];
		free(q->v);
		q->v = v;
		q->head = 0;
		q->cap = cap;
	}
	q->v[(q->head + q->len) % q->cap] = bb;
	q->len++;
	return 0;
}

grpc_byte_buffer *rpc_sendq_pop(struct rpc_sendq *q)
{
	grpc_byte_buffer *bb;

	if (q->len == 0)
		return NULL;
	bb = q->v[q->head];
	q->head = (q->head + 1) % q->cap;
	q->len--;
	return bb;
}

void rpc_sendq_clear(struct rpc_sendq *q, bool release)
{
	grpc_byte_buffer *bb;

	while ((bb = rpc_sendq_pop(q)))
		grpc_byte_buffer_destroy(bb);
	if (release) {
		free(q->v);
		*q = (struct rpc_sendq){NULL, 0, 0, 0};
	}
}

void rpc_init(void)
{
	rpc_absl_quiet();
	grpc_init();
}

void rpc_shutdown(void)
{
	grpc_shutdown_blocking();
}

const char *rpc_status_name(grpc_status_code code)
{
	static const char *const names[] = {
		"OK",
		"CANCELLED",
		"UNKNOWN",
		"INVALID_ARGUMENT",
		"DEADLINE_EXCEEDED",
		"NOT_FOUND",
		"ALREADY_EXISTS",
		"PERMISSION_DENIED",
		"RESOURCE_EXHAUSTED",
		"FAILED_PRECONDITION",
		"ABORTED",
		"OUT_OF_RANGE",
		"UNIMPLEMENTED",
		"INTERNAL",
		"UNAVAILABLE",
		"DATA_LOSS",
		"UNAUTHENTICATED",
	};

	if ((unsigned)code < RY_ARRAY_SIZE(names))
		return names[code];
	return "UNKNOWN_STATUS";
}

int rpc_pack(const ProtobufCMessage *msg, uint8_t **ret_buf, size_t *ret_len)
{
	size_t len = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf;

	if (len > RPC_MAX_MESSAGE)
		return -RY_E_TOO_BIG;
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	protobuf_c_message_pack(msg, buf);
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

int rpc_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *buf, size_t len,
	       ProtobufCMessage **ret_msg)
{
	ProtobufCMessage *m;

	if (len > RPC_MAX_MESSAGE)
		return -RY_E_TOO_BIG;
	m = protobuf_c_message_unpack(desc, NULL, len, buf);
	if (!m)
		return -RY_E_INVALID;
	*ret_msg = m;
	return 0;
}

int rpc_buffer_from_bytes(const void *data, size_t len, grpc_byte_buffer **ret)
{
	grpc_slice s = grpc_slice_from_copied_buffer(data, len);

	/* The byte buffer takes its own reference; drop ours. */
	*ret = grpc_raw_byte_buffer_create(&s, 1);
	grpc_slice_unref(s);
	return 0;
}

int rpc_buffer_from_message(const ProtobufCMessage *msg, grpc_byte_buffer **ret)
{
	uint8_t *buf;
	size_t len;
	int r;

	r = rpc_pack(msg, &buf, &len);
	if (r < 0)
		return r;
	r = rpc_buffer_from_bytes(buf, len, ret);
	free(buf);
	return r;
}

int rpc_buffer_to_message(grpc_byte_buffer *bb, const ProtobufCMessageDescriptor *desc,
			  ProtobufCMessage **ret)
{
	grpc_byte_buffer_reader reader;
	grpc_slice s;
	int r;

	if (!grpc_byte_buffer_reader_init(&reader, bb))
		return -RY_E_INVALID;
	s = grpc_byte_buffer_reader_readall(&reader);
	grpc_byte_buffer_reader_destroy(&reader);
	r = rpc_unpack(desc, GRPC_SLICE_START_PTR(s), GRPC_SLICE_LENGTH(s), ret);
	grpc_slice_unref(s);
	return r;
}

void rpc_slice_copy(grpc_slice s, char *out, size_t outlen)
{
	size_t n = GRPC_SLICE_LENGTH(s);

	if (outlen == 0)
		return;
	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, GRPC_SLICE_START_PTR(s), n);
	out[n] = '\0';
}

int rpc_backoff_next_ms(struct rpc_backoff *b)
{
	int64_t d = b->base_ms > 0 ? b->base_ms : 1;
	uint32_t rnd = 0;

	for (int i = 0; i < b->attempt && d < b->max_ms; i++)
		d *= 2;
	if (d > b->max_ms)
		d = b->max_ms;
	if (b->attempt < 62)
		b->attempt++;
	if (util_random_bytes(&rnd, sizeof(rnd)) < 0)
		rnd = (uint32_t)util_now_mono_ms() * 2654435761u;
	/* Equal jitter: half fixed, half random, so agents that lost the controller together do
	 * not come back together. */
	return (int)(d / 2 + (int64_t)((double)rnd / 4294967296.0 * (double)(d - d / 2)));
}

void rpc_backoff_reset(struct rpc_backoff *b)
{
	b->attempt = 0;
}
