/* Readiness checks (readiness.h): the fabric manager, GPUDirect RDMA and GPUDirect Storage, each
 * read from the sysroot and turned into health events when what the playbook requires is not
 * there. Owns nothing past a call. */
#include "nodeagent/readiness.h"
#include "nodeagent/apply/runner.h"
#include "nodeagent/facts/facts.h"

#include "common/util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define READINESS_MAX_PROCS   65536 /* /proc entries looked at for the fabric manager */
#define READINESS_MAX_EXPECT  64
#define READINESS_MAX_SUPPORT 32
/* comm is the first 15 bytes of the program's name: nv-fabricmanager */
#define FM_COMM "nv-fabricmanage"

static const char *const readiness_checks[] = {"fabric_manager", "gpudirect_rdma", "gds", NULL};

static bool abs_path_ok(const json_t *v)
{
	const char *s = json_string_value(v);

	return s && s[0] == '/' && strlen(s) < 1024 && !strstr(s, "/../") && !strpbrk(s, "\n\r\t");
}

static int gds_config_check(const json_t *gds, char *err, size_t len)
{
	const char *key, *k2;
	json_t *v, *v2;
	size_t i;

	if (!json_is_object(gds)) {
		snprintf(err, len, "readiness.gds: expected an object");
		return -EINVAL;
	}
	json_object_foreach((json_t *)gds, key, v)
	{
		if (strcmp(key, "cufile") == 0 || strcmp(key, "gdscheck") == 0) {
			if (!abs_path_ok(v)) {
				snprintf(err, len, "readiness.gds.%s: expected an absolute path",
					 key);
				return -EINVAL;
			}
		} else if (strcmp(key, "gdscheck_timeout_s") == 0) {
			if (!json_is_integer(v) || json_integer_value(v) < 1 ||
			    json_integer_value(v) > 600) {
				snprintf(err, len,
					 "readiness.gds.gdscheck_timeout_s: expected an integer "
					 "from "
					 "1 to 600");
				return -EINVAL;
			}
		} else if (strcmp(key, "expect") == 0) {
			if (!json_is_object(v) || json_object_size(v) > READINESS_MAX_EXPECT) {
				snprintf(err, len,
					 "readiness.gds.expect: expected an object of at most %d "
					 "\"dotted.key\": value",
					 READINESS_MAX_EXPECT);
				return -EINVAL;
			}
			json_object_foreach(v, k2, v2)
			{
				if (!k2[0] || k2[0] == '.' || k2[strlen(k2) - 1] == '.' ||
				    strstr(k2, "..") || strlen(k2) > 200) {
					snprintf(err, len,
						 "readiness.gds.expect.%.200s: expected a dotted "
						 "key "
						 "path (properties.rdma_dev_addr_list)",
						 k2);
					return -EINVAL;
				}
			}
		} else if (strcmp(key, "supported") == 0) {
			if (!json_is_array(v) || json_array_size(v) > READINESS_MAX_SUPPORT) {
				snprintf(err, len,
					 "readiness.gds.supported: expected a list of at most %d "
					 "gdscheck names",
					 READINESS_MAX_SUPPORT);
				return -EINVAL;
			}
			json_array_foreach(v, i, v2)
			{
				const char *s = json_string_value(v2);

				if (!s || !s[0] || strlen(s) > 64 || strchr(s, ':')) {
					snprintf(err, len,
						 "readiness.gds.supported[%zu]: expected a "
						 "gdscheck name "
						 "(\"NVMe\")",
						 i);
					return -EINVAL;
				}
			}
		} else {
			snprintf(err, len,
				 "readiness.gds.%.60s: unknown key (cufile, expect, gdscheck, "
				 "gdscheck_timeout_s, supported)",
				 key);
			return -EINVAL;
		}
	}
	return 0;
}

