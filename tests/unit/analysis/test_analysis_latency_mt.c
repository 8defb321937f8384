/*
 * tests/unit/analysis/test_analysis_latency_mt.c - the latency table built by workers (one per
 * CPU, threads shared out): the figures of a function whose calls are spread over threads
 * walked by different workers are those of all its calls, worked out here by hand; a function
 * with more calls than one block of latencies holds gathers them all; and the rows, the calls
 * left out and the totals do not depend on how the threads were shared. Under ThreadSanitizer
 * in `make check-tsan`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/latency.h"
#include "tests/support/scratch.h"
#include "tests/support/trace_build.h"
#include "xfdr/reader.h"

#define BUF 65536u

/* One call of fid lasting ticks, in a new buffer of thread tid when this one is full. */
static void call(struct tb *b, uint16_t tid, uint32_t fid, uint32_t ticks, uint64_t *tsc)
{
	/* both records, and room for the EndOfBuffer after them */
	if (b->buf_bytes - b->used < 2 * XFDR_FN_RECORD_BYTES + XFDR_MD_RECORD_BYTES)
		tb_buffer(b, tid, 1, *tsc);
	tb_fn(b, ENTER, fid, 1);
	tb_fn(b, EXIT, fid, ticks);
	*tsc += 1 + ticks;
}

/* One call of fid lasting ticks (2^32 or more: over a TSCWrap), in the open buffer. */
static void long_call(struct tb *b, uint32_t fid, uint64_t ticks, uint64_t *tsc)
{
	tb_fn(b, ENTER, fid, 1);
	*tsc += 1 + ticks - 1;
	tb_wrap(b, *tsc);
	tb_fn(b, EXIT, fid, 1);
	*tsc += 1;
}

/*
 * Four threads. Function 1: thread 1 calls of 10 and 20 ticks, thread 2 one of 30, thread 3
 * 40, 50 and 60. Function 2: thread 4 only, 7 ticks, 5 times. Function 3: 300000 calls on
 * thread 1 of (i % 1000) ticks and 300000 on thread 3 of 1000 + (i % 1000): sorted, the
 * latency at index k is k / 300, from more than one block of latencies. Function 4, latencies
 * too long for 32 bits among short ones: thread 2 calls of 5 and 2^32 + 7 ticks, thread 4 one
 * of 2^33. One exit without an entry on thread 2 (left out: no_entry) and one call still open
 * on thread 4 (no_exit).
 */
static const char *four_threads(void)
{
	static const uint32_t f1[4][3] = {{10, 20, 0}, {30, 0, 0}, {40, 50, 60}, {0, 0, 0}};
	struct tb b;
	uint64_t tsc;
	uint16_t tid;
	uint32_t i;

	tb_init(&b, BUF, 0);
	for (tid = 1; tid <= 4; tid++) {
		tsc = 1000000ull * tid;
		tb_buffer(&b, tid, 1, tsc);
		if (tid == 2) {
			tb_fn(&b, EXIT, 9, 5);
			tsc += 5;
		}
		for (i = 0; i < 3 && f1[tid - 1][i]; i++)
			call(&b, tid, 1, f1[tid - 1][i], &tsc);
		for (i = 0; tid == 4 && i < 5; i++)
			call(&b, tid, 2, 7, &tsc);
		if (tid == 2) {
			call(&b, tid, 4, 5, &tsc);
			long_call(&b, 4, (1ull << 32) + 7, &tsc);
		}
		if (tid == 4)
			long_call(&b, 4, 1ull << 33, &tsc);
		for (i = 0; (tid == 1 || tid == 3) && i < 300000; i++)
			call(&b, tid, 3, (tid == 3 ? 1000 : 0) + i % 1000, &tsc);
		if (tid == 4)
			tb_fn(&b, ENTER, 2, 1);
	}
	return tb_write(&b, "four-threads.xray");
}

static const struct latency_row *row_of(const struct latency_row *const *rows, size_t n,
					uint32_t fid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (rows[i]->fid == fid)
			return rows[i];
	fail_msg("no row for function %u", fid);
	return NULL;
}

static void expect_row(const struct latency_row *r, uint64_t count, double min, double med,
		       double p90, double p99, double max, double sum)
{
	assert_int_equal(r->count, count);
	assert_true(r->min == min && r->med == med && r->p90 == p90);
	assert_true(r->p99 == p99 && r->max == max && r->sum == sum);
}

