/*
 * tests/unit/runtime/test_runtime_flight.c - the flight-recorder behaviour of the runtime: ring
 * mode keeps the newest history, short-call elision keeps exact times, every buffer carries its
 * stack context, snapshots since a timestamp, thread ids unique in a file.
 *
 * Events go in through rec_function_at() with chosen TSCs and CPUs, so every expected record
 * is known in advance: the expectations below are worked out by hand from the format (48-byte
 * preamble, 8-byte function records, 16-byte metadata, room for the 16-byte EndOfBuffer) and
 * the documented behaviour, then checked with the reader library and with llvm-xray.
 */
#include <pthread.h>

#include "runtime/record/record_fast.h"
#include "runtime/record/thread.h"
#include "tests/support/runtime_test.h"

static char path[512];

/* One function event as the reader decoded it. */
struct fev {
	unsigned action;
	uint32_t fid;
	uint64_t tsc;
	uint16_t cpu;
	uint16_t thread;
	uint64_t buffer;
};

struct fev_list {
	struct fev *out;
	size_t n, max, *custom;
};

static int fev_add(const struct xfdr_event *ev, void *arg)
{
	struct fev_list *l = arg;

	if (ev->type == XFDR_EVENT_CUSTOM) {
		(*l->custom)++;
		return 0;
	}
	assert_true(l->n < l->max);
	l->out[l->n++] = (struct fev){ev->action, ev->function_id, ev->tsc,
				      ev->cpu,	  ev->thread_id,   ev->buffer_index};
	return 0;
}

/*
 * The function events of a verified file in file order; custom events are counted in
 * *custom. Returns the count (at most max).
 */
static size_t file_events(const char *file, struct fev *out, size_t max, size_t *custom)
{
	struct fev_list l = {out, 0, max, custom};

	*custom = 0;
	ts_each_event(file, XFDR_ORDER_FILE, fev_add, &l);
	return l.n;
}

static void expect_fev(const struct fev *e, unsigned action, uint32_t fid, uint64_t tsc,
		       uint16_t cpu)
{
	if (e->action != action || e->fid != fid || e->tsc != tsc || e->cpu != cpu)
		fail_msg("got action %u fid %u tsc %llu cpu %u, expected %u %u %llu %u", e->action,
			 e->fid, (unsigned long long)e->tsc, e->cpu, action, fid,
			 (unsigned long long)tsc, cpu);
}

static char *map_of(const char *trace)
{
	char map_path[600];
	size_t n;

	snprintf(map_path, sizeof(map_path), "%s.map", trace);
	return (char *)ts_slurp(map_path, &n);
}

static uint64_t map_u64(const char *map, const char *key)
{
	char value[64];

	if (!ts_map_value(map, key, value, sizeof(value)))
		fail_msg("no \"%s\" line in the .map", key);
	return strtoull(value, NULL, 10);
}

static void llvm_converts(const char *file)
{
	char *yaml = NULL;

	if (ts_llvm_yaml(file, &yaml))
		fail_msg("llvm-xray rejects %s:\n%s", file, yaml ? yaml : "");
	free(yaml);
}

/*
 * The event sequence of these tests: event k is the entry (k even) or exit (k odd) of
 * function k / 2 + 1 at TSC 1000 + 10 k, on one CPU.
 */
static void issue_pairs(uint64_t events, unsigned cpu)
{
	uint64_t k;

	for (k = 0; k < events; k++)
		rec_function_at(1000 + 10 * k, cpu, k & 1 ? XFDR_FN_EXIT : XFDR_FN_ENTER,
				(uint32_t)(k / 2 + 1));
}

/* ev[0..n) must be events first, first + 1, ... of that sequence. */
static void expect_pairs(const struct fev *ev, size_t n, uint64_t first, unsigned cpu)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t k = first + i;

		expect_fev(&ev[i], k & 1 ? XFDR_FN_EXIT : XFDR_FN_ENTER, (uint32_t)(k / 2 + 1),
			   1000 + 10 * k, (uint16_t)cpu);
	}
}

/* ---- ring mode ------------------------------------------------------------------------ */

/*
 * 256-byte buffers hold 24 function records: 48 bytes of preamble, 24 x 8, and the 16 bytes
 * EndOfBuffer needs. Entry/exit pairs at depth 0 fill every buffer with 12 whole pairs, and
 * each buffer starts with an entry (no open call: no stack context). A ring of 4 buffers
 * after 100 times its capacity (9600 events, 400 buffers) holds exactly buffers 396..399:
 * events 9504..9599, and 396 buffers were overwritten.
 */
