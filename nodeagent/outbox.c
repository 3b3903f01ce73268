/* The agent's outbox: packed messages in memory, mirrored in an append-only file of records
 * [u32 length][u32 CRC-32][payload] (little-endian). Acknowledged messages are always a prefix
 * (messages are sent in order); the file is truncated when everything is acknowledged, and
 * rewritten without its dead prefix when that grows large. An acknowledgement that was not yet
 * reflected in the file when the agent died only means a message is sent twice: the controller
 * takes an identical report again as a no-op. */
#include "nodeagent/outbox.h"
#include "common/log/log.h"
#include "common/rpc/rpc.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REC_HEADER 8
/* Rewrite the file when its acknowledged prefix is over this and over the live part. */
#define COMPACT_MIN (4 * 1024 * 1024)

struct outbox_item {
	uint8_t *buf;
	size_t len;
	int64_t sent_seq; /* 0: not sent in this session */
	off_t file_off;	  /* where its record starts (-1: memory only) */
};

struct outbox {
	pthread_mutex_t lock;
	pthread_cond_t room;
	struct outbox_item *items; /* oldest first */
	size_t n, cap, bytes, max_bytes;
	bool closed;
	char *path; /* NULL: memory only */
	int fd;
	off_t file_len;
	bool write_failed;	/* logged once until a write succeeds again */
	int64_t full_logged_ms; /* "full" is logged at most every 10 s */
};

