/* railyard watch: deployments and campaigns as they run, followed on the controller's event
 * stream (GET /api/v1/events, Server-Sent Events; docs/rest.md, "Events and metrics").
 *
 * One long GET reads the stream (sse.c splits it into events). It has no timeout, but one that
 * delivers nothing for 45 s (the controller's keepalives come every 15 s) is taken as dead. A
 * dropped connection is made again with Last-Event-ID, so that nothing is missed, after 1 s,
 * then 2, 4 ... up to 30 s; only a first connection that fails ends the watch (exit 5).
 * Off a terminal each event is a line (but a deployment's steps: a line per node as it ends,
 * naming its failed step, and one per batch; on a terminal a failed node's and a batch's lines
 * are said above the bars); with --json each event's data is a JSON line with its
 * type and event id added. On a terminal a progress bar per running deployment or campaign is
 * redrawn in place below the lines: an event about one marks it due, and it is fetched again
 * (GET /api/v1/deployments/ID or /campaigns/ID) at most once a second. What runs is listed at
 * the start, and again after a reset event (the events since the last one seen are gone) or a
 * reconnection that could not name the last one. --once lists what runs now and reads no
 * stream. */
#include "client/rc.h"
#include "client/sse.h"
#include "common/util/util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define EVENTS_PATH "/api/v1/events"
/* The longest wait on the stream before looking at Ctrl-C and the refetches due. */
#define WAIT_MS 250
/* An object is fetched again at most this often, however many events name it. */
#define REFETCH_MS 1000
/* The wait before reconnecting: doubled from the first to the last. */
#define BACKOFF_FIRST_S 1
#define BACKOFF_MAX_S	30

/* Progress bars drawn at most (a terminal's height bounds what can be redrawn in place). */
#define BARS_MAX 16

enum { OPT_ONCE = 900 };

struct watch {
	struct rc *rc;
	json_t *seen; /* id -> {"kind", "key", "final"}: what was said of each */
	int drawn;    /* progress bars on the screen below the last line */
	bool tty;
	/* On a terminal, what runs: id -> {"kind", "act" (null until fetched), "at" (when it
	 * was fetched, monotonic ms), "due" (an event named it since), "now" (at once)}. */
	json_t *objs;
	struct rc_sse sse;
	bool redraw;	       /* list what runs before going on */
	char redraw_line[256]; /* and say this first ("" : nothing) */
	bool failed;	       /* out of memory while handling an event */
};

/* ---- what runs: activities ----------------------------------------------------------------- */

/* One activity: {"kind", "id", "state", "final", "done", "total", "key", "text"}. A new key is
 * a step worth a line (not a new ETA). */
static json_t *activity(const char *kind, const json_t *o, long long done, long long total,
			const char *key, const char *text)
{
	return json_pack("{s:s, s:s, s:s, s:b, s:I, s:I, s:s, s:s}", "kind", kind, "id",
			 rc_str(o, "id", "?"), "state", rc_str(o, "state", "?"), "final",
			 strcmp(kind, "deployment") == 0 ? rc_deploy_final(JSTR(o, "state"))
							 : rc_campaign_final(JSTR(o, "state")),
			 "done", (json_int_t)done, "total", (json_int_t)total, "key", key, "text",
			 text);
}

/* A deployment's activity: d is GET /api/v1/deployments/ID (with its nodes) or a listing's
 * item (without). */