static void ring_keeps_the_newest_events(void **state)
{
	enum { PER_BUF = 24, BUFS = 4, EVENTS = 100 * BUFS * PER_BUF };
	static struct fev ev[EVENTS];
	size_t n, custom, i;
	char *map;

	(void)state;
	assert_int_equal(ts_init_mode(256, BUFS, 0, XFDR_MODE_RING), 0);
	assert_int_equal(xfdr_start(), 0);
	issue_pairs(EVENTS, 2);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	n = file_events(path, ev, EVENTS, &custom);
	assert_int_equal(n, BUFS * PER_BUF);
	assert_int_equal(custom, 1); /* the drop buffer only */
	expect_pairs(ev, n, EVENTS - BUFS * PER_BUF, 2);
	for (i = 0; i < n; i++)
		assert_int_equal(ev[i].buffer, i / PER_BUF);
	map = map_of(path);
	assert_string_equal(ts_map_value(map, "mode", (char[16]){0}, 16), "ring");
	assert_int_equal(map_u64(map, "overwritten"), EVENTS / PER_BUF - BUFS);
	assert_int_equal(map_u64(map, "dropped\ttotal"), 0);
	assert_int_equal(map_u64(map, "buffers_written"), BUFS);
	free(map);
	llvm_converts(path);
}

/*
 * Bounded mode with the same load keeps the first 4 buffers and counts the rest as dropped:
 * the two policies side by side.
 */
static void bounded_keeps_the_oldest_events(void **state)
{
	enum { PER_BUF = 24, BUFS = 4, EVENTS = 10 * BUFS * PER_BUF };
	static struct fev ev[EVENTS];
	size_t n, custom;
	char *map;

	(void)state;
	assert_int_equal(ts_init_mode(256, BUFS, 0, XFDR_MODE_BOUNDED), 0);
	assert_int_equal(xfdr_start(), 0);
	issue_pairs(EVENTS, 2);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	n = file_events(path, ev, EVENTS, &custom);
	assert_int_equal(n, BUFS * PER_BUF);
	expect_pairs(ev, n, 0, 2);
	map = map_of(path);
	assert_string_equal(ts_map_value(map, "mode", (char[16]){0}, 16), "bounded");
	assert_int_equal(map_u64(map, "overwritten"), 0);
	assert_int_equal(map_u64(map, "dropped\tno_buffer"), EVENTS - BUFS * PER_BUF);
	free(map);
}

/* ---- stack context ---------------------------------------------------------------------- */

/*
 * Five nested calls stay open while leaf calls wrap a 4-buffer ring many times. Buffer 0
 * took the five entries and 19 leaf records, so it ended with a leaf entry; every later
 * buffer holds 16 records after its context (256 - 48 - 64 - 16 bytes), so each begins with
 * that leaf's exit: its context lists six open calls, 1..5 and 9. The oldest buffer left in
 * the file has lost its predecessors, yet `xfdr dump --stacks` rebuilds the full stack of its
 * first records from the context.
 */
static void stack_context_survives_overwrite(void **state)
{
	char cmd[1200], *out = NULL;
	uint64_t tsc = 1000;
	size_t len = 0;
	FILE *p;
	uint32_t f;
	int i;

	(void)state;
	assert_int_equal(ts_init_mode(256, 4, 0, XFDR_MODE_RING), 0);
	assert_int_equal(xfdr_start(), 0);
	for (f = 1; f <= 5; f++)
		rec_function_at(tsc++, 0, XFDR_FN_ENTER, f);
	for (i = 0; i < 2000; i++) {
		rec_function_at(tsc++, 0, XFDR_FN_ENTER, 9);
		rec_function_at(tsc++, 0, XFDR_FN_EXIT, 9);
	}
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	xfdr_trace_close(ts_open_verified(path));
	llvm_converts(path);
	snprintf(cmd, sizeof(cmd), "'%s' dump --stacks '%s'", getenv("XFDR_BIN"), path);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_true(getdelim(&out, &len, '\0', p) > 0);
	assert_int_equal(pclose(p), 0);
	/* Buffer 0 of the file: NewBuffer, WallClockTime, NewCPUId, then the context. */
	assert_non_null(strstr(out, "\n80         0      CustomEventMarker"));
	assert_non_null(strstr(out, "context=seeded depth=6 stack=#1;#2;#3;#4;#5;#9\n"));
	/* Its first record closes the leaf the context named, five calls deep. */
	assert_non_null(strstr(out, "\n144        0      Exit              function=9 "));
	assert_non_null(strstr(out, "depth=5 stack=#1;#2;#3;#4;#5;#9\n152 "));
	free(out);
}

