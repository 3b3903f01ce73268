/* The orted command-line check shared by the controller and the agents: an allow-list of MCA
 * keys, a pattern per key, and nothing else. */
#include "common/launch/orted.h"
#include "common/util/error.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum value_kind {
	V_DIGITS, /* a job id, a vpid, a count */
	V_WORD,	  /* a component list: pml ucx, btl tcp,self,vader, pmix ^s1,s2 */
	V_URI,	  /* the HNP's contact URI, the node regex */
	V_IFACES, /* interface names or CIDRs */
	V_PATH,	  /* an absolute path */
	V_RELAY,  /* plm_rsh_agent: the relay command */
	V_ONE,	  /* exactly "1" */
};

struct key_rule {
	const char *key;
	enum value_kind kind;
	const char *exact; /* when set, the only value allowed */
};

/* What orted 4.1 is given by an rsh launch (seen on its command line: the ess/orte/plm/pmix
 * keys are mpirun's own; pml, btl, osc, the interface lists, mca_base_param_files and
 * hwloc_base_binding_policy are forwarded from mpirun's command line as the launcher sets
 * them). Everything else is refused: an MCA parameter such as orte_fork_agent would let an
 * orted start any program. */
static const struct key_rule rules[] = {
	{"ess", V_WORD, "env"},
	{"ess_base_jobid", V_DIGITS, NULL},
	{"ess_base_vpid", V_DIGITS, NULL},
	{"ess_base_num_procs", V_DIGITS, NULL},
	{"orte_node_regex", V_URI, NULL},
	{"orte_hnp_uri", V_URI, NULL},
	{"plm", V_WORD, "rsh"},
	{"pmix", V_WORD, NULL},
	{"plm_rsh_agent", V_RELAY, NULL},
	{"plm_rsh_no_tree_spawn", V_ONE, NULL},
	{"pml", V_WORD, NULL},
	{"btl", V_WORD, NULL},
	{"osc", V_WORD, NULL},
	{"pml_ucx_tls", V_WORD, NULL},
	{"pml_ucx_devices", V_WORD, NULL},
	{"mca_base_param_files", V_PATH, NULL},
	{"btl_tcp_if_include", V_IFACES, NULL},
	{"btl_tcp_if_exclude", V_IFACES, NULL},
	{"oob_tcp_if_include", V_IFACES, NULL},
	{"oob_tcp_if_exclude", V_IFACES, NULL},
	{"hwloc_base_binding_policy", V_WORD, NULL},
};

static bool only(const char *s, const char *extra, bool alnum)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		bool ok = (alnum && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
				     (c >= '0' && c <= '9'))) ||
			  (c && strchr(extra, c));

		if (!ok)
			return false;
	}
	return true;
}

/* "/ABSOLUTE/PATH/railyard-agent rsh" */
static bool relay_shape(const char *v)
{
	static const char tail[] = "/railyard-agent rsh";
	size_t n = strlen(v), t = sizeof(tail) - 1;

	return v[0] == '/' && n > t && strcmp(v + n - t, tail) == 0 && only(v, "/._-+ ", true) &&
	       !strstr(v, "..") && strchr(v, ' ') == v + n - 4;
}

static bool value_ok(const struct key_rule *k, const char *v, const char *relay,
		     const char *param_file, const char **why)
{
	*why = "a value of the wrong form";
	if (!*v) {
		*why = "an empty value";
		return false;
	}
	if (k->exact) {
		*why = "a value other than the one allowed";
		return strcmp(v, k->exact) == 0;
	}
	switch (k->kind) {
	case V_DIGITS:
		return strlen(v) <= 20 && only(v, "0123456789", false);
	case V_WORD:
		return only(v, "_,^-", true);
	case V_URI:
		return only(v, ".,;:/[]()@%_-+", true);
	case V_IFACES:
		return only(v, ".,:/_-", true);
	case V_PATH:
		if (param_file) {
			*why = "a file other than the run's Open MPI settings";
			return strcmp(v, param_file) == 0;
		}
		return v[0] == '/' && !strstr(v, "..") && only(v, "/._-,", true);
	case V_RELAY:
		*why = "a command other than the launcher's relay";
		return relay ? strcmp(v, relay) == 0 : relay_shape(v);
	case V_ONE:
		*why = "tree spawn on (it must be 1)";
		return strcmp(v, "1") == 0;
	}
	return false;
}

/* v without the double quotes a remote shell would have removed. New string, or NULL. */
static char *unquote(const char *v)
{
	size_t n = strlen(v);

	if (n >= 2 && v[0] == '"' && v[n - 1] == '"')
		return strndup(v + 1, n - 2);
	return strdup(v);
}

