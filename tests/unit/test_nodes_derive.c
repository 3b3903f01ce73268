/* controller/nodes.c: what the store derives from a node's facts (ctl_facts_deriver). The
 * digest of its output for a committed facts document is pinned to its version: a change to
 * facts_summary() or so_snapshot() that changes what they make fails here until
 * CTL_FACTS_DERIVED_VERSION is bumped (so that serve derives the stored rows again) and the
 * pin is updated. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "controller/nodes.h"
#include "common/facts/facts_doc.h"
#include "common/util/util.h"
#include "controller/signoff/snapshot.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* For version 2, of tests/fixtures/facts/h200-ib.json (version 2: gpudirect from the facts'
 * gpudirect.method; this fixture has none, so its snapshot did not change). */
#define PIN_VERSION 2
#define PIN_SUMMARY                                                                                \
	"Debian 12 | 6.1.0-28-amd64 | 8 cpu/2 numa | 2015 GiB | 8 HCA 8/8 active IB 400G | 8 GPU " \
	"H200"
#define PIN_SHA256 "72989b9e9b11741ce7d370b6c7b6a243cc12a7f26a8761787bca3c5e08f59bf8"

static void sha256_hex(const char *a, const char *b, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	assert_non_null(ctx);
	assert_int_equal(EVP_DigestInit_ex(ctx, EVP_sha256(), NULL), 1);
	assert_int_equal(EVP_DigestUpdate(ctx, a, strlen(a)), 1);
	assert_int_equal(EVP_DigestUpdate(ctx, "\n", 1), 1);
	assert_int_equal(EVP_DigestUpdate(ctx, b, strlen(b)), 1);
	assert_int_equal(EVP_DigestFinal_ex(ctx, md, &len), 1);
	EVP_MD_CTX_free(ctx);
	util_hex(md, len, out);
}

static void test_pinned(void **state)
{
	json_t *facts = json_load_file(FACTS_FIXTURE, JSON_REJECT_DUPLICATES, NULL), *snap;
	char *summary = NULL, *snapshot = NULL, hex[65];

	(void)state;
	assert_non_null(facts);
	assert_int_equal(ctl_facts_deriver.version, CTL_FACTS_DERIVED_VERSION);
	assert_int_equal(
		ctl_facts_deriver.derive((const struct json_t *)facts, &summary, &snapshot), 0);
	/* The summary is facts_summary()'s, the snapshot a JSON object. */
	assert_string_equal(summary, PIN_SUMMARY);
	snap = json_loads(snapshot, 0, NULL);
	assert_true(json_is_object(snap));
	assert_non_null(json_object_get(snap, "hcas"));
	json_decref(snap);
	sha256_hex(summary, snapshot, hex);
	if (PIN_VERSION != CTL_FACTS_DERIVED_VERSION || strcmp(hex, PIN_SHA256) != 0)
		fail_msg("the derived summary/snapshot changed (sha256 %s, pinned %s for version "
			 "%d): "
			 "bump CTL_FACTS_DERIVED_VERSION in controller/nodes.h and update the pin",
			 hex, PIN_SHA256, PIN_VERSION);
	free(summary);
	free(snapshot);
	json_decref(facts);
}

/* Anything else than an object derives without crashing (the store only passes objects). */
static void test_odd_documents(void **state)
{
	static const char *const docs[] = {"{}", "{\"rdma\":7,\"gpus\":{}}", "{\"os\":[]}"};

	(void)state;
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		json_t *f = json_loads(docs[i], 0, NULL);
		char *summary = NULL, *snapshot = NULL;

		assert_int_equal(
			ctl_facts_deriver.derive((const struct json_t *)f, &summary, &snapshot), 0);
		assert_non_null(summary);
		assert_non_null(snapshot);
		free(summary);
		free(snapshot);
		json_decref(f);
	}
}

/* ---- ctl_node_health() ------------------------------------------------------------------- */

static json_t *fixture_snapshot(void)
{
	json_t *facts = json_load_file(FACTS_FIXTURE, JSON_REJECT_DUPLICATES, NULL);
	json_t *snap = so_snapshot(facts);

	assert_non_null(snap);
	assert_int_equal(json_array_size(json_object_get(snap, "hcas")), 8);
	json_decref(facts);
	return snap;
}