/* ---- short-call elision ----------------------------------------------------------------- */

static uint64_t elide_ticks; /* the threshold in ticks, as init computed it */

static void start_eliding(size_t buffer_size)
{
	struct xfdr_options o;

	xfdr_stop();
	xfdr_options_default(&o);
	o.buffer_size = buffer_size;
	o.buffer_max = 8;
	o.flush_at_exit = 0;
	o.output = ts_dir;
	o.mode = XFDR_MODE_BOUNDED;
	o.func_duration_threshold_us = 10;
	assert_int_equal(xfdr_init(&o), 0);
	assert_int_equal(xfdr_start(), 0);
	elide_ticks = rec_elide_ticks;
	/* 10 us at any plausible TSC rate (100 MHz .. 10 GHz) */
	assert_true(elide_ticks >= 1000 && elide_ticks <= 100000);
}

/*
 * Exactness: A enters at 1000 (the buffer's first record); B's call is short and vanishes;
 * C's call is long and stays: C's entry delta counts from A's entry, so C keeps its absolute
 * time. Then a chain: D, E, F nested and all short: all three vanish, leaf first. A's own
 * exit comes late: kept. G enters on CPU 0 and exits short on CPU 1: erased, and no NewCPUId
 * is written for an exit that is not there; H then starts CPU 1 with a NewCPUId.
 */
static void elision_keeps_exact_times(void **state)
{
	struct fev ev[16];
	size_t n, custom;
	uint64_t s, l;
	char *map;

	(void)state;
	start_eliding(4096);
	s = elide_ticks / 2;				    /* short: elided */
	l = elide_ticks * 2;				    /* long: kept */
	rec_function_at(1000, 0, XFDR_FN_ENTER, 1);	    /* A */
	rec_function_at(1100, 0, XFDR_FN_ENTER, 2);	    /* B */
	rec_function_at(1100 + s, 0, XFDR_FN_EXIT, 2);	    /* B short: gone */
	rec_function_at(1200 + s, 0, XFDR_FN_ENTER, 3);	    /* C */
	rec_function_at(1200 + s + l, 0, XFDR_FN_EXIT, 3);  /* C long: kept */
	rec_function_at(2000 + 2 * l, 0, XFDR_FN_ENTER, 4); /* D */
	rec_function_at(2001 + 2 * l, 0, XFDR_FN_ENTER, 5); /* E */
	rec_function_at(2002 + 2 * l, 0, XFDR_FN_ENTER, 6); /* F */
	rec_function_at(2003 + 2 * l, 0, XFDR_FN_EXIT, 6);
	rec_function_at(2004 + 2 * l, 0, XFDR_FN_EXIT, 5);
	rec_function_at(2005 + 2 * l, 0, XFDR_FN_EXIT, 4);
	rec_function_at(3000 + 4 * l, 0, XFDR_FN_EXIT, 1);  /* A: long */
	rec_function_at(5000 + 4 * l, 0, XFDR_FN_ENTER, 7); /* G on CPU 0 */
	rec_function_at(5001 + 4 * l, 1, XFDR_FN_EXIT, 7);  /* G exits short on CPU 1: gone */
	rec_function_at(6000 + 4 * l, 1, XFDR_FN_ENTER, 8); /* H on CPU 1 */
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	n = file_events(path, ev, 16, &custom);
	assert_int_equal(n, 5);
	expect_fev(&ev[0], XFDR_FN_ENTER, 1, 1000, 0);
	expect_fev(&ev[1], XFDR_FN_ENTER, 3, 1200 + s, 0);
	expect_fev(&ev[2], XFDR_FN_EXIT, 3, 1200 + s + l, 0);
	expect_fev(&ev[3], XFDR_FN_EXIT, 1, 3000 + 4 * l, 0);
	expect_fev(&ev[4], XFDR_FN_ENTER, 8, 6000 + 4 * l, 1);
	map = map_of(path);
	assert_int_equal(map_u64(map, "elided"), 5); /* B, D, E, F, G */
	assert_int_equal(map_u64(map, "func_duration_threshold_us"), 10);
	free(map);
	llvm_converts(path);
}

/*
 * Elision erases an entry only for its own exit: an exit whose buffer ends with another
 * function's entry (a trace made unbalanced by the program, e.g. a longjmp) leaves that entry
 * and is written itself; the exit of the entry's own function, later and short, still erases
 * nothing it should not (its entry is no longer the last record).
 */