int readiness_config_check(const json_t *cfg, char *err, size_t errlen)
{
	const char *key;
	json_t *v, *x;
	size_t i;

	if (!cfg)
		return 0;
	if (!json_is_object(cfg)) {
		snprintf(err, errlen, "readiness: expected an object");
		return -EINVAL;
	}
	json_object_foreach((json_t *)cfg, key, v)
	{
		if (strcmp(key, "require") == 0) {
			if (!json_is_array(v)) {
				snprintf(err, errlen, "readiness.require: expected a list");
				return -EINVAL;
			}
			json_array_foreach(v, i, x)
			{
				const char *s = json_string_value(x);
				bool known = false;

				for (int k = 0; s && readiness_checks[k]; k++)
					known = known || strcmp(s, readiness_checks[k]) == 0;
				if (!known) {
					snprintf(err, errlen,
						 "readiness.require[%zu]: expected fabric_manager, "
						 "gpudirect_rdma or gds",
						 i);
					return -EINVAL;
				}
			}
		} else if (strcmp(key, "gds") == 0) {
			if (gds_config_check(v, err, errlen) < 0)
				return -EINVAL;
		} else {
			snprintf(err, errlen, "readiness.%.60s: unknown key (require, gds)", key);
			return -EINVAL;
		}
	}
	return 0;
}

/* The failures being written by one call. */
struct rd_out {
	const char *root; /* "" for the real root, else the sysroot without a trailing '/' */
	struct health_event *ev;
	size_t max, n;
	int64_t at_ms;
};

