/* The workload manager's pure parts and its commands: names, reasons, the parsers of sinfo and
 * squeue, and query / drain / resume through Slurm's command-line tools or a site's hooks, each
 * run by absolute path with an argv (nodeagent/apply/runner.c: no shell, a timeout that kills
 * the process group, output capped). No store, no server: the worker (wlm_worker.c) and the
 * binding's service (wlm_binding.c) are above it. */
#include "controller/wlm/wlm.h"
#include "nodeagent/apply/runner.h"

#include "common/util/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Output kept per command: a sinfo line per node of a large cluster fits. */
#define WLM_OUTPUT_MAX (1024 * 1024)
#define WLM_JOBS_MAX   4096

void wlm_binding_free(struct wlm_binding *b)
{
	char ***hooks[4];

	if (!b)
		return;
	hooks[0] = &b->hook_drain;
	hooks[1] = &b->hook_resume;
	hooks[2] = &b->hook_state;
	hooks[3] = &b->hook_jobs;
	for (size_t i = 0; i < 4; i++) {
		for (char **a = *hooks[i]; a && *a; a++)
			free(*a);
		free(*hooks[i]);
	}
	free(b->cluster);
	free(b->slurm_bin_dir);
	free(b->slurm_conf);
	free(b->updated_by);
	json_decref(b->node_map);
	free(b);
}

bool wlm_name_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n < 1 || n > WLM_NAME_MAX)
		return false;
	if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') ||
	      (name[0] >= '0' && name[0] <= '9')))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

int wlm_node_name(const struct wlm_binding *b, const char *hostname, char *out, size_t outlen)
{
	const char *mapped = NULL;
	size_t n;

	if (!out || outlen == 0)
		return -EINVAL;
	out[0] = '\0';
	if (!hostname)
		return -RY_E_INVALID;
	if (b && b->node_map)
		mapped = json_string_value(json_object_get(b->node_map, hostname));
	if (mapped)
		n = strlen(mapped);
	else {
		mapped = hostname;
		n = strcspn(hostname, ".");
	}
	if (n == 0 || n >= outlen || n > WLM_NAME_MAX)
		return -RY_E_INVALID;
	memcpy(out, mapped, n);
	out[n] = '\0';
	if (!wlm_name_valid(out)) {
		out[0] = '\0';
		return -RY_E_INVALID;
	}
	return 0;
}

/* ---- reasons ------------------------------------------------------------------------------ */

/* Length of the valid UTF-8 character at p (1..4), or 0 when p does not start one. */
static size_t utf8_char(const unsigned char *p)
{
	size_t n = *p < 0x80			       ? 1
		   : (*p & 0xe0) == 0xc0 && *p >= 0xc2 ? 2
		   : (*p & 0xf0) == 0xe0	       ? 3
		   : (*p & 0xf8) == 0xf0 && *p <= 0xf4 ? 4
						       : 0;

	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* Append s to out (at most cap bytes in all, cap < outlen) cleaned: control characters and
 * quotes as spaces, runs of spaces as one, no leading space when out ends in one, a byte that
 * is not valid UTF-8 as '?'. Whole characters only: stops before one that does not fit. Returns
 * the new length. */
static size_t clean_append(char *out, size_t len, size_t cap, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; p && *p;) {
		size_t n = utf8_char(p);
		unsigned char c = *p;

		if (n == 0) { /* not UTF-8: one byte, shown as '?' */
			c = '?';
			n = 1;
		} else if (n == 1 && (c < 0x20 || c == 0x7f || c == '"' || c == '\'' || c == '`'))
			c = ' ';
		if (n == 1 && c == ' ' && (len == 0 || out[len - 1] == ' ')) {
			p++;
			continue;
		}
		if (len + n > cap)
			break;
		if (n == 1 || *p != c)
			out[len++] = (char)c;
		else {
			memcpy(out + len, p, n);
			len += n;
		}
		p += n;
	}
	out[len] = '\0';
	return len;
}

/* Cut s (len bytes) back to a UTF-8 character boundary at or below at. */
static size_t utf8_floor(const char *s, size_t at)
{
	while (at > 0 && ((unsigned char)s[at] & 0xc0) == 0x80)
		at--;
	return at;
}

