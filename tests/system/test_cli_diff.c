/*
 * tests/system/test_cli_diff.c - two runs side by side: `xfdr diff` (command/diff.c,
 * analysis/compare.h), `xfdr stack --diff` and `xfdr flame --diff` (analysis/stackpaths.h,
 * command/flame_diff.c).
 *
 * Two hand-built runs at 1 kHz (a tick is a millisecond), one thread each, whose functions have
 * other ids in each (the .map of each names them): functions match by name.
 *   BASE: main { f 10, f 20, g 5 }            main 35
 *   NEW:  main { f 10, f 20, f 30, h 7, g 2 } main 69
 * Every figure below is worked out by hand from those times: f's median is its calls' element
 * n / 2 and its 99th percentile element floor(n * 0.99), as account takes them.
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

/* A call of fid lasting ticks, right after the previous event. */
static void call(struct tb *b, uint32_t fid, uint32_t ticks)
{
	tb_fn(b, ENTER, fid, 0);
	tb_fn(b, EXIT, fid, ticks);
}

static char *base_run(void)
{
	struct tb b;
	char *path;

	tb_init(&b, 512, 1000);
	tb_buffer(&b, 1, 1, 1000);
	tb_fn(&b, ENTER, 3, 0);
	call(&b, 1, 10);
	call(&b, 1, 20);
	call(&b, 2, 5);
	tb_fn(&b, EXIT, 3, 0);
	path = strdup(tb_write(&b, "base.xray"));
	scratch_write_text("base.xray.map",
			   "xfdr-map\t1\nfunction\t1\tf\t0x1\t-\t-\n"
			   "function\t2\tg\t0x2\t-\t-\nfunction\t3\tmain\t0x3\t-\t-\n");
	return path;
}

static char *new_run(void)
{
	struct tb b;
	char *path;

	tb_init(&b, 512, 1000);
	tb_buffer(&b, 1, 1, 5000);
	tb_fn(&b, ENTER, 4, 0);
	call(&b, 7, 10);
	call(&b, 7, 20);
	call(&b, 7, 30);
	call(&b, 1, 7);
	call(&b, 9, 2);
	tb_fn(&b, EXIT, 4, 0);
	path = strdup(tb_write(&b, "new.xray"));
	scratch_write_text("new.xray.map",
			   "xfdr-map\t1\nfunction\t1\th\t0x1\t-\t-\n"
			   "function\t4\tmain\t0x4\t-\t-\nfunction\t7\tf\t0x7\t-\t-\n"
			   "function\t9\tg\t0x9\t-\t-\n");
	return path;
}

/* What grew most first: main +34, f +30, h +7 (new), g -3. */
static void test_table(void **state)
{
	char *base = base_run(), *next = new_run();
	struct child_result r;

	(void)state;
	assert_int_equal(child_xfdr(&r, "diff", "-f", "csv", base, next, NULL), 0);
	text_assert_equal(r.out,
			  "function,base_count,new_count,base_median,new_median,base_99p,new_99p,"
			  "base_sum,new_sum,change,ratio\n"
			  "\"main\",1,1,3.500000e-02,6.900000e-02,3.500000e-02,6.900000e-02,"
			  "3.500000e-02,6.900000e-02,+3.400000e-02,1.9714\n"
			  "\"f\",2,3,2.000000e-02,2.000000e-02,2.000000e-02,3.000000e-02,"
			  "3.000000e-02,6.000000e-02,+3.000000e-02,2.0000\n"
			  "\"h\",,1,,7.000000e-03,,7.000000e-03,,7.000000e-03,+7.000000e-03,new\n"
			  "\"g\",1,1,5.000000e-03,2.000000e-03,5.000000e-03,2.000000e-03,"
			  "5.000000e-03,2.000000e-03,-3.000000e-03,0.4000\n");
	text_assert_equal(r.err, "");
	child_result_free(&r);

	/* The other way round: g is gone from what was NEW; -s func, ascending. */
	assert_int_equal(child_xfdr(&r, "diff", "-s", "func", "-r", "asc", next, base, NULL), 0);
	text_assert_contains(r.out, "Functions: 3 in both runs, 1 only in BASE (");
	text_assert_contains(r.out, "), 0 only in NEW (");
	text_assert_contains(r.out, "  f\n");
	assert_true(strstr(r.out, "  f\n") < strstr(r.out, "  g\n"));
	assert_true(strstr(r.out, "  g\n") < strstr(r.out, "  h\n"));
	assert_true(strstr(r.out, "  h\n") < strstr(r.out, "  main\n"));
	text_assert_contains(r.out, "   -0.007000     gone  h\n");
	child_result_free(&r);

	/* -p 1: the one that grew most. */
	assert_int_equal(child_xfdr(&r, "diff", "-p", "1", "-f", "csv", base, next, NULL), 0);
	assert_int_equal(text_count(r.out, "\n"), 2);
	text_assert_contains(r.out, "\"main\",");
	child_result_free(&r);
	free(base);
	free(next);
}

