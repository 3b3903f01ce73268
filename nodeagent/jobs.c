/* Agent plan jobs: a FIFO run by one worker thread, with results kept until acknowledged. */
#include "nodeagent/jobs.h"
#include "nodeagent/apply/apply.h"
#include "nodeagent/facts/facts.h"
#include "common/log/log.h"
#include "common/util/error.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Largest plan accepted (the RPC layer bounds messages at 4 MiB already). */
#define JOB_PLAN_MAX (4 * 1024 * 1024)

struct job_step {
	char *name, *status, *diff, *message;
	uint32_t index;
	int64_t duration_ms;
	int64_t sent_seq; /* 0: not sent in this session */
};

struct job {
	char id[65];
	json_t *plan; /* NULL once run (or when invalid) */
	bool check_mode;
	enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE } state;
	struct job_step *steps;
	size_t n_steps, cap_steps;
	char *done_status, *done_message;
	uint32_t counts[4];
	int64_t done_seq; /* seq of the ApplyDone message, 0 while unsent */
	bool acked;	  /* the controller processed ApplyDone */
};

struct agent_jobs {
	const char *sysroot, *state_dir;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *jobs[AGENT_JOBS_MAX]; /* oldest first */
	size_t n;
	bool stop;
	pthread_t worker;
};

static void job_free(struct job *jb)
{
	if (!jb)
		return;
	for (size_t i = 0; i < jb->n_steps; i++) {
		free(jb->steps[i].name);
		free(jb->steps[i].status);
		free(jb->steps[i].diff);
		free(jb->steps[i].message);
	}
	free(jb->steps);
	free(jb->done_status);
	free(jb->done_message);
	json_decref(jb->plan);
	free(jb);
}

static struct job *job_find(struct agent_jobs *j, const char *id)
{
	for (size_t i = 0; i < j->n; i++)
		if (strcmp(j->jobs[i]->id, id) == 0)
			return j->jobs[i];
	return NULL;
}

/* Called with j->lock held. */
static void job_finish(struct job *jb, const char *status, const char *message,
		       const uint32_t counts[4])
{
	free(jb->done_status);
	free(jb->done_message);
	jb->done_status = strdup(status);
	jb->done_message = strdup(message ? message : "");
	if (counts)
		memcpy(jb->counts, counts, sizeof(jb->counts));
	jb->state = JOB_DONE;
}

struct step_ctx {
	struct agent_jobs *j;
	struct job *jb;
};

static void on_step(const struct apply_step_result *r, size_t index, size_t total, void *ud)
{
	struct step_ctx *c = ud;
	struct job_step *st;

	pthread_mutex_lock(&c->j->lock);
	if (c->jb->n_steps == c->jb->cap_steps) {
		size_t ncap = c->jb->cap_steps ? c->jb->cap_steps * 2 : 16;
		struct job_step *ns = realloc(c->jb->steps, ncap * sizeof(*ns));

		if (!ns) {
			pthread_mutex_unlock(&c->j->lock);
			log_error("plan %s: out of memory recording step %zu", c->jb->id, index);
			return;
		}
		c->jb->steps = ns;
		c->jb->cap_steps = ncap;
	}
	st = &c->jb->steps[c->jb->n_steps++];
	memset(st, 0, sizeof(*st));
	st->name = strdup(r->name);
	st->status = strdup(apply_status_name(r->status));
	st->diff = strdup(r->diff);
	st->message = strdup(r->message);
	st->index = (uint32_t)index;
	st->duration_ms = r->duration_ms;
	pthread_mutex_unlock(&c->j->lock);
	log_info("plan %s: step %zu/%zu %s: %s%s%s", c->jb->id, index + 1, total, r->name,
		 apply_status_name(r->status), r->message[0] ? ": " : "", r->message);
}

