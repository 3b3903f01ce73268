/* Unit tests of controller/api/api_streams: streams counted per token, per peer address and in
 * all; which limit refuses; a slot given back is taken again; the defaults. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "controller/api/api_streams.h"
#include "controller/http/http.h"

static void test_limits(void **state)
{
	struct api_streams_limits lim = {.total = 4, .per_token = 2, .per_peer = 3};
	struct api_streams *s = api_streams_new(&lim);
	size_t a, b, c, d, x = 99;

	(void)state;
	assert_non_null(s);
	assert_int_equal(api_streams_take(s, "t1", "10.0.0.1", &a), API_STREAMS_OK);
	assert_int_equal(api_streams_take(s, "t1", "10.0.0.1", &b), API_STREAMS_OK);
	assert_int_not_equal(a, b);
	/* The token's third, from any address. */
	assert_int_equal(api_streams_take(s, "t1", "10.0.0.9", &x), API_STREAMS_PER_TOKEN);
	assert_int_equal(x, 99); /* not written on a refusal */
	/* The address's fourth, of any token. */
	assert_int_equal(api_streams_take(s, "t2", "10.0.0.1", &c), API_STREAMS_OK);
	assert_int_equal(api_streams_take(s, "t3", "10.0.0.1", &x), API_STREAMS_PER_PEER);
	/* The fifth in all. */
	assert_int_equal(api_streams_take(s, "t3", "10.0.0.2", &d), API_STREAMS_OK);
	assert_int_equal(api_streams_open(s), 4);
	assert_int_equal(api_streams_take(s, "t4", "10.0.0.3", &x), API_STREAMS_TOTAL);
	/* A slot given back is there for the next, and the token's count drops with it. */
	api_streams_give(s, a);
	assert_int_equal(api_streams_open(s), 3);
	assert_int_equal(api_streams_take(s, "t1", "10.0.0.3", &x), API_STREAMS_OK);
	assert_int_equal(x, a);
	api_streams_give(s, x);
	api_streams_give(s, x); /* twice: no effect */
	assert_int_equal(api_streams_open(s), 3);
	/* No token (""): counted by address and in all only. */
	assert_int_equal(api_streams_take(s, "", "10.0.0.4", &x), API_STREAMS_OK);
	api_streams_give(s, b);
	api_streams_give(s, c);
	api_streams_give(s, d);
	api_streams_give(s, x);
	assert_int_equal(api_streams_open(s), 0);
	api_streams_free(s);
	api_streams_free(NULL);
}

/* The defaults leave most of a listener's connections to requests that end. */
static void test_defaults(void **state)
{
	struct api_streams *s = api_streams_new(NULL);
	size_t slot;
	unsigned i;

	(void)state;
	assert_non_null(s);
	assert_true(API_STREAMS_TOTAL_DEFAULT * 4 <= HTTP_CONNECTIONS_DEFAULT);
	assert_true(API_STREAMS_PER_TOKEN_DEFAULT < API_STREAMS_PER_PEER_DEFAULT);
	assert_true(API_STREAMS_PER_PEER_DEFAULT < API_STREAMS_TOTAL_DEFAULT);
	for (i = 0; i < API_STREAMS_PER_TOKEN_DEFAULT; i++)
		assert_int_equal(api_streams_take(s, "t", "127.0.0.1", &slot), API_STREAMS_OK);
	assert_int_equal(api_streams_take(s, "t", "127.0.0.1", &slot), API_STREAMS_PER_TOKEN);
	api_streams_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_defaults),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
