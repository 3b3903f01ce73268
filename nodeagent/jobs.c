/* Agent plan jobs: a FIFO run by one worker thread; results go to the outbox. */
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

struct job {
	char id[65];
	json_t *plan; /* owned until the worker takes it */
	bool check_mode;
	enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE } state;
};

struct agent_jobs {
	const char *sysroot, *state_dir;
	struct outbox *ob;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job jobs[AGENT_JOBS_MAX]; /* ring: the oldest finished job makes room */
	size_t n;
	bool stop;
	pthread_t worker;
};

static void push_done(struct agent_jobs *j, const char *id, const char *status, const char *message,
		      const uint32_t counts[4])
{
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__ApplyDone ad = RAILYARD__V1__APPLY_DONE__INIT;

	ad.deployment_id = (char *)id;
	ad.status = (char *)status;
	ad.message = (char *)(message ? message : "");
	if (counts) {
		ad.ok = counts[0];
		ad.changed = counts[1];
		ad.failed = counts[2];
		ad.skipped = counts[3];
	}
	m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_APPLY_DONE;
	m.apply_done = &ad;
	if (outbox_push(j->ob, &m) < 0)
		log_error("plan %s: its end could not be queued (outbox full)", id);
}

struct step_ctx {
	struct agent_jobs *j;
	const char *id;
};

static void on_step(const struct apply_step_result *r, size_t index, size_t total, void *ud)
{
	struct step_ctx *c = ud;
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__StepEvent se = RAILYARD__V1__STEP_EVENT__INIT;

	se.deployment_id = (char *)c->id;
	se.index = (uint32_t)index;
	se.name = r->name;
	se.status = (char *)apply_status_name(r->status);
	se.diff = r->diff;
	se.message = r->message;
	se.duration_ms = r->duration_ms;
	m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_STEP_EVENT;
	m.step_event = &se;
	if (outbox_push(c->j->ob, &m) < 0)
		log_error("plan %s: step %zu result could not be queued (outbox full)", c->id,
			  index);
	log_info("plan %s: step %zu/%zu %s: %s%s%s", c->id, index + 1, total, r->name,
		 apply_status_name(r->status), r->message[0] ? ": " : "", r->message);
}

static void run_job(struct agent_jobs *j, const char *id, bool check_mode, json_t *plan)
{
	struct apply_summary sum = {0};
	struct apply_opts o = {0};
	struct step_ctx ctx = {j, id};
	json_t *facts = NULL;
	uint32_t counts[4];
	int r;

	/* Fresh facts: the asserts judge the node as it is now. */
	if (facts_collect(j->sysroot, &facts) < 0)
		facts = NULL;
	o.sysroot = j->sysroot;
	o.check_mode = check_mode;
	o.facts = facts;
	o.state_dir = j->state_dir;
	o.on_step = on_step;
	o.userdata = &ctx;
	log_info("plan %s: running%s", id, check_mode ? " in check mode" : "");
	r = apply_plan(plan, &o, &sum);
	if (r < 0) {
		char msg[128];

		snprintf(msg, sizeof(msg), "plan refused: %s", ry_strerror(r));
		push_done(j, id, "failed", msg, NULL);
		log_warn("plan %s: %s", id, msg);
	} else {
		counts[0] = (uint32_t)sum.n_ok;
		counts[1] = (uint32_t)sum.n_changed;
		counts[2] = (uint32_t)sum.n_failed;
		counts[3] = (uint32_t)sum.n_skipped;
		push_done(j, id, sum.n_failed ? "failed" : "succeeded",
			  sum.stopped ? "stopped at a failed step" : NULL, counts);
		log_info("plan %s: %s (ok %zu, changed %zu, failed %zu, skipped %zu)", id,
			 sum.n_failed ? "failed" : "succeeded", sum.n_ok, sum.n_changed,
			 sum.n_failed, sum.n_skipped);
	}
	apply_summary_done(&sum);
	json_decref(facts);
}

