/* The launcher's side of a collective run: build mpirun's command line from the run's params
 * and the settings the playbook deployed, run it without a shell, collect rank 0's document. */
#include "nodeagent/colljob.h"
#include "nodeagent/launch.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* mpirun's output kept: rank 0's document (the rest is cut), and the end of its stderr. */
#define OUT_MAX	     (512 * 1024)
#define ERR_TAIL     4096
#define ARGS_MAX     (64 + 2 * 256)
#define KILL_WAIT_MS 3000
#define SETTINGS_MAX 256

struct args {
	char *v[ARGS_MAX + 1];
	size_t n;
	bool full;
};

static void add(struct args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(struct args *a, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (a->n < ARGS_MAX && vasprintf(&s, fmt, ap) >= 0)
		a->v[a->n++] = s;
	else
		a->full = true;
	va_end(ap);
}

static void args_done(struct args *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
}

/* KEY = VALUE (or KEY=VALUE) lines of a settings file into an object; NULL when the file is
 * absent. Comments and lines that are not KEY=VALUE are skipped; keys and values with control
 * characters or spaces in the key are skipped too (they never reach a command line). */
static json_t *read_settings(const char *path)
{
	FILE *f = path ? fopen(path, "re") : NULL;
	char line[4096];
	json_t *o;

	if (!f)
		return NULL;
	o = json_object();
	while (o && fgets(line, sizeof(line), f) && json_object_size(o) < SETTINGS_MAX) {
		char *k = line, *eq, *v, *end;

		line[strcspn(line, "\r\n")] = '\0';
		while (*k == ' ' || *k == '\t')
			k++;
		if (*k == '#' || !(eq = strchr(k, '=')))
			continue;
		*eq = '\0';
		v = eq + 1;
		for (end = eq; end > k && (end[-1] == ' ' || end[-1] == '\t');)
			*--end = '\0';
		while (*v == ' ' || *v == '\t')
			v++;
		for (end = v + strlen(v); end > v && (end[-1] == ' ' || end[-1] == '\t');)
			*--end = '\0';
		if (!*k || strpbrk(k, " \t") || util_has_control(k) || util_has_control(v))
			continue;
		json_object_set_new(o, k, json_string(v));
	}
	fclose(f);
	return o;
}

static const char *pstr(const json_t *p, const char *key, const char *def)
{
	const char *s = json_string_value(json_object_get(p, key));

	return s ? s : def;
}

static long long pint(const json_t *p, const char *key, long long def)
{
	const json_t *v = json_object_get(p, key);

	return json_is_integer(v) ? json_integer_value(v) : def;
}

/* The default benchmark program: railyard-coll beside this agent. */
static void default_program(char *buf, size_t len)
{
	const char *relay = agent_launch_relay();
	const char *slash = relay ? strrchr(relay, '/') : NULL;

	if (slash)
		snprintf(buf, len, "%.*s/railyard-coll", (int)(slash - relay), relay);
	else
		snprintf(buf, len, "/usr/bin/railyard-coll");
}

static json_t *fail_doc(const char *why, const char *err_tail)
{
	return json_pack("{s:s, s:b, s:s, s:s}", "kind", "collective", "ok", false, "error", why,
			 "stderr_tail", err_tail ? err_tail : "");
}

/* Append what fd has to buf (up to max; beyond it is read and dropped, or for a tail the oldest
 * is dropped). 0 at EOF. */
static int drain(int fd, char *buf, size_t *len, size_t max, bool tail)
{
	char tmp[4096];
	ssize_t k = read(fd, tmp, sizeof(tmp));

	if (k <= 0)
		return k < 0 && errno == EINTR ? 1 : 0;
	if (tail && *len + (size_t)k > max) {
		size_t drop = *len + (size_t)k - max;

		if (drop > *len)
			drop = *len;
		memmove(buf, buf + drop, *len - drop);
		*len -= drop;
	}
	if (*len + (size_t)k > max)
		k = (ssize_t)(max - *len);
	memcpy(buf + *len, tmp, (size_t)k);
	*len += (size_t)k;
	return 1;
}

/* The last line of out that is a JSON object (rank 0's document). New reference or NULL. */
static json_t *last_doc(char *out)
{
	json_t *doc = NULL;

	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		json_t *o = json_loads(line, 0, NULL);

		if (json_is_object(o)) {
			json_decref(doc);
			doc = o;
		} else {
			json_decref(o);
		}
	}
	return doc;
}

