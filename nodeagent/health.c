/* The agent's health watchers' thread (nodeagent/health.h): the kernel log between ticks, the
 * fabric ports every tick, events into the outbox. */
#include "nodeagent/health.h"

#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "nodeagent/apply/apply.h"
#include "nodeagent/gpuwatch.h"
#include "nodeagent/health_config.h"
#include "nodeagent/kmsg.h"
#include "nodeagent/portwatch.h"
#include "nodeagent/readiness.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util/util.h"

const char *health_severity_name(enum health_severity s)
{
	switch (s) {
	case HEALTH_INFO:
		return "info";
	case HEALTH_WARNING:
		return "warning";
	case HEALTH_CRITICAL:
		return "critical";
	}
	return "unknown";
}

#define HEALTH_EPISODES		    256
#define HEALTH_EPISODE_REPORT_TICKS 30

struct agent_health {
	struct agent_health_opts o;
	pthread_t thread;
	bool started;
	int stop_pipe[2];
	char boot_id[40];
	char state_path[4096];
	struct kmsg_reader *kmsg;
	struct kmsg_limiter limiter;
	uint64_t kmsg_seq_done; /* records at or below this seq were handled (this boot) */
	bool kmsg_seq_known;
	struct portwatch *ports;
	struct gpuwatch *gpu;
	/* The settings in force (from the controller's HealthConfig, or the defaults), and the
	 * ones it sent last, taken at the next wake-up (lock). */
	struct health_config cfg;
	char *cfg_text;
	pthread_mutex_t lock;
	char *pending_text, *pending_from;
	bool pending;
	bool interval_forced; /* --health-interval given: the playbook's does not replace it */
	/* Rate events come every tick while a counter keeps rising: one event per episode (the
	 * rule firing tick after tick), again when it escalates and every
	 * HEALTH_EPISODE_REPORT_TICKS ticks while it lasts (5 minutes at the default interval);
	 * the ticks in between are counted as repeats. Oldest key forgotten past HEALTH_EPISODES.
	 */
	struct episode {
		char key[96];
		int64_t last_ms, reported_ms;
		enum health_severity sev;
		uint64_t repeats;
	} episodes[HEALTH_EPISODES];
	size_t n_episodes;
};

int agent_health_push(struct outbox *ob, const struct health_event *ev, uint64_t repeats,
		      const char *boot_id)
{
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__HealthEvent he = RAILYARD__V1__HEALTH_EVENT__INIT;

	he.kind = (char *)ev->kind;
	he.severity = (char *)health_severity_name(ev->severity);
	he.source = (char *)ev->source;
	he.what = (char *)ev->what;
	he.detail = (char *)ev->detail;
	he.at_ms = ev->at_ms;
	he.repeats = repeats;
	he.boot_id = (char *)(boot_id ? boot_id : "");
	m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_HEALTH_EVENT;
	m.health_event = &he;
	return outbox_push(ob, &m);
}

/* The kernel log's position of this boot: {"boot_id": B, "kmsg_seq": N}. */
static void state_load(struct agent_health *h)
{
	char *text = NULL;
	json_t *j;

	if (!h->state_path[0] || fs_read_file(h->state_path, 4096, &text, NULL) < 0)
		return;
	j = json_loads(text, 0, NULL);
	free(text);
	if (!j)
		return;
	const char *b = json_string_value(json_object_get(j, "boot_id"));
	json_t *seq = json_object_get(j, "kmsg_seq");
	if (b && h->boot_id[0] && strcmp(b, h->boot_id) == 0 && json_is_integer(seq) &&
	    json_integer_value(seq) >= 0) {
		h->kmsg_seq_done = (uint64_t)json_integer_value(seq);
		h->kmsg_seq_known = true;
	}
	json_decref(j);
}

static void state_save(struct agent_health *h)
{
	char text[256];
	int n;

	if (!h->state_path[0] || !h->kmsg_seq_known)
		return;
	n = snprintf(text, sizeof(text), "{\"boot_id\": \"%s\", \"kmsg_seq\": %llu}\n", h->boot_id,
		     (unsigned long long)h->kmsg_seq_done);
	if (fs_write_file_atomic(h->state_path, text, (size_t)n, 0600) < 0)
		log_debug("health: %s not written", h->state_path);
}

