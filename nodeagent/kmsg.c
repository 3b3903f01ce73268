/* Kernel log records into health events (nodeagent/kmsg.h): the record header, the three
 * classifiers (NVRM Xid, mlx5_core, PCIe AER), the limiter and the reader of SYSROOT/dev/kmsg. */
#include "nodeagent/kmsg.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
	int xid;
	enum health_severity sev;
	const char *meaning;
} xid_table[] = {
	/* NVIDIA, "Xid Errors" (docs.nvidia.com/deploy/xid-errors), and DCGM's health watches
	 * for which of them make a node unfit for jobs. */
	{13, HEALTH_WARNING, "graphics engine exception"},
	{31, HEALTH_WARNING, "GPU memory page fault"},
	{43, HEALTH_WARNING, "GPU stopped processing"},
	{45, HEALTH_WARNING, "preemptive cleanup after earlier errors"},
	{48, HEALTH_CRITICAL, "double-bit ECC error"},
	{61, HEALTH_WARNING, "internal micro-controller breakpoint"},
	{62, HEALTH_CRITICAL, "internal micro-controller halt"},
	{63, HEALTH_WARNING, "ECC page retirement or row remapping recorded"},
	{64, HEALTH_CRITICAL, "ECC page retirement or row remapping failed"},
	{68, HEALTH_WARNING, "video decoder exception"},
	{69, HEALTH_WARNING, "graphics engine class error"},
	{74, HEALTH_CRITICAL, "NVLink error"},
	{79, HEALTH_CRITICAL, "GPU has fallen off the bus"},
	{92, HEALTH_WARNING, "high single-bit ECC error rate"},
	{94, HEALTH_WARNING, "contained ECC error"},
	{95, HEALTH_CRITICAL, "uncontained ECC error"},
	{119, HEALTH_CRITICAL, "GSP RPC timeout"},
	{120, HEALTH_CRITICAL, "GSP error"},
	{140, HEALTH_CRITICAL, "unrecovered ECC error"},
};

const char *kmsg_xid_meaning(int xid, enum health_severity *ret_severity)
{
	for (size_t i = 0; i < sizeof(xid_table) / sizeof(xid_table[0]); i++)
		if (xid_table[i].xid == xid) {
			if (ret_severity)
				*ret_severity = xid_table[i].sev;
			return xid_table[i].meaning;
		}
	if (ret_severity)
		*ret_severity = HEALTH_WARNING;
	return NULL;
}

/* An unsigned decimal at *p, advancing it; false when there is none or it overflows. */
static bool take_u64(const char **p, const char *end, uint64_t *ret)
{
	uint64_t v = 0;
	const char *s = *p;

	if (s >= end || !isdigit((unsigned char)*s))
		return false;
	while (s < end && isdigit((unsigned char)*s)) {
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
		s++;
	}
	*p = s;
	*ret = v;
	return true;
}

