/* The step schema table, the conversion of step nodes into plan steps, and the checks shared by
 * the parser, the renderer and playbook_plan_validate() (the agent's view of outside input). */
#include "common/playbook/playbook_int.h"

#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/util/error.h"
#include "common/util/json.h"
#include "common/util/util.h"

/* clang-format off */
static const struct pb_field assert_fields[] = {
	{"that", PB_LIST_OF_MAP, true, NULL, "conditions on the node's facts; all must hold"},
	{0}};
static const struct pb_field package_fields[] = {
	{"name", PB_STRING, true, NULL, "Debian package name"},
	{"version", PB_STRING, false, NULL, "constraint \"[OP ]VERSION\", OP one of = != < <= > >= (default =)"},
	{"state", PB_STRING, false, "\"present\"", "present | absent"},
	{"hold", PB_BOOL, false, NULL, "apt-mark hold (true) or unhold (false); absent = not managed"},
	{0}};
static const struct pb_field kmod_fields[] = {
	{"name", PB_STRING, true, NULL, "kernel module name"},
	{"state", PB_STRING, false, "\"loaded\"", "loaded | absent"},
	{"options", PB_MAP_OF_SCALAR, false, NULL, "module parameters, written to etc/modprobe.d/railyard-NAME.conf"},
	{"persist", PB_BOOL, false, "false", "load at boot via etc/modules-load.d/railyard-NAME.conf"},
	{0}};
static const struct pb_field sysctl_fields[] = {
	{"settings", PB_MAP_OF_SCALAR, true, NULL, "sysctl key (dotted) -> value"},
	{"persist", PB_BOOL, false, "true", "also write the settings to file"},
	{"file", PB_STRING, false, "\"" PB_SYSCTL_DEFAULT_FILE "\"", "persistence file"},
	{0}};
static const struct pb_field file_fields[] = {
	{"path", PB_STRING, true, NULL, "absolute path"},
	{"content", PB_STRING, false, NULL, "verbatim content (not rendered)"},
	{"template", PB_STRING, false, NULL, "content rendered with ${...}; delivered as content"},
	{"mode", PB_STRING, false, "\"0644\"", "octal mode string"},
	{"owner", PB_STRING, false, NULL, "user name; absent = not managed"},
	{"group", PB_STRING, false, NULL, "group name; absent = not managed"},
	{0}};
static const struct pb_field nccl_fields[] = {
	{"settings", PB_MAP_OF_SCALAR, true, NULL, "NCCL_* key -> value, merged into path"},
	{"path", PB_STRING, false, "\"" PB_NCCL_DEFAULT_PATH "\"", "nccl.conf path"},
	{0}};
static const struct pb_field ucx_fields[] = {
	{"settings", PB_MAP_OF_SCALAR, true, NULL, "UCX_* key -> value, merged into path"},
	{"path", PB_STRING, false, "\"" PB_UCX_DEFAULT_PATH "\"", "ucx.conf path"},
	{0}};
static const struct pb_field mpi_fields[] = {
	{"settings", PB_MAP_OF_SCALAR, true, NULL, "Open MPI MCA parameter -> value, merged into path"},
	{"path", PB_STRING, false, "\"" PB_MPI_DEFAULT_PATH "\"", "MCA parameter file"},
	{0}};
static const struct pb_field service_fields[] = {
	{"name", PB_STRING, true, NULL, "systemd unit name"},
	{"enabled", PB_BOOL, false, NULL, "enable/disable at boot; absent = not managed"},
	{"state", PB_STRING, false, NULL, "started | stopped | restarted; absent = not managed"},
	{0}};
static const struct pb_field roce_qos_fields[] = {
	{"interfaces", PB_LIST_OF_STRING, true, NULL, "RoCE netdevs"},
	{"trust", PB_STRING, false, "\"dscp\"", "dscp | pcp"},
	{"pfc", PB_LIST_OF_INT, false, NULL, "priorities 0-7 with PFC enabled (others disabled)"},
	{"ecn", PB_LIST_OF_INT, false, NULL, "priorities 0-7 with ECN (DCQCN) enabled"},
	{"dscp", PB_INT, false, NULL, "DSCP 0-63 of RoCE traffic (informational; the mapping is dscp2prio)"},
	{"dscp2prio", PB_MAP_OF_SCALAR, false, NULL, "DSCP 0-63 -> priority 0-7, set with mlnx_qos --dscp2prio (trust dscp)"},
	{0}};
static const struct pb_field command_fields[] = {
	{"argv", PB_LIST_OF_STRING, true, NULL, "program and arguments; no shell"},
	{"timeout", PB_STRING, false, "\"" PB_COMMAND_DEFAULT_TIMEOUT "\"", "duration"},
	{"creates", PB_STRING, false, NULL, "skip when this path exists"},
	{"unless", PB_LIST_OF_STRING, false, NULL, "skip when this command exits 0"},
	{0}};

static const struct pb_field repo_fields[] = {
	{"name", PB_STRING, true, NULL, "source name: /etc/apt/sources.list.d/NAME.sources"},
	{"uri", PB_STRING, true, NULL, "https:// URL of the archive"},
	{"suite", PB_STRING, true, NULL, "suite (bookworm) or, for a flat repository, a path ending in / (\"/\", \"./\")"},
	{"components", PB_LIST_OF_STRING, false, NULL, "components (main, contrib); none for a flat repository"},
	{"architectures", PB_LIST_OF_STRING, false, NULL, "architectures (amd64); absent = apt's default"},
	{"key_path", PB_STRING, true, NULL, "signed-by key file under /usr/share/keyrings or /etc/apt/keyrings, .gpg (binary) or .asc (armored)"},
	{"key", PB_STRING, false, NULL, "the ASCII-armored public key"},
	{"key_url", PB_STRING, false, NULL, "https:// URL the agent fetches the key from (needs fingerprint)"},
	{"fingerprint", PB_STRING, false, NULL, "fingerprint of the only key the key file may hold"},
	{"update", PB_BOOL, false, "true", "apt-get update when this step changed something"},
	{0}};
static const struct pb_field hca_firmware_fields[] = {
	{"minimum", PB_LIST_OF_MAP, true, NULL, "[{model, device_id, board_id?, version}]: minimum firmware per HCA model"},
	{"unknown", PB_STRING, false, "\"fail\"", "an HCA whose model is not in the table: fail | ignore"},
	{0}};
static const struct pb_field link_fields[] = {
	{"interfaces", PB_LIST_OF_STRING, true, NULL, "netdevs"},
	{"mtu", PB_INT, true, NULL, "MTU in bytes, set with ip link and persisted"},
	{"persist", PB_BOOL, false, "true", "keep it across reboots: /etc/systemd/network/60-railyard-IF.link"},
	{0}};