static json_t *deployment_activity(const json_t *d)
{
	long long done = 0, total = 0, failed = 0, batches = 0;
	const json_t *n;
	char text[512], key[64];
	size_t i;

	json_array_foreach(json_object_get(d, "nodes"), i, n)
	{
		const char *st = rc_str(n, "state", "waiting");

		total++;
		done += strcmp(st, "waiting") != 0 && strcmp(st, "sent") != 0;
		failed += strcmp(st, "failed") == 0 || strcmp(st, "unreachable") == 0;
		if (JINT(n, "batch") + 1 > batches)
			batches = JINT(n, "batch") + 1;
	}
	if (rc_deploy_final(JSTR(d, "state"))) {
		snprintf(text, sizeof(text), "deployment %s: %s on %s: %s%s%s%s",
			 rc_str(d, "id", "?"), rc_str(d, "playbook", "?"),
			 rc_str(d, "cluster", "?"), rc_str(d, "state", "?"),
			 json_is_true(json_object_get(d, "check_mode")) ? " (check)" : "",
			 JSTR(d, "reason") ? ": " : "", rc_str(d, "reason", ""));
		if (total) {
			size_t len = strlen(text);

			snprintf(text + len, sizeof(text) - len, ", %lld of %lld nodes done", done,
				 total);
		}
	} else {
		/* " | " fields, most important first: a bar drops them from the last
		 * (rc_fit_fields()) */
		size_t len;

		const char *st = rc_str(d, "state", "?");

		/* the counts in the first field: 80 columns have room for little else */
		snprintf(text, sizeof(text), "deployment %s: %s%s%lld of %lld nodes done",
			 rc_str(d, "id", "?"), strcmp(st, "running") != 0 ? st : "",
			 strcmp(st, "running") != 0			  ? ", "
			 : json_is_true(json_object_get(d, "check_mode")) ? "check, "
									  : "",
			 done, total);
		len = strlen(text);
		if (failed)
			snprintf(text + len, sizeof(text) - len, ", %lld failed", failed);
		len = strlen(text);
		if (batches > 1)
			snprintf(text + len, sizeof(text) - len, " | batch %lld of %lld",
				 JINT(d, "current_batch") + 1, batches);
		len = strlen(text);
		snprintf(text + len, sizeof(text) - len, " | %s on %s", rc_str(d, "playbook", "?"),
			 rc_str(d, "cluster", "?"));
	}
	snprintf(key, sizeof(key), "%s/%lld/%lld", rc_str(d, "state", "?"), done, total);
	return activity("deployment", d, done, total, key, text);
}

static json_t *campaign_activity(const json_t *c)
{
	const json_t *p = json_object_get(c, "progress");
	char text[640], line[512], key[96];

	if (rc_campaign_final(JSTR(c, "state")))
		snprintf(text, sizeof(text), "campaign %s: %s on %s: %s%s%s", rc_str(c, "id", "?"),
			 rc_str(c, "playbook", "?"), rc_str(c, "cluster", "?"),
			 rc_str(c, "state", "?"), JSTR(c, "error") ? ": " : "",
			 rc_str(c, "error", ""));
	else {
		rc_campaign_progress(c, line, sizeof(line));
		snprintf(text, sizeof(text), "campaign %s: %s", rc_str(c, "id", "?"), line);
	}
	snprintf(key, sizeof(key), "%s/%lld/%lld/%lld", rc_str(c, "state", "?"),
		 JINT(p, "test_index"), JINT(p, "round"),
		 JINT(p, "rows_done") + JINT(p, "rows_failed"));
	return activity("campaign", c, JINT(p, "rounds_done"), JINT(p, "rounds_total"), key, text);
}

/* One deployment or campaign as it is now: 0 with *ret its activity, or the exit code. */
static int fetch_activity(struct rc *rc, const char *kind, const char *id, json_t **ret)
{
	char *eid = httpc_escape(id), path[512];
	json_t *doc = NULL;
	int r;

	if (!eid)
		return RC_FAILED;
	snprintf(path, sizeof(path), "/api/v1/%ss/%s", kind, eid);
	free(eid);
	if ((r = rc_api(rc, "GET", path, NULL, &doc)) != 0)
		return r;
	*ret = strcmp(kind, "deployment") == 0 ? deployment_activity(doc) : campaign_activity(doc);
	json_decref(doc);
	return *ret ? 0 : RC_FAILED;
}

