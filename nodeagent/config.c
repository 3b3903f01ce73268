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

/* Words of a command line split on blanks (no quoting: argv for the runner, never a shell).
 * -RY_E_INVALID for control characters, too many words, or a program that is a relative
 * path. */
static int split_command(const char *text, char ***ret)
{
	char **argv = calloc(AGENT_REBOOT_ARGS + 1, sizeof(*argv));
	const char *p = text;
	size_t n = 0;

	if (!argv)
		return -ENOMEM;
	for (const char *c = text; *c; c++)
		if (iscntrl((unsigned char)*c) && *c != '\t')
			goto bad;
	while (*p) {
		size_t len;

		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		len = strcspn(p, " \t");
		if (n == AGENT_REBOOT_ARGS)
			goto bad;
		argv[n] = strndup(p, len);
		if (!argv[n]) {
			for (size_t i = 0; i < n; i++)
				free(argv[i]);
			free(argv);
			return -ENOMEM;
		}
		n++;
		p += len;
	}
	if (n == 0 || (strchr(argv[0], '/') && argv[0][0] != '/'))
		goto bad;
	*ret = argv;
	return 0;
bad:
	for (size_t i = 0; i < n; i++)
		free(argv[i]);
	free(argv);
	return -RY_E_INVALID;
}

void agent_config_done(struct agent_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->controller);
	free(cfg->node_id);
	free(cfg->cluster);
	free(cfg->reboot_command);
	for (size_t i = 0; cfg->reboot_argv && cfg->reboot_argv[i]; i++)
		free(cfg->reboot_argv[i]);
	free(cfg->reboot_argv);
	free(cfg->orted);
	free(cfg->mpirun);
	free(cfg->coll_program);
	memset(cfg, 0, sizeof(*cfg));
}

int agent_config_parse(const char *text, const char *path, struct agent_config *ret, char *errbuf,
		       size_t errlen)
{
	struct agent_config cfg = {0};
	char *copy = strdup(text), *save = NULL, *line;
	int lineno = 0, reboot_line = 0, r = 0;

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
		else if (strcmp(key, "orted") == 0)
			slot = &cfg.orted;
		else if (strcmp(key, "mpirun") == 0)
			slot = &cfg.mpirun;
		else if (strcmp(key, "coll_program") == 0)
			slot = &cfg.coll_program;
		else if (strcmp(key, "reboot_command") == 0) {
			slot = &cfg.reboot_command;
			reboot_line = lineno;
		} else {
			snprintf(errbuf, errlen, "%s:%d: unknown key '%s'", path, lineno, key);
			r = -RY_E_INVALID;
			goto out;
		}
		if (!*val) {
			snprintf(errbuf, errlen, "%s:%d: empty value for '%s'", path, lineno, key);
			r = -RY_E_INVALID;
			goto out;
		}
		if (slot != &cfg.controller && slot != &cfg.node_id && slot != &cfg.cluster &&
		    slot != &cfg.reboot_command && (val[0] != '/' || util_has_control(val))) {
			snprintf(errbuf, errlen, "%s:%d: '%s' must be an absolute path", path,
				 lineno, key);
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
	if (cfg.reboot_command) {
		r = split_command(cfg.reboot_command, &cfg.reboot_argv);
		if (r < 0) {
			snprintf(errbuf, errlen,
				 "%s:%d: reboot_command: expected a program (a name or an absolute "
				 "path) and at most %d words in all, no control characters",
				 path, reboot_line, AGENT_REBOOT_ARGS);
			goto out;
		}
	}
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
		     "cluster = %s\n%s%s%s%s%s%s%s%s%s%s%s%s",
		     cfg->controller, cfg->node_id, cfg->cluster ? cfg->cluster : "",
		     cfg->reboot_command ? "reboot_command = " : "",
		     cfg->reboot_command ? cfg->reboot_command : "",
		     cfg->reboot_command ? "\n" : "", cfg->orted ? "orted = " : "",
		     cfg->orted ? cfg->orted : "", cfg->orted ? "\n" : "",
		     cfg->mpirun ? "mpirun = " : "", cfg->mpirun ? cfg->mpirun : "",
		     cfg->mpirun ? "\n" : "", cfg->coll_program ? "coll_program = " : "",
		     cfg->coll_program ? cfg->coll_program : "",
		     cfg->coll_program ? "\n" : "") < 0) {
		free(path);
		return -ENOMEM;
	}
	r = fs_write_file_atomic(path, text, strlen(text), 0644);
	free(text);
	free(path);
	return r;
}
