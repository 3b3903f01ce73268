/* The old spellings of railyard-controller's operations commands: each now runs `railyard
 * --local NEW ARGS` (the one operations command line, over the state directory's api.sock),
 * saying on stderr that the spelling is deprecated and what it runs. */
#include "controller/cli/cli.h"
#include "common/util/exitcode.h"
#include "common/util/util.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "railyard-controller"
#define CLI  "railyard"

struct cli_alias {
	const char *old, *new;
};

static const struct cli_alias aliases[] = {
	{"deploy", "deploy"},
	{"deployments", "deployments"},
	{"validate", "validate"},
	{"campaigns", "campaigns"},
	{"campaign show", "campaign show"},
	{"campaign cancel", "campaign cancel"},
	{"signoff create", "signoff create"},
	{"signoff list", "signoff list"},
	{"signoff show", "signoff show"},
	{"signoff export", "signoff export"},
	{"signoff verify", "signoff verify"},
	{"revalidate", "revalidate"},
	{"bench run", "bench run"},
	{"bench list", "bench list"},
	{"bench show", "bench show"},
	{"bench cancel", "bench cancel"},
	{"nodes", "nodes"},
	{"node revoke", "node revoke"},
	{"audit", "audit"},
	{"playbook check", "playbook check"},
	{"token create", "enrollment-token create"},
	{"api-token list", "token list"},
	{"api-token revoke", "token revoke"},
};

/* The alias of argv[0] (argv[0] argv[1] for two words); *ret_words: how many it took. */
static const struct cli_alias *find(int argc, char **argv, int *ret_words)
{
	size_t len = strlen(argv[0]);

	for (size_t i = 0; i < RY_ARRAY_SIZE(aliases); i++) {
		const char *o = aliases[i].old;

		if (strcmp(o, argv[0]) == 0) {
			*ret_words = 1;
			return &aliases[i];
		}
		if (argc > 1 && strncmp(o, argv[0], len) == 0 && o[len] == ' ' &&
		    strcmp(o + len + 1, argv[1]) == 0) {
			*ret_words = 2;
			return &aliases[i];
		}
	}
	return NULL;
}

/* Exec path, or return when it is not there. */
static void try_exec(const char *path, char **args)
{
	if (access(path, X_OK) == 0)
		execv(path, args);
}

int cli_run_railyard(const char *state_dir, const char *new, int argc, char **argv)
{
	char self[PATH_MAX], path[PATH_MAX + 32], words[64], *word2, **args;
	ssize_t n;
	int k = 0;

	/* railyard --local [--state-dir D] NEW... ARGS... NULL */
	if (!(args = calloc((size_t)argc + 6, sizeof(*args)))) {
		fprintf(stderr, PROG ": out of memory\n");
		return RY_EXIT_FAILED;
	}
	snprintf(words, sizeof(words), "%s", new);
	args[k++] = (char *)CLI;
	args[k++] = (char *)"--local";
	if (state_dir) {
		args[k++] = (char *)"--state-dir";
		args[k++] = (char *)state_dir;
	}
	args[k++] = words;
	if ((word2 = strchr(words, ' '))) {
		*word2++ = '\0';
		args[k++] = word2;
	}
	for (int i = 0; i < argc; i++)
		args[k++] = argv[i];
	fflush(stderr);
	/* The railyard beside this program (installed: both in /usr/bin), the build tree's
	 * (build/controller/ and build/client/), else the PATH's. */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		snprintf(path, sizeof(path), "%s/" CLI, dirname(self));
		try_exec(path, args);
		snprintf(path, sizeof(path), "%s/../client/" CLI, self);
		try_exec(path, args);
	}
	execvp(CLI, args);
	fprintf(stderr, PROG ": cannot run " CLI " (package railyard-cli): %s\n", strerror(errno));
	free(args);
	return RY_EXIT_FAILED;
}

int cli_alias_run(int argc, char **argv)
{
	const struct cli_alias *a;
	int words;

	if (!(a = find(argc, argv, &words)))
		return -1;
	fprintf(stderr, PROG ": '%s' is deprecated; running: " CLI " --local %s", a->old, a->new);
	for (int i = words; i < argc; i++)
		util_fprintf_safe(stderr, " %s", argv[i]);
	fputc('\n', stderr);
	return cli_run_railyard(NULL, a->new, argc - words, argv + words);
}