/* Add the activities of a listing's items (kind's, path's) to out, each fetched whole. */
static int list_activities(struct rc *rc, const char *kind, const char *path, json_t *out)
{
	json_t *items = NULL, *a;
	const json_t *o;
	size_t i;
	int r;

	if ((r = rc_api_list(rc, path, &items)) != 0)
		return r;
	json_array_foreach(items, i, o)
	{
		/* Per-node progress is in the deployment itself, not in the listing. */
		if (fetch_activity(rc, kind, rc_str(o, "id", ""), &a) != 0)
			a = strcmp(kind, "deployment") == 0 ? deployment_activity(o)
							    : campaign_activity(o);
		json_array_append_new(out, a);
	}
	json_decref(items);
	return 0;
}

/* What runs now, as a JSON array of activities (caller decrefs), or the exit code: the
 * deployments pending or running and the campaigns running, and each one said to run before
 * (in seen) that has ended since, to say how it ended. */
static int snapshot(struct watch *w, json_t **ret)
{
	json_t *out = json_array(), *ids = json_object(), *a;
	const json_t *was;
	const char *id;
	size_t i;
	int r;

	if (!out || !ids) {
		r = RC_FAILED;
		goto out;
	}
	if ((r = list_activities(w->rc, "deployment", "/api/v1/deployments?state=running", out)) ||
	    (r = list_activities(w->rc, "deployment", "/api/v1/deployments?state=pending", out)) ||
	    (r = list_activities(w->rc, "campaign", "/api/v1/campaigns?state=running", out)))
		goto out;
	json_array_foreach(out, i, a)
	{
		json_object_set(ids, rc_str(a, "id", ""), json_true());
	}
	json_object_foreach(w->seen, id, was)
	{
		if (json_is_true(json_object_get(was, "final")) || json_object_get(ids, id))
			continue;
		r = fetch_activity(w->rc, rc_str(was, "kind", "deployment"), id, &a);
		if (r == 0)
			json_array_append_new(out, a);
		else if (r == RC_NOT_FOUND) /* gone: not asked again */
			json_object_set_new((json_t *)was, "final", json_true());
		r = 0;
	}
	*ret = out;
	out = NULL;
out:
	json_decref(ids);
	json_decref(out);
	return r;
}

/* ---- what is shown ----------------------------------------------------------------------- */

static int term_width(void)
{
	struct winsize ws;

	return ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40 ? ws.ws_col : 80;
}

/* "[#########...........]  45% TEXT", fitted to the terminal's width (rc_fit_fields()). */
static void draw_bar(const json_t *a, int width)
{
	long long done = JINT(a, "done"), total = JINT(a, "total");
	int pct = total > 0 ? (int)(done * 100 / total) : 0, fill = pct * 20 / 100;
	char *text = util_escape(rc_str(a, "text", ""), false);
	int room = width - 29;
	char fit[1024];

	rc_fit_fields(text ? text : "", room > 0 ? (size_t)room : 0, fit, sizeof(fit));
	printf("[%.*s%.*s] %3d%% %s\n", fill, "####################", 20 - fill,
	       "....................", pct, fit);
	free(text);
}

/* Take the bars off the screen (before something else writes to it). */
static void clear_bars(struct watch *w)
{
	if (w->tty && w->drawn) {
		printf("\033[%dA\r\033[J", w->drawn); /* up over the bars, clear below */
		fflush(stdout);
	}
	w->drawn = 0;
}

/* Remember an id as said to run (or to have ended), not overwriting what was said of it. */
static void note_seen(struct watch *w, const char *kind, const char *id, bool final)
{
	json_t *was = json_object_get(w->seen, id);

	if (!was)
		json_object_set_new(
			w->seen, id,
			json_pack("{s:s, s:s, s:b}", "kind", kind, "key", "", "final", final));
	else if (final)
		json_object_set_new(was, "final", json_true());
}

/* line first (NULL: none), then a line for each activity that moved on or ended since it was
 * last shown (with history, what ended unseen is history: remembered, not said), then the
 * bars. */
