/* Agent plan jobs: a FIFO run by one worker thread over the plan journals; results go to the
 * outbox. What a result says is written to the journal first and pushed second, so a result
 * can be pushed twice (after a crash between the two) but never lost; the controller takes an
 * identical report again as a no-op. */
#include "nodeagent/jobs.h"
#include "nodeagent/apply/apply.h"
#include "nodeagent/facts/facts.h"
#include "nodeagent/journal.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"
#include "proto/railyard/v1/limits.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How long a reboot waits for the controller to acknowledge the notice. */
#define REBOOT_NOTICE_WAIT_MS 10000

/* Largest plan accepted (the RPC layer bounds messages at 4 MiB already). */
#define JOB_PLAN_MAX (4 * 1024 * 1024)

enum job_kind {
	JOB_RUN,	 /* run from resume_from (0: a new plan) */
	JOB_INTERRUPTED, /* killed inside step `running`: report, never re-run */
	JOB_FINISH,	 /* every step recorded, the end not: report the end */
	JOB_REFUSED,	 /* recorded but not a JSON object: report it failed */
	JOB_REBOOTED,	 /* inside reboot step `running`, which rebooted: judge it, go on */
};

struct job {
	struct job *next;
	enum job_kind kind;
	struct journal_state st; /* the plan and what the journal recorded */
};

struct agent_jobs {
	const char *sysroot, *state_dir;
	struct outbox *ob;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *head, *tail;
	bool running; /* the worker has a job */
	bool stop;
	/* A plan handed the node over to a reboot: no further step or plan starts; the worker
	 * waits to be stopped (the init system stops the agent on the way down). */
	bool rebooting;
	const char *const *reboot_argv; /* borrowed; NULL: the default */
	pthread_t worker;
};

char *agent_clip(const char *text, size_t max)
{
	size_t len = strlen(text ? text : ""), keep;
	char *out;

	if (len <= max)
		return strdup(text ? text : "");
	keep = max > 64 ? max - 64 : 0;
	while (keep > 0 && text[keep - 1] != '\n')
		keep--;
	if (keep == 0)
		keep = max > 64 ? max - 64 : 0;
	if (asprintf(&out, "%.*s\n[... %zu of %zu bytes shown]\n", (int)keep, text, keep, len) < 0)
		return NULL;
	return out;
}

static bool stopping(struct agent_jobs *j)
{
	bool v;

	pthread_mutex_lock(&j->lock);
	v = j->stop;
	pthread_mutex_unlock(&j->lock);
	return v;
}

static int push_done(struct agent_jobs *j, const char *id, const char *status, const char *message,
		     const uint32_t counts[4])
{
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__ApplyDone ad = RAILYARD__V1__APPLY_DONE__INIT;
	char *msg = agent_clip(message, RY_PROTO_MESSAGE_MAX);
	int r;

	if (!msg)
		return -ENOMEM;
	ad.deployment_id = (char *)id;
	ad.status = (char *)status;
	ad.message = msg;
	if (counts) {
		ad.ok = counts[0];
		ad.changed = counts[1];
		ad.failed = counts[2];
		ad.skipped = counts[3];
	}
	m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_APPLY_DONE;
	m.apply_done = &ad;
	r = outbox_push(j->ob, &m);
	if (r < 0 && r != -ECANCELED)
		log_error("plan %s: its end could not be queued: %s", id, ry_strerror(r));
	free(msg);
	return r;
}

/* One step's event as journaled (already within the protocol's limits). */
static int push_step(struct agent_jobs *j, const char *id, size_t index,
		     const struct journal_step *s)
{
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__StepEvent se = RAILYARD__V1__STEP_EVENT__INIT;
	int r;

	se.deployment_id = (char *)id;
	se.index = (uint32_t)index;
	se.name = s->name;
	se.status = s->status;
	se.diff = s->diff;
	se.message = s->message;
	se.duration_ms = s->duration_ms;
	m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_STEP_EVENT;
	m.step_event = &se;
	r = outbox_push(j->ob, &m);
	if (r < 0 && r != -ECANCELED)
		log_error("plan %s: step %zu result could not be queued: %s", id, index,
			  ry_strerror(r));
	return r;
}

/* Record a step's outcome (journal first), then push it. The strings are clipped to the
 * protocol's limits first, so that what is journaled is exactly what is sent. */
