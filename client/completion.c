/* railyard completion bash: a completion script made from the command tables themselves (the
 * names, and the options each synopsis shows), so that it cannot drift from the commands.
 * Install: railyard completion bash > /etc/bash_completion.d/railyard */
#include "client/rc.h"

#include <stdlib.h>
#include <string.h>

/* Each --option of a synopsis, and whether it takes a value ("--cluster C" does, "[--check]"
 * does not): a callback per option. */
static void synopsis_options(const char *s, void (*fn)(const char *name, size_t len, bool arg))
{
	while ((s = strstr(s, "--"))) {
		size_t len = 2 + strspn(s + 2, "abcdefghijklmnopqrstuvwxyz-");
		const char *next = s + len;

		fn(s, len, next[0] == ' ' && next[1] && !strchr("[-\n", next[1]));
		s = next;
	}
}

static bool is_global(const char *name, size_t len)
{
	for (size_t i = 0; rc_global_options[i].name; i++)
		if (strlen(rc_global_options[i].name) == len - 2 &&
		    strncmp(rc_global_options[i].name, name + 2, len - 2) == 0)
			return true;
	return false;
}

static void print_any(const char *name, size_t len, bool arg)
{
	if (!is_global(name, len))
		printf(" %.*s", (int)len, name);
}

static void print_with_arg(const char *name, size_t len, bool arg)
{
	if (arg)
		printf("|%.*s", (int)len, name);
}

static void print_globals(void)
{
	for (size_t i = 0; rc_global_options[i].name; i++)
		printf(" --%s", rc_global_options[i].name);
}

/* Groups ("signoff") and their subcommands, as a case arm each. */
static void print_groups(void)
{
	for (size_t t = 0; t < rc_tables_listed; t++) {
		for (const struct rc_command *c = rc_tables[t]; c->name; c++) {
			const char *sp = strchr(c->name, ' ');

			/* The group's arm once, at its first subcommand. */
			if (!sp || (c != rc_tables[t] &&
				    strncmp(c[-1].name, c->name, (size_t)(sp - c->name) + 1) == 0))
				continue;
			printf("\t%.*s)\n\t\tCOMPREPLY=($(compgen -W \"", (int)(sp - c->name),
			       c->name);
			for (const struct rc_command *s = c;
			     s->name && !strncmp(s->name, c->name, (size_t)(sp - c->name) + 1); s++)
				printf("%s%s", s == c ? "" : " ", s->name + (sp - c->name) + 1);
			printf("\" -- \"$cur\"))\n\t\t;;\n");
		}
	}
}

static void print_script(void)
{
	printf("# bash completion for " RC_PROG " (" RC_PROG " completion bash)\n"
	       "_railyard() {\n"
	       "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
	       "\tlocal cmd='' i w\n"
	       "\tcase $prev in\n"
	       "\t--playbook|--ca|--token)\n"
	       "\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n\t\treturn\n\t\t;;\n"
	       "\t--dir)\n\t\tCOMPREPLY=($(compgen -d -- \"$cur\"))\n\t\treturn\n\t\t;;\n"
	       "\t--transport)\n"
	       "\t\tCOMPREPLY=($(compgen -W \"tcp verbs\" -- \"$cur\"))\n\t\treturn\n\t\t;;\n"
	       "\t--role)\n"
	       "\t\tCOMPREPLY=($(compgen -W \"admin integrator operator viewer\" -- \"$cur\"))\n"
	       "\t\treturn\n\t\t;;\n"
	       "\tesac\n"
	       "\t# The command's words so far, leaving out options and their values.\n"
	       "\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
	       "\t\tw=${COMP_WORDS[i]}\n"
	       "\t\tcase $w in\n"
	       "\t\t--url|--token|--ca|--profile");
	for (size_t t = 0; t < rc_tables_listed; t++)
		for (const struct rc_command *c = rc_tables[t]; c->name; c++)
			synopsis_options(c->synopsis, print_with_arg);
	printf(")\n\t\t\t((i++))\n\t\t\t;;\n"
	       "\t\t-*) ;;\n"
	       "\t\t*) cmd=\"${cmd:+$cmd }$w\" ;;\n"
	       "\t\tesac\n"
	       "\tdone\n"
	       "\tcase $cmd in\n"
	       "\t'')\n\t\tCOMPREPLY=($(compgen -W \"");
	for (size_t t = 0; t < rc_tables_listed; t++)
		for (const struct rc_command *c = rc_tables[t]; c->name; c++) {
			size_t len = strcspn(c->name, " ");

			/* A group's name once. */
			if (c->name[len] && c != rc_tables[t] &&
			    !strncmp(c[-1].name, c->name, len + 1))
				continue;
			printf("%s%.*s", t || c != rc_tables[t] ? " " : "", (int)len, c->name);
		}
	printf(" help\" -- \"$cur\"))\n\t\t;;\n");
	print_groups();
	printf("\tcompletion)\n\t\tCOMPREPLY=($(compgen -W \"bash\" -- \"$cur\"))\n\t\t;;\n");
	for (size_t t = 0; t < rc_tables_listed; t++)
		for (const struct rc_command *c = rc_tables[t]; c->name; c++) {
			printf("\t'%s' | '%s '*)\n\t\tCOMPREPLY=($(compgen -W \"", c->name,
			       c->name);
			synopsis_options(c->synopsis, print_any);
			print_globals();
			printf("\" -- \"$cur\"))\n\t\t;;\n");
		}
	printf("\tesac\n"
	       "}\n"
	       "complete -F _railyard " RC_PROG "\n");
}

static int cmd_completion(struct rc *rc, const struct rc_command *cmd, int argc, char **argv)
{
	int c, r;

	while ((c = rc_getopt(rc, argc, argv, (const struct option[]){{0}})) != -1)
		return rc_usage(cmd, c);
	if ((r = rc_positionals(cmd, argc, argv, 1, false)) != 0)
		return r;
	if (strcmp(argv[optind], "bash") != 0)
		return rc_bad("shell (bash is the one supported)", argv[optind]);
	print_script();
	return RC_OK;
}

const struct rc_command rc_completion_commands[] = {
	{"completion", "bash", "print a bash completion script", cmd_completion},
	{0},
};
