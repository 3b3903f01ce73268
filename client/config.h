/* The CLI's configuration file: profiles of a controller URL, an API token and a CA file,
 * written by `railyard login` (mode 0600 in a 0700 directory) and read by every command.
 *   {"current": "default",
 *    "profiles": {"default": {"url": "https://…", "token": "rya1.…", "ca": "/abs/ca.crt"}}}
 * Where: $RAILYARD_CONFIG, else $XDG_CONFIG_HOME/railyard/config.json, else
 * ~/.config/railyard/config.json. */
#ifndef RAILYARD_CLIENT_CONFIG_H
#define RAILYARD_CLIENT_CONFIG_H

#include <jansson.h>

#define RC_CONFIG_MAX	   (1024 * 1024)
#define RC_PROFILE_DEFAULT "default"

/* The file's path (caller frees); NULL when no variable names a home. */
char *rc_config_path(void);
/* The file as a document: 0 with *ret (caller decrefs); an empty document when there is no file;
 * -RY_E_INVALID when it is not a JSON object (the reason said), other -errno as read. A file
 * that others may read is used, with a warning. */
__attribute__((warn_unused_result)) int rc_config_load(const char *path, json_t **ret);
/* Write doc to path atomically (mode 0600; missing directories made 0700). 0 or -errno. */
__attribute__((warn_unused_result)) int rc_config_save(const char *path, const json_t *doc);
/* The profile to use: name, else $RAILYARD_PROFILE, else the file's current one, else
 * "default" (borrowed from doc or the environment). */
const char *rc_config_profile_name(const json_t *doc, const char *name);
/* A profile's object (borrowed), or NULL. */
json_t *rc_config_profile(const json_t *doc, const char *name);

#endif
