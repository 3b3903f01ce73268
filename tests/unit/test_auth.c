/* Unit tests of controller/api/authz: the whole role x permission matrix against the rules of
 * the REST issue (written out here independently of authz.c's table), role and permission
 * names, out-of-range values, the cluster scope; and that every role the store accepts for an
 * API token is a role authz knows, and the other way round. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "controller/api/authz.h"
#include "controller/store/store.h"
#include "controller/store/store_apitoken.h"
#include "common/util/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The rules, as the issue states them: admin everything; integrator configure, operate and
 * read; operator operate and read; viewer read. */
static bool expected(enum api_role role, enum api_perm perm)
{
	switch (role) {
	case API_ADMIN:
		return true;
	case API_INTEGRATOR:
		return perm != API_PERM_ADMIN;
	case API_OPERATOR:
		return perm == API_PERM_READ || perm == API_PERM_OPERATE;
	case API_VIEWER:
		return perm == API_PERM_READ;
	}
	return false;
}

static void test_matrix(void **state)
{
	const struct api_authz_row *t;
	size_t n = 0, allowed = 0;

	(void)state;
	t = api_authz_table(&n);
	assert_non_null(t);
	assert_int_equal(n, API_ROLE_COUNT);
	assert_ptr_equal(api_authz_table(NULL), t);
	for (size_t r = 0; r < n; r++) {
		assert_int_equal(t[r].role, (int)r);
		assert_string_equal(t[r].name, api_role_name((enum api_role)r));
		for (size_t p = 0; p < API_PERM_COUNT; p++) {
			bool want = expected((enum api_role)r, (enum api_perm)p);

			if (t[r].allowed[p] != want ||
			    api_allowed((enum api_role)r, (enum api_perm)p) != want)
				fail_msg("%s x %s: table %d, api_allowed %d, rule %d", t[r].name,
					 api_perm_name((enum api_perm)p), t[r].allowed[p],
					 api_allowed((enum api_role)r, (enum api_perm)p), want);
			allowed += want;
		}
	}
	assert_int_equal(allowed, 4 + 3 + 2 + 1);

	/* Each role can do all that the roles below it can: admin > integrator > operator >
	 * viewer, and everyone reads. */
	for (size_t r = 1; r < n; r++)
		for (size_t p = 0; p < API_PERM_COUNT; p++)
			assert_true(!t[r].allowed[p] || t[r - 1].allowed[p]);
}

static void test_out_of_range(void **state)
{
	(void)state;
	assert_false(api_allowed((enum api_role)API_ROLE_COUNT, API_PERM_READ));
	assert_false(api_allowed((enum api_role) - 1, API_PERM_READ));
	assert_false(api_allowed(API_ADMIN, (enum api_perm)API_PERM_COUNT));
	assert_false(api_allowed(API_ADMIN, (enum api_perm) - 1));
	assert_null(api_role_name((enum api_role)API_ROLE_COUNT));
	assert_null(api_role_name((enum api_role) - 1));
	assert_null(api_perm_name((enum api_perm)API_PERM_COUNT));
}

static void test_names(void **state)
{
	static const char *const roles[] = {"admin", "integrator", "operator", "viewer"};
	static const char *const perms[] = {"read", "operate", "configure", "admin"};
	static const char *const bad[] = {"",	  "Admin", "ADMIN",   "admin ",	   " viewer",
					  "root", "view",  "viewers", "operator\n"};
	enum api_role r = API_VIEWER;

	(void)state;
	for (size_t i = 0; i < API_ROLE_COUNT; i++) {
		assert_int_equal(api_role_parse(roles[i], &r), 0);
		assert_int_equal(r, (int)i);
		assert_string_equal(api_role_name(r), roles[i]);
	}
	for (size_t i = 0; i < API_PERM_COUNT; i++)
		assert_string_equal(api_perm_name((enum api_perm)i), perms[i]);
	r = API_VIEWER;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(api_role_parse(bad[i], &r), -RY_E_INVALID);
		assert_int_equal(r, API_VIEWER); /* untouched */
	}
	assert_int_equal(api_role_parse(NULL, &r), -RY_E_INVALID);
}