void ry_orted_argv_free(char **argv)
{
	for (size_t i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}

const char *ry_orted_argv_get(char *const *argv, const char *key)
{
	for (size_t i = 1; argv && argv[i] && argv[i + 1] && argv[i + 2]; i += 3)
		if (strcmp(argv[i + 1], key) == 0)
			return argv[i + 2];
	return NULL;
}

int ry_orted_argv_check(const char *const *argv, size_t argc, const char *relay,
			const char *param_file, char ***ret_argv, char *err, size_t errlen)
{
	bool seen[sizeof(rules) / sizeof(rules[0])] = {false};
	const char *cmd;
	char **out = NULL;
	size_t n = 0;
	int r = -RY_E_INVALID;

	if (argc == 0 || !argv[0]) {
		snprintf(err, errlen, "an empty command line");
		return -RY_E_INVALID;
	}
	if (argc > RY_ORTED_ARGS_MAX) {
		snprintf(err, errlen, "%zu arguments (at most %d)", argc, RY_ORTED_ARGS_MAX);
		return -RY_E_INVALID;
	}
	for (size_t i = 0; i < argc; i++) {
		if (!argv[i]) {
			snprintf(err, errlen, "argument %zu: missing", i);
			return -RY_E_INVALID;
		}
	}
	/* Open MPI wraps the daemon for a Bourne remote shell (the launching user's login shell is
	 * sh): "( test ! -r ./.profile || . ./.profile; orted ... )", word by word. No shell runs
	 * it here: exactly that wrapper is taken off, and the daemon's own words checked. */
	{
		static const char *const wrap[] = {"(",		 "test", "!", "-r",
						   "./.profile", "||",	 ".", "./.profile;"};
		size_t w = sizeof(wrap) / sizeof(wrap[0]), k = 0;
		const char *a0 = argv[0];

		while (*a0 == ' ')
			a0++;
		if (argc > w + 1 && strcmp(a0, wrap[0]) == 0) {
			for (k = 1; k < w && strcmp(argv[k], wrap[k]) == 0; k++)
				;
			if (k == w && strcmp(argv[argc - 1], ")") == 0) {
				argv += w;
				argc -= w + 1;
			}
		}
	}
	/* The command: "orted" (rsh passes it with a leading space, the remote shell's word). */
	cmd = argv[0];
	while (*cmd == ' ')
		cmd++;
	if (strcmp(cmd, "orted") != 0) {
		snprintf(err, errlen, "argument 0 (%.64s): only orted may be started", argv[0]);
		return -RY_E_INVALID;
	}
	out = calloc(argc + 1, sizeof(*out));
	if (!out || !(out[n++] = strdup("orted")))
		goto nomem;
	for (size_t i = 1; i < argc; i++) {
		const struct key_rule *k = NULL;
		const char *why;
		char *v;
		size_t ri;

		for (const char *p = argv[i]; *p; p++) {
			if ((unsigned char)*p < 0x20 || *p == 0x7f) {
				snprintf(err, errlen, "argument %zu: a control character", i);
				goto fail;
			}
		}
		if (strcmp(argv[i], "--daemonize") == 0)
			continue;
		if (strcmp(argv[i], "-mca") != 0 && strcmp(argv[i], "--mca") != 0) {
			snprintf(err, errlen, "argument %zu (%.64s): not -mca KEY VALUE", i,
				 argv[i]);
			goto fail;
		}
		if (i + 2 >= argc) {
			snprintf(err, errlen, "argument %zu (%s): without KEY VALUE", i, argv[i]);
			goto fail;
		}
		for (ri = 0; ri < sizeof(rules) / sizeof(rules[0]) && !k; ri++)
			if (strcmp(rules[ri].key, argv[i + 1]) == 0)
				k = &rules[ri];
		if (!k) {
			snprintf(err, errlen, "argument %zu: MCA key '%.64s' is not allowed", i + 1,
				 argv[i + 1]);
			goto fail;
		}
		ri--;
		if (seen[ri]) {
			snprintf(err, errlen, "argument %zu: MCA key %s given twice", i + 1,
				 k->key);
			goto fail;
		}
		seen[ri] = true;
		for (const char *p = argv[i + 2]; *p; p++) {
			if ((unsigned char)*p < 0x20 || *p == 0x7f) {
				snprintf(err, errlen, "argument %zu (%s): a control character",
					 i + 2, k->key);
				goto fail;
			}
		}
		v = unquote(argv[i + 2]);
		if (!v)
			goto nomem;
		if (strlen(v) > RY_ORTED_VALUE_MAX) {
			snprintf(err, errlen, "argument %zu (%s): longer than %d bytes", i + 2,
				 k->key, RY_ORTED_VALUE_MAX);
			free(v);
			goto fail;
		}
		if (!value_ok(k, v, relay, param_file, &why)) {
			snprintf(err, errlen, "argument %zu (%s = %.64s): %s", i + 2, k->key, v,
				 why);
			free(v);
			goto fail;
		}
		if (!(out[n++] = strdup("-mca")) || !(out[n++] = strdup(k->key))) {
			free(v);
			goto nomem;
		}
		out[n++] = v;
		i += 2;
	}
	/* Without these it is no daemon of an rsh launch: refused rather than guessed at. */
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		const char *key = rules[i].key;

		if (!seen[i] &&
		    (strcmp(key, "ess_base_jobid") == 0 || strcmp(key, "ess_base_vpid") == 0 ||
		     strcmp(key, "orte_hnp_uri") == 0 ||
		     strcmp(key, "plm_rsh_no_tree_spawn") == 0 ||
		     strcmp(key, "plm_rsh_agent") == 0)) {
			snprintf(err, errlen, "MCA key %s is missing", key);
			goto fail;
		}
	}
	*ret_argv = out;
	return 0;
nomem:
	r = -ENOMEM;
	snprintf(err, errlen, "out of memory");
fail:
	ry_orted_argv_free(out);
	return r;
}