static void render(struct watch *w, const json_t *acts, bool history, const char *line)
{
	const json_t *a;
	size_t i;

	clear_bars(w);
	if (line)
		util_fprintf_safe(stdout, "%s\n", line);
	json_array_foreach(acts, i, a)
	{
		const char *id = rc_str(a, "id", "?"), *key = rc_str(a, "key", "");
		const json_t *was = json_object_get(w->seen, id);
		bool final = json_is_true(json_object_get(a, "final"));
		/* was is gone once replaced below: read first. */
		bool said_end = was && json_is_true(json_object_get(was, "final"));

		if (was && strcmp(rc_str(was, "key", ""), key) == 0)
			continue;
		json_object_set_new(w->seen, id,
				    json_pack("{s:s, s:s, s:b}", "kind", rc_str(a, "kind", "?"),
					      "key", key, "final", final || said_end));
		if (said_end || (!was && final && history))
			continue;
		if (!w->tty || final)
			util_fprintf_safe(stdout, "%s\n", rc_str(a, "text", ""));
	}
	if (w->tty) {
		int width = term_width(), more = 0;

		json_array_foreach(acts, i, a)
		{
			if (json_is_true(json_object_get(a, "final")))
				continue;
			/* Bars that scroll off the screen could not be redrawn in place. */
			if (w->drawn < BARS_MAX) {
				draw_bar(a, width);
				w->drawn++;
			} else {
				more++;
			}
		}
		if (more) {
			printf("(%d more running)\n", more);
			w->drawn++;
		}
	}
	fflush(stdout);
}

/* On a terminal: line (NULL: none), then the activities of what runs, then the bars; what has
 * ended is let go. */
static void draw(struct watch *w, bool history, const char *line)
{
	json_t *acts = json_array(), *o, *tmp;
	const char *id;

	if (!acts) {
		w->failed = true;
		return;
	}
	json_object_foreach(w->objs, id, o)
	{
		if (json_is_object(json_object_get(o, "act")))
			json_array_append(acts, json_object_get(o, "act"));
	}
	render(w, acts, history, line);
	json_decref(acts);
	json_object_foreach_safe(w->objs, tmp, id, o)
	{
		if (json_is_true(json_object_get(json_object_get(o, "act"), "final")))
			json_object_del(w->objs, id);
	}
}

/* List what runs (at the start, after a gap in the events): 0 or the exit code. */
static int redraw(struct watch *w)
{
	const char *line = w->redraw_line[0] ? w->redraw_line : NULL;
	json_t *acts = NULL, *a;
	size_t i;
	int r;

	w->redraw = false;
	if ((r = snapshot(w, &acts)) != 0) {
		w->redraw_line[0] = '\0';
		return r;
	}
	if (w->tty) {
		int64_t now = util_now_mono_ms();

		json_array_foreach(acts, i, a)
		{
			json_object_set_new(w->objs, rc_str(a, "id", "?"),
					    json_pack("{s:s, s:O, s:I, s:b, s:b}", "kind",
						      rc_str(a, "kind", "?"), "act", a, "at",
						      (json_int_t)now, "due", 0, "now", 0));
		}
		draw(w, true, line);
	} else {
		render(w, acts, true, line);
	}
	w->redraw_line[0] = '\0';
	json_decref(acts);
	return 0;
}

/* On a terminal: an event named this deployment or campaign; fetch it again (now: at once,
 * else once its second is up). */
static void touch(struct watch *w, const char *kind, const char *id, bool now)
{
	json_t *o = json_object_get(w->objs, id);

	if (!o) {
		o = json_pack("{s:s, s:n, s:I, s:b, s:b}", "kind", kind, "act", "at", (json_int_t)0,
			      "due", 1, "now", now);
		if (!o || json_object_set_new(w->objs, id, o) < 0)
			w->failed = true;
		return;
	}
	json_object_set_new(o, "due", json_true());
	if (now)
		json_object_set_new(o, "now", json_true());
}