static int record_step(struct agent_jobs *j, struct job *jb, struct journal *jn, size_t index,
		       const char *name, const char *status, const char *diff, const char *message,
		       int64_t duration_ms)
{
	struct journal_step *s = &jb->st.steps[index];
	int r;

	free(s->name);
	free(s->status);
	free(s->diff);
	free(s->message);
	s->name = strdup(name ? name : "");
	s->status = strdup(status);
	s->diff = agent_clip(diff, RY_PROTO_DIFF_MAX);
	s->message = agent_clip(message, RY_PROTO_MESSAGE_MAX);
	s->duration_ms = duration_ms;
	s->recorded = true;
	if (!s->name || !s->status || !s->diff || !s->message)
		return -ENOMEM;
	r = journal_step(jn, index, s->name, s->status, s->diff, s->message, duration_ms);
	if (r < 0)
		return r;
	return push_step(j, jb->st.id, index, s);
}

static void counts_of(const struct journal_state *st, uint32_t counts[4])
{
	static const char *const names[] = {"ok", "changed", "failed", "skipped"};

	memset(counts, 0, 4 * sizeof(uint32_t));
	for (size_t i = 0; i < st->n_steps; i++)
		for (int k = 0; k < 4; k++)
			if (st->steps[i].recorded && strcmp(st->steps[i].status, names[k]) == 0)
				counts[k]++;
}

/* The node's one-line answer to "what failed, and why": `step 4 "hca ports" failed: mlx5_3 port
 * 1 is DOWN (expected ACTIVE)` (the first failed step and its message's headline, with how
 * many more failed), NULL when none did or out of memory. Caller frees. */
static char *failed_step_says(const struct apply_summary *s)
{
	size_t first = s->n_steps, more = 0;
	char *out;

	for (size_t i = 0; i < s->n_done && i < s->n_steps; i++) {
		if (s->steps[i].status != APPLY_STATUS_FAILED)
			continue;
		if (first == s->n_steps)
			first = i;
		else
			more++;
	}
	if (first == s->n_steps)
		return NULL;
	{
		const struct apply_step_result *st = &s->steps[first];
		int head = (int)strcspn(st->message, "\n");

		char also[48] = "";

		if (more)
			snprintf(also, sizeof(also), " (and %zu more failed)", more);
		if (asprintf(&out, "step %zu \"%s\" failed%s%.*s%s", first + 1, st->name,
			     head ? ": " : "", head > 1024 ? 1024 : head, st->message, also) < 0)
			return NULL;
	}
	return out;
}

/* Report the end from what the journal holds, and record it. */
static void finish(struct agent_jobs *j, struct job *jb, struct journal *jn, const char *message)
{
	uint32_t counts[4];
	const char *status;

	counts_of(&jb->st, counts);
	status = counts[2] ? "failed" : "succeeded";
	if (push_done(j, jb->st.id, status, message, counts) < 0)
		return; /* shutting down: the journal has no end yet, the next start reports it */
	if (journal_done(jn, status, message) < 0)
		log_warn("plan %s: its end not journaled (it is sent again after a restart)",
			 jb->st.id);
	log_info("plan %s: %s (ok %u, changed %u, failed %u, skipped %u)%s%s", jb->st.id, status,
		 counts[0], counts[1], counts[2], counts[3], message ? ": " : "",
		 message ? message : "");
}

/* The plan cannot go on from step `at` (the agent was killed inside it, or progress cannot be
 * recorded): `at` is reported failed with why, the steps after it skipped, then the end. Steps
 * recorded before are pushed again (the controller ignores what it already has). */
static void end_early(struct agent_jobs *j, struct job *jb, struct journal *jn, size_t at,
		      const char *why)
{
	const char *at_name = json_string_value(
		json_object_get(json_array_get(json_object_get(jb->st.plan, "steps"), at), "name"));
	char msg[512];

	for (size_t i = 0; i < jb->st.n_steps; i++) {
		const char *name = json_string_value(json_object_get(
			json_array_get(json_object_get(jb->st.plan, "steps"), i), "name"));
		int r;

		if (jb->st.steps[i].recorded) {
			r = push_step(j, jb->st.id, i, &jb->st.steps[i]);
		} else if (i == at) {
			r = record_step(j, jb, jn, i, name, "failed", "", why, 0);
		} else {
			snprintf(msg, sizeof(msg), "not run: the plan ended at step %zu (\"%s\")",
				 at, at_name ? at_name : "?");
			r = record_step(j, jb, jn, i, name, "skipped", "", msg, 0);
		}
		if (r == -ECANCELED)
			return;
	}
	snprintf(msg, sizeof(msg), "step %zu (\"%s\"): %s", at, at_name ? at_name : "?", why);
	finish(j, jb, jn, msg);
}

