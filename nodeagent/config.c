/* agent.conf: a few "key = value" lines written at enrollment. */
#include "nodeagent/config.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

void agent_config_done(struct agent_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->controller);
	free(cfg->node_id);
	free(cfg->cluster);
	memset(cfg, 0, sizeof(*cfg));
}

int agent_config_parse(const char *text, const char *path, struct agent_config *ret, char *errbuf,
		       size_t errlen)
{
	struct agent_config cfg = {0};
	char *copy = strdup(text), *save = NULL, *line;
	int lineno = 0, r = 0;

	if (!copy)
		return -ENOMEM;
	/* strtok_r skips empty lines, so count them by hand. */
	for (char *p = copy; p; p = line) {
		char *eq, *key, *val, **slot;

		line = strchr(p, '\n');
		if (line)
			*line++ = '\0';
		lineno++;
		key = trim(p);
		if (!*key || *key == '#')
			continue;
		eq = strchr(key, '=');
		if (!eq) {
			snprintf(errbuf, errlen, "%s:%d: expected 'key = value'", path, lineno);
			r = -RY_E_INVALID;
			goto out;
		}
		*eq = '\0';
		val = trim(eq + 1);
		key = trim(key);
		if (strcmp(key, "controller") == 0)
			slot = &cfg.controller;
		else if (strcmp(key, "node_id") == 0)
			slot = &cfg.node_id;
		else if (strcmp(key, "cluster") == 0)
			slot = &cfg.cluster;
		else {
			snprintf(errbuf, errlen, "%s:%d: unknown key '%s'", path, lineno, key);
			r = -RY_E_INVALID;
			goto out;
		}
		if (!*val) {
			snprintf(errbuf, errlen, "%s:%d: empty value for '%s'", path, lineno, key);
			r = -RY_E_INVALID;
			goto out;
		}
		free(*slot);
		*slot = strdup(val);
		if (!*slot) {
			r = -ENOMEM;
			goto out;
		}
	}
	(void)save;
	if (!cfg.controller || !cfg.node_id) {
		snprintf(errbuf, errlen, "%s: 'controller' and 'node_id' are required", path);
		r = -RY_E_INVALID;
		goto out;
	}
	if (!util_hostport_ok(cfg.controller, false)) {
		snprintf(errbuf, errlen,
			 "%s: controller '%s' is not HOST:PORT with a port of 1-65535", path,
			 cfg.controller);
		r = -RY_E_INVALID;
		goto out;
	}
	*ret = cfg;
	memset(&cfg, 0, sizeof(cfg));
out:
	agent_config_done(&cfg);
	free(copy);
	return r;
}

int agent_config_load(const char *state_dir, struct agent_config *ret, char *errbuf, size_t errlen)
{
	char *path = fs_path_join(state_dir, "agent.conf"), *text = NULL;
	int r;

	if (!path)
		return -ENOMEM;
	r = fs_read_file(path, 64 * 1024, &text, NULL);
	if (r < 0)
		snprintf(errbuf, errlen, "%s: %s (enroll first: railyard-agent enroll ...)", path,
			 ry_strerror(r));
	else
		r = agent_config_parse(text, path, ret, errbuf, errlen);
	free(text);
	free(path);
	return r;
}

int agent_config_save(const char *state_dir, const struct agent_config *cfg)
{
	char *path = fs_path_join(state_dir, "agent.conf"), *text = NULL;
	int r;

	if (!path)
		return -ENOMEM;
	if (asprintf(&text,
		     "# Written by railyard-agent enroll.\ncontroller = %s\nnode_id = %s\n"
		     "cluster = %s\n",
		     cfg->controller, cfg->node_id, cfg->cluster ? cfg->cluster : "") < 0) {
		free(path);
		return -ENOMEM;
	}
	r = fs_write_file_atomic(path, text, strlen(text), 0644);
	free(text);
	free(path);
	return r;
}
