/* The store's validation campaigns (store_campaign.c): what a campaign's schedule is made from,
 * its cursor, and one result row per scheduled slot. */
#ifndef RAILYARD_CONTROLLER_STORE_CAMPAIGN_H
#define RAILYARD_CONTROLLER_STORE_CAMPAIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/store/store.h"
#include "controller/store/store_bench.h"

/* ---- Validation campaigns (schema v7) --------------------------------------------------------
 * A campaign runs the tests of a playbook's validation section over a cluster's nodes. It stores
 * what its schedule is regenerated from (spec, nodes with rails, seed), a cursor (test, round),
 * and one result row per scheduled slot, inserted when the slot's round starts. States: running
 * -> passed | failed | cancelled | error (final). */
struct store_campaign_new {
	const char *id, *cluster, *actor;
	const char *playbook_name, *playbook_version, *playbook_sha256, *playbook_text;
	const char *spec_json;	   /* the normalized validation spec as run */
	const char *nodes_json;	   /* the nodes with their rails and facts excerpts */
	const char *left_out_json; /* nodes of the cluster left out, with the reason */
	const char *options_json;  /* the request (tests, selector, transport, quick, ...) */
	const char *progress_json; /* per test: rounds (and retest rounds once known) */
	int64_t seed;
};

struct store_campaign {
	char *id, *cluster, *actor, *playbook_name, *playbook_version, *playbook_sha256;
	char *spec_json, *nodes_json, *left_out_json, *options_json, *progress_json, *state;
	char *verdict_json, *error; /* NULL until set */
	int64_t seed;
	int test_idx, round;
	int64_t round_started_ms, cancel_requested_ms, created_at_ms, finished_at_ms; /* 0: not */
};

/* One scheduled slot's result. Strings owned (freed with the array). */
struct store_campaign_row {
	int test_idx, round, slot;
	char *phase;	    /* "run", "retest", "isolated-lat", "congested-bw", ... */
	char *role;	    /* "measure" or "congestor" */
	char *node_a;	    /* client */
	char *node_b;	    /* server (== node_a: loopback) */
	int rail;	    /* -1: not per rail */
	char *bench_id;	    /* NULL until started */
	char *state;	    /* pending, running, done, failed, missing, cancelled */
	char *summary_json; /* metrics, counters, environment (docs/campaigns.md) */
	char *error;
	int64_t started_at_ms, live_at_ms, finished_at_ms;
};

/* Is this campaign state final? Is this row state final (done, failed, missing, cancelled)? */
bool store_campaign_state_final(const char *state);
bool store_campaign_row_final(const char *state);

/* Create a running campaign (and its playbook, once per hash) with an audit row, in one
 * transaction. -RY_E_NOT_FOUND: unknown cluster; nothing stored on any error. */
STORE_WUR int store_campaign_create(struct store *s, const struct store_campaign_new *c,
				    int64_t now_ms);
STORE_WUR int store_campaign_get(struct store *s, const char *id, struct store_campaign **ret);
void store_campaign_free(struct store_campaign *c);
/* active_only: running, oldest first; otherwise the newest `limit` (0: 50). */
STORE_WUR int store_campaigns_list(struct store *s, bool active_only, size_t limit,
				   struct store_campaign ***ret, size_t *ret_n);
void store_campaigns_free(struct store_campaign **v, size_t n);
/* Move the cursor of a running campaign to (test_idx, round) with progress_json (NULL keeps);
 * round_started_at is cleared. 1 moved, 0 not running. */
STORE_WUR int store_campaign_advance(struct store *s, const char *id, int test_idx, int round,
				     const char *progress_json, int64_t now_ms);
/* End a running campaign: state (final), verdict_json and error (either may be NULL). An audit
 * row records it. 1 when it ended now, 0 when it had already ended. */
STORE_WUR int store_campaign_finish(struct store *s, const char *id, const char *state,
				    const char *verdict_json, const char *error, int64_t now_ms);
/* Ask for a cancel, audited as actor (NULL: not audited): 1 requested (or already), 0 already
 * finished, -RY_E_NOT_FOUND. */
STORE_WUR int store_campaign_request_cancel(struct store *s, const char *id, const char *actor,
					    int64_t now_ms);

/* Insert the rows of a round (state pending or missing, as given; other fields as given) and
 * stamp the campaign's round_started_at, in one transaction; rows that exist already are kept
 * (a resumed round). Only while the campaign runs with its cursor at that (test, round):
 * otherwise 0 and nothing is written; 1 when stored. */
STORE_WUR int store_campaign_round_insert(struct store *s, const char *id, int test_idx, int round,
					  const struct store_campaign_row *rows, size_t n,
					  int64_t now_ms);
/* Rows of a campaign: test_idx/round -1 mean all; ordered by test, round, slot. */
STORE_WUR int store_campaign_rows(struct store *s, const char *id, int test_idx, int round,
				  struct store_campaign_row **ret, size_t *ret_n);
void store_campaign_rows_free(struct store_campaign_row *v, size_t n);
/* Rows of a campaign counted per test and state: *ret_v[i] = {test_idx, state, n} (caller frees
 * with free(); state is a fixed-size copy). */
struct store_campaign_count {
	int test_idx;
	char state[16];
	int64_t n;
};
STORE_WUR int store_campaign_counts(struct store *s, const char *id,
				    struct store_campaign_count **ret_v, size_t *ret_n);

/* A pending row starts: in one transaction, the benchmark run that measures it (as
 * store_bench_create(), with campaign_id = id and server_address when not NULL) is stored and the
 * row becomes running with bench_id. 1 started, 0 the row was not pending (nothing stored). */
STORE_WUR int store_campaign_row_start(struct store *s, const char *id, int test_idx, int round,
				       int slot, const struct store_bench_new *b, int64_t now_ms);
/* Move a row that is not final: state, and summary_json / error when not NULL; live (a
 * congestor confirmed running) stamps live_at once. A final state stamps finished_at. 1 moved,
 * 0 it was final already. */
STORE_WUR int store_campaign_row_update(struct store *s, const char *id, int test_idx, int round,
					int slot, const char *state, const char *summary_json,
					const char *error, bool live, int64_t now_ms);

#endif