static const struct pb_field reboot_fields[] = {
	{"timeout", PB_STRING, false, "\"" PB_REBOOT_DEFAULT_TIMEOUT "\"", "duration: the node is back, its agent reconnected, within it"},
	{"if_changed", PB_BOOL, false, "false", "reboot only when a step since the plan started (or since the previous reboot step) changed something"},
	{"expect_kernel", PB_STRING, false, NULL, "after the boot, uname -r equals it (or matches it, a glob)"},
	{"expect_module", PB_MAP_OF_SCALAR, false, NULL, "{name, version}: after the boot, /sys/module/NAME/version satisfies version (\"[OP ]VERSION\", dpkg order)"},
	{0}};

/* clang-format on */

static const char *const cond_ops[] = {
	"==",	     "!=",	  "<",	      "<=",	   ">",	       ">=",
	"version==", "version!=", "version<", "version<=", "version>", "version>=",
	"count==",   "count>=",	  "count<=",  "contains",  "matches",  NULL};

const struct pb_step_schema *pb_step_schema_find(const char *type)
{
	for (const struct pb_step_schema *s = pb_step_schemas; type && s->type; s++)
		if (strcmp(s->type, type) == 0)
			return s;
	return NULL;
}

const struct pb_field *pb_step_field_find(const struct pb_step_schema *s, const char *key)
{
	for (const struct pb_field *f = s ? s->fields : NULL; f && f->key; f++)
		if (strcmp(f->key, key) == 0)
			return f;
	return NULL;
}

/* ---- Checks on JSON ----------------------------------------------------------------------- */

static int fail(const char **ret_key, const char *key, char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int fail(const char **ret_key, const char *key, char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (ret_key)
		*ret_key = key;
	if (buf && len) {
		va_start(ap, fmt);
		vsnprintf(buf, len, fmt, ap);
		va_end(ap);
	}
	return -RY_E_INVALID;
}

static const char *type_desc(enum pb_type t)
{
	switch (t) {
	case PB_STRING:
		return "a string";
	case PB_INT:
		return "an integer";
	case PB_BOOL:
		return "a boolean";
	case PB_LIST_OF_STRING:
		return "a list of strings";
	case PB_LIST_OF_INT:
		return "a list of integers";
	case PB_MAP_OF_SCALAR:
		return "a mapping of scalars";
	case PB_LIST_OF_MAP:
		return "a list of mappings";
	case PB_MAP:
		return "a mapping";
	case PB_ANY:
		break;
	}
	return "a value";
}

static const char *json_desc(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "a mapping";
	case JSON_ARRAY:
		return "a list";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		break;
	}
	return "null";
}

/* unknown: a dry-run null (value depends on facts) is accepted anywhere. */
static bool type_ok(const json_t *v, enum pb_type t, bool unknown)
{
	size_t i;
	const char *k;
	json_t *e;

	if (unknown && json_is_null(v))
		return true;
	switch (t) {
	case PB_STRING:
		return json_is_string(v);
	case PB_INT:
		return json_is_integer(v);
	case PB_BOOL:
		return json_is_boolean(v);
	case PB_LIST_OF_STRING:
	case PB_LIST_OF_INT:
	case PB_LIST_OF_MAP:
		if (!json_is_array(v))
			return false;
		json_array_foreach(v, i, e)
		{
			enum pb_type et = t == PB_LIST_OF_STRING ? PB_STRING
					  : t == PB_LIST_OF_INT	 ? PB_INT
								 : PB_MAP;
			if (!type_ok(e, et, unknown))
				return false;
		}
		return true;
	case PB_MAP_OF_SCALAR:
		if (!json_is_object(v))
			return false;
		json_object_foreach((json_t *)v, k, e)
		{
			if (!json_is_string(e) && !(unknown && json_is_null(e)))
				return false;
		}
		return true;
	case PB_MAP:
		return json_is_object(v);
	case PB_ANY:
		return true;
	}
	return false;
}

static bool str_in(const char *s, const char *const *set)
{
	for (size_t i = 0; s && set[i]; i++)
		if (strcmp(s, set[i]) == 0)
			return true;
	return false;
}

static bool chars_ok(const char *s, const char *extra, size_t max)
{
	size_t n = 0;

	if (!s || !*s)
		return false;
	for (; *s; s++, n++)
		if (!isalnum((unsigned char)*s) && !strchr(extra, *s))
			return false;
	return n <= max;
}

int pb_cond_check(const json_t *cond, bool plan, const char **ret_key, char *buf, size_t len)
{
	static const char *const keys[] = {"fact", "op", "value", "quantifier", "message", NULL};
	static const char *const quants[] = {"all", "any", "none", NULL};
	const char *k, *op, *fact;
	json_t *v, *value;

	if (!json_is_object(cond))
		return fail(ret_key, NULL, buf, len, "expected a condition mapping");
	json_object_foreach((json_t *)cond, k, v)
	{
		if (!str_in(k, keys))
			return fail(ret_key, k, buf, len, "unknown condition key \"%s\"", k);
	}
	fact = json_string_value(json_object_get(cond, "fact"));
	if (!fact)
		return fail(ret_key, "fact", buf, len, "fact: expected a fact path string");
	if (pb_fact_path_check(fact) < 0)
		return fail(ret_key, "fact", buf, len, "fact: bad fact path \"%s\"", fact);
	op = json_string_value(json_object_get(cond, "op"));
	if (!op)
		return fail(ret_key, "op", buf, len, "op: expected an operator string");
	if (!str_in(op, cond_ops))
		return fail(ret_key, "op", buf, len, "op: unknown operator \"%s\"", op);
	value = json_object_get(cond, "value");
	if (!value)
		return fail(ret_key, "value", buf, len, "missing required key \"value\"");
	if (!(!plan && json_is_null(value))) {
		if ((strncmp(op, "version", 7) == 0 || strcmp(op, "matches") == 0) &&
		    !json_is_string(value))
			return fail(ret_key, "value", buf, len,
				    "value: operator %s needs a string, got %s", op,
				    json_desc(value));
		if (strncmp(op, "count", 5) == 0 &&
		    (!json_is_integer(value) || json_integer_value(value) < 0))
			return fail(ret_key, "value", buf, len,
				    "value: operator %s needs an integer >= 0, got %s", op,
				    json_desc(value));
		if (strcmp(op, "matches") == 0) {
			regex_t re;

			if (regcomp(&re, json_string_value(value), REG_EXTENDED | REG_NOSUB) != 0)
				return fail(ret_key, "value", buf, len,
					    "value: bad regular expression \"%s\"",
					    json_string_value(value));
			regfree(&re);
		}
	}
	v = json_object_get(cond, "quantifier");
	if (v && !str_in(json_string_value(v), quants))
		return fail(ret_key, "quantifier", buf, len,
			    "quantifier: expected all, any or none");
	if (!v && plan)
		return fail(ret_key, "quantifier", buf, len, "missing required key \"quantifier\"");
	v = json_object_get(cond, "message");
	if (v && !json_is_string(v) && !(!plan && json_is_null(v)))
		return fail(ret_key, "message", buf, len, "message: expected a string");
	return 0;
}

