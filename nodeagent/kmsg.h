/* The kernel log watcher's parser: records of /dev/kmsg ("PRI,SEQ,USEC,FLAGS;TEXT" followed by
 * " KEY=VALUE" continuation lines) classified into the health events that matter on an H200 node:
 * NVIDIA Xid errors (NVRM), mlx5 link, module, firmware and transmit errors, PCIe AER errors and
 * the kernel's transmit watchdog (NETDEV WATCHDOG); and a
 * limiter that deduplicates repeats and bounds how many events a minute the agent passes on.
 * Pure functions over text plus a reader of SYSROOT/dev/kmsg: no threads, no global state.
 * Reference: docs/health.md. */
#ifndef RAILYARD_AGENT_KMSG_H
#define RAILYARD_AGENT_KMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nodeagent/health_event.h"

/* What a kernel log record is about. */
enum kmsg_kind {
	KMSG_NONE = 0, /* nothing a watcher reports */
	KMSG_XID,      /* NVRM: Xid (PCI:DOMAIN:BUS:DEV): N, ... */
	KMSG_MLX5, /* mlx5_core: a link going down, a cable/module event, a firmware/health error */
	KMSG_AER,  /* PCIe Advanced Error Reporting: corrected or uncorrected errors */
	KMSG_NETDEV, /* the kernel's transmit watchdog: a netdev's queue made no progress */
};

#define KMSG_RECORD_MAX 8192 /* the kernel's own record limit (CONSOLE_EXT_LOG_MAX) */
#define KMSG_SOURCE_MAX 48
#define KMSG_TEXT_MAX	240

/* One classified record. */
struct kmsg_event {
	enum kmsg_kind kind;
	enum health_severity severity;
	uint64_t seq;		      /* the kernel's record sequence number */
	uint64_t usec;		      /* microseconds since boot */
	int xid;		      /* KMSG_XID: the Xid number; else 0 */
	char source[KMSG_SOURCE_MAX]; /* the PCI address (0000:18:00 for Xid, 0000:17:00.0),
				       * or the netdev/ib device named, or "" */
	char what[96];		      /* a short name: "Xid 79: GPU has fallen off the bus",
				       * "link down", "firmware health error", "AER uncorrected (fatal)" */
	char text[KMSG_TEXT_MAX];     /* the record's text, clipped, control bytes as '?' */
};

/* Parse one record (len bytes; its continuation lines, if any, after the first '\n' are
 * ignored) and classify it into *ret. Returns 1 when the record is an event, 0 when it is a
 * well-formed record of no interest (then only ret->kind = KMSG_NONE, seq and usec are set),
 * -EINVAL when it is not a kmsg record (no "PRI,SEQ,USEC,...;" header; *ret untouched). The
 * record's text is kmsg's escaped form
 * (\xNN for unprintable bytes): it is kept escaped. */
__attribute__((warn_unused_result)) int kmsg_parse(const char *rec, size_t len,
						   struct kmsg_event *ret);

/* The meaning and severity of an Xid number, after NVIDIA's "Xid Errors" table (r570): the
 * common ones named (13, 31, 43, 45, 48, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95, 119, 120,
 * 140); others are "Xid N" at warning. ret_severity may be NULL. Returns a static string. */
const char *kmsg_xid_meaning(int xid, enum health_severity *ret_severity);

/* Deduplication and rate limit. An event whose (kind, source, what) was passed within the last
 * window_ms is a repeat: it is counted, not passed (a flapping link or an Xid 13 storm is one
 * event a window, with a count). At most burst events a minute are passed altogether; beyond
 * that they are counted as dropped. Keys are kept for at most KMSG_LIMIT_KEYS distinct events
 * (the oldest is forgotten). */
#define KMSG_LIMIT_KEYS 64

struct kmsg_limit_key {
	enum kmsg_kind kind;
	char source[KMSG_SOURCE_MAX];
	char what[96];
	int64_t last_ms;  /* when it was last passed */
	uint64_t repeats; /* repeats suppressed since it was last passed */
};

struct kmsg_limiter {
	int64_t window_ms;
	unsigned burst;
	int64_t minute_start_ms;
	unsigned in_minute;
	uint64_t dropped; /* events over the burst, in total */
	struct kmsg_limit_key keys[KMSG_LIMIT_KEYS];
	size_t n_keys;
};

/* Set up l (caller-embedded) with a dedup window (ms > 0) and a burst a minute (> 0). */
void kmsg_limiter_init(struct kmsg_limiter *l, int64_t window_ms, unsigned burst);
/* Should ev, seen at now_ms (a monotonic clock), be passed on? When it is passed and earlier
 * repeats of it were suppressed, *ret_repeats says how many (else 0). */
bool kmsg_limiter_pass(struct kmsg_limiter *l, const struct kmsg_event *ev, int64_t now_ms,
		       uint64_t *ret_repeats);

/* A reader of SYSROOT/dev/kmsg: on the real root a character device that returns one record
 * per read(); in a test sysroot a regular file of records, one per line (continuation lines,
 * which start with a space, belong to the record before them). Records the kernel overwrote
 * before they were read (EPIPE) are skipped. */
struct kmsg_reader;

/* Open it non-blocking. from_start: read the records already in the buffer (after a boot,
 * to see what happened before the agent started); else only new ones. sysroot borrowed (NULL,
 * "" or "/": the real root). -errno on failure (-ENOENT: no kmsg; -EPERM: not allowed). */
__attribute__((warn_unused_result)) int kmsg_reader_open(const char *sysroot, bool from_start,
							 struct kmsg_reader **ret);
/* The next record into buf (NUL-terminated, at most cap - 1 bytes, its continuation lines
 * dropped): its length, 0 when none is waiting now, -errno on failure. The reader's file
 * descriptor is for poll(): kmsg_reader_fd(). */
__attribute__((warn_unused_result)) ssize_t kmsg_reader_next(struct kmsg_reader *r, char *buf,
							     size_t cap);
int kmsg_reader_fd(const struct kmsg_reader *r);
/* Is it a regular file (a test sysroot's), which poll() always finds readable? */
bool kmsg_reader_is_file(const struct kmsg_reader *r);
/* Records lost to the kernel overwriting them before they were read. */
uint64_t kmsg_reader_lost(const struct kmsg_reader *r);
/* NULL is fine. */
void kmsg_reader_free(struct kmsg_reader *r);

#endif