static void elision_erases_only_its_own_entry(void **state)
{
	struct fev ev[8];
	size_t n, custom;
	uint64_t s;
	char *map;

	(void)state;
	start_eliding(4096);
	s = elide_ticks / 4;
	rec_function_at(1000, 0, XFDR_FN_ENTER, 1);
	rec_function_at(1001, 0, XFDR_FN_ENTER, 2);
	rec_function_at(1002, 0, XFDR_FN_EXIT, 3);     /* not 2's exit: 2's entry stays */
	rec_function_at(1002 + s, 0, XFDR_FN_EXIT, 2); /* short, but its entry is not last */
	rec_function_at(1003 + s, 0, XFDR_FN_EXIT, 1);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	n = file_events(path, ev, 8, &custom);
	assert_int_equal(n, 5);
	expect_fev(&ev[0], XFDR_FN_ENTER, 1, 1000, 0);
	expect_fev(&ev[1], XFDR_FN_ENTER, 2, 1001, 0);
	expect_fev(&ev[2], XFDR_FN_EXIT, 3, 1002, 0);
	expect_fev(&ev[3], XFDR_FN_EXIT, 2, 1002 + s, 0);
	expect_fev(&ev[4], XFDR_FN_EXIT, 1, 1003 + s, 0);
	map = map_of(path);
	assert_int_equal(map_u64(map, "elided"), 0);
	free(map);
}

/*
 * Buffer boundaries, 128-byte buffers: 48 bytes of preamble, then 8 function records (the
 * 16 bytes of EndOfBuffer stay free). Seven nested entries and P's fill buffer 0. Q's entry
 * opens buffer 1: preamble, the stack context of the 8 open calls (16 + 56 bytes), Q: exactly
 * 128 bytes. Q exits short: erased from buffer 1. P exits short too, but its entry is in
 * buffer 0, handed back already: P's exit is written, into the room Q left, with its delta
 * counted from Q's preamble (Q's entry was 0 ticks after it).
 */
static void elision_stops_at_buffer_boundary(void **state)
{
	struct fev ev[16];
	size_t n, custom;
	uint64_t s, k;

	(void)state;
	start_eliding(128);
	s = elide_ticks / 2;
	for (k = 0; k < 7; k++)
		rec_function_at(1000 + k, 0, XFDR_FN_ENTER, (uint32_t)(10 + k));
	rec_function_at(2000, 0, XFDR_FN_ENTER, 1);    /* P: 8th record of buffer 0 */
	rec_function_at(2001, 0, XFDR_FN_ENTER, 2);    /* Q: first record of buffer 1 */
	rec_function_at(2002, 0, XFDR_FN_EXIT, 2);     /* Q short: erased */
	rec_function_at(2000 + s, 0, XFDR_FN_EXIT, 1); /* P short, entry in buffer 0: kept */
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	n = file_events(path, ev, 16, &custom);
	assert_int_equal(n, 9);
	for (k = 0; k < 7; k++)
		expect_fev(&ev[k], XFDR_FN_ENTER, (uint32_t)(10 + k), 1000 + k, 0);
	expect_fev(&ev[7], XFDR_FN_ENTER, 1, 2000, 0);
	assert_int_equal(ev[7].buffer, 0);
	expect_fev(&ev[8], XFDR_FN_EXIT, 1, 2000 + s, 0);
	assert_int_equal(ev[8].buffer, 1);
	assert_int_equal(custom, 2); /* buffer 1's stack context, the drop buffer */
	llvm_converts(path);
}

/* ---- snapshots ---------------------------------------------------------------------------- */

/*
 * Ten buffers of 24 events each (TSC 1000 + 10 k); a snapshot since the TSC of event 130
 * (buffer 5) holds buffers 5..9 whole: events 120..239, and its .map says since_tsc. A second
 * snapshot since event 200 is another valid file with buffers 8..9. Recording goes on.
 */