static bool octal_mode_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n < 3 || n > 4)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '7')
			return false;
	return true;
}

/* An absolute path without a ".." component (a path shorter than "/.." has none at its end:
 * never read before its start). */
static bool abs_path_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return n && s[0] == '/' && !strstr(s, "/../") &&
	       !(n >= 3 && strcmp(s + n - 3, "/..") == 0) && !strchr(s, '\n');
}

/* A Debian version (deb-version(7)): [EPOCH:]UPSTREAM[-REVISION], starting with a digit, made
 * of letters, digits and . + ~ : - only. */
bool pb_debian_version_ok(const char *s)
{
	return s && isdigit((unsigned char)s[0]) && chars_ok(s, ".+~:-", 128);
}

static bool version_constraint_ok(const char *s)
{
	static const char *const ops[] = {">=", "<=", "!=", "==", "=", "<", ">", NULL};

	while (*s == ' ')
		s++;
	for (size_t i = 0; ops[i]; i++) {
		if (strncmp(s, ops[i], strlen(ops[i])) == 0) {
			s += strlen(ops[i]);
			break;
		}
	}
	while (*s == ' ')
		s++;
	return pb_debian_version_ok(s);
}

/* Check every entry of a list of priorities is 0..7 and unique. */
static bool prios_ok(const json_t *a)
{
	unsigned seen = 0;
	size_t i;
	json_t *e;

	json_array_foreach(a, i, e)
	{
		json_int_t p;

		if (json_is_null(e))
			continue;
		p = json_integer_value(e);
		if (p < 0 || p > 7 || (seen & (1u << p)))
			return false;
		seen |= 1u << p;
	}
	return true;
}

static int settings_ok(const json_t *m, const char *extra, const char **ret_key, char *buf,
		       size_t len)
{
	const char *k;
	json_t *v;

	if (!json_is_object(m))
		return 0;
	if (json_object_size(m) == 0)
		return fail(ret_key, "settings", buf, len, "settings: must not be empty");
	json_object_foreach((json_t *)m, k, v)
	{
		const char *s = json_string_value(v);

		if (!chars_ok(k, extra, 256) || strstr(k, ".."))
			return fail(ret_key, "settings", buf, len, "settings: bad key \"%s\"", k);
		if (s && strpbrk(s, "\r\n"))
			return fail(ret_key, "settings", buf, len,
				    "settings: value of \"%s\" has a line break", k);
	}
	return 0;
}

/* A decimal integer 0..max without sign or leading zeros ("0", "26"). */
static bool small_uint_ok(const char *s, int max)
{
	char *end;
	long v;

	if (!s || !isdigit((unsigned char)s[0]) || (s[0] == '0' && s[1]))
		return false;
	v = strtol(s, &end, 10);
	return !*end && v >= 0 && v <= max;
}

/* ---- Per-type rules (the check of each table entry) ---------------------------------------- */

/* A name handed to a program (modprobe, systemctl, apt-get, mlnx_qos) as an argument: never
 * one that reads as an option. */
static bool tool_name_ok(const char *s, const char *extra, size_t max)
{
	return chars_ok(s, extra, max) && s[0] != '-';
}

#define STR(k) json_string_value(json_object_get(p, k))

static int check_assert(const json_t *p, bool plan, const char **ret_key, char *buf, size_t len)
{
	json_t *v = json_object_get(p, "that"), *c;
	size_t i;

	if (json_is_array(v) && json_array_size(v) == 0)
		return fail(ret_key, "that", buf, len, "that: at least one condition");
	json_array_foreach(v, i, c)
	{
		char sub[200];

		if (json_is_null(c))
			continue;
		if (pb_cond_check(c, plan, NULL, sub, sizeof(sub)) < 0)
			return fail(ret_key, "that", buf, len, "that[%zu]: %s", i, sub);
	}
	return 0;
}

static int check_package(const json_t *p, bool plan, const char **ret_key, char *buf, size_t len)
{
	static const char *const present_absent[] = {"present", "absent", NULL};
	const char *s;

	if ((s = STR("name")) && !tool_name_ok(s, "+.-_:", 128))
		return fail(
			ret_key, "name", buf, len,
			"name: bad package name \"%s\" (letters, digits, + . - _ :, not starting "
			"with '-')",
			s);
	if ((s = STR("version")) && !version_constraint_ok(s))
		return fail(ret_key, "version", buf, len,
			    "version: bad constraint \"%s\" (expected e.g. \">= 24.10\")", s);
	if ((s = STR("state")) && !str_in(s, present_absent))
		return fail(ret_key, "state", buf, len,
			    "state: expected present or absent, got \"%s\"", s);
	return 0;
}

/* A kmod option refused: its name, or its value (one word on an "options" line of modprobe.d: a
 * blank would start another option, a line break another directive), named with the offending
 * text escaped and cut at 64 bytes. */
static int bad_kmod_option(const char *k, const char *value, const char **ret_key, char *buf,
			   size_t len)
{
	bool name_ok = tool_name_ok(k, "_", 64);
	char *ek = util_escape(k, false), *ev = util_escape(value, false);
	int r;

	if (!ek || !ev)
		r = fail(ret_key, "options", buf, len, "options: bad option (out of memory)");
	else if (!name_ok)
		r = fail(ret_key, "options", buf, len,
			 "options: bad option name \"%.64s\" (letters, digits and _, at most 64)",
			 ek);
	else
		r = fail(ret_key, "options", buf, len,
			 "options: %s: bad value \"%.64s%s\" (one word: no space, tab or line "
			 "break)",
			 ek, ev, strlen(ev) > 64 ? "..." : "");
	free(ek);
	free(ev);
	return r;
}

