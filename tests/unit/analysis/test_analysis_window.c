/*
 * tests/unit/analysis/test_analysis_window.c - window edges, the common window and picking a
 * thread (analysis/window.h), with the figures worked out by hand. The spans of real traces are
 * checked end to end in tests/system/test_cli_window.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "analysis/window.h"

static uint64_t edge(const char *text, uint64_t base, uint64_t hz)
{
	struct window_edge e;
	const char *why;

	assert_int_equal(window_edge_parse(text, &e, &why), 0);
	return window_edge_tsc(&e, base, hz, 777, 42);
}

static void test_edges(void **state)
{
	static const char *const bad[] = {
	    "",	   "-5",   "1.5",  "2h",	"ms",
	    "1e3", "0x10", "5 ms", "snapshots", "18446744073709551616"};
	struct window_edge e;
	const char *why;
	size_t i;

	(void)state;
	/* A bare number is a TSC, whatever the rate. */
	assert_int_equal(edge("123456", 1000, 2000000000u), 123456);
	/* Times count from base at hz: 1.5 ms at 2 GHz is 3 000 000 ticks. */
	assert_int_equal(edge("1.5ms", 1000, 2000000000u), 3001000);
	assert_int_equal(edge("250us", 0, 1000000000u), 250000);
	assert_int_equal(edge("2s", 10, 3000000000u), 6000000010u);
	assert_int_equal(edge("40ns", 5, 2500000000u), 105);
	/* A rate of 0 is taken as 1 GHz; a time past the clock's end saturates. */
	assert_int_equal(edge("7ns", 0, 0), 7);
	assert_true(edge("1e300s", 0, 1000000000u) == UINT64_MAX);
	assert_int_equal(edge("snapshot", 0, 1), 777);
	/* Not given: the default. */
	e.kind = WINDOW_EDGE_NONE;
	assert_int_equal(window_edge_tsc(&e, 0, 1, 0, 42), 42);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		if (window_edge_parse(bad[i], &e, &why) != -1)
			fail_msg("'%s' taken as an edge", bad[i]);
		assert_non_null(why);
	}
}

#define SPAN(id_, tid_, first_, last_, lost_)                                                      \
	{                                                                                          \
		.thread_id = (id_), .tid = (tid_), .has_events = 1, .first_tsc = (first_),         \
		.last_tsc = (last_), .lost = (lost_)                                               \
	}

static void test_common(void **state)
{
	/* Thread 1 whole 0..1000, thread 2 lost its start (600..900), thread 3 its end. */
	struct window_span s[] = {
	    SPAN(1, 11, 0, 1000, 0),
	    SPAN(2, 12, 600, 900, WINDOW_LOST_START),
	    SPAN(3, 13, 100, 950, WINDOW_LOST_END),
	    {.thread_id = 4}, /* no events: no say */
	};
	uint64_t since, until;

	(void)state;
	/* Nothing lost: all of it, 0..1000. */
	assert_int_equal(window_common(s, 1, &since, &until), 0);
	assert_int_equal(since, 0);
	assert_int_equal(until, 1000);
	/* The latest start lost, to the end of all. */
	assert_int_equal(window_common(s, 2, &since, &until), 1);
	assert_int_equal(since, 600);
	assert_int_equal(until, 1000);
	/* ... and the earliest end lost. */
	assert_int_equal(window_common(s, 4, &since, &until), 1);
	assert_int_equal(since, 600);
	assert_int_equal(until, 950);
	/* Histories that do not overlap: 0 with since > until, for the caller to say. */
	s[2].last_tsc = 500;
	assert_int_equal(window_common(s, 3, &since, &until), 0);
	assert_true(since > until);
	/* No events at all. */
	assert_int_equal(window_common(&s[3], 1, &since, &until), -1);
}

static void test_thread_find(void **state)
{
	const struct window_span s[] = {SPAN(1, 4001, 0, 1, 0), SPAN(2, 1, 0, 1, 0),
					SPAN(3, 0, 0, 1, 0)};
	struct window key = {0, UINT64_MAX, NULL, 0};
	const uint64_t keys[] = {window_thread_key(0, 2), window_thread_key(5, 1)};
	long other = -1;

	(void)state;
	assert_int_equal(window_thread_find(s, 3, 4001, &other), 0);
	assert_int_equal(window_thread_find(s, 3, 3, &other), 2);
	assert_int_equal(window_thread_find(s, 3, 77, &other), -1);
	/* 1 is thread 1's id and thread 2's tid. */
	assert_int_equal(window_thread_find(s, 3, 1, &other), -2);
	assert_int_equal(other, 1);
	/* A tid of 0 is not known, not tid 0. */
	assert_int_equal(window_thread_find(s, 3, 0, &other), -1);

	assert_true(window_has_thread(NULL, 0, 9));
	assert_true(window_has_thread(&key, 0, 9));
	key.threads = keys;
	key.nthreads = 2;
	assert_true(window_has_thread(&key, 0, 2));
	assert_true(window_has_thread(&key, 5, 1));
	assert_false(window_has_thread(&key, 0, 1));
	assert_false(window_has_thread(&key, 5, 2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_edges),
	    cmocka_unit_test(test_common),
	    cmocka_unit_test(test_thread_find),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