/* On a terminal: fetch what is due, and redraw when something was. */
static void refresh(struct watch *w)
{
	int64_t now = util_now_mono_ms();
	bool changed = false;
	json_t *o, *tmp, *a;
	const char *id;

	json_object_foreach_safe(w->objs, tmp, id, o)
	{
		int r;

		if (!json_is_true(json_object_get(o, "due")) ||
		    (!json_is_true(json_object_get(o, "now")) && now - JINT(o, "at") < REFETCH_MS))
			continue;
		json_object_set_new(o, "due", json_false());
		json_object_set_new(o, "now", json_false());
		json_object_set_new(o, "at", json_integer(now));
		r = fetch_activity(w->rc, rc_str(o, "kind", "deployment"), id, &a);
		if (r == 0) {
			json_object_set_new(o, "act", a);
			changed = true;
		} else if (r == RC_NOT_FOUND) {
			/* Gone, or not of this token's clusters. */
			note_seen(w, rc_str(o, "kind", "deployment"), id, true);
			json_object_del(w->objs, id);
		}
	}
	if (changed)
		draw(w, false, NULL);
}

/* How long the stream may be waited on: until the next refetch due, at most WAIT_MS. */
static int wait_ms(const struct watch *w)
{
	int64_t now = util_now_mono_ms(), wait = WAIT_MS;
	const json_t *o;
	const char *id;

	json_object_foreach(w->objs, id, o)
	{
		int64_t left;

		if (!json_is_true(json_object_get(o, "due")))
			continue;
		left = json_is_true(json_object_get(o, "now")) ? 0
							       : JINT(o, "at") + REFETCH_MS - now;
		if (left < wait)
			wait = left > 0 ? left : 0;
	}
	return (int)wait;
}

/* ---- events -------------------------------------------------------------------------------- */

/* An event for a person: its line in buf, "" when it has none. */
static void event_line(const char *type, const json_t *d, char *buf, size_t len)
{
	const char *id = rc_str(d, "id", "?"), *host = rc_str(d, "hostname", id);
	char *s;

	buf[0] = '\0';
	if (strcmp(type, "node.online") == 0 || strcmp(type, "node.offline") == 0)
		snprintf(buf, len, "node %s %s", host, type + 5);
	else if (strcmp(type, "deployment.state") == 0 || strcmp(type, "campaign.state") == 0)
		snprintf(buf, len, "%.*s %s %s%s%s", (int)(strchr(type, '.') - type), type, id,
			 rc_str(d, "state", "?"), JSTR(d, "reason") || JSTR(d, "error") ? ": " : "",
			 rc_str(d, "reason", rc_str(d, "error", "")));
	else if (strcmp(type, "deployment.step") == 0)
		; /* a line per node as it ends says what failed; a line per step would drown it */
	else if (strcmp(type, "deployment.node") == 0)
		snprintf(buf, len, "deployment %s %s %s%s%s", id, host, rc_str(d, "state", "?"),
			 JSTR(d, "message") ? ": " : "", rc_str(d, "message", ""));
	else if (strcmp(type, "deployment.batch") == 0) {
		long long pause = JINT(d, "pause_ms");

		snprintf(buf, len,
			 "deployment %s batch %lld of %lld done, %lld node%s failed so far", id,
			 JINT(d, "batch") + 1, JINT(d, "batches"), JINT(d, "failed"),
			 JINT(d, "failed") == 1 ? "" : "s");
		if (pause > 0) {
			size_t n = strlen(buf);

			snprintf(buf + n, len - n, "; batch %lld starts in %lld s",
				 JINT(d, "batch") + 2, (pause + 999) / 1000);
		}
	} else if (strcmp(type, "campaign.progress") == 0)
		snprintf(buf, len, "campaign %s round %lld of test %lld", id, JINT(d, "round") + 1,
			 JINT(d, "test_index") + 1);
	else if (strcmp(type, "maintenance.state") == 0)
		snprintf(buf, len, "maintenance %s %s, batch %lld %s%s%s", id,
			 rc_str(d, "state", "?"), JINT(d, "batch") + 1,
			 rc_str(d, "batch_state", ""), JSTR(d, "reason") ? ": " : "",
			 rc_str(d, "reason", ""));
	else if (strcmp(type, "maintenance.node") == 0)
		snprintf(buf, len, "maintenance %s %s %s%s%s%s%s", id, host,
			 rc_str(d, "state", "?"), JSTR(d, "jobs") ? ": jobs " : "",
			 rc_str(d, "jobs", ""), JSTR(d, "reason") ? ": " : "",
			 rc_str(d, "reason", ""));
	else if (strcmp(type, "signoff.created") == 0)
		snprintf(buf, len, "signoff %s of campaign %s: %s", id, rc_str(d, "campaign", "?"),
			 rc_str(d, "verdict", "?"));
	else if (strcmp(type, "wlm.action") == 0)
		/* A drain or resume of the ledger carried out (docs/operations.md). */
		snprintf(buf, len, "wlm %s %s (%s %s): %s%s%s", rc_str(d, "action", "?"),
			 rc_str(d, "node", "?"), rc_str(d, "source", "?"),
			 rc_str(d, "source_id", "?"), rc_str(d, "state", "?"),
			 JSTR(d, "result") ? ": " : "", rc_str(d, "result", ""));
	else if (strcmp(type, "wlm.node") == 0) {
		const json_t *w = json_object_get(d, "wlm");

		snprintf(buf, len, "wlm node %s %s%s%s", rc_str(d, "node", "?"),
			 rc_str(w, "state", "?"),
			 JSTR(w, "reason") && *JSTR(w, "reason") ? ": " : "",
			 rc_str(w, "reason", ""));
	} else if (strcmp(type, "reset") == 0)
		snprintf(buf, len, "events were missed (%s)",
			 rc_str(d, "reason", "the controller keeps the latest only"));
	else if ((s = json_dumps(d, JSON_COMPACT | JSON_ENCODE_ANY))) {
		snprintf(buf, len, "%s %s", type, s); /* a type this version does not know */
		free(s);
	}
}

