/*
 * tests/unit/analysis/test_analysis_stacktree.c - the stack tree (analysis/stacktree.h) with
 * its runs on disk: whatever the number of nodes it may keep in memory, its walk gives the
 * same stacks with the same sums.
 *
 * Traces are built record by record (tests/support/trace_build.h) and read through the reader.
 * Each walk is written down as text, one line per node: "DEPTH PATH calls self total incl",
 * PATH the names from the outermost frame down joined by ';' ("all" for the root). The
 * expected lines are worked out by hand from the records next to them, or by formula from the
 * loop that wrote the trace.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "analysis/jobs.h"
#include "analysis/stackpaths.h"
#include "analysis/stacktree.h"
#include "tests/support/scratch.h"
#include "tests/support/text.h"
#include "tests/support/trace_build.h"
#include "xfdr/reader.h"

/* ---- building and walking --------------------------------------------------------------- */

struct lines {
	char *text;
	size_t len, cap;
	uint32_t visits;
	uint32_t skip_at; /* STREE_SKIP at the visit of this number (0: never) */
	uint32_t stop_at; /* return 7 at the visit of this number (0: never) */
	const struct stree *t;
};

static void append(struct lines *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(l->text ? l->text + l->len : NULL, l->text ? l->cap - l->len : 0, fmt,
			      ap);
		va_end(ap);
		assert_true(n >= 0);
		if (l->text && (size_t)n < l->cap - l->len)
			break;
		l->cap = (l->cap + (size_t)n + 1) * 2;
		l->text = realloc(l->text, l->cap);
		assert_non_null(l->text);
	}
	l->len += (size_t)n;
}

static int put_node(void *ctx, const struct stree_frame *path, uint32_t depth)
{
	struct lines *l = ctx;
	const struct stree_frame *n = &path[depth];
	uint32_t d;

	l->visits++;
	append(l, "%u ", depth);
	for (d = depth ? 1 : 0; d <= depth; d++)
		append(l, "%s%s", d > 1 ? ";" : "", stree_name(l->t, path[d].name, NULL));
	append(l, " %llu %llu %llu %llu\n", (unsigned long long)n->calls,
	       (unsigned long long)n->self_tsc, (unsigned long long)n->total_tsc,
	       (unsigned long long)n->incl_tsc);
	if (l->visits == l->stop_at)
		return 7;
	return l->visits == l->skip_at ? STREE_SKIP : 0;
}

/*
 * The tree of the trace at path, built with at most limit nodes in memory by jobs workers (0:
 * one per CPU).
 */
static void build(struct stree *t, struct xfdr_trace **tr, const char *path, uint32_t limit,
		  int per_thread, unsigned jobs)
{
	struct xfdr_error err;

	assert_int_equal(xfdr_trace_open(path, tr, &err), 0);
	assert_int_equal(xfdr_trace_verify(*tr, &err), 0);
	assert_int_equal(stree_init(t, per_thread), 0);
	t->node_limit = limit;
	t->jobs = jobs;
	if (stree_build(t, *tr, NULL, &err) < 0)
		fail_msg("stree_build: %s", err.text);
	assert_int_equal(stree_finish(t), 0);
}

/* The walk's lines (caller frees); skip_at, stop_at as in struct lines; *rc the walk's return. */
static char *walk_lines(struct stree *t, uint32_t skip_at, uint32_t stop_at, int *rc)
{
	struct lines l = {.skip_at = skip_at, .stop_at = stop_at, .t = t};
	char why[256] = "";

	append(&l, "%s", "");
	*rc = stree_walk(t, put_node, &l, why, sizeof(why));
	if (*rc == -1)
		fail_msg("stree_walk: %s", why);
	return l.text;
}

/* The lines of a whole walk of the trace at path, built as build() does. */
static char *tree_lines(const char *path, uint32_t limit, int per_thread, unsigned jobs)
{
	struct xfdr_trace *tr;
	struct stree t;
	char *text;
	int rc;

	build(&t, &tr, path, limit, per_thread, jobs);
	text = walk_lines(&t, 0, 0, &rc);
	assert_int_equal(rc, 0);
	stree_free(&t);
	xfdr_trace_close(tr);
	return text;
}

