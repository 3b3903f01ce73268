/* A ring of recent events and the subscribers reading it. */
#include "controller/events.h"

#include "common/util/util.h"
#include "controller/scope.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct event {
	uint64_t id;
	char *cluster; /* NULL: of no cluster */
	char *text;    /* "id: N\nevent: TYPE\ndata: JSON\n\n" */
};

struct ctl_events_sub {
	struct ctl_events *ev;
	struct ctl_events_sub *next;
	uint64_t after;
	char *scope;
	void (*wake)(void *cls);
	void *cls;
	char *pending; /* what is left of the event being sent */
	size_t pending_off;
	int64_t last_write_ms;
};

struct ctl_events {
	pthread_mutex_t lock;
	struct event ring[CTL_EVENTS_KEEP];
	uint64_t next_id; /* the id the next event gets (ids start at 1) */
	struct ctl_events_sub *subs;
};

struct ctl_events *ctl_events_new(void)
{
	struct ctl_events *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return NULL;
	pthread_mutex_init(&ev->lock, NULL);
	ev->next_id = 1;
	return ev;
}

void ctl_events_free(struct ctl_events *ev)
{
	if (!ev)
		return;
	for (size_t i = 0; i < CTL_EVENTS_KEEP; i++) {
		free(ev->ring[i].cluster);
		free(ev->ring[i].text);
	}
	pthread_mutex_destroy(&ev->lock);
	free(ev);
}

/* Events emitted by this thread while it holds them (ctl_events_hold()). */
struct held_event {
	char *type, *cluster;
	json_t *data;
};
static __thread struct {
	bool on;
	struct held_event *v;
	size_t n, cap;
} held;

void ctl_events_hold(void)
{
	held.on = true;
}

size_t ctl_events_held(void)
{
	return held.n;
}

void ctl_events_drop(size_t mark)
{
	while (held.n > mark) {
		struct held_event *h = &held.v[--held.n];

		free(h->type);
		free(h->cluster);
		json_decref(h->data);
	}
}

void ctl_events_release(struct ctl_events *ev, bool publish)
{
	size_t n = held.n;

	held.on = false;
	if (!publish)
		ctl_events_drop(0);
	for (size_t i = 0; i < n && publish; i++) {
		struct held_event *h = &held.v[i];

		ctl_events_emit(ev, h->type, h->cluster, h->data);
		free(h->type);
		free(h->cluster);
	}
	held.n = 0;
	free(held.v);
	held.v = NULL;
	held.cap = 0;
}

void ctl_events_emit(struct ctl_events *ev, const char *type, const char *cluster, json_t *data)
{
	struct event *e;
	char *json, *text = NULL, *cl = NULL;

	if (!ev || !data) {
		json_decref(data);
		return;
	}
	if (held.on) {
		struct held_event *h;

		if (held.n == held.cap) {
			size_t cap = held.cap ? held.cap * 2 : 64;
			struct held_event *v = realloc(held.v, cap * sizeof(*v));

			if (!v) {
				json_decref(data);
				return;
			}
			held.v = v;
			held.cap = cap;
		}
		h = &held.v[held.n];
		h->type = strdup(type);
		h->cluster = cluster ? strdup(cluster) : NULL;
		h->data = data;
		if (!h->type || (cluster && !h->cluster)) {
			free(h->type);
			free(h->cluster);
			json_decref(data);
			return;
		}
		held.n++;
		return;
	}
	cl = cluster ? strdup(cluster) : NULL;
	if (cluster)
		json_object_set_new(data, "cluster", json_string(cluster));
	json_object_set_new(data, "at_ms", json_integer(util_now_unix_ms()));
	json = json_dumps(data, JSON_COMPACT);
	json_decref(data);
	pthread_mutex_lock(&ev->lock);
	if (json && asprintf(&text, "id: %llu\nevent: %s\ndata: %s\n\n",
			     (unsigned long long)ev->next_id, type, json) > 0) {
		e = &ev->ring[ev->next_id % CTL_EVENTS_KEEP];
		free(e->cluster);
		free(e->text);
		e->id = ev->next_id++;
		e->cluster = cl;
		e->text = text;
		cl = NULL;
		for (struct ctl_events_sub *s = ev->subs; s; s = s->next)
			s->wake(s->cls);
	} else {
		free(text);
	}
	pthread_mutex_unlock(&ev->lock);
	free(json);
	free(cl);
}

