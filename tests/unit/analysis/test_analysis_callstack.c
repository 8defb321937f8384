/*
 * tests/unit/analysis/test_analysis_callstack.c - call-stack pairing (analysis/callstack.h).
 *
 * Event sequences are written by hand, with the calls they must give worked out by hand next
 * to them: function id, thread, depth, how the call began and ended, entry and exit TSC, the
 * time of its direct children, and which events (by their position in the sequence, put in
 * the event's offset) are its entry and its exit. The end-to-end cases build a real v1 image
 * with the writer's encoders, open it with the reader and pair it; there the expected TSCs
 * and offsets are the ones written into the image.
 *
 * Stack contexts ("XFDRSTAK" custom events) carry payloads written byte by byte from the
 * layout in format.h: "XFDRSTAK", u32 version 1, u32 depth, u32 id_count, u32 reserved, the
 * u32 ids outermost first, zero padding to a multiple of 8.
 *
 * Allocation failures are real: the binary takes over the allocator
 * (tests/support/alloc_hook.h), which fails every allocation while alloc_failing is set (or
 * after alloc_fail_after more) and counts them while alloc_counting is set.
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

#include "analysis/callstack.h"
#include "tests/support/alloc_hook.h"
#include "tests/support/image.h"
#include "writer/encode.h"
#include "writer/file.h"
#include "xfdr/reader.h"

static void alloc_normal(void)
{
	alloc_failing = 0;
	alloc_counting = 0;
	alloc_fail_after = -1;
}

/* ---- events and the calls they give ------------------------------------------------- */

enum {
	ENTER = XFDR_FN_ENTER,
	EXIT = XFDR_FN_EXIT,
	TAIL = XFDR_FN_TAIL_EXIT,
	ARGS = XFDR_FN_ENTER_ARGS
};

#define CPU 3

static struct xfdr_event fn(uint16_t tid, unsigned action, uint32_t fid, uint64_t tsc)
{
	struct xfdr_event ev = {
	    .type = XFDR_EVENT_FUNCTION,
	    .action = action,
	    .function_id = fid,
	    .tsc = tsc,
	    .cpu = CPU,
	    .thread_id = tid,
	};

	return ev;
}

#define MAX_GOT 64

/* A reported call, copied out of the callback. */
struct got {
	struct call c;		       /* the event pointers are not kept */
	long long enter_seq, exit_seq; /* offset of the entry / exit event; -1 for NULL */
	uint16_t exit_cpu;
	uint32_t arg_count;
	uint64_t arg0;
	uint64_t self;
};

struct rec {
	struct got v[MAX_GOT];
	size_t n;
	size_t stop_at; /* return nonzero once this many calls are stored; 0: never */
	int overflow;
	struct xfdr_trace *trace; /* to read arguments, when set */
};

static int on_call(void *ctx, const struct call *c)
{
	struct rec *r = ctx;
	struct got *g;

	if (r->n == MAX_GOT) { /* counted in the pairer's stats all the same */
		r->overflow = 1;
		return 0;
	}
	g = &r->v[r->n++];
	memset(g, 0, sizeof(*g));
	g->c = *c;
	g->c.enter = NULL;
	g->c.exit = NULL;
	g->enter_seq = c->enter ? (long long)c->enter->offset : -1;
	g->exit_seq = c->exit ? (long long)c->exit->offset : -1;
	g->exit_cpu = c->exit ? c->exit->cpu : 0xffff;
	g->self = call_self_tsc(c);
	if (c->enter) {
		g->arg_count = c->enter->arg_count;
		if (r->trace && c->enter->arg_count)
			g->arg0 = xfdr_event_arg(r->trace, c->enter, 0);
	}
	return r->stop_at && r->n == r->stop_at;
}

struct want {
	uint16_t tid;
	uint32_t fid;
	uint32_t depth;
	unsigned flags;
	uint64_t enter, exit, child;
	long long enter_seq, exit_seq; /* -1: no event */
};

#define NONE (-1ll)

#define SAME(i, field, got, want)                                                                  \
	do {                                                                                       \
		if ((unsigned long long)(got) != (unsigned long long)(want)) {                     \
			print_message("call %zu: %s: got %llu, want %llu\n", (i), field,           \
				      (unsigned long long)(got), (unsigned long long)(want));      \
			fail();                                                                    \
		}                                                                                  \
	} while (0)

static void expect_calls(const struct rec *r, size_t from, const struct want *w, size_t n)
{
	size_t i;

	assert_false(r->overflow);
	assert_int_equal(r->n - from, n);
	for (i = 0; i < n; i++) {
		const struct got *g = &r->v[from + i];
		size_t k = from + i;

		SAME(k, "thread", g->c.thread_id, w[i].tid);
		SAME(k, "function", g->c.function_id, w[i].fid);
		SAME(k, "depth", g->c.depth, w[i].depth);
		SAME(k, "flags", g->c.flags, w[i].flags);
		SAME(k, "enter_tsc", g->c.enter_tsc, w[i].enter);
		SAME(k, "exit_tsc", g->c.exit_tsc, w[i].exit);
		SAME(k, "total_tsc", g->c.total_tsc, w[i].exit - w[i].enter);
		SAME(k, "child_tsc", g->c.child_tsc, w[i].child);
		SAME(k, "self", g->self, w[i].exit - w[i].enter - w[i].child);
		SAME(k, "enter event", g->enter_seq, w[i].enter_seq);
		SAME(k, "exit event", g->exit_seq, w[i].exit_seq);
	}
}

/* Feed a script; each event's offset is its index, so a call names its events by index. */
static void feed_all(struct callstack *cs, struct xfdr_event *ev, size_t from, size_t to)
{
	size_t i;

	for (i = from; i < to; i++) {
		ev[i].offset = i;
		assert_int_equal(callstack_feed(cs, &ev[i]), 0);
	}
}

static struct callstack *new_pairer(struct rec *r)
{
	struct callstack *cs;

	memset(r, 0, sizeof(*r));
	cs = callstack_create(on_call, r);
	assert_non_null(cs);
	return cs;
}

static struct callstack_stats stats_of(const struct callstack *cs)
{
	struct callstack_stats s;