static void rd_event(struct rd_out *o, enum health_severity sev, const char *source,
		     const char *detail, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void rd_event(struct rd_out *o, enum health_severity sev, const char *source,
		     const char *detail, const char *fmt, ...)
{
	struct health_event *e;
	va_list ap;

	if (o->n++ >= o->max)
		return;
	e = &o->ev[o->n - 1];
	memset(e, 0, sizeof(*e));
	snprintf(e->kind, sizeof(e->kind), "readiness");
	e->severity = sev;
	snprintf(e->source, sizeof(e->source), "%s", source);
	va_start(ap, fmt);
	vsnprintf(e->what, sizeof(e->what), fmt, ap);
	va_end(ap);
	snprintf(e->detail, sizeof(e->detail), "%s", detail ? detail : "");
	/* a program's output in the detail: one line of printable text */
	for (char *p = e->detail; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	for (size_t n = strlen(e->detail);
	     n && (e->detail[n - 1] == ' ' || e->detail[n - 1] == ';'); n--)
		e->detail[n - 1] = '\0';
	e->at_ms = o->at_ms;
}

/* SYSROOT + path (absolute) into buf. */
static const char *rd_path(const struct rd_out *o, const char *path, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", o->root, path);
	return buf;
}

static bool rd_exists(const struct rd_out *o, const char *path)
{
	char buf[1200];
	struct stat st;

	return stat(rd_path(o, path, buf, sizeof(buf)), &st) == 0;
}

/* The first line of a small file, trimmed; false when it cannot be read. */
static bool rd_read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\r\n")] = '\0';
	return ok;
}

/* NVSwitches the node has: the nvswitch driver's devices, else NVIDIA PCI bridges of class
 * 0x0680 (an NVSwitch the driver has not bound). */
static int rd_nvswitches(const struct rd_out *o)
{
	char path[1200], buf[64];
	struct dirent *d;
	int n = 0;
	DIR *dir;

	if ((dir = opendir(
		     rd_path(o, "/proc/driver/nvidia-nvswitch/devices", path, sizeof(path))))) {
		while ((d = readdir(dir)) && n < 1024)
			n += d->d_name[0] != '.';
		closedir(dir);
		if (n)
			return n;
	}
	if (!(dir = opendir(rd_path(o, "/sys/bus/pci/devices", path, sizeof(path)))))
		return 0;
	for (int seen = 0; (d = readdir(dir)) && seen < 4096; seen++) {
		char f[1600];

		if (d->d_name[0] == '.')
			continue;
		snprintf(f, sizeof(f), "%s/%s/vendor", path, d->d_name);
		if (!rd_read_line(f, buf, sizeof(buf)) || strcmp(buf, "0x10de") != 0)
			continue;
		snprintf(f, sizeof(f), "%s/%s/class", path, d->d_name);
		if (rd_read_line(f, buf, sizeof(buf)) && strncmp(buf, "0x0680", 6) == 0)
			n++;
	}
	closedir(dir);
	return n;
}

/* The pid of a running nv-fabricmanager, 0 when none. */
static long rd_fabric_manager_pid(const struct rd_out *o)
{
	char path[1200], buf[64];
	struct dirent *d;
	long pid = 0;
	DIR *dir;

	if (!(dir = opendir(rd_path(o, "/proc", path, sizeof(path)))))
		return 0;
	for (int seen = 0; !pid && (d = readdir(dir)) && seen < READINESS_MAX_PROCS; seen++) {
		char f[1600];

		if (d->d_name[0] < '1' || d->d_name[0] > '9' ||
		    strspn(d->d_name, "0123456789") != strlen(d->d_name))
			continue;
		snprintf(f, sizeof(f), "%s/%s/comm", path, d->d_name);
		if (rd_read_line(f, buf, sizeof(buf)) && strcmp(buf, FM_COMM) == 0)
			pid = strtol(d->d_name, NULL, 10);
	}
	closedir(dir);
	return pid;
}

static void check_fabric_manager(struct rd_out *o)
{
	int sw = rd_nvswitches(o);
	long pid = rd_fabric_manager_pid(o);
	char det[HEALTH_DETAIL_MAX];

	if (sw == 0) {
		rd_event(o, HEALTH_WARNING, "fabric-manager",
			 pid ? "nv-fabricmanager runs" : "nv-fabricmanager not running",
			 "fabric manager required, but no NVSwitch seen "
			 "(/proc/driver/nvidia-nvswitch/devices, PCI class 0x0680)");
		return;
	}
	if (!pid) {
		snprintf(det, sizeof(det),
			 "%d NVSwitch%s, no nv-fabricmanager process in /proc: CUDA reports "
			 "the system not ready",
			 sw, sw == 1 ? "" : "es");
		rd_event(o, HEALTH_CRITICAL, "fabric-manager", det,
			 "NVIDIA fabric manager not running");
	}
}

static void check_gpudirect(struct rd_out *o)
{
	char det[HEALTH_DETAIL_MAX];
	json_t *gd = NULL;

	if (rd_exists(o, "/sys/module/nvidia_peermem"))
		return;
	if (facts_gpudirect_read(o->root[0] ? o->root : "/", &gd) < 0) {
		rd_event(o, HEALTH_CRITICAL, "gpudirect", "out of memory",
			 "GPUDirect RDMA not checked");
		return;
	}
	if (!gd) {
		rd_event(o, HEALTH_CRITICAL, "gpudirect",
			 "/proc/driver/nvidia/version: absent or unreadable",
			 "GPUDirect RDMA unavailable: no NVIDIA driver loaded");
		return;
	}
	if (!json_is_true(json_object_get(gd, "dmabuf"))) {
		snprintf(det, sizeof(det), "nvidia_peermem not in /sys/module; dma-buf: %s",
			 json_string_value(json_object_get(gd, "reason"))
				 ? json_string_value(json_object_get(gd, "reason"))
				 : "unknown");
		rd_event(o, HEALTH_CRITICAL, "gpudirect", det,
			 "GPUDirect RDMA unavailable: nvidia-peermem not loaded, dma-buf not "
			 "usable");
	}
	json_decref(gd);
}

void readiness_strip_comments(char *t)
{
	bool in_str = false;

	for (char *p = t; *p; p++) {
		if (in_str) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '"')
				in_str = false;
		} else if (*p == '"') {
			in_str = true;
		} else if (p[0] == '/' && p[1] == '/') {
			/* blanks keep the line and column of what follows for the errors */
			while (*p && *p != '\n')
				*p++ = ' ';
			if (!*p)
				break;
		}
	}
}

