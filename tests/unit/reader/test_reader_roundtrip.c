/*
 * tests/unit/reader/test_reader_roundtrip.c - events -> writer/ -> file image -> reader -> the same
 * events.
 *
 * The generator and encoder of tests/support/trace_gen.h produce per-thread event lists and a file
 * image (shuffled buffers, TSCWraps, CPU changes, exactly-full buffers, custom payloads of any
 * size). The reader must verify the image and, in XFDR_ORDER_THREAD order, give back exactly
 * the generated events of each thread: type, action, function id, absolute TSC, CPU, thread
 * id, arguments and payload bytes. The seed is printed; XFDR_SEED=<n> replays a run, and
 * XFDR_STRESS=1 runs twenty times as many traces.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/support/trace_gen.h"
#include "xfdr/reader.h"

static void random_params(struct tg_params *p, uint64_t *s, size_t max_threads, size_t max_events)
{
	/* Sizes below the smallest useful one (72) are excluded; odd sizes are fine in v1. */
	static const size_t sizes[] = {72, 73, 77, 80, 88, 96, 101, 128, 200, 256, 333, 1024, 4096};

	memset(p, 0, sizeof(*p));
	p->buffer_bytes = sizes[tg_below(s, sizeof(sizes) / sizeof(sizes[0]))];
	p->threads = 1 + (size_t)tg_below(s, max_threads);
	p->max_events = 1 + (size_t)tg_below(s, max_events);
	p->wall_mixed = tg_chance(s, 50);
	p->custom_pct = (unsigned)tg_below(s, 35);
}

static void run_random(const char *name, unsigned iterations, size_t max_threads, size_t max_events,
		       struct tg_stats *total)
{
	uint64_t master = tg_seed(name), s, iter_seed;
	struct tg_params p;
	struct tg_trace tr;
	struct tg_file f;
	unsigned i;

	if (getenv("XFDR_STRESS") && strcmp(getenv("XFDR_STRESS"), "0"))
		iterations *= 20;
	memset(total, 0, sizeof(*total));
	for (i = 0; i < iterations; i++) {
		iter_seed = tg_next(&master);
		s = iter_seed;
		random_params(&p, &s, max_threads, max_events);
		tg_generate(&tr, &p, &s);
		tg_encode(&tr, &f, &s);
		tg_stats_add(total, &f.st);
		if (tg_check_image(&tr, &f)) {
			print_error("%s: iteration %u (its seed %" PRIu64 "), buffer_bytes %zu, "
				    "%zu threads\n",
				    name, i, iter_seed, p.buffer_bytes, p.threads);
			free(f.data);
			tg_free(&tr);
			fail();
		}
		free(f.data);
		tg_free(&tr);
	}
	printf("%s: %u traces, %" PRIu64 " events, %" PRIu64 " buffers (%" PRIu64
	       " exactly full), %" PRIu64 " TSCWraps (%" PRIu64 " backwards), %" PRIu64
	       " CPU changes, %" PRIu64 " custom events, %" PRIu64 " arguments\n",
	       name, iterations, total->events, total->buffers, total->exactly_full,
	       total->tsc_wraps, total->backward_wraps, total->cpu_changes, total->customs,
	       total->args);
}

/* Thousands of small traces: every case below must have come up, or the run proved little. */
static void test_roundtrip_random(void **state)
{
	struct tg_stats st;

	(void)state;
	run_random("roundtrip_random", 3000, 6, 300, &st);
	assert_true(st.exactly_full >= 100);
	assert_true(st.backward_wraps >= 100);
	assert_true(st.tsc_wraps >= 1000);
	assert_true(st.cpu_changes >= 100);
	assert_true(st.customs >= 1000);
	assert_true(st.args >= 1000);
}

/* A few big traces: many threads, many small buffers each. */
static void test_roundtrip_many_threads(void **state)
{
	struct tg_stats st;

	(void)state;
	run_random("roundtrip_many_threads", 6, 200, 4000, &st);
	assert_true(st.buffers >= 1000);
}

/* Push one event onto t. */
static struct tg_event *fn_ev(struct tg_thread *t, unsigned action, uint32_t fid, uint64_t tsc,
			      uint16_t cpu)
{
	struct tg_event *e = tg_push(t);

	e->action = action;
	e->fid = fid;
	e->tsc = tsc;
	e->cpu = cpu;
	return e;
}

