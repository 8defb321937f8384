/*
 * tests/system/test_cli_funcs.c - `xfdr funcs` (command/funcs.c, analysis/event_cost.h): what
 * recording each function cost, and the exclude= line it suggests.
 *
 * One hand-built trace at 1 GHz (a tick is a nanosecond), its .map naming all but #6:
 *   thread 1, from TSC 1000: main {
 *       leaf 10 ns x 4                     8 events, 4 calls, median 10 ns
 *       mid 5000 ns                        2 events, median 5.000 us
 *       an exit of sort<int, int>          1 event, no call counted (no entry)
 *       sort<int, int> 100 ns              2 events, median 100 ns
 *       #6 1 ns x 3                        6 events, median 1 ns (no name)
 *       lookup 10, 10, 3000 ns             6 events, median 10 ns, mean 1006.667 ns
 *   } at 9320                              main: 2 events, 8320 ns
 *   thread 2, from TSC 1000: open entered at 1005 and never left: 1 event, no call counted
 * 28 events in all over 8320 ns (1000 to 9320), 0.00832 ms: leaf's 4 calls are 480.769 a ms,
 * 3 calls 360.577, one call 120.192. Every figure below is worked out from these; lookup's
 * median is short but its mean is not, so it is never suggested.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/child.h"
#include "tests/support/scratch.h"
#include "tests/support/text.h"
#include "tests/support/trace_build.h"

enum { MAIN = 1, LEAF = 2, MID = 3, SORT = 4, OPEN = 5, UNNAMED = 6, LOOKUP = 7 };

/* A call of fid lasting ticks, right after the previous event. */
static void call(struct tb *b, uint32_t fid, uint32_t ticks)
{
	tb_fn(b, ENTER, fid, 0);
	tb_fn(b, EXIT, fid, ticks);
}

static const char *trace(void)
{
	static char path[512];
	struct tb b;
	int i;

	tb_init(&b, 1024, 1000000000u);
	tb_buffer(&b, 1, 1, 1000);
	tb_fn(&b, ENTER, MAIN, 0);
	for (i = 0; i < 4; i++)
		call(&b, LEAF, 10);
	call(&b, MID, 5000);
	tb_fn(&b, EXIT, SORT, 100);
	call(&b, SORT, 100);
	for (i = 0; i < 3; i++)
		call(&b, UNNAMED, 1);
	call(&b, LOOKUP, 10);
	call(&b, LOOKUP, 10);
	call(&b, LOOKUP, 3000);
	tb_fn(&b, EXIT, MAIN, 57);
	tb_buffer(&b, 2, 1, 1000);
	tb_fn(&b, ENTER, OPEN, 5);
	snprintf(path, sizeof(path), "%s", tb_write(&b, "funcs.xray"));
	scratch_write_text("funcs.xray.map", "xfdr-map\t1\n"
					     "function\t1\tmain\t0x1\t-\t-\n"
					     "function\t2\tleaf\t0x2\t-\t-\n"
					     "function\t3\tmid\t0x3\t-\t-\n"
					     "function\t4\tsort<int, int>\t0x4\t-\t-\n"
					     "function\t5\topen\t0x5\t-\t-\n"
					     "function\t7\tlookup\t0x7\t-\t-\n");
	return path;
}

static const char table[] =
    "Functions: 7, 28 events in 8.320 us\n"
    "      events   share       calls   calls/ms      median        mean  function\n"
    "           8  28.57%           4    480.769       10 ns       10 ns  leaf\n"
    "           6  21.43%           3    360.577        1 ns        1 ns  #6\n"
    "           6  21.43%           3    360.577       10 ns    1.007 us  lookup\n"
    "           3  10.71%           1    120.192      100 ns      100 ns  sort<int, int>\n"
    "           2   7.14%           1    120.192    8.320 us    8.320 us  main\n"
    "           2   7.14%           1    120.192    5.000 us    5.000 us  mid\n"
    "           1   3.57%           0      0.000           -           -  open\n";

/*
 * By events; the suggestion names the short ones that have a name (#6 has none; lookup's
 * mean call is long), sort's comma escaped; not counted calls told on stderr, as by account.
 */