static int check_kmod(const json_t *p, bool plan, const char **ret_key, char *buf, size_t len)
{
	static const char *const loaded_absent[] = {"loaded", "absent", NULL};
	const char *s, *k;
	json_t *v;

	if ((s = STR("name")) && !tool_name_ok(s, "_-", 64))
		return fail(ret_key, "name", buf, len,
			    "name: bad module name \"%s\" (letters, digits, _ and -, not starting "
			    "with '-')",
			    s);
	if ((s = STR("state")) && !str_in(s, loaded_absent))
		return fail(ret_key, "state", buf, len,
			    "state: expected loaded or absent, got \"%s\"", s);
	json_object_foreach(json_object_get(p, "options"), k, v)
	{
		s = json_string_value(v);
		if (!tool_name_ok(k, "_", 64) || (s && strpbrk(s, " \t\r\n")))
			return bad_kmod_option(k, s, ret_key, buf, len);
	}
	return 0;
}

static int check_sysctl(const json_t *p, bool plan, const char **ret_key, char *buf, size_t len)
{
	const char *s;
	int r = settings_ok(json_object_get(p, "settings"), "._-/", ret_key, buf, len);

	if (r < 0)
		return r;
	if ((s = STR("file")) && !abs_path_ok(s))
		return fail(ret_key, "file", buf, len, "file: expected an absolute path");
	return 0;
}

static int check_file(const json_t *p, bool plan, const char **ret_key, char *buf, size_t len)
{
	const char *s;

	if (json_object_get(p, "template"))
		return fail(ret_key, "template", buf, len,
			    "template: not allowed in a plan (rendered into content)");
	if (!json_object_get(p, "content"))
		return fail(ret_key, "content", buf, len, "missing required key \"content\"");
	if ((s = STR("path")) && !abs_path_ok(s))
		return fail(ret_key, "path", buf, len,
			    "path: expected an absolute path, got \"%s\"", s);
	if ((s = STR("mode")) && !octal_mode_ok(s))
		return fail(ret_key, "mode", buf, len,
			    "mode: expected an octal string like \"0644\", got \"%s\"", s);
	if ((s = STR("owner")) && !tool_name_ok(s, "._-", 32))
		return fail(ret_key, "owner", buf, len, "owner: bad user name \"%s\"", s);
	if ((s = STR("group")) && !tool_name_ok(s, "._-", 32))
		return fail(ret_key, "group", buf, len, "group: bad group name \"%s\"", s);
	return 0;
}

/* nccl, ucx, mpi: key = value settings merged into a file. */
static int check_conf(const json_t *p, bool plan, const char **ret_key, char *buf, size_t len)
{
	const char *s;
	int r = settings_ok(json_object_get(p, "settings"), "._-", ret_key, buf, len);

	if (r < 0)
		return r;
	if ((s = STR("path")) && !abs_path_ok(s))
		return fail(ret_key, "path", buf, len, "path: expected an absolute path");
	return 0;
}

static int check_service(const json_t *p, bool plan, const char **ret_key, char *buf, size_t len)
{
	static const char *const svc_states[] = {"started", "stopped", "restarted", NULL};
	const char *s;

	if ((s = STR("name")) && !tool_name_ok(s, "@._:-\\", 256))
		return fail(ret_key, "name", buf, len,
			    "name: bad unit name \"%s\" (not starting with '-')", s);
	if ((s = STR("state")) && !str_in(s, svc_states))
		return fail(ret_key, "state", buf, len,
			    "state: expected started, stopped or restarted, got \"%s\"", s);
	if (!json_object_get(p, "state") && !json_object_get(p, "enabled"))
		return fail(ret_key, "name", buf, len,
			    "a service step needs \"enabled\" or \"state\"");
	return 0;
}

static int check_roce_qos(const json_t *p, bool plan, const char **ret_key, char *buf, size_t len)
{
	static const char *const trusts[] = {"dscp", "pcp", NULL};
	const char *s;
	json_t *v, *e;
	size_t i;

	v = json_object_get(p, "interfaces");
	if (json_is_array(v) && json_array_size(v) == 0)
		return fail(ret_key, "interfaces", buf, len, "interfaces: at least one interface");
	json_array_foreach(v, i, e)
	{
		if (json_is_string(e) && !tool_name_ok(json_string_value(e), "_.:-", 15))
			return fail(ret_key, "interfaces", buf, len,
				    "interfaces: bad interface name \"%s\" (not starting with '-')",
				    json_string_value(e));
	}
	if ((s = STR("trust")) && !str_in(s, trusts))
		return fail(ret_key, "trust", buf, len, "trust: expected dscp or pcp, got \"%s\"",
			    s);
	if ((v = json_object_get(p, "pfc")) && !prios_ok(v))
		return fail(ret_key, "pfc", buf, len,
			    "pfc: priorities must be distinct values 0-7");
	if ((v = json_object_get(p, "ecn")) && !prios_ok(v))
		return fail(ret_key, "ecn", buf, len,
			    "ecn: priorities must be distinct values 0-7");
	if ((v = json_object_get(p, "dscp")) && json_is_integer(v) &&
	    (json_integer_value(v) < 0 || json_integer_value(v) > 63))
		return fail(ret_key, "dscp", buf, len, "dscp: expected 0-63");
	if ((v = json_object_get(p, "dscp2prio"))) {
		const char *k;

		if (json_object_size(v) == 0)
			return fail(ret_key, "dscp2prio", buf, len,
				    "dscp2prio: at least one DSCP -> priority mapping");
		if ((s = STR("trust")) && strcmp(s, "dscp") != 0)
			return fail(ret_key, "dscp2prio", buf, len,
				    "dscp2prio: needs trust dscp (with trust %s the DSCP bits are "
				    "not looked at)",
				    s);
		json_object_foreach(v, k, e)
		{
			const char *pv = json_string_value(e);

			if (!small_uint_ok(k, 63))
				return fail(ret_key, "dscp2prio", buf, len,
					    "dscp2prio: bad DSCP \"%s\" (expected 0-63)", k);
			if (pv && !small_uint_ok(pv, 7))
				return fail(ret_key, "dscp2prio", buf, len,
					    "dscp2prio.%s: bad priority \"%s\" (expected 0-7)", k,
					    pv);
		}
	}
	return 0;
}