static json_t *hca(json_t *snap, size_t i)
{
	return json_array_get(json_object_get(snap, "hcas"), i);
}

static const char *hstate(const json_t *h)
{
	return json_string_value(json_object_get(h, "state"));
}

/* Whether some reason of h contains text. */
static bool has_reason(const json_t *h, const char *text)
{
	const json_t *r;
	size_t i;

	json_array_foreach(json_object_get(h, "reasons"), i,
			   r) if (strstr(json_string_value(r), text)) return true;
	return false;
}

static void test_health_healthy_and_unknown(void **state)
{
	json_t *snap = fixture_snapshot(), *h;
	struct ctl_health_in in = {.state = "online", .snapshot = snap};

	(void)state;
	h = ctl_node_health(&in);
	assert_string_equal(hstate(h), "healthy");
	assert_int_equal(json_array_size(json_object_get(h, "reasons")), 0);
	json_decref(h);
	/* Offline, revoked, never connected, no facts: unknown, and said why. */
	static const char *const states[] = {"offline", "revoked", "enrolled"};
	for (size_t i = 0; i < 3; i++) {
		in.state = states[i];
		h = ctl_node_health(&in);
		assert_string_equal(hstate(h), "unknown");
		assert_int_equal(json_array_size(json_object_get(h, "reasons")), 1);
		json_decref(h);
	}
	in.state = "online";
	in.snapshot = NULL;
	h = ctl_node_health(&in);
	assert_string_equal(hstate(h), "unknown");
	assert_true(has_reason(h, "no facts"));
	json_decref(h);
	json_decref(snap);
}

/* h200-degraded's three faults: mlx5_3 DOWN (failing), mlx5_5 at 200 among 400 Gb/s and mlx5_6
 * at x8 of x16 (degraded). */
static void test_health_ports(void **state)
{
	json_t *snap = fixture_snapshot(), *h, *p;
	struct ctl_health_in in = {.state = "online", .snapshot = snap};
	size_t i;

	(void)state;
	json_object_set_new(hca(snap, 5), "rate_gbps", json_integer(200));
	h = ctl_node_health(&in);
	assert_string_equal(hstate(h), "degraded");
	assert_true(has_reason(h, "mlx5_5 runs at 200 Gb/s, the fastest rails at 400 Gb/s"));
	json_decref(h);
	json_object_set_new(hca(snap, 6), "pcie", json_string("Gen5 x8"));
	json_object_set_new(hca(snap, 6), "pcie_max", json_string("Gen5 x16"));
	h = ctl_node_health(&in);
	assert_string_equal(hstate(h), "degraded");
	assert_true(has_reason(h, "mlx5_6 PCIe link is Gen5 x8, capable of Gen5 x16"));
	json_decref(h);
	json_object_set_new(hca(snap, 3), "state", json_string("DOWN"));
	json_object_set_new(hca(snap, 3), "rate_gbps", json_integer(10));
	h = ctl_node_health(&in);
	assert_string_equal(hstate(h), "failing");
	assert_true(has_reason(h, "mlx5_3 port is DOWN"));
	/* A DOWN port's rate is no rail's: it is not also called slow. */
	assert_false(has_reason(h, "mlx5_3 runs at"));
	assert_int_equal(json_array_size(json_object_get(h, "problems")), 3);
	json_array_foreach(json_object_get(h, "problems"), i, p)
	{
		const char *dev = json_string_value(json_object_get(p, "device"));
		const char *sev = json_string_value(json_object_get(p, "severity"));

		assert_non_null(dev);
		assert_string_equal(sev, strcmp(dev, "mlx5_3") == 0 ? "failing" : "degraded");
	}
	/* The port problems derived apart (as the listings keep them) give the same health. */
	{
		json_t *ports = ctl_node_port_problems(snap), *h2;
		struct ctl_health_in pre = {.state = "online", .ports = ports};
		char *a, *b;

		assert_int_equal(json_array_size(ports), 3);
		h2 = ctl_node_health(&pre);
		a = json_dumps(h, JSON_SORT_KEYS);
		b = json_dumps(h2, JSON_SORT_KEYS);
		assert_string_equal(a, b);
		free(a);
		free(b);
		json_decref(h2);
		json_decref(ports);
	}
	json_decref(h);
	/* Offline with a known fault: still failing, and offline is said too. */
	in.state = "offline";
	h = ctl_node_health(&in);
	assert_string_equal(hstate(h), "failing");
	assert_true(has_reason(h, "offline"));
	json_decref(h);
	json_decref(snap);
}