	memset(&s, 0xa5, sizeof(s));
	callstack_get_stats(cs, &s);
	return s;
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- hand-written sequences ---------------------------------------------------------- */

/* A{ B{} C{ D{} } }: calls complete innermost first, children's time goes to the parent. */
static void test_nested(void **state)
{
	struct xfdr_event ev[] = {
	    fn(1, ENTER, 1, 100), /* 0 A */
	    fn(1, ENTER, 2, 110), /* 1 B */
	    fn(1, EXIT, 2, 130),  /* 2 */
	    fn(1, ENTER, 3, 140), /* 3 C */
	    fn(1, ENTER, 4, 150), /* 4 D */
	    fn(1, EXIT, 4, 155),  /* 5 */
	    fn(1, EXIT, 3, 170),  /* 6 */
	    fn(1, EXIT, 1, 200),  /* 7 */
	};
	const struct want w[] = {
	    {1, 2, 1, CALL_EXIT, 110, 130, 0, 1, 2},
	    {1, 4, 2, CALL_EXIT, 150, 155, 0, 4, 5},
	    {1, 3, 1, CALL_EXIT, 140, 170, 5, 3, 6},  /* D: 5 */
	    {1, 1, 0, CALL_EXIT, 100, 200, 50, 0, 7}, /* B 20 + C 30 */
	};
	struct callstack_stats s;
	struct rec r;
	struct callstack *cs = new_pairer(&r);

	(void)state;
	feed_all(cs, ev, 0, 5);
	/* Inside D: the open stack, outermost first. */
	assert_int_equal(callstack_depth(cs, 0, 1), 3);
	assert_int_equal(callstack_frame(cs, 0, 1, 0)->function_id, 1);
	assert_int_equal(callstack_frame(cs, 0, 1, 1)->function_id, 3);
	assert_int_equal(callstack_frame(cs, 0, 1, 2)->function_id, 4);
	assert_int_equal(callstack_frame(cs, 0, 1, 2)->tsc, 150);
	assert_null(callstack_frame(cs, 0, 1, 3));
	assert_null(callstack_frame(cs, 0, 2, 0));
	feed_all(cs, ev, 5, N_OF(ev));
	expect_calls(&r, 0, w, N_OF(w));
	assert_int_equal(r.v[2].self, 25);
	assert_int_equal(r.v[3].self, 50);
	assert_int_equal(r.v[0].exit_cpu, CPU);
	assert_int_equal(r.v[0].c.cpu, CPU);

	s = stats_of(cs);
	assert_int_equal(s.function_events, 8);
	assert_int_equal(s.ignored_events, 0);
	assert_int_equal(s.calls, 4);
	assert_int_equal(s.unwound + s.no_exit + s.no_entry + s.tsc_backwards, 0);
	assert_int_equal(s.max_depth, 3);
	assert_int_equal(s.threads, 1);
	assert_int_equal(callstack_depth(cs, 0, 1), 0);
	assert_int_equal(callstack_finish(cs), 0);
	assert_int_equal(r.n, 4); /* nothing was left open */
	callstack_destroy(cs);
}

/* F{ F{ G{} F{} } }: an exit closes the innermost frame of its function, nothing is unwound. */
static void test_recursion(void **state)
{
	struct xfdr_event ev[] = {
	    fn(1, ENTER, 7, 10), /* 0 F */
	    fn(1, ENTER, 7, 20), /* 1 F */
	    fn(1, ENTER, 8, 25), /* 2 G */
	    fn(1, EXIT, 8, 27),	 /* 3 */
	    fn(1, ENTER, 7, 30), /* 4 F */
	    fn(1, EXIT, 7, 40),	 /* 5 */
	    fn(1, EXIT, 7, 50),	 /* 6 */
	    fn(1, EXIT, 7, 60),	 /* 7 */
	};
	const struct want w[] = {
	    {1, 8, 2, CALL_EXIT, 25, 27, 0, 2, 3},
	    {1, 7, 2, CALL_EXIT, 30, 40, 0, 4, 5},
	    {1, 7, 1, CALL_EXIT, 20, 50, 12, 1, 6}, /* G 2 + F 10 */
	    {1, 7, 0, CALL_EXIT, 10, 60, 30, 0, 7},
	};
	struct rec r;
	struct callstack *cs = new_pairer(&r);

	(void)state;
	feed_all(cs, ev, 0, N_OF(ev));
	expect_calls(&r, 0, w, N_OF(w));
	assert_int_equal(stats_of(cs).unwound, 0);
	assert_int_equal(stats_of(cs).max_depth, 3);
	callstack_destroy(cs);
}

/*
 * A{ B(args) tail-calls C }: B ends with its Tail_Exit, C runs at B's depth. Then D{ E }
 * where D's Tail_Exit comes while E is open: E is unwound by it.
 */
static void test_tail_exit(void **state)
{
	struct xfdr_event ev[] = {
	    fn(1, ENTER, 1, 100), /* 0 A */
	    fn(1, ARGS, 2, 110),  /* 1 B */
	    fn(1, TAIL, 2, 120),  /* 2 */
	    fn(1, ENTER, 3, 120), /* 3 C */
	    fn(1, EXIT, 3, 130),  /* 4 */
	    fn(1, EXIT, 1, 140),  /* 5 */
	    fn(1, ENTER, 4, 150), /* 6 D */
	    fn(1, ENTER, 5, 160), /* 7 E */
	    fn(1, TAIL, 4, 170),  /* 8 */
	};
	const struct want w[] = {
	    {1, 2, 1, CALL_TAIL_EXIT | CALL_ARGS, 110, 120, 0, 1, 2},
	    {1, 3, 1, CALL_EXIT, 120, 130, 0, 3, 4},
	    {1, 1, 0, CALL_EXIT, 100, 140, 20, 0, 5},
	    {1, 5, 1, CALL_UNWOUND, 160, 170, 0, 7, 8},
	    {1, 4, 0, CALL_TAIL_EXIT, 150, 170, 10, 6, 8},
	};
	struct rec r;
	struct callstack *cs = new_pairer(&r);

	(void)state;
	feed_all(cs, ev, 0, N_OF(ev));
	expect_calls(&r, 0, w, N_OF(w));
	assert_int_equal(stats_of(cs).unwound, 1);
	callstack_destroy(cs);
}

/* A{ B{ C{ (no exits of C and B recorded) } } }: the exit of A closes all three, C first. */
static void test_missing_exit_unwound(void **state)
{
	struct xfdr_event ev[] = {
	    fn(1, ENTER, 1, 10), /* 0 A */
	    fn(1, ENTER, 2, 20), /* 1 B */
	    fn(1, ENTER, 3, 30), /* 2 C */
	    fn(1, EXIT, 1, 50),	 /* 3 */
	};
	const struct want w[] = {
	    {1, 3, 2, CALL_UNWOUND, 30, 50, 0, 2, 3},
	    {1, 2, 1, CALL_UNWOUND, 20, 50, 20, 1, 3},
	    {1, 1, 0, CALL_EXIT, 10, 50, 30, 0, 3},
	};
	struct callstack_stats s;
	struct rec r;
	struct callstack *cs = new_pairer(&r);

	(void)state;
	feed_all(cs, ev, 0, N_OF(ev));
	expect_calls(&r, 0, w, N_OF(w));
	s = stats_of(cs);
	assert_int_equal(s.calls, 3);
	assert_int_equal(s.unwound, 2);
	assert_int_equal(s.no_entry, 0);
	assert_int_equal(callstack_depth(cs, 0, 1), 0);
	callstack_destroy(cs);
}

/*
 * The trace starts two calls deep (inside outer, inside main): their exits have no entry.
 * They begin at the thread's first TSC, and each encloses what closed at depth 0 before it.
 * Then an exit of a function not on a non-empty stack: reported, the stack is unchanged, and
 * it is nobody's child. A thread whose first event is such an exit starts at that exit.
 */
static void test_exit_without_entry(void **state)
{
	struct xfdr_event ev[] = {
	    fn(1, ENTER, 5, 100), /* 0 f */
	    fn(1, EXIT, 5, 110),  /* 1 */
	    fn(1, EXIT, 1, 130),  /* 2 main: no entry */
	    fn(1, TAIL, 9, 150),  /* 3 outer: no entry */
	    fn(1, ENTER, 2, 200), /* 4 A */
	    fn(1, EXIT, 3, 210),  /* 5 X: no entry, A stays open */
	    fn(1, EXIT, 2, 220),  /* 6 */
	    fn(2, EXIT, 4, 500),  /* 7 thread 2 starts with an exit */
	};
	const struct want w[] = {
	    {1, 5, 0, CALL_EXIT, 100, 110, 0, 0, 1},
	    {1, 1, 0, CALL_EXIT | CALL_NO_ENTRY, 100, 130, 10, NONE, 2},
	    {1, 9, 0, CALL_TAIL_EXIT | CALL_NO_ENTRY, 100, 150, 30, NONE, 3},
	    {1, 3, 1, CALL_EXIT | CALL_NO_ENTRY, 100, 210, 0, NONE, 5},
	    {1, 2, 0, CALL_EXIT, 200, 220, 0, 4, 6},
	    {2, 4, 0, CALL_EXIT | CALL_NO_ENTRY, 500, 500, 0, NONE, 7},
	};
	struct callstack_stats s;
	struct rec r;
	struct callstack *cs = new_pairer(&r);

	(void)state;
	feed_all(cs, ev, 0, 6);
	assert_int_equal(callstack_depth(cs, 0, 1), 1);
	assert_int_equal(callstack_frame(cs, 0, 1, 0)->function_id, 2);
	feed_all(cs, ev, 6, N_OF(ev));
	expect_calls(&r, 0, w, N_OF(w));
	assert_int_equal(r.v[1].c.cpu, CPU); /* the exit's CPU when there is no entry */
	s = stats_of(cs);
	assert_int_equal(s.no_entry, 4);
	assert_int_equal(s.calls, 6);
	assert_int_equal(s.unwound, 0);
	assert_int_equal(s.threads, 2);
	callstack_destroy(cs);
}

/*
 * Open frames are closed by finish at their thread's last TSC, innermost first, threads by
 * ascending id whatever order they were seen in. Afterwards a thread starts afresh.
 */
static void test_open_at_finish(void **state)
{
	struct xfdr_event ev[] = {
	    fn(5, ENTER, 1, 1000), /* 0 P, thread 5 */
	    fn(2, ENTER, 2, 2000), /* 1 R, thread 2 */
	    fn(5, ENTER, 5, 1100), /* 2 U */
	    fn(2, ENTER, 3, 2005), /* 3 S */
	    fn(2, ENTER, 4, 2010), /* 4 T */
	    fn(5, EXIT, 5, 1150),  /* 5 */
	    fn(2, EXIT, 4, 2030),  /* 6 */
	    fn(2, EXIT, 8, 3000),  /* 7 after finish: no entry */
	};
	const struct want w[] = {
	    {5, 5, 1, CALL_EXIT, 1100, 1150, 0, 2, 5},
	    {2, 4, 2, CALL_EXIT, 2010, 2030, 0, 4, 6},
	    /* finish: thread 2 first */
	    {2, 3, 1, CALL_NO_EXIT, 2005, 2030, 20, 3, NONE},
	    {2, 2, 0, CALL_NO_EXIT, 2000, 2030, 25, 1, NONE},
	    {5, 1, 0, CALL_NO_EXIT, 1000, 1150, 50, 0, NONE},
	    /* thread 2 again: its first TSC is now 3000, not 2000 */
	    {2, 8, 0, CALL_EXIT | CALL_NO_ENTRY, 3000, 3000, 0, NONE, 7},
	};
	struct callstack_stats s;
	struct rec r;
	struct callstack *cs = new_pairer(&r);

	(void)state;
	feed_all(cs, ev, 0, 7);
	assert_int_equal(r.n, 2);
	assert_int_equal(callstack_finish(cs), 0);
	assert_int_equal(callstack_depth(cs, 0, 2), 0);
	assert_int_equal(callstack_depth(cs, 0, 5), 0);
	s = stats_of(cs);
	assert_int_equal(s.no_exit, 3);
	assert_int_equal(s.threads, 2);
	feed_all(cs, ev, 7, N_OF(ev));
	expect_calls(&r, 0, w, N_OF(w));
	assert_int_equal(stats_of(cs).threads, 2); /* the same thread, not a new one */
	callstack_destroy(cs);
}

/* Two threads running the same functions, events interleaved: one stack each. */
static void test_threads_interleaved(void **state)
{
	struct xfdr_event ev[] = {
	    fn(1, ENTER, 1, 10), /* 0 */
	    fn(2, ENTER, 1, 11), /* 1 */
	    fn(1, ENTER, 2, 12), /* 2 */
	    fn(2, EXIT, 1, 13),	 /* 3 closes thread 2's A only */
	    fn(1, EXIT, 2, 14),	 /* 4 */
	    fn(2, EXIT, 2, 16),	 /* 5 B is not on thread 2's stack */
	    fn(1, EXIT, 1, 20),	 /* 6 */
	};
	const struct want w[] = {
	    {2, 1, 0, CALL_EXIT, 11, 13, 0, 1, 3},
	    {1, 2, 1, CALL_EXIT, 12, 14, 0, 2, 4},
	    {2, 2, 0, CALL_EXIT | CALL_NO_ENTRY, 11, 16, 2, NONE, 5},
	    {1, 1, 0, CALL_EXIT, 10, 20, 2, 0, 6},
	};
	struct callstack_stats s;
	struct rec r;
	struct callstack *cs = new_pairer(&r);

	(void)state;
	feed_all(cs, ev, 0, 3);
	assert_int_equal(callstack_depth(cs, 0, 1), 2);
	assert_int_equal(callstack_depth(cs, 0, 2), 1);
	assert_int_equal(callstack_depth(cs, 0, 3), 0);
	feed_all(cs, ev, 3, N_OF(ev));
	expect_calls(&r, 0, w, N_OF(w));
	s = stats_of(cs);
	assert_int_equal(s.threads, 2);
	assert_int_equal(s.max_depth, 2);
	assert_int_equal(s.unwound, 0);
	assert_int_equal(s.no_entry, 1);
	callstack_destroy(cs);
}

/* Custom events (even ones that look like an exit) never touch a stack. */
static void test_custom_events_ignored(void **state)
{
	struct xfdr_event ev[] = {
	    fn(1, ENTER, 1, 10), /* 0 */
	    fn(1, EXIT, 1, 15),	 /* 1 becomes a custom event */
	    fn(1, EXIT, 1, 30),	 /* 2 */
	};
	const struct want w[] = {
	    {1, 1, 0, CALL_EXIT, 10, 30, 0, 0, 2},
	};
	struct callstack_stats s;
	struct rec r;
	struct callstack *cs = new_pairer(&r);

	(void)state;
	ev[1].type = XFDR_EVENT_CUSTOM;
	feed_all(cs, ev, 0, N_OF(ev));
	expect_calls(&r, 0, w, N_OF(w));
	s = stats_of(cs);
	assert_int_equal(s.ignored_events, 1);
	assert_int_equal(s.function_events, 2);
	callstack_destroy(cs);
}

/* A clock that steps back is counted, and a call's time never wraps around. */
static void test_tsc_backwards(void **state)
{
	struct xfdr_event ev[] = {
	    fn(1, ENTER, 1, 500), /* 0 */
	    fn(1, ENTER, 2, 520), /* 1 */
	    fn(1, EXIT, 2, 510),  /* 2 back by 10 */
	    fn(1, EXIT, 1, 600),  /* 3 */
	};
	struct rec r;
	struct callstack *cs = new_pairer(&r);

	(void)state;
	feed_all(cs, ev, 0, N_OF(ev));
	assert_int_equal(r.n, 2);
	assert_int_equal(r.v[0].c.enter_tsc, 520);
	assert_int_equal(r.v[0].c.exit_tsc, 510);
	assert_int_equal(r.v[0].c.total_tsc, 0);
	assert_int_equal(r.v[1].c.total_tsc, 100);
	assert_int_equal(r.v[1].c.child_tsc, 0);
	assert_int_equal(stats_of(cs).tsc_backwards, 1);
	callstack_destroy(cs);
}

/* The callback can stop a feed and a finish; what it saw has left the stack. */
static void test_callback_stops(void **state)
{
	struct xfdr_event ev[] = {
	    fn(1, ENTER, 1, 10), /* 0 A */
	    fn(1, ENTER, 2, 20), /* 1 B */
	    fn(1, ENTER, 3, 30), /* 2 C */
	    fn(1, EXIT, 1, 50),	 /* 3 unwinds C, B, then A */
	};
	struct rec r;
	struct callstack *cs = new_pairer(&r);

	(void)state;
	r.stop_at = 2;
	feed_all(cs, ev, 0, 3);
	ev[3].offset = 3;
	assert_int_equal(callstack_feed(cs, &ev[3]), -ECANCELED);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.v[0].c.function_id, 3);
	assert_int_equal(r.v[1].c.function_id, 2);
	assert_int_equal(callstack_depth(cs, 0, 1), 1);
	r.stop_at = 3;
	assert_int_equal(callstack_finish(cs), -ECANCELED);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.v[2].c.function_id, 1);
	assert_int_equal(r.v[2].c.flags, CALL_NO_EXIT);
	assert_int_equal(callstack_depth(cs, 0, 1), 0);
	callstack_destroy(cs);
}