void wlm_reason_fit(char *out, size_t outlen, const char *source, const char *source_id,
		    const char *finding)
{
	char head[WLM_REASON_MAX + 1], body[4 * WLM_REASON_MAX + 1], id[41];
	size_t cap, hl, bl;

	if (!out || outlen == 0)
		return;
	cap = outlen - 1 < WLM_REASON_MAX ? outlen - 1 : WLM_REASON_MAX;
	/* The id: at most 40 bytes (a cut id still names the row in the ledger). */
	id[0] = '\0';
	clean_append(id, 0, sizeof(id) - 1, source_id ? source_id : "");
	hl = (size_t)snprintf(head, sizeof(head), "%s %s %s: ", WLM_REASON_PREFIX,
			      source && *source ? source : "unknown", id[0] ? id : "-");
	if (hl >= sizeof(head))
		hl = sizeof(head) - 1;
	body[0] = '\0';
	bl = clean_append(body, 0, sizeof(body) - 1, finding ? finding : "");
	while (bl > 0 && body[bl - 1] == ' ')
		body[--bl] = '\0';
	if (hl + bl > cap) {
		/* Finding cut: keep what fits before "...", at a character boundary. */
		size_t room = cap > hl + 3 ? cap - hl - 3 : 0;

		bl = utf8_floor(body, room < bl ? room : bl);
		while (bl > 0 && body[bl - 1] == ' ')
			bl--;
		memcpy(body + bl, "...", 4);
		bl += 3;
	}
	if (bl == 0 && hl >= 2) /* no finding: "railyard: campaign 12" */
		hl -= 2;
	if (hl > cap)
		hl = utf8_floor(head, cap);
	memcpy(out, head, hl);
	if (hl + bl > cap)
		bl = cap - hl;
	memcpy(out + hl, body, bl);
	out[hl + bl] = '\0';
}

/* ---- parsers ------------------------------------------------------------------------------ */

static void set_reason(struct wlm_node_state *s, const char *r, size_t n)
{
	while (n > 0 && (r[n - 1] == ' ' || r[n - 1] == '\r'))
		n--;
	/* scontrol's "[user@2026-12-03T17:06:31]" suffix (sinfo %E has none; hooks may). */
	if (n > 0 && r[n - 1] == ']') {
		const char *open = NULL;

		for (size_t i = n; i-- > 0;)
			if (r[i] == '[') {
				open = r + i;
				break;
			}
		if (open && memchr(open, '@', (size_t)(r + n - open)) && open > r &&
		    open[-1] == ' ')
			n = (size_t)(open - r - 1);
	}
	if (n >= sizeof(s->reason))
		n = utf8_floor(r, sizeof(s->reason) - 1);
	memcpy(s->reason, r, n);
	s->reason[n] = '\0';
	if (strcmp(s->reason, "none") == 0 || strcmp(s->reason, "(null)") == 0)
		s->reason[0] = '\0';
	s->ours = strncmp(s->reason, WLM_REASON_PREFIX, strlen(WLM_REASON_PREFIX)) == 0;
}

int wlm_parse_sinfo_line(const char *line, struct wlm_node_state *s)
{
	const char *bar1, *bar2, *end;
	size_t nl, sl;

	if (!line || !s)
		return -EINVAL;
	end = line + strcspn(line, "\n");
	bar1 = memchr(line, '|', (size_t)(end - line));
	bar2 = bar1 ? memchr(bar1 + 1, '|', (size_t)(end - bar1 - 1)) : NULL;
	if (!bar2)
		return -RY_E_INVALID;
	nl = (size_t)(bar1 - line);
	while (nl > 0 && line[nl - 1] == ' ')
		nl--;
	sl = (size_t)(bar2 - bar1 - 1);
	if (nl == 0 || nl > WLM_NAME_MAX || sl == 0 || sl >= sizeof(s->state))
		return -RY_E_INVALID;
	memcpy(s->name, line, nl);
	s->name[nl] = '\0';
	if (!wlm_name_valid(s->name))
		return -RY_E_INVALID;
	/* %T: "idle", "drained", "draining", "mixed", "down*" (* = not responding), "idle~"... */
	for (size_t i = 0; i < sl; i++) {
		char c = bar1[1 + i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (!((c >= 'a' && c <= 'z') || c == '+' || c == '*' || c == '~' || c == '#' ||
		      c == '!' || c == '%' || c == '$' || c == '@' || c == '^' || c == '-' ||
		      c == ' '))
			return -RY_E_INVALID;
		s->state[i] = c;
	}
	while (sl > 0 && s->state[sl - 1] == ' ')
		sl--;
	s->state[sl] = '\0';
	if (sl == 0)
		return -RY_E_INVALID;
	s->drained = strstr(s->state, "drain") != NULL;
	set_reason(s, bar2 + 1, (size_t)(end - bar2 - 1));
	return 0;
}

int wlm_parse_squeue(const char *out, size_t n, struct wlm_node_state *s)
{
	struct wlm_job *v = NULL;
	size_t nv = 0;
	const char *p = out, *end = out + n;

	if (!out || !s)
		return -EINVAL;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *bar;
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p), il, ul;
		struct wlm_job *nvv;

		if (ll > 0 && p[ll - 1] == '\r')
			ll--;
		if (ll == 0)
			goto next;
		bar = memchr(p, '|', ll);
		if (!bar)
			goto bad;
		il = (size_t)(bar - p);
		ul = ll - il - 1;
		if (il == 0 || il >= sizeof(v->id) || ul >= sizeof(v->user))
			goto bad;
		for (size_t i = 0; i < il; i++)
			if (!((p[i] >= '0' && p[i] <= '9') || p[i] == '_' || p[i] == '.' ||
			      p[i] == '[' || p[i] == ']' || p[i] == '-' || p[i] == '+'))
				goto bad;
		for (size_t i = 0; i < ul; i++)
			if ((unsigned char)bar[1 + i] < 0x20 || bar[1 + i] == '|')
				goto bad;
		if (nv >= WLM_JOBS_MAX)
			goto bad;
		nvv = realloc(v, (nv + 1) * sizeof(*v));
		if (!nvv) {
			free(v);
			return -ENOMEM;
		}
		v = nvv;
		memcpy(v[nv].id, p, il);
		v[nv].id[il] = '\0';
		memcpy(v[nv].user, bar + 1, ul);
		v[nv].user[ul] = '\0';
		nv++;
	next:
		if (!nl)
			break;
		p = nl + 1;
	}
	free(s->jobs);
	s->jobs = v;
	s->njobs = nv;
	return 0;