static int check_hca_firmware(const json_t *p, bool plan, const char **ret_key, char *buf,
			      size_t len)
{
	static const char *const keys[] = {"model", "device_id", "board_id", "version", NULL};
	static const char *const unknowns[] = {"fail", "ignore", NULL};
	json_t *v = json_object_get(p, "minimum"), *e;
	const char *s;
	size_t i;

	if (json_is_array(v) && json_array_size(v) == 0)
		return fail(ret_key, "minimum", buf, len, "minimum: at least one HCA model");
	json_array_foreach(v, i, e)
	{
		const char *k, *dev, *board, *ver, *model;
		json_t *x;

		if (json_is_null(e))
			continue;
		json_object_foreach(e, k, x)
		{
			if (!str_in(k, keys))
				return fail(ret_key, "minimum", buf, len,
					    "minimum[%zu]: unknown key \"%s\" (model, device_id, "
					    "board_id, version)",
					    i, k);
			if (!json_is_string(x) && !(!plan && json_is_null(x)))
				return fail(ret_key, "minimum", buf, len,
					    "minimum[%zu].%s: expected a string", i, k);
		}
		model = json_string_value(json_object_get(e, "model"));
		dev = json_string_value(json_object_get(e, "device_id"));
		board = json_string_value(json_object_get(e, "board_id"));
		ver = json_string_value(json_object_get(e, "version"));
		if (!json_object_get(e, "model") || !json_object_get(e, "device_id") ||
		    !json_object_get(e, "version"))
			return fail(ret_key, "minimum", buf, len,
				    "minimum[%zu]: needs model, device_id and version", i);
		if (model && (!*model || strpbrk(model, "\r\n")))
			return fail(ret_key, "minimum", buf, len, "minimum[%zu].model: bad name",
				    i);
		if (dev && (strlen(dev) != 6 || strncmp(dev, "0x", 2) != 0 ||
			    strspn(dev + 2, "0123456789abcdef") != 4))
			return fail(ret_key, "minimum", buf, len,
				    "minimum[%zu].device_id: expected a PCI device id like "
				    "\"0x1021\", got \"%s\"",
				    i, dev);
		if (board && !chars_ok(board, "_-", 32))
			return fail(ret_key, "minimum", buf, len,
				    "minimum[%zu].board_id: expected a board id (PSID) like "
				    "\"MT_0000000838\", got \"%s\"",
				    i, board);
		if (ver && (!isdigit((unsigned char)ver[0]) || !chars_ok(ver, ".", 32)))
			return fail(ret_key, "minimum", buf, len,
				    "minimum[%zu].version: expected a firmware version like "
				    "\"28.42.1000\", got \"%s\"",
				    i, ver);
		for (size_t j = 0; dev && j < i; j++) {
			json_t *o = json_array_get(v, j);
			const char *od = json_string_value(json_object_get(o, "device_id")),
				   *ob = json_string_value(json_object_get(o, "board_id"));

			if (od && strcmp(od, dev) == 0 && !ob == !board &&
			    (!ob || strcmp(ob, board) == 0))
				return fail(ret_key, "minimum", buf, len,
					    "minimum[%zu]: same device_id%s as minimum[%zu]", i,
					    board ? " and board_id" : "", j);
		}
	}
	if ((s = STR("unknown")) && !str_in(s, unknowns))
		return fail(ret_key, "unknown", buf, len,
			    "unknown: expected fail or ignore, got \"%s\"", s);
	return 0;
}

static int check_link(const json_t *p, bool plan, const char **ret_key, char *buf, size_t len)
{
	json_t *v = json_object_get(p, "interfaces"), *e;
	size_t i;

	if (json_is_array(v) && json_array_size(v) == 0)
		return fail(ret_key, "interfaces", buf, len, "interfaces: at least one interface");
	json_array_foreach(v, i, e)
	{
		if (json_is_string(e) && !tool_name_ok(json_string_value(e), "_.:-", 15))
			return fail(ret_key, "interfaces", buf, len,
				    "interfaces: bad interface name \"%s\" (not starting with '-')",
				    json_string_value(e));
	}
	v = json_object_get(p, "mtu");
	if (json_is_integer(v) && (json_integer_value(v) < 68 || json_integer_value(v) > 65535))
		return fail(ret_key, "mtu", buf, len, "mtu: expected 68-65535 bytes, got %lld",
			    (long long)json_integer_value(v));
	return 0;
}

static int check_command(const json_t *p, bool plan, const char **ret_key, char *buf, size_t len)
{
	const char *s;
	int64_t ms;
	json_t *v;

	v = json_object_get(p, "argv");
	if (json_is_array(v) &&
	    (json_array_size(v) == 0 ||
	     (json_is_string(json_array_get(v, 0)) && !*json_string_value(json_array_get(v, 0)))))
		return fail(ret_key, "argv", buf, len,
			    "argv: expected a non-empty list with a program");
	v = json_object_get(p, "unless");
	if (json_is_array(v) && json_array_size(v) == 0)
		return fail(ret_key, "unless", buf, len, "unless: expected a non-empty list");
	if ((s = STR("timeout")) && (util_parse_duration_ms(s, &ms) < 0 || ms <= 0))
		return fail(ret_key, "timeout", buf, len,
			    "timeout: bad duration \"%s\" (expected e.g. \"30s\")", s);
	if ((s = STR("creates")) && !abs_path_ok(s))
		return fail(ret_key, "creates", buf, len, "creates: expected an absolute path");
	return 0;
}

static int check_reboot(const json_t *p, bool plan, const char **ret_key, char *buf, size_t len)
{
	json_t *m = json_object_get(p, "expect_module");
	const char *s, *k;
	int64_t ms;
	json_t *v;

	(void)plan;
	if ((s = STR("timeout")) &&
	    (util_parse_duration_ms(s, &ms) < 0 || ms < 1000 || ms > PB_REBOOT_MAX_TIMEOUT_MS))
		return fail(ret_key, "timeout", buf, len,
			    "timeout: bad duration \"%s\" (expected 1s to 24h, e.g. \"15m\")", s);
	if ((s = STR("expect_kernel")) && (!*s || !chars_ok(s, ".+_~-*?[]", 128)))
		return fail(ret_key, "expect_kernel", buf, len,
			    "expect_kernel: expected a kernel release like \"6.1.0-28-amd64\" or a "
			    "glob like \"6.1.*\", got \"%s\"",
			    s);
	if (!m)
		return 0;
	json_object_foreach(m, k, v)
	{
		if (strcmp(k, "name") != 0 && strcmp(k, "version") != 0)
			return fail(ret_key, "expect_module", buf, len,
				    "expect_module: unknown key \"%s\" (expected name and version)",
				    k);
	}
	if (!(s = json_string_value(json_object_get(m, "name"))) || !tool_name_ok(s, "_", 56))
		return fail(ret_key, "expect_module", buf, len,
			    "expect_module.name: expected a module name like \"nvidia\"");
	if (!(s = json_string_value(json_object_get(m, "version"))) || !version_constraint_ok(s))
		return fail(ret_key, "expect_module", buf, len,
			    "expect_module.version: expected a version or a constraint like "
			    "\"550.127.08\" or \">= 24.10\"");
	return 0;
}

#undef STR

