/* The serving controller's REST API as the controller's own commands reach it: plain HTTP over
 * the state directory's api.sock, where the kernel names the caller (root or the controller's
 * user: an unscoped admin, audited as "local:uid N"). One writer: while a controller serves a
 * state directory, every change goes through it; its error body comes back as a ctl_error. */
#include "controller/cli/cli.h"
#include "controller/api/api.h"
#include "controller/service.h"
#include "common/httpc/httpc.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define PROG "railyard-controller"

#define JSTR(o, k) json_string_value(json_object_get((o), (k)))

/* "unix:/abs/STATE_DIR/api.sock" (a relative state directory made absolute from the working
 * directory, as the controller bound it). Caller frees; NULL: out of memory or no cwd. */
static char *socket_url(const char *state_dir)
{
	char cwd[PATH_MAX], *url = NULL;
	int n;

	if (state_dir[0] == '/')
		n = asprintf(&url, HTTPC_UNIX_PREFIX "%s/%s", state_dir, CTL_API_SOCKET);
	else if (getcwd(cwd, sizeof(cwd)))
		n = asprintf(&url, HTTPC_UNIX_PREFIX "%s/%s/%s", cwd, state_dir, CTL_API_SOCKET);
	else
		return NULL;
	return n < 0 ? NULL : url;
}

int cli_api_open(const char *state_dir, struct httpc **ret)
{
	struct httpc_reply rep = {0};
	struct httpc *h = NULL;
	char *url, why[512] = "";
	const char *path;
	struct stat stt;
	int r;

	errno = 0;
	if (!(url = socket_url(state_dir))) {
		r = errno ? -errno : -ENOMEM;
		log_error("%s/%s: %s", state_dir, CTL_API_SOCKET, ry_strerror(r));
		return r;
	}
	path = url + strlen(HTTPC_UNIX_PREFIX);
	/* No socket: no controller (or one that never served here). */
	if (stat(path, &stt) < 0) {
		r = errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
		if (r < 0)
			log_error("%s: %s%s", path, ry_strerror(r),
				  r == -EACCES ? " (run as root or as the controller's user)" : "");
		goto out;
	}
	if (strlen(path) >= sizeof(((struct sockaddr_un *)NULL)->sun_path)) {
		log_error("%s: too long for a unix socket (at most %zu bytes)", path,
			  sizeof(((struct sockaddr_un *)NULL)->sun_path) - 1);
		r = -ENAMETOOLONG;
		goto out;
	}
	if ((r = httpc_new(url, NULL, NULL, &h)) < 0) {
		log_error("%s: %s", url, ry_strerror(r));
		goto out;
	}
	/* A socket nobody listens on is what a controller killed with -9 leaves. */
	r = httpc_request(h, "GET", "/healthz", NULL, &rep, why, sizeof(why));
	if (r == -ECONNREFUSED || r == -ENOENT) {
		r = 0;
		goto out;
	}
	if (r < 0) {
		log_error("%s: %s%s", path, why,
			  r == -EACCES ? " (run as root or as the controller's user)" : "");
		goto out;
	}
	if (rep.status != 200) {
		log_error("%s: GET /healthz answered HTTP %ld: %.200s", path, rep.status, rep.body);
		r = -EPROTO;
		goto out;
	}
	*ret = h;
	h = NULL;
	r = 1;
out:
	httpc_reply_done(&rep);
	httpc_free(h);
	free(url);
	return r;
}