struct run_ctx {
	struct agent_jobs *j;
	struct job *jb;
	struct journal *jn;
	int journal_err; /* a record that could not be written: the plan stops */
	bool stopped;	 /* the agent is stopping: the plan resumes at its next start */
};

static bool before_step(size_t index, void *ud)
{
	struct run_ctx *c = ud;
	int r;

	if (c->journal_err < 0)
		return false;
	if (stopping(c->j)) {
		c->stopped = true;
		return false;
	}
	/* A check changes nothing: one killed half-way is simply checked again after a restart,
	 * so in check mode "step K starts" is not worth its sync. */
	if (c->jb->st.check_mode)
		return true;
	r = journal_run(c->jn, index);
	if (r < 0) {
		c->journal_err = r;
		return false;
	}
	return true;
}

static void on_step(const struct apply_step_result *res, size_t index, size_t total, void *ud)
{
	struct run_ctx *c = ud;
	int r;

	r = record_step(c->j, c->jb, c->jn, index, res->name, apply_status_name(res->status),
			res->diff, res->message, res->duration_ms);
	if (r < 0 && r != -ECANCELED && c->journal_err == 0)
		c->journal_err = r;
	log_info("plan %s: step %zu/%zu %s: %s%s%s", c->jb->st.id, index + 1, total, res->name,
		 apply_status_name(res->status), res->message[0] ? ": " : "", res->message);
}

/* A reboot step is about to reboot the node: record it durably (the boot id it reboots from),
 * then tell the controller the node is going down (a StepEvent "rebooting": the node's result
 * for that step comes after the boot). */
static int before_reboot(size_t index, const char *boot_id, void *ud, char *err, size_t errlen)
{
	struct run_ctx *c = ud;
	struct journal_step s = {0};
	char msg[128];
	int r;

	r = journal_reboot(c->jn, index, boot_id, util_now_unix_ms());
	if (r < 0) {
		snprintf(err, errlen, "the reboot cannot be recorded in %s/" JOURNAL_DIR ": %s",
			 c->j->state_dir, ry_strerror(r));
		return r;
	}
	snprintf(msg, sizeof(msg), "rebooting from boot id %s", boot_id);
	s.name = (char *)json_string_value(json_object_get(
		json_array_get(json_object_get(c->jb->st.plan, "steps"), index), "name"));
	s.status = (char *)"rebooting";
	s.diff = (char *)"";
	s.message = msg;
	/* The controller should know before the node goes: it then waits for it (and times
	 * the reboot) instead of finding it offline. Bounded: a controller out of reach gets
	 * the notice from the outbox after the boot. */
	if (push_step(c->j, c->jb->st.id, index, &s) == -ECANCELED ||
	    outbox_wait_empty(c->j->ob, REBOOT_NOTICE_WAIT_MS) != 1)
		log_warn("plan %s: the controller has not acknowledged the reboot notice; it gets "
			 "it after the boot",
			 c->jb->st.id);
	log_info("plan %s: step %zu reboots the node (boot id %s)", c->jb->st.id, index + 1,
		 boot_id);
	return 0;
}

static enum apply_status status_parse(const char *s)
{
	return strcmp(s, "ok") == 0	   ? APPLY_STATUS_OK
	       : strcmp(s, "changed") == 0 ? APPLY_STATUS_CHANGED
	       : strcmp(s, "skipped") == 0 ? APPLY_STATUS_SKIPPED
					   : APPLY_STATUS_FAILED;
}