/* ---- a trace worked out by hand --------------------------------------------------------- */

/*
 * Thread 1 (TSC 0): 1 at 0 { 2 10..30, 3 40 { 4 45..50 } 60, 2 70..75 } 100.
 * Thread 2 (TSC 1000): 3 at 0 { 4 1..3 } 4, 1 at 10 { 3 12..14 } 20.
 * Merged: #1 2 calls, self 55 + 8, total 100 + 10; #1;#2 2 calls, self and total 20 + 5;
 * #1;#3 self 15 + 2, total 20 + 2; #1;#3;#4 5; #3 self 2, total 4; #3;#4 2.
 */
static const char *hand_trace(void)
{
	struct tb b;

	tb_init(&b, 1024, 1000000000ull);
	tb_buffer(&b, 1, 1, 0);
	tb_fn(&b, ENTER, 1, 0);
	tb_fn(&b, ENTER, 2, 10);
	tb_fn(&b, EXIT, 2, 20);
	tb_fn(&b, ENTER, 3, 10);
	tb_fn(&b, ENTER, 4, 5);
	tb_fn(&b, EXIT, 4, 5);
	tb_fn(&b, EXIT, 3, 10);
	tb_fn(&b, ENTER, 2, 10);
	tb_fn(&b, EXIT, 2, 5);
	tb_fn(&b, EXIT, 1, 25);
	tb_buffer(&b, 2, 1, 1000);
	tb_fn(&b, ENTER, 3, 0);
	tb_fn(&b, ENTER, 4, 1);
	tb_fn(&b, EXIT, 4, 2);
	tb_fn(&b, EXIT, 3, 1);
	tb_fn(&b, ENTER, 1, 6);
	tb_fn(&b, ENTER, 3, 2);
	tb_fn(&b, EXIT, 3, 2);
	tb_fn(&b, EXIT, 1, 6);
	return tb_write(&b, "hand.xray");
}

static const char hand_merged[] = "0 all 0 0 0 114\n"
				  "1 #1 2 63 110 110\n"
				  "2 #1;#2 2 25 25 25\n"
				  "2 #1;#3 2 17 22 22\n"
				  "3 #1;#3;#4 1 5 5 5\n"
				  "1 #3 1 2 4 4\n"
				  "2 #3;#4 1 2 2 2\n";

static const char hand_per_thread[] = "0 all 0 0 0 114\n"
				      "1 thread 1 0 0 0 100\n"
				      "2 thread 1;#1 1 55 100 100\n"
				      "3 thread 1;#1;#2 2 25 25 25\n"
				      "3 thread 1;#1;#3 1 15 20 20\n"
				      "4 thread 1;#1;#3;#4 1 5 5 5\n"
				      "1 thread 2 0 0 0 14\n"
				      "2 thread 2;#1 1 8 10 10\n"
				      "3 thread 2;#1;#3 1 2 2 2\n"
				      "2 thread 2;#3 1 2 4 4\n"
				      "3 thread 2;#3;#4 1 2 2 2\n";

/* The hand trace built as tree_lines() does gives both its trees, merged and per thread. */
static void assert_hand_trees(const char *path, uint32_t limit, unsigned jobs)
{
	char *text = tree_lines(path, limit, 0, jobs);

	text_assert_equal(text, hand_merged);
	free(text);
	text = tree_lines(path, limit, 1, jobs);
	text_assert_equal(text, hand_per_thread);
	free(text);
}

/*
 * In memory, by one worker, by two (a thread each: each tree added into the first) and by more
 * than the threads: the same tree.
 */
static void test_hand_trace_in_memory(void **state)
{
	const char *path = hand_trace();
	unsigned jobs;

	(void)state;
	for (jobs = 1; jobs <= 3; jobs++)
		assert_hand_trees(path, STREE_NODE_LIMIT, jobs);
}

