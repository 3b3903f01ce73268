/* The maintenance pass's questions to the workload manager (maint_wlm.h), answered on a thread
 * of its own: a table of (cluster, host) entries, each asked again once its answer was read. */
#include "controller/maint/maint_wlm.h"

#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"
#include "controller/session.h"
#include "controller/state.h"
#include "controller/wlm/wlm.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Entries not asked about for this long are dropped (the node left draining). */
#define FORGET_MS (10 * 60 * 1000)
/* At most this many nodes asked about at once (a batch's nodes). */
#define ENTRIES_MAX 4096

struct entry {
	char cluster[65], host[256];
	bool asked;	     /* a question waits for the thread */
	int64_t asked_ms;    /* when the answer being made (or last made) was asked for */
	int64_t answered_ms; /* when the last answer's question was asked; 0: none */
	int64_t read_ms;     /* when the pass last wanted it */
	int r;		     /* the last answer: 0 or an error */
	size_t n;
	char ids[256], why[256];
};

struct maint_wlm {
	struct ctl_server *srv;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool stop;
	struct entry *v;
	size_t n, cap;
};

/* Ask the WLM about one node (no lock held). */
static void ask(struct maint_wlm *w, const char *cluster, const char *host, struct entry *out)
{
	struct wlm_binding *b = NULL;
	struct wlm_node_state ns;
	char name[WLM_NAME_MAX + 1];
	int r = wlm_binding_load(ctl_server_state(w->srv)->store, cluster, &b);

	memset(&ns, 0, sizeof(ns));
	out->n = 0;
	out->ids[0] = out->why[0] = '\0';
	if (r == -RY_E_NOT_FOUND) {
		out->r = 0; /* bound to no WLM: no job */
		return;
	}
	if (r < 0) {
		snprintf(out->why, sizeof(out->why), "reading the binding: %s", ry_strerror(r));
		out->r = r;
		return;
	}
	r = wlm_node_name(b, host, name, sizeof(name));
	if (r < 0)
		snprintf(out->why, sizeof(out->why), "%.200s maps to no legal node name", host);
	else
		r = wlm_query(b, name, true, &ns, out->why, sizeof(out->why));
	for (size_t i = 0; r >= 0 && i < ns.njobs; i++) {
		size_t len = strlen(out->ids);

		if (len + strlen(ns.jobs[i].id) + 2 > sizeof(out->ids))
			break; /* the count says how many; the ids shown are the first ones */
		snprintf(out->ids + len, sizeof(out->ids) - len, "%s%s", len ? "," : "",
			 ns.jobs[i].id);
	}
	out->n = r >= 0 ? ns.njobs : 0;
	out->r = r < 0 ? r : 0;
	wlm_node_state_done(&ns);
	wlm_binding_free(b);
}

static void *run(void *ud)
{
	struct maint_wlm *w = ud;

	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		struct entry *e = NULL, got;
		char cluster[65], host[256];
		int64_t asked_ms;

		for (size_t i = 0; i < w->n && !e; i++)
			if (w->v[i].asked)
				e = &w->v[i];
		if (!e) {
			pthread_cond_wait(&w->cond, &w->lock);
			continue;
		}
		e->asked = false;
		asked_ms = util_now_unix_ms();
		snprintf(cluster, sizeof(cluster), "%s", e->cluster);
		snprintf(host, sizeof(host), "%s", e->host);
		pthread_mutex_unlock(&w->lock);
		ask(w, cluster, host, &got);
		pthread_mutex_lock(&w->lock);
		/* The table may have moved meanwhile: find the entry again. */
		for (size_t i = 0; i < w->n; i++)
			if (strcmp(w->v[i].cluster, cluster) == 0 &&
			    strcmp(w->v[i].host, host) == 0) {
				w->v[i].r = got.r;
				w->v[i].n = got.n;
				memcpy(w->v[i].ids, got.ids, sizeof(got.ids));
				memcpy(w->v[i].why, got.why, sizeof(got.why));
				w->v[i].answered_ms = asked_ms;
			}
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int maint_wlm_new(struct ctl_server *srv, struct maint_wlm **ret)
{
	struct maint_wlm *w = calloc(1, sizeof(*w));
	int r;

	if (!w)
		return -ENOMEM;
	w->srv = srv;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	r = -pthread_create(&w->thread, NULL, run, w);
	if (r < 0) {
		pthread_cond_destroy(&w->cond);
		pthread_mutex_destroy(&w->lock);
		free(w);
		return r;
	}
	*ret = w;
	return 0;
}

void maint_wlm_free(struct maint_wlm *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w->v);
	free(w);
}

int maint_wlm_jobs(struct maint_wlm *w, const char *cluster, const char *hostname, int64_t after_ms,
		   char *ids, size_t len, size_t *ret_n, char *why, size_t len_why)
{
	int64_t now = util_now_unix_ms();
	struct entry *e = NULL;
	int r = -EAGAIN;

	if (!w || !cluster || !hostname || strlen(cluster) >= sizeof(e->cluster) ||
	    strlen(hostname) >= sizeof(e->host))
		return -EINVAL;
	pthread_mutex_lock(&w->lock);
	/* Forget what no one asked about for a while. O(entries), a batch's nodes. */
	for (size_t i = 0; i < w->n;)
		if (now - w->v[i].read_ms > FORGET_MS && !w->v[i].asked)
			w->v[i] = w->v[--w->n];
		else
			i++;
	for (size_t i = 0; i < w->n && !e; i++)
		if (strcmp(w->v[i].cluster, cluster) == 0 && strcmp(w->v[i].host, hostname) == 0)
			e = &w->v[i];
	if (!e) {
		if (w->n == w->cap) {
			size_t cap = w->cap ? w->cap * 2 : 16;
			struct entry *v =
				cap <= ENTRIES_MAX ? realloc(w->v, cap * sizeof(*v)) : NULL;

			if (!v) {
				pthread_mutex_unlock(&w->lock);
				return -ENOMEM;
			}
			w->v = v;
			w->cap = cap;
		}
		e = &w->v[w->n++];
		memset(e, 0, sizeof(*e));
		snprintf(e->cluster, sizeof(e->cluster), "%s", cluster);
		snprintf(e->host, sizeof(e->host), "%s", hostname);
	}
	e->read_ms = now;
	if (e->answered_ms && e->answered_ms >= after_ms) {
		r = e->r;
		snprintf(ids, len, "%s", e->r < 0 ? "" : e->ids);
		*ret_n = e->r < 0 ? 0 : e->n;
		snprintf(why, len_why, "%s", e->why);
	}
	/* Ask again (once at a time): the pass reads a fresh answer on a later run. */
	if (!e->asked) {
		e->asked = true;
		pthread_cond_signal(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	return r;
}