static void snapshot_since_a_timestamp(void **state)
{
	enum { PER_BUF = 24, EVENTS = 10 * PER_BUF };
	static struct fev ev[EVENTS + 8];
	char first[512];
	size_t n, custom;
	char *map;

	(void)state;
	assert_int_equal(ts_init_mode(256, 16, 0, XFDR_MODE_BOUNDED), 0);
	assert_int_equal(xfdr_start(), 0);
	issue_pairs(EVENTS, 3);
	assert_int_equal(xfdr_flush_since(1000 + 10 * 130, first, sizeof(first)), 0);
	n = file_events(first, ev, EVENTS, &custom);
	assert_int_equal(n, 5 * PER_BUF);
	expect_pairs(ev, n, 5 * PER_BUF, 3);
	map = map_of(first);
	assert_int_equal(map_u64(map, "since_tsc"), 1000 + 10 * 130);
	assert_int_equal(map_u64(map, "buffers_written"), 5);
	free(map);
	llvm_converts(first);

	assert_int_equal(xfdr_flush_since(1000 + 10 * 200, path, sizeof(path)), 0);
	assert_string_not_equal(path, first);
	n = file_events(path, ev, EVENTS, &custom);
	assert_int_equal(n, 2 * PER_BUF);
	expect_fev(&ev[0], XFDR_FN_ENTER, 8 * PER_BUF / 2 + 1, 1000 + 10 * 8 * PER_BUF, 3);
	/* still recording: a later event lands in the pool */
	rec_function_at(1000 + 10 * EVENTS, 3, XFDR_FN_ENTER, 500);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	n = file_events(path, ev, EVENTS + 8, &custom);
	assert_int_equal(n, EVENTS + 1);
	map = map_of(path);
	assert_null(ts_map_value(map, "since_tsc", (char[32]){0}, 32));
	free(map);
}

/* xfdr_now() is the recorder's clock: it moves forward between two calls. */
static void now_is_the_recorders_clock(void **state)
{
	uint64_t a, b;

	(void)state;
	a = xfdr_now();
	b = xfdr_now();
	assert_true(b >= a);
	assert_true(a != 0);
}

/* ---- thread ids ------------------------------------------------------------------------- */

struct id_thread {
	uint32_t fake_tid; /* what the slot claims as kernel tid: low 16 bits collide */
	uint32_t fid;
};

static void *record_as(void *arg)
{
	struct id_thread *w = arg;
	struct thread_slot *s = thread_register(&rec_self);

	assert_non_null(s);
	/*
	 * pid_max here is 32768: no two real tids share their low 16 bits. Stand in for a
	 * server with a larger pid_max: the slot's tid is what the buffer and .map report.
	 */
	xfdr_store_relaxed(&s->tid, w->fake_tid);
	xfdr_enter(w->fid);
	xfdr_exit(w->fid);
	return NULL;
}

/*
 * Two threads whose tids agree in their low 16 bits (0x10005 and 0x20005) get distinct ids
 * in the file, and the .map pairs each id with its full tid.
 */
static void thread_ids_unique_when_low_bits_collide(void **state)
{
	struct id_thread w[2] = {{0x10005, 21}, {0x20005, 22}};
	struct fev ev[8];
	char line[64], *map;
	pthread_t th;
	size_t n, custom, i;
	uint16_t id[2] = {0, 0};

	(void)state;
	assert_int_equal(ts_init_mode(4096, 8, 0, XFDR_MODE_RING), 0);
	assert_int_equal(xfdr_start(), 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(pthread_create(&th, NULL, record_as, &w[i]), 0);
		assert_int_equal(pthread_join(th, NULL), 0);
	}
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	n = file_events(path, ev, 8, &custom);
	assert_int_equal(n, 4);
	for (i = 0; i < n; i++)
		id[ev[i].fid - 21] = ev[i].thread;
	assert_true(id[0] != 0 && id[1] != 0);
	assert_true(id[0] != id[1]);
	map = map_of(path);
	for (i = 0; i < 2; i++) {
		snprintf(line, sizeof(line), "\nthread\t%u\t%u\t", w[i].fake_tid, id[i]);
		if (!strstr(map, line))
			fail_msg("no line \"%s\" in the .map:\n%s", line + 1, map);
	}
	free(map);
	llvm_converts(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(ring_keeps_the_newest_events),
	    cmocka_unit_test(bounded_keeps_the_oldest_events),
	    cmocka_unit_test(stack_context_survives_overwrite),
	    cmocka_unit_test(elision_keeps_exact_times),
	    cmocka_unit_test(elision_erases_only_its_own_entry),
	    cmocka_unit_test(elision_stops_at_buffer_boundary),
	    cmocka_unit_test(snapshot_since_a_timestamp),
	    cmocka_unit_test(now_is_the_recorders_clock),
	    cmocka_unit_test(thread_ids_unique_when_low_bits_collide),
	};

	/* The *_at forms are given the clock: buffers taken for entries keep it (recorder.h). */
	rec_inspect_clock_given(1);
	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