/* Read a whole file of at most max bytes; NULL with errno. */
static char *rd_slurp(const char *path, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	char *buf;
	ssize_t r;

	if (fd < 0)
		return NULL;
	buf = malloc(max + 1);
	if (!buf) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	while (len <= max && (r = read(fd, buf + len, max + 1 - len)) > 0)
		len += (size_t)r;
	close(fd);
	if (len > max) {
		free(buf);
		errno = EFBIG;
		return NULL;
	}
	buf[len] = '\0';
	return buf;
}

/* The value at a dotted key path of doc, NULL when absent. */
static json_t *rd_lookup(json_t *doc, const char *dotted)
{
	char part[256];

	while (doc && *dotted) {
		size_t n = strcspn(dotted, ".");

		if (n >= sizeof(part))
			return NULL;
		memcpy(part, dotted, n);
		part[n] = '\0';
		doc = json_object_get(doc, part);
		dotted += n + (dotted[n] == '.');
	}
	return doc;
}

static void check_cufile(struct rd_out *o, const json_t *gds)
{
	const char *cufile = json_string_value(json_object_get(gds, "cufile"));
	char path[1200], det[HEALTH_DETAIL_MAX];
	json_t *doc, *want, *got;
	json_error_t jerr;
	const char *key;
	char *text;

	if (!cufile)
		cufile = READINESS_DEFAULT_CUFILE;
	text = rd_slurp(rd_path(o, cufile, path, sizeof(path)), READINESS_CUFILE_MAX);
	if (!text) {
		snprintf(det, sizeof(det), "%s: %s", cufile,
			 errno == EFBIG ? "over 1 MiB" : strerror(errno));
		rd_event(o, HEALTH_CRITICAL, "cufile.json", det, "GDS: cufile.json unreadable");
		return;
	}
	readiness_strip_comments(text);
	doc = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	free(text);
	if (!json_is_object(doc)) {
		snprintf(det, sizeof(det), "%s:%d:%d: %s", cufile, jerr.line, jerr.column,
			 doc ? "not a JSON object" : jerr.text);
		rd_event(o, HEALTH_CRITICAL, "cufile.json", det,
			 "GDS: cufile.json is not valid JSON");
		json_decref(doc);
		return;
	}
	json_object_foreach(json_object_get(gds, "expect"), key, want)
	{
		char *w = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY), *g;

		got = rd_lookup(doc, key);
		g = got ? json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
		if (!got) {
			snprintf(det, sizeof(det), "%s: %s absent, expected %.120s", cufile, key,
				 w ? w : "?");
			rd_event(o, HEALTH_CRITICAL, "cufile.json", det,
				 "GDS: cufile.json lacks %.80s", key);
		} else if (!json_equal(got, want)) {
			snprintf(det, sizeof(det), "%s: %s is %.80s, expected %.80s", cufile, key,
				 g ? g : "?", w ? w : "?");
			rd_event(o, HEALTH_CRITICAL, "cufile.json", det,
				 "GDS: cufile.json %.80s differs from the playbook", key);
		}
		free(w);
		free(g);
	}
	json_decref(doc);
}

/* gdscheck -p's "Name : Value" lines: the value of name in out (trimmed), false when absent. */
static bool gdscheck_value(const char *text, const char *name, char *out, size_t len)
{
	size_t nl = strlen(name);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *p = l + strspn(l, " \t"), *colon, *end;

		if (strncmp(p, name, nl) != 0)
			continue;
		colon = p + nl + strspn(p + nl, " \t");
		if (*colon != ':')
			continue;
		colon++;
		colon += strspn(colon, " \t");
		end = colon + strcspn(colon, "\r\n");
		while (end > colon && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		snprintf(out, len, "%.*s", (int)(end - colon), colon);
		return true;
	}
	return false;
}