/* ---- a deep stack ---------------------------------------------------------------------- */

#define DEEP 100000u
#define DEEP_TID 0xffff /* the last thread id */

/*
 * Frame d (function d) enters at TSC d; exit k (k = 0, 1, ...) is of function DEEP-1-k at
 * TSC DEEP+k. So frame d closes at 2*DEEP-1-d, its total is 2*DEEP-1-2d, its only child's
 * total is 2*DEEP-3-2d, and its self time is 2 (1 for the innermost).
 */
struct deep_check {
	uint32_t next_depth;
	unsigned long calls;
	unsigned long bad;
};

static int deep_call(void *ctx, const struct call *c)
{
	struct deep_check *d = ctx;
	uint64_t n = DEEP, depth = d->next_depth;

	if (c->depth != depth || c->function_id != depth || c->thread_id != DEEP_TID ||
	    c->flags != CALL_EXIT || c->enter_tsc != depth || c->exit_tsc != 2 * n - 1 - depth ||
	    c->total_tsc != 2 * n - 1 - 2 * depth ||
	    c->child_tsc != (depth == n - 1 ? 0 : 2 * n - 3 - 2 * depth) ||
	    call_self_tsc(c) != (depth == n - 1 ? 1u : 2u) || !c->enter || c->enter->tsc != depth ||
	    !c->exit || c->exit->function_id != depth) {
		if (!d->bad)
			print_message("deep: call %lu (depth %u) is wrong\n", d->calls,
				      (unsigned)c->depth);
		d->bad++;
	}
	d->calls++;
	d->next_depth--;
	return 0;
}

