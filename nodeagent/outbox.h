/* Messages to the controller that must arrive even if the session drops or the agent restarts:
 * appended to <state_dir>/outbox.log and synced before a push returns, kept until the
 * controller acknowledges their seq (it does only once they are committed), and sent again on
 * every new session. Bounded by bytes: a push waits while the outbox is full (back-pressure on
 * the plan or benchmark that produces the messages) instead of dropping anything.
 * Thread-safe: workers push, the session thread flushes and acknowledges. */
#ifndef RAILYARD_AGENT_OUTBOX_H
#define RAILYARD_AGENT_OUTBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "railyard/v1/railyard.pb-c.h"

/* Default bound of the packed messages kept (memory and file). */
#define OUTBOX_MAX_BYTES (32 * 1024 * 1024)
/* Name of the file in the state directory. */
#define OUTBOX_FILE "outbox.log"

struct outbox;

/* Open the outbox of state_dir (NULL: in memory only, for tests), loading what an earlier run
 * left unacknowledged; a torn last record (a crash mid-append) is cut off and counted in
 * *ret_torn (may be NULL). max_bytes 0: OUTBOX_MAX_BYTES. Errors name the file in err. */
__attribute__((warn_unused_result)) int outbox_open(const char *state_dir, size_t max_bytes,
						    struct outbox **ret, size_t *ret_torn,
						    char *err, size_t errlen);
void outbox_free(struct outbox *ob);

/* Keep a copy of m (its seq and ack are set when sent): appended and synced to the file before
 * this returns. While the outbox is full, waits for acknowledgements (a message larger than
 * the bound waits until the outbox is empty, then goes in alone). -ECANCELED after
 * outbox_close() (m is not kept). A file that cannot be written (disk full) is logged and m is
 * kept in memory only. */
__attribute__((warn_unused_result)) int outbox_push(struct outbox *ob,
						    const Railyard__V1__AgentMessage *m);
/* Shutting down: pushes waiting for room, and later ones, return -ECANCELED. */
void outbox_close(struct outbox *ob);

/* Send every message not sent in this session, oldest first: send() numbers the message,
 * sends it and returns its seq (> 0) or a negative error, which stops the flush. */
void outbox_flush(struct outbox *ob, int64_t (*send)(void *ud, Railyard__V1__AgentMessage *m),
		  void *ud);
/* The controller committed everything up to seq: drop what was sent at or below it. */
void outbox_acked(struct outbox *ob, uint64_t seq);
/* A new session was welcomed: what the previous one sent at or below last_committed (the
 * controller's Welcome.last_agent_seq) is dropped, everything else is unsent again. */
void outbox_resume(struct outbox *ob, uint64_t last_committed);
/* Wait until the controller acknowledged everything pushed so far (1), the outbox was closed
 * (-ECANCELED), or timeout_ms passed (0). For a notice that must arrive before the agent
 * goes away (a reboot). */
int outbox_wait_empty(struct outbox *ob, int64_t timeout_ms);
/* Anything waiting to be sent? */
bool outbox_pending(struct outbox *ob);
/* Messages and bytes kept now. */
void outbox_stats(struct outbox *ob, size_t *ret_n, size_t *ret_bytes);

#endif