static void emit(struct agent_health *h, const struct health_event *ev, uint64_t repeats)
{
	int r = agent_health_push(h->o.ob, ev, repeats, h->boot_id);

	if (r < 0 && r != -ECANCELED)
		log_warn("health: event not queued (%s): %s", ev->what, ry_strerror(r));
	else if (r == 0)
		log_info("health: %s %s: %s%s", health_severity_name(ev->severity), ev->kind,
			 ev->what, repeats ? " (repeated)" : "");
}

/* Every record waiting in the kernel log. */
static void read_kmsg(struct agent_health *h)
{
	char rec[KMSG_RECORD_MAX];
	bool moved = false;
	ssize_t n;

	if (!h->kmsg)
		return;
	while ((n = kmsg_reader_next(h->kmsg, rec, sizeof(rec))) > 0) {
		struct kmsg_event ke;
		uint64_t repeats;

		int pr = kmsg_parse(rec, (size_t)n, &ke);

		if (pr < 0)
			continue;
		if (h->kmsg_seq_known && ke.seq <= h->kmsg_seq_done)
			continue; /* handled before this agent restarted */
		h->kmsg_seq_done = ke.seq;
		h->kmsg_seq_known = true;
		if (pr == 0)
			continue;
		if (ke.kind == KMSG_XID && !health_config_xid(&h->cfg, ke.xid, &ke.severity))
			continue; /* the playbook ignores this Xid */
		if (!kmsg_limiter_pass(&h->limiter, &ke, util_now_mono_ms(), &repeats))
			continue;
		struct health_event ev = {0};
		snprintf(ev.kind, sizeof(ev.kind), "%s", ke.kind == KMSG_XID ? "xid" : "kmsg");
		ev.severity = ke.severity;
		snprintf(ev.source, sizeof(ev.source), "%s", ke.source);
		snprintf(ev.what, sizeof(ev.what), "%s", ke.what);
		snprintf(ev.detail, sizeof(ev.detail), "%s", ke.text);
		ev.at_ms = util_now_unix_ms();
		emit(h, &ev, repeats);
		moved = true; /* keep the position of what was sent (not of every record: no sync
			       * for each line of a chatty kernel) */
	}
	if (n < 0)
		log_debug("health: kernel log: %s", ry_strerror((int)n));
	if (moved)
		state_save(h);
}

/* Is this firing of key a new episode (or an escalation) to report? *ret_repeats: the firings
 * suppressed since it was last reported. */
static bool episode_pass(struct agent_health *h, const char *key, enum health_severity sev,
			 int64_t now, uint64_t *ret_repeats)
{
	struct episode *e = NULL;
	size_t i;

	*ret_repeats = 0;
	for (i = 0; i < h->n_episodes && !e; i++)
		if (strcmp(h->episodes[i].key, key) == 0)
			e = &h->episodes[i];
	/* Still the same episode (it fired on the tick before), not worse, and reported less than
	 * HEALTH_EPISODE_REPORT_TICKS ticks ago: counted, not sent. */
	if (e && now - e->last_ms <= 2 * h->o.interval_ms + 500 && sev <= e->sev &&
	    now - e->reported_ms < HEALTH_EPISODE_REPORT_TICKS * h->o.interval_ms) {
		e->repeats++;
		e->last_ms = now;
		return false;
	}
	if (!e) {
		if (h->n_episodes < HEALTH_EPISODES) {
			e = &h->episodes[h->n_episodes++];
		} else {
			e = &h->episodes[0];
			for (i = 1; i < h->n_episodes; i++)
				if (h->episodes[i].last_ms < e->last_ms)
					e = &h->episodes[i];
		}
		memset(e, 0, sizeof(*e));
		snprintf(e->key, sizeof(e->key), "%s", key);
	}
	*ret_repeats = e->repeats;
	e->repeats = 0;
	e->sev = sev;
	e->last_ms = e->reported_ms = now;
	return true;
}