/* clang-format off */
const struct pb_step_schema pb_step_schemas[] = {
	{"assert", assert_fields, "conditions on facts; changes nothing", check_assert},
	{"package", package_fields, "dpkg/apt package", check_package},
	{"kmod", kmod_fields, "kernel module", check_kmod},
	{"sysctl", sysctl_fields, "kernel parameters", check_sysctl},
	{"file", file_fields, "a whole file", check_file},
	{"nccl", nccl_fields, "keys in nccl.conf", check_conf},
	{"ucx", ucx_fields, "keys in ucx.conf", check_conf},
	{"mpi", mpi_fields, "Open MPI MCA parameters", check_conf},
	{"service", service_fields, "systemd unit", check_service},
	{"roce_qos", roce_qos_fields, "RoCE QoS: trust, PFC, ECN", check_roce_qos},
	{"command", command_fields, "explicit escape hatch", check_command},
	{"repo", repo_fields, "apt source with its signed-by key", pb_check_repo},
	{"hca_firmware", hca_firmware_fields, "minimum HCA firmware per model; changes nothing", check_hca_firmware},
	{"link", link_fields, "netdev MTU, set and persisted", check_link},
	{"reboot", reboot_fields, "reboot the node and continue the plan after the boot", check_reboot},
	{0}};
/* clang-format on */

int pb_params_check(const struct pb_step_schema *s, const json_t *params, bool plan,
		    const char **ret_key, char *buf, size_t len)
{
	const char *k;
	json_t *v;

	if (!json_is_object(params))
		return fail(ret_key, NULL, buf, len, "params: expected an object");
	json_object_foreach((json_t *)params, k, v)
	{
		const struct pb_field *f = pb_step_field_find(s, k);

		if (!f)
			return fail(ret_key, k, buf, len, "unknown key \"%s\" for step type \"%s\"",
				    k, s->type);
		if (!type_ok(v, f->type, !plan))
			return fail(ret_key, k, buf, len, "%s: expected %s, got %s", k,
				    type_desc(f->type), json_desc(v));
	}
	for (const struct pb_field *f = s->fields; f->key; f++) {
		if (strcmp(s->type, "file") == 0 && strcmp(f->key, "template") == 0)
			continue;
		if ((f->required || (plan && f->def)) && !json_object_get(params, f->key))
			return fail(ret_key, f->key, buf, len, "missing required key \"%s\"",
				    f->key);
	}
	return s->check ? s->check(params, plan, ret_key, buf, len) : 0;
}

int playbook_plan_validate(const json_t *plan, char *errbuf, size_t len)
{
	static const char *const keys[] = {"schema", "name", "version", "sha256", "steps", NULL};
	static const char *const skeys[] = {"name", "type",   "continue_on_error",
					    "when", "params", NULL};
	const char *k;
	json_t *v, *steps, *st;
	size_t i;

	if (!json_is_object(plan))
		return fail(NULL, NULL, errbuf, len, "plan: expected an object");
	json_object_foreach((json_t *)plan, k, v)
	{
		if (!str_in(k, keys))
			return fail(NULL, NULL, errbuf, len, "plan: unknown key \"%s\"", k);
	}
	v = json_object_get(plan, "schema");
	if (!json_is_integer(v) || json_integer_value(v) != PB_PLAN_SCHEMA)
		return fail(NULL, NULL, errbuf, len, "plan: schema must be %d", PB_PLAN_SCHEMA);
	if (!json_is_string(json_object_get(plan, "name")) ||
	    !json_is_string(json_object_get(plan, "version")))
		return fail(NULL, NULL, errbuf, len, "plan: name and version must be strings");
	k = json_string_value(json_object_get(plan, "sha256"));
	if (!k || strlen(k) != 64 || strspn(k, "0123456789abcdef") != 64)
		return fail(NULL, NULL, errbuf, len,
			    "plan: sha256 must be 64 lower-case hex digits");
	steps = json_object_get(plan, "steps");
	if (!json_is_array(steps) || json_array_size(steps) == 0)
		return fail(NULL, NULL, errbuf, len, "plan: steps must be a non-empty array");
	json_array_foreach(steps, i, st)
	{
		const struct pb_step_schema *s;
		const char *name;
		char sub[256];
		json_t *w;

		if (!json_is_object(st))
			return fail(NULL, NULL, errbuf, len, "steps[%zu]: expected an object", i);
		json_object_foreach(st, k, v)
		{
			if (!str_in(k, skeys))
				return fail(NULL, NULL, errbuf, len,
					    "steps[%zu]: unknown key \"%s\"", i, k);
		}
		name = json_string_value(json_object_get(st, "name"));
		if (!name || !*name)
			return fail(NULL, NULL, errbuf, len, "steps[%zu]: name must be a string",
				    i);
		for (size_t j = 0; j < i; j++)
			if (strcmp(json_string_value(
					   json_object_get(json_array_get(steps, j), "name")),
				   name) == 0)
				return fail(NULL, NULL, errbuf, len,
					    "steps[%zu] (\"%s\"): duplicate step name", i, name);
		s = pb_step_schema_find(json_string_value(json_object_get(st, "type")));
		if (!s)
			return fail(NULL, NULL, errbuf, len, "steps[%zu] (\"%s\"): unknown type", i,
				    name);
		if (!json_is_boolean(json_object_get(st, "continue_on_error")))
			return fail(NULL, NULL, errbuf, len,
				    "steps[%zu] (\"%s\"): continue_on_error must be a boolean", i,
				    name);
		w = json_object_get(st, "when");
		if (w && pb_cond_check(w, true, NULL, sub, sizeof(sub)) < 0)
			return fail(NULL, NULL, errbuf, len, "steps[%zu] (\"%s\"): when: %s", i,
				    name, sub);
		if (pb_params_check(s, json_object_get(st, "params"), true, NULL, sub,
				    sizeof(sub)) < 0)
			return fail(NULL, NULL, errbuf, len, "steps[%zu] (\"%s\"): params.%s", i,
				    name, sub);
	}
	return 0;
}

/* ---- Conversion of step nodes ------------------------------------------------------------- */

static bool has_ref(const struct pb_node *n)
{
	return n->kind == PBN_SCALAR && strstr(n->text, "${");
}

static const char *node_desc(const struct pb_node *n)
{
	if (n->kind == PBN_MAP)
		return "a mapping";
	if (n->kind == PBN_SEQ)
		return "a list";
	return pb_scalar_is_null(n) ? "null" : "a scalar";
}

/* Stringify a scalar JSON value for MAP_OF_SCALAR; NULL for lists/objects. */
static json_t *stringify(json_t *v)
{
	char tmp[64];

	switch (json_typeof(v)) {
	case JSON_STRING:
	case JSON_NULL:
		return json_incref(v);
	case JSON_INTEGER:
	case JSON_REAL:
		return json_string(ry_json_scalar_str(v, RY_JSON_REAL_EXACT, tmp, sizeof(tmp)));
	case JSON_TRUE:
		return json_string("1");
	case JSON_FALSE:
		return json_string("0");
	default:
		return NULL;
	}
}

