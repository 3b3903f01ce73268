/* A reader of Server-Sent Events (text/event-stream, as the WHATWG HTML standard defines it):
 * bytes in, in whatever pieces the connection delivers them, events out. Lines end with LF,
 * CRLF or CR, even a CRLF split between two pieces; a line starting with ':' is a comment; the
 * fields are id, event and data (several data lines join with LF), others ignored. A line, and
 * an event's data, is bounded: a longer one stops the reader with an error. Knows nothing of
 * the connection or of JSON. */
#ifndef RAILYARD_CLIENT_SSE_H
#define RAILYARD_CLIENT_SSE_H

#include <stdbool.h>
#include <stddef.h>

/* The longest line, and the longest data of one event, taken (bytes, without line ends). */
#define RC_SSE_LINE_MAX (1u << 20)

/* An event: its type ("message" when it named none), the last event id the stream set ("" when
 * none yet) and its data (NUL-terminated; len bytes). All borrowed for the call. Returns false
 * to stop the reader (rc_sse_feed() then fails with error "stopped"). */
typedef bool (*rc_sse_event_fn)(void *cls, const char *type, const char *id, const char *data,
				size_t len);

struct rc_sse {
	rc_sse_event_fn on_event;
	void *cls;
	char *line; /* the line being read, not yet ended */
	size_t len, cap;
	bool after_cr; /* the last byte ended a line with CR: an LF right after it is its end */
	char *data;    /* the event's data lines, joined by LF */
	size_t dlen, dcap;
	bool has_data;	   /* a data line came (data may still be "") */
	char *type;	   /* the event field of this event; NULL: none */
	char *id;	   /* the last event id: kept from event to event, and across connections */
	const char *error; /* why the reader stopped (a static string); NULL while it reads */
};

void rc_sse_init(struct rc_sse *p, rc_sse_event_fn on_event, void *cls);
/* Read len bytes: each event they complete goes to on_event. 0, or -1 once the reader stopped
 * (p->error says why: a line or an event over RC_SSE_LINE_MAX, out of memory, or on_event
 * said stop); a stopped reader reads nothing more. */
int rc_sse_feed(struct rc_sse *p, const char *buf, size_t len);
/* A new connection: what was read of a line or an event is dropped, the last event id kept. */
void rc_sse_restart(struct rc_sse *p);
/* The last event id ("" when none). */
const char *rc_sse_last_id(const struct rc_sse *p);
void rc_sse_done(struct rc_sse *p);

#endif