static void check_gdscheck(struct rd_out *o, const json_t *gds)
{
	const char *prog = json_string_value(json_object_get(gds, "gdscheck"));
	json_t *tmo = json_object_get(gds, "gdscheck_timeout_s"), *name;
	char path[1200], det[HEALTH_DETAIL_MAX], how[96], val[96];
	struct runner_result res;
	struct runner_cmd cmd;
	const char *argv[3];
	size_t i;
	int r;

	if (!prog)
		prog = READINESS_DEFAULT_GDSCHECK;
	rd_path(o, prog, path, sizeof(path));
	if (access(path, X_OK) != 0)
		return; /* not installed: nothing to ask it */
	argv[0] = path;
	argv[1] = "-p";
	argv[2] = NULL;
	memset(&cmd, 0, sizeof(cmd));
	cmd.argv = argv;
	cmd.sysroot = o->root[0] ? o->root : "/";
	cmd.timeout_ms = 1000LL * (tmo ? json_integer_value(tmo) : READINESS_GDSCHECK_TIMEOUT_S);
	cmd.output_max = READINESS_GDSCHECK_OUTPUT_MAX;
	r = runner_run(&cmd, &res);
	if (r < 0) {
		snprintf(det, sizeof(det), "%s -p: %s", prog, strerror(-r));
		rd_event(o, HEALTH_CRITICAL, "gdscheck", det, "GDS: gdscheck could not run");
		return;
	}
	if (res.timed_out || res.exit_code != 0) {
		snprintf(det, sizeof(det), "%s -p: %s; %.120s", prog,
			 runner_result_describe(&res, how, sizeof(how)),
			 res.err_len ? res.err : res.out);
		rd_event(o, HEALTH_CRITICAL, "gdscheck", det, "GDS: gdscheck -p failed");
	} else if (strstr(res.out, "Platform verification error")) {
		snprintf(det, sizeof(det), "%s -p: Platform verification error", prog);
		rd_event(o, HEALTH_CRITICAL, "gdscheck", det,
			 "GDS: gdscheck platform verification failed");
	}
	json_array_foreach(json_object_get(gds, "supported"), i, name)
	{
		const char *n = json_string_value(name);

		if (gdscheck_value(res.out, n, val, sizeof(val)) && strcmp(val, "Supported") == 0)
			continue;
		snprintf(det, sizeof(det), "%s -p: %s : %s", prog, n,
			 gdscheck_value(res.out, n, val, sizeof(val)) ? val : "(absent)");
		rd_event(o, HEALTH_CRITICAL, "gdscheck", det, "GDS: %s not supported", n);
	}
	runner_result_done(&res);
}

static void check_gds(struct rd_out *o, const json_t *gds)
{
	if (!rd_exists(o, "/sys/module/nvidia_fs"))
		rd_event(o, HEALTH_CRITICAL, "nvidia-fs", "/sys/module/nvidia_fs: absent",
			 "GDS: nvidia-fs not loaded");
	check_cufile(o, gds);
	check_gdscheck(o, gds);
}

int readiness_check(const char *sysroot, const json_t *cfg, struct health_event *ev, size_t max,
		    size_t *ret_n)
{
	struct rd_out o = {.ev = ev, .max = max, .at_ms = util_now_unix_ms()};
	char err[256], root[1024];
	json_t *check;
	size_t i;

	*ret_n = 0;
	if (readiness_config_check(cfg, err, sizeof(err)) < 0)
		return -EINVAL;
	snprintf(root, sizeof(root), "%s", sysroot && strcmp(sysroot, "/") != 0 ? sysroot : "");
	while (root[0] && root[strlen(root) - 1] == '/')
		root[strlen(root) - 1] = '\0';
	o.root = root;
	json_array_foreach(json_object_get(cfg, "require"), i, check)
	{
		const char *c = json_string_value(check);

		if (strcmp(c, "fabric_manager") == 0)
			check_fabric_manager(&o);
		else if (strcmp(c, "gpudirect_rdma") == 0)
			check_gpudirect(&o);
		else
			check_gds(&o, json_object_get(cfg, "gds"));
	}
	*ret_n = o.n;
	return 0;
}