static void test_deep_stack(void **state)
{
	struct deep_check d = {.next_depth = DEEP - 1};
	struct callstack *cs = callstack_create(deep_call, &d);
	struct callstack_stats s;
	struct xfdr_event ev;
	uint32_t i;

	(void)state;
	assert_non_null(cs);
	alloc_calls = 0;
	alloc_counting = 1;
	for (i = 0; i < DEEP; i++) {
		ev = fn(DEEP_TID, ENTER, i, i);
		if (callstack_feed(cs, &ev))
			break;
	}
	alloc_normal();
	assert_int_equal(i, DEEP);
	/* The stack grows geometrically: a thread plus ~log2(DEEP) growths, not one per frame. */
	print_message("deep: %lu allocations for %u frames\n", alloc_calls, DEEP);
	assert_true(alloc_calls <= 40);
	assert_int_equal(callstack_depth(cs, 0, DEEP_TID), DEEP);
	assert_int_equal(callstack_frame(cs, 0, DEEP_TID, 50000)->function_id, 50000);
	assert_int_equal(callstack_frame(cs, 0, DEEP_TID, DEEP - 1)->tsc, DEEP - 1);
	assert_null(callstack_frame(cs, 0, DEEP_TID, DEEP));
	assert_int_equal(d.calls, 0);
	for (i = 0; i < DEEP; i++) {
		ev = fn(DEEP_TID, EXIT, DEEP - 1 - i, DEEP + i);
		assert_int_equal(callstack_feed(cs, &ev), 0);
	}
	assert_int_equal(d.calls, DEEP);
	assert_int_equal(d.bad, 0);
	s = stats_of(cs);
	assert_int_equal(s.max_depth, DEEP);
	assert_int_equal(s.calls, DEEP);
	assert_int_equal(s.function_events, 2 * DEEP);
	assert_int_equal(s.threads, 1);
	assert_int_equal(callstack_depth(cs, 0, DEEP_TID), 0);
	callstack_destroy(cs);
}

/*
 * DEEP open calls, then DEEP exits of a function that is not open: each is an exit without
 * entry at depth DEEP, the stack untouched. Finding that out by walking the stack at every
 * exit was quadratic (10^10 steps here, minutes); the pairer knows which functions are open.
 * Then one exit of the outermost call unwinds everything.
 */
static int count_call(void *ctx, const struct call *c)
{
	unsigned long *n = ctx;

	if (c->flags == (CALL_EXIT | CALL_NO_ENTRY) && c->depth == DEEP && c->function_id == 7)
		n[0]++;
	else if (c->flags == CALL_UNWOUND || c->flags == CALL_EXIT)
		n[1]++;
	return 0;
}

static void test_deep_stack_exits_without_entry(void **state)
{
	unsigned long n[2] = {0, 0};
	struct callstack *cs = callstack_create(count_call, n);
	struct callstack_stats s;
	struct xfdr_event ev;
	uint32_t i;

	(void)state;
	assert_non_null(cs);
	for (i = 0; i < DEEP; i++) {
		ev = fn(DEEP_TID, ENTER, 10 + i, i);
		assert_int_equal(callstack_feed(cs, &ev), 0);
	}
	for (i = 0; i < DEEP; i++) {
		ev = fn(DEEP_TID, EXIT, 7, DEEP + i);
		assert_int_equal(callstack_feed(cs, &ev), 0);
	}
	assert_int_equal(n[0], DEEP);
	assert_int_equal(callstack_depth(cs, 0, DEEP_TID), DEEP);
	/* A function entered again after its frames were closed is open once more. */
	ev = fn(DEEP_TID, EXIT, 10, 3 * DEEP);
	assert_int_equal(callstack_feed(cs, &ev), 0);
	assert_int_equal(n[1], DEEP);
	ev = fn(DEEP_TID, ENTER, 10 + DEEP - 1, 3 * DEEP + 1);
	assert_int_equal(callstack_feed(cs, &ev), 0);
	ev = fn(DEEP_TID, EXIT, 10 + DEEP - 1, 3 * DEEP + 2);
	assert_int_equal(callstack_feed(cs, &ev), 0);
	s = stats_of(cs);
	assert_int_equal(s.no_entry, DEEP);
	assert_int_equal(s.unwound, DEEP - 1);
	assert_int_equal(s.calls, 2 * DEEP + 1);
	assert_int_equal(callstack_depth(cs, 0, DEEP_TID), 0);
	callstack_destroy(cs);
}

/* ---- allocation ---------------------------------------------------------------------- */

/* Each of the pairer's own allocations can fail: create gives NULL and leaks nothing. */
static void test_create_without_memory(void **state)
{
	struct callstack *cs;
	long k;

	(void)state;
	for (k = 0; k < 2; k++) {
		alloc_fail_after = k;
		cs = callstack_create(NULL, NULL);
		alloc_normal();
		assert_null(cs);
	}
	alloc_fail_after = 2;
	cs = callstack_create(NULL, NULL);
	alloc_normal();
	assert_non_null(cs);
	callstack_destroy(cs);
}

/*
 * With every allocation failing, a new thread and each growth of a stack give -ENOMEM and
 * leave the pairer as it was; the same event fed again then goes in. Exits never allocate,
 * and once the stack has grown, entries up to that depth never allocate either.
 */
static void test_feed_without_memory(void **state)
{
	struct callstack_stats before, after;
	struct xfdr_event ev;
	struct rec r;
	struct callstack *cs = new_pairer(&r);
	unsigned failures = 0;
	uint32_t i;
	int rc;

	(void)state;
	ev = fn(3, ENTER, 100, 0);
	alloc_failing = 1;
	rc = callstack_feed(cs, &ev);
	alloc_normal();
	assert_int_equal(rc, -ENOMEM);
	assert_int_equal(callstack_depth(cs, 0, 3), 0);
	after = stats_of(cs);
	assert_int_equal(after.function_events + after.threads + after.max_depth, 0);

	for (i = 0; i < 5000; i++) {
		ev = fn(3, ENTER, 100 + i, i);
		before = stats_of(cs);
		alloc_failing = 1;
		rc = callstack_feed(cs, &ev);
		alloc_normal();
		if (rc == -ENOMEM) {
			failures++;
			assert_int_equal(callstack_depth(cs, 0, 3), i);
			after = stats_of(cs);
			assert_memory_equal(&before, &after, sizeof(before));
			rc = callstack_feed(cs, &ev);
		}
		assert_int_equal(rc, 0);
		assert_int_equal(callstack_depth(cs, 0, 3), i + 1);
	}
	/* The thread, then at least two growths of its stack. */
	assert_true(failures >= 3);
	assert_int_equal(r.n, 0);

	/* The outermost exit unwinds all 5000 frames without memory. */
	ev = fn(3, EXIT, 100, 9000);
	alloc_failing = 1;
	rc = callstack_feed(cs, &ev);
	alloc_normal();
	assert_int_equal(rc, 0);
	assert_true(r.overflow); /* the recorder keeps only 64; the rest were counted */
	after = stats_of(cs);
	assert_int_equal(after.calls, 5000);
	assert_int_equal(after.unwound, 4999);
	assert_int_equal(r.v[0].c.depth, 4999);
	assert_int_equal(r.v[0].c.function_id, 5099);

	/* Back at depth 0 with room for 5000: nested calls to that depth allocate nothing. */
	callstack_destroy(cs);
	cs = new_pairer(&r);
	for (i = 0; i < 5000; i++) {
		ev = fn(3, ENTER, i, i);
		assert_int_equal(callstack_feed(cs, &ev), 0);
	}
	ev = fn(3, EXIT, 0, 5000);
	r.stop_at = 0;
	assert_int_equal(callstack_feed(cs, &ev), 0);
	r.n = 0;
	r.overflow = 0;
	alloc_calls = 0;
	alloc_counting = 1;
	for (i = 0; i < 5000; i++) {
		ev = fn(3, ENTER, i, 10000 + i);
		rc = callstack_feed(cs, &ev);
		if (rc)
			break;
	}
	for (; rc == 0 && i > 0; i--) {
		ev = fn(3, EXIT, i - 1, 20000 - i);
		rc = callstack_feed(cs, &ev);
		r.n = 0;
	}
	alloc_normal();
	assert_int_equal(rc, 0);
	assert_int_equal(alloc_calls, 0);
	assert_int_equal(stats_of(cs).calls, 10000);
	callstack_destroy(cs);
}