static void test_health_signoff_and_deployment(void **state)
{
	json_t *snap = fixture_snapshot(), *h;
	json_t *row = json_pack("{s:s, s:[s], s:[]}", "result", "fail", "reasons",
				"pair-lat: fails with 2 of 2 peers", "rails");
	json_t *pass_bad_rail =
		json_pack("{s:s, s:[], s:[{s:i, s:s, s:s, s:[s]}]}", "result", "pass", "reasons",
			  "rails", "rail", 3, "device", "mlx5_3", "result", "fail", "reasons",
			  "rail 3 pair-bw below the line");
	struct ctl_health_in in = {
		.state = "online", .snapshot = snap, .signoff_id = "so-1", .verdict_node = row};

	(void)state;
	h = ctl_node_health(&in);
	assert_string_equal(hstate(h), "failing");
	assert_true(has_reason(h, "failed sign-off so-1: pair-lat: fails with 2 of 2 peers"));
	json_decref(h);
	json_object_set_new(row, "result", json_string("excluded"));
	h = ctl_node_health(&in);
	assert_string_equal(hstate(h), "failing");
	assert_true(has_reason(h, "excluded from sign-off so-1"));
	json_decref(h);
	in.verdict_node = pass_bad_rail;
	h = ctl_node_health(&in);
	assert_string_equal(hstate(h), "failing");
	assert_true(has_reason(h, "sign-off so-1: rail 3 pair-bw below the line"));
	json_decref(h);
	/* A passing row: healthy. */
	json_object_set_new(row, "result", json_string("pass"));
	in.verdict_node = row;
	h = ctl_node_health(&in);
	assert_string_equal(hstate(h), "healthy");
	json_decref(h);
	/* The newest deployment failed on it: its step and the step's message. */
	in.deployment_id = "d-1";
	in.playbook = "hca-up 1";
	in.deploy_state = "failed";
	in.failed_step = "hca ports active";
	in.failed_message = "mlx5_3 port 1 is DOWN";
	h = ctl_node_health(&in);
	assert_string_equal(hstate(h), "failing");
	assert_true(has_reason(h, "deployment d-1 (hca-up 1) failed at step \"hca ports active\": "
				  "mlx5_3 port 1 is DOWN"));
	json_decref(h);
	in.deploy_state = "succeeded";
	h = ctl_node_health(&in);
	assert_string_equal(hstate(h), "healthy");
	json_decref(h);
	in.deploy_state = "unreachable";
	h = ctl_node_health(&in);
	assert_string_equal(hstate(h), "failing");
	assert_true(has_reason(h, "could not reach it"));
	json_decref(h);
	/* A revalidation's regressions on the node's pairs: failing when they count, degraded when
	 * its tolerance lets them inform only. */
	{
		json_t *lines = json_pack("[s]", "pair-bw.gbps gpu-node-01 -> gpu-node-02 rail 0: "
						 "9.41 -> 6.49 (-31.0 %)");
		struct ctl_health_in rv = {.state = "online",
					   .snapshot = snap,
					   .signoff_id = "so-2",
					   .regressions = lines,
					   .regressed = true};

		h = ctl_node_health(&rv);
		assert_string_equal(hstate(h), "failing");
		assert_true(
			has_reason(h, "regressed in revalidation so-2: pair-bw.gbps gpu-node-01"));
		json_decref(h);
		rv.regressed = false;
		h = ctl_node_health(&rv);
		assert_string_equal(hstate(h), "degraded");
		assert_true(has_reason(h, "regression (informs) in revalidation so-2"));
		json_decref(h);
		json_decref(lines);
	}
	json_decref(row);
	json_decref(pass_bad_rail);
	json_decref(snap);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pinned),
		cmocka_unit_test(test_odd_documents),
		cmocka_unit_test(test_health_healthy_and_unknown),
		cmocka_unit_test(test_health_ports),
		cmocka_unit_test(test_health_signoff_and_deployment),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