static void run_job(struct agent_jobs *j, struct job *jb, json_t *plan)
{
	struct apply_summary sum = {0};
	struct apply_opts o = {0};
	struct step_ctx ctx = {j, jb};
	json_t *facts = NULL;
	uint32_t counts[4];
	int r;

	/* Fresh facts: the asserts judge the node as it is now. */
	if (facts_collect(j->sysroot, &facts) < 0)
		facts = NULL;
	o.sysroot = j->sysroot;
	o.check_mode = jb->check_mode;
	o.facts = facts;
	o.state_dir = j->state_dir;
	o.on_step = on_step;
	o.userdata = &ctx;
	log_info("plan %s: running%s", jb->id, jb->check_mode ? " in check mode" : "");
	r = apply_plan(plan, &o, &sum);
	pthread_mutex_lock(&j->lock);
	if (r < 0) {
		char msg[128];

		snprintf(msg, sizeof(msg), "plan refused: %s", ry_strerror(r));
		job_finish(jb, "failed", msg, NULL);
	} else {
		counts[0] = (uint32_t)sum.n_ok;
		counts[1] = (uint32_t)sum.n_changed;
		counts[2] = (uint32_t)sum.n_failed;
		counts[3] = (uint32_t)sum.n_skipped;
		job_finish(jb, sum.n_failed ? "failed" : "succeeded",
			   sum.stopped ? "stopped at a failed step" : NULL, counts);
	}
	pthread_mutex_unlock(&j->lock);
	log_info("plan %s: %s (ok %zu, changed %zu, failed %zu, skipped %zu)", jb->id,
		 r < 0		? "refused"
		 : sum.n_failed ? "failed"
				: "succeeded",
		 sum.n_ok, sum.n_changed, sum.n_failed, sum.n_skipped);
	apply_summary_done(&sum);
	json_decref(facts);
}

static void *worker_main(void *arg)
{
	struct agent_jobs *j = arg;

	pthread_mutex_lock(&j->lock);
	for (;;) {
		struct job *next = NULL;
		json_t *plan;

		for (size_t i = 0; i < j->n && !next; i++)
			if (j->jobs[i]->state == JOB_QUEUED)
				next = j->jobs[i];
		if (!next) {
			if (j->stop)
				break;
			pthread_cond_wait(&j->cond, &j->lock);
			continue;
		}
		next->state = JOB_RUNNING;
		plan = next->plan;
		next->plan = NULL;
		pthread_mutex_unlock(&j->lock);
		/* Jobs are only freed when done, so next stays valid while it runs. */
		run_job(j, next, plan);
		json_decref(plan);
		pthread_mutex_lock(&j->lock);
	}
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

int agent_jobs_new(const char *sysroot, const char *state_dir, struct agent_jobs **ret)
{
	struct agent_jobs *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->sysroot = sysroot;
	j->state_dir = state_dir;
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->cond, NULL);
	if (pthread_create(&j->worker, NULL, worker_main, j) != 0) {
		pthread_mutex_destroy(&j->lock);
		pthread_cond_destroy(&j->cond);
		free(j);
		return -EAGAIN;
	}
	*ret = j;
	return 0;
}

void agent_jobs_free(struct agent_jobs *j)
{
	if (!j)
		return;
	pthread_mutex_lock(&j->lock);
	j->stop = true;
	/* Queued plans are dropped; the running one ends (a step is never abandoned half-way). */
	for (size_t i = 0; i < j->n; i++)
		if (j->jobs[i]->state == JOB_QUEUED)
			job_finish(j->jobs[i], "failed", "agent stopped", NULL);
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
	pthread_join(j->worker, NULL);
	for (size_t i = 0; i < j->n; i++)
		job_free(j->jobs[i]);
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->cond);
	free(j);
}

/* Make room: forget the oldest acknowledged job. Called with the lock held. */
static bool make_room(struct agent_jobs *j)
{
	if (j->n < AGENT_JOBS_MAX)
		return true;
	for (size_t i = 0; i < j->n; i++) {
		if (j->jobs[i]->state == JOB_DONE && j->jobs[i]->acked) {
			job_free(j->jobs[i]);
			memmove(&j->jobs[i], &j->jobs[i + 1], (j->n - i - 1) * sizeof(j->jobs[0]));
			j->n--;
			return true;
		}
	}
	return false;
}

