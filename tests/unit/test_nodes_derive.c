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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pinned),
		cmocka_unit_test(test_odd_documents),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