static int convert(struct pb_render *r, const char *file, const char *key, const struct pb_node *n,
		   enum pb_type t, json_t **ret, struct pb_diags *d)
{
	json_t *out = NULL, *e;
	long long iv;
	bool bv;
	int rc = 0;

	if (t == PB_ANY)
		return pb_render_any(r, n, ret);
	if (has_ref(n) && t != PB_STRING)
		return pb_render_string(r, n, ret, NULL);
	switch (t) {
	case PB_STRING:
		if (n->kind != PBN_SCALAR || pb_scalar_is_null(n))
			goto type_error;
		return pb_render_string(r, n, ret, NULL);
	case PB_INT:
		if (pb_scalar_int(n, &iv) < 0)
			goto type_error;
		out = json_integer(iv);
		break;
	case PB_BOOL:
		if (pb_scalar_bool(n, &bv) < 0)
			goto type_error;
		out = json_boolean(bv);
		break;
	case PB_LIST_OF_STRING:
	case PB_LIST_OF_INT:
		if (n->kind != PBN_SEQ)
			goto type_error;
		out = json_array();
		for (size_t i = 0; out && i < n->n; i++) {
			char sub[128];

			snprintf(sub, sizeof(sub), "%s[%zu]", key, i);
			e = NULL;
			if (convert(r, file, sub, n->items[i],
				    t == PB_LIST_OF_STRING ? PB_STRING : PB_INT, &e, d) < 0) {
				rc = -RY_E_INVALID;
				continue;
			}
			json_array_append_new(out, e);
		}
		break;
	case PB_MAP_OF_SCALAR:
		if (n->kind != PBN_MAP)
			goto type_error;
		out = json_object();
		for (size_t i = 0; out && i < n->n; i++) {
			const struct pb_node *v = n->items[i];
			json_t *s;

			e = NULL;
			if (v->kind != PBN_SCALAR || pb_scalar_is_null(v)) {
				pb_diag_node(d, file, v, "%s.%s: expected a scalar, got %s", key,
					     n->keys[i]->text, node_desc(v));
				rc = -RY_E_INVALID;
				continue;
			}
			if (pb_render_string(r, v, &e, NULL) < 0) {
				rc = -RY_E_INVALID;
				continue;
			}
			s = stringify(e);
			json_decref(e);
			if (!s) {
				pb_diag_node(d, file, v, "%s.%s: expected a scalar, got a %s", key,
					     n->keys[i]->text, "list or mapping");
				rc = -RY_E_INVALID;
				continue;
			}
			json_object_set_new(out, n->keys[i]->text, s);
		}
		break;
	case PB_LIST_OF_MAP:
		if (n->kind != PBN_SEQ)
			goto type_error;
		for (size_t i = 0; i < n->n; i++)
			if (n->items[i]->kind != PBN_MAP) {
				pb_diag_node(d, file, n->items[i],
					     "%s[%zu]: expected a mapping, got %s", key, i,
					     node_desc(n->items[i]));
				rc = -RY_E_INVALID;
			}
		if (rc < 0)
			return rc;
		return pb_render_any(r, n, ret);
	case PB_MAP:
		if (n->kind != PBN_MAP)
			goto type_error;
		return pb_render_any(r, n, ret);
	case PB_ANY:
		break;
	}
	if (!out) {
		json_decref(out);
		return -ENOMEM;
	}
	if (rc < 0) {
		json_decref(out);
		return rc;
	}
	*ret = out;
	return 0;
type_error:
	if (n->kind == PBN_SCALAR && !pb_scalar_is_null(n))
		pb_diag_node(d, file, n, "%s: expected %s, got \"%s\"", key, type_desc(t), n->text);
	else
		pb_diag_node(d, file, n, "%s: expected %s, got %s", key, type_desc(t),
			     node_desc(n));
	return -RY_E_INVALID;
}

int pb_cond_convert(struct pb_render *r, const char *file, const struct pb_node *n, json_t **ret,
		    struct pb_diags *d)
{
	static const char *const keys[] = {"fact", "op", "value", "quantifier", "message", NULL};
	const struct pb_node *opn, *vn, *fn;
	const char *op = NULL, *bad = NULL;
	json_t *cond = NULL, *v = NULL;
	char msg[256];
	int rc = 0;

	if (n->kind != PBN_MAP) {
		pb_diag_node(d, file, n, "expected a condition mapping (fact, op, value), got %s",
			     node_desc(n));
		return -RY_E_INVALID;
	}
	for (size_t i = 0; i < n->n; i++)
		if (!str_in(n->keys[i]->text, keys)) {
			pb_diag_node(d, file, n->keys[i], "unknown condition key \"%s\"",
				     n->keys[i]->text);
			rc = -RY_E_INVALID;
		}
	cond = json_object();
	if (!cond)
		return -ENOMEM;
	for (size_t i = 0; keys[i]; i++) {
		const char *req[] = {"fact", "op", "value"};

		if (i < 3 && !pb_node_get(n, req[i])) {
			pb_diag_node(d, file, n, "missing required key \"%s\"", req[i]);
			rc = -RY_E_INVALID;
		}
	}
	fn = pb_node_get(n, "fact");
	opn = pb_node_get(n, "op");
	vn = pb_node_get(n, "value");
	if (fn) {
		/* The fact path is evaluated by the agent on its own facts: not rendered. */
		if (fn->kind != PBN_SCALAR || pb_scalar_is_null(fn) ||
		    pb_fact_path_check(fn->text) < 0) {
			pb_diag_node(d, file, fn, "fact: bad fact path \"%s\"",
				     fn->kind == PBN_SCALAR ? fn->text : "");
			rc = -RY_E_INVALID;
		} else {
			json_object_set_new(cond, "fact", json_string(fn->text));
		}
	}
	if (opn) {
		if (opn->kind != PBN_SCALAR || !str_in(opn->text, cond_ops)) {
			pb_diag_node(d, file, opn, "op: unknown operator \"%s\"",
				     opn->kind == PBN_SCALAR ? opn->text : "");
			rc = -RY_E_INVALID;
		} else {
			op = opn->text;
			json_object_set_new(cond, "op", json_string(op));
		}
	}
	if (vn && op) {
		enum pb_type t = PB_ANY;

		if (strncmp(op, "version", 7) == 0 || strcmp(op, "matches") == 0)
			t = PB_STRING;
		else if (strncmp(op, "count", 5) == 0)
			t = PB_INT;
		if (convert(r, file, "value", vn, t, &v, d) < 0)
			rc = -RY_E_INVALID;
		else
			json_object_set_new(cond, "value", v);
	}
	for (size_t i = 3; i < 5; i++) {
		const struct pb_node *x = pb_node_get(n, keys[i]);

		v = NULL;
		if (!x)
			continue;
		if (convert(r, file, keys[i], x, PB_STRING, &v, d) < 0)
			rc = -RY_E_INVALID;
		else
			json_object_set_new(cond, keys[i], v);
	}
	if (!json_object_get(cond, "quantifier"))
		json_object_set_new(cond, "quantifier", json_string("all"));
	if (rc == 0 && pb_cond_check(cond, !pb_render_is_dry(r), &bad, msg, sizeof(msg)) < 0) {
		const struct pb_node *at = bad ? pb_node_get(n, bad) : NULL;

		pb_diag_node(d, file, at ? at : n, "%s", msg);
		rc = -RY_E_INVALID;
	}
	if (rc < 0) {
		json_decref(cond);
		return rc;
	}
	*ret = cond;
	return 0;
}