static void put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int items_grow(struct outbox *ob)
{
	if (ob->n == ob->cap) {
		size_t cap = ob->cap ? ob->cap * 2 : 64;
		struct outbox_item *v = realloc(ob->items, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ob->items = v;
		ob->cap = cap;
	}
	return 0;
}

/* Append one record at the end of the file and sync it. Caller holds the lock. */
static int append_record(struct outbox *ob, const uint8_t *buf, size_t len, off_t *ret_off)
{
	uint8_t hdr[REC_HEADER];
	int r;

	put_u32(hdr, (uint32_t)len);
	put_u32(hdr + 4, util_crc32(0, buf, len));
	if (lseek(ob->fd, ob->file_len, SEEK_SET) < 0)
		return -errno;
	r = fs_write_all(ob->fd, hdr, sizeof(hdr));
	if (r >= 0)
		r = fs_write_all(ob->fd, buf, len);
	if (r >= 0 && fdatasync(ob->fd) < 0)
		r = -errno;
	if (r < 0) {
		/* Leave no partial record behind for the next append to follow. */
		(void)ftruncate(ob->fd, ob->file_len);
		return r;
	}
	*ret_off = ob->file_len;
	ob->file_len += (off_t)(sizeof(hdr) + len);
	return 0;
}

/* Read the records of the file into items; cut a torn or corrupt tail. */
static int load(struct outbox *ob, size_t *ret_torn)
{
	struct stat st;
	uint8_t *data = NULL;
	size_t off = 0, size;
	int r = 0;

	if (fstat(ob->fd, &st) < 0)
		return -errno;
	size = (size_t)st.st_size;
	if (size == 0)
		return 0;
	data = malloc(size);
	if (!data)
		return -ENOMEM;
	if (pread(ob->fd, data, size, 0) != (ssize_t)size) {
		r = errno ? -errno : -EIO;
		goto out;
	}
	while (size - off >= REC_HEADER) {
		size_t len = get_u32(data + off);
		uint8_t *copy;

		if (len > RPC_MAX_MESSAGE || size - off - REC_HEADER < len ||
		    util_crc32(0, data + off + REC_HEADER, len) != get_u32(data + off + 4))
			break;
		copy = malloc(len ? len : 1);
		if (!copy || items_grow(ob) < 0) {
			free(copy);
			r = -ENOMEM;
			goto out;
		}
		memcpy(copy, data + off + REC_HEADER, len);
		ob->items[ob->n++] = (struct outbox_item){copy, len, 0, (off_t)off};
		ob->bytes += len;
		off += REC_HEADER + len;
	}
	if (off != size) {
		if (ret_torn)
			*ret_torn = size - off;
		if (ftruncate(ob->fd, (off_t)off) < 0) {
			r = -errno;
			goto out;
		}
	}
	ob->file_len = (off_t)off;
out:
	free(data);
	return r;
}

int outbox_open(const char *state_dir, size_t max_bytes, struct outbox **ret, size_t *ret_torn,
		char *err, size_t errlen)
{
	struct outbox *ob = calloc(1, sizeof(*ob));
	int r = 0;

	if (!ob)
		return -ENOMEM;
	pthread_mutex_init(&ob->lock, NULL);
	pthread_cond_init(&ob->room, NULL);
	ob->fd = -1;
	ob->full_logged_ms = INT64_MIN / 2;
	ob->max_bytes = max_bytes ? max_bytes : OUTBOX_MAX_BYTES;
	if (ret_torn)
		*ret_torn = 0;
	if (state_dir) {
		ob->path = fs_path_join(state_dir, OUTBOX_FILE);
		if (!ob->path) {
			r = -ENOMEM;
			goto fail;
		}
		ob->fd = open(ob->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
		if (ob->fd < 0) {
			r = -errno;
			snprintf(err, errlen, "%s: %s", ob->path, ry_strerror(r));
			goto fail;
		}
		r = load(ob, ret_torn);
		if (r < 0) {
			snprintf(err, errlen, "%s: %s", ob->path, ry_strerror(r));
			goto fail;
		}
	}
	*ret = ob;
	return 0;
fail:
	outbox_free(ob);
	return r;
}

void outbox_free(struct outbox *ob)
{
	if (!ob)
		return;
	for (size_t i = 0; i < ob->n; i++)
		free(ob->items[i].buf);
	free(ob->items);
	if (ob->fd >= 0)
		close(ob->fd);
	free(ob->path);
	pthread_mutex_destroy(&ob->lock);
	pthread_cond_destroy(&ob->room);
	free(ob);
}

int outbox_push(struct outbox *ob, const Railyard__V1__AgentMessage *m)
{
	struct outbox_item it = {.file_off = -1};
	int r;

	r = rpc_pack(&m->base, &it.buf, &it.len);
	if (r < 0)
		return r;
	pthread_mutex_lock(&ob->lock);
	/* Back-pressure: wait until the controller has acknowledged enough. A message larger
	 * than the whole bound goes in alone. */
	if (!ob->closed && ob->n > 0 && ob->bytes + it.len > ob->max_bytes &&
	    util_now_mono_ms() - ob->full_logged_ms >= 10000) {
		ob->full_logged_ms = util_now_mono_ms();
		log_info(
			"outbox: full (%zu messages, %zu bytes): results wait for the controller's "
			"acknowledgements",
			ob->n, ob->bytes);
	}
	while (!ob->closed && ob->n > 0 && ob->bytes + it.len > ob->max_bytes)
		pthread_cond_wait(&ob->room, &ob->lock);
	if (ob->closed) {
		r = -ECANCELED;
		goto fail;
	}
	r = items_grow(ob);
	if (r < 0)
		goto fail;
	if (ob->fd >= 0) {
		r = append_record(ob, it.buf, it.len, &it.file_off);
		if (r < 0 && !ob->write_failed) {
			ob->write_failed = true;
			log_error("outbox: %s not written (%s): keeping messages in memory only "
				  "until "
				  "it can be",
				  ob->path, ry_strerror(r));
		} else if (r >= 0 && ob->write_failed) {
			ob->write_failed = false;
			log_info("outbox: %s written again", ob->path);
		}
	}
	ob->items[ob->n++] = it;
	ob->bytes += it.len;
	pthread_mutex_unlock(&ob->lock);
	return 0;
fail:
	pthread_mutex_unlock(&ob->lock);
	free(it.buf);
	return r;
}

void outbox_close(struct outbox *ob)
{
	pthread_mutex_lock(&ob->lock);
	ob->closed = true;
	pthread_cond_broadcast(&ob->room);
	pthread_mutex_unlock(&ob->lock);
}

void outbox_flush(struct outbox *ob, int64_t (*send)(void *ud, Railyard__V1__AgentMessage *m),
		  void *ud)
{
	pthread_mutex_lock(&ob->lock);
	for (size_t i = 0; i < ob->n; i++) {
		struct outbox_item *it = &ob->items[i];
		ProtobufCMessage *m = NULL;
		int64_t seq;

		if (it->sent_seq)
			continue;
		if (rpc_unpack(&railyard__v1__agent_message__descriptor, it->buf, it->len, &m) < 0)
			break; /* our own bytes: cannot happen short of memory corruption */
		seq = send(ud, (Railyard__V1__AgentMessage *)m);
		protobuf_c_message_free_unpacked(m, NULL);
		if (seq < 0)
			break;
		it->sent_seq = seq;
	}
	pthread_mutex_unlock(&ob->lock);
}

/* Rewrite the file with the live records only. Caller holds the lock. */
static void compact(struct outbox *ob)
{
	char *tmp = NULL;
	off_t len = 0;
	int fd = -1, r = 0;

	if (asprintf(&tmp, "%s.compact", ob->path) < 0)
		return;
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0)
		goto fail;
	for (size_t i = 0; i < ob->n && r >= 0; i++) {
		uint8_t hdr[REC_HEADER];

		put_u32(hdr, (uint32_t)ob->items[i].len);
		put_u32(hdr + 4, util_crc32(0, ob->items[i].buf, ob->items[i].len));
		r = fs_write_all(fd, hdr, sizeof(hdr));
		if (r >= 0)
			r = fs_write_all(fd, ob->items[i].buf, ob->items[i].len);
		ob->items[i].file_off = len;
		len += (off_t)(REC_HEADER + ob->items[i].len);
	}
	if (r < 0 || fsync(fd) < 0 || rename(tmp, ob->path) < 0)
		goto fail;
	(void)fs_sync_parent(ob->path);
	close(ob->fd);
	ob->fd = fd;
	ob->file_len = len;
	free(tmp);
	return;
fail:
	/* The old file stays valid: it only keeps its acknowledged prefix a while longer. */
	log_warn("outbox: compacting %s failed: %s", ob->path, ry_strerror(-errno));
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(tmp);
	/* Offsets were rewritten for the new file: the old file's live part starts at the end
	 * minus the live bytes. */
	len = ob->file_len;
	for (size_t i = ob->n; i-- > 0;) {
		len -= (off_t)(REC_HEADER + ob->items[i].len);
		ob->items[i].file_off = len;
	}
}

void outbox_acked(struct outbox *ob, uint64_t seq)
{
	size_t k = 0;

	pthread_mutex_lock(&ob->lock);
	for (size_t i = 0; i < ob->n; i++) {
		if (ob->items[i].sent_seq && (uint64_t)ob->items[i].sent_seq <= seq) {
			ob->bytes -= ob->items[i].len;
			free(ob->items[i].buf);
			continue;
		}
		ob->items[k++] = ob->items[i];
	}
	if (k != ob->n) {
		ob->n = k;
		pthread_cond_broadcast(&ob->room);
		if (ob->fd >= 0 && ob->n == 0) {
			if (ftruncate(ob->fd, 0) == 0)
				ob->file_len = 0;
		} else if (ob->fd >= 0 && ob->items[0].file_off >= COMPACT_MIN &&
			   ob->items[0].file_off > ob->file_len - ob->items[0].file_off) {
			compact(ob);
		}
	}
	pthread_mutex_unlock(&ob->lock);
}

void outbox_resume(struct outbox *ob, uint64_t last_committed)
{
	outbox_acked(ob, last_committed);
	pthread_mutex_lock(&ob->lock);
	for (size_t i = 0; i < ob->n; i++)
		ob->items[i].sent_seq = 0;
	pthread_mutex_unlock(&ob->lock);
}

int outbox_wait_empty(struct outbox *ob, int64_t timeout_ms)
{
	struct timespec until;
	int r = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(timeout_ms / 1000);
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&ob->lock);
	while (ob->n > 0 && !ob->closed && r == 0)
		r = pthread_cond_timedwait(&ob->room, &ob->lock, &until);
	r = ob->closed ? -ECANCELED : ob->n == 0 ? 1 : 0;
	pthread_mutex_unlock(&ob->lock);
	return r;
}

bool outbox_pending(struct outbox *ob)
{
	bool p = false;

	pthread_mutex_lock(&ob->lock);
	for (size_t i = 0; i < ob->n && !p; i++)
		p = ob->items[i].sent_seq == 0;
	pthread_mutex_unlock(&ob->lock);
	return p;
}

void outbox_stats(struct outbox *ob, size_t *ret_n, size_t *ret_bytes)
{
	pthread_mutex_lock(&ob->lock);
	if (ret_n)
		*ret_n = ob->n;
	if (ret_bytes)
		*ret_bytes = ob->bytes;
	pthread_mutex_unlock(&ob->lock);
}