static void run_plan(struct agent_jobs *j, struct job *jb, struct journal *jn)
{
	struct apply_step_result *prior = NULL;
	struct apply_summary sum = {0};
	struct apply_opts o = {0};
	struct run_ctx ctx = {j, jb, jn, 0, false};
	size_t from = jb->st.next;
	json_t *facts = NULL;
	int r;

	if (from > 0) {
		/* The last outcome recorded before the restart may not have reached the outbox. */
		if (push_step(j, jb->st.id, from - 1, &jb->st.steps[from - 1]) == -ECANCELED)
			return;
		prior = calloc(from, sizeof(*prior));
		if (!prior) {
			log_error("plan %s: out of memory resuming it", jb->st.id);
			return;
		}
		for (size_t i = 0; i < from; i++) {
			prior[i].status = status_parse(jb->st.steps[i].status);
			prior[i].diff = jb->st.steps[i].diff;
			prior[i].message = jb->st.steps[i].message;
			prior[i].duration_ms = jb->st.steps[i].duration_ms;
		}
		log_info("plan %s: resuming at step %zu of %zu", jb->st.id, from + 1,
			 jb->st.n_steps);
	} else {
		log_info("plan %s: running%s", jb->st.id,
			 jb->st.check_mode ? " in check mode" : "");
	}
	/* Fresh facts: the asserts judge the node as it is now. */
	if (facts_collect(j->sysroot, &facts) < 0)
		facts = NULL;
	o.sysroot = j->sysroot;
	o.check_mode = jb->st.check_mode;
	o.facts = facts;
	o.state_dir = j->state_dir;
	o.on_step = on_step;
	o.before_step = before_step;
	o.userdata = &ctx;
	o.resume_from = from;
	o.prior = prior;
	o.before_reboot = before_reboot;
	o.reboot_argv = j->reboot_argv;
	r = apply_plan(jb->st.plan, &o, &sum);
	if (r < 0) {
		char msg[128];

		snprintf(msg, sizeof(msg), "plan refused: %s", ry_strerror(r));
		log_warn("plan %s: %s", jb->st.id, msg);
		if (push_done(j, jb->st.id, "failed", msg, NULL) >= 0 &&
		    journal_done(jn, "failed", msg) < 0)
			log_warn("plan %s: its end not journaled", jb->st.id);
	} else if (ctx.journal_err < 0) {
		char why[256];

		snprintf(why, sizeof(why),
			 "not run: its progress cannot be recorded in %s/" JOURNAL_DIR " (%s)",
			 j->state_dir, ry_strerror(ctx.journal_err));
		log_error("plan %s: %s", jb->st.id, why);
		end_early(j, jb, jn, sum.n_done, why);
	} else if (sum.rebooting) {
		log_info("plan %s: the node reboots at step %zu; the plan goes on at step %zu when "
			 "the agent starts after the boot",
			 jb->st.id, sum.n_done + 1, sum.n_done + 2);
		pthread_mutex_lock(&j->lock);
		j->rebooting = true;
		pthread_mutex_unlock(&j->lock);
	} else if (sum.interrupted) {
		log_info("plan %s: stopped before step %zu; it resumes when the agent starts again",
			 jb->st.id, sum.n_done + 1);
	} else {
		char *why = failed_step_says(&sum);

		finish(j, jb, jn, why ? why : sum.stopped ? "stopped at a failed step" : NULL);
		free(why);
	}
	apply_summary_done(&sum);
	json_decref(facts);
	free(prior);
}

/* The agent started inside a reboot step that rebooted: judge the boot (apply_reboot_judge())
 * and record the step's outcome; the plan then goes on after it (a failed reboot stops it
 * unless the step has continue_on_error). 0, or -ECANCELED/-errno when the outcome could not be
 * recorded (the next start tries again). */
static int judge_reboot(struct agent_jobs *j, struct job *jb, struct journal *jn)
{
	size_t k = (size_t)jb->st.running;
	const json_t *step = json_array_get(json_object_get(jb->st.plan, "steps"), k);
	enum apply_status status = APPLY_STATUS_FAILED;
	int64_t now = util_now_unix_ms();
	char *msg = NULL;
	int r;

	r = apply_reboot_judge(j->sysroot, json_object_get(step, "params"), jb->st.reboot_boot_id,
			       jb->st.reboot_at_ms, now, &status, &msg);
	if (r < 0) {
		log_error("plan %s: judging the reboot of step %zu: %s", jb->st.id, k + 1,
			  ry_strerror(r));
		return r;
	}
	log_info("plan %s: step %zu (reboot) %s: %s", jb->st.id, k + 1, apply_status_name(status),
		 msg);
	r = record_step(j, jb, jn, k, json_string_value(json_object_get(step, "name")),
			apply_status_name(status), "", msg,
			now > jb->st.reboot_at_ms ? now - jb->st.reboot_at_ms : 0);
	free(msg);
	if (r < 0) {
		if (r != -ECANCELED)
			log_error("plan %s: the reboot's outcome cannot be recorded: %s", jb->st.id,
				  ry_strerror(r));
		return r;
	}
	jb->st.running = -1;
	while (jb->st.next < jb->st.n_steps && jb->st.steps[jb->st.next].recorded)
		jb->st.next++;
	return 0;
}