int agent_nccl_tests_parse(const char *text, json_t **ret)
{
	json_t *doc =
		json_pack("{s:s, s:i, s:s, s:s, s:[]}", "program", "nccl-tests all_reduce_perf",
			  "version", 1, "backend", "nccl", "redop", "sum", "results");
	json_t *rows = json_object_get(doc, "results");
	const char *p = text;
	int ranks = 0;

	if (!doc)
		return -ENOMEM;
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char line[512], type[32], redop[32], wrong[32];
		long long size, count, root;
		double t, algbw, busbw;

		snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1),
			 p);
		p = nl ? nl + 1 : NULL;
		if (strncmp(line, "#  Rank", 7) == 0) {
			ranks++;
			continue;
		}
		if (line[0] == '#' ||
		    sscanf(line, "%lld %lld %31s %31s %lld %lf %lf %lf %31s", &size, &count, type,
			   redop, &root, &t, &algbw, &busbw, wrong) != 9 ||
		    size < 0 || count < 0 || !(t >= 0) || !(algbw >= 0) || !(busbw >= 0))
			continue;
		json_array_append_new(
			rows,
			json_pack("{s:s, s:I, s:I, s:f, s:f, s:f, s:I}", "op", "allreduce", "bytes",
				  (json_int_t)size, "count", (json_int_t)count, "time_us", t,
				  "algbw_gbs", algbw, "busbw_gbs", busbw, "wrong",
				  (json_int_t)(strcmp(wrong, "N/A") == 0 ? -1 : atoll(wrong))));
		json_object_set_new(doc, "dtype", json_string(type));
	}
	if (json_array_size(rows) == 0) {
		json_decref(doc);
		return -RY_E_INVALID;
	}
	json_object_set_new(doc, "ranks", json_integer(ranks));
	*ret = doc;
	return 0;
}

