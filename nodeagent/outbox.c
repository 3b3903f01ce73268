/* The agent's outbox: packed messages with the seq they were last sent under. */
#include "nodeagent/outbox.h"
#include "common/rpc/rpc.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct outbox_item {
	uint8_t *buf;
	size_t len;
	int64_t sent_seq; /* 0: not sent in this session */
};

struct outbox {
	pthread_mutex_t lock;
	struct outbox_item items[OUTBOX_MAX]; /* oldest first */
	size_t n;
};

int outbox_new(struct outbox **ret)
{
	struct outbox *ob = calloc(1, sizeof(*ob));

	if (!ob)
		return -ENOMEM;
	pthread_mutex_init(&ob->lock, NULL);
	*ret = ob;
	return 0;
}

void outbox_free(struct outbox *ob)
{
	if (!ob)
		return;
	for (size_t i = 0; i < ob->n; i++)
		free(ob->items[i].buf);
	pthread_mutex_destroy(&ob->lock);
	free(ob);
}

int outbox_push(struct outbox *ob, const Railyard__V1__AgentMessage *m)
{
	uint8_t *buf;
	size_t len;
	int r;

	r = rpc_pack(&m->base, &buf, &len);
	if (r < 0)
		return r;
	pthread_mutex_lock(&ob->lock);
	if (ob->n == OUTBOX_MAX) {
		pthread_mutex_unlock(&ob->lock);
		free(buf);
		return -ENOBUFS;
	}
	ob->items[ob->n].buf = buf;
	ob->items[ob->n].len = len;
	ob->items[ob->n].sent_seq = 0;
	ob->n++;
	pthread_mutex_unlock(&ob->lock);
	return 0;
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

void outbox_acked(struct outbox *ob, uint64_t seq)
{
	size_t k = 0;

	pthread_mutex_lock(&ob->lock);
	for (size_t i = 0; i < ob->n; i++) {
		if (ob->items[i].sent_seq && (uint64_t)ob->items[i].sent_seq <= seq) {
			free(ob->items[i].buf);
			continue;
		}
		ob->items[k++] = ob->items[i];
	}
	ob->n = k;
	pthread_mutex_unlock(&ob->lock);
}

void outbox_session_reset(struct outbox *ob)
{
	pthread_mutex_lock(&ob->lock);
	for (size_t i = 0; i < ob->n; i++)
		ob->items[i].sent_seq = 0;
	pthread_mutex_unlock(&ob->lock);
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