/* ---- stack contexts ------------------------------------------------------------------- */

#define STAK(depth, count)                                                                         \
	'X', 'F', 'D', 'R', 'S', 'T', 'A', 'K', L32(1), L32(depth), L32(count), L32(0)
#define FROM CALL_FROM_CONTEXT
#define UNKNOWN CALL_UNKNOWN_FUNCTION

/* A custom event on thread tid at tsc with the payload p (n bytes), little-endian, cpu 5. */
static struct xfdr_event custom(uint16_t tid, uint64_t tsc, const uint8_t *p, uint32_t n)
{
	struct xfdr_event ev = {
	    .type = XFDR_EVENT_CUSTOM,
	    .tsc = tsc,
	    .cpu = 5,
	    .thread_id = tid,
	    .payload = p,
	    .payload_bytes = n,
	};

	return ev;
}

static void expect_frame(const struct callstack *cs, uint16_t tid, uint32_t depth, uint32_t fid,
			 unsigned flags, uint32_t run, uint64_t enter_tsc, long long enter_seq)
{
	struct callstack_frame_info f;

	memset(&f, 0xa5, sizeof(f));
	assert_int_equal(callstack_frame_info(cs, 0, tid, depth, &f), 0);
	assert_int_equal(f.function_id, fid);
	assert_int_equal(f.flags, flags);
	assert_int_equal(f.unnamed_run, run);
	assert_int_equal(f.enter_tsc, enter_tsc);
	if (enter_seq == NONE) {
		assert_null(f.enter);
		assert_null(callstack_frame(cs, 0, tid, depth));
	} else {
		assert_non_null(f.enter);
		assert_int_equal(f.enter->offset, enter_seq);
		assert_ptr_equal(callstack_frame(cs, 0, tid, depth), f.enter);
	}
}

/*
 * The buffer begins two calls deep (1 calls 2), its predecessors gone: the context makes them
 * open frames, so their exits pair with them at their true depth, begun at the context's TSC
 * (1000) with no entry event, and a call inside them is their child.
 */
static void test_context_seeds_empty_stack(void **state)
{
	static const uint8_t stak[] = {STAK(2, 2), L32(1), L32(2)};
	struct xfdr_event ev[] = {
	    custom(1, 1000, stak, sizeof(stak)), /* 0 */
	    fn(1, ENTER, 3, 1002),		 /* 1 */
	    fn(1, EXIT, 3, 1004),		 /* 2 */
	    fn(1, EXIT, 2, 1005),		 /* 3 */
	    fn(1, EXIT, 1, 1010),		 /* 4 */
	};
	const struct want w[] = {
	    {1, 3, 2, CALL_EXIT, 1002, 1004, 0, 1, 2},
	    {1, 2, 1, CALL_EXIT | FROM, 1000, 1005, 2, NONE, 3},
	    {1, 1, 0, CALL_EXIT | FROM, 1000, 1010, 5, NONE, 4},
	};
	struct callstack_stats s;
	struct rec r;
	struct callstack *cs = new_pairer(&r);
	struct callstack_frame_info f;

	(void)state;
	assert_int_equal(sizeof(stak), 32);
	feed_all(cs, ev, 0, 1);
	assert_int_equal(callstack_depth(cs, 0, 1), 2);
	expect_frame(cs, 1, 0, 1, FROM, 0, 1000, NONE);
	expect_frame(cs, 1, 1, 2, FROM, 0, 1000, NONE);
	assert_int_equal(callstack_frame_info(cs, 0, 1, 2, &f), -1);
	assert_int_equal(callstack_frame_info(cs, 0, 2, 0, &f), -1);
	feed_all(cs, ev, 1, 2);
	expect_frame(cs, 1, 2, 3, 0, 0, 1002, 1);
	feed_all(cs, ev, 2, N_OF(ev));
	expect_calls(&r, 0, w, N_OF(w));
	assert_int_equal(r.v[1].c.cpu, 5); /* the context's */
	assert_int_equal(r.v[1].exit_cpu, CPU);
	s = stats_of(cs);
	assert_int_equal(s.contexts, 1);
	assert_int_equal(s.contexts_seeded, 1);
	assert_int_equal(s.contexts_differ, 0);
	assert_int_equal(s.contexts_invalid, 0);
	assert_int_equal(s.from_context, 2);
	assert_int_equal(s.ignored_events, 0);
	assert_int_equal(s.function_events, 4);
	assert_int_equal(s.calls, 3);
	assert_int_equal(s.no_entry, 0);
	assert_int_equal(s.max_depth, 3);
	assert_int_equal(s.threads, 1);
	assert_int_equal(callstack_depth(cs, 0, 1), 0);
	callstack_destroy(cs);
}

/*
 * A context that counts 4 calls and names 2 (1, 2): the 2 unnamed ones are innermost. Each
 * exit that reaches them closes the innermost and names it (9, then 8); a call made meanwhile
 * (5) sits on top of them, at depth 3. What is still open at the end is reported as such.
 *   9: 1000-1001; 5: 1002-1003 (child of the unnamed call 8); 8: 1000-1004, children 9 and 5
 *   (1 + 1); 2: 1000-1006, child 8 (4); 1: open, closed at 1006, child 2 (6).
 */
static void test_context_unnamed_calls(void **state)
{
	static const uint8_t stak[] = {STAK(4, 2), L32(1), L32(2)};
	struct xfdr_event ev[] = {
	    custom(2, 1000, stak, sizeof(stak)), /* 0 */
	    fn(2, EXIT, 9, 1001),		 /* 1 */
	    fn(2, ENTER, 5, 1002),		 /* 2 */
	    fn(2, EXIT, 5, 1003),		 /* 3 */
	    fn(2, EXIT, 8, 1004),		 /* 4 */
	    fn(2, EXIT, 2, 1006),		 /* 5 */
	};
	const struct want w[] = {
	    {2, 9, 3, CALL_EXIT | FROM, 1000, 1001, 0, NONE, 1},
	    {2, 5, 3, CALL_EXIT, 1002, 1003, 0, 2, 3},
	    {2, 8, 2, CALL_EXIT | FROM, 1000, 1004, 2, NONE, 4},
	    {2, 2, 1, CALL_EXIT | FROM, 1000, 1006, 4, NONE, 5},
	    {2, 1, 0, CALL_NO_EXIT | FROM, 1000, 1006, 6, NONE, NONE},
	};
	struct callstack_stats s;
	struct rec r;
	struct callstack *cs = new_pairer(&r);
	struct callstack_frame_info f;

	(void)state;
	feed_all(cs, ev, 0, 1);
	assert_int_equal(callstack_depth(cs, 0, 2), 4);
	expect_frame(cs, 2, 1, 2, FROM, 0, 1000, NONE);
	expect_frame(cs, 2, 2, UNKNOWN, FROM, 2, 1000, NONE);
	expect_frame(cs, 2, 3, UNKNOWN, FROM, 1, 1000, NONE);
	assert_int_equal(callstack_frame_info(cs, 0, 2, 4, &f), -1);
	feed_all(cs, ev, 1, 3);
	assert_int_equal(callstack_depth(cs, 0, 2), 4);
	expect_frame(cs, 2, 2, UNKNOWN, FROM, 1, 1000, NONE);
	expect_frame(cs, 2, 3, 5, 0, 0, 1002, 2);
	feed_all(cs, ev, 3, N_OF(ev));
	assert_int_equal(callstack_finish(cs), 0);
	expect_calls(&r, 0, w, N_OF(w));
	s = stats_of(cs);
	assert_int_equal(s.from_context, 4);
	assert_int_equal(s.no_exit, 1);
	assert_int_equal(s.max_depth, 4);
	callstack_destroy(cs);
}

/*
 * Unnamed calls nobody exits are reported at the finish with CALL_UNKNOWN_FUNCTION. And an
 * exit of a named context frame's function that reaches an unnamed call closes that call (the
 * unnamed calls are the innermost: in a consistent trace they exit first; recursion is the usual
 * reason a stack is deeper than 128).
 */