bool agent_coll_run(const struct agent_coll_conf *conf, const char *bench_id, const json_t *params,
		    uint32_t deadline_ms, atomic_bool *cancel, json_t **ret_result)
{
	const char *mpirun = conf->mpirun ? conf->mpirun : "/usr/bin/mpirun";
	const char *transport = pstr(params, "transport", ""), *relay = agent_launch_relay();
	const char *token = pstr(params, "job_token", ""),
		   *backend = pstr(params, "backend", "mpi");
	const json_t *settings = json_object_get(params, "settings"), *h, *op;
	json_t *mpi = NULL, *ucx = NULL, *mca = json_object(), *env = json_array(), *doc = NULL;
	char program[4096], *out = NULL, err[ERR_TAIL + 1] = "", hosts[16384] = "", why[512];
	char env_job[128], env_tok[128], env_sock[256], env_path[1024], env_tmp[1024];
	char *envp[] = {env_job, env_tok, env_sock, env_path, (char *)"LANG=C", NULL, NULL};
	const char *path = getenv("PATH"), *tmp = getenv("TMPDIR"), *key;
	long long rpn = pint(params, "ranks_per_node", 1);
	size_t outlen = 0, errlen = 0, i, hlen = 0;
	int64_t t0 = util_now_mono_ms(), deadline = t0 + deadline_ms, killed = 0;
	int pout[2] = {-1, -1}, perr[2] = {-1, -1}, status = -1;
	struct args a = {0};
	pid_t pid = 0;
	bool ok = false, ended = false, eof_out = false, eof_err = false;
	json_t *v;

	why[0] = '\0';
	const char *nccl_tests = json_string_value(json_object_get(params, "nccl_tests"));
	bool use_nccl_tests = strcmp(backend, "nccl") == 0 && nccl_tests && nccl_tests[0] == '/';

	if (use_nccl_tests)
		snprintf(program, sizeof(program), "%s", nccl_tests);
	else if (conf->coll_program)
		snprintf(program, sizeof(program), "%s", conf->coll_program);
	else
		default_program(program, sizeof(program));
	if (!relay || !mca || !env || strlen(token) != 64 || rpn < 1 || rpn > 64 ||
	    (strcmp(transport, "tcp") != 0 && strcmp(transport, "verbs") != 0)) {
		snprintf(why, sizeof(why), "%s",
			 !relay		       ? "this agent's own path is unknown"
			 : strlen(token) != 64 ? "the run has no job token"
					       : "transport or ranks_per_node out of range");
		goto out;
	}
	json_array_foreach(json_object_get(params, "hosts"), i, h)
	{
		const char *node = json_string_value(json_object_get(h, "node"));

		if (!node || strpbrk(node, ",: ") || util_has_control(node) ||
		    hlen + strlen(node) + 8 >= sizeof(hosts)) {
			snprintf(why, sizeof(why), "host %zu of the run is not a node id", i);
			goto out;
		}
		hlen += (size_t)snprintf(hosts + hlen, sizeof(hosts) - hlen, "%s%s:%lld",
					 i ? "," : "", node, rpn);
	}
	if (i < 2) {
		snprintf(why, sizeof(why), "a collective needs at least 2 hosts");
		goto out;
	}
	add(&a, "%s", mpirun);
	/* Without it, an mpirun started by its absolute path prefixes each daemon's command with
	 * PATH and LD_LIBRARY_PATH assignments for a remote shell: the relay runs none. */
	add(&a, "--noprefix");
	if (geteuid() == 0)
		add(&a, "--allow-run-as-root");
	json_object_set_new(mca, "plm_rsh_agent", json_string(relay));
	json_object_set_new(mca, "plm_rsh_no_tree_spawn", json_string("1"));
	if (strcmp(transport, "verbs") == 0) {
		json_object_set_new(mca, "pml", json_string("ucx"));
	} else {
		json_object_set_new(mca, "pml", json_string("ob1"));
		json_object_set_new(mca, "btl", json_string("tcp,self,vader"));
	}
	mpi = read_settings(pstr(settings, "mpi", NULL));
	if (mpi)
		json_object_set_new(mca, "mca_base_param_files",
				    json_string(pstr(settings, "mpi", "")));
	json_object_foreach(mca, key, v)
	{
		add(&a, "--mca");
		add(&a, "%s", key);
		add(&a, "%s", json_string_value(v));
	}
	add(&a, "--host");
	add(&a, "%s", hosts);
	add(&a, "--bind-to");
	add(&a, "none");
	ucx = read_settings(pstr(settings, "ucx", NULL));
	if (ucx && strcmp(transport, "verbs") == 0) {
		json_object_foreach(ucx, key, v)
		{
			add(&a, "-x");
			add(&a, "%s=%s", key, json_string_value(v));
			json_array_append_new(env, json_string(key));
		}
	}
	add(&a, "%s", program);
	if (use_nccl_tests) {
		/* nccl-tests' own flags: one GPU per rank, the sweep of the run, data checked. */
		add(&a, "-g");
		add(&a, "1");
		add(&a, "-b");
		add(&a, "%lld", pint(params, "min_bytes", 8));
		add(&a, "-e");
		add(&a, "%lld", pint(params, "max_bytes", 64LL << 20));
		add(&a, "-f");
		add(&a, "2");
		add(&a, "-n");
		add(&a, "%lld", pint(params, "iters", 20));
		add(&a, "-w");
		add(&a, "%lld", pint(params, "warmup", 5));
		add(&a, "-c");
		add(&a, "1");
	} else {
		add(&a, "--backend");
		add(&a, "%s", backend);
	}
	if (!use_nccl_tests && json_array_size(json_object_get(params, "ops"))) {
		char ops[256] = "";
		size_t olen = 0;

		json_array_foreach(json_object_get(params, "ops"), i, op) olen += (size_t)snprintf(
			ops + olen, olen < sizeof(ops) ? sizeof(ops) - olen : 0, "%s%s",
			i ? "," : "", json_string_value(op) ? json_string_value(op) : "");
		add(&a, "--ops");
		add(&a, "%s", ops);
	}
	{
		static const char *const nums[][2] = {
			{"min_bytes", "--min-bytes"},	{"max_bytes", "--max-bytes"},
			{"iters", "--iters"},		{"warmup", "--warmup"},
			{"pair_bytes", "--pair-bytes"}, {"pair_iters", "--pair-iters"}};

		for (size_t k = 0; k < sizeof(nums) / sizeof(nums[0]) && !use_nccl_tests; k++) {
			long long n = pint(params, nums[k][0], -1);

			if (n >= 0) {
				add(&a, "%s", nums[k][1]);
				add(&a, "%lld", n);
			}
		}
	}
	if (a.full) {
		snprintf(why, sizeof(why), "mpirun's command line is too long");
		goto out;
	}
	snprintf(env_job, sizeof(env_job), AGENT_LAUNCH_ENV_JOB "=%s", bench_id);
	snprintf(env_tok, sizeof(env_tok), AGENT_LAUNCH_ENV_TOKEN "=%s", token);
	snprintf(env_sock, sizeof(env_sock), AGENT_LAUNCH_ENV_SOCK "=%s", conf->sock_path);
	snprintf(env_path, sizeof(env_path), "PATH=%s",
		 path && !util_has_control(path) ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
	if (tmp && tmp[0] == '/' && !util_has_control(tmp) && strlen(tmp) < 1000) {
		snprintf(env_tmp, sizeof(env_tmp), "TMPDIR=%s", tmp);
		envp[5] = env_tmp;
	}
	out = malloc(OUT_MAX + 1);
	if (!out || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0) {
		snprintf(why, sizeof(why), "cannot start mpirun: %s", strerror(errno));
		goto out;
	}
	a.v[a.n] = NULL;
	{
		int r = agent_spawn_group(mpirun, a.v, envp, pout[1], perr[1], &pid);

		if (r < 0) {
			snprintf(why, sizeof(why), "%s: %s", mpirun, ry_strerror(r));
			goto out;
		}
	}
	close(pout[1]);
	close(perr[1]);
	pout[1] = perr[1] = -1;
	log_info("bench %s: mpirun (pid %d) over %s on %s", bench_id, (int)pid, transport, hosts);
	while (!ended || !eof_out || !eof_err) {
		struct pollfd p[2] = {{eof_out ? -1 : pout[0], POLLIN, 0},
				      {eof_err ? -1 : perr[0], POLLIN, 0}};
		int64_t now = util_now_mono_ms();

		if (!killed && (now >= deadline || atomic_load(cancel))) {
			snprintf(why, sizeof(why), "%s",
				 atomic_load(cancel) ? "cancelled" : "the deadline passed");
			(void)kill(-pid, SIGTERM);
			killed = now;
		}
		if (killed && now >= killed + KILL_WAIT_MS)
			(void)kill(-pid, SIGKILL);
		if (poll(p, 2, 100) > 0) {
			if (p[0].revents && !drain(pout[0], out, &outlen, OUT_MAX, false))
				eof_out = true;
			if (p[1].revents && !drain(perr[0], err, &errlen, ERR_TAIL, true))
				eof_err = true;
		}
		if (!ended && waitpid(pid, &status, WNOHANG) == pid) {
			ended = true;
			/* Whatever it left in its group (a daemon's children) goes with it. */
			(void)kill(-pid, SIGKILL);
		}
		if (ended && killed && util_now_mono_ms() >= killed + 2 * KILL_WAIT_MS)
			break; /* a descendant holds the pipes: stop reading */
	}
	out[outlen] = '\0';
	err[errlen] = '\0';
	if (!why[0] && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		snprintf(why, sizeof(why), "mpirun %s %d",
			 WIFEXITED(status) ? "exited" : "killed by signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	if (!why[0] && use_nccl_tests) {
		if (agent_nccl_tests_parse(out, &doc) < 0)
			snprintf(why, sizeof(why), "nccl-tests printed no result line");
	} else if (!why[0]) {
		doc = last_doc(out);
	}
	if (!why[0] && !doc)
		snprintf(why, sizeof(why), "rank 0 printed no JSON document");
	if (!why[0]) {
		unsigned daemons = 0;
		int64_t last = 0;

		agent_launch_stats(conf->launch, bench_id, &daemons, &last);
		*ret_result = json_pack(
			"{s:s, s:b, s:s, s:s, s:O, s:{s:s, s:O, s:O, s:i, s:I}, s:{s:O, s:O}}",
			"kind", "collective", "ok", true, "transport", transport, "backend",
			backend, "coll", doc, "launch", "mpirun", mpirun, "mca", mca, "env", env,
			"daemons", (int)daemons, "launch_ms", (json_int_t)(last ? last - t0 : 0),
			"settings", "mpi", mpi ? mpi : json_null(), "ucx", ucx ? ucx : json_null());
		ok = *ret_result != NULL;
		if (!ok)
			snprintf(why, sizeof(why), "out of memory");
	}
out:
	if (!ok) {
		log_warn("bench %s: collective failed: %s", bench_id, why);
		*ret_result = fail_doc(why, util_has_control(err) ? NULL : err);
		if (*ret_result && err[0] && util_has_control(err)) {
			char *safe = util_escape(err, true);

			json_object_set_new(*ret_result, "stderr_tail",
					    json_string(safe ? safe : ""));
			free(safe);
		}
	} else {
		log_info("bench %s: collective done", bench_id);
	}
	for (int k = 0; k < 2; k++) {
		if (pout[k] >= 0)
			close(pout[k]);
		if (perr[k] >= 0)
			close(perr[k]);
	}
	if (pid > 0 && !ended) {
		(void)kill(-pid, SIGKILL);
		(void)waitpid(pid, NULL, 0);
	}
	free(out);
	args_done(&a);
	json_decref(doc);
	json_decref(mpi);
	json_decref(ucx);
	json_decref(mca);
	json_decref(env);
	return ok;
}
