/* Plan journals: JSON lines appended with write() + fdatasync(), read back whole. The header
 * line starts with "received_ms" (jansson keeps insertion order) so that listing needs only
 * the first bytes of each file, and the end record is short so that pruning needs only the
 * last ones. */
#include "nodeagent/journal.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A journal holds the plan (<= 4 MiB) and each step's outcome (bounded by the protocol). */
#define JOURNAL_MAX (64 * 1024 * 1024)

struct journal {
	int fd;
};

bool journal_id_ok(const char *id)
{
	size_t n = id ? strlen(id) : 0;

	if (n == 0 || n > 64 || id[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z') ||
		      (id[i] >= '0' && id[i] <= '9') || id[i] == '.' || id[i] == '_' ||
		      id[i] == '-'))
			return false;
	return true;
}

static char *dir_path(const char *state_dir)
{
	return fs_path_join(state_dir, JOURNAL_DIR);
}

static char *file_path(const char *state_dir, const char *id)
{
	char *p = NULL;

	if (asprintf(&p, "%s/%s/%s.log", state_dir, JOURNAL_DIR, id) < 0)
		return NULL;
	return p;
}

int journal_dir_init(const char *state_dir)
{
	char *d = dir_path(state_dir);
	int r;

	if (!d)
		return -ENOMEM;
	r = fs_mkdir_p(d, 0700);
	free(d);
	return r;
}

int journal_exists(const char *state_dir, const char *id)
{
	char *p = file_path(state_dir, id);
	int r;

	if (!p)
		return -ENOMEM;
	r = access(p, F_OK) == 0 ? 1 : errno == ENOENT ? 0 : -errno;
	free(p);
	return r;
}

static int append(struct journal *j, json_t *rec)
{
	char *line = json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER);
	size_t len;
	int r;

	json_decref(rec);
	if (!line)
		return -ENOMEM;
	len = strlen(line);
	line[len++] = '\n'; /* json_dumps' NUL becomes the newline; not a C string any more */
	r = fs_write_all(j->fd, line, len);
	if (r == 0 && fdatasync(j->fd) < 0)
		r = -errno;
	free(line);
	return r;
}

int journal_create(const char *state_dir, const char *id, bool check_mode, const char *plan_json,
		   struct journal **ret)
{
	struct journal *j;
	char *p;
	json_t *plan, *rec;
	int r;

	if (!journal_id_ok(id))
		return -RY_E_INVALID;
	p = file_path(state_dir, id);
	j = calloc(1, sizeof(*j));
	if (!p || !j) {
		free(p);
		free(j);
		return -ENOMEM;
	}
	j->fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOCTTY, 0600);
	if (j->fd < 0) {
		r = -errno;
		free(p);
		free(j);
		return r;
	}
	plan = json_loads(plan_json, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(plan)) {
		json_decref(plan);
		plan = json_string(plan_json);
	}
	rec = json_object();
	json_object_set_new(rec, "received_ms", json_integer(util_now_unix_ms()));
	json_object_set_new(rec, "plan", json_string(id));
	json_object_set_new(rec, "check_mode", json_boolean(check_mode));
	json_object_set_new(rec, "body", plan ? plan : json_null());
	r = append(j, rec);
	if (r == 0)
		r = fs_sync_parent(p); /* the file's existence is the "seen" record */
	if (r < 0) {
		/* Not recorded: not seen either. */
		close(j->fd);
		unlink(p);
		free(p);
		free(j);
		return r;
	}
	free(p);
	*ret = j;
	return 0;
}

int journal_open(const char *state_dir, const char *id, struct journal **ret)
{
	struct journal *j = calloc(1, sizeof(*j));
	char *p = file_path(state_dir, id);
	int r;

	if (!p || !j) {
		free(p);
		free(j);
		return -ENOMEM;
	}
	j->fd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY);
	free(p);
	if (j->fd < 0) {
		r = -errno;
		free(j);
		return r;
	}
	*ret = j;
	return 0;
}

void journal_close(struct journal *j)
{
	if (!j)
		return;
	close(j->fd);
	free(j);
}

int journal_run(struct journal *j, size_t index)
{
	return append(j, json_pack("{s:I}", "run", (json_int_t)index));
}

int journal_step(struct journal *j, size_t index, const char *name, const char *status,
		 const char *diff, const char *message, int64_t duration_ms)
{
	return append(j, json_pack("{s:I, s:s, s:s, s:s, s:s, s:I}", "step", (json_int_t)index,
				   "name", name ? name : "", "status", status, "diff",
				   diff ? diff : "", "message", message ? message : "",
				   "duration_ms", (json_int_t)duration_ms));
}