static void tick_ports(struct agent_health *h)
{
	struct portwatch_event pe[32];
	size_t n = 0;

	if (!h->ports || portwatch_tick(h->ports, util_now_mono_ms(), pe, 32, &n) < 0)
		return;
	for (size_t i = 0; i < n && i < 32; i++) {
		struct health_event ev = {0};
		uint64_t repeats = 0;
		char key[96];

		snprintf(ev.kind, sizeof(ev.kind), "port");
		ev.severity = pe[i].severity;
		snprintf(ev.source, sizeof(ev.source), "%s/%u", pe[i].device, pe[i].port);
		snprintf(ev.what, sizeof(ev.what), "%s", pe[i].what);
		ev.at_ms = util_now_unix_ms();
		/* A counter's rate: once an episode; a state or rate change: every one. */
		snprintf(key, sizeof(key), "port %s %s", ev.source, pe[i].counter);
		if (pe[i].counter[0] &&
		    !episode_pass(h, key, ev.severity, util_now_mono_ms(), &repeats))
			continue;
		emit(h, &ev, repeats);
	}
	if (n > 32)
		log_warn("health: %zu port events this tick, 32 sent", n);
}

/* A rate (a counter per minute) or a count that rose this tick: reported once an episode. */
static bool is_rate(const struct health_event *ev)
{
	return strstr(ev->what, "/min") || strstr(ev->what, "uncorrectable ECC");
}

/* Events of the GPU watcher and the readiness checks: rates once an episode, conditions as the
 * watchers report them (when they start and end). */
static void emit_tick(struct agent_health *h, struct health_event *ev, size_t n, size_t max,
		      const char *who)
{
	for (size_t i = 0; i < n && i < max; i++) {
		uint64_t repeats = 0;
		char key[96];
		size_t k = 0;

		k = (size_t)snprintf(key, sizeof(key), "%s %s ", ev[i].kind, ev[i].source);
		for (const char *c = ev[i].what; *c && k + 1 < sizeof(key); c++)
			if (*c < '0' || *c > '9')
				key[k++] = *c;
		key[k < sizeof(key) ? k : sizeof(key) - 1] = '\0';
		if (is_rate(&ev[i]) &&
		    !episode_pass(h, key, ev[i].severity, util_now_mono_ms(), &repeats))
			continue;
		if (!ev[i].at_ms)
			ev[i].at_ms = util_now_unix_ms();
		emit(h, &ev[i], repeats);
	}
	if (n > max)
		log_warn("health: %zu %s events this tick, %zu sent", n, who, max);
}

static void tick_gpus(struct agent_health *h)
{
	struct health_event ev[64];
	const char *note;
	size_t n = 0;

	if (!h->gpu)
		return;
	if (gpuwatch_tick(h->gpu, util_now_unix_ms(), ev, 64, &n) < 0)
		return;
	if ((note = gpuwatch_note(h->gpu)))
		log_info("health: %s", note);
	emit_tick(h, ev, n, 64, "GPU");
}

/* The readiness checks the playbook requires (none by default), every tick: a failing one is an
 * event when it starts failing and again every HEALTH_EPISODE_REPORT_TICKS ticks. */
static void tick_readiness(struct agent_health *h)
{
	struct health_event ev[32];
	size_t n = 0;

	if (!h->cfg.readiness || readiness_check(h->o.sysroot, h->cfg.readiness, ev, 32, &n) < 0)
		return;
	for (size_t i = 0; i < n && i < 32; i++) {
		uint64_t repeats = 0;
		char key[96];

		snprintf(key, sizeof(key), "readiness %s %.60s", ev[i].source, ev[i].what);
		if (!episode_pass(h, key, ev[i].severity, util_now_mono_ms(), &repeats))
			continue;
		if (!ev[i].at_ms)
			ev[i].at_ms = util_now_unix_ms();
		emit(h, &ev[i], repeats);
	}
}