static void test_scope(void **state)
{
	(void)state;
	/* No scope: every cluster, and objects of no cluster. */
	assert_true(api_in_scope(NULL, "prod-a"));
	assert_true(api_in_scope(NULL, NULL));
	/* In the list, or not. */
	assert_true(api_in_scope("[\"prod-a\"]", "prod-a"));
	assert_true(api_in_scope("[\"prod-a\",\"prod-b\"]", "prod-b"));
	assert_true(api_in_scope(" [ \"x\" , \"prod-b\" ] ", "prod-b"));
	assert_false(api_in_scope("[\"prod-a\",\"prod-b\"]", "prod-c"));
	assert_false(api_in_scope("[\"prod-a\"]", "prod-ab"));
	assert_false(api_in_scope("[\"prod-a\"]", "prod-"));
	assert_false(api_in_scope("[\"prod-a\"]", "PROD-A")); /* names are case-sensitive */
	assert_false(api_in_scope("[\"prod-a\"]", ""));
	assert_false(api_in_scope("[]", "prod-a"));
	/* A scoped token never sees objects of no cluster. */
	assert_false(api_in_scope("[\"prod-a\"]", NULL));
	/* Malformed scopes grant nothing. */
	assert_false(api_in_scope("", "prod-a"));
	assert_false(api_in_scope("prod-a", "prod-a"));
	assert_false(api_in_scope("[\"prod-a\"", "prod-a"));
	assert_false(api_in_scope("\"prod-a\"", "prod-a"));
	assert_false(api_in_scope("{\"prod-a\":1}", "prod-a"));
	assert_false(api_in_scope("[\"prod-a\",1]", "prod-a"));
	assert_false(api_in_scope("[1,\"prod-a\"]", "prod-a"));
	assert_false(api_in_scope("[null]", "prod-a"));
	assert_false(api_in_scope("[[\"prod-a\"]]", "prod-a"));
	assert_false(api_in_scope("null", "prod-a"));
	{
		/* Over the size bound: refused unread. */
		size_t len = 20000;
		char *big = malloc(len + 1);

		assert_non_null(big);
		memset(big, ' ', len);
		memcpy(big, "[\"prod-a\"", 9);
		big[len - 1] = ']';
		big[len] = '\0';
		assert_false(api_in_scope(big, "prod-a"));
		free(big);
	}
}

/* The store's list of roles (its CHECK and its validation) and authz's are the same list. */
static void test_store_roles(void **state)
{
	char dir[] = "/tmp/ry-auth-XXXXXX", path[64];
	struct store *s = NULL;
	struct store_api_token *t = NULL;
	enum api_role r;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/store.db", dir);
	assert_int_equal(store_open(path, &s), 0);
	for (size_t i = 0; i < API_ROLE_COUNT; i++) {
		char name[16], *tok = NULL;

		snprintf(name, sizeof(name), "t%zu", i);
		assert_int_equal(store_api_token_create(s, name, api_role_name((enum api_role)i),
							NULL, 0, "test", 1000, &tok, NULL),
				 0);
		assert_int_equal(store_api_token_check(s, tok, 2000, &t), 0);
		assert_int_equal(api_role_parse(t->role, &r), 0);
		assert_int_equal(r, (int)i);
		store_api_token_free(t);
		free(tok);
	}
	{
		char *tok = NULL;

		assert_int_equal(
			store_api_token_create(s, "x", "root", NULL, 0, "test", 1000, &tok, NULL),
			-RY_E_INVALID);
		assert_null(tok);
	}
	store_free(s);
	for (size_t i = 0; i < 3; i++) {
		static const char *const suffix[] = {"", "-wal", "-shm"};
		char p[96];

		snprintf(p, sizeof(p), "%s%s", path, suffix[i]);
		unlink(p);
	}
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matrix),	    cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_names),	    cmocka_unit_test(test_scope),
		cmocka_unit_test(test_store_roles),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