int journal_reboot(struct journal *j, size_t index, const char *boot_id, int64_t at_ms)
{
	return append(j, json_pack("{s:I, s:s, s:I}", "reboot", (json_int_t)index, "boot_id",
				   boot_id, "at_ms", (json_int_t)at_ms));
}

int journal_done(struct journal *j, const char *status, const char *message)
{
	return append(j,
		      json_pack("{s:s, s:s}", "done", status, "message", message ? message : ""));
}

void journal_state_done(struct journal_state *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n_steps; i++) {
		free(st->steps[i].name);
		free(st->steps[i].status);
		free(st->steps[i].diff);
		free(st->steps[i].message);
	}
	free(st->steps);
	json_decref(st->plan);
	free(st->done_status);
	memset(st, 0, sizeof(*st));
	st->running = -1;
	st->reboot_step = -1;
}

static char *dup_str(const json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	return strdup(v ? v : "");
}

/* Apply one record to st. -RY_E_CORRUPT when it makes no sense. */
static int apply_record(struct journal_state *st, const json_t *rec)
{
	json_t *v;

	if ((v = json_object_get(rec, "run"))) {
		json_int_t k = json_integer_value(v);

		if (!json_is_integer(v) || k < 0 || (size_t)k >= st->n_steps)
			return -RY_E_CORRUPT;
		st->running = (long)k;
	} else if ((v = json_object_get(rec, "reboot"))) {
		json_int_t k = json_integer_value(v);
		const char *b = json_string_value(json_object_get(rec, "boot_id"));
		json_t *at = json_object_get(rec, "at_ms");

		/* Only ever written inside the step it names, after its "run". */
		if (!json_is_integer(v) || k < 0 || (size_t)k >= st->n_steps ||
		    st->running != (long)k || !b || strlen(b) >= sizeof(st->reboot_boot_id) ||
		    !json_is_integer(at))
			return -RY_E_CORRUPT;
		st->reboot_step = (long)k;
		snprintf(st->reboot_boot_id, sizeof(st->reboot_boot_id), "%s", b);
		st->reboot_at_ms = json_integer_value(at);
	} else if ((v = json_object_get(rec, "step"))) {
		json_int_t k = json_integer_value(v);
		struct journal_step *s;

		if (!json_is_integer(v) || k < 0 || (size_t)k >= st->n_steps ||
		    !json_is_string(json_object_get(rec, "status")))
			return -RY_E_CORRUPT;
		s = &st->steps[k];
		if (s->recorded)
			return -RY_E_CORRUPT;
		s->name = dup_str(rec, "name");
		s->status = dup_str(rec, "status");
		s->diff = dup_str(rec, "diff");
		s->message = dup_str(rec, "message");
		s->duration_ms = json_integer_value(json_object_get(rec, "duration_ms"));
		s->recorded = true;
		if (!s->name || !s->status || !s->diff || !s->message)
			return -ENOMEM;
		if (st->running == (long)k)
			st->running = -1;
		while (st->next < st->n_steps && st->steps[st->next].recorded)
			st->next++;
	} else if ((v = json_object_get(rec, "done"))) {
		if (!json_is_string(v))
			return -RY_E_CORRUPT;
		st->done = true;
		st->done_status = strdup(json_string_value(v));
		if (!st->done_status)
			return -ENOMEM;
	} else {
		return -RY_E_CORRUPT;
	}
	return 0;
}

int journal_load(const char *state_dir, const char *id, struct journal_state *ret)
{
	struct journal_state st = {.running = -1, .reboot_step = -1};
	char *p = file_path(state_dir, id), *text = NULL, *line, *nl;
	size_t len = 0, good = 0;
	json_t *hdr = NULL;
	int r;

	if (!p)
		return -ENOMEM;
	r = fs_read_file(p, JOURNAL_MAX, &text, &len);
	if (r < 0)
		goto out;
	snprintf(st.id, sizeof(st.id), "%s", id);
	/* The header: a torn one means the plan was never recorded (not seen: start over). */
	nl = memchr(text, '\n', len);
	if (nl)
		*nl = '\0';
	hdr = nl ? json_loads(text, 0, NULL) : NULL;
	if (!json_is_object(hdr) || !json_is_string(json_object_get(hdr, "plan"))) {
		r = -RY_E_CORRUPT;
		goto out;
	}
	st.check_mode = json_is_true(json_object_get(hdr, "check_mode"));
	st.received_ms = json_integer_value(json_object_get(hdr, "received_ms"));
	if (json_is_object(json_object_get(hdr, "body"))) {
		st.plan = json_incref(json_object_get(hdr, "body"));
		st.n_steps = json_array_size(json_object_get(st.plan, "steps"));
	}
	st.steps = calloc(st.n_steps ? st.n_steps : 1, sizeof(*st.steps));
	if (!st.steps) {
		r = -ENOMEM;
		goto out;
	}
	good = (size_t)(nl - text) + 1;
	for (line = nl + 1; line < text + len; line = nl + 1) {
		json_t *rec;

		nl = memchr(line, '\n', (size_t)(text + len - line));
		if (!nl)
			break; /* torn: no newline yet */
		*nl = '\0';
		rec = json_loads(line, 0, NULL);
		if (!rec)
			break; /* torn in the middle of a page: nothing after it counts */
		r = apply_record(&st, rec);
		json_decref(rec);
		if (r < 0)
			goto out;
		good = (size_t)(nl - text) + 1;
	}
	if (good < len && truncate(p, (off_t)good) < 0) {
		r = -errno;
		goto out;
	}
	*ret = st;
	memset(&st, 0, sizeof(st));
	r = 0;
out:
	journal_state_done(&st);
	json_decref(hdr);
	free(text);
	free(p);
	return r;
}