/*
 * Four nodes in memory: a run is written at nearly every call, and the walk merges them. With
 * two workers each has half the limit, and the second's tree, too large to add into the
 * first's, is written as a run of its own.
 */
static void test_hand_trace_through_runs(void **state)
{
	const char *path = hand_trace();
	uint32_t limit;
	unsigned jobs;

	(void)state;
	for (jobs = 1; jobs <= 2; jobs++)
		for (limit = 4; limit <= 8; limit++)
			assert_hand_trees(path, limit, jobs);
}

/*
 * A frame calling one function twice in a row: the second call finds the node the first looked
 * up, unless a run renumbered the nodes in between. With four nodes in memory, the tree is
 * written out when the second #2 comes: a number kept across it would name a node not made.
 * Thread 1: #1 at 0 { #3 10..15, #4 20..25, #5 30..35, #2 40..45, #2 50..55 } 60.
 */
static void test_callee_again_across_runs(void **state)
{
	static const char want[] = "0 all 0 0 0 60\n"
				   "1 #1 1 35 60 60\n"
				   "2 #1;#2 2 10 10 10\n"
				   "2 #1;#3 1 5 5 5\n"
				   "2 #1;#4 1 5 5 5\n"
				   "2 #1;#5 1 5 5 5\n";
	static const uint32_t callees[] = {3, 4, 5, 2, 2};
	static const uint32_t limits[] = {4, STREE_NODE_LIMIT};
	struct tb b;
	const char *path;
	unsigned i;
	char *text;

	(void)state;
	tb_init(&b, 1024, 1000000000ull);
	tb_buffer(&b, 1, 1, 0);
	tb_fn(&b, ENTER, 1, 0);
	for (i = 0; i < 5; i++) {
		tb_fn(&b, ENTER, callees[i], i ? 5 : 10);
		tb_fn(&b, EXIT, callees[i], 5);
	}
	tb_fn(&b, EXIT, 1, 5);
	path = tb_write(&b, "again.xray");
	for (i = 0; i < 2; i++) {
		text = tree_lines(path, limits[i], 0, 1);
		text_assert_equal(text, want);
		free(text);
	}
}

/*
 * More workers asked for than JOBS_MAX, and fewer than the threads: JOBS_MAX of them share the
 * threads (a worker past it would have no slot). Each of JOBS_MAX + 2 threads calls #1 for 10.
 */
static void test_more_workers_asked_than_allowed(void **state)
{
	char want[64];
	struct tb b;
	const char *path;
	uint16_t tid;
	char *text;

	(void)state;
	tb_init(&b, 1024, 1000000000ull);
	for (tid = 1; tid <= JOBS_MAX + 2; tid++) {
		tb_buffer(&b, tid, tid, 1000u * tid);
		tb_fn(&b, ENTER, 1, 0);
		tb_fn(&b, EXIT, 1, 10);
	}
	path = tb_write(&b, "many_threads.xray");
	snprintf(want, sizeof(want), "0 all 0 0 0 %u\n1 #1 %u %u %u %u\n", 10 * (JOBS_MAX + 2),
		 JOBS_MAX + 2, 10 * (JOBS_MAX + 2), 10 * (JOBS_MAX + 2), 10 * (JOBS_MAX + 2));
	text = tree_lines(path, STREE_NODE_LIMIT, 0, JOBS_MAX + 1);
	text_assert_equal(text, want);
	free(text);
}

