/* The budget of event streams: one slot per open stream, each remembering its token and peer
 * address, counted by a scan when a stream asks for one. */
#include "controller/api/api_streams.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct slot {
	bool used;
	char token[40];
	char peer[64];
};

struct api_streams {
	pthread_mutex_t lock;
	struct api_streams_limits lim;
	size_t open;
	struct slot slots[]; /* lim.total */
};

struct api_streams *api_streams_new(const struct api_streams_limits *limits)
{
	struct api_streams_limits lim = limits ? *limits : (struct api_streams_limits){0};
	struct api_streams *s;

	if (!lim.total)
		lim.total = API_STREAMS_TOTAL_DEFAULT;
	if (!lim.per_token)
		lim.per_token = API_STREAMS_PER_TOKEN_DEFAULT;
	if (!lim.per_peer)
		lim.per_peer = API_STREAMS_PER_PEER_DEFAULT;
	s = calloc(1, sizeof(*s) + lim.total * sizeof(s->slots[0]));
	if (!s)
		return NULL;
	if (pthread_mutex_init(&s->lock, NULL) != 0) {
		free(s);
		return NULL;
	}
	s->lim = lim;
	return s;
}

void api_streams_free(struct api_streams *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->lock);
	free(s);
}

enum api_streams_refusal api_streams_take(struct api_streams *s, const char *token_id,
					  const char *peer, size_t *ret_slot)
{
	enum api_streams_refusal why = API_STREAMS_OK;
	unsigned by_token = 0, by_peer = 0;
	size_t free_slot = s->lim.total;

	token_id = token_id ? token_id : "";
	peer = peer ? peer : "";
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->lim.total; i++) {
		const struct slot *e = &s->slots[i];

		if (!e->used) {
			if (free_slot == s->lim.total)
				free_slot = i;
			continue;
		}
		by_token += token_id[0] && strcmp(e->token, token_id) == 0;
		by_peer += strcmp(e->peer, peer) == 0;
	}
	if (free_slot == s->lim.total)
		why = API_STREAMS_TOTAL;
	else if (by_token >= s->lim.per_token)
		why = API_STREAMS_PER_TOKEN;
	else if (by_peer >= s->lim.per_peer)
		why = API_STREAMS_PER_PEER;
	if (why == API_STREAMS_OK) {
		struct slot *e = &s->slots[free_slot];

		e->used = true;
		snprintf(e->token, sizeof(e->token), "%s", token_id);
		snprintf(e->peer, sizeof(e->peer), "%s", peer);
		s->open++;
		*ret_slot = free_slot;
	}
	pthread_mutex_unlock(&s->lock);
	return why;
}

void api_streams_give(struct api_streams *s, size_t slot)
{
	pthread_mutex_lock(&s->lock);
	if (slot < s->lim.total && s->slots[slot].used) {
		s->slots[slot].used = false;
		s->open--;
	}
	pthread_mutex_unlock(&s->lock);
}

size_t api_streams_open(struct api_streams *s)
{
	size_t n;

	pthread_mutex_lock(&s->lock);
	n = s->open;
	pthread_mutex_unlock(&s->lock);
	return n;
}
