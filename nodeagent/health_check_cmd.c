/* `railyard-agent health-check`: the GPU watcher run once (a baseline, then one tick an interval
 * later) and the readiness checks, with a playbook's health settings or the defaults, the events
 * printed as text or JSON. What the agent's watchers would report, on demand: for an operator
 * at a node and for tests/gpu/run.sh on a real GPU. Owns nothing past a call. */
#include "nodeagent/health_check_cmd.h"
#include "nodeagent/gpuwatch.h"
#include "nodeagent/health_config.h"
#include "nodeagent/readiness.h"

#include "common/playbook/playbook.h"
#include "common/util/util.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HC_EVENTS_MAX	    256
#define HC_INTERVAL_DEFAULT 2000

static void usage(FILE *f)
{
	fprintf(f,
		"usage: railyard-agent health-check [--playbook FILE | --config FILE]\n"
		"         [--require LIST] [--sysroot DIR] [--interval-ms MS] [--json]\n"
		"Run the GPU watcher (a baseline, then one tick MS later) and the readiness "
		"checks\n"
		"once, and print what they report. Exit 0 when nothing is wrong, 1 when something\n"
		"is (a warning or a critical event), 2 on a usage or configuration error.\n"
		"\n"
		"  --playbook FILE   the health section of this playbook (YAML)\n"
		"  --config FILE     the health section as the controller sends it (JSON)\n"
		"  --require LIST    readiness checks to run, comma-separated (fabric_manager,\n"
		"                    gpudirect_rdma, gds), instead of the section's\n"
		"  --sysroot DIR     the root the readiness checks read (default /)\n"
		"  --interval-ms MS  between the GPU watcher's two readings (1000-600000, default\n"
		"                    %d)\n"
		"  --json            the events as JSON\n",
		HC_INTERVAL_DEFAULT);
}

/* The health JSON of a playbook or of a JSON file (a new reference), NULL with a message. */
static json_t *load_config(const char *playbook, const char *config)
{
	struct playbook *pb = NULL;
	struct pb_diags d;
	json_error_t je;
	json_t *h;

	if (config) {
		h = json_load_file(config, JSON_REJECT_DUPLICATES, &je);
		if (!h)
			fprintf(stderr, "railyard-agent health-check: %s:%d:%d: %s\n", config,
				je.line, je.column, je.text);
		return h;
	}
	pb_diags_init(&d);
	if (playbook_load(playbook, &pb, &d) != 0) {
		pb_diags_print(&d, stderr);
		pb_diags_done(&d);
		return NULL;
	}
	pb_diags_done(&d);
	h = json_deep_copy(playbook_health_json(pb));
	playbook_free(pb);
	return h;
}

