/* Validation campaigns: the service (plan a campaign from a playbook's validation section and a
 * cluster's nodes, store it, read campaigns back as JSON, ask for a cancel; returns data, never
 * prints) and, in a serving controller, the engine pass that runs a campaign's rounds through
 * benchmark runs, retests suspects, and stores the verdict. Reference: docs/campaigns.md. */
#ifndef RAILYARD_CONTROLLER_CAMPAIGN_H
#define RAILYARD_CONTROLLER_CAMPAIGN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/service.h"
#include "controller/store/store.h"

struct ctl_server;
struct ctl_engine;
struct ctl_campaigns;

/* A campaign to plan; every pointer borrowed. */
struct ctl_campaign_request {
	const char *cluster;
	const char *playbook_text; /* the playbook exactly as it is stored and hashed */
	size_t playbook_len;
	const char *playbook_file; /* its name in diagnostics (FILE:LINE:COL) */
	const char *tests;	   /* "a,b": only these tests (and their rules); NULL: all */
	const char *nodes;	   /* selector (docs/campaigns.md): NULL: every node */
	const char *transport;	   /* "tcp" or "verbs"; NULL: the playbook's */
	bool quick;		   /* shrink every test to a smoke run */
	bool allow_missing;	   /* leave offline nodes out instead of refusing */
	int64_t seed;		   /* random-ring and congestion draws; -1: random */
	const char *actor;	   /* for the audit log */
	bool signoff;		   /* sign a report when it ends (docs/signoff.md) */
	const char *baseline;	   /* a sign-off to revalidate against (implies signoff) */
	double tolerance_bw_pct;   /* revalidation tolerances; <= 0: the defaults */
	double tolerance_lat_pct;
	const json_t *checks; /* a revalidation's configuration checks, [{playbook, deployment}],
				 recorded in its options (and so in its report); NULL: none */
	const char *id;	      /* the id to give it ("c-" and 1..16 of [0-9a-f]): a caller that
				 stores it first makes the same one after a restart; NULL: new */
};

/* Plan a campaign; with store, also store it (running) for the serving controller. *ret (new
 * reference): {id (stored only), cluster, playbook, version, transport, baseline, quick, seed,
 * nodes: [{id, hostname, rails}], left_out: [{id, hostname, reason}], tests: [{name, kind,
 * pattern, per_rail, rounds: [[{a, b, rail, a_host, b_host, phase, role, missing?}]]}]}; rounds
 * are listed only when dry_run (the `validate --dry-run --json` document). Nothing is stored
 * unless all of it is. Errors (err filled): a playbook that does not parse or has no validation
 * tests (CTL_ERR_PLAYBOOK with FILE:LINE:COL), an unknown test in tests, a bad transport or
 * selector, a selector matching no node, offline nodes without allow_missing, a pattern that
 * needs more nodes than selected (CTL_ERR_INVALID; the playbook position in diags), an id that
 * is malformed (CTL_ERR_INVALID) or taken (CTL_ERR_CONFLICT), an unknown cluster
 * (CTL_ERR_NOT_FOUND), the store. */
__attribute__((warn_unused_result)) int ctl_campaign_create(struct store *st,
							    const struct ctl_campaign_request *rq,
							    bool dry_run, json_t **ret,
							    struct ctl_error *err);

/* One campaign as JSON (`campaign show ID --json`): id, cluster, playbook, state, times,
 * transport, quick, seed, nodes, left_out, progress {test, round, rounds_done, rounds_total,
 * rows_done, rows_failed, eta_s}, tests [{name, kind, pattern, rounds, retest_rounds, rows,
 * done, failed}], verdict (once ended), error; with rows, every result row. New reference. */
__attribute__((warn_unused_result)) int
ctl_campaign_get(struct store *st, const char *id, bool rows, json_t **ret, struct ctl_error *err);
/* The newest campaigns (limit 0: 50), summaries, newest first. New reference (an array). */
__attribute__((warn_unused_result)) int ctl_campaign_list(struct store *st, size_t limit,
							  json_t **ret, struct ctl_error *err);

/* Ask the serving controller to cancel a campaign (audited as actor; NULL: the controller's own
 * cancel, not audited): 1 requested (or already), 0 it has already ended (err says how), or an
 * error (CTL_ERR_NOT_FOUND). */
__attribute__((warn_unused_result)) int
ctl_campaign_cancel(struct store *st, const char *id, const char *actor, struct ctl_error *err);

/* The serving controller's campaign pass: state, registration (before the engine starts),
 * release (after it stopped). */
__attribute__((warn_unused_result)) int ctl_campaigns_new(struct ctl_server *srv,
							  struct ctl_campaigns **ret);
__attribute__((warn_unused_result)) int ctl_campaigns_register(struct ctl_campaigns *c,
							       struct ctl_engine *e);
void ctl_campaigns_free(struct ctl_campaigns *c);

#endif