int cli_api_path(char *buf, size_t len, const char *prefix, const char *id, const char *suffix)
{
	char *e = httpc_escape(id);
	int n;

	if (!e)
		return -ENOMEM;
	n = snprintf(buf, len, "%s%s%s", prefix, e, suffix ? suffix : "");
	free(e);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The API's error codes that are the services' own (static strings for ctl_error.code). */
static const char *const service_codes[] = {
	CTL_ERR_INVALID,  CTL_ERR_PLAYBOOK,    CTL_ERR_NOT_FOUND,
	CTL_ERR_CONFLICT, CTL_ERR_UNAVAILABLE, CTL_ERR_INTERNAL,
};

/* A status's ctl_error code and return value, for a code that is not a service's. */
static const char *code_of_status(long status, int *ret_r)
{
	switch (status) {
	case 400:
	case 413:
	case 415:
		*ret_r = -RY_E_INVALID;
		return CTL_ERR_INVALID;
	case 404:
		*ret_r = -RY_E_NOT_FOUND;
		return CTL_ERR_NOT_FOUND;
	case 409:
		*ret_r = -RY_E_INVALID;
		return CTL_ERR_CONFLICT;
	case 503:
		*ret_r = -RY_E_BUSY;
		return CTL_ERR_UNAVAILABLE;
	default:
		*ret_r = -EIO;
		return CTL_ERR_INTERNAL;
	}
}

/* err from a reply that is not a 2xx: {"error": {code, message, field, details}}. */
static int reply_error(const struct httpc_reply *rep, const json_t *doc, const char *playbook_file,
		       struct ctl_error *err)
{
	const json_t *e = json_object_get(doc, "error"), *d;
	const char *code = JSTR(e, "code"), *msg = JSTR(e, "message"), *field = JSTR(e, "field");
	const char *ours;
	int r;

	ours = code_of_status(rep->status, &r);
	if (!code || !msg)
		return ctl_error_set(err, r, ours, NULL,
				     "HTTP %ld from the serving controller%s%.200s", rep->status,
				     rep->len ? ": " : "", rep->body);
	for (size_t i = 0; i < RY_ARRAY_SIZE(service_codes); i++)
		if (strcmp(code, service_codes[i]) == 0)
			ours = service_codes[i];
	/* A code of the HTTP layer (forbidden, invalid_json, ...) stays in the message. */
	if (strcmp(code, ours) == 0)
		ctl_error_set(err, r, ours, field, "%s", msg);
	else
		ctl_error_set(err, r, ours, field, "%s: %s", code, msg);
	{
		size_t i;

		json_array_foreach(json_object_get(e, "details"), i, d)
		{
			const char *file = JSTR(d, "file") ? JSTR(d, "file") : "?";

			if (playbook_file && strcmp(file, "playbook") == 0)
				file = playbook_file;
			pb_diags_add(&err->diags, file,
				     (int)json_integer_value(json_object_get(d, "line")),
				     (int)json_integer_value(json_object_get(d, "column")), "%s",
				     JSTR(d, "message") ? JSTR(d, "message") : "");
		}
	}
	return r;
}

int cli_api_call(struct httpc *h, const char *method, const char *path, const json_t *body,
		 const char *playbook_file, json_t **ret, struct ctl_error *err)
{
	struct httpc_reply rep = {0};
	char *text = NULL, why[512] = "";
	json_error_t je;
	json_t *doc = NULL;
	int r;

	if (body && !(text = json_dumps(body, JSON_COMPACT)))
		return ctl_error_set(err, -ENOMEM, CTL_ERR_INTERNAL, NULL, "out of memory");
	r = httpc_request(h, method, path, text, &rep, why, sizeof(why));
	free(text);
	if (r < 0)
		return ctl_error_set(err, r, CTL_ERR_UNAVAILABLE, NULL,
				     "the serving controller did not answer %s %s (%s): %s", method,
				     path, httpc_url(h), why);
	if (rep.len && !(doc = json_loadb(rep.body, rep.len, 0, &je)) && rep.status >= 200 &&
	    rep.status < 300) {
		r = ctl_error_set(err, -EPROTO, CTL_ERR_INTERNAL, NULL,
				  "%s %s: the reply is not JSON (%s)", method, path, je.text);
		goto out;
	}
	if (rep.status < 200 || rep.status >= 300) {
		r = reply_error(&rep, doc, playbook_file, err);
		goto out;
	}
	r = (int)rep.status;
	if (ret) {
		*ret = doc;
		doc = NULL;
	}
out:
	json_decref(doc);
	httpc_reply_done(&rep);
	return r;
}