/* --json: the event's data with "type" and "event_id" added ("id" is the object's). */
static void print_json_event(struct watch *w, const char *type, const char *id, json_t *d)
{
	json_t *o = json_is_object(d) ? json_incref(d) : json_pack("{s:O*}", "data", d);
	char *end, *s;
	unsigned long long n = strtoull(id, &end, 10);

	if (!o) {
		w->failed = true;
		return;
	}
	json_object_set_new(o, "type", json_string(type));
	/* The controller's ids are decimal numbers; another is passed on as a string. */
	json_object_set_new(o, "event_id",
			    !*id ? json_null()
			    : *id >= '0' && *id <= '9' && !*end && n <= INT64_MAX
				    ? json_integer((json_int_t)n)
				    : json_string(id));
	if (!(s = json_dumps(o, JSON_COMPACT)))
		w->failed = true;
	else
		printf("%s\n", s);
	free(s);
	json_decref(o);
	fflush(stdout);
}

/* One event off the stream (rc_sse_event_fn). */
static bool on_event(void *cls, const char *type, const char *id, const char *data, size_t len)
{
	struct watch *w = cls;
	json_error_t e;
	json_t *d = json_loadb(data, len, JSON_DECODE_ANY, &e);
	const char *oid;
	char line[1024];

	if (!d) {
		clear_bars(w);
		util_fprintf_safe(stderr, RC_PROG ": event %s (%s): the data is not JSON (%s)\n",
				  type, id, e.text);
		return true;
	}
	if (w->rc->json) {
		print_json_event(w, type, id, d);
		json_decref(d);
		return !w->failed;
	}
	oid = rc_str(d, "id", "?");
	if (strcmp(type, "reset") == 0) {
		/* The events since the last one seen are gone: list what runs again. */
		event_line(type, d, w->redraw_line, sizeof(w->redraw_line));
		w->redraw = true;
	} else if (w->tty && strncmp(type, "deployment.", 11) == 0) {
		touch(w, "deployment", oid, strcmp(type, "deployment.state") == 0);
		/* A failed node and the pause between batches are worth a line above the bars. */
		if (strcmp(type, "deployment.batch") == 0 ||
		    (strcmp(type, "deployment.node") == 0 &&
		     strcmp(rc_str(d, "state", ""), "succeeded") != 0)) {
			event_line(type, d, line, sizeof(line));
			draw(w, false, line);
		}
	} else if (w->tty && strncmp(type, "campaign.", 9) == 0) {
		touch(w, "campaign", oid, strcmp(type, "campaign.state") == 0);
	} else {
		event_line(type, d, line, sizeof(line));
		if (!strncmp(type, "deployment.", 11) || !strncmp(type, "campaign.", 9))
			note_seen(w, type[0] == 'd' ? "deployment" : "campaign", oid,
				  !strcmp(type, "deployment.state") ||
					  !strcmp(type, "campaign.state"));
		if (line[0] && w->tty)
			draw(w, false, line);
		else if (line[0])
			util_fprintf_safe(stdout, "%s\n", line);
		fflush(stdout);
	}
	json_decref(d);
	return !w->failed;
}