static void test_context_unnamed_at_finish(void **state)
{
	static const uint8_t stak3[] = {STAK(3, 1), L32(7), L32(0)};
	static const uint8_t stak2[] = {STAK(2, 1), L32(7), L32(0)};
	struct xfdr_event ev[] = {
	    custom(3, 50, stak3, sizeof(stak3)), /* 0 */
	    fn(3, ENTER, 4, 60),		 /* 1 */
	    fn(3, EXIT, 4, 70),			 /* 2 */
	    custom(4, 50, stak2, sizeof(stak2)), /* 3 */
	    fn(4, EXIT, 7, 55),			 /* 4 */
	    fn(4, EXIT, 7, 60),			 /* 5 */
	};
	const struct want w3[] = {
	    {3, 4, 3, CALL_EXIT, 60, 70, 0, 1, 2},
	    {3, UNKNOWN, 2, CALL_NO_EXIT | FROM, 50, 70, 10, NONE, NONE},
	    {3, UNKNOWN, 1, CALL_NO_EXIT | FROM, 50, 70, 20, NONE, NONE},
	    {3, 7, 0, CALL_NO_EXIT | FROM, 50, 70, 20, NONE, NONE},
	};
	const struct want w4[] = {
	    {4, 7, 1, CALL_EXIT | FROM, 50, 55, 0, NONE, 4},
	    {4, 7, 0, CALL_EXIT | FROM, 50, 60, 5, NONE, 5},
	};
	struct rec r;
	struct callstack *cs = new_pairer(&r);

	(void)state;
	feed_all(cs, ev, 0, 3);
	assert_int_equal(callstack_finish_thread(cs, 0, 3), 0);
	expect_calls(&r, 0, w3, N_OF(w3));
	feed_all(cs, ev, 3, N_OF(ev));
	expect_calls(&r, N_OF(w3), w4, N_OF(w4));
	assert_int_equal(callstack_depth(cs, 0, 4), 0);
	assert_int_equal(stats_of(cs).no_entry, 0);
	callstack_destroy(cs);
}

/* The exit of the outermost context frame closes the two above it, whose exits are lost. */
static void test_context_frames_unwound(void **state)
{
	static const uint8_t stak[] = {STAK(3, 3), L32(1), L32(2), L32(3), L32(0)};
	struct xfdr_event ev[] = {
	    custom(1, 100, stak, sizeof(stak)), /* 0 */
	    fn(1, EXIT, 1, 110),		/* 1 */
	};
	const struct want w[] = {
	    {1, 3, 2, CALL_UNWOUND | FROM, 100, 110, 0, NONE, 1},
	    {1, 2, 1, CALL_UNWOUND | FROM, 100, 110, 10, NONE, 1},
	    {1, 1, 0, CALL_EXIT | FROM, 100, 110, 10, NONE, 1},
	};
	struct rec r;
	struct callstack *cs = new_pairer(&r);

	(void)state;
	assert_int_equal(sizeof(stak), 40);
	feed_all(cs, ev, 0, N_OF(ev));
	expect_calls(&r, 0, w, N_OF(w));
	assert_int_equal(stats_of(cs).unwound, 2);
	assert_int_equal(stats_of(cs).from_context, 3);
	callstack_destroy(cs);
}

/*
 * With frames open (the thread's earlier buffers are in the trace) a context only gets
 * compared: the same depth and ids agree, anything else differs; the frames stay the entries'.
 * An unnamed call agrees with any id.
 */
static void test_context_with_open_frames(void **state)
{
	static const uint8_t same[] = {STAK(2, 2), L32(1), L32(2)};
	static const uint8_t other_id[] = {STAK(2, 2), L32(1), L32(5)};
	static const uint8_t deeper[] = {STAK(3, 3), L32(1), L32(2), L32(3), L32(0)};
	static const uint8_t none[] = {STAK(0, 0)};
	static const uint8_t three_one[] = {STAK(3, 1), L32(1), L32(0)};
	static const uint8_t three_two[] = {STAK(3, 2), L32(1), L32(2)};
	static const uint8_t three_bad[] = {STAK(3, 2), L32(9), L32(2)};
	struct xfdr_event ev[] = {
	    fn(1, ENTER, 1, 10),			 /* 0 */
	    fn(1, ENTER, 2, 20),			 /* 1 */
	    custom(1, 30, same, sizeof(same)),		 /* 2 agrees */
	    custom(1, 31, other_id, sizeof(other_id)),	 /* 3 differs */
	    custom(1, 32, deeper, sizeof(deeper)),	 /* 4 differs */
	    custom(1, 33, none, sizeof(none)),		 /* 5 differs */
	    fn(1, EXIT, 2, 40),				 /* 6 */
	    fn(1, EXIT, 1, 50),				 /* 7 */
	    custom(1, 60, none, sizeof(none)),		 /* 8 agrees: nothing open */
	    custom(2, 70, three_one, sizeof(three_one)), /* 9 seeds [1 ? ?] */
	    custom(2, 71, three_two, sizeof(three_two)), /* 10 agrees */
	    custom(2, 72, three_bad, sizeof(three_bad)), /* 11 differs */
	};
	const struct want w[] = {
	    {1, 2, 1, CALL_EXIT, 20, 40, 0, 1, 6},
	    {1, 1, 0, CALL_EXIT, 10, 50, 20, 0, 7},
	};
	struct callstack_stats s;
	struct rec r;
	struct callstack *cs = new_pairer(&r);

	(void)state;
	assert_int_equal(sizeof(none), 24);
	feed_all(cs, ev, 0, 3);
	s = stats_of(cs);
	assert_int_equal(s.contexts, 1);
	assert_int_equal(s.contexts_seeded + s.contexts_differ, 0);
	feed_all(cs, ev, 3, 6);
	assert_int_equal(stats_of(cs).contexts_differ, 3);
	assert_int_equal(callstack_depth(cs, 0, 1), 2);
	expect_frame(cs, 1, 1, 2, 0, 0, 20, 1);
	feed_all(cs, ev, 6, N_OF(ev));
	expect_calls(&r, 0, w, N_OF(w));
	s = stats_of(cs);
	assert_int_equal(s.contexts, 8);
	assert_int_equal(s.contexts_seeded, 1);
	assert_int_equal(s.contexts_differ, 4);
	assert_int_equal(s.from_context, 0);
	assert_int_equal(s.ignored_events, 0);
	assert_int_equal(callstack_depth(cs, 0, 2), 3);
	expect_frame(cs, 2, 1, UNKNOWN, FROM, 2, 70, NONE);
	callstack_destroy(cs);
}

/*
 * Payloads that are not a stack context are not taken: a bad XFDRSTAK is counted as invalid,
 * another custom event as ignored. The byte order is the event's. The most unnamed calls a
 * context may have is 2^24.
 */
static void test_context_invalid(void **state)
{
	static const uint8_t version2[] = {'X', 'F',	'D',	'R',	'S',	'T',	'A',
					   'K', L32(2), L32(1), L32(1), L32(0), L32(1), L32(0)};
	static const uint8_t cut[] = {'X', 'F', 'D', 'R', 'S', 'T', 'A', 'K', L32(1), L32(0)};
	static const uint8_t too_deep[] = {STAK(0x1000001, 0)};
	static const uint8_t deepest[] = {STAK(0x1000000, 0)};
	static const uint8_t drop[] = {'X', 'F', 'D', 'R', 'D', 'R', 'O', 'P', Z8};
	static const uint8_t big[] = {'X',
				      'F',
				      'D',
				      'R',
				      'S',
				      'T',
				      'A',
				      'K',
				      B32(1),
				      B32(1),
				      B32(1),
				      B32(0),
				      B32(0x1234567),
				      B32(0)};
	struct xfdr_event ev[] = {
	    custom(1, 10, version2, sizeof(version2)), /* 0 */
	    custom(1, 11, cut, sizeof(cut)),	       /* 1 */
	    custom(1, 12, too_deep, sizeof(too_deep)), /* 2 */
	    custom(1, 13, drop, sizeof(drop)),	       /* 3 */
	    custom(1, 14, big, sizeof(big)),	       /* 4 little-endian: version 0x01000000 */
	};
	struct callstack_stats s;
	struct xfdr_event e;
	struct rec r;
	struct callstack *cs = new_pairer(&r);

	(void)state;
	feed_all(cs, ev, 0, N_OF(ev));
	s = stats_of(cs);
	assert_int_equal(s.contexts_invalid, 4);
	assert_int_equal(s.ignored_events, 1);
	assert_int_equal(s.contexts, 0);
	assert_int_equal(s.threads, 0);
	assert_int_equal(callstack_depth(cs, 0, 1), 0);

	e = custom(1, 15, big, sizeof(big));
	e.big_endian = 1;
	assert_int_equal(callstack_feed(cs, &e), 0);
	assert_int_equal(callstack_depth(cs, 0, 1), 1);
	expect_frame(cs, 1, 0, 0x1234567, FROM, 0, 15, NONE);
	e = fn(1, EXIT, 0x1234567, 16);
	assert_int_equal(callstack_feed(cs, &e), 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.v[0].c.function_id, 0x1234567);

	/* 2^24 unnamed calls take one frame; the exit of 5 closes the innermost. */
	e = custom(2, 100, deepest, sizeof(deepest));
	assert_int_equal(callstack_feed(cs, &e), 0);
	assert_int_equal(callstack_depth(cs, 0, 2), 16777216);
	expect_frame(cs, 2, 0, UNKNOWN, FROM, 16777216, 100, NONE);
	expect_frame(cs, 2, 16777215, UNKNOWN, FROM, 1, 100, NONE);
	e = fn(2, EXIT, 5, 101);
	assert_int_equal(callstack_feed(cs, &e), 0);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.v[1].c.function_id, 5);
	assert_int_equal(r.v[1].c.depth, 16777215);
	assert_int_equal(callstack_depth(cs, 0, 2), 16777215);
	assert_int_equal(stats_of(cs).max_depth, 16777216);
	callstack_destroy(cs); /* open frames are dropped unreported */
}

