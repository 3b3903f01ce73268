/* The REST API's budget of event streams (GET /api/v1/events): each open stream holds one of
 * the HTTPS listener's connections for as long as its client wants, so streams are counted per
 * API token, per peer address and in all, each well below the listener's connection limit; the
 * rest of the connections stay for the requests that end (docs/rest.md, "Events and metrics").
 * A stream over a limit is refused before it starts. Thread-safe: one mutex; a take or a give
 * costs O(total limit) (a scan of the slots: 512 by default, no allocation). */
#ifndef RAILYARD_CONTROLLER_API_STREAMS_H
#define RAILYARD_CONTROLLER_API_STREAMS_H

#include <stddef.h>

/* Defaults, for a listener of HTTP_CONNECTIONS_DEFAULT (4096) connections: an eighth of them for
 * streams at most; a browser tab holds one, so a token's 16 is 16 tabs, and a peer address's 64
 * is a few users behind one NAT. */
#define API_STREAMS_TOTAL_DEFAULT     512
#define API_STREAMS_PER_TOKEN_DEFAULT 16
#define API_STREAMS_PER_PEER_DEFAULT  64

struct api_streams_limits {
	unsigned total;	    /* streams in all (0: API_STREAMS_TOTAL_DEFAULT) */
	unsigned per_token; /* streams of one API token (0: API_STREAMS_PER_TOKEN_DEFAULT) */
	unsigned per_peer;  /* streams from one peer address (0: API_STREAMS_PER_PEER_DEFAULT) */
};

/* Which limit refused a stream. */
enum api_streams_refusal {
	API_STREAMS_OK = 0,
	API_STREAMS_TOTAL,     /* every slot is taken: 503 */
	API_STREAMS_PER_TOKEN, /* the token has its share: 429 */
	API_STREAMS_PER_PEER,  /* the peer address has its share: 429 */
};

struct api_streams;

/* A budget with limits (NULL: the defaults). NULL when out of memory. Free with
 * api_streams_free() once no slot is held (after the HTTP server stopped). */
struct api_streams *api_streams_new(const struct api_streams_limits *limits);
void api_streams_free(struct api_streams *s);

/* Take a slot for a stream of token_id (borrowed; "" or NULL: no token) from peer (borrowed;
 * the address as text). On success *ret_slot is the slot to give back with
 * api_streams_give(), and API_STREAMS_OK is returned; otherwise the limit that refused it,
 * and *ret_slot is not written. Thread-safe. */
enum api_streams_refusal api_streams_take(struct api_streams *s, const char *token_id,
					  const char *peer, size_t *ret_slot);
/* Give back a slot taken by api_streams_take(). Thread-safe. */
void api_streams_give(struct api_streams *s, size_t slot);
/* The streams open now. Thread-safe. */
size_t api_streams_open(struct api_streams *s);

#endif