static void run_job(struct agent_jobs *j, struct job *jb)
{
	struct journal *jn = NULL;
	int r = journal_open(j->state_dir, jb->st.id, &jn);

	if (r < 0) {
		log_error("plan %s: its journal cannot be opened: %s; not run", jb->st.id,
			  ry_strerror(r));
		return;
	}
	switch (jb->kind) {
	case JOB_RUN:
		run_plan(j, jb, jn);
		break;
	case JOB_INTERRUPTED:
		log_warn("plan %s: the agent stopped inside step %ld; reporting it failed, not "
			 "running it again",
			 jb->st.id, jb->st.running + 1);
		end_early(j, jb, jn, (size_t)jb->st.running,
			  "interrupted: the agent stopped while this step ran; it is not run again "
			  "(deploy again to finish the plan)");
		break;
	case JOB_REBOOTED:
		if (judge_reboot(j, jb, jn) == 0)
			run_plan(j, jb, jn);
		break;
	case JOB_FINISH:
		if (jb->st.n_steps > 0 &&
		    push_step(j, jb->st.id, jb->st.n_steps - 1,
			      &jb->st.steps[jb->st.n_steps - 1]) == -ECANCELED)
			break;
		finish(j, jb, jn, NULL);
		break;
	case JOB_REFUSED:
		if (push_done(j, jb->st.id, "failed", "plan is not a JSON object", NULL) >= 0 &&
		    journal_done(jn, "failed", "plan is not a JSON object") < 0)
			log_warn("plan %s: its end not journaled", jb->st.id);
		break;
	}
	journal_close(jn);
	(void)journal_prune(j->state_dir, AGENT_JOBS_KEPT);
	(void)apply_backups_prune(j->state_dir, AGENT_BACKUPS_KEPT);
}

static void job_free(struct job *jb)
{
	if (!jb)
		return;
	journal_state_done(&jb->st);
	free(jb);
}

static void *worker_main(void *arg)
{
	struct agent_jobs *j = arg;

	pthread_mutex_lock(&j->lock);
	for (;;) {
		struct job *jb = j->head;

		if (j->stop)
			break;
		if (!jb) {
			pthread_cond_wait(&j->cond, &j->lock);
			continue;
		}
		j->head = jb->next;
		if (!j->head)
			j->tail = NULL;
		j->running = true;
		pthread_mutex_unlock(&j->lock);
		run_job(j, jb);
		job_free(jb);
		pthread_mutex_lock(&j->lock);
		j->running = false;
		/* The node is going down: start nothing more, wait to be stopped. */
		while (j->rebooting && !j->stop)
			pthread_cond_wait(&j->cond, &j->lock);
	}
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

/* Queue a job (takes it). Caller holds the lock. */
static void enqueue_locked(struct agent_jobs *j, struct job *jb)
{
	if (j->tail)
		j->tail->next = jb;
	else
		j->head = jb;
	j->tail = jb;
	pthread_cond_signal(&j->cond);
}

/* What the journals left unfinished: queued in the order the plans arrived. */
static int recover(struct agent_jobs *j, char *err, size_t errlen)
{
	char **ids = NULL;
	size_t n = 0;
	int r;

	r = journal_list(j->state_dir, &ids, &n);
	if (r < 0) {
		snprintf(err, errlen, "%s/" JOURNAL_DIR ": %s", j->state_dir, ry_strerror(r));
		return r;
	}
	for (size_t i = 0; i < n; i++) {
		struct job *jb = calloc(1, sizeof(*jb));

		if (!jb) {
			r = -ENOMEM;
			break;
		}
		r = journal_load(j->state_dir, ids[i], &jb->st);
		if (r == -RY_E_CORRUPT) {
			char path[PATH_MAX];

			/* No readable header: the plan was never accepted. */
			log_warn("plan journal %s is unreadable; removing it", ids[i]);
			snprintf(path, sizeof(path), "%s/" JOURNAL_DIR "/%s.log", j->state_dir,
				 ids[i]);
			(void)unlink(path);
			free(jb);
			r = 0;
			continue;
		}
		if (r < 0) {
			snprintf(err, errlen, "plan journal %s: %s", ids[i], ry_strerror(r));
			free(jb);
			break;
		}
		if (jb->st.done) {
			job_free(jb);
			continue;
		}
		if (!jb->st.plan)
			jb->kind = JOB_REFUSED;
		else if (jb->st.running >= 0 && jb->st.reboot_step == jb->st.running)
			jb->kind = JOB_REBOOTED;
		else if (jb->st.running >= 0)
			jb->kind = JOB_INTERRUPTED;
		else if (jb->st.n_steps > 0 && jb->st.next == jb->st.n_steps)
			jb->kind = JOB_FINISH;
		else
			jb->kind = JOB_RUN;
		log_info("plan %s: unfinished when the agent stopped (%zu of %zu steps recorded)",
			 jb->st.id, jb->st.next, jb->st.n_steps);
		enqueue_locked(j, jb);
	}
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
	return r;
}

/* Free the queue (its plans stay journaled: they run at the next start) and j; the worker is
 * not running. */
static void jobs_destroy(struct agent_jobs *j)
{
	while (j->head) {
		struct job *jb = j->head;

		j->head = jb->next;
		job_free(jb);
	}
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->cond);
	free(j);
}

