/* The serving controller's event stream (GET /api/v1/events, docs/rest.md): what changed,
 * pushed by the code that committed it — node online/offline, facts, a deployment's state and
 * each node's end, each step result stored, a campaign's progress and end, a sign-off — into a
 * ring of the last CTL_EVENTS_KEEP events with increasing ids, read by subscribers from an id on
 * (Last-Event-ID resumes). Thread-safe. */
#ifndef RAILYARD_CONTROLLER_EVENTS_H
#define RAILYARD_CONTROLLER_EVENTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define CTL_EVENTS_KEEP 4096
/* A subscriber that heard nothing for this long gets a comment line (so that a client that
 * went away is noticed, and proxies keep the connection). */
#define CTL_EVENTS_KEEPALIVE_MS 15000

struct ctl_events;
struct ctl_events_sub;

struct ctl_events *ctl_events_new(void);
void ctl_events_free(struct ctl_events *ev);

/* Publish an event of type ("node.online", "deployment.state", ...) about cluster (NULL: of no
 * cluster) with data (stolen; its "cluster" member is set). Wakes every subscriber. */
void ctl_events_emit(struct ctl_events *ev, const char *type, const char *cluster, json_t *data);

/* Events of state changes that are not committed yet (the ingest worker's batch): after
 * ctl_events_hold(), what this thread emits is kept; ctl_events_release() publishes it (after
 * the commit) or drops it (a rollback). ctl_events_held() is a mark that ctl_events_drop()
 * goes back to (one rolled-back item of a batch). Per thread. */
void ctl_events_hold(void);
size_t ctl_events_held(void);
void ctl_events_drop(size_t mark);
void ctl_events_release(struct ctl_events *ev, bool publish);

/* A subscriber reading events with an id above after (0: only new ones... use
 * ctl_events_last_id() to start from now), of the clusters in scope_json (NULL: all).
 * wake(cls) is called, under the stream's lock, when there is something new. NULL on
 * allocation failure. */
struct ctl_events_sub *ctl_events_subscribe(struct ctl_events *ev, uint64_t after,
					    const char *scope_json, void (*wake)(void *cls),
					    void *cls);
/* The id of the newest event (0: none yet). */
uint64_t ctl_events_last_id(struct ctl_events *ev);
/* Up to max bytes of the subscriber's stream (Server-Sent Events text): > 0 bytes, or 0 when
 * nothing is due now. An id older than the ring, or newer than any given (the controller
 * restarted), gives one "reset" event first (the client refetches what it shows). */
ssize_t ctl_events_read(struct ctl_events_sub *sub, char *buf, size_t max);
/* Forget the subscriber (after this, wake is never called for it). */
void ctl_events_unsubscribe(struct ctl_events_sub *sub);

#endif