int pb_step_build(struct pb_render *r, const struct playbook *pb, const struct pb_step *st,
		  json_t **ret, struct pb_diags *d)
{
	static const char *const common[] = {"name", "type",   "continue_on_error",
					     "when", "params", NULL};
	static const struct pb_node empty = {.kind = PBN_MAP};
	const struct pb_step_schema *s = st->schema;
	const struct pb_node *sn = st->node, *n, *x, *content, *tmpl;
	const char *file = pb->file, *bad = NULL;
	json_t *step = NULL, *params = NULL, *v;
	char msg[256];
	bool coe = false;
	int rc = 0;

	step = json_object();
	params = json_object();
	if (!step || !params) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < sn->n; i++) {
		const char *k = sn->keys[i]->text;

		if (!str_in(k, common)) {
			pb_diag_node(d, file, sn->keys[i], "unknown step key \"%s\"%s", k,
				     pb_step_field_find(s, k)
					     ? " (step parameters go under params:)"
					     : "");
			rc = -RY_E_INVALID;
		}
	}
	n = pb_node_get(sn, "params");
	if (!n) {
		n = &empty;
		for (const struct pb_field *f = s->fields; f->key; f++)
			if (f->required) {
				pb_diag_node(d, file, sn, "missing required key \"params\"");
				rc = -RY_E_INVALID;
				goto out;
			}
	} else if (n->kind != PBN_MAP) {
		pb_diag_node(d, file, n, "params: expected a mapping, got %s", node_desc(n));
		rc = -RY_E_INVALID;
		goto out;
	}
	for (size_t i = 0; i < n->n; i++) {
		const char *k = n->keys[i]->text;

		if (!pb_step_field_find(s, k)) {
			pb_diag_node(d, file, n->keys[i], "unknown key \"%s\" for step type \"%s\"",
				     k, s->type);
			rc = -RY_E_INVALID;
		}
	}
	if ((x = pb_node_get(sn, "continue_on_error")) && pb_scalar_bool(x, &coe) < 0) {
		pb_diag_node(d, file, x, "continue_on_error: expected a boolean, got %s",
			     x->kind == PBN_SCALAR ? x->text : node_desc(x));
		rc = -RY_E_INVALID;
	}
	json_object_set_new(step, "name", json_string(st->name));
	json_object_set_new(step, "type", json_string(s->type));
	json_object_set_new(step, "continue_on_error", json_boolean(coe));
	if ((x = pb_node_get(sn, "when"))) {
		v = NULL;
		if (pb_cond_convert(r, file, x, &v, d) < 0)
			rc = -RY_E_INVALID;
		else
			json_object_set_new(step, "when", v);
	}
	content = pb_node_get(n, "content");
	tmpl = pb_node_get(n, "template");
	if (strcmp(s->type, "file") == 0 && !!content == !!tmpl) {
		pb_diag_node(d, file, content ? content : (n == &empty ? sn : n),
			     "a file step needs exactly one of \"content\" and \"template\"");
		rc = -RY_E_INVALID;
	}
	for (const struct pb_field *f = s->fields; f->key; f++) {
		x = pb_node_get(n, f->key);
		v = NULL;
		if (!x) {
			if (f->required) {
				pb_diag_node(d, file, n == &empty ? sn : n,
					     "missing required key \"%s\"", f->key);
				rc = -RY_E_INVALID;
			} else if (f->def) {
				json_object_set_new(params, f->key,
						    json_loads(f->def, JSON_DECODE_ANY, NULL));
			}
			continue;
		}
		if (strcmp(s->type, "file") == 0 && strcmp(f->key, "content") == 0) {
			/* Verbatim: a script may use ${VAR} for itself. */
			if (x->kind != PBN_SCALAR || pb_scalar_is_null(x)) {
				pb_diag_node(d, file, x, "content: expected a string, got %s",
					     node_desc(x));
				rc = -RY_E_INVALID;
				continue;
			}
			json_object_set_new(params, "content", json_string(x->text));
			continue;
		}
		if (strcmp(s->type, "assert") == 0 && strcmp(f->key, "that") == 0) {
			if (x->kind != PBN_SEQ) {
				pb_diag_node(d, file, x,
					     "that: expected a list of conditions, got %s",
					     node_desc(x));
				rc = -RY_E_INVALID;
				continue;
			}
			v = json_array();
			for (size_t i = 0; v && i < x->n; i++) {
				json_t *c = NULL;

				if (pb_cond_convert(r, file, x->items[i], &c, d) < 0)
					rc = -RY_E_INVALID;
				else
					json_array_append_new(v, c);
			}
			json_object_set_new(params, "that", v);
			continue;
		}
		if (convert(r, file, f->key, x, f->type, &v, d) < 0) {
			rc = -RY_E_INVALID;
			continue;
		}
		json_object_set_new(params, strcmp(f->key, "template") == 0 ? "content" : f->key,
				    v);
	}
	if (rc == 0 &&
	    pb_params_check(s, params, !pb_render_is_dry(r), &bad, msg, sizeof(msg)) < 0) {
		x = bad ? pb_node_get(n, bad) : NULL;
		if (!x && bad && strcmp(bad, "content") == 0)
			x = tmpl;
		pb_diag_node(d, file, x ? x : (n == &empty ? sn : n), "%s", msg);
		rc = -RY_E_INVALID;
	}
	if (rc < 0)
		goto out;
	json_object_set_new(step, "params", params);
	params = NULL;
	*ret = step;
	step = NULL;
out:
	json_decref(params);
	json_decref(step);
	return rc;
}
