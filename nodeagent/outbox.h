/* Messages to the controller that must arrive even if the session drops: kept (packed) until
 * the controller acknowledges their seq, sent again on every new session. Thread-safe: workers
 * push, the session thread flushes. */
#ifndef RAILYARD_AGENT_OUTBOX_H
#define RAILYARD_AGENT_OUTBOX_H

#include <stdbool.h>
#include <stdint.h>

#include "railyard/v1/railyard.pb-c.h"

/* Messages kept before pushes are refused (-ENOBUFS). */
#define OUTBOX_MAX 256

struct outbox;

__attribute__((warn_unused_result)) int outbox_new(struct outbox **ret);
void outbox_free(struct outbox *ob);

/* Queue a copy of m (its seq and ack are set when sent). -ENOBUFS when full. */
__attribute__((warn_unused_result)) int outbox_push(struct outbox *ob,
						    const Railyard__V1__AgentMessage *m);
/* Send every message not sent in this session, oldest first: send() numbers the message,
 * sends it and returns its seq (> 0) or a negative error, which stops the flush. */
void outbox_flush(struct outbox *ob, int64_t (*send)(void *ud, Railyard__V1__AgentMessage *m),
		  void *ud);
/* The controller processed everything up to seq: drop what was sent at or below it. */
void outbox_acked(struct outbox *ob, uint64_t seq);
/* A new session: everything still kept is unsent again. */
void outbox_session_reset(struct outbox *ob);
/* Anything waiting to be sent? */
bool outbox_pending(struct outbox *ob);

#endif
