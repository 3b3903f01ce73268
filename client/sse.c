/* The Server-Sent Events reader (sse.h): a line is gathered across pieces, then taken as a
 * field; a blank line dispatches the event. */
#include "client/sse.h"

#include <stdlib.h>
#include <string.h>

void rc_sse_init(struct rc_sse *p, rc_sse_event_fn on_event, void *cls)
{
	*p = (struct rc_sse){.on_event = on_event, .cls = cls};
}

/* Room for add more bytes and a NUL in *buf (of *cap, *len used). */
static bool grow(char **buf, size_t *cap, size_t len, size_t add)
{
	size_t want = len + add + 1, c = *cap ? *cap : 256;
	char *b;

	if (want <= *cap)
		return true;
	while (c < want)
		c *= 2;
	if (!(b = realloc(*buf, c)))
		return false;
	*buf = b;
	*cap = c;
	return true;
}

static void reset_event(struct rc_sse *p)
{
	p->dlen = 0;
	p->has_data = false;
	free(p->type);
	p->type = NULL;
}

static int stop(struct rc_sse *p, const char *why)
{
	p->error = why;
	return -1;
}

/* The blank line: the event gathered, if it has data, goes out. */
static int dispatch(struct rc_sse *p)
{
	bool go;

	if (!p->has_data) {
		reset_event(p);
		return 0;
	}
	if (!grow(&p->data, &p->dcap, p->dlen, 0))
		return stop(p, "out of memory");
	p->data[p->dlen] = '\0';
	go = p->on_event(p->cls, p->type && *p->type ? p->type : "message", p->id ? p->id : "",
			 p->data, p->dlen);
	reset_event(p);
	return go ? 0 : stop(p, "stopped");
}

/* Is the field name (len bytes) this one? */
static bool is_field(const char *name, size_t len, const char *want)
{
	return len == strlen(want) && memcmp(name, want, len) == 0;
}

/* One whole line (p->line, p->len bytes, NUL-terminated). */
static int take_line(struct rc_sse *p)
{
	const char *line, *colon, *value;
	size_t nlen, vlen;

	if (!p->len)
		return dispatch(p);
	line = p->line;
	if (line[0] == ':')
		return 0; /* a comment: the keepalives */
	colon = memchr(line, ':', p->len);
	nlen = colon ? (size_t)(colon - line) : p->len;
	value = colon ? colon + 1 : line + p->len;
	if (colon && value < line + p->len && *value == ' ')
		value++;
	vlen = (size_t)(line + p->len - value);
	if (is_field(line, nlen, "data")) {
		size_t add = vlen + (p->has_data ? 1 : 0);

		if (add > RC_SSE_LINE_MAX - p->dlen)
			return stop(p, "an event's data is longer than 1 MiB");
		if (!grow(&p->data, &p->dcap, p->dlen, add))
			return stop(p, "out of memory");
		if (p->has_data)
			p->data[p->dlen++] = '\n';
		memcpy(p->data + p->dlen, value, vlen);
		p->dlen += vlen;
		p->has_data = true;
	} else if (is_field(line, nlen, "event")) {
		free(p->type);
		if (!(p->type = strndup(value, vlen)))
			return stop(p, "out of memory");
	} else if (is_field(line, nlen, "id") && !memchr(value, '\0', vlen)) {
		char *id = strndup(value, vlen);

		if (!id)
			return stop(p, "out of memory");
		free(p->id);
		p->id = id;
	}
	/* retry and unknown fields: ignored (the caller has its own backoff). */
	return 0;
}

int rc_sse_feed(struct rc_sse *p, const char *buf, size_t len)
{
	const char *end = buf + len;

	if (p->error)
		return -1;
	while (buf < end) {
		const char *cr, *lf, *eol;
		size_t n;

		if (p->after_cr) {
			p->after_cr = false;
			if (*buf == '\n' && ++buf == end)
				break;
		}
		cr = memchr(buf, '\r', (size_t)(end - buf));
		lf = memchr(buf, '\n', cr ? (size_t)(cr - buf) : (size_t)(end - buf));
		eol = lf ? lf : cr;
		n = (size_t)((eol ? eol : end) - buf);
		if (n > RC_SSE_LINE_MAX - p->len)
			return stop(p, "a line is longer than 1 MiB");
		if (!grow(&p->line, &p->cap, p->len, n))
			return stop(p, "out of memory");
		memcpy(p->line + p->len, buf, n);
		p->len += n;
		p->line[p->len] = '\0';
		if (!eol)
			break;
		buf = eol + 1;
		p->after_cr = *eol == '\r';
		if (take_line(p) < 0)
			return -1;
		p->len = 0;
	}
	return 0;
}

void rc_sse_restart(struct rc_sse *p)
{
	p->len = 0;
	p->after_cr = false;
	reset_event(p);
}

const char *rc_sse_last_id(const struct rc_sse *p)
{
	return p->id ? p->id : "";
}

void rc_sse_done(struct rc_sse *p)
{
	free(p->line);
	free(p->data);
	free(p->type);
	free(p->id);
	*p = (struct rc_sse){0};
}