/* A context that needs a new thread or a larger stack gets -ENOMEM and changes nothing. */
static void test_context_without_memory(void **state)
{
	static uint8_t stak[24 + 4 * 100];
	struct callstack_stats before, after;
	struct xfdr_event ev;
	struct rec r;
	struct callstack *cs = new_pairer(&r);
	static const uint8_t head[] = {STAK(100, 100)};
	uint32_t i;

	(void)state;
	memcpy(stak, head, sizeof(head));
	for (i = 0; i < 100; i++) {
		const uint8_t id[] = {L32(i + 1)};

		memcpy(stak + 24 + 4 * i, id, 4);
	}
	ev = custom(6, 10, stak, sizeof(stak));
	before = stats_of(cs);
	alloc_failing = 1;
	assert_int_equal(callstack_feed(cs, &ev), -ENOMEM);
	alloc_normal();
	after = stats_of(cs);
	assert_memory_equal(&before, &after, sizeof(before));
	assert_int_equal(callstack_depth(cs, 0, 6), 0);

	/* The thread exists now (a first entry made it), but 100 frames need a larger stack. */
	ev = fn(6, ENTER, 1, 5);
	assert_int_equal(callstack_feed(cs, &ev), 0);
	ev = fn(6, EXIT, 1, 6);
	assert_int_equal(callstack_feed(cs, &ev), 0);
	ev = custom(6, 10, stak, sizeof(stak));
	before = stats_of(cs);
	alloc_failing = 1;
	assert_int_equal(callstack_feed(cs, &ev), -ENOMEM);
	alloc_normal();
	after = stats_of(cs);
	assert_memory_equal(&before, &after, sizeof(before));
	assert_int_equal(callstack_depth(cs, 0, 6), 0);

	assert_int_equal(callstack_feed(cs, &ev), 0);
	assert_int_equal(callstack_depth(cs, 0, 6), 100);
	expect_frame(cs, 6, 99, 100, FROM, 0, 10, NONE);
	callstack_destroy(cs);
}

/* ---- end to end: a real image -------------------------------------------------------- */

#define IMG_BUF 256

struct image {
	uint8_t b[IMG_BUF * 4 + XFDR_FILE_HEADER_BYTES];
	size_t len;
	size_t buf_start;
	uint64_t base_tsc; /* for the deltas */
};

static void image_init(struct image *m)
{
	struct wr_file_header h = {.cycle_frequency_hz = 1000000000ull,
				   .buffer_bytes = IMG_BUF,
				   .constant_tsc = 1,
				   .nonstop_tsc = 1};

	memset(m, 0, sizeof(*m));
	m->len = wr_encode_file_header(m->b, &h);
	assert_int_equal(m->len, XFDR_FILE_HEADER_BYTES);
}

static void image_buffer(struct image *m, uint16_t tid, uint64_t sec, uint32_t usec, uint16_t cpu,
			 uint64_t tsc)
{
	assert_true(m->len + IMG_BUF <= sizeof(m->b));
	m->buf_start = m->len;
	m->len += wr_new_buffer(m->b + m->len, tid);
	m->len += wr_wall_clock_time(m->b + m->len, sec, usec);
	m->len += wr_new_cpu_id(m->b + m->len, cpu, tsc);
	m->base_tsc = tsc;
}

/* A function record at absolute TSC tsc; returns its offset in the file. */
static uint64_t image_fn(struct image *m, unsigned action, uint32_t fid, uint64_t tsc)
{
	uint64_t at = m->len;

	m->len += wr_function(m->b + m->len, action, fid, (uint32_t)(tsc - m->base_tsc));
	m->base_tsc = tsc;
	return at;
}

static void image_close(struct image *m)
{
	assert_int_equal(wr_close_buffer(m->b + m->buf_start, m->len - m->buf_start, IMG_BUF), 0);
	m->len = m->buf_start + IMG_BUF;
}

/*
 * File order: thread 2's only buffer; thread 1's second buffer (later WallClockTime); thread
 * 1's first buffer. Thread 1's calls span its two buffers, so they pair only if its buffers
 * are read in time order, and they come before thread 2's (ascending thread id).
 */
struct e2e {
	struct image m;
	uint64_t t2_exit9, t2_enter4, t2_enter5;
	uint64_t t1_enter1, t1_enter3, t1_exit3, t1_enter2, t1_exit2, t1_exit1, t1_enter6;
};

static void build_e2e(struct e2e *e)
{
	struct image *m = &e->m;

	image_init(m);
	image_buffer(m, 2, 100, 0, 1, 5000);
	e->t2_exit9 = image_fn(m, EXIT, 9, 5010);
	e->t2_enter4 = image_fn(m, ENTER, 4, 5015);
	e->t2_enter5 = image_fn(m, ENTER, 5, 5020);
	image_close(m);

	image_buffer(m, 1, 100, 500, 3, 2000);
	e->t1_exit2 = image_fn(m, EXIT, 2, 2020);
	e->t1_exit1 = image_fn(m, EXIT, 1, 2050);
	e->t1_enter6 = image_fn(m, ENTER, 6, 2100);
	image_close(m);

	image_buffer(m, 1, 100, 10, 0, 1000);
	e->t1_enter1 = image_fn(m, ENTER, 1, 1000);
	e->t1_enter3 = image_fn(m, ARGS, 3, 1010);
	m->len += wr_call_argument(m->b + m->len, 42);
	e->t1_exit3 = image_fn(m, EXIT, 3, 1025);
	e->t1_enter2 = image_fn(m, ENTER, 2, 1030);
	image_close(m);
}

/*
 * A window from 100 to 200. Thread 1: A{ B{} before it, C{ D{ } } across its start, E{}
 * inside, F{ G{ across its end }; thread 2 runs only before the window, thread 3 has calls open
 * across the whole window and no event in it.
 *   B (20..40) ends before the window: not reported, and not in A's children.
 *   D (90..110) is cut to 100..110; C (80..150) to 100..150, its child D's 10 ticks.
 *   E (160..170) inside. A (10..??) is open at the event after 200: cut to 100..200, its
 *   children C (50) and E (10) and F (190..200: cut at the end, child G 195..200).
 *   Thread 2's call open when it ends (before the window) is not reported.
 *   Thread 3: H (50..) open, next event at 300: H cut to 100..200, both edges.
 */