static void test_rows_across_workers(void **state)
{
	const char *path = four_threads();
	const struct latency_row *const *rows;
	const struct latency_left *left;
	struct latency_table *lt;
	struct xfdr_trace *t;
	struct xfdr_error err;
	size_t n;

	(void)state;
	assert_int_equal(xfdr_trace_open(path, &t, &err), 0);
	assert_int_equal(xfdr_trace_verify(t, &err), 0);
	assert_int_equal(latency_table_build(t, NULL, NULL, NULL, &lt, &err), 0);
	assert_int_equal(latency_table_sort(lt, LATENCY_SORT_FUNCID, 0, &err), 0);
	n = latency_table_rows(lt, &rows);
	assert_int_equal(n, 4);
	/* sorted 10 20 30 40 50 60: n / 2 = 3, floor(5.4) = 5, floor(5.94) = 5 */
	expect_row(row_of(rows, n, 1), 6, 10, 40, 60, 60, 60, 210);
	expect_row(row_of(rows, n, 2), 5, 7, 7, 7, 7, 7, 35);
	/* k / 300 at k = 300000, 540000, 594000; the sum 300 * (0 + ... + 1999) */
	expect_row(row_of(rows, n, 3), 600000, 0, 1000, 1800, 1980, 1999, 300.0 * 1999 * 1000);
	/* sorted 5, 2^32 + 7, 2^33: n / 2 = 1, floor(2.7) = floor(2.97) = 2 */
	expect_row(row_of(rows, n, 4), 3, 5, 4294967303.0, 8589934592.0, 8589934592.0, 8589934592.0,
		   5.0 + 4294967303.0 + 8589934592.0);
	left = latency_table_left(lt);
	assert_int_equal(left->no_entry, 1);
	assert_int_equal(left->no_exit, 1);
	assert_int_equal(left->from_context + left->unwound + left->cut, 0);
	latency_table_free(lt);
	xfdr_trace_close(t);
}

/* The totals walk keeps no latencies and counts the same calls. */
static void test_totals_across_workers(void **state)
{
	const char *path = four_threads();
	struct latency_total *v;
	struct xfdr_trace *t;
	struct xfdr_error err;
	size_t n, i;

	(void)state;
	assert_int_equal(xfdr_trace_open(path, &t, &err), 0);
	assert_int_equal(xfdr_trace_verify(t, &err), 0);
	assert_int_equal(latency_totals(t, NULL, NULL, &v, &n, &err), 0);
	/* and function 9, whose one event is an exit without an entry: no counted call */
	assert_int_equal(n, 5);
	assert_int_equal(v[4].fid, 9);
	assert_int_equal(v[4].count, 0);
	assert_int_equal(v[4].events, 1);
	/* most self time first: function 4, 3, then 1, then 2 */
	assert_int_equal(v[0].fid, 4);
	assert_int_equal(v[0].sum_tsc, 5 + (1ull << 32) + 7 + (1ull << 33));
	assert_int_equal(v[1].fid, 3);
	assert_int_equal(v[1].count, 600000);
	assert_int_equal(v[1].sum_tsc, 300ull * 1999 * 1000);
	assert_int_equal(v[2].fid, 1);
	assert_int_equal(v[2].sum_tsc, 210);
	assert_int_equal(v[3].fid, 2);
	assert_int_equal(v[3].count, 5);
	assert_int_equal(v[3].events, 10 + 1); /* and the call still open at the end */
	for (i = 0; i < n; i++)
		/* no call has a callee, or a call of its own function around it */
		assert_true(v[i].self_tsc == v[i].sum_tsc && v[i].outer_tsc == v[i].sum_tsc);
	free(v);
	xfdr_trace_close(t);
}

/*
 * A recursive function's time counts once: thread 1 main (1) at 1000 { f (2) 1010 { f 1020
 * { f 1030..1040 } 1060 } 1100, f 1200..1210 } 1300; thread 2 f 1015..1020, at the same time
 * as thread 1's nested calls but on a stack of its own. f's calls last 10, 40, 90, 10 and 5
 * (sum 155); the time in f is its outer calls' 90 + 10 + 5 = 105, as is its self time.
 */
static void test_totals_count_recursion_once(void **state)
{
	static const struct {
		unsigned action;
		uint32_t fid, delta;
	} t1[] = {{ENTER, 1, 0}, {ENTER, 2, 10}, {ENTER, 2, 10},  {ENTER, 2, 10}, {EXIT, 2, 10},
		  {EXIT, 2, 20}, {EXIT, 2, 40},	 {ENTER, 2, 100}, {EXIT, 2, 10},  {EXIT, 1, 90}};
	struct latency_total *v;
	struct xfdr_trace *t;
	struct xfdr_error err;
	struct tb b;
	size_t n, i;

	(void)state;
	tb_init(&b, 1024, 1000000000u);
	tb_buffer(&b, 1, 1, 1000);
	for (i = 0; i < sizeof(t1) / sizeof(t1[0]); i++)
		tb_fn(&b, t1[i].action, t1[i].fid, t1[i].delta);
	tb_buffer(&b, 2, 1, 1000);
	tb_fn(&b, ENTER, 2, 15);
	tb_fn(&b, EXIT, 2, 5);
	assert_int_equal(xfdr_trace_open(tb_write(&b, "recursion.xray"), &t, &err), 0);
	assert_int_equal(xfdr_trace_verify(t, &err), 0);
	assert_int_equal(latency_totals(t, NULL, NULL, &v, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(v[0].fid, 1);
	assert_int_equal(v[0].outer_tsc, 300);
	assert_int_equal(v[0].self_tsc, 300 - 90 - 10);
	assert_int_equal(v[1].fid, 2);
	assert_int_equal(v[1].count, 5);
	assert_int_equal(v[1].sum_tsc, 155);
	assert_int_equal(v[1].outer_tsc, 105);
	assert_int_equal(v[1].self_tsc, 105);
	free(v);
	xfdr_trace_close(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rows_across_workers),
	    cmocka_unit_test(test_totals_across_workers),
	    cmocka_unit_test(test_totals_count_recursion_once),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