/* Two traces, each under its process frame, kept through runs as in memory. */
static void test_two_processes(void **state)
{
	const char *path = hand_trace();
	static const char want[] = "0 all 0 0 0 228\n"
				   "1 p1 0 0 0 114\n"
				   "2 p1;#1 2 63 110 110\n"
				   "3 p1;#1;#2 2 25 25 25\n"
				   "3 p1;#1;#3 2 17 22 22\n"
				   "4 p1;#1;#3;#4 1 5 5 5\n"
				   "2 p1;#3 1 2 4 4\n"
				   "3 p1;#3;#4 1 2 2 2\n"
				   "1 p:2 0 0 0 114\n"
				   "2 p:2;#1 2 63 110 110\n"
				   "3 p:2;#1;#2 2 25 25 25\n"
				   "3 p:2;#1;#3 2 17 22 22\n"
				   "4 p:2;#1;#3;#4 1 5 5 5\n"
				   "2 p:2;#3 1 2 4 4\n"
				   "3 p:2;#3;#4 1 2 2 2\n";
	struct xfdr_error err;
	struct xfdr_trace *tr;
	const uint32_t limits[] = {4, STREE_NODE_LIMIT};
	unsigned i, k;
	struct stree t;
	char *text;
	int rc;

	(void)state;
	assert_int_equal(xfdr_trace_open(path, &tr, &err), 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(stree_init(&t, 0), 0);
		t.node_limit = limits[i];
		for (k = 0; k < 2; k++) {
			/* A ';' in a process's name is made ':', as in any name. */
			assert_int_equal(stree_set_input(&t, NULL, k ? "p;2" : "p1"), 0);
			assert_int_equal(stree_build(&t, tr, NULL, &err), 0);
		}
		assert_int_equal(stree_finish(&t), 0);
		assert_int_equal(t.stats.calls, 2 * 9); /* 5 calls on thread 1, 4 on 2 */
		text = walk_lines(&t, 0, 0, &rc);
		text_assert_equal(text, want);
		free(text);
		stree_free(&t);
	}
	xfdr_trace_close(tr);
}

/* ---- many stacks: more runs than are kept, merged into one on the way ------------------- */

#define OUTER 50u
#define PAIRS 2000u

/*
 * Thread 3: for i < PAIRS, outer = 1 + i % OUTER at +1 { inner = 1000 + i at +2 .. +3 } +4:
 * each (outer, inner) pair once. Every inner call: self 3; every outer call: total 9, self 6.
 */
static const char *pairs_trace(void)
{
	struct tb b;
	uint32_t i;

	tb_init(&b, 65536, 1000000000ull);
	tb_buffer(&b, 3, 1, 0);
	for (i = 0; i < PAIRS; i++) {
		if (i && i % 1000 == 0)
			tb_buffer(&b, 3, 1, 1000000 * (uint64_t)i);
		tb_fn(&b, ENTER, 1 + i % OUTER, 1);
		tb_fn(&b, ENTER, 1000 + i, 2);
		tb_fn(&b, EXIT, 1000 + i, 3);
		tb_fn(&b, EXIT, 1 + i % OUTER, 4);
	}
	return tb_write(&b, "pairs.xray");
}