static void test_table_and_suggestion(void **state)
{
	const char *path = trace();
	struct child_result r;
	char *expected;
	size_t n;

	(void)state;
	assert_int_equal(child_xfdr(&r, "funcs", path, NULL), 0);
	n = strlen(table) + 512;
	expected = malloc(n);
	assert_non_null(expected);
	snprintf(expected, n, "%s%s", table,
		 "\nSuggested: exclude=leaf,sort<int\\, int>\n"
		 "  2 functions with a mean call under 1.000 us and 1% of the events or more: 11 "
		 "events (39.29%),\n"
		 "  about 220 ns of recording at 20 ns an event (--event-cost).\n");
	text_assert_equal(r.out, expected);
	free(expected);
	text_assert_equal(r.err, "xfdr funcs: not counted: 1 exit without an entry, 1 call still "
				 "open at the end\n");
	child_result_free(&r);
}

/* Each limit narrows the suggestion; the estimate follows --event-cost. */
static void test_limits(void **state)
{
	const char *path = trace();
	struct child_result r;

	(void)state;
	/* sort<int, int> has 10.71% of the events */
	assert_int_equal(child_xfdr(&r, "funcs", "--min-share=20%", path, NULL), 0);
	text_assert_contains(r.out,
			     "\nSuggested: exclude=leaf\n  1 function with a mean call under "
			     "1.000 us and 20% of the events or more: 8 events (28.57%),\n"
			     "  about 160 ns of recording at 20 ns an event");
	child_result_free(&r);
	/* sort's mean call is 100 ns */
	assert_int_equal(
	    child_xfdr(&r, "funcs", "--shorter-than=50ns", "--event-cost=10", path, NULL), 0);
	text_assert_contains(r.out,
			     "\nSuggested: exclude=leaf\n  1 function with a mean call under "
			     "50 ns and 1% of the events or more: 8 events (28.57%),\n"
			     "  about 80 ns of recording at 10 ns an event");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "funcs", "--max-names=1", path, NULL), 0);
	text_assert_contains(r.out, "\nSuggested: exclude=leaf\n");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "funcs", "--shorter-than=5ns", path, NULL), 0);
	text_assert_contains(r.out,
			     "\nNo suggestion: no named function with a mean call under 5 ns "
			     "has 1% of the events or more.\n");
	child_result_free(&r);
}

/* The table as CSV, -p, and a thread alone (its window: its own events). */
static void test_csv_top_and_thread(void **state)
{
	const char *path = trace();
	struct child_result r;

	(void)state;
	assert_int_equal(child_xfdr(&r, "funcs", "-f", "csv", "-p", "2", path, NULL), 0);
	text_assert_equal(r.out, "funcid,events,share,calls,calls_per_ms,median,mean,function\n"
				 "2,8,0.285714,4,4.807692e+02,1.000000e-08,1.000000e-08,\"leaf\"\n"
				 "6,6,0.214286,3,3.605769e+02,1.000000e-09,1.000000e-09,\"#6\"\n");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "funcs", "--thread=2", "-f", "csv", path, NULL), 0);
	text_assert_contains(r.out, "5,1,1.000000,0,");
	assert_int_equal(text_count(r.out, "\n"), 2);
	child_result_free(&r);
}

static void test_bad_options(void **state)
{
	const char *path = trace();
	static const char *const bad[][2] = {
	    {"--shorter-than=100", "'--shorter-than' takes a time with a unit"},
	    {"--min-share=101", "'--min-share' takes a percentage from 0 to 100, not '101'"},
	    {"--max-names=1.5", "'--max-names' takes a whole number"},
	    {"--event-cost=x", "'--event-cost' takes nanoseconds, not 'x'"},
	};
	struct child_result r;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(child_xfdr(&r, "funcs", bad[i][0], path, NULL), 2);
		text_assert_contains(r.err, bad[i][1]);
		text_assert_equal(r.out, "");
		child_result_free(&r);
	}
	assert_int_equal(child_xfdr(&r, "funcs", path, path, NULL), 2);
	child_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table_and_suggestion),
	    cmocka_unit_test(test_limits),
	    cmocka_unit_test(test_csv_top_and_thread),
	    cmocka_unit_test(test_bad_options),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