static void custom_ev(struct tg_thread *t, uint32_t bytes, uint64_t tsc, uint16_t cpu)
{
	struct tg_event *e = tg_push(t);
	uint32_t k;

	e->custom = 1;
	e->tsc = tsc;
	e->cpu = cpu;
	e->payload_bytes = bytes;
	if (!bytes)
		return;
	e->payload = malloc(bytes);
	assert_non_null(e->payload);
	for (k = 0; k < bytes; k++)
		e->payload[k] = (uint8_t)(0xf0 + k);
}

/*
 * The edge cases, placed by hand. buffer_size 128 leaves 80 bytes after the preamble:
 *   buffer 1 (tid 0xffff): Entry(8) Exit +0xffffffff (8) TSCWrap+Entry (24, delta 2^32)
 *     TSCWrap+Exit (24, backwards) custom size 0 (16): 80 bytes, exactly full
 *   buffer 2: custom 1 (17), custom 7 (23), custom 8 (24): 64, EndOfBuffer fills the last 16
 *   buffer 3: (CPU change: NewCPUId+Entry_Args = 24 > 16, so a new buffer) Entry_Args 0 args
 *     (8), Entry_Args 3 args (56): 64, EndOfBuffer
 *   buffer 4: Exit fid 2^28-1 (8), TSCWrap+Tail_Exit at tsc 2^64-1 (24), TSCWrap+Entry at
 *     tsc 9 (past 2^64, so backwards) (24), NewCPUId+Exit (24): 80, exactly full
 *   buffer 5 (tid 0): one Entry of fid 0 at tsc 0 on CPU 0.
 */
static void test_roundtrip_edges(void **state)
{
	struct tg_trace tr;
	struct tg_file f;
	struct tg_event *e;
	uint64_t s = 42;
	uint64_t t0;

	(void)state;
	memset(&tr, 0, sizeof(tr));
	tr.p.buffer_bytes = 128;
	tr.threads = 2;
	tr.th = calloc(2, sizeof(*tr.th));
	assert_non_null(tr.th);
	tr.th[0].tid = 0xffff;
	tr.th[1].tid = 0;

	t0 = 100;
	fn_ev(&tr.th[0], XFDR_FN_ENTER, 0, t0, 0xffff);
	fn_ev(&tr.th[0], XFDR_FN_EXIT, XFDR_FUNCTION_ID_MAX, t0 + UINT32_MAX, 0xffff);
	fn_ev(&tr.th[0], XFDR_FN_ENTER, 1, t0 + UINT32_MAX + (1ull << 32), 0xffff);
	fn_ev(&tr.th[0], XFDR_FN_EXIT, 1, t0 + UINT32_MAX + (1ull << 32) - 1, 0xffff);
	custom_ev(&tr.th[0], 0, 5, 0xffff);
	custom_ev(&tr.th[0], 1, 7, 0xffff);
	custom_ev(&tr.th[0], 7, UINT64_MAX, 0xffff);
	custom_ev(&tr.th[0], 8, 0, 0xffff);
	fn_ev(&tr.th[0], XFDR_FN_ENTER_ARGS, 2, 1000, 0);
	e = fn_ev(&tr.th[0], XFDR_FN_ENTER_ARGS, 3, 1000, 0);
	e->arg_count = 3;
	e->args[0] = 0;
	e->args[1] = UINT64_MAX;
	e->args[2] = 0x0123456789abcdefull;
	fn_ev(&tr.th[0], XFDR_FN_EXIT, XFDR_FUNCTION_ID_MAX, 1001, 0);
	fn_ev(&tr.th[0], XFDR_FN_TAIL_EXIT, 5, UINT64_MAX, 0);
	fn_ev(&tr.th[0], XFDR_FN_ENTER, 6, 9, 0);
	fn_ev(&tr.th[0], XFDR_FN_EXIT, 6, 9 + UINT32_MAX, 7);
	fn_ev(&tr.th[1], XFDR_FN_ENTER, 0, 0, 0);

	tg_encode(&tr, &f, &s);
	/* The layout the comment above works out by hand. */
	assert_int_equal(f.buffers, 5);
	assert_int_equal(f.bytes, 32 + 5 * 128);
	assert_int_equal(f.st.exactly_full, 2);
	assert_int_equal(f.st.tsc_wraps, 4);
	assert_int_equal(f.st.backward_wraps, 2);
	assert_int_equal(f.st.cpu_changes, 1);
	assert_int_equal(f.st.customs, 4);
	assert_int_equal(f.st.args, 3);
	assert_int_equal(tg_check_image(&tr, &f), 0);
	free(f.data);
	tg_free(&tr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roundtrip_edges),
	    cmocka_unit_test(test_roundtrip_random),
	    cmocka_unit_test(test_roundtrip_many_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