/* The stream's bytes (from libcurl's write callback). */
static bool on_bytes(void *cls, const char *data, size_t len)
{
	struct watch *w = cls;

	return rc_sse_feed(&w->sse, data, len) == 0;
}

/* Reconnected without Last-Event-ID: events may have been missed, as after a reset. */
static void gap(struct watch *w)
{
	json_t *d;

	if (!w->rc->json) {
		snprintf(w->redraw_line, sizeof(w->redraw_line),
			 "reconnected: events may have been missed");
		w->redraw = true;
		return;
	}
	if (!(d = json_pack("{s:s}", "reason", "reconnected: events may have been missed"))) {
		w->failed = true;
		return;
	}
	print_json_event(w, "reset", "", d);
	json_decref(d);
}

/* Sleep s seconds, or less for Ctrl-C: true when interrupted. */
static bool nap(int s)
{
	int64_t until = util_now_mono_ms() + s * 1000;

	while (!rc_interrupted && util_now_mono_ms() < until)
		usleep(100 * 1000);
	return rc_interrupted;
}

/* Follow the stream until Ctrl-C: RC_INTERRUPTED, or the exit code of what stopped it. */
static int follow(struct watch *w)
{
	int backoff = BACKOFF_FIRST_S, r, fatal = 0;
	bool ever = false; /* a connection was made */

	for (;;) {
		struct httpc_stream *st = NULL;
		bool connected = false, was = false, resumed;
		char why[512] = "", hdr[96] = "";
		const char *last = rc_sse_last_id(&w->sse);

		/* An id too long for the header is none the controller gave: start afresh. */
		resumed = *last && strlen(last) < 64;
		if (resumed)
			snprintf(hdr, sizeof(hdr), "Last-Event-ID: %s", last);
		rc_sse_restart(&w->sse);
		if ((r = rc_api_stream_open(w->rc, EVENTS_PATH, resumed ? hdr : NULL, on_bytes, w,
					    &st)) != 0)
			return r;
		while (!fatal &&
		       (r = rc_api_stream_run(w->rc, st, wait_ms(w), &connected, why,
					      sizeof(why))) == 0 &&
		       !rc_interrupted && !w->failed) {
			if (connected && !was) {
				was = true;
				backoff = BACKOFF_FIRST_S;
				/* What runs is listed at the start, and after a gap that
				 * Last-Event-ID could not fill. */
				if (!ever)
					w->redraw = !w->rc->json;
				else if (!resumed)
					gap(w);
			}
			if (w->redraw && (r = redraw(w)) != 0 && !ever)
				fatal = r; /* the first listing failed (said) */
			ever |= was;
			if (w->tty)
				refresh(w);
		}
		rc_api_stream_close(st);
		ever |= was;
		if (rc_interrupted)
			return RC_INTERRUPTED;
		if (w->failed) {
			fprintf(stderr, RC_PROG ": out of memory\n");
			return RC_FAILED;
		}
		if (w->sse.error) {
			clear_bars(w);
			util_fprintf_safe(stderr, RC_PROG ": the event stream from %s: %s\n",
					  rc_api_url(w->rc), w->sse.error);
			return RC_UNREACHABLE;
		}
		if (fatal)
			return fatal;
		/* Refused (said): a token without the right does not get it by trying again. */
		if (r != RC_UNREACHABLE)
			return r;
		clear_bars(w);
		if (!ever) {
			if (*why)
				util_fprintf_safe(stderr, RC_PROG ": cannot reach %s: %s\n",
						  rc_api_url(w->rc), why);
			return RC_UNREACHABLE;
		}
		if (was)
			util_fprintf_safe(stderr, RC_PROG ": the event stream from %s %s%s",
					  rc_api_url(w->rc), *why ? "broke: " : "ended",
					  *why ? why : "");
		else if (*why)
			util_fprintf_safe(stderr, RC_PROG ": cannot reach %s: %s",
					  rc_api_url(w->rc), why);
		else /* a 5xx, said */
			fprintf(stderr, RC_PROG ": the event stream is refused");
		fprintf(stderr, "; reconnecting in %d s\n", backoff);
		if (nap(backoff))
			return RC_INTERRUPTED;
		backoff = backoff * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S : backoff * 2;
	}
}