int agent_jobs_new(const char *sysroot, const char *state_dir, struct outbox *ob,
		   const char *const *reboot_argv, struct agent_jobs **ret, char *err,
		   size_t errlen)
{
	struct agent_jobs *j = calloc(1, sizeof(*j));
	int r;

	if (!j)
		return -ENOMEM;
	j->sysroot = sysroot;
	j->reboot_argv = reboot_argv;
	j->state_dir = state_dir;
	j->ob = ob;
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->cond, NULL);
	r = journal_dir_init(state_dir);
	if (r < 0) {
		snprintf(err, errlen, "%s/" JOURNAL_DIR ": %s", state_dir, ry_strerror(r));
		goto fail;
	}
	r = recover(j, err, errlen);
	if (r < 0)
		goto fail;
	if (pthread_create(&j->worker, NULL, worker_main, j) != 0) {
		r = -EAGAIN;
		snprintf(err, errlen, "cannot start the plan worker");
		goto fail;
	}
	*ret = j;
	return 0;
fail:
	jobs_destroy(j);
	return r;
}

void agent_jobs_free(struct agent_jobs *j)
{
	if (!j)
		return;
	pthread_mutex_lock(&j->lock);
	j->stop = true;
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
	pthread_join(j->worker, NULL);
	jobs_destroy(j);
}

int agent_jobs_submit(struct agent_jobs *j, const char *deployment_id, const char *plan_json,
		      bool check_mode)
{
	struct journal *jn = NULL;
	struct job *jb;
	int r;

	if (!journal_id_ok(deployment_id))
		return -RY_E_INVALID;
	if (strlen(plan_json) > JOB_PLAN_MAX)
		return -RY_E_TOO_BIG;
	/* Only the worker and this function touch journals; the lock keeps two submissions of
	 * one id (there is one session thread, but be plain about it) from both creating it. */
	pthread_mutex_lock(&j->lock);
	r = journal_create(j->state_dir, deployment_id, check_mode, plan_json, &jn);
	pthread_mutex_unlock(&j->lock);
	if (r == -EEXIST)
		return 1;
	if (r < 0)
		return r;
	journal_close(jn);
	jb = calloc(1, sizeof(*jb));
	if (!jb)
		return -ENOMEM;
	/* Read back what was recorded: the job runs exactly what the journal holds. */
	r = journal_load(j->state_dir, deployment_id, &jb->st);
	if (r < 0) {
		free(jb);
		return r;
	}
	jb->kind = jb->st.plan ? JOB_RUN : JOB_REFUSED;
	pthread_mutex_lock(&j->lock);
	enqueue_locked(j, jb);
	pthread_mutex_unlock(&j->lock);
	return 0;
}

bool agent_jobs_busy(struct agent_jobs *j)
{
	bool busy;

	pthread_mutex_lock(&j->lock);
	busy = j->head || j->running;
	pthread_mutex_unlock(&j->lock);
	return busy;
}
