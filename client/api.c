/* The CLI's side of the REST API: where to connect (flags, environment, the profile), one call
 * with its reply turned into a document or an exit code, the API's error body for a person,
 * listings followed page by page. */
#include "client/config.h"
#include "common/httpc/httpc.h"
#include "client/rc.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* A listing's page size (the API's largest; RAILYARD_PAGE_SIZE makes it smaller, for tests),
 * and how many pages one listing may take. */
#define PAGE_LIMIT 1000
#define PAGES_MAX  100000

volatile sig_atomic_t rc_interrupted;

void rc_on_interrupt(int sig)
{
	rc_interrupted = sig;
	/* A second one ends the program the ordinary way. */
	signal(sig, SIG_DFL);
}

void rc_catch_interrupts(void)
{
	/* No SA_RESTART: the wait between polls ends at once. */
	sigaction(SIGINT, &(struct sigaction){.sa_handler = rc_on_interrupt}, NULL);
	sigaction(SIGTERM, &(struct sigaction){.sa_handler = rc_on_interrupt}, NULL);
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static bool same_url(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	while (la && a[la - 1] == '/')
		la--;
	while (lb && b[lb - 1] == '/')
		lb--;
	return la == lb && strncmp(a, b, la) == 0;
}

/* "unix:/abs/DIR/api.sock" in buf (a relative DIR made absolute from the working directory,
 * as the controller bound it). 0, or the exit code with the reason said. */
static int socket_url(const char *dir, char *buf, size_t len)
{
	char cwd[PATH_MAX];
	size_t max = sizeof(((struct sockaddr_un *)NULL)->sun_path) - 1;
	int n;

	if (dir[0] == '/') {
		n = snprintf(buf, len, HTTPC_UNIX_PREFIX "%s/" RC_API_SOCKET, dir);
	} else if (getcwd(cwd, sizeof(cwd))) {
		n = snprintf(buf, len, HTTPC_UNIX_PREFIX "%s/%s/" RC_API_SOCKET, cwd, dir);
	} else {
		util_fprintf_safe(stderr, RC_PROG ": %s: %s\n", dir, strerror(errno));
		return RC_FAILED;
	}
	if (n < 0 || (size_t)n >= len || (size_t)n - strlen(HTTPC_UNIX_PREFIX) > max) {
		util_fprintf_safe(stderr,
				  RC_PROG ": %s/" RC_API_SOCKET ": too long for a unix socket (at "
					  "most %zu bytes)\n",
				  dir, max);
		return RC_USAGE;
	}
	return 0;
}

/* The state directory --local talks to: --state-dir, $RAILYARD_STATE_DIR, the default. */
static const char *state_dir(const struct rc *rc)
{
	const char *d = rc->state_dir ? rc->state_dir : env("RAILYARD_STATE_DIR");

	return d ? d : RC_DEFAULT_STATE_DIR;
}

/* --local: plain HTTP over STATE_DIR/api.sock, no token, no profile; the kernel names the
 * caller (root or the controller's user: an unscoped admin). 0 or the exit code. */
static int connect_local(struct rc *rc)
{
	char url[PATH_MAX + 64];
	struct stat st;
	int r;

	if ((r = socket_url(state_dir(rc), url, sizeof(url))) != 0)
		return r;
	if (stat(url + strlen(HTTPC_UNIX_PREFIX), &st) < 0) {
		int e = errno;

		util_fprintf_safe(stderr,
				  RC_PROG ": no controller is serving %s (%s: %s); start it "
					  "(systemctl start railyard-controller)\n",
				  state_dir(rc), url + strlen(HTTPC_UNIX_PREFIX), strerror(e));
		return e == EACCES ? RC_AUTH : RC_UNREACHABLE;
	}
	if (httpc_new(url, NULL, NULL, &rc->http) < 0) {
		fprintf(stderr, RC_PROG ": out of memory\n");
		return RC_FAILED;
	}
	return 0;
}

/* With nothing naming a controller, the default state directory's socket when it is there. */
static bool local_by_default(const struct rc *rc)
{
	char url[PATH_MAX + 64];
	struct stat st;

	return socket_url(state_dir(rc), url, sizeof(url)) == 0 &&
	       stat(url + strlen(HTTPC_UNIX_PREFIX), &st) == 0 && S_ISSOCK(st.st_mode);
}

/* Make rc->http: flags, then RAILYARD_URL/RAILYARD_TOKEN/RAILYARD_CA, then the profile. The
 * profile's token and CA go only to the profile's URL: a --url of another controller does not
 * receive them. 0 or the exit code. */
static int connect_api(struct rc *rc)
{
	char *path = rc_config_path();
	json_t *doc = NULL, *prof = NULL;
	const char *url, *token, *ca;
	int r = 0, rc_code = RC_USAGE;

	if (rc->local) {
		free(path);
		return connect_local(rc);
	}
	if (path && !rc->no_profile && (r = rc_config_load(path, &doc)) < 0) {
		if (r != -RY_E_INVALID) /* otherwise said already */
			util_fprintf_safe(stderr, RC_PROG ": %s: %s\n", path, ry_strerror(r));
		goto out;
	}
	prof = rc_config_profile(doc, rc_config_profile_name(doc, rc->profile));
	if (rc->profile && !prof) {
		util_fprintf_safe(stderr, RC_PROG ": no profile %s in %s\n", rc->profile,
				  path ? path : "(no configuration file)");
		goto out;
	}
	url = rc->url ? rc->url : env("RAILYARD_URL");
	if (!url)
		url = JSTR(prof, "url");
	if (!url && local_by_default(rc)) {
		rc->local = true;
		rc_code = connect_local(rc);
		goto out;
	}
	if (!url) {
		fprintf(stderr,
			RC_PROG ": no controller: run `" RC_PROG " login URL --token T`, "
				"pass --url (or set RAILYARD_URL), or --local / --state-dir DIR on "
				"the controller's host\n");
		goto out;
	}
	if (prof && (!JSTR(prof, "url") || !same_url(url, JSTR(prof, "url"))))
		prof = NULL;
	token = rc->token ? rc->token : env("RAILYARD_TOKEN");
	if (!token)
		token = JSTR(prof, "token");
	ca = rc->ca ? rc->ca : env("RAILYARD_CA");
	if (!ca)
		ca = JSTR(prof, "ca");
	r = httpc_new(url, token, ca, &rc->http);
	if (r == -EINVAL) {
		rc_bad("URL (https://HOST:PORT: the token travels over TLS only)", url);
		goto out;
	}
	if (r < 0) {
		fprintf(stderr, RC_PROG ": out of memory\n");
		rc_code = RC_FAILED;
		goto out;
	}
	rc_code = 0;
out:
	json_decref(doc);
	free(path);
	return rc_code;
}

const char *rc_api_url(const struct rc *rc)
{
	return rc->http ? httpc_url(rc->http) : "";
}

void rc_done(struct rc *rc)
{
	httpc_free(rc->http);
	rc->http = NULL;
	if (rc->token_buf)
		explicit_bzero(rc->token_buf, strlen(rc->token_buf));
	free(rc->token_buf);
	rc->token_buf = NULL;
}

static int exit_for_status(long status)
{
	if (status == 401 || status == 403)
		return RC_AUTH;
	if (status == 404)
		return RC_NOT_FOUND;
	if (status >= 500)
		return RC_UNREACHABLE;
	return RC_FAILED;
}

/* "railyard: CODE: MESSAGE (field F)" and a playbook's problems as FILE:LINE:COL: message (the
 * file the user named, where the API says "playbook"). */
static void print_error(const struct rc *rc, const struct httpc_reply *rep)
{
	json_t *doc = json_loadb(rep->body, rep->len, 0, NULL);
	const json_t *e = json_object_get(doc, "error"), *d;
	const char *field = JSTR(e, "field");
	size_t i;

	if (!JSTR(e, "code") || !JSTR(e, "message")) {
		util_fprintf_safe(stderr, RC_PROG ": HTTP %ld from %s%s%.200s\n", rep->status,
				  httpc_url(rc->http), rep->len ? ": " : "", rep->body);
		json_decref(doc);
		return;
	}
	util_fprintf_safe(stderr, RC_PROG ": %s: %s%s%s%s\n", JSTR(e, "code"), JSTR(e, "message"),
			  field ? " (field " : "", field ? field : "", field ? ")" : "");
	json_array_foreach(json_object_get(e, "details"), i, d)
	{
		const char *file = rc_str(d, "file", "?");

		if (rc->playbook && strcmp(file, "playbook") == 0)
			file = rc->playbook;
		util_fprintf_safe(stderr, "%s:%lld:%lld: %s\n", file, JINT(d, "line"),
				  JINT(d, "column"), rc_str(d, "message", ""));
	}
	json_decref(doc);
}

/* One request; 0 with *rep for a 2xx, else the exit code with the reason printed. */
static int call(struct rc *rc, const char *method, const char *path, const char *body,
		struct httpc_reply *rep)
{
	char why[512];
	int r;

	if (!rc->http && (r = connect_api(rc)) != 0)
		return r;
	if (httpc_request(rc->http, method, path, body, rep, why, sizeof(why)) < 0) {
		util_fprintf_safe(stderr, RC_PROG ": cannot reach %s: %s\n", httpc_url(rc->http),
				  why);
		return RC_UNREACHABLE;
	}
	if (rep->status >= 200 && rep->status < 300)
		return 0;
	print_error(rc, rep);
	r = exit_for_status(rep->status);
	httpc_reply_done(rep);
	return r;
}

int rc_api(struct rc *rc, const char *method, const char *path, const json_t *body, json_t **ret)
{
	struct httpc_reply rep = {0};
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_error_t e;
	json_t *doc = NULL;
	int r;

	if (body && !text) {
		fprintf(stderr, RC_PROG ": out of memory\n");
		return RC_FAILED;
	}
	r = call(rc, method, path, text, &rep);
	free(text);
	if (r != 0)
		return r;
	if (rep.len && !(doc = json_loadb(rep.body, rep.len, 0, &e))) {
		util_fprintf_safe(stderr, RC_PROG ": %s %s: the reply is not JSON (%s)\n", method,
				  path, e.text);
		httpc_reply_done(&rep);
		return RC_UNREACHABLE;
	}
	httpc_reply_done(&rep);
	if (ret)
		*ret = doc;
	else
		json_decref(doc);
	return 0;
}

int rc_api_bytes(struct rc *rc, const char *path, char **ret, size_t *ret_len)
{
	struct httpc_reply rep = {0};
	int r = call(rc, "GET", path, NULL, &rep);

	if (r != 0)
		return r;
	*ret = rep.body;
	*ret_len = rep.len;
	return 0;
}

static long page_size(void)
{
	const char *v = getenv("RAILYARD_PAGE_SIZE");
	long n = v ? strtol(v, NULL, 10) : 0;

	return n >= 1 && n <= PAGE_LIMIT ? n : PAGE_LIMIT;
}

int rc_api_list(struct rc *rc, const char *path, json_t **ret)
{
	json_t *all = json_array(), *page = NULL;
	char *cursor = NULL, url[2048];
	const char *sep = strchr(path, '?') ? "&" : "?";
	int r = RC_FAILED;

	for (int pages = 0; all; pages++) {
		const char *next;

		if (pages == PAGES_MAX) {
			util_fprintf_safe(stderr, RC_PROG ": %s: more than %d pages\n", path,
					  PAGES_MAX);
			goto out;
		}
		if ((size_t)snprintf(url, sizeof(url), "%s%slimit=%ld%s%s", path, sep, page_size(),
				     cursor ? "&cursor=" : "",
				     cursor ? cursor : "") >= sizeof(url)) {
			fprintf(stderr, RC_PROG ": the request is too long\n");
			r = RC_USAGE;
			goto out;
		}
		if ((r = rc_api(rc, "GET", url, NULL, &page)) != 0)
			goto out;
		if (!json_is_array(json_object_get(page, "items"))) {
			util_fprintf_safe(stderr, RC_PROG ": %s: the reply is not a listing\n",
					  path);
			r = RC_UNREACHABLE;
			goto out;
		}
		if (json_array_extend(all, json_object_get(page, "items")) < 0) {
			fprintf(stderr, RC_PROG ": out of memory\n");
			r = RC_FAILED;
			goto out;
		}
		next = JSTR(page, "next_cursor");
		/* A cursor that does not move would page forever. */
		if (!next || (cursor && strcmp(next, cursor) == 0))
			break;
		free(cursor);
		if (!(cursor = httpc_escape(next))) {
			r = RC_FAILED;
			goto out;
		}
		json_decref(page);
		page = NULL;
	}
	if (!all) {
		fprintf(stderr, RC_PROG ": out of memory\n");
		goto out;
	}
	*ret = all;
	all = NULL;
	r = 0;
out:
	json_decref(page);
	json_decref(all);
	free(cursor);
	return r;
}

int rc_api_stream_open(struct rc *rc, const char *path, const char *extra,
		       bool (*on_data)(void *cls, const char *data, size_t len), void *cls,
		       struct httpc_stream **ret)
{
	int r;

	if (!rc->http && (r = connect_api(rc)) != 0)
		return r;
	if (httpc_stream_open(rc->http, path, "text/event-stream", extra, on_data, cls, ret) < 0) {
		fprintf(stderr, RC_PROG ": out of memory\n");
		return RC_FAILED;
	}
	return 0;
}

int rc_api_stream_run(struct rc *rc, struct httpc_stream *s, int wait_ms, bool *connected,
		      char *why, size_t why_len)
{
	struct httpc_reply rep = {0};
	long status = 0;
	int r = httpc_stream_run(s, wait_ms, &status, &rep, why, why_len);

	*connected = status >= 200 && status < 300;
	if (r == 0)
		return 0;
	if (r < 0)
		return RC_UNREACHABLE;
	if (*connected) {
		httpc_reply_done(&rep);
		why[0] = '\0';
		return RC_UNREACHABLE;
	}
	print_error(rc, &rep);
	r = exit_for_status(rep.status);
	httpc_reply_done(&rep);
	return r;
}

void rc_api_stream_close(struct httpc_stream *s)
{
	httpc_stream_free(s);
}