/* health.readiness.require replaced by the comma-separated list. */
static int set_require(json_t *health, const char *list)
{
	json_t *rd = json_object_get(health, "readiness"), *req = json_array();
	char *copy = strdup(list), *save = NULL;

	if (!req || !copy) {
		json_decref(req);
		free(copy);
		return -ENOMEM;
	}
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
		json_array_append_new(req, json_string(t));
	free(copy);
	if (!rd) {
		rd = json_object();
		json_object_set_new(health, "readiness", rd);
	}
	return json_object_set_new(rd, "require", req) < 0 ? -ENOMEM : 0;
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int health_check_cmd(int argc, char **argv, FILE *out)
{
	static const struct option opts[] = {
		{"playbook", required_argument, NULL, 'p'},
		{"config", required_argument, NULL, 'c'},
		{"require", required_argument, NULL, 'q'},
		{"sysroot", required_argument, NULL, 'r'},
		{"interval-ms", required_argument, NULL, 'i'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *playbook = NULL, *config = NULL, *require = NULL, *sysroot = "/", *note;
	struct health_event *ev = NULL;
	struct health_config hc;
	struct gpuwatch *w = NULL;
	size_t n = 0, m = 0, kept, counts[3] = {0, 0, 0};
	int64_t interval = HC_INTERVAL_DEFAULT;
	json_t *health = NULL, *doc = NULL, *list, *req;
	bool json = false, have_hc = false;
	char err[256], *end;
	int c, rc = 2;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			playbook = optarg;
			break;
		case 'c':
			config = optarg;
			break;
		case 'q':
			require = optarg;
			break;
		case 'r':
			sysroot = optarg;
			break;
		case 'i':
			interval = strtoll(optarg, &end, 10);
			if (*end || interval < 1000 || interval > 600000)
				goto bad;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(out);
			return 0;
		default:
			goto bad;
		}
	}
	if (optind < argc || (playbook && config)) {
		fprintf(stderr, "railyard-agent health-check: %s\n",
			optind < argc ? "unexpected operand" : "--playbook or --config, not both");
		usage(stderr);
		return 2;
	}
	health = playbook || config ? load_config(playbook, config)
				    : json_pack("{s:i}", "version", PB_HEALTH_SCHEMA);
	if (!health)
		return 2;
	if (require && set_require(health, require) < 0)
		goto out;
	if (health_config_parse(health, &hc, err, sizeof(err)) < 0) {
		fprintf(stderr, "railyard-agent health-check: %s: %s\n",
			config	   ? config
			: playbook ? playbook
				   : "--require",
			err);
		goto out;
	}
	have_hc = true;
	ev = calloc(HC_EVENTS_MAX, sizeof(*ev));
	if (!ev || gpuwatch_new(hc.gpu, &w) < 0) {
		fprintf(stderr, "railyard-agent health-check: out of memory\n");
		goto out;
	}
	rc = 1;
	if (gpuwatch_tick(w, util_now_unix_ms(), ev, HC_EVENTS_MAX, &n) < 0)
		goto out;
	if (gpuwatch_on(w)) {
		kept = n < HC_EVENTS_MAX ? n : HC_EVENTS_MAX;
		sleep_ms(interval);
		if (gpuwatch_tick(w, util_now_unix_ms(), ev + kept, HC_EVENTS_MAX - kept, &m) < 0)
			goto out;
		n = kept + m;
	}
	note = gpuwatch_note(w);
	kept = n < HC_EVENTS_MAX ? n : HC_EVENTS_MAX;
	if (readiness_check(sysroot, hc.readiness, ev + kept, HC_EVENTS_MAX - kept, &m) < 0)
		goto out;
	n = kept + m;
	kept = n < HC_EVENTS_MAX ? n : HC_EVENTS_MAX;
	for (size_t i = 0; i < kept; i++)
		counts[ev[i].severity]++;
	if (json) {
		list = json_array();
		for (size_t i = 0; list && i < kept; i++)
			json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}",
							      "kind", ev[i].kind, "severity",
							      health_severity_name(ev[i].severity),
							      "source", ev[i].source, "what",
							      ev[i].what, "detail", ev[i].detail,
							      "at_ms", (json_int_t)ev[i].at_ms));
		req = json_incref(json_object_get(hc.readiness, "require"));
		if (!req)
			req = json_array();
		doc = json_pack("{s:i, s:s, s:{s:b, s:s?}, s:I, s:o, s:o, s:I, s:{s:I, s:I, s:I}}",
				"version", 1, "tool", "railyard health-check", "gpu_watcher", "on",
				gpuwatch_on(w), "note", note, "interval_ms", (json_int_t)interval,
				"readiness", req, "events", list, "events_dropped",
				(json_int_t)(n - kept), "summary", "critical",
				(json_int_t)counts[HEALTH_CRITICAL], "warning",
				(json_int_t)counts[HEALTH_WARNING], "info",
				(json_int_t)counts[HEALTH_INFO]);
		if (!doc)
			goto out;
		json_dumpf(doc, out, JSON_INDENT(2));
		fputc('\n', out);
	} else {
		if (note)
			fprintf(out, "%s\n", note);
		for (size_t i = 0; i < kept; i++)
			fprintf(out, "%-8s %-9s %-14s %s (%s)\n",
				health_severity_name(ev[i].severity), ev[i].kind, ev[i].source,
				ev[i].what, ev[i].detail);
		fprintf(out, "%s: %zu critical, %zu warning, %zu info\n",
			counts[HEALTH_CRITICAL] + counts[HEALTH_WARNING] ? "NOT HEALTHY"
									 : "HEALTHY",
			counts[HEALTH_CRITICAL], counts[HEALTH_WARNING], counts[HEALTH_INFO]);
	}
	rc = counts[HEALTH_CRITICAL] + counts[HEALTH_WARNING] ? 1 : 0;
out:
	json_decref(doc);
	gpuwatch_free(w);
	free(ev);
	if (have_hc)
		health_config_done(&hc);
	json_decref(health);
	return rc;
bad:
	fprintf(stderr, "railyard-agent health-check: invalid %s\n", argv[optind - 1]);
	usage(stderr);
	return 2;
}

int agent_health_check_main(int argc, char **argv)
{
	return health_check_cmd(argc, argv, stdout);
}