/* Copy [s, e) into out (cap bytes), control bytes as '?', cut to fit. */
static void copy_clean(char *out, size_t cap, const char *s, const char *e)
{
	size_t n = 0;

	for (; s < e && n + 1 < cap; s++)
		out[n++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
	out[n] = '\0';
}

/* The first occurrence of needle in [s, e), or NULL. */
static const char *find(const char *s, const char *e, const char *needle)
{
	size_t n = strlen(needle);

	for (; s + n <= e; s++)
		if (memcmp(s, needle, n) == 0)
			return s;
	return NULL;
}

/* A PCI address at s ("0000:18:00" or "0000:18:00.0", hex digits): its length, 0 if none. */
static size_t pci_addr_len(const char *s, const char *e)
{
	/* DDDD:BB:DD[.F] */
	static const char shape[] = "xxxx:xx:xx";
	size_t i;

	if (e - s < (ptrdiff_t)(sizeof(shape) - 1))
		return 0;
	for (i = 0; i < sizeof(shape) - 1; i++)
		if (shape[i] == 'x' ? !isxdigit((unsigned char)s[i]) : s[i] != shape[i])
			return 0;
	if (s + i + 1 < e && s[i] == '.' && isxdigit((unsigned char)s[i + 1]))
		i += 2;
	return i;
}

/* NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus. */
static bool classify_xid(const char *t, const char *e, struct kmsg_event *ev)
{
	const char *p = find(t, e, "NVRM: Xid (");
	uint64_t xid;
	size_t alen;
	const char *meaning;

	if (!p)
		return false;
	p += strlen("NVRM: Xid (");
	if (e - p > 4 && memcmp(p, "PCI:", 4) == 0)
		p += 4;
	alen = pci_addr_len(p, e);
	if (alen == 0 || p + alen >= e || p[alen] != ')')
		return false;
	copy_clean(ev->source, sizeof(ev->source), p, p + alen);
	p += alen + 1;
	if (p < e && *p == ':')
		p++;
	while (p < e && *p == ' ')
		p++;
	if (!take_u64(&p, e, &xid) || xid == 0 || xid > 100000)
		return false;
	ev->kind = KMSG_XID;
	ev->xid = (int)xid;
	meaning = kmsg_xid_meaning(ev->xid, &ev->severity);
	if (meaning)
		snprintf(ev->what, sizeof(ev->what), "Xid %d: %s", ev->xid, meaning);
	else
		snprintf(ev->what, sizeof(ev->what), "Xid %d", ev->xid);
	return true;
}

/* Case-insensitive substring. */
static bool has_ci(const char *s, const char *e, const char *needle)
{
	size_t n = strlen(needle);

	for (; s + n <= e; s++)
		if (strncasecmp(s, needle, n) == 0)
			return true;
	return false;
}

/* mlx5_core 0000:17:00.0 ens1f0np0: Link down
 * mlx5_core 0000:17:00.0: Port module event: module 0, Cable unplugged
 * mlx5_core 0000:17:00.0: print_health_info:... / health compromised / firmware fatal */
static bool classify_mlx5(const char *t, const char *e, struct kmsg_event *ev)
{
	const char *p = find(t, e, "mlx5_core ");
	const char *dev, *dev_end;
	size_t alen;

	if (!p)
		return false;
	p += strlen("mlx5_core ");
	alen = pci_addr_len(p, e);
	if (alen == 0)
		return false;
	dev = p;
	dev_end = p + alen;
	/* "ADDR NETDEV: ..." names the netdev too. */
	if (dev_end < e && *dev_end == ' ') {
		const char *q = dev_end + 1;
		while (q < e && *q != ':' && *q != ' ')
			q++;
		if (q < e && *q == ':')
			dev_end = q;
	}
	p = dev_end;
	if (has_ci(p, e, "health compromised") || has_ci(p, e, "print_health_info") ||
	    has_ci(p, e, "fw_fatal") || has_ci(p, e, "firmware fatal") ||
	    has_ci(p, e, "fatal error") || has_ci(p, e, "health recovery failed")) {
		ev->severity = HEALTH_CRITICAL;
		snprintf(ev->what, sizeof(ev->what), "firmware health error");
	} else if (has_ci(p, e, "port module event")) {
		bool bad = has_ci(p, e, "unplugged") || has_ci(p, e, "error") ||
			   has_ci(p, e, "not supported") || has_ci(p, e, "high temperature");
		ev->severity = bad ? HEALTH_WARNING : HEALTH_INFO;
		snprintf(ev->what, sizeof(ev->what), "%s",
			 bad ? "cable or module error" : "cable or module event");
	} else if (has_ci(p, e, "tx timeout")) {
		/* mlx5e_tx_timeout(): "TX timeout on queue: N, SQ: ..., usecs since last trans" */
		ev->severity = HEALTH_CRITICAL;
		snprintf(ev->what, sizeof(ev->what), "transmit timeout");
	} else if (has_ci(p, e, "link down")) {
		ev->severity = HEALTH_WARNING;
		snprintf(ev->what, sizeof(ev->what), "link down");
	} else if (has_ci(p, e, "link up")) {
		ev->severity = HEALTH_INFO;
		snprintf(ev->what, sizeof(ev->what), "link up");
	} else {
		return false;
	}
	ev->kind = KMSG_MLX5;
	copy_clean(ev->source, sizeof(ev->source), dev, dev_end);
	return true;
}

/* Is c a character of a netdev name (IFNAMSIZ 16; no '/', ':' or space)? */
static bool netdev_char(char c)
{
	return isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_' || c == '@';
}

/* The kernel's transmit watchdog (net/sched/sch_generic.c dev_watchdog), up to 6.8:
 *   NETDEV WATCHDOG: eth0 (virtio_net): transmit queue 0 timed out
 * and from 6.9 (netdev_crit, the netdev before the message):
 *   virtio_net virtio1 eth0: NETDEV WATCHDOG: CPU: 1: transmit queue 0 timed out 5120 ms */
static bool classify_watchdog(const char *t, const char *e, struct kmsg_event *ev)
{
	static const char tag[] = "NETDEV WATCHDOG: ";
	const char *p = find(t, e, tag), *name = NULL, *name_end = NULL;

	if (!p || !find(p, e, "timed out"))
		return false;
	if (p - t >= 3 && p[-1] == ' ' && p[-2] == ':') {
		name_end = p - 2;
		name = name_end;
		while (name > t && netdev_char(name[-1]))
			name--;
	} else {
		name = p + sizeof(tag) - 1;
		name_end = name;
		while (name_end < e && netdev_char(*name_end))
			name_end++;
	}
	if (name_end - name < 1 || name_end - name > 15 ||
	    (name_end - name == 3 && memcmp(name, "CPU", 3) == 0))
		name = name_end = NULL; /* a shape we do not know: the event, with no source */
	ev->kind = KMSG_NETDEV;
	ev->severity = HEALTH_CRITICAL;
	snprintf(ev->what, sizeof(ev->what), "transmit queue timed out");
	if (name)
		copy_clean(ev->source, sizeof(ev->source), name, name_end);
	return true;
}

/* pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0
 * pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:01:00.0
 * pcieport 0000:00:01.0: AER: Multiple Uncorrected (Non-Fatal) error received: ... */
static bool classify_aer(const char *t, const char *e, struct kmsg_event *ev)
{
	const char *p = find(t, e, "AER: ");
	const char *r, *src = NULL;
	size_t alen = 0;
	bool fatal = false, uncorrected;

	if (!p || !(r = find(p, e, "error received")))
		return false;
	uncorrected = find(p, r, "Uncorrected") != NULL;
	fatal = uncorrected && find(p, r, "(Fatal)") != NULL;
	if (!uncorrected && !find(p, r, "Corrected"))
		return false;
	/* The device that erred follows "received: "; else the reporting port before "AER". */
	r += strlen("error received");
	if (r + 2 < e && r[0] == ':' && r[1] == ' ' && (alen = pci_addr_len(r + 2, e)) > 0) {
		src = r + 2;
	} else {
		for (const char *q = t; q < p; q++)
			if ((alen = pci_addr_len(q, p)) > 0) {
				src = q;
				break;
			}
	}
	ev->kind = KMSG_AER;
	ev->severity = uncorrected ? HEALTH_CRITICAL : HEALTH_WARNING;
	snprintf(ev->what, sizeof(ev->what), "AER %s",
		 !uncorrected ? "corrected error"
		 : fatal      ? "uncorrected (fatal) error"
			      : "uncorrected (non-fatal) error");
	if (src)
		copy_clean(ev->source, sizeof(ev->source), src, src + alen);
	return true;
}

int kmsg_parse(const char *rec, size_t len, struct kmsg_event *ret)
{
	const char *p = rec, *e, *t, *nl;
	uint64_t pri, seq, usec;
	struct kmsg_event ev;

	if (!rec)
		return -EINVAL;
	nl = memchr(rec, '\n', len);
	e = nl ? nl : rec + len;
	/* PRI,SEQ,USEC,FLAGS[,...];TEXT */
	if (!take_u64(&p, e, &pri) || p >= e || *p++ != ',' || !take_u64(&p, e, &seq) || p >= e ||
	    *p++ != ',' || !take_u64(&p, e, &usec) || p >= e || *p != ',')
		return -EINVAL;
	t = memchr(p, ';', (size_t)(e - p));
	if (!t)
		return -EINVAL;
	t++;
	memset(&ev, 0, sizeof(ev));
	ev.seq = seq;
	ev.usec = usec;
	if (!classify_xid(t, e, &ev) && !classify_mlx5(t, e, &ev) && !classify_aer(t, e, &ev) &&
	    !classify_watchdog(t, e, &ev)) {
		memset(ret, 0, sizeof(*ret));
		ret->seq = seq;
		ret->usec = usec;
		return 0;
	}
	copy_clean(ev.text, sizeof(ev.text), t, e);
	*ret = ev;
	return 1;
}

void kmsg_limiter_init(struct kmsg_limiter *l, int64_t window_ms, unsigned burst)
{
	memset(l, 0, sizeof(*l));
	l->window_ms = window_ms > 0 ? window_ms : 1;
	l->burst = burst > 0 ? burst : 1;
	l->minute_start_ms = INT64_MIN;
}

bool kmsg_limiter_pass(struct kmsg_limiter *l, const struct kmsg_event *ev, int64_t now_ms,
		       uint64_t *ret_repeats)
{
	struct kmsg_limit_key *k = NULL;
	size_t i;

	if (ret_repeats)
		*ret_repeats = 0;
	for (i = 0; i < l->n_keys; i++)
		if (l->keys[i].kind == ev->kind && strcmp(l->keys[i].source, ev->source) == 0 &&
		    strcmp(l->keys[i].what, ev->what) == 0) {
			k = &l->keys[i];
			break;
		}
	if (k && now_ms - k->last_ms < l->window_ms) {
		k->repeats++;
		return false;
	}
	if (l->minute_start_ms == INT64_MIN || now_ms - l->minute_start_ms >= 60000) {
		l->minute_start_ms = now_ms;
		l->in_minute = 0;
	}
	if (l->in_minute >= l->burst) {
		l->dropped++;
		return false;
	}
	l->in_minute++;
	if (!k) {
		if (l->n_keys < KMSG_LIMIT_KEYS) {
			k = &l->keys[l->n_keys++];
		} else {
			/* Forget the key passed longest ago. */
			k = &l->keys[0];
			for (i = 1; i < l->n_keys; i++)
				if (l->keys[i].last_ms < k->last_ms)
					k = &l->keys[i];
		}
		memset(k, 0, sizeof(*k));
		k->kind = ev->kind;
		snprintf(k->source, sizeof(k->source), "%s", ev->source);
		snprintf(k->what, sizeof(k->what), "%s", ev->what);
	} else if (ret_repeats) {
		*ret_repeats = k->repeats;
	}
	k->repeats = 0;
	k->last_ms = now_ms;
	return true;
}

struct kmsg_reader {
	int fd;
	bool is_file; /* a regular file of records, one per line */
	uint64_t lost;
	/* is_file: bytes read but not yet returned */
	char buf[KMSG_RECORD_MAX * 2];
	size_t have;
	bool eof;
};

int kmsg_reader_open(const char *sysroot, bool from_start, struct kmsg_reader **ret)
{
	char path[4096];
	struct kmsg_reader *r;
	struct stat st;
	bool root = !sysroot || !*sysroot || strcmp(sysroot, "/") == 0;
	int n;

	n = snprintf(path, sizeof(path), "%s/dev/kmsg", root ? "" : sysroot);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (r->fd < 0) {
		n = -errno;
		free(r);
		return n;
	}
	if (fstat(r->fd, &st) < 0) {
		n = -errno;
		kmsg_reader_free(r);
		return n;
	}
	r->is_file = S_ISREG(st.st_mode);
	if (!from_start && lseek(r->fd, 0, SEEK_END) < 0 && !r->is_file) {
		n = -errno;
		kmsg_reader_free(r);
		return n;
	}
	*ret = r;
	return 0;
}

/* is_file: one line (a record and its continuation lines) out of r->buf. */
static ssize_t next_line(struct kmsg_reader *r, char *buf, size_t cap)
{
	for (;;) {
		char *nl = memchr(r->buf, '\n', r->have);
		size_t take, rec_len;

		/* A record ends at a newline not followed by a continuation line (" KEY=VALUE"). */
		while (nl && (size_t)(nl - r->buf) + 1 < r->have && nl[1] == ' ')
			nl = memchr(nl + 1, '\n', r->have - (size_t)(nl + 1 - r->buf));
		if (nl && (size_t)(nl - r->buf) + 1 == r->have && !r->eof)
			nl = NULL; /* a continuation may still follow */
		if (!nl && (r->eof || r->have == sizeof(r->buf))) {
			if (r->have == 0)
				return 0;
			nl = r->buf + r->have; /* the last record, unterminated, or too long */
		}
		if (nl && nl == r->buf && r->have > 0) { /* an empty line */
			memmove(r->buf, r->buf + 1, r->have - 1);
			r->have--;
			continue;
		}
		if (nl) {
			take = (size_t)(nl - r->buf);
			char *first = memchr(r->buf, '\n', take);
			rec_len = first ? (size_t)(first - r->buf) : take;
			if (rec_len >= cap)
				rec_len = cap - 1;
			memcpy(buf, r->buf, rec_len);
			buf[rec_len] = '\0';
			take = take < r->have ? take + 1 : take;
			memmove(r->buf, r->buf + take, r->have - take);
			r->have -= take;
			return (ssize_t)rec_len;
		}
		ssize_t n = read(r->fd, r->buf + r->have, sizeof(r->buf) - r->have);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			r->eof = true;
		r->have += (size_t)n;
	}
}

ssize_t kmsg_reader_next(struct kmsg_reader *r, char *buf, size_t cap)
{
	if (!r || !buf || cap == 0)
		return -EINVAL;
	if (r->is_file) {
		ssize_t n = next_line(r, buf, cap);
		/* A file can grow: look again next time. */
		if (n == 0)
			r->eof = false;
		return n;
	}
	for (;;) {
		char rec[KMSG_RECORD_MAX];
		ssize_t n = read(r->fd, rec, sizeof(rec) - 1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EPIPE) { /* overwritten before we read it: go on after it */
				r->lost++;
				continue;
			}
			if (errno == EAGAIN)
				return 0;
			return -errno;
		}
		if (n == 0)
			return 0;
		rec[n] = '\0';
		char *nl = memchr(rec, '\n', (size_t)n);
		size_t len = nl ? (size_t)(nl - rec) : (size_t)n;
		if (len >= cap)
			len = cap - 1;
		memcpy(buf, rec, len);
		buf[len] = '\0';
		return (ssize_t)len;
	}
}

int kmsg_reader_fd(const struct kmsg_reader *r)
{
	return r ? r->fd : -1;
}

bool kmsg_reader_is_file(const struct kmsg_reader *r)
{
	return r && r->is_file;
}

uint64_t kmsg_reader_lost(const struct kmsg_reader *r)
{
	return r ? r->lost : 0;
}

void kmsg_reader_free(struct kmsg_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	free(r);
}