/* --once: the activities that run now. */
static int print_now(struct rc *rc, const json_t *acts)
{
	json_t *running = json_array(), *a;
	size_t i;
	int r = RC_OK;

	if (!running)
		return RC_FAILED;
	json_array_foreach(acts, i, a)
	{
		if (!json_is_true(json_object_get(a, "final")))
			json_array_append(running, a);
	}
	if (rc->json)
		r = rc_print_json(stdout, running);
	else if (!json_array_size(running))
		printf("nothing running\n");
	json_array_foreach(running, i, a)
	{
		if (!rc->json)
			util_fprintf_safe(stdout, "%s\n", rc_str(a, "text", ""));
	}
	json_decref(running);
	return r;
}

static int cmd_watch(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"once", no_argument, NULL, OPT_ONCE},
		{0},
	};
	struct watch w = {.rc = rc, .seen = json_object(), .objs = json_object()};
	const char *term = getenv("TERM");
	bool once = false;
	json_t *acts = NULL;
	int c, r = RC_FAILED;

	rc_sse_init(&w.sse, on_event, &w);
	while ((c = rc_getopt(rc, argc, argv, opts)) != -1) {
		if (c != OPT_ONCE) {
			r = rc_usage(cmd, c);
			goto out;
		}
		once = true;
	}
	if ((r = rc_positionals(cmd, argc, argv, 0, false)) != 0 || !w.seen || !w.objs) {
		r = r ? r : RC_FAILED;
		goto out;
	}
	if (once) {
		if ((r = snapshot(&w, &acts)) == 0)
			r = print_now(rc, acts);
		json_decref(acts);
		goto out;
	}
	w.tty = !rc->json && isatty(STDOUT_FILENO) && !(term && strcmp(term, "dumb") == 0);
	rc_catch_interrupts();
	r = follow(&w);
	clear_bars(&w);
out:
	rc_sse_done(&w.sse);
	json_decref(w.seen);
	json_decref(w.objs);
	/* Interrupting a watch is how it ends. */
	return r == RC_INTERRUPTED ? RC_OK : r;
}

const struct rc_command rc_watch_commands[] = {
	{"watch", "[--once]",
	 "follow deployments, campaigns and nodes on the event stream: a line per event, a "
	 "progress bar per running one on a terminal (--once: what runs now)",
	 cmd_watch},
	{0},
};
