/* The CLI's configuration file (config.h): where it lives, reading it bounded, writing it
 * private. */
#include "client/config.h"
#include "client/rc.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *join(const char *a, const char *b)
{
	size_t len = strlen(a) + strlen(b) + 1;
	char *s = malloc(len);

	if (s)
		snprintf(s, len, "%s%s", a, b);
	return s;
}

char *rc_config_path(void)
{
	const char *v = getenv("RAILYARD_CONFIG");

	if (v && *v)
		return strdup(v);
	if ((v = getenv("XDG_CONFIG_HOME")) && *v == '/')
		return join(v, "/railyard/config.json");
	if ((v = getenv("HOME")) && *v)
		return join(v, "/.config/railyard/config.json");
	return NULL;
}

int rc_config_load(const char *path, json_t **ret)
{
	char *text = NULL;
	size_t len = 0;
	json_error_t e;
	struct stat sb;
	json_t *doc;
	int r = fs_read_file(path, RC_CONFIG_MAX, &text, &len);

	if (r == -ENOENT) {
		*ret = json_object();
		return *ret ? 0 : -ENOMEM;
	}
	if (r < 0)
		return r;
	doc = json_loadb(text, len, 0, &e);
	explicit_bzero(text, len);
	free(text);
	if (!json_is_object(doc)) {
		util_fprintf_safe(stderr, RC_PROG ": %s: not a configuration file (%s)\n", path,
				  doc ? "not a JSON object" : e.text);
		json_decref(doc);
		return -RY_E_INVALID;
	}
	if (stat(path, &sb) == 0 && (sb.st_mode & 077))
		util_fprintf_safe(stderr,
				  RC_PROG ": warning: %s holds API tokens but others may read it "
					  "(chmod 600 it)\n",
				  path);
	*ret = doc;
	return 0;
}

int rc_config_save(const char *path, const json_t *doc)
{
	char *text = json_dumps(doc, JSON_INDENT(2)), *dir = strdup(path), *slash;
	size_t len;
	int r = -ENOMEM;

	if (!text || !dir)
		goto out;
	len = strlen(text);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		/* Only what is missing is made, private; an existing directory keeps its mode. */
		if ((r = fs_mkdir_p(dir, 0700)) < 0)
			goto out;
	}
	r = fs_write_file_atomic(path, text, len, 0600);
out:
	if (text)
		explicit_bzero(text, strlen(text));
	free(text);
	free(dir);
	return r;
}

const char *rc_config_profile_name(const json_t *doc, const char *name)
{
	const char *v = getenv("RAILYARD_PROFILE");

	if (name)
		return name;
	if (v && *v)
		return v;
	v = json_string_value(json_object_get(doc, "current"));
	return v ? v : RC_PROFILE_DEFAULT;
}

json_t *rc_config_profile(const json_t *doc, const char *name)
{
	json_t *p = json_object_get(json_object_get(doc, "profiles"), name);

	return json_is_object(p) ? p : NULL;
}