/* Take the settings the controller sent, if any (on the watchers' thread). */
static void take_config(struct agent_health *h)
{
	struct health_config c;
	json_t *j = NULL;
	char err[256], *text, *from;
	int r;

	pthread_mutex_lock(&h->lock);
	if (!h->pending) {
		pthread_mutex_unlock(&h->lock);
		return;
	}
	text = h->pending_text;
	from = h->pending_from;
	h->pending_text = h->pending_from = NULL;
	h->pending = false;
	pthread_mutex_unlock(&h->lock);
	if (text && *text)
		j = json_loads(text, 0, NULL);
	r = health_config_parse(j, &c, err, sizeof(err));
	json_decref(j);
	if (r < 0) {
		log_warn("health: the settings from %s are not taken: %s", from ? from : "?", err);
		goto out;
	}
	health_config_done(&h->cfg);
	h->cfg = c;
	/* The rules' counters point into the names: into h->cfg's now, not c's. */
	for (size_t i = 0; h->cfg.rules[i].counter; i++)
		h->cfg.rules[i].counter = h->cfg.names[i];
	if (!h->interval_forced && j)
		h->o.interval_ms = c.interval_ms;
	portwatch_free(h->ports);
	h->ports = NULL;
	if (portwatch_new(h->o.sysroot, h->cfg.rules, &h->ports) < 0)
		h->ports = NULL;
	/* The new rules' baseline now: a counter that moves once the settings are taken (said
	 * below) is measured against it, not folded into a baseline read at the next tick. */
	tick_ports(h);
	gpuwatch_free(h->gpu);
	h->gpu = NULL;
	if (gpuwatch_new(h->cfg.gpu, &h->gpu) < 0)
		h->gpu = NULL;
	free(h->cfg_text);
	h->cfg_text = text;
	text = NULL;
	log_info("health: settings of %s taken (every %lld ms)",
		 from && *from ? from : "the defaults", (long long)h->o.interval_ms);
out:
	free(text);
	free(from);
}

static void *run(void *arg)
{
	struct agent_health *h = arg;
	int64_t next_tick = util_now_mono_ms();
	/* A test sysroot's dev/kmsg is a regular file: always "readable"; look at it often. */
	bool kmsg_pollable = h->kmsg && !kmsg_reader_is_file(h->kmsg);
	int64_t file_every = h->o.interval_ms < 500 ? h->o.interval_ms : 500;

	for (;;) {
		struct pollfd p[2] = {
			{.fd = h->stop_pipe[0], .events = POLLIN},
			{.fd = kmsg_pollable ? kmsg_reader_fd(h->kmsg) : -1, .events = POLLIN}};
		int64_t now = util_now_mono_ms();
		int64_t wait = next_tick - now;

		if (wait < 0)
			wait = 0;
		if (h->kmsg && !kmsg_pollable && wait > file_every)
			wait = file_every;
		int r = poll(p, 2, (int)wait);
		if (r < 0 && errno != EINTR)
			break;
		if (p[0].revents) {
			char b[16];
			ssize_t k = read(h->stop_pipe[0], b, sizeof(b));
			/* 's' stops; 'c' is a new configuration to take. */
			if (k <= 0 || memchr(b, 's', (size_t)k))
				break;
		}
		take_config(h);
		read_kmsg(h);
		if (util_now_mono_ms() >= next_tick) {
			tick_ports(h);
			tick_gpus(h);
			tick_readiness(h);
			next_tick = util_now_mono_ms() + h->o.interval_ms;
		}
	}
	return NULL;
}

