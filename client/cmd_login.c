/* railyard login|logout: a profile (URL, API token, CA file) checked against the controller and
 * saved in the configuration file, or taken out of it. */
#include "client/config.h"
#include "client/rc.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OPT_NAME = 900 };

static const struct option name_opts[] = {
	{"name", required_argument, NULL, OPT_NAME},
	{0},
};

static bool profile_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.'))
			return false;
	return true;
}

/* Load the file for a change: 0 with *ret_path and *ret_doc, or the exit code. */
static int load(char **ret_path, json_t **ret_doc)
{
	int r;

	if (!(*ret_path = rc_config_path())) {
		fprintf(stderr,
			RC_PROG ": no home: set HOME, XDG_CONFIG_HOME or RAILYARD_CONFIG\n");
		return RC_USAGE;
	}
	if ((r = rc_config_load(*ret_path, ret_doc)) < 0) {
		if (r != -RY_E_INVALID)
			util_fprintf_safe(stderr, RC_PROG ": %s: %s\n", *ret_path, ry_strerror(r));
		free(*ret_path);
		*ret_path = NULL;
		return RC_FAILED;
	}
	return 0;
}

static int save(const char *path, const json_t *doc)
{
	int r = rc_config_save(path, doc);

	if (r < 0) {
		util_fprintf_safe(stderr, RC_PROG ": writing %s: %s\n", path, ry_strerror(r));
		return RC_FAILED;
	}
	return 0;
}

static int cmd_login(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	const char *name = NULL;
	char ca[PATH_MAX], *path = NULL;
	json_t *doc = NULL, *profiles, *prof = NULL;
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, name_opts)) != -1) {
		if (c == OPT_NAME)
			name = optarg;
		else
			return rc_usage(cmd, c);
	}
	if (rc->local) {
		fprintf(stderr, RC_PROG
			" login: --local needs no login (the socket names the "
			"caller); pass --local or --state-dir DIR to each command instead\n");
		return RC_USAGE;
	}
	if (argc - optind == 0) {
		fprintf(stderr, RC_PROG
			" login: the controller's URL is missing: " RC_PROG
			" login https://HOST:PORT --token T (--token - reads it from stdin; "
			"--ca FILE the controller's ca.crt)\n");
		return rc_usage(cmd, '?');
	}
	if ((r = rc_positionals(cmd, argc, argv, 1, false)) != 0)
		return r;
	rc->url = argv[optind];
	if ((name || (name = rc->profile)) && !profile_name_ok(name))
		return rc_bad("--name (1-64 letters, digits, '.', '_' or '-')", name);
	if (!rc->token && !(rc->token = getenv("RAILYARD_TOKEN")))
		return rc_bad("login", "(--token is required; --token - reads it from stdin)");
	/* The CA is saved by its absolute path: later commands run from anywhere. */
	if (rc->ca && !realpath(rc->ca, ca)) {
		util_fprintf_safe(stderr, RC_PROG ": --ca %s: cannot read it\n", rc->ca);
		return RC_USAGE;
	}
	if (rc->ca)
		rc->ca = ca;
	rc->no_profile = true; /* exactly what was given, nothing from a saved profile */
	/* One request that any role may make proves the URL, the CA and the token. */
	if ((r = rc_api(rc, "GET", "/api/v1/nodes?limit=1", NULL, NULL)) != 0)
		return r;
	if ((r = load(&path, &doc)) != 0)
		return r;
	if (!name)
		name = rc->profile ? rc->profile : RC_PROFILE_DEFAULT;
	r = RC_FAILED;
	profiles = json_object_get(doc, "profiles");
	if (!json_is_object(profiles)) {
		profiles = json_object();
		if (json_object_set_new(doc, "profiles", profiles) < 0)
			goto out;
	}
	prof = json_pack("{s:s, s:s}", "url", rc_api_url(rc), "token", rc->token);
	if (!prof || (rc->ca && json_object_set_new(prof, "ca", json_string(rc->ca)) < 0) ||
	    json_object_set(profiles, name, prof) < 0 ||
	    json_object_set_new(doc, "current", json_string(name)) < 0)
		goto out;
	if ((r = save(path, doc)) != 0)
		goto out;
	if (rc->json) {
		json_t *o = json_pack("{s:s, s:s, s:s}", "profile", name, "url", rc_api_url(rc),
				      "config", path);

		r = o ? rc_print_json(stdout, o) : RC_FAILED;
		json_decref(o);
	} else {
		util_fprintf_safe(stdout, "logged in to %s (profile %s, saved in %s)\n",
				  rc_api_url(rc), name, path);
	}
out:
	if (r == RC_FAILED && !prof)
		fprintf(stderr, RC_PROG ": out of memory\n");
	json_decref(prof);
	json_decref(doc);
	free(path);
	return r;
}

static int cmd_logout(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	const char *name = NULL;
	char *path = NULL, *url = NULL, *nm = NULL;
	json_t *doc = NULL, *prof;
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, name_opts)) != -1) {
		if (c == OPT_NAME)
			name = optarg;
		else
			return rc_usage(cmd, c);
	}
	if ((r = rc_positionals(cmd, argc, argv, 0, false)) != 0)
		return r;
	if ((r = load(&path, &doc)) != 0)
		return r;
	name = rc_config_profile_name(doc, name ? name : rc->profile);
	if (!(prof = rc_config_profile(doc, name))) {
		util_fprintf_safe(stderr, RC_PROG ": logout: no profile %s in %s\n", name, path);
		r = RC_FAILED;
		goto out;
	}
	/* name may point into doc (its current profile): copied before that goes. */
	url = strdup(rc_str(prof, "url", "?"));
	if (!url || !(nm = strdup(name))) {
		fprintf(stderr, RC_PROG ": out of memory\n");
		r = RC_FAILED;
		goto out;
	}
	if (strcmp(rc_str(doc, "current", ""), nm) == 0)
		json_object_del(doc, "current");
	json_object_del(json_object_get(doc, "profiles"), nm);
	if ((r = save(path, doc)) == 0)
		util_fprintf_safe(stdout,
				  "logged out of %s: the token is no longer kept here (revoke it "
				  "with `" RC_PROG " tokens revoke` if it should stop working)\n",
				  url);
out:
	free(nm);
	free(url);
	json_decref(doc);
	free(path);
	return r;
}

const struct rc_command rc_login_commands[] = {
	{"login", "URL --token T|- [--ca FILE] [--name PROFILE]",
	 "check a controller's URL and API token, and save them as a profile (the current one)",
	 cmd_login},
	{"logout", "[--name PROFILE]", "forget a profile's URL and token (the current one)",
	 cmd_logout},
	{0},
};
