/* railyard watch: deployments and campaigns as they run. A line whenever a running one moves
 * on or ends; on a terminal, a progress bar per running one redrawn in place below them.
 *
 * Where the state comes from is one function, watch_next(): for now it polls the listings every
 * second; the reader of /api/v1/events (Server-Sent Events) replaces it alone, applying each
 * event to the same snapshot, and everything below it stays. */
#include "client/rc.h"
#include "common/util/util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define POLL_MS 1000
/* Deployments and campaigns looked at per poll: the newest 200 (the running ones are among
 * them). */
#define RECENT "200"

/* Progress bars drawn at most (a terminal's height bounds what can be redrawn in place). */
#define BARS_MAX 16

enum { OPT_ONCE = 900 };

struct watch {
	struct rc *rc;
	bool first;   /* no snapshot taken yet (the first one returns at once) */
	json_t *seen; /* id -> {"key", "final"}: what was said of each */
	int drawn;    /* progress bars on the screen below the last line */
	bool tty;
};

/* One activity of a snapshot: {"kind", "id", "state", "final", "done", "total", "key", "text"}.
 * A new key is a step worth a line (not a new ETA). */
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

static json_t *deployment_activity(struct rc *rc, const json_t *d)
{
	long long done = 0, total = 0;
	const json_t *n;
	json_t *full = NULL, *a;
	char text[512], key[64], *id, path[256];
	size_t i;

	if (!rc_deploy_final(JSTR(d, "state")) && (id = rc_escape(rc_str(d, "id", "")))) {
		snprintf(path, sizeof(path), "/api/v1/deployments/%s", id);
		free(id);
		/* Per-node progress is in the deployment itself, not in the listing. */
		if (rc_api(rc, "GET", path, NULL, &full) == 0) {
			json_array_foreach(json_object_get(full, "nodes"), i, n)
			{
				const char *st = rc_str(n, "state", "waiting");

				total++;
				done += strcmp(st, "waiting") != 0 && strcmp(st, "sent") != 0;
			}
		}
	}
	snprintf(text, sizeof(text), "deployment %s: %s on %s: %s%s%s%s", rc_str(d, "id", "?"),
		 rc_str(d, "playbook", "?"), rc_str(d, "cluster", "?"), rc_str(d, "state", "?"),
		 json_is_true(json_object_get(d, "check_mode")) ? " (check)" : "",
		 JSTR(d, "reason") ? ": " : "", rc_str(d, "reason", ""));
	if (total) {
		size_t len = strlen(text);

		snprintf(text + len, sizeof(text) - len, ", %lld of %lld nodes done", done, total);
	}
	snprintf(key, sizeof(key), "%s/%lld/%lld", rc_str(d, "state", "?"), done, total);
	a = activity("deployment", d, done, total, key, text);
	json_decref(full);
	return a;
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

/* The next state of things: a JSON array of activities (caller decrefs), or the exit code.
 * Polling: the newest deployments and campaigns, one second after the previous look. */
static int watch_next(struct watch *w, json_t **ret)
{
	json_t *deps = NULL, *camps = NULL, *out = json_array(), *o;
	size_t i;
	int r;

	if (!w->first)
		usleep(POLL_MS * 1000);
	w->first = false;
	if (rc_interrupted || !out) {
		json_decref(out);
		return rc_interrupted ? RC_INTERRUPTED : RC_FAILED;
	}
	if ((r = rc_api(w->rc, "GET", "/api/v1/deployments?limit=" RECENT, NULL, &deps)) ||
	    (r = rc_api(w->rc, "GET", "/api/v1/campaigns?limit=" RECENT, NULL, &camps)))
		goto out;
	json_array_foreach(json_object_get(deps, "items"), i, o)
		json_array_append_new(out, deployment_activity(w->rc, o));
	json_array_foreach(json_object_get(camps, "items"), i, o)
		json_array_append_new(out, campaign_activity(o));
	*ret = out;
	out = NULL;
out:
	json_decref(deps);
	json_decref(camps);
	json_decref(out);
	return r;
}

/* ---- what is shown ----------------------------------------------------------------------- */

static int term_width(void)
{
	struct winsize ws;

	return ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40 ? ws.ws_col : 80;
}

/* "[#########...........]  45% TEXT", cut to the terminal's width. */
static void draw_bar(const json_t *a, int width)
{
	long long done = JINT(a, "done"), total = JINT(a, "total");
	int pct = total > 0 ? (int)(done * 100 / total) : 0, fill = pct * 20 / 100;
	char *text = util_escape(rc_str(a, "text", ""), false);
	int room = width - 29;

	printf("[%.*s%.*s] %3d%% %.*s\n", fill, "####################", 20 - fill,
	       "....................", pct, room > 0 ? room : 0, text ? text : "");
	free(text);
}

/* A line for each activity that moved on or ended since the last snapshot (the first snapshot
 * says what runs; what had ended before it is history), then the bars. */
static void render(struct watch *w, const json_t *acts, bool history)
{
	const json_t *a;
	size_t i;

	if (w->tty && w->drawn)
		printf("\033[%dA\r\033[J", w->drawn); /* up over the bars, clear below */
	w->drawn = 0;
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
				    json_pack("{s:s, s:b}", "key", key, "final", final));
		/* What had ended before the first look is history: remembered, not said. */
		if (said_end || (!was && final && history))
			continue;
		if (w->rc->json) {
			char *s = json_dumps(a, JSON_COMPACT);

			if (s)
				printf("%s\n", s);
			free(s);
		} else if (!w->tty || final) {
			util_fprintf_safe(stdout, "%s\n", rc_str(a, "text", ""));
		}
	}
	if (w->tty) {
		int width = term_width();

		int more = 0;

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
	struct watch w = {.rc = rc, .first = true, .seen = json_object()};
	const char *term = getenv("TERM");
	bool once = false;
	json_t *acts = NULL;
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, opts)) != -1) {
		if (c != OPT_ONCE) {
			json_decref(w.seen);
			return rc_usage(cmd, c);
		}
		once = true;
	}
	if ((r = rc_positionals(cmd, argc, argv, 0, false)) != 0 || !w.seen) {
		json_decref(w.seen);
		return r ? r : RC_FAILED;
	}
	w.tty = !once && !rc->json && isatty(STDOUT_FILENO) && !(term && strcmp(term, "dumb") == 0);
	rc_catch_interrupts();
	for (bool history = true; (r = watch_next(&w, &acts)) == 0; history = false) {
		if (once) {
			r = print_now(rc, acts);
			json_decref(acts);
			break;
		}
		render(&w, acts, history);
		json_decref(acts);
		acts = NULL;
	}
	json_decref(w.seen);
	/* Interrupting a watch is how it ends. */
	return r == RC_INTERRUPTED ? RC_OK : r;
}

const struct rc_command rc_watch_commands[] = {
	{"watch", "[--once]",
	 "follow running deployments and campaigns: a line per change, a progress bar each on a "
	 "terminal (--once: what runs now)",
	 cmd_watch},
	{0},
};