uint64_t ctl_events_last_id(struct ctl_events *ev)
{
	uint64_t id;

	pthread_mutex_lock(&ev->lock);
	id = ev->next_id - 1;
	pthread_mutex_unlock(&ev->lock);
	return id;
}

struct ctl_events_sub *ctl_events_subscribe(struct ctl_events *ev, uint64_t after,
					    const char *scope_json, void (*wake)(void *cls),
					    void *cls)
{
	struct ctl_events_sub *s = calloc(1, sizeof(*s));

	if (!s || (scope_json && !(s->scope = strdup(scope_json)))) {
		free(s);
		return NULL;
	}
	s->ev = ev;
	s->after = after;
	s->wake = wake;
	s->cls = cls;
	s->last_write_ms = util_now_mono_ms();
	pthread_mutex_lock(&ev->lock);
	s->next = ev->subs;
	ev->subs = s;
	pthread_mutex_unlock(&ev->lock);
	return s;
}

void ctl_events_unsubscribe(struct ctl_events_sub *sub)
{
	struct ctl_events *ev;

	if (!sub)
		return;
	ev = sub->ev;
	pthread_mutex_lock(&ev->lock);
	for (struct ctl_events_sub **pp = &ev->subs; *pp; pp = &(*pp)->next) {
		if (*pp == sub) {
			*pp = sub->next;
			break;
		}
	}
	pthread_mutex_unlock(&ev->lock);
	free(sub->pending);
	free(sub->scope);
	free(sub);
}

/* The next event for sub (its text copied into sub->pending), under the lock: true when one
 * was due. */
static bool next_event(struct ctl_events *ev, struct ctl_events_sub *sub)
{
	uint64_t oldest = ev->next_id > CTL_EVENTS_KEEP ? ev->next_id - CTL_EVENTS_KEEP : 1;

	if (sub->after >= ev->next_id) {
		/* An id this controller never gave: it restarted (ids start again at 1). */
		if (asprintf(
			    &sub->pending,
			    "id: %llu\nevent: reset\ndata: {\"reason\":\"the controller restarted; "
			    "event ids start again\"}\n\n",
			    (unsigned long long)(ev->next_id - 1)) < 0)
			sub->pending = NULL;
		sub->after = ev->next_id - 1;
		return sub->pending != NULL;
	}
	if (sub->after + 1 < oldest) {
		/* Gone from the ring: the client must refetch, then follow from the oldest. */
		if (asprintf(&sub->pending,
			     "id: %llu\nevent: reset\ndata: {\"reason\":\"events before %llu are "
			     "gone\"}\n\n",
			     (unsigned long long)(oldest - 1), (unsigned long long)oldest) < 0)
			sub->pending = NULL;
		sub->after = oldest - 1;
		return sub->pending != NULL;
	}
	while (sub->after + 1 < ev->next_id) {
		const struct event *e = &ev->ring[(sub->after + 1) % CTL_EVENTS_KEEP];

		sub->after = e->id;
		if (e->cluster && sub->scope && !ctl_scope_contains(sub->scope, e->cluster))
			continue;
		sub->pending = strdup(e->text);
		return sub->pending != NULL;
	}
	return false;
}

ssize_t ctl_events_read(struct ctl_events_sub *sub, char *buf, size_t max)
{
	struct ctl_events *ev = sub->ev;
	size_t n;

	if (!sub->pending) {
		pthread_mutex_lock(&ev->lock);
		next_event(ev, sub);
		pthread_mutex_unlock(&ev->lock);
		sub->pending_off = 0;
	}
	if (!sub->pending) {
		static const char keepalive[] = ": keepalive\n\n";

		if (util_now_mono_ms() - sub->last_write_ms < CTL_EVENTS_KEEPALIVE_MS ||
		    max < sizeof(keepalive) - 1)
			return 0;
		memcpy(buf, keepalive, sizeof(keepalive) - 1);
		sub->last_write_ms = util_now_mono_ms();
		return (ssize_t)(sizeof(keepalive) - 1);
	}
	n = strlen(sub->pending + sub->pending_off);
	if (n > max)
		n = max;
	memcpy(buf, sub->pending + sub->pending_off, n);
	sub->pending_off += n;
	if (!sub->pending[sub->pending_off]) {
		free(sub->pending);
		sub->pending = NULL;
	}
	sub->last_write_ms = util_now_mono_ms();
	return (ssize_t)n;
}
