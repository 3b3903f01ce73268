/* Helpers shared by the apply engine's unit tests: fixture sysroot copies with the test doubles
 * installed, tree hashing, small file access and plan building. */
#ifndef RAILYARD_TEST_APPLY_UTIL_H
#define RAILYARD_TEST_APPLY_UTIL_H

#include "nodeagent/apply/apply.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* Copy tests/fixtures/sysroots/<name> ("" for an empty tree) to a new temporary directory and
 * install tests/fixtures/bin/ into <copy>/usr/local/sbin. Caller removes with tu_rm(). */
char *tu_sysroot(const char *name);
void tu_rm(char *dir);
/* Order-independent hash of every entry under dir: path, type, mode, owner, mtime, content or
 * link target. */
uint64_t tu_tree_hash(const char *dir);
/* Write (creating parents) / read a file relative to root; read returns NULL when absent. */
void tu_write(const char *root, const char *rel, const char *content);
char *tu_read(const char *root, const char *rel);
bool tu_exists(const char *root, const char *rel);
/* A plan with schema/name/version/sha256 and no steps; add steps whose params are given as JSON
 * text, with the schema defaults filled in (like playbook_render). */
json_t *tu_plan(void);
void tu_plan_add(json_t *plan, const char *name, const char *type, const char *params_json,
		 bool continue_on_error);
/* Fail the test with the validator's reason unless plan is valid. */
void tu_plan_assert_valid(const json_t *plan);
/* Generate an OpenPGP test key (tests/fixtures/gen-test-key.sh): its armored public key is
 * written to root/rel, its fingerprint returned (caller frees). Skips the test when gpg is not
 * installed. */
char *tu_test_key(const char *root, const char *rel);
/* Number of lines of the doubles' call log that contain needle. */
int tu_calls(const char *root, const char *needle);
/* A one-step plan (type, params as JSON text) run on root, in check mode or not, with facts (or
 * NULL): that step's outcome. */
struct tu_outcome {
	enum apply_status status;
	char diff[8192];
	char message[2048];
	bool rolled_back;
};
struct tu_outcome tu_run1(const char *root, const char *type, const char *params, bool check,
			  const json_t *facts);

#endif