static void test_window(void **state)
{
	struct xfdr_event ev[] = {
	    fn(1, ENTER, 1, 10),  /* 0 A */
	    fn(1, ENTER, 2, 20),  /* 1 B */
	    fn(1, EXIT, 2, 40),	  /* 2 */
	    fn(1, ENTER, 3, 80),  /* 3 C */
	    fn(1, ENTER, 4, 90),  /* 4 D */
	    fn(1, EXIT, 4, 110),  /* 5 */
	    fn(1, EXIT, 3, 150),  /* 6 */
	    fn(1, ENTER, 5, 160), /* 7 E */
	    fn(1, EXIT, 5, 170),  /* 8 */
	    fn(1, ENTER, 6, 190), /* 9 F */
	    fn(1, ENTER, 7, 195), /* 10 G */
	    fn(1, EXIT, 7, 250),  /* 11: past the window */
	    fn(1, EXIT, 6, 260),  /* 12 */
	    fn(1, EXIT, 1, 270),  /* 13 */
	    fn(2, ENTER, 8, 30),  /* 14 */
	    fn(2, ENTER, 9, 40),  /* 15 */
	    fn(2, EXIT, 9, 50),	  /* 16 */
	    fn(3, ENTER, 10, 50), /* 17 H */
	    fn(3, EXIT, 10, 300), /* 18 */
	};
	const struct want w[] = {
	    {1, 4, 2, CALL_EXIT | CALL_CUT_BEGIN, 100, 110, 0, 4, 5},
	    {1, 3, 1, CALL_EXIT | CALL_CUT_BEGIN, 100, 150, 10, 3, 6},
	    {1, 5, 1, CALL_EXIT, 160, 170, 0, 7, 8},
	    {1, 7, 2, CALL_CUT_END, 195, 200, 0, 10, NONE},
	    {1, 6, 1, CALL_CUT_END, 190, 200, 5, 9, NONE},
	    {1, 1, 0, CALL_CUT_END | CALL_CUT_BEGIN, 100, 200, 70, 0, NONE},
	    {3, 10, 0, CALL_CUT_END | CALL_CUT_BEGIN, 100, 200, 0, 17, NONE},
	};
	struct callstack_stats st;
	struct rec r;
	struct callstack *cs = new_pairer(&r);

	(void)state;
	callstack_set_window(cs, 100, 200);
	feed_all(cs, ev, 0, N_OF(ev));
	assert_int_equal(callstack_finish(cs), 0);
	expect_calls(&r, 0, w, N_OF(w));
	st = stats_of(cs);
	assert_int_equal(st.calls, 7);
	assert_int_equal(st.cut_begin, 4);
	assert_int_equal(st.cut_end, 4);
	assert_int_equal(st.outside, 4); /* thread 1's last three exits, thread 3's exit */
	callstack_destroy(cs);
}

static void test_pair_trace(void **state)
{
	struct e2e e;
	struct xfdr_trace *t;
	struct xfdr_error err;
	struct callstack_stats s;
	struct rec r;

	(void)state;
	build_e2e(&e);
	memset(&r, 0, sizeof(r));
	assert_int_equal(xfdr_trace_open_memory(e.m.b, e.m.len, "e2e.xray", &t, &err), 0);
	r.trace = t;
	assert_int_equal(callstack_pair_trace(t, on_call, &r, &s, &err), 0);
	{
		const struct want w[] = {
		    {1, 3, 1, CALL_EXIT | CALL_ARGS, 1010, 1025, 0, (long long)e.t1_enter3,
		     (long long)e.t1_exit3},
		    {1, 2, 1, CALL_EXIT, 1030, 2020, 0, (long long)e.t1_enter2,
		     (long long)e.t1_exit2},
		    {1, 1, 0, CALL_EXIT, 1000, 2050, 15 + 990, (long long)e.t1_enter1,
		     (long long)e.t1_exit1},
		    /* thread 1 is finished before thread 2 starts */
		    {1, 6, 0, CALL_NO_EXIT, 2100, 2100, 0, (long long)e.t1_enter6, NONE},
		    {2, 9, 0, CALL_EXIT | CALL_NO_ENTRY, 5010, 5010, 0, NONE,
		     (long long)e.t2_exit9},
		    {2, 5, 1, CALL_NO_EXIT, 5020, 5020, 0, (long long)e.t2_enter5, NONE},
		    {2, 4, 0, CALL_NO_EXIT, 5015, 5020, 0, (long long)e.t2_enter4, NONE},
		};

		expect_calls(&r, 0, w, N_OF(w));
	}
	/* The argument of the Entry_Args, and the CPUs of entry and exit. */
	assert_int_equal(r.v[0].arg_count, 1);
	assert_int_equal(r.v[0].arg0, 42);
	assert_int_equal(r.v[1].c.cpu, 0);
	assert_int_equal(r.v[1].exit_cpu, 3);
	assert_int_equal(r.v[4].c.cpu, 1);

	assert_int_equal(s.function_events, 10);
	assert_int_equal(s.ignored_events, 0);
	assert_int_equal(s.calls, 7);
	assert_int_equal(s.no_entry, 1);
	assert_int_equal(s.no_exit, 3);
	assert_int_equal(s.unwound, 0);
	assert_int_equal(s.max_depth, 2);
	assert_int_equal(s.threads, 2);

	/* A callback that stops the walk. */
	memset(&r, 0, sizeof(r));
	r.stop_at = 2;
	assert_int_equal(callstack_pair_trace(t, on_call, &r, &s, &err), 1);
	assert_int_equal(r.n, 2);
	assert_int_equal(s.calls, 2);

	/*
	 * Out of memory for the first thread: -1, the offset of the event that needed it, no
	 * call. Two allocations go through: the pairer and its thread table (the reader has
	 * verified and ordered this trace already and keeps that, so it allocates nothing).
	 */
	memset(&r, 0, sizeof(r));
	alloc_fail_after = 2;
	memset(&err, 0, sizeof(err));
	assert_int_equal(callstack_pair_trace(t, on_call, &r, NULL, &err), -1);
	alloc_normal();
	print_message("out of memory: %s\n", err.text);
	assert_non_null(strstr(err.text, "e2e.xray: offset "));
	assert_non_null(strstr(err.text, "expected memory for the call stack"));
	assert_int_equal(err.offset, e.t1_enter1);
	assert_int_equal(r.n, 0);
	xfdr_trace_close(t);
}

/* An invalid image: -1 with the reader's one-line error, and not a single call. */
static void test_pair_trace_invalid(void **state)
{
	struct e2e e;
	struct xfdr_trace *t;
	struct xfdr_error err;
	struct callstack_stats s;
	struct rec r;
	size_t bad = XFDR_FILE_HEADER_BYTES + 2 * IMG_BUF + 2 * XFDR_MD_RECORD_BYTES;

	(void)state;
	build_e2e(&e);
	/* Thread 1's first buffer: its NewCPUId becomes a metadata record of unknown kind 127. */
	assert_int_equal(e.m.b[bad], wr_md_byte(XFDR_MD_NEW_CPU_ID));
	e.m.b[bad] = wr_md_byte(127);
	memset(&r, 0, sizeof(r));
	memset(&err, 0, sizeof(err));
	assert_int_equal(xfdr_trace_open_memory(e.m.b, e.m.len, "bad.xray", &t, &err), 0);
	assert_int_equal(callstack_pair_trace(t, on_call, &r, &s, &err), -1);
	print_message("invalid: %s\n", err.text);
	assert_non_null(strstr(err.text, "bad.xray: offset "));
	assert_int_equal(err.offset, bad);
	assert_int_equal(r.n, 0);
	assert_int_equal(s.calls, 0);
	xfdr_trace_close(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nested),
	    cmocka_unit_test(test_recursion),
	    cmocka_unit_test(test_tail_exit),
	    cmocka_unit_test(test_missing_exit_unwound),
	    cmocka_unit_test(test_exit_without_entry),
	    cmocka_unit_test(test_open_at_finish),
	    cmocka_unit_test(test_threads_interleaved),
	    cmocka_unit_test(test_custom_events_ignored),
	    cmocka_unit_test(test_tsc_backwards),
	    cmocka_unit_test(test_callback_stops),
	    cmocka_unit_test(test_deep_stack),
	    cmocka_unit_test(test_deep_stack_exits_without_entry),
	    cmocka_unit_test(test_create_without_memory),
	    cmocka_unit_test(test_feed_without_memory),
	    cmocka_unit_test(test_context_seeds_empty_stack),
	    cmocka_unit_test(test_context_unnamed_calls),
	    cmocka_unit_test(test_context_unnamed_at_finish),
	    cmocka_unit_test(test_context_frames_unwound),
	    cmocka_unit_test(test_context_with_open_frames),
	    cmocka_unit_test(test_context_invalid),
	    cmocka_unit_test(test_context_without_memory),
	    cmocka_unit_test(test_window),
	    cmocka_unit_test(test_pair_trace),
	    cmocka_unit_test(test_pair_trace_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