static void job_unsend(struct job *jb)
{
	for (size_t i = 0; i < jb->n_steps; i++)
		jb->steps[i].sent_seq = 0;
	jb->done_seq = 0;
}

int agent_jobs_submit(struct agent_jobs *j, const char *deployment_id, const char *plan_json,
		      bool check_mode)
{
	struct job *jb;
	json_error_t err;
	json_t *plan = NULL;
	int r = 0;

	if (!deployment_id || !deployment_id[0] || strlen(deployment_id) >= sizeof(jb->id))
		return -RY_E_INVALID;
	pthread_mutex_lock(&j->lock);
	jb = job_find(j, deployment_id);
	if (jb) {
		/* Seen before: report again, never run twice. */
		job_unsend(jb);
		jb->acked = false;
		r = 1;
		goto out;
	}
	if (!make_room(j)) {
		r = -ENOBUFS;
		goto out;
	}
	jb = calloc(1, sizeof(*jb));
	if (!jb) {
		r = -ENOMEM;
		goto out;
	}
	snprintf(jb->id, sizeof(jb->id), "%s", deployment_id);
	jb->check_mode = check_mode;
	j->jobs[j->n++] = jb;
	if (strlen(plan_json) <= JOB_PLAN_MAX)
		plan = json_loads(plan_json, JSON_REJECT_DUPLICATES, &err);
	if (!json_is_object(plan)) {
		char msg[256];

		snprintf(msg, sizeof(msg), "plan is not a JSON object%s%s", plan ? "" : ": ",
			 plan ? "" : err.text);
		json_decref(plan);
		job_finish(jb, "failed", msg, NULL);
		goto out;
	}
	jb->plan = plan;
	jb->state = JOB_QUEUED;
	pthread_cond_signal(&j->cond);
out:
	pthread_mutex_unlock(&j->lock);
	return r;
}

bool agent_jobs_pending(struct agent_jobs *j)
{
	bool busy = false;

	pthread_mutex_lock(&j->lock);
	for (size_t i = 0; i < j->n && !busy; i++)
		busy = j->jobs[i]->state != JOB_DONE || !j->jobs[i]->done_seq;
	pthread_mutex_unlock(&j->lock);
	return busy;
}

void agent_jobs_flush(struct agent_jobs *j, const struct agent_jobs_sink *sink)
{
	pthread_mutex_lock(&j->lock);
	for (size_t i = 0; i < j->n; i++) {
		struct job *jb = j->jobs[i];

		if (jb->acked)
			continue;
		for (size_t k = 0; k < jb->n_steps; k++) {
			struct job_step *st = &jb->steps[k];
			struct agent_job_step ev = {jb->id,	    st->name,	 st->status,
						    st->diff,	    st->message, st->index,
						    st->duration_ms};
			int64_t seq;

			if (st->sent_seq)
				continue;
			seq = sink->step(sink->userdata, &ev);
			if (seq < 0)
				goto out;
			st->sent_seq = seq;
		}
		if (jb->state == JOB_DONE && !jb->done_seq) {
			struct agent_job_done ev = {
				jb->id,	       jb->done_status, jb->done_message, jb->counts[0],
				jb->counts[1], jb->counts[2],	jb->counts[3]};
			int64_t seq = sink->done(sink->userdata, &ev);

			if (seq < 0)
				goto out;
			jb->done_seq = seq;
		}
	}
out:
	pthread_mutex_unlock(&j->lock);
}

void agent_jobs_acked(struct agent_jobs *j, uint64_t seq)
{
	pthread_mutex_lock(&j->lock);
	for (size_t i = 0; i < j->n; i++)
		if (j->jobs[i]->done_seq && (uint64_t)j->jobs[i]->done_seq <= seq)
			j->jobs[i]->acked = true;
	pthread_mutex_unlock(&j->lock);
}

void agent_jobs_session_reset(struct agent_jobs *j)
{
	pthread_mutex_lock(&j->lock);
	for (size_t i = 0; i < j->n; i++)
		if (!j->jobs[i]->acked)
			job_unsend(j->jobs[i]);
	pthread_mutex_unlock(&j->lock);
}