bad:
	free(v);
	return -RY_E_INVALID;
}

void wlm_node_state_done(struct wlm_node_state *s)
{
	if (!s)
		return;
	free(s->jobs);
	s->jobs = NULL;
	s->njobs = 0;
}

/* ---- commands ----------------------------------------------------------------------------- */

static void say(char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (!why || whylen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
}

/* First line of s (for a message), at most 200 bytes. */
static const char *first_line(const char *s, char *buf, size_t len)
{
	size_t n = s ? strcspn(s, "\n") : 0;

	if (n >= len)
		n = len - 1;
	if (n > 200)
		n = 200;
	memcpy(buf, s ? s : "", n);
	buf[n] = '\0';
	return buf;
}

/* Run argv under the binding's rules; 0 and *ret when it ran and exited 0. A failure is
 * -ETIMEDOUT or -RY_E_REFUSED with why (the program, its status, its stderr's first line). */
static int run(const struct wlm_binding *b, const char *const *argv, struct runner_result *ret,
	       char *why, size_t whylen)
{
	char env_conf[WLM_PATH_MAX + 16], desc[96], line[256];
	const char *env[2] = {NULL, NULL};
	struct runner_cmd c = {
		.argv = argv,
		.sysroot = "/",
		.timeout_ms = (int64_t)b->timeout_s * 1000,
		.grace_ms = 1000,
		.output_max = WLM_OUTPUT_MAX,
		.env_extra = env,
	};
	struct runner_result res;
	int r;

	if (b->kind == WLM_SLURM && b->slurm_conf) {
		snprintf(env_conf, sizeof(env_conf), "SLURM_CONF=%s", b->slurm_conf);
		env[0] = env_conf;
	}
	r = runner_run(&c, &res);
	if (r < 0) {
		say(why, whylen, "%s: %s", argv[0], ry_strerror(r));
		return r == -ENOENT ? -RY_E_REFUSED : r;
	}
	if (res.timed_out || res.exit_code != 0) {
		say(why, whylen, "%s: %s: %s", argv[0],
		    runner_result_describe(&res, desc, sizeof(desc)),
		    first_line(res.err_len ? res.err : res.out, line, sizeof(line)));
		r = res.timed_out ? -ETIMEDOUT : -RY_E_REFUSED;
		runner_result_done(&res);
		return r;
	}
	if (res.out_truncated) {
		say(why, whylen, "%s: more than %d bytes of output", argv[0], WLM_OUTPUT_MAX);
		runner_result_done(&res);
		return -RY_E_INVALID;
	}
	*ret = res;
	return 0;
}

static void tool(const struct wlm_binding *b, const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", b->slurm_bin_dir ? b->slurm_bin_dir : "/usr/bin", name);
}

/* A hook's argv with {node} and {reason} substituted as whole arguments (borrowed strings). */
static int hook_argv(char *const *tmpl, const char *node, const char *reason,
		     const char *argv[WLM_ARGV_MAX + 1])
{
	size_t i = 0;

	for (; tmpl && tmpl[i]; i++) {
		if (i >= WLM_ARGV_MAX)
			return -RY_E_INVALID;
		if (strcmp(tmpl[i], "{node}") == 0)
			argv[i] = node;
		else if (strcmp(tmpl[i], "{reason}") == 0)
			argv[i] = reason ? reason : "";
		else
			argv[i] = tmpl[i];
	}
	argv[i] = NULL;
	return i > 0 ? 0 : -RY_E_INVALID;
}

static int query_slurm(const struct wlm_binding *b, const char *name, bool jobs,
		       struct wlm_node_state *s, char *why, size_t whylen)
{
	char sinfo[WLM_PATH_MAX + 16], squeue[WLM_PATH_MAX + 16];
	const char *argv[] = {sinfo, "-h", "-N", "-n", name, "-o", "%N|%T|%E", NULL};
	struct runner_result res;
	int r;

	tool(b, "sinfo", sinfo, sizeof(sinfo));
	r = run(b, argv, &res, why, whylen);
	if (r < 0)
		return r;
	if (res.out_len == 0) {
		runner_result_done(&res);
		say(why, whylen, "Slurm has no node %s", name);
		return -RY_E_NOT_FOUND;
	}
	r = wlm_parse_sinfo_line(res.out, s);
	if (r == 0 && strcmp(s->name, name) != 0)
		r = -RY_E_INVALID;
	if (r < 0)
		say(why, whylen, "sinfo: unexpected output for %s: %.120s", name, res.out);
	runner_result_done(&res);
	if (r < 0 || !jobs)
		return r;
	tool(b, "squeue", squeue, sizeof(squeue));
	{
		const char *qv[] = {squeue, "-h",    "-w", name, "-t", "RUNNING,COMPLETING",
				    "-o",   "%i|%u", NULL};

		r = run(b, qv, &res, why, whylen);
		if (r < 0)
			return r;
		r = wlm_parse_squeue(res.out, res.out_len, s);
		if (r < 0)
			say(why, whylen, "squeue: unexpected output for %s", name);
		runner_result_done(&res);
	}
	return r;
}

static int query_hooks(const struct wlm_binding *b, const char *name, bool jobs,
		       struct wlm_node_state *s, char *why, size_t whylen)
{
	const char *argv[WLM_ARGV_MAX + 1];
	struct runner_result res;
	int r;

	if (!b->hook_state) {
		say(why, whylen, "the binding has no state hook");
		return -ENOTSUP;
	}
	if (hook_argv(b->hook_state, name, NULL, argv) < 0)
		return -RY_E_INVALID;
	r = run(b, argv, &res, why, whylen);
	if (r < 0)
		return r;
	snprintf(s->name, sizeof(s->name), "%s", name);
	set_reason(s, res.out, strcspn(res.out, "\n"));
	s->drained = s->reason[0] != '\0';
	snprintf(s->state, sizeof(s->state), "%s", s->drained ? "cordoned" : "ready");
	runner_result_done(&res);
	if (!jobs || !b->hook_jobs)
		return 0;
	if (hook_argv(b->hook_jobs, name, NULL, argv) < 0)
		return -RY_E_INVALID;
	r = run(b, argv, &res, why, whylen);
	if (r < 0)
		return r;
	/* One job per line: "ID" or "ID|USER". */
	{
		struct wlm_job *v = NULL;
		size_t nv = 0;
		char *save = NULL;

		for (char *l = strtok_r(res.out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			struct wlm_job *nvv;
			char *bar = strchr(l, '|');

			if (nv >= WLM_JOBS_MAX)
				break;
			nvv = realloc(v, (nv + 1) * sizeof(*v));
			if (!nvv) {
				free(v);
				runner_result_done(&res);
				return -ENOMEM;
			}
			v = nvv;
			if (bar)
				*bar = '\0';
			snprintf(v[nv].id, sizeof(v[nv].id), "%s", l);
			snprintf(v[nv].user, sizeof(v[nv].user), "%s", bar ? bar + 1 : "");
			nv++;
		}
		free(s->jobs);
		s->jobs = v;
		s->njobs = nv;
	}
	runner_result_done(&res);
	return 0;
}

int wlm_query(const struct wlm_binding *b, const char *name, bool jobs, struct wlm_node_state *ret,
	      char *why, size_t whylen)
{
	struct wlm_node_state s = {0};
	int r;

	if (!b || !ret || !wlm_name_valid(name))
		return -EINVAL;
	r = b->kind == WLM_SLURM ? query_slurm(b, name, jobs, &s, why, whylen)
				 : query_hooks(b, name, jobs, &s, why, whylen);
	if (r < 0) {
		wlm_node_state_done(&s);
		return r;
	}
	*ret = s;
	return 0;
}

int wlm_query_all(const struct wlm_binding *b, json_t **ret, char *why, size_t whylen)
{
	char sinfo[WLM_PATH_MAX + 16];
	const char *argv[] = {sinfo, "-h", "-N", "-o", "%N|%T|%E", NULL};
	struct runner_result res;
	json_t *o;
	char *save = NULL;
	int r;

	if (!b || !ret)
		return -EINVAL;
	if (b->kind != WLM_SLURM)
		return -ENOTSUP;
	tool(b, "sinfo", sinfo, sizeof(sinfo));
	r = run(b, argv, &res, why, whylen);
	if (r < 0)
		return r;
	o = json_object();
	for (char *l = strtok_r(res.out, "\n", &save); o && l; l = strtok_r(NULL, "\n", &save)) {
		struct wlm_node_state s = {0};

		if (wlm_parse_sinfo_line(l, &s) < 0)
			continue; /* a line we do not understand names no node */
		/* A node in several partitions is listed once per partition: the first wins. */
		if (json_object_get(o, s.name))
			continue;
		json_object_set_new(o, s.name,
				    json_pack("{s:s, s:b, s:s, s:b}", "state", s.state, "drained",
					      s.drained, "reason", s.reason, "ours", s.ours));
	}
	runner_result_done(&res);
	if (!o)
		return -ENOMEM;
	*ret = o;
	return 0;
}

int wlm_drain(const struct wlm_binding *b, const char *name, const char *reason, char *why,
	      size_t whylen)
{
	char scontrol[WLM_PATH_MAX + 16], node[WLM_NAME_MAX + 16], rs[WLM_REASON_MAX + 16];
	const char *argv[WLM_ARGV_MAX + 1];
	struct runner_result res;
	int r;

	if (!b || !wlm_name_valid(name) || !reason || strlen(reason) > WLM_REASON_MAX)
		return -EINVAL;
	if (b->kind == WLM_SLURM) {
		tool(b, "scontrol", scontrol, sizeof(scontrol));
		snprintf(node, sizeof(node), "NodeName=%s", name);
		snprintf(rs, sizeof(rs), "Reason=%s", reason);
		argv[0] = scontrol;
		argv[1] = "update";
		argv[2] = node;
		argv[3] = "State=DRAIN";
		argv[4] = rs;
		argv[5] = NULL;
	} else if (hook_argv(b->hook_drain, name, reason, argv) < 0)
		return -RY_E_INVALID;
	r = run(b, argv, &res, why, whylen);
	if (r == 0)
		runner_result_done(&res);
	return r;
}

int wlm_resume(const struct wlm_binding *b, const char *name, char *why, size_t whylen)
{
	char scontrol[WLM_PATH_MAX + 16], node[WLM_NAME_MAX + 16];
	const char *argv[WLM_ARGV_MAX + 1];
	struct runner_result res;
	int r;

	if (!b || !wlm_name_valid(name))
		return -EINVAL;
	if (b->kind == WLM_SLURM) {
		tool(b, "scontrol", scontrol, sizeof(scontrol));
		snprintf(node, sizeof(node), "NodeName=%s", name);
		argv[0] = scontrol;
		argv[1] = "update";
		argv[2] = node;
		argv[3] = "State=RESUME";
		argv[4] = NULL;
	} else if (hook_argv(b->hook_resume, name, NULL, argv) < 0)
		return -RY_E_INVALID;
	r = run(b, argv, &res, why, whylen);
	if (r == 0)
		runner_result_done(&res);
	return r;
}

int wlm_resume_if_ours(const struct wlm_binding *b, const char *name, enum wlm_resume *ret,
		       char *why, size_t whylen)
{
	struct wlm_node_state s = {0};
	int r;

	if (!b || !ret)
		return -EINVAL;
	r = wlm_query(b, name, false, &s, why, whylen);
	if (r < 0)
		return r;
	if (!s.drained && s.reason[0] == '\0') {
		*ret = WLM_NOT_DRAINED;
		return 0;
	}
	if (!s.ours) {
		say(why, whylen, "%s", s.reason[0] ? s.reason : s.state);
		*ret = WLM_NOT_OURS;
		return 0;
	}
	r = wlm_resume(b, name, why, whylen);
	if (r == 0)
		*ret = WLM_RESUMED;
	return r;
}