static void *worker_main(void *arg)
{
	struct agent_jobs *j = arg;

	pthread_mutex_lock(&j->lock);
	for (;;) {
		struct job *next = NULL;
		char id[sizeof(next->id)];
		bool check;
		json_t *plan;

		for (size_t i = 0; i < j->n && !next; i++)
			if (j->jobs[i].state == JOB_QUEUED)
				next = &j->jobs[i];
		if (!next) {
			if (j->stop)
				break;
			pthread_cond_wait(&j->cond, &j->lock);
			continue;
		}
		next->state = JOB_RUNNING;
		plan = next->plan;
		next->plan = NULL;
		check = next->check_mode;
		memcpy(id, next->id, sizeof(id));
		pthread_mutex_unlock(&j->lock);
		run_job(j, id, check, plan);
		json_decref(plan);
		pthread_mutex_lock(&j->lock);
		/* Submissions may have moved the table meanwhile: find the job again. */
		for (size_t i = 0; i < j->n; i++)
			if (strcmp(j->jobs[i].id, id) == 0)
				j->jobs[i].state = JOB_DONE;
	}
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

int agent_jobs_new(const char *sysroot, const char *state_dir, struct outbox *ob,
		   struct agent_jobs **ret)
{
	struct agent_jobs *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->sysroot = sysroot;
	j->state_dir = state_dir;
	j->ob = ob;
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
	for (size_t i = 0; i < j->n; i++) {
		if (j->jobs[i].state == JOB_QUEUED) {
			json_decref(j->jobs[i].plan);
			j->jobs[i].plan = NULL;
			j->jobs[i].state = JOB_DONE;
		}
	}
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
	pthread_join(j->worker, NULL);
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->cond);
	free(j);
}

int agent_jobs_submit(struct agent_jobs *j, const char *deployment_id, const char *plan_json,
		      bool check_mode)
{
	struct job *jb = NULL;
	json_error_t err;
	json_t *plan = NULL;
	char msg[256];

	if (!deployment_id || !deployment_id[0] || strlen(deployment_id) >= sizeof(jb->id))
		return -RY_E_INVALID;
	pthread_mutex_lock(&j->lock);
	for (size_t i = 0; i < j->n; i++) {
		if (strcmp(j->jobs[i].id, deployment_id) == 0) {
			pthread_mutex_unlock(&j->lock);
			return 1;
		}
	}
	if (j->n < AGENT_JOBS_MAX) {
		jb = &j->jobs[j->n++];
	} else {
		/* Forget the oldest finished job; its results were queued long ago. */
		for (size_t i = 0; i < j->n; i++) {
			if (j->jobs[i].state == JOB_DONE) {
				memmove(&j->jobs[i], &j->jobs[i + 1],
					(j->n - i - 1) * sizeof(j->jobs[0]));
				jb = &j->jobs[j->n - 1];
				break;
			}
		}
	}
	if (!jb) {
		pthread_mutex_unlock(&j->lock);
		return -ENOBUFS;
	}
	memset(jb, 0, sizeof(*jb));
	snprintf(jb->id, sizeof(jb->id), "%s", deployment_id);
	jb->check_mode = check_mode;
	if (strlen(plan_json) <= JOB_PLAN_MAX)
		plan = json_loads(plan_json, JSON_REJECT_DUPLICATES, &err);
	if (!json_is_object(plan)) {
		snprintf(msg, sizeof(msg), "plan is not a JSON object%s%s", plan ? "" : ": ",
			 plan ? "" : err.text);
		json_decref(plan);
		jb->state = JOB_DONE;
		pthread_mutex_unlock(&j->lock);
		push_done(j, deployment_id, "failed", msg, NULL);
		return 0;
	}
	jb->plan = plan;
	jb->state = JOB_QUEUED;
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
	return 0;
}

bool agent_jobs_busy(struct agent_jobs *j)
{
	bool busy = false;

	pthread_mutex_lock(&j->lock);
	for (size_t i = 0; i < j->n && !busy; i++)
		busy = j->jobs[i].state != JOB_DONE;
	pthread_mutex_unlock(&j->lock);
	return busy;
}