int agent_health_new(const struct agent_health_opts *o, struct agent_health **ret)
{
	struct agent_health *h = calloc(1, sizeof(*h));
	int r;

	if (!h)
		return -ENOMEM;
	h->o = *o;
	if (h->o.interval_ms <= 0)
		h->o.interval_ms = AGENT_HEALTH_INTERVAL_MS;
	h->stop_pipe[0] = h->stop_pipe[1] = -1;
	if (pipe2(h->stop_pipe, O_CLOEXEC) < 0) {
		r = -errno;
		free(h);
		return r;
	}
	/* The boot the kernel log's position belongs to ("" when unreadable: not kept). */
	if (apply_boot_id(o->sysroot, h->boot_id, sizeof(h->boot_id)) < 0)
		h->boot_id[0] = '\0';
	if (o->state_dir)
		snprintf(h->state_path, sizeof(h->state_path), "%s/%s", o->state_dir,
			 AGENT_HEALTH_STATE_FILE);
	state_load(h);
	kmsg_limiter_init(&h->limiter, AGENT_HEALTH_DEDUP_MS, AGENT_HEALTH_BURST);
	pthread_mutex_init(&h->lock, NULL);
	h->interval_forced = o->interval_ms > 0;
	{
		char err[256];
		if (health_config_parse(NULL, &h->cfg, err, sizeof(err)) < 0) {
			pthread_mutex_destroy(&h->lock);
			close(h->stop_pipe[0]);
			close(h->stop_pipe[1]);
			free(h);
			return -ENOMEM;
		}
	}
	if (!h->interval_forced)
		h->o.interval_ms = h->cfg.interval_ms;
	/* The settings the controller sent before a restart, taken at the first wake-up. */
	if (o->state_dir) {
		char path[4200], *text = NULL;
		snprintf(path, sizeof(path), "%s/%s", o->state_dir, AGENT_HEALTH_CONFIG_FILE);
		if (fs_read_file(path, AGENT_HEALTH_CONFIG_MAX, &text, NULL) == 0) {
			h->pending_text = text;
			h->pending_from = strdup("the settings kept from before the restart");
			h->pending = true;
		}
	}
	/* From the start of the buffer: what the kernel logged before this agent started (a
	 * boot's Xid) counts; records handled before a restart of this boot are skipped. */
	r = kmsg_reader_open(o->sysroot, true, &h->kmsg);
	if (r < 0) {
		log_info("health: kernel log watcher off: %s/dev/kmsg: %s",
			 o->sysroot && strcmp(o->sysroot, "/") ? o->sysroot : "", ry_strerror(r));
		h->kmsg = NULL;
	}
	if (portwatch_new(o->sysroot, h->cfg.rules, &h->ports) < 0)
		h->ports = NULL;
	if (gpuwatch_new(h->cfg.gpu, &h->gpu) < 0)
		h->gpu = NULL;
	r = pthread_create(&h->thread, NULL, run, h);
	if (r != 0) {
		agent_health_free(h);
		return -r;
	}
	h->started = true;
	*ret = h;
	return 0;
}

void agent_health_free(struct agent_health *h)
{
	if (!h)
		return;
	if (h->started) {
		char b = 's';
		if (write(h->stop_pipe[1], &b, 1) < 0)
			log_debug("health: stop: %s", ry_strerror(-errno));
		pthread_join(h->thread, NULL);
	}
	if (h->stop_pipe[0] >= 0)
		close(h->stop_pipe[0]);
	if (h->stop_pipe[1] >= 0)
		close(h->stop_pipe[1]);
	state_save(h);
	kmsg_reader_free(h->kmsg);
	portwatch_free(h->ports);
	gpuwatch_free(h->gpu);
	health_config_done(&h->cfg);
	free(h->cfg_text);
	free(h->pending_text);
	free(h->pending_from);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

int agent_health_configure(struct agent_health *h, const char *config_json, const char *from,
			   char *err, size_t errlen)
{
	struct health_config c;
	json_t *j = NULL;
	char path[4200];
	bool same;
	int r;

	if (!h || !config_json)
		return -EINVAL;
	if (strlen(config_json) > AGENT_HEALTH_CONFIG_MAX) {
		snprintf(err, errlen, "over %d bytes", AGENT_HEALTH_CONFIG_MAX);
		return -EINVAL;
	}
	if (*config_json && !(j = json_loads(config_json, 0, NULL))) {
		snprintf(err, errlen, "not JSON");
		return -EINVAL;
	}
	r = health_config_parse(j, &c, err, errlen);
	json_decref(j);
	if (r < 0)
		return r;
	health_config_done(&c);
	pthread_mutex_lock(&h->lock);
	same = !h->pending && ((h->cfg_text && strcmp(h->cfg_text, config_json) == 0) ||
			       (!h->cfg_text && !*config_json));
	if (!same) {
		free(h->pending_text);
		free(h->pending_from);
		h->pending_text = strdup(config_json);
		h->pending_from = strdup(from && *from ? from : "the defaults");
		h->pending = h->pending_text && h->pending_from;
	}
	pthread_mutex_unlock(&h->lock);
	if (same)
		return 0;
	if (h->o.state_dir) {
		snprintf(path, sizeof(path), "%s/%s", h->o.state_dir, AGENT_HEALTH_CONFIG_FILE);
		if (fs_write_file_atomic(path, config_json, strlen(config_json), 0600) < 0)
			log_warn("health: %s not written: the settings last until a restart", path);
	}
	if (write(h->stop_pipe[1], "c", 1) < 0)
		log_debug("health: wake-up: %s", ry_strerror(-errno));
	return 0;
}