/* The lines of pairs_trace(), by formula: names sort bytewise ("#10" before "#2"). */
static int by_text(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *pairs_expected(void)
{
	struct lines l = {0};
	char *outer[OUTER], *inner[PAIRS / OUTER];
	uint32_t o, k, n = PAIRS / OUTER;

	append(&l, "0 all 0 0 0 %u\n", PAIRS * 9);
	for (o = 0; o < OUTER; o++) {
		outer[o] = malloc(16);
		snprintf(outer[o], 16, "#%u", 1 + o);
	}
	qsort(outer, OUTER, sizeof(*outer), by_text);
	for (o = 0; o < OUTER; o++) {
		uint32_t id = (uint32_t)atoi(outer[o] + 1);

		append(&l, "1 %s %u %u %u %u\n", outer[o], n, 6 * n, 9 * n, 9 * n);
		for (k = 0; k < n; k++) {
			inner[k] = malloc(16);
			snprintf(inner[k], 16, "#%u", 1000 + (id - 1) + k * OUTER);
		}
		qsort(inner, n, sizeof(*inner), by_text);
		for (k = 0; k < n; k++) {
			append(&l, "2 %s;%s 1 3 3 3\n", outer[o], inner[k]);
			free(inner[k]);
		}
	}
	for (o = 0; o < OUTER; o++)
		free(outer[o]);
	return l.text;
}

static void test_many_runs_merge_to_the_same_stacks(void **state)
{
	const char *path = pairs_trace();
	char *expected = pairs_expected(), *text;

	(void)state;
	/* 2,051 nodes: about 400 runs of 8, 40 of 64, none at the full limit. */
	text = tree_lines(path, 8, 0, 0);
	text_assert_equal(text, expected);
	free(text);
	text = tree_lines(path, 64, 0, 0);
	text_assert_equal(text, expected);
	free(text);
	text = tree_lines(path, STREE_NODE_LIMIT, 0, 0);
	text_assert_equal(text, expected);
	free(text);
	free(expected);
}

/* Compacted (every run and the tree in memory merged into one run), walked twice: the same. */
static void test_compact_then_walk_twice(void **state)
{
	const char *path = pairs_trace();
	char *expected = pairs_expected(), *text, why[256] = "";
	struct xfdr_trace *tr;
	struct stree t;
	int rc, k;

	(void)state;
	build(&t, &tr, path, 64, 0, 0);
	assert_non_null(t.runs);
	assert_int_equal(stree_compact(&t, why, sizeof(why)), 0);
	/* the tree in memory is left with its root: every stack comes from the one run */
	assert_int_equal(t.nodes, 1);
	for (k = 0; k < 2; k++) {
		text = walk_lines(&t, 0, 0, &rc);
		assert_int_equal(rc, 0);
		text_assert_equal(text, expected);
		free(text);
	}
	stree_free(&t);
	xfdr_trace_close(tr);
	free(expected);
}

/*
 * The same trace's tree spilled to runs of 8 nodes and kept whole, walked side by side as
 * folded paths (stack_paths_*(), what --diff merges): the same paths, in the same order, with
 * the same times, one per stack of pairs_trace() (its 2,050 below the root).
 */
static void test_paths_side_by_side(void **state)
{
	const char *path = pairs_trace();
	struct xfdr_trace *tr[2];
	struct stack_paths ps[2];
	struct stree t[2];
	char why[256] = "";
	size_t n = 0;

	(void)state;
	build(&t[0], &tr[0], path, 8, 0, 0);
	build(&t[1], &tr[1], path, STREE_NODE_LIMIT, 0, 0);
	assert_int_equal(stack_paths_open(&ps[0], &t[0], why, sizeof(why)), 0);
	assert_int_equal(stack_paths_open(&ps[1], &t[1], why, sizeof(why)), 0);
	/* all of the trace's time: 9 ticks a call of an outer function */
	assert_int_equal(ps[0].root_incl_tsc, PAIRS * 9);
	assert_int_equal(ps[1].root_incl_tsc, PAIRS * 9);
	while (ps[0].have && ps[1].have) {
		assert_int_equal(stack_path_cmp(ps[0].text, ps[0].len, ps[1].text, ps[1].len), 0);
		assert_memory_equal(ps[0].text, ps[1].text, ps[0].len);
		assert_int_equal(ps[0].frame->self_tsc, ps[1].frame->self_tsc);
		assert_int_equal(ps[0].frame->incl_tsc, ps[1].frame->incl_tsc);
		n++;
		assert_int_equal(stack_paths_next(&ps[0], why, sizeof(why)), 0);
		assert_int_equal(stack_paths_next(&ps[1], why, sizeof(why)), 0);
	}
	assert_false(ps[0].have || ps[1].have);
	assert_int_equal(n, OUTER + PAIRS);
	stack_paths_close(&ps[0]);
	stack_paths_close(&ps[1]);
	stree_free(&t[0]);
	stree_free(&t[1]);
	xfdr_trace_close(tr[0]);
	xfdr_trace_close(tr[1]);
}

/* ---- deeper than the limit -------------------------------------------------------------- */

#define DEEP 100u

/* 1 .. DEEP nested, each entered 1 tick after its caller and left 1 tick after its callee. */
static void test_recursion_deeper_than_the_limit(void **state)
{
	struct lines l = {0};
	struct tb b;
	const char *path;
	char *text;
	uint32_t i, d;

	(void)state;
	tb_init(&b, 4096, 1000000000ull);
	tb_buffer(&b, 1, 1, 0);
	for (i = 1; i <= DEEP; i++)
		tb_fn(&b, ENTER, i, 1);
	for (i = DEEP; i >= 1; i--)
		tb_fn(&b, EXIT, i, 1);
	path = tb_write(&b, "deep.xray");
	/* Frame i (depth i) lasts from i to 2 * DEEP + 1 - i: total 2 * (DEEP - i) + 1, self 2. */
	append(&l, "0 all 0 0 0 %u\n", 2 * DEEP - 1);
	for (d = 1; d <= DEEP; d++) {
		append(&l, "%u ", d);
		for (i = 1; i <= d; i++)
			append(&l, "%s#%u", i > 1 ? ";" : "", i);
		append(&l, " 1 %u %u %u\n", d == DEEP ? 1 : 2, 2 * (DEEP - d) + 1,
		       2 * (DEEP - d) + 1);
	}
	text = tree_lines(path, 8, 0, 0);
	text_assert_equal(text, l.text);
	free(text);
	free(l.text);
}

/* ---- the walk's answers ----------------------------------------------------------------- */

static void test_skip_stop_and_again(void **state)
{
	const char *path = hand_trace();
	struct xfdr_trace *tr;
	struct stree t;
	char *text;
	int rc;

	(void)state;
	build(&t, &tr, path, 4, 0, 0);
	/* Visit 2 is #1: its callees are left out, its sibling #3 is not. */
	text = walk_lines(&t, 2, 0, &rc);
	assert_int_equal(rc, 0);
	text_assert_equal(text, "0 all 0 0 0 114\n"
				"1 #1 2 63 110 110\n"
				"1 #3 1 2 4 4\n"
				"2 #3;#4 1 2 2 2\n");
	free(text);
	text = walk_lines(&t, 0, 3, &rc);
	assert_int_equal(rc, 7);
	text_assert_equal(text, "0 all 0 0 0 114\n"
				"1 #1 2 63 110 110\n"
				"2 #1;#2 2 25 25 25\n");
	free(text);
	/* A second whole walk reads the runs again from their start. */
	text = walk_lines(&t, 0, 0, &rc);
	text_assert_equal(text, hand_merged);
	free(text);
	stree_free(&t);
	xfdr_trace_close(tr);
}

static void test_temporary_file_not_made(void **state)
{
	const char *path = hand_trace();
	const char *old = getenv("TMPDIR");
	char *saved = old ? strdup(old) : NULL;
	struct xfdr_error err;
	struct xfdr_trace *tr;
	struct stree t;

	(void)state;
	assert_int_equal(xfdr_trace_open(path, &tr, &err), 0);
	assert_int_equal(stree_init(&t, 0), 0);
	t.node_limit = 4;
	setenv("TMPDIR", scratch_path("no-such-directory"), 1);
	assert_int_equal(stree_build(&t, tr, NULL, &err), -1);
	if (saved)
		setenv("TMPDIR", saved, 1);
	else
		unsetenv("TMPDIR");
	free(saved);
	assert_non_null(strstr(err.text, "hand.xray: offset "));
	assert_non_null(strstr(err.text, ": could not write the stack tree to a temporary file in "
					 "$TMPDIR (else /tmp): No such file or directory"));
	stree_free(&t);
	xfdr_trace_close(tr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hand_trace_in_memory),
	    cmocka_unit_test(test_hand_trace_through_runs),
	    cmocka_unit_test(test_callee_again_across_runs),
	    cmocka_unit_test(test_more_workers_asked_than_allowed),
	    cmocka_unit_test(test_two_processes),
	    cmocka_unit_test(test_many_runs_merge_to_the_same_stacks),
	    cmocka_unit_test(test_compact_then_walk_twice),
	    cmocka_unit_test(test_paths_side_by_side),
	    cmocka_unit_test(test_recursion_deeper_than_the_limit),
	    cmocka_unit_test(test_skip_stop_and_again),
	    cmocka_unit_test(test_temporary_file_not_made),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