struct listed {
	char *id;
	int64_t received_ms;
	time_t mtime;
	bool done;
};

static int cmp_listed(const void *a, const void *b)
{
	const struct listed *x = a, *y = b;

	return x->received_ms < y->received_ms ? -1 : x->received_ms > y->received_ms;
}

/* received_ms from the first bytes and "finished" from the last line of a journal. */
static void peek(int dfd, const char *name, struct listed *l)
{
	char head[64] = "", tail[256] = "";
	struct stat st;
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return;
	n = pread(fd, head, sizeof(head) - 1, 0);
	if (n > 0)
		head[n] = '\0';
	(void)sscanf(head, "{\"received_ms\":%" SCNd64, &l->received_ms);
	if (fstat(fd, &st) == 0) {
		off_t off = st.st_size > (off_t)sizeof(tail) - 1
				    ? st.st_size - (off_t)sizeof(tail) + 1
				    : 0;

		l->mtime = st.st_mtime;
		n = pread(fd, tail, sizeof(tail) - 1, off);
		if (n > 0) {
			char *last;

			tail[n] = '\0';
			if (n > 0 && tail[n - 1] == '\n')
				tail[n - 1] = '\0';
			last = strrchr(tail, '\n');
			l->done = strncmp(last ? last + 1 : tail, "{\"done\":", 8) == 0;
		}
	}
	close(fd);
}

static int list_all(const char *state_dir, struct listed **ret, size_t *ret_n)
{
	char *d = dir_path(state_dir);
	struct listed *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	DIR *dir;
	int r = 0;

	if (!d)
		return -ENOMEM;
	dir = opendir(d);
	free(d);
	if (!dir)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(dir))) {
		size_t len = strlen(e->d_name);

		if (len < 5 || strcmp(e->d_name + len - 4, ".log") != 0 || e->d_name[0] == '.')
			continue;
		if (n == cap) {
			struct listed *nv = realloc(v, (cap ? cap * 2 : 32) * sizeof(*v));

			if (!nv) {
				r = -ENOMEM;
				break;
			}
			v = nv;
			cap = cap ? cap * 2 : 32;
		}
		memset(&v[n], 0, sizeof(v[n]));
		v[n].id = strndup(e->d_name, len - 4);
		if (!v[n].id) {
			r = -ENOMEM;
			break;
		}
		peek(dirfd(dir), e->d_name, &v[n]);
		n++;
	}
	closedir(dir);
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			free(v[i].id);
		free(v);
		return r;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_listed);
	*ret = v;
	*ret_n = n;
	return 0;
}

int journal_list(const char *state_dir, char ***ret_ids, size_t *ret_n)
{
	struct listed *v = NULL;
	char **ids;
	size_t n = 0;
	int r = list_all(state_dir, &v, &n);

	if (r < 0)
		return r;
	ids = calloc(n ? n : 1, sizeof(*ids));
	if (!ids) {
		for (size_t i = 0; i < n; i++)
			free(v[i].id);
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		ids[i] = v[i].id;
	free(v);
	*ret_ids = ids;
	*ret_n = n;
	return 0;
}

int journal_prune(const char *state_dir, size_t keep)
{
	struct listed *v = NULL;
	size_t n = 0, done = 0;
	int removed = 0;

	if (list_all(state_dir, &v, &n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		done += v[i].done;
	/* Oldest first: drop finished ones until `keep` finished ones are left. */
	for (size_t i = 0; i < n && done > keep; i++) {
		char *p;

		if (!v[i].done)
			continue;
		p = file_path(state_dir, v[i].id);
		if (p && unlink(p) == 0) {
			removed++;
			done--;
		}
		free(p);
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].id);
	free(v);
	return removed;
}