/* The two-column folded form: self time in ticks; main has none, no line. */
static void test_stack_diff(void **state)
{
	char *base = base_run(), *next = new_run();
	struct child_result r;

	(void)state;
	assert_int_equal(child_xfdr(&r, "stack", "--diff", base, next, NULL), 0);
	text_assert_equal(r.out, "main;f 30 60\nmain;g 5 2\nmain;h 0 7\n");
	text_assert_equal(r.err, "");
	child_result_free(&r);
	assert_int_equal(
	    child_xfdr(&r, "stack", "--diff", "--value=total", "--unit=ms", base, next, NULL), 0);
	text_assert_equal(r.out, "main 35 69\nmain;f 30 60\nmain;g 5 2\nmain;h 0 7\n");
	child_result_free(&r);
	free(base);
	free(next);
}

/*
 * NEW's frames, coloured by the change of their time against BASE's, the largest change
 * (main's, 34) the deepest: main 255,45,45; f +30 255,70,70; h +7 255,212,212; g -3
 * 237,237,255 (fade = 210 * |change| / 34, rounded down).
 */
static void test_flame_diff(void **state)
{
	char *base = base_run(), *next = new_run();
	struct child_result r;

	(void)state;
	assert_int_equal(child_xfdr(&r, "flame", "--diff", base, next, NULL), 0);
	text_assert_contains(r.out, "<title>main [BASE 35.000 ms, +34.000 ms] (69.000 ms, ");
	text_assert_contains(r.out, "<title>g [BASE 5.000 ms, -3.000 ms] (2.000 ms, ");
	text_assert_contains(r.out, "<title>h [BASE 0 ns, +7.000 ms] (7.000 ms, ");
	/* main, and the root: all of the change, main's */
	assert_int_equal(text_count(r.out, "fill=\"rgb(255,45,45)\""), 2);
	assert_int_equal(text_count(r.out, "fill=\"rgb(255,70,70)\""), 1);
	assert_int_equal(text_count(r.out, "fill=\"rgb(255,212,212)\""), 1);
	assert_int_equal(text_count(r.out, "fill=\"rgb(237,237,255)\""), 1);
	text_assert_contains(r.out, "Differential flame graph: ");
	child_result_free(&r);
	free(base);
	free(next);
}

static void test_usage(void **state)
{
	char *base = base_run();
	struct child_result r;

	(void)state;
	assert_int_equal(child_xfdr(&r, "diff", base, NULL), 2);
	text_assert_contains(r.err, "xfdr diff: missing NEW");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "diff", base, base, base, NULL), 2);
	text_assert_contains(r.err, "two FILEs, BASE and NEW; extra operand");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "stack", "--diff", base, NULL), 2);
	text_assert_contains(r.err, "--diff compares two FILEs, BASE and NEW (1 given)");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "flame", "--diff", base, base, base, NULL), 2);
	text_assert_contains(r.err, "--diff compares two FILEs, BASE and NEW (3 given)");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "diff", "-s", "bigness", base, base, NULL), 2);
	text_assert_contains(r.err, "'--sort' takes change, ratio, count, med, 99p, sum or func");
	child_result_free(&r);
	free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_stack_diff),
	    cmocka_unit_test(test_flame_diff),
	    cmocka_unit_test(test_usage),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
